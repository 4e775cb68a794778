/* Schedules of the reductions (coll.h builders): MPI_Reduce, MPI_Allreduce,
 * MPI_Reduce_scatter(_block), MPI_Scan and MPI_Exscan.
 *   - reduce.binomial: a binomial tree (rotated to the root when the
 *     operation commutes; otherwise over the ranks in order, rank 0 handing
 *     the result to the root): small messages, any operation.
 *   - reduce.rabenseifner: reduce-scatter by recursive halving, then every
 *     block owner sends its block to the root: large commutative ones.
 *   - reduce.pipeline: segments flow down a chain of the ranks towards the
 *     root, each rank combining segment k while segment k + 1 arrives: large
 *     commutative reductions on few ranks.
 *   - allreduce.recursive_doubling: log2 p exchanges of the whole vector:
 *     small messages, any operation.
 *   - allreduce.rabenseifner: reduce-scatter by recursive halving, allgather
 *     by recursive doubling: 2 (p - 1) / p of the vector per rank instead of
 *     log2 p times all of it: large commutative ones.
 *   - allreduce.ring: reduce-scatter and allgather around a ring, p - 1 steps
 *     each, every link busy: large commutative ones on many ranks that are
 *     not a power of two.
 *   - allreduce.direct: each rank takes its block from every peer at once,
 *     combines it, and gives it to every peer at once: two rounds whatever
 *     the ranks: large commutative ones on a crowded host.
 *   - reduce_scatter.halving / .ring: the same two reduce-scatters with the
 *     caller's blocks; reduce_scatter.reduce_scatterv: a reduction to rank 0
 *     then a scatter (any operation).
 *   - scan.recursive_doubling (log2 p rounds) and scan.linear (a chain).
 * Power-of-two algorithms fold the first 2 * rem ranks (rem = p - largest
 * power of two) in pairs first: the even rank hands its vector to the odd
 * one above it and waits for the result.
 *
 * Order: a reduction combines (lower ranks) op (higher ranks) wherever the
 * operation does not commute, so user operations see rank order; where it
 * commutes each block is still computed by one fixed expression, so results
 * are identical on every rank and from run to run. */
#include "mpi/coll.h"

/* A place in a symbolic buffer. */
struct loc {
    int buf;
    ptrdiff_t off;
};

static struct loc at(int buf, ptrdiff_t off)
{
    return (struct loc){buf, off};
}

static struct loc plus(struct loc l, ptrdiff_t d)
{
    return (struct loc){l.buf, l.off + d};
}

static void send(struct bm_mpi_sched *s, int peer, struct loc l, size_t bytes)
{
    bm_mpi_sched_send(s, peer, l.buf, l.off, bytes, 0);
}

static void recv(struct bm_mpi_sched *s, int peer, struct loc l, size_t bytes)
{
    bm_mpi_sched_recv(s, peer, l.buf, l.off, bytes, 0);
}

static void copy(struct bm_mpi_sched *s, struct loc from, struct loc to, size_t bytes)
{
    bm_mpi_sched_copy(s, from.buf, from.off, to.buf, to.off, bytes);
}

/* to = from op to */
static void reduce(struct bm_mpi_sched *s, struct loc from, struct loc to, size_t count)
{
    bm_mpi_sched_reduce(s, from.buf, from.off, to.buf, to.off, count);
}

/* The real rank of rank newrank among the power-of-two ranks left after
 * the fold. */
static int fold_peer(int newrank, int rem)
{
    return newrank < rem ? newrank * 2 + 1 : newrank + rem;
}

/* The fold: ranks below 2 * rem pair up, the even one sends its vector
 * (from in) to the odd one, which combines it (lower rank first) into
 * work, already holding its own. Returns this rank's newrank, -1 for
 * ranks that sit out. The odd rank's reduction runs at the start of the
 * round after. rtmp: where the odd rank receives. */
static int fold_in(struct bm_mpi_sched *s, MPI_Comm comm, int rem, struct loc in, struct loc work,
                   struct loc rtmp, size_t count, size_t esize)
{
    int rank = comm->rank;

    if (rank >= 2 * rem)
        return rank - rem;
    if (rank % 2 == 0) {
        send(s, rank + 1, in, count * esize);
        bm_mpi_sched_round(s);
        return -1;
    }
    recv(s, rank - 1, rtmp, count * esize);
    bm_mpi_sched_round(s);
    reduce(s, rtmp, work, count);
    return rank / 2;
}

