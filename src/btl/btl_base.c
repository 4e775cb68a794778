/* Transport selection and the per-peer transport sets. bm_btl_base_open reads
 * BM_BTL (an include list "self,sm" or an exclude list "^tcp,dgram"), asks
 * every selected transport whether it is usable here and initialises it (its
 * modules publish their addresses in the modex). After the modex fence,
 * bm_btl_base_add_procs asks every module which ranks it reaches and builds,
 * for each peer, the eager, send and RDMA path lists (Open MPI's BML): the
 * modules of the highest exclusivity that reach it first (class 0), then,
 * as standby, those of each lower exclusivity (classes 1, 2, ...) when the
 * top class can fail while the peer lives (btl.h, struct bm_btl_peer).
 * Everything else is fan-out: receive and error callbacks go to every
 * module, progress goes to every component that has something to reach
 * (components that only stand by are polled about once a millisecond, and
 * at full rate for a while after they had work), close tears it all down. */
#define BM_LOG_SUBSYS "btl"
#include "btl/btl.h"
#include "runtime/rte.h"
#include "util/clock.h"
#include "util/help.h"
#include "util/log.h"
#include "util/params.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct btl_base_config {
    const char *selection;
};

static const struct bm_param btl_base_params[] = {
    {"BM_BTL", BM_PARAM_STRING, "", 0, 0, NULL,
     "Transports to use. A comma list includes exactly those (\"self,sm,tcp\"); a list "
     "starting with ^ excludes those and keeps the rest (\"^dgram,ofi\"). Empty: every "
     "transport built in and usable here. Include self whenever a process may send to itself.",
     offsetof(struct btl_base_config, selection), 0},
};
static const struct bm_param_table btl_base_table = {"btl", btl_base_params,
                                                     BM_PARAM_COUNT(btl_base_params)};
BM_PARAM_TABLE_REGISTER(btl_base_table);

/* Help topics for the cases the general "btl-unreachable" (different hosts)
 * does not fit: a process that cannot reach itself, and two processes on
 * one host. */
static const struct bm_util_help_topic btl_base_help[] = {
    {"btl-unreachable-self", "A process cannot send to itself",
     "rank (int), host (string), transports tried (string), BM_BTL value (string)",
     "Process %d on host %s cannot send messages to itself: none of the transports tried "
     "(%s) reaches the process itself. BM_BTL is %s.\n"
     "\n"
     "What to do:\n"
     "  - Add self to BM_BTL (for example BM_BTL=self,sm,tcp), or unset BM_BTL."},
    {"btl-unreachable-local", "Two processes on one host cannot reach each other",
     "peer rank (int), local rank (int), host (string), transports tried (string), BM_BTL "
     "value (string)",
     "Process %d cannot be reached from process %d, although both run on host %s: none of "
     "the transports tried (%s) has a path between them. BM_BTL is %s.\n"
     "\n"
     "What to do:\n"
     "  - Add sm to BM_BTL (shared memory between processes of one host), or unset BM_BTL.\n"
     "  - If sm is selected, check that /dev/shm is mounted, writable and not full; run with "
     "BM_VERBOSE=btl:4 to see what sm reported."},
};
BM_HELP_TOPICS_REGISTER(btl_base_help);

/* Longest peer host name kept in the modex ("btl.host"), for error messages. */
#define BTL_BASE_HOST_KEY "btl.host"

/* Unreachable peers listed one by one in the start-up error before "and N more". */
#define BTL_BASE_MAX_REPORTED 8

struct btl_base_component {
    const struct bm_btl_ops *ops;
    bool selected;                 /* by BM_BTL */
    bool named;                    /* named explicitly in an include list */
    bool active;                   /* a module of it is in some peer's class 0: progress it */
    bool standby;                  /* only in standby classes: progress it now and then */
    struct bm_btl_component *inst; /* init succeeded: finalize is owed */
    struct bm_btl_module **modules;
    int count;
    char why[192]; /* why it was not used, for the unreachable-peer error */
};

/* One entry of the progress table: the hot loop calls fn(comp). */
struct btl_base_progress {
    int (*fn)(struct bm_btl_component *comp);
    struct bm_btl_component *comp;
    /* Standby entries (after the others in the table): called when next_ns
     * has passed, or every time until hot_until after a call found work. */
    uint64_t next_ns, hot_until;
};

/* How often a component that only stands by is polled: often enough to
 * answer a peer's connection or probe promptly and to notice that a peer
 * moved its traffic to it, rarely enough that a sm or tcp job does not pay
 * a system call per poll for it. After a call that found work it is polled
 * at full rate for BTL_BASE_STANDBY_HOT_NS (traffic moved to it). */
#define BTL_BASE_STANDBY_POLL_NS 1000000ull
#define BTL_BASE_STANDBY_HOT_NS  1000000000ull

struct btl_base_module {
    struct bm_btl_module *module;
    struct btl_base_component *comp;
    struct bm_btl_endpoint **endpoints; /* [nprocs], NULL where not reached */
    struct bm_util_bitmap reach;
    bool procs_added;
};

bool bm_btl_base_mt;

static struct {
    bool open;
    struct btl_base_config config;
    struct btl_base_component *comps; /* [bm_btl_registry_count] */
    struct btl_base_module *mods;
    int nmods;
    int nprocs;
    int *ranks;
    struct bm_btl_peer *peers;
    /* Every rank's host name (BTL_BASE_HOST_KEY, owned by the runtime),
     * read at add_procs: the failure messages name hosts while MPI_Finalize
     * fences, when the runtime must not be asked (rte.h). NULL: unknown. */
    const char **hosts;
    /* Progress functions of the active components: the only thing the hot
     * progress loop looks at. Sized for every component at open, so it
     * never needs to grow later (and a failure to allocate it fails open). */
    struct btl_base_progress *progress;
    int nprogress, progress_cap;
    int nfull; /* entries [0, nfull) run every pass, the rest are standby */
} base;

/* Callbacks registered by the layer above. Kept apart from `base` so that a
 * registration made before bm_btl_base_open (or across a close and a new
 * open) still reaches every module created later. NULL: the defaults below. */
static struct {
    bm_btl_recv_cb_fn cb;
    void *cbdata;
    bm_btl_place_fn place;
    size_t place_hdr_len;
} btl_base_recv_reg[BM_BTL_TAG_MAX];
static bm_btl_error_cb_fn btl_base_error_reg;
static void *btl_base_error_reg_data;
static struct bm_btl_base_error_counts btl_base_errors;

/* ---- default callbacks: transports never find a NULL callback ------------ */

/* A module's place callback of tag: only on modules that call it, and only
 * with a receive callback to complete what it places. */
