/* MPI datatypes (MPI-3.1 chapter 4, less packing: datatype_pack.c; and
 * type attributes: datatype_attr.c): the predefined types (one exported
 * object each, C and the Fortran names a C program may use, the pairs for
 * MAXLOC/MINLOC and the MPI-1 markers MPI_LB/MPI_UB), every constructor
 * (contiguous, vector, hvector, indexed, hindexed, indexed_block,
 * hindexed_block, struct, subarray, darray, resized, dup, and the MPI-1
 * names), commit and free with reference counting, and the queries (size,
 * extent, true extent, envelope and contents, elements, names, match_size).
 *
 * Each type holds the engine's description (util/dtype.h), which does the
 * real work: bounds with markers and struct padding, the packed and typed
 * block programs, packing of any byte range. What travels on the wire for
 * (count, type) is its packed data, count * size bytes, in type-map order:
 * a type with gaps is packed, a contiguous one is sent as it lies. The
 * rules where MPI leaves a choice follow MPICH: a struct's extent is padded
 * to the alignment of its strictest member unless it has an explicit bound
 * (MPI_LB/MPI_UB, or resized), other constructors never pad;
 * MPI_Type_get_contents hands back the very handles used (their reference
 * count raised, so MPI_Type_free on them is right); subarray and darray
 * types have lower bound 0 and the extent of the whole array. (No
 * <complex.h> here: its "complex" macro would rename MPI_COMPLEX's object.) */
#include "mpi/mpi_internal.h"
#include "util/dtype.h"

#include <limits.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

/* ---- predefined types ---------------------------------------------------- */

/* The C layouts of the MAXLOC/MINLOC pair types. */
#define BM_PAIR_STRUCT(name, vtype, itype)                                                         \
    struct bm_mpi_pair_##name {                                                                    \
        vtype v;                                                                                   \
        itype i;                                                                                   \
    }
BM_PAIR_STRUCT(float_int, float, int);
BM_PAIR_STRUCT(double_int, double, int);
BM_PAIR_STRUCT(long_int, long, int);
BM_PAIR_STRUCT(2int, int, int);
BM_PAIR_STRUCT(short_int, short, int);
BM_PAIR_STRUCT(long_double_int, long double, int);
BM_PAIR_STRUCT(2integer, int, int);
BM_PAIR_STRUCT(2real, float, float);
BM_PAIR_STRUCT(2double_precision, double, double);

#define BM_TYPE_DEF(obj, namestr, size_, extent_, kind_, signed_, contig_)                         \
    struct bm_mpi_datatype bm_mpi_type_##obj##_obj = {                                             \
        .magic = BM_MPI_MAGIC_DATATYPE,                                                            \
        .id = BM_MPI_TYPE_ID_##obj,                                                                \
        .kind = (kind_),                                                                           \
        .size = (size_),                                                                           \
        .lb = 0,                                                                                   \
        .extent = (MPI_Aint)(extent_),                                                             \
        .is_signed = (signed_),                                                                    \
        .contiguous = (contig_),                                                                   \
        .predefined = true,                                                                        \
        .committed = true,                                                                         \
        .basic = &bm_mpi_type_##obj##_obj,                                                         \
        .basic_count = 1,                                                                          \
        .name = namestr,                                                                           \
        .combiner = MPI_COMBINER_NAMED,                                                            \
    }
