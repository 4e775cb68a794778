/* The transport conformance suite: one program, run through bmrun against
 * every transport (tests/btl/CMakeLists.txt instantiates it per transport
 * and process count). It drives the transport layer directly, with no PML:
 * bm_rte_init, bm_btl_base_open, the modex fence, bm_btl_base_add_procs,
 * then every rank exercises the transport named on the command line towards
 * every peer it reaches (itself only, for self) while answering the others:
 *   - sends of every size from 0 to max_send_size (powers of two, their
 *     neighbours, the limit) through alloc+send, prepare_src+send and sendi
 *     when advertised, every byte verified by the receiver;
 *   - one message on every tag the PML and tests may use (1..63), delivered
 *     to that tag's callback;
 *   - a long stream checked for order when BM_BTL_CAP_ORDERED is advertised
 *     (otherwise for exactly-once delivery);
 *   - completion callbacks exactly once with status 0, for descriptors the
 *     transport frees and for descriptors the caller frees in the callback;
 *   - put, get and atomics when advertised, then flush;
 * and finally a DONE message per peer, after which the receiver checks that
 * it saw everything. Usage: btl_conformance <transport> (with BM_BTL set so
 * that the transport is selected, e.g. BM_BTL=self,sm). */
#define BM_LOG_SUBSYS "test/btl"
#include "bm_test.h"
#include "btl/btl.h"
#include "runtime/rte.h"
#include "util/log.h"
#ifdef BM_TEST_HAVE_DGRAM
#include "dgram_faults_seen.h"
#endif

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    K_ALLOC = BM_BTL_TAG_TEST, /* alloc + send, size sweep */
    K_PREP,                    /* prepare_src + send, size sweep */
    K_SENDI,                   /* sendi, size sweep */
    K_ORDER,                   /* stream of sequence numbers */
    K_DONE,                    /* sender finished everything towards this peer */
    K_FIRST_FREE,              /* tags from here (and 1..31) carry the per-tag test */
};

#define PREP_RESERVE      24
#define SENDI_HDR         8
#define ORDER_COUNT       3000 /* longest order stream (2 ranks); shorter with more */
#define MAX_SIZES         96
#define WIN_GET_BYTES     (256 * 1024)
#define WIN_PUT_SLOT      (256 * 1024)
#define PUT_MAX           (64 * 1024)
#define ATOMIC_ROUNDS     100
#define DEADLINE_S        60
#define FLUSH_BATCH       16
#define FLUSH_BATCH_BYTES 4096

/* ---- job state -------------------------------------------------------------- */

static const char *transport;
static int me, nprocs;
static size_t sizes[MAX_SIZES];
static int nsizes;
/* Messages in each order stream: ORDER_COUNT between two ranks, fewer with
 * more ranks so that the whole run stays about as long (every rank streams
 * to every peer, and all share the same cores). */
static uint32_t order_count;

struct rdma_card {
    uint64_t get_addr;  /* WIN_GET_BYTES of pattern(owner) */
    uint64_t put_addr;  /* nprocs slots of WIN_PUT_SLOT, one per sender */
    uint64_t atom_addr; /* uint64_t[4] counters, then uint32_t counter */
    uint32_t handle_len;
    uint64_t handle[8]; /* a registration handle (aligned like struct bm_btl_reg_handle) */
};

struct peer_state {
    int rank;
    struct bm_btl_module *m;
    struct bm_btl_endpoint *ep;
    /* receive side (what this peer sent us) */
    int next[BM_BTL_TAG_MAX]; /* ordered kinds: index of the next expected message */
    unsigned char got_alloc[MAX_SIZES], got_prep[MAX_SIZES], got_sendi[MAX_SIZES];
    unsigned char *got_order; /* [ORDER_COUNT] */
    unsigned char got_tag[BM_BTL_TAG_MAX];
    int done;
    /* expectations the sender announced in DONE */
    uint32_t sent_counts[4];
    const struct rdma_card *card; /* its window */
};

static struct peer_state *peers; /* [nprocs]; m == NULL when not under test */
static unsigned char *win;       /* our window: get area, put slots, atomics */
static size_t win_size;
static struct bm_btl_reg_handle *win_handle;
static int pending_cb; /* completion callbacks still owed */
static int bad_status, stray_cb;

/* Byte j of a message of the given kind from src to dst. */
static inline unsigned char pattern(int src, int dst, int kind, size_t j)
{
    return (unsigned char)(src * 7 + dst * 13 + kind * 29 + j * 131 + (j >> 8) * 17 + 1);
}

/* The same bytes a block of 256 at a time. Within an aligned block of 256
 * bytes, pattern is the row (k * 131 + v) mod 256 for one v: filling and
 * checking then take memcpy and memcmp instead of a computation per byte,
 * which was two thirds of this suite's CPU time (a 16 MiB sweep moves
 * hundreds of megabytes). */
static unsigned char pattern_rows[256][256];

/* The pattern from offset j to the end of j's block of 256: *n bytes. */
static const unsigned char *pattern_run(int src, int dst, int kind, size_t j, size_t *n)
{
    size_t v = (size_t)(src * 7 + dst * 13 + kind * 29 + 1) + (j >> 8) * 17;
    *n = 256 - (j & 255);
    return &pattern_rows[v & 255][j & 255];
}

static void fill(unsigned char *buf, size_t len, int src, int dst, int kind, size_t from)
{
    while (len > 0) {
        size_t n;
        const unsigned char *row = pattern_run(src, dst, kind, from, &n);
        if (n > len)
            n = len;
        memcpy(buf, row, n);
        buf += n;
        from += n;
        len -= n;
    }
}

/* Index of the first byte of buf[0..len) that is not pattern(.., from + j),
 * or len when all match. */
