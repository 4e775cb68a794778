/* The send side: eager sends (one MATCH fragment, by sendi when the
 * transport offers it and the message is tiny), rendezvous (a RNDV with the
 * first bytes, then, once the receiver's ACK names its request and the range
 * it wants, FRAGs pipelined over every path of the peer's send list in
 * proportion to their weights), synchronous sends (always RNDV: the ACK
 * proves the match) and the retries of both when a transport is out of
 * resources. A request is complete when the receiver has acknowledged what
 * the protocol needs and every descriptor has been called back.
 *
 * Re-entrancy: a transport may call a completion callback (or, for the self
 * transport, even the peer's receive handler, which may ACK) inside the send
 * call. While a function here works on a request it holds req->nest, and
 * callbacks then only update counters; the outer function finishes the
 * request when it unwinds. */
#define BM_LOG_SUBSYS "pml"
#include "util/log.h"

#include "pml/pml_internal.h"
#include "util/xproc.h"
#include "runtime/rte.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum bm_pml_send_phase {
    BM_PML_SPHASE_START = 0, /* first fragment (MATCH or RNDV) not sent yet */
    BM_PML_SPHASE_WAIT_ACK,  /* RNDV sent, waiting for the receiver's ACK */
    BM_PML_SPHASE_FRAGS,     /* ACKed: sending FRAGs */
    BM_PML_SPHASE_SENT,      /* everything handed to transports */
};

#define BM_PML_DES_FLAGS (BM_BTL_DES_F_BTL_OWNED | BM_BTL_DES_F_ALWAYS_CALLBACK)
/* A descriptor's context: the header type in the low 8 bits, the stripe
 * index + 1 above it (des_submit), or, for a direct send (no request), the
 * peer's world rank + 1 from this bit up (its callback is des_cb_direct). */
#define DIRECT_SHIFT 32
_Static_assert(sizeof(uintptr_t) >= 8, "direct sends keep the peer in a descriptor's context");

/* ---- per-peer send state (MPI_THREAD_MULTIPLE; README "Threads") ----------
 * A rendezvous started by its own thread without the progress lock
 * (send_rndv_free) keeps its protocol state under its peer's lock
 * (bm_pml_g.peer_tx[peer], req->tx_peer), not the progress lock's: the
 * FRAGs after the ACK are sent by a thread that takes the request off
 * the peer's kick list (its own thread first: tx_run), not by the drainer,
 * so threads sending large or non-contiguous messages to different peers
 * do not serialise. The peer's lock is a leaf: held only while a
 * request's fields are read or changed, never across a transport call,
 * so the drainer's callbacks, made under transport locks, may wait for
 * it. At most one thread works on such a request at a time (tx_busy);
 * an event the drainer meets meanwhile changes the fields it owns
 * (outstanding, the ACK's, ranges to resend) under the lock and sets
 * tx_again for the worker. Everything that needs the progress lock
 * (sending the RNDV again, a failed path, a restart timer's action) is the
 * drainer's: a worker without it queues the request with tx_drain. The
 * send's completion is not: such a send is watched on its peer's restart
 * list (restart.c), completes under its peer's lock in whichever thread
 * finds it done (tx_finish), and its owner frees it under that lock
 * (bm_pml_send_tx_free), so neither waits for the progress lock. */
static BM_PML_TLS uint16_t tx_me_id;
static uint16_t tx_ids;

/* This thread's number (1..65535, for the kick lists' owner preference). */
static uint16_t tx_me(void)
{
    while (__builtin_expect(tx_me_id == 0, 0))
        tx_me_id = __atomic_add_fetch(&tx_ids, 1, __ATOMIC_RELAXED);
    return tx_me_id;
}

static inline struct bm_pml_peer_tx *tx_of(const struct bm_pml_request *req)
{
    return &bm_pml_g.peer_tx[req->peer];
}

static inline void tx_lock(const struct bm_pml_request *req)
{
    if (__builtin_expect(req->tx_peer, 0))
        bm_util_lock_take(&tx_of(req)->lock);
}

static inline void tx_unlock(const struct bm_pml_request *req)
{
    if (__builtin_expect(req->tx_peer, 0))
        bm_util_lock_give(&tx_of(req)->lock);
}

/* The striping counters of a peer (stripe.c) are its per-peer senders' and
 * the drainer's: under MPI_THREAD_MULTIPLE they change under the peer's
 * lock, for every send (peer_tx exists only then). */
static inline void stripe_lock(int peer)
{
    if (__builtin_expect(bm_pml_g.peer_tx != NULL, 0))
        bm_util_lock_take(&bm_pml_g.peer_tx[peer].lock);
}

static inline void stripe_unlock(int peer)
{
    if (__builtin_expect(bm_pml_g.peer_tx != NULL, 0))
        bm_util_lock_give(&bm_pml_g.peer_tx[peer].lock);
}

/* A striped FRAG's descriptor came back with len payload bytes delivered
 * (0 when lost): stripe.c's count, the caller holding the peer's lock
 * when under MPI_THREAD_MULTIPLE. */
static void stripe_des_done(int peer, uintptr_t ctx, const struct bm_btl_descriptor *des,
                            int status)
{
    size_t len = 0;
    for (uint32_t i = 0; i < des->seg_count; i++)
        len += des->seg[i].len;
    bm_pml_stripe_done(peer, (int)(ctx >> 8) - 1,
                       status < 0 ? 0 : len - sizeof(struct bm_pml_hdr_frag));
}

/* Largest non-contiguous message packed on the stack for sendi. */
#define BM_PML_PACK_STACK 4096

/* A rendezvous whose FRAGs would carry at most 1/this of what its RNDV
 * carries is sent whole in the RNDV (send_first). */
#define BM_PML_RNDV_SLIVER_DIV 16

/* A descriptor holding reserve bytes of header, then up to *size bytes of
 * the message from offset at (*size is set to what it took). A contiguous
 * message goes through prepare_src (which may reference it in place); a
 * non-contiguous one is packed into the transport's buffer (through a
 * bounce for the first fragments of large-block types when that buffer is
 * in shared memory, BM_BTL_CAP_SEND_FAR: README). */
static struct bm_btl_descriptor *frag_prepare(struct bm_pml_request *req, struct bm_btl_module *m,
                                              struct bm_btl_endpoint *ep, size_t at, size_t reserve,
                                              size_t *size)
{
    if (!req->conv.type)
        return bm_btl_prepare_src(m, ep, req->sbuf + at, reserve, size, 0, BM_PML_DES_FLAGS);
    if (reserve > m->max_send_size)
        return NULL;
    size_t n = *size;
    if (n > m->max_send_size - reserve)
        n = m->max_send_size - reserve;
    struct bm_btl_descriptor *des = bm_btl_alloc(m, ep, 0, reserve + n, BM_PML_DES_FLAGS);
    if (!des)
        return NULL;
    /* The fragments of a message of at most BM_PML_PACK_BOUNCE bytes,
     * which the receiver waits for, through a bounce when the blocks are
     * large. In a larger message they cost more than they save (sm vec64
     * ping-pong p10 at load 32, bounce on -> off for the first 64 KiB: 128
     * KiB 12.4 -> 11.7 us, 256 KiB 20.7-21.0 -> 19.3-19.6, 512 KiB
     * 38.8-39.1 -> 36.8-37.1; 16/32/64 KiB 3.5/5.3-5.4/8.1-8.2 with it,
     * 5.0-5.4/7.6-7.8/9.0-9.2 without). */
    char *to = (char *)des->seg[0].addr + reserve;
    if (req->bytes <= bm_pml_g.cfg.pack_bounce && (m->caps & BM_BTL_CAP_SEND_FAR) &&
        bm_util_dtype_conv_far_bounce(&req->conv)) {
        bm_util_dtype_conv_pack_far(&req->conv, at, to, n);
        __atomic_fetch_add(&bm_pml_g.pack_bounced, n, __ATOMIC_RELAXED);
    } else {
        bm_util_dtype_conv_pack(&req->conv, at, to, n);
    }
    *size = n;
    return des;
}

/* A FRAG of a non-contiguous message sent from its blocks in place, not
 * packed (BM_BTL_CAP_SEND_IOV: tcp's sendmsg gathers them), when the type's
 * blocks average at least BM_PML_IOV_BLOCK_MIN bytes: below that the
 * kernel's cost per piece outweighs the copy. Such FRAGs are as large as
 * the transport takes (not BM_PML_PACK_FRAG_SIZE: there is no pack to
 * pipeline) up to BM_PML_IOV_PIECES blocks, so that a receiver with
 * receive placement (at most BM_BTL_IOV_MAX pieces) reads them into place
 * too. */
#define BM_PML_IOV_PIECES BM_BTL_IOV_MAX
static bool frag_iov_ok(const struct bm_pml_request *req, const struct bm_btl_module *m)
{
    const struct bm_util_dtype *t = req->conv.type;
    return t && (m->caps & BM_BTL_CAP_SEND_IOV) && bm_pml_iov_blocks(t);
}

/* frag_prepare for frag_iov_ok: the pieces of [at, at + *size), at most
 * BM_PML_IOV_PIECES of them (*size is cut to what they cover). */
static struct bm_btl_descriptor *frag_prepare_iov(struct bm_pml_request *req,
                                                  struct bm_btl_module *m,
                                                  struct bm_btl_endpoint *ep, size_t at,
                                                  size_t reserve, size_t *size)
{
    if (reserve >= m->max_send_size)
        return NULL;
    size_t n = *size;
    if (n > m->max_send_size - reserve)
        n = m->max_send_size - reserve;
    struct bm_btl_iov iov[BM_PML_IOV_PIECES];
    size_t done;
    uint32_t k = bm_pml_conv_iov(&req->conv, at, n, iov, BM_PML_IOV_PIECES, &done);
    if (k == 0 || done == 0)
        return NULL;
    struct bm_btl_descriptor *des =
        bm_btl_prepare_src_iov(m, ep, reserve, iov, k, BM_PML_DES_FLAGS);
    if (des) {
        *size = done;
        __atomic_fetch_add(&bm_pml_g.iov_frags, 1, __ATOMIC_RELAXED);
    }
    return des;
}

static void send_check_done(struct bm_pml_request *req)
{
    /* A pending cancel completes the send when its answer comes. */
    if (req->nest > 0 || req->state != BM_PML_REQ_ACTIVE || req->sphase != BM_PML_SPHASE_SENT ||
        req->cancelling)
        return;
    if (req->rndv && !req->acked)
        return;
    /* Kept for an end-to-end restart until the receiver has it all (restart.c). */
    if (req->need_done && !req->done_rcvd)
        return;
    /* An eager payload the transport copied frees the user's buffer at
     * once: the send completes without waiting for the peer to take it. */
    if (req->outstanding > 0 && (req->rndv || !req->copied))
        return;
    bm_pml_request_complete(req);
}

/* Undo the bookkeeping of a descriptor that never left. */
static void des_abandon(struct bm_pml_request *req, struct bm_btl_module *m,
                        struct bm_btl_descriptor *des)
{
    tx_lock(req);
    req->outstanding--;
    tx_unlock(req);
    if (req->tx_peer)
        __atomic_fetch_sub(&bm_pml_g.inflight_direct, 1, __ATOMIC_RELAXED);
    else
        bm_pml_g.inflight--;
    bm_btl_free(m, des);
}

static void des_cb_tx(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                      struct bm_btl_descriptor *des, int status);

/* A per-peer send's worker without the progress lock met a failed path:
 * the drainer reports it and tries again (set by des_submit). */
static BM_PML_TLS bool tx_failed_here;

