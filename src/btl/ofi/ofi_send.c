/* Two-sided sends of the ofi transport, for the PML's eager and rendezvous
 * protocols when ofi is a peer's only transport. A fragment is a descriptor
 * whose buffer starts with the 8-byte message header (ofi_proto.h) right
 * before seg[0], so header and data leave in one piece; prepare_src may add
 * the caller's own memory as a second piece (SEND_INPLACE), with a
 * registration from the cache when the provider wants local registration.
 * sendi's messages that fit the provider's inject size go with fi_inject
 * (no completion, the buffer is free at once; where the provider's own
 * thread sends, closing fences them first: fence_close in ofi_module.c);
 * the PML uses sendi only
 * towards a peer it reaches by one path, where nothing could be resent
 * elsewhere anyway. Descriptor sends always complete through the
 * context's completion queue (ofi_context.c), with FI_DELIVERY_COMPLETE:
 * a completion means the peer has the data, so when a path fails the PML
 * resends exactly what was not delivered (an injected message lost with a
 * black-holed link would be lost for good). Fragments come from
 * per-context pools of two sizes (eager, max send) carved from regions that
 * are registered as a whole when the module needs local registration. A
 * fragment the provider still holds after we failed its path stays out of
 * the pool until the provider returns it. */
#define BM_LOG_SUBSYS "btl/ofi"
#include "btl/ofi/ofi.h"
#include "util/log.h"
#include "util/mem.h"

#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define OFI_FRAGS_PER_REGION_EAGER 64
#define OFI_FRAGS_PER_REGION_MAX   8
#define OFI_FRAGS_MAX_EAGER        1024 /* per context: beyond, alloc says "retry later" */
#define OFI_FRAGS_MAX_MAX          64
#define OFI_INJECT_STACK           2048 /* largest message sendi assembles on the stack */
/* Eager fragments hold eager_limit bytes of payload plus this much header
 * (sendi's header comes on top of a payload of up to eager_limit). */
#define OFI_EAGER_HDR_ROOM 256

static inline struct bm_btl_ofi_frag *frag_of(struct bm_btl_descriptor *des)
{
    return (struct bm_btl_ofi_frag *)des;
}

static size_t frag_stride(size_t cap)
{
    size_t s = sizeof(struct bm_btl_ofi_frag) + cap;
    return (s + 63) & ~(size_t)63;
}

/* ---- pools ------------------------------------------------------------------- */

static bool fpool_grow(struct bm_btl_ofi_context *ctx, int which)
{
    struct bm_btl_ofi_fpool *p = &ctx->fpool[which];
    int n = which == BM_OFI_POOL_EAGER ? OFI_FRAGS_PER_REGION_EAGER : OFI_FRAGS_PER_REGION_MAX;
    if (p->count + n > p->max)
        n = p->max - p->count;
    if (n <= 0)
        return false;
    size_t stride = frag_stride(p->cap);
    struct bm_btl_ofi_region *r = calloc(1, sizeof(*r));
    if (!r || posix_memalign(&r->mem, 64, stride * (size_t)n) != 0) {
        free(r);
        return false;
    }
    if (ctx->m->mr_local) {
        uint64_t key;
        if (bm_btl_ofi_mr_reg_raw(ctx->m, r->mem, stride * (size_t)n, &r->mr, &r->desc, &key) !=
            BM_OK) {
            free(r->mem);
            free(r);
            return false;
        }
    }
    r->next = p->regions;
    p->regions = r;
    for (int i = 0; i < n; i++) {
        struct bm_btl_ofi_frag *f = (struct bm_btl_ofi_frag *)((char *)r->mem + stride * (size_t)i);
        memset(f, 0, sizeof(*f));
        f->pool = (uint8_t)which;
        f->cap = p->cap;
        f->desc = r->desc;
        f->req.kind = BM_OFI_REQ_SEND;
        f->req.ctx = ctx;
        bm_util_list_node_init(&f->req.link);
        f->next = p->free;
        p->free = f;
    }
    p->count += n;
    return true;
}

