/* Which libfabric provider and which of its domains the ofi transport opens.
 * One query per capability set, richest first (messages, RMA, atomics and
 * multi-receive buffers; then without multi-receive; then without atomics),
 * each for reliable-datagram endpoints (FI_EP_RDM) with every
 * memory-registration mode we can honour. The answers are filtered by
 * BM_BTL_OFI_PROVIDER_INCLUDE/_EXCLUDE (libfabric itself already applied
 * FI_PROVIDER); the first surviving provider in libfabric's order (its
 * preference) wins, and each of its domains gives one module: the first
 * answer per domain (IPv4 before IPv6 as libfabric lists them). Loopback
 * domains are dropped when a real one exists, unless
 * BM_BTL_OFI_DOMAIN_INCLUDE names them. Domains closest to this process
 * (hwloc) come first. */
#define BM_LOG_SUBSYS "btl/ofi"
#include "btl/btl_ofi_load.h"
#include "btl/ofi/ofi.h"
#include "util/log.h"

#include <rdma/fi_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libfabric API version we ask for: the headers' own, at least 1.5 (the
 * notes' minimum; mr_mode bits and FI_CONTEXT2 need it). */
#define OFI_MIN_VERSION FI_VERSION(1, 5)

/* Memory-registration modes we handle (ofi_mr.c). FI_MR_RAW (keys larger
 * than 64 bits) and FI_MR_MMU_NOTIFY are not: providers that require them
 * are not offered to us. */
#define OFI_MR_MODES                                                                               \
    (FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT)

bool bm_btl_ofi_provider_is_software(const char *prov_name)
{
    /* The core provider (first link of the chain) decides: these move data
     * through kernel sockets or shared memory, never through a NIC's own
     * engine. */
    static const char *const soft[] = {"tcp", "sockets", "udp", "shm", "sm2", "net", "rxm", "rxd"};
    size_t n = strcspn(prov_name, ";");
    for (size_t i = 0; i < sizeof(soft) / sizeof(soft[0]); i++)
        if (strlen(soft[i]) == n && strncmp(prov_name, soft[i], n) == 0)
            return true;
    return false;
}

bool bm_btl_ofi_provider_is_loopback(const struct fi_info *info)
{
    const char *prov = info->fabric_attr->prov_name ? info->fabric_attr->prov_name : "";
    size_t n = strcspn(prov, ";");
    if ((n == 3 && strncmp(prov, "shm", 3) == 0) || (n == 3 && strncmp(prov, "sm2", 3) == 0))
        return true;
    const char *dom = info->domain_attr->name ? info->domain_attr->name : "";
    const char *fab = info->fabric_attr->name ? info->fabric_attr->name : "";
    return strcmp(dom, "lo") == 0 || strncmp(fab, "127.", 4) == 0 || strcmp(fab, "::1/128") == 0;
}

struct fi_info *bm_btl_ofi_provider_hints(const struct bm_btl_ofi_component *comp, uint64_t caps)
{
    struct fi_info *h = fi_allocinfo();
    if (!h)
        return NULL;
    h->caps = caps;
    h->mode = FI_CONTEXT | FI_CONTEXT2; /* every request carries an fi_context2 */
    h->ep_attr->type = FI_EP_RDM;
    /* BM_BTL_OFI_MR_MODE=basic asks for libfabric 1.4's FI_MR_BASIC, which
     * the software providers honour: provider keys and virtual addresses
     * instead of our keys and offsets (a test of those paths here). */
    h->domain_attr->mr_mode =
        comp->cfg.mr_mode == BM_OFI_MR_MODE_BASIC ? FI_MR_BASIC : OFI_MR_MODES;
    /* Single-threaded jobs serialise the whole domain. With
     * MPI_THREAD_MULTIPLE our contexts keep threads apart (each context's
     * endpoint and queue under its lock), but registrations, address
     * inserts and FI_MR_ENDPOINT binds run on other threads at the same
     * time as transfers, which FI_THREAD_ENDPOINT and FI_THREAD_COMPLETION
     * leave to the application (providers drop their endpoint locks under
     * them: cxi, opx); only FI_THREAD_SAFE allows it with every provider
     * (FI_THREAD_ENDPOINT, asked before, even required one thread per
     * scalable endpoint across all its contexts). */
    h->domain_attr->threading = comp->mt ? FI_THREAD_SAFE : FI_THREAD_DOMAIN;
    h->domain_attr->control_progress = FI_PROGRESS_UNSPEC;
    h->domain_attr->data_progress = FI_PROGRESS_UNSPEC;
    h->domain_attr->resource_mgmt = FI_RM_ENABLED;
    /* A completion means the data is at the target (flush, and the
     * transport contract for sends); inject still completes at once. */
    h->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
    h->domain_attr->av_type = FI_AV_UNSPEC;
    return h;
}

