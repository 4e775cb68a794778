/* Acknowledgements and retransmission timers of the dgram engine.
 * Receivers ACK cumulatively (every sequence number up to ack_seq) plus a
 * 32-bit selective-ACK bitmap of what arrived beyond the first hole; the ACK
 * rides on any packet going back, or goes alone after ack_delay_us, or at
 * once when an old sequence number shows that our ACK was lost. Senders
 * free ACKed segments, measure round trips (Karn: only segments sent once)
 * into a smoothed RTT and variance that set the retransmit timeout between
 * a floor and a ceiling, and resend at once the holes that a duplicate ACK
 * reveals. Timers are guests of the util hotel (check-in on post, check-out
 * on ACK or repost, eviction to the module's resend list). */
#define BM_LOG_SUBSYS "btl/dgram"
#include "btl/dgram/dgram.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

/* ---- receiver: building ACKs -------------------------------------------- */

void bm_btl_dgram_ack_fill(struct bm_btl_dgram_endpoint *ep, struct bm_dgram_hdr *h)
{
    if (!ep->rcv_valid)
        return;
    uint32_t mask = (uint32_t)ep->module->cfg.window - 1;
    h->flags |= BM_DGRAM_F_ACK_VALID;
    h->ack_seq = (uint16_t)(ep->rcv_next - 1);
    h->ack_session = ep->rcv_session;
    uint32_t sack = 0;
    if (ep->rcv_ooo) {
        for (uint32_t i = 0; i < 32; i++) {
            uint32_t idx = (uint16_t)(ep->rcv_next + 1 + i) & mask;
            if (ep->rcv_seen[idx / 64] >> (idx % 64) & 1)
                sack |= 1u << i;
        }
    }
    h->sack = sack;
    h->echo_seq = ep->rcv_last;
    h->flags |= BM_DGRAM_F_ECHO;
    if (ep->ack_needed && h->type != BM_DGRAM_T_ACK)
        ep->module->stats.acks_piggybacked++;
    ep->ack_needed = false;
}

void bm_btl_dgram_ack_schedule(struct bm_btl_dgram_endpoint *ep, bool now)
{
    struct bm_btl_dgram_module *m = ep->module;
    uint64_t when = now ? 0 : m->now_ns + (uint64_t)m->cfg.ack_delay_us * 1000u;
    if (!ep->ack_needed || when < ep->ack_deadline)
        ep->ack_deadline = when;
    ep->ack_needed = true;
    if (!bm_util_list_node_linked(&ep->ack_link))
        bm_util_list_push_back(&m->acks, &ep->ack_link);
}

int bm_btl_dgram_ack_progress(struct bm_btl_dgram_module *m)
{
    int n = 0;
    struct bm_util_list_node *it, *tmp;
    bm_util_list_foreach_safe(it, tmp, &m->acks)
    {
        struct bm_btl_dgram_endpoint *ep =
            bm_util_container_of(it, struct bm_btl_dgram_endpoint, ack_link);
        if (!ep->ack_needed) { /* piggy-backed meanwhile */
            bm_util_list_remove(it);
            continue;
        }
        if (ep->ack_deadline > m->now_ns)
            continue;
        bm_util_list_remove(it);
        uint8_t buf[sizeof(struct bm_dgram_hdr)];
        struct bm_dgram_hdr *h = (struct bm_dgram_hdr *)buf;
        bm_dgram_hdr_init(h, BM_DGRAM_T_ACK, (uint32_t)m->rank, m->job_key, m->addr.index,
                          ep->peer_index);
        h->snd_session = ep->snd_session;
        bm_btl_dgram_ack_fill(ep, h);
        bm_btl_dgram_post(m, BM_DGRAM_CH_PRIO, ep, buf, sizeof(*h), NULL, 0);
        m->stats.acks_sent++;
        n++;
    }
    return n;
}

/* ---- timers ------------------------------------------------------------ */

