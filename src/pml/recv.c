/* The receive side: posting receives, delivering a matched MATCH (eager)
 * or RNDV message into the user's buffer, answering a RNDV with an ACK that
 * names the receive request and the range still wanted, and placing FRAGs.
 * Truncation (a message longer than the buffer) fills the buffer, completes
 * with BM_ERR_TRUNCATE, and asks the sender for no more bytes than fit, so
 * nothing is ever written past the buffer. */
#define BM_LOG_SUBSYS "pml"
#include "util/log.h"

#include "pml/pml_internal.h"
#include "util/mem.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* req->tag and req->peer in one 8-byte store where the layout allows:
 * bm_pml_match_post reads the two as one 8-byte word (its queue key), and
 * a load that spans two smaller stores still in the store buffer is not
 * forwarded from them: it waits until they reach the cache, behind every
 * older store. That wait was about half of bm_pml_match_post's samples in
 * bm_mr's receiver (perf, 8 B). */
static inline void recv_set_tag_peer(struct bm_pml_request *req, int tag, int peer)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    _Static_assert(offsetof(struct bm_pml_request, peer) ==
                       offsetof(struct bm_pml_request, tag) + sizeof(int),
                   "tag and peer adjacent");
    uint64_t w = (uint64_t)(uint32_t)tag | (uint64_t)(uint32_t)peer << 32;
    memcpy((char *)req + offsetof(struct bm_pml_request, tag), &w, sizeof(w));
#else
    req->tag = tag;
    req->peer = peer;
#endif
}

/* Post req for (cid, src, tag). */
static bm_status_t recv_post(struct bm_pml_request *req, uint32_t cid, int src, int tag,
                             struct bm_pml_request **req_out)
{
    req->cid = cid;
    recv_set_tag_peer(req, tag, src);
    req->status.source = src;
    req->status.tag = tag;
    *req_out = req;
    if (__builtin_expect(bm_pml_g.mt, 0) && !bm_pml_in_drain()) {
        /* A waiting rendezvous is answered under the progress lock. */
        struct bm_pml_uframe *uf = bm_pml_match_post_mt(req);
        if (uf)
            bm_pml_recv_matched_uframe(req, uf);
        return BM_OK;
    }
    bm_pml_match_post(req);
    return BM_OK;
}

static bool recv_args_ok(int src, int tag)
{
    return (src >= 0 || src == BM_PML_ANY_SOURCE) && (tag >= 0 || tag == BM_PML_ANY_TAG);
}

bm_status_t bm_pml_irecv(void *buf, size_t capacity, uint32_t cid, int src, int tag,
                         struct bm_pml_request **req_out)
{
    if (!recv_args_ok(src, tag) || (!buf && capacity > 0))
        return BM_ERR_BAD_PARAM;
    struct bm_pml_request *req = bm_pml_request_alloc(BM_PML_REQ_RECV);
    if (!req)
        return BM_ERR_NO_MEMORY;
    req->rbuf = buf;
    req->capacity = capacity;
    return recv_post(req, cid, src, tag, req_out);
}

static bm_status_t irecv_dt(void *buf, size_t count, struct bm_util_dtype *type, uint32_t cid,
                            int src, int tag, void *bounce, struct bm_pml_request **req_out)
{
    if (!recv_args_ok(src, tag))
        return BM_ERR_BAD_PARAM;
    struct bm_pml_request *req = bm_pml_request_alloc(BM_PML_REQ_RECV);
    if (!req)
        return BM_ERR_NO_MEMORY;
    bm_util_dtype_conv_init(&req->conv, type, buf, count);
    req->capacity = req->conv.total;
    if (req->conv.contig) {
        /* One run: received as bytes, RGET included. */
        req->rbuf = req->conv.base + type->pdisp;
        req->conv.type = NULL;
    } else {
        /* A blocking receive of a process with one thread in MPI at a time
         * borrows the type: nothing can free it before the call returns,
         * and the reference's atomic add and subtract, each the first
         * locked instruction after the stores of a send, waited for those
         * to drain (perf: bm_util_dtype_retain among the top symbols of an
         * sm ping-pong of 2 KiB vectors). */
        if (bounce && !bm_pml_g.mt)
            req->type_borrowed = true;
        else
            bm_util_dtype_retain(type);
        if (bounce && type->pieces > 0 && type->size / type->pieces >= BM_UTIL_DTYPE_FAR_RUN_MIN)
            req->defer = bounce;
    }
    return recv_post(req, cid, src, tag, req_out);
}

