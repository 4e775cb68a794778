/* MPI_Comm_idup: MPI_Comm_dup as a nonblocking collective. The members
 * agree on a context slot by the same rounds as every communicator
 * creation (comm_cid.c), each round's 8-byte MAX reduction run here as a
 * small program of nonblocking steps: within a group, recursive doubling
 * (ranks beyond the largest power of two folded in first and sent the
 * result last); for an inter-communicator, that within each group on its
 * local_comm, then an exchange between the two leaders, then a binomial
 * broadcast from each leader. The steps advance from a PML progress hook,
 * so the agreement moves on while the program is in any MPI call (a peer
 * may wait in MPI_Barrier for this process to take its part), and from
 * MPI_Test/Wait on the request, which alone build the communicator once the
 * slot is agreed: copying attributes runs the program's callbacks, which
 * must not run inside another MPI call's progress. Messages travel in the
 * collective contexts with tag BM_MPI_COLL_TAG_IDUP_BASE plus the parent's
 * count of MPI_Comm_idup calls, so concurrent duplications of one parent
 * never mix (every member calls them in the same order). bitmover's choice
 * where the standard leaves one: attributes are copied when the request
 * completes, and hints are those of the parent at that time. */
#include "mpi/mpi_internal.h"
#include "mpi/mpi_request.h"
#include "pml/pml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum step_kind {
    STEP_XCHG,   /* send v to peer, receive theirs, keep the MAX */
    STEP_SEND,   /* send v to peer */
    STEP_RECV,   /* receive theirs, keep the MAX */
    STEP_ASSIGN, /* receive the result, replace v */
};

struct step {
    enum step_kind kind;
    MPI_Comm comm; /* the communicator of the step (collective context) */
    int peer;      /* rank in comm (remote rank if comm is an inter-communicator) */
};

struct idup {
    MPI_Comm parent; /* the request's reference keeps it alive */
    MPI_Comm *newcomm;
    int tag;
    struct step *steps;
    int nsteps, cur;
    struct bm_pml_request *sreq, *rreq;
    uint32_t v[2], in[2];
    struct bm_mpi_cid_round round;
    uint32_t floor;
    bool agreed, built, hooked, orphan;
    uint32_t slot;
    int error; /* MPI class of a failure */
    char what[BM_MPI_REQ_WHAT_MAX];
};

static const char fn_idup[] = "MPI_Comm_idup";

/* ---- the reduction program -------------------------------------------------- */

static bool add_step(struct step **steps, int *n, int *cap, enum step_kind kind, MPI_Comm comm,
                     int peer)
{
    if (*n == *cap) {
        int c = *cap ? 2 * *cap : 16;
        struct step *s = realloc(*steps, sizeof(*s) * (size_t)c);
        if (!s)
            return false;
        *steps = s;
        *cap = c;
    }
    (*steps)[(*n)++] = (struct step){kind, comm, peer};
    return true;
}

/* MAX over every member of the intra-communicator comm, result everywhere. */
static bool build_allreduce(struct step **steps, int *n, int *cap, MPI_Comm comm)
{
    int p = comm->size, r = comm->rank, pof2 = 1;
    while (pof2 * 2 <= p)
        pof2 *= 2;
    int rem = p - pof2, newrank;
    bool ok = true;
    if (r < 2 * rem) {
        if (r % 2 == 0) { /* folded into r + 1, gets the result back at the end */
            return add_step(steps, n, cap, STEP_SEND, comm, r + 1) &&
                   add_step(steps, n, cap, STEP_ASSIGN, comm, r + 1);
        }
        ok = add_step(steps, n, cap, STEP_RECV, comm, r - 1);
        newrank = r / 2;
    } else {
        newrank = r - rem;
    }
    for (int mask = 1; mask < pof2 && ok; mask <<= 1) {
        int pn = newrank ^ mask;
        int peer = pn < rem ? 2 * pn + 1 : pn + rem;
        ok = add_step(steps, n, cap, STEP_XCHG, comm, peer);
    }
    if (ok && r < 2 * rem)
        ok = add_step(steps, n, cap, STEP_SEND, comm, r - 1);
    return ok;
}

