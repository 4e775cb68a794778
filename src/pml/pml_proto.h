/* Wire headers of the point-to-point layer. Every PML fragment starts with
 * one of these headers, sent on BTL tag BM_PML_BTL_TAG(type), followed by
 * payload bytes. All fields are in the sender's byte order (every transport
 * today connects processes of one architecture). Receivers copy a header out
 * of the segment with memcpy before reading it (segments carry no alignment
 * promise) and validate every field before acting on it: request ids are
 * looked up in a table and checked against a generation count, lengths and
 * offsets against the request they name, so a corrupt or stale fragment is
 * dropped with a message instead of touching memory.
 *
 * Protocols (sender on the left):
 *   eager:      MATCH + whole payload                  ->
 *   rendezvous: RNDV + first bytes                     ->
 *                                                      <- ACK (receiver request, range wanted)
 *               FRAG + bytes, pipelined over the paths ->
 *   synchronous sends always use RNDV, even when the whole payload fits:
 *   the ACK tells the sender that the receive matched.
 *   single copy (rdma.c): RGET (RNDV fields + sender's buffer)  ->
 *                                                      <- PUT (tail of the message, receiver's
 *                                                              address), then it reads the head
 *               sender writes the tail; FIN (rreq)     ->
 *                                                      <- FIN (sreq): reads done, send complete
 *               a failed get or put: <- ACK for the missing range, FRAGs as above
 *   end to end (restart.c): the receiver of a RNDV that asked for FRAGs
 *   confirms the end:                                  <- ACK (DONE)
 *   and a sender with BM_PML_RESTART_MS keeps its message until then.
 *   A receive that makes no progress for that time:    <- ACK (RESTART, n, a missing range)
 *               FRAG + the range again                 ->
 *   A RNDV with no ACK for that time is sent again (RETRANSMIT); a sender
 *   still without DONE asks:  RNDV (RETRANSMIT|QUERY)  ->
 *                                                      <- ACK (the range again), or DONE
 *   A path that fails on one side only (its transport lost what it was
 *   receiving, the peer's transport saw nothing): that side restarts its
 *   receives from the peer at once and tells it  <- LOST, and the peer sends
 *   again at once each RNDV that has no ACK yet  RNDV (RETRANSMIT) ->
 * FIN repeats the match information so a duplicate FIN after a failover can
 * be recognised (the bfo design).
 *
 * Cancelling a send (MPI_Cancel): CANCEL (the message's match fields) ->
 *                                                      <- CANCEL_ACK (dropped or not)
 *   The receiver drops the message only while it waits unmatched in its
 *   unexpected queue; otherwise (matched, or not arrived yet) the send goes
 *   on and completes as if no cancel had been asked.
 *
 * Active messages (onesided.c) carry a layer above's bytes, unmatched, to a
 * handler run inside the target's progress: AM + bytes ->. They are
 * numbered per (sender, receiver) so that the receiver runs them in the
 * order sent and exactly once, even when a path failure made the sender
 * resend some on another path. */
#ifndef BM_PML_PROTO_H
#define BM_PML_PROTO_H

#include "btl/btl.h"

#include <stddef.h>
#include <stdint.h>

/* Header types (hdr_base.type). */
enum bm_pml_hdr_type {
    BM_PML_HDR_MATCH = 1,       /* eager message: match information + the whole payload */
    BM_PML_HDR_RNDV = 2,        /* rendezvous start: match information + length + first bytes */
    BM_PML_HDR_ACK = 3,         /* receiver matched a RNDV: send me bytes [offset, length) */
    BM_PML_HDR_FRAG = 4,        /* a piece of a rendezvous payload */
    BM_PML_HDR_PUT = 5,         /* receiver gives the sender a window to RDMA-write into */
    BM_PML_HDR_FIN = 6,         /* an RDMA transfer finished */
    BM_PML_HDR_RGET = 7,        /* rendezvous offering the sender's buffer for an RDMA read */
    BM_PML_HDR_AM = 8,          /* an active message for a layer above (one-sided: onesided.c) */
    BM_PML_HDR_CANCEL = 9,      /* the sender asks to drop its still unmatched message */
    BM_PML_HDR_CANCEL_ACK = 10, /* the receiver's answer */
    BM_PML_HDR_LOST = 11,       /* a path to you failed here: what you sent on it may be lost */
    BM_PML_HDR_TYPE_MAX = 12,
};

/* Each header type travels on its own BTL tag so that the transport
 * dispatches straight to the right handler. */
#define BM_PML_BTL_TAG(type) ((bm_btl_tag_t)(BM_BTL_TAG_PML + (type)))

/* A request id as carried on the wire: the request's slot index in the low
 * 32 bits, the slot's generation (incremented at every reuse, never 0) in
 * the high 32 bits. A fragment naming a slot whose generation differs refers
 * to a finished request and is dropped. 0 is never a valid id. */
