/* Persistent requests: Send_init/Ssend_init/Recv_init started many times
 * with MPI_Start and MPI_Startall around a ring, the buffers re-read at
 * every start; Wait, Test, Waitall, Waitany and Testall on requests that
 * were never started or already completed return at once with an empty
 * status (source MPI_ANY_SOURCE, tag MPI_ANY_TAG, count 0) and leave the
 * handle valid; starting an active request is MPI_ERR_REQUEST;
 * MPI_Request_free releases inactive requests; MPI_PROC_NULL persistent
 * requests complete with the MPI_PROC_NULL status; a derived type freed
 * between Send_init/Recv_init and MPI_Start stays usable by the requests;
 * MPI_Rsend_init started around the ring once the receives are posted (a
 * barrier between), three rounds, every value checked. */
#include "bm_test.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

static void check_empty(const MPI_Status *st, MPI_Datatype dt)
{
    int count = -1;
    MPI_Get_count(st, dt, &count);
    BM_CHECK_EQ_INT(st->MPI_SOURCE, MPI_ANY_SOURCE);
    BM_CHECK_EQ_INT(st->MPI_TAG, MPI_ANY_TAG);
    BM_CHECK_EQ_INT(count, 0);
    int cancelled = 1;
    MPI_Test_cancelled(st, &cancelled);
    BM_CHECK(!cancelled);
}

static void test_inactive(void)
{
    int v = 0;
    MPI_Request r;
    MPI_Recv_init(&v, 1, MPI_INT, MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, &r);
    MPI_Status st;
    memset(&st, 0x5a, sizeof(st));
    BM_CHECK_EQ_INT(MPI_Wait(&r, &st), MPI_SUCCESS); /* returns at once */
    check_empty(&st, MPI_INT);
    BM_CHECK(r != MPI_REQUEST_NULL);
    int flag = 0;
    memset(&st, 0x5a, sizeof(st));
    BM_CHECK_EQ_INT(MPI_Test(&r, &flag, &st), MPI_SUCCESS);
    BM_CHECK(flag);
    check_empty(&st, MPI_INT);
    MPI_Request arr[2] = {r, MPI_REQUEST_NULL};
    MPI_Status sts[2];
    BM_CHECK_EQ_INT(MPI_Waitall(2, arr, sts), MPI_SUCCESS);
    check_empty(&sts[0], MPI_INT);
    check_empty(&sts[1], MPI_INT);
    int index = 0;
    BM_CHECK_EQ_INT(MPI_Waitany(2, arr, &index, &st), MPI_SUCCESS);
    BM_CHECK_EQ_INT(index, MPI_UNDEFINED);
    flag = 0;
    BM_CHECK_EQ_INT(MPI_Testall(2, arr, &flag, MPI_STATUSES_IGNORE), MPI_SUCCESS);
    BM_CHECK(flag);
    int outcount = 0, idx[2];
    BM_CHECK_EQ_INT(MPI_Waitsome(2, arr, &outcount, idx, sts), MPI_SUCCESS);
    BM_CHECK_EQ_INT(outcount, MPI_UNDEFINED);
    BM_CHECK(arr[0] == r);
    BM_CHECK_EQ_INT(MPI_Request_free(&r), MPI_SUCCESS);
    BM_CHECK(r == MPI_REQUEST_NULL);
    /* a null handle: also an empty status */
    memset(&st, 0x5a, sizeof(st));
    BM_CHECK_EQ_INT(MPI_Wait(&r, &st), MPI_SUCCESS);
    check_empty(&st, MPI_INT);
}

/* Ring exchange with persistent requests, restarted many times. */
static void test_ring(void)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    enum { N = 20000 }; /* rendezvous-sized */
    int *out = malloc(N * sizeof(int)), *in = malloc(N * sizeof(int));
    int small_out = 0, small_in = -1;
    MPI_Request reqs[4];
    MPI_Send_init(out, N, MPI_INT, right, 1, MPI_COMM_WORLD, &reqs[0]);
    MPI_Recv_init(in, N, MPI_INT, left, 1, MPI_COMM_WORLD, &reqs[1]);
    MPI_Ssend_init(&small_out, 1, MPI_INT, right, 2, MPI_COMM_WORLD, &reqs[2]);
    MPI_Recv_init(&small_in, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &reqs[3]);
    int bad = 0;
    for (int it = 0; it < 25; it++) {
        for (int i = 0; i < N; i++)
            out[i] = it * 7 + i + rank;
        small_out = it * 100 + rank;
        if (it % 2) {
            MPI_Startall(4, reqs);
        } else {
            for (int i = 3; i >= 0; i--)
                MPI_Start(&reqs[i]);
        }
        /* an active request cannot be started again */
        if (it == 3)
            BM_CHECK_EQ_INT(MPI_Start(&reqs[1]), MPI_ERR_REQUEST);
        MPI_Status sts[4];
        BM_CHECK_EQ_INT(MPI_Waitall(4, reqs, sts), MPI_SUCCESS);
        for (int i = 0; i < N; i++)
            bad += in[i] != it * 7 + i + left;
        bad += small_in != it * 100 + left;
        bad += sts[3].MPI_SOURCE != left || sts[3].MPI_TAG != 2;
        for (int i = 0; i < 4; i++)
            bad += reqs[i] == MPI_REQUEST_NULL;
        /* completed: inactive again */
        MPI_Status st;
        int flag = 0;
        MPI_Test(&reqs[1], &flag, &st);
        bad += !flag || st.MPI_SOURCE != MPI_ANY_SOURCE;
    }
    BM_CHECK_EQ_INT(bad, 0);
    for (int i = 0; i < 4; i++)
        BM_CHECK_EQ_INT(MPI_Request_free(&reqs[i]), MPI_SUCCESS);
    free(out);
    free(in);
}

