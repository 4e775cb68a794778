/* Internal declarations of the ofi transport, shared by its files and by
 * nothing else (its unit tests excepted). The objects, from the outside in:
 *   component  everything one instance of the transport owns (struct
 *              bm_btl_component first): the configuration read from
 *              BM_BTL_OFI_*, the runtime it was given, its modules, the
 *              memory monitor. Every function receives it or reaches it
 *              through a module; nothing lives in file-scope variables.
 *   module     one libfabric domain (a NIC, or an interface for the socket
 *              providers) of the chosen provider: fabric, domain, address
 *              vector, one endpoint (scalable when contexts > 1 and the
 *              provider has them), the registration cache.
 *   context    a transmit/receive context pair of the module's endpoint with
 *              its own completion queue, request pool, fragment pools and
 *              posted receive buffers; threads (MPI_THREAD_MULTIPLE) or peers
 *              (otherwise) are spread over them so that they do not contend.
 *   endpoint   one per reachable peer per module: its libfabric address and
 *              the count of operations in flight to it (for flush).
 *   request    one operation in flight: its fi_context, kind, callback and
 *              whatever it holds (a cache registration, an atomic operand).
 *   fragment   a send descriptor with its message header and buffer.
 * See README.md for the design, the glossary and the measured behaviour of
 * each provider. */
#ifndef BM_BTL_OFI_H
#define BM_BTL_OFI_H

#include "btl/btl.h"
#include "btl/btl_defer.h"
#include "btl/btl_ofi_load.h"
#include "btl/ofi/ofi_proto.h"
#include "util/list.h"

#include <pthread.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_domain.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

extern const struct bm_btl_ops bm_btl_ofi_ops;

/* ---- configuration (BM_BTL_OFI_*) --------------------------------------- */

enum { BM_OFI_MR_LOCAL_AUTO, BM_OFI_MR_LOCAL_ON };
enum { BM_OFI_MR_MODE_AUTO, BM_OFI_MR_MODE_BASIC };
enum { BM_OFI_MR_MONITOR_AUTO, BM_OFI_MR_MONITOR_ON, BM_OFI_MR_MONITOR_OFF };
enum { BM_OFI_ACKS_AUTO, BM_OFI_ACKS_ON, BM_OFI_ACKS_OFF };

struct bm_btl_ofi_config {
    const char *prov_include; /* provider names or chains, comma-separated ("" = any) */
    const char *prov_exclude;
    const char *domain_include; /* domain (NIC, interface) names ("" = all but loopback) */
    int contexts;               /* transmit/receive contexts per module */
    bool disable_sep;           /* never open a scalable endpoint */
    int mr_local;               /* BM_OFI_MR_LOCAL_*: register local buffers even if not asked */
    int mr_mode;                /* BM_OFI_MR_MODE_*: which registration modes we offer */
    bool mr_cache;              /* keep registrations of local buffers for reuse */
    int mr_cache_max;           /* cached registrations kept when unused */
    int mr_monitor;             /* BM_OFI_MR_MONITOR_*: watch cached memory for unmap */
    int exclusivity;            /* -1: by provider (hardware above tcp, software below dgram) */
    size_t eager_limit;
    size_t max_send_size;
    size_t rndv_get;      /* BM_BTL_OFI_RNDV_GET: smallest message the PML reads by RGET, 0 never */
    size_t recv_buf_size; /* one posted receive buffer (multi-receive: many messages) */
    int recv_bufs;        /* posted receive buffers per context */
    int timeout_ms;       /* an operation with no completion this long fails its path */
    int probe_ms;         /* interval of probes on a failed path (0: never) */
    int acks;             /* BM_OFI_ACKS_*: our own delivery acknowledgements */
    bool stats;           /* print the counters at finalize */
    int max_modules;      /* domains opened at most */
    const char *congestion; /* BM_BTL_OFI_CONGESTION: auto, default or an algorithm's name */
};

/* ---- memory registration (ofi_mr.c) -------------------------------------- */

/* What a peer needs to reach registered memory: the part of a handle that is
 * copied (reg_handle_size bytes). */
struct bm_btl_ofi_rkey {
    uint64_t key;  /* fi_mr_key of the registration */
    uint64_t base; /* its first byte: targets are offsets from here without FI_MR_VIRT_ADDR */
};

struct bm_btl_ofi_module;

/* One libfabric registration of an address range, shared by every handle
 * and in-flight operation that uses it (refs), kept in the cache when
 * unused until evicted or invalidated. */
struct bm_btl_ofi_mr {
    uintptr_t start, end; /* page-aligned range [start, end) */
    struct fid_mr *mr;
    void *desc; /* fi_mr_desc, given with local buffers under FI_MR_LOCAL */
    uint64_t key;
    int refs;
    bool cached;    /* in the module's index (lookups find it) */
    bool monitored; /* watched by the memory monitor */
    bool invalid;   /* its memory was unmapped: never reused */
    uint64_t lru;   /* last use, for eviction */
    struct bm_btl_ofi_mr *dead_next;
};

/* A handle returned by register_mem: the rkey first (what peers receive),
 * then what only this process uses. */
struct bm_btl_ofi_handle {
    struct bm_btl_ofi_rkey rkey;
    struct bm_btl_ofi_mr *reg;
    struct bm_btl_ofi_module *module;
};
_Static_assert(offsetof(struct bm_btl_ofi_handle, rkey) == 0, "rkey leads the handle");

struct bm_btl_ofi_mr_cache {
    struct bm_btl_ofi_mr **index; /* cached registrations, sorted by start, disjoint */
    int count, cap;
    int unused; /* cached entries with refs == 0 */
    uint64_t clock;
    uint64_t next_key; /* our own keys when the provider does not choose (no FI_MR_PROV_KEY) */
    /* statistics (bm_info, tests) */
    uint64_t hits, misses, evictions, invalidations;
};

/* ---- requests ------------------------------------------------------------- */

