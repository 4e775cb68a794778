/* Endpoints of the dgram transport: one per reachable peer per module,
 * holding both directions of the reliable stream (send window and receive
 * window) and the path's health. A path is declared failed after a bounded
 * number of consecutive timeouts of the peer's oldest segment, or after a
 * bounded time with data outstanding and no ACK progress, never retried
 * forever: the error callback hears of it first, then every fragment and
 * RDMA operation still outstanding completes with BM_ERR_LINK_DOWN. A
 * failed path is probed at a low rate; when a probe is answered the path
 * comes back with a new send session (so nothing of the abandoned stream is
 * ever confused with new data) and BM_BTL_ERROR_RECOVERED is reported.
 * add_procs pairs our modules with the peer's (pairing in dgram_component.c). */
#define BM_LOG_SUBSYS "btl/dgram"
#include "btl/dgram/dgram.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Address ep to the peer's module pa (at creation and when re-paired). */
static void endpoint_set_partner(struct bm_btl_dgram_endpoint *ep,
                                 const struct bm_btl_dgram_addr *pa)
{
    struct bm_btl_dgram_module *m = ep->module;
    ep->peer_index = pa->index;
    memcpy(ep->mac_key, m->job_keyed ? m->mac_key : pa->mac_key, sizeof(ep->mac_key));
    if (m->cfg.auth)
        bm_btl_dgram_mac_expand(ep->mac_key, ep->nh_key);
    uint16_t ports[BM_DGRAM_NCH] = {pa->port_prio, pa->port_data};
    uint32_t mtus[BM_DGRAM_NCH] = {pa->mtu_prio, pa->mtu_data};
    for (int c = 0; c < BM_DGRAM_NCH; c++) {
        ep->to[c].sin_family = AF_INET;
        ep->to[c].sin_addr.s_addr = pa->ipv4;
        ep->to[c].sin_port = ports[c];
        ep->mtu[c] = mtus[c] < m->ch[c].mtu ? mtus[c] : m->ch[c].mtu;
    }
    /* the peer's liveness responder (the wire's peer_add gives its handles) */
    memset(&ep->to_live, 0, sizeof(ep->to_live));
    if (pa->port_live) {
        ep->to_live = ep->to[BM_DGRAM_CH_PRIO];
        ep->to_live.sin_port = pa->port_live;
    }
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &ep->to[0].sin_addr, ip, sizeof(ip));
    snprintf(ep->peer_desc, sizeof(ep->peer_desc), "rank %d (%s on %.16s)", ep->peer, ip,
             pa->ifname);
}

/* The receiver's kernel queues our datagrams in its socket buffer until
 * its next recvmmsg and drops what overflows it; on one host that is the
 * only loss there is. Measured on the loopback with an 8 MiB buffer
 * (SO_RCVBUF 4m, doubled by the kernel): 127 datagrams of 65000 B fit, 504
 * of 8972 B, 3640 of 1472 B (the kernel charges a datagram's true size, up
 * to twice its length). A 1 MiB stream whose congestion window had grown
 * to 460 datagrams lost 1-2% of them there (the host's RcvbufErrors), each
 * loss a fast resend or a retransmit timeout. So a sender keeps at most
 * half the peer's buffer in flight on the data channel, in bytes (a fixed
 * receive window: the peer reads its buffer empty at least as fast as its
 * ACKs come back); small fragments go to the other socket and are not
 * counted. The floor (four datagrams) keeps a tiny buffer from stopping
 * the stream. */
void bm_btl_dgram_flight_cap(struct bm_btl_dgram_endpoint *ep, size_t rcvbuf)
{
    size_t floor = 4 * ep->mtu[BM_DGRAM_CH_DATA];
    ep->flight_max = rcvbuf == 0 ? SIZE_MAX : rcvbuf / 2 > floor ? rcvbuf / 2 : floor;
}

/* A new send session (after a recovery or a re-pairing): the peer's
 * receiver restarts its window at 0, and nothing measured on the old
 * stream carries over. The window must be empty. */
