/* The libfabric wire of the dgram transport: FI_EP_DGRAM endpoints of any
 * provider that addresses peers by IP (FI_SOCKADDR_IN): "udp" here, usnic
 * on Cisco NICs; BM_BTL_DGRAM_PROVIDER_INCLUDE/_EXCLUDE (and FI_PROVIDER)
 * choose among them, libfabric's order decides the rest. As in the usnic
 * notes: fabric = physical port, domain = interface, endpoint = queue pair.
 * Each channel is its own endpoint with its own completion queue and
 * address vector. Datagrams are sent with FI_INJECT (the provider copies
 * them, so batch slots are free at once) and without send completions;
 * receives go into buffers posted on each endpoint and come back, with the
 * sender's address vector index (FI_SOURCE), through fi_cq_readfrom. The
 * udp provider reports a 1472-byte max_msg_size that it does not enforce
 * (larger sends fragment at the IP level): we enforce it by never making a
 * datagram larger than the provider's max_msg_size. Built only with
 * libfabric; chosen with BM_BTL_DGRAM_WIRE=ofi. */
#define BM_LOG_SUBSYS "btl/dgram"
#include "btl/btl_ofi_load.h"
#include "btl/dgram/dgram.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OFI_RX_POSTED 64

struct ofi_chan {
    struct fid_ep *ep;
    struct fid_cq *cq;
    struct fid_av *av;
    struct sockaddr_in *peers; /* address vector index -> address (FI_AV_TABLE) */
    size_t npeers, cap;
    uint8_t *rx; /* OFI_RX_POSTED buffers of mtu bytes */
};

struct ofi_state {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct ofi_chan ch[BM_DGRAM_NCH];
};

static void ofi_close(struct bm_btl_dgram_module *m)
{
    bm_btl_dgram_live_close(m);
    struct ofi_state *st = m->ch[0].wire_state;
    if (!st)
        return;
    for (int c = 0; c < BM_DGRAM_NCH; c++) {
        struct ofi_chan *oc = &st->ch[c];
        if (oc->ep)
            fi_close(&oc->ep->fid);
        if (oc->av)
            fi_close(&oc->av->fid);
        if (oc->cq)
            fi_close(&oc->cq->fid);
        free(oc->peers);
        free(oc->rx);
    }
    if (st->domain)
        fi_close(&st->domain->fid);
    if (st->fabric)
        fi_close(&st->fabric->fid);
    if (st->info)
        fi_freeinfo(st->info);
    free(st);
    m->ch[0].wire_state = m->ch[1].wire_state = NULL;
}

static bm_status_t ofi_fail(struct bm_btl_dgram_module *m, const char *what, int rc)
{
    bm_log_error("interface %s: libfabric %s failed: %s; use BM_BTL_DGRAM_WIRE=udp instead",
                 m->addr.ifname, what, fi_strerror(-rc));
    ofi_close(m);
    return BM_ERR_NOT_AVAILABLE;
}

static bm_status_t ofi_post_recv(struct bm_btl_dgram_module *m, int c, size_t i)
{
    struct ofi_state *st = m->ch[0].wire_state;
    struct ofi_chan *oc = &st->ch[c];
    ssize_t rc;
    do {
        rc = fi_recv(oc->ep, oc->rx + i * m->ch[c].mtu, m->ch[c].mtu, NULL, FI_ADDR_UNSPEC,
                     (void *)(uintptr_t)(i + 1));
        if (rc == -FI_EAGAIN)
            (void)fi_cq_read(oc->cq, NULL, 0);
    } while (rc == -FI_EAGAIN);
    return rc == 0 ? BM_OK : BM_ERR_SYSTEM;
}

