/* Wire formats of the tcp transport: the address record each process
 * publishes in the modex under "btl.tcp", the handshake exchanged once per
 * connection, and the header in front of every frame of the byte stream.
 * Every multi-byte field is in network byte order on the wire (the modex
 * record too, so that a mixed-endian job would still agree). Sizes are fixed
 * by _Static_assert so that a field added by mistake breaks the build, not
 * the wire. */
#ifndef BM_BTL_TCP_PROTO_H
#define BM_BTL_TCP_PROTO_H

#include <stdint.h>

/* ---- modex record ("btl.tcp") -------------------------------------------
 * One bm_btl_tcp_modex_hdr followed by naddrs bm_btl_tcp_modex_addr. */

#define BM_BTL_TCP_MODEX_MAGIC   0x424d5443u /* "BMTC" */
#define BM_BTL_TCP_MODEX_VERSION 1
#define BM_BTL_TCP_NONCE_LEN     16 /* SipHash-2-4 key size */

struct bm_btl_tcp_modex_hdr {
    uint32_t magic;   /* BM_BTL_TCP_MODEX_MAGIC */
    uint16_t version; /* BM_BTL_TCP_MODEX_VERSION: a peer with another version is unreachable */
    uint16_t naddrs;  /* address records that follow */
    uint8_t
        nonce[BM_BTL_TCP_NONCE_LEN]; /* random per process: the handshake proves knowledge of it */
    uint8_t host_id[16]; /* kernel boot id: with netns_ino, "can my loopback reach you" */
    uint64_t netns_ino;  /* inode of /proc/self/ns/net (network namespace identity) */
};
_Static_assert(sizeof(struct bm_btl_tcp_modex_hdr) == 48, "tcp modex header size");

#define BM_BTL_TCP_ADDR_F_LOOPBACK 0x1u /* address of a loopback interface */

struct bm_btl_tcp_modex_addr {
    uint8_t family;     /* 4 or 6 (not AF_*: those numbers are not portable) */
    uint8_t prefixlen;  /* netmask length of the interface address */
    uint16_t port;      /* listening port of the module owning this address */
    uint16_t module;    /* index of the publishing module (0..), carried by the handshake */
    uint16_t flags;     /* BM_BTL_TCP_ADDR_F_* */
    uint32_t bandwidth; /* interface speed in Mbit/s (pairing tie-break, striping weight) */
    uint8_t addr[16];   /* IPv4 in the first 4 bytes, or IPv6 */
    char ifname[16];    /* interface name, NUL-terminated, for messages */
    uint32_t reserved;  /* zero */
};
_Static_assert(sizeof(struct bm_btl_tcp_modex_addr) == 48, "tcp modex address size");

/* ---- handshake ----------------------------------------------------------
 * The connecting side sends HELLO as soon as connect() completes; the
 * accepting side answers ACCEPT or REJECT and only then may either side send
 * frames. Both messages have the same layout. The proof is SipHash-2-4 keyed
 * with the receiver's published nonce over the first 24 bytes of the message,
 * so only a process that could read the job's modex can produce it: a
 * stranger, or a process of another job, is closed and logged. */

#define BM_BTL_TCP_HS_MAGIC   0x424d4853u /* "BMHS" */
#define BM_BTL_TCP_HS_VERSION 1

enum bm_btl_tcp_hs_kind {
    BM_BTL_TCP_HS_HELLO = 1,  /* connector -> acceptor */
    BM_BTL_TCP_HS_ACCEPT = 2, /* acceptor -> connector: the connection is in use */
    BM_BTL_TCP_HS_REJECT = 3, /* acceptor -> connector: simultaneous connect lost, or duplicate */
};

struct bm_btl_tcp_hs {
    uint32_t magic;      /* BM_BTL_TCP_HS_MAGIC */
    uint16_t version;    /* BM_BTL_TCP_HS_VERSION */
    uint16_t kind;       /* enum bm_btl_tcp_hs_kind */
    int32_t src_rank;    /* rank of the sender of this message */
    int32_t dst_rank;    /* rank the sender believes it talks to */
    uint16_t src_module; /* sender's module index (as published in its modex record) */
    uint16_t link;       /* connection index within the endpoint, 0 .. BM_BTL_TCP_LINKS-1 */
    uint32_t reserved;   /* zero */
    uint64_t proof;      /* SipHash-2-4(receiver's nonce, bytes 0..23 of this message) */
};
_Static_assert(sizeof(struct bm_btl_tcp_hs) == 32, "tcp handshake size");

/* ---- frames ---------------------------------------------------------------
 * After the handshake a connection carries frames in both directions: a
 * header, then len payload bytes. DATA frames are numbered per connection and
 * direction from 0; every header carries the cumulative count of DATA frames
 * its sender has received on this connection, which acknowledges them: a
 * send completes successfully only once its frame is acknowledged, so a
 * broken connection never turns into a success for data that was lost. */

enum bm_btl_tcp_frame_type {
    BM_BTL_TCP_FRAME_DATA = 1, /* payload for the receive callback of tag */
    BM_BTL_TCP_FRAME_ACK = 2,  /* no payload: only the ack field matters */
    BM_BTL_TCP_FRAME_FIN = 3,  /* no payload: the sender is closing normally (finalize) */
};

/* The sender waits for this frame's acknowledgement before it can reuse
 * memory (data sent in place from the user's buffer): acknowledge it at the
 * end of the progress call that received it. Frames without the flag (the
 * sender kept a copy) may be acknowledged one progress call later, so that
 * a reply usually carries the acknowledgement and no ACK frame is needed. */
#define BM_BTL_TCP_HDR_F_ACK_NOW 0x1u

struct bm_btl_tcp_hdr {
    uint32_t len;   /* payload bytes after this header (0 for ACK and FIN) */
    uint8_t type;   /* enum bm_btl_tcp_frame_type */
    uint8_t tag;    /* DATA: the bm_btl_tag_t of the receive callback */
    uint16_t flags; /* BM_BTL_TCP_HDR_F_* */
    uint32_t seq;   /* DATA: number of this frame on this connection and direction */
    uint32_t ack;   /* DATA frames the sender has received on this connection so far */
};
_Static_assert(sizeof(struct bm_btl_tcp_hdr) == 16, "tcp frame header size");

#endif
