/* Threads that send to different peers, or on different communicators,
 * must not serialise on one lock (issue 18, src/pml/README.md "Threads"):
 * the test records, with BM_PML_STATS=1 (util/lock.h's trace), every
 * distinct lock each of rank 0's two sending threads takes inside its
 * MPI_Send calls of 8 bytes (the inline path: sequence number, transport),
 * while both send at once, and compares the two sets. Counting locks is
 * independent of load and timing, unlike a rate.
 *   1. Thread 0 sends to rank 1 on one communicator, thread 1 to rank 2 on
 *      another: the two sets must share no lock at all.
 *   2. Both send to rank 1, each on its own communicator: the only locks
 *      they may share are the peer's send lock (class "sm endpoint").
 *   3. The receivers of 1 (ranks 1 and 2, one thread each): their MPI_Recv
 *      calls drain (the progress lock) but take no "sm module" lock: sm's
 *      receive side calls back under no module-wide lock. A receiver's own
 *      sends may legitimately take it: when its acknowledgement found rank
 *      0's fast-box ring full it went through the FIFO, and taking that
 *      fragment back (and the idle check of peers holding fragments) is the
 *      sender's bookkeeping under the module lock. So each traced receive
 *      starts with none of the receiver's fragments out (sm's in_flight,
 *      driven home by untraced MPI_Iprobe calls first) and must end so (it
 *      sends nothing): whatever "sm module" lock it takes is the receive
 *      side's, whatever the timing (one malloc arena, MALLOC_ARENA_MAX=1,
 *      sent acknowledgements through the FIFO in 4 of 5 runs).
 * Each set must hold a context lock and the peer's send lock (else the
 * trace saw nothing, or the transport did not lock per endpoint). Windows
 * of 16 messages, acknowledged by the receiver, keep the fast boxes from
 * filling (a full ring sends through the FIFO, which takes the fragment
 * pool's lock); a warm-up without the trace sets the rings up and lets the
 * FIFO fragments of the set-up traffic (communicator creation) come home,
 * since a ring is used only while none of its peer's fragments is out;
 * each window's acknowledgement gives the drainer a pass to take them
 * back. Every
 * message's contents are checked. Run over self,sm with 3 ranks; with the
 * argument "tcp", over self,tcp: the peer's send lock is then the class
 * "tcp endpoint", the sends are the PML's direct sends (no sendi over tcp:
 * a descriptor with no request and no progress lock, src/pml/README.md
 * "Threads"), 3. checks only that the receives drained, and 4. sends its
 * FRAGs over tcp (the peer's send lock and tcp's endpoint locks only).
 *   4. FRAGs to different peers: the locks taken while sending packed
 *      FRAGs to rank 1 and to rank 2 share none (run_frags; the sm module
 *      lock was shared before sm's descriptor sends went lock-free).
 *   5. Sends to itself: rank 0's thread 0 sends to rank 0 while thread 1
 *      sends to rank 1 and drains waiting for its acknowledgements
 *      (run_self). Neither may take a lock of class "transport": the
 *      base's lock of a transport it serialises, which self was until
 *      2026-11-29 (its sends then waited for the drainer's whole pass
 *      over self's deliveries, callbacks included). They may share self's
 *      endpoint lock (the drainer gives delivered fragments back under
 *      it; a leaf, so dev builds abort if a callback ran under it) and a
 *      context lock (the drainer matches thread 0's messages). */
#include "bm_test.h"
#include "btl/btl.h"
#include "btl/sm/sm.h"
#include "pml/pml_internal.h"
#include "util/lock.h"

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

#define WIN     16
#define WINDOWS 64
#define WARM    8
#define MAXLOCK 64

struct job {
    int t, peer;
    MPI_Comm comm;
    struct bm_util_lock_trace tr;
    const struct bm_util_lock *locks[MAXLOCK];
};

static pthread_barrier_t go;
static int bad_msgs;
/* The transport's per-peer send lock, and whether 3. checks sm's receive side. */
static const char *ep_class = "sm endpoint";
static bool sm_receivers = true;

