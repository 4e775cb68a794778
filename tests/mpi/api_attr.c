/* Attribute caching: user keys with copy and delete callbacks through
 * MPI_Comm_dup, replacement, deletion, MPI_Comm_free, freed keys that stay
 * valid for their attributes, the predefined copy functions, the MPI-1
 * names, read-only predefined keys, the MPI_COMM_SELF delete callback
 * that MPI_Finalize must run (the library clean-up hook), and delete
 * callbacks that re-enter: deleting another attribute, their own, each
 * other's, setting a new one, freeing their key (one of these sequences
 * used to crash). */
#include "bm_test.h"

#include <mpi.h>
#include <stdint.h>
#include <string.h>

static int copies, deletes, last_deleted, finalize_hook_ran;

static int copy_plus_one(MPI_Comm oldcomm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)oldcomm;
    (void)keyval;
    copies++;
    *(intptr_t *)out = (intptr_t)in + 1 + (intptr_t)extra;
    *flag = 1;
    return MPI_SUCCESS;
}

static int count_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    deletes++;
    last_deleted = (int)(intptr_t)value;
    return MPI_SUCCESS;
}

static int finalize_hook(MPI_Comm comm, int keyval, void *value, void *extra)
{
    int flag = 0;

    (void)keyval;
    (void)extra;
    /* MPI must still work inside the hook. */
    MPI_Finalized(&flag);
    finalize_hook_ran = comm == MPI_COMM_SELF && (intptr_t)value == 42 && !flag;
    return MPI_SUCCESS;
}

