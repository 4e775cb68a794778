/* Free lists of fixed-size objects (fragments, descriptors, requests) that
 * grow a chunk at a time, so that the hot path gets and puts objects in O(1)
 * with no malloc. The free objects are tracked on a separate stack of
 * pointers rather than by a link written into the object, so an object keeps
 * its contents between put and get: what the optional per-object init
 * callback set up once (a pointer to a registered buffer, a back-pointer to
 * its module) is still valid on every later get. Objects can be aligned to a
 * cache line (or any power of two) so that neighbours never share one. With a
 * maximum count, get returns NULL once every object is handed out: the
 * caller's signal to apply back-pressure. Everything is released at fini.
 * Not thread-safe: callers lock. */
#ifndef BM_UTIL_FREELIST_H
#define BM_UTIL_FREELIST_H

#include "bm_status.h"

#include <assert.h>
#include <stddef.h>

/* Called once per object when its chunk is allocated (init) and once per
 * object at bm_util_freelist_fini (fini). */
typedef void (*bm_util_freelist_obj_fn)(void *obj, void *arg);

struct bm_util_freelist_attr {
    size_t obj_size;    /* bytes per object (> 0) */
    size_t alignment;   /* power of two; 0 = alignof(max_align_t); 64 = one cache line */
    size_t chunk_count; /* objects allocated per growth step; 0 = 64 */
    size_t max_count;   /* 0 = no limit; otherwise get returns NULL past this many objects */
    bm_util_freelist_obj_fn obj_init; /* optional */
    bm_util_freelist_obj_fn obj_fini; /* optional */
    void *arg;                        /* passed to obj_init and obj_fini */
};

struct bm_util_freelist {
    struct bm_util_freelist_attr attr;
    size_t stride; /* obj_size rounded up to the alignment */
    void **free;   /* stack of free objects; capacity >= total */
    size_t nfree;  /* objects on the stack */
    size_t free_cap;
    size_t total;  /* objects ever allocated */
    void **chunks; /* every chunk, for fini */
    size_t nchunks, chunks_cap;
};

/* Set up an empty list; memory comes with the first get (or grow).
 * BM_ERR_BAD_PARAM for a zero object size or an alignment that is not a
 * power of two. */
bm_status_t bm_util_freelist_init(struct bm_util_freelist *fl,
                                  const struct bm_util_freelist_attr *attr);

/* Run obj_fini on every object (handed out or not) and free all memory.
 * Objects still handed out become invalid. */
void bm_util_freelist_fini(struct bm_util_freelist *fl);

/* Allocate one more chunk now (also done lazily by get). BM_ERR_NOT_AVAILABLE
 * when max_count is reached, BM_ERR_NO_MEMORY when malloc fails. */
bm_status_t bm_util_freelist_grow(struct bm_util_freelist *fl);

/* An object, or NULL when max_count objects are all in use or memory ran out. */
static inline void *bm_util_freelist_get(struct bm_util_freelist *fl)
{
    if (__builtin_expect(fl->nfree == 0, 0) && bm_util_freelist_grow(fl) != BM_OK)
        return NULL;
    return fl->free[--fl->nfree];
}

/* Give back an object obtained from this list (once). */
static inline void bm_util_freelist_put(struct bm_util_freelist *fl, void *obj)
{
    assert(fl->nfree < fl->total && "object put twice or not from this list");
    fl->free[fl->nfree++] = obj;
}

/* Objects currently handed out. */
static inline size_t bm_util_freelist_in_use(const struct bm_util_freelist *fl)
{
    return fl->total - fl->nfree;
}

#endif