enum bm_btl_ofi_req_kind {
    BM_OFI_REQ_SEND, /* a fragment (the request is inside it) */
    BM_OFI_REQ_RECV, /* a posted receive buffer */
    BM_OFI_REQ_PUT,
    BM_OFI_REQ_GET,
    BM_OFI_REQ_AMO,   /* atomic without result */
    BM_OFI_REQ_FAMO,  /* fetching atomic */
    BM_OFI_REQ_CSWAP, /* compare-and-swap */
};

struct bm_btl_ofi_context;
struct bm_btl_ofi_endpoint;

/* 8-byte words of operands one atomic_op_n carries (atomic_op_n_bytes at
 * most this many bytes): 8 int64 or 16 int32 elements per transport atomic. */
#define BM_OFI_AMO_N_WORDS 8

struct bm_btl_ofi_req {
    struct fi_context2 fctx; /* first: the provider's scratch space and our completion key */
    uint8_t kind;            /* BM_OFI_REQ_* */
    bool inflight;           /* handed to the provider, no completion read yet */
    bool failed;             /* completed by us with an error before the provider finished */
    uint32_t flags;          /* the caller's flags (BM_BTL_ATOMIC_OP_F_32BIT, ...) */
    struct bm_btl_ofi_context *ctx;
    struct bm_btl_ofi_endpoint *ep;
    struct bm_util_list_node link; /* the context's in-flight list (oldest first) */
    uint64_t posted_ns;
    /* RDMA and atomics */
    bm_btl_rdma_cb_fn cb;
    void *local_addr;
    struct bm_btl_reg_handle *local_handle;
    void *cb_context, *cbdata;
    struct bm_btl_ofi_mr *reg; /* cache registration held until completion */
    /* atomics: operands and result live here, in memory registered with the
     * request pool (providers with FI_MR_LOCAL need descriptors for them);
     * operand[] holds atomic_op_n's elements, operand[0] a single one */
    uint64_t operand[BM_OFI_AMO_N_WORDS], compare, result;
    void *desc; /* of the pool region holding this request */
    struct bm_btl_ofi_req *pool_next;
};

/* ---- fragments (ofi_send.c) ---------------------------------------------- */

#define BM_OFI_FRAG_F_INPLACE 0x1u /* seg[1] references the caller's memory */
#define BM_OFI_FRAG_F_FREED   0x2u /* the caller freed it while the provider still had it */

enum { BM_OFI_POOL_EAGER, BM_OFI_POOL_MAX, BM_OFI_NPOOLS };

struct bm_btl_ofi_frag {
    struct bm_btl_descriptor des; /* first: the PML's pointer is ours */
    struct bm_btl_ofi_req req;
    uint8_t pool;   /* BM_OFI_POOL_* */
    uint8_t fflags; /* BM_OFI_FRAG_F_* */
    size_t cap;     /* bytes of payload room after the header */
    void *desc;     /* MR descriptor of the buffer */
    struct bm_btl_ofi_frag *next;
    /* delivery acknowledgements (ofi_ack.c) */
    struct bm_util_list_node ack_link;      /* its stream's unacknowledged list */
    uint32_t seq;                           /* number in the stream, 0: not tracked */
    bool prov_done;                         /* the provider completed it */
    bool acked;                             /* the peer acknowledged it */
    _Alignas(64) struct bm_btl_ofi_hdr hdr; /* the message starts here; seg[0] follows */
};

/* A pool of fragments of one size or of requests: objects carved from
 * regions that are registered as a whole when the module needs local
 * registration. */
struct bm_btl_ofi_region {
    struct bm_btl_ofi_region *next;
    struct fid_mr *mr;
    void *desc;
    void *mem;
};

struct bm_btl_ofi_fpool {
    struct bm_btl_ofi_frag *free;
    size_t cap; /* payload bytes per fragment */
    int count, max;
    struct bm_btl_ofi_region *regions;
};

/* ---- posted receive buffers (ofi_recv.c) ----------------------------------- */

struct bm_btl_ofi_rbuf {
    struct bm_btl_ofi_req req;
    void *mem;
    size_t size;
    struct fid_mr *mr;
    void *desc;
    bool posted;
    bool released; /* the provider is done with it (multi-receive buffer consumed) */
    int busy;      /* messages in it read from the queue and not yet handed over: it is
                      posted again only when released and none is left (threads) */
    /* Multi-receive: what the completions read so far cover. The provider
     * packs messages back to back from the start (alignment aside) but may
     * complete them out of order: rxm completes a small message at once
     * and one it reads by rendezvous or receives in segments when all of
     * it is there, and flags the release on the last one placed. Bytes up
     * to the end of the furthest message that no completion covers yet
     * belong to a message still being written: the buffer waits for it. */
    size_t done_bytes; /* sum of the lengths of the messages completed */
    size_t end;        /* furthest byte a completed message reached */
    int done_count;
    bool unaccounted; /* a receive into it failed: its extent is unknown, wait only for busy */
};
/* Padding a provider may put between messages of a multi-receive buffer
 * (fi_msg(3): "provider specific alignment restrictions"); a message still
 * being written is at least rxm's eager size (16 KiB) long. */
#define BM_OFI_MULTI_RECV_PAD 64

/* ---- contexts (ofi_context.c) ------------------------------------------------ */

struct bm_btl_ofi_context {
    struct bm_btl_ofi_module *m;
    int index;
    struct fid_ep *tx, *rx; /* both the one endpoint when not scalable */
    struct fid_cq *cq;
    int wait_fd;          /* the queue's FI_WAIT_FD descriptor (a job with sleepers), else -1 */
    pthread_mutex_t lock; /* taken only with MPI_THREAD_MULTIPLE */
    struct bm_util_list inflight;
    atomic_int ninflight; /* changed under the lock; read without it (watch_due) */
    struct bm_btl_ofi_req *req_free;
    struct bm_btl_ofi_region *req_regions;
    struct bm_btl_ofi_fpool fpool[BM_OFI_NPOOLS];
    struct bm_btl_ofi_rbuf *rbufs;
    int nrbufs;
    struct bm_btl_defer_queue defer;
    /* send completions to run once the lock is released */
    int completions;
    uint64_t next_timeout_check;
};

