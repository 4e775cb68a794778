/* Fast boxes of the sm transport: one single-producer single-consumer ring
 * per (sender, receiver) pair, in the receiver's segment, for small
 * messages. A sender copies header and payload straight into the ring and
 * publishes the message with one release store of its first word; the
 * receiver polls that word with an acquire load. No descriptor, no atomic
 * read-modify-write on the data path, no fragment to give back.
 *
 * The ring's layout (units, the message word, skip words, the rule that
 * keeps stale words from passing for new ones) is a shared-memory wire
 * format and is defined in sm_proto.h; this header is the algorithm on top
 * of it. The receiver publishes how many units it has consumed (head) on a
 * line of its own; the sender keeps its own position privately and reads
 * head only when its cached copy says the ring is full.
 *
 * Hints: each receiver keeps a bitmap (one bit per local sender) of rings
 * that may hold data, so an idle progress call reads one word per 64 local
 * peers instead of every ring. The sender sets its bit with a fetch-or
 * after publishing the message; the receiver swaps a whole word to zero
 * before draining the rings it names. Both are sequentially consistent
 * read-modify-writes of the same word, so either the receiver's swap sees
 * the bit, or the sender's fetch-or comes after the swap and leaves the bit
 * for the next progress call: a message is never stranded.
 *
 * Header-only so the threaded stress test can use it inside one process. */
#ifndef BM_BTL_SM_FBOX_H
#define BM_BTL_SM_FBOX_H

#include "btl/sm/sm_proto.h"
#include "util/mem.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Units per cache line. */
#define BM_BTL_SM_FBOX_PER_LINE (BM_BTL_SM_CACHELINE / BM_BTL_SM_FBOX_UNIT)

/* The sender's private side of a ring. */
struct bm_btl_sm_fbox_tx {
    struct bm_btl_sm_fbox_ring *ring; /* in the receiver's segment */
    unsigned char *units;             /* unit 0 */
    uint64_t tail;                    /* units written */
    uint64_t head_cache;              /* last head read from the ring */
    uint32_t idx;                     /* tail % nunits, kept so no division is needed */
    uint32_t nunits;
    uint32_t cur_units; /* units of the message reserve made room for */
    uint32_t cur_pad;   /* 1: a pad unit follows it, so the next message starts a line */
};

/* The receiver's private side of a ring. */
struct bm_btl_sm_fbox_rx {
    struct bm_btl_sm_fbox_ring *ring; /* in our own segment */
    unsigned char *units;             /* unit 0 */
    uint64_t head;                    /* units consumed */
    uint64_t published;               /* head as last stored in the ring */
    uint32_t idx;                     /* head % nunits */
    uint32_t nunits;
    uint32_t cur_units; /* units of the message peek returned */
    int depth;          /* deliveries in progress: publish only from the outermost */
};

static inline void bm_btl_sm_fbox_ring_init(struct bm_btl_sm_fbox_ring *r)
{
    atomic_store_explicit(&r->head, 0, memory_order_relaxed);
}

static inline unsigned char *bm_btl_sm_fbox_unit0(struct bm_btl_sm_fbox_ring *r)
{
    return (unsigned char *)(r + 1);
}

static inline void bm_btl_sm_fbox_tx_init(struct bm_btl_sm_fbox_tx *tx,
                                          struct bm_btl_sm_fbox_ring *r, uint32_t nunits)
{
    *tx = (struct bm_btl_sm_fbox_tx){.ring = r, .units = bm_btl_sm_fbox_unit0(r), .nunits = nunits};
}

static inline void bm_btl_sm_fbox_rx_init(struct bm_btl_sm_fbox_rx *rx,
                                          struct bm_btl_sm_fbox_ring *r, uint32_t nunits)
{
    *rx = (struct bm_btl_sm_fbox_rx){.ring = r, .units = bm_btl_sm_fbox_unit0(r), .nunits = nunits};
}

