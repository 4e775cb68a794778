/* Graph topologies and neighbourhood collectives: MPI_Graph_create of a
 * ring (queries and a neighbour allgather on every rank, a decreasing
 * index refused, MPI_Graph_get, MPI_Ineighbor_allgatherv and
 * MPI_Neighbor_allgatherv_init started twice), MPI_Dist_graph_create_adjacent
 * with weights and a repeated edge, MPI_Dist_graph_create with edges given
 * by their sources or all by one rank, MPI_Neighbor_allgather(v) and
 * MPI_Neighbor_alltoall(v) on the distributed graph (blocks in neighbour
 * order, repeated edges matched in order) and on a non-periodic Cartesian
 * line (MPI_PROC_NULL neighbours leave their blocks untouched). */
#include "bm_test.h"

#include <mpi.h>
#include <stdlib.h>

static int rank, size;

static void test_graph(void)
{
    /* Node i links to i-1 and i+1 (a ring) over the first n = size ranks. */
    int n = size, *index = malloc(sizeof(int) * (size_t)n), *edges = malloc(sizeof(int) * 2 * n);
    int nn, ne, cnt, nb[2], status;
    MPI_Comm g;

    for (int i = 0; i < n; i++) {
        edges[2 * i] = (i - 1 + n) % n;
        edges[2 * i + 1] = (i + 1) % n;
        index[i] = 2 * (i + 1);
    }
    BM_CHECK_EQ_INT(MPI_Graph_create(MPI_COMM_WORLD, n, index, edges, 0, &g), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Topo_test(g, &status), MPI_SUCCESS);
    BM_CHECK_EQ_INT(status, MPI_GRAPH);
    BM_CHECK_EQ_INT(MPI_Graphdims_get(g, &nn, &ne), MPI_SUCCESS);
    BM_CHECK(nn == n && ne == 2 * n);
    BM_CHECK_EQ_INT(MPI_Graph_neighbors_count(g, rank, &cnt), MPI_SUCCESS);
    BM_CHECK_EQ_INT(cnt, 2);
    BM_CHECK_EQ_INT(MPI_Graph_neighbors(g, rank, 2, nb), MPI_SUCCESS);
    BM_CHECK(nb[0] == (rank - 1 + n) % n && nb[1] == (rank + 1) % n);
    {
        int got[2] = {-1, -1};
        BM_CHECK_EQ_INT(MPI_Neighbor_allgather(&rank, 1, MPI_INT, got, 1, MPI_INT, g), MPI_SUCCESS);
        BM_CHECK(got[0] == nb[0] && got[1] == nb[1]);
    }
    {
        /* The graph back as given, and the v-form of the neighbour
         * allgather nonblocking and persistent (blocks reversed). */
        int *gi = malloc(sizeof(int) * (size_t)n), *ge = malloc(sizeof(int) * 2 * n);
        BM_CHECK_EQ_INT(MPI_Graph_get(g, n, 2 * n, gi, ge), MPI_SUCCESS);
        for (int i = 0; i < n; i++)
            BM_CHECK(gi[i] == 2 * (i + 1) && ge[2 * i] == edges[2 * i] &&
                     ge[2 * i + 1] == edges[2 * i + 1]);
        free(gi);
        free(ge);
        int got[4], counts[2] = {1, 1}, displs[2] = {2, 0};
        MPI_Request r;
        for (int round = 0; round < 3; round++) {
            got[0] = got[1] = got[2] = got[3] = -1;
            if (round == 0)
                BM_CHECK_EQ_INT(MPI_Ineighbor_allgatherv(&rank, 1, MPI_INT, got, counts, displs,
                                                         MPI_INT, g, &r),
                                MPI_SUCCESS);
            else if (round == 1)
                BM_CHECK_EQ_INT(MPI_Neighbor_allgatherv_init(&rank, 1, MPI_INT, got, counts, displs,
                                                             MPI_INT, g, MPI_INFO_NULL, &r),
                                MPI_SUCCESS);
            if (round >= 1)
                MPI_Start(&r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            BM_CHECK(got[2] == nb[0] && got[0] == nb[1] && got[1] == -1 && got[3] == -1);
        }
        MPI_Request_free(&r);
    }
    MPI_Comm_free(&g);
    BM_CHECK_EQ_INT(MPI_Graph_neighbors_count(MPI_COMM_WORLD, 0, &cnt), MPI_ERR_TOPOLOGY);
    index[0] = 5; /* must not decrease: index[1] = 4 */
    if (n > 1)
        BM_CHECK_EQ_INT(MPI_Graph_create(MPI_COMM_WORLD, n, index, edges, 0, &g), MPI_ERR_ARG);
    free(index);
    free(edges);
}

static void test_dist_graph(void)
{
    /* In: from rank-1 twice (a repeated edge) and from rank+2; out: the
     * mirror image, so that every edge is declared at both ends. */
    int left = (rank - 1 + size) % size, right = (rank + 1) % size;
    int sources[3] = {left, left, (rank - 2 + 2 * size) % size};
    int dests[3] = {right, right, (rank + 2) % size};
    int sw[3] = {1, 2, 3}, dw[3] = {4, 5, 6}, gs[3], gsw[3], gd[3], gdw[3];
    int indeg, outdeg, weighted, send[3], recv[3];
    MPI_Comm g;

    BM_CHECK_EQ_INT(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 3, sources, sw, 3, dests, dw,
                                                   MPI_INFO_NULL, 0, &g),
                    MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Dist_graph_neighbors_count(g, &indeg, &outdeg, &weighted), MPI_SUCCESS);
    BM_CHECK(indeg == 3 && outdeg == 3 && weighted == 1);
    BM_CHECK_EQ_INT(MPI_Dist_graph_neighbors(g, 3, gs, gsw, 3, gd, gdw), MPI_SUCCESS);
    BM_CHECK(gs[2] == sources[2] && gsw[2] == 3 && gd[1] == right && gdw[0] == 4);

    /* Alltoall: block j goes to out-neighbour j; the repeated edge keeps
     * its order (block 0 arrives in slot 0, block 1 in slot 1). */
    for (int j = 0; j < 3; j++)
        send[j] = rank * 10 + j;
    BM_CHECK_EQ_INT(MPI_Neighbor_alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, g), MPI_SUCCESS);
    BM_CHECK_EQ_INT(recv[0], left * 10 + 0);
    BM_CHECK_EQ_INT(recv[1], left * 10 + 1);
    BM_CHECK_EQ_INT(recv[2], sources[2] * 10 + 2);

    /* v variants: out-neighbour j gets j + 1 elements; in-neighbour i's
     * block lands at 4 * i, after a gap. */
    {
        int vs[6], scounts[3] = {1, 2, 3}, sdispls[3] = {0, 1, 3};
        int vr[12], rcounts[3] = {1, 2, 3}, rdispls[3] = {1, 5, 9};
        int mine[2] = {rank, -rank}, ag[12], agc[3] = {2, 2, 2}, agd[3] = {0, 4, 8};
        for (int k = 0; k < 6; k++)
            vs[k] = rank * 100 + k;
        for (int k = 0; k < 12; k++)
            vr[k] = ag[k] = -1;
        BM_CHECK_EQ_INT(
            MPI_Neighbor_alltoallv(vs, scounts, sdispls, MPI_INT, vr, rcounts, rdispls, MPI_INT, g),
            MPI_SUCCESS);
        /* From in-neighbour i (who sent its block i: elements at sdispls[i]). */
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < rcounts[i]; k++)
                BM_CHECK_EQ_INT(vr[rdispls[i] + k], sources[i] * 100 + sdispls[i] + k);
        BM_CHECK_EQ_INT(vr[0], -1);
        BM_CHECK_EQ_INT(MPI_Neighbor_allgatherv(mine, 2, MPI_INT, ag, agc, agd, MPI_INT, g),
                        MPI_SUCCESS);
        for (int i = 0; i < 3; i++)
            BM_CHECK(ag[agd[i]] == sources[i] && ag[agd[i] + 1] == -sources[i] &&
                     ag[agd[i] + 2] == -1);
    }
    MPI_Comm_free(&g);

    BM_CHECK_EQ_INT(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 0, NULL, MPI_UNWEIGHTED, 0, NULL,
                                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g),
                    MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Dist_graph_neighbors_count(g, &indeg, &outdeg, &weighted), MPI_SUCCESS);
    BM_CHECK(indeg == 0 && outdeg == 0 && weighted == 0);
    MPI_Comm_free(&g);
    BM_CHECK_EQ_INT(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, (int[]){size}, MPI_UNWEIGHTED,
                                                   0, NULL, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g),
                    MPI_ERR_RANK);
}

