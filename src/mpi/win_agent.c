/* The active-message side of one-sided communication (osc_proto.h): the
 * target-side agent, which carries out the operations other processes send
 * to this process's windows and answers them, and the origin side of the
 * answers (operation records named by id, completed as their answers come
 * in). The agent is the PML's active-message handler BM_PML_AM_OSC, so it
 * runs inside this process's progress, whoever calls it: an MPI call that
 * waits, a progress hook, or a progress thread. Nothing in it waits: a lock
 * request that cannot be granted is queued, and a progress hook grants it
 * once the lock word allows (a process of the node may release a lock in a
 * shared segment with a plain store, without a message). */
#define BM_LOG_SUBSYS "mpi/osc"
#include "util/log.h"

#include "mpi/win.h"
#include "pml/pml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Operation records, named on the wire by slot index (low 32 bits) and the
 * slot's generation (high 32 bits), so a stale answer finds nothing. */
static struct {
    bool init;
    struct bm_osc_op **slots;
    uint32_t *gen;
    uint32_t nslots;
    uint32_t *free_idx;
    uint32_t nfree;
    bool hook;         /* the lock-granting progress hook is registered */
    struct rndv *rndv; /* PML messages of large puts and gets in progress */
    bool rndv_hook;    /* rndv_poll is registered */
} agent_g;

/* A PML receive of a large put (target side) or get (origin side),
 * watched by a progress hook until it completes. */
struct rndv {
    struct rndv *next;
    struct bm_pml_request *req;
    bool origin_get; /* origin side of a get (else target side of a put) */
    int peer_world;  /* put: the origin to answer */
    uint32_t win_id; /* put: the window */
    uint64_t opid;   /* put: the origin's operation; get: this process's */
    int status;      /* put: BM_ERR_BAD_PARAM when the range was refused */
};

static void agent_recv(int peer_world, const void *msg, size_t len, void *arg);

void bm_osc_agent_init(void)
{
    if (agent_g.init)
        return;
    agent_g.init = true;
    bm_pml_am_register(BM_PML_AM_OSC, agent_recv, NULL);
}

/* ---- operation records (origin side) ------------------------------------- */

struct bm_osc_op *bm_osc_op_new(MPI_Win win, int target, void *result, size_t want)
{
    if (agent_g.nfree == 0) {
        uint32_t n = agent_g.nslots ? 2 * agent_g.nslots : 64;
        struct bm_osc_op **s = realloc(agent_g.slots, sizeof(*s) * n);
        if (s)
            agent_g.slots = s;
        uint32_t *g = realloc(agent_g.gen, sizeof(*g) * n);
        if (g)
            agent_g.gen = g;
        uint32_t *f = realloc(agent_g.free_idx, sizeof(*f) * n);
        if (f)
            agent_g.free_idx = f;
        if (!s || !g || !f)
            return NULL;
        for (uint32_t i = agent_g.nslots; i < n; i++) {
            agent_g.slots[i] = NULL;
            agent_g.gen[i] = 1;
            agent_g.free_idx[agent_g.nfree++] = n - 1 - (i - agent_g.nslots);
        }
        agent_g.nslots = n;
    }
    struct bm_osc_op *op = calloc(1, sizeof(*op));
    if (!op)
        return NULL;
    uint32_t idx = agent_g.free_idx[--agent_g.nfree];
    agent_g.slots[idx] = op;
    op->id = (uint64_t)agent_g.gen[idx] << 32 | idx;
    op->win = win;
    op->target = target;
    op->result = result;
    op->want = want;
    op->status = BM_OK;
    win->answers_out++;
    win->t[target].answers_out++;
    return op;
}

void bm_osc_op_free(struct bm_osc_op *op)
{
    uint32_t idx = (uint32_t)op->id;
    agent_g.slots[idx] = NULL;
    if (++agent_g.gen[idx] == 0)
        agent_g.gen[idx] = 1;
    agent_g.free_idx[agent_g.nfree++] = idx;
    free(op);
}

static struct bm_osc_op *op_lookup(uint64_t id)
{
    uint32_t idx = (uint32_t)id;
    if (idx >= agent_g.nslots || !agent_g.slots[idx] || agent_g.gen[idx] != (uint32_t)(id >> 32))
        return NULL;
    return agent_g.slots[idx];
}

