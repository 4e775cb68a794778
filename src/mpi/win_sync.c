/* Synchronisation of one-sided communication: MPI_Win_fence (with its
 * assertions), post/start/complete/wait/test (PSCW), MPI_Win_lock/unlock
 * shared and exclusive, lock_all/unlock_all, the four flushes and
 * MPI_Win_sync, plus the epoch check every communication call makes.
 *
 * Completing operations to a target: transport operations end with their
 * callbacks (which say they reached the target, as the transport's flush
 * would), fetches
 * with their answers, and active messages through the PML's order: the
 * answer to a FLUSH or an UNLOCK, or a COMPLETE arriving, proves that the
 * target ran everything the origin sent before. A fence sends no message
 * per target: the processes add up, in one reduce-scatter, how many counted
 * active messages each must run, and each waits until it ran that many; a
 * window whose processes all reach each other through shared memory has
 * nothing to count and its fence is a barrier.
 *
 * Locks live at the target (a lock word: win.h). Processes that map the
 * target's segment take it with a compare-and-swap; the others ask the
 * target's agent, which grants in order of arrival. MPI_Win_lock takes the
 * lock before it returns (so that a process may lock itself and then use
 * loads and stores); MPI_Win_lock_all takes each target's shared lock at
 * the first operation on it. MPI_MODE_NOCHECK takes none. */
#define BM_LOG_SUBSYS "mpi/osc"
#include "util/log.h"

#include "mpi/win.h"
#include "pml/pml.h"

#include <stdlib.h>
#include <string.h>

/* ---- completion --------------------------------------------------------------- */

/* The transport operations to t are done when their callbacks ran, which
 * progress does; then the transport's flush makes them visible at the
 * target (btl.h: a put's callback only frees its buffer). Waiting for the
 * callbacks first matters: the transports' flush waits by spinning on
 * their own progress without ever giving the core away, and with more
 * processes than cores the target that must carry out an atomic then
 * waits for the CPU (measured: 6 ms per fetch-and-op with 4 processes on
 * 2 cores); by the time it is called here it has nothing left to wait for. */
static void flush_target(struct bm_osc_target *t)
{
    while (t->rdma_out > 0)
        bm_osc_progress();
    if (!t->flush_due)
        return;
    t->flush_due = false;
    if (t->m)
        bm_pml_rma_flush(&(struct bm_pml_rma_path){t->m, t->ep});
    if (t->amo_m && t->amo_m != t->m)
        bm_pml_rma_flush(&(struct bm_pml_rma_path){t->amo_m, t->amo_ep});
    if (t->win->acc_btl && t->acc_ep && t->acc_ep != t->ep)
        bm_pml_rma_flush(&(struct bm_pml_rma_path){t->win->acc_m, t->acc_ep});
}

void bm_osc_wait_rdma(MPI_Win win, int target)
{
    if (target >= 0) {
        flush_target(&win->t[target]);
        return;
    }
    for (int r = 0; r < win->nranks; r++)
        flush_target(&win->t[r]);
}

/* Send FLUSH to each target in [lo, hi) with active messages not yet
 * known to be done; *ops_out gets the records (kept: the caller frees
 * them once done), *n_out how many. */
static int flush_send(MPI_Win win, int lo, int hi, struct bm_osc_op ***ops_out, int *n_out)
{
    struct bm_osc_op **ops = NULL;
    int n = 0;
    for (int r = lo; r < hi; r++) {
        struct bm_osc_target *t = &win->t[r];
        if (t->am_unsynced == 0)
            continue;
        if (!ops && !(ops = calloc((size_t)(hi - lo), sizeof(*ops))))
            return MPI_ERR_NO_MEM;
        struct bm_osc_op *o = bm_osc_op_new(win, r, NULL, 0);
        if (!o) {
            free(ops);
            return MPI_ERR_NO_MEM;
        }
        o->keep = true;
        struct bm_osc_hdr h = {.type = BM_OSC_FLUSH, .opid = o->id};
        bm_osc_am_send(win, r, &h, NULL, 0, NULL, 0);
        t->am_unsynced = 0;
        ops[n++] = o;
    }
    *ops_out = ops;
    *n_out = n;
    return MPI_SUCCESS;
}

