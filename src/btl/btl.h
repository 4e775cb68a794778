/* The byte transfer layer (BTL): the one interface between the
 * point-to-point layer (PML) and every transport (self, sm, tcp, dgram, ofi).
 * The PML includes this header and nothing of any transport.
 *
 * THE CONTRACT
 *
 * Component. One const struct bm_btl_ops per transport type, registered in
 * btl_registry.c, describes it; init creates an instance of it, a struct
 * bm_btl_component that the transport allocates (embedding the public part
 * first) and that every later component call receives: progress, finalize,
 * and through module->component everything a module needs of its
 * component. A transport keeps no state in file-scope variables, so two
 * instances can live in one process (unit tests run two tcp or two dgram
 * components against each other). The only exceptions allowed are
 * documented process-wide tables that are not instance state: the names an
 * exit or signal handler must still remove (util/shmseg.c keeps sm's), and
 * caches of facts about the machine (dgram's and ofi's hwloc topology,
 * ofi_mr.c's page size, libfabric loaded once by btl_ofi_load.c). Life of
 * a component: query (usable on this
 * machine? no side effects; bm_info uses it), init (create the instance and
 * zero or more modules, publish addresses through the runtime services in
 * the init arguments), progress (the component walks its modules), finalize
 * (tear down every module, release everything, free the instance).
 *
 * Registration check. Before any component is initialised, btl_base.c checks
 * each ops table once (bm_btl_ops_check): the mandatory operations are
 * there, and every capability in ops->caps has its functions. Every module
 * an init creates, and every module again after add_procs (which may add
 * capabilities, as sm adds PUT/GET), must advertise only capabilities of
 * ops->caps. A violation is a start-up error naming the transport and the
 * operation, never a NULL call on the hot path.
 *
 * Module. One per device (an interface, a shared-memory segment, a NIC
 * port). Attributes in struct bm_btl_module tell the PML what it may do:
 * limits (eager, max send, put/get), exclusivity (selection), latency class
 * and bandwidth (striping weights), and capability flags. Optional operations
 * (sendi, put, get, atomics, register_mem) exist only when the module's caps
 * advertise them; the PML checks caps when it builds its peer lists, never a
 * function pointer on the hot path.
 *
 * Endpoint. One per reachable peer per module, created by add_procs,
 * opaque to the PML: each transport defines its own endpoint struct and casts.
 *
 * Descriptor. A send in flight: local segments, a completion callback and
 * flags. seg[0] always starts with the space the caller reserved for its own
 * header. Descriptors come from alloc or prepare_src and go back with free,
 * unless BM_BTL_DES_F_BTL_OWNED is set, in which case the transport frees
 * it after the completion callback.
 *
 * Return conventions (every data-moving operation):
 *   BM_BTL_DONE (1)           completed inline; no callback unless
 *                             BM_BTL_DES_F_ALWAYS_CALLBACK was given.
 *   BM_OK (0)                 started; the callback fires on completion.
 *   BM_ERR_OUT_OF_RESOURCE    not started (no credits, queue full); the
 *                             caller still owns everything: retry later.
 *   BM_ERR_NOT_AVAILABLE      not started: a limit was hit (too large,
 *                             unsupported for this peer).
 *   a link error              the path to this peer is broken (see below).
 *
 * Completion and failure. A successful completion callback means the data
 * was delivered (for sends: handed to the peer's receive callback, or
 * guaranteed to be). When a transport decides that a path to a peer (or the
 * whole module) failed, it first calls the registered error callback with
 * the endpoint and a description, then completes every descriptor and RDMA
 * operation still outstanding on it with a negative status. A transport
 * never reports success for data that may not have arrived; it may report
 * an error for data that did arrive (the PML detects duplicates). When a
 * failed path works again, the transport reports BM_BTL_ERROR_RECOVERED and
 * the PML may take it back.
 *
 * Ordering. Fragments sent on one endpoint with the same order value arrive
 * in order only when the module sets BM_BTL_CAP_ORDERED. The PML never
 * relies on order across modules.
 *
 * RDMA and atomics (put, get, atomic_op, atomic_fop, atomic_cswap; see the
 * operations table for each parameter). The initiator names target memory
 * by remote_addr, always the virtual address of the byte in the target
 * process, as the target's own pointer to it (uint64_t so that it crosses
 * the wire unchanged), together with the target's registration handle of
 * the region containing it. The caller never computes offsets: a transport
 * whose hardware addresses registered memory by offset (libfabric without
 * FI_MR_VIRT_ADDR) subtracts the base it keeps in its own remote handle.
 * Handles: when module->reg_handle_size is 0 (self, sm) both handles may be
 * NULL; otherwise remote_handle is the reg_handle_size bytes the target got
 * from register_mem (with the REMOTE_READ/REMOTE_WRITE/ATOMIC flag the
 * operation needs) and copied to the initiator, and local_handle comes from
 * the initiator's own register_mem of local_addr (NULL when the module does
 * not set BM_BTL_CAP_REG_MEM). Callback arguments: context and cbdata are
 * both the caller's, handed back unchanged; by convention context names the
 * object the operation belongs to (a request, a window) and cbdata the
 * piece of it (a fragment, a pipeline stage). flags: only
 * BM_BTL_DES_F_ALWAYS_CALLBACK (call back even on BM_BTL_DONE; that
 * callback then runs from a later progress or flush call, never inside the
 * call that started the operation), plus BM_BTL_ATOMIC_OP_F_32BIT for
 * atomics; other descriptor flags mean nothing here. order: reserved, pass
 * 0; transports ignore it. Ordering: none. Two RDMA operations, or an RDMA
 * operation and a send, may complete and become visible at the target in
 * any order, even on one endpoint; a caller that needs order waits for the
 * first operation's completion (or flush) before starting the second.
 * Completion: a put's successful callback (or BM_BTL_DONE) means local_addr
 * may be reused; the data is visible to the target process once flush on
 * that endpoint returns (every transport of today also completes remotely
 * before calling back, but callers must not rely on it). A get's completion
 * means the data is in local_addr. An atomic is atomic with respect to
 * other atomics of the same module on the same address, and with respect to
 * the target CPU's own atomic instructions only when the module sets
 * BM_BTL_ATOMIC_F_GLOBAL. Failure: as for sends, an operation on a failed
 * path completes with a negative status; a put or atomic that fails may or
 * may not have been applied at the target.
 *
 * Receive. A callback per tag, registered with register_recv. It runs inside
 * progress, and the segments it is given are valid only until it returns.
 * A stream transport may also let the layer above say where a fragment's
 * payload goes before it arrives ("Receive placement", at struct
 * bm_btl_iov).
 *
 * Sleeping. A process with nothing to do but wait (BM_PML_WAIT_MODE=block,
 * or the PML's progress thread) may sleep in the kernel instead of
 * polling. A component that can wake it sets BM_BTL_CAP_WAIT and provides
 * wait_fd (a descriptor that becomes readable when it may have work: tcp's
 * epoll set, the UDP sockets, sm's doorbell), wait_arm (about to sleep:
 * arm what wakes the process and look once more for work, and say when
 * the component's nearest timer needs a progress call: dgram's
 * retransmissions, tcp's handshakes) and wait_disarm. A component without
 * it keeps a sleeper to short naps. Sleepers exist only when the init
 * arguments say so (args->sleepers): otherwise no sender looks at a
 * peer's doorbell, so a job that never sleeps pays nothing.
 *
 * Threads. With MPI_THREAD_SINGLE, FUNNELED or SERIALIZED (init
 * args->thread_level below BM_BTL_THREAD_MULTIPLE) one thread at a time
 * calls a component, and transports need no locking except for data shared
 * with other processes. With MPI_THREAD_MULTIPLE:
 *   - a transport whose ops->caps lacks BM_BTL_CAP_THREADS is serialised by
 *     the base: every operation of a module and the component's progress
 *     run under one recursive lock per component (component->mt_lock, taken
 *     by the inline wrappers below and by bm_btl_base_progress), held across
 *     the callbacks progress makes, so that a callback may send again on
 *     the same transport (the usnic BTL's btl_usnic_lock). The transport
 *     itself locks nothing.
 *   - a transport with BM_BTL_CAP_THREADS locks for itself (dgram, with a
 *     recursive module lock; ofi, with a lock per transmit/receive context;
 *     sm, with a send lock per endpoint for sendi's fast boxes and a
 *     recursive module lock for the rest, src/btl/sm/README.md "Threads";
 *     tcp, with a send lock per endpoint and a recursive component lock,
 *     src/btl/tcp/README.md "Threads"; self, with one endpoint lock that
 *     progress never holds across a callback, src/btl/self/README.md
 *     "Threads"). Its
 *     operations are called from several threads at
 *     once, also while progress runs; progress, flush, wait_arm and
 *     wait_disarm are called by one thread at a time, the one that holds
 *     the PML's progress lock.
 *   - for both: a send, alloc, free, prepare_src, put, get or atomic call
 *     never calls a receive or completion callback from inside itself
 *     (callbacks come only from progress and flush); an error callback
 *     from inside a call is allowed. The PML never holds a lock of its own
 *     across a transport call except its progress lock and, in that
 *     thread only, a matching context's lock, so a transport lock held
 *     across callbacks cannot deadlock.
 */
