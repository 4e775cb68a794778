/* Delivery acknowledgements of the ofi transport. The transport contract
 * says a send completes successfully only when the data was delivered, so
 * that the PML resends exactly what a failed path lost. Over the socket
 * providers a completion does not prove that: measured with tcp;ofi_rxm
 * (libfabric 1.17), messages below its eager size complete with
 * FI_DELIVERY_COMPLETE once the kernel took them, and a link black-holed at
 * that moment loses them with a success already reported (8 of ~340 in a
 * stream, and the PML then waits forever for them). On such providers
 * (BM_BTL_OFI_ACKS=auto: software providers over a network) we confirm
 * delivery ourselves, as the tcp transport does:
 *   - each context's sends to a peer form a stream; a tracked message (every
 *     descriptor send) carries its number in the stream (hdr.seq), and
 *     stays on the stream's unacknowledged list after the provider's
 *     completion;
 *   - the receiver remembers the highest number seen per peer stream (the
 *     provider keeps send-after-send order within a stream) and owes an
 *     acknowledgement, which rides on its next message to that peer
 *     (hdr.ack_ctx/hdr.ack) or, when none left within one more progress
 *     call, goes as a short BM_BTL_OFI_CTL_ACK by inject;
 *   - an acknowledgement completes every message of the stream up to its
 *     number whose provider completion arrived; the callback runs then.
 * When the path fails, messages still waiting complete with the error (the
 * peer may have some of them: the PML drops duplicates). Untracked
 * messages (sendi, transport messages) carry acknowledgements but need
 * none. Providers whose completions do prove delivery (NICs, shm) skip all
 * of this: the header fields stay zero. So do, under auto, our messages to a
 * peer on this node whose connection goes through lo (same IP address, or
 * both loopback ones): the loss above needs a path that drops what the
 * kernel took, and lo delivers into the peer's socket inside the send or
 * keeps it queued on ours, where only the death of one of the two
 * processes loses it (and then no other path could resend it either). Such
 * a peer still acknowledges whatever numbered messages come to it, so the
 * two sides need not decide alike. BM_BTL_OFI_ACKS=on numbers them too. */
#define BM_LOG_SUBSYS "btl/ofi"
#include "btl/ofi/ofi.h"
#include "util/log.h"

#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <stdlib.h>
#include <string.h>

#define OFI_ACK_EVERY 32 /* an acknowledgement at least every this many messages */
/* Progress calls an owed acknowledgement waits for a reply to carry it. The
 * call that received the message counts as the first (its flush runs after
 * the completions), so 2 leaves one whole call: with 1, a ping-pong of 1 KiB
 * messages over tcp;ofi_rxm sent a separate CTL_ACK for every other message
 * (1050 of 2100; 722 with 2, 525 with 3, 393 with 5, one run each at load
 * 9: the replies do not all leave within one call, and the cause is not
 * found). Longer waits delay the completion of a tracked send towards a
 * peer that does not reply. */
#define OFI_ACK_GRACE 2

static inline struct bm_btl_ofi_frag *frag_of_link(struct bm_util_list_node *n)
{
    return bm_util_container_of(n, struct bm_btl_ofi_frag, ack_link);
}

bm_status_t bm_btl_ofi_ack_ep_init(struct bm_btl_ofi_endpoint *ep, bool same_host)
{
    struct bm_btl_ofi_module *m = ep->m;
    if (!m->acks)
        return BM_OK;
    ep->rx_seq = calloc(BM_OFI_MAX_CTX, sizeof(*ep->rx_seq));
    if (!ep->rx_seq)
        return BM_ERR_NO_MEMORY;
    if (same_host && !m->acks_same_host)
        return BM_OK; /* our messages to it go unnumbered (file comment) */
    ep->tx = calloc((size_t)m->nctx, sizeof(*ep->tx));
    if (!ep->tx) {
        bm_btl_ofi_ack_ep_fini(ep);
        return BM_ERR_NO_MEMORY;
    }
    for (int c = 0; c < m->nctx; c++)
        bm_util_list_init(&ep->tx[c].unacked);
    return BM_OK;
}

void bm_btl_ofi_ack_ep_fini(struct bm_btl_ofi_endpoint *ep)
{
    free(ep->tx);
    free((void *)ep->rx_seq);
    ep->tx = NULL;
    ep->rx_seq = NULL;
}

/* An acknowledgement owed to ep: it goes on the module's list once. */
static void ack_owe(struct bm_btl_ofi_endpoint *ep, unsigned stream)
{
    atomic_fetch_or(&ep->ack_due, (uint64_t)1 << stream);
    if (atomic_exchange(&ep->ack_listed, true))
        return;
    struct bm_btl_ofi_module *m = ep->m;
    pthread_mutex_lock(&m->ack_lock);
    m->ack_list[m->nack_list++] = ep;
    pthread_mutex_unlock(&m->ack_lock);
}

