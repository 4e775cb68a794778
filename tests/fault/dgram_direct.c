/* Chunks received straight into the receive buffer (dgram_wire_udp.c
 * udp_direct_batch, dgram_recv.c bm_btl_dgram_direct_predict), under injected
 * corruption (BM_BTL_DGRAM_CORRUPT, set by dgram.cmake): the kernel writes a
 * chunk's payload into the caller's memory before its MAC is checked, so a
 * corrupted chunk leaves wrong bytes there until the genuine one overwrites
 * them, and the message must complete only once every range was verified.
 * Rank 0 sends windows of WIN messages of LEN bytes (a pattern that differs
 * per round, message and byte); rank 1 receives them into buffers filled
 * with 0xEE with a guard after each, and checks every byte and the guards.
 * Then rank 1 checks its dgram module's counters: chunks were received in
 * place, some of them failed their check (so the overwrite path ran), some
 * datagrams came where another chunk was expected (the resends of the
 * corrupted ones: their bytes were copied back from the caller's memory,
 * the copy-back path ran), and no placed fragment is left under way. */
#include "bm_test.h"
#include "btl/btl.h"
#include "btl/dgram/dgram.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEN    (1u << 20)
#define WIN    8
#define ROUNDS 4
#define GUARD  4096

static unsigned char pattern(int round, int msg, size_t i)
{
    return (unsigned char)((i * 131u) ^ (i >> 9) ^ (unsigned)(round * 37 + msg * 11));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "%s: run with 2 ranks\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    unsigned char *buf[WIN];
    for (int k = 0; k < WIN; k++) {
        buf[k] = malloc(LEN + GUARD);
        BM_CHECK(buf[k] != NULL);
    }
    size_t bad = 0;
    for (int r = 0; r < ROUNDS; r++) {
        MPI_Request req[WIN];
        for (int k = 0; k < WIN; k++) {
            if (rank == 0) {
                for (size_t i = 0; i < LEN; i++)
                    buf[k][i] = pattern(r, k, i);
                MPI_Isend(buf[k], LEN, MPI_BYTE, 1, k, MPI_COMM_WORLD, &req[k]);
            } else {
                memset(buf[k], 0xEE, LEN + GUARD);
                MPI_Irecv(buf[k], LEN, MPI_BYTE, 0, k, MPI_COMM_WORLD, &req[k]);
            }
        }
        MPI_Waitall(WIN, req, MPI_STATUSES_IGNORE);
        for (int k = 0; rank == 1 && k < WIN; k++) {
            for (size_t i = 0; i < LEN; i++)
                if (buf[k][i] != pattern(r, k, i) && bad++ < 5)
                    BM_CHECK_MSG(0, "round %d message %d byte %zu: %#x, want %#x", r, k, i,
                                 buf[k][i], pattern(r, k, i));
            for (size_t i = LEN; i < LEN + GUARD; i++)
                if (buf[k][i] != 0xEE && bad++ < 5)
                    BM_CHECK_MSG(0, "round %d message %d: guard byte %zu written", r, k, i - LEN);
        }
    }
    BM_CHECK_EQ_INT((int)(bad > 0), 0);
    if (rank == 1) {
        struct bm_btl_peer *peer = bm_btl_base_peer(0);
        struct bm_btl_dgram_module *dm = NULL;
        for (int i = 0; peer && i < peer->send.count; i++)
            if (strcmp(peer->send.paths[i].module->ops->name, "dgram") == 0)
                dm = (struct bm_btl_dgram_module *)peer->send.paths[i].module;
        BM_CHECK_MSG(dm != NULL, "dgram does not reach rank 0 (set BM_BTL=self,dgram)");
        if (dm) {
            struct bm_btl_dgram_stats s;
            bm_btl_dgram_stats_get(dm, &s);
            printf("rank 1: placed %llu fragments, %llu chunks received in place, %llu of them "
                   "rejected by their check, %llu datagrams not the chunk expected there, %llu "
                   "MACs wrong in all\n",
                   (unsigned long long)s.recv_placed, (unsigned long long)s.recv_direct,
                   (unsigned long long)s.recv_direct_rejected,
                   (unsigned long long)s.recv_direct_missed, (unsigned long long)s.bad_mac);
            BM_CHECK_MSG(s.recv_direct >= 8u * ROUNDS,
                         "only %llu chunks received in place: the direct path did not run",
                         (unsigned long long)s.recv_direct);
            BM_CHECK_MSG(s.recv_direct_rejected > 0,
                         "no chunk received in place failed its check: the overwrite of "
                         "unverified bytes was not exercised (BM_BTL_DGRAM_CORRUPT unset?)");
            BM_CHECK_MSG(s.recv_direct_missed > 0,
                         "no datagram came where another chunk was expected: the copy-back of "
                         "a batch received in place was not exercised");
            BM_CHECK_EQ_INT((int)dm->placed_active, 0);
        }
    }
    for (int k = 0; k < WIN; k++)
        free(buf[k]);
    /* Rank 1 checks for a while (seconds under ASan) without progress: rank
     * 0 must not reach MPI_Finalize meanwhile, or a resend that rank 1 still
     * owes it (3% of datagrams are corrupted) finds rank 0's transport
     * closed (seen once under ASan at load 15: rank 1 declared the path
     * failed and its PML gave up after 60 s; a finalize race of its own,
     * see the report). */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return bm_test_summary("dgram_direct");
}
