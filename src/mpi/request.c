/* Completion of MPI requests: MPI_Wait, Waitall, Waitany, Waitsome, Test,
 * Testall, Testany, Testsome, MPI_Request_get_status, MPI_Request_free,
 * MPI_Cancel, MPI_Start/Startall and MPI_Test_cancelled, for every request
 * kind (mpi_request.h): the point-to-point kind inline, the others through
 * their operations table. Null handles and inactive persistent requests
 * complete at once with an empty status (source MPI_ANY_SOURCE, tag
 * MPI_ANY_TAG, count 0), as MPI-3.1 section 3.7.3 requires. A completed
 * non-persistent request is freed and its handle set to MPI_REQUEST_NULL; a
 * persistent one becomes inactive. Single-completion calls report a failed
 * operation (a truncated receive) through the communicator's error handler
 * with its own class and leave status.MPI_ERROR alone; the
 * multiple-completion calls set MPI_ERROR in every status and report
 * MPI_ERR_IN_STATUS. */
#include "mpi/mpi_internal.h"
#include "mpi/mpi_request.h"
#include "pml/pml.h"
#include "util/mem.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Released requests, reused last-in first-out (still warm in the cache).
 * Under MPI_THREAD_MULTIPLE each thread has its own (mt.c); otherwise MPI
 * calls are never concurrent, so no lock. The cache is bounded so that a
 * burst of requests does not pin memory for ever. */
#define REQ_CACHE_MAX 4096
static MPI_Request req_cache;
static int req_cached;

MPI_Request bm_mpi_request_new(void)
{
    if (bm_mpi_mt)
        return bm_mpi_request_new_mt();
    MPI_Request r = req_cache;
    if (!r)
        return calloc(1, sizeof(*r));
    req_cache = r->next_free;
    req_cached--;
    /* No clearing: the one caller (p2p.c) sets every field. */
    return r;
}

void bm_mpi_request_release(MPI_Request r)
{
    r->magic = 0;
    if (r->comm)
        bm_mpi_comm_release(r->comm);
    if (bm_mpi_mt) {
        bm_mpi_request_release_mt(r);
        return;
    }
    if (req_cached >= REQ_CACHE_MAX) {
        free(r);
        return;
    }
    r->next_free = req_cache;
    req_cache = r;
    req_cached++;
}

/* bm_mpi_request_release inline, for the completion functions (one per
 * message finished): the single-threaded cache with room, else the call. */
static inline void request_recycle(MPI_Request r)
{
    if (__builtin_expect(bm_mpi_mt || req_cached >= REQ_CACHE_MAX, 0)) {
        bm_mpi_request_release(r);
        return;
    }
    r->magic = 0;
    if (r->comm)
        bm_mpi_comm_release(r->comm);
    r->next_free = req_cache;
    req_cache = r;
    req_cached++;
}

void bm_mpi_request_cache_fini(void)
{
    bm_mpi_request_tcache_fini();
    while (req_cache) {
        MPI_Request r = req_cache;
        req_cache = r->next_free;
        free(r);
    }
    req_cached = 0;
}

static void status_empty(MPI_Status *s)
{
    if (!s)
        return;
    s->MPI_SOURCE = MPI_ANY_SOURCE;
    s->MPI_TAG = MPI_ANY_TAG;
    s->MPI_ERROR = MPI_SUCCESS;
    s->bm_count = 0;
    s->bm_cancelled = 0;
}

/* ---- request kinds -------------------------------------------------------------- */

MPI_Request bm_mpi_request_create(const struct bm_mpi_request_ops *ops, MPI_Comm comm, void *state,
                                  bool persistent, bool active)
{
    if (!ops->name || !ops->progress || !ops->query || !ops->release || !ops->cancel ||
        !ops->start) {
        fprintf(stderr, "bitmover: internal error: request kind '%s' lacks an operation\n",
                ops->name ? ops->name : "(unnamed)");
        abort();
    }
    MPI_Request r = bm_mpi_request_new();
    if (!r)
        return NULL;
    memset(r, 0, sizeof(*r));
    r->magic = BM_MPI_MAGIC_REQUEST;
    r->kind = BM_MPI_REQ_OTHER;
    r->ops = ops;
    r->comm = comm;
    if (comm)
        bm_mpi_comm_retain(comm);
    r->state = state;
    r->persistent = persistent;
    r->active = active;
    return r;
}

