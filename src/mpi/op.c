/* Reduction operations: the predefined operations (MPI_SUM, MPI_MAXLOC...)
 * applied to the predefined datatypes they are defined on, and user
 * operations from MPI_Op_create. Every kernel computes inout[i] = in[i] op
 * inout[i], where in holds the contribution of the lower ranks, so that
 * collectives can keep rank order for non-commutative user operations and a
 * fixed evaluation order for floating point. Signed integer arithmetic wraps
 * (computed in the unsigned type) instead of being undefined behaviour.
 *
 * Which (op, type) pairs are allowed: the standard's table (MPI-3.1 5.9.2),
 * with MPI_CHAR counted as a C integer (as Open MPI does; MPICH takes it for
 * arithmetic only) and nothing on MPI_WCHAR, MPI_CHARACTER or MPI_PACKED.
 * A derived type made of one basic type takes the ops of that type (the
 * kernels run on its elements where they lie, walking the type's typed
 * description); one that mixes basic types takes user ops only. */
#include "mpi/mpi_internal.h"
#include "util/dtype.h"

#include <complex.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#define BM_OP_DEF(obj, mpiname, commute)                                                           \
    struct bm_mpi_op bm_mpi_op_##obj##_obj = {.magic = BM_MPI_MAGIC_OP,                            \
                                              .id = BM_MPI_OP_ID_##obj,                            \
                                              .commutative = (commute),                            \
                                              .predefined = true,                                  \
                                              .name = #mpiname}
BM_OP_DEF(max, MPI_MAX, true);
BM_OP_DEF(min, MPI_MIN, true);
BM_OP_DEF(sum, MPI_SUM, true);
BM_OP_DEF(prod, MPI_PROD, true);
BM_OP_DEF(land, MPI_LAND, true);
BM_OP_DEF(band, MPI_BAND, true);
BM_OP_DEF(lor, MPI_LOR, true);
BM_OP_DEF(bor, MPI_BOR, true);
BM_OP_DEF(lxor, MPI_LXOR, true);
BM_OP_DEF(bxor, MPI_BXOR, true);
BM_OP_DEF(maxloc, MPI_MAXLOC, true);
BM_OP_DEF(minloc, MPI_MINLOC, true);
BM_OP_DEF(replace, MPI_REPLACE, false);
BM_OP_DEF(no_op, MPI_NO_OP, false);

bool bm_mpi_op_supports(MPI_Op op, MPI_Datatype dt)
{
    if (op->id == BM_MPI_OP_ID_USER || op->id == BM_MPI_OP_ID_replace ||
        op->id == BM_MPI_OP_ID_no_op)
        return true;
    if (!dt->basic)
        return false; /* several basic types (or none): user operations only */
    enum bm_mpi_type_kind k = dt->basic->kind;
    bool integer = k == BM_MPI_KIND_INT || k == BM_MPI_KIND_CHAR;

    switch (op->id) {
    case BM_MPI_OP_ID_max:
    case BM_MPI_OP_ID_min:
        return integer || k == BM_MPI_KIND_FLOAT;
    case BM_MPI_OP_ID_sum:
    case BM_MPI_OP_ID_prod:
        return integer || k == BM_MPI_KIND_FLOAT || k == BM_MPI_KIND_COMPLEX;
    case BM_MPI_OP_ID_land:
    case BM_MPI_OP_ID_lor:
    case BM_MPI_OP_ID_lxor:
        return integer || k == BM_MPI_KIND_BOOL || k == BM_MPI_KIND_LOGICAL;
    case BM_MPI_OP_ID_band:
    case BM_MPI_OP_ID_bor:
    case BM_MPI_OP_ID_bxor:
        return integer || k == BM_MPI_KIND_BYTE;
    case BM_MPI_OP_ID_maxloc:
    case BM_MPI_OP_ID_minloc:
        return k == BM_MPI_KIND_PAIR;
    case BM_MPI_OP_ID_replace:
    case BM_MPI_OP_ID_no_op:
    case BM_MPI_OP_ID_USER:
        return true;
    }
    return false;
}