static bm_status_t ofi_open(struct bm_btl_dgram_module *m)
{
    struct ofi_state *st = calloc(1, sizeof(*st));
    if (!st)
        return BM_ERR_NO_MEMORY;
    m->ch[0].wire_state = m->ch[1].wire_state = st;
    struct fi_info *hints = fi_allocinfo();
    if (!hints)
        return ofi_fail(m, "fi_allocinfo", -FI_ENOMEM);
    struct sockaddr_in src;
    memset(&src, 0, sizeof(src));
    src.sin_family = AF_INET;
    src.sin_addr.s_addr = m->addr.ipv4;
    hints->ep_attr->type = FI_EP_DGRAM;
    hints->caps = FI_MSG | FI_SOURCE;
    hints->mode = 0;
    hints->addr_format = FI_SOCKADDR_IN;
    hints->src_addr = malloc(sizeof(src));
    hints->src_addrlen = sizeof(src);
    if (hints->src_addr)
        memcpy(hints->src_addr, &src, sizeof(src));
    hints->domain_attr->av_type = FI_AV_TABLE;
    struct fi_info *list = NULL;
    int rc = fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, &list);
    fi_freeinfo(hints);
    if (rc)
        return ofi_fail(m, "fi_getinfo (FI_EP_DGRAM with IP addresses)", rc);
    const char *inc = m->cfg.prov_include ? m->cfg.prov_include : "";
    const char *exc = m->cfg.prov_exclude ? m->cfg.prov_exclude : "";
    char seen[256] = "";
    for (struct fi_info *i = list; i && !st->info; i = i->next) {
        const char *prov = i->fabric_attr->prov_name;
        if ((inc[0] && !bm_btl_ofi_provider_match(inc, prov)) ||
            bm_btl_ofi_provider_match(exc, prov)) {
            size_t off = strlen(seen);
            snprintf(seen + off, sizeof(seen) - off, "%s%s", off ? ", " : "", prov);
            continue;
        }
        st->info = fi_dupinfo(i);
    }
    fi_freeinfo(list);
    if (!st->info) {
        bm_log_error("interface %s: no libfabric FI_EP_DGRAM provider passes "
                     "BM_BTL_DGRAM_PROVIDER_INCLUDE=%s / _EXCLUDE=%s (found: %s); use "
                     "BM_BTL_DGRAM_WIRE=udp or widen the lists",
                     m->addr.ifname, inc, exc, seen);
        ofi_close(m);
        return BM_ERR_NOT_AVAILABLE;
    }
    bm_log_debug("interface %s: libfabric wire on provider %s", m->addr.ifname,
                 st->info->fabric_attr->prov_name);
    /* Every datagram leaves with FI_INJECT: none may be larger than the
     * provider injects (sockets: 255 bytes) or than its message limit (udp
     * reports 1472 and does not enforce it itself). */
    size_t max = st->info->ep_attr->max_msg_size;
    size_t inj = st->info->tx_attr->inject_size;
    if (inj && (!max || inj < max))
        max = inj;
    for (int c = 0; c < BM_DGRAM_NCH; c++)
        if (max && m->ch[c].mtu > max)
            m->ch[c].mtu = max;
    if (m->ch[BM_DGRAM_CH_DATA].mtu < BM_DGRAM_MAX_HDR + 64)
        return ofi_fail(m, "max_msg_size", -FI_EMSGSIZE);
    rc = fi_fabric(st->info->fabric_attr, &st->fabric, NULL);
    if (rc)
        return ofi_fail(m, "fi_fabric", rc);
    rc = fi_domain(st->fabric, st->info, &st->domain, NULL);
    if (rc)
        return ofi_fail(m, "fi_domain", rc);
    for (int c = 0; c < BM_DGRAM_NCH; c++) {
        struct ofi_chan *oc = &st->ch[c];
        struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_MSG, .size = 1024};
        struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
        if ((rc = fi_cq_open(st->domain, &cq_attr, &oc->cq, NULL)))
            return ofi_fail(m, "fi_cq_open", rc);
        if ((rc = fi_av_open(st->domain, &av_attr, &oc->av, NULL)))
            return ofi_fail(m, "fi_av_open", rc);
        if ((rc = fi_endpoint(st->domain, st->info, &oc->ep, NULL)))
            return ofi_fail(m, "fi_endpoint", rc);
        if ((rc =
                 fi_ep_bind(oc->ep, &oc->cq->fid, FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)))
            return ofi_fail(m, "fi_ep_bind(cq)", rc);
        if ((rc = fi_ep_bind(oc->ep, &oc->av->fid, 0)))
            return ofi_fail(m, "fi_ep_bind(av)", rc);
        if ((rc = fi_enable(oc->ep)))
            return ofi_fail(m, "fi_enable", rc);
        struct sockaddr_in name;
        size_t len = sizeof(name);
        if ((rc = fi_getname(&oc->ep->fid, &name, &len)))
            return ofi_fail(m, "fi_getname", rc);
        m->ch[c].port = name.sin_port;
        oc->rx = malloc(OFI_RX_POSTED * m->ch[c].mtu);
        if (!oc->rx)
            return ofi_fail(m, "receive buffers", -FI_ENOMEM);
        for (size_t i = 0; i < OFI_RX_POSTED; i++)
            if (ofi_post_recv(m, c, i) != BM_OK)
                return ofi_fail(m, "fi_recv", -FI_EIO);
    }
    m->addr.port_prio = m->ch[BM_DGRAM_CH_PRIO].port;
    m->addr.port_data = m->ch[BM_DGRAM_CH_DATA].port;
    /* a plain UDP socket on the same address: the liveness responder */
    return bm_btl_dgram_live_open(m);
}

/* Put one address in channel c's address vector; *fa its handle. */
static bm_status_t ofi_av_add(struct bm_btl_dgram_module *m, struct bm_btl_dgram_endpoint *ep,
                              int c, const struct sockaddr_in *to, uint64_t *fa_out)
{
    struct ofi_state *st = m->ch[0].wire_state;
    struct ofi_chan *oc = &st->ch[c];
    fi_addr_t fa;
    if (fi_av_insert(oc->av, to, 1, &fa, 0, NULL) != 1) {
        bm_log_error("%s: cannot add %s to the libfabric address vector", m->super.name,
                     ep->peer_desc);
        return BM_ERR_UNREACHABLE;
    }
    if (fa >= oc->cap) {
        size_t n = fa + 16;
        struct sockaddr_in *p = realloc(oc->peers, n * sizeof(*p));
        if (!p)
            return BM_ERR_NO_MEMORY;
        memset(p + oc->cap, 0, (n - oc->cap) * sizeof(*p));
        oc->peers = p;
        oc->cap = n;
    }
    oc->peers[fa] = *to;
    if (fa >= oc->npeers)
        oc->npeers = fa + 1;
    *fa_out = fa;
    return BM_OK;
}

