/* Generalized requests and the request kinds behind them: a generalized
 * request completes only after MPI_Grequest_complete, in every completion
 * call (Wait, Test, Waitall, Waitany, Waitsome, Testall, Testany,
 * Testsome) mixed with point-to-point requests; its query function fills
 * the status (MPI_Status_set_elements/cancelled, read back with
 * MPI_Get_count/Get_elements/Test_cancelled) and its free function runs
 * exactly once, after the query; MPI_Request_get_status queries without
 * freeing; MPI_Request_free on an active one defers the free function to
 * MPI_Grequest_complete; MPI_Cancel calls the cancel function with the
 * completed flag; a query error reaches Wait (its code) and Waitall
 * (MPI_ERR_IN_STATUS, the code in the status); a thread of the program may
 * complete the request while the main thread waits. MPI_Status_set_elements_x
 * with counts beyond an int: MPI_Get_elements_x gives them back exactly,
 * the int forms say MPI_UNDEFINED. */
#include "bm_test.h"

#include <mpi.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

struct greq {
    int id;
    int queries, frees, cancels, last_cancel_complete;
    int query_rc;     /* what the query function returns */
    int elements;     /* MPI_INT elements it reports */
    int cancelled;    /* reported as cancelled */
    int freed_before; /* the free function saw queries == this */
    MPI_Request req;
};

static int query_fn(void *extra, MPI_Status *st)
{
    struct greq *g = extra;
    g->queries++;
    st->MPI_SOURCE = g->id;
    st->MPI_TAG = 1000 + g->id;
    MPI_Status_set_elements(st, MPI_INT, g->elements);
    MPI_Status_set_cancelled(st, g->cancelled);
    return g->query_rc;
}

static int free_fn(void *extra)
{
    struct greq *g = extra;
    g->frees++;
    g->freed_before = g->queries;
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    struct greq *g = extra;
    g->cancels++;
    g->last_cancel_complete = complete;
    return MPI_SUCCESS;
}

static void greq_start(struct greq *g, int id)
{
    memset(g, 0, sizeof(*g));
    g->id = id;
    g->elements = id + 1;
    BM_CHECK_EQ_INT(MPI_Grequest_start(query_fn, free_fn, cancel_fn, g, &g->req), MPI_SUCCESS);
    BM_CHECK(g->req != MPI_REQUEST_NULL);
}

