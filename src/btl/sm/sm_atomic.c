/* Atomic operations of the sm transport, carried out by the target process.
 * Without a kernel module that maps another process's pages (XPMEM), no
 * process can touch a peer's private memory with a CPU atomic, and
 * process_vm_readv/writev only copy. So the initiator sends the request in
 * one of its fragments (BM_BTL_SM_FRAG_F_ATOMIC); the target, in its own
 * progress, applies it to its memory with a CPU atomic (btl_atomic.c, the
 * same code as the self transport), writes the previous value and a status
 * into that fragment and returns it as it returns every fragment; the
 * initiator finds the answer there. One fragment trip per operation, no
 * reply message.
 *
 * What this gives: operations on one target are atomic with respect to each
 * other from any number of initiators, and with respect to the target's own
 * CPU atomics on the same words (BM_BTL_ATOMIC_F_GLOBAL). What it needs:
 * the target must call progress (any MPI call that waits does), as with any
 * active-message emulation; a target stuck in computation delays them. The
 * remote address is trusted as a put's is: processes of one job share one
 * user and one trust domain. Alignment is checked on both sides. */
#define BM_LOG_SUBSYS "btl/sm"
#include "btl/btl_atomic.h"
#include "btl/sm/sm.h"
#include "util/log.h"

static int sm_amo_start(struct bm_btl_module *m, struct bm_btl_endpoint *ep, uint8_t op,
                        uint64_t remote_addr, uint64_t operand, uint64_t compare,
                        const struct bm_btl_sm_amo_wait *wait)
{
    struct bm_btl_sm_module *sm = (struct bm_btl_sm_module *)m;
    struct bm_btl_sm_endpoint *e = (struct bm_btl_sm_endpoint *)ep;
    if (e->failed)
        return BM_ERR_PEER_GONE;
    if (op != BM_BTL_SM_AMO_CSWAP && op > BM_BTL_ATOMIC_FADD_DOUBLE)
        return BM_ERR_BAD_PARAM;
    if (remote_addr % (wait->flags & BM_BTL_ATOMIC_OP_F_32BIT ? 4 : 8))
        return BM_ERR_NOT_AVAILABLE;
    bm_status_t rc = bm_btl_sm_ep_attach(sm, e);
    if (rc != BM_OK)
        return rc;
    struct bm_btl_sm_frag *f = bm_btl_sm_frag_take(sm, sizeof(struct bm_btl_sm_amo));
    if (!f)
        return BM_ERR_OUT_OF_RESOURCE;
    struct bm_btl_sm_amo *a = f->des.seg[0].addr;
    *a = (struct bm_btl_sm_amo){
        .addr = remote_addr,
        .operand = operand,
        .compare = compare,
        .status = BM_ERR_PROTOCOL, /* stays so if the target cannot answer */
        .flags = wait->flags & BM_BTL_ATOMIC_OP_F_32BIT,
        .op = op,
    };
    f->internal = true;
    f->amo = true;
    f->amo_wait = *wait;
    e->amo_pending++;
    sm->amo_pending++;
    /* Under the module's lock (the operation's wrapper), which a peer's
     * failure is declared under too: the push never meets it. */
    (void)bm_btl_sm_frag_push(sm, e, f, sizeof(*a), 0, BM_BTL_SM_FRAG_F_ATOMIC);
    return BM_OK;
}

int bm_btl_sm_atomic_op(struct bm_btl_module *m, struct bm_btl_endpoint *ep, uint64_t remote_addr,
                        const struct bm_btl_reg_handle *remote_handle, enum bm_btl_atomic_op op,
                        uint64_t operand, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                        void *context, void *cbdata)
{
    (void)remote_handle;
    (void)order;
    struct bm_btl_sm_amo_wait w = {cb, NULL, NULL, context, cbdata, flags};
    return sm_amo_start(m, ep, (uint8_t)op, remote_addr, operand, 0, &w);
}

int bm_btl_sm_atomic_fop(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                         uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                         const struct bm_btl_reg_handle *remote_handle, enum bm_btl_atomic_op op,
                         uint64_t operand, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                         void *context, void *cbdata)
{
    (void)remote_handle;
    (void)order;
    struct bm_btl_sm_amo_wait w = {cb, local_addr, local_handle, context, cbdata, flags};
    return sm_amo_start(m, ep, (uint8_t)op, remote_addr, operand, 0, &w);
}

int bm_btl_sm_atomic_cswap(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                           uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                           const struct bm_btl_reg_handle *remote_handle, uint64_t compare,
                           uint64_t value, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                           void *context, void *cbdata)
{
    (void)remote_handle;
    (void)order;
    struct bm_btl_sm_amo_wait w = {cb, local_addr, local_handle, context, cbdata, flags};
    return sm_amo_start(m, ep, BM_BTL_SM_AMO_CSWAP, remote_addr, value, compare, &w);
}

void bm_btl_sm_amo_run(struct bm_btl_sm_frag_hdr *hdr)
{
    /* A request too short to hold its answer cannot be answered; only a
     * corrupted segment sends one. The initiator's status stays an error. */
    if (hdr->len < sizeof(struct bm_btl_sm_amo)) {
        bm_log_ratelimited(BM_LOG_ERROR,
                           "dropped an atomic request of %u bytes from rank %d (expected %zu)",
                           hdr->len, hdr->src, sizeof(struct bm_btl_sm_amo));
        return;
    }
    struct bm_btl_sm_amo *a = (struct bm_btl_sm_amo *)(hdr + 1);
    uint64_t old = 0;
    int rc = a->op == BM_BTL_SM_AMO_CSWAP
                 ? bm_btl_atomic_cswap_apply(a->addr, a->compare, a->operand, a->flags, &old)
                 : bm_btl_atomic_apply(a->addr, (enum bm_btl_atomic_op)a->op, a->operand, a->flags,
                                       &old);
    a->result = old;
    a->status = rc;
}

struct bm_btl_sm_amo_wait bm_btl_sm_amo_settle(struct bm_btl_sm_module *sm,
                                               struct bm_btl_sm_frag *f,
                                               struct bm_btl_sm_endpoint *ep, int status)
{
    struct bm_btl_sm_amo_wait w = f->amo_wait;
    if (status == BM_OK && w.local_addr) {
        const struct bm_btl_sm_amo *a = f->des.seg[0].addr;
        bm_btl_atomic_store_result(w.local_addr, a->result, w.flags);
    }
    f->amo = false;
    if (ep)
        ep->amo_pending--;
    sm->amo_pending--;
    bm_btl_sm_frag_release(sm, f);
    return w;
}

void bm_btl_sm_amo_call(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep,
                        const struct bm_btl_sm_amo_wait *w, int status)
{
    if (w->cb)
        w->cb(&sm->super, (struct bm_btl_endpoint *)ep, w->local_addr, w->local_handle, w->context,
              w->cbdata, status);
}

void bm_btl_sm_amo_finish(struct bm_btl_sm_module *sm, struct bm_btl_sm_frag *f,
                          struct bm_btl_sm_endpoint *ep, int status)
{
    struct bm_btl_sm_amo_wait w = bm_btl_sm_amo_settle(sm, f, ep, status);
    bm_btl_sm_amo_call(sm, ep, &w, status);
}
