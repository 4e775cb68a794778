/* Tests of the sm transport's fast boxes (sm_fbox.h), laid out as sm lays
 * them out across processes.
 *
 * First, single-threaded and deterministic: stale bytes left in a ring from
 * an earlier lap (a large message's payload, or units a skip jumped over)
 * are made to look exactly like the message word the receiver will expect
 * there in the next lap; the receiver must still see nothing until the
 * sender really writes. Then a threaded stress test: several sender
 * threads, each with its own ring into one receiver's memory, and the
 * receiver's hint bitmap. Senders write messages of varying header and
 * payload lengths (so every offset, packing and skip to unit 0 happens),
 * with payload words forged the same way; the receiver polls only the
 * rings the hints name and checks every byte, the payload alignment,
 * per-sender order and that nothing is lost or duplicated. Small rings
 * make the senders wrap and hit "full" constantly. Run it under TSan
 * (-DBM_SANITIZE=thread): the threads take the same code paths as
 * processes, which TSan cannot see. */
#include "bm_test.h"
#include "btl/sm/sm_fbox.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define UNIT BM_BTL_SM_FBOX_UNIT

static unsigned char *ring_alloc(uint32_t nunits, int count)
{
    size_t bytes = (size_t)count * bm_btl_sm_fbox_ring_bytes(nunits);
    unsigned char *mem = aligned_alloc(BM_BTL_SM_CACHELINE, bytes);
    BM_CHECK(mem != NULL);
    memset(mem, 0, bytes);
    return mem;
}

/* ---- deterministic: stale words never pass for messages --------------------- */

/* Send len bytes (no header) whose interior unit starts hold the words the
 * receiver would expect there one lap later. */
static void send_forged(struct bm_btl_sm_fbox_tx *tx, size_t len)
{
    uint32_t off = bm_btl_sm_fbox_offset(0, len);
    unsigned char *p = bm_btl_sm_fbox_reserve(tx, off, len, false);
    BM_CHECK(p != NULL);
    if (!p)
        return;
    memset(p, 0x5a, len);
    uint32_t k = bm_btl_sm_fbox_units(off, len);
    for (uint32_t j = 1; j < k; j++) {
        uint32_t w = bm_btl_sm_fbox_word(tx->tail + j + tx->nunits, 1, 8);
        size_t at = (size_t)j * UNIT + BM_BTL_SM_FBOX_WORD_AT - off;
        if (at + sizeof(w) <= len)
            memcpy(p + at, &w, sizeof(w));
    }
    bm_btl_sm_fbox_commit(tx, off, (uint32_t)len, 1);
}

/* An 8-byte message (no header): a short one, before its word. */
static unsigned char *send_small(struct bm_btl_sm_fbox_tx *tx)
{
    uint32_t off = bm_btl_sm_fbox_offset(0, 8);
    BM_CHECK_EQ_INT(off, 0);
    unsigned char *p = bm_btl_sm_fbox_reserve(tx, off, 8, false);
    BM_CHECK(p != NULL);
    if (!p)
        return NULL;
    memset(p, 1, 8);
    bm_btl_sm_fbox_commit(tx, off, 8, 1);
    return p;
}

/* Receive one message as sm_fbox_deliver does; its length, or -1 if none. */
static long recv_one(struct bm_btl_sm_fbox_rx *rx)
{
    uint32_t len;
    uint8_t tag;
    if (!bm_btl_sm_fbox_peek(rx, &len, &tag))
        return -1;
    uint64_t pos = rx->head;
    uint32_t k = rx->cur_units;
    uint32_t first = bm_btl_sm_fbox_consume(rx);
    bm_btl_sm_fbox_done(rx, first, pos, k);
    bm_btl_sm_fbox_publish(rx);
    return len;
}

