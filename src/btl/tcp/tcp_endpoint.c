/* Endpoints and connections of the tcp transport: the lazy non-blocking
 * connect on first send, the handshake that proves both sides belong to the
 * same job (SipHash of the peer's published nonce), accepting connections
 * from the listening sockets (rejecting and logging strangers), the
 * deterministic resolution of simultaneous connects (the lower rank's
 * connection wins), dropping an interface pair that cannot connect in favour
 * of the peer's next address, and failing an endpoint: the error callback
 * first, then every outstanding fragment completes with an error status. */
#define BM_LOG_SUBSYS "btl/tcp"
#include "btl/tcp/tcp.h"
#include "util/log.h"

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
#include <unistd.h>

/* ---- SipHash-2-4 (Aumasson and Bernstein), the handshake proof ---------------- */

static uint64_t tcp_rotl(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

#define TCP_SIPROUND                                                                               \
    do {                                                                                           \
        v0 += v1;                                                                                  \
        v1 = tcp_rotl(v1, 13);                                                                     \
        v1 ^= v0;                                                                                  \
        v0 = tcp_rotl(v0, 32);                                                                     \
        v2 += v3;                                                                                  \
        v3 = tcp_rotl(v3, 16);                                                                     \
        v3 ^= v2;                                                                                  \
        v0 += v3;                                                                                  \
        v3 = tcp_rotl(v3, 21);                                                                     \
        v3 ^= v0;                                                                                  \
        v2 += v1;                                                                                  \
        v1 = tcp_rotl(v1, 17);                                                                     \
        v1 ^= v2;                                                                                  \
        v2 = tcp_rotl(v2, 32);                                                                     \
    } while (0)

static uint64_t tcp_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint64_t tcp_siphash(const uint8_t key[16], const uint8_t *msg, size_t len)
{
    uint64_t k0 = tcp_le64(key), k1 = tcp_le64(key + 8);
    uint64_t v0 = 0x736f6d6570736575ull ^ k0, v1 = 0x646f72616e646f6dull ^ k1;
    uint64_t v2 = 0x6c7967656e657261ull ^ k0, v3 = 0x7465646279746573ull ^ k1;
    size_t full = len & ~(size_t)7;
    for (size_t i = 0; i < full; i += 8) {
        uint64_t m = tcp_le64(msg + i);
        v3 ^= m;
        TCP_SIPROUND;
        TCP_SIPROUND;
        v0 ^= m;
    }
    uint64_t b = (uint64_t)len << 56;
    for (size_t i = 0; i < (len & 7); i++)
        b |= (uint64_t)msg[full + i] << (8 * i);
    v3 ^= b;
    TCP_SIPROUND;
    TCP_SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    TCP_SIPROUND;
    TCP_SIPROUND;
    TCP_SIPROUND;
    TCP_SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

#define TCP_HS_SIGNED offsetof(struct bm_btl_tcp_hs, proof)

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
    hs->proof = htobe64(tcp_siphash(dst_nonce, (const uint8_t *)hs, TCP_HS_SIGNED));
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
    if (be64toh(hs->proof) != tcp_siphash(c->nonce, (const uint8_t *)hs, TCP_HS_SIGNED))
        return "wrong job secret (a process of another job, or a stranger)";
    return NULL;
}

/* ---- sockets ------------------------------------------------------------------ */

static void tcp_set_sockopts(const struct bm_btl_tcp_component *comp, int fd)
{
    const struct bm_btl_tcp_config *cfg = &comp->cfg;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
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

void bm_btl_tcp_conn_close_fd(struct bm_btl_tcp_conn *c)
{
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

/* ---- endpoints ------------------------------------------------------------------ */

static void tcp_conn_init(struct bm_btl_tcp_conn *c, struct bm_btl_tcp_component *comp,
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

static void tcp_cand_add(struct bm_btl_tcp_endpoint *ep, const struct bm_btl_tcp_modex_addr *a,
                         bool bind_local)
{
    int family = a->family == 6 ? AF_INET6 : AF_INET;
    struct bm_btl_tcp_candidate *k = &ep->cands[ep->ncands];
    memset(k, 0, sizeof(*k));
    k->family = family;
    k->bind_local = bind_local;
    k->remote_module = ntohs(a->module);
    uint16_t port = ntohs(a->port);
    if (family == AF_INET) {
        struct sockaddr_in *s = (struct sockaddr_in *)&k->sa;
        s->sin_family = AF_INET;
        s->sin_port = htons(port);
        memcpy(&s->sin_addr, a->addr, 4);
        k->salen = sizeof(*s);
    } else {
        struct sockaddr_in6 *s = (struct sockaddr_in6 *)&k->sa;
        s->sin6_family = AF_INET6;
        s->sin6_port = htons(port);
        memcpy(&s->sin6_addr, a->addr, 16);
        k->salen = sizeof(*s);
    }
    bm_btl_tcp_addr_str(family, a->addr, port, k->str, sizeof(k->str));
    snprintf(k->ifname, sizeof(k->ifname), "%.15s", a->ifname);
    for (int i = 0; i < ep->ncands; i++)
        if (strcmp(ep->cands[i].str, k->str) == 0)
            return; /* already listed */
    ep->ncands++;
}

/* Best first: the matched pair, then the peer's other addresses this
 * interface reaches directly (bound to it), then any other address of a
 * family we have (the kernel picks the route). The loopback module only
 * ever talks to the same host's loopback. */
static void tcp_endpoint_candidates(struct bm_btl_tcp_endpoint *ep, const struct bm_btl_tcp_peer *p)
{
    const struct bm_btl_tcp_module *m = ep->module;
    int paired = p->pair_remote ? p->pair_remote[m->index] : -1;
    if (paired >= 0)
        tcp_cand_add(ep, &p->addrs[paired], true);
    for (int pass = 0; pass < 2; pass++) {
        for (int j = 0; j < p->naddrs; j++) {
            const struct bm_btl_tcp_modex_addr *a = &p->addrs[j];
            if (j == paired)
                continue;
            int family = a->family == 6 ? AF_INET6 : AF_INET;
            const struct bm_btl_tcp_ifaddr *la = bm_btl_tcp_module_addr(m, family);
            if (!la)
                continue;
            bool rloop = (ntohs(a->flags) & BM_BTL_TCP_ADDR_F_LOOPBACK) != 0;
            if (rloop != m->iface.loopback || (rloop && !p->same_host))
                continue;
            bool direct = bm_btl_tcp_if_in_subnet(family, la->addr, la->prefixlen, a->addr);
            if ((pass == 0) == direct)
                tcp_cand_add(ep, a, direct);
        }
    }
}

struct bm_btl_tcp_endpoint *bm_btl_tcp_endpoint_get(struct bm_btl_tcp_module *m, int rank)
{
    struct bm_btl_tcp_component *c = m->comp;
    if (m->eps[rank])
        return m->eps[rank];
    struct bm_btl_tcp_peer *p = bm_btl_tcp_module_peer(c, rank);
    struct bm_btl_tcp_endpoint *ep = calloc(1, sizeof(*ep));
    if (!ep)
        return NULL;
    ep->module = m;
    ep->rank = rank;
    ep->nlinks = c->cfg.links;
    ep->links = calloc((size_t)ep->nlinks, sizeof(*ep->links));
    ep->cands = calloc((size_t)(p ? p->naddrs : 0) + 1, sizeof(*ep->cands));
    if (!ep->links || !ep->cands)
        goto err_free;
    for (int i = 0; i < ep->nlinks; i++) {
        tcp_conn_init(&ep->links[i], c, ep, i);
        ep->links[i].ctl = bm_btl_tcp_frag_new_ctl();
        if (!ep->links[i].ctl)
            goto err_free;
        ep->links[i].ctl->ep = ep;
    }
    if (p && p->have_tcp)
        tcp_endpoint_candidates(ep, p);
    m->eps[rank] = ep;
    return ep;
err_free:
    if (ep->links)
        for (int i = 0; i < ep->nlinks; i++)
            free(ep->links[i].ctl);
    free(ep->links);
    free(ep->cands);
    free(ep);
    return NULL;
}

void bm_btl_tcp_endpoint_destroy(struct bm_btl_tcp_endpoint *ep, int status)
{
    struct bm_btl_tcp_component *comp = ep->module->comp;
    if (ep->retry)
        comp->nretry--;
    for (int i = 0; i < ep->nlinks; i++) {
        struct bm_btl_tcp_conn *c = &ep->links[i];
        bm_btl_tcp_conn_close_fd(c);
        bm_btl_tcp_frag_fail_all(c, status);
    }
    /* Connections may still sit on the ack and dead lists: unlink them. */
    for (struct bm_btl_tcp_conn **pp = &comp->ack_list; *pp;) {
        if ((*pp)->ep == ep)
            *pp = (*pp)->ack_next;
        else
            pp = &(*pp)->ack_next;
    }
    for (struct bm_btl_tcp_conn **pp = &comp->dead_list; *pp;) {
        if ((*pp)->ep == ep)
            *pp = (*pp)->dead_next;
        else
            pp = &(*pp)->dead_next;
    }
    for (int i = 0; i < ep->nlinks; i++) {
        free(ep->links[i].rbuf);
        free(ep->links[i].ctl);
    }
    ep->module->eps[ep->rank] = NULL;
    free(ep->links);
    free(ep->cands);
    free(ep);
}

/* Tell the PML (the module's error callback) about this endpoint; only for
 * endpoints it knows (add_procs announced them). */
static void tcp_endpoint_report(struct bm_btl_tcp_endpoint *ep, enum bm_btl_error_kind kind,
                                int status, const char *what)
{
    struct bm_btl_module *m = &ep->module->super;
    if (!ep->announced || !m->error_cb)
        return;
    struct bm_btl_error err = {
        .kind = kind,
        .endpoint = (struct bm_btl_endpoint *)ep,
        .peer = ep->rank,
        .status = status,
        .what = what,
    };
    m->error_cb(m, &err, m->error_cbdata);
}

void bm_btl_tcp_endpoint_fail(struct bm_btl_tcp_endpoint *ep, int status, const char *what)
{
    if (ep->failed)
        return;
    ep->failed = true;
    ep->fail_status = status;
    bm_log_warn("%s", what);
    for (int i = 0; i < ep->nlinks; i++) {
        struct bm_btl_tcp_conn *c = &ep->links[i];
        bm_btl_tcp_conn_close_fd(c);
        c->state = BM_BTL_TCP_CONN_CLOSED;
    }
    tcp_endpoint_report(ep, BM_BTL_ERROR_PEER, status, what);
    for (int i = 0; i < ep->nlinks; i++)
        bm_btl_tcp_frag_fail_all(&ep->links[i], status);
    /* A link can heal; a peer that finalized or spoke garbage does not. */
    struct bm_btl_tcp_component *comp = ep->module->comp;
    if (comp->cfg.reconnect_ms > 0 && ep->announced && !comp->finalizing &&
        status != BM_ERR_PEER_GONE && status != BM_ERR_PROTOCOL && !ep->retry) {
        ep->retry = true;
        ep->retry_at = bm_btl_tcp_now_ns() + (long long)comp->cfg.reconnect_ms * 1000000LL;
        comp->nretry++;
    }
}

/* Back to work after a failure: fresh per-connection state on every link
 * (the peer starts afresh too: it accepts only while its own endpoint is
 * failed), then tell the PML that the path works again. */
static void tcp_endpoint_recover(struct bm_btl_tcp_endpoint *ep, struct bm_btl_tcp_conn *via)
{
    struct bm_btl_tcp_component *comp = ep->module->comp;
    for (int i = 0; i < ep->nlinks; i++) {
        struct bm_btl_tcp_conn *c = &ep->links[i];
        if (c != via) {
            bm_btl_tcp_conn_close_fd(c);
            c->state = BM_BTL_TCP_CONN_IDLE;
        }
        c->tx_seq = c->rx_count = c->ack_sent = 0;
        c->ack_urgent = false;
        c->ack_age = 0;
        c->rlen = c->rpos = 0;
        c->peer_fin = false;
    }
    ep->failed = false;
    ep->fail_status = BM_OK;
    ep->probing = false;
    if (ep->retry) {
        ep->retry = false;
        comp->nretry--;
    }
    char what[512];
    snprintf(what, sizeof(what), "connection to rank %d (%s) via %s works again", ep->rank,
             via->peer_str, ep->module->iface.name);
    bm_log_warn("%s", what);
    tcp_endpoint_report(ep, BM_BTL_ERROR_RECOVERED, BM_OK, what);
}

/* A reconnection attempt failed: quietly, try again later. */
static void tcp_endpoint_probe_failed(struct bm_btl_tcp_endpoint *ep, struct bm_btl_tcp_conn *c,
                                      const char *why)
{
    bm_btl_tcp_conn_close_fd(c);
    c->state = BM_BTL_TCP_CONN_CLOSED;
    ep->probing = false;
    const struct bm_btl_tcp_config *cfg = &ep->module->comp->cfg;
    ep->retry_at = bm_btl_tcp_now_ns() + (long long)cfg->reconnect_ms * 1000000LL;
    bm_log_debug("rank %d via %s: reconnection failed (%s); next try in %d ms", ep->rank,
                 ep->module->iface.name, why, cfg->reconnect_ms);
}

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
                 "timed out: no acknowledgement within BM_BTL_TCP_USER_TIMEOUT=%d ms or "
                 "BM_BTL_TCP_KEEPALIVE_* probes (link down, black-holed, or host dead)",
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

/* ---- connecting ------------------------------------------------------------------ */

static void tcp_conn_established(struct bm_btl_tcp_conn *c)
{
    c->state = BM_BTL_TCP_CONN_CONNECTED;
    c->peer_fin = false;
    tcp_timer_clear(c);
    bm_log_debug("%s: link %d to rank %d connected (%s -> %s)", c->ep->module->super.name, c->link,
                 c->ep->rank, c->local_str, c->peer_str);
    bm_btl_tcp_conn_want_write(c, !bm_util_queue_empty(&c->sendq));
    if (!bm_util_queue_empty(&c->sendq))
        bm_btl_tcp_frag_flush(c);
}

static void tcp_conn_start(struct bm_btl_tcp_endpoint *ep, struct bm_btl_tcp_conn *c);

/* The current interface pair could not connect: say so, naming both
 * addresses, and move this endpoint to the peer's next address. */
static void tcp_endpoint_drop_pair(struct bm_btl_tcp_endpoint *ep, struct bm_btl_tcp_conn *c,
                                   int err, const char *why)
{
    struct bm_btl_tcp_candidate *k = &ep->cands[ep->cand];
    char reason[200];
    if (why)
        snprintf(reason, sizeof(reason), "%s", why);
    else
        snprintf(reason, sizeof(reason), "%s", strerror(err));
    bm_btl_tcp_conn_close_fd(c);
    c->state = BM_BTL_TCP_CONN_IDLE;
    if (ep->probing) {
        if (ep->cand + 1 < ep->ncands) {
            ep->cand++;
            tcp_conn_start(ep, c);
        } else {
            tcp_endpoint_probe_failed(ep, c, reason);
        }
        return;
    }
    if (ep->cand + 1 < ep->ncands) {
        bm_log_warn("rank %d: interface pair %s (%s) -> %s (%s) cannot connect: %s; dropping "
                    "this pair for rank %d and trying %s (%s)",
                    c->comp->rank, c->local_str[0] ? c->local_str : "?", ep->module->iface.name,
                    k->str, k->ifname, reason, ep->rank, ep->cands[ep->cand + 1].str,
                    ep->cands[ep->cand + 1].ifname);
        ep->cand++;
        /* Every link of this endpoint that was using the dropped pair restarts. */
        for (int i = 0; i < ep->nlinks; i++) {
            struct bm_btl_tcp_conn *o = &ep->links[i];
            if (o != c &&
                (o->state == BM_BTL_TCP_CONN_CONNECTING || o->state == BM_BTL_TCP_CONN_HS_SENT)) {
                bm_btl_tcp_conn_close_fd(o);
                o->state = BM_BTL_TCP_CONN_IDLE;
                tcp_conn_start(ep, o);
            }
        }
        tcp_conn_start(ep, c);
        return;
    }
    char what[1024];
    snprintf(what, sizeof(what),
             "cannot connect to rank %d via %s: the last address tried, %s (%s), failed: %s. "
             "Tried %d address(es) of rank %d; check that the hosts can reach each other on "
             "these networks (firewall, routes) or choose interfaces with "
             "BM_BTL_TCP_IF_INCLUDE",
             ep->rank, ep->module->iface.name, k->str, k->ifname, reason, ep->ncands, ep->rank);
    bm_btl_tcp_endpoint_fail(ep, err == ECONNREFUSED ? BM_ERR_CONN_REFUSED : BM_ERR_UNREACHABLE,
                             what);
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
        tcp_endpoint_drop_pair(ep, c, n < 0 ? errno : EIO, NULL);
        return;
    }
    c->state = BM_BTL_TCP_CONN_HS_SENT;
    c->hs_len = 0;
    tcp_timer_set(c,
                  bm_btl_tcp_now_ns() + (long long)c->comp->cfg.handshake_timeout_ms * 1000000LL);
    tcp_conn_epoll(c, EPOLLIN);
}

static void tcp_conn_start(struct bm_btl_tcp_endpoint *ep, struct bm_btl_tcp_conn *c)
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
        tcp_endpoint_drop_pair(ep, c, errno, NULL);
        return;
    }
    c->fd = fd;
    tcp_set_sockopts(c->comp, fd);
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
            tcp_endpoint_drop_pair(ep, c, errno, NULL);
            return;
        }
    }
    tcp_timer_set(c, bm_btl_tcp_now_ns() + (long long)cfg->connect_timeout_ms * 1000000LL);
    if (connect(fd, (struct sockaddr *)&k->sa, k->salen) == 0) {
        tcp_conn_send_hello(c);
        return;
    }
    if (errno != EINPROGRESS) {
        tcp_endpoint_drop_pair(ep, c, errno, NULL);
        return;
    }
    c->state = BM_BTL_TCP_CONN_CONNECTING;
    tcp_conn_epoll(c, EPOLLOUT);
}