static void timer_evict(struct bm_util_hotel *h, int room, void *guest, void *arg)
{
    struct bm_btl_dgram_module *m = arg;
    struct bm_btl_dgram_seg *s = guest;
    struct bm_btl_dgram_endpoint *ep = s->ep;
    (void)room;
    s->timer = -1;
    if (s->seq != ep->snd_una && ep->state == BM_DGRAM_EP_OK) {
        /* Not the oldest segment. Beyond the reach of the selective-ACK
         * bitmap the peer cannot tell us whether it has the segment, and
         * with a hole in front it most likely does: resending would flood
         * the path with duplicates. Such segments wait until the cumulative
         * ACK comes close (the oldest segment's own timer guarantees it
         * does, or the path is declared failed). Within reach, wait one
         * timeout past the last ACK progress, as TCP's single timer
         * restarted on every advancing ACK would. */
        uint64_t until = ep->progress_ns + (uint64_t)ep->rto;
        /* Nor while the peer's liveness responder says it lives but does
         * not read (it computes): the segment waits in its socket buffer,
         * and the oldest one's resends bring the ACK when it reads again. */
        if (bm_dgram_seq_diff(s->seq, ep->snd_una) > 33 || bm_btl_dgram_live_recent(ep))
            until = m->now_ns + (uint64_t)ep->rto;
        int r;
        if (until > m->now_ns && bm_util_hotel_checkin_at(h, s, until, &r) == BM_OK) {
            s->timer = r;
            return;
        }
    }
    s->state = BM_DGRAM_SEG_RESEND;
    bm_util_list_push_back(&m->resend, &s->link);
    m->stats.resends_timeout++;
    ep->pstats.units_resent++;
    m->evicted++;
    if (s->seq == ep->snd_una) {
        bm_btl_dgram_cwnd_loss(ep);
        /* only the oldest segment counts towards failure and backs off the
         * timeout: a burst of losses is one event, not thousands */
        ep->consecutive_timeouts++;
        ep->live_due = true; /* ask whether the peer lives (dgram_live.c) */
        m->stats.rto_events++;
        ep->rto_recover = true;
        ep->rto_mark = ep->snd_next;
        ep->rto_cursor = (uint16_t)(s->seq + 1);
        ep->rto_event_ns = m->now_ns;
        ep->rto *= 2;
        if (ep->rto > (int64_t)m->cfg.rto_max_us * 1000)
            ep->rto = (int64_t)m->cfg.rto_max_us * 1000;
    }
}

bm_status_t bm_btl_dgram_timers_reserve(struct bm_btl_dgram_module *m, uint32_t rooms)
{
    if (m->hotel.nodes && (m->hotel.nrooms >= rooms || bm_util_hotel_occupied(&m->hotel)))
        return BM_OK;
    if (m->hotel.nodes)
        bm_util_hotel_fini(&m->hotel);
    struct bm_util_hotel_attr attr = {
        .nrooms = rooms,
        .tick_ns = 1u << 16, /* 65 us: well below the 2 ms floor of the timeout */
        .nslots = 4096,      /* one revolution: 268 ms, above the 200 ms ceiling */
        .evict = timer_evict,
        .arg = m,
    };
    return bm_util_hotel_init(&m->hotel, &attr);
}

void bm_btl_dgram_timer_start(struct bm_btl_dgram_module *m, struct bm_btl_dgram_seg *s)
{
    if (s->timer >= 0)
        bm_util_hotel_checkout(&m->hotel, s->timer);
    s->timer = -1;
    int room;
    if (bm_util_hotel_checkin_at(&m->hotel, s, m->now_ns + (uint64_t)s->ep->rto, &room) != BM_OK) {
        /* Every room taken: the segment waits on the resend list, as if its
         * timer had expired (new segments are not posted meanwhile). */
        s->state = BM_DGRAM_SEG_RESEND;
        bm_util_list_push_back(&m->resend, &s->link);
        return;
    }
    s->timer = room;
    s->state = BM_DGRAM_SEG_POSTED;
}