/* Hand a filled descriptor to the path. BM_OK when it left (the callback
 * will fire), BM_ERR_OUT_OF_RESOURCE when it must be retried later, a link
 * or peer error after marking the path failed (the caller picks another),
 * or another refusal (the send fails). stripe: the path's send-list index
 * when the peer is striped adaptively (stripe.c), else -1; des->context
 * carries it above the header type. */
static inline __attribute__((always_inline)) int
des_submit_(struct bm_pml_request *req, struct bm_btl_path *path, struct bm_btl_descriptor *des,
            uint8_t type, int stripe, bool maybe_tx)
{
    des->cbfunc = bm_pml_des_cb;
    des->cbdata = req;
    des->context = (void *)((uintptr_t)type | (uintptr_t)(stripe + 1) << 8);
    if (maybe_tx && __builtin_expect(req->tx_peer, 0)) {
        /* per-peer state: counted under the peer's lock, in the atomic count */
        des->cbfunc = des_cb_tx;
        tx_lock(req);
        req->outstanding++;
        if (stripe >= 0)
            bm_pml_stripe_sent(req->peer, stripe);
        tx_unlock(req);
        __atomic_fetch_add(&bm_pml_g.inflight_direct, 1, __ATOMIC_RELAXED);
    } else {
        req->outstanding++;
        bm_pml_g.inflight++;
        if (stripe >= 0) {
            stripe_lock(req->peer);
            bm_pml_stripe_sent(req->peer, stripe);
            stripe_unlock(req->peer);
        }
    }
    int rc = bm_btl_send(path->module, path->endpoint, des, BM_PML_BTL_TAG(type));
    if (rc >= 0)
        return BM_OK;
    if (stripe >= 0) {
        stripe_lock(req->peer);
        bm_pml_stripe_done(req->peer, stripe, 0);
        stripe_unlock(req->peer);
    }
    des_abandon(req, path->module, des);
    if (bm_status_is_link(rc) || bm_status_is_peer(rc)) {
        if (maybe_tx && req->tx_peer && !bm_pml_in_drain()) {
            tx_failed_here = true; /* the drainer marks the path failed */
            return BM_ERR_OUT_OF_RESOURCE;
        }
        bm_pml_path_failed(req->peer, path, rc, "send failed");
    }
    return rc;
}

static int des_submit(struct bm_pml_request *req, struct bm_btl_path *path,
                      struct bm_btl_descriptor *des, uint8_t type, int stripe)
{
    return des_submit_(req, path, des, type, stripe, true);
}

/* After des_submit failed: true when another path should be tried. */
static bool retry_other_path(int rc)
{
    return bm_status_is_link(rc) || bm_status_is_peer(rc);
}

/* sendi of a small non-contiguous message, packed on the stack (out of
 * line: the contiguous path keeps a small frame). */
static __attribute__((noinline)) int sendi_packed(struct bm_pml_request *req,
                                                  struct bm_btl_path *path,
                                                  const struct bm_pml_hdr_match *mh)
{
    char packed[BM_PML_PACK_STACK];
    bm_util_dtype_conv_pack(&req->conv, 0, packed, req->bytes);
    return bm_btl_sendi(path->module, path->endpoint, mh, sizeof(*mh), packed, req->bytes, 0, 0,
                        BM_PML_BTL_TAG(BM_PML_HDR_MATCH), NULL);
}

static void pack_ahead(struct bm_pml_request *req);
static size_t frag_max(const struct bm_pml_request *req, const struct bm_btl_module *m, bool iov);

/* The bytes a RNDV of a contiguous message carries over a transport that
 * places FRAG payloads (BM_BTL_CAP_RECV_PLACE: tcp reads them straight into
 * the receive buffer), when first (what it would carry otherwise) leaves
 * FRAGs to send: only what the FRAGs cannot take in the number of them the
 * message needs anyway (a message of 1 MiB over tcp: 24 bytes, then one
 * FRAG of 1 MiB - 24; 128 KiB: none, one FRAG). The RNDV's bytes are copied
 * on both sides (into the transport's buffer, out of the connection's)
 * and must all arrive before the receiver can answer; FRAG bytes that the
 * transport places are copied by neither side. MPICH's UCX rendezvous
 * likewise sends its request without data. */
static size_t rndv_head(const struct bm_pml_request *req, const struct bm_btl_module *m,
                        size_t first)
{
    if (req->conv.type || !(m->caps & BM_BTL_CAP_RECV_PLACE) || first >= req->bytes)
        return first;
    size_t fmax = frag_max(req, m, false);
    if (fmax == 0)
        return first;
    size_t n = (req->bytes - first + fmax - 1) / fmax;
    size_t head = req->bytes > n * fmax ? req->bytes - n * fmax : 0;
    return head < first ? head : first;
}

void (*bm_pml_test_rndv_hook)(int inside);

/* A thread enters a path whose concurrency BM_PML_STATS and the mt tests
 * measure: *in counts the threads inside, *in_max keeps their most, and a
 * test's hook may hold the first one there until a second enters. */
