/* Shared plumbing of the MPI benchmarks (bm_latency, bm_bw, bm_bibw, bm_mr,
 * and the thread-pair benchmarks bm_mt_latency and bm_mt_mr):
 * command-line options, the list of message sizes, how many warm-up and timed
 * iterations each size gets, and the data pattern that the receiver checks
 * after the timed loop so that a fast but wrong transfer cannot pass. Only the
 * MPI standard is used, so the same files build with bmcc, mpicc.openmpi and
 * mpicc.mpich. */
#ifndef BM_BENCH_COMMON_H
#define BM_BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

/* Largest size that gets the "small message" iteration counts, as in the OSU
 * micro-benchmarks; larger sizes run a tenth of the iterations. */
#define BM_BENCH_LARGE_SIZE 8192

/* Upper bound on the memory one process gives to per-slot buffers of a window
 * benchmark (bw, bibw, mr), per direction. 64 slots of 4 MiB fit exactly, so
 * no two outstanding receives ever share memory. */
#define BM_BENCH_SLOT_BYTES_MAX ((size_t)256 << 20)

/* Kinds of benchmark, OR-ed into the `kind` argument of bm_bench_start and
 * bm_bench_opts_parse (0: ping-pong). WINDOWED takes -W and -B and gets OSU
 * bw counts. THREADS (bm_mt_*) initialises with MPI_THREAD_MULTIPLE, takes
 * -p PAIRS (and -P: each pair's second thread on a rank of its own, rank
 * 1 + t, so that rank 0's threads send to different peers), defaults to the
 * one size 8 B (-m MAX alone also means one size),
 * runs the same counts at every size (iters_large = iters), takes -t as a
 * budget per pair (bm_bench_pair_iters) and has no -B or -T; with WINDOWED
 * its counts are 200 windows and 10 warm-up. */
#define BM_BENCH_WINDOWED 1
#define BM_BENCH_THREADS  2
#define BM_BENCH_PEERS    4 /* THREADS: takes -P and -v */

/* Most thread pairs (-p) a THREADS benchmark runs. */
#define BM_BENCH_PAIRS_MAX 64

struct bm_bench_opts {
    const char *name;  /* program name shown in the header, e.g. "bm_latency" */
    size_t min_size;   /* smallest message size in bytes (0 allowed) */
    size_t max_size;   /* largest message size in bytes */
    long iters;        /* timed iterations for sizes <= BM_BENCH_LARGE_SIZE */
    long iters_large;  /* timed iterations for larger sizes */
    long warmup;       /* warm-up iterations for small sizes */
    long warmup_large; /* warm-up iterations for larger sizes */
    int window;        /* messages in flight per iteration (bw, bibw, mr) */
    int buffers;       /* -B: distinct buffers per window (0: one per message) */
    double budget;     /* seconds one size may take (0: fixed counts only) */
    double iter_limit; /* -T: end the sweep before a size whose one iteration would take longer */
    int pairs;         /* -p: thread pairs (THREADS benchmarks; 1 otherwise) */
    int peers;         /* -P: pair t's other thread is on rank 1 + t (THREADS; 0: all on rank 1) */
    int vector;        /* -v: sent as a vector of 8-byte blocks (PEERS kinds: bm_mt_mr) */
};

/* The iteration counts rank 0 chose for one size, broadcast to every rank so
 * that all processes run the same loop. */
struct bm_bench_plan {
    long warmup;
    long iters;
    long seed;        /* iteration count planned before warm-up: seeds the data pattern */
    double predicted; /* rank 0: expected seconds per iteration from the previous size */
};

/* MPI_Init (MPI_Init_thread with MPI_THREAD_MULTIPLE for a THREADS kind,
 * which must be provided), option parsing (bm_bench_opts_parse) and the check
 * that there are at least 2 ranks. Returns 0 when the benchmark should run;
 * otherwise MPI_Finalize has been called and main should return *exit_out (0
 * for -h, 2 for bad usage or a missing thread level). */
int bm_bench_start(int *argc, char ***argv, const char *name, int kind,
                   struct bm_bench_opts *opts_out, int *rank_out, int *nprocs_out, int *exit_out);

/* Collective over MPI_COMM_WORLD: when any rank passes failed != 0, ends the
 * job through bm_bench_fail, so no rank hangs in the next exchange. */
void bm_bench_check_all(int failed);

/* Fills `slots` consecutive buffers of `size` bytes, slot s with its own
 * pattern, and checks them (0, or -1 after printing the first bad byte). */
void bm_bench_slots_fill(unsigned char *buf, int slots, size_t size, long iters, int sender);
int bm_bench_slots_check(const struct bm_bench_opts *opts, int rank, const unsigned char *buf,
                         int slots, size_t size, long iters, int sender);

/* The requests of one window of non-blocking operations. A real status array
 * is used because some MPI headers define MPI_STATUSES_IGNORE as a fake
 * pointer that compilers warn about. */
struct bm_bench_window {
    int n; /* capacity in requests */
    MPI_Request *reqs;
    MPI_Status *stats;
};

void bm_bench_window_init(struct bm_bench_window *win, int n);
void bm_bench_window_fini(struct bm_bench_window *win);

/* One window of the streaming pattern shared by bm_bw and bm_mr: the sender
 * starts `count` non-blocking sends (message k from slot k % slots of buf,
 * tag `tag`), waits for them, then receives the 4-byte acknowledgement (tag
 * + 1); the receiver posts the matching receives, waits, and acknowledges. */