#define BM_SCALAR(obj, mpiname, ctype, kind, sgn)                                                  \
    BM_TYPE_DEF(obj, #mpiname, sizeof(ctype), sizeof(ctype), kind, sgn, true)
/* MPI counts a pair's size without padding (value + index), its extent with. */
#define BM_PAIR(obj, mpiname)                                                                      \
    BM_TYPE_DEF(                                                                                   \
        obj, #mpiname,                                                                             \
        sizeof(((struct bm_mpi_pair_##obj *)0)->v) + sizeof(((struct bm_mpi_pair_##obj *)0)->i),   \
        sizeof(struct bm_mpi_pair_##obj), BM_MPI_KIND_PAIR, true,                                  \
        sizeof(((struct bm_mpi_pair_##obj *)0)->v) + sizeof(((struct bm_mpi_pair_##obj *)0)->i) == \
            sizeof(struct bm_mpi_pair_##obj))

BM_SCALAR(char, MPI_CHAR, char, BM_MPI_KIND_CHAR, CHAR_MIN < 0);
BM_SCALAR(signed_char, MPI_SIGNED_CHAR, signed char, BM_MPI_KIND_INT, true);
BM_SCALAR(unsigned_char, MPI_UNSIGNED_CHAR, unsigned char, BM_MPI_KIND_INT, false);
BM_SCALAR(byte, MPI_BYTE, unsigned char, BM_MPI_KIND_BYTE, false);
BM_SCALAR(packed, MPI_PACKED, unsigned char, BM_MPI_KIND_TEXT, false);
BM_SCALAR(wchar, MPI_WCHAR, wchar_t, BM_MPI_KIND_TEXT, false);
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
/* MPI_C_COMPLEX and MPI_C_FLOAT_COMPLEX are one handle, named as MPICH names it
 * (its datatype/typename accepts only this name for both). */
BM_SCALAR(c_float_complex, MPI_C_COMPLEX, float _Complex, BM_MPI_KIND_COMPLEX, true);
BM_SCALAR(c_double_complex, MPI_C_DOUBLE_COMPLEX, double _Complex, BM_MPI_KIND_COMPLEX, true);
BM_SCALAR(c_long_double_complex, MPI_C_LONG_DOUBLE_COMPLEX, long double _Complex,
          BM_MPI_KIND_COMPLEX, true);
BM_PAIR(float_int, MPI_FLOAT_INT);
BM_PAIR(double_int, MPI_DOUBLE_INT);
BM_PAIR(long_int, MPI_LONG_INT);
BM_PAIR(2int, MPI_2INT);
BM_PAIR(short_int, MPI_SHORT_INT);
BM_PAIR(long_double_int, MPI_LONG_DOUBLE_INT);
BM_SCALAR(character, MPI_CHARACTER, char, BM_MPI_KIND_TEXT, false);
BM_SCALAR(logical, MPI_LOGICAL, int, BM_MPI_KIND_LOGICAL, true);
BM_SCALAR(integer, MPI_INTEGER, int, BM_MPI_KIND_INT, true);
BM_SCALAR(real, MPI_REAL, float, BM_MPI_KIND_FLOAT, true);
BM_SCALAR(double_precision, MPI_DOUBLE_PRECISION, double, BM_MPI_KIND_FLOAT, true);
BM_SCALAR(complex, MPI_COMPLEX, float _Complex, BM_MPI_KIND_COMPLEX, true);
BM_SCALAR(double_complex, MPI_DOUBLE_COMPLEX, double _Complex, BM_MPI_KIND_COMPLEX, true);
BM_PAIR(2integer, MPI_2INTEGER);
BM_PAIR(2real, MPI_2REAL);
BM_PAIR(2double_precision, MPI_2DOUBLE_PRECISION);
BM_SCALAR(integer1, MPI_INTEGER1, int8_t, BM_MPI_KIND_INT, true);
BM_SCALAR(integer2, MPI_INTEGER2, int16_t, BM_MPI_KIND_INT, true);
BM_SCALAR(integer4, MPI_INTEGER4, int32_t, BM_MPI_KIND_INT, true);
BM_SCALAR(integer8, MPI_INTEGER8, int64_t, BM_MPI_KIND_INT, true);
#ifdef __SIZEOF_INT128__
BM_SCALAR(integer16, MPI_INTEGER16, bm_mpi_int128, BM_MPI_KIND_INT, true);
#endif
BM_SCALAR(real4, MPI_REAL4, float, BM_MPI_KIND_FLOAT, true);
BM_SCALAR(real8, MPI_REAL8, double, BM_MPI_KIND_FLOAT, true);
BM_SCALAR(complex8, MPI_COMPLEX8, float _Complex, BM_MPI_KIND_COMPLEX, true);
BM_SCALAR(complex16, MPI_COMPLEX16, double _Complex, BM_MPI_KIND_COMPLEX, true);
BM_SCALAR(cxx_bool, MPI_CXX_BOOL, _Bool, BM_MPI_KIND_BOOL, false);
BM_SCALAR(cxx_float_complex, MPI_CXX_FLOAT_COMPLEX, float _Complex, BM_MPI_KIND_COMPLEX, true);
BM_SCALAR(cxx_double_complex, MPI_CXX_DOUBLE_COMPLEX, double _Complex, BM_MPI_KIND_COMPLEX, true);
BM_SCALAR(cxx_long_double_complex, MPI_CXX_LONG_DOUBLE_COMPLEX, long double _Complex,
          BM_MPI_KIND_COMPLEX, true);
BM_TYPE_DEF(lb, "MPI_LB", 0, 0, BM_MPI_KIND_MARKER, false, true);
BM_TYPE_DEF(ub, "MPI_UB", 0, 0, BM_MPI_KIND_MARKER, false, true);

static MPI_Datatype const predefined[BM_MPI_TYPE_ID_COUNT] = {
#define BM_MPI_TYPE_PTR(mpiname, objname) [BM_MPI_TYPE_ID_##objname] = &bm_mpi_type_##objname##_obj,
    BM_MPI_PREDEFINED_TYPES(BM_MPI_TYPE_PTR)
#undef BM_MPI_TYPE_PTR
};

/* C alignment of each predefined type (struct padding), and the offset of
 * a pair's index. */
#define BM_ALIGN_OF(obj, ctype) [BM_MPI_TYPE_ID_##obj] = alignof(ctype)
static const size_t type_align[BM_MPI_TYPE_ID_COUNT] = {
    BM_ALIGN_OF(char, char),
    BM_ALIGN_OF(signed_char, signed char),
    BM_ALIGN_OF(unsigned_char, unsigned char),
    BM_ALIGN_OF(byte, char),
    BM_ALIGN_OF(packed, char),
    BM_ALIGN_OF(wchar, wchar_t),
    BM_ALIGN_OF(short, short),
    BM_ALIGN_OF(unsigned_short, short),
    BM_ALIGN_OF(int, int),
    BM_ALIGN_OF(unsigned, int),
    BM_ALIGN_OF(long, long),
    BM_ALIGN_OF(unsigned_long, long),
    BM_ALIGN_OF(long_long_int, long long),
    BM_ALIGN_OF(unsigned_long_long, long long),
    BM_ALIGN_OF(float, float),
    BM_ALIGN_OF(double, double),
    BM_ALIGN_OF(long_double, long double),
    BM_ALIGN_OF(c_bool, _Bool),
    BM_ALIGN_OF(int8_t, int8_t),
    BM_ALIGN_OF(int16_t, int16_t),
    BM_ALIGN_OF(int32_t, int32_t),
    BM_ALIGN_OF(int64_t, int64_t),
    BM_ALIGN_OF(uint8_t, uint8_t),
    BM_ALIGN_OF(uint16_t, uint16_t),
    BM_ALIGN_OF(uint32_t, uint32_t),
    BM_ALIGN_OF(uint64_t, uint64_t),
    BM_ALIGN_OF(aint, MPI_Aint),
    BM_ALIGN_OF(offset, MPI_Offset),
    BM_ALIGN_OF(count, MPI_Count),
    BM_ALIGN_OF(c_float_complex, float _Complex),
    BM_ALIGN_OF(c_double_complex, double _Complex),
    BM_ALIGN_OF(c_long_double_complex, long double _Complex),
    BM_ALIGN_OF(float_int, struct bm_mpi_pair_float_int),
    BM_ALIGN_OF(double_int, struct bm_mpi_pair_double_int),
    BM_ALIGN_OF(long_int, struct bm_mpi_pair_long_int),
    BM_ALIGN_OF(2int, struct bm_mpi_pair_2int),
    BM_ALIGN_OF(short_int, struct bm_mpi_pair_short_int),
    BM_ALIGN_OF(long_double_int, struct bm_mpi_pair_long_double_int),
    BM_ALIGN_OF(character, char),
    BM_ALIGN_OF(logical, int),
    BM_ALIGN_OF(integer, int),
    BM_ALIGN_OF(real, float),
    BM_ALIGN_OF(double_precision, double),
    BM_ALIGN_OF(complex, float _Complex),
    BM_ALIGN_OF(double_complex, double _Complex),
    BM_ALIGN_OF(2integer, struct bm_mpi_pair_2integer),
    BM_ALIGN_OF(2real, struct bm_mpi_pair_2real),
    BM_ALIGN_OF(2double_precision, struct bm_mpi_pair_2double_precision),
    BM_ALIGN_OF(integer1, int8_t),
    BM_ALIGN_OF(integer2, int16_t),
    BM_ALIGN_OF(integer4, int32_t),
    BM_ALIGN_OF(integer8, int64_t),
    BM_ALIGN_OF(real4, float),
    BM_ALIGN_OF(real8, double),
    BM_ALIGN_OF(complex8, float _Complex),
    BM_ALIGN_OF(complex16, double _Complex),
    BM_ALIGN_OF(cxx_bool, _Bool),
    BM_ALIGN_OF(cxx_float_complex, float _Complex),
    BM_ALIGN_OF(cxx_double_complex, double _Complex),
    BM_ALIGN_OF(cxx_long_double_complex, long double _Complex),
    [BM_MPI_TYPE_ID_lb] = 1,
    [BM_MPI_TYPE_ID_ub] = 1,
#ifdef __SIZEOF_INT128__
    BM_ALIGN_OF(integer16, bm_mpi_int128),
#endif
};

#define BM_PAIR_IOFF(obj) [BM_MPI_TYPE_ID_##obj] = offsetof(struct bm_mpi_pair_##obj, i)
static const size_t pair_index_offset[BM_MPI_TYPE_ID_COUNT] = {
    BM_PAIR_IOFF(float_int), BM_PAIR_IOFF(double_int), BM_PAIR_IOFF(long_int),
    BM_PAIR_IOFF(2int),      BM_PAIR_IOFF(short_int),  BM_PAIR_IOFF(long_double_int),
    BM_PAIR_IOFF(2integer),  BM_PAIR_IOFF(2real),      BM_PAIR_IOFF(2double_precision),
};

/* The engine's descriptions of the predefined types, built when the library
 * is loaded (queries work before MPI_Init; the objects are static). */
__attribute__((constructor)) static void predefined_init(void)
{
    for (int id = 0; id < BM_MPI_TYPE_ID_COUNT; id++) {
        struct bm_mpi_datatype *t = predefined[id];
        if (t->kind == BM_MPI_KIND_MARKER) {
            t->dt = bm_util_dtype_marker(id == BM_MPI_TYPE_ID_lb ? BM_UTIL_DTYPE_LB_MARKED
                                                                 : BM_UTIL_DTYPE_UB_MARKED);
        } else if (t->kind == BM_MPI_KIND_PAIR) {
            /* value [0, its size), index at its offset after the padding */
            MPI_Datatype v, i;
            size_t ioff;
            bm_mpi_type_pair_parts(t, &v, &i, &ioff);
            struct bm_util_dtype_part parts[2] = {{0, v->size}, {(ptrdiff_t)ioff, i->size}};
            t->dt = bm_util_dtype_basic(id, t->size, t->extent, type_align[id], 2, parts);
        } else {
            struct bm_util_dtype_part part = {0, t->size};
            t->dt = bm_util_dtype_basic(id, t->size, t->extent, type_align[id], 1, &part);
        }
        if (!t->dt)
            abort(); /* out of memory while loading the library */
    }
}

/* ---- internals used by other files --------------------------------------- */

MPI_Datatype bm_mpi_type_predefined(int id)
{
    return id >= 0 && id < BM_MPI_TYPE_ID_COUNT ? predefined[id] : MPI_DATATYPE_NULL;
}

void bm_mpi_type_pair_parts(MPI_Datatype pair, MPI_Datatype *value_out, MPI_Datatype *index_out,
                            size_t *index_offset_out)
{
    MPI_Datatype v = MPI_INT, i = MPI_INT;
    switch (pair->id) {
    case BM_MPI_TYPE_ID_float_int:
        v = MPI_FLOAT;
        break;
    case BM_MPI_TYPE_ID_double_int:
        v = MPI_DOUBLE;
        break;
    case BM_MPI_TYPE_ID_long_int:
        v = MPI_LONG;
        break;
    case BM_MPI_TYPE_ID_short_int:
        v = MPI_SHORT;
        break;
    case BM_MPI_TYPE_ID_long_double_int:
        v = MPI_LONG_DOUBLE;
        break;
    case BM_MPI_TYPE_ID_2integer:
        v = i = MPI_INTEGER;
        break;
    case BM_MPI_TYPE_ID_2real:
        v = i = MPI_REAL;
        break;
    case BM_MPI_TYPE_ID_2double_precision:
        v = i = MPI_DOUBLE_PRECISION;
        break;
    default:
        break;
    }
    *value_out = v;
    *index_out = i;
    *index_offset_out = pair_index_offset[pair->id];
}

int bm_mpi_type_count(MPI_Datatype dt, size_t bytes)
{
    size_t n;

    if (dt->size == 0)
        return 0;
    if (bytes % dt->size != 0)
        return MPI_UNDEFINED;
    n = bytes / dt->size;
    return n > INT_MAX ? MPI_UNDEFINED : (int)n;
}

size_t bm_mpi_type_elements_bytes(MPI_Datatype dt, MPI_Count count)
{
    return bm_util_dtype_elems_bytes(dt->dt, (uint64_t)count);
}

MPI_Aint bm_mpi_type_offset(MPI_Datatype dt)
{
    return dt->dt->pdisp;
}

void bm_mpi_type_pack(MPI_Datatype dt, const void *buf, size_t count, size_t offset, void *dst,
                      size_t len)
{
    bm_util_dtype_pack(dt->dt, buf, count, offset, dst, len);
}

void bm_mpi_type_unpack(MPI_Datatype dt, void *buf, size_t count, size_t offset, const void *src,
                        size_t len)
{
    bm_util_dtype_unpack(dt->dt, buf, count, offset, src, len);
}

void bm_mpi_type_span(MPI_Datatype dt, size_t count, MPI_Aint *lo_out, size_t *span_out)
{
    const struct bm_util_dtype *t = dt->dt;
    if (count == 0 || t->size == 0) {
        *lo_out = 0;
        *span_out = 0;
        return;
    }
    MPI_Aint last = (MPI_Aint)(count - 1) * dt->extent;
    MPI_Aint lo = t->true_lb + (last < 0 ? last : 0);
    MPI_Aint hi = t->true_ub + (last > 0 ? last : 0);
    *lo_out = lo;
    *span_out = (size_t)(hi - lo);
}

int bm_mpi_type_for_pieces(MPI_Datatype dt, const void *buf, size_t count, bm_mpi_type_piece_fn fn,
                           void *arg)
{
    struct bm_util_dtype_piece p[64];
    size_t total = count * dt->size, off = 0;
    while (off < total) {
        size_t done, n = bm_util_dtype_pieces(dt->dt, buf, count, off, total - off, p, 64, &done);
        for (size_t i = 0; i < n; i++) {
            int rc = fn(p[i].addr, p[i].len, arg);
            if (rc)
                return rc;
        }
        off += done;
    }
    return 0;
}

/* Freed handles are reused last freed first, as MPICH's handle pool and Open
 * MPI's free lists reuse theirs: the next type made after MPI_Type_free gets
 * the freed handle's value. Programs depend on it without knowing (MPICH's
 * datatype/indexed_misc builds a struct from a handle it freed just before
 * making its replacement; it passes under both). A freed handle not yet
 * reused is still refused (its magic is cleared). */
#define HANDLE_CACHE 32
static struct {
    pthread_mutex_t mu;
    int n;
    struct bm_mpi_datatype *h[HANDLE_CACHE];
} handle_cache = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void handle_put(struct bm_mpi_datatype *t)
{
    pthread_mutex_lock(&handle_cache.mu);
    if (handle_cache.n < HANDLE_CACHE) {
        handle_cache.h[handle_cache.n++] = t;
        t = NULL;
    }
    pthread_mutex_unlock(&handle_cache.mu);
    free(t);
}

/* A zeroed handle: the last one freed, else a new one. */
static struct bm_mpi_datatype *handle_get(void)
{
    struct bm_mpi_datatype *t = NULL;
    pthread_mutex_lock(&handle_cache.mu);
    if (handle_cache.n > 0)
        t = handle_cache.h[--handle_cache.n];
    pthread_mutex_unlock(&handle_cache.mu);
    if (!t)
        return calloc(1, sizeof(*t));
    memset(t, 0, sizeof(*t));
    return t;
}

void bm_mpi_type_retain(MPI_Datatype dt)
{
    if (!dt->predefined)
        bm_mpi_ref_get(&dt->refcount);
}

void bm_mpi_type_release(MPI_Datatype dt)
{
    if (dt->predefined || !bm_mpi_ref_put(&dt->refcount))
        return;
    bm_mpi_datatype_attr_drop_all(dt);
    for (int i = 0; i < dt->ntypes; i++)
        bm_mpi_type_release(dt->types[i]);
    free(dt->types);
    free(dt->ints);
    free(dt->addrs);
    bm_util_dtype_release(dt->dt);
    dt->magic = 0;
    handle_put(dt);
}

/* ---- making derived types ------------------------------------------------- */

/* True when dt is a datatype handle (committed or not). */
static bool type_valid(MPI_Datatype dt)
{
    return dt != MPI_DATATYPE_NULL && dt->magic == BM_MPI_MAGIC_DATATYPE;
}

static int bad_type(MPI_Datatype dt, const char *what, const char *fn)
{
    if (dt == MPI_DATATYPE_NULL)
        return bm_mpi_error(NULL, MPI_ERR_TYPE, fn, "%s is MPI_DATATYPE_NULL", what);
    return bm_mpi_error(NULL, MPI_ERR_TYPE, fn,
                        "%s (handle %p) is not a datatype (freed, or another kind of handle)", what,
                        (void *)dt);
}

/* What a constructor records for MPI_Type_get_contents. */
struct contents {
    int combiner;
    int nints, naddrs, ntypes;
    const int *ints;
    const MPI_Aint *addrs;
    const MPI_Datatype *types;
};

/* Wrap the engine's type e (its reference is taken over) in a new handle. */
static int type_make(struct bm_util_dtype *e, const struct contents *c, MPI_Datatype *newtype,
                     const char *fn)
{
    if (!e)
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory building the datatype");
    struct bm_mpi_datatype *t = handle_get();
    if (!t)
        goto nomem;
    t->magic = BM_MPI_MAGIC_DATATYPE;
    t->id = BM_MPI_TYPE_ID_COUNT;
    t->dt = e;
    t->size = e->size;
    t->lb = e->lb;
    t->extent = bm_util_dtype_extent(e);
    t->contiguous = bm_util_dtype_contig(e, 2) && e->pdisp == 0 && e->lb == 0;
    t->refcount = 1;
    t->name = t->name_buf;
    if (e->basic >= 0) {
        t->basic = predefined[e->basic];
        t->kind = t->basic->kind;
        t->is_signed = t->basic->is_signed;
        t->basic_count = (size_t)(e->nelems / (t->basic->kind == BM_MPI_KIND_PAIR ? 2 : 1));
    } else {
        t->kind = BM_MPI_KIND_DERIVED;
    }
    t->combiner = c->combiner;
    t->nints = c->nints;
    t->naddrs = c->naddrs;
    t->ntypes = c->ntypes;
    if ((c->nints && !(t->ints = malloc((size_t)c->nints * sizeof(int)))) ||
        (c->naddrs && !(t->addrs = malloc((size_t)c->naddrs * sizeof(MPI_Aint)))) ||
        (c->ntypes && !(t->types = malloc((size_t)c->ntypes * sizeof(MPI_Datatype))))) {
        t->ntypes = 0;
        bm_mpi_type_release(t);
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory building the datatype");
    }
    if (c->nints)
        memcpy(t->ints, c->ints, (size_t)c->nints * sizeof(int));
    if (c->naddrs)
        memcpy(t->addrs, c->addrs, (size_t)c->naddrs * sizeof(MPI_Aint));
    for (int i = 0; i < c->ntypes; i++) {
        t->types[i] = c->types[i];
        bm_mpi_type_retain(c->types[i]);
    }
    *newtype = t;
    return MPI_SUCCESS;
nomem:
    bm_util_dtype_release(e);
    return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory building the datatype");
}

/* Checks shared by the constructors (struct passes no old type). */
static int check_new_of(int count, bool has_old, MPI_Datatype oldtype, MPI_Datatype *newtype,
                        const char *fn)
{
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (count < 0)
        return bm_mpi_error(NULL, MPI_ERR_COUNT, fn, "negative count %d", count);
    /* The old type need not be committed to build on it. */
    if (has_old && !type_valid(oldtype))
        return bad_type(oldtype, "oldtype", fn);
    if (newtype == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL newtype pointer");
    return MPI_SUCCESS;
}

static int check_new(int count, MPI_Datatype oldtype, MPI_Datatype *newtype, const char *fn)
{
    return check_new_of(count, true, oldtype, newtype, fn);
}

/* Total packed size stays addressable: count * blocklen elements of old. */
static int check_size(double elems, MPI_Datatype old, const char *fn)
{
    double bytes = elems * (double)(old->size ? old->size : 1);
    double span = elems * (double)(old->extent < 0 ? -old->extent : old->extent);
    if (bytes > (double)(SIZE_MAX / 4) || span > (double)(PTRDIFF_MAX / 4))
        return bm_mpi_error(NULL, MPI_ERR_COUNT, fn,
                            "%.0f elements of %s do not fit in the address space", elems,
                            old->name[0] ? old->name : "the old type");
    return MPI_SUCCESS;
}

static int check_blocklens(int count, const int *blocklens, const char *fn)
{
    if (count > 0 && !blocklens)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL array of block lengths");
    for (int i = 0; i < count; i++)
        if (blocklens[i] < 0)
            return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "negative block length %d (block %d)",
                                blocklens[i], i);
    return MPI_SUCCESS;
}

int PMPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    static const char fn[] = "MPI_Type_contiguous";
    int rc;
    if ((rc = check_new(count, oldtype, newtype, fn)) ||
        (rc = check_size((double)count, oldtype, fn)))
        return rc;
    struct contents c = {MPI_COMBINER_CONTIGUOUS, 1, 0, 1, &count, NULL, &oldtype};
    return type_make(bm_util_dtype_hvector(1, (size_t)count, 0, oldtype->dt), &c, newtype, fn);
}
BM_MPI_ALIAS(Type_contiguous);

static int make_hvector(int count, int blocklength, MPI_Aint stride_bytes, MPI_Datatype oldtype,
                        MPI_Datatype *newtype, const struct contents *c, const char *fn)
{
    int rc;
    if ((rc = check_new(count, oldtype, newtype, fn)))
        return rc;
    if (blocklength < 0)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "negative block length %d", blocklength);
    if ((rc = check_size((double)count * blocklength, oldtype, fn)))
        return rc;
    return type_make(
        bm_util_dtype_hvector((size_t)count, (size_t)blocklength, stride_bytes, oldtype->dt), c,
        newtype, fn);
}

int PMPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype,
                     MPI_Datatype *newtype)
{
    static const char fn[] = "MPI_Type_vector";
    int ints[3] = {count, blocklength, stride};
    struct contents c = {MPI_COMBINER_VECTOR, 3, 0, 1, ints, NULL, &oldtype};
    int rc;
    if ((rc = check_new(count, oldtype, newtype, fn)))
        return rc; /* before oldtype's extent is read */
    return make_hvector(count, blocklength, (MPI_Aint)stride * oldtype->extent, oldtype, newtype,
                        &c, fn);
}
BM_MPI_ALIAS(Type_vector);

int PMPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                             MPI_Datatype *newtype)
{
    int ints[2] = {count, blocklength};
    struct contents c = {MPI_COMBINER_HVECTOR, 2, 1, 1, ints, &stride, &oldtype};
    return make_hvector(count, blocklength, stride, oldtype, newtype, &c,
                        "MPI_Type_create_hvector");
}
BM_MPI_ALIAS(Type_create_hvector);

int PMPI_Type_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                      MPI_Datatype *newtype)
{
    int ints[2] = {count, blocklength};
    struct contents c = {MPI_COMBINER_HVECTOR, 2, 1, 1, ints, &stride, &oldtype};
    return make_hvector(count, blocklength, stride, oldtype, newtype, &c, "MPI_Type_hvector");
}
BM_MPI_ALIAS(Type_hvector);

/* count blocks of one old type, block i of blocklens[i] (or blocklen when
 * blocklens is NULL) elements at disps[i] bytes. */
static int make_indexed(int count, const int *blocklens, int blocklen, const MPI_Aint *disps,
                        MPI_Datatype oldtype, MPI_Datatype *newtype, const struct contents *c,
                        const char *fn)
{
    int rc;
    if ((rc = check_new(count, oldtype, newtype, fn)) ||
        (blocklens && (rc = check_blocklens(count, blocklens, fn))))
        return rc;
    if (!blocklens && blocklen < 0)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "negative block length %d", blocklen);
    if (count > 0 && !disps)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL array of displacements");
    size_t n = (size_t)count;
    size_t *bl = malloc((n ? n : 1) * sizeof(*bl));
    const struct bm_util_dtype **olds = malloc((n ? n : 1) * sizeof(*olds));
    if (!bl || !olds) {
        free(bl);
        free(olds);
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    double elems = 0;
    for (size_t i = 0; i < n; i++) {
        bl[i] = (size_t)(blocklens ? blocklens[i] : blocklen);
        olds[i] = oldtype->dt;
        elems += (double)bl[i];
    }
    if ((rc = check_size(elems, oldtype, fn)) == MPI_SUCCESS)
        rc = type_make(bm_util_dtype_struct(n, bl, disps, olds, false), c, newtype, fn);
    free(bl);
    free(olds);
    return rc;
}

/* Displacements in elements of oldtype, as bytes. */
static MPI_Aint *disps_in_bytes(int count, const int *disps, MPI_Datatype oldtype)
{
    MPI_Aint *d = malloc((count > 0 ? (size_t)count : 1) * sizeof(*d));
    if (d && disps)
        for (int i = 0; i < count; i++)
            d[i] = (MPI_Aint)disps[i] * oldtype->extent;
    return d;
}

/* The ints array of get_contents for (h)indexed: count, blocklens[, disps]. */
static int *ints_of(int count, const int *a, const int *b)
{
    int *v = malloc((size_t)(1 + count + (b ? count : 0)) * sizeof(int));
    if (!v)
        return NULL;
    v[0] = count;
    if (count > 0 && a)
        memcpy(v + 1, a, (size_t)count * sizeof(int));
    if (count > 0 && b)
        memcpy(v + 1 + count, b, (size_t)count * sizeof(int));
    return v;
}

int PMPI_Type_indexed(int count, const int array_of_blocklengths[],
                      const int array_of_displacements[], MPI_Datatype oldtype,
                      MPI_Datatype *newtype)
{
    static const char fn[] = "MPI_Type_indexed";
    int rc;
    if ((rc = check_new(count, oldtype, newtype, fn)) ||
        (rc = check_blocklens(count, array_of_blocklengths, fn)))
        return rc;
    if (count > 0 && !array_of_displacements)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL array of displacements");
    MPI_Aint *d = disps_in_bytes(count, array_of_displacements, oldtype);
    int *ints = ints_of(count, array_of_blocklengths, array_of_displacements);
    if (!d || !ints) {
        free(d);
        free(ints);
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    struct contents c = {MPI_COMBINER_INDEXED, 2 * count + 1, 0, 1, ints, NULL, &oldtype};
    rc = make_indexed(count, array_of_blocklengths, 0, d, oldtype, newtype, &c, fn);
    free(d);
    free(ints);
    return rc;
}
BM_MPI_ALIAS(Type_indexed);

static int make_hindexed(int count, const int *blocklens, const MPI_Aint *disps,
                         MPI_Datatype oldtype, MPI_Datatype *newtype, const char *fn)
{
    int rc;
    if ((rc = check_new(count, oldtype, newtype, fn)) ||
        (rc = check_blocklens(count, blocklens, fn)))
        return rc;
    int *ints = ints_of(count, blocklens, NULL);
    if (!ints)
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    struct contents c = {MPI_COMBINER_HINDEXED, count + 1, count, 1, ints, disps, &oldtype};
    rc = make_indexed(count, blocklens, 0, disps, oldtype, newtype, &c, fn);
    free(ints);
    return rc;
}

int PMPI_Type_create_hindexed(int count, const int array_of_blocklengths[],
                              const MPI_Aint array_of_displacements[], MPI_Datatype oldtype,
                              MPI_Datatype *newtype)
{
    return make_hindexed(count, array_of_blocklengths, array_of_displacements, oldtype, newtype,
                         "MPI_Type_create_hindexed");
}
BM_MPI_ALIAS(Type_create_hindexed);

int PMPI_Type_hindexed(int count, const int array_of_blocklengths[],
                       const MPI_Aint array_of_displacements[], MPI_Datatype oldtype,
                       MPI_Datatype *newtype)
{
    return make_hindexed(count, array_of_blocklengths, array_of_displacements, oldtype, newtype,
                         "MPI_Type_hindexed");
}
BM_MPI_ALIAS(Type_hindexed);

int PMPI_Type_create_indexed_block(int count, int blocklength, const int array_of_displacements[],
                                   MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    static const char fn[] = "MPI_Type_create_indexed_block";
    int rc;
    if ((rc = check_new(count, oldtype, newtype, fn)))
        return rc;
    if (count > 0 && !array_of_displacements)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL array of displacements");
    MPI_Aint *d = disps_in_bytes(count, array_of_displacements, oldtype);
    int *ints = malloc((size_t)(count + 2) * sizeof(int));
    if (!d || !ints) {
        free(d);
        free(ints);
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    ints[0] = count;
    ints[1] = blocklength;
    if (count > 0)
        memcpy(ints + 2, array_of_displacements, (size_t)count * sizeof(int));
    struct contents c = {MPI_COMBINER_INDEXED_BLOCK, count + 2, 0, 1, ints, NULL, &oldtype};
    rc = make_indexed(count, NULL, blocklength, d, oldtype, newtype, &c, fn);
    free(d);
    free(ints);
    return rc;
}
BM_MPI_ALIAS(Type_create_indexed_block);

int PMPI_Type_create_hindexed_block(int count, int blocklength,
                                    const MPI_Aint array_of_displacements[], MPI_Datatype oldtype,
                                    MPI_Datatype *newtype)
{
    int ints[2] = {count, blocklength};
    struct contents c = {MPI_COMBINER_HINDEXED_BLOCK, 2,       count, 1, ints,
                         array_of_displacements,      &oldtype};
    return make_indexed(count, NULL, blocklength, array_of_displacements, oldtype, newtype, &c,
                        "MPI_Type_create_hindexed_block");
}
BM_MPI_ALIAS(Type_create_hindexed_block);

static int make_struct(int count, const int *blocklens, const MPI_Aint *disps,
                       const MPI_Datatype *types, MPI_Datatype *newtype, const char *fn)
{
    int rc;
    if ((rc = check_new_of(count, false, NULL, newtype, fn)) ||
        (rc = check_blocklens(count, blocklens, fn)))
        return rc;
    if (count > 0 && (!disps || !types))
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL array of %s",
                            disps ? "types" : "displacements");
    double span = 0;
    for (int i = 0; i < count; i++) {
        if (!type_valid(types[i])) {
            char what[48];
            snprintf(what, sizeof(what), "array_of_types[%d]", i);
            return bad_type(types[i], what, fn);
        }
        if ((rc = check_size((double)blocklens[i], types[i], fn)))
            return rc;
        span += (double)blocklens[i] * (double)types[i]->size;
    }
    if (span > (double)(SIZE_MAX / 4))
        return bm_mpi_error(NULL, MPI_ERR_COUNT, fn, "the struct holds too much data");
    size_t n = (size_t)count;
    size_t *bl = malloc((n ? n : 1) * sizeof(*bl));
    const struct bm_util_dtype **olds = malloc((n ? n : 1) * sizeof(*olds));
    int *ints = ints_of(count, blocklens, NULL);
    if (!bl || !olds || !ints) {
        free(bl);
        free(olds);
        free(ints);
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        bl[i] = (size_t)blocklens[i];
        olds[i] = types[i]->dt;
    }
    struct contents c = {MPI_COMBINER_STRUCT, count + 1, count, count, ints, disps, types};
    rc = type_make(bm_util_dtype_struct(n, bl, disps, olds, true), &c, newtype, fn);
    free(bl);
    free(olds);
    free(ints);
    return rc;
}

int PMPI_Type_create_struct(int count, const int array_of_blocklengths[],
                            const MPI_Aint array_of_displacements[],
                            const MPI_Datatype array_of_types[], MPI_Datatype *newtype)
{
    return make_struct(count, array_of_blocklengths, array_of_displacements, array_of_types,
                       newtype, "MPI_Type_create_struct");
}
BM_MPI_ALIAS(Type_create_struct);

int PMPI_Type_struct(int count, const int array_of_blocklengths[],
                     const MPI_Aint array_of_displacements[], const MPI_Datatype array_of_types[],
                     MPI_Datatype *newtype)
{
    return make_struct(count, array_of_blocklengths, array_of_displacements, array_of_types,
                       newtype, "MPI_Type_struct");
}
BM_MPI_ALIAS(Type_struct);

int PMPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent,
                             MPI_Datatype *newtype)
{
    static const char fn[] = "MPI_Type_create_resized";
    int rc;
    if ((rc = check_new(0, oldtype, newtype, fn)))
        return rc;
    MPI_Aint addrs[2] = {lb, extent};
    struct contents c = {MPI_COMBINER_RESIZED, 0, 2, 1, NULL, addrs, &oldtype};
    return type_make(bm_util_dtype_resized(oldtype->dt, lb, extent), &c, newtype, fn);
}
BM_MPI_ALIAS(Type_create_resized);

/* ---- subarray and darray ----------------------------------------------------
 * Both are built one dimension at a time, fastest-varying first. The type of
 * the dimensions done so far, t, always has lower bound 0 and the extent of
 * one whole row of them (row bytes), so that the next dimension can place
 * copies of it at multiples of row; each step selects elements [start,
 * start + len) (or a cyclic pattern) of a dimension of gsize and resizes
 * the result to gsize rows. */

/* n copies of t at step row, the first at first * row, resized to gsize rows. */
static struct bm_util_dtype *dim_select(struct bm_util_dtype *t, MPI_Aint row, size_t gsize,
                                        size_t nblocks, size_t blk, size_t every, size_t first,
                                        size_t tail)
{
    struct bm_util_dtype *v = bm_util_dtype_hvector(nblocks, blk, (MPI_Aint)every * row, t),
                         *s = NULL, *r = NULL;
    if (!v)
        return NULL;
    size_t bl[2] = {1, tail};
    MPI_Aint d[2] = {(MPI_Aint)first * row, (MPI_Aint)(first + nblocks * every) * row};
    const struct bm_util_dtype *olds[2] = {v, t};
    s = bm_util_dtype_struct(tail ? 2 : 1, bl, d, olds, false);
    if (s)
        r = bm_util_dtype_resized(s, 0, (MPI_Aint)gsize * row);
    bm_util_dtype_release(v);
    bm_util_dtype_release(s);
    return r;
}

int PMPI_Type_create_subarray(int ndims, const int array_of_sizes[], const int array_of_subsizes[],
                              const int array_of_starts[], int order, MPI_Datatype oldtype,
                              MPI_Datatype *newtype)
{
    static const char fn[] = "MPI_Type_create_subarray";
    int rc;
    if ((rc = check_new(0, oldtype, newtype, fn)))
        return rc;
    if (ndims <= 0)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "ndims %d is not positive", ndims);
    if (!array_of_sizes || !array_of_subsizes || !array_of_starts)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL array argument");
    if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn,
                            "order %d is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN", order);
    double total = 1;
    for (int i = 0; i < ndims; i++) {
        if (array_of_sizes[i] <= 0 || array_of_subsizes[i] <= 0 || array_of_starts[i] < 0 ||
            array_of_subsizes[i] > array_of_sizes[i] ||
            array_of_starts[i] > array_of_sizes[i] - array_of_subsizes[i])
            return bm_mpi_error(NULL, MPI_ERR_ARG, fn,
                                "dimension %d: size %d, subsize %d, start %d (need 0 < subsize "
                                "<= size and 0 <= start <= size - subsize)",
                                i, array_of_sizes[i], array_of_subsizes[i], array_of_starts[i]);
        total *= array_of_sizes[i];
    }
    if ((rc = check_size(total, oldtype, fn)))
        return rc;
    struct bm_util_dtype *t = oldtype->dt;
    bm_util_dtype_retain(t);
    MPI_Aint row = oldtype->extent;
    for (int k = 0; k < ndims && t; k++) {
        int i = order == MPI_ORDER_C ? ndims - 1 - k : k;
        struct bm_util_dtype *n =
            dim_select(t, row, (size_t)array_of_sizes[i], 1, (size_t)array_of_subsizes[i], 1,
                       (size_t)array_of_starts[i], 0);
        bm_util_dtype_release(t);
        t = n;
        row *= array_of_sizes[i];
    }
    int *ints = malloc((size_t)(3 * ndims + 2) * sizeof(int));
    if (!ints) {
        bm_util_dtype_release(t);
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    ints[0] = ndims;
    memcpy(ints + 1, array_of_sizes, (size_t)ndims * sizeof(int));
    memcpy(ints + 1 + ndims, array_of_subsizes, (size_t)ndims * sizeof(int));
    memcpy(ints + 1 + 2 * ndims, array_of_starts, (size_t)ndims * sizeof(int));
    ints[3 * ndims + 1] = order;
    struct contents c = {MPI_COMBINER_SUBARRAY, 3 * ndims + 2, 0, 1, ints, NULL, &oldtype};
    rc = type_make(t, &c, newtype, fn);
    free(ints);
    return rc;
}
BM_MPI_ALIAS(Type_create_subarray);

/* The elements of a dimension of gsize that the process at coord of nprocs
 * holds, as dim_select arguments. BLOCK: one block of darg (default: the
 * size split evenly, rounded up); CYCLIC: blocks of darg (default 1) dealt
 * round robin; NONE: everything. False when darg cannot cover the
 * dimension. */
static struct bm_util_dtype *darray_dim(struct bm_util_dtype *t, MPI_Aint row, int gsize,
                                        int distrib, int darg, int nprocs, int coord)
{
    if (distrib == MPI_DISTRIBUTE_NONE) {
        nprocs = 1;
        coord = 0;
        distrib = MPI_DISTRIBUTE_BLOCK;
        darg = MPI_DISTRIBUTE_DFLT_DARG;
    }
    if (distrib == MPI_DISTRIBUTE_BLOCK) {
        long blk = darg == MPI_DISTRIBUTE_DFLT_DARG ? ((long)gsize + nprocs - 1) / nprocs : darg;
        long start = blk * coord, len = gsize - start < blk ? gsize - start : blk;
        if (len <= 0)
            len = start = 0;
        return dim_select(t, row, (size_t)gsize, 1, (size_t)len, 1, (size_t)start, 0);
    }
    long blk = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
    long first = blk * coord, cycle = blk * nprocs, local = 0;
    if (first < gsize) {
        long n = gsize - first;
        local = n / cycle * blk + (n % cycle < blk ? n % cycle : blk);
    }
    size_t nblocks = (size_t)(local / blk), tail = (size_t)(local % blk);
    return dim_select(t, row, (size_t)gsize, nblocks, (size_t)blk, (size_t)cycle,
                      local ? (size_t)first : 0, tail);
}

int PMPI_Type_create_darray(int size, int rank, int ndims, const int array_of_gsizes[],
                            const int array_of_distribs[], const int array_of_dargs[],
                            const int array_of_psizes[], int order, MPI_Datatype oldtype,
                            MPI_Datatype *newtype)
{
    static const char fn[] = "MPI_Type_create_darray";
    int rc;
    if ((rc = check_new(0, oldtype, newtype, fn)))
        return rc;
    if (size <= 0 || rank < 0 || rank >= size)
        return bm_mpi_error(NULL, rank < 0 || rank >= size ? MPI_ERR_RANK : MPI_ERR_ARG, fn,
                            "rank %d of a group of %d processes", rank, size);
    if (ndims <= 0)
        return bm_mpi_error(NULL, MPI_ERR_DIMS, fn, "ndims %d is not positive", ndims);
    if (!array_of_gsizes || !array_of_distribs || !array_of_dargs || !array_of_psizes)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL array argument");
    if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn,
                            "order %d is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN", order);
    long procs = 1;
    double total = 1;
    for (int i = 0; i < ndims; i++) {
        int g = array_of_gsizes[i], p = array_of_psizes[i], d = array_of_distribs[i],
            a = array_of_dargs[i];
        if (g <= 0 || p <= 0)
            return bm_mpi_error(NULL, MPI_ERR_ARG, fn,
                                "dimension %d: gsize %d and psize %d must be positive", i, g, p);
        if (d != MPI_DISTRIBUTE_BLOCK && d != MPI_DISTRIBUTE_CYCLIC && d != MPI_DISTRIBUTE_NONE)
            return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "dimension %d: unknown distribution %d", i,
                                d);
        if (a != MPI_DISTRIBUTE_DFLT_DARG && a <= 0)
            return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "dimension %d: distribution argument %d", i,
                                a);
        if (d == MPI_DISTRIBUTE_NONE && p != 1)
            return bm_mpi_error(NULL, MPI_ERR_ARG, fn,
                                "dimension %d is not distributed but has %d processes", i, p);
        if (d == MPI_DISTRIBUTE_BLOCK && a != MPI_DISTRIBUTE_DFLT_DARG && (long)a * p < g)
            return bm_mpi_error(NULL, MPI_ERR_ARG, fn,
                                "dimension %d: %d blocks of %d cannot hold %d elements", i, p, a,
                                g);
        procs *= p;
        total *= g;
    }
    if (procs != size)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn,
                            "the process grid has %ld processes, the group %d", procs, size);
    if ((rc = check_size(total, oldtype, fn)))
        return rc;
    /* Coordinates in the grid, row-major as for Cartesian topologies. */
    int *coords = malloc((size_t)ndims * sizeof(int));
    int *ints = malloc((size_t)(4 * ndims + 4) * sizeof(int));
    if (!coords || !ints) {
        free(coords);
        free(ints);
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    for (int i = 0, r = rank, left = size; i < ndims; i++) {
        left /= array_of_psizes[i];
        coords[i] = r / left;
        r %= left;
    }
    struct bm_util_dtype *t = oldtype->dt;
    bm_util_dtype_retain(t);
    MPI_Aint row = oldtype->extent;
    for (int k = 0; k < ndims && t; k++) {
        int i = order == MPI_ORDER_C ? ndims - 1 - k : k;
        struct bm_util_dtype *n = darray_dim(t, row, array_of_gsizes[i], array_of_distribs[i],
                                             array_of_dargs[i], array_of_psizes[i], coords[i]);
        bm_util_dtype_release(t);
        t = n;
        row *= array_of_gsizes[i];
    }
    ints[0] = size;
    ints[1] = rank;
    ints[2] = ndims;
    memcpy(ints + 3, array_of_gsizes, (size_t)ndims * sizeof(int));
    memcpy(ints + 3 + ndims, array_of_distribs, (size_t)ndims * sizeof(int));
    memcpy(ints + 3 + 2 * ndims, array_of_dargs, (size_t)ndims * sizeof(int));
    memcpy(ints + 3 + 3 * ndims, array_of_psizes, (size_t)ndims * sizeof(int));
    ints[4 * ndims + 3] = order;
    struct contents c = {MPI_COMBINER_DARRAY, 4 * ndims + 4, 0, 1, ints, NULL, &oldtype};
    rc = type_make(t, &c, newtype, fn);
    free(coords);
    free(ints);
    return rc;
}
BM_MPI_ALIAS(Type_create_darray);

int PMPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    static const char fn[] = "MPI_Type_dup";
    int rc;
    if ((rc = check_new(0, oldtype, newtype, fn)))
        return rc;
    bm_util_dtype_retain(oldtype->dt);
    struct contents c = {MPI_COMBINER_DUP, 0, 0, 1, NULL, NULL, &oldtype};
    MPI_Datatype t;
    if ((rc = type_make(oldtype->dt, &c, &t, fn)))
        return rc;
    t->committed = oldtype->committed;
    snprintf(t->name_buf, sizeof(t->name_buf), "%s", oldtype->name);
    if ((rc = bm_mpi_datatype_attr_copy_all(oldtype, t, fn))) {
        /* A copy callback failed: no new type, and the handle says so (as
         * MPI_Comm_dup's does; Open MPI and MPICH do the same). */
        bm_mpi_type_release(t);
        *newtype = MPI_DATATYPE_NULL;
        return rc;
    }
    *newtype = t;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_dup);

