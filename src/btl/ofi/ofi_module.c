/* Modules and endpoints of the ofi transport. A module opens one domain of
 * the chosen provider: fabric, domain, an address vector, and either a
 * scalable endpoint with BM_BTL_OFI_CONTEXTS transmit/receive context pairs
 * (when the provider has them and more than one is asked for) or one
 * endpoint that every context aliases. Its attributes for the PML follow
 * from what the provider reported: inject size, ordering, atomics, and the
 * exclusivity of a hardware NIC (above tcp) or of a provider emulated over
 * sockets or shared memory (below tcp and dgram, so BM_BTL must name ofi).
 *
 * Endpoints pair a local module with a peer's module on the same fabric
 * (same provider, fabric name and address format; loopback domains only
 * with peers on this node), preferring the peer module of the same domain
 * name. A path that fails (an error completion that says the link is gone,
 * or an operation with no completion for BM_BTL_OFI_TIMEOUT) is reported
 * through the error callback first; then everything in flight to the peer
 * completes with the error. A path is also judged by whether the peer
 * answers: completions of the socket providers do not prove delivery (tcp
 * completes a send once the kernel took it) and a send by inject has none,
 * so when we sent to a peer and heard nothing back for half of
 * BM_BTL_OFI_TIMEOUT we PING it, and fail the path when its PONG does not
 * come within the other half. Every BM_BTL_OFI_PROBE_INTERVAL a failed path
 * gets a fresh address-vector entry (connection-based providers drop the
 * dead connection with the old one) and a PING; its PONG, which proves the
 * path works both ways, reports the path recovered. */
#define BM_LOG_SUBSYS "btl/ofi"
#include "btl/ofi/ofi.h"
#include "util/clock.h"
#include "util/log.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bm_status_t mod_fail(struct bm_btl_ofi_module *m, const char *what, int rc)
{
    bm_log_warn("%s: %s failed: %s; this domain is not used", m->super.name, what,
                fi_strerror(-rc));
    return BM_ERR_NOT_AVAILABLE;
}

/* The shm provider names each endpoint's 16 MiB shared region after the
 * endpoint's source address, "fi_shm://<pid>" by default, which becomes
 * /dev/shm/<pid>:<uid>:<n>: a process that dies without closing its
 * endpoint (SIGKILL, a node's OOM killer) leaves that file behind, and no
 * one knows whose it is. We give the endpoint the job-scoped name
 * bm-<jobid>-ofi-<rank>-<n> instead (runtime/rte.h's convention), so that
 * bmrun and its daemons remove it with the job's other files. A string
 * without the "fi_shm://" prefix is used by the provider as the name as it
 * stands (libfabric 1.17 smr_endpoint_name); <n> keeps the endpoints of
 * several modules or instances in one process apart. Other providers keep
 * the address libfabric chose. */
static bm_status_t mod_shm_name(struct bm_btl_ofi_module *m)
{
    static _Atomic unsigned shm_seq;
    if (m->info->addr_format != FI_ADDR_STR || strcspn(m->prov_name, ";") != 3 ||
        strncmp(m->prov_name, "shm", 3) != 0)
        return BM_OK;
    const struct bm_rte_proc *self = bm_btl_rte_self(m->comp->rte);
    char name[96];
    int n = snprintf(name, sizeof(name), "bm-%s-ofi-%d-%u", self->jobid, self->rank,
                     atomic_fetch_add(&shm_seq, 1));
    if (n < 0 || (size_t)n >= sizeof(name)) {
        bm_log_warn("%s: job id '%s' too long for a shared-memory name; this domain is not used",
                    m->super.name, self->jobid);
        return BM_ERR_NOT_AVAILABLE;
    }
    char *copy = strdup(name);
    if (!copy)
        return BM_ERR_NO_MEMORY;
    free(m->info->src_addr);
    m->info->src_addr = copy;
    m->info->src_addrlen = (size_t)n + 1;
    return BM_OK;
}

static int bits_for(size_t n)
{
    int b = 0;
    while (((size_t)1 << b) < n)
        b++;
    return b;
}

/* Link speed of the domain when it is a network interface (Mbit/s). */
static uint32_t mod_bandwidth(const struct fi_info *info)
{
    if (info->nic && info->nic->link_attr && info->nic->link_attr->speed)
        return (uint32_t)(info->nic->link_attr->speed / 1000000);
    char path[128];
    snprintf(path, sizeof(path), "/sys/class/net/%s/speed", info->domain_attr->name);
    FILE *f = fopen(path, "r");
    long speed = 0;
    if (f) {
        if (fscanf(f, "%ld", &speed) != 1)
            speed = 0;
        fclose(f);
    }
    return speed > 0 ? (uint32_t)speed : 10000;
}

