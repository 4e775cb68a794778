/* The RGET + FIN protocol of the PML: single copy for large messages. For a
 * message of at least BM_PML_RGET_LIMIT bytes to a peer whose RDMA list has
 * a working GET path that needs no memory registration (sm with
 * process_vm_readv), the sender sends RGET (the RNDV fields plus its buffer
 * address) instead of RNDV and waits. The receiver, once RGET matches a
 * receive, reads the message (only the part that fits: truncation) straight
 * from the sender's buffer into the user's buffer with the transport's get,
 * in chunks of at most get_limit bytes, and then sends FIN; the sender
 * completes on FIN, which it handles as an ACK that wants nothing more
 * (send.c). When no GET path exists on the receiver's side or a get fails
 * (EPERM, a peer that forbids cross-memory access), the receiver answers
 * the RGET as a RNDV with an ACK for the whole range, and the sender sends
 * FRAGs as usual: the rendezvous never depends on RDMA working. That is
 * said once at info level.
 *
 * RGET travels through match.c as a RNDV whose payload is the tail of the
 * RGET header (address, handle length, handle); recv.c hands matched RGETs
 * to bm_pml_rdma_rget_matched. */
#define BM_LOG_SUBSYS "pml"
#include "util/log.h"

#include "pml/pml_internal.h"
#include "util/params.h"

#include <stdlib.h>
#include <string.h>

struct rdma_params {
    size_t rget_limit;
};

static const struct bm_param rdma_params[] = {
    {"BM_PML_RGET_LIMIT", BM_PARAM_SIZE, "0", 0, 0, NULL,
     "Messages of at least this many bytes (and at least the transport's "
     "min_rdma_pipeline_size) are read by the receiver straight from the sender's buffer "
     "(RGET + FIN) when the peer is reached by a transport with single-copy get (sm with "
     "process_vm_readv). 0 (the default) disables RGET: on the machine it was measured on, "
     "process_vm_readv moved 4.5-5 GB/s against 20 GB/s for memcpy, and sm's pipelined "
     "copy-in/copy-out (sender and receiver copying at once) won at every size.",
     offsetof(struct rdma_params, rget_limit), 0},
};
static const struct bm_param_table rdma_table = {"pml", rdma_params, BM_PARAM_COUNT(rdma_params)};
BM_PARAM_TABLE_REGISTER(rdma_table);

/* The part of an RGET header after its RNDV fields (what match.c calls the
 * payload of the RGET). */
struct rdma_rget_tail {
    uint64_t remote_addr;
    uint32_t handle_len;
    uint32_t reserved;
};
_Static_assert(sizeof(struct rdma_rget_tail) ==
                   sizeof(struct bm_pml_hdr_rget) - sizeof(struct bm_pml_hdr_rndv),
               "RGET tail layout");

static struct {
    bool loaded;
    size_t rget_limit;
    bool told_fallback;
} rdma_g;

/* A receive reading an RGET's data. */
struct rdma_rget_op {
    struct bm_pml_request *req;
    int peer_world;
    bm_pml_reqid_t sreq;
    struct bm_pml_hdr_match match; /* for the FIN */
    size_t fit;                    /* bytes to read */
    int pending;                   /* gets issued and not completed */
    bool issuing;                  /* still in the loop issuing gets */
    int status;                    /* first failure, or BM_OK */
};

static size_t rdma_limit(void)
{
    if (!rdma_g.loaded) {
        struct rdma_params p;
        if (bm_util_params_load(&rdma_table, &p) != BM_OK)
            p.rget_limit = 0;
        rdma_g.rget_limit = p.rget_limit;
        rdma_g.loaded = true;
    }
    return rdma_g.rget_limit;
}

/* A working GET path to peer_world that needs no registration. */
static struct bm_btl_path *rdma_get_path(int peer_world, size_t bytes)
{
    struct bm_btl_path_list *l = &bm_btl_base_peer(peer_world)->rdma;
    for (int i = 0; i < l->count; i++) {
        struct bm_btl_path *p = &l->paths[i];
        const struct bm_btl_module *m = p->module;
        if (p->failed || !(m->caps & BM_BTL_CAP_GET) || (m->caps & BM_BTL_CAP_REG_MEM) ||
            m->reg_handle_size != 0 || bytes < m->min_rdma_pipeline_size)
            continue;
        return p;
    }
    return NULL;
}

bool bm_pml_rdma_rget_ok(const struct bm_pml_request *req)
{
    size_t limit = rdma_limit();
    if (limit == 0 || req->bytes < limit || req->retransmit || req->peer == bm_pml_g.my_rank)
        return false;
    return rdma_get_path(req->peer, req->bytes) != NULL;
}

void bm_pml_rdma_rget_send(struct bm_pml_request *req, const struct bm_pml_hdr_match *mh)
{
    struct {
        struct bm_pml_hdr_rndv rndv;
        struct rdma_rget_tail tail;
    } h;
    memset(&h, 0, sizeof(h));
    h.rndv.match = *mh;
    h.rndv.match.base.type = BM_PML_HDR_RGET;
    h.rndv.msg_len = req->bytes;
    h.rndv.sreq = bm_pml_request_id(req);
    h.tail.remote_addr = (uint64_t)(uintptr_t)req->sbuf;
    _Static_assert(sizeof(h) == sizeof(struct bm_pml_hdr_rget), "RGET header layout");
    /* No FRAG unless the receiver falls back (its ACK then lowers frag_next). */
    req->first_len = 0;
    req->frag_next = req->bytes;
    req->frag_end = req->bytes;
    bm_pml_ctl_send(req->peer, BM_PML_BTL_TAG(BM_PML_HDR_RGET), &h, sizeof(h));
}