/* Wait for the answers to flush_send's FLUSHes and free their records. */
static void flush_wait(struct bm_osc_op **ops, int n)
{
    for (int i = 0; i < n; i++) {
        while (!ops[i]->done)
            bm_osc_progress();
        bm_osc_op_free(ops[i]);
    }
    free(ops);
}

static int flush_remote(MPI_Win win, int lo, int hi)
{
    struct bm_osc_op **ops;
    int n;
    int rc = flush_send(win, lo, hi, &ops, &n);
    if (rc == MPI_SUCCESS)
        flush_wait(ops, n);
    return rc;
}

int bm_osc_complete(MPI_Win win, int target, bool local)
{
    int lo = target < 0 ? 0 : target, hi = target < 0 ? win->nranks : target + 1;
    /* FLUSH first, so that it travels (with the batch of held-back
     * operations) while this process waits for the rest: the target's
     * answer proves everything before it ran whatever else is in flight */
    struct bm_osc_op **ops = NULL;
    int n = 0;
    int rc = local ? MPI_SUCCESS : flush_send(win, lo, hi, &ops, &n);
    /* at least one progress call, even with nothing to wait for: a process
     * spinning on its own window (a flush to itself) must still serve the
     * operations others sent to it */
    bm_osc_progress();
    bm_osc_wait_rdma(win, target);
    if (target < 0) {
        while (win->answers_out > 0)
            bm_osc_progress();
    } else {
        while (win->t[target].answers_out > 0)
            bm_osc_progress();
    }
    flush_wait(ops, n); /* answered already: FLUSHes count in answers_out */
    atomic_thread_fence(memory_order_seq_cst);
    return rc ? rc : win->error;
}

int bm_osc_report_async(MPI_Win win, const char *fn)
{
    if (!win->error)
        return MPI_SUCCESS;
    int cls = win->error;
    char what[sizeof(win->error_what)];
    memcpy(what, win->error_what, sizeof(what));
    win->error = 0;
    win->error_what[0] = '\0';
    return bm_osc_win_error(win, cls, fn, "%s", what[0] ? what : "an operation failed");
}

/* ---- locks -------------------------------------------------------------------- */

/* Take target's lock (this process holds none there yet). */
static int lock_take(MPI_Win win, int target, int type, const char *fn)
{
    struct bm_osc_target *t = &win->t[target];
    if (t->path == BM_OSC_PATH_SHM) {
        while (!bm_osc_lock_try(t->shm_lock, type))
            bm_osc_progress(); /* this process's agent may hold it for another */
    } else {
        struct bm_osc_op *o = bm_osc_op_new(win, target, NULL, 0);
        if (!o)
            return bm_osc_win_error(win, MPI_ERR_NO_MEM, fn, "out of memory");
        o->keep = true;
        struct bm_osc_hdr h = {.type = BM_OSC_LOCK, .op = (uint8_t)type, .opid = o->id};
        bm_osc_am_send(win, target, &h, NULL, 0, NULL, 0);
        while (!o->done)
            bm_osc_progress();
        int st = o->status;
        bm_osc_op_free(o);
        if (st != BM_OK)
            return bm_osc_win_error(win, MPI_ERR_OTHER, fn, "rank %d could not lock its window: %s",
                                    target, bm_status_str(st));
    }
    t->lock = type == BM_OSC_LOCK_EXCLUSIVE ? BM_OSC_LOCK_HELD_EXCLUSIVE : BM_OSC_LOCK_HELD_SHARED;
    return MPI_SUCCESS;
}

/* Release the locks of the targets in list (their operations completed
 * locally already): SHM ones at once, the others with UNLOCK messages sent
 * together and answered together. */
