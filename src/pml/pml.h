/* The point-to-point layer (PML): the API the MPI layer (and collectives)
 * use to move tagged messages between processes. It matches messages in MPI
 * order on (context id, source rank in the communicator, tag) with
 * wildcards, runs the eager and rendezvous protocols over the transports of
 * src/btl/btl.h, and drives all progress. It knows nothing of MPI handles:
 * communicators appear as a context id plus the ranks the caller translated,
 * datatypes as contiguous byte counts or, for data with gaps, as the
 * datatype engine's description (util/dtype.h): the _dt calls stream such
 * a message through the engine, packing each fragment straight into the
 * transport's buffer and unpacking each arriving fragment in place, so no
 * whole-message copy is ever made. On the wire both look the same (the
 * packed bytes), so either side may use either form.
 *
 * Addressing. A send names the destination by its world rank (to route) and
 * carries the sender's own rank in the communicator plus the tag (to match
 * at the receiver). A receive names the source by its rank in the
 * communicator (or BM_PML_ANY_SOURCE) and the tag (or BM_PML_ANY_TAG).
 * Tags are >= 0; context ids are any 32-bit value the MPI layer allocates.
 *
 * Requests. isend/irecv hand back a request owned by the PML. The caller
 * tests or waits on it and then frees it with bm_pml_request_free; freeing
 * a request that is still active is allowed (MPI_Request_free): the PML
 * finishes it in the background and finalize waits for it. A completed
 * request's status stays readable until it is freed.
 *
 * Threads. With thread_level MPI_THREAD_MULTIPLE every function here may be
 * called from any thread at once (README.md "Threads": per-context matching
 * locks, a progress lock that one thread drains under while the others
 * watch their own requests); at the other levels one thread at a time
 * calls in and no lock is taken. */
#ifndef BM_PML_H
#define BM_PML_H

#include "bm_status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bm_btl_module;
struct bm_btl_endpoint;

#define BM_PML_ANY_SOURCE (-1)
#define BM_PML_ANY_TAG    (-1)
#define BM_PML_TAG_MAX    0x7fffffff /* largest valid tag (MPI_TAG_UB) */

/* Send modes. Buffered sends are done above the PML (copy into the attached
 * buffer, then a standard send of the copy). */
enum bm_pml_send_mode {
    BM_PML_SEND_STANDARD,    /* may complete before the receive is matched */
    BM_PML_SEND_SYNCHRONOUS, /* completes only once the receiver matched it */
    BM_PML_SEND_READY,       /* the receive is known to be posted; treated as standard */
};

/* What a completed receive (or a probe) reports. */
struct bm_pml_status {
    int source;     /* sender's rank in the communicator */
    int tag;        /* the message's tag */
    int error;      /* BM_OK, BM_ERR_TRUNCATE (buffer too small), BM_ERR_CANCELED... */
    size_t count;   /* bytes delivered into the buffer (probe: the message's length; after
                     * BM_ERR_FAULT or BM_ERR_PEER_FAULT, a buffer not mapped: its length) */
    bool cancelled; /* the receive was cancelled before it matched */
};

/* The buffer of the last send whose single copy found it not mapped
 * (status BM_ERR_FAULT or BM_ERR_PEER_FAULT), for an error text where the
 * caller no longer holds it (MPI_Send). false when there was none. The
 * record is read once (this call clears it), and a blocking send that ends
 * with a fault status claims it before it frees its request
 * (bm_pml_fault_claim): a record made for another request is dropped, so
 * a send is never described with an earlier send's buffer. */
struct bm_pml_fault {
    const void *buf;
    size_t bytes;
    int tag;
};
bool bm_pml_last_fault(struct bm_pml_fault *out);

struct bm_pml_request;                                     /* opaque, owned by the PML */
void bm_pml_fault_claim(const struct bm_pml_request *req); /* above: bm_pml_last_fault */
struct bm_util_dtype;                                      /* util/dtype.h */
struct bm_pml_message; /* a message taken off the unexpected queue by improbe */

