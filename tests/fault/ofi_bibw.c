/* Large messages in both directions at once through the ofi transport's
 * multi-receive buffers (run with BM_BTL_OFI_RNDV_GET=0, so that 1 MiB
 * messages travel as 512 KiB fragments, and few receive buffers, so that
 * fragments wait unexpected in the provider while no buffer is posted):
 * 2 ranks, each round both post a window of receives and sends of 1 MiB
 * to each other, every byte verified. With tcp;ofi_rxm a buffer posted
 * while rendezvous fragments waited was filled, released at once, and
 * filled again from its start while their reads still landed in it:
 * "malformed message" drops and overwritten fragments. The ofi counters
 * (BM_BTL_OFI_STATS=1, malformed=0 on both ranks) are checked by the
 * test's regular expression (tests/fault/ofi.cmake). MPI standard only. */
#include "bm_test.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEN    (1 << 20)
#define WINDOW 32
#define ROUNDS 3

/* The 8-byte word j of message k of round round from rank src. */
static uint64_t pat(int src, int round, int k, size_t j)
{
    return ((uint64_t)src << 56 | (uint64_t)round << 48 | (uint64_t)k << 40 | j) * 0x9e3779b1u;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "ofi_bibw needs 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    int peer = 1 - rank;
    unsigned char *sbuf = malloc((size_t)WINDOW * LEN);
    unsigned char *rbuf = malloc((size_t)WINDOW * LEN);
    BM_CHECK(sbuf && rbuf);
    if (!sbuf || !rbuf)
        MPI_Abort(MPI_COMM_WORLD, 1);
    long bad = 0;
    for (int round = 0; round < ROUNDS; round++) {
        MPI_Request req[2 * WINDOW];
        for (int k = 0; k < WINDOW; k++) {
            memset(rbuf + (size_t)k * LEN, 0, LEN);
            MPI_Irecv(rbuf + (size_t)k * LEN, LEN, MPI_BYTE, peer, k, MPI_COMM_WORLD, &req[k]);
        }
        for (int k = 0; k < WINDOW; k++) {
            uint64_t *s = (uint64_t *)(void *)(sbuf + (size_t)k * LEN);
            for (size_t j = 0; j < LEN / 8; j++)
                s[j] = pat(rank, round, k, j);
            MPI_Isend(s, LEN, MPI_BYTE, peer, k, MPI_COMM_WORLD, &req[WINDOW + k]);
        }
        MPI_Waitall(2 * WINDOW, req, MPI_STATUSES_IGNORE);
        for (int k = 0; k < WINDOW; k++) {
            const uint64_t *r = (const uint64_t *)(const void *)(rbuf + (size_t)k * LEN);
            for (size_t j = 0; j < LEN / 8; j++)
                bad += r[j] != pat(peer, round, k, j);
        }
    }
    BM_CHECK_MSG(bad == 0, "rank %d: %ld words received wrong", rank, bad);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return bm_test_summary("ofi_bibw");
}
