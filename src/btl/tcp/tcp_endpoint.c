/* Endpoints of the tcp transport: one per reachable peer per module,
 * holding the peer's candidate addresses (best first) and its links (one
 * connection each, tcp_conn.c). Here: creating and destroying an endpoint,
 * dropping an interface pair that cannot connect in favour of the peer's next
 * address, failing an endpoint (the error callback first, then every
 * outstanding fragment completes with an error status), taking it back when
 * a reconnection succeeds, and saying goodbye at finalize. */
#define BM_LOG_SUBSYS "btl/tcp"
#include "btl/tcp/tcp.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

/* ---- endpoints ------------------------------------------------------------------ */

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
    ep->mt = c->mt;
    if (ep->mt) {
        static struct bm_util_lock_class ep_class = {.name = "tcp endpoint"};
        bm_util_lock_init(&ep->lock, &ep_class, false);
    }
    ep->nlinks = c->cfg.links;
    ep->links = calloc((size_t)ep->nlinks, sizeof(*ep->links));
    ep->cands = calloc((size_t)(p ? p->naddrs : 0) + 1, sizeof(*ep->cands));
    if (!ep->links || !ep->cands)
        goto err_free;
    for (int i = 0; i < ep->nlinks; i++) {
        bm_btl_tcp_conn_init(&ep->links[i], c, ep, i);
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
    if (ep->mt)
        bm_util_lock_destroy(&ep->lock);
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
    if (ep->connect_pending)
        comp->nconnect--;
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
    /* (No sender pushes now: every link is closed, the endpoint not fast.) */
    struct bm_btl_tcp_conn *dead = atomic_exchange(&comp->dead_list, NULL), *keep = NULL;
    while (dead) {
        struct bm_btl_tcp_conn *next = dead->dead_next;
        if (dead->ep != ep) {
            dead->dead_next = keep;
            keep = dead;
        }
        dead = next;
    }
    while (keep) { /* back in their order */
        struct bm_btl_tcp_conn *next = keep->dead_next;
        keep->dead_next = atomic_load_explicit(&comp->dead_list, memory_order_relaxed);
        atomic_store_explicit(&comp->dead_list, keep, memory_order_relaxed);
        keep = next;
    }
    for (int i = 0; i < ep->nlinks; i++) {
        free(ep->links[i].rbuf);
        free(ep->links[i].piov);
        free(ep->links[i].ctl);
    }
    ep->module->eps[ep->rank] = NULL;
    bm_btl_tcp_frag_pool_release_ep(ep);
    if (ep->mt)
        bm_util_lock_destroy(&ep->lock);
    free(ep->links);
    free(ep->cands);
    free(ep);
}

/* Tell the PML (the module's error callback) about this endpoint; only for
 * endpoints it knows (add_procs announced them). */
