/* Neighbourhood collectives on graph, distributed-graph and Cartesian
 * communicators: MPI_Neighbor_allgather(v) and MPI_Neighbor_alltoall(v,w),
 * as schedules of one round (every receive, then every send, posted at once;
 * MPI_PROC_NULL neighbours at open Cartesian edges leave their block
 * untouched).
 *
 * Matching. Two edges may join the same two processes: on a periodic
 * Cartesian dimension of size 2 (or 1) a process's -1 and +1 neighbours are
 * the same process, and a graph may repeat an edge. The standard orders the
 * blocks by neighbour index, so the message a process sends along an edge
 * must meet the receive of that edge at the other end:
 *   - Cartesian: the block sent to the -1 neighbour of dimension d arrives
 *     there as the block from its +1 neighbour, and the other way round. The
 *     sub-tag says which: 2d for messages sent in the - direction, 2d + 1 in
 *     the + direction; a receive from the -1 neighbour expects 2d + 1, from
 *     the +1 neighbour 2d (the fix of issue 16's two-rank ring, where both
 *     messages came in send order and swapped the blocks).
 *   - graphs: repeated edges between two processes match in the order of the
 *     neighbour lists (MPI's non-overtaking order, sub-tag 0), which is what
 *     the standard asks of them. */
#include "mpi/coll.h"

#include <stdlib.h>
#include <string.h>

/* ---- building -------------------------------------------------------------------- */

/* The argument view of one side, for the checks below. */
struct side {
    int buf;
    const void *p; /* the user's buffer (for the checks) */
    int count;
    const int *counts;
    const int *displs;
    const MPI_Aint *bdispls;
    MPI_Datatype dt;
    const MPI_Datatype *types;
};

static void sides_of(const struct bm_mpi_coll_args *a, struct side *snd, struct side *rcv)
{
    *snd = (struct side){BM_SCHED_SBUF, a->sbuf,      a->scount, a->scounts,
                         a->sdispls,    a->sdispls_b, a->stype,  a->stypes};
    *rcv = (struct side){BM_SCHED_RBUF, a->rbuf,      a->rcount, a->rcounts,
                         a->rdispls,    a->rdispls_b, a->rtype,  a->rtypes};
}

/* The allgathers send their one block to every neighbour: a layout of n
 * blocks that are all block 0 of l. */
static bool repeat_block(const struct bm_coll_layout *l, int n, struct bm_coll_layout *out,
                         size_t **bytes_out, ptrdiff_t **offs_out)
{
    size_t *b = malloc(sizeof(*b) * (size_t)(n ? n : 1));
    ptrdiff_t *o = malloc(sizeof(*o) * (size_t)(n ? n : 1));

    if (b == NULL || o == NULL) {
        free(b);
        free(o);
        return false;
    }
    for (int k = 0; k < n; k++) {
        b[k] = bm_coll_block_bytes(l, 0);
        o[k] = bm_coll_block_off(l, 0);
    }
    *out = (struct bm_coll_layout){.buf = l->buf, .bytes = b, .offs = o};
    *bytes_out = b;
    *offs_out = o;
    return true;
}

bool bm_coll_build_neighbor_call(struct bm_mpi_sched *s, MPI_Comm comm,
                                 const struct bm_mpi_coll_args *a)
{
    int *in = NULL, *out = NULL, *sub = NULL, nin = 0, nout = 0;
    bool same = a->kind == BM_COLL_NEIGHBOR_ALLGATHER || a->kind == BM_COLL_NEIGHBOR_ALLGATHERV;
    bool cart = false, ok = false;
    struct bm_coll_side snd = {0}, rcv = {0};
    struct bm_coll_layout sl;
    size_t *rb = NULL;
    ptrdiff_t *ro = NULL;

    if (bm_mpi_topo_neighbors(comm, &in, &nin, &out, &nout, &cart, "neighbourhood collective"))
        return false;
    snd = (struct bm_coll_side){.ubuf = BM_SCHED_SBUF,
                                .n = same ? (nout > 0) : nout,
                                .count = a->scount,
                                .counts = a->scounts,
                                .displs = a->sdispls,
                                .adispls = a->sdispls_b,
                                .dt = a->stype,
                                .types = a->stypes};
    rcv = (struct bm_coll_side){.ubuf = BM_SCHED_RBUF,
                                .n = nin,
                                .count = a->rcount,
                                .counts = a->rcounts,
                                .displs = a->rdispls,
                                .adispls = a->rdispls_b,
                                .dt = a->rtype,
                                .types = a->rtypes};
    if (!bm_coll_side_layout(s, &snd, BM_SCHED_PSBUF) ||
        !bm_coll_side_layout(s, &rcv, BM_SCHED_PRBUF))
        goto out;
    sl = snd.l;
    if (same && !repeat_block(&snd.l, nout, &sl, &rb, &ro))
        goto out;
    if (cart) {
        /* in_subtag[k] = k ^ 1, out_subtag[k] = k (see the top of the file) */
        sub = malloc(sizeof(int) * (size_t)(2 * nin + 1));
        if (sub == NULL)
            goto out;
        for (int k = 0; k < nin; k++) {
            sub[k] = k ^ 1;
            sub[nin + k] = k;
        }
    }
    bm_coll_side_pack(s, &snd, -1);
    bm_coll_build_neighbor(s, nin, in, sub, &rcv.l, nout, out, sub ? sub + nin : NULL, &sl);
    if (rcv.packed) {
        /* blocks from MPI_PROC_NULL neighbours stay as they were: unpack only
         * what arrived */
        for (int k = 0; k < nin; k++)
            if (in[k] != MPI_PROC_NULL)
                bm_coll_side_unpack(s, &rcv, k);
    }
    ok = true;
out:
    free(sub);
    free(rb);
    free(ro);
    bm_coll_side_free(&snd);
    bm_coll_side_free(&rcv);
    free(in);
    return ok;
}