#ifndef BM_BTL_H
#define BM_BTL_H

#include "bm_status.h"
#include "runtime/rte.h"
#include "util/bitmap.h"
#include "util/lock.h"
#include "util/params.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bm_btl_module;
struct bm_btl_component;
struct bm_btl_endpoint; /* opaque; each transport has its own */
struct bm_btl_descriptor;

/* ---- tags ------------------------------------------------------------- */

typedef uint8_t bm_btl_tag_t;
#define BM_BTL_TAG_BTL     0  /* reserved for transports' internal messages */
#define BM_BTL_TAG_PML     1  /* first tag of the PML's range */
#define BM_BTL_TAG_PML_MAX 31 /* last tag of the PML's range */
#define BM_BTL_TAG_TEST    32 /* free for tests (conformance suite) */
#define BM_BTL_TAG_MAX     64 /* 1 + the highest tag */

/* ---- return value ----------------------------------------------------- */

#define BM_BTL_DONE 1 /* completed inline */
/* recv_take's answers besides a byte count (see there). */
#define BM_BTL_TAKE_NONE  (-1) /* nothing from that peer yet */
#define BM_BTL_TAKE_OTHER (-2) /* another message is next: progress delivers it */

/* ---- capabilities (module->caps) -------------------------------------- */

#define BM_BTL_CAP_SEND         0x0001u  /* alloc/prepare_src/send (all modules) */
#define BM_BTL_CAP_SENDI        0x0002u  /* sendi */
#define BM_BTL_CAP_PUT          0x0004u  /* put */
#define BM_BTL_CAP_GET          0x0008u  /* get */
#define BM_BTL_CAP_ATOMIC_OPS   0x0010u  /* atomic_op (no result) */
#define BM_BTL_CAP_ATOMIC_FOPS  0x0020u  /* atomic_fop and atomic_cswap */
#define BM_BTL_CAP_SEND_INPLACE 0x0040u  /* prepare_src may reference user memory (no copy) */
#define BM_BTL_CAP_ORDERED      0x0080u  /* same-order sends on one endpoint arrive in order */
#define BM_BTL_CAP_REG_MEM      0x0100u  /* register_mem needed before put/get on user memory */
#define BM_BTL_CAP_FAILOVER     0x0200u  /* reports path failure and recovery (see contract) */
#define BM_BTL_CAP_GETV         0x0800u  /* getv: get between lists of pieces (with CAP_GET) */
#define BM_BTL_CAP_RECV_PLACE   0x4000u  /* calls place callbacks (see "Receive placement") */
#define BM_BTL_CAP_SEND_IOV     0x10000u /* prepare_src_iov: send a list of pieces in place */
/* alloc's buffers lie in memory that the receiving process's core reads
 * next (shared memory): the PML packs the first fragments of a
 * non-contiguous message into them through a small local bounce
 * (util/dtype.h's pack_far), as packing block by block stalls on each line
 * taken back from that core. Elsewhere (tcp, dgram, ofi, self: the
 * buffer stays with this core until the kernel or provider reads it) the
 * bounce would only be one more copy. */
#define BM_BTL_CAP_SEND_FAR 0x20000u
/* ops->caps only: the transport does its own locking under MPI_THREAD_MULTIPLE
 * (the contract's "Threads"); without it the base serialises each component. */
#define BM_BTL_CAP_THREADS 0x0400u
/* ops->caps only: wait_fd, wait_arm and wait_disarm (the contract's
 * "Sleeping"): a waiting process can sleep in the kernel until this
 * component has work. */
#define BM_BTL_CAP_WAIT 0x1000u
/* stats: per-endpoint delivery counters (struct bm_btl_path_stats), read
 * by the PML's adaptive striping. */
#define BM_BTL_CAP_STATS 0x2000u
/* With BM_BTL_CAP_GET and BM_BTL_CAP_REG_MEM: the PML's rendezvous may read a
 * large message from the sender's registered buffer with get (RGET),
 * because that is faster than the transport's fragments (ofi: the
 * provider's RMA read lands in the receive buffer, where fragments land in
 * posted buffers and are copied again). */
#define BM_BTL_CAP_RNDV_GET 0x8000u
/* recv_take: a caller waiting for one message may take it straight from
 * the transport (see there). */
#define BM_BTL_CAP_RECV_TAKE 0x40000u
_Static_assert(((BM_BTL_CAP_RNDV_GET | BM_BTL_CAP_RECV_TAKE) &
                (BM_BTL_CAP_SEND | BM_BTL_CAP_SENDI | BM_BTL_CAP_PUT | BM_BTL_CAP_GET |
                 BM_BTL_CAP_ATOMIC_OPS | BM_BTL_CAP_ATOMIC_FOPS | BM_BTL_CAP_SEND_INPLACE |
                 BM_BTL_CAP_ORDERED | BM_BTL_CAP_REG_MEM | BM_BTL_CAP_FAILOVER | BM_BTL_CAP_GETV |
                 BM_BTL_CAP_RECV_PLACE | BM_BTL_CAP_THREADS | BM_BTL_CAP_WAIT | BM_BTL_CAP_STATS |
                 BM_BTL_CAP_SEND_IOV | BM_BTL_CAP_SEND_FAR)) == 0 &&
                   (BM_BTL_CAP_RNDV_GET & BM_BTL_CAP_RECV_TAKE) == 0,
               "capability bits are distinct");

/* What a transport counts of its traffic to one peer (stats). Cumulative;
 * the reader takes differences, and treats a decrease as a restart from
 * zero (tcp's counters belong to a connection, and a path that failed and
 * recovered has a new one). units_sent and units_resent count the transport's own units
 * (tcp segments, dgram datagrams) so that resent / sent is its loss. */
struct bm_btl_path_stats {
    uint64_t bytes_acked;  /* payload bytes the peer acknowledged */
    uint64_t units_sent;   /* wire units sent, resends included */
    uint64_t units_resent; /* of those, resends of units taken for lost */
};

/* args->thread_level of MPI_THREAD_MULTIPLE (the value of mpi.h's constant). */
#define BM_BTL_THREAD_MULTIPLE 3