/* Broadcast from rank 0 of the intra-communicator comm (binomial tree). */
static bool build_bcast0(struct step **steps, int *n, int *cap, MPI_Comm comm)
{
    int p = comm->size, r = comm->rank, mask = 1;
    while (mask < p && !(r & mask))
        mask <<= 1;
    if (r != 0 && !add_step(steps, n, cap, STEP_ASSIGN, comm, r - mask))
        return false;
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (r + mask < p && !add_step(steps, n, cap, STEP_SEND, comm, r + mask))
            return false;
    return true;
}

static bool build_program(struct idup *d)
{
    int cap = 0;
    MPI_Comm c = d->parent;
    if (!c->inter)
        return build_allreduce(&d->steps, &d->nsteps, &cap, c);
    MPI_Comm local = c->local_comm;
    return build_allreduce(&d->steps, &d->nsteps, &cap, local) &&
           (local->rank != 0 || add_step(&d->steps, &d->nsteps, &cap, STEP_XCHG, c, 0)) &&
           build_bcast0(&d->steps, &d->nsteps, &cap, local);
}

/* ---- running it ----------------------------------------------------------------- */

static void fail(struct idup *d, bm_status_t st, const char *what, int peer)
{
    d->error = bm_mpi_class_of_status(st);
    snprintf(d->what, sizeof(d->what), "%s rank %d failed: %s", what, peer, bm_status_str(st));
}

/* Post the sends and receives of the current step. */
static bool step_post(struct idup *d)
{
    const struct step *s = &d->steps[d->cur];
    uint32_t cid = s->comm->context_id + 1;
    bm_status_t st;
    if (s->kind != STEP_SEND &&
        (st = bm_pml_irecv(d->in, sizeof(d->in), cid, s->peer, d->tag, &d->rreq)) != BM_OK) {
        d->rreq = NULL;
        fail(d, st, "receiving from", s->peer);
        return false;
    }
    if ((s->kind == STEP_XCHG || s->kind == STEP_SEND) &&
        (st = bm_pml_isend(d->v, sizeof(d->v), bm_mpi_comm_peer_world(s->comm, s->peer), cid,
                           s->comm->rank, d->tag, BM_PML_SEND_STANDARD, &d->sreq)) != BM_OK) {
        d->sreq = NULL;
        fail(d, st, "sending to", s->peer);
        return false;
    }
    return true;
}

/* The current step's transfers are done: apply what came in. */
static bool step_finish(struct idup *d)
{
    const struct step *s = &d->steps[d->cur];
    struct bm_pml_status ps = {.error = BM_OK};
    if (d->sreq) {
        bm_pml_request_test(d->sreq, &ps);
        bm_pml_request_free(d->sreq);
        d->sreq = NULL;
        if (ps.error != BM_OK) {
            fail(d, ps.error, "sending to", s->peer);
            return false;
        }
    }
    if (d->rreq) {
        bm_pml_request_test(d->rreq, &ps);
        bm_pml_request_free(d->rreq);
        d->rreq = NULL;
        if (ps.error == BM_OK && ps.count != sizeof(d->in))
            ps.error = BM_ERR_TRUNCATE;
        if (ps.error != BM_OK) {
            fail(d, ps.error, "receiving from", s->peer);
            return false;
        }
        for (int i = 0; i < 2; i++)
            d->v[i] = s->kind == STEP_ASSIGN || d->in[i] > d->v[i] ? d->in[i] : d->v[i];
    }
    return true;
}

static void round_start(struct idup *d)
{
    bm_mpi_cid_propose(d->floor, &d->round, d->v);
    d->cur = 0;
    if (d->nsteps > 0 && !step_post(d))
        bm_mpi_cid_abandon(&d->round);
}

/* Move the agreement on as far as it goes without waiting. True once it
 * ended (agreed, or failed). */
static bool advance(struct idup *d)
{
    while (!d->agreed && !d->error) {
        if (d->cur < d->nsteps) {
            if ((d->sreq && !bm_pml_request_done(d->sreq)) ||
                (d->rreq && !bm_pml_request_done(d->rreq)))
                return false;
            if (!step_finish(d)) {
                bm_mpi_cid_abandon(&d->round);
                break;
            }
            if (++d->cur < d->nsteps && !step_post(d)) {
                bm_mpi_cid_abandon(&d->round);
                break;
            }
            continue;
        }
        /* A round's reduction is complete. */
        bool done;
        int rc = bm_mpi_cid_decide(&d->round, d->v, &done, &d->slot, &d->floor, MPI_COMM_NULL,
                                   fn_idup);
        if (rc) {
            d->error = rc;
            snprintf(d->what, sizeof(d->what), "out of communicator context ids");
        } else if (done) {
            d->agreed = true;
        } else {
            round_start(d);
        }
    }
    return true;
}