/* One ring of n units, both sides set up; its memory, for free(). */
static unsigned char *ring_setup(uint32_t n, struct bm_btl_sm_fbox_tx *tx,
                                 struct bm_btl_sm_fbox_rx *rx)
{
    unsigned char *mem = ring_alloc(n, 1);
    struct bm_btl_sm_fbox_ring *ring = (struct bm_btl_sm_fbox_ring *)mem;
    bm_btl_sm_fbox_ring_init(ring);
    bm_btl_sm_fbox_tx_init(tx, ring, n);
    bm_btl_sm_fbox_rx_init(rx, ring, n);
    return mem;
}

static void test_stale_words(void)
{
    const uint32_t n = 8;
    struct bm_btl_sm_fbox_tx tx;
    struct bm_btl_sm_fbox_rx rx;
    unsigned char *mem = ring_setup(n, &tx, &rx);
    struct bm_btl_sm_fbox_ring *ring = (struct bm_btl_sm_fbox_ring *)mem;

    /* Lap 0: units 0-3 (forged interior 1-3), then 4-7. */
    size_t big = 4 * UNIT - BM_BTL_SM_FBOX_ALIGN; /* aligned payload: offset 32 */
    BM_CHECK_EQ_INT(bm_btl_sm_fbox_units(bm_btl_sm_fbox_offset(0, big), big), 4);
    send_forged(&tx, big);
    BM_CHECK_EQ_INT(recv_one(&rx), (long)big);
    send_forged(&tx, big);
    BM_CHECK_EQ_INT(recv_one(&rx), (long)big);
    /* Lap 1: unit 0, then the receiver looks at unit 1, whose payload
     * bytes said "position 9" before the receiver scrubbed them. */
    send_small(&tx);
    BM_CHECK_EQ_INT(recv_one(&rx), 8);
    BM_CHECK_EQ_INT(recv_one(&rx), -1);
    send_small(&tx);
    BM_CHECK_EQ_INT(recv_one(&rx), 8);

    /* A skip: fill to unit 6 (position 14), forge unit 7 as if it held
     * the word for lap 2, then send a 3-unit message that must skip 6-7. */
    for (int i = 0; i < 4; i++) {
        send_small(&tx);
        BM_CHECK_EQ_INT(recv_one(&rx), 8);
    }
    BM_CHECK_EQ_INT((long)tx.idx, 6);
    uint32_t forged = bm_btl_sm_fbox_word(15 + n, 1, 8);
    memcpy(mem + sizeof(*ring) + 7 * UNIT + BM_BTL_SM_FBOX_WORD_AT, &forged, sizeof(forged));
    size_t three = 3 * UNIT - BM_BTL_SM_FBOX_ALIGN;
    send_forged(&tx, three);
    BM_CHECK_EQ_INT((long)tx.idx, 3);
    BM_CHECK_EQ_INT(recv_one(&rx), (long)three);
    /* Lap 2: small messages up to unit 7, where the forged word was. */
    for (int i = 0; i < 4; i++) {
        send_small(&tx);
        BM_CHECK_EQ_INT(recv_one(&rx), 8);
    }
    BM_CHECK_EQ_INT((long)rx.idx, 7);
    BM_CHECK_EQ_INT(recv_one(&rx), -1);
    send_small(&tx);
    BM_CHECK_EQ_INT(recv_one(&rx), 8);
    BM_CHECK_EQ_INT(recv_one(&rx), -1);
    free(mem);
}

/* Two MATCH-sized messages (20-byte header + 8 bytes) share one cache
 * line: short messages take a 32-byte unit each. And the 16-bit sequence
 * wraps: more than 2^16 units through a small ring, each message seen once
 * and only after it was sent. */
