/* Put, get and flush of the ofi transport: one-sided transfers straight to
 * the provider's RMA operations. The remote side is a registration handle
 * from the peer (key and base, ofi_mr.c); the target is its virtual address
 * with FI_MR_VIRT_ADDR and an offset from the base without. The local side
 * needs a descriptor only when the provider wants local registration: the
 * caller's handle when it covers the buffer, else the cache. Puts that fit
 * the inject size leave with FI_INJECT (the buffer is free at once, no
 * registration needed) but still ask for a completion, because flush must
 * know when every put has landed. Every operation asks for
 * FI_DELIVERY_COMPLETE: its completion means the data is in the target's
 * memory (or, for a get, in ours), which is what flush and MPI one-sided
 * synchronisation promise. Operations in flight are counted per endpoint and
 * per module; flush drives progress until the count it waits for is zero,
 * which failed paths and timeouts also bring about. */
#define BM_LOG_SUBSYS "btl/ofi"
#include "btl/ofi/ofi.h"
#include "util/log.h"

#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdio.h>
#include <string.h>

uint64_t bm_btl_ofi_remote_addr(const struct bm_btl_ofi_module *m,
                                const struct bm_btl_ofi_rkey *rkey, uint64_t remote_addr)
{
    return (m->mr_mode & FI_MR_VIRT_ADDR) ? remote_addr : remote_addr - rkey->base;
}

void bm_btl_ofi_rdma_complete(struct bm_btl_ofi_req *req, int status)
{
    struct bm_btl_ofi_context *ctx = req->ctx;
    struct bm_btl_ofi_module *m = ctx->m;
    struct bm_btl_ofi_endpoint *ep = req->ep;
    /* Everything the callback needs, read before the request can be reused
     * (when we failed it, the provider may hand it back on another thread). */
    bm_btl_rdma_cb_fn cb = req->cb;
    void *local_addr = req->local_addr;
    struct bm_btl_reg_handle *local_handle = req->local_handle;
    void *cb_context = req->cb_context, *cbdata = req->cbdata;
    if (status == BM_OK && (req->kind == BM_OFI_REQ_FAMO || req->kind == BM_OFI_REQ_CSWAP)) {
        if (req->flags & BM_BTL_ATOMIC_OP_F_32BIT) {
            uint32_t v;
            memcpy(&v, &req->result, 4);
            memcpy(local_addr, &v, 4);
        } else {
            memcpy(local_addr, &req->result, 8);
        }
    }
    bool recycle = !req->inflight;
    if (recycle) {
        bm_btl_ofi_mr_release(m, req->reg);
        req->reg = NULL;
        bm_btl_ofi_lock(ctx);
        bm_btl_ofi_req_put(ctx, req);
        bm_btl_ofi_unlock(ctx);
    }
    if (cb)
        cb(&m->super, (struct bm_btl_endpoint *)ep, local_addr, local_handle, cb_context, cbdata,
           status);
    atomic_fetch_sub(&ep->outstanding, 1);
    atomic_fetch_sub(&m->outstanding, 1);
}

/* A request for an RDMA or atomic operation, or NULL with *rc set. */
static struct bm_btl_ofi_req *rdma_req(struct bm_btl_ofi_module *m, struct bm_btl_ofi_endpoint *ep,
                                       int kind, bm_btl_rdma_cb_fn cb, void *local_addr,
                                       struct bm_btl_reg_handle *local_handle, void *context,
                                       void *cbdata, uint32_t flags, int *rc)
{
    int failed = bm_btl_ofi_ep_failed(ep);
    if (failed) {
        *rc = failed;
        return NULL;
    }
    struct bm_btl_ofi_context *ctx = bm_btl_ofi_context_pick(m, ep);
    bm_btl_ofi_lock(ctx);
    struct bm_btl_ofi_req *req = bm_btl_ofi_req_get(ctx, kind);
    bm_btl_ofi_unlock(ctx);
    if (!req) {
        *rc = BM_ERR_OUT_OF_RESOURCE;
        return NULL;
    }
    req->ep = ep;
    req->cb = cb;
    req->local_addr = local_addr;
    req->local_handle = local_handle;
    req->cb_context = context;
    req->cbdata = cbdata;
    req->flags = flags;
    return req;
}

