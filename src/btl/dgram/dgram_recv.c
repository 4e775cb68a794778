/* The receive side of the dgram engine. Every datagram is parsed and
 * checked before any state is touched (bm_btl_dgram_parse is pure and is
 * the libFuzzer target): a datagram that is short, of unknown type, with a
 * bad checksum or MAC, of another job, from an unknown sender or with a chunk
 * outside its fragment is dropped and counted, never trusted. Sequenced
 * packets inside the receive window are delivered at once even when out of
 * order (the PML restores MPI order); duplicates and packets outside the
 * window are dropped and counted; an old sequence number means our ACK was
 * lost, so it is ACKed at once. Chunks are reassembled by fragment id; PUT
 * chunks and GET answers are copied straight into registered memory. */
#define BM_LOG_SUBSYS "btl/dgram"
#include "btl/dgram/dgram.h"
#include "util/crc32c.h"
#include "util/log.h"
#include "util/mem.h"

#include <stdlib.h>
#include <string.h>

#define BAD(field) offsetof(struct bm_btl_dgram_stats, field)

uint32_t bm_btl_dgram_checksum2(const void *a, size_t alen, const void *b, size_t blen)
{
    uint32_t c = bm_util_crc32c(0, a, alen);
    return blen ? bm_util_crc32c(c, b, blen) : c;
}

uint32_t bm_btl_dgram_checksum(const void *buf, size_t len)
{
    return bm_btl_dgram_checksum2(buf, len, NULL, 0);
}

/* bm_btl_dgram_parse of a datagram whose payload was received elsewhere
 * (payload non-NULL: the header is at buf, len counts both). */
static bm_status_t parse_at(const void *buf, size_t len, const uint8_t *payload,
                            struct bm_btl_dgram_pkt *pkt_out, size_t *bad_out)
{
    const uint8_t *p = buf;
    if (len < sizeof(struct bm_dgram_hdr)) {
        *bad_out = BAD(bad_short);
        return BM_ERR_PROTOCOL;
    }
    /* The header is copied so that an unaligned datagram is never read
     * through a misaligned pointer. */
    struct bm_dgram_hdr h;
    memcpy(&h, p, sizeof(h));
    if (h.magic != BM_DGRAM_MAGIC || h.version != BM_DGRAM_VERSION || h.type == 0 ||
        h.type >= BM_DGRAM_T_MAX_ || h.tag >= BM_BTL_TAG_MAX) {
        *bad_out = BAD(bad_magic);
        return BM_ERR_PROTOCOL;
    }
    size_t hlen = bm_dgram_hdr_len(h.type);
    if (len < hlen || (size_t)h.payload_len != len - hlen) {
        *bad_out = BAD(bad_short);
        return BM_ERR_PROTOCOL;
    }
    if (h.checksum) {
        uint8_t hc[BM_DGRAM_MAX_HDR];
        memcpy(hc, p, hlen);
        memset(hc + offsetof(struct bm_dgram_hdr, checksum), 0, sizeof(h.checksum));
        uint32_t sum = bm_btl_dgram_checksum2(hc, hlen, payload ? payload : p + hlen, len - hlen);
        if ((sum ? sum : 1) != h.checksum) {
            *bad_out = BAD(bad_checksum);
            return BM_ERR_PROTOCOL;
        }
    }
    struct bm_btl_dgram_pkt pkt = {0};
    pkt.hdr = (const struct bm_dgram_hdr *)p;
    pkt.payload = payload ? payload : p + hlen;
    pkt.payload_len = len - hlen;
    if (h.type == BM_DGRAM_T_REPAIR) {
        if (pkt.payload_len) {
            *bad_out = BAD(bad_short);
            return BM_ERR_PROTOCOL;
        }
        pkt.repair = (const struct bm_dgram_repair *)(p + sizeof(h));
    } else if (hlen > sizeof(h)) {
        pkt.chunk = (const struct bm_dgram_chunk *)(p + sizeof(h));
        struct bm_dgram_chunk c;
        memcpy(&c, pkt.chunk, sizeof(c));
        if ((uint64_t)c.offset + pkt.payload_len > c.frag_size) {
            *bad_out = BAD(bad_chunk);
            return BM_ERR_PROTOCOL;
        }
        if ((h.type == BM_DGRAM_T_GET_REQ || h.type == BM_DGRAM_T_GET_NAK) && pkt.payload_len) {
            *bad_out = BAD(bad_short);
            return BM_ERR_PROTOCOL;
        }
    }
    if (hlen == BM_DGRAM_MAX_HDR)
        pkt.rdma = (const struct bm_dgram_rdma *)(p + sizeof(h) + sizeof(struct bm_dgram_chunk));
    if (h.type == BM_DGRAM_T_ACK && pkt.payload_len) {
        *bad_out = BAD(bad_short);
        return BM_ERR_PROTOCOL;
    }
    *pkt_out = pkt;
    return BM_OK;
}

