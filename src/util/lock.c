/* The registry of lock classes and their report (see lock.h). Classes are
 * pushed on a lock-free stack the first time a lock of theirs is
 * initialised and stay there for the life of the process (they are static
 * objects of the layers that own them). */
#include "util/lock.h"

#include <stdio.h>

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

void bm_util_lock_init(struct bm_util_lock *l, struct bm_util_lock_class *cls, bool recursive)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    if (recursive)
        pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&l->mu, &a);
    pthread_mutexattr_destroy(&a);
    l->cls = cls;
    class_register(cls);
}

void bm_util_lock_destroy(struct bm_util_lock *l)
{
    pthread_mutex_destroy(&l->mu);
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
