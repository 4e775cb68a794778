/* tcp under MPI_THREAD_MULTIPLE locks per endpoint (src/btl/tcp/README.md
 * "Threads", issue 18): two threads of rank 0 that send to different peers
 * (thread 0 to rank 1, thread 1 to rank 2) must not meet on any lock. The
 * test drives the transport layer directly (no PML, which has locks of its
 * own), opened with thread level MPI_THREAD_MULTIPLE, and records with
 * util/lock.h's trace every distinct lock each sending thread takes inside
 * its alloc + send calls while both send at once; the main thread alone
 * runs progress (the transports' one-drainer rule), completing the
 * fragments and receiving the peers' acknowledgements. Checks:
 *   - each thread's set holds its peer's "tcp endpoint" lock (else tcp did
 *     not lock per endpoint, or the trace saw nothing);
 *   - the two sets share no lock (the base's per-component "transport"
 *     lock, tcp's component lock or a shared fragment pool would be one);
 *   - every message arrives once, in order, with its bytes (the receivers
 *     check the sequence and the pattern and report what they got).
 * A warm-up, untraced, connects the links first (a send to an endpoint
 * that is not connected takes tcp's component lock, by design). Counting
 * locks is independent of load and timing. Run with 3 ranks over
 * self,tcp. */
#define BM_LOG_SUBSYS "test/btl"
#include "bm_test.h"
#include "btl/btl.h"
#include "runtime/rte.h"
#include "util/lock.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    K_DATA = BM_BTL_TAG_TEST, /* sender thread -> rank 1 or 2 */
    K_ACK,                    /* receiver -> rank 0: how many arrived, how many were bad */
};

#define WARM    64
#define COUNT   4000
#define PAYLOAD 64
#define MAXLOCK 32

static int me, nprocs;

/* Receivers: what arrived from rank 0. */
static uint32_t next_seq;
static int bad;

/* Rank 0: the receivers' acknowledgements and the completions owed. */
static atomic_int acks_warm, acks_all;
static atomic_int bad_remote;
static atomic_int cb_owed;

static unsigned char pattern(uint32_t seq, int dst, size_t j)
{
    return (unsigned char)(seq * 31u + (unsigned)dst * 7u + j * 13u + 1u);
}

struct msg {
    uint32_t seq;
    uint32_t dst;
    unsigned char data[PAYLOAD];
};

struct ack {
    uint32_t got;
    uint32_t bad;
    uint32_t final;
};

static void on_data(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata)
{
    (void)m;
    (void)cbdata;
    struct msg msg;
    if (d->seg_count != 1 || d->seg[0].len != sizeof(msg)) {
        bad++;
        return;
    }
    memcpy(&msg, d->seg[0].addr, sizeof(msg));
    bool ok = msg.seq == next_seq && msg.dst == (uint32_t)me;
    for (size_t j = 0; ok && j < PAYLOAD; j++)
        ok = msg.data[j] == pattern(msg.seq, me, j);
    if (!ok)
        bad++;
    next_seq++;
}

static void on_ack(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata)
{
    (void)m;
    (void)cbdata;
    struct ack a;
    if (d->seg_count != 1 || d->seg[0].len != sizeof(a)) {
        atomic_fetch_add(&bad_remote, 1);
        return;
    }
    memcpy(&a, d->seg[0].addr, sizeof(a));
    atomic_fetch_add(&bad_remote, (int)a.bad);
    atomic_fetch_add(a.final ? &acks_all : &acks_warm, 1);
}

static void on_done(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                    struct bm_btl_descriptor *des, int status)
{
    (void)m;
    (void)ep;
    (void)des;
    if (status != 0)
        atomic_fetch_add(&bad_remote, 1);
    atomic_fetch_sub(&cb_owed, 1);
}

static struct bm_btl_path *tcp_path(int r)
{
    struct bm_btl_peer *peer = bm_btl_base_peer(r);
    if (!peer)
        return NULL;
    for (int i = 0; i < peer->eager.count; i++)
        if (strcmp(peer->eager.paths[i].module->ops->name, "tcp") == 0)
            return &peer->eager.paths[i];
    return NULL;
}