/* The capability sets tried, richest first. */
static const uint64_t ofi_capsets[] = {
    FI_MSG | FI_RMA | FI_ATOMIC | FI_MULTI_RECV,
    FI_MSG | FI_RMA | FI_ATOMIC,
    FI_MSG | FI_RMA,
};

/* Providers that offer what we ask for but fail at it here, with what was
 * measured. They are skipped unless BM_BTL_OFI_PROVIDER_INCLUDE names them. */
static const struct {
    const char *prov;
    bool threads_only; /* bad only with MPI_THREAD_MULTIPLE */
    const char *why;
} ofi_known_bad[] = {
    {"ofi_rxd", false,
     "loses messages when a burst outruns its receive window (libfabric 1.17, measured: sends "
     "of a 3000-message stream never complete, and messages arrive out of order although it "
     "claims FI_ORDER_SAS)"},
    {"shm", true,
     "corrupts its shared region when several threads use one endpoint, even with every call "
     "serialised (libfabric 1.17, measured: crashes and atomics applied thousands of times in "
     "tests/fault/ofi_threads.c)"},
};

/* Why prov is known to fail in this job, or NULL. */
static const char *known_bad(const struct bm_btl_ofi_component *comp, const char *prov)
{
    for (size_t k = 0; k < sizeof(ofi_known_bad) / sizeof(ofi_known_bad[0]); k++)
        if (bm_btl_ofi_provider_match(ofi_known_bad[k].prov, prov) &&
            (!ofi_known_bad[k].threads_only || comp->mt))
            return ofi_known_bad[k].why;
    return NULL;
}

static bool domain_wanted(const struct bm_btl_ofi_component *comp, const struct fi_info *i)
{
    const char *inc = comp->cfg.domain_include;
    if (!inc || !*inc)
        return true;
    return bm_btl_ofi_list_has(inc, i->domain_attr->name, strlen(i->domain_attr->name));
}

/* Pass the filters and our own requirements? */
static bool info_usable(const struct bm_btl_ofi_component *comp, const struct fi_info *i, char *why,
                        size_t whylen)
{
    const char *prov = i->fabric_attr->prov_name;
    if (!prov || !i->domain_attr->name || !i->fabric_attr->name)
        return false;
    if (comp->cfg.prov_include[0] && !bm_btl_ofi_provider_match(comp->cfg.prov_include, prov)) {
        snprintf(why, whylen, "%s is not in BM_BTL_OFI_PROVIDER_INCLUDE=%s", prov,
                 comp->cfg.prov_include);
        return false;
    }
    const char *bad = known_bad(comp, prov);
    if (bad && !bm_btl_ofi_provider_match(comp->cfg.prov_include, prov)) {
        snprintf(why, whylen,
                 "%s is skipped: %s; name it in BM_BTL_OFI_PROVIDER_INCLUDE to use it anyway", prov,
                 bad);
        return false;
    }
    if (bm_btl_ofi_provider_match(comp->cfg.prov_exclude, prov)) {
        snprintf(why, whylen, "%s is in BM_BTL_OFI_PROVIDER_EXCLUDE=%s", prov,
                 comp->cfg.prov_exclude);
        return false;
    }
    uint64_t mr_mode = bm_btl_ofi_mr_mode_bits(i->domain_attr->mr_mode);
    if (mr_mode & ~(uint64_t)OFI_MR_MODES) {
        snprintf(why, whylen, "%s needs memory-registration modes we do not handle (0x%llx)", prov,
                 (unsigned long long)(mr_mode & ~(uint64_t)OFI_MR_MODES));
        return false;
    }
    if (i->src_addrlen == 0 && i->addr_format == FI_FORMAT_UNSPEC) {
        snprintf(why, whylen, "%s gives no address format", prov);
        return false;
    }
    return domain_wanted(comp, i);
}

static int info_count(struct fi_info *const *v)
{
    int n = 0;
    while (v[n])
        n++;
    return n;
}

