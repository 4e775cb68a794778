/* bm_mt_mr: aggregate message rate of several thread pairs at once
 * (MPI_THREAD_MULTIPLE), the OSU osu_mbw_mr method with threads in place of
 * processes. Ranks 0 and 1 each run P threads (-p, default 1); thread t of
 * rank 0 streams windows of W non-blocking sends (-W, default 64) to thread
 * t of rank 1 on a communicator of its own, which posts W receives, waits
 * for them and acknowledges the window with a 4-byte message. Each sender
 * times its own loop; the rate is all messages of all pairs divided by the
 * slowest sender's time, counted from one start for all pairs (both ranks'
 * pairs leave bm_bench_pair_iters together and take bm_bench_pairs_t0), so
 * that it is the span in which the pairs ran at once (with a time budget, -t, a pair whose warm-up
 * says the full count would take longer runs fewer windows; the line shows the fewest a pair ran).
 * With -p 1, 2 and 4 it shows whether pairs that share nothing but the process scale or serialise
 * on a lock. With -P pair t's receiving thread is the one thread of rank
 * 1 + t, so rank 0's threads each stream to a peer of their own (with a
 * large -m: several threads' rendezvous sends to different peers at once,
 * the per-peer send state of issue 18). With -v the senders' messages are
 * a vector of 8-byte blocks 16 bytes apart (a derived datatype: packed
 * fragments, no single copy), received contiguous. Every window slot's data is checked after the
 * timed loop. Options and MPI_Init_thread come from bench_common.c (BM_BENCH_THREADS |
 * BM_BENCH_WINDOWED). MPI standard and POSIX threads only: builds unchanged with bmcc,
 * mpicc.openmpi and mpicc.mpich. */
#include "bench_common.h"

#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PAIRS  BM_BENCH_PAIRS_MAX
#define MAX_WINDOW 1024

static int rank, pairs = 1, window = 64, peers, vec;
static long iters, warmup;
static MPI_Comm comms[MAX_PAIRS];
static double secs[MAX_PAIRS];
static long ran[MAX_PAIRS]; /* timed windows each pair ran (fewer with -t) */
static struct bm_bench_opts opts;
static int bad[MAX_PAIRS];

static char pattern(size_t i, int slot, int t)
{
    return (char)(i * 31 + (size_t)slot * 7 + (size_t)t * 3 + 1);
}

struct job {
    int t;
    size_t size;
};

