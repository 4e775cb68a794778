/* The dgram component: finds the interfaces to use (one module each),
 * publishes their addresses in the modex under "btl.dgram", pairs our
 * modules with each peer's when they are added (a maximum-weight matching:
 * same subnet first, then link speed, solved by util/graph.h identically on
 * both sides),
 * progresses every module, and tears everything down at finalize. The
 * const ops table registered in btl_registry.c is at the end. */
#define BM_LOG_SUBSYS "btl/dgram"
#include "btl/dgram/dgram.h"
#include "bm_config.h"
#include "runtime/rte.h"
#include "util/graph.h"
#include "util/log.h"
#include "util/siphash.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define DGRAM_MAX_MODULES 8
#define DGRAM_MODEX_KEY   "btl.dgram"
/* MPI_THREAD_MULTIPLE's value (the transport layer does not include mpi.h) */
#define DGRAM_THREAD_MULTIPLE 3

/* What we know of a peer's modules, and the interface pairs (edges of the
 * pairing matrix) excluded for it after failed connectivity checks. An edge
 * is bit row * 8 + column, rows being the lower rank's modules, so both
 * ranks name an edge alike and exchange masks in REPAIR packets. */
struct dgram_peer {
    int npeer; /* modules the peer published; 0: peer unknown */
    struct bm_btl_dgram_addr addr[DGRAM_MAX_MODULES];
    bool same_node;
    uint64_t excl;     /* excluded edges */
    uint64_t excl_mtu; /* of those, the ones where small pings passed */
    uint32_t big[DGRAM_MAX_MODULES * DGRAM_MAX_MODULES]; /* full-size ping, by edge, if ours */
    /* our REPAIR announcing excl, retried until answered */
    bool repair_pending;
    uint32_t repair_nonce;
    int repair_tries;
    uint64_t repair_next_ns;
};

/* An instance of the transport (dgram.h declares it for the modules'
 * back-pointer; only this file looks inside). */
struct bm_btl_dgram_component {
    struct bm_btl_component super; /* first; super.modules is bmods */
    struct bm_btl_dgram_config cfg;
    struct dgram_peer *peers; /* by rank */
    int npeers;
    int repairs_pending; /* peers with repair_pending */
    struct bm_btl_dgram_module *mods[DGRAM_MAX_MODULES];
    struct bm_btl_module *bmods[DGRAM_MAX_MODULES];
    int nmods;
    int me;
    unsigned idle; /* progress calls in a row that found nothing */
    int wait_epfd; /* every module's sockets, when the job has sleepers; else -1 */
};

struct dgram_if {
    char name[IF_NAMESIZE];
    uint32_t ip, mask; /* network order */
    uint32_t mtu, speed;
    bool loopback;
};

/* "eth0,10.1.0.0/16" matches by name or by subnet. */
static bool if_listed(const char *list, const struct dgram_if *i)
{
    if (!list || !*list)
        return false;
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", list);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        char *slash = strchr(tok, '/');
        if (slash) {
            *slash = 0;
            struct in_addr net;
            int bits = atoi(slash + 1);
            if (inet_pton(AF_INET, tok, &net) == 1 && bits >= 0 && bits <= 32) {
                uint32_t m = bits ? htonl(~0u << (32 - bits)) : 0;
                if ((i->ip & m) == (net.s_addr & m))
                    return true;
            }
        } else if (strcmp(tok, i->name) == 0) {
            return true;
        }
    }
    return false;
}