/* ---- commit and free ------------------------------------------------------ */

static int check_handle(MPI_Datatype *datatype, const char *fn)
{
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (datatype == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL datatype pointer");
    if (!type_valid(*datatype))
        return bad_type(*datatype, "the datatype", fn);
    return MPI_SUCCESS;
}

int PMPI_Type_commit(MPI_Datatype *datatype)
{
    int rc = check_handle(datatype, "MPI_Type_commit");
    if (rc)
        return rc;
    /* The engine normalised the description while the type was built:
     * committing only makes it usable in communication. */
    (*datatype)->committed = true;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_commit);

int PMPI_Type_free(MPI_Datatype *datatype)
{
    static const char fn[] = "MPI_Type_free";
    int rc = check_handle(datatype, fn);
    if (rc)
        return rc;
    if ((*datatype)->predefined)
        return bm_mpi_error(NULL, MPI_ERR_TYPE, fn, "cannot free the predefined datatype %s",
                            (*datatype)->name);
    /* Attributes go with the handle; the object lives on while requests or
     * other types (through get_contents) still hold it. */
    if ((rc = bm_mpi_datatype_attr_delete_all(*datatype, fn)))
        return rc;
    bm_mpi_type_release(*datatype);
    *datatype = MPI_DATATYPE_NULL;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_free);

/* ---- queries ---------------------------------------------------------------- */

static int check_query(MPI_Datatype dt, const void *out, const char *fn)
{
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    /* Queries work on types not committed yet. */
    if (!type_valid(dt))
        return bad_type(dt, "the datatype", fn);
    if (out == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL output argument");
    return MPI_SUCCESS;
}

int PMPI_Type_size(MPI_Datatype datatype, int *size)
{
    int rc = check_query(datatype, size, "MPI_Type_size");
    if (rc)
        return rc;
    *size = datatype->size > INT_MAX ? MPI_UNDEFINED : (int)datatype->size;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_size);

int PMPI_Type_size_x(MPI_Datatype datatype, MPI_Count *size)
{
    int rc = check_query(datatype, size, "MPI_Type_size_x");
    if (rc)
        return rc;
    *size = (MPI_Count)datatype->size;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_size_x);

int PMPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent)
{
    int rc = check_query(datatype, lb && extent ? lb : NULL, "MPI_Type_get_extent");
    if (rc)
        return rc;
    *lb = datatype->lb;
    *extent = datatype->extent;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_get_extent);

int PMPI_Type_get_extent_x(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent)
{
    int rc = check_query(datatype, lb && extent ? lb : NULL, "MPI_Type_get_extent_x");
    if (rc)
        return rc;
    *lb = datatype->lb;
    *extent = datatype->extent;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_get_extent_x);

int PMPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb, MPI_Aint *true_extent)
{
    int rc =
        check_query(datatype, true_lb && true_extent ? true_lb : NULL, "MPI_Type_get_true_extent");
    if (rc)
        return rc;
    *true_lb = datatype->dt->true_lb;
    *true_extent = datatype->dt->true_ub - datatype->dt->true_lb;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_get_true_extent);