static int lock_release_many(MPI_Win win, const int *list, int n, const char *fn)
{
    struct bm_osc_op **ops = calloc((size_t)(n ? n : 1), sizeof(*ops));
    if (!ops)
        return bm_osc_win_error(win, MPI_ERR_NO_MEM, fn, "out of memory");
    int nops = 0, rc = MPI_SUCCESS;
    for (int i = 0; i < n; i++) {
        struct bm_osc_target *t = &win->t[list[i]];
        int type =
            t->lock == BM_OSC_LOCK_HELD_EXCLUSIVE ? BM_OSC_LOCK_EXCLUSIVE : BM_OSC_LOCK_SHARED;
        if (t->lock == BM_OSC_LOCK_NOCHECK) {
            /* nothing held, but the operations must be done at the target */
            int r2 = flush_remote(win, list[i], list[i] + 1);
            if (r2 && !rc)
                rc = r2;
        } else if (t->path == BM_OSC_PATH_SHM) {
            atomic_thread_fence(memory_order_seq_cst);
            bm_osc_lock_release(t->shm_lock, type);
            if (list[i] == win->rank)
                bm_osc_agent_grant(win);
        } else {
            struct bm_osc_op *o = bm_osc_op_new(win, list[i], NULL, 0);
            if (!o) {
                rc = MPI_ERR_NO_MEM;
                continue;
            }
            o->keep = true;
            struct bm_osc_hdr h = {.type = BM_OSC_UNLOCK, .op = (uint8_t)type, .opid = o->id};
            bm_osc_am_send(win, list[i], &h, NULL, 0, NULL, 0);
            ops[nops++] = o;
        }
        t->am_unsynced = 0;
        t->lock = BM_OSC_LOCK_NONE;
        t->locked_all = false;
    }
    for (int i = 0; i < nops; i++) {
        while (!ops[i]->done)
            bm_osc_progress();
        if (ops[i]->status != BM_OK && !rc)
            rc = MPI_ERR_OTHER;
        bm_osc_op_free(ops[i]);
    }
    free(ops);
    return rc;
}

int bm_osc_access_check(MPI_Win win, int target, const char *fn)
{
    struct bm_osc_target *t = &win->t[target];
    switch (win->access) {
    case BM_OSC_ACCESS_FENCE:
        return MPI_SUCCESS;
    case BM_OSC_ACCESS_PSCW:
        for (int i = 0; i < win->nstart_group; i++)
            if (win->start_group[i] == target)
                return MPI_SUCCESS;
        return bm_osc_win_error(win, MPI_ERR_RMA_SYNC, fn,
                                "rank %d is not in the group of MPI_Win_start", target);
    case BM_OSC_ACCESS_LOCK:
        if (t->lock != BM_OSC_LOCK_NONE)
            return MPI_SUCCESS;
        return bm_osc_win_error(win, MPI_ERR_RMA_SYNC, fn,
                                "rank %d's window is not locked by this process (MPI_Win_lock)",
                                target);
    case BM_OSC_ACCESS_LOCK_ALL:
        if (t->lock != BM_OSC_LOCK_NONE)
            return MPI_SUCCESS;
        t->locked_all = true;
        if (win->lock_all_nocheck) {
            t->lock = BM_OSC_LOCK_NOCHECK;
            return MPI_SUCCESS;
        }
        return lock_take(win, target, BM_OSC_LOCK_SHARED, fn);
    case BM_OSC_ACCESS_NONE:
        break;
    }
    return bm_osc_win_error(win, MPI_ERR_RMA_SYNC, fn,
                            "no access epoch is open on the window (call MPI_Win_fence, "
                            "MPI_Win_start, MPI_Win_lock or MPI_Win_lock_all first)");
}

static int check_assert(MPI_Win win, int mode, int allowed, const char *fn)
{
    if (mode & ~allowed)
        return bm_osc_win_error(win, MPI_ERR_ASSERT, fn, "invalid assertion 0x%x", mode);
    return MPI_SUCCESS;
}

static int check_target(MPI_Win win, int rank, const char *fn)
{
    if (rank < 0 || rank >= win->nranks)
        return bm_osc_win_error(win, MPI_ERR_RANK, fn, "invalid rank %d (the window has %d)", rank,
                                win->nranks);
    return MPI_SUCCESS;
}

