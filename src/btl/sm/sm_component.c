/* The sm transport's component and module: tunables, start-up (one segment
 * per process, published in the modex as a struct bm_btl_sm_card), finding
 * the local peers in add_procs and mapping each one's segment when this
 * process first sends to it or meets one of its fragments (Open MPI's
 * add_procs cutoff does the same one level up), the progress loop, and
 * tear-down. Sends and receives are in sm_send.c, single-copy get/put in
 * sm_rdma.c, the segment files in sm_segment.c. */
#define BM_LOG_SUBSYS "btl/sm"
#include "btl/sm/sm.h"
#include "runtime/rte.h"
#include "util/log.h"
#include "util/params.h"

#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <unistd.h>

#define SM_MODEX_KEY "btl.sm"

struct sm_params {
    struct bm_btl_sm_config c;
    size_t single_copy_min;
};

static const struct bm_param sm_params[] = {
    {"BM_BTL_SM_EAGER_LIMIT", BM_PARAM_SIZE, "4160", 64, 1LL << 20, NULL,
     "Largest eager message (PML header included) between processes of one node; also the "
     "payload size of the small fragments. The default lets a 4 KiB message and its header "
     "go eagerly (measured: 4 KiB latency about halved against a 4096-byte limit, which sent "
     "it by rendezvous).",
     offsetof(struct sm_params, c.eager_limit), 0},
    {"BM_BTL_SM_MAX_SEND_SIZE", BM_PARAM_SIZE, "32k", 64, 1LL << 24, NULL,
     "Payload size of the large fragments: the largest single send between processes of one "
     "node.",
     offsetof(struct sm_params, c.max_send_size), 0},
    {"BM_BTL_SM_EAGER_FRAGS", BM_PARAM_INT, "256", 2, 1 << 16, NULL,
     "Small fragments in each process's shared segment: how many small sends can be in flight "
     "from one process before it waits for receivers.",
     offsetof(struct sm_params, c.eager_frags), 0},
    {"BM_BTL_SM_MAX_FRAGS", BM_PARAM_INT, "64", 2, 1 << 16, NULL,
     "Large fragments in each process's shared segment.", offsetof(struct sm_params, c.max_frags),
     0},
    {"BM_BTL_SM_POLL_BUDGET", BM_PARAM_INT, "64", 1, 1 << 20, NULL,
     "Most fragments handled by one progress call, so that one busy sender cannot starve the "
     "rest of the progress engine.",
     offsetof(struct sm_params, c.poll_budget), 0},
    {"BM_BTL_SM_SINGLE_COPY", BM_PARAM_BOOL, "1", 0, 0, NULL,
     "Offer get/put with process_vm_readv/writev (one copy, straight between the processes' "
     "buffers) when the kernel allows it. Turn off to force copying through shared memory.",
     offsetof(struct sm_params, c.single_copy), 0},
    {"BM_BTL_SM_PEER_CHECK_MS", BM_PARAM_INT, "250", 0, 3600000, NULL,
     "While sends to a local peer are outstanding and nothing arrives, check this often "
     "(milliseconds) whether the peer's process still exists, so that a crashed peer is "
     "reported instead of waited for. 0 disables the check.",
     offsetof(struct sm_params, c.peer_check_ms), 0},
    {"BM_BTL_SM_FBOX_BYTES", BM_PARAM_SIZE, "64k", 0, BM_BTL_SM_FBOX_BYTES_MAX, NULL,
     "Bytes of the fast-box ring of each pair of local processes: messages sent with sendi "
     "are copied straight into the ring in the receiver's segment, packed by length in "
     "32-byte units, no fragment needed. Rounded up to a multiple of 64, and lowered on wide "
     "nodes (BM_BTL_SM_FBOX_TOTAL). At most 1 MiB. 0 disables fast boxes.",
     offsetof(struct sm_params, c.fbox_bytes), 0},
    {"BM_BTL_SM_FBOX_TOTAL", BM_PARAM_SIZE, "2m", 0, 1LL << 32, NULL,
     "Bytes of fast-box rings one process may hold for all its local peers: each ring is "
     "at most this divided by the processes on the node (but at least 4 KiB), so that "
     "/dev/shm use grows with N x 2 MiB rather than N x N x 64 KiB.",
     offsetof(struct sm_params, c.fbox_total), 0},
    {"BM_BTL_SM_FBOX_MAX", BM_PARAM_SIZE, "4160", 1, 65535, NULL,
     "Largest message (PML header included) that goes through a fast box; larger ones take "
     "a fragment. At most half the ring minus 63 bytes (lowered to that).",
     offsetof(struct sm_params, c.fbox_max), 0},
    {"BM_BTL_SM_FBOX_HINT_MIN", BM_PARAM_INT, "8", 2, 1 << 20, NULL,
     "With at least this many processes on the node, senders flag their fast box in a "
     "per-receiver bitmap so that progress reads only flagged rings; below it the receiver "
     "polls every ring (one load each), which saves the flag's atomic operations.",
     offsetof(struct sm_params, c.fbox_hint_min), 0},
    {"BM_BTL_SM_FBOX_AFTER", BM_PARAM_INT, "16", 0, 1 << 30, NULL,
     "Messages a process sends to a local peer through the fragment FIFO before the fast-box "
     "ring to that peer gets its memory (0: at start-up, and every local peer's segment is "
     "mapped at start-up too instead of on first use). Rings of pairs that never talk then "
     "take no /dev/shm space, so memory does not grow with N x N for idle pairs (Open MPI's "
     "vader waits for 16 messages too).",
     offsetof(struct sm_params, c.fbox_after), 0},
    {"BM_BTL_SM_SINGLE_COPY_MIN", BM_PARAM_SIZE, "4k", 0, 0, NULL,
     "Messages smaller than this are copied through shared memory even when single copy is "
     "possible (tells the PML where its RDMA protocols start). 4 KiB: every rendezvous past "
     "the eager limit is read (2 ranks, block minima: 8-48 KiB ping-pong 1.15-2.5 us by "
     "single copy against 2.2-7.3 us through fragments).",
     offsetof(struct sm_params, single_copy_min), 0},
};
static const struct bm_param_table sm_table = {"btl/sm", sm_params, BM_PARAM_COUNT(sm_params)};
BM_PARAM_TABLE_REGISTER(sm_table);

