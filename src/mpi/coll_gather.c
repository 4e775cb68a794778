/* Collectives that move blocks without combining them: MPI_Gather(v),
 * MPI_Scatter(v), MPI_Allgather(v) and MPI_Alltoall(v), on the PML's
 * non-blocking calls in the communicator's collective context. Gather and
 * scatter are linear at the root with every transfer in flight at once
 * (their v variants need per-rank sizes anyway); allgather is a ring (p - 1
 * steps, each rank sends and receives every block once: bandwidth-optimal
 * for any p); alltoall is a pairwise exchange (step k sends to rank + k and
 * receives from rank - k, so no rank is ever the target of two senders).
 * Blocks are count * extent bytes at displacement * extent. */
#include "mpi/mpi_internal.h"
#include "pml/pml.h"

#include <stdlib.h>
#include <string.h>

int bm_mpi_coll_irecv(MPI_Comm comm, void *buf, size_t bytes, int peer, int tag,
                      struct bm_pml_request **req_out, const char *fn)
{
    bm_status_t st = bm_pml_irecv(buf, bytes, comm->context_id + 1, peer, tag, req_out);

    if (st != BM_OK)
        return bm_mpi_error(comm, bm_mpi_class_of_status(st), fn,
                            "posting a receive from rank %d failed: %s", peer, bm_status_str(st));
    return MPI_SUCCESS;
}

int bm_mpi_coll_irecv_wait(MPI_Comm comm, struct bm_pml_request *req, size_t bytes, int peer,
                           const char *fn)
{
    struct bm_pml_status status;

    bm_pml_request_wait(req, &status);
    bm_pml_request_free(req);
    if (status.error == BM_ERR_TRUNCATE || (status.error == BM_OK && status.count != bytes))
        return bm_mpi_error(comm, MPI_ERR_TRUNCATE, fn,
                            "rank %d sent %s than the %zu bytes expected: the ranks called %s "
                            "with different counts or datatypes",
                            peer, status.error == BM_ERR_TRUNCATE ? "more" : "fewer", bytes, fn);
    if (status.error != BM_OK)
        return bm_mpi_error(comm, bm_mpi_class_of_status(status.error), fn,
                            "receiving from rank %d failed: %s", peer, bm_status_str(status.error));
    return MPI_SUCCESS;
}

/* Offset of block i in a buffer described by counts/displacements (NULL
 * displs: blocks of counts[0] elements back to back). */
static ptrdiff_t block_offset(MPI_Datatype dt, const int *counts, const int *displs, int i)
{
    return displs ? (ptrdiff_t)displs[i] * dt->extent
                  : (ptrdiff_t)i * (ptrdiff_t)bm_mpi_type_bytes(dt, counts[0]);
}

static char *block_at(const void *buf, MPI_Datatype dt, const int *counts, const int *displs, int i)
{
    return (char *)buf + block_offset(dt, counts, displs, i);
}

static size_t block_bytes(MPI_Datatype dt, const int *counts, const int *displs, int i)
{
    return bm_mpi_type_bytes(dt, displs ? counts[i] : counts[0]);
}

/* Root receives every rank's block; with displs, block i is counts[i]
 * elements at displs[i]; without, counts[0] elements at i * counts[0]. */
static int gather_linear(const void *sendbuf, size_t sbytes, void *recvbuf, MPI_Datatype rtype,
                         const int *rcounts, const int *displs, int root, MPI_Comm comm,
                         const char *fn)
{
    struct bm_pml_request **reqs;
    int rc = MPI_SUCCESS;

    if (comm->rank != root) {
        struct bm_pml_request *req;
        if ((rc = bm_mpi_coll_isend(comm, sendbuf, sbytes, root, BM_MPI_COLL_TAG_GATHER, &req, fn)))
            return rc;
        return bm_mpi_coll_wait(comm, req, root, fn);
    }
    if (sendbuf != MPI_IN_PLACE)
        memmove(block_at(recvbuf, rtype, rcounts, displs, root), sendbuf,
                block_bytes(rtype, rcounts, displs, root));
    reqs = calloc((size_t)comm->size, sizeof(*reqs));
    if (reqs == NULL)
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
    for (int i = 0; i < comm->size && rc == MPI_SUCCESS; i++)
        if (i != root)
            rc = bm_mpi_coll_irecv(comm, block_at(recvbuf, rtype, rcounts, displs, i),
                                   block_bytes(rtype, rcounts, displs, i), i,
                                   BM_MPI_COLL_TAG_GATHER, &reqs[i], fn);
    for (int i = 0; i < comm->size; i++) {
        if (reqs[i] == NULL)
            continue;
        if (rc == MPI_SUCCESS)
            rc = bm_mpi_coll_irecv_wait(comm, reqs[i], block_bytes(rtype, rcounts, displs, i), i,
                                        fn);
        else
            bm_pml_request_free(reqs[i]);
    }
    free(reqs);
    return rc;
}

