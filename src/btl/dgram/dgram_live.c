/* Liveness of dgram peers: telling a peer that computes outside the library
 * from a path that stopped carrying datagrams. A reliable stream over
 * datagrams is ACKed by the peer's progress loop, so a peer that computes
 * for seconds without an MPI call leaves our data un-ACKed exactly as a cut
 * link does; a transport that counted timeouts declared such a path failed
 * after ~0.65 s (12 timeouts from the 250 us floor) and took it back ~2 s
 * after the peer returned. TCP has no such problem because the peer's
 * kernel ACKs data the application has not read. This file gives dgram the
 * same witness: every module has a plain UDP socket (the live port,
 * published in the modex) read by a thread of its own that answers each
 * authenticated PING there with an ALIVE (dgram_proto.h), whatever the
 * process is doing: from the module's priority socket on the udp wire, from
 * the live socket itself on the libfabric wire (whose endpoints belong to
 * the provider and are not for a second thread; the asking side puts the
 * live address in its address vectors, so the provider takes the answer
 * from there, and alive_recv accepts either source). The thread only
 * reads the socket and a copy of the module's key and identity taken at
 * start: it never touches the module's state, so it needs no lock.
 *
 * The asking side: at every retransmit timeout of a peer's oldest segment
 * from the third on (~2 ms of silence, then at the backed-off timeout, at
 * most BM_BTL_DGRAM_RTO_MAX_US apart) a full-size PING goes to the peer's
 * live port (full size: a path that only passes small datagrams is not
 * alive); an answer within the live window (below) means the peer lives and
 * the path carries our datagrams, so the failure checks
 * (bm_btl_dgram_endpoint_check_health) hold back and the segment keeps
 * being resent at the capped timeout, as TCP does (tcp_retries2). Only a
 * path whose pings go unanswered is declared failed, as fast as before.
 * Segments other than the oldest are not resent while the peer is known
 * alive (they are waiting in its socket buffer; the oldest one's resends
 * are enough to get an ACK as soon as it reads again). An ALIVE also says
 * how long ago the peer last ran its progress loop (one relaxed store per
 * pass): only a peer that has really been away holds the failure back
 * (bm_btl_dgram_live_answer). */
#define BM_LOG_SUBSYS "btl/dgram"
#include "btl/dgram/dgram.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

/* Pings start at this many consecutive timeouts of the oldest segment:
 * the first ones are ordinary losses that a resend repairs. */
#define LIVE_AFTER_TIMEOUTS 3

/* What the thread needs, copied at start (the module's key may change
 * between creation and the first endpoint: bm_btl_dgram_module_use_job_key). */
struct bm_btl_dgram_live {
    int fd;       /* the live socket (bound to the module's address) */
    int stop_fd;  /* eventfd: close asks the thread to end */
    int reply_fd; /* answers leave from it: the priority socket (udp wire) or fd */
    bool running;
    pthread_t thread;
    bool auth, checksum;
    uint8_t index;
    uint32_t rank;
    uint64_t job_key;
    uint8_t key[16];
    uint64_t nh_key[BM_DGRAM_NH_WORDS];
    _Atomic uint64_t answered;
    /* the last progress pass of the module (bm_btl_dgram_live_mark): an
     * ALIVE says how long ago it was */
    _Atomic uint64_t main_ns;
    uint8_t buf[BM_DGRAM_MAX_DATAGRAM + 8];
};