static void test_wait_test(void)
{
    struct greq g;
    int flag = -1, n = -1;
    MPI_Status st;
    greq_start(&g, 3);
    BM_CHECK_EQ_INT(MPI_Test(&g.req, &flag, &st), MPI_SUCCESS);
    BM_CHECK_EQ_INT(flag, 0);
    BM_CHECK_EQ_INT(g.queries, 0);
    /* get_status before completion: not complete, nothing called */
    BM_CHECK_EQ_INT(MPI_Request_get_status(g.req, &flag, &st), MPI_SUCCESS);
    BM_CHECK_EQ_INT(flag, 0);
    BM_CHECK_EQ_INT(MPI_Grequest_complete(g.req), MPI_SUCCESS);
    /* get_status after: the query runs, the request stays */
    BM_CHECK_EQ_INT(MPI_Request_get_status(g.req, &flag, &st), MPI_SUCCESS);
    BM_CHECK_EQ_INT(flag, 1);
    BM_CHECK_EQ_INT(g.queries, 1);
    BM_CHECK_EQ_INT(g.frees, 0);
    BM_CHECK(g.req != MPI_REQUEST_NULL);
    BM_CHECK_EQ_INT(st.MPI_SOURCE, 3);
    BM_CHECK_EQ_INT(MPI_Wait(&g.req, &st), MPI_SUCCESS);
    BM_CHECK(g.req == MPI_REQUEST_NULL);
    BM_CHECK_EQ_INT(g.queries, 2);
    BM_CHECK_EQ_INT(g.frees, 1);
    BM_CHECK_EQ_INT(g.freed_before, 2); /* free after query */
    BM_CHECK_EQ_INT(st.MPI_SOURCE, 3);
    BM_CHECK_EQ_INT(st.MPI_TAG, 1003);
    BM_CHECK_EQ_INT(MPI_Get_count(&st, MPI_INT, &n), MPI_SUCCESS);
    BM_CHECK_EQ_INT(n, 4);
    BM_CHECK_EQ_INT(MPI_Get_elements(&st, MPI_INT, &n), MPI_SUCCESS);
    BM_CHECK_EQ_INT(n, 4);
    BM_CHECK_EQ_INT(MPI_Test_cancelled(&st, &flag), MPI_SUCCESS);
    BM_CHECK_EQ_INT(flag, 0);

    /* Test completes it once complete */
    greq_start(&g, 5);
    g.cancelled = 1;
    MPI_Grequest_complete(g.req);
    BM_CHECK_EQ_INT(MPI_Test(&g.req, &flag, &st), MPI_SUCCESS);
    BM_CHECK_EQ_INT(flag, 1);
    BM_CHECK(g.req == MPI_REQUEST_NULL);
    BM_CHECK_EQ_INT(g.frees, 1);
    BM_CHECK_EQ_INT(MPI_Test_cancelled(&st, &flag), MPI_SUCCESS);
    BM_CHECK_EQ_INT(flag, 1);
    /* completing twice is an error */
    greq_start(&g, 6);
    MPI_Grequest_complete(g.req);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Grequest_complete(g.req);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    BM_CHECK_EQ_INT(cls, MPI_ERR_REQUEST);
    MPI_Wait(&g.req, MPI_STATUS_IGNORE);
    BM_CHECK_EQ_INT(g.frees, 1);
    /* a p2p request in MPI_Start is refused for grequests */
    greq_start(&g, 7);
    rc = MPI_Start(&g.req);
    MPI_Error_class(rc, &cls);
    BM_CHECK_EQ_INT(cls, MPI_ERR_REQUEST);
    MPI_Grequest_complete(g.req);
    MPI_Wait(&g.req, MPI_STATUS_IGNORE);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* A generalized request among point-to-point ones in every multiple
 * completion call: the p2p ones complete, the generalized one only once
 * completed, with its own status. */
static void test_mixed(void)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int variant = 0; variant < 6; variant++) {
        struct greq g;
        int in = -1, out = rank * 10 + variant, flag = -1, idx = -1, outcount = -1;
        int indices[3];
        MPI_Status sts[3];
        MPI_Request reqs[3];
        greq_start(&g, 20 + variant);
        MPI_Irecv(&in, 1, MPI_INT, left, variant, MPI_COMM_WORLD, &reqs[0]);
        reqs[1] = g.req;
        MPI_Isend(&out, 1, MPI_INT, right, variant, MPI_COMM_WORLD, &reqs[2]);
        switch (variant) {
        case 0: /* Testall is false while the grequest is pending */
            for (int i = 0; i < 1000; i++) {
                BM_CHECK_EQ_INT(MPI_Testall(3, reqs, &flag, sts), MPI_SUCCESS);
                if (flag)
                    break;
            }
            BM_CHECK_EQ_INT(flag, 0);
            MPI_Grequest_complete(g.req);
            BM_CHECK_EQ_INT(MPI_Waitall(3, reqs, sts), MPI_SUCCESS);
            BM_CHECK_EQ_INT(sts[1].MPI_SOURCE, 20);
            BM_CHECK_EQ_INT(sts[1].MPI_ERROR, MPI_SUCCESS);
            BM_CHECK_EQ_INT(sts[0].MPI_SOURCE, left);
            break;
        case 1: /* Waitany returns the p2p ones first */
            for (int k = 0; k < 2; k++) {
                BM_CHECK_EQ_INT(MPI_Waitany(3, reqs, &idx, &sts[0]), MPI_SUCCESS);
                BM_CHECK(idx == 0 || idx == 2);
            }
            BM_CHECK_EQ_INT(MPI_Testany(3, reqs, &idx, &flag, &sts[0]), MPI_SUCCESS);
            BM_CHECK_EQ_INT(flag, 0);
            MPI_Grequest_complete(g.req);
            BM_CHECK_EQ_INT(MPI_Waitany(3, reqs, &idx, &sts[0]), MPI_SUCCESS);
            BM_CHECK_EQ_INT(idx, 1);
            BM_CHECK_EQ_INT(sts[0].MPI_TAG, 1021);
            break;
        case 2: /* Waitsome / Testsome */
        {
            int got = 0;
            while (got < 2) {
                BM_CHECK_EQ_INT(MPI_Waitsome(3, reqs, &outcount, indices, sts), MPI_SUCCESS);
                for (int i = 0; i < outcount; i++)
                    BM_CHECK(indices[i] != 1);
                got += outcount;
            }
            BM_CHECK_EQ_INT(MPI_Testsome(3, reqs, &outcount, indices, sts), MPI_SUCCESS);
            BM_CHECK_EQ_INT(outcount, 0);
            MPI_Grequest_complete(g.req);
            BM_CHECK_EQ_INT(MPI_Testsome(3, reqs, &outcount, indices, sts), MPI_SUCCESS);
            BM_CHECK_EQ_INT(outcount, 1);
            BM_CHECK_EQ_INT(indices[0], 1);
            BM_CHECK_EQ_INT(MPI_Waitsome(3, reqs, &outcount, indices, sts), MPI_SUCCESS);
            BM_CHECK_EQ_INT(outcount, MPI_UNDEFINED);
            break;
        }
        case 3: /* the query's error in Waitall: MPI_ERR_IN_STATUS */
        {
            g.query_rc = MPI_ERR_OTHER;
            MPI_Grequest_complete(g.req);
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
            int rc = MPI_Waitall(3, reqs, sts);
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
            BM_CHECK_EQ_INT(rc, MPI_ERR_IN_STATUS);
            BM_CHECK_EQ_INT(sts[1].MPI_ERROR, MPI_ERR_OTHER);
            BM_CHECK_EQ_INT(sts[0].MPI_ERROR, MPI_SUCCESS);
            BM_CHECK_EQ_INT(sts[2].MPI_ERROR, MPI_SUCCESS);
            BM_CHECK_EQ_INT(g.frees, 1);
            break;
        }
        case 4: /* the query's error in Wait: its code, status.MPI_ERROR untouched */
        {
            MPI_Waitall(1, &reqs[0], MPI_STATUSES_IGNORE);
            MPI_Wait(&reqs[2], MPI_STATUS_IGNORE);
            g.query_rc = MPI_ERR_ARG;
            MPI_Grequest_complete(g.req);
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
            sts[1].MPI_ERROR = -12345;
            int rc = MPI_Wait(&reqs[1], &sts[1]);
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
            BM_CHECK_EQ_INT(rc, MPI_ERR_ARG);
            BM_CHECK_EQ_INT(sts[1].MPI_ERROR, -12345);
            BM_CHECK(reqs[1] == MPI_REQUEST_NULL);
            BM_CHECK_EQ_INT(g.frees, 1);
            break;
        }
        default: /* Testall true once all are complete */
            MPI_Grequest_complete(g.req);
            do
                BM_CHECK_EQ_INT(MPI_Testall(3, reqs, &flag, sts), MPI_SUCCESS);
            while (!flag);
            break;
        }
        BM_CHECK(reqs[0] == MPI_REQUEST_NULL && reqs[1] == MPI_REQUEST_NULL &&
                 reqs[2] == MPI_REQUEST_NULL);
        BM_CHECK_EQ_INT(in, left * 10 + variant);
        BM_CHECK_EQ_INT(g.frees, 1);
    }
}

