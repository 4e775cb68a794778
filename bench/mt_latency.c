/* bm_mt_latency: ping-pong latency with several thread pairs at once
 * (MPI_THREAD_MULTIPLE). Ranks 0 and 1 each run P threads (-p, default 1);
 * thread t of rank 0 ping-pongs with thread t of rank 1 on a communicator of
 * their own (MPI_Comm_dup of MPI_COMM_WORLD per pair), so pairs never match
 * each other's messages. All pairs start at once (bm_bench_pairs_t0) and each
 * thread times its loop from there; reported per size:
 * the mean half round trip over the pairs and the slowest pair's, and the
 * fewest timed iterations a pair ran (with a time budget, -t, a pair whose
 * warm-up says the full count would take longer runs fewer). With -p 1
 * this is the single-pair latency of a program that asked for
 * MPI_THREAD_MULTIPLE (what its locks cost). Every received message is
 * checked after the timed loop. Options and MPI_Init_thread come from
 * bench_common.c (BM_BENCH_THREADS). MPI standard and POSIX threads only:
 * builds unchanged with bmcc, mpicc.openmpi and mpicc.mpich. Exits with a
 * message when the library does not provide MPI_THREAD_MULTIPLE. */
#include "bench_common.h"

#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PAIRS BM_BENCH_PAIRS_MAX

static int rank, pairs = 1;
static long iters, warmup;
static MPI_Comm comms[MAX_PAIRS];
static double lat_us[MAX_PAIRS];
static long ran[MAX_PAIRS]; /* timed iterations each pair ran (fewer with -t) */
static struct bm_bench_opts opts;
static int bad[MAX_PAIRS];

struct job {
    int t;
    size_t size;
};

static void *pair_main(void *arg)
{
    struct job *j = arg;
    int t = j->t;
    size_t size = j->size;
    char *sbuf = malloc(size ? size : 1), *rbuf = malloc(size ? size : 1);
    if (!sbuf || !rbuf) {
        fprintf(stderr, "bm_mt_latency: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i < size; i++)
        sbuf[i] = (char)(i * 7 + (size_t)t * 13 + (size_t)rank);
    memset(rbuf, 0, size ? size : 1);
    MPI_Comm c = comms[t];
    int peer = 1 - rank;
    double t0 = MPI_Wtime();
    long n = warmup;
    for (int phase = 0; phase < 2; phase++) {
        for (long i = 0; i < n; i++) {
            if (rank == 0) {
                MPI_Send(sbuf, (int)size, MPI_CHAR, peer, 1, c);
                MPI_Recv(rbuf, (int)size, MPI_CHAR, peer, 1, c, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(rbuf, (int)size, MPI_CHAR, peer, 1, c, MPI_STATUS_IGNORE);
                MPI_Send(sbuf, (int)size, MPI_CHAR, peer, 1, c);
            }
        }
        if (phase == 0) {
            n = bm_bench_pair_iters(&opts, c, peer, MPI_Wtime() - t0, warmup, iters);
            t0 = bm_bench_pairs_t0();
        }
    }
    double elapsed = MPI_Wtime() - t0;
    lat_us[t] = elapsed / (double)n / 2 * 1e6;
    ran[t] = n;
    for (size_t i = 0; i < size; i++)
        if (rbuf[i] != (char)(i * 7 + (size_t)t * 13 + (size_t)peer)) {
            bad[t] = 1;
            break;
        }
    free(sbuf);
    free(rbuf);
    return NULL;
}

int main(int argc, char **argv)
{
    int nprocs, exit_code, rc = 0;
    if (bm_bench_start(&argc, &argv, "bm_mt_latency", BM_BENCH_THREADS, &opts, &rank, &nprocs,
                       &exit_code) != 0)
        return exit_code;
    pairs = opts.pairs;
    iters = opts.iters;
    warmup = opts.warmup;
    size_t min_size = opts.min_size, max_size = opts.max_size;
    for (int t = 0; t < pairs; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    if (rank == 0) {
        printf("# bm_mt_latency: ping-pong latency, %d thread pair%s (MPI_THREAD_MULTIPLE), "
               "half round trip\n",
               pairs, pairs == 1 ? "" : "s");
        printf("# ranks %d, iterations %ld per pair, warm-up %ld", nprocs, iters, warmup);
        if (opts.budget > 0)
            printf(", time budget %.3g s per pair and size", opts.budget);
        printf("\n# size(B)  mean(us)  slowest(us)  iterations(fewest of a pair)\n");
    }
    for (size_t size = min_size; size <= max_size; size = size ? size * 2 : 1) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank < 2) {
            pthread_t th[MAX_PAIRS];
            struct job jobs[MAX_PAIRS];
            for (int t = 0; t < pairs; t++) {
                jobs[t] = (struct job){t, size};
                if (t > 0)
                    pthread_create(&th[t], NULL, pair_main, &jobs[t]);
            }
            pair_main(&jobs[0]);
            for (int t = 1; t < pairs; t++)
                pthread_join(th[t], NULL);
        }
        int mybad = 0, anybad = 0;
        double sum = 0, worst = 0;
        long fewest = iters;
        for (int t = 0; t < pairs && rank < 2; t++) {
            mybad |= bad[t];
            if (ran[t] < fewest)
                fewest = ran[t];
            sum += lat_us[t];
            if (lat_us[t] > worst)
                worst = lat_us[t];
        }
        MPI_Allreduce(&mybad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (anybad) {
            if (rank == 0)
                fprintf(stderr, "bm_mt_latency: wrong data received at %zu bytes\n", size);
            rc = 3;
            break;
        }
        if (rank == 0) {
            printf("%-10zu %9.3f %12.3f %12ld\n", size, sum / pairs, worst, fewest);
            fflush(stdout);
        }
        if (size == max_size)
            break;
    }
    for (int t = 0; t < pairs; t++)
        MPI_Comm_free(&comms[t]);
    MPI_Finalize();
    return rc;
}
