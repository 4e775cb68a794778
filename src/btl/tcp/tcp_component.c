/* The tcp transport component: its parameters (BM_BTL_TCP_*), start-up
 * (find interfaces, open one module per interface, publish the addresses and
 * a random per-process nonce in the modex under "btl.tcp"), the epoll-driven
 * progress loop shared by every module, and finalize (let outstanding sends
 * be acknowledged, say goodbye to every peer, release everything). The one
 * const ops table of the transport is at the end. */
#define BM_LOG_SUBSYS "btl/tcp"
#include "btl/tcp/tcp.h"
#include "runtime/rte.h"
#include "util/log.h"
#include "util/params.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define TCP_CFG(f) offsetof(struct bm_btl_tcp_config, f)

/* The one-connection fast path calls epoll_wait every this many passes. */
#define TCP_HOT_EPOLL_EVERY 8

static const struct bm_param tcp_params[] = {
    {"BM_BTL_TCP_IF_INCLUDE", BM_PARAM_STRING, "", 0, 0, NULL,
     "Use only these interfaces: a comma list of names (eth0) and CIDR networks (10.1.0.0/16, "
     "fd00::/8). Naming a loopback interface here uses it even when sm is selected. Exclusive "
     "with BM_BTL_TCP_IF_EXCLUDE.",
     TCP_CFG(if_include), 0},
    {"BM_BTL_TCP_IF_EXCLUDE", BM_PARAM_STRING, "", 0, 0, NULL,
     "Never use these interfaces (names or CIDR networks, comma-separated). Exclusive with "
     "BM_BTL_TCP_IF_INCLUDE.",
     TCP_CFG(if_exclude), 0},
    {"BM_BTL_TCP_LINKS", BM_PARAM_INT, "1", 1, 16, NULL,
     "TCP connections per peer per interface. More than one spreads large transfers over "
     "several sockets (and drops the in-order guarantee of the module).",
     TCP_CFG(links), 0},
    {"BM_BTL_TCP_SNDBUF", BM_PARAM_SIZE, "0", 0, 1LL << 30, NULL,
     "Socket send buffer size (SO_SNDBUF). 0 keeps the kernel's automatic tuning, which is "
     "usually best.",
     TCP_CFG(sndbuf), 0},
    {"BM_BTL_TCP_RCVBUF", BM_PARAM_SIZE, "0", 0, 1LL << 30, NULL,
     "Socket receive buffer size (SO_RCVBUF). 0 keeps the kernel's automatic tuning.",
     TCP_CFG(rcvbuf), 0},
    {"BM_BTL_TCP_CONGESTION", BM_PARAM_STRING, "auto", 0, 0, NULL,
     "TCP congestion control of the transport's connections (TCP_CONGESTION). auto: reno on "
     "loopback links, where nothing is congested (the kernel's default, often bbr, paces and "
     "costs about twice the CPU per byte there), the kernel's default elsewhere; default: the "
     "kernel's default everywhere; a name (cubic, bbr, reno): that algorithm on every link "
     "(unprivileged processes may set only those in net.ipv4.tcp_allowed_congestion_control).",
     TCP_CFG(congestion), 0},
    {"BM_BTL_TCP_EAGER_LIMIT", BM_PARAM_SIZE, "64k", 1024, 16LL << 20, NULL,
     "Largest message sent eagerly (PML header included); larger ones use the rendezvous "
     "protocol.",
     TCP_CFG(eager_limit), 0},
    {"BM_BTL_TCP_MAX_SEND_SIZE", BM_PARAM_SIZE, "1m", 4096, 32LL << 20, NULL,
     "Largest fragment of a large message. Bigger fragments mean fewer system calls; every "
     "connection keeps a receive buffer of this size.",
     TCP_CFG(max_send_size), 0},
    {"BM_BTL_TCP_RECV_PLACE", BM_PARAM_SIZE, "16k", 0, 1LL << 30, NULL,
     "Receive placement: a fragment of which at least this many bytes are still to arrive is "
     "read straight into the receive buffer (the matched receive's memory, or the blocks of a "
     "non-contiguous type) instead of through the connection's buffer and a copy. 0 turns it "
     "off.",
     TCP_CFG(place_min), 0},
    {"BM_BTL_TCP_CONNECT_TIMEOUT", BM_PARAM_INT, "5000", 100, 600000, NULL,
     "Milliseconds a TCP connect on one interface pair may take before the pair is dropped for "
     "that peer (with a warning naming both addresses) and the peer's next address is tried.",
     TCP_CFG(connect_timeout_ms), 0},
    {"BM_BTL_TCP_HANDSHAKE_TIMEOUT", BM_PARAM_INT, "60000", 100, 3600000, NULL,
     "Milliseconds the peer process may take to answer our handshake once TCP is connected "
     "(it answers from its progress loop, so a busy peer is slow). Also how long a stray "
     "connection that sends nothing is kept open.",
     TCP_CFG(handshake_timeout_ms), 0},
    {"BM_BTL_TCP_FAIL_MS", BM_PARAM_INT, "10000", 0, 3600000, NULL,
     "Milliseconds a connection with data outstanding may make no progress (the peer's kernel "
     "acknowledges no new byte and sends none) before it is declared dead. A lossy link that "
     "still acknowledges is alive however slow; a stalled connection whose local interface is "
     "down fails at once. 0 leaves it to the kernel (BM_BTL_TCP_USER_TIMEOUT).",
     TCP_CFG(fail_ms), 0},
    {"BM_BTL_TCP_USER_TIMEOUT", BM_PARAM_INT, "0", 0, 3600000, NULL,
     "The kernel's own limit (TCP_USER_TIMEOUT) on how long the oldest unacknowledged "
     "segment may wait; 0 keeps the kernel default (~15 min). A short value kills lossy "
     "links whose retransmissions back off (BM_BTL_TCP_FAIL_MS detects failures by "
     "progress instead); only a backstop.",
     TCP_CFG(user_timeout_ms), 0},
    {"BM_BTL_TCP_KEEPALIVE_IDLE", BM_PARAM_INT, "5", 0, 86400, NULL,
     "Seconds of silence before TCP keepalive probes start, so that a reader notices a dead "
     "link or host. 0 disables keepalive.",
     TCP_CFG(keepalive_idle_s), 0},
    {"BM_BTL_TCP_KEEPALIVE_INTVL", BM_PARAM_INT, "1", 1, 3600, NULL,
     "Seconds between unanswered keepalive probes.", TCP_CFG(keepalive_intvl_s), 0},
    {"BM_BTL_TCP_KEEPALIVE_CNT", BM_PARAM_INT, "5", 1, 100, NULL,
     "Unanswered keepalive probes before the connection is declared dead.", TCP_CFG(keepalive_cnt),
     0},
    {"BM_BTL_TCP_RECONNECT_INTERVAL", BM_PARAM_INT, "2000", 0, 3600000, NULL,
     "Milliseconds between attempts to reconnect a failed path to a peer (a link that went "
     "down and came back); when one succeeds the path is reported recovered and used again. "
     "0 never retries.",
     TCP_CFG(reconnect_ms), 0},
    {"BM_BTL_TCP_FINALIZE_DRAIN", BM_PARAM_INT, "10000", 0, 600000, NULL,
     "Milliseconds finalize waits for outstanding sends to be acknowledged before closing.",
     TCP_CFG(finalize_drain_ms), 0},
    {"BM_BTL_TCP_TEST_DROP_TAG", BM_PARAM_INT, "0", 0, BM_BTL_TAG_MAX - 1, NULL,
     "For testing only: the receiver silently drops one frame of this transport tag (the "
     "BM_BTL_TCP_TEST_DROP_NTH-th it receives), after acknowledging it, so that the sender "
     "sees a successful send: a transport losing data without an error, to exercise the "
     "PML's end-to-end restart (BM_PML_RESTART_MS). PML tags are 1 + the header type "
     "(pml_proto.h: 5 FRAG, 4 ACK, 3 RNDV). 0: off.",
     TCP_CFG(test_drop_tag), BM_PARAM_F_DEBUG},
    {"BM_BTL_TCP_TEST_DROP_NTH", BM_PARAM_INT, "1", 1, 1 << 30, NULL,
     "For testing only: which frame of BM_BTL_TCP_TEST_DROP_TAG is dropped (1: the first).",
     TCP_CFG(test_drop_nth), BM_PARAM_F_DEBUG},
    {"BM_BTL_TCP_TEST_DROP_FAIL", BM_PARAM_INT, "0", 0, 1, NULL,
     "For testing only: 1 also reports the path to the sender of the dropped frame failed, on "
     "the receiver's side only (the connection stays, the sender's tcp sees nothing): a path "
     "that failed on one side and lost what it was receiving, which the PML must restart at "
     "once instead of after BM_PML_RESTART_MS.",
     TCP_CFG(test_drop_fail), BM_PARAM_F_DEBUG},
};
static const struct bm_param_table tcp_param_table = {"btl/tcp", tcp_params,
                                                      BM_PARAM_COUNT(tcp_params)};