static void test_free_and_cancel(void)
{
    struct greq g;
    MPI_Request copy;
    /* Request_free on an active request: the free function waits for the completion */
    greq_start(&g, 40);
    copy = g.req;
    BM_CHECK_EQ_INT(MPI_Request_free(&g.req), MPI_SUCCESS);
    BM_CHECK(g.req == MPI_REQUEST_NULL);
    BM_CHECK_EQ_INT(g.frees, 0);
    BM_CHECK_EQ_INT(MPI_Grequest_complete(copy), MPI_SUCCESS);
    BM_CHECK_EQ_INT(g.frees, 1);
    BM_CHECK_EQ_INT(g.queries, 0);
    /* Request_free on a completed request frees at once */
    greq_start(&g, 41);
    MPI_Grequest_complete(g.req);
    BM_CHECK_EQ_INT(MPI_Request_free(&g.req), MPI_SUCCESS);
    BM_CHECK_EQ_INT(g.frees, 1);
    /* Cancel before and after completion */
    greq_start(&g, 42);
    BM_CHECK_EQ_INT(MPI_Cancel(&g.req), MPI_SUCCESS);
    BM_CHECK_EQ_INT(g.cancels, 1);
    BM_CHECK_EQ_INT(g.last_cancel_complete, 0);
    MPI_Grequest_complete(g.req);
    BM_CHECK_EQ_INT(MPI_Cancel(&g.req), MPI_SUCCESS);
    BM_CHECK_EQ_INT(g.cancels, 2);
    BM_CHECK_EQ_INT(g.last_cancel_complete, 1);
    MPI_Wait(&g.req, MPI_STATUS_IGNORE);
    BM_CHECK_EQ_INT(g.frees, 1);
}

