/* bm_mr: multiple-pair message rate and bandwidth (OSU osu_mbw_mr method).
 * With n ranks there are n/2 pairs: rank i < n/2 streams windows of
 * non-blocking sends (64 by default) to rank i + n/2, which acknowledges
 * each window with a 4-byte message. Each sender times its own loop; the
 * aggregate rate is all messages of all pairs divided by the slowest sender's
 * time, reported as messages per second and MB/s (1e6 bytes per second).
 * Receivers check every window slot's data pattern after the timed loop. */
#include "bench_common.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    struct bm_bench_opts opts;
    int rank, nprocs, exit_code;
    if (bm_bench_start(&argc, &argv, "bm_mr", 1, &opts, &rank, &nprocs, &exit_code) != 0)
        return exit_code;
    int pairs = nprocs / 2;
    char what[96];
    snprintf(what, sizeof(what), "message rate and bandwidth, %d pair%s", pairs,
             pairs == 1 ? "" : "s");
    bm_bench_header(&opts, rank, what, "size(B)  bandwidth(MB/s, 1e6 B/s)  rate(messages/s)");

    int w = opts.window;
    int sender = rank < pairs;
    int receiver = rank >= pairs && rank < 2 * pairs;
    int peer = sender ? rank + pairs : rank - pairs;
    unsigned char *buf = (sender || receiver) ? bm_bench_alloc(bm_bench_window_bytes(&opts)) : NULL;
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
        if (sender) {
            bm_bench_slots_fill(buf, slots, size, plan.seed, rank);
        } else if (receiver) {
            memset(buf, 0xA5, size * (size_t)slots);
        }
        double elapsed = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        if (sender) {
            double t0 = MPI_Wtime();
            for (long i = 0; i < plan.warmup + plan.iters; i++) {
                if (i == plan.warmup)
                    t0 = bm_bench_plan_timed(&opts, MPI_Wtime() - t0, &plan);
                bm_bench_window_send(&win, w, buf, slots, size, peer, 300);
            }
            elapsed = MPI_Wtime() - t0;
        } else if (receiver) {
            for (long i = 0; i < plan.warmup + plan.iters; i++) {
                if (i == plan.warmup)
                    bm_bench_plan_timed(&opts, 0, &plan);
                bm_bench_window_recv(&win, w, buf, slots, size, peer, 300);
            }
            failed = bm_bench_slots_check(&opts, rank, buf, slots, size, plan.seed, peer) != 0;
        } else {
            bm_bench_plan_timed(&opts, 0, &plan);
        }
        double slowest = 0;
        MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            prev_iter = slowest / (double)plan.iters;
            double msgs = (double)pairs * w * (double)plan.iters;
            printf("%-10zu %12.2f %14.0f\n", size, msgs * (double)size / slowest / 1e6,
                   msgs / slowest);
            fflush(stdout);
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
