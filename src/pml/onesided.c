/* What the one-sided layer (src/mpi/win*.c) needs from the PML: the
 * transport paths to a peer, for its put, get and atomic operations, and
 * active messages to the handler that carries out everything else in the
 * target's progress (pml.h).
 *
 * Active messages travel as PML control messages (bm_pml_ctl_sendv: copied,
 * queued while a transport refuses, resent on another path when one fails)
 * with an AM header. Each carries a per (sender, receiver) sequence number:
 * the receiver runs message n only after n - 1, holds a copy of one that
 * overtook an earlier one (a resend after a failover arrives late), and
 * drops one it already ran (a transport may report an error for data that
 * did arrive, and the PML then resends it). The one-sided protocol relies
 * on this order: a lock request, the operations under it and the unlock
 * must reach the target in that order, and a target's answer to a flush
 * proves that everything sent before it was carried out. */
#define BM_LOG_SUBSYS "pml"
#include "util/log.h"

#include "pml/pml_internal.h"

#include <stdlib.h>
#include <string.h>

/* A message that arrived before its turn, kept (header included) until
 * the sequence reaches it. */
struct am_held {
    struct am_held *next;
    uint32_t seq;
    size_t len;
    _Alignas(8) char bytes[];
};

struct am_peer {
    uint32_t send_seq;    /* next number to send to this peer */
    uint32_t expected;    /* next number to run from this peer */
    struct am_held *held; /* early arrivals, sorted by number */
};

static struct {
    struct am_peer *peers; /* per world rank, allocated at first use */
    int npeers;
    struct {
        bm_pml_am_fn fn;
        void *arg;
    } handler[BM_PML_AM_IDS];
} am_g;

/* ---- paths -------------------------------------------------------------- */

int bm_pml_rma_paths(int peer_world, struct bm_pml_rma_path *out, int max)
{
    struct bm_btl_peer *peer = bm_btl_base_peer(peer_world);
    int n = 0;
    if (!peer)
        return 0;
    /* the RDMA list first (put/get capable), then the other transports of
     * the send list, each module once; only the class that carries the
     * peer's traffic (standby transports stay out of it until failover
     * makes them that class) */
    struct bm_btl_path *first = bm_pml_path_first(&peer->send);
    if (!first)
        return 0;
    struct bm_btl_path_list *lists[2] = {&peer->rdma, &peer->send};
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < lists[l]->count && n < max; i++) {
            struct bm_btl_path *p = &lists[l]->paths[i];
            bool seen = false;
            for (int k = 0; k < n; k++)
                seen |= out[k].module == p->module && out[k].endpoint == p->endpoint;
            if (bm_pml_path_is_failed(p) || seen || p->cls != first->cls)
                continue;
            out[n].module = p->module;
            out[n].endpoint = p->endpoint;
            n++;
        }
    return n;
}

bool bm_pml_peer_on_shm(int peer_world)
{
    struct bm_btl_peer *peer = bm_btl_base_peer(peer_world);
    if (!peer || peer->eager.count == 0)
        return false;
    for (int i = 0; i < peer->eager.count; i++)
        if (peer->eager.paths[i].module->exclusivity < BM_BTL_EXCL_SM)
            return false;
    return true;
}

/* ---- active messages ---------------------------------------------------- */

void bm_pml_am_register(unsigned id, bm_pml_am_fn fn, void *arg)
{
    if (id >= BM_PML_AM_IDS)
        abort(); /* a programming error: the ids are fixed in pml.h */
    am_g.handler[id].fn = fn;
    am_g.handler[id].arg = arg;
}

static struct am_peer *am_peer(int peer_world)
{
    if (!am_g.peers) {
        am_g.peers = calloc((size_t)bm_pml_g.world_size, sizeof(*am_g.peers));
        if (!am_g.peers)
            abort();
        am_g.npeers = bm_pml_g.world_size;
    }
    return &am_g.peers[peer_world];
}

bm_status_t bm_pml_rma_flush(const struct bm_pml_rma_path *path)
{
    bool taken = bm_pml_enter();
    bm_status_t rc = bm_btl_flush(path->module, path->endpoint);
    bm_pml_leave(taken);
    return rc;
}

size_t bm_pml_am_max(int peer_world)
{
    struct bm_btl_peer *peer = bm_btl_base_peer(peer_world);
    size_t max = SIZE_MAX;
    /* a control message goes on any eager path (the first that works) */
    for (int i = 0; i < peer->eager.count; i++)
        if (peer->eager.paths[i].module->max_send_size < max)
            max = peer->eager.paths[i].module->max_send_size;
    return max > sizeof(struct bm_pml_hdr_am) ? max - sizeof(struct bm_pml_hdr_am) : 0;
}

