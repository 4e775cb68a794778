/* The futex slow paths of the locks, and the registry of lock classes and
 * their report (see lock.h). Classes are
 * pushed on a lock-free stack the first time a lock of theirs is
 * initialised and stay there for the life of the process (they are static
 * objects of the layers that own them). */
#include "util/lock.h"
#include "util/xproc.h"

#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

bool bm_util_lock_stats;

static _Atomic(struct bm_util_lock_class *) lock_classes;

static void class_register(struct bm_util_lock_class *cls)
{
    bool no = false;
    if (atomic_load_explicit(&cls->registered, memory_order_acquire) ||
        !atomic_compare_exchange_strong(&cls->registered, &no, true))
        return;
    struct bm_util_lock_class *head = atomic_load(&lock_classes);
    do
        atomic_store_explicit(&cls->next, head, memory_order_relaxed);
    while (!atomic_compare_exchange_weak(&lock_classes, &head, cls));
}

_Thread_local __attribute__((tls_model("initial-exec"))) char bm_util_lock_self_;

#ifndef NDEBUG
_Thread_local __attribute__((tls_model("initial-exec")))
const struct bm_util_lock *bm_util_lock_leaf_held_;

void bm_util_lock_leaf_violation_(const struct bm_util_lock *l)
{
    fprintf(stderr,
            "bitmover: lock order violated: '%s' taken while this thread holds '%s', a leaf "
            "lock (nothing may be taken under it)\n",
            l->cls->name, bm_util_lock_leaf_held_->cls->name);
    abort();
}
#endif

_Thread_local
    __attribute__((tls_model("initial-exec"))) struct bm_util_lock_trace *bm_util_lock_trace_;

void bm_util_lock_trace(struct bm_util_lock_trace *t)
{
    bm_util_lock_trace_ = t;
}

void bm_util_lock_trace_add_(const struct bm_util_lock *l)
{
    struct bm_util_lock_trace *t = bm_util_lock_trace_;
    for (size_t i = 0; i < t->n; i++)
        if (t->locks[i] == l)
            return;
    if (t->n < t->cap)
        t->locks[t->n++] = l;
    else
        t->overflow = true;
}

void bm_util_lock_init(struct bm_util_lock *l, struct bm_util_lock_class *cls, bool recursive)
{
    atomic_init(&l->word, 0);
    atomic_init(&l->owner, 0);
    l->recursive = recursive;
    l->depth = 0;
    l->cls = cls;
    class_register(cls);
}

void bm_util_lock_destroy(struct bm_util_lock *l)
{
    (void)l;
}

void bm_util_lock_wait_(struct bm_util_lock *l)
{
    /* Mark the word "held, sleepers possible" and sleep while someone
     * else holds it; whoever gives it back then wakes one of us. */
    while (atomic_exchange_explicit(&l->word, 2, memory_order_acquire) != 0)
        syscall(SYS_futex, &l->word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
}

void bm_util_lock_wake_(struct bm_util_lock *l)
{
    syscall(SYS_futex, &l->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

size_t bm_util_lock_report(char *buf, size_t len)
{
    size_t off = 0;
    if (len)
        buf[0] = 0;
    for (struct bm_util_lock_class *c = atomic_load(&lock_classes); c;
         c = atomic_load_explicit(&c->next, memory_order_relaxed)) {
        uint64_t a = atomic_load_explicit(&c->acquired, memory_order_relaxed);
        uint64_t w = atomic_load_explicit(&c->contended, memory_order_relaxed);
        if (a == 0 && w == 0)
            continue;
        int n = snprintf(buf + off, len - off, "%s%s %llu/%llu", off ? ", " : "", c->name,
                         (unsigned long long)a, (unsigned long long)w);
        if (n < 0 || (size_t)n >= len - off)
            break;
        off += (size_t)n;
    }
    return off;
}

#if defined(__SANITIZE_THREAD__)
/* util/xproc.h's process-wide object. */
char bm_util_xproc_sync_;
#endif
