/* The shared-memory layout of the sm transport: what one process's segment
 * (/dev/shm/bm-<jobid>-sm-<rank>) holds, field by field, and the address
 * card each process publishes in the modex ("btl.sm"). Every other local
 * process maps the segment; structures here are read and written by several
 * processes at once, so every field shared across processes is either
 * written once before the segment is published or is a C11 atomic, and
 * fields written by different processes sit on different cache lines.
 *
 * Pointers never cross processes (each maps a segment at its own address):
 * a fragment is named by a relative pointer, rptr = (owner rank + 1) << 40 |
 * offset of the fragment in the owner's segment; 0 means "none". */
#ifndef BM_BTL_SM_PROTO_H
#define BM_BTL_SM_PROTO_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define BM_BTL_SM_CACHELINE 64
#define BM_BTL_SM_MAGIC     0x6765732d6d736d62ull /* "bmsm-seg" */
#define BM_BTL_SM_VERSION   5u

typedef uint64_t bm_btl_sm_rptr_t;
#define BM_BTL_SM_RPTR_NONE  ((bm_btl_sm_rptr_t)0)
#define BM_BTL_SM_RPTR_SHIFT 40
#define BM_BTL_SM_RPTR_MASK  ((UINT64_C(1) << BM_BTL_SM_RPTR_SHIFT) - 1)

static inline bm_btl_sm_rptr_t bm_btl_sm_rptr(int owner_rank, uint64_t offset)
{
    return ((uint64_t)(owner_rank + 1) << BM_BTL_SM_RPTR_SHIFT) | offset;
}
static inline int bm_btl_sm_rptr_rank(bm_btl_sm_rptr_t p)
{
    return (int)(p >> BM_BTL_SM_RPTR_SHIFT) - 1;
}
static inline uint64_t bm_btl_sm_rptr_offset(bm_btl_sm_rptr_t p)
{
    return p & BM_BTL_SM_RPTR_MASK;
}

/* Receive FIFO of one process (multi-producer, single-consumer linked list
 * of fragments, see sm_fifo.h). It lives in the receiver's segment. */
struct bm_btl_sm_fifo {
    /* First fragment to deliver. Written by the receiver when it pops, and
     * by a sender only when it appends to an empty FIFO. */
    alignas(BM_BTL_SM_CACHELINE) _Atomic uint64_t head;
    /* Last fragment. Every sender swaps itself in here; on its own line so
     * senders appending do not disturb the receiver polling head. */
    alignas(BM_BTL_SM_CACHELINE) _Atomic uint64_t tail;
};

/* Start of every segment. All fields but mapped and fifo are written by the
 * owner before it publishes its address card and never change. */
struct bm_btl_sm_seg_ctl {
    alignas(BM_BTL_SM_CACHELINE) uint64_t magic; /* BM_BTL_SM_MAGIC: a mapped file is ours */
    uint32_t version;                            /* BM_BTL_SM_VERSION */
    int32_t rank;                                /* owner's rank */
    int32_t pid;                                 /* owner's process id */
    uint32_t nclass;                             /* fragment size classes (2) */
    uint64_t size;                               /* bytes of the whole segment */
    uint64_t frags_offset[2];                    /* start of each class's fragments */
    uint64_t frag_stride[2];                     /* bytes per fragment, header included */
    uint32_t frag_count[2];                      /* fragments of each class */
    /* Fast boxes (sm_fbox.h): one ring per local sender, indexed by the
     * sender's local rank, and the bitmap of rings that may hold data. */
    uint64_t fbox_offset;   /* first ring */
    uint64_t fbox_stride;   /* bytes per ring */
    uint64_t hint_offset;   /* bitmap words (_Atomic uint64_t), on lines of their own */
    uint32_t fbox_units;    /* 32-byte units per ring (0: no fast boxes) */
    uint32_t fbox_reserved; /* zero */
    uint32_t local_size;    /* rings (processes on the node) */
    uint32_t fbox_hints;    /* 1: senders set their hint bit; 0: the owner polls every ring */
    /* Local peers that have mapped this segment; the one that completes the
     * count unlinks the file (the mapping survives). Own cache line: written
     * by peers once, at start-up. */
    alignas(BM_BTL_SM_CACHELINE) _Atomic uint32_t mapped;
    /* The owner is about to sleep and wants a byte on its doorbell after
     * the next message or returned fragment (sm_bell.c). Same line as
     * mapped: both are rarely written. */
    _Atomic uint32_t bell_armed;
    /* The owner may sleep (it has a doorbell): written before its address
     * is published, read by peers at add_procs. */
    uint32_t bell_sleeper;
    struct bm_btl_sm_fifo fifo; /* fragments sent to the owner, and its own coming back */
};