/* atomic_flags */
#define BM_BTL_ATOMIC_F_32BIT  0x01u /* 32-bit operands supported (else 64-bit only) */
#define BM_BTL_ATOMIC_F_GLOBAL 0x02u /* atomic with respect to the CPU too */
#define BM_BTL_ATOMIC_F_FLOAT  0x04u /* floating-point add */

enum bm_btl_atomic_op {
    BM_BTL_ATOMIC_ADD,
    BM_BTL_ATOMIC_AND,
    BM_BTL_ATOMIC_OR,
    BM_BTL_ATOMIC_XOR,
    BM_BTL_ATOMIC_SWAP,
    BM_BTL_ATOMIC_MIN, /* signed */
    BM_BTL_ATOMIC_MAX, /* signed */
    BM_BTL_ATOMIC_FADD_DOUBLE,
};
/* Flag of the atomic operations: operate on 32 bits (only when the module
 * sets BM_BTL_ATOMIC_F_32BIT), else on 64. It shares its value with
 * BM_BTL_DES_F_BTL_OWNED, which means nothing to an RDMA operation. */
#define BM_BTL_ATOMIC_OP_F_32BIT 0x1u

/* exclusivity: higher wins selection for a peer */
#define BM_BTL_EXCL_SELF 1000
#define BM_BTL_EXCL_SM   500
#define BM_BTL_EXCL_HIGH 100 /* RDMA-capable networks (ofi) */
#define BM_BTL_EXCL_TCP  20
/* Over kernel UDP, dgram moves data slower than kernel TCP does
 * (docs/performance.md), so where both reach a peer tcp wins by default;
 * dgram carries traffic where tcp cannot, or when BM_BTL names it alone. */
#define BM_BTL_EXCL_DGRAM 10
#define BM_BTL_EXCL_LOW   0

/* ---- descriptors ------------------------------------------------------ */

#define BM_BTL_DES_MAX_SEGS 2

/* descriptor flags */
#define BM_BTL_DES_F_BTL_OWNED       0x01u /* transport frees it after the callback */
#define BM_BTL_DES_F_ALWAYS_CALLBACK 0x02u /* call back even when completed inline */
#define BM_BTL_DES_F_PRIORITY        0x04u /* latency-critical (control messages) */

struct bm_btl_segment {
    void *addr;
    size_t len;
};

typedef void (*bm_btl_send_cb_fn)(struct bm_btl_module *module, struct bm_btl_endpoint *endpoint,
                                  struct bm_btl_descriptor *des, int status);

struct bm_btl_descriptor {
    struct bm_btl_segment seg[BM_BTL_DES_MAX_SEGS]; /* local data; seg[0] begins with the reserve */
    uint32_t seg_count;
    uint32_t flags;               /* BM_BTL_DES_F_* */
    uint8_t order;                /* ordering channel; 0 unless the caller needs several */
    bm_btl_send_cb_fn cbfunc;     /* completion; may be NULL when nothing is to be done */
    void *cbdata;                 /* for the caller */
    void *context;                /* for the caller */
    struct bm_btl_module *module; /* set by the transport */
    void *pml_link[2];            /* free for the caller to queue the descriptor */
};

/* What a receive callback is given. Segments are valid until it returns. */
struct bm_btl_recv_desc {
    struct bm_btl_endpoint *endpoint; /* the sender's endpoint on this module (NULL: ABORTED) */
    int peer;                         /* the sender's rank */
    bm_btl_tag_t tag;
    uint32_t seg_count;
    const struct bm_btl_segment *seg;
    /* Receive placement (BM_BTL_CAP_RECV_PLACE): 0 for every fragment the
     * place callback did not take. Else one of these, and the segments hold
     * only the first hdr_len bytes the place callback saw. */
    uint32_t flags; /* BM_BTL_RECV_F_* */
    size_t placed;  /* PLACED: the bytes after those that are now in the iovecs */
};
/* The rest of the fragment is in the memory the place callback named. */
#define BM_BTL_RECV_F_PLACED 0x1u
/* The fragment was lost after its place callback took it (the connection
 * broke, or it was dropped for a test): some of its bytes may have been
 * written to the iovecs, none of them may be counted as received. */
#define BM_BTL_RECV_F_ABORTED 0x2u

typedef void (*bm_btl_recv_cb_fn)(struct bm_btl_module *module, const struct bm_btl_recv_desc *d,
                                  void *cbdata);

/* A piece of memory for getv: a local address, or the target's virtual
 * address, as an integer so that it crosses the wire unchanged. */
struct bm_btl_iov {
    uint64_t addr;
    size_t len;
};
/* Most pieces on either side of one getv (the kernel's IOV_MAX). */
#define BM_BTL_IOV_MAX 1024

/* Receive placement (BM_BTL_CAP_RECV_PLACE), for a transport that reads a
 * byte stream (tcp) and can put a fragment's payload straight where it
 * belongs instead of into its own buffer and then through the receive
 * callback's copy. The layer above registers, per tag, a place callback
 * and the length of its header (bm_btl_base_register_place). When a
 * fragment of len bytes (its header included) on that tag is still
 * arriving, the transport may call place once, before reading the rest,
 * with d->seg holding at least the first hdr_len bytes of the fragment
 * (d->flags 0). The callback either returns 0 (the fragment is then
 * delivered to the receive callback as usual) or fills up to max pieces
 * of its own memory, in order, of exactly len - hdr_len bytes in all, and
 * returns their number. The transport then writes the payload after the
 * header into them (the bytes it had already read by copy, the rest from
 * the kernel straight in) and, when the fragment has arrived, calls the
 * receive callback of the tag once, with BM_BTL_RECV_F_PLACED, d->placed =
 * len - hdr_len, and segments holding only the first hdr_len bytes. A
 * fragment that is lost after place took it (the connection broke, or a
 * test dropped it) still gets that one call, with BM_BTL_RECV_F_ABORTED
 * (d->endpoint NULL, d->placed 0), never from inside another operation of
 * the transport and never after finalize began: the memory may hold some of
 * its bytes, and the sender will learn of the loss as of any other (its
 * send fails, or it is never acknowledged). Until that call the memory
 * must stay valid and nothing else may rely on its content. A transport
 * acknowledges a placed fragment (a send's success at the sender) only
 * after all of it arrived. A module without the capability never calls
 * place. */
typedef uint32_t (*bm_btl_place_fn)(struct bm_btl_module *module, const struct bm_btl_recv_desc *d,
                                    size_t len, struct bm_btl_iov *iov, uint32_t max, void *cbdata);

/* ---- memory registration ---------------------------------------------- */

/* reg_handle_size bytes that can be copied to a peer and used there as the
 * remote handle. The local handle is the same object. */
struct bm_btl_reg_handle {
    uint64_t data[1]; /* really reg_handle_size bytes, transport-defined */
};

#define BM_BTL_REG_F_LOCAL_WRITE  0x1u
#define BM_BTL_REG_F_REMOTE_READ  0x2u
#define BM_BTL_REG_F_REMOTE_WRITE 0x4u
#define BM_BTL_REG_F_ATOMIC       0x8u

typedef void (*bm_btl_rdma_cb_fn)(struct bm_btl_module *module, struct bm_btl_endpoint *endpoint,
                                  void *local_addr, struct bm_btl_reg_handle *local_handle,
                                  void *context, void *cbdata, int status);

/* ---- errors ----------------------------------------------------------- */

enum bm_btl_error_kind {
    BM_BTL_ERROR_PEER,      /* this module can no longer reach this peer (others are fine) */
    BM_BTL_ERROR_MODULE,    /* the whole module failed (endpoint NULL) */
    BM_BTL_ERROR_RECOVERED, /* a failed path to the peer works again */
    BM_BTL_ERROR_FATAL,     /* nothing can continue (corruption, resource exhaustion) */
};