static int if_enumerate(const struct bm_btl_dgram_config *cfg, struct dgram_if *out, int max)
{
    struct ifaddrs *ifa = NULL;
    if (getifaddrs(&ifa) != 0)
        return -1;
    int n = 0, nonloop = 0;
    int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    for (struct ifaddrs *p = ifa; p && n < max; p = p->ifa_next) {
        if (!p->ifa_addr || p->ifa_addr->sa_family != AF_INET || !(p->ifa_flags & IFF_UP))
            continue;
        struct dgram_if i;
        memset(&i, 0, sizeof(i));
        snprintf(i.name, sizeof(i.name), "%s", p->ifa_name);
        i.ip = ((struct sockaddr_in *)p->ifa_addr)->sin_addr.s_addr;
        i.mask = p->ifa_netmask ? ((struct sockaddr_in *)p->ifa_netmask)->sin_addr.s_addr : 0;
        i.loopback = (p->ifa_flags & IFF_LOOPBACK) != 0;
        if (cfg->if_include && *cfg->if_include && !if_listed(cfg->if_include, &i))
            continue;
        if (if_listed(cfg->if_exclude, &i))
            continue;
        i.mtu = 1500;
        if (sock >= 0) {
            struct ifreq ifr;
            memset(&ifr, 0, sizeof(ifr));
            snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", i.name);
            if (ioctl(sock, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0)
                i.mtu = (uint32_t)ifr.ifr_mtu;
        }
        i.speed = 10000;
        char path[128];
        snprintf(path, sizeof(path), "/sys/class/net/%s/speed", i.name);
        FILE *f = fopen(path, "r");
        if (f) {
            int sp = 0;
            if (fscanf(f, "%d", &sp) == 1 && sp > 0)
                i.speed = (uint32_t)sp;
            fclose(f);
        }
        if (!i.loopback)
            nonloop++;
        out[n++] = i;
    }
    if (sock >= 0)
        close(sock);
    freeifaddrs(ifa);
    /* loopback only when nothing else is there (or it was asked for by name) */
    if (nonloop > 0 && !(cfg->if_include && *cfg->if_include)) {
        int k = 0;
        for (int j = 0; j < n; j++)
            if (!out[j].loopback)
                out[k++] = out[j];
        n = k;
    }
    return n;
}

static uint64_t job_key_of(const char *jobid)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (const char *p = jobid; *p; p++) {
        h ^= (uint8_t)*p;
        h *= 0x100000001b3ull;
    }
    return h ? h : 1;
}

static bm_status_t dgram_query(char *why, size_t whylen)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(why, whylen, "cannot open a UDP socket: %s", strerror(errno));
        return BM_ERR_NOT_AVAILABLE;
    }
    close(fd);
    struct bm_btl_dgram_config cfg;
    if (bm_btl_dgram_config_load(&cfg) != BM_OK) {
        snprintf(why, whylen, "bad BM_BTL_DGRAM_* parameter");
        return BM_ERR_BAD_PARAM;
    }
    struct dgram_if ifs[DGRAM_MAX_MODULES];
    if (if_enumerate(&cfg, ifs, DGRAM_MAX_MODULES) <= 0) {
        snprintf(why, whylen,
                 "no IPv4 interface is up (or none matches BM_BTL_DGRAM_IF_INCLUDE/EXCLUDE)");
        return BM_ERR_NOT_AVAILABLE;
    }
    /* What bm_info shows of a usable transport: whether a stranger on the
     * network can inject datagrams. */
    snprintf(why, whylen, "%s",
             cfg.auth ? "datagrams authenticated: NH + SipHash-2-4 MAC under a key derived from "
                        "the job secret (bmrun; other launchers: per-module keys exchanged "
                        "through their modex); BM_BTL_DGRAM_AUTH=0 turns it off"
                      : "datagrams NOT authenticated (BM_BTL_DGRAM_AUTH=0): anyone who can "
                        "reach the ports can inject or disrupt traffic; trusted fabrics only");
    return BM_OK;
}

/* btl.h "Sleeping": one epoll set holding every module's sockets is the
 * transport's wait descriptor. Without it (no memory, no descriptor) a
 * sleeper naps (dgram_wait_arm). */
static void wait_set_up(struct bm_btl_dgram_component *d)
{
    d->wait_epfd = epoll_create1(EPOLL_CLOEXEC);
    for (int i = 0; i < d->nmods && d->wait_epfd >= 0; i++) {
        int fds[BM_DGRAM_NCH];
        int n = bm_btl_dgram_wait_fds(d->mods[i], fds);
        for (int k = 0; k < n; k++) {
            struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[k]};
            if (epoll_ctl(d->wait_epfd, EPOLL_CTL_ADD, fds[k], &ev) != 0) {
                close(d->wait_epfd);
                d->wait_epfd = -1;
                break;
            }
        }
    }
}

static int dgram_wait_fd(struct bm_btl_component *comp)
{
    return ((struct bm_btl_dgram_component *)comp)->wait_epfd;
}

