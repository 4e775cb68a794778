/* The fast-box path of the sm transport (the rings themselves are in
 * sm_fbox.h): sendi copies a small message straight into the sender's ring
 * in the receiver's segment, and progress delivers from the rings the hint
 * bitmap names, handing the receive callback a segment that points into the
 * ring. Order with the FIFO is kept both ways: a sender uses its ring only
 * while none of its FIFO fragments to that peer is still out (so a ring
 * message never overtakes a fragment), and the receiver drains a sender's
 * ring before delivering a FIFO fragment from it (the fragment was sent
 * later, and seeing it proves the ring messages are visible). A sender
 * backs its ring with memory only after BM_BTL_SM_FBOX_AFTER messages to
 * that peer (bm_btl_sm_fbox_enable), so idle pairs cost nothing. */
#define BM_LOG_SUBSYS "btl/sm"
#include "btl/sm/sm.h"
#include "util/log.h"
#include "util/mem.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Copy a transport header of n bytes. The PML builds its header on the
 * stack with one store per 4-byte field just before sendi; the overlapping
 * 16-byte loads of bm_util_copy span several of those stores, cannot be
 * forwarded from the store buffer, and wait until every older store has
 * reached the cache: the previous message's ring line among them, whose
 * ownership is still on its way back from the receiver's core. So a
 * header of 16-32 bytes in whole 4-byte words (the MATCH header is 20)
 * moves in 4-byte loads, each forwarded from one store: the first 16 bytes
 * and the last 16 (they may overlap), straight-line. The empty asm keeps
 * the compiler from merging the loads back into vector loads. */
static inline __attribute__((always_inline)) void sm_copy_hdr(unsigned char *d, const void *hdr,
                                                              size_t n)
{
    const unsigned char *s = hdr;
    if (__builtin_expect(n < 16 || n > 32 || n % 4 != 0, 0)) {
        bm_util_copy(d, hdr, n);
        return;
    }
    const unsigned char *t = s + n - 16;
    unsigned char *e = d + n - 16;
    uint32_t a0, a1, a2, a3, b0, b1, b2, b3;
    memcpy(&a0, s, 4);
    memcpy(&a1, s + 4, 4);
    memcpy(&a2, s + 8, 4);
    memcpy(&a3, s + 12, 4);
    memcpy(&b0, t, 4);
    memcpy(&b1, t + 4, 4);
    memcpy(&b2, t + 8, 4);
    memcpy(&b3, t + 12, 4);
    __asm__("" : "+r"(a0), "+r"(a1), "+r"(a2), "+r"(a3), "+r"(b0), "+r"(b1), "+r"(b2), "+r"(b3));
    /* Volatile: stores of 4-byte words the compiler would merge into
     * vector stores, with shuffles to build them (more instructions). */
    volatile uint32_t *vd = (volatile uint32_t *)(void *)d, *ve = (volatile uint32_t *)(void *)e;
    vd[0] = a0;
    vd[1] = a1;
    vd[2] = a2;
    vd[3] = a3;
    ve[0] = b0;
    ve[1] = b1;
    ve[2] = b2;
    ve[3] = b3;
}

/* sendi's ring: BM_BTL_DONE when the ring took the message. tx_on and
 * wait are the ring's state: fbox_tx and fbox_wait, or under
 * MPI_THREAD_MULTIPLE (mt) their locked copies, read under the endpoint's
 * lock while the module's lock guards the writers of outstanding and
 * failed (relaxed atomic loads then; README "Threads"). */
