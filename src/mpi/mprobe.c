/* Matched probes and receives (MPI-3.1 section 3.8.2): MPI_Mprobe and
 * MPI_Improbe find a message and take it out of matching at once, handing
 * back an MPI_Message that only MPI_Mrecv or MPI_Imrecv can receive. This
 * is what makes probe-then-receive safe when two threads (or two libraries)
 * probe the same source: with MPI_Probe + MPI_Recv the other could receive
 * the message in between. The PML removes the message from its unexpected
 * queues in the same step that finds it (bm_pml_improbe). A message holds a
 * reference on its communicator, so MPI_Comm_free may come in between. */
#include "mpi/mpi_internal.h"
#include "mpi/mpi_request.h"
#include "pml/pml.h"

#include <stdlib.h>

#define BM_MPI_MAGIC_MESSAGE 0x6d736721U /* "msg!" */

struct bm_mpi_message {
    uint32_t magic;
    struct bm_pml_message *pml; /* NULL for MPI_MESSAGE_NO_PROC */
    MPI_Comm comm;              /* referenced */
};

struct bm_mpi_message bm_mpi_message_no_proc_obj = {.magic = BM_MPI_MAGIC_MESSAGE};

static int probe_check(const char *fn, int source, int tag, MPI_Comm comm, const void *message)
{
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)) ||
        (rc = bm_mpi_check_tag(comm, tag, true, fn)) ||
        (rc = bm_mpi_check_rank(comm, source, BM_MPI_RANK_ALLOW_PROC_NULL | BM_MPI_RANK_ALLOW_ANY,
                                fn)))
        return rc;
    if (!message)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL message pointer");
    return MPI_SUCCESS;
}

/* One attempt: take a matching message when there is one into m (allocated
 * beforehand, so that a message out of matching is never lost to a failed
 * allocation). */
static int improbe(const char *fn, int source, int tag, MPI_Comm comm, struct bm_mpi_message *m,
                   bool *found, MPI_Message *message, MPI_Status *status)
{
    struct bm_pml_status ps;
    bm_status_t st = bm_pml_improbe(comm->context_id, source, tag, found, &m->pml, &ps);
    if (st != BM_OK)
        return bm_mpi_p2p_pml_error(comm, st, fn, "matched probe", source);
    if (!*found)
        return MPI_SUCCESS;
    m->magic = BM_MPI_MAGIC_MESSAGE;
    m->comm = comm;
    bm_mpi_comm_retain(comm);
    *message = m;
    if (status)
        bm_mpi_status_from_pml(status, &ps);
    return MPI_SUCCESS;
}

static int message_alloc(MPI_Comm comm, const char *fn, struct bm_mpi_message **m_out)
{
    *m_out = malloc(sizeof(**m_out));
    return *m_out ? MPI_SUCCESS
                  : bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory for a message handle");
}

int PMPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
{
    static const char fn[] = "MPI_Mprobe";
    int rc = probe_check(fn, source, tag, comm, message);
    if (rc)
        return rc;
    if (source == MPI_PROC_NULL) {
        *message = MPI_MESSAGE_NO_PROC;
        if (status)
            bm_mpi_status_proc_null(status);
        return MPI_SUCCESS;
    }
    bool found = false;
    struct bm_mpi_message *m;
    if ((rc = message_alloc(comm, fn, &m)))
        return rc;
    /* bm_pml_improbe progresses once when it finds nothing. */
    while ((rc = improbe(fn, source, tag, comm, m, &found, message, status)) == MPI_SUCCESS &&
           !found)
        ;
    if (!found)
        free(m);
    return rc;
}
BM_MPI_ALIAS(Mprobe);

int PMPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                 MPI_Status *status)
{
    static const char fn[] = "MPI_Improbe";
    int rc = probe_check(fn, source, tag, comm, message);
    if (rc)
        return rc;
    if (!flag)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL flag pointer");
    if (source == MPI_PROC_NULL) {
        *flag = 1;
        *message = MPI_MESSAGE_NO_PROC;
        if (status)
            bm_mpi_status_proc_null(status);
        return MPI_SUCCESS;
    }
    bool found = false;
    struct bm_mpi_message *m;
    if ((rc = message_alloc(comm, fn, &m)))
        return rc;
    rc = improbe(fn, source, tag, comm, m, &found, message, status);
    if (!found)
        free(m);
    *flag = found;
    return rc;
}
BM_MPI_ALIAS(Improbe);