static int int_cmp(const void *a, const void *b)
{
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* MPI_Dist_graph_create: the ring again, once with each rank giving its
 * own out-edges, once with rank 0 giving every edge (weighted by the
 * source). Neighbour order is the implementation's: compare sorted. */
static void test_dist_graph_create(void)
{
    int left = (rank - 1 + size) % size, right = (rank + 1) % size;
    int want[2] = {left, right}, srcs[2], dsts[2], sw[2], dw[2], indeg, outdeg, weighted;
    int got[2];
    MPI_Comm g;

    qsort(want, 2, sizeof(int), int_cmp);
    BM_CHECK_EQ_INT(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &rank, (int[]){2},
                                          (int[]){left, right}, MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
                                          &g),
                    MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Dist_graph_neighbors_count(g, &indeg, &outdeg, &weighted), MPI_SUCCESS);
    BM_CHECK(indeg == 2 && outdeg == 2 && weighted == 0);
    BM_CHECK_EQ_INT(MPI_Neighbor_allgather(&rank, 1, MPI_INT, got, 1, MPI_INT, g), MPI_SUCCESS);
    qsort(got, 2, sizeof(int), int_cmp);
    BM_CHECK(got[0] == want[0] && got[1] == want[1]);
    MPI_Comm_free(&g);

    {
        int n = rank == 0 ? size : 0, *s = malloc(sizeof(int) * (size_t)size);
        int *deg = malloc(sizeof(int) * (size_t)size), *d = malloc(sizeof(int) * 2 * size);
        int *w = malloc(sizeof(int) * 2 * size);
        for (int i = 0; i < size; i++) {
            s[i] = i;
            deg[i] = 2;
            d[2 * i] = (i - 1 + size) % size;
            d[2 * i + 1] = (i + 1) % size;
            w[2 * i] = w[2 * i + 1] = 100 + i;
        }
        BM_CHECK_EQ_INT(
            MPI_Dist_graph_create(MPI_COMM_WORLD, n, s, deg, d, w, MPI_INFO_NULL, 0, &g),
            MPI_SUCCESS);
        BM_CHECK_EQ_INT(MPI_Dist_graph_neighbors_count(g, &indeg, &outdeg, &weighted), MPI_SUCCESS);
        BM_CHECK(indeg == 2 && outdeg == 2 && weighted == 1);
        BM_CHECK_EQ_INT(MPI_Dist_graph_neighbors(g, 2, srcs, sw, 2, dsts, dw), MPI_SUCCESS);
        for (int k = 0; k < 2; k++) {
            BM_CHECK(sw[k] == 100 + srcs[k]); /* an in-edge carries its source's weight */
            BM_CHECK(dw[k] == 100 + rank);
        }
        qsort(srcs, 2, sizeof(int), int_cmp);
        BM_CHECK(srcs[0] == want[0] && srcs[1] == want[1]);
        MPI_Comm_free(&g);
        free(s);
        free(deg);
        free(d);
        free(w);
    }
    BM_CHECK_EQ_INT(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &rank, (int[]){1}, (int[]){-3},
                                          MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g),
                    MPI_ERR_RANK);
}

