/* The crowded rule of the collective choice (src/mpi/coll_select.c): on a
 * host with more ranks than cores an alltoall of large blocks posts every
 * transfer at once (alltoall.linear) instead of exchanging pairwise, one
 * peer per step (alltoall.pairwise). The rule asks only what every rank
 * sees alike (all ranks on this host, the host oversubscribed: ff5c9e2),
 * not whether the communicator's shared-memory segment exists yet; here the
 * first collective is itself such an alltoall (64 KiB blocks: too large for
 * the segment's large area where ranks share cores), which must already get
 * the linear algorithm. Then broadcasts of 64 KiB on these few ranks that
 * share cores (BM_MPI_COLL_SM_CROWDED_BCAST_COPY) must reach a reader on the
 * root's CPU through the large area (sm.near) and a reader on another CPU
 * by single copy from the root's buffer (sm.copy) or, when it starts after
 * the root has published, through the area (sm.late); a reader that starts
 * after the root's call returned must not be waited for. Last, a
 * nonblocking allreduce of 64 KiB must take allreduce.direct (two rounds),
 * a blocking one not. Ranks 0 and 1 bind themselves to one CPU before
 * MPI_Init, rank 2 to another where the machine has one (else to the same,
 * and its part is not required), so the host is oversubscribed wherever the
 * test runs. The data of every call is checked. */
#include "bm_test.h"

#include <bitmover.h>
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BLOCK (64 * 1024)

static unsigned char pat(int from, int to, int call, size_t i)
{
    return (unsigned char)(from * 31 + to * 17 + call * 7 + i * 3 + (i >> 10));
}

/* Rank 2 (BMRUN_RANK before MPI_Init) binds to the second CPU it may use,
 * the others (and rank 2 on a machine of one CPU) to the lowest. True when
 * this rank is on another CPU than ranks 0 and 1. */
static bool bind_ranks(void)
{
    const char *r = getenv("BMRUN_RANK");
    cpu_set_t set;
    int seen = 0;

    if (r != NULL && atoi(r) == 2 && sched_getaffinity(0, sizeof(set), &set) == 0)
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
            if (CPU_ISSET(cpu, &set) && ++seen == 2) {
                cpu_set_t one;
                CPU_ZERO(&one);
                CPU_SET(cpu, &one);
                if (sched_setaffinity(0, sizeof(one), &one) == 0)
                    return true;
                break;
            }
    BM_CHECK(bm_test_bind_lowest_cpu());
    return false;
}

