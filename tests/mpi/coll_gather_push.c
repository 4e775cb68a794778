/* A large blocking gather on ranks with cores of their own goes by single
 * copy at every size up to BM_MPI_COLL_SM_COPY_MAX (src/mpi/coll_select.c,
 * sm_copy_wanted): the other ranks write their blocks into the root's
 * contiguous receive buffer themselves (coll_sm.c, gather_copy:
 * gather.push), where it used to take the point-to-point path above
 * BM_MPI_COLL_SM_COPY_ROOTED_MAX (64 KiB), a broadcast's limit. Gathers of
 * 64 KiB + 1 byte, 256 KiB and 1 MiB blocks to each root: every block must
 * arrive where it belongs, and every rank that is not the root must count
 * one gather.push per call (on a host with fewer CPUs than ranks the ranks
 * share cores and single copy is off: the counts are then not required). */
#include "bm_test.h"

#include <bitmover.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    static const int sizes[] = {64 * 1024 + 1, 256 * 1024, 1024 * 1024};
    int rank, size, calls = 0, mine = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    unsigned long push0 = bm_coll_alg_count("gather.push");
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        int n = sizes[s];
        char *sbuf = malloc((size_t)n), *rbuf = malloc((size_t)n * (size_t)size);
        BM_CHECK(sbuf != NULL && rbuf != NULL);
        for (int i = 0; i < n; i++)
            sbuf[i] = (char)(rank * 31 + i * 7 + (int)s);
        for (int root = 0; root < size; root++) {
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
    unsigned long pushed = bm_coll_alg_count("gather.push") - push0;
    if (sysconf(_SC_NPROCESSORS_ONLN) < size) {
        if (rank == 0)
            printf("coll_gather_push: %ld CPUs for %d ranks: gather.push not required\n",
                   sysconf(_SC_NPROCESSORS_ONLN), size);
    } else {
        BM_CHECK_MSG(pushed == (unsigned long)mine,
                     "rank %d: gather.push counted %lu of %d gathers it sent (of %d calls)", rank,
                     pushed, mine, calls);
    }
    MPI_Finalize();
    return bm_test_summary("coll_gather_push");
}
