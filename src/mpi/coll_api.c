/* The MPI collective entry points: MPI_Barrier, MPI_Bcast, MPI_Gather(v),
 * MPI_Scatter(v), MPI_Allgather(v), MPI_Alltoall(v,w), MPI_Reduce,
 * MPI_Allreduce, MPI_Reduce_scatter(_block) on intra- and
 * inter-communicators, MPI_Scan and MPI_Exscan on intra-communicators. Each
 * checks its arguments once, in a function that its blocking, nonblocking
 * and persistent forms share, and describes the call as a struct
 * bm_mpi_coll_args with the arguments that are not significant on this rank
 * cleared (the standard lets them be anything), so the engine never reads
 * an invalid handle. The algorithms are schedules (coll_sched.h), chosen in
 * coll_select.c. Also the library's own collectives and the point-to-point
 * helpers used by comm.c. */
#include "mpi/coll.h"
#include "pml/pml.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---- point-to-point helpers outside the engine ----------------------------------- */

static int p2p_fail(MPI_Comm comm, const char *fn, int status, const char *what, int peer)
{
    return bm_mpi_error(comm, bm_mpi_class_of_status(status), fn, "%s rank %d failed: %s", what,
                        peer, bm_status_str(status));
}

static int length_error(MPI_Comm comm, const char *fn, int peer, int error, size_t bytes)
{
    return bm_mpi_error(comm, MPI_ERR_TRUNCATE, fn,
                        "rank %d sent %s than the %zu bytes expected: the ranks called %s with "
                        "different counts or datatypes",
                        peer, error == BM_ERR_TRUNCATE ? "more" : "fewer", bytes, fn);
}

int bm_mpi_coll_isend(MPI_Comm comm, const void *buf, size_t bytes, int peer, int tag,
                      struct bm_pml_request **req_out, const char *fn)
{
    bm_status_t st =
        bm_pml_isend(buf, bytes, bm_mpi_coll_peer_world(comm, peer), bm_mpi_coll_cid(comm),
                     bm_mpi_coll_myrank(comm), tag, BM_PML_SEND_STANDARD, req_out);

    return st == BM_OK ? MPI_SUCCESS : p2p_fail(comm, fn, st, "sending to", peer);
}

int bm_mpi_coll_wait(MPI_Comm comm, struct bm_pml_request *req, int peer, const char *fn)
{
    struct bm_pml_status status;

    bm_pml_request_wait(req, &status);
    bm_pml_request_free(req);
    return status.error == BM_OK ? MPI_SUCCESS
                                 : p2p_fail(comm, fn, status.error, "sending to", peer);
}

int bm_mpi_coll_irecv(MPI_Comm comm, void *buf, size_t bytes, int peer, int tag,
                      struct bm_pml_request **req_out, const char *fn)
{
    bm_status_t st = bm_pml_irecv(buf, bytes, bm_mpi_coll_cid(comm), peer, tag, req_out);

    return st == BM_OK ? MPI_SUCCESS : p2p_fail(comm, fn, st, "posting a receive from", peer);
}

int bm_mpi_coll_irecv_wait(MPI_Comm comm, struct bm_pml_request *req, size_t bytes, int peer,
                           const char *fn)
{
    struct bm_pml_status status;

    bm_pml_request_wait(req, &status);
    bm_pml_request_free(req);
    if (status.error == BM_ERR_TRUNCATE || (status.error == BM_OK && status.count != bytes))
        return length_error(comm, fn, peer, status.error, bytes);
    return status.error == BM_OK ? MPI_SUCCESS
                                 : p2p_fail(comm, fn, status.error, "receiving from", peer);
}

int bm_mpi_coll_recv(MPI_Comm comm, void *buf, size_t bytes, int peer, int tag, const char *fn)
{
    struct bm_pml_request *req;
    int rc = bm_mpi_coll_irecv(comm, buf, bytes, peer, tag, &req, fn);

    return rc ? rc : bm_mpi_coll_irecv_wait(comm, req, bytes, peer, fn);
}

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

/* ---- the library's own collectives --------------------------------------------------- */

int bm_mpi_coll_barrier(MPI_Comm comm, const char *fn)
{
    struct bm_mpi_coll_args a = {.kind = BM_COLL_BARRIER};

    return bm_mpi_coll_blocking(comm, &a, fn);
}

int bm_mpi_coll_bcast(void *buf, size_t bytes, int root, MPI_Comm comm, const char *fn)
{
    struct bm_mpi_coll_args a = {
        .kind = BM_COLL_BCAST, .rbuf = buf, .rcount = (int)bytes, .rtype = MPI_BYTE, .root = root};

    return bm_mpi_coll_blocking(comm, &a, fn);
}

int bm_mpi_coll_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                          MPI_Comm comm, const char *fn)
{
    struct bm_mpi_coll_args a = {.kind = BM_COLL_ALLREDUCE,
                                 .sbuf = sendbuf,
                                 .rbuf = recvbuf,
                                 .rcount = count,
                                 .rtype = dt,
                                 .op = op};

    return bm_mpi_coll_blocking(comm, &a, fn);
}

int bm_mpi_coll_allgather_bytes(const void *sendbuf, void *recvbuf, size_t bytes, MPI_Comm comm,
                                const char *fn)
{
    struct bm_mpi_coll_args a = {.kind = BM_COLL_ALLGATHER,
                                 .sbuf = sendbuf,
                                 .rbuf = recvbuf,
                                 .scount = (int)bytes,
                                 .stype = MPI_BYTE,
                                 .rcount = (int)bytes,
                                 .rtype = MPI_BYTE};

    return bm_mpi_coll_blocking(comm, &a, fn);
}

/* ---- argument checks ---------------------------------------------------------------- */

/* Initialized and a live communicator; intra_only: not an inter-communicator
 * (scans, which the standard does not define on them). */
