/* Inter-communicators: MPI_Intercomm_create between the even and the odd
 * world ranks (groups of unequal size at odd process counts), the queries
 * (Comm_test_inter, Comm_size/rank of the local group, Comm_remote_size,
 * Comm_remote_group, Comm_group, Comm_compare), point-to-point addressed to
 * the remote group (blocking, nonblocking, Sendrecv, wildcards, MPI_SOURCE
 * as a remote rank, probes, an invalid remote rank), isolation of a
 * duplicate, Comm_split and Comm_create on an inter-communicator,
 * Intercomm_merge in both orders, and the errors: overlapping groups and
 * inter-only calls on an intra-communicator. */
#include "bm_test.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int wrank, wsize;

#define RUN(fn, ...)                                                                               \
    do {                                                                                           \
        bm_test_current = #fn;                                                                     \
        fn(__VA_ARGS__);                                                                           \
    } while (0)

/* world rank of rank r of the even (side 0) or odd (side 1) group */
static int world_of(int side, int r)
{
    return 2 * r + side;
}

static int side_size(int side)
{
    return (wsize + 1 - side) / 2;
}

static MPI_Comm make_inter(MPI_Comm *local_out)
{
    int side = wrank % 2;
    MPI_Comm local, inter;
    BM_CHECK_EQ_INT(MPI_Comm_split(MPI_COMM_WORLD, side, wrank, &local), MPI_SUCCESS);
    /* leaders: local rank 0 = world rank 0 (even) and 1 (odd) */
    BM_CHECK_EQ_INT(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, side ? 0 : 1, 77, &inter),
                    MPI_SUCCESS);
    *local_out = local;
    return inter;
}

static void test_queries(MPI_Comm inter, MPI_Comm local)
{
    int side = wrank % 2, flag = -1, n = -1, r = -1, res = -1;
    BM_CHECK_EQ_INT(MPI_Comm_test_inter(inter, &flag), MPI_SUCCESS);
    BM_CHECK_EQ_INT(flag, 1);
    BM_CHECK_EQ_INT(MPI_Comm_test_inter(local, &flag), MPI_SUCCESS);
    BM_CHECK_EQ_INT(flag, 0);
    BM_CHECK_EQ_INT(MPI_Comm_size(inter, &n), MPI_SUCCESS);
    BM_CHECK_EQ_INT(n, side_size(side));
    BM_CHECK_EQ_INT(MPI_Comm_rank(inter, &r), MPI_SUCCESS);
    BM_CHECK_EQ_INT(r, wrank / 2);
    BM_CHECK_EQ_INT(MPI_Comm_remote_size(inter, &n), MPI_SUCCESS);
    BM_CHECK_EQ_INT(n, side_size(1 - side));

    MPI_Group rg, lg, wg;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    BM_CHECK_EQ_INT(MPI_Comm_remote_group(inter, &rg), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Comm_group(inter, &lg), MPI_SUCCESS);
    int rn = side_size(1 - side), ln = side_size(side);
    int *ranks = malloc(sizeof(int) * (size_t)wsize), *out = malloc(sizeof(int) * (size_t)wsize);
    for (int i = 0; i < wsize; i++)
        ranks[i] = i;
    MPI_Group_translate_ranks(rg, rn, ranks, wg, out);
    int bad = 0;
    for (int i = 0; i < rn; i++)
        bad += out[i] != world_of(1 - side, i);
    MPI_Group_translate_ranks(lg, ln, ranks, wg, out);
    for (int i = 0; i < ln; i++)
        bad += out[i] != world_of(side, i);
    BM_CHECK_EQ_INT(bad, 0);
    MPI_Group_free(&rg);
    MPI_Group_free(&lg);
    MPI_Group_free(&wg);
    free(ranks);
    free(out);

    MPI_Comm dup;
    BM_CHECK_EQ_INT(MPI_Comm_dup(inter, &dup), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Comm_compare(inter, dup, &res), MPI_SUCCESS);
    BM_CHECK_EQ_INT(res, MPI_CONGRUENT);
    BM_CHECK_EQ_INT(MPI_Comm_compare(inter, local, &res), MPI_SUCCESS);
    BM_CHECK_EQ_INT(res, MPI_UNEQUAL);
    BM_CHECK_EQ_INT(MPI_Comm_test_inter(dup, &flag), MPI_SUCCESS);
    BM_CHECK_EQ_INT(flag, 1);
    MPI_Comm_free(&dup);
}

/* Every process sends to every remote rank and receives from every remote
 * rank, through the four flavours of point-to-point. */