static void mod_attributes(struct bm_btl_ofi_module *m, int near)
{
    const struct bm_btl_ofi_config *cfg = &m->comp->cfg;
    struct bm_btl_module *s = &m->super;
    s->caps = BM_BTL_CAP_SEND | BM_BTL_CAP_SENDI | BM_BTL_CAP_SEND_INPLACE | BM_BTL_CAP_PUT |
              BM_BTL_CAP_GET | BM_BTL_CAP_REG_MEM | BM_BTL_CAP_FAILOVER;
    /* Sends of one peer leave from one context and arrive in one receive
     * queue, in order when the provider keeps send-after-send order; with
     * threads spread over contexts that holds per thread only. ofi_rxd
     * claims FI_ORDER_SAS but, measured with libfabric 1.17, delivers
     * messages out of order once a burst outruns its receive window and
     * packets are resent. */
    if ((m->info->tx_attr->msg_order & FI_ORDER_SAS) && (!m->mt || m->nctx == 1) &&
        !bm_btl_ofi_provider_match("ofi_rxd", m->prov_name))
        s->caps |= BM_BTL_CAP_ORDERED;
    if (cfg->exclusivity >= 0)
        s->exclusivity = (uint32_t)cfg->exclusivity;
    else
        s->exclusivity = m->software ? BM_BTL_EXCL_LOW + 5 : BM_BTL_EXCL_HIGH;
    s->latency = (m->software ? 45 : 10) + (near == 0 ? 3 : 0);
    s->bandwidth = mod_bandwidth(m->info);
    s->eager_limit = cfg->eager_limit;
    s->rndv_eager_limit = cfg->eager_limit;
    s->max_send_size = cfg->max_send_size;
    size_t rma_max = m->max_msg_size ? m->max_msg_size : (size_t)1 << 30;
    if (rma_max > (size_t)1 << 30)
        rma_max = (size_t)1 << 30;
    s->rdma_pipeline_send_length = cfg->eager_limit;
    s->rdma_pipeline_frag_size = rma_max;
    /* The PML reads rendezvous messages from this size on (RGET). */
    s->min_rdma_pipeline_size = cfg->rndv_get;
    if (cfg->rndv_get > 0)
        s->caps |= BM_BTL_CAP_RNDV_GET;
    s->put_limit = s->get_limit = rma_max;
    s->put_alignment = s->get_alignment = 1;
    s->reg_handle_size = sizeof(struct bm_btl_ofi_rkey);
}

