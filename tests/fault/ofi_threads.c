/* The ofi transport under MPI_THREAD_MULTIPLE: 2 ranks (bmrun), the
 * transport opened for multi-threaded use, OFI_THREADS threads per rank
 * that at the same time put, get, fetch-and-add and send to the peer (by
 * descriptor and by sendi) and drive progress themselves (each thread runs
 * the transport's progress: the liveness watcher, the acknowledgements and
 * the completion queues meet on several threads at once). Usage:
 * ofi_threads [ROUNDS] (default 60, at most ROUNDS_MAX); the CTest variant
 * with small provider queues and a short BM_BTL_OFI_TIMEOUT runs more
 * rounds, so that "try again" answers and PING/PONG probes of a busy path
 * happen while the threads work. With BM_BTL_OFI_CONTEXTS=n and a provider with
 * scalable endpoints each thread has its own context (the test checks that
 * the module opened n contexts and that the threads spread over them);
 * without, the threads share one endpoint under its lock. Every byte is
 * verified: each thread writes its own slot of the peer's window, reads it
 * back, and the peer checks the slots, the counters (one per thread plus a
 * shared one all threads add to) and that every message of every thread
 * arrived exactly once. */
#define BM_LOG_SUBSYS "test/ofi"
#include "bm_test.h"
#include "btl/btl.h"
#include "btl/ofi/ofi.h"
#include "runtime/rte.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OFI_THREADS 4
#define ROUNDS_MAX  2000
#define SLOT        (64 * 1024)
#define TAG_MSG     BM_BTL_TAG_TEST
#define TAG_PAUSE   (BM_BTL_TAG_TEST + 1)
#define DEADLINE_S  60

struct card {
    uint64_t win;
    uint32_t handle_len;
    uint64_t handle[4];
};

static int me, peer;
static struct bm_btl_module *mod;
static struct bm_btl_endpoint *ep;
static unsigned char *win; /* [OFI_THREADS slots][counters] */
static struct bm_btl_reg_handle *win_handle;
static const struct card *peer_card;
static int rounds = 60;
/* PAUSE_MS > 0: halfway, rank 1 stops (no progress, no operation) for that
 * long after telling rank 0, whose threads then send to it: its path must
 * survive (rank 0 probes it with a PING, answered after the pause). */
static int pause_ms;
static pthread_barrier_t pause_barrier;
static atomic_int peer_paused; /* rank 0: the pause message came, not yet answered */
static atomic_int pause_msgs;  /* TAG_PAUSE messages received */
/* [0]: descriptor sends, [1]: sendi */
static atomic_int got[2][OFI_THREADS][ROUNDS_MAX];
static atomic_int bad_msgs, failures;
static atomic_int ctx_used[64];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static unsigned char pat(int src, int t, int round, size_t j)
{
    return (unsigned char)(src * 31 + t * 7 + round * 13 + j * 101 + (j >> 9));
}

static uint64_t *counters(unsigned char *w)
{
    return (uint64_t *)(void *)(w + (size_t)OFI_THREADS * SLOT);
}

static void on_msg(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata)
{
    (void)m;
    (void)cbdata;
    if (d->seg_count != 1 || d->seg[0].len < 8) {
        atomic_fetch_add(&bad_msgs, 1);
        return;
    }
    const unsigned char *p = d->seg[0].addr;
    uint32_t t, round;
    memcpy(&t, p, 4);
    memcpy(&round, p + 4, 4);
    uint32_t kind = round >> 31;
    round &= ~(1u << 31);
    if (t >= OFI_THREADS || round >= (uint32_t)rounds) {
        atomic_fetch_add(&bad_msgs, 1);
        return;
    }
    for (size_t j = 8; j < d->seg[0].len; j++)
        if (p[j] != pat(d->peer, (int)t, (int)round, j)) {
            atomic_fetch_add(&bad_msgs, 1);
            return;
        }
    atomic_fetch_add(&got[kind][t][round], 1);
}

static void on_pause(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata)
{
    (void)m;
    (void)d;
    (void)cbdata;
    atomic_fetch_add(&pause_msgs, 1);
    if (me == 0)
        atomic_store(&peer_paused, 1);
}