bm_status_t bm_btl_ofi_fpool_init(struct bm_btl_ofi_context *ctx)
{
    const struct bm_btl_ofi_config *cfg = &ctx->m->comp->cfg;
    ctx->fpool[BM_OFI_POOL_EAGER].cap = cfg->eager_limit + OFI_EAGER_HDR_ROOM;
    ctx->fpool[BM_OFI_POOL_EAGER].max = OFI_FRAGS_MAX_EAGER;
    ctx->fpool[BM_OFI_POOL_MAX].cap = cfg->max_send_size;
    ctx->fpool[BM_OFI_POOL_MAX].max = OFI_FRAGS_MAX_MAX;
    return fpool_grow(ctx, BM_OFI_POOL_EAGER) ? BM_OK : BM_ERR_NO_MEMORY;
}

void bm_btl_ofi_fpool_fini(struct bm_btl_ofi_context *ctx)
{
    for (int k = 0; k < BM_OFI_NPOOLS; k++) {
        struct bm_btl_ofi_fpool *p = &ctx->fpool[k];
        while (p->regions) {
            struct bm_btl_ofi_region *r = p->regions;
            p->regions = r->next;
            if (r->mr)
                fi_close(&r->mr->fid);
            free(r->mem);
            free(r);
        }
        p->free = NULL;
        p->count = 0;
    }
}

/* A fragment with room for size bytes after the header (lock held). */
static struct bm_btl_ofi_frag *frag_get(struct bm_btl_ofi_context *ctx, size_t size)
{
    int which;
    if (size <= ctx->fpool[BM_OFI_POOL_EAGER].cap)
        which = BM_OFI_POOL_EAGER;
    else if (size <= ctx->fpool[BM_OFI_POOL_MAX].cap)
        which = BM_OFI_POOL_MAX;
    else
        return NULL;
    struct bm_btl_ofi_fpool *p = &ctx->fpool[which];
    if (!p->free && !fpool_grow(ctx, which))
        return NULL;
    struct bm_btl_ofi_frag *f = p->free;
    p->free = f->next;
    f->fflags = 0;
    f->req.inflight = false;
    f->req.failed = false;
    f->req.reg = NULL;
    f->req.ep = NULL;
    f->seq = 0;
    f->prov_done = f->acked = false;
    bm_util_list_node_init(&f->ack_link);
    return f;
}

static void frag_put(struct bm_btl_ofi_frag *f)
{
    struct bm_btl_ofi_context *ctx = f->req.ctx;
    if (f->req.reg) {
        bm_btl_ofi_mr_release(ctx->m, f->req.reg);
        f->req.reg = NULL;
    }
    bm_btl_ofi_lock(ctx);
    struct bm_btl_ofi_fpool *p = &ctx->fpool[f->pool];
    f->next = p->free;
    p->free = f;
    bm_btl_ofi_unlock(ctx);
}

static void frag_init_des(struct bm_btl_ofi_module *m, struct bm_btl_ofi_frag *f, size_t len,
                          uint8_t order, uint32_t flags)
{
    struct bm_btl_descriptor *d = &f->des;
    d->seg[0].addr = (void *)(&f->hdr + 1);
    d->seg[0].len = len;
    d->seg[1].addr = NULL;
    d->seg[1].len = 0;
    d->seg_count = 1;
    d->flags = flags;
    d->order = order;
    d->cbfunc = NULL;
    d->cbdata = NULL;
    d->context = NULL;
    d->module = &m->super;
}

/* An injected message left ctx for ep: remembered for the FENCE at close. */
static inline void injected(const struct bm_btl_ofi_module *m, const struct bm_btl_ofi_context *ctx,
                            struct bm_btl_ofi_endpoint *ep)
{
    uint64_t bit = 1ull << ctx->index;
    if (m->fence_close && !(atomic_load_explicit(&ep->injected, memory_order_relaxed) & bit))
        atomic_fetch_or(&ep->injected, bit);
}

/* ---- descriptors --------------------------------------------------------------- */

struct bm_btl_descriptor *bm_btl_ofi_alloc(struct bm_btl_module *mod, struct bm_btl_endpoint *bep,
                                           uint8_t order, size_t size, uint32_t flags)
{
    struct bm_btl_ofi_module *m = (struct bm_btl_ofi_module *)mod;
    struct bm_btl_ofi_context *ctx = bm_btl_ofi_context_pick(m, (struct bm_btl_ofi_endpoint *)bep);
    bm_btl_ofi_lock(ctx);
    struct bm_btl_ofi_frag *f = frag_get(ctx, size);
    bm_btl_ofi_unlock(ctx);
    if (!f)
        return NULL;
    frag_init_des(m, f, size, order, flags);
    return &f->des;
}

