/* Put, get and atomics of the self transport: the "remote" memory is this
 * process's own, so each operation is a memcpy or a CPU atomic done before
 * the call returns (BM_BTL_DONE). When the caller asks for a callback anyway
 * (BM_BTL_DES_F_ALWAYS_CALLBACK), it runs from the next progress or flush
 * call, never inside the call that started the operation, the same
 * re-entrancy rule as self's sends. No registration is needed
 * (reg_handle_size 0); register_mem is btl_defer's handle that carries nothing.
 * Under MPI_THREAD_MULTIPLE the operations run in any thread at once (the
 * atomics are the CPU's); only the queue of callbacks takes the endpoint's
 * lock (README "Threads"). */
#define BM_LOG_SUBSYS "btl/self"
#include "btl/btl_atomic.h"
#include "btl/self/self.h"
#include "util/log.h"

#include <string.h>

static int self_rdma_complete(struct bm_btl_module *m, uint32_t flags, bm_btl_rdma_cb_fn cb,
                              void *local_addr, struct bm_btl_reg_handle *local_handle,
                              void *context, void *cbdata)
{
    struct bm_btl_self_module *sm = (struct bm_btl_self_module *)m;
    if (!sm->mt)
        return bm_btl_defer_complete(&sm->rdma_done, m, (struct bm_btl_endpoint *)&sm->endpoint,
                                     flags, cb, local_addr, local_handle, context, cbdata);
    /* MPI_THREAD_MULTIPLE: queued apart (a push that finds no memory calls
     * back at once, which must not happen under the leaf lock), then
     * appended under the lock */
    struct bm_btl_defer_queue one = {0};
    int rc = bm_btl_defer_complete(&one, m, (struct bm_btl_endpoint *)&sm->endpoint, flags, cb,
                                   local_addr, local_handle, context, cbdata);
    if (one.head) {
        bm_util_lock_take(&sm->lock);
        bm_btl_defer_splice(&sm->rdma_done, &one);
        bm_util_lock_give(&sm->lock);
    }
    return rc;
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
    int rc = bm_btl_atomic_apply(remote_addr, op, operand, flags, &old);
    if (rc != BM_OK)
        return rc;
    if (local_addr)
        bm_btl_atomic_store_result(local_addr, old, flags);
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
    int rc = bm_btl_atomic_cswap_apply(remote_addr, compare, value, flags, &old);
    if (rc != BM_OK)
        return rc;
    bm_btl_atomic_store_result(local_addr, old, flags);
    return self_rdma_complete(m, flags, cb, local_addr, local_handle, context, cbdata);
}

/* Every operation is already done; only queued callbacks remain to run. */
bm_status_t bm_btl_self_flush(struct bm_btl_module *m, struct bm_btl_endpoint *ep)
{
    (void)ep;
    struct bm_btl_self_module *sm = (struct bm_btl_self_module *)m;
    if (!sm->mt) {
        bm_btl_defer_run(&sm->rdma_done, m, BM_OK);
        return BM_OK;
    }
    /* taken whole under the lock, called back without it, until none is left */
    for (;;) {
        bm_util_lock_take(&sm->lock);
        struct bm_btl_defer_queue q = sm->rdma_done;
        __atomic_store_n(&sm->rdma_done.head, NULL, __ATOMIC_RELAXED);
        sm->rdma_done.tail = NULL;
        bm_util_lock_give(&sm->lock);
        if (!q.head)
            return BM_OK;
        bm_btl_defer_run(&q, m, BM_OK);
    }
}
