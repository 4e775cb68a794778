/* PML requests: allocation from a table of fixed slots, so that a request
 * can be named on the wire by (slot index, generation) and validated when a
 * fragment names it, plus the owner-facing test/wait/free/cancel calls.
 * Slots live in chunks that never move, so request pointers stay valid; the
 * generation changes at every reuse, so a stale id from a finished transfer
 * never reaches a new request. */
#define BM_LOG_SUBSYS "pml"
#include "util/log.h"

#include "pml/pml_internal.h"
#include "util/mem.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define BM_PML_REQ_CHUNK 256

/* The chunk table. It grows by a copy twice its size; a replaced one stays
 * allocated until fini (older), since bm_pml_request_active reads the table
 * without the lock and may still hold it. */
struct req_tab {
    struct req_tab *older;
    uint32_t cap;
    struct bm_pml_request *chunk[];
};
static struct req_tab *req_tab;
static uint32_t req_nchunks;
static struct bm_pml_request *req_free;
/* Under MPI_THREAD_MULTIPLE: guards the three above (allocation, release,
 * and lookups by id, which read the chunk table). */
static struct bm_util_lock_class req_lock_class = {.name = "requests", .leaf = true};
static struct bm_util_lock req_lock;
static bool req_lock_ready;

/* Under MPI_THREAD_MULTIPLE each thread keeps up to REQ_TCACHE free slots
 * of its own, so that threads allocating and freeing requests (every
 * receive, every send that is not inline) do not meet on the table's lock
 * for each one (README "Threads"): a thread frees into its cache and
 * allocates from it, and goes to the table's free list, under its lock,
 * only to move half a cache at a time. A slot in a cache is FREE like one
 * on the list (a stale id finds a FREE slot or a new generation either
 * way). The epoch of the table (moved on at fini) tells a thread that its
 * cache belongs to a table that is gone; a thread that ends gives its cache
 * back (the key's destructor). */
#define REQ_TCACHE 64
static _Atomic uint64_t req_epoch = 1;
static _Thread_local __attribute__((tls_model("initial-exec"))) struct {
    uint64_t epoch;
    uint32_t n;
    bool keyed; /* req_tkey set for this thread (its destructor flushes) */
    struct bm_pml_request *r[REQ_TCACHE];
} req_tcache;
static pthread_key_t req_tkey;
static pthread_once_t req_tkey_once = PTHREAD_ONCE_INIT;

static void req_tcache_flush(void *unused);

static void req_tkey_make(void)
{
    if (pthread_key_create(&req_tkey, req_tcache_flush) != 0)
        abort();
}

void bm_pml_request_table_init(void)
{
    if (bm_pml_g.mt && !req_lock_ready) {
        bm_util_lock_init(&req_lock, &req_lock_class, false);
        req_lock_ready = true;
        pthread_once(&req_tkey_once, req_tkey_make);
    }
}

/* The state as the owner sees it: completion is published with a release
 * store after the status is written, and read with an acquire load. */
/* Where a request's cleared part begins: after index, gen, kind and state,
 * which bm_pml_request_alloc writes one by one (see there). */
#define REQ_BODY_AT offsetof(struct bm_pml_request, user_freed)
_Static_assert(offsetof(struct bm_pml_request, index) < REQ_BODY_AT &&
                   offsetof(struct bm_pml_request, gen) < REQ_BODY_AT &&
                   offsetof(struct bm_pml_request, kind) < REQ_BODY_AT &&
                   offsetof(struct bm_pml_request, state) < REQ_BODY_AT,
               "the identity words come first in struct bm_pml_request");

static inline uint8_t req_state(const struct bm_pml_request *req)
{
    return __atomic_load_n(&req->state, __ATOMIC_ACQUIRE);
}
static inline void req_state_set(struct bm_pml_request *req, uint8_t state)
{
    __atomic_store_n(&req->state, state, __ATOMIC_RELEASE);
}