/* The unfold: the odd ranks give the result back to the even ones. */
static void fold_out(struct bm_mpi_sched *s, MPI_Comm comm, int rem, struct loc out, size_t bytes)
{
    int rank = comm->rank;

    if (rank >= 2 * rem)
        return;
    if (rank % 2 == 1)
        send(s, rank - 1, out, bytes);
    else
        recv(s, rank + 1, out, bytes);
    bm_mpi_sched_round(s);
}

/* ---- reduce ---------------------------------------------------------------- */

/* Binomial tree. Commutative: rooted at root (rel = rank - root); the
 * root accumulates into the output, the others into scratch. Otherwise:
 * rooted at rank 0 over the ranks in order, each step combining (this
 * subtree) op (the child's, higher ranks), then rank 0 hands the result to
 * root. Scratch: two vectors (accumulator, incoming). */
static void reduce_binomial(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_coll_red *r,
                            int root)
{
    size_t bytes = (size_t)r->count * r->esize;
    int size = comm->size, shift = r->commutative ? root : 0;
    int rel = (comm->rank - shift + size) % size;
    struct loc in = at(r->sbuf, r->soff), out = at(r->dbuf, r->doff);
    struct loc slot[2] = {at(BM_SCHED_TMP, (ptrdiff_t)r->tmp),
                          at(BM_SCHED_TMP, (ptrdiff_t)(r->tmp + bytes))};
    struct loc acc = in;
    bool at_root = r->commutative && comm->rank == root;
    bool writable = false; /* acc may be combined into (not the user's send buffer) */
    int mask, nslot = 0;

    bm_mpi_sched_tmp(s, r->tmp + 2 * bytes);
    if (at_root) {
        /* The children's data is combined straight into the output. */
        copy(s, in, out, bytes);
        acc = out;
        writable = true;
    }
    for (mask = 1; mask < size; mask <<= 1) {
        if (rel & mask) {
            send(s, (rel - mask + shift) % size, acc, bytes);
            bm_mpi_sched_round(s);
            break;
        }
        if (rel + mask < size) {
            struct loc inc = slot[nslot];
            recv(s, (rel + mask + shift) % size, inc, bytes);
            bm_mpi_sched_round(s);
            if (r->commutative && writable) {
                reduce(s, inc, acc, (size_t)r->count); /* acc = child op acc */
            } else {
                /* inc = acc op inc: the accumulator moves into inc, the input
                 * stays untouched. */
                reduce(s, acc, inc, (size_t)r->count);
                acc = inc;
                writable = true;
                nslot ^= 1;
            }
        }
    }
    if (mask >= size && !at_root) {
        /* rel 0 of an ordered tree (rank 0) holds the result. */
        if (comm->rank == root)
            copy(s, acc, out, bytes);
        else
            send(s, root, acc, bytes);
        bm_mpi_sched_round(s);
    }
    if (!r->commutative && comm->rank == root && rel != 0) {
        recv(s, 0, out, bytes);
        bm_mpi_sched_round(s);
    }
}

/* Recursive halving over the power-of-two ranks: each step keeps half of
 * the current block range, sends the other half to the partner and
 * combines the partner's copy of the kept half (commutative operations
 * only: block order differs per rank). On return newrank owns block newrank
 * (blocks of bm_coll_block_start over pof2) of work. own: where this
 * rank's vector is when it is not in work yet (NULL: it is): the first
 * step then sends from there, receives the partner's half straight into
 * work and combines own into it, so nobody copies the whole vector first. */
static void halving(struct bm_mpi_sched *s, const struct bm_coll_red *r, struct loc work,
                    struct loc rtmp, int newrank, int pof2, int rem, const struct loc *own)
{
    size_t e = r->esize, count = (size_t)r->count;
    int lo = 0, hi = pof2;