/* Start the PML: open the transports (bm_btl_base_open), exchange their
 * addresses (bm_rte_modex_fence), connect every peer (bm_btl_base_add_procs),
 * register the receive and error callbacks and read the BM_PML_* parameters.
 * Call after bm_rte_init. thread_level is the MPI_THREAD_* level granted. */
bm_status_t bm_pml_init(int thread_level);

/* MPI_Finalize, on every process, before bm_pml_finalize: complete what
 * the PML owes (over dgram a descriptor completes at its ACK), then
 * progress until the transports hold no send of their own that the peer
 * has not acknowledged (bm_btl_base_unacked: dgram's answers to a peer's
 * GET), then a job-wide fence through the runtime
 * during which this process keeps progressing (bm_rte_barrier_progress),
 * so that a peer still draining (its last ACK from us was lost) gets its
 * resend answered. After it, no process needs anything from another, and
 * each may close its transports. Open MPI's ompi_mpi_finalize progresses
 * during a nonblocking PMIx fence for the same reason (usnic). The drain
 * waits as MPI_Wait does (the wait mode's yields or sleeps); where ranks
 * share cores (bm_pml_idle_yields, or the block wait mode) an idle pass of
 * the fence sleeps until a transport has work, the fence ends or 1 ms
 * passes, elsewhere it yields. */
void bm_pml_quiesce(void);
/* What the last bm_pml_quiesce did (so far, when read during it: a progress
 * hook); valid after bm_pml_finalize too (tests). */
struct bm_pml_quiesce_stats {
    int owed_start;        /* the PML's descriptors not yet completed by their transport when
                            * it began (over dgram: sends not yet acknowledged) */
    int unacked_start;     /* the transports' own unacknowledged sends after those completed */
    int unacked_end;       /* when the drain ended: 0 unless it gave up */
    uint64_t drain_ns;     /* the drain (both) */
    uint64_t fence_ns;     /* the fence */
    uint64_t fence_work;   /* what progress found meanwhile (datagrams, completions...) */
    uint64_t fence_passes; /* progress passes during the fence */
    uint64_t fence_sleeps; /* idle passes followed by a sleep (ranks share cores), not a yield */
    bool fenced;           /* the fence completed */
};
void bm_pml_quiesce_stats(struct bm_pml_quiesce_stats *out);

/* Complete every outstanding transfer (including freed active requests and
 * queued control messages), then close the transports. Receives still posted
 * are dropped. */
void bm_pml_finalize(void);

/* The process is exiting without bm_pml_finalize (MPI_Finalize never
 * called): progress until nothing is owed to a peer and the transports
 * hold no unacknowledged send (bm_btl_base_unacked), for at most
 * BM_PML_EXIT_DRAIN_MS, then a little longer for the transports' delayed
 * acknowledgements. The transports stay open (another thread may still be
 * inside the library). False when something was still owed at the limit,
 * or nothing was tried (BM_PML_EXIT_DRAIN_MS=0). */
bool bm_pml_exit_drain(void);

/* Poll the transports once and retry queued sends. Returns the number of
 * events handled (0 when idle). Cheap enough to call in a spin loop; a run
 * of idle calls yields the core in the yield and block wait modes. */
int bm_pml_progress(void);

/* The same for a test of the program (MPI_Test and its kin, MPI_Iprobe):
 * one call, after which the program goes back to its own work. Where the
 * job's ranks share cores (a wait mode that yields, BM_PML_IDLE_YIELD above
 * 0: an oversubscribed host), it gives the core away at once, as Open
 * MPI's yield_when_idle does at every idle progress call, and also after a
 * pass that did something: the peers it tests for may need the core
 * (README "Waiting"). */
int bm_pml_progress_test(void);

/* The same for a loop that waits (MPI_Wait and friends, blocking
 * collectives): in the block wait mode a run of idle calls sleeps in the
 * kernel until a transport has work (README "Waiting"). Never call it where
 * the caller must return at once (MPI_Test). */
int bm_pml_progress_wait(void);

/* Does this job have more ranks on this host than CPUs for them (the rule
 * behind BM_PML_WAIT_MODE=auto)? Valid after bm_pml_init. */
bool bm_pml_oversubscribed(void);

