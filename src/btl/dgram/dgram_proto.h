/* The dgram transport's wire format: every datagram that one dgram module
 * sends to another, on either wire (native UDP or libfabric FI_EP_DGRAM).
 * A datagram is one base header, then an extension that depends on the
 * packet type, then payload_len bytes of payload. All multi-byte fields are
 * little-endian. Nothing in a datagram is trusted: the parser
 * (bm_btl_dgram_parse) checks every field against the datagram's length and
 * the receiving module before anything else reads it.
 *
 * Reliability fields: every sequenced packet (FRAG, CHUNK, PUT, GET_REQ,
 * GET_DATA, GET_NAK) carries a 16-bit sequence number in its sender's
 * current send session. Every packet that has ACK_VALID set also acknowledges
 * the receiver's own stream: all sequence numbers up to and including
 * ack_seq, plus those marked in the selective-ACK bitmap. echo_seq names the
 * packet whose arrival the ACK answers, so that round trips are measured on
 * it and not on packets that a hole in front of them kept un-ACKed. A session number
 * changes when a path that was declared failed is taken back, so that
 * packets of the abandoned stream can never be confused with the new one.
 *
 * Authentication (BM_BTL_DGRAM_AUTH, on by default): with BM_DGRAM_F_MAC set
 * the job_key field carries a 64-bit MAC instead of the job key: SipHash-2-4
 * over the whole header (extensions included, its job_key and checksum
 * fields read as zeros) followed by the NH hashes of the payload's 512-byte
 * blocks, or, when a non-empty payload and its header fit one block,
 * SipHash-2-4 over the NH hash of both and their length (dgram_mac.c),
 * under the receiving module's 128-bit key (random, from getrandom,
 * published with its address in the modex, so known only to
 * the job's processes: the launcher's key-value service admits only holders
 * of the job secret). Such a datagram has no checksum (0): the MAC detects
 * corruption as well. A receiver checks the MAC before the datagram touches
 * any state and drops it (counted in bad_mac) when it fails, or when it has
 * no MAC while authentication is on. Replayed genuine datagrams carry old
 * sequence numbers or sessions and are dropped as duplicates or stale.
 *
 * Liveness (dgram_live.c): each module has a plain UDP socket, the live
 * port, read only by a thread of its own. A PING sent there (MAC under the
 * receiving module's key, as any datagram) is answered by that thread at
 * once with an ALIVE, sent from the module's priority socket (udp wire) or
 * from the live port (libfabric wire), whether or not the process is
 * inside the library: the answer shows that the path carries datagrams and
 * that the peer process lives, as a TCP peer's kernel shows with its ACKs
 * while the application computes. The thread knows only its own module's
 * key, so an ALIVE's MAC is under the answering module's key, which the
 * pinging side holds as the key it sends with. */
#ifndef BM_BTL_DGRAM_PROTO_H
#define BM_BTL_DGRAM_PROTO_H

#include <stddef.h>
#include <stdint.h>

/* The fields are stored little-endian by plain assignment; a big-endian port
 * would convert in bm_btl_dgram_parse and the header writers. */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "dgram_proto.h assumes a little-endian host"
#endif

#define BM_DGRAM_MAGIC   0xB7D6u /* first two bytes of every datagram */
#define BM_DGRAM_VERSION 2u      /* bumped on any incompatible change (2: the MAC's NH^T) */

/* Packet types (bm_dgram_hdr.type). */
enum bm_dgram_type {
    BM_DGRAM_T_ACK = 1,      /* header only: an explicit acknowledgement */
    BM_DGRAM_T_FRAG = 2,     /* a whole PML fragment: payload is the fragment */
    BM_DGRAM_T_CHUNK = 3,    /* a piece of a large fragment (chunk extension) */
    BM_DGRAM_T_PUT = 4,      /* a piece of an emulated PUT (chunk + rdma extensions) */
    BM_DGRAM_T_GET_REQ = 5,  /* request for remote memory (chunk + rdma extensions, no payload) */
    BM_DGRAM_T_GET_DATA = 6, /* a piece of the answer to a GET_REQ (chunk extension) */
    BM_DGRAM_T_GET_NAK = 7,  /* a GET_REQ was refused (chunk extension, no payload) */
    BM_DGRAM_T_PING = 8,     /* unsequenced probe; payload is padding (connectivity, recovery) */
    BM_DGRAM_T_PONG = 9,     /* answer to a PING, same size, same nonce */
    BM_DGRAM_T_REPAIR = 10,  /* unsequenced: interface pairs excluded (repair extension) */
    BM_DGRAM_T_ALIVE = 11,   /* the liveness responder's answer to a PING sent to the live
                                port: chunk extension with the PING's nonce and, in
                                frag_size, the ms since the answering process last ran the
                                transport's progress; no payload; its MAC is under the
                                ANSWERING module's key (see below) */
    BM_DGRAM_T_MAX_ = 12,
};

/* Flags (bm_dgram_hdr.flags). */
#define BM_DGRAM_F_ACK_VALID 0x01u /* ack_seq/sack/ack_session are meaningful */
#define BM_DGRAM_F_LAST      0x02u /* last chunk of its fragment (informational) */
#define BM_DGRAM_F_ECHO      0x04u /* echo_seq is meaningful (round-trip measurement) */
#define BM_DGRAM_F_MAC       0x08u /* job_key holds the datagram's MAC (see above) */