void bm_btl_ofi_ack_hdr(struct bm_btl_ofi_context *ctx, struct bm_btl_ofi_endpoint *ep,
                        struct bm_btl_ofi_hdr *h, bm_btl_tag_t tag, bool tracked)
{
    struct bm_btl_ofi_module *m = ctx->m;
    h->src_rank = (uint32_t)m->comp->rank;
    h->tag = tag;
    h->magic = BM_BTL_OFI_HDR_MAGIC;
    h->src_mod = (uint16_t)m->index;
    h->seq = 0;
    h->ack = 0;
    h->ctx = (uint8_t)ctx->index;
    h->ack_ctx = 0;
    h->flags = 0;
    h->reserved = 0;
    h->reserved2 = 0;
    if (!m->acks)
        return;
    if (tracked && ep->tx)
        h->seq = ++ep->tx[ctx->index].tx_seq;
    /* Piggyback one owed acknowledgement (the lowest stream that is due). */
    uint64_t due = atomic_load_explicit(&ep->ack_due, memory_order_relaxed);
    if (due) {
        unsigned k = (unsigned)__builtin_ctzll(due);
        atomic_fetch_and(&ep->ack_due, ~((uint64_t)1 << k));
        h->ack_ctx = (uint8_t)k;
        h->ack = atomic_load_explicit(&ep->rx_seq[k], memory_order_relaxed);
        h->flags |= BM_BTL_OFI_HDR_F_ACK;
        if (tag != BM_BTL_TAG_BTL)
            BM_OFI_COUNT(m, acks_piggybacked);
    }
}

void bm_btl_ofi_ack_unsent(struct bm_btl_ofi_endpoint *ep, const struct bm_btl_ofi_hdr *h)
{
    if (h->flags & BM_BTL_OFI_HDR_F_ACK)
        ack_owe(ep, h->ack_ctx);
}

void bm_btl_ofi_ack_track(struct bm_btl_ofi_context *ctx, struct bm_btl_ofi_endpoint *ep,
                          struct bm_btl_ofi_frag *f)
{
    f->seq = f->hdr.seq;
    f->prov_done = false;
    f->acked = false;
    if (f->seq)
        bm_util_list_push_back(&ep->tx[ctx->index].unacked, &f->ack_link);
}

bool bm_btl_ofi_ack_provider_done(struct bm_btl_ofi_frag *f)
{
    if (!f->seq)
        return true;
    struct bm_btl_ofi_context *ctx = f->req.ctx;
    bm_btl_ofi_lock(ctx);
    f->prov_done = true;
    bool now = f->acked;
    bm_btl_ofi_unlock(ctx);
    return now;
}

void bm_btl_ofi_ack_untrack(struct bm_btl_ofi_frag *f)
{
    if (!f->seq)
        return;
    struct bm_btl_ofi_context *ctx = f->req.ctx;
    bm_btl_ofi_lock(ctx);
    bm_util_list_remove(&f->ack_link);
    f->seq = 0;
    bm_btl_ofi_unlock(ctx);
}

void bm_btl_ofi_ack_apply(struct bm_btl_ofi_endpoint *ep, unsigned stream, uint32_t seq)
{
    struct bm_btl_ofi_module *m = ep->m;
    if (!ep->tx || stream >= (unsigned)m->nctx)
        return;
    struct bm_btl_ofi_context *ctx = &m->ctx[stream];
    struct bm_util_list done;
    bm_util_list_init(&done);
    bm_btl_ofi_lock(ctx);
    struct bm_util_list *l = &ep->tx[stream].unacked;
    while (!bm_util_list_empty(l)) {
        struct bm_btl_ofi_frag *f = frag_of_link(bm_util_list_first(l));
        /* Numbers are compared as a sequence that wraps. */
        if ((int32_t)(f->seq - seq) > 0)
            break;
        bm_util_list_remove(&f->ack_link);
        f->acked = true;
        if (f->prov_done) {
            f->seq = 0;
            bm_util_list_push_back(&done, &f->ack_link);
        }
    }
    bm_btl_ofi_unlock(ctx);
    while (!bm_util_list_empty(&done)) {
        struct bm_util_list_node *n = bm_util_list_pop_front(&done);
        bm_btl_ofi_send_finish(frag_of_link(n), BM_OK);
    }
}

void bm_btl_ofi_ack_received(struct bm_btl_ofi_endpoint *ep, const struct bm_btl_ofi_hdr *h)
{
    if (!ep->rx_seq)
        return;
    if (h->flags & BM_BTL_OFI_HDR_F_ACK)
        bm_btl_ofi_ack_apply(ep, h->ack_ctx, h->ack);
    if (h->seq && h->ctx < BM_OFI_MAX_CTX) {
        /* Highest number seen: a stream arrives in order, and numbers lost
         * with a failed path were reported failed to the sender already. */
        _Atomic uint32_t *r = &ep->rx_seq[h->ctx];
        uint32_t cur = atomic_load_explicit(r, memory_order_relaxed);
        while ((int32_t)(h->seq - cur) > 0 &&
               !atomic_compare_exchange_weak_explicit(r, &cur, h->seq, memory_order_relaxed,
                                                      memory_order_relaxed))
            ;
        ack_owe(ep, h->ctx);
        /* A long one-way stream: do not let the sender wait for a lull. */
        if (h->seq % OFI_ACK_EVERY == 0)
            ep->ack_wait = OFI_ACK_GRACE;
    }
}