int PMPI_Type_get_true_extent_x(MPI_Datatype datatype, MPI_Count *true_lb, MPI_Count *true_extent)
{
    int rc = check_query(datatype, true_lb && true_extent ? true_lb : NULL,
                         "MPI_Type_get_true_extent_x");
    if (rc)
        return rc;
    *true_lb = datatype->dt->true_lb;
    *true_extent = datatype->dt->true_ub - datatype->dt->true_lb;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_get_true_extent_x);

int PMPI_Type_extent(MPI_Datatype datatype, MPI_Aint *extent)
{
    int rc = check_query(datatype, extent, "MPI_Type_extent");
    if (rc)
        return rc;
    *extent = datatype->extent;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_extent);

int PMPI_Type_lb(MPI_Datatype datatype, MPI_Aint *displacement)
{
    int rc = check_query(datatype, displacement, "MPI_Type_lb");
    if (rc)
        return rc;
    *displacement = datatype->lb;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_lb);

int PMPI_Type_ub(MPI_Datatype datatype, MPI_Aint *displacement)
{
    int rc = check_query(datatype, displacement, "MPI_Type_ub");
    if (rc)
        return rc;
    *displacement = datatype->lb + datatype->extent;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_ub);

int PMPI_Type_get_envelope(MPI_Datatype datatype, int *num_integers, int *num_addresses,
                           int *num_datatypes, int *combiner)
{
    int rc = check_query(
        datatype, num_integers && num_addresses && num_datatypes && combiner ? combiner : NULL,
        "MPI_Type_get_envelope");
    if (rc)
        return rc;
    *num_integers = datatype->nints;
    *num_addresses = datatype->naddrs;
    *num_datatypes = datatype->ntypes;
    *combiner = datatype->combiner;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_get_envelope);

