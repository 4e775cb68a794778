/* MPI requests (the struct behind MPI_Request) and the request kinds that
 * plug into them. A request describes one operation; what the operation is
 * (a point-to-point transfer, a generalized request, a nonblocking or
 * persistent collective, a request-based RMA operation...) is its kind: a
 * const table of operations (struct bm_mpi_request_ops) that request.c calls
 * from every completion function (the Wait/Test families,
 * MPI_Request_get_status, MPI_Request_free, MPI_Cancel, MPI_Start/Startall)
 * without knowing the kind. A new kind adds a table in its own file and
 * never edits request.c. Point-to-point is the kind every message passes
 * through, so request.c tests for it first and finishes it inline (the
 * message-rate path); every other kind goes through its table.
 *
 * Persistent requests keep their arguments and are started any number of
 * times; between a completion and the next MPI_Start they are inactive, and
 * Wait/Test on them return at once with an empty status (MPI-3.1 section
 * 3.7.3). src/mpi/README.md says how to add a kind, with an example. */
#ifndef BM_MPI_REQUEST_H
#define BM_MPI_REQUEST_H

#include "mpi.h"
#include "pml/pml.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BM_MPI_MAGIC_REQUEST 0x72657175U /* "requ" */

/* What a point-to-point request does (the p2p kind's own field). */
enum bm_mpi_req_kind {
    BM_MPI_REQ_SEND,
    BM_MPI_REQ_RECV,
    BM_MPI_REQ_OTHER, /* not point-to-point: r->ops says what */
};

/* Send modes beyond the PML's: buffered sends are copied here first. */
#define BM_MPI_SEND_BUFFERED 16

/* Longest description of a failed operation (bm_mpi_request_ops.query). */
#define BM_MPI_REQ_WHAT_MAX 256

/* The operations of a request kind. Every entry is required (the kind
 * provides a function even when it has nothing to do: see the
 * bm_mpi_request_no_* helpers); bm_mpi_request_create checks this once.
 * Calls come from one thread at a time (MPI_THREAD_SERIALIZED at most).
 * The request r passed in is always a live request of this kind. */
struct bm_mpi_request_ops {
    /* For messages: "generalized request", "MPI_Ibcast". */
    const char *name;
    /* Advance the operation without blocking and say whether it is complete.
     * Called on active requests by every Wait/Test/Request_get_status, as
     * often as they like, including after it once returned true (it must
     * then keep returning true). The completion functions call
     * bm_pml_progress themselves between polls; this function need not. */
    bool (*progress)(MPI_Request r);
    /* The result of a complete operation: fill *status (never NULL) with
     * MPI_SOURCE, MPI_TAG, the count (bm_count) and the cancelled flag, and
     * return the operation's MPI error code (MPI_SUCCESS, a class or a code
     * from MPI_Add_error_code). On failure write into what (what_len bytes)
     * a sentence saying what failed, for the error handler's message. May be
     * called more than once (MPI_Request_get_status, then MPI_Wait). The
     * core sets status->MPI_ERROR itself where the standard says so. */
    int (*query)(MPI_Request r, MPI_Status *status, char *what, size_t what_len);
    /* The handle is going away: after the completion of a non-persistent
     * request (right after query), or at MPI_Request_free (then the
     * operation may still be active: the kind lets it finish in the
     * background, as the standard allows, and frees what it holds then).
     * Return true when the core may recycle r at once; false when the kind
     * keeps r (it must call bm_mpi_request_destroy(r) later). Returns the
     * error code of the release through *err (MPI_SUCCESS normally). */
    bool (*release)(MPI_Request r, int *err);
    /* MPI_Cancel on an active request: try to cancel; a cancel that cannot
     * succeed leaves the operation to complete normally (query then reports
     * cancelled = 0). Returns an MPI error code. */
    int (*cancel)(MPI_Request r);
    /* MPI_Start on an inactive persistent request of this kind (never called
     * for non-persistent kinds: use bm_mpi_request_no_start). Start the
     * operation; MPI_SUCCESS or the error code after the error handler ran.
     * fn names the calling function for messages. */
    int (*start)(MPI_Request r, const char *fn);
};

struct bm_mpi_request {
    uint32_t magic;
    uint8_t kind;                         /* enum bm_mpi_req_kind */
    uint8_t mode;                         /* p2p: enum bm_pml_send_mode, or BM_MPI_SEND_BUFFERED */
    bool persistent;                      /* made by MPI_*_init */
    bool active;                          /* started and not yet completed by a Wait/Test */
    const struct bm_mpi_request_ops *ops; /* the kind */
    MPI_Comm comm; /* for the error handler (MPI_COMM_NULL: MPI_COMM_WORLD's) */
    /* point-to-point */
    struct bm_pml_request *pml; /* the transfer; NULL when it completed at start */
    MPI_Status status;          /* the result when pml is NULL */
    void *buf;                  /* the operation's arguments (kept for persistent requests) */
    int count;
    MPI_Datatype dt; /* persistent requests hold a reference (bm_mpi_type_retain) */
    int peer;        /* destination or source rank in comm, MPI_ANY_SOURCE, MPI_PROC_NULL */
    int tag;
    /* other kinds: their own state */
    void *state;
    struct bm_mpi_request *next_free; /* in the cache of released requests */
};

/* The point-to-point kind (request.c completes it, p2p.c starts it). */
extern const struct bm_mpi_request_ops bm_mpi_p2p_request_ops;