/* Do idle waits give the core away (BM_PML_IDLE_YIELD above 0 as resolved,
 * in a wait mode that yields: automatically on an oversubscribed host, or
 * set where ranks share cores the node map cannot see, such as network
 * namespaces standing for hosts)? Valid after bm_pml_init. */
bool bm_pml_idle_yields(void);

/* The wait mode as resolved (BM_PML_WAIT_MODE): spin (never give the core
 * away, whatever the host), or block (sleep in the kernel after the idle
 * polls: block, or auto under MPI_THREAD_MULTIPLE on an oversubscribed
 * host; not auto's spin-then-block). Waits of the layers above (the
 * shared-memory collectives' flags) follow it. Valid after bm_pml_init. */
bool bm_pml_wait_spins(void);
bool bm_pml_wait_blocks(void);

/* Where waits block (bm_pml_wait_blocks): sleep once in the kernel as an
 * idle wait does, until a transport has work for this process (a message,
 * a one-sided request), a kick, a transport's timer, or max_ns. For a
 * layer above that waits on its own shared memory (the shared-memory
 * collectives' flags): the process stays reachable by every transport
 * while it sleeps, and whoever stores what it waits for wakes it with an
 * active message (BM_PML_AM_COLL). Elsewhere a yield. Returns false when
 * it slept until max_ns (or the transports' nearest timer), true when it
 * ended sooner. */
bool bm_pml_sleep(int64_t max_ns);

/* Should a nonblocking call leave the work of starting (the first round of
 * a collective's schedule) to the progress thread, queue it for a progress
 * hook and kick (bm_pml_progress_kick)? True where the progress thread
 * (BM_PML_PROGRESS_THREAD) runs and the job's ranks share cores
 * (bm_pml_idle_yields), unless BM_PML_PROGRESS_THREAD_HANDOFF=0. Valid after
 * bm_pml_init. */
bool bm_pml_progress_handoff(void);

/* The same two facts as every rank of this host sees them, for choices
 * that the ranks of a communicator must make alike (which collective
 * algorithm runs, where a shared-memory collective puts its data): each
 * rank's BM_PML_IDLE_YIELD, BM_PML_WAIT_MODE, BM_PML_PROGRESS_THREAD and
 * BM_PML_PROGRESS_THREAD_HANDOFF are its own, and may differ. Agreed at
 * bm_pml_init from what each rank published in the modex:
 * host_shares_cores: the host is oversubscribed, or some rank of it yields
 * when idle (bm_pml_idle_yields as that rank resolves it);
 * host_handoff: some rank of this host would hand off
 * (bm_pml_progress_handoff, from its settings: whether its thread started
 * is not asked). */
bool bm_pml_host_shares_cores(void);
bool bm_pml_host_handoff(void);

/* Wake the progress thread (and a sleeping waiter): new work for a hook. */
void bm_pml_progress_kick(void);

/* True when the PML takes its locks: MPI_THREAD_MULTIPLE, or the progress
 * thread (BM_PML_PROGRESS_THREAD) calls it beside the program. */
bool bm_pml_threaded(void);

/* Progress hooks: work that must advance while the program waits in any
 * PML call (nonblocking collectives' schedules, generalized requests, the
 * one-sided target agent). fn runs from every bm_pml_progress call after the
 * transports were polled, and returns how many events it handled (0 when it
 * had nothing to do; the count feeds the idle-yield logic). A hook may
 * start sends and receives, test requests, and register or unregister hooks
 * (its own included); a hook unregistered during a pass is not called again
 * in it, one registered during a pass runs from the next. Hooks do not nest:
 * a bm_pml_progress call made from inside a hook (a hook waiting on a
 * request) polls the transports only. Registration is independent of
 * bm_pml_init/finalize. register: BM_OK, or BM_ERR_NO_MEMORY. unregister
 * removes the first hook with this (fn, arg): BM_OK, or BM_ERR_NOT_FOUND. */
typedef int (*bm_pml_progress_fn)(void *arg);
bm_status_t bm_pml_progress_register(bm_pml_progress_fn fn, void *arg);
bm_status_t bm_pml_progress_unregister(bm_pml_progress_fn fn, void *arg);