BM_PARAM_TABLE_REGISTER(tcp_param_table);

long long bm_btl_tcp_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static bm_status_t bm_btl_tcp_query(char *why, size_t whylen)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(why, whylen, "cannot create a TCP socket: %s", strerror(errno));
        return BM_ERR_NOT_AVAILABLE;
    }
    close(fd);
    return BM_OK;
}

/* Is the sm transport in use (then same-host peers never need loopback)? */
static bool tcp_sm_selected(void)
{
    bool built = false;
    for (int i = 0; i < bm_btl_registry_count; i++)
        built |= strcmp(bm_btl_registry[i]->name, "sm") == 0;
    if (!built)
        return false;
    const char *sel = getenv("BM_BTL");
    if (!sel || !*sel)
        return true;
    bool exclude = sel[0] == '^';
    bool named = false;
    for (const char *p = sel + exclude; *p;) {
        size_t len = strcspn(p, ",");
        named |= len == 2 && strncmp(p, "sm", 2) == 0;
        p += len;
        if (*p == ',')
            p++;
    }
    return exclude ? !named : named;
}

static bm_status_t tcp_publish(struct bm_btl_tcp_component *c)
{
    size_t naddrs = 0;
    for (int i = 0; i < c->nmodules; i++)
        naddrs += (size_t)c->modules[i]->nlisteners;
    size_t len =
        sizeof(struct bm_btl_tcp_modex_hdr) + naddrs * sizeof(struct bm_btl_tcp_modex_addr);
    struct bm_btl_tcp_modex_hdr *h = calloc(1, len);
    if (!h)
        return BM_ERR_NO_MEMORY;
    h->magic = htonl(BM_BTL_TCP_MODEX_MAGIC);
    h->version = htons(BM_BTL_TCP_MODEX_VERSION);
    h->naddrs = htons((uint16_t)naddrs);
    memcpy(h->nonce, c->nonce, sizeof(h->nonce));
    bm_btl_tcp_if_host_id(h->host_id, &h->netns_ino);
    struct bm_btl_tcp_modex_addr *a = (struct bm_btl_tcp_modex_addr *)(h + 1);
    for (int i = 0; i < c->nmodules; i++) {
        struct bm_btl_tcp_module *m = c->modules[i];
        for (int k = 0; k < m->nlisteners; k++, a++) {
            const struct bm_btl_tcp_listener *l = &m->listeners[k];
            a->family = l->addr.family == AF_INET6 ? 6 : 4;
            a->prefixlen = l->addr.prefixlen;
            a->port = htons(l->port);
            a->module = htons((uint16_t)m->index);
            a->flags = htons(m->iface.loopback ? BM_BTL_TCP_ADDR_F_LOOPBACK : 0);
            a->bandwidth = htonl(m->iface.bandwidth);
            memcpy(a->addr, l->addr.addr, sizeof(a->addr));
            snprintf(a->ifname, sizeof(a->ifname), "%.15s", m->iface.name);
        }
    }
    bm_status_t rc = bm_btl_rte_modex_put(c->super.rte, "btl.tcp", h, len);
    free(h);
    return rc;
}