/* One message, by alloc + send; false when the transport refused. */
static bool send_one(struct bm_btl_path *p, int tag, const void *data, size_t len)
{
    struct bm_btl_descriptor *des =
        bm_btl_alloc(p->module, p->endpoint, 0, len, BM_BTL_DES_F_BTL_OWNED);
    if (!des)
        return false;
    memcpy(des->seg[0].addr, data, len);
    des->cbfunc = on_done;
    des->cbdata = NULL;
    atomic_fetch_add(&cb_owed, 1);
    int rc = bm_btl_send(p->module, p->endpoint, des, (bm_btl_tag_t)tag);
    if (rc < 0) {
        atomic_fetch_sub(&cb_owed, 1);
        bm_btl_free(p->module, des);
        return false;
    }
    return true;
}

struct job {
    int t;
    struct bm_btl_path *path;
    pthread_barrier_t *go;
    int refused;
    struct bm_util_lock_trace tr;
    const struct bm_util_lock *locks[MAXLOCK];
};

static void *send_main(void *arg)
{
    struct job *j = arg;
    int dst = j->t + 1;
    j->tr = (struct bm_util_lock_trace){.locks = j->locks, .cap = MAXLOCK};
    for (uint32_t s = 0; s < WARM + COUNT; s++) {
        if (s == WARM) {
            while (atomic_load(&acks_warm) < 2) /* the links are up */
                sched_yield();
            pthread_barrier_wait(j->go); /* both threads trace at the same time */
        }
        struct msg msg = {.seq = s, .dst = (uint32_t)dst};
        for (size_t k = 0; k < PAYLOAD; k++)
            msg.data[k] = pattern(s, dst, k);
        for (;;) {
            if (s >= WARM)
                bm_util_lock_trace(&j->tr);
            bool ok = send_one(j->path, K_DATA, &msg, sizeof(msg));
            bm_util_lock_trace(NULL);
            if (ok)
                break;
            j->refused++;
            sched_yield(); /* out of buffers: the main thread's progress frees some */
        }
    }
    return NULL;
}

static bool has_class(const struct job *j, const char *name)
{
    for (size_t i = 0; i < j->tr.n; i++)
        if (strcmp(j->locks[i]->cls->name, name) == 0)
            return true;
    return false;
}

static void progress_until(atomic_int *v, int want, const char *what)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (atomic_load(v) < want) {
        bm_btl_base_progress();
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 60) {
            BM_CHECK_MSG(false, "rank %d: waited 60 s for %s", me, what);
            return;
        }
    }
}

static void rank0(void)
{
    struct bm_btl_path *p1 = tcp_path(1), *p2 = tcp_path(2);
    BM_CHECK_MSG(p1 && p2, "rank 0: tcp does not reach ranks 1 and 2");
    if (!p1 || !p2)
        return;
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 2);
    struct job jobs[2] = {{.t = 0, .path = p1, .go = &go}, {.t = 1, .path = p2, .go = &go}};
    pthread_t th[2];
    for (int t = 0; t < 2; t++)
        BM_CHECK_EQ_INT(pthread_create(&th[t], NULL, send_main, &jobs[t]), 0);
    progress_until(&acks_all, 2, "the receivers' final acknowledgements");
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (atomic_load(&cb_owed) > 0) {
        bm_btl_base_progress();
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 60)
            break;
    }
    BM_CHECK_MSG(atomic_load(&cb_owed) == 0, "rank 0: %d send completions never came",
                 atomic_load(&cb_owed));
    BM_CHECK_MSG(atomic_load(&bad_remote) == 0,
                 "rank 0: %d messages arrived wrong, out of order or failed",
                 atomic_load(&bad_remote));
    pthread_barrier_destroy(&go);

    for (int k = 0; k < 2; k++) {
        struct job *j = &jobs[k];
        BM_CHECK_MSG(!j->tr.overflow, "thread %d took more than %d distinct locks", k, MAXLOCK);
        BM_CHECK_MSG(has_class(j, "tcp endpoint"),
                     "thread %d's sends took no tcp endpoint lock (%zu locks traced): tcp does "
                     "not lock per endpoint under MPI_THREAD_MULTIPLE",
                     k, j->tr.n);
        for (size_t i = 0; i < j->tr.n; i++)
            printf("rank 0 thread %d took a lock of class \"%s\"\n", k, j->locks[i]->cls->name);
    }
    int shared = 0;
    for (size_t i = 0; i < jobs[0].tr.n; i++)
        for (size_t k = 0; k < jobs[1].tr.n; k++)
            if (jobs[0].locks[i] == jobs[1].locks[k]) {
                BM_CHECK_MSG(false,
                             "both threads, sending to different peers, took the same lock of "
                             "class \"%s\"",
                             jobs[0].locks[i]->cls->name);
                shared++;
            }
    printf("rank 0: %zu and %zu distinct locks, %d shared; sends refused for lack of buffers "
           "%d/%d\n",
           jobs[0].tr.n, jobs[1].tr.n, shared, jobs[0].refused, jobs[1].refused);
}