static int dgram_wait_arm(struct bm_btl_component *comp, int64_t *timeout_ns)
{
    struct bm_btl_dgram_component *d = (struct bm_btl_dgram_component *)comp;
    uint64_t due = UINT64_MAX;
    *timeout_ns = -1;
    if (d->repairs_pending)
        return 1;
    for (int i = 0; i < d->nmods; i++) {
        uint64_t m_due;
        if (bm_btl_dgram_wait_arm_module(d->mods[i], &m_due) > 0)
            return 1;
        if (m_due < due)
            due = m_due;
    }
    if (d->wait_epfd < 0 && d->nmods > 0) {
        uint64_t nap = bm_btl_dgram_now() + 1000000;
        if (nap < due)
            due = nap;
    }
    if (due != UINT64_MAX) {
        uint64_t now = bm_btl_dgram_now();
        *timeout_ns = due > now ? (int64_t)(due - now) : 0;
    }
    return 0;
}

static void dgram_wait_disarm(struct bm_btl_component *comp)
{
    (void)comp; /* level-triggered sockets: progress reads them */
}

static bm_status_t dgram_init(const struct bm_btl_init_args *args,
                              struct bm_btl_component **component_out)
{
    struct bm_btl_dgram_component *d = calloc(1, sizeof(*d));
    if (!d)
        return BM_ERR_NO_MEMORY;
    d->super.ops = &bm_btl_dgram_ops;
    d->super.rte = args->rte;
    d->super.modules = d->bmods;
    bm_status_t rc = bm_btl_dgram_config_load(&d->cfg);
    if (rc != BM_OK) {
        free(d);
        return rc;
    }
    d->cfg.thread_multiple = args->thread_level >= DGRAM_THREAD_MULTIPLE;
    const struct bm_rte_proc *self = bm_btl_rte_self(args->rte);
    d->me = self->rank;
    uint64_t key = job_key_of(self->jobid);
    /* The MAC key: derived from the job secret when the launcher
     * distributes one (bmrun), else each module's random key, published
     * through the launcher's modex (README "Authentication"). */
    uint8_t job_mac[16];
    if (self->has_job_key)
        bm_util_siphash_derive(self->job_key, sizeof(self->job_key), "bitmover dgram mac", job_mac);
    struct dgram_if ifs[DGRAM_MAX_MODULES];
    int nif = if_enumerate(&d->cfg, ifs, DGRAM_MAX_MODULES);
    d->nmods = 0;
    for (int i = 0; i < nif; i++) {
        struct bm_btl_dgram_module *m;
        if (bm_btl_dgram_module_create(&d->cfg, ifs[i].name, ifs[i].ip, ifs[i].mask, ifs[i].mtu,
                                       ifs[i].speed, d->nmods, self->rank, key, &m) != BM_OK)
            continue; /* reported; other interfaces may work */
        if (self->has_job_key)
            bm_btl_dgram_module_use_job_key(m, job_mac);
        m->comp = d;
        m->super.component = &d->super;
        d->mods[d->nmods] = m;
        d->bmods[d->nmods] = &m->super;
        d->nmods++;
    }
    if (d->nmods > 1) {
        /* Interfaces close to our cores (hwloc) get the better latency
         * class; with one interface there is nothing to rank. */
        const char *names[DGRAM_MAX_MODULES];
        int near[DGRAM_MAX_MODULES];
        for (int i = 0; i < d->nmods; i++)
            names[i] = d->mods[i]->addr.ifname;
        bm_btl_dgram_topo_near(names, d->nmods, near);
        for (int i = 0; i < d->nmods; i++)
            if (near[i] == 0)
                d->mods[i]->super.latency += 1;
    }
    if (d->nmods > 0) {
        struct bm_btl_dgram_addr addrs[DGRAM_MAX_MODULES];
        for (int i = 0; i < d->nmods; i++)
            addrs[i] = d->mods[i]->addr;
        rc = bm_btl_rte_modex_put(args->rte, DGRAM_MODEX_KEY, addrs,
                                  sizeof(addrs[0]) * (size_t)d->nmods);
        if (rc != BM_OK) {
            for (int i = 0; i < d->nmods; i++)
                bm_btl_dgram_module_destroy(d->mods[i]);
            free(d);
            return rc;
        }
    }
    d->super.count = d->nmods;
    d->wait_epfd = -1;
    if (args->sleepers && d->nmods > 0)
        wait_set_up(d);
    *component_out = &d->super;
    return BM_OK;
}

