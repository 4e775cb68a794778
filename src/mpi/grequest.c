/* Generalized requests (MPI-3.1 section 12.2): operations that a program
 * (or a library above MPI) carries out itself and presents as an MPI
 * request, so that MPI_Wait/Test and friends complete them along with
 * point-to-point ones. This is a request kind (mpi_request.h): it completes
 * when MPI_Grequest_complete is called; Wait/Test then call the program's
 * query function for the status and its free function, MPI_Cancel calls its
 * cancel function. Also the status setters such a query function uses
 * (MPI_Status_set_elements(_x), MPI_Status_set_cancelled). The completed
 * flag is atomic: MPI_Grequest_complete may come from a thread of the
 * program's own that is not in MPI at the same time as the waiting thread,
 * the usual way these requests are driven. */
#include "mpi/mpi_internal.h"
#include "mpi/mpi_request.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

struct grequest {
    MPI_Grequest_query_function *query_fn;
    MPI_Grequest_free_function *free_fn;
    MPI_Grequest_cancel_function *cancel_fn;
    void *extra_state;
    atomic_bool complete; /* MPI_Grequest_complete was called */
    bool handle_freed;    /* MPI_Request_free came first: free at completion */
};

static struct grequest *greq_of(MPI_Request r)
{
    return r->state;
}

static bool greq_progress(MPI_Request r)
{
    return atomic_load_explicit(&greq_of(r)->complete, memory_order_acquire);
}

static int greq_query(MPI_Request r, MPI_Status *status, char *what, size_t what_len)
{
    struct grequest *g = greq_of(r);
    /* The query function sees a status already holding the empty result,
     * so that one that sets only some fields leaves sensible values. */
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    status->MPI_ERROR = MPI_SUCCESS;
    status->bm_count = 0;
    status->bm_cancelled = 0;
    int code = g->query_fn(g->extra_state, status);
    if (code)
        snprintf(what, what_len, "the generalized request's query function returned error %d",
                 code);
    return code;
}

static int greq_free_state(MPI_Request r)
{
    struct grequest *g = greq_of(r);
    int code = g->free_fn(g->extra_state);
    free(g);
    r->state = NULL;
    return code;
}

static bool greq_release(MPI_Request r, int *err)
{
    struct grequest *g = greq_of(r);
    if (!atomic_load_explicit(&g->complete, memory_order_acquire)) {
        /* MPI_Request_free on an active request: the standard calls the free
         * function once the request completes, so the request object stays
         * for MPI_Grequest_complete to find. */
        g->handle_freed = true;
        *err = MPI_SUCCESS;
        return false;
    }
    *err = greq_free_state(r);
    return true;
}

static int greq_cancel(MPI_Request r)
{
    struct grequest *g = greq_of(r);
    return g->cancel_fn(g->extra_state, atomic_load_explicit(&g->complete, memory_order_acquire));
}

static const struct bm_mpi_request_ops greq_ops = {
    .name = "generalized request",
    .progress = greq_progress,
    .query = greq_query,
    .release = greq_release,
    .cancel = greq_cancel,
    .start = bm_mpi_request_no_start,
};

int PMPI_Grequest_start(MPI_Grequest_query_function *query_fn, MPI_Grequest_free_function *free_fn,
                        MPI_Grequest_cancel_function *cancel_fn, void *extra_state,
                        MPI_Request *request)
{
    static const char fn[] = "MPI_Grequest_start";
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (!query_fn || !free_fn || !cancel_fn || !request)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL %s",
                            !query_fn    ? "query function"
                            : !free_fn   ? "free function"
                            : !cancel_fn ? "cancel function"
                                         : "request pointer");
    struct grequest *g = malloc(sizeof(*g));
    if (!g)
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    g->query_fn = query_fn;
    g->free_fn = free_fn;
    g->cancel_fn = cancel_fn;
    g->extra_state = extra_state;
    atomic_init(&g->complete, false);
    g->handle_freed = false;
    MPI_Request r = bm_mpi_request_create(&greq_ops, MPI_COMM_NULL, g, false, true);
    if (!r) {
        free(g);
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    *request = r;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Grequest_start);

int PMPI_Grequest_complete(MPI_Request request)
{
    static const char fn[] = "MPI_Grequest_complete";
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (!bm_mpi_request_valid(request) || request->ops != &greq_ops)
        return bm_mpi_error(NULL, MPI_ERR_REQUEST, fn,
                            "not a generalized request (made by MPI_Grequest_start)");
    struct grequest *g = greq_of(request);
    if (atomic_load_explicit(&g->complete, memory_order_acquire))
        return bm_mpi_error(NULL, MPI_ERR_REQUEST, fn,
                            "the generalized request is already complete (MPI_Grequest_complete "
                            "may be called once per request)");
    if (g->handle_freed) {
        /* The program let go of the handle earlier: nobody will wait. */
        atomic_store_explicit(&g->complete, true, memory_order_release);
        int code = greq_free_state(request);
        bm_mpi_request_destroy(request);
        if (code)
            return bm_mpi_error(NULL, code, fn,
                                "the generalized request's free function returned error %d", code);
        return MPI_SUCCESS;
    }
    atomic_store_explicit(&g->complete, true, memory_order_release);
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Grequest_complete);

/* ---- status setters ---------------------------------------------------------------- */

static int set_elements(MPI_Status *status, MPI_Datatype datatype, MPI_Count count, const char *fn)
{
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (!status)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL status pointer");
    if (datatype == MPI_DATATYPE_NULL || datatype->magic != BM_MPI_MAGIC_DATATYPE)
        return bm_mpi_check_datatype(NULL, datatype, fn);
    if (count < 0)
        return bm_mpi_error(NULL, MPI_ERR_COUNT, fn, "negative count %lld", (long long)count);
    /* The inverse of MPI_Get_elements: the packed bytes count basic
     * elements of the datatype's stream occupy (datatype.c). */
    status->bm_count = bm_mpi_type_elements_bytes(datatype, count);
    return MPI_SUCCESS;
}

int PMPI_Status_set_elements_x(MPI_Status *status, MPI_Datatype datatype, MPI_Count count)
{
    return set_elements(status, datatype, count, "MPI_Status_set_elements_x");
}
BM_MPI_ALIAS(Status_set_elements_x);

int PMPI_Status_set_elements(MPI_Status *status, MPI_Datatype datatype, int count)
{
    return set_elements(status, datatype, count, "MPI_Status_set_elements");
}
BM_MPI_ALIAS(Status_set_elements);

int PMPI_Status_set_cancelled(MPI_Status *status, int flag)
{
    static const char fn[] = "MPI_Status_set_cancelled";
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (!status)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL status pointer");
    status->bm_cancelled = flag != 0;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Status_set_cancelled);
