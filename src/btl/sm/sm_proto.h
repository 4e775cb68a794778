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
#include <stdint.h>

#define BM_BTL_SM_CACHELINE 64
#define BM_BTL_SM_MAGIC     0x6765732d6d736d62ull /* "bmsm-seg" */
#define BM_BTL_SM_VERSION   3u

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
    uint32_t reserved;  /* zero */
    char name[88];      /* shm_open name, "/bm-<jobid>-sm-<rank>" */
};

_Static_assert(sizeof(struct bm_btl_sm_fifo) == 2 * BM_BTL_SM_CACHELINE, "fifo: two lines");
_Static_assert(sizeof(struct bm_btl_sm_frag_hdr) == BM_BTL_SM_CACHELINE, "frag header: one line");
_Static_assert(sizeof(struct bm_btl_sm_seg_ctl) == 5 * BM_BTL_SM_CACHELINE,
               "ctl: two lines of constants, mapped, fifo head, fifo tail");
_Static_assert(sizeof(struct bm_btl_sm_card) == 128, "card size");
_Static_assert(sizeof(struct bm_btl_sm_amo) == 48, "atomic request size");
_Static_assert(sizeof(_Atomic uint64_t) == 8, "atomic word size");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "cross-process atomics must be lock-free");

#endif
