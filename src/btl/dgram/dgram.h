/* Internal interface of the dgram transport: reliable, windowed messaging
 * over an unreliable datagram wire (native UDP sockets, or libfabric
 * FI_EP_DGRAM endpoints). The reliability engine (endpoints, send windows,
 * ACKs, retransmission timers, fragments and chunks) is shared by every wire;
 * a wire only opens channels, sends batches of datagrams and receives them.
 * The vocabulary (fragment, segment, chunk, channel) is the one in README.md.
 * Unit tests include this header to drive modules without the runtime:
 * bm_btl_dgram_module_create + bm_btl_dgram_endpoint_create connect two
 * modules of one process directly. */
#ifndef BM_BTL_DGRAM_H
#define BM_BTL_DGRAM_H

#include "btl/btl.h"
#include "btl/dgram/dgram_proto.h"
#include "util/clock.h"
#include "util/hotel.h"
#include "util/list.h"

#include <net/if.h>
#include <pthread.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

extern const struct bm_btl_ops bm_btl_dgram_ops;
extern const struct bm_param_table bm_btl_dgram_param_table;

/* ---- configuration (BM_BTL_DGRAM_*) ------------------------------------ */

enum { BM_DGRAM_WIRE_AUTO, BM_DGRAM_WIRE_UDP, BM_DGRAM_WIRE_OFI };

struct bm_btl_dgram_config {
    int wire;                 /* BM_DGRAM_WIRE_* */
    const char *prov_include; /* libfabric wire: FI_EP_DGRAM providers to use ("" = any) */
    const char *prov_exclude;
    const char *if_include; /* comma list of interface names or a.b.c.d/n, "" = all */
    const char *if_exclude;
    size_t mtu;              /* data channel datagram size; 0 = per peer, route MTU - 28 */
    size_t prio_mtu;         /* priority channel datagram size (ACKs, tiny fragments) */
    int window;              /* send window in segments (power of two) */
    int cwnd_init, cwnd_min; /* congestion window: start and floor, in segments */
    int ep_credits;          /* segments an endpoint may post per turn */
    int chan_credits;        /* datagrams queued per channel before a flush */
    int max_resends;         /* retransmissions per progress call */
    int ack_delay_us;        /* delay before a standalone ACK */
    int rto_init_us, rto_min_us, rto_max_us; /* retransmit timeout: start, floor, ceiling */
    int fail_timeouts;  /* consecutive timeouts of the oldest segment: path failed */
    int fail_ms;        /* time with data outstanding and no ACK progress: path failed */
    int probe_ms;       /* interval of probes on a failed path */
    bool liveness;      /* answer liveness pings from a thread; ask a silent peer's */
    bool recv_in_place; /* udp wire: chunks of placed fragments received in place */
    size_t eager_limit;
    size_t max_send_size;
    bool thread_multiple; /* set by init: take the module lock on every entry */
    bool checksum;        /* checksum every datagram (needed to detect injected corruption) */
    bool auth;            /* MAC on every datagram; unauthenticated ones dropped */
    int stats;            /* print statistics every N seconds (0: at finalize only if set) */
    size_t sockbuf;       /* SO_SNDBUF/SO_RCVBUF request */
    int check_tries;      /* connectivity check: pings per size before giving up */
    int check_ms;         /* connectivity check: interval between tries */
    double drop, dup, reorder, corrupt; /* fault injection probabilities on the send path */
    size_t drop_above; /* fault injection: drop datagrams larger than this (MTU trouble) */
    int seed;          /* fault injection seed (0: from pid and time) */
};

/* Bytes of payload per NH block of the datagram MAC, the NH key's 64-bit
 * words (a block's worth and one more: the second NH pass reads the key
 * shifted by 8 bytes), and the largest header + payload that the small
 * form hashes as one piece (dgram_mac.c). */
#define BM_DGRAM_NH_BLOCK 2048
#define BM_DGRAM_NH_WORDS (BM_DGRAM_NH_BLOCK / 8 + 1)
#define BM_DGRAM_NH_SMALL 512

/* prepare_src references the caller's data from this size on (eager
 * sends, all below it, are copied: the PML completes them at once). */
#define BM_DGRAM_INPLACE_MIN (64u << 10)
/* Capacity of a recycled large fragment: an eager copy (less than
 * BM_DGRAM_INPLACE_MIN bytes of data) and the caller's header room. */
#define BM_DGRAM_FRAG_LARGE_CAP (BM_DGRAM_INPLACE_MIN + 1024u)
/* Recycled large fragments kept per module (a bandwidth window of 64). */
#define BM_DGRAM_FRAG_LARGE_KEEP 64

/* ---- statistics ------------------------------------------------------- */

