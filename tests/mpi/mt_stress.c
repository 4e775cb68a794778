/* MPI_THREAD_MULTIPLE stress test: T threads per rank (-t, default 4) talk
 * at once, each on a communicator of its own and all on one shared
 * communicator (told apart by tag), mixing blocking and nonblocking
 * point-to-point, probe and iprobe, mprobe/improbe with mrecv/imrecv,
 * wildcard receives, synchronous sends, sizes from empty to rendezvous,
 * and blocking and nonblocking collectives on the thread's own
 * communicator; every byte received is
 * checked. With -d each thread also duplicates its communicator at the same
 * time as the others (MPI_Comm_dup on different parents from several
 * threads), uses the duplicate and frees it. Ranks form a ring: thread t of
 * rank r sends to thread t of rank r+1 and receives from rank r-1.
 * Also checks MPI_Query_thread and MPI_Is_thread_main. Run under bmrun; the
 * ThreadSanitizer build runs it as well (label tsan). */
#include "bm_test.h"

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_THREADS 16

static int nthreads = 4, iters = 40, do_dup;
static int rank, size, right, left;
static MPI_Comm own[MAX_THREADS], shared;
static atomic_long checks, failures;
static atomic_int not_main_seen;

/* Message sizes: empty, sendi-sized, descriptor eager, rendezvous, single copy. */
static const int sizes[] = {0, 8, 1000, 6000, 70000};
#define NSIZES ((int)(sizeof(sizes) / sizeof(sizes[0])))

static void check(int ok, int t, int it, const char *what)
{
    atomic_fetch_add(&checks, 1);
    if (!ok) {
        long n = atomic_fetch_add(&failures, 1);
        if (n < 20)
            fprintf(stderr, "rank %d thread %d iteration %d: %s\n", rank, t, it, what);
    }
}

static int seed_of(int src, int t, int it, int op)
{
    return ((src * 131 + t) * 1031 + it) * 17 + op;
}

/* Fill and verify with the harness's pattern (seed per source, thread,
 * iteration and operation, so that a message delivered to the wrong
 * receive is caught). */
static void fill(char *b, int n, int seed)
{
    bm_test_fill(b, (size_t)n, seed);
}

static void verify(const char *b, int n, int seed, int t, int it, const char *what)
{
    check(bm_test_bad_bytes(b, (size_t)n, seed) == 0, t, it, what);
}

static void count_is(MPI_Status *st, int n, int t, int it, const char *what)
{
    int c = -1;
    MPI_Get_count(st, MPI_CHAR, &c);
    check(c == n, t, it, what);
}