struct bm_btl_error {
    enum bm_btl_error_kind kind;
    struct bm_btl_endpoint *endpoint; /* NULL for MODULE and FATAL */
    int peer;                         /* rank, or -1 */
    int status;                       /* what happened (bm_status_t) */
    const char *what;                 /* a sentence for the user: interfaces, addresses, cause */
};

typedef void (*bm_btl_error_cb_fn)(struct bm_btl_module *module, const struct bm_btl_error *err,
                                   void *cbdata);

/* ---- module ----------------------------------------------------------- */

struct bm_btl_module {
    const struct bm_btl_ops *ops;
    struct bm_btl_component *component; /* the instance that created it */
    char name[64];                      /* "sm", "tcp:eth0", for messages and bm_info */
    uint32_t caps;                      /* BM_BTL_CAP_*, a subset of ops->caps */
    uint32_t atomic_flags;              /* BM_BTL_ATOMIC_F_* */
    uint32_t exclusivity;               /* BM_BTL_EXCL_* */
    uint32_t latency;                   /* latency class: lower is better (eager list order) */
    uint32_t bandwidth;                 /* Mbit/s: striping weight */
    size_t eager_limit;                 /* largest eager send, PML header included */
    size_t rndv_eager_limit;            /* bytes carried by the first fragment of a rendezvous */
    size_t max_send_size;               /* largest single send descriptor */
    size_t rdma_pipeline_send_length;   /* bytes sent by copy before RDMA takes over */
    size_t rdma_pipeline_frag_size;     /* largest single RDMA operation of a pipeline */
    size_t min_rdma_pipeline_size;      /* below this, use send/recv instead of RDMA */
    size_t put_limit, put_alignment;    /* largest put; required alignment (1 = none) */
    size_t get_limit, get_alignment;    /* largest get; required alignment */
    size_t reg_handle_size;             /* bytes of a registration handle (0: none needed) */
    size_t atomic_op_n_bytes;           /* largest atomic_op_n (ops table), in bytes; 0: none */

    /* Written by register_recv/register_error (btl_base.c), read by the transport. */
    struct {
        bm_btl_recv_cb_fn cb;
        void *cbdata;
        bm_btl_place_fn place; /* NULL: none (bm_btl_base_register_place) */
        size_t place_hdr_len;
    } recv_cb[BM_BTL_TAG_MAX];
    bm_btl_error_cb_fn error_cb;
    void *error_cbdata;
};

/* ---- the runtime as a transport sees it ---------------------------------- */

/* The services of the runtime a transport may use, handed to init. The
 * base passes the process's runtime (bm_btl_rte_default); a unit test passes
 * its own, so that two instances of a transport in one process are two
 * ranks of a job whose address exchange the test holds. A transport calls
 * these through the bm_btl_rte_* wrappers below and never bm_rte_self,
 * bm_rte_node_of or bm_rte_modex_* directly. */
struct bm_btl_rte {
    /* This process: rank, size, local rank and size, node, host, job id. */
    const struct bm_rte_proc *self;
    /* Node index of any rank (same node <=> same value), -1 if unknown. */
    int (*node_of)(void *ctx, int rank);
    /* Publish a blob under key for every peer (before the modex fence). */
    bm_status_t (*modex_put)(void *ctx, const char *key, const void *data, size_t len);
    /* A peer's blob (after the fence); BM_ERR_NOT_FOUND when it put none.
     * *data_out stays valid until the component is finalized. */
    bm_status_t (*modex_get)(void *ctx, int rank, const char *key, const void **data_out,
                             size_t *len_out);
    void *ctx; /* first argument of the functions above */
};

/* The process's runtime (bm_rte_*), valid between bm_rte_init and bm_rte_finalize. */
const struct bm_btl_rte *bm_btl_rte_default(void);

static inline const struct bm_rte_proc *bm_btl_rte_self(const struct bm_btl_rte *rte)
{
    return rte->self;
}
static inline int bm_btl_rte_node_of(const struct bm_btl_rte *rte, int rank)
{
    return rte->node_of(rte->ctx, rank);
}
static inline bm_status_t bm_btl_rte_modex_put(const struct bm_btl_rte *rte, const char *key,
                                               const void *data, size_t len)
{
    return rte->modex_put(rte->ctx, key, data, len);
}
static inline bm_status_t bm_btl_rte_modex_get(const struct bm_btl_rte *rte, int rank,
                                               const char *key, const void **data_out,
                                               size_t *len_out)
{
    return rte->modex_get(rte->ctx, rank, key, data_out, len_out);
}

/* ---- component --------------------------------------------------------- */

struct bm_btl_init_args {
    int thread_level;      /* MPI_THREAD_* value the application asked for */
    bool progress_threads; /* the transport may run its own helper thread */
    /* Processes of this job may sleep in wait_arm (the contract's
     * "Sleeping"): a sender must ring a peer's doorbell when the peer
     * armed it. Set alike in every process of a job (from the same
     * BM_PML_* settings); a process that sleeps while its peers do not
     * ring wakes only at its timeouts. */
    bool sleepers;
    /* The runtime to use; NULL means bm_btl_rte_default() (the base fills it
     * in before calling init, so init always finds it set). */
    const struct bm_btl_rte *rte;
};

/* One instance of a transport, created by ops->init. Each transport embeds
 * it first in its own component struct and casts, as modules embed struct
 * bm_btl_module. The transport fills every field before init returns and
 * owns the memory (the struct, modules[] and the modules) until finalize. */
struct bm_btl_component {
    const struct bm_btl_ops *ops;
    const struct bm_btl_rte *rte;   /* from the init arguments: valid until finalize */
    struct bm_btl_module **modules; /* count modules; each has ->component set to this */
    int count;
    /* Owned by the base: the lock that serialises this component under
     * MPI_THREAD_MULTIPLE when it lacks BM_BTL_CAP_THREADS, else NULL. The
     * transport leaves it alone (zero it at allocation). */
    struct bm_util_lock *mt_lock;
};

/* True while a component has an mt_lock (MPI_THREAD_MULTIPLE): the one flag
 * the wrappers check, so other thread levels pay a predictable branch. */
extern bool bm_btl_base_mt;

/* Enter and leave a module's component for one operation (the wrappers below). */
static inline void bm_btl_enter(struct bm_btl_module *m)
{
    if (__builtin_expect(bm_btl_base_mt, 0) && m->component->mt_lock)
        bm_util_lock_take(m->component->mt_lock);
}
static inline void bm_btl_leave(struct bm_btl_module *m)
{
    if (__builtin_expect(bm_btl_base_mt, 0) && m->component->mt_lock)
        bm_util_lock_give(m->component->mt_lock);
}

/* ---- the operations table: one const instance per transport ------------ */

struct bm_btl_ops {
    const char *name;                    /* "self", "sm", "tcp", "dgram", "ofi" */
    const char *description;             /* one line for bm_info */
    const struct bm_param_table *params; /* the transport's tunables (may be NULL) */
    /* Every capability a module of this transport may advertise. Checked
     * once at registration: each one needs its functions below
     * (bm_btl_ops_check). A module's caps must be a subset. */
    uint32_t caps;

