/* bm_bw: one-way streaming bandwidth from rank 0 to rank 1 (OSU osu_bw
 * method). Per iteration rank 0 starts a window of non-blocking sends (64 by
 * default), rank 1 has posted as many non-blocking receives, and rank 1
 * answers with a 4-byte acknowledgement once all arrived. MB/s is 1e6 bytes
 * per second over the timed iterations, measured on the sender from the first
 * send to the last acknowledgement. Every message in the window has its own
 * buffer on both sides and its own data pattern, checked after the timed loop,
 * so misdelivered, reordered or uncopied messages fail the run. */
#include "bench_common.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    struct bm_bench_opts opts;
    int rank, nprocs, exit_code;
    if (bm_bench_start(&argc, &argv, "bm_bw", 1, &opts, &rank, &nprocs, &exit_code) != 0)
        return exit_code;
    bm_bench_header(&opts, rank, "unidirectional bandwidth, rank 0 -> rank 1",
                    "size(B)  bandwidth(MB/s, 1e6 B/s)");

    int w = opts.window;
    unsigned char *buf = rank < 2 ? bm_bench_alloc(bm_bench_window_bytes(&opts)) : NULL;
    struct bm_bench_window win;
    bm_bench_window_init(&win, w);
    double prev_iter = 0;
    size_t prev_size = 0;
    int failed = 0;

    for (size_t size = opts.min_size; size <= opts.max_size; size = bm_bench_size_next(size)) {
        struct bm_bench_plan plan;
        if (bm_bench_plan_size(&opts, size, prev_size, prev_iter, &plan))
            break;
        int slots = bm_bench_slots(&opts, size);
        if (rank == 0) {
            bm_bench_slots_fill(buf, slots, size, plan.seed, 0);
        } else if (rank == 1) {
            memset(buf, 0xA5, size * (size_t)slots);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (rank == 0) {
            for (long i = 0; i < plan.warmup + plan.iters; i++) {
                if (i == plan.warmup)
                    t0 = bm_bench_plan_timed(&opts, MPI_Wtime() - t0, &plan);
                bm_bench_window_send(&win, w, buf, slots, size, 1, 100);
            }
            double elapsed = MPI_Wtime() - t0;
            prev_iter = elapsed / (double)plan.iters;
            double mbs = (double)size * w * (double)plan.iters / elapsed / 1e6;
            printf("%-10zu %12.2f\n", size, mbs);
            fflush(stdout);
        } else if (rank == 1) {
            for (long i = 0; i < plan.warmup + plan.iters; i++) {
                if (i == plan.warmup)
                    bm_bench_plan_timed(&opts, 0, &plan);
                bm_bench_window_recv(&win, w, buf, slots, size, 0, 100);
            }
            failed = bm_bench_slots_check(&opts, rank, buf, slots, size, plan.seed, 0) != 0;
        } else {
            bm_bench_plan_timed(&opts, 0, &plan);
        }
        bm_bench_check_all(failed);
        prev_size = size;
        if (size == opts.max_size)
            break;
    }
    free(buf);
    bm_bench_window_fini(&win);
    MPI_Finalize();
    return 0;
}
