/* MPI_Isendrecv and MPI_Isendrecv_replace: a send and a receive started
 * together and completed as one request (the nonblocking MPI_Sendrecv,
 * named in MPI-4.0; provided because programs written for MPI-3.1
 * libraries that had them, MPICH's among them, use them). The request is
 * its own kind (mpi_request.h) holding the two PML requests; its status is
 * the receive's. The replace form receives into a staging buffer of the
 * packed message and unpacks it into the buffer once the send from that
 * buffer is done; when the program frees such a request while it runs, a
 * PML progress hook finishes it, so the data still lands. */
#include "mpi/mpi_internal.h"
#include "mpi/mpi_request.h"
#include "pml/pml.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sendrecv {
    struct bm_pml_request *send; /* NULL: MPI_PROC_NULL, or sent inline */
    struct bm_pml_request *recv; /* NULL: MPI_PROC_NULL */
    size_t capacity;             /* receive capacity in packed bytes (messages) */
    /* replace only: the message lands in tmp and is unpacked into (buf, count, dt) */
    char *tmp;
    void *buf;
    int count;
    MPI_Datatype dt; /* referenced while tmp is set */
    bool unpacked;
};

static bool sr_done(struct sendrecv *s)
{
    return (!s->send || bm_pml_request_done(s->send)) && (!s->recv || bm_pml_request_done(s->recv));
}

/* Once both halves are done: the replace form's unpack (once). */
static void sr_finish_data(struct sendrecv *s)
{
    if (!s->tmp || s->unpacked)
        return;
    s->unpacked = true;
    if (!s->recv)
        return;
    struct bm_pml_status ps;
    bm_pml_request_test(s->recv, &ps);
    if (ps.count && !ps.cancelled)
        bm_mpi_type_unpack(s->dt, s->buf, (size_t)s->count, 0, s->tmp, ps.count);
}

static void sr_free(struct sendrecv *s)
{
    if (s->send)
        bm_pml_request_free(s->send);
    if (s->recv)
        bm_pml_request_free(s->recv);
    if (s->tmp) {
        free(s->tmp);
        bm_mpi_type_release(s->dt);
    }
    free(s);
}

static bool sr_progress(MPI_Request r)
{
    struct sendrecv *s = r->state;
    if (!sr_done(s))
        return false;
    sr_finish_data(s);
    return true;
}

static int sr_query(MPI_Request r, MPI_Status *status, char *what, size_t what_len)
{
    struct sendrecv *s = r->state;
    if (!s->recv) {
        bm_mpi_status_proc_null(status);
        return MPI_SUCCESS;
    }
    struct bm_pml_status ps;
    bm_pml_request_test(s->recv, &ps);
    bm_mpi_status_from_pml(status, &ps);
    if (ps.error == BM_OK)
        return MPI_SUCCESS;
    if (ps.error == BM_ERR_TRUNCATE)
        snprintf(what, what_len,
                 "the message from rank %d with tag %d is longer than the %zu-byte receive "
                 "buffer; only the first %zu bytes were received",
                 ps.source, ps.tag, s->capacity, ps.count);
    else
        snprintf(what, what_len, "receive from rank %d failed: %s", ps.source,
                 bm_status_str(ps.error));
    return bm_mpi_class_of_status(ps.error);
}

/* A replace request the program freed while it ran: finished here. */
static int sr_orphan_hook(void *arg)
{
    struct sendrecv *s = arg;
    if (!sr_done(s))
        return 0;
    sr_finish_data(s);
    bm_pml_progress_unregister(sr_orphan_hook, s);
    sr_free(s);
    return 1;
}

static bool sr_release(MPI_Request r, int *err)
{
    struct sendrecv *s = r->state;
    *err = MPI_SUCCESS;
    r->state = NULL;
    if (s->tmp && !sr_done(s)) {
        if (bm_pml_progress_register(sr_orphan_hook, s) == BM_OK)
            return true;
        /* No memory for the hook: finish it now. */
        while (!sr_done(s))
            bm_pml_progress();
    }
    if (s->tmp)
        sr_finish_data(s);
    /* A plain one still running goes on in the PML (freed requests complete). */
    sr_free(s);
    return true;
}