static int check_start(MPI_Comm comm, bool intra_only, const char *fn)
{
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)) ||
        (intra_only && (rc = bm_mpi_check_intra(comm, fn))))
        return rc;
    return MPI_SUCCESS;
}

static int no_in_place(MPI_Comm comm, const void *sbuf, const void *rbuf, const char *fn)
{
    if (comm->inter && (sbuf == MPI_IN_PLACE || rbuf == MPI_IN_PLACE))
        return bm_mpi_error(comm, MPI_ERR_BUFFER, fn,
                            "MPI_IN_PLACE is not valid on an inter-communicator");
    return MPI_SUCCESS;
}

/* The send buffer is the receive buffer (or this rank's block of it) where
 * MPI_IN_PLACE was meant: erroneous (MPI-3.1 section 2.6.2: an output
 * argument may not alias another argument), and MPICH answers
 * MPI_ERR_BUFFER (its errors/coll/noalias*), as we do, rather than compute
 * garbage or, in a rooted call, leave the other ranks waiting. sbuf is
 * compared where MPICH compares it: only when the two sides describe the
 * same data (same types and counts, the caller's "same"), never for
 * MPI_BOTTOM (absolute addresses in both types) nor on an
 * inter-communicator (two groups, two buffers). */
static int no_alias(MPI_Comm comm, const void *sbuf, const void *rbuf, bool same, const char *fn)
{
    if (comm->inter || !same || sbuf == MPI_IN_PLACE || sbuf == MPI_BOTTOM || sbuf != rbuf)
        return MPI_SUCCESS;
    return bm_mpi_error(comm, MPI_ERR_BUFFER, fn,
                        "the send buffer is the receive buffer%s (%p); pass MPI_IN_PLACE to use "
                        "one buffer for both",
                        rbuf == sbuf ? "" : "'s block of this rank", sbuf);
}

/* Where block i of count elements of dt starts in buf. */
static const void *block_at(const void *buf, MPI_Datatype dt, size_t i)
{
    return (const char *)buf + (ptrdiff_t)i * dt->extent;
}

/* A root: a rank of the group (intra-communicator), or on an
 * inter-communicator MPI_ROOT (this process is the root), MPI_PROC_NULL
 * (another process of its group is) or a rank of the remote group. */
static int check_root(MPI_Comm comm, int root, const char *fn)
{
    if (!comm->inter)
        return bm_mpi_check_root(comm, root, fn);
    if (root == MPI_ROOT || root == MPI_PROC_NULL || (root >= 0 && root < comm->peer_size))
        return MPI_SUCCESS;
    return bm_mpi_error(comm, MPI_ERR_ROOT, fn,
                        "invalid root %d on an inter-communicator (MPI_ROOT at the root, "
                        "MPI_PROC_NULL in its group, a rank of the remote group of %d "
                        "processes in the other group)",
                        root, comm->peer_size);
}

/* This process is the root of a rooted collective. */
static bool is_root(MPI_Comm comm, int root)
{
    return comm->inter ? root == MPI_ROOT : comm->rank == root;
}

/* This process contributes a block or a vector to a rooted collective
 * (every rank of an intra-communicator; the other group's processes on an
 * inter-communicator). */
static bool contributes(MPI_Comm comm, int root)
{
    return comm->inter ? root >= 0 : true;
}

static int check_side(MPI_Comm comm, const void *buf, int count, MPI_Datatype dt, const char *fn)
{
    int rc;

    if ((rc = bm_mpi_check_count(comm, count, fn)) || (rc = bm_mpi_check_datatype(comm, dt, fn)) ||
        (rc = bm_mpi_check_buffer(comm, buf, count, dt, fn)))
        return rc;
    return MPI_SUCCESS;
}

/* Per-block counts for the processes point-to-point ranks name (the remote
 * group of an inter-communicator). */
static int check_counts(MPI_Comm comm, const void *buf, const int *counts, const int *displs,
                        MPI_Datatype dt, const char *fn)
{
    int rc;

    if (counts == NULL || displs == NULL)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL counts or displacements array");
    if ((rc = bm_mpi_check_datatype(comm, dt, fn)))
        return rc;
    for (int i = 0; i < comm->peer_size; i++)
        if ((rc = bm_mpi_check_count(comm, counts[i], fn)) ||
            (rc = bm_mpi_check_buffer(comm, buf, counts[i], dt, fn)))
            return rc;
    return MPI_SUCCESS;
}

/* Gather and scatter: a valid root, and MPI_IN_PLACE (as the buffer named
 * arg) only at the root of an intra-communicator. */
static int check_rooted(MPI_Comm comm, int root, const void *sbuf, const void *rbuf,
                        const void *buf, const char *arg, const char *fn)
{
    int rc;

    if ((rc = check_start(comm, false, fn)) || (rc = check_root(comm, root, fn)) ||
        (rc = no_in_place(comm, sbuf, rbuf, fn)))
        return rc;
    if (buf == MPI_IN_PLACE && comm->rank != root)
        return bm_mpi_error(comm, MPI_ERR_BUFFER, fn,
                            "MPI_IN_PLACE as %s is valid only at the root (rank %d)", arg, root);
    return MPI_SUCCESS;
}

/* Allgather and alltoall: both sides valid and, on an intra-communicator,
 * their blocks the same size (across the groups of an inter-communicator
 * the other group's receive side is what must match). */
static int check_uniform(MPI_Comm comm, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                         const void *recvbuf, int recvcount, MPI_Datatype recvtype, const char *fn)
{
    int rc;

    if ((rc = check_start(comm, false, fn)) || (rc = no_in_place(comm, sendbuf, recvbuf, fn)) ||
        (sendbuf != MPI_IN_PLACE && (rc = check_side(comm, sendbuf, sendcount, sendtype, fn))) ||
        (rc = check_side(comm, recvbuf, recvcount, recvtype, fn)))
        return rc;
    if (recvbuf == MPI_IN_PLACE)
        return bm_mpi_error(comm, MPI_ERR_BUFFER, fn, "MPI_IN_PLACE is not valid as recvbuf");
    if (!comm->inter && sendbuf != MPI_IN_PLACE &&
        bm_mpi_type_packed_bytes(sendtype, (size_t)sendcount) !=
            bm_mpi_type_packed_bytes(recvtype, (size_t)recvcount))
        return bm_mpi_error(comm, MPI_ERR_TRUNCATE, fn,
                            "send blocks of %zu bytes but receive blocks of %zu bytes",
                            bm_mpi_type_packed_bytes(sendtype, (size_t)sendcount),
                            bm_mpi_type_packed_bytes(recvtype, (size_t)recvcount));
    return MPI_SUCCESS;
}