void bm_btl_dgram_timer_stop(struct bm_btl_dgram_module *m, struct bm_btl_dgram_seg *s)
{
    if (s->timer < 0)
        return;
    bm_util_hotel_checkout(&m->hotel, s->timer);
    s->timer = -1;
}

/* Evict every segment whose deadline passed to the resend list, then check
 * whether a path must be declared failed. */
int bm_btl_dgram_timer_expire(struct bm_btl_dgram_module *m)
{
    m->evicted = 0;
    bm_util_hotel_progress(&m->hotel, m->now_ns);
    int n = m->evicted;
    if (n) {
        /* fail queues its callbacks, so nothing runs behind our back here */
        for (int i = 0; i < m->neps; i++) {
            struct bm_btl_dgram_endpoint *ep = m->eps[i];
            if (!ep || ep->state != BM_DGRAM_EP_OK)
                continue;
            if (ep->live_due)
                bm_btl_dgram_live_ping(ep);
            bm_btl_dgram_endpoint_check_health(ep);
        }
    }
    return n;
}

/* ---- sender: handling ACKs ---------------------------------------------- */

static void rtt_sample(struct bm_btl_dgram_endpoint *ep, int64_t r)
{
    const struct bm_btl_dgram_config *c = &ep->module->cfg;
    if (r < 0)
        return;
    if (ep->srtt == 0) {
        ep->srtt = r;
        ep->rttvar = r / 2;
    } else {
        int64_t d = ep->srtt - r;
        if (d < 0)
            d = -d;
        ep->rttvar = (3 * ep->rttvar + d) / 4;
        ep->srtt = (7 * ep->srtt + r) / 8;
    }
    int64_t rto = ep->srtt + 4 * ep->rttvar;
    if (rto < (int64_t)c->rto_min_us * 1000)
        rto = (int64_t)c->rto_min_us * 1000;
    if (rto > (int64_t)c->rto_max_us * 1000)
        rto = (int64_t)c->rto_max_us * 1000;
    ep->rto = rto;
}

void bm_btl_dgram_seg_acked(struct bm_btl_dgram_endpoint *ep, struct bm_btl_dgram_seg *s)
{
    struct bm_btl_dgram_module *m = ep->module;
    if (s->state == BM_DGRAM_SEG_POSTED)
        bm_btl_dgram_timer_stop(m, s);
    else if (s->state == BM_DGRAM_SEG_RESEND)
        bm_util_list_remove(&s->link);
    ep->win[s->seq & (uint16_t)(m->cfg.window - 1)] = NULL;
    ep->pstats.bytes_acked += s->len;
    struct bm_btl_dgram_frag *f = s->frag;
    bm_btl_dgram_seg_put(m, s);
    if (f && --f->segs_out == 0 && f->segs_cut > 0 && f->next_off >= f->len && !f->queued)
        bm_btl_dgram_frag_done(f, BM_OK);
}

/* Resend now a segment that the ACK shows missing, but only when a segment
 * transmitted clearly later than it has already arrived (ep->rack_ns, the
 * idea of TCP's RACK), or one transmitted after it on the same channel. The two channels reorder
 * packets all the time (a tiny fragment on the priority channel overtakes the chunk posted just
 * before it), and a hole that is only reordering must not be resent; the same rule keeps a
 * just-resent segment from being resent again on stale ACKs. */
/* seg arrived: remember it as RACK evidence. */
static void rack_note(struct bm_btl_dgram_endpoint *ep, const struct bm_btl_dgram_seg *seg)
{
    if (seg->sent_ns > ep->rack_ns)
        ep->rack_ns = seg->sent_ns;
    uint64_t cn = ep->rack_ch_ns[seg->ch];
    if (seg->sent_ns > cn ||
        (seg->sent_ns == cn && bm_dgram_seq_lt(ep->rack_ch_seq[seg->ch], seg->seq))) {
        ep->rack_ch_ns[seg->ch] = seg->sent_ns;
        ep->rack_ch_seq[seg->ch] = seg->seq;
    }
}