void bm_mpi_request_destroy(MPI_Request r)
{
    bm_mpi_request_release(r);
}

int bm_mpi_request_no_cancel(MPI_Request r)
{
    (void)r;
    return MPI_SUCCESS;
}

int bm_mpi_request_no_start(MPI_Request r, const char *fn)
{
    return bm_mpi_error(r->comm, MPI_ERR_REQUEST, fn, "a %s request cannot be started",
                        r->ops->name);
}

bool bm_mpi_request_plain_release(MPI_Request r, int *err)
{
    (void)r;
    *err = MPI_SUCCESS;
    return true;
}

static inline bool is_p2p(MPI_Request r)
{
    return r->ops == &bm_mpi_p2p_request_ops;
}

/* The point-to-point kind. Its completion is also written out inline below
 * (req_ready, req_finish): this table serves the rarer calls. */

static bool p2p_progress(MPI_Request r)
{
    return !r->pml || bm_pml_request_done(r->pml);
}

/* The MPI status of a point-to-point result ps; the MPI class of its
 * failure (0 on success), described in what. */
static int p2p_status_of(MPI_Request r, const struct bm_pml_status *ps, MPI_Status *st, char *what,
                         size_t what_len)
{
    memset(st, 0, sizeof(*st));
    st->MPI_SOURCE = ps->source;
    st->MPI_TAG = ps->tag;
    st->bm_count = ps->count;
    st->bm_cancelled = ps->cancelled;
    if (ps->error == BM_OK)
        return MPI_SUCCESS;
    if (ps->error == BM_ERR_FAULT || ps->error == BM_ERR_PEER_FAULT)
        bm_mpi_p2p_fault_text(what, what_len, r->kind == BM_MPI_REQ_RECV,
                              r->kind == BM_MPI_REQ_RECV ? ps->source : r->peer,
                              r->kind == BM_MPI_REQ_RECV ? ps->tag : r->tag, r->buf, ps->count,
                              ps->error);
    else if (ps->error == BM_ERR_TRUNCATE)
        snprintf(what, what_len,
                 "the message from rank %d with tag %d is longer than the receive "
                 "buffer; only the first %zu bytes were received",
                 ps->source, ps->tag, ps->count);
    else
        snprintf(what, what_len, "%s with rank %d failed: %s",
                 r->kind == BM_MPI_REQ_RECV ? "receive" : "send", ps->source,
                 bm_status_str(ps->error));
    return bm_mpi_class_of_status(ps->error);
}

/* The status of a point-to-point request that completed; the MPI class of
 * its failure (0 on success), described in what. */
static int p2p_status(MPI_Request r, MPI_Status *st, char *what, size_t what_len)
{
    if (!r->pml) {
        *st = r->status;
        return MPI_SUCCESS;
    }
    struct bm_pml_status ps;
    bm_pml_request_test(r->pml, &ps);
    return p2p_status_of(r, &ps, st, what, what_len);
}

static bool p2p_release(MPI_Request r, int *err)
{
    /* An active transfer goes on in the background (the PML finishes it). */
    if (r->pml)
        bm_pml_request_free(r->pml);
    r->pml = NULL;
    if (r->persistent)
        bm_mpi_type_release(r->dt);
    *err = MPI_SUCCESS;
    return true;
}

static int p2p_cancel(MPI_Request r)
{
    /* The PML cancels receives that have not matched, and sends whose
     * message still waits unmatched at the receiver (it asks; the request
     * completes with the answer). Matched ones complete normally (MPI lets a
     * cancel fail: the status then says not cancelled), as do sends that
     * completed as they started (sent inline or buffered: no PML request). */
    if (r->pml)
        bm_pml_request_cancel(r->pml);
    return MPI_SUCCESS;
}

const struct bm_mpi_request_ops bm_mpi_p2p_request_ops = {
    .name = "point-to-point",
    .progress = p2p_progress,
    .query = p2p_status,
    .release = p2p_release,
    .cancel = p2p_cancel,
    .start = bm_mpi_p2p_start,
};

/* ---- completion ------------------------------------------------------------------- */

