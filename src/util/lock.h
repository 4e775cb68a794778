/* Mutexes for the code that MPI_THREAD_MULTIPLE makes concurrent, with
 * counters that say how often a thread found one taken. The callers check
 * their own "threaded" flag before every take (bm_pml_g.mt, bm_mpi_mt, the
 * transports' flags): a program that asked for MPI_THREAD_SINGLE,
 * FUNNELED or SERIALIZED pays one predictable branch per site and no
 * atomic instruction. A contended acquisition (the trylock failed, so the
 * thread had to wait) is counted in the lock's class with a relaxed atomic
 * add; with bm_util_lock_stats set (BM_PML_STATS) every acquisition is
 * counted too. The ratio predicts how the code would scale on a machine
 * with more cores than this one (issue 18: "count lock contention in the
 * statistics"). Classes register themselves once so that
 * bm_util_lock_report can print them all. Thread-safe. */
#ifndef BM_UTIL_LOCK_H
#define BM_UTIL_LOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the counters of one kind of lock (all matching contexts, say) add up to. */
struct bm_util_lock_class {
    const char *name;
    _Atomic uint64_t acquired;  /* every take and successful try (only with bm_util_lock_stats) */
    _Atomic uint64_t contended; /* takes that had to wait, tries that failed */
    _Atomic(struct bm_util_lock_class *) next; /* registry (bm_util_lock_class_register) */
    atomic_bool registered;
};

struct bm_util_lock {
    pthread_mutex_t mu;
    struct bm_util_lock_class *cls;
};

/* Count every acquisition, not only the contended ones (costs an atomic add). */
extern bool bm_util_lock_stats;

/* Initialise l as a member of cls (registered on first use). recursive: the
 * owner may take it again (a callback that sends from inside progress). */
void bm_util_lock_init(struct bm_util_lock *l, struct bm_util_lock_class *cls, bool recursive);
void bm_util_lock_destroy(struct bm_util_lock *l);

static inline void bm_util_lock_take(struct bm_util_lock *l)
{
    if (__builtin_expect(pthread_mutex_trylock(&l->mu) != 0, 0)) {
        atomic_fetch_add_explicit(&l->cls->contended, 1, memory_order_relaxed);
        pthread_mutex_lock(&l->mu);
    }
    if (__builtin_expect(bm_util_lock_stats, 0))
        atomic_fetch_add_explicit(&l->cls->acquired, 1, memory_order_relaxed);
}

/* Take l if it is free; false (counted as contended) when another thread has it. */
static inline bool bm_util_lock_try(struct bm_util_lock *l)
{
    if (pthread_mutex_trylock(&l->mu) != 0) {
        atomic_fetch_add_explicit(&l->cls->contended, 1, memory_order_relaxed);
        return false;
    }
    if (__builtin_expect(bm_util_lock_stats, 0))
        atomic_fetch_add_explicit(&l->cls->acquired, 1, memory_order_relaxed);
    return true;
}

static inline void bm_util_lock_give(struct bm_util_lock *l)
{
    pthread_mutex_unlock(&l->mu);
}

/* Write one line per class with counts into buf ("name acquired/contended, ...");
 * returns the length written. */
size_t bm_util_lock_report(char *buf, size_t len);

#endif