static void bm_btl_tcp_finalize(struct bm_btl_component *comp);

static bm_status_t bm_btl_tcp_init(const struct bm_btl_init_args *args,
                                   struct bm_btl_component **component_out)
{
    struct bm_btl_tcp_component *c = calloc(1, sizeof(*c));
    if (!c)
        return BM_ERR_NO_MEMORY;
    c->super.ops = &bm_btl_tcp_ops;
    c->super.rte = args->rte;
    c->epfd = -1;
    c->mt = args->thread_level >= BM_BTL_THREAD_MULTIPLE;
    if (c->mt) {
        static struct bm_util_lock_class comp_class = {.name = "tcp component"};
        bm_util_lock_init(&c->lock, &comp_class, true);
    }
    bm_util_list_init(&c->timers);
    bm_util_list_init(&c->anon);
    bm_status_t rc = bm_util_params_load(&tcp_param_table, &c->cfg);
    if (rc != BM_OK) {
        free(c);
        return rc;
    }
    bm_btl_tcp_live_setup(c);
    const struct bm_rte_proc *self = bm_btl_rte_self(args->rte);
    c->rank = self->rank;
    c->size = self->size;
    if (getrandom(c->nonce, sizeof(c->nonce), 0) != (ssize_t)sizeof(c->nonce)) {
        bm_log_error("getrandom failed: %s; cannot create the job secret for tcp handshakes",
                     strerror(errno));
        free(c);
        return BM_ERR_SYSTEM;
    }
    c->epfd = epoll_create1(EPOLL_CLOEXEC);
    c->peers = calloc((size_t)c->size, sizeof(*c->peers));
    if (c->epfd < 0 || !c->peers) {
        rc = c->epfd < 0 ? BM_ERR_SYSTEM : BM_ERR_NO_MEMORY;
        goto err;
    }
    struct bm_btl_tcp_if *ifs = NULL;
    int nifs = 0;
    rc = bm_btl_tcp_if_discover(&c->cfg, !tcp_sm_selected(), &ifs, &nifs);
    if (rc != BM_OK)
        goto err;
    c->modules = calloc((size_t)nifs + 1, sizeof(*c->modules));
    if (!c->modules) {
        free(ifs);
        rc = BM_ERR_NO_MEMORY;
        goto err;
    }
    for (int i = 0; i < nifs; i++) {
        struct bm_btl_tcp_module *m;
        if (bm_btl_tcp_module_create(c, c->nmodules, &ifs[i], &m) == BM_OK)
            c->modules[c->nmodules++] = m;
    }
    free(ifs);
    if (c->nmodules == 0) {
        bm_log_info("no usable network interface (check BM_BTL_TCP_IF_INCLUDE/_EXCLUDE); tcp "
                    "reaches no peer from this process");
    } else {
        rc = tcp_publish(c);
        if (rc != BM_OK)
            goto err;
    }
    /* Every module starts with struct bm_btl_module: the array is one of those. */
    c->super.modules = (struct bm_btl_module **)c->modules;
    c->super.count = c->nmodules;
    *component_out = &c->super;
    return BM_OK;
err:
    bm_btl_tcp_finalize(&c->super);
    return rc;
}

