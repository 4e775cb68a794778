/* bm_coll: latency of one collective (OSU osu_barrier/osu_bcast/... method).
 * For each size every rank times each call on its own and a barrier
 * separates the iterations (so a rooted collective cannot overlap with the
 * next); the line shows the mean time per call averaged over the ranks, and
 * the lowest and highest per-rank means, in microseconds. Reductions use
 * MPI_FLOAT sums as OSU does (size / 4 elements); the other collectives
 * move MPI_CHAR blocks of size bytes per rank. After the timed loop one
 * more call with a known pattern is checked on every rank, so a fast but
 * wrong collective fails (exit 3). Only the MPI standard is used.
 *
 *   bm_coll -c barrier|bcast|reduce|allreduce|allgather|alltoall|gather|scatter
 *           [-m [MIN:]MAX] [-i ITERS] [-w WARMUP] [-t SECONDS] [-T SECONDS] */
#include "bench_common.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* OSU's collective defaults: 1000 iterations (100 above 8 KiB), 100 (10)
 * skipped. */
#define ITERS_COLL  1000
#define WARMUP_COLL 100

enum coll { BARRIER, BCAST, REDUCE, ALLREDUCE, ALLGATHER, ALLTOALL, GATHER, SCATTER, NCOLL };
static const char *const names[NCOLL] = {"barrier",   "bcast",    "reduce", "allreduce",
                                         "allgather", "alltoall", "gather", "scatter"};

static int rank, nprocs;