int PMPI_Type_get_contents(MPI_Datatype datatype, int max_integers, int max_addresses,
                           int max_datatypes, int array_of_integers[],
                           MPI_Aint array_of_addresses[], MPI_Datatype array_of_datatypes[])
{
    static const char fn[] = "MPI_Type_get_contents";
    int rc = check_query(datatype, datatype, fn);
    if (rc)
        return rc;
    if (datatype->combiner == MPI_COMBINER_NAMED)
        return bm_mpi_error(NULL, MPI_ERR_TYPE, fn,
                            "%s is a predefined (named) datatype: it has no contents; check "
                            "MPI_Type_get_envelope's combiner first",
                            datatype->name);
    if (max_integers < datatype->nints || max_addresses < datatype->naddrs ||
        max_datatypes < datatype->ntypes)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn,
                            "the arrays are too small: the type has %d integers, %d addresses "
                            "and %d datatypes (MPI_Type_get_envelope tells), room was given for "
                            "%d, %d and %d",
                            datatype->nints, datatype->naddrs, datatype->ntypes, max_integers,
                            max_addresses, max_datatypes);
    if ((datatype->nints && !array_of_integers) || (datatype->naddrs && !array_of_addresses) ||
        (datatype->ntypes && !array_of_datatypes))
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL output array");
    if (datatype->nints)
        memcpy(array_of_integers, datatype->ints, (size_t)datatype->nints * sizeof(int));
    if (datatype->naddrs)
        memcpy(array_of_addresses, datatype->addrs, (size_t)datatype->naddrs * sizeof(MPI_Aint));
    for (int i = 0; i < datatype->ntypes; i++) {
        /* The caller frees derived types it gets back (MPI_Type_free). */
        bm_mpi_type_retain(datatype->types[i]);
        array_of_datatypes[i] = datatype->types[i];
    }
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_get_contents);

