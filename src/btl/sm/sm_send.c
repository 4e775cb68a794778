/* Sending and receiving over the sm transport, copy-in/copy-out. A send
 * takes a fragment from this process's own segment, copies the data in, and
 * appends it to the receiver's FIFO. The receiver hands the payload to the
 * receive callback straight from the sender's segment and then appends the
 * fragment to the sender's FIFO with the RETURN flag; when the sender finds
 * it there it runs the completion callback (the data was delivered) and the
 * fragment becomes free again. Fragments are therefore the flow control:
 * when a sender's pool is empty, alloc and sendi report out-of-resources
 * until receivers give fragments back. */
#define BM_LOG_SUBSYS "btl/sm"
#include "btl/sm/sm.h"
#include "util/clock.h"
#include "util/log.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static inline struct bm_btl_sm_module *sm_mod(struct bm_btl_module *m)
{
    return (struct bm_btl_sm_module *)m;
}

/* ---- the lock-free pool (MPI_THREAD_MULTIPLE; sm.h free_head) ------------ */

static void pool_push(struct bm_btl_sm_module *sm, int cls, uint32_t idx)
{
    uint64_t head = atomic_load_explicit(&sm->free_head[cls], memory_order_relaxed), next;
    do {
        __atomic_store_n(&sm->free_next[idx], (uint32_t)head, __ATOMIC_RELAXED);
        next = ((head >> 32) + 1) << 32 | (idx + 1);
    } while (!atomic_compare_exchange_weak_explicit(&sm->free_head[cls], &head, next,
                                                    memory_order_release, memory_order_relaxed));
}

/* The index of a free fragment of class cls, or -1. A head whose fragment
 * another thread took meanwhile has a newer count: the exchange fails and
 * the stale free_next read is dropped. */
static int64_t pool_pop(struct bm_btl_sm_module *sm, int cls)
{
    uint64_t head = atomic_load_explicit(&sm->free_head[cls], memory_order_acquire), next;
    do {
        uint32_t top = (uint32_t)head;
        if (top == 0)
            return -1;
        next =
            ((head >> 32) + 1) << 32 | __atomic_load_n(&sm->free_next[top - 1], __ATOMIC_RELAXED);
    } while (!atomic_compare_exchange_weak_explicit(&sm->free_head[cls], &head, next,
                                                    memory_order_acquire, memory_order_acquire));
    return (int64_t)(uint32_t)head - 1;
}

void bm_btl_sm_pool_move(struct bm_btl_sm_module *sm, int cls)
{
    /* Pushed bottom first: the stack's order is kept (the first-touched
     * fragments go out first). Fragments grown later go on top of those
     * still free, the reverse of free_stack's order; which free fragment
     * goes out first does not matter then. */
    for (uint32_t i = 0; i < sm->nfree[cls]; i++)
        pool_push(sm, cls, sm->free_stack[cls][i]);
    sm->nfree[cls] = 0;
}

bm_status_t bm_btl_sm_pool_mt(struct bm_btl_sm_module *sm)
{
    sm->free_next = calloc(sm->nfrags, sizeof(*sm->free_next));
    if (!sm->free_next)
        return BM_ERR_NO_MEMORY;
    for (int c = 0; c < BM_BTL_SM_NCLASS; c++) {
        atomic_store_explicit(&sm->free_head[c], 0, memory_order_relaxed);
        bm_btl_sm_pool_move(sm, c);
    }
    return BM_OK;
}

/* bm_btl_sm_frag_take under MPI_THREAD_MULTIPLE: no lock unless the class
 * must grow (the module's lock, as every change of the segment's
 * backing). */
static int64_t frag_take_mt(struct bm_btl_sm_module *sm, int cls)
{
    int64_t idx = pool_pop(sm, cls);
    if (idx < 0 &&
        __atomic_load_n(&sm->frag_ready[cls], __ATOMIC_RELAXED) < sm->ctl->frag_count[cls]) {
        bm_util_lock_take(&sm->lock);
        idx = pool_pop(sm, cls); /* another thread may have grown it */
        if (idx < 0 && sm->frag_ready[cls] < sm->ctl->frag_count[cls] &&
            bm_btl_sm_frags_grow(sm, cls, sm->frag_ready[cls] ? sm->frag_ready[cls] : 1) == BM_OK)
            idx = pool_pop(sm, cls);
        bm_util_lock_give(&sm->lock);
    }
    if (idx < 0 && cls == BM_BTL_SM_CLASS_EAGER)
        idx = pool_pop(sm, BM_BTL_SM_CLASS_MAX);
    return idx;
}