void bm_btl_ofi_free(struct bm_btl_module *mod, struct bm_btl_descriptor *des)
{
    (void)mod;
    struct bm_btl_ofi_frag *f = frag_of(des);
    struct bm_btl_ofi_context *ctx = f->req.ctx;
    bm_btl_ofi_lock(ctx);
    bool held = f->req.inflight; /* failed by us, still with the provider */
    if (held)
        f->fflags |= BM_OFI_FRAG_F_FREED;
    bm_btl_ofi_unlock(ctx);
    if (!held)
        frag_put(f);
}

struct bm_btl_descriptor *bm_btl_ofi_prepare_src(struct bm_btl_module *mod,
                                                 struct bm_btl_endpoint *bep, const void *data,
                                                 size_t reserve, size_t *size, uint8_t order,
                                                 uint32_t flags)
{
    struct bm_btl_ofi_module *m = (struct bm_btl_ofi_module *)mod;
    const struct bm_btl_ofi_config *cfg = &m->comp->cfg;
    if (reserve > cfg->eager_limit)
        return NULL;
    size_t room = cfg->max_send_size > reserve ? cfg->max_send_size - reserve : 0;
    size_t take = *size < room ? *size : room;
    bool inplace = reserve + take > cfg->eager_limit && take > 0;
    struct bm_btl_descriptor *d =
        bm_btl_ofi_alloc(mod, bep, order, inplace ? reserve : reserve + take, flags);
    if (!d)
        return NULL;
    if (inplace) {
        d->seg[0].len = reserve;
        d->seg[1].addr = (void *)data;
        d->seg[1].len = take;
        d->seg_count = 2;
        frag_of(d)->fflags |= BM_OFI_FRAG_F_INPLACE;
    } else if (take) {
        bm_util_copy((char *)d->seg[0].addr + reserve, data, take);
    }
    *size = take;
    return d;
}

/* ---- sending ---------------------------------------------------------------------- */

static int ofi_send_fail(struct bm_btl_ofi_endpoint *ep, ssize_t rc, const char *what)
{
    char msg[200];
    snprintf(msg, sizeof(msg), "%s to %s refused by the provider: %s", what, ep->desc,
             fi_strerror((int)-rc));
    int status = bm_btl_ofi_status_of((int)-rc);
    if (!bm_status_is_link(status))
        status = BM_ERR_LINK_DOWN;
    bm_btl_ofi_endpoint_fail(ep, status, msg, false);
    return status;
}

int bm_btl_ofi_send(struct bm_btl_module *mod, struct bm_btl_endpoint *bep,
                    struct bm_btl_descriptor *des, bm_btl_tag_t tag)
{
    struct bm_btl_ofi_module *m = (struct bm_btl_ofi_module *)mod;
    struct bm_btl_ofi_endpoint *ep = (struct bm_btl_ofi_endpoint *)bep;
    struct bm_btl_ofi_frag *f = frag_of(des);
    struct bm_btl_ofi_context *ctx = f->req.ctx;
    int failed = bm_btl_ofi_ep_failed(ep);
    if (failed)
        return failed;
    f->req.ep = ep;
    size_t first = sizeof(f->hdr) + des->seg[0].len;
    fi_addr_t dest = bm_btl_ofi_context_dest(ctx, ep);
    struct iovec iov[2] = {{&f->hdr, first}, {des->seg[1].addr, des->seg[1].len}};
    void *desc[2] = {f->desc, NULL};
    size_t count = 1;
    if (des->seg_count > 1 && des->seg[1].len > 0) {
        count = 2;
        if (m->mr_local && !f->req.reg &&
            bm_btl_ofi_mr_local_desc(m, NULL, des->seg[1].addr, des->seg[1].len, &desc[1],
                                     &f->req.reg) != BM_OK)
            return BM_ERR_OUT_OF_RESOURCE;
        if (f->req.reg)
            desc[1] = f->req.reg->desc;
    }
    bm_btl_ofi_lock(ctx);
    /* Numbered under the lock that orders the posts of the stream. */
    bm_btl_ofi_ack_hdr(ctx, ep, &f->hdr, tag, true);
    ssize_t rc = fi_sendv(ctx->tx, iov, desc, count, dest, &f->req.fctx);
    if (rc == 0) {
        bm_btl_ofi_req_posted(ctx, &f->req);
        bm_btl_ofi_ack_track(ctx, ep, f);
    } else if (f->hdr.seq) {
        ep->tx[ctx->index].tx_seq--; /* not sent: the number is given again */
    }
    bm_btl_ofi_unlock(ctx);
    if (rc != 0)
        bm_btl_ofi_ack_unsent(ep, &f->hdr);
    if (rc == 0) {
        bm_btl_ofi_endpoint_unstalled(ep);
        bm_btl_ofi_endpoint_sent(ep);
        BM_OFI_COUNT(m, sends);
        return BM_OK;
    }
    if (rc == -FI_EAGAIN)
        return bm_btl_ofi_endpoint_stalled(ep, ctx);
    return ofi_send_fail(ep, rc, "a message");
}