static int check_reduction(MPI_Comm comm, const void *sendbuf, void *recvbuf, int count,
                           MPI_Datatype dt, MPI_Op op, const char *fn)
{
    int rc;

    if ((rc = bm_mpi_check_count(comm, count, fn)) || (rc = bm_mpi_check_datatype(comm, dt, fn)) ||
        (rc = bm_mpi_check_op(comm, op, dt, fn)) || (rc = no_in_place(comm, sendbuf, recvbuf, fn)))
        return rc;
    if (recvbuf == MPI_IN_PLACE)
        return bm_mpi_error(comm, MPI_ERR_BUFFER, fn, "MPI_IN_PLACE is not valid as recvbuf");
    if ((sendbuf != MPI_IN_PLACE && (rc = bm_mpi_check_buffer(comm, sendbuf, count, dt, fn))) ||
        (rc = bm_mpi_check_buffer(comm, recvbuf, count, dt, fn)) ||
        (rc = no_alias(comm, sendbuf, recvbuf, count > 0, fn)))
        return rc;
    return MPI_SUCCESS;
}

/* Element counts are ints, byte totals must fit the engine's arithmetic. */
static int check_total(MPI_Comm comm, size_t total, MPI_Datatype dt, const char *fn)
{
    if (dt->extent > 0 && total / (size_t)dt->extent > INT_MAX)
        return bm_mpi_error(comm, MPI_ERR_COUNT, fn, "the counts add up to more than INT_MAX");
    return MPI_SUCCESS;
}

/* ---- one function per collective: check, then describe ----------------------------- */

static int barrier_args(MPI_Comm comm, struct bm_mpi_coll_args *a, const char *fn)
{
    int rc = check_start(comm, false, fn);

    *a = (struct bm_mpi_coll_args){.kind = BM_COLL_BARRIER};
    return rc;
}

static int bcast_args(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm,
                      struct bm_mpi_coll_args *a, const char *fn)
{
    int rc;

    if ((rc = check_start(comm, false, fn)) || (rc = check_root(comm, root, fn)))
        return rc;
    if (!(comm->inter && root == MPI_PROC_NULL) &&
        ((rc = bm_mpi_check_count(comm, count, fn)) || (rc = bm_mpi_check_datatype(comm, dt, fn)) ||
         (rc = bm_mpi_check_buffer(comm, buf, count, dt, fn))))
        return rc;
    *a = (struct bm_mpi_coll_args){.kind = BM_COLL_BCAST, .root = root};
    if (!(comm->inter && root == MPI_PROC_NULL)) {
        a->rbuf = buf;
        a->rcount = count;
        a->rtype = dt;
    }
    return MPI_SUCCESS;
}

/* v: Gatherv (recvcounts and displs significant at the root). */
static int gather_args(bool v, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                       void *recvbuf, int recvcount, const int *recvcounts, const int *displs,
                       MPI_Datatype recvtype, int root, MPI_Comm comm, struct bm_mpi_coll_args *a,
                       const char *fn)
{
    bool in_place = sendbuf == MPI_IN_PLACE, at_root, sends;
    int rc;

    if ((rc = check_rooted(comm, root, sendbuf, NULL, sendbuf, "sendbuf", fn)))
        return rc;
    at_root = is_root(comm, root);
    sends = contributes(comm, root) && !in_place;
    if (sends && (rc = check_side(comm, sendbuf, sendcount, sendtype, fn)))
        return rc;
    if (at_root && (rc = v ? check_counts(comm, recvbuf, recvcounts, displs, recvtype, fn)
                           : check_side(comm, recvbuf, recvcount, recvtype, fn)))
        return rc;
    if (at_root && !in_place && !comm->inter && /* root is MPI_ROOT there: no block */
        (rc = no_alias(comm, sendbuf,
                       block_at(recvbuf, recvtype,
                                v ? (size_t)displs[root] : (size_t)root * (size_t)recvcount),
                       sendtype == recvtype && sendcount != 0 &&
                           (v ? recvcounts[root] != 0 : sendcount == recvcount),
                       fn)))
        return rc;
    if (!comm->inter && at_root && !in_place &&
        bm_mpi_type_packed_bytes(sendtype, (size_t)sendcount) !=
            bm_mpi_type_packed_bytes(recvtype, (size_t)(v ? recvcounts[root] : recvcount)))
        return bm_mpi_error(
            comm, MPI_ERR_TRUNCATE, fn, "the root sends %zu bytes to itself but expects %zu",
            bm_mpi_type_packed_bytes(sendtype, (size_t)sendcount),
            bm_mpi_type_packed_bytes(recvtype, (size_t)(v ? recvcounts[root] : recvcount)));
    *a = (struct bm_mpi_coll_args){.kind = v ? BM_COLL_GATHERV : BM_COLL_GATHER,
                                   .sbuf = sendbuf,
                                   .scount = sends ? sendcount : 0,
                                   .stype = sends ? sendtype : NULL,
                                   .root = root};
    if (at_root) {
        a->rbuf = recvbuf;
        a->rcount = v ? 0 : recvcount;
        a->rcounts = recvcounts;
        a->rdispls = displs;
        a->rtype = recvtype;
    }
    return MPI_SUCCESS;
}

