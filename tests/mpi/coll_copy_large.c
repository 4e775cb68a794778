/* Large blocking gathers and broadcasts on 2 ranks with cores of their own
 * go by single copy at every size up to BM_MPI_COLL_SM_COPY_MAX
 * (src/mpi/coll_select.c, sm_copy_wanted), where they used to take the
 * point-to-point path above BM_MPI_COLL_SM_COPY_ROOTED_MAX (64 KiB, now the
 * limit of broadcasts on more ranks): a gather's other rank writes its
 * block into the root's contiguous receive buffer (coll_sm.c, gather_copy:
 * gather.push), a broadcast's root writes the second half into the
 * reader's buffer while the reader reads the first (bcast_copy:
 * bcast.split). Gathers and broadcasts of 64 KiB + 1 byte, 256 KiB and
 * 1 MiB from each root: every byte must arrive where it belongs, and every
 * rank must count one gather.push per gather it sent and one bcast.split
 * per broadcast it was the root of (where the ranks' affinity masks hold
 * fewer CPUs than ranks, they share cores and single copy is off: the
 * counts are then not required). */
#include "bm_test.h"

#include <bitmover.h>
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    static const int sizes[] = {64 * 1024 + 1, 256 * 1024, 1024 * 1024};
    int rank, size, calls = 0, mine = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    unsigned long push0 = bm_coll_alg_count("gather.push"),
                  split0 = bm_coll_alg_count("bcast.split");
    int rooted = 0;
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        int n = sizes[s];
        char *sbuf = malloc((size_t)n), *rbuf = malloc((size_t)n * (size_t)size);
        BM_CHECK(sbuf != NULL && rbuf != NULL);
        for (int i = 0; i < n; i++)
            sbuf[i] = (char)(rank * 31 + i * 7 + (int)s);
        for (int root = 0; root < size; root++) {
            char *bbuf = rbuf;
            if (rank == root) {
                memcpy(bbuf, sbuf, (size_t)n);
                rooted++;
            } else {
                memset(bbuf, 0x5a, (size_t)n);
            }
            BM_CHECK_EQ_INT(MPI_Bcast(bbuf, n, MPI_CHAR, root, MPI_COMM_WORLD), MPI_SUCCESS);
            int wrong = 0;
            for (int i = 0; i < n; i++)
                wrong += bbuf[i] != (char)(root * 31 + i * 7 + (int)s);
            BM_CHECK_MSG(wrong == 0, "rank %d: bcast of %d bytes from root %d: %d bytes wrong",
                         rank, n, root, wrong);
            memset(rbuf, 0x5a, (size_t)n * (size_t)size);
            BM_CHECK_EQ_INT(MPI_Gather(sbuf, n, MPI_CHAR, rbuf, n, MPI_CHAR, root, MPI_COMM_WORLD),
                            MPI_SUCCESS);
            calls++;
            if (rank != root) {
                mine++;
                continue;
            }
            int bad = 0;
            for (int r = 0; r < size; r++)
                for (int i = 0; i < n; i++)
                    bad +=
                        rbuf[(size_t)r * (size_t)n + (size_t)i] != (char)(r * 31 + i * 7 + (int)s);
            BM_CHECK_MSG(bad == 0, "gather of %d bytes to root %d: %d bytes wrong", n, root, bad);
        }
        free(sbuf);
        free(rbuf);
    }
    unsigned long pushed = bm_coll_alg_count("gather.push") - push0,
                  split = bm_coll_alg_count("bcast.split") - split0;
    /* the PML's rule: ranks share cores when the union of their affinity
     * masks has fewer CPUs than there are ranks */
    cpu_set_t cpus, all;
    CPU_ZERO(&cpus);
    if (sched_getaffinity(0, sizeof(cpus), &cpus) != 0)
        CPU_ZERO(&cpus);
    MPI_Allreduce(&cpus, &all, (int)sizeof(cpus), MPI_BYTE, MPI_BOR, MPI_COMM_WORLD);
    if (CPU_COUNT(&all) < size) {
        if (rank == 0)
            printf("coll_copy_large: %d CPUs for %d ranks: gather.push, bcast.split not "
                   "required\n",
                   CPU_COUNT(&all), size);
    } else {
        BM_CHECK_MSG(pushed == (unsigned long)mine,
                     "rank %d: gather.push counted %lu of %d gathers it sent (of %d calls)", rank,
                     pushed, mine, calls);
        BM_CHECK_MSG(split == (unsigned long)rooted,
                     "rank %d: bcast.split counted %lu of the %d broadcasts it was the root of",
                     rank, split, rooted);
    }
    MPI_Finalize();
    return bm_test_summary("coll_copy_large");
}
