/* The block-moving collectives and the prefix reductions: MPI_Gather(v),
 * MPI_Scatter(v), MPI_Allgather(v), MPI_Alltoall(v) (with MPI_IN_PLACE where
 * the standard allows it, every root, sizes up to rendezvous), MPI_Scan and
 * MPI_Exscan (including a non-commutative operation that detects any
 * combination out of rank order), MPI_Reduce_scatter(_block), and
 * MPI_Comm_split_type. Every byte received is checked against the value its
 * sender must have put there. */
#include "bm_test.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

/* The value rank src puts at element i of the block meant for rank dst. */
static int val(int src, int dst, int i)
{
    return src * 1000003 + dst * 1009 + i;
}

static void test_gather_scatter(void)
{
    static const int counts[] = {0, 1, 5, 40000};

    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        int n = counts[c];
        int *mine = malloc(sizeof(int) * (size_t)(n ? n : 1));
        int *all = malloc(sizeof(int) * (size_t)(n ? n : 1) * (size_t)size);
        for (int root = 0; root < size; root += (size > 3 ? 3 : 1)) {
            bool ok = true;
            for (int i = 0; i < n; i++)
                mine[i] = val(rank, root, i);
            memset(all, 0xff, sizeof(int) * (size_t)(n ? n : 1) * (size_t)size);
            BM_CHECK_EQ_INT(MPI_Gather(mine, n, MPI_INT, all, n, MPI_INT, root, MPI_COMM_WORLD),
                            MPI_SUCCESS);
            if (rank == root)
                for (int r = 0; r < size && ok; r++)
                    for (int i = 0; i < n && ok; i++)
                        ok = all[r * n + i] == val(r, root, i);
            BM_CHECK_MSG(ok, "gather of %d ints to root %d", n, root);

            /* In place at the root: its own block is already there. */
            if (rank == root)
                memcpy(all + (size_t)root * (size_t)n, mine, sizeof(int) * (size_t)n);
            BM_CHECK_EQ_INT(MPI_Gather(rank == root ? MPI_IN_PLACE : mine, n, MPI_INT, all, n,
                                       MPI_INT, root, MPI_COMM_WORLD),
                            MPI_SUCCESS);
            if (rank == root)
                for (int r = 0; r < size && ok; r++)
                    for (int i = 0; i < n && ok; i++)
                        ok = all[r * n + i] == val(r, root, i);
            BM_CHECK_MSG(ok, "in-place gather of %d ints to root %d", n, root);

            /* Scatter: the root sends val(root, r, i) to rank r. */
            if (rank == root)
                for (int r = 0; r < size; r++)
                    for (int i = 0; i < n; i++)
                        all[r * n + i] = val(root, r, i);
            memset(mine, 0, sizeof(int) * (size_t)(n ? n : 1));
            BM_CHECK_EQ_INT(MPI_Scatter(all, n, MPI_INT, mine, n, MPI_INT, root, MPI_COMM_WORLD),
                            MPI_SUCCESS);
            for (int i = 0; i < n && ok; i++)
                ok = mine[i] == val(root, rank, i);
            BM_CHECK_MSG(ok, "scatter of %d ints from root %d", n, root);
            BM_CHECK_EQ_INT(MPI_Scatter(all, n, MPI_INT, rank == root ? MPI_IN_PLACE : mine, n,
                                        MPI_INT, root, MPI_COMM_WORLD),
                            MPI_SUCCESS);
        }
        free(mine);
        free(all);
    }
}

/* Rank r contributes r + 1 elements; blocks are laid out in reverse rank
 * order with a gap of 2 elements, to exercise the displacements. */
static void v_layout(int *counts, int *displs, int *total)
{
    int off = 0;

    for (int r = size - 1; r >= 0; r--) {
        counts[r] = r + 1;
        displs[r] = off;
        off += counts[r] + 2;
    }
    *total = off;
}

