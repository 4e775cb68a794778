/* Modules of the tcp transport (one per usable interface) and their peers:
 * creating a module opens its listening sockets; add_procs reads each peer's
 * modex record and pairs local with remote interfaces. Pairing is a
 * maximum-weight bipartite matching (util/graph.h) of local modules with the
 * peer's modules: loopback to the same host's loopback first, then pairs on
 * the same subnet, then pairs the kernel routes through the local interface,
 * each class weighted by the slower side's speed; the lower rank's modules
 * are the rows, so both sides of a pair compute the same matching from the
 * same two records. A module reaches a peer only
 * through its matched pair; the peer's other addresses stay on the
 * endpoint's candidate list as fallbacks when that pair cannot connect. */
#define BM_LOG_SUBSYS "btl/tcp"
#include "btl/tcp/tcp.h"
#include "runtime/rte.h"
#include "util/graph.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define TCP_W_LOOPBACK 4
#define TCP_W_SUBNET   3
#define TCP_W_ROUTED   2

static int tcp_family_of(uint8_t wire)
{
    return wire == 6 ? AF_INET6 : AF_INET;
}

static bm_status_t tcp_module_listen(struct bm_btl_tcp_module *m, const struct bm_btl_tcp_ifaddr *a)
{
    struct bm_btl_tcp_listener *l = &m->listeners[m->nlisteners];
    char astr[64];
    bm_btl_tcp_addr_str(a->family, a->addr, 0, astr, sizeof(astr));
    int fd = socket(a->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        goto err;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    socklen_t slen;
    if (a->family == AF_INET) {
        struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
        sin->sin_family = AF_INET;
        memcpy(&sin->sin_addr, a->addr, 4);
        slen = sizeof(*sin);
    } else {
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
        sin6->sin6_family = AF_INET6;
        memcpy(&sin6->sin6_addr, a->addr, 16);
        slen = sizeof(*sin6);
    }
    if (bind(fd, (struct sockaddr *)&ss, slen) != 0 || listen(fd, 128) != 0)
        goto err_close;
    slen = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &slen) != 0)
        goto err_close;
    l->port = ntohs(a->family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                         : ((struct sockaddr_in6 *)&ss)->sin6_port);
    l->kind = BM_BTL_TCP_POLL_LISTENER;
    l->fd = fd;
    l->module = m;
    l->addr = *a;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = l};
    if (epoll_ctl(m->comp->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
        goto err_close;
    m->nlisteners++;
    bm_log_debug("tcp:%s listening on %s port %u", m->iface.name, astr, l->port);
    return BM_OK;
err_close:
    close(fd);
err:
    bm_log_warn("cannot listen on %s (%s): %s; this address is not used", astr, m->iface.name,
                strerror(errno));
    return BM_ERR_SYSTEM;
}

bm_status_t bm_btl_tcp_module_create(struct bm_btl_tcp_component *comp, int index,
                                     const struct bm_btl_tcp_if *iface,
                                     struct bm_btl_tcp_module **module_out)
{
    const struct bm_btl_tcp_config *cfg = &comp->cfg;
    struct bm_btl_tcp_module *m = calloc(1, sizeof(*m));
    if (!m)
        return BM_ERR_NO_MEMORY;
    m->comp = comp;
    m->index = index;
    m->iface = *iface;
    m->eps = calloc((size_t)comp->size, sizeof(*m->eps));
    if (!m->eps) {
        free(m);
        return BM_ERR_NO_MEMORY;
    }
    for (int i = 0; i < iface->naddrs; i++)
        tcp_module_listen(m, &iface->addrs[i]);
    if (m->nlisteners == 0) {
        free(m->eps);
        free(m);
        return BM_ERR_NOT_AVAILABLE;
    }
    struct bm_btl_module *s = &m->super;
    s->ops = &bm_btl_tcp_ops;
    s->component = &comp->super;
    snprintf(s->name, sizeof(s->name), "tcp:%s", iface->name);
    s->caps = BM_BTL_CAP_SEND | BM_BTL_CAP_SEND_INPLACE | BM_BTL_CAP_STATS | BM_BTL_CAP_SEND_IOV;
    if (cfg->links == 1)
        s->caps |= BM_BTL_CAP_ORDERED; /* one socket per endpoint keeps order */
    if (cfg->reconnect_ms > 0)
        s->caps |= BM_BTL_CAP_FAILOVER; /* reports failure and recovery */
    if (cfg->place_min > 0)
        s->caps |= BM_BTL_CAP_RECV_PLACE; /* tcp_conn.c: payload read into place */
    s->exclusivity = BM_BTL_EXCL_TCP;
    s->latency = iface->loopback ? 40 : 50;
    s->bandwidth = iface->bandwidth;
    s->eager_limit = cfg->eager_limit;
    s->rndv_eager_limit = cfg->eager_limit;
    s->max_send_size = cfg->max_send_size;
    s->put_alignment = 1;
    s->get_alignment = 1;
    *module_out = m;
    return BM_OK;
}

void bm_btl_tcp_module_destroy(struct bm_btl_tcp_module *m)
{
    for (int r = 0; r < m->comp->size; r++)
        if (m->eps[r])
            bm_btl_tcp_endpoint_destroy(m->eps[r], BM_ERR_CANCELED);
    for (int i = 0; i < m->nlisteners; i++)
        close(m->listeners[i].fd); /* close() also leaves the epoll set */
    free(m->eps);
    free(m);
}

/* ---- peers and pairing ------------------------------------------------------ */

const struct bm_btl_tcp_ifaddr *bm_btl_tcp_module_addr(const struct bm_btl_tcp_module *m,
                                                       int family)
{
    for (int i = 0; i < m->iface.naddrs; i++)
        if (m->iface.addrs[i].family == family)
            return &m->iface.addrs[i];
    return NULL;
}

/* How well local module m reaches remote address a (0: not directly). */
static int tcp_module_weight(const struct bm_btl_tcp_module *m, const struct bm_btl_tcp_peer *p,
                             const struct bm_btl_tcp_modex_addr *a)
{
    int family = tcp_family_of(a->family);
    const struct bm_btl_tcp_ifaddr *la = bm_btl_tcp_module_addr(m, family);
    if (!la)
        return 0;
    bool rloop = (ntohs(a->flags) & BM_BTL_TCP_ADDR_F_LOOPBACK) != 0;
    if (rloop || m->iface.loopback)
        return rloop && m->iface.loopback && p->same_host ? TCP_W_LOOPBACK : 0;
    if (bm_btl_tcp_if_in_subnet(family, la->addr, la->prefixlen, a->addr) ||
        bm_btl_tcp_if_in_subnet(family, a->addr, a->prefixlen, la->addr))
        return TCP_W_SUBNET;
    if (bm_btl_tcp_if_route_oif(family, a->addr) == m->iface.ifindex)
        return TCP_W_ROUTED;
    return 0;
}

/* Weight of one module pair in the matching: reachability class first,
 * then the slower side's speed (Mbit/s, capped) as the tie-break. */
static int64_t tcp_pair_weight(int level, uint32_t bw)
{
    if (bw > 999999)
        bw = 999999;
    return (int64_t)level * 1000000 + bw;
}

static void tcp_module_pair(struct bm_btl_tcp_component *c, int rank, struct bm_btl_tcp_peer *p)
{
    int nl = c->nmodules, nr = 0;
    for (int i = 0; i < nl; i++)
        p->pair_remote[i] = -1;
    for (int j = 0; j < p->naddrs; j++)
        if (ntohs(p->addrs[j].module) + 1 > nr)
            nr = ntohs(p->addrs[j].module) + 1;
    if (nl == 0 || nr == 0)
        return;
    /* best[i * nr + k]: the address of remote module k that local module i
     * reaches best, and how well. */
    int *best = malloc((size_t)nl * (size_t)nr * sizeof(int));
    int64_t *w = malloc((size_t)nl * (size_t)nr * sizeof(int64_t));
    int *match = malloc((size_t)(nl > nr ? nl : nr) * sizeof(int));
    if (!best || !w || !match)
        goto out;
    bool low = c->rank < rank; /* the lower rank's modules are the rows */
    for (int i = 0; i < nl; i++) {
        for (int k = 0; k < nr; k++) {
            int64_t bw_best = BM_UTIL_GRAPH_NO_EDGE;
            int arg = -1;
            for (int j = 0; j < p->naddrs; j++) {
                if (ntohs(p->addrs[j].module) != k)
                    continue;
                int level = tcp_module_weight(c->modules[i], p, &p->addrs[j]);
                if (level == 0)
                    continue;
                uint32_t rbw = ntohl(p->addrs[j].bandwidth), lbw = c->modules[i]->iface.bandwidth;
                int64_t v = tcp_pair_weight(level, rbw < lbw ? rbw : lbw);
                if (v > bw_best) {
                    bw_best = v;
                    arg = j;
                }
            }
            best[i * nr + k] = arg;
            if (low)
                w[i * nr + k] = bw_best;
            else
                w[k * nl + i] = bw_best;
        }
    }
    bm_status_t rc = low ? bm_util_graph_match((size_t)nl, (size_t)nr, w, match, NULL)
                         : bm_util_graph_match((size_t)nr, (size_t)nl, w, match, NULL);
    if (rc != BM_OK) {
        bm_log_warn("pairing interfaces with rank %d failed (%s); tcp does not reach it", rank,
                    bm_status_str(rc));
        goto out;
    }
    for (int i = 0; i < nl; i++) {
        int k = -1;
        if (low) {
            k = match[i];
        } else {
            for (int r = 0; r < nr; r++)
                if (match[r] == i)
                    k = r;
        }
        if (k < 0 || best[i * nr + k] < 0)
            continue;
        int j = best[i * nr + k];
        p->pair_remote[i] = j;
        char ls[64], rs[64];
        const struct bm_btl_tcp_ifaddr *la =
            bm_btl_tcp_module_addr(c->modules[i], tcp_family_of(p->addrs[j].family));
        bm_btl_tcp_addr_str(la->family, la->addr, 0, ls, sizeof(ls));
        bm_btl_tcp_addr_str(la->family, p->addrs[j].addr, 0, rs, sizeof(rs));
        bm_log_debug("rank %d: pair %s (%s) <-> %s (%s)", rank, ls, c->modules[i]->iface.name, rs,
                     p->addrs[j].ifname);
    }
out:
    free(best);
    free(w);
    free(match);
}

struct bm_btl_tcp_peer *bm_btl_tcp_module_peer(struct bm_btl_tcp_component *c, int rank)
{
    const struct bm_btl_rte *rte = c->super.rte;
    if (rank < 0 || rank >= c->size)
        return NULL;
    struct bm_btl_tcp_peer *p = &c->peers[rank];
    if (p->loaded)
        return p;
    const void *data;
    size_t len;
    bm_status_t rc = bm_btl_rte_modex_get(rte, rank, "btl.tcp", &data, &len);
    if (rc == BM_ERR_BUSY)
        return NULL; /* not loaded: asked again later */
    p->loaded = true;
    if (rc != BM_OK)
        return p;
    const struct bm_btl_tcp_modex_hdr *h = data;
    if (len < sizeof(*h) || ntohl(h->magic) != BM_BTL_TCP_MODEX_MAGIC ||
        ntohs(h->version) != BM_BTL_TCP_MODEX_VERSION ||
        len != sizeof(*h) + ntohs(h->naddrs) * sizeof(struct bm_btl_tcp_modex_addr)) {
        bm_log_warn("rank %d published a tcp address record this version cannot read (%zu "
                    "bytes); is it running a different bitmover build? Not using tcp to it",
                    rank, len);
        return p;
    }
    p->hdr = h;
    p->addrs = (const struct bm_btl_tcp_modex_addr *)(h + 1);
    p->naddrs = ntohs(h->naddrs);
    const struct bm_btl_tcp_modex_hdr *mine = NULL;
    const void *md;
    size_t mlen;
    if (bm_btl_rte_modex_get(rte, c->rank, "btl.tcp", &md, &mlen) == BM_OK && mlen >= sizeof(*mine))
        mine = md;
    p->same_host = mine && memcmp(mine->host_id, h->host_id, sizeof(h->host_id)) == 0 &&
                   mine->netns_ino == h->netns_ino && h->netns_ino != 0;
    p->pair_remote = calloc((size_t)c->nmodules + 1, sizeof(int));
    if (!p->pair_remote)
        return p;
    p->have_tcp = p->naddrs > 0;
    tcp_module_pair(c, rank, p);
    return p;
}

bm_status_t bm_btl_tcp_add_procs(struct bm_btl_module *bm, int nprocs, const int *ranks,
                                 struct bm_btl_endpoint **endpoints_out,
                                 struct bm_util_bitmap *reachable)
{
    struct bm_btl_tcp_module *m = (struct bm_btl_tcp_module *)bm;
    for (int i = 0; i < nprocs; i++) {
        int r = ranks[i];
        endpoints_out[i] = NULL;
        if (r == m->comp->rank)
            continue; /* self reaches itself */
        struct bm_btl_tcp_peer *p = bm_btl_tcp_module_peer(m->comp, r);
        if (!p || !p->have_tcp || p->pair_remote[m->index] < 0)
            continue;
        struct bm_btl_tcp_endpoint *ep = bm_btl_tcp_endpoint_get(m, r);
        if (!ep)
            return BM_ERR_NO_MEMORY;
        ep->announced = true;
        endpoints_out[i] = (struct bm_btl_endpoint *)ep;
        bm_util_bitmap_set(reachable, (size_t)i);
    }
    return BM_OK;
}

bm_status_t bm_btl_tcp_del_procs(struct bm_btl_module *bm, int nprocs, const int *ranks,
                                 struct bm_btl_endpoint **endpoints)
{
    struct bm_btl_tcp_module *m = (struct bm_btl_tcp_module *)bm;
    (void)endpoints;
    for (int i = 0; i < nprocs; i++) {
        int r = ranks[i];
        if (r < 0 || r >= m->comp->size || !m->eps[r])
            continue;
        bm_btl_tcp_endpoint_shutdown(m->eps[r]);
        bm_btl_tcp_endpoint_destroy(m->eps[r], BM_ERR_CANCELED);
    }
    return BM_OK;
}