void bm_btl_ofi_ack_fail(struct bm_btl_ofi_endpoint *ep, int status)
{
    struct bm_btl_ofi_module *m = ep->m;
    if (!ep->tx)
        return;
    for (int c = 0; c < m->nctx; c++) {
        struct bm_btl_ofi_context *ctx = &m->ctx[c];
        struct bm_util_list done;
        bm_util_list_init(&done);
        bm_btl_ofi_lock(ctx);
        struct bm_util_list *l = &ep->tx[c].unacked;
        /* Fragments the provider still holds complete through the failure
         * of what is in flight; here only those it already returned. */
        struct bm_util_list_node *n = bm_util_list_first(l);
        while (n) {
            struct bm_util_list_node *next = bm_util_list_next(l, n);
            struct bm_btl_ofi_frag *f = frag_of_link(n);
            if (f->prov_done) {
                bm_util_list_remove(&f->ack_link);
                f->seq = 0;
                bm_util_list_push_back(&done, &f->ack_link);
            }
            n = next;
        }
        bm_btl_ofi_unlock(ctx);
        while (!bm_util_list_empty(&done))
            bm_btl_ofi_send_finish(frag_of_link(bm_util_list_pop_front(&done)), status);
    }
}

static void ack_send(struct bm_btl_ofi_endpoint *ep, unsigned stream)
{
    struct bm_btl_ofi_module *m = ep->m;
    struct bm_btl_ofi_context *ctx = bm_btl_ofi_context_pick(m, ep);
    struct {
        struct bm_btl_ofi_hdr h;
        struct bm_btl_ofi_ctl_msg msg;
    } pkt;
    bm_btl_ofi_lock(ctx);
    bm_btl_ofi_ack_hdr(ctx, ep, &pkt.h, BM_BTL_TAG_BTL, false);
    bm_btl_ofi_unlock(ctx);
    memset(&pkt.msg, 0, sizeof(pkt.msg));
    pkt.msg.ctl = BM_BTL_OFI_CTL_ACK;
    pkt.msg.ctx = (uint8_t)stream;
    pkt.msg.seq = atomic_load_explicit(&ep->rx_seq[stream], memory_order_relaxed);
    if (bm_btl_ofi_send_inject(ctx, ep, &pkt, sizeof(pkt)) != BM_OK) {
        ack_owe(ep, stream); /* again at the next flush */
        bm_btl_ofi_ack_unsent(ep, &pkt.h);
    } else {
        BM_OFI_COUNT(m, acks_sent);
    }
}

static void ack_flush(struct bm_btl_ofi_module *m, bool force)
{
    if (!m->acks || !m->nack_list)
        return;
    struct bm_btl_ofi_endpoint *now[64];
    int n = 0;
    pthread_mutex_lock(&m->ack_lock);
    for (int i = 0; i < m->nack_list;) {
        struct bm_btl_ofi_endpoint *ep = m->ack_list[i];
        uint64_t due = atomic_load_explicit(&ep->ack_due, memory_order_relaxed);
        if (!due) { /* went out with a message meanwhile */
            atomic_store(&ep->ack_listed, false);
            m->ack_list[i] = m->ack_list[--m->nack_list];
            continue;
        }
        /* One progress call of grace: a reply usually carries it. */
        if ((!force && ep->ack_wait++ < OFI_ACK_GRACE) || n == 64) {
            i++;
            continue;
        }
        ep->ack_wait = 0;
        atomic_store(&ep->ack_listed, false);
        m->ack_list[i] = m->ack_list[--m->nack_list];
        now[n++] = ep;
    }
    pthread_mutex_unlock(&m->ack_lock);
    for (int i = 0; i < n; i++) {
        uint64_t due = atomic_exchange(&now[i]->ack_due, 0);
        while (due) {
            unsigned k = (unsigned)__builtin_ctzll(due);
            due &= due - 1;
            ack_send(now[i], k);
        }
    }
}

void bm_btl_ofi_ack_flush(struct bm_btl_ofi_module *m)
{
    ack_flush(m, false);
}

void bm_btl_ofi_ack_flush_all(struct bm_btl_ofi_module *m)
{
    if (!m->acks || !m->ctx)
        return;
    /* Everything owed, at once; then drive the provider a little so that
     * the injected acknowledgements leave before the process does. */
    while (m->nack_list) {
        int before = m->nack_list;
        ack_flush(m, true);
        if (m->nack_list >= before)
            break;
    }
    for (int i = 0; i < 16; i++)
        for (int c = 0; c < m->nctx; c++)
            if (m->ctx[c].cq)
                (void)fi_cq_read(m->ctx[c].cq, NULL, 0);
}