static void test_v_variants(void)
{
    int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
    int total, root = size - 1;
    int mine[64], *all;
    bool ok = true;

    v_layout(counts, displs, &total);
    all = calloc((size_t)total, sizeof(int));
    for (int i = 0; i < rank + 1; i++)
        mine[i] = val(rank, root, i);
    BM_CHECK_EQ_INT(
        MPI_Gatherv(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, root, MPI_COMM_WORLD),
        MPI_SUCCESS);
    if (rank == root)
        for (int r = 0; r < size && ok; r++)
            for (int i = 0; i < counts[r] && ok; i++)
                ok = all[displs[r] + i] == val(r, root, i);
    BM_CHECK_MSG(ok, "gatherv");

    if (rank == root)
        for (int r = 0; r < size; r++)
            for (int i = 0; i < counts[r]; i++)
                all[displs[r] + i] = val(root, r, i);
    memset(mine, 0, sizeof(mine));
    BM_CHECK_EQ_INT(
        MPI_Scatterv(all, counts, displs, MPI_INT, mine, rank + 1, MPI_INT, root, MPI_COMM_WORLD),
        MPI_SUCCESS);
    for (int i = 0; i < rank + 1 && ok; i++)
        ok = mine[i] == val(root, rank, i);
    BM_CHECK_MSG(ok, "scatterv");

    for (int i = 0; i < rank + 1; i++)
        mine[i] = val(rank, 0, i);
    memset(all, 0, sizeof(int) * (size_t)total);
    BM_CHECK_EQ_INT(
        MPI_Allgatherv(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD),
        MPI_SUCCESS);
    for (int r = 0; r < size && ok; r++)
        for (int i = 0; i < counts[r] && ok; i++)
            ok = all[displs[r] + i] == val(r, 0, i);
    BM_CHECK_MSG(ok, "allgatherv");
    free(all);
    free(counts);
    free(displs);
}

static void test_allgather(void)
{
    static const int counts[] = {1, 3, 70000};

    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        int n = counts[c];
        int *mine = malloc(sizeof(int) * (size_t)n);
        int *all = malloc(sizeof(int) * (size_t)n * (size_t)size);
        bool ok = true;
        for (int i = 0; i < n; i++)
            mine[i] = val(rank, 0, i);
        BM_CHECK_EQ_INT(MPI_Allgather(mine, n, MPI_INT, all, n, MPI_INT, MPI_COMM_WORLD),
                        MPI_SUCCESS);
        for (int r = 0; r < size && ok; r++)
            for (int i = 0; i < n && ok; i++)
                ok = all[r * n + i] == val(r, 0, i);
        BM_CHECK_MSG(ok, "allgather of %d ints", n);
        /* In place, and typed differently on the two sides (same bytes). */
        memset(all, 0, sizeof(int) * (size_t)n * (size_t)size);
        memcpy(all + (size_t)rank * (size_t)n, mine, sizeof(int) * (size_t)n);
        BM_CHECK_EQ_INT(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, n * (int)sizeof(int),
                                      MPI_BYTE, MPI_COMM_WORLD),
                        MPI_SUCCESS);
        for (int r = 0; r < size && ok; r++)
            for (int i = 0; i < n && ok; i++)
                ok = all[r * n + i] == val(r, 0, i);
        BM_CHECK_MSG(ok, "in-place allgather of %d ints", n);
        free(mine);
        free(all);
    }
}