static void send_restart(struct bm_btl_dgram_endpoint *ep)
{
    struct bm_btl_dgram_module *m = ep->module;
    ep->snd_session++;
    ep->snd_next = ep->snd_una = 0;
    ep->srtt = ep->rttvar = 0;
    ep->rto = (int64_t)m->cfg.rto_init_us * 1000;
    ep->consecutive_timeouts = 0;
    ep->dup_acks = 0;
    ep->cwnd = (uint32_t)m->cfg.cwnd_init;
    ep->ssthresh = (uint32_t)m->cfg.window;
    ep->in_recovery = false;
    ep->rto_recover = false;
    ep->rack_ns = 0;
    for (int c = 0; c < BM_DGRAM_NCH; c++)
        ep->rack_ch_ns[c] = 0;
}

/* Take the segment with sequence number seq out of the window (stopping
 * its timer or taking it off the resend list); returns its fragment. */
static struct bm_btl_dgram_frag *seg_take(struct bm_btl_dgram_endpoint *ep, uint16_t seq)
{
    struct bm_btl_dgram_module *m = ep->module;
    uint16_t mask = (uint16_t)(m->cfg.window - 1);
    struct bm_btl_dgram_seg *seg = ep->win[seq & mask];
    if (!seg)
        return NULL;
    ep->win[seq & mask] = NULL;
    if (seg->state == BM_DGRAM_SEG_POSTED)
        bm_btl_dgram_timer_stop(m, seg);
    else if (seg->state == BM_DGRAM_SEG_RESEND)
        bm_util_list_remove(&seg->link);
    struct bm_btl_dgram_frag *f = seg->frag;
    bm_btl_dgram_seg_put(m, seg);
    return f;
}

bm_status_t bm_btl_dgram_endpoint_create(struct bm_btl_dgram_module *m, int peer,
                                         const struct bm_btl_dgram_addr *pa,
                                         struct bm_btl_dgram_endpoint **ep_out)
{
    if (peer < 0)
        return BM_ERR_BAD_PARAM;
    if (peer >= m->neps) {
        int n = peer + 1 > 2 * m->neps ? peer + 1 : 2 * m->neps;
        struct bm_btl_dgram_endpoint **e = realloc(m->eps, sizeof(*e) * (size_t)n);
        if (!e)
            return BM_ERR_NO_MEMORY;
        for (int i = m->neps; i < n; i++)
            e[i] = NULL;
        m->eps = e;
        m->neps = n;
    }
    if (m->eps[peer]) {
        *ep_out = m->eps[peer];
        return BM_OK;
    }
    /* the responder thread starts with the first peer (the key is final) */
    if (m->live)
        (void)bm_btl_dgram_live_start(m);
    struct bm_btl_dgram_endpoint *ep = calloc(1, sizeof(*ep));
    if (!ep)
        return BM_ERR_NO_MEMORY;
    /* The send window (8 bytes per slot) comes with the first send
     * (bm_btl_dgram_enqueue): add_procs creates an endpoint for every peer,
     * most of which a process never sends to. */
    ep->rcv_seen = calloc((size_t)m->cfg.window / 64, sizeof(uint64_t));
    if (!ep->rcv_seen) {
        free(ep);
        return BM_ERR_NO_MEMORY;
    }
    ep->module = m;
    ep->peer = peer;
    endpoint_set_partner(ep, pa);
    if (m->wire->peer_add(m, ep) != BM_OK) {
        free(ep->rcv_seen);
        free(ep);
        return BM_ERR_UNREACHABLE;
    }
    bm_btl_dgram_flight_cap(ep, (size_t)pa->rcvbuf_64k << 16);
    ep->state = BM_DGRAM_EP_OK;
    ep->snd_session = 1;
    ep->rto = (int64_t)m->cfg.rto_init_us * 1000;
    ep->cwnd = (uint32_t)m->cfg.cwnd_init;
    ep->ssthresh = (uint32_t)m->cfg.window;
    ep->credits = m->cfg.ep_credits;
    bm_util_queue_init(&ep->sendq);
    bm_util_list_node_init(&ep->ready_link);
    bm_util_list_node_init(&ep->ack_link);
    bm_util_list_init(&ep->reasm);
    bm_util_list_init(&ep->getops);
    m->eps[peer] = ep;
    *ep_out = ep;
    return BM_OK;
}