    if (own && pof2 > 1) {
        int peer = fold_peer(newrank ^ (pof2 / 2), rem);
        bool upper = newrank & (pof2 / 2);
        size_t mid = bm_coll_block_start(pof2 / 2, count, pof2);
        size_t ks = upper ? mid : 0, ke = upper ? count : mid;
        size_t ss = upper ? 0 : mid, se = upper ? mid : count;

        recv(s, peer, plus(work, (ptrdiff_t)(ks * e)), (ke - ks) * e);
        send(s, peer, plus(*own, (ptrdiff_t)(ss * e)), (se - ss) * e);
        bm_mpi_sched_round(s);
        reduce(s, plus(*own, (ptrdiff_t)(ks * e)), plus(work, (ptrdiff_t)(ks * e)), ke - ks);
        lo = upper ? pof2 / 2 : 0;
        hi = upper ? pof2 : pof2 / 2;
    }
    for (int mask = own ? pof2 / 4 : pof2 / 2; mask >= 1; mask >>= 1) {
        int peer = fold_peer(newrank ^ mask, rem), mid = lo + (hi - lo) / 2;
        bool upper = newrank & mask;
        int klo = upper ? mid : lo, khi = upper ? hi : mid;
        int slo = upper ? lo : mid, shi = upper ? mid : hi;
        size_t ks = bm_coll_block_start(klo, count, pof2),
               ke = bm_coll_block_start(khi, count, pof2);
        size_t ss = bm_coll_block_start(slo, count, pof2),
               se = bm_coll_block_start(shi, count, pof2);

        recv(s, peer, plus(rtmp, (ptrdiff_t)(ks * e)), (ke - ks) * e);
        send(s, peer, plus(work, (ptrdiff_t)(ss * e)), (se - ss) * e);
        bm_mpi_sched_round(s);
        reduce(s, plus(rtmp, (ptrdiff_t)(ks * e)), plus(work, (ptrdiff_t)(ks * e)), ke - ks);
        lo = klo;
        hi = khi;
    }
}

/* Fold, recursive halving, then each block owner sends its block to the
 * root. Scratch: work vector and receive vector. */
static void reduce_rabenseifner(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_coll_red *r,
                                int root)
{
    size_t e = r->esize, count = (size_t)r->count, bytes = count * e;
    int pof2 = bm_coll_pof2(comm->size), rem = comm->size - pof2, newrank;
    struct loc in = at(r->sbuf, r->soff), out = at(r->dbuf, r->doff);
    struct loc work = at(BM_SCHED_TMP, (ptrdiff_t)r->tmp);
    struct loc rtmp = at(BM_SCHED_TMP, (ptrdiff_t)(r->tmp + bytes));

    bool direct = comm->rank >= 2 * rem; /* its vector is still only in `in` */

    bm_mpi_sched_tmp(s, r->tmp + 2 * bytes);
    if (!direct && comm->rank % 2 == 1)
        copy(s, in, work, bytes);
    newrank = fold_in(s, comm, rem, in, work, rtmp, count, e);
    if (newrank >= 0) {
        halving(s, r, work, rtmp, newrank, pof2, rem, direct ? &in : NULL);
        bm_mpi_sched_round(s);
    }
    if (comm->rank == root) {
        for (int b = 0; b < pof2; b++) {
            int owner = fold_peer(b, rem);
            size_t bs = bm_coll_block_start(b, count, pof2) * e;
            size_t be = bm_coll_block_start(b + 1, count, pof2) * e;
            if (owner == root)
                copy(s, plus(work, (ptrdiff_t)bs), plus(out, (ptrdiff_t)bs), be - bs);
            else
                recv(s, owner, plus(out, (ptrdiff_t)bs), be - bs);
        }
    } else if (newrank >= 0) {
        size_t bs = bm_coll_block_start(newrank, count, pof2) * e;
        size_t be = bm_coll_block_start(newrank + 1, count, pof2) * e;
        send(s, root, plus(work, (ptrdiff_t)bs), be - bs);
    }
    bm_mpi_sched_round(s);
}

/* Segments flow down the chain rel p-1 -> p-2 -> ... -> 0 (rel = rank -
 * root): each rank combines its own segment into the one received (kept in
 * two alternating slots) and passes it on; the root combines into the
 * output. Commutative operations only. */
