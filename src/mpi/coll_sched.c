/* The collective schedule engine (coll_sched.h): building schedules,
 * running them to completion for blocking collectives, running them in the
 * background for nonblocking and persistent ones, and the scratch buffers
 * they use.
 *
 * Tags. Collective messages travel in the communicator's collective context
 * (context_id + 1), so they never match a user's receive. Inside it, a tag
 * keeps apart the collectives that may be in flight at once between two
 * ranks:
 *   - blocking collectives: (kind << 9) | subtag. A process runs one
 *     blocking collective at a time on a communicator and every process
 *     calls them in the same order, so MPI's non-overtaking order matches
 *     the n-th message of one with the n-th receive of the other; the kind
 *     makes a mismatch between ranks (Bcast here, Barrier there) a hang in a
 *     named collective instead of silently wrong data;
 *   - nonblocking and persistent collectives: bit 28 | (seq << 9) | subtag,
 *     where seq counts those collectives on the communicator (19 bits: half
 *     a million may be pending at once), so two of them in flight together,
 *     or one and a blocking one, never take each other's messages;
 *   - bits 29 and 30 are the inter-communicator set-up's and
 *     MPI_Comm_create_group's (mpi_internal.h).
 *
 * Progress. Background runs sit on one list; while it is not empty a PML
 * progress hook advances them, so they move in every MPI call that waits or
 * tests anything, blocking collectives included. */
#define BM_LOG_SUBSYS "coll"
#include "util/log.h"

#include "mpi/coll.h"
#include "mpi/coll_sched.h"
#include "pml/pml.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Below BM_MPI_COLL_TAG_INTERCOMM_BASE (bit 29). */
#define TAG_NB_BIT   (1u << 28)
#define TAG_SEQ_MASK 0x7ffffu

/* ---- building ------------------------------------------------------------ */

struct bm_mpi_sched *bm_mpi_sched_new(int kind, int alg)
{
    struct bm_mpi_sched *s = calloc(1, sizeof(*s));

    if (s == NULL)
        return NULL;
    s->refs = 1;
    s->kind = kind;
    s->alg = alg;
    return s;
}

static struct bm_mpi_sched_step *step_add(struct bm_mpi_sched *s, int op)
{
    if (s->nomem)
        return NULL;
    if (s->nsteps == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        struct bm_mpi_sched_step *v = realloc(s->steps, (size_t)cap * sizeof(*v));
        if (v == NULL) {
            s->nomem = true;
            return NULL;
        }
        s->steps = v;
        s->cap = cap;
    }
    struct bm_mpi_sched_step *st = &s->steps[s->nsteps++];
    memset(st, 0, sizeof(*st));
    st->op = (uint8_t)op;
    if (op == BM_SCHED_SEND || op == BM_SCHED_RECV) {
        if (s->local)
            st->flags = BM_SCHED_F_LOCAL;
        s->cur_comm++;
        if (s->cur_comm > s->max_comm)
            s->max_comm = s->cur_comm;
    }
    return st;
}

void bm_mpi_sched_send(struct bm_mpi_sched *s, int peer, int buf, ptrdiff_t off, size_t bytes,
                       int subtag)
{
    struct bm_mpi_sched_step *st = step_add(s, BM_SCHED_SEND);

    if (st) {
        st->peer = peer;
        st->sbuf = (uint8_t)buf;
        st->soff = off;
        st->n = bytes;
        st->subtag = (uint16_t)(subtag & BM_SCHED_SUBTAG_MAX);
    }
}

void bm_mpi_sched_recv(struct bm_mpi_sched *s, int peer, int buf, ptrdiff_t off, size_t bytes,
                       int subtag)
{
    struct bm_mpi_sched_step *st = step_add(s, BM_SCHED_RECV);

    if (st) {
        st->peer = peer;
        st->dbuf = (uint8_t)buf;
        st->doff = off;
        st->n = bytes;
        st->subtag = (uint16_t)(subtag & BM_SCHED_SUBTAG_MAX);
    }
}

