/* The progress engine and everything that waits for it: one call polls the
 * transports (bm_btl_base_progress, which visits only components with
 * something to reach) and then, only when something is queued, retries
 * control messages and sends that a transport refused for lack of resources.
 * Also choosing a working path for the send side (failover.c marks paths
 * failed and working, and holds the traffic of a peer with none). */
#define BM_LOG_SUBSYS "pml"
#include "util/log.h"

#include "pml/pml_internal.h"
#include "runtime/rte.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A control message (ACK, or an eager fragment resent after its path
 * failed) waiting to be sent or in flight. The bytes are kept until the
 * transport calls back so that they can be resent after a path failure. */
struct bm_pml_ctl {
    struct bm_pml_ctl *next;
    int peer;
    bm_btl_tag_t tag;
    size_t len;
    _Alignas(8) char hdr[];
};

struct bm_pml_state bm_pml_g;

/* How deep this thread is in the progress lock (0: does not hold it), and
 * its own run of idle progress calls (each waiting thread yields on its own
 * count). */
static BM_PML_TLS int drain_held;
static BM_PML_TLS int idle_polls;
static BM_PML_TLS bool drain_missed; /* the last try found another thread draining */
static BM_PML_TLS int miss_run;      /* such tries in a row */

/* Deferred starts: sends whose thread found the progress lock taken
 * (bm_pml_start_defer), in arrival order, started by whoever holds the
 * lock when it lets go (flat combining; Linux's socket lock does the same
 * with the packets that arrive while a process holds a socket:
 * release_sock runs its backlog). The queue's own lock is a leaf: nothing
 * is taken under it. A thread that queues a start and then finds the lock
 * still taken relies on its holder to look at the queue after letting go:
 * each side writes its word (the queue's count, the lock), fences and then
 * reads the other's (Dekker's argument), so one of them sees the other. */
static struct {
    struct bm_util_lock lock;
    struct bm_pml_request *head, *tail;
    _Atomic int n;
} startq;

static void startq_run(void)
{
    /* The count goes up under the queue's lock with each append: taken
     * whole, it is the length of the list taken with it. */
    bm_util_lock_take(&startq.lock);
    struct bm_pml_request *req = startq.head;
    int n = atomic_exchange(&startq.n, 0);
    startq.head = startq.tail = NULL;
    bm_util_lock_give(&startq.lock);
    while (req) {
        struct bm_pml_request *next = req->pend_next;
        req->pend_next = NULL;
        bm_pml_send_start_deferred(req);
        req = next;
    }
    if (n > 0)
        bm_pml_wait_progressed();
}

/* After letting go of the progress lock: start what was deferred meanwhile
 * unless another thread took the lock (it will, when it lets go). The
 * caller's write (the count, or the lock given back with
 * bm_util_lock_give_sc) is ordered before the reads here by the fence, or
 * by the sequentially consistent exchange and load of drain_give. */
static void startq_after_release(void)
{
    atomic_thread_fence(memory_order_seq_cst);
    while (atomic_load_explicit(&startq.n, memory_order_relaxed) > 0) {
        if (!bm_util_lock_try(&bm_pml_g.drain))
            return;
        drain_held = 1;
        startq_run();
        drain_held = 0;
        bm_util_lock_give(&bm_pml_g.drain);
        atomic_thread_fence(memory_order_seq_cst);
    }
}

/* Let go of the progress lock and start what was deferred meanwhile. The
 * exchange that frees the lock and the load of the queue's count after it
 * are sequentially consistent: a thread that deferred (count raised, then
 * a fence, then a try of the lock) either finds the lock free or is seen
 * here (C11 7.17.3: a seq_cst fence after the count's increment orders the
 * try after every seq_cst operation before it in the single total order).
 * Saves the fence of every progress pass (an mfence on x86) in the common
 * case, an empty queue. */
static inline void drain_give(void)
{
    drain_held = 0;
    bm_util_lock_give_sc(&bm_pml_g.drain);
    if (__builtin_expect(atomic_load_explicit(&startq.n, memory_order_seq_cst) > 0, 0))
        startq_after_release();
}

/* Append req to a list of requests linked by pend_next (the retry queue,
 * the deferred starts: a request waits on one at most). */
static void req_list_append(struct bm_pml_request **head, struct bm_pml_request **tail,
                            struct bm_pml_request *req)
{
    req->pend_next = NULL;
    if (*tail)
        (*tail)->pend_next = req;
    else
        *head = req;
    *tail = req;
}