static bool req_active(MPI_Request r)
{
    return r != MPI_REQUEST_NULL && r->active;
}

/* Complete (point-to-point: inline), or advanced by its kind and complete now. */
static inline bool req_ready(MPI_Request r)
{
    if (is_p2p(r))
        return !r->pml || bm_pml_request_done(r->pml);
    return r->ops->progress(r);
}

/* Why an operation failed, for the error handler's message. comm, when
 * not NULL, is a reference (the request that held one may be gone, and
 * with it the last reference to a freed communicator): fail_report drops it. */
struct req_failure {
    MPI_Comm comm;
    char what[BM_MPI_REQ_WHAT_MAX];
};

static void fail_set(struct req_failure *fail, MPI_Comm comm, const char *what)
{
    if (comm)
        bm_mpi_comm_retain(comm);
    if (fail->comm)
        bm_mpi_comm_release(fail->comm);
    fail->comm = comm;
    snprintf(fail->what, sizeof(fail->what), "%s", what);
}

/* Report the failure (error class cls) through its communicator's handler. */
static int fail_report(struct req_failure *fail, int cls, const char *fn, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail_report(struct req_failure *fail, int cls, const char *fn, const char *fmt, ...)
{
    char msg[2 * BM_MPI_REQ_WHAT_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    int rc = bm_mpi_error(fail->comm, cls, fn, "%s", msg);
    if (fail->comm)
        bm_mpi_comm_release(fail->comm);
    fail->comm = NULL;
    return rc;
}

/* The end of finishing a request: its result (st, MPI error code cls) into
 * status (when not NULL), and the request released (recycle: back to the
 * cache) or, persistent, deactivated. Returns cls. */
static inline int req_done(MPI_Request *rp, MPI_Request r, const MPI_Status *st, int cls,
                           bool recycle, MPI_Status *status, bool set_error)
{
    if (status) {
        int keep = status->MPI_ERROR;
        *status = *st;
        status->MPI_ERROR = set_error ? cls : keep;
    }
    r->active = false;
    if (!r->persistent) {
        if (recycle)
            request_recycle(r);
        *rp = MPI_REQUEST_NULL;
    }
    return cls;
}

/* req_finish for other kinds than point-to-point, and (ps not NULL) for a
 * point-to-point request that failed (its PML request already finished). */
static __attribute__((noinline)) int req_finish_slow(MPI_Request *rp, MPI_Status *status,
                                                     bool set_error, struct req_failure *fail,
                                                     const struct bm_pml_status *ps)
{
    MPI_Request r = *rp;
    MPI_Status st;
    char what[BM_MPI_REQ_WHAT_MAX];
    int cls;
    bool recycle = true;
    what[0] = 0;
    if (ps) {
        cls = p2p_status_of(r, ps, &st, what, sizeof(what));
    } else {
        memset(&st, 0, sizeof(st));
        cls = r->ops->query(r, &st, what, sizeof(what));
        if (cls && !what[0])
            snprintf(what, sizeof(what), "the %s failed", r->ops->name);
        if (!r->persistent) {
            int err;
            recycle = r->ops->release(r, &err);
            if (!cls && err) {
                cls = err;
                snprintf(what, sizeof(what), "freeing the %s failed", r->ops->name);
            }
        }
    }
    if (cls)
        fail_set(fail, r->comm, what);
    return req_done(rp, r, &st, cls, recycle, status, set_error);
}

/* Take the result of a completed request into status (when not NULL) and
 * release or deactivate it. Returns the operation's MPI error code (0 on
 * success), describing a failure in fail. */
static inline int req_finish(MPI_Request *rp, MPI_Status *status, bool set_error,
                             struct req_failure *fail)
{
    MPI_Request r = *rp;
    if (!is_p2p(r))
        return req_finish_slow(rp, status, set_error, fail, NULL);
    if (!r->pml) /* completed as it started (sent inline, MPI_PROC_NULL): its status is here */
        return req_done(rp, r, &r->status, MPI_SUCCESS, true, status, set_error);
    /* Point-to-point: status and release in one PML call; only a failure
     * needs the slow path's description. */
    struct bm_pml_status ps;
    bm_pml_request_finish(r->pml, &ps);
    r->pml = NULL;
    if (__builtin_expect(ps.error != BM_OK, 0))
        return req_finish_slow(rp, status, set_error, fail, &ps);
    /* Success: the fields straight into status (p2p_status_of's result,
     * without building an MPI_Status and copying it). */
    if (status) {
        status->MPI_SOURCE = ps.source;
        status->MPI_TAG = ps.tag;
        status->bm_cancelled = ps.cancelled;
        status->bm_count = ps.count;
        if (set_error)
            status->MPI_ERROR = MPI_SUCCESS;
    }
    return req_done(rp, r, NULL, MPI_SUCCESS, true, NULL, set_error);
}

/* Validate an array argument of the multiple-completion calls. */
static int check_array(const char *fn, int count, MPI_Request reqs[])
{
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (count < 0)
        return bm_mpi_error(NULL, MPI_ERR_COUNT, fn, "negative count %d", count);
    if (count > 0 && !reqs)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL request array");
    for (int i = 0; i < count; i++)
        if (reqs[i] != MPI_REQUEST_NULL && !bm_mpi_request_valid(reqs[i]))
            return bm_mpi_error(NULL, MPI_ERR_REQUEST, fn, "entry %d is not a valid request", i);
    return MPI_SUCCESS;
}

static int check_one(const char *fn, MPI_Request *request)
{
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (!request)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL request pointer");
    if (*request != MPI_REQUEST_NULL && !bm_mpi_request_valid(*request))
        return bm_mpi_error(NULL, MPI_ERR_REQUEST, fn, "not a valid request");
    return MPI_SUCCESS;
}

/* ---- single ----------------------------------------------------------------- */

/* Test a request of another kind: advance it, progress once when it is not
 * complete, and look again (the Test contract of the PML's requests). */
static bool req_test_other(MPI_Request r)
{
    if (r->ops->progress(r))
        return true;
    bm_pml_progress_test();
    return r->ops->progress(r);
}

int PMPI_Wait(MPI_Request *request, MPI_Status *status)
{
    static const char fn[] = "MPI_Wait";
    int rc = check_one(fn, request);
    if (rc)
        return rc;
    MPI_Request r = *request;
    if (!req_active(r)) {
        status_empty(status);
        return MPI_SUCCESS;
    }
    if (is_p2p(r)) {
        if (r->pml)
            bm_pml_request_wait(r->pml, NULL);
    } else {
        while (!r->ops->progress(r))
            bm_pml_progress_wait();
    }
    struct req_failure fail;
    fail.comm = NULL;
    int cls = req_finish(request, status, false, &fail);
    return cls ? fail_report(&fail, cls, fn, "%s", fail.what) : MPI_SUCCESS;
}
BM_MPI_ALIAS(Wait);

int PMPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    static const char fn[] = "MPI_Test";
    int rc = check_one(fn, request);
    if (rc)
        return rc;
    if (!flag)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL flag pointer");
    MPI_Request r = *request;
    if (!req_active(r)) {
        *flag = 1;
        status_empty(status);
        return MPI_SUCCESS;
    }
    if (is_p2p(r) ? r->pml && !bm_pml_request_test(r->pml, NULL) : !req_test_other(r)) {
        *flag = 0;
        return MPI_SUCCESS;
    }
    *flag = 1;
    struct req_failure fail;
    fail.comm = NULL;
    int cls = req_finish(request, status, false, &fail);
    return cls ? fail_report(&fail, cls, fn, "%s", fail.what) : MPI_SUCCESS;
}
BM_MPI_ALIAS(Test);

/* ---- all ------------------------------------------------------------------------ */

/* Finish every request of the array (all complete or inactive). */
/* Finish requests [from, to) of an array: statuses, free, failures
 * counted (the return) and remembered in fail. */
static int finish_range(int from, int to, MPI_Request reqs[], MPI_Status statuses[],
                        struct req_failure *fail)
{
    int errors = 0;
    for (int i = from; i < to; i++) {
        MPI_Status *st = statuses == MPI_STATUSES_IGNORE ? NULL : &statuses[i];
        if (!req_active(reqs[i])) {
            status_empty(st);
            continue;
        }
        if (req_finish(&reqs[i], st, true, fail))
            errors++;
    }
    return errors;
}

static int finish_report(const char *fn, int count, int errors, struct req_failure *fail)
{
    if (!errors)
        return MPI_SUCCESS;
    return fail_report(fail, MPI_ERR_IN_STATUS, fn,
                       "%d of %d operations failed (see each status's MPI_ERROR); the last: %s",
                       errors, count, fail->what);
}

static int finish_all(const char *fn, int count, MPI_Request reqs[], MPI_Status statuses[])
{
    struct req_failure fail;
    fail.comm = NULL;
    return finish_report(fn, count, finish_range(0, count, reqs, statuses, &fail), &fail);
}

/* Index of the first request from 'from' on that is active and not ready
 * (count when there is none). */
static int first_pending(int from, int count, MPI_Request reqs[])
{
    int i = from;
    while (i < count && (!req_active(reqs[i]) || req_ready(reqs[i])))
        i++;
    return i;
}

static bool all_ready(int count, MPI_Request reqs[])
{
    return first_pending(0, count, reqs) == count;
}

int PMPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[])
{
    static const char fn[] = "MPI_Waitall";
    int rc = check_array(fn, count, array_of_requests);
    if (rc)
        return rc;
    /* Requests never become un-ready: the ones before the first pending
     * one need no second look, so a poll checks one request, not all. They
     * are finished (status, freed) while the later ones are still pending,
     * so that this work overlaps the wait instead of following the last
     * completion: a window of 64 8-byte receives over sm used to finish all
     * 64 after the last arrival, on the message rate's critical path. */
    struct req_failure fail;
    fail.comm = NULL;
    int errors = 0;
    for (int done = 0;;) {
        /* Finish each request as it is found ready (one look at it, not a
         * scan for the first pending one and then a second pass). */
        for (; done < count; done++) {
            MPI_Request r = array_of_requests[done];
            MPI_Status *st =
                array_of_statuses == MPI_STATUSES_IGNORE ? NULL : &array_of_statuses[done];
            if (!req_active(r))
                status_empty(st);
            else if (!req_ready(r))
                break;
            else if (req_finish(&array_of_requests[done], st, true, &fail))
                errors++;
        }
        if (done == count)
            break;
        bm_pml_progress_wait();
    }
    return finish_report(fn, count, errors, &fail);
}
BM_MPI_ALIAS(Waitall);

