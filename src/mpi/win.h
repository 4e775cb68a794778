/* Internals of one-sided communication (MPI-3.1 chapter 11), shared by
 * win.c (windows: creation in the four flavours, free, queries, attributes,
 * info, names, error handlers), win_ops.c (Put, Get, the accumulates,
 * their request-based forms), win_sync.c (fence, PSCW, locks, flushes),
 * win_agent.c (the active-message protocol of osc_proto.h on both sides:
 * the target-side agent and the origin's answers) and win_acc.c (applying
 * an accumulate, element-wise atomic, and the mapping onto transport
 * atomics).
 *
 * Paths. Every window chooses, per target rank, how operations reach that
 * target's memory (struct bm_osc_target.path):
 *   SHM  the target's window is mapped in this process (a segment the
 *        library allocated for MPI_Win_allocate / _allocate_shared among
 *        the processes of one node, or this process's own memory of any
 *        window): loads, stores and CPU atomics, no message at all;
 *   BTL  a transport reaches the target with put and get (sm's
 *        single copy, self, dgram's emulated RDMA, ofi): contiguous puts
 *        and gets go to bm_btl_put/get; fetch-and-op and compare-and-swap
 *        on 8-byte (and 4-byte) integers go to the transport's atomics when
 *        it has them (sm, self); every other accumulate goes to the agent;
 *   AM   no RDMA (tcp): every operation is an active message to the agent.
 * The agent runs inside the target's progress (any MPI call that waits, a
 * progress hook, the progress thread once there is one).
 *
 * Atomicity. Accumulates (and get_accumulate, fetch_and_op,
 * compare_and_swap) of one predefined type are atomic per element with
 * respect to each other whoever carries them out: on a window in shared
 * memory, the origins of the node and the target's agent apply them with a
 * compare-and-swap loop per element (elements of more than 8 bytes under a
 * lock striped by address, kept in the segment); on other windows only the
 * target process applies them (agent, transport atomics run by the target
 * process, or the target itself for its own window), one at a time.
 *
 * Threads: as the rest of src/mpi (MPI_THREAD_SERIALIZED). */
#ifndef BM_MPI_WIN_H
#define BM_MPI_WIN_H

#include "btl/btl.h"
#include "mpi/mpi_internal.h"
#include "mpi/osc_proto.h"
#include "pml/pml.h"
#include "util/shmseg.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BM_MPI_MAGIC_WIN 0x77696e64U /* "wind" */

enum bm_osc_path {
    BM_OSC_PATH_SHM,
    BM_OSC_PATH_BTL,
    BM_OSC_PATH_AM,
};

/* Lock words (in a window's shared segment, or in struct bm_mpi_win):
 * bit 63 set = held exclusively; the low 32 bits count shared holders. */
#define BM_OSC_LOCK_EXCL_BIT (1ull << 63)

/* What this process holds at a target (passive target). */
enum bm_osc_lock_state {
    BM_OSC_LOCK_NONE,
    BM_OSC_LOCK_HELD_SHARED,
    BM_OSC_LOCK_HELD_EXCLUSIVE,
    BM_OSC_LOCK_NOCHECK, /* MPI_MODE_NOCHECK: treated as held, nothing to release */
};