typedef uint64_t bm_pml_reqid_t;

/* Flags (hdr_base.flags). */
#define BM_PML_HDR_F_RETRANSMIT 0x01u /* resent after a path failure: may be a duplicate */
/* ACK: not the first answer to a RNDV but a restart (restart.c): send bytes
 * [offset, length) again; ctl_seq numbers the restarts of one message. */
#define BM_PML_HDR_F_RESTART 0x02u
/* ACK: the receiver has every byte it asked for; a sender that kept the
 * message for a restart completes (restart.c). rreq is 0. */
#define BM_PML_HDR_F_DONE 0x04u
/* RNDV (with RETRANSMIT): sent again by a sender that had its ACK but no
 * DONE: the receiver answers with a restart of what it misses, or DONE. */
#define BM_PML_HDR_F_QUERY 0x08u

/* Common first four bytes. */
struct bm_pml_hdr_base {
    uint8_t type;      /* enum bm_pml_hdr_type */
    uint8_t flags;     /* BM_PML_HDR_F_* */
    uint16_t reserved; /* zero */
};
_Static_assert(sizeof(struct bm_pml_hdr_base) == 4, "base header is 4 bytes");

/* MATCH: an eager message. The payload (all of the message) follows. */
struct bm_pml_hdr_match {
    struct bm_pml_hdr_base base;
    uint32_t cid; /* context id of the communicator (point-to-point or collective context) */
    int32_t src;  /* sender's rank in that communicator: what the receiver matches on */
    int32_t tag;  /* message tag, >= 0 */
    uint32_t seq; /* per (sender, receiver, context) sequence number, from 0, wrapping: the
                   * receiver matches messages strictly in this order, holding early arrivals */
};
_Static_assert(sizeof(struct bm_pml_hdr_match) == 20, "MATCH header is 20 bytes");

/* RNDV: first fragment of a message too large for one eager fragment, or of
 * any synchronous send. The first bytes of the payload follow (possibly 0). */
struct bm_pml_hdr_rndv {
    struct bm_pml_hdr_match match; /* matching information, sequenced like MATCH */
    uint32_t reserved;             /* zero; aligns what follows */
    uint64_t msg_len;              /* total message length in bytes */
    bm_pml_reqid_t sreq;           /* sender's request: ACK names it */
};
_Static_assert(sizeof(struct bm_pml_hdr_rndv) == 40, "RNDV header is 40 bytes");

/* ACK: the receiver matched a RNDV. The sender sends bytes [offset, length)
 * of its message in FRAGs naming rreq; length is below msg_len when the
 * receive buffer is smaller (the rest is not sent: truncation). offset >=
 * length means nothing more is needed; the sender completes (this is how a
 * synchronous send learns that it matched). With F_RESTART: bytes
 * [offset, length) again, one ACK per missing range; with F_DONE: the
 * receive is complete (flags above). */
struct bm_pml_hdr_ack {
    struct bm_pml_hdr_base base;
    uint32_t ctl_seq;    /* 0 for the answer to the RNDV; n for the n-th restart (F_RESTART):
                          * the sender ignores a restart older than one it served, a stale
                          * duplicate (bfo's restart sequence) */
    bm_pml_reqid_t sreq; /* sender's request, from the RNDV */
    bm_pml_reqid_t rreq; /* receiver's request: FRAGs name it */
    uint64_t offset;     /* bytes the receiver already has (the RNDV's payload) */
    uint64_t length;     /* bytes of the message the receiver wants in total */
};
_Static_assert(sizeof(struct bm_pml_hdr_ack) == 40, "ACK header is 40 bytes");

/* FRAG: bytes [offset, offset + payload length) of a rendezvous message. */
struct bm_pml_hdr_frag {
    struct bm_pml_hdr_base base;
    uint32_t reserved;   /* zero */
    bm_pml_reqid_t rreq; /* receiver's request, from the ACK */
    uint64_t offset;     /* where the payload goes in the message */
};
_Static_assert(sizeof(struct bm_pml_hdr_frag) == 24, "FRAG header is 24 bytes");

/* PUT: the receiver of an RGET asks the sender to RDMA-write bytes [offset,
 * offset + length) of the message to remote_addr while it reads the rest;
 * the sender answers with a FIN naming rreq. handle_len bytes of the
 * receiver's registration handle (bm_btl_reg_handle, transport-defined)
 * follow (0 for sm). */
struct bm_pml_hdr_put {
    struct bm_pml_hdr_base base;
    uint32_t handle_len;  /* bytes of registration handle after the header */
    bm_pml_reqid_t sreq;  /* sender's request, from the RNDV */
    bm_pml_reqid_t rreq;  /* receiver's request: the FIN names it */
    uint64_t offset;      /* message offset of this window */
    uint64_t length;      /* bytes to write */
    uint64_t remote_addr; /* receiver's virtual address to write to (btl.h: remote_addr) */
};
_Static_assert(sizeof(struct bm_pml_hdr_put) == 48, "PUT header is 48 bytes");

