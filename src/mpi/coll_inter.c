/* Collectives on inter-communicators (MPI-3.1 5.2.2 and each collective's
 * inter-communicator paragraph), as schedules: the steps address either
 * the remote group (through the inter-communicator: its ranks and its
 * collective context) or the local group (through comm->local_comm, an
 * intra-communicator over this process's group, bm_mpi_sched_local). Local
 * phases reuse the intra-communicator builders on local_comm; the leader of
 * a group is its rank 0.
 *   - barrier: local barrier, the leaders exchange an empty message, local
 *     broadcast: nobody leaves before every process of the other group came.
 *   - bcast: the root (MPI_ROOT) sends to the other group's leader, which
 *     broadcasts locally; MPI_PROC_NULL processes take no part.
 *   - gather(v), scatter(v), alltoall(v,w): every transfer between the root
 *     (or every process) and each process of the other group directly, all
 *     at once ("inter.linear").
 *   - allgather(v): each process sends its block to the other group's
 *     leader, which gathers them all and broadcasts them in its group.
 *   - reduce, allreduce, reduce_scatter(_block): a local reduction to the
 *     leader (in rank order, so non-commutative operations work), then the
 *     leaders exchange (reduce: send to the root), then a local broadcast
 *     (allreduce) or scatter (reduce_scatter). Each group gets the other
 *     group's result, as the standard says.
 * MPI_IN_PLACE is not allowed on inter-communicators (checked by the entry
 * points); scans are not defined on them. */
#include "mpi/coll.h"

#include <stdlib.h>

static void local(struct bm_mpi_sched *s)
{
    bm_mpi_sched_round(s);
    bm_mpi_sched_local(s, true);
}

static void remote(struct bm_mpi_sched *s)
{
    bm_mpi_sched_round(s);
    bm_mpi_sched_local(s, false);
}

/* A broadcast of bytes at (buf, off) from the leader inside the local group. */
static void local_bcast(struct bm_mpi_sched *s, MPI_Comm lc, int buf, ptrdiff_t off, size_t bytes)
{
    local(s);
    if (lc->size > 2 && bytes >= bm_mpi_coll_cfg()->bcast_large)
        bm_coll_build_bcast_scatter_allgather(s, lc, buf, off, bytes, 0);
    else
        bm_coll_build_bcast_binomial(s, lc, buf, off, bytes, 0);
    remote(s);
}

static void inter_barrier(struct bm_mpi_sched *s, MPI_Comm comm)
{
    MPI_Comm lc = comm->local_comm;

    local(s);
    bm_coll_build_barrier_dissemination(s, lc);
    remote(s);
    if (lc->rank == 0) {
        bm_mpi_sched_recv(s, 0, BM_SCHED_RBUF, 0, 0, 0);
        bm_mpi_sched_send(s, 0, BM_SCHED_RBUF, 0, 0, 0);
    }
    local_bcast(s, lc, BM_SCHED_RBUF, 0, 0);
}

static struct bm_coll_side one_block(int ubuf, int count, MPI_Datatype dt)
{
    return (struct bm_coll_side){.ubuf = ubuf, .n = 1, .count = count, .dt = dt};
}

/* Blocks of the other group: n = its size. */
static struct bm_coll_side group_blocks(int ubuf, int n, int count, const int *counts,
                                        const int *displs, MPI_Datatype dt)
{
    return (struct bm_coll_side){
        .ubuf = ubuf, .n = n, .count = count, .counts = counts, .displs = displs, .dt = dt};
}

