/* The ranks of a communicator choose one collective algorithm even where
 * what the choice reads differs between them or has not happened yet
 * (src/mpi/coll_select.c crowded, src/pml/pml.c host_agree):
 *
 * first (no argument): every rank bound to one CPU (the host is
 * oversubscribed wherever the test runs); the program's first collective
 * is a 64 KiB MPI_Iallreduce, which must take allreduce.direct, although
 * no collective has made the communicator's shared-memory segment yet
 * (the rule asked for it: rabenseifner ran). The same on a duplicate of
 * MPI_COMM_WORLD after blocking collectives on MPI_COMM_WORLD.
 *
 * thread: as first, but the odd ranks alone run the progress thread
 * (BM_PML_PROGRESS_THREAD=1, set before MPI_Init from BMRUN_RANK), whose
 * handoff keeps nonblocking allreduces above 4 ranks off allreduce.direct:
 * every rank must run the same algorithm (the odd ranks' own setting would
 * have them take rabenseifner and the even ones direct: a hang or wrong
 * sums).
 *
 * yield: 2 ranks, not bound (a CPU each where the machine has two);
 * rank 1 alone never yields (BM_PML_IDLE_YIELD=0, the harness gives 64 to
 * every test), so rank 0 alone sees ranks that share cores. Allgathers of
 * 1 KiB blocks (where the segment puts the data: two write areas or one)
 * and 64 KiB broadcasts (single copy or the large area) must find the data
 * where it was written and count the same paths on both ranks.
 *
 * Every result is checked, and each rank's counts of the algorithms are
 * compared with every other rank's. */
#include "bm_test.h"

#include <bitmover.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VEC (64 * 1024)

static int rank, size;

/* The counters each part compares across the ranks. */
static const char *const names[] = {"allreduce.direct", "allreduce.rabenseifner",
                                    "allreduce.ring",   "allreduce.recursive_doubling",
                                    "sm.areas",         "sm.large",
                                    "sm.copy",          "sm.copy_split",
                                    "bcast.split",      "sm.near"};
#define NNAMES ((int)(sizeof(names) / sizeof(names[0])))

static void counts(unsigned long *c)
{
    for (int i = 0; i < NNAMES; i++)
        c[i] = bm_coll_alg_count(names[i]);
}

/* Every rank's counts since before (the same on every rank): the deltas
 * of rank 0, or NULL on a mismatch (reported). */
static bool same_everywhere(const unsigned long *before, unsigned long *delta, const char *what)
{
    unsigned long now[NNAMES], *all = malloc(sizeof(now) * (size_t)size);
    bool ok = true;

    BM_CHECK(all != NULL);
    counts(now);
    for (int i = 0; i < NNAMES; i++)
        delta[i] = now[i] - before[i];
    MPI_Allgather(delta, NNAMES, MPI_UNSIGNED_LONG, all, NNAMES, MPI_UNSIGNED_LONG, MPI_COMM_WORLD);
    for (int r = 1; r < size; r++)
        for (int i = 0; i < NNAMES; i++)
            if (all[(size_t)r * NNAMES + i] != all[i]) {
                BM_CHECK_MSG(false, "%s: rank %d counted %s %lu times, rank 0 %lu", what, r,
                             names[i], all[(size_t)r * NNAMES + i], all[i]);
                ok = false;
            }
    free(all);
    return ok;
}

/* noinline: inlined into a caller whose name is a constant, gcc -O3 warns
 * (-Wstring-compare) of each entry the name cannot equal, and -Werror
 * fails the check-O3 build. */
