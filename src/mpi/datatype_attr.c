/* Attribute caching on datatypes (MPI_Type_create_keyval and friends): user
 * keys with copy callbacks run by MPI_Type_dup and delete callbacks run when
 * an attribute is replaced or deleted and when its type is freed. Datatype
 * keys are their own numbering space (the standard keeps one per object
 * kind). Keys are reference counted: a freed key stays valid for the
 * attributes still using it. */
#include "mpi/mpi_internal.h"

#include <stdlib.h>
#include <string.h>

/* Type keys are numbered from here (distinct from communicator keys, so a
 * key of the wrong kind is reported). */
#define BM_MPI_TYPE_KEYVAL_FIRST 0x10000

struct type_keyval {
    MPI_Type_copy_attr_function *copy_fn;
    MPI_Type_delete_attr_function *delete_fn;
    void *extra_state;
    int refcount; /* the key handle (until MPI_Type_free_keyval) + attributes using it */
};

struct bm_mpi_type_attr {
    struct bm_mpi_type_attr *next;
    int keyval;
    void *value;
};

static struct type_keyval **keyvals;
static int nkeyvals;

int bm_mpi_datatype_attr_copy_all(MPI_Datatype oldtype, MPI_Datatype newtype, const char *fn);
int bm_mpi_datatype_attr_delete_all(MPI_Datatype dt, const char *fn);
void bm_mpi_datatype_attr_drop_all(MPI_Datatype dt);

int bm_mpi_type_dup_fn(MPI_Datatype oldtype, int type_keyval, void *extra_state,
                       void *attribute_val_in, void *attribute_val_out, int *flag)
{
    (void)oldtype;
    (void)type_keyval;
    (void)extra_state;
    memcpy(attribute_val_out, &attribute_val_in, sizeof(void *));
    *flag = 1;
    return MPI_SUCCESS;
}

/* Under MPI_THREAD_MULTIPLE the key table and the keys' counts change
 * under the object lock (mt.c), as attr.c's. */
static struct type_keyval *keyval_get(int keyval)
{
    int i = keyval - BM_MPI_TYPE_KEYVAL_FIRST;
    bm_mpi_obj_lock();
    struct type_keyval *k = i >= 0 && i < nkeyvals ? keyvals[i] : NULL;
    bm_mpi_obj_unlock();
    return k;
}

static void keyval_release(int keyval)
{
    bm_mpi_obj_lock();
    struct type_keyval *k = keyval_get(keyval);
    if (k && --k->refcount == 0) {
        free(k);
        keyvals[keyval - BM_MPI_TYPE_KEYVAL_FIRST] = NULL;
    }
    bm_mpi_obj_unlock();
}

static int check_type(MPI_Datatype dt, const char *fn)
{
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (dt == MPI_DATATYPE_NULL || dt->magic != BM_MPI_MAGIC_DATATYPE)
        return bm_mpi_error(NULL, MPI_ERR_TYPE, fn, "invalid datatype handle");
    return MPI_SUCCESS;
}

static int check_keyval(int keyval, const char *fn)
{
    if (!keyval_get(keyval))
        return bm_mpi_error(NULL, MPI_ERR_KEYVAL, fn,
                            "invalid datatype attribute key %d (not made by "
                            "MPI_Type_create_keyval, or freed)",
                            keyval);
    return MPI_SUCCESS;
}

static struct bm_mpi_type_attr **attr_find(MPI_Datatype dt, int keyval)
{
    struct bm_mpi_type_attr **pa = &dt->attrs;
    while (*pa && (*pa)->keyval != keyval)
        pa = &(*pa)->next;
    return pa;
}

/* Runs the delete callback, then unlinks the attribute. */
static int attr_remove(MPI_Datatype dt, struct bm_mpi_type_attr **pa, const char *fn)
{
    struct bm_mpi_type_attr *a = *pa;
    struct type_keyval *k = keyval_get(a->keyval);
    if (k->delete_fn) {
        int rc = k->delete_fn(dt, a->keyval, a->value, k->extra_state);
        if (rc != MPI_SUCCESS)
            return bm_mpi_error(NULL, rc > 0 && rc <= MPI_ERR_LASTCODE ? rc : MPI_ERR_OTHER, fn,
                                "the delete callback of datatype attribute key %d returned %d",
                                a->keyval, rc);
    }
    *pa = a->next;
    keyval_release(a->keyval);
    free(a);
    return MPI_SUCCESS;
}

static int attr_add(MPI_Datatype dt, int keyval, void *value, const char *fn)
{
    struct bm_mpi_type_attr *a = malloc(sizeof(*a));
    if (!a)
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    a->keyval = keyval;
    a->value = value;
    a->next = dt->attrs;
    dt->attrs = a;
    bm_mpi_obj_lock();
    keyval_get(keyval)->refcount++;
    bm_mpi_obj_unlock();
    return MPI_SUCCESS;
}