static inline __attribute__((always_inline)) int
sm_ring_send(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep, const void *hdr,
             size_t hdr_len, const void *payload, size_t payload_len, bm_btl_tag_t tag,
             struct bm_btl_descriptor **des_out, bool *tx_on, uint32_t *wait, bool mt)
{
    size_t len = hdr_len + payload_len;
    /* fbox_max is at most max_send_size (sm_fbox_params_check); a failed
     * peer's sends and bad tags take the FIFO path, which reports them. */
    if (__builtin_expect(
            *tx_on &&
                (mt ? __atomic_load_n(&ep->outstanding, __ATOMIC_RELAXED) : ep->outstanding) == 0 &&
                len <= sm->config.fbox_max && tag < BM_BTL_TAG_MAX &&
                !(mt ? __atomic_load_n(&ep->failed, __ATOMIC_RELAXED) : ep->failed),
            1)) {
        uint32_t off = bm_btl_sm_fbox_offset(hdr_len, payload_len);
        /* Nothing received since our last message to this peer: a stream,
         * whose messages take whole lines (bm_btl_sm_fbox_reserve). */
        uint64_t rx_count = __atomic_load_n(&sm->rx_count, __ATOMIC_RELAXED);
        unsigned char *p = bm_btl_sm_fbox_reserve(&ep->tx, off, len, rx_count == ep->tx_rx_mark);
        if (__builtin_expect(p != NULL, 1)) {
            ep->tx_rx_mark = rx_count;
            sm_copy_hdr(p, hdr, hdr_len);
            bm_util_copy(p + hdr_len, payload, payload_len);
            bm_util_xproc_release();
            bm_btl_sm_fbox_commit(&ep->tx, off, (uint32_t)len, tag);
            if (ep->tx_hint)
                bm_btl_sm_hint_set((_Atomic uint64_t *)(ep->seg + ep->ctl->hint_offset),
                                   sm->local_rank);
            bm_btl_sm_bell_check(sm, ep);
            if (des_out)
                *des_out = NULL;
            return BM_BTL_DONE;
        }
    } else if (*wait > 0 && !*tx_on && ep->fbox && --*wait == 0) {
        bm_btl_sm_fbox_enable(sm, ep); /* the next message may use the ring */
    }
    return BM_ERR_OUT_OF_RESOURCE;
}

/* Under MPI_THREAD_MULTIPLE (README "Threads"): the ring under the peer's
 * send lock alone, so that threads sending to different peers meet on no
 * lock and a sender does not wait for the thread in progress; the FIFO,
 * after the peer's lock is given back, under none (the fragment pool is
 * lock-free and the FIFO takes appends from any number of senders: since
 * 2026-11-29, fifth session; it took the module's lock before). Each
 * thread's messages keep their order: the ring is used
 * only while none of the FIFO fragments to that peer is out, and what this
 * thread pushed is counted before its next look. */
static __attribute__((noinline)) int
sm_sendi_mt(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep, const void *hdr,
            size_t hdr_len, const void *payload, size_t payload_len, uint8_t order, uint32_t flags,
            bm_btl_tag_t tag, struct bm_btl_descriptor **des_out)
{
    bm_util_lock_take(&ep->lock);
    int rc = sm_ring_send(sm, ep, hdr, hdr_len, payload, payload_len, tag, des_out, &ep->fbox_tx_mt,
                          &ep->fbox_wait_mt, true);
    bm_util_lock_give(&ep->lock);
    if (rc == BM_BTL_DONE)
        return rc;
    return bm_btl_sm_sendi_fifo(sm, ep, hdr, hdr_len, payload, payload_len, order, flags, tag,
                                des_out);
}

/* sendi: the ring when it can take the message, else a fragment through the
 * FIFO (bm_btl_sm_sendi_fifo). The ring's path is inline here, with every
 * condition in one test: it used to be sendi's checks, then a call to a
 * separate ring function with its own frame and the same length tests.
 * Under MPI_THREAD_MULTIPLE the test fails at once (fbox_tx stays false)
 * and the locked path takes over, so the ring's path pays nothing for it. */
