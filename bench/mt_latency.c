/* bm_mt_latency: ping-pong latency with several thread pairs at once
 * (MPI_THREAD_MULTIPLE). Ranks 0 and 1 each run P threads (-p, default 1);
 * thread t of rank 0 ping-pongs with thread t of rank 1 on a communicator of
 * their own (MPI_Comm_dup of MPI_COMM_WORLD per pair), so pairs never match
 * each other's messages. Every thread times its own loop; reported per size:
 * the mean half round trip over the pairs and the slowest pair's. With -p 1
 * this is the single-pair latency of a program that asked for
 * MPI_THREAD_MULTIPLE (what its locks cost). Every received message is
 * checked after the timed loop. MPI standard and POSIX threads only: builds
 * unchanged with bmcc, mpicc.openmpi and mpicc.mpich. Exits with a message
 * when the library does not provide MPI_THREAD_MULTIPLE. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_PAIRS 64

static int rank, pairs = 1;
static size_t min_size = 8, max_size = 8;
static long iters = 10000, warmup = 100;
static MPI_Comm comms[MAX_PAIRS];
static double lat_us[MAX_PAIRS];
static int bad[MAX_PAIRS];

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'k':
    case 'K':
        v *= 1024;
        break;
    case 'm':
    case 'M':
        v *= 1024 * 1024;
        break;
    default:
        break;
    }
    return (size_t)v;
}

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
    double t0 = 0;
    for (long i = 0; i < warmup + iters; i++) {
        if (i == warmup)
            t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(sbuf, (int)size, MPI_CHAR, peer, 1, c);
            MPI_Recv(rbuf, (int)size, MPI_CHAR, peer, 1, c, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, (int)size, MPI_CHAR, peer, 1, c, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, (int)size, MPI_CHAR, peer, 1, c);
        }
    }
    double elapsed = MPI_Wtime() - t0;
    lat_us[t] = elapsed / (double)iters / 2 * 1e6;
    for (size_t i = 0; i < size; i++)
        if (rbuf[i] != (char)(i * 7 + (size_t)t * 13 + (size_t)peer)) {
            bad[t] = 1;
            break;
        }
    free(sbuf);
    free(rbuf);
    return NULL;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bm_mt_latency [-p PAIRS] [-m [MIN:]MAX] [-i ITERS] [-w WARMUP]\n"
            "  -p  thread pairs, each on its own communicator (default 1, at most %d)\n"
            "  -m  message sizes, powers of two (default 8; suffixes k, m)\n"
            "  -i  timed iterations per pair (default 10000), -w warm-up (100)\n",
            MAX_PAIRS);
}

int main(int argc, char **argv)
{
    int provided, nprocs, opt, rc = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    while ((opt = getopt(argc, argv, "p:m:i:w:h")) != -1) {
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
        default:
            if (rank == 0)
                usage();
            MPI_Finalize();
            return opt == 'h' ? 0 : 2;
        }
    }
    if (provided < MPI_THREAD_MULTIPLE || nprocs < 2 || pairs < 1 || pairs > MAX_PAIRS ||
        iters < 1) {
        if (rank == 0)
            fprintf(stderr,
                    "bm_mt_latency: needs MPI_THREAD_MULTIPLE (provided %d), 2 ranks (have %d), "
                    "1..%d pairs\n",
                    provided, nprocs, MAX_PAIRS);
        MPI_Finalize();
        return 2;
    }
    for (int t = 0; t < pairs; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    if (rank == 0) {
        printf("# bm_mt_latency: ping-pong latency, %d thread pair%s (MPI_THREAD_MULTIPLE), "
               "half round trip\n",
               pairs, pairs == 1 ? "" : "s");
        printf("# ranks %d, iterations %ld per pair, warm-up %ld\n", nprocs, iters, warmup);
        printf("# size(B)  mean(us)  slowest(us)\n");
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
        for (int t = 0; t < pairs && rank < 2; t++) {
            mybad |= bad[t];
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
            printf("%-10zu %9.3f %12.3f\n", size, sum / pairs, worst);
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