static void fast_resend(struct bm_btl_dgram_endpoint *ep, uint16_t seq)
{
    struct bm_btl_dgram_module *m = ep->module;
    struct bm_btl_dgram_seg *s = ep->win[seq & (uint16_t)(m->cfg.window - 1)];
    if (!s || s->seq != seq || s->state != BM_DGRAM_SEG_POSTED)
        return;
    uint64_t reo = (uint64_t)ep->srtt / 4;
    if (reo < 20000)
        reo = 20000;
    /* Segments of one batch share a transmit time: within a channel, the
     * sequence number orders them (a later one of the same batch arrived). */
    uint64_t cn = ep->rack_ch_ns[s->ch];
    bool later_on_channel = s->sent_ns < cn || (s->sent_ns == cn && cn != 0 &&
                                                bm_dgram_seq_lt(s->seq, ep->rack_ch_seq[s->ch]));
    if (s->sent_ns + reo >= ep->rack_ns && !later_on_channel)
        return;
    bm_btl_dgram_timer_stop(m, s);
    s->state = BM_DGRAM_SEG_RESEND;
    bm_util_list_push_back(&m->resend, &s->link);
    m->stats.resends_fast++;
    ep->pstats.units_resent++;
    bm_btl_dgram_cwnd_loss(ep);
}

void bm_btl_dgram_cwnd_loss(struct bm_btl_dgram_endpoint *ep)
{
    struct bm_btl_dgram_module *m = ep->module;
    if (ep->in_recovery)
        return;
    uint32_t half = ep->cwnd / 2;
    ep->ssthresh = half > (uint32_t)m->cfg.cwnd_min ? half : (uint32_t)m->cfg.cwnd_min;
    ep->cwnd = ep->ssthresh;
    ep->in_recovery = true;
    ep->recover_seq = (uint16_t)(ep->snd_next - 1);
    m->stats.cwnd_cuts++;
}

/* k more segments were ACKed: slow start below ssthresh, then about one
 * segment per window's worth of ACKs. */
static void cwnd_grow(struct bm_btl_dgram_endpoint *ep, uint32_t k)
{
    uint32_t max = (uint32_t)ep->module->cfg.window;
    if (ep->cwnd < ep->ssthresh)
        ep->cwnd += k;
    else
        ep->cwnd += (k * 4 + ep->cwnd - 1) / ep->cwnd; /* a little faster than TCP: short paths */
    if (ep->cwnd > max)
        ep->cwnd = max;
}

/* The window advanced by k segments after a retransmit timeout: resend the
 * next 2k segments that were outstanding at the timeout and have not been
 * sent since (slow start, clocked by the ACKs of the resent ones). */
static void rto_recovery_resend(struct bm_btl_dgram_endpoint *ep, uint32_t k)
{
    struct bm_btl_dgram_module *m = ep->module;
    uint16_t mask = (uint16_t)(m->cfg.window - 1);
    if (bm_dgram_seq_lt(ep->rto_cursor, ep->snd_una))
        ep->rto_cursor = ep->snd_una;
    for (uint32_t budget = 2 * k; budget > 0 && bm_dgram_seq_lt(ep->rto_cursor, ep->rto_mark);
         ep->rto_cursor++) {
        struct bm_btl_dgram_seg *seg = ep->win[ep->rto_cursor & mask];
        if (!seg || seg->seq != ep->rto_cursor || seg->state != BM_DGRAM_SEG_POSTED ||
            seg->sent_ns > ep->rto_event_ns)
            continue; /* ACKed, already queued for resend, or resent since */
        bm_btl_dgram_timer_stop(m, seg);
        seg->state = BM_DGRAM_SEG_RESEND;
        bm_util_list_push_back(&m->resend, &seg->link);
        m->stats.resends_rto_recovery++;
        ep->units_swept++; /* not evidence of loss: see the stats operation */
        budget--;
    }
    if (!bm_dgram_seq_lt(ep->snd_una, ep->rto_mark) ||
        !bm_dgram_seq_lt(ep->rto_cursor, ep->rto_mark))
        ep->rto_recover = false;
}

