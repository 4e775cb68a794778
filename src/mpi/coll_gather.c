/* Schedules of the collectives that move blocks without combining them
 * (coll.h builders): gather(v), scatter(v), allgather(v), alltoall(v,w) and
 * the neighbourhood exchanges.
 *   - gather.linear / scatter.linear: the root exchanges with every rank, all
 *     transfers in flight at once (any block sizes).
 *   - gather.binomial / scatter.binomial: blocks travel up (down) a binomial
 *     tree, subtrees forwarding their ranges in one message: small uniform
 *     blocks on many ranks, where the root's p - 1 message latencies
 *     dominate.
 *   - allgather.ring: p - 1 steps, each rank passing on the block it received
 *     in the step before: bandwidth-optimal for any p and block sizes.
 *   - allgather.recursive_doubling: log2 p exchanges of doubling ranges
 *     (uniform blocks, power-of-two p).
 *   - allgather.bruck: log2 p steps for any p, then a local rotation (uniform
 *     blocks): small blocks.
 *   - alltoall.pairwise: step k sends to rank + k and receives from rank - k,
 *     so no rank is ever the target of two senders: large blocks.
 *   - alltoall.linear: every transfer posted at once: medium blocks, few
 *     ranks.
 *   - alltoall.bruck: log2 p steps, each packing the blocks whose index has
 *     bit k set (uniform blocks): small blocks on many ranks.
 * In every algorithm a rank's own block is copied after its transfers were
 * posted, so the copy overlaps them. */
#include "mpi/coll.h"

#include <stdlib.h>

static void copy_block(struct bm_mpi_sched *s, int sbuf, ptrdiff_t soff, int dbuf, ptrdiff_t doff,
                       size_t bytes)
{
    bm_mpi_sched_copy(s, sbuf, soff, dbuf, doff, bytes);
}

/* ---- gather / scatter --------------------------------------------------------- */

static void gather_linear(struct bm_mpi_sched *s, MPI_Comm comm, int sbuf, size_t sbytes,
                          bool in_place, const struct bm_coll_layout *rl, int root)
{
    if (comm->rank != root) {
        bm_mpi_sched_send(s, root, sbuf, 0, sbytes, 0);
        bm_mpi_sched_round(s);
        return;
    }
    for (int i = 0; i < comm->size; i++)
        if (i != root)
            bm_mpi_sched_recv(s, i, rl->buf, bm_coll_block_off(rl, i), bm_coll_block_bytes(rl, i),
                              0);
    if (!in_place)
        copy_block(s, sbuf, 0, rl->buf, bm_coll_block_off(rl, root), bm_coll_block_bytes(rl, root));
    bm_mpi_sched_round(s);
}

/* Size of rel rank's subtree in a binomial tree of size ranks. */
static int subtree(int rel, int size)
{
    int mask = 1;
    while (mask < size && !(rel & mask))
        mask <<= 1;
    return rel + mask < size ? mask : size - rel;
}

/* Uniform blocks of bsz bytes. Each rank gathers its subtree's blocks, in
 * relative order, into scratch (the root into the output directly when it
 * is rank 0; otherwise it rotates at the end), and sends them up at once. */
static void gather_binomial(struct bm_mpi_sched *s, MPI_Comm comm, int sbuf, bool in_place,
                            const struct bm_coll_layout *rl, size_t bsz, int root)
{
    int size = comm->size, rel = (comm->rank - root + size) % size, n = subtree(rel, size);
    bool direct = comm->rank == root && root == 0;
    int buf = direct ? rl->buf : BM_SCHED_TMP;
    ptrdiff_t base = direct ? rl->base : 0;

    if (n == 1 && rel != 0) { /* a leaf sends its own block */
        bm_mpi_sched_send(s, (rel - (rel & -rel) + root) % size, sbuf, 0, bsz, 0);
        bm_mpi_sched_round(s);
        return;
    }
    if (!direct)
        bm_mpi_sched_tmp(s, (size_t)n * bsz);
    for (int mask = 1; mask < n; mask <<= 1) {
        int child = rel + mask;
        int cn = subtree(child, size);
        bm_mpi_sched_recv(s, (child + root) % size, buf, base + (ptrdiff_t)((size_t)mask * bsz),
                          (size_t)cn * bsz, 0);
    }
    if (!(direct && in_place)) /* in place, the root's block may have to move to scratch */
        copy_block(s, comm->rank == root && in_place ? rl->buf : sbuf,
                   comm->rank == root && in_place ? bm_coll_block_off(rl, root) : 0, buf, base,
                   bsz);
    bm_mpi_sched_round(s);
    if (rel != 0) {
        bm_mpi_sched_send(s, (rel - (rel & -rel) + root) % size, BM_SCHED_TMP, 0, (size_t)n * bsz,
                          0);
    } else if (!direct) {
        /* relative block i is rank (i + root) % size */
        size_t first = (size_t)(size - root) * bsz;
        copy_block(s, BM_SCHED_TMP, 0, rl->buf, bm_coll_block_off(rl, root), first);
        copy_block(s, BM_SCHED_TMP, (ptrdiff_t)first, rl->buf, rl->base, (size_t)root * bsz);
    }
    bm_mpi_sched_round(s);
}

