/* End-to-end recovery of rendezvous messages, for the losses no transport
 * reports (bfo's restart protocol, for the case where no error arrives).
 * The transports promise that a successful completion means delivery
 * (btl.h); this covers a transport that breaks the promise. A receiver
 * that asked for FRAGs and sees no new byte for BM_PML_RESTART_MS asks the
 * sender again for each missing range (an ACK with F_RESTART and a restart
 * number); a sender whose RNDV gets no ACK for that time sends it again; a
 * sender that keeps its message until the receiver's DONE and gets none
 * asks (a RNDV with F_QUERY), and the receiver answers with the ranges it
 * misses, or DONE when it has finished. The restart number keeps a stale
 * restart, overtaken by a newer one, from being served twice; every FRAG
 * sent again is counted once by the receiver (recv.c ranges), and a
 * duplicate RNDV is dropped by its sequence number (match.c), so a restart
 * that was not needed only costs the bytes sent again. Each further
 * timeout of one message doubles its wait, up to 8 times the parameter.
 * Peers in an outage (failover.c) are not timed: their traffic is held.
 *
 * Progress is counted per peer too: a sender serves its messages to one
 * receiver in order, so the last of a long window (64 x 4 MiB take 2 s on
 * 1 GbE) waits behind the others from the moment its ACK left. Every FRAG
 * or ACK heard from a peer (bm_pml_restart_heard) resets the timers of the
 * requests with that peer, so a request times out only when the peer sent
 * nothing at all for the timeout: a FRAG lost while the peer's other
 * messages still flow is asked for again once they stop. A restart that
 * was not needed sends bytes twice; their originals then arrive for a
 * receive that completed (or a copy arrives first on another path): such a
 * FRAG is expected, not an error (bm_pml_restart_dup_frag).
 *
 * The timers are the last resort. A transport whose path fails may drop
 * what it was receiving on it (a fragment half reassembled) while the
 * sender's transport, whose side of the path did not fail, gets the rest
 * through once the path works again and reports it all delivered. So when
 * a path to a peer fails on this side (failover.c calls
 * bm_pml_restart_path_lost), the receives from that peer restart at the
 * next progress pass, and the peer hears of it (LOST) and sends again each
 * RNDV to us that has no ACK yet, at once or as soon as its transport
 * gives it back: the pause is the failure detection, not the timer. */
#define BM_LOG_SUBSYS "pml"
#include "util/log.h"

#include "pml/pml_internal.h"
#include "util/clock.h"
#include "util/params.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct restart_params {
    int restart_ms;
};

/* 1 s: far above what a working transport takes to deliver a pipeline of
 * FRAGs (milliseconds), short enough that a lost FRAG costs a job little.
 * A peer that does not call MPI for longer makes the other side ask
 * again for bytes that are still on their way: only a few bytes are sent
 * twice, and the doubling keeps that rare. */
static const struct bm_param restart_param_list[] = {
    {"BM_PML_RESTART_MS", BM_PARAM_INT, "1000", 0, 3600000, NULL,
     "Milliseconds a rendezvous may make no progress before it is restarted end to end: the "
     "receiver asks the sender again for the bytes it misses, a RNDV that got no answer is "
     "sent again, and senders keep a message until the receiver confirms it (one small "
     "message per rendezvous). Covers data lost without an error from the transport. 0 turns "
     "the timers off (receivers still confirm, so ranks with different values work together).",
     offsetof(struct restart_params, restart_ms), 0},
};
static const struct bm_param_table restart_table = {"pml", restart_param_list,
                                                    BM_PARAM_COUNT(restart_param_list)};
BM_PARAM_TABLE_REGISTER(restart_table);

/* Rendezvous receives that finished lately, for a sender whose ACK (or
 * DONE) was lost and that sends its RNDV again. */
#define RESTART_HISTORY 64

/* Missing ranges asked for in one restart; the last one covers the rest. */
#define RESTART_MAX_RANGES 16
/* Progress passes between two looks at the clock while something is watched. */
#define RESTART_TICK_MASK 15u
/* Receives completed after a restart, whose FRAGs may still come twice. */
#define RESTART_DUP_HISTORY 64

