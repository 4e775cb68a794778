/* MPI_Compare_and_swap on every type class it accepts, one element each,
 * rank r aiming at the next rank's window in a passive-target epoch:
 * MPI_CHAR (refused with MPI_ERR_TYPE until osu_cas_latency, whose default
 * type it is, showed that Open MPI and MPICH take it), the signed and
 * unsigned chars, MPI_BYTE, MPI_C_BOOL, Fortran MPI_LOGICAL and the fixed
 * width integers. For each type a compare that does not match must leave
 * the element alone and fetch it, and one that matches must swap and fetch
 * the old value; the target then checks the element holds the new value.
 * A floating type must still be refused. The window flavour is the first
 * argument. */
#include "osc_common.h"

#include <stdbool.h>
#include <stdint.h>

#define SLOT 16 /* bytes per type in the window */

static int rank, nranks;

static const struct {
    MPI_Datatype dt;
    const char *name;
    int size;
} types[] = {
    {MPI_CHAR, "MPI_CHAR", 1},
    {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", 1},
    {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", 1},
    {MPI_BYTE, "MPI_BYTE", 1},
    {MPI_C_BOOL, "MPI_C_BOOL", (int)sizeof(bool)},
    {MPI_LOGICAL, "MPI_LOGICAL", 4},
    {MPI_INT8_T, "MPI_INT8_T", 1},
    {MPI_INT16_T, "MPI_INT16_T", 2},
    {MPI_INT32_T, "MPI_INT32_T", 4},
    {MPI_INT64_T, "MPI_INT64_T", 8},
};
#define NTYPES ((int)(sizeof(types) / sizeof(types[0])))

/* The value rank r swaps in: nonzero, different per rank, 0 or 1 for bool. */
static void value_of(int k, int r, unsigned char *v)
{
    memset(v, 0, SLOT);
    if (types[k].dt == MPI_C_BOOL)
        v[0] = 1;
    else
        v[0] = (unsigned char)(0x41 + r % 16); /* also a printable char */
}

/* One compare-and-swap of type k on rank next's element; it must succeed and
 * fetch the element's old value, 0 (the window starts zeroed and only this
 * rank swaps into it). */
static void cas_one(struct osc_win *w, int k, int next, const unsigned char *val,
                    const unsigned char *cmp, const char *what)
{
    unsigned char res[SLOT];
    memset(res, 0xee, SLOT);
    int rc = MPI_Compare_and_swap(val, cmp, res, types[k].dt, next,
                                  osc_disp(w, next, (MPI_Aint)k * SLOT), w->win);
    BM_CHECK_MSG(rc == MPI_SUCCESS, "rank %d: MPI_Compare_and_swap (%s) on %s returned %d", rank,
                 what, types[k].name, rc);
    MPI_Win_flush(next, w->win);
    for (int i = 0; i < types[k].size; i++)
        BM_CHECK_MSG(res[i] == 0, "rank %d: %s: %s fetched byte %d 0x%x, expected 0", rank,
                     types[k].name, what, i, res[i]);
}

static void test_cas_types(struct osc_win *w)
{
    int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN);
    MPI_Barrier(MPI_COMM_WORLD); /* every window zeroed (osc_win_make) before any swap */
    MPI_Win_lock(MPI_LOCK_SHARED, next, 0, w->win);
    for (int k = 0; k < NTYPES; k++) {
        unsigned char val[SLOT], zero[SLOT];
        value_of(k, rank, val);
        memset(zero, 0, SLOT);
        cas_one(w, k, next, val, val, "no match"); /* the element (0) stays */
        cas_one(w, k, next, val, zero, "match");   /* swapped */
    }
    float f = 1, fc = 0, fr = 0;
    int rc = MPI_Compare_and_swap(&f, &fc, &fr, MPI_FLOAT, next, osc_disp(w, next, 0), w->win);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    BM_CHECK_MSG(cls == MPI_ERR_TYPE, "rank %d: MPI_Compare_and_swap on MPI_FLOAT gave class %d",
                 rank, cls);
    MPI_Win_unlock(next, w->win);
    MPI_Barrier(MPI_COMM_WORLD);
    /* what the previous rank swapped into this rank's window */
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win);
    for (int k = 0; k < NTYPES; k++) {
        unsigned char want[SLOT];
        value_of(k, prev, want);
        BM_CHECK_MSG(memcmp(w->base + k * SLOT, want, (size_t)types[k].size) == 0,
                     "rank %d: %s element after the swap is 0x%x, expected 0x%x", rank,
                     types[k].name, (unsigned char)w->base[k * SLOT], want[0]);
    }
    MPI_Win_unlock(rank, w->win);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    struct osc_win w;
    osc_test_begin(&argc, &argv, &rank, &nranks, &w, NTYPES * SLOT);
    BM_RUN_W(test_cas_types);
    return osc_test_end(&w, "osc_cas_types");
}