/* One rank of the window as seen from this process. */
struct bm_osc_target {
    struct bm_mpi_win *win;     /* the window (transport callbacks get the target) */
    int world;                  /* world rank */
    uint8_t path;               /* enum bm_osc_path */
    uint8_t lock;               /* enum bm_osc_lock_state: what this process holds there */
    bool locked_all;            /* the lock was taken for MPI_Win_lock_all (lazily) */
    char *shm;                  /* SHM: its window memory as mapped here */
    _Atomic uint64_t *shm_lock; /* SHM: its lock word */
    uint64_t base;              /* its window's base address in its own process (dynamic: 0) */
    uint64_t size; /* bytes of its window (dynamic: UINT64_MAX, checked by the agent) */
    int disp_unit;
    /* BTL: the transport path and its capabilities */
    struct bm_btl_module *m;
    struct bm_btl_endpoint *ep;
    struct bm_btl_reg_handle *rhandle; /* its registration for m (NULL: none needed) */
    /* a transport with fetching atomics that needs no registration (sm,
     * self), which may differ from m (sm without single copy) */
    struct bm_btl_module *amo_m;
    struct bm_btl_endpoint *amo_ep;
    uint64_t amo_sink; /* where a non-fetching atomic done as a fetching one puts its result */
    /* the window's accumulate-family atomics (win->acc_btl): win->acc_m's
     * endpoint to it (this process's own: a loopback endpoint), and its
     * registration is rhandle (this process's own: a copy of win->reg's) */
    struct bm_btl_endpoint *acc_ep;
    size_t am_max; /* data bytes one active message to it carries (0: not known yet) */
    /* operations in flight and to synchronise */
    int rdma_out;         /* transport put/get/atomics not called back yet */
    bool flush_due;       /* transport operations since the last bm_btl_flush to it */
    int answers_out;      /* operations waiting for an ANSWER from it */
    uint32_t am_unsynced; /* active messages sent since the last flush/unlock/complete */
    uint32_t am_counted;  /* counted (fence epoch) active messages sent this epoch */
    uint8_t acc_channel;  /* last accumulate went: 0 none, 1 agent, 2 transport atomics */
    /* PSCW: POST messages received from it, and those consumed by MPI_Win_start */
    uint32_t posts, posts_used;
    /* AM: small PUTs and ACCs not sent yet, as BATCH items (osc_proto.h);
     * they go with the next message to this target */
    char *batch;
    size_t batch_len, batch_cap;
    uint32_t batch_items;
};

/* Per-rank control block at the start of a shared segment. */
struct bm_osc_shm_ctl {
    _Atomic uint64_t lock; /* the rank's lock word */
    uint64_t offset;       /* where its memory starts in the segment */
    uint64_t size;         /* bytes of it */
    int32_t disp_unit;
    char pad[36];
};
_Static_assert(sizeof(struct bm_osc_shm_ctl) == 64, "one cache line per rank");

/* Striped locks for accumulates on elements of more than 8 bytes in a
 * shared segment (after the control blocks). */
#define BM_OSC_SHM_STRIPES 64

/* A barrier of the processes of one segment (after the stripes): the fence
 * of a window whose processes all share the segment. */
struct bm_osc_shm_bar {
    _Atomic uint32_t count; /* arrivals in this round */
    char pad[60];
    _Atomic uint32_t gen; /* rounds completed */
    char pad2[60];
};

/* A memory region attached to a dynamic window. */
struct bm_osc_region {
    uint64_t base, size;
    struct bm_btl_reg_handle **handles; /* per registered module (win->nregmods), or NULL */
};

/* A transport this process registers window memory with (needs
 * BM_BTL_CAP_REG_MEM). */
struct bm_osc_regmod {
    struct bm_btl_module *m;
    int ordinal; /* among this process's modules of the same transport */
};

/* A queued lock request at this process (target side), granted later. */
struct bm_osc_lock_wait {
    struct bm_osc_lock_wait *next;
    int origin_world;
    uint8_t type; /* BM_OSC_LOCK_* */
    uint64_t opid;
};

enum bm_osc_access {
    BM_OSC_ACCESS_NONE,
    BM_OSC_ACCESS_FENCE,    /* between fences */
    BM_OSC_ACCESS_PSCW,     /* between start and complete */
    BM_OSC_ACCESS_LOCK,     /* at least one MPI_Win_lock held */
    BM_OSC_ACCESS_LOCK_ALL, /* MPI_Win_lock_all */
};