void bm_btl_tcp_endpoint_connect(struct bm_btl_tcp_endpoint *ep, struct bm_btl_tcp_conn *c)
{
    tcp_conn_start(ep, c);
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
        tcp_endpoint_drop_pair(ep, c, errno ? errno : ECONNRESET,
                               errno ? NULL
                                     : "the peer closed the connection during the handshake");
        return;
    }
    const struct bm_btl_tcp_hs *hs = (const struct bm_btl_tcp_hs *)c->hs;
    const char *bad = tcp_hs_check(c->comp, hs);
    if (!bad && (int)ntohl((uint32_t)hs->src_rank) != ep->rank)
        bad = "answered by another rank than the one dialled";
    if (bad) {
        char why[256];
        snprintf(why, sizeof(why), "handshake reply rejected: %s", bad);
        tcp_endpoint_drop_pair(ep, c, EPROTO, why);
        return;
    }
    switch (ntohs(hs->kind)) {
    case BM_BTL_TCP_HS_ACCEPT:
        if (ep->failed)
            tcp_endpoint_recover(ep, c);
        tcp_conn_established(c);
        break;
    case BM_BTL_TCP_HS_REJECT:
        if (ep->probing) {
            tcp_endpoint_probe_failed(ep, c, "the peer still uses its old connection");
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
        tcp_endpoint_drop_pair(ep, c, EPROTO, "unexpected handshake message");
        break;
    }
}