int main(int argc, char **argv)
{
    int rank, size;
    bool apart = bind_ranks();
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    bm_test_current = "first collective: a large alltoall on an oversubscribed host";
    unsigned char *s = malloc((size_t)size * BLOCK), *r = malloc((size_t)size * BLOCK);
    BM_CHECK(s != NULL && r != NULL);
    for (int call = 0; call < 3; call++) {
        for (int to = 0; to < size; to++)
            for (size_t i = 0; i < BLOCK; i++)
                s[(size_t)to * BLOCK + i] = pat(rank, to, call, i);
        BM_CHECK_EQ_INT(MPI_Alltoall(s, BLOCK, MPI_BYTE, r, BLOCK, MPI_BYTE, MPI_COMM_WORLD),
                        MPI_SUCCESS);
        size_t bad = 0;
        for (int from = 0; from < size; from++)
            for (size_t i = 0; i < BLOCK; i++)
                bad += r[(size_t)from * BLOCK + i] != pat(from, rank, call, i);
        BM_CHECK_MSG(bad == 0, "call %d: %zu bytes wrong", call, bad);
    }
    unsigned long linear = bm_coll_alg_count("alltoall.linear"),
                  pairwise = bm_coll_alg_count("alltoall.pairwise");
    if (rank == 0)
        printf("alltoall.linear %lu, alltoall.pairwise %lu\n", linear, pairwise);
    BM_CHECK_MSG(linear == 3 && pairwise == 0,
                 "rank %d on an oversubscribed host: alltoall.linear ran %lu times and "
                 "alltoall.pairwise %lu times, expected 3 and 0",
                 rank, linear, pairwise);
    bm_test_current = "64 KiB broadcasts on ranks that share cores";
    /* the first makes the large area (collectives of their own): not counted */
    unsigned long copies = 0, sm = 0, near = 0, late = 0;
    for (int call = 0; call < 4; call++) {
        if (call == 1) {
            copies = bm_coll_alg_count("sm.copy");
            sm = bm_coll_alg_count("bcast.sm");
            near = bm_coll_alg_count("sm.near");
            late = bm_coll_alg_count("sm.late");
        }
        /* the root comes last (the others wait inside the call) */
        if (rank == 1)
            nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
        for (size_t i = 0; i < BLOCK; i++)
            s[i] = rank == 1 ? pat(1, 0, call, i) : 0;
        BM_CHECK_EQ_INT(MPI_Bcast(s, BLOCK, MPI_BYTE, 1, MPI_COMM_WORLD), MPI_SUCCESS);
        size_t bad = 0;
        for (size_t i = 0; i < BLOCK; i++)
            bad += s[i] != pat(1, 0, call, i);
        BM_CHECK_MSG(bad == 0, "bcast %d: %zu bytes wrong", call, bad);
    }
    copies = bm_coll_alg_count("sm.copy") - copies;
    sm = bm_coll_alg_count("bcast.sm") - sm;
    near = bm_coll_alg_count("sm.near") - near;
    late = bm_coll_alg_count("sm.late") - late;
    printf("rank %d%s: bcast.sm %lu, sm.near %lu, sm.copy %lu, sm.late %lu\n", rank,
           apart ? " (another CPU)" : "", sm, near, copies, late);
    BM_CHECK_MSG(sm == 3, "rank %d: 3 broadcasts of 64 KiB ran bcast.sm %lu times", rank, sm);
    if (rank == 0)
        BM_CHECK_MSG(near == 3 && copies == 0,
                     "rank 0 on the root's CPU: 3 broadcasts of 64 KiB read the large area %lu "
                     "times and the root's buffer by single copy %lu times, expected 3 and 0",
                     near, copies);
    /* it took the root's buffer unless it came after the root had
     * published (then the area): not decided by the test */
    if (apart)
        BM_CHECK_MSG(copies + late == 3 && near == 0,
                     "rank %d on another CPU than the root: 3 broadcasts of 64 KiB read the "
                     "root's buffer by single copy %lu times, the area after the root %lu "
                     "times and as on the root's CPU %lu times, expected 3 in all, 0 the last",
                     rank, copies, late, near);

    /* The root does not wait for a reader that has not started: rank 2
     * enters the broadcast only after a message the root sends when its
     * broadcast has returned (waiting for every reader, the root would
     * never send it: rank 2 gives up after 20 s). */
    bm_test_current = "a reader that starts after the root has returned";
    late = bm_coll_alg_count("sm.late");
    near = bm_coll_alg_count("sm.near");
    int token = 0;
    if (rank == 2) {
        MPI_Request req;
        int got = 0;
        double end = MPI_Wtime() + 20;
        MPI_Irecv(&token, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, &req);
        while (!got && MPI_Wtime() < end)
            MPI_Test(&req, &got, MPI_STATUS_IGNORE);
        BM_CHECK_MSG(got, "rank 2: the root's broadcast did not return in 20 s without rank 2");
        if (!got)
            MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i < BLOCK; i++)
        s[i] = rank == 1 ? pat(1, 2, 9, i) : 0;
    BM_CHECK_EQ_INT(MPI_Bcast(s, BLOCK, MPI_BYTE, 1, MPI_COMM_WORLD), MPI_SUCCESS);
    if (rank == 1)
        MPI_Send(&token, 1, MPI_INT, 2, 7, MPI_COMM_WORLD);
    size_t wrong = 0;
    for (size_t i = 0; i < BLOCK; i++)
        wrong += s[i] != pat(1, 2, 9, i);
    BM_CHECK_MSG(wrong == 0, "late bcast: %zu bytes wrong", wrong);
    late = bm_coll_alg_count("sm.late") - late;
    near = bm_coll_alg_count("sm.near") - near;
    if (rank == 2)
        BM_CHECK_MSG(apart ? late == 1 : near == 1,
                     "rank 2 (%s) after the root had returned: read the area as a late reader "
                     "%lu times, as one on the root's CPU %lu times",
                     apart ? "another CPU" : "the root's CPU", late, near);

    /* A nonblocking allreduce of a large vector takes the two rounds of
     * allreduce.direct (each round waits for the peers' turns on the
     * cores); the blocking one keeps its choice. */
    bm_test_current = "large allreduces on an oversubscribed host";
    float *fs = (float *)s, *fr = (float *)r;
    int n = BLOCK / (int)sizeof(float);
    for (int form = 0; form < 2; form++) {
        unsigned long direct = bm_coll_alg_count("allreduce.direct");
        for (int i = 0; i < n; i++)
            fs[i] = (float)(rank + i % 7), fr[i] = -1;
        if (form == 0) {
            MPI_Request q;
            BM_CHECK_EQ_INT(MPI_Iallreduce(fs, fr, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &q),
                            MPI_SUCCESS);
            BM_CHECK_EQ_INT(MPI_Wait(&q, MPI_STATUS_IGNORE), MPI_SUCCESS);
        } else {
            BM_CHECK_EQ_INT(MPI_Allreduce(fs, fr, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                            MPI_SUCCESS);
        }
        int wrong_f = 0;
        for (int i = 0; i < n; i++)
            wrong_f += fr[i] != (float)(size * (size - 1) / 2 + size * (i % 7));
        BM_CHECK_MSG(wrong_f == 0, "%s: %d elements wrong",
                     form ? "MPI_Allreduce" : "MPI_Iallreduce", wrong_f);
        direct = bm_coll_alg_count("allreduce.direct") - direct;
        BM_CHECK_MSG(direct == (form == 0 ? 1ul : 0ul),
                     "rank %d: %s of 64 KiB ran allreduce.direct %lu times, expected %d", rank,
                     form ? "MPI_Allreduce" : "MPI_Iallreduce", direct, form == 0);
    }
    free(s);
    free(r);
    MPI_Finalize();
    return bm_test_summary("coll_crowded");
}
