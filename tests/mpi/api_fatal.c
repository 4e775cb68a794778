/* An MPI program that fails on purpose, run by api_expect_fail.sh, which
 * checks that the job ends with a non-zero status and a clear message. The
 * first argument picks the failure: "root" (the last rank calls MPI_Bcast
 * with an invalid root under MPI_ERRORS_ARE_FATAL while the others wait in a
 * barrier), "op" (every rank reduces MPI_2INT with MPI_SUM), "abort" (rank
 * 1, or 0 alone, calls MPI_Abort with code 7),
 * "before-init" (MPI_Comm_rank before MPI_Init), "after-finalize",
 * "init-twice" (rank 0 calls MPI_Init again). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "root";
    int rank, size, buf = 0;

    if (strcmp(mode, "before-init") == 0) {
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        return 0;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (strcmp(mode, "root") == 0) {
        if (rank == size - 1)
            MPI_Bcast(&buf, 1, MPI_INT, size + 5, MPI_COMM_WORLD);
        else
            MPI_Barrier(MPI_COMM_WORLD);
    } else if (strcmp(mode, "op") == 0) {
        int pair[2] = {rank, rank}, out[2];
        MPI_Allreduce(pair, out, 1, MPI_2INT, MPI_SUM, MPI_COMM_WORLD);
    } else if (strcmp(mode, "abort") == 0) {
        if (rank == (size > 1 ? 1 : 0))
            MPI_Abort(MPI_COMM_WORLD, 7);
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (strcmp(mode, "init-twice") == 0) {
        if (rank == 0)
            MPI_Init(&argc, &argv);
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (strcmp(mode, "after-finalize") == 0) {
        MPI_Finalize();
        MPI_Barrier(MPI_COMM_WORLD);
        return 0;
    }
    /* Reaching this point means the error did not end the job. */
    fprintf(stderr, "api_fatal: rank %d survived mode %s\n", rank, mode);
    MPI_Finalize();
    return 0;
}