/* ---- endpoints (ofi_module.c) ----------------------------------------------------- */

/* One direction of delivery acknowledgements: what we sent to a peer from
 * one of our contexts (its messages arrive in order at one receive queue). */
struct bm_btl_ofi_stream {
    uint32_t tx_seq;             /* last number given out */
    struct bm_util_list unacked; /* fragments sent, not yet acknowledged (by number) */
};

#define BM_OFI_MAX_CTX 64

struct bm_btl_ofi_endpoint {
    struct bm_btl_ofi_module *m;
    int rank;
    int peer_mod;   /* the peer's module index */
    fi_addr_t addr; /* base address (receive context 0) */
    int peer_nrx;
    int rx_ctx_bits;
    atomic_int outstanding;         /* RDMA/atomics in flight to this peer */
    atomic_int fail_status;         /* 0 while the path works, else the error that failed it */
    _Atomic uint64_t stalled_since; /* first of an unbroken run of "try again" answers */
    /* Liveness (ofi_module.c): completions of the socket providers do not
     * prove delivery, and a send by inject has none, so a path is judged by
     * whether the peer answers. */
    atomic_int unanswered; /* we sent since we last heard from the peer */
    /* The watcher's own (one thread at a time, under watch_lock): */
    uint64_t quiet_since; /* when it first saw the peer owe us an answer (0: not yet) */
    uint64_t ping_at;     /* when its last PING left */
    /* Shared with the PONG handler, which may run on another thread's
     * progress (a context's queue) while the watcher runs: */
    atomic_bool ping_out;      /* a PING awaits its PONG (set before the PING is posted) */
    _Atomic uint32_t ping_seq; /* the number of the last PING */
    atomic_bool ponged;        /* the PONG came: the watcher starts a fresh quiet period */
    /* fence_close: contexts (bit c) that injected to this peer; closing
     * sends a FENCE from each first (ofi_send.c) */
    _Atomic uint64_t injected;
    _Atomic uint64_t probe_at; /* failed path: next probe (set by whoever fails it) */
    /* A path failed inside an operation (another thread's, or the caller's
     * own call): the error that its operations in flight complete with at
     * the next progress (btl.h: no completion callback from inside an
     * operation), 0 when none is pending. */
    atomic_int fail_pending;
    /* delivery acknowledgements (ofi_ack.c), when the module uses them */
    struct bm_btl_ofi_stream *tx; /* [m->nctx], under each context's lock; NULL: our
                                   * messages need no acknowledgement (same host) */
    _Atomic uint32_t *rx_seq;     /* [BM_OFI_MAX_CTX]: highest number seen per peer stream */
    _Atomic uint64_t ack_due;     /* peer streams whose acknowledgement is owed */
    atomic_bool ack_listed;       /* on the module's list of owed acknowledgements */
    atomic_int ack_wait;          /* progress calls the owed acknowledgement waited */
    char desc[96];                /* "rank 3 (host, domain eth0)" for messages */
    /* ofi_sock.c: the peer's provider address when it is a socket address,
     * and whether a message from the peer made us look for its sockets */
    uint8_t sa[28];
    uint8_t salen;
    atomic_bool cc_seen;
};

/* The error that failed the path to ep, or 0 while it works. */
static inline int bm_btl_ofi_ep_failed(const struct bm_btl_ofi_endpoint *ep)
{
    return atomic_load_explicit(&ep->fail_status, memory_order_relaxed);
}

/* ---- atomics (ofi_atomic.c) ------------------------------------------------------- */

#define BM_OFI_AMO_NOPS 8 /* enum bm_btl_atomic_op values */

struct bm_btl_ofi_amo_table {
    /* [op][is32]: provider can do it (fi_atomicvalid / fi_fetch_atomicvalid) */
    bool plain[BM_OFI_AMO_NOPS][2];
    bool fetch[BM_OFI_AMO_NOPS][2];
    bool cswap[2];
};

/* ---- counters (BM_BTL_OFI_STATS) ------------------------------------------------------ */

#define BM_BTL_OFI_STATS_MAP(X)                                                                    \
    X(sends, "messages sent with a completion (descriptors)")                                      \
    X(injects, "messages sent by inject (sendi)")                                                  \
    X(recvs, "messages received")                                                                  \
    X(rma, "puts and gets started")                                                                \
    X(amos, "atomic operations started")                                                           \
    X(amos_n, "of which atomics on several elements (atomic_op_n)")                                \
    X(acks_sent, "delivery acknowledgements sent on their own")                                    \
    X(acks_piggybacked, "delivery acknowledgements carried by messages")                           \
    X(stalls, "operations the provider told to try again (its queues full)")                       \
    X(pings, "liveness probes sent")                                                               \
    X(path_failures, "paths declared failed")                                                      \
    X(path_recoveries, "failed paths taken back")                                                  \
    X(rdma_yields, "cores given to the provider's thread while RDMA/atomics were in flight")       \
    X(fails_deferred, "failed paths whose operations completed at the next progress (the "         \
                      "failure was found inside an operation)")                                    \
    X(ctx_overlaps, "contexts taken while another thread held another context (threads)")          \
    X(cc_set, "provider sockets given BM_BTL_OFI_CONGESTION's congestion control (ofi_sock.c)")    \
    X(malformed, "messages dropped as malformed (wrong magic, tag or length)")

struct bm_btl_ofi_stats {
#define BM_BTL_OFI_STATS_FIELD(name, help) atomic_ullong name;
    BM_BTL_OFI_STATS_MAP(BM_BTL_OFI_STATS_FIELD)
#undef BM_BTL_OFI_STATS_FIELD
};