#define BM_BTL_DGRAM_STATS_MAP(X)                                                                  \
    X(sends_prio, "datagrams sent on the priority channel")                                        \
    X(sends_data, "datagrams sent on the data channel")                                            \
    X(gso_sends, "UDP GSO sends (several same-size datagrams to one peer in one message)")         \
    X(frags_sent, "fragments sent whole in one segment")                                           \
    X(chunks_sent, "chunk segments sent")                                                          \
    X(fastpath_sends, "tiny fragments posted inline by send")                                      \
    X(resends_timeout, "segments resent after a retransmit timeout")                               \
    X(resends_fast, "segments resent after a duplicate or selective ACK")                          \
    X(rto_events, "retransmit timeouts of a peer's oldest segment")                                \
    X(resends_rto_recovery, "segments resent, ACK-clocked, after a retransmit timeout")            \
    X(acks_sent, "standalone ACKs sent")                                                           \
    X(acks_piggybacked, "ACKs carried by data packets")                                            \
    X(acks_recv, "ACK fields received that advanced the window")                                   \
    X(acks_dup, "duplicate ACKs received")                                                         \
    X(acks_old, "old or stale ACKs ignored")                                                       \
    X(sacked, "segments acknowledged selectively")                                                 \
    X(recv_packets, "valid datagrams received")                                                    \
    X(recv_delivered, "fragments delivered to the upper layer")                                    \
    X(recv_placed, "chunked fragments placed straight into the upper layer's memory")              \
    X(recv_direct, "chunks received by the kernel straight into a placed fragment's memory")       \
    X(recv_direct_rejected, "of those, chunks that failed their check (their bytes then wait for " \
                            "the genuine chunk)")                                                  \
    X(recv_direct_missed, "datagrams received where the next chunk was expected that were not it " \
                          "(copied back, then received as usual)")                                 \
    X(recv_direct_lost, "chunks received in place whose bytes a chunk of the same batch had "      \
                        "overwritten (dropped as lost)")                                           \
    X(recv_dup, "duplicate receives dropped")                                                      \
    X(recv_old, "receives older than the window (lost ACK) dropped")                               \
    X(recv_out_of_window, "receives beyond the window dropped")                                    \
    X(recv_stale_session, "receives from an abandoned session dropped")                            \
    X(bad_short, "datagrams dropped: too short or bad length")                                     \
    X(bad_magic, "datagrams dropped: not dgram, wrong version or unknown type")                    \
    X(bad_checksum, "datagrams dropped: checksum mismatch")                                        \
    X(bad_job, "datagrams dropped: wrong job key")                                                 \
    X(bad_mac, "datagrams dropped: MAC missing or wrong (forged or another job's)")                \
    X(bad_sender, "datagrams dropped: unknown sender")                                             \
    X(bad_chunk, "datagrams dropped: chunk length or offset outside its fragment")                 \
    X(bad_rdma, "datagrams dropped: PUT/GET outside a registration")                               \
    X(no_handler, "fragments dropped: no receive callback for the tag")                            \
    X(window_full, "times an endpoint stopped on a full window")                                   \
    X(window_max, "largest window occupancy seen")                                                 \
    X(flight_peak, "most bytes seen in flight on the data channel to one peer")                    \
    X(send_errors, "datagrams the wire refused (full socket buffer, unreachable network)")         \
    X(cwnd_cuts, "congestion window reductions after a loss")                                      \
    X(path_failures, "paths declared failed")                                                      \
    X(live_pings, "liveness pings sent to a silent peer's live port")                              \
    X(live_answers, "liveness answers received (the peer lives, the path carries datagrams)")      \
    X(live_held, "failure checks held back: the peer was silent but alive")                        \
    X(live_progressing,                                                                            \
      "liveness answers from a peer that runs its progress loop yet sends no ACK")                 \
    X(live_answered, "liveness pings this module's responder thread answered")                     \
    X(check_failures, "connectivity checks that failed (no path, or MTU trouble)")                 \
    X(path_recoveries, "failed paths taken back")                                                  \
    X(injected_drop_big, "fault injection: datagrams dropped for their size")                      \
    X(injected_drop, "fault injection: datagrams dropped")                                         \
    X(injected_dup, "fault injection: datagrams duplicated")                                       \
    X(injected_reorder, "fault injection: datagrams delayed")                                      \
    X(injected_corrupt, "fault injection: datagrams corrupted")

struct bm_btl_dgram_stats {
#define BM_BTL_DGRAM_STATS_FIELD(name, help) uint64_t name;
    BM_BTL_DGRAM_STATS_MAP(BM_BTL_DGRAM_STATS_FIELD)
#undef BM_BTL_DGRAM_STATS_FIELD
};

/* ---- address published in the modex (one per module) ------------------- */

struct bm_btl_dgram_addr {
    uint32_t ipv4;      /* network byte order */
    uint32_t netmask;   /* network byte order */
    uint16_t port_prio; /* network byte order */
    uint16_t port_data; /* network byte order */
    uint32_t mtu_prio;  /* datagram sizes this module receives */
    uint32_t mtu_data;
    uint32_t speed_mbps; /* link speed (pairing weight) */
    uint8_t index;       /* module index in the publisher's entry */
    uint8_t wire;        /* BM_DGRAM_WIRE_* */
    uint16_t rcvbuf_64k; /* the data channel's receive buffer, 64 KiB units (0: unknown) */
    uint16_t port_live;  /* network byte order: the liveness responder's port (0: none) */
    uint8_t mac_key[16]; /* key of the MACs of datagrams sent to this module (dgram_proto.h);
                          * zeros when the job's key is used (job_keyed) */
    char ifname[IF_NAMESIZE];
};

/* ---- channels and wires ------------------------------------------------- */

enum { BM_DGRAM_CH_PRIO = 0, BM_DGRAM_CH_DATA = 1, BM_DGRAM_NCH = 2 };

/* One datagram queued for a batch send: header copied, payload referenced. */
struct bm_btl_dgram_txslot {
    const uint8_t *whole; /* a whole datagram elsewhere (fault injection), else NULL */
    uint8_t hdr[BM_DGRAM_MAX_HDR];
    size_t hdr_len;
    const void *payload;
    size_t payload_len;
    const struct sockaddr_in *to;
    uint64_t to_wire; /* the wire's own address handle (libfabric fi_addr_t) */
    bool gso_ok;      /* may leave in a UDP GSO message: the peer takes a network's datagram
                       * size, not the loopback's 65000 bytes (dgram_wire_udp.c) */
};

struct bm_btl_dgram_channel {
    int fd;
    size_t mtu; /* largest datagram, headers included */
    uint16_t port;
    struct bm_btl_dgram_txslot *tx;
    unsigned tx_count, tx_max; /* tx_max: the channel's send credits */
    /* room for 2 * tx_max + 1 slots: injected duplicates and a held datagram */
    /* receive batch */
    uint8_t *rx_buf;
    unsigned rx_max;
    void *wire_state; /* per-wire arrays (mmsghdr, iovecs, ...) */
};