struct bm_btl_sm_frag *bm_btl_sm_frag_take(struct bm_btl_sm_module *sm, size_t size)
{
    int cls;
    if (size <= sm->config.eager_limit)
        cls = BM_BTL_SM_CLASS_EAGER;
    else if (size <= sm->config.max_send_size)
        cls = BM_BTL_SM_CLASS_MAX;
    else
        return NULL;
    if (__builtin_expect(sm->mt, 0)) {
        int64_t idx = frag_take_mt(sm, cls);
        if (idx < 0)
            return NULL;
        struct bm_btl_sm_frag *f = &sm->frags[idx];
        memset(&f->des, 0, sizeof(f->des));
        f->des.module = &sm->super;
        f->des.seg[0].addr = (unsigned char *)f->hdr + sizeof(*f->hdr);
        f->des.seg_count = 1;
        /* The peer check reads these of every fragment (sm_peer.c). */
        __atomic_store_n(&f->dest, NULL, __ATOMIC_RELAXED);
        __atomic_store_n(&f->in_flight, false, __ATOMIC_RELAXED);
        f->internal = false;
        f->amo = false;
        return f;
    }
    /* The pool grows (doubling) before a class counts as exhausted. */
    if (sm->nfree[cls] == 0 && sm->frag_ready[cls] < sm->ctl->frag_count[cls])
        bm_btl_sm_frags_grow(sm, cls, sm->frag_ready[cls] ? sm->frag_ready[cls] : 1);
    /* A large fragment can carry a small message when the small ones ran out. */
    if (sm->nfree[cls] == 0 && cls == BM_BTL_SM_CLASS_EAGER && sm->nfree[BM_BTL_SM_CLASS_MAX])
        cls = BM_BTL_SM_CLASS_MAX;
    if (sm->nfree[cls] == 0)
        return NULL;
    struct bm_btl_sm_frag *f = &sm->frags[sm->free_stack[cls][--sm->nfree[cls]]];
    memset(&f->des, 0, sizeof(f->des));
    f->des.module = &sm->super;
    f->des.seg[0].addr = (unsigned char *)f->hdr + sizeof(*f->hdr);
    f->des.seg_count = 1;
    f->dest = NULL;
    f->in_flight = false;
    f->internal = false;
    f->amo = false;
    return f;
}

static void sm_frag_put(struct bm_btl_sm_module *sm, struct bm_btl_sm_frag *f)
{
    /* A quarantined fragment goes back only when its time is up (sm_peer.c). */
    if (__builtin_expect(__atomic_load_n(&f->quarantine_until_ns, __ATOMIC_RELAXED) != 0, 0)) {
        /* Under MPI_THREAD_MULTIPLE the quarantine is the module lock's
         * (a descriptor's owner frees it under no lock). */
        bm_btl_sm_enter(sm);
        if (f->quarantine_until_ns) {
            f->freed_in_quarantine = true;
            bm_btl_sm_leave(sm);
            return;
        }
        bm_btl_sm_leave(sm);
    }
    if (__builtin_expect(sm->mt, 0))
        pool_push(sm, f->cls, (uint32_t)(f - sm->frags));
    else
        sm->free_stack[f->cls][sm->nfree[f->cls]++] = (uint32_t)(f - sm->frags);
}

void bm_btl_sm_frag_release(struct bm_btl_sm_module *sm, struct bm_btl_sm_frag *f)
{
    sm_frag_put(sm, f);
}