static int scatter_linear(const void *sendbuf, MPI_Datatype stype, const int *scounts,
                          const int *displs, void *recvbuf, size_t rbytes, int root, MPI_Comm comm,
                          const char *fn)
{
    struct bm_pml_request **reqs;
    int rc = MPI_SUCCESS;

    if (comm->rank != root)
        return bm_mpi_coll_recv(comm, recvbuf, rbytes, root, BM_MPI_COLL_TAG_SCATTER, fn);
    reqs = calloc((size_t)comm->size, sizeof(*reqs));
    if (reqs == NULL)
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
    for (int i = 0; i < comm->size && rc == MPI_SUCCESS; i++)
        if (i != root)
            rc = bm_mpi_coll_isend(comm, block_at(sendbuf, stype, scounts, displs, i),
                                   block_bytes(stype, scounts, displs, i), i,
                                   BM_MPI_COLL_TAG_SCATTER, &reqs[i], fn);
    if (rc == MPI_SUCCESS && recvbuf != MPI_IN_PLACE)
        memmove(recvbuf, block_at(sendbuf, stype, scounts, displs, root),
                block_bytes(stype, scounts, displs, root));
    for (int i = 0; i < comm->size; i++) {
        if (reqs[i] == NULL)
            continue;
        if (rc == MPI_SUCCESS)
            rc = bm_mpi_coll_wait(comm, reqs[i], i, fn);
        else
            bm_pml_request_free(reqs[i]);
    }
    free(reqs);
    return rc;
}

/* Ring: at step k each rank passes on the block it received at step k - 1. */
static int allgather_ring(const void *sendbuf, void *recvbuf, MPI_Datatype rtype,
                          const int *rcounts, const int *displs, MPI_Comm comm, const char *fn)
{
    int size = comm->size, rank = comm->rank;
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;

    if (sendbuf != MPI_IN_PLACE)
        memmove(block_at(recvbuf, rtype, rcounts, displs, rank), sendbuf,
                block_bytes(rtype, rcounts, displs, rank));
    for (int k = 0; k < size - 1; k++) {
        int sblock = (rank - k + size) % size, rblock = (rank - k - 1 + size) % size;
        int rc = bm_mpi_coll_sendrecv(comm, block_at(recvbuf, rtype, rcounts, displs, sblock),
                                      block_bytes(rtype, rcounts, displs, sblock), right,
                                      block_at(recvbuf, rtype, rcounts, displs, rblock),
                                      block_bytes(rtype, rcounts, displs, rblock), left,
                                      BM_MPI_COLL_TAG_ALLGATHER, fn);
        if (rc)
            return rc;
    }
    return MPI_SUCCESS;
}

static int alltoall_pairwise(const void *sendbuf, MPI_Datatype stype, const int *scounts,
                             const int *sdispls, void *recvbuf, MPI_Datatype rtype,
                             const int *rcounts, const int *rdispls, MPI_Comm comm, const char *fn)
{
    int size = comm->size, rank = comm->rank;

    memmove(block_at(recvbuf, rtype, rcounts, rdispls, rank),
            block_at(sendbuf, stype, scounts, sdispls, rank),
            block_bytes(stype, scounts, sdispls, rank));
    for (int k = 1; k < size; k++) {
        int dst = (rank + k) % size, src = (rank - k + size) % size;
        int rc = bm_mpi_coll_sendrecv(comm, block_at(sendbuf, stype, scounts, sdispls, dst),
                                      block_bytes(stype, scounts, sdispls, dst), dst,
                                      block_at(recvbuf, rtype, rcounts, rdispls, src),
                                      block_bytes(rtype, rcounts, rdispls, src), src,
                                      BM_MPI_COLL_TAG_ALLTOALL, fn);
        if (rc)
            return rc;
    }
    return MPI_SUCCESS;
}

/* ---- Argument checks shared by the family ------------------------------- */

static int check_side(MPI_Comm comm, const void *buf, int count, MPI_Datatype dt, const char *fn)
{
    int rc;

    if ((rc = bm_mpi_check_count(comm, count, fn)) || (rc = bm_mpi_check_datatype(comm, dt, fn)) ||
        (rc = bm_mpi_check_buffer(comm, buf, count, dt, fn)))
        return rc;
    return MPI_SUCCESS;
}

