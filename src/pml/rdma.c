/* The single-copy protocols of the PML for large messages. For a message
 * of at least BM_PML_RGET_LIMIT bytes to a peer whose RDMA list has a
 * working GET path that needs no memory registration (sm with
 * process_vm_readv), the sender sends RGET (the RNDV fields plus its buffer
 * address) instead of RNDV and waits. The receiver, once RGET matches a
 * receive, reads the message (only the part that fits: truncation) straight
 * from the sender's buffer into the user's buffer with the transport's get,
 * in chunks of at most get_limit bytes.
 *
 * A kernel copy runs on one core, and the sender would sit idle meanwhile,
 * so the receiver splits the work (BM_PML_RGET_PUT_SHARE): before it starts
 * reading the head of the message it sends PUT, which asks the sender to
 * write the tail [get_len, fit) into the receive buffer with the
 * transport's put. Both cores then copy at once, each its own part, and
 * every byte still moves once (not where the host has more ranks than
 * cores: no core is idle, and the put waits for the sender's time slice).
 * The sender answers the PUT with a FIN for the tail; the receiver
 * completes when its own reads are done and that FIN arrived, and only
 * then sends the FIN that completes the send (so the sender's request,
 * which the PUT names, outlives the PUT in every order of arrival, and a
 * resent PUT is recognised by the request's put_done).
 *
 * When no GET path exists on the receiver's side, a get fails (EPERM, a
 * peer that forbids cross-memory access) or the sender could not put, the
 * receiver answers with an ACK for the part that did not arrive, and the
 * sender sends it in FRAGs as for RNDV: the rendezvous never depends on RDMA
 * working. That is said once at info level. Arrived parts are counted as
 * byte ranges (recv.c), so a FRAG never counts twice.
 *
 * Non-contiguous data (the _dt calls) takes this path too when the peer's
 * transport can read lists of pieces (BM_BTL_CAP_GETV: sm's
 * process_vm_readv takes an iovec on each side) and the pieces are large
 * enough to be worth it (BM_PML_RGET_PIECE_MIN; the kernel's cost per
 * piece makes small ones far slower than packing). A non-contiguous sender
 * appends its layout (util/dtype.h's encoding) to the RGET; the receiver
 * lists the pieces of both sides for each range and reads them with getv,
 * the sender writing no PUT share. A receiver that cannot (no getv, small
 * pieces on its side) answers with an ACK for everything, and the sender
 * packs FRAGs as for RNDV.
 *
 * RGET travels through match.c as a RNDV whose payload is the tail of the
 * RGET header (address, handle length, flags, and the sender's layout when
 * it is non-contiguous); recv.c hands matched RGETs to
 * bm_pml_rdma_rget_matched. */
#define BM_LOG_SUBSYS "pml"
#include "util/log.h"

#include "pml/pml_internal.h"
#include "util/xproc.h"
#include "util/clock.h"
#include "util/params.h"
#include "util/shmseg.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum rdma_choice_mode { RDMA_CHOICE_READ, RDMA_CHOICE_COPY, RDMA_CHOICE_AUTO };
enum rdma_fail { RDMA_FAIL_NONE, RDMA_FAIL_GET, RDMA_FAIL_PUT, RDMA_FAIL_BOTH };

struct rdma_params {
    size_t rget_limit;
    size_t piece_min;
    int put_share;
    size_t put_min;
    int choice;   /* enum rdma_choice_mode */
    int retry_ms; /* auto: re-measure the way not taken after this long */
    int fail;     /* enum rdma_fail */
};

static const struct bm_param rdma_params[] = {
    {"BM_PML_RGET_LIMIT", BM_PARAM_SIZE, "4k", 0, 0, NULL,
     "Rendezvous messages of at least this many bytes (and at least the transport's "
     "min_rdma_pipeline_size: sm 4 KiB, ofi 64 KiB, dgram 256 KiB) go by single copy (RGET: "
     "the receiver reads, from BM_PML_RGET_PUT_MIN the sender writes its PUT share) when the "
     "peer is reached by a transport with single-copy get and put (sm with process_vm_readv). "
     "Over sm that is every message past the eager limit: the RNDV's fragments cost a round "
     "trip more (8 KiB ping-pong 2.2 us by fragments, 1.15 by RGET; Open MPI's vader reads "
     "from its eager limit too). 0 disables it: every rendezvous is copied through the "
     "transport's fragments.",
     offsetof(struct rdma_params, rget_limit), 0},
    {"BM_PML_RGET_PIECE_MIN", BM_PARAM_SIZE, "16k", 1, 1LL << 40, NULL,
     "Non-contiguous messages go by single copy (a get between lists of pieces, sm's "
     "process_vm_readv with an iovec on each side) when their contiguous pieces average at "
     "least this many bytes on both sides; smaller pieces are packed into fragments, which is "
     "faster (the kernel pays per piece: 1 GB/s at 512-byte pieces, 6 GB/s at 8 KiB on the "
     "test VM).",
     offsetof(struct rdma_params, piece_min), 0},
    {"BM_PML_RGET_PUT_SHARE", BM_PARAM_INT, "50", 0, 90, NULL,
     "Percent of an RGET message that the receiver asks the sender to write (PUT) while it "
     "reads the rest, so that both processes copy at once (not on a host with more ranks "
     "than cores). 0: the receiver reads it all.",
     offsetof(struct rdma_params, put_share), 0},
    {"BM_PML_RGET_PUT_MIN", BM_PARAM_SIZE, "24k", 0, 1LL << 40, NULL,
     "Smaller RGET messages are read wholly by the receiver (no PUT share): below this the "
     "PUT and its FIN, a round trip more before the receive completes, cost more than the "
     "copy they share (sm, 2 ranks, block minima: 16 KiB ping-pong 1.40 us read alone vs 1.74 "
     "with the share; from 24 KiB the share wins in bandwidth, 17.5 vs 9.8 GB/s).",
     offsetof(struct rdma_params, put_min), 0},
    {"BM_PML_RGET_CHOICE", BM_PARAM_ENUM, "read", 0, 0, "read|copy|auto",
     "How a receiver takes an RGET message: read = single copy (with the sender's PUT share); "
     "copy = ask for fragments (copy-in/copy-out); auto = whichever moved more bytes per "
     "second lately for messages of that size, each timed alone, the other tried again every "
     "BM_PML_RGET_RETRY_MS. read is the default because it is the steady one: 8-11 GB/s on "
     "the test VM whether or not its two vCPUs shared a cache, where copy moved 10-13 or 2-4, "
     "and auto pays for every try of the slower way.",
     offsetof(struct rdma_params, choice), 0},
    {"BM_PML_RGET_RETRY_MS", BM_PARAM_INT, "1000", 1, 1 << 20, NULL,
     "With BM_PML_RGET_CHOICE=auto, how old (ms) the measurement of the way not taken may get "
     "before it is measured again.",
     offsetof(struct rdma_params, retry_ms), 0},
    {"BM_PML_RDMA_FAIL", BM_PARAM_ENUM, "none", 0, 0, "none|get|put|both",
     "Testing only: make the PML's single-copy gets, puts or both fail as a refused transfer "
     "would, to exercise the fallback to fragments.",
     offsetof(struct rdma_params, fail), 0},
};
static const struct bm_param_table rdma_table = {"pml", rdma_params, BM_PARAM_COUNT(rdma_params)};
BM_PARAM_TABLE_REGISTER(rdma_table);

