/* Two threads that send large messages to different peers must send their
 * FRAGs at once, not one after the other from the thread that drains
 * (issue 18, src/pml/README.md "Threads", per-peer send state): rank 0's
 * threads A and B each send 1 MiB, A to rank 1 on one communicator, B to
 * rank 2 on another (256 KiB with the vector type below). The PML's test hook holds the first
 * thread that enters the FRAG path in a round until a second thread is inside it too, or the other
 * thread's send has completed (it can no longer enter): bounded by events, not by a time (a 0.5 s
 * hold failed once each over ofi and tcp at load 46); HOLD_MAX_S only ends a hold that nothing
 * else would end, before the test's timeout. The count of threads inside the FRAG path must reach
 * 2 in every round, and FRAGs must have been sent by threads not holding the progress lock.
 * Before the per-peer send state the drainer sent every FRAG from its ACK callback under the
 * progress lock: held there, no other thread could take the ACK of its own message, the count
 * stayed 1 and the round waited out the hold. Counted, not timed. Every byte is checked by the
 * receivers; 4 rounds.
 * Run with 3 ranks over self,tcp (contiguous: FRAGs the transport places),
 * over self,sm with the argument "vector" (a non-contiguous type of
 * small blocks: packed FRAGs, no single copy) and over self,ofi with
 * "vector" (tests/fault/ofi.cmake; contiguous messages are RGETs there). */
#include "bm_test.h"
#include "pml/pml_internal.h"

#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUNDS 4

/* 1 MiB contiguous; 256 KiB in the vector (packing 8-byte blocks is slow
 * under the sanitizers). */
static size_t BYTES = 1024 * 1024;

static atomic_int saw_two;    /* the held thread saw a second one inside */
static atomic_int round_arm;  /* the hook holds the first thread of a round */
static atomic_int sends_done; /* sends of this round that completed */

/* The longest hold: only a thread that nothing else releases (the other thread cannot progress
 * while this one is held) waits this long; 4 rounds stay under the test's 60 s timeout. */
#define HOLD_MAX_S 10.0

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
    /* Held until the other thread is inside too, or its send completed without entering (the
     * held thread's send cannot have: it is inside). */
    double t0 = now();
    while (!atomic_load(&saw_two) && atomic_load(&sends_done) == 0 && now() - t0 < HOLD_MAX_S)
        sched_yield();
}

struct job {
    int peer, round;
    MPI_Comm comm;
    MPI_Datatype type; /* BYTES of data: MPI_BYTE, or 8-byte blocks 16 apart */
    int count;
};

static void fill(unsigned char *b, int peer, int round)
{
    for (size_t i = 0; i < BYTES; i++)
        b[i] = (unsigned char)(i * 7 + (size_t)peer * 31 + (size_t)round);
}

/* The message as laid out by type (a vector has a gap after each block). */
static size_t extent_of(MPI_Datatype type, int count)
{
    MPI_Aint lb, extent;
    MPI_Type_get_extent(type, &lb, &extent);
    return (size_t)extent * (size_t)count;
}