bm_status_t bm_pml_irecv_dt(void *buf, size_t count, struct bm_util_dtype *type, uint32_t cid,
                            int src, int tag, struct bm_pml_request **req_out)
{
    return irecv_dt(buf, count, type, cid, src, tag, NULL, req_out);
}

bm_status_t bm_pml_irecv_dt_defer(void *buf, size_t count, struct bm_util_dtype *type, uint32_t cid,
                                  int src, int tag, void *bounce, struct bm_pml_request **req_out)
{
    return irecv_dt(buf, count, type, cid, src, tag, bounce, req_out);
}

/* The unpack a blocking receive deferred (bm_pml_irecv_dt_defer): from its
 * bounce, in this thread's cache, after the transport's buffer was given
 * back. */
void bm_pml_recv_dt_finish(struct bm_pml_request *req)
{
    if (req->defer_len) {
        bm_util_dtype_conv_unpack(&req->conv, 0, req->defer, req->defer_len);
        req->defer_len = 0;
        __atomic_store_n(&bm_pml_g.recv_deferred,
                         __atomic_load_n(&bm_pml_g.recv_deferred, __ATOMIC_RELAXED) + 1,
                         __ATOMIC_RELAXED);
    }
    if (req->type_borrowed)
        req->conv.type = NULL; /* no reference for bm_pml_request_free to drop */
}

void bm_pml_recv_matched_uframe(struct bm_pml_request *req, struct bm_pml_uframe *uf)
{
    bool taken = uf->type != BM_PML_HDR_MATCH && bm_pml_enter();
    bm_pml_recv_matched(req, uf->peer_world, uf->type, uf->src, uf->tag, uf->msg_len, uf->sreq,
                        uf->data, uf->data_len);
    bm_pml_leave(taken);
    free(uf);
}

bm_status_t bm_pml_recv(void *buf, size_t capacity, uint32_t cid, int src, int tag,
                        struct bm_pml_status *status_out)
{
    struct bm_pml_request *req;
    bm_status_t rc = bm_pml_irecv(buf, capacity, cid, src, tag, &req);
    if (rc != BM_OK)
        return rc;
    struct bm_pml_status st;
    bm_pml_request_wait(req, &st);
    bm_pml_request_free(req);
    if (status_out)
        *status_out = st;
    return st.error == BM_OK ? BM_OK : (bm_status_t)st.error;
}

/* Only receives of at most BM_PML_RECV_TAKE_MAX (4096) bytes wait this way.
 * Larger ones measured slower (sm, block minima at load 7: 128 B 0.185 ->
 * 0.237 us, 256 B 0.205 -> 0.256, 64 B 0.172 -> 0.181 when the look did
 * not take it), also with one look per pass and with the take refused for
 * messages of more than one fast-box unit: the waiting side's frequent
 * looks at the line the sender is still filling (a message of several
 * lines is published by a last store into its first line) seem to take
 * that line back from the sender between its stores (not shown). With the
 * take before posting (recv_take_early) and the vCPUs' line transfers ~10x
 * slower (load 40, BM_PML_WAIT_MODE=spin, rdtsc round trips, 3 interleaved
 * rounds, lowest-decile means in ticks) a limit of 256 measured faster
 * instead: 64 B 1847/1839/1853 -> 1578/1544/1517, 256 B 1870/1670/1576 ->
 * 1611/1514/1522, 8 B unchanged. Measured again (2026-11-29, sixth
 * session, same VM, main's library with BM_PML_RECV_TAKE_MAX 32 and 256
 * alternating, the default wait mode, rdtsc round trips, lowest-decile
 * means in ticks, medians of the rounds): 8 B 1362 -> 1353, 64 B 1817 ->
 * 1437, 128 B 1827 -> 1450, 256 B 1983 -> 1541 (5 rounds at load 30-40;
 * 256 lower in each of the 15 pairs at 64-256 B, also in the round that
 * ran in the VM's ~3x faster state: 530/570/584 -> 483/493/514). So the
 * default was 256. On 2026-11-29 (seventh session) the VM's vCPUs moved a
 * cache line ~3.6x slower again (the cache-line ping-pong 0.26 us), and
 * the quiet run put sm's 512 B-2 KiB latency at 1.3-1.65 us against
 * vader's 0.84-1.01: above 256 B every receive went the progress way.
 * main's release build, bm_latency -m 8:8192 over self,sm, 3 interleaved
 * rounds at load 1-2, BM_PML_RECV_TAKE_MAX 256 / 2048 / 4096 (us): 512 B
 * 1.25-1.29 / 0.51-0.56 / 0.54-0.57, 1 KiB 1.47-1.50 / 0.69-0.75 /
 * 0.72-0.73, 2 KiB 1.37-1.55 / 0.82-1.15 / 0.81-0.84, 4 KiB 1.38-1.59 /
 * 1.68-2.54 / 1.41-1.51, 8-256 B and 8 KiB the same in all three. So the
 * default is 4096, the largest a fast box holds (BM_BTL_SM_FBOX_MAX 4160
 * with the headers); the parameter stays. Why the progress way costs
 * ~0.8 us more than the take at 512 B but ~0.05 us at 256 B is not known
 * (non-blocking receives, which never take, still pay it). */

