/* The completion calls on many requests at once: every rank exchanges a
 * batch of messages (eager and rendezvous) with every other rank and
 * completes them with Waitany, Waitsome, Testany, Testsome and Testall in
 * turn; each request is reported exactly once, with the right index and
 * status, completed handles become MPI_REQUEST_NULL, and MPI_Request_free
 * on an active send still delivers the message. */
#include "bm_test.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

#define PER_PEER 6

static int msg_len(int k)
{
    return k % 2 ? 30000 : 3;
}

/* Post receives from every peer and sends to every peer; returns the
 * number of requests (receives first). */
static int post_all(MPI_Request *reqs, int **bufs, int round)
{
    int n = 0;
    for (int p = 0; p < size; p++)
        for (int k = 0; k < PER_PEER; k++) {
            bufs[n] = calloc((size_t)msg_len(k), sizeof(int));
            MPI_Irecv(bufs[n], msg_len(k), MPI_INT, p, 100 * round + k, MPI_COMM_WORLD, &reqs[n]);
            n++;
        }
    for (int p = 0; p < size; p++)
        for (int k = 0; k < PER_PEER; k++) {
            bufs[n] = malloc(sizeof(int) * (size_t)msg_len(k));
            for (int i = 0; i < msg_len(k); i++)
                bufs[n][i] = rank * 1000 + k + i;
            MPI_Isend(bufs[n], msg_len(k), MPI_INT, p, 100 * round + k, MPI_COMM_WORLD, &reqs[n]);
            n++;
        }
    return n;
}

static int check_recv(int idx, int *buf, const MPI_Status *st, int round)
{
    int p = idx / PER_PEER, k = idx % PER_PEER;
    int bad = st->MPI_SOURCE != p || st->MPI_TAG != 100 * round + k;
    for (int i = 0; i < msg_len(k); i++)
        bad += buf[i] != p * 1000 + k + i;
    return bad;
}

static void run_round(int round)
{
    int total = 2 * size * PER_PEER, nrecv = size * PER_PEER;
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)total);
    int **bufs = malloc(sizeof(int *) * (size_t)total);
    int *seen = calloc((size_t)total, sizeof(int));
    int *idx = malloc(sizeof(int) * (size_t)total);
    MPI_Status *sts = malloc(sizeof(MPI_Status) * (size_t)total);
    post_all(reqs, bufs, round);
    int done = 0, bad = 0;
    while (done < total) {
        if (round == 0) {
            int i = -1;
            MPI_Status st;
            BM_CHECK_EQ_INT(MPI_Waitany(total, reqs, &i, &st), MPI_SUCCESS);
            if (i < 0 || i >= total || seen[i]++ || reqs[i] != MPI_REQUEST_NULL) {
                bad++;
                break;
            }
            if (i < nrecv)
                bad += check_recv(i, bufs[i], &st, round);
            done++;
        } else if (round == 1 || round == 2) {
            int out = 0;
            if (round == 1)
                MPI_Waitsome(total, reqs, &out, idx, sts);
            else
                MPI_Testsome(total, reqs, &out, idx, sts);
            if (out == MPI_UNDEFINED) {
                bad++;
                break;
            }
            for (int j = 0; j < out; j++) {
                int i = idx[j];
                if (seen[i]++ || reqs[i] != MPI_REQUEST_NULL)
                    bad++;
                if (i < nrecv)
                    bad += check_recv(i, bufs[i], &sts[j], round);
            }
            done += out;
        } else if (round == 3) {
            int i = -1, flag = 0;
            MPI_Status st;
            MPI_Testany(total, reqs, &i, &flag, &st);
            if (flag && i == MPI_UNDEFINED) {
                bad++;
                break;
            }
            if (flag) {
                if (seen[i]++)
                    bad++;
                if (i < nrecv)
                    bad += check_recv(i, bufs[i], &st, round);
                done++;
            }
        } else {
            int flag = 0;
            MPI_Testall(total, reqs, &flag, sts);
            if (flag) {
                for (int i = 0; i < total; i++) {
                    seen[i]++;
                    if (i < nrecv)
                        bad += check_recv(i, bufs[i], &sts[i], round);
                }
                done = total;
            }
        }
    }
    for (int i = 0; i < total; i++) {
        bad += seen[i] != 1 || reqs[i] != MPI_REQUEST_NULL;
        free(bufs[i]);
    }
    BM_CHECK_MSG(bad == 0, "round %d: %d problems", round, bad);
    /* nothing left: the calls report that */
    int i = 0, flag = 0;
    MPI_Testany(total, reqs, &i, &flag, MPI_STATUS_IGNORE);
    BM_CHECK(flag && i == MPI_UNDEFINED);
    free(reqs);
    free(bufs);
    free(seen);
    free(idx);
    free(sts);
}

static void test_free_active_send(void)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    enum { N = 100000 };
    int *out = malloc(N * sizeof(int)), *in = malloc(N * sizeof(int));
    for (int i = 0; i < N; i++)
        out[i] = i + rank;
    MPI_Request r;
    MPI_Isend(out, N, MPI_INT, right, 9, MPI_COMM_WORLD, &r);
    BM_CHECK_EQ_INT(MPI_Request_free(&r), MPI_SUCCESS);
    BM_CHECK(r == MPI_REQUEST_NULL);
    MPI_Recv(in, N, MPI_INT, left, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += in[i] != i + left;
    BM_CHECK_EQ_INT(bad, 0);
    /* the receive completing on the right neighbour proves the send is done */
    MPI_Barrier(MPI_COMM_WORLD);
    free(out);
    free(in);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int round = 0; round < 5; round++)
        run_round(round);
    BM_RUN(test_free_active_send);
    int rc = bm_test_summary("p2p_waits");
    MPI_Finalize();
    return rc;
}