static void btl_base_place_set(struct bm_btl_module *m, bm_btl_tag_t tag)
{
    bool on = (m->caps & BM_BTL_CAP_RECV_PLACE) && btl_base_recv_reg[tag].cb &&
              btl_base_recv_reg[tag].place;
    m->recv_cb[tag].place = on ? btl_base_recv_reg[tag].place : NULL;
    m->recv_cb[tag].place_hdr_len = on ? btl_base_recv_reg[tag].place_hdr_len : 0;
}

static void btl_base_recv_unregistered(struct bm_btl_module *module,
                                       const struct bm_btl_recv_desc *d, void *cbdata)
{
    (void)cbdata;
    bm_log_ratelimited(BM_LOG_WARN,
                       "%s: dropped a message with tag %u from rank %d: nothing registered for "
                       "that tag (a mismatch between the layers above the transports)",
                       module->name, (unsigned)d->tag, d->peer);
}

static void btl_base_error_default(struct bm_btl_module *module, const struct bm_btl_error *err,
                                   void *cbdata)
{
    (void)cbdata;
    if (err->kind == BM_BTL_ERROR_RECOVERED)
        bm_log_info("%s: path to rank %d works again: %s", module->name, err->peer,
                    err->what ? err->what : "");
    else
        bm_log_error("%s: %s (rank %d): %s", module->name, bm_status_str(err->status), err->peer,
                     err->what ? err->what : "no details");
}

/* Every module's error callback: count the report, then pass it on to what
 * the layer above registered (or the default). */
static void btl_base_error_dispatch(struct bm_btl_module *module, const struct bm_btl_error *err,
                                    void *cbdata)
{
    (void)cbdata;
    switch (err->kind) {
    case BM_BTL_ERROR_PEER:
        btl_base_errors.peer++;
        break;
    case BM_BTL_ERROR_MODULE:
        btl_base_errors.module++;
        break;
    case BM_BTL_ERROR_RECOVERED:
        btl_base_errors.recovered++;
        break;
    case BM_BTL_ERROR_FATAL:
        btl_base_errors.fatal++;
        break;
    }
    if (btl_base_error_reg)
        btl_base_error_reg(module, err, btl_base_error_reg_data);
    else
        btl_base_error_default(module, err, NULL);
}

void bm_btl_base_error_counts(struct bm_btl_base_error_counts *out)
{
    *out = btl_base_errors;
}

/* ---- the runtime transports get by default ------------------------------------ */

static int btl_base_rte_node_of(void *ctx, int rank)
{
    (void)ctx;
    return bm_rte_node_of(rank);
}

static bm_status_t btl_base_rte_put(void *ctx, const char *key, const void *data, size_t len)
{
    (void)ctx;
    return bm_rte_modex_put(key, data, len);
}

static bm_status_t btl_base_rte_get(void *ctx, int rank, const char *key, const void **data_out,
                                    size_t *len_out)
{
    (void)ctx;
    return bm_rte_modex_get(rank, key, data_out, len_out);
}

const struct bm_btl_rte *bm_btl_rte_default(void)
{
    /* Stateless forwarding to the process's runtime: identical for every
     * caller, so one instance serves all of them. */
    static struct bm_btl_rte rte = {
        .node_of = btl_base_rte_node_of,
        .modex_put = btl_base_rte_put,
        .modex_get = btl_base_rte_get,
    };
    rte.self = bm_rte_self();
    return &rte;
}

/* ---- registration check ---------------------------------------------------------- */

/* What each capability needs in the ops table. BM_BTL_CAP_SEND is
 * mandatory: the PML reaches every peer through sends. */
struct btl_base_need {
    uint32_t cap; /* 0: always needed */
    const char *cap_name;
    const char *op;
    size_t offset; /* of the function pointer in struct bm_btl_ops */
};

#define BTL_NEED(cap, op)                                                                          \
    {                                                                                              \
        cap, #cap, #op, offsetof(struct bm_btl_ops, op)                                            \
    }

static const struct btl_base_need btl_base_needs[] = {
    BTL_NEED(0, query),
    BTL_NEED(0, init),
    BTL_NEED(0, progress),
    BTL_NEED(0, finalize),
    BTL_NEED(0, add_procs),
    BTL_NEED(0, del_procs),
    BTL_NEED(0, alloc),
    BTL_NEED(0, free),
    BTL_NEED(0, prepare_src),
    BTL_NEED(0, send),
    BTL_NEED(BM_BTL_CAP_SENDI, sendi),
    BTL_NEED(BM_BTL_CAP_SEND_IOV, prepare_src_iov),
    BTL_NEED(BM_BTL_CAP_PUT, put),
    BTL_NEED(BM_BTL_CAP_GET, get),
    BTL_NEED(BM_BTL_CAP_GETV, getv),
    BTL_NEED(BM_BTL_CAP_GETV, get), /* a getv module is a get module (btl.h) */
    BTL_NEED(BM_BTL_CAP_ATOMIC_OPS, atomic_op),
    BTL_NEED(BM_BTL_CAP_ATOMIC_FOPS, atomic_fop),
    BTL_NEED(BM_BTL_CAP_ATOMIC_FOPS, atomic_cswap),
    BTL_NEED(BM_BTL_CAP_RDMA_ANY, register_mem),
    BTL_NEED(BM_BTL_CAP_RDMA_ANY, deregister_mem),
    BTL_NEED(BM_BTL_CAP_RDMA_ANY, flush),
    BTL_NEED(BM_BTL_CAP_WAIT, wait_fd),
    BTL_NEED(BM_BTL_CAP_WAIT, wait_arm),
    BTL_NEED(BM_BTL_CAP_WAIT, wait_disarm),
    BTL_NEED(BM_BTL_CAP_STATS, stats),
    BTL_NEED(BM_BTL_CAP_RECV_TAKE, recv_take),
};

