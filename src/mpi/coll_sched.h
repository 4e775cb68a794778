/* The collective schedule engine. A collective is a schedule: rounds of
 * steps (send, receive, local copy, local reduction) on three symbolic
 * buffers (the send buffer, the receive buffer, and a temporary buffer the
 * engine provides), built once by an algorithm (coll_*.c) for a given
 * (operation, communicator, count, element size, root) and reused: the
 * buffers, the datatype and the operation are bound only when the schedule
 * runs, so a cached schedule serves every later call with the same shape,
 * and one schedule may run several times at once (nonblocking and
 * persistent requests hold a reference).
 *
 * Rounds. The steps of a round are started in the order they were added:
 * sends and receives are posted, copies and reductions run at once. A
 * round ends when all its sends and receives have completed; the next round
 * starts only then. So a local step may use data that earlier rounds
 * received, or that earlier local steps of its own round produced, and a
 * local step placed after the sends of its round overlaps with them (the
 * copy of a rank's own block while the others are in flight).
 *
 * Running. bm_mpi_sched_run runs a schedule to completion (blocking
 * collectives); bm_mpi_sched_exec_* run it in the background from a PML
 * progress hook (nonblocking and persistent collectives). Messages travel in
 * the communicator's collective context with tags that keep every
 * collective instance apart (see coll_sched.c). */
#ifndef BM_MPI_COLL_SCHED_H
#define BM_MPI_COLL_SCHED_H

#include "mpi/mpi_internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The symbolic buffers a step addresses (offsets in bytes, may be negative
 * for user buffers described by negative displacements). */
enum bm_mpi_sched_buf {
    BM_SCHED_SBUF,  /* the send buffer (MPI_IN_PLACE: the schedule does not use it) */
    BM_SCHED_RBUF,  /* the receive buffer */
    BM_SCHED_TMP,   /* engine-provided scratch of tmp_bytes bytes */
    BM_SCHED_PSBUF, /* the send side packed (datatypes with gaps): pbytes[0] bytes */
    BM_SCHED_PRBUF, /* the receive side packed: pbytes[1] bytes */
    BM_SCHED_NBUF,
};

enum bm_mpi_sched_op {
    BM_SCHED_SEND,   /* n bytes at (sbuf, soff) to peer */
    BM_SCHED_RECV,   /* exactly n bytes from peer into (dbuf, doff) */
    BM_SCHED_COPY,   /* n bytes (sbuf, soff) -> (dbuf, doff); the areas may overlap */
    BM_SCHED_REDUCE, /* (dbuf, doff) = (sbuf, soff) op (dbuf, doff), n elements */
    BM_SCHED_PACK,   /* n elements of dt in user layout at (sbuf, soff) -> packed at (dbuf, doff) */
    BM_SCHED_UNPACK, /* n elements of dt packed at (sbuf, soff) -> user layout at (dbuf, doff) */
};

/* Bits of a tag left to the algorithm, to keep apart messages between the
 * same two ranks in one collective (directions of a Cartesian
 * neighbourhood, phases of a hierarchical algorithm). */
#define BM_SCHED_SUBTAG_BITS 9
#define BM_SCHED_SUBTAG_MAX  ((1 << BM_SCHED_SUBTAG_BITS) - 1)

/* Step flags. */
#define BM_SCHED_F_LOCAL 0x1 /* send, recv: peer is a rank of comm->local_comm (inter) */

struct bm_mpi_sched_step {
    uint8_t op;      /* enum bm_mpi_sched_op */
    uint8_t sbuf;    /* source buffer (send, copy, reduce) */
    uint8_t dbuf;    /* destination buffer (recv, copy, reduce) */
    uint8_t flags;   /* BM_SCHED_F_* */
    uint16_t subtag; /* send, recv: 0..BM_SCHED_SUBTAG_MAX */
    int peer;        /* send, recv: rank in the communicator (remote group: inter) */
    ptrdiff_t soff, doff;
    size_t n;        /* bytes (send, recv, copy) or elements (reduce, pack, unpack) */
    MPI_Datatype dt; /* pack, unpack: the user's type (retained by the schedule) */
};

/* What a cached schedule was built for; two calls with equal keys on one
 * communicator can share a schedule. */
struct bm_mpi_sched_key {
    int kind;      /* enum bm_mpi_coll_kind */
    int alg;       /* the algorithm chosen */
    int root;      /* rooted collectives, else 0 */
    int count;     /* the receive side's count (reductions: elements) */
    size_t sbytes; /* bytes of one send block (0: not significant here) */
    size_t rbytes; /* bytes of one receive element or block */
    unsigned flags;
};

struct bm_mpi_sched {
    _Atomic int refs; /* the cache, requests and runs (which may end in another thread) */
    int nsteps, cap;
    struct bm_mpi_sched_step *steps;
    int nrounds, rcap;
    int *round_end;   /* index after the last step of round i */
    size_t tmp_bytes; /* scratch the schedule needs */
    size_t pbytes[2]; /* packed send and receive sides (BM_SCHED_PSBUF, _PRBUF) */
    int max_comm;     /* sends + receives in the largest round */
    int cur_comm;     /* sends + receives in the round being built */
    bool nomem;       /* an allocation failed while building: the schedule is unusable */
    bool local;       /* sends and receives being added address comm->local_comm */
    bool cacheable;   /* depends only on the key (not on count arrays) */
    int kind, alg;    /* for the statistics and messages */
    struct bm_mpi_sched_key key;
};

/* ---- building ------------------------------------------------------------ */

/* A new, empty schedule (one reference) for collective kind with algorithm
 * alg; NULL when out of memory. */