/* A blocking receive taking its message from the transport (btl.h
 * recv_take): req is posted as usual, and while it is the only receive
 * posted on its communicator and nothing from its source is held early,
 * the source's first eager path is asked BM_PML_RECV_TAKE times between
 * progress passes whether the next message from that source is a MATCH
 * with req's context, source, tag and the sequence number due: the
 * transport copies its payload into the buffer and consumes it, and req
 * completes as if that MATCH had matched it (it would have: it is the
 * next message from the source, and req the only receive it could meet).
 * This skips the receive descriptor, the callback and the match queues'
 * lookup on the path from an arrival to the program's answer. Anything
 * else (another tag or a larger message first, a rendezvous, a message
 * from another path or peer) is left to progress, which matches it the
 * usual way; so is req itself when progress met its message first. The
 * request stays posted throughout, so nothing else changes: probes,
 * failover and the order of matching see a posted receive. */
static __attribute__((noinline)) void recv_take_wait(struct bm_pml_request *req, int src_world)
{
    int looks = bm_pml_g.cfg.recv_take;
    struct bm_btl_path *path = NULL;
    struct bm_pml_hdr_match key = {
        .base = {.type = BM_PML_HDR_MATCH}, .cid = req->cid, .src = req->peer, .tag = req->tag};
    bool stale = true; /* path and key.seq to be looked up (again) */
    while (!bm_pml_request_done(req)) {
        if (stale) {
            /* Again after anything else happened: a pass that did work
             * may have matched from that source, failed the path, or
             * posted more. */
            path = bm_pml_path_first(&bm_btl_base_peer(src_world)->eager);
            if (!path || !(path->module->caps & BM_BTL_CAP_RECV_TAKE) ||
                !bm_pml_match_take_seq(req, &key.seq))
                return;
            stale = false;
        }
        for (int i = 0; i < looks; i++) {
            int64_t n =
                bm_btl_recv_take(path->module, path->endpoint, BM_PML_BTL_TAG(BM_PML_HDR_MATCH),
                                 &key, sizeof(key), req->rbuf, req->capacity);
            if (n >= 0) {
                bm_pml_match_taken(req);
                bm_pml_recv_status_set(req, src_world, key.src, key.tag, (uint64_t)n);
                bm_pml_request_complete(req);
                bm_pml_g.recv_taken++;
                return;
            }
            if (n == BM_BTL_TAKE_OTHER) {
                stale = true;
                break;
            }
        }
        if (bm_pml_progress_wait() > 0)
            stale = true;
    }
}

/* Looks of recv_take_early, in BM_PML_RECV_TAKEs: 256 with the default,
 * about as long as an 8-byte reply takes to come back from a peer on
 * another core (a few hundred ns), so that in a ping-pong the reply is
 * most often taken before anything was posted. */
