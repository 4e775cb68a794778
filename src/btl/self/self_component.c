/* The self transport: sends from a process to itself. A send copies (or,
 * with prepare_src, references) the data into a fragment and queues it; the
 * next progress call hands it to the receive callback and then completes
 * it. Delivery never happens inside send itself, so the PML is never
 * re-entered from its own send path (a receive callback that sends again
 * just queues another fragment for the next progress call). Put, get and
 * atomics act directly on this process's memory (self_rdma.c). */
#define BM_LOG_SUBSYS "btl/self"
#include "btl/self/self.h"
#include "util/log.h"
#include "util/params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct bm_param self_params[] = {
    {"BM_BTL_SELF_EAGER_LIMIT", BM_PARAM_SIZE, "64k", 64, 1LL << 30, NULL,
     "Largest eager message (PML header included) a process sends to itself.",
     offsetof(struct bm_btl_self_config, eager_limit), 0},
    {"BM_BTL_SELF_MAX_SEND_SIZE", BM_PARAM_SIZE, "256k", 64, 1LL << 30, NULL,
     "Largest single send a process makes to itself; larger messages are split by the PML "
     "or moved with put/get.",
     offsetof(struct bm_btl_self_config, max_send_size), 0},
    {"BM_BTL_SELF_FREE_FRAGS", BM_PARAM_INT, "32", 0, 1 << 20, NULL,
     "Fragments of each size kept for reuse instead of being returned to malloc.",
     offsetof(struct bm_btl_self_config, free_frags), 0},
};
static const struct bm_param_table self_table = {"btl/self", self_params,
                                                 BM_PARAM_COUNT(self_params)};
BM_PARAM_TABLE_REGISTER(self_table);

static inline struct bm_btl_self_module *self_mod(struct bm_btl_module *m)
{
    return (struct bm_btl_self_module *)m;
}

/* ---- fragments --------------------------------------------------------------- */

static struct bm_btl_self_frag *self_frag_get(struct bm_btl_self_module *sm, size_t size)
{
    enum bm_btl_self_class cls;
    if (size <= sm->config.eager_limit)
        cls = BM_BTL_SELF_CLASS_EAGER;
    else if (size <= sm->config.max_send_size)
        cls = BM_BTL_SELF_CLASS_MAX;
    else
        return NULL;
    struct bm_btl_self_frag *f = sm->free_list[cls];
    if (f) {
        sm->free_list[cls] = f->next;
        sm->nfree[cls]--;
    } else {
        size_t cap =
            cls == BM_BTL_SELF_CLASS_EAGER ? sm->config.eager_limit : sm->config.max_send_size;
        f = malloc(sizeof(*f) + cap);
        if (!f)
            return NULL;
        f->cap = cap;
        f->cls = cls;
    }
    memset(&f->des, 0, sizeof(f->des));
    f->des.module = &sm->super;
    f->next = NULL;
    f->tag = 0;
    f->internal = false;
    return f;
}

static void self_frag_put(struct bm_btl_self_module *sm, struct bm_btl_self_frag *f)
{
    if (sm->nfree[f->cls] >= sm->config.free_frags) {
        free(f);
        return;
    }
    f->next = sm->free_list[f->cls];
    sm->free_list[f->cls] = f;
    sm->nfree[f->cls]++;
}

/* The head is stored atomically (relaxed; a plain store on the machines we
 * build for): under MPI_THREAD_MULTIPLE progress reads it without the lock. */
static void self_queue(struct bm_btl_self_module *sm, struct bm_btl_self_frag *f)
{
    f->next = NULL;
    if (sm->queue_tail)
        sm->queue_tail->next = f;
    else
        __atomic_store_n(&sm->queue_head, f, __ATOMIC_RELAXED);
    sm->queue_tail = f;
}