static bm_status_t sm_query(char *why, size_t whylen)
{
    if (access("/dev/shm", W_OK | X_OK) != 0) {
        snprintf(why, whylen, "/dev/shm is missing or not writable");
        return BM_ERR_NOT_AVAILABLE;
    }
    return BM_OK;
}

/* Fragments made at start-up when the pool is backed in steps: enough for
 * start-up's traffic and a few messages in flight; the rest follows as
 * senders need it (doubling), so a process that sends little holds little
 * of /dev/shm (the whole pool is 3.2 MB by default). */
#define SM_FRAGS_FIRST_EAGER 32
#define SM_FRAGS_FIRST_MAX   4

bm_status_t bm_btl_sm_frags_grow(struct bm_btl_sm_module *sm, int c, uint32_t n)
{
    struct bm_btl_sm_seg_ctl *ctl = sm->ctl;
    uint32_t first = sm->frag_ready[c], count = ctl->frag_count[c];
    if (first >= count)
        return BM_ERR_OUT_OF_RESOURCE;
    if (n > count - first)
        n = count - first;
    if (sm->lazy_rings) {
        /* Backed through our mapping: a full /dev/shm is an error here, not
         * a SIGBUS when a header is written. */
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
        uintptr_t lo =
            (uintptr_t)sm->seg + ctl->frags_offset[c] + (uintptr_t)first * ctl->frag_stride[c];
        uintptr_t hi = lo + (uintptr_t)n * ctl->frag_stride[c];
        lo &= ~(page - 1);
        hi = (hi + page - 1) & ~(page - 1);
        if (madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE) != 0) {
            if (!sm->frags_full_said)
                bm_log_warn("cannot back %u more shared-memory fragments (%s): /dev/shm is "
                            "full (df /dev/shm); sends to local peers wait for fragments in use",
                            n, strerror(errno));
            sm->frags_full_said = true;
            return BM_ERR_OUT_OF_RESOURCE;
        }
    }
    size_t cap = c == BM_BTL_SM_CLASS_EAGER ? sm->config.eager_limit : sm->config.max_send_size;
    for (uint32_t i = first; i < first + n; i++) {
        uint32_t idx = sm->frag_base[c] + i;
        uint64_t off = ctl->frags_offset[c] + (uint64_t)i * ctl->frag_stride[c];
        struct bm_btl_sm_frag *f = &sm->frags[idx];
        f->hdr = (struct bm_btl_sm_frag_hdr *)(sm->seg + off);
        f->rptr = bm_btl_sm_rptr(sm->rank, off);
        f->cap = (uint32_t)cap;
        f->cls = (uint8_t)c;
        f->hdr->self = f->rptr;
        f->hdr->index = idx;
        f->hdr->cls = (uint8_t)c;
        f->hdr->src = sm->rank;
    }
    /* Below the fragments still free, in reverse, so that the lowest
     * (first-touched) fragments go out first. */
    uint32_t *st = sm->free_stack[c];
    memmove(st + n, st, sm->nfree[c] * sizeof(*st));
    for (uint32_t i = 0; i < n; i++)
        st[n - 1 - i] = sm->frag_base[c] + first + i;
    sm->nfree[c] += n;
    /* read without the module's lock under MPI_THREAD_MULTIPLE (sm_send.c) */
    __atomic_store_n(&sm->frag_ready[c], first + n, __ATOMIC_RELAXED);
    if (sm->free_next)
        bm_btl_sm_pool_move(sm, c); /* the lock-free pool (MPI_THREAD_MULTIPLE) */
    return BM_OK;
}