void bm_pml_start_defer(struct bm_pml_request *req)
{
    __atomic_fetch_add(&bm_pml_g.sends_deferred, 1, __ATOMIC_RELAXED);
    bm_util_lock_take(&startq.lock);
    req_list_append(&startq.head, &startq.tail, req);
    atomic_fetch_add(&startq.n, 1);
    bm_util_lock_give(&startq.lock);
    /* The holder may have let go before the count went up. */
    startq_after_release();
}

void bm_pml_start_init(void)
{
    static struct bm_util_lock_class startq_class = {.name = "deferred starts", .leaf = true};
    bm_util_lock_init(&startq.lock, &startq_class, false);
}

void bm_pml_start_fini(void)
{
    bm_util_lock_destroy(&startq.lock);
}

bool bm_pml_in_drain(void)
{
    return !bm_pml_g.mt || drain_held > 0;
}

bool bm_pml_progress_lock(void)
{
    return bm_pml_enter();
}

void bm_pml_progress_unlock(bool taken)
{
    bm_pml_leave(taken);
}

bool bm_pml_enter(void)
{
    if (!bm_pml_g.mt || drain_held)
        return false;
    bm_util_lock_take(&bm_pml_g.drain);
    drain_held = 1;
    /* A cancel or free of a deferred send finds it started. */
    if (atomic_load_explicit(&startq.n, memory_order_relaxed) > 0)
        startq_run();
    return true;
}

int bm_pml_try_enter(void)
{
    if (!bm_pml_g.mt || drain_held)
        return 0;
    if (!bm_util_lock_try(&bm_pml_g.drain))
        return -1;
    drain_held = 1;
    /* Queued starts go first: a send of this thread that was deferred
     * keeps its place before the one it starts now. */
    if (atomic_load_explicit(&startq.n, memory_order_relaxed) > 0)
        startq_run();
    return 1;
}

bool bm_pml_threaded(void)
{
    return bm_pml_g.mt;
}

void bm_pml_leave(bool taken)
{
    if (!taken)
        return;
    drain_give();
}

/* The lists are sorted by class (btl.h): the first working path is one of
 * the best working class. */
struct bm_btl_path *bm_pml_path_first(struct bm_btl_path_list *list)
{
    for (int i = 0; i < list->count; i++)
        if (!bm_pml_path_is_failed(&list->paths[i]))
            return &list->paths[i];
    return NULL;
}

/* ---- retry queues -------------------------------------------------------------- */

void bm_pml_pending_add(struct bm_pml_request *req)
{
    if (req->pending)
        return;
    req->pending = true;
    req_list_append(&bm_pml_g.pend_head, &bm_pml_g.pend_tail, req);
    /* Only polling retries it: a sleeping thread must not miss it. */
    if (bm_pml_g.mt)
        bm_pml_wait_kick();
}

static void ctl_queue(struct bm_pml_ctl *c)
{
    bm_pml_g.ctl_pending[c->peer]++;
    c->next = NULL;
    if (bm_pml_g.ctl_tail)
        bm_pml_g.ctl_tail->next = c;
    else
        bm_pml_g.ctl_head = c;
    bm_pml_g.ctl_tail = c;
    if (bm_pml_g.mt)
        bm_pml_wait_kick();
}

/* BM_OK when the message left (c is then owned by the callback or freed),
 * BM_ERR_OUT_OF_RESOURCE when it must wait. */
static int ctl_try(struct bm_pml_ctl *c)
{
    struct bm_btl_peer *peer = bm_btl_base_peer(c->peer);
    for (;;) {
        struct bm_btl_path *path = bm_pml_path_first(&peer->eager);
        if (!path)
            return bm_pml_peer_held(c->peer); /* held until a path recovers */
        struct bm_btl_module *m = path->module;
        int rc;
        if (bm_pml_sendi_ok(peer, m)) {
            rc = bm_btl_sendi(m, path->endpoint, c->hdr, c->len, NULL, 0, 0, BM_BTL_DES_F_PRIORITY,
                              c->tag, NULL);
            if (rc == BM_BTL_DONE) {
                free(c);
                return BM_OK;
            }
            if (bm_status_is_link(rc) || bm_status_is_peer(rc)) {
                bm_pml_path_failed(c->peer, path, rc, "control message failed");
                continue;
            }
        }
        struct bm_btl_descriptor *des = bm_btl_alloc(
            m, path->endpoint, 0, c->len,
            BM_BTL_DES_F_PRIORITY | BM_BTL_DES_F_BTL_OWNED | BM_BTL_DES_F_ALWAYS_CALLBACK);
        if (!des)
            return BM_ERR_OUT_OF_RESOURCE;
        memcpy(des->seg[0].addr, c->hdr, c->len);
        des->cbfunc = bm_pml_des_cb;
        des->cbdata = c;
        des->context = (void *)(uintptr_t)BM_PML_DES_CTL;
        bm_pml_g.inflight++;
        rc = bm_btl_send(m, path->endpoint, des, c->tag);
        if (rc >= 0)
            return BM_OK;
        bm_pml_g.inflight--;
        bm_btl_free(m, des);
        if (rc == BM_ERR_OUT_OF_RESOURCE)
            return rc;
        bm_pml_path_failed(c->peer, path, rc, "control message failed");
    }
}

