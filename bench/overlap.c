/* bm_overlap: how much of a nonblocking collective overlaps with
 * computation (OSU osu_iallreduce method). For each size: the pure
 * communication time (start the collective, wait for it), then the same
 * with a busy computation of that length between start and wait, which may
 * call MPI_Test a given number of times (-p, spread evenly; OSU's
 * --num_test_calls, default 0). overlap = 100 * (1 - (total - compute) /
 * pure), clamped to [0, 100]: 100% when the communication hid entirely
 * behind the computation. The line shows, in microseconds averaged over
 * the ranks, pure, compute and total, then the overlap in percent. The
 * result of the last call is checked on every rank. Only the MPI standard
 * is used.
 *
 * -M adds, below each row, the same from per-iteration medians (pure, and
 * total minus compute, each the median of a rank's iterations, then the
 * largest over the ranks): on a loaded machine a few iterations that lost
 * the core for milliseconds move OSU's means (pure 250 vs 1700 us between
 * runs at load 18) but not the medians. The row itself stays OSU's.
 *
 *   bm_overlap [-c iallreduce|ibcast|ialltoall|iallgather|ibarrier] [-p PROBES] [-M]
 *              [-m [MIN:]MAX] [-i ITERS] [-w WARMUP] [-t SECONDS] */
#include "bench_common.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ITERS_OVERLAP  200
#define WARMUP_OVERLAP 20

enum coll { IALLREDUCE, IBCAST, IALLTOALL, IALLGATHER, IBARRIER, NCOLL };
static const char *const names[NCOLL] = {"iallreduce", "ibcast", "ialltoall", "iallgather",
                                         "ibarrier"};

static int rank, nprocs;
static volatile double sink;

static void start(enum coll c, size_t size, float *sbuf, float *rbuf, MPI_Request *r)
{
    int n = (int)size;
    switch (c) {
    case IALLREDUCE:
        MPI_Iallreduce(sbuf, rbuf, n / 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, r);
        break;
    case IBCAST:
        MPI_Ibcast(sbuf, n, MPI_CHAR, 0, MPI_COMM_WORLD, r);
        break;
    case IALLTOALL:
        MPI_Ialltoall(sbuf, n, MPI_CHAR, rbuf, n, MPI_CHAR, MPI_COMM_WORLD, r);
        break;
    case IALLGATHER:
        MPI_Iallgather(sbuf, n, MPI_CHAR, rbuf, n, MPI_CHAR, MPI_COMM_WORLD, r);
        break;
    default:
        MPI_Ibarrier(MPI_COMM_WORLD, r);
        break;
    }
}

/* Busy for `seconds` of wall time, calling MPI_Test probes times on r at
 * even intervals (the time the probes take counts as computation, as in
 * OSU). Returns the time spent. */
static double compute(double seconds, int probes, MPI_Request *r)
{
    double t0 = MPI_Wtime(), next = probes > 0 ? seconds / (probes + 1) : 2 * seconds;
    double x = 1.0;
    int done = 0;
    for (;;) {
        for (int k = 0; k < 64; k++)
            x = x * 1.0000001 + 1e-9;
        double now = MPI_Wtime() - t0;
        if (now >= seconds)
            break;
        if (now >= next && !done) {
            MPI_Test(r, &done, MPI_STATUS_IGNORE);
            next += seconds / (probes + 1);
        }
    }
    sink = x;
    return MPI_Wtime() - t0;
}