bm_status_t bm_btl_ofi_module_open(struct bm_btl_ofi_component *comp, int index,
                                   const struct fi_info *info, int near,
                                   struct bm_btl_ofi_module **module_out)
{
    const struct bm_btl_ofi_config *cfg = &comp->cfg;
    struct bm_btl_ofi_module *m = calloc(1, sizeof(*m));
    if (!m)
        return BM_ERR_NO_MEMORY;
    m->comp = comp;
    m->index = index;
    m->mt = comp->mt;
    pthread_mutex_init(&m->lock, NULL);
    pthread_mutex_init(&m->watch_lock, NULL);
    pthread_mutex_init(&m->ack_lock, NULL);
    snprintf(m->prov_name, sizeof(m->prov_name), "%s", info->fabric_attr->prov_name);
    snprintf(m->fabric_name, sizeof(m->fabric_name), "%s", info->fabric_attr->name);
    snprintf(m->domain_name, sizeof(m->domain_name), "%s", info->domain_attr->name);
    snprintf(m->super.name, sizeof(m->super.name), "ofi:%.24s:%.24s", m->prov_name, m->domain_name);
    m->super.ops = &bm_btl_ofi_ops;
    m->super.component = &comp->super;
    bm_status_t st = BM_ERR_NO_MEMORY;
    m->info = fi_dupinfo(info);
    m->eps = calloc((size_t)comp->size, sizeof(*m->eps));
    if (!m->info || !m->eps)
        goto err;
    m->software = bm_btl_ofi_provider_is_software(m->prov_name);
    m->loopback = bm_btl_ofi_provider_is_loopback(info);
    m->manual = info->domain_attr->data_progress == FI_PROGRESS_MANUAL;
    m->yield_rdma = m->software && !m->manual;
    m->mr_mode = bm_btl_ofi_mr_mode_bits(info->domain_attr->mr_mode);
    m->mr_local = (m->mr_mode & FI_MR_LOCAL) || cfg->mr_local == BM_OFI_MR_LOCAL_ON;
    m->multi_recv = (info->caps & FI_MULTI_RECV) != 0;
    m->inject_size = info->tx_attr->inject_size;
    /* A provider whose own thread sends (sockets: automatic progress)
     * only queues an injected message for that thread and reports nothing
     * back, so nothing can wait for it: closing the endpoint dropped what
     * had not reached the peer's provider yet (MPI_Finalize's last barrier
     * message: mt_stress with 4 threads and contexts hung in 6 of 12 runs;
     * 0 of 12 without inject). Closing first sends a FENCE with a
     * completion (delivery) behind them from each context that injected to
     * a peer, and the drain waits for those. Providers we drive (rxm: the
     * calling thread writes the message to its socket) and NICs need none. */
    m->fence_close = m->software && !m->manual;
    m->max_msg_size = info->ep_attr->max_msg_size;
    m->rma_flags = FI_DELIVERY_COMPLETE;
    /* Our own delivery acknowledgements where completions do not prove
     * delivery: the socket providers across a network (ofi_ack.c). */
    m->acks = cfg->acks == BM_OFI_ACKS_ON ||
              (cfg->acks == BM_OFI_ACKS_AUTO && m->software && !m->loopback);
    m->acks_same_host = cfg->acks == BM_OFI_ACKS_ON;
    m->ack_list = calloc((size_t)comp->size, sizeof(*m->ack_list));
    if (!m->ack_list)
        goto err;
    if ((st = mod_shm_name(m)) != BM_OK)
        goto err;
    st = BM_ERR_NOT_AVAILABLE;
    int rc = fi_fabric(m->info->fabric_attr, &m->fabric, NULL);
    if (rc) {
        st = mod_fail(m, "fi_fabric", rc);
        goto err;
    }
    if ((rc = fi_domain(m->fabric, m->info, &m->domain, NULL))) {
        st = mod_fail(m, "fi_domain", rc);
        goto err;
    }
    /* Contexts: a scalable endpoint when asked for more than one and the
     * provider has them; otherwise one endpoint aliased by every context. */
    int want = cfg->contexts;
    size_t maxtx = info->domain_attr->max_ep_tx_ctx, maxrx = info->domain_attr->max_ep_rx_ctx;
    m->sep = want > 1 && !cfg->disable_sep && maxtx > 1 && maxrx > 1;
    m->nctx = 1;
    if (m->sep) {
        m->nctx = want;
        if ((size_t)m->nctx > maxtx)
            m->nctx = (int)maxtx;
        if ((size_t)m->nctx > maxrx)
            m->nctx = (int)maxrx;
        m->rx_ctx_bits = bits_for(maxrx);
    } else if (want > 1) {
        bm_log_info("%s: %s; %d contexts alias one endpoint", m->super.name,
                    cfg->disable_sep ? "BM_BTL_OFI_DISABLE_SEP is set"
                                     : "the provider has no scalable endpoints",
                    want);
    }
    struct fi_av_attr av_attr = {
        .type =
            info->domain_attr->av_type != FI_AV_UNSPEC ? info->domain_attr->av_type : FI_AV_TABLE,
        .rx_ctx_bits = m->rx_ctx_bits,
        .count = (size_t)comp->size,
    };
    if ((rc = fi_av_open(m->domain, &av_attr, &m->av, NULL))) {
        st = mod_fail(m, "fi_av_open", rc);
        goto err;
    }
    if (m->sep) {
        m->info->ep_attr->tx_ctx_cnt = (size_t)m->nctx;
        m->info->ep_attr->rx_ctx_cnt = (size_t)m->nctx;
        if ((rc = fi_scalable_ep(m->domain, m->info, &m->ep, m))) {
            st = mod_fail(m, "fi_scalable_ep", rc);
            goto err;
        }
        if ((rc = fi_scalable_ep_bind(m->ep, &m->av->fid, 0))) {
            st = mod_fail(m, "fi_scalable_ep_bind(av)", rc);
            goto err;
        }
    } else {
        if ((rc = fi_endpoint(m->domain, m->info, &m->ep, m))) {
            st = mod_fail(m, "fi_endpoint", rc);
            goto err;
        }
        if ((rc = fi_ep_bind(m->ep, &m->av->fid, 0))) {
            st = mod_fail(m, "fi_ep_bind(av)", rc);
            goto err;
        }
    }
    m->ctx = calloc((size_t)m->nctx, sizeof(*m->ctx));
    if (!m->ctx) {
        st = BM_ERR_NO_MEMORY;
        goto err;
    }
    for (int i = 0; i < m->nctx; i++)
        if ((st = bm_btl_ofi_context_open(m, i)) != BM_OK)
            goto err;
    if ((rc = fi_enable(m->ep))) {
        st = mod_fail(m, "fi_enable", rc);
        goto err;
    }
    m->addrlen = sizeof(m->addr);
    if ((rc = fi_getname(&m->ep->fid, m->addr, &m->addrlen))) {
        st = mod_fail(m, "fi_getname", rc);
        goto err;
    }
    bm_btl_ofi_sock_init(m);
    if ((st = bm_btl_ofi_mr_init(m)) != BM_OK)
        goto err;
    m->count_overlaps = m->mt && m->nctx > 1 && cfg->stats;
    mod_attributes(m, near);
    bm_btl_ofi_atomic_probe(m);
    for (int i = 0; i < m->nctx; i++) {
        if ((st = bm_btl_ofi_fpool_init(&m->ctx[i])) != BM_OK ||
            (st = bm_btl_ofi_recv_init(&m->ctx[i])) != BM_OK)
            goto err;
    }
    bm_log_debug("opened %s: fabric %s, %d context(s)%s, mr_mode 0x%llx%s, inject %zu, %s "
                 "progress, multi-receive %s",
                 m->super.name, m->fabric_name, m->nctx, m->sep ? " (scalable endpoint)" : "",
                 (unsigned long long)m->mr_mode, m->mr_local ? " (local registration)" : "",
                 m->inject_size, m->manual ? "manual" : "automatic", m->multi_recv ? "yes" : "no");
    *module_out = m;
    return BM_OK;
err:
    bm_btl_ofi_module_close(m);
    return st;
}

