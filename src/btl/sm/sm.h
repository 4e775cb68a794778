/* Internal declarations of the sm transport (shared memory between the
 * processes of one node): its configuration, module, endpoints and the
 * private side of its fragments. The shared layout is in sm_proto.h, the
 * receive FIFO in sm_fifo.h; README.md explains the design. */
#ifndef BM_BTL_SM_H
#define BM_BTL_SM_H

#include "btl/btl.h"
#include "btl/btl_defer.h"
#include "btl/sm/sm_fbox.h"
#include "btl/sm/sm_fifo.h"
#include "btl/sm/sm_proto.h"
#include "util/xproc.h"
#include "util/shmseg.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

extern const struct bm_btl_ops bm_btl_sm_ops;

struct bm_btl_sm_config {
    size_t eager_limit;   /* payload bytes of a small fragment */
    size_t max_send_size; /* payload bytes of a large fragment */
    int eager_frags;      /* small fragments in this process's segment */
    int max_frags;        /* large fragments */
    int poll_budget;      /* fragments handled per progress call at most */
    bool single_copy;     /* offer get/put through process_vm_readv/writev */
    int peer_check_ms;    /* how often to look for dead peers while waiting; 0 = never */
    size_t fbox_bytes;    /* bytes of each fast-box ring (0: no fast boxes) */
    size_t fbox_max;      /* largest message through a fast box, PML header included */
    size_t fbox_total;    /* fast-box bytes per process for all local peers */
    int fbox_hint_min;    /* use the hint bitmap from this many local processes on */
    int fbox_after;       /* messages to a peer through the FIFO before its ring is set up */
};

enum bm_btl_sm_class {
    BM_BTL_SM_CLASS_EAGER,
    BM_BTL_SM_CLASS_MAX,
    BM_BTL_SM_NCLASS,
};

struct bm_btl_sm_module;

/* One local peer. */
struct bm_btl_sm_endpoint {
    struct bm_btl_sm_module *module; /* ours, that reaches it */
    /* Under MPI_THREAD_MULTIPLE: the send lock of this peer (README
     * "Threads"): sendi's fast-box path takes it and nothing else; it
     * guards our ring in its segment (tx, fbox_tx, fbox_wait) and is taken
     * after the module's lock where both are held. */
    struct bm_util_lock lock;
    int rank;
    pid_t pid;
    /* Its card in the modex (valid until finalize; copied out with memcpy:
     * no alignment promised). The segment is mapped from it on first use
     * (bm_btl_sm_ep_attach), unless BM_BTL_SM_FBOX_AFTER=0. */
    const void *card;
    bm_status_t attach_status; /* BM_OK, or why mapping failed (then for good) */
    unsigned char *seg;        /* the peer's segment, mapped here; NULL until first use */
    size_t seg_size;
    struct bm_btl_sm_seg_ctl *ctl; /* == seg */
    /* Our fragments sent to it, not yet back. Written under the module's
     * lock, read by sendi's fast-box path under the endpoint's lock only:
     * relaxed atomic loads and stores (bm_btl_sm_outstanding_add). */
    int outstanding;
    int amo_pending;    /* of those, atomic requests (flush waits for them) */
    bool failed;        /* its process is gone: sends fail with BM_ERR_PEER_GONE (atomic stores) */
    bool pid_unseen;    /* its pid was not there at start-up (another PID namespace): no look */
    int local_rank;     /* its index on the node */
    bool fbox;          /* both segments have rings: its ring to us is watched */
    bool fbox_tx;       /* our ring in its segment is backed by memory: send there */
    uint32_t fbox_wait; /* sendi calls to go before fbox_tx is set up */
    bool tx_hint;       /* its segment wants our hint bit set */
    /* Under MPI_THREAD_MULTIPLE fbox_tx and fbox_wait stay false and 0, so
     * that sendi's unlocked ring test fails at once and sends take the
     * locked path (sm_fbox.c); the ring's state is kept here instead, under
     * the endpoint's lock. */
    bool fbox_tx_mt;
    uint32_t fbox_wait_mt;
    struct bm_btl_sm_fbox_tx tx; /* our ring in its segment */
    uint64_t tx_rx_mark;         /* module's rx_count at our last ring send to it */
    struct sockaddr_un bell;     /* its doorbell (sm_bell.c) */
    socklen_t bell_len;          /* 0: unknown */
    bool bell_ring;              /* it may sleep: look at its flag after each send */
    uint64_t ended_ns;           /* when a check first found its process ended (0: not yet) */
    /* Its ring in our segment, last and on a cache line of its own (the
     * struct's size is a multiple of 64): under MPI_THREAD_MULTIPLE the
     * thread in progress writes rx while other threads write tx and the
     * lock above, sending to the same peer. */
    _Alignas(64) struct bm_btl_sm_fbox_rx rx;
};

