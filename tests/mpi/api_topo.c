/* Cartesian topologies: MPI_Dims_create on balanced and constrained
 * shapes, checked exhaustively for every n up to 10,000 in 2, 3 and 4
 * dimensions against a plain enumeration of all factorizations (the most
 * balanced: smallest largest-minus-smallest, then, as MPICH, the largest
 * factors from the smallest up; 504 in 2-D is 24 x 21, 5040 in 3-D is
 * 21 x 16 x 15), and on large n, a periodic 2-D grid whose ranks
 * swap halos with their four neighbours (MPI_Cart_shift + MPI_Sendrecv), coordinates and ranks both
 * ways (with periodic wrap), row sub-grids (MPI_Cart_sub) running
 * collectives, a non-periodic edge (MPI_PROC_NULL), processes left out of
 * a grid smaller than the communicator, and error classes. */
#include "bm_test.h"

#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int rank, size;

static void test_dims_create(void)
{
    int d2[2] = {0, 0}, d3[3] = {0, 0, 0}, fixed[3] = {0, 3, 0}, one[1] = {0};

    BM_CHECK_EQ_INT(MPI_Dims_create(12, 2, d2), MPI_SUCCESS);
    BM_CHECK(d2[0] == 4 && d2[1] == 3);
    BM_CHECK_EQ_INT(MPI_Dims_create(8, 3, d3), MPI_SUCCESS);
    BM_CHECK(d3[0] == 2 && d3[1] == 2 && d3[2] == 2);
    memset(d2, 0, sizeof(d2));
    BM_CHECK_EQ_INT(MPI_Dims_create(16, 2, d2), MPI_SUCCESS);
    BM_CHECK(d2[0] == 4 && d2[1] == 4);
    memset(d2, 0, sizeof(d2));
    BM_CHECK_EQ_INT(MPI_Dims_create(7, 2, d2), MPI_SUCCESS);
    BM_CHECK(d2[0] == 7 && d2[1] == 1);
    BM_CHECK_EQ_INT(MPI_Dims_create(24, 3, fixed), MPI_SUCCESS);
    BM_CHECK(fixed[0] == 4 && fixed[1] == 3 && fixed[2] == 2);
    BM_CHECK_EQ_INT(MPI_Dims_create(5, 1, one), MPI_SUCCESS);
    BM_CHECK_EQ_INT(one[0], 5);
    fixed[0] = 0;
    fixed[1] = 5;
    fixed[2] = 0;
    BM_CHECK_EQ_INT(MPI_Dims_create(12, 3, fixed), MPI_ERR_DIMS);
}

/* Reference: every non-increasing k-tuple of factors of n, the best kept. */
static void ref_enum(int n, int k, int pos, int maxf, int *cur, int *best, long *best_spread)
{
    if (pos == k - 1) {
        if (n > maxf)
            return;
        cur[pos] = n;
        long spread = cur[0] - n;
        int better = *best_spread < 0 || spread < *best_spread;
        if (!better && spread == *best_spread)
            for (int i = k - 1; i >= 0; i--)
                if (cur[i] != best[i]) {
                    better = cur[i] > best[i];
                    break;
                }
        if (better) {
            *best_spread = spread;
            memcpy(best, cur, sizeof(int) * (size_t)k);
        }
        return;
    }
    for (int f = maxf < n ? maxf : n; f >= 1; f--)
        if (n % f == 0) {
            cur[pos] = f;
            ref_enum(n / f, k, pos + 1, f, cur, best, best_spread);
        }
}

static void test_dims_exhaustive(void)
{
    int bad = 0, d[4], cur[4], best[4];
    for (int k = 2; k <= 4; k++)
        for (int n = 1; n <= 10000; n++) {
            long spread = -1;
            ref_enum(n, k, 0, n, cur, best, &spread);
            memset(d, 0, sizeof(d));
            MPI_Dims_create(n, k, d);
            for (int i = 0; i < k; i++)
                if (d[i] != best[i]) {
                    if (bad++ < 5)
                        printf("MPI_Dims_create(%d, %d): dims[%d] = %d, expected %d\n", n, k, i,
                               d[i], best[i]);
                    break;
                }
        }
    BM_CHECK_EQ_INT(bad, 0);
    memset(d, 0, sizeof(d));
    MPI_Dims_create(504, 2, d);
    BM_CHECK(d[0] == 24 && d[1] == 21);
    /* equally spread: the largest smallest factor (as MPICH) */
    memset(d, 0, sizeof(d));
    MPI_Dims_create(5040, 3, d);
    BM_CHECK(d[0] == 21 && d[1] == 16 && d[2] == 15);
    /* large: a prime, a power of two, and fixed dimensions among free ones */
    memset(d, 0, sizeof(d));
    BM_CHECK_EQ_INT(MPI_Dims_create(2147483647, 2, d), MPI_SUCCESS);
    BM_CHECK(d[0] == 2147483647 && d[1] == 1);
    memset(d, 0, sizeof(d));
    BM_CHECK_EQ_INT(MPI_Dims_create(1 << 30, 3, d), MPI_SUCCESS);
    BM_CHECK(d[0] == 1024 && d[1] == 1024 && d[2] == 1024);
    int mixed[4] = {0, 7, 0, 0};
    BM_CHECK_EQ_INT(MPI_Dims_create(7 * 504 * 2, 4, mixed), MPI_SUCCESS);
    BM_CHECK(mixed[0] == 12 && mixed[1] == 7 && mixed[2] == 12 && mixed[3] == 7);
}