/* The peer's two channels, and its live port on both of ours: a PING to the
 * live port may leave from either (by size), and the provider hands us the
 * ALIVE, which comes from the live port, only from an address it knows. */
static bm_status_t ofi_peer_add(struct bm_btl_dgram_module *m, struct bm_btl_dgram_endpoint *ep)
{
    for (int c = 0; c < BM_DGRAM_NCH; c++) {
        bm_status_t rc = ofi_av_add(m, ep, c, &ep->to[c], &ep->wire_addr[c]);
        if (rc == BM_OK && ep->to_live.sin_port)
            rc = ofi_av_add(m, ep, c, &ep->to_live, &ep->wire_live[c]);
        if (rc != BM_OK)
            return rc;
    }
    return BM_OK;
}

static void ofi_send_one(struct bm_btl_dgram_module *m, int c, const void *hdr, size_t hdr_len,
                         const void *payload, size_t payload_len, uint64_t to)
{
    struct ofi_state *st = m->ch[0].wire_state;
    struct ofi_chan *oc = &st->ch[c];
    struct iovec iov[2] = {{(void *)hdr, hdr_len}, {(void *)payload, payload_len}};
    struct fi_msg msg = {
        .msg_iov = iov,
        .iov_count = payload_len ? 2 : 1,
        .addr = (fi_addr_t)to,
    };
    for (int tries = 0; tries < 64; tries++) {
        ssize_t rc = fi_sendmsg(oc->ep, &msg, FI_INJECT);
        if (rc == 0)
            return;
        if (rc != -FI_EAGAIN)
            break;
        (void)fi_cq_read(oc->cq, NULL, 0); /* progress the provider */
    }
    m->stats.send_errors++; /* lost like on a congested link; resent by the engine */
}

static int ofi_flush(struct bm_btl_dgram_module *m, int c)
{
    struct bm_btl_dgram_channel *ch = &m->ch[c];
    unsigned n = 0;
    for (unsigned i = 0; i < ch->tx_count; i++) {
        struct bm_btl_dgram_txslot *s = &ch->tx[i];
        ofi_send_one(m, c, s->whole ? s->whole : s->hdr, s->hdr_len, s->payload, s->payload_len,
                     s->to_wire);
        n++;
    }
    if (c == BM_DGRAM_CH_DATA)
        m->stats.sends_data += n;
    else
        m->stats.sends_prio += n;
    ch->tx_count = 0;
    return (int)n;
}

static int ofi_poll(struct bm_btl_dgram_module *m, int c)
{
    struct ofi_state *st = m->ch[0].wire_state;
    struct ofi_chan *oc = &st->ch[c];
    if (m->in_poll)
        return 0;
    struct fi_cq_msg_entry ent[32];
    fi_addr_t src[32];
    size_t max = m->ch[c].rx_max < 32 ? m->ch[c].rx_max : 32; /* the batch the engine asked for */
    ssize_t r = fi_cq_readfrom(oc->cq, ent, max, src);
    if (r == -FI_EAVAIL) {
        struct fi_cq_err_entry err;
        memset(&err, 0, sizeof(err));
        if (fi_cq_readerr(oc->cq, &err, 0) == 1 && err.op_context) {
            m->stats.bad_short++; /* truncated or failed receive */
            (void)ofi_post_recv(m, c, (size_t)(uintptr_t)err.op_context - 1);
        }
        return 0;
    }
    if (r <= 0)
        return 0;
    static const struct sockaddr_in unknown; /* fails the sender check */
    m->in_poll = true;
    for (ssize_t i = 0; i < r; i++) {
        size_t idx = (size_t)(uintptr_t)ent[i].op_context - 1;
        if (idx >= OFI_RX_POSTED)
            continue;
        const struct sockaddr_in *from =
            src[i] != FI_ADDR_NOTAVAIL && src[i] < oc->npeers ? &oc->peers[src[i]] : &unknown;
        bm_btl_dgram_recv_packet(m, c, oc->rx + idx * m->ch[c].mtu, ent[i].len, from);
        (void)ofi_post_recv(m, c, idx);
    }
    m->in_poll = false;
    return (int)r;
}

static const struct bm_btl_dgram_wire_ops ofi_wire = {
    .name = "ofi",
    .open = ofi_open,
    .close = ofi_close,
    .flush = ofi_flush,
    .poll = ofi_poll,
    .peer_add = ofi_peer_add,
};

const struct bm_btl_dgram_wire_ops *const bm_btl_dgram_wire_ofi = &ofi_wire;