#define BM_OFI_COUNT(m, field) atomic_fetch_add_explicit(&(m)->stats.field, 1, memory_order_relaxed)

/* ---- module ---------------------------------------------------------------------- */

struct bm_btl_ofi_component;

struct bm_btl_ofi_module {
    struct bm_btl_module super; /* first: the PML's pointer is ours */
    struct bm_btl_ofi_component *comp;
    int index;
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_ep *ep; /* the scalable endpoint, or the one endpoint all contexts alias */
    bool sep;
    int rx_ctx_bits;
    struct bm_btl_ofi_context *ctx;
    int nctx;
    bool mt;             /* MPI_THREAD_MULTIPLE: contexts lock, threads pick contexts */
    bool count_overlaps; /* mt, several contexts, BM_BTL_OFI_STATS: count ctx_overlaps */
    atomic_int ctx_held; /* contexts whose lock is held now (count_overlaps only) */
    uint64_t mr_mode;
    bool mr_local;   /* local buffers need registration (provider asked, or forced) */
    bool loopback;   /* reaches only this host */
    bool software;   /* a provider emulated over sockets/shared memory */
    bool manual;     /* FI_PROGRESS_MANUAL: we drive the provider */
    bool yield_rdma; /* software provider with its own progress thread: pollers yield (progress) */
    bool multi_recv;
    bool fence_close;      /* injects are fenced before closing (the provider's own thread sends) */
    size_t min_multi_recv; /* FI_OPT_MIN_MULTI_RECV: a buffer is released below this room */
    bool closing;          /* finalize: receive buffers are not posted again */
    bool acks;             /* our own delivery acknowledgements (socket providers) */
    bool acks_same_host;   /* ... also towards peers whose connection goes through lo (on) */
    const char *cc; /* congestion control for the provider's sockets (ofi_sock.c), NULL none */
    bool cc_loopback_only;    /* ... only on those whose both ends are this host (auto) */
    bool cc_told;             /* the kernel refused a named algorithm: warned once */
    atomic_bool had_failures; /* a path failed at some point (finalize messages) */
    struct bm_btl_ofi_module *left_open_next; /* close left it open (ofi_module.c) */
    struct bm_btl_ofi_stats stats;
    pthread_mutex_t ack_lock;              /* the list below, with threads */
    struct bm_btl_ofi_endpoint **ack_list; /* endpoints that owe acknowledgements */
    atomic_int nack_list;                  /* changed under ack_lock, read without it */
    size_t inject_size;
    size_t max_msg_size;
    uint64_t rma_flags; /* completion semantics of RMA and atomics */
    char prov_name[32];
    char fabric_name[64];
    char domain_name[32];
    uint8_t addr[BM_BTL_OFI_ADDR_MAX];
    size_t addrlen;
    struct bm_btl_ofi_amo_table amo;
    pthread_mutex_t lock; /* registration cache and endpoint table, with threads */
    struct bm_btl_ofi_mr_cache cache;
    struct bm_btl_ofi_endpoint **eps; /* [job size] */
    atomic_int outstanding;           /* RDMA/atomics in flight on the module */
    atomic_int nfailed;               /* endpoints whose path is failed (probes due) */
    atomic_bool fail_due;             /* an endpoint has fail_pending set */
    _Atomic uint64_t next_watch;      /* when the liveness watcher runs next */
    pthread_mutex_t watch_lock;       /* one thread runs the watcher (with threads) */
};

/* ---- the provider's sockets (ofi_sock.c) ---------------------------------------- */

/* Decides m->cc from BM_BTL_OFI_CONGESTION and the provider's address format
 * (after fi_getname). */
void bm_btl_ofi_sock_init(struct bm_btl_ofi_module *m);
/* Keeps the peer's provider address for the walk below; a peer whose
 * connection auto leaves alone (not on this host) is never walked for. */
void bm_btl_ofi_sock_ep_init(struct bm_btl_ofi_endpoint *ep, const void *addr, size_t len);
/* The provider connection between m and the peer at provider address addr
 * goes through this host's loopback device: both socket addresses, and the
 * same IP address or both loopback ones. */
bool bm_btl_ofi_sock_local(const struct bm_btl_ofi_module *m, const void *addr, size_t len);
/* Gives the provider's connected sockets of the module m->cc (slow: walks
 * /proc/self/fd); returns how many it changed. */
int bm_btl_ofi_sock_scan(struct bm_btl_ofi_module *m, const struct bm_btl_ofi_endpoint *ep);

/* A message from ep arrived: its connection exists now. The first one from
 * each peer looks for the sockets once. */
static inline void bm_btl_ofi_sock_heard(struct bm_btl_ofi_endpoint *ep)
{
    if (__builtin_expect(ep->m->cc != NULL, 0) &&
        !atomic_load_explicit(&ep->cc_seen, memory_order_relaxed) &&
        !atomic_exchange_explicit(&ep->cc_seen, true, memory_order_relaxed))
        bm_btl_ofi_sock_scan(ep->m, ep);
}

/* ---- the memory monitor (ofi_monitor.c) -------------------------------------- */

struct bm_btl_ofi_monitor;

/* ---- component -------------------------------------------------------------------- */

struct bm_btl_ofi_component {
    struct bm_btl_component super; /* first: the base's pointer is ours */
    struct bm_btl_ofi_config cfg;
    const struct bm_btl_rte *rte;
    int rank, size, node;
    bool mt;
    struct bm_btl_ofi_module **modules; /* super.modules points here */
    int nmodules;
    /* Threads pick contexts round robin on first use (MPI_THREAD_MULTIPLE):
     * a thread's slot lives under this key, per instance. */
    pthread_key_t thread_key;
    bool thread_key_made;
    atomic_int thread_next;
    struct bm_btl_ofi_monitor *monitor; /* NULL when memory cannot be watched */
    bool sleepers; /* processes of the job may sleep (init args): queues with descriptors */
    int wait_epfd; /* every context's wait descriptor (btl.h "Sleeping"), else -1 */
    bool wait_nap; /* a context has no descriptor: sleepers nap */
    uint32_t api_version;
    bool querying; /* a dry run for query (bm_info): no warnings */
    char why[512]; /* what selection found, for messages */
};

