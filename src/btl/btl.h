/* The byte transfer layer (BTL): the one interface between the
 * point-to-point layer (PML) and every transport (self, sm, tcp, dgram, ofi).
 * The PML includes this header and nothing of any transport.
 *
 * THE CONTRACT
 *
 * Component. One per transport type, described by one const struct
 * bm_btl_ops registered in btl_registry.c. Its life: query (is it usable on
 * this machine? no side effects; bm_info uses it), init (create zero or more
 * modules and publish their addresses with bm_rte_modex_put), progress
 * (called by the PML's progress engine; the component walks all its
 * modules), finalize (tear down every module, release every resource).
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
 * Receive. A callback per tag, registered with register_recv. It runs inside
 * progress, and the segments it is given are valid only until it returns.
 *
 * Threads. All operations run under the PML's lock; progress is called from
 * one thread at a time. Transports need no locking of their own except for
 * data shared with other processes or their own helper threads.
 */
#ifndef BM_BTL_H
#define BM_BTL_H

#include "bm_status.h"
#include "util/bitmap.h"
#include "util/params.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bm_btl_module;
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

/* ---- capabilities (module->caps) -------------------------------------- */

#define BM_BTL_CAP_SEND         0x0001u /* alloc/prepare_src/send (all modules) */
#define BM_BTL_CAP_SENDI        0x0002u /* sendi */
#define BM_BTL_CAP_PUT          0x0004u /* put */
#define BM_BTL_CAP_GET          0x0008u /* get */
#define BM_BTL_CAP_ATOMIC_OPS   0x0010u /* atomic_op (no result) */
#define BM_BTL_CAP_ATOMIC_FOPS  0x0020u /* atomic_fop and atomic_cswap */
#define BM_BTL_CAP_SEND_INPLACE 0x0040u /* prepare_src may reference user memory (no copy) */
#define BM_BTL_CAP_ORDERED      0x0080u /* same-order sends on one endpoint arrive in order */
#define BM_BTL_CAP_REG_MEM      0x0100u /* register_mem needed before put/get on user memory */
#define BM_BTL_CAP_FAILOVER     0x0200u /* reports path failure and recovery (see contract) */

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
#define BM_BTL_ATOMIC_OP_F_32BIT 0x1u /* operate on 32 bits (when BM_BTL_ATOMIC_F_32BIT) */

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
    struct bm_btl_endpoint *endpoint; /* the sender's endpoint on this module */
    int peer;                         /* the sender's rank */
    bm_btl_tag_t tag;
    uint32_t seg_count;
    const struct bm_btl_segment *seg;
};

typedef void (*bm_btl_recv_cb_fn)(struct bm_btl_module *module, const struct bm_btl_recv_desc *d,
                                  void *cbdata);

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
    char name[64];                    /* "sm", "tcp:eth0", for messages and bm_info */
    uint32_t caps;                    /* BM_BTL_CAP_* */
    uint32_t atomic_flags;            /* BM_BTL_ATOMIC_F_* */
    uint32_t exclusivity;             /* BM_BTL_EXCL_* */
    uint32_t latency;                 /* latency class: lower is better (eager list order) */
    uint32_t bandwidth;               /* Mbit/s: striping weight */
    size_t eager_limit;               /* largest eager send, PML header included */
    size_t rndv_eager_limit;          /* bytes carried by the first fragment of a rendezvous */
    size_t max_send_size;             /* largest single send descriptor */
    size_t rdma_pipeline_send_length; /* bytes sent by copy before RDMA takes over */
    size_t rdma_pipeline_frag_size;   /* largest single RDMA operation of a pipeline */
    size_t min_rdma_pipeline_size;    /* below this, use send/recv instead of RDMA */
    size_t put_limit, put_alignment;  /* largest put; required alignment (1 = none) */
    size_t get_limit, get_alignment;  /* largest get; required alignment */
    size_t reg_handle_size;           /* bytes of a registration handle (0: none needed) */

    /* Written by register_recv/register_error (btl_base.c), read by the transport. */
    struct {
        bm_btl_recv_cb_fn cb;
        void *cbdata;
    } recv_cb[BM_BTL_TAG_MAX];
    bm_btl_error_cb_fn error_cb;
    void *error_cbdata;
};

