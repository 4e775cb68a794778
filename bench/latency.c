/* bm_latency: ping-pong latency between ranks 0 and 1 (OSU osu_latency
 * method). Rank 0 sends, rank 1 receives and sends back with blocking
 * MPI_Send/MPI_Recv; the reported value is half the mean round trip in
 * microseconds. Each rank sends its own data pattern and checks what it
 * received after the timed loop, so a stack that skips the copy fails. Other
 * ranks, if any, only take part in the collectives. */
#include "bench_common.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    struct bm_bench_opts opts;
    int rank, nprocs, exit_code;
    if (bm_bench_start(&argc, &argv, "bm_latency", 0, &opts, &rank, &nprocs, &exit_code) != 0)
        return exit_code;
    bm_bench_header(&opts, rank, "ping-pong latency, half round trip", "size(B)  latency(us)");

    unsigned char *sbuf = bm_bench_alloc(opts.max_size);
    unsigned char *rbuf = bm_bench_alloc(opts.max_size);
    int peer = rank == 0 ? 1 : 0;
    int active = rank < 2;
    double prev_iter = 0;
    size_t prev_size = 0;
    int failed = 0;

    for (size_t size = opts.min_size; size <= opts.max_size; size = bm_bench_size_next(size)) {
        struct bm_bench_plan plan;
        if (bm_bench_plan_size(&opts, size, prev_size, prev_iter, &plan))
            break;
        if (active) {
            bm_bench_pattern_fill(sbuf, size, size, plan.seed, 0, rank);
            memset(rbuf, 0xA5, size);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (rank == 0) {
            for (long i = 0; i < plan.warmup + plan.iters; i++) {
                if (i == plan.warmup)
                    t0 = bm_bench_plan_timed(&opts, MPI_Wtime() - t0, &plan);
                MPI_Send(sbuf, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        } else if (rank == 1) {
            for (long i = 0; i < plan.warmup + plan.iters; i++) {
                if (i == plan.warmup)
                    bm_bench_plan_timed(&opts, 0, &plan);
                MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(sbuf, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            }
        } else {
            bm_bench_plan_timed(&opts, 0, &plan);
        }
        if (rank == 0) {
            double elapsed = MPI_Wtime() - t0;
            prev_iter = elapsed / (double)plan.iters;
            printf("%-10zu %12.3f\n", size, elapsed * 1e6 / (2.0 * (double)plan.iters));
            fflush(stdout);
        }
        if (active &&
            bm_bench_pattern_check(&opts, rank, rbuf, size, size, plan.seed, 0, peer) != 0)
            failed = 1;
        /* Every rank learns about a data error before the next size, so the
         * job ends at once instead of hanging in the next exchange. */
        bm_bench_check_all(failed);
        prev_size = size;
        if (size == opts.max_size)
            break;
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