int bm_btl_ofi_sendi(struct bm_btl_module *mod, struct bm_btl_endpoint *bep, const void *hdr,
                     size_t hdr_len, const void *payload, size_t payload_len, uint8_t order,
                     uint32_t flags, bm_btl_tag_t tag, struct bm_btl_descriptor **des_out)
{
    struct bm_btl_ofi_module *m = (struct bm_btl_ofi_module *)mod;
    struct bm_btl_ofi_endpoint *ep = (struct bm_btl_ofi_endpoint *)bep;
    size_t len = hdr_len + payload_len;
    if (des_out)
        *des_out = NULL;
    if (payload_len > m->comp->cfg.eager_limit || hdr_len > OFI_EAGER_HDR_ROOM)
        return BM_ERR_NOT_AVAILABLE;
    int failed = bm_btl_ofi_ep_failed(ep);
    if (failed)
        return failed;
    size_t total = sizeof(struct bm_btl_ofi_hdr) + len;
    struct bm_btl_ofi_context *ctx = bm_btl_ofi_context_pick(m, ep);
    if (total <= m->inject_size && total <= OFI_INJECT_STACK) {
        _Alignas(8) unsigned char buf[OFI_INJECT_STACK];
        struct bm_btl_ofi_hdr *h = (struct bm_btl_ofi_hdr *)buf;
        bm_util_copy(buf + sizeof(*h), hdr, hdr_len);
        if (payload_len)
            bm_util_copy(buf + sizeof(*h) + hdr_len, payload, payload_len);
        bm_btl_ofi_lock(ctx);
        bm_btl_ofi_ack_hdr(ctx, ep, h, tag, false);
        ssize_t rc = fi_inject(ctx->tx, buf, total, bm_btl_ofi_context_dest(ctx, ep));
        bm_btl_ofi_unlock(ctx);
        if (rc != 0)
            bm_btl_ofi_ack_unsent(ep, h);
        if (rc == 0) {
            injected(m, ctx, ep);
            bm_btl_ofi_endpoint_unstalled(ep);
            bm_btl_ofi_endpoint_sent(ep);
            BM_OFI_COUNT(m, injects);
            return BM_BTL_DONE;
        }
        if (rc != -FI_EAGAIN)
            return ofi_send_fail(ep, rc, "a short message");
        bm_btl_ofi_context_drive(ctx);
    }
    /* Through a fragment the transport frees once the provider is done. */
    struct bm_btl_descriptor *d =
        bm_btl_ofi_alloc(mod, bep, order, len, flags | BM_BTL_DES_F_BTL_OWNED);
    if (!d)
        return BM_ERR_OUT_OF_RESOURCE;
    d->flags &= ~BM_BTL_DES_F_ALWAYS_CALLBACK;
    bm_util_copy(d->seg[0].addr, hdr, hdr_len);
    if (payload_len)
        bm_util_copy((char *)d->seg[0].addr + hdr_len, payload, payload_len);
    int rc = bm_btl_ofi_send(mod, bep, d, tag);
    if (rc == BM_OK || rc == BM_BTL_DONE)
        return BM_BTL_DONE;
    if (rc == BM_ERR_OUT_OF_RESOURCE && des_out) {
        d->flags &= ~BM_BTL_DES_F_BTL_OWNED;
        d->flags |= flags & BM_BTL_DES_F_BTL_OWNED;
        *des_out = d;
        return rc;
    }
    frag_put(frag_of(d));
    return rc;
}

void bm_btl_ofi_send_complete(struct bm_btl_ofi_frag *f, int status)
{
    if (status == BM_OK) {
        if (!bm_btl_ofi_ack_provider_done(f))
            return; /* the peer's acknowledgement completes it */
    } else {
        bm_btl_ofi_ack_untrack(f);
    }
    bm_btl_ofi_send_finish(f, status);
}