struct bm_btl_descriptor *bm_btl_sm_alloc(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                                          uint8_t order, size_t size, uint32_t flags)
{
    (void)ep;
    struct bm_btl_sm_frag *f = bm_btl_sm_frag_take(sm_mod(m), size);
    if (!f)
        return NULL;
    f->des.seg[0].len = size;
    f->des.flags = flags;
    f->des.order = order;
    return &f->des;
}

void bm_btl_sm_free(struct bm_btl_module *m, struct bm_btl_descriptor *des)
{
    sm_frag_put(sm_mod(m), (struct bm_btl_sm_frag *)des);
}

struct bm_btl_descriptor *bm_btl_sm_prepare_src(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                                                const void *data, size_t reserve, size_t *size,
                                                uint8_t order, uint32_t flags)
{
    struct bm_btl_sm_module *sm = sm_mod(m);
    if (reserve > sm->config.max_send_size)
        return NULL;
    size_t take = data ? *size : 0;
    if (take > sm->config.max_send_size - reserve)
        take = sm->config.max_send_size - reserve;
    struct bm_btl_descriptor *des = bm_btl_sm_alloc(m, ep, order, reserve + take, flags);
    if (!des)
        return NULL;
    if (take)
        memcpy((unsigned char *)des->seg[0].addr + reserve, data, take);
    *size = take;
    return des;
}

/* Under MPI_THREAD_MULTIPLE: the fragment just pushed to dest met dest's
 * failure. bm_btl_sm_peer_failed marks the peer failed and then looks at
 * every fragment in flight, under the module's lock; the pusher marks its
 * fragment in flight and then looks at the flag, under no lock (both
 * sequentially consistent: one of the two sees the other). Seen here: the
 * lock's holder finished its pass, so a fragment still in flight is one it
 * missed, taken out of flight here and reported as a failed send. */
static __attribute__((noinline)) int frag_push_failed(struct bm_btl_sm_module *sm,
                                                      struct bm_btl_sm_endpoint *dest,
                                                      struct bm_btl_sm_frag *f)
{
    int rc = BM_OK;
    bm_util_lock_take(&sm->lock);
    if (f->in_flight && f->dest == dest) {
        bm_btl_sm_frag_quarantine(sm, f, dest);
        rc = BM_ERR_PEER_GONE;
    }
    bm_util_lock_give(&sm->lock);
    return rc;
}

int bm_btl_sm_frag_push(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *dest,
                        struct bm_btl_sm_frag *f, size_t len, bm_btl_tag_t tag, uint8_t hdr_flags)
{
    struct bm_btl_sm_frag_hdr *hdr = f->hdr;
    hdr->len = (uint32_t)len;
    hdr->tag = tag;
    hdr->flags = hdr_flags;
    hdr->src = sm->rank;
    bool mt = sm->mt;
    if (__builtin_expect(mt, 0)) {
        __atomic_store_n(&f->dest, dest, __ATOMIC_RELAXED);
        __atomic_store_n(&f->in_flight, true, __ATOMIC_SEQ_CST);
    } else {
        f->dest = dest;
        f->in_flight = true;
    }
    bm_btl_sm_outstanding_add(dest, 1);
    bm_btl_sm_count_add(mt, &sm->in_flight, 1);
    bm_util_xproc_release();
    bm_btl_sm_fifo_push(&dest->ctl->fifo, hdr, f->rptr, bm_btl_sm_resolve, sm);
    bm_btl_sm_bell_check(sm, dest);
    if (__builtin_expect(mt, 0) && __atomic_load_n(&dest->failed, __ATOMIC_SEQ_CST))
        return frag_push_failed(sm, dest, f);
    return BM_OK;
}

bm_status_t bm_btl_sm_ep_attach_any(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep)
{
    if (__builtin_expect(!sm->mt, 1))
        return bm_btl_sm_ep_attach(sm, ep);
    if (__builtin_expect(__atomic_load_n(&sm->bases[ep->rank], __ATOMIC_ACQUIRE) != NULL, 1))
        return BM_OK;
    bm_btl_sm_enter(sm);
    bm_status_t rc = bm_btl_sm_ep_attach(sm, ep);
    bm_btl_sm_leave(sm);
    return rc;
}

