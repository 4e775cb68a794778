/* Internal declarations of the tcp transport, shared by its files and by
 * nothing else: the configuration read from BM_BTL_TCP_* parameters, the
 * component state (one epoll set for every module), modules (one per network
 * interface), endpoints (one per reachable peer per module), connections
 * (BM_BTL_TCP_LINKS per endpoint, each one TCP socket) and fragments (a send
 * descriptor plus its frame header). See README.md for the design and a
 * glossary. */
#ifndef BM_BTL_TCP_H
#define BM_BTL_TCP_H

#include "btl/btl.h"
#include "btl/tcp/tcp_proto.h"
#include "util/list.h"
#include "util/lock.h"

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

/* ---- configuration (BM_BTL_TCP_*) ---------------------------------------- */

struct bm_btl_tcp_config {
    const char *if_include; /* interface names or CIDR networks, comma-separated */
    const char *if_exclude;
    int links;              /* connections per peer per module */
    size_t sndbuf, rcvbuf;  /* SO_SNDBUF / SO_RCVBUF; 0 keeps the kernel's autotuning */
    const char *congestion; /* TCP_CONGESTION: "auto", "default" or an algorithm's name */
    size_t eager_limit;
    size_t max_send_size;     /* largest frame payload */
    int connect_timeout_ms;   /* TCP connect of one interface pair (kernel level) */
    int handshake_timeout_ms; /* the peer process answering our HELLO (needs its progress) */
    int user_timeout_ms;      /* TCP_USER_TIMEOUT: the kernel's backstop (0: its default) */
    int fail_ms;              /* no progress this long with data outstanding = dead (tcp_live.c) */
    int keepalive_idle_s;     /* TCP_KEEPIDLE */
    int keepalive_intvl_s;    /* TCP_KEEPINTVL */
    int keepalive_cnt;        /* TCP_KEEPCNT */
    int finalize_drain_ms;    /* how long finalize waits for unacknowledged sends */
    int reconnect_ms;         /* retry a failed endpoint this often (0: never) */
    int test_drop_tag;        /* testing: a tag whose test_drop_nth-th frame is dropped (0: off) */
    int test_drop_nth;
    int test_drop_fail; /* testing: the drop also fails the path, on this side only */
    size_t place_min;   /* receive placement: least payload still to arrive (0: off) */
};

/* ---- local interfaces (tcp_if.c) ------------------------------------------ */

struct bm_btl_tcp_ifaddr {
    int family; /* AF_INET or AF_INET6 */
    uint8_t addr[16];
    uint8_t prefixlen;
};

#define BM_BTL_TCP_IF_MAX_ADDRS 2 /* one IPv4 and one IPv6 address per interface */

struct bm_btl_tcp_if {
    char name[IF_NAMESIZE];
    int ifindex;
    bool loopback;
    uint32_t bandwidth; /* Mbit/s */
    struct bm_btl_tcp_ifaddr addrs[BM_BTL_TCP_IF_MAX_ADDRS];
    int naddrs;
};

/* Usable interfaces after BM_BTL_TCP_IF_INCLUDE/_EXCLUDE. Loopback interfaces
 * are kept only when with_loopback, or when named by the include list.
 * *ifs_out is malloc'ed (free it). BM_ERR_BAD_PARAM on a bad filter. */
bm_status_t bm_btl_tcp_if_discover(const struct bm_btl_tcp_config *cfg, bool with_loopback,
                                   struct bm_btl_tcp_if **ifs_out, int *count_out);
/* Kernel boot id and network-namespace inode: equal on two processes exactly
 * when their loopback interfaces are the same one. */
void bm_btl_tcp_if_host_id(uint8_t host_id_out[16], uint64_t *netns_ino_out);
/* The interface the kernel would route a packet to addr through (netlink
 * RTM_GETROUTE), or -1 when there is no route. */
int bm_btl_tcp_if_route_oif(int family, const uint8_t *addr);
/* True when a and b (same family) are in the network of a/prefixlen. */
bool bm_btl_tcp_if_in_subnet(int family, const uint8_t *net, int prefixlen, const uint8_t *addr);
/* "10.0.0.1:4000" or "[fe80::1]:4000"; port 0 omits the port. */
void bm_btl_tcp_addr_str(int family, const uint8_t *addr, uint16_t port, char *buf, size_t len);

