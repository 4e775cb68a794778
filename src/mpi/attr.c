/* Attribute caching on communicators: the predefined attributes of every
 * communicator (MPI_TAG_UB, MPI_HOST, MPI_IO, MPI_WTIME_IS_GLOBAL,
 * MPI_UNIVERSE_SIZE, MPI_APPNUM, MPI_LASTUSEDCODE) and user keys made with
 * MPI_Comm_create_keyval, whose copy callbacks run in MPI_Comm_dup and whose
 * delete callbacks run when an attribute is replaced or deleted, when its
 * communicator is freed, and in MPI_Finalize (MPI_COMM_SELF first, which
 * libraries use as a clean-up hook). Keys are reference counted: a freed key
 * stays valid for the attributes that still use it. */
#include "mpi/mpi_internal.h"
#include "runtime/rte.h"

#include <stdlib.h>
#include <string.h>

/* User keys are numbered from here, above the predefined ones. */
#define BM_MPI_KEYVAL_FIRST 100

/* Attributes live on three kinds of object (communicators here; datatypes
 * and windows use the same engine through their own entry points); a key
 * belongs to one kind and is refused on the others. */
enum attr_kind {
    ATTR_COMM,
};

struct bm_mpi_keyval {
    enum attr_kind kind;
    MPI_Comm_copy_attr_function *copy_fn;
    MPI_Comm_delete_attr_function *delete_fn;
    void *extra_state;
    int refcount;      /* the key handle (until freed) + attributes using it */
    bool handle_freed; /* MPI_*_free_keyval was called: only attributes still hold it */
};

struct bm_mpi_attr {
    struct bm_mpi_attr *next;
    int keyval;
    void *value;
};

static struct bm_mpi_keyval **keyvals;
static int nkeyvals;

int bm_mpi_comm_dup_fn(MPI_Comm oldcomm, int comm_keyval, void *extra_state, void *attribute_val_in,
                       void *attribute_val_out, int *flag)
{
    (void)oldcomm;
    (void)comm_keyval;
    (void)extra_state;
    memcpy(attribute_val_out, &attribute_val_in, sizeof(void *));
    *flag = 1;
    return MPI_SUCCESS;
}

/* The key table grows by realloc and keys are counted: under
 * MPI_THREAD_MULTIPLE both are touched under the object lock (mt.c). */
static struct bm_mpi_keyval *keyval_get(int keyval)
{
    int i = keyval - BM_MPI_KEYVAL_FIRST;

    bm_mpi_obj_lock();
    struct bm_mpi_keyval *k = i >= 0 && i < nkeyvals ? keyvals[i] : NULL;
    bm_mpi_obj_unlock();
    return k;
}

static void keyval_release(int keyval)
{
    bm_mpi_obj_lock();
    struct bm_mpi_keyval *k = keyval_get(keyval);

    if (k && --k->refcount == 0) {
        free(k);
        keyvals[keyval - BM_MPI_KEYVAL_FIRST] = NULL;
    }
    bm_mpi_obj_unlock();
}

static bool keyval_predefined(int keyval)
{
    return keyval >= MPI_TAG_UB && keyval <= MPI_LASTUSEDCODE;
}

static int check_user_keyval(MPI_Comm comm, int keyval, const char *fn)
{
    struct bm_mpi_keyval *k = keyval_get(keyval);
    if (keyval_predefined(keyval))
        return bm_mpi_error(comm, MPI_ERR_KEYVAL, fn,
                            "attribute key %d is predefined and read-only", keyval);
    if (k == NULL || k->handle_freed)
        return bm_mpi_error(comm, MPI_ERR_KEYVAL, fn,
                            "invalid attribute key %d (not created by MPI_Comm_create_keyval, "
                            "or freed)",
                            keyval);
    return MPI_SUCCESS;
}

static struct bm_mpi_attr **attr_find(struct bm_mpi_attr **list, int keyval)
{
    struct bm_mpi_attr **pa = list;

    while (*pa && (*pa)->keyval != keyval)
        pa = &(*pa)->next;
    return pa;
}

/* The delete callback of attribute a, already unlinked from its object. */
static int attr_delete_cb(MPI_Comm comm, struct bm_mpi_attr *a, const char *fn)
{
    struct bm_mpi_keyval *k = keyval_get(a->keyval);
    int rc = MPI_SUCCESS;
    if (k->delete_fn)
        rc = k->delete_fn(comm, a->keyval, a->value, k->extra_state);
    if (rc != MPI_SUCCESS)
        return bm_mpi_error(comm, rc > 0 && rc <= MPI_ERR_LASTCODE ? rc : MPI_ERR_OTHER, fn,
                            "the delete callback of attribute key %d returned %d", a->keyval, rc);
    return MPI_SUCCESS;
}