static struct {
    struct restart_params p;
    uint64_t timeout_ns;
    uint64_t next_scan;
    unsigned tick;
    struct bm_pml_request *head;
    bool told;      /* the first restart is said at info level, the others at debug */
    bool told_fast; /* the same for the first restart after a path failure */
    unsigned nlost; /* watched requests marked lost (req->lost) */
    struct {
        int peer;
        bm_pml_reqid_t sreq;
        size_t want;
    } done[RESTART_HISTORY];
    unsigned ndone; /* entries written (the ring's next slot modulo its size) */
    struct {
        int peer;
        bm_pml_reqid_t rreq;
    } restarted[RESTART_DUP_HISTORY];
    unsigned nrestarted; /* entries written, as ndone */
    bool tx_lost;        /* some peer's per-peer sends are marked lost (peer_tx nlost) */
} rs;

bm_status_t bm_pml_restart_init(void)
{
    bm_status_t rc = bm_util_params_load(&restart_table, &rs.p);
    if (rc != BM_OK)
        return rc;
    rs.timeout_ns = (uint64_t)rs.p.restart_ms * 1000000ull;
    rs.next_scan = 0;
    rs.head = NULL;
    rs.told = false;
    rs.told_fast = false;
    rs.nlost = 0;
    rs.ndone = 0;
    rs.nrestarted = 0;
    rs.tx_lost = false;
    bm_pml_g.restart_timers = rs.p.restart_ms > 0;
    free(bm_pml_g.restart_heard);
    bm_pml_g.restart_heard = NULL;
    if (bm_pml_g.restart_timers) {
        bm_pml_g.restart_heard = calloc((size_t)bm_pml_g.world_size, sizeof(uint16_t));
        if (!bm_pml_g.restart_heard)
            return BM_ERR_NO_MEMORY;
    }
    return BM_OK;
}

void bm_pml_restart_fini(void)
{
    free(bm_pml_g.restart_heard);
    bm_pml_g.restart_heard = NULL;
}

/* The peer's arrival count (0 without timers). */
static inline uint16_t heard_of(int peer_world)
{
    return bm_pml_g.restart_heard ? bm_pml_g.restart_heard[peer_world] : 0;
}

/* A per-peer send (tx_peer is a send's field: a receive's is not cleared). */
static inline bool watch_tx(const struct bm_pml_request *req)
{
    return req->kind == BM_PML_REQ_SEND && req->tx_peer;
}

/* The list a request is watched on: its peer's for a per-peer send
 * (under its peer's lock), else the progress lock's. */
static inline struct bm_pml_request **watch_head(const struct bm_pml_request *req)
{
    return watch_tx(req) ? &bm_pml_g.peer_tx[req->peer].watch : &rs.head;
}

void bm_pml_restart_watch_locked(struct bm_pml_request *req)
{
    if (req->watched)
        return;
    struct bm_pml_request **head = watch_head(req);
    req->watched = true;
    req->lost = false;
    req->tries = 0;
    req->watch_ns = bm_util_clock_now_ns();
    req->watch_heard = heard_of(req->kind == BM_PML_REQ_RECV ? req->src_world : req->peer);
    req->watch_prev = NULL;
    req->watch_next = *head;
    if (*head)
        (*head)->watch_prev = req;
    *head = req;
    /* atomic: per-peer sends leave their lists without the progress lock */
    __atomic_fetch_add(&bm_pml_g.nwatch, 1, __ATOMIC_RELAXED);
}

void bm_pml_restart_unwatch_locked(struct bm_pml_request *req)
{
    if (!req->watched)
        return;
    req->watched = false;
    if (req->lost) {
        req->lost = false;
        if (watch_tx(req))
            bm_pml_g.peer_tx[req->peer].nlost--;
        else
            rs.nlost--;
    }
    if (req->watch_prev)
        req->watch_prev->watch_next = req->watch_next;
    else
        *watch_head(req) = req->watch_next;
    if (req->watch_next)
        req->watch_next->watch_prev = req->watch_prev;
    req->watch_next = req->watch_prev = NULL;
    __atomic_fetch_sub(&bm_pml_g.nwatch, 1, __ATOMIC_RELAXED);
}