static void test_callbacks(void)
{
    int key, nocopy, dupkey, flag = -1;
    void *val = NULL;
    MPI_Comm a, b;

    BM_CHECK_EQ_INT(MPI_Comm_create_keyval(copy_plus_one, count_delete, &key, (void *)10),
                    MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, count_delete, &nocopy, NULL),
                    MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &dupkey, NULL),
                    MPI_SUCCESS);
    BM_CHECK(key != nocopy && key != dupkey && key != MPI_TAG_UB);
    MPI_Comm_dup(MPI_COMM_WORLD, &a);

    BM_CHECK_EQ_INT(MPI_Comm_get_attr(a, key, &val, &flag), MPI_SUCCESS);
    BM_CHECK_EQ_INT(flag, 0);
    BM_CHECK_EQ_INT(MPI_Comm_set_attr(a, key, (void *)5), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Comm_set_attr(a, nocopy, (void *)6), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Comm_set_attr(a, dupkey, (void *)7), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Comm_get_attr(a, key, &val, &flag), MPI_SUCCESS);
    BM_CHECK(flag == 1 && val == (void *)5);

    /* Replacing runs the delete callback on the old value. */
    BM_CHECK_EQ_INT(MPI_Comm_set_attr(a, key, (void *)8), MPI_SUCCESS);
    BM_CHECK_EQ_INT(deletes, 1);
    BM_CHECK_EQ_INT(last_deleted, 5);

    BM_CHECK_EQ_INT(MPI_Comm_dup(a, &b), MPI_SUCCESS);
    BM_CHECK_EQ_INT(copies, 1);
    BM_CHECK_EQ_INT(MPI_Comm_get_attr(b, key, &val, &flag), MPI_SUCCESS);
    BM_CHECK(flag == 1 && val == (void *)19); /* 8 + 1 + extra 10 */
    BM_CHECK_EQ_INT(MPI_Comm_get_attr(b, nocopy, &val, &flag), MPI_SUCCESS);
    BM_CHECK_EQ_INT(flag, 0);
    BM_CHECK_EQ_INT(MPI_Comm_get_attr(b, dupkey, &val, &flag), MPI_SUCCESS);
    BM_CHECK(flag == 1 && val == (void *)7);

    /* A freed key still serves the attributes that use it, and the program
     * may still read and delete them by the key's old value (MPICH's
     * attr/fkeyval deletes them so; Open MPI and MPICH allow it); freeing
     * the key again meanwhile does nothing (MPICH's attr/keyval_double_free),
     * and once its last attribute is gone it is an error. */
    int freed_key = key;
    BM_CHECK_EQ_INT(MPI_Comm_free_keyval(&key), MPI_SUCCESS);
    BM_CHECK_EQ_INT(key, MPI_KEYVAL_INVALID);
    int again = freed_key;
    BM_CHECK_EQ_INT(MPI_Comm_free_keyval(&again), MPI_SUCCESS);
    BM_CHECK_EQ_INT(again, MPI_KEYVAL_INVALID);
    BM_CHECK_EQ_INT(MPI_Comm_get_attr(b, freed_key, &val, &flag), MPI_SUCCESS);
    BM_CHECK(flag == 1 && val == (void *)19);
    BM_CHECK_EQ_INT(MPI_Comm_delete_attr(b, nocopy), MPI_ERR_KEYVAL); /* not set on b */
    deletes = 0;
    BM_CHECK_EQ_INT(MPI_Comm_free(&b), MPI_SUCCESS);
    BM_CHECK_EQ_INT(deletes, 1);
    BM_CHECK_EQ_INT(last_deleted, 19);
    BM_CHECK_EQ_INT(MPI_Comm_delete_attr(a, freed_key), MPI_SUCCESS);
    BM_CHECK_EQ_INT(deletes, 2);
    BM_CHECK_EQ_INT(last_deleted, 8);
    /* its last attribute is gone, and so is the key */
    BM_CHECK_EQ_INT(MPI_Comm_free_keyval(&(int){freed_key}), MPI_ERR_KEYVAL);
    BM_CHECK_EQ_INT(MPI_Comm_delete_attr(a, nocopy), MPI_SUCCESS);
    BM_CHECK_EQ_INT(deletes, 3);
    BM_CHECK_EQ_INT(last_deleted, 6);
    BM_CHECK_EQ_INT(MPI_Comm_free(&a), MPI_SUCCESS);
    BM_CHECK_EQ_INT(deletes, 3);
    /* its last attribute gone, the freed key is gone too */
    BM_CHECK_EQ_INT(MPI_Comm_get_attr(MPI_COMM_WORLD, freed_key, &val, &flag), MPI_ERR_KEYVAL);

    /* Errors. */
    BM_CHECK_EQ_INT(MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_TAG_UB, (void *)1), MPI_ERR_KEYVAL);
    BM_CHECK_EQ_INT(MPI_Comm_get_attr(MPI_COMM_WORLD, 123456, &val, &flag), MPI_ERR_KEYVAL);
    BM_CHECK_EQ_INT(MPI_Comm_free_keyval(&(int){MPI_TAG_UB}), MPI_ERR_KEYVAL);
    BM_CHECK_EQ_INT(MPI_Comm_free_keyval(&nocopy), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Comm_set_attr(MPI_COMM_WORLD, nocopy, NULL), MPI_ERR_KEYVAL);
    BM_CHECK_EQ_INT(MPI_Comm_free_keyval(&dupkey), MPI_SUCCESS);
}

/* Re-entrant delete callbacks: extra_state says what each one does. */
enum { DO_NOTHING, DEL_OTHER, DEL_SELF, SET_NEW, FREE_KEY };
static int key_a, key_b, key_c, reentry_deletes[3], reentry_errors;

static int reentry_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
    int what = (int)(intptr_t)extra, rc;
    int idx = keyval == key_a ? 0 : keyval == key_b ? 1 : 2;
    (void)value;
    reentry_deletes[idx]++;
    switch (what) {
    case DEL_OTHER: /* a deletes b, b deletes a (whichever is still set) */
        rc = MPI_Comm_delete_attr(comm, keyval == key_a ? key_b : key_a);
        reentry_errors += rc != MPI_SUCCESS && rc != MPI_ERR_KEYVAL;
        break;
    case DEL_SELF: /* no longer set: MPI_ERR_KEYVAL, no recursion */
        rc = MPI_Comm_delete_attr(comm, keyval);
        reentry_errors += rc != MPI_ERR_KEYVAL;
        break;
    case SET_NEW:
        reentry_errors += MPI_Comm_set_attr(comm, key_c, (void *)1) != MPI_SUCCESS;
        break;
    case FREE_KEY: {
        int k = keyval;
        reentry_errors += MPI_Comm_free_keyval(&k) != MPI_SUCCESS;
        break;
    }
    }
    return MPI_SUCCESS;
}

