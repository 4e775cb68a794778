/* Collective operations: MPI_Barrier, MPI_Bcast, MPI_Reduce, MPI_Allreduce,
 * MPI_Scan, MPI_Exscan and MPI_Reduce_scatter(_block) on any communicator,
 * built on the PML's non-blocking sends and receives in the communicator's
 * collective context (context_id + 1), so collective traffic never matches a
 * user's receive. Algorithms: a dissemination barrier (ceil(log2 p) rounds,
 * any p); a binomial-tree broadcast, or scatter + ring allgather for large
 * messages; a binomial-tree reduction (reduce-scatter + gather to the root
 * for large messages); an allreduce that folds the ranks beyond the largest
 * power of two into their neighbours, then runs recursive doubling (small
 * messages, non-commutative operations) or Rabenseifner's reduce-scatter +
 * allgather (large messages); recursive-doubling prefix
 * reductions; and reduce-scatter as an allreduce of which each rank keeps
 * its block. Every combination step computes (lower ranks) op (higher
 * ranks), so non-commutative user operations get rank order, and every
 * floating-point result is computed by one fixed expression independent of
 * message timing, so all ranks end with identical bits. */
#include "mpi/mpi_internal.h"
#include "pml/pml.h"

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int coll_fail(MPI_Comm comm, const char *fn, int status, const char *what, int peer)
{
    return bm_mpi_error(comm, bm_mpi_class_of_status(status), fn, "%s rank %d failed: %s", what,
                        peer, bm_status_str(status));
}

int bm_mpi_coll_isend(MPI_Comm comm, const void *buf, size_t bytes, int peer, int tag,
                      struct bm_pml_request **req_out, const char *fn)
{
    bm_status_t st =
        bm_pml_isend(buf, bytes, bm_mpi_comm_peer_world(comm, peer), comm->context_id + 1,
                     comm->rank, tag, BM_PML_SEND_STANDARD, req_out);

    return st == BM_OK ? MPI_SUCCESS : coll_fail(comm, fn, st, "sending to", peer);
}

int bm_mpi_coll_wait(MPI_Comm comm, struct bm_pml_request *req, int peer, const char *fn)
{
    struct bm_pml_status status;

    bm_pml_request_wait(req, &status);
    bm_pml_request_free(req);
    return status.error == BM_OK ? MPI_SUCCESS
                                 : coll_fail(comm, fn, status.error, "sending to", peer);
}

/* Receive exactly bytes from peer: any other length means the ranks passed
 * different counts or datatypes, which the standard calls erroneous and we
 * report instead of computing garbage. */
int bm_mpi_coll_recv(MPI_Comm comm, void *buf, size_t bytes, int peer, int tag, const char *fn)
{
    struct bm_pml_status status;
    bm_status_t st = bm_pml_recv(buf, bytes, comm->context_id + 1, peer, tag, &status);

    if (st == BM_OK)
        st = status.error;
    if (st == BM_ERR_TRUNCATE || (st == BM_OK && status.count != bytes))
        return bm_mpi_error(comm, MPI_ERR_TRUNCATE, fn,
                            "rank %d sent %s than the %zu bytes expected: the ranks called %s "
                            "with different counts or datatypes",
                            peer, st == BM_ERR_TRUNCATE ? "more" : "fewer", bytes, fn);
    return st == BM_OK ? MPI_SUCCESS : coll_fail(comm, fn, st, "receiving from", peer);
}

/* Both directions are in flight at once, so two ranks exchanging large
 * (rendezvous) messages never wait for each other. */
int bm_mpi_coll_sendrecv(MPI_Comm comm, const void *sbuf, size_t sbytes, int dst, void *rbuf,
                         size_t rbytes, int src, int tag, const char *fn)
{
    struct bm_pml_request *req;
    int rc = bm_mpi_coll_isend(comm, sbuf, sbytes, dst, tag, &req, fn);

    if (rc)
        return rc;
    rc = bm_mpi_coll_recv(comm, rbuf, rbytes, src, tag, fn);
    if (rc) {
        bm_pml_request_free(req);
        return rc;
    }
    return bm_mpi_coll_wait(comm, req, dst, fn);
}

