/* Error classes of the point-to-point entry points under MPI_ERRORS_RETURN:
 * negative counts (MPI_ERR_COUNT), invalid ranks including MPI_ANY_SOURCE
 * on sends (MPI_ERR_RANK), NULL buffers with data (MPI_ERR_BUFFER), invalid
 * tags including MPI_ANY_TAG on sends (MPI_ERR_TAG), null or wrong-kind
 * datatypes (MPI_ERR_TYPE) and communicators (MPI_ERR_COMM), request
 * misuse (MPI_ERR_REQUEST, MPI_ERR_ARG), and that a failed call leaves no
 * request behind and does not disturb the traffic that follows. A user
 * error handler sees the same classes. */
#include "bm_test.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;
static int handler_calls, handler_code;

static void on_error(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    handler_calls++;
    handler_code = *code;
}

static int cls(int code)
{
    int c = -1;
    MPI_Error_class(code, &c);
    return c;
}

static void test_send_args(void)
{
    int buf[4] = {0};
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Comm w = MPI_COMM_WORLD;
    BM_CHECK_EQ_INT(cls(MPI_Send(buf, -1, MPI_INT, 0, 0, w)), MPI_ERR_COUNT);
    BM_CHECK_EQ_INT(cls(MPI_Isend(buf, -5, MPI_INT, 0, 0, w, &r)), MPI_ERR_COUNT);
    BM_CHECK(r == MPI_REQUEST_NULL);
    BM_CHECK_EQ_INT(cls(MPI_Send(buf, 1, MPI_INT, size, 0, w)), MPI_ERR_RANK);
    BM_CHECK_EQ_INT(cls(MPI_Send(buf, 1, MPI_INT, -7, 0, w)), MPI_ERR_RANK);
    BM_CHECK_EQ_INT(cls(MPI_Send(buf, 1, MPI_INT, MPI_ANY_SOURCE, 0, w)), MPI_ERR_RANK);
    BM_CHECK_EQ_INT(cls(MPI_Ssend(buf, 1, MPI_INT, size + 3, 0, w)), MPI_ERR_RANK);
    BM_CHECK_EQ_INT(cls(MPI_Send(NULL, 2, MPI_INT, 0, 0, w)), MPI_ERR_BUFFER);
    BM_CHECK_EQ_INT(cls(MPI_Send(buf, 1, MPI_INT, 0, -2, w)), MPI_ERR_TAG);
    BM_CHECK_EQ_INT(cls(MPI_Send(buf, 1, MPI_INT, 0, MPI_ANY_TAG, w)), MPI_ERR_TAG);
    BM_CHECK_EQ_INT(cls(MPI_Rsend(buf, 1, MPI_INT, 0, -3, w)), MPI_ERR_TAG);
    BM_CHECK_EQ_INT(cls(MPI_Send(buf, 1, MPI_DATATYPE_NULL, 0, 0, w)), MPI_ERR_TYPE);
    BM_CHECK_EQ_INT(cls(MPI_Send(buf, 1, (MPI_Datatype)(void *)MPI_COMM_WORLD, 0, 0, w)),
                    MPI_ERR_TYPE);
    BM_CHECK_EQ_INT(cls(MPI_Send(buf, 1, MPI_INT, 0, 0, MPI_COMM_NULL)), MPI_ERR_COMM);
    BM_CHECK_EQ_INT(cls(MPI_Isend(buf, 1, MPI_INT, 0, 0, w, NULL)), MPI_ERR_ARG);
    BM_CHECK_EQ_INT(cls(MPI_Send_init(buf, 1, MPI_INT, size, 0, w, &r)), MPI_ERR_RANK);
    BM_CHECK(r == MPI_REQUEST_NULL);
    /* zero elements may come with a NULL buffer */
    BM_CHECK_EQ_INT(MPI_Send(NULL, 0, MPI_INT, MPI_PROC_NULL, 0, w), MPI_SUCCESS);
}

