/* The yield mode's time limit (src/pml/wait.c yield_when_due): in a job
 * over several hosts a wait in the yield mode gives its core away after 1
 * us of idle polling even before BM_PML_IDLE_YIELD polls (a network
 * transport's poll is a system call); a job on one host keeps the count
 * alone. Run with BM_PML_IDLE_YIELD=1000000 (so a yield by count cannot
 * happen in these waits): rank 0 works 1 ms before each answer of a 100
 * round ping-pong, so rank 1 waits idle that long each time. With -t
 * (coll_hier.sh runs it on two network-namespace hosts) the job must span
 * hosts and rank 1 must have counted yields of the time limit; without it
 * (one host) there must be none. Every message is checked. */
#include "bm_test.h"
#include "pml/pml_internal.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size;
    bool over_hosts = argc > 1 && strcmp(argv[1], "-t") == 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    BM_CHECK_EQ_INT(size, 2);
    bm_test_current = "pingpong with idle waits";
    BM_CHECK_MSG(bm_pml_g.spans_hosts == over_hosts, "the job %s hosts, expected %s",
                 bm_pml_g.spans_hosts ? "spans" : "does not span", over_hosts ? "several" : "one");
    for (int i = 0; i < 100; i++) {
        int msg = i, in = -1;
        if (rank == 0) {
            for (double w = MPI_Wtime(); MPI_Wtime() - w < 1e-3;)
                ;
            MPI_Send(&msg, 1, MPI_INT, 1, 7, MPI_COMM_WORLD);
            MPI_Recv(&in, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&in, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&in, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
        }
        BM_CHECK_EQ_INT(in, i);
    }
    if (rank == 1) {
        unsigned long yields = bm_pml_wait_timed_yields();
        printf("rank 1: %lu yields of the 1 us limit (%s)\n", yields,
               over_hosts ? "over two hosts" : "one host");
        if (over_hosts)
            BM_CHECK_MSG(yields > 0, "idle waits over a network never yielded after 1 us");
        else
            BM_CHECK_MSG(yields == 0, "a job on one host yielded %lu times by time", yields);
    }
    MPI_Finalize();
    return bm_test_summary("pml_yield_time");
}
