/* The profiling interface (MPI-3.1 chapter 14): run with the counting tool
 * api_pmpi_tool preloaded (LD_PRELOAD), the program's calls reach the
 * tool's MPI_X, which forwards to PMPI_X, and the counts are exact: the
 * library's own internal calls (MPI_Comm_dup agreeing on a context id with
 * an allreduce, MPI_Sendrecv's send and receive, MPI_Finalize's barrier,
 * the collectives' point-to-point steps) go to PMPI_X or internal helpers,
 * never through the MPI_X names, so a tool sees only the program's own
 * calls (the standard allows either; bitmover chooses this). Without the
 * tool loaded the test fails: it must find pmpi_tool_count. */
#include "bm_test.h"

#include <dlfcn.h>
#include <mpi.h>

static int rank, size;

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int (*count)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "pmpi_tool_count");
    BM_CHECK_MSG(count != NULL, "the counting tool is not loaded (LD_PRELOAD api_pmpi_tool)");
    if (!count) {
        MPI_Finalize();
        return bm_test_summary("api_pmpi");
    }
    int right = (rank + 1) % size, left = (rank + size - 1) % size, v = rank, w = -1;
    MPI_Request rq[2];
    for (int i = 0; i < 3; i++) {
        MPI_Irecv(&w, 1, MPI_INT, left, i, MPI_COMM_WORLD, &rq[0]);
        MPI_Send(&v, 1, MPI_INT, right, i, MPI_COMM_WORLD);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    }
    MPI_Isend(&v, 1, MPI_INT, right, 9, MPI_COMM_WORLD, &rq[1]);
    MPI_Recv(&w, 1, MPI_INT, left, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
    MPI_Sendrecv(&v, 1, MPI_INT, right, 10, &w, 1, MPI_INT, left, 10, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, dup);
    MPI_Bcast(&sum, 1, MPI_INT, 0, dup);
    MPI_Barrier(dup);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm_free(&dup);
    MPI_Pcontrol(1);

    BM_CHECK_EQ_INT(count("Send"), 3);
    BM_CHECK_EQ_INT(count("Irecv"), 3);
    BM_CHECK_EQ_INT(count("Isend"), 1);
    BM_CHECK_EQ_INT(count("Recv"), 1);
    BM_CHECK_EQ_INT(count("Wait"), 4);
    BM_CHECK_EQ_INT(count("Sendrecv"), 1);
    BM_CHECK_EQ_INT(count("Comm_dup"), 1);
    BM_CHECK_EQ_INT(count("Allreduce"), 1); /* not Comm_dup's own */
    BM_CHECK_EQ_INT(count("Bcast"), 1);
    BM_CHECK_EQ_INT(count("Barrier"), 2);
    BM_CHECK_EQ_INT(count("Comm_free"), 1);
    BM_CHECK_EQ_INT(count("Pcontrol"), 1);
    BM_CHECK_EQ_INT(sum, size * (size - 1) / 2);
    int rc = bm_test_summary("api_pmpi");
    MPI_Finalize();
    return rc;
}