void bm_coll_build_gather(struct bm_mpi_sched *s, MPI_Comm comm, int sbuf, size_t sbytes,
                          bool in_place, const struct bm_coll_layout *rl, int root, int alg)
{
    if (alg == BM_ALG_GATHER_BINOMIAL && rl->counts == NULL && rl->offs == NULL)
        gather_binomial(s, comm, sbuf, in_place, rl,
                        comm->rank == root ? bm_coll_block_bytes(rl, root) : sbytes, root);
    else
        gather_linear(s, comm, sbuf, sbytes, in_place, rl, root);
}

static void scatter_linear(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_coll_layout *sl,
                           int rbuf, size_t rbytes, bool in_place, int root)
{
    if (comm->rank != root) {
        bm_mpi_sched_recv(s, root, rbuf, 0, rbytes, 0);
        bm_mpi_sched_round(s);
        return;
    }
    /* Start with the rank after the root so that not every scatter in a
     * sequence of them hits rank 0 first. */
    for (int k = 1; k < comm->size; k++) {
        int i = (root + k) % comm->size;
        bm_mpi_sched_send(s, i, sl->buf, bm_coll_block_off(sl, i), bm_coll_block_bytes(sl, i), 0);
    }
    if (!in_place)
        copy_block(s, sl->buf, bm_coll_block_off(sl, root), rbuf, 0, bm_coll_block_bytes(sl, root));
    bm_mpi_sched_round(s);
}

static void scatter_binomial(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_coll_layout *sl,
                             int rbuf, size_t bsz, bool in_place, int root)
{
    int size = comm->size, rel = (comm->rank - root + size) % size, n = subtree(rel, size);
    int buf = BM_SCHED_TMP;
    ptrdiff_t base = 0;

    if (n == 1 && rel != 0) {
        bm_mpi_sched_recv(s, (rel - (rel & -rel) + root) % size, rbuf, 0, bsz, 0);
        bm_mpi_sched_round(s);
        return;
    }
    if (rel == 0 && root == 0) {
        buf = sl->buf;
        base = sl->base;
    } else {
        bm_mpi_sched_tmp(s, (size_t)n * bsz);
    }
    if (rel != 0) {
        bm_mpi_sched_recv(s, (rel - (rel & -rel) + root) % size, BM_SCHED_TMP, 0, (size_t)n * bsz,
                          0);
        bm_mpi_sched_round(s);
    } else if (root != 0) {
        /* relative order in scratch: rank (i + root) % size at block i */
        size_t first = (size_t)(size - root) * bsz;
        copy_block(s, sl->buf, bm_coll_block_off(sl, root), BM_SCHED_TMP, 0, first);
        copy_block(s, sl->buf, sl->base, BM_SCHED_TMP, (ptrdiff_t)first, (size_t)root * bsz);
    }
    /* Largest subtree first. */
    int top = 1;
    while (top * 2 < n)
        top *= 2;
    for (int mask = top; mask >= 1; mask >>= 1) {
        int child = rel + mask;
        if (mask < n)
            bm_mpi_sched_send(s, (child + root) % size, buf, base + (ptrdiff_t)((size_t)mask * bsz),
                              (size_t)subtree(child, size) * bsz, 0);
    }
    if (!(rel == 0 && in_place))
        copy_block(s, buf, base, rbuf, 0, bsz);
    bm_mpi_sched_round(s);
}