/* All answers of op are in. */
static void op_done(struct bm_osc_op *op)
{
    MPI_Win win = op->win;
    op->done = true;
    win->answers_out--;
    win->t[op->target].answers_out--;
    if (op->status != BM_OK && !win->error) {
        win->error =
            op->status == BM_ERR_BAD_PARAM ? MPI_ERR_RMA_RANGE : bm_mpi_class_of_status(op->status);
        snprintf(win->error_what, sizeof(win->error_what),
                 "an operation on rank %d's window failed there: %s", op->target,
                 bm_status_str(op->status));
    }
    if (op->fetch)
        bm_osc_fetch_release(op->fetch);
    if (op->req)
        bm_osc_req_part_done(op->req, op->status);
    if (!op->keep)
        bm_osc_op_free(op);
}

/* ---- sending -------------------------------------------------------------- */

size_t bm_osc_am_max_data(MPI_Win win, int target)
{
    struct bm_osc_target *t = &win->t[target];
    if (t->am_max == 0) {
        size_t m = bm_pml_am_max(t->world);
        t->am_max = m > sizeof(struct bm_osc_hdr) + 64 ? m - sizeof(struct bm_osc_hdr) : 64;
    }
    return t->am_max;
}

static size_t pad8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* Is there room in target's batch for a message of bytes (allocating the
 * batch at first use)? */
static bool batch_room(MPI_Win win, struct bm_osc_target *t, size_t bytes)
{
    size_t need = t->batch_len + sizeof(struct bm_osc_batch_item) + pad8(bytes);
    if (need > win->batch_max || need + sizeof(struct bm_osc_hdr) > bm_pml_am_max(t->world))
        return false;
    if (!t->batch) {
        if (!(t->batch = malloc(win->batch_max)))
            return false;
        t->batch_cap = win->batch_max;
    }
    return need <= t->batch_cap;
}

static void batch_append(struct bm_osc_target *t, const struct bm_osc_hdr *h, const void *p1,
                         size_t l1, const void *p2, size_t l2)
{
    size_t bytes = sizeof(*h) + l1 + l2;
    struct bm_osc_batch_item it = {.bytes = (uint32_t)bytes};
    char *p = t->batch + t->batch_len;
    memcpy(p, &it, sizeof(it));
    memcpy(p + sizeof(it), h, sizeof(*h));
    if (l1)
        memcpy(p + sizeof(it) + sizeof(*h), p1, l1);
    if (l2)
        memcpy(p + sizeof(it) + sizeof(*h) + l1, p2, l2);
    memset(p + sizeof(it) + bytes, 0, pad8(bytes) - bytes);
    t->batch_len += sizeof(it) + pad8(bytes);
    t->batch_items++;
}

/* Send what target's batch holds as one BATCH message. */
static void batch_send(MPI_Win win, struct bm_osc_target *t)
{
    if (t->batch_len == 0)
        return;
    struct bm_osc_hdr b = {.type = BM_OSC_BATCH, .win = win->id, .len = t->batch_len};
    struct bm_pml_iov iov[2] = {{&b, sizeof(b)}, {t->batch, t->batch_len}};
    bm_pml_am_sendv(t->world, BM_PML_AM_OSC, iov, 2);
    t->batch_len = 0;
    t->batch_items = 0;
}

void bm_osc_batch_push(MPI_Win win, int lo, int hi)
{
    for (int r = lo; r < hi; r++)
        batch_send(win, &win->t[r]);
}

void bm_osc_am_send(MPI_Win win, int target, struct bm_osc_hdr *h, const void *p1, size_t l1,
                    const void *p2, size_t l2)
{
    struct bm_osc_target *t = &win->t[target];
    if (l1 == 0)
        l2 = 0; /* the second payload follows the first */
    h->win = win->id;
    size_t bytes = sizeof(*h) + l1 + l2;
    /* small PUTs and ACCs wait; anything else takes what waits along */
    bool hold =
        win->batch_max > 0 && h->opid == 0 && (h->type == BM_OSC_PUT || h->type == BM_OSC_ACC);
    if (hold || t->batch_len > 0) {
        if (batch_room(win, t, bytes)) {
            batch_append(t, h, p1, l1, p2, l2);
            if (!hold)
                batch_send(win, t);
            return;
        }
        batch_send(win, t);
        if (hold && batch_room(win, t, bytes)) {
            batch_append(t, h, p1, l1, p2, l2);
            return;
        }
    }
    struct bm_pml_iov iov[3] = {{h, sizeof(*h)}, {p1, l1}, {p2, l2}};
    bm_pml_am_sendv(t->world, BM_PML_AM_OSC, iov, 1 + (l1 > 0) + (l2 > 0));
}

