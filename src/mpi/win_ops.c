/* The communication calls of one-sided communication: MPI_Put, MPI_Get,
 * MPI_Accumulate, MPI_Get_accumulate, MPI_Fetch_and_op,
 * MPI_Compare_and_swap and the request-based MPI_Rput, MPI_Rget,
 * MPI_Raccumulate, MPI_Rget_accumulate. Each checks its arguments and the
 * epoch, then takes the target's path (win.h): loads and stores on a
 * shared or own window, the transport's put/get/atomics, or active
 * messages to the target's agent, split into pieces that one message or
 * one transport operation carries (accumulates on element boundaries, so
 * each element stays atomic).
 *
 * Completion. A put or accumulate sent as an active message is copied by
 * the PML: the origin buffer is free at once (local completion); it is
 * done at the target once a later flush, unlock, complete or fence says so.
 * A transport put or get holds the buffer until its callback, which also
 * means the target has it (the transport contract). Gets and fetching
 * accumulates complete when their answer is in. A request-based operation
 * counts its parts in flight and completes at the last (local completion,
 * as the standard defines it for these requests). */
#define BM_LOG_SUBSYS "mpi/osc"
#include "util/log.h"

#include "mpi/mpi_request.h"
#include "mpi/win.h"
#include "pml/pml.h"
#include "util/dtype.h"
#include "util/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum osc_kind { OSC_PUT, OSC_GET, OSC_ACC, OSC_GACC };

/* ---- request-based operations ----------------------------------------------- */

/* The request's state is also written by the agent and the transports'
 * callbacks, inside progress, which another thread may be running: read
 * and release it under the progress lock (free without threads). */
static bool req_progress(MPI_Request r)
{
    struct bm_osc_req *q = r->state;
    bool taken = bm_pml_progress_lock();
    bool done = q->started && q->parts == 0;
    bm_pml_progress_unlock(taken);
    return done;
}

static int req_query(MPI_Request r, MPI_Status *st, char *what, size_t what_len)
{
    struct bm_osc_req *q = r->state;
    st->MPI_SOURCE = MPI_ANY_SOURCE;
    st->MPI_TAG = MPI_ANY_TAG;
    st->bm_count = 0;
    st->bm_cancelled = 0;
    bool taken = bm_pml_progress_lock();
    int status = q->status;
    bm_pml_progress_unlock(taken);
    if (status == BM_OK)
        return MPI_SUCCESS;
    snprintf(what, what_len, "a request-based one-sided operation failed: %s",
             bm_status_str(status));
    return status == BM_ERR_BAD_PARAM ? MPI_ERR_RMA_RANGE : bm_mpi_class_of_status(status);
}

/* The handle goes (the core recycles it): free the state now when the
 * operation is over, else when its last part completes. */
static bool req_release(MPI_Request r, int *err)
{
    struct bm_osc_req *q = r->state;
    *err = MPI_SUCCESS;
    bool taken = bm_pml_progress_lock();
    if (q->parts == 0)
        free(q);
    else
        q->r = MPI_REQUEST_NULL;
    bm_pml_progress_unlock(taken);
    return true;
}

static const struct bm_mpi_request_ops osc_req_ops = {
    .name = "one-sided request",
    .progress = req_progress,
    .query = req_query,
    .release = req_release,
    .cancel = bm_mpi_request_no_cancel,
    .start = bm_mpi_request_no_start,
};

void bm_osc_req_part_done(struct bm_osc_req *req, int status)
{
    if (status != BM_OK && req->status == BM_OK)
        req->status = status;
    if (--req->parts == 0 && req->r == MPI_REQUEST_NULL && req->started)
        free(req);
}

/* ---- transport operations -------------------------------------------------------- */

void bm_osc_rdma_cb(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                    struct bm_btl_reg_handle *local_handle, void *context, void *cbdata, int status)
{
    (void)m;
    (void)ep;
    (void)local_addr;
    (void)local_handle;
    struct bm_osc_target *t = context;
    struct bm_osc_req *req = cbdata;
    MPI_Win win = t->win;
    t->rdma_out--;
    win->rdma_out--;
    if (status < 0 && !win->error) {
        win->error = MPI_ERR_OTHER;
        snprintf(win->error_what, sizeof(win->error_what),
                 "a transport operation (%s) to world rank %d failed: %s", m->name, t->world,
                 bm_status_str(status));
    }
    if (req)
        bm_osc_req_part_done(req, status < 0 ? status : BM_OK);
}

/* Run one transport operation; retry while the transport is out of
 * resources. Returns BM_OK (done or in flight) or the failure. */
typedef int (*rdma_issue_fn)(struct bm_osc_target *t, void *arg, struct bm_osc_req *req);

static int rdma_run(struct bm_osc_target *t, rdma_issue_fn issue, void *arg, struct bm_osc_req *req)
{
    MPI_Win win = t->win;
    for (;;) {
        if (req)
            req->parts++;
        t->rdma_out++;
        win->rdma_out++;
        int rc = bm_osc_fail_inject() ? BM_ERR_LINK_DOWN : issue(t, arg, req);
        if (rc == BM_OK)
            return BM_OK; /* the callback counts down */
        t->rdma_out--;
        win->rdma_out--;
        if (req)
            req->parts--;
        if (rc == BM_BTL_DONE)
            return BM_OK;
        if (rc != BM_ERR_OUT_OF_RESOURCE)
            return rc;
        bm_osc_progress();
    }
}

struct rdma_args {
    void *local;
    uint64_t remote;
    size_t len;
    bool put;
};

/* A put or get on a transport that registers memory: the origin buffer's
 * own registration, released at the callback. */
struct rdma_reg_op {
    struct bm_osc_req *req;
    struct bm_btl_reg_handle *lhandle;
};

static void rdma_reg_cb(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                        struct bm_btl_reg_handle *local_handle, void *context, void *cbdata,
                        int status)
{
    struct rdma_reg_op *r = cbdata;
    bm_btl_deregister_mem(m, r->lhandle);
    bm_osc_rdma_cb(m, ep, local_addr, local_handle, context, r->req, status);
    free(r);
}

static int issue_putget(struct bm_osc_target *t, void *arg, struct bm_osc_req *req)
{
    struct rdma_args *a = arg;
    t->flush_due = true;
    if (!(t->m->caps & BM_BTL_CAP_REG_MEM)) {
        if (a->put)
            return bm_btl_put(t->m, t->ep, a->local, a->remote, NULL, t->rhandle, a->len, 0, 0,
                              bm_osc_rdma_cb, t, req);
        return bm_btl_get(t->m, t->ep, a->local, a->remote, NULL, t->rhandle, a->len, 0, 0,
                          bm_osc_rdma_cb, t, req);
    }
    /* Memory of MPI_Alloc_mem is registered already (src/btl/btl_mem.c). */
    struct bm_btl_reg_handle *mh = bm_btl_base_mem_handle(t->m, a->local, a->len);
    if (mh)
        return a->put ? bm_btl_put(t->m, t->ep, a->local, a->remote, mh, t->rhandle, a->len, 0, 0,
                                   bm_osc_rdma_cb, t, req)
                      : bm_btl_get(t->m, t->ep, a->local, a->remote, mh, t->rhandle, a->len, 0, 0,
                                   bm_osc_rdma_cb, t, req);
    struct rdma_reg_op *r = malloc(sizeof(*r));
    if (!r)
        return BM_ERR_OUT_OF_RESOURCE;
    r->req = req;
    r->lhandle = bm_btl_register_mem(t->m, t->ep, a->local, a->len ? a->len : 1,
                                     a->put ? BM_BTL_REG_F_REMOTE_READ : BM_BTL_REG_F_LOCAL_WRITE);
    if (!r->lhandle) {
        free(r);
        return BM_ERR_NOT_AVAILABLE;
    }
    int rc = a->put ? bm_btl_put(t->m, t->ep, a->local, a->remote, r->lhandle, t->rhandle, a->len,
                                 0, 0, rdma_reg_cb, t, r)
                    : bm_btl_get(t->m, t->ep, a->local, a->remote, r->lhandle, t->rhandle, a->len,
                                 0, 0, rdma_reg_cb, t, r);
    if (rc != BM_OK) {
        bm_btl_deregister_mem(t->m, r->lhandle);
        free(r);
    }
    return rc;
}

