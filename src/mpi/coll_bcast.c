/* Schedules of the barrier and the broadcasts (coll.h builders).
 *   - barrier.dissemination: ceil(log2 p) rounds; in round k each rank
 *     signals rank + 2^k and waits for rank - 2^k (any p).
 *   - bcast.binomial: the root's data goes down a binomial tree (log2 p
 *     rounds of latency, each byte crosses log2 p links): small messages.
 *   - bcast.scatter_allgather (van de Geijn): a binomial scatter of p chunks
 *     then a ring allgather of them; each byte crosses about two links:
 *     large messages on three or more ranks.
 *   - bcast.pipeline: the message cut into segments that flow down a chain
 *     of the ranks, each rank forwarding segment k while it receives
 *     segment k + 1: large messages on few ranks, where the chain is short.
 * Ranks are renumbered relative to the root (rel = rank - root mod p). */
#include "mpi/coll.h"

void bm_coll_build_barrier_dissemination(struct bm_mpi_sched *s, MPI_Comm comm)
{
    int size = comm->size, rank = comm->rank;

    for (int dist = 1; dist < size; dist <<= 1) {
        bm_mpi_sched_recv(s, (rank - dist + size) % size, BM_SCHED_RBUF, 0, 0, 0);
        bm_mpi_sched_send(s, (rank + dist) % size, BM_SCHED_RBUF, 0, 0, 0);
        bm_mpi_sched_round(s);
    }
}

void bm_coll_build_bcast_binomial(struct bm_mpi_sched *s, MPI_Comm comm, int buf, ptrdiff_t off,
                                  size_t bytes, int root)
{
    int size = comm->size, rel = (comm->rank - root + size) % size, mask = 1;

    if (size == 1)
        return;
    while (mask < size) {
        if (rel & mask) {
            bm_mpi_sched_recv(s, (rel - mask + root) % size, buf, off, bytes, 0);
            bm_mpi_sched_round(s);
            break;
        }
        mask <<= 1;
    }
    /* Largest subtree first: it has the longest way to go. */
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (rel + mask < size)
            bm_mpi_sched_send(s, (rel + mask + root) % size, buf, off, bytes, 0);
    bm_mpi_sched_round(s);
}

void bm_coll_build_bcast_scatter_allgather(struct bm_mpi_sched *s, MPI_Comm comm, int buf,
                                           ptrdiff_t off, size_t bytes, int root)
{
    int size = comm->size, rel = (comm->rank - root + size) % size, mask = 1;

#define REAL(r)  (((r) + root) % size)
#define CHUNK(i) ((ptrdiff_t)bm_coll_block_start((i), bytes, size))
    if (size == 1)
        return;
    /* Binomial scatter: rank rel ends up with chunks [rel, rel + subtree). */
    while (mask < size) {
        if (rel & mask) {
            int hi = rel + mask < size ? rel + mask : size;
            bm_mpi_sched_recv(s, REAL(rel - mask), buf, off + CHUNK(rel),
                              (size_t)(CHUNK(hi) - CHUNK(rel)), 0);
            bm_mpi_sched_round(s);
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1) {
        if (rel + mask < size) {
            int lo = rel + mask, hi = rel + 2 * mask < size ? rel + 2 * mask : size;
            bm_mpi_sched_send(s, REAL(lo), buf, off + CHUNK(lo), (size_t)(CHUNK(hi) - CHUNK(lo)),
                              0);
        }
    }
    bm_mpi_sched_round(s);
    /* Ring allgather: in step k pass on the chunk received in step k - 1. */
    for (int k = 0; k < size - 1; k++) {
        int sc = (rel - k + size) % size, rc = (rel - k - 1 + size) % size;
        bm_mpi_sched_recv(s, REAL(rel - 1 + size), buf, off + CHUNK(rc),
                          (size_t)(CHUNK(rc + 1) - CHUNK(rc)), 1);
        bm_mpi_sched_send(s, REAL(rel + 1), buf, off + CHUNK(sc),
                          (size_t)(CHUNK(sc + 1) - CHUNK(sc)), 1);
        bm_mpi_sched_round(s);
    }
#undef CHUNK
#undef REAL
}

void bm_coll_build_bcast_pipeline(struct bm_mpi_sched *s, MPI_Comm comm, int buf, ptrdiff_t off,
                                  size_t bytes, int root, size_t segment)
{
    int size = comm->size, rel = (comm->rank - root + size) % size;
    size_t nseg = segment ? (bytes + segment - 1) / segment : 1;
    int prev = (comm->rank - 1 + size) % size, next = (comm->rank + 1) % size;

    if (size == 1)
        return;
    if (nseg == 0)
        nseg = 1; /* zero bytes: one empty message down the chain */
    /* Round k: receive segment k from the previous rank, pass segment k - 1
     * to the next one. */
    for (size_t k = 0; k <= nseg; k++) {
        if (rel > 0 && k < nseg) {
            size_t o = k * segment, n = bytes - o < segment ? bytes - o : segment;
            bm_mpi_sched_recv(s, prev, buf, off + (ptrdiff_t)o, bytes ? n : 0, 0);
        }
        if (rel < size - 1) {
            size_t j = rel == 0 ? k : k - 1;
            if ((rel == 0 && k < nseg) || (rel > 0 && k > 0)) {
                size_t o = j * segment, n = bytes - o < segment ? bytes - o : segment;
                bm_mpi_sched_send(s, next, buf, off + (ptrdiff_t)o, bytes ? n : 0, 0);
            }
        }
        bm_mpi_sched_round(s);
    }
}