/* ---- large puts and gets: PML messages ------------------------------------ */

static int rndv_poll(void *arg);
static void answer(int origin, uint32_t win_id, uint64_t opid, int status, const void *data,
                   size_t len);

static void rndv_watch(struct rndv *rv)
{
    rv->next = agent_g.rndv;
    agent_g.rndv = rv;
    if (!agent_g.rndv_hook && bm_pml_progress_register(rndv_poll, NULL) == BM_OK)
        agent_g.rndv_hook = true;
}

int bm_osc_am_put_rndv(MPI_Win win, int target, const void *buf, uint64_t addr, size_t len,
                       struct bm_osc_req *req)
{
    struct bm_osc_target *t = &win->t[target];
    struct bm_osc_op *o = bm_osc_op_new(win, target, NULL, 0);
    if (!o)
        return BM_ERR_NO_MEMORY;
    if (req) {
        o->req = req;
        req->parts++;
    }
    /* the data message matches the target's receive whichever arrives
     * first (the n-th PUT_RNDV from here takes the n-th message) */
    struct bm_pml_request *pr;
    bm_status_t rc = bm_pml_isend(buf, len, t->world, win->comm->context_id, win->rank,
                                  BM_OSC_TAG_PUT, BM_PML_SEND_STANDARD, &pr);
    if (rc != BM_OK) {
        /* nothing announced: fail the operation, reported at the next
         * synchronisation as any failed answer */
        o->status = rc;
        op_done(o);
        return BM_OK;
    }
    bm_pml_request_free(pr); /* the target's answer completes the put */
    struct bm_osc_hdr h = {.type = BM_OSC_PUT_RNDV, .opid = o->id, .addr = addr, .len = len};
    bm_osc_am_send(win, target, &h, NULL, 0, NULL, 0);
    return BM_OK;
}

int bm_osc_am_get_rndv(MPI_Win win, int target, void *buf, uint64_t addr, size_t len,
                       struct bm_osc_req *req)
{
    struct rndv *rv = calloc(1, sizeof(*rv));
    struct bm_osc_op *o = rv ? bm_osc_op_new(win, target, buf, len) : NULL;
    if (!o) {
        free(rv);
        return BM_ERR_NO_MEMORY;
    }
    if (req) {
        o->req = req;
        req->parts++;
    }
    /* the receive first: the data may come back before this call returns */
    bm_status_t rc =
        bm_pml_irecv(buf, len, win->comm->context_id, target, BM_OSC_TAG_GET, &rv->req);
    if (rc != BM_OK) {
        free(rv);
        o->status = rc;
        o->got = o->want;
        op_done(o);
        return BM_OK; /* reported at the next synchronisation, as any failed answer */
    }
    rv->origin_get = true;
    rv->opid = o->id;
    rndv_watch(rv);
    struct bm_osc_hdr h = {.type = BM_OSC_GET_RNDV, .addr = addr, .len = len};
    bm_osc_am_send(win, target, &h, NULL, 0, NULL, 0);
    return BM_OK;
}

/* A watched receive completed: answer the origin of a put, or complete
 * this process's get. */
static void rndv_done(struct rndv *rv, const struct bm_pml_status *st)
{
    if (!rv->origin_get) {
        int status = rv->status != BM_OK ? rv->status : st->error;
        answer(rv->peer_world, rv->win_id, rv->opid, status, NULL, 0);
        return;
    }
    struct bm_osc_op *op = op_lookup(rv->opid);
    if (!op)
        return;
    if (st->error != BM_OK)
        op->status = st->error;
    else if (st->count != op->want)
        op->status = BM_ERR_BAD_PARAM; /* the target refused the range: an empty message */
    op->got = op->want;
    op_done(op);
}

static int rndv_poll(void *arg)
{
    (void)arg;
    int n = 0;
    for (struct rndv **pp = &agent_g.rndv; *pp;) {
        struct rndv *rv = *pp;
        if (!bm_pml_request_done(rv->req)) {
            pp = &rv->next;
            continue;
        }
        struct bm_pml_status st;
        bm_pml_request_test(rv->req, &st);
        bm_pml_request_free(rv->req);
        *pp = rv->next;
        rndv_done(rv, &st);
        free(rv);
        n++;
    }
    if (!agent_g.rndv) {
        bm_pml_progress_unregister(rndv_poll, NULL);
        agent_g.rndv_hook = false;
    }
    return n;
}