/* ---- left open ----------------------------------------------------------------------
 *
 * libfabric's tcp provider before 1.18.0 (Debian 12 ships 1.17.0) keeps an
 * RMA read's response at the head of its read queue while the response's
 * data is being received. Closing that connection's endpoint then (or
 * disabling it) completes the read twice: once from the queue, and once as
 * the receive in progress, after the first completion freed the entry and
 * zeroed its context. rxm, closing its connections inside fi_close of our
 * endpoint, takes that second completion (an error, FI_ECANCELED) and reads
 * its NULL context: SIGSEGV in fi_close (the CI's ofi_netns_failover, 1 run
 * in 38 here: the black-holed rail cut an rxm rendezvous read in the middle
 * of its response). Fixed upstream in 1.18.0 (commit a74ea0fcd, "prov/tcp:
 * Suspicion of bug where RX entry is freed twice"). Nothing in libfabric's
 * interface finishes or cancels such a read, so a module that may have one
 * (a path failed, or operations or posted receives the drain at close could
 * not get back: reads by rxm's own rendezvous are invisible to us) is left
 * open on those versions: endpoint, queues, registrations, address vector,
 * domain, fabric and our memory stay as they are, on a list that keeps them
 * reachable, until the process ends. That is safe only where no provider
 * thread runs: rxm over tcp with manual progress (ours) makes no call unless
 * we do, and we make none on a closed module. Where a provider thread runs
 * (automatic progress forced with FI_OFI_RXM_DATA_AUTO_PROGRESS), closing
 * is the lesser risk. Counted by bm_btl_ofi_modules_left_open (tests). */
static pthread_mutex_t left_open_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bm_btl_ofi_module *left_open;
static int nleft_open;

int bm_btl_ofi_modules_left_open(void)
{
    pthread_mutex_lock(&left_open_lock);
    int n = nleft_open;
    pthread_mutex_unlock(&left_open_lock);
    return n;
}

/* Would closing m's endpoint now risk the tcp provider's double completion? */
static bool close_risks_read_fault(const struct bm_btl_ofi_module *m, bool drained)
{
    if (fi_version() >= FI_VERSION(1, 18) || !bm_btl_ofi_provider_match("tcp", m->prov_name) ||
        !m->manual)
        return false;
    return !drained || atomic_load(&m->had_failures);
}

static void leave_open(struct bm_btl_ofi_module *m, bool drained)
{
    bm_log_debug("%s: left open at close (%s): libfabric %u.%u's tcp provider may hold an RMA read "
                 "whose response was cut off, and closing would complete it twice (fixed in "
                 "libfabric 1.18.0)",
                 m->super.name, drained ? "a path failed" : "operations still in flight",
                 FI_MAJOR(fi_version()), FI_MINOR(fi_version()));
    pthread_mutex_lock(&left_open_lock);
    m->left_open_next = left_open;
    left_open = m;
    nleft_open++;
    pthread_mutex_unlock(&left_open_lock);
}

void bm_btl_ofi_module_close(struct bm_btl_ofi_module *m)
{
    if (!m)
        return;
    int rc;
    /* 0. Acknowledgements we still owe go out now: a peer may be waiting
     *    for them to complete its last sends (ofi_ack.c). */
    bm_btl_ofi_ack_flush_all(m);
    if (m->fence_close)
        bm_btl_ofi_send_fences(m);
    m->closing = true;
    if (m->eps && m->ctx)
        bm_btl_ofi_endpoint_fail_run(m);
    /* 1. Let the provider give back what it holds: receives are cancelled,
     *    operations in flight get a bounded time to complete. */
    bool drained = true;
    for (int i = 0; m->ctx && i < m->nctx; i++)
        if (m->ctx[i].cq && !bm_btl_ofi_context_drain(&m->ctx[i], 1000))
            drained = false;
    if (m->ep && close_risks_read_fault(m, drained)) {
        leave_open(m, drained);
        return;
    }
    /* 2. Endpoints: once closed, no provider thread (sockets runs its own
     *    progress thread) touches our contexts or buffers again. */
    for (int i = 0; m->ctx && i < m->nctx; i++)
        bm_btl_ofi_context_close(&m->ctx[i]);
    if (m->ep && (rc = fi_close(&m->ep->fid)))
        bm_log_warn("%s: closing the endpoint: %s", m->super.name, fi_strerror(-rc));
    m->ep = NULL;
    /* 3. Registrations (bound to the endpoint with FI_MR_ENDPOINT), queues,
     *    and our memory; then the address vector, domain and fabric. */
    bm_btl_ofi_mr_fini(m);
    for (int i = 0; m->ctx && i < m->nctx; i++)
        if (m->ctx[i].m)
            bm_btl_ofi_context_release(&m->ctx[i]);
    free(m->ctx);
    m->ctx = NULL;
    if (m->av && (rc = fi_close(&m->av->fid)))
        bm_log_warn("%s: closing the address vector: %s", m->super.name, fi_strerror(-rc));
    /* rxm keeps connection attempts towards a peer whose path failed
     * (probes) inside the domain, which then refuses to close: the process
     * is ending, so that is only worth a note. */
    if (m->domain && (rc = fi_close(&m->domain->fid))) {
        if (m->had_failures)
            bm_log_debug("%s: closing the domain after path failures: %s", m->super.name,
                         fi_strerror(-rc));
        else
            bm_log_warn("%s: closing the domain: %s", m->super.name, fi_strerror(-rc));
    }
    if (m->fabric && (rc = fi_close(&m->fabric->fid))) {
        if (m->had_failures)
            bm_log_debug("%s: closing the fabric after path failures: %s", m->super.name,
                         fi_strerror(-rc));
        else
            bm_log_warn("%s: closing the fabric: %s", m->super.name, fi_strerror(-rc));
    }
    if (m->eps)
        for (int r = 0; r < m->comp->size; r++)
            if (m->eps[r]) {
                bm_btl_ofi_ack_ep_fini(m->eps[r]);
                free(m->eps[r]);
            }
    free(m->eps);
    free(m->ack_list);
    if (m->info)
        fi_freeinfo(m->info);
    pthread_mutex_destroy(&m->lock);
    pthread_mutex_destroy(&m->watch_lock);
    pthread_mutex_destroy(&m->ack_lock);
    free(m);
}

