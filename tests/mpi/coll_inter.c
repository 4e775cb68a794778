/* Collectives on inter-communicators, in their three forms (blocking,
 * nonblocking + MPI_Wait, persistent: init, start, wait, free), between two
 * groups of unequal sizes (world ranks r % 3 == 0 against the others), with
 * roots in either group (MPI_ROOT at the root, MPI_PROC_NULL beside it, the
 * root's rank in the other group): barrier, bcast, gather(v), scatter(v),
 * allgather(v), alltoall(v,w), reduce, allreduce and reduce_scatter(_block)
 * with a non-commutative user operation (which shows the other group's
 * contributions combined in their rank order) and with MPI_SUM on a type
 * with holes (packed on the wire). Every result is computed locally from the
 * formula that generated the data. Scans are refused (MPI_ERR_COMM), as
 * is MPI_IN_PLACE. */
#include "bm_test.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int wrank, wsize, side, lrank, lsize, rsize, form;
static MPI_Comm ic;
static MPI_Op affine_op;
static MPI_Datatype gap_t;

/* RUN3(Bcast, Ibcast, args...): the call in the form under test. */
#define RUN3(B, I, ...)                                                                            \
    do {                                                                                           \
        MPI_Request r_;                                                                            \
        int rc_;                                                                                   \
        if (form == 0) {                                                                           \
            rc_ = PMPI_##B(__VA_ARGS__);                                                           \
        } else if (form == 1) {                                                                    \
            rc_ = PMPI_##I(__VA_ARGS__, &r_);                                                      \
            if (rc_ == MPI_SUCCESS)                                                                \
                rc_ = MPI_Wait(&r_, MPI_STATUS_IGNORE);                                            \
        } else {                                                                                   \
            rc_ = PMPI_##B##_init(__VA_ARGS__, MPI_INFO_NULL, &r_);                                \
            if (rc_ == MPI_SUCCESS)                                                                \
                rc_ = MPI_Start(&r_);                                                              \
            if (rc_ == MPI_SUCCESS)                                                                \
                rc_ = MPI_Wait(&r_, MPI_STATUS_IGNORE);                                            \
            if (rc_ == MPI_SUCCESS)                                                                \
                rc_ = MPI_Request_free(&r_);                                                       \
        }                                                                                          \
        BM_CHECK_EQ_INT(rc_, MPI_SUCCESS);                                                         \
    } while (0)

/* The world rank of local rank l of group s. */
static int world_of(int s, int l)
{
    int n = 0;
    for (int r = 0; r < wsize; r++)
        if ((r % 3 == 0 ? 0 : 1) == s && n++ == l)
            return r;
    return -1;
}

static int val(int s, int l, int i)
{
    return s * 1000 + l * 100 + i;
}

static void expect(const int *got, const int *want, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        if (got[i] != want[i]) {
            BM_CHECK_MSG(false, "form %d, %s: element %d is %d, expected %d", form, what, i, got[i],
                         want[i]);
            return;
        }
    bm_test_passed++;
}

static void affine_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    unsigned *x = in, *y = inout;
    (void)dt;
    for (int k = 0; k < *len; k++) {
        unsigned a = x[2 * k], b = x[2 * k + 1], c = y[2 * k], d = y[2 * k + 1];
        y[2 * k] = a * c;
        y[2 * k + 1] = a * d + b;
    }
}

static void test_barrier_bcast(void)
{
    int buf[64];
    RUN3(Barrier, Ibarrier, ic);
    for (int root_side = 0; root_side < 2; root_side++) {
        int root_l = root_side == 0 ? 0 : rsize - 1; /* a root in either group */
        int root = side == root_side
                       ? (lrank == (root_side == 0 ? 0 : lsize - 1) ? MPI_ROOT : MPI_PROC_NULL)
                       : (root_side == 0 ? 0 : rsize - 1);
        (void)root_l;
        for (int i = 0; i < 64; i++)
            buf[i] = root == MPI_ROOT ? val(side, lrank, i) : -1;
        RUN3(Bcast, Ibcast, buf, 64, MPI_INT, root, ic);
        if (side != root_side) {
            int want[64];
            for (int i = 0; i < 64; i++)
                want[i] = val(root_side, root_side == 0 ? 0 : rsize - 1, i);
            expect(buf, want, 64, "MPI_Bcast");
        } else if (root == MPI_PROC_NULL) {
            for (int i = 0; i < 64; i++)
                BM_CHECK_EQ_INT(buf[i], -1);
        }
    }
}