/* The first capability bit of mask that caps has, by name, for messages. */
static const char *btl_base_cap_name(uint32_t mask, uint32_t caps)
{
    static const struct {
        uint32_t cap;
        const char *name;
    } names[] = {
        {BM_BTL_CAP_PUT, "BM_BTL_CAP_PUT"},
        {BM_BTL_CAP_GET, "BM_BTL_CAP_GET"},
        {BM_BTL_CAP_GETV, "BM_BTL_CAP_GETV"},
        {BM_BTL_CAP_ATOMIC_OPS, "BM_BTL_CAP_ATOMIC_OPS"},
        {BM_BTL_CAP_ATOMIC_FOPS, "BM_BTL_CAP_ATOMIC_FOPS"},
        {BM_BTL_CAP_REG_MEM, "BM_BTL_CAP_REG_MEM"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (mask & caps & names[i].cap)
            return names[i].name;
    return "?";
}

bm_status_t bm_btl_ops_check(const struct bm_btl_ops *ops, uint32_t caps, char *why, size_t whylen)
{
    const char *name = ops && ops->name && *ops->name ? ops->name : "(unnamed)";
    if (!ops || !ops->name || !*ops->name) {
        snprintf(why, whylen, "a registered transport has no name");
        return BM_ERR_BAD_PARAM;
    }
    const struct bm_btl_ops *mo = ops->mt_ops;
    if (mo && (!(ops->caps & BM_BTL_CAP_THREADS) || mo->mt_ops || mo->caps != ops->caps ||
               !mo->name || strcmp(mo->name, ops->name) != 0)) {
        snprintf(why, whylen,
                 "transport '%s' has an mt_ops table that is not its twin (same name and caps, "
                 "BM_BTL_CAP_THREADS, no mt_ops of its own)",
                 name);
        return BM_ERR_BAD_PARAM;
    }
    if (mo && bm_btl_ops_check(mo, caps, why, whylen) != BM_OK)
        return BM_ERR_BAD_PARAM;
    for (size_t i = 0; i < sizeof(btl_base_needs) / sizeof(btl_base_needs[0]); i++) {
        const struct btl_base_need *n = &btl_base_needs[i];
        if (n->cap && !(caps & n->cap))
            continue;
        void (*const *fn)(void) = (void (*const *)(void))((const char *)ops + n->offset);
        if (*fn)
            continue;
        if (!n->cap)
            snprintf(why, whylen,
                     "transport '%s' has no %s operation, which every transport must have", name,
                     n->op);
        else if (n->cap == BM_BTL_CAP_RDMA_ANY)
            snprintf(why, whylen,
                     "transport '%s' advertises %s but has no %s operation (needed by every "
                     "RDMA or atomic capability)",
                     name, btl_base_cap_name(n->cap, caps), n->op);
        else
            snprintf(why, whylen, "transport '%s' advertises %s but has no %s operation", name,
                     n->cap_name, n->op);
        return BM_ERR_BAD_PARAM;
    }
    return BM_OK;
}

bm_status_t bm_btl_base_check_module(const struct bm_btl_module *m, char *why, size_t whylen)
{
    uint32_t extra = m->caps & ~m->ops->caps;
    if (extra) {
        /* Name the operation that the table was not checked for. */
        for (size_t i = 0; i < sizeof(btl_base_needs) / sizeof(btl_base_needs[0]); i++) {
            const struct btl_base_need *n = &btl_base_needs[i];
            if (!(n->cap & extra))
                continue;
            snprintf(why, whylen,
                     "module %s of transport '%s' advertises %s, which its transport does not "
                     "declare (ops.caps 0x%x), so its %s operation was never checked",
                     m->name, m->ops->name,
                     n->cap == BM_BTL_CAP_RDMA_ANY ? btl_base_cap_name(n->cap, extra) : n->cap_name,
                     m->ops->caps, n->op);
            return BM_ERR_BAD_PARAM;
        }
        snprintf(why, whylen,
                 "module %s of transport '%s' advertises capabilities 0x%x that its transport "
                 "does not declare (ops.caps 0x%x)",
                 m->name, m->ops->name, extra, m->ops->caps);
        return BM_ERR_BAD_PARAM;
    }
    if ((m->caps & BM_BTL_CAP_GETV) && !(m->caps & BM_BTL_CAP_GET)) {
        snprintf(why, whylen,
                 "module %s of transport '%s' advertises BM_BTL_CAP_GETV without "
                 "BM_BTL_CAP_GET (getv is offered only with get)",
                 m->name, m->ops->name);
        return BM_ERR_BAD_PARAM;
    }
    if (!(m->caps & BM_BTL_CAP_SEND)) {
        snprintf(why, whylen, "module %s of transport '%s' does not advertise BM_BTL_CAP_SEND",
                 m->name, m->ops->name);
        return BM_ERR_BAD_PARAM;
    }
    return bm_btl_ops_check(m->ops, m->caps, why, whylen);
}

/* ---- BM_BTL ---------------------------------------------------------------- */

static int btl_base_find(const char *name, size_t len)
{
    for (int i = 0; i < bm_btl_registry_count; i++)
        if (strlen(bm_btl_registry[i]->name) == len &&
            strncmp(bm_btl_registry[i]->name, name, len) == 0)
            return i;
    return -1;
}

static const struct bm_btl_absent *btl_base_find_absent(const char *name, size_t len)
{
    for (const struct bm_btl_absent *a = bm_btl_registry_absent; a->name; a++)
        if (strlen(a->name) == len && strncmp(a->name, name, len) == 0)
            return a;
    return NULL;
}

static void btl_base_list_available(char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int i = 0; i < bm_btl_registry_count && off < len; i++)
        off +=
            (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "", bm_btl_registry[i]->name);
    for (const struct bm_btl_absent *a = bm_btl_registry_absent; a->name && off < len; a++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s (not built: %s)", off ? ", " : "",
                                a->name, a->why);
}

/* Mark comps[i].selected / .named from the BM_BTL text. Unknown names are an
 * error; an excluded transport that is merely not built is fine (so that
 * "^ofi" works on machines without libfabric), an included one is not. */
static bm_status_t btl_base_parse_selection(const char *spec, struct btl_base_component *comps)
{
    const char *p = spec ? spec : "";
    while (*p == ' ')
        p++;
    bool exclude = (*p == '^');
    if (exclude)
        p++;
    bool any = false;
    for (int i = 0; i < bm_btl_registry_count; i++) {
        comps[i].selected = exclude || !*p;
        comps[i].named = false;
    }
    char avail[512];
    while (*p) {
        const char *end = p + strcspn(p, ",");
        const char *s = p, *e = end;
        while (s < e && (*s == ' ' || *s == '\t'))
            s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        p = *end ? end + 1 : end;
        if (s == e)
            continue;
        size_t len = (size_t)(e - s);
        if (*s == '^') {
            bm_log_error("BM_BTL=%s: '^' may only start the whole list (it makes all of it an "
                         "exclude list); mixing included and excluded transports is not "
                         "supported. Example: BM_BTL=self,sm or BM_BTL=^tcp,dgram",
                         spec);
            return BM_ERR_BAD_PARAM;
        }
        int idx = btl_base_find(s, len);
        if (idx < 0) {
            const struct bm_btl_absent *a = btl_base_find_absent(s, len);
            if (a && exclude)
                continue;
            btl_base_list_available(avail, sizeof(avail));
            if (a)
                bm_log_error("BM_BTL=%s: transport '%s' is not built into this library: %s. "
                             "Available: %s",
                             spec, a->name, a->why, avail);
            else
                bm_log_error("BM_BTL=%s: unknown transport '%.*s'. Available: %s", spec, (int)len,
                             s, avail);
            return BM_ERR_BAD_PARAM;
        }
        any = true;
        comps[idx].selected = !exclude;
        comps[idx].named = !exclude;
    }
    if (!exclude && !any) {
        for (int i = 0; i < bm_btl_registry_count; i++)
            comps[i].selected = true;
    }
    return BM_OK;
}

/* What was tried, for the unreachable-peer error: every transport with the
 * reason it was not used, or the modules that were asked. */
static void btl_base_describe_tried(char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int i = 0; i < bm_btl_registry_count && off < len; i++) {
        const struct btl_base_component *c = &base.comps[i];
        if (c->count > 0) {
            for (int k = 0; k < c->count && off < len; k++)
                off += (size_t)snprintf(buf + off, len - off, "%s%s (does not reach it)",
                                        off ? ", " : "", c->modules[k]->name);
        } else {
            off += (size_t)snprintf(buf + off, len - off, "%s%s (%s)", off ? ", " : "",
                                    c->ops->name, c->why);
        }
    }
}