struct amo_args {
    struct bm_btl_module *m; /* NULL: the target's amo_m (no registration) */
    struct bm_btl_endpoint *ep;
    const struct bm_btl_reg_handle *rh;
    void *result; /* NULL: no fetch */
    uint64_t remote;
    enum bm_btl_atomic_op op;
    uint64_t operand, compare;
    uint32_t flags;
    bool cswap;
};

/* Transport atomics: the target's amo_m, a module that needs no
 * registration (win.c: target_paths; both handles NULL), or the window's
 * acc_m (win->acc_btl) with the target's registration. */
static int issue_amo(struct bm_osc_target *t, void *arg, struct bm_osc_req *req)
{
    struct amo_args *a = arg;
    struct bm_btl_module *m = a->m ? a->m : t->amo_m;
    struct bm_btl_endpoint *ep = a->m ? a->ep : t->amo_ep;
    t->flush_due = true;
    if (a->cswap)
        return bm_btl_atomic_cswap(m, ep, a->result, a->remote, NULL, a->rh, a->compare, a->operand,
                                   a->flags, 0, bm_osc_rdma_cb, t, req);
    if (!a->result && (m->caps & BM_BTL_CAP_ATOMIC_OPS))
        return bm_btl_atomic_op(m, ep, a->remote, a->rh, a->op, a->operand, a->flags, 0,
                                bm_osc_rdma_cb, t, req);
    return bm_btl_atomic_fop(m, ep, a->result ? a->result : &t->amo_sink, a->remote, NULL, a->rh,
                             a->op, a->operand, a->flags, 0, bm_osc_rdma_cb, t, req);
}

/* Whether accumulate-family operations on elements of basic go to the
 * window's acc_m (win.c: acc_btl_local). */
static bool acc_via_btl(MPI_Win win, MPI_Datatype basic)
{
    return win->acc_btl && basic->kind == BM_MPI_KIND_INT &&
           (basic->size == 8 || basic->size == 4) && (win->acc_btl & (unsigned)basic->size);
}

/* One element of an accumulate-family operation through acc_m: the
 * operation itself where the transport has it, else (MPI_PROD, the logical
 * ops, unsigned min/max) a compare-and-swap loop: read the element, compute
 * the new value here, swap it in if the element still holds what was read.
 * r (may be NULL) gets the previous value. */
static int acc_btl_elem(struct bm_osc_target *t, MPI_Op op, MPI_Datatype basic, const char *o,
                        char *r, uint64_t remote, struct bm_osc_req *req)
{
    MPI_Win win = t->win;
    size_t w = (size_t)basic->size;
    enum bm_btl_atomic_op bop;
    uint32_t flags;
    bool fetch_only;
    struct amo_args a = {.m = win->acc_m, .ep = t->acc_ep, .rh = t->rhandle, .remote = remote};
    if (bm_osc_acc_btl_op(op, basic, win->acc_m, &bop, &flags, &fetch_only)) {
        a.result = r;
        a.op = bop;
        a.flags = flags;
        if (!fetch_only)
            memcpy(&a.operand, o, w);
        return rdma_run(t, issue_amo, &a, req);
    }
    if (!bm_osc_acc_btl_op(MPI_NO_OP, basic, win->acc_m, &bop, &flags, &fetch_only))
        return BM_ERR_NOT_SUPPORTED; /* acc_btl_local checked the sizes */
    uint64_t old = 0, seen = 0, next;
    a.result = &old;
    a.op = bop;
    a.flags = flags;
    int rc = rdma_run(t, issue_amo, &a, NULL);
    for (;;) {
        if (rc != BM_OK)
            return rc;
        bm_osc_wait_rdma(win, (int)(t - win->t));
        next = old;
        bm_osc_acc_apply(op, basic, o, &next, NULL, 1, NULL);
        a.result = &seen;
        a.operand = next;
        a.compare = old;
        a.cswap = true;
        rc = rdma_run(t, issue_amo, &a, NULL);
        if (rc != BM_OK)
            return rc;
        bm_osc_wait_rdma(win, (int)(t - win->t));
        if (memcmp(&seen, &old, w) == 0)
            break;
        old = seen;
    }
    if (r)
        memcpy(r, &old, w);
    return BM_OK;
}

/* Non-fetching elements back to back at the target through acc_m's
 * atomic_op_n: as many per transport atomic as it takes (ofi: 8 int64 or
 * 16 int32), each element still atomic by itself, so that a large
 * MPI_Accumulate under the window's rule costs n / 8 (16) atomics instead
 * of n. *done: how many of the n elements went (none when the transport
 * or the operation has no such path: the caller goes on one by one). */
struct amo_n_args {
    enum bm_btl_atomic_op op;
    uint32_t flags;
    const char *operands;
    size_t n;
    uint64_t remote;
};

static int issue_amo_n(struct bm_osc_target *t, void *arg, struct bm_osc_req *req)
{
    struct amo_n_args *a = arg;
    t->flush_due = true;
    return bm_btl_atomic_op_n(t->win->acc_m, t->acc_ep, a->remote, t->rhandle, a->op, a->operands,
                              a->n, a->flags, 0, bm_osc_rdma_cb, t, req);
}

static int acc_btl_n(struct bm_osc_target *t, MPI_Op op, MPI_Datatype basic, const char *o,
                     uint64_t remote, size_t n, struct bm_osc_req *req, size_t *done)
{
    struct bm_btl_module *m = t->win->acc_m;
    size_t w = (size_t)basic->size;
    enum bm_btl_atomic_op bop;
    uint32_t flags;
    bool fetch_only;
    *done = 0;
    if (n < 2 || !m->ops->atomic_op_n || m->atomic_op_n_bytes < 2 * w ||
        !bm_osc_acc_btl_op(op, basic, m, &bop, &flags, &fetch_only) || fetch_only)
        return BM_OK;
    size_t per = m->atomic_op_n_bytes / w;
    while (n - *done >= 2) {
        size_t k = n - *done < per ? n - *done : per;
        struct amo_n_args a = {bop, flags, o + *done * w, k, remote + *done * w};
        int rc = rdma_run(t, issue_amo_n, &a, req);
        if (rc != BM_OK)
            return rc;
        *done += k;
    }
    return BM_OK;
}

/* Contiguous put or get of len bytes through the transport, in pieces of
 * at most its limit. */
static int btl_putget(struct bm_osc_target *t, bool put, char *local, uint64_t remote, size_t len,
                      struct bm_osc_req *req)
{
    size_t limit = put ? t->m->put_limit : t->m->get_limit;
    if (limit == 0)
        limit = len;
    for (size_t off = 0; off < len || off == 0; off += limit) {
        struct rdma_args a = {local + off, remote + off, len - off < limit ? len - off : limit,
                              put};
        int rc = rdma_run(t, issue_putget, &a, req);
        if (rc != BM_OK)
            return rc;
        if (len == 0)
            break;
    }
    return BM_OK;
}

/* Results of a fetching accumulate that go through a temporary buffer:
 * converted into the result buffer once the last answer is in. */
struct bm_osc_fetch {
    int refs;
    char *lay; /* n elements of basic, back to back */
    void *result;
    int rcount;
    MPI_Datatype rtype, basic;
    size_t n;
};

/* ---- active messages -------------------------------------------------------------- */

