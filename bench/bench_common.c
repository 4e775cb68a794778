/* Options, size sweep, iteration planning and data checking shared by the
 * MPI benchmarks. See bench_common.h for the contracts; this file only uses
 * the MPI standard and libc so that it builds with any MPI compiler wrapper. */
#include "bench_common.h"

#include <errno.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* OSU defaults: osu_latency 10000/1000 iterations with 100/10 skipped;
 * osu_bw 100/20 iterations of a 64-message window with 10/2 skipped (we run a
 * tenth above 8 KiB for both). */
#define ITERS_PINGPONG  10000
#define WARMUP_PINGPONG 100
#define ITERS_WINDOW    100
#define WARMUP_WINDOW   10

/* Counts of the thread-pair benchmarks (bm_mt_latency, bm_mt_mr), the same at
 * every size. */
#define ITERS_THREADS         10000
#define WARMUP_THREADS        100
#define ITERS_THREADS_WINDOW  2000
#define WARMUP_THREADS_WINDOW 10

/* Every pair of a THREADS benchmark starts its timed loop at once (see
 * bm_bench_pair_iters): the threads of a rank meet here. */
static pthread_barrier_t pairs_start;
static double pairs_t0; /* when they left it (bm_bench_pairs_t0) */
static int pairs_rank;  /* this rank */
static int pairs_meet;  /* ranks rank 0's serial thread meets there (-P: pairs) */

static void usage(const char *name, int kind)
{
    int windowed = kind & BM_BENCH_WINDOWED, threads = kind & BM_BENCH_THREADS;
    if (threads) {
        fprintf(
            stderr,
            "usage: %s [-p PAIRS]%s [-m [MIN:]MAX] [-i ITERS] [-w WARMUP]%s [-t SECONDS]\n"
            "  -p  thread pairs, each on its own communicator (default 1, at most %d)\n"
            "%s"
            "  -m  message sizes, powers of two from MIN to MAX bytes (MAX alone: that\n"
            "      one size); suffixes k, m, g (default 8)\n"
            "  -i  timed %s per pair at every size (default %d)\n"
            "  -w  warm-up %s per pair (default %d)\n"
            "%s"
            "  -t  time budget per pair and size in seconds: a pair whose warm-up says\n"
            "      the full count would take longer runs fewer (at least 10), and the\n"
            "      line says how many (default 0 = off)\n",
            name, (kind & BM_BENCH_PEERS) ? " [-P] [-v]" : "", windowed ? " [-W WINDOW]" : "",
            BM_BENCH_PAIRS_MAX,
            (kind & BM_BENCH_PEERS)
                ? "  -P  pair t's second thread on rank 1 + t (needs PAIRS + 1 ranks; default:\n"
                  "      all on rank 1): rank 0's threads each with a peer of their own\n"
                  "  -v  senders send a vector of 8-byte blocks 16 bytes apart (sizes: multiples\n"
                  "      of 8; received contiguous)\n"
                : "",
            windowed ? "windows" : "iterations", windowed ? ITERS_THREADS_WINDOW : ITERS_THREADS,
            windowed ? "windows" : "iterations", windowed ? WARMUP_THREADS_WINDOW : WARMUP_THREADS,
            windowed ? "  -W  messages per window (default 64)\n" : "");
        return;
    }
    fprintf(stderr,
            "usage: %s [-m [MIN:]MAX] [-i ITERS] [-w WARMUP]%s [-t SECONDS] [-T SECONDS]\n"
            "  -m  message sizes, powers of two from MIN to MAX bytes; suffixes k, m, g\n"
            "      (default 0:4m; e.g. -m 0:64k)\n"
            "  -i  timed iterations for sizes up to %d B (default %d); larger sizes run\n"
            "      a tenth of them (at least 1)\n"
            "  -w  warm-up iterations for sizes up to %d B (default %d); larger sizes a\n"
            "      tenth\n"
            "%s"
            "  -t  time budget per size in seconds: after each size's warm-up, fewer\n"
            "      iterations are run when the full count would take longer (default 0 = off)\n"
            "  -T  end the sweep before a size whose single iteration is predicted (from\n"
            "      the previous size) to take longer than SECONDS (default 0 = off)\n",
            name, windowed ? " [-W WINDOW] [-B BUFFERS]" : "", BM_BENCH_LARGE_SIZE,
            windowed ? ITERS_WINDOW : ITERS_PINGPONG, BM_BENCH_LARGE_SIZE,
            windowed ? WARMUP_WINDOW : WARMUP_PINGPONG,
            windowed ? "  -W  messages in flight per iteration (default 64)\n"
                       "  -B  distinct buffers per window, messages using them in turn (default:\n"
                       "      one per message, so large windows stream through memory; 1 reuses\n"
                       "      one cache-hot buffer, as OSU's osu_bw does)\n"
                     : "");
}