/* ---- open ------------------------------------------------------------------ */

static bm_status_t btl_base_add_module(struct btl_base_component *comp, struct bm_btl_module *m,
                                       bool mt)
{
    char why[320];
    if (m->ops != comp->ops || m->component != comp->inst) {
        bm_log_error("internal: module %s of transport '%s' does not point back at its %s", m->name,
                     comp->ops->name, m->ops != comp->ops ? "ops table" : "component");
        return BM_ERR_FATAL;
    }
    /* btl.h "mt_ops": under MPI_THREAD_MULTIPLE the module's operations
     * are the locking ones; the single-threaded table checks no flag. */
    if (mt && comp->ops->mt_ops)
        m->ops = comp->ops->mt_ops;
    if (bm_btl_base_check_module(m, why, sizeof(why)) != BM_OK) {
        bm_log_error("%s; this is a bug in the transport: start-up stops here", why);
        return BM_ERR_FATAL;
    }
    struct btl_base_module *mods = realloc(base.mods, (size_t)(base.nmods + 1) * sizeof(*mods));
    if (!mods)
        return BM_ERR_NO_MEMORY;
    base.mods = mods;
    memset(&mods[base.nmods], 0, sizeof(mods[0]));
    mods[base.nmods].module = m;
    mods[base.nmods].comp = comp;
    base.nmods++;
    for (int t = 0; t < BM_BTL_TAG_MAX; t++) {
        bool set = btl_base_recv_reg[t].cb != NULL;
        m->recv_cb[t].cb = set ? btl_base_recv_reg[t].cb : btl_base_recv_unregistered;
        m->recv_cb[t].cbdata = set ? btl_base_recv_reg[t].cbdata : NULL;
        btl_base_place_set(m, (bm_btl_tag_t)t);
    }
    m->error_cb = btl_base_error_dispatch;
    m->error_cbdata = NULL;
    return BM_OK;
}

/* Rebuild the progress table from the components that need progress. It
 * grows when it must (more instances than it was sized for); when memory for
 * that runs out, open fails rather than leaving a component unprogressed. */
static bm_status_t btl_base_set_progress(bool only_active)
{
    int need = 0;
    for (int i = 0; i < bm_btl_registry_count; i++)
        need += base.comps[i].inst && base.comps[i].count > 0;
    if (need > base.progress_cap) {
        struct btl_base_progress *p = realloc(base.progress, (size_t)need * sizeof(*p));
        if (!p) {
            bm_log_error("out of memory for the progress table of %d transports", need);
            return BM_ERR_NO_MEMORY;
        }
        base.progress = p;
        base.progress_cap = need;
    }
    base.nprogress = 0;
    /* Full-rate entries first, then the standby ones. */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < bm_btl_registry_count; i++) {
            struct btl_base_component *c = &base.comps[i];
            if (!c->inst || c->count == 0)
                continue;
            bool standby = only_active && !c->active;
            if ((pass == 1) != standby || (standby && !c->standby))
                continue;
            base.progress[base.nprogress] = (struct btl_base_progress){
                .fn = c->ops->progress, .comp = c->inst, .next_ns = 0, .hot_until = 0};
            base.nprogress++;
        }
        if (pass == 0)
            base.nfull = base.nprogress;
    }
    return BM_OK;
}

/* ---- sleeping ------------------------------------------------------------------ */

int bm_btl_base_wait_fds(int *fds, int max)
{
    int n = 0;
    for (int i = 0; i < base.nprogress && n < max; i++) {
        struct bm_btl_component *c = base.progress[i].comp;
        if (!(c->ops->caps & BM_BTL_CAP_WAIT))
            continue;
        int fd = c->ops->wait_fd(c);
        if (fd >= 0)
            fds[n++] = fd;
    }
    return n;
}

static void btl_base_wait_disarm_first(int count)
{
    for (int i = 0; i < count; i++) {
        struct bm_btl_component *c = base.progress[i].comp;
        if (!(c->ops->caps & BM_BTL_CAP_WAIT))
            continue;
        if (c->mt_lock)
            bm_util_lock_take(c->mt_lock);
        c->ops->wait_disarm(c);
        if (c->mt_lock)
            bm_util_lock_give(c->mt_lock);
    }
}

int bm_btl_base_wait_arm(int64_t *timeout_ns, int64_t nap_ns)
{
    int64_t t = -1;
    for (int i = 0; i < base.nprogress; i++) {
        struct bm_btl_component *c = base.progress[i].comp;
        int64_t ct = nap_ns;
        if (c->ops->caps & BM_BTL_CAP_WAIT) {
            if (c->mt_lock)
                bm_util_lock_take(c->mt_lock);
            int work = c->ops->wait_arm(c, &ct);
            if (c->mt_lock)
                bm_util_lock_give(c->mt_lock);
            if (work > 0) {
                btl_base_wait_disarm_first(i);
                return work;
            }
        }
        if (ct >= 0 && (t < 0 || ct < t))
            t = ct;
    }
    *timeout_ns = t;
    return 0;
}

void bm_btl_base_wait_disarm(void)
{
    btl_base_wait_disarm_first(base.nprogress);
}

/* Finalize a component and release the lock the base gave it. */
static void btl_base_finalize(struct btl_base_component *c)
{
    struct bm_util_lock *l = c->inst->mt_lock;
    c->ops->finalize(c->inst);
    c->inst = NULL;
    if (l) {
        bm_util_lock_destroy(l);
        free(l);
    }
}

/* Query and start one component that BM_BTL selected, adding its modules.
 * A component that cannot run here is skipped with the reason in c->why (a
 * warning when BM_BTL named it); only errors that must end the open are
 * returned. */
