/* Contexts of the ofi transport: a transmit and a receive context of the
 * module's endpoint (the endpoint itself when it is not scalable) sharing one
 * completion queue, with the pool of requests that operations in flight use,
 * the fragment pools and the posted receive buffers. Everything is
 * asynchronous: an operation posts a request whose fi_context2 comes back in
 * a completion; progress reads completions, and runs each callback after the
 * context's lock is released (a callback may start the next operation on
 * the same context). Errors come from the queue's error side
 * (fi_cq_readerr) with the provider's own explanation (fi_cq_strerror) and
 * go to the transport error callback when they mean that the path to a peer
 * is broken; nothing here exits or aborts. An operation that the provider
 * has not completed within BM_BTL_OFI_TIMEOUT fails its path too (providers
 * over a black-holed TCP connection would otherwise wait for the kernel's
 * 15-minute retransmission limit). Requests we completed with an error before
 * the provider returned them wait on an abandoned list: their memory may
 * still be in the provider's hands.
 *
 * Threads: with MPI_THREAD_MULTIPLE each thread is given a context on its
 * first operation (round robin, remembered under the component's
 * thread-specific key), so threads use different endpoints and
 * locks; otherwise each peer is given one (its rank modulo the contexts),
 * which keeps the messages to one peer in order and spreads peers over the
 * contexts, and no lock is taken. */
#define BM_LOG_SUBSYS "btl/ofi"
#include "btl/ofi/ofi.h"
#include "util/clock.h"
#include "util/log.h"

#include <errno.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OFI_REQS_PER_REGION 256
#define OFI_CQ_BATCH        16
#define OFI_TIMEOUT_SCAN_NS 100000000ull /* look for overdue operations every 100 ms */

struct bm_btl_ofi_context *bm_btl_ofi_context_pick(struct bm_btl_ofi_module *m,
                                                   const struct bm_btl_ofi_endpoint *ep)
{
    if (m->nctx == 1)
        return &m->ctx[0];
    if (m->mt) {
        /* The thread's slot (1-based) under the instance's key, given on
         * its first operation. */
        struct bm_btl_ofi_component *c = m->comp;
        uintptr_t slot = (uintptr_t)pthread_getspecific(c->thread_key);
        if (!slot) {
            slot = (uintptr_t)atomic_fetch_add(&c->thread_next, 1) + 1;
            (void)pthread_setspecific(c->thread_key, (void *)slot);
        }
        return &m->ctx[(slot - 1) % (uintptr_t)m->nctx];
    }
    return &m->ctx[ep ? ep->rank % m->nctx : 0];
}

fi_addr_t bm_btl_ofi_context_dest(const struct bm_btl_ofi_context *ctx,
                                  const struct bm_btl_ofi_endpoint *ep)
{
    /* Relaxed: a probe of a failed path replaces it (ofi_module.c). */
    fi_addr_t addr = __atomic_load_n(&ep->addr, __ATOMIC_RELAXED);
    if (ep->peer_nrx <= 1)
        return addr;
    return fi_rx_addr(addr, ctx->index % ep->peer_nrx, ep->m->rx_ctx_bits);
}

int bm_btl_ofi_status_of(int fi_err)
{
    switch (fi_err) {
    case FI_ECONNREFUSED:
        return BM_ERR_CONN_REFUSED;
    case FI_ECONNRESET:
    case FI_ECONNABORTED:
    case FI_ENOTCONN:
    case FI_ESHUTDOWN:
        return BM_ERR_CONN_RESET;
    case FI_EHOSTUNREACH:
    case FI_ENETUNREACH:
    case FI_ENETDOWN:
    case FI_EHOSTDOWN:
    case FI_EADDRNOTAVAIL:
    case FI_ETIMEDOUT:
    case FI_EIO:
        return BM_ERR_LINK_DOWN;
    case FI_EACCES:
    case FI_EPERM:
    case FI_EKEYREJECTED:
        return BM_ERR_ACCESS;
    case FI_ETRUNC:
    case FI_EMSGSIZE:
        return BM_ERR_TRUNCATE;
    case FI_ECANCELED:
        return BM_ERR_CANCELED;
    case FI_ENOMEM:
        return BM_ERR_NO_MEMORY;
    case FI_EAGAIN:
        return BM_ERR_OUT_OF_RESOURCE;
    default:
        return BM_ERR_LINK_DOWN;
    }
}

