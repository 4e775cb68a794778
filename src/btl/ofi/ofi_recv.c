/* Two-sided receives of the ofi transport. Each receive context keeps
 * BM_BTL_OFI_RECV_BUFS buffers posted. With FI_MULTI_RECV (rxm, shm,
 * sockets, rxd here) a buffer of BM_BTL_OFI_RECV_BUF_SIZE bytes takes many
 * messages back to back; the provider releases it (FI_MULTI_RECV in a
 * completion's flags) once less than one largest message
 * (FI_OPT_MIN_MULTI_RECV = header + max send size) is left, and we post it
 * again after the messages in it were handed to their callbacks. Without
 * multi-receive each buffer holds one message and goes back at once. A
 * message is handed to the callback of its tag in place: its segment
 * points into the buffer and is valid until the callback returns, as the
 * transport contract says. */
#define BM_LOG_SUBSYS "btl/ofi"
#include "btl/ofi/ofi.h"
#include "util/log.h"

#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <stdlib.h>
#include <string.h>

#define OFI_SINGLE_RECV_BUFS 64 /* posted buffers when the provider has no multi-receive */

bm_status_t bm_btl_ofi_recv_post(struct bm_btl_ofi_context *ctx, struct bm_btl_ofi_rbuf *rb)
{
    struct bm_btl_ofi_module *m = ctx->m;
    struct iovec iov = {rb->mem, rb->size};
    struct fi_msg msg = {
        .msg_iov = &iov,
        .desc = &rb->desc,
        .iov_count = 1,
        .addr = FI_ADDR_UNSPEC,
        .context = &rb->req.fctx,
    };
    uint64_t flags = m->multi_recv ? FI_MULTI_RECV : 0;
    for (int tries = 0; tries < 1000; tries++) {
        ssize_t rc = fi_recvmsg(ctx->rx, &msg, flags);
        if (rc == 0) {
            rb->posted = true;
            rb->released = false;
            rb->done_bytes = rb->end = 0;
            rb->done_count = 0;
            rb->unaccounted = false;
            return BM_OK;
        }
        if (rc != -FI_EAGAIN) {
            bm_log_error("%s: posting a receive buffer failed: %s", m->super.name,
                         fi_strerror((int)-rc));
            return BM_ERR_NOT_AVAILABLE;
        }
        /* Drive the provider (manual progress) without running callbacks:
         * entries stay in the queue for the next progress call. */
        (void)fi_cq_read(ctx->cq, NULL, 0);
    }
    bm_log_error("%s: the provider kept refusing a receive buffer", m->super.name);
    return BM_ERR_OUT_OF_RESOURCE;
}

bm_status_t bm_btl_ofi_recv_init(struct bm_btl_ofi_context *ctx)
{
    struct bm_btl_ofi_module *m = ctx->m;
    const struct bm_btl_ofi_config *cfg = &m->comp->cfg;
    size_t largest = sizeof(struct bm_btl_ofi_hdr) + cfg->max_send_size;
    size_t size;
    int n;
    if (m->multi_recv) {
        size = cfg->recv_buf_size < 2 * largest ? 2 * largest : cfg->recv_buf_size;
        n = cfg->recv_bufs;
        size_t min = largest;
        m->min_multi_recv = min;
        int rc =
            fi_setopt(&ctx->rx->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, sizeof(min));
        if (rc) {
            bm_log_info("%s: the provider does not take FI_OPT_MIN_MULTI_RECV (%s); one message "
                        "per receive buffer",
                        m->super.name, fi_strerror(-rc));
            m->multi_recv = false;
        }
    }
    if (!m->multi_recv) {
        size = largest;
        n = OFI_SINGLE_RECV_BUFS;
        if (m->info->rx_attr->size && (size_t)n > m->info->rx_attr->size / 2)
            n = (int)(m->info->rx_attr->size / 2);
        if (n < 2)
            n = 2;
    }
    size = (size + 4095) & ~(size_t)4095;
    ctx->rbufs = calloc((size_t)n, sizeof(*ctx->rbufs));
    if (!ctx->rbufs)
        return BM_ERR_NO_MEMORY;
    ctx->nrbufs = n;
    for (int i = 0; i < n; i++) {
        struct bm_btl_ofi_rbuf *rb = &ctx->rbufs[i];
        rb->req.kind = BM_OFI_REQ_RECV;
        rb->req.ctx = ctx;
        bm_util_list_node_init(&rb->req.link);
        rb->size = size;
        if (posix_memalign(&rb->mem, 4096, size) != 0) {
            rb->mem = NULL;
            return BM_ERR_NO_MEMORY;
        }
        if (m->mr_local) {
            uint64_t key;
            bm_status_t rc = bm_btl_ofi_mr_reg_raw(m, rb->mem, size, &rb->mr, &rb->desc, &key);
            if (rc != BM_OK)
                return rc;
        }
        bm_status_t rc = bm_btl_ofi_recv_post(ctx, rb);
        if (rc != BM_OK)
            return rc;
    }
    return BM_OK;
}

void bm_btl_ofi_recv_fini(struct bm_btl_ofi_context *ctx)
{
    for (int i = 0; i < ctx->nrbufs; i++) {
        struct bm_btl_ofi_rbuf *rb = &ctx->rbufs[i];
        if (rb->mr)
            fi_close(&rb->mr->fid);
        free(rb->mem);
    }
    free(ctx->rbufs);
    ctx->rbufs = NULL;
    ctx->nrbufs = 0;
}