int bm_mpi_coll_barrier(MPI_Comm comm, const char *fn)
{
    char token = 0;

    for (int dist = 1; dist < comm->size; dist <<= 1) {
        int to = (comm->rank + dist) % comm->size;
        int from = (comm->rank - dist + comm->size) % comm->size;
        int rc =
            bm_mpi_coll_sendrecv(comm, &token, 0, to, &token, 0, from, BM_MPI_COLL_TAG_BARRIER, fn);
        if (rc)
            return rc;
    }
    return MPI_SUCCESS;
}

/* Messages at least this large (and more than 2 ranks) use the
 * scatter-allgather broadcast. */
#define BM_MPI_BCAST_LARGE 131072

/* Byte offset of chunk i when bytes are cut into n chunks. */
static size_t chunk_start(int i, size_t bytes, int n)
{
    size_t base = bytes / (size_t)n, extra = bytes % (size_t)n;
    return (size_t)i * base + ((size_t)i < extra ? (size_t)i : extra);
}

/* Van de Geijn's broadcast: a binomial scatter of size chunks from the
 * root, then a ring allgather of the chunks. Each byte crosses about two
 * links instead of log2(p) of them. Ranks are relative to the root. */
static int bcast_scatter_allgather(char *buf, size_t bytes, int root, MPI_Comm comm, const char *fn)
{
    int size = comm->size, rel = (comm->rank - root + size) % size, mask = 1, rc;

#define REAL(r) (((r) + root) % size)
    while (mask < size) {
        if (rel & mask) {
            int hi = rel + mask < size ? rel + mask : size;
            size_t off = chunk_start(rel, bytes, size);
            if ((rc = bm_mpi_coll_recv(comm, buf + off, chunk_start(hi, bytes, size) - off,
                                       REAL(rel - mask), BM_MPI_COLL_TAG_BCAST, fn)))
                return rc;
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1) {
        if (rel + mask < size) {
            int lo = rel + mask, hi = rel + 2 * mask < size ? rel + 2 * mask : size;
            size_t off = chunk_start(lo, bytes, size);
            struct bm_pml_request *req;
            if ((rc = bm_mpi_coll_isend(comm, buf + off, chunk_start(hi, bytes, size) - off,
                                        REAL(lo), BM_MPI_COLL_TAG_BCAST, &req, fn)) ||
                (rc = bm_mpi_coll_wait(comm, req, REAL(lo), fn)))
                return rc;
        }
    }
    for (int k = 0; k < size - 1; k++) {
        int sc = (rel - k + size) % size, rcv = (rel - k - 1 + size) % size;
        size_t soff = chunk_start(sc, bytes, size), roff = chunk_start(rcv, bytes, size);
        if ((rc = bm_mpi_coll_sendrecv(comm, buf + soff, chunk_start(sc + 1, bytes, size) - soff,
                                       REAL(rel + 1), buf + roff,
                                       chunk_start(rcv + 1, bytes, size) - roff,
                                       REAL(rel - 1 + size), BM_MPI_COLL_TAG_BCAST, fn)))
            return rc;
    }
#undef REAL
    return MPI_SUCCESS;
}

int bm_mpi_coll_bcast(void *buf, size_t bytes, int root, MPI_Comm comm, const char *fn)
{
    if (comm->size > 2 && bytes >= BM_MPI_BCAST_LARGE)
        return bcast_scatter_allgather(buf, bytes, root, comm, fn);
    struct bm_pml_request *reqs[32];
    int peers[32];
    int size = comm->size, rel = (comm->rank - root + size) % size;
    int mask = 1, nreq = 0, rc = MPI_SUCCESS;

    if (size == 1 || bytes == 0)
        return MPI_SUCCESS;
    while (mask < size) {
        if (rel & mask) {
            if ((rc = bm_mpi_coll_recv(comm, buf, bytes, (rel - mask + root) % size,
                                       BM_MPI_COLL_TAG_BCAST, fn)))
                return rc;
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1) {
        if (rel + mask < size) {
            peers[nreq] = (rel + mask + root) % size;
            rc = bm_mpi_coll_isend(comm, buf, bytes, peers[nreq], BM_MPI_COLL_TAG_BCAST,
                                   &reqs[nreq], fn);
            if (rc)
                break;
            nreq++;
        }
    }
    for (int i = 0; i < nreq; i++) {
        int r = bm_mpi_coll_wait(comm, reqs[i], peers[i], fn);
        if (r && !rc)
            rc = r;
    }
    return rc;
}

/* Messages at least this large use the bandwidth-saving allreduce and reduce. */
#define BM_MPI_ALLREDUCE_LARGE 32768

/* The real rank of rank newrank in the power-of-two set left after the fold. */
static int fold_peer(int newrank, int rem)
{
    return newrank < rem ? newrank * 2 + 1 : newrank + rem;
}

/* Recursive doubling over the pof2 ranks: both partners of a step compute
 * (lower half) op (upper half), the same expression, so they agree. */
static int allreduce_doubling(char *buf, char *tmp, int count, MPI_Datatype dt, MPI_Op op,
                              MPI_Comm comm, int newrank, int pof2, int rem, const char *fn)
{
    size_t bytes = bm_mpi_type_bytes(dt, count);

    for (int mask = 1; mask < pof2; mask <<= 1) {
        int newpeer = newrank ^ mask, peer = fold_peer(newpeer, rem);
        int rc = bm_mpi_coll_sendrecv(comm, buf, bytes, peer, tmp, bytes, peer,
                                      BM_MPI_COLL_TAG_ALLREDUCE, fn);
        if (rc)
            return rc;
        if (newpeer < newrank) {
            bm_mpi_op_apply(op, tmp, buf, count, dt);
        } else {
            bm_mpi_op_apply(op, buf, tmp, count, dt);
            memcpy(buf, tmp, bytes);
        }
    }
    return MPI_SUCCESS;
}

/* First element of block i when count elements are cut into nblocks blocks
 * whose sizes differ by at most one. */
static int block_start(int i, int count, int nblocks)
{
    int base = count / nblocks, extra = count % nblocks;
    return i * base + (i < extra ? i : extra);
}

/* Reduce-scatter by recursive halving over the pof2 ranks left after the
 * fold: each step keeps half of the current block range and reduces it
 * with the partner's copy. On return block newrank of buf holds the
 * reduction of that block over all ranks. */
static int reduce_scatter_halving(char *buf, char *tmp, int count, MPI_Datatype dt, MPI_Op op,
                                  MPI_Comm comm, int newrank, int pof2, int rem, int tag,
                                  const char *fn)
{
    size_t ext = (size_t)dt->extent;
    int lo = 0, hi = pof2, rc;

    for (int mask = pof2 / 2; mask >= 1; mask >>= 1) {
        int peer = fold_peer(newrank ^ mask, rem), mid = lo + (hi - lo) / 2;
        bool upper = newrank & mask;
        int klo = upper ? mid : lo, khi = upper ? hi : mid;
        int slo = upper ? lo : mid, shi = upper ? mid : hi;
        int ks = block_start(klo, count, pof2), ke = block_start(khi, count, pof2);
        int ss = block_start(slo, count, pof2), se = block_start(shi, count, pof2);
        char *kbuf = buf + (size_t)ks * ext, *ktmp = tmp + (size_t)ks * ext;

        if ((rc = bm_mpi_coll_sendrecv(comm, buf + (size_t)ss * ext, (size_t)(se - ss) * ext, peer,
                                       ktmp, (size_t)(ke - ks) * ext, peer, tag, fn)))
            return rc;
        if (upper) {
            bm_mpi_op_apply(op, ktmp, kbuf, ke - ks, dt);
        } else {
            bm_mpi_op_apply(op, kbuf, ktmp, ke - ks, dt);
            memcpy(kbuf, ktmp, (size_t)(ke - ks) * ext);
        }
        lo = klo;
        hi = khi;
    }
    return MPI_SUCCESS;
}

/* Rabenseifner's allreduce: reduce-scatter by recursive halving, then
 * allgather by recursive doubling. */
static int allreduce_rabenseifner(char *buf, char *tmp, int count, MPI_Datatype dt, MPI_Op op,
                                  MPI_Comm comm, int newrank, int pof2, int rem, const char *fn)
{
    size_t ext = (size_t)dt->extent;
    int lo = newrank, hi = newrank + 1;
    int rc = reduce_scatter_halving(buf, tmp, count, dt, op, comm, newrank, pof2, rem,
                                    BM_MPI_COLL_TAG_ALLREDUCE, fn);

    for (int mask = 1; mask < pof2 && rc == MPI_SUCCESS; mask <<= 1) {
        int peer = fold_peer(newrank ^ mask, rem), width = hi - lo;
        int plo = (newrank & mask) ? lo - width : hi, phi = plo + width;
        int ms = block_start(lo, count, pof2), me = block_start(hi, count, pof2);
        int ps = block_start(plo, count, pof2), pe = block_start(phi, count, pof2);

        rc = bm_mpi_coll_sendrecv(comm, buf + (size_t)ms * ext, (size_t)(me - ms) * ext, peer,
                                  buf + (size_t)ps * ext, (size_t)(pe - ps) * ext, peer,
                                  BM_MPI_COLL_TAG_ALLREDUCE, fn);
        lo = plo < lo ? plo : lo;
        hi = phi > hi ? phi : hi;
    }
    return rc;
}

/* The fold before a power-of-two algorithm: among the first 2 * rem ranks,
 * each even rank hands its data to the odd rank above it (which combines
 * them, lower rank first) and sits out (*newrank_out = -1). */
static int fold_in(char *buf, char *tmp, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                   int rem, int tag, int *newrank_out, const char *fn)
{
    size_t bytes = bm_mpi_type_bytes(dt, count);
    int rank = comm->rank, rc;

    if (rank >= 2 * rem) {
        *newrank_out = rank - rem;
        return MPI_SUCCESS;
    }
    if (rank % 2 == 0) {
        struct bm_pml_request *req;
        *newrank_out = -1;
        if ((rc = bm_mpi_coll_isend(comm, buf, bytes, rank + 1, tag, &req, fn)))
            return rc;
        return bm_mpi_coll_wait(comm, req, rank + 1, fn);
    }
    *newrank_out = rank / 2;
    if ((rc = bm_mpi_coll_recv(comm, tmp, bytes, rank - 1, tag, fn)))
        return rc;
    bm_mpi_op_apply(op, tmp, buf, count, dt);
    return MPI_SUCCESS;
}

/* Large commutative reductions to a root: fold, reduce-scatter by
 * recursive halving, then every block owner sends its block to the root. */
static int reduce_large(const void *mine, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                        int root, MPI_Comm comm, const char *fn)
{
    size_t bytes = bm_mpi_type_bytes(dt, count), ext = (size_t)dt->extent;
    int pof2 = 1, newrank, rc;
    char *work = malloc(bytes), *tmp = malloc(bytes);

    if (work == NULL || tmp == NULL) {
        rc = bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "cannot allocate 2 x %zu bytes", bytes);
        goto out;
    }
    while (pof2 * 2 <= comm->size)
        pof2 *= 2;
    memcpy(work, mine, bytes);
    if ((rc = fold_in(work, tmp, count, dt, op, comm, comm->size - pof2, BM_MPI_COLL_TAG_REDUCE,
                      &newrank, fn)))
        goto out;
    if (newrank >= 0 &&
        (rc = reduce_scatter_halving(work, tmp, count, dt, op, comm, newrank, pof2,
                                     comm->size - pof2, BM_MPI_COLL_TAG_REDUCE, fn)))
        goto out;
    if (newrank >= 0 && comm->rank != root) {
        struct bm_pml_request *req;
        int s = block_start(newrank, count, pof2), e = block_start(newrank + 1, count, pof2);
        if ((rc = bm_mpi_coll_isend(comm, work + (size_t)s * ext, (size_t)(e - s) * ext, root,
                                    BM_MPI_COLL_TAG_REDUCE, &req, fn)) == 0)
            rc = bm_mpi_coll_wait(comm, req, root, fn);
    } else if (comm->rank == root) {
        for (int b = 0; b < pof2 && rc == MPI_SUCCESS; b++) {
            int owner = fold_peer(b, comm->size - pof2);
            size_t off = (size_t)block_start(b, count, pof2) * ext;
            size_t len = (size_t)block_start(b + 1, count, pof2) * ext - off;
            if (owner == root)
                memcpy((char *)recvbuf + off, work + off, len);
            else
                rc = bm_mpi_coll_recv(comm, (char *)recvbuf + off, len, owner,
                                      BM_MPI_COLL_TAG_REDUCE, fn);
        }
    }
out:
    free(work);
    free(tmp);
    return rc;
}

/* Binomial reduction towards rel rank 0, which is root when op commutes.
 * Non-commutative operations run the tree over the ranks in order and rank
 * 0 hands the result to root, so that every step combines adjacent blocks.
 * On return at root, recvbuf holds the result. */
static int coll_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                       int root, MPI_Comm comm, const char *fn)
{
    size_t bytes = bm_mpi_type_bytes(dt, count);
    int size = comm->size, shift = op->commutative ? root : 0;
    int rel = (comm->rank - shift + size) % size;
    const void *mine = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    char *acc, *tmp;
    int rc = MPI_SUCCESS;

    if (bytes == 0)
        return MPI_SUCCESS;
    if (size == 1) {
        memmove(recvbuf, mine, bytes);
        return MPI_SUCCESS;
    }
    if (op->commutative && count >= size && bytes >= BM_MPI_ALLREDUCE_LARGE)
        return reduce_large(mine, recvbuf, count, dt, op, root, comm, fn);
    acc = malloc(bytes);
    tmp = malloc(bytes);
    if (acc == NULL || tmp == NULL) {
        rc = bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "cannot allocate 2 x %zu bytes", bytes);
        goto out;
    }
    memcpy(acc, mine, bytes);
    for (int mask = 1; mask < size; mask <<= 1) {
        if (rel & mask) {
            int parent = (rel - mask + shift) % size;
            struct bm_pml_request *req;
            if ((rc = bm_mpi_coll_isend(comm, acc, bytes, parent, BM_MPI_COLL_TAG_REDUCE, &req,
                                        fn)) == 0)
                rc = bm_mpi_coll_wait(comm, req, parent, fn);
            goto out;
        }
        if (rel + mask < size) {
            char *t;
            if ((rc = bm_mpi_coll_recv(comm, tmp, bytes, (rel + mask + shift) % size,
                                       BM_MPI_COLL_TAG_REDUCE, fn)))
                goto out;
            /* acc holds the lower ranks: tmp = acc op tmp, then swap. */
            bm_mpi_op_apply(op, acc, tmp, count, dt);
            t = acc;
            acc = tmp;
            tmp = t;
        }
    }
    /* Only rel rank 0 gets here, holding the result. */
    if (comm->rank == root) {
        memcpy(recvbuf, acc, bytes);
    } else {
        struct bm_pml_request *req;
        if ((rc = bm_mpi_coll_isend(comm, acc, bytes, root, BM_MPI_COLL_TAG_REDUCE, &req, fn)) == 0)
            rc = bm_mpi_coll_wait(comm, req, root, fn);
        goto out;
    }