/* ---- argument checks ------------------------------------------------------------------ */

static int check_side(MPI_Comm comm, const struct side *sd, int n, const char *fn)
{
    int rc;

    if (sd->counts == NULL) {
        if ((rc = bm_mpi_check_count(comm, sd->count, fn)) ||
            (rc = bm_mpi_check_datatype(comm, sd->dt, fn)))
            return rc;
        return n > 0 ? bm_mpi_check_buffer(comm, sd->p, sd->count, sd->dt, fn) : MPI_SUCCESS;
    }
    if (n > 0 && sd->displs == NULL && sd->bdispls == NULL)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL displacements array");
    if (sd->types == NULL && (rc = bm_mpi_check_datatype(comm, sd->dt, fn)))
        return rc;
    for (int k = 0; k < n; k++) {
        MPI_Datatype dt = sd->types ? sd->types[k] : sd->dt;
        if ((rc = bm_mpi_check_count(comm, sd->counts[k], fn)))
            return rc;
        if (sd->counts[k] > 0 && ((rc = bm_mpi_check_datatype(comm, dt, fn)) ||
                                  (rc = bm_mpi_check_buffer(comm, sd->p, sd->counts[k], dt, fn))))
            return rc;
    }
    return MPI_SUCCESS;
}

/* The checks and the description shared by the three forms of one call. */
static int neighbor_args(int kind, const void *sendbuf, int sendcount, const int *sendcounts,
                         const int *sdispls, const MPI_Aint *sdispls_b, MPI_Datatype sendtype,
                         const MPI_Datatype *sendtypes, void *recvbuf, int recvcount,
                         const int *recvcounts, const int *rdispls, const MPI_Aint *rdispls_b,
                         MPI_Datatype recvtype, const MPI_Datatype *recvtypes, MPI_Comm comm,
                         struct bm_mpi_coll_args *a, const char *fn)
{
    int *in = NULL, *out = NULL, nin = 0, nout = 0, rc;
    struct side snd, rcv;
    bool cart;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)) ||
        (rc = bm_mpi_check_intra(comm, fn)))
        return rc;
    if (sendbuf == MPI_IN_PLACE || recvbuf == MPI_IN_PLACE)
        return bm_mpi_error(comm, MPI_ERR_BUFFER, fn,
                            "MPI_IN_PLACE is not valid in neighbourhood collectives");
    *a = (struct bm_mpi_coll_args){.kind = kind,
                                   .sbuf = sendbuf,
                                   .scount = sendcount,
                                   .scounts = sendcounts,
                                   .sdispls = sdispls,
                                   .sdispls_b = sdispls_b,
                                   .stype = sendtype,
                                   .stypes = sendtypes,
                                   .rbuf = recvbuf,
                                   .rcount = recvcount,
                                   .rcounts = recvcounts,
                                   .rdispls = rdispls,
                                   .rdispls_b = rdispls_b,
                                   .rtype = recvtype,
                                   .rtypes = recvtypes};
    if ((rc = bm_mpi_topo_neighbors(comm, &in, &nin, &out, &nout, &cart, fn)))
        return rc;
    free(in);
    if (kind == BM_COLL_NEIGHBOR_ALLTOALLW &&
        ((nout > 0 && sendtypes == NULL) || (nin > 0 && recvtypes == NULL)))
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL datatypes array");
    if ((nout > 0 && sendcounts == NULL && sendcount < 0) ||
        (kind != BM_COLL_NEIGHBOR_ALLGATHER && kind != BM_COLL_NEIGHBOR_ALLTOALL &&
         ((nin > 0 && recvcounts == NULL) ||
          (kind != BM_COLL_NEIGHBOR_ALLGATHERV && nout > 0 && sendcounts == NULL))))
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL counts array");
    sides_of(a, &snd, &rcv);
    if ((rc = check_side(comm, &snd, nout, fn)) || (rc = check_side(comm, &rcv, nin, fn)))
        return rc;
    return MPI_SUCCESS;
}