void bm_pml_restart_watch(struct bm_pml_request *req)
{
    if (!watch_tx(req)) {
        bm_pml_restart_watch_locked(req);
        return;
    }
    struct bm_util_lock *l = &bm_pml_g.peer_tx[req->peer].lock;
    bm_util_lock_take(l);
    bm_pml_restart_watch_locked(req);
    bm_util_lock_give(l);
}

void bm_pml_restart_unwatch(struct bm_pml_request *req)
{
    if (!watch_tx(req)) {
        bm_pml_restart_unwatch_locked(req);
        return;
    }
    struct bm_util_lock *l = &bm_pml_g.peer_tx[req->peer].lock;
    bm_util_lock_take(l);
    bm_pml_restart_unwatch_locked(req);
    bm_util_lock_give(l);
}

/* ---- receiver ---------------------------------------------------------------- */

void bm_pml_restart_recv_started(struct bm_pml_request *req, bm_pml_reqid_t sreq, size_t ack_offset)
{
    req->rndv_sreq = sreq;
    req->ack_offset = ack_offset;
    req->restart_seq = 0;
    req->watch_mark = req->arrived;
    bm_pml_restart_watch(req);
}

void bm_pml_restart_recv_finished(int peer_world, bm_pml_reqid_t sreq, size_t want)
{
    unsigned i = rs.ndone++ % RESTART_HISTORY;
    rs.done[i].peer = peer_world;
    rs.done[i].sreq = sreq;
    rs.done[i].want = want;
}

bool bm_pml_restart_dup_frag(int peer_world, bm_pml_reqid_t rreq)
{
    size_t n = rs.nrestarted < RESTART_DUP_HISTORY ? rs.nrestarted : RESTART_DUP_HISTORY;
    for (size_t i = 0; i < n; i++)
        if (rs.restarted[i].peer == peer_world && rs.restarted[i].rreq == rreq) {
            bm_pml_g.restart_dup_frags++;
            return true;
        }
    return false;
}

void bm_pml_restart_recv_done(struct bm_pml_request *req)
{
    if (!req->watched)
        return;
    bm_pml_restart_recv_finished(req->src_world, req->rndv_sreq, req->want);
    if (req->restart_seq > 0) {
        /* restarted: the originals of what came again may still arrive */
        unsigned i = rs.nrestarted++ % RESTART_DUP_HISTORY;
        rs.restarted[i].peer = req->src_world;
        rs.restarted[i].rreq = bm_pml_request_id(req);
    }
    struct bm_pml_hdr_ack done = {
        .base = {.type = BM_PML_HDR_ACK, .flags = BM_PML_HDR_F_DONE},
        .sreq = req->rndv_sreq,
        .offset = req->want,
        .length = req->want,
    };
    int peer = req->src_world;
    bm_pml_restart_unwatch(req);
    bm_pml_ctl_send(peer, BM_PML_BTL_TAG(BM_PML_HDR_ACK), &done, sizeof(done));
}

/* One restart: an ACK with F_RESTART for each range of [0, want) that has
 * not arrived (RESTART_MAX_RANGES at most, the last one up to want).
 * fast: after a path failure, not after a timeout. */
