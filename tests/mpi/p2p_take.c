/* Blocking receives that take their message straight from the transport
 * (BM_PML_RECV_TAKE, btl.h recv_take; sm's fast boxes): a ping-pong of
 * small messages must be taken that way (the PML's recv_taken counter
 * moves on both ranks; with BM_PML_RECV_TAKE=0 it must stay 0), and the
 * cases the take must leave to the usual matching keep MPI's semantics:
 * a message with another tag ahead of the awaited one, a message longer
 * than the buffer (MPI_ERR_TRUNCATE), rendezvous sizes, zero bytes into a
 * NULL buffer, wildcard receives, and an earlier posted receive that the
 * same message matches first. A message already in the fast box is taken
 * before the receive is posted, but never ahead of one of the same source
 * and tag already waiting unexpected. Two ranks. */
#include "bm_test.h"
#include "pml/pml_internal.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size;

/* 250 round trips of 8 bytes, each checked: the take's data and status.
 * (2000 took 13-40 s at load 30-40, where each wait yields the core to the
 * other runnable processes; the counters need only some receives.) */
#define PINGPONGS 250
static void test_pingpong(void)
{
    const char *env = getenv("BM_PML_RECV_TAKE");
    bool off = env && strcmp(env, "0") == 0;
    uint64_t before = bm_pml_g.recv_taken;
    int peer = 1 - rank, bad = 0;
    for (int i = 0; i < PINGPONGS; i++) {
        uint64_t v = (uint64_t)i * 7919 + 3, got = 0;
        MPI_Status st;
        if (rank == 0) {
            MPI_Send(&v, 8, MPI_BYTE, peer, 11, MPI_COMM_WORLD);
            MPI_Recv(&got, 8, MPI_BYTE, peer, 12, MPI_COMM_WORLD, &st);
        } else {
            MPI_Recv(&got, 8, MPI_BYTE, peer, 11, MPI_COMM_WORLD, &st);
            MPI_Send(&got, 8, MPI_BYTE, peer, 12, MPI_COMM_WORLD);
        }
        int count = -1;
        MPI_Get_count(&st, MPI_BYTE, &count);
        if (got != v || count != 8 || st.MPI_SOURCE != peer || st.MPI_TAG != (rank ? 11 : 12)) {
            if (bad++ == 0)
                bm_test_fail(__FILE__, __LINE__,
                             "rank %d round %d: got %llu (sent %llu), count %d, "
                             "source %d, tag %d",
                             rank, i, (unsigned long long)got, (unsigned long long)v, count,
                             st.MPI_SOURCE, st.MPI_TAG);
        }
    }
    BM_CHECK_EQ_INT(bad, 0);
    uint64_t taken = bm_pml_g.recv_taken - before;
    if (off)
        BM_CHECK_MSG(taken == 0, "rank %d: %llu receives taken with BM_PML_RECV_TAKE=0", rank,
                     (unsigned long long)taken);
    else
        BM_CHECK_MSG(taken > 0, "rank %d: none of %d blocking receives was taken from sm", rank,
                     PINGPONGS);
}

/* A message that is in the fast box before the blocking receive is made
 * is taken before anything is posted (recv_take_early): rank 1 sleeps,
 * so no progress pass can have moved it elsewhere. Its data and status
 * are checked; the early counter moves by one when the take is on and the
 * buffer within BM_PML_RECV_TAKE_MAX, and stays put otherwise. A round
 * where rank 0 was not scheduled in time to send during the sleep (a
 * loaded host) is played again, up to 50 rounds. */