static int win_lock_body(int lock_type, int rank, int mode, MPI_Win win)
{
    static const char fn[] = "MPI_Win_lock";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)) || (rc = check_assert(win, mode, MPI_MODE_NOCHECK, fn)))
        return rc;
    if (lock_type != MPI_LOCK_SHARED && lock_type != MPI_LOCK_EXCLUSIVE)
        return bm_osc_win_error(win, MPI_ERR_LOCKTYPE, fn,
                                "invalid lock type %d (MPI_LOCK_SHARED or MPI_LOCK_EXCLUSIVE)",
                                lock_type);
    if (rank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if ((rc = check_target(win, rank, fn)))
        return rc;
    if (win->access != BM_OSC_ACCESS_NONE && win->access != BM_OSC_ACCESS_LOCK &&
        win->access != BM_OSC_ACCESS_FENCE)
        return bm_osc_win_error(
            win, MPI_ERR_RMA_SYNC, fn, "another epoch is open on the window (%s)",
            win->access == BM_OSC_ACCESS_PSCW ? "MPI_Win_start" : "MPI_Win_lock_all");
    if (win->t[rank].lock != BM_OSC_LOCK_NONE)
        return bm_osc_win_error(win, MPI_ERR_RMA_SYNC, fn,
                                "rank %d's window is already locked by this process", rank);
    if (mode & MPI_MODE_NOCHECK) {
        win->t[rank].lock = BM_OSC_LOCK_NOCHECK;
    } else if ((rc = lock_take(win, rank,
                               lock_type == MPI_LOCK_EXCLUSIVE ? BM_OSC_LOCK_EXCLUSIVE
                                                               : BM_OSC_LOCK_SHARED,
                               fn))) {
        return rc;
    }
    win->access = BM_OSC_ACCESS_LOCK;
    win->nlocked++;
    return MPI_SUCCESS;
}

int PMPI_Win_lock(int lock_type, int rank, int mode, MPI_Win win)
{
    BM_OSC_LOCKED(win_lock_body(lock_type, rank, mode, win));
}
BM_MPI_ALIAS(Win_lock);

static int win_unlock_body(int rank, MPI_Win win)
{
    static const char fn[] = "MPI_Win_unlock";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)))
        return rc;
    if (rank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if ((rc = check_target(win, rank, fn)))
        return rc;
    if (win->access != BM_OSC_ACCESS_LOCK || win->t[rank].lock == BM_OSC_LOCK_NONE)
        return bm_osc_win_error(win, MPI_ERR_RMA_SYNC, fn,
                                "rank %d's window is not locked by this process (MPI_Win_lock)",
                                rank);
    struct bm_osc_target *t = &win->t[rank];
    if (t->path == BM_OSC_PATH_SHM && t->lock != BM_OSC_LOCK_NOCHECK && !t->rdma_out &&
        !t->answers_out && !win->error && rank != win->rank) {
        /* loads and stores only: order them, then let the lock go */
        atomic_thread_fence(memory_order_seq_cst);
        bm_osc_lock_release(t->shm_lock, t->lock == BM_OSC_LOCK_HELD_EXCLUSIVE
                                             ? BM_OSC_LOCK_EXCLUSIVE
                                             : BM_OSC_LOCK_SHARED);
        t->lock = BM_OSC_LOCK_NONE;
        t->am_unsynced = 0;
        if (--win->nlocked == 0)
            win->access = BM_OSC_ACCESS_NONE;
        return MPI_SUCCESS;
    }
    /* nothing in flight but active messages (tcp): UNLOCK goes at once,
     * behind them (and with the batch of held-back ones); waiting for its
     * answer runs progress */
    if (t->path != BM_OSC_PATH_AM || t->rdma_out || t->answers_out || t->flush_due)
        bm_osc_complete(win, rank, true);
    rc = lock_release_many(win, &rank, 1, fn);
    if (--win->nlocked == 0)
        win->access = BM_OSC_ACCESS_NONE;
    if (rc)
        return bm_osc_win_error(win, rc, fn, "releasing rank %d's lock failed", rank);
    /* failures the target reported come before its answer to the unlock */
    return bm_osc_report_async(win, fn);
}

int PMPI_Win_unlock(int rank, MPI_Win win)
{
    BM_OSC_LOCKED(win_unlock_body(rank, win));
}
BM_MPI_ALIAS(Win_unlock);