static void recv_restart(struct bm_pml_request *req, bool fast)
{
    struct bm_pml_hdr_ack ack = {
        .base = {.type = BM_PML_HDR_ACK, .flags = BM_PML_HDR_F_RESTART},
        .ctl_seq = ++req->restart_seq,
        .sreq = req->rndv_sreq,
        .rreq = bm_pml_request_id(req),
    };
    size_t missing = req->want - req->arrived;
    if (fast) {
        if (!rs.told_fast)
            bm_log_info("a path to rank %d failed: asking it at once for the %zu of %zu bytes of "
                        "a rendezvous (tag %d) not arrived yet, which may have been lost on that "
                        "path (said once, later ones at debug level)",
                        req->src_world, missing, req->want, req->status.tag);
        else
            bm_log_debug("restart %u of the rendezvous from rank %d after a path failure: %zu "
                         "bytes missing",
                         req->restart_seq, req->src_world, missing);
        rs.told_fast = true;
    } else if (!rs.told) {
        rs.told = true;
        bm_log_info("a rendezvous from rank %d (tag %d, %zu of %zu bytes arrived) made no "
                    "progress for %d ms: asking the sender for the missing bytes again "
                    "(BM_PML_RESTART_MS; said once, later ones at debug level)",
                    req->src_world, req->status.tag, req->arrived, req->want, rs.p.restart_ms);
    } else {
        bm_log_debug("restart %u of the rendezvous from rank %d: %zu bytes missing",
                     req->restart_seq, req->src_world, missing);
    }
    int sent = 0;
    size_t at = 0; /* end of what arrived before the gap looked at */
    if (req->nranges == 0)
        at = req->arrived; /* only the RNDV's bytes so far */
    for (int i = 0; i <= req->nranges && at < req->want; i++) {
        size_t end = i < req->nranges ? req->ranges[i].start : req->want;
        if (sent == RESTART_MAX_RANGES - 1)
            end = req->want;
        if (end > at) {
            ack.offset = at;
            ack.length = end;
            bm_pml_ctl_send(req->src_world, BM_PML_BTL_TAG(BM_PML_HDR_ACK), &ack, sizeof(ack));
            bm_pml_g.restarts_asked++;
            sent++;
        }
        if (end == req->want)
            break;
        if (i < req->nranges && req->ranges[i].end > at)
            at = req->ranges[i].end;
    }
}

static struct bm_pml_request *recv_find(int peer_world, bm_pml_reqid_t sreq)
{
    for (struct bm_pml_request *r = rs.head; r; r = r->watch_next)
        if (r->kind == BM_PML_REQ_RECV && r->src_world == peer_world && r->rndv_sreq == sreq)
            return r;
    return NULL;
}

void bm_pml_restart_dup_rndv(int peer_world, const struct bm_pml_hdr_rndv *rh)
{
    if (rh->match.base.type != BM_PML_HDR_RNDV || !(rh->match.base.flags & BM_PML_HDR_F_RETRANSMIT))
        return;
    struct bm_pml_request *req = recv_find(peer_world, rh->sreq);
    if (req) {
        /* Receiving it: the first ACK again (the sender may have lost it;
         * one it has is ignored), and for a query the missing ranges. */
        struct bm_pml_hdr_ack ack = {
            .base = {.type = BM_PML_HDR_ACK, .flags = BM_PML_HDR_F_RETRANSMIT},
            .sreq = req->rndv_sreq,
            .rreq = bm_pml_request_id(req),
            .offset = req->ack_offset,
            .length = req->want,
        };
        bm_pml_ctl_send(peer_world, BM_PML_BTL_TAG(BM_PML_HDR_ACK), &ack, sizeof(ack));
        if (rh->match.base.flags & BM_PML_HDR_F_QUERY) {
            recv_restart(req, false);
            req->watch_ns = bm_util_clock_now_ns();
        }
        return;
    }
    /* Finished lately: the ACK that ended it (a sender without its ACK
     * completes on it, one with it ignores it) and DONE (for a query). */
    size_t n = rs.ndone < RESTART_HISTORY ? rs.ndone : RESTART_HISTORY;
    for (size_t i = 0; i < n; i++) {
        if (rs.done[i].peer != peer_world || rs.done[i].sreq != rh->sreq)
            continue;
        struct bm_pml_hdr_ack ack = {
            .base = {.type = BM_PML_HDR_ACK, .flags = BM_PML_HDR_F_RETRANSMIT},
            .sreq = rh->sreq,
            .offset = rs.done[i].want,
            .length = rs.done[i].want,
        };
        bm_pml_ctl_send(peer_world, BM_PML_BTL_TAG(BM_PML_HDR_ACK), &ack, sizeof(ack));
        break;
    }
    if (!(rh->match.base.flags & BM_PML_HDR_F_QUERY))
        return; /* not answered yet (unexpected), or finished and answered above */
    /* A sender that had its ACK asks: matched and not being received, so finished. */
    struct bm_pml_hdr_ack done = {
        .base = {.type = BM_PML_HDR_ACK, .flags = BM_PML_HDR_F_DONE | BM_PML_HDR_F_RETRANSMIT},
        .sreq = rh->sreq,
        .offset = rh->msg_len,
        .length = rh->msg_len,
    };
    bm_pml_ctl_send(peer_world, BM_PML_BTL_TAG(BM_PML_HDR_ACK), &done, sizeof(done));
}

