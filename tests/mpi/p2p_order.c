/* Point-to-point matching order: messages between one pair arrive in the
 * order they were sent (eager and rendezvous sizes mixed, several tags);
 * MPI_ANY_SOURCE with MPI_ANY_TAG receives every peer's messages, each
 * peer's in order; 10,000 unexpected messages are received in reverse tag
 * order (the worst case for a linear queue); receives posted before their
 * message, a wildcard and a specific receive matched in post order,
 * communicators (a dup, MPI_COMM_SELF) that never mix, and sends to self. */
#include "bm_test.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

/* Message i of a stream: sizes on both sides of the eager limits. */
static int stream_len(int i)
{
    static const int lens[] = {0, 4, 100, 4000, 5000, 70000, 8, 300000, 1, 33000};
    return lens[i % (int)(sizeof(lens) / sizeof(lens[0]))];
}

#define STREAM 40

/* Every rank streams to every other with non-blocking sends; receivers name
 * the source and use MPI_ANY_TAG: the order must be the send order. */
static void test_pair_order(void)
{
    int npeer = size - 1;
    unsigned char **bufs = calloc((size_t)(STREAM * size), sizeof(*bufs));
    MPI_Request *reqs = calloc((size_t)(STREAM * size), sizeof(*reqs));
    int nreq = 0;
    for (int peer = 0; peer < size; peer++) {
        if (peer == rank)
            continue;
        for (int i = 0; i < STREAM; i++) {
            bufs[nreq] = malloc((size_t)stream_len(i) + 1);
            bm_test_fill(bufs[nreq], stream_len(i), i * 13 + rank);
            MPI_Isend(bufs[nreq], stream_len(i), MPI_BYTE, peer, i % 3, MPI_COMM_WORLD,
                      &reqs[nreq]);
            nreq++;
        }
    }
    unsigned char *rbuf = malloc(300000);
    int order_bad = 0, data_bad = 0;
    for (int k = 1; k <= npeer; k++) {
        int peer = (rank + k) % size;
        for (int i = 0; i < STREAM; i++) {
            MPI_Status st;
            MPI_Recv(rbuf, 300000, MPI_BYTE, peer, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            int count = -1;
            MPI_Get_count(&st, MPI_BYTE, &count);
            if (st.MPI_TAG != i % 3 || st.MPI_SOURCE != peer || count != stream_len(i))
                order_bad++;
            else
                data_bad += bm_test_bad_bytes(rbuf, count, i * 13 + peer);
        }
    }
    BM_CHECK_EQ_INT(order_bad, 0);
    BM_CHECK_EQ_INT(data_bad, 0);
    BM_CHECK_EQ_INT(MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE), MPI_SUCCESS);
    for (int i = 0; i < nreq; i++)
        free(bufs[i]);
    free(bufs);
    free(reqs);
    free(rbuf);
}

/* Everyone sends to rank 0, which receives with both wildcards: every
 * message arrives once and each source's messages in order. */
static void test_wildcards(void)
{
    const int n = 30;
    if (rank != 0) {
        for (int i = 0; i < n; i++) {
            int len = stream_len(i);
            unsigned char *b = malloc((size_t)len + 1);
            bm_test_fill(b, len, rank * 100 + i);
            MPI_Send(b, len, MPI_BYTE, 0, 1000 + i, MPI_COMM_WORLD);
            free(b);
        }
        return;
    }
    int *next = calloc((size_t)size, sizeof(int));
    unsigned char *rbuf = malloc(300000);
    int bad = 0;
    for (int k = 0; k < n * (size - 1); k++) {
        MPI_Status st;
        MPI_Recv(rbuf, 300000, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        int src = st.MPI_SOURCE, count = -1;
        MPI_Get_count(&st, MPI_BYTE, &count);
        if (src <= 0 || src >= size || st.MPI_TAG != 1000 + next[src] ||
            count != stream_len(next[src]) || bm_test_bad_bytes(rbuf, count, src * 100 + next[src]))
            bad++;
        if (src > 0 && src < size)
            next[src]++;
    }
    BM_CHECK_EQ_INT(bad, 0);
    for (int s = 1; s < size; s++)
        BM_CHECK_EQ_INT(next[s], n);
    free(next);
    free(rbuf);
}

#define MANY 10000

/* Each rank sends 10,000 small messages to its right neighbour before the
 * neighbour posts anything; the neighbour receives them newest tag first. */
static void test_many_unexpected(void)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int *vals = malloc(sizeof(int) * MANY);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * MANY);
    for (int i = 0; i < MANY; i++) {
        vals[i] = i * 3 + rank;
        MPI_Isend(&vals[i], 1, MPI_INT, right, i, MPI_COMM_WORLD, &reqs[i]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int bad = 0;
    for (int i = MANY - 1; i >= 0; i--) {
        int v = -1;
        MPI_Status st;
        MPI_Recv(&v, 1, MPI_INT, left, i, MPI_COMM_WORLD, &st);
        if (v != i * 3 + left || st.MPI_TAG != i)
            bad++;
    }
    BM_CHECK_EQ_INT(bad, 0);
    BM_CHECK_EQ_INT(MPI_Waitall(MANY, reqs, MPI_STATUSES_IGNORE), MPI_SUCCESS);
    int flag = 1;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    BM_CHECK(!flag);
    free(vals);
    free(reqs);
}

/* Receives posted before their messages; a wildcard and a specific receive
 * that both match are satisfied in the order they were posted. */
static void test_posted_first(void)
{
    if (size < 2)
        return;
    if (rank == 0) {
        int a = 0, b = 0, c = 0;
        MPI_Request r[3];
        MPI_Irecv(&a, 1, MPI_INT, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &r[0]);
        MPI_Irecv(&b, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, &r[1]);
        MPI_Irecv(&c, 1, MPI_INT, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &r[2]);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Status st[3];
        BM_CHECK_EQ_INT(MPI_Waitall(3, r, st), MPI_SUCCESS);
        BM_CHECK_EQ_INT(a, 1);
        BM_CHECK_EQ_INT(b, 2);
        BM_CHECK_EQ_INT(c, 3);
        BM_CHECK_EQ_INT(st[0].MPI_SOURCE, 1);
        BM_CHECK_EQ_INT(st[2].MPI_TAG, 6);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) {
            int v[3] = {1, 2, 3};
            MPI_Send(&v[0], 1, MPI_INT, 0, 5, MPI_COMM_WORLD);
            MPI_Send(&v[1], 1, MPI_INT, 0, 5, MPI_COMM_WORLD);
            MPI_Send(&v[2], 1, MPI_INT, 0, 6, MPI_COMM_WORLD);
        }
    }
}

