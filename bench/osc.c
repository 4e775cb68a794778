/* bm_osc: one-sided communication between ranks 0 (origin) and 1 (target),
 * the OSU one-sided method (osu_put_latency, osu_get_bw, osu_acc_latency,
 * osu_fop_latency, osu_cas_latency), on a window from MPI_Win_allocate
 * (-w create: MPI_Win_create on malloc'd memory).
 *   -k put | get | acc | fop | cas     the operation (acc: MPI_SUM on
 *                                      int64_t elements; fop, cas: one int64_t)
 *   -s flush | lock | fence            the synchronisation per operation:
 *        flush  MPI_Win_lock_all once, then operation + MPI_Win_flush (OSU's
 *               default for these benchmarks)
 *        lock   MPI_Win_lock(MPI_LOCK_SHARED) + operation + MPI_Win_unlock
 *        fence  operation + MPI_Win_fence on both ranks
 *   -b          bandwidth: a window of 64 operations per synchronisation
 *               (osu_put_bw), output in MB/s (1e6 B/s); otherwise the mean
 *               time of one operation with its synchronisation, in us.
 * Per size the output line is "size value". The data is checked after each
 * size: the target's window holds the origin's last pattern (put), the
 * origin's buffer the target's pattern (get), every accumulate and
 * fetch-and-add counted exactly once (acc, fop), the compare-and-swaps
 * alternated as they should (cas). Only the MPI standard is used: the same
 * file builds with bmcc, mpicc.openmpi and mpicc.mpich. */
#include "bench_common.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum op { OP_PUT, OP_GET, OP_ACC, OP_FOP, OP_CAS };
static const char *const op_names[] = {"put", "get", "acc", "fop", "cas"};
enum sync { SYNC_FLUSH, SYNC_LOCK, SYNC_FENCE };
static const char *const sync_names[] = {"flush", "lock", "fence"};

#define BW_WINDOW 64

static int lookup(const char *v, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(v, names[i]) == 0)
            return i;
    return -1;
}

struct run {
    enum op op;
    enum sync sync;
    int bw;
    MPI_Win win;
    unsigned char *wbase; /* the window (rank 1's is the target) */
    unsigned char *buf;   /* origin buffer */
    int64_t *res;         /* fetch results */
};

/* One operation of `size` bytes from rank 0 to rank 1 at window offset off. */
static void issue(struct run *r, size_t size, size_t off, long i)
{
    int64_t one = 1;
    switch (r->op) {
    case OP_PUT:
        MPI_Put(r->buf + off, (int)size, MPI_BYTE, 1, (MPI_Aint)off, (int)size, MPI_BYTE, r->win);
        break;
    case OP_GET:
        MPI_Get(r->buf + off, (int)size, MPI_BYTE, 1, (MPI_Aint)off, (int)size, MPI_BYTE, r->win);
        break;
    case OP_ACC:
        MPI_Accumulate(r->buf, (int)(size / 8), MPI_INT64_T, 1, (MPI_Aint)off, (int)(size / 8),
                       MPI_INT64_T, MPI_SUM, r->win);
        break;
    case OP_FOP:
        MPI_Fetch_and_op(&one, r->res, MPI_INT64_T, 1, 0, MPI_SUM, r->win);
        break;
    case OP_CAS: {
        /* the target word goes 0 -> 1 -> 2 ...: each swap expects the last */
        int64_t cmp = (int64_t)i, val = (int64_t)i + 1;
        MPI_Compare_and_swap(&val, &cmp, r->res, MPI_INT64_T, 1, 0, r->win);
        break;
    }
    }
}

/* One timed iteration: one operation (or a window of them) and its
 * synchronisation. Rank 1 only takes part in fences. */
