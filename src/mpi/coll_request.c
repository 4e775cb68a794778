/* Nonblocking and persistent collectives as MPI request kinds
 * (mpi_request.h). A nonblocking collective (MPI_Ibcast...) takes the same
 * schedule its blocking form would run, starts it in the background
 * (bm_mpi_sched_exec_start: it advances from the PML progress hook, so in
 * every MPI call that waits or tests anything) and returns a request that
 * Wait/Test complete. A persistent collective (MPI_Bcast_init..., MPI-4)
 * builds its schedule once at init; every MPI_Start runs it again.
 *
 * Tags. Every process calls the collectives of a communicator in the same
 * order, so the n-th nonblocking collective gets the same sequence number
 * (bm_mpi_sched_tag_nb) everywhere. A persistent collective takes its
 * number at init (the order of the init calls is the one the standard
 * fixes) and reuses it at every start: one request has at most one active
 * run, and the runs of one request between two processes follow each other
 * in order.
 *
 * Lifetime. MPI_Request_free on an active request lets the run finish in
 * the background (the engine frees it when done). A derived datatype of a
 * reduction is retained while a request may still use it. */
#include "mpi/coll.h"
#include "mpi/mpi_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a collective request holds. */
struct coll_req {
    struct bm_mpi_sched *s;
    struct bm_mpi_sched_exec *e; /* the run in progress or finished; NULL before the first start */
    MPI_Comm comm;
    const void *sbuf;
    void *rbuf;
    MPI_Datatype dt; /* reductions: retained */
    MPI_Op op;
    uint32_t tag;
    const char *fn;
};

static void coll_req_free(struct coll_req *c)
{
    if (c->e)
        bm_mpi_sched_exec_free(c->e);
    bm_mpi_sched_release(c->s);
    if (c->dt)
        bm_mpi_type_release(c->dt);
    if (c->op)
        bm_mpi_op_release(c->op);
    free(c);
}

static struct coll_req *coll_req_new(MPI_Comm comm, struct bm_mpi_sched *s,
                                     const struct bm_mpi_coll_args *a, const char *fn)
{
    struct coll_req *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    c->s = s;
    c->comm = comm;
    c->sbuf = bm_coll_side_base(a->sbuf, bm_mpi_coll_stype(a));
    c->rbuf = (void *)(uintptr_t)bm_coll_side_base(a->rbuf, a->rtype);
    c->op = a->op;
    c->fn = fn;
    if (a->op) {
        c->dt = a->rtype;
        bm_mpi_type_retain(c->dt);
        bm_mpi_op_retain(c->op); /* MPI_Op_free may come before the wait */
    }
    return c;
}

static bool coll_progress(MPI_Request r)
{
    struct coll_req *c = r->state;
    const char *what;
    int err;

    return c->e == NULL || bm_mpi_sched_exec_test(c->e, &err, &what);
}

static int coll_query(MPI_Request r, MPI_Status *status, char *what, size_t what_len)
{
    struct coll_req *c = r->state;
    const char *msg = "";
    int err = MPI_SUCCESS;

    status->MPI_SOURCE = MPI_ANY_SOURCE;
    status->MPI_TAG = MPI_ANY_TAG;
    status->bm_count = 0;
    status->bm_cancelled = 0;
    if (c->e && bm_mpi_sched_exec_test(c->e, &err, &msg) && err != MPI_SUCCESS)
        snprintf(what, what_len, "%s", msg);
    return err;
}

static const struct bm_mpi_request_ops coll_nb_ops, coll_persistent_ops;

bool bm_mpi_coll_request_done(MPI_Request r)
{
    if (r->ops != &coll_nb_ops && r->ops != &coll_persistent_ops)
        return false; /* not a collective's request: nothing to watch */
    const struct coll_req *c = r->state;

    return c->e != NULL && bm_mpi_sched_exec_done(c->e);
}

static bool coll_release(MPI_Request r, int *err)
{
    *err = MPI_SUCCESS;
    coll_req_free(r->state);
    r->state = NULL;
    return true;
}

static const struct bm_mpi_request_ops coll_nb_ops = {
    .name = "nonblocking collective",
    .progress = coll_progress,
    .query = coll_query,
    .release = coll_release,
    .cancel = bm_mpi_request_no_cancel,
    .start = bm_mpi_request_no_start,
};

/* The schedule of the call and the request state around it, with the
 * call's tag taken. */
static int coll_req_make(MPI_Comm comm, const struct bm_mpi_coll_args *a, MPI_Request *request,
                         struct coll_req **c_out, const char *fn)
{
    struct bm_mpi_sched *s;
    struct bm_mpi_coll_args bg = *a;
    int rc;

    if (request == NULL)
        return bm_mpi_error(comm, MPI_ERR_REQUEST, fn, "NULL request pointer");
    bg.background = true;
    if ((rc = bm_mpi_coll_schedule(comm, &bg, &s, fn)) != MPI_SUCCESS)
        return rc;
    if ((*c_out = coll_req_new(comm, s, a, fn)) == NULL) {
        bm_mpi_sched_release(s);
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    (*c_out)->tag = bm_mpi_sched_tag_nb(comm);
    return MPI_SUCCESS;
}

int bm_mpi_coll_nonblocking(MPI_Comm comm, const struct bm_mpi_coll_args *a, MPI_Request *request,
                            const char *fn)
{
    struct coll_req *c;
    MPI_Request r;
    int rc;

    if ((rc = coll_req_make(comm, a, request, &c, fn)) != MPI_SUCCESS)
        return rc;
    if ((rc = bm_mpi_sched_exec_start(c->s, comm, c->sbuf, c->rbuf, a->rtype, a->op, c->tag, fn,
                                      &c->e)) != MPI_SUCCESS) {
        coll_req_free(c);
        return rc;
    }
    r = bm_mpi_request_create(&coll_nb_ops, comm, c, false, true);
    if (r == NULL) {
        coll_req_free(c); /* the run, if still going, finishes in the background */
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    *request = r;
    return MPI_SUCCESS;
}

/* ---- persistent ------------------------------------------------------------------- */

static int coll_start(MPI_Request r, const char *fn)
{
    struct coll_req *c = r->state;
    int rc;

    if (c->e) {
        bm_mpi_sched_exec_free(c->e);
        c->e = NULL;
    }
    rc = bm_mpi_sched_exec_start(c->s, c->comm, c->sbuf, c->rbuf, c->dt, c->op, c->tag, fn, &c->e);
    if (rc == MPI_SUCCESS)
        r->active = true;
    return rc;
}

static const struct bm_mpi_request_ops coll_persistent_ops = {
    .name = "persistent collective",
    .progress = coll_progress,
    .query = coll_query,
    .release = coll_release,
    .cancel = bm_mpi_request_no_cancel,
    .start = coll_start,
};

int bm_mpi_coll_persistent(MPI_Comm comm, const struct bm_mpi_coll_args *a, MPI_Info info,
                           MPI_Request *request, const char *fn)
{
    struct coll_req *c;
    MPI_Request r;
    int rc;

    (void)info; /* no hints are defined for persistent collectives */
    if ((rc = coll_req_make(comm, a, request, &c, fn)) != MPI_SUCCESS)
        return rc;
    r = bm_mpi_request_create(&coll_persistent_ops, comm, c, true, false);
    if (r == NULL) {
        coll_req_free(c);
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    *request = r;
    return MPI_SUCCESS;
}
