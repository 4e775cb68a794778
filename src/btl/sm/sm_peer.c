/* Dead local peers. A process that crashes holds on to the fragments we
 * sent it; without a check, a sender would wait for them forever. While
 * fragments are out and nothing arrives, progress looks every
 * BM_BTL_SM_PEER_CHECK_MS whether each peer holding our fragments still
 * exists (bm_btl_sm_process_ended: gone, or a zombie). A dead peer is
 * reported through the error callback (BM_BTL_ERROR_PEER with
 * BM_ERR_PEER_GONE, so the PML can fail over or end the job with a clear
 * message), and then every fragment still sent to it completes with that
 * status, as btl.h requires. Later sends to it fail at once.
 *
 * The fragments that were sent to the dead peer are not reused at once:
 * another sender may be appending to the dead peer's FIFO at this very
 * moment and, between its exchange and its link store, still write into
 * the fragment that was the FIFO's tail. They stay in quarantine for a
 * second, far longer than that window of a few instructions, and then go
 * back to the pool.
 *
 * A peer that dies inside its own append to our FIFO (between the exchange
 * and the link store) leaves our FIFO cut at that point; such a death is
 * not recovered from (the window is a few instructions wide). */
#define BM_LOG_SUBSYS "btl/sm"
#include "btl/sm/sm.h"
#include "runtime/rte.h"
#include "util/clock.h"
#include "util/log.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define SM_QUARANTINE_NS 1000000000ull

/* f, sent to ep, is out of flight and kept from reuse until until. The
 * fragment marks are written with atomics: under MPI_THREAD_MULTIPLE the
 * pool hands out and senders push fragments under no lock while this runs
 * under the module's. */
static void frag_quarantine(struct bm_btl_sm_module *sm, struct bm_btl_sm_frag *f,
                            struct bm_btl_sm_endpoint *ep, uint64_t until)
{
    __atomic_store_n(&f->in_flight, false, __ATOMIC_RELAXED);
    __atomic_store_n(&f->dest, NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&f->quarantine_until_ns, until, __ATOMIC_RELAXED);
    bm_btl_sm_count_add(sm->mt, &sm->in_flight, -1);
    bm_btl_sm_count_add(sm->mt, &sm->nquarantined, 1);
    bm_btl_sm_outstanding_add(ep, -1);
}

void bm_btl_sm_frag_quarantine(struct bm_btl_sm_module *sm, struct bm_btl_sm_frag *f,
                               struct bm_btl_sm_endpoint *ep)
{
    frag_quarantine(sm, f, ep, bm_util_clock_now_ns() + SM_QUARANTINE_NS);
}

void bm_btl_sm_peer_failed(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep, int status,
                           const char *what)
{
    if (ep->failed)
        return;
    /* Sequentially consistent: a sender that pushes under no lock under
     * MPI_THREAD_MULTIPLE marks its fragment in flight and then reads this
     * flag; this pass sets the flag and then reads every fragment's mark,
     * so one of the two sees the other (sm_send.c frag_push_failed). */
    __atomic_store_n(&ep->failed, true, __ATOMIC_SEQ_CST);
    struct bm_btl_module *m = &sm->super;
    char text[320];
    snprintf(text, sizeof(text),
             "sm: local peer rank %d (pid %d) on %s: %s; %d sends to it are cancelled", ep->rank,
             (int)ep->pid, sm->self->hostname, what,
             __atomic_load_n(&ep->outstanding, __ATOMIC_RELAXED));
    struct bm_btl_error err = {
        .kind = BM_BTL_ERROR_PEER,
        .endpoint = (struct bm_btl_endpoint *)ep,
        .peer = ep->rank,
        .status = status,
        .what = text,
    };
    m->error_cb(m, &err, m->error_cbdata);
    uint64_t until = bm_util_clock_now_ns() + SM_QUARANTINE_NS;
    for (uint32_t i = 0; i < sm->nfrags; i++) {
        struct bm_btl_sm_frag *f = &sm->frags[i];
        if (!__atomic_load_n(&f->in_flight, __ATOMIC_SEQ_CST) ||
            __atomic_load_n(&f->dest, __ATOMIC_RELAXED) != ep)
            continue;
        frag_quarantine(sm, f, ep, until);
        if (f->amo)
            bm_btl_sm_amo_finish(sm, f, ep, status);
        else if (!f->internal && f->des.cbfunc)
            f->des.cbfunc(m, (struct bm_btl_endpoint *)ep, &f->des, status);
    }
}