bm_status_t bm_btl_dgram_parse(const void *buf, size_t len, struct bm_btl_dgram_pkt *pkt_out,
                               size_t *bad_out)
{
    return parse_at(buf, len, NULL, pkt_out, bad_out);
}

static inline void count_bad(struct bm_btl_dgram_module *m, size_t field)
{
    (*(uint64_t *)((char *)&m->stats + field))++;
}

/* The registration of module m with this key that holds [addr, addr + len). */
static struct bm_btl_dgram_reg *reg_find_in(struct bm_btl_dgram_module *m, uint64_t key,
                                            uint64_t addr, uint64_t len, uint32_t need)
{
    struct bm_util_list_node *it;
    bm_util_list_foreach(it, &m->regs)
    {
        struct bm_btl_dgram_reg *r = bm_util_container_of(it, struct bm_btl_dgram_reg, link);
        if (r->handle.data[0] != key)
            continue;
        /* flags 0 means "any access", as callers that do not care pass */
        if (r->flags && !(r->flags & need))
            continue;
        if (addr < r->base || len > r->size || addr - r->base > r->size - len)
            continue;
        return r;
    }
    return NULL;
}

/* The registration that holds [addr, addr + len), or NULL: first in m,
 * then in the process's other modules, because after a re-pairing a PUT
 * or GET_REQ can arrive at another module of ours than the one the
 * registration was made with (the peer's endpoint was retargeted). */
static struct bm_btl_dgram_reg *reg_find(struct bm_btl_dgram_module *m, uint64_t key, uint64_t addr,
                                         uint64_t len, uint32_t need)
{
    struct bm_btl_dgram_reg *r = reg_find_in(m, key, addr, len, need);
    int n = 0;
    struct bm_btl_dgram_module *const *mods = r ? NULL : bm_btl_dgram_modules(m, &n);
    for (int i = 0; i < n && !r; i++)
        if (mods[i] != m)
            r = reg_find_in(mods[i], key, addr, len, need);
    return r;
}

static struct bm_btl_dgram_getop *getop_find(struct bm_btl_dgram_endpoint *ep, uint32_t id)
{
    struct bm_util_list_node *it;
    bm_util_list_foreach(it, &ep->getops)
    {
        struct bm_btl_dgram_getop *g = bm_util_container_of(it, struct bm_btl_dgram_getop, link);
        if (g->id == id)
            return g;
    }
    return NULL;
}

static void deliver(struct bm_btl_dgram_module *m, struct bm_btl_dgram_endpoint *ep,
                    bm_btl_tag_t tag, const void *data, size_t len)
{
    bm_btl_recv_cb_fn cb = m->super.recv_cb[tag].cb;
    if (!cb) {
        m->stats.no_handler++;
        bm_log_ratelimited(BM_LOG_WARN,
                           "%s: fragment with tag %u from %s dropped: no receive "
                           "callback registered for it",
                           m->super.name, tag, ep->peer_desc);
        return;
    }
    struct bm_btl_segment seg = {(void *)data, len};
    struct bm_btl_recv_desc d = {.endpoint = (struct bm_btl_endpoint *)ep,
                                 .peer = ep->peer,
                                 .tag = tag,
                                 .seg_count = 1,
                                 .seg = &seg};
    m->stats.recv_delivered++;
    cb(&m->super, &d, m->super.recv_cb[tag].cbdata);
}

static void getop_finish(struct bm_btl_dgram_endpoint *ep, struct bm_btl_dgram_getop *g, int status)
{
    struct bm_btl_dgram_module *m = ep->module;
    bm_util_list_remove(&g->link);
    ep->rdma_out--;
    if (g->cb)
        g->cb(&m->super, (struct bm_btl_endpoint *)ep, g->laddr, g->lhandle, g->ctx, g->cbdata,
              status);
    free(g);
}

/* ---- one handler per sequenced packet type --------------------------------
 * Each returns false when the packet could not be processed now (no
 * memory): it is then neither marked received nor ACKed, and the sender's
 * retransmission brings it again. c and r are aligned copies of the chunk
 * and RDMA headers (zero when the packet has none). */

static bool recv_frag(struct bm_btl_dgram_module *m, struct bm_btl_dgram_endpoint *ep,
                      const struct bm_btl_dgram_pkt *pkt)
{
    deliver(m, ep, pkt->hdr->tag, pkt->payload, pkt->payload_len);
    return true;
}

static struct bm_btl_dgram_reasm *reasm_find(struct bm_btl_dgram_endpoint *ep, uint32_t frag_id)
{
    struct bm_util_list_node *it;
    bm_util_list_foreach(it, &ep->reasm)
    {
        struct bm_btl_dgram_reasm *x = bm_util_container_of(it, struct bm_btl_dgram_reasm, link);
        if (x->frag_id == frag_id)
            return x;
    }
    return NULL;
}