static bm_status_t sm_frags_init(struct bm_btl_sm_module *sm)
{
    struct bm_btl_sm_seg_ctl *ctl = sm->ctl;
    sm->nfrags = ctl->frag_count[0] + ctl->frag_count[1];
    sm->frags = calloc(sm->nfrags, sizeof(*sm->frags));
    if (!sm->frags)
        return BM_ERR_NO_MEMORY;
    uint32_t base = 0;
    for (int c = 0; c < BM_BTL_SM_NCLASS; c++) {
        sm->free_stack[c] = calloc(ctl->frag_count[c], sizeof(uint32_t));
        if (!sm->free_stack[c])
            return BM_ERR_NO_MEMORY;
        sm->frag_base[c] = base;
        base += ctl->frag_count[c];
        uint32_t first = !sm->lazy_rings              ? ctl->frag_count[c]
                         : c == BM_BTL_SM_CLASS_EAGER ? SM_FRAGS_FIRST_EAGER
                                                      : SM_FRAGS_FIRST_MAX;
        if (bm_btl_sm_frags_grow(sm, c, first) != BM_OK) {
            bm_log_error("cannot back the first shared-memory fragments of %s: /dev/shm is full "
                         "(df /dev/shm); leave sm out with BM_BTL=^sm",
                         sm->name);
            return BM_ERR_SYSTEM;
        }
    }
    return BM_OK;
}

static void sm_module_free(struct bm_btl_sm_module *sm)
{
    bm_btl_sm_bell_close(sm);
    for (int c = 0; c < BM_BTL_SM_NCLASS; c++)
        free(sm->free_stack[c]);
    free(sm->free_next);
    free(sm->frags);
    free(sm->bases);
    free(sm->eps);
    free(sm->by_local);
    free(sm->all_eps);
    free(sm);
}

/* Fast-box ring sizes: the node-wide budget shrinks each ring on wide
 * nodes; the ring code needs whole units and every message within half the
 * ring (so that a skip to unit 0 never needs the whole ring). A default
 * largest message is fitted to the ring quietly; one the user set, with a
 * warning. */
static void sm_fbox_params_check(struct bm_btl_sm_config *c, int local_size)
{
    const size_t unit = BM_BTL_SM_CACHELINE; /* whole lines: every ring's head line aligned */
    if (c->fbox_bytes == 0)
        return;
    size_t share = c->fbox_total / (size_t)local_size;
    if (share < BM_BTL_SM_FBOX_BYTES_MIN)
        share = BM_BTL_SM_FBOX_BYTES_MIN;
    if (c->fbox_bytes > share)
        c->fbox_bytes = share;
    c->fbox_bytes = (c->fbox_bytes + unit - 1) / unit * unit;
    if (c->fbox_bytes / 2 <= BM_BTL_SM_FBOX_OFF_MAX) {
        bm_log_warn("BM_BTL_SM_FBOX_BYTES (%zu) leaves no room for a message; fast boxes are off",
                    c->fbox_bytes);
        c->fbox_bytes = 0;
        return;
    }
    size_t most = c->fbox_bytes / 2 - BM_BTL_SM_FBOX_OFF_MAX;
    if (c->fbox_max > most) {
        if (getenv("BM_BTL_SM_FBOX_MAX"))
            bm_log_warn("BM_BTL_SM_FBOX_MAX (%zu) is more than half of the %zu-byte fast-box "
                        "ring minus %u; using %zu",
                        c->fbox_max, c->fbox_bytes, BM_BTL_SM_FBOX_OFF_MAX, most);
        c->fbox_max = most;
    }
    /* What the module refuses (over BM_BTL_SM_MAX_SEND_SIZE) never takes a
     * ring either: sendi's ring test is then the only length test. */
    if (c->fbox_max > c->max_send_size)
        c->fbox_max = c->max_send_size;
}

/* Create the module: this process's segment, its fragments, and its
 * address card in the modex. */
static bm_status_t sm_module_create(struct bm_btl_sm_component *c,
                                    struct bm_btl_sm_module **module_out)
{
    const struct bm_btl_rte *rte = c->super.rte;
    const struct bm_rte_proc *self = bm_btl_rte_self(rte);
    struct sm_params p;
    bm_status_t rc = bm_util_params_load(&sm_table, &p);
    if (rc != BM_OK)
        return rc;
    if (p.c.eager_limit > p.c.max_send_size) {
        bm_log_warn("BM_BTL_SM_EAGER_LIMIT (%zu) is larger than BM_BTL_SM_MAX_SEND_SIZE (%zu); "
                    "using %zu for both",
                    p.c.eager_limit, p.c.max_send_size, p.c.max_send_size);
        p.c.eager_limit = p.c.max_send_size;
    }
    sm_fbox_params_check(&p.c, self->local_size);
    struct bm_btl_sm_module *sm = calloc(1, sizeof(*sm));
    if (!sm)
        return BM_ERR_NO_MEMORY;
    sm->config = p.c;
    sm->self = self;
    sm->bell_rx = sm->bell_tx = -1;
    sm->local_rank = self->local_rank;
    sm->local_size = self->local_size;
    sm->by_local = calloc(2 * (size_t)self->local_size, sizeof(*sm->by_local));
    if (!sm->by_local) {
        free(sm);
        return BM_ERR_NO_MEMORY;
    }
    sm->rings = sm->by_local + self->local_size;
    sm->rank = self->rank;
    sm->nprocs = self->size;
    sm->bases = calloc((size_t)self->size, sizeof(*sm->bases));
    sm->eps = calloc((size_t)self->size, sizeof(*sm->eps));
    sm->all_eps = calloc((size_t)self->size, sizeof(*sm->all_eps));
    if (!sm->bases || !sm->eps || !sm->all_eps) {
        rc = BM_ERR_NO_MEMORY;
        goto err_free;
    }
    rc = bm_btl_sm_segment_create(sm);
    if (rc != BM_OK)
        goto err_free;
    sm->bases[sm->rank] = sm->seg;
    rc = sm_frags_init(sm);
    if (rc != BM_OK)
        goto err_segment;
    if (c->sleepers)
        (void)bm_btl_sm_bell_open(sm); /* without it a sleeper naps (it says so) */

