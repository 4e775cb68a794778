/* Predefined MPI datatypes: one exported object per type with its size,
 * extent and kind (which reductions apply), and the queries on them
 * (MPI_Type_size, MPI_Type_get_extent, MPI_Get_elements...). Every datatype
 * is contiguous for now: count elements are count * extent bytes from the
 * buffer address, padding of the value-index pair types included. Derived
 * types so far are MPI_Type_contiguous (and MPI_Type_dup) of these, which
 * keeps that property; types with gaps (vector, indexed, struct) need
 * packing in the point-to-point path and are not provided yet. The PML
 * turns received bytes back into a count with bm_mpi_type_count. */
#include "mpi/mpi_internal.h"

#include <complex.h>
#include <limits.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

/* The C layouts of the MAXLOC/MINLOC pair types. */
struct bm_mpi_float_int {
    float v;
    int i;
};
struct bm_mpi_double_int {
    double v;
    int i;
};
struct bm_mpi_long_int {
    long v;
    int i;
};
struct bm_mpi_2int {
    int v;
    int i;
};
struct bm_mpi_short_int {
    short v;
    int i;
};
struct bm_mpi_long_double_int {
    long double v;
    int i;
};

#define BM_TYPE_DEF(obj, namestr, size_, extent_, kind_, signed_)                                  \
    struct bm_mpi_datatype bm_mpi_type_##obj##_obj = {                                             \
        .magic = BM_MPI_MAGIC_DATATYPE,                                                            \
        .id = BM_MPI_TYPE_ID_##obj,                                                                \
        .kind = (kind_),                                                                           \
        .size = (size_),                                                                           \
        .lb = 0,                                                                                   \
        .extent = (MPI_Aint)(extent_),                                                             \
        .is_signed = (signed_),                                                                    \
        .contiguous = true,                                                                        \
        .predefined = true,                                                                        \
        .committed = true,                                                                         \
        .basic = &bm_mpi_type_##obj##_obj,                                                         \
        .basic_count = 1,                                                                          \
        .name = namestr,                                                                           \
    }