/* v: Scatterv (sendcounts and displs significant at the root). */
static int scatter_args(bool v, const void *sendbuf, int sendcount, const int *sendcounts,
                        const int *displs, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                        MPI_Datatype recvtype, int root, MPI_Comm comm, struct bm_mpi_coll_args *a,
                        const char *fn)
{
    bool in_place = recvbuf == MPI_IN_PLACE, at_root, receives;
    int rc;

    if ((rc = check_rooted(comm, root, NULL, recvbuf, recvbuf, "recvbuf", fn)))
        return rc;
    at_root = is_root(comm, root);
    receives = contributes(comm, root) && !in_place;
    if (at_root && (rc = v ? check_counts(comm, sendbuf, sendcounts, displs, sendtype, fn)
                           : check_side(comm, sendbuf, sendcount, sendtype, fn)))
        return rc;
    if (receives && (rc = check_side(comm, recvbuf, recvcount, recvtype, fn)))
        return rc;
    if (at_root && !in_place && !comm->inter && /* root is MPI_ROOT there: no block */
        (rc = no_alias(comm,
                       block_at(sendbuf, sendtype,
                                v ? (size_t)displs[root] : (size_t)root * (size_t)sendcount),
                       recvbuf,
                       sendtype == recvtype && recvcount != 0 &&
                           (v ? sendcounts[root] != 0 : sendcount == recvcount),
                       fn)))
        return rc;
    if (!comm->inter && at_root && !in_place &&
        bm_mpi_type_packed_bytes(recvtype, (size_t)recvcount) !=
            bm_mpi_type_packed_bytes(sendtype, (size_t)(v ? sendcounts[root] : sendcount)))
        return bm_mpi_error(
            comm, MPI_ERR_TRUNCATE, fn, "the root sends %zu bytes to itself but expects %zu",
            bm_mpi_type_packed_bytes(sendtype, (size_t)(v ? sendcounts[root] : sendcount)),
            bm_mpi_type_packed_bytes(recvtype, (size_t)recvcount));
    *a = (struct bm_mpi_coll_args){.kind = v ? BM_COLL_SCATTERV : BM_COLL_SCATTER,
                                   .rbuf = recvbuf,
                                   .rcount = receives ? recvcount : 0,
                                   .rtype = receives ? recvtype : NULL,
                                   .root = root};
    if (at_root) {
        a->sbuf = sendbuf;
        a->scount = v ? 0 : sendcount;
        a->scounts = sendcounts;
        a->sdispls = displs;
        a->stype = sendtype;
    }
    return MPI_SUCCESS;
}

/* v: Allgatherv. */
static int allgather_args(bool v, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                          void *recvbuf, int recvcount, const int *recvcounts, const int *displs,
                          MPI_Datatype recvtype, MPI_Comm comm, struct bm_mpi_coll_args *a,
                          const char *fn)
{
    bool in_place = sendbuf == MPI_IN_PLACE;
    int rc;

    if (!v) {
        if ((rc = check_uniform(comm, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                fn)))
            return rc;
    } else {
        if ((rc = check_start(comm, false, fn)) || (rc = no_in_place(comm, sendbuf, recvbuf, fn)) ||
            (!in_place && (rc = check_side(comm, sendbuf, sendcount, sendtype, fn))) ||
            (rc = check_counts(comm, recvbuf, recvcounts, displs, recvtype, fn)))
            return rc;
        if (!comm->inter && !in_place &&
            bm_mpi_type_packed_bytes(sendtype, (size_t)sendcount) !=
                bm_mpi_type_packed_bytes(recvtype, (size_t)recvcounts[comm->rank]))
            return bm_mpi_error(comm, MPI_ERR_TRUNCATE, fn,
                                "send block of %zu bytes but recvcounts[%d] gives %zu bytes",
                                bm_mpi_type_packed_bytes(sendtype, (size_t)sendcount), comm->rank,
                                bm_mpi_type_packed_bytes(recvtype, (size_t)recvcounts[comm->rank]));
    }
    if (!in_place && !comm->inter &&
        (rc = no_alias(
             comm, sendbuf,
             block_at(recvbuf, recvtype,
                      v ? (size_t)displs[comm->rank] : (size_t)comm->rank * (size_t)recvcount),
             sendtype == recvtype && sendcount != 0 &&
                 (v ? recvcounts[comm->rank] != 0 : sendcount == recvcount),
             fn)))
        return rc;
    *a = (struct bm_mpi_coll_args){
        .kind = v ? BM_COLL_ALLGATHERV : BM_COLL_ALLGATHER,
        .sbuf = sendbuf,
        .scount = in_place ? 0 : sendcount,
        .stype = in_place ? NULL : sendtype,
        .rbuf = recvbuf,
        .rcount = v ? 0 : recvcount,
        .rcounts = recvcounts,
        .rdispls = displs,
        .rtype = recvtype,
    };
    return MPI_SUCCESS;
}

static int alltoall_args(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                         int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                         struct bm_mpi_coll_args *a, const char *fn)
{
    bool in_place = sendbuf == MPI_IN_PLACE;
    int rc;

    if ((rc =
             check_uniform(comm, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, fn)) ||
        (rc = no_alias(comm, sendbuf, recvbuf,
                       sendtype == recvtype && sendcount == recvcount && sendcount != 0, fn)))
        return rc;
    *a = (struct bm_mpi_coll_args){.kind = BM_COLL_ALLTOALL,
                                   .sbuf = sendbuf,
                                   .scount = in_place ? 0 : sendcount,
                                   .stype = in_place ? NULL : sendtype,
                                   .rbuf = recvbuf,
                                   .rcount = recvcount,
                                   .rtype = recvtype};
    return MPI_SUCCESS;
}

static int alltoallv_args(const void *sendbuf, const int *sendcounts, const int *sdispls,
                          MPI_Datatype sendtype, void *recvbuf, const int *recvcounts,
                          const int *rdispls, MPI_Datatype recvtype, MPI_Comm comm,
                          struct bm_mpi_coll_args *a, const char *fn)
{
    bool in_place = sendbuf == MPI_IN_PLACE;
    int rc;