static void reduce_pipeline(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_coll_red *r,
                            int root, size_t segment)
{
    size_t e = r->esize, count = (size_t)r->count;
    size_t segc = segment / e ? segment / e : 1; /* elements per segment */
    size_t nseg = (count + segc - 1) / segc;
    int size = comm->size, rel = (comm->rank - root + size) % size;
    int child = (comm->rank + 1) % size, parent = (comm->rank - 1 + size) % size;
    struct loc in = at(r->sbuf, r->soff), out = at(r->dbuf, r->doff);
    struct loc slot[2] = {at(BM_SCHED_TMP, (ptrdiff_t)r->tmp),
                          at(BM_SCHED_TMP, (ptrdiff_t)(r->tmp + segc * e))};

    if (size == 1 || count == 0) {
        copy(s, in, out, count * e);
        return;
    }
    if (rel == size - 1) {
        /* The far end of the chain sends its own data, segment by segment
         * so that the next rank can start combining early. */
        for (size_t k = 0; k < nseg; k++) {
            size_t o = k * segc, n = count - o < segc ? count - o : segc;
            send(s, parent, plus(in, (ptrdiff_t)(o * e)), n * e);
        }
        bm_mpi_sched_round(s);
        return;
    }
    if (rel == 0 && !(in.buf == out.buf && in.off == out.off)) {
        /* The root (not in place) receives each segment straight into the
         * output and combines its own input into it (out = in op out: the
         * operation commutes): no copy of its whole vector into the output
         * first, one pass less over memory (measured at 2 ranks, 1 MiB). */
        for (size_t k = 0; k <= nseg; k++) {
            if (k < nseg) {
                size_t o = k * segc, n = count - o < segc ? count - o : segc;
                recv(s, child, plus(out, (ptrdiff_t)(o * e)), n * e);
            }
            if (k > 0) {
                size_t o = (k - 1) * segc, n = count - o < segc ? count - o : segc;
                reduce(s, plus(in, (ptrdiff_t)(o * e)), plus(out, (ptrdiff_t)(o * e)), n);
            }
            bm_mpi_sched_round(s);
        }
        return;
    }
    bm_mpi_sched_tmp(s, r->tmp + 2 * segc * e);
    for (size_t k = 0; k <= nseg; k++) {
        if (k < nseg) {
            size_t o = k * segc, n = count - o < segc ? count - o : segc;
            recv(s, child, slot[k % 2], n * e);
        }
        if (k == 0 && rel == 0)
            copy(s, in, out, count * e);
        if (k > 0) {
            size_t j = k - 1, o = j * segc, n = count - o < segc ? count - o : segc;
            if (rel == 0) {
                reduce(s, slot[j % 2], plus(out, (ptrdiff_t)(o * e)), n);
            } else {
                reduce(s, plus(in, (ptrdiff_t)(o * e)), slot[j % 2], n);
                send(s, parent, slot[j % 2], n * e);
            }
        }
        bm_mpi_sched_round(s);
    }
}

void bm_coll_build_reduce(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_coll_red *r,
                          int root, int alg, size_t segment)
{
    size_t bytes = (size_t)r->count * r->esize;

    if (comm->size == 1) {
        copy(s, at(r->sbuf, r->soff), at(r->dbuf, r->doff), bytes);
        return;
    }
    if (alg == BM_ALG_REDUCE_RABENSEIFNER)
        reduce_rabenseifner(s, comm, r, root);
    else if (alg == BM_ALG_REDUCE_PIPELINE)
        reduce_pipeline(s, comm, r, root, segment);
    else
        reduce_binomial(s, comm, r, root);
}

/* ---- allreduce ------------------------------------------------------------- */

/* Power-of-two partners exchange the whole vector; both compute (lower
 * half) op (upper half), the same expression, so they agree bit for bit. */
static void allreduce_doubling(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_coll_red *r)
{
    size_t bytes = (size_t)r->count * r->esize;
    int pof2 = bm_coll_pof2(comm->size), rem = comm->size - pof2, newrank;
    struct loc in = at(r->sbuf, r->soff), out = at(r->dbuf, r->doff);
    struct loc rtmp = at(BM_SCHED_TMP, (ptrdiff_t)r->tmp);

    bm_mpi_sched_tmp(s, r->tmp + bytes);
    /* Ranks sitting out the fold send their input as it is and receive the
     * result; the others work in the output buffer. */
    if (comm->rank >= 2 * rem || comm->rank % 2 == 1) {
        if (comm->rank < 2 * rem)
            recv(s, comm->rank - 1, rtmp, bytes);
        copy(s, in, out, bytes);
        if (comm->rank < 2 * rem) {
            bm_mpi_sched_round(s);
            reduce(s, rtmp, out, (size_t)r->count);
        }
        newrank = comm->rank < 2 * rem ? comm->rank / 2 : comm->rank - rem;
    } else {
        send(s, comm->rank + 1, in, bytes);
        bm_mpi_sched_round(s);
        newrank = -1;
    }
    for (int mask = 1; newrank >= 0 && mask < pof2; mask <<= 1) {
        int newpeer = newrank ^ mask, peer = fold_peer(newpeer, rem);
        recv(s, peer, rtmp, bytes);
        send(s, peer, out, bytes);
        bm_mpi_sched_round(s);
        if (newpeer < newrank) {
            reduce(s, rtmp, out, (size_t)r->count);
        } else {
            reduce(s, out, rtmp, (size_t)r->count);
            copy(s, rtmp, out, bytes);
        }
    }
    bm_mpi_sched_round(s);
    fold_out(s, comm, rem, out, bytes);
}

