/* Process groups and MPI_Comm_create: group queries, inclusion and
 * exclusion (lists and ranges), set operations in the standard's order,
 * rank translation, comparison, error classes for bad groups and rank
 * lists, a communicator made from a reordered subset that then runs
 * collectives, and MPI_Comm_create_group called by the members only (two
 * disjoint groups at once). */
#include "bm_test.h"

#include <mpi.h>
#include <stdlib.h>

static int rank, size;

static void test_queries(void)
{
    MPI_Group world, self, empty;
    int n = -1, r = -1, cmp = -1;

    BM_CHECK_EQ_INT(MPI_Comm_group(MPI_COMM_WORLD, &world), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Group_size(world, &n), MPI_SUCCESS);
    BM_CHECK_EQ_INT(n, size);
    BM_CHECK_EQ_INT(MPI_Group_rank(world, &r), MPI_SUCCESS);
    BM_CHECK_EQ_INT(r, rank);
    BM_CHECK_EQ_INT(MPI_Comm_group(MPI_COMM_SELF, &self), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Group_size(self, &n), MPI_SUCCESS);
    BM_CHECK_EQ_INT(n, 1);
    BM_CHECK_EQ_INT(MPI_Group_compare(world, world, &cmp), MPI_SUCCESS);
    BM_CHECK_EQ_INT(cmp, MPI_IDENT);
    BM_CHECK_EQ_INT(MPI_Group_compare(world, self, &cmp), MPI_SUCCESS);
    BM_CHECK_EQ_INT(cmp, size == 1 ? MPI_IDENT : MPI_UNEQUAL);
    BM_CHECK_EQ_INT(MPI_Group_size(MPI_GROUP_EMPTY, &n), MPI_SUCCESS);
    BM_CHECK_EQ_INT(n, 0);
    BM_CHECK_EQ_INT(MPI_Group_rank(MPI_GROUP_EMPTY, &r), MPI_SUCCESS);
    BM_CHECK_EQ_INT(r, MPI_UNDEFINED);
    BM_CHECK_EQ_INT(MPI_Group_difference(world, world, &empty), MPI_SUCCESS);
    BM_CHECK(empty == MPI_GROUP_EMPTY);
    BM_CHECK_EQ_INT(MPI_Group_free(&self), MPI_SUCCESS);
    BM_CHECK(self == MPI_GROUP_NULL);
    BM_CHECK_EQ_INT(MPI_Group_free(&world), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Group_free(&empty), MPI_SUCCESS);
}

static void test_subsets(void)
{
    MPI_Group world, rev, evens, odds, u, x, similar;
    int *ranks = malloc(sizeof(int) * (size_t)size), *out = malloc(sizeof(int) * (size_t)size);
    int n, cmp, r, ranges[1][3];

    MPI_Comm_group(MPI_COMM_WORLD, &world);
    for (int i = 0; i < size; i++)
        ranks[i] = size - 1 - i;
    BM_CHECK_EQ_INT(MPI_Group_incl(world, size, ranks, &rev), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Group_rank(rev, &r), MPI_SUCCESS);
    BM_CHECK_EQ_INT(r, size - 1 - rank);
    BM_CHECK_EQ_INT(MPI_Group_compare(world, rev, &cmp), MPI_SUCCESS);
    BM_CHECK_EQ_INT(cmp, size == 1 ? MPI_IDENT : MPI_SIMILAR);
    for (int i = 0; i < size; i++)
        ranks[i] = i;
    BM_CHECK_EQ_INT(MPI_Group_translate_ranks(world, size, ranks, rev, out), MPI_SUCCESS);
    for (int i = 0; i < size; i++)
        BM_CHECK_EQ_INT(out[i], size - 1 - i);

    ranges[0][0] = 0;
    ranges[0][1] = size - 1;
    ranges[0][2] = 2;
    BM_CHECK_EQ_INT(MPI_Group_range_incl(world, 1, ranges, &evens), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Group_range_excl(world, 1, ranges, &odds), MPI_SUCCESS);
    MPI_Group_size(evens, &n);
    BM_CHECK_EQ_INT(n, (size + 1) / 2);
    MPI_Group_size(odds, &n);
    BM_CHECK_EQ_INT(n, size / 2);
    BM_CHECK_EQ_INT(MPI_Group_rank(evens, &r), MPI_SUCCESS);
    BM_CHECK_EQ_INT(r, rank % 2 ? MPI_UNDEFINED : rank / 2);

    /* Union: odds first (their order), then the evens. */
    BM_CHECK_EQ_INT(MPI_Group_union(odds, evens, &u), MPI_SUCCESS);
    MPI_Group_size(u, &n);
    BM_CHECK_EQ_INT(n, size);
    BM_CHECK_EQ_INT(MPI_Group_rank(u, &r), MPI_SUCCESS);
    BM_CHECK_EQ_INT(r, rank % 2 ? rank / 2 : size / 2 + rank / 2);
    BM_CHECK_EQ_INT(MPI_Group_compare(u, world, &cmp), MPI_SUCCESS);
    BM_CHECK_EQ_INT(cmp, size == 1 ? MPI_IDENT : MPI_SIMILAR);
    BM_CHECK_EQ_INT(MPI_Group_intersection(u, evens, &x), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Group_compare(x, evens, &cmp), MPI_SUCCESS);
    BM_CHECK_EQ_INT(cmp, MPI_IDENT);
    MPI_Group_free(&x);
    BM_CHECK_EQ_INT(MPI_Group_excl(world, size / 2, (int[]){1, 3, 5, 7}, &x), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Group_compare(x, evens, &cmp), MPI_SUCCESS);
    BM_CHECK_EQ_INT(cmp, size <= 8 ? MPI_IDENT : MPI_UNEQUAL);

    /* Errors. */
    BM_CHECK_EQ_INT(MPI_Group_size(MPI_GROUP_NULL, &n), MPI_ERR_GROUP);
    BM_CHECK_EQ_INT(MPI_Group_incl(world, 1, (int[]){size}, &similar), MPI_ERR_RANK);
    if (size > 1)
        BM_CHECK_EQ_INT(MPI_Group_incl(world, 2, (int[]){0, 0}, &similar), MPI_ERR_RANK);
    BM_CHECK_EQ_INT(MPI_Group_translate_ranks(world, 1, (int[]){-3}, rev, out), MPI_ERR_RANK);
    ranges[0][2] = 0;
    BM_CHECK_EQ_INT(MPI_Group_range_incl(world, 1, ranges, &similar), MPI_ERR_ARG);

    MPI_Group_free(&x);
    MPI_Group_free(&u);
    MPI_Group_free(&evens);
    MPI_Group_free(&odds);
    MPI_Group_free(&rev);
    MPI_Group_free(&world);
    free(ranks);
    free(out);
}