/* Largest layout an RGET carries (pml_proto.h, BM_PML_BM_PML_RGET_F_LAYOUT); a
 * more complex type is sent in FRAGs. */
#define RGET_LAYOUT_MAX 1024

static struct {
    bool loaded;
    struct rdma_params p;
    bool told_fallback;
    /* per world rank: the last RGET sent to it below BM_PML_RGET_PUT_MIN
     * (rget_alone) and from it (rget_crossing); ids, 0 = none */
    struct rget_last {
        bm_pml_reqid_t small, big;
    } * last;
    int last_n;
} rdma_g;

enum rget_put_state {
    RGET_PUT_NONE,   /* the receiver reads everything */
    RGET_PUT_WAIT,   /* PUT sent, its FIN not back */
    RGET_PUT_OK,     /* the sender wrote the tail */
    RGET_PUT_FAILED, /* the sender could not: the tail comes in FRAGs */
};

/* A receive taking an RGET's data: reading [0, get_len) and, when the
 * sender writes the rest, waiting for its FIN. */
struct bm_pml_rget {
    struct bm_pml_request *req;
    int peer_world;
    bm_pml_reqid_t sreq;
    struct bm_pml_hdr_match match; /* for the FIN */
    size_t fit;                    /* bytes of the message that fit */
    size_t get_len;                /* bytes read here; [get_len, fit) are the sender's */
    int pending;                   /* gets issued and not completed */
    bool issuing;                  /* still in the loop issuing gets */
    uint8_t put;                   /* enum rget_put_state */
    int8_t cls;                    /* size class, for the auto choice */
    bool quiet;                    /* fragments chosen, not a failure: nothing to say */
    int status;                    /* first failure of a get, or BM_OK */
    uint64_t remote_addr;          /* the sender's buffer, contiguous (0: pieces), for errors */
};

static const struct rdma_params *rdma_params_get(void);
static struct rget_last *rget_last(int peer);

void bm_pml_rdma_params_load(void)
{
    (void)rdma_params_get();
    if (bm_pml_g.world_size > 0)
        (void)rget_last(0); /* the per-peer records, before any thread sends */
}

static const struct rdma_params *rdma_params_get(void)
{
    if (!rdma_g.loaded) {
        if (bm_util_params_load(&rdma_table, &rdma_g.p) != BM_OK) {
            rdma_g.p.rget_limit = 0;
            rdma_g.p.put_share = 0;
        }
        rdma_g.loaded = true;
    }
    return &rdma_g.p;
}

/* ---- the auto choice between reading and copying -------------------------
 * Which is faster depends on the machine and, on a VM, on the moment: here
 * copy-in/copy-out streamed 9-14 GB/s while the two vCPUs shared a cache
 * and 2-3 GB/s when they did not, while process_vm_readv stayed at 4.5-6
 * GB/s per core. With BM_PML_RGET_CHOICE=auto (the default reads, and
 * keeps none of this bookkeeping) the receiver measures both ways, per size class
 * (powers of two from 64 KiB), and answers RGETs the way that moved more
 * bytes per second. A way is timed only while it runs alone (no message
 * of the other way in progress), since two ways sharing the cores each look
 * slow; a rate counts after RDMA_EPOCH_NS of such time, and the way not
 * taken is tried again once its rate is older than BM_PML_RGET_RETRY_MS. */

#define RDMA_CLASSES  8
#define RDMA_EPOCH_NS 2000000u

enum rdma_way { WAY_READ, WAY_COPY };

struct rdma_way_stat {
    int active;        /* messages of this class in progress this way */
    uint64_t bytes;    /* moved while this way ran alone, this epoch */
    uint64_t alone_ns; /* time it ran alone, this epoch */
    double rate;       /* bytes per ns of its last epoch; 0: never measured */
    uint64_t rate_at;  /* when that was */
};

static struct {
    int active[2];  /* messages in progress each way, all classes */
    uint64_t since; /* last tick */
    struct rdma_way_stat st[RDMA_CLASSES][2];
    uint8_t way[RDMA_CLASSES]; /* enum rdma_way that new RGETs of the class take */
    bool warm[RDMA_CLASSES];   /* the class's first epoch is over */
} choice_g;

static int rdma_class(size_t bytes)
{
    int c = 0;
    for (size_t b = bytes >> 17; b && c < RDMA_CLASSES - 1; b >>= 1)
        c++;
    return c;
}

/* Credit the time since the last tick to each class of a way running alone. */
static void choice_tick(void)
{
    uint64_t now = bm_util_clock_now_ns();
    uint64_t dt = now - choice_g.since;
    choice_g.since = now;
    for (int w = 0; w < 2; w++) {
        if (choice_g.active[w] == 0 || choice_g.active[!w] > 0)
            continue;
        for (int c = 0; c < RDMA_CLASSES; c++)
            if (choice_g.st[c][w].active > 0)
                choice_g.st[c][w].alone_ns += dt;
    }
}

static bool choice_auto(void)
{
    return rdma_params_get()->choice == RDMA_CHOICE_AUTO;
}

static void choice_count(int c, int w, int delta)
{
    if (!choice_auto())
        return;
    choice_tick();
    choice_g.st[c][w].active += delta;
    choice_g.active[w] += delta;
}

static void choice_bytes(int c, int w, size_t n)
{
    if (!choice_auto())
        return;
    choice_tick();
    if (choice_g.active[!w] == 0)
        choice_g.st[c][w].bytes += n;
}

/* The way an RGET of class c takes now. */
static enum rdma_way choice_pick(int c)
{
    const struct rdma_params *p = rdma_params_get();
    if (p->choice != RDMA_CHOICE_AUTO)
        return p->choice == RDMA_CHOICE_COPY ? WAY_COPY : WAY_READ;
    choice_tick();
    int w = choice_g.way[c];
    struct rdma_way_stat *cur = &choice_g.st[c][w], *alt = &choice_g.st[c][!w];
    if (cur->alone_ns < RDMA_EPOCH_NS || cur->bytes == 0)
        return (enum rdma_way)w;
    double rate = (double)cur->bytes / (double)cur->alone_ns;
    cur->bytes = cur->alone_ns = 0;
    /* The first epoch of a class pays for first touches of fresh buffers
     * (page faults inside process_vm_readv, for instance): time it again. */
    if (!choice_g.warm[c]) {
        choice_g.warm[c] = true;
        return (enum rdma_way)w;
    }
    cur->rate = rate;
    cur->rate_at = choice_g.since;
    bool stale = alt->rate == 0 || choice_g.since - alt->rate_at > (uint64_t)p->retry_ms * 1000000u;
    if (stale || alt->rate > cur->rate) {
        bm_log_debug("RGETs of class %d (from %zu KiB): %s at %.2f GB/s, now %s (%s)", c,
                     (size_t)64 << c, w == WAY_READ ? "read" : "copy", cur->rate,
                     w == WAY_READ ? "copy" : "read", stale ? "to measure it" : "faster");
        choice_g.way[c] = (uint8_t)!w;
        alt->bytes = alt->alone_ns = 0;
    }
    return (enum rdma_way)choice_g.way[c];
}