#define RECV_TAKE_EARLY 16

/* The take of recv_take_wait before the receive is posted: while no
 * receive is posted on the communicator, nothing from the source is held
 * early and no message of (source, tag) waits unexpected, the next message
 * from the source is the one this receive would match (MPI's order: it is
 * next in sequence, and no other receive could meet it), so the transport
 * may hand it over with no request at all: no allocation, no posting and
 * unposting, no completion. Only looks, no progress pass, for a bounded
 * time; then (or when anything else is at the head) the receive is posted
 * and waits as usual. True when the message was taken: *status_out is
 * set. Measured (sm, 8 bytes, callgrind): an MPI_Recv whose message is
 * already in the fast box costs ~500 instructions instead of ~680 (posted
 * and taken by recv_take_wait), and in a ping-pong the path from the
 * arrival to the answer loses the unposting, the request's completion and
 * its release (~50 instructions). The idle looks before posting read the
 * ring's word (and sm's FIFO head) only. */
static __attribute__((noinline)) bool recv_take_early(void *buf, size_t capacity, uint32_t cid,
                                                      int src, int tag, int src_world,
                                                      struct bm_pml_status *status_out)
{
    struct bm_btl_path *path = bm_pml_path_first(&bm_btl_base_peer(src_world)->eager);
    struct bm_pml_hdr_match key = {
        .base = {.type = BM_PML_HDR_MATCH}, .cid = cid, .src = src, .tag = tag};
    if (!path || !(path->module->caps & BM_BTL_CAP_RECV_TAKE) ||
        !bm_pml_match_take_early(cid, src, tag, &key.seq))
        return false;
    int looks = bm_pml_g.cfg.recv_take * RECV_TAKE_EARLY;
    for (int i = 0; i < looks; i++) {
        int64_t n = bm_btl_recv_take(path->module, path->endpoint, BM_PML_BTL_TAG(BM_PML_HDR_MATCH),
                                     &key, sizeof(key), buf, capacity);
        if (n >= 0) {
            bm_pml_match_taken_early(cid, src);
            *status_out = (struct bm_pml_status){
                .source = src, .tag = tag, .error = BM_OK, .count = (size_t)n};
            bm_pml_g.recv_taken++;
            bm_pml_g.recv_taken_early++;
            return true;
        }
        if (n == BM_BTL_TAKE_OTHER)
            break;
    }
    return false;
}

bm_status_t bm_pml_recv_blocking(void *buf, size_t capacity, uint32_t cid, int src, int tag,
                                 int src_world, struct bm_pml_status *status_out)
{
    bool take = src_world >= 0 && tag >= 0 && capacity <= bm_pml_g.cfg.recv_take_max &&
                bm_pml_g.st && bm_pml_g.cfg.recv_take > 0;
    if (take && (buf || capacity == 0) &&
        recv_take_early(buf, capacity, cid, src, tag, src_world, status_out))
        return BM_OK;
    struct bm_pml_request *req;
    bm_status_t rc = bm_pml_irecv(buf, capacity, cid, src, tag, &req);
    if (rc != BM_OK)
        return rc;
    if (take)
        recv_take_wait(req, src_world);
    while (!bm_pml_request_done(req))
        bm_pml_progress_wait();
    bm_pml_request_finish(req, status_out); /* status and release in one call */
    return BM_OK;
}

static size_t ranges_add(struct bm_pml_request *req, size_t start, size_t end);

/* A deferred payload's length is kept in the request's uint16_t defer_len. */
_Static_assert(BM_PML_RECV_DEFER_MAX <= UINT16_MAX, "a deferred payload's length fits defer_len");

/* The first n bytes of a message, which came with its match (MATCH, RNDV),
 * into a non-contiguous receive: unpacked now, or copied into the bounce of
 * a blocking receive that unpacks them once it completed
 * (bm_pml_irecv_dt_defer). Measured on the 2-core test VM, sm ping-pong of
 * a vector of 64-double blocks, p10 per half round trip with the variants
 * interleaved in one run (load 12-20): 2 KiB 0.62-0.66 us unpacked here
 * straight out of the fast box (0.56-0.60 through a bounce unpacked here),
 * 0.50 deferred, 0.49 for MPI_Recv of the packed bytes + MPI_Unpack; 1.5
 * KiB 0.61 -> 0.44 (packed 0.44); 1 and 4 KiB alike either way. Blocks of
 * one double (every other double, 4 KiB: 1.01 here, 1.04 deferred) gain
 * nothing, so types of small runs are unpacked here (util/dtype.c
 * prefetches their source). */