static void test_grid(void)
{
    int dims[2] = {0, 0}, periods[2] = {1, 1}, coords[2], c2[2], r, up, down, left, right;
    int got[4], nd = -1, status = -1;
    MPI_Comm grid, row;

    MPI_Dims_create(size, 2, dims);
    BM_CHECK_EQ_INT(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 1, &grid), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Topo_test(grid, &status), MPI_SUCCESS);
    BM_CHECK_EQ_INT(status, MPI_CART);
    BM_CHECK_EQ_INT(MPI_Topo_test(MPI_COMM_WORLD, &status), MPI_SUCCESS);
    BM_CHECK_EQ_INT(status, MPI_UNDEFINED);
    BM_CHECK_EQ_INT(MPI_Cartdim_get(grid, &nd), MPI_SUCCESS);
    BM_CHECK_EQ_INT(nd, 2);
    MPI_Comm_rank(grid, &r);
    BM_CHECK_EQ_INT(MPI_Cart_coords(grid, r, 2, coords), MPI_SUCCESS);
    BM_CHECK(coords[0] == r / dims[1] && coords[1] == r % dims[1]);
    BM_CHECK_EQ_INT(MPI_Cart_get(grid, 2, c2, periods, coords), MPI_SUCCESS);
    BM_CHECK(c2[0] == dims[0] && c2[1] == dims[1] && periods[0] == 1);
    c2[0] = coords[0] + dims[0]; /* wraps around */
    c2[1] = coords[1] - dims[1];
    BM_CHECK_EQ_INT(MPI_Cart_rank(grid, c2, &nd), MPI_SUCCESS);
    BM_CHECK_EQ_INT(nd, r);

    /* Halo exchange: each rank sends its rank to its four neighbours. */
    BM_CHECK_EQ_INT(MPI_Cart_shift(grid, 0, 1, &up, &down), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Cart_shift(grid, 1, 1, &left, &right), MPI_SUCCESS);
    MPI_Sendrecv(&r, 1, MPI_INT, down, 0, &got[0], 1, MPI_INT, up, 0, grid, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&r, 1, MPI_INT, up, 1, &got[1], 1, MPI_INT, down, 1, grid, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&r, 1, MPI_INT, right, 2, &got[2], 1, MPI_INT, left, 2, grid, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&r, 1, MPI_INT, left, 3, &got[3], 1, MPI_INT, right, 3, grid, MPI_STATUS_IGNORE);
    BM_CHECK_EQ_INT(got[0], ((coords[0] - 1 + dims[0]) % dims[0]) * dims[1] + coords[1]);
    BM_CHECK_EQ_INT(got[1], ((coords[0] + 1) % dims[0]) * dims[1] + coords[1]);
    BM_CHECK_EQ_INT(got[2], coords[0] * dims[1] + (coords[1] - 1 + dims[1]) % dims[1]);
    BM_CHECK_EQ_INT(got[3], coords[0] * dims[1] + (coords[1] + 1) % dims[1]);

    /* Rows: keep dimension 1. */
    BM_CHECK_EQ_INT(MPI_Cart_sub(grid, (int[]){0, 1}, &row), MPI_SUCCESS);
    MPI_Comm_size(row, &nd);
    BM_CHECK_EQ_INT(nd, dims[1]);
    MPI_Comm_rank(row, &nd);
    BM_CHECK_EQ_INT(nd, coords[1]);
    BM_CHECK_EQ_INT(MPI_Allreduce(&r, &nd, 1, MPI_INT, MPI_MIN, row), MPI_SUCCESS);
    BM_CHECK_EQ_INT(nd, coords[0] * dims[1]);
    BM_CHECK_EQ_INT(MPI_Cartdim_get(row, &nd), MPI_SUCCESS);
    BM_CHECK_EQ_INT(nd, 1);
    MPI_Comm_free(&row);

    /* A duplicate keeps the topology. */
    BM_CHECK_EQ_INT(MPI_Comm_dup(grid, &row), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Topo_test(row, &status), MPI_SUCCESS);
    BM_CHECK_EQ_INT(status, MPI_CART);
    MPI_Comm_free(&row);

    BM_CHECK_EQ_INT(MPI_Cart_shift(grid, 2, 1, &up, &down), MPI_ERR_ARG);
    BM_CHECK_EQ_INT(MPI_Cart_shift(MPI_COMM_WORLD, 0, 1, &up, &down), MPI_ERR_TOPOLOGY);
    MPI_Comm_free(&grid);
}

static void test_line(void)
{
    int dims[1] = {size > 1 ? size - 1 : 1}, periods[1] = {0}, prev, next, r;
    MPI_Comm line;

    /* A non-periodic line one process shorter than the world. */
    BM_CHECK_EQ_INT(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &line), MPI_SUCCESS);
    if (rank >= dims[0]) {
        BM_CHECK(line == MPI_COMM_NULL);
        return;
    }
    MPI_Comm_rank(line, &r);
    BM_CHECK_EQ_INT(MPI_Cart_shift(line, 0, 1, &prev, &next), MPI_SUCCESS);
    BM_CHECK_EQ_INT(prev, r == 0 ? MPI_PROC_NULL : r - 1);
    BM_CHECK_EQ_INT(next, r == dims[0] - 1 ? MPI_PROC_NULL : r + 1);
    BM_CHECK_EQ_INT(MPI_Cart_rank(line, (int[]){dims[0]}, &r), MPI_ERR_ARG);
    MPI_Comm_free(&line);
}

int main(int argc, char **argv)
{
    int dims[2] = {size + 1, 1}, periods[2] = {0, 0};
    MPI_Comm bad;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    BM_RUN(test_dims_create);
    if (rank == 0)
        BM_RUN(test_dims_exhaustive);
    BM_RUN(test_grid);
    BM_RUN(test_line);
    dims[0] = size + 1;
    BM_CHECK_EQ_INT(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &bad), MPI_ERR_DIMS);
    MPI_Finalize();
    return bm_test_summary("api_topo");
}