/* ---- objects ---------------------------------------------------------------- */

/* What an epoll event's data.ptr points to starts with this. */
enum bm_btl_tcp_poll_kind {
    BM_BTL_TCP_POLL_LISTENER,
    BM_BTL_TCP_POLL_CONN,
};

struct bm_btl_tcp_module;
struct bm_btl_tcp_endpoint;
struct bm_btl_tcp_component;

struct bm_btl_tcp_listener {
    enum bm_btl_tcp_poll_kind kind;
    int fd;
    struct bm_btl_tcp_module *module;
    struct bm_btl_tcp_ifaddr addr;
    uint16_t port;
};

struct bm_btl_tcp_module {
    struct bm_btl_module super;        /* first: the PML's pointer is ours */
    struct bm_btl_tcp_component *comp; /* == super.component, typed */
    int index;                         /* in the component's array and in the modex record */
    struct bm_btl_tcp_if iface;
    struct bm_btl_tcp_listener listeners[BM_BTL_TCP_IF_MAX_ADDRS];
    int nlisteners;
    struct bm_btl_tcp_endpoint **eps; /* [job size], NULL until add_procs or a peer connects */
};

#define BM_BTL_TCP_FRAG_F_INTERNAL 0x1u  /* ACK/FIN frame of a connection: no callback */
#define BM_BTL_TCP_FRAG_F_POOLED   0x2u  /* returns to the component's pool */
#define BM_BTL_TCP_FRAG_F_QUEUED   0x4u  /* on a send or unacknowledged queue */
#define BM_BTL_TCP_FRAG_F_FREE     0x8u  /* internal frame freed once written (FIN) */
#define BM_BTL_TCP_FRAG_F_BIG      0x10u /* returns to the component's pool of large frames */

/* Longest header of the layer above that receive placement keeps aside. */
#define BM_BTL_TCP_PLACE_HDR_MAX 64

/* A placed frame lost before it was complete, for the layer above's
 * receive callback at the end of progress (btl.h: BM_BTL_RECV_F_ABORTED). */
struct bm_btl_tcp_place_abort {
    struct bm_btl_tcp_place_abort *next;
    struct bm_btl_module *module;
    int peer;
    uint8_t tag;
    size_t hdr_len;
    _Alignas(8) char hdr[BM_BTL_TCP_PLACE_HDR_MAX];
};

/* Largest frame payload a receiver accepts: anything bigger is a corrupt stream. */
#define BM_BTL_TCP_FRAME_MAX (64u << 20)

struct bm_btl_tcp_frag {
    struct bm_btl_descriptor des; /* first: the PML's pointer is ours */
    struct bm_util_queue_node qnode;
    struct bm_btl_tcp_endpoint *ep;
    struct bm_btl_tcp_hdr hdr; /* network byte order once queued */
    size_t total;              /* header + payload bytes */
    size_t sent;               /* bytes of total already written */
    uint32_t seq;              /* host order copy of hdr.seq */
    uint32_t flags;            /* BM_BTL_TCP_FRAG_F_* */
    size_t cap;                /* bytes of data[] */
    struct iovec *xv;          /* prepare_src_iov: the caller's pieces after seg[0] (in data[]) */
    uint32_t nxv;
    size_t xlen; /* their bytes */
    struct bm_btl_tcp_frag *pool_next;
    _Alignas(16) char data[]; /* seg[0] lives here */
};

enum bm_btl_tcp_conn_state {
    BM_BTL_TCP_CONN_IDLE,       /* no socket */
    BM_BTL_TCP_CONN_CONNECTING, /* non-blocking connect() in progress */
    BM_BTL_TCP_CONN_HS_SENT,    /* HELLO sent, waiting for ACCEPT/REJECT */
    BM_BTL_TCP_CONN_WAIT_PEER,  /* lost a simultaneous connect: the peer's connection is coming */
    BM_BTL_TCP_CONN_ACCEPTING,  /* accepted socket, waiting for the peer's HELLO */
    BM_BTL_TCP_CONN_CONNECTED,  /* frames flow */
    BM_BTL_TCP_CONN_CLOSED,     /* peer finalized (FIN) or we did */
};