static void early_len(int len)
{
    const char *env = getenv("BM_PML_RECV_TAKE");
    bool expect = !(env && strcmp(env, "0") == 0) && (size_t)len <= bm_pml_g.cfg.recv_take_max;
    static unsigned char msg[4096], got[4096];
    int done = 0;
    for (int round = 0; round < 50 && !done; round++) {
        bm_test_fill(msg, (size_t)len, round + len);
        if (rank == 0) {
            MPI_Send(msg, len, MPI_BYTE, 1, 13, MPI_COMM_WORLD);
            MPI_Recv(&done, 1, MPI_INT, 1, 17, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            continue;
        }
        uint64_t before = bm_pml_g.recv_taken_early;
        usleep(20000);
        MPI_Status st;
        memset(got, 0, sizeof(got));
        MPI_Recv(got, len, MPI_BYTE, 0, 13, MPI_COMM_WORLD, &st);
        uint64_t early = bm_pml_g.recv_taken_early - before;
        int count = -1;
        MPI_Get_count(&st, MPI_BYTE, &count);
        BM_CHECK_EQ_INT(memcmp(got, msg, (size_t)len), 0);
        BM_CHECK_EQ_INT(count, len);
        BM_CHECK_EQ_INT(st.MPI_SOURCE, 0);
        BM_CHECK_EQ_INT(st.MPI_TAG, 13);
        if (!expect)
            BM_CHECK_MSG(early == 0, "%d bytes: %llu receives taken early (take %s, limit %zu)",
                         len, (unsigned long long)early, env ? env : "default",
                         bm_pml_g.cfg.recv_take_max);
        done = !expect || early == 1;
        MPI_Send(&done, 1, MPI_INT, 0, 17, MPI_COMM_WORLD);
    }
    if (rank == 1)
        BM_CHECK_MSG(done, "%d bytes waiting in the fast box were never taken before posting", len);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void test_early(void)
{
    early_len(8);
    early_len(200);
    early_len(2048); /* the default limit (4096) covers every fast-box message */
}

/* A message of the awaited source and tag already waiting unexpected
 * matches before the next one in the fast box: rank 1's receive of tag 15
 * leaves A (tag 14, ahead of it in the ring) to progress, which queues it
 * unexpected; B (tag 14) then waits in the ring while rank 1 sleeps. The
 * first receive of tag 14 must get A, not take B. */
static void test_unexpected_first(void)
{
    int a = 41, b = 42, c = 43, go = 0, x = 0;
    if (rank == 0) {
        MPI_Send(&a, 1, MPI_INT, 1, 14, MPI_COMM_WORLD);
        MPI_Send(&c, 1, MPI_INT, 1, 15, MPI_COMM_WORLD);
        MPI_Recv(&go, 1, MPI_INT, 1, 16, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&b, 1, MPI_INT, 1, 14, MPI_COMM_WORLD);
    } else {
        usleep(20000);
        MPI_Recv(&x, 1, MPI_INT, 0, 15, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        BM_CHECK_EQ_INT(x, 43);
        MPI_Send(&go, 1, MPI_INT, 0, 16, MPI_COMM_WORLD);
        usleep(20000);
        MPI_Recv(&x, 1, MPI_INT, 0, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        BM_CHECK_EQ_INT(x, 41);
        MPI_Recv(&x, 1, MPI_INT, 0, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        BM_CHECK_EQ_INT(x, 42);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Tag 1 is sent before tag 2; rank 1 waits for tag 2 first: the take
 * finds tag 1 at the head, progress queues it as unexpected, and tag 2 is
 * then received (taken or matched); tag 1 comes from the queue after. */
static void test_other_first(void)
{
    int a = 111, b = 222, x = 0, y = 0;
    if (rank == 0) {
        MPI_Send(&a, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
        MPI_Send(&b, 1, MPI_INT, 1, 2, MPI_COMM_WORLD);
    } else {
        MPI_Status st;
        MPI_Recv(&y, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, &st);
        BM_CHECK_EQ_INT(y, 222);
        BM_CHECK_EQ_INT(st.MPI_TAG, 2);
        MPI_Recv(&x, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, &st);
        BM_CHECK_EQ_INT(x, 111);
        BM_CHECK_EQ_INT(st.MPI_TAG, 1);
    }
}

/* 64 bytes into a 16-byte buffer: truncation reported, 16 bytes written,
 * nothing past them. */
static void test_truncate(void)
{
    unsigned char msg[64];
    bm_test_fill(msg, sizeof(msg), 9);
    if (rank == 0) {
        MPI_Send(msg, 64, MPI_BYTE, 1, 3, MPI_COMM_WORLD);
    } else {
        unsigned char buf[32];
        memset(buf, 0xee, sizeof(buf));
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Status st;
        int rc = MPI_Recv(buf, 16, MPI_BYTE, 0, 3, MPI_COMM_WORLD, &st);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        BM_CHECK_EQ_INT(cls, MPI_ERR_TRUNCATE);
        BM_CHECK_EQ_INT(memcmp(buf, msg, 16), 0);
        BM_CHECK_EQ_INT(buf[16], 0xee);
    }
}

/* Sizes around the eager and rendezvous limits, zero bytes into NULL,
 * and wildcard receives, alternating directions. */
static void test_sizes_wildcards(void)
{
    static const int lens[] = {0, 1, 8, 100, 1000, 4000, 5000, 70000, 8, 0};
    unsigned char *s = malloc(70000), *r = malloc(70000);
    int peer = 1 - rank;
    for (int i = 0; i < (int)(sizeof(lens) / sizeof(lens[0])); i++) {
        int len = lens[i];
        bm_test_fill(s, (size_t)len, i + 40);
        bool sender = (i % 2) == rank;
        int src = i % 3 == 0 ? MPI_ANY_SOURCE : peer, tag = i % 4 == 1 ? MPI_ANY_TAG : 20 + i;
        if (sender) {
            MPI_Send(len ? s : NULL, len, MPI_BYTE, peer, 20 + i, MPI_COMM_WORLD);
        } else {
            MPI_Status st;
            MPI_Recv(len ? r : NULL, len, MPI_BYTE, src, tag, MPI_COMM_WORLD, &st);
            int count = -1;
            MPI_Get_count(&st, MPI_BYTE, &count);
            BM_CHECK_EQ_INT(count, len);
            BM_CHECK_EQ_INT(st.MPI_SOURCE, peer);
            BM_CHECK_EQ_INT(st.MPI_TAG, 20 + i);
            BM_CHECK_EQ_INT(bm_test_bad_bytes(r, (size_t)len, i + 40), 0);
        }
    }
    free(s);
    free(r);
}

/* An MPI_Irecv posted first matches the first message even though a
 * blocking receive for the same source and tag waits after it: the take
 * is off (two receives posted) and the order holds. */
static void test_posted_before(void)
{
    int v1 = 5, v2 = 6, a = 0, b = 0;
    if (rank == 0) {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Send(&v1, 1, MPI_INT, 1, 4, MPI_COMM_WORLD);
        MPI_Send(&v2, 1, MPI_INT, 1, 4, MPI_COMM_WORLD);
    } else {
        MPI_Request r;
        MPI_Irecv(&a, 1, MPI_INT, 0, 4, MPI_COMM_WORLD, &r);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Recv(&b, 1, MPI_INT, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        BM_CHECK_EQ_INT(a, 5);
        BM_CHECK_EQ_INT(b, 6);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    BM_CHECK_EQ_INT(size, 2);
    if (size == 2) {
        BM_RUN(test_pingpong);
        BM_RUN(test_early);
        BM_RUN(test_unexpected_first);
        BM_RUN(test_other_first);
        BM_RUN(test_truncate);
        BM_RUN(test_sizes_wildcards);
        BM_RUN(test_posted_before);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int rc = bm_test_summary("p2p_take");
    MPI_Finalize();
    return rc;
}