struct bm_btl_init_args {
    int thread_level;      /* MPI_THREAD_* value the application asked for */
    bool progress_threads; /* the transport may run its own helper thread */
};

/* ---- the operations table: one const instance per transport ------------ */

struct bm_btl_ops {
    const char *name;                    /* "self", "sm", "tcp", "dgram", "ofi" */
    const char *description;             /* one line for bm_info */
    const struct bm_param_table *params; /* the transport's tunables (may be NULL) */

    /* Component. */
    /* Usable here? Fills why (for bm_info) when not. No side effects. */
    bm_status_t (*query)(char *why, size_t whylen);
    /* Create modules and publish addresses (bm_rte_modex_put). *modules_out
     * is owned by the transport until finalize. Zero modules is not an error. */
    bm_status_t (*init)(const struct bm_btl_init_args *args, struct bm_btl_module ***modules_out,
                        int *count_out);
    /* Make progress on every module. Returns the number of completions. Cheap when idle. */
    int (*progress)(void);
    /* Release everything. Outstanding descriptors are completed with an error first. */
    void (*finalize)(void);

    /* Module: peers. */
    /* For each of the nprocs ranks, set its bit in reachable and endpoints_out[i]
     * when this module reaches it. Peers' modex data is available. */
    bm_status_t (*add_procs)(struct bm_btl_module *m, int nprocs, const int *ranks,
                             struct bm_btl_endpoint **endpoints_out,
                             struct bm_util_bitmap *reachable);
    bm_status_t (*del_procs)(struct bm_btl_module *m, int nprocs, const int *ranks,
                             struct bm_btl_endpoint **endpoints);

    /* Module: sends. */
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
    /* Send header + payload now, with no descriptor. BM_BTL_DONE when sent;
     * otherwise BM_ERR_OUT_OF_RESOURCE and, when des_out is not NULL, maybe a
     * descriptor already holding the data for a later send. */
    int (*sendi)(struct bm_btl_module *m, struct bm_btl_endpoint *ep, const void *hdr,
                 size_t hdr_len, const void *payload, size_t payload_len, uint8_t order,
                 uint32_t flags, bm_btl_tag_t tag, struct bm_btl_descriptor **des_out);

    /* Module: RDMA and atomics (only with the matching caps). */
    int (*put)(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
               uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
               const struct bm_btl_reg_handle *remote_handle, size_t size, uint32_t flags,
               uint8_t order, bm_btl_rdma_cb_fn cb, void *context, void *cbdata);
    int (*get)(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
               uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
               const struct bm_btl_reg_handle *remote_handle, size_t size, uint32_t flags,
               uint8_t order, bm_btl_rdma_cb_fn cb, void *context, void *cbdata);
    int (*atomic_op)(struct bm_btl_module *m, struct bm_btl_endpoint *ep, uint64_t remote_addr,
                     const struct bm_btl_reg_handle *remote_handle, enum bm_btl_atomic_op op,
                     uint64_t operand, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                     void *context, void *cbdata);
    /* The old remote value is written to local_addr. */
    int (*atomic_fop)(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                      uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                      const struct bm_btl_reg_handle *remote_handle, enum bm_btl_atomic_op op,
                      uint64_t operand, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                      void *context, void *cbdata);
    int (*atomic_cswap)(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                        uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                        const struct bm_btl_reg_handle *remote_handle, uint64_t compare,
                        uint64_t value, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                        void *context, void *cbdata);
    /* Make memory usable for put/get; NULL on failure. ep may be NULL (any peer). */
    struct bm_btl_reg_handle *(*register_mem)(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                                              void *base, size_t size, uint32_t reg_flags);
    bm_status_t (*deregister_mem)(struct bm_btl_module *m, struct bm_btl_reg_handle *handle);
    /* Wait until every RDMA/atomic operation started on ep (all peers when
     * NULL) has completed and its callback has run. */
    bm_status_t (*flush)(struct bm_btl_module *m, struct bm_btl_endpoint *ep);
};