/* The initiator's record of an atomic request in flight (sm_atomic.c). */
struct bm_btl_sm_amo_wait {
    bm_btl_rdma_cb_fn cb;
    void *local_addr; /* where the previous value goes; NULL for atomic_op */
    struct bm_btl_reg_handle *local_handle;
    void *context, *cbdata;
    uint32_t flags; /* BM_BTL_ATOMIC_OP_F_* */
};

/* Private side of one of our fragments (descriptor first: a descriptor
 * pointer is a fragment pointer). */
struct bm_btl_sm_frag {
    struct bm_btl_descriptor des;
    struct bm_btl_sm_frag_hdr *hdr; /* in our segment */
    bm_btl_sm_rptr_t rptr;
    struct bm_btl_sm_endpoint *dest; /* while in flight */
    uint32_t cap;                    /* payload capacity */
    uint8_t cls;
    bool in_flight; /* pushed, not yet returned */
    bool internal;  /* made by sendi or an atomic: no descriptor callback, back to the pool */
    bool amo;       /* an atomic request: amo_wait completes it */
    struct bm_btl_sm_amo_wait amo_wait;
    /* Sent to a peer that died: kept out of the pool until this time (see
     * sm_peer.c), 0 otherwise. */
    uint64_t quarantine_until_ns;
    bool freed_in_quarantine; /* its owner freed it during the quarantine */
};

struct bm_btl_sm_module {
    struct bm_btl_module super;
    struct bm_btl_sm_config config;
    /* MPI_THREAD_MULTIPLE (init args): sm locks for itself
     * (BM_BTL_CAP_THREADS, README "Threads"; lock at the end). */
    bool mt;
    const struct bm_rte_proc *self; /* this process, from the component's runtime */
    int rank, nprocs;
    char name[88];             /* shm_open name of our segment */
    struct bm_util_shmseg shm; /* our segment (util/shmseg.h) */
    int seg_fd;                /* kept open for peers' /proc/<pid>/fd/<fd>; -1: by name */
    unsigned char *seg;        /* == shm.addr */
    size_t seg_size;
    struct bm_btl_sm_seg_ctl *ctl;
    struct bm_btl_sm_fifo_reader reader;
    /* Messages taken from our rings (delivered or by recv_take): a ring
     * send that finds it unchanged since the last one to that peer is in a
     * stream, and starts its next message on a line of its own
     * (bm_btl_sm_fbox_reserve's whole). Written by progress's one caller;
     * relaxed atomic accesses. */
    uint64_t rx_count;
    /* rank -> base address of that rank's segment here (ours included),
     * NULL for ranks we do not reach. Resolves relative pointers. */
    unsigned char **bases;
    struct bm_btl_sm_endpoint **eps; /* rank -> endpoint or NULL */
    /* rank -> every endpoint ever added. They stay allocated (and their
     * segments mapped) until finalize, even after del_procs, so a fragment
     * still in a FIFO never points at freed memory. */
    struct bm_btl_sm_endpoint **all_eps;
    struct bm_btl_sm_frag *frags; /* every fragment of our segment */
    uint32_t nfrags;
    /* Fragments of each class made so far (lazy_rings: the pool is backed
     * with memory in steps as it is used, the first ones at start-up). */
    uint32_t frag_ready[BM_BTL_SM_NCLASS];
    uint32_t frag_base[BM_BTL_SM_NCLASS];   /* index of each class's first fragment */
    uint32_t *free_stack[BM_BTL_SM_NCLASS]; /* indices of free fragments */
    uint32_t nfree[BM_BTL_SM_NCLASS];
    /* Under MPI_THREAD_MULTIPLE the free fragments are not in free_stack but
     * in a lock-free stack per class (Treiber's, sm_send.c): the head is a
     * fragment's index + 1 (0: empty) in the low 32 bits and a count of
     * changes in the high 32 (so that a head read before another thread
     * took and gave back the same fragment fails its exchange), and
     * free_next links each free fragment to the next (index + 1). So
     * threads sending to different peers take and give back fragments
     * without a lock. frag_ready grows under the module's lock and is
     * read without it (relaxed atomics). */
    _Atomic uint64_t free_head[BM_BTL_SM_NCLASS];
    uint32_t *free_next;
    /* in_flight and nquarantined are written under the module's lock with
     * bm_btl_sm_count_add, so that progress may look at them without it
     * under MPI_THREAD_MULTIPLE (sm_progress_mt's idle check). */
    int in_flight;       /* fragments pushed and not yet returned */
    int amo_pending;     /* atomic requests among them */
    int nquarantined;    /* fragments held back after a peer died */
    unsigned idle_polls; /* idle progress calls since the last peer check */
    uint64_t next_peer_check_ns;
    bool cma_ok;   /* process_vm_readv worked towards the peer probed */
    int nattached; /* peers whose segment is mapped here */
    bool closing;  /* finalize: what arrives is given back, not delivered */
    int local_rank, local_size;
    _Atomic uint64_t *hints; /* our bitmap of rings with data (in our segment) */
    int nhint_words;
    bool lazy_rings;      /* rings and fragments backed with memory when first used */
    bool frags_full_said; /* the "cannot back more fragments" warning was given */
    bool use_hints;       /* else poll every ring in by_local */
    struct bm_btl_sm_endpoint **by_local; /* local rank -> endpoint with fast boxes, or NULL */
    /* The same endpoints, packed in the order they connected (the second
     * half of by_local's allocation): an idle poll without hints looks at
     * these nrings rings only, inline in sm_progress. */
    struct bm_btl_sm_endpoint **rings;
    int nrings;
    struct bm_btl_defer_queue rdma_done; /* callbacks of finished get/put */
    /* Under MPI_THREAD_MULTIPLE: rdma_done is not empty (written under the
     * module's lock, read by progress without it). */
    bool rdma_queued;
    bool bells;           /* we may sleep: we have a doorbell (sm_bell.c) */
    int bell_rx, bell_tx; /* our doorbell; the socket we ring others' with */
    /* Under MPI_THREAD_MULTIPLE: the module's recursive lock, held by every
     * operation but sendi's ring path and get/put's copies; progress takes
     * it only around what senders share, never across a callback (README
     * "Threads"). */
    struct bm_util_lock lock;
};