struct bm_mpi_win {
    uint32_t magic;
    uint32_t id;   /* active-message window id: the private communicator's context id */
    MPI_Comm comm; /* private duplicate of the user's communicator */
    int flavor;    /* MPI_WIN_FLAVOR_* */
    int model;     /* MPI_WIN_UNIFIED */
    void *base;    /* this process's window (NULL for dynamic windows) */
    MPI_Aint size;
    int disp_unit;
    bool own_memory; /* base was allocated here (MPI_Win_allocate without a segment) */
    MPI_Errhandler errhandler;
    struct bm_mpi_attr *attrs; /* cached attributes (attr.c via win_attr.c), newest first */
    char name[MPI_MAX_OBJECT_NAME];
    /* info hints */
    bool no_locks;
    bool acc_ordered; /* accumulate_ordering is not "none" */
    bool same_size, same_disp_unit;
    bool alloc_shared_noncontig;
    char acc_ordering[64];
    char acc_ops[32]; /* accumulate_ops: same_op_no_op or same_op */

    int nranks, rank;
    struct bm_osc_target *t; /* per rank of comm */
    int *rank_of;            /* comm rank of each world rank, -1 when not in the window */
    bool all_shm;            /* every rank reaches every other through SHM (fence = barrier) */

    /* shared segment (allocate, allocate_shared) */
    bool has_seg;
    struct bm_util_shmseg seg;
    struct bm_osc_shm_ctl *shm_ctl; /* first control block */
    _Atomic uint32_t *stripes;      /* BM_OSC_SHM_STRIPES spin locks */
    struct bm_osc_shm_bar *bar;     /* the segment's barrier */
    int shm_first, shm_count;       /* comm ranks in the segment: [first, first + count) order */
    int *shm_ranks;                 /* the comm ranks of the segment, in segment order */

    /* target side */
    _Atomic uint64_t *lock_word; /* this process's lock (segment or lock_private) */
    _Atomic uint64_t lock_private;
    struct bm_osc_lock_wait *lock_waiters;
    uint64_t am_in_counted; /* counted active messages run here, not yet matched by a fence */
    uint32_t completes;     /* PSCW COMPLETE messages received, not yet consumed */

    /* accumulate-family operations (MPI_Accumulate, MPI_Get_accumulate,
     * MPI_Fetch_and_op, MPI_Compare_and_swap) on integer elements of these
     * sizes (bit 4, bit 8) go, to every target and from every process, to
     * acc_m's atomics (win.c: acc_btl_local; src/mpi/README.md) */
    unsigned acc_btl;
    struct bm_btl_module *acc_m;

    /* registration (BTL paths of modules with BM_BTL_CAP_REG_MEM) */
    int nregmods;
    struct bm_osc_regmod *regmods;
    struct bm_btl_reg_handle **reg; /* this process's window per regmod */

    /* dynamic windows */
    struct bm_osc_region *regions;
    int nregions, cap_regions;

    /* origin side */
    enum bm_osc_access access;
    bool lock_all_nocheck; /* MPI_Win_lock_all(MPI_MODE_NOCHECK) */
    bool exposure_pscw;    /* between post and wait */
    int *post_group;       /* comm ranks that MPI_Win_post exposed to */
    int npost_group;
    int *start_group; /* comm ranks of MPI_Win_start's group */
    int nstart_group;
    int nlocked;          /* targets locked with MPI_Win_lock */
    int rdma_out;         /* all targets */
    int answers_out;      /* all targets */
    size_t rndv_limit;    /* AM puts and gets of at least this many bytes: PML messages */
    size_t batch_max;     /* AM: bytes of small messages held back per target (0: none) */
    size_t stream_min;    /* SHM: puts and gets this large copy with streaming stores */
    int error;            /* first asynchronous failure (MPI class), reported at the next sync */
    char error_what[256]; /* what it was */

    struct bm_mpi_win *next; /* in the list of windows of this process */
};