/* Checks of Mrecv/Imrecv: a message from a matched probe, a valid buffer. */
static int mrecv_check(const char *fn, void *buf, int count, MPI_Datatype *dtp,
                       MPI_Message *message)
{
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (!message)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL message pointer");
    MPI_Message m = *message;
    if (m == MPI_MESSAGE_NULL || m->magic != BM_MPI_MAGIC_MESSAGE)
        return bm_mpi_error(NULL, MPI_ERR_REQUEST, fn,
                            "%s is not a message from MPI_Mprobe/MPI_Improbe (or it was received "
                            "already)",
                            m == MPI_MESSAGE_NULL ? "MPI_MESSAGE_NULL" : "the handle");
    MPI_Comm comm = m == MPI_MESSAGE_NO_PROC ? MPI_COMM_NULL : m->comm;
    if (count == 0 && *dtp == MPI_DATATYPE_NULL)
        *dtp = MPI_BYTE; /* as bm_mpi_p2p_check: MPICH accepts it */
    MPI_Datatype dt = *dtp;
    if ((rc = bm_mpi_check_count(comm, count, fn)) || (rc = bm_mpi_check_datatype(comm, dt, fn)) ||
        (rc = bm_mpi_check_buffer(comm, buf, count, dt, fn)))
        return rc;
    return MPI_SUCCESS;
}

/* Post the receive of *message and release the handle (set to MPI_MESSAGE_NULL). */
static int mrecv_start(const char *fn, void *buf, int count, MPI_Datatype dt, MPI_Message *message,
                       struct bm_pml_request **req_out)
{
    MPI_Message m = *message;
    bm_status_t st = bm_mpi_p2p_imrecv(buf, count, dt, m->pml, req_out);
    if (st != BM_OK)
        return bm_mpi_p2p_pml_error(m->comm, st, fn, "matched receive", MPI_ANY_SOURCE);
    /* The PML consumed the message. */
    m->magic = 0;
    bm_mpi_comm_release(m->comm);
    free(m);
    *message = MPI_MESSAGE_NULL;
    return MPI_SUCCESS;
}

int PMPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
               MPI_Status *status)
{
    static const char fn[] = "MPI_Mrecv";
    int rc = mrecv_check(fn, buf, count, &datatype, message);
    if (rc)
        return rc;
    if (*message == MPI_MESSAGE_NO_PROC) {
        *message = MPI_MESSAGE_NULL;
        if (status)
            bm_mpi_status_proc_null(status);
        return MPI_SUCCESS;
    }
    MPI_Comm comm = (*message)->comm;
    bm_mpi_comm_retain(comm); /* for the error report after the handle is gone */
    struct bm_pml_request *req;
    if ((rc = mrecv_start(fn, buf, count, datatype, message, &req))) {
        bm_mpi_comm_release(comm);
        return rc;
    }
    struct bm_pml_status ps;
    bm_pml_request_wait(req, &ps);
    bm_pml_request_free(req);
    if (status)
        bm_mpi_status_from_pml(status, &ps);
    if (ps.error == BM_ERR_TRUNCATE)
        rc = bm_mpi_p2p_truncate_error(comm, fn, &ps,
                                       bm_mpi_type_packed_bytes(datatype, (size_t)count));
    else if (ps.error != BM_OK)
        rc = bm_mpi_p2p_pml_error(comm, ps.error, fn, "matched receive", ps.source);
    bm_mpi_comm_release(comm);
    return rc;
}
BM_MPI_ALIAS(Mrecv);

int PMPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
                MPI_Request *request)
{
    static const char fn[] = "MPI_Imrecv";
    int rc = mrecv_check(fn, buf, count, &datatype, message);
    if (rc)
        return rc;
    if (!request)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL request pointer");
    MPI_Message m = *message;
    bool no_proc = m == MPI_MESSAGE_NO_PROC;
    /* A request of the point-to-point kind: Wait/Test complete it as any receive. */
    MPI_Request r = bm_mpi_p2p_request_new(BM_MPI_REQ_RECV, 0, false, buf, count, datatype,
                                           no_proc ? MPI_PROC_NULL : MPI_ANY_SOURCE, MPI_ANY_TAG,
                                           no_proc ? MPI_COMM_SELF : m->comm);
    if (!r)
        return bm_mpi_error(no_proc ? NULL : m->comm, MPI_ERR_NO_MEM, fn,
                            "out of memory for a request");
    if (no_proc) {
        bm_mpi_status_proc_null(&r->status);
        *message = MPI_MESSAGE_NULL;
    } else if ((rc = mrecv_start(fn, buf, count, datatype, message, &r->pml))) {
        bm_mpi_request_release(r);
        return rc;
    }
    r->active = true;
    *request = r;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Imrecv);