struct bm_btl_dgram_module;
struct bm_btl_dgram_endpoint;
struct bm_btl_dgram_wire_ops {
    const char *name;
    /* Open both channels bound to the module's address. */
    bm_status_t (*open)(struct bm_btl_dgram_module *m);
    void (*close)(struct bm_btl_dgram_module *m);
    /* Send every queued slot of the channel; returns datagrams handed to the wire. */
    int (*flush)(struct bm_btl_dgram_module *m, int ch);
    /* Receive up to rx_max datagrams; calls bm_btl_dgram_recv_packet for each. */
    int (*poll)(struct bm_btl_dgram_module *m, int ch);
    /* A new peer: set ep->wire_addr[] (address vector insertion). */
    bm_status_t (*peer_add)(struct bm_btl_dgram_module *m, struct bm_btl_dgram_endpoint *ep);
};
extern const struct bm_btl_dgram_wire_ops bm_btl_dgram_wire_udp;
/* The libfabric wire (dgram_wire_ofi.c), or NULL in builds without
 * libfabric (dgram_wire_none.c): CMake picks the file, no #if needed. */
extern const struct bm_btl_dgram_wire_ops *const bm_btl_dgram_wire_ofi;

/* ---- fragments and segments --------------------------------------------- */

enum bm_btl_dgram_frag_kind {
    BM_DGRAM_FK_SEND,     /* a PML send descriptor */
    BM_DGRAM_FK_INTERNAL, /* a transport message: freed at completion, no callback */
    BM_DGRAM_FK_PUT,
    BM_DGRAM_FK_GET_REQ,
    BM_DGRAM_FK_GET_DATA, /* answer to a peer's GET_REQ, from registered memory */
    BM_DGRAM_FK_GET_NAK,
};

enum bm_btl_dgram_seg_state {
    BM_DGRAM_SEG_FREE,
    BM_DGRAM_SEG_POSTED, /* on the wire, timer running */
    BM_DGRAM_SEG_RESEND, /* on the module's resend list */
    BM_DGRAM_SEG_ACKED,  /* selectively ACKed, waiting for the window to slide */
};

/* A segment: one sequenced datagram in flight, kept until ACKed. */
struct bm_btl_dgram_seg {
    struct bm_util_list_node link; /* resend list */
    struct bm_btl_dgram_frag *frag;
    struct bm_btl_dgram_endpoint *ep;
    uint8_t state;
    uint8_t type;
    uint8_t embedded; /* the small fragment's own segment: not from the pool */
    uint8_t ch;       /* channel of the last transmission */
    uint32_t charged; /* bytes counted in ep->flight_bytes (sent on the data channel) */
    uint16_t seq;
    uint32_t xmits;
    uint64_t sent_ns;
    uint64_t expire_ns; /* retransmit deadline while POSTED */
    int timer;          /* hotel room while POSTED, else -1 */
    uint32_t offset;    /* of the payload inside the fragment */
    uint32_t len;       /* payload bytes */
};

struct bm_btl_dgram_frag {
    struct bm_btl_descriptor des; /* first: the PML sees only this */
    struct bm_util_queue_node qlink;
    struct bm_btl_dgram_endpoint *ep;
    uint8_t kind; /* bm_btl_dgram_frag_kind */
    bm_btl_tag_t tag;
    bool queued;  /* on the endpoint's send queue */
    bool in_use;  /* given to send and not yet completed */
    uint8_t *buf; /* owned storage (header reserve + data) */
    size_t cap;
    const uint8_t *data; /* bytes to send (buf, or registered memory for GET_DATA) */
    size_t len;          /* all of them: data's, then data1's */
    /* A send whose payload stays in the caller's memory (prepare_src,
     * BM_BTL_CAP_SEND_INPLACE): data holds the first len0 bytes (the
     * caller's header), data1 the rest; NULL: data holds all len bytes. */
    const uint8_t *data1;
    size_t len0;
    size_t next_off;   /* bytes already cut into segments */
    uint32_t frag_id;  /* chunked fragments, GET request id */
    uint32_t segs_out; /* segments posted and not yet ACKed */
    uint32_t segs_cut; /* segments cut so far (a 0-byte fragment still takes one) */
    uint32_t req_size; /* GET_REQ: bytes requested */
    int status;        /* first error seen */
    /* RDMA */
    uint64_t raddr, rkey;
    void *laddr;
    struct bm_btl_reg_handle *lhandle;
    bm_btl_rdma_cb_fn rdma_cb;
    void *rdma_ctx, *rdma_cbdata;
    struct bm_btl_dgram_seg small; /* the one segment of a small fragment */
};

/* Most separate verified ranges a placed fragment keeps (in-order
 * arrival keeps one); beyond them its chunks take the receive ring. */
#define BM_DGRAM_VER_MAX 8
/* Datagrams read one by one (into the ring, dgram_wire_udp.c) when no chunk
 * of a fragment received in place is expected, after a placed fragment
 * began: a stream's next fragment begins within them (its first chunk must
 * not come in a batch with the chunks that follow it), a stream that ended
 * costs at most this many. */
#define BM_DGRAM_DIRECT_CREDIT 64
/* Smallest data-channel datagram (to the fragment's sender) for which chunks
 * are received in place: a fragment's first chunk is then read alone, and
 * a network's 1472-byte datagrams would pay that for a small copy. */
#define BM_DGRAM_DIRECT_MTU_MIN 32768u
/* A large fragment being received in chunks: into buf (size bytes), or,
 * placed (btl.h "Receive placement", iov not NULL), its first hdr_len
 * bytes into buf and the rest straight into the niov pieces that the
 * tag's place callback named. */
struct bm_btl_dgram_reasm {
    struct bm_util_list_node link;
    uint32_t frag_id;
    uint32_t size, received;
    bm_btl_tag_t tag;
    uint8_t *buf;
    struct bm_btl_iov *iov;
    uint32_t niov;
    uint32_t hdr_len;
    /* A placed fragment's verified ranges (fragment offsets [lo, hi), sorted,
     * merged): the chunks that passed the MAC and sequence checks. A chunk
     * is received straight into the caller's memory (udp wire,
     * bm_btl_dgram_direct_target) only where it overlaps none of them, so a
     * datagram that then fails its check leaves its bytes only where no
     * verified byte was: the genuine chunk overwrites them later, and the
     * fragment completes only when every byte was verified (received). */
    bool direct;        /* placed, from a peer whose datagrams are worth receiving in place */
    uint32_t chunk_len; /* the longest chunk after the header's so far (the sender's cut) */
    uint32_t nver;
    struct {
        uint32_t lo, hi;
    } ver[BM_DGRAM_VER_MAX];
};
/* Most pieces a placed fragment may be written to. */
#define BM_DGRAM_PLACE_IOV 64