#define BM_LOOP(ctype, expr)                                                                       \
    do {                                                                                           \
        const ctype *a = in;                                                                       \
        ctype *b = inout;                                                                          \
        for (size_t i = 0; i < n; i++)                                                             \
            b[i] = (expr);                                                                         \
    } while (0)

/* Integer kernels. wtype is an unsigned type at least as wide as int and as
 * ctype: arithmetic in it wraps and never promotes to a signed int. */
#define BM_KERNEL_INT(name, ctype, wtype)                                                          \
    static void kernel_##name(enum bm_mpi_op_id op, const void *in, void *inout, size_t n)         \
    {                                                                                              \
        switch (op) {                                                                              \
        case BM_MPI_OP_ID_max:                                                                     \
            BM_LOOP(ctype, a[i] > b[i] ? a[i] : b[i]);                                             \
            break;                                                                                 \
        case BM_MPI_OP_ID_min:                                                                     \
            BM_LOOP(ctype, a[i] < b[i] ? a[i] : b[i]);                                             \
            break;                                                                                 \
        case BM_MPI_OP_ID_sum:                                                                     \
            BM_LOOP(ctype, (ctype)((wtype)a[i] + (wtype)b[i]));                                    \
            break;                                                                                 \
        case BM_MPI_OP_ID_prod:                                                                    \
            BM_LOOP(ctype, (ctype)((wtype)a[i] * (wtype)b[i]));                                    \
            break;                                                                                 \
        case BM_MPI_OP_ID_land:                                                                    \
            BM_LOOP(ctype, (ctype)(a[i] && b[i]));                                                 \
            break;                                                                                 \
        case BM_MPI_OP_ID_lor:                                                                     \
            BM_LOOP(ctype, (ctype)(a[i] || b[i]));                                                 \
            break;                                                                                 \
        case BM_MPI_OP_ID_lxor:                                                                    \
            BM_LOOP(ctype, (ctype)(!a[i] != !b[i]));                                               \
            break;                                                                                 \
        case BM_MPI_OP_ID_band:                                                                    \
            BM_LOOP(ctype, (ctype)((wtype)a[i] & (wtype)b[i]));                                    \
            break;                                                                                 \
        case BM_MPI_OP_ID_bor:                                                                     \
            BM_LOOP(ctype, (ctype)((wtype)a[i] | (wtype)b[i]));                                    \
            break;                                                                                 \
        case BM_MPI_OP_ID_bxor:                                                                    \
            BM_LOOP(ctype, (ctype)((wtype)a[i] ^ (wtype)b[i]));                                    \
            break;                                                                                 \
        default:                                                                                   \
            abort(); /* bm_mpi_op_supports was checked */                                          \
        }                                                                                          \
    }

#define BM_KERNEL_FLOAT(name, ctype)                                                               \
    static void kernel_##name(enum bm_mpi_op_id op, const void *in, void *inout, size_t n)         \
    {                                                                                              \
        switch (op) {                                                                              \
        case BM_MPI_OP_ID_max:                                                                     \
            BM_LOOP(ctype, a[i] > b[i] ? a[i] : b[i]);                                             \
            break;                                                                                 \
        case BM_MPI_OP_ID_min:                                                                     \
            BM_LOOP(ctype, a[i] < b[i] ? a[i] : b[i]);                                             \
            break;                                                                                 \
        case BM_MPI_OP_ID_sum:                                                                     \
            BM_LOOP(ctype, a[i] + b[i]);                                                           \
            break;                                                                                 \
        case BM_MPI_OP_ID_prod:                                                                    \
            BM_LOOP(ctype, a[i] * b[i]);                                                           \
            break;                                                                                 \
        default:                                                                                   \
            abort();                                                                               \
        }                                                                                          \
    }