/* ---- request pool ---------------------------------------------------------- */

static bool req_grow(struct bm_btl_ofi_context *ctx)
{
    struct bm_btl_ofi_module *m = ctx->m;
    struct bm_btl_ofi_region *r = calloc(1, sizeof(*r));
    size_t bytes = OFI_REQS_PER_REGION * sizeof(struct bm_btl_ofi_req);
    if (!r || posix_memalign(&r->mem, 64, bytes) != 0) {
        free(r);
        return false;
    }
    memset(r->mem, 0, bytes);
    if (m->mr_local) {
        uint64_t key;
        if (bm_btl_ofi_mr_reg_raw(m, r->mem, bytes, &r->mr, &r->desc, &key) != BM_OK) {
            free(r->mem);
            free(r);
            return false;
        }
    }
    r->next = ctx->req_regions;
    ctx->req_regions = r;
    struct bm_btl_ofi_req *v = r->mem;
    for (int i = 0; i < OFI_REQS_PER_REGION; i++) {
        v[i].desc = r->desc;
        v[i].ctx = ctx;
        bm_util_list_node_init(&v[i].link);
        v[i].pool_next = ctx->req_free;
        ctx->req_free = &v[i];
    }
    return true;
}

struct bm_btl_ofi_req *bm_btl_ofi_req_get(struct bm_btl_ofi_context *ctx, int kind)
{
    if (!ctx->req_free && !req_grow(ctx))
        return NULL;
    struct bm_btl_ofi_req *r = ctx->req_free;
    ctx->req_free = r->pool_next;
    r->kind = (uint8_t)kind;
    r->inflight = false;
    r->failed = false;
    r->reg = NULL;
    r->ep = NULL;
    return r;
}

void bm_btl_ofi_req_put(struct bm_btl_ofi_context *ctx, struct bm_btl_ofi_req *req)
{
    req->pool_next = ctx->req_free;
    ctx->req_free = req;
}

void bm_btl_ofi_req_posted(struct bm_btl_ofi_context *ctx, struct bm_btl_ofi_req *req)
{
    req->inflight = true;
    req->posted_ns = bm_util_clock_now_ns();
    bm_util_list_push_back(&ctx->inflight, &req->link);
    bm_btl_ofi_ninflight_add(ctx, 1);
}

/* ---- open and close ------------------------------------------------------------ */

static bm_status_t ctx_fail(struct bm_btl_ofi_context *ctx, const char *what, int rc)
{
    bm_log_error("%s: context %d: %s failed: %s", ctx->m->super.name, ctx->index, what,
                 fi_strerror(-rc));
    return BM_ERR_NOT_AVAILABLE;
}