static inline _Atomic uint32_t *bm_btl_sm_fbox_word_at(unsigned char *units, uint32_t idx)
{
    return (_Atomic uint32_t *)(units + (size_t)idx * BM_BTL_SM_FBOX_UNIT + BM_BTL_SM_FBOX_WORD_AT);
}

/* Room for k units from the current position (one lap at most): checks the
 * cached head first, the shared one only when that says full. */
static inline int bm_btl_sm_fbox_room(struct bm_btl_sm_fbox_tx *tx, uint32_t k)
{
    if (tx->tail + k - tx->head_cache > tx->nunits) {
        tx->head_cache = atomic_load_explicit(&tx->ring->head, memory_order_acquire);
        if (tx->tail + k - tx->head_cache > tx->nunits)
            return 0;
    }
    return 1;
}

/* Space for a message of len bytes at offset off of its first unit, or
 * NULL when the ring is full. Nothing is visible to the receiver until
 * commit. The message must fit in half the ring (see the component's
 * parameter checks), so that a skip never needs the whole ring.
 *
 * whole: end the message's last line with it (a pad unit after a message
 * that ends mid-line), so that the next message starts a line of its own.
 * Two small messages share a line, which halves the lines a ping-pong's
 * answers and a stream's receiver fetch; but in a stream whose receiver
 * keeps up, the receiver reads each line after its first message and the
 * sender must then take it back for the second: windows of 64 x 8 B were
 * slower (p50 per message +23%) while 8-byte latency gained 4-5% (README
 * "Message rate: two messages per line"). sendi asks for whole lines when
 * it sends again with nothing received in between (a stream). */
static inline void *bm_btl_sm_fbox_reserve(struct bm_btl_sm_fbox_tx *tx, uint32_t off, size_t len,
                                           bool whole)
{
    uint32_t k = bm_btl_sm_fbox_units(off, len);
    tx->cur_units = k;
    if (__builtin_expect(tx->idx + k > tx->nunits, 0)) {
        /* Would run past the end: skip to unit 0 once there is room for
         * the skipped units and the message. */
        uint32_t rest = tx->nunits - tx->idx;
        tx->cur_pad = whole && k % BM_BTL_SM_FBOX_PER_LINE != 0;
        if (!bm_btl_sm_fbox_room(tx, rest + k + tx->cur_pad))
            return NULL;
        atomic_store_explicit(bm_btl_sm_fbox_word_at(tx->units, tx->idx),
                              bm_btl_sm_fbox_word(tx->tail, BM_BTL_SM_FBOX_TAG_SKIP, 0),
                              memory_order_release);
        tx->tail += rest;
        tx->idx = 0;
    } else {
        /* nunits is whole lines: a pad never runs past the end. */
        tx->cur_pad = whole && (tx->idx + k) % BM_BTL_SM_FBOX_PER_LINE != 0;
        if (!bm_btl_sm_fbox_room(tx, k + tx->cur_pad))
            return NULL;
    }
    return tx->units + (size_t)tx->idx * BM_BTL_SM_FBOX_UNIT + off;
}

/* Units ahead of the next message whose line the sender asks to own
 * (write prefetch) as it publishes a message: 4 lines. */
#define BM_BTL_SM_FBOX_AHEAD 8u
/* Units past the next message whose line a receiver in a stream asks for
 * (bm_btl_sm_fbox_deliver): median per 8-byte message in windows of 64
 * (with 64-byte units), 2 lines 48.8 ns, 4 39.7, 8 37.1 (none 64.6). 8
 * lines. */
#define BM_BTL_SM_FBOX_RX_AHEAD 16u

/* After a message of k > BM_BTL_SM_FBOX_AHEAD units (a payload of a few
 * hundred bytes or more), ask for the lines of the units the next message
 * of a stream of such messages will fill: those of the k - 1 units after
 * the new position, as far as the cached head says they are free. Not the
 * line of the position itself, which an idle receiver polls. Those lines were
 * read and scrubbed by the receiver a lap ago, so each store of the next
 * message would wait for its line to come back from the receiver's core,
 * and stores reach the cache in order: a 2 KiB message (33 lines) held the
 * sender's next stores for ~1300 cycles (rdtsc around the packing of a
 * non-contiguous 2 KiB send that follows: p50 1272 cycles, 52 after an
 * mfence that took the wait), where the requests made now run while the
 * caller does its work between two sends (README "Fast boxes"). */