/* Parses "64", "64k", "4m", "1g" into bytes; returns -1 on junk. */
static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno != 0)
        return -1;
    switch (*end) {
    case 'k':
    case 'K':
        v <<= 10;
        end++;
        break;
    case 'm':
    case 'M':
        v <<= 20;
        end++;
        break;
    case 'g':
    case 'G':
        v <<= 30;
        end++;
        break;
    default:
        break;
    }
    if (*end != '\0')
        return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_long(const char *s, long min, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno != 0 || v < min)
        return -1;
    *out = v;
    return 0;
}

int bm_bench_opts_parse(struct bm_bench_opts *opts, const char *name, int kind, int argc,
                        char **argv, int rank)
{
    int windowed = kind & BM_BENCH_WINDOWED, threads = kind & BM_BENCH_THREADS;
    memset(opts, 0, sizeof(*opts));
    opts->name = name;
    opts->min_size = threads ? 8 : 0;
    opts->max_size = threads ? 8 : (size_t)4 << 20;
    if (threads) {
        opts->iters = windowed ? ITERS_THREADS_WINDOW : ITERS_THREADS;
        opts->warmup = windowed ? WARMUP_THREADS_WINDOW : WARMUP_THREADS;
    } else {
        opts->iters = windowed ? ITERS_WINDOW : ITERS_PINGPONG;
        opts->warmup = windowed ? WARMUP_WINDOW : WARMUP_PINGPONG;
    }
    opts->window = windowed ? 64 : 1;
    opts->pairs = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = (i + 1 < argc) ? argv[i + 1] : NULL;
        int bad = 0;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            if (rank == 0)
                usage(name, kind);
            return 1;
        } else if (strcmp(a, "-m") == 0 && v) {
            char tmp[64];
            snprintf(tmp, sizeof(tmp), "%s", v);
            char *colon = strchr(tmp, ':');
            if (colon) {
                *colon = '\0';
                bad = parse_size(tmp, &opts->min_size) || parse_size(colon + 1, &opts->max_size);
            } else {
                bad = parse_size(tmp, &opts->max_size);
                if (threads)
                    opts->min_size = opts->max_size;
            }
            bad = bad || opts->min_size > opts->max_size;
            i++;
        } else if (strcmp(a, "-i") == 0 && v) {
            bad = parse_long(v, 1, &opts->iters);
            i++;
        } else if (strcmp(a, "-w") == 0 && v) {
            bad = parse_long(v, 0, &opts->warmup);
            i++;
        } else if (strcmp(a, "-W") == 0 && v && windowed) {
            long w = 0;
            bad = parse_long(v, 1, &w) || w > 4096;
            opts->window = (int)w;
            i++;
        } else if (strcmp(a, "-p") == 0 && v && threads) {
            long p = 0;
            bad = parse_long(v, 1, &p) || p > BM_BENCH_PAIRS_MAX;
            opts->pairs = (int)p;
            i++;
        } else if (strcmp(a, "-P") == 0 && (kind & BM_BENCH_PEERS)) {
            opts->peers = 1;
        } else if (strcmp(a, "-v") == 0 && (kind & BM_BENCH_PEERS)) {
            opts->vector = 1;
        } else if (strcmp(a, "-B") == 0 && v && windowed && !threads) {
            long b = 0;
            bad = parse_long(v, 1, &b) || b > 4096;
            opts->buffers = (int)b;
            i++;
        } else if (strcmp(a, "-T") == 0 && v && !threads) {
            char *end;
            opts->iter_limit = strtod(v, &end);
            bad = (*end != '\0' || opts->iter_limit < 0);
            i++;
        } else if (strcmp(a, "-t") == 0 && v) {
            char *end;
            opts->budget = strtod(v, &end);
            bad = (*end != '\0' || opts->budget < 0);
            i++;
        } else {
            bad = 1;
        }
        if (bad) {
            if (rank == 0) {
                fprintf(stderr, "%s: bad option or value: %s%s%s\n", name, a, v ? " " : "",
                        v ? v : "");
                usage(name, kind);
            }
            return 2;
        }
    }
    opts->iters_large = opts->iters / 10 > 0 ? opts->iters / 10 : 1;
    opts->warmup_large = opts->warmup / 10;
    if (opts->warmup > 0 && opts->warmup_large == 0)
        opts->warmup_large = 1;
    if (threads) {
        opts->iters_large = opts->iters;
        opts->warmup_large = opts->warmup;
    }
    return 0;
}