static void test_packing_and_wrap(void)
{
    const uint32_t n = 8;
    struct bm_btl_sm_fbox_tx tx;
    struct bm_btl_sm_fbox_rx rx;
    unsigned char *mem = ring_setup(n, &tx, &rx);

    uint32_t off = bm_btl_sm_fbox_offset(20, 8);
    BM_CHECK_EQ_INT(off, 0);
    BM_CHECK_EQ_INT(bm_btl_sm_fbox_units(off, 28), 1);
    unsigned char *a = bm_btl_sm_fbox_reserve(&tx, off, 28, false);
    BM_CHECK(a != NULL);
    memset(a, 0xa1, 28);
    bm_btl_sm_fbox_commit(&tx, off, 28, 1);
    unsigned char *b = bm_btl_sm_fbox_reserve(&tx, off, 28, false);
    BM_CHECK(b != NULL);
    memset(b, 0xb2, 28);
    bm_btl_sm_fbox_commit(&tx, off, 28, 1);
    BM_CHECK_EQ_INT((long)(b - a), (long)BM_BTL_SM_FBOX_UNIT);
    BM_CHECK_EQ_INT((long)((uintptr_t)a / BM_BTL_SM_CACHELINE),
                    (long)((uintptr_t)(b + 27) / BM_BTL_SM_CACHELINE));
    uint32_t len;
    uint8_t tag;
    const unsigned char *p = bm_btl_sm_fbox_peek(&rx, &len, &tag);
    BM_CHECK(p == a && len == 28 && tag == 1 && p[27] == 0xa1);
    BM_CHECK_EQ_INT(recv_one(&rx), 28);
    p = bm_btl_sm_fbox_peek(&rx, &len, &tag);
    BM_CHECK(p == b && len == 28 && p[0] == 0xb2);
    BM_CHECK_EQ_INT(recv_one(&rx), 28);
    BM_CHECK_EQ_INT(recv_one(&rx), -1);

    /* A long message (one that does not fit before a word) starts in its
     * second unit. */
    off = bm_btl_sm_fbox_offset(20, 9);
    BM_CHECK_EQ_INT(off, BM_BTL_SM_FBOX_LONG_OFF);
    unsigned char *c = bm_btl_sm_fbox_reserve(&tx, off, 29, false);
    BM_CHECK(c != NULL && (uintptr_t)c % BM_BTL_SM_FBOX_UNIT == 0);
    memset(c, 0xc3, 29);
    bm_btl_sm_fbox_commit(&tx, off, 29, 2);
    p = bm_btl_sm_fbox_peek(&rx, &len, &tag);
    BM_CHECK(p == c && len == 29 && tag == 2 && rx.cur_units == 2);
    BM_CHECK_EQ_INT(recv_one(&rx), 29);
    /* An empty message still takes its unit (its word is there). */
    BM_CHECK_EQ_INT(bm_btl_sm_fbox_offset(0, 0), 0);
    BM_CHECK(bm_btl_sm_fbox_reserve(&tx, 0, 0, false) != NULL);
    bm_btl_sm_fbox_commit(&tx, 0, 0, 4);
    BM_CHECK_EQ_INT((long)tx.tail, 5);
    BM_CHECK_EQ_INT(recv_one(&rx), 0);
    BM_CHECK_EQ_INT(recv_one(&rx), -1);
    /* Whole lines (a stream): a message that ends mid-line is followed by
     * a pad unit, which the receiver steps over. */
    unsigned char *d = bm_btl_sm_fbox_reserve(&tx, 0, 28, true); /* unit 5: ends a line */
    BM_CHECK(d != NULL && tx.cur_pad == 0);
    bm_btl_sm_fbox_commit(&tx, 0, 28, 1);
    unsigned char *e = bm_btl_sm_fbox_reserve(&tx, 0, 28, true); /* unit 6, pad at 7 */
    BM_CHECK(e != NULL && tx.cur_pad == 1);
    bm_btl_sm_fbox_commit(&tx, 0, 28, 1);
    BM_CHECK_EQ_INT((long)tx.tail, 8);
    BM_CHECK_EQ_INT(recv_one(&rx), 28);
    BM_CHECK_EQ_INT(recv_one(&rx), 28);
    BM_CHECK_EQ_INT(recv_one(&rx), -1);
    BM_CHECK_EQ_INT((long)rx.head, 8);

    long wrong = 0;
    for (uint32_t i = 0; i < (1u << 16) + 3 * n; i++) {
        if (recv_one(&rx) != -1)
            wrong++;
        unsigned char *q = send_small(&tx);
        if (!q)
            break;
        if (i % 5 == 0) {
            /* A long one now and then: the skip to unit 0 at odd positions. */
            uint32_t o = bm_btl_sm_fbox_offset(0, 40);
            unsigned char *r = bm_btl_sm_fbox_reserve(&tx, o, 40, i % 3 == 0);
            if (!r) {
                wrong++;
                break;
            }
            bm_btl_sm_fbox_commit(&tx, o, 40, 3);
            if (recv_one(&rx) != 8 || recv_one(&rx) != 40)
                wrong++;
        } else if (recv_one(&rx) != 8) {
            wrong++;
        }
    }
    BM_CHECK_EQ_INT(wrong, 0);
    BM_CHECK(rx.head > (1u << 16) + n);
    free(mem);
}