/* MPI_THREAD_MULTIPLE: the endpoint's lock (self.h; README "Threads"). */
static struct bm_util_lock_class self_lock_class = {.name = "self endpoint", .leaf = true};

static inline void self_lock(struct bm_btl_self_module *sm)
{
    bm_util_lock_take(&sm->lock);
}

static inline void self_unlock(struct bm_btl_self_module *sm)
{
    bm_util_lock_give(&sm->lock);
}

/* ---- component ------------------------------------------------------------------ */

static bm_status_t self_query(char *why, size_t whylen)
{
    (void)why;
    (void)whylen;
    return BM_OK;
}

static bm_status_t self_init(const struct bm_btl_init_args *args,
                             struct bm_btl_component **component_out)
{
    struct bm_btl_self_component *c = calloc(1, sizeof(*c));
    struct bm_btl_self_module *sm = calloc(1, sizeof(*sm));
    if (!c || !sm) {
        free(c);
        free(sm);
        return BM_ERR_NO_MEMORY;
    }
    bm_status_t rc = bm_util_params_load(&self_table, &sm->config);
    if (rc != BM_OK) {
        free(c);
        free(sm);
        return rc;
    }
    if (sm->config.eager_limit > sm->config.max_send_size) {
        bm_log_warn("BM_BTL_SELF_EAGER_LIMIT (%zu) is larger than BM_BTL_SELF_MAX_SEND_SIZE "
                    "(%zu); using %zu for both",
                    sm->config.eager_limit, sm->config.max_send_size, sm->config.max_send_size);
        sm->config.eager_limit = sm->config.max_send_size;
    }
    struct bm_btl_module *m = &sm->super;
    m->ops = &bm_btl_self_ops;
    m->component = &c->super;
    snprintf(m->name, sizeof(m->name), "self");
    m->caps = BM_BTL_CAP_SEND | BM_BTL_CAP_SENDI | BM_BTL_CAP_PUT | BM_BTL_CAP_GET |
              BM_BTL_CAP_ATOMIC_OPS | BM_BTL_CAP_ATOMIC_FOPS | BM_BTL_CAP_SEND_INPLACE |
              BM_BTL_CAP_ORDERED;
    m->atomic_flags = BM_BTL_ATOMIC_F_32BIT | BM_BTL_ATOMIC_F_GLOBAL | BM_BTL_ATOMIC_F_FLOAT;
    m->exclusivity = BM_BTL_EXCL_SELF;
    m->latency = 0;
    m->bandwidth = 100000;
    m->eager_limit = sm->config.eager_limit;
    m->rndv_eager_limit = sm->config.eager_limit;
    m->max_send_size = sm->config.max_send_size;
    m->rdma_pipeline_send_length = 0;
    m->rdma_pipeline_frag_size = SIZE_MAX;
    m->min_rdma_pipeline_size = 0;
    m->put_limit = SIZE_MAX;
    m->put_alignment = 1;
    m->get_limit = SIZE_MAX;
    m->get_alignment = 1;
    m->reg_handle_size = 0;
    sm->endpoint.rank = bm_btl_rte_self(args->rte)->rank;
    sm->mt = args->thread_level >= BM_BTL_THREAD_MULTIPLE;
    if (sm->mt)
        bm_util_lock_init(&sm->lock, &self_lock_class, false);
    c->module = sm;
    c->modules[0] = m;
    c->super.ops = &bm_btl_self_ops;
    c->super.rte = args->rte;
    c->super.modules = c->modules;
    c->super.count = 1;
    *component_out = &c->super;
    return BM_OK;
}

/* Deliver what was queued before this call; fragments queued by the receive
 * callbacks wait for the next call, which keeps one progress call bounded. */
/* btl.h "Sleeping": a process's messages to itself come from its own
 * threads, whose PML wakes its own sleepers; no descriptor. */
static int self_wait_fd(struct bm_btl_component *comp)
{
    (void)comp;
    return -1;
}

