/* Passive-target progress: rank 1 computes for a second without calling
 * MPI while rank 0 locks rank 1's window, puts 4 KiB into it and unlocks;
 * the same three calls are first timed while rank 1 waits inside MPI (the
 * time of the transfer itself). argv[1] says what must happen, argv[2]
 * names the path for the message:
 *   fast  the operations complete while rank 1 computes: the window is in
 *         a shared segment (lock, put and unlock are atomics, stores and
 *         loads on rank 1's memory), or the progress thread
 *         (BM_PML_PROGRESS_THREAD=1) runs rank 1's agent: well within the
 *         second (under half of it: on a loaded machine the target's threads
 *         wait for a core, measured up to 0.06 s at load 65 on 2 cores);
 *   wait  the operations go to rank 1's agent with no progress thread: the
 *         agent runs only inside rank 1's own progress, so rank 0 finishes
 *         only once rank 1 calls MPI again, after its second of computing.
 * It prints both times. The data is checked. */
#include "osc_common.h"

#include <stdlib.h>
#include <time.h>

#define COMPUTE_S 1.0
#define LEN       4096
#define BASE_RUNS 20

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void lock_put_unlock(MPI_Win win, const char *src)
{
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
    MPI_Put(src, LEN, MPI_BYTE, 1, 0, LEN, MPI_BYTE, win);
    MPI_Win_unlock(1, win);
}

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int fast = argc > 1 && strcmp(argv[1], "fast") == 0;
    const char *path = argc > 2 ? argv[2] : "?";
    const char *thread = getenv("BM_PML_PROGRESS_THREAD");
    int thread_on = thread && strcmp(thread, "0") != 0;
    char *base;
    MPI_Win win;
    MPI_Win_allocate(LEN, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    memset(base, 0, LEN);
    char src[LEN];
    bm_test_fill(src, LEN, 77);
    /* the time of the transfer: rank 1 waits inside MPI */
    double base_t = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        double t0 = now();
        for (int i = 0; i < BASE_RUNS; i++)
            lock_put_unlock(win, src);
        base_t = (now() - t0) / BASE_RUNS;
    }
    MPI_Barrier(MPI_COMM_WORLD);
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
        double t0 = now();
        lock_put_unlock(win, src);
        double dt = now() - t0;
        printf("passive target (%s path, progress thread %s): lock/put/unlock of %d bytes took "
               "%.6f s while the target waited in MPI, %.6f s while it computed %.1f s without "
               "calling MPI\n",
               path, thread_on ? "on" : "off", LEN, base_t, dt, COMPUTE_S);
        if (fast)
            BM_CHECK_MSG(dt < COMPUTE_S / 2, "rank 0: %.3f s: waited for the computing target", dt);
        else
            BM_CHECK_MSG(dt > COMPUTE_S * 0.8,
                         "rank 0: %.3f s: the agent answered while its process computed", dt);
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_free(&win);
    MPI_Finalize();
    return bm_test_summary("osc_passive");
}