/* Same source and tag on two communicators never match each other. */
static void test_communicators(void)
{
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int w = 100 + rank, d = 200 + rank, got_w = -1, got_d = -1;
    MPI_Request r[2];
    MPI_Isend(&w, 1, MPI_INT, right, 9, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(&d, 1, MPI_INT, right, 9, dup, &r[1]);
    MPI_Recv(&got_d, 1, MPI_INT, left, 9, dup, MPI_STATUS_IGNORE);
    MPI_Recv(&got_w, 1, MPI_INT, left, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    BM_CHECK_EQ_INT(got_w, 100 + left);
    BM_CHECK_EQ_INT(got_d, 200 + left);
    MPI_Comm_free(&dup);

    /* MPI_COMM_SELF: rank 0 of a one-process communicator */
    int s = 7, t = 0;
    MPI_Request rs;
    MPI_Isend(&s, 1, MPI_INT, 0, 3, MPI_COMM_SELF, &rs);
    MPI_Status st;
    MPI_Recv(&t, 1, MPI_INT, 0, 3, MPI_COMM_SELF, &st);
    MPI_Wait(&rs, MPI_STATUS_IGNORE);
    BM_CHECK_EQ_INT(t, 7);
    BM_CHECK_EQ_INT(st.MPI_SOURCE, 0);
}

/* Sends to self, eager and rendezvous, posted in either order. */
static void test_self(void)
{
    const int len = 1 << 20;
    unsigned char *a = malloc(len), *b = malloc(len);
    bm_test_fill(a, len, 5);
    MPI_Request r;
    MPI_Isend(a, len, MPI_BYTE, rank, 20001, MPI_COMM_WORLD, &r);
    MPI_Recv(b, len, MPI_BYTE, rank, 20001, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    BM_CHECK_EQ_INT(bm_test_bad_bytes(b, len, 5), 0);
    memset(b, 0, len);
    /* a tag no other test uses: other ranks may already be further on */
    MPI_Irecv(b, len, MPI_BYTE, MPI_ANY_SOURCE, 20002, MPI_COMM_WORLD, &r);
    MPI_Send(a, 1000, MPI_BYTE, rank, 20002, MPI_COMM_WORLD);
    MPI_Status st;
    MPI_Wait(&r, &st);
    int count = -1;
    MPI_Get_count(&st, MPI_BYTE, &count);
    BM_CHECK_EQ_INT(count, 1000);
    BM_CHECK_EQ_INT(st.MPI_SOURCE, rank);
    BM_CHECK_EQ_INT(bm_test_bad_bytes(b, 1000, 5), 0);
    free(a);
    free(b);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    BM_RUN(test_self);
    if (size > 1) {
        BM_RUN(test_pair_order);
        BM_RUN(test_wildcards);
        BM_RUN(test_posted_first);
    }
    BM_RUN(test_communicators);
    BM_RUN(test_many_unexpected);
    MPI_Barrier(MPI_COMM_WORLD);
    int rc = bm_test_summary("p2p_order");
    MPI_Finalize();
    return rc;
}