static void allreduce_rabenseifner(struct bm_mpi_sched *s, MPI_Comm comm,
                                   const struct bm_coll_red *r)
{
    size_t e = r->esize, count = (size_t)r->count, bytes = count * e;
    int pof2 = bm_coll_pof2(comm->size), rem = comm->size - pof2, newrank;
    struct loc in = at(r->sbuf, r->soff), out = at(r->dbuf, r->doff);
    struct loc rtmp = at(BM_SCHED_TMP, (ptrdiff_t)r->tmp);

    /* not in place and not folded: the first halving step reads `in` */
    bool direct = comm->rank >= 2 * rem && !(in.buf == out.buf && in.off == out.off);

    bm_mpi_sched_tmp(s, r->tmp + bytes);
    if (!direct && (comm->rank >= 2 * rem || comm->rank % 2 == 1))
        copy(s, in, out, bytes);
    newrank = fold_in(s, comm, rem, in, out, rtmp, count, e);
    if (newrank >= 0) {
        int lo = newrank, hi = newrank + 1;
        halving(s, r, out, rtmp, newrank, pof2, rem, direct ? &in : NULL);
        bm_mpi_sched_round(s);
        for (int mask = 1; mask < pof2; mask <<= 1) {
            int peer = fold_peer(newrank ^ mask, rem), width = hi - lo;
            int plo = (newrank & mask) ? lo - width : hi, phi = plo + width;
            size_t ms = bm_coll_block_start(lo, count, pof2),
                   me = bm_coll_block_start(hi, count, pof2);
            size_t ps = bm_coll_block_start(plo, count, pof2),
                   pe = bm_coll_block_start(phi, count, pof2);
            recv(s, peer, plus(out, (ptrdiff_t)(ps * e)), (pe - ps) * e);
            send(s, peer, plus(out, (ptrdiff_t)(ms * e)), (me - ms) * e);
            bm_mpi_sched_round(s);
            lo = plo < lo ? plo : lo;
            hi = phi > hi ? phi : hi;
        }
    }
    fold_out(s, comm, rem, out, bytes);
}

/* Reduce-scatter then allgather around the ring; block b is elements
 * bm_coll_block_start(b .. b + 1) over p. After the reduce-scatter rank r
 * owns block r + 1. Two alternating slots receive. */
static void allreduce_ring(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_coll_red *r)
{
    size_t e = r->esize, count = (size_t)r->count;
    int p = comm->size, rank = comm->rank, right = (rank + 1) % p, left = (rank - 1 + p) % p;
    size_t maxblk = (count + (size_t)p - 1) / (size_t)p;
    struct loc in = at(r->sbuf, r->soff), out = at(r->dbuf, r->doff);
    struct loc slot[2] = {at(BM_SCHED_TMP, (ptrdiff_t)r->tmp),
                          at(BM_SCHED_TMP, (ptrdiff_t)(r->tmp + maxblk * e))};

#define BS(b) bm_coll_block_start(((b) + p) % p, count, p)
#define BN(b) (bm_coll_block_start(((b) + p) % p + 1, count, p) - BS(b))
    bm_mpi_sched_tmp(s, r->tmp + 2 * maxblk * e);
    copy(s, in, out, count * e);
    for (int k = 0; k < p - 1; k++) {
        int sb = rank - k, rb = rank - k - 1;
        recv(s, left, slot[k % 2], BN(rb) * e);
        if (k > 0)
            reduce(s, slot[(k - 1) % 2], plus(out, (ptrdiff_t)(BS(sb) * e)), BN(sb));
        send(s, right, plus(out, (ptrdiff_t)(BS(sb) * e)), BN(sb) * e);
        bm_mpi_sched_round(s);
    }
    reduce(s, slot[(p - 2) % 2], plus(out, (ptrdiff_t)(BS(rank + 1) * e)), BN(rank + 1));
    for (int k = 0; k < p - 1; k++) {
        int sb = rank + 1 - k, rb = rank - k;
        recv(s, left, plus(out, (ptrdiff_t)(BS(rb) * e)), BN(rb) * e);
        send(s, right, plus(out, (ptrdiff_t)(BS(sb) * e)), BN(sb) * e);
        bm_mpi_sched_round(s);
    }
#undef BN
#undef BS
}