void bm_coll_build_scatter(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_coll_layout *sl,
                           int rbuf, size_t rbytes, bool in_place, int root, int alg)
{
    if (alg == BM_ALG_SCATTER_BINOMIAL && sl->counts == NULL && sl->offs == NULL)
        scatter_binomial(s, comm, sl, rbuf,
                         comm->rank == root ? bm_coll_block_bytes(sl, root) : rbytes, in_place,
                         root);
    else
        scatter_linear(s, comm, sl, rbuf, rbytes, in_place, root);
}

/* ---- allgather ---------------------------------------------------------------- */

static void allgather_ring(struct bm_mpi_sched *s, MPI_Comm comm, int sbuf, bool in_place,
                           const struct bm_coll_layout *rl)
{
    int size = comm->size, rank = comm->rank;
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;

    for (int k = 0; k < size - 1; k++) {
        int sb = (rank - k + size) % size, rb = (rank - k - 1 + size) % size;
        bm_mpi_sched_recv(s, left, rl->buf, bm_coll_block_off(rl, rb), bm_coll_block_bytes(rl, rb),
                          0);
        if (k == 0 && !in_place)
            bm_mpi_sched_send(s, right, sbuf, 0, bm_coll_block_bytes(rl, sb), 0);
        else
            bm_mpi_sched_send(s, right, rl->buf, bm_coll_block_off(rl, sb),
                              bm_coll_block_bytes(rl, sb), 0);
        if (k == 0 && !in_place)
            copy_block(s, sbuf, 0, rl->buf, bm_coll_block_off(rl, rank),
                       bm_coll_block_bytes(rl, rank));
        bm_mpi_sched_round(s);
    }
    if (size == 1 && !in_place)
        copy_block(s, sbuf, 0, rl->buf, bm_coll_block_off(rl, 0), bm_coll_block_bytes(rl, 0));
}

/* Power-of-two sizes, uniform blocks: after the step with distance mask each
 * rank holds the blocks of its aligned group of 2 * mask ranks. */
static void allgather_doubling(struct bm_mpi_sched *s, MPI_Comm comm, int sbuf, bool in_place,
                               const struct bm_coll_layout *rl)
{
    size_t bsz = bm_coll_block_bytes(rl, 0);
    int rank = comm->rank;

    if (!in_place)
        copy_block(s, sbuf, 0, rl->buf, bm_coll_block_off(rl, rank), bsz);
    for (int mask = 1; mask < comm->size; mask <<= 1) {
        int peer = rank ^ mask, mine = rank & ~(mask - 1), theirs = peer & ~(mask - 1);
        bm_mpi_sched_recv(s, peer, rl->buf, bm_coll_block_off(rl, theirs), (size_t)mask * bsz, 0);
        bm_mpi_sched_send(s, peer, rl->buf, bm_coll_block_off(rl, mine), (size_t)mask * bsz, 0);
        bm_mpi_sched_round(s);
    }
}

/* Bruck: scratch block i holds rank (rank + i)'s block; step k receives the
 * blocks i in [2^k, 2^(k+1)) from rank + 2^k; a rotation puts them in
 * place. Uniform blocks, any p. */
static void allgather_bruck(struct bm_mpi_sched *s, MPI_Comm comm, int sbuf, bool in_place,
                            const struct bm_coll_layout *rl)
{
    size_t bsz = bm_coll_block_bytes(rl, 0);
    int size = comm->size, rank = comm->rank;

    bm_mpi_sched_tmp(s, (size_t)size * bsz);
    copy_block(s, in_place ? rl->buf : sbuf, in_place ? bm_coll_block_off(rl, rank) : 0,
               BM_SCHED_TMP, 0, bsz);
    for (int dist = 1; dist < size; dist <<= 1) {
        int n = dist < size - dist ? dist : size - dist;
        bm_mpi_sched_recv(s, (rank + dist) % size, BM_SCHED_TMP, (ptrdiff_t)((size_t)dist * bsz),
                          (size_t)n * bsz, 0);
        bm_mpi_sched_send(s, (rank - dist + size) % size, BM_SCHED_TMP, 0, (size_t)n * bsz, 0);
        bm_mpi_sched_round(s);
    }
    /* scratch [0, size - rank) -> output from block rank; the rest -> from block 0 */
    copy_block(s, BM_SCHED_TMP, 0, rl->buf, bm_coll_block_off(rl, rank),
               (size_t)(size - rank) * bsz);
    copy_block(s, BM_SCHED_TMP, (ptrdiff_t)((size_t)(size - rank) * bsz), rl->buf,
               bm_coll_block_off(rl, 0), (size_t)rank * bsz);
    bm_mpi_sched_round(s);
}