/* Gather and scatter with the root in group 0 (local rank 0), counts per
 * group-1 rank l: l + 2 (v) or 3. */
static void test_gather_scatter(void)
{
    int root = side == 0 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    int counts[16], displs[16], total = 0, sb[64], rb[256], want[256];
    for (int v = 0; v < 2; v++) {
        total = 0;
        for (int l = 0; l < (side == 0 ? rsize : lsize); l++) {
            counts[l] = v ? l + 2 : 3;
            displs[l] = total;
            total += counts[l];
        }
        /* gather */
        memset(rb, 0xff, sizeof(rb));
        if (side == 1)
            for (int i = 0; i < counts[lrank]; i++)
                sb[i] = val(1, lrank, i);
        if (v)
            RUN3(Gatherv, Igatherv, sb, side == 1 ? counts[lrank] : 0, MPI_INT, rb, counts, displs,
                 MPI_INT, root, ic);
        else
            RUN3(Gather, Igather, sb, 3, MPI_INT, rb, 3, MPI_INT, root, ic);
        if (root == MPI_ROOT) {
            for (int l = 0; l < rsize; l++)
                for (int i = 0; i < counts[l]; i++)
                    want[displs[l] + i] = val(1, l, i);
            expect(rb, want, total, v ? "MPI_Gatherv" : "MPI_Gather");
        }
        /* scatter */
        memset(rb, 0xff, sizeof(rb));
        if (root == MPI_ROOT)
            for (int l = 0; l < rsize; l++)
                for (int i = 0; i < counts[l]; i++)
                    want[displs[l] + i] = val(0, l, i);
        if (v)
            RUN3(Scatterv, Iscatterv, want, counts, displs, MPI_INT, rb,
                 side == 1 ? counts[lrank] : 0, MPI_INT, root, ic);
        else
            RUN3(Scatter, Iscatter, want, 3, MPI_INT, rb, 3, MPI_INT, root, ic);
        if (side == 1) {
            int w[32];
            for (int i = 0; i < counts[lrank]; i++)
                w[i] = val(0, lrank, i);
            expect(rb, w, counts[lrank], v ? "MPI_Scatterv" : "MPI_Scatter");
        }
    }
}

/* Allgather(v) and alltoall(v,w): each process gets the other group's
 * blocks; block from (group s, rank l) to rank m: val(s, l, m * 10 + i). */
