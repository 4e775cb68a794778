/* Carrying out accumulates for one-sided communication: applying a
 * predefined operation (MPI_REPLACE and MPI_NO_OP included) to the elements
 * of a window, element-wise atomic when other processes may apply to the
 * same memory at the same time (a window in a shared segment: every origin
 * of the node applies directly, the target's agent applies for the
 * others), and the mapping of single-element operations onto a transport's
 * atomic operations.
 *
 * Atomic mode works one element at a time: a compare-and-swap loop at the
 * element's own width (1, 2, 4 or 8 bytes) computes the new value from the
 * value it read, with the same reduction kernels as the collectives
 * (bm_mpi_op_apply on one element), and retries when another process got
 * there first. MPI_REPLACE is an atomic exchange, MPI_NO_OP an atomic load.
 * Wider elements (long double, double complex, the value-index pairs) and
 * elements not aligned to their width take a spin lock chosen by the
 * element's offset in the segment among BM_OSC_SHM_STRIPES there: the same
 * element always takes the same lock in every process, wherever each maps
 * the segment. The standard asks atomicity only
 * between accumulates of the same predefined type on the same location,
 * which is what this gives. */
#include "mpi/win.h"

#include <sched.h>
#include <string.h>

static struct bm_mpi_datatype *const type_table[] = {
#define BM_OSC_TYPE_ENTRY(mpiname, objname)                                                        \
    [BM_MPI_TYPE_ID_##objname] = &bm_mpi_type_##objname##_obj,
    BM_MPI_PREDEFINED_TYPES(BM_OSC_TYPE_ENTRY)
#undef BM_OSC_TYPE_ENTRY
};

static struct bm_mpi_op *const op_table[] = {
#define BM_OSC_OP_ENTRY(mpiname, objname) [BM_MPI_OP_ID_##objname] = &bm_mpi_op_##objname##_obj,
    BM_MPI_PREDEFINED_OPS(BM_OSC_OP_ENTRY)
#undef BM_OSC_OP_ENTRY
};

MPI_Datatype bm_osc_type_of_id(unsigned id)
{
    return id < BM_MPI_TYPE_ID_COUNT ? type_table[id] : MPI_DATATYPE_NULL;
}

MPI_Op bm_osc_op_of_id(unsigned id)
{
    return id < BM_MPI_OP_ID_USER ? op_table[id] : MPI_OP_NULL;
}

/* ---- stripe locks ------------------------------------------------------- */

/* The lock of an element is chosen by its offset in the segment, never by
 * its address: every process maps the segment at an address of its own, so
 * hashing the address gave two processes two different locks for the same
 * element (a lost long-double accumulate at 8 ranks). The stripes lie in
 * the same segment, so addr - stripes is the same number in every process. */
_Atomic uint32_t *bm_osc_stripe_of(_Atomic uint32_t *stripes, const void *addr)
{
    uint64_t off = (uint64_t)((uintptr_t)addr - (uintptr_t)stripes) >> 3;
    return &stripes[(off * 0x9e3779b97f4a7c15ull) >> 58]; /* 64 stripes */
}

static void stripe_lock(_Atomic uint32_t *s)
{
    for (;;) {
        uint32_t expected = 0;
        if (atomic_compare_exchange_weak_explicit(s, &expected, 1, memory_order_acquire,
                                                  memory_order_relaxed))
            return;
        /* the holder is a process of this node, maybe not running right now */
        while (atomic_load_explicit(s, memory_order_relaxed))
            sched_yield();
    }
}

static void stripe_unlock(_Atomic uint32_t *s)
{
    atomic_store_explicit(s, 0, memory_order_release);
}

_Static_assert(BM_OSC_SHM_STRIPES == 64, "stripe_of picks one of 64");

/* ---- one element, atomically -------------------------------------------- */

/* Elements are at most 32 bytes (MPI_LONG_DOUBLE_INT, long double
 * complex); the kernels need them at their natural alignment, which data
 * in a message or at an odd displacement does not have. */
#define ELEM_MAX 32
union elem_buf {
    long double ld;
    unsigned char b[ELEM_MAX];
};

/* v = origin op v for one element; v is aligned, origin may not be. */
static void combine(MPI_Op op, MPI_Datatype dt, const void *origin, void *v)
{
    union elem_buf o;
    memcpy(o.b, origin, (size_t)dt->extent);
    bm_mpi_op_apply(op, o.b, v, 1, dt);
}

/* The same on target memory that may not be aligned. */
static void combine_mem(MPI_Op op, MPI_Datatype dt, const void *origin, void *target)
{
    union elem_buf t;
    memcpy(t.b, target, (size_t)dt->extent);
    combine(op, dt, origin, t.b);
    memcpy(target, t.b, (size_t)dt->extent);
}

#define BM_OSC_CAS_LOOP(T)                                                                         \
    do {                                                                                           \
        T *p = target;                                                                             \
        T cur = __atomic_load_n(p, __ATOMIC_RELAXED), nv;                                          \
        do {                                                                                       \
            nv = cur;                                                                              \
            combine(op, dt, origin, &nv);                                                          \
        } while (                                                                                  \
            !__atomic_compare_exchange_n(p, &cur, nv, true, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));  \
        if (old)                                                                                   \
            memcpy(old, &cur, sizeof(T));                                                          \
    } while (0)

#define BM_OSC_XCHG(T)                                                                             \
    do {                                                                                           \
        T nv, prev;                                                                                \
        memcpy(&nv, origin, sizeof(T));                                                            \
        prev = __atomic_exchange_n((T *)target, nv, __ATOMIC_ACQ_REL);                             \
        if (old)                                                                                   \
            memcpy(old, &prev, sizeof(T));                                                         \
    } while (0)

#define BM_OSC_LOAD(T)                                                                             \
    do {                                                                                           \
        T prev = __atomic_load_n((T *)target, __ATOMIC_ACQUIRE);                                   \
        if (old)                                                                                   \
            memcpy(old, &prev, sizeof(T));                                                         \
    } while (0)

/* Integer sums and bitwise operations are one locked instruction (lock
 * xadd, lock and/or/xor, or a cmpxchg loop the compiler writes without the
 * kernel's call per try): an sm MPI_Fetch_and_op went from a call through
 * the reduction table inside a compare-and-swap loop to this. */
#define BM_OSC_FETCH_OP(T)                                                                         \
    do {                                                                                           \
        T v, prev;                                                                                 \
        memcpy(&v, origin, sizeof(T));                                                             \
        switch (op->id) {                                                                          \
        case BM_MPI_OP_ID_sum:                                                                     \
            prev = __atomic_fetch_add((T *)target, v, __ATOMIC_ACQ_REL);                           \
            break;                                                                                 \
        case BM_MPI_OP_ID_band:                                                                    \
            prev = __atomic_fetch_and((T *)target, v, __ATOMIC_ACQ_REL);                           \
            break;                                                                                 \
        case BM_MPI_OP_ID_bor:                                                                     \
            prev = __atomic_fetch_or((T *)target, v, __ATOMIC_ACQ_REL);                            \
            break;                                                                                 \
        default:                                                                                   \
            prev = __atomic_fetch_xor((T *)target, v, __ATOMIC_ACQ_REL);                           \
            break;                                                                                 \
        }                                                                                          \
        if (old)                                                                                   \
            memcpy(old, &prev, sizeof(T));                                                         \
    } while (0)

/* Can op on dt be one fetch-and-<op> instruction (see BM_OSC_FETCH_OP)? */
static bool fetch_op_ok(MPI_Op op, MPI_Datatype dt)
{
    bool integer = dt->kind == BM_MPI_KIND_INT || dt->kind == BM_MPI_KIND_CHAR;
    switch (op->id) {
    case BM_MPI_OP_ID_sum:
        return integer;
    case BM_MPI_OP_ID_band:
    case BM_MPI_OP_ID_bor:
    case BM_MPI_OP_ID_bxor:
        return integer || dt->kind == BM_MPI_KIND_BYTE;
    default:
        return false;
    }
}

static void elem_locked(MPI_Op op, MPI_Datatype dt, const void *origin, void *target, void *old,
                        size_t w, _Atomic uint32_t *stripes)
{
    _Atomic uint32_t *s = bm_osc_stripe_of(stripes, target);
    stripe_lock(s);
    if (old)
        memcpy(old, target, w);
    if (op->id == BM_MPI_OP_ID_replace)
        memcpy(target, origin, w);
    else if (op->id != BM_MPI_OP_ID_no_op)
        combine_mem(op, dt, origin, target);
    stripe_unlock(s);
}

static void elem_atomic(MPI_Op op, MPI_Datatype dt, const void *origin, void *target, void *old,
                        size_t w, _Atomic uint32_t *stripes)
{
    bool aligned = ((uintptr_t)target & (w - 1)) == 0;
    if (!aligned || (w != 1 && w != 2 && w != 4 && w != 8)) {
        elem_locked(op, dt, origin, target, old, w, stripes);
        return;
    }
    if (op->id == BM_MPI_OP_ID_replace) {
        switch (w) {
        case 1:
            BM_OSC_XCHG(uint8_t);
            break;
        case 2:
            BM_OSC_XCHG(uint16_t);
            break;
        case 4:
            BM_OSC_XCHG(uint32_t);
            break;
        default:
            BM_OSC_XCHG(uint64_t);
            break;
        }
        return;
    }
    if (op->id == BM_MPI_OP_ID_no_op) {
        switch (w) {
        case 1:
            BM_OSC_LOAD(uint8_t);
            break;
        case 2:
            BM_OSC_LOAD(uint16_t);
            break;
        case 4:
            BM_OSC_LOAD(uint32_t);
            break;
        default:
            BM_OSC_LOAD(uint64_t);
            break;
        }
        return;
    }
    if (fetch_op_ok(op, dt)) {
        switch (w) {
        case 1:
            BM_OSC_FETCH_OP(uint8_t);
            break;
        case 2:
            BM_OSC_FETCH_OP(uint16_t);
            break;
        case 4:
            BM_OSC_FETCH_OP(uint32_t);
            break;
        default:
            BM_OSC_FETCH_OP(uint64_t);
            break;
        }
        return;
    }
    switch (w) {
    case 1:
        BM_OSC_CAS_LOOP(uint8_t);
        break;
    case 2:
        BM_OSC_CAS_LOOP(uint16_t);
        break;
    case 4:
        BM_OSC_CAS_LOOP(uint32_t);
        break;
    default:
        BM_OSC_CAS_LOOP(uint64_t);
        break;
    }
}

void bm_osc_acc_apply(MPI_Op op, MPI_Datatype dt, const void *origin, void *target, void *old,
                      size_t n, _Atomic uint32_t *stripes)
{
    size_t w = (size_t)dt->extent;
    if (n == 0)
        return;
    if (!stripes) {
        /* only this process applies: whole runs at once when aligned */
        size_t align = w & (~w + 1); /* the largest power of two dividing w */
        if (align > 16)
            align = 16;
        if (old)
            memmove(old, target, n * w);
        if (op->id == BM_MPI_OP_ID_no_op)
            return;
        if (op->id == BM_MPI_OP_ID_replace ||
            (((uintptr_t)origin | (uintptr_t)target) & (align - 1)) == 0) {
            bm_mpi_op_apply(op, origin, target, (int)n, dt);
            return;
        }
        for (size_t i = 0; i < n; i++)
            combine_mem(op, dt, (const char *)origin + i * w, (char *)target + i * w);
        return;
    }
    const char *o = origin;
    char *t = target, *r = old;
    for (size_t i = 0; i < n; i++)
        elem_atomic(op, dt, o ? o + i * w : NULL, t + i * w, r ? r + i * w : NULL, w, stripes);
}

#define BM_OSC_CAS_ONE(T)                                                                          \
    do {                                                                                           \
        T c, v;                                                                                    \
        memcpy(&c, compare, sizeof(T));                                                            \
        memcpy(&v, value, sizeof(T));                                                              \
        __atomic_compare_exchange_n((T *)target, &c, v, false, __ATOMIC_ACQ_REL,                   \
                                    __ATOMIC_ACQUIRE);                                             \
        memcpy(old, &c, sizeof(T));                                                                \
    } while (0)

void bm_osc_cas_apply(MPI_Datatype dt, const void *compare, const void *value, void *target,
                      void *old, _Atomic uint32_t *stripes)
{
    size_t w = (size_t)dt->extent;
    bool aligned = ((uintptr_t)target & (w - 1)) == 0;
    if (stripes && aligned && (w == 1 || w == 2 || w == 4 || w == 8)) {
        switch (w) {
        case 1:
            BM_OSC_CAS_ONE(uint8_t);
            break;
        case 2:
            BM_OSC_CAS_ONE(uint16_t);
            break;
        case 4:
            BM_OSC_CAS_ONE(uint32_t);
            break;
        default:
            BM_OSC_CAS_ONE(uint64_t);
            break;
        }
        return;
    }
    _Atomic uint32_t *s = stripes ? bm_osc_stripe_of(stripes, target) : NULL;
    if (s)
        stripe_lock(s);
    memcpy(old, target, w);
    if (memcmp(old, compare, w) == 0)
        memcpy(target, value, w);
    if (s)
        stripe_unlock(s);
}

bool bm_osc_acc_btl_op(MPI_Op op, MPI_Datatype dt, const struct bm_btl_module *m,
                       enum bm_btl_atomic_op *op_out, uint32_t *flags_out, bool *fetch_only)
{
    if (!(m->caps & BM_BTL_CAP_ATOMIC_FOPS) || !dt->predefined)
        return false;
    uint32_t flags = 0;
    *fetch_only = false;
    if (dt->kind == BM_MPI_KIND_FLOAT) {
        if (dt->size == 8 && op->id == BM_MPI_OP_ID_sum &&
            (m->atomic_flags & BM_BTL_ATOMIC_F_FLOAT)) {
            *op_out = BM_BTL_ATOMIC_FADD_DOUBLE;
            *flags_out = 0;
            return true;
        }
        if (dt->size != 8 || (op->id != BM_MPI_OP_ID_replace && op->id != BM_MPI_OP_ID_no_op))
            return false;
    } else if (dt->kind != BM_MPI_KIND_INT && dt->kind != BM_MPI_KIND_BYTE) {
        return false;
    }
    if (dt->size == 4 && (m->atomic_flags & BM_BTL_ATOMIC_F_32BIT))
        flags = BM_BTL_ATOMIC_OP_F_32BIT;
    else if (dt->size != 8)
        return false;
    switch (op->id) {
    case BM_MPI_OP_ID_sum:
        if (dt->kind != BM_MPI_KIND_INT)
            return false;
        *op_out = BM_BTL_ATOMIC_ADD;
        break;
    case BM_MPI_OP_ID_band:
        *op_out = BM_BTL_ATOMIC_AND;
        break;
    case BM_MPI_OP_ID_bor:
        *op_out = BM_BTL_ATOMIC_OR;
        break;
    case BM_MPI_OP_ID_bxor:
        *op_out = BM_BTL_ATOMIC_XOR;
        break;
    case BM_MPI_OP_ID_replace:
        *op_out = BM_BTL_ATOMIC_SWAP;
        break;
    case BM_MPI_OP_ID_no_op:
        /* a fetch: adding 0 (or or-ing 0 into a double's bits) changes nothing */
        *op_out = BM_BTL_ATOMIC_OR;
        *fetch_only = true;
        break;
    case BM_MPI_OP_ID_max:
    case BM_MPI_OP_ID_min:
        if (dt->kind != BM_MPI_KIND_INT || !dt->is_signed)
            return false;
        *op_out = op->id == BM_MPI_OP_ID_max ? BM_BTL_ATOMIC_MAX : BM_BTL_ATOMIC_MIN;
        break;
    default:
        return false;
    }
    *flags_out = flags;
    return true;
}
