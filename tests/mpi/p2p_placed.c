/* Receive placement over tcp (btl.h "Receive placement", tcp_conn.c,
 * pml/recv.c): rendezvous fragments larger than tcp's 256 KiB connection
 * buffer are read by the kernel straight into the receive buffer, or into
 * the blocks of a non-contiguous receive. Rank 0 sends rank 1 a contiguous
 * message, a vector and an indexed message (each received into the same
 * type and into bytes), and one that the receive truncates; rank 1 checks
 * every byte of each buffer, the gaps between blocks and the bytes past
 * the end left alone, and that its PML counted placed FRAGs (linked with
 * the internals for bm_pml_g); rank 0 that the vector FRAGs went out from
 * their blocks in place (BM_BTL_CAP_SEND_IOV), not packed. p2p.cmake runs it with
 * BM_PML_PACK_FRAG_SIZE=1m so that non-contiguous FRAGs are large enough to be placed.
 * Then messages just past tcp's eager limit (64 KiB of data: the limit
 * counts the header), contiguous, a vector and a truncated vector, which
 * go whole in their RNDV (pml/send.c: no FRAG for the sliver left), and a
 * 72 KiB one that is past that slack and takes a FRAG: rank 0 checks that
 * exactly the first three went whole. Last a window of 8 messages of 1 MiB
 * in flight at once: rank 0 checks that their RNDVs and the 72 KiB one
 * carried only what the FRAGs could not take (pml/send.c rndv_head: 24
 * bytes of 1 MiB, none of 72 KiB), rank 1 that at least 95% of the
 * window's bytes were placed. */
#include "bm_test.h"
#include "pml/pml_internal.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEN   (3u << 20) /* contiguous message */
#define GUARD 4096       /* bytes past a receive buffer that must stay untouched */

static int rank;

/* A window of WIN messages of WLEN bytes in flight at once (bm_bw's
 * pattern): the FRAGs follow each other on the connection, and the read
 * that ends one must not take most of the next into the connection buffer
 * (tcp_conn.c, TCP_READ_AHEAD_PLACED), or that FRAG is copied out of it
 * instead of placed. Returns the bytes the FRAGs carried. */