static void test_p2p(MPI_Comm inter)
{
    int side = wrank % 2, me = wrank / 2, rn = side_size(1 - side);
    int *in = malloc(sizeof(int) * (size_t)rn), *out = malloc(sizeof(int) * (size_t)rn);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)rn);
    MPI_Status st;
    for (int i = 0; i < rn; i++) {
        out[i] = 1000 * wrank + i;
        MPI_Irecv(&in[i], 1, MPI_INT, i, 5, inter, &reqs[i]);
        MPI_Isend(&out[i], 1, MPI_INT, i, 5, inter, &reqs[rn + i]);
    }
    BM_CHECK_EQ_INT(MPI_Waitall(2 * rn, reqs, MPI_STATUSES_IGNORE), MPI_SUCCESS);
    int bad = 0;
    for (int i = 0; i < rn; i++)
        bad += in[i] != 1000 * world_of(1 - side, i) + me;
    BM_CHECK_EQ_INT(bad, 0);

    /* blocking, with a wildcard source: MPI_SOURCE is a remote rank */
    bad = 0;
    for (int i = 0; i < rn; i++)
        MPI_Isend(&out[i], 1, MPI_INT, i, 6, inter, &reqs[i]);
    for (int k = 0; k < rn; k++) {
        int v = -1, flag = 0;
        BM_CHECK_EQ_INT(MPI_Probe(MPI_ANY_SOURCE, 6, inter, &st), MPI_SUCCESS);
        BM_CHECK_EQ_INT(MPI_Iprobe(st.MPI_SOURCE, 6, inter, &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
        BM_CHECK_EQ_INT(flag, 1);
        BM_CHECK_EQ_INT(MPI_Recv(&v, 1, MPI_INT, st.MPI_SOURCE, 6, inter, &st), MPI_SUCCESS);
        bad += st.MPI_SOURCE < 0 || st.MPI_SOURCE >= rn ||
               v != 1000 * world_of(1 - side, st.MPI_SOURCE) + me;
    }
    BM_CHECK_EQ_INT(bad, 0);
    MPI_Waitall(rn, reqs, MPI_STATUSES_IGNORE);

    /* Sendrecv with the remote rank of the same index (groups of equal size) */
    int peer = me, v = -1;
    if (rn == side_size(side)) {
        BM_CHECK_EQ_INT(
            MPI_Sendrecv(&wrank, 1, MPI_INT, peer, 8, &v, 1, MPI_INT, peer, 8, inter, &st),
            MPI_SUCCESS);
        BM_CHECK_EQ_INT(v, world_of(1 - side, peer));
        BM_CHECK_EQ_INT(st.MPI_SOURCE, peer);
    }

    /* a rank of the local group that is beyond the remote group is invalid */
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    int rc = MPI_Send(&v, 1, MPI_INT, rn, 9, inter), cls = -1;
    MPI_Error_class(rc, &cls);
    BM_CHECK_EQ_INT(cls, MPI_ERR_RANK);
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_ARE_FATAL);
    free(in);
    free(out);
    free(reqs);
}

/* A message on a duplicate never matches a receive on the original. */
static void test_dup_isolation(MPI_Comm inter)
{
    int side = wrank % 2, me = wrank / 2;
    MPI_Comm dup;
    MPI_Comm_dup(inter, &dup);
    if (me == 0) {
        int v = side ? 11 : 22, got = -1, flag = 1;
        MPI_Request r;
        MPI_Isend(&v, 1, MPI_INT, 0, 3, dup, &r);
        MPI_Barrier(MPI_COMM_WORLD); /* both sent */
        MPI_Iprobe(0, MPI_ANY_TAG, inter, &flag, MPI_STATUS_IGNORE);
        BM_CHECK_EQ_INT(flag, 0);
        MPI_Recv(&got, 1, MPI_INT, 0, 3, dup, MPI_STATUS_IGNORE);
        BM_CHECK_EQ_INT(got, side ? 22 : 11);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Comm_free(&dup);
}

static void test_merge(MPI_Comm inter)
{
    int side = wrank % 2, me = wrank / 2, r = -1, n = -1;
    for (int variant = 0; variant < 3; variant++) {
        /* 0: odd group high; 1: even group high; 2: both low (leader order) */
        int high = variant == 0 ? side : variant == 1 ? !side : 0;
        MPI_Comm merged;
        BM_CHECK_EQ_INT(MPI_Intercomm_merge(inter, high, &merged), MPI_SUCCESS);
        MPI_Comm_size(merged, &n);
        MPI_Comm_rank(merged, &r);
        BM_CHECK_EQ_INT(n, wsize);
        bool first = variant == 0 ? side == 0 : variant == 1 ? side == 1 : side == 0;
        BM_CHECK_EQ_INT(r, first ? me : side_size(1 - side) + me);
        int flag = -1;
        MPI_Comm_test_inter(merged, &flag);
        BM_CHECK_EQ_INT(flag, 0);
        /* the merged communicator works: sum of world ranks */
        int sum = -1;
        MPI_Allreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, merged);
        BM_CHECK_EQ_INT(sum, wsize * (wsize - 1) / 2);
        MPI_Comm_free(&merged);
    }
}

