/* Atomicity of one-sided accumulates under contention, on the window
 * flavour named by the first argument, every rank at once in a lock_all
 * epoch aiming at the same elements of rank 0's window:
 *  - every predefined operation (MPI_SUM, PROD, MAX, MIN, LAND, BAND, LOR,
 *    BOR, LXOR, BXOR, MAXLOC, MINLOC, REPLACE, and NO_OP through
 *    get_accumulate) on integer, floating and pair types, many rounds on 64
 *    elements at once, with results that do not depend on the order, so a
 *    lost or torn update shows;
 *  - a fetch-and-add counter (8-byte and 4-byte, and a double): every
 *    fetched value must be distinct and the final value the total;
 *  - a compare-and-swap mutex guarding a read-modify-write that is not
 *    atomic by itself;
 *  - MPI_REPLACE of 16-byte elements (double complex, double-int pairs):
 *    the result is one rank's value whole, never a mix. */
#include "osc_common.h"

#include <complex.h>
#include <stdint.h>

#define WSIZE  4096
#define NELEM  64
#define ROUNDS 12

static int rank, nranks;

static void zero_target(struct osc_win *w, size_t bytes, const void *init)
{
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win);
    if (rank == 0) {
        if (init)
            memcpy(w->base, init, bytes);
        else
            memset(w->base, 0, bytes);
    }
    MPI_Win_unlock(rank, w->win);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* ROUNDS accumulates of NELEM elements of dt (values from fill) with op,
 * from every rank to rank 0, then a fetch of the result. */