/* ---- sender ---------------------------------------------------------------- */

void bm_pml_restart_ack(struct bm_pml_request *req, const struct bm_pml_hdr_ack *ah)
{
    if (ah->base.flags & BM_PML_HDR_F_DONE) {
        req->done_rcvd = true;
        return;
    }
    /* A restart before the sender's own ACK arrived asks for bytes it never
     * sent: the RNDV timer sends the RNDV again, which brings the ACK. */
    if (!req->acked || ah->rreq != req->rreq || req->done_rcvd)
        return;
    if (ah->ctl_seq < req->restart_seq) {
        bm_pml_g.restarts_stale++;
        bm_log_debug("ignored a stale restart (%u, newest served %u) from rank %d", ah->ctl_seq,
                     req->restart_seq, req->peer);
        return;
    }
    req->restart_seq = ah->ctl_seq;
    /* Only bytes that were sent: the rest goes out in order anyway. */
    size_t end = ah->length < req->frag_next ? ah->length : req->frag_next;
    if (ah->offset >= end)
        return;
    req->watch_ns = bm_util_clock_now_ns();
    bm_pml_g.restarts_served++;
    bm_pml_send_resend_range(req, ah->offset, end - ah->offset);
}

/* ---- timers ---------------------------------------------------------------- */

static bool timed_out(struct bm_pml_request *req, uint64_t now)
{
    unsigned shift = req->tries < 3 ? req->tries : 3;
    return now - req->watch_ns >= rs.timeout_ns << shift;
}

/* Did the peer send anything since the request was last looked at? Then
 * the request waits behind the peer's other messages: its timer restarts. */
static bool peer_heard(struct bm_pml_request *req, int peer_world)
{
    uint16_t h = heard_of(peer_world);
    if (h == req->watch_heard)
        return false;
    req->watch_heard = h;
    return true;
}

/* A send's timer at a scan (waits: bm_pml_send_watch_state): restarted
 * while it waits for nothing, its peer is in an outage or the peer sent
 * anything since the last scan; true when it timed out (counted), and the
 * caller sends its RNDV again (waits 1) or asks the receiver. */
static bool send_timer_fired(struct bm_pml_request *req, int waits, uint64_t now)
{
    if (waits == 0 || bm_pml_peer_in_outage(req->peer)) {
        req->watch_ns = now;
        peer_heard(req, req->peer);
        return false;
    }
    if (peer_heard(req, req->peer)) {
        req->watch_ns = now; /* the receiver answers others first */
        bm_pml_g.restart_peer_resets++;
        return false;
    }
    if (!timed_out(req, now))
        return false;
    bm_pml_g.restart_timeouts++;
    req->tries++;
    req->watch_ns = now;
    return true;
}

static void watch_one(struct bm_pml_request *req, uint64_t now)
{
    if (req->kind == BM_PML_REQ_RECV) {
        if (req->arrived != req->watch_mark || bm_pml_peer_in_outage(req->src_world)) {
            req->watch_mark = req->arrived;
            req->watch_ns = now;
            req->tries = 0;
            peer_heard(req, req->src_world);
        } else if (peer_heard(req, req->src_world)) {
            req->watch_ns = now; /* its bytes wait behind others from the peer */
            bm_pml_g.restart_peer_resets++;
        } else if (timed_out(req, now)) {
            recv_restart(req, false);
            bm_pml_g.restart_timeouts++;
            req->tries++;
            req->watch_ns = now;
        }
        return;
    }
    int waits = bm_pml_send_watch_state(req);
    if (!send_timer_fired(req, waits, now))
        return;
    if (waits == 1)
        bm_pml_send_rndv_again(req);
    else
        bm_pml_send_query(req);
}

