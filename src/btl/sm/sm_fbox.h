/* Fast boxes of the sm transport: one single-producer single-consumer ring
 * per (sender, receiver) pair, in the receiver's segment, for small
 * messages. A sender copies header and payload straight into the next slot
 * and publishes it with one release store of the slot's first word; the
 * receiver polls that word with an acquire load. No descriptor, no atomic
 * read-modify-write on the data path, no fragment to give back.
 *
 * The slot word carries the low 32 bits of (slot number + 1): a slot holds
 * a message only when the word names the number the receiver expects next,
 * so the receiver never has to clear slots, and a stale slot of an earlier
 * lap (whose number differs by a multiple of the ring size, at most 2^16)
 * can never pass for a new one. A message always fits one slot, so the
 * word is never overwritten by payload bytes. The receiver publishes how
 * many slots it has consumed (head) on a cache line of its own; the sender
 * keeps its own position privately and reads head only when its cached copy
 * says the ring is full.
 *
 * Hints: each receiver keeps a bitmap (one bit per local sender) of rings
 * that may hold data, so an idle progress call reads one word per 64 local
 * peers instead of every ring. The sender sets its bit with a fetch-or
 * after publishing the slot; the receiver swaps a whole word to zero before
 * draining the rings it names. Both are sequentially consistent
 * read-modify-writes of the same word, so either the receiver's swap sees
 * the bit, or the sender's fetch-or comes after the swap and leaves the bit
 * for the next progress call: a message is never stranded.
 *
 * Header-only so the threaded stress test can use it inside one process. */
#ifndef BM_BTL_SM_FBOX_H
#define BM_BTL_SM_FBOX_H

#include "btl/sm/sm_proto.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes before the payload in a slot (the slot word). */
#define BM_BTL_SM_FBOX_SLOT_HDR 8u

/* Start of one ring: the receiver's head alone on a line; slots follow. */
struct bm_btl_sm_fbox_ring {
    alignas(BM_BTL_SM_CACHELINE) _Atomic uint64_t head; /* slots consumed, written by receiver */
    uint8_t pad[BM_BTL_SM_CACHELINE - 8];
};
_Static_assert(sizeof(struct bm_btl_sm_fbox_ring) == BM_BTL_SM_CACHELINE, "fbox ring head: a line");

/* Bytes of one ring with nslots slots of slot_size bytes. */
static inline size_t bm_btl_sm_fbox_ring_bytes(uint32_t nslots, uint32_t slot_size)
{
    return sizeof(struct bm_btl_sm_fbox_ring) + (size_t)nslots * slot_size;
}

/* Slot word: seq (32 bits) | payload length (16) << 32 | tag (8) << 48. */
static inline uint64_t bm_btl_sm_fbox_word(uint64_t pos, uint32_t len, uint8_t tag)
{
    return (uint64_t)(uint32_t)(pos + 1) | (uint64_t)(len & 0xffffu) << 32 | (uint64_t)tag << 48;
}

/* The sender's private side of a ring. */
struct bm_btl_sm_fbox_tx {
    struct bm_btl_sm_fbox_ring *ring; /* in the receiver's segment */
    unsigned char *slot;              /* slot number tail, kept so no division is needed */
    uint64_t tail;                    /* slots written */
    uint64_t head_cache;              /* last head read from the ring */
    uint32_t idx;                     /* tail % nslots */
    uint32_t nslots, slot_size;
};

/* The receiver's private side of a ring. */
struct bm_btl_sm_fbox_rx {
    struct bm_btl_sm_fbox_ring *ring; /* in our own segment */
    unsigned char *slot;              /* slot number head */
    uint64_t head;                    /* slots consumed */
    uint64_t published;               /* head as last stored in the ring */
    uint32_t idx;                     /* head % nslots */
    uint32_t nslots, slot_size;
};

static inline void bm_btl_sm_fbox_ring_init(struct bm_btl_sm_fbox_ring *r)
{
    atomic_store_explicit(&r->head, 0, memory_order_relaxed);
}

static inline unsigned char *bm_btl_sm_fbox_first_slot(struct bm_btl_sm_fbox_ring *r)
{
    return (unsigned char *)(r + 1);
}

static inline void bm_btl_sm_fbox_tx_init(struct bm_btl_sm_fbox_tx *tx,
                                          struct bm_btl_sm_fbox_ring *r, uint32_t nslots,
                                          uint32_t slot_size)
{
    *tx = (struct bm_btl_sm_fbox_tx){
        .ring = r, .slot = bm_btl_sm_fbox_first_slot(r), .nslots = nslots, .slot_size = slot_size};
}