/* Mark a put or accumulate message for the fence count and the next flush. */
static void am_count(MPI_Win win, struct bm_osc_target *t, struct bm_osc_hdr *h)
{
    if (win->access == BM_OSC_ACCESS_FENCE) {
        h->flags |= BM_OSC_F_COUNTED;
        t->am_counted++;
    }
    t->am_unsynced++;
}

/* Send a put or accumulate of len data bytes for target offset addr as
 * messages of at most the path's size, cut at multiples of elem. stride
 * (accumulates): the elements' distance at the target, when not elem. */
static void am_put_acc(MPI_Win win, int target, uint8_t type, uint8_t op, uint8_t dtype,
                       const char *data, uint64_t addr, size_t len, size_t elem, ptrdiff_t stride)
{
    struct bm_osc_target *t = &win->t[target];
    size_t max = bm_osc_am_max_data(win, target) / elem * elem;
    size_t off = 0;
    do {
        size_t n = len - off < max ? len - off : max;
        struct bm_osc_hdr h = {.type = type, .op = op, .dtype = dtype, .len = n};
        h.addr = addr + (uint64_t)((ptrdiff_t)(off / elem) * stride);
        if (stride != (ptrdiff_t)elem) {
            h.flags |= BM_OSC_F_STRIDED;
            h.reserved = (uint32_t)(int32_t)stride;
        }
        am_count(win, t, &h);
        bm_osc_am_send(win, target, &h, data ? data + off : NULL, data ? n : 0, NULL, 0);
        off += n;
    } while (off < len);
}

/* Send a get (or fetching accumulate) whose answers fill result; their
 * records belong to req and fetch (either may be NULL). */
static int am_fetch(MPI_Win win, int target, uint8_t type, uint8_t op, uint8_t dtype,
                    const char *data, char *result, uint64_t addr, size_t len, size_t elem,
                    ptrdiff_t stride, struct bm_osc_req *req, struct bm_osc_fetch *fetch)
{
    /* a get asks once (the answers are cut by the target); a fetching
     * accumulate carries data, so it is cut here, one record per piece */
    size_t max =
        type == BM_OSC_GET ? (len ? len : 1) : bm_osc_am_max_data(win, target) / elem * elem;
    size_t off = 0;
    do {
        size_t n = len - off < max ? len - off : max;
        struct bm_osc_op *o = bm_osc_op_new(win, target, result + off, n);
        if (!o)
            return BM_ERR_NO_MEMORY;
        if (req) {
            o->req = req;
            req->parts++;
        }
        if (fetch) {
            o->fetch = fetch;
            fetch->refs++;
        }
        struct bm_osc_hdr h = {.type = type, .op = op, .dtype = dtype, .opid = o->id, .len = n};
        h.addr = addr + (uint64_t)((ptrdiff_t)(off / elem) * stride);
        if (stride != (ptrdiff_t)elem) {
            h.flags |= BM_OSC_F_STRIDED;
            h.reserved = (uint32_t)(int32_t)stride;
        }
        bool with_data = data && op != BM_MPI_OP_ID_no_op;
        bm_osc_am_send(win, target, &h, with_data ? data + off : NULL, with_data ? n : 0, NULL, 0);
        off += n;
    } while (off < len);
    return BM_OK;
}

/* ---- checks ------------------------------------------------------------------------ */

static int check_type(MPI_Win win, MPI_Datatype dt, int count, const char *what, const char *fn)
{
    if (dt == MPI_DATATYPE_NULL || dt->magic != BM_MPI_MAGIC_DATATYPE)
        return bm_osc_win_error(win, MPI_ERR_TYPE, fn, "invalid %s datatype", what);
    if (!dt->committed)
        return bm_osc_win_error(win, MPI_ERR_TYPE, fn, "the %s datatype %s is not committed", what,
                                dt->name);
    if (count < 0)
        return bm_osc_win_error(win, MPI_ERR_COUNT, fn, "negative %s count %d", what, count);
    return MPI_SUCCESS;
}

static int check_acc_op(MPI_Win win, MPI_Op op, MPI_Datatype dt, const char *fn)
{
    if (op == MPI_OP_NULL || op->magic != BM_MPI_MAGIC_OP)
        return bm_osc_win_error(win, MPI_ERR_OP, fn, "invalid operation");
    if (!op->predefined)
        return bm_osc_win_error(win, MPI_ERR_OP, fn,
                                "one-sided accumulates take predefined operations only (MPI-3.1 "
                                "11.3.4), not %s",
                                op->name);
    if (!dt->basic)
        return bm_osc_win_error(win, MPI_ERR_TYPE, fn,
                                "the datatype %s mixes several predefined types; accumulates "
                                "need one (MPI-3.1 11.3.4)",
                                dt->name);
    if (!bm_mpi_op_supports(op, dt))
        return bm_osc_win_error(win, MPI_ERR_OP, fn, "%s is not defined for datatype %s", op->name,
                                dt->name);
    return MPI_SUCCESS;
}

/* Where target memory at offset off (len bytes) is in this process, for a
 * SHM target; NULL when outside (dynamic windows: not attached). */
static char *shm_ptr(MPI_Win win, struct bm_osc_target *t, uint64_t off, size_t len)
{
    if (t->shm)
        return t->shm + off;
    /* this process's dynamic window: the displacement is the address */
    return bm_osc_region_ok(win, off, len) || len == 0 ? (char *)(uintptr_t)off : NULL;
}

static _Atomic uint32_t *stripes_for(MPI_Win win, int target)
{
    /* atomic per element only where other processes apply too */
    return win->has_seg && win->t[target].shm && target >= 0 ? win->stripes : NULL;
}

/* ---- the common path ----------------------------------------------------------------- */

struct osc_args {
    enum osc_kind kind;
    const void *origin;
    int ocount;
    MPI_Datatype otype;
    void *result;
    int rcount;
    MPI_Datatype rtype;
    int target;
    MPI_Aint disp;
    int tcount;
    MPI_Datatype ttype;
    MPI_Op op;
};

static int osc_fail(MPI_Win win, int rc, const char *fn, int target)
{
    return bm_osc_win_error(win, rc == BM_ERR_BAD_PARAM ? MPI_ERR_RMA_RANGE : MPI_ERR_OTHER, fn,
                            "the transport refused the operation to rank %d: %s", target,
                            bm_status_str(rc));
}

/* A put or get between mapped memories: large ones with streaming stores
 * (win->stream_min), which skip the read of every destination line that a
 * cached store makes first, as the PML copies out large messages. */
static inline void shm_copy(MPI_Win win, void *dst, const void *src, size_t len)
{
    if (len >= win->stream_min)
        bm_util_copy_stream(dst, src, len);
    else
        memcpy(dst, src, len);
}

/* One operation in flight in this call: the window, target, kind and where
 * its data is. */
struct osc_xfer {
    MPI_Win win;
    int target;
    struct bm_osc_target *t;
    const struct osc_args *a;
    struct bm_osc_req *req;
    uint64_t off; /* target byte offset of the target buffer (dynamic: its address) */
    int status;   /* first failure (bm_status_t) */
    bool range;   /* an address outside the window (or not attached) */
};

/* Move len bytes between origin memory at optr and target offset toff. */
static void segment(struct osc_xfer *x, char *optr, uint64_t toff, size_t len)
{
    bool put = x->a->kind == OSC_PUT;
    if (x->status != BM_OK || len == 0)
        return;
    switch (x->t->path) {
    case BM_OSC_PATH_SHM: {
        char *p = shm_ptr(x->win, x->t, toff, len);
        if (!p) {
            x->status = BM_ERR_BAD_PARAM;
            x->range = true;
        } else if (put) {
            shm_copy(x->win, p, optr, len);
        } else {
            shm_copy(x->win, optr, p, len);
        }
        break;
    }
    case BM_OSC_PATH_BTL:
        x->status = btl_putget(x->t, put, optr, x->t->base + toff, len, x->req);
        break;
    default:
        if (len >= x->win->rndv_limit)
            x->status = put ? bm_osc_am_put_rndv(x->win, x->target, optr, toff, len, x->req)
                            : bm_osc_am_get_rndv(x->win, x->target, optr, toff, len, x->req);
        else if (put)
            am_put_acc(x->win, x->target, BM_OSC_PUT, 0, 0, optr, toff, len, 1, 1);
        else
            x->status = am_fetch(x->win, x->target, BM_OSC_GET, 0, 0, NULL, optr, toff, len, 1, 1,
                                 x->req, NULL);
        break;
    }
}