/* ---- accepting ------------------------------------------------------------------- */

void bm_btl_tcp_endpoint_accept(struct bm_btl_tcp_listener *l)
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
        tcp_conn_init(c, comp, NULL, -1);
        c->fd = fd;
        c->state = BM_BTL_TCP_CONN_ACCEPTING;
        c->accept_module = l->module;
        tcp_sockaddr_str(&ss, c->peer_str, sizeof(c->peer_str));
        bm_btl_tcp_addr_str(l->addr.family, l->addr.addr, l->port, c->local_str,
                            sizeof(c->local_str));
        tcp_set_sockopts(comp, fd);
        tcp_conn_epoll(c, EPOLLIN);
        bm_util_list_push_back(&comp->anon, &c->qnode_anon);
        tcp_timer_set(c,
                      bm_btl_tcp_now_ns() + (long long)comp->cfg.handshake_timeout_ms * 1000000LL);
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
    if (!bad && (!p || !p->have_tcp))
        bad = "the claimed sender rank published no tcp address";
    if (bad) {
        bm_log_warn("rejected a connection from %s to %s (%s): %s. The connection was closed; "
                    "the job is not affected",
                    c->peer_str, c->local_str, c->accept_module->super.name, bad);
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
        tcp_endpoint_recover(ep, l);
    tcp_conn_established(l);
}

