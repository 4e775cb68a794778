/* Derived datatypes under MPI_THREAD_MULTIPLE: 4 threads per rank build
 * types on one shared old type at the same time (the engine shares its
 * nodes between them, so their reference counts are touched from every
 * thread), send and receive with them (eager, rendezvous, single-copy
 * sizes) and free them while the other threads still use types built on
 * the same nodes, and duplicate one shared committed type with an
 * attribute; and receive small vectors of 512-byte blocks with MPI_Recv,
 * whose bytes a blocking receive unpacks after completion. Rank 0 thread t
 * talks to rank 1 thread t by tag. Every value received is checked. Also
 * run by the ThreadSanitizer build (label tsan). */
#include "bm_test.h"

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 4
#define ITERS    30

static int rank;
static MPI_Datatype shared_vec; /* built once, used by every thread */
static atomic_int bad;
static int key;

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg, peer = 1 - rank;
    static const int ns[] = {3, 500, 9000};
    for (int it = 0; it < ITERS; it++) {
        int n = ns[it % 3];
        MPI_Datatype v, s, d;
        /* new types on the shared one and on MPI_DOUBLE, every thread at once */
        MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &v);
        MPI_Type_contiguous(2, shared_vec, &s);
        MPI_Type_dup(shared_vec, &d);
        MPI_Type_commit(&v);
        MPI_Type_commit(&s);
        double *b = malloc((size_t)2 * n * sizeof(double));
        int tag = t * 1000 + it;
        if (rank == 0) {
            for (int i = 0; i < 2 * n; i++)
                b[i] = i + t;
            MPI_Send(b, 1, v, peer, tag, MPI_COMM_WORLD);
        } else {
            for (int i = 0; i < 2 * n; i++)
                b[i] = -1;
            MPI_Recv(b, n, MPI_DOUBLE, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int i = 0; i < n; i++)
                if (b[i] != 2 * i + t)
                    atomic_fetch_add(&bad, 1);
        }
        /* a small vector of 64-double blocks received with its type: MPI_Recv
         * copies the eager bytes into its bounce (possibly in another
         * thread's progress) and unpacks them once the receive completed
         * (pml.h bm_pml_irecv_dt_defer) */
        MPI_Datatype w64;
        MPI_Type_vector(4, 64, 128, MPI_DOUBLE, &w64);
        MPI_Type_commit(&w64);
        double *w = malloc(512 * sizeof(double));
        if (rank == 0) {
            for (int i = 0; i < 512; i++)
                w[i] = i + t;
            MPI_Send(w, 1, w64, peer, tag + 500, MPI_COMM_WORLD);
        } else {
            for (int i = 0; i < 512; i++)
                w[i] = -1;
            MPI_Recv(w, 1, w64, peer, tag + 500, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int i = 0; i < 512; i++)
                if (w[i] != (i % 128 < 64 ? i + t : -1))
                    atomic_fetch_add(&bad, 1);
        }
        free(w);
        MPI_Type_free(&w64);
        /* free in another order than built, while other threads use
         * siblings of these types */
        MPI_Type_free(&s);
        MPI_Type_free(&v);
        void *val;
        int flag = 0;
        MPI_Type_get_attr(d, key, &val, &flag);
        if (!flag || val != (void *)&key)
            atomic_fetch_add(&bad, 1);
        MPI_Type_free(&d);
        free(b);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    BM_CHECK_EQ_INT(provided, MPI_THREAD_MULTIPLE);
    MPI_Type_vector(4, 2, 3, MPI_INT, &shared_vec);
    MPI_Type_commit(&shared_vec);
    MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, &key, NULL);
    MPI_Type_set_attr(shared_vec, key, &key);
    if (size >= 2 && rank < 2 && provided == MPI_THREAD_MULTIPLE) {
        pthread_t th[NTHREADS];
        for (int t = 0; t < NTHREADS; t++)
            pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
        for (int t = 0; t < NTHREADS; t++)
            pthread_join(th[t], NULL);
    }
    BM_CHECK_EQ_INT(atomic_load(&bad), 0);
    MPI_Type_free(&shared_vec);
    MPI_Type_free_keyval(&key);
    MPI_Finalize();
    return bm_test_summary("api_dtype_threads");
}
