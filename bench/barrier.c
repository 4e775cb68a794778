/* bm_barrier: a barrier-heavy loop, the shape of a bulk-synchronous program
 * with little work per step: -i steps (default 2000), each a little local
 * work (-c microseconds of computation, default 0) and an MPI_Barrier on
 * MPI_COMM_WORLD, plus an MPI_Allreduce of one integer every 16 steps whose
 * result is checked. Reported: seconds for the loop (slowest rank) and
 * microseconds per step. Run with more ranks than cores to see how a
 * library waits: spinning ranks hold the cores their peers need, sleeping
 * ones give them away (bitmover: BM_PML_WAIT_MODE). MPI standard only:
 * builds unchanged with bmcc, mpicc.openmpi and mpicc.mpich. */
#include "bench_common.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, nprocs, opt;
    long steps = 2000;
    double work_us = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    while ((opt = getopt(argc, argv, "i:c:h")) != -1) {
        if (opt == 'i') {
            steps = atol(optarg);
        } else if (opt == 'c') {
            work_us = atof(optarg);
        } else {
            if (rank == 0)
                fprintf(stderr, "usage: bm_barrier [-i STEPS] [-c WORK_US]\n");
            MPI_Finalize();
            return opt == 'h' ? 0 : 2;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    int wrong = 0;
    for (long s = 0; s < steps; s++) {
        if (work_us > 0)
            bm_bench_compute(work_us);
        MPI_Barrier(MPI_COMM_WORLD);
        if (s % 16 == 0) {
            int mine = rank + (int)s, sum = 0;
            MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            if (sum != nprocs * (nprocs - 1) / 2 + nprocs * (int)s)
                wrong = 1;
        }
    }
    double elapsed = MPI_Wtime() - t0, slowest = 0;
    int anywrong = 0;
    MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&wrong, &anywrong, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("# bm_barrier: %ld steps of %.1f us work + MPI_Barrier, %d ranks\n", steps, work_us,
               nprocs);
        printf("# ranks  seconds  us/step\n");
        printf("%-6d %9.4f %10.2f\n", nprocs, slowest, slowest / (double)steps * 1e6);
        if (anywrong)
            fprintf(stderr, "bm_barrier: wrong allreduce result\n");
    }
    MPI_Finalize();
    return anywrong ? 3 : 0;
}
