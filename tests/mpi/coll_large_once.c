/* Where ranks share cores, data larger than a slot goes through the
 * shared-memory segment's large area (src/mpi/coll_sm.c,
 * bm_coll_sm_large_ready), which is made at its full size,
 * BM_MPI_COLL_SM_LARGE_MAX, at the first call that needs it, and not made
 * anew as later calls grow: remakes as the sizes grew (256 KiB, 512 KiB,
 * 1 MiB) left the calls after them taking seconds against two busy loops.
 *
 * Allreduces of growing sizes (each larger than a slot, BM_MPI_COLL_SM_SLOT
 * set small by the test's environment) run through the area (counter
 * sm.large); after each, every rank has exactly one mapping of the area
 * (/proc/self/maps: the unlinked /dev/shm file whose name holds
 * "-coll-large") and its size is the one seen after the first call, which
 * is the full size: BM_MPI_COLL_SM_LARGE_MAX / (2 x ranks), rounded down
 * to 64 bytes, per slot. Its pages come as the calls grow: after the first
 * call (1 KiB) this rank's mapping has fewer resident pages than the area
 * (/proc/self/smaps Rss: the pages of each slot's first 4 x
 * BM_MPI_COLL_SM_SLOT bytes), after the last (a whole slot) all of them.
 * The sums are checked. */
#include "bm_test.h"

#include <bitmover.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Mappings of the large area in this process, the bytes of the last and
 * how many of them are resident (Rss). */
static int large_maps(unsigned long *bytes, unsigned long *rss)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    int n = 0;
    bool in = false;

    *bytes = *rss = 0;
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f)) {
        unsigned long lo, hi, kb;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
            in = strstr(line, "/dev/shm/") && strstr(line, "-coll-large");
            if (in) {
                n++;
                *bytes = hi - lo;
            }
        } else if (in && sscanf(line, "Rss: %lu kB", &kb) == 1) {
            *rss = kb * 1024;
        }
    }
    fclose(f);
    return n;
}

int main(int argc, char **argv)
{
    int rank, size;
    const char *max_env = getenv("BM_MPI_COLL_SM_LARGE_MAX");
    unsigned long first = 0, last_rss = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    BM_CHECK_MSG(max_env != NULL && strcmp(max_env, "96k") == 0,
                 "run with BM_MPI_COLL_SM_LARGE_MAX=96k (the test's environment)");
    /* the full size: 2 x ranks slots of 96 KiB / (2 x ranks), to 64 bytes */
    unsigned long slot = 96UL * 1024 / (2UL * (unsigned long)size) / 64 * 64;
    unsigned long want = 2UL * (unsigned long)size * slot, page = 4096;
    want = (want + page - 1) / page * page; /* mapped in whole pages */
    unsigned long large0 = bm_coll_alg_count("sm.large");

    /* 1 KiB to the largest the area holds: 16 KiB slots at 3 ranks (api.cmake) */
    for (size_t bytes = 1024; bytes <= slot; bytes *= 2) {
        int n = (int)(bytes / sizeof(int));
        int *in = malloc(bytes), *out = malloc(bytes);
        BM_CHECK(in != NULL && out != NULL);
        for (int i = 0; i < n; i++)
            in[i] = rank + i;
        BM_CHECK_EQ_INT(MPI_Allreduce(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
        int bad = 0;
        for (int i = 0; i < n && !bad; i++)
            bad = out[i] != size * (size - 1) / 2 + size * i;
        BM_CHECK_MSG(!bad, "rank %d: wrong sum at %zu bytes", rank, bytes);
        unsigned long got, rss;
        int maps = large_maps(&got, &rss);
        BM_CHECK_MSG(maps == 1,
                     "rank %d: %d mappings of the large area after %zu bytes, 1 expected", rank,
                     maps, bytes);
        if (first == 0) {
            first = got;
            BM_CHECK_MSG(rss < got,
                         "rank %d: the large area took all its %lu bytes at the first call "
                         "(%zu bytes): %lu resident",
                         rank, got, bytes, rss);
        }
        last_rss = rss;
        BM_CHECK_MSG(got == first,
                     "rank %d: the large area was made anew at %zu bytes: %lu "
                     "bytes, %lu after the first call",
                     rank, bytes, got, first);
        free(in);
        free(out);
    }
    BM_CHECK_MSG(first == want, "rank %d: the large area has %lu bytes, its full size %lu", rank,
                 first, want);
    BM_CHECK_MSG(last_rss == want,
                 "rank %d: after a call of a whole slot %lu of the area's %lu bytes are resident",
                 rank, last_rss, want);
    BM_CHECK_MSG(bm_coll_alg_count("sm.large") > large0,
                 "rank %d: no call went through the large area (sm.large)", rank);
    MPI_Finalize();
    return bm_test_summary("coll_large_once");
}