/* Thread safety. The window state is shared with the agent (win_agent.c)
 * and the transports' callbacks, which run inside progress, and progress
 * may run in another thread (the progress thread, BM_PML_PROGRESS_THREAD,
 * or another thread of an MPI_THREAD_MULTIPLE program). So every MPI_Win_*
 * and RMA call runs under the PML's progress lock (BM_OSC_LOCKED), and
 * gives it up exactly where a single-threaded process would run progress
 * (bm_osc_progress, BM_OSC_UNLOCKED around collectives): the agent then
 * sees the state at the same points as it does without threads, and a call
 * that waits for another process never holds the lock while it waits, so
 * that calls of other threads (which that process may be waiting for) and
 * the progress thread get their turn. Without threads all of it costs a
 * branch. bm_osc_lock_held: this thread took the lock in BM_OSC_LOCKED and
 * may give it up (false inside progress: a wait reached from the agent
 * never gives up the lock its progress pass holds). */
/* initial-exec: a plain load off the thread pointer, where the shared
 * library's default model calls __tls_get_addr (measured: 8% of an sm
 * MPI_Get + MPI_Win_flush) on every one-sided call. */
extern _Thread_local bool bm_osc_lock_held __attribute__((tls_model("initial-exec")));

#define BM_OSC_LOCKED(call)                                                                        \
    do {                                                                                           \
        bool taken_ = bm_pml_progress_lock();                                                      \
        bool outer_ = bm_osc_lock_held;                                                            \
        bm_osc_lock_held = taken_;                                                                 \
        int rc_ = (call);                                                                          \
        bm_osc_lock_held = outer_;                                                                 \
        bm_pml_progress_unlock(taken_);                                                            \
        return rc_;                                                                                \
    } while (0)

/* Give the lock up (when this thread holds it through BM_OSC_LOCKED) for a
 * stretch that waits inside progress; returns whether it did. */
static inline bool bm_osc_unlock(void)
{
    if (!bm_osc_lock_held)
        return false;
    bm_osc_lock_held = false;
    bm_pml_progress_unlock(true);
    return true;
}

static inline void bm_osc_relock(bool released)
{
    if (released)
        bm_osc_lock_held = bm_pml_progress_lock();
}

/* v = call, with the lock given up while it runs (collectives). */
#define BM_OSC_UNLOCKED(v, call)                                                                   \
    do {                                                                                           \
        bool released_ = bm_osc_unlock();                                                          \
        (v) = (call);                                                                              \
        bm_osc_relock(released_);                                                                  \
    } while (0)

/* One pass of progress from a one-sided call that waits. */
static inline void bm_osc_progress(void)
{
    bool released = bm_osc_unlock();
    bm_pml_progress();
    bm_osc_relock(released);
}

/* Where [disp * disp_unit, + bytes) lies in t's window, when it lies
 * inside: a multiplication and comparisons, no division (a 64-bit divide
 * was the largest single cost of an 8-byte MPI_Get on sm). */
static inline bool bm_osc_in_window(const struct bm_osc_target *t, MPI_Aint disp, uint64_t bytes,
                                    uint64_t *off_out)
{
    uint64_t off;
    if (disp < 0 || __builtin_mul_overflow((uint64_t)disp, (uint64_t)t->disp_unit, &off) ||
        off > t->size || bytes > t->size - off)
        return false;
    *off_out = off;
    return true;
}

/* A full memory barrier between this process's earlier loads and stores
 * and its later ones, as atomic_thread_fence(memory_order_seq_cst). On
 * x86-64 a locked no-op on the stack does it (as Linux's smp_mb()) at
 * about half the cost of the mfence the compiler emits, which was half of
 * an sm MPI_Win_flush; it does not order non-temporal stores, which
 * memcpy ends with an sfence of its own. */
static inline void bm_osc_fence(void)
{
#if defined(__x86_64__)
    __asm__ __volatile__("lock orq $0, (%%rsp)" ::: "memory", "cc");
#else
    atomic_thread_fence(memory_order_seq_cst);
#endif
}