static bool inter_bcast(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_mpi_coll_args *a)
{
    struct bm_coll_side b = one_block(BM_SCHED_RBUF, a->rcount, a->rtype);
    size_t bytes;

    if (a->root == MPI_PROC_NULL)
        return true;
    if (!bm_coll_side_layout(s, &b, BM_SCHED_PRBUF))
        return false;
    bytes = bm_coll_block_bytes(&b.l, 0);
    if (a->root == MPI_ROOT) {
        bm_coll_side_pack(s, &b, 0);
        bm_mpi_sched_send(s, 0, b.l.buf, 0, bytes, 0);
    } else {
        if (comm->local_comm->rank == 0)
            bm_mpi_sched_recv(s, a->root, b.l.buf, 0, bytes, 0);
        local_bcast(s, comm->local_comm, b.l.buf, 0, bytes);
        bm_coll_side_unpack(s, &b, 0);
    }
    bm_coll_side_free(&b);
    return true;
}

/* Gather, scatter and alltoall: each of my blocks to / from each process of
 * the other group directly. */
static bool inter_linear(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_mpi_coll_args *a)
{
    int rsize = comm->peer_size;
    bool gather = a->kind == BM_COLL_GATHER || a->kind == BM_COLL_GATHERV;
    bool scatter = a->kind == BM_COLL_SCATTER || a->kind == BM_COLL_SCATTERV;
    bool w = a->kind == BM_COLL_ALLTOALLW;
    struct bm_coll_side snd = {0}, rcv = {0};
    bool ok = false;

    if ((gather || scatter) && a->root == MPI_PROC_NULL)
        return true;
    if (gather) {
        if (a->root == MPI_ROOT)
            rcv = group_blocks(BM_SCHED_RBUF, rsize, a->rcount, a->rcounts, a->rdispls, a->rtype);
        else
            snd = one_block(BM_SCHED_SBUF, a->scount, a->stype);
    } else if (scatter) {
        if (a->root == MPI_ROOT)
            snd = group_blocks(BM_SCHED_SBUF, rsize, a->scount, a->scounts, a->sdispls, a->stype);
        else
            rcv = one_block(BM_SCHED_RBUF, a->rcount, a->rtype);
    } else {
        snd = group_blocks(BM_SCHED_SBUF, rsize, a->scount, a->scounts, w ? NULL : a->sdispls,
                           a->stype);
        rcv = group_blocks(BM_SCHED_RBUF, rsize, a->rcount, a->rcounts, w ? NULL : a->rdispls,
                           a->rtype);
        if (w) {
            snd.bdispls = a->sdispls;
            snd.types = a->stypes;
            rcv.bdispls = a->rdispls;
            rcv.types = a->rtypes;
        }
    }
    if (!bm_coll_side_layout(s, &snd, BM_SCHED_PSBUF) ||
        !bm_coll_side_layout(s, &rcv, BM_SCHED_PRBUF))
        goto out;
    bm_coll_side_pack(s, &snd, -1);
    if (scatter && a->root != MPI_ROOT) { /* away from the root: one block */
        bm_mpi_sched_recv(s, a->root, rcv.l.buf, 0, bm_coll_block_bytes(&rcv.l, 0), 0);
    } else if (gather && a->root != MPI_ROOT) {
        bm_mpi_sched_send(s, a->root, snd.l.buf, 0, bm_coll_block_bytes(&snd.l, 0), 0);
    } else {
        for (int i = 0; i < rcv.n; i++)
            bm_mpi_sched_recv(s, i, rcv.l.buf, bm_coll_block_off(&rcv.l, i),
                              bm_coll_block_bytes(&rcv.l, i), 0);
        for (int k = 0; k < snd.n; k++) {
            int j = (comm->rank + k) % snd.n; /* spread the first messages */
            bm_mpi_sched_send(s, j, snd.l.buf, bm_coll_block_off(&snd.l, j),
                              bm_coll_block_bytes(&snd.l, j), 0);
        }
    }
    bm_mpi_sched_round(s);
    bm_coll_side_unpack(s, &rcv, -1);
    ok = true;
out:
    bm_coll_side_free(&snd);
    bm_coll_side_free(&rcv);
    return ok;
}

/* Every process's block to the other group's leader; each leader then
 * broadcasts what it gathered in its own group. Blocks that are not back to
 * back are staged in scratch for the broadcast. */