void bm_pml_ctl_sendv(int peer_world, bm_btl_tag_t tag, const struct bm_btl_segment *segs,
                      uint32_t nsegs)
{
    size_t len = 0;
    for (uint32_t i = 0; i < nsegs; i++)
        len += segs[i].len;
    struct bm_pml_ctl *c = malloc(sizeof(*c) + len);
    if (!c)
        abort();
    c->peer = peer_world;
    c->tag = tag;
    c->len = 0;
    for (uint32_t i = 0; i < nsegs; i++) {
        if (segs[i].len)
            memcpy(c->hdr + c->len, segs[i].addr, segs[i].len);
        c->len += segs[i].len;
    }
    /* Keep control messages to a peer in order behind ones already waiting. */
    if (bm_pml_g.ctl_pending[peer_world] > 0 || ctl_try(c) == BM_ERR_OUT_OF_RESOURCE)
        ctl_queue(c);
}

void bm_pml_ctl_send(int peer_world, bm_btl_tag_t tag, const void *hdr, size_t len)
{
    struct bm_btl_segment seg = {.addr = (void *)(uintptr_t)hdr, .len = len};
    bm_pml_ctl_sendv(peer_world, tag, &seg, 1);
}

void bm_pml_ctl_done(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *ctl, int status)
{
    struct bm_pml_ctl *c = ctl;
    if (status >= 0) {
        free(c);
        return;
    }
    /* Resent on another path; a duplicate is recognised by the peer. */
    bm_pml_path_failed_ep(c->peer, m, ep, status);
    struct bm_pml_hdr_base *hb = (void *)c->hdr;
    if (hb->type == BM_PML_HDR_LOST) {
        free(c); /* a hint (restart.c): not sent again */
        return;
    }
    hb->flags |= BM_PML_HDR_F_RETRANSMIT;
    ctl_queue(c);
}

static int retry_queued(void)
{
    int n = 0;
    /* Once a message to a peer is refused again, the others to that peer
     * are not tried in this call (they stay in order behind it): a long
     * queue behind a full transport would otherwise cost a refused
     * transport call each, on every poll, and a peer whose traffic is held
     * (failover.c) must not hold up the others. */
    uint32_t stamp = ++bm_pml_g.retry_stamp;
    if (bm_pml_g.ctl_head) {
        struct bm_pml_ctl *list = bm_pml_g.ctl_head, *kept = NULL, *last = NULL;
        bm_pml_g.ctl_head = bm_pml_g.ctl_tail = NULL;
        while (list) {
            struct bm_pml_ctl *c = list;
            list = c->next;
            c->next = NULL;
            if (bm_pml_g.retry_blocked[c->peer] != stamp) {
                bm_pml_g.ctl_pending[c->peer]--;
                if (ctl_try(c) != BM_ERR_OUT_OF_RESOURCE) {
                    n++;
                    continue;
                }
                bm_pml_g.ctl_pending[c->peer]++;
                bm_pml_g.retry_blocked[c->peer] = stamp;
            }
            if (last)
                last->next = c;
            else
                kept = c;
            last = c;
        }
        /* What is still waiting goes first, before what was queued meanwhile. */
        if (kept) {
            last->next = bm_pml_g.ctl_head;
            if (!bm_pml_g.ctl_head)
                bm_pml_g.ctl_tail = last;
            bm_pml_g.ctl_head = kept;
        }
    }
    struct bm_pml_request *list = bm_pml_g.pend_head;
    bm_pml_g.pend_head = bm_pml_g.pend_tail = NULL;
    while (list) {
        struct bm_pml_request *req = list;
        list = req->pend_next;
        req->pending = false;
        if (bm_pml_g.retry_blocked[req->peer] == stamp) {
            bm_pml_pending_add(req);
            continue;
        }
        bm_pml_send_resume(req);
        /* a request completed here may already be back on the free list,
         * whose entries are never pending */
        if (req->pending)
            bm_pml_g.retry_blocked[req->peer] = stamp;
        else
            n++;
    }
    return n;
}