#define BM_SCALAR(obj, mpiname, ctype, kind, sgn)                                                  \
    BM_TYPE_DEF(obj, #mpiname, sizeof(ctype), sizeof(ctype), kind, sgn)
/* MPI counts a pair's size without padding (value + int), its extent with. */
#define BM_PAIR(obj, mpiname, vtype)                                                               \
    BM_TYPE_DEF(obj, #mpiname, sizeof(vtype) + sizeof(int), sizeof(struct bm_mpi_##obj),           \
                BM_MPI_KIND_PAIR, true)

BM_SCALAR(char, MPI_CHAR, char, BM_MPI_KIND_CHAR, CHAR_MIN < 0);
BM_SCALAR(signed_char, MPI_SIGNED_CHAR, signed char, BM_MPI_KIND_INT, true);
BM_SCALAR(unsigned_char, MPI_UNSIGNED_CHAR, unsigned char, BM_MPI_KIND_INT, false);
BM_SCALAR(byte, MPI_BYTE, unsigned char, BM_MPI_KIND_BYTE, false);
BM_SCALAR(packed, MPI_PACKED, unsigned char, BM_MPI_KIND_BYTE, false);
BM_SCALAR(wchar, MPI_WCHAR, wchar_t, BM_MPI_KIND_CHAR, false);
BM_SCALAR(short, MPI_SHORT, short, BM_MPI_KIND_INT, true);
BM_SCALAR(unsigned_short, MPI_UNSIGNED_SHORT, unsigned short, BM_MPI_KIND_INT, false);
BM_SCALAR(int, MPI_INT, int, BM_MPI_KIND_INT, true);
BM_SCALAR(unsigned, MPI_UNSIGNED, unsigned, BM_MPI_KIND_INT, false);
BM_SCALAR(long, MPI_LONG, long, BM_MPI_KIND_INT, true);
BM_SCALAR(unsigned_long, MPI_UNSIGNED_LONG, unsigned long, BM_MPI_KIND_INT, false);
BM_SCALAR(long_long_int, MPI_LONG_LONG_INT, long long, BM_MPI_KIND_INT, true);
BM_SCALAR(unsigned_long_long, MPI_UNSIGNED_LONG_LONG, unsigned long long, BM_MPI_KIND_INT, false);
BM_SCALAR(float, MPI_FLOAT, float, BM_MPI_KIND_FLOAT, true);
BM_SCALAR(double, MPI_DOUBLE, double, BM_MPI_KIND_FLOAT, true);
BM_SCALAR(long_double, MPI_LONG_DOUBLE, long double, BM_MPI_KIND_FLOAT, true);
BM_SCALAR(c_bool, MPI_C_BOOL, _Bool, BM_MPI_KIND_BOOL, false);
BM_SCALAR(int8_t, MPI_INT8_T, int8_t, BM_MPI_KIND_INT, true);
BM_SCALAR(int16_t, MPI_INT16_T, int16_t, BM_MPI_KIND_INT, true);
BM_SCALAR(int32_t, MPI_INT32_T, int32_t, BM_MPI_KIND_INT, true);
BM_SCALAR(int64_t, MPI_INT64_T, int64_t, BM_MPI_KIND_INT, true);
BM_SCALAR(uint8_t, MPI_UINT8_T, uint8_t, BM_MPI_KIND_INT, false);
BM_SCALAR(uint16_t, MPI_UINT16_T, uint16_t, BM_MPI_KIND_INT, false);
BM_SCALAR(uint32_t, MPI_UINT32_T, uint32_t, BM_MPI_KIND_INT, false);
BM_SCALAR(uint64_t, MPI_UINT64_T, uint64_t, BM_MPI_KIND_INT, false);
BM_SCALAR(aint, MPI_AINT, MPI_Aint, BM_MPI_KIND_INT, true);
BM_SCALAR(offset, MPI_OFFSET, MPI_Offset, BM_MPI_KIND_INT, true);
BM_SCALAR(count, MPI_COUNT, MPI_Count, BM_MPI_KIND_INT, true);
BM_SCALAR(c_float_complex, MPI_C_FLOAT_COMPLEX, float _Complex, BM_MPI_KIND_COMPLEX, true);
BM_SCALAR(c_double_complex, MPI_C_DOUBLE_COMPLEX, double _Complex, BM_MPI_KIND_COMPLEX, true);
BM_SCALAR(c_long_double_complex, MPI_C_LONG_DOUBLE_COMPLEX, long double _Complex,
          BM_MPI_KIND_COMPLEX, true);
BM_PAIR(float_int, MPI_FLOAT_INT, float);
BM_PAIR(double_int, MPI_DOUBLE_INT, double);
BM_PAIR(long_int, MPI_LONG_INT, long);
BM_PAIR(2int, MPI_2INT, int);
BM_PAIR(short_int, MPI_SHORT_INT, short);
BM_PAIR(long_double_int, MPI_LONG_DOUBLE_INT, long double);

int bm_mpi_type_count(MPI_Datatype dt, size_t bytes)
{
    size_t n;

    if (dt->extent == 0)
        return 0;
    if (bytes % (size_t)dt->extent != 0)
        return MPI_UNDEFINED;
    n = bytes / (size_t)dt->extent;
    return n > INT_MAX ? MPI_UNDEFINED : (int)n;
}

/* Basic elements (MPI_Get_elements' unit) in one predefined element: the
 * pair types hold two. */
static int type_basic_elements(MPI_Datatype basic)
{
    return basic->kind == BM_MPI_KIND_PAIR ? 2 : 1;
}

static int check_type_query(MPI_Datatype dt, const void *out, const char *fn)
{
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    /* Queries work on types not committed yet. */
    if (dt == MPI_DATATYPE_NULL || dt->magic != BM_MPI_MAGIC_DATATYPE)
        return bm_mpi_check_datatype(NULL, dt, fn);
    if (out == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL output argument");
    return MPI_SUCCESS;
}

int PMPI_Type_size(MPI_Datatype datatype, int *size)
{
    int rc = check_type_query(datatype, size, "MPI_Type_size");

    if (rc)
        return rc;
    *size = (int)datatype->size;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_size);

int PMPI_Type_size_x(MPI_Datatype datatype, MPI_Count *size)
{
    int rc = check_type_query(datatype, size, "MPI_Type_size_x");

    if (rc)
        return rc;
    *size = (MPI_Count)datatype->size;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_size_x);

int PMPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent)
{
    int rc = check_type_query(datatype, lb && extent ? lb : NULL, "MPI_Type_get_extent");

    if (rc)
        return rc;
    *lb = datatype->lb;
    *extent = datatype->extent;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_get_extent);

int PMPI_Type_get_extent_x(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent)
{
    int rc = check_type_query(datatype, lb && extent ? lb : NULL, "MPI_Type_get_extent_x");

    if (rc)
        return rc;
    *lb = datatype->lb;
    *extent = datatype->extent;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_get_extent_x);

int PMPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb, MPI_Aint *true_extent)
{
    int rc = check_type_query(datatype, true_lb && true_extent ? true_lb : NULL,
                              "MPI_Type_get_true_extent");
    MPI_Aint pad = 0;

    if (rc)
        return rc;
    /* The true extent spans the data only: the last pair's trailing
     * padding (after its int, which follows the value at int alignment)
     * is not in it. */
    if (datatype->basic->kind == BM_MPI_KIND_PAIR && datatype->extent > 0) {
        size_t vsize = datatype->basic->size - sizeof(int);
        size_t ioff = (vsize + alignof(int) - 1) / alignof(int) * alignof(int);
        pad = datatype->basic->extent - (MPI_Aint)(ioff + sizeof(int));
    }
    *true_lb = datatype->lb;
    *true_extent = datatype->extent - pad;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_get_true_extent);

