/* MPI point-to-point entry points: blocking, immediate, synchronous, ready
 * and buffered sends, receives, Sendrecv, probes, persistent requests and
 * their start, MPI_Get_count, and the buffer of MPI_Buffer_attach. Each
 * checks its arguments (the error classes the standard names, through the
 * communicator's error handler), translates the communicator into the PML's
 * terms (point-to-point context id, own rank, world rank of the peer) and
 * hands the bytes to the PML; MPI_PROC_NULL peers complete at once with the
 * standard's status (source MPI_PROC_NULL, tag MPI_ANY_TAG, count 0).
 * A message is its packed data (count * size bytes): a type that is one
 * run in memory goes to the PML as bytes (the fast path), any other through
 * the PML's datatype calls, which pack and unpack fragment by fragment. */
#include "mpi/mpi_internal.h"
#include "mpi/mpi_request.h"
#include "pml/pml.h"
#include "util/dtype.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers --------------------------------------------------------------- */

/* (count, dt) at buf is one run of bytes: where it starts. */
static inline bool msg_contig(const void *buf, int count, MPI_Datatype dt, const char **at_out)
{
    if (dt->contiguous) {
        *at_out = buf;
        return true;
    }
    if (bm_util_dtype_contig(dt->dt, (size_t)count)) {
        *at_out = (const char *)buf + dt->dt->pdisp;
        return true;
    }
    return false;
}

/* Start a send of (count, dt) at buf. or_done: a small standard send may
 * complete inside the call, leaving *req_out NULL. Inlined into the
 * per-message callers of this file (no call layer on MPI_Isend). */
static inline __attribute__((always_inline)) bm_status_t
p2p_isend(const void *buf, int count, MPI_Datatype dt, int dst_world, MPI_Comm comm, int tag,
          enum bm_pml_send_mode mode, bool or_done, struct bm_pml_request **req_out)
{
    const char *at;
    size_t bytes = bm_mpi_type_packed_bytes(dt, (size_t)count);
    if (msg_contig(buf, count, dt, &at))
        return or_done ? bm_pml_isend_or_done(at, bytes, dst_world, comm->context_id, comm->rank,
                                              tag, mode, req_out)
                       : bm_pml_isend(at, bytes, dst_world, comm->context_id, comm->rank, tag, mode,
                                      req_out);
    return or_done ? bm_pml_isend_or_done_dt(buf, (size_t)count, dt->dt, dst_world,
                                             comm->context_id, comm->rank, tag, mode, req_out)
                   : bm_pml_isend_dt(buf, (size_t)count, dt->dt, dst_world, comm->context_id,
                                     comm->rank, tag, mode, req_out);
}

bm_status_t bm_mpi_p2p_isend(const void *buf, int count, MPI_Datatype dt, int dst_world,
                             MPI_Comm comm, int tag, enum bm_pml_send_mode mode, bool or_done,
                             struct bm_pml_request **req_out)
{
    return p2p_isend(buf, count, dt, dst_world, comm, tag, mode, or_done, req_out);
}

bm_status_t bm_mpi_p2p_irecv(void *buf, int count, MPI_Datatype dt, MPI_Comm comm, int src, int tag,
                             struct bm_pml_request **req_out)
{
    const char *at;
    if (msg_contig(buf, count, dt, &at))
        return bm_pml_irecv((char *)(uintptr_t)at, bm_mpi_type_packed_bytes(dt, (size_t)count),
                            comm->context_id, src, tag, req_out);
    return bm_pml_irecv_dt(buf, (size_t)count, dt->dt, comm->context_id, src, tag, req_out);
}

bm_status_t bm_mpi_p2p_imrecv(void *buf, int count, MPI_Datatype dt, struct bm_pml_message *msg,
                              struct bm_pml_request **req_out)
{
    const char *at;
    if (msg_contig(buf, count, dt, &at))
        return bm_pml_imrecv((char *)(uintptr_t)at, bm_mpi_type_packed_bytes(dt, (size_t)count),
                             msg, req_out);
    return bm_pml_imrecv_dt(buf, (size_t)count, dt->dt, msg, req_out);
}

/* MPI_ERROR is left alone: only the multiple-completion calls write it
 * (MPI-3.1 section 3.2.5; MPICH's pt2pt/mprobe checks that MPI_Mprobe and
 * MPI_Mrecv from MPI_PROC_NULL keep it). */
void bm_mpi_status_proc_null(MPI_Status *s)
{
    s->MPI_SOURCE = MPI_PROC_NULL;
    s->MPI_TAG = MPI_ANY_TAG;
    s->bm_count = 0;
    s->bm_cancelled = 0;
}