int bm_btl_sm_sendi(struct bm_btl_module *m, struct bm_btl_endpoint *bep, const void *hdr,
                    size_t hdr_len, const void *payload, size_t payload_len, uint8_t order,
                    uint32_t flags, bm_btl_tag_t tag, struct bm_btl_descriptor **des_out)
{
    struct bm_btl_sm_module *sm = (struct bm_btl_sm_module *)m;
    struct bm_btl_sm_endpoint *ep = (struct bm_btl_sm_endpoint *)bep;
    if (sm_ring_send(sm, ep, hdr, hdr_len, payload, payload_len, tag, des_out, &ep->fbox_tx,
                     &ep->fbox_wait, false) == BM_BTL_DONE)
        return BM_BTL_DONE;
    if (__builtin_expect(sm->mt, 0))
        return sm_sendi_mt(sm, ep, hdr, hdr_len, payload, payload_len, order, flags, tag, des_out);
    return bm_btl_sm_sendi_fifo(sm, ep, hdr, hdr_len, payload, payload_len, order, flags, tag,
                                des_out);
}

/* Deliver up to budget messages of ep's ring. Only the outermost of nested
 * deliveries (a handler that polls again) publishes the new head: an outer
 * handler may still be reading its message's units. */
int bm_btl_sm_fbox_deliver(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep, int budget)
{
    struct bm_btl_module *m = &sm->super;
    struct bm_btl_sm_fbox_rx *rx = &ep->rx;
    int n = 0;
    uint32_t len;
    uint8_t tag;
    const void *data;
    rx->depth++;
    while (n < budget && (data = bm_btl_sm_fbox_peek(rx, &len, &tag)) != NULL) {
        struct bm_btl_segment seg = {(void *)(uintptr_t)data, len};
        bm_btl_tag_t t = tag < BM_BTL_TAG_MAX ? tag : BM_BTL_TAG_BTL;
        struct bm_btl_recv_desc d = {
            .endpoint = (struct bm_btl_endpoint *)ep,
            .peer = ep->rank,
            .tag = t,
            .seg_count = 1,
            .seg = &seg,
        };
        uint64_t pos = rx->head;
        uint32_t k = rx->cur_units;
        uint32_t first = bm_btl_sm_fbox_consume(rx);
        if (n > 0) {
            /* A stream (a second message in this call): ask for the line
             * BM_BTL_SM_FBOX_RX_AHEAD units past the next message, most
             * likely written already, so that its transfer from the
             * sender's core overlaps this message's work instead of
             * stalling the next peek: one cross-core miss per 8-byte
             * message was the rate (windows of 64 x 8 B, median window
             * 64 -> 37 ns per message). Not for the first message of a
             * call: in a ping-pong that line is not written yet, and
             * reading it would take it from the sender, which owns it
             * (bm_btl_sm_fbox_commit's write prefetch). */
            uint32_t ahead = rx->idx + BM_BTL_SM_FBOX_RX_AHEAD;
            if (ahead >= rx->nunits)
                ahead -= rx->nunits;
            __builtin_prefetch(rx->units + (size_t)ahead * BM_BTL_SM_FBOX_UNIT, 0, 3);
        }
        bm_util_xproc_acquire();
        m->recv_cb[t].cb(m, &d, m->recv_cb[t].cbdata);
        bm_btl_sm_fbox_done(rx, first, pos, k);
        n++;
    }
    if (--rx->depth == 0)
        bm_btl_sm_fbox_publish(rx);
    if (n > 0)
        __atomic_store_n(&sm->rx_count, sm->rx_count + (uint64_t)n, __ATOMIC_RELAXED);
    return n;
}

/* Whether the n bytes at a and b are equal: recv_take's key (the PML's
 * 20-byte MATCH header) in three loads a side, not a call into libc. */
static inline bool sm_key_eq(const unsigned char *a, const unsigned char *b, size_t n)
{
    uint64_t x, y;
    for (; n >= 8; n -= 8, a += 8, b += 8) {
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (x != y)
            return false;
    }
    if (n >= 4) {
        uint32_t u, w;
        memcpy(&u, a, 4);
        memcpy(&w, b, 4);
        if (u != w)
            return false;
        n -= 4;
        a += 4;
        b += 4;
    }
    for (; n > 0; n--)
        if (*a++ != *b++)
            return false;
    return true;
}

