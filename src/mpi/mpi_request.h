/* MPI requests (the struct behind MPI_Request) shared by p2p.c, which
 * creates and starts them, and request.c, which completes them (Wait/Test
 * families, Request_free, Cancel). A request describes one operation; the
 * transfer itself is a PML request. Persistent requests keep their
 * arguments and are started any number of times; between a completion and
 * the next MPI_Start they are inactive, and Wait/Test on them return at once
 * with an empty status (MPI-3.1 section 3.7.3). Operations that complete as
 * they start (MPI_PROC_NULL peers, buffered sends once copied) carry their
 * status here and no PML request. */
#ifndef BM_MPI_REQUEST_H
#define BM_MPI_REQUEST_H

#include "mpi.h"
#include "pml/pml.h"

#include <stdbool.h>
#include <stdint.h>

#define BM_MPI_MAGIC_REQUEST 0x72657175U /* "requ" */

enum bm_mpi_req_kind {
    BM_MPI_REQ_SEND,
    BM_MPI_REQ_RECV,
};

/* Send modes beyond the PML's: buffered sends are copied here first. */
#define BM_MPI_SEND_BUFFERED 16

struct bm_mpi_request {
    uint32_t magic;
    uint8_t kind;               /* enum bm_mpi_req_kind */
    uint8_t mode;               /* enum bm_pml_send_mode, or BM_MPI_SEND_BUFFERED */
    bool persistent;            /* made by MPI_*_init */
    bool active;                /* started and not yet completed by a Wait/Test */
    struct bm_pml_request *pml; /* the transfer; NULL when it completed at start */
    MPI_Status status;          /* the result when pml is NULL */
    MPI_Comm comm;              /* for the error handler and rank translation */
    /* the operation's arguments (kept for persistent requests) */
    void *buf;
    int count;
    MPI_Datatype dt; /* persistent requests hold a reference (bm_mpi_type_retain) */
    int peer;        /* destination or source rank in comm, MPI_ANY_SOURCE, MPI_PROC_NULL */
    int tag;
    struct bm_mpi_request *next_free; /* in the cache of released requests */
};

/* A request from a cache of released ones (no malloc per Isend or Irecv on
 * the message-rate path), not cleared: the caller sets every field; NULL
 * when out of memory. */
MPI_Request bm_mpi_request_new(void);
/* Invalidate r and keep it for reuse. */
void bm_mpi_request_release(MPI_Request r);
/* Free the cached requests (MPI_Finalize). */
void bm_mpi_request_cache_fini(void);

/* Start the operation r describes (p2p.c). MPI_SUCCESS or the error class
 * after the communicator's error handler ran; r is active on success. */
int bm_mpi_p2p_start(MPI_Request r, const char *fn);

/* True when r is a request object (not NULL, right magic). */
static inline bool bm_mpi_request_valid(MPI_Request r)
{
    return r != MPI_REQUEST_NULL && r->magic == BM_MPI_MAGIC_REQUEST;
}

#endif
