/* The ofi transport component: its parameters (BM_BTL_OFI_*), whether it
 * is worth loading libfabric at all (query), start-up (choose the provider
 * and its domains, open one module per domain, start the memory monitor,
 * publish every module's address under "btl.ofi"), progress over every
 * context of every module, and finalize. The one const ops table is at the
 * end.
 *
 * Loading libfabric costs every process 0.2 s and its first query another
 * 0.3 s here (its providers initialise), so the component loads it only
 * when BM_BTL names ofi or when this machine has an RDMA device
 * (/sys/class/infiniband, a Cray CXI or Omni-Path device). With only the
 * software providers (tcp;ofi_rxm, sockets, udp;ofi_rxd, shm), which move
 * data through the same kernel paths as our own tcp and dgram transports,
 * ofi's exclusivity is below tcp and dgram and BM_BTL must ask for it
 * (BM_BTL=self,sm,ofi); a hardware provider's is above them. */
#define BM_LOG_SUBSYS "btl/ofi"
#include "btl/ofi/ofi.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/params.h"

#include <dirent.h>
#include <rdma/fi_errno.h>
#include <sched.h>
#include <sys/epoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OFI_CFG(f)          offsetof(struct bm_btl_ofi_config, f)
#define OFI_THREAD_MULTIPLE 3 /* MPI_THREAD_MULTIPLE (the transport cannot include mpi.h) */