bm_status_t bm_btl_ofi_context_open(struct bm_btl_ofi_module *m, int index)
{
    struct bm_btl_ofi_context *ctx = &m->ctx[index];
    ctx->m = m;
    ctx->index = index;
    pthread_mutex_init(&ctx->lock, NULL);
    bm_util_list_init(&ctx->inflight);
    /* A job whose processes may sleep (btl.h "Sleeping") asks for a queue
     * with a descriptor to sleep on; providers that have none (shm) get a
     * plain queue and the sleeper naps. Only then: a provider may signal
     * the descriptor on every completion. Only manual-progress providers:
     * with sockets (its own progress thread) and such queues, the last
     * message of MPI_Finalize's barrier was lost in 4 of 5 runs of
     * mt_progress (the peer waited forever); without them, never. */
    struct fi_cq_attr cq_attr = {
        .format = FI_CQ_FORMAT_DATA,
        .wait_obj = m->comp->sleepers && m->manual ? FI_WAIT_FD : FI_WAIT_NONE,
        .size = m->info->tx_attr->size + m->info->rx_attr->size,
    };
    ctx->wait_fd = -1;
    int rc = fi_cq_open(m->domain, &cq_attr, &ctx->cq, ctx);
    if (rc && cq_attr.wait_obj == FI_WAIT_FD) {
        bm_log_debug("%s: no completion queue with a wait descriptor (%s): a sleeping process "
                     "naps",
                     m->super.name, fi_strerror(-rc));
        cq_attr.wait_obj = FI_WAIT_NONE;
        rc = fi_cq_open(m->domain, &cq_attr, &ctx->cq, ctx);
    }
    if (rc)
        return ctx_fail(ctx, "fi_cq_open", rc);
    if (cq_attr.wait_obj == FI_WAIT_FD) {
        int fd = -1;
        if ((rc = fi_control(&ctx->cq->fid, FI_GETWAIT, &fd)) == 0)
            ctx->wait_fd = fd;
        else
            bm_log_debug("%s: the completion queue gives no wait descriptor (%s): a sleeping "
                         "process naps",
                         m->super.name, fi_strerror(-rc));
    }
    if (m->sep) {
        if ((rc = fi_tx_context(m->ep, index, NULL, &ctx->tx, ctx)))
            return ctx_fail(ctx, "fi_tx_context", rc);
        if ((rc = fi_rx_context(m->ep, index, NULL, &ctx->rx, ctx)))
            return ctx_fail(ctx, "fi_rx_context", rc);
        if ((rc = fi_ep_bind(ctx->tx, &ctx->cq->fid, FI_TRANSMIT)))
            return ctx_fail(ctx, "fi_ep_bind(tx, cq)", rc);
        if ((rc = fi_ep_bind(ctx->rx, &ctx->cq->fid, FI_RECV)))
            return ctx_fail(ctx, "fi_ep_bind(rx, cq)", rc);
        if ((rc = fi_enable(ctx->tx)))
            return ctx_fail(ctx, "fi_enable(tx)", rc);
        if ((rc = fi_enable(ctx->rx)))
            return ctx_fail(ctx, "fi_enable(rx)", rc);
    } else {
        ctx->tx = ctx->rx = m->ep;
        if ((rc = fi_ep_bind(m->ep, &ctx->cq->fid, FI_TRANSMIT | FI_RECV)))
            return ctx_fail(ctx, "fi_ep_bind(cq)", rc);
    }
    return BM_OK;
}

void bm_btl_ofi_context_close(struct bm_btl_ofi_context *ctx)
{
    /* Order matters (the notes' sleep(1) hid a violation of it): the
     * endpoints go first, so that no provider thread still reads our
     * buffers or writes completions; then the queue; our memory last. */
    int rc;
    if (ctx->m->sep) {
        if (ctx->rx && (rc = fi_close(&ctx->rx->fid)))
            bm_log_warn("%s: closing receive context %d: %s", ctx->m->super.name, ctx->index,
                        fi_strerror(-rc));
        if (ctx->tx && (rc = fi_close(&ctx->tx->fid)))
            bm_log_warn("%s: closing transmit context %d: %s", ctx->m->super.name, ctx->index,
                        fi_strerror(-rc));
    }
    ctx->rx = ctx->tx = NULL;
}

void bm_btl_ofi_context_release(struct bm_btl_ofi_context *ctx)
{
    int rc;
    if (ctx->cq && (rc = fi_close(&ctx->cq->fid)))
        bm_log_warn("%s: closing completion queue %d: %s", ctx->m->super.name, ctx->index,
                    fi_strerror(-rc));
    ctx->cq = NULL;
    bm_btl_ofi_recv_fini(ctx);
    bm_btl_ofi_fpool_fini(ctx);
    while (ctx->req_regions) {
        struct bm_btl_ofi_region *r = ctx->req_regions;
        ctx->req_regions = r->next;
        if (r->mr)
            fi_close(&r->mr->fid);
        free(r->mem);
        free(r);
    }
    ctx->req_free = NULL;
    bm_btl_defer_run(&ctx->defer, &ctx->m->super, BM_ERR_CANCELED);
    pthread_mutex_destroy(&ctx->lock);
}

