/* bm_hello: the program whose launch-to-exit time bench/compare reports as
 * "startup": MPI_Init, one MPI_Barrier over all ranks, MPI_Finalize. Rank 0
 * prints one line so that the driver can tell a real run from a launcher that
 * exited early. Timing is done from outside, around the launcher command,
 * because that is the wait a user sees.
 *
 * -M also reports memory per process once every rank is past the barrier
 * (bench/compare's scale class): from /proc/self/status VmRSS (resident
 * pages, shared ones counted in full), from /proc/self/smaps_rollup Pss (each
 * shared page divided among the processes that map it: what a process costs
 * the machine), and the shared-memory segments it maps (files in /dev/shm,
 * memfd and System V segments: their size, their resident part, and the
 * memory their files hold whether mapped or not, shared among the processes
 * of the node). total is what a process costs the machine: its Pss without
 * shared-memory pages, plus its share of the segments' memory. Rank 0
 * gathers the numbers and prints their average and maximum in kB:
 *   bm_hello: N ranks ... memory kB rss A/M pss A/M shm-size A/M shm-rss A/M
 *   shm-alloc A/M total A/M
 * With -T ROUNDS every rank first exchanges one message with every other rank
 * ROUNDS times (an all-to-all of small messages), so that the memory of a job
 * whose ranks all talk to each other is measured too. Linux only; the MPI
 * calls are standard, so the program builds against every MPI. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { MEM_RSS, MEM_PSS, MEM_SHM_SIZE, MEM_SHM_RSS, MEM_SHM_ALLOC, MEM_TOTAL, MEM_N };

/* "Key:   1234 kB" from a /proc file, in kB; -1 when absent. */
static long proc_kb(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[256];
    long v = -1;
    size_t n = strlen(key);
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, key, n) == 0 && line[n] == ':') {
            v = strtol(line + n + 1, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

/* A mapping that is a shared-memory segment between processes. */
static int is_shm_mapping(const char *perms, const char *path)
{
    if (perms[3] != 's')
        return 0;
    return strncmp(path, "/dev/shm/", 9) == 0 || strncmp(path, "/memfd:", 7) == 0 ||
           strncmp(path, "/SYSV", 5) == 0 || strncmp(path, "/dev/zero", 9) == 0 ||
           strncmp(path, "/tmp/", 5) == 0;
}

/* Size and resident kB of the shared-memory segments this process maps,
 * and the memory their files hold (st_blocks: pages reserved or written,
 * mapped here or not; each file counted once). */
static void shm_kb(long *size_out, long *rss_out, long *alloc_out)
{
    *size_out = *rss_out = *alloc_out = 0;
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return;
    char line[1024], seen[128][256];
    int nseen = 0, in_shm = 0;
    while (fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        char perms[8], path[768] = "";
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %767s", &lo, &hi, perms, path) >= 3 &&
            strchr(line, '-') < strchr(line, ' ')) {
            in_shm = is_shm_mapping(perms, path);
            if (!in_shm)
                continue;
            *size_out += (long)((hi - lo) / 1024);
            struct stat st;
            int dup = 0;
            for (int i = 0; i < nseen && !dup; i++)
                dup = strcmp(seen[i], path) == 0;
            /* map_files reaches the file even once it is unlinked (sm unlinks
             * its segments when every process has mapped them). */
            char mf[64];
            snprintf(mf, sizeof(mf), "/proc/self/map_files/%lx-%lx", lo, hi);
            if (!dup && path[0] == '/' && (stat(mf, &st) == 0 || stat(path, &st) == 0)) {
                *alloc_out += (long)st.st_blocks / 2;
                if (nseen < 128 && strlen(path) < sizeof(seen[0]))
                    memcpy(seen[nseen++], path, strlen(path) + 1);
            }
        } else if (in_shm && strncmp(line, "Rss:", 4) == 0) {
            *rss_out += strtol(line + 4, NULL, 10);
        }
    }
    fclose(f);
}

/* One small message to and from every other rank, rounds times. */
static void all_to_all(int rank, int nprocs, int rounds)
{
    int *in = calloc((size_t)nprocs, sizeof(int)), *out = calloc((size_t)nprocs, sizeof(int));
    MPI_Request *req = calloc(2 * (size_t)nprocs, sizeof(MPI_Request));
    MPI_Status *st = calloc(2 * (size_t)nprocs, sizeof(MPI_Status));
    if (!in || !out || !req || !st)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (int r = 0; r < rounds; r++) {
        int n = 0;
        for (int p = 0; p < nprocs; p++) {
            if (p == rank)
                continue;
            out[p] = rank;
            MPI_Irecv(&in[p], 1, MPI_INT, p, 11, MPI_COMM_WORLD, &req[n++]);
            MPI_Isend(&out[p], 1, MPI_INT, p, 11, MPI_COMM_WORLD, &req[n++]);
        }
        MPI_Waitall(n, req, st);
        for (int p = 0; p < nprocs; p++)
            if (p != rank && in[p] != p) {
                fprintf(stderr, "bm_hello: rank %d got %d from rank %d\n", rank, in[p], p);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
    }
    free(in);
    free(out);
    free(req);
    free(st);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nprocs, memory = 0, rounds = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-M") == 0)
            memory = 1;
        else if (strcmp(argv[i], "-T") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (rounds > 0)
        all_to_all(rank, nprocs, rounds);
    MPI_Barrier(MPI_COMM_WORLD);
    if (!memory) {
        if (rank == 0)
            printf("bm_hello: %d ranks initialised and synchronised\n", nprocs);
        MPI_Finalize();
        return 0;
    }
    long mine[MEM_N];
    mine[MEM_RSS] = proc_kb("/proc/self/status", "VmRSS");
    mine[MEM_PSS] = proc_kb("/proc/self/smaps_rollup", "Pss");
    long pss_shmem = proc_kb("/proc/self/smaps_rollup", "Pss_Shmem");
    shm_kb(&mine[MEM_SHM_SIZE], &mine[MEM_SHM_RSS], &mine[MEM_SHM_ALLOC]);
    MPI_Comm node;
    int local = 1;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
    mine[MEM_SHM_ALLOC] /= local; /* every segment is mapped by the node's processes */
    mine[MEM_TOTAL] = mine[MEM_PSS] - (pss_shmem > 0 ? pss_shmem : 0) + mine[MEM_SHM_ALLOC];
    long *all = rank == 0 ? calloc((size_t)nprocs * MEM_N, sizeof(long)) : NULL;
    MPI_Gather(mine, MEM_N, MPI_LONG, all, MEM_N, MPI_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double avg[MEM_N] = {0};
        long max[MEM_N] = {0};
        for (int p = 0; p < nprocs; p++)
            for (int k = 0; k < MEM_N; k++) {
                long v = all[(size_t)p * MEM_N + k];
                avg[k] += (double)v / nprocs;
                max[k] = v > max[k] ? v : max[k];
            }
        printf("bm_hello: %d ranks initialised and synchronised%s; memory kB rss %.0f/%ld pss "
               "%.0f/%ld shm-size %.0f/%ld shm-rss %.0f/%ld shm-alloc %.0f/%ld total %.0f/%ld "
               "(average/maximum per process)\n",
               nprocs, rounds ? " after an all-to-all" : "", avg[MEM_RSS], max[MEM_RSS],
               avg[MEM_PSS], max[MEM_PSS], avg[MEM_SHM_SIZE], max[MEM_SHM_SIZE], avg[MEM_SHM_RSS],
               max[MEM_SHM_RSS], avg[MEM_SHM_ALLOC], max[MEM_SHM_ALLOC], avg[MEM_TOTAL],
               max[MEM_TOTAL]);
        free(all);
    }
    MPI_Finalize();
    return 0;
}