int bm_btl_sm_send(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                   struct bm_btl_descriptor *des, bm_btl_tag_t tag)
{
    struct bm_btl_sm_module *sm = sm_mod(m);
    struct bm_btl_sm_frag *f = (struct bm_btl_sm_frag *)des;
    if (tag >= BM_BTL_TAG_MAX)
        return BM_ERR_BAD_PARAM;
    if (__atomic_load_n(&((struct bm_btl_sm_endpoint *)ep)->failed, __ATOMIC_RELAXED))
        return BM_ERR_PEER_GONE;
    bm_status_t rc = bm_btl_sm_ep_attach_any(sm, (struct bm_btl_sm_endpoint *)ep);
    if (rc != BM_OK)
        return rc;
    size_t len = des->seg[0].len;
    /* A caller that filled a second segment itself gets it copied in too. */
    if (des->seg_count > 1 && des->seg[1].len) {
        if (len + des->seg[1].len > f->cap)
            return BM_ERR_NOT_AVAILABLE;
        unsigned char *data = (unsigned char *)f->hdr + sizeof(*f->hdr);
        memmove(data + len, des->seg[1].addr, des->seg[1].len);
        len += des->seg[1].len;
    }
    if (len > f->cap)
        return BM_ERR_NOT_AVAILABLE;
    f->internal = false;
    return bm_btl_sm_frag_push(sm, (struct bm_btl_sm_endpoint *)ep, f, len, tag, 0);
}

/* sendi's path when the fast box cannot take the message (sm_fbox.c):
 * a fragment, copied in and appended to the receiver's FIFO. */
int bm_btl_sm_sendi_fifo(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep,
                         const void *hdr, size_t hdr_len, const void *payload, size_t payload_len,
                         uint8_t order, uint32_t flags, bm_btl_tag_t tag,
                         struct bm_btl_descriptor **des_out)
{
    (void)flags;
    if (des_out)
        *des_out = NULL;
    if (tag >= BM_BTL_TAG_MAX)
        return BM_ERR_BAD_PARAM;
    if (__atomic_load_n(&ep->failed, __ATOMIC_RELAXED))
        return BM_ERR_PEER_GONE;
    size_t len = hdr_len + payload_len;
    if (len > sm->config.max_send_size)
        return BM_ERR_NOT_AVAILABLE;
    /* A ring in use implies a mapped segment: the first message to a peer
     * comes this way. */
    bm_status_t rc = bm_btl_sm_ep_attach_any(sm, ep);
    if (rc != BM_OK)
        return rc;
    struct bm_btl_sm_frag *f = bm_btl_sm_frag_take(sm, len);
    if (!f)
        return BM_ERR_OUT_OF_RESOURCE;
    unsigned char *data = f->des.seg[0].addr;
    if (hdr_len)
        memcpy(data, hdr, hdr_len);
    if (payload_len)
        memcpy(data + hdr_len, payload, payload_len);
    f->des.order = order;
    f->internal = true;
    rc = bm_btl_sm_frag_push(sm, ep, f, len, tag, 0);
    return rc == BM_OK ? BM_BTL_DONE : rc;
}

/* One of our fragments came back: the receiver is done with it. Under
 * MPI_THREAD_MULTIPLE (mt) the bookkeeping runs under the module's lock and
 * the callback under none (bm_btl_sm_poll_fifo_mt). */
