/* Failure detection of tcp connections by progress (BM_BTL_TCP_FAIL_MS).
 * A fixed TCP_USER_TIMEOUT kills a connection whose oldest segment stays
 * unacknowledged that long, and on a lossy link the kernel's exponential
 * retransmission backoff makes that happen to links that still deliver
 * 80% of their packets. Here a connection is alive as long as the peer's
 * kernel acknowledges new bytes or sends us new ones (TCP_INFO's byte
 * counters), however lossy; one that has data in flight and shows no
 * progress for BM_BTL_TCP_FAIL_MS, while the kernel's retransmissions of it
 * go unanswered, is dead. Local errors fail at once: a
 * connection whose local interface is down (no IFF_UP or no carrier; one
 * ioctl per module per check) is failed on the next check (every
 * BM_BTL_TCP_LIVE_CHECK_NS), busy or idle, instead of after the failure
 * time or the keepalive probes. Otherwise idle connections are left to TCP
 * keepalive. Kept in its own file because the byte counters are only in
 * <linux/tcp.h>'s struct tcp_info, which clashes with <netinet/tcp.h>. */
#define BM_LOG_SUBSYS "btl/tcp"
#include "btl/tcp/tcp.h"
#include "util/log.h"

#include <errno.h>
#include <linux/tcp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* TCP_RTO_MAX_MS (Linux 6.15): the cap on one connection's retransmission
 * timeout, 1 s to 120 s. Older headers lack it; older kernels refuse it. */
#ifndef TCP_RTO_MAX_MS
#define TCP_RTO_MAX_MS 44
#endif
#define TCP_LIVE_RTO_MAX_MIN 1000
#define TCP_LIVE_RTO_MAX_MAX 120000
/* The kernel's floor of the retransmission timeout (TCP_RTO_MIN). */
#define TCP_LIVE_RTO_MIN 200
/* Fewest unanswered retransmission timeouts of the oldest segment for a
 * failure (without the cap, or with a short failure time). */
#define TCP_LIVE_MIN_RTO 3

/* A stalled connection is dead only after N retransmissions of its oldest
 * segment in a row went unanswered. At 20% loss each way a try fails with
 * probability 1 - 0.8 * 0.8 = 0.36, so a lossy link looks dead to N tries
 * with probability 0.36^N per loss of the oldest segment: 4.7% for 3, which
 * made a link delivering 80% of its packets fail every other run of
 * pml_netns_lossy. Exponential backoff is what keeps N small: 3 tries
 * already span 1.4 s, 10 would span 200 s. So every connection's timeout is
 * capped (TCP_RTO_MAX_MS) at a tenth of the failure time (at least 1 s, the
 * kernel's floor), the kernel then retransmits at least once per cap, and N
 * is as many tries as fit in the failure time, less one: 10 for the default
 * 10 s (0.36^10 = 4e-5), 3 for 2-3 s. A short failure time buys a fast
 * failover with that risk; the default makes it negligible. */
void bm_btl_tcp_live_setup(struct bm_btl_tcp_component *comp)
{
    const struct bm_btl_tcp_config *cfg = &comp->cfg;
    comp->rto_max_ms = 0;
    comp->live_min_rto = TCP_LIVE_MIN_RTO;
    if (cfg->fail_ms <= 0)
        return;
    int cap = cfg->fail_ms / 10;
    if (cap < TCP_LIVE_RTO_MAX_MIN)
        cap = TCP_LIVE_RTO_MAX_MIN;
    if (cap > TCP_LIVE_RTO_MAX_MAX)
        cap = TCP_LIVE_RTO_MAX_MAX;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    bool ok = setsockopt(fd, IPPROTO_TCP, TCP_RTO_MAX_MS, &cap, sizeof(cap)) == 0;
    close(fd);
    if (!ok) {
        bm_log_debug("the kernel cannot cap the retransmission timeout (TCP_RTO_MAX_MS: %s): a "
                     "stall is a failure after %d unanswered retransmissions",
                     strerror(errno), comp->live_min_rto);
        return;
    }
    comp->rto_max_ms = cap;
    int tries = 0;
    for (long t = TCP_LIVE_RTO_MIN, rto = TCP_LIVE_RTO_MIN; t <= cfg->fail_ms; tries++) {
        rto = 2 * rto < cap ? 2 * rto : cap;
        t += rto;
    }
    if (tries - 1 > comp->live_min_rto)
        comp->live_min_rto = tries - 1;
}

void bm_btl_tcp_live_sockopt(const struct bm_btl_tcp_component *comp, int fd)
{
    if (comp->rto_max_ms > 0)
        setsockopt(fd, IPPROTO_TCP, TCP_RTO_MAX_MS, &comp->rto_max_ms, sizeof(int));
}

/* Whether module m's interface is up with a carrier (asked on fd, any
 * socket); true when it cannot tell. */
static bool tcp_live_iface_up(const struct bm_btl_tcp_module *m, int fd)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", m->iface.name);
    if (ioctl(fd, SIOCGIFFLAGS, &ifr) != 0)
        return errno != ENODEV; /* an interface that vanished is down */
    return (ifr.ifr_flags & IFF_UP) && (ifr.ifr_flags & IFF_RUNNING);
}

/* Whether the connection leaves by its module's interface (its local
 * address is the module's; otherwise it took another route). */