/* The status of a send that completed as it started (buffered, or sent inline). */
static void status_sent(MPI_Status *s, MPI_Comm comm, int tag, size_t bytes)
{
    s->MPI_SOURCE = comm->rank;
    s->MPI_TAG = tag;
    s->bm_count = bytes;
}

void bm_mpi_status_from_pml(MPI_Status *s, const struct bm_pml_status *ps)
{
    s->MPI_SOURCE = ps->source;
    s->MPI_TAG = ps->tag;
    s->bm_count = ps->count;
    s->bm_cancelled = ps->cancelled;
}

/* Every argument valid, in one inline expression: the per-message path
 * pays a few compares and calls the checks below only to name an error. */
static inline bool args_valid(MPI_Comm comm, const void *buf, int count, MPI_Datatype dt, int peer,
                              int tag, bool recv)
{
    return bm_mpi_state == BM_MPI_STATE_RUNNING && bm_mpi_comm_valid(comm) && count >= 0 &&
           dt != MPI_DATATYPE_NULL && dt->magic == BM_MPI_MAGIC_DATATYPE && dt->committed &&
           (buf != NULL || count == 0 || dt->size == 0 || !dt->predefined) &&
           ((tag >= 0 && tag <= BM_MPI_TAG_UB) || (recv && tag == MPI_ANY_TAG)) &&
           ((peer >= 0 && peer < comm->peer_size) || peer == MPI_PROC_NULL ||
            (recv && peer == MPI_ANY_SOURCE));
}

/* Checks shared by every operation with a buffer and a peer. */
int bm_mpi_p2p_check(const char *fn, MPI_Comm comm, const void *buf, int count, MPI_Datatype *dtp,
                     int peer, int tag, bool recv)
{
    if (args_valid(comm, buf, count, *dtp, peer, tag, recv))
        return MPI_SUCCESS;
    /* No elements of MPI_DATATYPE_NULL (pt2pt/recvnull receives that from
     * MPI_PROC_NULL): erroneous by the letter of MPI-3.1, accepted by MPICH,
     * which checks the type only when count > 0; Open MPI 4.1 refuses it.
     * We accept it as MPICH does: it is zero bytes whatever the type. */
    if (count == 0 && *dtp == MPI_DATATYPE_NULL)
        *dtp = MPI_BYTE;
    MPI_Datatype dt = *dtp;
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)) ||
        (rc = bm_mpi_check_count(comm, count, fn)) || (rc = bm_mpi_check_datatype(comm, dt, fn)) ||
        (rc = bm_mpi_check_buffer(comm, buf, count, dt, fn)) ||
        (rc = bm_mpi_check_tag(comm, tag, recv, fn)) ||
        (rc = bm_mpi_check_rank(
             comm, peer, BM_MPI_RANK_ALLOW_PROC_NULL | (recv ? BM_MPI_RANK_ALLOW_ANY : 0), fn)))
        return rc;
    return MPI_SUCCESS;
}

void bm_mpi_p2p_fault_text(char *what, size_t len, bool recv, int peer, int tag, const void *buf,
                           size_t bytes, int st)
{
    const char *op = recv ? "receive" : "send";
    if (st == BM_ERR_FAULT)
        snprintf(what, len,
                 "%s of %zu bytes %s rank %d (tag %d) failed: its buffer [%p, %p) is not "
                 "accessible, part of it is not mapped in this process%s (does the count run "
                 "past the end of the buffer?)",
                 op, bytes, recv ? "from" : "to", peer, tag, buf,
                 (const void *)((const char *)buf + bytes),
                 recv ? " or is bitmover's shared memory" : "");
    else
        snprintf(what, len,
                 "%s of %zu bytes %s rank %d (tag %d) at %p failed: rank %d's %s buffer is not "
                 "accessible, part of it is not mapped in rank %d's process%s (does its count "
                 "run past the end of its buffer?)",
                 op, bytes, recv ? "from" : "to", peer, tag, buf, peer, recv ? "send" : "receive",
                 peer, recv ? "" : " or is bitmover's shared memory");
}

static __attribute__((noinline, cold)) int p2p_fault_error(MPI_Comm comm, const char *fn, bool recv,
                                                           int peer, int tag, const void *buf,
                                                           size_t bytes, bm_status_t st)
{
    char what[BM_MPI_REQ_WHAT_MAX];
    bm_mpi_p2p_fault_text(what, sizeof(what), recv, peer, tag, buf, bytes, st);
    return bm_mpi_error(comm, MPI_ERR_BUFFER, fn, "%s", what);
}

