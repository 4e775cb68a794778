/* The matching engine: per-context posted and unexpected queues, and the
 * per-(context, source) sequence numbers that make matching follow MPI's
 * order even when transports deliver out of order or a peer is reached over
 * several paths. A MATCH or RNDV fragment is matched only when its sequence
 * number is the next expected from its source; earlier arrivals wait in a
 * sorted held list, older ones are duplicates (a resend after a path
 * failure) and are dropped. Queues are hash tables of FIFO lists keyed by
 * (source or ANY, tag or ANY); see pml_internal.h for why every operation is
 * O(1) whatever the number of waiting messages. */
#define BM_LOG_SUBSYS "pml"
#include "util/log.h"

#include "pml/pml_internal.h"

#include <stdlib.h>
#include <string.h>

#define BM_PML_CTX_SLOTS 64
/* Source ranks above this in a header are corrupt (no communicator is larger
 * than the job; before init, in unit tests, a generous bound). */
#define BM_PML_SRC_LIMIT_NOINIT (1 << 20)

static struct bm_pml_ctx *ctx_slots[BM_PML_CTX_SLOTS];
/* The context found last (one compare instead of a lookup); not used under
 * MPI_THREAD_MULTIPLE, where it would be shared by every thread. */
static struct bm_pml_ctx *ctx_last;
/* Under MPI_THREAD_MULTIPLE: guards ctx_slots and the chains (not the
 * contexts, which have their own locks). */
static struct bm_util_lock_class ctx_class = {.name = "context"};
static struct bm_util_lock_class ctx_table_class = {.name = "context table"};
static struct bm_util_lock ctx_table_lock;
static bool ctx_table_lock_ready;
/* Under MPI_THREAD_MULTIPLE each thread keeps the contexts it looked up in
 * a cache of its own (direct-mapped by cid), so that threads working on
 * different communicators do not meet on the table's lock for every
 * message (README "Threads"). Entries hold the cid beside the pointer (a
 * miss never reads a context) and are valid while the table's generation
 * is the one they were filled under: releasing a context moves it on (under
 * the table's lock, before the context is freed), which empties every
 * thread's cache at its next lookup. Generation 0 is never current, so a
 * new thread's zeroed cache is empty. A hit reads one thread-local entry and
 * one shared word that only releases write. */
#define CTX_TCACHE 8
static _Atomic uint64_t ctx_table_gen = 1;
static _Thread_local __attribute__((tls_model("initial-exec"))) struct {
    uint64_t gen;
    uint32_t cid[CTX_TCACHE];
    struct bm_pml_ctx *c[CTX_TCACHE];
} ctx_tcache;

void bm_pml_match_init(void)
{
    if (bm_pml_g.mt && !ctx_table_lock_ready) {
        bm_util_lock_init(&ctx_table_lock, &ctx_table_class, false);
        ctx_table_lock_ready = true;
    }
}

/* ---- queue tables ---------------------------------------------------------- */

/* Fibonacci hashing: one multiply spreads (source, tag) over the top bits. */
static size_t qt_slot(const struct bm_pml_qtable *t, uint64_t k)
{
    return (size_t)((k * 0x9e3779b97f4a7c15ULL) >> t->shift);
}

static int qclass(int src, int tag)
{
    return (src == BM_PML_ANY_SOURCE ? 2 : 0) + (tag == BM_PML_ANY_TAG ? 1 : 0);
}

/* The cache entry a key uses: one per class (exact, any tag, any source, both). */
static unsigned qt_cache_index(uint64_t k)
{
    return (unsigned)qclass((int)(uint32_t)(k >> 32), (int)(uint32_t)k);
}

static struct bm_pml_qbucket *qt_find(struct bm_pml_qtable *t, uint64_t key)
{
    unsigned c = qt_cache_index(key);
    struct bm_pml_qbucket *b = t->cache[c];
    if (b && b->key == key)
        return b;
    if (t->nslots == 0)
        return NULL;
    for (b = t->slots[qt_slot(t, key)]; b; b = b->hnext)
        if (b->key == key)
            return t->cache[c] = b;
    return NULL;
}