/* Every rank owns block `rank` (blocks of bm_coll_block_start over p). One
 * round: each rank sends every peer that peer's block of its vector and
 * receives its own block from every peer into scratch; the next combines
 * them into its block of the output, then sends that block to every peer
 * and receives theirs. The data of Rabenseifner's algorithm (2 (p - 1) / p
 * of the vector per rank) in two dependent rounds instead of 2 log2 p,
 * with p - 1 transfers of each rank in flight at once. Scratch: p - 1
 * blocks. */
static void allreduce_direct(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_coll_red *r)
{
    size_t e = r->esize, count = (size_t)r->count;
    int p = comm->size, rank = comm->rank;
    size_t maxblk = (count + (size_t)p - 1) / (size_t)p;
    struct loc in = at(r->sbuf, r->soff), out = at(r->dbuf, r->doff);
    struct loc tmp = at(BM_SCHED_TMP, (ptrdiff_t)r->tmp);

#define BS(b) bm_coll_block_start(b, count, p)
#define BN(b) (bm_coll_block_start((b) + 1, count, p) - BS(b))
    bm_mpi_sched_tmp(s, r->tmp + (size_t)(p - 1) * maxblk * e);
    /* step k: to rank + k, from rank - k (no rank is everyone's first) */
    for (int k = 1; k < p; k++) {
        int to = (rank + k) % p, from = (rank - k + p) % p;
        recv(s, from, plus(tmp, (ptrdiff_t)((size_t)(k - 1) * maxblk * e)), BN(rank) * e);
        send(s, to, plus(in, (ptrdiff_t)(BS(to) * e)), BN(to) * e);
    }
    bm_mpi_sched_round(s);
    copy(s, plus(in, (ptrdiff_t)(BS(rank) * e)), plus(out, (ptrdiff_t)(BS(rank) * e)),
         BN(rank) * e);
    for (int k = 1; k < p; k++)
        reduce(s, plus(tmp, (ptrdiff_t)((size_t)(k - 1) * maxblk * e)),
               plus(out, (ptrdiff_t)(BS(rank) * e)), BN(rank));
    for (int k = 1; k < p; k++) {
        int to = (rank + k) % p, from = (rank - k + p) % p;
        recv(s, from, plus(out, (ptrdiff_t)(BS(from) * e)), BN(from) * e);
        send(s, to, plus(out, (ptrdiff_t)(BS(rank) * e)), BN(rank) * e);
    }
    bm_mpi_sched_round(s);
#undef BN
#undef BS
}

void bm_coll_build_allreduce(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_coll_red *r,
                             int alg)
{
    if (comm->size == 1) {
        copy(s, at(r->sbuf, r->soff), at(r->dbuf, r->doff), (size_t)r->count * r->esize);
        return;
    }
    if (alg == BM_ALG_ALLREDUCE_RABENSEIFNER)
        allreduce_rabenseifner(s, comm, r);
    else if (alg == BM_ALG_ALLREDUCE_RING)
        allreduce_ring(s, comm, r);
    else if (alg == BM_ALG_ALLREDUCE_DIRECT)
        allreduce_direct(s, comm, r);
    else
        allreduce_doubling(s, comm, r);
}

/* ---- reduce-scatter -------------------------------------------------------- */

/* First element of rank i's block. */
static size_t disp_of(const int *counts, int i)
{
    size_t d = 0;
    for (int j = 0; j < i; j++)
        d += (size_t)counts[j];
    return d;
}

/* Around the ring: in step k rank r sends block r - k - 1 (its input, or
 * the partial sum it received and combined its input into) and receives
 * block r - k - 2; after p - 1 steps it holds block r. The input is only
 * read, so in place works: the output is written last. */
static void reduce_scatter_ring(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_coll_red *r,
                                const int *counts)
{
    size_t e = r->esize, maxc = 0;
    int p = comm->size, rank = comm->rank, right = (rank + 1) % p, left = (rank - 1 + p) % p;
    struct loc in = at(r->sbuf, r->soff), out = at(r->dbuf, r->doff);

    for (int i = 0; i < p; i++)
        maxc = (size_t)counts[i] > maxc ? (size_t)counts[i] : maxc;
    struct loc slot[2] = {at(BM_SCHED_TMP, (ptrdiff_t)r->tmp),
                          at(BM_SCHED_TMP, (ptrdiff_t)(r->tmp + maxc * e))};
#define BLK(b)  (((b) % p + p) % p)
#define BOFF(b) ((ptrdiff_t)(disp_of(counts, BLK(b)) * e))
#define BCNT(b) ((size_t)counts[BLK(b)])
    bm_mpi_sched_tmp(s, r->tmp + 2 * maxc * e);
    for (int k = 0; k < p - 1; k++) {
        int sb = rank - k - 1, rb = rank - k - 2;
        recv(s, left, slot[k % 2], BCNT(rb) * e);
        if (k == 0) {
            send(s, right, plus(in, BOFF(sb)), BCNT(sb) * e);
        } else {
            reduce(s, plus(in, BOFF(sb)), slot[(k - 1) % 2], BCNT(sb));
            send(s, right, slot[(k - 1) % 2], BCNT(sb) * e);
        }
        bm_mpi_sched_round(s);
    }
    reduce(s, plus(in, BOFF(rank)), slot[(p - 2) % 2], BCNT(rank));
    copy(s, slot[(p - 2) % 2], out, BCNT(rank) * e);
#undef BCNT
#undef BOFF
#undef BLK
}

