/* Put, get and atomics of the self transport: the "remote" memory is this
 * process's own, so each operation is a memcpy or a CPU atomic done before
 * the call returns (BM_BTL_DONE). When the caller asks for a callback anyway
 * (BM_BTL_DES_F_ALWAYS_CALLBACK), it runs from the next progress or flush
 * call, never inside the call that started the operation, the same
 * re-entrancy rule as self's sends. No registration is needed
 * (reg_handle_size 0); register_mem is btl_defer's handle that carries nothing. */
#define BM_LOG_SUBSYS "btl/self"
#include "btl/self/self.h"
#include "util/log.h"

#include <string.h>

static int self_rdma_complete(struct bm_btl_module *m, uint32_t flags, bm_btl_rdma_cb_fn cb,
                              void *local_addr, struct bm_btl_reg_handle *local_handle,
                              void *context, void *cbdata)
{
    struct bm_btl_self_module *sm = (struct bm_btl_self_module *)m;
    return bm_btl_defer_complete(&sm->rdma_done, m, (struct bm_btl_endpoint *)&sm->endpoint, flags,
                                 cb, local_addr, local_handle, context, cbdata);
}

int bm_btl_self_put(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                    uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                    const struct bm_btl_reg_handle *remote_handle, size_t size, uint32_t flags,
                    uint8_t order, bm_btl_rdma_cb_fn cb, void *context, void *cbdata)
{
    (void)ep;
    (void)remote_handle;
    (void)order;
    if (size)
        memmove((void *)(uintptr_t)remote_addr, local_addr, size);
    return self_rdma_complete(m, flags, cb, local_addr, local_handle, context, cbdata);
}

int bm_btl_self_get(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                    uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                    const struct bm_btl_reg_handle *remote_handle, size_t size, uint32_t flags,
                    uint8_t order, bm_btl_rdma_cb_fn cb, void *context, void *cbdata)
{
    (void)ep;
    (void)remote_handle;
    (void)order;
    if (size)
        memmove(local_addr, (const void *)(uintptr_t)remote_addr, size);
    return self_rdma_complete(m, flags, cb, local_addr, local_handle, context, cbdata);
}

/* ---- atomics ------------------------------------------------------------------ */

static uint64_t self_combine(enum bm_btl_atomic_op op, uint64_t old, uint64_t operand, bool is32)
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

/* Apply op atomically at addr; *old_out gets the previous value. A CAS loop
 * covers every operation uniformly, including min/max and floating add that
 * have no single instruction. */
static int self_atomic_apply(uint64_t remote_addr, enum bm_btl_atomic_op op, uint64_t operand,
                             uint32_t flags, uint64_t *old_out)
{
    bool is32 = flags & BM_BTL_ATOMIC_OP_F_32BIT;
    if ((unsigned)op > BM_BTL_ATOMIC_FADD_DOUBLE)
        return BM_ERR_BAD_PARAM;
    if (remote_addr % (is32 ? 4 : 8) != 0)
        return BM_ERR_NOT_AVAILABLE;
    if (is32) {
        uint32_t *p = (uint32_t *)(uintptr_t)remote_addr;
        uint32_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
        uint32_t nv;
        do {
            nv = (uint32_t)self_combine(op, old, operand, true);
        } while (
            !__atomic_compare_exchange_n(p, &old, nv, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
        *old_out = old;
    } else {
        uint64_t *p = (uint64_t *)(uintptr_t)remote_addr;
        uint64_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
        uint64_t nv;
        do {
            nv = self_combine(op, old, operand, false);
        } while (
            !__atomic_compare_exchange_n(p, &old, nv, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
        *old_out = old;
    }
    return BM_OK;
}

/* The previous value goes to local_addr (fetching atomics; 4 or 8 bytes). */
static void self_store_result(void *local_addr, uint64_t v, uint32_t flags)
{
    if (flags & BM_BTL_ATOMIC_OP_F_32BIT) {
        uint32_t v32 = (uint32_t)v;
        memcpy(local_addr, &v32, 4);
    } else {
        memcpy(local_addr, &v, 8);
    }
}

int bm_btl_self_atomic_op(struct bm_btl_module *m, struct bm_btl_endpoint *ep, uint64_t remote_addr,
                          const struct bm_btl_reg_handle *remote_handle, enum bm_btl_atomic_op op,
                          uint64_t operand, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                          void *context, void *cbdata)
{
    return bm_btl_self_atomic_fop(m, ep, NULL, remote_addr, NULL, remote_handle, op, operand, flags,
                                  order, cb, context, cbdata);
}

/* Also atomic_op's body, with local_addr NULL: the previous value is dropped. */
int bm_btl_self_atomic_fop(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                           uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                           const struct bm_btl_reg_handle *remote_handle, enum bm_btl_atomic_op op,
                           uint64_t operand, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                           void *context, void *cbdata)
{
    (void)ep;
    (void)remote_handle;
    (void)order;
    uint64_t old;
    int rc = self_atomic_apply(remote_addr, op, operand, flags, &old);
    if (rc != BM_OK)
        return rc;
    if (local_addr)
        self_store_result(local_addr, old, flags);
    return self_rdma_complete(m, flags, cb, local_addr, local_handle, context, cbdata);
}

int bm_btl_self_atomic_cswap(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                             uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                             const struct bm_btl_reg_handle *remote_handle, uint64_t compare,
                             uint64_t value, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                             void *context, void *cbdata)
{
    (void)ep;
    (void)remote_handle;
    (void)order;
    uint64_t old;
    if (flags & BM_BTL_ATOMIC_OP_F_32BIT) {
        if (remote_addr % 4)
            return BM_ERR_NOT_AVAILABLE;
        uint32_t expected = (uint32_t)compare;
        __atomic_compare_exchange_n((uint32_t *)(uintptr_t)remote_addr, &expected, (uint32_t)value,
                                    false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
        old = expected;
    } else {
        if (remote_addr % 8)
            return BM_ERR_NOT_AVAILABLE;
        uint64_t expected = compare;
        __atomic_compare_exchange_n((uint64_t *)(uintptr_t)remote_addr, &expected, value, false,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
        old = expected;
    }
    self_store_result(local_addr, old, flags);
    return self_rdma_complete(m, flags, cb, local_addr, local_handle, context, cbdata);
}

/* Every operation is already done; only queued callbacks remain to run. */
bm_status_t bm_btl_self_flush(struct bm_btl_module *m, struct bm_btl_endpoint *ep)
{
    (void)ep;
    bm_btl_defer_run(&((struct bm_btl_self_module *)m)->rdma_done, m, BM_OK);
    return BM_OK;
}
