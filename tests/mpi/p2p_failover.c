/* Point-to-point traffic that survives the loss of one of two transport
 * paths (run by p2p_failover.sh: two hosts joined by two tcp rails, one
 * black-holed while this streams). Ranks 0 and 1 exchange a stream of
 * messages of eager and rendezvous sizes in both directions, every byte
 * verified and every message checked to arrive once and in order; the PML
 * must resend what the failed path lost (MATCH, RNDV, FRAG, ACK) on the
 * surviving one. Each rank writes "streaming" to <log>.<rank> once traffic
 * flows, and "checks: N failed" at the end; it streams for P2P_FAILOVER_SECS
 * seconds (default 15) after the first message, or until the file named by
 * P2P_FAILOVER_STOP exists (the driving script creates it once it has seen
 * what it checks, so that the test lasts as long as its work, not a guess).
 *
 * A stream that stays intact proves nothing when no path failed: the
 * program therefore also checks, on its own, that the mechanism ran.
 * P2P_FAILOVER_EXPECT says what the fault was: "fail" (some rank's
 * transport reported a path to its peer failed while the stream went on)
 * or "recover" (a failure and then a recovery were reported), "none" (a
 * fault that must not count as a failure), or "any" (the stream must only
 * finish intact; the counts are printed, e.g. under heavy loss). The counts
 * come from the transport layer's error reports (linked internally for
 * that), summed over both ranks. */
#include "bm_test.h"
#include "btl/btl.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rank;
static FILE *log_file;

static const int lens[] = {8, 3000, 70000, 600000, 0, 200};
#define NLENS      ((int)(sizeof(lens) / sizeof(lens[0])))
#define MAXLEN     600000
#define PAUSE_MIN  0.25
#define PAUSES_MAX 16

static unsigned char pat(int it, int who, int i)
{
    return (unsigned char)(it * 7 + who * 101 + i * 13 + (i >> 9));
}

static void note(const char *text)
{
    if (!log_file)
        return;
    fprintf(log_file, "%s\n", text);
    fflush(log_file);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *log = getenv("P2P_FAILOVER_LOG");
    if (log) {
        char path[512];
        snprintf(path, sizeof(path), "%s.%d", log, rank);
        log_file = fopen(path, "w");
    }
    const char *secs_env = getenv("P2P_FAILOVER_SECS");
    double secs = secs_env ? atof(secs_env) : 15.0;
    const char *stop_file = getenv("P2P_FAILOVER_STOP");
    int peer = 1 - rank;
    unsigned char *out = malloc(MAXLEN), *in = malloc(MAXLEN);
    double t0 = MPI_Wtime(), last = t0, pause = 0, pause_at = 0;
    /* Pauses of the stream (no iteration finished) longer than PAUSE_MIN
     * seconds: when each began and how long it was, for the driving
     * script (the pause after a failure report must end with the
     * failover, not wait for a timer). */
    double pauses[PAUSES_MAX][2];
    int npauses = 0;
    int it = 0, stop = 0, bad = 0;
    while (!stop) {
        int len = lens[it % NLENS];
        for (int i = 0; i < len; i++)
            out[i] = pat(it, rank, i);
        MPI_Request r[2];
        MPI_Status st;
        MPI_Irecv(in, MAXLEN, MPI_BYTE, peer, MPI_ANY_TAG, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(out, len, MPI_BYTE, peer, it % 32768, MPI_COMM_WORLD, &r[1]);
        MPI_Wait(&r[0], &st);
        MPI_Wait(&r[1], MPI_STATUS_IGNORE);
        int count = -1;
        MPI_Get_count(&st, MPI_BYTE, &count);
        if (count != len || st.MPI_TAG != it % 32768) {
            bad++;
        } else {
            for (int i = 0; i < len; i++)
                if (in[i] != pat(it, peer, i)) {
                    bad++;
                    break;
                }
        }
        if (it == 20)
            note("streaming");
        double now = MPI_Wtime();
        if (it > 20 && now - last > pause) {
            pause = now - last;
            pause_at = last - t0;
        }
        if (it > 20 && now - last > PAUSE_MIN && npauses < PAUSES_MAX) {
            pauses[npauses][0] = last - t0;
            pauses[npauses++][1] = now - last;
        }
        last = now;
        it++;
        /* rank 0 decides when to stop, so both run the same iterations */
        if (it % 16 == 0) {
            stop = rank == 0 &&
                   (MPI_Wtime() - t0 > secs || (stop_file && access(stop_file, F_OK) == 0));
            MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
        }
    }
    BM_CHECK_MSG(bad == 0, "%d of %d messages were wrong", bad, it);

    struct bm_btl_base_error_counts ec;
    bm_btl_base_error_counts(&ec);
    long long mine[2] = {(long long)(ec.peer + ec.module), (long long)ec.recovered}, all[2];
    MPI_Allreduce(mine, all, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    const char *expect = getenv("P2P_FAILOVER_EXPECT");
    BM_CHECK_MSG(expect && (!strcmp(expect, "fail") || !strcmp(expect, "recover") ||
                            !strcmp(expect, "none") || !strcmp(expect, "any")),
                 "P2P_FAILOVER_EXPECT must be fail, recover, none or any (is %s)",
                 expect ? expect : "unset");
    if (expect && !strcmp(expect, "none")) {
        BM_CHECK_MSG(all[0] == 0, "%lld path failure(s) reported where none may be", all[0]);
    } else if (expect && strcmp(expect, "any")) {
        BM_CHECK_MSG(all[0] >= 1,
                     "no transport reported a failed path (%lld reports): the stream ran without "
                     "a failover, so it tested nothing",
                     all[0]);
        if (!strcmp(expect, "recover"))
            BM_CHECK_MSG(all[1] >= 1, "no transport reported the failed path recovered");
    }
    if (rank == 0)
        printf("p2p_failover: %lld path failure(s) and %lld recovery(ies) reported by the "
               "transports\n",
               all[0], all[1]);
    char line[128];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double wall0 = (double)ts.tv_sec + ts.tv_nsec * 1e-9 - (MPI_Wtime() - t0);
    snprintf(line, sizeof(line), "longest pause: %.0f ms (from %.3f s; wall clock %.3f)",
             pause * 1e3, pause_at, wall0 + pause_at);
    note(line);
    for (int i = 0; i < npauses; i++) {
        snprintf(line, sizeof(line), "pause: %.0f ms from wall clock %.3f", pauses[i][1] * 1e3,
                 wall0 + pauses[i][0]);
        note(line);
    }
    snprintf(line, sizeof(line), "messages: %d, checks: %d failed", it, bm_test_failed);
    note(line);
    free(out);
    free(in);
    int rc = bm_test_summary("p2p_failover");
    if (log_file)
        fclose(log_file);
    MPI_Finalize();
    return rc;
}