void bm_mpi_type_retain(MPI_Datatype dt)
{
    if (!dt->predefined)
        dt->refcount++;
}

void bm_mpi_type_release(MPI_Datatype dt)
{
    if (!dt->predefined && --dt->refcount == 0) {
        bm_mpi_type_release(dt->basic);
        dt->magic = 0;
        free(dt);
    }
}

/* Derived datatypes are contiguous runs of a predefined type for now: they
 * need no packing, so every transfer path moves them as they lie. */
int PMPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    static const char fn[] = "MPI_Type_contiguous";
    struct bm_mpi_datatype *t;
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_count(NULL, count, fn)))
        return rc;
    /* The old type need not be committed to build on it. */
    if (oldtype == MPI_DATATYPE_NULL || oldtype->magic != BM_MPI_MAGIC_DATATYPE)
        return bm_mpi_check_datatype(NULL, oldtype, fn);
    if (newtype == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL newtype pointer");
    if (oldtype->extent != 0 && (size_t)count > (size_t)INTPTR_MAX / (size_t)oldtype->extent)
        return bm_mpi_error(NULL, MPI_ERR_COUNT, fn, "%d elements of %s overflow the address space",
                            count, oldtype->name);
    t = calloc(1, sizeof(*t));
    if (t == NULL)
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    t->magic = BM_MPI_MAGIC_DATATYPE;
    t->id = BM_MPI_TYPE_ID_COUNT;
    t->kind = oldtype->kind;
    t->size = (size_t)count * oldtype->size;
    t->lb = oldtype->lb;
    t->extent = (MPI_Aint)count * oldtype->extent;
    t->is_signed = oldtype->is_signed;
    t->contiguous = oldtype->contiguous;
    t->basic = oldtype->basic;
    t->basic_count = (size_t)count * oldtype->basic_count;
    t->refcount = 1;
    t->name = t->name_buf;
    bm_mpi_type_retain(t->basic);
    *newtype = t;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_contiguous);