/* Take every segment and fragment off the send side and queue their
 * completions with status; outstanding GETs complete with it too. */
static void endpoint_purge(struct bm_btl_dgram_endpoint *ep, int status)
{
    struct bm_btl_dgram_module *m = ep->module;
    for (uint16_t s = ep->snd_una; s != ep->snd_next; s++) {
        struct bm_btl_dgram_frag *f = seg_take(ep, s);
        if (f && --f->segs_out == 0 && !f->queued)
            bm_btl_dgram_frag_done(f, status);
    }
    ep->snd_una = ep->snd_next;
    struct bm_util_queue_node *q;
    while ((q = bm_util_queue_pop(&ep->sendq))) {
        struct bm_btl_dgram_frag *f = bm_util_container_of(q, struct bm_btl_dgram_frag, qlink);
        f->queued = false;
        if (f->segs_out == 0)
            bm_btl_dgram_frag_done(f, status);
    }
    if (bm_util_list_node_linked(&ep->ready_link))
        bm_util_list_remove(&ep->ready_link);
    struct bm_util_list_node *n;
    while ((n = bm_util_list_pop_front(&ep->getops))) {
        struct bm_btl_dgram_getop *g = bm_util_container_of(n, struct bm_btl_dgram_getop, link);
        bm_util_list_push_back(&m->getdone, &g->link);
        g->status = status;
    }
}

void bm_btl_dgram_endpoint_destroy(struct bm_btl_dgram_endpoint *ep)
{
    struct bm_btl_dgram_module *m = ep->module;
    if (ep->ack_needed) {
        /* The peer may still wait for this ACK (the last message before
         * MPI_Finalize): it goes out now, or the peer would time out and
         * declare a path failed while the job ends. */
        ep->ack_deadline = 0;
        m->now_ns = bm_btl_dgram_now();
        bm_btl_dgram_ack_progress(m);
        bm_btl_dgram_flush_channel(m, BM_DGRAM_CH_PRIO);
    }
    endpoint_purge(ep, BM_ERR_CANCELED);
    bm_btl_dgram_run_completions(m);
    if (bm_util_list_node_linked(&ep->ack_link))
        bm_util_list_remove(&ep->ack_link);
    /* del_procs and finalize: no receive callback runs for the peer any
     * more (btl.h: none after finalize began) */
    bm_btl_dgram_reasm_drop_all(ep, false);
    if (ep->state == BM_DGRAM_EP_FAILED)
        m->nfailed--;
    m->rcv_ooo_total -= ep->rcv_ooo;
    m->eps[ep->peer] = NULL;
    free(ep->win);
    free(ep->rcv_seen);
    free(ep);
}

void bm_btl_dgram_endpoint_fail(struct bm_btl_dgram_endpoint *ep, const char *why)
{
    struct bm_btl_dgram_module *m = ep->module;
    if (ep->state == BM_DGRAM_EP_FAILED)
        return;
    ep->state = BM_DGRAM_EP_FAILED;
    m->nfailed++;
    if (ep->check == BM_DGRAM_CHECK_RUNNING) {
        ep->check = BM_DGRAM_CHECK_NONE; /* runs again after recovery */
        m->nchecking--;
    }
    m->stats.path_failures++;
    snprintf(ep->report, sizeof(ep->report),
             "dgram path from %s to %s failed: %s. Messages to that peer move to other "
             "transports if there are any; check the link and the firewall between the two "
             "hosts.",
             m->super.name, ep->peer_desc, why);
    bm_log_warn("%s", ep->report);
    ep->report_kind = BM_BTL_ERROR_PEER;
    ep->report_pending = true;
    m->reports_pending++;
    endpoint_purge(ep, BM_ERR_LINK_DOWN);
    uint64_t now = bm_btl_dgram_now();
    ep->next_probe_ns = now;
    if (m->probe_next_ns == 0 || m->probe_next_ns > now + (uint64_t)m->cfg.probe_ms * 1000000u)
        m->probe_next_ns = now + (uint64_t)m->cfg.probe_ms * 1000000u;
}