static bool request_grow(void)
{
    if (!req_tab || req_nchunks == req_tab->cap) {
        uint32_t cap = req_tab ? 2 * req_tab->cap : 16;
        struct req_tab *t = malloc(sizeof(*t) + cap * sizeof(t->chunk[0]));
        if (!t)
            return false;
        t->older = req_tab;
        t->cap = cap;
        if (req_tab)
            memcpy(t->chunk, req_tab->chunk, req_nchunks * sizeof(t->chunk[0]));
        __atomic_store_n(&req_tab, t, __ATOMIC_RELEASE);
    }
    struct bm_pml_request *c = calloc(BM_PML_REQ_CHUNK, sizeof(*c));
    if (!c)
        return false;
    req_tab->chunk[req_nchunks] = c;
    for (int i = BM_PML_REQ_CHUNK - 1; i >= 0; i--) {
        c[i].index = req_nchunks * BM_PML_REQ_CHUNK + (uint32_t)i;
        c[i].pend_next = req_free;
        req_free = &c[i];
    }
    /* published after the chunk (bm_pml_request_active) */
    __atomic_store_n(&req_nchunks, req_nchunks + 1, __ATOMIC_RELEASE);
    return true;
}

/* Whether this thread's cache belongs to the current table; makes it so
 * (empty) when not. */
static inline bool req_tcache_current(void)
{
    uint64_t epoch = atomic_load_explicit(&req_epoch, memory_order_relaxed);
    if (__builtin_expect(req_tcache.epoch == epoch, 1))
        return true;
    req_tcache.epoch = epoch;
    req_tcache.n = 0;
    if (!req_tcache.keyed) {
        req_tcache.keyed = true;
        pthread_setspecific(req_tkey, &req_tcache);
    }
    return false;
}

/* Move this thread's cache back to the table's free list, down to keep
 * slots (under the table's lock). */
static void req_tcache_spill(uint32_t keep)
{
    bm_util_lock_take(&req_lock);
    while (req_tcache.n > keep) {
        struct bm_pml_request *req = req_tcache.r[--req_tcache.n];
        req->pend_next = req_free;
        req_free = req;
    }
    bm_util_lock_give(&req_lock);
}

/* The key's destructor: a thread that ends gives its slots back. */
static void req_tcache_flush(void *unused)
{
    (void)unused;
    if (req_tcache.n > 0 &&
        req_tcache.epoch == atomic_load_explicit(&req_epoch, memory_order_relaxed) &&
        req_lock_ready)
        req_tcache_spill(0);
    req_tcache.n = 0;
}

/* Under MPI_THREAD_MULTIPLE: a slot from this thread's cache, refilled
 * with half a cache from the table's free list when empty. */
static __attribute__((noinline)) struct bm_pml_request *request_pop_mt(void)
{
    req_tcache_current();
    if (__builtin_expect(req_tcache.n > 0, 1))
        return req_tcache.r[--req_tcache.n];
    bm_util_lock_take(&req_lock);
    while (req_tcache.n < REQ_TCACHE / 2 && (req_free || request_grow())) {
        req_tcache.r[req_tcache.n++] = req_free;
        req_free = req_free->pend_next;
    }
    bm_util_lock_give(&req_lock);
    return req_tcache.n > 0 ? req_tcache.r[--req_tcache.n] : NULL;
}

/* A slot off the free list (this thread's cache under MPI_THREAD_MULTIPLE). */
static inline struct bm_pml_request *request_pop(void)
{
    if (__builtin_expect(bm_pml_g.mt, 0))
        return request_pop_mt();
    if (__builtin_expect(!req_free, 0) && !request_grow())
        return NULL;
    struct bm_pml_request *req = req_free;
    req_free = req->pend_next;
    return req;
}

struct bm_pml_request *bm_pml_request_alloc(enum bm_pml_req_kind kind)
{
    struct bm_pml_request *req = request_pop();
    if (!req)
        return NULL;
    uint32_t gen = req->gen + 1;
    if (gen == 0)
        gen = 1;
    /* Only the common part and the kind's own part: the other kind's fields
     * are never read. Vector stores inline, not "rep stos" (util/mem.h).
     * The identity words (index, gen, kind, state) are not cleared:
     * bm_pml_request_lookup may read them at this moment from another
     * thread, for an id that named this slot's last use (a late FIN or
     * ACK, rdma.c's record of the last RGET to a peer), so they change
     * only by atomic stores. */
    char *body = (char *)req + REQ_BODY_AT;
    const size_t send_at = offsetof(struct bm_pml_request, sbuf) - REQ_BODY_AT;
    const size_t recv_at = offsetof(struct bm_pml_request, rbuf) - REQ_BODY_AT;
    if (kind == BM_PML_REQ_SEND) {
        bm_util_zero_fixed(body, recv_at);
    } else {
        bm_util_zero_fixed(body, send_at);
        bm_util_zero_fixed(body + recv_at, sizeof(*req) - REQ_BODY_AT - recv_at);
        req->rget_class = -1;
    }
    __atomic_store_n(&req->gen, gen, __ATOMIC_RELAXED);
    __atomic_store_n(&req->kind, (uint8_t)kind, __ATOMIC_RELAXED);
    req_state_set(req, BM_PML_REQ_ACTIVE);
    return req;
}

