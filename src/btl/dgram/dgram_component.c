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

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define DGRAM_MAX_MODULES 8
#define DGRAM_MODEX_KEY   "btl.dgram"
/* MPI_THREAD_MULTIPLE's value (the transport layer does not include mpi.h) */
#define DGRAM_THREAD_MULTIPLE 3

static struct {
    struct bm_btl_dgram_config cfg;
    struct bm_btl_dgram_module *mods[DGRAM_MAX_MODULES];
    struct bm_btl_module *bmods[DGRAM_MAX_MODULES];
    int nmods;
    int me;
    unsigned idle; /* progress calls in a row that found nothing */
} dgram;

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
    return BM_OK;
}

static bm_status_t dgram_init(const struct bm_btl_init_args *args,
                              struct bm_btl_module ***modules_out, int *count_out)
{
    bm_status_t rc = bm_btl_dgram_config_load(&dgram.cfg);
    if (rc != BM_OK)
        return rc;
    dgram.cfg.thread_multiple = args && args->thread_level >= DGRAM_THREAD_MULTIPLE;
    const struct bm_rte_proc *self = bm_rte_self();
    dgram.me = self->rank;
    uint64_t key = job_key_of(self->jobid);
    struct dgram_if ifs[DGRAM_MAX_MODULES];
    int nif = if_enumerate(&dgram.cfg, ifs, DGRAM_MAX_MODULES);
    dgram.nmods = 0;
    for (int i = 0; i < nif; i++) {
        struct bm_btl_dgram_module *m;
        if (bm_btl_dgram_module_create(&dgram.cfg, ifs[i].name, ifs[i].ip, ifs[i].mask, ifs[i].mtu,
                                       ifs[i].speed, dgram.nmods, self->rank, key, &m) != BM_OK)
            continue; /* reported; other interfaces may work */
        dgram.mods[dgram.nmods] = m;
        dgram.bmods[dgram.nmods] = &m->super;
        dgram.nmods++;
    }
    if (dgram.nmods > 1) {
        /* Interfaces close to our cores (hwloc) get the better latency
         * class; with one interface there is nothing to rank. */
        const char *names[DGRAM_MAX_MODULES];
        int near[DGRAM_MAX_MODULES];
        for (int i = 0; i < dgram.nmods; i++)
            names[i] = dgram.mods[i]->addr.ifname;
        bm_btl_dgram_topo_near(names, dgram.nmods, near);
        for (int i = 0; i < dgram.nmods; i++)
            if (near[i] == 0)
                dgram.mods[i]->super.latency += 1;
    }
    if (dgram.nmods > 0) {
        struct bm_btl_dgram_addr addrs[DGRAM_MAX_MODULES];
        for (int i = 0; i < dgram.nmods; i++)
            addrs[i] = dgram.mods[i]->addr;
        rc = bm_rte_modex_put(DGRAM_MODEX_KEY, addrs, sizeof(addrs[0]) * (size_t)dgram.nmods);
        if (rc != BM_OK) {
            for (int i = 0; i < dgram.nmods; i++)
                bm_btl_dgram_module_destroy(dgram.mods[i]);
            dgram.nmods = 0;
            return rc;
        }
    }
    *modules_out = dgram.bmods;
    *count_out = dgram.nmods;
    return BM_OK;
}

static int dgram_progress(void)
{
    int n = 0;
    for (int i = 0; i < dgram.nmods; i++)
        n += bm_btl_dgram_module_progress(dgram.mods[i]);
    /* A peer on an oversubscribed node only runs when we give the core
     * away: after a long idle spin, yield once (a no-op when nothing else
     * is runnable). Measured on the 2-core test bed under load: the
     * ping-pong latency over dgram fell several times. */
    if (n == 0) {
        if (++dgram.idle >= 256) {
            dgram.idle = 0;
            sched_yield();
        }
    } else {
        dgram.idle = 0;
    }
    return n;
}

static void dgram_finalize(void)
{
    for (int i = 0; i < dgram.nmods; i++) {
        if (dgram.cfg.stats > 0)
            bm_btl_dgram_stats_print(dgram.mods[i]);
        bm_btl_dgram_module_destroy(dgram.mods[i]);
    }
    dgram.nmods = 0;
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

static bm_status_t dgram_add_procs(struct bm_btl_module *bm, int nprocs, const int *ranks,
                                   struct bm_btl_endpoint **endpoints_out,
                                   struct bm_util_bitmap *reachable)
{
    struct bm_btl_dgram_module *m = (struct bm_btl_dgram_module *)bm;
    int mine = m->addr.index;
    bm_btl_dgram_timers_reserve(m, (uint32_t)m->cfg.window * (uint32_t)(nprocs < 64 ? nprocs : 64));
    for (int i = 0; i < nprocs; i++) {
        int rank = ranks[i];
        if (rank == dgram.me)
            continue; /* self reaches ourselves */
        const void *blob;
        size_t len;
        if (bm_rte_modex_get(rank, DGRAM_MODEX_KEY, &blob, &len) != BM_OK || len == 0 ||
            len % sizeof(struct bm_btl_dgram_addr) != 0)
            continue;
        int npeer = (int)(len / sizeof(struct bm_btl_dgram_addr));
        if (npeer > DGRAM_MAX_MODULES)
            npeer = DGRAM_MAX_MODULES;
        const struct bm_btl_dgram_addr *pa = blob;
        bool same_node = bm_rte_node_of(rank) == bm_rte_node_of(dgram.me);
        bool me_rows = dgram.me < rank;
        int nr = me_rows ? dgram.nmods : npeer, nc = me_rows ? npeer : dgram.nmods;
        /* The lower rank's modules are the rows, so both sides solve the
         * same matrix and agree on the pairs. */
        int64_t w[DGRAM_MAX_MODULES * DGRAM_MAX_MODULES];
        for (int r = 0; r < nr; r++)
            for (int c = 0; c < nc; c++) {
                const struct bm_btl_dgram_addr *a = me_rows ? &dgram.mods[r]->addr : &pa[r];
                const struct bm_btl_dgram_addr *b = me_rows ? &pa[c] : &dgram.mods[c]->addr;
                int wt = pair_weight(a, b, same_node);
                w[r * nc + c] = wt > 0 ? wt : BM_UTIL_GRAPH_NO_EDGE;
            }
        int match[DGRAM_MAX_MODULES];
        if (bm_util_graph_match((size_t)nr, (size_t)nc, w, match, NULL) != BM_OK)
            continue;
        int partner = -1;
        if (me_rows) {
            partner = match[mine];
        } else {
            for (int r = 0; r < nr; r++)
                if (match[r] == mine)
                    partner = r;
        }
        if (partner < 0)
            continue;
        struct bm_btl_dgram_endpoint *ep;
        if (bm_btl_dgram_endpoint_create(m, rank, &pa[partner], &ep) != BM_OK)
            continue;
        endpoints_out[i] = (struct bm_btl_endpoint *)ep;
        bm_util_bitmap_set(reachable, (size_t)i);
    }
    return BM_OK;
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
    .query = dgram_query,
    .init = dgram_init,
    .progress = dgram_progress,
    .finalize = dgram_finalize,
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
};