#define BM_KERNEL_COMPLEX(name, ctype)                                                             \
    static void kernel_##name(enum bm_mpi_op_id op, const void *in, void *inout, size_t n)         \
    {                                                                                              \
        switch (op) {                                                                              \
        case BM_MPI_OP_ID_sum:                                                                     \
            BM_LOOP(ctype, a[i] + b[i]);                                                           \
            break;                                                                                 \
        case BM_MPI_OP_ID_prod:                                                                    \
            BM_LOOP(ctype, a[i] * b[i]);                                                           \
            break;                                                                                 \
        default:                                                                                   \
            abort();                                                                               \
        }                                                                                          \
    }

/* MAXLOC/MINLOC: the better value wins; on a tie the smaller index. */
#define BM_KERNEL_PAIR(name, vtype, itype)                                                         \
    struct bm_pair_##name {                                                                        \
        vtype v;                                                                                   \
        itype i;                                                                                   \
    };                                                                                             \
    static void kernel_##name(enum bm_mpi_op_id op, const void *in, void *inout, size_t n)         \
    {                                                                                              \
        const struct bm_pair_##name *a = in;                                                       \
        struct bm_pair_##name *b = inout;                                                          \
        bool max = op == BM_MPI_OP_ID_maxloc;                                                      \
        for (size_t k = 0; k < n; k++) {                                                           \
            if (a[k].v == b[k].v) {                                                                \
                if (a[k].i < b[k].i)                                                               \
                    b[k].i = a[k].i;                                                               \
            } else if (max ? a[k].v > b[k].v : a[k].v < b[k].v) {                                  \
                b[k] = a[k];                                                                       \
            }                                                                                      \
        }                                                                                          \
    }

BM_KERNEL_INT(char, char, unsigned)
BM_KERNEL_INT(signed_char, signed char, unsigned)
BM_KERNEL_INT(unsigned_char, unsigned char, unsigned)
BM_KERNEL_INT(short, short, unsigned)
BM_KERNEL_INT(unsigned_short, unsigned short, unsigned)
BM_KERNEL_INT(int, int, unsigned)
BM_KERNEL_INT(unsigned, unsigned, unsigned)
BM_KERNEL_INT(long, long, unsigned long)
BM_KERNEL_INT(unsigned_long, unsigned long, unsigned long)
BM_KERNEL_INT(long_long, long long, unsigned long long)
BM_KERNEL_INT(unsigned_long_long, unsigned long long, unsigned long long)
BM_KERNEL_INT(int8, int8_t, unsigned)
BM_KERNEL_INT(int16, int16_t, unsigned)
BM_KERNEL_INT(int32, int32_t, uint32_t)
BM_KERNEL_INT(int64, int64_t, uint64_t)
BM_KERNEL_INT(uint8, uint8_t, unsigned)
BM_KERNEL_INT(uint16, uint16_t, unsigned)
BM_KERNEL_INT(uint32, uint32_t, uint32_t)
BM_KERNEL_INT(uint64, uint64_t, uint64_t)
BM_KERNEL_INT(aint, MPI_Aint, uintptr_t)
BM_KERNEL_INT(mpi_ll, MPI_Offset, unsigned long long)
#ifdef __SIZEOF_INT128__
BM_KERNEL_INT(int128, bm_mpi_int128, bm_mpi_uint128)
#endif
BM_KERNEL_FLOAT(float, float)
BM_KERNEL_FLOAT(double, double)
BM_KERNEL_FLOAT(long_double, long double)
BM_KERNEL_COMPLEX(c_float_complex, float _Complex)
BM_KERNEL_COMPLEX(c_double_complex, double _Complex)
BM_KERNEL_COMPLEX(c_long_double_complex, long double _Complex)
BM_KERNEL_PAIR(float_int, float, int)
BM_KERNEL_PAIR(double_int, double, int)
BM_KERNEL_PAIR(long_int, long, int)
BM_KERNEL_PAIR(2int, int, int)
BM_KERNEL_PAIR(short_int, short, int)
BM_KERNEL_PAIR(long_double_int, long double, int)
BM_KERNEL_PAIR(2real, float, float)
BM_KERNEL_PAIR(2double_precision, double, double)