/* Fragment header, at the start of every fragment in the sender's segment;
 * the payload follows at the next cache line. */
struct bm_btl_sm_frag_hdr {
    /* Next fragment in whichever FIFO holds this one (rptr). */
    _Atomic uint64_t next;
    bm_btl_sm_rptr_t self; /* this fragment's own rptr, to give it back */
    uint32_t len;          /* payload bytes */
    uint32_t index;        /* slot in the sender's private fragment table */
    int32_t src;           /* sender's rank */
    uint8_t tag;           /* receive callback to run */
    uint8_t flags;         /* BM_BTL_SM_FRAG_F_* */
    uint8_t cls;           /* size class */
    uint8_t pad0;
    uint8_t pad[32];
};
#define BM_BTL_SM_FRAG_F_RETURN 0x1u /* delivered; on its way home to the sender */
#define BM_BTL_SM_FRAG_F_ATOMIC 0x2u /* payload is a bm_btl_sm_amo for the receiver to run */

/* An atomic operation on the receiver's memory, the payload of a fragment
 * with BM_BTL_SM_FRAG_F_ATOMIC. The initiator fills the request fields; the
 * target runs the operation with a CPU atomic in its own progress, writes
 * result and status into this same fragment and returns it, so the answer
 * travels home with the fragment and needs no message of its own. */
struct bm_btl_sm_amo {
    uint64_t addr;    /* the target's virtual address of the operand */
    uint64_t operand; /* operand; for compare-and-swap the value to store */
    uint64_t compare; /* compare-and-swap: the value expected at addr */
    uint64_t result;  /* written by the target: the previous value at addr */
    int32_t status;   /* written by the target: BM_OK or a negative bm_status_t */
    uint32_t flags;   /* BM_BTL_ATOMIC_OP_F_* (32-bit operands) */
    uint8_t op;       /* enum bm_btl_atomic_op, or BM_BTL_SM_AMO_CSWAP */
    uint8_t pad[7];
};
#define BM_BTL_SM_AMO_CSWAP 0xffu

/* What each process publishes in the modex under "btl.sm". */
struct bm_btl_sm_card {
    uint64_t magic;     /* BM_BTL_SM_MAGIC */
    uint32_t version;   /* BM_BTL_SM_VERSION */
    int32_t pid;        /* for process_vm_readv/writev (single copy) */
    uint64_t size;      /* segment bytes to map */
    uint64_t seg_addr;  /* where the owner mapped it: a known address for the CMA probe */
    int32_t local_rank; /* owner's index on the node: its fast box in every peer's segment */
    int32_t fd;         /* the owner's descriptor of the segment: peers open /proc/<pid>/fd/<fd>
                           (the name is gone already); -1: map by name */
    char name[88];      /* shm_open name, "/bm-<jobid>-sm-<rank>" */
};