static void iteration(struct run *r, int rank, size_t size, long i)
{
    int n = r->bw ? BW_WINDOW : 1;
    if (rank == 0) {
        if (r->sync == SYNC_LOCK)
            MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, r->win);
        for (int k = 0; k < n; k++)
            issue(r, size, r->op == OP_PUT || r->op == OP_GET ? (size_t)k * size : 0, i * n + k);
        if (r->sync == SYNC_LOCK)
            MPI_Win_unlock(1, r->win);
        else if (r->sync == SYNC_FLUSH)
            MPI_Win_flush(1, r->win);
    }
    if (r->sync == SYNC_FENCE)
        MPI_Win_fence(0, r->win);
}

/* Checks after the timed loop of one size; returns 0 when right. */
static int check(struct run *r, const struct bm_bench_opts *opts, int rank, size_t size, long total,
                 long seed)
{
    int bad = 0;
    int64_t v = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (r->op == OP_PUT && rank == 1)
        bad = bm_bench_pattern_check(opts, rank, r->wbase, size, size, seed, 0, 0);
    if (r->op == OP_GET && rank == 0)
        bad = bm_bench_pattern_check(opts, rank, r->buf, size, size, seed, 0, 1);
    if ((r->op == OP_ACC || r->op == OP_FOP || r->op == OP_CAS) && rank == 1) {
        memcpy(&v, r->wbase, sizeof(v));
        /* every element of acc, and the counter of fop and cas */
        long want = r->op == OP_ACC ? total : total;
        if (v != want) {
            fprintf(stderr, "%s: DATA ERROR rank 1 size %zu: %s counted %lld, expected %ld\n",
                    opts->name, size, op_names[r->op], (long long)v, want);
            bad = -1;
        }
    }
    if (r->op == OP_FOP && rank == 0 && *r->res != total - 1) {
        fprintf(stderr,
                "%s: DATA ERROR rank 0 size %zu: the last fetch-and-op fetched %lld, "
                "expected %ld\n",
                opts->name, size, (long long)*r->res, total - 1);
        bad = -1;
    }
    return bad;
}