void bm_pml_rdma_copy_bytes(struct bm_pml_request *req, size_t n)
{
    choice_bytes(req->rget_class, WAY_COPY, n);
}

void bm_pml_rdma_copy_done(struct bm_pml_request *req)
{
    choice_count(req->rget_class, WAY_COPY, -1);
    req->rget_class = -1;
}

/* Does m need registration before put/get on user memory? */
static bool rdma_registers(const struct bm_btl_module *m)
{
    return (m->caps & BM_BTL_CAP_REG_MEM) || m->reg_handle_size != 0;
}

/* A working path to peer_world with the RDMA capability cap (GET, GETV or
 * PUT) for a transfer of bytes. One that needs no registration (sm) comes
 * first; with reg_ok, else one that needs it and offers its get to
 * rendezvous (BM_BTL_CAP_RNDV_GET: ofi) when it is the one path the peer's
 * bulk traffic can take (striped rails and peers with a standby class keep
 * their fragments). */
static struct bm_btl_path *rdma_path_reg(int peer_world, uint32_t cap, size_t bytes, bool reg_ok)
{
    struct bm_btl_peer *peer = bm_btl_base_peer(peer_world);
    struct bm_btl_path_list *l = &peer->rdma;
    struct bm_btl_path *reg = NULL;
    for (int i = 0; i < l->count; i++) {
        struct bm_btl_path *p = &l->paths[i];
        const struct bm_btl_module *m = p->module;
        if (bm_pml_path_is_failed(p) || !(m->caps & cap) || bytes < m->min_rdma_pipeline_size)
            continue;
        if (!rdma_registers(m))
            return p;
        if (reg_ok && !reg && cap == BM_BTL_CAP_GET &&
            (m->caps & BM_BTL_CAP_RNDV_GET) == BM_BTL_CAP_RNDV_GET)
            reg = p;
    }
    if (!reg)
        return NULL;
    /* Only while the peer's bulk traffic has this one path and nothing to
     * fail over to: striped over several, a message keeps its fragments
     * spread over all of them; with a standby class (ofi above tcp), a rail
     * that died with reads in flight made libfabric 1.17's rxm crash in
     * fi_close at finalize (1 run in 11 of the branch ofip2p-standby's
     * netns test; never with fragments), so such peers keep fragments. */
    const struct bm_btl_path_list *sl = &peer->send;
    const struct bm_btl_path *first = bm_pml_path_first(&peer->send);
    if (!first || first->module != reg->module || first->endpoint != reg->endpoint)
        return NULL;
    for (int i = 0; i < sl->count; i++) {
        const struct bm_btl_path *p = &sl->paths[i];
        if (p != first && (p->cls != first->cls || !bm_pml_path_is_failed(p)))
            return NULL;
    }
    return reg;
}

static struct bm_btl_path *rdma_path(int peer_world, uint32_t cap, size_t bytes)
{
    return rdma_path_reg(peer_world, cap, bytes, false);
}

/* The registration of the sender's buffer an RGET over path offers:
 * MPI_Alloc_mem's when the buffer is such memory, else a new one (from
 * the transport's cache). False when it cannot be had. */
static bool rget_register(struct bm_pml_request *req, struct bm_btl_path *path)
{
    struct bm_btl_module *m = path->module;
    if (req->rget_reg && req->rget_mod == m)
        return true; /* a send started again keeps its registration */
    bm_pml_rdma_send_done(req);
    struct bm_btl_reg_handle *h = bm_btl_base_mem_handle(m, req->sbuf, req->bytes);
    bool owned = false;
    if (!h) {
        h = bm_btl_register_mem(m, path->endpoint, (void *)(uintptr_t)req->sbuf, req->bytes,
                                BM_BTL_REG_F_REMOTE_READ);
        owned = true;
    }
    if (!h || m->reg_handle_size > RGET_LAYOUT_MAX)
        return false;
    req->rget_mod = m;
    req->rget_reg = h;
    req->rget_reg_owned = owned;
    return true;
}

void bm_pml_rdma_send_done(struct bm_pml_request *req)
{
    if (!req->rget_reg)
        return;
    if (req->rget_reg_owned)
        bm_btl_deregister_mem(req->rget_mod, req->rget_reg);
    req->rget_reg = NULL;
    req->rget_mod = NULL;
}

/* A convertor's message is worth reading piece by piece: its pieces are
 * large enough on average. */
static bool pieces_large(const struct bm_util_dtype_conv *c)
{
    uint64_t n = c->type->pieces * (uint64_t)c->count;
    return c->contig || (n > 0 && c->total / n >= rdma_params_get()->piece_min);
}

/* May this contiguous send of fewer than BM_PML_RGET_PUT_MIN bytes go by
 * RGET? Only while no other such RGET to its peer is in flight. The
 * receiver reads a small RGET alone, on its one core, where fragments keep
 * both cores copying (the sender copies in while the receiver copies out):
 * a send that finds the last one still in progress is part of a stream and
 * takes fragments, a lone one (ping-pong, exchange) is read (windows of 64
 * x 8 KiB, block maxima: every message read 10.3 GB/s, fragments 11.7). The
 * last one's id is kept, not a count: nothing to undo when it ends. */
static struct rget_last *rget_last(int peer)
{
    if (rdma_g.last_n != bm_pml_g.world_size) {
        free(rdma_g.last);
        rdma_g.last = calloc((size_t)bm_pml_g.world_size, sizeof(*rdma_g.last));
        rdma_g.last_n = rdma_g.last ? bm_pml_g.world_size : 0;
        if (!rdma_g.last)
            return NULL;
    }
    return &rdma_g.last[peer];
}

/* Under MPI_THREAD_MULTIPLE the record of the last small RGET to a peer is
 * also read and set by threads that start their RGET without the progress
 * lock (bm_pml_rdma_rget_free_ok): one atomic word per peer, set by
 * compare-and-swap there (two threads that both find the last one done
 * race for it, and the loser takes fragments, as a stream would), and
 * whether that last one is still in flight is read from the request table
 * without its lock (bm_pml_request_active). The table is made at init
 * (bm_pml_rdma_params_load), before any thread sends. */