/* An instance of the transport: one module, or none when this process is
 * alone on its node. */
struct bm_btl_sm_component {
    struct bm_btl_component super;
    struct bm_btl_module *modules[1];
    struct bm_btl_sm_module *module; /* NULL without local peers */
    bool sleepers;                   /* init args->sleepers */
};

/* Under MPI_THREAD_MULTIPLE: enter and leave the module's lock. */
static inline void bm_btl_sm_enter(struct bm_btl_sm_module *sm)
{
    if (__builtin_expect(sm->mt, 0))
        bm_util_lock_take(&sm->lock);
}
static inline void bm_btl_sm_leave(struct bm_btl_sm_module *sm)
{
    if (__builtin_expect(sm->mt, 0))
        bm_util_lock_give(&sm->lock);
}

/* *c += d for the counters that progress and sendi's fast-box path read
 * without the module's lock (in_flight, nquarantined, ep->outstanding):
 * relaxed atomic loads and stores (plain moves on x86) in a process with
 * one thread in sm at a time; under MPI_THREAD_MULTIPLE (mt) an atomic
 * add, since senders push fragments under no lock (bm_btl_sm_frag_push)
 * while the thread in progress takes returned ones back. */
static inline void bm_btl_sm_count_add(bool mt, int *c, int d)
{
    if (mt)
        __atomic_fetch_add(c, d, __ATOMIC_RELAXED);
    else
        __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + d, __ATOMIC_RELAXED);
}
static inline void bm_btl_sm_outstanding_add(struct bm_btl_sm_endpoint *ep, int d)
{
    bm_btl_sm_count_add(ep->module->mt, &ep->outstanding, d);
}

/* Base address here of rank's segment, mapping it now (a fragment of a
 * rank this process never talked to: the tail of a FIFO it appends to, or a
 * message from it). A segment that cannot be mapped then ends the process
 * with a message: the FIFO it is threaded through cannot be followed. */
unsigned char *bm_btl_sm_base_slow(struct bm_btl_sm_module *sm, int rank);