size_t bm_bench_size_next(size_t size)
{
    return size == 0 ? 1 : size * 2;
}

int bm_bench_plan_size(const struct bm_bench_opts *opts, size_t size, size_t prev_size,
                       double prev_iter_seconds, struct bm_bench_plan *plan_out)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long plan[3] = {0, 0, 0};
    plan_out->predicted = 0;
    if (rank == 0) {
        int large = size > BM_BENCH_LARGE_SIZE;
        long warm = large ? opts->warmup_large : opts->warmup;
        long iters = large ? opts->iters_large : opts->iters;
        double predicted = 0;
        if (prev_iter_seconds > 0) {
            double growth = 1.0;
            if (prev_size > 0 && size > prev_size)
                growth = (double)size / (double)prev_size;
            predicted = prev_iter_seconds * growth;
        }
        if (opts->budget > 0 && predicted > 0) {
            /* 80% of the budget for the timed loop, 20% for warm-up. */
            long fit = (long)(opts->budget * 0.8 / predicted);
            long fit_warm = (long)(opts->budget * 0.2 / predicted);
            if (fit < iters)
                iters = fit < 1 ? 1 : fit;
            /* When not even one warm-up iteration fits, the previous size
             * (which ran just before, over the same connections) is the
             * warm-up; slow transports would otherwise spend minutes here.
             * But one iteration stays when the size grew: its buffers
             * reach memory no earlier size touched, and the kernel's first
             * touch of a process's page can cost far more than the copy
             * (under the PVM hypervisor of the test VMs, 2026-11-29:
             * ~10 us a page, a raw TCP stream's first pass over 64
             * buffers of 4 MiB 2.6-2.9 ms of sender CPU per MiB, later
             * passes 0.15-0.24), which made every stack's 4 MiB window
             * (warm-up 0 there) read 4-15x below its 2 MiB one. */
            if (fit_warm < warm)
                warm = fit_warm < 1 && size > prev_size ? 1 : fit_warm;
        }
        if (opts->iter_limit > 0 && predicted > opts->iter_limit) {
            printf("# stopped before %zu B: one iteration would take about %.1f s (over -T "
                   "%g)\n",
                   size, predicted, opts->iter_limit);
            fflush(stdout);
            plan[2] = 1;
        }
        plan[0] = warm;
        plan[1] = iters;
        plan_out->predicted = predicted;
    }
    MPI_Bcast(plan, 3, MPI_LONG, 0, MPI_COMM_WORLD);
    plan_out->warmup = plan[0];
    plan_out->iters = plan[1];
    plan_out->seed = plan[1];
    return (int)plan[2];
}