/* Put or get: pair the pieces of the target's layout with the origin's, in
 * the order of the packed stream. Contiguous on both sides: one segment. */
static void move(struct osc_xfer *x, size_t bytes)
{
    const struct osc_args *a = x->a;
    char *obuf = (char *)(uintptr_t)(a->kind == OSC_PUT ? a->origin : a->result);
    const struct bm_util_dtype *od = a->otype->dt, *td = a->ttype->dt;
    bool orun = bm_util_dtype_contig(od, (size_t)a->ocount);
    if (orun && bm_util_dtype_contig(td, (size_t)a->tcount)) {
        segment(x, obuf + od->pdisp, x->off + (uint64_t)td->pdisp, bytes);
        return;
    }
    struct bm_util_dtype_piece tp[32], op[32];
    size_t pos = 0;
    while (pos < bytes && x->status == BM_OK) {
        size_t done;
        size_t nt =
            bm_util_dtype_pieces(td, NULL, (size_t)a->tcount, pos, bytes - pos, tp, 32, &done);
        for (size_t i = 0; i < nt; i++) {
            uint64_t toff = x->off + (uint64_t)(intptr_t)tp[i].addr;
            if (orun) {
                segment(x, obuf + od->pdisp + pos, toff, tp[i].len);
                pos += tp[i].len;
                continue;
            }
            /* the origin's pieces covering this target piece */
            size_t got = 0;
            while (got < tp[i].len) {
                size_t d;
                size_t no = bm_util_dtype_pieces(od, obuf, (size_t)a->ocount, pos + got,
                                                 tp[i].len - got, op, 32, &d);
                for (size_t k = 0; k < no; k++) {
                    segment(x, op[k].addr, toff, op[k].len);
                    toff += op[k].len;
                }
                got += d;
            }
            pos += tp[i].len;
        }
        if (nt == 0)
            break;
    }
}

/* Is (count, dt) laid out as count consecutive elements of basic (each
 * basic->extent bytes) from buf + the type's offset? */
static bool basic_layout(MPI_Datatype dt, size_t count, MPI_Datatype basic)
{
    if (dt == basic)
        return true;
    return bm_util_dtype_contig(dt->dt, count) && basic->size == (size_t)basic->extent;
}

void bm_osc_fetch_release(struct bm_osc_fetch *f)
{
    if (--f->refs > 0)
        return;
    size_t bytes = f->n * f->basic->size;
    if (f->basic->size == (size_t)f->basic->extent) {
        bm_mpi_type_unpack(f->rtype, f->result, (size_t)f->rcount, 0, f->lay, bytes);
    } else {
        char *packed = malloc(bytes ? bytes : 1);
        if (!packed)
            abort();
        bm_mpi_type_pack(f->basic, f->lay, f->n, 0, packed, bytes);
        bm_mpi_type_unpack(f->rtype, f->result, (size_t)f->rcount, 0, packed, bytes);
        free(packed);
    }
    bm_mpi_type_release(f->rtype);
    free(f->lay);
    free(f);
}

/* One run of the target's elements of an accumulate: n elements of basic
 * at target offset toff, stride apart; origin data (olay) and results
 * (rlay) hold them back to back. */
struct acc_walk {
    struct osc_xfer *x;
    MPI_Datatype basic;
    const char *olay;
    char *rlay;
    struct bm_osc_fetch *fetch;
    bool btl; /* every element through the window's acc_m (acc_via_btl) */
    size_t k; /* elements done */
    /* the run being gathered: the walk reports one run per element of the
     * type (MPI_INT x 100000 is 100000 runs of one), so runs that continue
     * each other at one stride are joined before they are carried out */
    int pbasic;
    char *paddr;
    size_t pn;
    ptrdiff_t pstride;
};

static int acc_do(int basic_id, char *addr, size_t n, ptrdiff_t stride, void *arg)
{
    struct acc_walk *w = arg;
    struct osc_xfer *x = w->x;
    const struct osc_args *a = x->a;
    MPI_Datatype basic = w->basic;
    size_t ext = (size_t)basic->extent;
    const char *o = w->olay ? w->olay + w->k * ext : NULL;
    char *r = w->rlay ? w->rlay + w->k * ext : NULL;
    uint64_t toff = x->off + (uint64_t)(intptr_t)addr;
    w->k += n;
    if (basic_id != (int)basic->id) {
        x->status = BM_ERR_BAD_PARAM;
        return 1;
    }
    if (w->btl) {
        size_t i = 0;
        if (!r && stride == (ptrdiff_t)ext) {
            int rc = acc_btl_n(x->t, a->op, basic, o, x->t->base + toff, n, x->req, &i);
            if (rc != BM_OK) {
                x->status = rc;
                return 1;
            }
        }
        for (; i < n; i++) {
            int rc =
                acc_btl_elem(x->t, a->op, basic, o ? o + i * ext : NULL, r ? r + i * ext : NULL,
                             x->t->base + toff + (uint64_t)((ptrdiff_t)i * stride), x->req);
            if (rc != BM_OK) {
                x->status = rc;
                return 1;
            }
        }
        return 0;
    }
    if (x->t->path == BM_OSC_PATH_SHM) {
        _Atomic uint32_t *stripes = stripes_for(x->win, x->target);
        for (size_t i = 0; i < n; i += stride == (ptrdiff_t)ext ? n : 1) {
            size_t m = stride == (ptrdiff_t)ext ? n : 1;
            char *p = shm_ptr(x->win, x->t, toff + (uint64_t)((ptrdiff_t)i * stride), m * ext);
            if (!p) {
                x->status = BM_ERR_BAD_PARAM;
                x->range = true;
                return 1;
            }
            bm_osc_acc_apply(a->op, basic, o ? o + i * ext : NULL, p, r ? r + i * ext : NULL, m,
                             stripes);
        }
        return 0;
    }
    /* the agent: strides that do not fit the message go one element each */
    bool fits = stride == (ptrdiff_t)(int32_t)stride;
    for (size_t i = 0; i < n; i += fits ? n : 1) {
        size_t m = fits ? n : 1;
        uint64_t at = toff + (uint64_t)((ptrdiff_t)i * stride);
        if (a->kind == OSC_ACC)
            am_put_acc(x->win, x->target, BM_OSC_ACC, (uint8_t)a->op->id, (uint8_t)basic->id,
                       o + i * ext, at, m * ext, ext, fits ? stride : (ptrdiff_t)ext);
        else if (am_fetch(x->win, x->target, BM_OSC_GACC, (uint8_t)a->op->id, (uint8_t)basic->id,
                          o ? o + i * ext : NULL, r + i * ext, at, m * ext, ext,
                          fits ? stride : (ptrdiff_t)ext, x->req, w->fetch) != BM_OK) {
            x->status = BM_ERR_NO_MEMORY;
            return 1;
        }
    }
    return 0;
}

/* The walk's callback: join runs that continue the pending one. */
static int acc_run(int basic_id, char *addr, size_t n, ptrdiff_t stride, void *arg)
{
    struct acc_walk *w = arg;
    if (w->pn > 0 && basic_id == w->pbasic) {
        ptrdiff_t step = w->pn == 1 ? addr - w->paddr : w->pstride;
        if (addr == w->paddr + (ptrdiff_t)w->pn * step && (n == 1 || stride == step)) {
            w->pstride = step;
            w->pn += n;
            return 0;
        }
    }
    int rc = w->pn > 0 ? acc_do(w->pbasic, w->paddr, w->pn, w->pstride, w) : 0;
    w->pbasic = basic_id;
    w->paddr = addr;
    w->pn = n;
    w->pstride = stride;
    return rc;
}