void bm_coll_build_allgather(struct bm_mpi_sched *s, MPI_Comm comm, int sbuf, bool in_place,
                             const struct bm_coll_layout *rl, int alg)
{
    bool uniform = rl->counts == NULL && rl->offs == NULL;
    bool pof2 = (comm->size & (comm->size - 1)) == 0;

    if (alg == BM_ALG_ALLGATHER_RECURSIVE_DOUBLING && uniform && pof2)
        allgather_doubling(s, comm, sbuf, in_place, rl);
    else if (alg == BM_ALG_ALLGATHER_BRUCK && uniform)
        allgather_bruck(s, comm, sbuf, in_place, rl);
    else
        allgather_ring(s, comm, sbuf, in_place, rl);
}

/* ---- alltoall ----------------------------------------------------------------- */

static void alltoall_pairwise(struct bm_mpi_sched *s, MPI_Comm comm,
                              const struct bm_coll_layout *sl, const struct bm_coll_layout *rl)
{
    int size = comm->size, rank = comm->rank;

    for (int k = 1; k < size; k++) {
        int dst = (rank + k) % size, src = (rank - k + size) % size;
        bm_mpi_sched_recv(s, src, rl->buf, bm_coll_block_off(rl, src), bm_coll_block_bytes(rl, src),
                          0);
        bm_mpi_sched_send(s, dst, sl->buf, bm_coll_block_off(sl, dst), bm_coll_block_bytes(sl, dst),
                          0);
        if (k == 1)
            copy_block(s, sl->buf, bm_coll_block_off(sl, rank), rl->buf,
                       bm_coll_block_off(rl, rank), bm_coll_block_bytes(sl, rank));
        bm_mpi_sched_round(s);
    }
    if (size == 1)
        copy_block(s, sl->buf, bm_coll_block_off(sl, 0), rl->buf, bm_coll_block_off(rl, 0),
                   bm_coll_block_bytes(sl, 0));
}

static void alltoall_linear(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_coll_layout *sl,
                            const struct bm_coll_layout *rl)
{
    int size = comm->size, rank = comm->rank;

    for (int k = 1; k < size; k++) {
        int src = (rank - k + size) % size;
        bm_mpi_sched_recv(s, src, rl->buf, bm_coll_block_off(rl, src), bm_coll_block_bytes(rl, src),
                          0);
    }
    for (int k = 1; k < size; k++) {
        int dst = (rank + k) % size;
        bm_mpi_sched_send(s, dst, sl->buf, bm_coll_block_off(sl, dst), bm_coll_block_bytes(sl, dst),
                          0);
    }
    copy_block(s, sl->buf, bm_coll_block_off(sl, rank), rl->buf, bm_coll_block_off(rl, rank),
               bm_coll_block_bytes(sl, rank));
    bm_mpi_sched_round(s);
}

/* Bruck's alltoall (uniform blocks of bsz): work block i starts as the
 * block for rank + i; step k sends the blocks whose index has bit k set to
 * rank + 2^k, packed, and receives the same positions from rank - 2^k;
 * at the end work block i came from rank - i. Scratch: work, two packs. */