/* Address here of the fragment a relative pointer names (a bm_btl_sm_resolve_fn). */
static inline struct bm_btl_sm_frag_hdr *bm_btl_sm_resolve(void *ctx, bm_btl_sm_rptr_t p)
{
    struct bm_btl_sm_module *sm = ctx;
    int rank = bm_btl_sm_rptr_rank(p);
    /* Acquire (a plain load on x86): under MPI_THREAD_MULTIPLE progress
     * reads the endpoint a sender may just have mapped (sm_ep_map). */
    unsigned char *base = __atomic_load_n(&sm->bases[rank], __ATOMIC_ACQUIRE);
    if (__builtin_expect(base == NULL, 0))
        base = bm_btl_sm_base_slow(sm, rank);
    return (struct bm_btl_sm_frag_hdr *)(base + bm_btl_sm_rptr_offset(p));
}

/* Map ep's segment and connect the fast boxes and the doorbell, if not
 * done yet. BM_OK, or (once the mapping failed) the path is reported
 * failed and the reason returned, now and for every later call:
 * BM_ERR_PEER_GONE when the peer ended before its first use (its segment
 * left with it), BM_ERR_LINK_DOWN otherwise. */
bm_status_t bm_btl_sm_ep_attach_slow(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep);
static inline bm_status_t bm_btl_sm_ep_attach(struct bm_btl_sm_module *sm,
                                              struct bm_btl_sm_endpoint *ep)
{
    if (__builtin_expect(ep->ctl != NULL, 1))
        return BM_OK;
    return bm_btl_sm_ep_attach_slow(sm, ep);
}

/* sm_segment.c */
bm_status_t bm_btl_sm_segment_create(struct bm_btl_sm_module *sm);
bm_status_t bm_btl_sm_segment_attach(struct bm_btl_sm_module *sm, int rank,
                                     const struct bm_btl_sm_card *card,
                                     struct bm_btl_sm_endpoint *ep);
void bm_btl_sm_segment_detach(struct bm_btl_sm_endpoint *ep);
void bm_btl_sm_segment_destroy(struct bm_btl_sm_module *sm);

/* sm_send.c */
struct bm_btl_descriptor *bm_btl_sm_alloc(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                                          uint8_t order, size_t size, uint32_t flags);
void bm_btl_sm_free(struct bm_btl_module *m, struct bm_btl_descriptor *des);
struct bm_btl_descriptor *bm_btl_sm_prepare_src(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                                                const void *data, size_t reserve, size_t *size,
                                                uint8_t order, uint32_t flags);
int bm_btl_sm_send(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                   struct bm_btl_descriptor *des, bm_btl_tag_t tag);
/* In sm_fbox.c: the fast box first, in one frame; the FIFO after. */
int bm_btl_sm_sendi(struct bm_btl_module *m, struct bm_btl_endpoint *ep, const void *hdr,
                    size_t hdr_len, const void *payload, size_t payload_len, uint8_t order,
                    uint32_t flags, bm_btl_tag_t tag, struct bm_btl_descriptor **des_out);
/* sendi's FIFO path (sm_send.c), for what the fast box (sendi, sm_fbox.c)
 * does not take. */
int bm_btl_sm_sendi_fifo(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep,
                         const void *hdr, size_t hdr_len, const void *payload, size_t payload_len,
                         uint8_t order, uint32_t flags, bm_btl_tag_t tag,
                         struct bm_btl_descriptor **des_out);
/* Take a free fragment able to carry size bytes; NULL when none is left.
 * Under MPI_THREAD_MULTIPLE without any lock held (the pool is lock-free;
 * growing it takes the module's lock). */
struct bm_btl_sm_frag *bm_btl_sm_frag_take(struct bm_btl_sm_module *sm, size_t size);
/* MPI_THREAD_MULTIPLE: move the free fragments from free_stack to the
 * lock-free stacks (once, after the module is made). */
bm_status_t bm_btl_sm_pool_mt(struct bm_btl_sm_module *sm);
/* Move class cls's fragments in free_stack to its lock-free stack (after
 * bm_btl_sm_frags_grow under MPI_THREAD_MULTIPLE). */
void bm_btl_sm_pool_move(struct bm_btl_sm_module *sm, int cls);
/* Whether ep's segment is mapped and connected (its base published last,
 * sm_ep_map), read without a lock; else map it under the module's lock
 * (bm_btl_sm_ep_attach). For senders that hold no lock under
 * MPI_THREAD_MULTIPLE. */