struct op {
    atomic_int done;
    int status;
};

static void on_sent(struct bm_btl_module *m, struct bm_btl_endpoint *e,
                    struct bm_btl_descriptor *des, int status);
static void pause_answer(void);

/* Drive the transport; give the core away when nothing happened (ranks
 * and threads outnumber the cores on a test machine). */
static void progress(void)
{
    if (mod->ops->progress(mod->component) == 0)
        sched_yield();
    if (atomic_load_explicit(&peer_paused, memory_order_relaxed) &&
        atomic_exchange(&peer_paused, 0))
        pause_answer();
}

/* Rank 0, the peer just paused: a descriptor message to it (tracked: it
 * waits for the peer's acknowledgement), so that this rank waits to hear
 * from the peer for the whole pause. */
static void pause_answer(void)
{
    struct bm_btl_descriptor *d = NULL;
    double t0 = now_s();
    while (!(d = mod->ops->alloc(mod, ep, 0, 8, BM_BTL_DES_F_BTL_OWNED)) &&
           now_s() - t0 < DEADLINE_S)
        (void)mod->ops->progress(mod->component);
    if (!d) {
        atomic_fetch_add(&failures, 1);
        return;
    }
    memset(d->seg[0].addr, 0, 8);
    d->seg[0].len = 8;
    d->cbfunc = on_sent;
    int rc = mod->ops->send(mod, ep, d, TAG_PAUSE);
    if (rc != BM_OK && rc != BM_BTL_DONE)
        atomic_fetch_add(&failures, 1);
}

/* Rank 1, halfway: every thread stops here; thread 0 tells rank 0 and
 * sleeps pause_ms before all go on (nothing drives the transport
 * meanwhile). */