/* ---- MPI functions: blocking ------------------------------------------------------------ */

int PMPI_Neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    static const char fn[] = "MPI_Neighbor_allgather";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = neighbor_args(BM_COLL_NEIGHBOR_ALLGATHER, sendbuf, sendcount, NULL, NULL, NULL,
                            sendtype, NULL, recvbuf, recvcount, NULL, NULL, NULL, recvtype, NULL,
                            comm, &a, fn)))
        return rc;
    return bm_mpi_coll_blocking(comm, &a, fn);
}
BM_MPI_ALIAS(Neighbor_allgather);

int PMPI_Neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, const int recvcounts[], const int displs[],
                             MPI_Datatype recvtype, MPI_Comm comm)
{
    static const char fn[] = "MPI_Neighbor_allgatherv";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = neighbor_args(BM_COLL_NEIGHBOR_ALLGATHERV, sendbuf, sendcount, NULL, NULL, NULL,
                            sendtype, NULL, recvbuf, 0, recvcounts, displs, NULL, recvtype, NULL,
                            comm, &a, fn)))
        return rc;
    return bm_mpi_coll_blocking(comm, &a, fn);
}
BM_MPI_ALIAS(Neighbor_allgatherv);

int PMPI_Neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                           int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    static const char fn[] = "MPI_Neighbor_alltoall";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = neighbor_args(BM_COLL_NEIGHBOR_ALLTOALL, sendbuf, sendcount, NULL, NULL, NULL,
                            sendtype, NULL, recvbuf, recvcount, NULL, NULL, NULL, recvtype, NULL,
                            comm, &a, fn)))
        return rc;
    return bm_mpi_coll_blocking(comm, &a, fn);
}
BM_MPI_ALIAS(Neighbor_alltoall);

int PMPI_Neighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                            MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                            const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    static const char fn[] = "MPI_Neighbor_alltoallv";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = neighbor_args(BM_COLL_NEIGHBOR_ALLTOALLV, sendbuf, 0, sendcounts, sdispls, NULL,
                            sendtype, NULL, recvbuf, 0, recvcounts, rdispls, NULL, recvtype, NULL,
                            comm, &a, fn)))
        return rc;
    return bm_mpi_coll_blocking(comm, &a, fn);
}
BM_MPI_ALIAS(Neighbor_alltoallv);

int PMPI_Neighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                            const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                            const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    static const char fn[] = "MPI_Neighbor_alltoallw";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = neighbor_args(BM_COLL_NEIGHBOR_ALLTOALLW, sendbuf, 0, sendcounts, NULL, sdispls, NULL,
                            sendtypes, recvbuf, 0, recvcounts, NULL, rdispls, NULL, recvtypes, comm,
                            &a, fn)))
        return rc;
    return bm_mpi_coll_blocking(comm, &a, fn);
}
BM_MPI_ALIAS(Neighbor_alltoallw);

/* ---- MPI functions: nonblocking and persistent ------------------------------------------ */

int PMPI_Ineighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                             MPI_Request *request)
{
    static const char fn[] = "MPI_Ineighbor_allgather";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = neighbor_args(BM_COLL_NEIGHBOR_ALLGATHER, sendbuf, sendcount, NULL, NULL, NULL,
                            sendtype, NULL, recvbuf, recvcount, NULL, NULL, NULL, recvtype, NULL,
                            comm, &a, fn)))
        return rc;
    return bm_mpi_coll_nonblocking(comm, &a, request, fn);
}
BM_MPI_ALIAS(Ineighbor_allgather);

int PMPI_Ineighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                              void *recvbuf, const int recvcounts[], const int displs[],
                              MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Ineighbor_allgatherv";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = neighbor_args(BM_COLL_NEIGHBOR_ALLGATHERV, sendbuf, sendcount, NULL, NULL, NULL,
                            sendtype, NULL, recvbuf, 0, recvcounts, displs, NULL, recvtype, NULL,
                            comm, &a, fn)))
        return rc;
    return bm_mpi_coll_nonblocking(comm, &a, request, fn);
}
BM_MPI_ALIAS(Ineighbor_allgatherv);

int PMPI_Ineighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                            MPI_Request *request)
{
    static const char fn[] = "MPI_Ineighbor_alltoall";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = neighbor_args(BM_COLL_NEIGHBOR_ALLTOALL, sendbuf, sendcount, NULL, NULL, NULL,
                            sendtype, NULL, recvbuf, recvcount, NULL, NULL, NULL, recvtype, NULL,
                            comm, &a, fn)))
        return rc;
    return bm_mpi_coll_nonblocking(comm, &a, request, fn);
}
BM_MPI_ALIAS(Ineighbor_alltoall);