int PMPI_Type_set_name(MPI_Datatype datatype, const char *type_name)
{
    static const char fn[] = "MPI_Type_set_name";
    int rc = check_handle(&datatype, fn);
    if (rc)
        return rc;
    if (type_name == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL name");
    /* Predefined types may be renamed too, as in Open MPI and MPICH (MPICH's
     * datatype/typename renames MPI_INT): the name moves into the type's
     * own buffer. */
    snprintf(datatype->name_buf, sizeof(datatype->name_buf), "%s", type_name);
    datatype->name = datatype->name_buf;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_set_name);

int PMPI_Type_get_name(MPI_Datatype datatype, char *type_name, int *resultlen)
{
    int rc = check_query(datatype, type_name && resultlen ? type_name : NULL, "MPI_Type_get_name");
    if (rc)
        return rc;
    *resultlen = snprintf(type_name, MPI_MAX_OBJECT_NAME, "%s", datatype->name);
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Type_get_name);

static int get_elements(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count,
                        const char *fn)
{
    int rc = check_query(datatype, status && count ? count : NULL, fn);
    if (rc)
        return rc;
    /* A partial element still holds whole basic elements: counted by the
     * typed description, as MPI_Get_elements on a partial receive wants. */
    int64_t n = bm_util_dtype_count_elems(datatype->dt, status->bm_count);
    *count = n < 0 ? MPI_UNDEFINED : (MPI_Count)n;
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

int PMPI_Type_match_size(int typeclass, int size, MPI_Datatype *datatype)
{
    static const char fn[] = "MPI_Type_match_size";
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (!datatype)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL datatype pointer");
    /* Among the Fortran types of the class, as the standard says (their C
     * twins have the same layout); a size no Fortran type has (16-byte reals,
     * 32-byte complexes: there is no MPI_REAL16) falls back on the C type of
     * that size, as MPICH does (its datatype/tmatchsize asks for
     * sizeof(long double)). */
    static const MPI_Datatype reals[] = {MPI_REAL4, MPI_REAL8, MPI_LONG_DOUBLE};
    static const MPI_Datatype ints[] = {MPI_INTEGER1, MPI_INTEGER2, MPI_INTEGER4, MPI_INTEGER8,
#ifdef MPI_INTEGER16
                                        MPI_INTEGER16
#endif
    };
    static const MPI_Datatype complexes[] = {MPI_COMPLEX8, MPI_COMPLEX16,
                                             MPI_C_LONG_DOUBLE_COMPLEX};
    const MPI_Datatype *list;
    size_t n;
    switch (typeclass) {
    case MPI_TYPECLASS_REAL:
        list = reals;
        n = sizeof(reals) / sizeof(reals[0]);
        break;
    case MPI_TYPECLASS_INTEGER:
        list = ints;
        n = sizeof(ints) / sizeof(ints[0]);
        break;
    case MPI_TYPECLASS_COMPLEX:
        list = complexes;
        n = sizeof(complexes) / sizeof(complexes[0]);
        break;
    default:
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn,
                            "unknown type class %d (MPI_TYPECLASS_REAL, _INTEGER or _COMPLEX)",
                            typeclass);
    }
    for (size_t i = 0; i < n; i++)
        if ((int)list[i]->size == size) {
            *datatype = list[i];
            return MPI_SUCCESS;
        }
    return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "no type of class %d has %d bytes", typeclass, size);
}
BM_MPI_ALIAS(Type_match_size);