int main(int argc, char **argv)
{
    enum op op = OP_PUT;
    enum sync sync = SYNC_FLUSH;
    int bw = 0, create = 0, n = 1;
    /* Our own options first; the rest are bench_common's. */
    for (int i = 1; i < argc; i++) {
        int k = -1;
        if (strcmp(argv[i], "-k") == 0 && i + 1 < argc) {
            if ((k = lookup(argv[++i], op_names, 5)) < 0) {
                fprintf(stderr, "bm_osc: unknown operation %s (put, get, acc, fop, cas)\n",
                        argv[i]);
                return 2;
            }
            op = (enum op)k;
        } else if (strcmp(argv[i], "-s") == 0 && i + 1 < argc) {
            if ((k = lookup(argv[++i], sync_names, 3)) < 0) {
                fprintf(stderr, "bm_osc: unknown synchronisation %s (flush, lock, fence)\n",
                        argv[i]);
                return 2;
            }
            sync = (enum sync)k;
        } else if (strcmp(argv[i], "-b") == 0) {
            bw = 1;
        } else if (strcmp(argv[i], "-w") == 0 && i + 1 < argc) {
            create = strcmp(argv[++i], "create") == 0;
        } else {
            argv[n++] = argv[i];
        }
    }
    argc = n;
    argv[argc] = NULL;
    struct bm_bench_opts opts;
    int rank, nprocs, exit_code;
    if (bm_bench_start(&argc, &argv, "bm_osc", 0, &opts, &rank, &nprocs, &exit_code) != 0)
        return exit_code;
    if (op == OP_FOP || op == OP_CAS)
        opts.min_size = opts.max_size = 8;
    if (op == OP_ACC && opts.min_size < 8)
        opts.min_size = 8;
    char what[160];
    snprintf(what, sizeof(what), "MPI_%s%s rank 0 -> 1, %s synchronisation, window from %s",
             op == OP_PUT   ? "Put"
             : op == OP_GET ? "Get"
             : op == OP_ACC ? "Accumulate (MPI_SUM, int64)"
             : op == OP_FOP ? "Fetch_and_op (MPI_SUM, int64)"
                            : "Compare_and_swap (int64)",
             bw ? " bandwidth (64 per synchronisation)" : " latency", sync_names[sync],
             create ? "MPI_Win_create" : "MPI_Win_allocate");
    bm_bench_header(&opts, rank, what, bw ? "size(B)  bandwidth(MB/s)" : "size(B)  latency(us)");

    struct run r = {.op = op, .sync = sync, .bw = bw};
    size_t span = opts.max_size * (bw ? BW_WINDOW : 1);
    if (span < 64)
        span = 64;
    r.buf = bm_bench_alloc(span);
    r.res = bm_bench_alloc(sizeof(int64_t) * 8);
    if (create) {
        r.wbase = bm_bench_alloc(span);
        MPI_Win_create(r.wbase, (MPI_Aint)span, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &r.win);
    } else {
        MPI_Win_allocate((MPI_Aint)span, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &r.wbase, &r.win);
    }
    double prev_iter = 0;
    size_t prev_size = 0;
    int failed = 0;
    for (size_t size = opts.min_size; size <= opts.max_size; size = bm_bench_size_next(size)) {
        struct bm_bench_plan plan;
        if (bm_bench_plan_size(&opts, size, prev_size, prev_iter, &plan))
            break;
        /* fresh data: rank 0 puts its pattern, rank 1's window holds one to
         * get, counters start at 0 */
        memset(r.wbase, 0, span);
        if (rank == 0) {
            memset(r.buf, 0, span);
            if (op == OP_PUT)
                for (int k = 0; k < (bw ? BW_WINDOW : 1); k++)
                    bm_bench_pattern_fill(r.buf + (size_t)k * size, size, size, plan.seed, 0, 0);
            if (op == OP_ACC)
                for (size_t e = 0; e < size / 8; e++)
                    ((int64_t *)(void *)r.buf)[e] = 1;
        }
        if (rank == 1 && op == OP_GET)
            for (int k = 0; k < (bw ? BW_WINDOW : 1); k++)
                bm_bench_pattern_fill(r.wbase + (size_t)k * size, size, size, plan.seed, 0, 1);
        MPI_Barrier(MPI_COMM_WORLD);
        if (sync == SYNC_FLUSH && rank == 0)
            MPI_Win_lock_all(0, r.win);
        if (sync == SYNC_FENCE)
            MPI_Win_fence(MPI_MODE_NOPRECEDE, r.win);
        double t0 = MPI_Wtime();
        long i;
        for (i = 0; i < plan.warmup + plan.iters; i++) {
            if (i == plan.warmup)
                t0 = bm_bench_plan_timed(&opts, rank == 0 ? MPI_Wtime() - t0 : 0, &plan);
            iteration(&r, rank, size, i);
        }
        double elapsed = MPI_Wtime() - t0;
        if (sync == SYNC_FLUSH && rank == 0)
            MPI_Win_unlock_all(r.win);
        if (sync == SYNC_FENCE)
            MPI_Win_fence(MPI_MODE_NOSUCCEED, r.win);
        if (rank == 0) {
            prev_iter = elapsed / (double)plan.iters;
            if (bw)
                printf("%-10zu %12.2f\n", size,
                       (double)size * BW_WINDOW * (double)plan.iters / elapsed / 1e6);
            else
                printf("%-10zu %12.3f\n", size, elapsed * 1e6 / (double)plan.iters);
            fflush(stdout);
        }
        long total = (plan.warmup + plan.iters) * (bw ? BW_WINDOW : 1);
        if (check(&r, &opts, rank, size, total, plan.seed) != 0)
            failed = 1;
        bm_bench_check_all(failed);
        prev_size = size;
        if (size == opts.max_size)
            break;
    }
    MPI_Win_free(&r.win);
    if (create)
        free(r.wbase);
    free(r.buf);
    free(r.res);
    MPI_Finalize();
    return 0;
}