/* recv_take (btl.h): the ring's next message, when it is the one the
 * caller waits for, copied out and consumed here with no receive
 * descriptor and no callback. The ring's head is always the next message
 * from ep in order: a sender uses its ring only while none of its FIFO
 * fragments to us is out, and what it sends by the FIFO later waits for
 * the ring to be drained (the file comment). A skip word is followed as
 * deliver would. */
static __attribute__((noinline)) int64_t sm_take(struct bm_btl_sm_fbox_rx *rx, bm_btl_tag_t tag,
                                                 const void *key, size_t key_len, void *buf,
                                                 size_t cap)
{
    uint32_t len;
    uint8_t t;
    const unsigned char *msg = bm_btl_sm_fbox_peek(rx, &len, &t);
    if (!msg)
        return BM_BTL_TAKE_NONE; /* a skip word, followed: the next unit is empty */
    bm_util_xproc_acquire();
    if (t != tag || len < key_len || len - key_len > cap || !sm_key_eq(msg, key, key_len))
        return BM_BTL_TAKE_OTHER;
    size_t n = len - key_len;
    uint64_t pos = rx->head;
    uint32_t k = rx->cur_units;
    uint32_t first = bm_btl_sm_fbox_consume(rx);
    bm_util_copy(buf, msg + key_len, n);
    bm_btl_sm_fbox_done(rx, first, pos, k);
    bm_btl_sm_fbox_publish(rx);
    return (int64_t)n;
}

/* The look of a waiting receive: a few loads and branches when nothing is
 * there, the rest out of line (sm_take). An empty ring with fragments in
 * our FIFO answers OTHER: the message may be among them (a sender whose
 * fragments were out, or whose ring is not backed yet), and progress
 * delivers them; a caller that only looks would otherwise wait for its
 * look budget with the message already here. */
int64_t bm_btl_sm_recv_take(struct bm_btl_module *m, struct bm_btl_endpoint *bep, bm_btl_tag_t tag,
                            const void *key, size_t key_len, void *buf, size_t cap)
{
    struct bm_btl_sm_module *sm = (struct bm_btl_sm_module *)m;
    struct bm_btl_sm_endpoint *ep = (struct bm_btl_sm_endpoint *)bep;
    struct bm_btl_sm_fbox_rx *rx = &ep->rx;
    if (__builtin_expect(!ep->fbox || sm->mt || rx->depth != 0 || ep->failed, 0))
        return BM_BTL_TAKE_OTHER;
    if (!bm_btl_sm_fbox_ready(rx))
        return bm_btl_sm_fifo_ready(&sm->ctl->fifo, &sm->reader) ? BM_BTL_TAKE_OTHER
                                                                 : BM_BTL_TAKE_NONE;
    int64_t rc = sm_take(rx, tag, key, key_len, buf, cap);
    if (rc >= 0)
        __atomic_store_n(&sm->rx_count, sm->rx_count + 1, __ATOMIC_RELAXED);
    return rc;
}

int bm_btl_sm_fbox_drain(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep)
{
    if (!ep->fbox)
        return 0;
    return bm_btl_sm_fbox_deliver(sm, ep, (int)ep->rx.nunits);
}

int bm_btl_sm_fbox_poll(struct bm_btl_sm_module *sm, int budget)
{
    int n = 0;
    for (int w = 0; w < sm->nhint_words; w++) {
        uint64_t bits = bm_btl_sm_hint_take(sm->hints, w);
        while (bits) {
            int b = __builtin_ctzll(bits);
            bits &= bits - 1;
            struct bm_btl_sm_endpoint *ep =
                __atomic_load_n(&sm->by_local[w * 64 + b], __ATOMIC_ACQUIRE);
            if (!ep)
                continue;
            int left = budget - n;
            if (left <= 0) {
                /* Out of budget: leave the bit for the next call. */
                bm_btl_sm_hint_set(sm->hints, w * 64 + b);
                continue;
            }
            n += bm_btl_sm_fbox_deliver(sm, ep, left);
            /* Stopped by the budget with messages left: look again next time. */
            if (n >= budget && bm_btl_sm_fbox_ready(&ep->rx))
                bm_btl_sm_hint_set(sm->hints, w * 64 + b);
        }
    }
    return n;
}