/* An outstanding GET on the requester's side. */
struct bm_btl_dgram_getop {
    struct bm_util_list_node link;
    uint32_t id;
    uint32_t size, received;
    uint8_t *laddr;
    struct bm_btl_reg_handle *lhandle;
    bm_btl_rdma_cb_fn cb;
    void *ctx, *cbdata;
    int peer;
    int status;
};

/* A local memory registration, found by key when PUT/GET_REQ arrive. */
struct bm_btl_dgram_reg {
    struct bm_btl_reg_handle handle; /* data[0] = key: what peers are given */
    struct bm_util_list_node link;
    uintptr_t base;
    size_t size;
    uint32_t flags;
};

/* ---- endpoints ---------------------------------------------------------- */

enum { BM_DGRAM_EP_OK, BM_DGRAM_EP_FAILED };
enum { BM_DGRAM_CHECK_NONE, BM_DGRAM_CHECK_RUNNING, BM_DGRAM_CHECK_DONE };

struct bm_btl_dgram_endpoint {
    struct bm_btl_dgram_module *module;
    int peer;           /* rank */
    uint8_t peer_index; /* the peer's module index */
    struct sockaddr_in to[BM_DGRAM_NCH];
    uint64_t wire_addr[BM_DGRAM_NCH]; /* the wire's handle for to[] */
    size_t mtu[BM_DGRAM_NCH];         /* datagram size per channel: min(ours, the peer's) */
    uint8_t mac_key[16];              /* the peer module's MAC key (its address's, or the job's) */
    uint64_t nh_key[BM_DGRAM_NH_WORDS]; /* and its NH key (dgram_mac.c), with auth on */
    int local_err; /* errno of a send to it that failed locally (ENETUNREACH...), 0: none */
    struct bm_btl_path_stats pstats; /* the stats operation's counters (btl.h) */
    /* Resends of the sweep after a retransmit timeout (rto_recovery_resend):
     * wire units, but not units taken for lost one by one, so not in
     * pstats.units_resent (dgram_stats.c). */
    uint64_t units_swept;
    char peer_desc[96]; /* "rank 3 (10.250.1.2)" for messages */

    int state;
    /* send side */
    uint16_t snd_session;
    uint16_t snd_next; /* next sequence number to assign */
    /* Bytes in flight on the data channel, and at most, from the peer's
     * receive buffer (bm_btl_dgram_flight_cap): more overflow it, and every
     * overflow is a loss to recover */
    size_t flight_bytes, flight_max;
    uint16_t snd_una;              /* oldest not yet ACKed */
    struct bm_btl_dgram_seg **win; /* window slots, indexed seq % window */
    uint32_t next_frag_id;
    int credits;
    struct bm_util_queue sendq; /* fragments with bytes still to post */
    struct bm_util_list_node ready_link;
    uint16_t last_ack;
    uint32_t dup_acks;
    /* congestion window (segments): the usable part of the send window */
    uint32_t cwnd, ssthresh;
    uint64_t rack_ns; /* latest transmit time of a segment known to have arrived */
    /* per channel, the (transmit time, seq) of the last-sent segment known
     * to have arrived: one channel is FIFO, so anything sent before it on
     * that channel and still missing was lost */
    uint64_t rack_ch_ns[BM_DGRAM_NCH];
    uint16_t rack_ch_seq[BM_DGRAM_NCH];
    bool in_recovery; /* cwnd was cut; no further cut until recover_seq is ACKed */
    uint16_t recover_seq;
    /* After a retransmit timeout of the oldest segment, everything sent
     * before it is presumed lost (an outage, not one drop): each ACK that
     * advances the window resends the next of those segments, two per ACKed
     * one, up to rto_mark (snd_next at the timeout). Without it the others
     * waited one timeout after every ACK and an outage of n segments took n
     * timeouts to recover. */
    bool rto_recover;
    uint16_t rto_mark, rto_cursor;
    uint64_t rto_event_ns;
    /* round-trip estimate (ns) */
    int64_t srtt, rttvar, rto;
    uint32_t consecutive_timeouts;
    uint64_t progress_ns; /* last time the window advanced (or data became outstanding) */
    uint64_t next_probe_ns;
    uint32_t probe_nonce;
    /* Liveness (dgram_live.c): while the peer leaves our data un-ACKed, a
     * full-size PING goes to its live port at every retransmit timeout of
     * the oldest segment; its responder thread answers even while the peer
     * computes outside the library. A peer that answered within the last
     * live window is busy, not unreachable: no failure is declared. */
    struct sockaddr_in to_live;       /* the peer module's live port (sin_port 0: none) */
    uint64_t wire_live[BM_DGRAM_NCH]; /* the wire's handle for to_live, per channel */
    uint32_t live_nonce;              /* of the pings since the last ACK progress */
    uint64_t live_ping_ns;            /* last ping sent */
    uint64_t live_ns;                 /* last answer received */
    bool live_due;                    /* a retransmit timeout asks for a ping */
    bool sent_once;                   /* counted in module->nsending */
    /* connectivity check at first contact: a small and a full-size ping */
    uint8_t check; /* BM_DGRAM_CHECK_* */
    bool check_small_ok, check_big_ok;
    uint32_t check_nonce; /* small ping: nonce, full-size ping: nonce + 1 */
    int check_tries;
    uint64_t check_next_ns;

    /* receive side */
    bool rcv_valid;
    uint16_t rcv_session;
    uint16_t rcv_next;  /* lowest sequence number not yet received */
    uint64_t *rcv_seen; /* bit per window slot: received out of order */
    uint16_t rcv_last;  /* newest sequence number received (echoed in ACKs) */
    bool ack_needed;
    uint64_t ack_deadline;
    struct bm_util_list_node ack_link;
    struct bm_util_list reasm;
    struct bm_util_list getops;
    uint32_t next_get_id;
    uint32_t rdma_out; /* PUTs and GETs not yet completed (flush waits for 0) */
    uint32_t rcv_ooo;  /* out-of-order receives above rcv_next (0: SACK is empty) */
    /* a failure or recovery to report to the error callback */
    bool report_pending;
    enum bm_btl_error_kind report_kind;
    char report[1024];
};