out:
    /* The root of a non-commutative reduction is not rank 0: it receives the
     * result from rank 0 (it already sent its own part up the tree). */
    if (rc == MPI_SUCCESS && comm->rank == root && rel != 0)
        rc = bm_mpi_coll_recv(comm, recvbuf, bytes, 0, BM_MPI_COLL_TAG_REDUCE, fn);
    free(acc);
    free(tmp);
    return rc;
}

int bm_mpi_coll_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                          MPI_Comm comm, const char *fn)
{
    size_t bytes = bm_mpi_type_bytes(dt, count);
    int size = comm->size, rank = comm->rank;
    int pof2 = 1, rem, newrank, rc = MPI_SUCCESS;
    char *tmp;

    if (bytes == 0)
        return MPI_SUCCESS;
    if (sendbuf != MPI_IN_PLACE)
        memmove(recvbuf, sendbuf, bytes);
    if (size == 1)
        return MPI_SUCCESS;
    tmp = malloc(bytes);
    if (tmp == NULL)
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "cannot allocate %zu bytes", bytes);
    while (pof2 * 2 <= size)
        pof2 *= 2;
    rem = size - pof2;

    if ((rc = fold_in(recvbuf, tmp, count, dt, op, comm, rem, BM_MPI_COLL_TAG_ALLREDUCE, &newrank,
                      fn)))
        goto out;

    if (newrank >= 0) {
        /* Rabenseifner's algorithm moves 2 (p - 1) / p of the vector instead
         * of log2(p) times all of it; it needs a commutative operation (each
         * block is reduced in its own order) and at least one element per
         * rank. Each block is computed by one rank, so results agree. */
        if (op->commutative && count >= pof2 && bytes >= BM_MPI_ALLREDUCE_LARGE)
            rc = allreduce_rabenseifner(recvbuf, tmp, count, dt, op, comm, newrank, pof2, rem, fn);
        else
            rc = allreduce_doubling(recvbuf, tmp, count, dt, op, comm, newrank, pof2, rem, fn);
        if (rc)
            goto out;
    }

    /* Unfold: the odd ranks give the result back to their even neighbours. */
    if (rank < 2 * rem) {
        if (rank % 2 == 1) {
            struct bm_pml_request *req;
            if ((rc = bm_mpi_coll_isend(comm, recvbuf, bytes, rank - 1, BM_MPI_COLL_TAG_ALLREDUCE,
                                        &req, fn)) == 0)
                rc = bm_mpi_coll_wait(comm, req, rank - 1, fn);
        } else {
            rc = bm_mpi_coll_recv(comm, recvbuf, bytes, rank + 1, BM_MPI_COLL_TAG_ALLREDUCE, fn);
        }
    }
