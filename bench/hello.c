/* bm_hello: the program whose launch-to-exit time bench/compare reports as
 * "startup": MPI_Init, one MPI_Barrier over all ranks, MPI_Finalize. Rank 0
 * prints one line so that the driver can tell a real run from a launcher that
 * exited early. Timing is done from outside, around the launcher command,
 * because that is the wait a user sees. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("bm_hello: %d ranks initialised and synchronised\n", nprocs);
    MPI_Finalize();
    return 0;
}