static inline void request_release(struct bm_pml_request *req)
{
    if (req->conv.type) {
        bm_util_dtype_release((struct bm_util_dtype *)(uintptr_t)req->conv.type);
        req->conv.type = NULL;
    }
    if (__builtin_expect(bm_pml_g.mt, 0)) {
        req_state_set(req, BM_PML_REQ_FREE);
        req_tcache_current();
        if (__builtin_expect(req_tcache.n == REQ_TCACHE, 0))
            req_tcache_spill(REQ_TCACHE / 2);
        req_tcache.r[req_tcache.n++] = req;
        return;
    }
    req_state_set(req, BM_PML_REQ_FREE);
    req->pend_next = req_free;
    req_free = req;
}

void bm_pml_request_release(struct bm_pml_request *req)
{
    request_release(req);
}

void bm_pml_request_complete_slow(struct bm_pml_request *req)
{
    /* Read before the state is published: from then on an owner that has
     * not freed the request may free and reuse it at once. */
    bool freed = req->user_freed;
    if (req->kind == BM_PML_REQ_SEND && req->rget_reg)
        bm_pml_rdma_send_done(req); /* the receiver read what it wanted */
    if (req->kind == BM_PML_REQ_SEND && req->ahead_des)
        bm_pml_send_ahead_drop(req); /* packed ahead, never asked for */
    if (req->watched)
        bm_pml_restart_unwatch(req);
    req_state_set(req, BM_PML_REQ_COMPLETE);
    if (freed) {
        if (req->kind == BM_PML_REQ_SEND)
            __atomic_fetch_sub(&bm_pml_g.freed_active, 1, __ATOMIC_RELAXED);
        if (req->outstanding == 0)
            request_release(req);
    }
}

void bm_pml_request_des_returned(struct bm_pml_request *req)
{
    if (req->outstanding == 0 && req->user_freed)
        request_release(req);
}

struct bm_pml_request *bm_pml_request_lookup(bm_pml_reqid_t id, enum bm_pml_req_kind kind)
{
    uint32_t index = (uint32_t)id;
    uint32_t gen = (uint32_t)(id >> 32);
    bm_pml_lock(&req_lock);
    struct bm_pml_request *req = NULL;
    if (index / BM_PML_REQ_CHUNK < req_nchunks) {
        req = &req_tab->chunk[index / BM_PML_REQ_CHUNK][index % BM_PML_REQ_CHUNK];
        if (__atomic_load_n(&req->gen, __ATOMIC_RELAXED) != gen ||
            req_state(req) != BM_PML_REQ_ACTIVE ||
            __atomic_load_n(&req->kind, __ATOMIC_RELAXED) != kind)
            req = NULL;
    }
    bm_pml_unlock(&req_lock);
    return req;
}

bool bm_pml_request_active(bm_pml_reqid_t id, enum bm_pml_req_kind kind)
{
    uint32_t index = (uint32_t)id;
    uint32_t gen = (uint32_t)(id >> 32);
    if (index / BM_PML_REQ_CHUNK >= __atomic_load_n(&req_nchunks, __ATOMIC_ACQUIRE))
        return false;
    const struct req_tab *t = __atomic_load_n(&req_tab, __ATOMIC_ACQUIRE);
    const struct bm_pml_request *req =
        &t->chunk[index / BM_PML_REQ_CHUNK][index % BM_PML_REQ_CHUNK];
    return __atomic_load_n(&req->gen, __ATOMIC_RELAXED) == gen &&
           req_state(req) == BM_PML_REQ_ACTIVE &&
           __atomic_load_n(&req->kind, __ATOMIC_RELAXED) == kind;
}

