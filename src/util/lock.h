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
    /* A leaf: no lock may be taken while one of its locks is held. Checked
     * in builds with assertions (not NDEBUG: dev, the sanitizers), where a
     * take under a held leaf aborts naming both. */
    bool leaf;
};

/* A futex word (0 free, 1 held, 2 held and a thread may be asleep on it,
 * Drepper's "Futexes Are Tricky" mutex): taking a free lock is one
 * compare-and-swap and giving it back one exchange, a third of what a
 * pthread mutex costs in instructions on this path (glibc's type and
 * elision checks), which every progress pass under MPI_THREAD_MULTIPLE
 * pays three times (the progress lock and two transports). A recursive
 * lock knows its owner (the address of a thread-local byte) and counts the
 * owner's extra takes. */
struct bm_util_lock {
    _Atomic uint32_t word;
    bool recursive;
    uint32_t depth;          /* recursive: the owner's takes beyond the first */
    _Atomic uintptr_t owner; /* recursive: the holder's id, 0 when free */
    struct bm_util_lock_class *cls;
};

/* Count every acquisition, not only the contended ones (costs an atomic add). */
extern bool bm_util_lock_stats;

/* Initialise l as a member of cls (registered on first use). recursive: the
 * owner may take it again (a callback that sends from inside progress). */
void bm_util_lock_init(struct bm_util_lock *l, struct bm_util_lock_class *cls, bool recursive);
void bm_util_lock_destroy(struct bm_util_lock *l);

/* The slow paths (lock.c): sleep in the kernel until l is ours; wake one sleeper. */
void bm_util_lock_wait_(struct bm_util_lock *l);
void bm_util_lock_wake_(struct bm_util_lock *l);

/* This thread's id for recursive locks. */
extern _Thread_local __attribute__((tls_model("initial-exec"))) char bm_util_lock_self_;
static inline uintptr_t bm_util_lock_me_(void)
{
    return (uintptr_t)&bm_util_lock_self_;
}

/* Does this thread hold recursive lock l already? Only the holder writes
 * its own id, so a relaxed read is exact for the question. */
static inline bool bm_util_lock_mine_(struct bm_util_lock *l)
{
    return l->recursive &&
           atomic_load_explicit(&l->owner, memory_order_relaxed) == bm_util_lock_me_();
}

static inline bool bm_util_lock_cas_(struct bm_util_lock *l)
{
    uint32_t free_word = 0;
    return atomic_compare_exchange_strong_explicit(&l->word, &free_word, 1, memory_order_acquire,
                                                   memory_order_relaxed);
}

/* Tests: the distinct locks one thread took while it traced (with
 * bm_util_lock_stats on only), to show that two threads' operations meet
 * on no common lock (tests/mpi/mt_locks.c). */
struct bm_util_lock_trace {
    const struct bm_util_lock **locks; /* cap entries, filled by the tracing thread */
    size_t cap, n;
    bool overflow; /* more distinct locks than cap */
};
extern _Thread_local
    __attribute__((tls_model("initial-exec"))) struct bm_util_lock_trace *bm_util_lock_trace_;
/* Record this thread's acquisitions in t from now on (adding to what t
 * holds; the caller empties it), or stop (NULL). */
void bm_util_lock_trace(struct bm_util_lock_trace *t);
void bm_util_lock_trace_add_(const struct bm_util_lock *l);

#ifndef NDEBUG
/* The leaf lock this thread holds (NULL: none), and the check (lock.c). */
extern _Thread_local __attribute__((tls_model("initial-exec")))
const struct bm_util_lock *bm_util_lock_leaf_held_;
void bm_util_lock_leaf_violation_(const struct bm_util_lock *l);
static inline void bm_util_lock_leaf_check_(const struct bm_util_lock *l)
{
    if (__builtin_expect(bm_util_lock_leaf_held_ != NULL, 0))
        bm_util_lock_leaf_violation_(l);
}
static inline void bm_util_lock_leaf_set_(const struct bm_util_lock *l, bool held)
{
    if (l->cls->leaf)
        bm_util_lock_leaf_held_ = held ? l : NULL;
}
#else
static inline void bm_util_lock_leaf_check_(const struct bm_util_lock *l)
{
    (void)l;
}
static inline void bm_util_lock_leaf_set_(const struct bm_util_lock *l, bool held)
{
    (void)l;
    (void)held;
}
#endif

/* An acquisition, counted with bm_util_lock_stats. */
static inline void bm_util_lock_count_(struct bm_util_lock *l)
{
    if (__builtin_expect(bm_util_lock_stats, 0)) {
        atomic_fetch_add_explicit(&l->cls->acquired, 1, memory_order_relaxed);
        if (bm_util_lock_trace_)
            bm_util_lock_trace_add_(l);
    }
}

static inline void bm_util_lock_got_(struct bm_util_lock *l)
{
    if (l->recursive)
        atomic_store_explicit(&l->owner, bm_util_lock_me_(), memory_order_relaxed);
    bm_util_lock_count_(l);
}

static inline void bm_util_lock_take(struct bm_util_lock *l)
{
    if (bm_util_lock_mine_(l)) {
        l->depth++;
        bm_util_lock_count_(l);
        return;
    }
    bm_util_lock_leaf_check_(l);
    if (__builtin_expect(!bm_util_lock_cas_(l), 0)) {
        atomic_fetch_add_explicit(&l->cls->contended, 1, memory_order_relaxed);
        bm_util_lock_wait_(l);
    }
    bm_util_lock_got_(l);
    bm_util_lock_leaf_set_(l, true);
}

/* Take l if it is free; false (counted as contended) when another thread has it. */
static inline bool bm_util_lock_try(struct bm_util_lock *l)
{
    if (bm_util_lock_mine_(l)) {
        l->depth++;
        bm_util_lock_count_(l);
        return true;
    }
    bm_util_lock_leaf_check_(l);
    if (!bm_util_lock_cas_(l)) {
        atomic_fetch_add_explicit(&l->cls->contended, 1, memory_order_relaxed);
        return false;
    }
    bm_util_lock_got_(l);
    bm_util_lock_leaf_set_(l, true);
    return true;
}

static inline void bm_util_lock_give(struct bm_util_lock *l)
{
    if (l->recursive) {
        if (l->depth > 0) {
            l->depth--;
            return;
        }
        atomic_store_explicit(&l->owner, 0, memory_order_relaxed);
    }
    bm_util_lock_leaf_set_(l, false);
    if (__builtin_expect(atomic_exchange_explicit(&l->word, 0, memory_order_release) == 2, 0))
        bm_util_lock_wake_(l);
}

/* bm_util_lock_give for a lock that is not recursive, with a sequentially
 * consistent exchange, so that a sequentially consistent load after it is
 * ordered after the release: one side of Dekker's pattern without a fence
 * (the PML's progress lock and its deferred starts). On x86 the same xchg
 * instruction as bm_util_lock_give; what it saves is the mfence after it. */
static inline void bm_util_lock_give_sc(struct bm_util_lock *l)
{
    bm_util_lock_leaf_set_(l, false);
    if (__builtin_expect(atomic_exchange_explicit(&l->word, 0, memory_order_seq_cst) == 2, 0))
        bm_util_lock_wake_(l);
}

/* Write one line per class with counts into buf ("name acquired/contended, ...");
 * returns the length written. */
size_t bm_util_lock_report(char *buf, size_t len);

#endif