/* Send to a process by world rank (answers: the origin may not be found
 * in a window that this process no longer has). */
static void send_world(int world, uint32_t win_id, struct bm_osc_hdr *h, const void *p, size_t l)
{
    struct bm_pml_iov iov[2] = {{h, sizeof(*h)}, {p, l}};
    h->win = win_id;
    bm_pml_am_sendv(world, BM_PML_AM_OSC, iov, l > 0 ? 2 : 1);
}

/* Answer opid at the origin: data (len bytes) in chunks that fit. */
static void answer(int origin, uint32_t win_id, uint64_t opid, int status, const void *data,
                   size_t len)
{
    if (!opid)
        return;
    size_t max = bm_pml_am_max(origin) - sizeof(struct bm_osc_hdr);
    size_t off = 0;
    do {
        size_t n = len - off < max ? len - off : max;
        struct bm_osc_hdr h = {
            .type = BM_OSC_ANSWER, .status = status, .opid = opid, .addr = off, .len = n};
        send_world(origin, win_id, &h, (const char *)data + off, n);
        off += n;
    } while (off < len);
}

/* ---- locks ------------------------------------------------------------------ */

bool bm_osc_lock_try(_Atomic uint64_t *word, int type)
{
    uint64_t v = atomic_load_explicit(word, memory_order_relaxed);
    if (type == BM_OSC_LOCK_EXCLUSIVE)
        return v == 0 &&
               atomic_compare_exchange_strong_explicit(word, &v, BM_OSC_LOCK_EXCL_BIT,
                                                       memory_order_acquire, memory_order_relaxed);
    while (!(v & BM_OSC_LOCK_EXCL_BIT))
        if (atomic_compare_exchange_weak_explicit(word, &v, v + 1, memory_order_acquire,
                                                  memory_order_relaxed))
            return true;
    return false;
}

void bm_osc_lock_release(_Atomic uint64_t *word, int type)
{
    if (type == BM_OSC_LOCK_EXCLUSIVE)
        atomic_store_explicit(word, 0, memory_order_release);
    else
        atomic_fetch_sub_explicit(word, 1, memory_order_release);
}

static int agent_hook(void *arg);

int bm_osc_agent_grant(MPI_Win win)
{
    int n = 0;
    /* first come, first served: a request that cannot be granted holds
     * back those behind it, so an exclusive one is not starved */
    while (win->lock_waiters && bm_osc_lock_try(win->lock_word, win->lock_waiters->type)) {
        struct bm_osc_lock_wait *lw = win->lock_waiters;
        win->lock_waiters = lw->next;
        answer(lw->origin_world, win->id, lw->opid, BM_OK, NULL, 0);
        free(lw);
        n++;
    }
    return n;
}

static int agent_hook(void *arg)
{
    (void)arg;
    int n = 0;
    bool waiting = false;
    for (struct bm_mpi_win *w = bm_osc_win_lookup_first(); w; w = w->next) {
        if (!w->lock_waiters)
            continue;
        n += bm_osc_agent_grant(w);
        waiting |= w->lock_waiters != NULL;
    }
    if (!waiting) {
        bm_pml_progress_unregister(agent_hook, NULL);
        agent_g.hook = false;
    }
    return n;
}

static void lock_request(MPI_Win win, int origin, const struct bm_osc_hdr *h)
{
    int type = h->op == BM_OSC_LOCK_EXCLUSIVE ? BM_OSC_LOCK_EXCLUSIVE : BM_OSC_LOCK_SHARED;
    if (!win->lock_waiters && bm_osc_lock_try(win->lock_word, type)) {
        answer(origin, win->id, h->opid, BM_OK, NULL, 0);
        return;
    }
    struct bm_osc_lock_wait *lw = calloc(1, sizeof(*lw)), **pp = &win->lock_waiters;
    if (!lw)
        abort();
    lw->origin_world = origin;
    lw->type = (uint8_t)type;
    lw->opid = h->opid;
    while (*pp)
        pp = &(*pp)->next;
    *pp = lw;
    if (!agent_g.hook && bm_pml_progress_register(agent_hook, NULL) == BM_OK)
        agent_g.hook = true;
}

/* ---- the agent ------------------------------------------------------------------ */