/* One call of collective c on size bytes (per rank / per block). */
static void call(enum coll c, size_t size, void *sbuf, void *rbuf)
{
    int n = (int)size;
    switch (c) {
    case BARRIER:
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    case BCAST:
        MPI_Bcast(sbuf, n, MPI_CHAR, 0, MPI_COMM_WORLD);
        break;
    case REDUCE:
        MPI_Reduce(sbuf, rbuf, n / 4, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
        break;
    case ALLREDUCE:
        MPI_Allreduce(sbuf, rbuf, n / 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case ALLGATHER:
        MPI_Allgather(sbuf, n, MPI_CHAR, rbuf, n, MPI_CHAR, MPI_COMM_WORLD);
        break;
    case ALLTOALL:
        MPI_Alltoall(sbuf, n, MPI_CHAR, rbuf, n, MPI_CHAR, MPI_COMM_WORLD);
        break;
    case GATHER:
        MPI_Gather(sbuf, n, MPI_CHAR, rbuf, n, MPI_CHAR, 0, MPI_COMM_WORLD);
        break;
    case SCATTER:
        MPI_Scatter(sbuf, n, MPI_CHAR, rbuf, n, MPI_CHAR, 0, MPI_COMM_WORLD);
        break;
    default:
        break;
    }
}

/* Byte i of the block rank src sends to rank dst. */
static char pat(size_t size, int src, int dst, size_t i)
{
    return (char)((i * 7 + (size_t)src * 31 + (size_t)dst * 13 + size) & 0x7f);
}

/* One checked call: returns 0 when every rank's result is right. */
static int check(enum coll c, size_t size, char *sbuf, char *rbuf)
{
    size_t total = size * (size_t)nprocs, nf = size / 4;
    float *fs = (float *)(void *)sbuf, *fr = (float *)(void *)rbuf;
    int bad = 0;

    memset(rbuf, 0x55, total);
    switch (c) {
    case BARRIER:
        call(c, 0, NULL, NULL);
        return 0;
    case BCAST:
        for (size_t i = 0; i < size; i++)
            sbuf[i] = rank == 0 ? pat(size, 0, 0, i) : 0;
        call(c, size, sbuf, rbuf);
        for (size_t i = 0; i < size && !bad; i++)
            bad = sbuf[i] != pat(size, 0, 0, i);
        break;
    case REDUCE:
    case ALLREDUCE:
        /* small integers: every order of summation gives the exact result */
        for (size_t i = 0; i < nf; i++)
            fs[i] = (float)((i + (size_t)rank) % 8);
        call(c, size, sbuf, rbuf);
        if (c == ALLREDUCE || rank == 0)
            for (size_t i = 0; i < nf && !bad; i++) {
                float want = 0;
                for (int r = 0; r < nprocs; r++)
                    want += (float)((i + (size_t)r) % 8);
                bad = fr[i] != want;
            }
        break;
    case ALLGATHER:
    case GATHER:
        for (size_t i = 0; i < size; i++)
            sbuf[i] = pat(size, rank, 0, i);
        call(c, size, sbuf, rbuf);
        if (c == ALLGATHER || rank == 0)
            for (int r = 0; r < nprocs && !bad; r++)
                for (size_t i = 0; i < size && !bad; i++)
                    bad = rbuf[(size_t)r * size + i] != pat(size, r, 0, i);
        break;
    case ALLTOALL:
    case SCATTER:
        for (int d = 0; d < nprocs; d++)
            for (size_t i = 0; i < size; i++)
                sbuf[(size_t)d * size + i] = pat(size, c == SCATTER ? 0 : rank, d, i);
        call(c, size, sbuf, rbuf);
        for (int s = 0; s < (c == SCATTER ? 1 : nprocs) && !bad; s++)
            for (size_t i = 0; i < size && !bad; i++)
                bad = rbuf[(size_t)s * size + i] != pat(size, c == SCATTER ? 0 : s, rank, i);
        break;
    default:
        break;
    }
    if (bad)
        fprintf(stderr, "bm_coll: DATA ERROR: %s of %zu bytes gave a wrong result on rank %d\n",
                names[c], size, rank);
    return bad;
}

/* Remove "-c NAME" from the arguments; -1 when missing or unknown. */
static int take_coll(int *argc, char **argv)
{
    int c = -1;
    for (int i = 1; i < *argc; i++) {
        if (strcmp(argv[i], "-c") != 0 || i + 1 >= *argc)
            continue;
        for (int k = 0; k < NCOLL; k++)
            if (strcmp(argv[i + 1], names[k]) == 0)
                c = k;
        memmove(&argv[i], &argv[i + 2], sizeof(char *) * (size_t)(*argc - i - 1));
        *argc -= 2;
        break;
    }
    return c;
}

static int has_opt(int argc, char **argv, const char *opt)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], opt) == 0)
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    struct bm_bench_opts opts;
    int exit_code;
    int c = take_coll(&argc, argv);
    int own_iters = has_opt(argc, argv, "-i"), own_warmup = has_opt(argc, argv, "-w");

    if (bm_bench_start(&argc, &argv, "bm_coll", 0, &opts, &rank, &nprocs, &exit_code) != 0)
        return exit_code;
    if (c < 0) {
        if (rank == 0)
            fprintf(stderr, "bm_coll: -c barrier|bcast|reduce|allreduce|allgather|alltoall|"
                            "gather|scatter is required\n");
        MPI_Finalize();
        return 2;
    }
    if (!own_iters) {
        opts.iters = ITERS_COLL;
        opts.iters_large = ITERS_COLL / 10;
    }
    if (!own_warmup) {
        opts.warmup = WARMUP_COLL;
        opts.warmup_large = WARMUP_COLL / 10;
    }
    if (c == BARRIER)
        opts.min_size = opts.max_size = 0;
    else if (opts.min_size < 4 && (c == REDUCE || c == ALLREDUCE))
        opts.min_size = 4;
    char what[96];
    snprintf(what, sizeof(what), "MPI_%c%s latency, mean over the ranks", names[c][0] - 32,
             names[c] + 1);
    bm_bench_header(&opts, rank, what, "size(B)  avg(us)  min(us)  max(us)");

    size_t bytes = opts.max_size * (size_t)nprocs;
    char *sbuf = bm_bench_alloc(bytes + 16), *rbuf = bm_bench_alloc(bytes + 16);
    memset(sbuf, 1, bytes + 16);
    memset(rbuf, 0, bytes + 16);
    double prev_iter = 0;
    size_t prev_size = 0;

    for (size_t size = opts.min_size; size <= opts.max_size; size = bm_bench_size_next(size)) {
        struct bm_bench_plan plan;
        if (bm_bench_plan_size(&opts, size, prev_size, prev_iter, &plan))
            break;
        double busy = 0, t0 = MPI_Wtime(), timed = t0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (long i = 0; i < plan.warmup + plan.iters; i++) {
            if (i == plan.warmup) {
                timed = bm_bench_plan_timed(&opts, MPI_Wtime() - t0, &plan);
                busy = 0;
            }
            double t = MPI_Wtime();
            call((enum coll)c, size, sbuf, rbuf);
            busy += MPI_Wtime() - t;
            if (c != BARRIER)
                MPI_Barrier(MPI_COMM_WORLD);
        }
        /* The next size's budget is planned from the whole iteration, the
         * separating barrier included: an oversubscribed stack whose
         * barrier takes milliseconds would otherwise run its 100 warm-ups
         * (1000 iterations) of every size. */
        double wall = (MPI_Wtime() - timed) / (double)plan.iters;
        double mine = busy / (double)plan.iters, sum = 0, lo = 0, hi = 0;
        MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Reduce(&mine, &lo, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&mine, &hi, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            prev_iter = wall;
            printf("%-10zu %10.3f %10.3f %10.3f\n", size, sum / nprocs * 1e6, lo * 1e6, hi * 1e6);
            fflush(stdout);
        }
        MPI_Bcast(&prev_iter, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        bm_bench_check_all(check((enum coll)c, size, sbuf, rbuf));
        prev_size = size;
        if (size == opts.max_size)
            break;
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
