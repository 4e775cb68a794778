/* Single copy of non-contiguous messages: rank 0 sends rank 1 large
 * messages (above BM_PML_RGET_LIMIT) with a vector layout on one side or
 * both, and rank 1 checks every byte, that the gaps stayed untouched, and
 * that the PML read them piece by piece with the transport's getv (its
 * counter of such messages grew), unless the run is told to expect
 * fragments (argument "frags": BM_PML_RDMA_FAIL=get, or pieces below
 * BM_PML_RGET_PIECE_MIN). With argument "packed" (over tcp, which has no
 * getv, with BM_PML_STREAM_COPY_MIN=64k) it checks the fragment path
 * instead: rank 0 packed its vectors into FRAGs no larger than
 * BM_PML_PACK_FRAG_SIZE (64 KiB with the header: its ctest entry sets it),
 * and rank 1 unpacked the large blocks with streaming stores. With "frags" (sm), rank 0
 * packed the FRAGs of a vector of 64 KiB (at most BM_PML_PACK_BOUNCE
 * bytes; 32 KiB blocks) through the bounce buffer of util/dtype.h's
 * pack_far, and those of larger ones straight; with "packed" (tcp, whose buffers are not in shared
 * memory: no BM_BTL_CAP_SEND_FAR) all of it straight, the first FRAG of
 * each packed while the RNDV waited for its ACK (BM_PML_PACK_AHEAD), and
 * each message's last FRAG taking the sliver after it rather than leaving
 * it a FRAG of its own. Small vectors (2 KiB) are packed on
 * the stack for the transport's inline send over sm, and not over tcp,
 * which has none (its descriptor path packs them once). Small vectors of
 * 512-byte blocks received with MPI_Recv are copied into the receive's
 * bounce and unpacked after it completed (pml.h bm_pml_irecv_dt_defer),
 * a truncated one too; those of 8-byte blocks are unpacked on arrival.
 * Linked with the library's internals to read the counters. */
#include "bm_test.h"
#include "pml/pml_internal.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

static int rank;

/* One exchange: n blocks of blk doubles every 2*blk, or contiguous. */
static void one(int n, int blk, int send_vec, int recv_vec, int tag)
{
    MPI_Datatype v;
    MPI_Type_vector(n, blk, 2 * blk, MPI_DOUBLE, &v);
    MPI_Type_commit(&v);
    size_t len = (size_t)2 * n * blk;
    double *b = malloc(len * sizeof(double));
    if (rank == 0) {
        for (size_t i = 0; i < len; i++)
            b[i] = (double)i;
        if (!send_vec) /* contiguous: the values the vector would carry */
            for (size_t i = 0; i < (size_t)n * blk; i++)
                b[i] = (double)((i / blk) * 2 * blk + i % blk);
        if (send_vec)
            MPI_Send(b, 1, v, 1, tag, MPI_COMM_WORLD);
        else
            MPI_Send(b, n * blk, MPI_DOUBLE, 1, tag, MPI_COMM_WORLD);
    } else if (rank == 1) {
        for (size_t i = 0; i < len; i++)
            b[i] = -1;
        MPI_Status st;
        if (recv_vec)
            MPI_Recv(b, 1, v, 0, tag, MPI_COMM_WORLD, &st);
        else
            MPI_Recv(b, n * blk, MPI_DOUBLE, 0, tag, MPI_COMM_WORLD, &st);
        int bad = 0;
        for (size_t i = 0; i < (size_t)n * blk; i++) {
            size_t want = (i / blk) * 2 * blk + i % blk;
            size_t at = recv_vec ? want : i;
            if (b[at] != (double)want)
                bad++;
            if (recv_vec && b[at + blk] != -1)
                bad++;
        }
        BM_CHECK_MSG(bad == 0, "%d x %d doubles (send %s, receive %s): %d bad", n, blk,
                     send_vec ? "vector" : "contiguous", recv_vec ? "vector" : "contiguous", bad);
    }
    free(b);
    MPI_Type_free(&v);
}