    struct bm_btl_sm_card card = {
        .magic = BM_BTL_SM_MAGIC,
        .version = BM_BTL_SM_VERSION,
        .pid = (int32_t)getpid(),
        .size = sm->seg_size,
        .seg_addr = (uint64_t)(uintptr_t)sm->seg,
        .local_rank = sm->local_rank,
        .fd = sm->seg_fd,
    };
    snprintf(card.name, sizeof(card.name), "%s", sm->name);
    rc = bm_btl_rte_modex_put(rte, SM_MODEX_KEY, &card, sizeof(card));
    if (rc != BM_OK) {
        bm_log_error("cannot publish the sm address card in the modex: %s", bm_status_str(rc));
        goto err_segment;
    }

    struct bm_btl_module *m = &sm->super;
    m->ops = &bm_btl_sm_ops;
    m->component = &c->super;
    snprintf(m->name, sizeof(m->name), "sm");
    /* PUT and GET are added by add_procs once single copy is known to work. */
    m->caps = BM_BTL_CAP_SEND | BM_BTL_CAP_SENDI | BM_BTL_CAP_ORDERED | BM_BTL_CAP_ATOMIC_OPS |
              BM_BTL_CAP_ATOMIC_FOPS | BM_BTL_CAP_SEND_FAR | BM_BTL_CAP_RECV_TAKE;
    m->atomic_flags = BM_BTL_ATOMIC_F_32BIT | BM_BTL_ATOMIC_F_GLOBAL | BM_BTL_ATOMIC_F_FLOAT;
    m->exclusivity = BM_BTL_EXCL_SM;
    m->latency = 1;
    m->bandwidth = 40000;
    m->eager_limit = p.c.eager_limit;
    m->rndv_eager_limit = p.c.eager_limit;
    m->max_send_size = p.c.max_send_size;
    m->rdma_pipeline_send_length = 0;
    m->rdma_pipeline_frag_size = SIZE_MAX;
    m->min_rdma_pipeline_size = p.single_copy_min;
    m->put_limit = SIZE_MAX;
    m->put_alignment = 1;
    m->get_limit = SIZE_MAX;
    m->get_alignment = 1;
    m->reg_handle_size = 0;
    *module_out = sm;
    return BM_OK;

err_segment:
    bm_btl_sm_segment_destroy(sm);
err_free:
    sm_module_free(sm);
    return rc;
}

static bm_status_t sm_init(const struct bm_btl_init_args *args,
                           struct bm_btl_component **component_out)
{
    struct bm_btl_sm_component *c = calloc(1, sizeof(*c));
    if (!c)
        return BM_ERR_NO_MEMORY;
    c->super.ops = &bm_btl_sm_ops;
    c->super.rte = args->rte;
    c->super.modules = c->modules;
    c->sleepers = args->sleepers;
    /* Nobody to share memory with: no segment, no module, no progress cost. */
    if (bm_btl_rte_self(args->rte)->local_size > 1) {
        bm_status_t rc = sm_module_create(c, &c->module);
        if (rc != BM_OK) {
            free(c);
            return rc;
        }
        static struct bm_util_lock_class sm_module_class = {.name = "sm module"};
        c->module->mt = args->thread_level >= BM_BTL_THREAD_MULTIPLE;
        bm_util_lock_init(&c->module->lock, &sm_module_class, true);
        if (c->module->mt && (rc = bm_btl_sm_pool_mt(c->module)) != BM_OK) {
            bm_btl_sm_segment_destroy(c->module);
            sm_module_free(c->module);
            free(c);
            return rc;
        }
        c->modules[0] = &c->module->super;
        c->super.count = 1;
    }
    *component_out = &c->super;
    return BM_OK;
}

static int sm_progress_pass(struct bm_btl_sm_module *sm);

/* Under MPI_THREAD_MULTIPLE (README "Threads"): the receive side is this
 * process's own and progress has one caller at a time (btl.h "Threads"),
 * so a pass reads the rings and the FIFO under no lock and calls back under
 * none: a callback that sends again takes the module's lock like any
 * sender, and a sender never waits for a callback to return. The module's
 * lock is taken only around what senders share: the queue of finished
 * get/put callbacks (moved out, then run), a returned fragment's
 * bookkeeping (bm_btl_sm_poll_fifo_mt), mapping a segment
 * (bm_btl_sm_base_slow) and the idle peer check. Rings and segments that
 * senders connect meanwhile are published with release stores (nrings,
 * by_local, bases: sm_fbox_connect, sm_ep_map). */
