/* Connections of the tcp transport: one TCP socket carrying one link of an
 * endpoint. Its life: a lazy non-blocking connect on first send, or an
 * accept by a module's listener (anonymous until its HELLO names the peer);
 * the handshake that proves both sides belong to the same job (the SipHash
 * of the handshake under the receiver's published nonce, util/siphash.h);
 * the deterministic resolution of simultaneous connects (the lower rank's
 * connection wins); the epoll interest and the deadline of every state; and,
 * once established, the stream parser that cuts the received bytes into
 * frames and hands DATA frames to the receive callback (the send side of a
 * connection is tcp_frag.c). A connection that fails fails its endpoint
 * (tcp_endpoint.c). */
#define BM_LOG_SUBSYS "btl/tcp"
#include "btl/tcp/tcp.h"
#include "util/log.h"
#include "util/siphash.h"
#include "util/tcpcc.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* Receive buffer of a connection before its first large frame. */
#define TCP_RBUF_INITIAL (256u << 10)

/* A connection that would move a partial frame of more than
 * TCP_RBUF_MOVE_MAX bytes to the front of its buffer (to make room for the
 * rest of it) grows the buffer to TCP_RBUF_STREAM instead, once. Frames
 * that are not placed (packed FRAGs of non-contiguous messages, 64 KiB)
 * otherwise cost a move of most of a frame per 256 KiB read: measured,
 * tcp vector and indexed 1 MiB windows, 80 of 272 MiB received moved
 * again (29% more copying on the receiver). In 1 MiB such a move comes
 * once per 1 MiB of frames; the buffer still fits in a core's L2. */
#define TCP_RBUF_MOVE_MAX (4u << 10)
#define TCP_RBUF_STREAM   (1u << 20)

/* How far a read into the connection buffer may go past the frames it
 * knows of (tcp_conn_rbuf_room). Whatever it takes of a frame that could
 * have been placed is copied once more; what it leaves costs a read more
 * for a run of small frames. After a placed frame the next one is likely
 * placed too (a rendezvous streams FRAGs): only its headers are read. */
#define TCP_READ_AHEAD        (64u << 10)
#define TCP_READ_AHEAD_PLACED (sizeof(struct bm_btl_tcp_hdr) + BM_BTL_TCP_PLACE_HDR_MAX)

/* The handshake bytes covered by its proof. */
#define TCP_HS_SIGNED offsetof(struct bm_btl_tcp_hs, proof)

/* ---- handshake: proof of job membership -------------------------------------- */

static void tcp_hs_build(const struct bm_btl_tcp_component *comp, struct bm_btl_tcp_hs *hs,
                         int kind, int dst_rank, int src_module, int link, const uint8_t *dst_nonce)
{
    memset(hs, 0, sizeof(*hs));
    hs->magic = htonl(BM_BTL_TCP_HS_MAGIC);
    hs->version = htons(BM_BTL_TCP_HS_VERSION);
    hs->kind = htons((uint16_t)kind);
    hs->src_rank = (int32_t)htonl((uint32_t)comp->rank);
    hs->dst_rank = (int32_t)htonl((uint32_t)dst_rank);
    hs->src_module = htons((uint16_t)src_module);
    hs->link = htons((uint16_t)link);
    hs->proof = htobe64(bm_util_siphash24(dst_nonce, (const uint8_t *)hs, TCP_HS_SIGNED));
}

/* NULL when valid, else why not. Checks everything but the kind. */
static const char *tcp_hs_check(const struct bm_btl_tcp_component *c,
                                const struct bm_btl_tcp_hs *hs)
{
    if (ntohl(hs->magic) != BM_BTL_TCP_HS_MAGIC)
        return "not a bitmover handshake (bad magic): a stray client or a port scanner";
    if (ntohs(hs->version) != BM_BTL_TCP_HS_VERSION)
        return "handshake version differs: the peer runs a different bitmover build";
    int dst = (int)ntohl((uint32_t)hs->dst_rank), src = (int)ntohl((uint32_t)hs->src_rank);
    if (dst != c->rank)
        return "addressed to another rank (a process of another job?)";
    if (src < 0 || src >= c->size || src == c->rank)
        return "claims an impossible sender rank";
    if (ntohs(hs->link) >= c->cfg.links)
        return "link index out of range (BM_BTL_TCP_LINKS differs between processes?)";
    if (be64toh(hs->proof) != bm_util_siphash24(c->nonce, (const uint8_t *)hs, TCP_HS_SIGNED))
        return "wrong job secret (a process of another job, or a stranger)";
    return NULL;
}

/* ---- sockets ------------------------------------------------------------------ */

/* The congestion control BM_BTL_TCP_CONGESTION names for a link of a
 * loopback module or not (util/tcpcc.h says what each value means and why
 * auto is reno on loopback; README "Congestion control"). */
static void tcp_set_congestion(struct bm_btl_tcp_component *comp, int fd, bool loopback)
{
    const char *cc = bm_util_tcpcc_name(comp->cfg.congestion, loopback);
    if (cc)
        bm_util_tcpcc_set(fd, cc, comp->cfg.congestion, &comp->congestion_told,
                          "BM_BTL_TCP_CONGESTION", comp->rank, "tcp links");
}

static void tcp_set_sockopts(struct bm_btl_tcp_component *comp, int fd, bool loopback)
{
    const struct bm_btl_tcp_config *cfg = &comp->cfg;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    tcp_set_congestion(comp, fd, loopback);
    if (cfg->sndbuf) {
        int v = (int)cfg->sndbuf;
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
    }
    if (cfg->rcvbuf) {
        int v = (int)cfg->rcvbuf;
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
    }
    if (cfg->user_timeout_ms > 0) {
        unsigned v = (unsigned)cfg->user_timeout_ms;
        setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &v, sizeof(v));
    }
    if (cfg->keepalive_idle_s > 0) {
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &cfg->keepalive_idle_s, sizeof(int));
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &cfg->keepalive_intvl_s, sizeof(int));
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cfg->keepalive_cnt, sizeof(int));
    }
    bm_btl_tcp_live_sockopt(comp, fd);
}

static void tcp_conn_epoll(struct bm_btl_tcp_conn *c, uint32_t events)
{
    if (c->fd < 0 || c->events == events)
        return;
    struct epoll_event ev = {.events = events, .data.ptr = c};
    int op = c->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (epoll_ctl(c->comp->epfd, op, c->fd, &ev) == 0)
        c->events = events;
    else
        bm_log_error("epoll_ctl on %s: %s", c->peer_str, strerror(errno));
}

