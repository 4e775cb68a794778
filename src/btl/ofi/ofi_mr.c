/* Memory registration of the ofi transport, honouring every mr_mode bit a
 * provider may ask of us:
 *   FI_MR_VIRT_ADDR  targets are virtual addresses; without it they are
 *                    offsets from the registration's first byte, which the
 *                    handle carries (rkey.base) so that the initiator can
 *                    subtract it.
 *   FI_MR_PROV_KEY   the provider chooses the key (fi_mr_key); without it we
 *                    do, from a per-module counter (unique in the domain).
 *   FI_MR_ALLOCATED  only allocated memory may be registered: we only ever
 *                    register memory the caller gave us or that we allocated.
 *   FI_MR_LOCAL      local buffers need registering too and every operation
 *                    carries their descriptor: the caller's handle when it
 *                    covers the buffer, else a registration from the cache.
 *                    BM_BTL_OFI_MR_LOCAL=on does this even for providers that
 *                    do not ask (a test of the path).
 *   FI_MR_ENDPOINT   a registration is bound to the endpoint and enabled.
 * FI_MR_RAW and FI_MR_MMU_NOTIFY are not offered to the provider, which then
 * does not offer itself to us (ofi_provider.c).
 *
 * The registration cache: one sorted array of disjoint page-aligned ranges
 * per module. A lookup that is covered by an entry takes a reference; a
 * miss registers the union of the request and every entry it overlaps
 * (those leave the index and close once unused), so repeated, growing or
 * overlapping buffers converge on one registration. Unused entries stay
 * until BM_BTL_OFI_MR_CACHE_MAX of them exist (least recently used goes
 * first) or until the memory monitor (ofi_monitor.c) reports their memory
 * unmapped. Without a monitor, entries are kept only for providers that
 * reach memory by address through the kernel (the software providers: no
 * pinned pages that could go stale); for the others every use registers
 * afresh. The cache lock is a real mutex even in single-threaded jobs: the
 * monitor thread invalidates entries concurrently. Entries it invalidates
 * while unused are closed by the owner (fi_close from the monitor thread
 * would break FI_THREAD_DOMAIN). */
#define BM_LOG_SUBSYS "btl/ofi"
#include "btl/ofi/ofi.h"
#include "util/log.h"

#include <rdma/fi_errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OFI_MR_ACCESS (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SEND | FI_RECV)

static uintptr_t mr_page;

static uintptr_t page_down(uintptr_t a)
{
    return a & ~(mr_page - 1);
}

static uintptr_t page_up(uintptr_t a)
{
    return (a + mr_page - 1) & ~(mr_page - 1);
}

uint64_t bm_btl_ofi_mr_mode_bits(uint64_t mr_mode)
{
    if (mr_mode == FI_MR_BASIC)
        return FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED;
    if (mr_mode == FI_MR_SCALABLE)
        return 0;
    return mr_mode;
}

bm_status_t bm_btl_ofi_mr_init(struct bm_btl_ofi_module *m)
{
    if (!mr_page) {
        long ps = sysconf(_SC_PAGESIZE);
        mr_page = ps > 0 ? (uintptr_t)ps : 4096;
    }
    memset(&m->cache, 0, sizeof(m->cache));
    m->cache.next_key = 1;
    return BM_OK;
}

bm_status_t bm_btl_ofi_mr_reg_raw(struct bm_btl_ofi_module *m, void *addr, size_t len,
                                  struct fid_mr **mr_out, void **desc_out, uint64_t *key_out)
{
    uint64_t want_key = 0;
    if (!(m->mr_mode & FI_MR_PROV_KEY))
        want_key = m->cache.next_key++;
    struct fid_mr *mr = NULL;
    int rc = fi_mr_reg(m->domain, addr, len, OFI_MR_ACCESS, 0, want_key, 0, &mr, NULL);
    if (rc) {
        bm_log_error("%s: registering %zu bytes at %p failed: %s (FI_MR mode 0x%llx)",
                     m->super.name, len, addr, fi_strerror(-rc), (unsigned long long)m->mr_mode);
        return rc == -FI_ENOMEM ? BM_ERR_NO_MEMORY : BM_ERR_NOT_AVAILABLE;
    }
    if (m->mr_mode & FI_MR_ENDPOINT) {
        rc = fi_mr_bind(mr, &m->ep->fid, 0);
        if (!rc)
            rc = fi_mr_enable(mr);
        if (rc) {
            bm_log_error("%s: binding a registration to the endpoint (FI_MR_ENDPOINT) failed: %s",
                         m->super.name, fi_strerror(-rc));
            fi_close(&mr->fid);
            return BM_ERR_NOT_AVAILABLE;
        }
    }
    *mr_out = mr;
    *desc_out = fi_mr_desc(mr);
    *key_out = (m->mr_mode & FI_MR_PROV_KEY) ? fi_mr_key(mr) : want_key;
    return BM_OK;
}

/* ---- the index ------------------------------------------------------------ */

