/* Matched probes and receives, and the combined send-receive calls:
 * MPI_Mprobe/MPI_Improbe take a message out of matching at once (a later
 * probe or posted receive never sees it: two "libraries" probing the same
 * source each get their own message), MPI_Mrecv/MPI_Imrecv receive it
 * (eager and rendezvous sizes, a derived datatype, truncation),
 * MPI_PROC_NULL gives MPI_MESSAGE_NO_PROC, a freed communicator between
 * probe and receive; MPI_Isendrecv and MPI_Isendrecv_replace around a ring
 * with contiguous and strided types at eager and rendezvous sizes, among
 * other requests in Waitall, with MPI_PROC_NULL, and an
 * Isendrecv_replace freed while it runs still delivers; MPI_Sendrecv_replace
 * with a strided type. */
#include "bm_test.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, left, right;

static void test_mprobe_basic(void)
{
    int out[3] = {rank, rank + 1, rank + 2}, in[3] = {-1, -1, -1}, n = -1;
    MPI_Message msg;
    MPI_Status st;
    MPI_Request sreq;
    MPI_Isend(out, 3, MPI_INT, right, 11, MPI_COMM_WORLD, &sreq);
    BM_CHECK_EQ_INT(MPI_Mprobe(MPI_ANY_SOURCE, 11, MPI_COMM_WORLD, &msg, &st), MPI_SUCCESS);
    BM_CHECK(msg != MPI_MESSAGE_NULL && msg != MPI_MESSAGE_NO_PROC);
    BM_CHECK_EQ_INT(st.MPI_SOURCE, left);
    BM_CHECK_EQ_INT(st.MPI_TAG, 11);
    MPI_Get_count(&st, MPI_INT, &n);
    BM_CHECK_EQ_INT(n, 3);
    /* taken out of matching: no probe sees it any more */
    int flag = 1;
    MPI_Iprobe(left, 11, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    BM_CHECK_EQ_INT(flag, 0);
    BM_CHECK_EQ_INT(MPI_Mrecv(in, 3, MPI_INT, &msg, &st), MPI_SUCCESS);
    BM_CHECK(msg == MPI_MESSAGE_NULL);
    BM_CHECK(in[0] == left && in[2] == left + 2);
    BM_CHECK_EQ_INT(st.MPI_SOURCE, left);
    MPI_Wait(&sreq, MPI_STATUS_IGNORE);

    /* Improbe: nothing yet, then the message */
    BM_CHECK_EQ_INT(MPI_Improbe(left, 12, MPI_COMM_WORLD, &flag, &msg, &st), MPI_SUCCESS);
    BM_CHECK_EQ_INT(flag, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Send(out, 1, MPI_INT, right, 12, MPI_COMM_WORLD);
    do
        BM_CHECK_EQ_INT(MPI_Improbe(left, 12, MPI_COMM_WORLD, &flag, &msg, &st), MPI_SUCCESS);
    while (!flag);
    MPI_Request r;
    BM_CHECK_EQ_INT(MPI_Imrecv(in, 1, MPI_INT, &msg, &r), MPI_SUCCESS);
    BM_CHECK(msg == MPI_MESSAGE_NULL);
    BM_CHECK_EQ_INT(MPI_Wait(&r, &st), MPI_SUCCESS);
    BM_CHECK_EQ_INT(in[0], left);
    BM_CHECK_EQ_INT(st.MPI_TAG, 12);

    /* MPI_PROC_NULL; single-completion calls leave MPI_ERROR as it was */
    st.MPI_ERROR = MPI_ERR_DIMS;
    BM_CHECK_EQ_INT(MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &msg, &st), MPI_SUCCESS);
    BM_CHECK(msg == MPI_MESSAGE_NO_PROC);
    BM_CHECK_EQ_INT(st.MPI_SOURCE, MPI_PROC_NULL);
    BM_CHECK_EQ_INT(st.MPI_ERROR, MPI_ERR_DIMS);
    st.MPI_ERROR = MPI_ERR_TOPOLOGY;
    BM_CHECK_EQ_INT(MPI_Mrecv(in, 1, MPI_INT, &msg, &st), MPI_SUCCESS);
    BM_CHECK(msg == MPI_MESSAGE_NULL);
    BM_CHECK_EQ_INT(st.MPI_SOURCE, MPI_PROC_NULL);
    BM_CHECK_EQ_INT(st.MPI_ERROR, MPI_ERR_TOPOLOGY);
    BM_CHECK_EQ_INT(MPI_Recv(in, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st), MPI_SUCCESS);
    BM_CHECK_EQ_INT(st.MPI_ERROR, MPI_ERR_TOPOLOGY);
    BM_CHECK_EQ_INT(MPI_Improbe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &flag, &msg, &st), MPI_SUCCESS);
    BM_CHECK(flag == 1 && msg == MPI_MESSAGE_NO_PROC);
    BM_CHECK_EQ_INT(MPI_Imrecv(in, 1, MPI_INT, &msg, &r), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Wait(&r, &st), MPI_SUCCESS);
    BM_CHECK_EQ_INT(st.MPI_SOURCE, MPI_PROC_NULL);

    /* errors: a used message, truncation */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int cls = -1;
    MPI_Error_class(MPI_Mrecv(in, 1, MPI_INT, &msg, &st), &cls);
    BM_CHECK_EQ_INT(cls, MPI_ERR_REQUEST);
    MPI_Send(out, 3, MPI_INT, right, 13, MPI_COMM_WORLD);
    MPI_Mprobe(left, 13, MPI_COMM_WORLD, &msg, &st);
    MPI_Error_class(MPI_Mrecv(in, 2, MPI_INT, &msg, &st), &cls);
    BM_CHECK_EQ_INT(cls, MPI_ERR_TRUNCATE);
    BM_CHECK(msg == MPI_MESSAGE_NULL);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* Two "libraries" probe the same source for the same tag: each takes its
 * own message, and a receive posted afterwards gets the third. */
static void test_two_probers(void)
{
    int vals[3] = {100 + rank, 200 + rank, 300 + rank}, a = -1, b = -1, c = -1;
    for (int i = 0; i < 3; i++)
        MPI_Send(&vals[i], 1, MPI_INT, right, 20, MPI_COMM_WORLD);
    MPI_Message ma, mb;
    MPI_Mprobe(left, 20, MPI_COMM_WORLD, &ma, MPI_STATUS_IGNORE);
    MPI_Mprobe(left, 20, MPI_COMM_WORLD, &mb, MPI_STATUS_IGNORE);
    BM_CHECK(ma != mb);
    MPI_Recv(&c, 1, MPI_INT, left, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Mrecv(&b, 1, MPI_INT, &mb, MPI_STATUS_IGNORE);
    MPI_Mrecv(&a, 1, MPI_INT, &ma, MPI_STATUS_IGNORE);
    BM_CHECK_EQ_INT(a, 100 + left); /* message order is kept */
    BM_CHECK_EQ_INT(b, 200 + left);
    BM_CHECK_EQ_INT(c, 300 + left);
}

/* Rendezvous sizes and a strided receive type; a communicator freed
 * between the probe and the receive. */
static void test_mprobe_large(void)
{
    enum { N = 300000 };
    int *out = malloc(N * sizeof(int)), *in = malloc(2 * N * sizeof(int));
    for (int i = 0; i < N; i++)
        out[i] = rank * 7 + i;
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Request sreq;
    MPI_Isend(out, N, MPI_INT, right, 30, dup, &sreq);
    MPI_Message msg;
    MPI_Status st;
    MPI_Mprobe(left, 30, dup, &msg, &st);
    MPI_Comm_free(&dup); /* the message keeps it alive */
    MPI_Datatype every_other;
    MPI_Type_vector(N, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    memset(in, 0xff, 2 * N * sizeof(int));
    BM_CHECK_EQ_INT(MPI_Mrecv(in, 1, every_other, &msg, &st), MPI_SUCCESS);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += in[2 * i] != left * 7 + i || in[2 * i + 1] != -1;
    BM_CHECK_EQ_INT(bad, 0);
    MPI_Wait(&sreq, MPI_STATUS_IGNORE);
    MPI_Type_free(&every_other);
    free(out);
    free(in);
}

static void test_isendrecv(void)
{
    MPI_Datatype stride3;
    MPI_Type_vector(4, 1, 3, MPI_DOUBLE, &stride3);
    MPI_Type_commit(&stride3);
    for (int big = 0; big < 2; big++) {
        int n = big ? 100000 : 5;    /* elements of stride3 */
        size_t len = (size_t)n * 10; /* the extent of stride3 is 10 doubles */
        double *sb = malloc(len * sizeof(double)), *rb = malloc(len * sizeof(double));
        for (size_t i = 0; i < len; i++) {
            sb[i] = rank * 1e6 + (double)i;
            rb[i] = -1;
        }
        MPI_Request reqs[3];
        int extra_in = -1, extra_out = rank;
        MPI_Irecv(&extra_in, 1, MPI_INT, left, 41, MPI_COMM_WORLD, &reqs[0]);
        BM_CHECK_EQ_INT(MPI_Isendrecv(sb, n, stride3, right, 40, rb, n, stride3, left, 40,
                                      MPI_COMM_WORLD, &reqs[1]),
                        MPI_SUCCESS);
        MPI_Isend(&extra_out, 1, MPI_INT, right, 41, MPI_COMM_WORLD, &reqs[2]);
        MPI_Status sts[3];
        BM_CHECK_EQ_INT(MPI_Waitall(3, reqs, sts), MPI_SUCCESS);
        BM_CHECK_EQ_INT(sts[1].MPI_SOURCE, left);
        BM_CHECK_EQ_INT(sts[1].MPI_TAG, 40);
        int cnt = -1;
        MPI_Get_count(&sts[1], stride3, &cnt);
        BM_CHECK_EQ_INT(cnt, n);
        int bad = 0;
        for (size_t i = 0; i < len; i++) {
            bool data = (i % 10) % 3 == 0;
            bad += rb[i] != (data ? left * 1e6 + (double)i : -1);
        }
        BM_CHECK_EQ_INT(bad, 0);
        BM_CHECK_EQ_INT(extra_in, left);

        /* replace, strided, both blocking and nonblocking */
        for (int nb = 0; nb < 2; nb++) {
            for (size_t i = 0; i < len; i++)
                sb[i] = rank * 1e6 + (double)i + nb;
            MPI_Status st;
            if (nb) {
                MPI_Request r;
                BM_CHECK_EQ_INT(
                    MPI_Isendrecv_replace(sb, n, stride3, right, 42, left, 42, MPI_COMM_WORLD, &r),
                    MPI_SUCCESS);
                BM_CHECK_EQ_INT(MPI_Wait(&r, &st), MPI_SUCCESS);
            } else {
                BM_CHECK_EQ_INT(
                    MPI_Sendrecv_replace(sb, n, stride3, right, 42, left, 42, MPI_COMM_WORLD, &st),
                    MPI_SUCCESS);
            }
            BM_CHECK_EQ_INT(st.MPI_SOURCE, left);
            bad = 0;
            for (size_t i = 0; i < len; i++) {
                bool data = (i % 10) % 3 == 0;
                bad += sb[i] != (data ? left : rank) * 1e6 + (double)i + nb;
            }
            BM_CHECK_EQ_INT(bad, 0);
        }
        free(sb);
        free(rb);
    }
    MPI_Type_free(&stride3);

    /* MPI_PROC_NULL on both sides */
    int x = 5;
    MPI_Request r;
    MPI_Status st;
    MPI_Isendrecv_replace(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, &st);
    BM_CHECK_EQ_INT(st.MPI_SOURCE, MPI_PROC_NULL);
    BM_CHECK_EQ_INT(x, 5);

    /* freed while running: the data still lands */
    x = rank;
    MPI_Isendrecv_replace(&x, 1, MPI_INT, right, 43, left, 43, MPI_COMM_WORLD, &r);
    BM_CHECK_EQ_INT(MPI_Request_free(&r), MPI_SUCCESS);
    for (long i = 0; x != left; i++) {
        int flag;
        MPI_Iprobe(MPI_ANY_SOURCE, 9999, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE); /* progress */
        if (i > 100000000L)
            break;
    }
    BM_CHECK_EQ_INT(x, left);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;
    BM_RUN(test_mprobe_basic);
    MPI_Barrier(MPI_COMM_WORLD);
    BM_RUN(test_two_probers);
    BM_RUN(test_mprobe_large);
    BM_RUN(test_isendrecv);
    int rc = bm_test_summary("p2p_mprobe");
    MPI_Finalize();
    return rc;
}