struct bm_btl_tcp_conn {
    enum bm_btl_tcp_poll_kind kind; /* BM_BTL_TCP_POLL_CONN */
    struct bm_btl_tcp_component *comp;
    enum bm_btl_tcp_conn_state state;
    int fd;
    struct bm_btl_tcp_endpoint *ep;          /* NULL while an accepted socket is anonymous */
    struct bm_btl_tcp_module *accept_module; /* module whose listener accepted it */
    int link;
    uint32_t events; /* currently registered epoll events */
    long long deadline_ns;
    struct bm_util_list_node timer_node; /* on the component's timer list while deadline_ns */
    struct bm_util_list_node qnode_anon; /* on the component's anon list while unidentified */
    int err;   /* errno of a send failure, reported at the end of progress */
    bool dead; /* on the component's dead list (relaxed atomic: set by senders) */
    struct bm_btl_tcp_conn *dead_next;
    uint8_t hs[sizeof(struct bm_btl_tcp_hs)];
    size_t hs_len;
    long long hs_until_ns; /* accepted: its HELLO is answered by then or it is closed */
    char peer_str[64];     /* remote address:port for messages */
    char local_str[64];
    /* sending */
    struct bm_util_queue sendq; /* frags not completely written, in order */
    struct bm_util_queue ackq;  /* frags written, waiting for the peer's acknowledgement */
    size_t queued_bytes;
    uint32_t tx_seq;   /* next DATA sequence number */
    uint32_t rx_count; /* DATA frames received (relaxed atomic: senders piggy-back it) */
    uint32_t ack_sent; /* rx_count last sent to the peer */
    bool ack_listed;   /* on the component's ack list */
    bool ack_urgent;   /* a frame asked for an acknowledgement at once (relaxed atomic) */
    int ack_age;       /* progress calls the owed acknowledgement has waited */
    struct bm_btl_tcp_conn *ack_next;
    struct bm_btl_tcp_frag *ctl; /* the ACK/FIN frame of this connection */
    bool peer_fin;               /* the peer said goodbye */
    /* progress seen by the liveness check (tcp_live.c): TCP_INFO's byte
     * counters and when they last moved (0: not yet looked at) */
    uint64_t live_acked, live_rcvd;
    long long live_ns;
    /* receiving */
    char *rbuf;
    size_t rcap, rlen, rpos; /* buffer capacity, bytes in it, start of the unparsed part */
    /* receive placement (btl.h; tcp_conn.c): the DATA frame being read
     * straight into the memory its place callback named. While placing,
     * rbuf holds nothing unparsed. */
    bool placing;
    bool place_declined;     /* the frame at rpos was offered and declined */
    bool place_last;         /* the last DATA frame was placed: read ahead little */
    bool place_ack_now;      /* its header asked for an acknowledgement at once */
    uint8_t place_tag;       /* its tag */
    size_t place_hdr_len;    /* bytes of place_hdr: the layer above's header */
    size_t place_left;       /* payload bytes still to read */
    size_t place_len;        /* the frame's payload length */
    struct iovec *piov;      /* [BM_BTL_IOV_MAX + 1] where they go (+ rbuf); NULL until needed */
    uint32_t piov_i, piov_n; /* next piece, pieces */
    _Alignas(8) char place_hdr[BM_BTL_TCP_PLACE_HDR_MAX];
};

struct bm_btl_tcp_candidate {
    int family;
    struct sockaddr_storage sa;
    socklen_t salen;
    bool bind_local; /* bind to the module's address (the pair is direct) */
    int remote_module;
    char str[64];    /* remote address for messages */
    char ifname[16]; /* remote interface name */
};