static void qt_insert_all(struct bm_pml_qtable *t, struct bm_pml_qbucket *b)
{
    while (b) {
        struct bm_pml_qbucket *next = b->hnext;
        size_t h = qt_slot(t, b->key);
        b->hnext = t->slots[h];
        t->slots[h] = b;
        b = next;
    }
}

static void qt_bucket_drop(struct bm_pml_qtable *t, struct bm_pml_qbucket *b)
{
    if (t->nspare < 64) {
        b->hnext = t->spare;
        t->spare = b;
        t->nspare++;
    } else {
        free(b);
    }
}

/* Empty lists stay in the table (a blocking receive empties and refills
 * the same one at every message); they are dropped here, when the table is
 * full, so that many distinct tags do not pile up. Doubles the table when
 * more than half of it still holds waiting entries: every sweep is paid for
 * by the insertions since the last one. */
static bool qt_make_room(struct bm_pml_qtable *t)
{
    for (size_t i = 0; i < t->nslots; i++) {
        struct bm_pml_qbucket **pp = &t->slots[i];
        while (*pp) {
            struct bm_pml_qbucket *b = *pp;
            if (b->head) {
                pp = &b->hnext;
                continue;
            }
            *pp = b->hnext;
            t->nused--;
            qt_bucket_drop(t, b);
        }
    }
    memset(t->cache, 0, sizeof(t->cache));
    if (t->nused < t->nslots / 2)
        return true;
    size_t n = t->nslots ? t->nslots * 2 : 16;
    struct bm_pml_qbucket **slots = calloc(n, sizeof(*slots));
    if (!slots)
        return false;
    struct bm_pml_qbucket **old = t->slots;
    size_t nold = t->nslots;
    t->slots = slots;
    t->nslots = n;
    t->shift = 64u - (unsigned)__builtin_ctzll(n);
    for (size_t i = 0; i < nold; i++)
        qt_insert_all(t, old[i]);
    free(old);
    return true;
}

/* A new, empty list for key (qt_append's rare path: out of line). */
static __attribute__((noinline)) struct bm_pml_qbucket *qt_bucket_new(struct bm_pml_qtable *t,
                                                                      uint64_t key)
{
    if (t->nused >= t->nslots && !qt_make_room(t))
        abort(); /* out of memory while matching: nothing sensible remains */
    struct bm_pml_qbucket *b = t->spare;
    if (b) {
        t->spare = b->hnext;
        t->nspare--;
    } else if (!(b = malloc(sizeof(*b)))) {
        abort();
    }
    b->head = b->tail = NULL;
    b->key = key;
    size_t h = qt_slot(t, key);
    b->hnext = t->slots[h];
    t->slots[h] = b;
    t->nused++;
    t->cache[qt_cache_index(key)] = b;
    return b;
}

static inline void qt_append(struct bm_pml_qtable *t, uint64_t key, struct bm_pml_qnode *node)
{
    struct bm_pml_qbucket *b = qt_find(t, key);
    if (__builtin_expect(!b, 0))
        b = qt_bucket_new(t, key);
    node->bucket = b;
    node->next = NULL;
    node->prev = b->tail;
    if (b->tail)
        b->tail->next = node;
    else
        b->head = node;
    b->tail = node;
}

static inline void qt_remove(struct bm_pml_qnode *node)
{
    struct bm_pml_qbucket *b = node->bucket;
    if (node->prev)
        node->prev->next = node->next;
    else
        b->head = node->next;
    if (node->next)
        node->next->prev = node->prev;
    else
        b->tail = node->prev;
    node->bucket = NULL;
}

static struct bm_pml_qnode *qt_head(struct bm_pml_qtable *t, uint64_t key)
{
    struct bm_pml_qbucket *b = qt_find(t, key);
    return b ? b->head : NULL;
}

static void qt_fini(struct bm_pml_qtable *t)
{
    for (size_t i = 0; i < t->nslots; i++) {
        struct bm_pml_qbucket *b = t->slots[i];
        while (b) {
            struct bm_pml_qbucket *next = b->hnext;
            free(b);
            b = next;
        }
    }
    while (t->spare) {
        struct bm_pml_qbucket *next = t->spare->hnext;
        free(t->spare);
        t->spare = next;
    }
    free(t->slots);
    memset(t, 0, sizeof(*t));
}