static inline __attribute__((always_inline)) int tcp_progress(struct bm_btl_tcp_component *c)
{
    struct epoll_event ev[64];
    c->completions = 0;
    /* The one-connection fast path: while the process has a single
     * connected link (two ranks, one interface) and it last received, read
     * it directly and ask epoll (listeners, handshakes, room to write) only
     * every TCP_HOT_EPOLL_EVERY-th pass: a message then costs the poller
     * one recv instead of epoll_wait + recv. */
    struct bm_btl_tcp_conn *hot = c->hot;
    int n = 0;
    if (hot && c->nconnected == 1 && hot->state == BM_BTL_TCP_CONN_CONNECTED && hot->fd >= 0 &&
        !__atomic_load_n(&hot->dead, __ATOMIC_RELAXED) &&
        ++c->hot_passes % TCP_HOT_EPOLL_EVERY != 0) {
        if (bm_btl_tcp_conn_recv(hot) && hot->fd >= 0) {
            if (__builtin_expect(c->mt, 0)) {
                bm_util_lock_take(&hot->ep->lock); /* senders queue under it */
                if (!bm_util_queue_empty(&hot->sendq))
                    bm_btl_tcp_frag_flush(hot);
                bm_util_lock_give(&hot->ep->lock);
            } else if (!bm_util_queue_empty(&hot->sendq)) {
                bm_btl_tcp_frag_flush(hot);
            }
        }
    } else {
        n = epoll_wait(c->epfd, ev, 64, 0);
    }
    for (int i = 0; i < n; i++) {
        enum bm_btl_tcp_poll_kind *kind = ev[i].data.ptr;
        if (*kind == BM_BTL_TCP_POLL_LISTENER)
            bm_btl_tcp_conn_accept(ev[i].data.ptr);
        else
            bm_btl_tcp_conn_event(ev[i].data.ptr, ev[i].events);
    }
    if (!bm_util_list_empty(&c->timers))
        bm_btl_tcp_conn_timers(c, bm_btl_tcp_now_ns());
    if (atomic_load_explicit(&c->dead_list, memory_order_relaxed))
        bm_btl_tcp_endpoint_reap(c);
    if (c->nretry > 0) {
        long long now = bm_btl_tcp_now_ns();
        if (now >= c->next_retry_check) {
            c->next_retry_check = now + 50000000LL; /* look at most every 50 ms */
            bm_btl_tcp_endpoint_retry(c, now);
        }
    }
    if (c->place_aborts)
        bm_btl_tcp_conn_place_reap(c, !c->finalizing);
    if (c->ack_list)
        bm_btl_tcp_frag_flush_acks(c);
    long long now = bm_btl_tcp_now_ns();
    if (now >= c->next_live_check) {
        c->next_live_check = now + BM_BTL_TCP_LIVE_CHECK_NS;
        bm_btl_tcp_live_check(c, now);
    }
    return c->completions;
}