static void test_split_create(MPI_Comm inter)
{
    int side = wrank % 2, me = wrank / 2, n = -1, rn = -1;
    MPI_Comm sub;
    /* color by local rank parity; key reverses the order */
    BM_CHECK_EQ_INT(MPI_Comm_split(inter, me % 2, -me, &sub), MPI_SUCCESS);
    int mine = (side_size(side) + 1 - me % 2) / 2, theirs = (side_size(1 - side) + 1 - me % 2) / 2;
    if (theirs == 0) {
        BM_CHECK(sub == MPI_COMM_NULL);
    } else {
        BM_CHECK(sub != MPI_COMM_NULL);
        MPI_Comm_size(sub, &n);
        MPI_Comm_remote_size(sub, &rn);
        BM_CHECK_EQ_INT(n, mine);
        BM_CHECK_EQ_INT(rn, theirs);
        int r = -1;
        MPI_Comm_rank(sub, &r);
        BM_CHECK_EQ_INT(r, mine - 1 - me / 2);
        /* remote rank 0 is the highest local rank of that color on the other side */
        int v = -1, out = wrank;
        MPI_Request q;
        MPI_Irecv(&v, 1, MPI_INT, 0, 1, sub, &q);
        if (r == 0)
            for (int i = 0; i < rn; i++)
                MPI_Send(&out, 1, MPI_INT, i, 1, sub);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        int other_n = side_size(1 - side);
        int top = other_n - 1; /* highest local rank of parity me%2 on the other side */
        while (top % 2 != me % 2)
            top--;
        BM_CHECK_EQ_INT(v, world_of(1 - side, top));
        MPI_Comm_free(&sub);
    }
    /* MPI_Comm_create with the first local rank of each side only */
    MPI_Group lg, first;
    int zero = 0;
    MPI_Comm_group(inter, &lg);
    MPI_Group_incl(lg, 1, &zero, &first);
    BM_CHECK_EQ_INT(MPI_Comm_create(inter, first, &sub), MPI_SUCCESS);
    if (me == 0) {
        BM_CHECK(sub != MPI_COMM_NULL);
        MPI_Comm_remote_size(sub, &rn);
        BM_CHECK_EQ_INT(rn, 1);
        int v = -1;
        MPI_Sendrecv(&wrank, 1, MPI_INT, 0, 2, &v, 1, MPI_INT, 0, 2, sub, MPI_STATUS_IGNORE);
        BM_CHECK_EQ_INT(v, 1 - side);
        MPI_Comm_free(&sub);
    } else {
        BM_CHECK(sub == MPI_COMM_NULL);
    }
    MPI_Group_free(&first);
    MPI_Group_free(&lg);
}

static void test_errors(void)
{
    MPI_Comm inter = MPI_COMM_NULL;
    int rc, cls = -1, n;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    /* both groups are the whole world: they overlap */
    rc = MPI_Intercomm_create(MPI_COMM_WORLD, 0, MPI_COMM_WORLD, 0, 5, &inter);
    MPI_Error_class(rc, &cls);
    BM_CHECK_EQ_INT(cls, MPI_ERR_COMM);
    BM_CHECK(inter == MPI_COMM_NULL);
    rc = MPI_Comm_remote_size(MPI_COMM_WORLD, &n);
    MPI_Error_class(rc, &cls);
    BM_CHECK_EQ_INT(cls, MPI_ERR_COMM);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    BM_RUN(test_errors);
    if (wsize >= 2) {
        MPI_Comm local, inter = make_inter(&local);
        RUN(test_queries, inter, local);
        RUN(test_p2p, inter);
        RUN(test_dup_isolation, inter);
        RUN(test_merge, inter);
        RUN(test_split_create, inter);
        BM_CHECK_EQ_INT(MPI_Comm_free(&inter), MPI_SUCCESS);
        MPI_Comm_free(&local);
    }
    int rc = bm_test_summary("api_intercomm");
    MPI_Finalize();
    return rc;
}
