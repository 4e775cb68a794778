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
#define BM_BTL_SM_VERSION   4u

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
    uint32_t fbox_units;    /* 64-byte units per ring (0: no fast boxes) */
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
 * followed by ctl->fbox_units units of 64 bytes (cache lines). A message
 * takes as many consecutive units as it needs, so that an 8-byte message
 * touches one line and a 1 KiB message does not cost a ring of 1 KiB slots.
 *
 * Its first unit starts with the message word (bm_btl_sm_fbox_word: bits
 * 0-31 sequence, 32-47 length, 48-55 BTL tag, 56-63 offset); the message
 * itself (PML header, then payload) starts at the offset, chosen by the
 * sender so that a payload after its header is 32-byte aligned: vector
 * copies that straddle cache lines of the other core's cache cost more than
 * a few bytes of padding (measured: 256-byte latency 0.21 -> 0.15 us). A
 * message that would run past the end of the ring is preceded by a skip word
 * (tag BM_BTL_SM_FBOX_TAG_SKIP) that sends the receiver back to unit 0.
 *
 * The sequence field is the low 32 bits of (unit position + 1), positions
 * counting units since the ring was created: a unit holds a new message
 * only when its word names the position the receiver expects next. Stale
 * words must never pass for new ones, so every unit is rewritten in every
 * lap: the first unit of a message by the sender, and the others (whose
 * first bytes are payload) by the receiver once the message is handled,
 * with a word naming their own position, as are the units a skip jumps
 * over. A word left from the previous lap names a position one ring length
 * back, and a ring is far shorter than 2^32 units. The word is written last
 * by the sender (release store) and read first by the receiver (acquire
 * load); head is written only by the receiver. */

/* Bytes of a ring unit: one cache line. */
#define BM_BTL_SM_FBOX_UNIT BM_BTL_SM_CACHELINE
/* Bytes of the message word at the start of a message's first unit. */
#define BM_BTL_SM_FBOX_WORD 8u
/* Payloads of at least this many bytes start on this alignment. */
#define BM_BTL_SM_FBOX_ALIGN     32u
#define BM_BTL_SM_FBOX_ALIGN_MIN 64u
/* Largest offset of a message in its first unit (word + alignment pad). */
#define BM_BTL_SM_FBOX_OFF_MAX (BM_BTL_SM_FBOX_WORD + BM_BTL_SM_FBOX_ALIGN - 1)
/* Smallest ring the node-wide budget may leave a pair. */
#define BM_BTL_SM_FBOX_BYTES_MIN 4096u
/* Tag of a skip word: the rest of the ring is unused this lap. */
#define BM_BTL_SM_FBOX_TAG_SKIP 0xffu

/* Start of one ring: the receiver's head alone on a line; units follow. */
struct bm_btl_sm_fbox_ring {
    alignas(BM_BTL_SM_CACHELINE) _Atomic uint64_t head; /* units consumed, written by receiver */
    uint8_t pad[BM_BTL_SM_CACHELINE - 8];
};
_Static_assert(sizeof(struct bm_btl_sm_fbox_ring) == BM_BTL_SM_CACHELINE, "fbox ring head: a line");
_Static_assert(BM_BTL_SM_FBOX_OFF_MAX < BM_BTL_SM_FBOX_UNIT, "a message starts in its first unit");

/* Bytes of one ring of nunits units. */
static inline size_t bm_btl_sm_fbox_ring_bytes(uint32_t nunits)
{
    return sizeof(struct bm_btl_sm_fbox_ring) + (size_t)nunits * BM_BTL_SM_FBOX_UNIT;
}

/* Units taken by a message of len bytes at offset off of its first unit. */
static inline uint32_t bm_btl_sm_fbox_units(uint32_t off, size_t len)
{
    return (uint32_t)((off + len + BM_BTL_SM_FBOX_UNIT - 1) / BM_BTL_SM_FBOX_UNIT);
}

/* Where a message of hdr_len header bytes and payload_len payload bytes
 * starts in its first unit: right after the word, or, for a payload worth
 * a vector copy, so that the payload is aligned. */
static inline uint32_t bm_btl_sm_fbox_offset(size_t hdr_len, size_t payload_len)
{
    if (payload_len < BM_BTL_SM_FBOX_ALIGN_MIN)
        return BM_BTL_SM_FBOX_WORD;
    size_t pad = (BM_BTL_SM_FBOX_ALIGN - (BM_BTL_SM_FBOX_WORD + hdr_len) % BM_BTL_SM_FBOX_ALIGN) %
                 BM_BTL_SM_FBOX_ALIGN;
    return BM_BTL_SM_FBOX_WORD + (uint32_t)pad;
}

/* Message word: seq (32 bits) | length (16) << 32 | tag (8) << 48 | offset (8) << 56. */
static inline uint64_t bm_btl_sm_fbox_word(uint64_t pos, uint32_t len, uint8_t tag, uint32_t off)
{
    return (uint64_t)(uint32_t)(pos + 1) | (uint64_t)(len & 0xffffu) << 32 | (uint64_t)tag << 48 |
           (uint64_t)(off & 0xffu) << 56;
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
