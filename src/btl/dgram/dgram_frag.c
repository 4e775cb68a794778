/* Fragments and descriptors of the dgram transport. A fragment is what the
 * PML asks us to send (or put, or what a GET answers with): any size up to
 * max_send_size, always held in transport-owned memory so that segments can
 * be resent until they are ACKed without the caller keeping anything alive.
 * Small fragments (one segment) use the segment embedded in them; large ones
 * take segments from the module pool as each chunk is posted. Fragments up
 * to one interface-sized datagram, and those of an eager copy, are recycled
 * through two per-module caches. */
#define BM_LOG_SUBSYS "btl/dgram"
#include "btl/dgram/dgram.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

struct bm_btl_dgram_frag *bm_btl_dgram_frag_new(struct bm_btl_dgram_module *m, size_t cap)
{
    struct bm_btl_dgram_frag *f = NULL;
    size_t alloc_cap = cap;
    if (cap <= m->frag_small_cap) {
        alloc_cap = m->frag_small_cap;
        if (m->frag_ncache > 0)
            f = m->frag_cache[--m->frag_ncache];
    } else if (cap <= m->frag_large_cap) {
        alloc_cap = m->frag_large_cap;
        if (m->frag_nlcache > 0)
            f = m->frag_lcache[--m->frag_nlcache];
    }
    if (!f) {
        f = malloc(sizeof(*f) + alloc_cap);
        if (!f)
            return NULL;
    }
    memset(f, 0, sizeof(*f));
    f->buf = (uint8_t *)(f + 1);
    f->cap = alloc_cap;
    f->data = f->buf;
    f->des.module = &m->super;
    f->small.embedded = 1;
    f->small.timer = -1;
    f->small.frag = f;
    bm_util_list_node_init(&f->small.link);
    return f;
}

void bm_btl_dgram_frag_release(struct bm_btl_dgram_module *m, struct bm_btl_dgram_frag *f)
{
    if (!f)
        return;
    if (f->cap == m->frag_small_cap && m->frag_ncache < m->frag_cache_max) {
        m->frag_cache[m->frag_ncache++] = f;
        return;
    }
    if (f->cap == m->frag_large_cap && m->frag_nlcache < m->frag_lcache_max) {
        m->frag_lcache[m->frag_nlcache++] = f;
        return;
    }
    free(f);
}

/* Every segment of the fragment is ACKed (status BM_OK), or the path failed.
 * Callbacks may send again or free the descriptor, so nothing of f is used
 * after them. */
void bm_btl_dgram_frag_complete(struct bm_btl_dgram_frag *f, int status)
{
    struct bm_btl_dgram_endpoint *ep = f->ep;
    struct bm_btl_dgram_module *m = ep->module;
    struct bm_btl_endpoint *bep = (struct bm_btl_endpoint *)ep;
    f->in_use = false;
    switch (f->kind) {
    case BM_DGRAM_FK_SEND: {
        bm_btl_send_cb_fn cb = f->des.cbfunc;
        bool owned = (f->des.flags & BM_BTL_DES_F_BTL_OWNED) != 0;
        if (cb)
            cb(&m->super, bep, &f->des, status);
        if (owned)
            bm_btl_dgram_frag_release(m, f);
        break;
    }
    case BM_DGRAM_FK_PUT: {
        bm_btl_rdma_cb_fn cb = f->rdma_cb;
        void *laddr = f->laddr, *ctx = f->rdma_ctx, *cbdata = f->rdma_cbdata;
        struct bm_btl_reg_handle *lh = f->lhandle;
        ep->rdma_out--;
        bm_btl_dgram_frag_release(m, f);
        if (cb)
            cb(&m->super, bep, laddr, lh, ctx, cbdata, status);
        break;
    }
    default:
        bm_btl_dgram_frag_release(m, f);
        break;
    }
}