/* The base header: 40 bytes, first in every datagram. */
struct bm_dgram_hdr {
    uint16_t magic;       /* BM_DGRAM_MAGIC: cheap rejection of foreign traffic */
    uint8_t version;      /* BM_DGRAM_VERSION */
    uint8_t type;         /* enum bm_dgram_type */
    uint32_t sender;      /* sender's rank in the job */
    uint64_t job_key;     /* hash of the job id (another job's packets are dropped); with
                             BM_DGRAM_F_MAC the datagram's MAC instead */
    uint16_t seq;         /* sequence number (sequenced types only, else 0) */
    uint16_t ack_seq;     /* cumulative ACK: every seq <= ack_seq was received */
    uint32_t sack;        /* bit i set: seq ack_seq + 2 + i was also received */
    uint16_t snd_session; /* session of the sender's stream that seq belongs to */
    uint16_t ack_session; /* session of the receiver's stream that ack_seq refers to */
    uint16_t payload_len; /* bytes of payload after the header and its extensions */
    uint8_t tag;          /* BTL tag of the fragment (FRAG, CHUNK); 0 otherwise */
    uint8_t flags;        /* BM_DGRAM_F_* */
    uint32_t checksum;    /* over the whole datagram with this field 0; 0 = not computed */
    uint8_t src_module;   /* index of the sending module in the sender's modex entry */
    uint8_t dst_module;   /* index of the receiving module in the receiver's entry */
    uint16_t echo_seq;    /* with F_ECHO: seq of the newest packet received from the peer */
};
_Static_assert(sizeof(struct bm_dgram_hdr) == 40, "dgram base header is 40 bytes");
_Static_assert(offsetof(struct bm_dgram_hdr, checksum) == 32, "checksum offset");
_Static_assert(offsetof(struct bm_dgram_hdr, job_key) == 8, "job key / MAC offset");

/* Chunk extension: CHUNK, PUT, GET_REQ, GET_DATA, GET_NAK, PING, PONG. */
struct bm_dgram_chunk {
    uint32_t frag_id;   /* sender-chosen id of the fragment (GET: the request id; PING: nonce) */
    uint32_t frag_size; /* total bytes of the fragment (GET_REQ: bytes requested) */
    uint32_t offset;    /* where this chunk's payload goes inside the fragment */
    uint32_t reserved;  /* 0 */
};
_Static_assert(sizeof(struct bm_dgram_chunk) == 16, "dgram chunk extension is 16 bytes");

/* RDMA extension: PUT and GET_REQ, after the chunk extension. */
struct bm_dgram_rdma {
    uint64_t addr; /* target address of offset 0 of the fragment (PUT: receiver's; GET_REQ:
                      responder's) */
    uint64_t key;  /* registration key the address must lie in */
};
_Static_assert(sizeof(struct bm_dgram_rdma) == 16, "dgram rdma extension is 16 bytes");

/* Repair extension: REPAIR only, no payload. When a connectivity check
 * fails, the pair (interface edge) is excluded and both ranks re-solve the
 * interface matching; a REPAIR tells the peer which edges are excluded so it
 * solves the same matrix. Edges are numbered row * 8 + column of the pairing
 * matrix, whose rows are the lower rank's modules and columns the higher
 * rank's (module indexes as published in the modex, at most 8 each). The
 * receiver accepts a REPAIR only from an address the sender published. */
#define BM_DGRAM_REPAIR_F_ANSWER 0x01u /* an answer to a REPAIR with this nonce */
struct bm_dgram_repair {
    uint32_t nonce;      /* chosen by the requester, echoed in the answer */
    uint8_t flags;       /* BM_DGRAM_REPAIR_F_* */
    uint8_t reserved[3]; /* 0 */
    uint64_t excluded;   /* every edge the sender has excluded for this pair of ranks */
    uint64_t excl_mtu;   /* of those, the ones whose small pings passed (an MTU problem) */
};
_Static_assert(sizeof(struct bm_dgram_repair) == 24, "dgram repair extension is 24 bytes");
_Static_assert(offsetof(struct bm_dgram_repair, excluded) == 8, "repair mask offset");

/* The largest header (base + chunk + rdma). */
#define BM_DGRAM_MAX_HDR                                                                           \
    (sizeof(struct bm_dgram_hdr) + sizeof(struct bm_dgram_chunk) + sizeof(struct bm_dgram_rdma))
_Static_assert(BM_DGRAM_MAX_HDR == 72, "dgram largest header is 72 bytes");

/* Largest datagram, headers included: below the 65507 bytes of UDP payload
 * that IPv4 allows, leaving room for IP options. */
#define BM_DGRAM_MAX_DATAGRAM 65000

/* Bytes of header for a packet type (base + extensions), 0 for an unknown type. */
static inline size_t bm_dgram_hdr_len(unsigned type)
{
    switch (type) {
    case BM_DGRAM_T_ACK:
    case BM_DGRAM_T_FRAG:
        return sizeof(struct bm_dgram_hdr);
    case BM_DGRAM_T_CHUNK:
    case BM_DGRAM_T_GET_DATA:
    case BM_DGRAM_T_GET_NAK:
    case BM_DGRAM_T_PING:
    case BM_DGRAM_T_PONG:
    case BM_DGRAM_T_ALIVE:
        return sizeof(struct bm_dgram_hdr) + sizeof(struct bm_dgram_chunk);
    case BM_DGRAM_T_PUT:
    case BM_DGRAM_T_GET_REQ:
        return BM_DGRAM_MAX_HDR;
    case BM_DGRAM_T_REPAIR:
        return sizeof(struct bm_dgram_hdr) + sizeof(struct bm_dgram_repair);
    default:
        return 0;
    }
}

/* True for types that occupy a sequence number (reliable, ACKed). */
static inline int bm_dgram_type_sequenced(unsigned type)
{
    return type >= BM_DGRAM_T_FRAG && type <= BM_DGRAM_T_GET_NAK;
}

#endif