static int self_wait_arm(struct bm_btl_component *comp, int64_t *timeout_ns)
{
    struct bm_btl_self_module *sm = ((struct bm_btl_self_component *)comp)->module;
    *timeout_ns = -1;
    return __atomic_load_n(&sm->queue_head, __ATOMIC_RELAXED) ||
                   __atomic_load_n(&sm->rdma_done.head, __ATOMIC_RELAXED)
               ? 1
               : 0;
}

static void self_wait_disarm(struct bm_btl_component *comp)
{
    (void)comp;
}

static int self_deliver(struct bm_btl_self_module *sm, struct bm_btl_self_frag *f,
                        struct bm_btl_self_frag *last);

/* MPI_THREAD_MULTIPLE: the queue and the finished one-sided operations are
 * taken whole under the lock, and delivered and called back without it;
 * the fragments come back under it once per call. */
static __attribute__((noinline)) int self_progress_mt(struct bm_btl_self_module *sm)
{
    self_lock(sm);
    struct bm_btl_defer_queue done = sm->rdma_done;
    __atomic_store_n(&sm->rdma_done.head, NULL, __ATOMIC_RELAXED);
    sm->rdma_done.tail = NULL;
    struct bm_btl_self_frag *f = sm->queue_head, *last = sm->queue_tail;
    __atomic_store_n(&sm->queue_head, NULL, __ATOMIC_RELAXED);
    sm->queue_tail = NULL;
    self_unlock(sm);
    int n = 0;
    if (done.head)
        n += bm_btl_defer_run(&done, &sm->super, BM_OK);
    if (f)
        n += self_deliver(sm, f, last);
    return n;
}

/* Deliver what the process sent itself and finish its one-sided operations. */
static __attribute__((noinline)) int self_progress_work(struct bm_btl_self_module *sm)
{
    if (sm->mt)
        return self_progress_mt(sm);
    int n = 0;
    if (sm->rdma_done.head)
        n += bm_btl_defer_run(&sm->rdma_done, &sm->super, BM_OK);
    struct bm_btl_self_frag *f = sm->queue_head, *last = sm->queue_tail;
    if (!f)
        return n;
    sm->queue_head = sm->queue_tail = NULL;
    return n + self_deliver(sm, f, last);
}

/* Hand f .. last (taken off the queue) to the receive callbacks. Under
 * MPI_THREAD_MULTIPLE the fragments to keep are given back together, under
 * the lock once, after the last callback. */
static int self_deliver(struct bm_btl_self_module *sm, struct bm_btl_self_frag *f,
                        struct bm_btl_self_frag *last)
{
    int n = 0;
    struct bm_btl_self_frag *back = NULL;
    struct bm_btl_module *m = &sm->super;
    struct bm_btl_endpoint *ep = (struct bm_btl_endpoint *)&sm->endpoint;
    for (;;) {
        struct bm_btl_self_frag *next = f->next;
        bool stop = (f == last);
        struct bm_btl_recv_desc d = {
            .endpoint = ep,
            .peer = sm->endpoint.rank,
            .tag = f->tag,
            .seg_count = f->des.seg_count,
            .seg = f->des.seg,
        };
        m->recv_cb[f->tag].cb(m, &d, m->recv_cb[f->tag].cbdata);
        bool put = f->internal;
        if (!put) {
            /* The callback may free the descriptor: read what we need first. */
            put = f->des.flags & BM_BTL_DES_F_BTL_OWNED;
            if (f->des.cbfunc)
                f->des.cbfunc(m, ep, &f->des, BM_OK);
        }
        if (put && sm->mt) {
            f->next = back;
            back = f;
        } else if (put) {
            self_frag_put(sm, f);
        }
        n++;
        if (stop)
            break;
        f = next;
    }
    if (back) {
        self_lock(sm);
        while (back) {
            struct bm_btl_self_frag *b = back;
            back = b->next;
            self_frag_put(sm, b);
        }
        self_unlock(sm);
    }
    return n;
}