void bm_btl_ofi_send_finish(struct bm_btl_ofi_frag *f, int status)
{
    struct bm_btl_ofi_module *m = (struct bm_btl_ofi_module *)f->des.module;
    struct bm_btl_descriptor *des = &f->des;
    uint32_t flags = des->flags;
    if (des->cbfunc)
        des->cbfunc(&m->super, (struct bm_btl_endpoint *)f->req.ep, des, status);
    if (flags & BM_BTL_DES_F_BTL_OWNED)
        bm_btl_ofi_free(&m->super, des);
}

void bm_btl_ofi_frag_returned(struct bm_btl_ofi_frag *f)
{
    /* The provider gave back a fragment whose send we failed earlier: it
     * goes to the pool now if its owner already let it go. */
    if (f->fflags & BM_OFI_FRAG_F_FREED)
        frag_put(f);
}

static bm_status_t send_ctl_on(struct bm_btl_ofi_context *ctx, struct bm_btl_ofi_endpoint *ep,
                               uint8_t ctl, uint32_t seq);

bm_status_t bm_btl_ofi_send_ctl(struct bm_btl_ofi_endpoint *ep, uint8_t ctl, uint32_t seq)
{
    return send_ctl_on(bm_btl_ofi_context_pick(ep->m, ep), ep, ctl, seq);
}

void bm_btl_ofi_send_fences(struct bm_btl_ofi_module *m)
{
    for (int r = 0; m->ctx && r < m->comp->size; r++) {
        struct bm_btl_ofi_endpoint *ep = __atomic_load_n(&m->eps[r], __ATOMIC_ACQUIRE);
        if (!ep || bm_btl_ofi_ep_failed(ep))
            continue;
        uint64_t bits = atomic_exchange(&ep->injected, 0);
        for (int c = 0; c < m->nctx && bits; c++)
            if ((bits >> c) & 1)
                (void)send_ctl_on(&m->ctx[c], ep, BM_BTL_OFI_CTL_FENCE, 0);
    }
}

static bm_status_t send_ctl_on(struct bm_btl_ofi_context *ctx, struct bm_btl_ofi_endpoint *ep,
                               uint8_t ctl, uint32_t seq)
{
    struct bm_btl_ofi_module *m = ep->m;
    struct bm_btl_ofi_ctl_msg msg = {.ctl = ctl, .seq = seq};
    bm_btl_ofi_lock(ctx);
    struct bm_btl_ofi_frag *f = frag_get(ctx, sizeof(msg));
    bm_btl_ofi_unlock(ctx);
    if (!f)
        return BM_ERR_OUT_OF_RESOURCE;
    frag_init_des(m, f, sizeof(msg), 0, BM_BTL_DES_F_BTL_OWNED);
    memcpy(f->des.seg[0].addr, &msg, sizeof(msg));
    /* Posted below send's failure check: probes go over failed paths. */
    f->req.ep = ep;
    f->seq = 0;
    bm_btl_ofi_lock(ctx);
    bm_btl_ofi_ack_hdr(ctx, ep, &f->hdr, BM_BTL_TAG_BTL, false);
    ssize_t rc = fi_send(ctx->tx, &f->hdr, sizeof(f->hdr) + sizeof(msg), f->desc,
                         bm_btl_ofi_context_dest(ctx, ep), &f->req.fctx);
    if (rc == 0)
        bm_btl_ofi_req_posted(ctx, &f->req);
    bm_btl_ofi_unlock(ctx);
    if (rc != 0) {
        bm_btl_ofi_ack_unsent(ep, &f->hdr);
        frag_put(f);
        return BM_ERR_OUT_OF_RESOURCE;
    }
    return BM_OK;
}

bm_status_t bm_btl_ofi_send_inject(struct bm_btl_ofi_context *ctx, struct bm_btl_ofi_endpoint *ep,
                                   const void *buf, size_t len)
{
    bm_btl_ofi_lock(ctx);
    ssize_t rc = fi_inject(ctx->tx, buf, len, bm_btl_ofi_context_dest(ctx, ep));
    bm_btl_ofi_unlock(ctx);
    if (rc != 0)
        return BM_ERR_OUT_OF_RESOURCE;
    injected(ctx->m, ctx, ep);
    return BM_OK;
}