static inline void bm_btl_sm_fbox_rx_init(struct bm_btl_sm_fbox_rx *rx,
                                          struct bm_btl_sm_fbox_ring *r, uint32_t nslots,
                                          uint32_t slot_size)
{
    *rx = (struct bm_btl_sm_fbox_rx){
        .ring = r, .slot = bm_btl_sm_fbox_first_slot(r), .nslots = nslots, .slot_size = slot_size};
}

/* Step a slot pointer and its index to the next slot of the ring. */
static inline void bm_btl_sm_fbox_step(struct bm_btl_sm_fbox_ring *r, unsigned char **slot,
                                       uint32_t *idx, uint32_t nslots, uint32_t slot_size)
{
    if (++*idx == nslots) {
        *idx = 0;
        *slot = bm_btl_sm_fbox_first_slot(r);
    } else {
        *slot += slot_size;
    }
}

/* Payload space of the next slot (slot_size - 8 bytes), or NULL when the
 * ring is full. Nothing is visible to the receiver until commit. */
static inline void *bm_btl_sm_fbox_reserve(struct bm_btl_sm_fbox_tx *tx)
{
    if (tx->tail - tx->head_cache >= tx->nslots) {
        tx->head_cache = atomic_load_explicit(&tx->ring->head, memory_order_acquire);
        if (tx->tail - tx->head_cache >= tx->nslots)
            return NULL;
    }
    return tx->slot + BM_BTL_SM_FBOX_SLOT_HDR;
}

/* Publish the reserved slot: len payload bytes for receive callback tag. */
static inline void bm_btl_sm_fbox_commit(struct bm_btl_sm_fbox_tx *tx, uint32_t len, uint8_t tag)
{
    atomic_store_explicit((_Atomic uint64_t *)tx->slot, bm_btl_sm_fbox_word(tx->tail, len, tag),
                          memory_order_release);
    tx->tail++;
    bm_btl_sm_fbox_step(tx->ring, &tx->slot, &tx->idx, tx->nslots, tx->slot_size);
}

/* The next message's payload, or NULL when none is there. */
static inline const void *bm_btl_sm_fbox_peek(const struct bm_btl_sm_fbox_rx *rx, uint32_t *len_out,
                                              uint8_t *tag_out)
{
    uint64_t word = atomic_load_explicit((_Atomic uint64_t *)rx->slot, memory_order_acquire);
    if ((uint32_t)word != (uint32_t)(rx->head + 1))
        return NULL;
    *len_out = (uint32_t)(word >> 32) & 0xffffu;
    *tag_out = (uint8_t)(word >> 48);
    return rx->slot + BM_BTL_SM_FBOX_SLOT_HDR;
}

/* Done with the message peek returned (its slot may be reused once published). */
static inline void bm_btl_sm_fbox_consume(struct bm_btl_sm_fbox_rx *rx)
{
    rx->head++;
    bm_btl_sm_fbox_step(rx->ring, &rx->slot, &rx->idx, rx->nslots, rx->slot_size);
}

/* Let the sender reuse the consumed slots. The release orders our reads of
 * them before the sender's next writes. */
static inline void bm_btl_sm_fbox_publish(struct bm_btl_sm_fbox_rx *rx)
{
    if (rx->published != rx->head) {
        atomic_store_explicit(&rx->ring->head, rx->head, memory_order_release);
        rx->published = rx->head;
    }
}

/* Sender: mark ring idx of the receiver as holding data. */
static inline void bm_btl_sm_hint_set(_Atomic uint64_t *words, int idx)
{
    _Atomic uint64_t *w = &words[idx / 64];
    uint64_t bit = UINT64_C(1) << (idx % 64);
    /* Already set (the receiver has not swapped it yet): no write needed.
     * The load must not move above the slot's publication, hence the fence. */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(w, memory_order_relaxed) & bit)
        return;
    atomic_fetch_or_explicit(w, bit, memory_order_seq_cst);
}

/* Receiver: take the bits of word i (0 when none). */
static inline uint64_t bm_btl_sm_hint_take(_Atomic uint64_t *words, int i)
{
    if (atomic_load_explicit(&words[i], memory_order_relaxed) == 0)
        return 0;
    uint64_t bits = atomic_exchange_explicit(&words[i], 0, memory_order_seq_cst);
    /* Pairs with the sender's fence: a sender that saw its bit still set
     * (and so did not write it) published its slot before this point. */
    atomic_thread_fence(memory_order_seq_cst);
    return bits;
}

#endif