/* ---- progress hooks -------------------------------------------------------------- */

/* Registered hooks, in registration order. Kept outside bm_pml_g (which
 * init clears) so that registration does not depend on init order. An
 * unregistered entry is cleared in place (fn = NULL) while a pass runs and
 * squeezed out after it, so that a pass never skips or repeats a hook. */
struct bm_pml_hook {
    bm_pml_progress_fn fn;
    void *arg;
};
static struct {
    struct bm_pml_hook *v;
    int count, cap;
    bool running; /* a pass is under way (hooks do not nest) */
    bool holes;   /* entries were cleared during the pass */
} hooks;

bm_status_t bm_pml_progress_register(bm_pml_progress_fn fn, void *arg)
{
    bool taken = bm_pml_enter();
    if (hooks.count == hooks.cap) {
        int cap = hooks.cap ? 2 * hooks.cap : 8;
        struct bm_pml_hook *v = realloc(hooks.v, (size_t)cap * sizeof(*v));
        if (!v) {
            bm_pml_leave(taken);
            return BM_ERR_NO_MEMORY;
        }
        hooks.v = v;
        hooks.cap = cap;
    }
    hooks.v[hooks.count++] = (struct bm_pml_hook){fn, arg};
    bm_pml_leave(taken);
    if (bm_pml_g.mt)
        bm_pml_wait_kick(); /* a sleeper naps shorter while hooks run */
    return BM_OK;
}

bool bm_pml_hooks_active(void)
{
    return hooks.count > 0;
}

static void hooks_squeeze(void)
{
    int j = 0;
    for (int i = 0; i < hooks.count; i++)
        if (hooks.v[i].fn)
            hooks.v[j++] = hooks.v[i];
    hooks.count = j;
    hooks.holes = false;
    if (j == 0) {
        free(hooks.v);
        hooks.v = NULL;
        hooks.cap = 0;
    }
}

bm_status_t bm_pml_progress_unregister(bm_pml_progress_fn fn, void *arg)
{
    bool taken = bm_pml_enter();
    bm_status_t rc = BM_ERR_NOT_FOUND;
    for (int i = 0; i < hooks.count; i++) {
        if (hooks.v[i].fn == fn && hooks.v[i].arg == arg) {
            hooks.v[i].fn = NULL;
            hooks.holes = true;
            if (!hooks.running)
                hooks_squeeze();
            rc = BM_OK;
            break;
        }
    }
    bm_pml_leave(taken);
    return rc;
}

static int hooks_run(void)
{
    int n = 0;
    /* Hooks registered during the pass wait for the next one. */
    int count = hooks.count;
    hooks.running = true;
    for (int i = 0; i < count; i++) {
        struct bm_pml_hook h = hooks.v[i]; /* v may move if a hook registers one */
        if (h.fn)
            n += h.fn(h.arg);
    }
    hooks.running = false;
    if (hooks.holes)
        hooks_squeeze();
    return n;
}

/* One pass of the engine; the caller holds the progress lock. */
static inline __attribute__((always_inline)) int progress_pass(void)
{
    int n = bm_btl_base_progress();
    if (bm_pml_g.ctl_head || bm_pml_g.pend_head)
        n += retry_queued();
    if (__builtin_expect(bm_pml_g.noutage > 0, 0))
        n += bm_pml_failover_progress();
    if (__atomic_load_n(&bm_pml_g.nwatch, __ATOMIC_RELAXED) > 0 && bm_pml_g.restart_timers)
        n += bm_pml_restart_progress();
    if (bm_pml_g.stripe_on)
        n += bm_pml_stripe_progress();
    if (hooks.count > 0 && !hooks.running)
        n += hooks_run();
    return n;
}

/* Waiting processes spin here. When more processes than cores share the
 * machine, a spinning rank would hold the core its peer needs to answer:
 * in the yield and block modes, after a run of idle polls, give the core
 * away once (a blocking wait sleeps instead: bm_pml_progress_wait). In the
 * spin mode only a thread that keeps finding another thread draining
 * yields (under MPI_THREAD_MULTIPLE more threads than cores may wait). */