    /* Component. */
    /* Usable here? Fills why (for bm_info) when not. No side effects. */
    bm_status_t (*query)(char *why, size_t whylen);
    /* Create an instance: its modules, their addresses published with
     * bm_btl_rte_modex_put(args->rte, ...). *component_out is set only on
     * BM_OK and is owned by the transport until finalize. Zero modules is
     * not an error (the instance is still finalized). On failure nothing is
     * left allocated or published that finalize would have released. */
    bm_status_t (*init)(const struct bm_btl_init_args *args,
                        struct bm_btl_component **component_out);
    /* Make progress on every module of c. Returns the number of
     * completions. Cheap when idle. */
    int (*progress)(struct bm_btl_component *c);
    /* Release everything of c and c itself. Outstanding descriptors and
     * RDMA operations are completed with an error first. */
    void (*finalize)(struct bm_btl_component *c);
    /* Optional (NULL: nothing is ever owed). How many sends c holds that
     * its peers have not acknowledged yet, still-queued ones included, on
     * paths that have not failed: descriptors not yet called back, and
     * the transport's own messages that no descriptor tracks (dgram's
     * answers to a peer's GET). A transport that closed with one of them
     * lost on the wire would never resend it: MPI_Finalize progresses
     * until this is 0 before its fence (bm_btl_base_unacked). Cheap:
     * called between progress calls. */
    int (*unacked)(struct bm_btl_component *c);
    /* BM_BTL_CAP_WAIT (the contract's "Sleeping"). A descriptor that
     * poll/epoll report readable, level-triggered, while an armed c may
     * have work; the same for the life of c. -1: none (c's work can only
     * come from this process, which wakes its own sleepers). */
    int (*wait_fd)(struct bm_btl_component *c);
    /* BM_BTL_CAP_WAIT. The caller is about to sleep: arm c so that work
     * arriving from now on makes wait_fd readable, then look for work that
     * is already there. Returns > 0 when there is work (nothing stays
     * armed; do not sleep), else 0 with *timeout_ns set to the time after
     * which c needs a progress call anyway (its nearest timer), or -1 for
     * never. Progress is serialised against it (one caller at a time). */
    int (*wait_arm)(struct bm_btl_component *c, int64_t *timeout_ns);
    /* BM_BTL_CAP_WAIT. The sleep is over: disarm and consume the wake-ups
     * (a doorbell's bytes) so that wait_fd is quiet again. */
    void (*wait_disarm)(struct bm_btl_component *c);

    /* Module: peers. */
    /* For each of the nprocs ranks, set its bit in reachable and endpoints_out[i]
     * when this module reaches it. Peers' modex data is available. */
    bm_status_t (*add_procs)(struct bm_btl_module *m, int nprocs, const int *ranks,
                             struct bm_btl_endpoint **endpoints_out,
                             struct bm_util_bitmap *reachable);
    bm_status_t (*del_procs)(struct bm_btl_module *m, int nprocs, const int *ranks,
                             struct bm_btl_endpoint **endpoints);

    /* Module: sends (BM_BTL_CAP_SEND, every module). */
    /* A descriptor whose seg[0] has size bytes to fill; NULL when out of resources. */
    struct bm_btl_descriptor *(*alloc)(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                                       uint8_t order, size_t size, uint32_t flags);
    void (*free)(struct bm_btl_module *m, struct bm_btl_descriptor *des);
    /* A descriptor carrying reserve bytes of caller header (seg[0]) followed by
     * up to *size bytes of data (copied, or referenced in seg[1] when
     * BM_BTL_CAP_SEND_INPLACE; then data must stay valid until completion).
     * *size is set to the bytes actually taken. NULL when out of resources. */
    struct bm_btl_descriptor *(*prepare_src)(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                                             const void *data, size_t reserve, size_t *size,
                                             uint8_t order, uint32_t flags);
    int (*send)(struct bm_btl_module *m, struct bm_btl_endpoint *ep, struct bm_btl_descriptor *des,
                bm_btl_tag_t tag);
    /* BM_BTL_CAP_SEND_IOV. A descriptor for send whose seg[0] has reserve
     * bytes for the caller's header, followed on the wire by the n pieces
     * of the caller's memory, in order, referenced in place (they must stay
     * valid until the completion): a non-contiguous message sent without
     * packing it. n <= BM_BTL_IOV_MAX and reserve plus the pieces at most
     * max_send_size bytes. The receiver sees one fragment as from
     * prepare_src. NULL when out of resources. */
    struct bm_btl_descriptor *(*prepare_src_iov)(struct bm_btl_module *m,
                                                 struct bm_btl_endpoint *ep, size_t reserve,
                                                 const struct bm_btl_iov *pieces, uint32_t n,
                                                 uint32_t flags);
    /* BM_BTL_CAP_SENDI. Send header + payload now, with no descriptor.
     * BM_BTL_DONE when sent; otherwise BM_ERR_OUT_OF_RESOURCE and, when
     * des_out is not NULL, maybe a descriptor already holding the data for a
     * later send. */
    int (*sendi)(struct bm_btl_module *m, struct bm_btl_endpoint *ep, const void *hdr,
                 size_t hdr_len, const void *payload, size_t payload_len, uint8_t order,
                 uint32_t flags, bm_btl_tag_t tag, struct bm_btl_descriptor **des_out);
    /* With BM_BTL_CAP_RECV_TAKE. A receive straight from the transport, for
     * a caller that waits for exactly one message from ep and may call
     * progress (btl.h "Threads": one caller at a time, never from inside
     * a receive callback of m). When the message that progress would
     * deliver next from ep is already here, has receive callback tag tag,
     * is one segment whose first key_len bytes equal key and whose
     * remaining bytes fit in cap: copy those to buf, consume the message
     * as a delivery would (no callback is made), and return their count.
     * BM_BTL_TAKE_NONE when nothing from ep is here; BM_BTL_TAKE_OTHER
     * when anything else is next (the caller lets progress deliver it), or
     * the module cannot take now (a failed endpoint, a delivery under
     * way, MPI_THREAD_MULTIPLE). Nothing is consumed unless a count is
     * returned. */
    int64_t (*recv_take)(struct bm_btl_module *m, struct bm_btl_endpoint *ep, bm_btl_tag_t tag,
                         const void *key, size_t key_len, void *buf, size_t cap);