/* ---- ofi_provider.c: choosing what to open ------------------------------------------ */

/* The infos to open, one per domain, best first (closest NIC first), as a
 * NULL-terminated array of fi_dupinfo copies (free each with fi_freeinfo,
 * then the array). Writes why nothing qualified into comp->why. */
bm_status_t bm_btl_ofi_provider_select(struct bm_btl_ofi_component *comp,
                                       struct fi_info ***infos_out, int *count_out);
/* The other providers that offer FI_EP_RDM with messages and RMA here, each
 * with why it would not be used, for bm_info. */
void bm_btl_ofi_provider_survey(const struct bm_btl_ofi_component *comp, const char *chosen,
                                char *buf, size_t len);
/* The hints every query uses, for the given capability set. */
struct fi_info *bm_btl_ofi_provider_hints(const struct bm_btl_ofi_component *comp, uint64_t caps);
/* Is the provider one emulated over sockets or shared memory? */
bool bm_btl_ofi_provider_is_software(const char *prov_name);
/* Reaches only this host (loopback interface, shared-memory provider)? */
bool bm_btl_ofi_provider_is_loopback(const struct fi_info *info);

/* ofi_topo_hwloc.c / ofi_topo_none.c: for each info, 1 when its NIC (by PCI
 * address, or by interface name) hangs below the NUMA node or package this
 * process is bound to, 0 when it is elsewhere, -1 when unknown. */
void bm_btl_ofi_topo_near(struct fi_info *const *infos, int n, int *near_out);

/* ---- ofi_module.c ------------------------------------------------------------------------- */

bm_status_t bm_btl_ofi_module_open(struct bm_btl_ofi_component *comp, int index,
                                   const struct fi_info *info, int near,
                                   struct bm_btl_ofi_module **module_out);
void bm_btl_ofi_module_close(struct bm_btl_ofi_module *m);
/* Modules that close left open (ofi_module.c "Left open"): their number. */
int bm_btl_ofi_modules_left_open(void);
bm_status_t bm_btl_ofi_add_procs(struct bm_btl_module *m, int nprocs, const int *ranks,
                                 struct bm_btl_endpoint **endpoints_out,
                                 struct bm_util_bitmap *reachable);
bm_status_t bm_btl_ofi_del_procs(struct bm_btl_module *m, int nprocs, const int *ranks,
                                 struct bm_btl_endpoint **endpoints);
/* The endpoint of rank on m: made by add_procs, or now from the modex when
 * the peer's first message overtakes our own add_procs. NULL when rank is
 * not a peer this module reaches. */
struct bm_btl_ofi_endpoint *bm_btl_ofi_endpoint_get(struct bm_btl_ofi_module *m, int rank);
/* Mark the path to ep failed: error callback first, then every operation in
 * flight to it completes with status: at once when called from progress
 * (in_progress), else at the next progress or flush (an operation that
 * finds the path dead must not run completion callbacks inside itself:
 * btl.h "Threads"; the PML's callbacks assume its progress lock).
 * Idempotent. */
void bm_btl_ofi_endpoint_fail(struct bm_btl_ofi_endpoint *ep, int status, const char *what,
                              bool in_progress);
/* Progress and flush: complete the operations of paths that failed inside
 * an operation since (see endpoint_fail). */
void bm_btl_ofi_endpoint_fail_run(struct bm_btl_ofi_module *m);
/* The provider said "try again" for an operation to ep (after driving
 * ctx's progress): BM_ERR_OUT_OF_RESOURCE, or the path's error once it has
 * refused everything for BM_BTL_OFI_TIMEOUT (a dead peer behind rxm never
 * takes another operation). A post that succeeds ends the run. */
int bm_btl_ofi_endpoint_stalled(struct bm_btl_ofi_endpoint *ep, struct bm_btl_ofi_context *ctx);
static inline void bm_btl_ofi_endpoint_unstalled(struct bm_btl_ofi_endpoint *ep)
{
    if (atomic_load_explicit(&ep->stalled_since, memory_order_relaxed))
        atomic_store_explicit(&ep->stalled_since, 0, memory_order_relaxed);
}
/* Every 100 ms: PING peers that we sent to but did not hear from for half
 * of BM_BTL_OFI_TIMEOUT, fail the path when the PONG does not come within
 * the other half, and probe failed paths (BM_BTL_OFI_PROBE_INTERVAL). */
void bm_btl_ofi_endpoint_watch(struct bm_btl_ofi_module *m, uint64_t now);
/* Must the watcher above run while the process would sleep: an operation
 * in flight (its timeout), a peer we wait to hear from, or a failed path
 * (probes)? */
bool bm_btl_ofi_watch_due(const struct bm_btl_ofi_module *m);
/* A transport message (tag 0) from ep arrived. */
void bm_btl_ofi_endpoint_ctl(struct bm_btl_ofi_endpoint *ep, const struct bm_btl_ofi_ctl_msg *msg);
/* We sent something to ep / heard something from it. */
static inline void bm_btl_ofi_endpoint_sent(struct bm_btl_ofi_endpoint *ep)
{
    if (!atomic_load_explicit(&ep->unanswered, memory_order_relaxed))
        atomic_store_explicit(&ep->unanswered, 1, memory_order_relaxed);
}
static inline void bm_btl_ofi_endpoint_heard(struct bm_btl_ofi_endpoint *ep)
{
    if (atomic_load_explicit(&ep->unanswered, memory_order_relaxed))
        atomic_store_explicit(&ep->unanswered, 0, memory_order_relaxed);
}

/* ---- ofi_context.c ----------------------------------------------------------------------- */

