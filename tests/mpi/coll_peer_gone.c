/* A rank that ends inside a collective on the shared-memory segment
 * (src/mpi/coll_sm.c): the others wait on its flag, which no transport
 * watches (nothing is outstanding to it), so without a liveness check they
 * wait for ever. 3 ranks, the broadcast forced to the segment: after a
 * barrier and a broadcast (the segment is made and works), rank 1 leaves
 * with _exit(0) (no signal, no abort: bmrun keeps waiting for the others)
 * and ranks 0 and 2 enter a broadcast from rank 1. Their waits ask the PML
 * whether rank 1 is still there; sm finds its process gone, that was its
 * last path, and the PML ends the job naming both ranks and hosts (the test
 * checks the text, api_expect_fail.sh). Should the PML let the call return
 * instead, the broadcast fails through the error handler (fatal here) and
 * the ranks print nothing: the test then fails on the text. bmrun's
 * --timeout bounds a run where the look did not happen. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank;
    char buf[64] = "";

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Bcast(buf, sizeof(buf), MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 1)
        _exit(0);
    MPI_Bcast(buf, sizeof(buf), MPI_CHAR, 1, MPI_COMM_WORLD);
    printf("rank %d: a broadcast from a rank that is gone returned\n", rank);
    fflush(stdout);
    _exit(3); /* no MPI_Finalize: rank 1 takes part in nothing more */
}