/* Target memory [addr, addr + len) of this process's window, or NULL when
 * it is outside the window (the origin checked it for other windows than
 * dynamic ones, so that means a corrupt or stale message, or an address not
 * attached). */
static char *target_mem(MPI_Win win, uint64_t addr, uint64_t len)
{
    if (win->flavor == MPI_WIN_FLAVOR_DYNAMIC)
        return len == 0 || bm_osc_region_ok(win, addr, len) ? (char *)(uintptr_t)addr : NULL;
    if (addr > (uint64_t)win->size || len > (uint64_t)win->size - addr)
        return NULL;
    return (char *)win->base + addr;
}

/* The operation failed here: tell the origin (an answer when it waits for
 * one, else an ERROR it reports at its next synchronisation). */
static void agent_fail(int origin, uint32_t win_id, const struct bm_osc_hdr *h, int status,
                       const char *what)
{
    bm_log_debug("one-sided %s from rank %d (window %u, %llu bytes at 0x%llx) failed: %s", what,
                 origin, win_id, (unsigned long long)h->len, (unsigned long long)h->addr,
                 bm_status_str(status));
    if (h->opid) {
        answer(origin, win_id, h->opid, status, NULL, 0);
        return;
    }
    struct bm_osc_hdr e = {.type = BM_OSC_ERROR, .status = status, .addr = h->addr, .len = h->len};
    send_world(origin, win_id, &e, NULL, 0);
}

static void agent_answer_in(const struct bm_osc_hdr *h, const char *data, size_t dlen)
{
    struct bm_osc_op *op = op_lookup(h->opid);
    if (!op) {
        bm_log_ratelimited(BM_LOG_ERROR,
                           "dropped a one-sided answer for no operation in "
                           "progress (%llx)",
                           (unsigned long long)h->opid);
        return;
    }
    if (h->status != BM_OK && op->status == BM_OK)
        op->status = h->status;
    if (h->len > dlen || h->addr > op->want || h->len > op->want - h->addr) {
        op->status = BM_ERR_PROTOCOL;
        op->got = op->want;
    } else {
        if (h->len && op->result)
            memcpy(op->result + h->addr, data, h->len);
        op->got += h->len;
    }
    if (op->got >= op->want || h->status != BM_OK)
        op_done(op);
}

static void agent_error_in(MPI_Win win, int origin, const struct bm_osc_hdr *h)
{
    if (win->error)
        return;
    win->error = h->status == BM_ERR_BAD_PARAM ? MPI_ERR_RMA_RANGE : MPI_ERR_OTHER;
    snprintf(win->error_what, sizeof(win->error_what),
             "rank %d (world) refused an operation on %llu bytes at displacement %llu of its "
             "window: %s",
             origin, (unsigned long long)h->len, (unsigned long long)h->addr,
             h->status == BM_ERR_BAD_PARAM ? "outside the window (or not attached)"
                                           : bm_status_str(h->status));
}

static _Atomic uint32_t *stripes_of(MPI_Win win)
{
    return win->has_seg ? win->stripes : NULL;
}

static void agent_acc(MPI_Win win, int origin, const struct bm_osc_hdr *h, const char *data,
                      size_t dlen)
{
    MPI_Datatype dt = bm_osc_type_of_id(h->dtype);
    MPI_Op op = bm_osc_op_of_id(h->op);
    bool fetch = h->type == BM_OSC_GACC;
    bool need_data = op != MPI_NO_OP;
    if (!dt || !op || dt->extent <= 0 || h->len % (uint64_t)dt->extent ||
        (need_data && dlen < h->len)) {
        agent_fail(origin, win->id, h, BM_ERR_PROTOCOL, "accumulate");
        return;
    }
    size_t ext = (size_t)dt->extent, n = h->len / ext;
    /* elements back to back, or (BM_OSC_F_STRIDED) stride bytes apart */
    int64_t stride = h->flags & BM_OSC_F_STRIDED ? (int64_t)(int32_t)h->reserved : (int64_t)ext;
    char *mem = stride == (int64_t)ext ? target_mem(win, h->addr, h->len) : NULL;
    for (size_t i = 0; stride != (int64_t)ext && i < n; i++)
        if (!target_mem(win, h->addr + (uint64_t)((int64_t)i * stride), ext)) {
            agent_fail(origin, win->id, h, BM_ERR_BAD_PARAM, "accumulate");
            return;
        }
    if (stride == (int64_t)ext && !mem) {
        agent_fail(origin, win->id, h, BM_ERR_BAD_PARAM, "accumulate");
        return;
    }
    char *old = NULL;
    if (fetch && h->len && !(old = malloc(h->len)))
        abort();
    if (mem) {
        bm_osc_acc_apply(op, dt, need_data ? data : NULL, mem, old, n, stripes_of(win));
    } else {
        for (size_t i = 0; i < n; i++)
            bm_osc_acc_apply(op, dt, need_data ? data + i * ext : NULL,
                             target_mem(win, h->addr + (uint64_t)((int64_t)i * stride), ext),
                             old ? old + i * ext : NULL, 1, stripes_of(win));
    }
    if (h->flags & BM_OSC_F_COUNTED)
        win->am_in_counted++;
    if (fetch)
        answer(origin, win->id, h->opid, BM_OK, old, h->len);
    free(old);
}