struct bm_btl_tcp_endpoint {
    struct bm_btl_tcp_module *module;
    int rank;
    bool announced; /* reported reachable to the PML by add_procs */
    bool failed;
    int fail_status;
    bool retry;                         /* failed, and worth reconnecting (reconnect_ms) */
    bool probing;                       /* a reconnection attempt is under way */
    long long retry_at;                 /* when to try next */
    struct bm_btl_tcp_candidate *cands; /* remote addresses to try, best first */
    int ncands;
    int cand;                      /* the one in use; earlier ones were dropped with a warning */
    struct bm_btl_tcp_conn *links; /* [config.links] */
    int nlinks;
    uint32_t rr; /* round-robin cursor over links */
    /* Under MPI_THREAD_MULTIPLE (README "Threads"): the send lock of this
     * endpoint, over its links' send state (sendq, ackq, queued_bytes,
     * tx_seq, ack_sent, ack_age, epoll interest), rr, fast and the pool
     * below. fast: every link is connected and none is dead, and the
     * endpoint has not failed; while it is set a sender needs this lock
     * only. Whatever changes a link's connection (its state, its socket)
     * clears it first, under this lock; it is set again only with the
     * component's lock held. */
    bool mt;
    bool fast;
    bool connect_pending; /* MT: a send found a link idle; progress connects */
    struct bm_util_lock lock;
    struct bm_btl_tcp_frag *pool; /* MT: this peer's free fragments */
    int pool_count;
    struct bm_btl_tcp_frag *pool_big; /* MT: this peer's free large ones */
    int pool_big_count;
};

/* ---- peers' modex records, pairing (tcp_module.c) ---------------------------- */

struct bm_btl_tcp_peer {
    bool loaded;
    bool have_tcp; /* published a usable record */
    bool same_host;
    const struct bm_btl_tcp_modex_hdr *hdr;
    const struct bm_btl_tcp_modex_addr *addrs; /* hdr->naddrs of them (network order) */
    int naddrs;
    int *pair_remote; /* [nmodules]: remote address index paired with local module, or -1 */
};

/* ---- component ---------------------------------------------------------------- */

/* Rejected stray connections, per source address, for the rate limit of
 * their warnings (tcp_conn.c, tcp_stray_warn): one line per source per
 * BM_BTL_TCP_STRAY_PERIOD_NS, the others counted and summed up in the next
 * line or at finalize. The table is small: a flood from many sources
 * recycles the least recently reported entry. */
#define BM_BTL_TCP_STRAY_SOURCES   16
#define BM_BTL_TCP_STRAY_PERIOD_NS 60000000000LL
struct bm_btl_tcp_stray {
    char host[64];       /* source address without the port; "" when unused */
    long long last_ns;   /* when its last line was printed */
    unsigned suppressed; /* rejected since then without a line */
};

/* An instance of the transport: every module, the epoll set they share, the
 * peers' records and the lists progress works through. */
struct bm_btl_tcp_component {
    struct bm_btl_component super; /* first; super.modules aliases modules */
    struct bm_btl_tcp_config cfg;
    int epfd;
    int rank, size;
    uint8_t nonce[BM_BTL_TCP_NONCE_LEN];
    struct bm_btl_tcp_module **modules;
    int nmodules;
    struct bm_btl_tcp_peer *peers; /* [size] */
    struct bm_util_list timers;    /* connections with a deadline */
    struct bm_util_list anon;      /* accepted sockets not yet identified (also on timers) */
    struct bm_btl_tcp_conn *ack_list;
    /* send failures to report at the end of progress; senders push with
     * a compare-and-swap (they hold their endpoint's lock, not ours) */
    _Atomic(struct bm_btl_tcp_conn *) dead_list;
    struct bm_btl_tcp_frag *pool;
    int pool_count;
    struct bm_btl_tcp_frag *pool_big; /* frames up to twice an eager one (tcp_frag.c) */
    int pool_big_count;
    struct bm_btl_tcp_place_abort *place_aborts; /* to report at the end of progress */
    /* The one-connection fast path (tcp_component.c, progress): the
     * connection that last received bytes, the connected links counted by
     * the last liveness check, and the passes since epoll_wait last ran. */
    struct bm_btl_tcp_conn *hot;
    int nconnected;
    unsigned hot_passes;
    struct bm_btl_iov *place_iov; /* [BM_BTL_IOV_MAX]: scratch of place calls */
    uint64_t placed_frames;       /* frames received by placement (bm_info, tests) */
    bool congestion_told;         /* BM_BTL_TCP_CONGESTION refused: said once */
    int completions;              /* counted by progress */
    int test_drops;               /* frames of cfg.test_drop_tag received so far (testing) */
    int nretry;                   /* endpoints with retry set */
    long long next_retry_check;
    long long next_live_check; /* tcp_live.c, every BM_BTL_TCP_LIVE_CHECK_NS */
    int rto_max_ms;            /* TCP_RTO_MAX_MS of every connection (0: kernel without it) */
    int live_min_rto;          /* unanswered retransmissions that make a stall a failure */
    bool finalizing;
    struct bm_btl_tcp_stray stray[BM_BTL_TCP_STRAY_SOURCES];
    /* MPI_THREAD_MULTIPLE (init args): tcp locks for itself
     * (BM_BTL_CAP_THREADS, README "Threads"). lock: recursive, over
     * everything but the endpoints' send state: progress (held across its
     * callbacks), connection set-up, timers, lists, the slow send path. */
    bool mt;
    struct bm_util_lock lock;
    int nconnect; /* endpoints with connect_pending */
};

