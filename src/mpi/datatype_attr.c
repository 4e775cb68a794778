/* Attribute caching on datatypes (MPI_Type_create_keyval and friends):
 * user keys with copy callbacks run by MPI_Type_dup and delete callbacks
 * run when an attribute is replaced or deleted and when its type is freed.
 * The work is the attribute engine's (attr.c: keys reference counted, an
 * attribute unlinked before its delete callback runs, keys of another kind
 * refused); this file gives it the datatype's list and handle. Errors on
 * datatypes go to MPI_COMM_WORLD's handler, as the standard says for
 * objects without one. */
#include "mpi/mpi_internal.h"

#include <string.h>

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

static struct bm_mpi_attr_owner type_owner(MPI_Datatype dt)
{
    return (struct bm_mpi_attr_owner){
        .kind = BM_MPI_ATTR_TYPE, .obj = dt, .list = &dt->attrs, .error = NULL};
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

int bm_mpi_datatype_attr_copy_all(MPI_Datatype oldtype, MPI_Datatype newtype, const char *fn)
{
    struct bm_mpi_attr_owner from = type_owner(oldtype), to = type_owner(newtype);
    return bm_mpi_attr_copy_list(&from, &to, fn);
}

int bm_mpi_datatype_attr_delete_all(MPI_Datatype dt, const char *fn)
{
    struct bm_mpi_attr_owner o = type_owner(dt);
    return bm_mpi_attr_delete_list(&o, fn);
}

void bm_mpi_datatype_attr_drop_all(MPI_Datatype dt)
{
    bm_mpi_attr_drop_list(&dt->attrs);
}

int PMPI_Type_create_keyval(MPI_Type_copy_attr_function *type_copy_attr_fn,
                            MPI_Type_delete_attr_function *type_delete_attr_fn, int *type_keyval,
                            void *extra_state)
{
    return bm_mpi_keyval_create(BM_MPI_ATTR_TYPE, (void (*)(void))type_copy_attr_fn,
                                (void (*)(void))type_delete_attr_fn, extra_state, type_keyval,
                                "MPI_Type_create_keyval");
}
BM_MPI_ALIAS(Type_create_keyval);

int PMPI_Type_free_keyval(int *type_keyval)
{
    return bm_mpi_keyval_free(BM_MPI_ATTR_TYPE, type_keyval, "MPI_Type_free_keyval");
}
BM_MPI_ALIAS(Type_free_keyval);

int PMPI_Type_set_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val)
{
    static const char fn[] = "MPI_Type_set_attr";
    int rc = check_type(datatype, fn);
    if (rc)
        return rc;
    struct bm_mpi_attr_owner o = type_owner(datatype);
    return bm_mpi_attr_set(&o, type_keyval, attribute_val, fn);
}
BM_MPI_ALIAS(Type_set_attr);

int PMPI_Type_get_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val, int *flag)
{
    static const char fn[] = "MPI_Type_get_attr";
    int rc = check_type(datatype, fn);
    if (rc)
        return rc;
    if (!attribute_val || !flag)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL output argument");
    struct bm_mpi_attr_owner o = type_owner(datatype);
    return bm_mpi_attr_get(&o, type_keyval, attribute_val, flag, fn);
}
BM_MPI_ALIAS(Type_get_attr);

int PMPI_Type_delete_attr(MPI_Datatype datatype, int type_keyval)
{
    static const char fn[] = "MPI_Type_delete_attr";
    int rc = check_type(datatype, fn);
    if (rc)
        return rc;
    struct bm_mpi_attr_owner o = type_owner(datatype);
    return bm_mpi_attr_delete(&o, type_keyval, fn);
}
BM_MPI_ALIAS(Type_delete_attr);
