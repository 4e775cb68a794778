/* Synchronisation sends no more messages than needed: the active messages
 * each process sends to each other one (bm_pml_am_sent, so this program
 * links the library's internals) are counted around fence, PSCW and lock
 * epochs in which every rank puts K 8-byte values to the next rank.
 * argv[1] names the path to the targets:
 *   agent  (tcp, BM_MPI_OSC_BATCH=0) every put is one message to the
 *          target's agent, and nothing else travels as an active message
 *          per operation:
 *          fence  K to the next rank, 0 to the others (the counts travel
 *                 in one reduce-scatter, point to point);
 *          PSCW   K + 1 (COMPLETE) to the next rank, 1 (POST) to the
 *                 previous one;
 *          lock   K + 2 (LOCK, UNLOCK) to the next rank, 2 (the grant and
 *                 the answer to UNLOCK) to the previous one;
 *   batch  (tcp, batches on) the K puts wait and travel in one BATCH with
 *          the next message: fence 1, PSCW 1 (puts and COMPLETE) and 1,
 *          lock 2 (LOCK; puts and UNLOCK) and 2;
 *   rdma   (sm single copy, BM_MPI_OSC_SHM=off) the puts are transport
 *          operations: fence 0, PSCW 1 and 1, lock 2 and 2;
 *   shm    (sm, the window in one shared segment) loads and stores: fence
 *          0, PSCW 1 and 1, lock 0 and 0 (the lock word is in the segment).
 * Then a put and a get of BIG bytes (more than one active message of tcp
 * carries) under a lock: on tcp the data are PML messages, so only
 * LOCK, PUT_RNDV, GET_RNDV and UNLOCK go to the next rank and the grant,
 * the put's answer and the answer to UNLOCK come back (over the agent
 * the put alone would be 3 messages and the get 3 answers); rdma: 2 and
 * 2; shm: 0 and 0 (copies of more than BM_MPI_OSC_STREAM_COPY_MIN: with
 * streaming stores).
 * The data is checked after each epoch. */
#include "osc_common.h"
#include "pml/pml.h"

#include <stdint.h>

#define K   16
#define BIG (3 << 20)

static int rank, nranks, agent;
static uint32_t *before;
static int *worlds;

static void mark(void)
{
    for (int r = 0; r < nranks; r++)
        before[r] = r == rank ? 0 : bm_pml_am_sent(worlds[r]);
}

/* The messages sent to each rank since mark(), against the expected counts
 * to the next and the previous rank (0 to every other). */
static void expect(const char *what, uint32_t to_next, uint32_t to_prev)
{
    int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    for (int r = 0; r < nranks; r++) {
        if (r == rank)
            continue;
        uint32_t got = bm_pml_am_sent(worlds[r]) - before[r];
        uint32_t want = r == next ? to_next : r == prev ? to_prev : 0;
        if (next == prev && r == next)
            want = to_next + to_prev;
        BM_CHECK_MSG(got == want, "rank %d, %s: %u active messages to rank %d, expected %u", rank,
                     what, got, r, want);
    }
}

static void puts_to_next(MPI_Win win, int64_t round)
{
    int next = (rank + 1) % nranks;
    for (int i = 0; i < K; i++) {
        int64_t v = round * 1000 + rank * K + i;
        MPI_Put(&v, 1, MPI_INT64_T, next, i, 1, MPI_INT64_T, win);
    }
}

static void check_from_prev(const int64_t *base, int64_t round, const char *what)
{
    int prev = (rank + nranks - 1) % nranks, bad = 0;
    for (int i = 0; i < K; i++)
        bad += base[i] != round * 1000 + prev * K + i;
    BM_CHECK_MSG(bad == 0, "rank %d, %s: %d wrong values from rank %d", rank, what, bad, prev);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    agent = argc > 1 && strcmp(argv[1], "agent") == 0;
    int batch = argc > 1 && strcmp(argv[1], "batch") == 0;
    int shm = argc > 1 && strcmp(argv[1], "shm") == 0;
    before = calloc((size_t)nranks, sizeof(*before));
    worlds = calloc((size_t)nranks, sizeof(*worlds));
    for (int r = 0; r < nranks; r++)
        worlds[r] = r; /* MPI_COMM_WORLD */
    int64_t *base;
    MPI_Win win;
    MPI_Win_allocate(K * 8 + BIG, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    uint32_t per_put = agent ? K : batch ? 1 : 0;

    bm_test_current = "fence";
    MPI_Win_fence(0, win);
    mark();
    puts_to_next(win, 1);
    MPI_Win_fence(0, win);
    expect("fence epoch", per_put, 0);
    check_from_prev(base, 1, "fence");
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);

    bm_test_current = "PSCW";
    MPI_Group world, next_g, prev_g;
    int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &next, &next_g);
    MPI_Group_incl(world, 1, &prev, &prev_g);
    mark();
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_post(prev_g, 0, win);
    MPI_Win_start(next_g, 0, win);
    puts_to_next(win, 2);
    MPI_Win_complete(win);
    MPI_Win_wait(win);
    expect("PSCW epoch", batch ? 1 : per_put + 1, 1);
    check_from_prev(base, 2, "PSCW");
    MPI_Group_free(&next_g);
    MPI_Group_free(&prev_g);
    MPI_Group_free(&world);

    bm_test_current = "lock";
    mark(); /* before the barrier: this rank's agent answers once others leave it */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, win);
    puts_to_next(win, 3);
    MPI_Win_unlock(next, win);
    MPI_Barrier(MPI_COMM_WORLD); /* every target answered its origin */
    expect("lock epoch", shm ? 0 : batch ? 2 : per_put + 2, shm ? 0 : 2);
    check_from_prev(base, 3, "lock");

    bm_test_current = "large";
    unsigned char *out = malloc(BIG), *in = malloc(BIG);
    for (size_t i = 0; i < BIG; i++)
        out[i] = (unsigned char)(i * 7 + (size_t)rank);
    mark();
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, win);
    MPI_Put(out, BIG, MPI_BYTE, next, K, BIG, MPI_BYTE, win);
    MPI_Win_flush(next, win);
    MPI_Get(in, BIG, MPI_BYTE, next, K, BIG, MPI_BYTE, win);
    MPI_Win_unlock(next, win);
    MPI_Barrier(MPI_COMM_WORLD);
    expect("large put and get", agent || batch ? 4 : shm ? 0 : 2, agent || batch ? 3 : shm ? 0 : 2);
    BM_CHECK_MSG(memcmp(in, out, BIG) == 0, "rank %d: the get did not read back the put", rank);
    int bad = 0;
    for (size_t i = 0; i < BIG; i++)
        bad += ((unsigned char *)(base + K))[i] != (unsigned char)(i * 7 + (size_t)prev);
    BM_CHECK_MSG(bad == 0, "rank %d: %d wrong bytes of rank %d's large put", rank, bad, prev);
    free(out);
    free(in);

    MPI_Win_free(&win);
    free(before);
    free(worlds);
    MPI_Finalize();
    return bm_test_summary(agent   ? "osc_msgs agent"
                           : batch ? "osc_msgs batch"
                           : shm   ? "osc_msgs shm"
                                   : "osc_msgs rdma");
}