#define WIN  8
#define WLEN (1u << 20)
static size_t window(void)
{
    char *b = malloc((size_t)WIN * WLEN);
    BM_CHECK(b != NULL);
    MPI_Request rq[WIN];
    if (rank == 1) {
        memset(b, 0x5a, (size_t)WIN * WLEN);
        for (int i = 0; i < WIN; i++)
            MPI_Irecv(b + (size_t)i * WLEN, (int)WLEN, MPI_BYTE, 0, 100 + i, MPI_COMM_WORLD,
                      &rq[i]);
    } else {
        for (int i = 0; i < WIN; i++)
            bm_test_fill(b + (size_t)i * WLEN, WLEN, 100 + i);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        for (int i = 0; i < WIN; i++)
            MPI_Isend(b + (size_t)i * WLEN, (int)WLEN, MPI_BYTE, 1, 100 + i, MPI_COMM_WORLD,
                      &rq[i]);
    BM_CHECK_EQ_INT(MPI_Waitall(WIN, rq, MPI_STATUSES_IGNORE), MPI_SUCCESS);
    if (rank == 1) {
        char *want = malloc(WLEN);
        BM_CHECK(want != NULL);
        size_t bad = 0;
        for (int i = 0; i < WIN; i++) {
            bm_test_fill(want, WLEN, 100 + i);
            bad += memcmp(want, b + (size_t)i * WLEN, WLEN) != 0;
        }
        BM_CHECK_MSG(bad == 0, "%zu of the %d messages of the window differ", bad, WIN);
        free(want);
    }
    free(b);
    /* the RNDV carries 24 bytes (pml/send.c rndv_head), one FRAG the rest */
    return (size_t)WIN * WLEN;
}

/* One message of (count, type) from rank 0 to rank 1, received as
 * (rcount, rtype): the receiver compares the packed streams. */
static void one(MPI_Datatype stype, int scount, MPI_Datatype rtype, int rcount, int tag,
                int expect_err)
{
    MPI_Aint lb, sext, rext;
    MPI_Type_get_extent(stype, &lb, &sext);
    MPI_Type_get_extent(rtype, &lb, &rext);
    int ssize, rsize;
    MPI_Type_size(stype, &ssize);
    MPI_Type_size(rtype, &rsize);
    size_t sbytes = (size_t)sext * (size_t)scount, rbytes = (size_t)rext * (size_t)rcount;
    if (rank == 0) {
        char *b = malloc(sbytes);
        BM_CHECK(b != NULL);
        bm_test_fill(b, sbytes, tag);
        BM_CHECK_EQ_INT(MPI_Send(b, scount, stype, 1, tag, MPI_COMM_WORLD), MPI_SUCCESS);
        free(b);
    } else if (rank == 1) {
        /* what arrives: the sender's packed stream, cut to what fits */
        size_t spacked = (size_t)ssize * (size_t)scount, rpacked = (size_t)rsize * (size_t)rcount;
        size_t n = spacked < rpacked ? spacked : rpacked;
        char *src = malloc(sbytes), *want = malloc(spacked), *b = malloc(rbytes + GUARD),
             *got = malloc(rpacked), *pre = malloc(rpacked);
        BM_CHECK(src && want && b && got && pre);
        bm_test_fill(src, sbytes, tag);
        int pos = 0;
        MPI_Pack(src, scount, stype, want, (int)spacked, &pos, MPI_COMM_SELF);
        memset(b, 0x5a, rbytes + GUARD);
        pos = 0;
        MPI_Pack(b, rcount, rtype, pre, (int)rpacked, &pos, MPI_COMM_SELF);
        MPI_Status st;
        int rc = MPI_Recv(b, rcount, rtype, 0, tag, MPI_COMM_WORLD, &st);
        BM_CHECK_MSG(expect_err ? rc == MPI_ERR_TRUNCATE : rc == MPI_SUCCESS,
                     "message %d: MPI_Recv returned %d", tag, rc);
        pos = 0;
        MPI_Pack(b, rcount, rtype, got, (int)rpacked, &pos, MPI_COMM_SELF);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++)
            bad += got[i] != want[i];
        for (size_t i = n; i < rpacked; i++)
            bad += got[i] != pre[i]; /* truncated: the rest of the buffer untouched */
        for (size_t i = 0; i < GUARD; i++)
            bad += b[rbytes + i] != 0x5a;
        /* the gaps between blocks untouched: unpack the received stream into a
         * copy of the untouched buffer and compare the whole extent */
        char *ref = malloc(rbytes + GUARD);
        BM_CHECK(ref != NULL);
        memset(ref, 0x5a, rbytes + GUARD);
        pos = 0;
        MPI_Unpack(got, (int)rpacked, &pos, ref, rcount, rtype, MPI_COMM_SELF);
        size_t gaps = 0;
        for (size_t i = 0; i < rbytes; i++)
            gaps += b[i] != ref[i];
        BM_CHECK_MSG(bad == 0 && gaps == 0, "message %d: %zu bad bytes, %zu bad gap bytes", tag,
                     bad, gaps);
        free(ref);
        free(src);
        free(want);
        free(b);
        free(got);
        free(pre);
    }
}