void bm_pml_am_sendv(int peer_world, unsigned id, const struct bm_pml_iov *iov, int n)
{
    struct bm_btl_segment segs[8];
    /* The sequence numbers and the control queue are the drainer's
     * (README "Threads"). */
    bool taken = bm_pml_enter();
    struct bm_pml_hdr_am h = {
        .base = {.type = BM_PML_HDR_AM},
        .seq = am_peer(peer_world)->send_seq++,
        .id = id,
    };
    if (n + 1 > (int)(sizeof(segs) / sizeof(segs[0])))
        abort(); /* callers send a header and a payload or two */
    segs[0].addr = &h;
    segs[0].len = sizeof(h);
    for (int i = 0; i < n; i++) {
        segs[i + 1].addr = (void *)(uintptr_t)iov[i].base;
        segs[i + 1].len = iov[i].len;
    }
    bm_pml_ctl_sendv(peer_world, BM_PML_BTL_TAG(BM_PML_HDR_AM), segs, (uint32_t)n + 1);
    bm_pml_leave(taken);
}

uint32_t bm_pml_am_sent(int peer_world)
{
    bool taken = bm_pml_enter();
    uint32_t n = am_peer(peer_world)->send_seq;
    bm_pml_leave(taken);
    return n;
}

/* Run one message (header included); msg is 8-byte aligned. */
static void am_run(int peer_world, const char *msg, size_t len)
{
    struct bm_pml_hdr_am h;
    memcpy(&h, msg, sizeof(h));
    if (h.id >= BM_PML_AM_IDS || !am_g.handler[h.id].fn) {
        bm_log_ratelimited(BM_LOG_ERROR,
                           "dropped an active message for handler %u from rank %d: nothing "
                           "registered for it here",
                           h.id, peer_world);
        return;
    }
    am_g.handler[h.id].fn(peer_world, msg + sizeof(h), len - sizeof(h), am_g.handler[h.id].arg);
}

/* Run the held messages whose turn has come. */
static void am_run_held(int peer_world, struct am_peer *p)
{
    while (p->held && p->held->seq == p->expected) {
        struct am_held *hm = p->held;
        p->held = hm->next;
        p->expected++;
        am_run(peer_world, hm->bytes, hm->len);
        free(hm);
    }
}

static void am_hold(struct am_peer *p, uint32_t seq, const struct bm_btl_recv_desc *d, size_t len)
{
    struct am_held **pp = &p->held;
    while (*pp && (int32_t)((*pp)->seq - seq) < 0)
        pp = &(*pp)->next;
    if (*pp && (*pp)->seq == seq)
        return; /* a second copy of one already held */
    struct am_held *hm = malloc(sizeof(*hm) + len);
    if (!hm)
        abort();
    hm->seq = seq;
    hm->len = len;
    size_t off = 0;
    for (uint32_t i = 0; i < d->seg_count; i++) {
        memcpy(hm->bytes + off, d->seg[i].addr, d->seg[i].len);
        off += d->seg[i].len;
    }
    hm->next = *pp;
    *pp = hm;
}

static void am_recv_cb(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata)
{
    (void)m;
    (void)cbdata;
    bm_pml_am_incoming(d);
}

void bm_pml_am_incoming(const struct bm_btl_recv_desc *d)
{
    size_t len = 0;
    for (uint32_t i = 0; i < d->seg_count; i++)
        len += d->seg[i].len;
    struct bm_pml_hdr_am h;
    if (d->seg_count == 0 || d->seg[0].len < sizeof(h) || d->peer < 0 ||
        d->peer >= bm_pml_g.world_size) {
        bm_log_ratelimited(BM_LOG_ERROR, "dropped a short active message (%zu bytes) from rank %d",
                           len, d->peer);
        return;
    }
    memcpy(&h, d->seg[0].addr, sizeof(h));
    struct am_peer *p = am_peer(d->peer);
    int32_t ahead = (int32_t)(h.seq - p->expected);
    if (ahead < 0) {
        bm_log_debug("dropped active message %u from rank %d: already run (a resend)", h.seq,
                     d->peer);
        return;
    }
    if (ahead > 0) {
        am_hold(p, h.seq, d, len);
        return;
    }
    p->expected++;
    /* one aligned segment: run it in place; otherwise join the pieces */
    if (d->seg_count == 1 && ((uintptr_t)d->seg[0].addr & 7) == 0) {
        am_run(d->peer, d->seg[0].addr, len);
    } else {
        char *flat = aligned_alloc(8, (len + 7) & ~(size_t)7);
        if (!flat)
            abort();
        size_t off = 0;
        for (uint32_t i = 0; i < d->seg_count; i++) {
            memcpy(flat + off, d->seg[i].addr, d->seg[i].len);
            off += d->seg[i].len;
        }
        am_run(d->peer, flat, len);
        free(flat);
    }
    if (p->held)
        am_run_held(d->peer, p);
}

void bm_pml_am_init(void)
{
    bm_btl_base_register_recv(BM_PML_BTL_TAG(BM_PML_HDR_AM), am_recv_cb, NULL);
}

void bm_pml_am_fini(void)
{
    for (int r = 0; r < am_g.npeers; r++)
        while (am_g.peers[r].held) {
            struct am_held *hm = am_g.peers[r].held;
            am_g.peers[r].held = hm->next;
            free(hm);
        }
    free(am_g.peers);
    am_g.peers = NULL;
    am_g.npeers = 0;
}