/* Polled on every progress pass, almost always with nothing queued: the
 * empty check alone, without the loop's register saves. */
static int self_progress(struct bm_btl_component *comp)
{
    struct bm_btl_self_module *sm = ((struct bm_btl_self_component *)comp)->module;
    /* Both heads read (relaxed: under MPI_THREAD_MULTIPLE senders store
     * them under the lock) and or-ed: as few instructions as the plain
     * two-test form had (7 per idle poll, callgrind). */
    uintptr_t any = (uintptr_t)__atomic_load_n(&sm->rdma_done.head, __ATOMIC_RELAXED) |
                    (uintptr_t)__atomic_load_n(&sm->queue_head, __ATOMIC_RELAXED);
    if (__builtin_expect(any == 0, 1))
        return 0;
    return self_progress_work(sm);
}

static void self_finalize(struct bm_btl_component *comp)
{
    struct bm_btl_self_component *c = (struct bm_btl_self_component *)comp;
    struct bm_btl_self_module *sm = c->module;
    struct bm_btl_module *m = &sm->super;
    struct bm_btl_endpoint *ep = (struct bm_btl_endpoint *)&sm->endpoint;
    bm_btl_defer_run(&sm->rdma_done, m, BM_ERR_CANCELED);
    while (sm->queue_head) {
        struct bm_btl_self_frag *f = sm->queue_head;
        sm->queue_head = f->next;
        if (f->internal) {
            free(f);
            continue;
        }
        bool owned = f->des.flags & BM_BTL_DES_F_BTL_OWNED;
        if (f->des.cbfunc)
            f->des.cbfunc(m, ep, &f->des, BM_ERR_CANCELED);
        if (owned)
            free(f);
    }
    for (int k = 0; k < BM_BTL_SELF_NCLASS; k++) {
        while (sm->free_list[k]) {
            struct bm_btl_self_frag *f = sm->free_list[k];
            sm->free_list[k] = f->next;
            free(f);
        }
    }
    if (sm->mt)
        bm_util_lock_destroy(&sm->lock);
    free(sm);
    free(c);
}

/* ---- peers ------------------------------------------------------------------------ */

static bm_status_t self_add_procs(struct bm_btl_module *m, int nprocs, const int *ranks,
                                  struct bm_btl_endpoint **endpoints_out,
                                  struct bm_util_bitmap *reachable)
{
    struct bm_btl_self_module *sm = self_mod(m);
    int me = sm->endpoint.rank;
    for (int i = 0; i < nprocs; i++) {
        if (ranks[i] != me)
            continue;
        sm->endpoint_added = true;
        endpoints_out[i] = (struct bm_btl_endpoint *)&sm->endpoint;
        bm_util_bitmap_set(reachable, (size_t)i);
    }
    return BM_OK;
}

static bm_status_t self_del_procs(struct bm_btl_module *m, int nprocs, const int *ranks,
                                  struct bm_btl_endpoint **endpoints)
{
    struct bm_btl_self_module *sm = self_mod(m);
    for (int i = 0; i < nprocs; i++)
        if (endpoints[i] == (struct bm_btl_endpoint *)&sm->endpoint &&
            ranks[i] == sm->endpoint.rank)
            sm->endpoint_added = false;
    return BM_OK;
}

/* ---- sends ---------------------------------------------------------------------------- */

static struct bm_btl_descriptor *self_alloc(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                                            uint8_t order, size_t size, uint32_t flags)
{
    (void)ep;
    struct bm_btl_self_frag *f = self_frag_get(self_mod(m), size);
    if (!f)
        return NULL;
    f->des.seg[0].addr = f->buf;
    f->des.seg[0].len = size;
    f->des.seg_count = 1;
    f->des.flags = flags;
    f->des.order = order;
    return &f->des;
}

