/* Tests of the program where ranks share cores (src/pml/wait.c,
 * bm_pml_progress_test): an MPI_Test, or MPI_Iprobe, yields its core at
 * once after its progress pass, as Open MPI's yield_when_idle does after
 * an idle one, and also after a pass that did something (a wait yields
 * only after BM_PML_IDLE_YIELD idle polls). Both ranks bind themselves to
 * one CPU before MPI_Init, so the host is oversubscribed wherever the test
 * runs and BM_PML_IDLE_YIELD's auto setting yields. Rank 0 tests in a loop
 * for a point-to-point receive, for a message with MPI_Iprobe and for a
 * nonblocking allreduce while rank 1 sleeps 20 ms in short naps before it
 * sends or joins; rank 0 counts the tests that found nothing, and the
 * PML's counter of yields of tests must have grown by more than that: the
 * test that completed yielded too (before: one yield per 64 idle tests,
 * none after a pass that did something). With -n (run with
 * BM_PML_IDLE_YIELD=0: the job never yields) there must be none. Every
 * message is checked. */
#include "bm_test.h"
#include "pml/pml_internal.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Rank 1: 20 ms in 200 us naps, leaving the shared CPU to rank 0. */
static void nap_20ms(void)
{
    for (int i = 0; i < 100; i++) {
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
}

/* Rank 0: how the yields of tests grew beside the idle tests counted. */
static void check_yields(const char *what, long idle, unsigned long before, bool expect)
{
    unsigned long yields = bm_pml_wait_test_yields() - before;
    printf("rank 0, %s: %ld tests found nothing, %lu yields of tests\n", what, idle, yields);
    BM_CHECK_MSG(idle > 0, "%s: no test found the request incomplete", what);
    if (expect)
        BM_CHECK_MSG((long)yields > idle,
                     "%s on an oversubscribed host: %lu yields of tests, %ld tests found nothing "
                     "(every test must yield, the one that completed too)",
                     what, yields, idle);
    else
        BM_CHECK_MSG(yields == 0, "%s with BM_PML_IDLE_YIELD=0: %lu yields of tests", what, yields);
}

int main(int argc, char **argv)
{
    int rank, size;
    bool expect = !(argc > 1 && strcmp(argv[1], "-n") == 0);
    BM_CHECK(bm_test_bind_lowest_cpu());
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    BM_CHECK_EQ_INT(size, 2);
    bm_test_current = "setting";
    BM_CHECK_MSG(bm_pml_oversubscribed(), "two ranks bound to one CPU: not oversubscribed");

    for (int probe = 0; probe < 2; probe++) {
        const char *what = probe ? "MPI_Iprobe" : "MPI_Test of a receive";
        int v = -1, flag = 0, tag = 5 + probe;
        bm_test_current = what;
        if (rank == 1) {
            nap_20ms();
            v = 41 + probe;
            MPI_Send(&v, 1, MPI_INT, 0, tag, MPI_COMM_WORLD);
        } else {
            MPI_Request r = MPI_REQUEST_NULL;
            unsigned long before = bm_pml_wait_test_yields();
            long idle = -1;
            if (!probe)
                MPI_Irecv(&v, 1, MPI_INT, 1, tag, MPI_COMM_WORLD, &r);
            while (!flag) {
                idle++;
                if (probe)
                    MPI_Iprobe(1, tag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
                else
                    MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
            }
            if (probe)
                MPI_Recv(&v, 1, MPI_INT, 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            BM_CHECK_EQ_INT(v, 41 + probe);
            check_yields(what, idle, before, expect);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }

    bm_test_current = "MPI_Test of a nonblocking allreduce";
    int in[4] = {rank, rank + 1, rank + 2, rank + 3}, out[4] = {0};
    MPI_Request r;
    if (rank == 1)
        nap_20ms();
    unsigned long before = bm_pml_wait_test_yields();
    MPI_Iallreduce(in, out, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
    long idle = 0;
    int flag = 0;
    for (MPI_Test(&r, &flag, MPI_STATUS_IGNORE); !flag; MPI_Test(&r, &flag, MPI_STATUS_IGNORE))
        idle++;
    for (int i = 0; i < 4; i++)
        BM_CHECK_EQ_INT(out[i], 2 * i + 1);
    if (rank == 0)
        check_yields("MPI_Test of a nonblocking allreduce", idle, before, expect);
    MPI_Finalize();
    return bm_test_summary("pml_test_yield");
}