/* ---- peers ------------------------------------------------------------------------ */

/* The peer's module record that local module m pairs with, or NULL. On
 * success *addr_out points at its endpoint address. */
static const struct bm_btl_ofi_modex_module *peer_pair(struct bm_btl_ofi_module *m, int rank,
                                                       int *peer_mod_out, const uint8_t **addr_out)
{
    const void *data;
    size_t len;
    if (bm_btl_rte_modex_get(m->comp->rte, rank, "btl.ofi", &data, &len) != BM_OK ||
        len < sizeof(struct bm_btl_ofi_modex_hdr))
        return NULL;
    const struct bm_btl_ofi_modex_hdr *h = data;
    if (h->magic != BM_BTL_OFI_MODEX_MAGIC || h->version != BM_BTL_OFI_MODEX_VERSION)
        return NULL;
    bool same_node = bm_btl_rte_node_of(m->comp->rte, rank) == m->comp->node;
    const uint8_t *p = (const uint8_t *)(h + 1), *end = (const uint8_t *)data + len;
    const struct bm_btl_ofi_modex_module *cand[16];
    const uint8_t *cand_addr[16];
    int cand_idx[16], ncand = 0, same = -1;
    for (int i = 0; i < h->nmodules; i++) {
        if (p + sizeof(struct bm_btl_ofi_modex_module) > end)
            return NULL;
        const struct bm_btl_ofi_modex_module *r = (const void *)p;
        const uint8_t *a = p + sizeof(*r);
        if (a + r->addrlen > end)
            return NULL;
        p += sizeof(*r) + ((r->addrlen + 7u) & ~7u);
        if (strncmp(r->prov_name, m->prov_name, sizeof(r->prov_name)) != 0 ||
            strncmp(r->fabric_name, m->fabric_name, sizeof(r->fabric_name)) != 0 ||
            r->addr_format != m->info->addr_format)
            continue;
        if (((r->flags & BM_BTL_OFI_MOD_F_LOOPBACK) || m->loopback) && !same_node)
            continue;
        if (ncand == 16)
            break;
        if (same < 0 && strncmp(r->domain_name, m->domain_name, sizeof(r->domain_name)) == 0)
            same = ncand;
        cand[ncand] = r;
        cand_addr[ncand] = a;
        cand_idx[ncand] = i;
        ncand++;
    }
    if (ncand == 0)
        return NULL;
    /* Several peer modules on one fabric: the one of the same domain name,
     * else spread the local modules over them. */
    int k = same >= 0 ? same : m->index % ncand;
    *peer_mod_out = cand_idx[k];
    *addr_out = cand_addr[k];
    return cand[k];
}

static struct bm_btl_ofi_endpoint *endpoint_create(struct bm_btl_ofi_module *m, int rank)
{
    int peer_mod;
    const uint8_t *addr;
    const struct bm_btl_ofi_modex_module *r = peer_pair(m, rank, &peer_mod, &addr);
    if (!r)
        return NULL;
    struct bm_btl_ofi_endpoint *ep = calloc(1, sizeof(*ep));
    if (!ep)
        return NULL;
    ep->m = m;
    ep->rank = rank;
    ep->peer_mod = peer_mod;
    ep->peer_nrx = r->nrx ? r->nrx : 1;
    ep->rx_ctx_bits = r->rx_ctx_bits;
    snprintf(ep->desc, sizeof(ep->desc), "rank %d (domain %.24s, %s)", rank, r->domain_name,
             m->prov_name);
    if (ep->peer_nrx > 1 && (!m->sep || (1 << m->rx_ctx_bits) < ep->peer_nrx))
        ep->peer_nrx = 1; /* we cannot address its contexts: its first one takes everything */
    /* A peer on this node whose connection goes through lo: nothing
     * between the kernel and the peer's socket can be lost (ofi_ack.c). */
    bool same_host = bm_btl_rte_node_of(m->comp->rte, rank) == m->comp->node &&
                     bm_btl_ofi_sock_local(m, addr, r->addrlen);
    if (bm_btl_ofi_ack_ep_init(ep, same_host) != BM_OK) {
        free(ep);
        return NULL;
    }
    bm_btl_ofi_sock_ep_init(ep, addr, r->addrlen);
    int n = fi_av_insert(m->av, addr, 1, &ep->addr, 0, NULL);
    if (n != 1) {
        bm_btl_ofi_ack_ep_fini(ep);
        bm_log_warn("%s: cannot insert the address of %s into the address vector: %s",
                    m->super.name, ep->desc, n < 0 ? fi_strerror(-n) : "not inserted");
        free(ep);
        return NULL;
    }
    return ep;
}

