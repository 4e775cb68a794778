/* bm_mt_async: asynchronous progress, i.e. whether communication advances
 * while the program computes outside MPI (what a progress thread is for).
 * Ranks 0 and 1; rank 1 computes for -c MICROSECONDS per iteration without
 * calling MPI (a busy loop that reads only its clock), and:
 *   -k rndv  rank 1 posts MPI_Irecv of the message before computing and
 *            MPI_Wait after; rank 0 sends it with MPI_Send. Reported: the
 *            time rank 1's MPI_Wait took after the computation (0 when the
 *            transfer finished during it; about the transfer time when
 *            nothing advanced it).
 *   -k put   passive target: rank 0 does MPI_Win_lock (exclusive) +
 *            MPI_Put + MPI_Win_unlock on rank 1's window while rank 1
 *            computes. Reported: the time of that epoch at rank 0 (small
 *            when the target's side advances without it, else up to the
 *            computation).
 * Per size the line is "size compute(us) value(us)", means over -i
 * iterations (after -w warm-up ones); the data is checked after each size.
 * With a stack's progress thread on and off (BM_PML_PROGRESS_THREAD for
 * bitmover) it measures what the thread buys. Only the MPI standard:
 * builds unchanged with bmcc, mpicc.openmpi and mpicc.mpich.
 *
 *   bm_mt_async [-k rndv|put] [-c MICROSECONDS] [-m [MIN:]MAX] [-i ITERS] [-w WARMUP] */
#include "bench_common.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char pattern(size_t i, long it)
{
    return (unsigned char)(i * 131 + (size_t)it * 7 + 3);
}

static size_t parse_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end == 'k' || *end == 'K')
        v <<= 10;
    else if (*end == 'm' || *end == 'M')
        v <<= 20;
    return (size_t)v;
}

int main(int argc, char **argv)
{
    int rank, nprocs, rc = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    const char *kind = "rndv";
    double comp_us = 2000;
    size_t min_size = 1 << 20, max_size = 1 << 20;
    long iters = 20, warmup = 2;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            rc = 2;
        } else if (strcmp(argv[i], "-k") == 0) {
            kind = v;
        } else if (strcmp(argv[i], "-c") == 0) {
            comp_us = atof(v);
        } else if (strcmp(argv[i], "-i") == 0) {
            iters = atol(v);
        } else if (strcmp(argv[i], "-w") == 0) {
            warmup = atol(v);
        } else if (strcmp(argv[i], "-m") == 0) {
            const char *colon = strchr(v, ':');
            max_size = parse_size(colon ? colon + 1 : v);
            min_size = colon ? parse_size(v) : max_size;
        } else {
            rc = 2;
        }
        i++;
    }
    int put = strcmp(kind, "put") == 0;
    if (rc || (!put && strcmp(kind, "rndv") != 0) || iters < 1 || warmup < 0 || nprocs < 2 ||
        min_size < 1 || min_size > max_size) {
        if (rank == 0)
            fprintf(stderr, "usage: bm_mt_async [-k rndv|put] [-c MICROSECONDS] [-m [MIN:]MAX] "
                            "[-i ITERS] [-w WARMUP] (2 ranks or more)\n");
        MPI_Finalize();
        return 2;
    }
    unsigned char *buf = malloc(max_size), *wbase = NULL;
    MPI_Win win = MPI_WIN_NULL;
    if (!buf) {
        fprintf(stderr, "bm_mt_async: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (put)
        MPI_Win_allocate((MPI_Aint)(rank == 1 ? max_size : 0), 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                         &wbase, &win);
    if (rank == 0) {
        printf("# bm_mt_async: %s while the receiver computes %.0f us outside MPI\n",
               put ? "passive-target lock + put + unlock (time at the origin)"
                   : "rendezvous receive (time of MPI_Wait after the computation)",
               comp_us);
        printf("# ranks %d, iterations %ld, warm-up %ld\n# size(B)  compute(us)  %s(us)\n", nprocs,
               iters, warmup, put ? "epoch" : "wait");
        fflush(stdout);
    }
    for (size_t size = min_size; size <= max_size && rc == 0; size *= 2) {
        double sum = 0, comp = 0;
        long it;
        for (it = 0; it < warmup + iters; it++) {
            double t = 0;
            if (rank == 0)
                for (size_t i = 0; i < size; i++)
                    buf[i] = pattern(i, it);
            if (put) {
                MPI_Barrier(MPI_COMM_WORLD);
                if (rank == 0) {
                    double t0 = MPI_Wtime();
                    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
                    MPI_Put(buf, (int)size, MPI_BYTE, 1, 0, (int)size, MPI_BYTE, win);
                    MPI_Win_unlock(1, win);
                    t = MPI_Wtime() - t0;
                } else if (rank == 1) {
                    double t0 = MPI_Wtime();
                    bm_bench_compute(comp_us);
                    t = MPI_Wtime() - t0;
                }
                MPI_Barrier(MPI_COMM_WORLD);
            } else {
                MPI_Request r = MPI_REQUEST_NULL;
                if (rank == 1)
                    MPI_Irecv(buf, (int)size, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &r);
                MPI_Barrier(MPI_COMM_WORLD);
                if (rank == 0) {
                    MPI_Send(buf, (int)size, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
                } else if (rank == 1) {
                    double t0 = MPI_Wtime();
                    bm_bench_compute(comp_us);
                    double t1 = MPI_Wtime();
                    MPI_Wait(&r, MPI_STATUS_IGNORE);
                    t = MPI_Wtime() - t1;
                    comp += it >= warmup ? t1 - t0 : 0;
                }
            }
            if (it >= warmup) {
                if (put && rank == 1)
                    comp += t;
                else
                    sum += t;
            }
            /* rank 1 checks what arrived (in its window or its buffer) */
            int bad = 0;
            if (rank == 1) {
                const unsigned char *got = put ? wbase : buf;
                if (put)
                    MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
                for (size_t i = 0; i < size && !bad; i++)
                    bad = got[i] != pattern(i, it);
                if (put)
                    MPI_Win_unlock(1, win);
            }
            int anybad = 0;
            MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            if (anybad) {
                if (rank == 0)
                    fprintf(stderr, "bm_mt_async: wrong data at %zu bytes, iteration %ld\n", size,
                            it);
                rc = 3;
                break;
            }
        }
        /* rank 0 has the epochs (put), rank 1 the waits and the computation */
        double vals[2] = {sum / (double)iters, comp / (double)iters}, all[2] = {0, 0};
        if (rank > 1)
            vals[0] = vals[1] = 0;
        MPI_Reduce(vals, all, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0 && rc == 0) {
            printf("%-10zu %12.1f %12.1f\n", size, all[1] * 1e6, all[0] * 1e6);
            fflush(stdout);
        }
    }
    if (put)
        MPI_Win_free(&win);
    free(buf);
    MPI_Finalize();
    return rc;
}