static void reentry_keys(int a_does, int b_does)
{
    memset(reentry_deletes, 0, sizeof(reentry_deletes));
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, reentry_delete, &key_a, (void *)(intptr_t)a_does);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, reentry_delete, &key_b, (void *)(intptr_t)b_does);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, reentry_delete, &key_c,
                           (void *)(intptr_t)DO_NOTHING);
}

static void reentry_free_keys(void)
{
    if (key_a != MPI_KEYVAL_INVALID)
        MPI_Comm_free_keyval(&key_a);
    if (key_b != MPI_KEYVAL_INVALID)
        MPI_Comm_free_keyval(&key_b);
    MPI_Comm_free_keyval(&key_c);
}

static void test_reentrant_delete(void)
{
    MPI_Comm c;
    reentry_errors = 0;
    /* Each of a and b deletes the other, on MPI_Comm_free, in both orders. */
    for (int order = 0; order < 2; order++) {
        reentry_keys(DEL_OTHER, DEL_OTHER);
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
        MPI_Comm_set_attr(c, order ? key_b : key_a, (void *)1);
        MPI_Comm_set_attr(c, order ? key_a : key_b, (void *)2);
        BM_CHECK_EQ_INT(MPI_Comm_free(&c), MPI_SUCCESS);
        BM_CHECK_EQ_INT(reentry_deletes[0], 1);
        BM_CHECK_EQ_INT(reentry_deletes[1], 1);
        reentry_free_keys();
    }
    /* a deletes b through MPI_Comm_delete_attr(a). */
    reentry_keys(DEL_OTHER, DO_NOTHING);
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    MPI_Comm_set_attr(c, key_b, (void *)2);
    MPI_Comm_set_attr(c, key_a, (void *)1);
    BM_CHECK_EQ_INT(MPI_Comm_delete_attr(c, key_a), MPI_SUCCESS);
    BM_CHECK_EQ_INT(reentry_deletes[1], 1);
    int flag = -1;
    void *v;
    MPI_Comm_get_attr(c, key_b, &v, &flag);
    BM_CHECK_EQ_INT(flag, 0);
    MPI_Comm_free(&c);
    BM_CHECK_EQ_INT(reentry_deletes[0], 1);
    reentry_free_keys();
    /* a deletes itself; b sets a new attribute c while the communicator is freed. */
    reentry_keys(DEL_SELF, SET_NEW);
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    MPI_Comm_set_attr(c, key_a, (void *)1);
    MPI_Comm_set_attr(c, key_b, (void *)2);
    BM_CHECK_EQ_INT(MPI_Comm_delete_attr(c, key_a), MPI_SUCCESS);
    BM_CHECK_EQ_INT(reentry_deletes[0], 1);
    MPI_Comm_set_attr(c, key_a, (void *)3); /* replaced later by free */
    BM_CHECK_EQ_INT(MPI_Comm_free(&c), MPI_SUCCESS);
    BM_CHECK_EQ_INT(reentry_deletes[0], 2);
    BM_CHECK_EQ_INT(reentry_deletes[1], 1);
    BM_CHECK_EQ_INT(reentry_deletes[2], 1); /* the attribute set during the free is deleted too */
    reentry_free_keys();
    /* A callback that frees its own key (the attribute still holds it); a
     * freed key keeps serving the copies made by MPI_Comm_dup. */
    reentry_keys(FREE_KEY, DO_NOTHING);
    int dupkey;
    MPI_Comm_create_keyval(MPI_COMM_DUP_FN, reentry_delete, &dupkey, (void *)(intptr_t)DO_NOTHING);
    MPI_Comm d;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_attr(c, key_a, (void *)1);
    MPI_Comm_set_attr(c, dupkey, (void *)9);
    MPI_Comm_free_keyval(&dupkey);
    BM_CHECK_EQ_INT(MPI_Comm_dup(c, &d), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Comm_free(&c), MPI_SUCCESS);
    BM_CHECK_EQ_INT(reentry_deletes[0], 1);
    BM_CHECK_EQ_INT(reentry_deletes[2], 1); /* c's value under the freed key */
    key_a = MPI_KEYVAL_INVALID;             /* freed by its callback */
    BM_CHECK_EQ_INT(MPI_Comm_free(&d), MPI_SUCCESS);
    BM_CHECK_EQ_INT(reentry_deletes[2], 2); /* d's copy, made under the freed key */
    reentry_free_keys();
    BM_CHECK_EQ_INT(reentry_errors, 0);
}