struct bm_mpi_sched *bm_mpi_sched_new(int kind, int alg);
/* Add steps to the current round. Allocation failures are remembered and
 * reported by bm_mpi_sched_end. */
void bm_mpi_sched_send(struct bm_mpi_sched *s, int peer, int buf, ptrdiff_t off, size_t bytes,
                       int subtag);
void bm_mpi_sched_recv(struct bm_mpi_sched *s, int peer, int buf, ptrdiff_t off, size_t bytes,
                       int subtag);
void bm_mpi_sched_copy(struct bm_mpi_sched *s, int sbuf, ptrdiff_t soff, int dbuf, ptrdiff_t doff,
                       size_t bytes);
void bm_mpi_sched_reduce(struct bm_mpi_sched *s, int sbuf, ptrdiff_t soff, int dbuf, ptrdiff_t doff,
                         size_t count);
/* Pack count elements of dt from user layout at (ubuf, uoff) into the
 * packed buffer pbuf at poff, or the other way round. The schedule keeps a
 * reference on dt. */
void bm_mpi_sched_pack(struct bm_mpi_sched *s, MPI_Datatype dt, int ubuf, ptrdiff_t uoff,
                       size_t count, int pbuf, ptrdiff_t poff);
void bm_mpi_sched_unpack(struct bm_mpi_sched *s, MPI_Datatype dt, int pbuf, ptrdiff_t poff,
                         size_t count, int ubuf, ptrdiff_t uoff);
/* Inter-communicators: the sends and receives added from now on address
 * the local group (comm->local_comm's ranks and context) when local is
 * true, the remote group (comm's) when false (the default). Builders of
 * the local phases are given comm->local_comm as their communicator. */
void bm_mpi_sched_local(struct bm_mpi_sched *s, bool local);
/* Close the current round (a no-op when it is empty). */
void bm_mpi_sched_round(struct bm_mpi_sched *s);
/* The schedule needs at least bytes of scratch (BM_SCHED_TMP). */
void bm_mpi_sched_tmp(struct bm_mpi_sched *s, size_t bytes);
/* Finish building: MPI_SUCCESS, or MPI_ERR_NO_MEM (reported as fn on comm,
 * and s released). */
int bm_mpi_sched_end(struct bm_mpi_sched *s, MPI_Comm comm, const char *fn);
void bm_mpi_sched_retain(struct bm_mpi_sched *s);
void bm_mpi_sched_release(struct bm_mpi_sched *s);

/* ---- running ------------------------------------------------------------- */

/* One run of a schedule: the bound buffers and the progress through it. */
struct bm_mpi_sched_exec;

/* How a run reports its end to its owner (a nonblocking request): called
 * once, from progress, when the run completed or failed. */
typedef void (*bm_mpi_sched_done_fn)(struct bm_mpi_sched_exec *e, void *arg);

/* Run s to completion on comm with the buffers, datatype and operation
 * given (dt, op only for reductions; NULL otherwise), the messages tagged
 * for a blocking collective. A reduction on a datatype that is not
 * contiguous reduces packed data (the schedule packed it). sbuf and rbuf
 * are where the data of a contiguous side starts (the caller adds the
 * type's offset), the raw buffers for packed sides. MPI_SUCCESS, or the
 * class after the error was reported as fn through comm's error handler. */
int bm_mpi_sched_run(struct bm_mpi_sched *s, MPI_Comm comm, const void *sbuf, void *rbuf,
                     MPI_Datatype dt, MPI_Op op, const char *fn);

/* Start s in the background (a nonblocking or persistent collective): the
 * run takes a reference on s, its messages carry tag (from
 * bm_mpi_sched_tag_nb), and it advances from the PML progress hook or
 * bm_mpi_sched_exec_test. *e_out is owned by the caller until it frees it
 * with bm_mpi_sched_exec_free (after completion, or to abandon it). The run
 * holds a reference on comm until it ends.
 * MPI_SUCCESS, or the class after the error was reported as fn. */
int bm_mpi_sched_exec_start(struct bm_mpi_sched *s, MPI_Comm comm, const void *sbuf, void *rbuf,
                            MPI_Datatype dt, MPI_Op op, uint32_t tag, const char *fn,
                            struct bm_mpi_sched_exec **e_out);
/* Advance without blocking; true when the run is over (then *err_out is its
 * MPI error class and what a sentence describing a failure). */
bool bm_mpi_sched_exec_test(struct bm_mpi_sched_exec *e, int *err_out, const char **what_out);
/* Whether the run is over, without advancing it and without the progress
 * lock: an acquire load that orders everything the run wrote (the result
 * in the caller's buffers) before a true answer. For a thread that watches
 * a run the progress thread advances (tests/mpi/mt_progress.c). */
bool bm_mpi_sched_exec_done(const struct bm_mpi_sched_exec *e);
/* Release a run; one still going is finished in the background first. */
void bm_mpi_sched_exec_free(struct bm_mpi_sched_exec *e);

/* The tag base of the next nonblocking or persistent collective on comm:
 * every process calls collectives on a communicator in the same order, so
 * the n-th one gets the same number everywhere. */
uint32_t bm_mpi_sched_tag_nb(MPI_Comm comm);

/* ---- scratch memory ------------------------------------------------------- */

/* Scratch buffers for schedules and algorithms: a few freed ones are kept
 * (up to BM_MPI_COLL_SCRATCH_KEEP bytes) so that repeated large collectives
 * do not map and fault fresh pages each call. NULL when out of memory. */
void *bm_mpi_scratch_get(size_t bytes);
void bm_mpi_scratch_put(void *p, size_t bytes);
/* Free the kept scratch (MPI_Finalize). */
void bm_mpi_scratch_fini(void);

#endif