static void test_comm_create(void)
{
    MPI_Group world, sub;
    MPI_Comm comm;
    int *ranks = malloc(sizeof(int) * (size_t)size), n = 0, r, sum = -1, want = 0;

    /* Every rank but 0, in reverse order (everyone when alone). */
    for (int i = size - 1; i >= (size > 1 ? 1 : 0); i--) {
        ranks[n++] = i;
        want += i;
    }
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, n, ranks, &sub);
    BM_CHECK_EQ_INT(MPI_Comm_create(MPI_COMM_WORLD, sub, &comm), MPI_SUCCESS);
    if (rank == 0 && size > 1) {
        BM_CHECK(comm == MPI_COMM_NULL);
    } else {
        BM_CHECK(comm != MPI_COMM_NULL);
        MPI_Comm_size(comm, &r);
        BM_CHECK_EQ_INT(r, n);
        MPI_Comm_rank(comm, &r);
        BM_CHECK_EQ_INT(r, size - 1 - rank);
        BM_CHECK_EQ_INT(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm), MPI_SUCCESS);
        BM_CHECK_EQ_INT(sum, want);
        r = rank;
        BM_CHECK_EQ_INT(MPI_Bcast(&r, 1, MPI_INT, 0, comm), MPI_SUCCESS);
        BM_CHECK_EQ_INT(r, size - 1);
        BM_CHECK_EQ_INT(MPI_Comm_free(&comm), MPI_SUCCESS);
    }
    /* The world keeps working after (and alongside) the new communicator. */
    BM_CHECK_EQ_INT(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), MPI_SUCCESS);
    BM_CHECK_EQ_INT(sum, size - 1);
    BM_CHECK_EQ_INT(MPI_Comm_create(MPI_COMM_WORLD, MPI_GROUP_NULL, &comm), MPI_ERR_GROUP);
    MPI_Group_free(&sub);
    MPI_Group_free(&world);
    free(ranks);
}

static void test_comm_create_group(void)
{
    MPI_Group world, mine, other;
    MPI_Comm comm;
    int ranks[64], n = 0, m = 0, others[64], sum = -1, want = 0, r;

    /* Evens and odds each build their own communicator, at the same time
     * and with the same tag; only the members of each group take part. */
    for (int i = rank % 2; i < size; i += 2) {
        ranks[n++] = i;
        want += i;
    }
    for (int i = 1 - rank % 2; i < size; i += 2)
        others[m++] = i;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, n, ranks, &mine);
    BM_CHECK_EQ_INT(MPI_Comm_create_group(MPI_COMM_WORLD, mine, 7, &comm), MPI_SUCCESS);
    BM_CHECK(comm != MPI_COMM_NULL);
    MPI_Comm_size(comm, &r);
    BM_CHECK_EQ_INT(r, n);
    MPI_Comm_rank(comm, &r);
    BM_CHECK_EQ_INT(r, rank / 2);
    BM_CHECK_EQ_INT(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm), MPI_SUCCESS);
    BM_CHECK_EQ_INT(sum, want);
    BM_CHECK_EQ_INT(MPI_Comm_free(&comm), MPI_SUCCESS);
    if (m > 0) {
        MPI_Group_incl(world, m, others, &other);
        BM_CHECK_EQ_INT(MPI_Comm_create_group(MPI_COMM_WORLD, other, 7, &comm), MPI_ERR_GROUP);
        MPI_Group_free(&other);
    }
    BM_CHECK_EQ_INT(MPI_Comm_create_group(MPI_COMM_WORLD, MPI_GROUP_EMPTY, 0, &comm), MPI_SUCCESS);
    BM_CHECK(comm == MPI_COMM_NULL);
    BM_CHECK_EQ_INT(MPI_Comm_create_group(MPI_COMM_WORLD, mine, -1, &comm), MPI_ERR_TAG);
    MPI_Group_free(&mine);
    MPI_Group_free(&world);
    /* Everyone is still in step. */
    BM_CHECK_EQ_INT(MPI_Barrier(MPI_COMM_WORLD), MPI_SUCCESS);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    BM_RUN(test_queries);
    BM_RUN(test_subsets);
    BM_RUN(test_comm_create);
    BM_RUN(test_comm_create_group);
    MPI_Finalize();
    return bm_test_summary("api_group");
}