static __attribute__((noinline, cold)) void
bm_btl_sm_fbox_prefetch_next(struct bm_btl_sm_fbox_tx *tx, uint32_t k)
{
    uint64_t room = tx->nunits - (tx->tail - tx->head_cache);
    if (k > room)
        k = (uint32_t)room;
    /* From the line after the position's, one request per line. */
    for (uint32_t i = BM_BTL_SM_FBOX_PER_LINE - tx->idx % BM_BTL_SM_FBOX_PER_LINE; i < k;
         i += BM_BTL_SM_FBOX_PER_LINE) {
        uint32_t at = tx->idx + i;
        if (at >= tx->nunits)
            at -= tx->nunits;
        bm_util_prefetchw(tx->units + (size_t)at * BM_BTL_SM_FBOX_UNIT);
    }
}

/* Publish the reserved message: len bytes at offset off (as given to
 * reserve: 0 for a short message), for receive callback tag; a long one
 * gets its second word first. Then ask for the line
 * BM_BTL_SM_FBOX_AHEAD units past the next message: the receiver read it a
 * lap ago, so writing it takes its ownership back from the receiver's
 * core, and a store waiting for that holds every later store in the store
 * buffer (stores reach the cache in order); with the request made a few
 * messages early, a stream of messages does not wait for it (bm_mr's
 * sender stalled on its first store after sendi while the buffer was
 * full). The receiver polls only the next message's line, which is not
 * touched. */
static inline void bm_btl_sm_fbox_commit(struct bm_btl_sm_fbox_tx *tx, uint32_t off, uint32_t len,
                                         uint8_t tag)
{
    _Atomic uint32_t *w = bm_btl_sm_fbox_word_at(tx->units, tx->idx);
    uint32_t short_len = len;
    uint32_t k = tx->cur_units;
    if (__builtin_expect(off != 0, 0)) {
        atomic_store_explicit(w - 1, bm_btl_sm_fbox_ext(len, off), memory_order_relaxed);
        short_len = BM_BTL_SM_FBOX_LONG;
    }
    if (tx->cur_pad) {
        /* Before the message's word: seen with it. */
        atomic_store_explicit(bm_btl_sm_fbox_word_at(tx->units, tx->idx + k),
                              bm_btl_sm_fbox_word(tx->tail + k, BM_BTL_SM_FBOX_TAG_PAD, 0),
                              memory_order_relaxed);
        k++;
    }
    atomic_store_explicit(w, bm_btl_sm_fbox_word(tx->tail, tag, short_len), memory_order_release);
    tx->tail += k;
    tx->idx += k;
    if (tx->idx == tx->nunits)
        tx->idx = 0;
    uint32_t ahead = tx->idx + BM_BTL_SM_FBOX_AHEAD;
    if (ahead >= tx->nunits)
        ahead -= tx->nunits;
    bm_util_prefetchw(tx->units + (size_t)ahead * BM_BTL_SM_FBOX_UNIT);
    if (__builtin_expect(k > BM_BTL_SM_FBOX_AHEAD, 0))
        bm_btl_sm_fbox_prefetch_next(tx, k);
}

/* Rewrite the word of units [idx, idx + n) with words naming their
 * own positions from pos on: no stale bytes there can pass for a message
 * in a later lap (the file comment). */
static inline void bm_btl_sm_fbox_scrub(struct bm_btl_sm_fbox_rx *rx, uint32_t idx, uint64_t pos,
                                        uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        atomic_store_explicit(bm_btl_sm_fbox_word_at(rx->units, idx + i),
                              bm_btl_sm_fbox_word(pos + i, BM_BTL_SM_FBOX_TAG_SKIP, 0),
                              memory_order_relaxed);
}