/* Under MPI_THREAD_MULTIPLE: the component's lock (outer) and an
 * endpoint's send lock (inner; never held across a callback). */
static inline void bm_btl_tcp_comp_lock(struct bm_btl_tcp_component *c)
{
    if (__builtin_expect(c->mt, 0))
        bm_util_lock_take(&c->lock);
}
static inline void bm_btl_tcp_comp_unlock(struct bm_btl_tcp_component *c)
{
    if (__builtin_expect(c->mt, 0))
        bm_util_lock_give(&c->lock);
}
static inline void bm_btl_tcp_ep_lock(struct bm_btl_tcp_endpoint *ep)
{
    if (__builtin_expect(ep->mt, 0))
        bm_util_lock_take(&ep->lock);
}
static inline void bm_btl_tcp_ep_unlock(struct bm_btl_tcp_endpoint *ep)
{
    if (__builtin_expect(ep->mt, 0))
        bm_util_lock_give(&ep->lock);
}
/* A link's connection is about to change: senders take the slow path
 * (under the component's lock) until the endpoint is fast again. */
static inline void bm_btl_tcp_ep_unfast(struct bm_btl_tcp_endpoint *ep)
{
    if (__builtin_expect(ep->mt, 0)) {
        bm_util_lock_take(&ep->lock);
        ep->fast = false;
        bm_util_lock_give(&ep->lock);
    }
}
/* With the component's lock held: set fast when every link is connected. */
void bm_btl_tcp_ep_refresh_fast(struct bm_btl_tcp_endpoint *ep);

extern const struct bm_btl_ops bm_btl_tcp_ops;

long long bm_btl_tcp_now_ns(void);

/* tcp_live.c: failure detection by progress and local interface state. */
#define BM_BTL_TCP_LIVE_CHECK_NS 100000000LL
void bm_btl_tcp_live_check(struct bm_btl_tcp_component *comp, long long now);
/* The stats operation (BM_BTL_CAP_STATS): TCP_INFO of the endpoint's links. */
bm_status_t bm_btl_tcp_stats(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                             struct bm_btl_path_stats *out);
/* At init: the retransmission timeout cap and the evidence a failure needs. */
void bm_btl_tcp_live_setup(struct bm_btl_tcp_component *comp);
/* On every new socket: cap its retransmission timeout (when the kernel can). */
void bm_btl_tcp_live_sockopt(const struct bm_btl_tcp_component *comp, int fd);

/* tcp_conn.c: the rate-limited stray-connection summary, at finalize. */
void bm_btl_tcp_stray_summary(struct bm_btl_tcp_component *comp);

/* tcp_module.c */
bm_status_t bm_btl_tcp_module_create(struct bm_btl_tcp_component *comp, int index,
                                     const struct bm_btl_tcp_if *iface,
                                     struct bm_btl_tcp_module **module_out);
void bm_btl_tcp_module_destroy(struct bm_btl_tcp_module *m);
/* The module's address of this family, or NULL. */
const struct bm_btl_tcp_ifaddr *bm_btl_tcp_module_addr(const struct bm_btl_tcp_module *m,
                                                       int family);
/* Parse a peer's modex record and pair interfaces (once per peer). NULL for
 * a rank out of range, and while the runtime cannot give the record yet
 * (BM_ERR_BUSY: MPI_Finalize's fence under PMI; ask again later). */