bm_status_t bm_btl_ofi_context_open(struct bm_btl_ofi_module *m, int index);
/* Close the context's endpoints (first, so that the provider lets go of our
 * memory), then, once every endpoint of the module is closed, release its
 * queue and memory. */
void bm_btl_ofi_context_close(struct bm_btl_ofi_context *ctx);
void bm_btl_ofi_context_release(struct bm_btl_ofi_context *ctx);
/* The context the calling thread (MPI_THREAD_MULTIPLE) or the peer uses. */
struct bm_btl_ofi_context *bm_btl_ofi_context_pick(struct bm_btl_ofi_module *m,
                                                   const struct bm_btl_ofi_endpoint *ep);
/* The address of ep's receive context matching ctx. */
fi_addr_t bm_btl_ofi_context_dest(const struct bm_btl_ofi_context *ctx,
                                  const struct bm_btl_ofi_endpoint *ep);
/* Drive the provider for an operation that was told "try again", without
 * reading completions (no callback runs). */
void bm_btl_ofi_context_drive(struct bm_btl_ofi_context *ctx);
/* Read completions (and errors) of one context and run their callbacks. */
int bm_btl_ofi_context_progress(struct bm_btl_ofi_context *ctx);
/* A request from the context's pool (lock held), or NULL. */
struct bm_btl_ofi_req *bm_btl_ofi_req_get(struct bm_btl_ofi_context *ctx, int kind);
void bm_btl_ofi_req_put(struct bm_btl_ofi_context *ctx, struct bm_btl_ofi_req *req);
/* The request was accepted by the provider: count and time it. */
void bm_btl_ofi_req_posted(struct bm_btl_ofi_context *ctx, struct bm_btl_ofi_req *req);
/* Complete every request in flight to ep (all when NULL) with status; they
 * stay with the provider until it returns them. */
void bm_btl_ofi_context_fail_all(struct bm_btl_ofi_context *ctx, struct bm_btl_ofi_endpoint *ep,
                                 int status);
/* Cancel the posted receives and read completions until the provider gave
 * everything back (or timeout_ms passed). False when it did not. */
bool bm_btl_ofi_context_drain(struct bm_btl_ofi_context *ctx, int timeout_ms);
/* Map a libfabric error (positive FI_E*) to a status. */
int bm_btl_ofi_status_of(int fi_err);

/* ninflight += d, lock held: no locked instruction, readers elsewhere
 * load it atomically. */
static inline void bm_btl_ofi_ninflight_add(struct bm_btl_ofi_context *ctx, int d)
{
    atomic_store_explicit(&ctx->ninflight,
                          atomic_load_explicit(&ctx->ninflight, memory_order_relaxed) + d,
                          memory_order_relaxed);
}
static inline int bm_btl_ofi_ninflight(const struct bm_btl_ofi_context *ctx)
{
    return atomic_load_explicit(&ctx->ninflight, memory_order_relaxed);
}

/* The lock of ctx was just taken: with BM_BTL_OFI_STATS, count when
 * another context of the module is held at the same moment (a context's
 * lock is never held twice, nor two by one thread: that is another thread
 * using another context concurrently, which the base's serialisation of
 * transports without BM_BTL_CAP_THREADS would make impossible). */
static inline void bm_btl_ofi_held(struct bm_btl_ofi_context *ctx)
{
    struct bm_btl_ofi_module *m = ctx->m;
    if (__builtin_expect(m->count_overlaps, 0) && atomic_fetch_add(&m->ctx_held, 1) > 0)
        BM_OFI_COUNT(m, ctx_overlaps);
}
static inline void bm_btl_ofi_lock(struct bm_btl_ofi_context *ctx)
{
    if (ctx->m->mt) {
        pthread_mutex_lock(&ctx->lock);
        bm_btl_ofi_held(ctx);
    }
}
/* Take the lock if free (threads), else false; true without threads. */
static inline bool bm_btl_ofi_trylock(struct bm_btl_ofi_context *ctx)
{
    if (!ctx->m->mt)
        return true;
    if (pthread_mutex_trylock(&ctx->lock) != 0)
        return false;
    bm_btl_ofi_held(ctx);
    return true;
}
static inline void bm_btl_ofi_unlock(struct bm_btl_ofi_context *ctx)
{
    if (ctx->m->mt) {
        if (__builtin_expect(ctx->m->count_overlaps, 0))
            atomic_fetch_sub(&ctx->m->ctx_held, 1);
        pthread_mutex_unlock(&ctx->lock);
    }
}

/* ---- ofi_mr.c -----------------------------------------------------------------------------------
 */

/* The mr_mode bits a provider's answer means: FI_MR_BASIC (libfabric 1.4's
 * enumeration, which providers still honour when asked) stands for
 * provider keys, virtual addresses and allocated memory; FI_MR_SCALABLE
 * for none of them. Other values are bits already. */
uint64_t bm_btl_ofi_mr_mode_bits(uint64_t mr_mode);
bm_status_t bm_btl_ofi_mr_init(struct bm_btl_ofi_module *m);
void bm_btl_ofi_mr_fini(struct bm_btl_ofi_module *m);
/* Register [addr, addr + len) for everything (local and remote access),
 * binding it to the endpoint when the provider asks (FI_MR_ENDPOINT); not
 * cached. For pools and receive buffers. */
bm_status_t bm_btl_ofi_mr_reg_raw(struct bm_btl_ofi_module *m, void *addr, size_t len,
                                  struct fid_mr **mr_out, void **desc_out, uint64_t *key_out);
/* A registration covering [addr, addr + len), from the cache or new; the
 * caller holds a reference until it calls release. NULL on failure. */
struct bm_btl_ofi_mr *bm_btl_ofi_mr_acquire(struct bm_btl_ofi_module *m, const void *addr,
                                            size_t len);
void bm_btl_ofi_mr_release(struct bm_btl_ofi_module *m, struct bm_btl_ofi_mr *reg);
/* Local descriptor for [addr, addr + len): from the caller's handle when it
 * covers the range, else from the cache (reference in *reg_out). NULL desc
 * with BM_OK when no descriptor is needed. */
