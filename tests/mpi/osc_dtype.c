/* One-sided communication on derived datatypes, on the window flavour
 * named by the first argument, every rank to its right neighbour in a
 * lock_all epoch: puts and gets whose target (and origin) types are
 * vectors, indexed blocks, a struct of an int and a double, and a resized
 * type with a lower bound; accumulates and get_accumulates (MPI_SUM,
 * MPI_REPLACE, MPI_NO_OP) onto strided int64 elements and MPI_MAXLOC onto
 * MPI_DOUBLE_INT pairs, with results in a strided buffer; a request-based
 * accumulate and get with vectors on both sides; the gaps of the target and
 * of the origin must stay untouched, and an accumulate on a type made of two
 * predefined types is refused (MPI_ERR_TYPE). */
#include "osc_common.h"

#include <stdint.h>

#define WSIZE (64 << 10)
#define N     300 /* elements */

static int rank, nranks, right, left;

static void reset(struct osc_win *w)
{
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win);
    memset(w->base, 0x5a, WSIZE);
    MPI_Win_unlock(rank, w->win);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void sync_all(struct osc_win *w)
{
    MPI_Win_unlock_all(w->win);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Every other int64 at the target: vector(N, 1, 2). */
static void test_vector_put_get(struct osc_win *w)
{
    MPI_Datatype vec;
    MPI_Type_vector(N, 1, 2, MPI_INT64_T, &vec);
    MPI_Type_commit(&vec);
    int64_t src[N], back[2 * N];
    for (int i = 0; i < N; i++)
        src[i] = (int64_t)rank * 1000000 + i;
    reset(w);
    MPI_Win_lock_all(0, w->win);
    MPI_Put(src, N, MPI_INT64_T, right, osc_disp(w, right, 8), 1, vec, w->win);
    sync_all(w);
    const int64_t *mine = (const int64_t *)(void *)w->base;
    int bad = 0, gaps = 0;
    for (int i = 0; i < N; i++) {
        bad += mine[1 + 2 * i] != (int64_t)left * 1000000 + i;
        gaps += mine[2 + 2 * i] != (int64_t)0x5a5a5a5a5a5a5a5aLL;
    }
    gaps += mine[0] != (int64_t)0x5a5a5a5a5a5a5a5aLL;
    BM_CHECK_MSG(bad == 0 && gaps == 0, "rank %d: vector put: %d wrong, %d gaps written", rank, bad,
                 gaps);
    /* get it back into a strided origin buffer */
    memset(back, 0, sizeof(back));
    MPI_Win_lock_all(0, w->win);
    MPI_Get(back, 1, vec, right, osc_disp(w, right, 8), 1, vec, w->win);
    MPI_Win_unlock_all(w->win);
    bad = gaps = 0;
    for (int i = 0; i < N; i++) {
        bad += back[2 * i] != (int64_t)rank * 1000000 + i;
        gaps += back[2 * i + 1] != 0;
    }
    BM_CHECK_MSG(bad == 0 && gaps == 0, "rank %d: vector get: %d wrong, %d gaps written", rank, bad,
                 gaps);
    MPI_Type_free(&vec);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* An indexed origin, a struct {int; double} target, a resized type. */
static void test_indexed_struct(struct osc_win *w)
{
    int blens[3] = {1, 3, 2}, disps[3] = {0, 4, 10};
    MPI_Datatype idx, st, rs;
    MPI_Type_indexed(3, blens, disps, MPI_INT32_T, &idx);
    MPI_Type_commit(&idx);
    struct rec {
        int32_t a;
        double b;
    };
    int sbl[2] = {1, 1};
    MPI_Aint sd[2] = {offsetof(struct rec, a), offsetof(struct rec, b)};
    MPI_Datatype sts[2] = {MPI_INT32_T, MPI_DOUBLE};
    MPI_Type_create_struct(2, sbl, sd, sts, &st);
    MPI_Type_commit(&st);
    /* an int32 with lower bound -4 and extent 12 */
    MPI_Type_create_resized(MPI_INT32_T, -4, 12, &rs);
    MPI_Type_commit(&rs);
    int32_t isrc[12];
    for (int i = 0; i < 12; i++)
        isrc[i] = rank * 100 + i;
    struct rec recs[4], rback[4];
    memset(recs, 0, sizeof(recs));
    for (int i = 0; i < 4; i++) {
        recs[i].a = rank * 10 + i;
        recs[i].b = rank + 0.5 * i;
    }
    reset(w);
    MPI_Win_lock_all(0, w->win);
    /* six int32 from the indexed origin, contiguous at the target */
    MPI_Put(isrc, 1, idx, right, osc_disp(w, right, 0), 6, MPI_INT32_T, w->win);
    /* four records at 1 KiB */
    MPI_Put(recs, 4, st, right, osc_disp(w, right, 1024), 4, st, w->win);
    /* three int32 at 2 KiB + 4 + 12 k (the data does not move with the
     * lower bound; only the extent spaces the elements) */
    MPI_Put(isrc, 3, MPI_INT32_T, right, osc_disp(w, right, 2048 + 4), 3, rs, w->win);
    sync_all(w);
    const int32_t *m32 = (const int32_t *)(void *)w->base;
    int want[6] = {0, 4, 5, 6, 10, 11};
    int bad = 0;
    for (int i = 0; i < 6; i++)
        bad += m32[i] != left * 100 + want[i];
    BM_CHECK_MSG(bad == 0, "rank %d: indexed origin: %d wrong", rank, bad);
    const struct rec *mr = (const struct rec *)(const void *)(w->base + 1024);
    bad = 0;
    for (int i = 0; i < 4; i++)
        bad += mr[i].a != left * 10 + i || mr[i].b != left + 0.5 * i;
    BM_CHECK_MSG(bad == 0, "rank %d: struct: %d wrong records", rank, bad);
    const int32_t *mz = (const int32_t *)(const void *)(w->base + 2048);
    BM_CHECK_MSG(mz[1] == left * 100 && mz[4] == left * 100 + 1 && mz[7] == left * 100 + 2 &&
                     mz[0] == 0x5a5a5a5a && mz[2] == 0x5a5a5a5a,
                 "rank %d: resized: %d %d %d", rank, mz[1], mz[4], mz[7]);
    /* read the records back; accumulating on them is refused */
    memset(rback, 0, sizeof(rback));
    MPI_Win_lock_all(0, w->win);
    MPI_Get(rback, 4, st, right, osc_disp(w, right, 1024), 4, st, w->win);
    MPI_Win_flush(right, w->win);
    BM_CHECK_MSG(rback[3].a == rank * 10 + 3 && rback[3].b == rank + 1.5,
                 "rank %d: struct get: %d %g", rank, rback[3].a, rback[3].b);
    MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN);
    int rc = MPI_Accumulate(recs, 4, st, right, osc_disp(w, right, 1024), 4, st, MPI_SUM, w->win);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    BM_CHECK_MSG(cls == MPI_ERR_TYPE, "rank %d: accumulate on a mixed struct gave %d", rank, cls);
    MPI_Win_set_errhandler(w->win, MPI_ERRORS_ARE_FATAL);
    sync_all(w);
    MPI_Type_free(&idx);
    MPI_Type_free(&st);
    MPI_Type_free(&rs);
}

/* Accumulates on every third int64 (vector(N, 1, 3)), results into every
 * other one of a buffer. */
static void test_accumulate(struct osc_win *w)
{
    MPI_Datatype tv, rv;
    MPI_Type_vector(N, 1, 3, MPI_INT64_T, &tv);
    MPI_Type_commit(&tv);
    MPI_Type_vector(N, 1, 2, MPI_INT64_T, &rv);
    MPI_Type_commit(&rv);
    int64_t v[N], res[2 * N];
    for (int i = 0; i < N; i++)
        v[i] = i + 1;
    reset(w);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win);
    int64_t *mine = (int64_t *)(void *)w->base;
    for (int i = 0; i < 3 * N; i++)
        mine[i] = 1000;
    MPI_Win_unlock(rank, w->win);
    MPI_Barrier(MPI_COMM_WORLD);
    /* every rank adds to every rank's strided elements */
    MPI_Win_lock_all(0, w->win);
    for (int t = 0; t < nranks; t++)
        MPI_Accumulate(v, N, MPI_INT64_T, t, osc_disp(w, t, 0), 1, tv, MPI_SUM, w->win);
    sync_all(w);
    int bad = 0, gaps = 0;
    for (int i = 0; i < N; i++) {
        bad += mine[3 * i] != 1000 + (int64_t)nranks * (i + 1);
        gaps += mine[3 * i + 1] != 1000 || mine[3 * i + 2] != 1000;
    }
    BM_CHECK_MSG(bad == 0 && gaps == 0,
                 "rank %d: strided accumulate: %d wrong, %d gaps (element 0: %lld, 1: %lld)", rank,
                 bad, gaps, (long long)mine[0], (long long)mine[3]);
    MPI_Barrier(MPI_COMM_WORLD); /* everyone checked before anything changes */
    /* fetch the old values into a strided result, replace them */
    memset(res, 0, sizeof(res));
    MPI_Win_lock_all(0, w->win);
    MPI_Request r;
    MPI_Rget_accumulate(v, N, MPI_INT64_T, res, 1, rv, right, osc_disp(w, right, 0), 1, tv,
                        MPI_REPLACE, w->win, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Win_unlock_all(w->win);
    bad = gaps = 0;
    for (int i = 0; i < N; i++) {
        bad += res[2 * i] != 1000 + (int64_t)nranks * (i + 1);
        gaps += res[2 * i + 1] != 0;
    }
    BM_CHECK_MSG(bad == 0 && gaps == 0, "rank %d: strided get_accumulate: %d wrong, %d gaps", rank,
                 bad, gaps);
    MPI_Barrier(MPI_COMM_WORLD);
    bad = 0;
    for (int i = 0; i < N; i++)
        bad += mine[3 * i] != i + 1;
    BM_CHECK_MSG(bad == 0, "rank %d: MPI_REPLACE through the vector: %d wrong", rank, bad);
    /* derived types on both sides, request-based: the fetched values (every
     * other element of res) added through the target vector, then read
     * back through both vectors */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, w->win);
    MPI_Raccumulate(res, 1, rv, right, osc_disp(w, right, 0), 1, tv, MPI_SUM, w->win, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Win_unlock_all(w->win);
    MPI_Barrier(MPI_COMM_WORLD);
    int64_t back[2 * N];
    memset(back, 0, sizeof(back));
    MPI_Win_lock_all(0, w->win);
    MPI_Rget(back, 1, rv, right, osc_disp(w, right, 0), 1, tv, w->win, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Win_unlock_all(w->win);
    bad = gaps = 0;
    for (int i = 0; i < N; i++) {
        int64_t want = (i + 1) + 1000 + (int64_t)nranks * (i + 1);
        bad += mine[3 * i] != want || back[2 * i] != want;
        gaps += mine[3 * i + 1] != 1000 || mine[3 * i + 2] != 1000 || back[2 * i + 1] != 0;
    }
    BM_CHECK_MSG(bad == 0 && gaps == 0,
                 "rank %d: vector to vector raccumulate and rget: %d wrong, %d gaps", rank, bad,
                 gaps);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Type_free(&tv);
    MPI_Type_free(&rv);
}

/* MPI_MAXLOC on value-index pairs, origin packed two per element of a
 * contiguous type, results through NO_OP. */
static void test_pairs(struct osc_win *w)
{
    struct {
        double v;
        int i;
    } p[8], got[8];
    MPI_Datatype two;
    MPI_Type_contiguous(2, MPI_DOUBLE_INT, &two);
    MPI_Type_commit(&two);
    for (int i = 0; i < 8; i++) {
        p[i].v = (double)((rank * 3 + i) % nranks);
        p[i].i = rank;
    }
    reset(w);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win);
    memset(w->base, 0, 16 * 8);
    MPI_Win_unlock(rank, w->win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, w->win);
    MPI_Accumulate(p, 4, two, 0, osc_disp(w, 0, 0), 8, MPI_DOUBLE_INT, MPI_MAXLOC, w->win);
    sync_all(w);
    MPI_Win_lock_all(0, w->win);
    MPI_Get_accumulate(NULL, 0, MPI_DOUBLE_INT, got, 8, MPI_DOUBLE_INT, 0, osc_disp(w, 0, 0), 8,
                       MPI_DOUBLE_INT, MPI_NO_OP, w->win);
    MPI_Win_unlock_all(w->win);
    int bad = 0;
    for (int i = 0; i < 8; i++) {
        double best = -1;
        int at = -1;
        for (int q = 0; q < nranks; q++)
            if ((double)((q * 3 + i) % nranks) > best) {
                best = (double)((q * 3 + i) % nranks);
                at = q;
            }
        bad += got[i].v != best || got[i].i != at;
    }
    BM_CHECK_MSG(bad == 0, "rank %d: MPI_MAXLOC on pairs: %d wrong", rank, bad);
    MPI_Type_free(&two);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    struct osc_win w;
    osc_test_begin(&argc, &argv, &rank, &nranks, &w, WSIZE);
    right = (rank + 1) % nranks;
    left = (rank + nranks - 1) % nranks;
    BM_RUN_W(test_vector_put_get);
    BM_RUN_W(test_indexed_struct);
    BM_RUN_W(test_accumulate);
    BM_RUN_W(test_pairs);
    return osc_test_end(&w, "osc_dtype");
}