static __attribute__((noinline)) void recv_unpack_first(struct bm_pml_request *req,
                                                        const void *data, size_t n)
{
    if (req->defer && n <= BM_PML_RECV_DEFER_MAX) {
        bm_util_copy(req->defer, data, n);
        req->defer_len = (uint16_t)n;
        return;
    }
    bm_util_dtype_conv_unpack(&req->conv, 0, data, n);
}

/* The bytes that came with the match (MATCH, RNDV, RGET) into the buffer. */
static void recv_copy_first(struct bm_pml_request *req, const void *data, size_t n)
{
    if (req->conv.type)
        recv_unpack_first(req, data, n);
    else
        bm_util_copy(req->rbuf, data, n);
}

/* The rendezvous part of bm_pml_recv_matched (RNDV): out of line, so that
 * an eager MATCH, the common case, pays for none of its registers. */
static __attribute__((noinline)) void recv_matched_rndv(struct bm_pml_request *req, int peer_world,
                                                        bm_pml_reqid_t sreq, const void *data,
                                                        size_t data_len, size_t n, size_t fit)
{
    size_t want = fit > data_len ? fit : data_len;
    if (want <= data_len)
        recv_copy_first(req, data, n);
    /* Rendezvous: ask for what is missing and still fits. When FRAGs
     * follow, the ACK leaves before the RNDV's bytes are copied out, so
     * that the sender prepares the first FRAG meanwhile; those bytes count
     * as arrived only once copied, since over the self transport FRAGs may
     * arrive (and would complete the request) inside the send. */
    req->want = want;
    req->nranges = 0;
    bool done_now = data_len >= want;
    req->arrived = done_now ? data_len : 0;
    struct bm_pml_hdr_ack ack = {
        .base = {.type = BM_PML_HDR_ACK},
        .sreq = sreq,
        .rreq = bm_pml_request_id(req),
        .offset = data_len,
        .length = req->want,
    };
    if (done_now) {
        bm_pml_restart_recv_finished(peer_world, sreq, req->want); /* its ACK may be asked again */
        bm_pml_request_complete(req);
    } else
        bm_pml_restart_recv_started(req, sreq, data_len); /* FRAGs follow: watched, then DONE */
    bm_pml_ctl_send(peer_world, BM_PML_BTL_TAG(BM_PML_HDR_ACK), &ack, sizeof(ack));
    if (done_now)
        return;
    recv_copy_first(req, data, n);
    req->arrived += ranges_add(req, 0, data_len);
    if (req->arrived >= req->want && req->placing == 0)
        bm_pml_recv_done(req);
}

void bm_pml_recv_matched_eager(struct bm_pml_request *req, int peer_world, int src, int tag,
                               const void *data, size_t len)
{
    bm_pml_recv_status_set(req, peer_world, src, tag, len);
    recv_copy_first(req, data, len < req->capacity ? len : req->capacity);
    bm_pml_request_complete(req);
}

void bm_pml_recv_matched(struct bm_pml_request *req, int peer_world, uint8_t type, int src, int tag,
                         uint64_t msg_len, bm_pml_reqid_t sreq, const void *data, size_t data_len)
{
    if (type == BM_PML_HDR_RGET) {
        bm_pml_rdma_rget_matched(req, peer_world, src, tag, msg_len, sreq, data, data_len);
        return;
    }
    if (type == BM_PML_HDR_MATCH) {
        /* A MATCH carries its whole message: msg_len == data_len (match_in). */
        bm_pml_recv_matched_eager(req, peer_world, src, tag, data, data_len);
        return;
    }
    size_t fit = bm_pml_recv_status_set(req, peer_world, src, tag, msg_len);
    size_t n = data_len < req->capacity ? data_len : req->capacity;
    recv_matched_rndv(req, peer_world, sreq, data, data_len, n, fit);
}