/* Datatype and window attributes run on the same engine: a delete callback
 * that deletes its own attribute or another one does not crash, freed keys
 * keep serving their attributes, the predefined copy functions exist for
 * all three kinds, and a key made for one kind is refused on the others. */
static int type_deletes, win_deletes, other_kind_errors;
static int tkey_a, tkey_b, wkey_a, wkey_b;

static int type_delete_cb(MPI_Datatype t, int keyval, void *value, void *extra)
{
    (void)value;
    (void)extra;
    type_deletes++;
    /* delete the other one (or, for b, itself: already unlinked) */
    int rc = MPI_Type_delete_attr(t, keyval == tkey_a ? tkey_b : keyval);
    other_kind_errors += rc != MPI_SUCCESS && rc != MPI_ERR_KEYVAL;
    return MPI_SUCCESS;
}

static int win_delete_cb(MPI_Win w, int keyval, void *value, void *extra)
{
    (void)value;
    (void)extra;
    win_deletes++;
    int rc = MPI_Win_delete_attr(w, keyval == wkey_a ? wkey_b : keyval);
    other_kind_errors += rc != MPI_SUCCESS && rc != MPI_ERR_KEYVAL;
    return MPI_SUCCESS;
}

static int type_copy_fails(MPI_Datatype t, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)t;
    (void)keyval;
    (void)extra;
    (void)in;
    (void)out;
    *flag = 1;
    return MPI_ERR_OTHER;
}