static void *completer(void *arg)
{
    struct greq *g = arg;
    /* Wait until the main thread is (very likely) inside MPI_Wait. */
    while (__atomic_load_n(&g->id, __ATOMIC_ACQUIRE) != 61)
        ;
    MPI_Grequest_complete(g->req);
    return NULL;
}

static void test_thread_completes(void)
{
    struct greq g;
    pthread_t t;
    greq_start(&g, 60);
    BM_CHECK_EQ_INT(pthread_create(&t, NULL, completer, &g), 0);
    __atomic_store_n(&g.id, 61, __ATOMIC_RELEASE);
    MPI_Status st;
    BM_CHECK_EQ_INT(MPI_Wait(&g.req, &st), MPI_SUCCESS);
    BM_CHECK_EQ_INT(st.MPI_SOURCE, 61);
    BM_CHECK_EQ_INT(g.frees, 1);
    pthread_join(t, NULL);
}

/* Request_get_status on point-to-point requests: the status without
 * freeing; a later Wait returns the same. */
static void test_get_status_p2p(void)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int in = -1, out = rank + 77, flag = 0;
    MPI_Request rr, sr;
    MPI_Status st, st2;
    MPI_Irecv(&in, 1, MPI_INT, left, 5, MPI_COMM_WORLD, &rr);
    MPI_Isend(&out, 1, MPI_INT, right, 5, MPI_COMM_WORLD, &sr);
    while (!flag)
        BM_CHECK_EQ_INT(MPI_Request_get_status(rr, &flag, &st), MPI_SUCCESS);
    BM_CHECK(rr != MPI_REQUEST_NULL);
    BM_CHECK_EQ_INT(st.MPI_SOURCE, left);
    BM_CHECK_EQ_INT(st.MPI_TAG, 5);
    BM_CHECK_EQ_INT(in, left + 77);
    MPI_Wait(&rr, &st2);
    BM_CHECK_EQ_INT(st2.MPI_SOURCE, left);
    MPI_Wait(&sr, MPI_STATUS_IGNORE);
    BM_CHECK_EQ_INT(MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st), MPI_SUCCESS);
    BM_CHECK_EQ_INT(flag, 1);
    BM_CHECK_EQ_INT(st.MPI_SOURCE, MPI_ANY_SOURCE);
}

/* Element counts beyond an int (MPI_Count) through a status. */
static void test_elements_x(void)
{
    MPI_Status st;
    MPI_Count big = (MPI_Count)3 << 30, got = -1;
    int n = 0;
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    BM_CHECK_EQ_INT(MPI_Status_set_elements_x(&st, MPI_INT, big), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Get_elements_x(&st, MPI_INT, &got), MPI_SUCCESS);
    BM_CHECK(got == big);
    BM_CHECK_EQ_INT(MPI_Get_elements(&st, MPI_INT, &n), MPI_SUCCESS);
    BM_CHECK_EQ_INT(n, MPI_UNDEFINED);
    BM_CHECK_EQ_INT(MPI_Get_count(&st, MPI_INT, &n), MPI_SUCCESS);
    BM_CHECK_EQ_INT(n, MPI_UNDEFINED);
    /* Elements of a derived type count its basic elements: 2 per pair. */
    BM_CHECK_EQ_INT(MPI_Status_set_elements_x(&st, pair, 5), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Get_elements_x(&st, pair, &got), MPI_SUCCESS);
    BM_CHECK(got == 5);
    BM_CHECK_EQ_INT(MPI_Get_count(&st, pair, &n), MPI_SUCCESS);
    BM_CHECK_EQ_INT(n, MPI_UNDEFINED); /* 5 ints are not a whole number of pairs */
    BM_CHECK_EQ_INT(MPI_Status_set_elements_x(&st, pair, 6), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Get_count(&st, pair, &n), MPI_SUCCESS);
    BM_CHECK_EQ_INT(n, 3);
    MPI_Type_free(&pair);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    BM_RUN(test_wait_test);
    BM_RUN(test_mixed);
    BM_RUN(test_free_and_cancel);
    BM_RUN(test_thread_completes);
    BM_RUN(test_get_status_p2p);
    BM_RUN(test_elements_x);
    int rc = bm_test_summary("p2p_grequest");
    MPI_Finalize();
    return rc;
}