/* Fold, then recursive halving over the power-of-two ranks with each
 * newrank's range being the blocks of the real ranks it stands for; the
 * odd rank of a folded pair finally sends the even one its block. */
static void reduce_scatter_halving(struct bm_mpi_sched *s, MPI_Comm comm,
                                   const struct bm_coll_red *r, const int *counts)
{
    size_t e = r->esize, total = disp_of(counts, comm->size), bytes = total * e;
    int p = comm->size, rank = comm->rank, pof2 = bm_coll_pof2(p), rem = p - pof2, newrank;
    struct loc in = at(r->sbuf, r->soff), out = at(r->dbuf, r->doff);
    struct loc work = at(BM_SCHED_TMP, (ptrdiff_t)r->tmp);
    struct loc rtmp = at(BM_SCHED_TMP, (ptrdiff_t)(r->tmp + bytes));
    int lo = 0, hi = pof2;

/* first element of newrank j's range (j == pof2: the end) */
#define NB(j) disp_of(counts, (j) < rem ? 2 * (j) : (j) + rem)
    bm_mpi_sched_tmp(s, r->tmp + 2 * bytes);
    if (rank >= 2 * rem || rank % 2 == 1)
        copy(s, in, work, bytes);
    newrank = fold_in(s, comm, rem, in, work, rtmp, total, e);
    if (newrank < 0) {
        recv(s, rank + 1, out, (size_t)counts[rank] * e);
        bm_mpi_sched_round(s);
        return;
    }
    for (int mask = pof2 / 2; mask >= 1; mask >>= 1) {
        int peer = fold_peer(newrank ^ mask, rem), mid = lo + (hi - lo) / 2;
        bool upper = newrank & mask;
        int klo = upper ? mid : lo, khi = upper ? hi : mid;
        int slo = upper ? lo : mid, shi = upper ? mid : hi;
        size_t ks = NB(klo), ke = NB(khi), ss = NB(slo), se = NB(shi);

        recv(s, peer, plus(rtmp, (ptrdiff_t)(ks * e)), (ke - ks) * e);
        send(s, peer, plus(work, (ptrdiff_t)(ss * e)), (se - ss) * e);
        bm_mpi_sched_round(s);
        reduce(s, plus(rtmp, (ptrdiff_t)(ks * e)), plus(work, (ptrdiff_t)(ks * e)), ke - ks);
        lo = klo;
        hi = khi;
    }
#undef NB
    if (rank < 2 * rem)
        send(s, rank - 1, plus(work, (ptrdiff_t)(disp_of(counts, rank - 1) * e)),
             (size_t)counts[rank - 1] * e);
    copy(s, plus(work, (ptrdiff_t)(disp_of(counts, rank) * e)), out, (size_t)counts[rank] * e);
    bm_mpi_sched_round(s);
}

/* Any operation: an ordered binomial reduction of the whole vector into
 * scratch at rank 0, then a linear scatter of the blocks. */
static void reduce_scatter_reduce_scatterv(struct bm_mpi_sched *s, MPI_Comm comm,
                                           const struct bm_coll_red *r, const int *counts)
{
    size_t e = r->esize, total = disp_of(counts, comm->size), bytes = total * e;
    struct bm_coll_red whole = *r;

    whole.count = (int)total;
    whole.commutative = false;
    whole.dbuf = BM_SCHED_TMP;
    whole.doff = (ptrdiff_t)r->tmp;
    whole.tmp = r->tmp + bytes;
    bm_mpi_sched_tmp(s, r->tmp + bytes);
    reduce_binomial(s, comm, &whole, 0);
    bm_mpi_sched_round(s);
    if (comm->rank == 0) {
        for (int i = 1; i < comm->size; i++)
            send(s, i, at(BM_SCHED_TMP, (ptrdiff_t)(r->tmp + disp_of(counts, i) * e)),
                 (size_t)counts[i] * e);
        copy(s, at(BM_SCHED_TMP, (ptrdiff_t)r->tmp), at(r->dbuf, r->doff), (size_t)counts[0] * e);
    } else {
        recv(s, 0, at(r->dbuf, r->doff), (size_t)counts[comm->rank] * e);
    }
    bm_mpi_sched_round(s);
}