bm_status_t bm_btl_sm_ep_attach_any(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep);
/* A fragment sent to ep when ep was declared failed: take it out of
 * flight and keep it from reuse a while, as bm_btl_sm_peer_failed does for
 * those it finds (sm_peer.c; under the module's lock). */
void bm_btl_sm_frag_quarantine(struct bm_btl_sm_module *sm, struct bm_btl_sm_frag *f,
                               struct bm_btl_sm_endpoint *ep);
/* Back up to n more fragments of class cls with memory and put them in the
 * free stack; BM_ERR_OUT_OF_RESOURCE when none is left to make or /dev/shm
 * has no room (said once). */
bm_status_t bm_btl_sm_frags_grow(struct bm_btl_sm_module *sm, int cls, uint32_t n);
/* Append fragment f (len payload bytes) to dest's FIFO. BM_OK, or under
 * MPI_THREAD_MULTIPLE BM_ERR_PEER_GONE when dest was declared failed
 * meanwhile and the fragment was not completed for it (then it is out of
 * flight, quarantined, and the caller still owns the descriptor). Under
 * MPI_THREAD_MULTIPLE without any lock held, or the module's. */
int bm_btl_sm_frag_push(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *dest,
                        struct bm_btl_sm_frag *f, size_t len, bm_btl_tag_t tag, uint8_t hdr_flags);
/* Handle what arrived on our FIFO (at most budget fragments). */
int bm_btl_sm_poll_fifo(struct bm_btl_sm_module *sm, int budget);
/* The same under MPI_THREAD_MULTIPLE, called without the module's lock
 * (progress's one caller): it takes the lock around the fragment pool's
 * bookkeeping only, and calls back under none. */
int bm_btl_sm_poll_fifo_mt(struct bm_btl_sm_module *sm, int budget);
/* Finalize: wait a little, taking our FIFO, until every fragment we sent
 * is back from the peers that still live (bm_btl_sm_module_finalize). */
void bm_btl_sm_fifo_drain(struct bm_btl_sm_module *sm);

/* sm_fbox.c */
/* Deliver what the hint bitmap says has arrived in fast boxes (at most budget). */
int bm_btl_sm_fbox_poll(struct bm_btl_sm_module *sm, int budget);
/* Deliver up to budget messages of ep's ring (without hints, sm_progress
 * calls this for each connected ring whose next word is ready). */
int bm_btl_sm_fbox_deliver(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep, int budget);
/* recv_take (btl.h): ep's next ring message copied straight to buf. */
int64_t bm_btl_sm_recv_take(struct bm_btl_module *m, struct bm_btl_endpoint *ep, bm_btl_tag_t tag,
                            const void *key, size_t key_len, void *buf, size_t cap);
/* Deliver everything in ep's fast box now (before a FIFO fragment from ep,
 * which was sent after it). */
int bm_btl_sm_fbox_drain(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep);
/* Set up both rings with ep once its segment is mapped. */
void bm_btl_sm_fbox_connect(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep);
/* Back our ring in ep's segment with memory (MADV_POPULATE_WRITE through
 * our mapping) and start sending through it; on failure the FIFO carries
 * on. Rings reserved with the segment (no lazy_rings) are just switched on. */
void bm_btl_sm_fbox_enable(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep);
/* Whether rings can be left unreserved until used (the kernel has
 * MADV_POPULATE_WRITE). */
bool bm_btl_sm_fbox_lazy_supported(void);

/* sm_peer.c */
/* A peer's process is gone (or its path broke): report it through the
 * error callback, then complete every fragment still sent to it with status. */
void bm_btl_sm_peer_failed(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep, int status,
                           const char *what);
/* Whether pid has ended: gone, or a zombie not yet reaped by its parent.
 * The one "is this peer dead" test of sm (peer checks, finalize drain,
 * first mapping). */
bool bm_btl_sm_process_ended(pid_t pid);
/* Called by idle progress calls while fragments are out: now and then,
 * looks for peers whose process is gone and releases quarantined fragments.
 * Returns the number of completions it caused. */
int bm_btl_sm_peer_check(struct bm_btl_sm_module *sm);
/* btl.h check: whether ep's process still exists (looked at now; a dead
 * one is reported as peer_check reports it). */