struct bm_btl_ofi_endpoint *bm_btl_ofi_endpoint_get(struct bm_btl_ofi_module *m, int rank)
{
    if (rank < 0 || rank >= m->comp->size)
        return NULL;
    /* This process itself: a loopback endpoint, asked for by one-sided MPI
     * for its atomics on its own window (src/mpi/README.md). Not on shm,
     * whose atomics then came out wrong (osc_atomic at 2 processes). */
    if (rank == m->comp->rank &&
        (strncmp(m->prov_name, "shm", 3) == 0 || strncmp(m->prov_name, "sm2", 3) == 0))
        return NULL;
    /* Published with release order: a thread that finds the pointer sees
     * the endpoint it points to complete. */
    struct bm_btl_ofi_endpoint *ep = __atomic_load_n(&m->eps[rank], __ATOMIC_ACQUIRE);
    if (ep)
        return ep;
    pthread_mutex_lock(&m->lock);
    ep = m->eps[rank];
    if (!ep) {
        ep = endpoint_create(m, rank);
        __atomic_store_n(&m->eps[rank], ep, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&m->lock);
    return ep;
}

bm_status_t bm_btl_ofi_add_procs(struct bm_btl_module *mod, int nprocs, const int *ranks,
                                 struct bm_btl_endpoint **endpoints_out,
                                 struct bm_util_bitmap *reachable)
{
    struct bm_btl_ofi_module *m = (struct bm_btl_ofi_module *)mod;
    for (int i = 0; i < nprocs; i++) {
        struct bm_btl_ofi_endpoint *ep = bm_btl_ofi_endpoint_get(m, ranks[i]);
        if (!ep)
            continue;
        endpoints_out[i] = (struct bm_btl_endpoint *)ep;
        bm_util_bitmap_set(reachable, (size_t)i);
    }
    return BM_OK;
}

bm_status_t bm_btl_ofi_del_procs(struct bm_btl_module *mod, int nprocs, const int *ranks,
                                 struct bm_btl_endpoint **endpoints)
{
    struct bm_btl_ofi_module *m = (struct bm_btl_ofi_module *)mod;
    for (int i = 0; i < nprocs; i++) {
        struct bm_btl_ofi_endpoint *ep = (struct bm_btl_ofi_endpoint *)endpoints[i];
        if (!ep)
            continue;
        (void)bm_btl_ofi_flush(mod, endpoints[i]);
        /* The endpoint object stays until the module closes: completions
         * the provider still returns may name it. */
        (void)ranks;
        (void)m;
    }
    return BM_OK;
}

/* ---- failure and recovery -------------------------------------------------------------- */

/* Complete every operation in flight to ep with status (progress only). */
static void endpoint_fail_ops(struct bm_btl_ofi_endpoint *ep, int status)
{
    struct bm_btl_ofi_module *m = ep->m;
    for (int i = 0; i < m->nctx; i++)
        bm_btl_ofi_context_fail_all(&m->ctx[i], ep, status);
    bm_btl_ofi_ack_fail(ep, status);
}

void bm_btl_ofi_endpoint_fail_run(struct bm_btl_ofi_module *m)
{
    if (!atomic_load_explicit(&m->fail_due, memory_order_relaxed) ||
        !atomic_exchange(&m->fail_due, false))
        return;
    for (int r = 0; r < m->comp->size; r++) {
        struct bm_btl_ofi_endpoint *ep = __atomic_load_n(&m->eps[r], __ATOMIC_ACQUIRE);
        int status = ep ? atomic_exchange(&ep->fail_pending, 0) : 0;
        if (status) {
            BM_OFI_COUNT(m, fails_deferred);
            endpoint_fail_ops(ep, status);
        }
    }
}

void bm_btl_ofi_endpoint_fail(struct bm_btl_ofi_endpoint *ep, int status, const char *what,
                              bool in_progress)
{
    struct bm_btl_ofi_module *m = ep->m;
    if (!bm_status_is_link(status) && !bm_status_is_peer(status))
        status = BM_ERR_LINK_DOWN;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&ep->fail_status, &expected, status))
        return; /* failed already */
    atomic_fetch_add(&m->nfailed, 1);
    m->had_failures = true;
    BM_OFI_COUNT(m, path_failures);
    atomic_store(&ep->stalled_since, 0);
    ep->ping_out = false;
    ep->probe_at = bm_util_clock_now_ns() + (uint64_t)m->comp->cfg.probe_ms * 1000000ull;
    if (!m->closing) {
        struct bm_btl_error err = {
            .kind = BM_BTL_ERROR_PEER,
            .endpoint = (struct bm_btl_endpoint *)ep,
            .peer = ep->rank,
            .status = status,
            .what = what,
        };
        m->super.error_cb(&m->super, &err, m->super.error_cbdata);
    }
    if (in_progress) {
        endpoint_fail_ops(ep, status);
        return;
    }
    /* Inside an operation: its own callbacks and those of the operations
     * other threads have in flight to ep run in progress. */
    atomic_store(&ep->fail_pending, status);
    atomic_store(&m->fail_due, true);
}