static bool rget_alone(const struct bm_pml_request *req, bool locked)
{
    struct rget_last *l =
        locked ? rget_last(req->peer)
               : (rdma_g.last_n == bm_pml_g.world_size ? &rdma_g.last[req->peer] : NULL);
    bm_pml_reqid_t id = bm_pml_request_id(req);
    if (!l)
        return locked;
    if (req->bytes >= rdma_params_get()->put_min) {
        if (locked)
            l->big = id; /* for rget_crossing */
        return true;
    }
    bm_pml_reqid_t last = __atomic_load_n(&l->small, __ATOMIC_RELAXED);
    if (last && last != id &&
        (locked ? bm_pml_request_lookup(last, BM_PML_REQ_SEND) != NULL
                : bm_pml_request_active(last, BM_PML_REQ_SEND)))
        return false;
    if (locked) {
        __atomic_store_n(&l->small, id, __ATOMIC_RELAXED);
        return true;
    }
    return __atomic_compare_exchange_n(&l->small, &last, id, false, __ATOMIC_RELAXED,
                                       __ATOMIC_RELAXED);
}

/* Is an RGET of ours of at least BM_PML_RGET_PUT_MIN to peer in progress?
 * Then the peer is reading it while we read its message (an exchange:
 * Sendrecv, Irecv + Send, a halo), and a PUT share would not add a
 * core: each side would copy as much as by reading alone, after a PUT
 * and its FIN, a round trip more (Irecv + Send + Wait of 32 KiB both
 * ways, 400 trials of 35, min/p10: 3.26-3.36/3.34-3.42 us with the share,
 * 2.19-2.40/2.24-2.45 reading alone). Sends that start their RGET without
 * the progress lock (bm_pml_rdma_rget_free_ok) are not recorded: an
 * exchange under MPI_THREAD_MULTIPLE keeps the share. */
static bool rget_crossing(int peer)
{
    struct rget_last *l = rget_last(peer);
    return l && l->big && bm_pml_request_lookup(l->big, BM_PML_REQ_SEND);
}

/* The receiver reads the pieces of this non-contiguous layout: only a
 * transport with getv, large pieces, and a layout small enough to describe.
 * Reads nothing the progress lock guards. */
static bool rget_getv_ok(const struct bm_pml_request *req)
{
    unsigned char scratch[RGET_LAYOUT_MAX];
    return pieces_large(&req->conv) &&
           bm_util_dtype_encode(req->conv.type, scratch, sizeof(scratch)) > 0 &&
           rdma_path(req->peer, BM_BTL_CAP_GETV, req->bytes) != NULL;
}

/* Whether an RGET reads req (the shared decision of the two below). A
 * non-contiguous send: the receiver reads its pieces by getv. A contiguous
 * one over a transport that registers (ofi): registering the buffer now
 * (the base's MPI_Alloc_mem table and the transports' registration caches
 * have locks of their own). Over one that needs no registration (sm):
 * rget_alone, whose record of the last small RGET to a peer is an atomic
 * word that a thread without the progress lock sets by compare-and-swap. */
static bool rget_decide(struct bm_pml_request *req, bool locked)
{
    size_t limit = rdma_params_get()->rget_limit;
    if (limit == 0 || req->bytes < limit || req->retransmit || req->peer == bm_pml_g.my_rank)
        return false;
    if (req->conv.type)
        return rget_getv_ok(req);
    struct bm_btl_path *path = rdma_path_reg(req->peer, BM_BTL_CAP_GET, req->bytes, true);
    if (path && rdma_registers(path->module))
        return rget_register(req, path);
    if (locked)
        bm_pml_rdma_send_done(req);
    return path != NULL && rget_alone(req, locked);
}

bool bm_pml_rdma_rget_ok(struct bm_pml_request *req)
{
    return rget_decide(req, true);
}

/* Without the progress lock (send.c send_rndv_free): may an RGET read req,
 * decided with nothing the lock guards (rget_decide)? A registration made
 * here stays with req when the RGET does not go (its deferred start keeps
 * it, bm_pml_rdma_send_done releases it). */
bool bm_pml_rdma_rget_free_ok(struct bm_pml_request *req)
{
    return rget_decide(req, false);
}

struct rget_msg {
    struct bm_pml_hdr_rget hdr;
    unsigned char layout[RGET_LAYOUT_MAX]; /* a non-contiguous sender's */
};

/* The RGET message of req into *h (req's FRAG range set: none unless the
 * receiver falls back); its length. */
static size_t rget_header(struct bm_pml_request *req, const struct bm_pml_hdr_match *mh,
                          struct rget_msg *h)
{
    memset(&h->hdr, 0, sizeof(h->hdr));
    h->hdr.rndv.match = *mh;
    h->hdr.rndv.match.base.type = BM_PML_HDR_RGET;
    h->hdr.rndv.msg_len = req->bytes;
    h->hdr.rndv.sreq = bm_pml_request_id(req);
    h->hdr.tail.remote_addr = (uint64_t)(uintptr_t)req->sbuf;
    _Static_assert(offsetof(__typeof__(*h), layout) == sizeof(struct bm_pml_hdr_rget),
                   "the layout follows the RGET header directly");
    if (req->conv.type) {
        h->hdr.tail.remote_addr = (uint64_t)(uintptr_t)req->conv.base;
        h->hdr.tail.flags = BM_PML_RGET_F_LAYOUT;
        h->hdr.tail.handle_len =
            (uint32_t)bm_util_dtype_encode(req->conv.type, h->layout, sizeof(h->layout));
    } else if (req->rget_reg) {
        /* The receiver reads with this handle (bm_pml_rdma_rget_ok registered it). */
        h->hdr.tail.flags = BM_PML_RGET_F_HANDLE;
        h->hdr.tail.handle_len = (uint32_t)req->rget_mod->reg_handle_size;
        memcpy(h->layout, req->rget_reg, req->rget_mod->reg_handle_size);
    }
    /* No FRAG unless the receiver falls back (its ACK then lowers frag_next). */
    req->first_len = 0;
    req->frag_next = req->bytes;
    req->frag_end = req->bytes;
    return sizeof(struct bm_pml_hdr_rget) + h->hdr.tail.handle_len;
}

void bm_pml_rdma_rget_send(struct bm_pml_request *req, const struct bm_pml_hdr_match *mh)
{
    struct rget_msg h;
    size_t len = rget_header(req, mh, &h);
    __atomic_fetch_add(&bm_pml_g.rget_sent, 1, __ATOMIC_RELAXED);
    bm_pml_ctl_send(req->peer, BM_PML_BTL_TAG(BM_PML_HDR_RGET), &h, len);
}

int bm_pml_rdma_rget_sendi(struct bm_pml_request *req, const struct bm_pml_hdr_match *mh,
                           struct bm_btl_path *path)
{
    struct rget_msg h;
    size_t len = rget_header(req, mh, &h);
    int rc = bm_btl_sendi(path->module, path->endpoint, &h, len, NULL, 0, 0, BM_BTL_DES_F_PRIORITY,
                          BM_PML_BTL_TAG(BM_PML_HDR_RGET), NULL);
    if (rc == BM_BTL_DONE)
        __atomic_fetch_add(&bm_pml_g.rget_sent, 1, __ATOMIC_RELAXED);
    return rc;
}