int bm_mpi_datatype_attr_copy_all(MPI_Datatype oldtype, MPI_Datatype newtype, const char *fn)
{
    for (struct bm_mpi_type_attr *a = oldtype->attrs; a; a = a->next) {
        struct type_keyval *k = keyval_get(a->keyval);
        void *out = NULL;
        int flag = 0;
        if (!k->copy_fn)
            continue;
        int rc = k->copy_fn(oldtype, a->keyval, k->extra_state, a->value, &out, &flag);
        if (rc != MPI_SUCCESS)
            return bm_mpi_error(NULL, rc > 0 && rc <= MPI_ERR_LASTCODE ? rc : MPI_ERR_OTHER, fn,
                                "the copy callback of datatype attribute key %d returned %d",
                                a->keyval, rc);
        if (flag && (rc = attr_add(newtype, a->keyval, out, fn)))
            return rc;
    }
    return MPI_SUCCESS;
}

int bm_mpi_datatype_attr_delete_all(MPI_Datatype dt, const char *fn)
{
    while (dt->attrs) {
        int rc = attr_remove(dt, &dt->attrs, fn);
        if (rc)
            return rc;
    }
    return MPI_SUCCESS;
}

void bm_mpi_datatype_attr_drop_all(MPI_Datatype dt)
{
    while (dt->attrs) {
        struct bm_mpi_type_attr *a = dt->attrs;
        dt->attrs = a->next;
        keyval_release(a->keyval);
        free(a);
    }
}

int PMPI_Type_create_keyval(MPI_Type_copy_attr_function *type_copy_attr_fn,
                            MPI_Type_delete_attr_function *type_delete_attr_fn, int *type_keyval,
                            void *extra_state)
{
    static const char fn[] = "MPI_Type_create_keyval";
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (!type_keyval)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL keyval pointer");
    struct type_keyval *k = calloc(1, sizeof(*k));
    bm_mpi_obj_lock();
    struct type_keyval **v = realloc(keyvals, (size_t)(nkeyvals + 1) * sizeof(*v));
    if (!k || !v) {
        free(k);
        if (v)
            keyvals = v;
        bm_mpi_obj_unlock();
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    keyvals = v;
    k->copy_fn = type_copy_attr_fn;
    k->delete_fn = type_delete_attr_fn;
    k->extra_state = extra_state;
    k->refcount = 1;
    keyvals[nkeyvals] = k;
    *type_keyval = BM_MPI_TYPE_KEYVAL_FIRST + nkeyvals++;
    bm_mpi_obj_unlock();
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_create_keyval);

int PMPI_Type_free_keyval(int *type_keyval)
{
    static const char fn[] = "MPI_Type_free_keyval";
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (!type_keyval)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL keyval pointer");
    if ((rc = check_keyval(*type_keyval, fn)))
        return rc;
    keyval_release(*type_keyval);
    *type_keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_free_keyval);

int PMPI_Type_set_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val)
{
    static const char fn[] = "MPI_Type_set_attr";
    int rc;
    if ((rc = check_type(datatype, fn)) || (rc = check_keyval(type_keyval, fn)))
        return rc;
    struct bm_mpi_type_attr **pa = attr_find(datatype, type_keyval);
    if (*pa && (rc = attr_remove(datatype, pa, fn)))
        return rc;
    return attr_add(datatype, type_keyval, attribute_val, fn);
}
BM_MPI_ALIAS(Type_set_attr);

int PMPI_Type_get_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val, int *flag)
{
    static const char fn[] = "MPI_Type_get_attr";
    int rc;
    if ((rc = check_type(datatype, fn)) || (rc = check_keyval(type_keyval, fn)))
        return rc;
    if (!attribute_val || !flag)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL output argument");
    struct bm_mpi_type_attr *a = *attr_find(datatype, type_keyval);
    *flag = a != NULL;
    if (a)
        memcpy(attribute_val, &a->value, sizeof(void *));
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_get_attr);

int PMPI_Type_delete_attr(MPI_Datatype datatype, int type_keyval)
{
    static const char fn[] = "MPI_Type_delete_attr";
    int rc;
    if ((rc = check_type(datatype, fn)) || (rc = check_keyval(type_keyval, fn)))
        return rc;
    struct bm_mpi_type_attr **pa = attr_find(datatype, type_keyval);
    if (!*pa)
        return bm_mpi_error(NULL, MPI_ERR_KEYVAL, fn, "the datatype has no attribute with key %d",
                            type_keyval);
    return attr_remove(datatype, pa, fn);
}
BM_MPI_ALIAS(Type_delete_attr);