static void test_recv_args(void)
{
    int buf[4] = {0};
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Status st;
    BM_CHECK_EQ_INT(cls(MPI_Recv(buf, -1, MPI_INT, 0, 0, w, &st)), MPI_ERR_COUNT);
    BM_CHECK_EQ_INT(cls(MPI_Irecv(buf, 1, MPI_INT, size, 0, w, &r)), MPI_ERR_RANK);
    BM_CHECK(r == MPI_REQUEST_NULL);
    BM_CHECK_EQ_INT(cls(MPI_Recv(buf, 1, MPI_INT, -9, 0, w, &st)), MPI_ERR_RANK);
    BM_CHECK_EQ_INT(cls(MPI_Recv(NULL, 3, MPI_INT, 0, 0, w, &st)), MPI_ERR_BUFFER);
    BM_CHECK_EQ_INT(cls(MPI_Recv(buf, 1, MPI_INT, 0, -5, w, &st)), MPI_ERR_TAG);
    BM_CHECK_EQ_INT(cls(MPI_Irecv(buf, 1, MPI_DATATYPE_NULL, 0, 0, w, &r)), MPI_ERR_TYPE);
    BM_CHECK_EQ_INT(cls(MPI_Recv_init(buf, 1, MPI_INT, 0, 0, MPI_COMM_NULL, &r)), MPI_ERR_COMM);
    BM_CHECK_EQ_INT(cls(MPI_Probe(size, 0, w, &st)), MPI_ERR_RANK);
    int flag;
    BM_CHECK_EQ_INT(cls(MPI_Iprobe(0, -4, w, &flag, &st)), MPI_ERR_TAG);
    BM_CHECK_EQ_INT(cls(MPI_Iprobe(0, 0, w, NULL, &st)), MPI_ERR_ARG);
    BM_CHECK_EQ_INT(cls(MPI_Sendrecv(buf, 1, MPI_INT, 0, 0, buf, -1, MPI_INT, 0, 0, w, &st)),
                    MPI_ERR_COUNT);
    BM_CHECK_EQ_INT(cls(MPI_Sendrecv_replace(buf, 1, MPI_INT, 0, MPI_ANY_TAG, 0, 0, w, &st)),
                    MPI_ERR_TAG);
    BM_CHECK_EQ_INT(cls(MPI_Get_count(NULL, MPI_INT, &flag)), MPI_ERR_ARG);
}

static void test_request_misuse(void)
{
    MPI_Request r = MPI_REQUEST_NULL;
    BM_CHECK_EQ_INT(cls(MPI_Request_free(&r)), MPI_ERR_REQUEST);
    BM_CHECK_EQ_INT(cls(MPI_Start(&r)), MPI_ERR_REQUEST);
    BM_CHECK_EQ_INT(cls(MPI_Wait(NULL, MPI_STATUS_IGNORE)), MPI_ERR_ARG);
    BM_CHECK_EQ_INT(cls(MPI_Cancel(&r)), MPI_ERR_REQUEST);
    BM_CHECK_EQ_INT(cls(MPI_Waitall(-1, &r, MPI_STATUSES_IGNORE)), MPI_ERR_COUNT);
    MPI_Request bogus = (MPI_Request)(void *)MPI_COMM_WORLD;
    BM_CHECK_EQ_INT(cls(MPI_Wait(&bogus, MPI_STATUS_IGNORE)), MPI_ERR_REQUEST);
    int v = 0;
    /* a non-persistent request cannot be started */
    MPI_Isend(&v, 1, MPI_INT, rank, 1, MPI_COMM_WORLD, &r);
    BM_CHECK_EQ_INT(cls(MPI_Start(&r)), MPI_ERR_REQUEST);
    MPI_Recv(&v, 1, MPI_INT, rank, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    /* Buffer_attach misuse */
    BM_CHECK_EQ_INT(cls(MPI_Buffer_attach(NULL, 100)), MPI_ERR_BUFFER);
    BM_CHECK_EQ_INT(cls(MPI_Bsend(&v, 1, MPI_INT, rank, 0, MPI_COMM_WORLD)), MPI_ERR_BUFFER);
}

/* After all the failed calls, traffic still flows normally. */
static void test_still_works(void)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int out = rank, in = -1;
    MPI_Sendrecv(&out, 1, MPI_INT, right, 3, &in, 1, MPI_INT, left, 3, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    BM_CHECK_EQ_INT(in, left);
}

static void test_user_handler(void)
{
    MPI_Errhandler eh;
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_create_errhandler(on_error, &eh);
    MPI_Comm_set_errhandler(dup, eh);
    int v = 0;
    handler_calls = 0;
    BM_CHECK_EQ_INT(cls(MPI_Send(&v, 1, MPI_INT, size, 0, dup)), MPI_ERR_RANK);
    BM_CHECK_EQ_INT(handler_calls, 1);
    BM_CHECK_EQ_INT(cls(handler_code), MPI_ERR_RANK);
    BM_CHECK_EQ_INT(cls(MPI_Recv(&v, 1, MPI_INT, 0, -1000, dup, MPI_STATUS_IGNORE)), MPI_ERR_TAG);
    BM_CHECK_EQ_INT(handler_calls, 2);
    /* a truncated receive reaches the handler too */
    int big[8] = {0}, small = 0;
    MPI_Request r;
    MPI_Isend(big, 8, MPI_INT, rank, 4, dup, &r);
    BM_CHECK_EQ_INT(cls(MPI_Recv(&small, 1, MPI_INT, rank, 4, dup, MPI_STATUS_IGNORE)),
                    MPI_ERR_TRUNCATE);
    BM_CHECK_EQ_INT(cls(handler_code), MPI_ERR_TRUNCATE);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Errhandler_free(&eh);
    MPI_Comm_free(&dup);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    BM_RUN(test_send_args);
    BM_RUN(test_recv_args);
    BM_RUN(test_request_misuse);
    BM_RUN(test_still_works);
    BM_RUN(test_user_handler);
    int rc = bm_test_summary("p2p_errors");
    MPI_Finalize();
    return rc;
}
