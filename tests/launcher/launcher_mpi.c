/* An MPI program for the tests that start bitmover jobs with other
 * launchers (mpiexec.hydra, Open MPI's mpirun, srun). Every rank prints
 * one line naming the runtime backend that started it, its rank, the job
 * size, its node's rank count, its MPI_APPNUM and how the launcher was
 * reached (PMI version and socket, PMIx modex mode), then checks an
 * MPI_Allreduce of the ranks and a ring exchange; rank 0 prints
 * "allreduce ok N" when both hold on every rank. Arguments: "abort R CODE"
 * makes rank R call MPI_Abort(CODE) after the checks; "stdin" makes rank 0
 * read stdin and print its lines (bmrun forwards stdin to rank 0); "conns"
 * does nothing but MPI_Init and a barrier, then rank 0 prints the most TCP
 * connections any rank holds (transports connect on first use); "records"
 * also does only MPI_Init and a barrier, then rank 0 prints the most
 * endpoint records any rank's tcp, dgram and sm made and the most other
 * ranks' sm segments any rank maps (per-peer state is made only where it
 * is used). The launcher scripts check the lines. */
#include "btl/btl.h"
#include "runtime/rte.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Established TCP connections of this process: its socket inodes
 * (/proc/self/fd) found in state 01 in /proc/net/tcp or tcp6. */
static int tcp_established(void)
{
    char path[64], link[64];
    unsigned long inodes[1024];
    int n = 0, count = 0;
    for (int fd = 0; fd < 4096 && n < 1024; fd++) {
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        ssize_t len = readlink(path, link, sizeof(link) - 1);
        if (len > 0) {
            link[len] = '\0';
            if (sscanf(link, "socket:[%lu]", &inodes[n]) == 1)
                n++;
        }
    }
    const char *tables[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    for (int t = 0; t < 2; t++) {
        FILE *f = fopen(tables[t], "r");
        char line[512];
        while (f && fgets(line, sizeof(line), f)) {
            unsigned st;
            unsigned long ino;
            /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
            if (sscanf(line, " %*s %*s %*s %x %*s %*s %*s %*s %*s %lu", &st, &ino) != 2 || st != 1)
                continue;
            for (int i = 0; i < n; i++)
                count += inodes[i] == ino;
        }
        if (f)
            fclose(f);
    }
    return count;
}

/* Other processes' sm segments this process maps (/proc/self/maps lines
 * of /dev/shm/bm-<jobid>-sm-<rank> files other than its own). */
static int sm_segments_mapped(void)
{
    const struct bm_rte_proc *self = bm_rte_self();
    char own[128], line[512];
    int ownlen = snprintf(own, sizeof(own), "/dev/shm/bm-%s-sm-%d", self->jobid, self->rank);
    FILE *f = fopen("/proc/self/maps", "r");
    int n = 0;
    while (f && fgets(line, sizeof(line), f)) {
        /* "... /dev/shm/bm-<jobid>-sm-<rank>", with " (deleted)" once unlinked */
        const char *p = strstr(line, "/dev/shm/bm-");
        bool is_own =
            p && strncmp(p, own, (size_t)ownlen) == 0 && (p[ownlen] == '\n' || p[ownlen] == ' ');
        n += p && strstr(p, "-sm-") && !is_own;
    }
    if (f)
        fclose(f);
    return n;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc >= 2 && strcmp(argv[1], "records") == 0) {
        MPI_Barrier(MPI_COMM_WORLD);
        int mine[4] = {bm_btl_base_endpoint_count("tcp"), bm_btl_base_endpoint_count("dgram"),
                       bm_btl_base_endpoint_count("sm"), sm_segments_mapped()};
        int most[4], all = 0, r;
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
        MPI_Reduce(mine, most, 4, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&mine[3], &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
        if (r == 0)
            printf("records at most: tcp %d dgram %d sm %d, sm segments mapped %d (all ranks: "
                   "%d)\n",
                   most[0], most[1], most[2], most[3], all);
        MPI_Finalize();
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "conns") == 0) {
        /* After MPI_Init and a barrier only: how many TCP connections a
         * rank holds (transports connect on first use, not all-to-all). */
        MPI_Barrier(MPI_COMM_WORLD);
        int r, conns = tcp_established(), most = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
        MPI_Reduce(&conns, &most, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
        if (r == 0)
            printf("tcp connections at most %d per rank\n", most);
        MPI_Finalize();
        return 0;
    }
    int rank, size, lsize;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &lsize);
    int *appnum, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
    printf("rank %d of %d backend %s node-ranks %d app %d via %s\n", rank, size,
           bm_rte_backend_name(), lsize, flag ? *appnum : -1, bm_rte_self()->via);
    fflush(stdout);

    long sum = 0, mine = rank + 1;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    int right = (rank + 1) % size, left = (rank + size - 1) % size, got = -1;
    MPI_Sendrecv(&rank, 1, MPI_INT, right, 7, &got, 1, MPI_INT, left, 7, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    int good = sum == (long)size * (size + 1) / 2 && got == left, all = 0;
    MPI_Allreduce(&good, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank == 0)
        printf("allreduce %s %d\n", all ? "ok" : "FAILED", size);
    fflush(stdout);

    if (argc >= 4 && strcmp(argv[1], "abort") == 0 && rank == atoi(argv[2]))
        MPI_Abort(MPI_COMM_WORLD, atoi(argv[3]));
    if (argc >= 2 && strcmp(argv[1], "stdin") == 0 && rank == 0) {
        char line[256];
        while (fgets(line, sizeof(line), stdin))
            printf("stdin: %s", line);
    }
    MPI_Comm_free(&node);
    MPI_Finalize();
    return all ? 0 : 1;
}