static const struct bm_param ofi_params[] = {
    {"BM_BTL_OFI_PROVIDER_INCLUDE", BM_PARAM_STRING, "", 0, 0, NULL,
     "Use only these libfabric providers: a comma list of provider chains (\"tcp;ofi_rxm\") or "
     "single providers (\"tcp\", \"verbs\", \"efa\"). Empty: libfabric's first provider that "
     "offers reliable-datagram endpoints with RMA. FI_PROVIDER is honoured as well (libfabric "
     "applies it first).",
     OFI_CFG(prov_include), 0},
    {"BM_BTL_OFI_PROVIDER_EXCLUDE", BM_PARAM_STRING, "", 0, 0, NULL,
     "Never use these libfabric providers (same syntax as BM_BTL_OFI_PROVIDER_INCLUDE).",
     OFI_CFG(prov_exclude), 0},
    {"BM_BTL_OFI_DOMAIN_INCLUDE", BM_PARAM_STRING, "", 0, 0, NULL,
     "Use only these domains (NICs, or interfaces for the socket providers), comma-separated. "
     "Empty: every domain of the chosen provider, loopback ones only when there is nothing "
     "else. One module is opened per domain and the PML stripes over them.",
     OFI_CFG(domain_include), 0},
    {"BM_BTL_OFI_CONTEXTS", BM_PARAM_INT, "1", 1, 64, NULL,
     "Transmit/receive contexts per module (a scalable endpoint when the provider has them). "
     "With MPI_THREAD_MULTIPLE each thread uses its own context; advised: the number of "
     "cores. Providers without scalable endpoints alias one endpoint.",
     OFI_CFG(contexts), 0},
    {"BM_BTL_OFI_DISABLE_SEP", BM_PARAM_BOOL, "0", 0, 0, NULL,
     "Never open a scalable endpoint: every context aliases one endpoint.", OFI_CFG(disable_sep),
     0},
    {"BM_BTL_OFI_MR_LOCAL", BM_PARAM_ENUM, "auto", 0, 0, "auto|on",
     "Register local buffers and pass their descriptors: auto when the provider asks for it "
     "(FI_MR_LOCAL); on always (tests the path on providers that do not need it).",
     OFI_CFG(mr_local), BM_PARAM_F_DEBUG},
    {"BM_BTL_OFI_MR_MODE", BM_PARAM_ENUM, "auto", 0, 0, "auto|basic",
     "Registration modes offered to providers: auto offers every mode we handle and the "
     "provider picks; basic asks for libfabric 1.4's FI_MR_BASIC (provider-chosen keys, "
     "virtual addresses, allocated memory only), which the software providers honour (tests "
     "the FI_MR_PROV_KEY, FI_MR_VIRT_ADDR and FI_MR_ALLOCATED paths on them).",
     OFI_CFG(mr_mode), BM_PARAM_F_DEBUG},
    {"BM_BTL_OFI_MR_CACHE", BM_PARAM_BOOL, "1", 0, 0, NULL,
     "Keep registrations of local buffers for reuse (registration cache).", OFI_CFG(mr_cache), 0},
    {"BM_BTL_OFI_MR_CACHE_MAX", BM_PARAM_INT, "256", 0, 1 << 20, NULL,
     "Unused registrations the cache keeps per module before the least recently used goes.",
     OFI_CFG(mr_cache_max), 0},
    {"BM_BTL_OFI_MR_MONITOR", BM_PARAM_ENUM, "auto", 0, 0, "auto|on|off",
     "Watch cached registrations for memory that is unmapped or freed (userfaultfd, one helper "
     "thread) so that a later buffer at the same address never reuses a stale registration. "
     "auto: when the provider pins memory (hardware providers; the software ones reach memory "
     "by address, where a stale entry is harmless). Without a monitor, providers that pin "
     "memory register every buffer afresh.",
     OFI_CFG(mr_monitor), 0},
    {"BM_BTL_OFI_EXCLUSIVITY", BM_PARAM_INT, "-1", -1, 1000, NULL,
     "Selection priority against the other transports. -1: 100 for a hardware provider (above "
     "tcp 20 and dgram 10), 5 for a software one (tcp, sockets, udp, shm: below them, so "
     "BM_BTL must name ofi). Equal to another transport's value, both carry traffic.",
     OFI_CFG(exclusivity), 0},
    {"BM_BTL_OFI_EAGER_LIMIT", BM_PARAM_SIZE, "16k", 256, 1LL << 20, NULL,
     "Largest message sent eagerly (PML header included).", OFI_CFG(eager_limit), 0},
    {"BM_BTL_OFI_MAX_SEND_SIZE", BM_PARAM_SIZE, "512k", 4096, 64LL << 20, NULL,
     "Largest fragment of a large message.", OFI_CFG(max_send_size), 0},
    {"BM_BTL_OFI_RNDV_GET", BM_PARAM_SIZE, "64k", 0, 1LL << 40, NULL,
     "Messages of at least this many bytes (and BM_PML_RGET_LIMIT) are read by the receiver "
     "straight from the sender's registered buffer with the provider's RMA read (the PML's "
     "RGET) instead of being sent in fragments, which land in posted buffers and are copied "
     "again. 0: always fragments.",
     OFI_CFG(rndv_get), 0},
    {"BM_BTL_OFI_RECV_BUF_SIZE", BM_PARAM_SIZE, "4m", 8192, 1LL << 30, NULL,
     "Bytes of one posted multi-receive buffer (at least two largest fragments).",
     OFI_CFG(recv_buf_size), 0},
    {"BM_BTL_OFI_RECV_BUFS", BM_PARAM_INT, "4", 2, 1024, NULL,
     "Multi-receive buffers posted per context.", OFI_CFG(recv_bufs), 0},
    {"BM_BTL_OFI_TIMEOUT", BM_PARAM_INT, "30000", 0, 3600000, NULL,
     "Milliseconds an operation may stay without completion before its path is declared "
     "failed (a dead link gives no error with connection-based providers for minutes). A "
     "target that computes without calling MPI delays completions with manual-progress "
     "providers: keep this above your longest such phase. 0: never.",
     OFI_CFG(timeout_ms), 0},
    {"BM_BTL_OFI_PROBE_INTERVAL", BM_PARAM_INT, "1000", 0, 3600000, NULL,
     "Milliseconds between probes of a failed path; when one is delivered the path is "
     "reported recovered and used again. 0: never.",
     OFI_CFG(probe_ms), 0},
    {"BM_BTL_OFI_ACKS", BM_PARAM_ENUM, "auto", 0, 0, "auto|on|off",
     "Confirm the delivery of every message with our own acknowledgements (piggybacked on "
     "replies, else one short message per progress call) before reporting it sent. auto: for "
     "the socket providers across a network, whose completions do not prove delivery (a "
     "message lost with a failed link would be lost for good: the PML could not resend it), "
     "except towards a peer on this host whose connection goes through lo. on: towards every "
     "peer.",
     OFI_CFG(acks), 0},
    {"BM_BTL_OFI_STATS", BM_PARAM_BOOL, "0", 0, 0, NULL,
     "Print each module's counters (messages, RMA, atomics, acknowledgements, probes, path "
     "failures) at finalize, one line per module on stderr.",
     OFI_CFG(stats), 0},
    {"BM_BTL_OFI_CONGESTION", BM_PARAM_STRING, "auto", 0, 0, NULL,
     "TCP congestion control of a socket provider's connections (tcp under rxm, sockets), set "
     "on them after the peer's first message (libfabric has no socket-option hook). auto: reno "
     "on connections whose two ends are this host, where the kernel's default bbr paces and "
     "costs about twice the CPU per byte (as BM_BTL_TCP_CONGESTION); default: never set; a "
     "name (reno, cubic, bbr): that algorithm on every provider connection.",
     OFI_CFG(congestion), 0},
    {"BM_BTL_OFI_MAX_MODULES", BM_PARAM_INT, "8", 1, 64, NULL,
     "Domains (NICs) opened at most, closest first.", OFI_CFG(max_modules), 0},
};
static const struct bm_param_table ofi_param_table = {"btl/ofi", ofi_params,
                                                      BM_PARAM_COUNT(ofi_params)};