static int win_lock_all_body(int mode, MPI_Win win)
{
    static const char fn[] = "MPI_Win_lock_all";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)) || (rc = check_assert(win, mode, MPI_MODE_NOCHECK, fn)))
        return rc;
    if (win->access != BM_OSC_ACCESS_NONE && win->access != BM_OSC_ACCESS_FENCE)
        return bm_osc_win_error(win, MPI_ERR_RMA_SYNC, fn,
                                "another epoch is open on the window (%s)",
                                win->access == BM_OSC_ACCESS_PSCW ? "MPI_Win_start" : "a lock");
    win->access = BM_OSC_ACCESS_LOCK_ALL;
    win->lock_all_nocheck = (mode & MPI_MODE_NOCHECK) != 0;
    return MPI_SUCCESS;
}

int PMPI_Win_lock_all(int mode, MPI_Win win)
{
    BM_OSC_LOCKED(win_lock_all_body(mode, win));
}
BM_MPI_ALIAS(Win_lock_all);

static int win_unlock_all_body(MPI_Win win)
{
    static const char fn[] = "MPI_Win_unlock_all";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)))
        return rc;
    if (win->access != BM_OSC_ACCESS_LOCK_ALL)
        return bm_osc_win_error(win, MPI_ERR_RMA_SYNC, fn,
                                "MPI_Win_lock_all was not called on the window");
    bm_osc_complete(win, -1, true);
    int *list = malloc(sizeof(int) * (size_t)win->nranks), n = 0;
    if (!list)
        return bm_osc_win_error(win, MPI_ERR_NO_MEM, fn, "out of memory");
    for (int r = 0; r < win->nranks; r++)
        if (win->t[r].lock != BM_OSC_LOCK_NONE)
            list[n++] = r;
    rc = lock_release_many(win, list, n, fn);
    free(list);
    win->access = BM_OSC_ACCESS_NONE;
    if (rc)
        return bm_osc_win_error(win, rc, fn, "releasing the locks failed");
    return bm_osc_report_async(win, fn);
}

int PMPI_Win_unlock_all(MPI_Win win)
{
    BM_OSC_LOCKED(win_unlock_all_body(win));
}
BM_MPI_ALIAS(Win_unlock_all);

/* ---- flushes ------------------------------------------------------------------------ */

/* A flush of a target in this process's memory map with nothing in
 * flight: the stores are done; order them before what follows. Progress
 * only every 8th time: a program that spins on flushes still serves the
 * agent, without a transport poll per flush. */
static bool flush_fast(MPI_Win win, int rank)
{
    static unsigned calls;
    if (win == MPI_WIN_NULL || win->magic != BM_MPI_MAGIC_WIN || rank < 0 || rank >= win->nranks ||
        win->error)
        return false;
    struct bm_osc_target *t = &win->t[rank];
    if (t->path != BM_OSC_PATH_SHM || t->lock == BM_OSC_LOCK_NONE || t->rdma_out ||
        t->answers_out || t->am_unsynced ||
        (win->access != BM_OSC_ACCESS_LOCK && win->access != BM_OSC_ACCESS_LOCK_ALL))
        return false;
    bm_osc_fence();
    if ((++calls & 7) == 0)
        bm_osc_progress();
    return true;
}