/* ---- modules ------------------------------------------------------------ */

struct bm_btl_dgram_component; /* dgram_component.c */

struct bm_btl_dgram_module {
    struct bm_btl_module super; /* first */
    /* The instance that created it; NULL for a module made directly with
     * bm_btl_dgram_module_create (unit tests), which then has no peers'
     * records and no re-pairing. */
    struct bm_btl_dgram_component *comp;
    /* Recursive, so that a callback run under it may send again on the same
     * thread (usnic's btl_usnic_lock); taken only for MPI_THREAD_MULTIPLE. */
    pthread_mutex_t lock;
    bool locking;
    struct bm_btl_dgram_config cfg;
    const struct bm_btl_dgram_wire_ops *wire;
    int rank;
    uint64_t job_key;
    struct bm_btl_dgram_addr addr;      /* what we publish */
    uint8_t mac_key[16];                /* key of the MACs of datagrams sent to this module */
    uint64_t nh_key[BM_DGRAM_NH_WORDS]; /* expanded from mac_key (dgram_mac.c) */
    /* mac_key is the job's (from the launcher's job secret, the same in
     * every module of the job, not published); else random, published in
     * addr.mac_key (bm_btl_dgram_module_use_job_key). */
    bool job_keyed;
    bool local_errs; /* some endpoint has local_err set (bm_btl_dgram_local_errors) */
    struct bm_btl_dgram_channel ch[BM_DGRAM_NCH];

    struct bm_btl_dgram_endpoint **eps; /* by rank */
    int neps;
    struct bm_util_list ready;  /* endpoints with fragments, credits and an open window */
    struct bm_util_list acks;   /* endpoints owing an ACK */
    struct bm_util_list resend; /* segments waiting for retransmission (data channel) */
    struct bm_util_list regs;

    /* fragments of up to frag_small_cap bytes are recycled here */
    struct bm_btl_dgram_frag **frag_cache;
    int frag_ncache, frag_cache_max;
    size_t frag_small_cap;
    /* and those of up to frag_large_cap bytes (eager copies: above an
     * interface-sized datagram, below BM_DGRAM_INPLACE_MIN) here, so that
     * a window of them is not given back to the kernel by free and faulted
     * in again by the next window's malloc */
    struct bm_btl_dgram_frag **frag_lcache;
    int frag_nlcache, frag_lcache_max;
    size_t frag_large_cap;
    /* datagram size toward a peer whose route MTU is unknown (interface MTU - 28) */
    size_t if_data_mtu;
    /* The last route MTU the UDP wire asked the kernel for, and where to:
     * peers come in rank order, host by host, so one entry spares the
     * probe's four system calls for every peer of a host but the first. */
    uint32_t route_ipv4;
    size_t route_mtu;

    /* segment pool */
    struct bm_btl_dgram_seg **seg_free;
    struct bm_btl_dgram_seg **seg_blocks; /* what the pool allocated, freed at destroy */
    int seg_nblocks;
    int seg_nfree, seg_cap;

    /* retransmission timers: every posted segment is a guest of the hotel;
     * rooms for a window per endpoint in use (at most 64), grown as
     * endpoints send for the first time, never for idle peers */
    struct bm_util_hotel hotel;
    uint32_t rooms_wanted; /* grow to this once the hotel is empty */
    int nsending;          /* endpoints that have sent */
    int evicted;           /* segments evicted by the current timer sweep */

    struct bm_util_queue done;   /* fragments whose completion callback is due */
    struct bm_util_list getdone; /* GETs completed with an error, callback due */
    int reports_pending;         /* endpoints with report_pending */
    int nfailed;                 /* endpoints in BM_DGRAM_EP_FAILED */
    int nchecking;               /* endpoints with a connectivity check running */
    uint64_t probe_next_ns;

    struct bm_btl_dgram_stats stats;
    uint64_t stats_next_ns;
    uint64_t rng; /* fault injection */
    /* Test hook (bm_btl_dgram_inject_drop_next): the next inject_next_n
     * datagrams of type inject_next_type are dropped on the send path. */
    uint32_t inject_next_n;
    uint8_t inject_next_type;
    uint8_t *inject_buf; /* corrupted copies: 2 * tx_max datagrams (allocated on first use) */
    struct bm_btl_dgram_txslot *inject_tmp;
    uint8_t *held; /* reorder injection: one datagram held back */
    size_t held_len;
    int held_ch;
    struct sockaddr_in held_to;
    uint64_t held_to_wire;
    uint64_t next_reg_key;
    uint64_t now_ns;        /* cached clock of the current progress call */
    bool in_poll;           /* delivering a receive batch */
    uint32_t placed_active; /* placed fragments under way whose chunks the
                             * udp wire receives in place (reasm.direct) */
    uint32_t direct_credit; /* datagrams the udp wire still reads one by one
                             * after the last placed chunk: the first chunk of
                             * a stream's next fragment must not come in a batch
                             * that holds its other chunks (dgram_wire_udp.c) */
    bool direct_hint;       /* direct_sender's fragment direct_frag is being received in
                             * place: the udp wire receives its next chunks there */
    uint32_t direct_sender, direct_frag;
    bool data_busy;                 /* the last poll of the data channel received something */
    bool data_skipped;              /* the last pass did not poll the data channel */
    uint32_t rcv_ooo_total;         /* the endpoints' rcv_ooo summed: 0 when no ACK shows a hole */
    struct bm_btl_dgram_live *live; /* the liveness responder (udp wire), NULL: none */
};

/* A base header cleared and addressed: type, sender rank, job key, the
 * sending and receiving modules (the rest is the caller's). */
static inline void bm_dgram_hdr_init(struct bm_dgram_hdr *h, unsigned type, uint32_t sender,
                                     uint64_t job_key, uint8_t src_module, uint8_t dst_module)
{
    memset(h, 0, sizeof(*h));
    h->magic = BM_DGRAM_MAGIC;
    h->version = BM_DGRAM_VERSION;
    h->type = (uint8_t)type;
    h->sender = sender;
    h->job_key = job_key;
    h->src_module = src_module;
    h->dst_module = dst_module;
}

