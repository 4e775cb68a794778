/* Passive-target one-sided communication on the window flavour named by
 * the first argument: MPI_Win_lock/unlock exclusive and shared (with and
 * without MPI_MODE_NOCHECK), a rank locking its own window and using loads
 * and stores, lock_all/unlock_all, every flush (flush, flush_all,
 * flush_local, flush_local_all), the request-based operations (Rput, Rget,
 * Raccumulate, Rget_accumulate waited on and tested), MPI_Win_sync with a
 * flag polled in the window (the unified model), and an exclusive lock
 * that really excludes: every rank in turn increments a counter held by
 * rank 0 with get + put under MPI_LOCK_EXCLUSIVE, so a lock that let two
 * ranks in at once would lose increments. Every byte is checked. */
#include "osc_common.h"

#include <stdint.h>

#define WSIZE (256 << 10)

static int rank, nranks;

/* Each rank writes its own slice of every rank's window under a shared
 * lock, flushing in the middle, and reads it back. */
static void test_shared_lock(struct osc_win *w)
{
    const size_t slice = WSIZE / 16;
    unsigned char *src = malloc(slice), *back = malloc(slice);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int t = 0; t < nranks; t++) {
        MPI_Aint off = (MPI_Aint)(slice * (size_t)(rank % 16));
        bm_test_fill(src, slice, 31 * t + rank);
        MPI_Win_lock(MPI_LOCK_SHARED, t, 0, w->win);
        MPI_Put(src, (int)(slice / 2), MPI_BYTE, t, osc_disp(w, t, off), (int)(slice / 2), MPI_BYTE,
                w->win);
        MPI_Win_flush(t, w->win);
        MPI_Put(src + slice / 2, (int)(slice / 2), MPI_BYTE, t,
                osc_disp(w, t, off) + (MPI_Aint)(slice / 2), (int)(slice / 2), MPI_BYTE, w->win);
        MPI_Win_flush_local(t, w->win);
        memset(src, 0, slice); /* the put above is complete locally: the buffer is free */
        MPI_Win_flush(t, w->win);
        memset(back, 0, slice);
        MPI_Get(back, (int)slice, MPI_BYTE, t, osc_disp(w, t, off), (int)slice, MPI_BYTE, w->win);
        MPI_Win_unlock(t, w->win);
        size_t bad = bm_test_bad_bytes(back, slice, 31 * t + rank);
        BM_CHECK_MSG(bad == 0, "rank %d: read back %zu bad bytes from rank %d", rank, bad, t);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* and the target sees them in its own memory */
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win);
    for (int o = 0; o < nranks && o < 16; o++) {
        size_t bad =
            bm_test_bad_bytes((unsigned char *)w->base + slice * (size_t)o, slice, 31 * rank + o);
        BM_CHECK_MSG(bad == 0, "rank %d: slice of rank %d has %zu bad bytes", rank, o, bad);
    }
    MPI_Win_unlock(rank, w->win);
    free(src);
    free(back);
}

/* A counter at rank 0 incremented by read-modify-write (not atomic on
 * its own) under an exclusive lock, rounds times by every rank. */
static void test_exclusive(struct osc_win *w)
{
    const int rounds = 20;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win);
    if (rank == 0)
        memset(w->base, 0, 8);
    MPI_Win_unlock(rank, w->win);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < rounds; i++) {
        int64_t v = 0;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w->win);
        MPI_Get(&v, 1, MPI_INT64_T, 0, osc_disp(w, 0, 0), 1, MPI_INT64_T, w->win);
        MPI_Win_flush(0, w->win);
        v++;
        MPI_Put(&v, 1, MPI_INT64_T, 0, osc_disp(w, 0, 0), 1, MPI_INT64_T, w->win);
        MPI_Win_unlock(0, w->win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w->win);
        int64_t got;
        memcpy(&got, w->base, 8);
        MPI_Win_unlock(0, w->win);
        BM_CHECK_MSG(got == (int64_t)rounds * nranks, "counter %lld, expected %d", (long long)got,
                     rounds * nranks);
    }
}