/* MPI_Type_create_f90_integer/real/complex (MPI-3.1 17.1.9): the type of a
 * Fortran variable of KIND selected_int_kind(r) / selected_real_kind(p, r),
 * for the kinds gfortran has that bitmover carries (INTEGER*1..8, REAL*4
 * and *8, COMPLEX*8 and *16; no REAL*16). The result behaves as a
 * predefined type (committed, cannot be freed) laid out as the matching
 * MPI_INTEGERn / MPI_REALn / MPI_COMPLEXn, with combiner
 * MPI_COMBINER_F90_* and its (p, r) or (r) as contents; the same
 * arguments give the same handle (made once, kept for the process, as
 * MPICH and Open MPI do). MPI_UNDEFINED for p or r means "any". */
struct f90_type {
    struct f90_type *next;
    int combiner, p, r;
    MPI_Datatype type;
};
static struct f90_type *f90_types;

static int f90_type(int combiner, int p, int r, MPI_Datatype base, MPI_Datatype *newtype,
                    const char *fn)
{
    int rc = MPI_SUCCESS;
    bm_mpi_obj_lock();
    struct f90_type *f = f90_types;
    while (f && !(f->combiner == combiner && f->p == p && f->r == r))
        f = f->next;
    if (!f) {
        int ints[2] = {p, r};
        bool integer = combiner == MPI_COMBINER_F90_INTEGER;
        struct contents c = {
            .combiner = combiner, .nints = integer ? 1 : 2, .ints = integer ? &ints[1] : ints};
        MPI_Datatype t = MPI_DATATYPE_NULL;
        f = malloc(sizeof(*f));
        if (!f) {
            rc = bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
            goto out;
        }
        bm_util_dtype_retain(base->dt);
        if ((rc = type_make(base->dt, &c, &t, fn))) {
            free(f);
            goto out;
        }
        /* Predefined as base is: never freed (MPI_Type_free refuses it), and
         * the same to the kernels (reductions, atomics) that go by id. */
        t->predefined = true;
        t->id = base->id;
        t->committed = true;
        snprintf(t->name_buf, sizeof(t->name_buf), "%s", base->name);
        *f = (struct f90_type){.next = f90_types, .combiner = combiner, .p = p, .r = r, .type = t};
        f90_types = f;
    }
    *newtype = f->type;
out:
    bm_mpi_obj_unlock();
    return rc;
}