bm_status_t bm_btl_ofi_mr_local_desc(struct bm_btl_ofi_module *m,
                                     const struct bm_btl_reg_handle *handle, const void *addr,
                                     size_t len, void **desc_out, struct bm_btl_ofi_mr **reg_out);
/* The memory monitor saw [start, end) go away: forget cached registrations. */
void bm_btl_ofi_mr_invalidate(struct bm_btl_ofi_module *m, uintptr_t start, uintptr_t end);
/* Close registrations the monitor invalidated (lock held by the caller). */
void bm_btl_ofi_mr_reap(struct bm_btl_ofi_module *m);
struct bm_btl_reg_handle *bm_btl_ofi_register_mem(struct bm_btl_module *m,
                                                  struct bm_btl_endpoint *ep, void *base,
                                                  size_t size, uint32_t reg_flags);
bm_status_t bm_btl_ofi_deregister_mem(struct bm_btl_module *m, struct bm_btl_reg_handle *handle);

/* ---- ofi_monitor.c: userfaultfd watch of unmapped memory ------------------------------------ */

/* Start watching (a helper thread reads the kernel's unmap events). NULL
 * when the kernel refuses; why says so. */
struct bm_btl_ofi_monitor *bm_btl_ofi_monitor_start(struct bm_btl_ofi_component *comp, char *why,
                                                    size_t whylen);
void bm_btl_ofi_monitor_stop(struct bm_btl_ofi_monitor *mon);
/* Watch [start, end) (page-aligned); false when it cannot be watched. */
bool bm_btl_ofi_monitor_watch(struct bm_btl_ofi_monitor *mon, uintptr_t start, uintptr_t end);
void bm_btl_ofi_monitor_unwatch(struct bm_btl_ofi_monitor *mon, uintptr_t start, uintptr_t end);
/* Wait until an event the helper thread is handling has been applied
 * (closes the window between the kernel's event and the cache update). */
void bm_btl_ofi_monitor_sync(struct bm_btl_ofi_monitor *mon);

/* ---- ofi_rdma.c and ofi_atomic.c ------------------------------------------------------------ */

int bm_btl_ofi_put(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                   uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                   const struct bm_btl_reg_handle *remote_handle, size_t size, uint32_t flags,
                   uint8_t order, bm_btl_rdma_cb_fn cb, void *context, void *cbdata);
int bm_btl_ofi_get(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                   uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                   const struct bm_btl_reg_handle *remote_handle, size_t size, uint32_t flags,
                   uint8_t order, bm_btl_rdma_cb_fn cb, void *context, void *cbdata);
bm_status_t bm_btl_ofi_flush(struct bm_btl_module *m, struct bm_btl_endpoint *ep);
/* The target address of remote_addr under rkey (offset without FI_MR_VIRT_ADDR). */
uint64_t bm_btl_ofi_remote_addr(const struct bm_btl_ofi_module *m,
                                const struct bm_btl_ofi_rkey *rkey, uint64_t remote_addr);
/* A request for an RDMA or atomic operation towards ep (NULL with *rc set
 * when the path failed or no request is free), and what follows the
 * provider call: count it in flight (rc 0) or take it back. */
struct bm_btl_ofi_req *bm_btl_ofi_rdma_req(struct bm_btl_ofi_module *m,
                                           struct bm_btl_ofi_endpoint *ep, int kind,
                                           bm_btl_rdma_cb_fn cb, void *local_addr,
                                           struct bm_btl_reg_handle *local_handle, void *context,
                                           void *cbdata, uint32_t flags, int *rc);
void bm_btl_ofi_rdma_took(struct bm_btl_ofi_req *req); /* lock held, the provider took it */
int bm_btl_ofi_rdma_posted(struct bm_btl_ofi_context *ctx, struct bm_btl_ofi_endpoint *ep,
                           struct bm_btl_ofi_req *req, int kind, ssize_t rc, const char *what);
/* Run the callback of a finished RDMA/atomic request and recycle it
 * (unless the provider still holds it: we failed it early). */
void bm_btl_ofi_rdma_complete(struct bm_btl_ofi_req *req, int status);

/* Fill the module's table from fi_*atomicvalid and set caps/atomic_flags. */
void bm_btl_ofi_atomic_probe(struct bm_btl_ofi_module *m);
int bm_btl_ofi_atomic_op(struct bm_btl_module *m, struct bm_btl_endpoint *ep, uint64_t remote_addr,
                         const struct bm_btl_reg_handle *remote_handle, enum bm_btl_atomic_op op,
                         uint64_t operand, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                         void *context, void *cbdata);
int bm_btl_ofi_atomic_op_n(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                           uint64_t remote_addr, const struct bm_btl_reg_handle *remote_handle,
                           enum bm_btl_atomic_op op, const void *operands, size_t n, uint32_t flags,
                           uint8_t order, bm_btl_rdma_cb_fn cb, void *context, void *cbdata);
int bm_btl_ofi_atomic_fop(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                          uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                          const struct bm_btl_reg_handle *remote_handle, enum bm_btl_atomic_op op,
                          uint64_t operand, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                          void *context, void *cbdata);
int bm_btl_ofi_atomic_cswap(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                            uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                            const struct bm_btl_reg_handle *remote_handle, uint64_t compare,
                            uint64_t value, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                            void *context, void *cbdata);

/* ---- ofi_ack.c: delivery acknowledgements ---------------------------------------------- */

/* Stream state of a new endpoint (nothing when the module uses no acks).
 * same_host: the peer runs on this node and our provider connection to it
 * goes through lo; then, under BM_BTL_OFI_ACKS=auto, our messages to it are
 * not numbered (no ep->tx) but its numbered ones are still acknowledged. */