static void alltoall_bruck(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_coll_layout *sl,
                           const struct bm_coll_layout *rl, size_t tmp0)
{
    size_t bsz = bm_coll_block_bytes(rl, 0);
    int size = comm->size, rank = comm->rank;
    size_t work = tmp0, spack = work + (size_t)size * bsz, rpack = spack + (size_t)size * bsz;

    bm_mpi_sched_tmp(s, rpack + (size_t)size * bsz);
    copy_block(s, sl->buf, bm_coll_block_off(sl, rank), BM_SCHED_TMP, (ptrdiff_t)work,
               (size_t)(size - rank) * bsz);
    copy_block(s, sl->buf, bm_coll_block_off(sl, 0), BM_SCHED_TMP,
               (ptrdiff_t)(work + (size_t)(size - rank) * bsz), (size_t)rank * bsz);
    for (int dist = 1; dist < size; dist <<= 1) {
        int n = 0;
        for (int i = 1; i < size; i++)
            if (i & dist)
                copy_block(s, BM_SCHED_TMP, (ptrdiff_t)(work + (size_t)i * bsz), BM_SCHED_TMP,
                           (ptrdiff_t)(spack + (size_t)n++ * bsz), bsz);
        bm_mpi_sched_recv(s, (rank - dist + size) % size, BM_SCHED_TMP, (ptrdiff_t)rpack,
                          (size_t)n * bsz, 0);
        bm_mpi_sched_send(s, (rank + dist) % size, BM_SCHED_TMP, (ptrdiff_t)spack, (size_t)n * bsz,
                          0);
        bm_mpi_sched_round(s);
        n = 0;
        for (int i = 1; i < size; i++)
            if (i & dist)
                copy_block(s, BM_SCHED_TMP, (ptrdiff_t)(rpack + (size_t)n++ * bsz), BM_SCHED_TMP,
                           (ptrdiff_t)(work + (size_t)i * bsz), bsz);
    }
    for (int i = 0; i < size; i++)
        copy_block(s, BM_SCHED_TMP, (ptrdiff_t)(work + (size_t)i * bsz), rl->buf,
                   bm_coll_block_off(rl, (rank - i + size) % size), bsz);
    bm_mpi_sched_round(s);
}

void bm_coll_build_alltoall(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_coll_layout *sl,
                            const struct bm_coll_layout *rl, int alg)
{
    struct bm_coll_layout copy = *sl;
    size_t tmp0 = 0;

    if (sl->buf == rl->buf) {
        /* In place: the data to send is in the output; send from a copy of
         * the span of every block (displacements may be negative). */
        ptrdiff_t lo = 0, hi = 0;
        for (int i = 0; i < comm->size; i++) {
            ptrdiff_t off = bm_coll_block_off(sl, i),
                      end = off + (ptrdiff_t)bm_coll_block_bytes(sl, i);
            if (i == 0 || off < lo)
                lo = off;
            if (i == 0 || end > hi)
                hi = end;
        }
        bm_mpi_sched_tmp(s, (size_t)(hi - lo));
        copy_block(s, rl->buf, lo, BM_SCHED_TMP, 0, (size_t)(hi - lo));
        bm_mpi_sched_round(s);
        copy.buf = BM_SCHED_TMP;
        copy.base = sl->base - lo;
        tmp0 = (size_t)(hi - lo);
        sl = &copy;
    }
    if (alg == BM_ALG_ALLTOALL_BRUCK && sl->counts == NULL && sl->offs == NULL)
        alltoall_bruck(s, comm, sl, rl, tmp0);
    else if (alg == BM_ALG_ALLTOALL_LINEAR)
        alltoall_linear(s, comm, sl, rl);
    else
        alltoall_pairwise(s, comm, sl, rl);
}

/* ---- neighbourhood ------------------------------------------------------------ */

void bm_coll_build_neighbor(struct bm_mpi_sched *s, int nin, const int *in, const int *in_subtag,
                            const struct bm_coll_layout *rl, int nout, const int *out,
                            const int *out_subtag, const struct bm_coll_layout *sl)
{
    for (int i = 0; i < nin; i++)
        if (in[i] != MPI_PROC_NULL)
            bm_mpi_sched_recv(s, in[i], rl->buf, bm_coll_block_off(rl, i),
                              bm_coll_block_bytes(rl, i), in_subtag ? in_subtag[i] : 0);
    for (int j = 0; j < nout; j++)
        if (out[j] != MPI_PROC_NULL)
            bm_mpi_sched_send(s, out[j], sl->buf, bm_coll_block_off(sl, j),
                              bm_coll_block_bytes(sl, j), out_subtag ? out_subtag[j] : 0);
    bm_mpi_sched_round(s);
}