    /* Module: RDMA and atomics. The parameters, as the contract at the top
     * of this file says in full:
     *   ep             the target (an endpoint of this module)
     *   local_addr     put: the source; get: the destination; fetching
     *                  atomics: where the previous target value is stored
     *                  (4 or 8 bytes as the operand size)
     *   remote_addr    the target's virtual address of the first byte (of
     *                  the operand for atomics, aligned to its size)
     *   local_handle   register_mem's handle of local_addr, or NULL
     *                  (reg_handle_size 0, or no BM_BTL_CAP_REG_MEM)
     *   remote_handle  the target's handle of remote_addr's region, or NULL
     *                  when reg_handle_size is 0
     *   size           bytes (put/get), at most put_limit/get_limit, with
     *                  put_alignment/get_alignment
     *   flags          BM_BTL_DES_F_ALWAYS_CALLBACK; BM_BTL_ATOMIC_OP_F_32BIT
     *   order          reserved: 0
     *   cb, context, cbdata
     *                  completion callback (may be NULL when nothing is to be
     *                  done) and its two caller arguments, handed back
     *                  unchanged
     * Returns as sends do: BM_BTL_DONE (completed inline, callback only with
     * ALWAYS_CALLBACK), BM_OK (callback later), BM_ERR_OUT_OF_RESOURCE (not
     * started, retry), BM_ERR_NOT_AVAILABLE (not possible: too large, not
     * aligned, this peer), or a link/peer error. */
    /* BM_BTL_CAP_PUT: write size bytes of local_addr to remote_addr. */
    int (*put)(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
               uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
               const struct bm_btl_reg_handle *remote_handle, size_t size, uint32_t flags,
               uint8_t order, bm_btl_rdma_cb_fn cb, void *context, void *cbdata);
    /* BM_BTL_CAP_GET: read size bytes at remote_addr into local_addr. */
    int (*get)(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
               uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
               const struct bm_btl_reg_handle *remote_handle, size_t size, uint32_t flags,
               uint8_t order, bm_btl_rdma_cb_fn cb, void *context, void *cbdata);
    /* BM_BTL_CAP_GETV (modules with reg_handle_size 0 only): a get whose
     * source is nremote pieces of the target's memory (remote[i].addr its
     * virtual addresses) and whose destination is nlocal local pieces, both
     * in order and of the same total, at most BM_BTL_IOV_MAX of each (the
     * data of a non-contiguous message moved with one copy). Otherwise as
     * get; the callback's local_addr is local[0].addr. */
    int (*getv)(struct bm_btl_module *m, struct bm_btl_endpoint *ep, const struct bm_btl_iov *local,
                uint32_t nlocal, const struct bm_btl_iov *remote, uint32_t nremote, uint32_t flags,
                bm_btl_rdma_cb_fn cb, void *context, void *cbdata);
    /* BM_BTL_CAP_ATOMIC_OPS: target = target op operand; no result. The
     * callback's local_addr is NULL. */
    int (*atomic_op)(struct bm_btl_module *m, struct bm_btl_endpoint *ep, uint64_t remote_addr,
                     const struct bm_btl_reg_handle *remote_handle, enum bm_btl_atomic_op op,
                     uint64_t operand, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                     void *context, void *cbdata);
    /* Optional (NULL, or atomic_op_n_bytes < 2 elements: absent): as n
     * atomic_op calls on the n contiguous elements from remote_addr with
     * the operands operands[0..n-1] (4 or 8 bytes each, as the flags say),
     * in one transport operation of at most atomic_op_n_bytes bytes. Each
     * element is updated atomically (not the n together); operands are read
     * before the call returns. The callback's local_addr is NULL. */
    int (*atomic_op_n)(struct bm_btl_module *m, struct bm_btl_endpoint *ep, uint64_t remote_addr,
                       const struct bm_btl_reg_handle *remote_handle, enum bm_btl_atomic_op op,
                       const void *operands, size_t n, uint32_t flags, uint8_t order,
                       bm_btl_rdma_cb_fn cb, void *context, void *cbdata);
    /* BM_BTL_CAP_ATOMIC_FOPS: as atomic_op, and the previous target value is
     * written to local_addr before the completion. */
    int (*atomic_fop)(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                      uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                      const struct bm_btl_reg_handle *remote_handle, enum bm_btl_atomic_op op,
                      uint64_t operand, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                      void *context, void *cbdata);
    /* BM_BTL_CAP_ATOMIC_FOPS: if the target holds compare, store value; the
     * previous target value is written to local_addr either way. */
    int (*atomic_cswap)(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                        uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                        const struct bm_btl_reg_handle *remote_handle, uint64_t compare,
                        uint64_t value, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                        void *context, void *cbdata);
    /* Present whenever the module may advertise PUT, GET or an atomic cap
     * (a transport needing no registration returns a handle that carries
     * nothing). Make [base, base + size) usable by this module's RDMA
     * operations with the access of reg_flags (BM_BTL_REG_F_*); the handle
     * (reg_handle_size bytes) can be copied to any peer. ep: the only peer
     * that will use it, or NULL for any. NULL on failure. The memory must
     * stay mapped until deregister_mem. */
    struct bm_btl_reg_handle *(*register_mem)(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                                              void *base, size_t size, uint32_t reg_flags);
    /* Release a handle of register_mem. Operations using it must be complete. */
    bm_status_t (*deregister_mem)(struct bm_btl_module *m, struct bm_btl_reg_handle *handle);
    /* Present whenever the module may advertise PUT, GET or an atomic cap.
     * Wait until every RDMA/atomic operation started on ep (all peers when
     * NULL) has completed, its callback has run and its effect is visible
     * at the target. Makes progress on this module only. BM_OK, or the
     * error of a path that failed meanwhile. */
    bm_status_t (*flush)(struct bm_btl_module *m, struct bm_btl_endpoint *ep);
    /* BM_BTL_CAP_STATS. The delivery counters of ep (cumulative, see struct
     * bm_btl_path_stats) into *out. Cheap enough for a few calls a second
     * per peer (tcp: one getsockopt per connection); never calls back. */
    bm_status_t (*stats)(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                         struct bm_btl_path_stats *out);
    /* Optional. Look now whether ep's peer is still there (sm: its process
     * exists), for a layer that waits on the peer with nothing outstanding
     * to it, which the transport's own watch does not cover (the
     * shared-memory collectives' flags). A peer found gone is reported as
     * any is (the error callback, BM_BTL_ERROR_PEER) and its status
     * returned; BM_OK otherwise. A system call or two: for waits that call
     * it now and then, never per poll. */
    bm_status_t (*check)(struct bm_btl_module *m, struct bm_btl_endpoint *ep);
    /* Optional, with BM_BTL_CAP_THREADS: the table every module of this
     * transport points at under MPI_THREAD_MULTIPLE (the base sets m->ops
     * when it adds the module), whose module operations take the
     * transport's locks, so that the functions of this table carry no
     * thread check at all (single-threaded programs pay nothing, as the
     * usnic BTL's one flag). Same name and caps; its own mt_ops NULL;
     * component operations (init, progress, ...) are always this table's. */
    const struct bm_btl_ops *mt_ops;
};

/* Capabilities that need register_mem, deregister_mem and flush. */
#define BM_BTL_CAP_RDMA_ANY                                                                        \
    (BM_BTL_CAP_PUT | BM_BTL_CAP_GET | BM_BTL_CAP_ATOMIC_OPS | BM_BTL_CAP_ATOMIC_FOPS |            \
     BM_BTL_CAP_REG_MEM)

/* The registration check (btl_base.c): BM_OK when ops has every mandatory
 * operation and the functions of every capability in caps; otherwise
 * BM_ERR_BAD_PARAM and a sentence in why naming the transport, the
 * capability and the missing operation. */
bm_status_t bm_btl_ops_check(const struct bm_btl_ops *ops, uint32_t caps, char *why, size_t whylen);

/* ---- inline wrappers: how the PML calls a module ------------------------ */

/* Like malloc for a send buffer: NULL means try again later. */
static inline struct bm_btl_descriptor *bm_btl_alloc(struct bm_btl_module *m,
                                                     struct bm_btl_endpoint *ep, uint8_t order,
                                                     size_t size, uint32_t flags)
{
    bm_btl_enter(m);
    struct bm_btl_descriptor *r = m->ops->alloc(m, ep, order, size, flags);
    bm_btl_leave(m);
    return r;
}
/* Return a descriptor that the caller owns. */
static inline void bm_btl_free(struct bm_btl_module *m, struct bm_btl_descriptor *des)
{
    bm_btl_enter(m);
    m->ops->free(m, des);
    bm_btl_leave(m);
}
/* Descriptor holding reserve header bytes plus up to *size bytes of data. */
static inline struct bm_btl_descriptor *
bm_btl_prepare_src(struct bm_btl_module *m, struct bm_btl_endpoint *ep, const void *data,
                   size_t reserve, size_t *size, uint8_t order, uint32_t flags)
{
    bm_btl_enter(m);
    struct bm_btl_descriptor *r = m->ops->prepare_src(m, ep, data, reserve, size, order, flags);
    bm_btl_leave(m);
    return r;
}
/* A descriptor with reserve header bytes, then n pieces of memory sent in
 * place (only with BM_BTL_CAP_SEND_IOV). */