void bm_btl_dgram_local_error(struct bm_btl_dgram_module *m, int ch, const struct sockaddr_in *to,
                              int err)
{
    for (int i = 0; i < m->neps; i++) {
        struct bm_btl_dgram_endpoint *ep = m->eps[i];
        if (ep && ep->to[ch].sin_addr.s_addr == to->sin_addr.s_addr &&
            ep->to[ch].sin_port == to->sin_port && ep->state != BM_DGRAM_EP_FAILED) {
            ep->local_err = err;
            m->local_errs = true;
        }
    }
}

void bm_btl_dgram_local_errors(struct bm_btl_dgram_module *m)
{
    m->local_errs = false;
    for (int i = 0; i < m->neps; i++) {
        struct bm_btl_dgram_endpoint *ep = m->eps[i];
        if (!ep || !ep->local_err)
            continue;
        char why[256];
        snprintf(why, sizeof(why),
                 "sending on %s failed at once with \"%s\" (the local interface is down or has "
                 "no route to the peer); it is probed and used again when it works",
                 m->addr.ifname, strerror(ep->local_err));
        ep->local_err = 0;
        bm_btl_dgram_endpoint_fail(ep, why);
    }
}

void bm_btl_dgram_endpoint_recovered(struct bm_btl_dgram_endpoint *ep)
{
    struct bm_btl_dgram_module *m = ep->module;
    if (ep->state != BM_DGRAM_EP_FAILED)
        return;
    ep->state = BM_DGRAM_EP_OK;
    m->nfailed--;
    m->stats.path_recoveries++;
    send_restart(ep);
    ep->check = BM_DGRAM_CHECK_NONE;
    snprintf(ep->report, sizeof(ep->report), "dgram path from %s to %s works again", m->super.name,
             ep->peer_desc);
    bm_log_info("%s", ep->report);
    ep->report_kind = BM_BTL_ERROR_RECOVERED;
    ep->report_pending = true;
    m->reports_pending++;
}

void bm_btl_dgram_endpoint_check_health(struct bm_btl_dgram_endpoint *ep)
{
    struct bm_btl_dgram_module *m = ep->module;
    if (ep->state != BM_DGRAM_EP_OK || ep->snd_una == ep->snd_next)
        return;
    bool timeouts = ep->consecutive_timeouts >= (uint32_t)m->cfg.fail_timeouts;
    uint64_t silent_ms = (m->now_ns - ep->progress_ns) / 1000000u;
    if (!timeouts && silent_ms <= (uint64_t)m->cfg.fail_ms)
        return;
    if (bm_btl_dgram_live_recent(ep)) {
        /* the peer's responder answered: it computes outside the library
         * (dgram_live.c); its path is fine and the data waits in its socket */
        m->stats.live_held++;
        return;
    }
    char why[384];
    const char *cause = timeouts ? "consecutive retransmit timeouts" : "ms without ACK progress";
    unsigned long long n = timeouts ? ep->consecutive_timeouts : silent_ms;
    const char *knob = timeouts ? "BM_BTL_DGRAM_FAIL_TIMEOUTS" : "BM_BTL_DGRAM_FAIL_MS";
    if (ep->to_live.sin_port)
        snprintf(why, sizeof(why),
                 "%llu %s (%s) and no answer from its liveness responder for %llu ms, so "
                 "the path carries no datagrams (link down, firewall) or the peer's host "
                 "stopped; a peer that only computes would have answered",
                 n, cause, knob, (unsigned long long)silent_ms);
    else
        snprintf(why, sizeof(why),
                 "%llu %s (%s); the peer has no liveness responder (BM_BTL_DGRAM_LIVENESS=0 "
                 "there, or no live port could be opened), so a peer that computes that "
                 "long without MPI calls looks the same",
                 n, cause, knob);
    bm_btl_dgram_endpoint_fail(ep, why);
}