static void repair_progress(struct bm_btl_dgram_component *d);

static int dgram_progress(struct bm_btl_component *comp)
{
    struct bm_btl_dgram_component *d = (struct bm_btl_dgram_component *)comp;
    int n = 0;
    for (int i = 0; i < d->nmods; i++)
        n += bm_btl_dgram_module_progress(d->mods[i]);
    if (d->repairs_pending)
        repair_progress(d);
    /* A peer on an oversubscribed node only runs when we give the core
     * away: after a long idle spin, yield once (a no-op when nothing else
     * is runnable). Measured on the 2-core test bed under load: the
     * ping-pong latency over dgram fell several times. */
    if (n == 0) {
        if (++d->idle >= 256) {
            d->idle = 0;
            sched_yield();
        }
    } else {
        d->idle = 0;
    }
    return n;
}

static int dgram_unacked(struct bm_btl_component *comp)
{
    struct bm_btl_dgram_component *d = (struct bm_btl_dgram_component *)comp;
    int n = 0;
    for (int i = 0; i < d->nmods; i++)
        n += bm_btl_dgram_module_unacked(d->mods[i]);
    return n;
}

static void dgram_finalize(struct bm_btl_component *comp)
{
    struct bm_btl_dgram_component *d = (struct bm_btl_dgram_component *)comp;
    for (int i = 0; i < d->nmods; i++) {
        if (d->cfg.stats > 0)
            bm_btl_dgram_stats_print(d->mods[i]);
        bm_btl_dgram_module_destroy(d->mods[i]);
    }
    d->nmods = 0;
    if (d->wait_epfd >= 0)
        close(d->wait_epfd);
    free(d->peers);
    free(d);
}

/* Weight of pairing address a with b (0: never). Symmetric. */
static int pair_weight(const struct bm_btl_dgram_addr *a, const struct bm_btl_dgram_addr *b,
                       bool same_node)
{
    bool a_lo = (ntohl(a->ipv4) >> 24) == 127, b_lo = (ntohl(b->ipv4) >> 24) == 127;
    if (a_lo || b_lo)
        return same_node ? 1000 : 0;
    uint32_t mask = a->netmask & b->netmask;
    int w = (a->ipv4 & mask) == (b->ipv4 & mask) ? 1000000 : 1000;
    uint32_t sp = a->speed_mbps < b->speed_mbps ? a->speed_mbps : b->speed_mbps;
    return w + (int)(sp / 100 > 999 ? 999 : sp / 100);
}

/* The peer's entry, filled from the modex on first use; NULL when the peer
 * published no dgram address (or memory ran out). */
static struct dgram_peer *peer_get(struct bm_btl_dgram_component *d, int rank)
{
    if (rank < 0 || rank == d->me)
        return NULL;
    if (rank >= d->npeers) {
        int n = rank + 1 > 2 * d->npeers ? rank + 1 : 2 * d->npeers;
        struct dgram_peer *p = realloc(d->peers, sizeof(*p) * (size_t)n);
        if (!p)
            return NULL;
        memset(p + d->npeers, 0, sizeof(*p) * (size_t)(n - d->npeers));
        d->peers = p;
        d->npeers = n;
    }
    struct dgram_peer *p = &d->peers[rank];
    if (p->npeer > 0)
        return p;
    const void *blob;
    size_t len;
    if (bm_btl_rte_modex_get(d->super.rte, rank, DGRAM_MODEX_KEY, &blob, &len) != BM_OK ||
        len == 0 || len % sizeof(struct bm_btl_dgram_addr) != 0)
        return NULL;
    int npeer = (int)(len / sizeof(struct bm_btl_dgram_addr));
    if (npeer > DGRAM_MAX_MODULES)
        npeer = DGRAM_MAX_MODULES;
    memcpy(p->addr, blob, sizeof(p->addr[0]) * (size_t)npeer);
    for (int j = 0; j < npeer; j++)
        p->addr[j].ifname[IF_NAMESIZE - 1] = 0; /* printed in messages */
    p->same_node =
        bm_btl_rte_node_of(d->super.rte, rank) == bm_btl_rte_node_of(d->super.rte, d->me);
    p->npeer = npeer;
    return p;
}