static void test_alltoall(void)
{
    static const int counts[] = {1, 4, 20000};

    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        int n = counts[c];
        int *out = malloc(sizeof(int) * (size_t)n * (size_t)size);
        int *in = malloc(sizeof(int) * (size_t)n * (size_t)size);
        bool ok = true;
        for (int d = 0; d < size; d++)
            for (int i = 0; i < n; i++)
                out[d * n + i] = val(rank, d, i);
        BM_CHECK_EQ_INT(MPI_Alltoall(out, n, MPI_INT, in, n, MPI_INT, MPI_COMM_WORLD), MPI_SUCCESS);
        for (int s = 0; s < size && ok; s++)
            for (int i = 0; i < n && ok; i++)
                ok = in[s * n + i] == val(s, rank, i);
        BM_CHECK_MSG(ok, "alltoall of %d ints per pair", n);
        BM_CHECK_EQ_INT(
            MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out, n, MPI_INT, MPI_COMM_WORLD),
            MPI_SUCCESS);
        for (int s = 0; s < size && ok; s++)
            for (int i = 0; i < n && ok; i++)
                ok = out[s * n + i] == val(s, rank, i);
        BM_CHECK_MSG(ok, "in-place alltoall of %d ints per pair", n);
        free(out);
        free(in);
    }

    /* Alltoallv: rank s sends s + d + 1 elements to rank d. */
    {
        int *sc = malloc(sizeof(int) * (size_t)size), *sd = malloc(sizeof(int) * (size_t)size);
        int *rc = malloc(sizeof(int) * (size_t)size), *rd = malloc(sizeof(int) * (size_t)size);
        int stot = 0, rtot = 0;
        int *sbuf, *rbuf;
        bool ok = true;
        for (int p = 0; p < size; p++) {
            sc[p] = rank + p + 1;
            sd[p] = stot;
            stot += sc[p];
            rc[p] = p + rank + 1;
            rd[p] = rtot + 1; /* a one-element gap before each block */
            rtot += rc[p] + 1;
        }
        sbuf = malloc(sizeof(int) * (size_t)stot);
        rbuf = calloc((size_t)rtot, sizeof(int));
        for (int p = 0; p < size; p++)
            for (int i = 0; i < sc[p]; i++)
                sbuf[sd[p] + i] = val(rank, p, i);
        BM_CHECK_EQ_INT(MPI_Alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT, MPI_COMM_WORLD),
                        MPI_SUCCESS);
        for (int p = 0; p < size && ok; p++)
            for (int i = 0; i < rc[p] && ok; i++)
                ok = rbuf[rd[p] + i] == val(p, rank, i);
        BM_CHECK_MSG(ok, "alltoallv");
        free(sc);
        free(sd);
        free(rc);
        free(rd);
        free(sbuf);
        free(rbuf);
    }
}

/* Runs [first, last] of ranks; combining is valid only for adjacent runs. */
static void ordered_runs(void *invec, void *inoutvec, int *len, MPI_Datatype *dt)
{
    int *a = invec, *b = inoutvec;

    (void)dt;
    for (int i = 0; i < *len; i += 3) {
        b[i + 2] = a[i + 2] && b[i + 2] && b[i] == a[i + 1] + 1;
        b[i] = a[i];
    }
}