int bm_mpi_p2p_pml_error(MPI_Comm comm, bm_status_t st, const char *fn, const char *what, int peer)
{
    struct bm_pml_fault f;
    /* Only a send's: bm_pml_last_fault records the sender side's faults
     * (rdma.c send_fault), never a receive's own buffer. */
    if ((st == BM_ERR_FAULT || st == BM_ERR_PEER_FAULT) && strcmp(what, "send") == 0 &&
        bm_pml_last_fault(&f))
        return p2p_fault_error(comm, fn, false, peer, f.tag, f.buf, f.bytes, st);
    return bm_mpi_error(comm, bm_mpi_class_of_status(st), fn, "%s (peer rank %d) failed: %s", what,
                        peer, bm_status_str(st));
}

int bm_mpi_p2p_truncate_error(MPI_Comm comm, const char *fn, const struct bm_pml_status *ps,
                              size_t capacity)
{
    return bm_mpi_error(comm, MPI_ERR_TRUNCATE, fn,
                        "the message from rank %d with tag %d is longer than the %zu-byte receive "
                        "buffer; only the first %zu bytes were received. Post a larger receive "
                        "(MPI_Probe tells the size).",
                        ps->source, ps->tag, capacity, ps->count);
}

/* ---- buffered sends ---------------------------------------------------------------
 * Messages are packed into the attached buffer and sent from there. The
 * buffer is used exactly as the standard's model says (MPI-3.1 section
 * 3.6.1): a circular, contiguous-space allocation in which each message takes
 * its packed size plus MPI_BSEND_OVERHEAD, and space comes back as the
 * oldest messages complete. So a buffer sized by the standard's formula
 * (the sum of MPI_Pack_size + MPI_BSEND_OVERHEAD of the messages in
 * transit) always has room. The data of a message starts at the first
 * 16-byte aligned address of its span (the overhead covers the padding);
 * the bookkeeping lives outside the buffer. */

struct bsend_msg {
    struct bsend_msg *next;     /* in allocation order: oldest first */
    struct bm_pml_request *pml; /* NULL once complete */
    size_t off, len;            /* the span: len = packed size + MPI_BSEND_OVERHEAD */
};

static struct {
    char *buf;
    size_t size;
    struct bsend_msg *head, *tail; /* oldest, newest */
} bsend;

#define BSEND_ALIGN 16
_Static_assert(MPI_BSEND_OVERHEAD >= BSEND_ALIGN - 1, "the overhead must cover the alignment");

/* Retire completed transfers; give back the spans of the oldest messages
 * once they are complete (a newer one completing first waits its turn, as
 * in the circular model). */
static void bsend_reap(void)
{
    for (struct bsend_msg *m = bsend.head; m; m = m->next)
        if (m->pml && bm_pml_request_done(m->pml)) {
            bm_pml_request_free(m->pml);
            m->pml = NULL;
        }
    while (bsend.head && !bsend.head->pml) {
        struct bsend_msg *m = bsend.head;
        bsend.head = m->next;
        free(m);
    }
    if (!bsend.head)
        bsend.tail = NULL;
}

/* Where a span of len bytes goes next in the circular order, if it fits. */
static bool bsend_fit(size_t len, size_t *off_out)
{
    if (!bsend.head) {
        *off_out = 0;
        return len <= bsend.size;
    }
    size_t head = bsend.head->off, end = bsend.tail->off + bsend.tail->len;
    bool wrapped = bsend.tail->off < head;
    if (!wrapped && bsend.size - end >= len) {
        *off_out = end;
        return true;
    }
    if (!wrapped && head >= len) { /* wrap around to the start */
        *off_out = 0;
        return true;
    }
    if (wrapped && head - end >= len) {
        *off_out = end;
        return true;
    }
    return false;
}

static int bsend_start_locked(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
                              MPI_Comm comm, const char *fn)
{
    size_t bytes = bm_mpi_type_packed_bytes(dt, (size_t)count);
    size_t need = bytes + MPI_BSEND_OVERHEAD;
    if (!bsend.buf)
        return bm_mpi_error(comm, MPI_ERR_BUFFER, fn,
                            "no buffer is attached: a buffered send of %zu bytes needs "
                            "MPI_Buffer_attach with at least %zu bytes (message + "
                            "MPI_BSEND_OVERHEAD)",
                            bytes, need);
    size_t off;
    bsend_reap();
    if (!bsend_fit(need, &off)) {
        bm_pml_progress();
        bsend_reap();
        if (!bsend_fit(need, &off))
            return bm_mpi_error(comm, MPI_ERR_BUFFER, fn,
                                "the attached buffer (%zu bytes) has no room for a buffered send "
                                "of %zu bytes (%zu with MPI_BSEND_OVERHEAD) while earlier "
                                "buffered messages are in transit; attach a larger buffer",
                                bsend.size, bytes, need);
    }
    struct bsend_msg *m = malloc(sizeof(*m));
    if (!m)
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
    uintptr_t at = ((uintptr_t)(bsend.buf + off) + BSEND_ALIGN - 1) & ~(uintptr_t)(BSEND_ALIGN - 1);
    char *data = (char *)at;
    if (bytes)
        bm_mpi_type_pack(dt, buf, (size_t)count, 0, data, bytes);
    bm_status_t st = bm_pml_isend(data, bytes, bm_mpi_comm_peer_world(comm, dest), comm->context_id,
                                  comm->rank, tag, BM_PML_SEND_STANDARD, &m->pml);
    if (st != BM_OK) {
        free(m);
        return bm_mpi_p2p_pml_error(comm, st, fn, "buffered send", dest);
    }
    m->off = off;
    m->len = need;
    m->next = NULL;
    if (bsend.tail)
        bsend.tail->next = m;
    else
        bsend.head = m;
    bsend.tail = m;
    return MPI_SUCCESS;
}