void bm_btl_tcp_conn_want_write(struct bm_btl_tcp_conn *c, bool want)
{
    tcp_conn_epoll(c, EPOLLIN | (want ? EPOLLOUT : 0u));
}

static void tcp_timer_set(struct bm_btl_tcp_conn *c, long long deadline)
{
    c->deadline_ns = deadline;
    if (!bm_util_list_node_linked(&c->timer_node))
        bm_util_list_push_back(&c->comp->timers, &c->timer_node);
}

static void tcp_timer_clear(struct bm_btl_tcp_conn *c)
{
    c->deadline_ns = 0;
    bm_util_list_remove(&c->timer_node);
}

static void tcp_conn_place_abort(struct bm_btl_tcp_conn *c);

void bm_btl_tcp_conn_close_fd(struct bm_btl_tcp_conn *c)
{
    if (c->ep)
        bm_btl_tcp_ep_unfast(c->ep);
    tcp_conn_place_abort(c);
    c->place_declined = false;
    if (c->comp && c->comp->hot == c)
        c->comp->hot = NULL;
    if (c->fd >= 0)
        close(c->fd); /* also leaves the epoll set */
    c->fd = -1;
    c->events = 0;
    c->hs_len = 0;
    tcp_timer_clear(c);
}

static void tcp_sockaddr_str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)ss;
        bm_btl_tcp_addr_str(AF_INET, (const uint8_t *)&s->sin_addr, ntohs(s->sin_port), buf, len);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)ss;
        bm_btl_tcp_addr_str(AF_INET6, (const uint8_t *)&s->sin6_addr, ntohs(s->sin6_port), buf,
                            len);
    } else {
        snprintf(buf, len, "?");
    }
}

void bm_btl_tcp_conn_init(struct bm_btl_tcp_conn *c, struct bm_btl_tcp_component *comp,
                          struct bm_btl_tcp_endpoint *ep, int link)
{
    c->kind = BM_BTL_TCP_POLL_CONN;
    c->comp = comp;
    c->state = BM_BTL_TCP_CONN_IDLE;
    c->fd = -1;
    c->ep = ep;
    c->link = link;
    bm_util_list_node_init(&c->timer_node);
    bm_util_list_node_init(&c->qnode_anon);
    bm_util_queue_init(&c->sendq);
    bm_util_queue_init(&c->ackq);
}

/* ---- failure ------------------------------------------------------------------ */

static int tcp_errno_status(int err)
{
    switch (err) {
    case ECONNREFUSED:
        return BM_ERR_CONN_REFUSED;
    case ECONNRESET:
    case EPIPE:
    case 0:
        return BM_ERR_CONN_RESET;
    case EHOSTUNREACH:
    case ENETUNREACH:
        return BM_ERR_UNREACHABLE;
    default:
        return BM_ERR_LINK_DOWN;
    }
}

void bm_btl_tcp_conn_fail(struct bm_btl_tcp_conn *c, int err)
{
    struct bm_btl_tcp_endpoint *ep = c->ep;
    const struct bm_btl_tcp_config *cfg = &c->comp->cfg;
    char why[160];
    if (err == 0)
        snprintf(why, sizeof(why),
                 "closed by the peer without a goodbye (the process died or "
                 "was killed)");
    else if (err == ECONNRESET)
        snprintf(why, sizeof(why), "reset by peer (the process died, or a firewall cut it)");
    else if (err == EPIPE)
        snprintf(why, sizeof(why), "broken (EPIPE: the peer closed it)");
    else if (err == ETIMEDOUT)
        snprintf(why, sizeof(why),
                 "timed out: BM_BTL_TCP_KEEPALIVE_* probes unanswered or no acknowledgement "
                 "within BM_BTL_TCP_USER_TIMEOUT=%d ms (link down, black-holed, or host dead)",
                 cfg->user_timeout_ms);
    else
        snprintf(why, sizeof(why), "failed: %s", strerror(err));
    char what[1024];
    snprintf(what, sizeof(what),
             "connection to rank %d (%s) via %s %s. Check that the process is alive and that "
             "the network between the two hosts works; BM_BTL_TCP_IF_INCLUDE selects interfaces",
             ep->rank, c->peer_str, ep->module->iface.name, why);
    bm_btl_tcp_endpoint_fail(ep, tcp_errno_status(err), what);
}

/* ---- connecting ---------------------------------------------------------------- */

static void tcp_conn_established(struct bm_btl_tcp_conn *c)
{
    c->state = BM_BTL_TCP_CONN_CONNECTED;
    c->peer_fin = false;
    tcp_timer_clear(c);
    bm_log_debug("%s: link %d to rank %d connected (%s -> %s)", c->ep->module->super.name, c->link,
                 c->ep->rank, c->local_str, c->peer_str);
    bm_btl_tcp_ep_lock(c->ep);
    bm_btl_tcp_conn_want_write(c, !bm_util_queue_empty(&c->sendq));
    if (!bm_util_queue_empty(&c->sendq))
        bm_btl_tcp_frag_flush(c);
    bm_btl_tcp_ep_unlock(c->ep);
    bm_btl_tcp_ep_refresh_fast(c->ep);
}

static void tcp_conn_send_hello(struct bm_btl_tcp_conn *c)
{
    struct bm_btl_tcp_endpoint *ep = c->ep;
    struct bm_btl_tcp_peer *p = bm_btl_tcp_module_peer(c->comp, ep->rank);
    struct bm_btl_tcp_hs hs;
    tcp_hs_build(c->comp, &hs, BM_BTL_TCP_HS_HELLO, ep->rank, ep->module->index, c->link,
                 p->hdr->nonce);
    ssize_t n = send(c->fd, &hs, sizeof(hs), MSG_NOSIGNAL);
    if (n != (ssize_t)sizeof(hs)) {
        /* A fresh socket always has room for 32 bytes: anything else is an error. */
        bm_btl_tcp_endpoint_drop_pair(ep, c, n < 0 ? errno : EIO, NULL);
        return;
    }
    c->state = BM_BTL_TCP_CONN_HS_SENT;
    c->hs_len = 0;
    tcp_timer_set(c,
                  bm_btl_tcp_now_ns() + (long long)c->comp->cfg.handshake_timeout_ms * 1000000LL);
    tcp_conn_epoll(c, EPOLLIN);
}