static void progress_idle(int n)
{
    if (n > 0) {
        idle_polls = 0;
        miss_run = 0;
    } else if (bm_pml_g.mt && bm_pml_progress_missed()) {
        return;
    } else if (bm_pml_g.wait_mode != BM_PML_WAIT_SPIN && bm_pml_g.cfg.idle_yield > 0) {
        if (++idle_polls >= bm_pml_g.cfg.idle_yield) {
            idle_polls = 0;
            sched_yield();
        }
    } else {
        bm_pml_progress_idle_mt();
    }
}

bool bm_pml_progress_missed(void)
{
    if (!drain_missed)
        return false;
    /* Another thread is draining, for this one too: after a few misses
     * there is nothing to do here but wait until it completes something
     * (a condition it signals), leaving the core to it or to the peer.
     * Measured with bm_mt_mr, 2 and 4 thread pairs on 2 cores: spinning or
     * yielding on the lock instead cut the rate 40 to 300 times. */
    drain_missed = false;
    idle_polls = 0;
    if (++miss_run >= 8) {
        miss_run = 0;
        bm_pml_wait_others(BM_PML_MISS_WAIT_NS);
    }
    return true;
}

void bm_pml_progress_idle_mt(void)
{
    /* Under MPI_THREAD_MULTIPLE more threads than cores may wait. */
    if (bm_pml_g.mt && ++idle_polls >= bm_pml_idle_polls()) {
        idle_polls = 0;
        sched_yield();
    }
}

/* ---- the single-threaded path ----------------------------------------------------
 * Without MPI_THREAD_MULTIPLE (and no progress thread) a progress call
 * checks one flag, bm_pml_g.st, and then does only the pass and an idle
 * count: no lock, no thread-local state, no check of the thread level or
 * the wait mode per layer. The counters are plain statics: one thread at a
 * time calls the library (SERIALIZED programs may switch threads between
 * calls, which only moves a count). */
static int st_wait_idle, st_test_idle;
static bool st_marked; /* the idle watch set a mark in this idle run (wait.c) */

void bm_pml_progress_st_set(bool on)
{
    st_wait_idle = st_test_idle = 0;
    st_marked = false;
    bm_pml_g.st_wait_limit = bm_pml_wait_idle_st_limit();
    bm_pml_g.st_test_limit = bm_pml_g.wait_mode != BM_PML_WAIT_SPIN && bm_pml_g.cfg.idle_yield > 0
                                 ? bm_pml_g.cfg.idle_yield
                                 : INT_MAX;
    bm_pml_g.st = on && !bm_pml_g.mt;
}

int bm_pml_progress_wait(void)
{
    if (__builtin_expect(bm_pml_g.st, 1)) {
        int n = progress_pass();
        if (n > 0) {
            st_wait_idle = 0;
            st_marked = false;
        } else if (__builtin_expect(++st_wait_idle >= bm_pml_g.st_wait_limit, 0)) {
            st_wait_idle = 0;
            bm_pml_wait_idle_st(&st_marked);
        }
        return n;
    }
    return bm_pml_wait_poll();
}

int bm_pml_progress_nowait(void)
{
    if (__builtin_expect(bm_pml_g.st, 1))
        return progress_pass();
    if (!bm_pml_g.initialized)
        return 0;
    int n;
    if (__builtin_expect(bm_pml_g.mt, 0) && !drain_held) {
        /* One thread drains; the others find the lock taken and go back
         * to looking at their own request, which the drainer completes
         * for them. */
        if (!bm_util_lock_try(&bm_pml_g.drain)) {
            drain_missed = true;
            /* ... or sends FRAGs of its own sends meanwhile (per-peer
             * send state, send.c), or of others' that waited a pass. */
            return bm_pml_tx_run(false);
        }
        drain_held = 1;
        n = progress_pass();
        n += bm_pml_tx_run(true); /* per-peer sends' work that needs the lock */
        drain_give();
        n += bm_pml_tx_run(false);
        if (n > 0)
            bm_pml_wait_progressed();
        return n;
    }
    return progress_pass();
}

int bm_pml_progress(void)
{
    if (__builtin_expect(bm_pml_g.st, 1)) {
        int n = progress_pass();
        if (n > 0) {
            st_test_idle = 0;
        } else if (__builtin_expect(++st_test_idle >= bm_pml_g.st_test_limit, 0)) {
            st_test_idle = 0;
            sched_yield();
        }
        return n;
    }
    int n = bm_pml_progress_nowait();
    progress_idle(n);
    return n;
}