/* The attached buffer is process-wide: under MPI_THREAD_MULTIPLE the object lock guards it. */
static int bsend_start(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
                       MPI_Comm comm, const char *fn)
{
    bm_mpi_bsend_lock();
    int rc = bsend_start_locked(buf, count, dt, dest, tag, comm, fn);
    bm_mpi_bsend_unlock();
    return rc;
}

int PMPI_Buffer_attach(void *buffer, int size)
{
    static const char fn[] = "MPI_Buffer_attach";
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (size < 0)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "negative buffer size %d", size);
    if (!buffer && size > 0)
        return bm_mpi_error(NULL, MPI_ERR_BUFFER, fn, "NULL buffer of %d bytes", size);
    bm_mpi_bsend_lock();
    if (bsend.buf) {
        size_t had = bsend.size;
        bm_mpi_bsend_unlock();
        return bm_mpi_error(NULL, MPI_ERR_BUFFER, fn,
                            "a buffer of %zu bytes is already attached; detach it first", had);
    }
    bsend.buf = buffer;
    bsend.size = (size_t)size;
    bm_mpi_bsend_unlock();
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Buffer_attach);

int PMPI_Buffer_detach(void *buffer_addr, int *size)
{
    static const char fn[] = "MPI_Buffer_detach";
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (!buffer_addr || !size)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL %s pointer",
                            buffer_addr ? "size" : "buffer address");
    /* The standard: detach blocks until every buffered message is sent. */
    bm_mpi_bsend_lock();
    for (;;) {
        bsend_reap();
        if (!bsend.head)
            break;
        bm_pml_progress();
    }
    *(void **)buffer_addr = bsend.buf;
    *size = (int)bsend.size;
    bsend.buf = NULL;
    bsend.size = 0;
    bm_mpi_bsend_unlock();
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Buffer_detach);

/* ---- requests ------------------------------------------------------------------------- */

int bm_mpi_p2p_start(MPI_Request r, const char *fn)
{
    MPI_Comm comm = r->comm;
    size_t bytes = bm_mpi_type_packed_bytes(r->dt, (size_t)r->count);
    bm_status_t st;
    r->pml = NULL;
    if (r->kind != BM_MPI_REQ_RECV || r->peer == MPI_PROC_NULL)
        memset(&r->status, 0, sizeof(r->status)); /* completes at start: status here */
    if (r->peer == MPI_PROC_NULL) {
        bm_mpi_status_proc_null(&r->status);
        r->active = true;
        return MPI_SUCCESS;
    }
    if (r->kind == BM_MPI_REQ_RECV) {
        st = bm_mpi_p2p_irecv(r->buf, r->count, r->dt, comm, r->peer, r->tag, &r->pml);
    } else if (r->mode == BM_MPI_SEND_BUFFERED) {
        int rc = bsend_start(r->buf, r->count, r->dt, r->peer, r->tag, comm, fn);
        if (rc)
            return rc;
        status_sent(&r->status, comm, r->tag, bytes);
        r->active = true;
        return MPI_SUCCESS;
    } else {
        st = p2p_isend(r->buf, r->count, r->dt, bm_mpi_comm_peer_world(comm, r->peer), comm, r->tag,
                       (enum bm_pml_send_mode)r->mode, true, &r->pml);
        if (st == BM_OK && !r->pml) /* sent inline: complete already */
            status_sent(&r->status, comm, r->tag, bytes);
    }
    if (st != BM_OK)
        return bm_mpi_p2p_pml_error(comm, st, fn, r->kind == BM_MPI_REQ_RECV ? "receive" : "send",
                                    r->peer);
    r->active = true;
    return MPI_SUCCESS;
}