/* Logical operations on C _Bool. */
static void kernel_bool(enum bm_mpi_op_id op, const void *in, void *inout, size_t n)
{
    switch (op) {
    case BM_MPI_OP_ID_land:
        BM_LOOP(_Bool, a[i] && b[i]);
        break;
    case BM_MPI_OP_ID_lor:
        BM_LOOP(_Bool, a[i] || b[i]);
        break;
    case BM_MPI_OP_ID_lxor:
        BM_LOOP(_Bool, a[i] != b[i]);
        break;
    default:
        abort();
    }
}

/* Bitwise operations on MPI_BYTE/MPI_PACKED. */
static void kernel_byte(enum bm_mpi_op_id op, const void *in, void *inout, size_t n)
{
    switch (op) {
    case BM_MPI_OP_ID_band:
        BM_LOOP(unsigned char, (unsigned char)(a[i] & b[i]));
        break;
    case BM_MPI_OP_ID_bor:
        BM_LOOP(unsigned char, (unsigned char)(a[i] | b[i]));
        break;
    case BM_MPI_OP_ID_bxor:
        BM_LOOP(unsigned char, (unsigned char)(a[i] ^ b[i]));
        break;
    default:
        abort();
    }
}

typedef void kernel_fn(enum bm_mpi_op_id op, const void *in, void *inout, size_t n);