/* ---- fast-box rings (sm_fbox.h runs them) --------------------------------
 *
 * One ring per (sender, receiver) pair of local processes, in the
 * receiver's segment: ctl->fbox_offset + local rank of the sender *
 * ctl->fbox_stride. A ring is a head line (struct bm_btl_sm_fbox_ring)
 * followed by ctl->fbox_units units of 32 bytes (half cache lines). A
 * message takes as many consecutive units as it needs, so that an 8-byte
 * message (20-byte PML MATCH header, payload, 4-byte word: 32 bytes) takes
 * one unit and two of them share a cache line, while a 1 KiB message does
 * not cost a ring of 1 KiB slots. Half-line units halve the lines a stream
 * of small messages moves from the sender's core to the receiver's (Open
 * MPI's vader packs its 8-byte messages two to a line the same way: 8-byte
 * fast-box header, 16-byte match header, payload, 32-byte aligned).
 *
 * Every unit ends with a word (bm_btl_sm_fbox_word, 32 bits at
 * BM_BTL_SM_FBOX_WORD_AT: 0-15 sequence, 16-23 BTL tag, 24-31 short
 * length); the word of a message's first unit describes the message. A
 * message of at most BM_BTL_SM_FBOX_SHORT_MAX bytes (PML header included)
 * whose payload needs no alignment fills the first unit from its start
 * (32-byte aligned), before the word: the short length is its length. Any
 * other message has short length BM_BTL_SM_FBOX_LONG and a second word
 * before the first (bm_btl_sm_fbox_ext at BM_BTL_SM_FBOX_EXT_AT: bits 0-15
 * length, 16-23 offset); the message itself (PML header, then payload)
 * starts at the offset from the first unit's start, in the second unit
 * (BM_BTL_SM_FBOX_LONG_OFF) or, for a payload of BM_BTL_SM_FBOX_ALIGN_MIN
 * bytes or more, as far into it as makes the payload after its header
 * 32-byte aligned: vector copies that straddle cache lines of the other
 * core's cache cost more than a few bytes of padding (measured: 256-byte
 * latency 0.21 -> 0.15 us). A message that would run past the end of the
 * ring is preceded by a skip word (tag BM_BTL_SM_FBOX_TAG_SKIP) that sends
 * the receiver back to unit 0.
 *
 * The sequence field is the low 16 bits of (unit position + 1), positions
 * counting units since the ring was created: a unit holds a new message
 * only when its word names the position the receiver expects next. Stale
 * words must never pass for new ones, so every unit's word is rewritten in
 * every lap: the first unit's by the sender, and the others' (payload
 * bytes) by the receiver once the message is handled, with a word naming
 * their own position, as are the units a skip jumps over. A word left from
 * the previous lap names a position one ring length back, and a ring is
 * shorter than 2^16 units (BM_BTL_SM_FBOX_BYTES_MAX), so it differs in its
 * low 16 bits. The word is written last by the sender (release store) and
 * read first by the receiver (acquire load); head is written only by the
 * receiver. */

/* Bytes of a ring unit: half a cache line. */
#define BM_BTL_SM_FBOX_UNIT 32u
/* Where a unit's word is: its last 4 bytes. */
#define BM_BTL_SM_FBOX_WORD_AT (BM_BTL_SM_FBOX_UNIT - 4u)
/* Largest message that fills its first unit before the word (short). */
#define BM_BTL_SM_FBOX_SHORT_MAX BM_BTL_SM_FBOX_WORD_AT
/* Short length of a message whose length and offset are in the second word. */
#define BM_BTL_SM_FBOX_LONG 0xffu
/* Where a long message's second word is in its first unit. */
#define BM_BTL_SM_FBOX_EXT_AT (BM_BTL_SM_FBOX_WORD_AT - 4u)
/* Where a long message starts at the earliest: its second unit. */
#define BM_BTL_SM_FBOX_LONG_OFF BM_BTL_SM_FBOX_UNIT
/* Payloads of at least this many bytes start on this alignment. */
#define BM_BTL_SM_FBOX_ALIGN     32u
#define BM_BTL_SM_FBOX_ALIGN_MIN 64u
/* Largest offset of a message from its first unit's start (alignment pad). */
#define BM_BTL_SM_FBOX_OFF_MAX (BM_BTL_SM_FBOX_LONG_OFF + BM_BTL_SM_FBOX_ALIGN - 1)
/* Smallest ring the node-wide budget may leave a pair. */
#define BM_BTL_SM_FBOX_BYTES_MIN 4096u
/* Largest ring: fewer than 2^16 units (the sequence field). */
#define BM_BTL_SM_FBOX_BYTES_MAX (1u << 20)
/* Tag of a skip word: the rest of the ring is unused this lap. */
#define BM_BTL_SM_FBOX_TAG_SKIP 0xffu
/* Tag of a pad word: this unit is unused (the sender started its next
 * message on a line of its own, sm_fbox.h "whole lines"). */
#define BM_BTL_SM_FBOX_TAG_PAD 0xfeu

