/* BM_PML_IDLE_YIELD's auto setting on a host with a CPU per rank (bmrun
 * binds each rank to one): waits spin, but a rank that loses its core to
 * another program while it polls yields for a while (src/pml/wait.c,
 * bm_pml_wait_idle_watch). Rank 1 starts a thread that only burns its CPU
 * (a stand-in for another program on that core; it never calls MPI, so the
 * program is MPI_THREAD_FUNNELED and the PML takes no locks), then the two
 * ranks ping-pong for 0.5 s, rank 0 working 100 ms before each answer so
 * that rank 1 waits long enough to lose its core in the middle of a wait.
 * When the scheduler hands the core back, the wait sees the gap and yields
 * to the burner after every 64 idle polls from then on: rank 1 must have
 * counted such yields (the PML's counter; the CPU time of rank 1's main
 * thread next to the burner's is printed for information: spinning, the
 * scheduler shares the core evenly). With -n (run with
 * BM_PML_IDLE_YIELD=0) there must be none. Ranks that share CPUs (an
 * oversubscribed host, where ranks yield anyway) skip the check. Every
 * message is checked. */
#include "bm_test.h"
#include "pml/pml_internal.h"

#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_bool stop;

static void *burn(void *arg)
{
    (void)arg;
    volatile unsigned long x = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        x++;
    return NULL;
}

static double cpu_of(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    bool expect_yield = !(argc > 1 && strcmp(argv[1], "-n") == 0);
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    BM_CHECK_EQ_INT(size, 2);
    bm_test_current = "pingpong beside a burner";

    cpu_set_t set;
    int ncpu = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
    int alone = ncpu == 1, both = 0;
    MPI_Allreduce(&alone, &both, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);

    pthread_t t;
    clockid_t main_clock = CLOCK_THREAD_CPUTIME_ID, burn_clock = CLOCK_THREAD_CPUTIME_ID;
    double main0 = 0, burn0 = 0;
    if (rank == 1) {
        BM_CHECK(pthread_create(&t, NULL, burn, NULL) == 0);
        BM_CHECK(pthread_getcpuclockid(pthread_self(), &main_clock) == 0);
        BM_CHECK(pthread_getcpuclockid(t, &burn_clock) == 0);
        main0 = cpu_of(main_clock);
        burn0 = cpu_of(burn_clock);
    }
    double t0 = MPI_Wtime();
    long iters = 0;
    for (int go = 1; go; iters++) {
        int msg[2] = {(int)iters, 0}, in[2];
        if (rank == 0) {
            msg[1] = MPI_Wtime() - t0 < 0.5;
            /* Rank 1 waits while rank 0 works: its waits are long enough
             * to lose its core to the burner in the middle. */
            for (double w = MPI_Wtime(); MPI_Wtime() - w < 100e-3;)
                ;
            MPI_Send(msg, 2, MPI_INT, 1, 7, MPI_COMM_WORLD);
            MPI_Recv(in, 2, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            BM_CHECK_EQ_INT(in[0], (int)iters);
            go = msg[1];
        } else {
            MPI_Recv(in, 2, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            BM_CHECK_EQ_INT(in[0], (int)iters);
            MPI_Send(in, 2, MPI_INT, 0, 7, MPI_COMM_WORLD);
            go = in[1];
        }
    }
    if (rank == 1) {
        double main_cpu = cpu_of(main_clock) - main0, burn_cpu = cpu_of(burn_clock) - burn0;
        atomic_store(&stop, true);
        pthread_join(t, NULL);
        double share = burn_cpu > 0 ? main_cpu / burn_cpu : 1;
        printf("rank 1: %ld round trips, CPU %.1f ms beside the burner's %.1f ms (%.2f; %s)\n",
               iters, main_cpu * 1e3, burn_cpu * 1e3, share,
               both ? "a CPU per rank" : "ranks share CPUs: not checked");
        unsigned long yields = bm_pml_wait_contended_yields();
        printf("rank 1: %lu yields of a contended core\n", yields);
        if (both && expect_yield)
            BM_CHECK_MSG(yields > 0, "a spinning wait that lost its core never yielded it");
        if (both && !expect_yield)
            BM_CHECK_MSG(yields == 0, "BM_PML_IDLE_YIELD=0 yielded %lu times", yields);
    }
    MPI_Finalize();
    return bm_test_summary("pml_idle_watch");
}