static void *pair_main(void *arg)
{
    struct job *j = arg;
    int t = j->t;
    size_t size = j->size, stride = size ? size : 1;
    /* -v: a sender's slot holds its size in 8-byte blocks 16 apart */
    int sendvec = vec && rank == 0;
    if (sendvec)
        stride *= 2;
    char *buf = malloc(stride * (size_t)window);
    MPI_Datatype type = MPI_CHAR;
    int count = (int)size;
    if (sendvec) {
        MPI_Type_vector((int)(size / 8), 8, 16, MPI_CHAR, &type);
        MPI_Type_commit(&type);
        count = 1;
    }
    MPI_Request reqs[MAX_WINDOW];
    int ack = 0;
    if (!buf) {
        fprintf(stderr, "bm_mt_mr: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) {
        for (int s = 0; s < window; s++)
            for (size_t i = 0; i < size; i++)
                buf[(size_t)s * stride + (sendvec ? i / 8 * 16 + i % 8 : i)] = pattern(i, s, t);
    } else {
        memset(buf, 0, stride * (size_t)window);
    }
    MPI_Comm c = comms[t];
    int far = rank > 0 ? 0 : peers ? 1 + t : 1; /* the pair's other rank */
    double t0 = MPI_Wtime();
    long n = warmup;
    for (int phase = 0; phase < 2; phase++) {
        for (long it = 0; it < n; it++) {
            if (rank == 0) {
                for (int s = 0; s < window; s++)
                    MPI_Isend(buf + (size_t)s * stride, count, type, far, 10, c, &reqs[s]);
                MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
                MPI_Recv(&ack, 1, MPI_INT, far, 11, c, MPI_STATUS_IGNORE);
            } else {
                for (int s = 0; s < window; s++)
                    MPI_Irecv(buf + (size_t)s * stride, (int)size, MPI_CHAR, far, 10, c, &reqs[s]);
                MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
                MPI_Send(&ack, 1, MPI_INT, far, 11, c);
            }
        }
        if (phase == 0) {
            n = bm_bench_pair_iters(&opts, c, far, MPI_Wtime() - t0, warmup, iters);
            t0 = bm_bench_pairs_t0();
        }
    }
    secs[t] = MPI_Wtime() - t0;
    ran[t] = n;
    if (rank > 0)
        for (int s = 0; s < window && !bad[t]; s++)
            for (size_t i = 0; i < size; i++)
                if (buf[(size_t)s * stride + i] != pattern(i, s, t)) {
                    bad[t] = 1;
                    break;
                }
    if (sendvec)
        MPI_Type_free(&type);
    free(buf);
    return NULL;
}

int main(int argc, char **argv)
{
    int nprocs, exit_code, rc = 0;
    if (bm_bench_start(&argc, &argv, "bm_mt_mr",
                       BM_BENCH_THREADS | BM_BENCH_WINDOWED | BM_BENCH_PEERS, &opts, &rank, &nprocs,
                       &exit_code) != 0)
        return exit_code;
    if (opts.window > MAX_WINDOW) {
        if (rank == 0)
            fprintf(stderr, "bm_mt_mr: -W %d is over the largest window, %d\n", opts.window,
                    MAX_WINDOW);
        MPI_Finalize();
        return 2;
    }
    pairs = opts.pairs;
    peers = opts.peers;
    vec = opts.vector;
    window = opts.window;
    iters = opts.iters;
    warmup = opts.warmup;
    size_t min_size = opts.min_size, max_size = opts.max_size;
    if (vec && (min_size == 0 || min_size % 8 != 0)) {
        if (rank == 0)
            fprintf(stderr, "bm_mt_mr: -v needs sizes that are multiples of 8 (-m %zu:%zu)\n",
                    min_size, max_size);
        MPI_Finalize();
        return 2;
    }
    for (int t = 0; t < pairs; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    if (rank == 0) {
        printf("# bm_mt_mr: message rate, %d thread pair%s (MPI_THREAD_MULTIPLE), window %d\n",
               pairs, pairs == 1 ? "" : "s", window);
        printf("# ranks %d, windows %ld per pair, warm-up %ld", nprocs, iters, warmup);
        if (peers)
            printf(", pair t's receiver on rank 1 + t (-P)");
        if (vec)
            printf(", sent as a vector of 8-byte blocks 16 apart (-v)");
        if (opts.budget > 0)
            printf(", time budget %.3g s per pair and size", opts.budget);
        printf("\n# size(B)  rate(messages/s)  per pair(messages/s)  windows(fewest of a pair)  "
               "MB/s(all pairs)\n");
    }
    for (size_t size = min_size; size <= max_size; size = size ? size * 2 : 1) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (peers && rank > 0 && rank <= pairs) {
            struct job job = {rank - 1, size};
            pair_main(&job);
        } else if (rank == 0 || (rank == 1 && !peers)) {
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
        double slowest = 0, msgs = 0;
        long fewest = iters;
        for (int t = 0; t < pairs; t++) {
            mybad |= bad[t]; /* 0 for pairs not this rank's */
            msgs += (double)window * (double)ran[t];
            if (ran[t] < fewest)
                fewest = ran[t];
            if (secs[t] > slowest)
                slowest = secs[t];
        }
        MPI_Allreduce(&mybad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (anybad) {
            if (rank == 0)
                fprintf(stderr, "bm_mt_mr: wrong data received at %zu bytes\n", size);
            rc = 3;
            break;
        }
        if (rank == 0) {
            printf("%-10zu %14.0f %14.0f %14ld %14.1f\n", size, msgs / slowest,
                   msgs / slowest / pairs, fewest, msgs * (double)size / slowest / 1e6);
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