/* Move [off, off + len) between local and remote in chunks the path takes;
 * returns the gets/puts still pending (their callbacks count down) through
 * *pending, and the first failure. */
static int rdma_move(struct bm_btl_path *path, bool put, char *local, uint64_t remote,
                     const struct bm_btl_reg_handle *rhandle, size_t len, bm_btl_rdma_cb_fn cb,
                     void *cbdata, int *pending)
{
    int fail = rdma_params_get()->fail;
    if (fail == RDMA_FAIL_BOTH || fail == (put ? RDMA_FAIL_PUT : RDMA_FAIL_GET))
        return BM_ERR_NOT_AVAILABLE;
    struct bm_btl_module *m = path->module;
    size_t chunk = put ? m->put_limit : m->get_limit;
    if (chunk == 0 || chunk > len)
        chunk = len;
    if (m->rdma_pipeline_frag_size && m->rdma_pipeline_frag_size < chunk)
        chunk = m->rdma_pipeline_frag_size;
    for (size_t off = 0; off < len; off += chunk) {
        size_t n = len - off < chunk ? len - off : chunk;
        (*pending)++;
        int rc = put ? bm_btl_put(m, path->endpoint, local + off, remote + off, NULL, rhandle, n, 0,
                                  0, cb, NULL, cbdata)
                     : bm_btl_get(m, path->endpoint, local + off, remote + off, NULL, rhandle, n, 0,
                                  0, cb, NULL, cbdata);
        if (rc == BM_BTL_DONE || rc < 0)
            (*pending)--;
        if (rc < 0)
            return rc;
    }
    return BM_OK;
}

/* One side of a piece-list read: a convertor, or contiguous bytes at addr. */
struct side {
    const struct bm_util_dtype_conv *conv; /* NULL: contiguous */
    uint64_t addr;
};

/* Up to max pieces of bytes [off, off + len) of a side; *done_out the bytes
 * they cover. */
static uint32_t side_pieces(const struct side *sd, size_t off, size_t len, struct bm_btl_iov *out,
                            struct bm_util_dtype_piece *tmp, size_t max, size_t *done_out)
{
    if (!sd->conv) {
        out[0].addr = sd->addr + off;
        out[0].len = len;
        *done_out = len;
        return 1;
    }
    size_t n = bm_util_dtype_pieces(sd->conv->type, sd->conv->base, sd->conv->count, off, len, tmp,
                                    max, done_out);
    for (size_t i = 0; i < n; i++) {
        out[i].addr = (uint64_t)(uintptr_t)tmp[i].addr;
        out[i].len = tmp[i].len;
    }
    return (uint32_t)n;
}

/* Read [0, len) of the message from the remote side into the local side,
 * as getv calls of at most BM_BTL_IOV_MAX pieces a side. */
static int rdma_movev(struct bm_btl_path *path, const struct side *local, const struct side *remote,
                      size_t len, bm_btl_rdma_cb_fn cb, void *cbdata, int *pending)
{
    int fail = rdma_params_get()->fail;
    if (fail == RDMA_FAIL_BOTH || fail == RDMA_FAIL_GET)
        return BM_ERR_NOT_AVAILABLE;
    /* The lists live for this call only (getv is done with them when it
     * returns); messages here are large, so the allocation is cheap. */
    struct bm_btl_iov *lv = malloc(2 * BM_BTL_IOV_MAX * sizeof(*lv));
    struct bm_util_dtype_piece *tmp = malloc(BM_BTL_IOV_MAX * sizeof(*tmp));
    if (!lv || !tmp) {
        free(lv);
        free(tmp);
        return BM_ERR_NO_MEMORY;
    }
    struct bm_btl_iov *rv = lv + BM_BTL_IOV_MAX;
    int rc = BM_OK;
    size_t off = 0;
    while (off < len) {
        size_t rdone, ldone;
        uint32_t nr = side_pieces(remote, off, len - off, rv, tmp, BM_BTL_IOV_MAX, &rdone);
        uint32_t nl = side_pieces(local, off, rdone, lv, tmp, BM_BTL_IOV_MAX, &ldone);
        if (ldone < rdone)
            nr = side_pieces(remote, off, ldone, rv, tmp, BM_BTL_IOV_MAX, &rdone);
        (*pending)++;
        rc = bm_btl_getv(path->module, path->endpoint, lv, nl, rv, nr, 0, cb, NULL, cbdata);
        if (rc == BM_BTL_DONE || rc < 0)
            (*pending)--;
        if (rc < 0)
            break;
        rc = BM_OK;
        off += ldone;
    }
    free(lv);
    free(tmp);
    return rc;
}

/* Some of the message did not arrive by RDMA: ask for it in FRAGs. */
static void rget_fall_back(struct bm_pml_rget *op, bool failed)
{
    struct bm_pml_request *req = op->req;
    size_t lo = op->status != BM_OK ? 0 : op->get_len;
    size_t hi = op->put == RGET_PUT_FAILED ? op->fit : op->get_len;
    if (failed && !rdma_g.told_fallback) {
        rdma_g.told_fallback = true;
        bm_log_info("single-copy %s of bytes %zu-%zu of a %zu-byte message from rank %d failed "
                    "(%s); copying them through the transport's fragments instead (said once)",
                    op->status != BM_OK ? "read" : "write by the sender", lo, hi, op->fit,
                    op->peer_world,
                    bm_status_str(op->status != BM_OK ? op->status : BM_ERR_NOT_AVAILABLE));
    }
    __atomic_fetch_add(&bm_pml_g.rget_acked, 1, __ATOMIC_RELAXED);
    req->want = op->fit;
    bool done_now = req->arrived >= req->want; /* nothing fits: the ACK only ends the send */
    struct bm_pml_hdr_ack ack = {
        .base = {.type = BM_PML_HDR_ACK},
        .sreq = op->sreq,
        .rreq = bm_pml_request_id(req),
        .offset = lo,
        .length = hi,
    };
    if (done_now)
        bm_pml_recv_done(req);
    bm_pml_ctl_send(op->peer_world, BM_PML_BTL_TAG(BM_PML_HDR_ACK), &ack, sizeof(ack));
}

static bool rdma_fault(int status)
{
    return status == BM_ERR_FAULT || status == BM_ERR_PEER_FAULT;
}

/* A fault as the other side sees it: our buffer is the peer's. */
static int rdma_fault_flip(int status)
{
    return status == BM_ERR_FAULT ? BM_ERR_PEER_FAULT : BM_ERR_FAULT;
}

/* A single-copy read or the sender's PUT met a buffer that is not mapped
 * (status: BM_ERR_PEER_FAULT, the sender's; BM_ERR_FAULT, ours). No fall
 * back to fragments: the sender's copy would fault at the same address and
 * die of SIGSEGV (what Open MPI's ob1+vader does: vader's failed
 * process_vm_readv makes ob1 ask for fragments); a receive buffer that
 * runs into another mapping would be overwritten. Both requests fail with
 * MPI_ERR_BUFFER (the FIN carries the status as the sender sees it), and
 * each side says which buffer, over which range. */