static int idup_hook(void *arg);

/* The agreement ended: no more hook; an orphan (request freed) is done. */
static void ended(struct idup *d)
{
    if (d->hooked) {
        bm_pml_progress_unregister(idup_hook, d);
        d->hooked = false;
    }
    if (d->orphan) {
        /* Nobody takes the communicator: the others have theirs. */
        if (d->agreed)
            bm_mpi_cid_slot_free(d->slot);
        bm_mpi_comm_release(d->parent);
        free(d->steps);
        free(d);
    }
}

static int idup_hook(void *arg)
{
    struct idup *d = arg;
    if (!advance(d))
        return 0;
    ended(d);
    return 1;
}

/* ---- the request kind ----------------------------------------------------------- */

/* The agreement's state is also the hook's: under MPI_THREAD_MULTIPLE it
 * advances under the PML's progress lock, which the hook runs under. */
static bool idup_advance_locked(struct idup *d)
{
    bool taken = bm_pml_progress_lock();
    bool over = advance(d);
    if (over)
        ended(d);
    bm_pml_progress_unlock(taken);
    return over;
}

static bool idup_progress(MPI_Request r)
{
    struct idup *d = r->state;
    if (d->built || d->error)
        return true;
    if (!idup_advance_locked(d))
        return false;
    if (d->error)
        return true;
    /* Build here, outside any other call's progress: copy callbacks run. */
    int rc = bm_mpi_comm_dup_on_slot(d->parent, d->slot, MPI_INFO_NULL, d->newcomm, fn_idup);
    if (rc) {
        d->error = rc;
        snprintf(d->what, sizeof(d->what), "building the new communicator failed");
    }
    d->built = true;
    return true;
}

static int idup_query(MPI_Request r, MPI_Status *status, char *what, size_t what_len)
{
    struct idup *d = r->state;
    status->MPI_SOURCE = MPI_ANY_SOURCE;
    status->MPI_TAG = MPI_ANY_TAG;
    if (d->error)
        snprintf(what, what_len, "%s", d->what);
    return d->error;
}

static bool idup_release(MPI_Request r, int *err)
{
    struct idup *d = r->state;
    *err = MPI_SUCCESS;
    r->state = NULL;
    bool taken = bm_pml_progress_lock(); /* the hook may be at it (idup_advance_locked) */
    if (d->built || d->error || d->agreed) {
        if (d->agreed && !d->built)
            bm_mpi_cid_slot_free(d->slot);
        free(d->steps);
        free(d);
    } else {
        /* Freed while running: the others need this process's part, so the
         * hook finishes the agreement (holding its own reference on the
         * parent). */
        d->orphan = true;
        bm_mpi_comm_retain(d->parent);
    }
    bm_pml_progress_unlock(taken);
    return true;
}

static const struct bm_mpi_request_ops idup_ops = {
    .name = "MPI_Comm_idup",
    .progress = idup_progress,
    .query = idup_query,
    .release = idup_release,
    .cancel = bm_mpi_request_no_cancel,
    .start = bm_mpi_request_no_start,
};

int PMPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request)
{
    static const char fn[] = "MPI_Comm_idup";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)))
        return rc;
    if (!newcomm || !request)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL %s pointer",
                            newcomm ? "request" : "newcomm");
    struct idup *d = calloc(1, sizeof(*d));
    if (!d)
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
    d->parent = comm;
    d->newcomm = newcomm;
    d->floor = 1;
    d->tag = BM_MPI_COLL_TAG_IDUP_BASE | (int)(comm->idup_count++ & 0x0fffffffu);
    *newcomm = MPI_COMM_NULL;
    MPI_Request r;
    if (!build_program(d) ||
        !(r = bm_mpi_request_create(&idup_ops, comm, d, false, true))) {
        free(d->steps);
        free(d);
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    bool taken = bm_pml_progress_lock();
    round_start(d);
    if (!advance(d) && bm_pml_progress_register(idup_hook, d) == BM_OK)
        d->hooked = true;
    bm_pml_progress_unlock(taken);
    *request = r;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Comm_idup);