/* ---- sequence arithmetic (wrap-safe, 16-bit) ----------------------------- */

static inline int16_t bm_dgram_seq_diff(uint16_t a, uint16_t b)
{
    return (int16_t)(uint16_t)(a - b);
}
static inline bool bm_dgram_seq_lt(uint16_t a, uint16_t b)
{
    return bm_dgram_seq_diff(a, b) < 0;
}
static inline bool bm_dgram_seq_le(uint16_t a, uint16_t b)
{
    return bm_dgram_seq_diff(a, b) <= 0;
}

static inline void bm_btl_dgram_lock(struct bm_btl_dgram_module *m)
{
    if (m->locking)
        pthread_mutex_lock(&m->lock);
}
static inline void bm_btl_dgram_unlock(struct bm_btl_dgram_module *m)
{
    if (m->locking)
        pthread_mutex_unlock(&m->lock);
}

/* ---- functions ----------------------------------------------------------- */

/* Monotonic clock in ns (the cheap clock). */
static inline uint64_t bm_btl_dgram_now(void)
{
    return bm_util_clock_now_ns();
}

/* dgram_module.c: one module per interface. */
bm_status_t bm_btl_dgram_module_create(const struct bm_btl_dgram_config *cfg, const char *ifname,
                                       uint32_t ipv4, uint32_t netmask, uint32_t if_mtu,
                                       uint32_t speed_mbps, int index, int rank, uint64_t job_key,
                                       struct bm_btl_dgram_module **m_out);
void bm_btl_dgram_module_destroy(struct bm_btl_dgram_module *m);
/* The stats operation (btl.h): the endpoint's pstats (dgram_stats.c). */
bm_status_t bm_btl_dgram_path_stats(struct bm_btl_module *bm, struct bm_btl_endpoint *bep,
                                    struct bm_btl_path_stats *out);
/* Authenticate with the job's MAC key (derived from the launcher's job
 * secret, the same in every process of the job) instead of the module's
 * random one, which is then not published. Before the address is. */
void bm_btl_dgram_module_use_job_key(struct bm_btl_dgram_module *m, const uint8_t key[16]);
int bm_btl_dgram_module_progress(struct bm_btl_dgram_module *m);
/* Sends of m its peers have not acknowledged yet (segments in flight and
 * fragments still queued), on paths that work: the unacked operation. */
int bm_btl_dgram_module_unacked(struct bm_btl_dgram_module *m);
/* For tests: drop the next n datagrams of type (BM_DGRAM_T_*) that m sends,
 * counted in injected_drop; a loss placed at a chosen moment (the last ACK
 * or message before MPI_Finalize). n 0 cancels. */
void bm_btl_dgram_inject_drop_next(struct bm_btl_dgram_module *m, unsigned type, uint32_t n);

/* dgram_wait.c (btl.h "Sleeping"): > 0 when m has work now; else 0 and
 * *due_out the cheap-clock time of its nearest timer (UINT64_MAX: none). */
int bm_btl_dgram_wait_arm_module(struct bm_btl_dgram_module *m, uint64_t *due_out);
/* m's sockets to wait on (none for a wire without descriptors). */
int bm_btl_dgram_wait_fds(const struct bm_btl_dgram_module *m, int fds[BM_DGRAM_NCH]);
bm_status_t bm_btl_dgram_config_load(struct bm_btl_dgram_config *cfg_out);
/* Counters of one module (a copy). */
void bm_btl_dgram_stats_get(const struct bm_btl_dgram_module *m,
                            struct bm_btl_dgram_stats *stats_out);
void bm_btl_dgram_stats_print(const struct bm_btl_dgram_module *m);

/* dgram_endpoint.c */
bm_status_t bm_btl_dgram_endpoint_create(struct bm_btl_dgram_module *m, int peer,
                                         const struct bm_btl_dgram_addr *peer_addr,
                                         struct bm_btl_dgram_endpoint **ep_out);
void bm_btl_dgram_endpoint_destroy(struct bm_btl_dgram_endpoint *ep);
void bm_btl_dgram_endpoint_check_ready(struct bm_btl_dgram_endpoint *ep);
/* Set ep->flight_max from the peer's receive buffer (rcvbuf bytes, 0:
 * unknown: no limit) and ep's datagram size. */
void bm_btl_dgram_flight_cap(struct bm_btl_dgram_endpoint *ep, size_t rcvbuf);
void bm_btl_dgram_endpoint_fail(struct bm_btl_dgram_endpoint *ep, const char *why);
/* The wire saw a send to `to` on channel ch fail with a local error that
 * says the peer cannot be reached from here now (ENETUNREACH, ENETDOWN,
 * EHOSTUNREACH): its endpoint is failed at the end of the progress pass,
 * without waiting for the retransmission timeouts. */
void bm_btl_dgram_local_error(struct bm_btl_dgram_module *m, int ch, const struct sockaddr_in *to,
                              int err);
void bm_btl_dgram_local_errors(struct bm_btl_dgram_module *m);
void bm_btl_dgram_endpoint_recovered(struct bm_btl_dgram_endpoint *ep);
void bm_btl_dgram_endpoint_check_health(struct bm_btl_dgram_endpoint *ep);
/* dgram_live.c: the liveness responder of a module (both wires): open
 * binds the live socket and publishes its port (addr.port_live), start
 * runs the thread (at the first endpoint: the module's key is final then),
 * close stops and joins it and closes the socket. */
bm_status_t bm_btl_dgram_live_open(struct bm_btl_dgram_module *m);
bm_status_t bm_btl_dgram_live_start(struct bm_btl_dgram_module *m);
void bm_btl_dgram_live_close(struct bm_btl_dgram_module *m);
uint64_t bm_btl_dgram_live_answered(const struct bm_btl_dgram_module *m);
/* Liveness of a silent peer: ping it (at a retransmit timeout), take an
 * answer, and whether it answered within the live window. */