out:
    free(tmp);
    return rc;
}

int bm_mpi_coll_allgather_bytes(const void *sendbuf, void *recvbuf, size_t bytes, MPI_Comm comm,
                                const char *fn)
{
    char *out = recvbuf;
    int rc = MPI_SUCCESS;

    /* Used only to build communicators: gather at rank 0, then broadcast. */
    if (comm->rank == 0) {
        memcpy(out, sendbuf, bytes);
        for (int r = 1; r < comm->size && rc == MPI_SUCCESS; r++)
            rc = bm_mpi_coll_recv(comm, out + (size_t)r * bytes, bytes, r, BM_MPI_COLL_TAG_GATHER,
                                  fn);
    } else {
        struct bm_pml_request *req;
        if ((rc = bm_mpi_coll_isend(comm, sendbuf, bytes, 0, BM_MPI_COLL_TAG_GATHER, &req, fn)) ==
            0)
            rc = bm_mpi_coll_wait(comm, req, 0, fn);
    }
    if (rc)
        return rc;
    return bm_mpi_coll_bcast(recvbuf, bytes * (size_t)comm->size, 0, comm, fn);
}

/* Prefix reductions by recursive doubling: after the step with distance
 * mask, partial holds the reduction of this rank's aligned block of 2 *
 * mask ranks and result that of every rank up to this one (exclusive scan:
 * before it), always combined lower ranks first. */