static int check_derived(MPI_Datatype *datatype, const char *fn)
{
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (datatype == NULL || *datatype == MPI_DATATYPE_NULL ||
        (*datatype)->magic != BM_MPI_MAGIC_DATATYPE)
        return bm_mpi_error(NULL, MPI_ERR_TYPE, fn, "invalid datatype handle");
    return MPI_SUCCESS;
}

int PMPI_Type_commit(MPI_Datatype *datatype)
{
    int rc = check_derived(datatype, "MPI_Type_commit");

    if (rc)
        return rc;
    (*datatype)->committed = true;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_commit);

int PMPI_Type_free(MPI_Datatype *datatype)
{
    static const char fn[] = "MPI_Type_free";
    int rc = check_derived(datatype, fn);

    if (rc)
        return rc;
    if ((*datatype)->predefined)
        return bm_mpi_error(NULL, MPI_ERR_TYPE, fn, "cannot free the predefined datatype %s",
                            (*datatype)->name);
    bm_mpi_type_release(*datatype);
    *datatype = MPI_DATATYPE_NULL;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_free);

int PMPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    int rc = PMPI_Type_contiguous(1, oldtype, newtype);

    if (rc == MPI_SUCCESS) {
        (*newtype)->committed = oldtype->committed;
        snprintf((*newtype)->name_buf, sizeof((*newtype)->name_buf), "%s", oldtype->name);
    }
    return rc;
}
BM_MPI_ALIAS(Type_dup);

int PMPI_Type_set_name(MPI_Datatype datatype, const char *type_name)
{
    static const char fn[] = "MPI_Type_set_name";
    int rc = check_derived(&datatype, fn);

    if (rc)
        return rc;
    if (type_name == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL name");
    if (datatype->predefined)
        return bm_mpi_error(NULL, MPI_ERR_TYPE, fn, "cannot rename the predefined datatype %s",
                            datatype->name);
    snprintf(datatype->name_buf, sizeof(datatype->name_buf), "%s", type_name);
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_set_name);

int PMPI_Type_get_name(MPI_Datatype datatype, char *type_name, int *resultlen)
{
    int rc =
        check_type_query(datatype, type_name && resultlen ? type_name : NULL, "MPI_Type_get_name");

    if (rc)
        return rc;
    *resultlen = snprintf(type_name, MPI_MAX_OBJECT_NAME, "%s", datatype->name);
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_get_name);

static int get_elements(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count,
                        const char *fn)
{
    int rc = check_type_query(datatype, status && count ? count : NULL, fn);
    int n;

    if (rc)
        return rc;
    if (datatype->size == 0) {
        *count = 0;
        return MPI_SUCCESS;
    }
    n = bm_mpi_type_count(datatype, status->bm_count);
    if (n != MPI_UNDEFINED) {
        *count =
            (MPI_Count)n * (MPI_Count)datatype->basic_count * type_basic_elements(datatype->basic);
    } else {
        /* A partial derived element still holds whole basic elements. */
        n = bm_mpi_type_count(datatype->basic, status->bm_count);
        *count = n == MPI_UNDEFINED ? MPI_UNDEFINED
                                    : (MPI_Count)n * type_basic_elements(datatype->basic);
    }
    return MPI_SUCCESS;
}

int PMPI_Get_elements_x(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    return get_elements(status, datatype, count, "MPI_Get_elements_x");
}
BM_MPI_ALIAS(Get_elements_x);

int PMPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
    MPI_Count n = 0;
    int rc = get_elements(status, datatype, count ? &n : NULL, "MPI_Get_elements");

    if (rc)
        return rc;
    *count = n > INT_MAX ? MPI_UNDEFINED : (int)n;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Get_elements);

int PMPI_Get_address(const void *location, MPI_Aint *address)
{
    if (address == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, "MPI_Get_address", "NULL address pointer");
    *address = (MPI_Aint)(uintptr_t)location;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Get_address);