void bm_btl_dgram_live_ping(struct bm_btl_dgram_endpoint *ep);
void bm_btl_dgram_live_answer(struct bm_btl_dgram_endpoint *ep, uint32_t nonce, uint32_t idle_ms);
/* A progress pass ran (the responder reports how long ago). */
void bm_btl_dgram_live_mark(struct bm_btl_dgram_module *m);
bool bm_btl_dgram_live_recent(const struct bm_btl_dgram_endpoint *ep);
void bm_btl_dgram_endpoint_probe_failed(struct bm_btl_dgram_module *m);
/* Connectivity check: start it (first send), advance it (progress), and
 * take a PONG for it; true when the PONG belonged to the check. */
void bm_btl_dgram_check_start(struct bm_btl_dgram_endpoint *ep);
void bm_btl_dgram_check_progress(struct bm_btl_dgram_module *m);
bool bm_btl_dgram_check_pong(struct bm_btl_dgram_endpoint *ep, uint32_t nonce);
/* Give ep a new partner (re-pairing after a failed check): the endpoint
 * stays in its module, its stream restarts as a new session with every
 * fragment not yet ACKed resent from its start, and the check runs again. */
bm_status_t bm_btl_dgram_endpoint_retarget(struct bm_btl_dgram_endpoint *ep,
                                           const struct bm_btl_dgram_addr *pa);
void bm_btl_dgram_send_repair(struct bm_btl_dgram_endpoint *ep, uint32_t nonce, uint8_t flags,
                              uint64_t excluded, uint64_t excl_mtu);

/* dgram_component.c: interface pairing. A failed connectivity check
 * excludes the pair and re-solves the matching for that peer (falls back to
 * failing the endpoint when the component does not know the peer, as in
 * unit tests); a REPAIR from the peer brings its exclusions. */
void bm_btl_dgram_pair_check_failed(struct bm_btl_dgram_endpoint *ep, bool small_ok,
                                    const char *why);
/* The modules of m's component (none for a module outside a component). */
struct bm_btl_dgram_module *const *bm_btl_dgram_modules(struct bm_btl_dgram_module *m, int *n_out);
void bm_btl_dgram_repair_recv(struct bm_btl_dgram_module *m, int ch, const struct bm_dgram_hdr *h,
                              const struct bm_dgram_repair *r, const struct sockaddr_in *from);

/* dgram_frag.c */
struct bm_btl_dgram_frag *bm_btl_dgram_frag_new(struct bm_btl_dgram_module *m, size_t cap);
void bm_btl_dgram_frag_release(struct bm_btl_dgram_module *m, struct bm_btl_dgram_frag *f);
void bm_btl_dgram_frag_complete(struct bm_btl_dgram_frag *f, int status);
/* Queue the completion (callbacks run from bm_btl_dgram_run_completions). */
void bm_btl_dgram_frag_done(struct bm_btl_dgram_frag *f, int status);
int bm_btl_dgram_run_completions(struct bm_btl_dgram_module *m);
struct bm_btl_dgram_seg *bm_btl_dgram_seg_get(struct bm_btl_dgram_module *m);
void bm_btl_dgram_seg_put(struct bm_btl_dgram_module *m, struct bm_btl_dgram_seg *s);
struct bm_btl_descriptor *bm_btl_dgram_alloc(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                                             uint8_t order, size_t size, uint32_t flags);
void bm_btl_dgram_free(struct bm_btl_module *m, struct bm_btl_descriptor *des);
struct bm_btl_descriptor *bm_btl_dgram_prepare_src(struct bm_btl_module *m,
                                                   struct bm_btl_endpoint *ep, const void *data,
                                                   size_t reserve, size_t *size, uint8_t order,
                                                   uint32_t flags);

/* dgram_send.c */
int bm_btl_dgram_send(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                      struct bm_btl_descriptor *des, bm_btl_tag_t tag);
int bm_btl_dgram_put(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                     uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                     const struct bm_btl_reg_handle *remote_handle, size_t size, uint32_t flags,
                     uint8_t order, bm_btl_rdma_cb_fn cb, void *context, void *cbdata);
int bm_btl_dgram_get(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                     uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                     const struct bm_btl_reg_handle *remote_handle, size_t size, uint32_t flags,
                     uint8_t order, bm_btl_rdma_cb_fn cb, void *context, void *cbdata);
struct bm_btl_reg_handle *bm_btl_dgram_register_mem(struct bm_btl_module *m,
                                                    struct bm_btl_endpoint *ep, void *base,
                                                    size_t size, uint32_t reg_flags);
bm_status_t bm_btl_dgram_deregister_mem(struct bm_btl_module *m, struct bm_btl_reg_handle *handle);
bm_status_t bm_btl_dgram_flush(struct bm_btl_module *m, struct bm_btl_endpoint *ep);
void bm_btl_dgram_enqueue(struct bm_btl_dgram_endpoint *ep, struct bm_btl_dgram_frag *f);
int bm_btl_dgram_progress_sends(struct bm_btl_dgram_module *m);
/* Queue one datagram on a channel (flushing when the batch is full). */
void bm_btl_dgram_post(struct bm_btl_dgram_module *m, int ch,
                       const struct bm_btl_dgram_endpoint *ep, const void *hdr, size_t hdr_len,
                       const void *payload, size_t payload_len);
/* Hand a channel's queued datagrams to the wire (fault injection first). */
void bm_btl_dgram_flush_channel(struct bm_btl_dgram_module *m, int ch);
void bm_btl_dgram_send_ping(struct bm_btl_dgram_endpoint *ep, int type, uint32_t nonce,
                            size_t size);
/* A PING to the peer's liveness responder (to_live, wire_live[]). */
void bm_btl_dgram_send_ping_live(struct bm_btl_dgram_endpoint *ep, uint32_t nonce, size_t size);