double bm_bench_plan_timed(const struct bm_bench_opts *opts, double warm_seconds,
                           struct bm_bench_plan *plan)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long iters = plan->iters;
    if (rank == 0 && opts->budget > 0) {
        /* The warm-up of this very size is the best guide; the previous
         * size's time only stands in when there was no warm-up. Taking the
         * lower of the two would trust a quiet moment on a noisy machine. */
        double per = plan->warmup > 0 ? warm_seconds / (double)plan->warmup : 0;
        if (per <= 0)
            per = plan->predicted;
        if (per > 0) {
            long fit = (long)(opts->budget * 0.8 / per);
            if (fit < iters)
                iters = fit < 1 ? 1 : fit;
        }
    }
    MPI_Bcast(&iters, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    plan->iters = iters;
    return MPI_Wtime();
}

static volatile double compute_sink;

void bm_bench_compute(double us)
{
    double t0 = MPI_Wtime(), x = 1.0;
    while ((MPI_Wtime() - t0) * 1e6 < us)
        for (int i = 0; i < 64; i++)
            x = x * 1.0000001 + 1e-9;
    compute_sink = x;
}

long bm_bench_pair_iters(const struct bm_bench_opts *opts, MPI_Comm comm, int peer,
                         double warm_seconds, long warmup, long iters)
{
    long mine = iters, theirs = iters;
    if (opts->budget > 0 && warmup > 0 && warm_seconds > 0) {
        double per = warm_seconds / (double)warmup;
        double fit = opts->budget * 0.8 / per;
        if (fit < (double)iters)
            mine = fit < BM_BENCH_PAIR_ITERS_MIN ? BM_BENCH_PAIR_ITERS_MIN : (long)fit;
        if (mine > iters)
            mine = iters;
    }
    /* Both threads of the pair must run the same loop: the smaller count. */
    MPI_Sendrecv(&mine, 1, MPI_LONG, peer, BM_BENCH_PAIR_TAG, &theirs, 1, MPI_LONG, peer,
                 BM_BENCH_PAIR_TAG, comm, MPI_STATUS_IGNORE);
    /* Every pair of both ranks leaves together: the threads of this rank
     * meet, one of them (any: the tag and MPI_COMM_WORLD are the same for
     * each) meets the peer rank, and the others wait for it. Without this a
     * pair could run its whole timed loop while another pair still warms
     * up or waits for a core, and the per-pair times would add up to an
     * aggregate rate of pairs that never ran at once. The same thread
     * takes the start time for all (a thread that reads the clock itself
     * when it gets a core again would leave out the time it waited). */
    if (pthread_barrier_wait(&pairs_start) == PTHREAD_BARRIER_SERIAL_THREAD) {
        /* -P: rank 0 meets each of its pairs' ranks (1..pairs), they meet it */
        for (int k = 0; k < (pairs_rank == 0 ? pairs_meet : 1); k++) {
            int with = pairs_meet > 1 && pairs_rank == 0 ? 1 + k : peer;
            MPI_Sendrecv(NULL, 0, MPI_BYTE, with, BM_BENCH_PAIR_TAG + 1, NULL, 0, MPI_BYTE, with,
                         BM_BENCH_PAIR_TAG + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        pairs_t0 = MPI_Wtime();
    }
    pthread_barrier_wait(&pairs_start);
    return mine < theirs ? mine : theirs;
}

double bm_bench_pairs_t0(void)
{
    return pairs_t0;
}

/* A cheap hash per byte so that shifted, truncated, duplicated or swapped data
 * does not match by accident; depends on the size, the number of timed
 * iterations, the slot in the window and the sending rank. */
static inline unsigned char pattern_byte(size_t j, uint64_t seed)
{
    uint64_t x = (uint64_t)j * 0x9E3779B97F4A7C15ull + seed;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 32;
    return (unsigned char)x;
}

static uint64_t pattern_seed(size_t size, long iters, int slot, int sender)
{
    return ((uint64_t)size << 24) ^ ((uint64_t)iters << 8) ^ ((uint64_t)slot << 40) ^
           ((uint64_t)sender << 52) ^ 0x5bd1e995ull;
}

void bm_bench_pattern_fill(unsigned char *buf, size_t len, size_t size, long iters, int slot,
                           int sender)
{
    uint64_t seed = pattern_seed(size, iters, slot, sender);
    for (size_t j = 0; j < len; j++)
        buf[j] = pattern_byte(j, seed);
}

int bm_bench_pattern_check(const struct bm_bench_opts *opts, int rank, const unsigned char *buf,
                           size_t len, size_t size, long iters, int slot, int sender)
{
    uint64_t seed = pattern_seed(size, iters, slot, sender);
    for (size_t j = 0; j < len; j++) {
        unsigned char want = pattern_byte(j, seed);
        if (buf[j] != want) {
            fprintf(stderr,
                    "%s: DATA ERROR on rank %d: message of %zu B from rank %d (window slot %d): "
                    "first bad byte at offset %zu is 0x%02x, expected 0x%02x\n",
                    opts->name, rank, size, sender, slot, j, buf[j], want);
            return -1;
        }
    }
    return 0;
}

int bm_bench_slots(const struct bm_bench_opts *opts, size_t size)
{
    if (size == 0)
        return opts->window;
    int want = opts->buffers > 0 && opts->buffers < opts->window ? opts->buffers : opts->window;
    size_t fit = BM_BENCH_SLOT_BYTES_MAX / size;
    if (fit < 1)
        fit = 1;
    return fit < (size_t)want ? (int)fit : want;
}

size_t bm_bench_window_bytes(const struct bm_bench_opts *opts)
{
    size_t bytes = 0;
    for (size_t s = opts->min_size; s <= opts->max_size; s = bm_bench_size_next(s)) {
        size_t need = s * (size_t)bm_bench_slots(opts, s);
        if (need > bytes)
            bytes = need;
        if (s == opts->max_size)
            break;
    }
    return bytes;
}

void *bm_bench_alloc(size_t len)
{
    void *p = malloc(len ? len : 1);
    if (!p) {
        int rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        fprintf(stderr,
                "bench: rank %d cannot allocate %zu bytes of message buffers; use -m "
                "with a smaller maximum size or -W with a smaller window\n",
                rank, len);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    return p;
}

void bm_bench_header(const struct bm_bench_opts *opts, int rank, const char *what,
                     const char *columns)
{
    if (rank != 0)
        return;
    int nprocs;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    int major = 0, minor = 0;
    MPI_Get_version(&major, &minor);
    printf("# %s: %s\n", opts->name, what);
    printf("# MPI %d.%d, ranks %d, iterations %ld (%ld above %d B), warm-up %ld (%ld)", major,
           minor, nprocs, opts->iters, opts->iters_large, BM_BENCH_LARGE_SIZE, opts->warmup,
           opts->warmup_large);
    if (opts->window > 1)
        printf(", window %d", opts->window);
    if (opts->buffers > 0 && opts->buffers < opts->window)
        printf(", %d buffer%s per window", opts->buffers, opts->buffers > 1 ? "s" : "");
    if (opts->budget > 0)
        printf(", time budget %.3g s per size", opts->budget);
    printf("\n# %s\n", columns);
    fflush(stdout);
}

void bm_bench_fail(void)
{
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

int bm_bench_start(int *argc, char ***argv, const char *name, int kind,
                   struct bm_bench_opts *opts_out, int *rank_out, int *nprocs_out, int *exit_out)
{
    int provided = MPI_THREAD_SINGLE;
    if (kind & BM_BENCH_THREADS)
        MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    else
        MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, rank_out);
    MPI_Comm_size(MPI_COMM_WORLD, nprocs_out);
    int rc = bm_bench_opts_parse(opts_out, name, kind, *argc, *argv, *rank_out);
    if (rc == 0 && (kind & BM_BENCH_THREADS) && provided < MPI_THREAD_MULTIPLE) {
        if (*rank_out == 0)
            fprintf(stderr,
                    "%s: needs MPI_THREAD_MULTIPLE, but the MPI library provides only thread "
                    "level %d; use a build of the library with thread support\n",
                    name, provided);
        rc = 2;
    }
    if (rc == 0 && *nprocs_out < 2) {
        if (*rank_out == 0)
            fprintf(stderr, "%s: needs at least 2 ranks (got %d)\n", name, *nprocs_out);
        rc = 2;
    }
    if (rc == 0 && opts_out->peers && *nprocs_out < opts_out->pairs + 1) {
        if (*rank_out == 0)
            fprintf(stderr, "%s: -P with %d pairs needs %d ranks (got %d)\n", name, opts_out->pairs,
                    opts_out->pairs + 1, *nprocs_out);
        rc = 2;
    }
    if (rc != 0) {
        MPI_Finalize();
        *exit_out = rc == 1 ? 0 : 2;
        return -1;
    }
    if (kind & BM_BENCH_THREADS) {
        /* -P: ranks 1..pairs run one thread each */
        int threads = opts_out->peers && *rank_out > 0 ? 1 : opts_out->pairs;
        pairs_rank = *rank_out;
        pairs_meet = opts_out->peers ? opts_out->pairs : 1;
        pthread_barrier_init(&pairs_start, NULL, (unsigned)threads);
    }
    return 0;
}

void bm_bench_check_all(int failed)
{
    int any_failed = 0;
    MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any_failed)
        bm_bench_fail();
}

void bm_bench_slots_fill(unsigned char *buf, int slots, size_t size, long iters, int sender)
{
    for (int s = 0; s < slots; s++)
        bm_bench_pattern_fill(buf + (size_t)s * size, size, size, iters, s, sender);
}

int bm_bench_slots_check(const struct bm_bench_opts *opts, int rank, const unsigned char *buf,
                         int slots, size_t size, long iters, int sender)
{
    for (int s = 0; s < slots; s++)
        if (bm_bench_pattern_check(opts, rank, buf + (size_t)s * size, size, size, iters, s,
                                   sender) != 0)
            return -1;
    return 0;
}

void bm_bench_window_init(struct bm_bench_window *win, int n)
{
    win->n = n;
    win->reqs = bm_bench_alloc(sizeof(MPI_Request) * (size_t)n);
    win->stats = bm_bench_alloc(sizeof(MPI_Status) * (size_t)n);
}

void bm_bench_window_fini(struct bm_bench_window *win)
{
    free(win->reqs);
    free(win->stats);
}

void bm_bench_window_send(struct bm_bench_window *win, int count, unsigned char *buf, int slots,
                          size_t size, int peer, int tag)
{
    int ack = 0;
    for (int k = 0; k < count; k++)
        MPI_Isend(buf + (size_t)(k % slots) * size, (int)size, MPI_BYTE, peer, tag, MPI_COMM_WORLD,
                  &win->reqs[k]);
    MPI_Waitall(count, win->reqs, win->stats);
    MPI_Recv(&ack, 1, MPI_INT, peer, tag + 1, MPI_COMM_WORLD, &win->stats[0]);
}

void bm_bench_window_recv(struct bm_bench_window *win, int count, unsigned char *buf, int slots,
                          size_t size, int peer, int tag)
{
    int ack = 0;
    for (int k = 0; k < count; k++)
        MPI_Irecv(buf + (size_t)(k % slots) * size, (int)size, MPI_BYTE, peer, tag, MPI_COMM_WORLD,
                  &win->reqs[k]);
    MPI_Waitall(count, win->reqs, win->stats);
    MPI_Send(&ack, 1, MPI_INT, peer, tag + 1, MPI_COMM_WORLD);
}