/* ---- threaded stress ------------------------------------------------------------- */

#define SENDERS  3
#define NUNITS   32
#define MESSAGES 20000

static unsigned char *rings_mem;
static _Atomic uint64_t hints[1];
static _Atomic int senders_done;

static struct bm_btl_sm_fbox_ring *ring_of(int s)
{
    return (struct bm_btl_sm_fbox_ring *)(rings_mem +
                                          (size_t)s * bm_btl_sm_fbox_ring_bytes(NUNITS));
}

static uint8_t pattern(int s, uint64_t seq, size_t i)
{
    return (uint8_t)(s * 31 + seq * 7 + i);
}

/* Lengths of message seq: a header of 9-40 bytes (seq and its own length
 * first) and a payload from 0 up to what half the ring allows. */
static void lengths(uint64_t seq, size_t *hdr, size_t *payload)
{
    uint64_t x = seq * 0x9e3779b97f4a7c15ULL;
    size_t most = NUNITS / 2 * UNIT - BM_BTL_SM_FBOX_OFF_MAX;
    *hdr = 9 + (size_t)(x >> 59);
    *payload = (size_t)((x >> 20) % (most - *hdr + 1));
    if (seq % 3 == 0) { /* plenty of short (one-unit) messages too */
        *hdr = 9 + (size_t)(x >> 59) % 12;
        *payload %= BM_BTL_SM_FBOX_SHORT_MAX + 1 - *hdr;
    }
}

/* Whether byte i of a message at p starts the word of a unit (forged by
 * the sender; only long messages, which start in their second unit, hold
 * one), with seq and the header length (9 bytes) left alone. */
static bool word_at(const unsigned char *p, size_t i, size_t len)
{
    return ((uintptr_t)p + i) % UNIT == BM_BTL_SM_FBOX_WORD_AT && i >= 9 && i + 4 <= len;
}

static void *sender(void *arg)
{
    int s = (int)(intptr_t)arg;
    struct bm_btl_sm_fbox_tx tx;
    bm_btl_sm_fbox_tx_init(&tx, ring_of(s), NUNITS);
    for (uint64_t seq = 0; seq < MESSAGES;) {
        size_t hdr, payload;
        lengths(seq, &hdr, &payload);
        size_t len = hdr + payload;
        uint32_t off = bm_btl_sm_fbox_offset(hdr, payload);
        unsigned char *p = bm_btl_sm_fbox_reserve(&tx, off, len, seq % 2 == 0);
        if (!p) {
            sched_yield();
            continue;
        }
        memcpy(p, &seq, sizeof(seq));
        p[8] = (unsigned char)hdr;
        for (size_t i = 9; i < len; i++)
            p[i] = pattern(s, seq, i);
        for (size_t i = 9; i < len; i++)
            if (word_at(p, i, len)) {
                uint32_t w =
                    bm_btl_sm_fbox_word(tx.tail + (off + i) / UNIT + NUNITS, (uint8_t)(s + 1), 8);
                memcpy(p + i, &w, sizeof(w));
            }
        bm_btl_sm_fbox_commit(&tx, off, (uint32_t)len, (uint8_t)(s + 1));
        bm_btl_sm_hint_set(hints, s);
        seq++;
    }
    atomic_fetch_add(&senders_done, 1);
    return NULL;
}