/* FIN: an RDMA write (sender -> receiver, after PUT: req is the receive) or
 * the whole receive of an RGET (receiver -> sender: req is the send)
 * finished. It repeats the message's match information so that a FIN
 * resent after a failover is recognised as a duplicate. */
struct bm_pml_hdr_fin {
    struct bm_pml_hdr_match match; /* the message's MATCH fields, for duplicate detection */
    int32_t status;                /* bm_status_t of the transfer: BM_OK or an error */
    bm_pml_reqid_t req;            /* the request the FIN completes, on its receiving side */
    uint64_t offset;               /* message offset of the range transferred */
    uint64_t length;               /* bytes transferred */
};
_Static_assert(sizeof(struct bm_pml_hdr_fin) == 48, "FIN header is 48 bytes");

/* What RGET adds to the RNDV fields. match.c treats an RGET as a RNDV and
 * hands this part on as its payload, so it is a struct of its own. */
struct bm_pml_rget_tail {
    uint64_t remote_addr; /* sender's buffer: its virtual address (btl.h: remote_addr) */
    uint32_t handle_len;  /* bytes after the header: registration handle, or layout */
    uint32_t flags;       /* BM_PML_RGET_F_*; zero for a contiguous buffer */
};
/* A non-contiguous sender: remote_addr is the base of its (count, type) and
 * the handle_len bytes after the header are the type's layout
 * (bm_util_dtype_encode), which the receiver reads piece by piece. */
#define BM_PML_RGET_F_LAYOUT 0x1u
/* A sender whose transport needs registration (ofi): the handle_len bytes
 * after the header are its registration handle of the buffer
 * (bm_btl_register_mem), which the receiver's get names. */
#define BM_PML_RGET_F_HANDLE 0x2u
_Static_assert(sizeof(struct bm_pml_rget_tail) == 16, "RGET tail is 16 bytes");

/* RGET: a RNDV whose sender offers its buffer for an RDMA read. handle_len
 * bytes of the sender's registration handle follow. */
struct bm_pml_hdr_rget {
    struct bm_pml_hdr_rndv rndv;  /* as RNDV; msg_len is the whole message */
    struct bm_pml_rget_tail tail; /* where to read */
};
_Static_assert(sizeof(struct bm_pml_hdr_rget) == 56, "RGET header is 56 bytes");
_Static_assert(offsetof(struct bm_pml_hdr_rget, tail) == sizeof(struct bm_pml_hdr_rndv),
               "the RGET tail follows the RNDV fields directly");

/* AM: an active message for the layer registered under id; its bytes
 * follow. */
struct bm_pml_hdr_am {
    struct bm_pml_hdr_base base;
    uint32_t seq;      /* per (sender, receiver) number, from 0, wrapping: run in this order */
    uint32_t id;       /* which layer's handler (BM_PML_AM_*) */
    uint32_t reserved; /* zero; the bytes that follow start 8-byte aligned */
};
_Static_assert(sizeof(struct bm_pml_hdr_am) == 16, "AM header is 16 bytes");

/* CANCEL: drop the message (cid, src, tag, seq) from this sender if it
 * still waits unmatched; answer with CANCEL_ACK naming sreq. */
struct bm_pml_hdr_cancel {
    struct bm_pml_hdr_match match; /* the message's MATCH fields (type: CANCEL) */
    uint32_t reserved;             /* zero */
    bm_pml_reqid_t sreq;           /* sender's request */
};
_Static_assert(sizeof(struct bm_pml_hdr_cancel) == 32, "CANCEL header is 32 bytes");

/* CANCEL_ACK: the answer to a CANCEL. */
struct bm_pml_hdr_cancel_ack {
    struct bm_pml_hdr_base base;
    uint32_t dropped;    /* 1: the message was dropped unmatched; 0: it goes on normally */
    bm_pml_reqid_t sreq; /* sender's request, from the CANCEL */
};
_Static_assert(sizeof(struct bm_pml_hdr_cancel_ack) == 16, "CANCEL_ACK header is 16 bytes");

/* LOST: a path from the receiver of this message to its sender failed on
 * the receiver's side; what the sender sent it over that path and the
 * receiver's transport had not finished receiving may be lost although the
 * sender's transport reported it delivered (restart.c). */
struct bm_pml_hdr_lost {
    struct bm_pml_hdr_base base;
    uint32_t reserved; /* zero */
};
_Static_assert(sizeof(struct bm_pml_hdr_lost) == 8, "LOST header is 8 bytes");

/* The largest header: transports' eager limits must exceed it. */
#define BM_PML_HDR_MAX_SIZE sizeof(struct bm_pml_hdr_rget)

#endif
