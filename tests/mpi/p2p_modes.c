/* Send modes and truncation between ranks 0 and 1 (other ranks only take
 * part in the barriers): a synchronous send (eager and rendezvous sized)
 * never completes before the receiver matched it, while a small standard
 * send completes without a receive, even when the receiver makes no MPI
 * call at all (the transport copied the data); ready sends; buffered sends copy the
 * data at once (the user buffer may change right after), MPI_Ibsend
 * completes at once, MPI_Buffer_detach returns the buffer, and a missing or
 * small buffer gives MPI_ERR_BUFFER; a message longer than the receive
 * buffer gives MPI_ERR_TRUNCATE (eager, rendezvous, Wait and Waitall) with
 * the buffer filled and nothing written past it, and the pair keeps working
 * afterwards. */
#include "bm_test.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size;

#define TAG_GO   11
#define TAG_DATA 10

static void go_send(int to)
{
    MPI_Send(NULL, 0, MPI_BYTE, to, TAG_GO, MPI_COMM_WORLD);
}

static void go_wait(int from)
{
    MPI_Recv(NULL, 0, MPI_BYTE, from, TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static void test_ssend(void)
{
    const int lens[2] = {4, 400000};
    for (int k = 0; k < 2; k++) {
        int len = lens[k];
        char *buf = malloc((size_t)len);
        if (rank == 0) {
            memset(buf, 'a' + k, (size_t)len);
            MPI_Request r;
            MPI_Issend(buf, len, MPI_CHAR, 1, TAG_DATA, MPI_COMM_WORLD, &r);
            /* keep testing for a while: the receiver has not posted yet */
            int flag = 0, early = 0;
            double until = MPI_Wtime() + 0.1;
            while (MPI_Wtime() < until) {
                MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
                if (flag) {
                    early = 1;
                    break;
                }
            }
            BM_CHECK_MSG(!early, "MPI_Issend of %d bytes completed before it was matched", len);
            /* a small standard send needs no receive to complete */
            int small = 42;
            MPI_Request rs;
            MPI_Isend(&small, 1, MPI_INT, 1, TAG_DATA + 5, MPI_COMM_WORLD, &rs);
            BM_CHECK_EQ_INT(MPI_Wait(&rs, MPI_STATUS_IGNORE), MPI_SUCCESS);
            go_send(1);
            if (!early)
                BM_CHECK_EQ_INT(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS);
            /* blocking Ssend both sizes, receiver posts after the go */
            go_wait(1);
            MPI_Ssend(buf, len, MPI_CHAR, 1, TAG_DATA + 2, MPI_COMM_WORLD);
        } else if (rank == 1) {
            go_wait(0);
            MPI_Recv(buf, len, MPI_CHAR, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            int bad = 0;
            for (int i = 0; i < len; i++)
                bad += buf[i] != 'a' + k;
            BM_CHECK_EQ_INT(bad, 0);
            int small = 0;
            MPI_Recv(&small, 1, MPI_INT, 0, TAG_DATA + 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            BM_CHECK_EQ_INT(small, 42);
            go_send(0);
            memset(buf, 0, (size_t)len);
            MPI_Recv(buf, len, MPI_CHAR, 0, TAG_DATA + 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            BM_CHECK(buf[0] == 'a' + k && buf[len - 1] == 'a' + k);
        }
        free(buf);
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

/* Wait outside MPI (no progress) for a file to appear; false after 10 s. */
static int wait_file(const char *path)
{
    for (int i = 0; i < 1000; i++) {
        if (access(path, F_OK) == 0)
            return 1;
        usleep(10000);
    }
    return 0;
}

static void touch(const char *path)
{
    FILE *f = fopen(path, "w");
    BM_CHECK(f != NULL);
    if (f)
        fclose(f);
}

/* A standard send of an eager size completes while the receiver makes no
 * MPI call at all: rank 1 leaves MPI and says so with a file; rank 0 then
 * sends and waits, and says it is done with another file that rank 1
 * waits for, still outside MPI. */
static void test_eager_local_completion(void)
{
    char ready[128], done[128];
    int pid = (int)getpid();
    MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
    snprintf(ready, sizeof(ready), "/tmp/bm_p2p_modes_%d.ready", pid);
    snprintf(done, sizeof(done), "/tmp/bm_p2p_modes_%d.done", pid);
    static char buf[2000];
    if (rank == 0) {
        memset(buf, 'e', sizeof(buf));
        BM_CHECK(wait_file(ready));
        MPI_Request r;
        MPI_Isend(buf, (int)sizeof(buf), MPI_CHAR, 1, 50, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        touch(done);
    } else if (rank == 1) {
        touch(ready);
        BM_CHECK_MSG(wait_file(done),
                     "a 2000-byte MPI_Isend did not complete while its receiver was busy");
        MPI_Recv(buf, (int)sizeof(buf), MPI_CHAR, 0, 50, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        BM_CHECK(buf[0] == 'e' && buf[1999] == 'e');
        unlink(ready);
        unlink(done);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void test_rsend(void)
{
    int v = 0;
    if (rank == 1) {
        MPI_Request r;
        MPI_Irecv(&v, 1, MPI_INT, 0, 20, MPI_COMM_WORLD, &r);
        go_send(0);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        BM_CHECK_EQ_INT(v, 77);
        static double big[50000];
        MPI_Request r2;
        MPI_Irecv(big, 50000, MPI_DOUBLE, 0, 21, MPI_COMM_WORLD, &r2);
        go_send(0);
        MPI_Wait(&r2, MPI_STATUS_IGNORE);
        BM_CHECK(big[0] == 1.5 && big[49999] == 1.5);
    } else if (rank == 0) {
        v = 77;
        go_wait(1);
        BM_CHECK_EQ_INT(MPI_Rsend(&v, 1, MPI_INT, 1, 20, MPI_COMM_WORLD), MPI_SUCCESS);
        static double big[50000];
        for (int i = 0; i < 50000; i++)
            big[i] = 1.5;
        go_wait(1);
        MPI_Request r;
        MPI_Irsend(big, 50000, MPI_DOUBLE, 1, 21, MPI_COMM_WORLD, &r);
        BM_CHECK_EQ_INT(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void test_bsend(void)
{
    enum { SMALL = 1000, BIG = 100000 };
    if (rank == 0) {
        int size_needed = 2 * (SMALL * (int)sizeof(int) + MPI_BSEND_OVERHEAD) +
                          BIG * (int)sizeof(int) + MPI_BSEND_OVERHEAD + 64;
        char *attach = malloc((size_t)size_needed);
        BM_CHECK_EQ_INT(MPI_Buffer_attach(attach, size_needed), MPI_SUCCESS);
        int *a = malloc(SMALL * sizeof(int)), *big = malloc(BIG * sizeof(int));
        for (int i = 0; i < SMALL; i++)
            a[i] = i;
        for (int i = 0; i < BIG; i++)
            big[i] = -i;
        BM_CHECK_EQ_INT(MPI_Bsend(a, SMALL, MPI_INT, 1, 30, MPI_COMM_WORLD), MPI_SUCCESS);
        a[0] = 999; /* the first message was copied: changing the buffer is allowed */
        MPI_Request r;
        BM_CHECK_EQ_INT(MPI_Ibsend(a, SMALL, MPI_INT, 1, 31, MPI_COMM_WORLD, &r), MPI_SUCCESS);
        int flag = 0;
        MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
        BM_CHECK(flag); /* complete as soon as the data is buffered */
        BM_CHECK_EQ_INT(MPI_Bsend(big, BIG, MPI_INT, 1, 32, MPI_COMM_WORLD), MPI_SUCCESS);
        memset(big, 0, BIG * sizeof(int));
        /* the big message cannot complete before rank 1 gets the go, so its
         * space stays taken: a second one does not fit */
        BM_CHECK_EQ_INT(MPI_Bsend(big, BIG, MPI_INT, 1, 33, MPI_COMM_WORLD), MPI_ERR_BUFFER);
        go_send(1);
        void *back = NULL;
        int back_size = 0;
        BM_CHECK_EQ_INT(MPI_Buffer_detach(&back, &back_size), MPI_SUCCESS);
        BM_CHECK(back == attach);
        BM_CHECK_EQ_INT(back_size, size_needed);
        BM_CHECK_EQ_INT(MPI_Bsend(a, 1, MPI_INT, 1, 33, MPI_COMM_WORLD), MPI_ERR_BUFFER);
        /* an attached buffer is reusable after detach */
        BM_CHECK_EQ_INT(MPI_Buffer_attach(attach, size_needed), MPI_SUCCESS);
        BM_CHECK_EQ_INT(MPI_Buffer_attach(attach, size_needed), MPI_ERR_BUFFER);
        MPI_Request pr;
        int pv = 5;
        MPI_Bsend_init(&pv, 1, MPI_INT, 1, 34, MPI_COMM_WORLD, &pr);
        for (int i = 0; i < 3; i++) {
            pv = 5 + i;
            MPI_Start(&pr);
            MPI_Wait(&pr, MPI_STATUS_IGNORE);
        }
        MPI_Request_free(&pr);
        MPI_Buffer_detach(&back, &back_size);
        free(attach);
        free(a);
        free(big);
    } else if (rank == 1) {
        go_wait(0);
        int *a = malloc(SMALL * sizeof(int)), *big = malloc(BIG * sizeof(int));
        MPI_Recv(a, SMALL, MPI_INT, 0, 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        BM_CHECK_EQ_INT(a[0], 0);
        BM_CHECK_EQ_INT(a[SMALL - 1], SMALL - 1);
        MPI_Recv(a, SMALL, MPI_INT, 0, 31, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        BM_CHECK_EQ_INT(a[0], 999);
        MPI_Recv(big, BIG, MPI_INT, 0, 32, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        int bad = 0;
        for (int i = 0; i < BIG; i++)
            bad += big[i] != -i;
        BM_CHECK_EQ_INT(bad, 0);
        for (int i = 0; i < 3; i++) {
            int pv = 0;
            MPI_Recv(&pv, 1, MPI_INT, 0, 34, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            BM_CHECK_EQ_INT(pv, 5 + i);
        }
        free(a);
        free(big);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static int guard_intact(const unsigned char *g, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (g[i] != 0xee)
            return 0;
    return 1;
}

static void test_truncate(void)
{
    const int lens[2] = {400, 1 << 20}; /* eager and rendezvous */
    for (int k = 0; k < 2; k++) {
        int len = lens[k];
        if (rank == 0) {
            unsigned char *b = malloc((size_t)len);
            for (int i = 0; i < len; i++)
                b[i] = (unsigned char)i;
            /* Recv, Wait and Waitall each see one truncated message */
            for (int rep = 0; rep < 3; rep++)
                MPI_Send(b, len, MPI_BYTE, 1, 40 + rep, MPI_COMM_WORLD);
            int after = 5;
            MPI_Send(&after, 1, MPI_INT, 1, 49, MPI_COMM_WORLD);
            free(b);
        } else if (rank == 1) {
            unsigned char *buf = malloc(100 + 64);
            memset(buf, 0xee, 100 + 64);
            MPI_Status st;
            int rc = MPI_Recv(buf, 100, MPI_BYTE, 0, 40, MPI_COMM_WORLD, &st);
            BM_CHECK_EQ_INT(rc, MPI_ERR_TRUNCATE);
            int count = -1;
            MPI_Get_count(&st, MPI_BYTE, &count);
            BM_CHECK_EQ_INT(count, 100);
            BM_CHECK_EQ_INT(st.MPI_SOURCE, 0);
            BM_CHECK(buf[0] == 0 && buf[99] == 99);
            BM_CHECK(guard_intact(buf + 100, 64));

            MPI_Request r;
            memset(buf, 0xee, 100 + 64);
            MPI_Irecv(buf, 100, MPI_BYTE, 0, 41, MPI_COMM_WORLD, &r);
            BM_CHECK_EQ_INT(MPI_Wait(&r, &st), MPI_ERR_TRUNCATE);
            BM_CHECK(r == MPI_REQUEST_NULL);
            BM_CHECK(guard_intact(buf + 100, 64));

            int small = 0;
            MPI_Request rr[2];
            MPI_Status sts[2];
            memset(buf, 0xee, 100 + 64);
            MPI_Irecv(buf, 100, MPI_BYTE, 0, 42, MPI_COMM_WORLD, &rr[0]);
            MPI_Irecv(&small, 1, MPI_INT, 0, 49, MPI_COMM_WORLD, &rr[1]);
            BM_CHECK_EQ_INT(MPI_Waitall(2, rr, sts), MPI_ERR_IN_STATUS);
            BM_CHECK_EQ_INT(sts[0].MPI_ERROR, MPI_ERR_TRUNCATE);
            BM_CHECK_EQ_INT(sts[1].MPI_ERROR, MPI_SUCCESS);
            BM_CHECK_EQ_INT(small, 5);
            BM_CHECK(guard_intact(buf + 100, 64));
            free(buf);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

/* A buffer sized exactly by the standard's formula (sum of packed size +
 * MPI_BSEND_OVERHEAD), at an odd address, holds that many messages in
 * transit and not one more; the space of the oldest comes back once it is
 * delivered, and the next message wraps around to the start (the circular
 * model of MPI-3.1 section 3.6.1). Messages are rendezvous-sized so that
 * they stay in transit until rank 1 receives them. */
static void test_bsend_exact(void)
{
    enum { N = 3, BIG = 50001 }; /* packed size + overhead not a multiple of 16 */
    int span = BIG * (int)sizeof(int) + MPI_BSEND_OVERHEAD, total = N * span;
    if (rank == 0) {
        char *mem = malloc((size_t)total + 1);
        int *big = malloc(BIG * sizeof(int));
        BM_CHECK_EQ_INT(MPI_Buffer_attach(mem + 1, total), MPI_SUCCESS);
        for (int k = 0; k < N; k++) {
            for (int i = 0; i < BIG; i++)
                big[i] = k * BIG + i;
            BM_CHECK_EQ_INT(MPI_Bsend(big, BIG, MPI_INT, 1, 40 + k, MPI_COMM_WORLD), MPI_SUCCESS);
        }
        /* full: not even one int more */
        BM_CHECK_EQ_INT(MPI_Bsend(big, 1, MPI_INT, 1, 49, MPI_COMM_WORLD), MPI_ERR_BUFFER);
        go_send(1); /* rank 1 receives the first message only */
        go_wait(1);
        for (int i = 0; i < BIG; i++)
            big[i] = 3 * BIG + i;
        /* the first span is free again: the fourth message wraps into it */
        BM_CHECK_EQ_INT(MPI_Bsend(big, BIG, MPI_INT, 1, 43, MPI_COMM_WORLD), MPI_SUCCESS);
        go_send(1);
        void *back;
        int back_size;
        BM_CHECK_EQ_INT(MPI_Buffer_detach(&back, &back_size), MPI_SUCCESS);
        BM_CHECK(back == mem + 1 && back_size == total);
        free(mem);
        free(big);
    } else if (rank == 1) {
        int *in = malloc(BIG * sizeof(int)), bad = 0;
        go_wait(0);
        MPI_Recv(in, BIG, MPI_INT, 0, 40, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < BIG; i++)
            bad += in[i] != i;
        go_send(0);
        go_wait(0);
        for (int k = 1; k <= N; k++) {
            MPI_Recv(in, BIG, MPI_INT, 0, 40 + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int i = 0; i < BIG; i++)
                bad += in[i] != k * BIG + i;
        }
        BM_CHECK_EQ_INT(bad, 0);
        free(in);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (size >= 2) {
        BM_RUN(test_ssend);
        BM_RUN(test_eager_local_completion);
        BM_RUN(test_rsend);
        BM_RUN(test_bsend);
        BM_RUN(test_bsend_exact);
        BM_RUN(test_truncate);
    }
    int rc = bm_test_summary("p2p_modes");
    MPI_Finalize();
    return rc;
}
