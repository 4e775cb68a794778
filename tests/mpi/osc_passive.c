/* Passive-target progress: rank 1 computes for a second without calling
 * MPI while rank 0 locks rank 1's window, puts 4 KiB into it and unlocks.
 * argv[1] says which path the window takes and what must happen:
 *   fast  the window is in a shared segment (MPI_Win_allocate among the
 *         processes of one node): lock, put and unlock are loads, stores
 *         and atomics on rank 1's memory, so rank 0 finishes well within
 *         the second, whatever rank 1 does;
 *   wait  the operations go to rank 1's agent (tcp, or sm without the
 *         shared segment), which runs only inside rank 1's progress: with
 *         no progress thread, rank 0 finishes only once rank 1 calls MPI
 *         again, after its second of computing.
 * Both print the time taken. The data is checked in both. */
#include "osc_common.h"

#include <time.h>

#define COMPUTE_S 1.0
#define LEN       4096

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int fast = argc > 1 && strcmp(argv[1], "fast") == 0;
    char *base;
    MPI_Win win;
    MPI_Win_allocate(LEN, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    memset(base, 0, LEN);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        /* a second of work without any MPI call */
        double t0 = now();
        volatile double x = 0;
        while (now() - t0 < COMPUTE_S)
            x += 1.0;
        MPI_Barrier(MPI_COMM_WORLD);
        size_t bad = bm_test_bad_bytes(base, LEN, 77);
        BM_CHECK_MSG(bad == 0, "rank 1: %zu bad bytes from rank 0's put", bad);
    } else if (rank == 0) {
        char src[LEN];
        bm_test_fill(src, LEN, 77);
        double t0 = now();
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
        MPI_Put(src, LEN, MPI_BYTE, 1, 0, LEN, MPI_BYTE, win);
        MPI_Win_unlock(1, win);
        double dt = now() - t0;
        printf("passive target: lock/put/unlock of %d bytes took %.3f s while the target "
               "computed %.1f s without calling MPI (%s path, no progress thread)\n",
               LEN, dt, COMPUTE_S, fast ? "shared-memory" : "agent");
        if (fast)
            BM_CHECK_MSG(dt < COMPUTE_S / 2,
                         "rank 0: %.3f s: the shared-memory path waited for "
                         "the target",
                         dt);
        else
            BM_CHECK_MSG(dt > COMPUTE_S * 0.8,
                         "rank 0: %.3f s: the agent answered while its "
                         "process computed (is a progress thread on?)",
                         dt);
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_free(&win);
    MPI_Finalize();
    return bm_test_summary("osc_passive");
}