static void test_cart_neighbors(void)
{
    int dims[1] = {size}, periods[1] = {0}, got[2] = {-7, -7}, send[2], recv[2] = {-7, -7};
    MPI_Comm line;

    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &line);
    BM_CHECK_EQ_INT(MPI_Neighbor_allgather(&rank, 1, MPI_INT, got, 1, MPI_INT, line), MPI_SUCCESS);
    BM_CHECK_EQ_INT(got[0], rank > 0 ? rank - 1 : -7);
    BM_CHECK_EQ_INT(got[1], rank < size - 1 ? rank + 1 : -7);
    /* To the left goes block 0, to the right block 1. */
    send[0] = rank * 2;
    send[1] = rank * 2 + 1;
    BM_CHECK_EQ_INT(MPI_Neighbor_alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, line), MPI_SUCCESS);
    BM_CHECK_EQ_INT(recv[0], rank > 0 ? (rank - 1) * 2 + 1 : -7);
    BM_CHECK_EQ_INT(recv[1], rank < size - 1 ? (rank + 1) * 2 : -7);
    MPI_Comm_free(&line);
    BM_CHECK_EQ_INT(MPI_Neighbor_allgather(&rank, 1, MPI_INT, got, 1, MPI_INT, MPI_COMM_WORLD),
                    MPI_ERR_TOPOLOGY);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    BM_RUN(test_graph);
    BM_RUN(test_dist_graph);
    BM_RUN(test_dist_graph_create);
    BM_RUN(test_cart_neighbors);
    MPI_Finalize();
    return bm_test_summary("api_topo_graph");
}