int main(int argc, char **argv)
{
    int size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    BM_CHECK_MSG(size == 2, "run with 2 ranks, not %d", size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    uint64_t frags0 = bm_pml_g.placed_frags, bytes0 = bm_pml_g.placed_bytes;

    /* contiguous, and truncated to 2 MiB + 1 */
    one(MPI_BYTE, LEN, MPI_BYTE, LEN, 1, 0);
    one(MPI_BYTE, LEN, MPI_BYTE, (2 << 20) + 1, 2, 1);
    uint64_t contig = bm_pml_g.placed_frags - frags0;

    /* vector of doubles, 256 per block every 512 (2 KiB blocks: 512 per MiB) */
    MPI_Datatype vec, idx;
    MPI_Type_vector(1024, 256, 512, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    one(vec, 1, vec, 1, 3, 0);
    one(vec, 1, MPI_DOUBLE, 1024 * 256, 4, 0);
    one(MPI_DOUBLE, 1024 * 256, vec, 1, 5, 0);
    /* indexed, blocks of 100..4195 ints at irregular places */
    int blens[300], displs[300], at = 0;
    for (int i = 0; i < 300; i++) {
        blens[i] = 100 + (i * 7919) % 4096;
        displs[i] = at + (i % 3) * 17;
        at = displs[i] + blens[i];
    }
    MPI_Type_indexed(300, blens, displs, MPI_INT, &idx);
    MPI_Type_commit(&idx);
    one(idx, 1, idx, 1, 6, 0);
    one(vec, 1, vec, 1, 7, 0);
    uint64_t nc = bm_pml_g.placed_frags - frags0 - contig;

    /* just past the eager limit: whole in the RNDV, gaps and truncation checked as above */
    uint64_t whole0 = bm_pml_g.rndv_whole, cut0 = bm_pml_g.rndv_head_cut;
    MPI_Datatype v64;
    MPI_Type_vector(128, 64, 128, MPI_DOUBLE, &v64); /* 64 KiB of data in 128 */
    MPI_Type_commit(&v64);
    one(MPI_BYTE, 65536, MPI_BYTE, 65536, 8, 0);
    one(v64, 1, v64, 1, 9, 0);
    one(v64, 1, MPI_BYTE, 60000, 10, 1);
    one(MPI_BYTE, 73728, MPI_BYTE, 73728, 11, 0);
    MPI_Type_free(&v64);

    uint64_t wbytes0 = bm_pml_g.placed_bytes;
    size_t wfrag = window();
    uint64_t wplaced = bm_pml_g.placed_bytes - wbytes0;

    if (rank == 0) {
        /* the vector messages (2 KiB blocks) go out from their blocks, not packed */
        printf("rank 0: FRAGs sent from the blocks in place: %llu\n",
               (unsigned long long)bm_pml_g.iov_frags);
        BM_CHECK_MSG(bm_pml_g.iov_frags >= 5, "only %llu FRAGs sent from the blocks in place",
                     (unsigned long long)bm_pml_g.iov_frags);
        uint64_t whole = bm_pml_g.rndv_whole - whole0;
        printf("rank 0: messages just past the eager limit sent whole in their RNDV: %llu\n",
               (unsigned long long)whole);
        BM_CHECK_MSG(whole == 3,
                     "%llu of the 3 messages of 64 KiB sent whole in their RNDV "
                     "(and none of 72 KiB)",
                     (unsigned long long)whole);
        /* the 72 KiB message and the window's 8 of 1 MiB; not the ones sent
         * whole, nor the 3 MiB ones sent before cut0 */
        uint64_t cut = bm_pml_g.rndv_head_cut - cut0;
        printf("rank 0: RNDVs that left their bytes to placed FRAGs: %llu\n",
               (unsigned long long)cut);
        BM_CHECK_MSG(cut == 1 + WIN,
                     "%llu of the %d RNDVs of 72 KiB and 1 MiB left their bytes to the FRAGs",
                     (unsigned long long)cut, 1 + WIN);
    }
    if (rank == 1) {
        printf("rank 1: FRAGs placed: %llu of contiguous receives, %llu of non-contiguous ones; "
               "%llu bytes\n",
               (unsigned long long)contig, (unsigned long long)nc,
               (unsigned long long)(bm_pml_g.placed_bytes - bytes0));
        /* 3 MiB: the RNDV carries 64 KiB, then 3 FRAGs of up to 1 MiB; the
         * truncated one 2 */
        BM_CHECK_MSG(contig >= 4, "only %llu contiguous FRAGs received by placement",
                     (unsigned long long)contig);
        BM_CHECK_MSG(nc >= 5, "only %llu non-contiguous FRAGs received by placement",
                     (unsigned long long)nc);
        printf("rank 1: window of %d x %u B: %llu of its %zu bytes placed\n", WIN, WLEN,
               (unsigned long long)wplaced, wfrag);
        BM_CHECK_MSG(wplaced * 100 >= (uint64_t)wfrag * 95,
                     "a window of %d messages of %u bytes: only %llu of its %zu bytes placed", WIN,
                     WLEN, (unsigned long long)wplaced, wfrag);
        BM_CHECK_MSG(bm_pml_g.placed_aborted == 0, "%llu placements lost on a healthy link",
                     (unsigned long long)bm_pml_g.placed_aborted);
    }
    MPI_Type_free(&vec);
    MPI_Type_free(&idx);
    int failed = bm_test_failed, any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any ? 1 : 0;
}