static bool inter_allgather(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_mpi_coll_args *a)
{
    MPI_Comm lc = comm->local_comm;
    int rsize = comm->peer_size;
    struct bm_coll_side snd = one_block(BM_SCHED_SBUF, a->scount, a->stype);
    struct bm_coll_side rcv =
        group_blocks(BM_SCHED_RBUF, rsize, a->rcount, a->rcounts, a->rdispls, a->rtype);
    bool uniform, ok = false;
    size_t total = 0;

    if (!bm_coll_side_layout(s, &snd, BM_SCHED_PSBUF) ||
        !bm_coll_side_layout(s, &rcv, BM_SCHED_PRBUF))
        goto out;
    uniform = rcv.l.counts == NULL && rcv.l.offs == NULL;
    for (int i = 0; i < rsize; i++)
        total += bm_coll_block_bytes(&rcv.l, i);
    bm_coll_side_pack(s, &snd, 0);
    bm_mpi_sched_send(s, 0, snd.l.buf, 0, bm_coll_block_bytes(&snd.l, 0), 0);
    if (lc->rank == 0)
        for (int i = 0; i < rsize; i++)
            bm_mpi_sched_recv(s, i, rcv.l.buf, bm_coll_block_off(&rcv.l, i),
                              bm_coll_block_bytes(&rcv.l, i), 0);
    bm_mpi_sched_round(s);
    if (uniform) {
        local_bcast(s, lc, rcv.l.buf, bm_coll_block_off(&rcv.l, 0), total);
    } else {
        size_t off = 0;
        bm_mpi_sched_tmp(s, total);
        for (int i = 0; i < rsize && lc->rank == 0; off += bm_coll_block_bytes(&rcv.l, i), i++)
            bm_mpi_sched_copy(s, rcv.l.buf, bm_coll_block_off(&rcv.l, i), BM_SCHED_TMP,
                              (ptrdiff_t)off, bm_coll_block_bytes(&rcv.l, i));
        local_bcast(s, lc, BM_SCHED_TMP, 0, total);
        off = 0;
        for (int i = 0; i < rsize && lc->rank != 0; off += bm_coll_block_bytes(&rcv.l, i), i++)
            bm_mpi_sched_copy(s, BM_SCHED_TMP, (ptrdiff_t)off, rcv.l.buf,
                              bm_coll_block_off(&rcv.l, i), bm_coll_block_bytes(&rcv.l, i));
    }
    bm_mpi_sched_round(s);
    bm_coll_side_unpack(s, &rcv, -1);
    ok = true;
out:
    bm_coll_side_free(&snd);
    bm_coll_side_free(&rcv);
    return ok;
}

/* Reduce, allreduce, reduce_scatter(_block): reduce the local group's
 * vectors (count_in elements) into scratch at the leader, then per kind. */