static inline __attribute__((always_inline)) void
sm_frag_returned(struct bm_btl_sm_module *sm, struct bm_btl_sm_frag_hdr *hdr, bool mt)
{
    if (mt)
        bm_util_lock_take(&sm->lock);
    struct bm_btl_sm_frag *f = &sm->frags[hdr->index];
    struct bm_btl_sm_endpoint *dest = f->dest;
    /* Already completed: its receiver was declared dead (sm_peer.c). */
    if (!f->in_flight)
        goto out;
    f->in_flight = false;
    f->dest = NULL;
    bm_btl_sm_count_add(sm->mt, &sm->in_flight, -1); /* flush polls without mt, locked */
    if (dest)
        bm_btl_sm_outstanding_add(dest, -1);
    if (f->amo) {
        const struct bm_btl_sm_amo *a = f->des.seg[0].addr; /* the target's answer */
        int status = a->status;
        struct bm_btl_sm_amo_wait w = bm_btl_sm_amo_settle(sm, f, dest, status);
        if (mt)
            bm_util_lock_give(&sm->lock);
        bm_btl_sm_amo_call(sm, dest, &w, status);
        return;
    }
    if (f->internal) {
        sm_frag_put(sm, f);
        goto out;
    }
    /* The callback may free the descriptor: read the flags first. */
    bool owned = f->des.flags & BM_BTL_DES_F_BTL_OWNED;
    bm_btl_send_cb_fn cb = f->des.cbfunc;
    if (mt)
        bm_util_lock_give(&sm->lock);
    if (cb)
        cb(&sm->super, (struct bm_btl_endpoint *)dest, &f->des, BM_OK);
    if (owned)
        sm_frag_put(sm, f); /* the pool is lock-free under mt */
    return;
out:
    if (mt)
        bm_util_lock_give(&sm->lock);
}

/* Finalize (sm->closing): a message that arrives now goes back to its
 * sender undelivered, so that the sender sees its fragment again; an
 * atomic keeps the "target could not answer" status it was sent with. */
static void sm_frag_refuse(struct bm_btl_sm_module *sm, struct bm_btl_sm_frag_hdr *hdr,
                           bm_btl_sm_rptr_t p)
{
    int src = hdr->src;
    struct bm_btl_sm_endpoint *ep = (src >= 0 && src < sm->nprocs) ? sm->all_eps[src] : NULL;
    if (!ep || !ep->ctl || bm_btl_sm_rptr_rank(p) != src)
        return;
    bm_log_debug("a message from rank %d arrived during finalize: given back undelivered", src);
    hdr->flags |= BM_BTL_SM_FRAG_F_RETURN;
    bm_btl_sm_fifo_push(&ep->ctl->fifo, hdr, p, bm_btl_sm_resolve, sm);
    bm_btl_sm_bell_check(sm, ep);
}

static void sm_frag_deliver(struct bm_btl_sm_module *sm, struct bm_btl_sm_frag_hdr *hdr,
                            bm_btl_sm_rptr_t p)
{
    struct bm_btl_module *m = &sm->super;
    int src = hdr->src;
    if (__builtin_expect(sm->closing, 0)) {
        sm_frag_refuse(sm, hdr, p);
        return;
    }
    struct bm_btl_sm_endpoint *ep = (src >= 0 && src < sm->nprocs) ? sm->eps[src] : NULL;
    if (!ep || bm_btl_sm_rptr_rank(p) != src) {
        /* Only a corrupted segment gets here; there is nobody to give it back to. */
        bm_log_ratelimited(BM_LOG_ERROR,
                           "dropped a fragment that claims to come from rank %d, which this "
                           "process does not reach over sm (shared memory corrupted?)",
                           src);
        return;
    }
    /* Whatever ep put in its fast box was sent before this fragment. */
    if (ep->fbox)
        bm_btl_sm_fbox_drain(sm, ep);
    if (hdr->flags & BM_BTL_SM_FRAG_F_ATOMIC) {
        bm_btl_sm_amo_run(hdr);
        hdr->flags |= BM_BTL_SM_FRAG_F_RETURN;
        bm_btl_sm_fifo_push(&ep->ctl->fifo, hdr, p, bm_btl_sm_resolve, sm);
        bm_btl_sm_bell_check(sm, ep);
        return;
    }
    struct bm_btl_segment seg = {(unsigned char *)hdr + sizeof(*hdr), hdr->len};
    bm_btl_tag_t tag = hdr->tag < BM_BTL_TAG_MAX ? hdr->tag : BM_BTL_TAG_BTL;
    struct bm_btl_recv_desc d = {
        .endpoint = (struct bm_btl_endpoint *)ep,
        .peer = src,
        .tag = tag,
        .seg_count = 1,
        .seg = &seg,
    };
    m->recv_cb[tag].cb(m, &d, m->recv_cb[tag].cbdata);
    hdr->flags |= BM_BTL_SM_FRAG_F_RETURN;
    bm_util_xproc_release();
    bm_btl_sm_fifo_push(&ep->ctl->fifo, hdr, p, bm_btl_sm_resolve, sm);
    bm_btl_sm_bell_check(sm, ep);
}