/* Send a probe on every failed path (called from progress at probe_ms). */
void bm_btl_dgram_endpoint_probe_failed(struct bm_btl_dgram_module *m)
{
    for (int i = 0; i < m->neps; i++) {
        struct bm_btl_dgram_endpoint *ep = m->eps[i];
        if (!ep || ep->state != BM_DGRAM_EP_FAILED)
            continue;
        ep->probe_nonce = (uint32_t)(m->rng >> 17) ^ (uint32_t)m->now_ns ^ (uint32_t)i;
        m->rng = m->rng * 6364136223846793005ull + 1;
        /* full size: a path that only passes small datagrams is not back */
        bm_btl_dgram_send_ping(ep, BM_DGRAM_T_PING, ep->probe_nonce, ep->mtu[BM_DGRAM_CH_DATA]);
    }
    m->probe_next_ns = m->now_ns + (uint64_t)m->cfg.probe_ms * 1000000u;
}

/* ---- connectivity check --------------------------------------------------
 * At first contact (the first send to a peer) a small ping on the priority
 * channel and a full-size one on the data channel are sent and retried; the
 * peer answers each with a PONG of the same size (and, sent to its live
 * port as well, its liveness responder with an ALIVE, so that a peer that
 * computes at first contact passes too). Data flows meanwhile. If
 * neither size is answered there is no path; if only the small one is, the
 * path drops full-size datagrams (an MTU mismatch somewhere): either way the
 * path is declared failed with a message that says which, between which
 * addresses, and what to do, instead of retransmitting into the void. */

static void check_send(struct bm_btl_dgram_endpoint *ep)
{
    if (!ep->check_small_ok)
        bm_btl_dgram_send_ping(ep, BM_DGRAM_T_PING, ep->check_nonce, 0);
    if (!ep->check_big_ok)
        bm_btl_dgram_send_ping(ep, BM_DGRAM_T_PING, ep->check_nonce + 1, ep->mtu[BM_DGRAM_CH_DATA]);
    if (ep->to_live.sin_port) {
        /* the same to the peer's liveness responder (dgram_live.c): a peer
         * that computes right after its first message answers from there */
        if (!ep->check_small_ok)
            bm_btl_dgram_send_ping_live(ep, ep->check_nonce, 0);
        if (!ep->check_big_ok)
            bm_btl_dgram_send_ping_live(ep, ep->check_nonce + 1, ep->mtu[BM_DGRAM_CH_DATA]);
    }
    ep->check_tries++;
    ep->check_next_ns = bm_btl_dgram_now() + (uint64_t)ep->module->cfg.check_ms * 1000000u;
}

void bm_btl_dgram_check_start(struct bm_btl_dgram_endpoint *ep)
{
    struct bm_btl_dgram_module *m = ep->module;
    if (ep->state != BM_DGRAM_EP_OK)
        return;
    ep->check = BM_DGRAM_CHECK_RUNNING;
    ep->check_small_ok = ep->check_big_ok = false;
    ep->check_tries = 0;
    m->rng = m->rng * 6364136223846793005ull + 1442695040888963407ull;
    ep->check_nonce = (uint32_t)(m->rng >> 32) & ~1u;
    m->nchecking++;
    check_send(ep);
}

bool bm_btl_dgram_check_pong(struct bm_btl_dgram_endpoint *ep, uint32_t nonce)
{
    if (ep->check != BM_DGRAM_CHECK_RUNNING || (nonce & ~1u) != ep->check_nonce)
        return false;
    if (nonce & 1)
        ep->check_big_ok = true;
    else
        ep->check_small_ok = true;
    if (ep->check_small_ok && ep->check_big_ok) {
        ep->check = BM_DGRAM_CHECK_DONE;
        ep->module->nchecking--;
    }
    return true;
}

void bm_btl_dgram_check_progress(struct bm_btl_dgram_module *m)
{
    for (int i = 0; i < m->neps && m->nchecking; i++) {
        struct bm_btl_dgram_endpoint *ep = m->eps[i];
        if (!ep || ep->check != BM_DGRAM_CHECK_RUNNING || ep->check_next_ns > m->now_ns)
            continue;
        if (ep->check_tries < m->cfg.check_tries) {
            check_send(ep);
            continue;
        }
        char why[256];
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &ep->to[0].sin_addr, ip, sizeof(ip));
        if (!ep->check_small_ok)
            snprintf(why, sizeof(why),
                     "no answer to %d connectivity pings: no path to %s (routing, firewall, or "
                     "the peer stopped making progress)",
                     ep->check_tries, ip);
        else
            snprintf(why, sizeof(why),
                     "small datagrams reach %s but %zu-byte ones do not: an MTU problem on the "
                     "path; lower BM_BTL_DGRAM_MTU or fix the interfaces' MTU",
                     ip, ep->mtu[BM_DGRAM_CH_DATA]);
        m->stats.check_failures++;
        bm_btl_dgram_pair_check_failed(ep, ep->check_small_ok, why);
    }
}

