/* CPU atomics on local memory shared by the self and sm transports (see
 * btl_atomic.h). */
#include "btl/btl_atomic.h"

#include <stdbool.h>
#include <string.h>

static uint64_t atomic_combine(enum bm_btl_atomic_op op, uint64_t old, uint64_t operand, bool is32)
{
    switch (op) {
    case BM_BTL_ATOMIC_ADD:
        return old + operand;
    case BM_BTL_ATOMIC_AND:
        return old & operand;
    case BM_BTL_ATOMIC_OR:
        return old | operand;
    case BM_BTL_ATOMIC_XOR:
        return old ^ operand;
    case BM_BTL_ATOMIC_SWAP:
        return operand;
    case BM_BTL_ATOMIC_MIN:
        if (is32)
            return (int32_t)old <= (int32_t)operand ? old : operand;
        return (int64_t)old <= (int64_t)operand ? old : operand;
    case BM_BTL_ATOMIC_MAX:
        if (is32)
            return (int32_t)old >= (int32_t)operand ? old : operand;
        return (int64_t)old >= (int64_t)operand ? old : operand;
    case BM_BTL_ATOMIC_FADD_DOUBLE:
        if (is32) {
            float a, b;
            uint32_t oa = (uint32_t)old, ob = (uint32_t)operand;
            memcpy(&a, &oa, 4);
            memcpy(&b, &ob, 4);
            a += b;
            memcpy(&oa, &a, 4);
            return oa;
        } else {
            double a, b;
            memcpy(&a, &old, 8);
            memcpy(&b, &operand, 8);
            a += b;
            uint64_t r;
            memcpy(&r, &a, 8);
            return r;
        }
    }
    return old;
}

int bm_btl_atomic_apply(uint64_t addr, enum bm_btl_atomic_op op, uint64_t operand, uint32_t flags,
                        uint64_t *old_out)
{
    bool is32 = flags & BM_BTL_ATOMIC_OP_F_32BIT;
    if ((unsigned)op > BM_BTL_ATOMIC_FADD_DOUBLE)
        return BM_ERR_BAD_PARAM;
    if (addr % (is32 ? 4 : 8) != 0)
        return BM_ERR_NOT_AVAILABLE;
    if (is32) {
        uint32_t *p = (uint32_t *)(uintptr_t)addr;
        uint32_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
        uint32_t nv;
        do {
            nv = (uint32_t)atomic_combine(op, old, operand, true);
        } while (
            !__atomic_compare_exchange_n(p, &old, nv, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
        *old_out = old;
    } else {
        uint64_t *p = (uint64_t *)(uintptr_t)addr;
        uint64_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
        uint64_t nv;
        do {
            nv = atomic_combine(op, old, operand, false);
        } while (
            !__atomic_compare_exchange_n(p, &old, nv, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
        *old_out = old;
    }
    return BM_OK;
}

int bm_btl_atomic_cswap_apply(uint64_t addr, uint64_t compare, uint64_t value, uint32_t flags,
                              uint64_t *old_out)
{
    if (flags & BM_BTL_ATOMIC_OP_F_32BIT) {
        if (addr % 4)
            return BM_ERR_NOT_AVAILABLE;
        uint32_t expected = (uint32_t)compare;
        __atomic_compare_exchange_n((uint32_t *)(uintptr_t)addr, &expected, (uint32_t)value, false,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
        *old_out = expected;
    } else {
        if (addr % 8)
            return BM_ERR_NOT_AVAILABLE;
        uint64_t expected = compare;
        __atomic_compare_exchange_n((uint64_t *)(uintptr_t)addr, &expected, value, false,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
        *old_out = expected;
    }
    return BM_OK;
}

void bm_btl_atomic_store_result(void *local_addr, uint64_t v, uint32_t flags)
{
    if (flags & BM_BTL_ATOMIC_OP_F_32BIT) {
        uint32_t v32 = (uint32_t)v;
        memcpy(local_addr, &v32, 4);
    } else {
        memcpy(local_addr, &v, 8);
    }
}