static void acc_rounds(struct osc_win *w, MPI_Datatype dt, MPI_Op op, const void *vals,
                       void *result)
{
    int esz;
    MPI_Type_size(dt, &esz);
    MPI_Aint lb, ext;
    MPI_Type_get_extent(dt, &lb, &ext);
    MPI_Win_lock_all(0, w->win);
    for (int i = 0; i < ROUNDS; i++)
        MPI_Accumulate(vals, NELEM, dt, 0, osc_disp(w, 0, 0), NELEM, dt, op, w->win);
    MPI_Win_unlock_all(w->win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w->win);
    MPI_Get_accumulate(NULL, 0, dt, result, NELEM, dt, 0, osc_disp(w, 0, 0), NELEM, dt, MPI_NO_OP,
                       w->win);
    MPI_Win_unlock(0, w->win);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void test_int_ops(struct osc_win *w)
{
    int64_t v[NELEM], r[NELEM], init[NELEM];
    const int64_t total = (int64_t)ROUNDS * nranks;
    /* SUM */
    for (int i = 0; i < NELEM; i++)
        v[i] = i + 1 + rank;
    zero_target(w, sizeof(init), NULL);
    acc_rounds(w, MPI_INT64_T, MPI_SUM, v, r);
    int bad = 0;
    for (int i = 0; i < NELEM; i++)
        bad += r[i] != ROUNDS * ((int64_t)(i + 1) * nranks + (int64_t)nranks * (nranks - 1) / 2);
    BM_CHECK_MSG(bad == 0, "rank %d: MPI_SUM on int64: %d wrong elements (r[0] %lld)", rank, bad,
                 (long long)r[0]);
    /* PROD of 1s and a -1 per rank and round: the sign counts the updates */
    for (int i = 0; i < NELEM; i++) {
        v[i] = -1;
        init[i] = 1;
    }
    zero_target(w, sizeof(init), init);
    acc_rounds(w, MPI_INT64_T, MPI_PROD, v, r);
    bad = 0;
    for (int i = 0; i < NELEM; i++)
        bad += r[i] != (total % 2 ? -1 : 1);
    BM_CHECK_MSG(bad == 0, "rank %d: MPI_PROD: %d wrong elements", rank, bad);
    /* MAX, MIN */
    for (int i = 0; i < NELEM; i++)
        v[i] = rank * 1000 - i;
    for (int i = 0; i < NELEM; i++)
        init[i] = INT64_MIN;
    zero_target(w, sizeof(init), init);
    acc_rounds(w, MPI_INT64_T, MPI_MAX, v, r);
    BM_CHECK_MSG(r[0] == (nranks - 1) * 1000 && r[5] == (nranks - 1) * 1000 - 5,
                 "rank %d: MPI_MAX gave %lld", rank, (long long)r[0]);
    for (int i = 0; i < NELEM; i++)
        init[i] = INT64_MAX;
    zero_target(w, sizeof(init), init);
    acc_rounds(w, MPI_INT64_T, MPI_MIN, v, r);
    BM_CHECK_MSG(r[0] == 0 && r[5] == -5, "rank %d: MPI_MIN gave %lld %lld", rank, (long long)r[0],
                 (long long)r[5]);
    /* BOR and BAND: each rank owns bit `rank` of every element */
    uint64_t u[NELEM], ur[NELEM], uinit[NELEM];
    for (int i = 0; i < NELEM; i++)
        u[i] = 1ull << (rank + i % 8);
    zero_target(w, sizeof(uinit), NULL);
    acc_rounds(w, MPI_UINT64_T, MPI_BOR, u, ur);
    uint64_t all = 0;
    for (int q = 0; q < nranks; q++)
        all |= 1ull << q;
    BM_CHECK_MSG(ur[0] == all && ur[3] == all << 3, "rank %d: MPI_BOR gave %llx", rank,
                 (unsigned long long)ur[0]);
    for (int i = 0; i < NELEM; i++) {
        u[i] = ~(1ull << rank);
        uinit[i] = ~0ull;
    }
    zero_target(w, sizeof(uinit), uinit);
    acc_rounds(w, MPI_UINT64_T, MPI_BAND, u, ur);
    BM_CHECK_MSG(ur[0] == ~all, "rank %d: MPI_BAND gave %llx", rank, (unsigned long long)ur[0]);
    /* BXOR of the same word by every rank and round: even count cancels */
    for (int i = 0; i < NELEM; i++)
        u[i] = 0x5a5a5a5a5a5a5a5aull + (uint64_t)i;
    zero_target(w, sizeof(uinit), NULL);
    acc_rounds(w, MPI_UINT64_T, MPI_BXOR, u, ur);
    BM_CHECK_MSG(ur[1] == (total % 2 ? u[1] : 0), "rank %d: MPI_BXOR gave %llx", rank,
                 (unsigned long long)ur[1]);
    /* LAND, LOR, LXOR on int */
    int iv[NELEM], ir[NELEM], iinit[NELEM];
    for (int i = 0; i < NELEM; i++) {
        iv[i] = 1;
        iinit[i] = 0;
    }
    zero_target(w, sizeof(iinit), iinit);
    acc_rounds(w, MPI_INT, MPI_LXOR, iv, ir);
    BM_CHECK_MSG(ir[7] == (int)(total % 2), "rank %d: MPI_LXOR gave %d", rank, ir[7]);
    acc_rounds(w, MPI_INT, MPI_LOR, iv, ir);
    BM_CHECK_MSG(ir[7] == 1, "rank %d: MPI_LOR gave %d", rank, ir[7]);
    for (int i = 0; i < NELEM; i++)
        iv[i] = rank != 0;
    acc_rounds(w, MPI_INT, MPI_LAND, iv, ir);
    BM_CHECK_MSG(ir[7] == 0, "rank %d: MPI_LAND gave %d", rank, ir[7]);
    /* 16-bit and 8-bit sums (compare-and-swap loops at those widths) */
    int16_t sv[NELEM], sr[NELEM];
    for (int i = 0; i < NELEM; i++)
        sv[i] = 1;
    zero_target(w, sizeof(sv), NULL);
    acc_rounds(w, MPI_INT16_T, MPI_SUM, sv, sr);
    BM_CHECK_MSG(sr[NELEM - 1] == total && sr[0] == total, "rank %d: MPI_SUM int16 gave %d", rank,
                 sr[0]);
    uint8_t bv[NELEM], br[NELEM];
    for (int i = 0; i < NELEM; i++)
        bv[i] = 1;
    zero_target(w, sizeof(bv), NULL);
    acc_rounds(w, MPI_UINT8_T, MPI_SUM, bv, br);
    BM_CHECK_MSG(br[NELEM - 1] == (uint8_t)total && br[1] == (uint8_t)total,
                 "rank %d: MPI_SUM uint8 gave %d", rank, br[1]);
}

static void test_float_and_pairs(struct osc_win *w)
{
    const int64_t total = (int64_t)ROUNDS * nranks;
    double d[NELEM], dr[NELEM];
    for (int i = 0; i < NELEM; i++)
        d[i] = 0.5 * (i + 1); /* exact sums */
    zero_target(w, sizeof(d), NULL);
    acc_rounds(w, MPI_DOUBLE, MPI_SUM, d, dr);
    BM_CHECK_MSG(dr[3] == 2.0 * (double)total && dr[0] == 0.5 * (double)total,
                 "rank %d: MPI_SUM double gave %g", rank, dr[3]);
    /* long double (16-byte elements under the stripe locks) */
    long double ld[NELEM], ldr[NELEM];
    for (int i = 0; i < NELEM; i++)
        ld[i] = 1.0L;
    zero_target(w, sizeof(ld), NULL);
    acc_rounds(w, MPI_LONG_DOUBLE, MPI_SUM, ld, ldr);
    BM_CHECK_MSG(ldr[9] == (long double)total, "rank %d: MPI_SUM long double gave %Lg", rank,
                 ldr[9]);
    /* double complex */
    double _Complex c[NELEM], cr[NELEM];
    for (int i = 0; i < NELEM; i++)
        c[i] = 1.0 + 2.0 * I;
    zero_target(w, sizeof(c), NULL);
    acc_rounds(w, MPI_C_DOUBLE_COMPLEX, MPI_SUM, c, cr);
    BM_CHECK_MSG(creal(cr[2]) == (double)total && cimag(cr[2]) == 2.0 * (double)total,
                 "rank %d: MPI_SUM double complex gave %g%+gi", rank, creal(cr[2]), cimag(cr[2]));
    /* MAXLOC / MINLOC on (int, int) and (double, int) */
    struct {
        int v, i;
    } p[NELEM], pr[NELEM];
    for (int i = 0; i < NELEM; i++) {
        p[i].v = (rank * 7) % nranks;
        p[i].i = rank;
    }
    zero_target(w, sizeof(p), NULL);
    acc_rounds(w, MPI_2INT, MPI_MAXLOC, p, pr);
    int best = -1, at = 0;
    for (int q = 0; q < nranks; q++)
        if ((q * 7) % nranks > best) {
            best = (q * 7) % nranks;
            at = q;
        }
    BM_CHECK_MSG(pr[4].v == best && pr[4].i == at, "rank %d: MPI_MAXLOC gave (%d, %d)", rank,
                 pr[4].v, pr[4].i);
    struct {
        double v;
        int i;
    } dp[NELEM], dpr[NELEM], dinit[NELEM];
    for (int i = 0; i < NELEM; i++) {
        dp[i].v = 1.0;
        dp[i].i = nranks - rank;
        dinit[i].v = 1e9;
        dinit[i].i = 0;
    }
    zero_target(w, sizeof(dinit), dinit);
    acc_rounds(w, MPI_DOUBLE_INT, MPI_MINLOC, dp, dpr);
    BM_CHECK_MSG(dpr[1].v == 1.0 && dpr[1].i == 1, "rank %d: MPI_MINLOC gave (%g, %d)", rank,
                 dpr[1].v, dpr[1].i);
    /* REPLACE of 16-byte values: one rank's whole value, never a mix */
    double _Complex mine[NELEM];
    for (int i = 0; i < NELEM; i++)
        mine[i] = (double)(rank + 1) + (double)(rank + 1) * I;
    zero_target(w, sizeof(mine), NULL);
    acc_rounds(w, MPI_C_DOUBLE_COMPLEX, MPI_REPLACE, mine, cr);
    int torn = 0;
    for (int i = 0; i < NELEM; i++)
        torn += creal(cr[i]) != cimag(cr[i]) || creal(cr[i]) < 1 || creal(cr[i]) > nranks;
    BM_CHECK_MSG(torn == 0, "rank %d: MPI_REPLACE of double complex: %d torn elements", rank, torn);
}

/* Every rank fetches-and-adds 1, rounds times; the fetched values of all
 * ranks together must be 0 .. total - 1, each once. */
static void test_counter(struct osc_win *w, MPI_Datatype dt)
{
    const int rounds = 50, total = rounds * nranks;
    int64_t *got = malloc(sizeof(int64_t) * (size_t)rounds);
    int64_t *all = malloc(sizeof(int64_t) * (size_t)total);
    zero_target(w, 64, NULL);
    MPI_Win_lock_all(0, w->win);
    for (int i = 0; i < rounds; i++) {
        if (dt == MPI_INT32_T) {
            int32_t one = 1, prev = -1;
            MPI_Fetch_and_op(&one, &prev, dt, 0, osc_disp(w, 0, 8), MPI_SUM, w->win);
            MPI_Win_flush(0, w->win);
            got[i] = prev;
        } else if (dt == MPI_DOUBLE) {
            double one = 1.0, prev = -1.0;
            MPI_Fetch_and_op(&one, &prev, dt, 0, osc_disp(w, 0, 8), MPI_SUM, w->win);
            MPI_Win_flush(0, w->win);
            got[i] = (int64_t)prev;
        } else {
            int64_t one = 1, prev = -1;
            MPI_Fetch_and_op(&one, &prev, dt, 0, osc_disp(w, 0, 8), MPI_SUM, w->win);
            MPI_Win_flush(0, w->win);
            got[i] = prev;
        }
    }
    MPI_Win_unlock_all(w->win);
    MPI_Allgather(got, rounds, MPI_INT64_T, all, rounds, MPI_INT64_T, MPI_COMM_WORLD);
    char *seen = calloc((size_t)total, 1);
    int bad = 0;
    for (int i = 0; i < total; i++) {
        if (all[i] < 0 || all[i] >= total || seen[all[i]])
            bad++;
        else
            seen[all[i]] = 1;
    }
    BM_CHECK_MSG(bad == 0, "rank %d: fetch-and-add counter (%s): %d duplicate or missing values",
                 rank,
                 dt == MPI_INT32_T  ? "int32"
                 : dt == MPI_DOUBLE ? "double"
                                    : "int64",
                 bad);
    free(seen);
    free(got);
    free(all);
}

/* A mutex made of compare-and-swap on rank 0's word 0 guards a counter at
 * word 1 that is incremented with a plain get and put. */
static void test_cas_mutex(struct osc_win *w)
{
    const int rounds = 15;
    zero_target(w, 64, NULL);
    MPI_Win_lock_all(0, w->win);
    for (int i = 0; i < rounds; i++) {
        int64_t unlocked = 0, me = rank + 1, prev = -1;
        do {
            MPI_Compare_and_swap(&me, &unlocked, &prev, MPI_INT64_T, 0, osc_disp(w, 0, 0), w->win);
            MPI_Win_flush(0, w->win);
        } while (prev != 0);
        int64_t v = -1;
        MPI_Get(&v, 1, MPI_INT64_T, 0, osc_disp(w, 0, 8), 1, MPI_INT64_T, w->win);
        MPI_Win_flush(0, w->win);
        v++;
        MPI_Put(&v, 1, MPI_INT64_T, 0, osc_disp(w, 0, 8), 1, MPI_INT64_T, w->win);
        MPI_Win_flush(0, w->win);
        /* release: swap back and check that it was held by this rank */
        int64_t back = -1;
        MPI_Compare_and_swap(&unlocked, &me, &back, MPI_INT64_T, 0, osc_disp(w, 0, 0), w->win);
        MPI_Win_flush(0, w->win);
        BM_CHECK_MSG(back == me, "rank %d: the mutex was held by %lld", rank, (long long)back);
    }
    MPI_Win_unlock_all(w->win);
    MPI_Barrier(MPI_COMM_WORLD);
    int64_t count = -1;
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w->win);
    MPI_Get(&count, 1, MPI_INT64_T, 0, osc_disp(w, 0, 8), 1, MPI_INT64_T, w->win);
    MPI_Win_unlock(0, w->win);
    BM_CHECK_MSG(count == (int64_t)rounds * nranks, "rank %d: guarded counter %lld, expected %d",
                 rank, (long long)count, rounds * nranks);
}

