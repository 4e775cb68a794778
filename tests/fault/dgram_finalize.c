/* MPI_Finalize over a lossy dgram path (bm_pml_quiesce): the last datagrams
 * of a job are lost, and the job must still end at once and cleanly.
 * Rank 1 enters MPI_Finalize first, so its barrier message is already at
 * rank 0 when rank 0's leaves; rank 0 loses that message (the test hook
 * bm_btl_dgram_inject_drop_next drops its next FRAG), and rank 1 loses its
 * next three standalone ACKs. Rank 0's barrier then completes at once and
 * its eager send is complete for the PML, but not acknowledged: without
 * the drain, rank 0 closed its transport and rank 1 waited in the barrier
 * for good. Now rank 0 resends until the ACK comes, while rank 1, done
 * with its barrier, waits in the job-wide fence and keeps answering (its
 * first ACKs are lost too: without progress in the fence, rank 0 waited
 * for an ACK that never came). Checks: MPI_Finalize returns within 10 s on
 * both ranks (a few ms normally), rank 0's drain began with an
 * unacknowledged send and ended with none, and both fences completed. */
#include "bm_test.h"
#include "btl/btl.h"
#include "btl/dgram/dgram.h"
#include "pml/pml.h"
#include "util/clock.h"

#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "%s: run with 2 ranks\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    struct bm_btl_peer *peer = bm_btl_base_peer(1 - rank);
    struct bm_btl_dgram_module *dm = NULL;
    for (int i = 0; peer && i < peer->send.count; i++)
        if (strcmp(peer->send.paths[i].module->ops->name, "dgram") == 0)
            dm = (struct bm_btl_dgram_module *)peer->send.paths[i].module;
    BM_CHECK_MSG(dm != NULL, "dgram does not reach rank %d (set BM_BTL=self,dgram)", 1 - rank);
    if (!dm) {
        MPI_Finalize();
        return bm_test_summary("dgram_finalize");
    }
    /* first contact (the connectivity check) is over before the losses */
    int v = rank, w = -1;
    MPI_Sendrecv(&v, 1, MPI_INT, 1 - rank, 0, &w, 1, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    BM_CHECK_EQ_INT(w, 1 - rank);
    MPI_Barrier(MPI_COMM_WORLD);
    /* Both progress (MPI_Iprobe) rather than sleep: the ACKs this barrier
     * owes go out, and none comes late (a round trip as long as a sleep
     * would make the retransmit timeouts long). Rank 1 enters MPI_Finalize
     * first; its barrier message reaches rank 0 while rank 0 still waits. */
    uint64_t until = bm_util_clock_now_ns() + (rank == 0 ? 100000000u : 20000000u);
    int flag;
    while (bm_util_clock_now_ns() < until)
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    if (rank == 0)
        bm_btl_dgram_inject_drop_next(dm, BM_DGRAM_T_FRAG, 1);
    else
        bm_btl_dgram_inject_drop_next(dm, BM_DGRAM_T_ACK, 3);
    uint64_t t0 = bm_util_clock_now_ns();
    MPI_Finalize();
    double ms = (double)(bm_util_clock_now_ns() - t0) / 1e6;
    struct bm_pml_quiesce_stats q;
    bm_pml_quiesce_stats(&q);
    printf("rank %d: MPI_Finalize %.1f ms; drain %.2f ms (%d descriptors owed, then %d "
           "unacknowledged sends, %d left), fence %.2f ms (%s, progress found %llu)\n",
           rank, ms, (double)q.drain_ns / 1e6, q.owed_start, q.unacked_start, q.unacked_end,
           (double)q.fence_ns / 1e6, q.fenced ? "completed" : "FAILED",
           (unsigned long long)q.fence_work);
    BM_CHECK_MSG(ms < 10000.0, "rank %d: MPI_Finalize took %.0f ms", rank, ms);
    BM_CHECK_MSG(q.fenced, "rank %d: the finalize fence did not complete", rank);
    BM_CHECK_EQ_INT(q.unacked_end, 0);
    if (rank == 0)
        BM_CHECK_MSG(q.owed_start + q.unacked_start >= 1,
                     "rank 0 began its drain owing nothing: its lost barrier message was not "
                     "waited for");
    else
        BM_CHECK_MSG(q.fence_work >= 1,
                     "rank 1 received nothing during its fence: rank 0's resends (whose ACKs "
                     "it lost) were answered elsewhere, the fence's progress was not tested");
    return bm_test_summary("dgram_finalize");
}