/* Placed fragments this large are copied with stores that bypass the
 * cache, as the PML copies a message of 1 MiB or more (BM_PML_STREAM_COPY_MIN):
 * a rendezvous message's buffer does not stay in the cache, and a normal
 * store first reads every destination line. */
#define BM_DGRAM_PLACE_STREAM_MIN (128u << 10)

/* The end of a placed fragment (btl.h "Receive placement"): PLACED once
 * all of it arrived, or ABORTED when it is dropped unfinished. */
static void placed_deliver(struct bm_btl_dgram_module *m, struct bm_btl_dgram_endpoint *ep,
                           const struct bm_btl_dgram_reasm *ra, bool done)
{
    struct bm_btl_segment seg = {ra->buf, ra->hdr_len};
    struct bm_btl_recv_desc d = {.endpoint = done ? (struct bm_btl_endpoint *)ep : NULL,
                                 .peer = ep->peer,
                                 .tag = ra->tag,
                                 .seg_count = 1,
                                 .seg = &seg,
                                 .flags = done ? BM_BTL_RECV_F_PLACED : BM_BTL_RECV_F_ABORTED,
                                 .placed = done ? ra->size - ra->hdr_len : 0};
    if (done) {
        if (ra->size >= BM_DGRAM_PLACE_STREAM_MIN)
            bm_util_stream_fence();
        m->stats.recv_delivered++;
    }
    m->super.recv_cb[ra->tag].cb(&m->super, &d, m->super.recv_cb[ra->tag].cbdata);
}

void bm_btl_dgram_reasm_drop_all(struct bm_btl_dgram_endpoint *ep, bool notify)
{
    struct bm_util_list_node *n;
    while ((n = bm_util_list_pop_front(&ep->reasm))) {
        struct bm_btl_dgram_reasm *ra = bm_util_container_of(n, struct bm_btl_dgram_reasm, link);
        if (ra->iov) {
            ep->module->placed_active -= ra->direct;
            if (notify)
                placed_deliver(ep->module, ep, ra, false);
        }
        free(ra);
    }
}

/* Bytes [off, off + n) of a placed fragment: the header part to buf, the
 * rest to the pieces. */
static void placed_copy(struct bm_btl_dgram_reasm *ra, size_t off, const uint8_t *src, size_t n)
{
    if (off < ra->hdr_len) {
        size_t k = ra->hdr_len - off < n ? ra->hdr_len - off : n;
        memcpy(ra->buf + off, src, k);
        off += k;
        src += k;
        n -= k;
    }
    off -= ra->hdr_len;
    for (uint32_t i = 0; i < ra->niov && n > 0; i++) {
        if (off >= ra->iov[i].len) {
            off -= ra->iov[i].len;
            continue;
        }
        size_t k = ra->iov[i].len - off < n ? ra->iov[i].len - off : n;
        uint8_t *dst = (uint8_t *)(uintptr_t)ra->iov[i].addr + off;
        if (dst == src)
            ; /* received in place (bm_btl_dgram_direct_target) */
        else if (ra->size >= BM_DGRAM_PLACE_STREAM_MIN)
            bm_util_copy_stream_unfenced(dst, src, k); /* fenced before delivery */
        else
            memcpy(dst, src, k);
        src += k;
        n -= k;
        off = 0;
    }
}

/* The first chunk of a fragment whose tag has a place callback, arriving
 * before any other chunk of it: ask where the rest goes. The chunk was
 * authenticated (nothing reaches here before its MAC is checked) and is
 * not a duplicate, so only genuine bytes are ever written to the caller's
 * memory. NULL: not placed (no callback, too short, or declined). */
static struct bm_btl_dgram_reasm *placed_start(struct bm_btl_dgram_module *m,
                                               struct bm_btl_dgram_endpoint *ep,
                                               const struct bm_btl_dgram_pkt *pkt,
                                               const struct bm_dgram_chunk *c, bm_btl_tag_t tag)
{
    size_t hl = m->super.recv_cb[tag].place_hdr_len;
    if (!m->super.recv_cb[tag].place || c->offset != 0 || hl == 0 || pkt->payload_len < hl ||
        c->frag_size <= hl)
        return NULL;
    struct bm_btl_dgram_reasm *ra =
        malloc(sizeof(*ra) + BM_DGRAM_PLACE_IOV * sizeof(struct bm_btl_iov) + hl);
    if (!ra)
        return NULL;
    ra->iov = (struct bm_btl_iov *)(ra + 1);
    ra->buf = (uint8_t *)(ra->iov + BM_DGRAM_PLACE_IOV);
    struct bm_btl_segment seg = {(void *)(uintptr_t)pkt->payload, pkt->payload_len};
    struct bm_btl_recv_desc d = {.endpoint = (struct bm_btl_endpoint *)ep,
                                 .peer = ep->peer,
                                 .tag = tag,
                                 .seg_count = 1,
                                 .seg = &seg};
    ra->niov = m->super.recv_cb[tag].place(&m->super, &d, c->frag_size, ra->iov, BM_DGRAM_PLACE_IOV,
                                           m->super.recv_cb[tag].cbdata);
    if (ra->niov == 0) {
        free(ra);
        return NULL;
    }
    ra->hdr_len = (uint32_t)hl;
    ra->nver = 0;
    ra->chunk_len = 0;
    m->stats.recv_placed++;
    /* In place only from a peer of large datagrams (the loopback's 65000
     * bytes): below, the receive of its own that each fragment's first
     * chunk then costs outweighs the copy it saves. */
    ra->direct = m->cfg.recv_in_place && ep->mtu[BM_DGRAM_CH_DATA] >= BM_DGRAM_DIRECT_MTU_MIN;
    if (ra->direct) {
        m->placed_active++;
        m->direct_credit = BM_DGRAM_DIRECT_CREDIT;
    }
    return ra;
}