/* ---- completions ------------------------------------------------------------------ */

/* The provider gave req back: unlink it. True when it still needs its
 * completion to run (false: we failed it already; it is recycled here). */
static bool req_returned(struct bm_btl_ofi_context *ctx, struct bm_btl_ofi_req *req)
{
    if (req->kind == BM_OFI_REQ_RECV)
        return true;
    bm_btl_ofi_lock(ctx);
    req->inflight = false;
    bm_util_list_remove(&req->link);
    if (!req->failed) {
        bm_btl_ofi_ninflight_add(ctx, -1);
        bm_btl_ofi_unlock(ctx);
        return true;
    }
    /* Completed with an error by us earlier: the provider is done with its
     * memory only now. */
    bm_btl_ofi_unlock(ctx);
    if (req->kind == BM_OFI_REQ_SEND) {
        bm_btl_ofi_frag_returned(
            (struct bm_btl_ofi_frag *)((char *)req - offsetof(struct bm_btl_ofi_frag, req)));
    } else {
        bm_btl_ofi_mr_release(ctx->m, req->reg);
        req->reg = NULL;
        bm_btl_ofi_lock(ctx);
        bm_btl_ofi_req_put(ctx, req);
        bm_btl_ofi_unlock(ctx);
    }
    return false;
}

static void req_dispatch(struct bm_btl_ofi_req *req, int status, void *buf, size_t len,
                         uint64_t flags)
{
    switch (req->kind) {
    case BM_OFI_REQ_SEND:
        bm_btl_ofi_send_complete(
            (struct bm_btl_ofi_frag *)((char *)req - offsetof(struct bm_btl_ofi_frag, req)),
            status);
        break;
    case BM_OFI_REQ_RECV:
        bm_btl_ofi_recv_complete((struct bm_btl_ofi_rbuf *)req, buf, len, flags);
        break;
    default:
        bm_btl_ofi_rdma_complete(req, status);
        break;
    }
}

static const char *req_kind_name(int kind)
{
    static const char *const names[] = {"a send",
                                        "a receive",
                                        "a put",
                                        "a get",
                                        "an atomic operation",
                                        "a fetching atomic",
                                        "a compare-and-swap"};
    return kind >= 0 && kind < (int)(sizeof(names) / sizeof(names[0])) ? names[kind]
                                                                       : "an operation";
}

static void ctx_error(struct bm_btl_ofi_context *ctx)
{
    struct fi_cq_err_entry err;
    memset(&err, 0, sizeof(err));
    bm_btl_ofi_lock(ctx);
    ssize_t r = fi_cq_readerr(ctx->cq, &err, 0);
    bm_btl_ofi_unlock(ctx);
    if (r != 1)
        return;
    struct bm_btl_ofi_req *req = err.op_context;
    if (!req) {
        bm_log_warn("%s: error completion without context: %s", ctx->m->super.name,
                    fi_strerror(err.err));
        return;
    }
    char pbuf[160];
    const char *pstr = fi_cq_strerror(ctx->cq, err.prov_errno, err.err_data, pbuf, sizeof(pbuf));
    int status = bm_btl_ofi_status_of(err.err);
    if (req->kind == BM_OFI_REQ_RECV) {
        struct bm_btl_ofi_rbuf *rb = (struct bm_btl_ofi_rbuf *)req;
        if (err.err == FI_ECANCELED) {
            rb->posted = false;
            return;
        }
        bm_log_ratelimited(BM_LOG_WARN, "%s: a receive failed: %s (%s); buffer posted again",
                           ctx->m->super.name, fi_strerror(err.err), pstr ? pstr : "");
        bm_btl_ofi_lock(ctx);
        rb->busy++;
        rb->unaccounted = true;
        bm_btl_ofi_unlock(ctx);
        bm_btl_ofi_recv_complete(rb, NULL, 0, FI_MULTI_RECV);
        return;
    }
    if (!req_returned(ctx, req))
        return;
    struct bm_btl_ofi_endpoint *ep = req->ep;
    bool path = bm_status_is_link(status) && ep;
    if (path) {
        char what[320];
        snprintf(what, sizeof(what), "%s to %s failed: %s (provider: %s)", req_kind_name(req->kind),
                 ep->desc, fi_strerror(err.err), pstr ? pstr : "no details");
        /* The request completes with the error first, then the path goes
         * down (which fails the rest of its operations). */
        req_dispatch(req, status, NULL, 0, 0);
        bm_btl_ofi_endpoint_fail(ep, status, what, true);
        return;
    }
    bm_log_warn("%s: an operation to %s failed: %s (provider: %s)", ctx->m->super.name,
                ep ? ep->desc : "a peer", fi_strerror(err.err), pstr ? pstr : "no details");
    req_dispatch(req, status, NULL, 0, 0);
}