/* The timers of one peer's per-peer sends (its lock held; the progress
 * lock's holder): what watch_one does for a send, but a send that timed out
 * goes to the kick list for the holder to act on, after the lock is given
 * back (bm_pml_send_tx_timer_locked), since the list may change as soon as
 * it is. A send that a worker holds or that waits on the kick list moves. */
static void watch_peer(int peer, uint64_t now)
{
    for (struct bm_pml_request *r = bm_pml_g.peer_tx[peer].watch; r; r = r->watch_next) {
        int waits = bm_pml_send_watch_state_locked(r);
        if (send_timer_fired(r, waits, now))
            bm_pml_send_tx_timer_locked(r, waits);
    }
}

/* ---- a path failed ----------------------------------------------------------- */

/* Mark the watched requests of this kind with peer_world lost. */
static void mark_lost(int peer_world, enum bm_pml_req_kind kind)
{
    for (struct bm_pml_request *r = rs.head; r; r = r->watch_next) {
        int peer = kind == BM_PML_REQ_RECV ? r->src_world : r->peer;
        if (r->kind == kind && peer == peer_world && !r->lost) {
            r->lost = true;
            rs.nlost++;
        }
    }
    if (kind != BM_PML_REQ_SEND || !bm_pml_g.peer_tx)
        return;
    struct bm_pml_peer_tx *t = &bm_pml_g.peer_tx[peer_world];
    bm_util_lock_take(&t->lock);
    for (struct bm_pml_request *r = t->watch; r; r = r->watch_next)
        if (!r->lost) {
            r->lost = true;
            t->nlost++;
            rs.tx_lost = true;
        }
    bm_util_lock_give(&t->lock);
}

void bm_pml_restart_path_lost(int peer_world)
{
    bm_pml_g.paths_lost++;
    /* A hint, sent even without timers here (the peer may watch its
     * sends), but only on a working path and never again when lost
     * (bm_pml_ctl_done): held for a peer that is gone (it finalized, and
     * our path to it failed since), it would keep our MPI_Finalize waiting
     * for the grace. The peer's timers cover a LOST not sent. */
    if (!bm_pml_peer_in_outage(peer_world)) {
        struct bm_pml_hdr_lost lh = {.base = {.type = BM_PML_HDR_LOST}};
        bm_pml_ctl_send(peer_world, BM_PML_BTL_TAG(BM_PML_HDR_LOST), &lh, sizeof(lh));
    }
    mark_lost(peer_world, BM_PML_REQ_RECV);
}

void bm_pml_restart_lost_cb(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata)
{
    (void)m;
    (void)cbdata;
    if (d->seg_count == 0 || d->seg[0].len < sizeof(struct bm_pml_hdr_lost)) {
        bm_log_ratelimited(BM_LOG_ERROR, "dropped a short LOST (%zu bytes) from rank %d",
                           d->seg_count ? d->seg[0].len : 0, d->peer);
        return;
    }
    bm_pml_g.lost_notices++;
    bm_log_debug("rank %d lost a path to us: its RNDVs without an ACK go again", d->peer);
    mark_lost(d->peer, BM_PML_REQ_SEND);
}

/* What to do with a request marked lost. */
enum lost_action {
    LOST_KEEP,  /* not yet: look again at the next pass */
    LOST_DONE,  /* done with it */
    LOST_RESEND /* done: send its RNDV again */
};

/* A receive asks for what it misses; a send whose RNDV has no ACK sends it
 * again, or waits while its transport still holds it (it may yet report
 * it delivered). */