static __attribute__((noinline, cold)) void rget_fault(struct bm_pml_rget *op, int status)
{
    struct bm_pml_request *req = op->req;
    if (req->conv.type || (status == BM_ERR_PEER_FAULT && op->remote_addr == 0)) /* pieces */
        bm_log_error("receive of %zu bytes from rank %d (tag %d) failed: %s (non-contiguous "
                     "layout; %s)",
                     op->fit, op->peer_world, op->match.tag, bm_status_str(status),
                     status == BM_ERR_PEER_FAULT ? "the sender's buffer" : "the receive buffer");
    else if (status == BM_ERR_PEER_FAULT)
        bm_log_error("receive of %zu bytes from rank %d (tag %d) failed: rank %d's send buffer "
                     "[0x%llx, 0x%llx) is not readable, part of it is not mapped in rank %d's "
                     "process (does the send's count run past the end of its buffer?)",
                     op->fit, op->peer_world, op->match.tag, op->peer_world,
                     (unsigned long long)op->remote_addr,
                     (unsigned long long)(op->remote_addr + op->fit), op->peer_world);
    else
        bm_log_error("receive of %zu bytes from rank %d (tag %d) failed: the receive buffer "
                     "[%p, %p) is not writable, part of it is not mapped in this process or is "
                     "bitmover's shared memory (does the receive's count run past the end of its "
                     "buffer?)",
                     op->fit, op->peer_world, op->match.tag, (void *)req->rbuf,
                     (void *)(req->rbuf + op->fit));
    req->status.error = status;
    req->status.count = op->fit; /* the message's length, for the error text */
    struct bm_pml_hdr_fin fin = {
        .match = op->match,
        .status = rdma_fault_flip(status),
        .req = op->sreq,
        .offset = 0,
        .length = op->fit,
    };
    fin.match.base.type = BM_PML_HDR_FIN;
    fin.match.base.flags = 0;
    bm_pml_recv_done(req);
    bm_pml_ctl_send(op->peer_world, BM_PML_BTL_TAG(BM_PML_HDR_FIN), &fin, sizeof(fin));
}

/* Go on once the gets are done and the sender's FIN for a PUT is back:
 * complete and send FIN, or fall back to FRAGs for what is missing. */
static void rget_step(struct bm_pml_rget *op)
{
    if (op->pending > 0 || op->issuing || op->put == RGET_PUT_WAIT)
        return;
    struct bm_pml_request *req = op->req;
    req->rget = NULL;
    if (__builtin_expect(rdma_fault(op->status), 0)) {
        choice_count(op->cls, WAY_READ, -1);
        rget_fault(op, op->status);
        free(op);
        return;
    }
    if (op->status == BM_OK && op->get_len > 0) {
        __atomic_fetch_add(&bm_pml_g.rget_read_bytes, op->get_len, __ATOMIC_RELAXED);
        req->arrived += bm_pml_recv_ranges_add(req, 0, op->get_len);
        choice_bytes(op->cls, WAY_READ, op->get_len);
    }
    choice_count(op->cls, WAY_READ, -1);
    if (op->status != BM_OK || op->put == RGET_PUT_FAILED) {
        rget_fall_back(op, !op->quiet);
        free(op);
        return;
    }
    struct bm_pml_hdr_fin fin = {
        .match = op->match,
        .status = BM_OK,
        .req = op->sreq,
        .offset = 0,
        .length = op->fit,
    };
    fin.match.base.type = BM_PML_HDR_FIN;
    fin.match.base.flags = 0;
    int peer = op->peer_world;
    free(op);
    bm_pml_recv_done(req);
    bm_pml_ctl_send(peer, BM_PML_BTL_TAG(BM_PML_HDR_FIN), &fin, sizeof(fin));
}

static void rget_get_cb(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                        struct bm_btl_reg_handle *local_handle, void *context, void *cbdata,
                        int status)
{
    (void)m;
    (void)ep;
    (void)local_addr;
    (void)local_handle;
    (void)context;
    struct bm_pml_rget *op = cbdata;
    if (status < 0 && op->status == BM_OK)
        op->status = status;
    op->pending--;
    rget_step(op);
}

/* How much of fit the sender is asked to write: the share, to the nearest
 * whole page, and only when both parts are worth a single-copy operation,
 * none below BM_PML_RGET_PUT_MIN (the PUT's round trip costs more than the
 * copy it shares), and none on a host with more ranks than cores: there is
 * no idle core for the sender to copy on, and the receiver's FIN would wait
 * for the sender's next time slice (8 ranks on 2 cores, alltoall of 256
 * KiB-1 MiB blocks, nice -20, 5 interleaved rounds: 882-4799 us without the
 * share against 1204-5597 with it; Open MPI 923-4904). */
static size_t rget_put_len(int peer_world, size_t fit)
{
    const struct rdma_params *p = rdma_params_get();
    size_t share = bm_pml_g.oversubscribed || fit < p->put_min || rget_crossing(peer_world)
                       ? 0
                       : (size_t)p->put_share;
    size_t len = (fit / 100 * share + fit % 100 * share / 100 + 2048) & ~(size_t)4095;
    struct bm_btl_path *path = rdma_path(peer_world, BM_BTL_CAP_PUT, len);
    if (len == 0 || len > fit || !path || fit - len < path->module->min_rdma_pipeline_size)
        return 0;
    return len;
}

/* An RGET where either side is non-contiguous: read the pieces with getv
 * when the transport can and the pieces are large, else ask for FRAGs. */
static void rget_read_pieces(struct bm_pml_rget *op, struct bm_pml_request *req,
                             const struct bm_pml_rget_tail *t, const char *layout,
                             size_t layout_len)
{
    struct bm_util_dtype *rtype = NULL;
    struct bm_util_dtype_conv rconv;
    struct side local = {req->conv.type ? &req->conv : NULL, (uint64_t)(uintptr_t)req->rbuf};
    struct side remote = {NULL, t->remote_addr};
    if (t->flags & BM_PML_RGET_F_LAYOUT) {
        rtype = t->handle_len <= layout_len ? bm_util_dtype_decode(layout, t->handle_len) : NULL;
        if (rtype && rtype->size > 0 && op->fit <= req->msg_len &&
            req->msg_len % rtype->size == 0) {
            bm_util_dtype_conv_init(&rconv, rtype, (const void *)(uintptr_t)t->remote_addr,
                                    req->msg_len / rtype->size);
            remote.conv = &rconv;
        } else {
            bm_log_ratelimited(BM_LOG_ERROR,
                               "an RGET from rank %d describes its data with a layout that "
                               "cannot be read (%u bytes); asking for fragments",
                               op->peer_world, t->handle_len);
        }
    }
    struct bm_btl_path *path = rdma_path(op->peer_world, BM_BTL_CAP_GETV, op->fit);
    bool ok = path && (!(t->flags & BM_PML_RGET_F_LAYOUT) || remote.conv) &&
              (!local.conv || pieces_large(local.conv)) && choice_pick(op->cls) == WAY_READ;
    if (ok) {
        op->status = rdma_movev(path, &local, &remote, op->fit, rget_get_cb, op, &op->pending);
        if (op->status == BM_OK)
            __atomic_fetch_add(&bm_pml_g.rget_pieces_msgs, 1, __ATOMIC_RELAXED);
    } else {
        op->status = BM_ERR_NOT_AVAILABLE; /* nothing read: the ACK covers [0, fit) */
        op->quiet = true;
    }
    bm_util_dtype_release(rtype);
    op->issuing = false;
    rget_step(op);
}