void bm_btl_tcp_conn_start(struct bm_btl_tcp_endpoint *ep, struct bm_btl_tcp_conn *c)
{
    const struct bm_btl_tcp_config *cfg = &c->comp->cfg;
    if ((ep->failed && !ep->probing) || c->state != BM_BTL_TCP_CONN_IDLE)
        return;
    if (ep->ncands == 0) {
        char what[1024];
        snprintf(what, sizeof(what),
                 "rank %d has no address that %s can reach (no matching interface pair)", ep->rank,
                 ep->module->iface.name);
        bm_btl_tcp_endpoint_fail(ep, BM_ERR_UNREACHABLE, what);
        return;
    }
    struct bm_btl_tcp_candidate *k = &ep->cands[ep->cand];
    c->local_str[0] = '\0';
    snprintf(c->peer_str, sizeof(c->peer_str), "%s", k->str);
    int fd = socket(k->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        bm_btl_tcp_endpoint_drop_pair(ep, c, errno, NULL);
        return;
    }
    c->fd = fd;
    tcp_set_sockopts(c->comp, fd, ep->module->iface.loopback);
    const struct bm_btl_tcp_ifaddr *la = bm_btl_tcp_module_addr(ep->module, k->family);
    if (la)
        bm_btl_tcp_addr_str(la->family, la->addr, 0, c->local_str, sizeof(c->local_str));
    if (k->bind_local && la) {
        struct sockaddr_storage ss;
        memset(&ss, 0, sizeof(ss));
        socklen_t slen;
        if (la->family == AF_INET) {
            struct sockaddr_in *s = (struct sockaddr_in *)&ss;
            s->sin_family = AF_INET;
            memcpy(&s->sin_addr, la->addr, 4);
            slen = sizeof(*s);
        } else {
            struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;
            s->sin6_family = AF_INET6;
            memcpy(&s->sin6_addr, la->addr, 16);
            slen = sizeof(*s);
        }
        if (bind(fd, (struct sockaddr *)&ss, slen) != 0) {
            bm_btl_tcp_endpoint_drop_pair(ep, c, errno, NULL);
            return;
        }
    }
    tcp_timer_set(c, bm_btl_tcp_now_ns() + (long long)cfg->connect_timeout_ms * 1000000LL);
    if (connect(fd, (struct sockaddr *)&k->sa, k->salen) == 0) {
        tcp_conn_send_hello(c);
        return;
    }
    if (errno != EINPROGRESS) {
        bm_btl_tcp_endpoint_drop_pair(ep, c, errno, NULL);
        return;
    }
    c->state = BM_BTL_TCP_CONN_CONNECTING;
    tcp_conn_epoll(c, EPOLLOUT);
}

