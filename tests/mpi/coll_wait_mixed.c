/* Ranks that wait differently on the shared-memory segment
 * (src/mpi/coll_sm.c): whether a rank sleeps in its waits is its own
 * choice (BM_PML_WAIT_MODE=auto sleeps under MPI_THREAD_MULTIPLE, here with
 * BM_PML_WAIT_SPIN_US=0), so rank 0 asks for MPI_THREAD_MULTIPLE and sleeps,
 * rank 1 asks for MPI_THREAD_SINGLE and does not. The set-up agrees that
 * some rank sleeps, so rank 1's stores ring the sleeper's doorbell (a wake-up
 * message) instead of leaving it to its 1 ms timeout. ROUNDS barriers, rank 1
 * arriving LATE_US late to each so that rank 0 falls asleep on its flag:
 * rank 0 must have slept (sm.sleep), and rank 1 must have sent wake-ups (its
 * active messages to rank 0: 18-20 of 20 rounds on an idle machine; one
 * whose store comes while rank 0 polls between two sleeps sends none, and
 * under ASan at load 30 one run of many had fewer than half, so the check
 * asks for one); without the agreement it sends none at all. */
#include "bm_test.h"

#include <bitmover.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "pml/pml.h"

#define ROUNDS  20
#define LATE_US 10000

int main(int argc, char **argv)
{
    int rank, provided, want;
    unsigned long slept, on_sm;
    uint32_t sent;

    /* the rank is not known before MPI_Init_thread: bmrun's is */
    const char *r = getenv("BMRUN_RANK");
    want = r && atoi(r) == 0 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE;
    MPI_Init_thread(&argc, &argv, want, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    bm_test_current = "coll_wait_mixed";
    BM_CHECK_MSG(rank != 0 || bm_pml_wait_blocks(), "rank 0 (MPI_THREAD_MULTIPLE) does not sleep");
    BM_CHECK_MSG(rank == 0 || !bm_pml_wait_blocks(), "rank %d (MPI_THREAD_SINGLE) sleeps", rank);
    MPI_Barrier(MPI_COMM_WORLD); /* the segment is made */
    slept = bm_coll_alg_count("sm.sleep");
    on_sm = bm_coll_alg_count("barrier.sm");
    sent = bm_pml_am_sent(0);
    for (int i = 0; i < ROUNDS; i++) {
        if (rank == 1)
            usleep(LATE_US);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    printf("rank %d: %lu sleeps on flags, %u active messages to rank 0\n", rank,
           bm_coll_alg_count("sm.sleep") - slept, (unsigned)(bm_pml_am_sent(0) - sent));
    BM_CHECK_MSG(bm_coll_alg_count("barrier.sm") - on_sm == ROUNDS,
                 "rank %d: %lu of %d barriers on the segment", rank,
                 bm_coll_alg_count("barrier.sm") - on_sm, ROUNDS);
    if (rank == 0)
        BM_CHECK_MSG(bm_coll_alg_count("sm.sleep") > slept,
                     "rank 0 never slept on a flag in %d late barriers", ROUNDS);
    else
        BM_CHECK_MSG(bm_pml_am_sent(0) - sent >= 1,
                     "rank 1 woke the sleeping rank 0 in %u of %d barriers (it must ring)",
                     (unsigned)(bm_pml_am_sent(0) - sent), ROUNDS);
    MPI_Finalize();
    return bm_test_summary("coll_wait_mixed");
}