/* ---- events and timers --------------------------------------------------------------- */

void bm_btl_tcp_conn_event(struct bm_btl_tcp_conn *c, uint32_t events)
{
    switch (c->state) {
    case BM_BTL_TCP_CONN_CONNECTING: {
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
            err = errno;
        if (err) {
            tcp_endpoint_drop_pair(c->ep, c, err, NULL);
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
        if ((events & (EPOLLIN | EPOLLERR | EPOLLHUP)) && !bm_btl_tcp_frag_recv(c))
            return;
        if ((events & EPOLLOUT) && c->fd >= 0)
            bm_btl_tcp_frag_flush(c);
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

void bm_btl_tcp_endpoint_timers(struct bm_btl_tcp_component *comp, long long now)
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
            tcp_endpoint_drop_pair(c->ep, c, ETIMEDOUT, why);
            return; /* the list may have changed under us: start over next time */
        case BM_BTL_TCP_CONN_ACCEPTING:
            bm_log_warn("connection from %s to %s (%s) sent no handshake within %d ms; closed. "
                        "The job is not affected",
                        c->peer_str, c->local_str, c->accept_module->super.name,
                        comp->cfg.handshake_timeout_ms);
            close(c->fd);
            tcp_anon_free(c);
            break;
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

void bm_btl_tcp_endpoint_shutdown(struct bm_btl_tcp_endpoint *ep)
{
    for (int i = 0; i < ep->nlinks; i++) {
        struct bm_btl_tcp_conn *c = &ep->links[i];
        if (c->state == BM_BTL_TCP_CONN_CONNECTED && c->fd >= 0) {
            bm_btl_tcp_frag_queue_fin(c);
            bm_btl_tcp_frag_flush(c);
            if (c->fd >= 0)
                shutdown(c->fd, SHUT_WR);
        }
        bm_btl_tcp_conn_close_fd(c);
        c->state = BM_BTL_TCP_CONN_CLOSED;
    }
}

void bm_btl_tcp_endpoint_reap(struct bm_btl_tcp_component *comp)
{
    while (comp->dead_list) {
        struct bm_btl_tcp_conn *c = comp->dead_list;
        comp->dead_list = c->dead_next;
        c->dead = false;
        if (c->ep && !c->ep->failed)
            bm_btl_tcp_conn_fail(c, c->err);
    }
}

void bm_btl_tcp_endpoint_close_anon(struct bm_btl_tcp_component *comp)
{
    struct bm_util_list_node *n;
    while ((n = bm_util_list_first(&comp->anon)) != NULL) {
        struct bm_btl_tcp_conn *c = bm_util_container_of(n, struct bm_btl_tcp_conn, qnode_anon);
        close(c->fd);
        tcp_anon_free(c);
    }
}

void bm_btl_tcp_endpoint_retry(struct bm_btl_tcp_component *comp, long long now)
{
    for (int i = 0; i < comp->nmodules; i++) {
        struct bm_btl_tcp_module *m = comp->modules[i];
        for (int r = 0; r < comp->size; r++) {
            struct bm_btl_tcp_endpoint *ep = m->eps[r];
            if (!ep || !ep->retry || ep->probing || ep->retry_at > now || ep->ncands == 0)
                continue;
            struct bm_btl_tcp_conn *c = &ep->links[0];
            bm_btl_tcp_conn_close_fd(c);
            c->state = BM_BTL_TCP_CONN_IDLE;
            ep->probing = true;
            ep->cand = 0;
            bm_log_debug("rank %d via %s: trying to reconnect", ep->rank, m->iface.name);
            tcp_conn_start(ep, c);
        }
    }
}
