/* tcp's pool of large buffers (tcp_frag.c, TCP_POOL_BIG_MAX): the PML packs
 * a non-contiguous message into FRAGs of BM_PML_PACK_FRAG_SIZE (128 KiB with
 * the header), larger than tcp's pooled eager buffers; tcp keeps them in a
 * second pool (the component's, or under MPI_THREAD_MULTIPLE the
 * endpoint's, with argument "mt") instead of a malloc and free per FRAG,
 * which cost a page fault per 4 KiB. Rank 0 sends rank 1 a window of
 * vectors of 512-byte blocks (packed: below BM_PML_IOV_BLOCK_MIN), rank 1
 * checks every byte, and rank 0, once they completed, must hold large
 * buffers in the pool the run uses. Linked with the library's internals to
 * read the pools. */
#include "bm_test.h"
#include "btl/btl.h"
#include "btl/tcp/tcp.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 4
#define BLOCKS 2048 /* of 64 doubles: 1 MiB of data per message */
#define BLK    64

int main(int argc, char **argv)
{
    int rank, size, provided;
    bool mt = argc > 1 && strcmp(argv[1], "mt") == 0;

    MPI_Init_thread(&argc, &argv, mt ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    bm_test_current = "tcp_pack_pool";
    BM_CHECK_MSG(size == 2, "needs 2 ranks, has %d", size);
    BM_CHECK_MSG(!mt || provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE not provided");

    MPI_Datatype v;
    MPI_Type_vector(BLOCKS, BLK, 2 * BLK, MPI_DOUBLE, &v);
    MPI_Type_commit(&v);
    size_t len = (size_t)2 * BLOCKS * BLK;
    double *b = malloc(WINDOW * len * sizeof(double));
    MPI_Request req[WINDOW];
    for (size_t i = 0; i < WINDOW * len; i++)
        b[i] = rank == 0 ? (double)i : -1;
    for (int w = 0; w < WINDOW; w++) {
        if (rank == 0)
            MPI_Isend(b + w * len, 1, v, 1, w, MPI_COMM_WORLD, &req[w]);
        else
            MPI_Irecv(b + w * len, 1, v, 0, w, MPI_COMM_WORLD, &req[w]);
    }
    MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
    if (rank == 1) {
        int bad = 0;
        for (size_t i = 0; i < WINDOW * len; i++) {
            bool data = (i % (2 * BLK)) < BLK;
            if (b[i] != (data ? (double)i : -1))
                bad++;
        }
        BM_CHECK_MSG(bad == 0, "%d bad doubles in %d vectors", bad, WINDOW);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* every FRAG acknowledged and freed */
    if (rank == 0) {
        struct bm_btl_peer *peer = bm_btl_base_peer(1);
        struct bm_btl_module *m = peer && peer->send.count > 0 ? peer->send.paths[0].module : NULL;
        BM_CHECK_MSG(m && strcmp(m->ops->name, "tcp") == 0, "rank 1 is not reached over tcp");
        if (m && strcmp(m->ops->name, "tcp") == 0) {
            struct bm_btl_tcp_component *c = ((struct bm_btl_tcp_module *)m)->comp;
            struct bm_btl_tcp_endpoint *ep =
                (struct bm_btl_tcp_endpoint *)peer->send.paths[0].endpoint;
            int kept = mt ? ep->pool_big_count : c->pool_big_count;
            printf("rank 0 (%s): %d large buffers kept (component %d, endpoint %d)\n",
                   mt ? "MPI_THREAD_MULTIPLE" : "single", kept, c->pool_big_count,
                   ep->pool_big_count);
            BM_CHECK_MSG(kept > 0,
                         "no large buffer kept in the %s pool after %d packed 1 MiB vectors",
                         mt ? "endpoint's" : "component's", WINDOW);
        }
    }
    free(b);
    MPI_Type_free(&v);
    MPI_Finalize();
    return bm_test_summary("tcp_pack_pool");
}