static __attribute__((noinline)) int sm_progress_mt(struct bm_btl_sm_module *sm)
{
    int n = 0;
    if (__atomic_load_n(&sm->rdma_queued, __ATOMIC_RELAXED)) {
        bm_util_lock_take(&sm->lock);
        struct bm_btl_defer_queue q = sm->rdma_done;
        sm->rdma_done = (struct bm_btl_defer_queue){0};
        __atomic_store_n(&sm->rdma_queued, false, __ATOMIC_RELAXED);
        bm_util_lock_give(&sm->lock);
        n += bm_btl_defer_run(&q, &sm->super, BM_OK);
    }
    int budget = sm->config.poll_budget;
    if (!sm->use_hints) {
        int nrings = __atomic_load_n(&sm->nrings, __ATOMIC_ACQUIRE);
        for (int i = 0; i < nrings && n < budget; i++)
            if (bm_btl_sm_fbox_ready(&sm->rings[i]->rx))
                n += bm_btl_sm_fbox_deliver(sm, sm->rings[i], budget - n);
    } else {
        for (int w = 0; w < sm->nhint_words; w++)
            if (atomic_load_explicit(&sm->hints[w], memory_order_relaxed)) {
                n += bm_btl_sm_fbox_poll(sm, budget);
                break;
            }
    }
    if (bm_btl_sm_fifo_ready(&sm->ctl->fifo, &sm->reader))
        n += bm_btl_sm_poll_fifo_mt(sm, budget);
    /* The peer check as in sm_progress_pass; what it reads is the senders'
     * too, so it runs under the lock (a dead peer's completions are the one
     * callback still made under it). */
    if (n == 0 &&
        (__atomic_load_n(&sm->in_flight, __ATOMIC_RELAXED) > 0 ||
         __atomic_load_n(&sm->nquarantined, __ATOMIC_RELAXED) > 0) &&
        ++sm->idle_polls >= 256) {
        sm->idle_polls = 0;
        bm_util_lock_take(&sm->lock);
        n += bm_btl_sm_peer_check(sm);
        bm_util_lock_give(&sm->lock);
    }
    return n;
}

/* The base polls only components with modules (count > 0): sm is set. */
static int sm_progress(struct bm_btl_component *comp)
{
    struct bm_btl_sm_module *sm = ((struct bm_btl_sm_component *)comp)->module;
    if (__builtin_expect(sm->mt, 0))
        return sm_progress_mt(sm);
    return sm_progress_pass(sm);
}

static inline int sm_progress_pass(struct bm_btl_sm_module *sm)
{
    int n = 0;
    if (sm->rdma_done.head)
        n += bm_btl_defer_run(&sm->rdma_done, &sm->super, BM_OK);
    if (!sm->use_hints) {
        /* One load per connected ring, inline; a ready one is delivered
         * from here (one call on the way to the receive callback). */
        int budget = sm->config.poll_budget;
        for (int i = 0; i < sm->nrings && n < budget; i++)
            if (bm_btl_sm_fbox_ready(&sm->rings[i]->rx))
                n += bm_btl_sm_fbox_deliver(sm, sm->rings[i], budget - n);
    } else {
        for (int w = 0; w < sm->nhint_words; w++)
            if (atomic_load_explicit(&sm->hints[w], memory_order_relaxed)) {
                n += bm_btl_sm_fbox_poll(sm, sm->config.poll_budget);
                break;
            }
    }
    if (bm_btl_sm_fifo_ready(&sm->ctl->fifo, &sm->reader))
        n += bm_btl_sm_poll_fifo(sm, sm->config.poll_budget);
    /* Waiting for fragments to come back: every so often make sure the
     * peers holding them are still alive. Counting idle calls first keeps
     * even the clock read off the common path. */
    if (n == 0 && (sm->in_flight > 0 || sm->nquarantined > 0) && ++sm->idle_polls >= 256) {
        sm->idle_polls = 0;
        n += bm_btl_sm_peer_check(sm);
    }
    return n;
}

static int sm_wait_fd(struct bm_btl_component *comp)
{
    return bm_btl_sm_wait_fd(((struct bm_btl_sm_component *)comp)->module);
}

/* Arming and disarming look at the receive side only (and our own
 * doorbell), as progress does, and are called by the thread that may call
 * progress (btl.h "Threads"): no module lock, as in sm_progress_mt; what
 * senders write is read with atomics there (sm_has_work). */
static int sm_wait_arm(struct bm_btl_component *comp, int64_t *timeout_ns)
{
    return bm_btl_sm_wait_arm(((struct bm_btl_sm_component *)comp)->module, timeout_ns);
}

static void sm_wait_disarm(struct bm_btl_component *comp)
{
    bm_btl_sm_wait_disarm(((struct bm_btl_sm_component *)comp)->module);
}