static void ctx_timeouts(struct bm_btl_ofi_context *ctx, uint64_t now)
{
    uint64_t limit = (uint64_t)ctx->m->comp->cfg.timeout_ms * 1000000ull;
    for (;;) {
        struct bm_btl_ofi_endpoint *victim = NULL;
        uint64_t age = 0;
        int kind = 0;
        bm_btl_ofi_lock(ctx);
        for (struct bm_util_list_node *n = ctx->inflight.head.next; n != &ctx->inflight.head;
             n = n->next) {
            struct bm_btl_ofi_req *r = bm_util_container_of(n, struct bm_btl_ofi_req, link);
            if (r->failed || !r->ep || bm_btl_ofi_ep_failed(r->ep))
                continue;
            if (r->posted_ns + limit > now)
                break; /* the list is in posting order */
            victim = r->ep;
            age = now - r->posted_ns;
            kind = r->kind;
            break;
        }
        bm_btl_ofi_unlock(ctx);
        if (!victim)
            return;
        char what[256];
        snprintf(what, sizeof(what),
                 "%s got no completion from the provider for %.1f s (BM_BTL_OFI_TIMEOUT=%d ms): "
                 "the network path to %s is presumed dead",
                 req_kind_name(kind), (double)age / 1e9, ctx->m->comp->cfg.timeout_ms,
                 victim->desc);
        bm_btl_ofi_endpoint_fail(victim, BM_ERR_TIMEOUT, what, true);
    }
}

int bm_btl_ofi_context_progress(struct bm_btl_ofi_context *ctx)
{
    struct fi_cq_data_entry ent[OFI_CQ_BATCH];
    int done = 0;
    for (;;) {
        /* Whoever holds the lock drains the queue; the others move on. */
        if (!bm_btl_ofi_trylock(ctx))
            break;
        struct bm_btl_defer_queue q = ctx->defer;
        ctx->defer.head = ctx->defer.tail = NULL;
        ssize_t n = fi_cq_read(ctx->cq, ent, OFI_CQ_BATCH);
        /* A multi-receive buffer may hold messages that another thread is
         * still handing over when its release is read here: count them. */
        for (ssize_t i = 0; i < n; i++) {
            struct bm_btl_ofi_req *req = ent[i].op_context;
            if (req && req->kind == BM_OFI_REQ_RECV)
                bm_btl_ofi_recv_read((struct bm_btl_ofi_rbuf *)req, ent[i].buf, ent[i].len);
        }
        bool check = false;
        uint64_t now = 0;
        if (n < OFI_CQ_BATCH && bm_btl_ofi_ninflight(ctx) > 0 && ctx->m->comp->cfg.timeout_ms > 0) {
            now = bm_util_clock_now_ns();
            check = now >= ctx->next_timeout_check;
            if (check)
                ctx->next_timeout_check = now + OFI_TIMEOUT_SCAN_NS;
        }
        bm_btl_ofi_unlock(ctx);
        if (q.head)
            done += bm_btl_defer_run(&q, &ctx->m->super, BM_OK);
        if (n == -FI_EAVAIL) {
            ctx_error(ctx);
            done++;
            continue;
        }
        for (ssize_t i = 0; i < n; i++) {
            struct bm_btl_ofi_req *req = ent[i].op_context;
            if (!req || !req_returned(ctx, req))
                continue;
            req_dispatch(req, BM_OK, ent[i].buf, ent[i].len, ent[i].flags);
        }
        if (n > 0)
            done += (int)n;
        else if (n != -FI_EAGAIN && n != 0)
            bm_log_ratelimited(BM_LOG_WARN, "%s: reading completions failed: %s",
                               ctx->m->super.name, fi_strerror((int)-n));
        if (check)
            ctx_timeouts(ctx, bm_util_clock_now_ns()); /* callbacks above may have posted */
        if (n < OFI_CQ_BATCH)
            break;
    }
    return done;
}