static int coll_scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                     MPI_Comm comm, bool exclusive, const char *fn)
{
    size_t bytes = bm_mpi_type_bytes(dt, count);
    int rank = comm->rank, rc = MPI_SUCCESS;
    bool have_result = !exclusive;
    char *partial, *tmp;

    if (bytes == 0)
        return MPI_SUCCESS;
    partial = malloc(bytes);
    tmp = malloc(bytes);
    if (partial == NULL || tmp == NULL) {
        rc = bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "cannot allocate 2 x %zu bytes", bytes);
        goto out;
    }
    memcpy(partial, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, bytes);
    if (!exclusive && sendbuf != MPI_IN_PLACE)
        memmove(recvbuf, sendbuf, bytes);
    for (int mask = 1; mask < comm->size; mask <<= 1) {
        int peer = rank ^ mask;
        if (peer >= comm->size)
            continue;
        if ((rc = bm_mpi_coll_sendrecv(comm, partial, bytes, peer, tmp, bytes, peer,
                                       BM_MPI_COLL_TAG_SCAN, fn)))
            goto out;
        if (peer < rank) {
            if (have_result) {
                bm_mpi_op_apply(op, tmp, recvbuf, count, dt);
            } else {
                memcpy(recvbuf, tmp, bytes);
                have_result = true;
            }
            bm_mpi_op_apply(op, tmp, partial, count, dt);
        } else {
            char *t = partial;
            bm_mpi_op_apply(op, partial, tmp, count, dt);
            partial = tmp;
            tmp = t;
        }
    }