/* An accumulate or get_accumulate: the origin's data and the results as
 * elements of the basic type back to back (temporary buffers when the
 * types lay them out otherwise), applied run by run of the target's
 * layout. One element on a transport with atomics goes to them. */
static int accumulate(struct osc_xfer *x, size_t bytes, const char *fn)
{
    const struct osc_args *a = x->a;
    MPI_Datatype basic = a->ttype->basic;
    size_t ext = (size_t)basic->extent, n = bytes / basic->size;
    bool no_origin = a->op == MPI_NO_OP;
    char *otmp = NULL, *rtmp = NULL;
    const char *olay = NULL;
    char *rlay = NULL;
    struct bm_osc_target *t = x->t;
    int rc;
    if (!no_origin) {
        if (basic_layout(a->otype, (size_t)a->ocount, basic)) {
            olay = (const char *)a->origin + a->otype->dt->pdisp;
        } else {
            if (!(otmp = malloc(n * ext)))
                return bm_osc_win_error(x->win, MPI_ERR_NO_MEM, fn, "out of memory");
            if (basic->size == ext) {
                bm_mpi_type_pack(a->otype, a->origin, (size_t)a->ocount, 0, otmp, bytes);
            } else {
                char *packed = malloc(bytes);
                if (!packed) {
                    free(otmp);
                    return bm_osc_win_error(x->win, MPI_ERR_NO_MEM, fn, "out of memory");
                }
                bm_mpi_type_pack(a->otype, a->origin, (size_t)a->ocount, 0, packed, bytes);
                bm_mpi_type_unpack(basic, otmp, n, 0, packed, bytes);
                free(packed);
            }
            olay = otmp;
        }
    }
    bool rdirect = a->kind != OSC_GACC || basic_layout(a->rtype, (size_t)a->rcount, basic);
    if (a->kind == OSC_GACC)
        rlay = rdirect ? (char *)a->result + a->rtype->dt->pdisp : (rtmp = malloc(n * ext));
    if (a->kind == OSC_GACC && !rlay) {
        free(otmp);
        return bm_osc_win_error(x->win, MPI_ERR_NO_MEM, fn, "out of memory");
    }

    /* the window's rule for this type: every element through acc_m */
    bool btl = acc_via_btl(x->win, basic);
    if (btl && x->win->acc_ordered && t->acc_channel == 1 && t->am_unsynced > 0 &&
        (rc = bm_osc_complete(x->win, x->target, false))) {
        free(otmp);
        free(rtmp);
        return bm_osc_win_error(x->win, rc, fn, "an earlier operation to rank %d failed",
                                x->target);
    }
    if (btl) {
        t->acc_channel = 2;
        /* the transport may reorder atomics: accumulate_ordering (the
         * default: rar, raw, war, waw) keeps this process's earlier ones
         * first (the elements of one call are distinct locations) */
        if (x->win->acc_ordered && t->rdma_out > 0)
            bm_osc_wait_rdma(x->win, x->target);
    }
    /* one element on the transport's atomics */
    enum bm_btl_atomic_op bop;
    uint32_t bflags;
    bool fetch_only;
    if (!btl && n == 1 && rdirect && t->path != BM_OSC_PATH_SHM && t->amo_m &&
        x->win->flavor != MPI_WIN_FLAVOR_DYNAMIC &&
        bm_osc_acc_btl_op(a->op, basic, t->amo_m, &bop, &bflags, &fetch_only)) {
        if (x->win->acc_ordered && t->acc_channel == 1 && t->am_unsynced > 0 &&
            (rc = bm_osc_complete(x->win, x->target, false))) {
            free(otmp);
            return bm_osc_win_error(x->win, rc, fn, "an earlier operation to rank %d failed",
                                    x->target);
        }
        t->acc_channel = 2;
        struct amo_args m = {.result = a->kind == OSC_GACC ? rlay : NULL,
                             .remote = t->base + x->off + (uint64_t)a->ttype->dt->pdisp,
                             .op = bop,
                             .flags = bflags};
        if (!fetch_only)
            memcpy(&m.operand, olay, ext);
        free(otmp);
        rc = rdma_run(t, issue_amo, &m, x->req);
        return rc == BM_OK ? MPI_SUCCESS : osc_fail(x->win, rc, fn, x->target);
    }
    if (!btl && t->path != BM_OSC_PATH_SHM) {
        if (x->win->acc_ordered && t->acc_channel == 2 && t->rdma_out > 0)
            bm_osc_wait_rdma(x->win, x->target);
        t->acc_channel = 1;
    }
    struct bm_osc_fetch *fetch = NULL;
    if (rtmp) {
        if (!(fetch = calloc(1, sizeof(*fetch)))) {
            free(otmp);
            free(rtmp);
            return bm_osc_win_error(x->win, MPI_ERR_NO_MEM, fn, "out of memory");
        }
        /* one reference for this call until every piece was sent */
        *fetch = (struct bm_osc_fetch){.refs = 1,
                                       .lay = rtmp,
                                       .result = a->result,
                                       .rcount = a->rcount,
                                       .rtype = a->rtype,
                                       .basic = basic,
                                       .n = n};
        bm_mpi_type_retain(a->rtype);
    }
    struct acc_walk w = {
        .x = x, .basic = basic, .olay = olay, .rlay = rlay, .fetch = fetch, .btl = btl};
    if (basic_layout(a->ttype, (size_t)a->tcount, basic))
        acc_do(basic->id, (char *)(intptr_t)a->ttype->dt->pdisp, n, (ptrdiff_t)ext, &w);
    else if (bm_util_dtype_walk(a->ttype->dt, NULL, (size_t)a->tcount, acc_run, &w) == 0 &&
             w.pn > 0)
        acc_do(w.pbasic, w.paddr, w.pn, w.pstride, &w);
    free(otmp);
    if (fetch && btl)
        bm_osc_wait_rdma(x->win, x->target); /* the results, before they are unpacked */
    if (fetch)
        bm_osc_fetch_release(fetch);
    return MPI_SUCCESS;
}