void bm_btl_sm_fbox_connect(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep)
{
    const struct bm_btl_sm_seg_ctl *peer = ep->ctl, *own = sm->ctl;
    ep->fbox = false;
    if (!own->fbox_units || !peer->fbox_units || ep->local_rank < 0 ||
        (uint32_t)ep->local_rank >= own->local_size || sm->local_rank < 0 ||
        (uint32_t)sm->local_rank >= peer->local_size || ep->local_rank == sm->local_rank ||
        sm->by_local[ep->local_rank])
        return;
    bm_btl_sm_fbox_tx_init(
        &ep->tx,
        (struct bm_btl_sm_fbox_ring *)(ep->seg + peer->fbox_offset +
                                       (size_t)sm->local_rank * peer->fbox_stride),
        peer->fbox_units);
    ep->tx_hint = peer->fbox_hints != 0;
    bm_btl_sm_fbox_rx_init(
        &ep->rx,
        (struct bm_btl_sm_fbox_ring *)(sm->seg + own->fbox_offset +
                                       (size_t)ep->local_rank * own->fbox_stride),
        own->fbox_units);
    ep->fbox = true;
    /* Release: under MPI_THREAD_MULTIPLE progress finds the ring through
     * these without the module's lock (sm_progress_mt), and must see rx set
     * up when it does. */
    sm->rings[sm->nrings] = ep;
    __atomic_store_n(&sm->nrings, sm->nrings + 1, __ATOMIC_RELEASE);
    __atomic_store_n(&sm->by_local[ep->local_rank], ep, __ATOMIC_RELEASE);
    /* Under MPI_THREAD_MULTIPLE the unlocked fbox_tx and fbox_wait are
     * never written (they stay false and 0: sm_sendi_mt). */
    if (sm->mt)
        ep->fbox_wait_mt = (uint32_t)sm->config.fbox_after;
    else
        ep->fbox_wait = (uint32_t)sm->config.fbox_after;
    if (sm->config.fbox_after == 0)
        bm_btl_sm_fbox_enable(sm, ep);
    /* The peer may have written before we got here (its bit was dropped
     * while we did not know it): look at the ring on the next poll. */
    bm_btl_sm_hint_set(sm->hints, ep->local_rank);
}

void bm_btl_sm_fbox_enable(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep)
{
    if (!sm->lazy_rings) {
        *(sm->mt ? &ep->fbox_tx_mt : &ep->fbox_tx) = true; /* reserved with the segment */
        return;
    }
    /* Back our ring in the peer's segment through our own mapping: the
     * file's name is usually gone by now (removed once every peer mapped
     * it). MADV_POPULATE_WRITE allocates the pages or fails with an error
     * (a full /dev/shm), never with a SIGBUS later; it leaves their
     * contents (zeros) as they are. */
    const struct bm_btl_sm_seg_ctl *peer = ep->ctl;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t start =
        (uintptr_t)ep->seg + peer->fbox_offset + (uintptr_t)sm->local_rank * peer->fbox_stride;
    uintptr_t lo = start & ~(page - 1), hi = (start + peer->fbox_stride + page - 1) & ~(page - 1);
    if (madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE) != 0) {
        /* The FIFO keeps carrying every message to this peer. */
        bm_log_debug("no fast box to rank %d: cannot back its ring (%s)", ep->rank,
                     strerror(errno));
        return;
    }
    *(sm->mt ? &ep->fbox_tx_mt : &ep->fbox_tx) = true;
}

bool bm_btl_sm_fbox_lazy_supported(void)
{
    /* MADV_POPULATE_WRITE is Linux 5.14 and later; older kernels get every
     * ring reserved with the segment, as before. */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return false;
    bool ok = madvise(p, page, MADV_POPULATE_WRITE) == 0;
    munmap(p, page);
    return ok;
}