static inline struct bm_btl_descriptor *
bm_btl_prepare_src_iov(struct bm_btl_module *m, struct bm_btl_endpoint *ep, size_t reserve,
                       const struct bm_btl_iov *pieces, uint32_t n, uint32_t flags)
{
    bm_btl_enter(m);
    struct bm_btl_descriptor *r = m->ops->prepare_src_iov(m, ep, reserve, pieces, n, flags);
    bm_btl_leave(m);
    return r;
}
/* Start a send; see the return conventions. */
static inline int bm_btl_send(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                              struct bm_btl_descriptor *des, bm_btl_tag_t tag)
{
    bm_btl_enter(m);
    int r = m->ops->send(m, ep, des, tag);
    bm_btl_leave(m);
    return r;
}
/* Send now or not at all (only with BM_BTL_CAP_SENDI). */
static inline int bm_btl_sendi(struct bm_btl_module *m, struct bm_btl_endpoint *ep, const void *hdr,
                               size_t hdr_len, const void *payload, size_t payload_len,
                               uint8_t order, uint32_t flags, bm_btl_tag_t tag,
                               struct bm_btl_descriptor **des_out)
{
    bm_btl_enter(m);
    int r = m->ops->sendi(m, ep, hdr, hdr_len, payload, payload_len, order, flags, tag, des_out);
    bm_btl_leave(m);
    return r;
}
/* The one message a caller waits for, straight from the transport (only
 * with BM_BTL_CAP_RECV_TAKE). */
static inline int64_t bm_btl_recv_take(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                                       bm_btl_tag_t tag, const void *key, size_t key_len, void *buf,
                                       size_t cap)
{
    bm_btl_enter(m);
    int64_t r = m->ops->recv_take(m, ep, tag, key, key_len, buf, cap);
    bm_btl_leave(m);
    return r;
}
/* Write local memory into the peer's (only with BM_BTL_CAP_PUT). */
static inline int bm_btl_put(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                             uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                             const struct bm_btl_reg_handle *remote_handle, size_t size,
                             uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb, void *context,
                             void *cbdata)
{
    bm_btl_enter(m);
    int r = m->ops->put(m, ep, local_addr, remote_addr, local_handle, remote_handle, size, flags,
                        order, cb, context, cbdata);
    bm_btl_leave(m);
    return r;
}
/* Read the peer's memory into local memory (only with BM_BTL_CAP_GET). */
static inline int bm_btl_get(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                             uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                             const struct bm_btl_reg_handle *remote_handle, size_t size,
                             uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb, void *context,
                             void *cbdata)
{
    bm_btl_enter(m);
    int r = m->ops->get(m, ep, local_addr, remote_addr, local_handle, remote_handle, size, flags,
                        order, cb, context, cbdata);
    bm_btl_leave(m);
    return r;
}

/* A path's delivery counters (only with BM_BTL_CAP_STATS). */
static inline bm_status_t bm_btl_stats(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                                       struct bm_btl_path_stats *out)
{
    bm_btl_enter(m);
    bm_status_t r = m->ops->stats(m, ep, out);
    bm_btl_leave(m);
    return r;
}

/* Read pieces of the peer's memory into local pieces (only with BM_BTL_CAP_GETV). */
static inline int bm_btl_getv(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                              const struct bm_btl_iov *local, uint32_t nlocal,
                              const struct bm_btl_iov *remote, uint32_t nremote, uint32_t flags,
                              bm_btl_rdma_cb_fn cb, void *context, void *cbdata)
{
    return m->ops->getv(m, ep, local, nlocal, remote, nremote, flags, cb, context, cbdata);
}

/* Update the peer's memory atomically, no result (only with BM_BTL_CAP_ATOMIC_OPS). */
static inline int bm_btl_atomic_op(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                                   uint64_t remote_addr,
                                   const struct bm_btl_reg_handle *remote_handle,
                                   enum bm_btl_atomic_op op, uint64_t operand, uint32_t flags,
                                   uint8_t order, bm_btl_rdma_cb_fn cb, void *context, void *cbdata)
{
    bm_btl_enter(m);
    int r = m->ops->atomic_op(m, ep, remote_addr, remote_handle, op, operand, flags, order, cb,
                              context, cbdata);
    bm_btl_leave(m);
    return r;
}
/* n contiguous elements updated atomically each, in one operation (only
 * when the module has atomic_op_n and n elements fit atomic_op_n_bytes). */
static inline int bm_btl_atomic_op_n(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                                     uint64_t remote_addr,
                                     const struct bm_btl_reg_handle *remote_handle,
                                     enum bm_btl_atomic_op op, const void *operands, size_t n,
                                     uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                                     void *context, void *cbdata)
{
    bm_btl_enter(m);
    int r = m->ops->atomic_op_n(m, ep, remote_addr, remote_handle, op, operands, n, flags, order,
                                cb, context, cbdata);
    bm_btl_leave(m);
    return r;
}
/* Update the peer's memory atomically and fetch the value it had (only with
 * BM_BTL_CAP_ATOMIC_FOPS). */
static inline int bm_btl_atomic_fop(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                                    void *local_addr, uint64_t remote_addr,
                                    struct bm_btl_reg_handle *local_handle,
                                    const struct bm_btl_reg_handle *remote_handle,
                                    enum bm_btl_atomic_op op, uint64_t operand, uint32_t flags,
                                    uint8_t order, bm_btl_rdma_cb_fn cb, void *context,
                                    void *cbdata)
{
    bm_btl_enter(m);
    int r = m->ops->atomic_fop(m, ep, local_addr, remote_addr, local_handle, remote_handle, op,
                               operand, flags, order, cb, context, cbdata);
    bm_btl_leave(m);
    return r;
}
/* Compare and swap in the peer's memory, fetching the value it had (only
 * with BM_BTL_CAP_ATOMIC_FOPS). */
static inline int bm_btl_atomic_cswap(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                                      void *local_addr, uint64_t remote_addr,
                                      struct bm_btl_reg_handle *local_handle,
                                      const struct bm_btl_reg_handle *remote_handle,
                                      uint64_t compare, uint64_t value, uint32_t flags,
                                      uint8_t order, bm_btl_rdma_cb_fn cb, void *context,
                                      void *cbdata)
{
    bm_btl_enter(m);
    int r = m->ops->atomic_cswap(m, ep, local_addr, remote_addr, local_handle, remote_handle,
                                 compare, value, flags, order, cb, context, cbdata);
    bm_btl_leave(m);
    return r;
}
/* Like mmap's MAP_LOCKED for RDMA: a handle for [base, base + size), NULL on
 * failure (only on a module with an RDMA or atomic capability). */
static inline struct bm_btl_reg_handle *bm_btl_register_mem(struct bm_btl_module *m,
                                                            struct bm_btl_endpoint *ep, void *base,
                                                            size_t size, uint32_t reg_flags)
{
    bm_btl_enter(m);
    struct bm_btl_reg_handle *r = m->ops->register_mem(m, ep, base, size, reg_flags);
    bm_btl_leave(m);
    return r;
}
/* Release a handle of bm_btl_register_mem once nothing uses it any more. */
static inline bm_status_t bm_btl_deregister_mem(struct bm_btl_module *m,
                                                struct bm_btl_reg_handle *handle)
{
    bm_btl_enter(m);
    bm_status_t r = m->ops->deregister_mem(m, handle);
    bm_btl_leave(m);
    return r;
}
/* Like fsync for RDMA: returns once every put/get/atomic started on ep (all
 * peers when NULL) is complete and visible at the target. */
static inline bm_status_t bm_btl_flush(struct bm_btl_module *m, struct bm_btl_endpoint *ep)
{
    bm_btl_enter(m);
    bm_status_t r = m->ops->flush(m, ep);
    bm_btl_leave(m);
    return r;
}
/* Whether ep's peer is still there (check; BM_OK where the transport has
 * no such look). */
static inline bm_status_t bm_btl_check(struct bm_btl_module *m, struct bm_btl_endpoint *ep)
{
    if (!m->ops->check)
        return BM_OK;
    bm_btl_enter(m);
    bm_status_t r = m->ops->check(m, ep);
    bm_btl_leave(m);
    return r;
}

/* ---- selection and per-peer transport sets (btl_base.c) ----------------- */

