/* Generalized active-target synchronisation (post/start/complete/wait and
 * test) on the window flavour named by the first argument: each rank
 * exposes its window to its two neighbours and accesses theirs (groups of
 * two, or one with two ranks), with puts, gets and accumulates, many epochs
 * in a row so that a POST for the next epoch may arrive before the current
 * one ends; MPI_Win_test polled until the epoch ends; MPI_MODE_NOCHECK on
 * both sides after a barrier; a rank in no group at all; and a fence epoch
 * after PSCW on the same window. Every byte checked. */
#include "osc_common.h"

#include <stdbool.h>
#include <stdint.h>

#define WSIZE  (64 << 10)
#define EPOCHS 20

static int rank, nranks;

static MPI_Group neighbours(void)
{
    MPI_Group world, g;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int left = (rank + nranks - 1) % nranks, right = (rank + 1) % nranks;
    int members[2] = {left < right ? left : right, left < right ? right : left};
    MPI_Group_incl(world, left == right ? 1 : 2, members, &g);
    MPI_Group_free(&world);
    return g;
}

static void test_epochs(struct osc_win *w, int assert, bool use_test)
{
    int left = (rank + nranks - 1) % nranks, right = (rank + 1) % nranks;
    MPI_Group g = neighbours();
    const int n = 2000; /* ints per slot: one slot written by each neighbour */
    int32_t *src = malloc(sizeof(int32_t) * (size_t)n), *back = malloc(sizeof(int32_t) * n);
    int bad = 0;
    for (int e = 0; e < EPOCHS; e++) {
        int32_t *mine = (int32_t *)(void *)w->base;
        memset(mine, 0, WSIZE);
        if (assert & MPI_MODE_NOCHECK)
            MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_post(g, assert, w->win);
        MPI_Win_start(g, assert, w->win);
        for (int i = 0; i < n; i++)
            src[i] = e * 1000000 + rank * 10000 + i;
        /* slot 0 of the right neighbour, slot 1 of the left (accumulate) */
        MPI_Put(src, n, MPI_INT32_T, right, osc_disp(w, right, 0), n, MPI_INT32_T, w->win);
        MPI_Accumulate(src, n, MPI_INT32_T, left, osc_disp(w, left, 4 * n), n, MPI_INT32_T, MPI_SUM,
                       w->win);
        MPI_Win_complete(w->win);
        if (use_test) {
            int flag = 0;
            while (!flag)
                MPI_Win_test(w->win, &flag);
        } else {
            MPI_Win_wait(w->win);
        }
        for (int i = 0; i < n; i++) {
            bad += mine[i] != e * 1000000 + left * 10000 + i;
            bad += mine[n + i] != e * 1000000 + right * 10000 + i;
        }
        /* a get epoch reading what the neighbours hold now */
        if (assert & MPI_MODE_NOCHECK)
            MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_post(g, assert | MPI_MODE_NOPUT, w->win);
        MPI_Win_start(g, assert, w->win);
        MPI_Get(back, n, MPI_INT32_T, right, osc_disp(w, right, 0), n, MPI_INT32_T, w->win);
        MPI_Win_complete(w->win);
        MPI_Win_wait(w->win);
        for (int i = 0; i < n; i++)
            bad += back[i] != e * 1000000 + rank * 10000 + i;
    }
    BM_CHECK_MSG(bad == 0, "rank %d: %d wrong elements over %d epochs (assert %d, test %d)", rank,
                 bad, EPOCHS, assert, use_test);
    MPI_Group_free(&g);
    free(src);
    free(back);
}

/* Only ranks 0 and 1 take part; the others post and start nothing. */
static void test_subset(struct osc_win *w)
{
    if (nranks < 3)
        return;
    MPI_Group world, g;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int other = rank == 0 ? 1 : 0;
    MPI_Group_incl(world, 1, &other, &g);
    int64_t v = 4242 + rank, got = 0;
    if (rank < 2) {
        MPI_Win_post(g, 0, w->win);
        MPI_Win_start(g, 0, w->win);
        MPI_Put(&v, 1, MPI_INT64_T, other, osc_disp(w, other, 8), 1, MPI_INT64_T, w->win);
        MPI_Win_complete(w->win);
        MPI_Win_wait(w->win);
        memcpy(&got, (char *)w->base + 8, 8);
        BM_CHECK_MSG(got == 4242 + other, "rank %d: got %lld from rank %d", rank, (long long)got,
                     other);
    }
    MPI_Group_free(&g);
    MPI_Group_free(&world);
    /* a fence epoch on the same window afterwards */
    MPI_Win_fence(0, w->win);
    MPI_Put(&v, 1, MPI_INT64_T, (rank + 1) % nranks, osc_disp(w, (rank + 1) % nranks, 16), 1,
            MPI_INT64_T, w->win);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win);
    memcpy(&got, (char *)w->base + 16, 8);
    BM_CHECK_MSG(got == 4242 + (rank + nranks - 1) % nranks, "rank %d: fence after PSCW got %lld",
                 rank, (long long)got);
}

int main(int argc, char **argv)
{
    struct osc_win w;
    osc_test_begin(&argc, &argv, &rank, &nranks, &w, WSIZE);
    bm_test_current = "wait";
    test_epochs(&w, 0, false);
    bm_test_current = "test";
    test_epochs(&w, 0, true);
    bm_test_current = "nocheck";
    test_epochs(&w, MPI_MODE_NOCHECK, false);
    BM_RUN_W(test_subset);
    return osc_test_end(&w, "osc_pscw");
}