/* The program may free a derived type right after Send_init/Recv_init:
 * the requests keep it alive (under ASan a freed type is a use after
 * free at MPI_Start) until MPI_Request_free. */
static void test_type_freed(void)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Datatype quad;
    BM_CHECK_EQ_INT(MPI_Type_contiguous(4, MPI_INT, &quad), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Type_commit(&quad), MPI_SUCCESS);
    int out[12], in[12];
    MPI_Request reqs[2];
    BM_CHECK_EQ_INT(MPI_Send_init(out, 3, quad, right, 5, MPI_COMM_WORLD, &reqs[0]), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Recv_init(in, 3, quad, left, 5, MPI_COMM_WORLD, &reqs[1]), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Type_free(&quad), MPI_SUCCESS);
    BM_CHECK(quad == MPI_DATATYPE_NULL);
    int bad = 0;
    for (int it = 0; it < 3; it++) {
        for (int i = 0; i < 12; i++) {
            out[i] = it * 1000 + rank * 100 + i;
            in[i] = -1;
        }
        BM_CHECK_EQ_INT(MPI_Startall(2, reqs), MPI_SUCCESS);
        MPI_Status sts[2];
        BM_CHECK_EQ_INT(MPI_Waitall(2, reqs, sts), MPI_SUCCESS);
        for (int i = 0; i < 12; i++)
            bad += in[i] != it * 1000 + left * 100 + i;
        int count = -1;
        MPI_Get_count(&sts[1], MPI_INT, &count);
        bad += count != 12;
    }
    BM_CHECK_EQ_INT(bad, 0);
    BM_CHECK_EQ_INT(MPI_Request_free(&reqs[0]), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Request_free(&reqs[1]), MPI_SUCCESS);
}

static void test_proc_null(void)
{
    int v = 1;
    MPI_Request r[2];
    MPI_Send_init(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r[0]);
    MPI_Recv_init(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r[1]);
    MPI_Startall(2, r);
    MPI_Status sts[2];
    BM_CHECK_EQ_INT(MPI_Waitall(2, r, sts), MPI_SUCCESS);
    BM_CHECK_EQ_INT(sts[1].MPI_SOURCE, MPI_PROC_NULL);
    BM_CHECK_EQ_INT(sts[1].MPI_TAG, MPI_ANY_TAG);
    int count = -1;
    MPI_Get_count(&sts[1], MPI_INT, &count);
    BM_CHECK_EQ_INT(count, 0);
    MPI_Request_free(&r[0]);
    MPI_Request_free(&r[1]);
}

/* Ready mode, persistent: each round the receive is posted before the
 * barrier, the ready send started after it. */
static void test_rsend_init(void)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int out = 0, in = -1;
    MPI_Request r[2];
    BM_CHECK_EQ_INT(MPI_Rsend_init(&out, 1, MPI_INT, right, 6, MPI_COMM_WORLD, &r[0]), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Recv_init(&in, 1, MPI_INT, left, 6, MPI_COMM_WORLD, &r[1]), MPI_SUCCESS);
    for (int round = 0; round < 3; round++) {
        in = -1;
        out = rank * 10 + round;
        MPI_Start(&r[1]);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Start(&r[0]);
        BM_CHECK_EQ_INT(MPI_Waitall(2, r, MPI_STATUSES_IGNORE), MPI_SUCCESS);
        BM_CHECK_EQ_INT(in, left * 10 + round);
    }
    MPI_Request_free(&r[0]);
    MPI_Request_free(&r[1]);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    BM_RUN(test_inactive);
    BM_RUN(test_ring);
    BM_RUN(test_type_freed);
    BM_RUN(test_proc_null);
    BM_RUN(test_rsend_init);
    int rc = bm_test_summary("p2p_persist");
    MPI_Finalize();
    return rc;
}