/* Edge bit of our module i with the peer's module j. */
static uint64_t edge_bit(const struct bm_btl_dgram_component *d, int rank, int i, int j)
{
    return d->me < rank ? 1ull << (i * DGRAM_MAX_MODULES + j) : 1ull << (j * DGRAM_MAX_MODULES + i);
}

/* Solve the pairing with rank without its excluded edges: partner_out[i] is
 * the peer's module paired with our module i, or -1. The lower rank's
 * modules are the rows, so both sides solve the same matrix and agree. */
static bm_status_t pair_solve(const struct bm_btl_dgram_component *d, int rank,
                              const struct dgram_peer *p, int *partner_out)
{
    bool me_rows = d->me < rank;
    int nr = me_rows ? d->nmods : p->npeer, nc = me_rows ? p->npeer : d->nmods;
    int64_t w[DGRAM_MAX_MODULES * DGRAM_MAX_MODULES];
    for (int r = 0; r < nr; r++)
        for (int c = 0; c < nc; c++) {
            const struct bm_btl_dgram_addr *a = me_rows ? &d->mods[r]->addr : &p->addr[r];
            const struct bm_btl_dgram_addr *b = me_rows ? &p->addr[c] : &d->mods[c]->addr;
            int wt = pair_weight(a, b, p->same_node);
            bool excluded = (p->excl >> (r * DGRAM_MAX_MODULES + c)) & 1;
            w[r * nc + c] = wt > 0 && !excluded ? wt : BM_UTIL_GRAPH_NO_EDGE;
        }
    int match[DGRAM_MAX_MODULES];
    bm_status_t rc = bm_util_graph_match((size_t)nr, (size_t)nc, w, match, NULL);
    if (rc != BM_OK)
        return rc;
    for (int i = 0; i < d->nmods; i++)
        partner_out[i] = -1;
    for (int r = 0; r < nr; r++) {
        if (match[r] < 0)
            continue;
        if (me_rows)
            partner_out[r] = match[r];
        else
            partner_out[match[r]] = r;
    }
    return BM_OK;
}

/* Make every address the peer published known to module m's wire, not
 * only its partner's: a wire that names senders by address-vector entry
 * (libfabric) reports a sender outside the vector as unknown, and after a
 * re-pairing REPAIR packets and the new partner's traffic come from
 * another of the peer's modules. The UDP wire needs nothing. */
static void wire_know_all(struct bm_btl_dgram_module *m, int rank, const struct dgram_peer *p,
                          int partner)
{
    if (m->wire == &bm_btl_dgram_wire_udp)
        return;
    for (int j = 0; j < p->npeer; j++) {
        if (j == partner)
            continue;
        struct bm_btl_dgram_endpoint tmp;
        memset(&tmp, 0, sizeof(tmp));
        tmp.module = m;
        tmp.peer = rank;
        for (int c = 0; c < BM_DGRAM_NCH; c++) {
            tmp.to[c].sin_family = AF_INET;
            tmp.to[c].sin_addr.s_addr = p->addr[j].ipv4;
            tmp.to[c].sin_port =
                c == BM_DGRAM_CH_PRIO ? p->addr[j].port_prio : p->addr[j].port_data;
        }
        snprintf(tmp.peer_desc, sizeof(tmp.peer_desc), "rank %d (module %d)", rank, j);
        (void)m->wire->peer_add(m, &tmp); /* failure reported; only REPAIR would be lost */
    }
}

static bm_status_t dgram_add_procs(struct bm_btl_module *bm, int nprocs, const int *ranks,
                                   struct bm_btl_endpoint **endpoints_out,
                                   struct bm_util_bitmap *reachable)
{
    struct bm_btl_dgram_module *m = (struct bm_btl_dgram_module *)bm;
    struct bm_btl_dgram_component *d = m->comp;
    int mine = m->addr.index;
    for (int i = 0; i < nprocs; i++) {
        int rank = ranks[i];
        struct dgram_peer *p = peer_get(d, rank); /* NULL for ourselves: self reaches us */
        int partner[DGRAM_MAX_MODULES];
        if (!p || pair_solve(d, rank, p, partner) != BM_OK || partner[mine] < 0)
            continue;
        struct bm_btl_dgram_endpoint *ep;
        if (bm_btl_dgram_endpoint_create(m, rank, &p->addr[partner[mine]], &ep) != BM_OK)
            continue;
        if (p->npeer > 1)
            wire_know_all(m, rank, p, partner[mine]);
        endpoints_out[i] = (struct bm_btl_endpoint *)ep;
        bm_util_bitmap_set(reachable, (size_t)i);
    }
    return BM_OK;
}