/* A request from a cache of released ones (no malloc per Isend or Irecv on
 * the message-rate path), not cleared: the caller sets every field; NULL
 * when out of memory. For the p2p kind; other kinds use
 * bm_mpi_request_create. */
MPI_Request bm_mpi_request_new(void);
/* Invalidate r and keep it for reuse. */
void bm_mpi_request_release(MPI_Request r);
/* Free the cached requests (MPI_Finalize). */
void bm_mpi_request_cache_fini(void);
/* The same under MPI_THREAD_MULTIPLE: a cache per thread (mt.c). */
MPI_Request bm_mpi_request_new_mt(void);
void bm_mpi_request_release_mt(MPI_Request r);
void bm_mpi_request_tcache_fini(void);

/* A request of kind ops on comm (MPI_COMM_NULL when it belongs to no
 * communicator; errors then go to MPI_COMM_WORLD's handler) holding state.
 * active: the operation is running (nonblocking operations) or not yet
 * (persistent ones, which MPI_Start starts through ops->start). All other
 * fields are cleared. NULL when out of memory. Aborts, naming the kind,
 * when ops lacks an entry (a programming error, found at the first use). */
MPI_Request bm_mpi_request_create(const struct bm_mpi_request_ops *ops, MPI_Comm comm, void *state,
                                  bool persistent, bool active);
/* Recycle a request whose kind kept it (ops->release returned false). */
void bm_mpi_request_destroy(MPI_Request r);

/* Entries for kinds with nothing to do there: a cancel that never succeeds
 * (returns MPI_SUCCESS, the operation completes normally), a start that
 * reports MPI_ERR_REQUEST (non-persistent kinds), a release that just
 * lets the core recycle the request. */
int bm_mpi_request_no_cancel(MPI_Request r);
int bm_mpi_request_no_start(MPI_Request r, const char *fn);
bool bm_mpi_request_plain_release(MPI_Request r, int *err);

/* Start the point-to-point operation r describes (p2p.c). MPI_SUCCESS or
 * the error class after the communicator's error handler ran; r is active
 * on success. */
int bm_mpi_p2p_start(MPI_Request r, const char *fn);

/* ---- point-to-point helpers (p2p.c) shared by the other p2p files ---- */

/* Start a send of (count, dt) at buf to world rank dst_world on comm's
 * point-to-point context (contiguous data as bytes, any other layout
 * through the datatype engine). or_done: a small standard send may complete
 * inside the call, leaving *req_out NULL. */
bm_status_t bm_mpi_p2p_isend(const void *buf, int count, MPI_Datatype dt, int dst_world,
                             MPI_Comm comm, int tag, enum bm_pml_send_mode mode, bool or_done,
                             struct bm_pml_request **req_out);
/* Post a receive of (count, dt) at buf from rank src (or MPI_ANY_SOURCE) of comm. */
bm_status_t bm_mpi_p2p_irecv(void *buf, int count, MPI_Datatype dt, MPI_Comm comm, int src, int tag,
                             struct bm_pml_request **req_out);
/* Receive the message msg (taken by bm_pml_improbe) into (count, dt) at buf. */
bm_status_t bm_mpi_p2p_imrecv(void *buf, int count, MPI_Datatype dt, struct bm_pml_message *msg,
                              struct bm_pml_request **req_out);
/* A point-to-point request with these arguments, inactive, holding a
 * reference on comm; NULL when out of memory. */
MPI_Request bm_mpi_p2p_request_new(enum bm_mpi_req_kind kind, int mode, bool persistent,
                                   const void *buf, int count, MPI_Datatype dt, int peer, int tag,
                                   MPI_Comm comm);
/* The checks of every operation with a buffer and a peer (recv: wildcards
 * allowed): 0, or the class after the error handler ran. A count of 0 with
 * *dt MPI_DATATYPE_NULL is accepted and *dt becomes MPI_BYTE (MPICH checks a
 * point-to-point buffer's type only when count > 0). */
int bm_mpi_p2p_check(const char *fn, MPI_Comm comm, const void *buf, int count, MPI_Datatype *dt,
                     int peer, int tag, bool recv);
/* Report a PML failure of what ("send", "receive") with peer. */
int bm_mpi_p2p_pml_error(MPI_Comm comm, bm_status_t st, const char *fn, const char *what, int peer);
/* What failed when a PML status is BM_ERR_FAULT or BM_ERR_PEER_FAULT (a
 * buffer not mapped, found by a single-copy transfer), into what: the
 * operation (recv or send), the peer, the tag and the buffer, buf and
 * bytes long (the PML's status.count on such a failure). */
void bm_mpi_p2p_fault_text(char *what, size_t len, bool recv, int peer, int tag, const void *buf,
                           size_t bytes, int st);
/* Report a truncated receive into capacity bytes. */
int bm_mpi_p2p_truncate_error(MPI_Comm comm, const char *fn, const struct bm_pml_status *ps,
                              size_t capacity);
/* The standard's status of an operation with MPI_PROC_NULL. */
void bm_mpi_status_proc_null(MPI_Status *s);
/* Source, tag, count and cancelled flag from a PML status (MPI_ERROR untouched). */
void bm_mpi_status_from_pml(MPI_Status *s, const struct bm_pml_status *ps);

/* True when r is a request object (not NULL, right magic). */
static inline bool bm_mpi_request_valid(MPI_Request r)
{
    return r != MPI_REQUEST_NULL && r->magic == BM_MPI_MAGIC_REQUEST;
}

#endif
