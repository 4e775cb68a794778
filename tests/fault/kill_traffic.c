/* Heavy traffic for kill_traffic.sh: every rank streams messages of eager and
 * rendezvous sizes to its right neighbour in a ring while receiving from its
 * left one, and writes "rank R pid P streaming" to <log>.<rank> (argv[1])
 * once traffic flows, so that the script can SIGKILL one rank in the middle
 * of it. The survivors then see broken connections and abort, usually
 * before bmrun has learned of the death: the race the script checks bmrun
 * reports correctly. Runs for at most argv[2] seconds (default 60).
 *
 * The race made certain: SIGUSR1 makes a rank call MPI_Abort at once (a
 * survivor's report that reaches bmrun first), and rank argv[3] ignores
 * SIGTERM so that only the script's SIGKILL, sent just after, can end it
 * (not bmrun's own SIGTERM that may follow the abort). */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const int lens[] = {64, 4096, 65536, 262144};
#define NLENS  ((int)(sizeof(lens) / sizeof(lens[0])))
#define MAXLEN 262144

static volatile sig_atomic_t abort_now;

static void on_usr1(int sig)
{
    (void)sig;
    abort_now = 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    signal(SIGUSR1, on_usr1);
    if (argc > 3 && atoi(argv[3]) == rank)
        signal(SIGTERM, SIG_IGN);
    double secs = argc > 2 ? atof(argv[2]) : 60.0;
    char *out = malloc(MAXLEN), *in = malloc(MAXLEN);
    memset(out, rank, MAXLEN);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    double t0 = MPI_Wtime();
    for (int it = 0; MPI_Wtime() - t0 < secs; it++) {
        MPI_Request r[2];
        int len = lens[it % NLENS];
        MPI_Irecv(in, MAXLEN, MPI_BYTE, left, 0, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(out, len, MPI_BYTE, right, 0, MPI_COMM_WORLD, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        if (abort_now)
            MPI_Abort(MPI_COMM_WORLD, 3);
        if (it == 50 && argc > 1) {
            char path[512];
            snprintf(path, sizeof(path), "%s.%d", argv[1], rank);
            FILE *f = fopen(path, "w");
            if (f) {
                fprintf(f, "rank %d pid %d streaming\n", rank, (int)getpid());
                fclose(f);
            }
        }
    }
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