    if ((rc = check_start(comm, false, fn)) || (rc = no_in_place(comm, sendbuf, recvbuf, fn)) ||
        (!in_place && (rc = check_counts(comm, sendbuf, sendcounts, sdispls, sendtype, fn))) ||
        (rc = check_counts(comm, recvbuf, recvcounts, rdispls, recvtype, fn)) ||
        (rc = no_alias(comm, sendbuf, recvbuf, sendtype == recvtype && sendcounts == recvcounts,
                       fn)))
        return rc;
    if (recvbuf == MPI_IN_PLACE)
        return bm_mpi_error(comm, MPI_ERR_BUFFER, fn, "MPI_IN_PLACE is not valid as recvbuf");
    *a = (struct bm_mpi_coll_args){.kind = BM_COLL_ALLTOALLV,
                                   .sbuf = sendbuf,
                                   .scounts = in_place ? recvcounts : sendcounts,
                                   .sdispls = in_place ? rdispls : sdispls,
                                   .stype = in_place ? recvtype : sendtype,
                                   .rbuf = recvbuf,
                                   .rcounts = recvcounts,
                                   .rdispls = rdispls,
                                   .rtype = recvtype};
    return MPI_SUCCESS;
}

static int check_w_side(MPI_Comm comm, const void *buf, const int *counts, const int *displs,
                        const MPI_Datatype *types, const char *fn)
{
    int rc;

    if (counts == NULL || displs == NULL || types == NULL)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL counts, displacements or datatypes array");
    for (int i = 0; i < comm->peer_size; i++)
        if ((rc = bm_mpi_check_count(comm, counts[i], fn)) ||
            (counts[i] > 0 && (rc = bm_mpi_check_datatype(comm, types[i], fn))) ||
            (counts[i] > 0 && (rc = bm_mpi_check_buffer(comm, buf, counts[i], types[i], fn))))
            return rc;
    return MPI_SUCCESS;
}

static int alltoallw_args(const void *sendbuf, const int *sendcounts, const int *sdispls,
                          const MPI_Datatype *sendtypes, void *recvbuf, const int *recvcounts,
                          const int *rdispls, const MPI_Datatype *recvtypes, MPI_Comm comm,
                          struct bm_mpi_coll_args *a, const char *fn)
{
    bool in_place = sendbuf == MPI_IN_PLACE;
    int rc;

    if ((rc = check_start(comm, false, fn)) || (rc = no_in_place(comm, sendbuf, recvbuf, fn)) ||
        (!in_place && (rc = check_w_side(comm, sendbuf, sendcounts, sdispls, sendtypes, fn))) ||
        (rc = check_w_side(comm, recvbuf, recvcounts, rdispls, recvtypes, fn)) ||
        (rc = no_alias(comm, sendbuf, recvbuf, sendtypes == recvtypes && sendcounts == recvcounts,
                       fn)))
        return rc;
    if (recvbuf == MPI_IN_PLACE)
        return bm_mpi_error(comm, MPI_ERR_BUFFER, fn, "MPI_IN_PLACE is not valid as recvbuf");
    *a = (struct bm_mpi_coll_args){.kind = BM_COLL_ALLTOALLW,
                                   .sbuf = sendbuf,
                                   .scounts = in_place ? NULL : sendcounts,
                                   .sdispls = in_place ? NULL : sdispls,
                                   .stypes = in_place ? NULL : sendtypes,
                                   .rbuf = recvbuf,
                                   .rcounts = recvcounts,
                                   .rdispls = rdispls,
                                   .rtypes = recvtypes};
    return MPI_SUCCESS;
}

static int reduce_args(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                       int root, MPI_Comm comm, struct bm_mpi_coll_args *a, const char *fn)
{
    bool at_root, sends;
    int rc;

    if ((rc = check_start(comm, false, fn)) || (rc = check_root(comm, root, fn)))
        return rc;
    *a = (struct bm_mpi_coll_args){.kind = BM_COLL_REDUCE, .root = root};
    if (comm->inter && root == MPI_PROC_NULL)
        return MPI_SUCCESS; /* nothing of this call is significant here */
    if ((rc = bm_mpi_check_count(comm, count, fn)) || (rc = bm_mpi_check_datatype(comm, dt, fn)) ||
        (rc = bm_mpi_check_op(comm, op, dt, fn)) || (rc = no_in_place(comm, sendbuf, recvbuf, fn)))
        return rc;
    at_root = is_root(comm, root);
    sends = contributes(comm, root);
    if (sendbuf == MPI_IN_PLACE && !at_root)
        return bm_mpi_error(comm, MPI_ERR_BUFFER, fn,
                            "MPI_IN_PLACE as sendbuf is valid only at the root (rank %d)", root);
    if (recvbuf == MPI_IN_PLACE)
        return bm_mpi_error(comm, MPI_ERR_BUFFER, fn, "MPI_IN_PLACE is not valid as recvbuf");
    if ((sends && sendbuf != MPI_IN_PLACE &&
         (rc = bm_mpi_check_buffer(comm, sendbuf, count, dt, fn))) ||
        (at_root && (rc = bm_mpi_check_buffer(comm, recvbuf, count, dt, fn))) ||
        (at_root && (rc = no_alias(comm, sendbuf, recvbuf, count > 0, fn))))
        return rc;
    a->sbuf = sendbuf;
    a->rbuf = at_root ? recvbuf : NULL;
    a->rcount = count;
    a->rtype = dt;
    a->op = op;
    return MPI_SUCCESS;
}