/* Start of one ring: the receiver's head alone on a line; units follow. */
struct bm_btl_sm_fbox_ring {
    alignas(BM_BTL_SM_CACHELINE) _Atomic uint64_t head; /* units consumed, written by receiver */
    uint8_t pad[BM_BTL_SM_CACHELINE - 8];
};
_Static_assert(sizeof(struct bm_btl_sm_fbox_ring) == BM_BTL_SM_CACHELINE, "fbox ring head: a line");
_Static_assert(BM_BTL_SM_CACHELINE % BM_BTL_SM_FBOX_UNIT == 0, "units tile cache lines");
_Static_assert(BM_BTL_SM_FBOX_OFF_MAX <= 0xffu, "a long message's offset fits its field");
_Static_assert(BM_BTL_SM_FBOX_SHORT_MAX < BM_BTL_SM_FBOX_LONG, "short lengths fit the word");
_Static_assert(BM_BTL_SM_FBOX_BYTES_MAX / BM_BTL_SM_FBOX_UNIT < (1u << 16),
               "a stale word differs from the expected one in its 16-bit sequence");
_Static_assert(BM_BTL_SM_FBOX_WORD_AT % 4 == 0 && BM_BTL_SM_FBOX_EXT_AT % 4 == 0,
               "the words are aligned for atomic access");

/* Bytes of one ring of nunits units. */
static inline size_t bm_btl_sm_fbox_ring_bytes(uint32_t nunits)
{
    return sizeof(struct bm_btl_sm_fbox_ring) + (size_t)nunits * BM_BTL_SM_FBOX_UNIT;
}

/* Units taken by a message of len bytes at offset off of its first unit:
 * one for a short message (offset 0, even of 0 bytes: its word is there). */
static inline uint32_t bm_btl_sm_fbox_units(uint32_t off, size_t len)
{
    if (off == 0)
        return 1;
    return (uint32_t)((off + len + BM_BTL_SM_FBOX_UNIT - 1) / BM_BTL_SM_FBOX_UNIT);
}

/* Where a message of hdr_len header bytes and payload_len payload bytes
 * starts from its first unit's start: at it when the message fits before
 * the word (short), else in the second unit, as far in as makes a payload
 * worth a vector copy aligned. */
static inline uint32_t bm_btl_sm_fbox_offset(size_t hdr_len, size_t payload_len)
{
    if (payload_len < BM_BTL_SM_FBOX_ALIGN_MIN) {
        if (hdr_len + payload_len <= BM_BTL_SM_FBOX_SHORT_MAX)
            return 0;
        return BM_BTL_SM_FBOX_LONG_OFF;
    }
    size_t pad =
        (BM_BTL_SM_FBOX_ALIGN - (BM_BTL_SM_FBOX_LONG_OFF + hdr_len) % BM_BTL_SM_FBOX_ALIGN) %
        BM_BTL_SM_FBOX_ALIGN;
    return BM_BTL_SM_FBOX_LONG_OFF + (uint32_t)pad;
}

/* A unit's word: seq (16 bits) | tag (8) << 16 | short length (8) << 24. A
 * short message's length is the short length; BM_BTL_SM_FBOX_LONG says
 * that the second word (bm_btl_sm_fbox_ext) holds length and offset. */
static inline uint32_t bm_btl_sm_fbox_word(uint64_t pos, uint8_t tag, uint32_t short_len)
{
    return (uint32_t)(uint16_t)(pos + 1) | (uint32_t)tag << 16 | (short_len & 0xffu) << 24;
}

/* Second word of a long message: length (16 bits) | offset (8) << 16. */
static inline uint32_t bm_btl_sm_fbox_ext(uint32_t len, uint32_t off)
{
    return (len & 0xffffu) | (off & 0xffu) << 16;
}

_Static_assert(sizeof(struct bm_btl_sm_fifo) == 2 * BM_BTL_SM_CACHELINE, "fifo: two lines");
_Static_assert(sizeof(struct bm_btl_sm_frag_hdr) == BM_BTL_SM_CACHELINE, "frag header: one line");
_Static_assert(sizeof(struct bm_btl_sm_seg_ctl) == 5 * BM_BTL_SM_CACHELINE,
               "ctl: two lines of constants, mapped, fifo head, fifo tail");
_Static_assert(sizeof(struct bm_btl_sm_card) == 128, "card size");
_Static_assert(sizeof(struct bm_btl_sm_amo) == 48, "atomic request size");
_Static_assert(sizeof(_Atomic uint64_t) == 8, "atomic word size");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "cross-process atomics must be lock-free");

#endif