static int flush_common(MPI_Win win, int rank, bool local, const char *fn)
{
    int rc;
    if (bm_mpi_state == BM_MPI_STATE_RUNNING && flush_fast(win, rank))
        return MPI_SUCCESS;
    if ((rc = bm_osc_check_win(win, fn)))
        return rc;
    if (rank != -1 && rank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if (rank != -1 && (rc = check_target(win, rank, fn)))
        return rc;
    bool passive = win->access == BM_OSC_ACCESS_LOCK_ALL ||
                   (win->access == BM_OSC_ACCESS_LOCK &&
                    (rank == -1 || win->t[rank].lock != BM_OSC_LOCK_NONE));
    if (!passive)
        return bm_osc_win_error(win, MPI_ERR_RMA_SYNC, fn,
                                "flushes are for passive-target epochs: %s",
                                rank == -1 ? "no MPI_Win_lock or MPI_Win_lock_all is held"
                                           : "the target is not locked by this process");
    /* held-back operations go now; a flush's FLUSH takes them along */
    if (local)
        bm_osc_batch_push(win, rank < 0 ? 0 : rank, rank < 0 ? win->nranks : rank + 1);
    rc = bm_osc_complete(win, rank, local);
    if (rc == MPI_ERR_NO_MEM)
        return bm_osc_win_error(win, rc, fn, "out of memory");
    return rc ? bm_osc_report_async(win, fn) : MPI_SUCCESS;
}

static int win_flush_body(int rank, MPI_Win win)
{
    return flush_common(win, rank, false, "MPI_Win_flush");
}

int PMPI_Win_flush(int rank, MPI_Win win)
{
    BM_OSC_LOCKED(win_flush_body(rank, win));
}
BM_MPI_ALIAS(Win_flush);

static int win_flush_all_body(MPI_Win win)
{
    return flush_common(win, -1, false, "MPI_Win_flush_all");
}

int PMPI_Win_flush_all(MPI_Win win)
{
    BM_OSC_LOCKED(win_flush_all_body(win));
}
BM_MPI_ALIAS(Win_flush_all);

static int win_flush_local_body(int rank, MPI_Win win)
{
    return flush_common(win, rank, true, "MPI_Win_flush_local");
}

int PMPI_Win_flush_local(int rank, MPI_Win win)
{
    BM_OSC_LOCKED(win_flush_local_body(rank, win));
}
BM_MPI_ALIAS(Win_flush_local);

static int win_flush_local_all_body(MPI_Win win)
{
    return flush_common(win, -1, true, "MPI_Win_flush_local_all");
}

int PMPI_Win_flush_local_all(MPI_Win win)
{
    BM_OSC_LOCKED(win_flush_local_all_body(win));
}
BM_MPI_ALIAS(Win_flush_local_all);

static int win_sync_body(MPI_Win win)
{
    static const char fn[] = "MPI_Win_sync";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)))
        return rc;
    /* the unified model: memory is coherent; order this process's loads
     * and stores against the window's other accesses */
    atomic_thread_fence(memory_order_seq_cst);
    bm_osc_progress();
    return MPI_SUCCESS;
}

int PMPI_Win_sync(MPI_Win win)
{
    BM_OSC_LOCKED(win_sync_body(win));
}
BM_MPI_ALIAS(Win_sync);

/* ---- fence ---------------------------------------------------------------------------- */

/* Every process of the window maps one segment: a barrier in it (a
 * counter and a generation) costs a few cache-line transfers, where the
 * point-to-point barrier of the collectives costs messages. */
static void shm_barrier(MPI_Win win)
{
    struct bm_osc_shm_bar *b = win->bar;
    uint32_t gen = atomic_load_explicit(&b->gen, memory_order_acquire);
    if (atomic_fetch_add_explicit(&b->count, 1, memory_order_acq_rel) ==
        (uint32_t)win->nranks - 1) {
        atomic_store_explicit(&b->count, 0, memory_order_relaxed);
        atomic_store_explicit(&b->gen, gen + 1, memory_order_release);
        return;
    }
    /* progress meanwhile: a process may still need this one's agent for
     * another window, and the idle polls give the core away when the node
     * has more processes than cores */
    while (atomic_load_explicit(&b->gen, memory_order_acquire) == gen)
        bm_osc_progress();
}