bm_status_t bm_btl_dgram_live_open(struct bm_btl_dgram_module *m)
{
    if (!m->cfg.liveness)
        return BM_OK;
    struct bm_btl_dgram_live *l = calloc(1, sizeof(*l));
    if (!l)
        return BM_ERR_NO_MEMORY;
    l->stop_fd = -1;
    l->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = m->addr.ipv4;
    socklen_t sl = sizeof(sa);
    if (l->fd < 0 || bind(l->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        getsockname(l->fd, (struct sockaddr *)&sa, &sl) != 0) {
        /* not fatal: peers then judge this module's paths by timeouts alone */
        bm_log_warn("dgram on %s: no liveness port (%s); a peer that computes for long "
                    "without MPI calls may see its paths to this process declared failed",
                    m->addr.ifname, strerror(errno));
        if (l->fd >= 0)
            close(l->fd);
        free(l);
        return BM_OK;
    }
    m->addr.port_live = sa.sin_port;
    m->live = l;
    return BM_OK;
}

/* Answer one PING read from the live socket, if it is genuine and ours. */
static void live_answer_one(struct bm_btl_dgram_live *l, size_t len, const struct sockaddr_in *from)
{
    struct bm_btl_dgram_pkt pkt;
    size_t bad;
    if (bm_btl_dgram_parse(l->buf, len, &pkt, &bad) != BM_OK)
        return;
    struct bm_dgram_hdr h;
    memcpy(&h, l->buf, sizeof(h));
    if (h.type != BM_DGRAM_T_PING || h.dst_module != l->index)
        return;
    if (h.flags & BM_DGRAM_F_MAC) {
        if (!bm_btl_dgram_mac_check(l->key, l->nh_key, l->buf, len))
            return;
    } else if (l->auth || h.job_key != l->job_key) {
        return;
    }
    struct bm_dgram_chunk c;
    memcpy(&c, pkt.chunk, sizeof(c));
    uint8_t out[sizeof(struct bm_dgram_hdr) + sizeof(struct bm_dgram_chunk)];
    struct bm_dgram_hdr *a = (struct bm_dgram_hdr *)out;
    bm_dgram_hdr_init(a, BM_DGRAM_T_ALIVE, l->rank, l->job_key, l->index, h.src_module);
    uint64_t now = bm_btl_dgram_now();
    uint64_t last = atomic_load_explicit(&l->main_ns, memory_order_relaxed);
    uint64_t idle_ms = now > last ? (now - last) / 1000000u : 0;
    struct bm_dgram_chunk ac = {.frag_id = c.frag_id,
                                .frag_size = idle_ms > UINT32_MAX ? UINT32_MAX : (uint32_t)idle_ms};
    memcpy(a + 1, &ac, sizeof(ac));
    if (l->auth) {
        a->flags |= BM_DGRAM_F_MAC;
        a->job_key = 0;
        a->job_key = bm_btl_dgram_mac(l->key, l->nh_key, out, sizeof(out), NULL, 0);
    } else if (l->checksum) {
        uint32_t sum = bm_btl_dgram_checksum(out, sizeof(out));
        a->checksum = sum ? sum : 1;
    }
    if (sendto(l->reply_fd, out, sizeof(out), MSG_DONTWAIT, (const struct sockaddr *)from,
               sizeof(*from)) == (ssize_t)sizeof(out))
        atomic_fetch_add_explicit(&l->answered, 1, memory_order_relaxed);
}

static void *live_thread(void *arg)
{
    struct bm_btl_dgram_live *l = arg;
    struct pollfd p[2] = {{.fd = l->fd, .events = POLLIN}, {.fd = l->stop_fd, .events = POLLIN}};
    for (;;) {
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[1].revents)
            break;
        if (!(p[0].revents & POLLIN))
            continue;
        struct sockaddr_in from;
        socklen_t fl = sizeof(from);
        ssize_t n =
            recvfrom(l->fd, l->buf, sizeof(l->buf), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
        if (n > 0 && (size_t)n <= BM_DGRAM_MAX_DATAGRAM && fl == sizeof(from))
            live_answer_one(l, (size_t)n, &from);
    }
    return NULL;
}

bm_status_t bm_btl_dgram_live_start(struct bm_btl_dgram_module *m)
{
    struct bm_btl_dgram_live *l = m->live;
    if (!l || l->running)
        return BM_OK;
    l->auth = m->cfg.auth;
    l->checksum = m->cfg.checksum;
    l->index = m->addr.index;
    l->rank = (uint32_t)m->rank;
    l->job_key = m->job_key;
    memcpy(l->key, m->mac_key, sizeof(l->key));
    memcpy(l->nh_key, m->nh_key, sizeof(l->nh_key));
    /* the libfabric wire's channels have no socket of ours to send from */
    l->reply_fd = m->wire == &bm_btl_dgram_wire_udp ? m->ch[BM_DGRAM_CH_PRIO].fd : l->fd;
    atomic_store_explicit(&l->main_ns, bm_btl_dgram_now(), memory_order_relaxed);
    l->stop_fd = eventfd(0, EFD_CLOEXEC);
    /* the thread takes no signals: they stay the application's */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = l->stop_fd < 0 ? -1 : pthread_create(&l->thread, NULL, live_thread, l);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        bm_log_warn("dgram on %s: cannot start the liveness responder (%s); a peer that "
                    "computes for long without MPI calls may see its paths to this process "
                    "declared failed",
                    m->addr.ifname, strerror(errno));
        if (l->stop_fd >= 0)
            close(l->stop_fd);
        l->stop_fd = -1;
        return BM_ERR_SYSTEM;
    }
    l->running = true;
    return BM_OK;
}