void bm_bench_window_send(struct bm_bench_window *win, int count, unsigned char *buf, int slots,
                          size_t size, int peer, int tag);
void bm_bench_window_recv(struct bm_bench_window *win, int count, unsigned char *buf, int slots,
                          size_t size, int peer, int tag);

/* Fills defaults, parses argv (-m MIN:MAX, -i ITERS, -w WARMUP, -W WINDOW,
 * -B BUFFERS, -t SECONDS, -T SECONDS, -p PAIRS, -h; which ones depends on
 * `kind`, see BM_BENCH_WINDOWED) and returns 0, or prints usage on rank 0 and
 * returns 1 for -h or 2 for a bad option. Defaults depend on the kind: a
 * window benchmark gets OSU bw counts, ping-pong gets OSU latency counts. */
int bm_bench_opts_parse(struct bm_bench_opts *opts, const char *name, int kind, int argc,
                        char **argv, int rank);

/* Next size after `size` in the power-of-two sweep (0, 1, 2, 4, ...). */
size_t bm_bench_size_next(size_t size);

/* Chooses warm-up and timed iteration counts for `size` on rank 0 and
 * broadcasts them. `prev_iter_seconds` is the measured time of one timed
 * iteration of the previous size (0 when unknown); with a time budget the
 * counts shrink so that the size fits in it, assuming time grows at most
 * linearly with size. Returns 1 on every rank when the sweep must end here
 * (-T: one iteration would take too long; rank 0 printed a "# stopped"
 * line), else 0. Collective over MPI_COMM_WORLD. */
int bm_bench_plan_size(const struct bm_bench_opts *opts, size_t size, size_t prev_size,
                       double prev_iter_seconds, struct bm_bench_plan *plan_out);

/* Called by every rank when its warm-up loop ends (ranks that take part in
 * no loop call it at the same point with warm_seconds = 0). With a time
 * budget rank 0 lowers plan->iters to what fits, judged by the measured
 * warm-up (or, without warm-up, by the previous size's time), and broadcasts
 * it. Collective over MPI_COMM_WORLD. Returns MPI_Wtime(), the start of the
 * timed loop. */
double bm_bench_plan_timed(const struct bm_bench_opts *opts, double warm_seconds,
                           struct bm_bench_plan *plan);

/* Busy for `us` microseconds of wall time with arithmetic and clock reads
 * only, no MPI call but MPI_Wtime (the "computation" of bm_barrier and
 * bm_mt_async). */
void bm_bench_compute(double us);

/* THREADS benchmarks: the timed iterations (or windows) of one thread pair
 * for one size, called by both threads of the pair on their communicator
 * after their warm-up (warm_seconds for warmup iterations). With a time
 * budget (-t) a pair whose warm-up predicts that iters would take longer
 * than 80% of it runs fewer, at least BM_BENCH_PAIR_ITERS_MIN, so that a
 * stack that takes milliseconds per iteration still finishes; both threads
 * take the smaller of their two estimates (one MPI_Sendrecv with tag
 * BM_BENCH_PAIR_TAG). Returns iters unchanged without a budget. Every
 * pair of both ranks returns at the same moment (the threads of a rank meet
 * at a barrier, one of them exchanges an empty message with tag
 * BM_BENCH_PAIR_TAG + 1 on MPI_COMM_WORLD with the peer rank, with -P rank
 * 0's with each of ranks 1..pairs), so that the
 * timed loops of all pairs start together and an aggregate over the pairs
 * is one of loops that ran at once. */
#define BM_BENCH_PAIR_ITERS_MIN 10
#define BM_BENCH_PAIR_TAG       32001
long bm_bench_pair_iters(const struct bm_bench_opts *opts, MPI_Comm comm, int peer,
                         double warm_seconds, long warmup, long iters);
/* The moment the pairs left bm_bench_pair_iters (the same for all threads
 * of the rank): each pair's timed loop runs from here, so that a thread
 * that waited for a core before its first iteration counts the wait. */
double bm_bench_pairs_t0(void);

/* Writes the pattern for (size, iters, slot, sender) into buf[0..len). */
void bm_bench_pattern_fill(unsigned char *buf, size_t len, size_t size, long iters, int slot,
                           int sender);

/* Checks buf against the pattern; on the first mismatch prints the benchmark,
 * rank, size, slot, byte offset, found and expected values on stderr and
 * returns -1; returns 0 when every byte matches. */
int bm_bench_pattern_check(const struct bm_bench_opts *opts, int rank, const unsigned char *buf,
                           size_t len, size_t size, long iters, int slot, int sender);

/* Number of distinct buffers a window benchmark uses for `size`: the window
 * (or -B), reduced only if their bytes would exceed BM_BENCH_SLOT_BYTES_MAX. */
int bm_bench_slots(const struct bm_bench_opts *opts, size_t size);

/* Bytes one side of a window benchmark needs for the per-slot buffers of
 * the largest size in the sweep. */
size_t bm_bench_window_bytes(const struct bm_bench_opts *opts);

/* malloc that aborts the MPI job with a message when memory is short. */
void *bm_bench_alloc(size_t len);

/* Prints the two header lines ("# <name>: <what>" and a column legend) and
 * the iteration policy, on rank 0 only. */
void bm_bench_header(const struct bm_bench_opts *opts, int rank, const char *what,
                     const char *columns);

/* Ends the job after a failed data check: MPI_Abort with exit code 3. */
void bm_bench_fail(void);

#endif