static void test_all_to_all(void)
{
    int sb[256], rb[256], want[256], counts[16], displs[16], rcounts[16], rdispls[16];
    int total = 0;
    /* allgather: my block is 2 ints; allgatherv: rank l of a group sends l + 1 ints */
    for (int v = 0; v < 2; v++) {
        int mine = v ? lrank + 1 : 2;
        total = 0;
        for (int l = 0; l < rsize; l++) {
            rcounts[l] = v ? l + 1 : 2;
            rdispls[l] = total + 1; /* a gap before each block */
            total += rcounts[l] + 1;
        }
        for (int i = 0; i < mine; i++)
            sb[i] = val(side, lrank, i);
        memset(rb, 0xff, sizeof(rb));
        memset(want, 0xff, sizeof(want));
        if (v)
            RUN3(Allgatherv, Iallgatherv, sb, mine, MPI_INT, rb, rcounts, rdispls, MPI_INT, ic);
        else
            RUN3(Allgather, Iallgather, sb, 2, MPI_INT, rb, 2, MPI_INT, ic);
        for (int l = 0; l < rsize; l++)
            for (int i = 0; i < rcounts[l]; i++)
                want[(v ? rdispls[l] : 2 * l) + i] = val(1 - side, l, i);
        expect(rb, want, v ? total : 2 * rsize, v ? "MPI_Allgatherv" : "MPI_Allgather");
    }
    /* alltoall: 3 ints per pair */
    for (int m = 0; m < rsize; m++)
        for (int i = 0; i < 3; i++)
            sb[3 * m + i] = val(side, lrank, m * 10 + i);
    RUN3(Alltoall, Ialltoall, sb, 3, MPI_INT, rb, 3, MPI_INT, ic);
    for (int l = 0; l < rsize; l++)
        for (int i = 0; i < 3; i++)
            want[3 * l + i] = val(1 - side, l, lrank * 10 + i);
    expect(rb, want, 3 * rsize, "MPI_Alltoall");
    /* alltoallv: from (s, l) to m: (l + m) % 3 + 1 ints, blocks in reverse order */
    total = 0;
    for (int m = rsize - 1; m >= 0; m--) {
        counts[m] = (lrank + m) % 3 + 1;
        displs[m] = total;
        total += counts[m];
    }
    int rtotal = 0;
    for (int l = 0; l < rsize; l++) {
        rcounts[l] = (l + lrank) % 3 + 1;
        rdispls[l] = rtotal;
        rtotal += rcounts[l];
    }
    for (int m = 0; m < rsize; m++)
        for (int i = 0; i < counts[m]; i++)
            sb[displs[m] + i] = val(side, lrank, m * 10 + i);
    memset(rb, 0xff, sizeof(rb));
    RUN3(Alltoallv, Ialltoallv, sb, counts, displs, MPI_INT, rb, rcounts, rdispls, MPI_INT, ic);
    for (int l = 0; l < rsize; l++)
        for (int i = 0; i < rcounts[l]; i++)
            want[rdispls[l] + i] = val(1 - side, l, lrank * 10 + i);
    expect(rb, want, rtotal, "MPI_Alltoallv");
    /* alltoallw: the same in bytes */
    MPI_Datatype types[16];
    int sbd[16], rbd[16];
    for (int m = 0; m < rsize; m++) {
        types[m] = MPI_INT;
        sbd[m] = displs[m] * (int)sizeof(int);
        rbd[m] = rdispls[m] * (int)sizeof(int);
    }
    memset(rb, 0xff, sizeof(rb));
    RUN3(Alltoallw, Ialltoallw, sb, counts, sbd, types, rb, rcounts, rbd, types, ic);
    expect(rb, want, rtotal, "MPI_Alltoallw");
}

/* Reductions: the affine maps of the other group composed in its rank
 * order; MPI_SUM over a type with holes. */
static void affine_of(int s, int l, int i, unsigned *out)
{
    out[0] = 1u + 2u * (unsigned)((s + l + i) % 5);
    out[1] = (unsigned)(s * 31 + l * 7 + i);
}

static void compose_group(int s, int n, int i, unsigned *out)
{
    unsigned acc[2] = {1, 0};
    for (int l = 0; l < n; l++) {
        unsigned f[2];
        affine_of(s, l, i, f);
        unsigned a = acc[0], b = acc[1];
        acc[0] = a * f[0];
        acc[1] = a * f[1] + b;
    }
    out[0] = acc[0];
    out[1] = acc[1];
}

