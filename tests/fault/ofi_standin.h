/* A module of the ofi transport built by hand, for unit tests that drive
 * one mechanism without a provider (ofi_fail_defer, ofi_ack_refused,
 * ofi_watch_pong): one job of two ranks seen from rank 0, one context whose
 * endpoint and completion queue are stand-ins (the test's own fi_ops_msg;
 * a queue that is always empty), the fragment pools when the endpoint
 * sends, and the endpoint of rank 1. The test fills in what its mechanism
 * reads (timeouts, acks) before it calls what it tests. */
#ifndef BM_TEST_OFI_STANDIN_H
#define BM_TEST_OFI_STANDIN_H

#include "bm_test.h"
#include "btl/ofi/ofi.h"

#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <stdio.h>
#include <string.h>

struct ofi_standin {
    struct bm_btl_ofi_component comp;
    struct bm_btl_ofi_module m;
    struct bm_btl_ofi_context ctx;
    struct bm_btl_ofi_endpoint peer; /* rank 1 */
    struct bm_btl_ofi_endpoint *eps[2];
    struct fid_ep ep;
    struct fid_cq cq;
    struct fi_ops_cq cq_ops;
};

static inline ssize_t ofi_standin_cq_read(struct fid_cq *cq, void *buf, size_t count)
{
    (void)cq;
    (void)buf;
    (void)count;
    return -FI_EAGAIN;
}

/* msg: the endpoint's send operations (NULL: the test never sends). */
static inline void ofi_standin_init(struct ofi_standin *s, struct fi_ops_msg *msg,
                                    bm_btl_error_cb_fn on_error)
{
    memset(s, 0, sizeof(*s));
    s->comp.size = 2;
    s->comp.cfg.eager_limit = 4096;
    s->comp.cfg.max_send_size = 65536;
    s->comp.cfg.probe_ms = 1000;
    s->m.comp = &s->comp;
    snprintf(s->m.super.name, sizeof(s->m.super.name), "ofi:stand-in");
    s->m.super.error_cb = on_error;
    s->m.inject_size = 64;
    s->m.ctx = &s->ctx;
    s->m.nctx = 1;
    s->eps[1] = &s->peer;
    s->m.eps = s->eps;
    s->cq_ops.size = sizeof(s->cq_ops);
    s->cq_ops.read = ofi_standin_cq_read;
    s->cq.ops = &s->cq_ops;
    s->ep.msg = msg;
    s->ctx.m = &s->m;
    s->ctx.tx = s->ctx.rx = &s->ep;
    s->ctx.cq = &s->cq;
    bm_util_list_init(&s->ctx.inflight);
    if (msg)
        BM_CHECK_EQ_INT(bm_btl_ofi_fpool_init(&s->ctx), BM_OK);
    s->peer.m = &s->m;
    s->peer.rank = 1;
    s->peer.peer_nrx = 1;
    snprintf(s->peer.desc, sizeof(s->peer.desc), "rank 1 (stand-in)");
}

static inline void ofi_standin_fini(struct ofi_standin *s)
{
    bm_btl_ofi_fpool_fini(&s->ctx);
}

#endif