/* Read the rest of a handshake message. 1: complete, 0: need more, -1: error (errno, 0 = EOF). */
static int tcp_conn_read_hs(struct bm_btl_tcp_conn *c)
{
    while (c->hs_len < sizeof(c->hs)) {
        ssize_t n = recv(c->fd, c->hs + c->hs_len, sizeof(c->hs) - c->hs_len, 0);
        if (n > 0) {
            c->hs_len += (size_t)n;
            continue;
        }
        if (n == 0) {
            errno = 0;
            return -1;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        return -1;
    }
    return 1;
}

static void tcp_conn_on_reply(struct bm_btl_tcp_conn *c)
{
    struct bm_btl_tcp_endpoint *ep = c->ep;
    int r = tcp_conn_read_hs(c);
    if (r == 0)
        return;
    if (r < 0) {
        bm_btl_tcp_endpoint_drop_pair(
            ep, c, errno ? errno : ECONNRESET,
            errno ? NULL : "the peer closed the connection during the handshake");
        return;
    }
    const struct bm_btl_tcp_hs *hs = (const struct bm_btl_tcp_hs *)c->hs;
    const char *bad = tcp_hs_check(c->comp, hs);
    if (!bad && (int)ntohl((uint32_t)hs->src_rank) != ep->rank)
        bad = "answered by another rank than the one dialled";
    if (bad) {
        char why[256];
        snprintf(why, sizeof(why), "handshake reply rejected: %s", bad);
        bm_btl_tcp_endpoint_drop_pair(ep, c, EPROTO, why);
        return;
    }
    switch (ntohs(hs->kind)) {
    case BM_BTL_TCP_HS_ACCEPT:
        if (ep->failed)
            bm_btl_tcp_endpoint_recover(ep, c);
        tcp_conn_established(c);
        break;
    case BM_BTL_TCP_HS_REJECT:
        if (ep->probing) {
            bm_btl_tcp_endpoint_probe_failed(ep, c, "the peer still uses its old connection");
            break;
        }
        /* We lost a simultaneous connect: the peer's own connection for this
         * link is on its way and will be accepted by us. */
        bm_btl_tcp_conn_close_fd(c);
        c->state = BM_BTL_TCP_CONN_WAIT_PEER;
        tcp_timer_set(c, bm_btl_tcp_now_ns() +
                             (long long)c->comp->cfg.handshake_timeout_ms * 1000000LL);
        break;
    default:
        bm_btl_tcp_endpoint_drop_pair(ep, c, EPROTO, "unexpected handshake message");
        break;
    }
}

/* ---- accepting ----------------------------------------------------------------- */

void bm_btl_tcp_conn_accept(struct bm_btl_tcp_listener *l)
{
    struct bm_btl_tcp_component *comp = l->module->comp;
    for (;;) {
        struct sockaddr_storage ss;
        socklen_t slen = sizeof(ss);
        int fd = accept4(l->fd, (struct sockaddr *)&ss, &slen, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                bm_log_ratelimited(BM_LOG_WARN, "accept on %s: %s", l->module->super.name,
                                   strerror(errno));
            return;
        }
        struct bm_btl_tcp_conn *c = calloc(1, sizeof(*c));
        if (!c) {
            close(fd);
            return;
        }
        bm_btl_tcp_conn_init(c, comp, NULL, -1);
        c->fd = fd;
        c->state = BM_BTL_TCP_CONN_ACCEPTING;
        c->accept_module = l->module;
        tcp_sockaddr_str(&ss, c->peer_str, sizeof(c->peer_str));
        bm_btl_tcp_addr_str(l->addr.family, l->addr.addr, l->port, c->local_str,
                            sizeof(c->local_str));
        tcp_set_sockopts(comp, fd, l->module->iface.loopback);
        tcp_conn_epoll(c, EPOLLIN);
        bm_util_list_push_back(&comp->anon, &c->qnode_anon);
        c->hs_until_ns =
            bm_btl_tcp_now_ns() + (long long)comp->cfg.handshake_timeout_ms * 1000000LL;
        tcp_timer_set(c, c->hs_until_ns);
    }
}

static void tcp_anon_free(struct bm_btl_tcp_conn *c)
{
    bm_util_list_remove(&c->qnode_anon);
    tcp_timer_clear(c);
    free(c);
}

static void tcp_anon_reply(struct bm_btl_tcp_conn *c, int kind, int rank, int module, int link)
{
    struct bm_btl_tcp_peer *p = bm_btl_tcp_module_peer(c->comp, rank);
    struct bm_btl_tcp_hs hs;
    tcp_hs_build(c->comp, &hs, kind, rank, module, link, p->hdr->nonce);
    if (send(c->fd, &hs, sizeof(hs), MSG_NOSIGNAL) != (ssize_t)sizeof(hs))
        bm_log_debug("handshake reply to %s: %s", c->peer_str, strerror(errno));
}

/* The local module a connection from (rank, its module) belongs to: the one
 * paired with that remote module, or the one that accepted it. */
static struct bm_btl_tcp_module *tcp_accept_module(struct bm_btl_tcp_conn *c, int rank,
                                                   int src_module)
{
    struct bm_btl_tcp_component *comp = c->comp;
    struct bm_btl_tcp_peer *p = bm_btl_tcp_module_peer(comp, rank);
    for (int i = 0; p && p->pair_remote && i < comp->nmodules; i++) {
        int j = p->pair_remote[i];
        if (j >= 0 && ntohs(p->addrs[j].module) == src_module)
            return comp->modules[i];
    }
    return c->accept_module;
}

/* Whether a rejected stray connection from peer_str ("addr:port") gets its
 * warning line now: one per source address per BM_BTL_TCP_STRAY_PERIOD_NS.
 * A port scan or a misconfigured job hammering our ports must not flood the
 * job's output. *suppressed_out: rejections from that source since its last
 * line, to be said in this one. */
static bool tcp_stray_warn(struct bm_btl_tcp_component *comp, const char *peer_str,
                           unsigned *suppressed_out)
{
    char host[64];
    snprintf(host, sizeof(host), "%s", peer_str);
    char *colon = strrchr(host, ':');
    if (colon)
        *colon = '\0';
    long long now = bm_btl_tcp_now_ns();
    struct bm_btl_tcp_stray *e = NULL, *oldest = NULL;
    for (int i = 0; i < BM_BTL_TCP_STRAY_SOURCES && !e; i++) {
        struct bm_btl_tcp_stray *s = &comp->stray[i];
        if (s->host[0] && strcmp(s->host, host) == 0)
            e = s;
        else if (!oldest || (oldest->host[0] && (!s->host[0] || s->last_ns < oldest->last_ns)))
            oldest = s; /* an unused entry, else the least recently reported */
    }
    if (e && now - e->last_ns < BM_BTL_TCP_STRAY_PERIOD_NS) {
        e->suppressed++;
        return false;
    }
    if (!e) {
        e = oldest;
        if (e->host[0] && e->suppressed)
            bm_log_warn("%u more stray connection(s) from %s were rejected and not shown one by "
                        "one",
                        e->suppressed, e->host);
        snprintf(e->host, sizeof(e->host), "%s", host);
        e->suppressed = 0;
    }
    *suppressed_out = e->suppressed;
    e->suppressed = 0;
    e->last_ns = now;
    return true;
}

void bm_btl_tcp_stray_summary(struct bm_btl_tcp_component *comp)
{
    for (int i = 0; i < BM_BTL_TCP_STRAY_SOURCES; i++) {
        struct bm_btl_tcp_stray *s = &comp->stray[i];
        if (s->host[0] && s->suppressed)
            bm_log_warn("%u more stray connection(s) from %s were rejected and not shown one by "
                        "one (one warning per source per minute)",
                        s->suppressed, s->host);
        s->suppressed = 0;
    }
}

static void tcp_anon_on_hello(struct bm_btl_tcp_conn *c)
{
    struct bm_btl_tcp_component *comp = c->comp;
    int r = tcp_conn_read_hs(c);
    if (r == 0)
        return;
    if (r < 0) {
        /* Also what a lost simultaneous connect looks like from here. */
        bm_log_debug("connection from %s on %s closed before its handshake (%s)", c->peer_str,
                     c->accept_module->super.name, errno ? strerror(errno) : "EOF");
        close(c->fd);
        tcp_anon_free(c);
        return;
    }
    const struct bm_btl_tcp_hs *hs = (const struct bm_btl_tcp_hs *)c->hs;
    const char *bad = tcp_hs_check(comp, hs);
    if (!bad && ntohs(hs->kind) != BM_BTL_TCP_HS_HELLO)
        bad = "first message is not a HELLO";
    int rank = (int)ntohl((uint32_t)hs->src_rank);
    struct bm_btl_tcp_peer *p = bad ? NULL : bm_btl_tcp_module_peer(comp, rank);
    if (!bad && !p) {
        /* The runtime cannot give this peer's record now (its launcher is
         * in MPI_Finalize's fence, rte.h): the HELLO waits and is looked at
         * again every millisecond, within the handshake timeout. */
        long long now = bm_btl_tcp_now_ns();
        if (now < c->hs_until_ns) {
            tcp_timer_set(c, now + 1000000LL < c->hs_until_ns ? now + 1000000LL : c->hs_until_ns);
            return;
        }
        bad = "the launcher could not give the sender's tcp address record within "
              "BM_BTL_TCP_HANDSHAKE_TIMEOUT (busy with MPI_Finalize's fence)";
    }
    if (!bad && (!p || !p->have_tcp))
        bad = "the claimed sender rank published no tcp address";
    unsigned more;
    if (bad && tcp_stray_warn(comp, c->peer_str, &more))
        bm_log_warn("rejected a connection from %s to %s (%s): %s. The connection was closed; "
                    "the job is not affected (%u more from this address since its last warning; "
                    "at most one warning per address per minute)",
                    c->peer_str, c->local_str, c->accept_module->super.name, bad, more);
    if (bad) {
        close(c->fd);
        tcp_anon_free(c);
        return;
    }
    int src_module = ntohs(hs->src_module), link = ntohs(hs->link);
    struct bm_btl_tcp_module *m = tcp_accept_module(c, rank, src_module);
    struct bm_btl_tcp_endpoint *ep = bm_btl_tcp_endpoint_get(m, rank);
    /* A failed endpoint takes a new connection when it could heal (the
     * peer reconnects): that is its recovery. */
    bool accept = ep && (!ep->failed || ep->retry);
    struct bm_btl_tcp_conn *l = accept ? &ep->links[link] : NULL;
    if (accept) {
        switch (l->state) {
        case BM_BTL_TCP_CONN_CONNECTING:
        case BM_BTL_TCP_CONN_HS_SENT:
            /* Simultaneous connect: the lower rank's connection wins. */
            if (comp->rank < rank) {
                accept = false;
            } else {
                bm_btl_tcp_conn_close_fd(l);
                l->state = BM_BTL_TCP_CONN_IDLE;
                if (ep->probing)
                    ep->probing = false; /* the peer's attempt does the job */
            }
            break;
        case BM_BTL_TCP_CONN_CONNECTED:
            accept = false; /* a duplicate */
            break;
        default:
            break;
        }
    }
    tcp_anon_reply(c, accept ? BM_BTL_TCP_HS_ACCEPT : BM_BTL_TCP_HS_REJECT, rank, m->index, link);
    if (!accept) {
        bm_log_debug("rank %d link %d: refused its connection from %s (simultaneous connect or "
                     "duplicate)",
                     rank, link, c->peer_str);
        close(c->fd);
        tcp_anon_free(c);
        return;
    }
    /* The link takes over the socket. */
    l->fd = c->fd;
    l->events = 0;
    snprintf(l->peer_str, sizeof(l->peer_str), "%s", c->peer_str);
    snprintf(l->local_str, sizeof(l->local_str), "%s", c->local_str);
    if (epoll_ctl(comp->epfd, EPOLL_CTL_DEL, l->fd, NULL) != 0)
        bm_log_debug("epoll_ctl DEL: %s", strerror(errno));
    tcp_anon_free(c);
    if (ep->failed)
        bm_btl_tcp_endpoint_recover(ep, l);
    tcp_conn_established(l);
}

/* ---- events and timers ------------------------------------------------------- */

void bm_btl_tcp_conn_event(struct bm_btl_tcp_conn *c, uint32_t events)
{
    switch (c->state) {
    case BM_BTL_TCP_CONN_CONNECTING: {
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
            err = errno;
        if (err) {
            bm_btl_tcp_endpoint_drop_pair(c->ep, c, err, NULL);
            return;
        }
        /* A stale event of a socket this link has since replaced: the new
         * one is not connected yet. */
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        if (getpeername(c->fd, (struct sockaddr *)&ss, &sl) != 0)
            return;
        if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
            tcp_conn_send_hello(c);
        return;
    }
    case BM_BTL_TCP_CONN_HS_SENT:
        tcp_conn_on_reply(c);
        return;
    case BM_BTL_TCP_CONN_ACCEPTING:
        tcp_anon_on_hello(c);
        return;
    case BM_BTL_TCP_CONN_CONNECTED:
    case BM_BTL_TCP_CONN_CLOSED:
        if (c->fd < 0)
            return;
        if ((events & (EPOLLIN | EPOLLERR | EPOLLHUP)) && !bm_btl_tcp_conn_recv(c))
            return;
        if ((events & EPOLLOUT) && c->fd >= 0) {
            bm_btl_tcp_ep_lock(c->ep);
            bm_btl_tcp_frag_flush(c);
            bm_btl_tcp_ep_unlock(c->ep);
        }
        return;
    default:
        return;
    }
}

/* Is there something to read (or a connect result) on this socket that
 * this process has not looked at yet? A deadline only means the peer or the
 * network was slow when we ourselves kept polling. */
static bool tcp_conn_pending_input(struct bm_btl_tcp_conn *c)
{
    struct pollfd pfd = {.fd = c->fd, .events = POLLIN | POLLOUT};
    if (poll(&pfd, 1, 0) <= 0)
        return false;
    if (c->state == BM_BTL_TCP_CONN_CONNECTING)
        return (pfd.revents & (POLLOUT | POLLERR | POLLHUP)) != 0;
    return (pfd.revents & (POLLIN | POLLERR | POLLHUP)) != 0;
}

void bm_btl_tcp_conn_timers(struct bm_btl_tcp_component *comp, long long now)
{
    struct bm_util_list_node *it, *tmp;
    bm_util_list_foreach_safe(it, tmp, &comp->timers)
    {
        struct bm_btl_tcp_conn *c = bm_util_container_of(it, struct bm_btl_tcp_conn, timer_node);
        if (c->deadline_ns == 0 || c->deadline_ns > now)
            continue;
        if (c->fd >= 0 && c->state != BM_BTL_TCP_CONN_WAIT_PEER && tcp_conn_pending_input(c)) {
            /* Handle it as the event it is; the list may change: next time. */
            bm_btl_tcp_conn_event(c, EPOLLIN | EPOLLOUT);
            return;
        }
        char why[160];
        if (c->state == BM_BTL_TCP_CONN_CONNECTING)
            snprintf(why, sizeof(why), "no answer within BM_BTL_TCP_CONNECT_TIMEOUT=%d ms",
                     comp->cfg.connect_timeout_ms);
        else
            snprintf(why, sizeof(why),
                     "connected, but no handshake answer within BM_BTL_TCP_HANDSHAKE_TIMEOUT=%d ms",
                     comp->cfg.handshake_timeout_ms);
        switch (c->state) {
        case BM_BTL_TCP_CONN_CONNECTING:
        case BM_BTL_TCP_CONN_HS_SENT:
            bm_btl_tcp_endpoint_drop_pair(c->ep, c, ETIMEDOUT, why);
            return; /* the list may have changed under us: start over next time */
        case BM_BTL_TCP_CONN_ACCEPTING: {
            if (c->hs_len == sizeof(c->hs)) {
                /* A HELLO waiting for its sender's record (tcp_anon_on_hello). */
                tcp_anon_on_hello(c);
                return; /* the list may have changed under us */
            }
            unsigned more;
            if (tcp_stray_warn(comp, c->peer_str, &more))
                bm_log_warn("connection from %s to %s (%s) sent no handshake within %d ms; "
                            "closed. The job is not affected (%u more stray connections from "
                            "this address since its last warning; at most one warning per "
                            "address per minute)",
                            c->peer_str, c->local_str, c->accept_module->super.name,
                            comp->cfg.handshake_timeout_ms, more);
            close(c->fd);
            tcp_anon_free(c);
            break;
        }
        case BM_BTL_TCP_CONN_WAIT_PEER: {
            char what[1024];
            snprintf(what, sizeof(what),
                     "rank %d refused our connection via %s (simultaneous connect) but never "
                     "completed its own within BM_BTL_TCP_HANDSHAKE_TIMEOUT=%d ms",
                     c->ep->rank, c->ep->module->iface.name, comp->cfg.handshake_timeout_ms);
            bm_btl_tcp_endpoint_fail(c->ep, BM_ERR_UNREACHABLE, what);
            return;
        }
        default:
            tcp_timer_clear(c);
            break;
        }
    }
}

void bm_btl_tcp_conn_close_anon(struct bm_btl_tcp_component *comp)
{
    struct bm_util_list_node *n;
    while ((n = bm_util_list_first(&comp->anon)) != NULL) {
        struct bm_btl_tcp_conn *c = bm_util_container_of(n, struct bm_btl_tcp_conn, qnode_anon);
        close(c->fd);
        tcp_anon_free(c);
    }
}

/* ---- the stream parser -------------------------------------------------------- */

static void tcp_conn_owe_ack(struct bm_btl_tcp_conn *c)
{
    struct bm_btl_tcp_component *comp = c->comp;
    if (c->ack_listed)
        return;
    c->ack_listed = true;
    c->ack_next = comp->ack_list;
    comp->ack_list = c;
}

static void tcp_conn_protocol_error(struct bm_btl_tcp_conn *c, const char *why)
{
    char what[1024];
    snprintf(what, sizeof(what),
             "connection to rank %d (%s) via %s carries a corrupt stream (%s); closing it",
             c->ep->rank, c->peer_str, c->ep->module->iface.name, why);
    bm_btl_tcp_endpoint_fail(c->ep, BM_ERR_PROTOCOL, what);
}

/* ---- receive placement (btl.h, "Receive placement") ----------------------------
 * A DATA frame still arriving, whose tag has a place callback, with at least
 * cfg.place_min payload bytes missing: once the layer above's header is in
 * rbuf, ask where the payload goes. Taken, the bytes of it already in rbuf
 * are copied there and the rest is read by readv straight from the socket
 * (with the rest of rbuf as the last piece, so the next frame's header
 * comes in the same call). The frame is acknowledged, and its receive
 * callback called (PLACED), only when all of it arrived; a placement cut
 * short by a closing socket is reported ABORTED at the end of progress. */

/* What the receive callback of a frame from ep on tag is given. */
static struct bm_btl_recv_desc tcp_conn_desc(struct bm_btl_tcp_endpoint *ep, uint8_t tag,
                                             const struct bm_btl_segment *seg)
{
    return (struct bm_btl_recv_desc){
        .endpoint = (struct bm_btl_endpoint *)ep,
        .peer = ep->rank,
        .tag = tag,
        .seg_count = 1,
        .seg = seg,
    };
}

static void tcp_conn_place_copy(struct bm_btl_tcp_conn *c, const char *src, size_t n)
{
    while (n > 0) {
        struct iovec *v = &c->piov[c->piov_i];
        size_t take = v->iov_len < n ? v->iov_len : n;
        memcpy(v->iov_base, src, take);
        src += take;
        n -= take;
        v->iov_base = (char *)v->iov_base + take;
        v->iov_len -= take;
        if (v->iov_len == 0)
            c->piov_i++;
    }
}

/* Offer the frame at rpos (header h, payload len, partly in rbuf) to its
 * place callback. True when it was taken (rbuf is then empty). */
static bool tcp_conn_place_start(struct bm_btl_tcp_conn *c, const struct bm_btl_tcp_hdr *h,
                                 uint32_t len)
{
    struct bm_btl_tcp_component *comp = c->comp;
    struct bm_btl_tcp_endpoint *ep = c->ep;
    struct bm_btl_module *m = &ep->module->super;
    size_t have = c->rlen - c->rpos - sizeof(*h);
    if (c->place_declined)
        return false;
    /* Once not taken, the frame is read whole into rbuf (which then grows
     * to hold it: tcp_conn_rbuf_room). */
    c->place_declined = true;
    if (h->type != BM_BTL_TCP_FRAME_DATA || h->tag >= BM_BTL_TAG_MAX || !m->recv_cb[h->tag].place ||
        len - have < comp->cfg.place_min || ntohl(h->seq) != c->rx_count)
        return false;
    size_t hl = m->recv_cb[h->tag].place_hdr_len;
    if (hl > sizeof(c->place_hdr) || hl > len)
        return false;
    if (have < hl) {
        c->place_declined = false; /* the header is not all here yet: next time */
        return false;
    }
    if (!comp->place_iov)
        comp->place_iov = malloc(BM_BTL_IOV_MAX * sizeof(*comp->place_iov));
    if (!c->piov)
        c->piov = malloc((BM_BTL_IOV_MAX + 1) * sizeof(*c->piov));
    if (!comp->place_iov || !c->piov)
        return false;
    struct bm_btl_segment seg = {c->rbuf + c->rpos + sizeof(*h), have};
    struct bm_btl_recv_desc d = tcp_conn_desc(ep, h->tag, &seg);
    uint32_t n = m->recv_cb[h->tag].place(m, &d, len, comp->place_iov, BM_BTL_IOV_MAX,
                                          m->recv_cb[h->tag].cbdata);
    if (n == 0 || c->fd < 0)
        return false;
    size_t total = 0;
    for (uint32_t i = 0; i < n && i < BM_BTL_IOV_MAX; i++) {
        c->piov[i].iov_base = (void *)(uintptr_t)comp->place_iov[i].addr;
        c->piov[i].iov_len = comp->place_iov[i].len;
        total += comp->place_iov[i].len;
    }
    if (n > BM_BTL_IOV_MAX || total != len - hl) {
        bm_log_error("%s: the place callback of tag %u named %zu bytes in %u pieces for a "
                     "%zu-byte payload (a bug of the layer above)",
                     m->name, h->tag, total, n, (size_t)len - hl);
        abort();
    }
    /* The acknowledgement the header carries counts now: the header is
     * consumed here and never parsed again. */
    bm_btl_tcp_frag_acked(c, ntohl(h->ack));
    c->piov_i = 0;
    c->piov_n = n;
    c->place_tag = h->tag;
    c->place_ack_now = (ntohs(h->flags) & BM_BTL_TCP_HDR_F_ACK_NOW) != 0;
    c->place_hdr_len = hl;
    c->place_len = len;
    memcpy(c->place_hdr, seg.addr, hl);
    tcp_conn_place_copy(c, (const char *)seg.addr + hl, have - hl);
    c->place_left = len - have;
    c->placing = true;
    c->place_declined = false;
    c->rpos = c->rlen = 0;
    return true;
}

/* BM_BTL_TCP_TEST_DROP_FAIL (testing): after a frame dropped on purpose,
 * the path to its sender is reported failed on this side only. */
static void tcp_conn_test_fail(struct bm_btl_tcp_endpoint *ep)
{
    if (ep->module->comp->cfg.test_drop_fail)
        bm_btl_tcp_endpoint_report(ep, BM_BTL_ERROR_PEER, BM_ERR_LINK_DOWN,
                                   "reported failed on this side only after a frame dropped on "
                                   "purpose (BM_BTL_TCP_TEST_DROP_FAIL, for testing)");
}

/* The placed frame is complete: acknowledge it and call its receive
 * callback. false when the connection went away meanwhile. */
static bool tcp_conn_place_done(struct bm_btl_tcp_conn *c)
{
    struct bm_btl_tcp_component *comp = c->comp;
    struct bm_btl_tcp_endpoint *ep = c->ep;
    struct bm_btl_module *m = &ep->module->super;
    c->placing = false;
    c->place_last = true;
    __atomic_store_n(&c->rx_count, c->rx_count + 1, __ATOMIC_RELAXED);
    tcp_conn_owe_ack(c);
    if (c->place_ack_now)
        __atomic_store_n(&c->ack_urgent, true, __ATOMIC_RELAXED);
    comp->completions++;
    comp->placed_frames++;
    struct bm_btl_segment seg = {c->place_hdr, c->place_hdr_len};
    struct bm_btl_recv_desc d = tcp_conn_desc(ep, c->place_tag, &seg);
    d.flags = BM_BTL_RECV_F_PLACED;
    d.placed = c->place_len - c->place_hdr_len;
    if (__builtin_expect(c->place_tag == comp->cfg.test_drop_tag, 0) &&
        ++comp->test_drops == comp->cfg.test_drop_nth) {
        bm_log_info("%s: dropped frame %d of tag %u from rank %d (%zu bytes, placed) on purpose "
                    "(BM_BTL_TCP_TEST_DROP_TAG, for testing)",
                    m->name, comp->test_drops, c->place_tag, ep->rank, c->place_len);
        d.endpoint = NULL;
        d.flags = BM_BTL_RECV_F_ABORTED;
        d.placed = 0;
    }
    m->recv_cb[c->place_tag].cb(m, &d, m->recv_cb[c->place_tag].cbdata);
    if (__builtin_expect(d.flags & BM_BTL_RECV_F_ABORTED, 0))
        tcp_conn_test_fail(ep);
    return c->fd >= 0;
}

/* The socket of c closes: a placement under way is lost. */
static void tcp_conn_place_abort(struct bm_btl_tcp_conn *c)
{
    if (!c->placing)
        return;
    c->placing = false;
    struct bm_btl_tcp_component *comp = c->comp;
    struct bm_btl_tcp_place_abort *a = malloc(sizeof(*a));
    if (!a) {
        /* the request would wait for ever on this fragment */
        bm_log_error("out of memory recording a lost fragment of rank %d", c->ep->rank);
        abort();
    }
    a->module = &c->ep->module->super;
    a->peer = c->ep->rank;
    a->tag = c->place_tag;
    a->hdr_len = c->place_hdr_len;
    memcpy(a->hdr, c->place_hdr, c->place_hdr_len);
    a->next = comp->place_aborts;
    comp->place_aborts = a;
}

void bm_btl_tcp_conn_place_reap(struct bm_btl_tcp_component *comp, bool report)
{
    while (comp->place_aborts) {
        struct bm_btl_tcp_place_abort *a = comp->place_aborts;
        comp->place_aborts = a->next;
        if (report) {
            struct bm_btl_segment seg = {a->hdr, a->hdr_len};
            struct bm_btl_recv_desc d = {
                .peer = a->peer,
                .tag = a->tag,
                .seg_count = 1,
                .seg = &seg,
                .flags = BM_BTL_RECV_F_ABORTED,
            };
            comp->completions++;
            a->module->recv_cb[a->tag].cb(a->module, &d, a->module->recv_cb[a->tag].cbdata);
        }
        free(a);
    }
}

/* Dispatch complete frames. false when the connection went away meanwhile. */
static bool tcp_conn_parse(struct bm_btl_tcp_conn *c)
{
    struct bm_btl_tcp_endpoint *ep = c->ep;
    struct bm_btl_module *m = &ep->module->super;
    while (c->rlen - c->rpos >= sizeof(struct bm_btl_tcp_hdr)) {
        struct bm_btl_tcp_hdr h;
        memcpy(&h, c->rbuf + c->rpos, sizeof(h));
        uint32_t len = ntohl(h.len);
        if (len > BM_BTL_TCP_FRAME_MAX) {
            tcp_conn_protocol_error(c, "frame length out of range");
            return false;
        }
        if (c->rlen - c->rpos < sizeof(h) + len) {
            if (c->comp->cfg.place_min)
                tcp_conn_place_start(c, &h, len);
            return c->fd >= 0;
        }
        c->place_declined = false;
        bm_btl_tcp_frag_acked(c, ntohl(h.ack));
        if (c->fd < 0)
            return false;
        switch (h.type) {
        case BM_BTL_TCP_FRAME_DATA: {
            if (ntohl(h.seq) != c->rx_count) {
                tcp_conn_protocol_error(c, "frame out of sequence");
                return false;
            }
            /* relaxed stores: senders read both (tcp_frag.c, the piggy-backed ACK) */
            __atomic_store_n(&c->rx_count, c->rx_count + 1, __ATOMIC_RELAXED);
            c->place_last = false;
            tcp_conn_owe_ack(c);
            if (ntohs(h.flags) & BM_BTL_TCP_HDR_F_ACK_NOW)
                __atomic_store_n(&c->ack_urgent, true, __ATOMIC_RELAXED);
            struct bm_btl_segment seg = {c->rbuf + c->rpos + sizeof(h), len};
            struct bm_btl_recv_desc d = tcp_conn_desc(ep, h.tag, &seg);
            c->rpos += sizeof(h) + len;
            c->comp->completions++;
            if (__builtin_expect(h.tag == c->comp->cfg.test_drop_tag, 0) && h.tag != 0 &&
                ++c->comp->test_drops == c->comp->cfg.test_drop_nth) {
                bm_log_info("%s: dropped frame %d of tag %u from rank %d (%u bytes) on purpose "
                            "(BM_BTL_TCP_TEST_DROP_TAG, for testing)",
                            m->name, c->comp->test_drops, h.tag, ep->rank, len);
                tcp_conn_test_fail(ep);
                if (c->fd < 0)
                    return false;
                continue;
            }
            if (h.tag < BM_BTL_TAG_MAX && m->recv_cb[h.tag].cb)
                m->recv_cb[h.tag].cb(m, &d, m->recv_cb[h.tag].cbdata);
            else
                bm_log_ratelimited(BM_LOG_ERROR,
                                   "%s: a frame for tag %u from rank %d has no receiver; dropped",
                                   m->name, h.tag, ep->rank);
            if (c->fd < 0)
                return false;
            continue;
        }
        case BM_BTL_TCP_FRAME_ACK:
            break;
        case BM_BTL_TCP_FRAME_FIN:
            c->peer_fin = true;
            break;
        default:
            tcp_conn_protocol_error(c, "unknown frame type");
            return false;
        }
        c->rpos += sizeof(h) + len;
    }
    return true;
}

/* The frame whose header h is at rpos may be placed: its tag takes
 * placement and enough of it is to come. */
static bool tcp_conn_placeable(const struct bm_btl_tcp_conn *c, const struct bm_btl_tcp_hdr *h)
{
    const struct bm_btl_module *m = &c->ep->module->super;
    return c->comp->cfg.place_min && !c->place_declined && h->type == BM_BTL_TCP_FRAME_DATA &&
           h->tag < BM_BTL_TAG_MAX && m->recv_cb[h->tag].place &&
           ntohl(h->len) >= c->comp->cfg.place_min &&
           m->recv_cb[h->tag].place_hdr_len <= sizeof(c->place_hdr);
}

/* Make room for the frame at rpos (or for a header) before reading; *want
 * is then how much to read: up to the layer above's header of a frame to
 * be placed, else the frame at rpos and TCP_READ_AHEAD(_PLACED) more. */
static bool tcp_conn_rbuf_room(struct bm_btl_tcp_conn *c, size_t *want)
{
    if (c->rpos == c->rlen)
        c->rpos = c->rlen = 0;
    size_t need = sizeof(struct bm_btl_tcp_hdr);
    size_t ahead = c->place_last || c->placing ? TCP_READ_AHEAD_PLACED : TCP_READ_AHEAD;
    size_t upto = need + ahead; /* from rpos */
    if (c->rlen - c->rpos >= sizeof(struct bm_btl_tcp_hdr)) {
        struct bm_btl_tcp_hdr h;
        memcpy(&h, c->rbuf + c->rpos, sizeof(h));
        need += ntohl(h.len);
        upto = need + ahead;
        if (tcp_conn_placeable(c, &h)) {
            /* a frame that will be placed needs room only for the header
             * of the layer above (the buffer does not grow for it), and
             * nothing past that header is read into the buffer */
            size_t small = sizeof(h) + c->ep->module->super.recv_cb[h.tag].place_hdr_len;
            if (small < need)
                need = upto = small;
        }
    }
    if (need > c->rcap) {
        size_t ncap = c->rcap ? c->rcap : TCP_RBUF_INITIAL;
        while (ncap < need)
            ncap *= 2;
        char *nb = realloc(c->rbuf, ncap);
        if (!nb)
            return false;
        c->rbuf = nb;
        c->rcap = ncap;
    }
    if (c->rpos > 0 && c->rcap - c->rpos < need + 4096 && c->rlen - c->rpos > TCP_RBUF_MOVE_MAX &&
        c->rcap < TCP_RBUF_STREAM) {
        char *nb = realloc(c->rbuf, TCP_RBUF_STREAM);
        if (!nb)
            return false;
        c->rbuf = nb;
        c->rcap = TCP_RBUF_STREAM;
    }
    if (c->rpos > 0 && c->rcap - c->rpos < need + 4096) {
        memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
        c->rlen -= c->rpos;
        c->rpos = 0;
    }
    size_t have = c->rlen - c->rpos;
    *want = c->rcap - c->rlen;
    if (c->comp->cfg.place_min && upto > have && upto - have < *want)
        *want = upto - have;
    return true;
}

bool bm_btl_tcp_conn_recv(struct bm_btl_tcp_conn *c)
{
    for (;;) {
        size_t want;
        if (!tcp_conn_rbuf_room(c, &want)) {
            tcp_conn_protocol_error(c, "out of memory for a receive buffer");
            return false;
        }
        ssize_t n;
        if (c->placing) {
            /* the placed frame's pieces, then rbuf for what follows it */
            uint32_t k = c->piov_n - c->piov_i;
            bool tail = k < BM_BTL_IOV_MAX;
            size_t mine = c->place_left;
            if (!tail) {
                k = BM_BTL_IOV_MAX;
                mine = 0;
                for (uint32_t i = 0; i < k; i++)
                    mine += c->piov[c->piov_i + i].iov_len;
            } else {
                c->piov[c->piov_n].iov_base = c->rbuf + c->rlen;
                c->piov[c->piov_n].iov_len = want;
            }
            want = tail ? mine + want : mine;
            struct msghdr mh = {.msg_iov = c->piov + c->piov_i, .msg_iovlen = tail ? k + 1 : k};
            n = recvmsg(c->fd, &mh, MSG_DONTWAIT);
            if (n > 0) {
                size_t placed = (size_t)n < mine ? (size_t)n : mine;
                size_t left = placed;
                while (left > 0) {
                    struct iovec *v = &c->piov[c->piov_i];
                    size_t take = v->iov_len < left ? v->iov_len : left;
                    v->iov_base = (char *)v->iov_base + take;
                    v->iov_len -= take;
                    left -= take;
                    if (v->iov_len == 0)
                        c->piov_i++;
                }
                c->place_left -= placed;
                c->rlen += (size_t)n - placed;
                if (c->place_left == 0 && !tcp_conn_place_done(c))
                    return false;
                if (c->rlen > c->rpos && !tcp_conn_parse(c))
                    return false;
                if ((size_t)n < want)
                    return true;
                continue;
            }
        } else {
            n = recv(c->fd, c->rbuf + c->rlen, want, MSG_DONTWAIT);
        }
        if (n > 0) {
            c->comp->hot = c;
            c->rlen += (size_t)n;
            if (!tcp_conn_parse(c))
                return false;
            if ((size_t)n < want)
                return true; /* drained; level-triggered epoll tells us about more */
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return true;
        int err = n == 0 ? 0 : errno;
        if (c->peer_fin) { /* EOF, or a reset because our last bytes went unread */
            struct bm_btl_tcp_endpoint *ep = c->ep;
            bm_btl_tcp_conn_close_fd(c); /* first: senders keep off the queues (MT) */
            size_t pending = 0;
            for (struct bm_util_queue_node *q = c->sendq.head; q; q = q->next)
                pending++;
            for (struct bm_util_queue_node *q = c->ackq.head; q; q = q->next)
                pending++;
            c->state = BM_BTL_TCP_CONN_IDLE; /* a later send reconnects (and fails loudly) */
            if (pending) {
                char what[1024];
                snprintf(what, sizeof(what),
                         "rank %d (%s) finalized while %zu send(s) to it via %s were not "
                         "delivered",
                         ep->rank, c->peer_str, pending, ep->module->iface.name);
                bm_btl_tcp_endpoint_fail(ep, BM_ERR_PEER_GONE, what);
            }
            return false;
        }
        bm_btl_tcp_conn_fail(c, err);
        return false;
    }
}