static bm_status_t btl_base_open_component(struct btl_base_component *c,
                                           const struct bm_btl_init_args *args)
{
    char why[160] = "";
    bm_status_t q = c->ops->query(why, sizeof(why));
    if (q != BM_OK) {
        snprintf(c->why, sizeof(c->why), "not usable here: %s", why[0] ? why : bm_status_str(q));
        if (c->named)
            bm_log_warn("%s was requested in BM_BTL but is %s", c->ops->name, c->why);
        else
            bm_log_debug("%s: %s", c->ops->name, c->why);
        return BM_OK;
    }
    struct bm_btl_component *inst = NULL;
    bm_status_t ir = c->ops->init(args, &inst);
    if (ir == BM_OK &&
        (!inst || inst->ops != c->ops || inst->count < 0 || (inst->count > 0 && !inst->modules))) {
        bm_log_error("internal: transport '%s' returned from init without a valid component",
                     c->ops->name);
        return BM_ERR_FATAL;
    }
    if (ir != BM_OK) {
        snprintf(c->why, sizeof(c->why), "failed to start: %s", bm_status_str(ir));
        if (bm_status_is_fatal(ir)) {
            bm_log_error("%s: %s", c->ops->name, c->why);
            return ir;
        }
        if (c->named)
            bm_log_warn("%s was requested in BM_BTL but %s", c->ops->name, c->why);
        return BM_OK;
    }
    c->inst = inst;
    if (args->thread_level >= BM_BTL_THREAD_MULTIPLE && !(c->ops->caps & BM_BTL_CAP_THREADS)) {
        /* The contract's "Threads": the base serialises it. */
        static struct bm_util_lock_class comp_class = {.name = "transport"};
        inst->mt_lock = malloc(sizeof(*inst->mt_lock));
        if (!inst->mt_lock)
            return BM_ERR_NO_MEMORY;
        bm_util_lock_init(inst->mt_lock, &comp_class, true);
        bm_btl_base_mt = true;
    }
    c->modules = inst->modules;
    c->count = inst->count;
    struct bm_btl_module **modules = c->modules;
    int count = c->count;
    if (count == 0)
        snprintf(c->why, sizeof(c->why), "no usable device, or no peer it could reach");
    for (int k = 0; k < count; k++) {
        bm_status_t rc =
            btl_base_add_module(c, modules[k], args->thread_level >= BM_BTL_THREAD_MULTIPLE);
        if (rc != BM_OK)
            return rc;
        bm_log_debug("opened %s (exclusivity %u, latency %u, bandwidth %u Mbit/s, caps 0x%x)",
                     modules[k]->name, modules[k]->exclusivity, modules[k]->latency,
                     modules[k]->bandwidth, modules[k]->caps);
    }
    return BM_OK;
}

bm_status_t bm_btl_base_open(const struct bm_btl_init_args *args)
{
    if (base.open) {
        bm_log_error("internal: bm_btl_base_open called twice without bm_btl_base_close");
        return BM_ERR_EXISTS;
    }
    memset(&base, 0, sizeof(base));
    bm_status_t rc = bm_util_params_load(&btl_base_table, &base.config);
    if (rc != BM_OK)
        return rc;
    /* The registration check: every table once, before anything starts. */
    for (int i = 0; i < bm_btl_registry_count; i++) {
        char why[320];
        if (bm_btl_ops_check(bm_btl_registry[i], bm_btl_registry[i]->caps, why, sizeof(why)) !=
            BM_OK) {
            bm_log_error("%s; this is a bug in the transport: start-up stops here", why);
            return BM_ERR_FATAL;
        }
    }
    base.comps = calloc((size_t)bm_btl_registry_count + 1, sizeof(*base.comps));
    if (!base.comps)
        return BM_ERR_NO_MEMORY;
    for (int i = 0; i < bm_btl_registry_count; i++)
        base.comps[i].ops = bm_btl_registry[i];
    rc = btl_base_parse_selection(base.config.selection, base.comps);
    if (rc != BM_OK)
        goto err_comps;

    const struct bm_rte_proc *self = bm_rte_self();
    rc = bm_rte_modex_put(BTL_BASE_HOST_KEY, self->hostname, strlen(self->hostname) + 1);
    if (rc != BM_OK) {
        bm_log_error("could not publish this process's host name in the modex: %s",
                     bm_status_str(rc));
        goto err_comps;
    }

    struct bm_btl_init_args full = {0};
    if (args)
        full = *args;
    if (!full.rte)
        full.rte = bm_btl_rte_default();
    args = &full;
    for (int i = 0; i < bm_btl_registry_count; i++) {
        struct btl_base_component *c = &base.comps[i];
        if (!c->selected) {
            snprintf(c->why, sizeof(c->why), "excluded by BM_BTL");
            continue;
        }
        rc = btl_base_open_component(c, args);
        if (rc != BM_OK)
            goto err_finalize;
    }
    if (base.nmods == 0) {
        char why[1024];
        btl_base_describe_tried(why, sizeof(why));
        bm_util_help_show("btl-no-transport", self->hostname,
                          base.config.selection && *base.config.selection ? base.config.selection
                                                                          : "(unset)",
                          why);
        rc = BM_ERR_NOT_AVAILABLE;
        goto err_finalize;
    }
    rc = btl_base_set_progress(false);
    if (rc != BM_OK)
        goto err_finalize;
    base.open = true;
    return BM_OK;

err_finalize:
    for (int i = 0; i < bm_btl_registry_count; i++)
        if (base.comps[i].inst)
            btl_base_finalize(&base.comps[i]);
    bm_btl_base_mt = false;
    free(base.mods);
    free(base.progress);
err_comps:
    free(base.comps);
    memset(&base, 0, sizeof(base));
    return rc;
}

/* ---- add_procs: per-peer lists ----------------------------------------------- */

/* Orders of the lists: by class first (exclusivity), then as each list wants. */
static int btl_base_cmp_class(const struct bm_btl_path *pa, const struct bm_btl_path *pb)
{
    return pa->cls == pb->cls ? 0 : pa->cls < pb->cls ? -1 : 1;
}

static int btl_base_cmp_latency(const void *a, const void *b)
{
    const struct bm_btl_path *pa = a, *pb = b;
    int c = btl_base_cmp_class(pa, pb);
    if (c)
        return c;
    if (pa->module->latency != pb->module->latency)
        return pa->module->latency < pb->module->latency ? -1 : 1;
    if (pa->module->bandwidth != pb->module->bandwidth)
        return pa->module->bandwidth > pb->module->bandwidth ? -1 : 1;
    return strcmp(pa->module->name, pb->module->name);
}

static int btl_base_cmp_bandwidth(const void *a, const void *b)
{
    const struct bm_btl_path *pa = a, *pb = b;
    int c = btl_base_cmp_class(pa, pb);
    if (c)
        return c;
    if (pa->module->bandwidth != pb->module->bandwidth)
        return pa->module->bandwidth > pb->module->bandwidth ? -1 : 1;
    return btl_base_cmp_latency(a, b);
}

/* Bandwidth shares within each class; modules that state no bandwidth
 * share equally. */
static void btl_base_weigh(struct bm_btl_path_list *l)
{
    for (int a = 0; a < l->count;) {
        int b = a;
        double total = 0;
        while (b < l->count && l->paths[b].cls == l->paths[a].cls)
            total += l->paths[b++].module->bandwidth;
        for (int i = a; i < b; i++)
            l->paths[i].weight =
                total > 0 ? l->paths[i].module->bandwidth / total : 1.0 / (double)(b - a);
        a = b;
    }
    l->top = 0;
    while (l->top < l->count && l->paths[l->top].cls == 0)
        l->top++;
}