static void *send_main(void *arg)
{
    struct job *j = arg;
    j->tr = (struct bm_util_lock_trace){.locks = j->locks, .cap = MAXLOCK};
    for (int w = 0; w < WARM + WINDOWS; w++) {
        if (w == WARM)
            pthread_barrier_wait(&go); /* both threads trace at the same time */
        for (int s = 0; s < WIN; s++) {
            int msg[2] = {w * WIN + s, j->t};
            if (w >= WARM)
                bm_util_lock_trace(&j->tr);
            MPI_Send(msg, 2, MPI_INT, j->peer, 5, j->comm);
            bm_util_lock_trace(NULL);
        }
        int ack;
        MPI_Recv(&ack, 1, MPI_INT, j->peer, 6, j->comm, MPI_STATUS_IGNORE);
    }
    return NULL;
}

struct rjob {
    int t;
    MPI_Comm comm;
    bool trace;       /* record the locks of the receives (phase 1) */
    int sent_in_recv; /* traced receives that left a fragment of ours out */
    struct bm_util_lock_trace tr;
    const struct bm_util_lock *locks[MAXLOCK];
};

/* This process's sm module reaching peer, or NULL (tcp). */
static struct bm_btl_sm_module *sm_module_to(int peer)
{
    struct bm_btl_path_list *l = &bm_btl_base_peer(peer)->send;
    for (int i = 0; i < l->count; i++)
        if (strcmp(l->paths[i].module->name, "sm") == 0)
            return (struct bm_btl_sm_module *)l->paths[i].module;
    return NULL;
}

/* The one reaching rank 0. */
static struct bm_btl_sm_module *sm_module(void)
{
    return sm_module_to(0);
}

/* sm fragments of this process pushed to peers and not yet taken back. */
static int sm_out(const struct bm_btl_sm_module *sm)
{
    return sm ? __atomic_load_n(&sm->in_flight, __ATOMIC_RELAXED) : 0;
}