static kernel_fn *const kernels[BM_MPI_TYPE_ID_COUNT] = {
    [BM_MPI_TYPE_ID_char] = kernel_char,
    [BM_MPI_TYPE_ID_signed_char] = kernel_signed_char,
    [BM_MPI_TYPE_ID_unsigned_char] = kernel_unsigned_char,
    [BM_MPI_TYPE_ID_byte] = kernel_byte,
    [BM_MPI_TYPE_ID_short] = kernel_short,
    [BM_MPI_TYPE_ID_unsigned_short] = kernel_unsigned_short,
    [BM_MPI_TYPE_ID_int] = kernel_int,
    [BM_MPI_TYPE_ID_unsigned] = kernel_unsigned,
    [BM_MPI_TYPE_ID_long] = kernel_long,
    [BM_MPI_TYPE_ID_unsigned_long] = kernel_unsigned_long,
    [BM_MPI_TYPE_ID_long_long_int] = kernel_long_long,
    [BM_MPI_TYPE_ID_unsigned_long_long] = kernel_unsigned_long_long,
    [BM_MPI_TYPE_ID_float] = kernel_float,
    [BM_MPI_TYPE_ID_double] = kernel_double,
    [BM_MPI_TYPE_ID_long_double] = kernel_long_double,
    [BM_MPI_TYPE_ID_c_bool] = kernel_bool,
    [BM_MPI_TYPE_ID_int8_t] = kernel_int8,
    [BM_MPI_TYPE_ID_int16_t] = kernel_int16,
    [BM_MPI_TYPE_ID_int32_t] = kernel_int32,
    [BM_MPI_TYPE_ID_int64_t] = kernel_int64,
    [BM_MPI_TYPE_ID_uint8_t] = kernel_uint8,
    [BM_MPI_TYPE_ID_uint16_t] = kernel_uint16,
    [BM_MPI_TYPE_ID_uint32_t] = kernel_uint32,
    [BM_MPI_TYPE_ID_uint64_t] = kernel_uint64,
    [BM_MPI_TYPE_ID_aint] = kernel_aint,
    [BM_MPI_TYPE_ID_offset] = kernel_mpi_ll,
    [BM_MPI_TYPE_ID_count] = kernel_mpi_ll,
    [BM_MPI_TYPE_ID_c_float_complex] = kernel_c_float_complex,
    [BM_MPI_TYPE_ID_c_double_complex] = kernel_c_double_complex,
    [BM_MPI_TYPE_ID_c_long_double_complex] = kernel_c_long_double_complex,
    [BM_MPI_TYPE_ID_float_int] = kernel_float_int,
    [BM_MPI_TYPE_ID_double_int] = kernel_double_int,
    [BM_MPI_TYPE_ID_long_int] = kernel_long_int,
    [BM_MPI_TYPE_ID_2int] = kernel_2int,
    [BM_MPI_TYPE_ID_short_int] = kernel_short_int,
    [BM_MPI_TYPE_ID_long_double_int] = kernel_long_double_int,
    [BM_MPI_TYPE_ID_logical] = kernel_int,
    [BM_MPI_TYPE_ID_integer] = kernel_int,
    [BM_MPI_TYPE_ID_real] = kernel_float,
    [BM_MPI_TYPE_ID_double_precision] = kernel_double,
    [BM_MPI_TYPE_ID_complex] = kernel_c_float_complex,
    [BM_MPI_TYPE_ID_double_complex] = kernel_c_double_complex,
    [BM_MPI_TYPE_ID_2integer] = kernel_2int,
    [BM_MPI_TYPE_ID_2real] = kernel_2real,
    [BM_MPI_TYPE_ID_2double_precision] = kernel_2double_precision,
    [BM_MPI_TYPE_ID_integer1] = kernel_int8,
    [BM_MPI_TYPE_ID_integer2] = kernel_int16,
    [BM_MPI_TYPE_ID_integer4] = kernel_int32,
    [BM_MPI_TYPE_ID_integer8] = kernel_int64,
#ifdef __SIZEOF_INT128__
    [BM_MPI_TYPE_ID_integer16] = kernel_int128,
#endif
    [BM_MPI_TYPE_ID_real4] = kernel_float,
    [BM_MPI_TYPE_ID_real8] = kernel_double,
    [BM_MPI_TYPE_ID_complex8] = kernel_c_float_complex,
    [BM_MPI_TYPE_ID_complex16] = kernel_c_double_complex,
    [BM_MPI_TYPE_ID_cxx_bool] = kernel_bool,
    [BM_MPI_TYPE_ID_cxx_float_complex] = kernel_c_float_complex,
    [BM_MPI_TYPE_ID_cxx_double_complex] = kernel_c_double_complex,
    [BM_MPI_TYPE_ID_cxx_long_double_complex] = kernel_c_long_double_complex,
};

/* A derived type: the kernel runs on each run of basic elements of inout,
 * and on the elements of in at the same place. */
struct apply_walk {
    enum bm_mpi_op_id op;
    const char *in;
    char *inout;
};

static int apply_cb(int basic, char *addr, size_t n, ptrdiff_t stride, void *arg)
{
    struct apply_walk *w = arg;
    (void)stride; /* a run's elements are at the basic type's own stride */
    kernels[basic](w->op, w->in + (addr - w->inout), addr, n);
    return 0;
}

struct replace_walk {
    const char *in;
    char *inout;
};

static int replace_cb(char *addr, size_t len, void *arg)
{
    struct replace_walk *w = arg;
    memcpy(addr, w->in + (addr - w->inout), len);
    return 0;
}

void bm_mpi_op_apply(MPI_Op op, const void *in, void *inout, int count, MPI_Datatype dt)
{
    if (count <= 0)
        return;
    switch (op->id) {
    case BM_MPI_OP_ID_USER: {
        MPI_Datatype d = dt;
        int len = count;
        /* The user function's first argument is not const in the standard. */
        op->user_fn((void *)(uintptr_t)in, inout, &len, &d);
        return;
    }
    case BM_MPI_OP_ID_replace: {
        struct replace_walk w = {in, inout};
        bm_mpi_type_for_pieces(dt, inout, (size_t)count, replace_cb, &w);
        return;
    }
    case BM_MPI_OP_ID_no_op:
        return;
    default:
        if (dt->predefined) {
            kernels[dt->id](op->id, in, inout, (size_t)count);
        } else {
            struct apply_walk w = {op->id, in, inout};
            bm_util_dtype_walk(dt->dt, inout, (size_t)count, apply_cb, &w);
        }
    }
}

int PMPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op)
{
    static const char fn[] = "MPI_Op_create";
    struct bm_mpi_op *o;
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (user_fn == NULL || op == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL %s",
                            user_fn == NULL ? "user function" : "op pointer");
    o = calloc(1, sizeof(*o));
    if (o == NULL)
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    o->magic = BM_MPI_MAGIC_OP;
    o->id = BM_MPI_OP_ID_USER;
    o->user_fn = user_fn;
    o->commutative = commute != 0;
    o->name = "user-defined operation";
    o->refcount = 1;
    *op = o;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Op_create);

void bm_mpi_op_retain(MPI_Op op)
{
    if (!op->predefined)
        bm_mpi_ref_get(&op->refcount);
}

void bm_mpi_op_release(MPI_Op op)
{
    if (op->predefined || !bm_mpi_ref_put(&op->refcount))
        return;
    op->magic = 0;
    free(op);
}

int PMPI_Op_free(MPI_Op *op)
{
    static const char fn[] = "MPI_Op_free";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (op == NULL || *op == MPI_OP_NULL || (*op)->magic != BM_MPI_MAGIC_OP || (*op)->freed)
        return bm_mpi_error(NULL, MPI_ERR_OP, fn, "invalid operation handle");
    if ((*op)->predefined)
        return bm_mpi_error(NULL, MPI_ERR_OP, fn, "cannot free the predefined operation %s",
                            (*op)->name);
    /* Pending nonblocking or persistent collectives that use it keep it
     * until they are done with it (MPI-3.1 section 5.9.5: "marks for
     * deallocation"; MPICH's coll/nonblocking3 frees one before the wait). */
    (*op)->freed = true;
    bm_mpi_op_release(*op);
    *op = MPI_OP_NULL;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Op_free);

int PMPI_Op_commutative(MPI_Op op, int *commute)
{
    static const char fn[] = "MPI_Op_commutative";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (op == MPI_OP_NULL || op->magic != BM_MPI_MAGIC_OP)
        return bm_mpi_error(NULL, MPI_ERR_OP, fn, "invalid operation handle");
    if (commute == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL commute pointer");
    *commute = op->commutative;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Op_commutative);

int PMPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype,
                      MPI_Op op)
{
    static const char fn[] = "MPI_Reduce_local";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_count(NULL, count, fn)) ||
        (rc = bm_mpi_check_datatype(NULL, datatype, fn)) ||
        (rc = bm_mpi_check_buffer(NULL, inbuf, count, datatype, fn)) ||
        (rc = bm_mpi_check_buffer(NULL, inoutbuf, count, datatype, fn)) ||
        (rc = bm_mpi_check_op(NULL, op, datatype, fn)))
        return rc;
    /* Two distinct buffers (MPICH's errors/coll/reduce_local checks all three) */
    if (inbuf == MPI_IN_PLACE || inoutbuf == MPI_IN_PLACE)
        return bm_mpi_error(NULL, MPI_ERR_BUFFER, fn, "MPI_IN_PLACE is not valid as %s",
                            inbuf == MPI_IN_PLACE ? "inbuf" : "inoutbuf");
    if (count > 0 && inbuf == inoutbuf)
        return bm_mpi_error(NULL, MPI_ERR_BUFFER, fn,
                            "inbuf and inoutbuf are the same buffer (%p): they must not overlap",
                            inoutbuf);
    bm_mpi_op_apply(op, inbuf, inoutbuf, count, datatype);
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Reduce_local);