static int osc_rma(MPI_Win win, const struct osc_args *a, struct bm_osc_req *req, const char *fn)
{
    int rc;
    bool acc = a->kind == OSC_ACC || a->kind == OSC_GACC;
    bool fetch = a->kind == OSC_GET || a->kind == OSC_GACC;
    if (a->target == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if (a->target < 0 || a->target >= win->nranks)
        return bm_osc_win_error(win, MPI_ERR_RANK, fn,
                                "invalid target rank %d (the window has "
                                "%d ranks)",
                                a->target, win->nranks);
    bool no_origin = a->kind == OSC_GACC && a->op == MPI_NO_OP;
    if ((!no_origin && (rc = check_type(win, a->otype, a->ocount, "origin", fn))) ||
        (rc = check_type(win, a->ttype, a->tcount, "target", fn)) ||
        (a->kind == OSC_GACC && (rc = check_type(win, a->rtype, a->rcount, "result", fn))))
        return rc;
    /* the type signatures must match: the same number of data bytes */
    size_t tbytes = (size_t)a->tcount * a->ttype->size;
    size_t obytes = no_origin ? tbytes : (size_t)a->ocount * a->otype->size;
    if (obytes != tbytes)
        return bm_osc_win_error(win, MPI_ERR_TYPE, fn,
                                "the origin holds %zu bytes of data but the target %zu (%d x %s "
                                "vs %d x %s): the type signatures must match",
                                obytes, tbytes, a->ocount, a->otype->name, a->tcount,
                                a->ttype->name);
    if (a->kind == OSC_GACC && (size_t)a->rcount * a->rtype->size != tbytes)
        return bm_osc_win_error(win, MPI_ERR_TYPE, fn,
                                "the result buffer holds %zu bytes of data but the target %zu",
                                (size_t)a->rcount * a->rtype->size, tbytes);
    /* An empty transfer moves nothing: the types of its sides need not agree
     * on a predefined type (a zero-size type has none; MPICH's rma/badrma). */
    if (acc && tbytes > 0) {
        if ((rc = check_acc_op(win, a->op, a->ttype, fn)))
            return rc;
        if ((!no_origin && a->otype->basic != a->ttype->basic) ||
            (a->kind == OSC_GACC && a->rtype->basic != a->ttype->basic))
            return bm_osc_win_error(win, MPI_ERR_TYPE, fn,
                                    "origin (%s), result and target (%s) datatypes must be made "
                                    "of the same predefined type",
                                    no_origin ? "none" : a->otype->name, a->ttype->name);
    }
    if ((rc = bm_osc_access_check(win, a->target, fn)))
        return rc;
    if (tbytes == 0)
        return MPI_SUCCESS;
    /* NULL is MPI_BOTTOM: wrong only with a predefined type (a derived one
     * may hold absolute addresses; the rule of bm_mpi_check_buffer, MPICH's,
     * whose rma/put_bottom puts from MPI_BOTTOM). */
    bool bad_origin = !no_origin && a->origin == NULL && a->otype->predefined;
    if (bad_origin || (fetch && a->result == NULL && a->rtype->predefined))
        return bm_osc_win_error(win, MPI_ERR_BUFFER, fn, "NULL %s buffer",
                                bad_origin ? "origin" : "result");

    struct osc_xfer x = {.win = win,
                         .target = a->target,
                         .t = &win->t[a->target],
                         .a = a,
                         .req = req,
                         .status = BM_OK};
    struct bm_osc_target *t = x.t;
    if (win->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        x.off = (uint64_t)a->disp; /* an address from MPI_Get_address at the target */
    } else {
        /* the memory the target's type touches must lie in the window */
        MPI_Aint lo;
        size_t span;
        bm_mpi_type_span(a->ttype, (size_t)a->tcount, &lo, &span);
        int64_t first = (int64_t)a->disp * t->disp_unit + (int64_t)lo;
        if (a->disp < 0 || first < 0 || (uint64_t)first > t->size ||
            span > t->size - (uint64_t)first)
            return bm_osc_win_error(win, MPI_ERR_RMA_RANGE, fn,
                                    "%d x %s at displacement %ld (unit %d) reach outside rank "
                                    "%d's window of %llu bytes",
                                    a->tcount, a->ttype->name, (long)a->disp, t->disp_unit,
                                    a->target, (unsigned long long)t->size);
        x.off = (uint64_t)a->disp * (uint64_t)t->disp_unit;
    }
    if (acc)
        rc = accumulate(&x, tbytes, fn);
    else
        move(&x, tbytes);
    if (rc)
        return rc;
    if (x.status == BM_OK)
        return MPI_SUCCESS;
    if (x.range)
        return bm_osc_win_error(win, MPI_ERR_RMA_RANGE, fn,
                                "the target buffer is not in a region attached to this "
                                "process's dynamic window (displacement 0x%lx)",
                                (unsigned long)a->disp);
    if (x.status == BM_ERR_NO_MEMORY)
        return bm_osc_win_error(win, MPI_ERR_NO_MEM, fn, "out of memory");
    return osc_fail(win, x.status, fn, a->target);
}

/* A request-based operation: run it with a request that completes when
 * its parts did. */
static int osc_rma_req(MPI_Win win, const struct osc_args *a, MPI_Request *request, const char *fn)
{
    int rc;
    if ((rc = bm_osc_check_win(win, fn)))
        return rc;
    if (!request)
        return bm_osc_win_error(win, MPI_ERR_ARG, fn, "NULL request pointer");
    /* MPI_PROC_NULL needs no epoch, as for the other operations (and
     * MPI_Win_lock of MPI_PROC_NULL opens none): MPICH's rma/rmanull */
    if (a->target != MPI_PROC_NULL && win->access != BM_OSC_ACCESS_LOCK &&
        win->access != BM_OSC_ACCESS_LOCK_ALL)
        return bm_osc_win_error(win, MPI_ERR_RMA_SYNC, fn,
                                "request-based operations need a passive-target epoch "
                                "(MPI_Win_lock or MPI_Win_lock_all) (MPI-3.1 11.3.5)");
    struct bm_osc_req *q = calloc(1, sizeof(*q));
    if (!q)
        return bm_osc_win_error(win, MPI_ERR_NO_MEM, fn, "out of memory");
    MPI_Request r = bm_mpi_request_create(&osc_req_ops, win->comm, q, false, true);
    if (!r) {
        free(q);
        return bm_osc_win_error(win, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    q->r = r;
    q->status = BM_OK;
    rc = osc_rma(win, a, q, fn);
    q->started = true;
    if (rc) {
        /* nothing of it may still be in flight when the request goes */
        while (q->parts > 0)
            bm_osc_progress();
        free(q);
        bm_mpi_request_destroy(r);
        *request = MPI_REQUEST_NULL;
        return rc;
    }
    *request = r;
    return MPI_SUCCESS;
}

/* ---- entry points ------------------------------------------------------------------------ */

/* The common case of put and get in one call: a target whose memory is
 * mapped here, one predefined type without padding on both sides, inside
 * the window, in an epoch that covers the target. Everything the general
 * path would check holds, so a copy is all there is to do; anything else
 * (errors included) takes the general path. The arguments come one by one
 * (no struct osc_args to clear: that was a fifth of an 8-byte MPI_Get). */
static inline bool shm_fast(MPI_Win win, bool put, void *obuf, int ocount, MPI_Datatype otype,
                            int target, MPI_Aint disp, int tcount, MPI_Datatype ttype)
{
    if (bm_mpi_state != BM_MPI_STATE_RUNNING || win == MPI_WIN_NULL ||
        win->magic != BM_MPI_MAGIC_WIN || target < 0 || target >= win->nranks)
        return false;
    struct bm_osc_target *t = &win->t[target];
    if (t->path != BM_OSC_PATH_SHM || !t->shm || ttype != otype || !ttype || !ttype->predefined ||
        ttype->magic != BM_MPI_MAGIC_DATATYPE || ttype->size != (size_t)ttype->extent ||
        ocount != tcount || tcount <= 0 || !obuf)
        return false;
    if (win->access != BM_OSC_ACCESS_FENCE && t->lock == BM_OSC_LOCK_NONE)
        return false;
    uint64_t off, bytes = (uint64_t)tcount * ttype->size;
    if (!bm_osc_in_window(t, disp, bytes, &off))
        return false;
    if (put)
        shm_copy(win, t->shm + off, obuf, bytes);
    else
        shm_copy(win, obuf, t->shm + off, bytes);
    return true;
}

/* Entry: the plain call (request NULL) or the request-based one. */
static int osc_entry(MPI_Win win, const struct osc_args *a, MPI_Request *request, bool rma_req,
                     const char *fn)
{
    if (rma_req)
        return osc_rma_req(win, a, request, fn);
    int rc = bm_osc_check_win(win, fn);
    return rc ? rc : osc_rma(win, a, NULL, fn);
}

static int put_entry(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                     int target_rank, MPI_Aint target_disp, int target_count,
                     MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request, bool rma_req,
                     const char *fn)
{
    struct osc_args a = {.kind = OSC_PUT,
                         .origin = origin_addr,
                         .ocount = origin_count,
                         .otype = origin_datatype,
                         .target = target_rank,
                         .disp = target_disp,
                         .tcount = target_count,
                         .ttype = target_datatype};
    return osc_entry(win, &a, request, rma_req, fn);
}

/* the origin buffer is where the data goes */
static int get_entry(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                     int target_rank, MPI_Aint target_disp, int target_count,
                     MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request, bool rma_req,
                     const char *fn)
{
    struct osc_args a = {.kind = OSC_GET,
                         .origin = origin_addr,
                         .result = origin_addr,
                         .ocount = origin_count,
                         .otype = origin_datatype,
                         .target = target_rank,
                         .disp = target_disp,
                         .tcount = target_count,
                         .ttype = target_datatype};
    return osc_entry(win, &a, request, rma_req, fn);
}

static int acc_entry(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                     int target_rank, MPI_Aint target_disp, int target_count,
                     MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request,
                     bool rma_req, const char *fn)
{
    struct osc_args a = {.kind = OSC_ACC,
                         .origin = origin_addr,
                         .ocount = origin_count,
                         .otype = origin_datatype,
                         .target = target_rank,
                         .disp = target_disp,
                         .tcount = target_count,
                         .ttype = target_datatype,
                         .op = op};
    return osc_entry(win, &a, request, rma_req, fn);
}

static int gacc_entry(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                      void *result_addr, int result_count, MPI_Datatype result_datatype,
                      int target_rank, MPI_Aint target_disp, int target_count,
                      MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request,
                      bool rma_req, const char *fn)
{
    struct osc_args a = {.kind = OSC_GACC,
                         .origin = origin_addr,
                         .ocount = origin_count,
                         .otype = origin_datatype,
                         .result = result_addr,
                         .rcount = result_count,
                         .rtype = result_datatype,
                         .target = target_rank,
                         .disp = target_disp,
                         .tcount = target_count,
                         .ttype = target_datatype,
                         .op = op};
    return osc_entry(win, &a, request, rma_req, fn);
}

static int put_body(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                    int target_rank, MPI_Aint target_disp, int target_count,
                    MPI_Datatype target_datatype, MPI_Win win)
{
    if (shm_fast(win, true, (void *)(uintptr_t)origin_addr, origin_count, origin_datatype,
                 target_rank, target_disp, target_count, target_datatype))
        return MPI_SUCCESS;
    return put_entry(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                     target_count, target_datatype, win, NULL, false, "MPI_Put");
}

int PMPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
             int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype,
             MPI_Win win)
{
    BM_OSC_LOCKED(put_body(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                           target_count, target_datatype, win));
}
BM_MPI_ALIAS(Put);

static int get_body(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                    int target_rank, MPI_Aint target_disp, int target_count,
                    MPI_Datatype target_datatype, MPI_Win win)
{
    if (shm_fast(win, false, origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                 target_count, target_datatype))
        return MPI_SUCCESS;
    return get_entry(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                     target_count, target_datatype, win, NULL, false, "MPI_Get");
}

int PMPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
             MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win)
{
    BM_OSC_LOCKED(get_body(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                           target_count, target_datatype, win));
}
BM_MPI_ALIAS(Get);

static int accumulate_body(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                           int target_rank, MPI_Aint target_disp, int target_count,
                           MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    return acc_entry(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                     target_count, target_datatype, op, win, NULL, false, "MPI_Accumulate");
}

int PMPI_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                    int target_rank, MPI_Aint target_disp, int target_count,
                    MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    BM_OSC_LOCKED(accumulate_body(origin_addr, origin_count, origin_datatype, target_rank,
                                  target_disp, target_count, target_datatype, op, win));
}
BM_MPI_ALIAS(Accumulate);