static enum lost_action lost_one(struct bm_pml_request *req, uint64_t now)
{
    if (req->kind == BM_PML_REQ_RECV) {
        if (req->arrived < req->want) {
            bm_pml_g.restarts_fast++;
            recv_restart(req, true);
        }
        req->watch_mark = req->arrived;
        req->watch_ns = now;
        req->tries = 0;
        return LOST_DONE;
    }
    if (req->acked || req->done_rcvd)
        return LOST_DONE; /* the receiver restarts the FRAGs it misses */
    if (bm_pml_send_watch_state(req) != 1)
        return LOST_KEEP;
    bm_pml_g.rndv_fast++;
    req->watch_ns = now;
    return LOST_RESEND;
}

/* lost_one for the per-peer sends of one peer marked lost (its lock
 * held): a RNDV to send again goes to the kick list. Returns how many
 * were done with. */
static int lost_peer(int peer, uint64_t now)
{
    struct bm_pml_peer_tx *t = &bm_pml_g.peer_tx[peer];
    int n = 0;
    for (struct bm_pml_request *r = t->watch; r && t->nlost > 0; r = r->watch_next) {
        if (!r->lost)
            continue;
        if (!r->acked && !r->done_rcvd) {
            if (bm_pml_send_watch_state_locked(r) != 1)
                continue; /* LOST_KEEP */
            bm_pml_g.rndv_fast++;
            r->watch_ns = now;
            bm_pml_send_tx_timer_locked(r, 1);
        }
        r->lost = false;
        t->nlost--;
        n++;
    }
    return n;
}

/* Each pass while requests are marked lost. */
static int lost_scan(void)
{
    uint64_t now = bm_util_clock_now_ns();
    int n = 0;
    struct bm_pml_request *next;
    for (struct bm_pml_request *r = rs.head; r; r = next) {
        next = r->watch_next;
        enum lost_action a = r->lost ? lost_one(r, now) : LOST_KEEP;
        if (a == LOST_KEEP)
            continue;
        r->lost = false;
        rs.nlost--;
        n++;
        if (a == LOST_RESEND)
            bm_pml_send_rndv_again(r); /* last: the send may complete and leave the list */
    }
    return n;
}

/* Each pass while per-peer sends are marked lost. */
static int lost_scan_tx(void)
{
    uint64_t now = bm_util_clock_now_ns();
    int n = 0;
    bool more = false;
    for (int p = 0; p < bm_pml_g.world_size; p++) {
        struct bm_pml_peer_tx *t = &bm_pml_g.peer_tx[p];
        bm_util_lock_take(&t->lock);
        if (t->nlost > 0)
            n += lost_peer(p, now);
        more = more || t->nlost > 0;
        bm_util_lock_give(&t->lock);
    }
    rs.tx_lost = more;
    return n;
}

int bm_pml_restart_progress(void)
{
    int n = rs.nlost > 0 ? lost_scan() : 0;
    if (rs.tx_lost)
        n += lost_scan_tx();
    if ((++rs.tick & RESTART_TICK_MASK) != 0)
        return n;
    uint64_t now = bm_util_clock_now_ns();
    if (now < rs.next_scan)
        return n;
    rs.next_scan = now + rs.timeout_ns / 4;
    uint64_t before = bm_pml_g.restarts_asked + bm_pml_g.rndv_resent + bm_pml_g.rndv_queries;
    struct bm_pml_request *next;
    for (struct bm_pml_request *r = rs.head; r; r = next) {
        next = r->watch_next; /* a send may complete and leave the list */
        watch_one(r, now);
    }
    for (int p = 0; bm_pml_g.peer_tx && p < bm_pml_g.world_size; p++) {
        struct bm_pml_peer_tx *t = &bm_pml_g.peer_tx[p];
        bm_util_lock_take(&t->lock); /* once per scan (a quarter of the timeout) */
        watch_peer(p, now);
        bm_util_lock_give(&t->lock);
    }
    return n +
           (int)(bm_pml_g.restarts_asked + bm_pml_g.rndv_resent + bm_pml_g.rndv_queries - before);
}