/* Record [lo, hi) of a placed fragment as verified (merged, sorted). A
 * range that would need a ninth entry marks the list full (nver past the
 * end; widening a neighbour would claim unverified bytes): from then on
 * bm_btl_dgram_direct_target refuses every chunk of the fragment. */
static void ver_add(struct bm_btl_dgram_reasm *ra, uint32_t lo, uint32_t hi)
{
    uint32_t i = 0;
    while (i < ra->nver && ra->ver[i].hi < lo)
        i++;
    if (i < ra->nver && ra->ver[i].lo <= hi) { /* touches ver[i]: merge */
        if (lo < ra->ver[i].lo)
            ra->ver[i].lo = lo;
        if (hi > ra->ver[i].hi)
            ra->ver[i].hi = hi;
        while (i + 1 < ra->nver && ra->ver[i + 1].lo <= ra->ver[i].hi) {
            if (ra->ver[i + 1].hi > ra->ver[i].hi)
                ra->ver[i].hi = ra->ver[i + 1].hi;
            memmove(&ra->ver[i + 1], &ra->ver[i + 2], (ra->nver - i - 2) * sizeof(ra->ver[0]));
            ra->nver--;
        }
        return;
    }
    if (ra->nver == BM_DGRAM_VER_MAX) {
        ra->nver = BM_DGRAM_VER_MAX + 1; /* full: no more direct receives */
        return;
    }
    memmove(&ra->ver[i + 1], &ra->ver[i], (ra->nver - i) * sizeof(ra->ver[0]));
    ra->ver[i].lo = lo;
    ra->ver[i].hi = hi;
    ra->nver++;
}

/* A chunk of a fragment larger than a datagram: reassemble (or place),
 * deliver when every byte is there. */
static bool recv_chunk(struct bm_btl_dgram_module *m, struct bm_btl_dgram_endpoint *ep,
                       const struct bm_btl_dgram_pkt *pkt, const struct bm_dgram_chunk *c)
{
    const struct bm_dgram_hdr *h = pkt->hdr;
    struct bm_btl_dgram_reasm *ra = reasm_find(ep, c->frag_id);
    if (!ra) {
        if (c->frag_size > m->cfg.max_send_size) {
            m->stats.bad_chunk++;
            return true;
        }
        ra = h->tag < BM_BTL_TAG_MAX ? placed_start(m, ep, pkt, c, h->tag) : NULL;
        if (!ra) {
            ra = malloc(sizeof(*ra) + c->frag_size);
            if (!ra)
                return false;
            ra->buf = (uint8_t *)(ra + 1);
            ra->iov = NULL;
        }
        ra->frag_id = c->frag_id;
        ra->size = c->frag_size;
        ra->received = 0;
        ra->tag = h->tag;
        bm_util_list_push_back(&ep->reasm, &ra->link);
    } else if (ra->size != c->frag_size || ra->tag != h->tag) {
        m->stats.bad_chunk++;
        return true;
    }
    if (pkt->payload_len) {
        if (ra->iov) {
            placed_copy(ra, c->offset, pkt->payload, pkt->payload_len);
            if (ra->nver <= BM_DGRAM_VER_MAX)
                ver_add(ra, c->offset, c->offset + (uint32_t)pkt->payload_len);
            if (c->offset >= ra->hdr_len && pkt->payload_len > ra->chunk_len)
                ra->chunk_len = (uint32_t)pkt->payload_len;
            if (ra->direct) { /* the udp wire expects its next chunks */
                m->direct_hint = true;
                m->direct_sender = h->sender;
                m->direct_frag = ra->frag_id;
            }
        } else {
            memcpy(ra->buf + c->offset, pkt->payload, pkt->payload_len);
        }
    }
    ra->received += (uint32_t)pkt->payload_len;
    if (ra->received >= ra->size) {
        bm_util_list_remove(&ra->link);
        if (ra->iov) {
            m->placed_active -= ra->direct;
            placed_deliver(m, ep, ra, true);
        } else {
            deliver(m, ep, ra->tag, ra->buf, ra->size);
        }
        free(ra);
    }
    return true;
}

