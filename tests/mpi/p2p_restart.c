/* End-to-end restart of rendezvous messages (pml/restart.c) over a
 * transport that loses one fragment without an error: tcp on the loopback
 * with BM_BTL_TCP_TEST_DROP_TAG, which makes the receiver drop one frame
 * of a PML tag after acknowledging it (p2p.cmake sets the environment).
 * Rank 0 sends rank 1 a few rendezvous messages; rank 1 verifies every
 * byte. The argument names what was lost and which mechanism must have run
 * (each rank reads its own PML counters, linked internally for that):
 *   frag: a FRAG: the receiver asked for the missing range (restarts_asked)
 *         and the sender sent it again (restarts_served);
 *   placed: the same, for a FRAG that tcp was reading straight into the
 *         receive buffer (receive placement, btl.h): it is reported lost
 *         (placed_aborted), none of its bytes count, and the range comes
 *         again;
 *   rndv: a RNDV: the sender, with no ACK, sent its RNDV again (rndv_resent);
 *   ack:  the ACK of a message whose FRAGs the receiver waits for: the same,
 *         and the receiver answers the RNDV sent again with its ACK;
 *   ssend: the ACK of a small synchronous send, whose receive finished with
 *         the RNDV: the same, answered from the receiver's history;
 *   lostfrag, lostrndv: a FRAG or a RNDV, and the receiver's tcp reports
 *         the path failed on its side only (BM_BTL_TCP_TEST_DROP_FAIL; dgram
 *         stands by): the receiver restarts its receive at once
 *         (restarts_fast) and tells the sender (paths_lost, lost_notices),
 *         which sends the range again, or its RNDV at once (rndv_fast); no
 *         timer may have fired (restart_timeouts: BM_PML_RESTART_MS is 5 s
 *         there, so without the fast restart the run is 5 s longer and
 *         fails).
 * Without the restart the message would never complete (the test's
 * timeout would end it). */
#include "bm_test.h"
#include "pml/pml_internal.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MSGS 3
#define LEN  (1 << 20)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *what = argc > 1 ? argv[1] : "frag";
    bool placed = strcmp(what, "placed") == 0;
    bool lost = strncmp(what, "lost", 4) == 0;
    bool frag = placed || strcmp(what, "frag") == 0 || strcmp(what, "lostfrag") == 0;
    bool ssend = strcmp(what, "ssend") == 0;
    BM_CHECK_MSG(size == 2, "run with 2 ranks, not %d", size);
    BM_CHECK_MSG(frag || ssend || strcmp(what, "rndv") == 0 || strcmp(what, "ack") == 0 ||
                     strcmp(what, "lostrndv") == 0,
                 "argument: frag, placed, rndv, ack, ssend, lostfrag or lostrndv, not %s", what);
    int len = ssend ? 100 : LEN;
    unsigned char *buf = malloc(LEN);
    BM_CHECK(buf != NULL);
    double t0 = MPI_Wtime();
    for (int i = 0; i < MSGS && size == 2; i++) {
        if (rank == 0) {
            bm_test_fill(buf, (size_t)len, i);
            BM_CHECK_EQ_INT(ssend ? MPI_Ssend(buf, len, MPI_BYTE, 1, i, MPI_COMM_WORLD)
                                  : MPI_Send(buf, len, MPI_BYTE, 1, i, MPI_COMM_WORLD),
                            MPI_SUCCESS);
        } else {
            memset(buf, 0, LEN);
            MPI_Status st;
            BM_CHECK_EQ_INT(MPI_Recv(buf, len, MPI_BYTE, 0, i, MPI_COMM_WORLD, &st), MPI_SUCCESS);
            int count;
            MPI_Get_count(&st, MPI_BYTE, &count);
            BM_CHECK_EQ_INT(count, len);
            size_t bad = bm_test_bad_bytes(buf, (size_t)len, i);
            BM_CHECK_MSG(bad == 0, "message %d: %zu bad bytes", i, bad);
        }
    }
    double t = MPI_Wtime() - t0;
    if (placed && rank == 1) {
        BM_CHECK_MSG(bm_pml_g.placed_aborted == 1, "%llu placed FRAGs lost, 1 expected",
                     (unsigned long long)bm_pml_g.placed_aborted);
        BM_CHECK_MSG(bm_pml_g.placed_frags >= 1, "no FRAG was received by placement");
    } else if (rank == 1) {
        BM_CHECK_MSG(bm_pml_g.placed_frags == 0 && bm_pml_g.placed_aborted == 0,
                     "%llu FRAGs received by placement, which this run turned off",
                     (unsigned long long)bm_pml_g.placed_frags);
    }
    if (frag) {
        if (rank == 1)
            BM_CHECK_MSG(bm_pml_g.restarts_asked >= 1,
                         "no restart asked for, although a FRAG was dropped");
        else
            BM_CHECK_MSG(bm_pml_g.restarts_served >= 1, "no range sent again for a restart");
    } else if (rank == 0) {
        BM_CHECK_MSG(bm_pml_g.rndv_resent >= 1,
                     "no RNDV sent again, although it or its ACK was dropped");
    }
    if (lost) {
        BM_CHECK_MSG(bm_pml_g.restart_timeouts == 0,
                     "%llu restart timer(s) fired: the restart after the path failure did not "
                     "run at once",
                     (unsigned long long)bm_pml_g.restart_timeouts);
        if (rank == 1) {
            BM_CHECK_MSG(bm_pml_g.paths_lost >= 1,
                         "no path failure seen, although tcp reported one");
            BM_CHECK_MSG(!frag || bm_pml_g.restarts_fast >= 1,
                         "the receive was not restarted at once after the path failure");
        } else {
            BM_CHECK_MSG(bm_pml_g.lost_notices >= 1, "the receiver's LOST never arrived");
            BM_CHECK_MSG(frag || bm_pml_g.rndv_fast >= 1,
                         "the RNDV was not sent again at once after the receiver's LOST");
        }
    }
    printf("rank %d: %d messages of %d bytes in %.2f s; restarts asked %llu, served %llu, "
           "stale %llu, RNDVs resent %llu, queries %llu; FRAGs placed %llu, lost %llu; paths "
           "lost %llu, LOSTs received %llu, fast restarts %llu, fast RNDVs %llu, timeouts %llu\n",
           rank, MSGS, len, t, (unsigned long long)bm_pml_g.restarts_asked,
           (unsigned long long)bm_pml_g.restarts_served,
           (unsigned long long)bm_pml_g.restarts_stale, (unsigned long long)bm_pml_g.rndv_resent,
           (unsigned long long)bm_pml_g.rndv_queries, (unsigned long long)bm_pml_g.placed_frags,
           (unsigned long long)bm_pml_g.placed_aborted, (unsigned long long)bm_pml_g.paths_lost,
           (unsigned long long)bm_pml_g.lost_notices, (unsigned long long)bm_pml_g.restarts_fast,
           (unsigned long long)bm_pml_g.rndv_fast, (unsigned long long)bm_pml_g.restart_timeouts);
    free(buf);
    int failed = bm_test_failed, any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any ? 1 : 0;
}