static void sm_module_finalize(struct bm_btl_sm_module *sm)
{
    bm_btl_sm_fifo_drain(sm);
    bm_btl_defer_run(&sm->rdma_done, &sm->super, BM_ERR_CANCELED);
    /* Whatever the receivers did not give back is reported as cancelled; the
     * segment goes away with it, so nothing is returned to the pool. */
    for (uint32_t i = 0; i < sm->nfrags; i++) {
        struct bm_btl_sm_frag *f = &sm->frags[i];
        if (f->in_flight && f->amo) {
            f->in_flight = false;
            bm_btl_sm_amo_finish(sm, f, f->dest, BM_ERR_CANCELED);
            continue;
        }
        if (!f->in_flight || f->internal)
            continue;
        f->in_flight = false;
        if (f->des.cbfunc)
            f->des.cbfunc(&sm->super, (struct bm_btl_endpoint *)f->dest, &f->des, BM_ERR_CANCELED);
    }
    if (sm->in_flight)
        bm_log_debug("finalize with %d fragments still at receivers", sm->in_flight);
    for (int r = 0; r < sm->nprocs; r++) {
        if (!sm->all_eps[r])
            continue;
        bm_btl_sm_segment_detach(sm->all_eps[r]);
        free(sm->all_eps[r]);
    }
    bm_btl_sm_segment_destroy(sm);
    sm_module_free(sm);
}

static void sm_finalize(struct bm_btl_component *comp)
{
    struct bm_btl_sm_component *c = (struct bm_btl_sm_component *)comp;
    if (c->module)
        sm_module_finalize(c->module);
    free(c);
}

/* ---- peers ------------------------------------------------------------------ */

/* Map ep's segment, then connect the fast boxes and learn its doorbell. */
static bm_status_t sm_ep_map(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep,
                             const struct bm_btl_sm_card *card)
{
    bm_status_t rc = bm_btl_sm_segment_attach(sm, ep->rank, card, ep);
    if (rc != BM_OK)
        return rc;
    /* What sendi's fast-box path reads under the endpoint's lock alone. */
    if (sm->mt)
        bm_util_lock_take(&ep->lock);
    bm_btl_sm_fbox_connect(sm, ep);
    bm_btl_sm_bell_peer(sm, ep);
    if (sm->mt)
        bm_util_lock_give(&ep->lock);
    /* Last: under MPI_THREAD_MULTIPLE progress resolves fragments without
     * the module's lock, and what it reads of ep (ctl, rings, doorbell)
     * must be complete once it sees the base (bm_btl_sm_resolve). */
    __atomic_store_n(&sm->bases[ep->rank], ep->seg, __ATOMIC_RELEASE);
    sm->nattached++;
    bm_log_trace("mapped rank %d's segment (%d mapped)", ep->rank, sm->nattached);
    return BM_OK;
}

static struct bm_util_lock_class sm_ep_class = {.name = "sm endpoint"};

static bm_status_t sm_add_procs(struct bm_btl_module *m, int nprocs, const int *ranks,
                                struct bm_btl_endpoint **endpoints_out,
                                struct bm_util_bitmap *reachable)
{
    struct bm_btl_sm_module *sm = (struct bm_btl_sm_module *)m;
    const struct bm_btl_rte *rte = m->component->rte;
    int my_node = bm_btl_rte_node_of(rte, sm->rank);
    bool cma = sm->config.single_copy, probed = false;
    int reached = 0;
    for (int i = 0; i < nprocs; i++) {
        int r = ranks[i];
        if (r == sm->rank || r < 0 || r >= sm->nprocs || bm_btl_rte_node_of(rte, r) != my_node)
            continue;
        if (sm->all_eps[r]) { /* added before */
            sm->eps[r] = sm->all_eps[r];
            endpoints_out[i] = (struct bm_btl_endpoint *)sm->all_eps[r];
            bm_util_bitmap_set(reachable, (size_t)i);
            reached++;
            continue;
        }
        const void *data = NULL;
        size_t len = 0;
        if (bm_btl_rte_modex_get(rte, r, SM_MODEX_KEY, &data, &len) != BM_OK) {
            bm_log_debug("rank %d published no sm address (sm not selected there)", r);
            continue;
        }
        struct bm_btl_sm_card card;
        if (len != sizeof(card)) {
            bm_log_warn("rank %d published an sm address of %zu bytes, expected %zu (a "
                        "different bitmover version?); not using sm to reach it",
                        r, len, sizeof(card));
            continue;
        }
        memcpy(&card, data, sizeof(card));
        if (card.magic != BM_BTL_SM_MAGIC || card.version != BM_BTL_SM_VERSION) {
            bm_log_warn("rank %d runs sm protocol version %u, this process %u; not using sm to "
                        "reach it",
                        r, card.version, BM_BTL_SM_VERSION);
            continue;
        }
        /* Aligned for rx's cache line (sm.h). */
        struct bm_btl_sm_endpoint *ep = aligned_alloc(64, sizeof(*ep));
        if (ep)
            memset(ep, 0, sizeof(*ep));
        if (!ep)
            return BM_ERR_NO_MEMORY;
        ep->module = sm;
        bm_util_lock_init(&ep->lock, &sm_ep_class, false);
        ep->rank = r;
        ep->pid = (pid_t)card.pid;
        /* It is alive (it published its card): a pid not found now is in
         * another PID namespace (segments mapped by name), and whether
         * that pid exists later says nothing about it (bm_btl_sm_check). */
        ep->pid_unseen = kill(ep->pid, 0) != 0 && errno == ESRCH;
        ep->local_rank = card.local_rank;
        ep->card = data;
        /* Single copy is allowed or refused by the kernel for the whole
         * job alike (same user, same ptrace rules): one probe decides. */
        if (cma && !probed) {
            cma = bm_btl_sm_cma_probe(ep, card.seg_addr);
            probed = true;
        }
        /* Rings at start-up (BM_BTL_SM_FBOX_AFTER=0): every peer's segment
         * is mapped now too; otherwise on first use. */
        if (sm->config.fbox_after == 0 && sm_ep_map(sm, ep, &card) != BM_OK) {
            free(ep);
            continue;
        }
        sm->all_eps[r] = ep;
        sm->eps[r] = ep;
        endpoints_out[i] = (struct bm_btl_endpoint *)ep;
        bm_util_bitmap_set(reachable, (size_t)i);
        reached++;
    }
    sm->cma_ok = cma && reached > 0;
    if (sm->cma_ok)
        m->caps |= BM_BTL_CAP_GET | BM_BTL_CAP_GETV | BM_BTL_CAP_PUT;
    else
        m->caps &= ~(BM_BTL_CAP_GET | BM_BTL_CAP_GETV | BM_BTL_CAP_PUT);
    bm_log_debug("reaches %d local peers (%d segments mapped); single copy %s", reached,
                 sm->nattached, sm->cma_ok ? "on" : "off");
    return BM_OK;
}

