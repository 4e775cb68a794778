/* One-sided communication in fence epochs, on the window flavour named by
 * the first argument: puts and gets of 0 bytes to 1 MiB (sizes around the
 * transports' message and fragment limits, odd offsets) to and from the
 * next rank, every byte checked together with the guard bytes around it;
 * accumulates of MPI_SUM from every rank into every rank's window, short
 * and long (cut into several messages on the agent path); get_accumulate,
 * fetch_and_op and compare_and_swap inside a fence epoch; the fence
 * assertions; MPI_PROC_NULL targets. */
#include "osc_common.h"

#include <stdint.h>

#define REGION (1 << 20)
#define WSIZE  (REGION + 4096)
#define GUARD  0xa5

static int rank, nranks;

static const size_t sizes[] = {0, 1, 7, 8, 63, 64, 100, 4095, 4096, 4097, 32768, 65537, REGION};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static size_t guard_errors(const unsigned char *b, size_t from, size_t to)
{
    size_t bad = 0;
    for (size_t i = from; i < to; i++)
        bad += b[i] != GUARD;
    return bad;
}

static void test_put(struct osc_win *w)
{
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    unsigned char *src = malloc(REGION);
    for (size_t k = 0; k < NSIZES; k++) {
        /* sizes grow: guarding up to the end of this one (and 4 KiB past)
         * also covers what the previous one wrote */
        size_t len = sizes[k], off = 3 + (k % 5), span = off + len + 4096;
        if (span > WSIZE)
            span = WSIZE;
        memset(w->base, GUARD, span);
        bm_test_fill(src, len, (int)k * 131 + rank);
        MPI_Win_fence(0, w->win);
        MPI_Put(src, (int)len, MPI_BYTE, right, osc_disp(w, right, (MPI_Aint)off), (int)len,
                MPI_BYTE, w->win);
        MPI_Win_fence(0, w->win);
        unsigned char *b = (unsigned char *)w->base;
        size_t bad = bm_test_bad_bytes(b + off, len, (int)k * 131 + left);
        BM_CHECK_MSG(bad == 0, "rank %d: put of %zu bytes: %zu bad bytes", rank, len, bad);
        size_t g = guard_errors(b, 0, off) + guard_errors(b, off + len, span);
        BM_CHECK_MSG(g == 0, "rank %d: put of %zu bytes wrote %zu bytes outside", rank, len, g);
    }
    free(src);
}

/* The origin at MPI_BOTTOM, its type made of absolute addresses (two
 * pieces of two separate buffers): MPICH's rma/put_bottom. */
static void test_put_bottom(struct osc_win *w)
{
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    int a[3] = {rank, rank + 10, rank + 20}, b[2] = {rank + 30, rank + 40};
    MPI_Aint at[2];
    MPI_Get_address(&a[1], &at[0]);
    MPI_Get_address(&b[0], &at[1]);
    MPI_Datatype t;
    MPI_Type_create_hindexed(2, (int[]){2, 2}, at, MPI_INT, &t);
    MPI_Type_commit(&t);
    memset(w->base, 0, 4 * sizeof(int));
    MPI_Win_fence(0, w->win);
    BM_CHECK_EQ_INT(MPI_Put(MPI_BOTTOM, 1, t, right, osc_disp(w, right, 0), 4, MPI_INT, w->win),
                    MPI_SUCCESS);
    MPI_Win_fence(0, w->win);
    int got[4];
    memcpy(got, w->base, sizeof(got));
    BM_CHECK_MSG(got[0] == left + 10 && got[1] == left + 20 && got[2] == left + 30 &&
                     got[3] == left + 40,
                 "rank %d: put from MPI_BOTTOM: %d %d %d %d", rank, got[0], got[1], got[2], got[3]);
    MPI_Type_free(&t);
}

/* Empty transfers succeed whatever their types (MPICH's rma/badrma): a
 * zero-size type has no predefined type to agree on. */
static void test_empty(struct osc_win *w)
{
    MPI_Datatype none;
    MPI_Type_contiguous(0, MPI_INT, &none);
    MPI_Type_commit(&none);
    int i = 1;
    double r = 0;
    MPI_Win_fence(0, w->win);
    BM_CHECK_EQ_INT(MPI_Accumulate(&i, 0, MPI_INT, 0, 0, 0, MPI_DOUBLE, MPI_SUM, w->win),
                    MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Accumulate(&i, 1, none, 0, 0, 2, none, MPI_SUM, w->win), MPI_SUCCESS);
    BM_CHECK_EQ_INT(
        MPI_Get_accumulate(NULL, 0, MPI_INT, &r, 1, none, 0, 0, 0, MPI_DOUBLE, MPI_SUM, w->win),
        MPI_SUCCESS);
    BM_CHECK(r == 0);
    MPI_Win_fence(0, w->win);
    MPI_Type_free(&none);
}

