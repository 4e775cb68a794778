/* Communicator calls beyond dup and split: MPI_Comm_idup (alone, several at
 * once completed in reverse order, while a peer is blocked in a receive
 * that depends on it, on an inter-communicator, freed while it runs;
 * attributes and topology carried over), MPI_Comm_set_info/get_info and
 * MPI_Comm_dup_with_info (hints kept by dup, replaced by dup_with_info),
 * MPI_Comm_disconnect (intra and inter), MPI_Comm_split_type with
 * MPI_COMM_TYPE_SHARED (one node: everyone, ordered by key) and
 * MPI_UNDEFINED. */
#include "bm_test.h"

#include <mpi.h>
#include <stdint.h>
#include <string.h>

static int rank, size;

static int sum_on(MPI_Comm c)
{
    int one = 1, n = -1;
    MPI_Allreduce(&one, &n, 1, MPI_INT, MPI_SUM, c);
    return n;
}

static void test_idup(void)
{
    int key, flag = 0, n;
    void *val;
    MPI_Comm c[3];
    MPI_Request r[3];
    MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &key, NULL);
    MPI_Comm_set_attr(MPI_COMM_WORLD, key, (void *)77);
    BM_CHECK_EQ_INT(MPI_Comm_idup(MPI_COMM_WORLD, &c[0], &r[0]), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Wait(&r[0], MPI_STATUS_IGNORE), MPI_SUCCESS);
    BM_CHECK(c[0] != MPI_COMM_NULL && c[0] != MPI_COMM_WORLD);
    BM_CHECK_EQ_INT(sum_on(c[0]), size);
    MPI_Comm_get_attr(c[0], key, &val, &flag);
    BM_CHECK(flag && val == (void *)77);
    int res;
    MPI_Comm_compare(c[0], MPI_COMM_WORLD, &res);
    BM_CHECK_EQ_INT(res, MPI_CONGRUENT);
    MPI_Comm_free(&c[0]);
    MPI_Comm_delete_attr(MPI_COMM_WORLD, key);
    MPI_Comm_free_keyval(&key);

    /* three at once, completed in reverse order, isolated from each other */
    for (int i = 0; i < 3; i++)
        MPI_Comm_idup(MPI_COMM_WORLD, &c[i], &r[i]);
    for (int i = 2; i >= 0; i--)
        BM_CHECK_EQ_INT(MPI_Wait(&r[i], MPI_STATUS_IGNORE), MPI_SUCCESS);
    BM_CHECK(c[0] != c[1] && c[1] != c[2]);
    if (size > 1) {
        int v = -1, out = rank, other = rank + 1000;
        MPI_Request q;
        MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 0, c[1], &q);
        MPI_Send(&other, 1, MPI_INT, (rank + 1) % size, 0, c[2]);
        MPI_Send(&out, 1, MPI_INT, (rank + 1) % size, 0, c[1]);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        BM_CHECK_EQ_INT(v, (rank + size - 1) % size);
        MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 0, c[2], MPI_STATUS_IGNORE);
    }
    for (int i = 0; i < 3; i++) {
        BM_CHECK_EQ_INT(sum_on(c[i]), size);
        MPI_Comm_free(&c[i]);
    }

    /* rank 0 blocks in a receive that rank 1 sends only after its MPI_Wait
     * on the idup completes, which needs rank 0's part: progress must
     * carry the agreement while rank 0 is in MPI_Recv */
    if (size > 1) {
        int v = -1;
        MPI_Comm_idup(MPI_COMM_WORLD, &c[0], &r[0]);
        if (rank == 0) {
            MPI_Recv(&v, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            BM_CHECK_EQ_INT(v, 55);
            MPI_Wait(&r[0], MPI_STATUS_IGNORE);
        } else {
            MPI_Wait(&r[0], MPI_STATUS_IGNORE);
            if (rank == 1) {
                v = 55;
                MPI_Send(&v, 1, MPI_INT, 0, 5, MPI_COMM_WORLD);
            }
        }
        BM_CHECK_EQ_INT(sum_on(c[0]), size);
        MPI_Comm_free(&c[0]);
    }

    /* a Cartesian topology is kept */
    MPI_Comm cart, cdup;
    int dims[1] = {size}, periods[1] = {1}, status;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
    MPI_Comm_idup(cart, &cdup, &r[0]);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    MPI_Topo_test(cdup, &status);
    BM_CHECK_EQ_INT(status, MPI_CART);
    MPI_Comm_free(&cdup);
    MPI_Comm_free(&cart);

    /* freed while it runs: the others still complete theirs */
    MPI_Comm_idup(MPI_COMM_WORLD, &c[0], &r[0]);
    if (rank == 0) {
        BM_CHECK_EQ_INT(MPI_Request_free(&r[0]), MPI_SUCCESS);
    } else {
        MPI_Wait(&r[0], MPI_STATUS_IGNORE);
        MPI_Comm_size(c[0], &n);
        BM_CHECK_EQ_INT(n, size);
        MPI_Comm_free(&c[0]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void test_idup_inter(void)
{
    if (size < 2)
        return;
    MPI_Comm local, inter, dup;
    MPI_Request r;
    int side = rank % 2, rn = -1;
    MPI_Comm_split(MPI_COMM_WORLD, side, rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, side ? 0 : 1, 9, &inter);
    BM_CHECK_EQ_INT(MPI_Comm_idup(inter, &dup, &r), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS);
    MPI_Comm_remote_size(dup, &rn);
    BM_CHECK_EQ_INT(rn, (size + side) / 2);
    /* local rank k pairs with remote rank k (world rank 2k + the other side) */
    int v = -1, me = rank / 2;
    if (me < rn) {
        MPI_Sendrecv(&rank, 1, MPI_INT, me, 1, &v, 1, MPI_INT, me, 1, dup, MPI_STATUS_IGNORE);
        BM_CHECK_EQ_INT(v, 2 * me + 1 - side);
    }
    /* disconnect both */
    BM_CHECK_EQ_INT(MPI_Comm_disconnect(&dup), MPI_SUCCESS);
    BM_CHECK(dup == MPI_COMM_NULL);
    BM_CHECK_EQ_INT(MPI_Comm_disconnect(&inter), MPI_SUCCESS);
    MPI_Comm_free(&local);
}

static void test_info(void)
{
    MPI_Info info, got, other;
    MPI_Comm a, b, c;
    char val[MPI_MAX_INFO_VAL + 1];
    int flag = 0, n = -1;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    BM_CHECK_EQ_INT(MPI_Comm_get_info(a, &got), MPI_SUCCESS);
    MPI_Info_get_nkeys(got, &n);
    BM_CHECK_EQ_INT(n, 0);
    MPI_Info_free(&got);
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
    BM_CHECK_EQ_INT(MPI_Comm_set_info(a, info), MPI_SUCCESS);
    MPI_Info_free(&info); /* the communicator keeps its own copy */
    BM_CHECK_EQ_INT(MPI_Comm_get_info(a, &got), MPI_SUCCESS);
    MPI_Info_get(got, "mpi_assert_no_any_tag", MPI_MAX_INFO_VAL, val, &flag);
    BM_CHECK(flag == 1 && strcmp(val, "true") == 0);
    MPI_Info_free(&got);
    /* dup keeps the hints, dup_with_info replaces them */
    MPI_Comm_dup(a, &b);
    MPI_Comm_get_info(b, &got);
    MPI_Info_get(got, "mpi_assert_no_any_tag", MPI_MAX_INFO_VAL, val, &flag);
    BM_CHECK_EQ_INT(flag, 1);
    MPI_Info_free(&got);
    MPI_Info_create(&other);
    MPI_Info_set(other, "custom", "42");
    BM_CHECK_EQ_INT(MPI_Comm_dup_with_info(a, other, &c), MPI_SUCCESS);
    MPI_Info_free(&other);
    BM_CHECK_EQ_INT(sum_on(c), size);
    MPI_Comm_get_info(c, &got);
    MPI_Info_get(got, "mpi_assert_no_any_tag", MPI_MAX_INFO_VAL, val, &flag);
    BM_CHECK_EQ_INT(flag, 0);
    MPI_Info_get(got, "custom", MPI_MAX_INFO_VAL, val, &flag);
    BM_CHECK(flag == 1 && strcmp(val, "42") == 0);
    MPI_Info_free(&got);
    MPI_Comm_free(&c);
    /* MPI_INFO_NULL: a working duplicate without hints, neither a's nor any
     * other (Open MPI and MPICH accept it; MPICH's comm/dup_with_info uses it) */
    BM_CHECK_EQ_INT(MPI_Comm_dup_with_info(a, MPI_INFO_NULL, &c), MPI_SUCCESS);
    BM_CHECK_EQ_INT(sum_on(c), size);
    MPI_Comm_get_info(c, &got);
    MPI_Info_get(got, "mpi_assert_no_any_tag", MPI_MAX_INFO_VAL, val, &flag);
    BM_CHECK_EQ_INT(flag, 0);
    MPI_Info_free(&got);
    MPI_Comm_free(&c);
    BM_CHECK_EQ_INT(MPI_Comm_disconnect(&b), MPI_SUCCESS);
    MPI_Comm_free(&a);
}

static void test_split_type(void)
{
    MPI_Comm shm;
    int n = -1, r = -1;
    /* key: reverse order */
    BM_CHECK_EQ_INT(
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, size - rank, MPI_INFO_NULL, &shm),
        MPI_SUCCESS);
    MPI_Comm_size(shm, &n);
    MPI_Comm_rank(shm, &r);
    BM_CHECK_EQ_INT(n, size); /* one node under ctest */
    BM_CHECK_EQ_INT(r, size - 1 - rank);
    MPI_Comm_free(&shm);
    BM_CHECK_EQ_INT(MPI_Comm_split_type(MPI_COMM_WORLD,
                                        rank == 0 ? MPI_UNDEFINED : MPI_COMM_TYPE_SHARED, 0,
                                        MPI_INFO_NULL, &shm),
                    MPI_SUCCESS);
    BM_CHECK(rank == 0 ? shm == MPI_COMM_NULL : shm != MPI_COMM_NULL);
    if (shm != MPI_COMM_NULL) {
        MPI_Comm_size(shm, &n);
        BM_CHECK_EQ_INT(n, size - 1);
        MPI_Comm_free(&shm);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    BM_RUN(test_idup);
    BM_RUN(test_idup_inter);
    BM_RUN(test_info);
    BM_RUN(test_split_type);
    int rc = bm_test_summary("api_comm_more");
    MPI_Finalize();
    return rc;
}