/* Work that shares state with a progress hook (the list a hook walks, the
 * objects it advances) runs under the progress lock when the PML was
 * started with MPI_THREAD_MULTIPLE: take it (waiting for the thread that
 * drains; nestable, so a hook calling in is fine) and give it back with
 * the value returned. At the other thread levels both do nothing. */
bool bm_pml_progress_lock(void);
void bm_pml_progress_unlock(bool taken);

/* Start a send of bytes contiguous bytes at buf to world rank dst_world.
 * src_rank is this process's rank in the communicator of context cid (the
 * receiver matches on it), tag >= 0. buf must stay untouched until the
 * request completes. */
bm_status_t bm_pml_isend(const void *buf, size_t bytes, int dst_world, uint32_t cid, int src_rank,
                         int tag, enum bm_pml_send_mode mode, struct bm_pml_request **req_out);
/* The same, except that a small standard send the transport takes at once
 * (sendi) completes inside the call, with no request: *req_out is then NULL
 * (the message-rate path of MPI_Isend). */
bm_status_t bm_pml_isend_or_done(const void *buf, size_t bytes, int dst_world, uint32_t cid,
                                 int src_rank, int tag, enum bm_pml_send_mode mode,
                                 struct bm_pml_request **req_out);

/* The same for count elements of type at buf (any layout; the message is
 * their count * type->size packed bytes). The PML holds a reference on
 * type until the request is released. */
bm_status_t bm_pml_isend_dt(const void *buf, size_t count, struct bm_util_dtype *type,
                            int dst_world, uint32_t cid, int src_rank, int tag,
                            enum bm_pml_send_mode mode, struct bm_pml_request **req_out);
bm_status_t bm_pml_isend_or_done_dt(const void *buf, size_t count, struct bm_util_dtype *type,
                                    int dst_world, uint32_t cid, int src_rank, int tag,
                                    enum bm_pml_send_mode mode, struct bm_pml_request **req_out);

/* Post a receive into buf (capacity bytes) for a message of context cid from
 * communicator rank src (or BM_PML_ANY_SOURCE) with tag (or BM_PML_ANY_TAG).
 * A longer message fills the buffer and completes with BM_ERR_TRUNCATE. */
bm_status_t bm_pml_irecv(void *buf, size_t capacity, uint32_t cid, int src, int tag,
                         struct bm_pml_request **req_out);

/* bm_pml_irecv, wait and free in one call (a blocking receive), the
 * result in *status_out (BM_OK unless the receive could not be posted).
 * src_world: the world rank of src, or -1 (any source, or not known):
 * with it, the receive may take its message from the transport directly
 * (recv.c, BM_PML_RECV_TAKE). */
bm_status_t bm_pml_recv_blocking(void *buf, size_t capacity, uint32_t cid, int src, int tag,
                                 int src_world, struct bm_pml_status *status_out);

/* The same into count elements of type at buf (capacity: their packed
 * bytes; truncation and status.count are in packed bytes). */
bm_status_t bm_pml_irecv_dt(void *buf, size_t count, struct bm_util_dtype *type, uint32_t cid,
                            int src, int tag, struct bm_pml_request **req_out);

/* A blocking receive's bm_pml_irecv_dt (MPI_Recv): for a type whose
 * contiguous runs average BM_UTIL_DTYPE_FAR_RUN_MIN bytes or more, an eager
 * message of at most BM_PML_RECV_DEFER_MAX bytes is copied into bounce (the
 * caller's, that large, alive until then) and unpacked by
 * bm_pml_recv_dt_finish, which the caller runs once the request completed
 * and before it frees it. Unpacking such a message's blocks straight out of
 * the transport's buffer inside the receive callback measured slower than
 * MPI_Recv of the packed bytes followed by MPI_Unpack (recv.c). Without
 * MPI_THREAD_MULTIPLE the request borrows type (no reference taken) until
 * bm_pml_recv_dt_finish, which the caller must run before freeing it. */