int bm_btl_ofi_endpoint_stalled(struct bm_btl_ofi_endpoint *ep, struct bm_btl_ofi_context *ctx)
{
    BM_OFI_COUNT(ep->m, stalls);
    /* Manual-progress providers free room only when driven. */
    bm_btl_ofi_context_drive(ctx);
    int timeout = ep->m->comp->cfg.timeout_ms;
    /* Under THREAD_MULTIPLE another thread may stamp stalled_since between our clock read
     * and the load: read the stamp first and never let a stamp newer than now wrap into an
     * 18446744073 s stall (an ASan CI run declared a healthy path dead that way). */
    uint64_t since = atomic_load_explicit(&ep->stalled_since, memory_order_acquire);
    uint64_t now = bm_util_clock_now_ns();
    if (!since) {
        uint64_t zero = 0;
        atomic_compare_exchange_strong(&ep->stalled_since, &zero, now);
        return BM_ERR_OUT_OF_RESOURCE;
    }
    if (timeout <= 0 || now <= since || now - since < (uint64_t)timeout * 1000000ull)
        return BM_ERR_OUT_OF_RESOURCE;
    char what[256];
    snprintf(what, sizeof(what),
             "the provider refused every operation to %s for %.1f s (BM_BTL_OFI_TIMEOUT=%d ms): "
             "the peer or the network path is presumed dead",
             ep->desc, (double)(now - since) / 1e9, timeout);
    bm_btl_ofi_endpoint_fail(ep, BM_ERR_TIMEOUT, what, false);
    return bm_btl_ofi_ep_failed(ep);
}

static void endpoint_recovered(struct bm_btl_ofi_endpoint *ep)
{
    struct bm_btl_ofi_module *m = ep->m;
    int failed = bm_btl_ofi_ep_failed(ep);
    if (!failed || m->closing || !atomic_compare_exchange_strong(&ep->fail_status, &failed, 0))
        return;
    atomic_fetch_sub(&m->nfailed, 1);
    BM_OFI_COUNT(m, path_recoveries);
    ep->ping_out = false;
    char what[160];
    snprintf(what, sizeof(what), "%s answered a probe", ep->desc);
    struct bm_btl_error err = {
        .kind = BM_BTL_ERROR_RECOVERED,
        .endpoint = (struct bm_btl_endpoint *)ep,
        .peer = ep->rank,
        .status = BM_OK,
        .what = what,
    };
    m->super.error_cb(&m->super, &err, m->super.error_cbdata);
}

void bm_btl_ofi_endpoint_ctl(struct bm_btl_ofi_endpoint *ep, const struct bm_btl_ofi_ctl_msg *msg)
{
    switch (msg->ctl) {
    case BM_BTL_OFI_CTL_PING:
        (void)bm_btl_ofi_send_ctl(ep, BM_BTL_OFI_CTL_PONG, msg->seq);
        break;
    case BM_BTL_OFI_CTL_ACK:
        bm_btl_ofi_ack_apply(ep, msg->ctx, msg->seq);
        break;
    case BM_BTL_OFI_CTL_FENCE:
        break; /* its completion at the sender was all it was for */
    case BM_BTL_OFI_CTL_PONG:
        if (msg->seq != atomic_load(&ep->ping_seq))
            break; /* an old probe's answer */
        /* The watcher may run on another thread's progress right now: it
         * reads ponged after ping_out (endpoint_watch). */
        atomic_store(&ep->ponged, true);
        atomic_store(&ep->ping_out, false);
        endpoint_recovered(ep);
        break;
    default:
        break;
    }
}

/* Send a PING (the watcher, under watch_lock). Marked out before it is
 * posted: its PONG may be read on another thread before fi_send returns
 * here, and must find it out (else the late mark would outlive the answer
 * and fail a healthy path half a timeout later). */
static bool endpoint_ping(struct bm_btl_ofi_endpoint *ep, uint64_t now)
{
    uint32_t seq = atomic_load_explicit(&ep->ping_seq, memory_order_relaxed) + 1;
    atomic_store(&ep->ping_seq, seq);
    ep->ping_at = now;
    atomic_store(&ep->ping_out, true);
    if (bm_btl_ofi_send_ctl(ep, BM_BTL_OFI_CTL_PING, seq) != BM_OK) {
        atomic_store(&ep->ping_out, false);
        return false;
    }
    BM_OFI_COUNT(ep->m, pings);
    return true;
}