static __attribute__((noinline)) void path_enter(int *in, int *in_max, void (**hookp)(int))
{
    int n = __atomic_add_fetch(in, 1, __ATOMIC_RELAXED);
    int max = __atomic_load_n(in_max, __ATOMIC_RELAXED);
    while (n > max &&
           !__atomic_compare_exchange_n(in_max, &max, n, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
    void (*hook)(int) = __atomic_load_n(hookp, __ATOMIC_ACQUIRE);
    if (hook)
        hook(n);
}

/* Under MPI_THREAD_MULTIPLE: a thread enters or leaves a rendezvous start
 * (locked or not); tests/mpi/mt_rndv.c holds one thread here. */
static inline void rndv_enter(void)
{
    path_enter(&bm_pml_g.rndv_in, &bm_pml_g.rndv_in_max, &bm_pml_test_rndv_hook);
}

static inline void rndv_leave(void)
{
    __atomic_fetch_sub(&bm_pml_g.rndv_in, 1, __ATOMIC_RELAXED);
}

/* The RNDV descriptor of req on path (its header after mh, the first
 * bytes of the message: rndv_head); req->first_len and frag_next set. *whole: it
 * carries all of a message just over the eager limit. NULL: no buffer. */
static struct bm_btl_descriptor *rndv_prepare(struct bm_pml_request *req,
                                              const struct bm_btl_path *path,
                                              const struct bm_pml_hdr_match *mh, bool *whole)
{
    struct bm_btl_module *m = path->module;
    struct bm_pml_hdr_rndv rh = {
        .match = *mh, .msg_len = req->bytes, .sreq = bm_pml_request_id(req)};
    rh.match.base.type = BM_PML_HDR_RNDV;
    size_t room = m->eager_limit > sizeof(rh) ? m->eager_limit - sizeof(rh) : 0;
    size_t first = req->bytes;
    if (first > m->rndv_eager_limit)
        first = m->rndv_eager_limit;
    if (first > room)
        first = room;
    /* A message just over the eager limit (64 KiB over tcp, whose limit
     * counts the header) would leave a sliver for one FRAG, sent only
     * after the ACK: a round trip more for a few bytes. The RNDV carries
     * all of it then (the transport may still take less). */
    size_t full = first;
    if (first == room && req->bytes - first <= room / BM_PML_RNDV_SLIVER_DIV)
        first = req->bytes;
    else
        first = rndv_head(req, m, first);
    size_t size = first;
    struct bm_btl_descriptor *des = frag_prepare(req, m, path->endpoint, 0, sizeof(rh), &size);
    if (!des)
        return NULL;
    memcpy(des->seg[0].addr, &rh, sizeof(rh));
    *whole = size > room && size == req->bytes;
    if (first < full)
        __atomic_fetch_add(&bm_pml_g.rndv_head_cut, 1, __ATOMIC_RELAXED);
    req->first_len = size;
    req->frag_next = size;
    return des;
}

/* Send the MATCH or RNDV fragment. */
static bm_status_t send_first(struct bm_pml_request *req)
{
    if (req->rndv && req->acked) {
        /* resent RNDV whose ACK came meanwhile: the receiver has it */
        req->sphase = req->frag_next < req->frag_end ? BM_PML_SPHASE_FRAGS : BM_PML_SPHASE_SENT;
        return BM_OK;
    }
    struct bm_btl_peer *peer = bm_btl_base_peer(req->peer);
    for (;;) {
        struct bm_btl_path *path = bm_pml_path_first(&peer->eager);
        if (!path)
            return bm_pml_peer_held(req->peer); /* waits until a path recovers */
        struct bm_btl_module *m = path->module;
        struct bm_pml_hdr_match mh = {
            .base = {.type = BM_PML_HDR_MATCH,
                     .flags = req->retransmit ? BM_PML_HDR_F_RETRANSMIT : 0},
            .cid = req->cid,
            .src = req->src_rank,
            .tag = req->tag,
            .seq = req->seq,
        };
        req->rndv = req->mode == BM_PML_SEND_SYNCHRONOUS || req->force_rndv ||
                    sizeof(mh) + req->bytes > m->eager_limit;
        if (!req->rndv) {
            if (bm_pml_sendi_ok(peer, m) && req->bytes <= bm_pml_g.cfg.sendi_limit &&
                (!req->conv.type || req->bytes <= BM_PML_PACK_STACK)) {
                int rc = req->conv.type ? sendi_packed(req, path, &mh)
                                        : bm_btl_sendi(m, path->endpoint, &mh, sizeof(mh),
                                                       req->sbuf, req->bytes, 0, 0,
                                                       BM_PML_BTL_TAG(BM_PML_HDR_MATCH), NULL);
                if (rc == BM_BTL_DONE) {
                    req->sphase = BM_PML_SPHASE_SENT;
                    return BM_OK;
                }
                if (bm_status_is_link(rc) || bm_status_is_peer(rc)) {
                    bm_pml_path_failed(req->peer, path, rc, "sendi failed");
                    continue;
                }
                /* out of resources or not available: the descriptor path decides */
            }
            size_t size = req->bytes;
            struct bm_btl_descriptor *des =
                frag_prepare(req, m, path->endpoint, 0, sizeof(mh), &size);
            if (!des)
                return BM_ERR_OUT_OF_RESOURCE;
            if (size != req->bytes) {
                /* The transport took less than its eager limit promised:
                 * the rendezvous protocol copes with any fragment size. */
                bm_btl_free(m, des);
                req->force_rndv = true;
                continue;
            }
            memcpy(des->seg[0].addr, &mh, sizeof(mh));
            req->sphase = BM_PML_SPHASE_SENT;
            /* In-place data is always in seg[1] (btl.h): one segment is a copy. */
            bool copied = !(m->caps & BM_BTL_CAP_SEND_INPLACE) || des->seg_count < 2;
            /* never a per-peer send (those are rendezvous: force_rndv) */
            int rc = des_submit_(req, path, des, BM_PML_HDR_MATCH, -1, false);
            if (rc == BM_OK) {
                req->copied = copied;
                return BM_OK;
            }
            req->sphase = BM_PML_SPHASE_START;
            if (!retry_other_path(rc))
                return rc;
            continue;
        }

        if (bm_pml_rdma_rget_ok(req)) {
            /* Single copy (rdma.c): the phase first, as FIN may come back inside the send. */
            req->sphase = BM_PML_SPHASE_WAIT_ACK;
            if (__builtin_expect(bm_pml_g.mt, 0))
                rndv_enter();
            bm_pml_rdma_rget_send(req, &mh);
            if (__builtin_expect(bm_pml_g.mt, 0))
                rndv_leave();
            return BM_OK;
        }
        bool whole;
        struct bm_btl_descriptor *des = rndv_prepare(req, path, &mh, &whole);
        if (!des)
            return BM_ERR_OUT_OF_RESOURCE;
        if (whole)
            __atomic_fetch_add(&bm_pml_g.rndv_whole, 1, __ATOMIC_RELAXED);
        req->sphase = req->acked ? BM_PML_SPHASE_FRAGS : BM_PML_SPHASE_WAIT_ACK;
        if (bm_pml_g.restart_timers)
            bm_pml_restart_watch(req); /* a RNDV with no ACK is sent again (restart.c) */
        if (__builtin_expect(bm_pml_g.mt, 0))
            rndv_enter();
        int rc = des_submit(req, path, des, BM_PML_HDR_RNDV, -1);
        if (__builtin_expect(bm_pml_g.mt, 0))
            rndv_leave();
        if (rc == BM_OK) {
            if (req->conv.type && !req->acked && req->frag_next < req->bytes &&
                bm_pml_g.cfg.pack_ahead && !req->ahead_des)
                pack_ahead(req);
            return BM_OK;
        }
        req->sphase = BM_PML_SPHASE_START;
        if (!retry_other_path(rc))
            return rc;
    }
}

/* The send-list path with the least traffic relative to its weight, among
 * the working paths of the best class that has one (standby classes carry
 * traffic only when every better path failed). */
static struct bm_btl_path *send_path(int dst, uint64_t **bytes_out)
{
    struct bm_btl_path_list *l = &bm_btl_base_peer(dst)->send;
    uint64_t *sent = bm_pml_g.path_bytes[dst];
    int best = -1;
    double best_score = 0;
    for (int i = 0; i < l->count; i++) {
        if (bm_pml_path_is_failed(&l->paths[i]))
            continue;
        if (best >= 0 && l->paths[i].cls != l->paths[best].cls)
            break;
        double w = l->paths[i].weight > 0 ? l->paths[i].weight : 1.0;
        double score = (double)__atomic_load_n(&sent[i], __ATOMIC_RELAXED) / w;
        if (best < 0 || score < best_score) {
            best = i;
            best_score = score;
        }
    }
    if (best < 0)
        return NULL;
    *bytes_out = &sent[best];
    return &l->paths[best];
}

/* The payload of a FRAG of a non-contiguous message, at most max: packed
 * fragments stay small (BM_PML_PACK_FRAG_SIZE, header included), so that
 * the receiver unpacks one while this side packs the next, and so that the
 * buffer packed into is one of the transport's pooled ones, warm in cache,
 * rather than a fresh allocation of max_send_size bytes per fragment. */
static size_t pack_frag_max(size_t max)
{
    size_t cap = bm_pml_g.cfg.pack_frag_size;
    if (cap > sizeof(struct bm_pml_hdr_frag) && max > cap - sizeof(struct bm_pml_hdr_frag))
        max = cap - sizeof(struct bm_pml_hdr_frag);
    return max;
}

/* The largest FRAG payload for module m (iov: sent from the blocks in
 * place, not packed). */
static size_t frag_max(const struct bm_pml_request *req, const struct bm_btl_module *m, bool iov)
{
    size_t max = m->max_send_size > sizeof(struct bm_pml_hdr_frag)
                     ? m->max_send_size - sizeof(struct bm_pml_hdr_frag)
                     : 0;
    if (bm_pml_g.cfg.frag_size_max && max > bm_pml_g.cfg.frag_size_max)
        max = bm_pml_g.cfg.frag_size_max;
    if (req->conv.type && !iov)
        max = pack_frag_max(max);
    return max;
}

/* FRAGs packed ahead and not yet sent or freed, in this process: at most
 * BM_PML_AHEAD_HELD at a time. A window of non-blocking sends would
 * otherwise pack one per message before the next message's RNDV leaves
 * (delaying it) into buffers that fall out of the cache before they are
 * sent (tcp, 16 sends of 128 KiB vectors: about 10% less bandwidth). */
#define BM_PML_AHEAD_HELD 1
static unsigned ahead_held;

/* A packed FRAG starting at offset at is one of the first the receiver
 * waits for, on a transport whose buffers are shared memory: cut to
 * BM_PML_PACK_FIRST_FRAG, so that the receiver unpacks a small one while
 * this side packs the next (pml.c has the measurements). Only while this
 * request is all this process has in flight: behind other transfers the
 * receiver has work anyway, and the smaller fragments only cost (sm, 16
 * vectors of 64 KiB per window: 5-8% less bandwidth). Only in messages of
 * at most BM_PML_PACK_BOUNCE bytes: in larger ones the receiver soon has
 * later FRAGs to unpack anyway, and the cut only added FRAGs (README,
 * "Small first fragments"). */
static bool frag_first(const struct bm_pml_request *req, const struct bm_btl_module *m, bool iov,
                       size_t at)
{
    return req->conv.type && !iov && at < bm_pml_g.cfg.pack_bounce &&
           req->bytes <= bm_pml_g.cfg.pack_bounce &&
           bm_pml_g.cfg.pack_first_frag > sizeof(struct bm_pml_hdr_frag) &&
           (m->caps & BM_BTL_CAP_SEND_FAR) &&
           (req->tx_peer ? __atomic_load_n(&bm_pml_g.inflight_direct, __ATOMIC_RELAXED)
                         : bm_pml_g.inflight) <= req->outstanding;
}

/* The payload of the next FRAG, starting at offset at, when left bytes
 * remain of the range being sent (resend: a range lost with its path). A packed message's last
 * FRAG also takes a sliver (at most 1/BM_PML_RNDV_SLIVER_DIV of a FRAG)
 * that would be left after it, up to what the transport takes: messages
 * of a power of two bytes over tcp otherwise end in a FRAG of 64 bytes
 * (RNDV 64 KiB - 40, FRAGs 64 KiB - 24), one more frame to send, receive
 * and unpack per message (tcp's pooled buffers hold 1/16 more than an
 * eager frame). */
static size_t frag_size(const struct bm_pml_request *req, const struct bm_btl_module *m, bool iov,
                        bool resend, size_t at, size_t left)
{
    size_t max = frag_max(req, m, iov);
    if (frag_first(req, m, iov, at) &&
        max > bm_pml_g.cfg.pack_first_frag - sizeof(struct bm_pml_hdr_frag))
        max = bm_pml_g.cfg.pack_first_frag - sizeof(struct bm_pml_hdr_frag);
    if (left <= max)
        return left;
    if (!resend && req->conv.type && !iov && left - max <= max / BM_PML_RNDV_SLIVER_DIV &&
        left <= frag_max(req, m, true))
        return left;
    return max;
}

void bm_pml_send_ahead_drop(struct bm_pml_request *req)
{
    if (!req->ahead_des)
        return;
    bm_btl_free(req->ahead_mod, req->ahead_des);
    req->ahead_des = NULL;
    __atomic_fetch_sub(&ahead_held, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&bm_pml_g.pack_ahead_dropped, 1, __ATOMIC_RELAXED);
}

/* Pack ahead (BM_PML_PACK_AHEAD): a non-contiguous rendezvous whose RNDV
 * just left packs its first FRAG now, on the path send_frags would pick,
 * instead of after the ACK: the pack (a 64 KiB one takes microseconds)
 * overlaps the RNDV's trip and the receiver's ACK and leaves the critical
 * path of every such message that needs FRAGs. Nothing when the transport
 * sends the blocks in place (nothing to pack) or has no buffer free. */
static void pack_ahead(struct bm_pml_request *req)
{
    if (__atomic_load_n(&ahead_held, __ATOMIC_RELAXED) >= BM_PML_AHEAD_HELD)
        return;
    uint64_t *counter;
    tx_lock(req); /* the weights (stripe.c), outstanding (frag_size) */
    struct bm_btl_path *path = send_path(req->peer, &counter);
    if (!path || frag_iov_ok(req, path->module)) {
        tx_unlock(req);
        return;
    }
    struct bm_btl_module *m = path->module;
    size_t size = frag_size(req, m, false, false, req->frag_next, req->bytes - req->frag_next);
    tx_unlock(req);
    struct bm_btl_descriptor *des =
        frag_prepare(req, m, path->endpoint, req->frag_next, sizeof(struct bm_pml_hdr_frag), &size);
    if (!des)
        return;
    __atomic_fetch_add(&ahead_held, 1, __ATOMIC_RELAXED);
    req->ahead_des = des;
    req->ahead_mod = m;
    req->ahead_ep = path->endpoint;
    req->ahead_at = req->frag_next;
    req->ahead_len = size;
}

/* The FRAG packed ahead when it is the one wanted now ([at, at + size) on
 * path; at is SIZE_MAX for a resent range), else NULL after freeing it. */
static struct bm_btl_descriptor *ahead_take(struct bm_pml_request *req,
                                            const struct bm_btl_path *path, size_t at, size_t size)
{
    if (at != req->ahead_at || size != req->ahead_len || path->module != req->ahead_mod ||
        path->endpoint != req->ahead_ep) {
        bm_pml_send_ahead_drop(req);
        return NULL;
    }
    struct bm_btl_descriptor *des = req->ahead_des;
    req->ahead_des = NULL;
    __atomic_fetch_sub(&ahead_held, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&bm_pml_g.pack_ahead_sent, 1, __ATOMIC_RELAXED);
    return des;
}

/* For tests: one more packed FRAG of size payload bytes sent. */
static void pack_frag_count(size_t size)
{
    __atomic_fetch_add(&bm_pml_g.pack_frags, 1, __ATOMIC_RELAXED);
    uint64_t big = __atomic_load_n(&bm_pml_g.pack_frag_largest, __ATOMIC_RELAXED);
    while (size > big && !__atomic_compare_exchange_n(&bm_pml_g.pack_frag_largest, &big, size, true,
                                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

void (*bm_pml_test_frag_hook)(int inside);

/* Under MPI_THREAD_MULTIPLE: a thread enters or leaves the FRAG path (a
 * per-peer send's worker, or the progress lock's holder);
 * tests/mpi/mt_frags.c holds one thread here. */
static inline void tx_frags_enter(void)
{
    path_enter(&bm_pml_g.frag_in, &bm_pml_g.frag_in_max, &bm_pml_test_frag_hook);
}

static inline void tx_frags_leave(void)
{
    __atomic_fetch_sub(&bm_pml_g.frag_in, 1, __ATOMIC_RELAXED);
}

/* Keep up to pipeline_depth FRAGs in flight: first the ranges lost with a
 * failed path, then the rest of the message in order. A per-peer send
 * (tx_peer) reads and changes its fields under its peer's lock, given back
 * around every transport call; its worker is the only thread that moves
 * frag_next or takes from the head of the resend list (callbacks only
 * append to it, and lower outstanding). */
static bm_status_t send_frags_in(struct bm_pml_request *req);

void (*bm_pml_test_frag_trace_hook)(int peer, bool enter);

static bm_status_t send_frags(struct bm_pml_request *req)
{
    if (__builtin_expect(!bm_pml_g.mt, 1))
        return send_frags_in(req);
    tx_frags_enter();
    void (*trace)(int, bool) = __atomic_load_n(&bm_pml_test_frag_trace_hook, __ATOMIC_ACQUIRE);
    if (__builtin_expect(trace != NULL, 0) && (!req->tx_peer || bm_pml_in_drain()))
        trace = NULL;
    int peer = req->peer; /* the request may be gone after send_frags_in */
    if (__builtin_expect(trace != NULL, 0))
        trace(peer, true);
    bm_status_t rc = send_frags_in(req);
    if (__builtin_expect(trace != NULL, 0))
        trace(peer, false);
    tx_frags_leave();
    return rc;
}

static bm_status_t send_frags_in(struct bm_pml_request *req)
{
    tx_lock(req);
    while ((req->resend || req->frag_next < req->frag_end) &&
           req->outstanding < bm_pml_g.cfg.pipeline_depth) {
        uint64_t *counter;
        struct bm_btl_path *path = send_path(req->peer, &counter);
        if (!path) {
            tx_unlock(req);
            if (req->tx_peer && !bm_pml_in_drain()) {
                tx_failed_here = true; /* held peers are the drainer's */
                return BM_ERR_OUT_OF_RESOURCE;
            }
            return bm_pml_peer_held(req->peer); /* waits until a path recovers */
        }
        struct bm_btl_module *m = path->module;
        bool iov = frag_iov_ok(req, m);
        struct bm_pml_resend *rs = req->resend;
        size_t at = rs ? rs->offset : req->frag_next;
        size_t size =
            frag_size(req, m, iov, rs != NULL, at, rs ? rs->len : req->frag_end - req->frag_next);
        struct bm_pml_hdr_frag fh = {
            .base = {.type = BM_PML_HDR_FRAG, .flags = rs ? BM_PML_HDR_F_RETRANSMIT : 0},
            .rreq = req->rreq,
            .offset = at,
        };
        tx_unlock(req);
        struct bm_btl_descriptor *des = NULL;
        if (__builtin_expect(req->ahead_des != NULL, 0))
            des = ahead_take(req, path, rs ? SIZE_MAX : at, size);
        if (!des)
            des = iov ? frag_prepare_iov(req, m, path->endpoint, at, sizeof(fh), &size)
                      : frag_prepare(req, m, path->endpoint, at, sizeof(fh), &size);
        if (!des)
            return BM_ERR_OUT_OF_RESOURCE;
        if (size == 0) {
            bm_btl_free(m, des);
            return BM_ERR_OUT_OF_RESOURCE;
        }
        memcpy(des->seg[0].addr, &fh, sizeof(fh));
        /* Account before the send: a callback may run inside it. */
        tx_lock(req);
        if (rs) {
            rs->offset += size;
            rs->len -= size;
            if (rs->len == 0)
                req->resend = rs->next;
        } else {
            req->frag_next += size;
        }
        tx_unlock(req);
        /* A resend range used up here is freed after the send; remember
         * that before, since the failure path below must not read it. */
        bool rs_used_up = rs && rs->len == 0;
        int stripe = bm_pml_g.stripe_on ? bm_pml_stripe_index(req->peer, path) : -1;
        int rc = des_submit(req, path, des, BM_PML_HDR_FRAG, stripe);
        if (rs_used_up)
            free(rs);
        tx_lock(req);
        if (rc == BM_OK) {
            /* path_bytes: read and written by senders to the peer under
             * the progress lock and by its per-peer senders (an estimate:
             * a lost update only shifts the weights' balance) */
            __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + size,
                             __ATOMIC_RELAXED);
            if (req->conv.type && !iov)
                pack_frag_count(size);
            if (frag_first(req, m, iov, at))
                __atomic_fetch_add(&bm_pml_g.pack_frags_first, 1, __ATOMIC_RELAXED);
            if (__builtin_expect(req->tx_peer, 0) && !bm_pml_in_drain())
                __atomic_fetch_add(&bm_pml_g.tx_frags_free, 1, __ATOMIC_RELAXED);
            continue;
        }
        /* not sent: give the range back */
        if (rs_used_up) {
            rs = malloc(sizeof(*rs));
            if (!rs)
                abort();
            rs->next = req->resend;
            rs->offset = at;
            rs->len = size;
            req->resend = rs;
        } else if (rs) {
            rs->offset -= size;
            rs->len += size;
        } else {
            req->frag_next = at;
        }
        if (!retry_other_path(rc)) {
            tx_unlock(req);
            return rc;
        }
    }
    if (req->frag_next >= req->frag_end && !req->resend)
        req->sphase = BM_PML_SPHASE_SENT;
    tx_unlock(req);
    return BM_OK;
}

/* Queue bytes [offset, offset + len) to be sent again in FRAGs. */
static void resend_queue(struct bm_pml_request *req, size_t offset, size_t len)
{
    struct bm_pml_resend *rs = malloc(sizeof(*rs));
    if (!rs)
        abort();
    rs->next = NULL;
    rs->offset = offset;
    rs->len = len;
    struct bm_pml_resend **pp = &req->resend;
    while (*pp)
        pp = &(*pp)->next;
    *pp = rs;
    if (req->sphase == BM_PML_SPHASE_SENT)
        req->sphase = BM_PML_SPHASE_FRAGS;
}

/* A FRAG was lost with its path: queue its range to be sent again. */
static void frag_lost(struct bm_pml_request *req, const struct bm_btl_descriptor *des)
{
    struct bm_pml_hdr_frag fh;
    memcpy(&fh, des->seg[0].addr, sizeof(fh));
    size_t len = 0;
    for (uint32_t i = 0; i < des->seg_count; i++)
        len += des->seg[i].len;
    resend_queue(req, fh.offset, len - sizeof(fh));
}

/* Advance a send as far as it can go now; queue it when a transport is out
 * of resources. Finishes it when nothing remains. */
static void send_advance(struct bm_pml_request *req)
{
    req->nest++;
    bm_status_t rc = BM_OK;
    if (req->sphase == BM_PML_SPHASE_START)
        rc = send_first(req);
    if (rc == BM_OK && req->sphase == BM_PML_SPHASE_FRAGS)
        rc = send_frags(req);
    req->nest--;
    if (rc == BM_ERR_OUT_OF_RESOURCE) {
        bm_pml_pending_add(req);
    } else if (rc != BM_OK) {
        /* The transport refused for good (a limit, a bad argument): the
         * send fails with that status once its fragments are back. */
        bm_log_error("send of %zu bytes to rank %d (tag %d) failed: %s", req->bytes, req->peer,
                     req->tag, bm_status_str(rc));
        req->status.error = rc;
        req->acked = true;
        req->frag_end = req->frag_next;
        req->sphase = BM_PML_SPHASE_SENT;
    }
    send_check_done(req);
}

bm_status_t bm_pml_send_resume(struct bm_pml_request *req)
{
    send_advance(req);
    return BM_OK;
}

/* Go on now unless a function up the stack works on it or it waits on the
 * retry queue (which resumes it). */
static void send_kick(struct bm_pml_request *req)
{
    if (req->nest == 0 && !req->pending)
        send_advance(req);
}

/* ---- per-peer send state: kick lists and workers ------------------------------ */

/* FRAGs are wanted and the pipeline has room (peer lock held). */
static bool tx_frag_work(const struct bm_pml_request *req)
{
    return req->sphase == BM_PML_SPHASE_FRAGS && (req->resend || req->frag_next < req->frag_end) &&
           req->outstanding < bm_pml_g.cfg.pipeline_depth;
}

/* Wake the threads that may take a kick (a waiting owner may sleep). */
static void tx_wake(void)
{
    bm_pml_wait_kick();
}

/* Put req on its peer's kick list (peer lock held, not busy); drain: for
 * the progress lock's holder. Returns whether it was newly queued. */
static bool tx_queue(struct bm_pml_request *req, bool drain)
{
    if (drain)
        req->tx_drain = true;
    if (req->tx_queued)
        return false;
    struct bm_pml_peer_tx *t = tx_of(req);
    req->tx_queued = true;
    req->tx_pass = (uint8_t)__atomic_load_n(&bm_pml_g.tx_pass, __ATOMIC_RELAXED);
    req->pend_next = NULL;
    if (t->tail)
        t->tail->pend_next = req;
    else
        t->head = req;
    t->tail = req;
    __atomic_store_n(&t->n, t->n + 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&bm_pml_g.tx_kicks, 1, __ATOMIC_RELAXED);
    return true;
}

/* Take req off its peer's kick list (peer lock held, req on it). */
static void tx_unqueue(struct bm_pml_request *req)
{
    struct bm_pml_peer_tx *t = tx_of(req);
    struct bm_pml_request **pp = &t->head, *prev = NULL;
    while (*pp != req) {
        prev = *pp;
        pp = &(*pp)->pend_next;
    }
    *pp = req->pend_next;
    if (t->tail == req)
        t->tail = prev;
    req->pend_next = NULL;
    req->tx_queued = false;
    __atomic_store_n(&t->n, t->n - 1, __ATOMIC_RELAXED);
    __atomic_fetch_sub(&bm_pml_g.tx_kicks, 1, __ATOMIC_RELAXED);
}

static void tx_drain_work(struct bm_pml_request *req, bool frags);

/* Complete a per-peer send that is done (its peer's lock held, not busy,
 * not queued; the lock is given back here), in whichever thread found it
 * done: the decision, leaving the peer's watch list and the completion's
 * store are made under the peer's lock, which the owner's free takes too
 * (bm_pml_send_tx_free), so exactly one of them releases the request.
 * Nothing here needs the progress lock: a per-peer send has no RGET
 * registration, and a FRAG packed ahead and never sent is freed after the
 * lock is given back. req may be gone on return. */
static void tx_finish(struct bm_pml_request *req)
{
    if (__atomic_load_n(&req->state, __ATOMIC_RELAXED) != BM_PML_REQ_ACTIVE ||
        req->sphase != BM_PML_SPHASE_SENT || (req->rndv && !req->acked) ||
        (req->need_done && !req->done_rcvd) || req->outstanding > 0) {
        tx_unlock(req);
        return;
    }
    struct bm_btl_descriptor *ahead = req->ahead_des;
    struct bm_btl_module *ahead_mod = req->ahead_mod;
    req->ahead_des = NULL;
    bool freed = req->user_freed;
    if (req->watched)
        bm_pml_restart_unwatch_locked(req);
    if (!bm_pml_in_drain())
        __atomic_fetch_add(&bm_pml_g.tx_done_free, 1, __ATOMIC_RELAXED);
    /* the status and the fields above first (release) */
    __atomic_store_n(&req->state, BM_PML_REQ_COMPLETE, __ATOMIC_RELEASE);
    tx_unlock(req); /* from here on the owner may free it, unless it did */
    if (ahead) {
        bm_btl_free(ahead_mod, ahead);
        __atomic_fetch_sub(&ahead_held, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&bm_pml_g.pack_ahead_dropped, 1, __ATOMIC_RELAXED);
    }
    if (freed) {
        __atomic_fetch_sub(&bm_pml_g.freed_active, 1, __ATOMIC_RELAXED);
        bm_pml_request_release(req);
    }
}

void bm_pml_send_tx_free(struct bm_pml_request *req)
{
    tx_lock(req);
    if (__atomic_load_n(&req->state, __ATOMIC_ACQUIRE) == BM_PML_REQ_COMPLETE) {
        /* nothing refers to it: no descriptor out, off every list */
        tx_unlock(req);
        __atomic_fetch_add(&bm_pml_g.tx_freed_free, 1, __ATOMIC_RELAXED);
        bm_pml_request_release(req);
        return;
    }
    /* MPI lets it finish after the free: whoever completes it releases it */
    req->user_freed = true;
    __atomic_fetch_add(&bm_pml_g.freed_active, 1, __ATOMIC_RELAXED);
    tx_unlock(req);
}

void bm_pml_send_tx_timer_locked(struct bm_pml_request *req, int waits)
{
    req->tx_timer = (uint8_t)waits;
    tx_queue(req, true);
}

/* After the drainer changed req (progress lock and peer lock held; the
 * peer lock is given back here): a busy worker looks again; otherwise the
 * drainer sends the RNDV again itself, leaves FRAGs to whoever takes the
 * kick (the send's own thread first), or completes the send. req may be
 * gone on return. */
static void tx_settle(struct bm_pml_request *req)
{
    if (req->tx_busy) {
        if (req->sphase == BM_PML_SPHASE_START)
            req->tx_drain = true;
        req->tx_again = true;
        tx_unlock(req);
        return;
    }
    if (req->sphase == BM_PML_SPHASE_START || req->tx_drain) {
        if (req->tx_queued)
            tx_unqueue(req);
        req->tx_drain = false;
        req->tx_busy = true;
        tx_unlock(req);
        tx_drain_work(req, false);
        return;
    }
    if (req->tx_queued) {
        tx_unlock(req); /* whoever takes it decides */
        return;
    }
    if (tx_frag_work(req)) {
        tx_queue(req, false);
        tx_unlock(req);
        tx_wake();
        return;
    }
    tx_finish(req);
}

/* The progress lock's holder works on req (tx_busy set by it, peer lock
 * not held): sends the RNDV again when it must, FRAGs only when frags (a
 * retry after a worker without the lock met a failed path or no path),
 * reports failures; then settles it. */
static void tx_drain_work(struct bm_pml_request *req, bool frags)
{
    tx_lock(req);
    uint8_t timer = req->tx_timer;
    req->tx_timer = 0;
    tx_unlock(req);
    if (timer == 1) {
        bm_pml_g.rndv_resent++;
        bm_log_debug("no ACK from rank %d for a %zu-byte rendezvous (tag %d): sending its RNDV "
                     "again",
                     req->peer, req->bytes, req->tag);
        tx_lock(req);
        if (!req->acked) {
            req->retransmit = true;
            req->sphase = BM_PML_SPHASE_START;
        }
        tx_unlock(req);
    } else if (timer == 2) {
        bm_pml_send_query(req);
    }
    req->nest++;
    bm_status_t rc = BM_OK;
    if (req->sphase == BM_PML_SPHASE_START)
        rc = send_first(req);
    if (rc == BM_OK && frags && req->sphase == BM_PML_SPHASE_FRAGS)
        rc = send_frags(req);
    req->nest--;
    tx_lock(req);
    req->tx_busy = false;
    if (rc == BM_ERR_OUT_OF_RESOURCE) {
        tx_queue(req, true); /* the drainer's next pass tries again */
        tx_unlock(req);
        return;
    }
    if (rc != BM_OK) {
        bm_log_error("send of %zu bytes to rank %d (tag %d) failed: %s", req->bytes, req->peer,
                     req->tag, bm_status_str(rc));
        req->status.error = rc;
        req->acked = true;
        req->frag_end = req->frag_next;
        req->resend = NULL;
        req->sphase = BM_PML_SPHASE_SENT;
    }
    if (req->tx_again) {
        req->tx_again = false;
        if (req->tx_drain || req->sphase == BM_PML_SPHASE_START) {
            tx_queue(req, true);
            tx_unlock(req);
            return;
        }
    }
    tx_settle(req);
}

/* A thread that holds no progress lock works on req (peer lock held,
 * tx_busy set, req off the kick list): sends the FRAGs it can, then
 * leaves req idle, or queued for a worker (no room in the pipeline or
 * the transport, tx_drain for the drainer: a failure, or nothing left but
 * to complete it). The peer lock is given back. */
static void tx_work(struct bm_pml_request *req)
{
    bool oor = false;
    for (;;) {
        req->tx_again = false;
        if (req->tx_drain || req->sphase != BM_PML_SPHASE_FRAGS)
            break;
        tx_unlock(req);
        tx_failed_here = false;
        bm_status_t rc = send_frags(req);
        bool failed = tx_failed_here;
        tx_lock(req);
        if (failed || (rc != BM_OK && rc != BM_ERR_OUT_OF_RESOURCE))
            req->tx_drain = true;
        else if (rc == BM_ERR_OUT_OF_RESOURCE)
            oor = true;
        if (!req->tx_again || oor)
            break;
    }
    req->tx_busy = false;
    bool queued = false;
    if (req->tx_drain)
        queued = tx_queue(req, true);
    else if (oor || tx_frag_work(req))
        queued = tx_queue(req, false);
    else if (req->sphase == BM_PML_SPHASE_SENT && req->outstanding == 0 && !req->tx_queued) {
        tx_finish(req); /* done, or waits for the drainer's next event */
        return;
    }
    tx_unlock(req);
    if (queued)
        tx_wake();
}

/* May this thread take req from a kick list now? Its own sends at once,
 * others' once they waited a drainer's pass (their thread had the
 * chance), and those for the drainer only with the progress lock. */
static bool tx_takes(const struct bm_pml_request *req, bool drainer, uint8_t pass, uint16_t me)
{
    if (req->tx_drain)
        return drainer;
    if (drainer)
        return false;
    return req->tx_owner == me || req->tx_pass != pass;
}

int bm_pml_tx_run(bool drainer)
{
    if (__atomic_load_n(&bm_pml_g.tx_kicks, __ATOMIC_RELAXED) <= 0)
        return 0;
    if (drainer)
        __atomic_store_n(&bm_pml_g.tx_pass, bm_pml_g.tx_pass + 1, __ATOMIC_RELAXED);
    uint8_t pass = (uint8_t)__atomic_load_n(&bm_pml_g.tx_pass, __ATOMIC_RELAXED);
    uint16_t me = tx_me();
    int n = 0;
    for (int p = 0; p < bm_pml_g.world_size; p++) {
        struct bm_pml_peer_tx *t = &bm_pml_g.peer_tx[p];
        if (__atomic_load_n(&t->n, __ATOMIC_RELAXED) == 0)
            continue;
        bm_util_lock_take(&t->lock);
        /* Each entry once per call: a request queued again meanwhile
         * waits for the next call (a transport out of resources is not
         * retried in a loop). */
        int budget = t->n;
        struct bm_pml_request *req = t->head;
        while (req && budget-- > 0) {
            struct bm_pml_request *next = req->pend_next;
            if (!tx_takes(req, drainer, pass, me)) {
                req = next;
                continue;
            }
            tx_unqueue(req);
            req->tx_busy = true;
            n++;
            if (drainer) {
                req->tx_drain = false;
                bm_util_lock_give(&t->lock);
                tx_drain_work(req, true);
            } else {
                tx_work(req);
            }
            bm_util_lock_take(&t->lock);
            req = t->head; /* the list changed while the lock was given back */
        }
        bm_util_lock_give(&t->lock);
    }
    return n;
}

bm_status_t bm_pml_tx_init(void)
{
    static struct bm_util_lock_class tx_class = {.name = "peer send", .leaf = true};
    bm_pml_g.peer_tx = aligned_alloc(64, (size_t)bm_pml_g.world_size * sizeof(*bm_pml_g.peer_tx));
    if (!bm_pml_g.peer_tx)
        return BM_ERR_NO_MEMORY;
    memset(bm_pml_g.peer_tx, 0, (size_t)bm_pml_g.world_size * sizeof(*bm_pml_g.peer_tx));
    for (int p = 0; p < bm_pml_g.world_size; p++)
        bm_util_lock_init(&bm_pml_g.peer_tx[p].lock, &tx_class, false);
    return BM_OK;
}

void bm_pml_tx_fini(void)
{
    if (!bm_pml_g.peer_tx)
        return;
    for (int p = 0; p < bm_pml_g.world_size; p++)
        bm_util_lock_destroy(&bm_pml_g.peer_tx[p].lock);
    free(bm_pml_g.peer_tx);
    bm_pml_g.peer_tx = NULL;
}

/* A descriptor of a per-peer send came back (the drainer): its count and
 * a lost FRAG's range change under the peer's lock, then tx_settle. */
static void des_cb_tx(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                      struct bm_btl_descriptor *des, int status)
{
    struct bm_pml_request *req = des->cbdata;
    uint8_t type = (uint8_t)(uintptr_t)des->context;
    __atomic_fetch_sub(&bm_pml_g.inflight_direct, 1, __ATOMIC_RELAXED);
    if (req->start_free && bm_pml_g.restart_timers)
        bm_pml_restart_watch(req); /* its RNDV's callback, or the ACK's: the first */
    if (status < 0)
        bm_pml_path_failed_ep(req->peer, m, ep, status);
    tx_lock(req);
    req->outstanding--;
    if ((uintptr_t)des->context >> 8)
        stripe_des_done(req->peer, (uintptr_t)des->context, des, status);
    if (status < 0) {
        if (type == BM_PML_HDR_RNDV && !req->acked) {
            req->retransmit = true;
            req->sphase = BM_PML_SPHASE_START;
        } else if (type == BM_PML_HDR_FRAG) {
            frag_lost(req, des);
        }
    }
    tx_settle(req);
}

void bm_pml_send_resend_range(struct bm_pml_request *req, size_t offset, size_t len)
{
    resend_queue(req, offset, len);
}

void bm_pml_send_rndv_again(struct bm_pml_request *req)
{
    bm_pml_g.rndv_resent++;
    bm_log_debug("no ACK from rank %d for a %zu-byte rendezvous (tag %d): sending its RNDV again",
                 req->peer, req->bytes, req->tag);
    if (req->tx_peer) {
        tx_lock(req);
        req->retransmit = true;
        req->sphase = BM_PML_SPHASE_START;
        tx_settle(req);
        return;
    }
    req->retransmit = true;
    req->sphase = BM_PML_SPHASE_START;
    send_kick(req);
}

void bm_pml_send_query(struct bm_pml_request *req)
{
    bm_pml_g.rndv_queries++;
    bm_log_debug("no DONE from rank %d for a %zu-byte rendezvous (tag %d): asking", req->peer,
                 req->bytes, req->tag);
    struct bm_pml_hdr_rndv rh = {
        .match = {.base = {.type = BM_PML_HDR_RNDV,
                           .flags = BM_PML_HDR_F_RETRANSMIT | BM_PML_HDR_F_QUERY},
                  .cid = req->cid,
                  .src = req->src_rank,
                  .tag = req->tag,
                  .seq = req->seq},
        .msg_len = req->bytes,
        .sreq = bm_pml_request_id(req),
    };
    bm_pml_ctl_send(req->peer, BM_PML_BTL_TAG(BM_PML_HDR_RNDV), &rh, sizeof(rh));
}

static int watch_state(const struct bm_pml_request *req);

int bm_pml_send_watch_state_locked(const struct bm_pml_request *req)
{
    return req->tx_busy || req->tx_queued ? 0 : watch_state(req);
}

int bm_pml_send_watch_state(const struct bm_pml_request *req)
{
    if (!req->tx_peer)
        return watch_state(req);
    tx_lock(req);
    int w = bm_pml_send_watch_state_locked(req);
    tx_unlock(req);
    return w;
}

static int watch_state(const struct bm_pml_request *req)
{
    if (req->pending || req->nest > 0 || req->outstanding > 0 || req->cancelling)
        return 0;
    if (!req->acked)
        return req->sphase == BM_PML_SPHASE_WAIT_ACK ? 1 : 0;
    if (req->need_done && !req->done_rcvd && req->sphase == BM_PML_SPHASE_SENT)
        return 2;
    return 0;
}

static inline bm_status_t send_check_args(const void *buf, size_t bytes, int dst_world,
                                          int src_rank, int tag)
{
    if (dst_world < 0 || dst_world >= bm_pml_g.world_size || tag < 0 || src_rank < 0 ||
        (!buf && bytes > 0))
        return BM_ERR_BAD_PARAM;
    return BM_OK;
}

static bm_status_t send_check(const void *buf, size_t bytes, int dst_world, int src_rank, int tag)
{
    if (!bm_pml_g.initialized)
        return BM_ERR_NOT_AVAILABLE;
    return send_check_args(buf, bytes, dst_world, src_rank, tag);
}

/* A message to this process itself is delivered by a progress call; one
 * sent by a thread while another sleeps (README "Waiting") must wake it.
 * mt: bm_pml_g.mt, or false where the caller knows it (a constant). */
static inline __attribute__((always_inline)) void send_kick_self_mt(int dst_world, bool mt)
{
    if (__builtin_expect(mt, 0) && dst_world == bm_pml_g.my_rank)
        bm_pml_wait_kick();
}

static inline void send_kick_self(int dst_world)
{
    send_kick_self_mt(dst_world, bm_pml_g.mt);
}

static void des_cb_rndv_free(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                             struct bm_btl_descriptor *des, int status);

/* send_rndv_free's single copy: an RGET (bm_pml_rdma_rget_free_ok: sm's
 * get, a registering transport's get with the buffer registered by this
 * thread, or a non-contiguous layout's getv), sent by sendi on the first
 * eager path (the control queue and inflight are the drainer's: a refused
 * sendi leaves the start to it). The RGET goes ahead of control messages
 * queued to the peer (the queue's order is the drainer's): they belong to
 * other messages, which their sequence numbers order. decided: the caller
 * already asked bm_pml_rdma_rget_free_ok (true). */
static bool send_rget_free(struct bm_pml_request *req, struct bm_btl_peer *peer,
                           struct bm_btl_path *path, const struct bm_pml_hdr_match *mh,
                           bool decided)
{
    if (!bm_pml_sendi_ok(peer, path->module) || (!decided && !bm_pml_rdma_rget_free_ok(req)))
        return false;
    req->rndv = true;
    req->sphase = BM_PML_SPHASE_WAIT_ACK;
    rndv_enter();
    bm_util_xproc_release(); /* the FIN or ACK comes back through the peer */
    int rc = bm_pml_rdma_rget_sendi(req, mh, path);
    rndv_leave();
    if (rc == BM_BTL_DONE) {
        __atomic_fetch_add(&bm_pml_g.sends_rndv_free, 1, __ATOMIC_RELAXED);
        return true;
    }
    req->rndv = false;
    req->sphase = BM_PML_SPHASE_START;
    req->first_len = 0;
    req->frag_next = 0;
    req->frag_end = req->bytes;
    return false;
}

/* Per-peer send state for a send to peer: under MPI_THREAD_MULTIPLE, when
 * no transport on its send list is serialised by the base (every one
 * locks for itself, so none calls back under a lock a sender takes). */
static bool tx_ok(const struct bm_btl_peer *peer)
{
    if (!bm_pml_g.peer_tx)
        return false;
    for (int i = 0; i < peer->send.count; i++)
        if (peer->send.paths[i].module->component->mt_lock)
            return false;
    return true;
}

/* Rendezvous starts without the progress lock (MPI_THREAD_MULTIPLE;
 * README "Threads"). A thread that finds the progress lock taken starts a
 * rendezvous itself instead of leaving it to the lock's holder,
 * when nothing of the start needs that lock: its first eager path on a
 * transport that locks for itself, not to itself, and where the peer has
 * a single-copy path, an RGET (send_rget_free: sm's get, a registering
 * transport's get, a non-contiguous layout's getv; sm's contiguous RGETs
 * under BM_PML_RGET_PUT_MIN only while the peer's last one is done, rdma.c
 * rget_alone, and are deferred otherwise). Until the
 * RNDV is handed to the transport the request is this thread's alone
 * (nobody can name it yet). Where the peer's send paths allow it (tx_ok)
 * its state is then its peer's (per-peer send state, above): this thread
 * packs ahead, and sends the FRAGs itself when the ACK came meanwhile;
 * later ones go to whoever takes the kick the ACK leaves. Otherwise it
 * touches the request no more: the descriptor's callback and the ACK find
 * it from the drainer, under the progress lock, as for any send. So two
 * threads start rendezvous sends to different peers at once. False when
 * it did not go (the caller defers it; nothing of it is left). */
static __attribute__((noinline)) bool send_rndv_free(struct bm_pml_request *req, bool tx_only)
{
    if (req->retransmit)
        return false;
    struct bm_btl_peer *peer = bm_btl_base_peer(req->peer);
    struct bm_btl_path *path = bm_pml_path_first(&peer->eager);
    if (!path || path->module->component->mt_lock)
        return false;
    struct bm_btl_module *m = path->module;
    struct bm_pml_hdr_match mh = {.base = {.type = BM_PML_HDR_MATCH},
                                  .cid = req->cid,
                                  .src = req->src_rank,
                                  .tag = req->tag,
                                  .seq = req->seq};
    if (req->mode != BM_PML_SEND_SYNCHRONOUS && sizeof(mh) + req->bytes <= m->eager_limit)
        return false;
    bool tx = tx_ok(peer);
    if (tx_only && !tx)
        return false;
    /* To itself: RNDV and FRAGs (no RGET to itself, rdma.c rget_decide),
     * self locking for itself (one leaf endpoint lock, no callback from
     * inside a send). */
    if (peer->rdma.count != 0 && req->peer != bm_pml_g.my_rank) {
        if (!req->conv.type && tx_only)
            return false; /* an RGET: the lock's holder sends it as well */
        if (!req->conv.type)
            return send_rget_free(req, peer, path, &mh, false);
        /* non-contiguous: an RGET where the receiver reads its pieces (getv),
         * else packed FRAGs (below) */
        if (bm_pml_rdma_rget_free_ok(req))
            return !tx_only && send_rget_free(req, peer, path, &mh, true);
    }
    if (req->conv.type && !tx)
        return false;
    bool whole;
    req->rndv = true;
    struct bm_btl_descriptor *des = rndv_prepare(req, path, &mh, &whole);
    if (!des) {
        req->rndv = false;
        return false;
    }
    req->sphase = BM_PML_SPHASE_WAIT_ACK;
    req->outstanding++;
    /* The restart watch list is the drainer's: it watches the send when it
     * first meets it (the RNDV's callback or the ACK, whichever is first). */
    req->start_free = true;
    des->cbfunc = des_cb_rndv_free;
    des->cbdata = req;
    des->context = (void *)(uintptr_t)BM_PML_HDR_RNDV;
    if (tx) {
        des->cbfunc = des_cb_tx;
        req->force_rndv = true; /* sent again, it stays a rendezvous */
        req->tx_peer = true;
        req->tx_owner = tx_me();
        tx_lock(req);
        req->tx_busy = true; /* this thread's until it lets go (tx_work) */
        tx_unlock(req);
    }
    __atomic_fetch_add(&bm_pml_g.inflight_direct, 1, __ATOMIC_RELAXED);
    rndv_enter();
    /* The ACK comes back through the peer (bm_pml_send_ack_cb acquires). */
    bm_util_xproc_release();
    int rc = bm_btl_send(m, path->endpoint, des, BM_PML_BTL_TAG(BM_PML_HDR_RNDV));
    rndv_leave();
    if (rc >= 0) {
        if (whole)
            __atomic_fetch_add(&bm_pml_g.rndv_whole, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&bm_pml_g.sends_rndv_free, 1, __ATOMIC_RELAXED);
        if (tx) {
            tx_lock(req);
            bool acked = req->acked;
            tx_unlock(req);
            if (req->conv.type && !acked && req->frag_next < req->bytes &&
                bm_pml_g.cfg.pack_ahead && !req->ahead_des)
                pack_ahead(req);
            tx_lock(req);
            tx_work(req);
        }
        return true;
    }
    /* Not taken: undone, and the deferred start sends it (and reports a
     * failed path) under the progress lock. */
    __atomic_fetch_sub(&bm_pml_g.inflight_direct, 1, __ATOMIC_RELAXED);
    if (tx) {
        tx_lock(req);
        req->tx_busy = false;
        tx_unlock(req);
        req->tx_peer = false;
        req->tx_owner = 0;
        req->force_rndv = false;
    }
    req->outstanding--;
    bm_btl_free(m, des);
    req->sphase = BM_PML_SPHASE_START;
    req->rndv = false;
    req->start_free = false;
    req->first_len = 0;
    req->frag_next = 0;
    return false;
}

/* A new send request, started with sequence number seq (UINT64_MAX: take
 * the next one now) and advanced as far as it goes. */
static bm_status_t send_new(const void *buf, size_t bytes, const struct bm_util_dtype_conv *conv,
                            int dst_world, uint32_t cid, int src_rank, int tag,
                            enum bm_pml_send_mode mode, uint64_t seq,
                            struct bm_pml_request **req_out)
{
    struct bm_pml_request *req = bm_pml_request_alloc(BM_PML_REQ_SEND);
    if (!req) {
        /* Only when memory is gone: the job cannot go on with a sequence
         * number taken and never sent. */
        if (seq != UINT64_MAX)
            abort();
        return BM_ERR_NO_MEMORY;
    }
    if (seq == UINT64_MAX)
        seq = bm_pml_match_next_seq(cid, dst_world);
    *req_out = req;
    if (conv) {
        req->conv = *conv;
        bm_util_dtype_retain((struct bm_util_dtype *)(uintptr_t)conv->type);
    }
    req->sbuf = buf;
    req->bytes = bytes;
    req->peer = dst_world;
    req->cid = cid;
    req->src_rank = src_rank;
    req->tag = tag;
    req->mode = (uint8_t)mode;
    req->frag_end = bytes;
    req->seq = (uint32_t)seq;
    req->status.source = src_rank;
    req->status.tag = tag;
    req->status.count = bytes;
    /* The protocol runs under the progress lock: from here on the
     * drainer's callbacks may reach the request. A thread that finds it
     * taken does not wait for the drainer's pass: the drainer starts the
     * send as it lets go (README "Threads", deferred starts). */
    int t = bm_pml_try_enter();
    if (__builtin_expect(t != 0, 0)) {
        if (t < 0) {
            if (!send_rndv_free(req, false))
                bm_pml_start_defer(req);
            else
                send_kick_self(dst_world);
            return BM_OK;
        }
        /* Taken: a rendezvous whose state can be its peer's is started
         * the same way all the same, so that its FRAGs are its thread's. */
        if (send_rndv_free(req, true)) {
            bm_pml_leave(true);
            send_kick_self(dst_world);
            return BM_OK;
        }
    }
    send_advance(req);
    bm_pml_leave(t > 0);
    send_kick_self(dst_world);
    return BM_OK;
}

void bm_pml_send_start_deferred(struct bm_pml_request *req)
{
    send_advance(req);
    send_kick_self(req->peer);
}

bm_status_t bm_pml_isend(const void *buf, size_t bytes, int dst_world, uint32_t cid, int src_rank,
                         int tag, enum bm_pml_send_mode mode, struct bm_pml_request **req_out)
{
    bm_status_t rc = send_check(buf, bytes, dst_world, src_rank, tag);
    if (rc != BM_OK)
        return rc;
    return send_new(buf, bytes, NULL, dst_world, cid, src_rank, tag, mode, UINT64_MAX, req_out);
}

static void des_cb_direct(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                          struct bm_btl_descriptor *des, int status);

/* Direct sends (MPI_THREAD_MULTIPLE; README "Threads"): a small standard
 * send to a peer whose eager path has no sendi but locks for itself
 * (BM_BTL_CAP_THREADS: tcp) goes as a descriptor the transport copies,
 * with no request and without the progress lock, as sendi would: the
 * message is complete once copied. The descriptor names no request: its
 * context holds the header type and the peer (above DIRECT_SHIFT), and
 * its callback (des_cb_direct, from the drainer) only resends the copy
 * when the path failed, as for an eager send completed from its copy. So
 * threads sending to different peers over tcp meet on no lock of the PML
 * but their contexts'. True when the transport took it; otherwise the
 * request path sends it with the sequence number taken. */
static __attribute__((noinline)) bool send_direct(const void *buf, size_t bytes, int dst_world,
                                                  uint32_t cid, int src_rank, int tag,
                                                  struct bm_btl_path *path, uint64_t *seq_out)
{
    /* Called when sendi was not usable: a path whose transport has no sendi
     * (or refuses it to this peer) is ours when the transport locks for
     * itself (BM_BTL_CAP_THREADS: the base does not serialise it) and the
     * message fits its eager limit. */
    if (!path || path->module->component->mt_lock ||
        sizeof(struct bm_pml_hdr_match) + bytes > path->module->eager_limit)
        return false;
    uint32_t seq = bm_pml_match_next_seq(cid, dst_world);
    *seq_out = seq;
    struct bm_pml_hdr_match mh = {
        .base = {.type = BM_PML_HDR_MATCH}, .cid = cid, .src = src_rank, .tag = tag, .seq = seq};
    struct bm_btl_module *m = path->module;
    size_t size = bytes;
    struct bm_btl_descriptor *des =
        bm_btl_prepare_src(m, path->endpoint, buf, sizeof(mh), &size, 0, BM_PML_DES_FLAGS);
    if (!des)
        return false;
    if (size != bytes || des->seg_count != 1) { /* not copied whole: the request path */
        bm_btl_free(m, des);
        return false;
    }
    memcpy(des->seg[0].addr, &mh, sizeof(mh));
    des->cbfunc = des_cb_direct; /* its own: bm_pml_des_cb checks for no direct send */
    des->cbdata = NULL;
    des->context = (void *)((uintptr_t)BM_PML_HDR_MATCH | (uintptr_t)(unsigned)(dst_world + 1)
                                                              << DIRECT_SHIFT);
    __atomic_fetch_add(&bm_pml_g.inflight_direct, 1, __ATOMIC_RELAXED);
    int rc = bm_btl_send(m, path->endpoint, des, BM_PML_BTL_TAG(BM_PML_HDR_MATCH));
    if (rc >= 0) {
        __atomic_fetch_add(&bm_pml_g.sends_direct, 1, __ATOMIC_RELAXED);
        return true;
    }
    __atomic_fetch_sub(&bm_pml_g.inflight_direct, 1, __ATOMIC_RELAXED);
    bm_btl_free(m, des);
    if (bm_status_is_link(rc) || bm_status_is_peer(rc))
        bm_pml_path_failed(dst_world, path, rc, "send failed");
    return false;
}

/* A standard send small enough for sendi goes straight to the transport,
 * with no request: true when sendi took it (or, under
 * MPI_THREAD_MULTIPLE, a direct send). Otherwise *seq_out holds the
 * sequence number taken (UINT64_MAX when none was) for the request path.
 * mt: bm_pml_g.mt, a constant false on the single-threaded path, which so
 * checks no thread flag. */
static inline __attribute__((always_inline)) bool send_inline(const void *buf, size_t bytes,
                                                              int dst_world, uint32_t cid,
                                                              int src_rank, int tag,
                                                              uint64_t *seq_out, bool mt)
{
    *seq_out = UINT64_MAX;
    struct bm_btl_peer *peer = bm_btl_base_peer(dst_world);
    struct bm_btl_path *path = bm_pml_path_first(&peer->eager);
    if (!path || !bm_pml_sendi_ok(peer, path->module) ||
        sizeof(struct bm_pml_hdr_match) + bytes > path->module->eager_limit)
        return __builtin_expect(mt, 0) &&
               send_direct(buf, bytes, dst_world, cid, src_rank, tag, path, seq_out);
    uint32_t seq = bm_pml_match_next_seq(cid, dst_world);
    *seq_out = seq;
    struct bm_pml_hdr_match mh = {
        .base = {.type = BM_PML_HDR_MATCH}, .cid = cid, .src = src_rank, .tag = tag, .seq = seq};
    int rc = bm_btl_sendi(path->module, path->endpoint, &mh, sizeof(mh), buf, bytes, 0, 0,
                          BM_PML_BTL_TAG(BM_PML_HDR_MATCH), NULL);
    if (rc == BM_BTL_DONE) {
        send_kick_self_mt(dst_world, mt);
        return true;
    }
    if (bm_status_is_link(rc) || bm_status_is_peer(rc))
        bm_pml_path_failed(dst_world, path, rc, "sendi failed");
    return false;
}

/* bm_pml_isend_or_done of a process that is not on the single-threaded
 * path: under MPI_THREAD_MULTIPLE (direct sends), or not initialized. */
static __attribute__((noinline)) bm_status_t
isend_or_done_any(const void *buf, size_t bytes, int dst_world, uint32_t cid, int src_rank, int tag,
                  enum bm_pml_send_mode mode, struct bm_pml_request **req_out)
{
    bm_status_t rc = send_check(buf, bytes, dst_world, src_rank, tag);
    if (rc != BM_OK)
        return rc;
    uint64_t seq = UINT64_MAX;
    if (mode == BM_PML_SEND_STANDARD && bytes <= bm_pml_g.cfg.sendi_limit &&
        send_inline(buf, bytes, dst_world, cid, src_rank, tag, &seq, bm_pml_g.mt))
        return BM_OK;
    return send_new(buf, bytes, NULL, dst_world, cid, src_rank, tag, mode, seq, req_out);
}

/* bm_pml_isend_or_done, *req_out already NULL: inline in it and in
 * bm_pml_send (MPI_Send's one call into the PML). bm_pml_g.st: initialized
 * and not MPI_THREAD_MULTIPLE, the one flag this path checks (in place of
 * initialized). */
static inline __attribute__((always_inline)) bm_status_t
isend_or_done(const void *buf, size_t bytes, int dst_world, uint32_t cid, int src_rank, int tag,
              enum bm_pml_send_mode mode, struct bm_pml_request **req_out)
{
    if (__builtin_expect(!bm_pml_g.st, 0))
        return isend_or_done_any(buf, bytes, dst_world, cid, src_rank, tag, mode, req_out);
    bm_status_t rc = send_check_args(buf, bytes, dst_world, src_rank, tag);
    if (rc != BM_OK)
        return rc;
    uint64_t seq = UINT64_MAX;
    if (mode == BM_PML_SEND_STANDARD && bytes <= bm_pml_g.cfg.sendi_limit &&
        send_inline(buf, bytes, dst_world, cid, src_rank, tag, &seq, false))
        return BM_OK;
    return send_new(buf, bytes, NULL, dst_world, cid, src_rank, tag, mode, seq, req_out);
}

bm_status_t bm_pml_isend_or_done(const void *buf, size_t bytes, int dst_world, uint32_t cid,
                                 int src_rank, int tag, enum bm_pml_send_mode mode,
                                 struct bm_pml_request **req_out)
{
    *req_out = NULL;
    return isend_or_done(buf, bytes, dst_world, cid, src_rank, tag, mode, req_out);
}

/* The peer's eager path takes sendi: worth packing a small message on the
 * stack for it. Otherwise (tcp has no sendi) the descriptor path packs it
 * once, into the transport's buffer. */
static bool sendi_possible(int dst_world)
{
    struct bm_btl_peer *peer = bm_btl_base_peer(dst_world);
    struct bm_btl_path *path = bm_pml_path_first(&peer->eager);
    return path && bm_pml_sendi_ok(peer, path->module);
}

/* A non-contiguous send (buf may be NULL: MPI_BOTTOM with absolute
 * displacements). or_done: a small standard send is packed on the stack and
 * sent inline, with no request. */
static bm_status_t send_dt(const void *buf, size_t count, struct bm_util_dtype *type, int dst_world,
                           uint32_t cid, int src_rank, int tag, enum bm_pml_send_mode mode,
                           bool or_done, struct bm_pml_request **req_out)
{
    struct bm_util_dtype_conv conv;
    bm_util_dtype_conv_init(&conv, type, buf, count);
    bm_status_t rc = send_check(buf, 0, dst_world, src_rank, tag);
    if (rc != BM_OK)
        return rc;
    if (conv.contig) {
        /* One run: the byte paths (prepare_src in place, RGET with a PUT share). */
        const char *at = conv.base + type->pdisp;
        if (or_done)
            return bm_pml_isend_or_done(at, conv.total, dst_world, cid, src_rank, tag, mode,
                                        req_out);
        return bm_pml_isend(at, conv.total, dst_world, cid, src_rank, tag, mode, req_out);
    }
    uint64_t seq = UINT64_MAX;
    if (or_done && mode == BM_PML_SEND_STANDARD && conv.total <= bm_pml_g.cfg.sendi_limit &&
        conv.total <= BM_PML_PACK_STACK && sendi_possible(dst_world)) {
        char packed[BM_PML_PACK_STACK];
        bm_util_dtype_conv_pack(&conv, 0, packed, conv.total);
        /* a plain add (an estimate under threads): a locked one waits for
         * the stores of the last receive to drain (recv.c irecv_dt) */
        __atomic_store_n(&bm_pml_g.stack_packs,
                         __atomic_load_n(&bm_pml_g.stack_packs, __ATOMIC_RELAXED) + 1,
                         __ATOMIC_RELAXED);
        if (send_inline(packed, conv.total, dst_world, cid, src_rank, tag, &seq, bm_pml_g.mt))
            return BM_OK;
    }
    return send_new(NULL, conv.total, &conv, dst_world, cid, src_rank, tag, mode, seq, req_out);
}

bm_status_t bm_pml_isend_dt(const void *buf, size_t count, struct bm_util_dtype *type,
                            int dst_world, uint32_t cid, int src_rank, int tag,
                            enum bm_pml_send_mode mode, struct bm_pml_request **req_out)
{
    return send_dt(buf, count, type, dst_world, cid, src_rank, tag, mode, false, req_out);
}

bm_status_t bm_pml_isend_or_done_dt(const void *buf, size_t count, struct bm_util_dtype *type,
                                    int dst_world, uint32_t cid, int src_rank, int tag,
                                    enum bm_pml_send_mode mode, struct bm_pml_request **req_out)
{
    *req_out = NULL;
    return send_dt(buf, count, type, dst_world, cid, src_rank, tag, mode, true, req_out);
}

bm_status_t bm_pml_send(const void *buf, size_t bytes, int dst_world, uint32_t cid, int src_rank,
                        int tag, enum bm_pml_send_mode mode)
{
    struct bm_pml_request *req = NULL;
    bm_status_t rc = isend_or_done(buf, bytes, dst_world, cid, src_rank, tag, mode, &req);
    if (rc != BM_OK || !req)
        return rc;
    struct bm_pml_status st;
    bm_pml_request_wait(req, &st);
    if (__builtin_expect(st.error != BM_OK, 0))
        bm_pml_fault_claim(req);
    bm_pml_request_free(req);
    return (bm_status_t)st.error;
}

/* The ACK of a per-peer send (the drainer, the peer's lock held: it
 * checked under it that the request is still active, since such a send
 * may complete and be freed in another thread): its fields change under
 * the lock; the FRAGs it asks for are left to the kick's taker. */
static void tx_ack(struct bm_pml_request *req, const struct bm_pml_hdr_ack *ah)
{
    if (ah->base.flags & (BM_PML_HDR_F_RESTART | BM_PML_HDR_F_DONE)) {
        bm_pml_restart_ack(req, ah); /* end to end (restart.c) */
        tx_settle(req);
        return;
    }
    if (req->acked) {
        tx_unlock(req);
        return; /* a duplicate after a path failure */
    }
    if (req->start_free && bm_pml_g.restart_timers)
        bm_pml_restart_watch_locked(req); /* before its RNDV's callback (send_rndv_free) */
    req->acked = true;
    req->rreq = ah->rreq;
    req->need_done = req->watched && ah->offset < ah->length;
    if (ah->offset < req->frag_next)
        req->frag_next = ah->offset;
    req->frag_end = ah->length;
    if (req->sphase == BM_PML_SPHASE_WAIT_ACK)
        req->sphase = req->frag_next < req->frag_end ? BM_PML_SPHASE_FRAGS : BM_PML_SPHASE_SENT;
    tx_settle(req);
}

void bm_pml_send_ack_cb(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata)
{
    (void)m;
    (void)cbdata;
    struct bm_pml_hdr_ack ah;
    size_t len = d->seg_count ? d->seg[0].len : 0;
    if (len < sizeof(ah)) {
        bm_log_ratelimited(BM_LOG_ERROR, "dropped a short ACK (%zu bytes) from rank %d", len,
                           d->peer);
        return;
    }
    memcpy(&ah, d->seg[0].addr, sizeof(ah));
    bm_pml_restart_heard(d->peer);
    /* The sender of a rendezvous started without the progress lock wrote
     * the request last before its RNDV left (send_rndv_free). */
    bm_util_xproc_acquire();
    struct bm_pml_request *req = bm_pml_request_lookup(ah.sreq, BM_PML_REQ_SEND);
    /* A per-peer send completes and is freed under its peer's lock, in any
     * thread: looked at again under that lock (the table's lock, a leaf,
     * cannot be taken under it: the lock-free check). */
    struct bm_util_lock *pl = NULL;
    if (req && bm_pml_g.peer_tx) {
        pl = &bm_pml_g.peer_tx[d->peer].lock;
        bm_util_lock_take(pl);
        if (!bm_pml_request_active(ah.sreq, BM_PML_REQ_SEND))
            req = NULL;
    }
    if (!req || req->peer != d->peer || !req->rndv || ah.offset > req->bytes ||
        ah.length > req->bytes) {
        if (pl)
            bm_util_lock_give(pl);
        if (ah.base.flags & (BM_PML_HDR_F_RETRANSMIT | BM_PML_HDR_F_RESTART | BM_PML_HDR_F_DONE)) {
            bm_log_debug("dropped a resent ACK from rank %d for a finished send", d->peer);
            return;
        }
        bm_log_ratelimited(BM_LOG_ERROR,
                           "dropped an ACK from rank %d naming no rendezvous in progress "
                           "(request %#llx)",
                           d->peer, (unsigned long long)ah.sreq);
        return;
    }
    if (req->tx_peer) {
        tx_ack(req, &ah); /* gives the peer's lock back */
        return;
    }
    if (pl)
        bm_util_lock_give(pl);
    if (ah.base.flags & (BM_PML_HDR_F_RESTART | BM_PML_HDR_F_DONE)) {
        bm_pml_restart_ack(req, &ah); /* end to end (restart.c) */
        send_kick(req);
        return;
    }
    if (req->acked)
        return; /* a duplicate after a path failure */
    if (req->start_free && bm_pml_g.restart_timers)
        bm_pml_restart_watch(req); /* before its RNDV's callback (send_rndv_free) */
    req->acked = true;
    req->rreq = ah.rreq;
    /* A receiver that asked for FRAGs confirms their arrival (DONE); a
     * watched send waits for it, to serve a restart (restart.c). */
    req->need_done = req->watched && ah.offset < ah.length;
    if (ah.offset < req->frag_next)
        req->frag_next = ah.offset;
    req->frag_end = ah.length;
    if (req->sphase == BM_PML_SPHASE_WAIT_ACK)
        req->sphase = req->frag_next < req->frag_end ? BM_PML_SPHASE_FRAGS : BM_PML_SPHASE_SENT;
    if (req->nest == 0 && !req->pending)
        send_advance(req);
}

/* The descriptor of a direct send (no request) came back: on an error, the
 * copy it holds is resent as a control message, as for an eager send that
 * completed from its copy (below). */
static void des_cb_direct(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                          struct bm_btl_descriptor *des, int status)
{
    int peer = (int)((uintptr_t)des->context >> DIRECT_SHIFT) - 1;
    __atomic_fetch_sub(&bm_pml_g.inflight_direct, 1, __ATOMIC_RELAXED);
    if (status < 0) {
        bm_pml_path_failed_ep(peer, m, ep, status);
        struct bm_pml_hdr_base *hb = des->seg[0].addr;
        hb->flags |= BM_PML_HDR_F_RETRANSMIT;
        bm_pml_ctl_sendv(peer, BM_PML_BTL_TAG(BM_PML_HDR_MATCH), des->seg, des->seg_count);
    }
}

static void des_cb_req(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                       struct bm_btl_descriptor *des, int status, uintptr_t ctx);

void bm_pml_des_cb(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                   struct bm_btl_descriptor *des, int status)
{
    bm_pml_g.inflight--;
    des_cb_req(m, ep, des, status, (uintptr_t)des->context);
}

/* The RNDV of a rendezvous started without the progress lock (counted in
 * inflight_direct, atomic, as its sender held no lock): the drainer runs
 * it as any other. */
static void des_cb_rndv_free(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                             struct bm_btl_descriptor *des, int status)
{
    __atomic_fetch_sub(&bm_pml_g.inflight_direct, 1, __ATOMIC_RELAXED);
    if (bm_pml_g.restart_timers)
        bm_pml_restart_watch(des->cbdata); /* no-op once watched */
    des_cb_req(m, ep, des, status, (uintptr_t)des->context);
}

static inline __attribute__((always_inline)) void des_cb_req(struct bm_btl_module *m,
                                                             struct bm_btl_endpoint *ep,
                                                             struct bm_btl_descriptor *des,
                                                             int status, uintptr_t ctx)
{
    uint8_t type = (uint8_t)ctx;
    if (type == BM_PML_DES_CTL) {
        bm_pml_ctl_done(m, ep, des->cbdata, status);
        return;
    }
    struct bm_pml_request *req = des->cbdata;
    req->outstanding--;
    if (ctx >> 8) {
        /* a striped FRAG: what its path delivered (stripe.c) */
        stripe_lock(req->peer);
        stripe_des_done(req->peer, ctx, des, status);
        stripe_unlock(req->peer);
    }
    if (req->state == BM_PML_REQ_COMPLETE) {
        /* An eager send already completed from its copy. If the copy was
         * lost with its path, resend it from the descriptor (the receiver
         * drops a duplicate by its sequence number). */
        if (status < 0) {
            bm_pml_path_failed_ep(req->peer, m, ep, status);
            struct bm_pml_hdr_base *hb = des->seg[0].addr;
            hb->flags |= BM_PML_HDR_F_RETRANSMIT;
            bm_pml_ctl_sendv(req->peer, BM_PML_BTL_TAG(type), des->seg, des->seg_count);
        }
        bm_pml_request_des_returned(req);
        return;
    }
    if (status < 0) {
        /* MATCH and RNDV are resent with their sequence number, on the next
         * working path (or once one recovers): the receiver drops the copy
         * it may already have. */
        bm_pml_path_failed_ep(req->peer, m, ep, status);
        if (type == BM_PML_HDR_MATCH || (type == BM_PML_HDR_RNDV && !req->acked)) {
            req->retransmit = true;
            req->sphase = BM_PML_SPHASE_START;
        } else if (type == BM_PML_HDR_FRAG) {
            /* The receiver counts each byte once, so a FRAG that did
             * arrive after all does no harm when sent again. */
            frag_lost(req, des);
        }
    }
    if (req->nest > 0 || req->pending)
        return;
    send_advance(req);
}

/* ---- cancelling a send ------------------------------------------------------
 * MPI_Cancel of a send: the message may be dropped only while it waits
 * unmatched at the receiver, so the sender asks (CANCEL) and the receiver
 * answers (CANCEL_ACK). Meanwhile the send request stays active (an eager
 * send that had completed becomes active again), so that MPI_Wait returns
 * only once the outcome is known; a refused cancel lets the send finish as
 * if nothing had been asked. Sends that completed inside the call, without
 * a request (sendi), cannot be named and are not cancelled. */

void bm_pml_send_cancel(struct bm_pml_request *req)
{
    /* A per-peer send is not cancelled (its descriptors and state are its
     * peer's, not the lock holder's): it completes as if nothing had been
     * asked, which MPI permits; Open MPI's ob1 cancels no send at all. */
    if (req->tx_peer)
        return;
    struct bm_pml_hdr_cancel ch = {
        .match = {.base = {.type = BM_PML_HDR_CANCEL},
                  .cid = req->cid,
                  .src = req->src_rank,
                  .tag = req->tag,
                  .seq = req->seq},
        .sreq = bm_pml_request_id(req),
    };
    req->cancelling = true;
    bm_pml_ctl_send(req->peer, BM_PML_BTL_TAG(BM_PML_HDR_CANCEL), &ch, sizeof(ch));
}

void bm_pml_cancel_cb(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata)
{
    (void)m;
    (void)cbdata;
    struct bm_pml_hdr_cancel ch;
    size_t len = d->seg_count ? d->seg[0].len : 0;
    if (len < sizeof(ch)) {
        bm_log_ratelimited(BM_LOG_ERROR, "dropped a short CANCEL (%zu bytes) from rank %d", len,
                           d->peer);
        return;
    }
    memcpy(&ch, d->seg[0].addr, sizeof(ch));
    struct bm_pml_hdr_cancel_ack ca = {
        .base = {.type = BM_PML_HDR_CANCEL_ACK},
        .dropped =
            bm_pml_match_cancel(ch.match.cid, ch.match.src, ch.match.tag, ch.match.seq, d->peer),
        .sreq = ch.sreq,
    };
    bm_pml_ctl_send(d->peer, BM_PML_BTL_TAG(BM_PML_HDR_CANCEL_ACK), &ca, sizeof(ca));
}

void bm_pml_cancel_ack_cb(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata)
{
    (void)m;
    (void)cbdata;
    struct bm_pml_hdr_cancel_ack ca;
    size_t len = d->seg_count ? d->seg[0].len : 0;
    if (len < sizeof(ca)) {
        bm_log_ratelimited(BM_LOG_ERROR, "dropped a short CANCEL_ACK (%zu bytes) from rank %d", len,
                           d->peer);
        return;
    }
    memcpy(&ca, d->seg[0].addr, sizeof(ca));
    struct bm_pml_request *req = bm_pml_request_lookup(ca.sreq, BM_PML_REQ_SEND);
    if (!req || req->peer != d->peer || !req->cancelling) {
        bm_log_ratelimited(BM_LOG_ERROR,
                           "dropped a CANCEL_ACK from rank %d naming no send being cancelled "
                           "(request %#llx)",
                           d->peer, (unsigned long long)ca.sreq);
        return;
    }
    req->cancelling = false;
    if (ca.dropped) {
        /* Nothing of the message will be delivered, nor asked for. */
        req->status.cancelled = true;
        req->status.count = 0;
        req->status.error = BM_OK;
        bm_pml_request_complete(req);
        return;
    }
    send_check_done(req);
}
