/* A program that returns from main without MPI_Finalize (erroneous, but
 * OSU 7.4's osu_latency_mt does it): its last receive is a rendezvous
 * whose sender is still inside MPI_Send when the receiver exits. The exit
 * hook must deliver what the receiver owes (the transports' ACKs, the
 * PML's end-to-end messages) so that the sender's MPI_Send completes; the
 * ctest wrapper requires the hook's warning from both ranks and fails on
 * any failed-path report or on the job's timeout. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 12

int main(int argc, char **argv)
{
    int rank, size;
    size_t len = argc > 1 ? (size_t)atol(argv[1]) : 131072;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "p2p_no_finalize: needs 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* page-aligned, as OSU allocates: the rendezvous may read in place */
    unsigned char *buf = aligned_alloc(4096, (len + 4095) / 4096 * 4096);
    if (!buf)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (int i = 0; i < ROUNDS; i++) {
        if (rank == 0) {
            memset(buf, i, len);
            MPI_Send(buf, (int)len, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)len, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (buf[0] != (unsigned char)(i + 1) || buf[len - 1] != (unsigned char)(i + 1)) {
                fprintf(stderr, "p2p_no_finalize: round %d: wrong reply\n", i);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        } else {
            MPI_Recv(buf, (int)len, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            memset(buf, i + 1, len);
            MPI_Send(buf, (int)len, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
        }
    }
    printf("rank %d: %d rounds of %zu B done, exiting without MPI_Finalize\n", rank, ROUNDS, len);
    free(buf);
    return 0; /* no MPI_Finalize: on purpose */
}