static void test_get(struct osc_win *w)
{
    int right = (rank + 1) % nranks;
    unsigned char *dst = malloc(REGION + 128);
    MPI_Win_fence(MPI_MODE_NOPRECEDE, w->win);
    bm_test_fill(w->base, WSIZE, 1000 + rank);
    MPI_Win_fence(MPI_MODE_NOPUT, w->win);
    unsigned char *want = malloc(WSIZE);
    bm_test_fill(want, WSIZE, 1000 + right);
    for (size_t k = 0; k < NSIZES; k++) {
        size_t len = sizes[k], off = (k * 977) % 4000;
        memset(dst, GUARD, len + 128);
        MPI_Get(dst + 64, (int)len, MPI_BYTE, right, osc_disp(w, right, (MPI_Aint)off), (int)len,
                MPI_BYTE, w->win);
        MPI_Win_fence(MPI_MODE_NOSTORE | MPI_MODE_NOPUT, w->win);
        BM_CHECK_MSG(memcmp(dst + 64, want + off, len) == 0, "rank %d: get of %zu bytes differs",
                     rank, len);
        BM_CHECK_MSG(guard_errors(dst, 0, 64) + guard_errors(dst, 64 + len, len + 128) == 0,
                     "rank %d: get of %zu bytes wrote outside its buffer", rank, len);
    }
    free(want);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win);
    free(dst);
}

/* Every rank adds (r + 1) * (i + 1) to element i of every rank's window. */
static void test_accumulate(struct osc_win *w, int count)
{
    int32_t *v = malloc(sizeof(int32_t) * (size_t)count);
    for (int i = 0; i < count; i++)
        v[i] = (rank + 1) * (i + 1);
    MPI_Win_fence(MPI_MODE_NOPRECEDE, w->win);
    memset(w->base, 0, sizeof(int32_t) * (size_t)count);
    MPI_Win_fence(0, w->win);
    for (int t = 0; t < nranks; t++)
        MPI_Accumulate(v, count, MPI_INT32_T, t, osc_disp(w, t, 0), count, MPI_INT32_T, MPI_SUM,
                       w->win);
    MPI_Win_fence(0, w->win);
    int32_t tri = nranks * (nranks + 1) / 2;
    int bad = 0;
    const int32_t *got = (const int32_t *)(void *)w->base;
    for (int i = 0; i < count; i++)
        bad += got[i] != tri * (i + 1);
    BM_CHECK_MSG(bad == 0, "rank %d: accumulate of %d ints: %d wrong elements", rank, count, bad);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win);
    free(v);
}

/* get_accumulate, fetch_and_op and compare_and_swap in one fence epoch:
 * each rank works on its own slot of rank 0's window. */
static void test_fetching(struct osc_win *w)
{
    int64_t one = 1, prev = -1, old[4] = {-1, -1, -1, -1}, add[4] = {10, 20, 30, 40};
    int64_t cmp = 0, val = 100 + rank, res = -1;
    MPI_Aint slot = 8 * 16 * (MPI_Aint)rank;
    MPI_Win_fence(MPI_MODE_NOPRECEDE, w->win);
    memset(w->base, 0, 8 * 16 * (size_t)nranks);
    MPI_Win_fence(0, w->win);
    MPI_Fetch_and_op(&one, &prev, MPI_INT64_T, 0, osc_disp(w, 0, slot), MPI_SUM, w->win);
    MPI_Get_accumulate(add, 4, MPI_INT64_T, old, 4, MPI_INT64_T, 0, osc_disp(w, 0, slot + 8), 4,
                       MPI_INT64_T, MPI_SUM, w->win);
    MPI_Compare_and_swap(&val, &cmp, &res, MPI_INT64_T, 0, osc_disp(w, 0, slot + 40), w->win);
    MPI_Put(&one, 1, MPI_INT64_T, MPI_PROC_NULL, 0, 1, MPI_INT64_T, w->win);
    MPI_Win_fence(0, w->win);
    BM_CHECK_MSG(prev == 0, "rank %d: fetch_and_op fetched %lld", rank, (long long)prev);
    BM_CHECK_MSG(old[0] == 0 && old[3] == 0, "rank %d: get_accumulate fetched %lld..%lld", rank,
                 (long long)old[0], (long long)old[3]);
    BM_CHECK_MSG(res == 0, "rank %d: compare_and_swap fetched %lld", rank, (long long)res);
    if (rank == 0) {
        const int64_t *b = (const int64_t *)(void *)w->base;
        for (int r = 0; r < nranks; r++) {
            const int64_t *s = b + 16 * r;
            BM_CHECK_MSG(s[0] == 1 && s[1] == 10 && s[4] == 40 && s[5] == 100 + r,
                         "slot of rank %d: %lld %lld %lld %lld", r, (long long)s[0],
                         (long long)s[1], (long long)s[4], (long long)s[5]);
        }
    }
    MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win);
}

int main(int argc, char **argv)
{
    struct osc_win w;
    osc_test_begin(&argc, &argv, &rank, &nranks, &w, WSIZE);
    BM_RUN_W(test_put);
    BM_RUN_W(test_put_bottom);
    BM_RUN_W(test_empty);
    BM_RUN_W(test_get);
    test_accumulate(&w, 5);
    test_accumulate(&w, 100000);
    BM_RUN_W(test_fetching);
    return osc_test_end(&w, "osc_fence");
}