MPI_Request bm_mpi_p2p_request_new(enum bm_mpi_req_kind kind, int mode, bool persistent,
                                   const void *buf, int count, MPI_Datatype dt, int peer, int tag,
                                   MPI_Comm comm)
{
    MPI_Request r = bm_mpi_request_new();
    if (!r)
        return NULL;
    r->magic = BM_MPI_MAGIC_REQUEST;
    r->ops = &bm_mpi_p2p_request_ops;
    r->state = NULL;
    r->kind = (uint8_t)kind;
    r->mode = (uint8_t)mode;
    r->persistent = persistent;
    r->comm = comm;
    bm_mpi_comm_retain(comm);
    r->buf = (void *)(uintptr_t)buf;
    r->count = count;
    r->dt = dt;
    r->peer = peer;
    r->tag = tag;
    r->active = false;
    r->pml = NULL;
    r->next_free = NULL;
    return r;
}

static int request_make(const char *fn, MPI_Request *out, enum bm_mpi_req_kind kind, int mode,
                        bool persistent, const void *buf, int count, MPI_Datatype dt, int peer,
                        int tag, MPI_Comm comm)
{
    int rc = bm_mpi_p2p_check(fn, comm, buf, count, &dt, peer, tag, kind == BM_MPI_REQ_RECV);
    if (rc)
        return rc;
    if (!out)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL request pointer");
    MPI_Request r = bm_mpi_p2p_request_new(kind, mode, persistent, buf, count, dt, peer, tag, comm);
    if (!r)
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory for a request");
    if (persistent)
        memset(&r->status, 0, sizeof(r->status));
    if (!persistent && kind == BM_MPI_REQ_RECV && peer != MPI_PROC_NULL) {
        /* MPI_Irecv: bm_mpi_p2p_start's receive, from the arguments at hand. */
        bm_status_t st =
            bm_mpi_p2p_irecv((void *)(uintptr_t)buf, count, dt, comm, peer, tag, &r->pml);
        if (st != BM_OK) {
            rc = bm_mpi_p2p_pml_error(comm, st, fn, "receive", peer);
            bm_mpi_request_release(r);
            return rc;
        }
        r->active = true;
    } else if (!persistent && (rc = bm_mpi_p2p_start(r, fn))) {
        bm_mpi_request_release(r);
        return rc;
    }
    /* A persistent request reads dt at every start, and the program may
     * free the type before that; MPI_Request_free releases it. */
    if (persistent)
        bm_mpi_type_retain(dt);
    *out = r;
    return MPI_SUCCESS;
}

/* ---- blocking sends and receives ------------------------------------------------------------ */

static int send_blocking(const char *fn, const void *buf, int count, MPI_Datatype dt, int dest,
                         int tag, MPI_Comm comm, int mode)
{
    int rc = bm_mpi_p2p_check(fn, comm, buf, count, &dt, dest, tag, false);
    if (rc)
        return rc;
    if (dest == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if (mode == BM_MPI_SEND_BUFFERED)
        return bsend_start(buf, count, dt, dest, tag, comm, fn);
    const char *at;
    bm_status_t st;
    if (msg_contig(buf, count, dt, &at)) {
        st = bm_pml_send(at, bm_mpi_type_packed_bytes(dt, (size_t)count),
                         bm_mpi_comm_peer_world(comm, dest), comm->context_id, comm->rank, tag,
                         (enum bm_pml_send_mode)mode);
    } else {
        struct bm_pml_request *req;
        st = bm_mpi_p2p_isend(buf, count, dt, bm_mpi_comm_peer_world(comm, dest), comm, tag,
                              (enum bm_pml_send_mode)mode, true, &req);
        if (st == BM_OK && req) {
            struct bm_pml_status ps;
            bm_pml_request_wait(req, &ps);
            if (ps.error != BM_OK)
                bm_pml_fault_claim(req);
            bm_pml_request_free(req);
            st = (bm_status_t)ps.error;
        }
    }
    /* A fault's buffer and tag come from the PML (bm_pml_last_fault): kept
     * here they would cost MPI_Send's success path three instructions. */
    return st == BM_OK ? MPI_SUCCESS : bm_mpi_p2p_pml_error(comm, st, fn, "send", dest);
}

int PMPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    return send_blocking("MPI_Send", buf, count, datatype, dest, tag, comm, BM_PML_SEND_STANDARD);
}
BM_MPI_ALIAS(Send);

int PMPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    return send_blocking("MPI_Ssend", buf, count, datatype, dest, tag, comm,
                         BM_PML_SEND_SYNCHRONOUS);
}
BM_MPI_ALIAS(Ssend);

int PMPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    return send_blocking("MPI_Rsend", buf, count, datatype, dest, tag, comm, BM_PML_SEND_READY);
}
BM_MPI_ALIAS(Rsend);

int PMPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    return send_blocking("MPI_Bsend", buf, count, datatype, dest, tag, comm, BM_MPI_SEND_BUFFERED);
}
BM_MPI_ALIAS(Bsend);

/* MPI_Recv of a non-contiguous (count, dt): the PML copies a small eager
 * message of a type of large blocks into a bounce on this frame and this
 * thread unpacks it once the receive completed (pml.h
 * bm_pml_irecv_dt_defer). Out of line: the contiguous path keeps its frame. */
static __attribute__((noinline)) bm_status_t recv_dt(void *buf, int count, MPI_Datatype dt,
                                                     MPI_Comm comm, int src, int tag,
                                                     struct bm_pml_status *ps)
{
    _Alignas(64) char bounce[BM_PML_RECV_DEFER_MAX];
    struct bm_pml_request *req;
    bm_status_t st =
        bm_pml_irecv_dt_defer(buf, (size_t)count, dt->dt, comm->context_id, src, tag, bounce, &req);
    if (st != BM_OK)
        return st;
    bm_pml_request_wait(req, ps);
    bm_pml_recv_dt_finish(req);
    bm_pml_request_free(req);
    return BM_OK;
}

int PMPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
              MPI_Status *status)
{
    static const char fn[] = "MPI_Recv";
    int rc = bm_mpi_p2p_check(fn, comm, buf, count, &datatype, source, tag, true);
    if (rc)
        return rc;
    if (source == MPI_PROC_NULL) {
        if (status)
            bm_mpi_status_proc_null(status);
        return MPI_SUCCESS;
    }
    size_t bytes = bm_mpi_type_packed_bytes(datatype, (size_t)count);
    struct bm_pml_status ps;
    const char *at;
    bm_status_t st;
    if (__builtin_expect(msg_contig(buf, count, datatype, &at), 1))
        st = bm_pml_recv_blocking((char *)(uintptr_t)at, bytes, comm->context_id, source, tag,
                                  source >= 0 ? bm_mpi_comm_peer_world(comm, source) : -1, &ps);
    else
        st = recv_dt(buf, count, datatype, comm, source, tag, &ps);
    if (st != BM_OK)
        return bm_mpi_p2p_pml_error(comm, st, fn, "receive", source);
    if (status)
        bm_mpi_status_from_pml(status, &ps);
    if (__builtin_expect(ps.error == BM_OK, 1))
        return MPI_SUCCESS;
    if (ps.error == BM_ERR_TRUNCATE)
        return bm_mpi_p2p_truncate_error(comm, fn, &ps, bytes);
    if (ps.error == BM_ERR_FAULT || ps.error == BM_ERR_PEER_FAULT)
        return p2p_fault_error(comm, fn, true, ps.source, ps.tag, buf, ps.count, ps.error);
    return bm_mpi_p2p_pml_error(comm, ps.error, fn, "receive", ps.source);
}
BM_MPI_ALIAS(Recv);

/* ---- immediate operations -------------------------------------------------------------------- */

int PMPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request)
{
    static const char fn[] = "MPI_Isend";
    /* The message-rate path: bm_mpi_p2p_start's standard send inline, from
     * the arguments at hand. Invalid arguments, MPI_PROC_NULL and a failed
     * allocation go through request_make, which reports them. */
    MPI_Request r;
    if (__builtin_expect(!args_valid(comm, buf, count, datatype, dest, tag, false) || !request ||
                             dest == MPI_PROC_NULL,
                         0) ||
        !(r = bm_mpi_p2p_request_new(BM_MPI_REQ_SEND, BM_PML_SEND_STANDARD, false, buf, count,
                                     datatype, dest, tag, comm)))
        return request_make(fn, request, BM_MPI_REQ_SEND, BM_PML_SEND_STANDARD, false, buf, count,
                            datatype, dest, tag, comm);
    bm_status_t st = p2p_isend(buf, count, datatype, bm_mpi_comm_peer_world(comm, dest), comm, tag,
                               BM_PML_SEND_STANDARD, true, &r->pml);
    if (__builtin_expect(st != BM_OK, 0)) {
        int rc = bm_mpi_p2p_pml_error(comm, st, fn, "send", dest);
        bm_mpi_request_release(r);
        return rc;
    }
    if (!r->pml) { /* sent inline: complete already, its status here */
        r->status.MPI_ERROR = MPI_SUCCESS;
        r->status.bm_cancelled = 0;
        status_sent(&r->status, comm, tag, bm_mpi_type_packed_bytes(datatype, (size_t)count));
    }
    r->active = true;
    *request = r;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Isend);

int PMPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                MPI_Request *request)
{
    return request_make("MPI_Issend", request, BM_MPI_REQ_SEND, BM_PML_SEND_SYNCHRONOUS, false, buf,
                        count, datatype, dest, tag, comm);
}
BM_MPI_ALIAS(Issend);

int PMPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                MPI_Request *request)
{
    return request_make("MPI_Irsend", request, BM_MPI_REQ_SEND, BM_PML_SEND_READY, false, buf,
                        count, datatype, dest, tag, comm);
}
BM_MPI_ALIAS(Irsend);

int PMPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                MPI_Request *request)
{
    return request_make("MPI_Ibsend", request, BM_MPI_REQ_SEND, BM_MPI_SEND_BUFFERED, false, buf,
                        count, datatype, dest, tag, comm);
}
BM_MPI_ALIAS(Ibsend);

int PMPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
               MPI_Request *request)
{
    return request_make("MPI_Irecv", request, BM_MPI_REQ_RECV, 0, false, buf, count, datatype,
                        source, tag, comm);
}
BM_MPI_ALIAS(Irecv);

/* ---- persistent requests ------------------------------------------------------------------------
 */

int PMPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                   MPI_Comm comm, MPI_Request *request)
{
    return request_make("MPI_Send_init", request, BM_MPI_REQ_SEND, BM_PML_SEND_STANDARD, true, buf,
                        count, datatype, dest, tag, comm);
}
BM_MPI_ALIAS(Send_init);

int PMPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                    MPI_Comm comm, MPI_Request *request)
{
    return request_make("MPI_Ssend_init", request, BM_MPI_REQ_SEND, BM_PML_SEND_SYNCHRONOUS, true,
                        buf, count, datatype, dest, tag, comm);
}
BM_MPI_ALIAS(Ssend_init);

int PMPI_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                    MPI_Comm comm, MPI_Request *request)
{
    return request_make("MPI_Rsend_init", request, BM_MPI_REQ_SEND, BM_PML_SEND_READY, true, buf,
                        count, datatype, dest, tag, comm);
}
BM_MPI_ALIAS(Rsend_init);

int PMPI_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                    MPI_Comm comm, MPI_Request *request)
{
    return request_make("MPI_Bsend_init", request, BM_MPI_REQ_SEND, BM_MPI_SEND_BUFFERED, true, buf,
                        count, datatype, dest, tag, comm);
}
BM_MPI_ALIAS(Bsend_init);

int PMPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                   MPI_Request *request)
{
    return request_make("MPI_Recv_init", request, BM_MPI_REQ_RECV, 0, true, buf, count, datatype,
                        source, tag, comm);
}
BM_MPI_ALIAS(Recv_init);

/* ---- combined send and receive ------------------------------------------------------------------
 */

/* Receive (posted first, so that two ranks exchanging large messages never
 * wait on each other) and send, then wait for both. */
static int exchange(const char *fn, MPI_Comm comm, const void *sendbuf, int scount,
                    MPI_Datatype stype, int dest, int sendtag, void *recvbuf, int rcount,
                    MPI_Datatype rtype, int source, int recvtag, struct bm_pml_status *rs)
{
    struct bm_pml_request *rreq = NULL, *sreq = NULL;
    bm_status_t st;
    rs->source = MPI_PROC_NULL;
    rs->tag = MPI_ANY_TAG;
    rs->count = 0;
    rs->error = BM_OK;
    rs->cancelled = false;
    if (source != MPI_PROC_NULL &&
        (st = bm_mpi_p2p_irecv(recvbuf, rcount, rtype, comm, source, recvtag, &rreq)) != BM_OK)
        return bm_mpi_p2p_pml_error(comm, st, fn, "receive", source);
    if (dest != MPI_PROC_NULL &&
        (st = bm_mpi_p2p_isend(sendbuf, scount, stype, bm_mpi_comm_peer_world(comm, dest), comm,
                               sendtag, BM_PML_SEND_STANDARD, false, &sreq)) != BM_OK) {
        if (rreq) {
            bm_pml_request_cancel(rreq);
            bm_pml_request_wait(rreq, NULL);
            bm_pml_request_free(rreq);
        }
        return bm_mpi_p2p_pml_error(comm, st, fn, "send", dest);
    }
    if (sreq) {
        bm_pml_request_wait(sreq, NULL);
        bm_pml_request_free(sreq);
    }
    if (rreq) {
        bm_pml_request_wait(rreq, rs);
        bm_pml_request_free(rreq);
    }
    return MPI_SUCCESS;
}