/* Where bytes [lo, lo + n) of a placed fragment lie in the caller's
 * memory; NULL when they are (partly) the header's or span two pieces. */
static uint8_t *placed_at(const struct bm_btl_dgram_reasm *ra, uint64_t lo, uint64_t n)
{
    if (lo < ra->hdr_len)
        return NULL;
    uint64_t off = lo - ra->hdr_len;
    for (uint32_t i = 0; i < ra->niov; i++) {
        if (off >= ra->iov[i].len) {
            off -= ra->iov[i].len;
            continue;
        }
        return off + n <= ra->iov[i].len ? (uint8_t *)(uintptr_t)ra->iov[i].addr + off : NULL;
    }
    return NULL;
}

unsigned bm_btl_dgram_direct_predict(struct bm_btl_dgram_module *m, int ch,
                                     struct bm_btl_dgram_direct_slot *out, unsigned max)
{
    if (!m->direct_hint)
        return 0;
    struct bm_btl_dgram_endpoint *ep =
        m->direct_sender < (uint32_t)m->neps ? m->eps[m->direct_sender] : NULL;
    const struct bm_btl_dgram_reasm *ra = ep ? reasm_find(ep, m->direct_frag) : NULL;
    size_t hlen = bm_dgram_hdr_len(BM_DGRAM_T_CHUNK);
    if (!ra || !ra->iov || !ra->direct || ra->nver == 0 || ra->nver > BM_DGRAM_VER_MAX ||
        m->ch[ch].mtu <= hlen || ep->mtu[BM_DGRAM_CH_DATA] <= hlen) {
        m->direct_hint = false;
        return 0;
    }
    /* in-order arrival is the rule (one FIFO socket): the chunks that follow
     * the last verified range, as long as the sender cuts them (the longest
     * chunk seen so far; before that, what our datagram size leaves) */
    size_t len = ra->chunk_len ? ra->chunk_len : ep->mtu[BM_DGRAM_CH_DATA] - hlen;
    if (len > m->ch[ch].mtu - hlen)
        len = m->ch[ch].mtu - hlen;
    uint64_t lo = ra->ver[ra->nver - 1].hi;
    unsigned k = 0;
    while (k < max && lo < ra->size) {
        uint64_t n = ra->size - lo < len ? ra->size - lo : len;
        uint8_t *dst = placed_at(ra, lo, n);
        if (!dst)
            break;
        out[k].dst = dst;
        out[k].len = (size_t)n;
        k++;
        lo += n;
    }
    return k;
}

void *bm_btl_dgram_direct_target(struct bm_btl_dgram_module *m, int ch, const void *hdr, size_t got,
                                 size_t len, const struct sockaddr_in *from, size_t *hlen_out)
{
    struct bm_dgram_hdr h;
    if (got < sizeof(h))
        return NULL;
    memcpy(&h, hdr, sizeof(h));
    size_t hlen = bm_dgram_hdr_len(BM_DGRAM_T_CHUNK);
    if (h.magic != BM_DGRAM_MAGIC || h.version != BM_DGRAM_VERSION || h.type != BM_DGRAM_T_CHUNK ||
        got < hlen || len <= hlen || h.payload_len != len - hlen || h.sender >= (uint32_t)m->neps)
        return NULL;
    struct bm_btl_dgram_endpoint *ep = m->eps[h.sender];
    if (!ep || h.src_module != ep->peer_index || h.dst_module != m->addr.index ||
        from->sin_addr.s_addr != ep->to[ch].sin_addr.s_addr ||
        from->sin_port != ep->to[ch].sin_port)
        return NULL;
    struct bm_dgram_chunk c;
    memcpy(&c, (const uint8_t *)hdr + sizeof(h), sizeof(c));
    const struct bm_btl_dgram_reasm *ra = reasm_find(ep, c.frag_id);
    uint64_t lo = c.offset, hi = lo + (len - hlen);
    if (!ra || !ra->iov || !ra->direct || ra->size != c.frag_size || ra->tag != h.tag ||
        lo < ra->hdr_len || hi > ra->size || ra->nver > BM_DGRAM_VER_MAX)
        return NULL;
    for (uint32_t i = 0; i < ra->nver; i++)
        if (lo < ra->ver[i].hi && ra->ver[i].lo < hi)
            return NULL; /* verified bytes there: never written before a check */
    *hlen_out = hlen;
    return placed_at(ra, lo, hi - lo); /* NULL across two pieces: the MAC wants one payload */
}