static int check(enum coll c, size_t size, float *sbuf, float *rbuf)
{
    size_t nf = size / 4;
    unsigned char *sb = (unsigned char *)sbuf, *rb = (unsigned char *)rbuf;
    MPI_Request r;
    int bad = 0;

    switch (c) {
    case IALLREDUCE:
        for (size_t i = 0; i < nf; i++)
            sbuf[i] = (float)((i + (size_t)rank) % 8);
        break;
    case IBCAST:
        for (size_t i = 0; i < size; i++)
            sb[i] = rank == 0 ? (unsigned char)(i * 7 + size) : 0;
        break;
    default:
        for (size_t i = 0; i < size * (size_t)nprocs; i++)
            sb[i] = (unsigned char)(i / size * 31 + (size_t)rank * 5 + i % size);
        break;
    }
    start(c, size, sbuf, rbuf, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    if (c == IALLREDUCE) {
        for (size_t i = 0; i < nf && !bad; i++) {
            float want = 0;
            for (int q = 0; q < nprocs; q++)
                want += (float)((i + (size_t)q) % 8);
            bad = rbuf[i] != want;
        }
    } else if (c == IBCAST) {
        for (size_t i = 0; i < size && !bad; i++)
            bad = sb[i] != (unsigned char)(i * 7 + size);
    } else if (c == IALLTOALL || c == IALLGATHER) {
        for (int q = 0; q < nprocs && !bad; q++)
            for (size_t i = 0; i < size && !bad; i++) {
                size_t block = c == IALLTOALL ? (size_t)rank : 0;
                bad = rb[(size_t)q * size + i] != (unsigned char)(block * 31 + (size_t)q * 5 + i);
            }
    }
    if (bad)
        fprintf(stderr, "bm_overlap: DATA ERROR: %s of %zu bytes gave a wrong result on rank %d\n",
                names[c], size, rank);
    return bad;
}

/* Remove "OPT VALUE" from the arguments and return VALUE (or NULL). */
static const char *take(int *argc, char **argv, const char *opt)
{
    for (int i = 1; i + 1 < *argc; i++) {
        if (strcmp(argv[i], opt) != 0)
            continue;
        const char *v = argv[i + 1];
        memmove(&argv[i], &argv[i + 2], sizeof(char *) * (size_t)(*argc - i - 1));
        *argc -= 2;
        return v;
    }
    return NULL;
}

static int has_opt(int argc, char **argv, const char *opt)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], opt) == 0)
            return 1;
    return 0;
}