void bm_mpi_sched_copy(struct bm_mpi_sched *s, int sbuf, ptrdiff_t soff, int dbuf, ptrdiff_t doff,
                       size_t bytes)
{
    struct bm_mpi_sched_step *st;

    if (bytes == 0 || (sbuf == dbuf && soff == doff))
        return;
    if ((st = step_add(s, BM_SCHED_COPY))) {
        st->sbuf = (uint8_t)sbuf;
        st->soff = soff;
        st->dbuf = (uint8_t)dbuf;
        st->doff = doff;
        st->n = bytes;
    }
}

void bm_mpi_sched_reduce(struct bm_mpi_sched *s, int sbuf, ptrdiff_t soff, int dbuf, ptrdiff_t doff,
                         size_t count)
{
    struct bm_mpi_sched_step *st;

    if (count == 0)
        return;
    if ((st = step_add(s, BM_SCHED_REDUCE))) {
        st->sbuf = (uint8_t)sbuf;
        st->soff = soff;
        st->dbuf = (uint8_t)dbuf;
        st->doff = doff;
        st->n = count;
    }
}

static void pack_step(struct bm_mpi_sched *s, int op, MPI_Datatype dt, int sbuf, ptrdiff_t soff,
                      size_t count, int dbuf, ptrdiff_t doff)
{
    struct bm_mpi_sched_step *st;

    if (count == 0)
        return;
    if ((st = step_add(s, op))) {
        st->sbuf = (uint8_t)sbuf;
        st->soff = soff;
        st->dbuf = (uint8_t)dbuf;
        st->doff = doff;
        st->n = count;
        st->dt = dt;
        bm_mpi_type_retain(dt);
    }
}

void bm_mpi_sched_pack(struct bm_mpi_sched *s, MPI_Datatype dt, int ubuf, ptrdiff_t uoff,
                       size_t count, int pbuf, ptrdiff_t poff)
{
    pack_step(s, BM_SCHED_PACK, dt, ubuf, uoff, count, pbuf, poff);
}

void bm_mpi_sched_unpack(struct bm_mpi_sched *s, MPI_Datatype dt, int pbuf, ptrdiff_t poff,
                         size_t count, int ubuf, ptrdiff_t uoff)
{
    pack_step(s, BM_SCHED_UNPACK, dt, pbuf, poff, count, ubuf, uoff);
}

void bm_mpi_sched_local(struct bm_mpi_sched *s, bool local)
{
    s->local = local;
}

void bm_mpi_sched_round(struct bm_mpi_sched *s)
{
    int start = s->nrounds ? s->round_end[s->nrounds - 1] : 0;

    if (s->nomem || s->nsteps == start)
        return;
    if (s->nrounds == s->rcap) {
        int cap = s->rcap ? 2 * s->rcap : 8;
        int *v = realloc(s->round_end, (size_t)cap * sizeof(*v));
        if (v == NULL) {
            s->nomem = true;
            return;
        }
        s->round_end = v;
        s->rcap = cap;
    }
    s->round_end[s->nrounds++] = s->nsteps;
    s->cur_comm = 0;
}

void bm_mpi_sched_tmp(struct bm_mpi_sched *s, size_t bytes)
{
    if (bytes > s->tmp_bytes)
        s->tmp_bytes = bytes;
}

int bm_mpi_sched_end(struct bm_mpi_sched *s, MPI_Comm comm, const char *fn)
{
    bm_mpi_sched_round(s);
    if (!s->nomem)
        return MPI_SUCCESS;
    bm_mpi_sched_release(s);
    return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory while building the schedule");
}

/* Atomic: a run may end (and let go of its schedule) in a progress hook
 * of another thread while the cache or a request holds it here. */