int PMPI_Ineighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                             MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                             const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                             MPI_Request *request)
{
    static const char fn[] = "MPI_Ineighbor_alltoallv";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = neighbor_args(BM_COLL_NEIGHBOR_ALLTOALLV, sendbuf, 0, sendcounts, sdispls, NULL,
                            sendtype, NULL, recvbuf, 0, recvcounts, rdispls, NULL, recvtype, NULL,
                            comm, &a, fn)))
        return rc;
    return bm_mpi_coll_nonblocking(comm, &a, request, fn);
}
BM_MPI_ALIAS(Ineighbor_alltoallv);

int PMPI_Ineighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                             const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                             const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                             MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Ineighbor_alltoallw";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = neighbor_args(BM_COLL_NEIGHBOR_ALLTOALLW, sendbuf, 0, sendcounts, NULL, sdispls, NULL,
                            sendtypes, recvbuf, 0, recvcounts, NULL, rdispls, NULL, recvtypes, comm,
                            &a, fn)))
        return rc;
    return bm_mpi_coll_nonblocking(comm, &a, request, fn);
}
BM_MPI_ALIAS(Ineighbor_alltoallw);

int PMPI_Neighbor_allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                 MPI_Info info, MPI_Request *request)
{
    static const char fn[] = "MPI_Neighbor_allgather_init";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = neighbor_args(BM_COLL_NEIGHBOR_ALLGATHER, sendbuf, sendcount, NULL, NULL, NULL,
                            sendtype, NULL, recvbuf, recvcount, NULL, NULL, NULL, recvtype, NULL,
                            comm, &a, fn)))
        return rc;
    return bm_mpi_coll_persistent(comm, &a, info, request, fn);
}
BM_MPI_ALIAS(Neighbor_allgather_init);

int PMPI_Neighbor_allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                  void *recvbuf, const int recvcounts[], const int displs[],
                                  MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                  MPI_Request *request)
{
    static const char fn[] = "MPI_Neighbor_allgatherv_init";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = neighbor_args(BM_COLL_NEIGHBOR_ALLGATHERV, sendbuf, sendcount, NULL, NULL, NULL,
                            sendtype, NULL, recvbuf, 0, recvcounts, displs, NULL, recvtype, NULL,
                            comm, &a, fn)))
        return rc;
    return bm_mpi_coll_persistent(comm, &a, info, request, fn);
}
BM_MPI_ALIAS(Neighbor_allgatherv_init);

int PMPI_Neighbor_alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                MPI_Info info, MPI_Request *request)
{
    static const char fn[] = "MPI_Neighbor_alltoall_init";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = neighbor_args(BM_COLL_NEIGHBOR_ALLTOALL, sendbuf, sendcount, NULL, NULL, NULL,
                            sendtype, NULL, recvbuf, recvcount, NULL, NULL, NULL, recvtype, NULL,
                            comm, &a, fn)))
        return rc;
    return bm_mpi_coll_persistent(comm, &a, info, request, fn);
}
BM_MPI_ALIAS(Neighbor_alltoall_init);

int PMPI_Neighbor_alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                 MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                                 const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                                 MPI_Info info, MPI_Request *request)
{
    static const char fn[] = "MPI_Neighbor_alltoallv_init";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = neighbor_args(BM_COLL_NEIGHBOR_ALLTOALLV, sendbuf, 0, sendcounts, sdispls, NULL,
                            sendtype, NULL, recvbuf, 0, recvcounts, rdispls, NULL, recvtype, NULL,
                            comm, &a, fn)))
        return rc;
    return bm_mpi_coll_persistent(comm, &a, info, request, fn);
}
BM_MPI_ALIAS(Neighbor_alltoallv_init);

int PMPI_Neighbor_alltoallw_init(const void *sendbuf, const int sendcounts[],
                                 const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                 void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[],
                                 const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info,
                                 MPI_Request *request)
{
    static const char fn[] = "MPI_Neighbor_alltoallw_init";
    struct bm_mpi_coll_args a;
    int rc;

    if ((rc = neighbor_args(BM_COLL_NEIGHBOR_ALLTOALLW, sendbuf, 0, sendcounts, NULL, sdispls, NULL,
                            sendtypes, recvbuf, 0, recvcounts, NULL, rdispls, NULL, recvtypes, comm,
                            &a, fn)))
        return rc;
    return bm_mpi_coll_persistent(comm, &a, info, request, fn);
}
BM_MPI_ALIAS(Neighbor_alltoallw_init);