static void self_free(struct bm_btl_module *m, struct bm_btl_descriptor *des)
{
    self_frag_put(self_mod(m), (struct bm_btl_self_frag *)des);
}

/* Data is referenced, not copied (BM_BTL_CAP_SEND_INPLACE): delivery happens
 * in this same process before the completion callback, so the caller's
 * buffer is still there. */
static struct bm_btl_descriptor *self_prepare_src(struct bm_btl_module *m,
                                                  struct bm_btl_endpoint *ep, const void *data,
                                                  size_t reserve, size_t *size, uint8_t order,
                                                  uint32_t flags)
{
    struct bm_btl_self_module *sm = self_mod(m);
    if (reserve > sm->config.max_send_size)
        return NULL;
    size_t take = *size;
    if (take > sm->config.max_send_size - reserve)
        take = sm->config.max_send_size - reserve;
    if (!data)
        take = 0;
    struct bm_btl_descriptor *des = self_alloc(m, ep, order, reserve, flags);
    if (!des)
        return NULL;
    if (take > 0) {
        des->seg[1].addr = (void *)(uintptr_t)data;
        des->seg[1].len = take;
        des->seg_count = 2;
    }
    *size = take;
    return des;
}

static int self_send(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                     struct bm_btl_descriptor *des, bm_btl_tag_t tag)
{
    (void)ep;
    if (tag >= BM_BTL_TAG_MAX)
        return BM_ERR_BAD_PARAM;
    struct bm_btl_self_frag *f = (struct bm_btl_self_frag *)des;
    f->tag = tag;
    f->internal = false;
    self_queue(self_mod(m), f);
    return BM_OK;
}

/* sendi of both tables (mt a constant): header and payload copied into a
 * fragment, freed after delivery. Under MPI_THREAD_MULTIPLE the fragment is
 * taken and queued under the endpoint's lock, and the copy made outside it. */
static inline __attribute__((always_inline)) int
self_sendi_body(struct bm_btl_module *m, const void *hdr, size_t hdr_len, const void *payload,
                size_t payload_len, uint8_t order, bm_btl_tag_t tag,
                struct bm_btl_descriptor **des_out, bool mt)
{
    struct bm_btl_self_module *sm = self_mod(m);
    if (des_out)
        *des_out = NULL;
    if (tag >= BM_BTL_TAG_MAX)
        return BM_ERR_BAD_PARAM;
    if (hdr_len + payload_len > sm->config.max_send_size)
        return BM_ERR_NOT_AVAILABLE;
    if (mt)
        self_lock(sm);
    struct bm_btl_self_frag *f = self_frag_get(sm, hdr_len + payload_len);
    if (mt)
        self_unlock(sm);
    if (!f)
        return BM_ERR_OUT_OF_RESOURCE;
    if (hdr_len)
        memcpy(f->buf, hdr, hdr_len);
    if (payload_len)
        memcpy(f->buf + hdr_len, payload, payload_len);
    f->des.seg[0].addr = f->buf;
    f->des.seg[0].len = hdr_len + payload_len;
    f->des.seg_count = 1;
    f->des.order = order;
    f->tag = tag;
    f->internal = true;
    if (mt)
        self_lock(sm);
    self_queue(sm, f);
    if (mt)
        self_unlock(sm);
    return BM_BTL_DONE;
}

static int self_sendi(struct bm_btl_module *m, struct bm_btl_endpoint *ep, const void *hdr,
                      size_t hdr_len, const void *payload, size_t payload_len, uint8_t order,
                      uint32_t flags, bm_btl_tag_t tag, struct bm_btl_descriptor **des_out)
{
    (void)ep;
    (void)flags;
    return self_sendi_body(m, hdr, hdr_len, payload, payload_len, order, tag, des_out, false);
}

/* ---- MPI_THREAD_MULTIPLE: the same under the endpoint's lock ------------------------ */

