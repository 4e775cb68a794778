/* Communicator life cycle and context ids, checked from inside (this
 * program links the library's internals to read context ids): a freed
 * communicator stays alive while a request on it is pending (its error
 * handler still applies, its context id is not reused) and its id is
 * reused after; a receive the program freed while posted keeps the id
 * taken; members whose free slots differ still agree on a slot free at all
 * of them (the multi-round agreement); 1,000 live communicators get
 * distinct ids, and their ids come back once freed. Prints the time of
 * 1,000 MPI_Comm_dup calls (information, not a check). */
#include "bm_test.h"
#include "mpi/mpi_internal.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

/* The error handler of a freed communicator still reports the failure of
 * an operation pending on it. */
static void test_pending_error_after_free(void)
{
    MPI_Comm c1;
    int buf[2] = {-1, -1}, big[2] = {7, 8};
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &c1);
    uint32_t cid = c1->context_id;
    if (rank == 0 && size > 1) {
        MPI_Comm_set_errhandler(c1, MPI_ERRORS_RETURN);
        MPI_Irecv(buf, 1, MPI_INT, 1, 4, c1, &req);
        MPI_Comm obj = c1;
        BM_CHECK_EQ_INT(MPI_Comm_free(&c1), MPI_SUCCESS);
        BM_CHECK(c1 == MPI_COMM_NULL);
        BM_CHECK_EQ_INT(obj->magic, BM_MPI_MAGIC_COMM_FREED); /* alive, held by the request */
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        MPI_Send(big, 2, MPI_INT, 0, 4, c1); /* longer than the receive */
        MPI_Comm_free(&c1);
    } else if (rank > 1) {
        MPI_Comm_free(&c1);
    }
    if (rank == 0 && size > 1) {
        MPI_Status st;
        int rc = MPI_Wait(&req, &st), cls = -1;
        MPI_Error_class(rc, &cls);
        BM_CHECK_EQ_INT(cls, MPI_ERR_TRUNCATE); /* returned: c1's handler, not the fatal default */
        BM_CHECK_EQ_INT(buf[0], 7);
    } else if (size == 1) {
        MPI_Comm_free(&c1);
    }
    /* Everything on c1 is over: its id comes back. */
    MPI_Comm c2;
    MPI_Comm_dup(MPI_COMM_WORLD, &c2);
    BM_CHECK_EQ_INT(c2->context_id, cid);
    MPI_Comm_free(&c2);
}

/* A pending (then cancelled) receive keeps the id taken; a receive freed
 * while posted keeps it taken for good. */
static void test_id_not_reused_while_pending(void)
{
    MPI_Comm c1, c2, c3;
    int buf = 0, flag = 0;
    MPI_Request req;
    MPI_Comm_dup(MPI_COMM_WORLD, &c1);
    uint32_t cid = c1->context_id;
    MPI_Irecv(&buf, 1, MPI_INT, 0, 99, c1, &req);
    MPI_Comm_free(&c1);
    MPI_Comm_dup(MPI_COMM_WORLD, &c2);
    BM_CHECK(c2->context_id != cid);
    MPI_Cancel(&req);
    MPI_Status st;
    MPI_Wait(&req, &st);
    MPI_Test_cancelled(&st, &flag);
    BM_CHECK_EQ_INT(flag, 1);
    MPI_Comm_dup(MPI_COMM_WORLD, &c3);
    BM_CHECK_EQ_INT(c3->context_id, cid);
    MPI_Comm_free(&c3);
    MPI_Comm_free(&c2);

    /* Request_free on a posted receive: the PML keeps it posted, the id stays taken. */
    MPI_Comm_dup(MPI_COMM_WORLD, &c1);
    cid = c1->context_id;
    MPI_Irecv(&buf, 1, MPI_INT, 0, 99, c1, &req);
    MPI_Request_free(&req);
    MPI_Comm_free(&c1);
    MPI_Comm_dup(MPI_COMM_WORLD, &c2);
    BM_CHECK(c2->context_id != cid);
    MPI_Comm_dup(MPI_COMM_WORLD, &c3);
    BM_CHECK(c3->context_id != cid);
    MPI_Comm_free(&c3);
    MPI_Comm_free(&c2);
}

/* Members with different free slots: rank 0 frees A, the others free B;
 * the next communicator must avoid both; once both are freed everywhere
 * the lower is reused. */
static void test_divergent_slots(void)
{
    MPI_Comm a, b, c, d;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_dup(MPI_COMM_WORLD, &b);
    uint32_t ca = a->context_id, cb = b->context_id;
    BM_CHECK(ca != cb);
    if (rank == 0)
        MPI_Comm_free(&a);
    else
        MPI_Comm_free(&b);
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    if (size > 1) {
        BM_CHECK(c->context_id != ca);
        BM_CHECK(c->context_id != cb);
    }
    /* c works and is isolated from the survivors */
    int v = rank, sum = -1;
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, c);
    BM_CHECK_EQ_INT(sum, size * (size - 1) / 2);
    if (rank == 0)
        MPI_Comm_free(&b);
    else
        MPI_Comm_free(&a);
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    if (size > 1) /* alone, c took a's id at once */
        BM_CHECK_EQ_INT(d->context_id, ca < cb ? ca : cb);
    MPI_Comm_free(&d);
    MPI_Comm_free(&c);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static void test_thousand(void)
{
    enum { N = 1000 };
    MPI_Comm *c = malloc(sizeof(MPI_Comm) * N);
    uint32_t *ids = malloc(sizeof(uint32_t) * N);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < N; i++) {
        BM_CHECK_EQ_INT(MPI_Comm_dup(MPI_COMM_WORLD, &c[i]), MPI_SUCCESS);
        ids[i] = c[i]->context_id;
    }
    double t = MPI_Wtime() - t0;
    if (rank == 0)
        printf("api_comm_life: %d MPI_Comm_dup on %d ranks: %.1f us each\n", N, size, t / N * 1e6);
    uint32_t first = ids[0];
    qsort(ids, N, sizeof(*ids), cmp_u32);
    int dups = 0;
    for (int i = 1; i < N; i++)
        dups += ids[i] == ids[i - 1];
    BM_CHECK_EQ_INT(dups, 0);
    /* a message on the last one reaches only it */
    int v = -1, flag = 1;
    if (size > 1) {
        if (rank == 0)
            MPI_Send(&rank, 1, MPI_INT, 1, 0, c[N - 1]);
        if (rank == 1) {
            MPI_Iprobe(0, 0, c[N - 2], &flag, MPI_STATUS_IGNORE);
            BM_CHECK_EQ_INT(flag, 0);
            MPI_Recv(&v, 1, MPI_INT, 0, 0, c[N - 1], MPI_STATUS_IGNORE);
            BM_CHECK_EQ_INT(v, 0);
        }
    }
    for (int i = N - 1; i >= 0; i--)
        MPI_Comm_free(&c[i]);
    MPI_Comm again;
    MPI_Comm_dup(MPI_COMM_WORLD, &again);
    BM_CHECK_EQ_INT(again->context_id, first);
    MPI_Comm_free(&again);
    free(c);
    free(ids);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    BM_RUN(test_pending_error_after_free);
    BM_RUN(test_id_not_reused_while_pending);
    BM_RUN(test_divergent_slots);
    BM_RUN(test_thousand);
    int rc = bm_test_summary("api_comm_life");
    MPI_Finalize();
    return rc;
}
