/* bm_mt_mr: aggregate message rate of several thread pairs at once
 * (MPI_THREAD_MULTIPLE), the OSU osu_mbw_mr method with threads in place of
 * processes. Ranks 0 and 1 each run P threads (-p, default 1); thread t of
 * rank 0 streams windows of W non-blocking sends (-W, default 64) to thread
 * t of rank 1 on a communicator of its own, which posts W receives, waits
 * for them and acknowledges the window with a 4-byte message. Each sender
 * times its own loop; the rate is all messages of all pairs divided by the
 * slowest sender's time. With -p 1, 2 and 4 it shows whether pairs that
 * share nothing but the process scale or serialise on a lock. Every window
 * slot's data is checked after the timed loop. MPI standard and POSIX
 * threads only: builds unchanged with bmcc, mpicc.openmpi and mpicc.mpich. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_PAIRS  64
#define MAX_WINDOW 1024

static int rank, pairs = 1, window = 64;
static size_t min_size = 8, max_size = 8;
static long iters = 200, warmup = 10;
static MPI_Comm comms[MAX_PAIRS];
static double secs[MAX_PAIRS];
static int bad[MAX_PAIRS];

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (*end == 'k' || *end == 'K')
        v *= 1024;
    else if (*end == 'm' || *end == 'M')
        v *= 1024 * 1024;
    return (size_t)v;
}

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
    char *buf = malloc(stride * (size_t)window);
    MPI_Request reqs[MAX_WINDOW];
    int ack = 0;
    if (!buf) {
        fprintf(stderr, "bm_mt_mr: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) {
        for (int s = 0; s < window; s++)
            for (size_t i = 0; i < size; i++)
                buf[(size_t)s * stride + i] = pattern(i, s, t);
    } else {
        memset(buf, 0, stride * (size_t)window);
    }
    MPI_Comm c = comms[t];
    double t0 = 0;
    for (long it = 0; it < warmup + iters; it++) {
        if (it == warmup)
            t0 = MPI_Wtime();
        if (rank == 0) {
            for (int s = 0; s < window; s++)
                MPI_Isend(buf + (size_t)s * stride, (int)size, MPI_CHAR, 1, 10, c, &reqs[s]);
            MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
            MPI_Recv(&ack, 1, MPI_INT, 1, 11, c, MPI_STATUS_IGNORE);
        } else {
            for (int s = 0; s < window; s++)
                MPI_Irecv(buf + (size_t)s * stride, (int)size, MPI_CHAR, 0, 10, c, &reqs[s]);
            MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
            MPI_Send(&ack, 1, MPI_INT, 0, 11, c);
        }
    }
    secs[t] = MPI_Wtime() - t0;
    if (rank == 1)
        for (int s = 0; s < window && !bad[t]; s++)
            for (size_t i = 0; i < size; i++)
                if (buf[(size_t)s * stride + i] != pattern(i, s, t)) {
                    bad[t] = 1;
                    break;
                }
    free(buf);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, nprocs, opt, rc = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    while ((opt = getopt(argc, argv, "p:m:i:w:W:h")) != -1) {
        switch (opt) {
        case 'p':
            pairs = atoi(optarg);
            break;
        case 'm': {
            char *colon = strchr(optarg, ':');
            if (colon) {
                *colon = 0;
                min_size = parse_size(optarg);
                max_size = parse_size(colon + 1);
            } else {
                min_size = max_size = parse_size(optarg);
            }
            break;
        }
        case 'i':
            iters = atol(optarg);
            break;
        case 'w':
            warmup = atol(optarg);
            break;
        case 'W':
            window = atoi(optarg);
            break;
        default:
            if (rank == 0)
                fprintf(stderr,
                        "usage: bm_mt_mr [-p PAIRS] [-m [MIN:]MAX] [-i ITERS] [-w WARMUP] "
                        "[-W WINDOW]\n"
                        "  -p  thread pairs, each on its own communicator (default 1)\n"
                        "  -m  sizes (default 8), -i windows timed per pair (200), -w warm-up "
                        "(10), -W messages per window (64)\n");
            MPI_Finalize();
            return opt == 'h' ? 0 : 2;
        }
    }
    if (provided < MPI_THREAD_MULTIPLE || nprocs < 2 || pairs < 1 || pairs > MAX_PAIRS ||
        window < 1 || window > MAX_WINDOW || iters < 1) {
        if (rank == 0)
            fprintf(stderr,
                    "bm_mt_mr: needs MPI_THREAD_MULTIPLE (provided %d), 2 ranks (have %d), "
                    "1..%d pairs, a window of 1..%d\n",
                    provided, nprocs, MAX_PAIRS, MAX_WINDOW);
        MPI_Finalize();
        return 2;
    }
    for (int t = 0; t < pairs; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    if (rank == 0) {
        printf("# bm_mt_mr: message rate, %d thread pair%s (MPI_THREAD_MULTIPLE), window %d\n",
               pairs, pairs == 1 ? "" : "s", window);
        printf("# ranks %d, windows %ld per pair, warm-up %ld\n", nprocs, iters, warmup);
        printf("# size(B)  rate(messages/s)  per pair(messages/s)\n");
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
        double slowest = 0;
        for (int t = 0; t < pairs && rank < 2; t++) {
            mybad |= bad[t];
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
            double msgs = (double)pairs * window * (double)iters;
            printf("%-10zu %14.0f %14.0f\n", size, msgs / slowest, msgs / slowest / pairs);
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