static size_t mismatch(const unsigned char *buf, size_t len, int src, int dst, int kind,
                       size_t from)
{
    size_t done = 0;
    while (done < len) {
        size_t n;
        const unsigned char *row = pattern_run(src, dst, kind, from + done, &n);
        if (n > len - done)
            n = len - done;
        if (memcmp(buf + done, row, n) != 0)
            for (size_t j = done;; j++)
                if (buf[j] != pattern(src, dst, kind, from + j))
                    return j;
        done += n;
    }
    return len;
}

static void pattern_init(void)
{
    for (unsigned v = 0; v < 256; v++)
        for (unsigned k = 0; k < 256; k++)
            pattern_rows[v][k] = (unsigned char)(k * 131 + v);
    /* The rows are pattern itself, across block boundaries and for the
     * negative dst of the RDMA window. */
    unsigned char probe[1100];
    fill(probe, sizeof(probe), 3, -1, 5, 200);
    size_t bad = 0;
    for (size_t j = 0; j < sizeof(probe); j++)
        bad += probe[j] != pattern(3, -1, 5, 200 + j);
    BM_CHECK_EQ_INT(bad, 0);
    /* and the check sees one wrong byte */
    BM_CHECK_EQ_INT(mismatch(probe, sizeof(probe), 3, -1, 5, 200), sizeof(probe));
    probe[700] ^= 0x10;
    BM_CHECK_EQ_INT(mismatch(probe, sizeof(probe), 3, -1, 5, 200), 700);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Progress once; after a run of idle calls give the core away. Jobs of
 * this suite run up to 8 processes on 2 cores, often next to other tests:
 * a rank spinning on an empty transport only delays the peer it waits for,
 * so without the yield the run time depends on how the scheduler slices
 * the spinning rather than on the work (measured: sm at 8 processes beside
 * the rest of the suite took 115 s instead of 36). */
static double last_event; /* when progress last did something */

static int progress_yielding(void)
{
    static unsigned idle;
    int n = bm_btl_base_progress();
    if (n == 0 && ++idle >= 64) {
        idle = 0;
        sched_yield();
    } else if (n > 0) {
        idle = 0;
        last_event = now_s();
    }
    return n;
}

/* A watchdog, not a time limit: it fires only when the transport did
 * nothing at all for DEADLINE_S since the waiting began (start) or since
 * its last progress, so a slow run on a loaded machine still finishes; a
 * run that is merely slow is bounded by ctest's timeout. */
static void progress_or_die(double start, const char *what)
{
    progress_yielding();
    double since = last_event > start ? last_event : start;
    if (now_s() - since > DEADLINE_S) {
        bm_test_fail(__FILE__, __LINE__, "rank %d: no progress for %d s while %s (transport %s)",
                     me, DEADLINE_S, what, transport);
        bm_test_summary("btl_conformance");
        bm_rte_abort(1, "btl_conformance: transport made no progress");
    }
}

static int size_index(size_t len)
{
    for (int i = 0; i < nsizes; i++)
        if (sizes[i] == len)
            return i;
    return -1;
}

static void build_sizes(size_t limit)
{
    nsizes = 0;
    size_t small[] = {0, 1, 2, 3, 5, 7};
    for (size_t i = 0; i < sizeof(small) / sizeof(small[0]); i++)
        if (small[i] <= limit)
            sizes[nsizes++] = small[i];
    for (size_t p = 8; p <= limit && nsizes < MAX_SIZES - 4; p *= 2) {
        if (p - 1 > sizes[nsizes - 1])
            sizes[nsizes++] = p - 1;
        sizes[nsizes++] = p;
        if (p + 1 <= limit)
            sizes[nsizes++] = p + 1;
    }
    if (sizes[nsizes - 1] < limit - 1)
        sizes[nsizes++] = limit - 1;
    if (sizes[nsizes - 1] < limit)
        sizes[nsizes++] = limit;
}

/* ---- receive side ------------------------------------------------------------------ */

/* Copy the message out of its segments (they are valid only during the callback). */
static size_t gather(const struct bm_btl_recv_desc *d, unsigned char *buf, size_t cap)
{
    size_t len = 0;
    for (uint32_t s = 0; s < d->seg_count; s++) {
        size_t l = d->seg[s].len;
        if (len + l <= cap && l)
            memcpy(buf + len, d->seg[s].addr, l);
        len += l;
    }
    return len;
}

static bool verify(const unsigned char *buf, size_t len, int src, int kind)
{
    size_t j = mismatch(buf, len, src, me, kind, 0);
    if (j < len) {
        bm_test_fail(__FILE__, __LINE__,
                     "rank %d: byte %zu of a %zu-byte message (kind %d) from rank %d is 0x%02x, "
                     "expected 0x%02x",
                     me, j, len, kind, src, buf[j], pattern(src, me, kind, j));
        return false;
    }
    bm_test_passed++;
    return true;
}

static unsigned char *rbuf;
static size_t rbuf_cap;

static void sweep_arrived(struct peer_state *ps, int kind, unsigned char *got, size_t len,
                          size_t offset)
{
    int idx = len >= offset ? size_index(len - offset) : -1;
    BM_CHECK_MSG(idx >= 0, "rank %d: kind %d message of unexpected length %zu from %d", me, kind,
                 len, ps->rank);
    if (idx < 0)
        return;
    BM_CHECK_MSG(!got[idx], "rank %d: kind %d message of %zu bytes from %d arrived twice", me, kind,
                 len, ps->rank);
    got[idx] = 1;
    if (ps->m && (ps->m->caps & BM_BTL_CAP_ORDERED))
        BM_CHECK_MSG(idx == ps->next[kind],
                     "rank %d: kind %d from %d out of order: size index %d, expected %d", me, kind,
                     ps->rank, idx, ps->next[kind]);
    ps->next[kind] = idx + 1;
}

static void on_recv(struct bm_btl_module *module, const struct bm_btl_recv_desc *d, void *cbdata)
{
    int kind = (int)(intptr_t)cbdata;
    BM_CHECK_EQ_INT(d->tag, kind);
    if (d->peer < 0 || d->peer >= nprocs) {
        bm_test_fail(__FILE__, __LINE__, "rank %d: message from invalid rank %d", me, d->peer);
        return;
    }
    struct peer_state *ps = &peers[d->peer];
    BM_CHECK_MSG(strcmp(module->ops->name, transport) == 0,
                 "rank %d: message from %d arrived on %s, not %s", me, d->peer, module->name,
                 transport);
    size_t len = gather(d, rbuf, rbuf_cap);
    if (len > rbuf_cap) {
        bm_test_fail(__FILE__, __LINE__, "rank %d: %zu-byte message exceeds max_send_size", me,
                     len);
        return;
    }
    if (kind != K_DONE && !verify(rbuf, len, d->peer, kind))
        return;
    switch (kind) {
    case K_ALLOC:
        sweep_arrived(ps, kind, ps->got_alloc, len, 0);
        break;
    case K_PREP:
        sweep_arrived(ps, kind, ps->got_prep, len, PREP_RESERVE);
        break;
    case K_SENDI:
        sweep_arrived(ps, kind, ps->got_sendi, len, SENDI_HDR);
        break;
    case K_DONE:
        BM_CHECK_EQ_INT(len, sizeof(ps->sent_counts));
        if (len == sizeof(ps->sent_counts))
            memcpy(ps->sent_counts, rbuf, len);
        ps->done++;
        break;
    default:
        BM_CHECK_MSG(!ps->got_tag[kind], "rank %d: tag %d from %d arrived twice", me, kind,
                     d->peer);
        BM_CHECK_EQ_INT(len, 5 + kind);
        ps->got_tag[kind] = 1;
        break;
    }
}

/* K_ORDER carries its sequence number, so it has its own callback. */
static void on_order(struct bm_btl_module *module, const struct bm_btl_recv_desc *d, void *cbdata)
{
    (void)module;
    (void)cbdata;
    if (d->peer < 0 || d->peer >= nprocs)
        return;
    struct peer_state *ps = &peers[d->peer];
    unsigned char buf[16];
    size_t len = gather(d, buf, sizeof(buf));
    if (len != 8) {
        bm_test_fail(__FILE__, __LINE__, "rank %d: order message of %zu bytes", me, len);
        return;
    }
    uint32_t seq, check;
    memcpy(&seq, buf, 4);
    memcpy(&check, buf + 4, 4);
    BM_CHECK_EQ_INT(check, seq * 2654435761u + (uint32_t)d->peer);
    if (seq >= ORDER_COUNT) {
        bm_test_fail(__FILE__, __LINE__, "rank %d: order seq %u out of range", me, seq);
        return;
    }
    BM_CHECK_MSG(!ps->got_order[seq], "rank %d: order seq %u from %d twice", me, seq, d->peer);
    ps->got_order[seq] = 1;
    if (ps->m && (ps->m->caps & BM_BTL_CAP_ORDERED))
        BM_CHECK_MSG((int)seq == ps->next[K_ORDER],
                     "rank %d: order from %d: got seq %u, expected %d", me, d->peer, seq,
                     ps->next[K_ORDER]);
    ps->next[K_ORDER] = (int)seq + 1;
}

/* ---- send side -------------------------------------------------------------------------- */

/* One slot per send: the completion callback increments it; all must end at 1. */
static int *cb_count;
static unsigned char *cb_expect; /* 1, or 0 for a send done inline without ALWAYS_CALLBACK */
static int ncb, cb_cap;

static void *new_slot(void)
{
    if (ncb == cb_cap) {
        cb_cap = cb_cap ? cb_cap * 2 : 4096;
        /* Slots are referenced by index, never by pointer, across growth. */
        cb_count = realloc(cb_count, (size_t)cb_cap * sizeof(int));
        cb_expect = realloc(cb_expect, (size_t)cb_cap);
        if (!cb_count || !cb_expect)
            abort();
    }
    cb_count[ncb] = 0;
    cb_expect[ncb] = 1;
    return (void *)(intptr_t)(ncb++ + 1);
}

static void on_send_done(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                         struct bm_btl_descriptor *des, int status)
{
    (void)ep;
    intptr_t slot = (intptr_t)des->context - 1;
    if (slot < 0 || slot >= ncb) {
        stray_cb++;
        return;
    }
    cb_count[slot]++;
    pending_cb--;
    if (status != 0)
        bad_status++;
    if (!(des->flags & BM_BTL_DES_F_BTL_OWNED))
        bm_btl_free(m, des);
}

static void send_des(struct peer_state *ps, struct bm_btl_descriptor *des, bm_btl_tag_t tag,
                     double start)
{
    des->cbfunc = on_send_done;
    des->context = new_slot();
    int slot = ncb - 1;
    /* Read before sending: a transport-owned descriptor may be gone after. */
    uint32_t flags = des->flags;
    pending_cb++;
    for (;;) {
        int rc = bm_btl_send(ps->m, ps->ep, des, tag);
        if (rc == BM_BTL_DONE && !(flags & BM_BTL_DES_F_ALWAYS_CALLBACK)) {
            /* Done inline and no callback asked for: none may come, and the
             * descriptor is ours again unless the transport owns it. */
            cb_expect[slot] = 0;
            pending_cb--;
            if (!(flags & BM_BTL_DES_F_BTL_OWNED))
                bm_btl_free(ps->m, des);
            return;
        }
        if (rc == BM_OK || rc == BM_BTL_DONE)
            return;
        if (rc != BM_ERR_OUT_OF_RESOURCE) {
            bm_test_fail(__FILE__, __LINE__, "rank %d: send to %d failed: %s", me, ps->rank,
                         bm_status_str(rc));
            pending_cb--;
            return;
        }
        progress_or_die(start, "retrying a send");
    }
}

static uint32_t flags_for(int i)
{
    /* Every combination of who frees the descriptor and whether an inline
     * completion still calls back. */
    static const uint32_t combos[4] = {
        BM_BTL_DES_F_BTL_OWNED | BM_BTL_DES_F_ALWAYS_CALLBACK,
        BM_BTL_DES_F_ALWAYS_CALLBACK,
        BM_BTL_DES_F_BTL_OWNED,
        0,
    };
    return combos[i & 3];
}

static struct bm_btl_descriptor *alloc_retry(struct peer_state *ps, size_t size, uint32_t flags,
                                             double start)
{
    struct bm_btl_descriptor *des;
    while (!(des = bm_btl_alloc(ps->m, ps->ep, 0, size, flags)))
        progress_or_die(start, "waiting for alloc");
    return des;
}

static void run_sends(struct peer_state *ps, unsigned char *src_buf, uint32_t counts[4])
{
    struct bm_btl_module *m = ps->m;
    double start = now_s();
    int dst = ps->rank;
    /* alloc + send */
    for (int i = 0; i < nsizes; i++) {
        struct bm_btl_descriptor *des = alloc_retry(ps, sizes[i], flags_for(i), start);
        BM_CHECK(des->seg_count >= 1 && des->seg[0].len >= sizes[i]);
        des->seg[0].len = sizes[i];
        fill(des->seg[0].addr, sizes[i], me, dst, K_ALLOC, 0);
        send_des(ps, des, K_ALLOC, start);
        counts[0]++;
    }
    /* prepare_src + send: header in the reserve, data from the caller's buffer
     * (which stays untouched until completion, as SEND_INPLACE requires) */
    fill(src_buf, m->max_send_size, me, dst, K_PREP, 0);
    for (int i = 0; i < nsizes && sizes[i] + PREP_RESERVE <= m->max_send_size; i++) {
        size_t size = sizes[i];
        struct bm_btl_descriptor *des;
        while (!(des = bm_btl_prepare_src(m, ps->ep, src_buf + PREP_RESERVE, PREP_RESERVE, &size, 0,
                                          flags_for(i))))
            progress_or_die(start, "waiting for prepare_src");
        BM_CHECK_EQ_INT(size, sizes[i]);
        BM_CHECK(des->seg[0].len >= PREP_RESERVE);
        memcpy(des->seg[0].addr, src_buf, PREP_RESERVE);
        send_des(ps, des, K_PREP, start);
        counts[1]++;
    }
    /* src_buf is reused below: with SEND_INPLACE it belongs to the transport
     * until the completions arrive. */
    while (pending_cb > 0)
        progress_or_die(start, "waiting for prepare_src completions");
    /* sendi */
    if (m->caps & BM_BTL_CAP_SENDI) {
        unsigned char hdr[SENDI_HDR];
        fill(hdr, SENDI_HDR, me, dst, K_SENDI, 0);
        fill(src_buf, m->max_send_size, me, dst, K_SENDI, 0);
        for (int i = 0; i < nsizes && sizes[i] + SENDI_HDR <= m->max_send_size; i++) {
            for (;;) {
                struct bm_btl_descriptor *des = NULL;
                int rc = bm_btl_sendi(m, ps->ep, hdr, SENDI_HDR, src_buf + SENDI_HDR, sizes[i], 0,
                                      0, K_SENDI, &des);
                if (rc == BM_BTL_DONE)
                    break;
                if (rc == BM_ERR_OUT_OF_RESOURCE && des) {
                    /* The transport packed it already: send that descriptor. */
                    send_des(ps, des, K_SENDI, start);
                    break;
                }
                if (rc != BM_ERR_OUT_OF_RESOURCE) {
                    BM_CHECK_MSG(rc == BM_ERR_NOT_AVAILABLE && sizes[i] > m->eager_limit,
                                 "rank %d: sendi of %zu bytes to %d: %s", me, sizes[i], dst,
                                 bm_status_str(rc));
                    /* Too large for sendi: the same bytes go through alloc+send. */
                    struct bm_btl_descriptor *d2 =
                        alloc_retry(ps, SENDI_HDR + sizes[i], flags_for(i), start);
                    d2->seg[0].len = SENDI_HDR + sizes[i];
                    fill(d2->seg[0].addr, SENDI_HDR + sizes[i], me, dst, K_SENDI, 0);
                    send_des(ps, d2, K_SENDI, start);
                    break;
                }
                progress_or_die(start, "retrying sendi");
            }
            counts[2]++;
        }
    }
    /* the order stream, alternating small alloc+send and sendi */
    for (uint32_t seq = 0; seq < order_count; seq++) {
        unsigned char b[8];
        uint32_t check = seq * 2654435761u + (uint32_t)me;
        memcpy(b, &seq, 4);
        memcpy(b + 4, &check, 4);
        if ((m->caps & BM_BTL_CAP_SENDI) && (seq & 1)) {
            int rc;
            while ((rc = bm_btl_sendi(m, ps->ep, b, 8, NULL, 0, 0, 0, K_ORDER, NULL)) ==
                   BM_ERR_OUT_OF_RESOURCE)
                progress_or_die(start, "retrying sendi (order)");
            BM_CHECK_EQ_INT(rc, BM_BTL_DONE);
        } else {
            struct bm_btl_descriptor *des = alloc_retry(ps, 8, flags_for((int)seq), start);
            des->seg[0].len = 8;
            memcpy(des->seg[0].addr, b, 8);
            send_des(ps, des, K_ORDER, start);
        }
        counts[3]++;
    }
    /* every other tag */
    for (int tag = BM_BTL_TAG_PML; tag < BM_BTL_TAG_MAX; tag++) {
        if (tag >= K_ALLOC && tag < K_FIRST_FREE)
            continue;
        struct bm_btl_descriptor *des = alloc_retry(ps, 5 + (size_t)tag, flags_for(tag), start);
        des->seg[0].len = 5 + (size_t)tag;
        fill(des->seg[0].addr, 5 + (size_t)tag, me, dst, tag, 0);
        send_des(ps, des, (bm_btl_tag_t)tag, start);
    }
}

/* ---- RDMA --------------------------------------------------------------------------------- */

static int rdma_pending;
static int rdma_bad;

static void on_rdma_done(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                         struct bm_btl_reg_handle *local_handle, void *context, void *cbdata,
                         int status)
{
    (void)m;
    (void)ep;
    (void)local_addr;
    (void)local_handle;
    (void)cbdata;
    int *slot = context;
    (*slot)++;
    rdma_pending--;
    if (status != 0)
        rdma_bad++;
}

/* Run one RDMA operation to completion; fn wraps the call. */
typedef int (*rdma_start_fn)(struct peer_state *ps, void *arg, uint32_t flags, int *slot);

static void rdma_run(struct peer_state *ps, rdma_start_fn fn, void *arg, bool want_cb, double start)
{
    int slot = 0;
    uint32_t flags = want_cb ? BM_BTL_DES_F_ALWAYS_CALLBACK : 0;
    int rc;
    rdma_pending++;
    while ((rc = fn(ps, arg, flags, &slot)) == BM_ERR_OUT_OF_RESOURCE)
        progress_or_die(start, "retrying an RDMA operation");
    if (rc == BM_BTL_DONE && !want_cb) {
        rdma_pending--;
        return;
    }
    if (rc != BM_OK && rc != BM_BTL_DONE) {
        bm_test_fail(__FILE__, __LINE__, "rank %d: RDMA operation towards %d failed: %s", me,
                     ps->rank, bm_status_str(rc));
        rdma_pending--;
        return;
    }
    while (slot == 0)
        progress_or_die(start, "waiting for an RDMA completion");
    BM_CHECK_EQ_INT(slot, 1);
}

struct xfer {
    void *local;
    uint64_t remote;
    size_t size;
};

static const struct bm_btl_reg_handle *remote_handle(struct peer_state *ps)
{
    return ps->card && ps->card->handle_len ? (const void *)ps->card->handle : NULL;
}

static int start_get(struct peer_state *ps, void *arg, uint32_t flags, int *slot)
{
    struct xfer *x = arg;
    return bm_btl_get(ps->m, ps->ep, x->local, x->remote, win_handle, remote_handle(ps), x->size,
                      flags, 0, on_rdma_done, slot, NULL);
}

static int start_put(struct peer_state *ps, void *arg, uint32_t flags, int *slot)
{
    struct xfer *x = arg;
    return bm_btl_put(ps->m, ps->ep, x->local, x->remote, win_handle, remote_handle(ps), x->size,
                      flags, 0, on_rdma_done, slot, NULL);
}

struct atom {
    int kind; /* 0 op, 1 fop, 2 cswap */
    uint64_t remote;
    uint64_t operand, compare;
    uint32_t flags;
    void *result;
};

static int start_atomic(struct peer_state *ps, void *arg, uint32_t flags, int *slot)
{
    struct atom *a = arg;
    const struct bm_btl_ops *o = ps->m->ops;
    switch (a->kind) {
    case 0:
        return o->atomic_op(ps->m, ps->ep, a->remote, remote_handle(ps), BM_BTL_ATOMIC_ADD,
                            a->operand, flags | a->flags, 0, on_rdma_done, slot, NULL);
    case 1:
        return o->atomic_fop(ps->m, ps->ep, a->result, a->remote, win_handle, remote_handle(ps),
                             BM_BTL_ATOMIC_ADD, a->operand, flags | a->flags, 0, on_rdma_done, slot,
                             NULL);
    default:
        return o->atomic_cswap(ps->m, ps->ep, a->result, a->remote, win_handle, remote_handle(ps),
                               a->compare, a->operand, flags | a->flags, 0, on_rdma_done, slot,
                               NULL);
    }
}

static size_t align_up(size_t v, size_t a)
{
    return a > 1 ? (v + a - 1) / a * a : v;
}

static void run_rdma(struct peer_state *ps, unsigned char *buf)
{
    struct bm_btl_module *m = ps->m;
    double start = now_s();
    if (!ps->card) {
        BM_CHECK_MSG(!(m->caps & (BM_BTL_CAP_GET | BM_BTL_CAP_PUT | BM_BTL_CAP_ATOMIC_OPS)),
                     "rank %d: no RDMA window card from %d", me, ps->rank);
        return;
    }
    if (m->caps & BM_BTL_CAP_GET) {
        for (int i = 0; i < nsizes; i++) {
            size_t size = sizes[i];
            if (size > m->get_limit || size > WIN_GET_BYTES / 2)
                break;
            size_t off = align_up((size_t)(i * 7) % 512, m->get_alignment);
            memset(buf, 0, size + 1);
            struct xfer x = {buf, ps->card->get_addr + off, size};
            rdma_run(ps, start_get, &x, i & 1, start);
            bool ok = mismatch(buf, size, ps->rank, -1, 0, off) == size;
            BM_CHECK_MSG(ok, "rank %d: get of %zu bytes at offset %zu from %d: wrong data", me,
                         size, off, ps->rank);
            BM_CHECK_MSG(buf[size] == 0, "rank %d: get of %zu bytes wrote past the end", me, size);
        }
    }
    if ((m->caps & BM_BTL_CAP_GET) && m->get_limit >= FLUSH_BATCH_BYTES) {
        /* Several gets in flight at once, then flush: every callback must
         * have run when flush returns. */
        int slots[FLUSH_BATCH] = {0};
        memset(buf, 0, FLUSH_BATCH * FLUSH_BATCH_BYTES);
        for (int i = 0; i < FLUSH_BATCH; i++) {
            size_t off = align_up((size_t)i * FLUSH_BATCH_BYTES, m->get_alignment);
            int rc;
            rdma_pending++;
            while ((rc = bm_btl_get(m, ps->ep, buf + (size_t)i * FLUSH_BATCH_BYTES,
                                    ps->card->get_addr + off, win_handle, remote_handle(ps),
                                    FLUSH_BATCH_BYTES, BM_BTL_DES_F_ALWAYS_CALLBACK, 0,
                                    on_rdma_done, &slots[i], NULL)) == BM_ERR_OUT_OF_RESOURCE)
                progress_or_die(start, "retrying a batched get");
            if (rc != BM_OK && rc != BM_BTL_DONE) {
                bm_test_fail(__FILE__, __LINE__, "rank %d: batched get towards %d: %s", me,
                             ps->rank, bm_status_str(rc));
                slots[i] = 1;
                rdma_pending--;
            }
        }
        BM_CHECK_EQ_INT(m->ops->flush(m, ps->ep), BM_OK);
        for (int i = 0; i < FLUSH_BATCH; i++) {
            BM_CHECK_MSG(slots[i] == 1,
                         "rank %d: batched get %d towards %d: %d callbacks after "
                         "flush",
                         me, i, ps->rank, slots[i]);
            size_t off = align_up((size_t)i * FLUSH_BATCH_BYTES, m->get_alignment);
            bool ok = mismatch(buf + (size_t)i * FLUSH_BATCH_BYTES, FLUSH_BATCH_BYTES, ps->rank, -1,
                               0, off) == FLUSH_BATCH_BYTES;
            BM_CHECK_MSG(ok, "rank %d: batched get %d from %d: wrong data", me, i, ps->rank);
        }
    }
    if (m->caps & BM_BTL_CAP_PUT) {
        size_t off = 0;
        for (int i = 0; i < nsizes; i++) {
            size_t size = sizes[i];
            if (size > m->put_limit || size > PUT_MAX)
                break;
            off = align_up(off, m->put_alignment);
            if (off + size > WIN_PUT_SLOT)
                break;
            fill(buf, size, me, ps->rank, 3, off);
            struct xfer x = {buf, ps->card->put_addr + (uint64_t)me * WIN_PUT_SLOT + off, size};
            rdma_run(ps, start_put, &x, i & 1, start);
            off += size;
        }
    }
    if (m->caps & BM_BTL_CAP_ATOMIC_OPS) {
        for (int i = 0; i < ATOMIC_ROUNDS; i++) {
            struct atom a = {0, ps->card->atom_addr, 1, 0, 0, NULL};
            rdma_run(ps, start_atomic, &a, i & 1, start);
        }
    }
    if (m->caps & BM_BTL_CAP_ATOMIC_FOPS) {
        uint64_t *res = (uint64_t *)(void *)buf;
        for (int i = 0; i < ATOMIC_ROUNDS; i++) {
            *res = UINT64_MAX;
            struct atom a = {1, ps->card->atom_addr + 8, 1, 0, 0, res};
            rdma_run(ps, start_atomic, &a, i & 1, start);
            BM_CHECK(*res < (uint64_t)ATOMIC_ROUNDS * (uint64_t)nprocs);
        }
        /* cswap: increment counter 2 by compare-and-swap until ATOMIC_ROUNDS succeed */
        uint64_t guess = 0;
        int won = 0;
        while (won < ATOMIC_ROUNDS) {
            struct atom a = {2, ps->card->atom_addr + 16, guess + 1, guess, 0, res};
            rdma_run(ps, start_atomic, &a, won & 1, start);
            if (*res == guess)
                won++;
            guess = *res == guess ? guess + 1 : *res;
        }
        if (m->atomic_flags & BM_BTL_ATOMIC_F_32BIT) {
            for (int i = 0; i < ATOMIC_ROUNDS; i++) {
                uint32_t *r32 = (uint32_t *)(void *)buf;
                struct atom a = {1, ps->card->atom_addr + 32, 3, 0, BM_BTL_ATOMIC_OP_F_32BIT, r32};
                rdma_run(ps, start_atomic, &a, 0, start);
            }
        }
    }
    BM_CHECK_EQ_INT(m->ops->flush(m, ps->ep), BM_OK);
    BM_CHECK_EQ_INT(rdma_pending, 0);
}

/* ---- end of job ------------------------------------------------------------------------------ */

static atomic_bool barrier_done;

static void *progress_thread(void *arg)
{
    (void)arg;
    while (!atomic_load(&barrier_done))
        progress_yielding();
    return NULL;
}

/* A job-wide barrier that keeps the transports progressing: a rank that has
 * everything it needs may still owe its peers acknowledgements (reliable
 * transports over datagrams), and bm_rte_barrier itself does not progress
 * them. The main thread is blocked in the barrier meanwhile, so the helper
 * thread is the only caller of the transport layer (its one-thread rule). */
static void progressing_barrier(void)
{
    pthread_t t;
    atomic_store(&barrier_done, false);
    bool threaded = pthread_create(&t, NULL, progress_thread, NULL) == 0;
    bm_status_t rc = bm_rte_barrier();
    atomic_store(&barrier_done, true);
    if (threaded)
        pthread_join(t, NULL);
    BM_CHECK_EQ_INT(rc, BM_OK);
}

/* ---- main -------------------------------------------------------------------------------------
 */

static void check_received(struct peer_state *ps)
{
    int r = ps->rank;
    int n[4] = {0, 0, 0, 0};
    for (int i = 0; i < nsizes; i++) {
        n[0] += ps->got_alloc[i];
        n[1] += ps->got_prep[i];
        n[2] += ps->got_sendi[i];
    }
    for (int s = 0; s < ORDER_COUNT; s++)
        n[3] += ps->got_order[s];
    for (int k = 0; k < 4; k++)
        BM_CHECK_MSG((uint32_t)n[k] == ps->sent_counts[k],
                     "rank %d: from rank %d got %d messages of kind %d, it sent %u", me, r, n[k],
                     K_ALLOC + k, ps->sent_counts[k]);
    for (int tag = BM_BTL_TAG_PML; tag < BM_BTL_TAG_MAX; tag++)
        if (tag < K_ALLOC || tag >= K_FIRST_FREE)
            BM_CHECK_MSG(ps->got_tag[tag], "rank %d: nothing arrived on tag %d from %d", me, tag,
                         r);
    BM_CHECK_EQ_INT(ps->done, 1);
    /* What its puts left in our slot for it. */
    if (ps->m->caps & BM_BTL_CAP_PUT) {
        unsigned char *slot = win + WIN_GET_BYTES + (size_t)r * WIN_PUT_SLOT;
        size_t off = 0;
        for (int i = 0; i < nsizes; i++) {
            size_t size = sizes[i];
            if (size > ps->m->put_limit || size > PUT_MAX)
                break;
            off = align_up(off, ps->m->put_alignment);
            if (off + size > WIN_PUT_SLOT)
                break;
            bool ok = mismatch(slot + off, size, r, me, 3, off) == size;
            BM_CHECK_MSG(ok, "rank %d: put of %zu bytes at %zu from %d: wrong data", me, size, off,
                         r);
            off += size;
        }
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s <transport>   (with BM_BTL selecting it)\n", argv[0]);
        return 2;
    }
    transport = argv[1];
    BM_CHECK_EQ_INT(bm_rte_init(), BM_OK);
    me = bm_rte_self()->rank;
    nprocs = bm_rte_self()->size;
    order_count = nprocs <= 2 ? ORDER_COUNT : (uint32_t)(2 * ORDER_COUNT / nprocs);
    bm_test_current = transport;

    peers = calloc((size_t)nprocs, sizeof(*peers));
    win_size = WIN_GET_BYTES + (size_t)nprocs * WIN_PUT_SLOT + 64;
    win = aligned_alloc(64, align_up(win_size, 64));
    if (!peers || !win)
        return 1;
    memset(win, 0, win_size);
    pattern_init();
    fill(win, WIN_GET_BYTES, me, -1, 0, 0);

    bm_status_t rc = bm_btl_base_open(NULL);
    BM_CHECK_EQ_INT(rc, BM_OK);
    if (rc != BM_OK)
        return bm_test_summary("btl_conformance");
    for (int tag = BM_BTL_TAG_PML; tag < BM_BTL_TAG_MAX; tag++)
        bm_btl_base_register_recv((bm_btl_tag_t)tag, tag == K_ORDER ? on_order : on_recv,
                                  (void *)(intptr_t)tag);
    BM_CHECK_EQ_INT(bm_rte_modex_fence(), BM_OK);
    rc = bm_btl_base_add_procs(nprocs);
    BM_CHECK_EQ_INT(rc, BM_OK);
    if (rc != BM_OK)
        return bm_test_summary("btl_conformance");

    /* Which peers this run tests, and over which path. */
    size_t max_send = 0;
    int ntested = 0;
    for (int r = 0; r < nprocs; r++) {
        struct peer_state *ps = &peers[r];
        ps->rank = r;
        ps->got_order = calloc(ORDER_COUNT, 1);
        if (!ps->got_order)
            return 1;
        struct bm_btl_peer *peer = bm_btl_base_peer(r);
        BM_CHECK(peer != NULL && peer->eager.count >= 1 && peer->send.count >= 1);
        bool wanted = (strcmp(transport, "self") == 0) == (r == me);
        if (!peer || !wanted)
            continue;
        for (int i = 0; i < peer->send.count; i++)
            if (strcmp(peer->send.paths[i].module->ops->name, transport) == 0) {
                ps->m = peer->send.paths[i].module;
                ps->ep = peer->send.paths[i].endpoint;
                break;
            }
        BM_CHECK_MSG(ps->m != NULL, "rank %d: transport %s does not reach rank %d", me, transport,
                     r);
        if (!ps->m)
            continue;
        ntested++;
        BM_CHECK(ps->m->caps & BM_BTL_CAP_SEND);
        BM_CHECK(ps->m->eager_limit <= ps->m->max_send_size);
        BM_CHECK(ps->m->max_send_size >= 64);
        /* One size list serves every pair: the receiver must know what the
         * sender's sweep contains. */
        BM_CHECK_MSG(max_send == 0 || max_send == ps->m->max_send_size,
                     "rank %d: modules of %s differ in max_send_size", me, transport);
        if (ps->m->max_send_size > max_send)
            max_send = ps->m->max_send_size;
        if (ps->m->caps & (BM_BTL_CAP_PUT | BM_BTL_CAP_GET)) {
            bool in_rdma = false;
            for (int i = 0; i < peer->rdma.count; i++)
                in_rdma |= peer->rdma.paths[i].module == ps->m;
            BM_CHECK_MSG(in_rdma, "rank %d: RDMA-capable %s missing from rdma list of %d", me,
                         ps->m->name, r);
        }
        double wsum = 0;
        for (int i = 0; i < peer->send.count; i++)
            wsum += peer->send.paths[i].weight;
        BM_CHECK(wsum > 0.999 && wsum < 1.001);
    }
    BM_CHECK_MSG(ntested > 0 || nprocs == 1 || strcmp(transport, "self") == 0,
                 "rank %d: no peer reached by %s", me, transport);

    /* Publish the RDMA window (registered with the module under test when it
     * needs registration) and learn the peers'. */
    struct rdma_card card = {
        .get_addr = (uint64_t)(uintptr_t)win,
        .put_addr = (uint64_t)(uintptr_t)(win + WIN_GET_BYTES),
        .atom_addr = (uint64_t)(uintptr_t)(win + WIN_GET_BYTES + (size_t)nprocs * WIN_PUT_SLOT),
    };
    for (int r = 0; r < nprocs; r++) {
        struct bm_btl_module *m = peers[r].m;
        if (!m || !(m->caps & (BM_BTL_CAP_PUT | BM_BTL_CAP_GET | BM_BTL_CAP_ATOMIC_OPS)))
            continue;
        if (!win_handle)
            win_handle = m->ops->register_mem(m, NULL, win, win_size,
                                              BM_BTL_REG_F_LOCAL_WRITE | BM_BTL_REG_F_REMOTE_READ |
                                                  BM_BTL_REG_F_REMOTE_WRITE | BM_BTL_REG_F_ATOMIC);
        BM_CHECK(win_handle != NULL);
        if (win_handle && m->reg_handle_size <= sizeof(card.handle)) {
            card.handle_len = (uint32_t)m->reg_handle_size;
            memcpy(card.handle, win_handle, m->reg_handle_size);
        }
        break;
    }
    BM_CHECK_EQ_INT(bm_rte_modex_put("test.btl.win", &card, sizeof(card)), BM_OK);
    BM_CHECK_EQ_INT(bm_rte_modex_fence(), BM_OK);
    for (int r = 0; r < nprocs; r++) {
        const void *data;
        size_t len;
        if (peers[r].m && bm_rte_modex_get(r, "test.btl.win", &data, &len) == BM_OK &&
            len == sizeof(struct rdma_card))
            peers[r].card = data;
    }

    rbuf_cap = max_send ? max_send : 64;
    rbuf = malloc(rbuf_cap);
    unsigned char *sbuf = malloc(rbuf_cap + WIN_GET_BYTES);
    if (!rbuf || !sbuf)
        return 1;
    build_sizes(max_send);

    /* Everyone sends to every tested peer in turn, starting with the next
     * rank so that all pairs are busy at once. */
    for (int k = 0; k < nprocs; k++) {
        struct peer_state *ps = &peers[(me + k) % nprocs];
        if (!ps->m)
            continue;
        uint32_t counts[4] = {0, 0, 0, 0};
        run_sends(ps, sbuf, counts);
        run_rdma(ps, sbuf);
        double start = now_s();
        while (pending_cb > 0)
            progress_or_die(start, "waiting for send completions");
        struct bm_btl_descriptor *des = alloc_retry(
            ps, sizeof(counts), BM_BTL_DES_F_BTL_OWNED | BM_BTL_DES_F_ALWAYS_CALLBACK, start);
        des->seg[0].len = sizeof(counts);
        memcpy(des->seg[0].addr, counts, sizeof(counts));
        send_des(ps, des, K_DONE, start);
    }
    double start = now_s();
    for (;;) {
        bool all = pending_cb == 0;
        for (int r = 0; r < nprocs && all; r++)
            all = !peers[r].m || peers[r].done > 0;
        if (all)
            break;
        progress_or_die(start, "waiting for the peers' DONE");
    }
    for (int i = 0; i < ncb; i++)
        BM_CHECK_MSG(cb_count[i] == cb_expect[i],
                     "rank %d: completion %d fired %d times, expected %d", me, i, cb_count[i],
                     cb_expect[i]);
    BM_CHECK_EQ_INT(bad_status, 0);
    BM_CHECK_EQ_INT(stray_cb, 0);
    BM_CHECK_EQ_INT(rdma_bad, 0);
    for (int r = 0; r < nprocs; r++) {
        if (peers[r].m)
            check_received(&peers[r]);
    }
#ifdef BM_TEST_HAVE_DGRAM
    if (strcmp(transport, "dgram") == 0) {
        /* runs with injected faults: they happened and were repaired */
        /* nprocs > 0 here; the bound tells -O3's size analysis so. */
        struct bm_btl_module **mods = calloc(nprocs > 0 ? (size_t)nprocs : 1, sizeof(*mods));
        int nmods = 0;
        for (int r = 0; mods && r < nprocs; r++) {
            bool seen = !peers[r].m;
            for (int k = 0; k < nmods && !seen; k++)
                seen = mods[k] == peers[r].m;
            if (!seen)
                mods[nmods++] = peers[r].m;
        }
        bm_test_dgram_faults_seen(mods, nmods, me);
        free(mods);
    }
#endif
    /* Atomics: every tested peer (ourselves for self) added ATOMIC_ROUNDS. */
    int atomic_peers = 0;
    for (int r = 0; r < nprocs; r++)
        if (peers[r].m && (peers[r].m->caps & BM_BTL_CAP_ATOMIC_OPS))
            atomic_peers++;
    if (atomic_peers) {
        uint64_t *ctr = (uint64_t *)(void *)(win + WIN_GET_BYTES + (size_t)nprocs * WIN_PUT_SLOT);
        BM_CHECK_EQ_INT(ctr[0], (uint64_t)ATOMIC_ROUNDS * (uint64_t)atomic_peers);
        bool fops = false;
        for (int r = 0; r < nprocs; r++)
            fops |= peers[r].m && (peers[r].m->caps & BM_BTL_CAP_ATOMIC_FOPS);
        bool f32 = false;
        for (int r = 0; r < nprocs; r++)
            f32 |= peers[r].m && (peers[r].m->caps & BM_BTL_CAP_ATOMIC_FOPS) &&
                   (peers[r].m->atomic_flags & BM_BTL_ATOMIC_F_32BIT);
        if (fops) {
            BM_CHECK_EQ_INT(ctr[1], (uint64_t)ATOMIC_ROUNDS * (uint64_t)atomic_peers);
            BM_CHECK_EQ_INT(ctr[2], (uint64_t)ATOMIC_ROUNDS * (uint64_t)atomic_peers);
        }
        if (f32) {
            uint32_t c32;
            memcpy(&c32, ctr + 4, sizeof(c32));
            BM_CHECK_EQ_INT(c32, 3u * ATOMIC_ROUNDS * (uint32_t)atomic_peers);
        }
    }
    progressing_barrier();
    bm_btl_base_close();
    for (int r = 0; r < nprocs; r++)
        free(peers[r].got_order);
    free(peers);
    free(win);
    free(rbuf);
    free(sbuf);
    free(cb_count);
    free(cb_expect);
    bm_rte_finalize();
    char name[64];
    snprintf(name, sizeof(name), "btl_conformance[%s] rank %d", transport, me);
    return bm_test_summary(name);
}