static struct bm_btl_descriptor *bm_btl_dgram_alloc_unlocked(struct bm_btl_module *bm,
                                                             struct bm_btl_endpoint *ep,
                                                             uint8_t order, size_t size,
                                                             uint32_t flags)
{
    struct bm_btl_dgram_module *m = (struct bm_btl_dgram_module *)bm;
    (void)ep;
    if (size > m->super.max_send_size)
        return NULL;
    struct bm_btl_dgram_frag *f = bm_btl_dgram_frag_new(m, size);
    if (!f)
        return NULL;
    f->kind = BM_DGRAM_FK_SEND;
    f->des.seg[0].addr = f->buf;
    f->des.seg[0].len = size;
    f->des.seg_count = 1;
    f->des.flags = flags;
    f->des.order = order;
    return &f->des;
}

static void bm_btl_dgram_free_unlocked(struct bm_btl_module *bm, struct bm_btl_descriptor *des)
{
    struct bm_btl_dgram_frag *f = (struct bm_btl_dgram_frag *)des;
    bm_btl_dgram_frag_release((struct bm_btl_dgram_module *)bm, f);
}

static struct bm_btl_descriptor *bm_btl_dgram_prepare_src_unlocked(struct bm_btl_module *bm,
                                                                   struct bm_btl_endpoint *ep,
                                                                   const void *data, size_t reserve,
                                                                   size_t *size, uint8_t order,
                                                                   uint32_t flags)
{
    struct bm_btl_dgram_module *m = (struct bm_btl_dgram_module *)bm;
    if (reserve > m->super.max_send_size)
        return NULL;
    size_t take = *size;
    if (take > m->super.max_send_size - reserve)
        take = m->super.max_send_size - reserve;
    if (take >= BM_DGRAM_INPLACE_MIN) {
        /* The caller's memory stays valid until the completion, which
         * comes only once every segment is ACKed: segments are cut from it
         * and resent from it, with no copy and no fresh buffer (a new 256
         * KiB buffer per fragment cost a page fault per 4 KiB moved: 63% of
         * a 1 MiB stream's faults, measured with perf -e page-faults). */
        struct bm_btl_descriptor *des = bm_btl_dgram_alloc(bm, ep, order, reserve, flags);
        if (!des)
            return NULL;
        des->seg[1].addr = (void *)(uintptr_t)data;
        des->seg[1].len = take;
        des->seg_count = 2;
        *size = take;
        return des;
    }
    struct bm_btl_descriptor *des = bm_btl_dgram_alloc(bm, ep, order, reserve + take, flags);
    if (!des)
        return NULL;
    if (take)
        memcpy((uint8_t *)des->seg[0].addr + reserve, data, take);
    *size = take;
    return des;
}

void bm_btl_dgram_frag_done(struct bm_btl_dgram_frag *f, int status)
{
    struct bm_btl_dgram_module *m = f->ep->module;
    if (f->status == 0)
        f->status = status;
    bm_util_queue_push(&m->done, &f->qlink);
}

/* ---- entry points: the module lock (MPI_THREAD_MULTIPLE only) ---------- */

struct bm_btl_descriptor *bm_btl_dgram_alloc(struct bm_btl_module *bm, struct bm_btl_endpoint *ep,
                                             uint8_t order, size_t size, uint32_t flags)
{
    struct bm_btl_dgram_module *lm = (struct bm_btl_dgram_module *)bm;
    bm_btl_dgram_lock(lm);
    struct bm_btl_descriptor *r = bm_btl_dgram_alloc_unlocked(bm, ep, order, size, flags);
    bm_btl_dgram_unlock(lm);
    return r;
}

void bm_btl_dgram_free(struct bm_btl_module *bm, struct bm_btl_descriptor *des)
{
    struct bm_btl_dgram_module *lm = (struct bm_btl_dgram_module *)bm;
    bm_btl_dgram_lock(lm);
    bm_btl_dgram_free_unlocked(bm, des);
    bm_btl_dgram_unlock(lm);
}

struct bm_btl_descriptor *bm_btl_dgram_prepare_src(struct bm_btl_module *bm,
                                                   struct bm_btl_endpoint *ep, const void *data,
                                                   size_t reserve, size_t *size, uint8_t order,
                                                   uint32_t flags)
{
    struct bm_btl_dgram_module *lm = (struct bm_btl_dgram_module *)bm;
    bm_btl_dgram_lock(lm);
    struct bm_btl_descriptor *r =
        bm_btl_dgram_prepare_src_unlocked(bm, ep, data, reserve, size, order, flags);
    bm_btl_dgram_unlock(lm);
    return r;
}