void bm_pml_rdma_rget_matched(struct bm_pml_request *req, int peer_world, int src, int tag,
                              uint64_t msg_len, bm_pml_reqid_t sreq, const void *tail,
                              size_t tail_len)
{
    size_t fit = bm_pml_recv_status_set(req, peer_world, src, tag, msg_len);
    req->arrived = 0;
    req->want = 0;
    req->nranges = 0;
    struct bm_pml_rget_tail t = {0};
    struct bm_pml_rget *op = calloc(1, sizeof(*op));
    if (!op)
        abort();
    op->req = req;
    op->peer_world = peer_world;
    op->sreq = sreq;
    op->match.cid = req->cid;
    op->match.src = src;
    op->match.tag = tag;
    op->fit = fit;
    op->get_len = fit;
    op->status = BM_OK;
    op->issuing = true;
    op->cls = (int8_t)rdma_class(fit);
    req->rget = op;
    if (!req->conv.type && fit > 0 && bm_util_shm_private_overlaps(req->rbuf, fit)) {
        /* The count runs past the buffer into the library's shared memory:
         * writing there would corrupt every process's messages. */
        op->status = BM_ERR_FAULT;
        op->issuing = false;
        choice_count(op->cls, WAY_READ, 1);
        rget_step(op);
        return;
    }
    /* A sender that registered its buffer sent the handle: the path must be
     * one that needs it (the first such, as the sender chose). */
    const struct bm_btl_reg_handle *rhandle = NULL;
    if (tail_len >= sizeof(t)) {
        memcpy(&t, tail, sizeof(t));
        if ((t.flags & BM_PML_RGET_F_HANDLE) && t.handle_len <= tail_len - sizeof(t) &&
            t.handle_len > 0)
            rhandle = (const struct bm_btl_reg_handle *)((const char *)tail + sizeof(t));
    }
    struct bm_btl_path *path = rdma_path_reg(peer_world, BM_BTL_CAP_GET, fit, rhandle != NULL);
    if (path && rdma_registers(path->module) &&
        (!rhandle || t.handle_len != path->module->reg_handle_size))
        path = NULL;
    if (path && tail_len >= sizeof(t) && choice_pick(op->cls) == WAY_COPY) {
        /* Copy-in/copy-out, timed: an ACK for all of it. */
        bm_log_debug("RGET of %zu bytes from rank %d: asking for fragments (copy)", fit,
                     peer_world);
        req->rget = NULL;
        if (choice_auto() && !req->conv.type) {
            req->rget_class = op->cls;
            choice_count(op->cls, WAY_COPY, 1);
        }
        op->status = BM_ERR_NOT_AVAILABLE; /* nothing read: the ACK covers [0, fit) */
        rget_fall_back(op, false);
        free(op);
        return;
    }
    choice_count(op->cls, WAY_READ, 1);
    if (tail_len < sizeof(t) || !path) {
        op->status = tail_len < sizeof(t) ? BM_ERR_BAD_PARAM : BM_ERR_NOT_AVAILABLE;
        op->issuing = false;
        rget_step(op);
        return;
    }
    if (req->conv.type || (t.flags & BM_PML_RGET_F_LAYOUT)) {
        rget_read_pieces(op, req, &t, (const char *)tail + sizeof(t), tail_len - sizeof(t));
        return;
    }
    /* The sender writes a share only over a path without registration (it
     * would need this buffer's). */
    size_t put_len = rhandle ? 0 : rget_put_len(peer_world, fit);
    if (put_len > 0) {
        /* First, so that the sender's copy overlaps this side's. */
        op->get_len = fit - put_len;
        op->put = RGET_PUT_WAIT;
        struct bm_pml_hdr_put ph = {
            .base = {.type = BM_PML_HDR_PUT},
            .sreq = sreq,
            .rreq = bm_pml_request_id(req),
            .offset = op->get_len,
            .length = put_len,
            .remote_addr = (uint64_t)(uintptr_t)(req->rbuf + op->get_len),
        };
        bm_pml_ctl_send(peer_world, BM_PML_BTL_TAG(BM_PML_HDR_PUT), &ph, sizeof(ph));
    }
    op->remote_addr = t.remote_addr;
    op->status = rdma_move(path, false, req->rbuf, t.remote_addr,
                           rdma_registers(path->module) ? rhandle : NULL, op->get_len, rget_get_cb,
                           op, &op->pending);
    op->issuing = false;
    rget_step(op);
}

/* The receiver's side of the sender's FIN for a PUT. */
static void rget_put_fin(struct bm_pml_request *req, const struct bm_pml_hdr_fin *fin, int peer)
{
    struct bm_pml_rget *op = req->rget;
    if (!op || op->put != RGET_PUT_WAIT || req->src_world != peer || fin->offset != op->get_len ||
        fin->length != op->fit - op->get_len) {
        bm_log_debug("dropped a FIN from rank %d for no PUT in progress (duplicate?)", peer);
        return;
    }
    if (fin->status == BM_OK) {
        op->put = RGET_PUT_OK;
        req->arrived += bm_pml_recv_ranges_add(req, op->get_len, op->fit);
        choice_bytes(op->cls, WAY_READ, op->fit - op->get_len);
    } else {
        op->put = RGET_PUT_FAILED;
        if (rdma_fault(fin->status) && op->status == BM_OK)
            op->status = rdma_fault_flip(fin->status);
    }
    rget_step(op);
}

/* The last send fault this process saw, with the id of the send it was
 * recorded for (under MPI_THREAD_MULTIPLE possibly another thread's: for
 * an error text only). Read once: bm_pml_last_fault takes it. Whoever runs
 * progress records it while the failed send's own thread reads it, so the
 * three words change together under a mutex of their own: every use is on
 * a failure path, and nothing is locked under it (a leaf, like peer send). */
static pthread_mutex_t rdma_fault_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bm_pml_fault rdma_last_fault;
static bm_pml_reqid_t rdma_fault_req;
static bool rdma_had_fault;

bool bm_pml_last_fault(struct bm_pml_fault *out)
{
    pthread_mutex_lock(&rdma_fault_lock);
    *out = rdma_last_fault;
    bool had = rdma_had_fault;
    rdma_had_fault = false;
    pthread_mutex_unlock(&rdma_fault_lock);
    return had;
}