static int get_accumulate_body(const void *origin_addr, int origin_count,
                               MPI_Datatype origin_datatype, void *result_addr, int result_count,
                               MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
                               int target_count, MPI_Datatype target_datatype, MPI_Op op,
                               MPI_Win win)
{
    return gacc_entry(origin_addr, origin_count, origin_datatype, result_addr, result_count,
                      result_datatype, target_rank, target_disp, target_count, target_datatype, op,
                      win, NULL, false, "MPI_Get_accumulate");
}

int PMPI_Get_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                        void *result_addr, int result_count, MPI_Datatype result_datatype,
                        int target_rank, MPI_Aint target_disp, int target_count,
                        MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    BM_OSC_LOCKED(get_accumulate_body(origin_addr, origin_count, origin_datatype, result_addr,
                                      result_count, result_datatype, target_rank, target_disp,
                                      target_count, target_datatype, op, win));
}
BM_MPI_ALIAS(Get_accumulate);

/* MPI_Fetch_and_op on a target whose memory is mapped here, with a
 * predefined type and op that go together, inside the window, in an epoch
 * that covers the target: one atomic operation (as compare-and-swap is);
 * anything else (errors included) takes the general path. */
static bool fop_shm_fast(const void *origin_addr, void *result_addr, MPI_Datatype dt,
                         int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win)
{
    if (bm_mpi_state != BM_MPI_STATE_RUNNING || win == MPI_WIN_NULL ||
        win->magic != BM_MPI_MAGIC_WIN || target_rank < 0 || target_rank >= win->nranks ||
        !result_addr)
        return false;
    struct bm_osc_target *t = &win->t[target_rank];
    if (t->path != BM_OSC_PATH_SHM || !t->shm || !dt || dt->magic != BM_MPI_MAGIC_DATATYPE ||
        !dt->predefined || dt->basic != dt || !op || op->magic != BM_MPI_MAGIC_OP ||
        !op->predefined || (!origin_addr && op != MPI_NO_OP) || !bm_mpi_op_supports(op, dt) ||
        acc_via_btl(win, dt))
        return false;
    if (win->access != BM_OSC_ACCESS_FENCE && t->lock == BM_OSC_LOCK_NONE)
        return false;
    uint64_t off;
    if (!bm_osc_in_window(t, target_disp, (uint64_t)dt->extent, &off))
        return false;
    bm_osc_acc_apply(op, dt, origin_addr, t->shm + off, result_addr, 1,
                     stripes_for(win, target_rank));
    return true;
}

static int fetch_and_op_body(const void *origin_addr, void *result_addr, MPI_Datatype datatype,
                             int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win)
{
    static const char fn[] = "MPI_Fetch_and_op";
    int rc;
    if (fop_shm_fast(origin_addr, result_addr, datatype, target_rank, target_disp, op, win))
        return MPI_SUCCESS;
    if ((rc = bm_osc_check_win(win, fn)))
        return rc;
    if (datatype != MPI_DATATYPE_NULL && datatype->magic == BM_MPI_MAGIC_DATATYPE &&
        !datatype->predefined)
        return bm_osc_win_error(win, MPI_ERR_TYPE, fn,
                                "MPI_Fetch_and_op takes a predefined datatype, not %s",
                                datatype->name);
    struct osc_args a = {.kind = OSC_GACC,
                         .origin = origin_addr,
                         .ocount = 1,
                         .otype = datatype,
                         .result = result_addr,
                         .rcount = 1,
                         .rtype = datatype,
                         .target = target_rank,
                         .disp = target_disp,
                         .tcount = 1,
                         .ttype = datatype,
                         .op = op};
    return osc_rma(win, &a, NULL, fn);
}

int PMPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype,
                      int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win)
{
    BM_OSC_LOCKED(
        fetch_and_op_body(origin_addr, result_addr, datatype, target_rank, target_disp, op, win));
}
BM_MPI_ALIAS(Fetch_and_op);

