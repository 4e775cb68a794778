/* Attribute caching: user keys with copy and delete callbacks through
 * MPI_Comm_dup, replacement, deletion, MPI_Comm_free, freed keys that stay
 * valid for their attributes, the predefined copy functions, the MPI-1
 * names, read-only predefined keys, and the MPI_COMM_SELF delete callback
 * that MPI_Finalize must run (the library clean-up hook). */
#include "bm_test.h"

#include <mpi.h>
#include <stdint.h>

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

    /* A freed key still serves the attributes that use it. */
    BM_CHECK_EQ_INT(MPI_Comm_free_keyval(&key), MPI_SUCCESS);
    BM_CHECK_EQ_INT(key, MPI_KEYVAL_INVALID);
    BM_CHECK_EQ_INT(MPI_Comm_delete_attr(b, nocopy), MPI_ERR_KEYVAL); /* not set on b */
    deletes = 0;
    BM_CHECK_EQ_INT(MPI_Comm_free(&b), MPI_SUCCESS);
    BM_CHECK_EQ_INT(deletes, 1);
    BM_CHECK_EQ_INT(last_deleted, 19);
    BM_CHECK_EQ_INT(MPI_Comm_delete_attr(a, nocopy), MPI_SUCCESS);
    BM_CHECK_EQ_INT(deletes, 2);
    BM_CHECK_EQ_INT(last_deleted, 6);
    BM_CHECK_EQ_INT(MPI_Comm_free(&a), MPI_SUCCESS);
    BM_CHECK_EQ_INT(deletes, 3);
    BM_CHECK_EQ_INT(last_deleted, 8);

    /* Errors. */
    BM_CHECK_EQ_INT(MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_TAG_UB, (void *)1), MPI_ERR_KEYVAL);
    BM_CHECK_EQ_INT(MPI_Comm_get_attr(MPI_COMM_WORLD, 123456, &val, &flag), MPI_ERR_KEYVAL);
    BM_CHECK_EQ_INT(MPI_Comm_free_keyval(&(int){MPI_TAG_UB}), MPI_ERR_KEYVAL);
    BM_CHECK_EQ_INT(MPI_Comm_free_keyval(&nocopy), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Comm_set_attr(MPI_COMM_WORLD, nocopy, NULL), MPI_ERR_KEYVAL);
    BM_CHECK_EQ_INT(MPI_Comm_free_keyval(&dupkey), MPI_SUCCESS);
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
    BM_CHECK_EQ_INT(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalize_hook, &hook, NULL),
                    MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Comm_set_attr(MPI_COMM_SELF, hook, (void *)42), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Finalize(), MPI_SUCCESS);
    BM_CHECK_MSG(finalize_hook_ran, "MPI_Finalize did not run the MPI_COMM_SELF delete callback");
    return bm_test_summary("api_attr");
}