/* After the provider call, under the context's lock: a request it took
 * is counted in flight before a completion can be read (progress reads
 * the queue under this lock). */
static void rdma_took(struct bm_btl_ofi_req *req)
{
    bm_btl_ofi_req_posted(req->ctx, req);
    atomic_fetch_add(&req->ep->outstanding, 1);
    atomic_fetch_add(&req->ctx->m->outstanding, 1);
}

/* After the provider call, the lock released: report it, or take the
 * request back. When the provider took it (rc 0) req may be completed and
 * reused by another thread already: only ctx and ep are read then. */
static int rdma_posted(struct bm_btl_ofi_context *ctx, struct bm_btl_ofi_endpoint *ep,
                       struct bm_btl_ofi_req *req, int kind, ssize_t rc, const char *what)
{
    struct bm_btl_ofi_module *m = ctx->m;
    if (rc == 0) {
        bm_btl_ofi_endpoint_unstalled(ep);
        if (kind == BM_OFI_REQ_PUT || kind == BM_OFI_REQ_GET)
            BM_OFI_COUNT(m, rma);
        else
            BM_OFI_COUNT(m, amos);
        return BM_OK;
    }
    bm_btl_ofi_mr_release(m, req->reg);
    req->reg = NULL;
    bm_btl_ofi_lock(ctx);
    bm_btl_ofi_req_put(ctx, req);
    bm_btl_ofi_unlock(ctx);
    if (rc == -FI_EAGAIN)
        return bm_btl_ofi_endpoint_stalled(ep, ctx);
    int status = bm_btl_ofi_status_of((int)-rc);
    if (status == BM_ERR_ACCESS || status == BM_ERR_TRUNCATE) {
        bm_log_error("%s: %s to %s refused: %s", m->super.name, what, ep->desc,
                     fi_strerror((int)-rc));
        return BM_ERR_BAD_PARAM;
    }
    char msg[200];
    snprintf(msg, sizeof(msg), "%s to %s refused by the provider: %s", what, ep->desc,
             fi_strerror((int)-rc));
    bm_btl_ofi_endpoint_fail(ep, BM_ERR_LINK_DOWN, msg, false);
    return BM_ERR_LINK_DOWN;
}

static int rdma_rw(struct bm_btl_module *mod, struct bm_btl_endpoint *bep, bool write,
                   void *local_addr, uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                   const struct bm_btl_reg_handle *remote_handle, size_t size, uint32_t flags,
                   bm_btl_rdma_cb_fn cb, void *context, void *cbdata)
{
    struct bm_btl_ofi_module *m = (struct bm_btl_ofi_module *)mod;
    struct bm_btl_ofi_endpoint *ep = (struct bm_btl_ofi_endpoint *)bep;
    const struct bm_btl_ofi_rkey *rkey = (const struct bm_btl_ofi_rkey *)remote_handle;
    if (!rkey)
        return BM_ERR_BAD_PARAM;
    if (size > (write ? m->super.put_limit : m->super.get_limit))
        return BM_ERR_NOT_AVAILABLE;
    int failed = bm_btl_ofi_ep_failed(ep);
    if (failed)
        return failed;
    if (size == 0) {
        /* Nothing moves: done now (some providers never complete an empty
         * RMA operation: shm in libfabric 1.17). */
        struct bm_btl_ofi_context *ctx = bm_btl_ofi_context_pick(m, ep);
        bm_btl_ofi_lock(ctx);
        int r = bm_btl_defer_complete(&ctx->defer, mod, bep, flags, cb, local_addr, local_handle,
                                      context, cbdata);
        bm_btl_ofi_unlock(ctx);
        return r;
    }
    int rc;
    struct bm_btl_ofi_req *req = rdma_req(m, ep, write ? BM_OFI_REQ_PUT : BM_OFI_REQ_GET, cb,
                                          local_addr, local_handle, context, cbdata, 0, &rc);
    if (!req)
        return rc;
    uint64_t fflags = FI_COMPLETION | m->rma_flags;
    void *desc = NULL;
    if (write && size <= m->inject_size) {
        fflags |= FI_INJECT;
    } else if (bm_btl_ofi_mr_local_desc(m, local_handle, local_addr, size, &desc, &req->reg) !=
               BM_OK) {
        return rdma_posted(req->ctx, ep, req, req->kind, -FI_EAGAIN, write ? "a put" : "a get");
    }
    struct iovec iov = {local_addr, size};
    struct fi_rma_iov rma = {bm_btl_ofi_remote_addr(m, rkey, remote_addr), size, rkey->key};
    struct fi_msg_rma msg = {
        .msg_iov = &iov,
        .desc = &desc,
        .iov_count = 1,
        .addr = bm_btl_ofi_context_dest(req->ctx, ep),
        .rma_iov = &rma,
        .rma_iov_count = 1,
        .context = &req->fctx,
    };
    struct bm_btl_ofi_context *ctx = req->ctx;
    int kind = req->kind;
    bm_btl_ofi_lock(ctx);
    ssize_t r = write ? fi_writemsg(ctx->tx, &msg, fflags) : fi_readmsg(ctx->tx, &msg, fflags);
    if (r == 0)
        rdma_took(req);
    bm_btl_ofi_unlock(ctx);
    return rdma_posted(ctx, ep, req, kind, r, write ? "a put" : "a get");
}