static void agent_cas(MPI_Win win, int origin, const struct bm_osc_hdr *h, const char *data,
                      size_t dlen)
{
    MPI_Datatype dt = bm_osc_type_of_id(h->dtype);
    char *mem = target_mem(win, h->addr, h->len);
    if (!dt || h->len != (uint64_t)dt->extent || dlen < 2 * h->len || h->len > 64) {
        agent_fail(origin, win->id, h, BM_ERR_PROTOCOL, "compare-and-swap");
        return;
    }
    if (!mem) {
        agent_fail(origin, win->id, h, BM_ERR_BAD_PARAM, "compare-and-swap");
        return;
    }
    char old[64];
    bm_osc_cas_apply(dt, data, data + h->len, mem, old, stripes_of(win));
    answer(origin, win->id, h->opid, BM_OK, old, h->len);
}

/* PUT_RNDV: receive the data straight into the window (into nothing,
 * answered with the failure, when the range is refused: the message must
 * still be taken, or it would match the next put's receive). */
static void agent_put_rndv(MPI_Win win, int peer_world, int origin, const struct bm_osc_hdr *h)
{
    char *mem = h->len ? target_mem(win, h->addr, h->len) : NULL;
    struct rndv *rv = calloc(1, sizeof(*rv));
    if (!rv)
        abort();
    rv->peer_world = peer_world;
    rv->win_id = win->id;
    rv->opid = h->opid;
    rv->status = mem ? BM_OK : BM_ERR_BAD_PARAM;
    bm_status_t rc = bm_pml_irecv(mem, mem ? h->len : 0, win->comm->context_id, origin,
                                  BM_OSC_TAG_PUT, &rv->req);
    if (rc != BM_OK) {
        free(rv);
        agent_fail(peer_world, win->id, h, rc, "put");
        return;
    }
    rndv_watch(rv);
}

/* GET_RNDV: send the data (an empty message when the range is refused: the
 * origin's receive completes either way). */
static void agent_get_rndv(MPI_Win win, int peer_world, const struct bm_osc_hdr *h)
{
    char *mem = h->len ? target_mem(win, h->addr, h->len) : NULL;
    struct bm_pml_request *r;
    if (!mem)
        bm_log_debug("one-sided get from rank %d (window %u, %llu bytes at 0x%llx): outside the "
                     "window",
                     peer_world, win->id, (unsigned long long)h->len, (unsigned long long)h->addr);
    if (bm_pml_isend(mem, mem ? h->len : 0, peer_world, win->comm->context_id, win->rank,
                     BM_OSC_TAG_GET, BM_PML_SEND_STANDARD, &r) == BM_OK)
        bm_pml_request_free(r);
    else
        bm_log_error("could not answer a %llu-byte get from rank %d: its window waits for "
                     "data that will not come",
                     (unsigned long long)h->len, peer_world);
}

static void agent_msg(int peer_world, const char *msg, size_t len, bool in_batch);

/* BATCH: run the items in order. */
static void agent_batch(int peer_world, const char *data, size_t dlen)
{
    size_t off = 0;
    while (dlen - off >= sizeof(struct bm_osc_batch_item)) {
        struct bm_osc_batch_item it;
        memcpy(&it, data + off, sizeof(it));
        off += sizeof(it);
        if (it.bytes < sizeof(struct bm_osc_hdr) || it.bytes > dlen - off) {
            bm_log_ratelimited(BM_LOG_ERROR,
                               "dropped the rest of a one-sided batch from rank %d: an item of "
                               "%u bytes where %zu remain",
                               peer_world, it.bytes, dlen - off);
            return;
        }
        agent_msg(peer_world, data + off, it.bytes, true);
        off += pad8(it.bytes);
    }
}

