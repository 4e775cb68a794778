/* A one-way stream of large messages for the adaptive striping test
 * (stripe_netns.sh): rank 0 keeps WINDOW sends of LEN bytes in flight to
 * rank 1 until the file named by STRIPE_STOP exists (or STRIPE_SECS
 * seconds, 30 by default, have passed); rank 1 checks the content of every
 * eighth message. Each rank writes "streaming" to <STRIPE_LOG>.<rank> once
 * the first window completed, and rank 1 "checks: N failed" at the end.
 * The script measures the rails' bytes with iptables counters, so the
 * program knows nothing of paths or weights. */
#include "bm_test.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LEN    (1 << 20)
#define WINDOW 8

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *stop = getenv("STRIPE_STOP");
    const char *log = getenv("STRIPE_LOG");
    double secs = getenv("STRIPE_SECS") ? atof(getenv("STRIPE_SECS")) : 30;
    FILE *lf = NULL;
    if (log) {
        char path[512];
        snprintf(path, sizeof(path), "%s.%d", log, rank);
        lf = fopen(path, "w");
    }
    unsigned char *buf = malloc((size_t)LEN * WINDOW);
    BM_CHECK(buf != NULL);
    for (int w = 0; w < WINDOW; w++)
        bm_test_fill(buf + (size_t)w * LEN, LEN, w);
    double t0 = MPI_Wtime();
    long msgs = 0;
    int done = 0;
    while (!done) {
        MPI_Request r[WINDOW];
        for (int w = 0; w < WINDOW; w++) {
            if (rank == 0)
                MPI_Isend(buf + (size_t)w * LEN, LEN, MPI_BYTE, 1, w, MPI_COMM_WORLD, &r[w]);
            else
                MPI_Irecv(buf + (size_t)w * LEN, LEN, MPI_BYTE, 0, w, MPI_COMM_WORLD, &r[w]);
        }
        MPI_Waitall(WINDOW, r, MPI_STATUSES_IGNORE);
        if (rank == 1) {
            int w = (int)(msgs / WINDOW % WINDOW);
            size_t bad = bm_test_bad_bytes(buf + (size_t)w * LEN, LEN, w);
            BM_CHECK_MSG(bad == 0, "window %ld: %zu bad bytes", msgs / WINDOW, bad);
        }
        if (msgs == 0 && lf) {
            fprintf(lf, "streaming\n");
            fflush(lf);
        }
        msgs += WINDOW;
        /* rank 0 decides when to stop and tells rank 1 with the next window's size */
        int flag = rank == 0 && ((stop && access(stop, F_OK) == 0) || MPI_Wtime() - t0 > secs);
        MPI_Bcast(&flag, 1, MPI_INT, 0, MPI_COMM_WORLD);
        done = flag;
    }
    double t = MPI_Wtime() - t0;
    if (rank == 0)
        printf("stream: %ld messages of %d bytes in %.2f s: %.0f MB/s\n", msgs, LEN, t,
               (double)msgs * LEN / t / 1e6);
    if (lf) {
        fprintf(lf, "checks: %d failed\n", bm_test_failed);
        fclose(lf);
    }
    free(buf);
    int failed = bm_test_failed, any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any ? 1 : 0;
}
