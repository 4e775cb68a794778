/* ThreadSanitizer and ordering that goes through another process. A
 * thread's writes reach another thread of the same process in order when
 * the chain between them passes through another process (this thread sends
 * a message, the peer answers or publishes a flag, the other thread sees
 * it): release and acquire on shared memory order them in fact, but
 * ThreadSanitizer sees one process only and reports a race. The points
 * where this process hands something to another process (sm's FIFO and
 * fast-box sends, coll_sm's flags) call bm_util_xproc_release, those where
 * it finds something another process published call bm_util_xproc_acquire:
 * under ThreadSanitizer both name one process-wide object, which makes the
 * hand-offs synchronise the threads of this process as the real chain
 * does; in every other build they are empty. */
#ifndef BM_UTIL_XPROC_H
#define BM_UTIL_XPROC_H

#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
extern char bm_util_xproc_sync_;
static inline void bm_util_xproc_release(void)
{
    __tsan_release(&bm_util_xproc_sync_);
}
static inline void bm_util_xproc_acquire(void)
{
    __tsan_acquire(&bm_util_xproc_sync_);
}
#else
static inline void bm_util_xproc_release(void)
{
}
static inline void bm_util_xproc_acquire(void)
{
}
#endif

#endif