/* One transport path to one peer. */
struct bm_btl_path {
    struct bm_btl_module *module;
    struct bm_btl_endpoint *endpoint;
    /* Share of the traffic among the paths of its class (sums to 1 per class
     * of a list): the declared bandwidth at start-up; the PML may adjust it
     * from what it measures (adaptive striping). */
    double weight;
    bool failed; /* reported failed; skipped until recovered */
    /* Exclusivity class: 0 for the transports of the highest exclusivity that
     * reach the peer, 1 for the next lower exclusivity, ... (standby). */
    uint8_t cls;
};

struct bm_btl_path_list {
    struct bm_btl_path *paths; /* sorted by class first (class 0 leads) */
    int count;
    int next; /* round-robin cursor */
    int top;  /* paths of class 0 (the first top entries) */
};

/* Everything the PML knows about how to reach one peer (Open MPI's BML
 * endpoint). Lists hold every transport that reaches the peer, grouped by
 * exclusivity class, the highest first: traffic uses the best class that
 * still has a working path, and the lower classes stand by to take over
 * for this peer when every path of the better ones failed (failover across
 * kinds of transport: tcp to dgram, ofi to tcp). Standby classes are kept
 * only when every transport of the top class can fail while the peer
 * lives (BM_BTL_CAP_FAILOVER): a peer reached by self or sm, whose paths
 * fail only when the process dies, has class 0 alone. Nothing may assume
 * one path per list or one class per list. */
struct bm_btl_peer {
    int rank;
    struct bm_btl_path_list eager; /* lowest latency first: small messages */
    struct bm_btl_path_list send;  /* bulk sends, bandwidth-weighted */
    struct bm_btl_path_list rdma;  /* put/get capable paths */
};

/* Parse BM_BTL, query and init the selected components (they publish modex
 * data). Call before the modex fence. */
bm_status_t bm_btl_base_open(const struct bm_btl_init_args *args);
/* After the fence: add_procs on every module, build the per-peer lists. A
 * peer that no transport reaches is an error naming both processes and the
 * transports tried. */
bm_status_t bm_btl_base_add_procs(int nprocs);
/* The transport set of a peer (valid after add_procs). */
struct bm_btl_peer *bm_btl_base_peer(int rank);
/* The host name of a peer's process, read from the modex at add_procs (NULL
 * when it published none). Asks nothing of the runtime: usable while
 * MPI_Finalize fences (rte.h bm_rte_barrier_progress). */
const char *bm_btl_base_peer_host(int rank);
/* Register a receive callback for a tag on every module. */
void bm_btl_base_register_recv(bm_btl_tag_t tag, bm_btl_recv_cb_fn cb, void *cbdata);
/* Register a place callback for a tag whose fragments start with hdr_len
 * bytes of header, on every module with BM_BTL_CAP_RECV_PLACE (btl.h,
 * "Receive placement"); the tag's receive callback must be registered. NULL
 * removes it. */
void bm_btl_base_register_place(bm_btl_tag_t tag, bm_btl_place_fn place, size_t hdr_len);
/* Register the error callback on every module. */
void bm_btl_base_register_error(bm_btl_error_cb_fn cb, void *cbdata);
/* Error reports the transports made since the process started, by kind
 * (every report passes through the base on its way to the callback above).
 * For tests that must tell a run with a failover from one without. */
struct bm_btl_base_error_counts {
    uint64_t peer;      /* BM_BTL_ERROR_PEER: a path to one peer failed */
    uint64_t module;    /* BM_BTL_ERROR_MODULE */
    uint64_t recovered; /* BM_BTL_ERROR_RECOVERED */
    uint64_t fatal;     /* BM_BTL_ERROR_FATAL */
};
void bm_btl_base_error_counts(struct bm_btl_base_error_counts *out);
/* How many endpoint records the modules of one transport ("tcp") made at
 * add_procs, summed over its modules (0 when it is not open). For tests
 * that check which transports were asked for which peers. */
int bm_btl_base_endpoint_count(const char *transport);
/* Progress every active component once. Returns completions. */
int bm_btl_base_progress(void);
/* Sleeping (the contract's "Sleeping"). The wait descriptors of the active
 * components (at most max; returns how many). */
int bm_btl_base_wait_fds(int *fds, int max);
/* Arm every active component. Returns > 0 when one has work now (none
 * stays armed); else 0, with *timeout_ns the earliest time a component
 * needs progress (-1: none), capped at nap_ns when an active component
 * cannot wake a sleeper (no BM_BTL_CAP_WAIT). */
int bm_btl_base_wait_arm(int64_t *timeout_ns, int64_t nap_ns);
void bm_btl_base_wait_disarm(void);
/* The modules' registration check again, after add_procs may have changed
 * their caps (btl_base.c runs it itself; exported for the unit test): BM_OK
 * when m advertises only capabilities of its ops->caps, otherwise
 * BM_ERR_BAD_PARAM and why names the module and the operation. */
bm_status_t bm_btl_base_check_module(const struct bm_btl_module *m, char *why, size_t whylen);
/* The open components' ops->unacked summed: sends their peers have not
 * acknowledged yet (MPI_Finalize drains them before its fence). */
int bm_btl_base_unacked(void);
/* Flush, del_procs and finalize everything. */
void bm_btl_base_close(void);
/* The modules of the open transports that reach some peer (add_procs ran),
 * at most max of them; returns how many were written. */
int bm_btl_base_modules(struct bm_btl_module **out, int max);

/* ---- memory for the application (btl_mem.c): MPI_Alloc_mem ------------ */

/* Most registrations of one block (one per registering module). */
#define BM_BTL_MEM_MAX_REG 16
/* Allocate size bytes (size 0: a valid unique pointer) aligned to page_size
 * (0 or anything not a power of two above the system page: the system
 * page; larger: huge pages of that size when the kernel has them, else
 * ordinary pages so aligned), and register them with every module that
 * advertises BM_BTL_CAP_REG_MEM and an RDMA capability, with every access.
 * BM_ERR_NO_MEMORY when the memory cannot be had; a registration that fails
 * only leaves the block unregistered with that module (said at info level).
 * Thread-safe; never call it from a transport callback. */
bm_status_t bm_btl_base_mem_alloc(size_t size, size_t page_size, void **base_out);
/* Deregister and release a block of bm_btl_base_mem_alloc by its first
 * byte. BM_ERR_NOT_FOUND when base is not such a block (never allocated
 * there, or freed already): nothing is done. */
bm_status_t bm_btl_base_mem_free(void *base);
/* The registration with m of a block of bm_btl_base_mem_alloc that holds
 * all of [addr, addr + len), or NULL (not such memory, or m not
 * registered). The handle stays the block's: valid until the block is
 * freed or the transports close; the caller never deregisters it. */
struct bm_btl_reg_handle *bm_btl_base_mem_handle(const struct bm_btl_module *m, const void *addr,
                                                 size_t len);
/* What bm_btl_base_mem_* did so far (for tests). */
struct bm_btl_base_mem_stats {
    uint64_t blocks;        /* blocks allocated and not freed */
    uint64_t handles;       /* registrations the live blocks hold */
    uint64_t registrations; /* registrations made at allocation, ever */
    uint64_t hits;          /* bm_btl_base_mem_handle calls that found one */
};
void bm_btl_base_mem_stats(struct bm_btl_base_mem_stats *out);
/* Release every block's registrations (the blocks stay): bm_btl_base_close
 * calls it before the transports finalize. */
void bm_btl_base_mem_close(void);

/* The registry (btl_registry.c): every transport built into the library. */
extern const struct bm_btl_ops *const bm_btl_registry[];
extern const int bm_btl_registry_count;
/* Transports not built, with the reason, for bm_info (NULL-terminated). */
struct bm_btl_absent {
    const char *name;
    const char *why;
};
extern const struct bm_btl_absent bm_btl_registry_absent[];

#endif