/* MPI_Accumulate, MPI_Fetch_and_op and MPI_Get_accumulate (two elements)
 * on the same int64 elements of rank 0 from every rank at once: the sums
 * must come out exact, whichever path each operation takes (over ofi all
 * of them go to the transport's atomics or none does: the window's rule),
 * and each rank's own operations on an element stay in order (the default
 * accumulate_ordering). */
static void test_mixed(struct osc_win *w)
{
    const int rounds = 20;
    MPI_Barrier(MPI_COMM_WORLD); /* the last test's final reads are done */
    zero_target(w, 64, NULL);
    MPI_Win_lock_all(0, w->win);
    for (int i = 0; i < rounds; i++) {
        int64_t one[2] = {1, 1}, prev = -1, prev2[2] = {-1, -1};
        MPI_Accumulate(one, 1, MPI_INT64_T, 0, osc_disp(w, 0, 16), 1, MPI_INT64_T, MPI_SUM, w->win);
        MPI_Fetch_and_op(one, &prev, MPI_INT64_T, 0, osc_disp(w, 0, 16), MPI_SUM, w->win);
        MPI_Get_accumulate(one, 2, MPI_INT64_T, prev2, 2, MPI_INT64_T, 0, osc_disp(w, 0, 16), 2,
                           MPI_INT64_T, MPI_SUM, w->win);
        MPI_Win_flush(0, w->win);
        BM_CHECK_MSG(prev >= 0 && prev2[0] > prev && prev2[1] >= 0,
                     "rank %d: round %d fetched %lld, then %lld %lld", rank, i, (long long)prev,
                     (long long)prev2[0], (long long)prev2[1]);
    }
    MPI_Win_unlock_all(w->win);
    MPI_Barrier(MPI_COMM_WORLD);
    int64_t v[2] = {-1, -1};
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w->win);
    MPI_Get(v, 2, MPI_INT64_T, 0, osc_disp(w, 0, 16), 2, MPI_INT64_T, w->win);
    MPI_Win_unlock(0, w->win);
    BM_CHECK_MSG(v[0] == 3 * rounds * nranks && v[1] == rounds * nranks,
                 "rank %d: mixed accumulates gave %lld %lld, expected %d %d", rank, (long long)v[0],
                 (long long)v[1], 3 * rounds * nranks, rounds * nranks);
}

int main(int argc, char **argv)
{
    struct osc_win w;
    osc_test_begin(&argc, &argv, &rank, &nranks, &w, WSIZE);
    BM_RUN_W(test_int_ops);
    BM_RUN_W(test_float_and_pairs);
    bm_test_current = "counter int64";
    test_counter(&w, MPI_INT64_T);
    bm_test_current = "counter int32";
    test_counter(&w, MPI_INT32_T);
    bm_test_current = "counter double";
    test_counter(&w, MPI_DOUBLE);
    BM_RUN_W(test_cas_mutex);
    BM_RUN_W(test_mixed);
    return osc_test_end(&w, "osc_atomic");
}