void bm_btl_ofi_context_drive(struct bm_btl_ofi_context *ctx)
{
    /* A read of no entries runs the provider's progress (manual-progress
     * providers free send room only then) and leaves every completion in
     * the queue for progress: an operation never calls back from inside
     * itself (btl.h "Threads"), and the messages of a peer are handed over
     * by one thread, in order. A thread that finds the lock taken leaves
     * it to the holder. */
    if (!bm_btl_ofi_trylock(ctx))
        return;
    (void)fi_cq_read(ctx->cq, NULL, 0);
    bm_btl_ofi_unlock(ctx);
}

void bm_btl_ofi_context_fail_all(struct bm_btl_ofi_context *ctx, struct bm_btl_ofi_endpoint *ep,
                                 int status)
{
    /* Collect under the lock, complete outside it: callbacks may post. */
    for (;;) {
        struct bm_btl_ofi_req *victim = NULL;
        struct bm_btl_ofi_req copy;
        bm_btl_ofi_lock(ctx);
        for (struct bm_util_list_node *n = ctx->inflight.head.next; n != &ctx->inflight.head;
             n = n->next) {
            struct bm_btl_ofi_req *r = bm_util_container_of(n, struct bm_btl_ofi_req, link);
            if (!r->failed && (!ep || r->ep == ep)) {
                victim = r;
                r->failed = true;
                bm_btl_ofi_ninflight_add(ctx, -1);
                /* Once unlocked the provider may return it on another
                 * thread, which recycles it: the callback works on a copy. */
                copy = *r;
                break;
            }
        }
        bm_btl_ofi_unlock(ctx);
        if (!victim)
            return;
        /* The callback runs now; the request itself waits for the provider. */
        switch (victim->kind) {
        case BM_OFI_REQ_SEND:
            bm_btl_ofi_send_complete(
                (struct bm_btl_ofi_frag *)((char *)victim - offsetof(struct bm_btl_ofi_frag, req)),
                status);
            break;
        default:
            copy.inflight = true; /* never recycled from here */
            bm_btl_ofi_rdma_complete(&copy, status);
            break;
        }
    }
}

bool bm_btl_ofi_context_drain(struct bm_btl_ofi_context *ctx, int timeout_ms)
{
    /* Cancel the posted receives: the provider must give their buffers back
     * before we free them. */
    for (int i = 0; i < ctx->nrbufs; i++)
        if (ctx->rbufs[i].posted)
            (void)fi_cancel(&ctx->rx->fid, &ctx->rbufs[i].req.fctx);
    uint64_t deadline = bm_util_clock_ns() + (uint64_t)timeout_ms * 1000000ull;
    for (;;) {
        bool busy = bm_btl_ofi_ninflight(ctx) > 0;
        for (int i = 0; i < ctx->nrbufs && !busy; i++)
            busy = ctx->rbufs[i].posted;
        if (!busy)
            return true;
        if (bm_util_clock_ns() > deadline)
            return false;
        bm_btl_ofi_context_progress(ctx);
    }
}