static int exchange_result(const char *fn, MPI_Comm comm, const struct bm_pml_status *rs,
                           size_t rbytes, MPI_Status *status)
{
    if (status) {
        bm_mpi_status_from_pml(status, rs);
        if (rs->source == MPI_PROC_NULL)
            bm_mpi_status_proc_null(status);
    }
    if (rs->error == BM_ERR_TRUNCATE)
        return bm_mpi_p2p_truncate_error(comm, fn, rs, rbytes);
    if (rs->error != BM_OK)
        return bm_mpi_p2p_pml_error(comm, rs->error, fn, "receive", rs->source);
    return MPI_SUCCESS;
}

int PMPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                  MPI_Comm comm, MPI_Status *status)
{
    static const char fn[] = "MPI_Sendrecv";
    int rc;
    if ((rc = bm_mpi_p2p_check(fn, comm, sendbuf, sendcount, &sendtype, dest, sendtag, false)) ||
        (rc = bm_mpi_p2p_check(fn, comm, recvbuf, recvcount, &recvtype, source, recvtag, true)))
        return rc;
    size_t rbytes = bm_mpi_type_packed_bytes(recvtype, (size_t)recvcount);
    struct bm_pml_status rs;
    if ((rc = exchange(fn, comm, sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                       recvtype, source, recvtag, &rs)))
        return rc;
    return exchange_result(fn, comm, &rs, rbytes, status);
}
BM_MPI_ALIAS(Sendrecv);

int PMPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag,
                          int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    static const char fn[] = "MPI_Sendrecv_replace";
    int rc;
    if ((rc = bm_mpi_p2p_check(fn, comm, buf, count, &datatype, dest, sendtag, false)) ||
        (rc = bm_mpi_p2p_check(fn, comm, buf, count, &datatype, source, recvtag, true)))
        return rc;
    /* The message arrives packed in a staging buffer and is unpacked into
     * buf once the send from buf is done. */
    size_t bytes = bm_mpi_type_packed_bytes(datatype, (size_t)count);
    char *tmp = malloc(bytes ? bytes : 1);
    if (!tmp)
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "no memory for a %zu-byte staging buffer",
                            bytes);
    struct bm_pml_status rs;
    rc = exchange(fn, comm, buf, count, datatype, dest, sendtag, tmp, (int)bytes, MPI_BYTE, source,
                  recvtag, &rs);
    if (rc == MPI_SUCCESS && source != MPI_PROC_NULL && rs.count)
        bm_mpi_type_unpack(datatype, buf, (size_t)count, 0, tmp, rs.count);
    free(tmp);
    if (rc)
        return rc;
    return exchange_result(fn, comm, &rs, bytes, status);
}
BM_MPI_ALIAS(Sendrecv_replace);

/* ---- probes and counts
 * ---------------------------------------------------------------------------- */

static int probe_check(const char *fn, int source, int tag, MPI_Comm comm)
{
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)) ||
        (rc = bm_mpi_check_tag(comm, tag, true, fn)) ||
        (rc = bm_mpi_check_rank(comm, source, BM_MPI_RANK_ALLOW_PROC_NULL | BM_MPI_RANK_ALLOW_ANY,
                                fn)))
        return rc;
    return MPI_SUCCESS;
}

int PMPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    static const char fn[] = "MPI_Probe";
    int rc = probe_check(fn, source, tag, comm);
    if (rc)
        return rc;
    if (source == MPI_PROC_NULL) {
        if (status)
            bm_mpi_status_proc_null(status);
        return MPI_SUCCESS;
    }
    struct bm_pml_status ps;
    bm_status_t st = bm_pml_probe(comm->context_id, source, tag, &ps);
    if (st != BM_OK)
        return bm_mpi_p2p_pml_error(comm, st, fn, "probe", source);
    if (status)
        bm_mpi_status_from_pml(status, &ps);
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Probe);

int PMPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    static const char fn[] = "MPI_Iprobe";
    int rc = probe_check(fn, source, tag, comm);
    if (rc)
        return rc;
    if (!flag)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL flag pointer");
    if (source == MPI_PROC_NULL) {
        *flag = 1;
        if (status)
            bm_mpi_status_proc_null(status);
        return MPI_SUCCESS;
    }
    struct bm_pml_status ps;
    bool found = false;
    bm_status_t st = bm_pml_iprobe(comm->context_id, source, tag, &found, &ps);
    if (st != BM_OK)
        return bm_mpi_p2p_pml_error(comm, st, fn, "probe", source);
    *flag = found;
    if (found && status)
        bm_mpi_status_from_pml(status, &ps);
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Iprobe);

int PMPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
    static const char fn[] = "MPI_Get_count";
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (!status || !count)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL %s pointer", status ? "count" : "status");
    if ((rc = bm_mpi_check_datatype(NULL, datatype, fn)))
        return rc;
    *count = bm_mpi_type_count(datatype, status->bm_count);
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Get_count);