out:
    free(partial);
    free(tmp);
    return rc;
}

/* Reduce-scatter as an allreduce of the whole vector, then each rank keeps
 * its block: every block is computed the same way on every rank. */
static int coll_reduce_scatter(const void *sendbuf, void *recvbuf, const int *counts, bool uniform,
                               MPI_Datatype dt, MPI_Op op, MPI_Comm comm, const char *fn)
{
    size_t total = 0, offset = 0;
    char *all;
    int rc;

    for (int i = 0; i < comm->size; i++) {
        size_t b = bm_mpi_type_bytes(dt, uniform ? counts[0] : counts[i]);
        if (i < comm->rank)
            offset += b;
        total += b;
    }
    if (total == 0)
        return MPI_SUCCESS;
    if (total / (size_t)dt->extent > INT_MAX)
        return bm_mpi_error(comm, MPI_ERR_COUNT, fn, "the counts add up to more than INT_MAX");
    all = malloc(total);
    if (all == NULL)
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "cannot allocate %zu bytes", total);
    rc = bm_mpi_coll_allreduce(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, all,
                               (int)(total / (size_t)dt->extent), dt, op, comm, fn);
    if (rc == MPI_SUCCESS)
        memcpy(recvbuf, all + offset,
               bm_mpi_type_bytes(dt, uniform ? counts[0] : counts[comm->rank]));
    free(all);
    return rc;
}

