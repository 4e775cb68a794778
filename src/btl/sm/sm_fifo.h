/* The lock-free receive FIFO of the sm transport: many senders append
 * fragments, one receiver (the segment's owner) takes them off, across
 * processes. It is a linked list threaded through the fragments' next
 * fields (relative pointers, see sm_proto.h). A sender claims its place with
 * one atomic exchange on tail and then links itself behind the previous
 * tail (or becomes head when the FIFO was empty); the receiver follows head.
 * Appends from one sender are therefore delivered in the order they were
 * made. The only wait is the receiver's, for the short window between a
 * sender's exchange and its link store; senders never wait.
 *
 * resolve(ctx, rptr) turns a relative pointer into this process's address of
 * the fragment header. Header-only so that a threaded stress test can use it. */
#ifndef BM_BTL_SM_FIFO_H
#define BM_BTL_SM_FIFO_H

#include "btl/sm/sm_proto.h"

#include <stdatomic.h>

typedef struct bm_btl_sm_frag_hdr *(*bm_btl_sm_resolve_fn)(void *ctx, bm_btl_sm_rptr_t p);

static inline void bm_btl_sm_fifo_init(struct bm_btl_sm_fifo *f)
{
    atomic_store_explicit(&f->head, BM_BTL_SM_RPTR_NONE, memory_order_relaxed);
    atomic_store_explicit(&f->tail, BM_BTL_SM_RPTR_NONE, memory_order_relaxed);
}

/* Append hdr (whose rptr is p) to f. Any process, any time. The release
 * on the link store publishes the fragment's contents to the receiver. */
static inline void bm_btl_sm_fifo_push(struct bm_btl_sm_fifo *f, struct bm_btl_sm_frag_hdr *hdr,
                                       bm_btl_sm_rptr_t p, bm_btl_sm_resolve_fn resolve, void *ctx)
{
    atomic_store_explicit(&hdr->next, BM_BTL_SM_RPTR_NONE, memory_order_relaxed);
    bm_btl_sm_rptr_t prev = atomic_exchange_explicit(&f->tail, p, memory_order_acq_rel);
    if (prev == BM_BTL_SM_RPTR_NONE)
        atomic_store_explicit(&f->head, p, memory_order_release);
    else
        atomic_store_explicit(&resolve(ctx, prev)->next, p, memory_order_release);
}

/* The receiver's private side of a FIFO. */
struct bm_btl_sm_fifo_reader {
    /* A fragment taken off the FIFO whose successor is not linked yet. */
    bm_btl_sm_rptr_t stuck;
};

/* Take the first fragment; BM_BTL_SM_RPTR_NONE when empty. Owner only.
 * When head has no successor it may be the last fragment: head is cleared
 * first and tail swung back to empty. If a sender got in between (the swing
 * fails), it has claimed its place behind that fragment and will link itself
 * there shortly; the fragment is parked in reader->stuck, unread, until the
 * link appears, so the receiver never spins on a sender that was preempted
 * (which on an oversubscribed node can take a whole time slice), and the
 * fragment cannot go home and be reused while a sender still has to write
 * its next field. Clearing head before the swing matters: a sender that
 * later finds tail empty sets head, and its store must land after ours. */
static inline bm_btl_sm_rptr_t bm_btl_sm_fifo_pop(struct bm_btl_sm_fifo *f,
                                                  struct bm_btl_sm_fifo_reader *reader,
                                                  bm_btl_sm_resolve_fn resolve, void *ctx)
{
    bm_btl_sm_rptr_t h = reader->stuck, next;
    if (h != BM_BTL_SM_RPTR_NONE) {
        next = atomic_load_explicit(&resolve(ctx, h)->next, memory_order_acquire);
        if (next == BM_BTL_SM_RPTR_NONE)
            return BM_BTL_SM_RPTR_NONE;
        reader->stuck = BM_BTL_SM_RPTR_NONE;
        atomic_store_explicit(&f->head, next, memory_order_relaxed);
        return h;
    }
    h = atomic_load_explicit(&f->head, memory_order_acquire);
    if (h == BM_BTL_SM_RPTR_NONE)
        return h;
    next = atomic_load_explicit(&resolve(ctx, h)->next, memory_order_acquire);
    if (next != BM_BTL_SM_RPTR_NONE) {
        atomic_store_explicit(&f->head, next, memory_order_relaxed);
        return h;
    }
    atomic_store_explicit(&f->head, BM_BTL_SM_RPTR_NONE, memory_order_relaxed);
    bm_btl_sm_rptr_t expected = h;
    if (atomic_compare_exchange_strong_explicit(&f->tail, &expected, BM_BTL_SM_RPTR_NONE,
                                                memory_order_acq_rel, memory_order_acquire))
        return h;
    next = atomic_load_explicit(&resolve(ctx, h)->next, memory_order_acquire);
    if (next == BM_BTL_SM_RPTR_NONE) {
        reader->stuck = h;
        return BM_BTL_SM_RPTR_NONE;
    }
    atomic_store_explicit(&f->head, next, memory_order_relaxed);
    return h;
}

/* Whether pop may return something: the cheap idle check. */
static inline int bm_btl_sm_fifo_ready(struct bm_btl_sm_fifo *f,
                                       const struct bm_btl_sm_fifo_reader *reader)
{
    return reader->stuck != BM_BTL_SM_RPTR_NONE ||
           atomic_load_explicit(&f->head, memory_order_relaxed) != BM_BTL_SM_RPTR_NONE;
}

#endif