void bm_pml_request_table_fini(void)
{
    for (uint32_t i = 0; i < req_nchunks; i++)
        free(req_tab->chunk[i]);
    while (req_tab) {
        struct req_tab *older = req_tab->older;
        free(req_tab);
        req_tab = older;
    }
    req_nchunks = 0;
    req_free = NULL;
    /* Every thread's cache held slots of the chunks just freed. */
    atomic_fetch_add_explicit(&req_epoch, 1, memory_order_relaxed);
    if (req_lock_ready) {
        bm_util_lock_destroy(&req_lock);
        req_lock_ready = false;
    }
}

bool bm_pml_request_test(struct bm_pml_request *req, struct bm_pml_status *status_out)
{
    if (req_state(req) != BM_PML_REQ_COMPLETE) {
        bm_pml_progress_test();
        if (req_state(req) != BM_PML_REQ_COMPLETE)
            return false;
    }
    if (status_out)
        *status_out = req->status;
    return true;
}

void bm_pml_request_wait(struct bm_pml_request *req, struct bm_pml_status *status_out)
{
    while (req_state(req) != BM_PML_REQ_COMPLETE)
        bm_pml_progress_wait();
    if (status_out)
        *status_out = req->status;
}

void bm_pml_request_free(struct bm_pml_request *req)
{
    /* A completed receive is the owner's alone (nothing else refers to
     * it): no progress lock. Everything else may race with the drainer's
     * callbacks. */
    if (req->kind == BM_PML_REQ_RECV && req_state(req) == BM_PML_REQ_COMPLETE) {
        request_release(req);
        return;
    }
    /* A per-peer send completes under its peer's lock (send.c), wherever
     * it is found done: its free takes that lock, not the progress lock.
     * tx_peer is the owner's own write (send.c send_rndv_free). */
    if (__builtin_expect(req->kind == BM_PML_REQ_SEND && req->tx_peer, 0)) {
        bm_pml_send_tx_free(req);
        return;
    }
    bool taken = bm_pml_enter();
    if (req_state(req) == BM_PML_REQ_COMPLETE) {
        /* An eager send completes once its data is copied; its descriptor
         * may still be with the transport and point at the request. */
        if (req->outstanding == 0)
            request_release(req);
        else
            req->user_freed = true;
        bm_pml_leave(taken);
        return;
    }
    /* MPI lets the communication finish after the free: a receive still
     * matches its message. Finalize waits only for freed sends, since a
     * receive may never match. */
    req->user_freed = true;
    if (req->kind == BM_PML_REQ_SEND)
        __atomic_fetch_add(&bm_pml_g.freed_active, 1, __ATOMIC_RELAXED);
    bm_pml_leave(taken);
}

void bm_pml_request_finish(struct bm_pml_request *req, struct bm_pml_status *status_out)
{
    *status_out = req->status;
    /* A completed receive is the owner's alone (bm_pml_request_free). */
    if (req->kind == BM_PML_REQ_RECV)
        request_release(req);
    else
        bm_pml_request_free(req);
}

/* A send can be cancelled while its message may still wait unmatched at the
 * receiver: an eager message sent (the request active, or completed by the
 * copy), or a rendezvous whose ACK has not come (once ACKed it matched).
 * Called with the progress lock held. */
static void send_cancel(struct bm_pml_request *req)
{
    if (req->cancelling || req->user_freed)
        return;
    uint8_t state = req_state(req);
    if (req->rndv ? state != BM_PML_REQ_ACTIVE || req->acked || req->put_done
                  : state == BM_PML_REQ_FREE)
        return;
    if (state == BM_PML_REQ_COMPLETE) /* an eager send: active again until answered */
        req_state_set(req, BM_PML_REQ_ACTIVE);
    bm_pml_send_cancel(req);
}

bm_status_t bm_pml_request_cancel(struct bm_pml_request *req)
{
    if (req->kind == BM_PML_REQ_SEND) {
        bool taken = bm_pml_enter();
        send_cancel(req);
        bm_pml_leave(taken);
        return BM_OK;
    }
    if (req_state(req) != BM_PML_REQ_ACTIVE)
        return BM_OK;
    bool taken = bm_pml_enter();
    /* Already matched: it completes normally. */
    if (req_state(req) == BM_PML_REQ_ACTIVE && bm_pml_match_unpost(req)) {
        req->status.cancelled = true;
        req->status.count = 0;
        req->status.error = BM_OK;
        bm_pml_request_complete(req);
    }
    bm_pml_leave(taken);
    return BM_OK;
}