/* ---- MPI functions ------------------------------------------------------ */

static int check_reduction(MPI_Comm comm, const void *sendbuf, void *recvbuf, int count,
                           MPI_Datatype dt, MPI_Op op, const char *fn)
{
    int rc;

    if ((rc = bm_mpi_check_count(comm, count, fn)) || (rc = bm_mpi_check_datatype(comm, dt, fn)) ||
        (rc = bm_mpi_check_op(comm, op, dt, fn)))
        return rc;
    if (recvbuf == MPI_IN_PLACE)
        return bm_mpi_error(comm, MPI_ERR_BUFFER, fn, "MPI_IN_PLACE is not valid as recvbuf");
    if ((sendbuf != MPI_IN_PLACE && (rc = bm_mpi_check_buffer(comm, sendbuf, count, dt, fn))) ||
        (rc = bm_mpi_check_buffer(comm, recvbuf, count, dt, fn)))
        return rc;
    return MPI_SUCCESS;
}

int PMPI_Barrier(MPI_Comm comm)
{
    static const char fn[] = "MPI_Barrier";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)))
        return rc;
    return bm_mpi_coll_barrier(comm, fn);
}
BM_MPI_ALIAS(Barrier);

int PMPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    static const char fn[] = "MPI_Bcast";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)) ||
        (rc = bm_mpi_check_count(comm, count, fn)) ||
        (rc = bm_mpi_check_datatype(comm, datatype, fn)) ||
        (rc = bm_mpi_check_buffer(comm, buffer, count, datatype, fn)) ||
        (rc = bm_mpi_check_root(comm, root, fn)))
        return rc;
    return bm_mpi_coll_bcast(buffer, bm_mpi_type_bytes(datatype, count), root, comm, fn);
}
BM_MPI_ALIAS(Bcast);

int PMPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                int root, MPI_Comm comm)
{
    static const char fn[] = "MPI_Reduce";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)) ||
        (rc = bm_mpi_check_count(comm, count, fn)) ||
        (rc = bm_mpi_check_datatype(comm, datatype, fn)) ||
        (rc = bm_mpi_check_op(comm, op, datatype, fn)) || (rc = bm_mpi_check_root(comm, root, fn)))
        return rc;
    if (sendbuf == MPI_IN_PLACE && comm->rank != root)
        return bm_mpi_error(comm, MPI_ERR_BUFFER, fn,
                            "MPI_IN_PLACE as sendbuf is valid only at the root (rank %d)", root);
    if (recvbuf == MPI_IN_PLACE)
        return bm_mpi_error(comm, MPI_ERR_BUFFER, fn, "MPI_IN_PLACE is not valid as recvbuf");
    if ((sendbuf != MPI_IN_PLACE &&
         (rc = bm_mpi_check_buffer(comm, sendbuf, count, datatype, fn))) ||
        (comm->rank == root && (rc = bm_mpi_check_buffer(comm, recvbuf, count, datatype, fn))))
        return rc;
    return coll_reduce(sendbuf, recvbuf, count, datatype, op, root, comm, fn);
}
BM_MPI_ALIAS(Reduce);

int PMPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                   MPI_Comm comm)
{
    static const char fn[] = "MPI_Allreduce";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)) ||
        (rc = check_reduction(comm, sendbuf, recvbuf, count, datatype, op, fn)))
        return rc;
    return bm_mpi_coll_allreduce(sendbuf, recvbuf, count, datatype, op, comm, fn);
}
BM_MPI_ALIAS(Allreduce);

int PMPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              MPI_Comm comm)
{
    static const char fn[] = "MPI_Scan";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)) ||
        (rc = check_reduction(comm, sendbuf, recvbuf, count, datatype, op, fn)))
        return rc;
    return coll_scan(sendbuf, recvbuf, count, datatype, op, comm, false, fn);
}
BM_MPI_ALIAS(Scan);

int PMPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                MPI_Comm comm)
{
    static const char fn[] = "MPI_Exscan";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)) ||
        (rc = check_reduction(comm, sendbuf, recvbuf, count, datatype, op, fn)))
        return rc;
    return coll_scan(sendbuf, recvbuf, count, datatype, op, comm, true, fn);
}
BM_MPI_ALIAS(Exscan);

int PMPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    static const char fn[] = "MPI_Reduce_scatter_block";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)) ||
        (rc = check_reduction(comm, sendbuf, recvbuf, recvcount, datatype, op, fn)))
        return rc;
    return coll_reduce_scatter(sendbuf, recvbuf, &recvcount, true, datatype, op, comm, fn);
}
BM_MPI_ALIAS(Reduce_scatter_block);

int PMPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    static const char fn[] = "MPI_Reduce_scatter";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)))
        return rc;
    if (recvcounts == NULL)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL recvcounts array");
    for (int i = 0; i < comm->size; i++)
        if ((rc = bm_mpi_check_count(comm, recvcounts[i], fn)))
            return rc;
    if ((rc = check_reduction(comm, sendbuf, recvbuf, recvcounts[comm->rank], datatype, op, fn)))
        return rc;
    return coll_reduce_scatter(sendbuf, recvbuf, recvcounts, false, datatype, op, comm, fn);
}
BM_MPI_ALIAS(Reduce_scatter);