/* Remove the attribute at *pa: unlink it first, so that the delete callback
 * sees a consistent list (it may set, get or delete other attributes of the
 * same object, even free the object's keys); then run the callback. When
 * the callback fails the attribute stays (relinked at the head), as the
 * call that removed it fails. */
static int attr_remove(MPI_Comm comm, struct bm_mpi_attr **list, struct bm_mpi_attr **pa,
                       const char *fn)
{
    struct bm_mpi_attr *a = *pa;
    *pa = a->next;
    int rc = attr_delete_cb(comm, a, fn);
    if (rc) {
        a->next = *list;
        *list = a;
        return rc;
    }
    keyval_release(a->keyval);
    free(a);
    return MPI_SUCCESS;
}

static int attr_add(MPI_Comm comm, struct bm_mpi_attr **list, int keyval, void *value,
                    const char *fn)
{
    struct bm_mpi_attr *a = malloc(sizeof(*a));

    if (a == NULL)
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
    /* Newest first: deleting from the head undoes them in reverse order. */
    a->keyval = keyval;
    a->value = value;
    a->next = *list;
    *list = a;
    bm_mpi_obj_lock();
    keyval_get(keyval)->refcount++;
    bm_mpi_obj_unlock();
    return MPI_SUCCESS;
}

int bm_mpi_attr_copy_all(MPI_Comm oldcomm, MPI_Comm newcomm, const char *fn)
{
    /* A snapshot of the keys first: a copy callback may change oldcomm's
     * attributes. The references keep the keys alive meanwhile. */
    int n = 0, rc = MPI_SUCCESS;
    for (struct bm_mpi_attr *a = oldcomm->attrs; a; a = a->next)
        n++;
    if (n == 0)
        return MPI_SUCCESS;
    int *keys = malloc(sizeof(int) * (size_t)n);
    if (!keys)
        return bm_mpi_error(oldcomm, MPI_ERR_NO_MEM, fn, "out of memory");
    n = 0;
    for (struct bm_mpi_attr *a = oldcomm->attrs; a; a = a->next) {
        keys[n++] = a->keyval;
        keyval_get(a->keyval)->refcount++;
    }
    /* Oldest first, so that the copies keep the original order. */
    for (int i = n - 1; i >= 0 && rc == MPI_SUCCESS; i--) {
        struct bm_mpi_keyval *k = keyval_get(keys[i]);
        struct bm_mpi_attr *a = *attr_find(&oldcomm->attrs, keys[i]);
        void *out = NULL;
        int flag = 0;

        if (!a || k->copy_fn == MPI_COMM_NULL_COPY_FN)
            continue;
        rc = k->copy_fn(oldcomm, keys[i], k->extra_state, a->value, &out, &flag);
        if (rc != MPI_SUCCESS)
            rc = bm_mpi_error(oldcomm, rc > 0 && rc <= MPI_ERR_LASTCODE ? rc : MPI_ERR_OTHER, fn,
                              "the copy callback of attribute key %d returned %d", keys[i], rc);
        else if (flag)
            rc = attr_add(newcomm, &newcomm->attrs, keys[i], out, fn);
    }
    for (int i = 0; i < n; i++)
        keyval_release(keys[i]);
    free(keys);
    return rc;
}

int bm_mpi_attr_delete_all(MPI_Comm comm, const char *fn)
{
    int rc;

    while (comm->attrs)
        if ((rc = attr_remove(comm, &comm->attrs, &comm->attrs, fn)))
            return rc;
    return MPI_SUCCESS;
}

static int get_attr(MPI_Comm comm, int keyval, void *attribute_val, int *flag, const char *fn)
{
    /* Attribute values are returned as pointers to these. */
    static int tag_ub = BM_MPI_TAG_UB;
    static int host = MPI_PROC_NULL;
    static int io = MPI_ANY_SOURCE; /* every process can do I/O */
    static int wtime_is_global = 0; /* each node's monotonic clock is its own */
    static int universe_size;
    static int appnum = 0;
    static int lastusedcode;
    int *value;
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)))
        return rc;
    if (attribute_val == NULL || flag == NULL)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL output argument");
    switch (keyval) {
    case MPI_TAG_UB:
        value = &tag_ub;
        break;
    case MPI_HOST:
        value = &host;
        break;
    case MPI_IO:
        value = &io;
        break;
    case MPI_WTIME_IS_GLOBAL:
        value = &wtime_is_global;
        break;
    case MPI_UNIVERSE_SIZE:
        universe_size = MPI_COMM_WORLD->size;
        value = &universe_size;
        break;
    case MPI_APPNUM:
        appnum = bm_rte_self()->appnum; /* the launcher's program index (MPMD) */
        value = &appnum;
        break;
    case MPI_LASTUSEDCODE:
        lastusedcode = bm_mpi_error_lastused();
        value = &lastusedcode;
        break;
    default: {
        struct bm_mpi_attr *a;
        if ((rc = check_user_keyval(comm, keyval, fn)))
            return rc;
        a = *attr_find(&comm->attrs, keyval);
        *flag = a != NULL;
        if (a)
            memcpy(attribute_val, &a->value, sizeof(a->value));
        return MPI_SUCCESS;
    }
    }
    memcpy(attribute_val, &value, sizeof(value));
    *flag = 1;
    return MPI_SUCCESS;
}

int PMPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag)
{
    return get_attr(comm, comm_keyval, attribute_val, flag, "MPI_Comm_get_attr");
}
BM_MPI_ALIAS(Comm_get_attr);

int PMPI_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag)
{
    return get_attr(comm, keyval, attribute_val, flag, "MPI_Attr_get");
}
BM_MPI_ALIAS(Attr_get);

void bm_mpi_attr_drop_all(MPI_Comm comm)
{
    while (comm->attrs) {
        struct bm_mpi_attr *a = comm->attrs;
        comm->attrs = a->next;
        keyval_release(a->keyval);
        free(a);
    }
}

int PMPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn,
                            MPI_Comm_delete_attr_function *comm_delete_attr_fn, int *comm_keyval,
                            void *extra_state)
{
    static const char fn[] = "MPI_Comm_create_keyval";
    struct bm_mpi_keyval *k, **grown;
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (comm_keyval == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL comm_keyval pointer");
    k = calloc(1, sizeof(*k));
    bm_mpi_obj_lock();
    grown = realloc(keyvals, sizeof(*keyvals) * (size_t)(nkeyvals + 1));
    if (k == NULL || grown == NULL) {
        free(k);
        if (grown)
            keyvals = grown;
        bm_mpi_obj_unlock();
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    keyvals = grown;
    k->copy_fn = comm_copy_attr_fn;
    k->delete_fn = comm_delete_attr_fn;
    k->kind = ATTR_COMM;
    k->extra_state = extra_state;
    k->refcount = 1;
    keyvals[nkeyvals] = k;
    *comm_keyval = BM_MPI_KEYVAL_FIRST + nkeyvals++;
    bm_mpi_obj_unlock();
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Comm_create_keyval);

int PMPI_Comm_free_keyval(int *comm_keyval)
{
    static const char fn[] = "MPI_Comm_free_keyval";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (comm_keyval == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL comm_keyval pointer");
    if ((rc = check_user_keyval(NULL, *comm_keyval, fn)))
        return rc;
    keyval_get(*comm_keyval)->handle_freed = true;
    keyval_release(*comm_keyval);
    *comm_keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Comm_free_keyval);

/* Checks shared by set and delete; *pa_out is where the key's attribute
 * is (or would be linked) on comm. */
static int attr_lookup(MPI_Comm comm, int keyval, struct bm_mpi_attr ***pa_out, const char *fn)
{
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)) ||
        (rc = check_user_keyval(comm, keyval, fn)))
        return rc;
    *pa_out = attr_find(&comm->attrs, keyval);
    return MPI_SUCCESS;
}

int PMPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val)
{
    static const char fn[] = "MPI_Comm_set_attr";
    struct bm_mpi_attr **pa;
    int rc;

    if ((rc = attr_lookup(comm, comm_keyval, &pa, fn)))
        return rc;
    /* Replacing: the old value's delete callback runs first. */
    if (*pa && (rc = attr_remove(comm, &comm->attrs, pa, fn)))
        return rc;
    return attr_add(comm, &comm->attrs, comm_keyval, attribute_val, fn);
}
BM_MPI_ALIAS(Comm_set_attr);

int PMPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval)
{
    static const char fn[] = "MPI_Comm_delete_attr";
    struct bm_mpi_attr **pa;
    int rc;

    if ((rc = attr_lookup(comm, comm_keyval, &pa, fn)))
        return rc;
    if (*pa == NULL)
        return bm_mpi_error(comm, MPI_ERR_KEYVAL, fn, "no attribute with key %d is set on %s",
                            comm_keyval, bm_mpi_comm_label(comm));
    return attr_remove(comm, &comm->attrs, pa, fn);
}
BM_MPI_ALIAS(Comm_delete_attr);

/* The MPI-1 names, still common in older programs. */
int PMPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn, int *keyval,
                       void *extra_state)
{
    return PMPI_Comm_create_keyval(copy_fn, delete_fn, keyval, extra_state);
}
BM_MPI_ALIAS(Keyval_create);

int PMPI_Keyval_free(int *keyval)
{
    return PMPI_Comm_free_keyval(keyval);
}
BM_MPI_ALIAS(Keyval_free);

int PMPI_Attr_put(MPI_Comm comm, int keyval, void *attribute_val)
{
    return PMPI_Comm_set_attr(comm, keyval, attribute_val);
}
BM_MPI_ALIAS(Attr_put);

int PMPI_Attr_delete(MPI_Comm comm, int keyval)
{
    return PMPI_Comm_delete_attr(comm, keyval);
}
BM_MPI_ALIAS(Attr_delete);