static void one_iteration(int t, int it, char *sbuf, char *rbuf, char *sb2, char *rb2)
{
    MPI_Comm c = own[t];
    int n = sizes[it % NSIZES];
    MPI_Status st;
    MPI_Request rq[4];

    /* 1. blocking send/recv on the own communicator */
    fill(sbuf, n, seed_of(rank, t, it, 1));
    memset(rbuf, 0, (size_t)n + 1);
    if (rank % 2 == 0) {
        MPI_Send(sbuf, n, MPI_CHAR, right, 1, c);
        MPI_Recv(rbuf, n, MPI_CHAR, left, 1, c, &st);
    } else {
        MPI_Recv(rbuf, n, MPI_CHAR, left, 1, c, &st);
        MPI_Send(sbuf, n, MPI_CHAR, right, 1, c);
    }
    verify(rbuf, n, seed_of(left, t, it, 1), t, it, "blocking recv: wrong bytes");
    count_is(&st, n, t, it, "blocking recv: wrong count");

    /* 2. nonblocking, two messages each way, wildcard source on the own
     * communicator (only this thread receives there) */
    fill(sbuf, n, seed_of(rank, t, it, 2));
    fill(sb2, 8, seed_of(rank, t, it, 3));
    MPI_Irecv(rbuf, n, MPI_CHAR, MPI_ANY_SOURCE, 2, c, &rq[0]);
    MPI_Irecv(rb2, 8, MPI_CHAR, left, MPI_ANY_TAG, c, &rq[1]);
    MPI_Isend(sbuf, n, MPI_CHAR, right, 2, c, &rq[2]);
    MPI_Issend(sb2, 8, MPI_CHAR, right, 3, c, &rq[3]);
    MPI_Status sts[4];
    MPI_Waitall(4, rq, sts);
    verify(rbuf, n, seed_of(left, t, it, 2), t, it, "irecv any source: wrong bytes");
    check(sts[0].MPI_SOURCE == (size > 1 ? (rank + size - 1) % size : 0), t, it,
          "irecv any source: wrong source");
    verify(rb2, 8, seed_of(left, t, it, 3), t, it, "irecv any tag: wrong bytes");
    check(sts[1].MPI_TAG == 3, t, it, "irecv any tag: wrong tag");

    /* 3. shared communicator: the tag names the thread */
    int tag = 100 + t;
    fill(sbuf, n, seed_of(rank, t, it, 4));
    MPI_Irecv(rbuf, n, MPI_CHAR, MPI_ANY_SOURCE, tag, shared, &rq[0]);
    MPI_Send(sbuf, n, MPI_CHAR, right, tag, shared);
    MPI_Wait(&rq[0], &st);
    verify(rbuf, n, seed_of(left, t, it, 4), t, it, "shared communicator: wrong bytes");
    check(st.MPI_TAG == tag, t, it, "shared communicator: wrong tag");

    /* 4. probe + recv, and iprobe until found (own communicator) */
    fill(sbuf, n, seed_of(rank, t, it, 5));
    MPI_Isend(sbuf, n, MPI_CHAR, right, 5, c, &rq[0]);
    MPI_Probe(MPI_ANY_SOURCE, 5, c, &st);
    count_is(&st, n, t, it, "probe: wrong count");
    MPI_Recv(rbuf, n, MPI_CHAR, st.MPI_SOURCE, 5, c, MPI_STATUS_IGNORE);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    verify(rbuf, n, seed_of(left, t, it, 5), t, it, "probe then recv: wrong bytes");

    fill(sb2, 8, seed_of(rank, t, it, 6));
    MPI_Isend(sb2, 8, MPI_CHAR, right, 6, c, &rq[0]);
    int flag = 0;
    while (!flag)
        MPI_Iprobe(left, 6, c, &flag, &st);
    (void)tag;
    MPI_Recv(rb2, 8, MPI_CHAR, left, 6, c, MPI_STATUS_IGNORE);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    verify(rb2, 8, seed_of(left, t, it, 6), t, it, "iprobe then recv: wrong bytes");

#ifdef MPI_MESSAGE_NULL
    /* 5. matched probes: mprobe/mrecv on the own communicator, improbe/imrecv
     * on the shared one (tag per thread); mpi.h has them from MPI-3 on */
    fill(sbuf, n, seed_of(rank, t, it, 7));
    MPI_Isend(sbuf, n, MPI_CHAR, right, 7, c, &rq[0]);
    MPI_Message msg;
    MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, c, &msg, &st);
    count_is(&st, n, t, it, "mprobe: wrong count");
    MPI_Mrecv(rbuf, n, MPI_CHAR, &msg, &st);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    verify(rbuf, n, seed_of(left, t, it, 7), t, it, "mrecv: wrong bytes");

    fill(sbuf, n, seed_of(rank, t, it, 8));
    MPI_Isend(sbuf, n, MPI_CHAR, right, tag + 1000, shared, &rq[0]);
    flag = 0;
    while (!flag)
        MPI_Improbe(MPI_ANY_SOURCE, tag + 1000, shared, &flag, &msg, &st);
    MPI_Imrecv(rbuf, n, MPI_CHAR, &msg, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    verify(rbuf, n, seed_of(left, t, it, 8), t, it, "imrecv: wrong bytes");
#endif

    /* 6. sendrecv_replace and a synchronous send */
    fill(rbuf, n, seed_of(rank, t, it, 9));
    MPI_Sendrecv_replace(rbuf, n, MPI_CHAR, right, 9, left, 9, c, &st);
    verify(rbuf, n, seed_of(left, t, it, 9), t, it, "sendrecv_replace: wrong bytes");
    fill(sb2, 8, seed_of(rank, t, it, 10));
    MPI_Irecv(rb2, 8, MPI_CHAR, left, 10, c, &rq[0]);
    MPI_Ssend(sb2, 8, MPI_CHAR, right, 10, c);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    verify(rb2, 8, seed_of(left, t, it, 10), t, it, "ssend: wrong bytes");

    /* 7. collectives on the own communicator */
    long mine = (long)rank * 1000 + t + it, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, c);
    long want = 0;
    for (int r = 0; r < size; r++)
        want += (long)r * 1000 + t + it;
    check(sum == want, t, it, "allreduce: wrong sum");
    int root = it % size;
    if (rank == root)
        fill(rbuf, n, seed_of(root, t, it, 11));
    MPI_Bcast(rbuf, n, MPI_CHAR, root, c);
    verify(rbuf, n, seed_of(root, t, it, 11), t, it, "bcast: wrong bytes");
    if (it % 8 == 0)
        MPI_Barrier(c);
    /* nonblocking collectives: advanced by the progress hook of whichever
     * thread drains, waited for here */
    long nb_sum = 0;
    MPI_Request cr[2];
    MPI_Iallreduce(&mine, &nb_sum, 1, MPI_LONG, MPI_SUM, c, &cr[0]);
    MPI_Ibarrier(c, &cr[1]);
    MPI_Waitall(2, cr, MPI_STATUSES_IGNORE);
    check(nb_sum == want, t, it, "iallreduce: wrong sum");
}