/* Emulated PUT: write the payload into registered memory. */
static bool recv_put(struct bm_btl_dgram_module *m, struct bm_btl_dgram_endpoint *ep,
                     const struct bm_btl_dgram_pkt *pkt, const struct bm_dgram_chunk *c,
                     const struct bm_dgram_rdma *r)
{
    uint64_t addr = r->addr + c->offset;
    if (addr < r->addr || !reg_find(m, r->key, addr, pkt->payload_len, BM_BTL_REG_F_REMOTE_WRITE)) {
        m->stats.bad_rdma++;
        bm_log_ratelimited(BM_LOG_WARN, "%s: PUT from %s outside any registration dropped",
                           m->super.name, ep->peer_desc);
        return true;
    }
    if (pkt->payload_len)
        memcpy((void *)(uintptr_t)addr, pkt->payload, pkt->payload_len);
    return true;
}

/* Emulated GET, target side: answer with the data (or a NAK). */
static bool recv_get_req(struct bm_btl_dgram_module *m, struct bm_btl_dgram_endpoint *ep,
                         const struct bm_dgram_chunk *c, const struct bm_dgram_rdma *r)
{
    if (ep->state != BM_DGRAM_EP_OK)
        return true; /* the requester completes it with an error */
    struct bm_btl_dgram_frag *f = bm_btl_dgram_frag_new(m, 0);
    if (!f)
        return false;
    f->frag_id = c->frag_id;
    if (reg_find(m, r->key, r->addr, c->frag_size, BM_BTL_REG_F_REMOTE_READ)) {
        f->kind = BM_DGRAM_FK_GET_DATA;
        f->data = (const uint8_t *)(uintptr_t)r->addr;
        f->len = c->frag_size;
    } else {
        m->stats.bad_rdma++;
        f->kind = BM_DGRAM_FK_GET_NAK;
        f->len = 0;
    }
    bm_btl_dgram_enqueue(ep, f);
    return true;
}

/* Emulated GET, initiator side: the data, chunk by chunk. */
static bool recv_get_data(struct bm_btl_dgram_module *m, struct bm_btl_dgram_endpoint *ep,
                          const struct bm_btl_dgram_pkt *pkt, const struct bm_dgram_chunk *c)
{
    struct bm_btl_dgram_getop *g = getop_find(ep, c->frag_id);
    if (!g || c->frag_size != g->size) {
        m->stats.bad_chunk++;
        return true;
    }
    if (pkt->payload_len)
        memcpy(g->laddr + c->offset, pkt->payload, pkt->payload_len);
    g->received += (uint32_t)pkt->payload_len;
    if (g->received >= g->size)
        getop_finish(ep, g, BM_OK);
    return true;
}

/* Emulated GET, initiator side: the target refused. */
static bool recv_get_nak(struct bm_btl_dgram_module *m, struct bm_btl_dgram_endpoint *ep,
                         const struct bm_dgram_chunk *c)
{
    struct bm_btl_dgram_getop *g = getop_find(ep, c->frag_id);
    if (g) {
        bm_log_warn("%s: GET from %s refused: the remote address is outside any memory "
                    "registered there",
                    m->super.name, ep->peer_desc);
        getop_finish(ep, g, BM_ERR_ACCESS);
    }
    return true;
}

/* Process one sequenced packet that the window accepted: its type's handler. */
static bool process(struct bm_btl_dgram_module *m, struct bm_btl_dgram_endpoint *ep,
                    const struct bm_btl_dgram_pkt *pkt)
{
    struct bm_dgram_chunk c = {0};
    struct bm_dgram_rdma r = {0};
    if (pkt->chunk)
        memcpy(&c, pkt->chunk, sizeof(c));
    if (pkt->rdma)
        memcpy(&r, pkt->rdma, sizeof(r));
    switch (pkt->hdr->type) {
    case BM_DGRAM_T_FRAG:
        return recv_frag(m, ep, pkt);
    case BM_DGRAM_T_CHUNK:
        return recv_chunk(m, ep, pkt, &c);
    case BM_DGRAM_T_PUT:
        return recv_put(m, ep, pkt, &c, &r);
    case BM_DGRAM_T_GET_REQ:
        return recv_get_req(m, ep, &c, &r);
    case BM_DGRAM_T_GET_DATA:
        return recv_get_data(m, ep, pkt, &c);
    case BM_DGRAM_T_GET_NAK:
        return recv_get_nak(m, ep, &c);
    default:
        return true;
    }
}

static void rcv_reset(struct bm_btl_dgram_endpoint *ep, uint16_t session)
{
    struct bm_btl_dgram_module *m = ep->module;
    memset(ep->rcv_seen, 0, (size_t)m->cfg.window / 8);
    m->rcv_ooo_total -= ep->rcv_ooo;
    ep->rcv_ooo = 0;
    ep->rcv_next = 0;
    ep->rcv_session = session;
    ep->rcv_valid = true;
    bm_btl_dgram_reasm_drop_all(ep, true); /* the old session's: never completed */
}

