/* Internal structures of the PML shared by its files: requests and their id
 * table (request.c), matching contexts with posted and unexpected queues
 * (match.c), the send and receive protocol engines (send.c, recv.c) and the
 * progress engine with its retry queues (progress.c). Not for other layers. */
#ifndef BM_PML_INTERNAL_H
#define BM_PML_INTERNAL_H

#include "btl/btl.h"
#include "pml/pml.h"
#include "pml/pml_proto.h"
#include "util/dtype.h"
#include "util/lock.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BM_PML_CONTAINER_OF(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* Thread-local state the progress loops touch on every poll: the
 * initial-exec model makes an access one %fs-relative instruction instead
 * of a call to __tls_get_addr (the library is linked, not dlopened, and
 * these few bytes fit glibc's static TLS surplus when it is). */
#define BM_PML_TLS _Thread_local __attribute__((tls_model("initial-exec")))

/* ---- configuration (BM_PML_*) -------------------------------------------- */

struct bm_pml_config {
    size_t sendi_limit;     /* largest payload sent with sendi */
    int pipeline_depth;     /* FRAG descriptors in flight per rendezvous */
    size_t frag_size_max;   /* cap on FRAG payload (0: the path's max_send_size) */
    size_t pack_frag_size;  /* cap on a packed (non-contiguous) FRAG, header included (0: none) */
    size_t iov_block_min;   /* least average block moved in place by the transport (0: never) */
    size_t pack_bounce;     /* messages this small pack through a bounce; first_frag: how early */
    int pack_ahead;         /* pack a rendezvous's first FRAG while its RNDV waits for the ACK */
    size_t pack_first_frag; /* cap on the packed FRAGs a receiver waits for first (shared memory) */
    size_t stream_copy_min; /* messages this large are copied out with streaming stores */
    int idle_yield;         /* idle progress calls before sched_yield (0: never; -1 at load:
                               decided at init from the oversubscription of the host) */
    int stats;              /* BM_PML_STATS: print lock counters at finalize */
    int exit_drain_ms;      /* BM_PML_EXIT_DRAIN_MS: exit without MPI_Finalize */
    int recv_take;          /* BM_PML_RECV_TAKE: transport looks per progress pass (0: off) */
    size_t recv_take_max;   /* BM_PML_RECV_TAKE_MAX: largest receive buffer that takes */
};

/* ---- match queues ----------------------------------------------------------
 * A queue table maps a key (source or ANY, tag or ANY) to a FIFO list. A
 * posted receive sits in the one list of its own key; an arrival looks at the
 * heads of the four lists that could match it and takes the oldest post. An
 * unexpected message sits in four lists at once (exact, any tag, any source,
 * both) so that any receive finds the oldest matching message at the head of
 * the list of its own key. Both are O(1) per operation whatever the mix of
 * sources and tags. */

struct bm_pml_qbucket;

struct bm_pml_qnode {
    struct bm_pml_qnode *next, *prev;
    struct bm_pml_qbucket *bucket;
};

struct bm_pml_qbucket {
    uint64_t key;
    struct bm_pml_qbucket *hnext;
    struct bm_pml_qnode *head, *tail;
};

struct bm_pml_qtable {
    struct bm_pml_qbucket **slots;
    size_t nslots;  /* power of two (0 before first use) */
    unsigned shift; /* 64 - log2(nslots) */
    size_t nused;   /* buckets in the table, empty ones included */
    /* The bucket last found for each class of key (exact, any tag, any
     * source, both): a stream of messages on one (source, tag) finds its
     * list without hashing. */
    struct bm_pml_qbucket *cache[4];
    /* Buckets swept out of the table, kept for reuse (linked by hnext). */
    struct bm_pml_qbucket *spare;
    size_t nspare;
};

static inline uint64_t bm_pml_qkey(int src, int tag)
{
    return ((uint64_t)(uint32_t)src << 32) | (uint32_t)tag;
}

/* ---- requests ------------------------------------------------------------ */

enum bm_pml_req_kind {
    BM_PML_REQ_SEND = 1,
    BM_PML_REQ_RECV = 2,
};

enum bm_pml_req_state {
    BM_PML_REQ_FREE = 0, /* on the free list */
    BM_PML_REQ_ACTIVE,   /* in progress */
    BM_PML_REQ_COMPLETE, /* done; status valid */
};

struct bm_pml_request {
    /* index, gen, kind, state come first: the allocator clears what follows
     * and changes these by atomic stores (request.c REQ_BODY_AT) */
    uint32_t index;  /* slot in the id table (fixed) */
    uint32_t gen;    /* generation of this use */
    uint8_t kind;    /* enum bm_pml_req_kind */
    uint8_t state;   /* enum bm_pml_req_state */
    bool user_freed; /* the owner let go; release on completion */
    bool pending;    /* on the retry queue */
    bool acked;      /* send: the receiver's ACK arrived */
    bool retransmit; /* send: the first fragment is being resent after a path failure */
    bool force_rndv; /* send: the eager path could not take the whole message */
    bool copied;     /* send: the transport copied the eager payload (buffer free) */
    bool put_done;   /* send: the receiver's PUT was carried out (a resent PUT is ignored) */
    uint8_t nest;    /* a send function is working on it (see send.c) */
    bool cancelling; /* send: a CANCEL went out, its answer has not come back */
    struct bm_pml_status status;

    uint32_t cid;
    int tag;
    int peer; /* send: destination world rank; recv: source comm rank or ANY */

    struct bm_pml_request *pend_next; /* retry queue / deferred starts / free list */
    int outstanding;                  /* send: descriptors in flight */
    /* End-to-end recovery (restart.c): a send kept until the receiver's
     * DONE, or a rendezvous receive waiting for FRAGs, is on the watch
     * list, which times how long it made no progress. */
    bool watched;
    bool need_done;  /* send: complete only at the receiver's DONE */
    bool done_rcvd;  /* send: the DONE arrived */
    uint8_t tries;   /* timeouts so far (each doubles the next, to 8x) */
    bool lost;       /* a path it may have used failed: act now (restart.c) */
    bool start_free; /* send: its RNDV left without the progress lock (watched from the drainer) */
    uint16_t watch_heard; /* the peer's arrival count (restart.c heard) when last looked at */
    uint32_t restart_seq; /* recv: restarts asked; send: newest one served */
    struct bm_pml_request *watch_next; /* the watch list */
    struct bm_pml_request *watch_prev; /* ... */
    uint64_t watch_ns;                 /* when progress was last seen */
    size_t watch_mark;                 /* recv: bytes arrived then */
    bm_pml_reqid_t rndv_sreq;          /* recv: the sender's request (from the RNDV) */
    size_t ack_offset;                 /* recv: the first ACK's offset (the RNDV's bytes) */
    /* A non-contiguous message (conv.type != NULL, a reference held until
     * the request is released): sends pack each fragment into the
     * transport's buffer, receives unpack each fragment where it belongs;
     * sbuf/rbuf are then unused. */
    struct bm_util_dtype_conv conv;

    /* send (cleared only for sends: request.c) */
    const char *sbuf;
    size_t bytes;
    int src_rank;   /* this process's rank in the communicator */
    uint8_t mode;   /* enum bm_pml_send_mode */
    uint8_t sphase; /* enum bm_pml_send_phase (send.c) */
    bool rndv;      /* RNDV protocol (else eager MATCH) */
    /* Under MPI_THREAD_MULTIPLE: a rendezvous whose protocol state is its
     * peer's, not the progress lock's (send.c "per-peer send state"); the
     * tx_ flags below are read and written under its peer's lock
     * (bm_pml_g.peer_tx), the kick list links through pend_next. All of
     * them sit in padding: the fields zeroed per send did not grow. */
    bool tx_peer;
    uint32_t seq;
    bool tx_busy;                 /* a thread works on it (at most one at a time) */
    bool tx_again;                /* an event changed it while busy: the worker looks again */
    bool tx_drain;                /* it needs the progress lock's holder (a failure, its end) */
    bool tx_queued;               /* on its peer's kick list */
    bm_pml_reqid_t rreq;          /* receiver's request once ACKed */
    size_t first_len;             /* payload bytes carried by the RNDV */
    size_t frag_next;             /* next byte to put in a FRAG */
    size_t frag_end;              /* bytes the receiver wants */
    struct bm_pml_resend *resend; /* FRAG ranges to send again (their path failed) */
    /* The first FRAG of a non-contiguous rendezvous, packed while its RNDV
     * waits for the ACK (send.c, BM_PML_PACK_AHEAD): sent when the ACK asks
     * for that range on that path, else freed. */
    struct bm_btl_descriptor *ahead_des;
    struct bm_btl_module *ahead_mod;
    struct bm_btl_endpoint *ahead_ep;
    size_t ahead_at, ahead_len;
    /* An RGET over a transport that needs registration (rdma.c): the
     * sender's buffer registered with rget_mod, released when the send
     * completes (owned: not MPI_Alloc_mem's handle, which stays). */
    struct bm_btl_module *rget_mod;
    struct bm_btl_reg_handle *rget_reg;
    bool rget_reg_owned;
    uint8_t tx_pass;   /* the drainer's pass (low bits) when it was queued */
    uint16_t tx_owner; /* the thread that started it (send.c tx_me) */
    /* A per-peer send's restart timer fired (restart.c, under the peer's
     * lock): 1 send the RNDV again, 2 ask for the DONE; carried out by the
     * progress lock's holder from the kick list (send.c tx_drain_work). */
    uint8_t tx_timer;

    /* recv (cleared only for receives) */
    char *rbuf;
    size_t capacity;
    int src_world;  /* sender's world rank once matched */
    size_t msg_len; /* length of the matched message */
    size_t want;    /* bytes of the message that will arrive (rendezvous) */
    size_t arrived; /* distinct message bytes arrived so far (rendezvous) */
    /* FRAGs a transport is reading straight into the buffer (btl.h,
     * "Receive placement"): the receive completes only when none is left,
     * so that no late byte lands in a buffer given back to the user. */
    uint32_t placing;
    /* A blocking non-contiguous receive (pml.h bm_pml_irecv_dt_defer): the
     * bytes of an eager MATCH copied into its caller's bounce, defer, to be
     * unpacked once it completed (bm_pml_recv_dt_finish); NULL: unpacked on
     * arrival. type_borrowed: conv.type holds no reference (recv.c). */
    uint16_t defer_len;
    bool type_borrowed;
    char *defer;
    /* Byte ranges arrived, sorted and merged: a FRAG resent after a path
     * failure may duplicate one that did arrive and must not count twice.
     * In-order traffic keeps this at one range. */
    struct bm_pml_range *ranges;
    int nranges, cap_ranges;
    struct bm_pml_rget *rget;  /* an RGET being received (rdma.c) */
    int8_t rget_class;         /* an RGET answered with ACK to time the copy path: its size
                                * class (rdma.c), else -1 */
    uint64_t post_seq;         /* order of posting, for wildcard fairness */
    struct bm_pml_qnode qnode; /* in a posted list */
    struct bm_pml_ctx *ctx;    /* while posted */
};

/* bm_pml_request_done (pml.h) reads the state inline. */
_Static_assert(offsetof(struct bm_pml_request, state) == BM_PML_REQUEST_STATE_AT &&
                   sizeof(((struct bm_pml_request *)0)->state) == 1,
               "pml.h's BM_PML_REQUEST_STATE_AT must name the state byte");
_Static_assert(BM_PML_REQ_COMPLETE == BM_PML_REQUEST_STATE_COMPLETE,
               "pml.h's BM_PML_REQUEST_STATE_COMPLETE must be the complete state");

/* [start, end) of a message. */
struct bm_pml_range {
    size_t start, end;
};

/* A FRAG range lost with its path, to be sent again. */
struct bm_pml_resend {
    struct bm_pml_resend *next;
    size_t offset, len;
};

/* ---- unexpected messages and held (early) arrivals ---------------------- */

/* An arrived MATCH or RNDV fragment that no posted receive wanted yet. Its
 * payload (eager data, or the RNDV's first bytes) is copied after it. */
struct bm_pml_uframe {
    struct bm_pml_qnode node[4]; /* exact, (src, ANY), (ANY, tag), (ANY, ANY) */
    struct bm_pml_ctx *ctx;
    int src, tag;
    uint32_t seq;        /* the sender's sequence number (a CANCEL names it) */
    int peer_world;      /* where an ACK goes */
    uint8_t type;        /* BM_PML_HDR_MATCH or RNDV */
    uint64_t msg_len;    /* whole message */
    bm_pml_reqid_t sreq; /* RNDV: the sender's request */
    size_t data_len;     /* payload bytes stored */
    char data[];
};

/* A MATCH or RNDV fragment that arrived before its turn: the whole
 * fragment (header + payload) is kept until the sequence reaches it. */
struct bm_pml_held {
    struct bm_pml_held *next;
    uint32_t seq;
    int peer_world;
    size_t len;
    char bytes[];
};

/* Per (context, source rank) receive state. */
struct bm_pml_srcstate {
    uint32_t expected;        /* next sequence number to match */
    struct bm_pml_held *held; /* early arrivals, sorted by sequence */
};

/* A matching context: one per context id seen. */
struct bm_pml_ctx {
    /* Under MPI_THREAD_MULTIPLE: guards everything below but cid and hnext
     * (the context table's lock guards those). */
    struct bm_util_lock lock;
    uint32_t cid;
    struct bm_pml_ctx *hnext;
    struct bm_pml_srcstate *srcs; /* indexed by source comm rank, grown on demand */
    int nsrcs;
    uint32_t *send_seq; /* indexed by destination world rank, grown on demand */
    int nsend;
    struct bm_pml_qtable posted;
    struct bm_pml_qtable unexpected;
    uint64_t post_counter;
    size_t nposted, nunexpected;
    size_t nposted_class[4]; /* posted receives by class (exact, any tag, any source, both) */
};

/* ---- global state -------------------------------------------------------- */

struct bm_pml_ctl; /* a queued control message (progress.c) */

/* How a waiting thread spends idle polls (wait.c, BM_PML_WAIT_MODE). */
enum bm_pml_wait_mode {
    BM_PML_WAIT_SPIN,
    BM_PML_WAIT_YIELD,
    BM_PML_WAIT_BLOCK,
};

struct bm_pml_state {
    bool initialized;
    /* MPI_THREAD_MULTIPLE: take the locks (README "Threads"). Read once per
     * lock site; every other thread level takes none. */
    bool mt;
    /* Initialized and not mt: the progress calls take their single-threaded
     * path (progress.c), decided by this one flag per call. It counts idle
     * polls and calls the wait mode's idle step (wait.c) every
     * st_wait_limit of them in a wait (4096 where the mode has no step:
     * the step also looks whether the local peers live, wait.c
     * "Liveness"), every st_test_limit in a test (INT_MAX: never). */
    bool st;
    int st_wait_limit, st_test_limit;
    int wait_mode;       /* enum bm_pml_wait_mode, resolved */
    bool oversubscribed; /* more of the job's ranks on this host than CPUs (pml.c) */
    bool spans_hosts;    /* the job has ranks on other hosts (waits poll a network) */
    /* Agreed by every rank of this host from what each published before
     * the fence (pml.c host_agree): some rank of it yields when idle, or
     * the host is oversubscribed; some rank of it hands nonblocking starts
     * to its progress thread (bm_pml_host_shares_cores, _handoff). */
    bool host_shares, host_handoff;
    /* BM_PML_IDLE_YIELD's auto setting chose never to yield: waits spin,
     * but watch for lost cores (wait.c bm_pml_wait_idle_watch). */
    bool idle_watch;
    int64_t contended_until; /* until then waits yield (relaxed atomics; wait.c) */
    /* The progress lock: whoever holds it drives the transports and owns
     * every protocol state below (queues, counters, send and rendezvous
     * progression). Entered with a try by progress, waited for by the
     * slower paths of the API (bm_pml_enter). Alone on its cache line:
     * every waiting thread tries it on every progress call, and the flags
     * above (mt, st, wait_mode) are read by every call of every thread; on
     * one line, each try took the line the others' next flag read needed
     * (4 thread pairs, src/pml/README.md "Threads"). */
    _Alignas(64) struct bm_util_lock drain;
    _Alignas(64) int world_size;
    int my_rank;
    struct bm_pml_config cfg;
    /* per world rank: bytes sent on each path of its send list (striping) */
    uint64_t **path_bytes;
    /* retry queues */
    struct bm_pml_request *pend_head, *pend_tail;
    struct bm_pml_ctl *ctl_head, *ctl_tail;
    int inflight;            /* descriptors handed to transports, not yet called back */
    int freed_active;        /* requests freed by their owner while active */
    uint32_t retry_stamp;    /* number of the current retry pass */
    uint32_t *retry_blocked; /* per world rank: last retry pass in which a send was refused */
    int *ctl_pending;        /* per world rank: control messages on the control queue */
    int noutage;             /* peers with no working path (failover.c) */
    /* End-to-end recovery (restart.c): watched requests, whether their
     * timers run (BM_PML_RESTART_MS > 0), and what it did (for tests). */
    int nwatch;
    bool restart_timers;
    bool stripe_on;           /* some peer's FRAGs are striped adaptively (stripe.c) */
    uint64_t restarts_asked;  /* restart ACKs this receiver sent */
    uint64_t restarts_served; /* ranges this sender sent again for a restart */
    uint64_t restarts_stale;  /* restart ACKs older than one served: ignored */
    uint64_t rndv_resent;     /* RNDVs sent again for want of an ACK */
    uint64_t rndv_queries;    /* RNDV queries for a missing DONE */
    /* Fast restarts after a path failure (restart.c), for tests: failures
     * of a path to a peer seen here (each sends it a LOST), LOSTs received,
     * receives restarted and RNDVs sent again at once for them, and what
     * the timers did (restarts, RNDVs resent, queries: the last resort). */
    uint64_t paths_lost;
    uint64_t lost_notices;
    uint64_t restarts_fast;
    uint64_t rndv_fast;
    uint64_t restart_timeouts;
    /* Timers reset because the peer sent something while the request's own
     * bytes waited behind (restart.c), and FRAGs dropped quietly because a
     * restart had already completed their receive (recv.c), for tests. */
    uint64_t restart_peer_resets;
    uint64_t restart_dup_frags;
    /* Per world rank while the timers run (restart.c): FRAGs and ACKs heard
     * from it, counted by the drainer (bm_pml_restart_heard), so that a
     * receive waiting behind its peer's other messages is not timed out
     * while the peer's bytes flow. NULL without timers. */
    uint16_t *restart_heard;
    /* Non-contiguous messages received with one copy (getv), for tests (atomic). */
    uint64_t rget_pieces_msgs;
    /* RGETs (rdma.c), for tests that must tell the single copy from its
     * fallback (atomic): RGETs this process sent; bytes it read from a
     * sender's buffer by single copy; RGETs it answered with an ACK asking
     * for fragments (fallback, or the copy choice). */
    uint64_t rget_sent;
    uint64_t rget_read_bytes;
    uint64_t rget_acked;
    /* Non-contiguous messages, for tests (atomic; stack_packs a plain add,
     * an estimate under threads): small ones packed on
     * the stack for sendi, FRAGs packed and sent, the largest payload of
     * one, the bytes packed into transport buffers through a bounce
     * (util/dtype.h's pack_far), and the bytes unpacked on arrival with
     * streaming stores. */
    uint64_t stack_packs;
    uint64_t pack_frags;
    uint64_t pack_frag_largest;
    uint64_t pack_bounced;
    uint64_t unpack_streamed;
    /* Eager payloads of blocking non-contiguous receives unpacked after
     * completion (recv.c bm_pml_recv_dt_finish; counted by the receiving
     * thread with a plain load and store: an estimate under threads). */
    uint64_t recv_deferred;
    /* Receive placement (recv.c), for tests (atomic): FRAGs a transport
     * read straight into the receive buffer, their payload bytes, and
     * placements lost on the way (ABORTED: the bytes are asked again). */
    uint64_t placed_frags;
    uint64_t placed_bytes;
    uint64_t placed_aborted;
    /* FRAGs of non-contiguous messages sent from their blocks in place
     * (send.c, BM_BTL_CAP_SEND_IOV), for tests (atomic). */
    uint64_t iov_frags;
    /* Rendezvous messages past the eager limit sent whole in their RNDV
     * (send.c: only a sliver would have been left for a FRAG), for tests
     * (atomic). */
    uint64_t rndv_whole;
    /* RNDVs of contiguous messages that carried less than an eager frame's
     * worth so that FRAGs the transport places take the rest (send.c
     * rndv_head), for tests (atomic). */
    uint64_t rndv_head_cut;
    /* Blocking receives whose message the transport handed over directly
     * (recv.c bm_pml_recv_blocking, BM_PML_RECV_TAKE), for tests. */
    uint64_t recv_taken;
    /* Those of them taken before the receive was posted (recv.c
     * recv_take_early), for tests. */
    uint64_t recv_taken_early;
    /* FRAGs packed while their RNDV waited for its ACK and sent as packed
     * (send.c, BM_PML_PACK_AHEAD), and those freed unsent (the ACK asked
     * for another range or another path was chosen), for tests (atomic). */
    uint64_t pack_ahead_sent;
    uint64_t pack_ahead_dropped;
    /* Packed FRAGs cut to BM_PML_PACK_FIRST_FRAG (send.c), for tests (atomic). */
    uint64_t pack_frags_first;
    /* Sends whose start was left to the holder of the progress lock
     * (progress.c "deferred starts"; atomic): for BM_PML_STATS and tests. */
    uint64_t sends_deferred;
    /* Under MPI_THREAD_MULTIPLE: eager messages sent by a descriptor with
     * no request and no progress lock (send.c "direct sends"), and their
     * descriptors not yet called back (both atomic). */
    uint64_t sends_direct;
    int inflight_direct;
    /* Under MPI_THREAD_MULTIPLE: rendezvous starts made without the
     * progress lock (send.c "rendezvous starts without the progress
     * lock"); threads inside a rendezvous start now, and the most seen at
     * once (all atomic): for BM_PML_STATS and tests. */
    uint64_t sends_rndv_free;
    int rndv_in, rndv_in_max;
    /* Under MPI_THREAD_MULTIPLE: per-peer send state (send.c "per-peer
     * send state"): one lock and kick list per world rank; requests on the
     * kick lists (atomic); the drainer's passes (atomic, for the kicks'
     * age); FRAGs sent by a thread that did not hold the progress lock;
     * threads inside the
     * FRAG path now and the most seen at once (atomic; BM_PML_STATS,
     * tests). */
    struct bm_pml_peer_tx *peer_tx;
    int tx_kicks;
    unsigned tx_pass;
    uint64_t tx_frags_free;
    /* per-peer sends completed by a thread without the progress lock, and
     * freed by their owner without it (atomic; BM_PML_STATS, tests) */
    uint64_t tx_done_free;
    uint64_t tx_freed_free;
    int frag_in, frag_in_max;
};

/* The send state of one peer under MPI_THREAD_MULTIPLE (send.c): a lock,
 * level 2.5 of the lock order (README "Lock order") and a leaf: nothing is
 * taken under it, no transport is called with it held; and the peer's
 * requests that have work for whoever takes them (the kick list). */
struct bm_pml_peer_tx {
    struct bm_util_lock lock;
    struct bm_pml_request *head, *tail;
    int n;
    /* The restart watch list of the peer's per-peer sends (restart.c),
     * under the lock, so that such a send completes (and leaves it) in
     * whichever thread finds it done; those of them marked lost. */
    int nlost;
    struct bm_pml_request *watch;
} __attribute__((aligned(64)));

/* Per-peer send state: set up and torn down with the progress lock. */
bm_status_t bm_pml_tx_init(void);
void bm_pml_tx_fini(void);
/* Run queued per-peer send work (MPI_THREAD_MULTIPLE, from progress; the
 * caller holds no PML lock, or only the progress lock when drainer).
 * drainer: this thread just drained (it takes its own work and work that
 * waited a pass, and work that needs the progress lock: it takes it);
 * otherwise only its own work or work that waited a pass. Returns what it
 * did (> 0: something). */
int bm_pml_tx_run(bool drainer);

/* Test hook (NULL but in tests): called under MPI_THREAD_MULTIPLE by a
 * thread entering the per-peer FRAG path (send.c tx_frags_enter) with the
 * number of threads inside it then. */
extern void (*bm_pml_test_frag_hook)(int inside);

/* Test hook (NULL but in tests): called under MPI_THREAD_MULTIPLE by a
 * per-peer send's worker not holding the progress lock as it enters
 * (enter true) and leaves (false) the FRAG path with the send's
 * destination world rank; tests/mpi/mt_locks.c records the locks taken
 * in between, per destination. */
extern void (*bm_pml_test_frag_trace_hook)(int peer, bool enter);

/* Test hook (NULL but in tests): called under MPI_THREAD_MULTIPLE by a
 * thread inside a rendezvous start with the number of threads inside it
 * then, before the RNDV goes to the transport. */
extern void (*bm_pml_test_rndv_hook)(int inside);

extern struct bm_pml_state bm_pml_g;

/* ---- locking (MPI_THREAD_MULTIPLE only; README "Threads") ------------------- */

/* Lock order: drain, then a transport's lock, then one context's lock, then
 * the context table's or the request table's lock. A thread that holds a
 * context's lock calls a transport only when it also holds drain. */
static inline void bm_pml_lock(struct bm_util_lock *l)
{
    if (__builtin_expect(bm_pml_g.mt, 0))
        bm_util_lock_take(l);
}
static inline void bm_pml_unlock(struct bm_util_lock *l)
{
    if (__builtin_expect(bm_pml_g.mt, 0))
        bm_util_lock_give(l);
}
/* Wait for the progress lock unless this thread holds it already (a hook
 * or a callback calling the API). Returns whether it was taken: pass that
 * to bm_pml_leave. Nothing without MPI_THREAD_MULTIPLE. */
bool bm_pml_enter(void);
void bm_pml_leave(bool taken);
/* Under MPI_THREAD_MULTIPLE, from a thread that found the progress lock
 * taken: leave the start of send req (its protocol runs under the lock) to
 * the thread that holds it, which starts it as it lets go; or start it
 * here when the lock came free meanwhile. The caller returns at once. */
void bm_pml_start_defer(struct bm_pml_request *req);
/* The deferred starts' lock (init and finalize, under MPI_THREAD_MULTIPLE). */
void bm_pml_start_init(void);
void bm_pml_start_fini(void);
/* Does this thread hold the progress lock (always true when single-threaded)? */
bool bm_pml_in_drain(void);
/* Try the progress lock: 1 taken (bm_pml_leave(true) later), 0 this thread
 * holds it already or the PML is single-threaded, -1 another thread has it. */
int bm_pml_try_enter(void);

/* A path's failed flag is written by whichever thread learns of the failure
 * and read by every sender: relaxed atomics (a stale read only costs a
 * refused send on that path). */
static inline bool bm_pml_path_is_failed(const struct bm_btl_path *p)
{
    return __atomic_load_n(&p->failed, __ATOMIC_RELAXED);
}

/* request.c */
struct bm_pml_request *bm_pml_request_alloc(enum bm_pml_req_kind kind);
/* Mark complete; releases it when the owner already freed it and no
 * descriptor still refers to it. The common case (the owner holds it, the
 * restart watch does not time it, a send has nothing registered or packed
 * ahead) only publishes the state, inline: every eager receive completes
 * here, and a call was a measurable part of the sm message rate. */
void bm_pml_request_complete_slow(struct bm_pml_request *req);
static inline void bm_pml_request_complete(struct bm_pml_request *req)
{
    if (__builtin_expect(!req->user_freed && !req->watched &&
                             (req->kind == BM_PML_REQ_RECV || (!req->rget_reg && !req->ahead_des)),
                         1))
        __atomic_store_n(&req->state, BM_PML_REQ_COMPLETE, __ATOMIC_RELEASE);
    else
        bm_pml_request_complete_slow(req);
}
/* A descriptor of a completed request came back: release it when it was
 * the last one and the owner freed the request. */
void bm_pml_request_des_returned(struct bm_pml_request *req);
/* Give a request back to the table (its owner freed it and nothing refers
 * to it any more): any thread, no PML lock needed. */
void bm_pml_request_release(struct bm_pml_request *req);
/* The request an id names, when it is active and of that kind; else NULL. */
struct bm_pml_request *bm_pml_request_lookup(bm_pml_reqid_t id, enum bm_pml_req_kind kind);
/* Whether an id names an active request of that kind, read without the
 * request table's lock (a thread without the progress lock; the answer may
 * be stale by the time it returns). */
bool bm_pml_request_active(bm_pml_reqid_t id, enum bm_pml_req_kind kind);
static inline bm_pml_reqid_t bm_pml_request_id(const struct bm_pml_request *req)
{
    return ((uint64_t)req->gen << 32) | req->index;
}
/* After bm_pml_g.mt is set (init): the request table's lock. */
void bm_pml_request_table_init(void);
void bm_pml_request_table_fini(void);

/* match.c */
/* After bm_pml_g.mt is set (init): the context table's lock. */
void bm_pml_match_init(void);
struct bm_pml_ctx *bm_pml_ctx_get(uint32_t cid);
/* Next send sequence number to dst_world in ctx. */
uint32_t bm_pml_ctx_next_seq(struct bm_pml_ctx *ctx, int dst_world);
/* The same for the context of cid (one thread-level check for both). */
uint32_t bm_pml_match_next_seq(uint32_t cid, int dst_world);
/* A MATCH or RNDV fragment arrived (whole fragment in one contiguous buffer). */
void bm_pml_match_incoming(int peer_world, const void *frag, size_t len);
/* A blocking receive that takes its message from the transport itself
 * (recv.c, BM_PML_RECV_TAKE), single-threaded: true when req is the one
 * receive posted in its context, with a source and nothing held from it,
 * with the sequence number the next message from that source carries in
 * *seq_out. Then, once such a message was taken, bm_pml_match_taken
 * unposts req and counts the message as matched. */
bool bm_pml_match_take_seq(struct bm_pml_request *req, uint32_t *seq_out);
void bm_pml_match_taken(struct bm_pml_request *req);
/* The same before a receive of (src, tag) on cid is posted at all
 * (recv.c recv_take_early): true when no receive is posted in the
 * context, nothing from src is held early and no message of (src, tag)
 * waits unexpected (it would match first); bm_pml_match_taken_early then
 * counts the taken message as matched. */
bool bm_pml_match_take_early(uint32_t cid, int src, int tag, uint32_t *seq_out);
void bm_pml_match_taken_early(uint32_t cid, int src);
/* The same, as a header segment of exactly the header's size plus the payload. */
void bm_pml_match_incoming_split(int peer_world, const void *hdr, size_t hdr_len, const void *data,
                                 size_t data_len);
/* Header size of a MATCH or RNDV fragment from its first bytes; 0 for others. */
size_t bm_pml_match_hdr_len(const void *head, size_t head_len);
/* Post a receive: matches the oldest waiting message or queues it. */
void bm_pml_match_post(struct bm_pml_request *req);
/* Under MPI_THREAD_MULTIPLE, from a thread without the progress lock: post,
 * or when the oldest waiting message is an eager MATCH, deliver it. Returns
 * NULL then; a waiting RNDV or RGET is taken off the unexpected queue and
 * returned instead, for the caller to hand to bm_pml_recv_matched under the
 * progress lock (an ACK must not leave under the context's lock). */
struct bm_pml_uframe *bm_pml_match_post_mt(struct bm_pml_request *req);
/* Take a posted, unmatched receive off its queue. True when it was posted. */
bool bm_pml_match_unpost(struct bm_pml_request *req);
/* Oldest unexpected message matching (cid, src, tag), or NULL. The caller
 * holds the context's lock (bm_pml_ctx_lock) under MPI_THREAD_MULTIPLE. */
struct bm_pml_uframe *bm_pml_match_find_unexpected(uint32_t cid, int src, int tag);
void bm_pml_match_remove_unexpected(struct bm_pml_uframe *uf);
/* A CANCEL from peer_world: drop its message (cid, src, tag, seq) if it
 * waits unmatched in the unexpected queue; true when it was dropped. */
bool bm_pml_match_cancel(uint32_t cid, int src, int tag, uint32_t seq, int peer_world);
/* The context of cid (created if new), locked under MPI_THREAD_MULTIPLE. */
struct bm_pml_ctx *bm_pml_ctx_lock(uint32_t cid);
static inline void bm_pml_ctx_unlock(struct bm_pml_ctx *ctx)
{
    bm_pml_unlock(&ctx->lock);
}
void bm_pml_match_fini(void);

/* recv.c */
/* A receive met an unexpected message taken off the queues (uf, freed
 * here): deliver it, under the progress lock when it is a rendezvous. */
void bm_pml_recv_matched_uframe(struct bm_pml_request *req, struct bm_pml_uframe *uf);
/* A receive's status once matched with a message of msg_len bytes from src
 * (world rank peer_world): the bytes that fit in it (status.count),
 * truncation as its error. Shared by eager, rendezvous and RGET matches. */
static inline size_t bm_pml_recv_status_set(struct bm_pml_request *req, int peer_world, int src,
                                            int tag, uint64_t msg_len)
{
    req->status.source = src;
    req->status.tag = tag;
    req->src_world = peer_world;
    req->msg_len = msg_len;
    size_t fit = msg_len < req->capacity ? (size_t)msg_len : req->capacity;
    req->status.count = fit;
    req->status.error = msg_len > req->capacity ? BM_ERR_TRUNCATE : BM_OK;
    /* A shorter message into a non-contiguous type must end on one of its
     * basic elements, else the type signatures cannot match (MPI-3.1 3.3.1):
     * MPI_ERR_TYPE, as MPICH reports (its unpack stops short). */
    if (__builtin_expect(fit < req->capacity, 0) && req->conv.type &&
        bm_util_dtype_count_elems(req->conv.type, fit) < 0)
        req->status.error = BM_ERR_TYPE_MISMATCH;
    return fit;
}
/* bm_pml_recv_matched for an eager MATCH whose len bytes (the whole
 * message) are at data: fewer arguments, for the matching's fast path. */
void bm_pml_recv_matched_eager(struct bm_pml_request *req, int peer_world, int src, int tag,
                               const void *data, size_t len);
/* A posted receive met a message (uframe data, or fragment bytes in place). */
void bm_pml_recv_matched(struct bm_pml_request *req, int peer_world, uint8_t type, int src, int tag,
                         uint64_t msg_len, bm_pml_reqid_t sreq, const void *data, size_t data_len);
void bm_pml_recv_frag_cb(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata);
/* The blocks of t are large enough for a transport to move them in place
 * (gather on send, placement on receive): they average at least
 * BM_PML_IOV_BLOCK_MIN bytes. */
static inline bool bm_pml_iov_blocks(const struct bm_util_dtype *t)
{
    size_t min = bm_pml_g.cfg.iov_block_min;
    return min && t->pieces > 0 && t->size / t->pieces >= min;
}
/* Bytes [at, at + n) of conv's message as at most max transport pieces
 * (gather on send, placement on receive); *done: the bytes they cover. */
uint32_t bm_pml_conv_iov(const struct bm_util_dtype_conv *conv, size_t at, size_t n,
                         struct bm_btl_iov *iov, uint32_t max, size_t *done);
/* The FRAG place callback (btl.h, "Receive placement"). */
uint32_t bm_pml_recv_frag_place(struct bm_btl_module *m, const struct bm_btl_recv_desc *d,
                                size_t len, struct bm_btl_iov *iov, uint32_t max, void *cbdata);
/* Record bytes [start, end) of a rendezvous as arrived; returns how many
 * were new (exported for the unit test). */
size_t bm_pml_recv_ranges_add(struct bm_pml_request *req, size_t start, size_t end);
/* A rendezvous receive has all its bytes: complete it. */
void bm_pml_recv_done(struct bm_pml_request *req);
void bm_pml_recv_match_cb(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata);

/* send.c */
bm_status_t bm_pml_send_start(struct bm_pml_request *req);
/* Start a send whose start was deferred (bm_pml_start_defer), under the
 * progress lock. */
void bm_pml_send_start_deferred(struct bm_pml_request *req);
/* Continue a send from the retry queue. BM_ERR_OUT_OF_RESOURCE: keep it queued. */
bm_status_t bm_pml_send_resume(struct bm_pml_request *req);
void bm_pml_send_ack_cb(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata);
/* CANCEL (receiver side) and CANCEL_ACK (sender side) arrivals (send.c). */
void bm_pml_cancel_cb(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata);
void bm_pml_cancel_ack_cb(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata);
/* Ask the receiver to drop send req's message (bm_pml_request_cancel). */
void bm_pml_send_cancel(struct bm_pml_request *req);

/* rdma.c: single copy for large messages (RGET, PUT, FIN) */
/* Should this rendezvous be an RGET (size, a GET path: one that needs no
 * registration, else one of BM_BTL_CAP_RNDV_GET, with which it then
 * registers the buffer)? */
bool bm_pml_rdma_rget_ok(struct bm_pml_request *req);
/* Send the RGET; the send then waits for FIN (or an ACK when the receiver falls back). */
void bm_pml_rdma_rget_send(struct bm_pml_request *req, const struct bm_pml_hdr_match *mh);
/* Load the single-copy parameters once, at init (they are read without the
 * progress lock by the sends that start without it). */
void bm_pml_rdma_params_load(void);
/* Without the progress lock (send.c send_rndv_free): an RGET may read req
 * (getv of a non-contiguous layout; a registering transport's get, the
 * buffer registered now; sm's get from BM_PML_RGET_PUT_MIN); and its RGET
 * by sendi on path (BM_BTL_DONE when it went; nothing is queued). */
bool bm_pml_rdma_rget_free_ok(struct bm_pml_request *req);
int bm_pml_rdma_rget_sendi(struct bm_pml_request *req, const struct bm_pml_hdr_match *mh,
                           struct bm_btl_path *path);
/* Release the registration an RGET send holds (when it completes). */
void bm_pml_rdma_send_done(struct bm_pml_request *req);
/* A posted receive matched an RGET; tail is the RGET header after its RNDV fields. */
void bm_pml_rdma_rget_matched(struct bm_pml_request *req, int peer_world, int src, int tag,
                              uint64_t msg_len, bm_pml_reqid_t sreq, const void *tail,
                              size_t tail_len);
void bm_pml_rdma_fin_cb(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata);
/* FRAG bytes of a receive whose rget_class >= 0 arrived, or it completed. */
void bm_pml_rdma_copy_bytes(struct bm_pml_request *req, size_t n);
void bm_pml_rdma_copy_done(struct bm_pml_request *req);
/* The sender's side of a PUT: write the range asked for, answer with FIN. */
void bm_pml_rdma_put_cb(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata);

/* onesided.c: active messages (register their receive callback; free held ones) */
void bm_pml_am_init(void);
void bm_pml_am_fini(void);
/* An AM fragment arrived (what its receive callback does; exported for the
 * unit test). */
void bm_pml_am_incoming(const struct bm_btl_recv_desc *d);

/* progress.c */
/* One progress pass without the idle policy (the wait loops and the
 * progress thread apply their own). */
int bm_pml_progress_nowait(void);
/* After init or before finalize: set or clear bm_pml_g.st and its limits. */
void bm_pml_progress_st_set(bool on);
/* Under MPI_THREAD_MULTIPLE, in the spin mode: count an idle poll and
 * yield after a run of them (more threads than cores may be waiting). */
void bm_pml_progress_idle_mt(void);
/* The last pass found another thread draining: handle the miss (after a
 * few in a row, wait for that thread to complete something) and return
 * true; false when it was not a miss. Call it only under MPI_THREAD_MULTIPLE
 * (bm_pml_g.mt): it reads thread-local state, a call per idle poll. */
bool bm_pml_progress_missed(void);
/* Progress hooks are registered (a sleeper naps instead of sleeping long). */
bool bm_pml_hooks_active(void);
/* Idle polls before a thread yields or sleeps (wait.c). */
int bm_pml_idle_polls(void);

/* wait.c */
/* Read BM_PML_WAIT_MODE and BM_PML_PROGRESS_THREAD, resolve the mode, set
 * bm_pml_g.mt and the transports' init arguments (thread level, sleepers). */
bm_status_t bm_pml_wait_init(int thread_level, struct bm_btl_init_args *args);
/* After the transports are connected: the epoll set, the progress thread. */
bm_status_t bm_pml_wait_start(void);
/* BM_PML_PROGRESS_THREAD and BM_PML_PROGRESS_THREAD_HANDOFF both on (as
 * set: whether the thread started is not asked). Valid after
 * bm_pml_wait_init. */
bool bm_pml_wait_handoff_set(void);
/* Stop the progress thread (finalize, before the last drain). */
void bm_pml_wait_stop(void);
/* Set up what bm_pml_sleep sleeps in where the wait mode did not
 * (MPI_Finalize's fence); false when it cannot (bm_pml_sleep yields). */
bool bm_pml_wait_sleep_setup(void);
void bm_pml_wait_fini(void);
/* Sleep until a transport or another thread has something (block mode, the
 * progress thread). */
void bm_pml_wait_block(void);
/* Work that only polling finds was left while a sleeper sleeps: wake it. */
void bm_pml_wait_kick(void);
/* A progress pass did something: wake the threads waiting on the condition. */
void bm_pml_wait_progressed(void);
/* Wait on that condition at most ns (a thread that keeps finding another
 * one draining: BM_PML_MISS_WAIT_NS). */
void bm_pml_wait_others(long ns);
#define BM_PML_MISS_WAIT_NS 100000L
/* bm_pml_progress_wait beyond the single-threaded path: under
 * MPI_THREAD_MULTIPLE, or before init. */
int bm_pml_wait_poll(void);
/* The single-threaded waits' idle step, after bm_pml_g.st_wait_limit idle
 * polls in a row: yield, sleep or watch for a lost core, as the wait mode
 * says. marked: the idle run already set a mark of the idle watch, or
 * began its clock for the yield (the caller clears it when a poll does
 * something). */
void bm_pml_wait_idle_st(bool *marked);
/* The idle step's limit for the resolved mode (4096 where the mode has
 * none: the step then only looks at the peers). */
int bm_pml_wait_idle_st_limit(void);
/* Sleeps in the kernel so far, and how long a wait polls before it sleeps
 * (0: right after the idle polls): for BM_PML_STATS and
 * tests/mpi/mt_spin_block.c. */
unsigned long bm_pml_wait_sleeps(void);
/* Yields of the yield mode's 1 us limit in a job over several hosts
 * (wait.c yield_when_due): for tests/mpi/pml_yield_time.c. */
unsigned long bm_pml_wait_timed_yields(void);
uint64_t bm_pml_wait_spin_ns(void);
/* Yields of tests where ranks share cores (bm_pml_progress_test): for BM_PML_STATS and
 * tests/mpi/pml_test_yield.c. */
unsigned long bm_pml_wait_test_yields(void);
/* How often it yielded (for BM_PML_STATS and tests/mpi/pml_idle_watch.c). */
unsigned long bm_pml_wait_contended_yields(void);
/* One line of sleeping statistics (BM_PML_STATS). */
size_t bm_pml_wait_report(char *buf, size_t len);
void bm_pml_pending_add(struct bm_pml_request *req);
/* Send a control header (ACK) to a peer now, or queue it for retry. */
void bm_pml_ctl_send(int peer_world, bm_btl_tag_t tag, const void *hdr, size_t len);
/* The same for a fragment given as segments (copied). */
void bm_pml_ctl_sendv(int peer_world, bm_btl_tag_t tag, const struct bm_btl_segment *segs,
                      uint32_t nsegs);
/* May a fragment to this peer go by sendi on m? Only when the peer has a
 * single eager path: sendi hands back no descriptor, so a fragment it sent
 * cannot be reported lost and resent when a path fails (with one path the
 * job ends anyway). */
static inline bool bm_pml_sendi_ok(const struct bm_btl_peer *peer, const struct bm_btl_module *m)
{
    return (m->caps & BM_BTL_CAP_SENDI) && peer->eager.count == 1;
}
/* Pick a working path of a list; NULL when none (then the peer is cut off). */
struct bm_btl_path *bm_pml_path_first(struct bm_btl_path_list *list);
/* A transport call returned a link error: mark the path failed; the peer's
 * traffic moves to its next working class, or, when no path to it remains,
 * it is held for BM_PML_PATH_GRACE (failover.c). */
void bm_pml_path_failed(int peer_world, struct bm_btl_path *path, int status, const char *what);
/* A descriptor completed with an error on (m, ep): as bm_pml_path_failed. */
void bm_pml_path_failed_ep(int peer_world, struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                           int status);
/* A control message's descriptor was called back. */
void bm_pml_ctl_done(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *ctl, int status);
/* The transports' error callback (bm_btl_base_register_error). */
void bm_pml_error_cb(struct bm_btl_module *m, const struct bm_btl_error *err, void *cbdata);

/* failover.c */
/* After add_procs: BM_PML_PATH_GRACE and the per-peer state. */
bm_status_t bm_pml_failover_init(void);
void bm_pml_failover_fini(void);
/* A sender found no working path to the peer: note the outage (when the
 * progress lock is held) and return BM_ERR_OUT_OF_RESOURCE, so that the
 * traffic waits on the retry queues until a path recovers or the grace
 * ends the job. */
int bm_pml_peer_held(int peer_world);
bool bm_pml_peer_in_outage(int peer_world);
/* While bm_pml_g.noutage > 0: the grace deadlines and the minute reports. */
int bm_pml_failover_progress(void);
/* Look now whether each peer a transport can look at (btl.h check: sm's
 * local peers) is still there (bm_pml_peer_check): for the waits' idle
 * step (wait.c, "Liveness"). A gone one ends the job. */
void bm_pml_peers_check(void);
/* restart.c: end-to-end recovery of rendezvous (README "End-to-end recovery") */
bm_status_t bm_pml_restart_init(void);
void bm_pml_restart_fini(void);
/* A FRAG or an ACK arrived from peer_world (the drainer): its requests'
 * timers see the peer making progress. */
static inline void bm_pml_restart_heard(int peer_world)
{
    if (__builtin_expect(bm_pml_g.restart_heard != NULL, 0))
        bm_pml_g.restart_heard[peer_world]++;
}
/* Receiver: whether a FRAG naming rreq from peer_world belongs to a
 * receive that a restart completed lately (a duplicate: counted, dropped
 * quietly). */
bool bm_pml_restart_dup_frag(int peer_world, bm_pml_reqid_t rreq);
/* Put a request on the watch list / take it off (request completion does).
 * A per-peer send (req->tx_peer) goes on its peer's list, under its peer's
 * lock: bm_pml_restart_watch takes it, the _locked forms need it held. */
void bm_pml_restart_watch(struct bm_pml_request *req);
void bm_pml_restart_unwatch(struct bm_pml_request *req);
void bm_pml_restart_watch_locked(struct bm_pml_request *req);
void bm_pml_restart_unwatch_locked(struct bm_pml_request *req);
/* While bm_pml_g.nwatch > 0 and the timers run: time out what stalled. */
int bm_pml_restart_progress(void);
/* A path to peer_world failed on this side (failover.c, with the progress
 * lock): restart our receives from it at once and tell it (LOST). */
void bm_pml_restart_path_lost(int peer_world);
/* A LOST from a peer: send again at once each RNDV to it without an ACK. */
void bm_pml_restart_lost_cb(struct bm_btl_module *m, const struct bm_btl_recv_desc *d,
                            void *cbdata);
/* Receiver: a rendezvous now waits for FRAGs (after its ACK left). */
void bm_pml_restart_recv_started(struct bm_pml_request *req, bm_pml_reqid_t sreq,
                                 size_t ack_offset);
/* Receiver: a rendezvous from peer_world finished with want bytes (kept in
 * a short history, so that a RNDV sent again because its ACK was lost is
 * answered). */
void bm_pml_restart_recv_finished(int peer_world, bm_pml_reqid_t sreq, size_t want);
/* Receiver: the rendezvous has every byte; tell a sender that waits. */
void bm_pml_restart_recv_done(struct bm_pml_request *req);
/* Receiver: a RNDV resent (RETRANSMIT) whose sequence number already
 * matched: answer what the sender is missing. */
void bm_pml_restart_dup_rndv(int peer_world, const struct bm_pml_hdr_rndv *rh);
/* Sender: an ACK with F_RESTART or F_DONE (send.c passes them on). */
void bm_pml_restart_ack(struct bm_pml_request *req, const struct bm_pml_hdr_ack *ah);
/* Sender: what a watched send waits for: 0 nothing (it is moving), 1 an
 * ACK for its RNDV, 2 the receiver's DONE (send.c). _locked: a per-peer
 * send, its peer's lock held. */
int bm_pml_send_watch_state(const struct bm_pml_request *req);
int bm_pml_send_watch_state_locked(const struct bm_pml_request *req);
/* Sender: a per-peer send's timer fired (its peer's lock held, waits from
 * bm_pml_send_watch_state_locked, not 0): queue it for the progress lock's
 * holder, which sends the RNDV again (1) or asks for the DONE (2). */
void bm_pml_send_tx_timer_locked(struct bm_pml_request *req, int waits);
/* The owner frees a per-peer send (request.c): under its peer's lock, not
 * the progress lock. */
void bm_pml_send_tx_free(struct bm_pml_request *req);
/* Sender: queue [offset, offset + len) to be sent again (send.c; the
 * caller advances the send). */
void bm_pml_send_resend_range(struct bm_pml_request *req, size_t offset, size_t len);
/* Sender: send the RNDV again (no ACK came) or query the receiver (no DONE). */
void bm_pml_send_rndv_again(struct bm_pml_request *req);
void bm_pml_send_query(struct bm_pml_request *req);
/* Sender: free a FRAG packed ahead and not sent (send.c; on completion). */
void bm_pml_send_ahead_drop(struct bm_pml_request *req);

/* stripe.c: adaptive striping weights (README "Adaptive striping") */
bm_status_t bm_pml_stripe_init(void);
void bm_pml_stripe_fini(void);
/* The send-list index of path to dst when dst's traffic is striped
 * adaptively, else -1. */
int bm_pml_stripe_index(int dst, const struct bm_btl_path *path);
/* A FRAG left on path idx to dst / its descriptor came back with bytes
 * delivered (0 after a failure). */
void bm_pml_stripe_sent(int dst, int idx);
void bm_pml_stripe_done(int dst, int idx, size_t bytes);
/* While bm_pml_g.stripe_on: recompute the weights every period. */
int bm_pml_stripe_progress(void);

/* des->context of control-message descriptors (others carry their header type). */
#define BM_PML_DES_CTL 0xff
/* Completion callback shared by every descriptor the PML sends. */
void bm_pml_des_cb(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                   struct bm_btl_descriptor *des, int status);

#endif