/* Copy n bytes at offset off of a received fragment (which may span
 * segments) to dst, with streaming stores if stream; or, with a convertor,
 * unpack them to its stream offset at (its large blocks with streaming
 * stores if stream). False when the fragment is shorter. */
static bool desc_copy_to(const struct bm_btl_recv_desc *d, size_t off, void *dst, size_t n,
                         bool stream, const struct bm_util_dtype_conv *conv, size_t at)
{
    char *out = dst;
    for (uint32_t i = 0; i < d->seg_count && n > 0; i++) {
        size_t len = d->seg[i].len;
        if (off >= len) {
            off -= len;
            continue;
        }
        size_t take = len - off < n ? len - off : n;
        const char *src = (const char *)d->seg[i].addr + off;
        if (conv) {
            size_t streamed;
            if (stream) {
                bm_util_dtype_conv_unpack_stream(conv, at, src, take, &streamed);
                __atomic_fetch_add(&bm_pml_g.unpack_streamed, streamed, __ATOMIC_RELAXED);
            } else {
                bm_util_dtype_conv_unpack(conv, at, src, take);
            }
            at += take;
        } else {
            if (stream)
                bm_util_copy_stream(out, src, take);
            else
                memcpy(out, src, take);
            out += take;
        }
        n -= take;
        off = 0;
    }
    return n == 0;
}

static bool desc_copy(const struct bm_btl_recv_desc *d, size_t off, void *dst, size_t n)
{
    return desc_copy_to(d, off, dst, n, false, NULL, 0);
}

static size_t desc_len(const struct bm_btl_recv_desc *d)
{
    size_t len = 0;
    for (uint32_t i = 0; i < d->seg_count; i++)
        len += d->seg[i].len;
    return len;
}

/* A fragment in several segments: out of line (bm_pml_recv_match_cb). */
static __attribute__((noinline)) void recv_match_segs(const struct bm_btl_recv_desc *d)
{
    /* header and payload in two segments (a transport referencing the
     * sender's buffer): no need to join them */
    if (d->seg_count == 2 && d->seg[0].len == bm_pml_match_hdr_len(d->seg[0].addr, d->seg[0].len)) {
        bm_pml_match_incoming_split(d->peer, d->seg[0].addr, d->seg[0].len, d->seg[1].addr,
                                    d->seg[1].len);
        return;
    }
    size_t len = desc_len(d);
    char *flat = malloc(len ? len : 1);
    if (!flat)
        abort();
    desc_copy(d, 0, flat, len);
    bm_pml_match_incoming(d->peer, flat, len);
    free(flat);
}

void bm_pml_recv_match_cb(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata)
{
    (void)m;
    (void)cbdata;
    if (d->seg_count == 1)
        bm_pml_match_incoming(d->peer, d->seg[0].addr, d->seg[0].len);
    else
        recv_match_segs(d);
}

/* Add [start, end) to the request's arrived ranges; returns how many of
 * those bytes had not arrived before. The RNDV's bytes [0, arrived) count as
 * arrived from the start. */
static size_t ranges_add(struct bm_pml_request *req, size_t start, size_t end)
{
    if (req->nranges == 0) {
        if (!req->cap_ranges) {
            req->ranges = malloc(4 * sizeof(*req->ranges));
            if (!req->ranges)
                abort();
            req->cap_ranges = 4;
        }
        req->ranges[0].start = 0;
        req->ranges[0].end = req->arrived;
        req->nranges = 1;
    }
    /* fast path: in-order data extends the last range */
    struct bm_pml_range *last = &req->ranges[req->nranges - 1];
    if (start == last->end) {
        last->end = end;
        return end - start;
    }
    size_t fresh = end - start;
    int i = 0;
    while (i < req->nranges && req->ranges[i].end < start)
        i++;
    /* ranges[i..j) overlap or touch [start, end): they merge into one */
    int j = i;
    size_t ns = start, ne = end;
    while (j < req->nranges && req->ranges[j].start <= end) {
        size_t os = req->ranges[j].start > start ? req->ranges[j].start : start;
        size_t oe = req->ranges[j].end < end ? req->ranges[j].end : end;
        if (oe > os)
            fresh -= oe - os;
        if (req->ranges[j].start < ns)
            ns = req->ranges[j].start;
        if (req->ranges[j].end > ne)
            ne = req->ranges[j].end;
        j++;
    }
    if (j == i) {
        if (req->nranges == req->cap_ranges) {
            int cap = req->cap_ranges * 2;
            struct bm_pml_range *r = realloc(req->ranges, (size_t)cap * sizeof(*r));
            if (!r)
                abort();
            req->ranges = r;
            req->cap_ranges = cap;
        }
        memmove(&req->ranges[i + 1], &req->ranges[i],
                (size_t)(req->nranges - i) * sizeof(*req->ranges));
        req->nranges++;
    } else if (j > i + 1) {
        memmove(&req->ranges[i + 1], &req->ranges[j],
                (size_t)(req->nranges - j) * sizeof(*req->ranges));
        req->nranges -= j - i - 1;
    }
    req->ranges[i].start = ns;
    req->ranges[i].end = ne;
    return fresh;
}