void bm_btl_tcp_endpoint_report(struct bm_btl_tcp_endpoint *ep, enum bm_btl_error_kind kind,
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
    bm_btl_tcp_ep_unfast(ep);
    ep->failed = true;
    ep->fail_status = status;
    bm_log_warn("%s", what);
    for (int i = 0; i < ep->nlinks; i++) {
        struct bm_btl_tcp_conn *c = &ep->links[i];
        bm_btl_tcp_conn_close_fd(c);
        c->state = BM_BTL_TCP_CONN_CLOSED;
    }
    bm_btl_tcp_endpoint_report(ep, BM_BTL_ERROR_PEER, status, what);
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
void bm_btl_tcp_endpoint_recover(struct bm_btl_tcp_endpoint *ep, struct bm_btl_tcp_conn *via)
{
    struct bm_btl_tcp_component *comp = ep->module->comp;
    for (int i = 0; i < ep->nlinks; i++) {
        struct bm_btl_tcp_conn *c = &ep->links[i];
        if (c != via) {
            bm_btl_tcp_conn_close_fd(c);
            c->state = BM_BTL_TCP_CONN_IDLE;
        }
        c->tx_seq = c->ack_sent = 0;
        __atomic_store_n(&c->rx_count, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&c->ack_urgent, false, __ATOMIC_RELAXED);
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
    bm_btl_tcp_endpoint_report(ep, BM_BTL_ERROR_RECOVERED, BM_OK, what);
}

/* A reconnection attempt failed: quietly, try again later. */
void bm_btl_tcp_endpoint_probe_failed(struct bm_btl_tcp_endpoint *ep, struct bm_btl_tcp_conn *c,
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

/* ---- connecting ------------------------------------------------------------------ */

/* The current interface pair could not connect: say so, naming both
 * addresses, and move this endpoint to the peer's next address. */
void bm_btl_tcp_endpoint_drop_pair(struct bm_btl_tcp_endpoint *ep, struct bm_btl_tcp_conn *c,
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
            bm_btl_tcp_conn_start(ep, c);
        } else {
            bm_btl_tcp_endpoint_probe_failed(ep, c, reason);
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
                bm_btl_tcp_conn_start(ep, o);
            }
        }
        bm_btl_tcp_conn_start(ep, c);
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

void bm_btl_tcp_endpoint_connect(struct bm_btl_tcp_endpoint *ep, struct bm_btl_tcp_conn *c)
{
    bm_btl_tcp_conn_start(ep, c);
}

/* ---- finalize, failure reports, reconnection ------------------------------------ */

void bm_btl_tcp_endpoint_shutdown(struct bm_btl_tcp_endpoint *ep)
{
    for (int i = 0; i < ep->nlinks; i++) {
        struct bm_btl_tcp_conn *c = &ep->links[i];
        if (c->state == BM_BTL_TCP_CONN_CONNECTED && c->fd >= 0) {
            bm_btl_tcp_ep_lock(ep);
            bm_btl_tcp_frag_queue_fin(c);
            bm_btl_tcp_frag_flush(c);
            bm_btl_tcp_ep_unlock(ep);
            if (c->fd >= 0)
                shutdown(c->fd, SHUT_WR);
        }
        bm_btl_tcp_conn_close_fd(c);
        c->state = BM_BTL_TCP_CONN_CLOSED;
    }
}

void bm_btl_tcp_endpoint_reap(struct bm_btl_tcp_component *comp)
{
    /* Senders push with a release CAS; take them all (newest first, as before). */
    struct bm_btl_tcp_conn *c =
        atomic_exchange_explicit(&comp->dead_list, NULL, memory_order_acquire);
    while (c) {
        struct bm_btl_tcp_conn *next = c->dead_next;
        if (c->ep)
            bm_btl_tcp_ep_unfast(c->ep);
        __atomic_store_n(&c->dead, false, __ATOMIC_RELAXED);
        if (c->ep && !c->ep->failed)
            bm_btl_tcp_conn_fail(c, c->err);
        c = next;
    }
}

void bm_btl_tcp_ep_refresh_fast(struct bm_btl_tcp_endpoint *ep)
{
    if (!ep->mt)
        return;
    bool fast = !ep->failed;
    for (int i = 0; i < ep->nlinks && fast; i++) {
        const struct bm_btl_tcp_conn *c = &ep->links[i];
        fast = c->state == BM_BTL_TCP_CONN_CONNECTED && c->fd >= 0 &&
               !__atomic_load_n(&c->dead, __ATOMIC_RELAXED);
    }
    bm_util_lock_take(&ep->lock);
    ep->fast = fast;
    bm_util_lock_give(&ep->lock);
}

void bm_btl_tcp_endpoint_connect_pending(struct bm_btl_tcp_component *comp)
{
    for (int i = 0; i < comp->nmodules && comp->nconnect > 0; i++) {
        struct bm_btl_tcp_module *m = comp->modules[i];
        for (int r = 0; r < comp->size && comp->nconnect > 0; r++) {
            struct bm_btl_tcp_endpoint *ep = m->eps[r];
            if (!ep || !ep->connect_pending)
                continue;
            ep->connect_pending = false;
            comp->nconnect--;
            for (int k = 0; k < ep->nlinks && !ep->failed; k++)
                if (ep->links[k].state == BM_BTL_TCP_CONN_IDLE)
                    bm_btl_tcp_endpoint_connect(ep, &ep->links[k]);
        }
    }
    comp->nconnect = 0;
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
            bm_btl_tcp_conn_start(ep, c);
        }
    }
}