static void recv_sequenced(struct bm_btl_dgram_module *m, struct bm_btl_dgram_endpoint *ep,
                           const struct bm_btl_dgram_pkt *pkt)
{
    const struct bm_dgram_hdr *h = pkt->hdr;
    if (!ep->rcv_valid || h->snd_session != ep->rcv_session) {
        if (ep->rcv_valid && bm_dgram_seq_lt(h->snd_session, ep->rcv_session)) {
            m->stats.recv_stale_session++;
            return;
        }
        rcv_reset(ep, h->snd_session);
    }
    uint16_t seq = h->seq;
    int d = bm_dgram_seq_diff(seq, ep->rcv_next);
    if (d < 0) {
        m->stats.recv_old++;
        bm_btl_dgram_ack_schedule(ep, true);
        return;
    }
    if (d >= m->cfg.window) {
        m->stats.recv_out_of_window++;
        return;
    }
    uint32_t mask = (uint32_t)m->cfg.window - 1;
    uint32_t idx = seq & mask;
    if (ep->rcv_seen[idx / 64] >> (idx % 64) & 1) {
        m->stats.recv_dup++;
        bm_btl_dgram_ack_schedule(ep, false);
        return;
    }
    /* A whole fragment cannot fail to be processed, so it is recorded as
     * received before the callback runs: a reply sent from the callback
     * then piggy-backs the ACK for it and no standalone ACK is needed.
     * Other types are recorded only once they were processed (they may run
     * out of memory and must then be resent). */
    bool early = h->type == BM_DGRAM_T_FRAG;
    if (!early && !process(m, ep, pkt))
        return;
    ep->rcv_last = seq;
    if (d == 0) {
        ep->rcv_next++;
        while (ep->rcv_ooo) {
            uint32_t i = ep->rcv_next & mask;
            if (!(ep->rcv_seen[i / 64] >> (i % 64) & 1))
                break;
            ep->rcv_seen[i / 64] &= ~(1ull << (i % 64));
            ep->rcv_ooo--;
            ep->module->rcv_ooo_total--;
            ep->rcv_next++;
        }
    } else {
        ep->rcv_seen[idx / 64] |= 1ull << (idx % 64);
        ep->rcv_ooo++;
        ep->module->rcv_ooo_total++;
    }
    bm_btl_dgram_ack_schedule(ep, false);
    if (early)
        process(m, ep, pkt);
}

/* The datagram's MAC (dgram_proto.h, dgram_mac.c) under our key: the
 * whole header with its MAC and checksum fields read as zeros, then the
 * payload. Framing was checked (hlen is the type's header length). */
static bool mac_check_at(const uint8_t key[16], const uint64_t nh_key[BM_DGRAM_NH_WORDS],
                         const void *buf, size_t len, const uint8_t *payload)
{
    uint8_t hc[BM_DGRAM_MAX_HDR];
    struct bm_dgram_hdr h;
    memcpy(&h, buf, sizeof(h));
    size_t hlen = bm_dgram_hdr_len(h.type);
    uint64_t want = h.job_key;
    h.job_key = 0;
    h.checksum = 0;
    memcpy(hc, &h, sizeof(h));
    memcpy(hc + sizeof(h), (const uint8_t *)buf + sizeof(h), hlen - sizeof(h));
    return bm_btl_dgram_mac(key, nh_key, hc, hlen, payload ? payload : (const uint8_t *)buf + hlen,
                            len - hlen) == want;
}

bool bm_btl_dgram_mac_check(const uint8_t key[16], const uint64_t nh_key[BM_DGRAM_NH_WORDS],
                            const void *buf, size_t len)
{
    return mac_check_at(key, nh_key, buf, len, NULL);
}

/* The endpoint of the datagram's sender when its rank, modules and source
 * address (the peer's socket of channel ch) match the pairing; else NULL,
 * counted in bad_sender. */
static struct bm_btl_dgram_endpoint *sender_endpoint(struct bm_btl_dgram_module *m,
                                                     const struct bm_dgram_hdr *h, int ch,
                                                     const struct sockaddr_in *from)
{
    struct bm_btl_dgram_endpoint *ep = h->sender < (uint32_t)m->neps ? m->eps[h->sender] : NULL;
    if (!ep || h->src_module != ep->peer_index || h->dst_module != m->addr.index ||
        from->sin_addr.s_addr != ep->to[ch].sin_addr.s_addr ||
        from->sin_port != ep->to[ch].sin_port) {
        m->stats.bad_sender++;
        return NULL;
    }
    return ep;
}