bm_status_t bm_btl_ofi_ack_ep_init(struct bm_btl_ofi_endpoint *ep, bool same_host);
void bm_btl_ofi_ack_ep_fini(struct bm_btl_ofi_endpoint *ep);
/* Fill the header of a message to ep leaving from ctx: number it when
 * tracked (ctx lock held), piggyback an owed acknowledgement. */
void bm_btl_ofi_ack_hdr(struct bm_btl_ofi_context *ctx, struct bm_btl_ofi_endpoint *ep,
                        struct bm_btl_ofi_hdr *h, bm_btl_tag_t tag, bool tracked);
/* A message whose header ack_hdr filled was not posted (the provider said
 * "try again", or refused it): the acknowledgement it would have carried is
 * owed again. ack_hdr took it off the owed set, and a peer whose last
 * tracked messages wait for it would otherwise never get it. */
void bm_btl_ofi_ack_unsent(struct bm_btl_ofi_endpoint *ep, const struct bm_btl_ofi_hdr *h);
/* A numbered fragment was posted (ctx lock held): wait for its acknowledgement. */
void bm_btl_ofi_ack_track(struct bm_btl_ofi_context *ctx, struct bm_btl_ofi_endpoint *ep,
                          struct bm_btl_ofi_frag *f);
/* The provider completed fragment f successfully: true when it may call
 * back now (untracked, or already acknowledged). */
bool bm_btl_ofi_ack_provider_done(struct bm_btl_ofi_frag *f);
/* Take f off its stream (it completes with an error). */
void bm_btl_ofi_ack_untrack(struct bm_btl_ofi_frag *f);
/* A message from ep arrived with header h. */
void bm_btl_ofi_ack_received(struct bm_btl_ofi_endpoint *ep, const struct bm_btl_ofi_hdr *h);
/* An acknowledgement of our stream ctx up to seq arrived from ep. */
void bm_btl_ofi_ack_apply(struct bm_btl_ofi_endpoint *ep, unsigned ctx, uint32_t seq);
/* The path to ep failed: complete every fragment waiting for an
 * acknowledgement with status. */
void bm_btl_ofi_ack_fail(struct bm_btl_ofi_endpoint *ep, int status);
/* End of a progress call: send the acknowledgements that waited a call. */
void bm_btl_ofi_ack_flush(struct bm_btl_ofi_module *m);
/* Finalize: send every owed acknowledgement now. */
void bm_btl_ofi_ack_flush_all(struct bm_btl_ofi_module *m);

/* ---- ofi_send.c and ofi_recv.c ------------------------------------------------------------- */

bm_status_t bm_btl_ofi_fpool_init(struct bm_btl_ofi_context *ctx);
void bm_btl_ofi_fpool_fini(struct bm_btl_ofi_context *ctx);
struct bm_btl_descriptor *bm_btl_ofi_alloc(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                                           uint8_t order, size_t size, uint32_t flags);
void bm_btl_ofi_free(struct bm_btl_module *m, struct bm_btl_descriptor *des);
struct bm_btl_descriptor *bm_btl_ofi_prepare_src(struct bm_btl_module *m,
                                                 struct bm_btl_endpoint *ep, const void *data,
                                                 size_t reserve, size_t *size, uint8_t order,
                                                 uint32_t flags);
int bm_btl_ofi_send(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                    struct bm_btl_descriptor *des, bm_btl_tag_t tag);
int bm_btl_ofi_sendi(struct bm_btl_module *m, struct bm_btl_endpoint *ep, const void *hdr,
                     size_t hdr_len, const void *payload, size_t payload_len, uint8_t order,
                     uint32_t flags, bm_btl_tag_t tag, struct bm_btl_descriptor **des_out);
/* A send fragment's provider completion arrived (status 0) or it failed:
 * call back now, or (delivery acknowledgements) once the peer confirms. */
void bm_btl_ofi_send_complete(struct bm_btl_ofi_frag *f, int status);
/* Run a finished fragment's callback and release it. */
void bm_btl_ofi_send_finish(struct bm_btl_ofi_frag *f, int status);
/* Before closing (fence_close): a FENCE with a completion from every
 * context that injected to a peer; the drain that follows waits for them. */
void bm_btl_ofi_send_fences(struct bm_btl_ofi_module *m);
/* Inject a short transport message (header filled by the caller). */
bm_status_t bm_btl_ofi_send_inject(struct bm_btl_ofi_context *ctx, struct bm_btl_ofi_endpoint *ep,
                                   const void *buf, size_t len);
/* The provider returned a fragment whose send we had failed already. */
void bm_btl_ofi_frag_returned(struct bm_btl_ofi_frag *f);
/* A transport message (tag 0) to ep, even over a path marked failed;
 * BM_OK when posted. */
bm_status_t bm_btl_ofi_send_ctl(struct bm_btl_ofi_endpoint *ep, uint8_t ctl, uint32_t seq);

bm_status_t bm_btl_ofi_recv_init(struct bm_btl_ofi_context *ctx);
void bm_btl_ofi_recv_fini(struct bm_btl_ofi_context *ctx);
/* A receive completion: dispatch the message at buf (len bytes); repost
 * the buffer when released. */
void bm_btl_ofi_recv_complete(struct bm_btl_ofi_rbuf *rb, void *buf, size_t len, uint64_t flags);
/* A receive completion for rb was read from the queue (lock held): count
 * it busy until handed over, and what of the buffer it covers. */
static inline void bm_btl_ofi_recv_read(struct bm_btl_ofi_rbuf *rb, const void *buf, size_t len)
{
    rb->busy++;
    if (buf && len) {
        size_t end = (size_t)((const char *)buf - (const char *)rb->mem) + len;
        rb->done_bytes += len;
        rb->done_count++;
        if (end > rb->end)
            rb->end = end;
    }
}
/* Post (again) a receive buffer; lock held. */
bm_status_t bm_btl_ofi_recv_post(struct bm_btl_ofi_context *ctx, struct bm_btl_ofi_rbuf *rb);

#endif