int PMPI_Testall(int count, MPI_Request array_of_requests[], int *flag,
                 MPI_Status array_of_statuses[])
{
    static const char fn[] = "MPI_Testall";
    int rc = check_array(fn, count, array_of_requests);
    if (rc)
        return rc;
    if (!flag)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL flag pointer");
    if (!all_ready(count, array_of_requests)) {
        bm_pml_progress_test();
        if (!all_ready(count, array_of_requests)) {
            *flag = 0;
            return MPI_SUCCESS;
        }
    }
    *flag = 1;
    return finish_all(fn, count, array_of_requests, array_of_statuses);
}
BM_MPI_ALIAS(Testall);

/* ---- any ------------------------------------------------------------------------- */

/* Index of a completed active request, -1 when none is, -2 when none is active. */
static int find_ready(int count, MPI_Request reqs[])
{
    bool any_active = false;
    for (int i = 0; i < count; i++) {
        if (!req_active(reqs[i]))
            continue;
        any_active = true;
        if (req_ready(reqs[i]))
            return i;
    }
    return any_active ? -1 : -2;
}

static int finish_one(const char *fn, MPI_Request reqs[], int i, int *index, MPI_Status *status)
{
    *index = i;
    struct req_failure fail;
    fail.comm = NULL;
    int cls = req_finish(&reqs[i], status, false, &fail);
    return cls ? fail_report(&fail, cls, fn, "%s", fail.what) : MPI_SUCCESS;
}