/* Under MPI_THREAD_MULTIPLE progress holds the component's lock across its
 * callbacks (the PML's progress-lock holder is its one caller); senders
 * to connected endpoints never take it (README "Threads"). */
static int bm_btl_tcp_progress(struct bm_btl_component *comp)
{
    struct bm_btl_tcp_component *c = (struct bm_btl_tcp_component *)comp;
    if (__builtin_expect(c->mt, 0)) {
        bm_util_lock_take(&c->lock);
        if (c->nconnect > 0) /* links that sends found idle (tcp_frag.c) */
            bm_btl_tcp_endpoint_connect_pending(c);
        int n = tcp_progress(c);
        bm_util_lock_give(&c->lock);
        return n;
    }
    return tcp_progress(c);
}

/* btl.h "Sleeping": the epoll set itself is the wait descriptor (an epoll
 * descriptor is readable while any socket in it has an event: data, room
 * for a queued send, a connection). Timers: connection deadlines and the
 * reconnection retries. */
static int tcp_wait_fd(struct bm_btl_component *comp)
{
    return ((struct bm_btl_tcp_component *)comp)->epfd;
}

static bool tcp_busy(struct bm_btl_tcp_component *c);

static int tcp_wait_arm_locked(struct bm_btl_tcp_component *c, int64_t *timeout_ns);

static int tcp_wait_arm(struct bm_btl_component *comp, int64_t *timeout_ns)
{
    struct bm_btl_tcp_component *c = (struct bm_btl_tcp_component *)comp;
    bm_btl_tcp_comp_lock(c); /* the timers: a slow-path sender may be connecting */
    int rc = tcp_wait_arm_locked(c, timeout_ns);
    bm_btl_tcp_comp_unlock(c);
    return rc;
}

