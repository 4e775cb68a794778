/* MPI_THREAD_MULTIPLE in the MPI layer: the flag every lock here checks,
 * the per-thread caches of released MPI requests, and the one lock for
 * the process-wide tables of MPI objects (attribute keys, context ids), and
 * the one of the attached buffer of buffered sends. Communication itself is made
 * thread-safe below, in the PML (src/pml/README.md "Threads"); what is here
 * only keeps object bookkeeping from racing, and costs nothing at the
 * other thread levels (one branch on bm_mpi_mt). */
#include "mpi/mpi_internal.h"
#include "mpi/mpi_request.h"
#include "util/lock.h"

#include <pthread.h>
#include <stdlib.h>

bool bm_mpi_mt;

static struct bm_util_lock_class obj_class = {.name = "mpi objects"};
static struct bm_util_lock_class bsend_class = {.name = "buffered sends"};
static struct bm_util_lock obj_lock, bsend_lock;
static pthread_once_t obj_once = PTHREAD_ONCE_INIT;

static void obj_lock_init(void)
{
    bm_util_lock_init(&obj_lock, &obj_class, true);
    bm_util_lock_init(&bsend_lock, &bsend_class, false);
}

void bm_mpi_mt_init(bool on)
{
    bm_mpi_mt = on;
    if (on)
        pthread_once(&obj_once, obj_lock_init);
}

void bm_mpi_obj_lock(void)
{
    if (bm_mpi_mt)
        bm_util_lock_take(&obj_lock);
}

void bm_mpi_obj_unlock(void)
{
    if (bm_mpi_mt)
        bm_util_lock_give(&obj_lock);
}

void bm_mpi_bsend_lock(void)
{
    if (bm_mpi_mt)
        bm_util_lock_take(&bsend_lock);
}

void bm_mpi_bsend_unlock(void)
{
    if (bm_mpi_mt)
        bm_util_lock_give(&bsend_lock);
}

/* ---- released requests, one cache per thread ----------------------------------- */

/* Each thread reuses the requests it released itself, last in first out,
 * with no lock: a shared cache would be one lock taken by every thread at
 * every MPI_Isend and MPI_Irecv. Bounded per thread; a thread's cache is
 * freed when it exits (the key's destructor), the main thread's at
 * finalize. */
#define TCACHE_MAX 256
struct req_tcache {
    MPI_Request head;
    int n;
    bool keyed; /* registered with the key, so that thread exit frees it */
};
/* initial-exec: a thread-local of a shared library is otherwise reached
 * through __tls_get_addr, a call on every request (33 instructions per
 * MPI_Isend, callgrind). */
static _Thread_local __attribute__((tls_model("initial-exec"))) struct req_tcache tcache;
static pthread_key_t tcache_key;
static pthread_once_t tcache_once = PTHREAD_ONCE_INIT;

static void tcache_free(struct req_tcache *c)
{
    while (c->head) {
        MPI_Request r = c->head;
        c->head = r->next_free;
        free(r);
    }
    c->n = 0;
}

static void tcache_exit(void *p)
{
    tcache_free(p);
}

static void tcache_key_init(void)
{
    if (pthread_key_create(&tcache_key, tcache_exit) != 0)
        abort(); /* only when the process is out of keys */
}

MPI_Request bm_mpi_request_new_mt(void)
{
    MPI_Request r = tcache.head;
    if (!r)
        return calloc(1, sizeof(*r));
    tcache.head = r->next_free;
    tcache.n--;
    return r;
}

void bm_mpi_request_release_mt(MPI_Request r)
{
    if (tcache.n >= TCACHE_MAX) {
        free(r);
        return;
    }
    if (!tcache.keyed) {
        pthread_once(&tcache_once, tcache_key_init);
        pthread_setspecific(tcache_key, &tcache);
        tcache.keyed = true;
    }
    r->next_free = tcache.head;
    tcache.head = r;
    tcache.n++;
}

void bm_mpi_request_tcache_fini(void)
{
    tcache_free(&tcache);
}