int PMPI_Waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status)
{
    static const char fn[] = "MPI_Waitany";
    int rc = check_array(fn, count, array_of_requests);
    if (rc)
        return rc;
    if (!index)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL index pointer");
    for (;;) {
        int i = find_ready(count, array_of_requests);
        if (i == -2) {
            *index = MPI_UNDEFINED;
            status_empty(status);
            return MPI_SUCCESS;
        }
        if (i >= 0)
            return finish_one(fn, array_of_requests, i, index, status);
        bm_pml_progress_wait();
    }
}
BM_MPI_ALIAS(Waitany);

int PMPI_Testany(int count, MPI_Request array_of_requests[], int *index, int *flag,
                 MPI_Status *status)
{
    static const char fn[] = "MPI_Testany";
    int rc = check_array(fn, count, array_of_requests);
    if (rc)
        return rc;
    if (!index || !flag)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL %s pointer", index ? "flag" : "index");
    int i = find_ready(count, array_of_requests);
    if (i == -1) {
        bm_pml_progress_test();
        i = find_ready(count, array_of_requests);
    }
    if (i == -2) {
        *flag = 1;
        *index = MPI_UNDEFINED;
        status_empty(status);
        return MPI_SUCCESS;
    }
    if (i == -1) {
        *flag = 0;
        *index = MPI_UNDEFINED;
        return MPI_SUCCESS;
    }
    *flag = 1;
    return finish_one(fn, array_of_requests, i, index, status);
}
BM_MPI_ALIAS(Testany);