/* Check one message; the number of wrong things about it. */
static long check_message(int s, uint64_t expect, const unsigned char *p, uint32_t len, uint8_t tag)
{
    uint64_t seq;
    size_t hdr, payload;
    if (len < 9)
        return 1;
    memcpy(&seq, p, sizeof(seq));
    lengths(seq, &hdr, &payload);
    long bad = 0;
    if (seq != expect || tag != s + 1 || p[8] != hdr || len != hdr + payload)
        return 1;
    if (payload >= BM_BTL_SM_FBOX_ALIGN_MIN && ((uintptr_t)p + hdr) % BM_BTL_SM_FBOX_ALIGN)
        bad++;
    /* A short message fills its unit from the start; a long one with no
     * payload to align starts at its second unit's. */
    if (payload < BM_BTL_SM_FBOX_ALIGN_MIN && (uintptr_t)p % UNIT != 0)
        bad++;
    for (size_t i = 9; i < len; i++) {
        bool forged = false;
        for (size_t b = 0; b < 4 && b <= i; b++)
            if (word_at(p, i - b, len))
                forged = true;
        if (!forged && p[i] != pattern(s, seq, i))
            bad++;
    }
    return bad;
}

static void test_threads(void)
{
    rings_mem = ring_alloc(NUNITS, SENDERS);
    struct bm_btl_sm_fbox_rx rx[SENDERS];
    for (int s = 0; s < SENDERS; s++) {
        bm_btl_sm_fbox_ring_init(ring_of(s));
        bm_btl_sm_fbox_rx_init(&rx[s], ring_of(s), NUNITS);
    }
    atomic_store(&hints[0], 0);

    pthread_t th[SENDERS];
    for (int s = 0; s < SENDERS; s++)
        BM_CHECK(pthread_create(&th[s], NULL, sender, (void *)(intptr_t)s) == 0);

    uint64_t expect[SENDERS] = {0};
    long bad = 0, total = 0, idle_with_data = 0;
    for (;;) {
        int finished = atomic_load(&senders_done) == SENDERS;
        uint64_t bits = bm_btl_sm_hint_take(hints, 0);
        /* Nothing flagged: give the core to a sender. Four threads share
         * two cores (fewer under load); a receiver spinning on an empty
         * bitmap would only delay the senders it waits for, so the run time
         * depends on the work (messages), not on how the scheduler slices
         * the spinning. */
        if (!bits && !finished)
            sched_yield();
        while (bits) {
            int s = __builtin_ctzll(bits);
            bits &= bits - 1;
            uint32_t len;
            uint8_t tag;
            const unsigned char *p;
            while ((p = bm_btl_sm_fbox_peek(&rx[s], &len, &tag)) != NULL) {
                uint64_t pos = rx[s].head;
                uint32_t k = rx[s].cur_units;
                uint32_t first = bm_btl_sm_fbox_consume(&rx[s]);
                bad += check_message(s, expect[s], p, len, tag);
                bm_btl_sm_fbox_done(&rx[s], first, pos, k);
                expect[s]++;
                total++;
            }
            bm_btl_sm_fbox_publish(&rx[s]);
        }
        if (finished) {
            /* Every sender is done and its last bit was taken above: a
             * message still in a ring here was stranded by the hints. */
            for (int s = 0; s < SENDERS; s++) {
                uint32_t len;
                uint8_t tag;
                if (bm_btl_sm_fbox_peek(&rx[s], &len, &tag))
                    idle_with_data++;
            }
            if (atomic_load(&hints[0]) == 0)
                break;
        }
    }
    for (int s = 0; s < SENDERS; s++)
        pthread_join(th[s], NULL);

    BM_CHECK_EQ_INT(bad, 0);
    BM_CHECK_EQ_INT(idle_with_data, 0);
    BM_CHECK_EQ_INT(total, (long)SENDERS * MESSAGES);
    for (int s = 0; s < SENDERS; s++)
        BM_CHECK_EQ_INT((long)expect[s], MESSAGES);
    free(rings_mem);
}

int main(void)
{
    test_stale_words();
    test_packing_and_wrap();
    test_threads();
    return bm_test_summary("test_sm_fastbox");
}