static int tcp_wait_arm_locked(struct bm_btl_tcp_component *c, int64_t *timeout_ns)
{
    *timeout_ns = -1;
    if (c->ack_list || atomic_load_explicit(&c->dead_list, memory_order_relaxed) ||
        c->place_aborts || c->nconnect > 0)
        return 1;
    long long now = bm_btl_tcp_now_ns(), next = -1;
    struct bm_util_list_node *it;
    bm_util_list_foreach(it, &c->timers)
    {
        struct bm_btl_tcp_conn *conn = bm_util_container_of(it, struct bm_btl_tcp_conn, timer_node);
        if (conn->deadline_ns && (next < 0 || conn->deadline_ns < next))
            next = conn->deadline_ns;
    }
    if (c->nretry > 0 && (next < 0 || c->next_retry_check < next))
        next = c->next_retry_check;
    /* the liveness check (tcp_live.c) while something waits for the peer */
    if ((next < 0 || c->next_live_check < next) && tcp_busy(c))
        next = c->next_live_check;
    if (next >= 0)
        *timeout_ns = next > now ? next - now : 0;
    return 0;
}

static void tcp_wait_disarm(struct bm_btl_component *comp)
{
    (void)comp; /* level-triggered: progress consumes the events */
}

/* Anything still to be written or acknowledged on a live connection? */
static bool tcp_busy(struct bm_btl_tcp_component *c)
{
    for (int i = 0; i < c->nmodules; i++)
        for (int r = 0; r < c->size; r++) {
            struct bm_btl_tcp_endpoint *ep = c->modules[i]->eps[r];
            if (!ep || ep->failed)
                continue;
            bool busy = false;
            bm_btl_tcp_ep_lock(ep);
            for (int k = 0; k < ep->nlinks && !busy; k++)
                busy = !bm_util_queue_empty(&ep->links[k].sendq) ||
                       !bm_util_queue_empty(&ep->links[k].ackq);
            bm_btl_tcp_ep_unlock(ep);
            if (busy)
                return true;
        }
    return false;
}