static void *send_main(void *arg)
{
    struct job *j = arg;
    unsigned char *data = malloc(BYTES);
    fill(data, j->peer, j->round);
    size_t ext = extent_of(j->type, j->count);
    unsigned char *b = calloc(1, ext);
    if (j->type == MPI_BYTE) {
        memcpy(b, data, BYTES);
    } else {
        for (size_t k = 0; k < BYTES / 8; k++)
            memcpy(b + 16 * k, data + 8 * k, 8);
    }
    MPI_Request r;
    MPI_Isend(b, j->count, j->type, j->peer, 7, j->comm, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    atomic_fetch_add(&sends_done, 1);
    free(b);
    free(data);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    bool vector = argc > 1 && strcmp(argv[1], "vector") == 0;
    bm_test_current = "set-up";
    BM_CHECK_MSG(provided == MPI_THREAD_MULTIPLE, "provided %d, not MPI_THREAD_MULTIPLE", provided);
    BM_CHECK_MSG(size == 3, "%d ranks, run with 3", size);
    if (provided == MPI_THREAD_MULTIPLE && size == 3) {
        MPI_Datatype type = MPI_BYTE;
        int count = (int)BYTES;
        if (vector) {
            BYTES = 256 * 1024;
            MPI_Type_vector((int)BYTES / 8, 8, 16, MPI_BYTE, &type);
            MPI_Type_commit(&type);
            count = 1;
        }
        MPI_Comm ca, cb;
        MPI_Comm_dup(MPI_COMM_WORLD, &ca);
        MPI_Comm_dup(MPI_COMM_WORLD, &cb);
        /* connections up before the hook: a collective need not connect
         * rank 0 with both peers (ofi's rxm connects on first use), so rank 0
         * sends each peer one message of the size first */
        int x = 0;
        MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, ca);
        MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, cb);
        unsigned char *warm = calloc(1, BYTES);
        if (rank == 0) {
            MPI_Send(warm, (int)BYTES, MPI_BYTE, 1, 6, ca);
            MPI_Send(warm, (int)BYTES, MPI_BYTE, 2, 6, cb);
        } else {
            MPI_Recv(warm, (int)BYTES, MPI_BYTE, 0, 6, rank == 1 ? ca : cb, MPI_STATUS_IGNORE);
        }
        free(warm);
        uint64_t frags_before = __atomic_load_n(&bm_pml_g.tx_frags_free, __ATOMIC_RELAXED);
        uint64_t packed_before = __atomic_load_n(&bm_pml_g.pack_frags, __ATOMIC_RELAXED);
        bm_test_current = "two threads in the FRAG path at once";
        if (rank == 0)
            __atomic_store_n(&bm_pml_test_frag_hook, hook, __ATOMIC_RELEASE);
        int rounds_two = 0;
        for (int round = 0; round < ROUNDS; round++) {
            if (rank == 0) {
                atomic_store(&saw_two, 0);
                atomic_store(&sends_done, 0);
                atomic_store(&round_arm, 1);
                struct job a = {
                    .peer = 1, .round = round, .comm = ca, .type = type, .count = count};
                struct job b = {
                    .peer = 2, .round = round, .comm = cb, .type = type, .count = count};
                pthread_t th;
                pthread_create(&th, NULL, send_main, &b);
                send_main(&a);
                pthread_join(th, NULL);
                rounds_two += atomic_load(&saw_two);
            } else {
                unsigned char *got = malloc(BYTES), *want = malloc(BYTES);
                fill(want, rank, round);
                MPI_Recv(got, (int)BYTES, MPI_BYTE, 0, 7, rank == 1 ? ca : cb, MPI_STATUS_IGNORE);
                BM_CHECK_MSG(memcmp(got, want, BYTES) == 0, "round %d: rank %d got other bytes",
                             round, rank);
                free(got);
                free(want);
            }
        }
        if (rank == 0) {
            __atomic_store_n(&bm_pml_test_frag_hook, NULL, __ATOMIC_RELEASE);
            uint64_t frags_free =
                __atomic_load_n(&bm_pml_g.tx_frags_free, __ATOMIC_RELAXED) - frags_before;
            int max_in = __atomic_load_n(&bm_pml_g.frag_in_max, __ATOMIC_RELAXED);
            uint64_t packed =
                __atomic_load_n(&bm_pml_g.pack_frags, __ATOMIC_RELAXED) - packed_before;
            BM_CHECK_MSG(rounds_two == ROUNDS,
                         "in %d of %d rounds a second thread never entered the FRAG path while "
                         "the first was inside (at most %d at once): the FRAGs serialise",
                         ROUNDS - rounds_two, ROUNDS, max_in);
            BM_CHECK_MSG(frags_free >= 2 * ROUNDS,
                         "%llu FRAGs sent by threads without the progress lock, expected >= %d",
                         (unsigned long long)frags_free, 2 * ROUNDS);
            if (vector) /* sm: packed FRAGs, no single copy */
                BM_CHECK_MSG(packed >= 2 * ROUNDS, "%llu packed FRAGs sent, expected >= %d",
                             (unsigned long long)packed, 2 * ROUNDS);
            printf("rank 0: %d of %d rounds had two threads in the FRAG path at once (max %d); "
                   "%llu FRAGs sent without the progress lock; %llu packed\n",
                   rounds_two, ROUNDS, max_in, (unsigned long long)frags_free,
                   (unsigned long long)packed);
        }
        MPI_Comm_free(&ca);
        MPI_Comm_free(&cb);
        if (vector)
            MPI_Type_free(&type);
    }
    MPI_Finalize();
    return bm_test_summary("mt_frags");
}