static bool tcp_live_on_iface(const struct bm_btl_tcp_conn *c)
{
    const struct bm_btl_tcp_module *m = c->ep->module;
    struct sockaddr_storage sa;
    socklen_t sl = sizeof(sa);
    if (getsockname(c->fd, (struct sockaddr *)&sa, &sl) != 0)
        return false;
    for (int i = 0; i < m->iface.naddrs; i++) {
        const struct bm_btl_tcp_ifaddr *a = &m->iface.addrs[i];
        if (a->family == AF_INET && sa.ss_family == AF_INET &&
            !memcmp(a->addr, &((struct sockaddr_in *)&sa)->sin_addr, 4))
            return true;
        if (a->family == AF_INET6 && sa.ss_family == AF_INET6 &&
            !memcmp(a->addr, &((struct sockaddr_in6 *)&sa)->sin6_addr, 16))
            return true;
    }
    return false;
}

/* Check one connected link; true when its endpoint was failed. iface_down:
 * its module's interface is down (then a link that leaves by it fails at
 * once, busy or idle). */
static bool tcp_live_check(struct bm_btl_tcp_conn *c, long long now, bool iface_down)
{
    const struct bm_btl_tcp_config *cfg = &c->comp->cfg;
    char what[1024];
    if (iface_down && tcp_live_on_iface(c)) {
        snprintf(what, sizeof(what),
                 "connection to rank %d (%s) via %s failed at once: the local interface is down "
                 "(no carrier or administratively down). It is used again when the interface "
                 "is back",
                 c->ep->rank, c->peer_str, c->ep->module->iface.name);
        bm_btl_tcp_endpoint_fail(c->ep, BM_ERR_UNREACHABLE, what);
        return true;
    }
    struct tcp_info ti;
    socklen_t len = sizeof(ti);
    memset(&ti, 0, sizeof(ti));
    if (getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0)
        return false;
    /* Only data in flight counts: bytes waiting because the peer's window
     * is closed (a busy peer process) are not a failure. */
    bool waiting = ti.tcpi_unacked > 0;
    if (!waiting || !c->live_ns || ti.tcpi_bytes_acked != c->live_acked ||
        ti.tcpi_bytes_received != c->live_rcvd) {
        c->live_acked = ti.tcpi_bytes_acked;
        c->live_rcvd = ti.tcpi_bytes_received;
        c->live_ns = now;
        return false;
    }
    /* Dead: no progress for the failure time and the kernel's retransmission
     * timer expired TCP_LIVE_MIN_RTO times in a row. The second condition
     * keeps a slow round trip (a loaded host inflates the retransmission
     * timeout to seconds) from passing for a dead link: what counts is
     * retransmissions that went unanswered, not the clock alone. */
    if (cfg->fail_ms > 0 && now - c->live_ns >= (long long)cfg->fail_ms * 1000000LL &&
        ti.tcpi_retransmits >= c->comp->live_min_rto) {
        snprintf(what, sizeof(what),
                 "connection to rank %d (%s) via %s made no progress for %d ms "
                 "(BM_BTL_TCP_FAIL_MS): %u segment(s) unacknowledged, nothing received, %u "
                 "retransmission(s) of the oldest (link down, black-holed, or host dead). A "
                 "lossy link that still acknowledges is never declared dead; check that the "
                 "process is alive and that the network between the two hosts works",
                 c->ep->rank, c->peer_str, c->ep->module->iface.name, cfg->fail_ms, ti.tcpi_unacked,
                 (unsigned)ti.tcpi_retransmits);
        bm_btl_tcp_endpoint_fail(c->ep, BM_ERR_UNREACHABLE, what);
        return true;
    }
    return false;
}

void bm_btl_tcp_live_check(struct bm_btl_tcp_component *comp, long long now)
{
    int connected = 0;
    for (int i = 0; i < comp->nmodules; i++) {
        struct bm_btl_tcp_module *m = comp->modules[i];
        int state = -1; /* module's interface: -1 not asked yet, 1 up, 0 down */
        for (int r = 0; r < comp->size; r++) {
            struct bm_btl_tcp_endpoint *ep = m->eps[r];
            if (!ep || ep->failed)
                continue;
            for (int k = 0; k < ep->nlinks; k++) {
                struct bm_btl_tcp_conn *c = &ep->links[k];
                if (c->state != BM_BTL_TCP_CONN_CONNECTED || c->fd < 0)
                    continue;
                connected++;
                if (state < 0)
                    state = m->iface.loopback || tcp_live_iface_up(m, c->fd);
                if (tcp_live_check(c, now, state == 0))
                    break; /* the endpoint failed: its links are gone */
            }
        }
    }
    comp->nconnected = connected;
}

/* The stats operation (btl.h, BM_BTL_CAP_STATS): the kernel's counters of
 * the endpoint's connections, summed. A reconnected link starts from zero
 * again (the reader treats a decrease as a restart). */
bm_status_t bm_btl_tcp_stats(struct bm_btl_module *m, struct bm_btl_endpoint *bep,
                             struct bm_btl_path_stats *out)
{
    (void)m;
    const struct bm_btl_tcp_endpoint *ep = (const struct bm_btl_tcp_endpoint *)bep;
    struct bm_btl_path_stats s = {0};
    for (int k = 0; k < ep->nlinks; k++) {
        const struct bm_btl_tcp_conn *c = &ep->links[k];
        if (c->state != BM_BTL_TCP_CONN_CONNECTED || c->fd < 0)
            continue;
        struct tcp_info ti;
        socklen_t len = sizeof(ti);
        memset(&ti, 0, sizeof(ti));
        if (getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0)
            continue;
        s.bytes_acked += ti.tcpi_bytes_acked;
        s.units_sent += ti.tcpi_segs_out;
        s.units_resent += ti.tcpi_total_retrans;
    }
    *out = s;
    return BM_OK;
}