/* Follow the skip word at the receiver's position to unit 0, scrubbing the
 * units it jumps over. */
static inline void bm_btl_sm_fbox_skip(struct bm_btl_sm_fbox_rx *rx)
{
    uint32_t rest = rx->nunits - rx->idx;
    bm_btl_sm_fbox_scrub(rx, rx->idx + 1, rx->head + 1, rest - 1);
    rx->head += rest;
    rx->idx = 0;
}

/* Whether the receiver's next word names its position (a message or a
 * skip): the one load an idle poll makes per ring. */
static inline int bm_btl_sm_fbox_ready(const struct bm_btl_sm_fbox_rx *rx)
{
    uint32_t word =
        atomic_load_explicit(bm_btl_sm_fbox_word_at(rx->units, rx->idx), memory_order_relaxed);
    return (uint16_t)word == (uint16_t)(rx->head + 1);
}

/* The next message (its first byte), or NULL when none is there. Follows
 * a skip word to unit 0. */
static inline const void *bm_btl_sm_fbox_peek(struct bm_btl_sm_fbox_rx *rx, uint32_t *len_out,
                                              uint8_t *tag_out)
{
    for (;;) {
        unsigned char *unit = rx->units + (size_t)rx->idx * BM_BTL_SM_FBOX_UNIT;
        uint32_t word = atomic_load_explicit((_Atomic uint32_t *)(unit + BM_BTL_SM_FBOX_WORD_AT),
                                             memory_order_acquire);
        if ((uint16_t)word != (uint16_t)(rx->head + 1))
            return NULL;
        uint8_t tag = (uint8_t)(word >> 16);
        if (__builtin_expect(tag < BM_BTL_SM_FBOX_TAG_PAD, 1)) {
            uint32_t len = word >> 24;
            *tag_out = tag;
            /* A message address computed from the word would hold every
             * read of the message until the word's load completes; a
             * predicted branch (short) lets them start with it (measured:
             * 15 ns of 8-byte latency). The empty asm keeps the branch a
             * branch, not a conditional move. */
            unsigned char *msg = unit;
            rx->cur_units = 1;
            if (__builtin_expect(len == BM_BTL_SM_FBOX_LONG, 0)) {
                uint32_t ext = atomic_load_explicit(
                    (_Atomic uint32_t *)(unit + BM_BTL_SM_FBOX_EXT_AT), memory_order_relaxed);
                uint32_t off = (ext >> 16) & 0xffu;
                len = ext & 0xffffu;
                rx->cur_units = bm_btl_sm_fbox_units(off, len);
                msg = unit + off;
                __asm__("" : "+r"(msg));
            }
            *len_out = len;
            return msg;
        }
        if (tag == BM_BTL_SM_FBOX_TAG_PAD) {
            rx->head++; /* an unused unit: the next message starts a line */
            if (++rx->idx == rx->nunits)
                rx->idx = 0;
            continue;
        }
        bm_btl_sm_fbox_skip(rx);
    }
}

/* Step past the message peek returned, before handling it (a handler that
 * polls again must not see it twice). Returns its first unit for
 * bm_btl_sm_fbox_done; its position is head before the call, its size
 * cur_units. */
static inline uint32_t bm_btl_sm_fbox_consume(struct bm_btl_sm_fbox_rx *rx)
{
    uint32_t first = rx->idx;
    rx->head += rx->cur_units;
    rx->idx += rx->cur_units;
    if (rx->idx == rx->nunits)
        rx->idx = 0;
    return first;
}

/* Done with the message that started at position pos, unit first, and
 * took k units: scrub its units after the first (its payload is dead). */
static inline void bm_btl_sm_fbox_done(struct bm_btl_sm_fbox_rx *rx, uint32_t first, uint64_t pos,
                                       uint32_t k)
{
    if (k > 1)
        bm_btl_sm_fbox_scrub(rx, first + 1, pos + 1, k - 1);
}

/* Let the sender reuse the consumed units. The release orders our reads
 * (and scrubs) of them before the sender's next writes. */
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