/* ---- inline wrappers: how the PML calls a module ------------------------ */

/* Like malloc for a send buffer: NULL means try again later. */
static inline struct bm_btl_descriptor *bm_btl_alloc(struct bm_btl_module *m,
                                                     struct bm_btl_endpoint *ep, uint8_t order,
                                                     size_t size, uint32_t flags)
{
    return m->ops->alloc(m, ep, order, size, flags);
}
/* Return a descriptor that the caller owns. */
static inline void bm_btl_free(struct bm_btl_module *m, struct bm_btl_descriptor *des)
{
    m->ops->free(m, des);
}
/* Descriptor holding reserve header bytes plus up to *size bytes of data. */
static inline struct bm_btl_descriptor *
bm_btl_prepare_src(struct bm_btl_module *m, struct bm_btl_endpoint *ep, const void *data,
                   size_t reserve, size_t *size, uint8_t order, uint32_t flags)
{
    return m->ops->prepare_src(m, ep, data, reserve, size, order, flags);
}
/* Start a send; see the return conventions. */
static inline int bm_btl_send(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                              struct bm_btl_descriptor *des, bm_btl_tag_t tag)
{
    return m->ops->send(m, ep, des, tag);
}
/* Send now or not at all (only with BM_BTL_CAP_SENDI). */
static inline int bm_btl_sendi(struct bm_btl_module *m, struct bm_btl_endpoint *ep, const void *hdr,
                               size_t hdr_len, const void *payload, size_t payload_len,
                               uint8_t order, uint32_t flags, bm_btl_tag_t tag,
                               struct bm_btl_descriptor **des_out)
{
    return m->ops->sendi(m, ep, hdr, hdr_len, payload, payload_len, order, flags, tag, des_out);
}
/* Write local memory into the peer's (only with BM_BTL_CAP_PUT). */
static inline int bm_btl_put(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                             uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                             const struct bm_btl_reg_handle *remote_handle, size_t size,
                             uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb, void *context,
                             void *cbdata)
{
    return m->ops->put(m, ep, local_addr, remote_addr, local_handle, remote_handle, size, flags,
                       order, cb, context, cbdata);
}
/* Read the peer's memory into local memory (only with BM_BTL_CAP_GET). */
static inline int bm_btl_get(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                             uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                             const struct bm_btl_reg_handle *remote_handle, size_t size,
                             uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb, void *context,
                             void *cbdata)
{
    return m->ops->get(m, ep, local_addr, remote_addr, local_handle, remote_handle, size, flags,
                       order, cb, context, cbdata);
}

/* ---- selection and per-peer transport sets (btl_base.c) ----------------- */

/* One transport path to one peer. */
struct bm_btl_path {
    struct bm_btl_module *module;
    struct bm_btl_endpoint *endpoint;
    double weight; /* share of the traffic (bandwidth-weighted, sums to 1 per list) */
    bool failed;   /* reported failed; skipped until recovered */
};

struct bm_btl_path_list {
    struct bm_btl_path *paths;
    int count;
    int next; /* round-robin cursor */
};

/* Everything the PML knows about how to reach one peer (Open MPI's BML
 * endpoint). Lists hold paths of the highest exclusivity that reaches the
 * peer; nothing may assume one path per list. */
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
/* Register a receive callback for a tag on every module. */
void bm_btl_base_register_recv(bm_btl_tag_t tag, bm_btl_recv_cb_fn cb, void *cbdata);
/* Register the error callback on every module. */
void bm_btl_base_register_error(bm_btl_error_cb_fn cb, void *cbdata);
/* Progress every active component once. Returns completions. */
int bm_btl_base_progress(void);
/* Flush, del_procs and finalize everything. */
void bm_btl_base_close(void);

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