void bm_pml_fault_claim(const struct bm_pml_request *req)
{
    pthread_mutex_lock(&rdma_fault_lock);
    if (rdma_had_fault && rdma_fault_req != bm_pml_request_id(req))
        rdma_had_fault = false;
    pthread_mutex_unlock(&rdma_fault_lock);
}

/* rget_fault at the receiver: the send fails the same way. */
static __attribute__((noinline, cold)) void send_fault(struct bm_pml_request *req, int peer,
                                                       int status)
{
    if (status == BM_ERR_FAULT)
        bm_log_error("send of %zu bytes to rank %d (tag %d) failed: the send buffer [%p, %p) "
                     "is not readable, part of it is not mapped in this process (does the "
                     "count run past the end of the buffer?)",
                     req->bytes, peer, req->tag, (void *)req->sbuf,
                     (void *)(req->sbuf + req->bytes));
    else
        bm_log_error("send of %zu bytes to rank %d (tag %d) failed: rank %d's receive buffer "
                     "is not writable, part of it is not mapped in rank %d's process or is "
                     "bitmover's shared memory",
                     req->bytes, peer, req->tag, peer, peer);
    req->status.error = status;
    req->status.count = req->bytes; /* the message's length, for the error text */
    pthread_mutex_lock(&rdma_fault_lock);
    rdma_last_fault = (struct bm_pml_fault){.buf = req->sbuf, .bytes = req->bytes, .tag = req->tag};
    rdma_fault_req = bm_pml_request_id(req);
    rdma_had_fault = true;
    pthread_mutex_unlock(&rdma_fault_lock);
}

void bm_pml_rdma_fin_cb(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata)
{
    struct bm_pml_hdr_fin fin;
    size_t len = d->seg_count ? d->seg[0].len : 0;
    if (len < sizeof(fin)) {
        bm_log_ratelimited(BM_LOG_ERROR, "dropped a short FIN (%zu bytes) from rank %d", len,
                           d->peer);
        return;
    }
    memcpy(&fin, d->seg[0].addr, sizeof(fin));
    /* A sender that started its RGET without the progress lock wrote the
     * request last before the RGET left (send.c send_rndv_free). */
    bm_util_xproc_acquire();
    struct bm_pml_request *req = bm_pml_request_lookup(fin.req, BM_PML_REQ_SEND);
    if (!req) {
        /* a FIN naming a receive: the sender wrote what a PUT asked for */
        req = bm_pml_request_lookup(fin.req, BM_PML_REQ_RECV);
        if (req)
            rget_put_fin(req, &fin, d->peer);
        else
            bm_log_debug("dropped a FIN from rank %d for no request in progress (duplicate?)",
                         d->peer);
        return;
    }
    if (req->peer != d->peer || fin.length > req->bytes) {
        bm_log_debug("dropped a FIN from rank %d for no send in progress (duplicate?)", d->peer);
        return;
    }
    if (__builtin_expect(rdma_fault(fin.status), 0))
        send_fault(req, d->peer, fin.status);
    /* The receiver has what it wanted: an ACK that asks for nothing more. */
    struct bm_pml_hdr_ack ack = {
        .base = {.type = BM_PML_HDR_ACK},
        .sreq = fin.req,
        .rreq = 0,
        .offset = req->bytes,
        .length = req->bytes,
    };
    struct bm_btl_segment seg = {.addr = &ack, .len = sizeof(ack)};
    struct bm_btl_recv_desc ad = *d;
    ad.tag = BM_PML_BTL_TAG(BM_PML_HDR_ACK);
    ad.seg_count = 1;
    ad.seg = &seg;
    bm_pml_send_ack_cb(m, &ad, cbdata);
}

/* A sender writing the range a PUT asked for. */
struct rdma_put_op {
    struct bm_pml_hdr_fin fin;
    int peer_world;
    int pending;
    bool issuing;
};

static void put_step(struct rdma_put_op *op)
{
    if (op->pending > 0 || op->issuing)
        return;
    bm_log_debug("PUT of bytes %llu-%llu to rank %d: %s", (unsigned long long)op->fin.offset,
                 (unsigned long long)(op->fin.offset + op->fin.length), op->peer_world,
                 bm_status_str(op->fin.status));
    bm_pml_ctl_send(op->peer_world, BM_PML_BTL_TAG(BM_PML_HDR_FIN), &op->fin, sizeof(op->fin));
    free(op);
}

static void put_cb(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                   struct bm_btl_reg_handle *local_handle, void *context, void *cbdata, int status)
{
    (void)m;
    (void)ep;
    (void)local_addr;
    (void)local_handle;
    (void)context;
    struct rdma_put_op *op = cbdata;
    if (status < 0 && op->fin.status == BM_OK)
        op->fin.status = status;
    op->pending--;
    put_step(op);
}

void bm_pml_rdma_put_cb(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata)
{
    (void)m;
    (void)cbdata;
    struct bm_pml_hdr_put ph;
    size_t len = d->seg_count ? d->seg[0].len : 0;
    if (len < sizeof(ph)) {
        bm_log_ratelimited(BM_LOG_ERROR, "dropped a short PUT (%zu bytes) from rank %d", len,
                           d->peer);
        return;
    }
    memcpy(&ph, d->seg[0].addr, sizeof(ph));
    /* The request outlives the PUT: the receiver completes it only after
     * the FIN below. A second PUT is a resend after a path failure. */
    struct bm_pml_request *req = bm_pml_request_lookup(ph.sreq, BM_PML_REQ_SEND);
    if (!req || req->peer != d->peer || req->put_done || ph.offset > req->bytes ||
        ph.length > req->bytes - ph.offset) {
        bm_log_debug("dropped a PUT from rank %d for no send waiting for one (duplicate?)",
                     d->peer);
        return;
    }
    req->put_done = true;
    struct rdma_put_op *op = calloc(1, sizeof(*op));
    if (!op)
        abort();
    op->peer_world = d->peer;
    op->fin.match = (struct bm_pml_hdr_match){.base = {.type = BM_PML_HDR_FIN},
                                              .cid = req->cid,
                                              .src = req->src_rank,
                                              .tag = req->tag,
                                              .seq = req->seq};
    op->fin.status = BM_OK;
    op->fin.req = ph.rreq;
    op->fin.offset = ph.offset;
    op->fin.length = ph.length;
    op->issuing = true;
    struct bm_btl_path *path = rdma_path(d->peer, BM_BTL_CAP_PUT, ph.length);
    if (!path)
        op->fin.status = BM_ERR_NOT_AVAILABLE;
    else
        op->fin.status = rdma_move(path, true, (char *)(uintptr_t)(req->sbuf + ph.offset),
                                   ph.remote_addr, NULL, ph.length, put_cb, op, &op->pending);
    op->issuing = false;
    put_step(op);
}