static void test_reductions(void)
{
    MPI_Datatype pair;
    unsigned sb[64], rb[64], want[64];
    int n = 8;

    MPI_Type_contiguous(2, MPI_UNSIGNED, &pair);
    MPI_Type_commit(&pair);
    for (int i = 0; i < n; i++)
        affine_of(side, lrank, i, &sb[2 * i]);
    /* reduce to group 1's last rank */
    int root = side == 1 ? (lrank == lsize - 1 ? MPI_ROOT : MPI_PROC_NULL) : rsize - 1;
    memset(rb, 0xff, sizeof(rb));
    RUN3(Reduce, Ireduce, sb, rb, n, pair, affine_op, root, ic);
    if (root == MPI_ROOT) {
        for (int i = 0; i < n; i++)
            compose_group(0, rsize, i, &want[2 * i]);
        expect((int *)rb, (int *)want, 2 * n, "MPI_Reduce");
    }
    /* allreduce: each group gets the other's */
    memset(rb, 0xff, sizeof(rb));
    RUN3(Allreduce, Iallreduce, sb, rb, n, pair, affine_op, ic);
    for (int i = 0; i < n; i++)
        compose_group(1 - side, rsize, i, &want[2 * i]);
    expect((int *)rb, (int *)want, 2 * n, "MPI_Allreduce");
    /* reduce_scatter_block: 2 per rank of my group; both groups' vectors
     * have 2 * lsize(group 0)... both totals must match: use n_total =
     * 2 * lcm-free: each group sends total = 2 * its own size elements?
     * The standard requires the same total in both groups, so give each
     * rank 2 elements in group 0 and as many as make the totals equal in
     * group 1 (reduce_scatter with counts). */
    int total = 2 * (side == 0 ? lsize : rsize); /* 2 x size of group 0 */
    int counts[16];
    for (int l = 0; l < lsize; l++)
        counts[l] = 0;
    for (int k = 0; k < total; k++)
        counts[k % lsize]++;
    for (int i = 0; i < total; i++)
        affine_of(side, lrank, i, &sb[2 * i]);
    memset(rb, 0xff, sizeof(rb));
    RUN3(Reduce_scatter, Ireduce_scatter, sb, rb, counts, pair, affine_op, ic);
    int first = 0;
    for (int l = 0; l < lrank; l++)
        first += counts[l];
    for (int i = 0; i < counts[lrank]; i++)
        compose_group(1 - side, rsize, first + i, &want[2 * i]);
    expect((int *)rb, (int *)want, 2 * counts[lrank], "MPI_Reduce_scatter");
    if (side == 0 ? lsize == rsize : lsize == rsize) {
        /* block form needs equal totals: only when the groups have the same size */
        memset(rb, 0xff, sizeof(rb));
        RUN3(Reduce_scatter_block, Ireduce_scatter_block, sb, rb, 2, pair, affine_op, ic);
        for (int i = 0; i < 2; i++)
            compose_group(1 - side, rsize, 2 * lrank + i, &want[2 * i]);
        expect((int *)rb, (int *)want, 4, "MPI_Reduce_scatter_block");
    }
    MPI_Type_free(&pair);
    /* MPI_SUM over ints with holes after each: packed on the wire */
    int gs[32], gr[32], gw[32];
    for (int i = 0; i < 16; i++) {
        gs[2 * i] = val(side, lrank, i);
        gs[2 * i + 1] = 0x5eed;
        gr[2 * i] = gr[2 * i + 1] = -1;
        gw[2 * i + 1] = -1;
        gw[2 * i] = 0;
        for (int l = 0; l < rsize; l++)
            gw[2 * i] += val(1 - side, l, i);
    }
    RUN3(Allreduce, Iallreduce, gs, gr, 16, gap_t, MPI_SUM, ic);
    expect(gr, gw, 32, "MPI_Allreduce on a type with holes");
}

static void test_refused(void)
{
    int x = 1, y = 0;
    MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN);
    int rc = MPI_Scan(&x, &y, 1, MPI_INT, MPI_SUM, ic), cls;
    MPI_Error_class(rc, &cls);
    BM_CHECK_EQ_INT(cls, MPI_ERR_COMM);
    rc = MPI_Allreduce(MPI_IN_PLACE, &y, 1, MPI_INT, MPI_SUM, ic);
    MPI_Error_class(rc, &cls);
    BM_CHECK_EQ_INT(cls, MPI_ERR_BUFFER);
    rc = MPI_Bcast(&x, 1, MPI_INT, rsize, ic); /* not a rank of the other group */
    MPI_Error_class(rc, &cls);
    BM_CHECK_EQ_INT(cls, MPI_ERR_ROOT);
}

int main(int argc, char **argv)
{
    MPI_Comm local;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (wsize < 2) {
        printf("coll_inter: needs 2 or more ranks\n");
        MPI_Finalize();
        return 1;
    }
    side = wrank % 3 == 0 ? 0 : 1;
    MPI_Comm_split(MPI_COMM_WORLD, side, wrank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, world_of(1 - side, 0), 17, &ic);
    MPI_Comm_rank(ic, &lrank);
    MPI_Comm_size(ic, &lsize);
    MPI_Comm_remote_size(ic, &rsize);
    MPI_Op_create(affine_fn, 0, &affine_op);
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &gap_t);
    MPI_Type_commit(&gap_t);
    for (form = 0; form < 3; form++) {
        BM_RUN(test_barrier_bcast);
        BM_RUN(test_gather_scatter);
        BM_RUN(test_all_to_all);
        BM_RUN(test_reductions);
    }
    form = 0;
    BM_RUN(test_refused);
    MPI_Type_free(&gap_t);
    MPI_Op_free(&affine_op);
    MPI_Comm_free(&ic);
    MPI_Comm_free(&local);
    MPI_Finalize();
    return bm_test_summary("coll_inter");
}