/* dgram_ack.c */
void bm_btl_dgram_ack_fill(struct bm_btl_dgram_endpoint *ep, struct bm_dgram_hdr *h);
void bm_btl_dgram_ack_handle(struct bm_btl_dgram_endpoint *ep, const struct bm_dgram_hdr *h);
void bm_btl_dgram_ack_schedule(struct bm_btl_dgram_endpoint *ep, bool now);
int bm_btl_dgram_ack_progress(struct bm_btl_dgram_module *m);
void bm_btl_dgram_timer_start(struct bm_btl_dgram_module *m, struct bm_btl_dgram_seg *s);
void bm_btl_dgram_timer_stop(struct bm_btl_dgram_module *m, struct bm_btl_dgram_seg *s);
int bm_btl_dgram_timer_expire(struct bm_btl_dgram_module *m);
/* Make room for this many segments in flight (only while no timer runs). */
bm_status_t bm_btl_dgram_timers_reserve(struct bm_btl_dgram_module *m, uint32_t rooms);
void bm_btl_dgram_seg_acked(struct bm_btl_dgram_endpoint *ep, struct bm_btl_dgram_seg *s);
/* A loss was detected on ep: cut the congestion window (once per round trip). */
void bm_btl_dgram_cwnd_loss(struct bm_btl_dgram_endpoint *ep);

/* Room in the send window: the smallest of the window, the congestion
 * window and what the peer's receive buffer holds. */
static inline bool bm_btl_dgram_window_open(const struct bm_btl_dgram_endpoint *ep)
{
    uint32_t lim =
        ep->cwnd < (uint32_t)ep->module->cfg.window ? ep->cwnd : (uint32_t)ep->module->cfg.window;
    return (uint16_t)(ep->snd_next - ep->snd_una) < lim && ep->flight_bytes < ep->flight_max;
}

/* dgram_recv.c */
/* Free ep's reassemblies; with notify, each placed one gets its ABORTED
 * receive callback (btl.h: the place callback's memory is released). */
void bm_btl_dgram_reasm_drop_all(struct bm_btl_dgram_endpoint *ep, bool notify);
/* The parsed view of a datagram; pointers into the datagram. */
struct bm_btl_dgram_pkt {
    const struct bm_dgram_hdr *hdr;
    const struct bm_dgram_chunk *chunk;   /* NULL unless the type has one */
    const struct bm_dgram_rdma *rdma;     /* NULL unless the type has one */
    const struct bm_dgram_repair *repair; /* REPAIR only */
    const uint8_t *payload;
    size_t payload_len;
};
/* dgram_mac.c: the datagram MAC (hash-then-PRF: NH over the payload in
 * BM_DGRAM_NH_BLOCK-byte blocks, SipHash-2-4 over the header and the block
 * results; NH over header and payload together when both fit
 * BM_DGRAM_NH_SMALL bytes and the payload is not empty, SipHash over that
 * result and the length) and the
 * expansion of a module key into its NH key. */
void bm_btl_dgram_mac_expand(const uint8_t key[16], uint64_t nh_key[BM_DGRAM_NH_WORDS]);
/* Which NH code computes the MACs: 0 the portable one, 1 SSE2, 2 AVX2,
 * 3 AVX-512 (the same values; tests compare them). Returns false, changing
 * nothing, when this CPU or build lacks it; -1 goes back to the best one. */
bool bm_btl_dgram_mac_use(int impl);
uint64_t bm_btl_dgram_mac(const uint8_t key[16], const uint64_t nh_key[BM_DGRAM_NH_WORDS],
                          const void *hdr, size_t hdr_len, const void *payload, size_t len);
/* dgram_recv.c: whether a framed datagram's MAC is right under this key. */
bool bm_btl_dgram_mac_check(const uint8_t key[16], const uint64_t nh_key[BM_DGRAM_NH_WORDS],
                            const void *buf, size_t len);

/* Check a datagram's framing (magic, version, type, lengths, checksum when
 * present, chunk bounds). Pure: no state. Returns BM_OK or the reason as the
 * index of a stats counter via *bad_out (offset into the stats struct). */
bm_status_t bm_btl_dgram_parse(const void *buf, size_t len, struct bm_btl_dgram_pkt *pkt_out,
                               size_t *bad_out);
void bm_btl_dgram_recv_packet(struct bm_btl_dgram_module *m, int ch, const void *buf, size_t len,
                              const struct sockaddr_in *from);
/* The same for a datagram of len bytes whose header is at buf and whose
 * payload was received at payload (the address direct_target gave). */
void bm_btl_dgram_recv_packet_at(struct bm_btl_dgram_module *m, int ch, const void *buf, size_t len,
                                 const void *payload, const struct sockaddr_in *from);
/* Where the payload of a datagram (its first `got` bytes at hdr, len in
 * all) belongs if it is received straight into a placed fragment's memory:
 * a chunk of a fragment being placed, from its endpoint's partner, that
 * lies in one piece of the caller's memory and overlaps none of the
 * fragment's verified ranges. NULL: it does not go in place. *hlen_out:
 * the header's length. */
void *bm_btl_dgram_direct_target(struct bm_btl_dgram_module *m, int ch, const void *hdr, size_t got,
                                 size_t len, const struct sockaddr_in *from, size_t *hlen_out);
/* One chunk expected next: its payload's place and length. */
struct bm_btl_dgram_direct_slot {
    uint8_t *dst;
    size_t len;
};
/* The chunks that the fragment being received in place (direct_hint)
 * expects next, in the order its sender cuts them, in one piece of the
 * caller's memory each and beyond every verified byte: at most max, 0 when
 * there is none. */
unsigned bm_btl_dgram_direct_predict(struct bm_btl_dgram_module *m, int ch,
                                     struct bm_btl_dgram_direct_slot *out, unsigned max);
uint32_t bm_btl_dgram_checksum(const void *buf, size_t len);
/* The checksum of a followed by b, as if contiguous (alen a multiple of 8). */
uint32_t bm_btl_dgram_checksum2(const void *a, size_t alen, const void *b, size_t blen);

/* dgram_topo_hwloc.c (or _none.c): for each interface, 1 when its device is
 * local to the cores this process is bound to, 0 when remote, -1 unknown. */
void bm_btl_dgram_topo_near(const char *const *ifnames, int n, int *near_out);

/* dgram_stats.c */
void bm_btl_dgram_stats_maybe_print(struct bm_btl_dgram_module *m);

#endif
