/* Probes, cancels and MPI_PROC_NULL: MPI_Probe then a receive sized from
 * MPI_Get_count (eager and rendezvous messages, wildcards); MPI_Iprobe
 * polling until a message appears; probe does not consume; a cancelled
 * receive completes with MPI_Test_cancelled true and does not take the
 * message sent later, which the next receive gets; cancelling a matched
 * receive or a send leaves it complete and not cancelled; every operation
 * with MPI_PROC_NULL completes at once with source MPI_PROC_NULL, tag
 * MPI_ANY_TAG and count 0. */
#include "bm_test.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

static void test_probe_recv(void)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    const int lens[3] = {0, 37, 250000};
    MPI_Request r[3];
    int *out[3];
    for (int k = 0; k < 3; k++) {
        out[k] = malloc(sizeof(int) * (size_t)(lens[k] + 1));
        for (int i = 0; i < lens[k]; i++)
            out[k][i] = i ^ rank;
        MPI_Isend(out[k], lens[k], MPI_INT, right, 60 + k, MPI_COMM_WORLD, &r[k]);
    }
    for (int k = 2; k >= 0; k--) {
        MPI_Status st;
        int src = k == 1 ? MPI_ANY_SOURCE : left;
        BM_CHECK_EQ_INT(MPI_Probe(src, 60 + k, MPI_COMM_WORLD, &st), MPI_SUCCESS);
        BM_CHECK_EQ_INT(st.MPI_SOURCE, left);
        BM_CHECK_EQ_INT(st.MPI_TAG, 60 + k);
        int count = -1;
        MPI_Get_count(&st, MPI_INT, &count);
        BM_CHECK_EQ_INT(count, lens[k]);
        /* probing again finds the same message */
        int flag = 0;
        MPI_Status st2;
        MPI_Iprobe(left, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st2);
        BM_CHECK(flag);
        int *in = malloc(sizeof(int) * (size_t)(count + 1));
        MPI_Recv(in, count, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st2);
        int bad = 0;
        for (int i = 0; i < count; i++)
            bad += in[i] != (i ^ left);
        BM_CHECK_EQ_INT(bad, 0);
        free(in);
    }
    MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
    for (int k = 0; k < 3; k++)
        free(out[k]);
    /* Iprobe polls until the message shows up */
    int flag = 1;
    MPI_Iprobe(MPI_ANY_SOURCE, 70, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    BM_CHECK(!flag);
    MPI_Barrier(MPI_COMM_WORLD);
    int v = rank;
    MPI_Request rs;
    MPI_Isend(&v, 1, MPI_INT, right, 70, MPI_COMM_WORLD, &rs);
    MPI_Status st;
    flag = 0;
    while (!flag)
        MPI_Iprobe(MPI_ANY_SOURCE, 70, MPI_COMM_WORLD, &flag, &st);
    BM_CHECK_EQ_INT(st.MPI_SOURCE, left);
    int got = -1;
    MPI_Recv(&got, 1, MPI_INT, left, 70, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    BM_CHECK_EQ_INT(got, left);
    MPI_Wait(&rs, MPI_STATUS_IGNORE);
}

static void test_cancel(void)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int v = -1;
    MPI_Request r;
    MPI_Irecv(&v, 1, MPI_INT, left, 80, MPI_COMM_WORLD, &r);
    BM_CHECK_EQ_INT(MPI_Cancel(&r), MPI_SUCCESS);
    MPI_Status st;
    BM_CHECK_EQ_INT(MPI_Wait(&r, &st), MPI_SUCCESS);
    int cancelled = 0;
    MPI_Test_cancelled(&st, &cancelled);
    BM_CHECK(cancelled);
    BM_CHECK_EQ_INT(v, -1);
    MPI_Barrier(MPI_COMM_WORLD); /* every cancel happened before any send */
    /* the message sent now goes to the next receive, not the cancelled one */
    int out = 1000 + rank;
    MPI_Send(&out, 1, MPI_INT, right, 80, MPI_COMM_WORLD);
    MPI_Recv(&v, 1, MPI_INT, left, 80, MPI_COMM_WORLD, &st);
    BM_CHECK_EQ_INT(v, 1000 + left);
    MPI_Test_cancelled(&st, &cancelled);
    BM_CHECK(!cancelled);

    /* a receive that already matched cannot be cancelled */
    MPI_Send(&out, 1, MPI_INT, right, 81, MPI_COMM_WORLD);
    MPI_Probe(left, 81, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Irecv(&v, 1, MPI_INT, left, 81, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &cancelled);
    BM_CHECK(!cancelled);
    BM_CHECK_EQ_INT(v, 1000 + left);

    /* a send cancel is allowed to fail: the send completes normally */
    MPI_Request rs;
    MPI_Isend(&out, 1, MPI_INT, right, 82, MPI_COMM_WORLD, &rs);
    MPI_Cancel(&rs);
    MPI_Wait(&rs, &st);
    MPI_Test_cancelled(&st, &cancelled);
    MPI_Recv(&v, 1, MPI_INT, left, 82, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    BM_CHECK(!cancelled);
    BM_CHECK_EQ_INT(v, 1000 + left);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void check_proc_null(const MPI_Status *st)
{
    int count = -1;
    MPI_Get_count(st, MPI_INT, &count);
    BM_CHECK_EQ_INT(st->MPI_SOURCE, MPI_PROC_NULL);
    BM_CHECK_EQ_INT(st->MPI_TAG, MPI_ANY_TAG);
    BM_CHECK_EQ_INT(count, 0);
}

static void test_proc_null(void)
{
    int v[4] = {1, 2, 3, 4};
    MPI_Status st;
    BM_CHECK_EQ_INT(MPI_Send(v, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Ssend(v, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Recv(v, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st), MPI_SUCCESS);
    check_proc_null(&st);
    BM_CHECK_EQ_INT(v[0], 1); /* untouched */
    MPI_Request r[2];
    MPI_Isend(v, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r[0]);
    MPI_Irecv(v, 4, MPI_INT, MPI_PROC_NULL, MPI_ANY_TAG, MPI_COMM_WORLD, &r[1]);
    MPI_Status sts[2];
    BM_CHECK_EQ_INT(MPI_Waitall(2, r, sts), MPI_SUCCESS);
    check_proc_null(&sts[1]);
    BM_CHECK_EQ_INT(MPI_Probe(MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st), MPI_SUCCESS);
    check_proc_null(&st);
    int flag = 0;
    BM_CHECK_EQ_INT(MPI_Iprobe(MPI_PROC_NULL, 1, MPI_COMM_WORLD, &flag, &st), MPI_SUCCESS);
    BM_CHECK(flag);
    check_proc_null(&st);
    BM_CHECK_EQ_INT(MPI_Sendrecv(v, 4, MPI_INT, MPI_PROC_NULL, 1, v, 4, MPI_INT, MPI_PROC_NULL, 1,
                                 MPI_COMM_WORLD, &st),
                    MPI_SUCCESS);
    check_proc_null(&st);
    BM_CHECK_EQ_INT(MPI_Sendrecv_replace(v, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_PROC_NULL, 1,
                                         MPI_COMM_WORLD, &st),
                    MPI_SUCCESS);
    check_proc_null(&st);
    BM_CHECK_EQ_INT(v[3], 4);
    /* a shift that falls off both ends of a non-periodic line */
    int left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    int right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    int x = rank * 10;
    MPI_Sendrecv_replace(&x, 1, MPI_INT, right, 5, left, 5, MPI_COMM_WORLD, &st);
    BM_CHECK_EQ_INT(x, left == MPI_PROC_NULL ? 0 : left * 10);
    BM_CHECK_EQ_INT(st.MPI_SOURCE, left);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    BM_RUN(test_probe_recv);
    BM_RUN(test_cancel);
    BM_RUN(test_proc_null);
    int rc = bm_test_summary("p2p_probe");
    MPI_Finalize();
    return rc;
}