static void sm_quarantine_release(struct bm_btl_sm_module *sm, uint64_t now)
{
    for (uint32_t i = 0; i < sm->nfrags && sm->nquarantined > 0; i++) {
        struct bm_btl_sm_frag *f = &sm->frags[i];
        if (!f->quarantine_until_ns || f->quarantine_until_ns > now)
            continue;
        __atomic_store_n(&f->quarantine_until_ns, 0, __ATOMIC_RELAXED);
        bm_btl_sm_count_add(sm->mt, &sm->nquarantined, -1);
        /* Back to the pool unless its owner still holds it (a caller-owned
         * descriptor not freed yet goes back when it is). */
        bool owned_by_us = f->internal || (f->des.flags & BM_BTL_DES_F_BTL_OWNED);
        if (owned_by_us || f->freed_in_quarantine) {
            f->freed_in_quarantine = false;
            bm_btl_sm_frag_release(sm, f);
        }
    }
}

/* A zombie counts as ended: it reads nothing more, and its /proc/<pid>/fd
 * is already empty, though kill(pid, 0) still succeeds until its parent
 * reaps it (a foreign launcher may be slow to). */
bool bm_btl_sm_process_ended(pid_t pid)
{
    if (kill(pid, 0) != 0)
        return errno == ESRCH;
    char path[64], buf[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return errno == ENOENT;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
    return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

int bm_btl_sm_peer_check(struct bm_btl_sm_module *sm)
{
    if (sm->config.peer_check_ms <= 0)
        return 0;
    uint64_t now = bm_util_clock_now_ns();
    if (now < sm->next_peer_check_ns)
        return 0;
    sm->next_peer_check_ns = now + (uint64_t)sm->config.peer_check_ms * 1000000ull;
    /* in_flight and outstanding: senders push under no lock under
     * MPI_THREAD_MULTIPLE (atomic adds) */
    int before = __atomic_load_n(&sm->in_flight, __ATOMIC_RELAXED);
    for (int r = 0; r < sm->nprocs && __atomic_load_n(&sm->in_flight, __ATOMIC_RELAXED) > 0; r++) {
        struct bm_btl_sm_endpoint *ep = sm->eps[r];
        if (!ep || ep->failed || ep->pid_unseen ||
            __atomic_load_n(&ep->outstanding, __ATOMIC_RELAXED) == 0)
            continue;
        if (bm_btl_sm_process_ended(ep->pid))
            bm_btl_sm_peer_failed(sm, ep, BM_ERR_PEER_GONE, "its process is gone");
    }
    if (sm->nquarantined > 0)
        sm_quarantine_release(sm, now);
    return before - __atomic_load_n(&sm->in_flight, __ATOMIC_RELAXED);
}

/* A peer that a check finds ended is reported only by a check
 * SM_CHECK_GRACE_NS or more after the first one that found it so: the
 * checks are the waits' (the collectives', the PML's idle ones), which
 * need not be quick, and a launcher that ends the job says first what
 * happened (bmrun holds a non-zero exit or an MPI_Abort 0.5 s for a signal
 * death it should report instead, then stops every rank; a signal death at
 * once) without every survivor adding an abort of its own. */
#define SM_CHECK_GRACE_NS 1000000000ull

bm_status_t bm_btl_sm_check(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep)
{
    if (!ep)
        return BM_OK;
    if (!__atomic_load_n(&ep->failed, __ATOMIC_RELAXED) && !ep->pid_unseen &&
        bm_btl_sm_process_ended(ep->pid)) {
        uint64_t now = bm_util_clock_now_ns();
        if (!ep->ended_ns)
            ep->ended_ns = now;
        else if (now - ep->ended_ns >= SM_CHECK_GRACE_NS)
            bm_btl_sm_peer_failed(sm, ep, BM_ERR_PEER_GONE, "its process is gone");
    }
    return __atomic_load_n(&ep->failed, __ATOMIC_RELAXED) ? BM_ERR_PEER_GONE : BM_OK;
}