/* Whether a datagram comes from ep's partner module's live port. */
static bool from_live_port(const struct bm_btl_dgram_module *m,
                           const struct bm_btl_dgram_endpoint *ep, const struct bm_dgram_hdr *h,
                           const struct sockaddr_in *from)
{
    return ep->to_live.sin_port && from->sin_port == ep->to_live.sin_port &&
           from->sin_addr.s_addr == ep->to_live.sin_addr.s_addr &&
           h->src_module == ep->peer_index && h->dst_module == m->addr.index;
}

/* An ALIVE: the answer of a peer's liveness responder (dgram_live.c) to our
 * PING at its live port. It comes to whichever of our sockets sent the PING,
 * from the peer's priority socket (udp wire) or from its live port itself
 * (libfabric wire), and its MAC is under the peer module's key (the one we
 * send with), not ours. */
static void alive_recv(struct bm_btl_dgram_module *m, const struct bm_btl_dgram_pkt *pkt,
                       const void *buf, size_t len, const struct sockaddr_in *from)
{
    struct bm_dgram_hdr h;
    memcpy(&h, pkt->hdr, sizeof(h));
    struct bm_btl_dgram_endpoint *ep = h.sender < (uint32_t)m->neps ? m->eps[h.sender] : NULL;
    if (!ep || !from_live_port(m, ep, &h, from))
        ep = sender_endpoint(m, &h, BM_DGRAM_CH_PRIO, from);
    if (!ep)
        return;
    if (h.flags & BM_DGRAM_F_MAC) {
        if (!bm_btl_dgram_mac_check(ep->mac_key, ep->nh_key, buf, len)) {
            m->stats.bad_mac++;
            return;
        }
    } else if (m->cfg.auth || h.job_key != m->job_key) {
        m->stats.bad_mac++;
        return;
    }
    struct bm_dgram_chunk c;
    memcpy(&c, pkt->chunk, sizeof(c));
    if (!bm_btl_dgram_check_pong(ep, c.frag_id)) /* a connectivity check's ping, or */
        bm_btl_dgram_live_answer(ep, c.frag_id, c.frag_size);
}

void bm_btl_dgram_recv_packet_at(struct bm_btl_dgram_module *m, int ch, const void *buf, size_t len,
                                 const void *payload, const struct sockaddr_in *from)
{
    struct bm_btl_dgram_pkt pkt;
    size_t bad;
    if (parse_at(buf, len, payload, &pkt, &bad) != BM_OK) {
        count_bad(m, bad);
        return;
    }
    /* aligned copy of the base header for the checks below */
    struct bm_dgram_hdr h;
    memcpy(&h, pkt.hdr, sizeof(h));
    if (h.type == BM_DGRAM_T_ALIVE) {
        alive_recv(m, &pkt, buf, len, from);
        return;
    }
    if (h.flags & BM_DGRAM_F_MAC) {
        if (!mac_check_at(m->mac_key, m->nh_key, buf, len, payload)) {
            m->stats.bad_mac++;
            return;
        }
    } else if (m->cfg.auth) {
        m->stats.bad_mac++;
        return;
    } else if (m->cfg.checksum && h.checksum == 0) {
        m->stats.bad_checksum++;
        return;
    } else if (h.job_key != m->job_key) {
        m->stats.bad_job++;
        return;
    }
    if (h.type == BM_DGRAM_T_REPAIR) {
        /* not tied to the current pairing: checked against the addresses
         * the sender published (the pairing is what it changes) */
        struct bm_dgram_repair r;
        memcpy(&r, pkt.repair, sizeof(r));
        bm_btl_dgram_repair_recv(m, ch, &h, &r, from);
        return;
    }
    struct bm_btl_dgram_endpoint *ep = sender_endpoint(m, &h, ch, from);
    if (!ep)
        return;
    m->stats.recv_packets++;
    pkt.hdr = &h;
    bm_btl_dgram_ack_handle(ep, &h);
    switch (h.type) {
    case BM_DGRAM_T_ACK:
        break;
    case BM_DGRAM_T_PING: {
        struct bm_dgram_chunk c;
        memcpy(&c, pkt.chunk, sizeof(c));
        bm_btl_dgram_send_ping(ep, BM_DGRAM_T_PONG, c.frag_id, len);
        break;
    }
    case BM_DGRAM_T_PONG: {
        struct bm_dgram_chunk c;
        memcpy(&c, pkt.chunk, sizeof(c));
        if (bm_btl_dgram_check_pong(ep, c.frag_id))
            break;
        if (ep->state == BM_DGRAM_EP_FAILED && c.frag_id == ep->probe_nonce)
            bm_btl_dgram_endpoint_recovered(ep);
        break;
    }
    default:
        recv_sequenced(m, ep, &pkt);
        break;
    }
}

void bm_btl_dgram_recv_packet(struct bm_btl_dgram_module *m, int ch, const void *buf, size_t len,
                              const struct sockaddr_in *from)
{
    bm_btl_dgram_recv_packet_at(m, ch, buf, len, NULL, from);
}