static int compare_and_swap_body(const void *origin_addr, const void *compare_addr,
                                 void *result_addr, MPI_Datatype datatype, int target_rank,
                                 MPI_Aint target_disp, MPI_Win win)
{
    static const char fn[] = "MPI_Compare_and_swap";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)) || (rc = check_type(win, datatype, 1, "", fn)))
        return rc;
    /* The standard lists C and Fortran integer, logical and byte types;
     * Open MPI and MPICH also take MPI_CHAR (osu_cas_latency's default), so
     * do we: the swap compares bytes, whatever the type. */
    if (!datatype->predefined ||
        (datatype->kind != BM_MPI_KIND_INT && datatype->kind != BM_MPI_KIND_BYTE &&
         datatype->kind != BM_MPI_KIND_BOOL && datatype->kind != BM_MPI_KIND_LOGICAL &&
         datatype->kind != BM_MPI_KIND_CHAR))
        return bm_osc_win_error(win, MPI_ERR_TYPE, fn,
                                "MPI_Compare_and_swap takes an integer, logical, byte or char "
                                "type, not %s",
                                datatype->name);
    if (target_rank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if (target_rank < 0 || target_rank >= win->nranks)
        return bm_osc_win_error(win, MPI_ERR_RANK, fn, "invalid target rank %d", target_rank);
    if (!origin_addr || !compare_addr || !result_addr)
        return bm_osc_win_error(win, MPI_ERR_BUFFER, fn, "NULL buffer");
    if ((rc = bm_osc_access_check(win, target_rank, fn)))
        return rc;
    struct bm_osc_target *t = &win->t[target_rank];
    size_t w = (size_t)datatype->extent;
    uint64_t off;
    if (win->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        off = (uint64_t)target_disp;
    } else {
        uint64_t unit = (uint64_t)t->disp_unit;
        if (target_disp < 0 || (uint64_t)target_disp > t->size / unit ||
            w > t->size - (uint64_t)target_disp * unit)
            return bm_osc_win_error(win, MPI_ERR_RMA_RANGE, fn,
                                    "displacement %ld is outside rank %d's window",
                                    (long)target_disp, target_rank);
        off = (uint64_t)target_disp * unit;
    }
    if (acc_via_btl(win, datatype)) {
        if (win->acc_ordered && t->acc_channel == 1 && t->am_unsynced > 0 &&
            (rc = bm_osc_complete(win, target_rank, false)))
            return bm_osc_win_error(win, rc, fn, "an earlier operation to rank %d failed",
                                    target_rank);
        t->acc_channel = 2;
        if (win->acc_ordered && t->rdma_out > 0)
            bm_osc_wait_rdma(win, target_rank); /* as in accumulate */
        enum bm_btl_atomic_op cop;
        uint32_t cflags;
        bool cfetch;
        if (!bm_osc_acc_btl_op(MPI_REPLACE, datatype, win->acc_m, &cop, &cflags, &cfetch))
            return bm_osc_win_error(win, MPI_ERR_INTERN, fn, "%s has no %s atomics",
                                    win->acc_m->name, datatype->name);
        struct amo_args m = {.m = win->acc_m,
                             .ep = t->acc_ep,
                             .rh = t->rhandle,
                             .result = result_addr,
                             .remote = t->base + off,
                             .flags = cflags,
                             .cswap = true};
        memcpy(&m.operand, origin_addr, w);
        memcpy(&m.compare, compare_addr, w);
        rc = rdma_run(t, issue_amo, &m, NULL);
        return rc == BM_OK ? MPI_SUCCESS : osc_fail(win, rc, fn, target_rank);
    }
    if (t->path == BM_OSC_PATH_SHM) {
        char *p = shm_ptr(win, t, off, w);
        if (!p)
            return bm_osc_win_error(win, MPI_ERR_RMA_RANGE, fn,
                                    "address 0x%lx is not attached to the dynamic window",
                                    (unsigned long)target_disp);
        bm_osc_cas_apply(datatype, compare_addr, origin_addr, p, result_addr,
                         stripes_for(win, target_rank));
        return MPI_SUCCESS;
    }
    enum bm_btl_atomic_op bop;
    uint32_t bflags;
    bool fetch_only;
    if (t->amo_m && win->flavor != MPI_WIN_FLAVOR_DYNAMIC &&
        bm_osc_acc_btl_op(MPI_REPLACE, datatype, t->amo_m, &bop, &bflags, &fetch_only)) {
        if (win->acc_ordered && t->acc_channel == 1 && t->am_unsynced > 0 &&
            (rc = bm_osc_complete(win, target_rank, false)))
            return bm_osc_win_error(win, rc, fn, "an earlier operation to rank %d failed",
                                    target_rank);
        t->acc_channel = 2;
        struct amo_args m = {
            .result = result_addr, .remote = t->base + off, .flags = bflags, .cswap = true};
        memcpy(&m.operand, origin_addr, w);
        memcpy(&m.compare, compare_addr, w);
        rc = rdma_run(t, issue_amo, &m, NULL);
        return rc == BM_OK ? MPI_SUCCESS : osc_fail(win, rc, fn, target_rank);
    }
    if (win->acc_ordered && t->acc_channel == 2 && t->rdma_out > 0)
        bm_osc_wait_rdma(win, target_rank);
    t->acc_channel = 1;
    struct bm_osc_op *o = bm_osc_op_new(win, target_rank, result_addr, w);
    if (!o)
        return bm_osc_win_error(win, MPI_ERR_NO_MEM, fn, "out of memory");
    struct bm_osc_hdr h = {
        .type = BM_OSC_CAS, .dtype = (uint8_t)datatype->id, .opid = o->id, .addr = off, .len = w};
    bm_osc_am_send(win, target_rank, &h, compare_addr, w, origin_addr, w);
    return MPI_SUCCESS;
}

int PMPI_Compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr,
                          MPI_Datatype datatype, int target_rank, MPI_Aint target_disp, MPI_Win win)
{
    BM_OSC_LOCKED(compare_and_swap_body(origin_addr, compare_addr, result_addr, datatype,
                                        target_rank, target_disp, win));
}
BM_MPI_ALIAS(Compare_and_swap);

static int rput_body(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                     int target_rank, MPI_Aint target_disp, int target_count,
                     MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
    return put_entry(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                     target_count, target_datatype, win, request, true, "MPI_Rput");
}

int PMPI_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
              int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype,
              MPI_Win win, MPI_Request *request)
{
    BM_OSC_LOCKED(rput_body(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                            target_count, target_datatype, win, request));
}
BM_MPI_ALIAS(Rput);

static int rget_body(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                     int target_rank, MPI_Aint target_disp, int target_count,
                     MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
    return get_entry(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                     target_count, target_datatype, win, request, true, "MPI_Rget");
}

int PMPI_Rget(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
              MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win,
              MPI_Request *request)
{
    BM_OSC_LOCKED(rget_body(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                            target_count, target_datatype, win, request));
}
BM_MPI_ALIAS(Rget);

static int raccumulate_body(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                            int target_rank, MPI_Aint target_disp, int target_count,
                            MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
                            MPI_Request *request)
{
    return acc_entry(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                     target_count, target_datatype, op, win, request, true, "MPI_Raccumulate");
}

int PMPI_Raccumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                     int target_rank, MPI_Aint target_disp, int target_count,
                     MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request)
{
    BM_OSC_LOCKED(raccumulate_body(origin_addr, origin_count, origin_datatype, target_rank,
                                   target_disp, target_count, target_datatype, op, win, request));
}
BM_MPI_ALIAS(Raccumulate);

static int rget_accumulate_body(const void *origin_addr, int origin_count,
                                MPI_Datatype origin_datatype, void *result_addr, int result_count,
                                MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
                                int target_count, MPI_Datatype target_datatype, MPI_Op op,
                                MPI_Win win, MPI_Request *request)
{
    return gacc_entry(origin_addr, origin_count, origin_datatype, result_addr, result_count,
                      result_datatype, target_rank, target_disp, target_count, target_datatype, op,
                      win, request, true, "MPI_Rget_accumulate");
}

int PMPI_Rget_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                         void *result_addr, int result_count, MPI_Datatype result_datatype,
                         int target_rank, MPI_Aint target_disp, int target_count,
                         MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request)
{
    BM_OSC_LOCKED(rget_accumulate_body(origin_addr, origin_count, origin_datatype, result_addr,
                                       result_count, result_datatype, target_rank, target_disp,
                                       target_count, target_datatype, op, win, request));
}
BM_MPI_ALIAS(Rget_accumulate);