/* ---- re-pairing after a failed connectivity check ------------------------ */

static struct bm_btl_dgram_endpoint *our_ep(const struct bm_btl_dgram_component *d, int i, int rank)
{
    struct bm_btl_dgram_module *m = d->mods[i];
    return rank < m->neps ? m->eps[rank] : NULL;
}

/* "10.0.0.1 (eth0) -> 10.0.0.2 (eth0): no path; ..." for every excluded edge. */
static void excluded_list(const struct bm_btl_dgram_component *d, int rank,
                          const struct dgram_peer *p, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < d->nmods; i++)
        for (int j = 0; j < p->npeer; j++) {
            uint64_t bit = edge_bit(d, rank, i, j);
            if (!(p->excl & bit) || at + 1 >= len)
                continue;
            char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN], cause[96];
            uint32_t big = p->big[__builtin_ctzll(bit)];
            if (!(p->excl_mtu & bit))
                snprintf(cause, sizeof(cause), "no answer to small or full-size pings (no path)");
            else if (big)
                snprintf(cause, sizeof(cause),
                         "small pings answered, %u-byte ones lost (MTU problem)", big);
            else
                snprintf(cause, sizeof(cause),
                         "small pings answered, full-size ones lost (MTU problem)");
            inet_ntop(AF_INET, &d->mods[i]->addr.ipv4, a, sizeof(a));
            inet_ntop(AF_INET, &p->addr[j].ipv4, b, sizeof(b));
            int n = snprintf(buf + at, len - at, "%s%s (%s) -> %s (%s): %s", at ? "; " : "", a,
                             d->mods[i]->addr.ifname, b, p->addr[j].ifname, cause);
            if (n < 0)
                break;
            at += (size_t)n < len - at ? (size_t)n : len - at - 1;
        }
}

/* Re-solve the pairing with rank and move our endpoints to their new
 * partners; an endpoint whose module is left without one fails (the PML
 * moves its traffic), and when no pair is left at all the message names
 * every pair tried and what failed on it. */
static void repair_apply(struct bm_btl_dgram_component *d, int rank, struct dgram_peer *p)
{
    int partner[DGRAM_MAX_MODULES];
    if (pair_solve(d, rank, p, partner) != BM_OK)
        return;
    bool any = false; /* a pair left that can carry traffic (has an endpoint) */
    for (int i = 0; i < d->nmods; i++)
        any |= partner[i] >= 0 && our_ep(d, i, rank) != NULL;
    char tried[700];
    excluded_list(d, rank, p, tried, sizeof(tried));
    for (int i = 0; i < d->nmods; i++) {
        struct bm_btl_dgram_endpoint *ep = our_ep(d, i, rank);
        if (partner[i] >= 0 && !ep) {
            bm_log_info("dgram: re-pairing with rank %d chose %s, which has no endpoint for that "
                        "rank (none was created when the rank was added): that pair stays unused",
                        rank, d->mods[i]->super.name);
            continue;
        }
        if (!ep)
            continue;
        if (partner[i] >= 0) {
            /* A failed endpoint whose pair was not dropped keeps its
             * probes: only the probes tell that this pair works again. */
            if (partner[i] != ep->peer_index) {
                bm_btl_dgram_lock(ep->module);
                bm_btl_dgram_endpoint_retarget(ep, &p->addr[partner[i]]);
                bm_btl_dgram_unlock(ep->module);
            }
            continue;
        }
        if (ep->state == BM_DGRAM_EP_FAILED)
            continue;
        char why[900];
        if (any)
            snprintf(why, sizeof(why),
                     "re-pairing after failed connectivity checks left this interface without a "
                     "partner at rank %d (pairs dropped: %s); the other dgram pairs to that rank "
                     "carry its traffic",
                     rank, tried);
        else
            snprintf(why, sizeof(why),
                     "rank %d is unreachable on every dgram interface pair: %s. Fix the MTU "
                     "(or lower BM_BTL_DGRAM_MTU) or the routing/firewall between these addresses",
                     rank, tried);
        bm_btl_dgram_lock(ep->module);
        bm_btl_dgram_endpoint_fail(ep, why);
        bm_btl_dgram_unlock(ep->module);
    }
}