static int sr_cancel(MPI_Request r)
{
    struct sendrecv *s = r->state;
    if (s->recv)
        bm_pml_request_cancel(s->recv);
    return MPI_SUCCESS;
}

static const struct bm_mpi_request_ops sendrecv_ops = {
    .name = "MPI_Isendrecv",
    .progress = sr_progress,
    .query = sr_query,
    .release = sr_release,
    .cancel = sr_cancel,
    .start = bm_mpi_request_no_start,
};

/* Start both halves (receive first) and make the request. */
static int sr_start(const char *fn, struct sendrecv *s, const void *sendbuf, int sendcount,
                    MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf, int recvcount,
                    MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,
                    MPI_Request *request)
{
    bm_status_t st;
    s->capacity = bm_mpi_type_packed_bytes(recvtype, (size_t)recvcount);
    if (source != MPI_PROC_NULL && (st = bm_mpi_p2p_irecv(recvbuf, recvcount, recvtype, comm,
                                                          source, recvtag, &s->recv)) != BM_OK) {
        s->recv = NULL;
        sr_free(s);
        return bm_mpi_p2p_pml_error(comm, st, fn, "receive", source);
    }
    if (dest != MPI_PROC_NULL &&
        (st = bm_mpi_p2p_isend(sendbuf, sendcount, sendtype, bm_mpi_comm_peer_world(comm, dest),
                               comm, sendtag, BM_PML_SEND_STANDARD, true, &s->send)) != BM_OK) {
        s->send = NULL;
        if (s->recv) {
            bm_pml_request_cancel(s->recv);
            bm_pml_request_wait(s->recv, NULL);
        }
        sr_free(s);
        return bm_mpi_p2p_pml_error(comm, st, fn, "send", dest);
    }
    MPI_Request r = bm_mpi_request_create(&sendrecv_ops, comm, s, false, true);
    if (!r) {
        sr_free(s); /* what was started completes in the background */
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory for a request");
    }
    *request = r;
    return MPI_SUCCESS;
}

int PMPI_Isendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                   void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                   MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Isendrecv";
    int rc;
    if ((rc = bm_mpi_p2p_check(fn, comm, sendbuf, sendcount, &sendtype, dest, sendtag, false)) ||
        (rc = bm_mpi_p2p_check(fn, comm, recvbuf, recvcount, &recvtype, source, recvtag, true)))
        return rc;
    if (!request)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL request pointer");
    struct sendrecv *s = calloc(1, sizeof(*s));
    if (!s)
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
    return sr_start(fn, s, sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                    recvtype, source, recvtag, comm, request);
}
BM_MPI_ALIAS(Isendrecv);

int PMPI_Isendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag,
                           int source, int recvtag, MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Isendrecv_replace";
    int rc;
    if ((rc = bm_mpi_p2p_check(fn, comm, buf, count, &datatype, dest, sendtag, false)) ||
        (rc = bm_mpi_p2p_check(fn, comm, buf, count, &datatype, source, recvtag, true)))
        return rc;
    if (!request)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL request pointer");
    size_t bytes = bm_mpi_type_packed_bytes(datatype, (size_t)count);
    if (bytes > INT_MAX)
        return bm_mpi_error(comm, MPI_ERR_COUNT, fn,
                            "the message is %zu bytes; the replace form stages at most %d", bytes,
                            INT_MAX);
    struct sendrecv *s = calloc(1, sizeof(*s));
    char *tmp = malloc(bytes ? bytes : 1);
    if (!s || !tmp) {
        free(s);
        free(tmp);
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "no memory for a %zu-byte staging buffer",
                            bytes);
    }
    s->tmp = tmp;
    s->buf = buf;
    s->count = count;
    s->dt = datatype;
    bm_mpi_type_retain(datatype);
    /* The message arrives packed in tmp; MPI_BYTE capacity = its packed size. */
    rc = sr_start(fn, s, buf, count, datatype, dest, sendtag, tmp, (int)bytes, MPI_BYTE, source,
                  recvtag, comm, request);
    return rc;
}
BM_MPI_ALIAS(Isendrecv_replace);