BM_PARAM_TABLE_REGISTER(ofi_param_table);

/* ---- query ------------------------------------------------------------------ */

/* BM_BTL is an include list that names ofi. */
static bool ofi_named(void)
{
    const char *sel = getenv("BM_BTL");
    while (sel && *sel == ' ')
        sel++;
    return sel && *sel != '^' && bm_btl_ofi_list_has(sel, "ofi", 3);
}

/* An RDMA device that a hardware provider could drive. */
static bool ofi_rdma_device(char *what, size_t len)
{
    DIR *d = opendir("/sys/class/infiniband");
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            if (e->d_name[0] != '.') {
                snprintf(what, len, "RDMA device %s", e->d_name);
                closedir(d);
                return true;
            }
        closedir(d);
    }
    static const char *const devs[] = {"/dev/cxi0", "/dev/hfi1_0", "/dev/hfi1"};
    for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++)
        if (access(devs[i], F_OK) == 0) {
            snprintf(what, len, "device %s", devs[i]);
            return true;
        }
    return false;
}

static uint32_t ofi_api_version(void)
{
    uint32_t lib = fi_version();
    uint32_t hdr = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
    return lib && lib < hdr ? lib : hdr;
}

static bm_status_t bm_btl_ofi_query(char *why, size_t whylen)
{
    char dev[300] = "";
    bool named = ofi_named();
    if (!named && !ofi_rdma_device(dev, sizeof(dev))) {
        snprintf(why, whylen,
                 "no RDMA device here (/sys/class/infiniband is empty); libfabric's software "
                 "providers (tcp;ofi_rxm, sockets, udp;ofi_rxd, shm) are used only when BM_BTL "
                 "names ofi, e.g. BM_BTL=self,sm,ofi (run BM_BTL=self,ofi bm_info to see which "
                 "providers work here)");
        return BM_ERR_NOT_AVAILABLE;
    }
    uint32_t v = fi_version();
    if (v == 0 || FI_MAJOR(v) < 1 || (FI_MAJOR(v) == 1 && FI_MINOR(v) < 5)) {
        snprintf(why, whylen, "%s",
                 v == 0 ? fi_strerror(FI_ENOSYS) : "libfabric older than API 1.5");
        return BM_ERR_NOT_AVAILABLE;
    }
    struct bm_btl_ofi_component probe;
    memset(&probe, 0, sizeof(probe));
    if (bm_util_params_load(&ofi_param_table, &probe.cfg) != BM_OK) {
        snprintf(why, whylen, "bad BM_BTL_OFI_* parameter (see the message above)");
        return BM_ERR_BAD_PARAM;
    }
    probe.api_version = ofi_api_version();
    probe.querying = true;
    struct fi_info **infos = NULL;
    int n = 0;
    if (bm_btl_ofi_provider_select(&probe, &infos, &n) != BM_OK) {
        snprintf(why, whylen, "%s", probe.why);
        return BM_ERR_NOT_AVAILABLE;
    }
    const char *prov = infos[0]->fabric_attr->prov_name;
    bool soft = bm_btl_ofi_provider_is_software(prov);
    int off = snprintf(why, whylen, "libfabric %u.%u, provider %s on %d domain(s): ", FI_MAJOR(v),
                       FI_MINOR(v), prov, n);
    for (int i = 0; i < n && off > 0 && (size_t)off < whylen; i++)
        off += snprintf(why + off, whylen - (size_t)off, "%s%s", i ? ", " : "",
                        infos[i]->domain_attr->name);
    if (off > 0 && (size_t)off < whylen)
        off += snprintf(why + off, whylen - (size_t)off,
                        soft ? "; a software provider: exclusivity 5, below tcp and dgram "
                               "(BM_BTL must name ofi)"
                             : "; a hardware provider (%s): exclusivity 100, above tcp and dgram",
                        dev[0] ? dev : "RDMA NIC");
    char others[1024];
    bm_btl_ofi_provider_survey(&probe, prov, others, sizeof(others));
    if (others[0] && off > 0 && (size_t)off < whylen)
        snprintf(why + off, whylen - (size_t)off, ". Also offered here: %s", others);
    for (int i = 0; i < n; i++)
        fi_freeinfo(infos[i]);
    free(infos);
    return BM_OK;
}