/* Every get of op is done: FIN, or fall back to FRAGs. */
static void rget_finish(struct rdma_rget_op *op)
{
    struct bm_pml_request *req = op->req;
    if (op->status != BM_OK) {
        if (!rdma_g.told_fallback) {
            rdma_g.told_fallback = true;
            bm_log_info("single-copy read of a %zu-byte message from rank %d failed (%s); "
                        "copying it through the transport's fragments instead (said once)",
                        op->fit, op->peer_world, bm_status_str(op->status));
        }
        /* As a RNDV that carried no bytes: the ACK asks for all of it. */
        bm_pml_recv_matched(req, op->peer_world, BM_PML_HDR_RNDV, op->match.src, op->match.tag,
                            req->msg_len, op->sreq, NULL, 0);
        free(op);
        return;
    }
    struct bm_pml_hdr_fin fin = {
        .match = op->match,
        .status = BM_OK,
        .req = op->sreq,
        .offset = 0,
        .length = op->fit,
    };
    fin.match.base.type = BM_PML_HDR_FIN;
    fin.match.base.flags = 0;
    int peer = op->peer_world;
    free(op);
    bm_pml_request_complete(req);
    bm_pml_ctl_send(peer, BM_PML_BTL_TAG(BM_PML_HDR_FIN), &fin, sizeof(fin));
}

static void rget_get_cb(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                        struct bm_btl_reg_handle *local_handle, void *context, void *cbdata,
                        int status)
{
    (void)m;
    (void)ep;
    (void)local_addr;
    (void)local_handle;
    (void)context;
    struct rdma_rget_op *op = cbdata;
    if (status < 0 && op->status == BM_OK)
        op->status = status;
    if (--op->pending == 0 && !op->issuing)
        rget_finish(op);
}

void bm_pml_rdma_rget_matched(struct bm_pml_request *req, int peer_world, int src, int tag,
                              uint64_t msg_len, bm_pml_reqid_t sreq, const void *tail,
                              size_t tail_len)
{
    req->status.source = src;
    req->status.tag = tag;
    req->src_world = peer_world;
    req->msg_len = msg_len;
    size_t fit = msg_len < req->capacity ? (size_t)msg_len : req->capacity;
    req->status.count = fit;
    req->status.error = msg_len > req->capacity ? BM_ERR_TRUNCATE : BM_OK;
    struct rdma_rget_tail t;
    struct rdma_rget_op *op = calloc(1, sizeof(*op));
    if (!op)
        abort();
    op->req = req;
    op->peer_world = peer_world;
    op->sreq = sreq;
    op->match.cid = req->cid;
    op->match.src = src;
    op->match.tag = tag;
    op->fit = fit;
    op->status = BM_OK;
    struct bm_btl_path *path = rdma_get_path(peer_world, fit);
    if (tail_len < sizeof(t) || !path) {
        op->status = tail_len < sizeof(t) ? BM_ERR_BAD_PARAM : BM_ERR_NOT_AVAILABLE;
        rget_finish(op);
        return;
    }
    memcpy(&t, tail, sizeof(t));
    struct bm_btl_module *m = path->module;
    size_t chunk = m->get_limit ? m->get_limit : fit;
    if (m->rdma_pipeline_frag_size && m->rdma_pipeline_frag_size < chunk)
        chunk = m->rdma_pipeline_frag_size;
    op->issuing = true;
    for (size_t off = 0; off < fit && op->status == BM_OK; off += chunk) {
        size_t n = fit - off < chunk ? fit - off : chunk;
        op->pending++;
        int rc = bm_btl_get(m, path->endpoint, req->rbuf + off, t.remote_addr + off, NULL, NULL, n,
                            0, 0, rget_get_cb, NULL, op);
        if (rc == BM_BTL_DONE) {
            op->pending--;
        } else if (rc < 0) {
            op->pending--;
            op->status = rc;
        }
    }
    op->issuing = false;
    if (op->pending == 0)
        rget_finish(op);
}

void bm_pml_rdma_fin_cb(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata)
{
    struct bm_pml_hdr_fin fin;
    size_t len = d->seg_count ? d->seg[0].len : 0;
    if (len < sizeof(fin)) {
        bm_log_ratelimited(BM_LOG_ERROR, "dropped a short FIN (%zu bytes) from rank %d", len,
                           d->peer);
        return;
    }
    memcpy(&fin, d->seg[0].addr, sizeof(fin));
    struct bm_pml_request *req = bm_pml_request_lookup(fin.req, BM_PML_REQ_SEND);
    if (!req || req->peer != d->peer || fin.length > req->bytes) {
        bm_log_debug("dropped a FIN from rank %d for no send in progress (duplicate?)", d->peer);
        return;
    }
    /* The receiver read what it wanted: an ACK that asks for nothing more. */
    struct bm_pml_hdr_ack ack = {
        .base = {.type = BM_PML_HDR_ACK},
        .sreq = fin.req,
        .rreq = 0,
        .offset = req->bytes,
        .length = req->bytes,
    };
    struct bm_btl_segment seg = {.addr = &ack, .len = sizeof(ack)};
    struct bm_btl_recv_desc ad = *d;
    ad.tag = BM_PML_BTL_TAG(BM_PML_HDR_ACK);
    ad.seg_count = 1;
    ad.seg = &seg;
    bm_pml_send_ack_cb(m, &ad, cbdata);
}