static void pause_here(int t)
{
    pthread_barrier_wait(&pause_barrier);
    if (t == 0) {
        unsigned char b[8] = {0};
        int rc;
        double t0 = now_s();
        while ((rc = mod->ops->sendi(mod, ep, b, 8, NULL, 0, 0, 0, TAG_PAUSE, NULL)) ==
                   BM_ERR_OUT_OF_RESOURCE &&
               now_s() - t0 < DEADLINE_S)
            (void)mod->ops->progress(mod->component);
        if (rc != BM_BTL_DONE)
            atomic_fetch_add(&failures, 1);
        struct timespec ts = {pause_ms / 1000, (long)(pause_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    pthread_barrier_wait(&pause_barrier);
}

static void on_rdma(struct bm_btl_module *m, struct bm_btl_endpoint *e, void *local_addr,
                    struct bm_btl_reg_handle *lh, void *context, void *cbdata, int status)
{
    (void)m;
    (void)e;
    (void)local_addr;
    (void)lh;
    (void)cbdata;
    struct op *o = context;
    o->status = status;
    atomic_store(&o->done, 1);
}

static void on_sent(struct bm_btl_module *m, struct bm_btl_endpoint *e,
                    struct bm_btl_descriptor *des, int status)
{
    (void)m;
    (void)e;
    (void)des;
    if (status != BM_OK)
        atomic_fetch_add(&failures, 1);
}

/* Start fn until it is taken, then wait for its completion; each thread
 * drives progress itself (the transport locks its contexts). */
#define RUN_OP(call)                                                                               \
    do {                                                                                           \
        struct op o_ = {0, 0};                                                                     \
        struct op *o = &o_;                                                                        \
        int rc_;                                                                                   \
        double t0_ = now_s();                                                                      \
        while ((rc_ = (call)) == BM_ERR_OUT_OF_RESOURCE && now_s() - t0_ < DEADLINE_S)             \
            progress();                                                                            \
        if (rc_ == BM_BTL_DONE)                                                                    \
            break;                                                                                 \
        if (rc_ != BM_OK) {                                                                        \
            atomic_fetch_add(&failures, 1);                                                        \
            break;                                                                                 \
        }                                                                                          \
        while (!atomic_load(&o->done) && now_s() - t0_ < DEADLINE_S)                               \
            progress();                                                                            \
        if (!atomic_load(&o->done) || o->status != BM_OK)                                          \
            atomic_fetch_add(&failures, 1);                                                        \
    } while (0)

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    const struct bm_btl_reg_handle *rh = (const void *)peer_card->handle;
    uint64_t slot = peer_card->win + (uint64_t)t * SLOT;
    uint64_t ctr = peer_card->win + (uint64_t)OFI_THREADS * SLOT;
    unsigned char *buf = malloc(SLOT);
    unsigned char *back = malloc(SLOT);
    uint64_t *res = malloc(8);
    if (!buf || !back || !res)
        abort();
    struct bm_btl_ofi_module *om = (struct bm_btl_ofi_module *)mod;
    struct bm_btl_ofi_context *mine = bm_btl_ofi_context_pick(om, NULL);
    atomic_fetch_add(&ctx_used[mine->index], 1);
    for (int round = 0; round < rounds; round++) {
        if (pause_ms > 0 && me == 1 && round == rounds / 2)
            pause_here(t);
        size_t len = 1 + (size_t)(round * 977 + t * 131) % SLOT;
        for (size_t j = 0; j < len; j++)
            buf[j] = pat(me, t, round, j);
        RUN_OP(mod->ops->put(mod, ep, buf, slot, NULL, rh, len, BM_BTL_DES_F_ALWAYS_CALLBACK, 0,
                             on_rdma, o, NULL));
        memset(back, 0, len);
        RUN_OP(mod->ops->get(mod, ep, back, slot, NULL, rh, len, BM_BTL_DES_F_ALWAYS_CALLBACK, 0,
                             on_rdma, o, NULL));
        if (memcmp(back, buf, len) != 0)
            atomic_fetch_add(&failures, 1);
        RUN_OP(mod->ops->atomic_fop(mod, ep, res, ctr + 8 * (uint64_t)t, NULL, rh,
                                    BM_BTL_ATOMIC_ADD, 1, BM_BTL_DES_F_ALWAYS_CALLBACK, 0, on_rdma,
                                    o, NULL));
        if (*res != (uint64_t)round)
            atomic_fetch_add(&failures, 1);
        RUN_OP(mod->ops->atomic_op(mod, ep, ctr + 8 * OFI_THREADS, rh, BM_BTL_ATOMIC_ADD, 1,
                                   BM_BTL_DES_F_ALWAYS_CALLBACK, 0, on_rdma, o, NULL));
        /* A message, small (sendi) or not (alloc + send). */
        size_t mlen = 8 + (round % 3 == 0 ? 4000 : (size_t)(round % 40));
        struct bm_btl_descriptor *d = NULL;
        double t0 = now_s();
        while (!(d = mod->ops->alloc(mod, ep, 0, mlen, BM_BTL_DES_F_BTL_OWNED)) &&
               now_s() - t0 < DEADLINE_S)
            progress();
        if (!d) {
            atomic_fetch_add(&failures, 1);
            continue;
        }
        unsigned char *p = d->seg[0].addr;
        uint32_t tt = (uint32_t)t, rr = (uint32_t)round;
        memcpy(p, &tt, 4);
        memcpy(p + 4, &rr, 4);
        for (size_t j = 8; j < mlen; j++)
            p[j] = pat(me, t, round, j);
        d->seg[0].len = mlen;
        d->cbfunc = on_sent;
        int rc;
        while ((rc = mod->ops->send(mod, ep, d, TAG_MSG)) == BM_ERR_OUT_OF_RESOURCE &&
               now_s() - t0 < DEADLINE_S)
            progress();
        if (rc != BM_OK && rc != BM_BTL_DONE)
            atomic_fetch_add(&failures, 1);
        /* A short one by sendi (inject where it fits), its own header. */
        unsigned char ih[8], ipl[40];
        size_t ilen = (size_t)(round % 40);
        rr |= 1u << 31;
        memcpy(ih, &tt, 4);
        memcpy(ih + 4, &rr, 4);
        for (size_t j = 0; j < ilen; j++)
            ipl[j] = pat(me, t, round, j + 8);
        t0 = now_s();
        while ((rc = mod->ops->sendi(mod, ep, ih, 8, ipl, ilen, 0, 0, TAG_MSG, NULL)) ==
                   BM_ERR_OUT_OF_RESOURCE &&
               now_s() - t0 < DEADLINE_S)
            progress();
        if (rc != BM_BTL_DONE)
            atomic_fetch_add(&failures, 1);
    }
    free(buf);
    free(back);
    free(res);
    return NULL;
}

static atomic_bool stop;

static void *progress_thread(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop))
        progress();
    return NULL;
}