void bm_btl_dgram_ack_handle(struct bm_btl_dgram_endpoint *ep, const struct bm_dgram_hdr *h)
{
    struct bm_btl_dgram_module *m = ep->module;
    if (!(h->flags & BM_DGRAM_F_ACK_VALID))
        return;
    if (ep->state != BM_DGRAM_EP_OK || h->ack_session != ep->snd_session) {
        m->stats.acks_old++;
        return;
    }
    uint16_t a = h->ack_seq;
    uint16_t una_prev = (uint16_t)(ep->snd_una - 1);
    /* valid: snd_una - 1 <= a < snd_next */
    if (bm_dgram_seq_lt(a, una_prev) || !bm_dgram_seq_lt(a, ep->snd_next)) {
        m->stats.acks_old++;
        return;
    }
    uint16_t mask = (uint16_t)(m->cfg.window - 1);
    bool outstanding = ep->snd_una != ep->snd_next;
    if ((h->flags & BM_DGRAM_F_ECHO) && !bm_dgram_seq_lt(h->echo_seq, ep->snd_una) &&
        bm_dgram_seq_lt(h->echo_seq, ep->snd_next)) {
        /* Karn: a resent segment's ACK may answer either copy */
        struct bm_btl_dgram_seg *e = ep->win[h->echo_seq & mask];
        if (e && e->seq == h->echo_seq && e->xmits == 1)
            rtt_sample(ep, (int64_t)(m->now_ns - e->sent_ns));
    }
    if (a == una_prev) {
        if (outstanding) {
            m->stats.acks_dup++;
            ep->dup_acks++;
        }
    } else {
        for (uint16_t s = ep->snd_una; s != (uint16_t)(a + 1); s++) {
            struct bm_btl_dgram_seg *seg = ep->win[s & mask];
            if (seg) {
                rack_note(ep, seg);
                bm_btl_dgram_seg_acked(ep, seg);
            }
        }
        uint32_t k = (uint16_t)(a + 1 - ep->snd_una);
        ep->snd_una = (uint16_t)(a + 1);
        ep->progress_ns = m->now_ns;
        if (ep->in_recovery && !bm_dgram_seq_lt(a, ep->recover_seq))
            ep->in_recovery = false;
        if (!ep->in_recovery)
            cwnd_grow(ep, k);
        ep->consecutive_timeouts = 0;
        ep->dup_acks = 0;
        m->stats.acks_recv++;
    }
    for (uint32_t i = 0; i < 32 && h->sack >> i; i++) {
        if (!(h->sack >> i & 1))
            continue;
        uint16_t s = (uint16_t)(a + 2 + i);
        if (!bm_dgram_seq_lt(s, ep->snd_next))
            break;
        struct bm_btl_dgram_seg *seg = ep->win[s & mask];
        if (seg && seg->seq == s) {
            rack_note(ep, seg);
            bm_btl_dgram_seg_acked(ep, seg);
            m->stats.sacked++;
        }
    }
    if (h->sack && outstanding) {
        /* Something beyond a + 1 arrived, so a + 1 and the holes below the
         * highest selectively ACKed segment are missing: resend just those. */
        fast_resend(ep, (uint16_t)(a + 1));
        int top = 31 - __builtin_clz(h->sack);
        for (int i = 0; i < top; i++)
            if (!(h->sack >> i & 1))
                fast_resend(ep, (uint16_t)(a + 2 + i));
    }
    while (ep->snd_una != ep->snd_next && ep->win[ep->snd_una & mask] == NULL)
        ep->snd_una++;
    uint16_t advanced = (uint16_t)(ep->snd_una - una_prev - 1);
    if (ep->rto_recover && advanced)
        rto_recovery_resend(ep, advanced);
    bm_btl_dgram_endpoint_check_ready(ep);
}