#define BM_PML_RECV_DEFER_MAX 4096
bm_status_t bm_pml_irecv_dt_defer(void *buf, size_t count, struct bm_util_dtype *type, uint32_t cid,
                                  int src, int tag, void *bounce, struct bm_pml_request **req_out);
void bm_pml_recv_dt_finish(struct bm_pml_request *req);

/* Non-blocking check: true when the request has completed (status_out, when
 * not NULL, is then filled). Progresses once when it has not, as a test
 * (bm_pml_progress_test: may yield where ranks share cores). */
bool bm_pml_request_test(struct bm_pml_request *req, struct bm_pml_status *status_out);

/* Progress until the request completes; fills status_out when not NULL. */
void bm_pml_request_wait(struct bm_pml_request *req, struct bm_pml_status *status_out);

/* True when complete; no progress. Inline (one acquire load of the byte
 * the PML publishes completion in; pml_internal.h asserts where it is and
 * what it holds), because MPI_Waitall and MPI_Test ask on every pass: a
 * call here was ~20 instructions per message of the sm message rate. */
#define BM_PML_REQUEST_STATE_AT       9
#define BM_PML_REQUEST_STATE_COMPLETE 2
static inline bool bm_pml_request_done(const struct bm_pml_request *req)
{
    return __atomic_load_n((const uint8_t *)req + BM_PML_REQUEST_STATE_AT, __ATOMIC_ACQUIRE) ==
           BM_PML_REQUEST_STATE_COMPLETE;
}

/* Release the request. When it is still active, the PML completes it in the
 * background and releases it then (its status is lost). */
void bm_pml_request_free(struct bm_pml_request *req);

/* A request that completed (bm_pml_request_test or _done said so): its
 * status into status_out and the request released, in one call (what
 * MPI_Wait and MPI_Test do with every request they finish). */
void bm_pml_request_finish(struct bm_pml_request *req, struct bm_pml_status *status_out);

/* Cancel a receive that has not matched yet: it completes at once with
 * status.cancelled set; a matched receive is left alone (it completes
 * normally). Cancel a send whose message may still wait unmatched at the
 * receiver (eager, or a rendezvous not yet acknowledged): the receiver is
 * asked to drop it, and the request completes once it has answered, with
 * status.cancelled set when the message was dropped, or normally when it had
 * matched (MPI lets a cancel fail). A send acknowledged or completed inside
 * bm_pml_isend_or_done (no request) cannot be cancelled. Returns BM_OK. */
bm_status_t bm_pml_request_cancel(struct bm_pml_request *req);

/* The communicator using context cid was freed: release the matching state
 * (queues, sequence numbers) the PML keeps for it. Context ids must not be
 * reused afterwards (sequence numbers would restart on one side only).
 * Returns false, keeping the state, while receives are still posted or
 * messages still wait on it. */
bool bm_pml_context_release(uint32_t cid);

/* Blocking helpers for collectives and the MPI layer. */
bm_status_t bm_pml_send(const void *buf, size_t bytes, int dst_world, uint32_t cid, int src_rank,
                        int tag, enum bm_pml_send_mode mode);
bm_status_t bm_pml_recv(void *buf, size_t capacity, uint32_t cid, int src, int tag,
                        struct bm_pml_status *status_out);

/* Is a message matching (cid, src, tag) waiting? When yes, *flag_out is true
 * and status_out describes it (count = its full length). Progresses once. */
bm_status_t bm_pml_iprobe(uint32_t cid, int src, int tag, bool *flag_out,
                          struct bm_pml_status *status_out);
/* Progress until a matching message is waiting, then describe it. */
bm_status_t bm_pml_probe(uint32_t cid, int src, int tag, struct bm_pml_status *status_out);

/* Like iprobe, but a message found is removed from matching: only
 * bm_pml_imrecv on *msg_out can receive it (MPI_Improbe/MPI_Mrecv). */
bm_status_t bm_pml_improbe(uint32_t cid, int src, int tag, bool *flag_out,
                           struct bm_pml_message **msg_out, struct bm_pml_status *status_out);
/* Receive a message taken by improbe; consumes msg. */
bm_status_t bm_pml_imrecv(void *buf, size_t capacity, struct bm_pml_message *msg,
                          struct bm_pml_request **req_out);