static int win_fence_body(int mode, MPI_Win win)
{
    static const char fn[] = "MPI_Win_fence";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)) ||
        (rc = check_assert(
             win, mode, MPI_MODE_NOSTORE | MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED,
             fn)))
        return rc;
    if (win->access != BM_OSC_ACCESS_NONE && win->access != BM_OSC_ACCESS_FENCE)
        return bm_osc_win_error(
            win, MPI_ERR_RMA_SYNC, fn, "a %s epoch is open on the window; close it before a fence",
            win->access == BM_OSC_ACCESS_PSCW ? "PSCW (MPI_Win_start)" : "passive-target (lock)");
    if (win->exposure_pscw)
        return bm_osc_win_error(win, MPI_ERR_RMA_SYNC, fn,
                                "MPI_Win_post's exposure epoch is open; call MPI_Win_wait first");
    int err = MPI_SUCCESS;
    bool sync_done = false;
    if (!(mode & MPI_MODE_NOPRECEDE)) {
        /* this process's operations: done here (transports, fetches),
         * held-back ones sent (the count below includes them) */
        bm_osc_batch_push(win, 0, win->nranks);
        err = bm_osc_complete(win, -1, true);
        if (!win->all_shm) {
            /* how many counted messages each process must run */
            uint32_t *counts = malloc(sizeof(uint32_t) * (size_t)win->nranks), expect = 0;
            if (!counts)
                return bm_osc_win_error(win, MPI_ERR_NO_MEM, fn, "out of memory");
            for (int r = 0; r < win->nranks; r++) {
                counts[r] = win->t[r].am_counted;
                win->t[r].am_counted = 0;
                win->t[r].am_unsynced = 0;
            }
            BM_OSC_UNLOCKED(rc, PMPI_Reduce_scatter_block(counts, &expect, 1, MPI_UINT32_T, MPI_SUM,
                                                          win->comm));
            free(counts);
            if (rc)
                return rc;
            while (win->am_in_counted < expect)
                bm_osc_progress();
            win->am_in_counted -= expect;
            sync_done = true;
        }
    }
    atomic_thread_fence(memory_order_seq_cst);
    /* the next epoch starts once every process is done with this one; a
     * window in shared memory has no other synchronisation at all */
    if (!(mode & MPI_MODE_NOSUCCEED) || (!sync_done && !(mode & MPI_MODE_NOPRECEDE))) {
        if (win->all_shm && win->bar)
            shm_barrier(win);
        else {
            BM_OSC_UNLOCKED(rc, bm_mpi_coll_barrier(win->comm, fn));
            if (rc)
                return rc;
        }
    }
    win->access = mode & MPI_MODE_NOSUCCEED ? BM_OSC_ACCESS_NONE : BM_OSC_ACCESS_FENCE;
    return err ? bm_osc_report_async(win, fn) : MPI_SUCCESS;
}

int PMPI_Win_fence(int mode, MPI_Win win)
{
    BM_OSC_LOCKED(win_fence_body(mode, win));
}
BM_MPI_ALIAS(Win_fence);

/* ---- PSCW ------------------------------------------------------------------------------ */

/* The window's comm ranks of group's members; MPI_ERR_GROUP when one is not
 * in the window. */
static int group_ranks(MPI_Win win, MPI_Group group, int **out, int *n_out, const char *fn)
{
    if (group == MPI_GROUP_NULL || group->magic != BM_MPI_MAGIC_GROUP)
        return bm_osc_win_error(win, MPI_ERR_GROUP, fn, "invalid group");
    int *r = malloc(sizeof(int) * (size_t)(group->size ? group->size : 1));
    if (!r)
        return bm_osc_win_error(win, MPI_ERR_NO_MEM, fn, "out of memory");
    for (int i = 0; i < group->size; i++) {
        r[i] = bm_osc_rank_of_world(win, group->world_ranks[i]);
        if (r[i] < 0) {
            free(r);
            return bm_osc_win_error(win, MPI_ERR_GROUP, fn,
                                    "member %d of the group (world rank %d) is not in the window",
                                    i, group->world_ranks[i]);
        }
    }
    *out = r;
    *n_out = group->size;
    return MPI_SUCCESS;
}

static int win_post_body(MPI_Group group, int mode, MPI_Win win)
{
    static const char fn[] = "MPI_Win_post";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)) ||
        (rc = check_assert(win, mode, MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT, fn)))
        return rc;
    if (win->exposure_pscw)
        return bm_osc_win_error(win, MPI_ERR_RMA_SYNC, fn,
                                "MPI_Win_post was already called; call MPI_Win_wait first");
    int *ranks, n;
    if ((rc = group_ranks(win, group, &ranks, &n, fn)))
        return rc;
    free(win->post_group);
    win->post_group = ranks;
    win->npost_group = n;
    win->exposure_pscw = true;
    /* this process's stores to its window come before the origins' accesses */
    atomic_thread_fence(memory_order_seq_cst);
    if (!(mode & MPI_MODE_NOCHECK))
        for (int i = 0; i < n; i++) {
            struct bm_osc_hdr h = {.type = BM_OSC_POST};
            bm_osc_am_send(win, ranks[i], &h, NULL, 0, NULL, 0);
        }
    return MPI_SUCCESS;
}

int PMPI_Win_post(MPI_Group group, int mode, MPI_Win win)
{
    BM_OSC_LOCKED(win_post_body(group, mode, win));
}
BM_MPI_ALIAS(Win_post);