static __attribute__((noinline)) int idx(const char *name)
{
    for (int i = 0; i < NNAMES; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    BM_CHECK_MSG(false, "no counter named %s", name);
    return 0;
}

/* A 64 KiB MPI_Iallreduce on comm, checked; the algorithm counts of the
 * call (compared across the ranks). */
static void iallreduce(MPI_Comm comm, int call, unsigned long *delta, const char *what)
{
    int n = VEC / (int)sizeof(float), p;
    float *s = malloc(VEC), *r = malloc(VEC);
    unsigned long before[NNAMES];
    MPI_Request q;

    BM_CHECK(s != NULL && r != NULL);
    MPI_Comm_size(comm, &p);
    for (int i = 0; i < n; i++)
        s[i] = (float)(rank + (i + call) % 5), r[i] = -1;
    counts(before);
    BM_CHECK_EQ_INT(MPI_Iallreduce(s, r, n, MPI_FLOAT, MPI_SUM, comm, &q), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Wait(&q, MPI_STATUS_IGNORE), MPI_SUCCESS);
    int wrong = 0;
    for (int i = 0; i < n; i++)
        wrong += r[i] != (float)(p * (p - 1) / 2 + p * ((i + call) % 5));
    BM_CHECK_MSG(wrong == 0, "rank %d, %s: %d elements wrong", rank, what, wrong);
    same_everywhere(before, delta, what);
    free(s);
    free(r);
}

static void part_allreduce(bool thread)
{
    unsigned long d[NNAMES];
    /* above 4 ranks a host where some rank hands off keeps off direct */
    bool direct = size <= 4 || !thread;
    const char *want = direct ? "allreduce.direct" : "allreduce.rabenseifner";

    bm_test_current = "the first collective, MPI_Iallreduce of 64 KiB";
    iallreduce(MPI_COMM_WORLD, 0, d, bm_test_current);
    if (rank == 0)
        printf("first MPI_Iallreduce: direct %lu, rabenseifner %lu\n", d[idx("allreduce.direct")],
               d[idx("allreduce.rabenseifner")]);
    BM_CHECK_MSG(d[idx(want)] == 1, "rank %d: the first MPI_Iallreduce ran %s %lu times, not once",
                 rank, want, d[idx(want)]);

    bm_test_current = "MPI_Iallreduce after blocking collectives (the segment made)";
    int x = rank;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    BM_CHECK_EQ_INT(x, size * (size - 1) / 2);
    for (int call = 1; call <= 3; call++) {
        iallreduce(MPI_COMM_WORLD, call, d, bm_test_current);
        BM_CHECK_MSG(d[idx(want)] == 1, "rank %d, call %d: ran %s %lu times, not once", rank, call,
                     want, d[idx(want)]);
    }

    bm_test_current = "the first collective of a duplicate communicator, MPI_Iallreduce";
    MPI_Comm dup;
    BM_CHECK_EQ_INT(MPI_Comm_dup(MPI_COMM_WORLD, &dup), MPI_SUCCESS);
    iallreduce(dup, 7, d, bm_test_current);
    BM_CHECK_MSG(d[idx(want)] == 1, "rank %d: ran %s %lu times, not once", rank, want,
                 d[idx(want)]);
    MPI_Comm_free(&dup);
}

static unsigned char pat(int from, int call, size_t i)
{
    return (unsigned char)(from * 37 + call * 11 + i * 5 + (i >> 9));
}

static void part_yield(void)
{
    unsigned long before[NNAMES], d[NNAMES];
    size_t blk = 1024;
    unsigned char *s = malloc(VEC), *r = malloc(VEC * 2);

    BM_CHECK(s != NULL && r != NULL);
    bm_test_current = "allgather of 1 KiB blocks, one rank yielding";
    counts(before);
    for (int call = 0; call < 6; call++) {
        for (size_t i = 0; i < blk; i++)
            s[i] = pat(rank, call, i);
        memset(r, 0, blk * (size_t)size);
        BM_CHECK_EQ_INT(MPI_Allgather(s, (int)blk, MPI_BYTE, r, (int)blk, MPI_BYTE, MPI_COMM_WORLD),
                        MPI_SUCCESS);
        size_t bad = 0;
        for (int from = 0; from < size; from++)
            for (size_t i = 0; i < blk; i++)
                bad += r[(size_t)from * blk + i] != pat(from, call, i);
        BM_CHECK_MSG(bad == 0, "rank %d, allgather %d: %zu bytes wrong", rank, call, bad);
    }
    same_everywhere(before, d, bm_test_current);
    if (rank == 0)
        printf("allgather 1 KiB: sm.areas %lu\n", d[idx("sm.areas")]);

    bm_test_current = "bcast of 64 KiB, one rank yielding";
    counts(before);
    for (int call = 0; call < 4; call++) {
        for (size_t i = 0; i < VEC; i++)
            s[i] = rank == 0 ? pat(0, call, i) : 0;
        BM_CHECK_EQ_INT(MPI_Bcast(s, VEC, MPI_BYTE, 0, MPI_COMM_WORLD), MPI_SUCCESS);
        size_t bad = 0;
        for (size_t i = 0; i < VEC; i++)
            bad += s[i] != pat(0, call, i);
        BM_CHECK_MSG(bad == 0, "rank %d, bcast %d: %zu bytes wrong", rank, call, bad);
    }
    same_everywhere(before, d, bm_test_current);
    if (rank == 0)
        printf("bcast 64 KiB: sm.large %lu, sm.copy %lu\n", d[idx("sm.large")], d[idx("sm.copy")]);
    free(s);
    free(r);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "first", *me = getenv("BMRUN_RANK");
    int world_rank = me ? atoi(me) : 0;
    bool thread = strcmp(mode, "thread") == 0, yield = strcmp(mode, "yield") == 0;

    if (!yield)
        BM_CHECK(bm_test_bind_lowest_cpu());
    if (thread && world_rank % 2 == 1)
        setenv("BM_PML_PROGRESS_THREAD", "1", 1);
    if (yield && world_rank == 1)
        setenv("BM_PML_IDLE_YIELD", "0", 1);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (yield)
        part_yield();
    else
        part_allreduce(thread);
    MPI_Finalize();
    return bm_test_summary("coll_agree");
}
