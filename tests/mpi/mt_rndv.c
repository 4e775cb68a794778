/* Two threads that start rendezvous sends to different peers must not
 * serialise on the progress lock (issue 18, src/pml/README.md "Threads",
 * rendezvous starts without the progress lock): rank 0's thread A sends
 * 256 KiB to rank 1 on one communicator; the PML's test hook holds A inside
 * its rendezvous start (with the progress lock, when A took that path)
 * until a second thread is inside one too, or 0.5 s pass (under
 * BM_PML_RESTART_MS, 1 s: a longer stall makes the receivers ask again). Thread B starts
 * its 256 KiB send to rank 2 on another communicator once A is inside. The
 * count of threads inside a rendezvous start must reach 2 and B's start
 * must have gone without the progress lock (before, B's start was left to
 * A as a deferred start: the count stayed 1 and A waited out the 0.5 s).
 * Counted, not timed. Every byte is checked by the receivers; 4 rounds.
 * Run with 3 ranks over self,tcp (RNDV descriptors), over self,sm with
 * the argument "rget" (single-copy RGETs sent by sendi: every start must
 * have been one), over self,sm with "getv" (a non-contiguous type of 32 KiB
 * blocks, which the receivers read piece by piece: RGETs with a layout) and
 * over self,ofi with "rget" (RGETs whose buffer the sending thread
 * registers itself). */
#include "bm_test.h"
#include "pml/pml_internal.h"

#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BYTES  (256 * 1024)
#define ROUNDS 4

static atomic_int held;      /* a thread is being held in the hook this round */
static atomic_int saw_two;   /* the held thread saw a second one inside */
static atomic_int round_arm; /* the hook holds the first thread of a round */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void hook(int inside)
{
    if (inside >= 2) { /* this thread entered while another is inside */
        atomic_store(&saw_two, 1);
        return;
    }
    if (!atomic_exchange(&round_arm, 0))
        return;
    atomic_store(&held, 1);
    double t0 = now();
    while (!atomic_load(&saw_two) && now() - t0 < 0.5)
        sched_yield();
}

/* "getv": the sent data as 8 blocks of 32 KiB, 64 KiB apart (pieces large
 * enough to be read one by one, BM_PML_RGET_PIECE_MIN) */
#define GETV_BLOCK (32 * 1024)
static bool getv;
static MPI_Datatype getv_type;

struct job {
    int peer, round;
    MPI_Comm comm;
    bool wait_held;
};

static void fill(unsigned char *b, int peer, int round)
{
    for (size_t i = 0; i < BYTES; i++)
        b[i] = (unsigned char)(i * 7 + (size_t)peer * 31 + (size_t)round);
}