/* Let outstanding sends be acknowledged (bounded by BM_BTL_TCP_FINALIZE_DRAIN). */
static void tcp_drain(struct bm_btl_tcp_component *c)
{
    long long deadline = bm_btl_tcp_now_ns() + (long long)c->cfg.finalize_drain_ms * 1000000LL;
    while (tcp_busy(c) && bm_btl_tcp_now_ns() < deadline) {
        bm_btl_tcp_progress(&c->super);
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    bm_btl_tcp_progress(&c->super); /* last acknowledgements out */
}

static bm_status_t tcp_del_procs(struct bm_btl_module *m, int nprocs, const int *ranks,
                                 struct bm_btl_endpoint **endpoints)
{
    struct bm_btl_tcp_component *c = ((struct bm_btl_tcp_module *)m)->comp;
    bm_btl_tcp_comp_lock(c);
    c->finalizing = true; /* no reconnection from here on */
    if (c->epfd >= 0)
        tcp_drain(c);
    bm_status_t rc = bm_btl_tcp_del_procs(m, nprocs, ranks, endpoints);
    bm_btl_tcp_comp_unlock(c);
    return rc;
}

static bm_status_t tcp_add_procs(struct bm_btl_module *m, int nprocs, const int *ranks,
                                 struct bm_btl_endpoint **endpoints_out,
                                 struct bm_util_bitmap *reachable)
{
    struct bm_btl_tcp_component *c = ((struct bm_btl_tcp_module *)m)->comp;
    bm_btl_tcp_comp_lock(c);
    bm_status_t rc = bm_btl_tcp_add_procs(m, nprocs, ranks, endpoints_out, reachable);
    bm_btl_tcp_comp_unlock(c);
    return rc;
}

static bm_status_t tcp_stats(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                             struct bm_btl_path_stats *out)
{
    struct bm_btl_tcp_component *c = ((struct bm_btl_tcp_module *)m)->comp;
    bm_btl_tcp_comp_lock(c);
    bm_status_t rc = bm_btl_tcp_stats(m, ep, out);
    bm_btl_tcp_comp_unlock(c);
    return rc;
}

static void bm_btl_tcp_finalize(struct bm_btl_component *comp)
{
    struct bm_btl_tcp_component *c = (struct bm_btl_tcp_component *)comp;
    c->finalizing = true;
    if (c->epfd >= 0 && c->modules)
        tcp_drain(c);
    for (int i = 0; i < c->nmodules; i++)
        for (int r = 0; r < c->size; r++)
            if (c->modules[i]->eps[r])
                bm_btl_tcp_endpoint_shutdown(c->modules[i]->eps[r]);
    for (int i = 0; i < c->nmodules; i++)
        bm_btl_tcp_module_destroy(c->modules[i]);
    bm_btl_tcp_conn_close_anon(c);
    bm_btl_tcp_stray_summary(c);
    free(c->modules);
    c->modules = NULL;
    c->nmodules = 0;
    if (c->peers)
        for (int r = 0; r < c->size; r++)
            free(c->peers[r].pair_remote);
    free(c->peers);
    c->peers = NULL;
    bm_btl_tcp_frag_pool_release(c);
    bm_btl_tcp_conn_place_reap(c, false);
    free(c->place_iov);
    if (c->epfd >= 0)
        close(c->epfd);
    if (c->mt)
        bm_util_lock_destroy(&c->lock);
    free(c);
}

/* tcp has no RDMA operations, so there is never anything to flush; callers
 * that flush every module at close get an immediate answer. */
static bm_status_t bm_btl_tcp_flush(struct bm_btl_module *m, struct bm_btl_endpoint *ep)
{
    (void)m;
    (void)ep;
    return BM_OK;
}

/* Everything but the module operations that differ between the tables
 * (btl.h "mt_ops"). */
#define TCP_OPS_COMMON                                                                             \
    .name = "tcp",                                                                                 \
    .description = "TCP sockets over every usable IPv4/IPv6 interface (works everywhere)",         \
    .params = &tcp_param_table,                                                                    \
    .caps = BM_BTL_CAP_SEND | BM_BTL_CAP_SEND_INPLACE | BM_BTL_CAP_ORDERED | BM_BTL_CAP_FAILOVER | \
            BM_BTL_CAP_WAIT | BM_BTL_CAP_STATS | BM_BTL_CAP_RECV_PLACE | BM_BTL_CAP_SEND_IOV |     \
            BM_BTL_CAP_THREADS,                                                                    \
    .query = bm_btl_tcp_query, .init = bm_btl_tcp_init, .progress = bm_btl_tcp_progress,           \
    .wait_fd = tcp_wait_fd, .wait_arm = tcp_wait_arm, .wait_disarm = tcp_wait_disarm,              \
    .finalize = bm_btl_tcp_finalize, .add_procs = tcp_add_procs, .del_procs = tcp_del_procs,       \
    .flush = bm_btl_tcp_flush, .stats = tcp_stats

/* The modules of an MPI_THREAD_MULTIPLE process (the base points them here). */
static const struct bm_btl_ops bm_btl_tcp_ops_mt = {
    TCP_OPS_COMMON,
    .alloc = bm_btl_tcp_alloc_mt,
    .free = bm_btl_tcp_free_mt,
    .prepare_src = bm_btl_tcp_prepare_src_mt,
    .prepare_src_iov = bm_btl_tcp_prepare_src_iov_mt,
    .send = bm_btl_tcp_send_mt,
};

const struct bm_btl_ops bm_btl_tcp_ops = {
    TCP_OPS_COMMON,
    .alloc = bm_btl_tcp_alloc,
    .free = bm_btl_tcp_free,
    .prepare_src = bm_btl_tcp_prepare_src,
    .prepare_src_iov = bm_btl_tcp_prepare_src_iov,
    .send = bm_btl_tcp_send,
    .mt_ops = &bm_btl_tcp_ops_mt,
};
