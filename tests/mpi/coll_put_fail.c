/* A single-copy collective whose data one rank writes into another's buffer
 * (the transport's put: bcast.split's root, gather.push's sender,
 * allgather.sm's owners, the split reduce's other rank, src/mpi/coll_sm.c)
 * must fail on the rank written into when the write failed, not return
 * MPI_SUCCESS with the data missing. 2 ranks, BM_MPI_COLL_SM_TEST_PUT_FAIL=1
 * (rank 0's puts fail), every algorithm forced to sm, MPI_ERRORS_RETURN: each
 * operation whose data rank 0 writes into rank 1 (broadcast from 0, gather
 * to 1, allgather, split reduce to 1) must return an error on both ranks;
 * the same operations the other way (rank 1 writes into rank 0) must succeed
 * with the right data, before and after the failures, so the segment stays
 * in step. Each push path must have run on rank 1 (its counter), so the test
 * fails when the put paths are not taken (no single copy here: the test
 * fails rather than passing without them). */
#include "bm_test.h"

#include <bitmover.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BYTES   (64 * 1024)  /* bcast, gather, allgather: from BM_MPI_COLL_SM_BCAST_SPLIT_MIN */
#define DOUBLES (128 * 1024) /* reduce: 1 MiB, from BM_MPI_COLL_SM_REDUCE_SPLIT_MIN */

static int rank;
static char *sbuf, *rbuf;
static double *din, *dout;

static char byte_of(int r, int i)
{
    return (char)(r * 31 + i * 7 + 1);
}

/* Whether rank 'from' of a broadcast should see an error: rank 0 writes. */
static void run_bcast(int root, int expect_err)
{
    char *b = rbuf;
    for (int i = 0; i < BYTES; i++)
        b[i] = rank == root ? byte_of(root, i) : 0x5a;
    int rc = MPI_Bcast(b, BYTES, MPI_CHAR, root, MPI_COMM_WORLD);
    BM_CHECK_MSG((rc != MPI_SUCCESS) == expect_err, "rank %d: bcast from %d returned %d (%s)", rank,
                 root, rc, expect_err ? "error expected" : "success expected");
    if (!expect_err) {
        int wrong = 0;
        for (int i = 0; i < BYTES; i++)
            wrong += b[i] != byte_of(root, i);
        BM_CHECK_MSG(wrong == 0, "rank %d: bcast from %d: %d bytes wrong", rank, root, wrong);
    }
}

static void run_gather(int root, int expect_err)
{
    memset(rbuf, 0x5a, 2 * (size_t)BYTES);
    int rc = MPI_Gather(sbuf, BYTES, MPI_CHAR, rbuf, BYTES, MPI_CHAR, root, MPI_COMM_WORLD);
    BM_CHECK_MSG((rc != MPI_SUCCESS) == expect_err, "rank %d: gather to %d returned %d (%s)", rank,
                 root, rc, expect_err ? "error expected" : "success expected");
    if (!expect_err && rank == root) {
        int wrong = 0;
        for (int r = 0; r < 2; r++)
            for (int i = 0; i < BYTES; i++)
                wrong += rbuf[(size_t)r * BYTES + (size_t)i] != byte_of(r, i);
        BM_CHECK_MSG(wrong == 0, "rank %d: gather: %d bytes wrong", rank, wrong);
    }
}

static void run_allgather(int expect_err)
{
    memset(rbuf, 0x5a, 2 * (size_t)BYTES);
    int rc = MPI_Allgather(sbuf, BYTES, MPI_CHAR, rbuf, BYTES, MPI_CHAR, MPI_COMM_WORLD);
    BM_CHECK_MSG((rc != MPI_SUCCESS) == expect_err, "rank %d: allgather returned %d (%s)", rank, rc,
                 expect_err ? "error expected" : "success expected");
    if (!expect_err) {
        int wrong = 0;
        for (int r = 0; r < 2; r++)
            for (int i = 0; i < BYTES; i++)
                wrong += rbuf[(size_t)r * BYTES + (size_t)i] != byte_of(r, i);
        BM_CHECK_MSG(wrong == 0, "rank %d: allgather: %d bytes wrong", rank, wrong);
    }
}

static void run_reduce(int root, int expect_err)
{
    for (int i = 0; i < DOUBLES; i++) {
        din[i] = (double)(rank + 1) * (double)(i % 1000);
        dout[i] = -1.0;
    }
    int rc = MPI_Reduce(din, dout, DOUBLES, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
    BM_CHECK_MSG((rc != MPI_SUCCESS) == expect_err, "rank %d: reduce to %d returned %d (%s)", rank,
                 root, rc, expect_err ? "error expected" : "success expected");
    if (!expect_err && rank == root) {
        int wrong = 0;
        for (int i = 0; i < DOUBLES; i++)
            wrong += dout[i] != 3.0 * (double)(i % 1000);
        BM_CHECK_MSG(wrong == 0, "rank %d: reduce: %d elements wrong", rank, wrong);
    }
}

/* The operations rank 1 writes into rank 0: they succeed. */
static void run_good(void)
{
    run_bcast(1, 0);
    run_gather(0, 0);
    run_reduce(0, 0);
}

int main(int argc, char **argv)
{
    int size;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    BM_CHECK_EQ_INT(size, 2);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    sbuf = malloc(BYTES);
    rbuf = malloc(2 * (size_t)BYTES);
    din = malloc(DOUBLES * sizeof(double));
    dout = malloc(DOUBLES * sizeof(double));
    BM_CHECK(sbuf && rbuf && din && dout);
    for (int i = 0; i < BYTES; i++)
        sbuf[i] = byte_of(rank, i);
    unsigned long split0 = bm_coll_alg_count("bcast.split"),
                  push0 = bm_coll_alg_count("gather.push"), ag0 = bm_coll_alg_count("sm.push"),
                  red0 = bm_coll_alg_count("sm.copy_split");

    run_good();
    /* rank 0 writes into rank 1: both fail (rank 0 its put, rank 1 its data) */
    run_bcast(0, 1);
    run_gather(1, 1);
    run_allgather(1);
    run_reduce(1, 1);
    run_good();

    /* rank 1's pushes ran (its counters): the paths under test were taken */
    if (rank == 1) {
        BM_CHECK_MSG(bm_coll_alg_count("bcast.split") - split0 == 2,
                     "bcast.split counted %lu, not 2", bm_coll_alg_count("bcast.split") - split0);
        BM_CHECK_MSG(bm_coll_alg_count("gather.push") - push0 == 2,
                     "gather.push counted %lu, not 2", bm_coll_alg_count("gather.push") - push0);
        BM_CHECK_MSG(bm_coll_alg_count("sm.push") - ag0 == 1, "sm.push counted %lu, not 1",
                     bm_coll_alg_count("sm.push") - ag0);
        BM_CHECK_MSG(bm_coll_alg_count("sm.copy_split") - red0 == 3,
                     "sm.copy_split counted %lu, not 3", bm_coll_alg_count("sm.copy_split") - red0);
    }
    free(sbuf);
    free(rbuf);
    free(din);
    free(dout);
    MPI_Finalize();
    return bm_test_summary("coll_put_fail");
}