/* ---- re-pairing ------------------------------------------------------------
 * When the pairing is re-solved (dgram_component.c), an endpoint whose local
 * module got another partner is retargeted rather than replaced: the PML's
 * path lists hold the endpoint, and the module it lives in does not change.
 * What was in flight toward the old partner may or may not have arrived, so
 * the stream restarts as a new session: every fragment not wholly ACKed is
 * taken back from the window and queued again from its first byte, before
 * the fragments that were still waiting. A message can thus arrive twice
 * (once over each pair); the PML drops the second copy by its sequence
 * number, as it does for resends after a path failure. */

static void endpoint_rewind(struct bm_btl_dgram_endpoint *ep)
{
    struct bm_util_queue again;
    bm_util_queue_init(&again);
    for (uint16_t s = ep->snd_una; s != ep->snd_next; s++) {
        struct bm_btl_dgram_frag *f = seg_take(ep, s);
        if (!f)
            continue;
        f->segs_out--;
        if (!f->queued) { /* first segment of f seen: f goes back in stream order */
            f->queued = true;
            bm_util_queue_push(&again, &f->qlink);
        }
    }
    /* Only sendq's head can be partly cut, and its segments are the last
     * in the window; a fragment found in the window was not on sendq. */
    bm_util_queue_concat(&again, &ep->sendq);
    struct bm_util_queue_node *q;
    while ((q = bm_util_queue_pop(&again))) {
        struct bm_btl_dgram_frag *f = bm_util_container_of(q, struct bm_btl_dgram_frag, qlink);
        f->next_off = 0;
        f->segs_cut = 0;
        f->segs_out = 0;
        bm_util_queue_push(&ep->sendq, q);
    }
    ep->snd_una = ep->snd_next;
    if (bm_util_list_node_linked(&ep->ready_link))
        bm_util_list_remove(&ep->ready_link);
}

bm_status_t bm_btl_dgram_endpoint_retarget(struct bm_btl_dgram_endpoint *ep,
                                           const struct bm_btl_dgram_addr *pa)
{
    struct bm_btl_dgram_module *m = ep->module;
    endpoint_set_partner(ep, pa);
    bm_log_info("%s re-paired: now with %s", m->super.name, ep->peer_desc);
    if (ep->check == BM_DGRAM_CHECK_RUNNING)
        m->nchecking--;
    ep->check = BM_DGRAM_CHECK_NONE;
    m->route_mtu = 0; /* ask the kernel again: the route may be why we re-pair */
    if (m->wire->peer_add(m, ep) != BM_OK) {
        bm_btl_dgram_endpoint_fail(ep, "the wire cannot address the peer's interface chosen by "
                                       "re-pairing");
        return BM_ERR_UNREACHABLE;
    }
    bm_btl_dgram_flight_cap(ep, (size_t)pa->rcvbuf_64k << 16);
    endpoint_rewind(ep);
    send_restart(ep);
    ep->progress_ns = bm_btl_dgram_now();
    /* receive side: whatever session the new partner sends is the stream */
    ep->rcv_valid = false;
    m->rcv_ooo_total -= ep->rcv_ooo;
    ep->rcv_ooo = 0;
    ep->rcv_next = 0;
    memset(ep->rcv_seen, 0, (size_t)m->cfg.window / 8);
    bm_btl_dgram_reasm_drop_all(ep, true);
    ep->ack_needed = false;
    if (bm_util_list_node_linked(&ep->ack_link))
        bm_util_list_remove(&ep->ack_link);
    /* GET answers restart from their first byte too */
    struct bm_util_list_node *it;
    bm_util_list_foreach(it, &ep->getops)
    {
        bm_util_container_of(it, struct bm_btl_dgram_getop, link)->received = 0;
    }
    if (ep->state == BM_DGRAM_EP_FAILED) {
        ep->state = BM_DGRAM_EP_OK;
        m->nfailed--;
        snprintf(ep->report, sizeof(ep->report), "dgram path from %s re-paired with %s",
                 m->super.name, ep->peer_desc);
        bm_log_info("%s", ep->report);
        if (!ep->report_pending)
            m->reports_pending++;
        ep->report_kind = BM_BTL_ERROR_RECOVERED;
        ep->report_pending = true;
    }
    bm_btl_dgram_check_start(ep);
    bm_btl_dgram_endpoint_check_ready(ep);
    return BM_OK;
}