bm_status_t bm_btl_sm_check(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep);
/* Give a fragment back to the pool (sm_send.c). */
void bm_btl_sm_frag_release(struct bm_btl_sm_module *sm, struct bm_btl_sm_frag *f);

/* sm_bell.c: the doorbell of sleeping receivers (btl.h "Sleeping") */
bm_status_t bm_btl_sm_bell_open(struct bm_btl_sm_module *sm);
void bm_btl_sm_bell_close(struct bm_btl_sm_module *sm);
/* Learn ep's doorbell address (add_procs). */
void bm_btl_sm_bell_peer(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep);
/* ep armed its doorbell: clear it and ring (slow path of bm_btl_sm_bell_check). */
void bm_btl_sm_bell_ring(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep);
int bm_btl_sm_wait_fd(struct bm_btl_sm_module *sm);
int bm_btl_sm_wait_arm(struct bm_btl_sm_module *sm, int64_t *timeout_ns);
void bm_btl_sm_wait_disarm(struct bm_btl_sm_module *sm);

/* After publishing something ep will read (a message, a returned fragment):
 * ring ep when it sleeps. The fence orders the publication before the load
 * of its flag (sm_bell.c says why both sides need one). */
static inline void bm_btl_sm_bell_check(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep)
{
    (void)sm;
    if (__builtin_expect(!ep->bell_ring, 1))
        return;
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&ep->ctl->bell_armed, memory_order_relaxed))
        bm_btl_sm_bell_ring(sm, ep);
}

/* sm_rdma.c */
bool bm_btl_sm_cma_probe(struct bm_btl_sm_endpoint *ep, uint64_t remote_seg_addr);
int bm_btl_sm_put(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                  uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                  const struct bm_btl_reg_handle *remote_handle, size_t size, uint32_t flags,
                  uint8_t order, bm_btl_rdma_cb_fn cb, void *context, void *cbdata);
/* process_vm_readv with both piece lists (non-contiguous single copy). */
int bm_btl_sm_getv(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                   const struct bm_btl_iov *local, uint32_t nlocal, const struct bm_btl_iov *remote,
                   uint32_t nremote, uint32_t flags, bm_btl_rdma_cb_fn cb, void *context,
                   void *cbdata);
int bm_btl_sm_get(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                  uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                  const struct bm_btl_reg_handle *remote_handle, size_t size, uint32_t flags,
                  uint8_t order, bm_btl_rdma_cb_fn cb, void *context, void *cbdata);
bm_status_t bm_btl_sm_flush(struct bm_btl_module *m, struct bm_btl_endpoint *ep);

/* sm_atomic.c */
int bm_btl_sm_atomic_op(struct bm_btl_module *m, struct bm_btl_endpoint *ep, uint64_t remote_addr,
                        const struct bm_btl_reg_handle *remote_handle, enum bm_btl_atomic_op op,
                        uint64_t operand, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                        void *context, void *cbdata);
int bm_btl_sm_atomic_fop(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                         uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                         const struct bm_btl_reg_handle *remote_handle, enum bm_btl_atomic_op op,
                         uint64_t operand, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                         void *context, void *cbdata);
int bm_btl_sm_atomic_cswap(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                           uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                           const struct bm_btl_reg_handle *remote_handle, uint64_t compare,
                           uint64_t value, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                           void *context, void *cbdata);
/* Target side: run the request in one of a peer's fragments and write the
 * answer into it, before the fragment goes home. */
void bm_btl_sm_amo_run(struct bm_btl_sm_frag_hdr *hdr);
/* Initiator side: an atomic request is over (returned, its target died, or
 * the job ends): report status, the fetched value when status is BM_OK, and
 * give the fragment back. ep is where it was sent. */
void bm_btl_sm_amo_finish(struct bm_btl_sm_module *sm, struct bm_btl_sm_frag *f,
                          struct bm_btl_sm_endpoint *ep, int status);
/* The same in two steps, for progress under MPI_THREAD_MULTIPLE: the
 * bookkeeping (under the module's lock), then the callback (under none). */
struct bm_btl_sm_amo_wait bm_btl_sm_amo_settle(struct bm_btl_sm_module *sm,
                                               struct bm_btl_sm_frag *f,
                                               struct bm_btl_sm_endpoint *ep, int status);
void bm_btl_sm_amo_call(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep,
                        const struct bm_btl_sm_amo_wait *w, int status);

#endif