void bm_mpi_sched_retain(struct bm_mpi_sched *s)
{
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

void bm_mpi_sched_release(struct bm_mpi_sched *s)
{
    if (s && atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1) {
        for (int i = 0; i < s->nsteps; i++)
            if (s->steps[i].op == BM_SCHED_PACK || s->steps[i].op == BM_SCHED_UNPACK)
                bm_mpi_type_release(s->steps[i].dt);
        free(s->steps);
        free(s->round_end);
        free(s);
    }
}

/* ---- scratch memory ------------------------------------------------------- */

#define SCRATCH_SLOTS 4

static struct {
    void *p[SCRATCH_SLOTS];
    size_t len[SCRATCH_SLOTS];
} scratch;

/* Shared by every thread's collectives: under MPI_THREAD_MULTIPLE the
 * slots change under the object lock (mt.c). */
void *bm_mpi_scratch_get(size_t bytes)
{
    int best = -1;

    if (bytes == 0)
        bytes = 1;
    bm_mpi_obj_lock();
    for (int i = 0; i < SCRATCH_SLOTS; i++)
        if (scratch.p[i] && scratch.len[i] >= bytes &&
            (best < 0 || scratch.len[i] < scratch.len[best]))
            best = i;
    if (best >= 0) {
        void *p = scratch.p[best];
        scratch.p[best] = NULL;
        bm_mpi_obj_unlock();
        return p;
    }
    bm_mpi_obj_unlock();
    return malloc(bytes);
}

void bm_mpi_scratch_put(void *p, size_t bytes)
{
    size_t kept = 0;
    int slot = -1;

    if (p == NULL)
        return;
    size_t keep = bm_mpi_coll_cfg()->scratch_keep;
    bm_mpi_obj_lock();
    for (int i = 0; i < SCRATCH_SLOTS; i++) {
        if (scratch.p[i])
            kept += scratch.len[i];
        else if (slot < 0)
            slot = i;
    }
    /* A buffer from bm_mpi_scratch_get may be larger than asked; it is
     * remembered at the size it was last asked for, which is enough. */
    if (slot < 0 || kept + bytes > keep) {
        bm_mpi_obj_unlock();
        free(p);
        return;
    }
    scratch.p[slot] = p;
    scratch.len[slot] = bytes ? bytes : 1;
    bm_mpi_obj_unlock();
}

void bm_mpi_scratch_fini(void)
{
    for (int i = 0; i < SCRATCH_SLOTS; i++) {
        free(scratch.p[i]);
        scratch.p[i] = NULL;
    }
}

/* ---- running ------------------------------------------------------------- */

#define INLINE_REQS 8

struct bm_mpi_sched_exec {
    struct bm_mpi_sched *s;
    MPI_Comm comm;
    MPI_Datatype dt;
    MPI_Op op;
    char *buf[BM_SCHED_NBUF];
    uint32_t tag;
    int round;   /* the round in progress (== s->nrounds: finished; -1: left to the hook) */
    int nreq;    /* requests of the round in progress */
    int err;     /* MPI error class of a failure, else MPI_SUCCESS */
    bool done;   /* finished, successfully or not (written with exec_done_set) */
    bool busy;   /* being advanced (a nested progress call must not re-enter) */
    bool listed; /* on the background list */
    bool orphan; /* its owner freed it: release it when done */
    const char *fn;
    struct bm_pml_request **reqs;
    int *req_step;
    struct bm_mpi_sched_exec *prev, *next;
    char what[256];
    struct bm_pml_request *inline_reqs[INLINE_REQS];
    int inline_steps[INLINE_REQS];
};

/* done is written by whoever advances the run (under MPI_THREAD_MULTIPLE
 * the progress lock's holder, the progress thread among them) and read
 * under the same lock, except by bm_mpi_sched_exec_done, which looks
 * without it: a release store after the run's last write into the
 * caller's buffers, so that the acquire load there orders them. */
static inline void exec_done_set(struct bm_mpi_sched_exec *e, bool v)
{
    __atomic_store_n(&e->done, v, __ATOMIC_RELEASE);
}

static int exec_fail(struct bm_mpi_sched_exec *e, int errclass, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int exec_fail(struct bm_mpi_sched_exec *e, int errclass, const char *fmt, ...)
{
    va_list ap;

    if (e->err == MPI_SUCCESS) {
        e->err = errclass;
        va_start(ap, fmt);
        vsnprintf(e->what, sizeof(e->what), fmt, ap);
        va_end(ap);
    }
    return errclass;
}

static inline char *step_src(const struct bm_mpi_sched_exec *e, const struct bm_mpi_sched_step *st)
{
    return e->buf[st->sbuf] + st->soff;
}

static inline char *step_dst(const struct bm_mpi_sched_exec *e, const struct bm_mpi_sched_step *st)
{
    return e->buf[st->dbuf] + st->doff;
}

/* inout = in op inout on n elements of the run's datatype. Contiguous types
 * are reduced where they lie; others were packed by the schedule, and
 * packed data is n * basic_count elements of their basic type when they
 * have one without padding, else it is unpacked into the type's layout for
 * the operation (pairs, user operations on mixed types) and packed back. */
static void reduce_step(struct bm_mpi_sched_exec *e, const char *in, char *inout, size_t n)
{
    MPI_Datatype dt = e->dt;
    MPI_Aint lo;
    size_t span, bytes = n * dt->size;
    char *a, *b;

    if (dt->contiguous) {
        bm_mpi_op_apply(e->op, in, inout, (int)n, dt);
        return;
    }
    if (dt->basic && dt->basic->contiguous && e->op->id != BM_MPI_OP_ID_USER) {
        bm_mpi_op_apply(e->op, in, inout, (int)(n * dt->basic_count), dt->basic);
        return;
    }
    bm_mpi_type_span(dt, n, &lo, &span);
    span = (span + 63) & ~(size_t)63; /* the second copy as aligned as the first */
    a = bm_mpi_scratch_get(2 * span);
    if (a == NULL) {
        exec_fail(e, MPI_ERR_NO_MEM, "cannot allocate %zu bytes to reduce %s", 2 * span, dt->name);
        return;
    }
    b = a + span;
    bm_mpi_type_unpack(dt, a - lo, n, 0, in, bytes);
    bm_mpi_type_unpack(dt, b - lo, n, 0, inout, bytes);
    bm_mpi_op_apply(e->op, a - lo, b - lo, (int)n, dt);
    bm_mpi_type_pack(dt, b - lo, n, 0, inout, bytes);
    bm_mpi_scratch_put(a, 2 * span);
}

/* Start the steps of the current round. On failure the round's requests
 * already started are left to finish in the background. */
static int round_start(struct bm_mpi_sched_exec *e)
{
    const struct bm_mpi_sched *s = e->s;
    int first = e->round ? s->round_end[e->round - 1] : 0, last = s->round_end[e->round];
    MPI_Comm comm = e->comm;

    e->nreq = 0;
    for (int i = first; i < last; i++) {
        const struct bm_mpi_sched_step *st = &s->steps[i];
        struct bm_pml_request *req = NULL;
        MPI_Comm pc;
        bm_status_t rc;

        switch (st->op) {
        case BM_SCHED_COPY:
            memmove(step_dst(e, st), step_src(e, st), st->n);
            continue;
        case BM_SCHED_REDUCE:
            reduce_step(e, step_src(e, st), step_dst(e, st), st->n);
            continue;
        case BM_SCHED_PACK:
            bm_mpi_type_pack(st->dt, step_src(e, st), st->n, 0, step_dst(e, st),
                             st->n * st->dt->size);
            continue;
        case BM_SCHED_UNPACK:
            bm_mpi_type_unpack(st->dt, step_dst(e, st), st->n, 0, step_src(e, st),
                               st->n * st->dt->size);
            continue;
        case BM_SCHED_SEND:
            pc = st->flags & BM_SCHED_F_LOCAL ? comm->local_comm : comm;
            rc = bm_pml_isend_or_done(step_src(e, st), st->n, bm_mpi_coll_peer_world(pc, st->peer),
                                      bm_mpi_coll_cid(pc), bm_mpi_coll_myrank(pc),
                                      (int)(e->tag | st->subtag), BM_PML_SEND_STANDARD, &req);
            if (rc != BM_OK)
                return exec_fail(e, bm_mpi_class_of_status(rc), "sending to rank %d failed: %s",
                                 st->peer, bm_status_str(rc));
            break;
        case BM_SCHED_RECV:
            pc = st->flags & BM_SCHED_F_LOCAL ? comm->local_comm : comm;
            rc = bm_pml_irecv(step_dst(e, st), st->n, bm_mpi_coll_cid(pc), st->peer,
                              (int)(e->tag | st->subtag), &req);
            if (rc != BM_OK)
                return exec_fail(e, bm_mpi_class_of_status(rc),
                                 "posting a receive from rank %d failed: %s", st->peer,
                                 bm_status_str(rc));
            break;
        }
        if (req) {
            e->reqs[e->nreq] = req;
            e->req_step[e->nreq++] = i;
        }
    }
    return MPI_SUCCESS;
}

/* Check a completed request of step i (a receive must bring exactly its
 * bytes: another length means the ranks passed different counts or
 * datatypes, which the standard calls erroneous and we report). */
static void req_check(struct bm_mpi_sched_exec *e, int i, const struct bm_pml_status *status)
{
    const struct bm_mpi_sched_step *st = &e->s->steps[i];

    if (st->op == BM_SCHED_RECV &&
        (status->error == BM_ERR_TRUNCATE || (status->error == BM_OK && status->count != st->n)))
        exec_fail(e, MPI_ERR_TRUNCATE,
                  "rank %d sent %s than the %zu bytes expected: the ranks called %s with "
                  "different counts or datatypes",
                  st->peer, status->error == BM_ERR_TRUNCATE ? "more" : "fewer", st->n, e->fn);
    else if (status->error != BM_OK)
        exec_fail(e, bm_mpi_class_of_status(status->error), "%s rank %d failed: %s",
                  st->op == BM_SCHED_SEND ? "sending to" : "receiving from", st->peer,
                  bm_status_str(status->error));
}

static void exec_bind(struct bm_mpi_sched_exec *e, struct bm_mpi_sched *s, MPI_Comm comm,
                      const void *sbuf, void *rbuf, MPI_Datatype dt, MPI_Op op, const char *fn)
{
    e->s = s;
    e->comm = comm;
    e->dt = dt;
    e->op = op;
    e->buf[BM_SCHED_SBUF] = (char *)(uintptr_t)sbuf;
    e->buf[BM_SCHED_RBUF] = rbuf;
    e->buf[BM_SCHED_TMP] = NULL;
    e->buf[BM_SCHED_PSBUF] = NULL;
    e->buf[BM_SCHED_PRBUF] = NULL;
    e->round = 0;
    e->nreq = 0;
    e->err = MPI_SUCCESS;
    exec_done_set(e, false);
    e->busy = false;
    e->listed = false;
    e->orphan = false;
    e->fn = fn;
    e->what[0] = '\0';
}

/* Scratch and request arrays; false when out of memory. */
static bool exec_alloc(struct bm_mpi_sched_exec *e)
{
    const struct bm_mpi_sched *s = e->s;

    if (s->tmp_bytes && (e->buf[BM_SCHED_TMP] = bm_mpi_scratch_get(s->tmp_bytes)) == NULL)
        return false;
    for (int i = 0; i < 2; i++)
        if (s->pbytes[i] && (e->buf[BM_SCHED_PSBUF + i] = bm_mpi_scratch_get(s->pbytes[i])) == NULL)
            return false;
    if (s->max_comm <= INLINE_REQS) {
        e->reqs = e->inline_reqs;
        e->req_step = e->inline_steps;
        return true;
    }
    e->reqs = malloc((size_t)s->max_comm * sizeof(*e->reqs));
    e->req_step = malloc((size_t)s->max_comm * sizeof(*e->req_step));
    return e->reqs && e->req_step;
}

/* Scratch and packed buffers back to the pool. */
static void exec_scratch_put(struct bm_mpi_sched_exec *e)
{
    bm_mpi_scratch_put(e->buf[BM_SCHED_TMP], e->s->tmp_bytes);
    e->buf[BM_SCHED_TMP] = NULL;
    for (int i = 0; i < 2; i++) {
        bm_mpi_scratch_put(e->buf[BM_SCHED_PSBUF + i], e->s->pbytes[i]);
        e->buf[BM_SCHED_PSBUF + i] = NULL;
    }
}

static void exec_dealloc(struct bm_mpi_sched_exec *e)
{
    exec_scratch_put(e);
    if (e->reqs != e->inline_reqs) {
        free(e->reqs);
        free(e->req_step);
    }
    e->reqs = e->inline_reqs;
    e->req_step = e->inline_steps;
}

/* Leave the requests of the current round to finish on their own. */
static void round_abandon(struct bm_mpi_sched_exec *e)
{
    for (int i = 0; i < e->nreq; i++)
        bm_pml_request_free(e->reqs[i]);
    e->nreq = 0;
}

int bm_mpi_sched_run(struct bm_mpi_sched *s, MPI_Comm comm, const void *sbuf, void *rbuf,
                     MPI_Datatype dt, MPI_Op op, const char *fn)
{
    struct bm_mpi_sched_exec e;

    exec_bind(&e, s, comm, sbuf, rbuf, dt, op, fn);
    e.tag = (uint32_t)s->kind << BM_SCHED_SUBTAG_BITS;
    if (!exec_alloc(&e)) {
        exec_dealloc(&e);
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "cannot allocate %zu bytes of scratch",
                            s->tmp_bytes);
    }
    bm_mpi_coll_count_alg(s->kind, s->alg);
    for (; e.round < s->nrounds; e.round++) {
        if (round_start(&e) != MPI_SUCCESS) {
            round_abandon(&e);
            break;
        }
        for (int i = 0; i < e.nreq; i++) {
            struct bm_pml_status status;
            bm_pml_request_wait(e.reqs[i], &status);
            bm_pml_request_free(e.reqs[i]);
            req_check(&e, e.req_step[i], &status);
        }
        e.nreq = 0;
        if (e.err)
            break;
    }
    exec_dealloc(&e);
    if (e.err)
        return bm_mpi_error(comm, e.err, fn, "%s", e.what);
    return MPI_SUCCESS;
}

/* ---- background runs ------------------------------------------------------- */

static struct bm_mpi_sched_exec *active_head;
static int sched_hook(void *arg);

static void exec_unlist(struct bm_mpi_sched_exec *e)
{
    if (!e->listed)
        return;
    if (e->prev)
        e->prev->next = e->next;
    else
        active_head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    e->listed = false;
    if (active_head == NULL)
        bm_pml_progress_unregister(sched_hook, NULL);
}

static void exec_destroy(struct bm_mpi_sched_exec *e)
{
    exec_dealloc(e);
    bm_mpi_sched_release(e->s);
    free(e);
}

/* A background run is over: off the list, scratch back, and the
 * communicator's reference dropped (which may destroy a communicator the
 * program freed meanwhile). */
static void exec_finished(struct bm_mpi_sched_exec *e)
{
    MPI_Comm comm = e->comm;

    exec_unlist(e);
    exec_scratch_put(e);
    e->comm = MPI_COMM_NULL;
    bm_mpi_comm_release(comm);
}

/* Advance as far as possible without blocking; returns the number of rounds
 * finished (events for the progress engine). */
static int exec_advance(struct bm_mpi_sched_exec *e)
{
    int events = 0;

    if (e->done || e->busy)
        return 0;
    e->busy = true;
    for (;;) {
        for (int i = 0; i < e->nreq; i++)
            if (!bm_pml_request_done(e->reqs[i]))
                goto out;
        for (int i = 0; i < e->nreq; i++) {
            struct bm_pml_status status;
            bm_pml_request_test(e->reqs[i], &status);
            bm_pml_request_free(e->reqs[i]);
            req_check(e, e->req_step[i], &status);
        }
        e->nreq = 0;
        if (e->err || ++e->round >= e->s->nrounds) {
            exec_done_set(e, true);
            events++;
            break;
        }
        events++;
        if (round_start(e) != MPI_SUCCESS) {
            round_abandon(e);
            exec_done_set(e, true);
            break;
        }
    }
out:
    e->busy = false;
    if (e->done) {
        exec_finished(e);
        if (e->orphan)
            exec_destroy(e);
    }
    return events;
}

static int sched_hook(void *arg)
{
    int events = 0;
    struct bm_mpi_sched_exec *e = active_head, *next;

    (void)arg;
    for (; e; e = next) {
        next = e->next; /* e may leave the list (and be freed when orphaned) */
        events += exec_advance(e);
    }
    return events;
}

static int exec_start(struct bm_mpi_sched *s, MPI_Comm comm, const void *sbuf, void *rbuf,
                      MPI_Datatype dt, MPI_Op op, uint32_t tag, const char *fn,
                      struct bm_mpi_sched_exec **e_out)
{
    struct bm_mpi_sched_exec *e = malloc(sizeof(*e));

    if (e == NULL)
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
    exec_bind(e, s, comm, sbuf, rbuf, dt, op, fn);
    e->reqs = e->inline_reqs;
    e->req_step = e->inline_steps;
    if (!exec_alloc(e)) {
        exec_dealloc(e);
        free(e);
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "cannot allocate %zu bytes of scratch",
                            s->tmp_bytes);
    }
    bm_mpi_sched_retain(s);
    if (active_head == NULL && bm_pml_progress_register(sched_hook, NULL) != BM_OK) {
        exec_destroy(e);
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    bm_mpi_comm_retain(comm); /* until the run ends, even if the program frees comm */
    bm_mpi_coll_count_alg(s->kind, s->alg);
    e->tag = tag;
    e->prev = NULL;
    e->next = active_head;
    if (active_head)
        active_head->prev = e;
    active_head = e;
    e->listed = true;
    e->busy = true;
    e->round = 0;
    e->nreq = 0;
    if (s->nrounds == 0) {
        exec_done_set(e, true);
    } else if (bm_pml_progress_handoff()) {
        /* The progress thread starts round 0 (bm_pml_progress_handoff):
         * exec_advance goes from round -1 with no requests to round 0. */
        e->round = -1;
        e->busy = false;
        bm_mpi_coll_count_alg(s->kind, BM_ALG_SCHED_HANDOFF);
        bm_pml_progress_kick();
        *e_out = e;
        return MPI_SUCCESS;
    } else if (round_start(e) != MPI_SUCCESS) {
        round_abandon(e);
        exec_done_set(e, true);
    }
    e->busy = false;
    if (e->done)
        exec_finished(e);
    else
        exec_advance(e);
    *e_out = e;
    return MPI_SUCCESS;
}

/* The list of background runs and each run's state are also the progress
 * hook's: under MPI_THREAD_MULTIPLE the three entry points below hold the
 * PML's progress lock, under which the hook runs. */
int bm_mpi_sched_exec_start(struct bm_mpi_sched *s, MPI_Comm comm, const void *sbuf, void *rbuf,
                            MPI_Datatype dt, MPI_Op op, uint32_t tag, const char *fn,
                            struct bm_mpi_sched_exec **e_out)
{
    bool taken = bm_pml_progress_lock();
    int rc = exec_start(s, comm, sbuf, rbuf, dt, op, tag, fn, e_out);
    bm_pml_progress_unlock(taken);
    return rc;
}

bool bm_mpi_sched_exec_test(struct bm_mpi_sched_exec *e, int *err_out, const char **what_out)
{
    bool taken = bm_pml_progress_lock();
    if (!e->done)
        exec_advance(e);
    bool done = e->done;
    if (done) {
        *err_out = e->err;
        *what_out = e->what;
    }
    bm_pml_progress_unlock(taken);
    return done;
}

bool bm_mpi_sched_exec_done(const struct bm_mpi_sched_exec *e)
{
    return __atomic_load_n(&e->done, __ATOMIC_ACQUIRE);
}

void bm_mpi_sched_exec_free(struct bm_mpi_sched_exec *e)
{
    bool taken = bm_pml_progress_lock();
    if (e->done)
        exec_destroy(e);
    else
        e->orphan = true;
    bm_pml_progress_unlock(taken);
}

uint32_t bm_mpi_sched_tag_nb(MPI_Comm comm)
{
    uint32_t seq = comm->coll_seq++;

    return TAG_NB_BIT | ((seq & TAG_SEQ_MASK) << BM_SCHED_SUBTAG_BITS);
}