bm_status_t bm_btl_sm_ep_attach_slow(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep)
{
    if (ep->attach_status != BM_OK)
        return ep->attach_status;
    struct bm_btl_sm_card card;
    memcpy(&card, ep->card, sizeof(card));
    bm_status_t rc = sm_ep_map(sm, ep, &card); /* it said why */
    if (rc == BM_OK)
        return BM_OK;
    /* A peer that ended before its first use took its segment with it
     * (peers reach it through its /proc/<pid>/fd): that is the peer's
     * death, reported as such, not a broken path. */
    if (rc != BM_ERR_PEER_GONE)
        rc = BM_ERR_LINK_DOWN;
    ep->attach_status = rc;
    if (sm->super.error_cb)
        bm_btl_sm_peer_failed(sm, ep, rc,
                              rc == BM_ERR_PEER_GONE
                                  ? "its process is gone (ended before this process first used it)"
                                  : "its shared-memory segment cannot be mapped");
    else
        __atomic_store_n(&ep->failed, true, __ATOMIC_SEQ_CST); /* read by senders under no lock */
    return rc;
}

unsigned char *bm_btl_sm_base_slow(struct bm_btl_sm_module *sm, int rank)
{
    struct bm_btl_sm_endpoint *ep =
        rank >= 0 && rank < sm->nprocs && rank != sm->rank ? sm->all_eps[rank] : NULL;
    /* Progress resolves without the module's lock under
     * MPI_THREAD_MULTIPLE: mapping is the senders' business, so take it. */
    bm_btl_sm_enter(sm);
    bm_status_t rc = ep ? bm_btl_sm_ep_attach(sm, ep) : BM_ERR_UNREACHABLE;
    bm_btl_sm_leave(sm);
    if (rc == BM_OK)
        return sm->bases[rank];
    bm_log_error("rank %d on %s found a fragment of rank %d in a shared-memory queue but cannot "
                 "map that rank's segment (%s); the queue cannot be followed past it, so this "
                 "process stops. Did rank %d end without MPI_Finalize, or was /dev/shm cleaned "
                 "while the job ran?",
                 sm->rank, sm->self->hostname, rank,
                 ep ? "see the error above" : "it is not a local peer of this process", rank);
    abort();
}

static bm_status_t sm_del_procs(struct bm_btl_module *m, int nprocs, const int *ranks,
                                struct bm_btl_endpoint **endpoints)
{
    struct bm_btl_sm_module *sm = (struct bm_btl_sm_module *)m;
    (void)endpoints;
    for (int i = 0; i < nprocs; i++)
        if (ranks[i] >= 0 && ranks[i] < sm->nprocs)
            sm->eps[ranks[i]] = NULL;
    return BM_OK;
}

/* ---- MPI_THREAD_MULTIPLE: the operations under the module's lock ------------- */

/* Every operation but sendi (which locks per endpoint, sm_fbox.c), the
 * single-copy get and put (which lock only around what they share,
 * sm_rdma.c) and the descriptor sends (alloc, free, prepare_src, send:
 * the fragment pool is lock-free and a push takes no lock, sm_send.c)
 * runs under the module's recursive lock when sm->mt, as the base's
 * component lock did before sm advertised BM_BTL_CAP_THREADS. */
#define SM_OF(m) ((struct bm_btl_sm_module *)(m))