/* Allreduce, scan, exscan (scans: intra-communicators only). */
static int allreduce_args(int kind, const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt,
                          MPI_Op op, MPI_Comm comm, struct bm_mpi_coll_args *a, const char *fn)
{
    int rc;

    if ((rc = check_start(comm, kind != BM_COLL_ALLREDUCE, fn)) ||
        (rc = check_reduction(comm, sendbuf, recvbuf, count, dt, op, fn)))
        return rc;
    *a = (struct bm_mpi_coll_args){
        .kind = kind, .sbuf = sendbuf, .rbuf = recvbuf, .rcount = count, .rtype = dt, .op = op};
    return MPI_SUCCESS;
}

/* v: Reduce_scatter (recvcounts), else Reduce_scatter_block (recvcount).
 * The counts are per process of the group (the local group of an
 * inter-communicator, which gets the other group's result). */
static int reduce_scatter_args(bool v, const void *sendbuf, void *recvbuf, int recvcount,
                               const int *recvcounts, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                               struct bm_mpi_coll_args *a, const char *fn)
{
    size_t total = 0;
    int rc, mine = recvcount;

    if ((rc = check_start(comm, false, fn)))
        return rc;
    if (v && recvcounts == NULL)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL recvcounts array");
    if (v) {
        for (int i = 0; i < comm->size; i++)
            if ((rc = bm_mpi_check_count(comm, recvcounts[i], fn)))
                return rc;
        mine = recvcounts[comm->rank];
    }
    if ((rc = check_reduction(comm, sendbuf, recvbuf, mine, dt, op, fn)))
        return rc;
    for (int i = 0; i < comm->size; i++)
        total += bm_mpi_type_bytes(dt, v ? recvcounts[i] : recvcount);
    /* (a rank whose own block is empty still sees the alias the others see) */
    if ((rc = check_total(comm, total, dt, fn)) ||
        (rc = no_alias(comm, sendbuf, recvbuf, total > 0, fn)))
        return rc;
    *a =
        (struct bm_mpi_coll_args){.kind = v ? BM_COLL_REDUCE_SCATTER : BM_COLL_REDUCE_SCATTER_BLOCK,
                                  .sbuf = sendbuf,
                                  .rbuf = recvbuf,
                                  .rcount = v ? 0 : recvcount,
                                  .rcounts = recvcounts,
                                  .rtype = dt,
                                  .op = op};
    return MPI_SUCCESS;
}

/* ---- MPI functions: blocking ---------------------------------------------------------- */

int PMPI_Barrier(MPI_Comm comm)
{
    static const char fn[] = "MPI_Barrier";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = barrier_args(comm, &a, fn)))
        return rc;
    return bm_mpi_coll_blocking(comm, &a, fn);
}
BM_MPI_ALIAS(Barrier);

int PMPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    static const char fn[] = "MPI_Bcast";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = bcast_args(buffer, count, datatype, root, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_blocking(comm, &a, fn);
}
BM_MPI_ALIAS(Bcast);

int PMPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    static const char fn[] = "MPI_Gather";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = gather_args(false, sendbuf, sendcount, sendtype, recvbuf, recvcount, NULL, NULL,
                          recvtype, root, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_blocking(comm, &a, fn);
}
BM_MPI_ALIAS(Gather);

int PMPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                 MPI_Comm comm)
{
    static const char fn[] = "MPI_Gatherv";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = gather_args(true, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs,
                          recvtype, root, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_blocking(comm, &a, fn);
}
BM_MPI_ALIAS(Gatherv);

int PMPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    static const char fn[] = "MPI_Scatter";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = scatter_args(false, sendbuf, sendcount, NULL, NULL, sendtype, recvbuf, recvcount,
                           recvtype, root, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_blocking(comm, &a, fn);
}
BM_MPI_ALIAS(Scatter);

int PMPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                  MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                  int root, MPI_Comm comm)
{
    static const char fn[] = "MPI_Scatterv";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = scatter_args(true, sendbuf, 0, sendcounts, displs, sendtype, recvbuf, recvcount,
                           recvtype, root, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_blocking(comm, &a, fn);
}
BM_MPI_ALIAS(Scatterv);

int PMPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    static const char fn[] = "MPI_Allgather";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = allgather_args(false, sendbuf, sendcount, sendtype, recvbuf, recvcount, NULL, NULL,
                             recvtype, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_blocking(comm, &a, fn);
}
BM_MPI_ALIAS(Allgather);

int PMPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                    MPI_Comm comm)
{
    static const char fn[] = "MPI_Allgatherv";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = allgather_args(true, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs,
                             recvtype, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_blocking(comm, &a, fn);
}
BM_MPI_ALIAS(Allgatherv);

int PMPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    static const char fn[] = "MPI_Alltoall";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = alltoall_args(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, &a,
                            fn)))
        return rc;
    return bm_mpi_coll_blocking(comm, &a, fn);
}
BM_MPI_ALIAS(Alltoall);

int PMPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                   MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    static const char fn[] = "MPI_Alltoallv";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = alltoallv_args(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                             recvtype, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_blocking(comm, &a, fn);
}
BM_MPI_ALIAS(Alltoallv);

int PMPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                   const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                   const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    static const char fn[] = "MPI_Alltoallw";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = alltoallw_args(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                             recvtypes, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_blocking(comm, &a, fn);
}
BM_MPI_ALIAS(Alltoallw);

int PMPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                int root, MPI_Comm comm)
{
    static const char fn[] = "MPI_Reduce";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = reduce_args(sendbuf, recvbuf, count, datatype, op, root, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_blocking(comm, &a, fn);
}
BM_MPI_ALIAS(Reduce);

int PMPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                   MPI_Comm comm)
{
    static const char fn[] = "MPI_Allreduce";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = allreduce_args(BM_COLL_ALLREDUCE, sendbuf, recvbuf, count, datatype, op, comm, &a,
                             fn)))
        return rc;
    return bm_mpi_coll_blocking(comm, &a, fn);
}
BM_MPI_ALIAS(Allreduce);

int PMPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              MPI_Comm comm)
{
    static const char fn[] = "MPI_Scan";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = allreduce_args(BM_COLL_SCAN, sendbuf, recvbuf, count, datatype, op, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_blocking(comm, &a, fn);
}
BM_MPI_ALIAS(Scan);

int PMPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                MPI_Comm comm)
{
    static const char fn[] = "MPI_Exscan";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = allreduce_args(BM_COLL_EXSCAN, sendbuf, recvbuf, count, datatype, op, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_blocking(comm, &a, fn);
}
BM_MPI_ALIAS(Exscan);

int PMPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    static const char fn[] = "MPI_Reduce_scatter_block";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = reduce_scatter_args(false, sendbuf, recvbuf, recvcount, NULL, datatype, op, comm, &a,
                                  fn)))
        return rc;
    return bm_mpi_coll_blocking(comm, &a, fn);
}
BM_MPI_ALIAS(Reduce_scatter_block);

int PMPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    static const char fn[] = "MPI_Reduce_scatter";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = reduce_scatter_args(true, sendbuf, recvbuf, 0, recvcounts, datatype, op, comm, &a,
                                  fn)))
        return rc;
    return bm_mpi_coll_blocking(comm, &a, fn);
}
BM_MPI_ALIAS(Reduce_scatter);

/* ---- MPI functions: nonblocking (MPI-3.1) --------------------------------------------- */

int PMPI_Ibarrier(MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Ibarrier";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = barrier_args(comm, &a, fn)))
        return rc;
    return bm_mpi_coll_nonblocking(comm, &a, request, fn);
}
BM_MPI_ALIAS(Ibarrier);

int PMPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                MPI_Request *request)
{
    static const char fn[] = "MPI_Ibcast";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = bcast_args(buffer, count, datatype, root, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_nonblocking(comm, &a, request, fn);
}
BM_MPI_ALIAS(Ibcast);

int PMPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                 MPI_Request *request)
{
    static const char fn[] = "MPI_Igather";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = gather_args(false, sendbuf, sendcount, sendtype, recvbuf, recvcount, NULL, NULL,
                          recvtype, root, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_nonblocking(comm, &a, request, fn);
}
BM_MPI_ALIAS(Igather);

int PMPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                  MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Igatherv";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = gather_args(true, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs,
                          recvtype, root, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_nonblocking(comm, &a, request, fn);
}
BM_MPI_ALIAS(Igatherv);

int PMPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                  MPI_Request *request)
{
    static const char fn[] = "MPI_Iscatter";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = scatter_args(false, sendbuf, sendcount, NULL, NULL, sendtype, recvbuf, recvcount,
                           recvtype, root, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_nonblocking(comm, &a, request, fn);
}
BM_MPI_ALIAS(Iscatter);

int PMPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                   MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                   int root, MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Iscatterv";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = scatter_args(true, sendbuf, 0, sendcounts, displs, sendtype, recvbuf, recvcount,
                           recvtype, root, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_nonblocking(comm, &a, request, fn);
}
BM_MPI_ALIAS(Iscatterv);

int PMPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Iallgather";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = allgather_args(false, sendbuf, sendcount, sendtype, recvbuf, recvcount, NULL, NULL,
                             recvtype, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_nonblocking(comm, &a, request, fn);
}
BM_MPI_ALIAS(Iallgather);

int PMPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                     MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Iallgatherv";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = allgather_args(true, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs,
                             recvtype, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_nonblocking(comm, &a, request, fn);
}
BM_MPI_ALIAS(Iallgatherv);

int PMPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Ialltoall";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = alltoall_args(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, &a,
                            fn)))
        return rc;
    return bm_mpi_coll_nonblocking(comm, &a, request, fn);
}
BM_MPI_ALIAS(Ialltoall);

int PMPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                    MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                    const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Ialltoallv";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = alltoallv_args(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                             recvtype, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_nonblocking(comm, &a, request, fn);
}
BM_MPI_ALIAS(Ialltoallv);

int PMPI_Ialltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                    const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                    const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                    MPI_Request *request)
{
    static const char fn[] = "MPI_Ialltoallw";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = alltoallw_args(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                             recvtypes, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_nonblocking(comm, &a, request, fn);
}
BM_MPI_ALIAS(Ialltoallw);

int PMPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                 int root, MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Ireduce";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = reduce_args(sendbuf, recvbuf, count, datatype, op, root, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_nonblocking(comm, &a, request, fn);
}
BM_MPI_ALIAS(Ireduce);

int PMPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                    MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Iallreduce";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = allreduce_args(BM_COLL_ALLREDUCE, sendbuf, recvbuf, count, datatype, op, comm, &a,
                             fn)))
        return rc;
    return bm_mpi_coll_nonblocking(comm, &a, request, fn);
}
BM_MPI_ALIAS(Iallreduce);

int PMPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Ireduce_scatter";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = reduce_scatter_args(true, sendbuf, recvbuf, 0, recvcounts, datatype, op, comm, &a,
                                  fn)))
        return rc;
    return bm_mpi_coll_nonblocking(comm, &a, request, fn);
}
BM_MPI_ALIAS(Ireduce_scatter);

int PMPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                               MPI_Request *request)
{
    static const char fn[] = "MPI_Ireduce_scatter_block";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = reduce_scatter_args(false, sendbuf, recvbuf, recvcount, NULL, datatype, op, comm, &a,
                                  fn)))
        return rc;
    return bm_mpi_coll_nonblocking(comm, &a, request, fn);
}
BM_MPI_ALIAS(Ireduce_scatter_block);

int PMPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Iscan";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = allreduce_args(BM_COLL_SCAN, sendbuf, recvbuf, count, datatype, op, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_nonblocking(comm, &a, request, fn);
}
BM_MPI_ALIAS(Iscan);

int PMPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                 MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Iexscan";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = allreduce_args(BM_COLL_EXSCAN, sendbuf, recvbuf, count, datatype, op, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_nonblocking(comm, &a, request, fn);
}
BM_MPI_ALIAS(Iexscan);

/* ---- MPI functions: persistent (MPI-4.0) ----------------------------------------------- */

