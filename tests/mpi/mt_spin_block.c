/* The automatic wait of a MPI_THREAD_MULTIPLE program (src/pml/README.md
 * "Waiting", auto): on a host with a CPU per rank a wait polls for
 * BM_PML_WAIT_SPIN_US (50 us) and then sleeps in the kernel; on an
 * oversubscribed host, or with BM_PML_WAIT_MODE=block, it sleeps right
 * after the idle polls. Checks the rule (the PML's resolved spin time: 50 us
 * or 0 as the host and the mode say; -z: the job runs with
 * BM_PML_WAIT_MODE=block, 0 expected) and that the spin ends: rank 1
 * waits in MPI_Recv while rank 0 holds its message back for 200 ms, which
 * is 4000 spin times, so rank 1 must have slept at least once (the PML's
 * sleep counter). Then a short ping-pong, every byte checked. */
#include "bm_test.h"
#include "pml/pml_internal.h"

#include <mpi.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
    bool block = argc > 1 && strcmp(argv[1], "-z") == 0;
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    bm_test_current = "rule";
    BM_CHECK_EQ_INT(provided, MPI_THREAD_MULTIPLE);
    BM_CHECK_EQ_INT(size, 2);
    uint64_t want = block || bm_pml_oversubscribed() ? 0 : 50000;
    BM_CHECK_MSG(bm_pml_wait_spin_ns() == want, "spin time %llu ns, expected %llu ns",
                 (unsigned long long)bm_pml_wait_spin_ns(), (unsigned long long)want);

    bm_test_current = "long wait sleeps";
    int v = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL);
        v = 12345;
        MPI_Send(&v, 1, MPI_INT, 1, 7, MPI_COMM_WORLD);
    } else {
        unsigned long before = bm_pml_wait_sleeps();
        MPI_Recv(&v, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        BM_CHECK_EQ_INT(v, 12345);
        BM_CHECK_MSG(bm_pml_wait_sleeps() > before,
                     "a 200 ms wait never slept (%lu sleeps): the spin did not end",
                     bm_pml_wait_sleeps() - before);
    }

    bm_test_current = "ping-pong";
    for (int i = 0; i < 200; i++) {
        char buf[64];
        if (rank == 0) {
            bm_test_fill(buf, sizeof(buf), i);
            MPI_Send(buf, sizeof(buf), MPI_CHAR, 1, i, MPI_COMM_WORLD);
            MPI_Recv(buf, sizeof(buf), MPI_CHAR, 1, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, sizeof(buf), MPI_CHAR, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, sizeof(buf), MPI_CHAR, 0, i, MPI_COMM_WORLD);
        }
        if (rank == 0)
            BM_CHECK_MSG(bm_test_bad_bytes(buf, sizeof(buf), i) == 0, "round %d: bad bytes", i);
    }
    MPI_Finalize();
    return bm_test_summary("mt_spin_block");
}