bm_status_t bm_pml_imrecv_dt(void *buf, size_t count, struct bm_util_dtype *type,
                             struct bm_pml_message *msg, struct bm_pml_request **req_out);

/* ---- What one-sided communication needs (onesided.c) --------------------
 * The one-sided layer (src/mpi/win*.c) moves data with the transports' own
 * put, get and atomics (through btl.h's wrappers) and sends everything
 * else as active messages to a handler that runs in the target's progress.
 * The PML hands it the paths to a peer and carries the active messages. */

/* One transport path to a peer: what btl.h's put/get/atomic wrappers take.
 * module->caps says what it can do. */
struct bm_pml_rma_path {
    struct bm_btl_module *module;
    struct bm_btl_endpoint *endpoint;
};

/* The working paths to peer_world, up to max: the transports the PML uses
 * for that peer (those of the highest exclusivity that reach it), RDMA
 * capable ones (put and get) first, then the others (which may still offer
 * atomics). Returns how many were written. A path may fail later: its
 * operations then complete with an error. */
int bm_pml_rma_paths(int peer_world, struct bm_pml_rma_path *out, int max);

/* bm_btl_flush on a path: a flush makes progress on the module, which runs
 * the PML's callbacks, so under MPI_THREAD_MULTIPLE it runs under the
 * progress lock (README "Threads"). */
bm_status_t bm_pml_rma_flush(const struct bm_pml_rma_path *path);

/* True when the PML reaches peer_world through a transport of the
 * shared-memory class (exclusivity of sm or higher: sm, or self for this
 * process): that peer runs on this node and the user let shared memory
 * carry its traffic, so memory the library allocates for one-sided windows
 * may be placed in a segment both map. */
bool bm_pml_peer_on_shm(int peer_world);

/* Whether peer_world is gone: asks the transports of its paths to look now
 * (btl.h check: sm looks whether its process still exists), for a wait on
 * the peer that has nothing outstanding to it, which no transport watches
 * otherwise (the shared-memory collectives' flags). BM_OK while no
 * transport finds it gone, else the status (BM_ERR_PEER_GONE). A peer
 * found gone is a failed path as any other: when it was the last one the
 * job is aborted here, naming both ranks and hosts (failover.c). A system
 * call or two per path: call it now and then in a long wait, not per
 * poll. */
bm_status_t bm_pml_peer_check(int peer_world);

/* Active messages: bytes for a handler registered by a layer above, run
 * inside the receiver's bm_pml_progress (from any caller: an MPI wait, a
 * progress hook, a progress thread). Per (sender, receiver) they run in the
 * order sent and exactly once: a message resent after a path failure is
 * recognised and dropped. Sends copy the bytes (the caller may reuse its
 * buffers at once) and never fail: a message a transport cannot take now
 * is queued and retried by progress. */
#define BM_PML_AM_OSC  0 /* one-sided communication (src/mpi/win_agent.c) */
#define BM_PML_AM_COLL 1 /* wake-ups of the shared-memory collectives' sleepers (coll_sm.c) */
#define BM_PML_AM_IDS  2

/* msg is valid until the handler returns; it is 8-byte aligned. The
 * handler may send active messages and start PML operations, but must not
 * wait for anything. */
typedef void (*bm_pml_am_fn)(int peer_world, const void *msg, size_t len, void *arg);
void bm_pml_am_register(unsigned id, bm_pml_am_fn fn, void *arg);

struct bm_pml_iov {
    const void *base;
    size_t len;
};

/* The largest active message (all iov bytes together) to peer_world: what
 * every path to it can carry in one fragment. */
size_t bm_pml_am_max(int peer_world);

/* Send the concatenation of iov[0..n) (at most bm_pml_am_max bytes) to
 * peer_world's handler id. */
void bm_pml_am_sendv(int peer_world, unsigned id, const struct bm_pml_iov *iov, int n);

/* Active messages sent to peer_world so far (for tests: one-sided
 * synchronisation sends no more messages than needed). */
uint32_t bm_pml_am_sent(int peer_world);

#endif
