/* The send side of the dgram engine: the PML's send, put and get
 * entry points, memory registration for the emulated RDMA, and send
 * progression in the order of the usnic notes: pending retransmissions
 * first (always on the data channel, so a retransmit storm cannot starve
 * ACKs), then endpoints that are ready to send (fragments queued, send
 * credits left, window open), then standalone ACKs whose delay expired.
 * Every sequenced segment goes through post_segment, which assigns its
 * sequence number, piggy-backs the current ACK and starts its timer. */
#define BM_LOG_SUBSYS "btl/dgram"
#include "btl/dgram/dgram.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

void bm_btl_dgram_post(struct bm_btl_dgram_module *m, int ch,
                       const struct bm_btl_dgram_endpoint *ep, const void *hdr, size_t hdr_len,
                       const void *payload, size_t payload_len)
{
    struct bm_btl_dgram_channel *c = &m->ch[ch];
    if (c->tx_count == c->tx_max)
        bm_btl_dgram_flush_channel(m, ch);
    struct bm_btl_dgram_txslot *s = &c->tx[c->tx_count++];
    s->whole = NULL;
    memcpy(s->hdr, hdr, hdr_len);
    s->hdr_len = hdr_len;
    s->payload = payload;
    s->payload_len = payload_len;
    s->to = &ep->to[ch];
    s->to_wire = ep->wire_addr[ch];
    s->gso_ok = ep->mtu[ch] <= BM_DGRAM_MAX_DATAGRAM / 2;
    struct bm_dgram_hdr *h = (struct bm_dgram_hdr *)s->hdr;
    h->checksum = 0;
    if (m->cfg.auth) {
        /* The MAC also detects corruption: no CRC on top of it. */
        h->flags |= BM_DGRAM_F_MAC;
        h->job_key = 0;
        h->job_key =
            bm_btl_dgram_mac(ep->mac_key, ep->nh_key, s->hdr, hdr_len, payload, payload_len);
    } else if (m->cfg.checksum) {
        uint32_t sum = bm_btl_dgram_checksum2(s->hdr, hdr_len, payload, payload_len);
        h->checksum = sum ? sum : 1;
    }
}