/* A failed path: a fresh address-vector entry (connection-based providers
 * such as rxm give up the dead connection with the old one), then a PING;
 * its PONG reports the path recovered. */
static void endpoint_probe(struct bm_btl_ofi_endpoint *ep, uint64_t now)
{
    struct bm_btl_ofi_module *m = ep->m;
    if (m->comp->cfg.probe_ms <= 0 || now < ep->probe_at)
        return;
    ep->probe_at = now + (uint64_t)m->comp->cfg.probe_ms * 1000000ull;
    int peer_mod;
    const uint8_t *addr;
    if (!peer_pair(m, ep->rank, &peer_mod, &addr))
        return;
    fi_addr_t fresh;
    pthread_mutex_lock(&m->lock);
    int n = fi_av_insert(m->av, addr, 1, &fresh, 0, NULL);
    if (n == 1) {
        fi_addr_t old = ep->addr;
        /* Senders on other threads read it without the lock. */
        __atomic_store_n(&ep->addr, fresh, __ATOMIC_RELAXED);
        (void)fi_av_remove(m->av, &old, 1, 0);
    }
    pthread_mutex_unlock(&m->lock);
    (void)endpoint_ping(ep, now);
}

/* Do fragments sent to ep wait for its acknowledgement? (Each stream's
 * list under its context's lock: senders on other threads append.) */
static bool endpoint_unacked(const struct bm_btl_ofi_endpoint *ep)
{
    struct bm_btl_ofi_module *m = ep->m;
    bool any = false;
    for (int c = 0; ep->tx && c < m->nctx && !any; c++) {
        bm_btl_ofi_lock(&m->ctx[c]);
        any = !bm_util_list_empty(&ep->tx[c].unacked);
        bm_btl_ofi_unlock(&m->ctx[c]);
    }
    return any;
}

bool bm_btl_ofi_watch_due(const struct bm_btl_ofi_module *m)
{
    if (atomic_load(&m->nfailed) > 0)
        return true;
    for (int c = 0; c < m->nctx; c++)
        if (bm_btl_ofi_ninflight(&m->ctx[c]) > 0)
            return true;
    if (m->comp->cfg.timeout_ms == 0)
        return false;
    for (int r = 0; r < m->comp->size; r++) {
        const struct bm_btl_ofi_endpoint *ep = __atomic_load_n(&m->eps[r], __ATOMIC_ACQUIRE);
        if (!ep)
            continue;
        if (atomic_load_explicit(&ep->unanswered, memory_order_relaxed) || endpoint_unacked(ep))
            return true;
    }
    return false;
}

void bm_btl_ofi_endpoint_watch(struct bm_btl_ofi_module *m, uint64_t now)
{
    if (m->closing)
        return;
    uint64_t half = (uint64_t)m->comp->cfg.timeout_ms * 500000ull; /* half the timeout, in ns */
    for (int r = 0; r < m->comp->size; r++) {
        struct bm_btl_ofi_endpoint *ep = __atomic_load_n(&m->eps[r], __ATOMIC_ACQUIRE);
        if (!ep)
            continue;
        if (bm_btl_ofi_ep_failed(ep)) {
            ep->quiet_since = 0; /* a fresh quiet period once it recovers */
            endpoint_probe(ep, now);
            continue;
        }
        /* The PONG handler may run on another thread meanwhile: ping_out
         * first, then ponged, so that an answer is either seen here or
         * left for the next pass with the PING still counted out. */
        bool out = atomic_load(&ep->ping_out);
        if (atomic_exchange(&ep->ponged, false)) {
            /* The peer answered: we heard from it now. Without this, a
             * path busy enough that every pass found something owed (a
             * long stream: its acknowledgements always outstanding) was
             * failed one timeout after its first quiet pass although every
             * PING was answered. */
            ep->quiet_since = 0;
            continue;
        }
        /* Waiting means: we sent since we last heard from the peer, or
         * messages still wait for its acknowledgement (a reply that came
         * after them may have been sent before they arrived). */
        bool waiting =
            atomic_load_explicit(&ep->unanswered, memory_order_relaxed) || endpoint_unacked(ep);
        if (half == 0 || !waiting) {
            ep->quiet_since = 0;
            if (out)
                atomic_store(&ep->ping_out, false);
            continue;
        }
        if (!ep->quiet_since) {
            ep->quiet_since = now;
        } else if (!out && now - ep->quiet_since < 2 * half) {
            if (now - ep->quiet_since >= half)
                (void)endpoint_ping(ep, now);
        } else if (!out || now - ep->ping_at >= half) {
            /* No answer to the probe, or the probe could not even be
             * posted (a dead peer's address refuses connections). */
            char what[256];
            snprintf(what, sizeof(what),
                     "%s sent nothing back for %.1f s, not even an answer to a probe "
                     "(BM_BTL_OFI_TIMEOUT=%d ms): the peer or the network path is presumed dead",
                     ep->desc, (double)(now - ep->quiet_since) / 1e9, m->comp->cfg.timeout_ms);
            bm_btl_ofi_endpoint_fail(ep, BM_ERR_TIMEOUT, what, true);
        }
    }
}
