/* Cancelling sends and receives (MPI_Cancel, MPI_Test_cancelled): a send
 * whose message still waits unmatched at the receiver is cancelled
 * (rendezvous sizes, a synchronous send, a persistent send, and an eager
 * send that had already completed locally) and the receiver never gets it:
 * the next message with the same tag is the one it receives; a send that
 * has matched is not cancelled and arrives; a small standard send that
 * completed inside MPI_Isend (no request left in the PML) is not cancelled
 * and arrives (bitmover's honest limit); unmatched receives are cancelled.
 * Ranks 0 and 1 only (the others wait). */
#include "bm_test.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

#define SENTINEL (-12345)

/* Rank 1 waits until the message from rank 0 with tag is in its unexpected
 * queue (messages and barrier traffic may take different channels), then
 * joins the barrier that lets rank 0 cancel. */
static void arrived_then_barrier(int tag)
{
    int flag = 0;
    while (!flag)
        MPI_Iprobe(0, tag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
}

#define TAG_GO 1000

/* Rank 0: the cancel is settled; rank 1 may post receives again. */
static void settled(void)
{
    MPI_Send(NULL, 0, MPI_INT, 1, TAG_GO, MPI_COMM_WORLD);
}

/* Rank 1, once rank 0 settled its cancel (a receive posted before would
 * match the waiting message and defeat the cancel): receive the next
 * message with tag from rank 0 and check it is the sentinel (the
 * cancelled one must not come first). */
static void expect_sentinel(int tag)
{
    MPI_Recv(NULL, 0, MPI_INT, 0, TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int *in = malloc(1 << 22);
    MPI_Status st;
    MPI_Recv(in, (1 << 22) / (int)sizeof(int), MPI_INT, 0, tag, MPI_COMM_WORLD, &st);
    int n = -1;
    MPI_Get_count(&st, MPI_INT, &n);
    BM_CHECK_MSG(n == 1 && in[0] == SENTINEL,
                 "tag %d: a cancelled message was delivered (%d ints, first %d)", tag, n, in[0]);
    free(in);
}

static void test_cancel_unmatched(void)
{
    /* count in ints, synchronous */
    static const struct {
        int count;
        int sync;
    } cases[] = {{300000, 0}, {1, 1}, {2000, 1}, {300000, 1}};
    int ncases = (int)(sizeof(cases) / sizeof(cases[0]));
    for (int c = 0; c < ncases; c++) {
        int tag = 70 + c;
        if (rank == 0) {
            int *out = malloc(sizeof(int) * (size_t)cases[c].count);
            for (int i = 0; i < cases[c].count; i++)
                out[i] = i;
            MPI_Request r;
            if (cases[c].sync)
                MPI_Issend(out, cases[c].count, MPI_INT, 1, tag, MPI_COMM_WORLD, &r);
            else
                MPI_Isend(out, cases[c].count, MPI_INT, 1, tag, MPI_COMM_WORLD, &r);
            /* rank 1 sees the message wait in its unexpected queue */
            MPI_Barrier(MPI_COMM_WORLD);
            BM_CHECK_EQ_INT(MPI_Cancel(&r), MPI_SUCCESS);
            MPI_Status st;
            BM_CHECK_EQ_INT(MPI_Wait(&r, &st), MPI_SUCCESS);
            int flag = 0;
            MPI_Test_cancelled(&st, &flag);
            BM_CHECK_MSG(flag, "case %d (%d ints%s) was not cancelled", c, cases[c].count,
                         cases[c].sync ? ", synchronous" : "");
            int sentinel = SENTINEL;
            MPI_Send(&sentinel, 1, MPI_INT, 1, tag, MPI_COMM_WORLD);
            settled();
            free(out);
        } else if (rank == 1) {
            arrived_then_barrier(tag);
            expect_sentinel(tag);
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
}

/* An eager send that completed locally (its request still there) and a
 * persistent rendezvous send are cancelled; the persistent one then runs
 * normally when started again. */
static void test_cancel_eager_and_persistent(void)
{
    enum { MID = 3000, BIG = 300000 };
    int *out = malloc(BIG * sizeof(int)), *in = malloc(BIG * sizeof(int));
    for (int i = 0; i < BIG; i++)
        out[i] = i + 1;
    if (rank == 0) {
        MPI_Request r;
        MPI_Status st;
        int flag = 0, cancelled_eager;
        /* A standard send larger than the inline limit: a PML request,
         * eager or rendezvous depending on the transport. */
        MPI_Isend(out, MID, MPI_INT, 1, 80, MPI_COMM_WORLD, &r);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Cancel(&r);
        MPI_Wait(&r, &st);
        MPI_Test_cancelled(&st, &cancelled_eager);
        BM_CHECK_MSG(cancelled_eager, "an unmatched %d-int send was not cancelled", MID);
        int sentinel = SENTINEL;
        MPI_Send(&sentinel, 1, MPI_INT, 1, 80, MPI_COMM_WORLD);
        settled();

        MPI_Send_init(out, BIG, MPI_INT, 1, 81, MPI_COMM_WORLD, &r);
        MPI_Start(&r);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Cancel(&r);
        MPI_Wait(&r, &st);
        MPI_Test_cancelled(&st, &flag);
        BM_CHECK_MSG(flag, "an unmatched persistent send was not cancelled");
        MPI_Send(&sentinel, 1, MPI_INT, 1, 81, MPI_COMM_WORLD);
        settled();
        MPI_Start(&r); /* again, not cancelled this time */
        MPI_Wait(&r, &st);
        MPI_Test_cancelled(&st, &flag);
        BM_CHECK_EQ_INT(flag, 0);
        MPI_Request_free(&r);
    } else if (rank == 1) {
        arrived_then_barrier(80);
        expect_sentinel(80);
        arrived_then_barrier(81);
        expect_sentinel(81);
        MPI_Recv(in, BIG, MPI_INT, 0, 81, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        BM_CHECK(in[0] == 1 && in[BIG - 1] == BIG);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(out);
    free(in);
}

/* Cancels that cannot succeed: the message matched already, or it left
 * inside MPI_Isend; both arrive, and the statuses say not cancelled. */
static void test_cancel_too_late(void)
{
    enum { BIG = 300000 };
    int *buf = malloc(BIG * sizeof(int));
    if (rank == 0) {
        MPI_Request r;
        MPI_Status st;
        int flag = 1, small = 42;
        MPI_Isend(&small, 1, MPI_INT, 1, 90, MPI_COMM_WORLD, &r); /* inline: no request */
        MPI_Cancel(&r);
        MPI_Wait(&r, &st);
        MPI_Test_cancelled(&st, &flag);
        BM_CHECK_EQ_INT(flag, 0);
        for (int i = 0; i < BIG; i++)
            buf[i] = -i;
        MPI_Isend(buf, BIG, MPI_INT, 1, 91, MPI_COMM_WORLD, &r);
        MPI_Barrier(MPI_COMM_WORLD); /* rank 1 has received it */
        MPI_Cancel(&r);
        MPI_Wait(&r, &st);
        MPI_Test_cancelled(&st, &flag);
        BM_CHECK_EQ_INT(flag, 0);
    } else if (rank == 1) {
        int v = 0;
        MPI_Recv(&v, 1, MPI_INT, 0, 90, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        BM_CHECK_EQ_INT(v, 42);
        MPI_Recv(buf, BIG, MPI_INT, 0, 91, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        BM_CHECK(buf[BIG - 1] == -(BIG - 1));
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(buf);
}

static void test_cancel_recv(void)
{
    int v = -1, flag = 0;
    MPI_Request r;
    MPI_Status st;
    MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &flag);
    BM_CHECK_EQ_INT(flag, 1);
    BM_CHECK_EQ_INT(v, -1);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    BM_RUN(test_cancel_recv);
    if (size >= 2) {
        BM_RUN(test_cancel_unmatched);
        BM_RUN(test_cancel_eager_and_persistent);
        BM_RUN(test_cancel_too_late);
    }
    int rc = bm_test_summary("p2p_cancel");
    MPI_Finalize();
    return rc;
}