void bm_btl_dgram_send_repair(struct bm_btl_dgram_endpoint *ep, uint32_t nonce, uint8_t flags,
                              uint64_t excluded, uint64_t excl_mtu)
{
    struct bm_btl_dgram_module *m = ep->module;
    uint8_t buf[sizeof(struct bm_dgram_hdr) + sizeof(struct bm_dgram_repair)];
    struct bm_dgram_hdr *h = (struct bm_dgram_hdr *)buf;
    bm_dgram_hdr_init(h, BM_DGRAM_T_REPAIR, (uint32_t)m->rank, m->job_key, m->addr.index,
                      ep->peer_index);
    struct bm_dgram_repair r = {
        .nonce = nonce, .flags = flags, .excluded = excluded, .excl_mtu = excl_mtu};
    memcpy(h + 1, &r, sizeof(r));
    bm_btl_dgram_post(m, BM_DGRAM_CH_PRIO, ep, buf, sizeof(buf), NULL, 0);
    bm_btl_dgram_flush_channel(m, BM_DGRAM_CH_PRIO);
}

/* Run reports to the error callback (first) and completion callbacks. */
int bm_btl_dgram_run_completions(struct bm_btl_dgram_module *m)
{
    int n = 0;
    if (m->reports_pending) {
        for (int i = 0; i < m->neps && m->reports_pending; i++) {
            struct bm_btl_dgram_endpoint *ep = m->eps[i];
            if (!ep || !ep->report_pending)
                continue;
            ep->report_pending = false;
            m->reports_pending--;
            /* A failed path ends the fragments it was placing (btl.h: ABORTED
             * once placement began and the rest is lost), else the PML would
             * wait for them for good after failing over; here, not inside
             * endpoint_fail, because a send can fail a path and no receive
             * callback may run inside a send. */
            if (ep->report_kind != BM_BTL_ERROR_RECOVERED)
                bm_btl_dgram_reasm_drop_all(ep, true);
            struct bm_btl_error err = {
                .kind = ep->report_kind,
                .endpoint = (struct bm_btl_endpoint *)ep,
                .peer = ep->peer,
                .status = ep->report_kind == BM_BTL_ERROR_RECOVERED ? BM_OK : BM_ERR_LINK_DOWN,
                .what = ep->report,
            };
            if (m->super.error_cb)
                m->super.error_cb(&m->super, &err, m->super.error_cbdata);
            else if (ep->report_kind != BM_BTL_ERROR_RECOVERED)
                bm_log_error("%s (no error handler registered)", ep->report);
        }
    }
    struct bm_util_queue_node *q;
    while ((q = bm_util_queue_pop(&m->done))) {
        struct bm_btl_dgram_frag *f = bm_util_container_of(q, struct bm_btl_dgram_frag, qlink);
        bm_btl_dgram_frag_complete(f, f->status);
        n++;
    }
    struct bm_util_list_node *ln;
    while ((ln = bm_util_list_pop_front(&m->getdone))) {
        struct bm_btl_dgram_getop *g = bm_util_container_of(ln, struct bm_btl_dgram_getop, link);
        struct bm_btl_dgram_endpoint *ep = m->eps[g->peer];
        if (ep)
            ep->rdma_out--;
        if (g->cb)
            g->cb(&m->super, (struct bm_btl_endpoint *)ep, g->laddr, g->lhandle, g->ctx, g->cbdata,
                  g->status);
        free(g);
        n++;
    }
    return n;
}