struct bm_btl_tcp_peer *bm_btl_tcp_module_peer(struct bm_btl_tcp_component *comp, int rank);
bm_status_t bm_btl_tcp_add_procs(struct bm_btl_module *m, int nprocs, const int *ranks,
                                 struct bm_btl_endpoint **endpoints_out,
                                 struct bm_util_bitmap *reachable);
bm_status_t bm_btl_tcp_del_procs(struct bm_btl_module *m, int nprocs, const int *ranks,
                                 struct bm_btl_endpoint **endpoints);

/* tcp_endpoint.c */
/* The endpoint of module m for rank, created with its candidate list. */
struct bm_btl_tcp_endpoint *bm_btl_tcp_endpoint_get(struct bm_btl_tcp_module *m, int rank);
void bm_btl_tcp_endpoint_destroy(struct bm_btl_tcp_endpoint *ep, int status);
/* Start connecting a link that is IDLE (lazily, on first send). */
void bm_btl_tcp_endpoint_connect(struct bm_btl_tcp_endpoint *ep, struct bm_btl_tcp_conn *c);
/* Mark the endpoint failed: error callback first, then every outstanding
 * fragment completes with status. Idempotent. */
void bm_btl_tcp_endpoint_fail(struct bm_btl_tcp_endpoint *ep, int status, const char *what);
/* Tell the PML (the module's error callback) about ep, if add_procs
 * announced it (tcp_endpoint.c). */
void bm_btl_tcp_endpoint_report(struct bm_btl_tcp_endpoint *ep, enum bm_btl_error_kind kind,
                                int status, const char *what);
/* A failed endpoint works again through via: fresh per-link state, then
 * BM_BTL_ERROR_RECOVERED to the PML. */
void bm_btl_tcp_endpoint_recover(struct bm_btl_tcp_endpoint *ep, struct bm_btl_tcp_conn *via);
/* A reconnection attempt on c failed: quietly, try again later. */
void bm_btl_tcp_endpoint_probe_failed(struct bm_btl_tcp_endpoint *ep, struct bm_btl_tcp_conn *c,
                                      const char *why);
/* The interface pair in use cannot connect (err, or why): warn naming both
 * addresses and move to the peer's next address, or fail the endpoint. */
void bm_btl_tcp_endpoint_drop_pair(struct bm_btl_tcp_endpoint *ep, struct bm_btl_tcp_conn *c,
                                   int err, const char *why);
/* MT: connect the links of endpoints whose sends found them idle. */
void bm_btl_tcp_endpoint_connect_pending(struct bm_btl_tcp_component *comp);
/* Start reconnection attempts of failed endpoints that are due. */
void bm_btl_tcp_endpoint_retry(struct bm_btl_tcp_component *comp, long long now);
/* Report connections that failed inside send (called at the end of progress). */
void bm_btl_tcp_endpoint_reap(struct bm_btl_tcp_component *comp);
/* Send FIN on every connected link and close (finalize). */
void bm_btl_tcp_endpoint_shutdown(struct bm_btl_tcp_endpoint *ep);

/* tcp_conn.c */
/* Fresh IDLE state for link number link of ep (ep NULL, link -1: an
 * accepted socket not yet identified). */
void bm_btl_tcp_conn_init(struct bm_btl_tcp_conn *c, struct bm_btl_tcp_component *comp,
                          struct bm_btl_tcp_endpoint *ep, int link);
/* Connect c (IDLE) to ep's current candidate address. */
void bm_btl_tcp_conn_start(struct bm_btl_tcp_endpoint *ep, struct bm_btl_tcp_conn *c);
/* A new socket from a listener. */
void bm_btl_tcp_conn_accept(struct bm_btl_tcp_listener *l);
/* epoll events on a connection. */
void bm_btl_tcp_conn_event(struct bm_btl_tcp_conn *c, uint32_t events);
/* Expire deadlines (connects, handshakes). */
void bm_btl_tcp_conn_timers(struct bm_btl_tcp_component *comp, long long now);
/* The connection failed (err: errno, 0 for an unexpected EOF): fail its endpoint. */
void bm_btl_tcp_conn_fail(struct bm_btl_tcp_conn *c, int err);
/* Close and free accepted sockets that never identified themselves (finalize). */
void bm_btl_tcp_conn_close_anon(struct bm_btl_tcp_component *comp);
/* Update the epoll interest of a connection (EPOLLIN always, EPOLLOUT when asked). */
void bm_btl_tcp_conn_want_write(struct bm_btl_tcp_conn *c, bool want);
/* Close the socket of a connection and forget its state (not its queues). */
void bm_btl_tcp_conn_close_fd(struct bm_btl_tcp_conn *c);
/* Read and dispatch frames. Returns false when the connection failed or closed. */
bool bm_btl_tcp_conn_recv(struct bm_btl_tcp_conn *c);
/* Report placed frames that were lost (end of progress); with report false
 * (finalize) only release them. */