static void recv_deliver(struct bm_btl_ofi_context *ctx, const uint8_t *buf, size_t len)
{
    struct bm_btl_ofi_module *m = ctx->m;
    struct bm_btl_ofi_hdr hdr;
    const struct bm_btl_ofi_hdr *h = &hdr;
    if (len >= sizeof(hdr))
        memcpy(&hdr, buf, sizeof(hdr));
    if (len < sizeof(*h) || h->magic != BM_BTL_OFI_HDR_MAGIC || h->tag >= BM_BTL_TAG_MAX) {
        BM_OFI_COUNT(m, malformed);
        bm_log_ratelimited(BM_LOG_WARN, "%s: dropped a malformed message of %zu bytes",
                           m->super.name, len);
        return;
    }
    struct bm_btl_ofi_endpoint *ep = bm_btl_ofi_endpoint_get(m, (int)h->src_rank);
    BM_OFI_COUNT(m, recvs);
    if (ep) {
        bm_btl_ofi_endpoint_heard(ep);
        bm_btl_ofi_ack_received(ep, h);
        bm_btl_ofi_sock_heard(ep);
    }
    if (h->tag == BM_BTL_TAG_BTL) {
        struct bm_btl_ofi_ctl_msg msg;
        if (ep && len == sizeof(*h) + sizeof(msg)) {
            memcpy(&msg, buf + sizeof(*h), sizeof(msg));
            bm_btl_ofi_endpoint_ctl(ep, &msg);
        }
        return;
    }
    /* Some providers pack multi-receive messages back to back with no
     * alignment (shm): the layers above read their headers in place, so an
     * unaligned message is handed over from an aligned copy. */
    const uint8_t *payload = buf + sizeof(*h);
    size_t plen = len - sizeof(*h);
    void *copy = NULL;
    _Alignas(16) uint8_t small[2048];
    if (((uintptr_t)payload & 7) && plen) {
        copy = plen <= sizeof(small) ? small : malloc(plen);
        if (!copy) {
            bm_log_ratelimited(BM_LOG_ERROR,
                               "%s: out of memory for an unaligned message of %zu "
                               "bytes from rank %u; dropped",
                               m->super.name, plen, h->src_rank);
            return;
        }
        memcpy(copy, payload, plen);
        payload = copy;
    }
    struct bm_btl_segment seg = {(void *)payload, plen};
    struct bm_btl_recv_desc d = {
        .endpoint = (struct bm_btl_endpoint *)ep,
        .peer = (int)h->src_rank,
        .tag = h->tag,
        .seg_count = 1,
        .seg = &seg,
    };
    m->super.recv_cb[h->tag].cb(&m->super, &d, m->super.recv_cb[h->tag].cbdata);
    if (copy && copy != small)
        free(copy);
}

/* Is a message still being written into the released multi-receive
 * buffer rb (lock held)? Its completion comes later; reposting now lets
 * the provider place new messages where that one's data is still
 * arriving. Two signs, from what the completions read so far cover:
 *  - bytes below the furthest completed message that no completion
 *    covers (rxm completes a message it reads by rendezvous or receives
 *    in segments after the small ones placed behind it, and flags the
 *    release on the last one placed);
 *  - fewer bytes covered than a released buffer must hold: the provider
 *    releases it once less than FI_OPT_MIN_MULTI_RECV is left (rxm, when
 *    a buffer is posted while messages wait unexpected, places them,
 *    reports the release at once in a completion of its own and
 *    completes the messages as their reads finish).
 * bm_bibw 1 MiB with 512 KiB fragments both ways on tcp;ofi_rxm: 1-5
 * "malformed message of 64 bytes" per run before (the same buffer filled
 * again from offset 0 up to 10 times while rendezvous reads still landed
 * in it). */
static bool recv_writing(const struct bm_btl_ofi_rbuf *rb)
{
    const struct bm_btl_ofi_module *m = rb->req.ctx->m;
    if (!m->multi_recv || rb->unaccounted)
        return false;
    size_t covered = rb->done_bytes + (size_t)rb->done_count * BM_OFI_MULTI_RECV_PAD;
    return rb->end > covered || covered + m->min_multi_recv <= rb->size;
}

void bm_btl_ofi_recv_complete(struct bm_btl_ofi_rbuf *rb, void *buf, size_t len, uint64_t flags)
{
    struct bm_btl_ofi_context *ctx = rb->req.ctx;
    struct bm_btl_ofi_module *m = ctx->m;
    /* Only multi-receive completions say where the message starts. */
    if (!m->multi_recv && len > 0)
        buf = rb->mem;
    if (buf && len > 0)
        recv_deliver(ctx, buf, len);
    bm_btl_ofi_lock(ctx);
    if (!m->multi_recv || (flags & FI_MULTI_RECV))
        rb->released = true;
    rb->busy--;
    if (rb->released && rb->busy == 0 && !recv_writing(rb) && !m->closing) {
        rb->posted = false;
        (void)bm_btl_ofi_recv_post(ctx, rb);
    }
    bm_btl_ofi_unlock(ctx);
}