static void *send_main(void *arg)
{
    struct job *j = arg;
    unsigned char *b = malloc(BYTES);
    fill(b, j->peer, j->round);
    if (j->wait_held)
        while (!atomic_load(&held))
            sched_yield();
    unsigned char *sparse = NULL;
    if (getv) { /* block k at 2 k GETV_BLOCK */
        sparse = calloc(2, BYTES);
        for (size_t k = 0; k < BYTES / GETV_BLOCK; k++)
            memcpy(sparse + 2 * k * GETV_BLOCK, b + k * GETV_BLOCK, GETV_BLOCK);
    }
    MPI_Request r;
    if (getv)
        MPI_Isend(sparse, 1, getv_type, j->peer, 7, j->comm, &r);
    else
        MPI_Isend(b, BYTES, MPI_BYTE, j->peer, 7, j->comm, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    free(sparse);
    free(b);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    getv = argc > 1 && strcmp(argv[1], "getv") == 0;
    bool rget = getv || (argc > 1 && strcmp(argv[1], "rget") == 0);
    bm_test_current = "set-up";
    BM_CHECK_MSG(provided == MPI_THREAD_MULTIPLE, "provided %d, not MPI_THREAD_MULTIPLE", provided);
    BM_CHECK_MSG(size == 3, "%d ranks, run with 3", size);
    if (provided == MPI_THREAD_MULTIPLE && size == 3) {
        if (getv) {
            MPI_Type_vector(BYTES / GETV_BLOCK, GETV_BLOCK, 2 * GETV_BLOCK, MPI_BYTE, &getv_type);
            MPI_Type_commit(&getv_type);
        }
        MPI_Comm ca, cb;
        MPI_Comm_dup(MPI_COMM_WORLD, &ca);
        MPI_Comm_dup(MPI_COMM_WORLD, &cb);
        /* connections up and rendezvous paths warm before the hook: a
         * collective need not connect rank 0 with both peers (ofi's rxm
         * connects on first use, and the first RGET to a peer not yet
         * connected was refused with "out of resources" and deferred), so
         * rank 0 sends each peer one message of the size first */
        int x = 0;
        MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, ca);
        MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, cb);
        unsigned char *warm = calloc(1, BYTES);
        if (rank == 0) {
            MPI_Send(warm, BYTES, MPI_BYTE, 1, 6, ca);
            MPI_Send(warm, BYTES, MPI_BYTE, 2, 6, cb);
        } else {
            MPI_Recv(warm, BYTES, MPI_BYTE, 0, 6, rank == 1 ? ca : cb, MPI_STATUS_IGNORE);
        }
        free(warm);
        uint64_t free_before = __atomic_load_n(&bm_pml_g.sends_rndv_free, __ATOMIC_RELAXED);
        uint64_t rgets_before = __atomic_load_n(&bm_pml_g.rget_sent, __ATOMIC_RELAXED);
        bm_test_current = "two rendezvous starts at once";
        if (rank == 0)
            __atomic_store_n(&bm_pml_test_rndv_hook, hook, __ATOMIC_RELEASE);
        int rounds_two = 0;
        for (int round = 0; round < ROUNDS; round++) {
            if (rank == 0) {
                atomic_store(&held, 0);
                atomic_store(&saw_two, 0);
                atomic_store(&round_arm, 1);
                struct job a = {.peer = 1, .round = round, .comm = ca};
                struct job b = {.peer = 2, .round = round, .comm = cb, .wait_held = true};
                pthread_t th;
                pthread_create(&th, NULL, send_main, &b);
                send_main(&a);
                pthread_join(th, NULL);
                rounds_two += atomic_load(&saw_two);
            } else {
                unsigned char *got = malloc(BYTES), *want = malloc(BYTES);
                fill(want, rank, round);
                MPI_Recv(got, BYTES, MPI_BYTE, 0, 7, rank == 1 ? ca : cb, MPI_STATUS_IGNORE);
                BM_CHECK_MSG(memcmp(got, want, BYTES) == 0, "round %d: rank %d got other bytes",
                             round, rank);
                free(got);
                free(want);
            }
        }
        if (rank == 0) {
            __atomic_store_n(&bm_pml_test_rndv_hook, NULL, __ATOMIC_RELEASE);
            uint64_t free_starts =
                __atomic_load_n(&bm_pml_g.sends_rndv_free, __ATOMIC_RELAXED) - free_before;
            int max_in = __atomic_load_n(&bm_pml_g.rndv_in_max, __ATOMIC_RELAXED);
            BM_CHECK_MSG(rounds_two == ROUNDS,
                         "in %d of %d rounds a second thread never entered a rendezvous start "
                         "while the first was inside (at most %d at once): the starts "
                         "serialise",
                         ROUNDS - rounds_two, ROUNDS, max_in);
            BM_CHECK_MSG(free_starts >= ROUNDS,
                         "%llu rendezvous started without the progress lock, expected >= %d",
                         (unsigned long long)free_starts, ROUNDS);
            uint64_t rgets = __atomic_load_n(&bm_pml_g.rget_sent, __ATOMIC_RELAXED) - rgets_before;
            if (rget) /* the starts were single-copy RGETs */
                BM_CHECK_MSG(rgets >= 2 * ROUNDS, "%llu RGETs sent, expected >= %d",
                             (unsigned long long)rgets, 2 * ROUNDS);
            printf("rank 0: %d of %d rounds had two threads in a rendezvous start at once "
                   "(max %d); %llu started without the progress lock; %llu RGETs\n",
                   rounds_two, ROUNDS, max_in, (unsigned long long)free_starts,
                   (unsigned long long)rgets);
        }
        MPI_Comm_free(&ca);
        MPI_Comm_free(&cb);
        if (getv)
            MPI_Type_free(&getv_type);
    }
    MPI_Finalize();
    return bm_test_summary("mt_rndv");
}