/* ---- win.c ------------------------------------------------------------- */

/* The window an active message names (NULL: none, or freed). */
struct bm_mpi_win *bm_osc_win_lookup(uint32_t id);
/* The first of this process's windows (then ->next). */
struct bm_mpi_win *bm_osc_win_lookup_first(void);
/* The window's comm rank of a world rank, -1 when it is not a member. */
int bm_osc_rank_of_world(MPI_Win win, int world);
/* Testing (BM_MPI_OSC_FAIL_RDMA): should this transport operation fail? */
bool bm_osc_fail_inject(void);
/* Report an error on win through its error handler (as bm_mpi_error does
 * for communicators): returns errclass unless the handler ends the job. */
int bm_osc_win_error(MPI_Win win, int errclass, const char *fn, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The argument checks of every window function: initialized, valid window. */
int bm_osc_check_win(MPI_Win win, const char *fn);
/* Is [addr, addr + len) inside the regions attached to this process's dynamic window
 * (one, or several attached end to end)? */
bool bm_osc_region_ok(MPI_Win win, uint64_t addr, uint64_t len);

/* ---- win_attr.c -------------------------------------------------------- */

/* MPI_Win_free: run the delete callbacks of every attribute (newest first). */
int bm_mpi_win_attr_delete_all(MPI_Win win, const char *fn);

/* ---- win_acc.c --------------------------------------------------------- */

/* Apply an accumulate of n elements of the predefined type dt with the
 * predefined op (MPI_REPLACE and MPI_NO_OP included) to target memory:
 * target[i] = origin[i] op target[i]. When old is not NULL the previous
 * contents are written there first (get_accumulate). atomic: per element
 * with a compare-and-swap loop (other processes apply to the same memory
 * at the same time: shared segments), elements wider than 8 bytes under
 * the stripe lock of their place in the segment; otherwise plain (only
 * this process applies). */
void bm_osc_acc_apply(MPI_Op op, MPI_Datatype dt, const void *origin, void *target, void *old,
                      size_t n, _Atomic uint32_t *stripes);
/* The stripe lock of the element at addr (in the segment holding
 * stripes): chosen by offset in the segment, so the same in every process. */
_Atomic uint32_t *bm_osc_stripe_of(_Atomic uint32_t *stripes, const void *addr);
/* Compare-and-swap of one element of dt (size 1, 2, 4, 8 or wider under
 * the stripes): old gets the previous value; target gets value when it
 * held compare. */
void bm_osc_cas_apply(MPI_Datatype dt, const void *compare, const void *value, void *target,
                      void *old, _Atomic uint32_t *stripes);
/* The transport atomic for one element of dt with op, when there is one:
 * true and *op_out, *flags_out (BM_BTL_ATOMIC_OP_F_32BIT) filled. */
bool bm_osc_acc_btl_op(MPI_Op op, MPI_Datatype dt, const struct bm_btl_module *m,
                       enum bm_btl_atomic_op *op_out, uint32_t *flags_out, bool *fetch_only);
/* The predefined type with id, for the agent (messages name types by id). */
MPI_Datatype bm_osc_type_of_id(unsigned id);
MPI_Op bm_osc_op_of_id(unsigned id);

/* ---- win_agent.c ------------------------------------------------------- */

/* An operation of this process waiting for one or more ANSWERs. */
struct bm_osc_op {
    uint64_t id; /* what ANSWERs name (slot + generation) */
    MPI_Win win;
    int target;                 /* comm rank */
    char *result;               /* where the answer bytes go */
    size_t want, got;           /* bytes */
    int status;                 /* first failure reported by an answer, else BM_OK */
    bool done;                  /* all answers in */
    bool keep;                  /* the caller waits for it and frees it (else freed when done) */
    struct bm_osc_req *req;     /* request-based operation this is part of, or NULL */
    struct bm_osc_fetch *fetch; /* results converted once all answers are in, or NULL */
    /* for get_accumulate/compare_and_swap on a result in a temporary buffer:
     * copy out to user memory at completion */
    void *copy_to;
    size_t copy_len;
};

/* Start the agent (register the active-message handler) at first window. */
void bm_osc_agent_init(void);
/* A fresh operation record for win/target (counted in answers_out). */
struct bm_osc_op *bm_osc_op_new(MPI_Win win, int target, void *result, size_t want);
/* Release a completed operation record. */
void bm_osc_op_free(struct bm_osc_op *op);
/* Send an active message (header + up to two payloads) to target of win. */
void bm_osc_am_send(MPI_Win win, int target, struct bm_osc_hdr *h, const void *p1, size_t l1,
                    const void *p2, size_t l2);
/* Send the PUTs and ACCs held back for targets [lo, hi) (one BATCH each). */
void bm_osc_batch_push(MPI_Win win, int lo, int hi);
/* A put of len bytes (at least win->rndv_limit) from buf to target offset
 * addr on the AM path: PUT_RNDV and the data as a PML message, completed
 * by the target's answer (counted in answers_out; part of req when not
 * NULL). buf must stay untouched until then. */
int bm_osc_am_put_rndv(MPI_Win win, int target, const void *buf, uint64_t addr, size_t len,
                       struct bm_osc_req *req);
/* A get of len bytes into buf from target offset addr on the AM path:
 * GET_RNDV, the data as a PML message received straight into buf. */
int bm_osc_am_get_rndv(MPI_Win win, int target, void *buf, uint64_t addr, size_t len,
                       struct bm_osc_req *req);
/* The largest data bytes one message to target carries. */
size_t bm_osc_am_max_data(MPI_Win win, int target);
/* Called by the agent for a lock word that may have been released: grant
 * queued requests that can be granted now. */
int bm_osc_agent_grant(MPI_Win win);
/* Target side of a lock at this process for an origin (or this process
 * itself): try to take it now. */
bool bm_osc_lock_try(_Atomic uint64_t *word, int type);
void bm_osc_lock_release(_Atomic uint64_t *word, int type);

/* ---- win_ops.c --------------------------------------------------------- */

/* A request-based operation (MPI_Rput...): completes when its parts did. */
struct bm_osc_req {
    MPI_Request r;
    int parts;    /* operations still in flight */
    int status;   /* first failure */
    bool started; /* every part was issued */
};
/* Results of a get_accumulate that arrive in a temporary buffer: released
 * by each of its answered pieces; the last converts them into the user's
 * result buffer. */
struct bm_osc_fetch;
void bm_osc_fetch_release(struct bm_osc_fetch *f);
/* A part of req finished (status: BM_OK or a failure). */
void bm_osc_req_part_done(struct bm_osc_req *req, int status);

/* Transport callback for put/get/atomics: cbdata is the window, context the
 * target (comm rank) and the request part, if any. */
void bm_osc_rdma_cb(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                    struct bm_btl_reg_handle *local_handle, void *context, void *cbdata,
                    int status);

/* ---- win_sync.c -------------------------------------------------------- */

/* May this process access target now (an epoch covers it)? Acquires a
 * lock_all lock lazily. MPI_SUCCESS or the error reported as fn. */
int bm_osc_access_check(MPI_Win win, int target, const char *fn);
/* Wait until every transport operation to target (-1: all) was called back
 * (after the transport's flush). */
void bm_osc_wait_rdma(MPI_Win win, int target);
/* Complete every operation to target (-1: every target) locally (local) or
 * at the target too; MPI_SUCCESS or the class of a failure, not reported. */
int bm_osc_complete(MPI_Win win, int target, bool local);
/* Report (and clear) a failure recorded asynchronously, as fn. */
int bm_osc_report_async(MPI_Win win, const char *fn);

#endif