void bm_btl_dgram_live_close(struct bm_btl_dgram_module *m)
{
    struct bm_btl_dgram_live *l = m->live;
    if (!l)
        return;
    if (l->running) {
        uint64_t one = 1;
        ssize_t w = write(l->stop_fd, &one, sizeof(one)); /* fails only on overflow */
        (void)w;
        pthread_join(l->thread, NULL);
    }
    if (l->stop_fd >= 0)
        close(l->stop_fd);
    close(l->fd);
    m->stats.live_answered = atomic_load(&l->answered);
    free(l);
    m->live = NULL;
}

void bm_btl_dgram_live_mark(struct bm_btl_dgram_module *m)
{
    atomic_store_explicit(&m->live->main_ns, m->now_ns, memory_order_relaxed);
}

uint64_t bm_btl_dgram_live_answered(const struct bm_btl_dgram_module *m)
{
    return m->live ? atomic_load_explicit(&m->live->answered, memory_order_relaxed)
                   : m->stats.live_answered;
}

/* ---- the asking side -------------------------------------------------- */

void bm_btl_dgram_live_ping(struct bm_btl_dgram_endpoint *ep)
{
    struct bm_btl_dgram_module *m = ep->module;
    ep->live_due = false;
    if (ep->to_live.sin_port == 0 || ep->state != BM_DGRAM_EP_OK ||
        ep->consecutive_timeouts < LIVE_AFTER_TIMEOUTS)
        return;
    if (ep->live_ping_ns <= ep->progress_ns) {
        /* the first ping since the peer last ACKed: a fresh nonce */
        m->rng = m->rng * 6364136223846793005ull + 1442695040888963407ull;
        ep->live_nonce = (uint32_t)(m->rng >> 32);
    }
    ep->live_ping_ns = m->now_ns;
    m->stats.live_pings++;
    bm_btl_dgram_send_ping_live(ep, ep->live_nonce, ep->mtu[BM_DGRAM_CH_DATA]);
}

/* An answer says the peer lives and how long ago it last ran its progress
 * loop. A peer that computes has been away at least about as long as we
 * have waited for its ACK; one that runs its loop all along (idle well
 * under half our wait) had every resend in hand and did not ACK it: that is
 * no busy peer but a stream it rejects (a protocol fault), and the failure
 * (which restarts the stream in a new session) must not be held back. */
void bm_btl_dgram_live_answer(struct bm_btl_dgram_endpoint *ep, uint32_t nonce, uint32_t idle_ms)
{
    struct bm_btl_dgram_module *m = ep->module;
    if (ep->live_ping_ns == 0 || nonce != ep->live_nonce)
        return; /* not an answer to our current pings (replayed, or late) */
    m->stats.live_answers++;
    uint64_t now = m->now_ns ? m->now_ns : bm_btl_dgram_now();
    uint64_t waited = now > ep->progress_ns ? now - ep->progress_ns : 0;
    if (2 * (uint64_t)idle_ms * 1000000u >= waited)
        ep->live_ns = now;
    else
        m->stats.live_progressing++;
}

/* The live window: pings leave at most rto_max apart (the backed-off
 * timeout), so a living peer's answers come at least that often; twice
 * that plus 600 ms (1 s with the defaults) covers a responder thread kept
 * off the CPU for a while by a loaded host. */
bool bm_btl_dgram_live_recent(const struct bm_btl_dgram_endpoint *ep)
{
    const struct bm_btl_dgram_module *m = ep->module;
    uint64_t window = 2 * (uint64_t)m->cfg.rto_max_us * 1000u + 600000000ull;
    return ep->live_ns > ep->progress_ns && m->now_ns - ep->live_ns <= window;
}