/* -d: duplicate the own communicator while the other threads do the same,
 * talk on the duplicate, free it. */
static void dup_round(int t, int it, char *sbuf, char *rbuf)
{
    MPI_Comm d;
    MPI_Comm_dup(own[t], &d);
    fill(sbuf, 100, seed_of(rank, t, it, 12));
    MPI_Sendrecv(sbuf, 100, MPI_CHAR, right, 12, rbuf, 100, MPI_CHAR, left, 12, d,
                 MPI_STATUS_IGNORE);
    verify(rbuf, 100, seed_of(left, t, it, 12), t, it, "on a duplicate: wrong bytes");
    MPI_Comm_free(&d);
}

static void *thread_main(void *arg)
{
    int t = (int)(intptr_t)arg;
    int flag = 1;
    MPI_Is_thread_main(&flag);
    if (!flag)
        atomic_fetch_add(&not_main_seen, 1);
    int max = sizes[NSIZES - 1] + 1;
    char *sbuf = malloc((size_t)max), *rbuf = malloc((size_t)max);
    char sb2[8], rb2[8];
    if (!sbuf || !rbuf) {
        check(0, t, 0, "out of memory");
        return NULL;
    }
    for (int it = 0; it < iters; it++) {
        one_iteration(t, it, sbuf, rbuf, sb2, rb2);
        if (do_dup && it % 4 == 0)
            dup_round(t, it, sbuf, rbuf);
    }
    free(sbuf);
    free(rbuf);
    return NULL;
}

int main(int argc, char **argv)
{
    int opt;
    while ((opt = getopt(argc, argv, "t:i:d")) != -1) {
        if (opt == 't')
            nthreads = atoi(optarg);
        else if (opt == 'i')
            iters = atoi(optarg);
        else if (opt == 'd')
            do_dup = 1;
    }
    if (nthreads < 1 || nthreads > MAX_THREADS)
        nthreads = 4;
    int provided = -1, queried = -1, is_main = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    bm_test_current = "init";
    BM_CHECK_EQ_INT(provided, MPI_THREAD_MULTIPLE);
    MPI_Query_thread(&queried);
    BM_CHECK_EQ_INT(queried, MPI_THREAD_MULTIPLE);
    MPI_Is_thread_main(&is_main);
    BM_CHECK(is_main);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;
    MPI_Comm_dup(MPI_COMM_WORLD, &shared);
    for (int t = 0; t < nthreads; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &own[t]);

    pthread_t th[MAX_THREADS];
    for (int t = 1; t < nthreads; t++)
        pthread_create(&th[t], NULL, thread_main, (void *)(intptr_t)t);
    thread_main((void *)(intptr_t)0); /* the main thread is thread 0 */
    for (int t = 1; t < nthreads; t++)
        pthread_join(th[t], NULL);

    bm_test_current = "threads";
    BM_CHECK_MSG(atomic_load(&failures) == 0, "%ld of %ld checks failed in the threads",
                 atomic_load(&failures), atomic_load(&checks));
    BM_CHECK_MSG(atomic_load(&checks) >= (long)nthreads * iters * 10, "only %ld checks ran",
                 atomic_load(&checks));
    BM_CHECK_EQ_INT(atomic_load(&not_main_seen), nthreads - 1);

    for (int t = 0; t < nthreads; t++)
        MPI_Comm_free(&own[t]);
    MPI_Comm_free(&shared);
    MPI_Finalize();
    if (rank == 0)
        printf("mt_stress: %d ranks x %d threads, %d iterations%s, %ld checks\n", size, nthreads,
               iters, do_dup ? ", concurrent MPI_Comm_dup" : "", atomic_load(&checks));
    return bm_test_summary("mt_stress");
}