static void test_other_kinds(void)
{
    MPI_Datatype t, t2;
    int flag = 0;
    void *v;
    MPI_Type_contiguous(2, MPI_INT, &t);
    MPI_Type_create_keyval(MPI_TYPE_DUP_FN, type_delete_cb, &tkey_a, NULL);
    MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, type_delete_cb, &tkey_b, NULL);
    BM_CHECK_EQ_INT(MPI_Type_set_attr(t, tkey_b, (void *)2), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Type_set_attr(t, tkey_a, (void *)1), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Type_dup(t, &t2), MPI_SUCCESS);
    MPI_Type_get_attr(t2, tkey_a, &v, &flag);
    BM_CHECK(flag == 1 && v == (void *)1); /* MPI_TYPE_DUP_FN copied it */
    MPI_Type_get_attr(t2, tkey_b, &v, &flag);
    BM_CHECK_EQ_INT(flag, 0); /* MPI_TYPE_NULL_COPY_FN did not */
    /* A copy callback that fails fails MPI_Type_dup, whose handle then says
     * MPI_DATATYPE_NULL (MPICH's attr/attrerrtype frees it otherwise). */
    int tkey_c;
    MPI_Datatype t3 = MPI_INT;
    MPI_Type_create_keyval(type_copy_fails, MPI_TYPE_NULL_DELETE_FN, &tkey_c, NULL);
    BM_CHECK_EQ_INT(MPI_Type_set_attr(t, tkey_c, NULL), MPI_SUCCESS);
    BM_CHECK(MPI_Type_dup(t, &t3) != MPI_SUCCESS);
    BM_CHECK(t3 == MPI_DATATYPE_NULL);
    BM_CHECK_EQ_INT(MPI_Type_delete_attr(t, tkey_c), MPI_SUCCESS);
    MPI_Type_free_keyval(&tkey_c);
    /* a type key is not a communicator key */
    BM_CHECK_EQ_INT(MPI_Comm_set_attr(MPI_COMM_WORLD, tkey_a, NULL), MPI_ERR_KEYVAL);
    MPI_Type_free_keyval(&tkey_b); /* the attribute on t keeps it */
    type_deletes = 0;
    BM_CHECK_EQ_INT(MPI_Type_free(&t), MPI_SUCCESS); /* a's callback deletes b */
    BM_CHECK_EQ_INT(type_deletes, 2);
    BM_CHECK_EQ_INT(MPI_Type_free(&t2), MPI_SUCCESS);
    BM_CHECK_EQ_INT(type_deletes, 3);
    MPI_Type_free_keyval(&tkey_a);

    MPI_Win w;
    int mem[4];
    MPI_Win_create(mem, sizeof(mem), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    MPI_Win_create_keyval(MPI_WIN_DUP_FN, win_delete_cb, &wkey_a, NULL);
    MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, win_delete_cb, &wkey_b, NULL);
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    BM_CHECK_EQ_INT(MPI_Win_set_attr(w, wkey_b, (void *)2), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Win_set_attr(w, wkey_a, (void *)1), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Win_set_attr(w, tkey_a, NULL), MPI_ERR_KEYVAL); /* freed type key */
    MPI_Win_get_attr(w, wkey_a, &v, &flag);
    BM_CHECK(flag == 1 && v == (void *)1);
    BM_CHECK_EQ_INT(MPI_Type_set_attr(MPI_INT, wkey_a, NULL), MPI_ERR_KEYVAL);
    win_deletes = 0;
    BM_CHECK_EQ_INT(MPI_Win_delete_attr(w, wkey_a), MPI_SUCCESS); /* deletes b too */
    BM_CHECK_EQ_INT(win_deletes, 2);
    MPI_Win_get_attr(w, wkey_b, &v, &flag);
    BM_CHECK_EQ_INT(flag, 0);
    MPI_Win_set_attr(w, wkey_b, (void *)3);
    BM_CHECK_EQ_INT(MPI_Win_free(&w), MPI_SUCCESS); /* b deletes itself: no recursion */
    BM_CHECK_EQ_INT(win_deletes, 3);
    MPI_Win_free_keyval(&wkey_a);
    MPI_Win_free_keyval(&wkey_b);
    BM_CHECK_EQ_INT(other_kind_errors, 0);
    (void)MPI_COMM_NULL_COPY_FN;
    (void)MPI_WIN_NULL_DELETE_FN;
    (void)MPI_TYPE_NULL_DELETE_FN;
}

static void test_mpi1_names(void)
{
    int key, flag;
    void *val;

    BM_CHECK_EQ_INT(MPI_Keyval_create(MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN, &key, NULL),
                    MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Attr_put(MPI_COMM_WORLD, key, (void *)3), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Attr_get(MPI_COMM_WORLD, key, &val, &flag), MPI_SUCCESS);
    BM_CHECK(flag == 1 && val == (void *)3);
    BM_CHECK_EQ_INT(MPI_Attr_delete(MPI_COMM_WORLD, key), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Attr_get(MPI_COMM_WORLD, key, &val, &flag), MPI_SUCCESS);
    BM_CHECK_EQ_INT(flag, 0);
    BM_CHECK_EQ_INT(MPI_Keyval_free(&key), MPI_SUCCESS);
}

int main(int argc, char **argv)
{
    int hook;

    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    BM_RUN(test_callbacks);
    BM_RUN(test_mpi1_names);
    BM_RUN(test_reentrant_delete);
    BM_RUN(test_other_kinds);
    BM_CHECK_EQ_INT(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalize_hook, &hook, NULL),
                    MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Comm_set_attr(MPI_COMM_SELF, hook, (void *)42), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Finalize(), MPI_SUCCESS);
    BM_CHECK_MSG(finalize_hook_ran, "MPI_Finalize did not run the MPI_COMM_SELF delete callback");
    return bm_test_summary("api_attr");
}
