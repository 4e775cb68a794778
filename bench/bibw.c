/* bm_bibw: bidirectional bandwidth between ranks 0 and 1 (OSU osu_bibw
 * method). Per iteration both ranks post a window of non-blocking receives
 * (64 by default), start as many non-blocking sends to each other, and wait
 * for all of them. MB/s (1e6 bytes per second) counts the bytes of both
 * directions, measured on rank 0. Every message in the window has its own
 * buffer and data pattern on both sides, checked after the timed loop. */
#include "bench_common.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    struct bm_bench_opts opts;
    int rank, nprocs, exit_code;
    if (bm_bench_start(&argc, &argv, "bm_bibw", 1, &opts, &rank, &nprocs, &exit_code) != 0)
        return exit_code;
    bm_bench_header(&opts, rank, "bidirectional bandwidth, ranks 0 <-> 1, both directions summed",
                    "size(B)  bandwidth(MB/s, 1e6 B/s)");

    int w = opts.window;
    int active = rank < 2;
    int peer = rank == 0 ? 1 : 0;
    size_t bytes = bm_bench_window_bytes(&opts);
    unsigned char *sbuf = active ? bm_bench_alloc(bytes) : NULL;
    unsigned char *rbuf = active ? bm_bench_alloc(bytes) : NULL;
    struct bm_bench_window win;
    bm_bench_window_init(&win, 2 * w);
    double prev_iter = 0;
    size_t prev_size = 0;
    int failed = 0;

    for (size_t size = opts.min_size; size <= opts.max_size; size = bm_bench_size_next(size)) {
        struct bm_bench_plan plan;
        if (bm_bench_plan_size(&opts, size, prev_size, prev_iter, &plan))
            break;
        int slots = bm_bench_slots(&opts, size);
        if (active) {
            bm_bench_slots_fill(sbuf, slots, size, plan.seed, rank);
            memset(rbuf, 0xA5, size * (size_t)slots);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (active) {
            for (long i = 0; i < plan.warmup + plan.iters; i++) {
                if (i == plan.warmup)
                    t0 = bm_bench_plan_timed(&opts, MPI_Wtime() - t0, &plan);
                for (int k = 0; k < w; k++)
                    MPI_Irecv(rbuf + (size_t)(k % slots) * size, (int)size, MPI_BYTE, peer, 200,
                              MPI_COMM_WORLD, &win.reqs[k]);
                for (int k = 0; k < w; k++)
                    MPI_Isend(sbuf + (size_t)(k % slots) * size, (int)size, MPI_BYTE, peer, 200,
                              MPI_COMM_WORLD, &win.reqs[w + k]);
                MPI_Waitall(2 * w, win.reqs, win.stats);
            }
            double elapsed = MPI_Wtime() - t0;
            if (rank == 0) {
                prev_iter = elapsed / (double)plan.iters;
                double mbs = 2.0 * (double)size * w * (double)plan.iters / elapsed / 1e6;
                printf("%-10zu %12.2f\n", size, mbs);
                fflush(stdout);
            }
            failed = bm_bench_slots_check(&opts, rank, rbuf, slots, size, plan.seed, peer) != 0;
        } else {
            bm_bench_plan_timed(&opts, 0, &plan);
        }
        bm_bench_check_all(failed);
        prev_size = size;
        if (size == opts.max_size)
            break;
    }
    free(sbuf);
    free(rbuf);
    bm_bench_window_fini(&win);
    MPI_Finalize();
    return 0;
}