size_t bm_pml_recv_ranges_add(struct bm_pml_request *req, size_t start, size_t end)
{
    return ranges_add(req, start, end);
}

void bm_pml_recv_done(struct bm_pml_request *req)
{
    if (req->rget_class >= 0)
        bm_pml_rdma_copy_done(req);
    free(req->ranges);
    req->ranges = NULL;
    req->nranges = req->cap_ranges = 0;
    bm_pml_restart_recv_done(req);
    bm_pml_request_complete(req);
}

/* Receive placement (btl.h): a FRAG still arriving goes straight into the
 * receive buffer, or into the blocks of a non-contiguous receive that its
 * byte range covers. Declined (copied as usual) when the range is not all
 * in the buffer, the type's blocks are small (bm_pml_iov_blocks) or the
 * range would need more than max pieces, or the FRAG is
 * a resend (its receive may complete by the original meanwhile). While a
 * placement is under way the receive cannot complete (req->placing). */
_Static_assert(sizeof(struct bm_util_dtype_piece) == sizeof(struct bm_btl_iov),
               "dtype pieces are converted in place into transport pieces");
uint32_t bm_pml_conv_iov(const struct bm_util_dtype_conv *conv, size_t at, size_t n,
                         struct bm_btl_iov *iov, uint32_t max, size_t *done)
{
    struct bm_util_dtype_piece *p = (struct bm_util_dtype_piece *)(void *)iov;
    *done = 0;
    uint32_t k =
        (uint32_t)bm_util_dtype_pieces(conv->type, conv->base, conv->count, at, n, p, max, done);
    for (uint32_t i = 0; i < k; i++) {
        struct bm_util_dtype_piece pc;
        memcpy(&pc, &p[i], sizeof(pc));
        iov[i].addr = (uint64_t)(uintptr_t)pc.addr;
        iov[i].len = pc.len;
    }
    return k;
}

uint32_t bm_pml_recv_frag_place(struct bm_btl_module *m, const struct bm_btl_recv_desc *d,
                                size_t len, struct bm_btl_iov *iov, uint32_t max, void *cbdata)
{
    (void)m;
    (void)cbdata;
    struct bm_pml_hdr_frag fh;
    if (len < sizeof(fh) || !desc_copy(d, 0, &fh, sizeof(fh)) || fh.base.type != BM_PML_HDR_FRAG ||
        (fh.base.flags & BM_PML_HDR_F_RETRANSMIT))
        return 0;
    size_t plen = len - sizeof(fh);
    struct bm_pml_request *req = bm_pml_request_lookup(fh.rreq, BM_PML_REQ_RECV);
    if (!req || req->src_world != d->peer || req->want == 0 || fh.offset > req->want ||
        plen > req->want - fh.offset || fh.offset > req->capacity ||
        plen > req->capacity - fh.offset || plen == 0)
        return 0;
    uint32_t k;
    if (req->conv.type) {
        if (!bm_pml_iov_blocks(req->conv.type))
            return 0;
        size_t done;
        k = bm_pml_conv_iov(&req->conv, fh.offset, plen, iov, max, &done);
        if (done != plen)
            return 0;
    } else {
        iov[0].addr = (uint64_t)(uintptr_t)(req->rbuf + fh.offset);
        iov[0].len = plen;
        k = 1;
    }
    req->placing++;
    return k;
}