static void *recv_main(void *arg)
{
    struct rjob *r = arg;
    r->tr = (struct bm_util_lock_trace){.locks = r->locks, .cap = MAXLOCK};
    struct bm_btl_sm_module *sm = r->trace && sm_receivers ? sm_module() : NULL;
    for (int w = 0; w < WARM + WINDOWS; w++) {
        for (int s = 0; s < WIN; s++) {
            int msg[2] = {-1, -1};
            bool traced = r->trace && w >= WARM;
            if (traced) {
                /* our fragments home first (their return is our sends'
                 * bookkeeping), untraced */
                while (sm_out(sm) > 0) {
                    int flag;
                    MPI_Iprobe(0, 99, r->comm, &flag, MPI_STATUS_IGNORE);
                }
                bm_util_lock_trace(&r->tr);
            }
            MPI_Recv(msg, 2, MPI_INT, 0, 5, r->comm, MPI_STATUS_IGNORE);
            bm_util_lock_trace(NULL);
            if (traced && sm_out(sm) > 0)
                r->sent_in_recv++;
            if (msg[0] != w * WIN + s || msg[1] != r->t)
                __atomic_fetch_add(&bad_msgs, 1, __ATOMIC_RELAXED);
        }
        int ack = w;
        MPI_Send(&ack, 1, MPI_INT, 0, 6, r->comm);
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

/* Locks both threads took; those not of class allowed (NULL: none allowed)
 * are reported. Returns how many were not allowed. */
static int shared_locks(const struct job *a, const struct job *b, const char *allowed,
                        int *nallowed)
{
    int wrong = 0;
    *nallowed = 0;
    for (size_t i = 0; i < a->tr.n; i++)
        for (size_t k = 0; k < b->tr.n; k++) {
            if (a->locks[i] != b->locks[k])
                continue;
            const char *cls = a->locks[i]->cls->name;
            if (allowed && strcmp(cls, allowed) == 0) {
                (*nallowed)++;
                continue;
            }
            BM_CHECK_MSG(false, "both threads took the same lock of class \"%s\"", cls);
            wrong++;
        }
    return wrong;
}

static void check_job(const struct job *j)
{
    BM_CHECK_MSG(!j->tr.overflow, "thread %d took more than %d distinct locks", j->t, MAXLOCK);
    BM_CHECK_MSG(has_class(j, "context"),
                 "thread %d's sends took no context lock (trace empty: %zu locks; BM_PML_STATS "
                 "unset or not MPI_THREAD_MULTIPLE?)",
                 j->t, j->tr.n);
    BM_CHECK_MSG(has_class(j, ep_class),
                 "thread %d's sends took no %s lock (%zu locks): the transport does not lock "
                 "per endpoint",
                 j->t, ep_class, j->tr.n);
}

/* Rank 1 or 2 received from the fast boxes in phase 1: its MPI_Recv calls
 * ran the progress engine (the PML's progress lock) and sm's receive side,
 * which must take no module-wide lock (src/btl/sm/README.md "Threads": it
 * delivers and calls back under none). Each traced receive started with
 * no fragment of ours out and sent none (recv_main), so no return of ours
 * and no idle check of peers holding fragments ran in it: any "sm module"
 * lock here is the receive side taking it. */
static void check_receiver(const struct rjob *r)
{
    bool progress = false, module = false;
    for (size_t i = 0; i < r->tr.n; i++) {
        progress |= strcmp(r->locks[i]->cls->name, "progress") == 0;
        module |= strcmp(r->locks[i]->cls->name, "sm module") == 0;
    }
    BM_CHECK_MSG(!sm_receivers || sm_module(), "rank 0 is not reached over sm");
    BM_CHECK_MSG(!r->tr.overflow, "receiver took more than %d distinct locks", MAXLOCK);
    BM_CHECK_MSG(r->sent_in_recv == 0,
                 "%d traced receives sent an sm fragment through the FIFO themselves: the "
                 "module lock below may be their own sends' bookkeeping",
                 r->sent_in_recv);
    BM_CHECK_MSG(progress,
                 "the receives never took the progress lock (%zu locks traced): they did not "
                 "drain, so the check below proves nothing",
                 r->tr.n);
    BM_CHECK_MSG(!sm_receivers || !module,
                 "sm's progress took its module lock while receiving from the fast boxes: "
                 "its receive side is serialised with every sender of the process");
}

/* Rank 0 sends from two threads; each peer receives on its communicator(s). */
static void run_phase(int rank, int phase, MPI_Comm ca, MPI_Comm cb)
{
    struct job jobs[2] = {{.t = 0, .peer = 1, .comm = ca},
                          {.t = 1, .peer = phase == 1 ? 2 : 1, .comm = cb}};
    if (rank == 0) {
        pthread_t th;
        pthread_barrier_init(&go, NULL, 2);
        pthread_create(&th, NULL, send_main, &jobs[1]);
        send_main(&jobs[0]);
        pthread_join(th, NULL);
        pthread_barrier_destroy(&go);
        check_job(&jobs[0]);
        check_job(&jobs[1]);
        int nallowed = 0;
        if (phase == 1) {
            BM_CHECK_EQ_INT(shared_locks(&jobs[0], &jobs[1], NULL, &nallowed), 0);
        } else {
            BM_CHECK_EQ_INT(shared_locks(&jobs[0], &jobs[1], ep_class, &nallowed), 0);
            BM_CHECK_MSG(nallowed == 1, "%d %s locks shared sending to one peer, expected 1",
                         nallowed, ep_class);
        }
    } else if (phase == 1) {
        struct rjob r = {.t = rank - 1, .comm = rank == 1 ? ca : cb, .trace = true};
        recv_main(&r);
        check_receiver(&r);
    } else if (rank == 1) {
        struct rjob r[2] = {{.t = 0, .comm = ca}, {.t = 1, .comm = cb}};
        pthread_t th;
        pthread_create(&th, NULL, recv_main, &r[1]);
        recv_main(&r[0]);
        pthread_join(th, NULL);
    }
}

/* Phase 3: FRAGs to different peers. Rank 0's two threads each send
 * VEC_MSGS vectors of VEC_BYTES (8-byte blocks 16 bytes apart: packed
 * FRAGs under the per-peer send state, no single copy) to a peer of their
 * own, thread 0 to rank 1 on ca, thread 1 to rank 2 on cb. The PML's trace
 * hook (bm_pml_test_frag_trace_hook) records the locks a worker without
 * the progress lock takes inside the FRAG path, per destination (the
 * worker of a send may be another thread: the trace follows the send).
 * The two destinations' sets must share no lock: FRAGs to different
 * peers are sent under different locks only, the peer's send lock and
 * the transport's endpoint, not a module-wide one. Each set must hold
 * the peer's send lock (else no FRAG went by the per-peer path). */
#define VEC_BYTES (256 * 1024)
#define VEC_MSGS  8
static struct job frag_jobs[2]; /* by destination (rank 1, rank 2) */
static atomic_int frag_entries[2];

static void frag_trace(int peer, bool enter)
{
    if (peer < 1 || peer > 2)
        return;
    if (enter) {
        atomic_fetch_add_explicit(&frag_entries[peer - 1], 1, memory_order_relaxed);
        bm_util_lock_trace(&frag_jobs[peer - 1].tr);
    } else {
        bm_util_lock_trace(NULL);
    }
}

static MPI_Datatype vec_type(void)
{
    MPI_Datatype t;
    MPI_Type_vector(VEC_BYTES / 8, 8, 16, MPI_BYTE, &t);
    MPI_Type_commit(&t);
    return t;
}

static void vec_fill(unsigned char *b, int peer, int m)
{
    for (size_t i = 0; i < 2 * VEC_BYTES; i++)
        b[i] = (unsigned char)(i * 13 + (size_t)peer * 7 + (size_t)m);
}

static void *frag_send_main(void *arg)
{
    struct job *j = arg;
    MPI_Datatype t = vec_type();
    unsigned char *b = malloc(2 * VEC_BYTES);
    if (!b)
        abort(); /* no BM_CHECK here: the harness's counters are the main thread's */
    pthread_barrier_wait(&go);
    for (int m = 0; m < VEC_MSGS; m++) {
        vec_fill(b, j->peer, m);
        MPI_Send(b, 1, t, j->peer, 7, j->comm);
    }
    free(b);
    MPI_Type_free(&t);
    return NULL;
}

static void frag_recv(int rank, MPI_Comm comm)
{
    MPI_Datatype t = vec_type();
    unsigned char *b = malloc(2 * VEC_BYTES), *want = malloc(2 * VEC_BYTES);
    BM_CHECK(b != NULL && want != NULL);
    for (int m = 0; b && want && m < VEC_MSGS; m++) {
        memset(b, 0, 2 * VEC_BYTES);
        MPI_Recv(b, 1, t, 0, 7, comm, MPI_STATUS_IGNORE);
        vec_fill(want, rank, m);
        size_t bad = 0;
        for (size_t i = 0; i < 2 * VEC_BYTES; i += 16)
            bad += memcmp(b + i, want + i, 8) != 0;
        BM_CHECK_MSG(bad == 0, "message %d: %zu blocks wrong", m, bad);
    }
    free(b);
    free(want);
    MPI_Type_free(&t);
}

/* sm's fragments backed with memory so far (both classes): the pool grows
 * under the module's lock when a class runs out. */
static uint32_t sm_frags_ready(void)
{
    const struct bm_btl_sm_module *sm = sm_module_to(1);
    return sm ? __atomic_load_n(&sm->frag_ready[0], __ATOMIC_RELAXED) +
                    __atomic_load_n(&sm->frag_ready[1], __ATOMIC_RELAXED)
              : 0;
}

/* Rank 0: one round of both threads' sends, traced or not. */
static void frag_round(MPI_Comm ca, MPI_Comm cb, bool traced)
{
    struct job senders[2] = {{.t = 0, .peer = 1, .comm = ca}, {.t = 1, .peer = 2, .comm = cb}};
    for (int p = 0; p < 2; p++) {
        frag_jobs[p] = (struct job){.t = p};
        frag_jobs[p].tr = (struct bm_util_lock_trace){.locks = frag_jobs[p].locks, .cap = MAXLOCK};
        atomic_store(&frag_entries[p], 0);
    }
    if (traced)
        __atomic_store_n(&bm_pml_test_frag_trace_hook, frag_trace, __ATOMIC_RELEASE);
    pthread_t th;
    pthread_barrier_init(&go, NULL, 2);
    pthread_create(&th, NULL, frag_send_main, &senders[1]);
    frag_send_main(&senders[0]);
    pthread_join(th, NULL);
    pthread_barrier_destroy(&go);
    __atomic_store_n(&bm_pml_test_frag_trace_hook, NULL, __ATOMIC_RELEASE);
}

/* An untraced round first (the fragment pool grows to what two senders
 * need, the rings and links are up), then traced rounds until one ran
 * without the pool growing (a growth takes the module's lock, once per
 * doubling: at most a few rounds). */
#define FRAG_ROUNDS_MAX 8
static void run_frags(int rank, MPI_Comm ca, MPI_Comm cb)
{
    int again = 1;
    for (int r = 0; again; r++) {
        if (rank != 0) {
            frag_recv(rank, rank == 1 ? ca : cb);
        } else {
            uint32_t ready = sm_frags_ready();
            frag_round(ca, cb, r > 0);
            again = r == 0 || (sm_frags_ready() != ready && r < FRAG_ROUNDS_MAX);
            if (r > 0 && again)
                printf("rank 0: the sm fragment pool grew during traced round %d: again\n", r);
        }
        MPI_Bcast(&again, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    if (rank != 0)
        return;
    for (int p = 0; p < 2; p++) {
        const struct job *j = &frag_jobs[p];
        BM_CHECK_MSG(atomic_load(&frag_entries[p]) > 0 && has_class(j, "peer send"),
                     "no FRAG to rank %d went by the per-peer path (%d entries traced, %zu "
                     "locks): FRAGs sent under the progress lock",
                     p + 1, atomic_load(&frag_entries[p]), j->tr.n);
        BM_CHECK_MSG(!j->tr.overflow, "FRAGs to rank %d took more than %d distinct locks", p + 1,
                     MAXLOCK);
        for (size_t i = 0; i < j->tr.n; i++)
            printf("rank 0: FRAGs to rank %d took a lock of class \"%s\" (%p)\n", p + 1,
                   j->locks[i]->cls->name, (const void *)j->locks[i]);
    }
    int nallowed = 0;
    BM_CHECK_EQ_INT(shared_locks(&frag_jobs[0], &frag_jobs[1], NULL, &nallowed), 0);
}

/* Phase 5: thread 0 of rank 0 sends WIN messages to itself (traced) and
 * receives them (untraced), WINDOWS times; thread 1 sends to rank 1 and
 * waits for its acknowledgement, both traced. */
static void *self_send_main(void *arg)
{
    struct job *j = arg;
    j->tr = (struct bm_util_lock_trace){.locks = j->locks, .cap = MAXLOCK};
    pthread_barrier_wait(&go);
    for (int w = 0; w < WINDOWS; w++) {
        for (int s = 0; s < WIN; s++) {
            int msg[2] = {w * WIN + s, j->t};
            bm_util_lock_trace(&j->tr);
            MPI_Send(msg, 2, MPI_INT, 0, 8, j->comm);
            bm_util_lock_trace(NULL);
        }
        for (int s = 0; s < WIN; s++) {
            int msg[2] = {-1, -1};
            MPI_Recv(msg, 2, MPI_INT, 0, 8, j->comm, MPI_STATUS_IGNORE);
            if (msg[0] != w * WIN + s || msg[1] != j->t)
                __atomic_fetch_add(&bad_msgs, 1, __ATOMIC_RELAXED);
        }
    }
    return NULL;
}

static void *peer_send_main(void *arg)
{
    struct job *j = arg;
    j->tr = (struct bm_util_lock_trace){.locks = j->locks, .cap = MAXLOCK};
    pthread_barrier_wait(&go);
    for (int w = 0; w < WARM + WINDOWS; w++) {
        bm_util_lock_trace(&j->tr);
        for (int s = 0; s < WIN; s++) {
            int msg[2] = {w * WIN + s, j->t};
            MPI_Send(msg, 2, MPI_INT, j->peer, 5, j->comm);
        }
        int ack;
        MPI_Recv(&ack, 1, MPI_INT, j->peer, 6, j->comm, MPI_STATUS_IGNORE);
        bm_util_lock_trace(NULL);
    }
    return NULL;
}

static void run_self(int rank, MPI_Comm ca, MPI_Comm cb)
{
    if (rank == 1) {
        struct rjob r = {.t = 1, .comm = cb};
        recv_main(&r);
    }
    if (rank != 0)
        return;
    struct job jobs[2] = {{.t = 0, .peer = 0, .comm = ca}, {.t = 1, .peer = 1, .comm = cb}};
    pthread_t th;
    pthread_barrier_init(&go, NULL, 2);
    pthread_create(&th, NULL, peer_send_main, &jobs[1]);
    self_send_main(&jobs[0]);
    pthread_join(th, NULL);
    pthread_barrier_destroy(&go);
    BM_CHECK_MSG(has_class(&jobs[0], "context") && has_class(&jobs[0], "self endpoint"),
                 "the sends to itself took no context lock or no self endpoint lock (%zu locks)",
                 jobs[0].tr.n);
    bool drained = false;
    for (size_t i = 0; i < jobs[1].tr.n; i++)
        drained |= strcmp(jobs[1].locks[i]->cls->name, "progress") == 0;
    BM_CHECK_MSG(drained, "thread 1 never took the progress lock (%zu locks): it did not drain",
                 jobs[1].tr.n);
    for (int t = 0; t < 2; t++) {
        BM_CHECK_MSG(!jobs[t].tr.overflow, "thread %d took more than %d distinct locks", t,
                     MAXLOCK);
        BM_CHECK_MSG(!has_class(&jobs[t], "transport"),
                     "thread %d took a transport lock of the base: self is serialised by the base "
                     "(its sends wait for the drainer's callbacks)",
                     t);
        for (size_t i = 0; i < jobs[t].tr.n; i++)
            printf("rank 0: thread %d (%s) took a lock of class \"%s\" (%p)\n", t,
                   t == 0 ? "to itself" : "to rank 1", jobs[t].locks[i]->cls->name,
                   (const void *)jobs[t].locks[i]);
    }
    for (size_t i = 0; i < jobs[0].tr.n; i++)
        for (size_t k = 0; k < jobs[1].tr.n; k++) {
            const char *cls = jobs[0].locks[i]->cls->name;
            BM_CHECK_MSG(jobs[0].locks[i] != jobs[1].locks[k] || strcmp(cls, "context") == 0 ||
                             strcmp(cls, "self endpoint") == 0,
                         "the sends to itself and the drainer shared a lock of class \"%s\"", cls);
        }
}

/* MPI_THREAD_MULTIPLE, 3 ranks and the lock trace, or false. */
static bool start(int *argc, char ***argv, int *rank)
{
    int provided, size;
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    bm_test_current = "set-up";
    BM_CHECK_MSG(provided == MPI_THREAD_MULTIPLE, "provided %d, not MPI_THREAD_MULTIPLE", provided);
    BM_CHECK_MSG(size == 3, "%d ranks, run with 3", size);
    BM_CHECK_MSG(bm_util_lock_stats, "run with BM_PML_STATS=1 (the lock trace needs it)");
    return provided == MPI_THREAD_MULTIPLE && size == 3 && bm_util_lock_stats;
}

int main(int argc, char **argv)
{
    int rank;
    if (argc > 1 && strcmp(argv[1], "tcp") == 0) {
        ep_class = "tcp endpoint";
        sm_receivers = false;
    }
    if (start(&argc, &argv, &rank)) {
        MPI_Comm ca, cb;
        MPI_Comm_dup(MPI_COMM_WORLD, &ca);
        MPI_Comm_dup(MPI_COMM_WORLD, &cb);
        bm_test_current = "different peers, different communicators";
        run_phase(rank, 1, ca, cb);
        MPI_Barrier(MPI_COMM_WORLD);
        bm_test_current = "one peer, different communicators";
        run_phase(rank, 2, ca, cb);
        /* Over tcp too: the striping's reads of tcp's statistics (under
         * its component lock) are the progress lock holder's, never a FRAG
         * sender's (src/pml/README.md "Threads"). */
        MPI_Barrier(MPI_COMM_WORLD);
        bm_test_current = "FRAGs to different peers";
        run_frags(rank, ca, cb);
        MPI_Barrier(MPI_COMM_WORLD);
        bm_test_current = "sends to itself";
        run_self(rank, ca, cb);
        BM_CHECK_EQ_INT(bad_msgs, 0);
        MPI_Comm_free(&ca);
        MPI_Comm_free(&cb);
    }
    MPI_Finalize();
    return bm_test_summary("mt_locks");
}