int main(int argc, char **argv)
{
    int size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int frags = argc > 1 && strcmp(argv[1], "frags") == 0;
    int small = argc > 1 && strcmp(argv[1], "small") == 0;
    int packed = argc > 1 && strcmp(argv[1], "packed") == 0;
    uint64_t before = bm_pml_g.rget_pieces_msgs;
    uint64_t frags_before = bm_pml_g.pack_frags, streamed_before = bm_pml_g.unpack_streamed;
    uint64_t bounced_before = bm_pml_g.pack_bounced;
    uint64_t ahead_sent0 = bm_pml_g.pack_ahead_sent, ahead_dropped0 = bm_pml_g.pack_ahead_dropped;
    uint64_t first0 = bm_pml_g.pack_frags_first;
    int tag = 0;
    /* 32 KiB blocks (pieces worth reading), and with "small" (the run
     * lowers BM_PML_RGET_PIECE_MIN) 8-byte ones: thousands of pieces, many
     * getv calls. */
    int blk = small ? 1 : 4096, n = small ? 40000 : 8;
    for (int s = 0; s < 2; s++)
        for (int r = 0; r < 2; r++)
            if (s || r)
                one(n, blk, s, r, tag++);
    /* truncation: a vector receive with room for half */
    if (rank == 0) {
        MPI_Datatype v;
        MPI_Type_vector(8, 4096, 8192, MPI_DOUBLE, &v);
        MPI_Type_commit(&v);
        double *b = calloc(16 * 4096, sizeof(double));
        MPI_Send(b, 1, v, 1, 99, MPI_COMM_WORLD);
        free(b);
        MPI_Type_free(&v);
    } else if (rank == 1) {
        MPI_Datatype v;
        MPI_Type_vector(4, 4096, 8192, MPI_DOUBLE, &v);
        MPI_Type_commit(&v);
        double *b = malloc(16 * 4096 * sizeof(double));
        for (int i = 0; i < 16 * 4096; i++)
            b[i] = -1;
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        BM_CHECK_EQ_INT(MPI_Recv(b, 1, v, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                        MPI_ERR_TRUNCATE);
        BM_CHECK(b[0] == 0 && b[4096] == -1 && b[6 * 4096] == 0 && b[7 * 4096] == -1 &&
                 b[8 * 4096] == -1);
        free(b);
        MPI_Type_free(&v);
        uint64_t got = bm_pml_g.rget_pieces_msgs - before;
        if (packed) {
            uint64_t streamed = bm_pml_g.unpack_streamed - streamed_before;
            /* two 256 KiB vector receives above BM_PML_STREAM_COPY_MIN, 32 KiB blocks */
            BM_CHECK_MSG(streamed >= 256 * 1024, "only %llu bytes unpacked with streaming stores",
                         (unsigned long long)streamed);
        }
        if (frags || packed)
            BM_CHECK_MSG(got == 0, "%llu messages were read piece by piece; fragments expected",
                         (unsigned long long)got);
        else
            BM_CHECK_MSG(got >= 4, "only %llu messages were read piece by piece (getv)",
                         (unsigned long long)got);
    }
    if (frags) {
        /* FRAGs of 32 KiB blocks: the two vector sends of 256 KiB and the
         * 128 KiB of the truncated one packed straight (messages larger
         * than BM_PML_PACK_BOUNCE, 64 KiB), then one vector of 64 KiB
         * whose FRAGs go through the bounce buffer */
        uint64_t bounced = bm_pml_g.pack_bounced - bounced_before;
        if (rank == 0)
            BM_CHECK_MSG(bounced == 0,
                         "%llu bytes of vector sends of 128-256 KiB packed through the bounce",
                         (unsigned long long)bounced);
        /* nor are their FRAGs cut to BM_PML_PACK_FIRST_FRAG (messages
         * larger than BM_PML_PACK_BOUNCE) */
        uint64_t cut = bm_pml_g.pack_frags_first - first0;
        if (rank == 0)
            BM_CHECK_MSG(cut == 0,
                         "%llu FRAGs of vector sends of 128-256 KiB cut to BM_PML_PACK_FIRST_FRAG",
                         (unsigned long long)cut);
        first0 = bm_pml_g.pack_frags_first;
        one(2, 4096, 1, 1, 98);
        bounced = bm_pml_g.pack_bounced - bounced_before;
        if (rank == 0)
            BM_CHECK_MSG(bounced >= 32 * 1024 && bounced <= 64 * 1024,
                         "%llu bytes of a 64 KiB vector send packed through the bounce "
                         "(32-64 KiB expected)",
                         (unsigned long long)bounced);
    }
    if (frags && rank == 0) {
        /* the 64 KiB vector send, alone in flight: its FRAGs cut to
         * BM_PML_PACK_FIRST_FRAG (16 KiB, sm's fragments are 32 KiB), at
         * least 3 of them */
        uint64_t first = bm_pml_g.pack_frags_first - first0;
        BM_CHECK_MSG(first >= 3,
                     "%llu packed FRAGs of a 64 KiB vector cut to BM_PML_PACK_FIRST_FRAG, 3 or "
                     "more expected",
                     (unsigned long long)first);
    }
    if (packed && rank == 0) {
        /* tcp's buffers are this process's memory: nothing bounced, no
         * FRAG cut to BM_PML_PACK_FIRST_FRAG */
        uint64_t bounced = bm_pml_g.pack_bounced - bounced_before;
        BM_CHECK_MSG(bounced == 0, "%llu bytes packed through the bounce over tcp",
                     (unsigned long long)bounced);
        uint64_t first = bm_pml_g.pack_frags_first - first0;
        BM_CHECK_MSG(first == 0, "%llu packed FRAGs cut to BM_PML_PACK_FIRST_FRAG over tcp",
                     (unsigned long long)first);
    }
    if (packed && rank == 0) {
        /* two 256 KiB vector sends: the first 65496 bytes with the RNDV,
         * the rest in packed FRAGs of 64 KiB with their header (65512
         * bytes), the last one taking the 112 bytes left after it (65624);
         * the truncated one (128 KiB wanted) one FRAG of 65576 bytes */
        uint64_t nf = bm_pml_g.pack_frags - frags_before, big = bm_pml_g.pack_frag_largest;
        BM_CHECK_MSG(nf == 7, "%llu packed FRAGs sent, 7 expected", (unsigned long long)nf);
        BM_CHECK_MSG(big == 65624, "the largest packed FRAG carried %llu bytes, 65624 expected",
                     (unsigned long long)big);
        /* the two 256 KiB vector sends sent the FRAG they packed while
         * waiting for the ACK; the truncated one had packed 65512 bytes of
         * the 65576 its ACK asked for, freed them and packed again */
        uint64_t sent = bm_pml_g.pack_ahead_sent - ahead_sent0;
        uint64_t dropped = bm_pml_g.pack_ahead_dropped - ahead_dropped0;
        BM_CHECK_MSG(sent == 2 && dropped == 1,
                     "FRAGs packed ahead: %llu sent (2 expected), %llu freed unsent (1 expected)",
                     (unsigned long long)sent, (unsigned long long)dropped);
    }
    /* small vectors: 256 doubles every other one */
    uint64_t stack_before = bm_pml_g.stack_packs;
    uint64_t deferred0 = bm_pml_g.recv_deferred;
    for (int i = 0; i < 4; i++)
        one(256, 1, 1, 1, 200 + i);
    uint64_t stack_after = bm_pml_g.stack_packs;
    if (rank == 1) /* runs of one double: unpacked on arrival */
        BM_CHECK_MSG(bm_pml_g.recv_deferred == deferred0,
                     "%llu small vectors of 8-byte blocks had their unpack deferred",
                     (unsigned long long)(bm_pml_g.recv_deferred - deferred0));
    /* small vectors of 64-double blocks (2 KiB, eager): MPI_Recv copies
     * each into its bounce and unpacks it once the receive completed
     * (pml.h bm_pml_irecv_dt_defer); then one truncated to 2 of its 4
     * blocks, the rest of the buffer untouched */
    deferred0 = bm_pml_g.recv_deferred;
    for (int i = 0; i < 4; i++)
        one(4, 64, 1, 1, 300 + i);
    if (rank == 0) {
        MPI_Datatype v;
        MPI_Type_vector(4, 64, 128, MPI_DOUBLE, &v);
        MPI_Type_commit(&v);
        double *b = malloc(512 * sizeof(double));
        for (int i = 0; i < 512; i++)
            b[i] = i;
        MPI_Send(b, 1, v, 1, 310, MPI_COMM_WORLD);
        free(b);
        MPI_Type_free(&v);
    } else if (rank == 1) {
        MPI_Datatype v;
        MPI_Type_vector(2, 64, 128, MPI_DOUBLE, &v);
        MPI_Type_commit(&v);
        double *b = malloc(512 * sizeof(double));
        for (int i = 0; i < 512; i++)
            b[i] = -1;
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        BM_CHECK_EQ_INT(MPI_Recv(b, 1, v, 0, 310, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                        MPI_ERR_TRUNCATE);
        int bad = 0;
        for (int i = 0; i < 512; i++)
            if (b[i] != ((i % 128) < 64 && i < 256 ? i : -1))
                bad++;
        BM_CHECK_MSG(bad == 0, "truncated 2 KiB vector receive: %d doubles wrong", bad);
        free(b);
        MPI_Type_free(&v);
        uint64_t deferred = bm_pml_g.recv_deferred - deferred0;
        BM_CHECK_MSG(deferred == 5,
                     "%llu of 5 small vectors of 512-byte blocks unpacked after completion",
                     (unsigned long long)deferred);
    }
    if (rank == 0) {
        uint64_t stack = stack_after - stack_before;
        if (packed)
            BM_CHECK_MSG(stack == 0, "%llu small vectors packed on the stack for tcp (no sendi)",
                         (unsigned long long)stack);
        else
            BM_CHECK_MSG(stack == 4, "%llu of 4 small vectors packed on the stack for sendi",
                         (unsigned long long)stack);
    }
    (void)size;
    MPI_Finalize();
    return bm_test_summary("api_dtype_rget");
}