static bm_status_t btl_base_build_list(struct bm_btl_path_list *l, const int *kept,
                                       const uint8_t *cls, int nkept, int rank, uint32_t need_caps,
                                       int (*cmp)(const void *, const void *))
{
    l->paths = calloc((size_t)(nkept ? nkept : 1), sizeof(*l->paths));
    if (!l->paths)
        return BM_ERR_NO_MEMORY;
    l->count = 0;
    l->next = 0;
    for (int k = 0; k < nkept; k++) {
        struct btl_base_module *bm = &base.mods[kept[k]];
        if (need_caps && !(bm->module->caps & need_caps))
            continue;
        l->paths[l->count].module = bm->module;
        l->paths[l->count].endpoint = bm->endpoints[rank];
        l->paths[l->count].failed = false;
        l->paths[l->count].cls = cls[k];
        l->count++;
    }
    qsort(l->paths, (size_t)l->count, sizeof(*l->paths), cmp);
    btl_base_weigh(l);
    return BM_OK;
}

/* base.hosts: one modex read per node (its first rank's entry; the
 * others share it), none for this process's own node. */
static bm_status_t btl_base_hosts_load(int nprocs)
{
    const struct bm_rte_proc *self = bm_rte_self();
    int nnodes = self->num_nodes > 0 ? self->num_nodes : 1;
    base.hosts = calloc((size_t)nprocs, sizeof(*base.hosts));
    const char **node_host = calloc((size_t)nnodes, sizeof(*node_host));
    if (!base.hosts || !node_host) {
        free(node_host);
        return BM_ERR_NO_MEMORY;
    }
    for (int r = 0; r < nprocs; r++) {
        int node = bm_rte_node_of(r);
        bool known = node >= 0 && node < nnodes;
        if (r == self->rank || node == self->node) {
            base.hosts[r] = self->hostname;
            continue;
        }
        if (known && node_host[node]) {
            base.hosts[r] = node_host[node];
            continue;
        }
        const void *data = NULL;
        size_t len = 0;
        if (bm_rte_modex_get(r, BTL_BASE_HOST_KEY, &data, &len) == BM_OK && len > 0 &&
            memchr(data, '\0', len))
            base.hosts[r] = data;
        if (known)
            node_host[node] = base.hosts[r];
    }
    free(node_host);
    return BM_OK;
}

const char *bm_btl_base_peer_host(int rank)
{
    return base.hosts && rank >= 0 && rank < base.nprocs ? base.hosts[rank] : NULL;
}

static const char *btl_base_peer_host(int rank)
{
    const char *h = bm_btl_base_peer_host(rank);
    return h ? h : "an unknown host";
}

static void btl_base_report_unreachable(const int *lost, int nlost)
{
    const struct bm_rte_proc *self = bm_rte_self();
    char tried[1024];
    btl_base_describe_tried(tried, sizeof(tried));
    const char *sel =
        base.config.selection && *base.config.selection ? base.config.selection : "(unset: all)";
    /* The first unreachable peer gets the full help text; the rest one line each. */
    int r = lost[0];
    if (r == self->rank)
        bm_util_help_show("btl-unreachable-self", r, self->hostname, tried, sel);
    else if (bm_rte_node_of(r) == self->node)
        bm_util_help_show("btl-unreachable-local", r, self->rank, self->hostname, tried, sel);
    else
        bm_util_help_show("btl-unreachable", r, btl_base_peer_host(r), self->rank, self->hostname,
                          tried);
    for (int i = 1; i < nlost && i < BTL_BASE_MAX_REPORTED; i++)
        bm_log_error("rank %d on host %s cannot reach rank %d on host %s either", self->rank,
                     self->hostname, lost[i], btl_base_peer_host(lost[i]));
    if (nlost > BTL_BASE_MAX_REPORTED)
        bm_log_error("... and %d more unreachable ranks", nlost - BTL_BASE_MAX_REPORTED);
}

/* Module k's add_procs for the ranks in todo[0, ntodo) (a subset of the
 * job, in rank order): its endpoints and reach bits land at the ranks'
 * places in bm->endpoints and bm->reach. */
static bm_status_t btl_base_add_to_module(struct btl_base_module *bm, int nprocs, const int *todo,
                                          int ntodo, struct bm_btl_endpoint **eps,
                                          struct bm_util_bitmap *reach)
{
    bm->endpoints = calloc((size_t)nprocs, sizeof(*bm->endpoints));
    if (!bm->endpoints || bm_util_bitmap_init(&bm->reach, (size_t)nprocs) != BM_OK)
        return BM_ERR_NO_MEMORY;
    if (ntodo == 0) {
        bm->procs_added = true; /* del_procs still drops peers that connected to it */
        return BM_OK;
    }
    memset(eps, 0, (size_t)ntodo * sizeof(*eps));
    bm_util_bitmap_clear_all(reach);
    bm_status_t ar = bm->module->ops->add_procs(bm->module, ntodo, todo, eps, reach);
    if (ar != BM_OK) {
        bm_log_warn("%s: could not add peers (%s); it will not be used", bm->module->name,
                    bm_status_str(ar));
        return BM_OK;
    }
    bm->procs_added = true;
    for (int i = 0; i < ntodo; i++)
        if (bm_util_bitmap_test(reach, (size_t)i)) {
            bm_util_bitmap_set(&bm->reach, (size_t)todo[i]);
            bm->endpoints[todo[i]] = eps[i];
        }
    char why[320];
    if (bm_btl_base_check_module(bm->module, why, sizeof(why)) != BM_OK) {
        bm_log_error("%s (after add_procs); this is a bug in the transport: start-up stops here",
                     why);
        return BM_ERR_FATAL;
    }
    return BM_OK;
}

/* add_procs on every module, the most exclusive first. A module is asked
 * only for the ranks that no module of a higher exclusivity settled: a
 * rank is settled once a module that cannot fail while the peer lives (no
 * BM_BTL_CAP_FAILOVER: self, sm) reaches it, because then the lists keep
 * that exclusivity alone (no standby class, btl.h struct bm_btl_peer) and
 * whatever a lower module made for the rank would never carry a byte. The
 * lists come out as if every module had been asked for every rank; what
 * changes is the cost: tcp and dgram make no endpoint records (and dgram no
 * route probes) for the peers of their own host, which sm reaches (Open
 * MPI's BML asks every BTL, and its lower ones skip such peers only by
 * their own exclusivity checks). */