static void test_scan(void)
{
    long in[3], out[3];
    int run[3], res[3];
    MPI_Op ord;

    for (int i = 0; i < 3; i++)
        in[i] = (long)(rank + 1) * (i + 1);
    BM_CHECK_EQ_INT(MPI_Scan(in, out, 3, MPI_LONG, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    for (int i = 0; i < 3; i++)
        BM_CHECK_EQ_INT(out[i], (long)(rank + 1) * (rank + 2) / 2 * (i + 1));
    out[0] = -77;
    BM_CHECK_EQ_INT(MPI_Exscan(in, out, 3, MPI_LONG, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    if (rank > 0)
        BM_CHECK_EQ_INT(out[0], (long)rank * (rank + 1) / 2);
    else
        BM_CHECK_EQ_INT(out[0], -77); /* undefined on rank 0: left alone */
    memcpy(out, in, sizeof(in));
    BM_CHECK_EQ_INT(MPI_Scan(MPI_IN_PLACE, out, 3, MPI_LONG, MPI_MAX, MPI_COMM_WORLD), MPI_SUCCESS);
    BM_CHECK_EQ_INT(out[2], (long)(rank + 1) * 3);

    BM_CHECK_EQ_INT(MPI_Op_create(ordered_runs, 0, &ord), MPI_SUCCESS);
    run[0] = run[1] = rank;
    run[2] = 1;
    BM_CHECK_EQ_INT(MPI_Scan(run, res, 3, MPI_INT, ord, MPI_COMM_WORLD), MPI_SUCCESS);
    BM_CHECK_MSG(res[0] == 0 && res[1] == rank && res[2] == 1,
                 "non-commutative scan on rank %d: [%d, %d] valid %d", rank, res[0], res[1],
                 res[2]);
    BM_CHECK_EQ_INT(MPI_Exscan(run, res, 3, MPI_INT, ord, MPI_COMM_WORLD), MPI_SUCCESS);
    if (rank > 0)
        BM_CHECK_MSG(res[0] == 0 && res[1] == rank - 1 && res[2] == 1,
                     "non-commutative exscan on rank %d: [%d, %d] valid %d", rank, res[0], res[1],
                     res[2]);
    MPI_Op_free(&ord);
}

static void test_reduce_scatter(void)
{
    int n = 3, *in = malloc(sizeof(int) * (size_t)(n * size)), out[3];
    int *counts = malloc(sizeof(int) * (size_t)size), total = 0, *vin, vout[64];

    for (int i = 0; i < n * size; i++)
        in[i] = i + rank;
    BM_CHECK_EQ_INT(MPI_Reduce_scatter_block(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
                    MPI_SUCCESS);
    for (int i = 0; i < n; i++)
        BM_CHECK_EQ_INT(out[i], (rank * n + i) * size + size * (size - 1) / 2);
    BM_CHECK_EQ_INT(MPI_Reduce_scatter_block(MPI_IN_PLACE, in, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD),
                    MPI_SUCCESS);
    for (int i = 0; i < n; i++)
        BM_CHECK_EQ_INT(in[i], rank * n + i + size - 1);

    for (int r = 0; r < size; r++) {
        counts[r] = r % 3;
        total += counts[r];
    }
    vin = malloc(sizeof(int) * (size_t)(total ? total : 1));
    for (int i = 0; i < total; i++)
        vin[i] = 2 * i + rank;
    BM_CHECK_EQ_INT(MPI_Reduce_scatter(vin, vout, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
                    MPI_SUCCESS);
    {
        int off = 0;
        for (int r = 0; r < rank; r++)
            off += counts[r];
        for (int i = 0; i < counts[rank]; i++)
            BM_CHECK_EQ_INT(vout[i], 2 * (off + i) * size + size * (size - 1) / 2);
    }
    free(in);
    free(vin);
    free(counts);
}

static void test_split_type(void)
{
    MPI_Comm node;
    int n = 0, me = -1, sum = 0;

    BM_CHECK_EQ_INT(
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node),
        MPI_SUCCESS);
    MPI_Comm_size(node, &n);
    MPI_Comm_rank(node, &me);
    /* Every rank of these tests runs on this one host. */
    BM_CHECK_EQ_INT(n, size);
    BM_CHECK_EQ_INT(me, rank);
    BM_CHECK_EQ_INT(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, node), MPI_SUCCESS);
    BM_CHECK_EQ_INT(sum, size * (size - 1) / 2);
    MPI_Comm_free(&node);
    BM_CHECK_EQ_INT(MPI_Comm_split_type(MPI_COMM_WORLD, 42, 0, MPI_INFO_NULL, &node), MPI_ERR_ARG);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    BM_RUN(test_gather_scatter);
    BM_RUN(test_v_variants);
    BM_RUN(test_allgather);
    BM_RUN(test_alltoall);
    BM_RUN(test_scan);
    BM_RUN(test_reduce_scatter);
    BM_RUN(test_split_type);
    MPI_Finalize();
    return bm_test_summary("api_coll_blocks");
}