/* A barrier that keeps the transport progressing (manual-progress
 * providers serve the peer's RMA only from our progress). */
static void progressing_barrier(void)
{
    pthread_t t;
    atomic_store(&stop, false);
    pthread_create(&t, NULL, progress_thread, NULL);
    BM_CHECK_EQ_INT(bm_rte_barrier(), BM_OK);
    atomic_store(&stop, true);
    pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        rounds = atoi(argv[1]);
    if (argc > 2)
        pause_ms = atoi(argv[2]);
    if (rounds < 1 || rounds > ROUNDS_MAX) {
        fprintf(stderr, "ofi_threads: ROUNDS must be 1 to %d\n", ROUNDS_MAX);
        return 2;
    }
    BM_CHECK_EQ_INT(bm_rte_init(), BM_OK);
    me = bm_rte_self()->rank;
    peer = 1 - me;
    if (bm_rte_self()->size != 2) {
        fprintf(stderr, "ofi_threads needs 2 ranks\n");
        return 2;
    }
    struct bm_btl_init_args args = {.thread_level = 3 /* MPI_THREAD_MULTIPLE */};
    BM_CHECK_EQ_INT(bm_btl_base_open(&args), BM_OK);
    bm_btl_base_register_recv(TAG_MSG, on_msg, NULL);
    bm_btl_base_register_recv(TAG_PAUSE, on_pause, NULL);
    pthread_barrier_init(&pause_barrier, NULL, OFI_THREADS);
    BM_CHECK_EQ_INT(bm_rte_modex_fence(), BM_OK);
    BM_CHECK_EQ_INT(bm_btl_base_add_procs(2), BM_OK);
    struct bm_btl_peer *p = bm_btl_base_peer(peer);
    for (int i = 0; p && i < p->send.count; i++)
        if (strcmp(p->send.paths[i].module->ops->name, "ofi") == 0) {
            mod = p->send.paths[i].module;
            ep = p->send.paths[i].endpoint;
        }
    BM_CHECK_MSG(mod != NULL, "no ofi path to rank %d", peer);
    if (!mod)
        return bm_test_summary("ofi_threads");
    struct bm_btl_ofi_module *om = (struct bm_btl_ofi_module *)mod;
    const char *want = getenv("BM_BTL_OFI_CONTEXTS");
    int nwant = want ? atoi(want) : 1;
    printf("ofi_threads: rank %d: %s, %d context(s)%s, %d threads\n", me, mod->name, om->nctx,
           om->sep ? " on a scalable endpoint" : "", OFI_THREADS);
    const char *nosep = getenv("BM_BTL_OFI_DISABLE_SEP");
    if (om->info->domain_attr->max_ep_tx_ctx >= (size_t)nwant && nwant > 1 &&
        !(nosep && atoi(nosep) > 0))
        BM_CHECK_MSG(om->nctx == nwant && om->sep, "asked for %d contexts, got %d", nwant,
                     om->nctx);
    BM_CHECK(om->mt);
    size_t wsize = (size_t)OFI_THREADS * SLOT + 8 * (OFI_THREADS + 1);
    win = aligned_alloc(4096, (wsize + 4095) & ~(size_t)4095);
    memset(win, 0, wsize);
    win_handle = mod->ops->register_mem(mod, NULL, win, wsize, 0xf);
    BM_CHECK(win_handle != NULL);
    struct card c = {.win = (uint64_t)(uintptr_t)win, .handle_len = (uint32_t)mod->reg_handle_size};
    memcpy(c.handle, win_handle, mod->reg_handle_size);
    BM_CHECK_EQ_INT(bm_rte_modex_put("test.ofi.threads", &c, sizeof(c)), BM_OK);
    BM_CHECK_EQ_INT(bm_rte_modex_fence(), BM_OK);
    const void *data;
    size_t len;
    BM_CHECK_EQ_INT(bm_rte_modex_get(peer, "test.ofi.threads", &data, &len), BM_OK);
    peer_card = data;

    double t0 = now_s();
    pthread_t th[OFI_THREADS];
    for (int t = 0; t < OFI_THREADS; t++)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < OFI_THREADS; t++)
        pthread_join(th[t], NULL);
    /* Every message of the peer's threads (given up only after DEADLINE_S
     * without a new one), then both are done. */
    int have = -1;
    double last = now_s();
    for (;;) {
        int n = 0;
        for (int k = 0; k < 2; k++)
            for (int t = 0; t < OFI_THREADS; t++)
                for (int r = 0; r < rounds; r++)
                    n += atomic_load(&got[k][t][r]) != 0;
        if (n != have) {
            have = n;
            last = now_s();
        }
        if (n == 2 * OFI_THREADS * rounds || now_s() - last > DEADLINE_S)
            break;
        progress();
    }
    BM_CHECK_EQ_INT(mod->ops->flush(mod, NULL), BM_OK);
    progressing_barrier();
    printf("ofi_threads: rank %d: %d threads x %d rounds in %.2f s\n", me, OFI_THREADS, rounds,
           now_s() - t0);
    int spread = 0;
    for (int i = 0; i < 64; i++)
        spread += atomic_load(&ctx_used[i]) > 0;
    BM_CHECK_MSG(spread == (om->nctx < OFI_THREADS ? om->nctx : OFI_THREADS),
                 "threads used %d of %d contexts", spread, om->nctx);
    BM_CHECK_EQ_INT(atomic_load(&failures), 0);
    BM_CHECK_EQ_INT(atomic_load(&bad_msgs), 0);
    for (int k = 0; k < 2; k++)
        for (int t = 0; t < OFI_THREADS; t++)
            for (int r = 0; r < rounds; r++)
                BM_CHECK_MSG(atomic_load(&got[k][t][r]) == 1, "%s %d of thread %d arrived %d times",
                             k ? "sendi message" : "message", r, t, atomic_load(&got[k][t][r]));
    /* What the peer's threads left in our window. */
    for (int t = 0; t < OFI_THREADS; t++) {
        int round = rounds - 1;
        size_t l = 1 + (size_t)(round * 977 + t * 131) % SLOT;
        bool ok = true;
        for (size_t j = 0; j < l && ok; j++)
            ok = win[(size_t)t * SLOT + j] == pat(peer, t, round, j);
        BM_CHECK_MSG(ok, "slot of thread %d holds the wrong data", t);
        BM_CHECK_EQ_INT(counters(win)[t], (uint64_t)rounds);
    }
    BM_CHECK_EQ_INT(counters(win)[OFI_THREADS], (uint64_t)OFI_THREADS * rounds);
    /* No path may have been declared dead (the transport's own counters):
     * with a pause, rank 0 must have probed the paused peer and taken its
     * answer (a PONG after the pause) as proof of life. */
    unsigned long long pings = atomic_load(&om->stats.pings);
    unsigned long long pfail = atomic_load(&om->stats.path_failures);
    printf("ofi_threads: rank %d: pings=%llu path_failures=%llu stalls=%llu pause_msgs=%d\n", me,
           pings, pfail, (unsigned long long)atomic_load(&om->stats.stalls),
           atomic_load(&pause_msgs));
    BM_CHECK_EQ_INT(pfail, 0);
    if (pause_ms > 0) {
        BM_CHECK_EQ_INT(atomic_load(&pause_msgs), 1);
        if (me == 0)
            BM_CHECK_MSG(pings > 0,
                         "no PING went to the peer paused for %d ms "
                         "(BM_BTL_OFI_TIMEOUT must be below twice that)",
                         pause_ms);
    }
    mod->ops->deregister_mem(mod, win_handle);
    bm_btl_base_close();
    bm_rte_finalize();
    free(win);
    return bm_test_summary("ofi_threads");
}