static void agent_recv(int peer_world, const void *msg, size_t len, void *arg)
{
    (void)arg;
    agent_msg(peer_world, msg, len, false);
}

static void agent_msg(int peer_world, const char *msg, size_t len, bool in_batch)
{
    struct bm_osc_hdr h;
    if (len < sizeof(h)) {
        bm_log_ratelimited(BM_LOG_ERROR,
                           "dropped a short one-sided message (%zu bytes) from "
                           "rank %d",
                           len, peer_world);
        return;
    }
    memcpy(&h, msg, sizeof(h));
    const char *data = msg + sizeof(h);
    size_t dlen = len - sizeof(h);
    if (h.type == BM_OSC_ANSWER) {
        agent_answer_in(&h, data, dlen);
        return;
    }
    MPI_Win win = bm_osc_win_lookup(h.win);
    if (!win) {
        bm_log_warn("a one-sided message (type %u) from rank %d names window %u, which this "
                    "process does not have (freed already?)",
                    h.type, peer_world, h.win);
        if (h.type != BM_OSC_ERROR && h.type != BM_OSC_POST && h.type != BM_OSC_COMPLETE)
            agent_fail(peer_world, h.win, &h, BM_ERR_NOT_FOUND, "operation");
        return;
    }
    int origin = bm_osc_rank_of_world(win, peer_world);
    if (origin < 0) {
        bm_log_ratelimited(BM_LOG_ERROR,
                           "dropped a one-sided message from rank %d, which is not "
                           "part of window %u",
                           peer_world, h.win);
        return;
    }
    switch (h.type) {
    case BM_OSC_PUT: {
        char *mem = target_mem(win, h.addr, h.len);
        if (dlen < h.len) {
            agent_fail(peer_world, win->id, &h, BM_ERR_PROTOCOL, "put");
        } else if (!mem) {
            agent_fail(peer_world, win->id, &h, BM_ERR_BAD_PARAM, "put");
        } else {
            if (h.len)
                memcpy(mem, data, h.len);
            if (h.flags & BM_OSC_F_COUNTED)
                win->am_in_counted++;
        }
        break;
    }
    case BM_OSC_GET: {
        char *mem = target_mem(win, h.addr, h.len);
        if (!mem)
            agent_fail(peer_world, win->id, &h, BM_ERR_BAD_PARAM, "get");
        else
            answer(peer_world, win->id, h.opid, BM_OK, mem, h.len);
        break;
    }
    case BM_OSC_ACC:
    case BM_OSC_GACC:
        agent_acc(win, peer_world, &h, data, dlen);
        break;
    case BM_OSC_CAS:
        agent_cas(win, peer_world, &h, data, dlen);
        break;
    case BM_OSC_LOCK:
        lock_request(win, peer_world, &h);
        break;
    case BM_OSC_UNLOCK:
        bm_osc_lock_release(win->lock_word, h.op == BM_OSC_LOCK_EXCLUSIVE ? BM_OSC_LOCK_EXCLUSIVE
                                                                          : BM_OSC_LOCK_SHARED);
        answer(peer_world, win->id, h.opid, BM_OK, NULL, 0);
        bm_osc_agent_grant(win);
        break;
    case BM_OSC_FLUSH:
        answer(peer_world, win->id, h.opid, BM_OK, NULL, 0);
        break;
    case BM_OSC_POST:
        win->t[origin].posts++;
        break;
    case BM_OSC_COMPLETE:
        win->completes++;
        break;
    case BM_OSC_ERROR:
        agent_error_in(win, peer_world, &h);
        break;
    case BM_OSC_PUT_RNDV:
        agent_put_rndv(win, peer_world, origin, &h);
        break;
    case BM_OSC_GET_RNDV:
        agent_get_rndv(win, peer_world, &h);
        break;
    case BM_OSC_BATCH:
        if (in_batch || h.len > dlen)
            bm_log_ratelimited(BM_LOG_ERROR, "dropped a malformed one-sided batch from rank %d",
                               peer_world);
        else
            agent_batch(peer_world, data, h.len);
        break;
    default:
        bm_log_ratelimited(BM_LOG_ERROR,
                           "dropped a one-sided message of unknown type %u from "
                           "rank %d",
                           h.type, peer_world);
    }
}