/* ---- init ------------------------------------------------------------------------ */

static bm_status_t ofi_publish(struct bm_btl_ofi_component *c)
{
    size_t len = sizeof(struct bm_btl_ofi_modex_hdr);
    for (int i = 0; i < c->nmodules; i++)
        len += sizeof(struct bm_btl_ofi_modex_module) + ((c->modules[i]->addrlen + 7u) & ~7u);
    uint8_t *buf = calloc(1, len);
    if (!buf)
        return BM_ERR_NO_MEMORY;
    struct bm_btl_ofi_modex_hdr *h = (struct bm_btl_ofi_modex_hdr *)buf;
    h->magic = BM_BTL_OFI_MODEX_MAGIC;
    h->version = BM_BTL_OFI_MODEX_VERSION;
    h->nmodules = (uint16_t)c->nmodules;
    uint8_t *p = buf + sizeof(*h);
    for (int i = 0; i < c->nmodules; i++) {
        const struct bm_btl_ofi_module *m = c->modules[i];
        struct bm_btl_ofi_modex_module *r = (struct bm_btl_ofi_modex_module *)p;
        snprintf(r->prov_name, sizeof(r->prov_name), "%s", m->prov_name);
        snprintf(r->fabric_name, sizeof(r->fabric_name), "%s", m->fabric_name);
        snprintf(r->domain_name, sizeof(r->domain_name), "%s", m->domain_name);
        r->addr_format = m->info->addr_format;
        r->addrlen = (uint16_t)m->addrlen;
        r->nrx = (uint16_t)m->nctx;
        r->rx_ctx_bits = (uint16_t)m->rx_ctx_bits;
        r->flags = m->loopback ? BM_BTL_OFI_MOD_F_LOOPBACK : 0;
        r->bandwidth = m->super.bandwidth;
        memcpy(p + sizeof(*r), m->addr, m->addrlen);
        p += sizeof(*r) + ((m->addrlen + 7u) & ~7u);
    }
    bm_status_t rc = bm_btl_rte_modex_put(c->rte, "btl.ofi", buf, len);
    free(buf);
    return rc;
}

static void ofi_stats_print(const struct bm_btl_ofi_module *m)
{
    char line[1024];
    size_t off = (size_t)snprintf(line, sizeof(line), "[ofi stats] rank %d %s: mr_mode=0x%llx%s",
                                  m->comp->rank, m->super.name, (unsigned long long)m->mr_mode,
                                  m->mr_local ? " (local)" : "");
#define BM_BTL_OFI_STATS_PRINT(name, help)                                                         \
    if (off < sizeof(line))                                                                        \
        off += (size_t)snprintf(line + off, sizeof(line) - off, " %s=%llu", #name,                 \
                                (unsigned long long)atomic_load(&m->stats.name));
    BM_BTL_OFI_STATS_MAP(BM_BTL_OFI_STATS_PRINT)
#undef BM_BTL_OFI_STATS_PRINT
    fprintf(stderr, "%s\n", line);
}