static bool inter_reduction(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_mpi_coll_args *a)
{
    MPI_Comm lc = comm->local_comm;
    const struct bm_mpi_coll_config *c = bm_mpi_coll_cfg();
    bool rs = a->kind == BM_COLL_REDUCE_SCATTER || a->kind == BM_COLL_REDUCE_SCATTER_BLOCK;
    int *counts = NULL, *displs = NULL, total = a->rcount, mine = a->rcount;
    struct bm_coll_side in = {0}, out = {0};
    bool ok = false;
    size_t esize, bytes;

    if (a->kind == BM_COLL_REDUCE && a->root == MPI_PROC_NULL)
        return true;
    esize = a->rtype->size;
    if (rs) {
        counts = malloc(sizeof(int) * (size_t)lc->size);
        displs = malloc(sizeof(int) * (size_t)lc->size);
        if (counts == NULL || displs == NULL)
            goto out;
        total = 0;
        for (int i = 0; i < lc->size; i++) {
            counts[i] = a->kind == BM_COLL_REDUCE_SCATTER ? a->rcounts[i] : a->rcount;
            displs[i] = total;
            total += counts[i];
        }
        mine = counts[lc->rank];
    }
    bytes = (size_t)total * esize;
    if (a->kind != BM_COLL_REDUCE || a->root != MPI_ROOT)
        in = one_block(BM_SCHED_SBUF, total, a->rtype);
    if (a->kind != BM_COLL_REDUCE || a->root == MPI_ROOT)
        out = one_block(BM_SCHED_RBUF, mine, a->rtype);
    if (!bm_coll_side_layout(s, &in, BM_SCHED_PSBUF) ||
        !bm_coll_side_layout(s, &out, BM_SCHED_PRBUF))
        goto out;
    if (a->kind == BM_COLL_REDUCE && a->root == MPI_ROOT) {
        bm_mpi_sched_recv(s, 0, out.l.buf, 0, bytes, 0);
        bm_mpi_sched_round(s);
        bm_coll_side_unpack(s, &out, 0);
        ok = true;
        goto out;
    }
    /* scratch: [0, bytes) the local result at the leader, [bytes, 2 bytes)
     * the other group's (allreduce keeps it in the output instead), then the
     * reduction's own scratch */
    struct bm_coll_red r = {.count = total,
                            .esize = esize,
                            .commutative = a->op->commutative,
                            .sbuf = in.l.buf,
                            .dbuf = BM_SCHED_TMP,
                            .tmp = 2 * bytes};
    bm_mpi_sched_tmp(s, 2 * bytes);
    bm_coll_side_pack(s, &in, 0);
    local(s);
    bm_coll_build_reduce(s, lc, &r, 0, BM_ALG_REDUCE_BINOMIAL, c->segment);
    remote(s);
    if (a->kind == BM_COLL_REDUCE) {
        if (lc->rank == 0)
            bm_mpi_sched_send(s, a->root, BM_SCHED_TMP, 0, bytes, 0);
        bm_mpi_sched_round(s);
    } else if (a->kind == BM_COLL_ALLREDUCE) {
        if (lc->rank == 0) {
            bm_mpi_sched_recv(s, 0, out.l.buf, 0, bytes, 0);
            bm_mpi_sched_send(s, 0, BM_SCHED_TMP, 0, bytes, 0);
        }
        local_bcast(s, lc, out.l.buf, 0, bytes);
        bm_coll_side_unpack(s, &out, 0);
    } else {
        struct bm_coll_layout sl = {.buf = BM_SCHED_TMP,
                                    .base = (ptrdiff_t)bytes,
                                    .esize = esize,
                                    .counts = counts,
                                    .displs = displs};
        if (lc->rank == 0) {
            bm_mpi_sched_recv(s, 0, BM_SCHED_TMP, (ptrdiff_t)bytes, bytes, 0);
            bm_mpi_sched_send(s, 0, BM_SCHED_TMP, 0, bytes, 0);
        }
        local(s);
        bm_coll_build_scatter(s, lc, &sl, out.l.buf, (size_t)mine * esize, false, 0,
                              BM_ALG_SCATTER_LINEAR);
        remote(s);
        bm_coll_side_unpack(s, &out, 0);
    }
    ok = true;
out:
    free(counts);
    free(displs);
    bm_coll_side_free(&in);
    bm_coll_side_free(&out);
    return ok;
}

bool bm_coll_build_inter(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_mpi_coll_args *a)
{
    switch (a->kind) {
    case BM_COLL_BARRIER:
        inter_barrier(s, comm);
        return true;
    case BM_COLL_BCAST:
        return inter_bcast(s, comm, a);
    case BM_COLL_ALLGATHER:
    case BM_COLL_ALLGATHERV:
        return inter_allgather(s, comm, a);
    case BM_COLL_REDUCE:
    case BM_COLL_ALLREDUCE:
    case BM_COLL_REDUCE_SCATTER:
    case BM_COLL_REDUCE_SCATTER_BLOCK:
        return inter_reduction(s, comm, a);
    default: /* gather(v), scatter(v), alltoall(v,w) */
        return inter_linear(s, comm, a);
    }
}