static bm_status_t sm_op_add_procs(struct bm_btl_module *m, int nprocs, const int *ranks,
                                   struct bm_btl_endpoint **endpoints_out,
                                   struct bm_util_bitmap *reachable)
{
    bm_btl_sm_enter(SM_OF(m));
    bm_status_t rc = sm_add_procs(m, nprocs, ranks, endpoints_out, reachable);
    bm_btl_sm_leave(SM_OF(m));
    return rc;
}

static bm_status_t sm_op_del_procs(struct bm_btl_module *m, int nprocs, const int *ranks,
                                   struct bm_btl_endpoint **endpoints)
{
    bm_btl_sm_enter(SM_OF(m));
    bm_status_t rc = sm_del_procs(m, nprocs, ranks, endpoints);
    bm_btl_sm_leave(SM_OF(m));
    return rc;
}

static int sm_op_atomic_op(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                           uint64_t remote_addr, const struct bm_btl_reg_handle *remote_handle,
                           enum bm_btl_atomic_op op, uint64_t operand, uint32_t flags,
                           uint8_t order, bm_btl_rdma_cb_fn cb, void *context, void *cbdata)
{
    bm_btl_sm_enter(SM_OF(m));
    int rc = bm_btl_sm_atomic_op(m, ep, remote_addr, remote_handle, op, operand, flags, order, cb,
                                 context, cbdata);
    bm_btl_sm_leave(SM_OF(m));
    return rc;
}

static int sm_op_atomic_fop(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                            uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                            const struct bm_btl_reg_handle *remote_handle, enum bm_btl_atomic_op op,
                            uint64_t operand, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                            void *context, void *cbdata)
{
    bm_btl_sm_enter(SM_OF(m));
    int rc = bm_btl_sm_atomic_fop(m, ep, local_addr, remote_addr, local_handle, remote_handle, op,
                                  operand, flags, order, cb, context, cbdata);
    bm_btl_sm_leave(SM_OF(m));
    return rc;
}

static int sm_op_atomic_cswap(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                              uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                              const struct bm_btl_reg_handle *remote_handle, uint64_t compare,
                              uint64_t value, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                              void *context, void *cbdata)
{
    bm_btl_sm_enter(SM_OF(m));
    int rc = bm_btl_sm_atomic_cswap(m, ep, local_addr, remote_addr, local_handle, remote_handle,
                                    compare, value, flags, order, cb, context, cbdata);
    bm_btl_sm_leave(SM_OF(m));
    return rc;
}

static bm_status_t sm_op_flush(struct bm_btl_module *m, struct bm_btl_endpoint *ep)
{
    bm_btl_sm_enter(SM_OF(m));
    bm_status_t rc = bm_btl_sm_flush(m, ep);
    bm_btl_sm_leave(SM_OF(m));
    return rc;
}

static bm_status_t sm_op_check(struct bm_btl_module *m, struct bm_btl_endpoint *ep)
{
    bm_btl_sm_enter(SM_OF(m));
    bm_status_t rc = bm_btl_sm_check(SM_OF(m), (struct bm_btl_sm_endpoint *)ep);
    bm_btl_sm_leave(SM_OF(m));
    return rc;
}

const struct bm_btl_ops bm_btl_sm_ops = {
    .name = "sm",
    .description = "shared memory between processes of one node (copy-in/copy-out fragments, "
                   "single-copy get/put with process_vm_readv, atomics run by the target)",
    .params = &sm_table,
    .caps = BM_BTL_CAP_SEND | BM_BTL_CAP_SENDI | BM_BTL_CAP_ORDERED | BM_BTL_CAP_ATOMIC_OPS |
            BM_BTL_CAP_ATOMIC_FOPS | BM_BTL_CAP_GET | BM_BTL_CAP_GETV | BM_BTL_CAP_PUT |
            BM_BTL_CAP_WAIT | BM_BTL_CAP_SEND_FAR | BM_BTL_CAP_THREADS | BM_BTL_CAP_RECV_TAKE,
    .query = sm_query,
    .init = sm_init,
    .progress = sm_progress,
    .finalize = sm_finalize,
    .wait_fd = sm_wait_fd,
    .wait_arm = sm_wait_arm,
    .wait_disarm = sm_wait_disarm,
    .add_procs = sm_op_add_procs,
    .del_procs = sm_op_del_procs,
    .alloc = bm_btl_sm_alloc,
    .free = bm_btl_sm_free,
    .prepare_src = bm_btl_sm_prepare_src,
    .send = bm_btl_sm_send,
    .sendi = bm_btl_sm_sendi,
    .recv_take = bm_btl_sm_recv_take,
    .put = bm_btl_sm_put,
    .get = bm_btl_sm_get,
    .getv = bm_btl_sm_getv,
    .atomic_op = sm_op_atomic_op,
    .atomic_fop = sm_op_atomic_fop,
    .atomic_cswap = sm_op_atomic_cswap,
    .register_mem = bm_btl_defer_register_mem,
    .deregister_mem = bm_btl_defer_deregister_mem,
    .flush = sm_op_flush,
    .check = sm_op_check,
};