static bm_status_t btl_base_add_to_modules(int nprocs)
{
    bm_status_t rc = BM_ERR_NO_MEMORY;
    struct bm_util_bitmap settled = {0}, reach = {0};
    int *todo = calloc((size_t)nprocs, sizeof(int));
    struct bm_btl_endpoint **eps = calloc((size_t)nprocs, sizeof(*eps));
    bool *done = calloc((size_t)(base.nmods ? base.nmods : 1), sizeof(bool));
    if (!todo || !eps || !done || bm_util_bitmap_init(&settled, (size_t)nprocs) != BM_OK ||
        bm_util_bitmap_init(&reach, (size_t)nprocs) != BM_OK)
        goto out;
    for (int left = base.nmods; left > 0;) {
        /* The highest exclusivity not done yet, and its modules. */
        uint32_t ex = 0;
        bool any = false;
        for (int k = 0; k < base.nmods; k++)
            if (!done[k] && (!any || base.mods[k].module->exclusivity > ex)) {
                ex = base.mods[k].module->exclusivity;
                any = true;
            }
        int ntodo = 0;
        for (int r = 0; r < nprocs; r++)
            if (!bm_util_bitmap_test(&settled, (size_t)r))
                todo[ntodo++] = r;
        for (int k = 0; k < base.nmods; k++) {
            struct btl_base_module *bm = &base.mods[k];
            if (done[k] || bm->module->exclusivity != ex)
                continue;
            done[k] = true;
            left--;
            rc = btl_base_add_to_module(bm, nprocs, todo, ntodo, eps, &reach);
            if (rc != BM_OK)
                goto out;
        }
        /* Settle after the whole exclusivity: modules of one exclusivity
         * stripe, each is asked for the same ranks. */
        for (int k = 0; k < base.nmods; k++) {
            struct btl_base_module *bm = &base.mods[k];
            if (bm->module->exclusivity != ex || (bm->module->caps & BM_BTL_CAP_FAILOVER))
                continue;
            for (int i = 0; i < ntodo; i++)
                if (bm_util_bitmap_test(&bm->reach, (size_t)todo[i]))
                    bm_util_bitmap_set(&settled, (size_t)todo[i]);
        }
    }
    rc = BM_OK;
out:
    if (settled.words)
        bm_util_bitmap_fini(&settled);
    if (reach.words)
        bm_util_bitmap_fini(&reach);
    free(todo);
    free(eps);
    free(done);
    return rc;
}

bm_status_t bm_btl_base_add_procs(int nprocs)
{
    if (!base.open) {
        bm_log_error("internal: bm_btl_base_add_procs before bm_btl_base_open");
        return BM_ERR_NOT_AVAILABLE;
    }
    if (base.peers) {
        bm_log_error("internal: bm_btl_base_add_procs called twice");
        return BM_ERR_EXISTS;
    }
    if (nprocs <= 0)
        return BM_ERR_BAD_PARAM;
    bm_status_t rc = BM_ERR_NO_MEMORY;
    base.nprocs = nprocs;
    base.ranks = calloc((size_t)nprocs, sizeof(int));
    base.peers = calloc((size_t)nprocs, sizeof(*base.peers));
    int *kept = calloc((size_t)(base.nmods ? base.nmods : 1), sizeof(int));
    uint8_t *cls = calloc((size_t)(base.nmods ? base.nmods : 1), 1);
    int *lost = calloc((size_t)nprocs, sizeof(int));
    if (!base.ranks || !base.peers || !kept || !cls || !lost)
        goto out;
    for (int r = 0; r < nprocs; r++)
        base.ranks[r] = r;
    rc = btl_base_hosts_load(nprocs);
    if (rc != BM_OK)
        goto out;

    rc = btl_base_add_to_modules(nprocs);
    if (rc != BM_OK)
        goto out;
    rc = BM_ERR_NO_MEMORY;

    int nlost = 0;
    for (int r = 0; r < nprocs; r++) {
        struct bm_btl_peer *peer = &base.peers[r];
        peer->rank = r;
        bool found = false;
        uint32_t best = 0;
        for (int k = 0; k < base.nmods; k++) {
            if (!bm_util_bitmap_test(&base.mods[k].reach, (size_t)r))
                continue;
            if (!found || base.mods[k].module->exclusivity > best)
                best = base.mods[k].module->exclusivity;
            found = true;
        }
        /* Standby classes only behind a top class that can fail while the
         * peer lives (btl.h, struct bm_btl_peer). */
        bool standby = found;
        for (int k = 0; found && k < base.nmods; k++)
            if (bm_util_bitmap_test(&base.mods[k].reach, (size_t)r) &&
                base.mods[k].module->exclusivity == best &&
                !(base.mods[k].module->caps & BM_BTL_CAP_FAILOVER))
                standby = false;
        int nkept = 0;
        for (int k = 0; found && k < base.nmods; k++) {
            uint32_t ex = base.mods[k].module->exclusivity;
            if (!bm_util_bitmap_test(&base.mods[k].reach, (size_t)r) || (ex != best && !standby))
                continue;
            /* class: how many distinct higher exclusivities reach the peer */
            uint8_t c = 0;
            for (int j = 0; j < base.nmods; j++) {
                uint32_t ej = base.mods[j].module->exclusivity;
                if (!bm_util_bitmap_test(&base.mods[j].reach, (size_t)r) || ej <= ex)
                    continue;
                bool dup = false;
                for (int i = 0; i < j && !dup; i++)
                    dup = bm_util_bitmap_test(&base.mods[i].reach, (size_t)r) &&
                          base.mods[i].module->exclusivity == ej;
                c += !dup;
            }
            cls[nkept] = c;
            kept[nkept++] = k;
        }
        if (!found)
            lost[nlost++] = r;
        /* Only components that carry some peer's traffic are progressed at
         * full rate: a transport that reaches a peer but lost the selection
         * to a more exclusive one (tcp next to sm) must not cost a system
         * call per poll. One that stands by is polled now and then. */
        for (int i = 0; i < nkept; i++) {
            if (cls[i] == 0)
                base.mods[kept[i]].comp->active = true;
            else
                base.mods[kept[i]].comp->standby = true;
        }
        if (btl_base_build_list(&peer->eager, kept, cls, nkept, r, 0, btl_base_cmp_latency) !=
                BM_OK ||
            btl_base_build_list(&peer->send, kept, cls, nkept, r, BM_BTL_CAP_SEND,
                                btl_base_cmp_bandwidth) != BM_OK ||
            btl_base_build_list(&peer->rdma, kept, cls, nkept, r, BM_BTL_CAP_PUT | BM_BTL_CAP_GET,
                                btl_base_cmp_bandwidth) != BM_OK)
            goto out;
        for (int i = 0; i < peer->eager.count; i++)
            bm_log_trace("rank %d: eager path %s (class %u, weight %.2f)", r,
                         peer->eager.paths[i].module->name, peer->eager.paths[i].cls,
                         peer->eager.paths[i].weight);
    }
    rc = btl_base_set_progress(true);
    if (rc != BM_OK)
        goto out;
    if (nlost > 0) {
        btl_base_report_unreachable(lost, nlost);
        rc = BM_ERR_UNREACHABLE;
        goto out;
    }
    rc = BM_OK;
out:
    if (rc == BM_ERR_NO_MEMORY)
        bm_log_error("out of memory while selecting transports for %d processes", nprocs);
    free(kept);
    free(cls);
    free(lost);
    return rc;
}