/* btl.h "Sleeping": one epoll set holding every context's completion-queue
 * descriptor (FI_WAIT_FD: readable when the provider may have work, e.g.
 * rxm's when a tcp socket has data) is the transport's wait descriptor. A
 * context without one (shm has none) makes sleepers nap. */
static void wait_set_up(struct bm_btl_ofi_component *c)
{
    c->wait_epfd = epoll_create1(EPOLL_CLOEXEC);
    if (c->wait_epfd < 0) {
        c->wait_nap = true;
        return;
    }
    for (int i = 0; i < c->nmodules; i++)
        for (int k = 0; k < c->modules[i]->nctx; k++) {
            int fd = c->modules[i]->ctx[k].wait_fd;
            struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
            if (fd < 0 || epoll_ctl(c->wait_epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
                c->wait_nap = true;
        }
}

static int ofi_wait_fd(struct bm_btl_component *comp)
{
    return ((struct bm_btl_ofi_component *)comp)->wait_epfd;
}

#define OFI_WAIT_NAP_NS 1000000ll /* a nap when the caller gives none */

/* Work now (acknowledgements owed, completions the provider holds), else
 * arm every queue (fi_trywait) and say how long the watcher may wait:
 * its 100 ms period while something is in flight or a peer must answer. */
static int ofi_wait_arm(struct bm_btl_component *comp, int64_t *timeout_ns)
{
    struct bm_btl_ofi_component *c = (struct bm_btl_ofi_component *)comp;
    /* The caller's nap (its value on entry) when a queue has no descriptor. */
    int64_t nap = *timeout_ns >= 0 ? *timeout_ns : OFI_WAIT_NAP_NS;
    *timeout_ns = (c->wait_nap || c->wait_epfd < 0) && c->nmodules > 0 ? nap : -1;
    uint64_t now = 0;
    for (int i = 0; i < c->nmodules; i++) {
        struct bm_btl_ofi_module *m = c->modules[i];
        if (m->mt)
            pthread_mutex_lock(&m->ack_lock);
        int owed = m->nack_list;
        if (m->mt)
            pthread_mutex_unlock(&m->ack_lock);
        if (owed > 0 || atomic_load(&m->fail_due))
            return 1;
        struct fid *fids[BM_OFI_MAX_CTX];
        int n = 0;
        for (int k = 0; k < m->nctx && n < BM_OFI_MAX_CTX; k++)
            if (m->ctx[k].wait_fd >= 0)
                fids[n++] = &m->ctx[k].cq->fid;
        if (n > 0) {
            int rc = fi_trywait(m->fabric, fids, n);
            if (rc == -FI_EAGAIN)
                return 1;
            if (rc != 0 && *timeout_ns < 0)
                *timeout_ns = nap; /* cannot arm: nap */
        }
        if (bm_btl_ofi_watch_due(m)) {
            if (!now)
                now = bm_util_clock_now_ns();
            uint64_t next = atomic_load_explicit(&m->next_watch, memory_order_relaxed);
            int64_t due = next > now ? (int64_t)(next - now) : 0;
            if (*timeout_ns < 0 || due < *timeout_ns)
                *timeout_ns = due;
        }
    }
    return 0;
}

static void ofi_wait_disarm(struct bm_btl_component *comp)
{
    (void)comp; /* level-triggered: progress reads the queues */
}

static void ofi_component_destroy(struct bm_btl_ofi_component *c)
{
    if (!c)
        return;
    for (int i = 0; c->cfg.stats && i < c->nmodules; i++)
        ofi_stats_print(c->modules[i]);
    /* The monitor first: it walks the modules. */
    bm_btl_ofi_monitor_stop(c->monitor);
    c->monitor = NULL;
    for (int i = 0; i < c->nmodules; i++)
        bm_btl_ofi_module_close(c->modules[i]);
    free(c->modules);
    if (c->wait_epfd >= 0)
        close(c->wait_epfd);
    if (c->thread_key_made)
        pthread_key_delete(c->thread_key);
    free(c);
}

static bm_status_t ofi_component_create(const struct bm_btl_init_args *args,
                                        struct bm_btl_ofi_component **comp_out)
{
    struct bm_btl_ofi_component *c = calloc(1, sizeof(*c));
    if (!c)
        return BM_ERR_NO_MEMORY;
    bm_status_t rc = bm_util_params_load(&ofi_param_table, &c->cfg);
    if (rc != BM_OK) {
        free(c);
        return rc;
    }
    c->super.ops = &bm_btl_ofi_ops;
    c->super.rte = c->rte = args->rte ? args->rte : bm_btl_rte_default();
    c->thread_key_made = pthread_key_create(&c->thread_key, NULL) == 0;
    if (!c->thread_key_made) {
        free(c);
        return BM_ERR_NO_MEMORY;
    }
    const struct bm_rte_proc *self = bm_btl_rte_self(c->rte);
    c->rank = self->rank;
    c->size = self->size;
    c->node = self->node;
    c->mt = args && args->thread_level >= OFI_THREAD_MULTIPLE;
    c->sleepers = args && args->sleepers;
    c->wait_epfd = -1;
    c->api_version = ofi_api_version();
    struct fi_info **infos = NULL;
    int n = 0;
    if (bm_btl_ofi_provider_select(c, &infos, &n) != BM_OK) {
        bm_log_info("%s", c->why);
        c->super.modules = (struct bm_btl_module **)c->modules;
        *comp_out = c; /* no modules: reaches nobody */
        return BM_OK;
    }
    if (bm_btl_ofi_provider_is_software(infos[0]->fabric_attr->prov_name) && !ofi_named()) {
        bm_log_info("provider %s is a software one: used only when BM_BTL names ofi",
                    infos[0]->fabric_attr->prov_name);
        n = 0;
    }
    c->modules = calloc((size_t)(n ? n : 1), sizeof(*c->modules));
    if (!c->modules)
        rc = BM_ERR_NO_MEMORY;
    int near[64];
    bm_btl_ofi_topo_near(infos, n < 64 ? n : 64, near);
    for (int i = 0; i < n && rc == BM_OK; i++) {
        struct bm_btl_ofi_module *m;
        if (bm_btl_ofi_module_open(c, c->nmodules, infos[i], i < 64 ? near[i] : -1, &m) == BM_OK)
            c->modules[c->nmodules++] = m;
    }
    for (int i = 0; infos && infos[i]; i++)
        fi_freeinfo(infos[i]);
    free(infos);
    if (rc != BM_OK)
        goto err;
    if (c->nmodules > 0) {
        bool pins = false;
        for (int i = 0; i < c->nmodules; i++)
            pins |= !c->modules[i]->software;
        /* Software providers reach memory by address: a stale cache entry
         * is harmless there, so by default the monitor thread runs only
         * when a provider pins memory. */
        if (c->cfg.mr_cache && (c->cfg.mr_monitor == BM_OFI_MR_MONITOR_ON ||
                                (c->cfg.mr_monitor == BM_OFI_MR_MONITOR_AUTO && pins))) {
            char why[160];
            c->monitor = bm_btl_ofi_monitor_start(c, why, sizeof(why));
            if (!c->monitor)
                bm_log_info("no memory monitor (%s): registrations of providers that pin memory "
                            "are not cached",
                            why);
        }
        if ((rc = ofi_publish(c)) != BM_OK)
            goto err;
        if (c->sleepers)
            wait_set_up(c);
    }
    c->super.modules = (struct bm_btl_module **)c->modules;
    c->super.count = c->nmodules;
    *comp_out = c;
    return BM_OK;
err:
    ofi_component_destroy(c);
    return rc;
}

static int ofi_component_progress(struct bm_btl_ofi_component *c)
{
    int n = 0;
    for (int i = 0; i < c->nmodules; i++) {
        struct bm_btl_ofi_module *m = c->modules[i];
        int got = 0;
        bm_btl_ofi_endpoint_fail_run(m);
        for (int k = 0; k < m->nctx; k++)
            got += bm_btl_ofi_context_progress(&m->ctx[k]);
        n += got;
        /* A software provider with its own progress thread (sockets: the
         * sender's thread sends, the target's applies and answers, the
         * sender's reports) completes an RDMA operation or atomic only
         * when its threads get a core. A caller polling for that
         * completion gives its core away after each pass that found
         * nothing, so that it never takes the time slice those threads
         * need (measured, 8 B MPI_Put + MPI_Win_flush over sockets on 2
         * cores under load 19: 52-56 us in 6 of 6 rounds, against 50-330
         * us, median 105, spinning). With nothing in flight, or a provider
         * we drive ourselves (manual progress) or a NIC, it never yields. */
        if (got == 0 && m->yield_rdma &&
            atomic_load_explicit(&m->outstanding, memory_order_relaxed) > 0) {
            BM_OFI_COUNT(m, rdma_yields);
            sched_yield();
        }
        bm_btl_ofi_ack_flush(m);
        if ((c->cfg.timeout_ms > 0 || atomic_load(&m->nfailed) > 0) &&
            (!m->mt || pthread_mutex_trylock(&m->watch_lock) == 0)) {
            uint64_t now = bm_util_clock_now_ns();
            if (now >= atomic_load_explicit(&m->next_watch, memory_order_relaxed)) {
                /* every 100 ms */
                atomic_store_explicit(&m->next_watch, now + 100000000ull, memory_order_relaxed);
                bm_btl_ofi_endpoint_watch(m, now);
            }
            if (m->mt)
                pthread_mutex_unlock(&m->watch_lock);
        }
    }
    return n;
}

/* ---- the ops table's entries ----------------------------------------------------------- */

static bm_status_t bm_btl_ofi_init(const struct bm_btl_init_args *args,
                                   struct bm_btl_component **component_out)
{
    struct bm_btl_ofi_component *c;
    bm_status_t rc = ofi_component_create(args, &c);
    if (rc == BM_OK)
        *component_out = &c->super;
    return rc;
}

static int bm_btl_ofi_progress(struct bm_btl_component *c)
{
    return ofi_component_progress((struct bm_btl_ofi_component *)c);
}

static void bm_btl_ofi_finalize(struct bm_btl_component *c)
{
    ofi_component_destroy((struct bm_btl_ofi_component *)c);
}

const struct bm_btl_ops bm_btl_ofi_ops = {
    .name = "ofi",
    .description = "libfabric reliable-datagram endpoints (FI_EP_RDM): RDMA put/get, atomics and "
                   "messaging over any provider (verbs, efa, psm2/3, cxi; tcp, sockets, udp, shm "
                   "here), one module per NIC",
    .params = &ofi_param_table,
    .caps = BM_BTL_CAP_SEND | BM_BTL_CAP_SENDI | BM_BTL_CAP_SEND_INPLACE | BM_BTL_CAP_ORDERED |
            BM_BTL_CAP_PUT | BM_BTL_CAP_GET | BM_BTL_CAP_ATOMIC_OPS | BM_BTL_CAP_ATOMIC_FOPS |
            BM_BTL_CAP_REG_MEM | BM_BTL_CAP_FAILOVER | BM_BTL_CAP_WAIT | BM_BTL_CAP_RNDV_GET |
            BM_BTL_CAP_THREADS,
    .query = bm_btl_ofi_query,
    .init = bm_btl_ofi_init,
    .progress = bm_btl_ofi_progress,
    .wait_fd = ofi_wait_fd,
    .wait_arm = ofi_wait_arm,
    .wait_disarm = ofi_wait_disarm,
    .finalize = bm_btl_ofi_finalize,
    .add_procs = bm_btl_ofi_add_procs,
    .del_procs = bm_btl_ofi_del_procs,
    .alloc = bm_btl_ofi_alloc,
    .free = bm_btl_ofi_free,
    .prepare_src = bm_btl_ofi_prepare_src,
    .send = bm_btl_ofi_send,
    .sendi = bm_btl_ofi_sendi,
    .put = bm_btl_ofi_put,
    .get = bm_btl_ofi_get,
    .atomic_op = bm_btl_ofi_atomic_op,
    .atomic_op_n = bm_btl_ofi_atomic_op_n,
    .atomic_fop = bm_btl_ofi_atomic_fop,
    .atomic_cswap = bm_btl_ofi_atomic_cswap,
    .register_mem = bm_btl_ofi_register_mem,
    .deregister_mem = bm_btl_ofi_deregister_mem,
    .flush = bm_btl_ofi_flush,
};