/* ---- contexts ---------------------------------------------------------------- */

static __attribute__((noinline)) struct bm_pml_ctx *ctx_find_or_add(uint32_t cid)
{
    struct bm_pml_ctx **slot = &ctx_slots[cid % BM_PML_CTX_SLOTS];
    for (struct bm_pml_ctx *c = *slot; c; c = c->hnext)
        if (c->cid == cid)
            return c;
    struct bm_pml_ctx *c = calloc(1, sizeof(*c));
    if (!c)
        abort();
    bm_util_lock_init(&c->lock, &ctx_class, false);
    c->cid = cid;
    c->hnext = *slot;
    *slot = c;
    return c;
}

/* Under MPI_THREAD_MULTIPLE, a miss of the thread's cache: the lookup
 * under the context table's lock, remembered. Out of line, as the other
 * slow paths below (the table's lookup, a longer send sequence array):
 * inlined, their registers made every hit save and restore five (a hit of
 * ctx_get_mt was 26 instructions, the sequence number's path 45). */
static __attribute__((noinline, cold)) struct bm_pml_ctx *ctx_get_mt_slow(uint32_t cid)
{
    bm_util_lock_take(&ctx_table_lock);
    struct bm_pml_ctx *c = ctx_find_or_add(cid);
    uint64_t gen = atomic_load_explicit(&ctx_table_gen, memory_order_relaxed);
    bm_util_lock_give(&ctx_table_lock);
    if (ctx_tcache.gen != gen) {
        memset(ctx_tcache.c, 0, sizeof(ctx_tcache.c));
        ctx_tcache.gen = gen;
    }
    ctx_tcache.cid[cid % CTX_TCACHE] = cid;
    ctx_tcache.c[cid % CTX_TCACHE] = c;
    return c;
}

/* Under MPI_THREAD_MULTIPLE: the thread's cache, else the table. A context
 * is released only when its communicator is freed, which no other thread
 * may be using then (MPI), so a hit stays valid while the caller uses it.
 * Not inlined: the single-threaded callers stay as they were. */
static __attribute__((noinline)) struct bm_pml_ctx *ctx_get_mt(uint32_t cid)
{
    unsigned i = cid % CTX_TCACHE;
    struct bm_pml_ctx *c = ctx_tcache.c[i];
    if (__builtin_expect(c && ctx_tcache.cid[i] == cid &&
                             ctx_tcache.gen ==
                                 atomic_load_explicit(&ctx_table_gen, memory_order_acquire),
                         1))
        return c;
    return ctx_get_mt_slow(cid);
}

/* Single-threaded: the context seen last, or the table. */
static inline struct bm_pml_ctx *ctx_get_st(uint32_t cid)
{
    if (__builtin_expect(ctx_last && ctx_last->cid == cid, 1))
        return ctx_last;
    return ctx_last = ctx_find_or_add(cid);
}

static inline struct bm_pml_ctx *ctx_get(uint32_t cid)
{
    return __builtin_expect(bm_pml_g.mt, 0) ? ctx_get_mt(cid) : ctx_get_st(cid);
}

struct bm_pml_ctx *bm_pml_ctx_get(uint32_t cid)
{
    return ctx_get(cid);
}

struct bm_pml_ctx *bm_pml_ctx_lock(uint32_t cid)
{
    struct bm_pml_ctx *c = ctx_get(cid);
    bm_pml_lock(&c->lock);
    return c;
}

static int grow_len(int have, int need)
{
    int n = have ? have : 8;
    while (n <= need)
        n *= 2;
    return n;
}

static __attribute__((noinline, cold)) void ctx_send_grow(struct bm_pml_ctx *ctx, int dst_world)
{
    int n = grow_len(ctx->nsend, dst_world);
    uint32_t *s = realloc(ctx->send_seq, (size_t)n * sizeof(*s));
    if (!s)
        abort();
    memset(s + ctx->nsend, 0, (size_t)(n - ctx->nsend) * sizeof(*s));
    ctx->send_seq = s;
    ctx->nsend = n;
}