static struct bm_btl_descriptor *self_alloc_mt(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                                               uint8_t order, size_t size, uint32_t flags)
{
    self_lock(self_mod(m));
    struct bm_btl_descriptor *des = self_alloc(m, ep, order, size, flags);
    self_unlock(self_mod(m));
    return des;
}

static void self_free_mt(struct bm_btl_module *m, struct bm_btl_descriptor *des)
{
    self_lock(self_mod(m));
    self_free(m, des);
    self_unlock(self_mod(m));
}

static struct bm_btl_descriptor *self_prepare_src_mt(struct bm_btl_module *m,
                                                     struct bm_btl_endpoint *ep, const void *data,
                                                     size_t reserve, size_t *size, uint8_t order,
                                                     uint32_t flags)
{
    self_lock(self_mod(m));
    struct bm_btl_descriptor *des = self_prepare_src(m, ep, data, reserve, size, order, flags);
    self_unlock(self_mod(m));
    return des;
}

static int self_send_mt(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                        struct bm_btl_descriptor *des, bm_btl_tag_t tag)
{
    self_lock(self_mod(m));
    int rc = self_send(m, ep, des, tag);
    self_unlock(self_mod(m));
    return rc;
}

static int self_sendi_mt(struct bm_btl_module *m, struct bm_btl_endpoint *ep, const void *hdr,
                         size_t hdr_len, const void *payload, size_t payload_len, uint8_t order,
                         uint32_t flags, bm_btl_tag_t tag, struct bm_btl_descriptor **des_out)
{
    (void)ep;
    (void)flags;
    return self_sendi_body(m, hdr, hdr_len, payload, payload_len, order, tag, des_out, true);
}

/* Everything but the module operations that differ between the tables
 * (btl.h "mt_ops"). */
#define SELF_OPS_COMMON                                                                            \
    .name = "self",                                                                                \
    .description = "a process sending to itself (memory copies, delivered from "                   \
                   "progress)",                                                                    \
    .params = &self_table,                                                                         \
    .caps = BM_BTL_CAP_SEND | BM_BTL_CAP_SENDI | BM_BTL_CAP_PUT | BM_BTL_CAP_GET |                 \
            BM_BTL_CAP_ATOMIC_OPS | BM_BTL_CAP_ATOMIC_FOPS | BM_BTL_CAP_SEND_INPLACE |             \
            BM_BTL_CAP_ORDERED | BM_BTL_CAP_WAIT | BM_BTL_CAP_THREADS,                             \
    .query = self_query, .init = self_init, .progress = self_progress, .wait_fd = self_wait_fd,    \
    .wait_arm = self_wait_arm, .wait_disarm = self_wait_disarm, .finalize = self_finalize,         \
    .add_procs = self_add_procs, .del_procs = self_del_procs, .put = bm_btl_self_put,              \
    .get = bm_btl_self_get, .atomic_op = bm_btl_self_atomic_op,                                    \
    .atomic_fop = bm_btl_self_atomic_fop, .atomic_cswap = bm_btl_self_atomic_cswap,                \
    .register_mem = bm_btl_defer_register_mem, .deregister_mem = bm_btl_defer_deregister_mem,      \
    .flush = bm_btl_self_flush

/* The module of an MPI_THREAD_MULTIPLE process (the base points it here). */
static const struct bm_btl_ops bm_btl_self_ops_mt = {
    SELF_OPS_COMMON,      .alloc = self_alloc_mt,
    .free = self_free_mt, .prepare_src = self_prepare_src_mt,
    .send = self_send_mt, .sendi = self_sendi_mt,
};

const struct bm_btl_ops bm_btl_self_ops = {
    SELF_OPS_COMMON,
    .alloc = self_alloc,
    .free = self_free,
    .prepare_src = self_prepare_src,
    .send = self_send,
    .sendi = self_sendi,
    .mt_ops = &bm_btl_self_ops_mt,
};