static int check_counts(MPI_Comm comm, const void *buf, const int *counts, const int *displs,
                        MPI_Datatype dt, const char *fn)
{
    int rc;

    if (counts == NULL || displs == NULL)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL counts or displacements array");
    if ((rc = bm_mpi_check_datatype(comm, dt, fn)))
        return rc;
    for (int i = 0; i < comm->size; i++)
        if ((rc = bm_mpi_check_count(comm, counts[i], fn)) ||
            (rc = bm_mpi_check_buffer(comm, buf, counts[i], dt, fn)))
            return rc;
    return MPI_SUCCESS;
}

static int check_start(MPI_Comm comm, const char *fn)
{
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)))
        return rc;
    return MPI_SUCCESS;
}

/* Gather and scatter: a valid root, and MPI_IN_PLACE (as the buffer named
 * arg) only at the root. */
static int check_rooted(MPI_Comm comm, int root, const void *buf, const char *arg, const char *fn)
{
    int rc;

    if ((rc = check_start(comm, fn)) || (rc = bm_mpi_check_root(comm, root, fn)))
        return rc;
    if (buf == MPI_IN_PLACE && comm->rank != root)
        return bm_mpi_error(comm, MPI_ERR_BUFFER, fn,
                            "MPI_IN_PLACE as %s is valid only at the root (rank %d)", arg, root);
    return MPI_SUCCESS;
}

/* Allgather and alltoall: both sides valid and their blocks the same size. */
static int check_uniform(MPI_Comm comm, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                         const void *recvbuf, int recvcount, MPI_Datatype recvtype, const char *fn)
{
    int rc;

    if ((rc = check_start(comm, fn)) ||
        (sendbuf != MPI_IN_PLACE && (rc = check_side(comm, sendbuf, sendcount, sendtype, fn))) ||
        (rc = check_side(comm, recvbuf, recvcount, recvtype, fn)))
        return rc;
    if (sendbuf != MPI_IN_PLACE &&
        bm_mpi_type_bytes(sendtype, sendcount) != bm_mpi_type_bytes(recvtype, recvcount))
        return bm_mpi_error(
            comm, MPI_ERR_TRUNCATE, fn, "send blocks of %zu bytes but receive blocks of %zu bytes",
            bm_mpi_type_bytes(sendtype, sendcount), bm_mpi_type_bytes(recvtype, recvcount));
    return MPI_SUCCESS;
}

/* ---- MPI functions ------------------------------------------------------ */

int PMPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    static const char fn[] = "MPI_Gather";
    bool in_place = sendbuf == MPI_IN_PLACE;
    int rc;

    if ((rc = check_rooted(comm, root, sendbuf, "sendbuf", fn)))
        return rc;
    if ((!in_place && (rc = check_side(comm, sendbuf, sendcount, sendtype, fn))) ||
        (comm->rank == root && (rc = check_side(comm, recvbuf, recvcount, recvtype, fn))))
        return rc;
    return gather_linear(sendbuf, in_place ? 0 : bm_mpi_type_bytes(sendtype, sendcount), recvbuf,
                         recvtype, &recvcount, NULL, root, comm, fn);
}
BM_MPI_ALIAS(Gather);

int PMPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                 MPI_Comm comm)
{
    static const char fn[] = "MPI_Gatherv";
    bool in_place = sendbuf == MPI_IN_PLACE;
    int rc;

    if ((rc = check_rooted(comm, root, sendbuf, "sendbuf", fn)))
        return rc;
    if ((!in_place && (rc = check_side(comm, sendbuf, sendcount, sendtype, fn))) ||
        (comm->rank == root &&
         (rc = check_counts(comm, recvbuf, recvcounts, displs, recvtype, fn))))
        return rc;
    return gather_linear(sendbuf, in_place ? 0 : bm_mpi_type_bytes(sendtype, sendcount), recvbuf,
                         recvtype, recvcounts, displs, root, comm, fn);
}
BM_MPI_ALIAS(Gatherv);

int PMPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    static const char fn[] = "MPI_Scatter";
    bool in_place = recvbuf == MPI_IN_PLACE;
    int rc;

    if ((rc = check_rooted(comm, root, recvbuf, "recvbuf", fn)))
        return rc;
    if ((comm->rank == root && (rc = check_side(comm, sendbuf, sendcount, sendtype, fn))) ||
        (!in_place && (rc = check_side(comm, recvbuf, recvcount, recvtype, fn))))
        return rc;
    return scatter_linear(sendbuf, sendtype, &sendcount, NULL, recvbuf,
                          in_place ? 0 : bm_mpi_type_bytes(recvtype, recvcount), root, comm, fn);
}
BM_MPI_ALIAS(Scatter);

int PMPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                  MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                  int root, MPI_Comm comm)
{
    static const char fn[] = "MPI_Scatterv";
    bool in_place = recvbuf == MPI_IN_PLACE;
    int rc;

    if ((rc = check_rooted(comm, root, recvbuf, "recvbuf", fn)))
        return rc;
    if ((comm->rank == root &&
         (rc = check_counts(comm, sendbuf, sendcounts, displs, sendtype, fn))) ||
        (!in_place && (rc = check_side(comm, recvbuf, recvcount, recvtype, fn))))
        return rc;
    return scatter_linear(sendbuf, sendtype, sendcounts, displs, recvbuf,
                          in_place ? 0 : bm_mpi_type_bytes(recvtype, recvcount), root, comm, fn);
}
BM_MPI_ALIAS(Scatterv);

int PMPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    static const char fn[] = "MPI_Allgather";
    int rc;

    if ((rc = check_uniform(comm, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, fn)))
        return rc;
    return allgather_ring(sendbuf, recvbuf, recvtype, &recvcount, NULL, comm, fn);
}
BM_MPI_ALIAS(Allgather);

int PMPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                    MPI_Comm comm)
{
    static const char fn[] = "MPI_Allgatherv";
    int rc;

    if ((rc = check_start(comm, fn)) ||
        (sendbuf != MPI_IN_PLACE && (rc = check_side(comm, sendbuf, sendcount, sendtype, fn))) ||
        (rc = check_counts(comm, recvbuf, recvcounts, displs, recvtype, fn)))
        return rc;
    if (sendbuf != MPI_IN_PLACE && bm_mpi_type_bytes(sendtype, sendcount) !=
                                       bm_mpi_type_bytes(recvtype, recvcounts[comm->rank]))
        return bm_mpi_error(comm, MPI_ERR_TRUNCATE, fn,
                            "send block of %zu bytes but recvcounts[%d] gives %zu bytes",
                            bm_mpi_type_bytes(sendtype, sendcount), comm->rank,
                            bm_mpi_type_bytes(recvtype, recvcounts[comm->rank]));
    return allgather_ring(sendbuf, recvbuf, recvtype, recvcounts, displs, comm, fn);
}
BM_MPI_ALIAS(Allgatherv);

/* MPI_IN_PLACE for alltoall: the data to send is in recvbuf, described by
 * the receive arguments; send from a copy. */
static int alltoall_run(const void *sendbuf, MPI_Datatype stype, const int *scounts,
                        const int *sdispls, void *recvbuf, MPI_Datatype rtype, const int *rcounts,
                        const int *rdispls, MPI_Comm comm, const char *fn)
{
    ptrdiff_t lo = 0, hi = 0;
    char *copy;
    int rc;

    if (sendbuf != MPI_IN_PLACE)
        return alltoall_pairwise(sendbuf, stype, scounts, sdispls, recvbuf, rtype, rcounts, rdispls,
                                 comm, fn);
    /* Copy the span of every block (displacements may be negative). */
    for (int i = 0; i < comm->size; i++) {
        ptrdiff_t off = block_offset(rtype, rcounts, rdispls, i);
        ptrdiff_t end = off + (ptrdiff_t)block_bytes(rtype, rcounts, rdispls, i);
        lo = off < lo ? off : lo;
        hi = end > hi ? end : hi;
    }
    copy = malloc(hi - lo > 0 ? (size_t)(hi - lo) : 1);
    if (copy == NULL)
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "cannot allocate %td bytes", hi - lo);
    memcpy(copy, (char *)recvbuf + lo, (size_t)(hi - lo));
    rc = alltoall_pairwise(copy - lo, rtype, rcounts, rdispls, recvbuf, rtype, rcounts, rdispls,
                           comm, fn);
    free(copy);
    return rc;
}

int PMPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    static const char fn[] = "MPI_Alltoall";
    int rc;

    if ((rc = check_uniform(comm, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, fn)))
        return rc;
    return alltoall_run(sendbuf, sendtype, &sendcount, NULL, recvbuf, recvtype, &recvcount, NULL,
                        comm, fn);
}
BM_MPI_ALIAS(Alltoall);

int PMPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                   MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    static const char fn[] = "MPI_Alltoallv";
    int rc;

    if ((rc = check_start(comm, fn)) ||
        (sendbuf != MPI_IN_PLACE &&
         (rc = check_counts(comm, sendbuf, sendcounts, sdispls, sendtype, fn))) ||
        (rc = check_counts(comm, recvbuf, recvcounts, rdispls, recvtype, fn)))
        return rc;
    return alltoall_run(sendbuf, sendtype, sendcounts, sdispls, recvbuf, recvtype, recvcounts,
                        rdispls, comm, fn);
}
BM_MPI_ALIAS(Alltoallv);