static double inject_rand(struct bm_btl_dgram_module *m)
{
    /* xorshift64*: deterministic for a given BM_BTL_DGRAM_SEED */
    uint64_t x = m->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    m->rng = x;
    return (double)((x * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0;
}

static void slot_copy_whole(const struct bm_btl_dgram_txslot *s, uint8_t *dst)
{
    memcpy(dst, s->whole ? s->whole : s->hdr, s->hdr_len);
    if (s->payload_len)
        memcpy(dst + s->hdr_len, s->payload, s->payload_len);
}

/* The debug fault injection, on the send path and for every wire: drop,
 * duplicate, corrupt (one flipped byte in a copy) or hold back one datagram
 * to send it after later ones. Rewrites the channel's batch in place. */
static void inject_faults(struct bm_btl_dgram_module *m, int c)
{
    struct bm_btl_dgram_channel *ch = &m->ch[c];
    const struct bm_btl_dgram_config *cfg = &m->cfg;
    if (cfg->corrupt > 0 && !m->inject_buf) {
        m->inject_buf = malloc(2 * (size_t)ch->tx_max * m->ch[BM_DGRAM_CH_DATA].mtu);
        if (!m->inject_buf)
            return;
    }
    bool release_held = m->held_len && m->held_ch == c;
    unsigned n = 0, ncorrupt = 0;
    for (unsigned i = 0; i < ch->tx_count; i++) {
        struct bm_btl_dgram_txslot *s = &ch->tx[i];
        if (m->inject_next_n &&
            ((const struct bm_dgram_hdr *)(s->whole ? s->whole : s->hdr))->type ==
                m->inject_next_type) {
            m->inject_next_n--;
            m->stats.injected_drop++;
            continue;
        }
        if (cfg->drop_above && s->hdr_len + s->payload_len > cfg->drop_above) {
            m->stats.injected_drop_big++;
            continue;
        }
        if (cfg->drop > 0 && inject_rand(m) < cfg->drop) {
            m->stats.injected_drop++;
            continue;
        }
        if (cfg->reorder > 0 && m->held_len == 0 && inject_rand(m) < cfg->reorder) {
            slot_copy_whole(s, m->held);
            m->held_len = s->hdr_len + s->payload_len;
            m->held_ch = c;
            m->held_to = *s->to;
            m->held_to_wire = s->to_wire;
            m->stats.injected_reorder++;
            continue;
        }
        int copies = 1;
        if (cfg->dup > 0 && inject_rand(m) < cfg->dup) {
            m->stats.injected_dup++;
            copies = 2;
        }
        for (int k = 0; k < copies; k++) {
            struct bm_btl_dgram_txslot *d = &m->inject_tmp[n++];
            *d = *s;
            if (cfg->corrupt > 0 && inject_rand(m) < cfg->corrupt) {
                uint8_t *cb = m->inject_buf + (size_t)ncorrupt++ * m->ch[BM_DGRAM_CH_DATA].mtu;
                size_t len = s->hdr_len + s->payload_len;
                slot_copy_whole(s, cb);
                size_t at = (size_t)(inject_rand(m) * (double)len);
                cb[at < len ? at : len - 1] ^= (uint8_t)(1u + (unsigned)(inject_rand(m) * 254.0));
                d->whole = cb;
                d->hdr_len = len;
                d->payload = NULL;
                d->payload_len = 0;
                m->stats.injected_corrupt++;
            }
        }
    }
    if (release_held) {
        /* the datagram held back by an earlier batch goes out behind this one */
        struct bm_btl_dgram_txslot *d = &m->inject_tmp[n++];
        memset(d, 0, sizeof(*d));
        d->whole = m->held;
        d->hdr_len = m->held_len;
        d->to = &m->held_to;
        d->to_wire = m->held_to_wire;
    }
    for (unsigned i = 0; i < n; i++)
        ch->tx[i] = m->inject_tmp[i];
    ch->tx_count = n;
}

void bm_btl_dgram_flush_channel(struct bm_btl_dgram_module *m, int c)
{
    const struct bm_btl_dgram_config *cfg = &m->cfg;
    bool held_here = m->held_len && m->held_ch == c;
    if (cfg->drop > 0 || cfg->dup > 0 || cfg->reorder > 0 || cfg->corrupt > 0 || cfg->drop_above ||
        held_here || m->inject_next_n) {
        size_t before = m->held_len;
        inject_faults(m, c);
        m->wire->flush(m, c);
        if (held_here && m->held_len == before)
            m->held_len = 0; /* it was sent */
        return;
    }
    m->wire->flush(m, c);
}

void bm_btl_dgram_inject_drop_next(struct bm_btl_dgram_module *m, unsigned type, uint32_t n)
{
    bm_btl_dgram_lock(m);
    m->inject_next_type = (uint8_t)type;
    m->inject_next_n = n;
    bm_btl_dgram_unlock(m);
}

static void fill_base(struct bm_btl_dgram_endpoint *ep, struct bm_dgram_hdr *h, unsigned type)
{
    struct bm_btl_dgram_module *m = ep->module;
    bm_dgram_hdr_init(h, type, (uint32_t)m->rank, m->job_key, m->addr.index, ep->peer_index);
    h->snd_session = ep->snd_session;
}

/* (Re)transmit one sequenced segment on channel ch and start its timer. */
static void seg_transmit(struct bm_btl_dgram_endpoint *ep, struct bm_btl_dgram_seg *s, int ch)
{
    struct bm_btl_dgram_module *m = ep->module;
    struct bm_btl_dgram_frag *f = s->frag;
    uint8_t buf[BM_DGRAM_MAX_HDR];
    struct bm_dgram_hdr *h = (struct bm_dgram_hdr *)buf;
    size_t hlen = bm_dgram_hdr_len(s->type);
    fill_base(ep, h, s->type);
    h->seq = s->seq;
    h->tag = f->tag;
    h->payload_len = (uint16_t)s->len;
    if (hlen > sizeof(*h)) {
        struct bm_dgram_chunk *c = (struct bm_dgram_chunk *)(h + 1);
        memset(c, 0, sizeof(*c));
        c->frag_id = f->frag_id;
        c->frag_size = s->type == BM_DGRAM_T_GET_REQ ? f->req_size : (uint32_t)f->len;
        c->offset = s->offset;
        if (s->offset + s->len == f->len)
            h->flags |= BM_DGRAM_F_LAST;
        if (hlen == BM_DGRAM_MAX_HDR) {
            struct bm_dgram_rdma *r = (struct bm_dgram_rdma *)(c + 1);
            r->addr = f->raddr;
            r->key = f->rkey;
        }
    }
    bm_btl_dgram_ack_fill(ep, h);
    const uint8_t *payload = NULL;
    if (s->len)
        payload = f->data1 && s->offset >= f->len0 ? f->data1 + (s->offset - f->len0)
                                                   : f->data + s->offset;
    bm_btl_dgram_post(m, ch, ep, buf, hlen, payload, s->len);
    s->xmits++;
    s->sent_ns = m->now_ns;
    s->ch = (uint8_t)ch;
    if (ch == BM_DGRAM_CH_DATA && !s->charged) { /* until ACKed (bm_btl_dgram_seg_put) */
        s->charged = (uint32_t)(hlen + s->len);
        ep->flight_bytes += s->charged;
        if (ep->flight_bytes > m->stats.flight_peak)
            m->stats.flight_peak = ep->flight_bytes;
    }
    bm_btl_dgram_timer_start(m, s);
}

/* Cut the next segment of fragment f and post it. Returns the segment's
 * channel, or -1 when no segment could be allocated. */
static int frag_post_next(struct bm_btl_dgram_endpoint *ep, struct bm_btl_dgram_frag *f)
{
    struct bm_btl_dgram_module *m = ep->module;
    struct bm_btl_dgram_seg *s;
    unsigned type;
    if (bm_util_hotel_occupied(&m->hotel) >= m->hotel.nrooms)
        return -1; /* no timer for a new segment: wait for ACKs */
    int ch = BM_DGRAM_CH_DATA;
    size_t len;
    size_t base = sizeof(struct bm_dgram_hdr);
    bool whole = f->segs_cut == 0 && !f->data1 &&
                 (f->kind == BM_DGRAM_FK_SEND || f->kind == BM_DGRAM_FK_INTERNAL) &&
                 f->len + base <= ep->mtu[BM_DGRAM_CH_DATA];
    if (whole) {
        s = &f->small;
        type = BM_DGRAM_T_FRAG;
        len = f->len;
        if (f->len + base <= ep->mtu[BM_DGRAM_CH_PRIO])
            ch = BM_DGRAM_CH_PRIO;
        m->stats.frags_sent++;
        ep->pstats.units_sent++;
    } else {
        switch (f->kind) {
        case BM_DGRAM_FK_PUT:
            type = BM_DGRAM_T_PUT;
            break;
        case BM_DGRAM_FK_GET_REQ:
            type = BM_DGRAM_T_GET_REQ;
            break;
        case BM_DGRAM_FK_GET_DATA:
            type = BM_DGRAM_T_GET_DATA;
            break;
        case BM_DGRAM_FK_GET_NAK:
            type = BM_DGRAM_T_GET_NAK;
            break;
        default:
            type = BM_DGRAM_T_CHUNK;
            break;
        }
        size_t room = ep->mtu[BM_DGRAM_CH_DATA] - bm_dgram_hdr_len(type);
        len = f->len - f->next_off;
        if (len > room)
            len = room;
        if (f->data1 && f->next_off < f->len0 && len > f->len0 - f->next_off)
            len = f->len0 - f->next_off; /* a segment's payload is one piece */
        if (f->segs_cut == 0 && (f->kind == BM_DGRAM_FK_SEND || f->kind == BM_DGRAM_FK_INTERNAL))
            f->frag_id = ep->next_frag_id++;
        s = f->segs_cut == 0 && len == f->len ? &f->small : bm_btl_dgram_seg_get(m);
        if (!s)
            return -1;
        m->stats.chunks_sent++;
        ep->pstats.units_sent++;
    }
    s->frag = f;
    s->ep = ep;
    s->type = (uint8_t)type;
    s->offset = (uint32_t)f->next_off;
    s->len = (uint32_t)len;
    s->xmits = 0;
    s->seq = ep->snd_next++;
    if (s->seq == ep->snd_una)
        ep->progress_ns = m->now_ns; /* the window was empty: the failure clock starts now */
    ep->win[s->seq & (uint16_t)(m->cfg.window - 1)] = s;
    uint16_t occ = (uint16_t)(ep->snd_next - ep->snd_una);
    if (occ > m->stats.window_max)
        m->stats.window_max = occ;
    f->next_off += len;
    f->segs_cut++;
    f->segs_out++;
    seg_transmit(ep, s, ch);
    return ch;
}

static inline bool frag_fully_cut(const struct bm_btl_dgram_frag *f)
{
    return f->segs_cut > 0 && f->next_off >= f->len;
}

/* Post up to credits segments of ep's queued fragments. Returns segments posted. */
static int ep_push(struct bm_btl_dgram_endpoint *ep, int credits)
{
    int n = 0;
    while (n < credits && ep->state == BM_DGRAM_EP_OK) {
        struct bm_util_queue_node *q = bm_util_queue_peek(&ep->sendq);
        if (!q)
            break;
        if (!bm_btl_dgram_window_open(ep)) {
            ep->module->stats.window_full++;
            break;
        }
        struct bm_btl_dgram_frag *f = bm_util_container_of(q, struct bm_btl_dgram_frag, qlink);
        if (frag_post_next(ep, f) < 0)
            break;
        n++;
        if (frag_fully_cut(f)) {
            bm_util_queue_pop(&ep->sendq);
            f->queued = false;
        }
    }
    return n;
}

void bm_btl_dgram_endpoint_check_ready(struct bm_btl_dgram_endpoint *ep)
{
    if (ep->state == BM_DGRAM_EP_OK && !bm_util_queue_empty(&ep->sendq) &&
        bm_btl_dgram_window_open(ep) && !bm_util_list_node_linked(&ep->ready_link))
        bm_util_list_push_back(&ep->module->ready, &ep->ready_link);
}

void bm_btl_dgram_enqueue(struct bm_btl_dgram_endpoint *ep, struct bm_btl_dgram_frag *f)
{
    bool no_window = false;
    if (!ep->sent_once) {
        /* The send window and timer rooms follow the peers this process
         * talks to: made for every peer at add_procs they cost 40 KiB per
         * peer and, for the timers, 6 MiB and 1500 page faults per process
         * at start-up, most of them for idle pairs. */
        struct bm_btl_dgram_module *m = ep->module;
        ep->win = calloc((size_t)m->cfg.window, sizeof(*ep->win));
        no_window = !ep->win;
        if (ep->win) {
            ep->sent_once = true;
            m->nsending++;
            uint32_t n = (uint32_t)(m->nsending < 2 ? 2 : m->nsending > 64 ? 64 : m->nsending);
            if ((uint32_t)m->cfg.window * n > m->rooms_wanted)
                m->rooms_wanted = (uint32_t)m->cfg.window * n;
            bm_btl_dgram_timers_reserve(m, m->rooms_wanted); /* grows when no timer runs */
        }
    }
    if (no_window && ep->state == BM_DGRAM_EP_OK) {
        /* Fails f with the rest of the queue below; later sends try again. */
        bm_util_queue_push(&ep->sendq, &f->qlink);
        f->ep = ep;
        f->in_use = f->queued = true;
        f->segs_out = 0;
        bm_btl_dgram_endpoint_fail(ep, "no memory for its send window");
        return;
    }
    if (ep->check == BM_DGRAM_CHECK_NONE)
        bm_btl_dgram_check_start(ep);
    f->ep = ep;
    f->next_off = 0;
    f->segs_cut = 0;
    f->segs_out = 0;
    f->status = 0;
    f->in_use = true;
    f->queued = true;
    bm_util_queue_push(&ep->sendq, &f->qlink);
    bm_btl_dgram_endpoint_check_ready(ep);
}

int bm_btl_dgram_progress_sends(struct bm_btl_dgram_module *m)
{
    if (m->rooms_wanted > m->hotel.nrooms && !bm_util_hotel_occupied(&m->hotel))
        bm_btl_dgram_timers_reserve(m, m->rooms_wanted);
    int n = 0;
    /* 1. retransmissions, data channel only, bounded per call */
    for (int i = 0; i < m->cfg.max_resends; i++) {
        struct bm_util_list_node *node = bm_util_list_pop_front(&m->resend);
        if (!node)
            break;
        struct bm_btl_dgram_seg *s = bm_util_container_of(node, struct bm_btl_dgram_seg, link);
        seg_transmit(s->ep, s, BM_DGRAM_CH_DATA);
        n++;
    }
    /* 2. ready endpoints, round robin, each up to its credits per round,
     * until the data channel's credits for this call are used */
    int budget = m->cfg.chan_credits;
    while (budget > 0 && !bm_util_list_empty(&m->ready)) {
        struct bm_util_list round;
        bm_util_list_init(&round);
        bm_util_list_splice_back(&round, &m->ready);
        struct bm_util_list_node *node;
        int posted = 0;
        while ((node = bm_util_list_pop_front(&round))) {
            struct bm_btl_dgram_endpoint *ep =
                bm_util_container_of(node, struct bm_btl_dgram_endpoint, ready_link);
            int k = ep_push(ep, m->cfg.ep_credits);
            posted += k;
            budget -= k;
            bm_btl_dgram_endpoint_check_ready(ep);
        }
        n += posted;
        if (posted == 0)
            break;
    }
    /* 3. standalone ACKs that are due */
    n += bm_btl_dgram_ack_progress(m);
    for (int c = 0; c < BM_DGRAM_NCH; c++)
        if (m->ch[c].tx_count || (m->held_len && m->held_ch == c))
            bm_btl_dgram_flush_channel(m, c);
    return n;
}

static int bm_btl_dgram_send_unlocked(struct bm_btl_module *bm, struct bm_btl_endpoint *bep,
                                      struct bm_btl_descriptor *des, bm_btl_tag_t tag)
{
    struct bm_btl_dgram_module *m = (struct bm_btl_dgram_module *)bm;
    struct bm_btl_dgram_endpoint *ep = (struct bm_btl_dgram_endpoint *)bep;
    struct bm_btl_dgram_frag *f = (struct bm_btl_dgram_frag *)des;
    if (ep->state != BM_DGRAM_EP_OK)
        return BM_ERR_LINK_DOWN;
    f->kind = BM_DGRAM_FK_SEND;
    f->tag = tag;
    f->data = des->seg[0].addr;
    f->len = des->seg[0].len;
    f->data1 = NULL;
    if (des->seg_count == 2) { /* prepare_src's in-place data */
        f->data1 = des->seg[1].addr;
        f->len0 = f->len;
        f->len += des->seg[1].len;
    }
    bool was_idle = bm_util_queue_empty(&ep->sendq);
    bm_btl_dgram_enqueue(ep, f);
    if (was_idle) {
        /* Fast path: an idle endpoint posts at once instead of waiting for
         * the next progress call; a tiny fragment goes out inline on the
         * priority channel. */
        m->now_ns = bm_btl_dgram_now();
        int before = (int)m->ch[BM_DGRAM_CH_PRIO].tx_count;
        if (ep_push(ep, m->cfg.ep_credits) > 0) {
            if (f->len + sizeof(struct bm_dgram_hdr) <= ep->mtu[BM_DGRAM_CH_PRIO] && before == 0)
                m->stats.fastpath_sends++;
            for (int c = 0; c < BM_DGRAM_NCH; c++)
                if (m->ch[c].tx_count)
                    bm_btl_dgram_flush_channel(m, c);
        }
        if (bm_util_queue_empty(&ep->sendq) && bm_util_list_node_linked(&ep->ready_link))
            bm_util_list_remove(&ep->ready_link);
    }
    return BM_OK;
}

/* ---- emulated RDMA ------------------------------------------------------ */

/* Whether a put or get of size bytes to remote_handle can start on ep. */
static int rdma_check(const struct bm_btl_dgram_endpoint *ep, size_t size,
                      const struct bm_btl_reg_handle *remote_handle)
{
    if (ep->state != BM_DGRAM_EP_OK)
        return BM_ERR_LINK_DOWN;
    if (size > UINT32_MAX || !remote_handle)
        return BM_ERR_NOT_AVAILABLE;
    return BM_OK;
}

static int bm_btl_dgram_put_unlocked(struct bm_btl_module *bm, struct bm_btl_endpoint *bep,
                                     void *local_addr, uint64_t remote_addr,
                                     struct bm_btl_reg_handle *local_handle,
                                     const struct bm_btl_reg_handle *remote_handle, size_t size,
                                     uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                                     void *context, void *cbdata)
{
    struct bm_btl_dgram_module *m = (struct bm_btl_dgram_module *)bm;
    struct bm_btl_dgram_endpoint *ep = (struct bm_btl_dgram_endpoint *)bep;
    (void)flags;
    (void)order;
    int rc = rdma_check(ep, size, remote_handle);
    if (rc != BM_OK)
        return rc;
    struct bm_btl_dgram_frag *f = bm_btl_dgram_frag_new(m, 0);
    if (!f)
        return BM_ERR_OUT_OF_RESOURCE;
    f->kind = BM_DGRAM_FK_PUT;
    f->data = local_addr; /* registered memory stays valid until the callback */
    f->len = size;
    f->raddr = remote_addr;
    f->rkey = remote_handle->data[0];
    f->laddr = local_addr;
    f->lhandle = local_handle;
    f->rdma_cb = cb;
    f->rdma_ctx = context;
    f->rdma_cbdata = cbdata;
    f->frag_id = ep->next_frag_id++;
    ep->rdma_out++;
    bm_btl_dgram_enqueue(ep, f);
    return BM_OK;
}

static int bm_btl_dgram_get_unlocked(struct bm_btl_module *bm, struct bm_btl_endpoint *bep,
                                     void *local_addr, uint64_t remote_addr,
                                     struct bm_btl_reg_handle *local_handle,
                                     const struct bm_btl_reg_handle *remote_handle, size_t size,
                                     uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                                     void *context, void *cbdata)
{
    struct bm_btl_dgram_module *m = (struct bm_btl_dgram_module *)bm;
    struct bm_btl_dgram_endpoint *ep = (struct bm_btl_dgram_endpoint *)bep;
    (void)flags;
    (void)order;
    int rc = rdma_check(ep, size, remote_handle);
    if (rc != BM_OK)
        return rc;
    struct bm_btl_dgram_getop *g = calloc(1, sizeof(*g));
    struct bm_btl_dgram_frag *f = bm_btl_dgram_frag_new(m, 0);
    if (!g || !f) {
        free(g);
        bm_btl_dgram_frag_release(m, f);
        return BM_ERR_OUT_OF_RESOURCE;
    }
    g->id = ep->next_get_id++;
    g->size = (uint32_t)size;
    g->laddr = local_addr;
    g->lhandle = local_handle;
    g->cb = cb;
    g->ctx = context;
    g->cbdata = cbdata;
    g->peer = ep->peer;
    bm_util_list_push_back(&ep->getops, &g->link);
    f->kind = BM_DGRAM_FK_GET_REQ;
    f->len = 0;
    f->req_size = (uint32_t)size;
    f->frag_id = g->id;
    f->raddr = remote_addr;
    f->rkey = remote_handle->data[0];
    ep->rdma_out++;
    bm_btl_dgram_enqueue(ep, f);
    return BM_OK;
}

static struct bm_btl_reg_handle *bm_btl_dgram_register_mem_unlocked(struct bm_btl_module *bm,
                                                                    struct bm_btl_endpoint *ep,
                                                                    void *base, size_t size,
                                                                    uint32_t reg_flags)
{
    struct bm_btl_dgram_module *m = (struct bm_btl_dgram_module *)bm;
    (void)ep;
    struct bm_btl_dgram_reg *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    /* Keys are not guessable from outside the job: a peer must have been
     * given the handle to read or write this memory. */
    m->next_reg_key = m->next_reg_key * 6364136223846793005ull + 1442695040888963407ull;
    r->handle.data[0] = m->next_reg_key | 1;
    r->base = (uintptr_t)base;
    r->size = size;
    r->flags = reg_flags;
    bm_util_list_push_back(&m->regs, &r->link);
    return &r->handle;
}

static bm_status_t bm_btl_dgram_deregister_mem_unlocked(struct bm_btl_module *bm,
                                                        struct bm_btl_reg_handle *handle)
{
    (void)bm;
    if (!handle)
        return BM_ERR_BAD_PARAM;
    struct bm_btl_dgram_reg *r = bm_util_container_of(handle, struct bm_btl_dgram_reg, handle);
    bm_util_list_remove(&r->link);
    free(r);
    return BM_OK;
}

bm_status_t bm_btl_dgram_flush(struct bm_btl_module *bm, struct bm_btl_endpoint *bep)
{
    struct bm_btl_dgram_module *m = (struct bm_btl_dgram_module *)bm;
    struct bm_btl_dgram_endpoint *only = (struct bm_btl_dgram_endpoint *)bep;
    for (;;) {
        uint32_t out = 0;
        if (only) {
            out = only->rdma_out;
        } else {
            for (int i = 0; i < m->neps; i++)
                if (m->eps[i])
                    out += m->eps[i]->rdma_out;
        }
        if (out == 0)
            return BM_OK;
        bm_btl_dgram_module_progress(m);
    }
}

/* A PING or PONG of size bytes (padded), to the peer's channel or to to. */
static void ping_send(struct bm_btl_dgram_endpoint *ep, int type, uint32_t nonce, size_t size,
                      bool live)
{
    struct bm_btl_dgram_module *m = ep->module;
    static const uint8_t zeros[BM_DGRAM_MAX_DATAGRAM];
    uint8_t buf[BM_DGRAM_MAX_HDR];
    struct bm_dgram_hdr *h = (struct bm_dgram_hdr *)buf;
    size_t hlen = bm_dgram_hdr_len((unsigned)type);
    fill_base(ep, h, (unsigned)type);
    struct bm_dgram_chunk *c = (struct bm_dgram_chunk *)(h + 1);
    memset(c, 0, sizeof(*c));
    c->frag_id = nonce;
    size_t pad = size > hlen ? size - hlen : 0;
    if (pad > sizeof(zeros))
        pad = sizeof(zeros);
    int ch = hlen + pad <= ep->mtu[BM_DGRAM_CH_PRIO] ? BM_DGRAM_CH_PRIO : BM_DGRAM_CH_DATA;
    if (hlen + pad > ep->mtu[ch])
        pad = ep->mtu[ch] - hlen;
    c->frag_size = (uint32_t)pad;
    h->payload_len = (uint16_t)pad;
    bm_btl_dgram_post(m, ch, ep, buf, hlen, zeros, pad);
    if (live) { /* the slot just queued: same socket, the peer's live port */
        struct bm_btl_dgram_txslot *slot = &m->ch[ch].tx[m->ch[ch].tx_count - 1];
        slot->to = &ep->to_live;
        slot->to_wire = ep->wire_live[ch];
        slot->gso_ok = false;
    }
    bm_btl_dgram_flush_channel(m, ch);
}

void bm_btl_dgram_send_ping(struct bm_btl_dgram_endpoint *ep, int type, uint32_t nonce, size_t size)
{
    ping_send(ep, type, nonce, size, false);
}

/* A PING to another port of the peer's address (its live port: dgram_live.c). */
void bm_btl_dgram_send_ping_live(struct bm_btl_dgram_endpoint *ep, uint32_t nonce, size_t size)
{
    ping_send(ep, BM_DGRAM_T_PING, nonce, size, true);
}

/* ---- entry points: the module lock (MPI_THREAD_MULTIPLE only) ---------- */

int bm_btl_dgram_send(struct bm_btl_module *bm, struct bm_btl_endpoint *bep,
                      struct bm_btl_descriptor *des, bm_btl_tag_t tag)
{
    struct bm_btl_dgram_module *lm = (struct bm_btl_dgram_module *)bm;
    bm_btl_dgram_lock(lm);
    int r = bm_btl_dgram_send_unlocked(bm, bep, des, tag);
    bm_btl_dgram_unlock(lm);
    return r;
}

int bm_btl_dgram_put(struct bm_btl_module *bm, struct bm_btl_endpoint *bep, void *local_addr,
                     uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                     const struct bm_btl_reg_handle *remote_handle, size_t size, uint32_t flags,
                     uint8_t order, bm_btl_rdma_cb_fn cb, void *context, void *cbdata)
{
    struct bm_btl_dgram_module *lm = (struct bm_btl_dgram_module *)bm;
    bm_btl_dgram_lock(lm);
    int r = bm_btl_dgram_put_unlocked(bm, bep, local_addr, remote_addr, local_handle, remote_handle,
                                      size, flags, order, cb, context, cbdata);
    bm_btl_dgram_unlock(lm);
    return r;
}

int bm_btl_dgram_get(struct bm_btl_module *bm, struct bm_btl_endpoint *bep, void *local_addr,
                     uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                     const struct bm_btl_reg_handle *remote_handle, size_t size, uint32_t flags,
                     uint8_t order, bm_btl_rdma_cb_fn cb, void *context, void *cbdata)
{
    struct bm_btl_dgram_module *lm = (struct bm_btl_dgram_module *)bm;
    bm_btl_dgram_lock(lm);
    int r = bm_btl_dgram_get_unlocked(bm, bep, local_addr, remote_addr, local_handle, remote_handle,
                                      size, flags, order, cb, context, cbdata);
    bm_btl_dgram_unlock(lm);
    return r;
}

struct bm_btl_reg_handle *bm_btl_dgram_register_mem(struct bm_btl_module *bm,
                                                    struct bm_btl_endpoint *ep, void *base,
                                                    size_t size, uint32_t reg_flags)
{
    struct bm_btl_dgram_module *lm = (struct bm_btl_dgram_module *)bm;
    bm_btl_dgram_lock(lm);
    struct bm_btl_reg_handle *r = bm_btl_dgram_register_mem_unlocked(bm, ep, base, size, reg_flags);
    bm_btl_dgram_unlock(lm);
    return r;
}

bm_status_t bm_btl_dgram_deregister_mem(struct bm_btl_module *bm, struct bm_btl_reg_handle *handle)
{
    struct bm_btl_dgram_module *lm = (struct bm_btl_dgram_module *)bm;
    bm_btl_dgram_lock(lm);
    bm_status_t r = bm_btl_dgram_deregister_mem_unlocked(bm, handle);
    bm_btl_dgram_unlock(lm);
    return r;
}