static int win_start_body(MPI_Group group, int mode, MPI_Win win)
{
    static const char fn[] = "MPI_Win_start";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)) || (rc = check_assert(win, mode, MPI_MODE_NOCHECK, fn)))
        return rc;
    if (win->access != BM_OSC_ACCESS_NONE && win->access != BM_OSC_ACCESS_FENCE)
        return bm_osc_win_error(win, MPI_ERR_RMA_SYNC, fn,
                                "another access epoch is open on the window");
    int *ranks, n;
    if ((rc = group_ranks(win, group, &ranks, &n, fn)))
        return rc;
    free(win->start_group);
    win->start_group = ranks;
    win->nstart_group = n;
    /* each target's MPI_Win_post must have come (MPI_MODE_NOCHECK: the
     * program guarantees it, and the matching post sent nothing) */
    if (!(mode & MPI_MODE_NOCHECK))
        for (int i = 0; i < n; i++) {
            struct bm_osc_target *t = &win->t[ranks[i]];
            while (t->posts == t->posts_used)
                bm_osc_progress();
            t->posts_used++;
        }
    atomic_thread_fence(memory_order_seq_cst);
    win->access = BM_OSC_ACCESS_PSCW;
    return MPI_SUCCESS;
}

int PMPI_Win_start(MPI_Group group, int mode, MPI_Win win)
{
    BM_OSC_LOCKED(win_start_body(group, mode, win));
}
BM_MPI_ALIAS(Win_start);

static int win_complete_body(MPI_Win win)
{
    static const char fn[] = "MPI_Win_complete";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)))
        return rc;
    if (win->access != BM_OSC_ACCESS_PSCW)
        return bm_osc_win_error(win, MPI_ERR_RMA_SYNC, fn,
                                "MPI_Win_start was not called on the window");
    int err = bm_osc_complete(win, -1, true);
    /* in order behind this origin's operations: the target knows they ran */
    for (int i = 0; i < win->nstart_group; i++) {
        struct bm_osc_hdr h = {.type = BM_OSC_COMPLETE};
        bm_osc_am_send(win, win->start_group[i], &h, NULL, 0, NULL, 0);
        win->t[win->start_group[i]].am_unsynced = 0;
    }
    win->access = BM_OSC_ACCESS_NONE;
    return err ? bm_osc_report_async(win, fn) : MPI_SUCCESS;
}

int PMPI_Win_complete(MPI_Win win)
{
    BM_OSC_LOCKED(win_complete_body(win));
}
BM_MPI_ALIAS(Win_complete);

static void wait_finish(MPI_Win win)
{
    win->completes -= (uint32_t)win->npost_group;
    win->exposure_pscw = false;
    atomic_thread_fence(memory_order_seq_cst);
}

static int win_wait_body(MPI_Win win)
{
    static const char fn[] = "MPI_Win_wait";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)))
        return rc;
    if (!win->exposure_pscw)
        return bm_osc_win_error(win, MPI_ERR_RMA_SYNC, fn,
                                "MPI_Win_post was not called on the window");
    while (win->completes < (uint32_t)win->npost_group)
        bm_osc_progress();
    wait_finish(win);
    return bm_osc_report_async(win, fn);
}

int PMPI_Win_wait(MPI_Win win)
{
    BM_OSC_LOCKED(win_wait_body(win));
}
BM_MPI_ALIAS(Win_wait);

static int win_test_body(MPI_Win win, int *flag)
{
    static const char fn[] = "MPI_Win_test";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)))
        return rc;
    if (!flag)
        return bm_osc_win_error(win, MPI_ERR_ARG, fn, "NULL flag pointer");
    if (!win->exposure_pscw)
        return bm_osc_win_error(win, MPI_ERR_RMA_SYNC, fn,
                                "MPI_Win_post was not called on the window");
    if (win->completes < (uint32_t)win->npost_group)
        bm_osc_progress();
    *flag = win->completes >= (uint32_t)win->npost_group;
    if (*flag)
        wait_finish(win);
    return *flag ? bm_osc_report_async(win, fn) : MPI_SUCCESS;
}

int PMPI_Win_test(MPI_Win win, int *flag)
{
    BM_OSC_LOCKED(win_test_body(win, flag));
}
BM_MPI_ALIAS(Win_test);