/* ---- some ------------------------------------------------------------------------- */

static int finish_some(const char *fn, int count, MPI_Request reqs[], int *outcount, int indices[],
                       MPI_Status statuses[])
{
    int n = 0, errors = 0;
    struct req_failure fail;
    fail.comm = NULL;
    for (int i = 0; i < count; i++) {
        if (!req_active(reqs[i]) || !req_ready(reqs[i]))
            continue;
        MPI_Status *st = statuses == MPI_STATUSES_IGNORE ? NULL : &statuses[n];
        indices[n++] = i;
        if (req_finish(&reqs[i], st, true, &fail))
            errors++;
    }
    *outcount = n;
    if (!errors)
        return MPI_SUCCESS;
    return fail_report(&fail, MPI_ERR_IN_STATUS, fn,
                       "%d of the %d completed operations failed (see each status's "
                       "MPI_ERROR); the last: %s",
                       errors, n, fail.what);
}

static int some_args(const char *fn, int count, MPI_Request reqs[], int *outcount, int indices[])
{
    int rc = check_array(fn, count, reqs);
    if (rc)
        return rc;
    if (!outcount || (count > 0 && !indices))
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL %s pointer",
                            outcount ? "indices" : "outcount");
    return MPI_SUCCESS;
}

int PMPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount,
                  int array_of_indices[], MPI_Status array_of_statuses[])
{
    static const char fn[] = "MPI_Waitsome";
    int rc = some_args(fn, incount, array_of_requests, outcount, array_of_indices);
    if (rc)
        return rc;
    for (;;) {
        int i = find_ready(incount, array_of_requests);
        if (i == -2) {
            *outcount = MPI_UNDEFINED;
            return MPI_SUCCESS;
        }
        if (i >= 0)
            return finish_some(fn, incount, array_of_requests, outcount, array_of_indices,
                               array_of_statuses);
        bm_pml_progress_wait();
    }
}
BM_MPI_ALIAS(Waitsome);

int PMPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount,
                  int array_of_indices[], MPI_Status array_of_statuses[])
{
    static const char fn[] = "MPI_Testsome";
    int rc = some_args(fn, incount, array_of_requests, outcount, array_of_indices);
    if (rc)
        return rc;
    int i = find_ready(incount, array_of_requests);
    if (i == -2) {
        *outcount = MPI_UNDEFINED;
        return MPI_SUCCESS;
    }
    if (i == -1)
        bm_pml_progress_test();
    return finish_some(fn, incount, array_of_requests, outcount, array_of_indices,
                       array_of_statuses);
}
BM_MPI_ALIAS(Testsome);

/* ---- free and cancel ------------------------------------------------------------------- */

int PMPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    static const char fn[] = "MPI_Request_get_status";
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (!flag)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL flag pointer");
    if (request != MPI_REQUEST_NULL && !bm_mpi_request_valid(request))
        return bm_mpi_error(NULL, MPI_ERR_REQUEST, fn, "not a valid request");
    if (!req_active(request)) {
        *flag = 1;
        status_empty(status);
        return MPI_SUCCESS;
    }
    bool done = is_p2p(request) ? (!request->pml || bm_pml_request_test(request->pml, NULL))
                                : req_test_other(request);
    if (!done) {
        *flag = 0;
        return MPI_SUCCESS;
    }
    /* The request stays as it is: a later Wait/Test completes and frees it. */
    *flag = 1;
    MPI_Status st;
    char what[BM_MPI_REQ_WHAT_MAX] = "";
    memset(&st, 0, sizeof(st));
    int code = request->ops->query(request, &st, what, sizeof(what));
    if (status) {
        int keep = status->MPI_ERROR;
        *status = st;
        status->MPI_ERROR = keep;
    }
    if (!code)
        return MPI_SUCCESS;
    return bm_mpi_error(request->comm, code, fn, "%s", what[0] ? what : "the operation failed");
}
BM_MPI_ALIAS(Request_get_status);

/* ---- free, cancel, start ------------------------------------------------------------------- */

int PMPI_Request_free(MPI_Request *request)
{
    static const char fn[] = "MPI_Request_free";
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (!request || !bm_mpi_request_valid(*request))
        return bm_mpi_error(NULL, MPI_ERR_REQUEST, fn,
                            "not a request (NULL pointer, MPI_REQUEST_NULL or a freed request)");
    MPI_Request r = *request;
    struct req_failure fail;
    fail.comm = NULL;
    const char *kind = r->ops->name;
    int err = MPI_SUCCESS;
    /* The communicator must outlive the request for a failure's report. */
    fail_set(&fail, r->comm, "");
    /* An active operation goes on in the background: its kind finishes it. */
    if (r->ops->release(r, &err))
        bm_mpi_request_release(r);
    *request = MPI_REQUEST_NULL;
    if (err)
        return fail_report(&fail, err, fn, "freeing the %s request failed", kind);
    if (fail.comm)
        bm_mpi_comm_release(fail.comm);
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Request_free);

int PMPI_Cancel(MPI_Request *request)
{
    static const char fn[] = "MPI_Cancel";
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (!request || !bm_mpi_request_valid(*request))
        return bm_mpi_error(NULL, MPI_ERR_REQUEST, fn,
                            "not a request (NULL pointer or MPI_REQUEST_NULL)");
    MPI_Request r = *request;
    if (!r->active)
        return MPI_SUCCESS;
    int err = r->ops->cancel(r);
    if (err)
        return bm_mpi_error(r->comm, err, fn, "cancelling the %s request failed", r->ops->name);
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Cancel);

static int start_one(MPI_Request *request, const char *fn)
{
    if (!request || !bm_mpi_request_valid(*request))
        return bm_mpi_error(NULL, MPI_ERR_REQUEST, fn, "not a request (NULL or MPI_REQUEST_NULL)");
    MPI_Request r = *request;
    if (!r->persistent)
        return bm_mpi_error(r->comm, MPI_ERR_REQUEST, fn,
                            "the request is a nonblocking %s request, not a persistent one "
                            "(made by MPI_Send_init, MPI_Recv_init...): only persistent requests "
                            "can be started",
                            r->ops->name);
    if (r->active)
        return bm_mpi_error(r->comm, MPI_ERR_REQUEST, fn,
                            "the persistent request is still active: complete it with "
                            "MPI_Wait/MPI_Test before starting it again");
    return r->ops->start(r, fn);
}

int PMPI_Start(MPI_Request *request)
{
    static const char fn[] = "MPI_Start";
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    return start_one(request, fn);
}
BM_MPI_ALIAS(Start);

int PMPI_Startall(int count, MPI_Request array_of_requests[])
{
    static const char fn[] = "MPI_Startall";
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (count < 0)
        return bm_mpi_error(NULL, MPI_ERR_COUNT, fn, "negative count %d", count);
    if (count > 0 && !array_of_requests)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL request array");
    for (int i = 0; i < count; i++)
        if ((rc = start_one(&array_of_requests[i], fn)))
            return rc;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Startall);

int PMPI_Test_cancelled(const MPI_Status *status, int *flag)
{
    static const char fn[] = "MPI_Test_cancelled";
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (!status || !flag)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL %s pointer", status ? "flag" : "status");
    *flag = status->bm_cancelled != 0;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Test_cancelled);
