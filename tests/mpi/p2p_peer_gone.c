/* A point-to-point wait on a local peer that ended with nothing
 * outstanding to it: no transport watches such a peer (sm looks for dead
 * peers only while its fragments are out), so without the waits' liveness
 * look (src/pml/wait.c "Liveness") the wait lasts for ever. After a
 * barrier, rank 1 leaves with _exit(0) (no signal, no abort: bmrun keeps
 * waiting for the others) and rank 0 waits on it, as argv[1] says: recv
 * (MPI_Recv from rank 1), any (MPI_Recv from MPI_ANY_SOURCE, which depends
 * on every rank of the communicator), probe (MPI_Probe of rank 1). Its idle
 * waits ask sm whether rank 1's process still exists, it does not, that was
 * its last path, and the PML ends the job naming both ranks and hosts (the
 * test checks the text, api_expect_fail.sh). MPI_ERRORS_RETURN is set: the
 * job still ends, as Open MPI's and MPICH's do without ULFM; a call that
 * returned would print and exit 3, and the test then fails on the text.
 * bmrun's --timeout bounds a run where the look did not happen. Other
 * ranks (np 3: rank 2) wait in a receive from rank 0 that never comes. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, x = 0, rc;
    const char *op = argc > 1 ? argv[1] : "recv";

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1)
        _exit(0);
    if (rank == 0 && !strcmp(op, "any"))
        rc = MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else if (rank == 0 && !strcmp(op, "probe"))
        rc = MPI_Probe(1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else
        rc = MPI_Recv(&x, 1, MPI_INT, rank == 0 ? 1 : 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("rank %d: a %s waiting on a rank that is gone returned %d\n", rank, op, rc);
    fflush(stdout);
    _exit(3); /* no MPI_Finalize: rank 1 takes part in nothing more */
}