int PMPI_Barrier_init(MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    static const char fn[] = "MPI_Barrier_init";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = barrier_args(comm, &a, fn)))
        return rc;
    return bm_mpi_coll_persistent(comm, &a, info, request, fn);
}
BM_MPI_ALIAS(Barrier_init);

int PMPI_Bcast_init(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                    MPI_Info info, MPI_Request *request)
{
    static const char fn[] = "MPI_Bcast_init";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = bcast_args(buffer, count, datatype, root, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_persistent(comm, &a, info, request, fn);
}
BM_MPI_ALIAS(Bcast_init);

int PMPI_Gather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                     MPI_Request *request)
{
    static const char fn[] = "MPI_Gather_init";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = gather_args(false, sendbuf, sendcount, sendtype, recvbuf, recvcount, NULL, NULL,
                          recvtype, root, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_persistent(comm, &a, info, request, fn);
}
BM_MPI_ALIAS(Gather_init);

int PMPI_Gatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                      const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                      MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    static const char fn[] = "MPI_Gatherv_init";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = gather_args(true, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs,
                          recvtype, root, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_persistent(comm, &a, info, request, fn);
}
BM_MPI_ALIAS(Gatherv_init);

int PMPI_Scatter_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                      int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                      MPI_Request *request)
{
    static const char fn[] = "MPI_Scatter_init";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = scatter_args(false, sendbuf, sendcount, NULL, NULL, sendtype, recvbuf, recvcount,
                           recvtype, root, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_persistent(comm, &a, info, request, fn);
}
BM_MPI_ALIAS(Scatter_init);

int PMPI_Scatterv_init(const void *sendbuf, const int sendcounts[], const int displs[],
                       MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                       int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    static const char fn[] = "MPI_Scatterv_init";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = scatter_args(true, sendbuf, 0, sendcounts, displs, sendtype, recvbuf, recvcount,
                           recvtype, root, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_persistent(comm, &a, info, request, fn);
}
BM_MPI_ALIAS(Scatterv_init);

int PMPI_Allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                        MPI_Request *request)
{
    static const char fn[] = "MPI_Allgather_init";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = allgather_args(false, sendbuf, sendcount, sendtype, recvbuf, recvcount, NULL, NULL,
                             recvtype, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_persistent(comm, &a, info, request, fn);
}
BM_MPI_ALIAS(Allgather_init);

int PMPI_Allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                         const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                         MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    static const char fn[] = "MPI_Allgatherv_init";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = allgather_args(true, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs,
                             recvtype, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_persistent(comm, &a, info, request, fn);
}
BM_MPI_ALIAS(Allgatherv_init);

int PMPI_Alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                       MPI_Request *request)
{
    static const char fn[] = "MPI_Alltoall_init";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = alltoall_args(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, &a,
                            fn)))
        return rc;
    return bm_mpi_coll_persistent(comm, &a, info, request, fn);
}
BM_MPI_ALIAS(Alltoall_init);

int PMPI_Alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                        MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                        const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                        MPI_Request *request)
{
    static const char fn[] = "MPI_Alltoallv_init";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = alltoallv_args(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                             recvtype, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_persistent(comm, &a, info, request, fn);
}
BM_MPI_ALIAS(Alltoallv_init);

int PMPI_Alltoallw_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                        const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                        const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                        MPI_Info info, MPI_Request *request)
{
    static const char fn[] = "MPI_Alltoallw_init";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = alltoallw_args(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                             recvtypes, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_persistent(comm, &a, info, request, fn);
}
BM_MPI_ALIAS(Alltoallw_init);

int PMPI_Reduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                     MPI_Op op, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    static const char fn[] = "MPI_Reduce_init";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = reduce_args(sendbuf, recvbuf, count, datatype, op, root, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_persistent(comm, &a, info, request, fn);
}
BM_MPI_ALIAS(Reduce_init);

int PMPI_Allreduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    static const char fn[] = "MPI_Allreduce_init";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = allreduce_args(BM_COLL_ALLREDUCE, sendbuf, recvbuf, count, datatype, op, comm, &a,
                             fn)))
        return rc;
    return bm_mpi_coll_persistent(comm, &a, info, request, fn);
}
BM_MPI_ALIAS(Allreduce_init);

int PMPI_Reduce_scatter_init(const void *sendbuf, void *recvbuf, const int recvcounts[],
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                             MPI_Request *request)
{
    static const char fn[] = "MPI_Reduce_scatter_init";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = reduce_scatter_args(true, sendbuf, recvbuf, 0, recvcounts, datatype, op, comm, &a,
                                  fn)))
        return rc;
    return bm_mpi_coll_persistent(comm, &a, info, request, fn);
}
BM_MPI_ALIAS(Reduce_scatter_init);

int PMPI_Reduce_scatter_block_init(const void *sendbuf, void *recvbuf, int recvcount,
                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                   MPI_Request *request)
{
    static const char fn[] = "MPI_Reduce_scatter_block_init";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = reduce_scatter_args(false, sendbuf, recvbuf, recvcount, NULL, datatype, op, comm, &a,
                                  fn)))
        return rc;
    return bm_mpi_coll_persistent(comm, &a, info, request, fn);
}
BM_MPI_ALIAS(Reduce_scatter_block_init);

int PMPI_Scan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                   MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    static const char fn[] = "MPI_Scan_init";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = allreduce_args(BM_COLL_SCAN, sendbuf, recvbuf, count, datatype, op, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_persistent(comm, &a, info, request, fn);
}
BM_MPI_ALIAS(Scan_init);

int PMPI_Exscan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                     MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    static const char fn[] = "MPI_Exscan_init";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = allreduce_args(BM_COLL_EXSCAN, sendbuf, recvbuf, count, datatype, op, comm, &a, fn)))
        return rc;
    return bm_mpi_coll_persistent(comm, &a, info, request, fn);
}
BM_MPI_ALIAS(Exscan_init);