void bm_coll_build_reduce_scatter(struct bm_mpi_sched *s, MPI_Comm comm,
                                  const struct bm_coll_red *r, const int *counts, int alg)
{
    if (comm->size == 1) {
        copy(s, at(r->sbuf, r->soff), at(r->dbuf, r->doff), (size_t)counts[0] * r->esize);
        return;
    }
    if (alg == BM_ALG_REDUCE_SCATTER_RING)
        reduce_scatter_ring(s, comm, r, counts);
    else if (alg == BM_ALG_REDUCE_SCATTER_HALVING)
        reduce_scatter_halving(s, comm, r, counts);
    else
        reduce_scatter_reduce_scatterv(s, comm, r, counts);
}

/* ---- scan ------------------------------------------------------------------ */

/* Recursive doubling: after the step with distance mask, partial holds the
 * reduction of this rank's aligned block of 2 * mask ranks and the output
 * that of every rank up to this one (exclusive: before it), always lower
 * ranks first. Scratch: partial and incoming, which trade places. */
static void scan_doubling(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_coll_red *r,
                          bool exclusive)
{
    size_t bytes = (size_t)r->count * r->esize, count = (size_t)r->count;
    int rank = comm->rank;
    bool have = !exclusive;
    struct loc in = at(r->sbuf, r->soff), out = at(r->dbuf, r->doff);
    struct loc partial = at(BM_SCHED_TMP, (ptrdiff_t)r->tmp);
    struct loc inc = at(BM_SCHED_TMP, (ptrdiff_t)(r->tmp + bytes));

    bm_mpi_sched_tmp(s, r->tmp + 2 * bytes);
    copy(s, in, partial, bytes);
    if (!exclusive)
        copy(s, in, out, bytes);
    for (int mask = 1; mask < comm->size; mask <<= 1) {
        int peer = rank ^ mask;
        if (peer >= comm->size)
            continue;
        recv(s, peer, inc, bytes);
        send(s, peer, partial, bytes);
        bm_mpi_sched_round(s);
        if (peer < rank) {
            if (have)
                reduce(s, inc, out, count);
            else
                copy(s, inc, out, bytes);
            have = true;
            reduce(s, inc, partial, count);
        } else {
            struct loc t = partial;
            reduce(s, partial, inc, count);
            partial = inc;
            inc = t;
        }
    }
    bm_mpi_sched_round(s);
}

/* A chain: rank r receives the prefix of ranks < r, combines its own and
 * passes it on. */
static void scan_linear(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_coll_red *r,
                        bool exclusive)
{
    size_t bytes = (size_t)r->count * r->esize, count = (size_t)r->count;
    int rank = comm->rank, size = comm->size;
    struct loc in = at(r->sbuf, r->soff), out = at(r->dbuf, r->doff);
    struct loc t = at(BM_SCHED_TMP, (ptrdiff_t)r->tmp);

    bm_mpi_sched_tmp(s, r->tmp + bytes);
    if (rank == 0) {
        if (!exclusive)
            copy(s, in, out, bytes);
        if (size > 1)
            send(s, 1, in, bytes);
        bm_mpi_sched_round(s);
        return;
    }
    if (exclusive) {
        /* out = prefix before me; pass prefix op mine */
        copy(s, in, t, bytes);
        recv(s, rank - 1, out, bytes);
        bm_mpi_sched_round(s);
        if (rank + 1 < size) {
            reduce(s, out, t, count);
            send(s, rank + 1, t, bytes);
        }
    } else {
        copy(s, in, out, bytes);
        recv(s, rank - 1, t, bytes);
        bm_mpi_sched_round(s);
        reduce(s, t, out, count);
        if (rank + 1 < size)
            send(s, rank + 1, out, bytes);
    }
    bm_mpi_sched_round(s);
}

void bm_coll_build_scan(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_coll_red *r,
                        bool exclusive, int alg)
{
    if (alg == BM_ALG_SCAN_LINEAR)
        scan_linear(s, comm, r, exclusive);
    else
        scan_doubling(s, comm, r, exclusive);
}