static inline __attribute__((always_inline)) int sm_poll_fifo(struct bm_btl_sm_module *sm,
                                                              int budget, bool mt)
{
    int n = 0;
    while (n < budget) {
        bm_btl_sm_rptr_t p = bm_btl_sm_fifo_pop(&sm->ctl->fifo, &sm->reader, bm_btl_sm_resolve, sm);
        if (p == BM_BTL_SM_RPTR_NONE)
            break;
        bm_util_xproc_acquire();
        struct bm_btl_sm_frag_hdr *hdr = bm_btl_sm_resolve(sm, p);
        /* Under MPI_THREAD_MULTIPLE one of our own fragments in our FIFO is
         * one coming back (sm never sends to its own process), told by the
         * pointer's rank, not by the header's flags, which the thread that
         * sent it wrote (under no lock: bm_btl_sm_frag_push). The
         * fragment's way through the peer orders the two in fact (release
         * and acquire in both FIFOs), but ThreadSanitizer cannot follow
         * another process; sm_frag_returned reads only the fragment's
         * index, written when the pool grew. */
        if (mt ? bm_btl_sm_rptr_rank(p) == sm->rank : (hdr->flags & BM_BTL_SM_FRAG_F_RETURN))
            sm_frag_returned(sm, hdr, mt);
        else
            sm_frag_deliver(sm, hdr, p);
        n++;
    }
    return n;
}

int bm_btl_sm_poll_fifo(struct bm_btl_sm_module *sm, int budget)
{
    return sm_poll_fifo(sm, budget, false);
}

int bm_btl_sm_poll_fifo_mt(struct bm_btl_sm_module *sm, int budget)
{
    return sm_poll_fifo(sm, budget, true);
}

/* Whether a live peer still holds one of our fragments. */
static bool sm_fragments_out(struct bm_btl_sm_module *sm)
{
    if (sm->in_flight == 0)
        return false;
    for (int r = 0; r < sm->nprocs; r++) {
        struct bm_btl_sm_endpoint *ep = sm->all_eps[r];
        if (ep && ep->outstanding > 0 && !ep->failed && !bm_btl_sm_process_ended(ep->pid))
            return true;
    }
    return false;
}

/* A peer that never mapped our segment maps it when it first meets one of
 * our fragments (the tail of a FIFO it appends to, or a message to it),
 * through our descriptor (/proc/<pid>/fd/<fd>, closed at finalize) or by the
 * name finalize removes (sm_segment.c). So finalize waits, giving back what
 * arrives, until every fragment we sent is home, or its holder is dead, or
 * SM_DRAIN_NS passed: MPI_Finalize's barrier has every rank progressing
 * by then, so the wait is a few scheduling rounds at most. When every
 * local peer has mapped us there is nothing to wait for. */
#define SM_DRAIN_NS 2000000000ull
void bm_btl_sm_fifo_drain(struct bm_btl_sm_module *sm)
{
    sm->closing = true;
    if (sm->in_flight == 0 ||
        (int)atomic_load_explicit(&sm->ctl->mapped, memory_order_acquire) >= sm->local_size - 1)
        return;
    uint64_t deadline = bm_util_clock_now_ns() + SM_DRAIN_NS;
    uint64_t next_check = 0;
    for (;;) {
        if (bm_btl_sm_poll_fifo(sm, sm->config.poll_budget) > 0)
            continue;
        if (sm->in_flight == 0)
            return;
        uint64_t now = bm_util_clock_now_ns();
        if (now >= next_check) {
            if (!sm_fragments_out(sm))
                return;
            next_check = now + 10000000ull;
        }
        if (now >= deadline) {
            bm_log_debug("finalize: %d fragments still at peers after %llu ms; a peer that "
                         "never mapped this segment cannot read them now",
                         sm->in_flight, SM_DRAIN_NS / 1000000ull);
            return;
        }
        sched_yield();
    }
}