/* lock_all, request-based operations, flush_all / flush_local_all. */
static void test_lock_all_requests(struct osc_win *w, int assert)
{
    const int n = 1000;
    int32_t *src = malloc(sizeof(int32_t) * (size_t)n), *res = malloc(sizeof(int32_t) * (size_t)n);
    int32_t *old = malloc(sizeof(int32_t) * (size_t)n);
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win);
    memset(w->base, 0, WSIZE);
    MPI_Win_unlock(rank, w->win);
    /* MPI_PROC_NULL: its "lock" opens no epoch and needs none (MPICH's
     * rma/rmanull): the request completes at once */
    MPI_Request pn = MPI_REQUEST_NULL;
    BM_CHECK_EQ_INT(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, MPI_PROC_NULL, 0, w->win), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Rput(src, n, MPI_INT32_T, MPI_PROC_NULL, 0, n, MPI_INT32_T, w->win, &pn),
                    MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Win_unlock(MPI_PROC_NULL, w->win), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Wait(&pn, MPI_STATUS_IGNORE), MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < n; i++)
        src[i] = rank * 100000 + i;
    MPI_Win_lock_all(assert, w->win);
    MPI_Request rq[4];
    MPI_Rput(src, n, MPI_INT32_T, right, osc_disp(w, right, 0), n, MPI_INT32_T, w->win, &rq[0]);
    MPI_Raccumulate(src, n, MPI_INT32_T, right, osc_disp(w, right, 4 * n), n, MPI_INT32_T, MPI_SUM,
                    w->win, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    MPI_Win_flush_all(w->win);
    MPI_Barrier(MPI_COMM_WORLD);
    /* left has put into this rank; read the right's area back */
    MPI_Rget(res, n, MPI_INT32_T, right, osc_disp(w, right, 0), n, MPI_INT32_T, w->win, &rq[2]);
    MPI_Rget_accumulate(src, n, MPI_INT32_T, old, n, MPI_INT32_T, right, osc_disp(w, right, 4 * n),
                        n, MPI_INT32_T, MPI_SUM, w->win, &rq[3]);
    int done = 0;
    while (!done)
        MPI_Testall(2, rq + 2, &done, MPI_STATUSES_IGNORE);
    MPI_Win_flush_local_all(w->win);
    int bad = 0, bad2 = 0;
    for (int i = 0; i < n; i++) {
        bad += res[i] != rank * 100000 + i;
        bad2 += old[i] != rank * 100000 + i;
    }
    BM_CHECK_MSG(bad == 0, "rank %d: Rget read %d wrong elements", rank, bad);
    BM_CHECK_MSG(bad2 == 0, "rank %d: Rget_accumulate fetched %d wrong elements", rank, bad2);
    MPI_Win_unlock_all(w->win);
    MPI_Barrier(MPI_COMM_WORLD);
    const int32_t *mine = (const int32_t *)(void *)w->base;
    bad = 0;
    for (int i = 0; i < n; i++)
        bad += mine[i] != left * 100000 + i || mine[n + i] != 2 * (left * 100000 + i);
    BM_CHECK_MSG(bad == 0, "rank %d: %d wrong elements from the left's requests", rank, bad);
    free(src);
    free(res);
    free(old);
}

/* The unified model: a flag put into the window is seen by polling loads
 * after MPI_Win_sync. */
static void test_sync_flag(struct osc_win *w)
{
    int right = (rank + 1) % nranks;
    volatile int32_t *flag = (volatile int32_t *)(void *)((char *)w->base + 64);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win);
    *flag = 0;
    MPI_Win_unlock(rank, w->win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, w->win);
    int32_t one = 1;
    MPI_Put(&one, 1, MPI_INT32_T, right, osc_disp(w, right, 64), 1, MPI_INT32_T, w->win);
    MPI_Win_flush(right, w->win);
    double t0 = MPI_Wtime();
    while (*flag != 1 && MPI_Wtime() - t0 < 30) {
        MPI_Win_sync(w->win);
        /* the put may travel as a message to this rank's agent */
        int f;
        MPI_Iprobe(MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &f, MPI_STATUS_IGNORE);
    }
    BM_CHECK_MSG(*flag == 1, "rank %d: the flag never arrived", rank);
    MPI_Win_unlock_all(w->win);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    struct osc_win w;
    osc_test_begin(&argc, &argv, &rank, &nranks, &w, WSIZE);
    BM_RUN_W(test_shared_lock);
    BM_RUN_W(test_exclusive);
    bm_test_current = "lock_all";
    test_lock_all_requests(&w, 0);
    bm_test_current = "lock_all nocheck";
    test_lock_all_requests(&w, MPI_MODE_NOCHECK);
    BM_RUN_W(test_sync_flag);
    return osc_test_end(&w, "osc_lock");
}