static void receiver(void)
{
    struct bm_btl_path *p0 = tcp_path(0);
    BM_CHECK_MSG(p0 != NULL, "rank %d: tcp does not reach rank 0", me);
    if (!p0)
        return;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    bool warm_sent = false;
    while (next_seq < WARM + COUNT) {
        bm_btl_base_progress();
        if (!warm_sent && next_seq >= WARM) {
            struct ack a = {.got = next_seq, .bad = (uint32_t)bad, .final = 0};
            warm_sent = send_one(p0, K_ACK, &a, sizeof(a));
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 60)
            break;
    }
    BM_CHECK_MSG(next_seq == WARM + COUNT, "rank %d: %u of %d messages arrived", me, next_seq,
                 WARM + COUNT);
    BM_CHECK_MSG(bad == 0, "rank %d: %d messages wrong or out of order", me, bad);
    struct ack a = {.got = next_seq, .bad = (uint32_t)bad, .final = 1};
    while (!send_one(p0, K_ACK, &a, sizeof(a)))
        bm_btl_base_progress();
    while (atomic_load(&cb_owed) > 0) {
        bm_btl_base_progress();
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 90)
            break;
    }
}

static atomic_bool barrier_done;

static void *progress_thread(void *arg)
{
    (void)arg;
    while (!atomic_load(&barrier_done))
        bm_btl_base_progress();
    return NULL;
}

int main(void)
{
    BM_CHECK_EQ_INT(bm_rte_init(), BM_OK);
    me = bm_rte_self()->rank;
    nprocs = bm_rte_self()->size;
    bm_test_current = "btl_tcp_threads";
    BM_CHECK_MSG(nprocs == 3, "run with 3 ranks (got %d)", nprocs);
    if (nprocs != 3) {
        bm_rte_finalize();
        return bm_test_summary("btl_tcp_threads");
    }
    bm_util_lock_stats = true; /* the trace records only with the statistics on */
    struct bm_btl_init_args args = {.thread_level = BM_BTL_THREAD_MULTIPLE};
    bm_status_t rc = bm_btl_base_open(&args);
    BM_CHECK_EQ_INT(rc, BM_OK);
    if (rc != BM_OK)
        return bm_test_summary("btl_tcp_threads");
    bm_btl_base_register_recv(K_DATA, on_data, NULL);
    bm_btl_base_register_recv(K_ACK, on_ack, NULL);
    BM_CHECK_EQ_INT(bm_rte_modex_fence(), BM_OK);
    rc = bm_btl_base_add_procs(nprocs);
    BM_CHECK_EQ_INT(rc, BM_OK);
    if (rc == BM_OK) {
        if (me == 0)
            rank0();
        else
            receiver();
    }
    /* Everybody done before anyone closes (its peers may still need its progress). */
    pthread_t t;
    atomic_store(&barrier_done, false);
    bool threaded = pthread_create(&t, NULL, progress_thread, NULL) == 0;
    BM_CHECK_EQ_INT(bm_rte_barrier(), BM_OK);
    atomic_store(&barrier_done, true);
    if (threaded)
        pthread_join(t, NULL);
    bm_btl_base_close();
    bm_rte_finalize();
    char name[64];
    snprintf(name, sizeof(name), "btl_tcp_threads rank %d", me);
    return bm_test_summary(name);
}