bm_status_t bm_btl_ofi_provider_select(struct bm_btl_ofi_component *comp,
                                       struct fi_info ***infos_out, int *count_out)
{
    uint32_t version = comp->api_version;
    struct fi_info *list = NULL;
    char why[400] = "";
    int last_rc = 0;
    const char *fi_provider = getenv("FI_PROVIDER");
    for (size_t s = 0; s < sizeof(ofi_capsets) / sizeof(ofi_capsets[0]) && !list; s++) {
        struct fi_info *hints = bm_btl_ofi_provider_hints(comp, ofi_capsets[s]);
        if (!hints)
            return BM_ERR_NO_MEMORY;
        struct fi_info *got = NULL;
        int rc = fi_getinfo(version, NULL, NULL, 0, hints, &got);
        fi_freeinfo(hints);
        if (rc != 0) {
            last_rc = rc;
            continue;
        }
        /* Keep the first provider (libfabric's preference) that passes. */
        char chosen[64] = "";
        for (struct fi_info *i = got; i; i = i->next)
            if (info_usable(comp, i, why, sizeof(why))) {
                snprintf(chosen, sizeof(chosen), "%s", i->fabric_attr->prov_name);
                break;
            }
        if (chosen[0] && known_bad(comp, chosen) && !comp->querying)
            bm_log_warn("provider %s was asked for by BM_BTL_OFI_PROVIDER_INCLUDE, but it %s",
                        chosen, known_bad(comp, chosen));
        if (!chosen[0]) {
            fi_freeinfo(got);
            continue;
        }
        /* One info per domain of that provider. */
        int n = 0;
        for (struct fi_info *i = got; i; i = i->next)
            n++;
        struct fi_info **v = calloc((size_t)n + 1, sizeof(*v));
        if (!v) {
            fi_freeinfo(got);
            return BM_ERR_NO_MEMORY;
        }
        int k = 0;
        bool any_real = false;
        for (struct fi_info *i = got; i; i = i->next) {
            if (strcmp(i->fabric_attr->prov_name, chosen) != 0 ||
                !info_usable(comp, i, why, sizeof(why)))
                continue;
            bool dup = false;
            for (int j = 0; j < k && !dup; j++)
                dup = strcmp(v[j]->domain_attr->name, i->domain_attr->name) == 0;
            if (dup)
                continue;
            v[k] = fi_dupinfo(i);
            if (!v[k])
                break;
            any_real |= !bm_btl_ofi_provider_is_loopback(i);
            k++;
        }
        fi_freeinfo(got);
        /* Loopback domains only when nothing else exists or when asked. */
        if (any_real && !comp->cfg.domain_include[0]) {
            int w = 0;
            for (int j = 0; j < k; j++) {
                if (bm_btl_ofi_provider_is_loopback(v[j]))
                    fi_freeinfo(v[j]);
                else
                    v[w++] = v[j];
            }
            k = w;
            v[k] = NULL;
        }
        if (k > comp->cfg.max_modules) {
            for (int j = comp->cfg.max_modules; j < k; j++)
                fi_freeinfo(v[j]);
            k = comp->cfg.max_modules;
            v[k] = NULL;
        }
        /* Closest NICs first (stable: libfabric's order among equals). */
        int near[64];
        int nn = k < 64 ? k : 64;
        bm_btl_ofi_topo_near(v, nn, near);
        struct fi_info *sorted[64];
        int w = 0;
        for (int pass = 1; pass >= -1; pass--)
            for (int j = 0; j < nn; j++)
                if (near[j] == pass)
                    sorted[w++] = v[j];
        for (int j = 0; j < nn; j++)
            v[j] = sorted[j];
        *infos_out = v;
        *count_out = info_count(v);
        list = v[0];
        if (list)
            bm_log_debug("provider %s: %d domain(s), caps set %zu", chosen, *count_out, s);
        else
            free(v);
    }
    if (list)
        return BM_OK;
    if (why[0])
        snprintf(comp->why, sizeof(comp->why), "no usable provider: %s", why);
    else if (last_rc)
        snprintf(comp->why, sizeof(comp->why),
                 "no libfabric provider offers FI_EP_RDM endpoints with FI_MSG and FI_RMA%s%s: "
                 "%s",
                 fi_provider ? " among FI_PROVIDER=" : "", fi_provider ? fi_provider : "",
                 fi_strerror(-last_rc));
    else
        snprintf(comp->why, sizeof(comp->why), "no libfabric provider matched");
    return BM_ERR_NOT_AVAILABLE;
}

void bm_btl_ofi_provider_survey(const struct bm_btl_ofi_component *comp, const char *chosen,
                                char *buf, size_t len)
{
    buf[0] = '\0';
    struct fi_info *hints = bm_btl_ofi_provider_hints(comp, FI_MSG | FI_RMA);
    struct fi_info *got = NULL;
    if (!hints || fi_getinfo(comp->api_version, NULL, NULL, 0, hints, &got) != 0) {
        fi_freeinfo(hints);
        return;
    }
    fi_freeinfo(hints);
    size_t off = 0;
    char seen[512] = ";";
    for (struct fi_info *i = got; i && off < len; i = i->next) {
        const char *prov = i->fabric_attr->prov_name;
        char key[80];
        snprintf(key, sizeof(key), ";%s;", prov);
        if (strcmp(prov, chosen) == 0 || strstr(seen, key))
            continue;
        snprintf(seen + strlen(seen), sizeof(seen) - strlen(seen), "%s;", prov);
        char why[400] = "";
        bool ok = info_usable(comp, i, why, sizeof(why));
        int n = snprintf(buf + off, len - off, "%s%s%s%s%s", off ? "; " : "", prov, ok ? "" : " (",
                         ok ? "" : why, ok ? "" : ")");
        if (n > 0)
            off += (size_t)n;
    }
    fi_freeinfo(got);
}