/* Remove the flag opt from the arguments; returns whether it was there. */
static int take_flag(int *argc, char **argv, const char *opt)
{
    for (int i = 1; i < *argc; i++) {
        if (strcmp(argv[i], opt) != 0)
            continue;
        memmove(&argv[i], &argv[i + 1], sizeof(char *) * (size_t)(*argc - i));
        *argc -= 1;
        return 1;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of v[0..n) (sorts v), then the largest over the ranks. */
static double median_max(double *v, long n)
{
    double m = 0, all = 0;
    if (n > 0) {
        qsort(v, (size_t)n, sizeof(double), cmp_double);
        m = v[n / 2];
    }
    MPI_Allreduce(&m, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return all;
}

/* The mean of x over the ranks, on every rank. */
static double mean_all(double x)
{
    double sum = 0;
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return sum / nprocs;
}

int main(int argc, char **argv)
{
    struct bm_bench_opts opts;
    int exit_code, c = IALLREDUCE, probes = 0;
    const char *cname = take(&argc, argv, "-c"), *pv = take(&argc, argv, "-p");
    int medians = take_flag(&argc, argv, "-M");
    int own_iters = has_opt(argc, argv, "-i"), own_warmup = has_opt(argc, argv, "-w");

    if (cname) {
        c = -1;
        for (int k = 0; k < NCOLL; k++)
            if (strcmp(cname, names[k]) == 0)
                c = k;
    }
    if (pv)
        probes = atoi(pv);
    if (bm_bench_start(&argc, &argv, "bm_overlap", 0, &opts, &rank, &nprocs, &exit_code) != 0)
        return exit_code;
    if (c < 0 || probes < 0) {
        if (rank == 0)
            fprintf(stderr, "bm_overlap: -c iallreduce|ibcast|ialltoall|iallgather|ibarrier, "
                            "-p PROBES >= 0\n");
        MPI_Finalize();
        return 2;
    }
    if (!own_iters) {
        opts.iters = ITERS_OVERLAP;
        opts.iters_large = ITERS_OVERLAP / 10;
    }
    if (!own_warmup) {
        opts.warmup = WARMUP_OVERLAP;
        opts.warmup_large = WARMUP_OVERLAP / 10;
    }
    if (c == IBARRIER)
        opts.min_size = opts.max_size = 0;
    else if (opts.min_size < 4)
        opts.min_size = 4;
    char what[128];
    snprintf(what, sizeof(what), "MPI_I%s overlap with computation, %d MPI_Test calls during it",
             names[c] + 1, probes);
    bm_bench_header(&opts, rank, what, "size(B)  pure(us)  compute(us)  total(us)  overlap(%)");

    size_t bytes = opts.max_size * (size_t)nprocs + 16;
    float *sbuf = bm_bench_alloc(bytes), *rbuf = bm_bench_alloc(bytes);
    memset(sbuf, 0, bytes);
    memset(rbuf, 0, bytes);
    double prev_iter = 0, *pure_it = NULL, *resid_it = NULL;
    size_t prev_size = 0;

    for (size_t size = opts.min_size; size <= opts.max_size; size = bm_bench_size_next(size)) {
        struct bm_bench_plan plan;
        MPI_Request r;
        if (bm_bench_plan_size(&opts, size, prev_size, prev_iter, &plan))
            break;
        if (medians) {
            free(pure_it);
            free(resid_it);
            pure_it = calloc((size_t)plan.iters + (size_t)plan.warmup + 1, sizeof(double));
            resid_it = calloc((size_t)plan.iters + (size_t)plan.warmup + 1, sizeof(double));
            bm_bench_check_all(!pure_it || !resid_it);
        }
        /* pure communication */
        double pure = 0, t0 = MPI_Wtime();
        for (long i = 0; i < plan.warmup + plan.iters; i++) {
            if (i == plan.warmup) {
                bm_bench_plan_timed(&opts, MPI_Wtime() - t0, &plan);
                pure = 0;
            }
            MPI_Barrier(MPI_COMM_WORLD);
            double t = MPI_Wtime();
            start((enum coll)c, size, sbuf, rbuf, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            double dt = MPI_Wtime() - t;
            pure += dt;
            if (medians && i >= plan.warmup)
                pure_it[i - plan.warmup] = dt;
        }
        pure = mean_all(pure / (double)plan.iters);
        /* the same with computation of that length in between */
        double total = 0, comp = 0;
        for (long i = 0; i < plan.iters; i++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t = MPI_Wtime();
            start((enum coll)c, size, sbuf, rbuf, &r);
            double ct = compute(pure, probes, &r);
            comp += ct;
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            double dt = MPI_Wtime() - t;
            total += dt;
            if (medians)
                resid_it[i] = dt - ct;
        }
        total = mean_all(total / (double)plan.iters);
        comp = mean_all(comp / (double)plan.iters);
        double overlap = pure > 0 ? 100.0 * (1.0 - (total - comp) / pure) : 0;
        overlap = overlap < 0 ? 0 : overlap > 100 ? 100 : overlap;
        if (rank == 0) {
            printf("%-10zu %10.3f %12.3f %10.3f %11.1f\n", size, pure * 1e6, comp * 1e6,
                   total * 1e6, overlap);
            fflush(stdout);
        }
        if (medians) {
            double pm = median_max(pure_it, plan.iters), rm = median_max(resid_it, plan.iters);
            double om = pm > 0 ? 100.0 * (1.0 - rm / pm) : 0;
            om = om < 0 ? 0 : om > 100 ? 100 : om;
            if (rank == 0) {
                printf("# %zu B, per-iteration medians (largest over the ranks): pure %.3f us, "
                       "total - compute %.3f us, overlap %.1f%%\n",
                       size, pm * 1e6, rm * 1e6, om);
                fflush(stdout);
            }
        }
        prev_iter = pure + total;
        bm_bench_check_all(check((enum coll)c, size, sbuf, rbuf));
        prev_size = size;
        if (size == opts.max_size)
            break;
    }
    free(pure_it);
    free(resid_it);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
