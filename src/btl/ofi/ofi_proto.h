/* Wire formats of the ofi transport: the record each process publishes in
 * the modex under "btl.ofi" (one entry per module: which provider, fabric
 * and domain it opened and the libfabric address of its endpoint), and the
 * header in front of every two-sided message. libfabric moves the bytes and
 * keeps message boundaries, so the header says who sent the message, for
 * which receive callback, and carries the delivery acknowledgements that
 * the socket providers need (their completions do not prove delivery). Multi-byte fields are in the
 * sender's byte order: every peer of a libfabric job runs the same provider, and RMA already
 * assumes the peers agree on the layout of memory. Sizes are fixed by _Static_assert. */
#ifndef BM_BTL_OFI_PROTO_H
#define BM_BTL_OFI_PROTO_H

#include <stdint.h>

/* ---- modex record ("btl.ofi") -------------------------------------------
 * One bm_btl_ofi_modex_hdr, then nmodules bm_btl_ofi_modex_module, each
 * followed by addrlen bytes of endpoint address, padded to 8 bytes. */

#define BM_BTL_OFI_MODEX_MAGIC   0x424d4f46u /* "BMOF" */
#define BM_BTL_OFI_MODEX_VERSION 1
#define BM_BTL_OFI_ADDR_MAX      256 /* longest endpoint address accepted (shm: a string) */

struct bm_btl_ofi_modex_hdr {
    uint32_t magic;    /* BM_BTL_OFI_MODEX_MAGIC */
    uint16_t version;  /* BM_BTL_OFI_MODEX_VERSION: a peer with another version is unreachable */
    uint16_t nmodules; /* module records that follow */
};
_Static_assert(sizeof(struct bm_btl_ofi_modex_hdr) == 8, "ofi modex header size");

#define BM_BTL_OFI_MOD_F_LOOPBACK 0x1u /* the domain reaches only this host (lo, shm) */

struct bm_btl_ofi_modex_module {
    char prov_name[32];   /* provider chain ("tcp;ofi_rxm"), NUL-terminated */
    char fabric_name[64]; /* fabric (an IP network for socket providers): must match to pair */
    char domain_name[32]; /* domain (a NIC or interface), for messages */
    uint32_t addr_format; /* FI_SOCKADDR_IN, FI_ADDR_STR, ...: must match to pair */
    uint16_t addrlen;     /* bytes of endpoint address after this record */
    uint16_t nrx;         /* receive contexts of the endpoint (1 unless scalable) */
    uint16_t rx_ctx_bits; /* bits of an fi_addr_t that select the receive context */
    uint16_t flags;       /* BM_BTL_OFI_MOD_F_* */
    uint32_t bandwidth;   /* Mbit/s, striping weight */
};
_Static_assert(sizeof(struct bm_btl_ofi_modex_module) == 144, "ofi modex module size");

/* ---- two-sided message header --------------------------------------------
 * In front of every message; the payload follows at once. The length comes
 * from the completion (libfabric keeps message boundaries). */

#define BM_BTL_OFI_HDR_MAGIC 0xb7u

#define BM_BTL_OFI_HDR_F_ACK 0x1u /* ack_ctx/ack carry an acknowledgement */

struct bm_btl_ofi_hdr {
    uint32_t src_rank; /* sender's rank in the job */
    uint8_t tag;       /* receive callback (bm_btl_tag_t); 0 is the transport's own */
    uint8_t magic;     /* BM_BTL_OFI_HDR_MAGIC: a stray or truncated message is dropped */
    uint16_t src_mod;  /* index of the sender's module in its modex record */
    /* Delivery acknowledgements (ofi_ack.c), on providers whose completions
     * do not prove delivery: */
    uint32_t seq;       /* number of this message in its stream (1, 2, ...); 0: not tracked */
    uint32_t ack;       /* with BM_BTL_OFI_HDR_F_ACK: the receiver of this message got every
                           tracked message up to number ack of its stream ack_ctx to us */
    uint8_t ctx;        /* sender's context: its stream towards us */
    uint8_t ack_ctx;    /* the stream ack refers to (one of the receiver's contexts) */
    uint8_t flags;      /* BM_BTL_OFI_HDR_F_* */
    uint8_t reserved;   /* zero */
    uint32_t reserved2; /* zero; keeps the payload 8-byte aligned */
};
_Static_assert(sizeof(struct bm_btl_ofi_hdr) == 24, "ofi message header size");

/* Transport messages (tag 0): a bm_btl_ofi_ctl_msg. */
enum bm_btl_ofi_ctl {
    BM_BTL_OFI_CTL_PING = 1, /* are you there? answered by a PONG with the same seq */
    BM_BTL_OFI_CTL_PONG = 2, /* the answer: the path works both ways */
    BM_BTL_OFI_CTL_ACK = 3,  /* got every tracked message up to seq of stream ctx */
    /* nothing to do: sent with a completion before the sender closes its
     * endpoint, behind the messages it injected from that context; its
     * completion (delivery) says they reached the peer's provider */
    BM_BTL_OFI_CTL_FENCE = 4,
};

struct bm_btl_ofi_ctl_msg {
    uint8_t ctl;         /* BM_BTL_OFI_CTL_* */
    uint8_t ctx;         /* ACK: the stream (the receiver's context) acknowledged */
    uint8_t reserved[2]; /* zero */
    uint32_t seq;        /* PING/PONG: the PING's number; ACK: the last message number */
};
_Static_assert(sizeof(struct bm_btl_ofi_ctl_msg) == 8, "ofi control message size");

#endif