uint32_t bm_pml_ctx_next_seq(struct bm_pml_ctx *ctx, int dst_world)
{
    bm_pml_lock(&ctx->lock);
    if (dst_world >= ctx->nsend)
        ctx_send_grow(ctx, dst_world);
    uint32_t seq = ctx->send_seq[dst_world]++;
    bm_pml_unlock(&ctx->lock);
    return seq;
}

uint32_t bm_pml_match_next_seq(uint32_t cid, int dst_world)
{
    if (__builtin_expect(bm_pml_g.mt, 0))
        return bm_pml_ctx_next_seq(ctx_get_mt(cid), dst_world);
    struct bm_pml_ctx *ctx = ctx_get_st(cid);
    if (__builtin_expect(dst_world >= ctx->nsend, 0))
        ctx_send_grow(ctx, dst_world);
    return ctx->send_seq[dst_world]++;
}

static struct bm_pml_srcstate *ctx_src(struct bm_pml_ctx *ctx, int src)
{
    if (src >= ctx->nsrcs) {
        int n = grow_len(ctx->nsrcs, src);
        struct bm_pml_srcstate *s = realloc(ctx->srcs, (size_t)n * sizeof(*s));
        if (!s)
            abort();
        memset(s + ctx->nsrcs, 0, (size_t)(n - ctx->nsrcs) * sizeof(*s));
        ctx->srcs = s;
        ctx->nsrcs = n;
    }
    return &ctx->srcs[src];
}

/* ---- matching ------------------------------------------------------------------ */

/* The oldest posted receive that matches (src, tag), or NULL. Looks only
 * at the classes that have posts: without wildcard receives, one lookup. */
static struct bm_pml_request *find_posted(struct bm_pml_ctx *ctx, int src, int tag)
{
    if (ctx->nposted == ctx->nposted_class[0]) {
        if (ctx->nposted == 0)
            return NULL;
        struct bm_pml_qnode *n = qt_head(&ctx->posted, bm_pml_qkey(src, tag));
        return n ? BM_PML_CONTAINER_OF(n, struct bm_pml_request, qnode) : NULL;
    }
    struct bm_pml_request *best = NULL;
    for (int c = 0; c < 4; c++) {
        if (ctx->nposted_class[c] == 0)
            continue;
        int ksrc = (c & 2) ? BM_PML_ANY_SOURCE : src;
        int ktag = (c & 1) ? BM_PML_ANY_TAG : tag;
        struct bm_pml_qnode *n = qt_head(&ctx->posted, bm_pml_qkey(ksrc, ktag));
        if (!n)
            continue;
        struct bm_pml_request *r = BM_PML_CONTAINER_OF(n, struct bm_pml_request, qnode);
        if (!best || r->post_seq < best->post_seq)
            best = r;
    }
    return best;
}

static inline void posted_remove(struct bm_pml_ctx *ctx, struct bm_pml_request *req)
{
    qt_remove(&req->qnode);
    ctx->nposted--;
    ctx->nposted_class[qclass(req->peer, req->tag)]--;
    req->ctx = NULL;
}

static void unexpected_add(struct bm_pml_ctx *ctx, struct bm_pml_uframe *uf)
{
    qt_append(&ctx->unexpected, bm_pml_qkey(uf->src, uf->tag), &uf->node[0]);
    qt_append(&ctx->unexpected, bm_pml_qkey(uf->src, BM_PML_ANY_TAG), &uf->node[1]);
    qt_append(&ctx->unexpected, bm_pml_qkey(BM_PML_ANY_SOURCE, uf->tag), &uf->node[2]);
    qt_append(&ctx->unexpected, bm_pml_qkey(BM_PML_ANY_SOURCE, BM_PML_ANY_TAG), &uf->node[3]);
    ctx->nunexpected++;
}

void bm_pml_match_remove_unexpected(struct bm_pml_uframe *uf)
{
    for (int i = 0; i < 4; i++)
        qt_remove(&uf->node[i]);
    uf->ctx->nunexpected--;
}