static void repair_announce(struct bm_btl_dgram_component *d, struct dgram_peer *p)
{
    if (!p->repair_pending)
        d->repairs_pending++;
    p->repair_pending = true;
    p->repair_nonce = (uint32_t)bm_btl_dgram_now() ^ (uint32_t)getpid() << 8;
    p->repair_tries = 0;
    p->repair_next_ns = 0;
}

/* Send the exclusions to the peer from every module of ours that has an
 * endpoint for it (the peer takes a REPAIR from any address it published),
 * failed ones too: a REPAIR is small, and on a pair dropped for its MTU
 * small datagrams still pass, so a peer left with no pair hears of it. */
static bool repair_send(const struct bm_btl_dgram_component *d, int rank,
                        const struct dgram_peer *p, uint8_t flags, uint32_t nonce)
{
    bool sent = false;
    for (int i = 0; i < d->nmods; i++) {
        struct bm_btl_dgram_endpoint *ep = our_ep(d, i, rank);
        if (!ep)
            continue;
        bm_btl_dgram_lock(ep->module);
        bm_btl_dgram_send_repair(ep, nonce, flags, p->excl, p->excl_mtu);
        bm_btl_dgram_unlock(ep->module);
        sent = true;
    }
    return sent;
}

static void repair_progress(struct bm_btl_dgram_component *d)
{
    uint64_t now = bm_btl_dgram_now();
    for (int r = 0; r < d->npeers && d->repairs_pending; r++) {
        struct dgram_peer *p = &d->peers[r];
        if (!p->repair_pending || now < p->repair_next_ns)
            continue;
        /* Given up after as many tries as a check makes: by then the new
         * pairs' own checks have decided whether they work. */
        if (p->repair_tries >= d->cfg.check_tries || !repair_send(d, r, p, 0, p->repair_nonce)) {
            p->repair_pending = false;
            d->repairs_pending--;
            continue;
        }
        p->repair_tries++;
        p->repair_next_ns = now + (uint64_t)d->cfg.check_ms * 1000000u;
    }
}

struct bm_btl_dgram_module *const *bm_btl_dgram_modules(struct bm_btl_dgram_module *m, int *n_out)
{
    if (!m->comp) { /* a module outside a component (unit tests) */
        *n_out = 0;
        return NULL;
    }
    *n_out = m->comp->nmods;
    return m->comp->mods;
}

void bm_btl_dgram_pair_check_failed(struct bm_btl_dgram_endpoint *ep, bool small_ok,
                                    const char *why)
{
    struct bm_btl_dgram_module *m = ep->module;
    struct bm_btl_dgram_component *d = m->comp;
    int i = m->addr.index;
    struct dgram_peer *p = NULL;
    if (d && ep->peer < d->npeers && i < d->nmods && d->mods[i] == m)
        p = &d->peers[ep->peer];
    if (!p || p->npeer == 0 || ep->peer_index >= p->npeer) {
        bm_btl_dgram_endpoint_fail(ep, why); /* a module outside the component (unit tests) */
        return;
    }
    uint64_t bit = edge_bit(d, ep->peer, i, ep->peer_index);
    p->excl |= bit;
    if (small_ok)
        p->excl_mtu |= bit;
    p->big[__builtin_ctzll(bit)] = (uint32_t)ep->mtu[BM_DGRAM_CH_DATA];
    bm_log_warn("dgram: connectivity check from %s to %s failed: %s. Dropping this interface pair "
                "and re-pairing the interfaces with rank %d",
                m->super.name, ep->peer_desc, why, ep->peer);
    repair_apply(d, ep->peer, p);
    repair_announce(d, p);
}