int bm_btl_base_endpoint_count(const char *transport)
{
    int n = 0;
    for (int k = 0; k < base.nmods; k++) {
        const struct btl_base_module *bm = &base.mods[k];
        if (!bm->endpoints || strcmp(bm->module->ops->name, transport) != 0)
            continue;
        for (int r = 0; r < base.nprocs; r++)
            n += bm->endpoints[r] != NULL;
    }
    return n;
}

struct bm_btl_peer *bm_btl_base_peer(int rank)
{
    if (!base.peers || rank < 0 || rank >= base.nprocs)
        return NULL;
    return &base.peers[rank];
}

/* ---- fan-out ----------------------------------------------------------------- */

void bm_btl_base_register_recv(bm_btl_tag_t tag, bm_btl_recv_cb_fn cb, void *cbdata)
{
    if (tag >= BM_BTL_TAG_MAX)
        return;
    btl_base_recv_reg[tag].cb = cb;
    btl_base_recv_reg[tag].cbdata = cbdata;
    for (int k = 0; k < base.nmods; k++) {
        base.mods[k].module->recv_cb[tag].cb = cb ? cb : btl_base_recv_unregistered;
        base.mods[k].module->recv_cb[tag].cbdata = cb ? cbdata : NULL;
        btl_base_place_set(base.mods[k].module, tag);
    }
}

void bm_btl_base_register_place(bm_btl_tag_t tag, bm_btl_place_fn place, size_t hdr_len)
{
    if (tag >= BM_BTL_TAG_MAX)
        return;
    btl_base_recv_reg[tag].place = place;
    btl_base_recv_reg[tag].place_hdr_len = hdr_len;
    for (int k = 0; k < base.nmods; k++)
        btl_base_place_set(base.mods[k].module, tag);
}

void bm_btl_base_register_error(bm_btl_error_cb_fn cb, void *cbdata)
{
    /* Modules keep calling the dispatcher, which reads these. */
    btl_base_error_reg = cb;
    btl_base_error_reg_data = cbdata;
}

static inline int btl_base_progress_one(struct btl_base_progress *e)
{
    if (__builtin_expect(bm_btl_base_mt, 0)) {
        struct bm_util_lock *l = e->comp->mt_lock;
        if (l)
            bm_util_lock_take(l);
        int n = e->fn(e->comp);
        if (l)
            bm_util_lock_give(l);
        return n;
    }
    return e->fn(e->comp);
}

/* The standby entries: each when its poll interval passed, or while hot. */
static __attribute__((noinline)) int btl_base_progress_standby(void)
{
    uint64_t now = bm_util_clock_now_ns();
    int n = 0;
    for (int i = base.nfull; i < base.nprogress; i++) {
        struct btl_base_progress *e = &base.progress[i];
        if (now < e->next_ns && now >= e->hot_until)
            continue;
        e->next_ns = now + BTL_BASE_STANDBY_POLL_NS;
        int k = btl_base_progress_one(e);
        if (k > 0)
            e->hot_until = now + BTL_BASE_STANDBY_HOT_NS;
        n += k;
    }
    return n;
}

/* Locked components or standby entries: everything but the common case. */
static __attribute__((noinline)) int btl_base_progress_general(void)
{
    int n = 0;
    for (int i = 0; i < base.nfull; i++)
        n += btl_base_progress_one(&base.progress[i]);
    if (base.nprogress > base.nfull)
        n += btl_base_progress_standby();
    return n;
}

int bm_btl_base_progress(void)
{
    /* One branch decides, once per call: a single-threaded process with no
     * standby transport calls each component's progress and nothing else. */
    if (__builtin_expect(bm_btl_base_mt || base.nprogress > base.nfull, 0))
        return btl_base_progress_general();
    int n = 0;
    const struct btl_base_progress *e = base.progress, *end = e + base.nfull;
    for (; e < end; e++)
        n += e->fn(e->comp);
    return n;
}

int bm_btl_base_unacked(void)
{
    int n = 0;
    for (int i = 0; base.open && i < bm_btl_registry_count; i++) {
        struct btl_base_component *c = &base.comps[i];
        if (!c->inst || !c->ops->unacked)
            continue;
        if (c->inst->mt_lock)
            bm_util_lock_take(c->inst->mt_lock);
        n += c->ops->unacked(c->inst);
        if (c->inst->mt_lock)
            bm_util_lock_give(c->inst->mt_lock);
    }
    return n;
}

/* ---- close --------------------------------------------------------------------- */

static void btl_base_free_list(struct bm_btl_path_list *l)
{
    free(l->paths);
    l->paths = NULL;
    l->count = 0;
}

int bm_btl_base_modules(struct bm_btl_module **out, int max)
{
    int n = 0;
    for (int k = 0; k < base.nmods && n < max; k++)
        if (base.mods[k].procs_added)
            out[n++] = base.mods[k].module;
    return n;
}

void bm_btl_base_close(void)
{
    if (!base.open)
        return;
    const uint32_t rdma_caps = BM_BTL_CAP_RDMA_ANY;
    for (int k = 0; k < base.nmods; k++) {
        struct btl_base_module *bm = &base.mods[k];
        if (bm->procs_added && (bm->module->caps & rdma_caps)) {
            bm_status_t fr = bm->module->ops->flush(bm->module, NULL);
            if (fr != BM_OK)
                bm_log_debug("%s: flush at close: %s", bm->module->name, bm_status_str(fr));
        }
    }
    /* MPI_Alloc_mem's registrations go before their transports do. */
    bm_btl_base_mem_close();
    for (int k = 0; k < base.nmods; k++) {
        struct btl_base_module *bm = &base.mods[k];
        if (bm->procs_added)
            bm->module->ops->del_procs(bm->module, base.nprocs, base.ranks, bm->endpoints);
    }
    for (int i = 0; i < bm_btl_registry_count; i++)
        if (base.comps[i].inst)
            btl_base_finalize(&base.comps[i]);
    bm_btl_base_mt = false;
    for (int k = 0; k < base.nmods; k++) {
        free(base.mods[k].endpoints);
        if (base.mods[k].reach.words)
            bm_util_bitmap_fini(&base.mods[k].reach);
    }
    for (int r = 0; base.peers && r < base.nprocs; r++) {
        btl_base_free_list(&base.peers[r].eager);
        btl_base_free_list(&base.peers[r].send);
        btl_base_free_list(&base.peers[r].rdma);
    }
    free(base.peers);
    free(base.ranks);
    free(base.hosts);
    free(base.mods);
    free(base.comps);
    free(base.progress);
    memset(&base, 0, sizeof(base));
}