bool bm_pml_match_cancel(uint32_t cid, int src, int tag, uint32_t seq, int peer_world)
{
    struct bm_pml_ctx *ctx = bm_pml_ctx_lock(cid);
    struct bm_pml_uframe *found = NULL;
    /* The exact (source, tag) list holds the message if it waits. */
    for (struct bm_pml_qnode *n =
             ctx->nunexpected ? qt_head(&ctx->unexpected, bm_pml_qkey(src, tag)) : NULL;
         n && !found; n = n->next) {
        struct bm_pml_uframe *uf = BM_PML_CONTAINER_OF(n, struct bm_pml_uframe, node[0]);
        if (uf->seq == seq && uf->peer_world == peer_world)
            found = uf;
    }
    if (found)
        bm_pml_match_remove_unexpected(found);
    bm_pml_ctx_unlock(ctx);
    free(found);
    return found != NULL;
}

static inline struct bm_pml_uframe *find_unexpected(struct bm_pml_ctx *ctx, int src, int tag)
{
    if (ctx->nunexpected == 0)
        return NULL;
    int c = qclass(src, tag);
    struct bm_pml_qnode *n = qt_head(&ctx->unexpected, bm_pml_qkey(src, tag));
    return n ? BM_PML_CONTAINER_OF(n - c, struct bm_pml_uframe, node[0]) : NULL;
}

struct bm_pml_uframe *bm_pml_match_find_unexpected(uint32_t cid, int src, int tag)
{
    return find_unexpected(ctx_get(cid), src, tag);
}

/* A fragment whose turn has come: give it to a posted receive or queue it.
 * Its payload is the contiguous data_len bytes at data. */
static void match_process(struct bm_pml_ctx *ctx, int peer_world, const struct bm_pml_hdr_match *mh,
                          uint64_t msg_len, bm_pml_reqid_t sreq, const char *data, size_t data_len)
{
    struct bm_pml_request *req = find_posted(ctx, mh->src, mh->tag);
    if (req) {
        posted_remove(ctx, req);
        bm_pml_recv_matched(req, peer_world, mh->base.type, mh->src, mh->tag, msg_len, sreq, data,
                            data_len);
        return;
    }
    struct bm_pml_uframe *uf = malloc(sizeof(*uf) + data_len);
    if (!uf)
        abort();
    uf->ctx = ctx;
    uf->src = mh->src;
    uf->tag = mh->tag;
    uf->seq = mh->seq;
    uf->peer_world = peer_world;
    uf->type = mh->base.type;
    uf->msg_len = msg_len;
    uf->sreq = sreq;
    uf->data_len = data_len;
    if (data_len)
        memcpy(uf->data, data, data_len);
    unexpected_add(ctx, uf);
}

/* Header size of a MATCH or RNDV fragment by its first byte, 0 for others. */
static size_t match_hdr_len(const void *head, size_t head_len)
{
    if (head_len < 1)
        return 0;
    uint8_t type = *(const uint8_t *)head;
    if (type == BM_PML_HDR_MATCH)
        return sizeof(struct bm_pml_hdr_match);
    /* An RGET is matched as a RNDV whose payload is the rest of its header (rdma.c). */
    if (type == BM_PML_HDR_RNDV || type == BM_PML_HDR_RGET)
        return sizeof(struct bm_pml_hdr_rndv);
    return 0;
}

size_t bm_pml_match_hdr_len(const void *head, size_t head_len)
{
    return match_hdr_len(head, head_len);
}

/* Process a fragment that is head followed by tail, where either tail is
 * empty or head is exactly the header (how transports hand over a header
 * and a payload in two segments). */