/* p and r as selected_*_kind takes them: MPI_UNDEFINED (absent) is 0. */
static int f90_arg(int v)
{
    return v == MPI_UNDEFINED ? 0 : v;
}

static int f90_check(int p, int r, bool real, MPI_Datatype *newtype, const char *fn)
{
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (!newtype)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL newtype pointer");
    if (real && p == MPI_UNDEFINED && r == MPI_UNDEFINED)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn,
                            "p and r are both MPI_UNDEFINED (give at least one)");
    if (f90_arg(p) < 0 || f90_arg(r) < 0)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "negative precision %d or range %d", p, r);
    return MPI_SUCCESS;
}

int PMPI_Type_create_f90_integer(int r, MPI_Datatype *newtype)
{
    static const char fn[] = "MPI_Type_create_f90_integer";
    int rc = f90_check(0, r, false, newtype, fn);
    if (rc)
        return rc;
    /* Decimal digits each integer kind holds entirely (Fortran's RANGE). */
    static const struct {
        int range;
        MPI_Datatype type;
    } kinds[] = {{2, MPI_INTEGER1},
                 {4, MPI_INTEGER2},
                 {9, MPI_INTEGER4},
                 {18, MPI_INTEGER8},
#ifdef MPI_INTEGER16
                 {38, MPI_INTEGER16}
#endif
    };
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (f90_arg(r) <= kinds[i].range)
            return f90_type(MPI_COMBINER_F90_INTEGER, 0, r, kinds[i].type, newtype, fn);
    return bm_mpi_error(NULL, MPI_ERR_ARG, fn,
                        "no integer kind has a decimal range of %d digits (at most %d)", r,
                        kinds[sizeof(kinds) / sizeof(kinds[0]) - 1].range);
}
BM_MPI_ALIAS(Type_create_f90_integer);

/* The real kinds: decimal precision and exponent range (Fortran's
 * PRECISION and RANGE of REAL*4 and REAL*8). */
static MPI_Datatype f90_real_kind(int p, int r, bool complex)
{
    if (f90_arg(p) <= 6 && f90_arg(r) <= 37)
        return complex ? MPI_COMPLEX8 : MPI_REAL4;
    if (f90_arg(p) <= 15 && f90_arg(r) <= 307)
        return complex ? MPI_COMPLEX16 : MPI_REAL8;
    return MPI_DATATYPE_NULL;
}

static int f90_real(int p, int r, bool complex, MPI_Datatype *newtype, const char *fn)
{
    int rc = f90_check(p, r, true, newtype, fn);
    if (rc)
        return rc;
    MPI_Datatype base = f90_real_kind(p, r, complex);
    if (base == MPI_DATATYPE_NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn,
                            "no real kind has precision %d and range %d (REAL*8, the widest "
                            "bitmover carries, has 15 and 307)",
                            p, r);
    return f90_type(complex ? MPI_COMBINER_F90_COMPLEX : MPI_COMBINER_F90_REAL, p, r, base, newtype,
                    fn);
}

int PMPI_Type_create_f90_real(int p, int r, MPI_Datatype *newtype)
{
    return f90_real(p, r, false, newtype, "MPI_Type_create_f90_real");
}
BM_MPI_ALIAS(Type_create_f90_real);

int PMPI_Type_create_f90_complex(int p, int r, MPI_Datatype *newtype)
{
    return f90_real(p, r, true, newtype, "MPI_Type_create_f90_complex");
}
BM_MPI_ALIAS(Type_create_f90_complex);

int PMPI_Get_address(const void *location, MPI_Aint *address)
{
    if (address == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, "MPI_Get_address", "NULL address pointer");
    *address = (MPI_Aint)(uintptr_t)location;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Get_address);

int PMPI_Address(void *location, MPI_Aint *address)
{
    if (address == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, "MPI_Address", "NULL address pointer");
    *address = (MPI_Aint)(uintptr_t)location;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Address);

/* Address arithmetic in unsigned terms: it wraps rather than overflows. */
MPI_Aint PMPI_Aint_add(MPI_Aint base, MPI_Aint disp)
{
    return (MPI_Aint)((uintptr_t)base + (uintptr_t)disp);
}
BM_MPI_ALIAS(Aint_add);

MPI_Aint PMPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2)
{
    return (MPI_Aint)((uintptr_t)addr1 - (uintptr_t)addr2);
}
BM_MPI_ALIAS(Aint_diff);