void bm_btl_dgram_repair_recv(struct bm_btl_dgram_module *m, int ch, const struct bm_dgram_hdr *h,
                              const struct bm_dgram_repair *r, const struct sockaddr_in *from)
{
    struct bm_btl_dgram_component *d = m->comp;
    int rank = (int)h->sender;
    int i = m->addr.index;
    struct dgram_peer *p = NULL;
    if (d && h->sender < (uint32_t)d->npeers && i < d->nmods && d->mods[i] == m)
        p = &d->peers[rank];
    const struct bm_btl_dgram_addr *src =
        p && h->src_module < p->npeer ? &p->addr[h->src_module] : NULL;
    if (!src || h->dst_module != i || from->sin_addr.s_addr != src->ipv4 ||
        from->sin_port != (ch == BM_DGRAM_CH_PRIO ? src->port_prio : src->port_data)) {
        m->stats.bad_sender++;
        return;
    }
    m->stats.recv_packets++;
    uint64_t valid = 0; /* edges that exist between our modules and the peer's */
    for (int a = 0; a < d->nmods; a++)
        for (int b = 0; b < p->npeer; b++)
            valid |= edge_bit(d, rank, a, b);
    uint64_t theirs = r->excluded & valid;
    uint64_t news = theirs & ~p->excl;
    bool they_lack = (p->excl & ~theirs) != 0;
    p->excl |= theirs;
    p->excl_mtu |= r->excl_mtu & theirs;
    if (news) {
        char tried[700];
        excluded_list(d, rank, p, tried, sizeof(tried));
        bm_log_info("dgram: rank %d dropped interface pairs with us (%s); re-pairing", rank, tried);
        /* the lock of m is held (receive path): repair_apply may touch
         * other modules, whose locks are taken by the calls it makes */
        repair_apply(d, rank, p);
    }
    if (r->flags & BM_DGRAM_REPAIR_F_ANSWER) {
        if (p->repair_pending && r->nonce == p->repair_nonce && !they_lack) {
            p->repair_pending = false;
            d->repairs_pending--;
        } else if (they_lack) {
            repair_announce(d, p);
        }
        return;
    }
    struct bm_btl_dgram_endpoint *ep = m->eps && rank < m->neps ? m->eps[rank] : NULL;
    if (ep)
        bm_btl_dgram_send_repair(ep, r->nonce, BM_DGRAM_REPAIR_F_ANSWER, p->excl, p->excl_mtu);
    else
        repair_send(d, rank, p, BM_DGRAM_REPAIR_F_ANSWER, r->nonce);
    if (they_lack)
        repair_announce(d, p);
}

static bm_status_t dgram_del_procs(struct bm_btl_module *bm, int nprocs, const int *ranks,
                                   struct bm_btl_endpoint **endpoints)
{
    struct bm_btl_dgram_module *m = (struct bm_btl_dgram_module *)bm;
    for (int i = 0; i < nprocs; i++) {
        (void)ranks;
        struct bm_btl_dgram_endpoint *ep = (struct bm_btl_dgram_endpoint *)endpoints[i];
        if (ep && ep->module == m)
            bm_btl_dgram_endpoint_destroy(ep);
    }
    return BM_OK;
}

const struct bm_btl_ops bm_btl_dgram_ops = {
    .name = "dgram",
    .description = "reliable messaging over UDP datagrams (the usnic design)",
    .params = &bm_btl_dgram_param_table,
    .caps = BM_BTL_CAP_THREADS | BM_BTL_CAP_WAIT | BM_BTL_CAP_SEND | BM_BTL_CAP_SEND_INPLACE |
            BM_BTL_CAP_PUT | BM_BTL_CAP_GET | BM_BTL_CAP_REG_MEM | BM_BTL_CAP_FAILOVER |
            BM_BTL_CAP_STATS | BM_BTL_CAP_RECV_PLACE,
    .query = dgram_query,
    .init = dgram_init,
    .progress = dgram_progress,
    .wait_fd = dgram_wait_fd,
    .wait_arm = dgram_wait_arm,
    .wait_disarm = dgram_wait_disarm,
    .finalize = dgram_finalize,
    .unacked = dgram_unacked,
    .add_procs = dgram_add_procs,
    .del_procs = dgram_del_procs,
    .alloc = bm_btl_dgram_alloc,
    .free = bm_btl_dgram_free,
    .prepare_src = bm_btl_dgram_prepare_src,
    .send = bm_btl_dgram_send,
    .put = bm_btl_dgram_put,
    .get = bm_btl_dgram_get,
    .register_mem = bm_btl_dgram_register_mem,
    .deregister_mem = bm_btl_dgram_deregister_mem,
    .flush = bm_btl_dgram_flush,
    .stats = bm_btl_dgram_path_stats,
};