static void match_in(struct bm_pml_ctx *locked, int peer_world, const char *head, size_t head_len,
                     const char *tail, size_t tail_len)
{
    size_t len = head_len + tail_len;
    size_t hlen = match_hdr_len(head, head_len);
    struct bm_pml_hdr_match mh;
    struct bm_pml_hdr_rndv rh;
    if (hlen == 0 || head_len < hlen || (tail_len && head_len != hlen)) {
        bm_log_ratelimited(BM_LOG_ERROR,
                           "dropped a %zu-byte fragment from rank %d: not a whole MATCH or "
                           "RNDV fragment (type %u)",
                           len, peer_world, head_len ? *(const uint8_t *)head : 0u);
        return;
    }
    memcpy(&mh, head, sizeof(mh));
    uint64_t msg_len = len - hlen;
    bm_pml_reqid_t sreq = 0;
    if (mh.base.type == BM_PML_HDR_RNDV || mh.base.type == BM_PML_HDR_RGET) {
        memcpy(&rh, head, sizeof(rh));
        msg_len = rh.msg_len;
        sreq = rh.sreq;
    }
    int src_limit = bm_pml_g.world_size > 0 ? bm_pml_g.world_size : BM_PML_SRC_LIMIT_NOINIT;
    if (mh.src < 0 || mh.src >= src_limit || mh.tag < 0 || msg_len < len - hlen ||
        (mh.base.type != BM_PML_HDR_MATCH && sreq == 0)) {
        bm_log_ratelimited(BM_LOG_ERROR,
                           "dropped a malformed fragment from rank %d (type %u, source %d, tag %d, "
                           "%zu bytes)",
                           peer_world, mh.base.type, mh.src, mh.tag, len);
        return;
    }
    const char *data = tail_len ? tail : head + hlen;

    struct bm_pml_ctx *ctx = locked ? locked : ctx_get(mh.cid);
    struct bm_pml_srcstate *st = ctx_src(ctx, mh.src);
    if (mh.seq != st->expected) {
        if ((int32_t)(mh.seq - st->expected) < 0) {
            if (mh.base.type == BM_PML_HDR_RNDV && (mh.base.flags & BM_PML_HDR_F_RETRANSMIT))
                bm_pml_restart_dup_rndv(peer_world, &rh); /* restart.c: the sender may wait */
            bm_log_debug(
                "dropped duplicate fragment seq %u from rank %d (context %u, expecting %u)", mh.seq,
                peer_world, mh.cid, st->expected);
            return;
        }
        /* Early: keep it, sorted, until the sequence reaches it. */
        struct bm_pml_held **pp = &st->held;
        while (*pp && (int32_t)((*pp)->seq - mh.seq) < 0)
            pp = &(*pp)->next;
        if (*pp && (*pp)->seq == mh.seq) {
            bm_log_debug("dropped duplicate early fragment seq %u from rank %d", mh.seq,
                         peer_world);
            return;
        }
        struct bm_pml_held *h = malloc(sizeof(*h) + len);
        if (!h)
            abort();
        h->seq = mh.seq;
        h->peer_world = peer_world;
        h->len = len;
        memcpy(h->bytes, head, head_len);
        if (tail_len)
            memcpy(h->bytes + head_len, tail, tail_len);
        h->next = *pp;
        *pp = h;
        return;
    }

    match_process(ctx, peer_world, &mh, msg_len, sreq, data, len - hlen);
    st = ctx_src(ctx, mh.src);
    st->expected++;
    while (st->held && st->held->seq == st->expected) {
        struct bm_pml_held *h = st->held;
        st->held = h->next;
        struct bm_pml_hdr_match hm;
        memcpy(&hm, h->bytes, sizeof(hm));
        size_t hl = match_hdr_len(h->bytes, h->len);
        uint64_t ml = h->len - hl;
        bm_pml_reqid_t sr = 0;
        if (hm.base.type == BM_PML_HDR_RNDV || hm.base.type == BM_PML_HDR_RGET) {
            memcpy(&rh, h->bytes, sizeof(rh));
            ml = rh.msg_len;
            sr = rh.sreq;
        }
        match_process(ctx, h->peer_world, &hm, ml, sr, h->bytes + hl, h->len - hl);
        free(h);
        st = ctx_src(ctx, mh.src);
        st->expected++;
    }
}

/* The common case in one pass: an eager MATCH fragment of the context seen
 * last, in sequence, from a source with nothing held, meeting a posted
 * receive when no wildcard receive is posted. True when it was delivered;
 * anything else goes through match_in, which checks it all again. */