int bm_btl_ofi_put(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                   uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                   const struct bm_btl_reg_handle *remote_handle, size_t size, uint32_t flags,
                   uint8_t order, bm_btl_rdma_cb_fn cb, void *context, void *cbdata)
{
    (void)order; /* completions are unordered; callers order with flush */
    return rdma_rw(m, ep, true, local_addr, remote_addr, local_handle, remote_handle, size, flags,
                   cb, context, cbdata);
}

int bm_btl_ofi_get(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                   uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                   const struct bm_btl_reg_handle *remote_handle, size_t size, uint32_t flags,
                   uint8_t order, bm_btl_rdma_cb_fn cb, void *context, void *cbdata)
{
    (void)order;
    return rdma_rw(m, ep, false, local_addr, remote_addr, local_handle, remote_handle, size, flags,
                   cb, context, cbdata);
}

bm_status_t bm_btl_ofi_flush(struct bm_btl_module *mod, struct bm_btl_endpoint *bep)
{
    struct bm_btl_ofi_module *m = (struct bm_btl_ofi_module *)mod;
    struct bm_btl_ofi_endpoint *ep = (struct bm_btl_ofi_endpoint *)bep;
    atomic_int *count = ep ? &ep->outstanding : &m->outstanding;
    for (;;) {
        bm_btl_ofi_endpoint_fail_run(m);
        for (int i = 0; i < m->nctx; i++)
            bm_btl_ofi_context_progress(&m->ctx[i]);
        if (atomic_load(count) == 0)
            break;
    }
    /* Callbacks of operations that completed inside the call wait in the
     * deferred queues: they must have run too. */
    for (int i = 0; i < m->nctx; i++) {
        /* Other threads queue under the context's lock. */
        bm_btl_ofi_lock(&m->ctx[i]);
        bool queued = m->ctx[i].defer.head != NULL;
        bm_btl_ofi_unlock(&m->ctx[i]);
        if (queued)
            bm_btl_ofi_context_progress(&m->ctx[i]);
    }
    return ep ? bm_btl_ofi_ep_failed(ep) : BM_OK;
}

/* Shared with ofi_atomic.c. */
struct bm_btl_ofi_req *bm_btl_ofi_rdma_req(struct bm_btl_ofi_module *m,
                                           struct bm_btl_ofi_endpoint *ep, int kind,
                                           bm_btl_rdma_cb_fn cb, void *local_addr,
                                           struct bm_btl_reg_handle *local_handle, void *context,
                                           void *cbdata, uint32_t flags, int *rc)
{
    return rdma_req(m, ep, kind, cb, local_addr, local_handle, context, cbdata, flags, rc);
}

void bm_btl_ofi_rdma_took(struct bm_btl_ofi_req *req)
{
    rdma_took(req);
}

int bm_btl_ofi_rdma_posted(struct bm_btl_ofi_context *ctx, struct bm_btl_ofi_endpoint *ep,
                           struct bm_btl_ofi_req *req, int kind, ssize_t rc, const char *what)
{
    return rdma_posted(ctx, ep, req, kind, rc, what);
}
