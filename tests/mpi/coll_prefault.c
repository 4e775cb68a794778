/* The shared-memory collective segment (src/mpi/coll_sm.c, prefault) is
 * touched page by page by every rank when it is made, so that no rank
 * first touches one of its pages in the middle of its collectives (on a
 * virtual machine such a first touch stalled a rank for up to ms). After
 * the first collective, which makes the segment, each rank's mapping of it
 * (/proc/self/smaps: the unlinked /dev/shm file whose name holds "-coll-")
 * must be resident in full: Rss equal to its Size. Without the touching,
 * only the pages of the flags that the first barrier used are. Then a
 * broadcast checks that the segment still carries data. */
#include "bm_test.h"

#include <mpi.h>
#include <stdio.h>
#include <string.h>

/* Of the mappings of the collective segment in this process: how many,
 * and how many of them are resident in full (Rss == Size). */
static void segment_residency(int *maps, int *full)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    bool in_seg = false;
    long size = -1;

    *maps = *full = 0;
    if (f == NULL)
        return;
    while (fgets(line, sizeof(line), f)) {
        long kb;
        if (strchr(line, '-') && strchr(line, ' ') && strchr(line, '-') < strchr(line, ' ')) {
            /* a mapping's first line: "start-end perms offset dev inode path" */
            in_seg =
                strstr(line, "/dev/shm/") && strstr(line, "-coll-") && !strstr(line, "-coll-large");
            size = -1;
            if (in_seg)
                (*maps)++;
        } else if (in_seg && sscanf(line, "Size: %ld kB", &kb) == 1) {
            size = kb;
        } else if (in_seg && sscanf(line, "Rss: %ld kB", &kb) == 1) {
            if (size > 0 && kb == size)
                (*full)++;
            else
                printf("coll_prefault: segment mapping %ld kB, %ld kB resident\n", size, kb);
        }
    }
    fclose(f);
}

int main(int argc, char **argv)
{
    int rank, size, maps, full;
    long v[4] = {0, 0, 0, 0};

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    BM_CHECK_EQ_INT(MPI_Barrier(MPI_COMM_WORLD), MPI_SUCCESS);
    segment_residency(&maps, &full);
    BM_CHECK_MSG(maps == 1, "rank %d: %d mappings of the collective segment, 1 expected", rank,
                 maps);
    BM_CHECK_MSG(full == maps, "rank %d: the collective segment is not resident in full", rank);
    if (rank == 0)
        for (int i = 0; i < 4; i++)
            v[i] = 1000 + i;
    BM_CHECK_EQ_INT(MPI_Bcast(v, 4, MPI_LONG, 0, MPI_COMM_WORLD), MPI_SUCCESS);
    for (int i = 0; i < 4; i++)
        BM_CHECK_EQ_INT(v[i], 1000 + i);
    MPI_Finalize();
    return bm_test_summary("coll_prefault");
}