static bool match_fast(struct bm_pml_ctx *ctx, int peer_world, const char *frag, size_t len)
{
    struct bm_pml_hdr_match mh;
    if (len < sizeof(mh) || (uint8_t)frag[0] != BM_PML_HDR_MATCH)
        return false;
    memcpy(&mh, frag, sizeof(mh));
    if (!ctx || ctx->cid != mh.cid || mh.src < 0 || mh.src >= ctx->nsrcs || mh.tag < 0 ||
        ctx->nposted == 0 || ctx->nposted != ctx->nposted_class[0])
        return false;
    struct bm_pml_srcstate *st = &ctx->srcs[mh.src];
    if (mh.seq != st->expected || st->held)
        return false;
    struct bm_pml_qnode *n = qt_head(&ctx->posted, bm_pml_qkey(mh.src, mh.tag));
    if (!n)
        return false;
    struct bm_pml_request *req = BM_PML_CONTAINER_OF(n, struct bm_pml_request, qnode);
    posted_remove(ctx, req);
    st->expected++;
    bm_pml_recv_matched_eager(req, peer_world, mh.src, mh.tag, frag + sizeof(mh), len - sizeof(mh));
    return true;
}

/* Under MPI_THREAD_MULTIPLE: the locked context a whole MATCH, RNDV or
 * RGET header names, or NULL for a fragment match_in drops unread. */
static struct bm_pml_ctx *incoming_ctx(const char *head, size_t head_len)
{
    size_t hlen = match_hdr_len(head, head_len);
    if (hlen == 0 || head_len < hlen)
        return NULL;
    struct bm_pml_hdr_match mh;
    memcpy(&mh, head, sizeof(mh));
    return bm_pml_ctx_lock(mh.cid);
}

void bm_pml_match_incoming(int peer_world, const void *frag, size_t len)
{
    if (__builtin_expect(bm_pml_g.mt, 0)) {
        struct bm_pml_ctx *ctx = incoming_ctx(frag, len);
        if (!match_fast(ctx, peer_world, frag, len))
            match_in(ctx, peer_world, frag, len, NULL, 0);
        if (ctx)
            bm_pml_ctx_unlock(ctx);
        return;
    }
    if (!match_fast(ctx_last, peer_world, frag, len))
        match_in(NULL, peer_world, frag, len, NULL, 0);
}

void bm_pml_match_incoming_split(int peer_world, const void *hdr, size_t hdr_len, const void *data,
                                 size_t data_len)
{
    struct bm_pml_ctx *ctx = bm_pml_g.mt ? incoming_ctx(hdr, hdr_len) : NULL;
    match_in(ctx, peer_world, hdr, hdr_len, data, data_len);
    if (ctx)
        bm_pml_ctx_unlock(ctx);
}

bool bm_pml_match_take_seq(struct bm_pml_request *req, uint32_t *seq_out)
{
    struct bm_pml_ctx *ctx = req->ctx;
    if (!ctx || ctx->nposted != 1 || req->peer < 0)
        return false;
    struct bm_pml_srcstate *st = ctx_src(ctx, req->peer);
    if (st->held)
        return false;
    *seq_out = st->expected;
    return true;
}

bool bm_pml_match_take_early(uint32_t cid, int src, int tag, uint32_t *seq_out)
{
    struct bm_pml_ctx *ctx = ctx_get(cid);
    if (ctx->nposted != 0)
        return false;
    struct bm_pml_srcstate *st = ctx_src(ctx, src);
    if (st->held || find_unexpected(ctx, src, tag))
        return false;
    *seq_out = st->expected;
    return true;
}

void bm_pml_match_taken_early(uint32_t cid, int src)
{
    ctx_get(cid)->srcs[src].expected++;
}

void bm_pml_match_taken(struct bm_pml_request *req)
{
    struct bm_pml_ctx *ctx = req->ctx;
    ctx->srcs[req->peer].expected++;
    posted_remove(ctx, req);
}

static void post_queue(struct bm_pml_ctx *ctx, struct bm_pml_request *req)
{
    req->post_seq = ++ctx->post_counter;
    req->ctx = ctx;
    qt_append(&ctx->posted, bm_pml_qkey(req->peer, req->tag), &req->qnode);
    ctx->nposted++;
    ctx->nposted_class[qclass(req->peer, req->tag)]++;
}

void bm_pml_match_post(struct bm_pml_request *req)
{
    struct bm_pml_ctx *ctx = bm_pml_ctx_lock(req->cid);
    struct bm_pml_uframe *uf = find_unexpected(ctx, req->peer, req->tag);
    if (uf) {
        bm_pml_match_remove_unexpected(uf);
        bm_pml_recv_matched(req, uf->peer_world, uf->type, uf->src, uf->tag, uf->msg_len, uf->sreq,
                            uf->data, uf->data_len);
        free(uf);
    } else {
        post_queue(ctx, req);
    }
    bm_pml_ctx_unlock(ctx);
}