void bm_btl_tcp_conn_place_reap(struct bm_btl_tcp_component *comp, bool report);

/* tcp_frag.c */
struct bm_btl_descriptor *bm_btl_tcp_alloc(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                                           uint8_t order, size_t size, uint32_t flags);
void bm_btl_tcp_free(struct bm_btl_module *m, struct bm_btl_descriptor *des);
struct bm_btl_descriptor *bm_btl_tcp_prepare_src(struct bm_btl_module *m,
                                                 struct bm_btl_endpoint *ep, const void *data,
                                                 size_t reserve, size_t *size, uint8_t order,
                                                 uint32_t flags);
int bm_btl_tcp_send(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                    struct bm_btl_descriptor *des, bm_btl_tag_t tag);
struct bm_btl_descriptor *bm_btl_tcp_prepare_src_iov(struct bm_btl_module *m,
                                                     struct bm_btl_endpoint *ep, size_t reserve,
                                                     const struct bm_btl_iov *pieces, uint32_t n,
                                                     uint32_t flags);
/* The same operations under MPI_THREAD_MULTIPLE (bm_btl_tcp_ops_mt, btl.h
 * "mt_ops"): the endpoint's fragment pool and send lock (README "Threads").
 * The ones above check no thread flag. */
struct bm_btl_descriptor *bm_btl_tcp_alloc_mt(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                                              uint8_t order, size_t size, uint32_t flags);
void bm_btl_tcp_free_mt(struct bm_btl_module *m, struct bm_btl_descriptor *des);
struct bm_btl_descriptor *bm_btl_tcp_prepare_src_mt(struct bm_btl_module *m,
                                                    struct bm_btl_endpoint *ep, const void *data,
                                                    size_t reserve, size_t *size, uint8_t order,
                                                    uint32_t flags);
int bm_btl_tcp_send_mt(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                       struct bm_btl_descriptor *des, bm_btl_tag_t tag);
struct bm_btl_descriptor *bm_btl_tcp_prepare_src_iov_mt(struct bm_btl_module *m,
                                                        struct bm_btl_endpoint *ep, size_t reserve,
                                                        const struct bm_btl_iov *pieces, uint32_t n,
                                                        uint32_t flags);
/* Write queued frames until the socket would block. Returns false when the
 * connection failed (the endpoint was failed). */
bool bm_btl_tcp_frag_flush(struct bm_btl_tcp_conn *c);
/* The peer has received every DATA frame of c numbered below ack: complete them. */
void bm_btl_tcp_frag_acked(struct bm_btl_tcp_conn *c, uint32_t ack);
/* Send pending standalone acknowledgements. */
void bm_btl_tcp_frag_flush_acks(struct bm_btl_tcp_component *comp);
/* Queue a FIN (finalize). */
void bm_btl_tcp_frag_queue_fin(struct bm_btl_tcp_conn *c);
/* Complete every fragment of a connection's queues with status. */
void bm_btl_tcp_frag_fail_all(struct bm_btl_tcp_conn *c, int status);
/* Release the component's fragment pool. */
void bm_btl_tcp_frag_pool_release(struct bm_btl_tcp_component *comp);
/* Release an endpoint's own pool (MPI_THREAD_MULTIPLE). */
void bm_btl_tcp_frag_pool_release_ep(struct bm_btl_tcp_endpoint *ep);
/* Allocate the internal control fragment of a connection. */
struct bm_btl_tcp_frag *bm_btl_tcp_frag_new_ctl(void);

#endif