/* Index of the first entry whose end lies above addr (candidates start here). */
static int cache_lower(const struct bm_btl_ofi_mr_cache *c, uintptr_t addr)
{
    int lo = 0, hi = c->count;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (c->index[mid]->end <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void cache_remove_at(struct bm_btl_ofi_mr_cache *c, int i)
{
    memmove(&c->index[i], &c->index[i + 1], (size_t)(c->count - i - 1) * sizeof(c->index[0]));
    c->count--;
}

static bool cache_insert(struct bm_btl_ofi_mr_cache *c, struct bm_btl_ofi_mr *e)
{
    if (c->count == c->cap) {
        int cap = c->cap ? c->cap * 2 : 32;
        struct bm_btl_ofi_mr **v = realloc(c->index, (size_t)cap * sizeof(*v));
        if (!v)
            return false;
        c->index = v;
        c->cap = cap;
    }
    int i = cache_lower(c, e->start);
    memmove(&c->index[i + 1], &c->index[i], (size_t)(c->count - i) * sizeof(c->index[0]));
    c->index[i] = e;
    c->count++;
    return true;
}

static void mr_close(struct bm_btl_ofi_module *m, struct bm_btl_ofi_mr *e)
{
    if (e->monitored)
        bm_btl_ofi_monitor_unwatch(m->comp->monitor, e->start, e->end);
    int rc = fi_close(&e->mr->fid);
    if (rc)
        bm_log_warn("%s: closing a registration failed: %s", m->super.name, fi_strerror(-rc));
    free(e);
}

/* Take e out of the index (lock held); closed now if unused, else on release. */
static void cache_drop(struct bm_btl_ofi_module *m, int i)
{
    struct bm_btl_ofi_mr *e = m->cache.index[i];
    cache_remove_at(&m->cache, i);
    e->cached = false;
    if (e->refs == 0) {
        m->cache.unused--;
        mr_close(m, e);
    }
}

static void cache_evict(struct bm_btl_ofi_module *m)
{
    struct bm_btl_ofi_mr_cache *c = &m->cache;
    while (c->unused > m->comp->cfg.mr_cache_max) {
        int victim = -1;
        for (int i = 0; i < c->count; i++)
            if (c->index[i]->refs == 0 && (victim < 0 || c->index[i]->lru < c->index[victim]->lru))
                victim = i;
        if (victim < 0)
            break;
        c->evictions++;
        cache_drop(m, victim);
    }
}

void bm_btl_ofi_mr_reap(struct bm_btl_ofi_module *m)
{
    /* Entries the monitor invalidated while they were unused: flagged
     * invalid and left in the index for us to close. */
    struct bm_btl_ofi_mr_cache *c = &m->cache;
    for (int i = 0; i < c->count;) {
        if (c->index[i]->invalid)
            cache_drop(m, i);
        else
            i++;
    }
}

void bm_btl_ofi_mr_invalidate(struct bm_btl_ofi_module *m, uintptr_t start, uintptr_t end)
{
    pthread_mutex_lock(&m->lock);
    struct bm_btl_ofi_mr_cache *c = &m->cache;
    for (int i = cache_lower(c, start); i < c->count && c->index[i]->start < end; i++) {
        struct bm_btl_ofi_mr *e = c->index[i];
        if (!e->invalid) {
            e->invalid = true;
            e->monitored = false; /* the kernel dropped the watch with the mapping */
            c->invalidations++;
        }
    }
    pthread_mutex_unlock(&m->lock);
}

static struct bm_btl_ofi_mr *mr_new(struct bm_btl_ofi_module *m, uintptr_t start, uintptr_t end)
{
    struct bm_btl_ofi_mr *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->start = start;
    e->end = end;
    if (bm_btl_ofi_mr_reg_raw(m, (void *)start, end - start, &e->mr, &e->desc, &e->key) != BM_OK) {
        free(e);
        return NULL;
    }
    return e;
}

struct bm_btl_ofi_mr *bm_btl_ofi_mr_acquire(struct bm_btl_ofi_module *m, const void *addr,
                                            size_t len)
{
    uintptr_t s = page_down((uintptr_t)addr);
    uintptr_t e = page_up((uintptr_t)addr + (len ? len : 1));
    struct bm_btl_ofi_monitor *mon = m->comp->monitor;
    bm_btl_ofi_monitor_sync(mon);
    pthread_mutex_lock(&m->lock);
    struct bm_btl_ofi_mr_cache *c = &m->cache;
    bm_btl_ofi_mr_reap(m);
    int i = cache_lower(c, s);
    if (i < c->count && c->index[i]->start <= s && c->index[i]->end >= e) {
        struct bm_btl_ofi_mr *hit = c->index[i];
        if (hit->refs++ == 0)
            c->unused--;
        hit->lru = ++c->clock;
        c->hits++;
        pthread_mutex_unlock(&m->lock);
        return hit;
    }
    c->misses++;
    bool keep = m->comp->cfg.mr_cache && (mon || m->software);
    /* The union with every entry the range touches replaces them. */
    uintptr_t us = s, ue = e;
    if (keep) {
        for (int k = i; k < c->count && c->index[k]->start < e; k++) {
            if (c->index[k]->start < us)
                us = c->index[k]->start;
            if (c->index[k]->end > ue)
                ue = c->index[k]->end;
        }
    }
    struct bm_btl_ofi_mr *reg = mr_new(m, us, ue);
    if (!reg && (us != s || ue != e))
        reg = mr_new(m, s, e); /* part of the union may be gone */
    if (!reg) {
        pthread_mutex_unlock(&m->lock);
        return NULL;
    }
    reg->refs = 1;
    reg->lru = ++c->clock;
    if (keep) {
        while (i < c->count && c->index[i]->start < reg->end)
            cache_drop(m, i);
        reg->monitored = mon && bm_btl_ofi_monitor_watch(mon, reg->start, reg->end);
        if ((reg->monitored || m->software) && cache_insert(c, reg))
            reg->cached = true;
    }
    pthread_mutex_unlock(&m->lock);
    return reg;
}

void bm_btl_ofi_mr_release(struct bm_btl_ofi_module *m, struct bm_btl_ofi_mr *reg)
{
    if (!reg)
        return;
    pthread_mutex_lock(&m->lock);
    if (--reg->refs == 0) {
        if (!reg->cached) {
            mr_close(m, reg);
        } else if (reg->invalid) {
            for (int i = cache_lower(&m->cache, reg->start); i < m->cache.count; i++)
                if (m->cache.index[i] == reg) {
                    m->cache.unused++;
                    cache_drop(m, i);
                    break;
                }
        } else {
            m->cache.unused++;
            cache_evict(m);
        }
    }
    pthread_mutex_unlock(&m->lock);
}

void bm_btl_ofi_mr_fini(struct bm_btl_ofi_module *m)
{
    pthread_mutex_lock(&m->lock);
    struct bm_btl_ofi_mr_cache *c = &m->cache;
    int leaked = 0;
    while (c->count > 0) {
        struct bm_btl_ofi_mr *e = c->index[c->count - 1];
        if (e->refs > 0) {
            leaked++;
            e->refs = 0;
            c->unused++;
        }
        cache_drop(m, c->count - 1);
    }
    if (leaked)
        bm_log_debug("%s: %d registrations still in use at finalize were closed", m->super.name,
                     leaked);
    bm_log_debug("%s: registration cache: %llu hits, %llu misses, %llu evictions, %llu "
                 "invalidations",
                 m->super.name, (unsigned long long)c->hits, (unsigned long long)c->misses,
                 (unsigned long long)c->evictions, (unsigned long long)c->invalidations);
    free(c->index);
    c->index = NULL;
    c->cap = 0;
    pthread_mutex_unlock(&m->lock);
}

/* ---- handles and local descriptors ---------------------------------------------- */

struct bm_btl_reg_handle *bm_btl_ofi_register_mem(struct bm_btl_module *mod,
                                                  struct bm_btl_endpoint *ep, void *base,
                                                  size_t size, uint32_t reg_flags)
{
    struct bm_btl_ofi_module *m = (struct bm_btl_ofi_module *)mod;
    (void)ep;
    (void)reg_flags; /* every registration allows every access: one cache serves all */
    struct bm_btl_ofi_handle *h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    h->reg = bm_btl_ofi_mr_acquire(m, base, size);
    if (!h->reg) {
        free(h);
        return NULL;
    }
    h->module = m;
    h->rkey.key = h->reg->key;
    h->rkey.base = h->reg->start;
    return (struct bm_btl_reg_handle *)h;
}

bm_status_t bm_btl_ofi_deregister_mem(struct bm_btl_module *mod, struct bm_btl_reg_handle *handle)
{
    struct bm_btl_ofi_module *m = (struct bm_btl_ofi_module *)mod;
    struct bm_btl_ofi_handle *h = (struct bm_btl_ofi_handle *)handle;
    if (!h || h->module != m)
        return BM_ERR_BAD_PARAM;
    bm_btl_ofi_mr_release(m, h->reg);
    free(h);
    return BM_OK;
}

bm_status_t bm_btl_ofi_mr_local_desc(struct bm_btl_ofi_module *m,
                                     const struct bm_btl_reg_handle *handle, const void *addr,
                                     size_t len, void **desc_out, struct bm_btl_ofi_mr **reg_out)
{
    *reg_out = NULL;
    if (!m->mr_local) {
        *desc_out = NULL;
        return BM_OK;
    }
    const struct bm_btl_ofi_handle *h = (const struct bm_btl_ofi_handle *)handle;
    uintptr_t a = (uintptr_t)addr;
    if (h && h->module == m && h->reg && !h->reg->invalid && a >= h->reg->start &&
        a + len <= h->reg->end) {
        *desc_out = h->reg->desc;
        return BM_OK;
    }
    struct bm_btl_ofi_mr *reg = bm_btl_ofi_mr_acquire(m, addr, len);
    if (!reg)
        return BM_ERR_OUT_OF_RESOURCE;
    *desc_out = reg->desc;
    *reg_out = reg;
    return BM_OK;
}