struct bm_pml_uframe *bm_pml_match_post_mt(struct bm_pml_request *req)
{
    struct bm_pml_ctx *ctx = bm_pml_ctx_lock(req->cid);
    struct bm_pml_uframe *uf = find_unexpected(ctx, req->peer, req->tag);
    if (!uf) {
        post_queue(ctx, req);
        bm_pml_ctx_unlock(ctx);
        return NULL;
    }
    bm_pml_match_remove_unexpected(uf);
    bm_pml_ctx_unlock(ctx);
    if (uf->type != BM_PML_HDR_MATCH)
        return uf;
    /* Taken off the queues: the copy needs no lock. */
    bm_pml_recv_matched(req, uf->peer_world, uf->type, uf->src, uf->tag, uf->msg_len, uf->sreq,
                        uf->data, uf->data_len);
    free(uf);
    return NULL;
}

bool bm_pml_match_unpost(struct bm_pml_request *req)
{
    struct bm_pml_ctx *ctx = bm_pml_ctx_lock(req->cid);
    bool posted = req->ctx != NULL;
    if (posted)
        posted_remove(req->ctx, req);
    bm_pml_ctx_unlock(ctx);
    return posted;
}

static void ctx_free(struct bm_pml_ctx *c)
{
    struct bm_pml_qnode *n =
        qt_head(&c->unexpected, bm_pml_qkey(BM_PML_ANY_SOURCE, BM_PML_ANY_TAG));
    while (n) {
        struct bm_pml_qnode *nn = n->next;
        free(BM_PML_CONTAINER_OF(n - 3, struct bm_pml_uframe, node[0]));
        n = nn;
    }
    for (int s = 0; s < c->nsrcs; s++) {
        struct bm_pml_held *h = c->srcs[s].held;
        while (h) {
            struct bm_pml_held *hn = h->next;
            free(h);
            h = hn;
        }
    }
    qt_fini(&c->posted);
    qt_fini(&c->unexpected);
    free(c->srcs);
    free(c->send_seq);
    bm_util_lock_destroy(&c->lock);
    free(c);
}

static bool ctx_busy(const struct bm_pml_ctx *c)
{
    if (c->nposted > 0 || c->nunexpected > 0)
        return true;
    for (int s = 0; s < c->nsrcs; s++)
        if (c->srcs[s].held)
            return true;
    return false;
}

bool bm_pml_context_release(uint32_t cid)
{
    /* The drainer is the only other thread that may reach a context whose
     * communicator is being freed (a late arrival): keep it out. */
    bool taken = bm_pml_enter();
    bm_pml_lock(&ctx_table_lock);
    struct bm_pml_ctx **pp = &ctx_slots[cid % BM_PML_CTX_SLOTS];
    while (*pp && (*pp)->cid != cid)
        pp = &(*pp)->hnext;
    struct bm_pml_ctx *c = *pp;
    bool released = true;
    if (c) {
        bm_pml_lock(&c->lock);
        released = !ctx_busy(c);
        bm_pml_unlock(&c->lock);
        if (released) {
            *pp = c->hnext;
            if (ctx_last == c)
                ctx_last = NULL;
            atomic_fetch_add_explicit(&ctx_table_gen, 1, memory_order_release);
            ctx_free(c);
        }
    }
    bm_pml_unlock(&ctx_table_lock);
    bm_pml_leave(taken);
    return released;
}

void bm_pml_match_fini(void)
{
    for (int i = 0; i < BM_PML_CTX_SLOTS; i++) {
        struct bm_pml_ctx *c = ctx_slots[i];
        while (c) {
            struct bm_pml_ctx *next = c->hnext;
            ctx_free(c);
            c = next;
        }
        ctx_slots[i] = NULL;
    }
    ctx_last = NULL;
    atomic_fetch_add_explicit(&ctx_table_gen, 1, memory_order_release);
    if (ctx_table_lock_ready) {
        bm_util_lock_destroy(&ctx_table_lock);
        ctx_table_lock_ready = false;
    }
}