/* The end of a placement: PLACED (the payload is in the buffer) or
 * ABORTED (lost: nothing counts, the restart asks for the range again). */
static void recv_frag_placed(const struct bm_btl_recv_desc *d, const struct bm_pml_hdr_frag *fh)
{
    struct bm_pml_request *req = bm_pml_request_lookup(fh->rreq, BM_PML_REQ_RECV);
    if (!req || req->placing == 0) {
        /* place took it for an active receive that cannot complete before this call */
        bm_log_error("a placed FRAG from rank %d names no receive waiting for it (request %#llx)",
                     d->peer, (unsigned long long)fh->rreq);
        return;
    }
    req->placing--;
    if (d->flags & BM_BTL_RECV_F_PLACED) {
        __atomic_fetch_add(&bm_pml_g.placed_frags, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&bm_pml_g.placed_bytes, d->placed, __ATOMIC_RELAXED);
        size_t fresh = ranges_add(req, fh->offset, fh->offset + d->placed);
        req->arrived += fresh;
        if (req->rget_class >= 0)
            bm_pml_rdma_copy_bytes(req, fresh);
    } else {
        __atomic_fetch_add(&bm_pml_g.placed_aborted, 1, __ATOMIC_RELAXED);
    }
    if (req->arrived >= req->want && req->placing == 0)
        bm_pml_recv_done(req);
}

void bm_pml_recv_frag_cb(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata)
{
    (void)m;
    (void)cbdata;
    struct bm_pml_hdr_frag fh;
    if (!desc_copy(d, 0, &fh, sizeof(fh)) || fh.base.type != BM_PML_HDR_FRAG) {
        bm_log_ratelimited(BM_LOG_ERROR, "dropped a malformed FRAG from rank %d", d->peer);
        return;
    }
    bm_pml_restart_heard(d->peer);
    if (__builtin_expect(d->flags != 0, 0)) {
        recv_frag_placed(d, &fh);
        return;
    }
    size_t plen = desc_len(d) - sizeof(fh);
    struct bm_pml_request *req = bm_pml_request_lookup(fh.rreq, BM_PML_REQ_RECV);
    if (!req || req->src_world != d->peer || req->want == 0 || fh.offset > req->want ||
        plen > req->want - fh.offset) {
        if (fh.base.flags & BM_PML_HDR_F_RETRANSMIT) {
            /* a resent FRAG whose original arrived and completed the receive */
            bm_log_debug("dropped a resent FRAG from rank %d for a finished receive", d->peer);
            return;
        }
        if (bm_pml_restart_dup_frag(d->peer, fh.rreq)) {
            /* its bytes came again for a restart (a copy may overtake the
             * original on another path) and completed the receive */
            bm_log_debug("dropped a FRAG from rank %d for a receive a restart finished", d->peer);
            return;
        }
        bm_log_ratelimited(BM_LOG_ERROR,
                           "dropped a FRAG from rank %d naming no active receive (request %#llx, "
                           "offset %llu, %zu bytes)",
                           d->peer, (unsigned long long)fh.rreq, (unsigned long long)fh.offset,
                           plen);
        return;
    }
    if (fh.offset < req->capacity) {
        size_t n = req->capacity - fh.offset < plen ? req->capacity - fh.offset : plen;
        size_t smin = bm_pml_g.cfg.stream_copy_min;
        bool stream = smin && req->msg_len >= smin;
        if (req->conv.type)
            desc_copy_to(d, sizeof(fh), NULL, n, stream, &req->conv, fh.offset);
        else
            desc_copy_to(d, sizeof(fh), req->rbuf + fh.offset, n, stream, NULL, 0);
    }
    size_t fresh = ranges_add(req, fh.offset, fh.offset + plen);
    req->arrived += fresh;
    if (req->rget_class >= 0)
        bm_pml_rdma_copy_bytes(req, fresh);
    if (req->arrived >= req->want && req->placing == 0)
        bm_pml_recv_done(req);
}
