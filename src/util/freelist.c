/* Free list growth and teardown (see freelist.h). Growth is the only place
 * that allocates: one aligned chunk of objects, plus the bookkeeping arrays
 * (the free stack and the chunk table) enlarged geometrically so that their
 * cost is amortised over many chunks. */
#include "util/freelist.h"

#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BM_FREELIST_DEFAULT_CHUNK 64

static bool freelist_pow2(size_t x)
{
    return x && (x & (x - 1)) == 0;
}

bm_status_t bm_util_freelist_init(struct bm_util_freelist *fl,
                                  const struct bm_util_freelist_attr *attr)
{
    memset(fl, 0, sizeof(*fl));
    fl->attr = *attr;
    if (fl->attr.alignment == 0)
        fl->attr.alignment = alignof(max_align_t);
    if (fl->attr.chunk_count == 0)
        fl->attr.chunk_count = BM_FREELIST_DEFAULT_CHUNK;
    if (attr->obj_size == 0 || !freelist_pow2(fl->attr.alignment))
        return BM_ERR_BAD_PARAM;
    size_t a = fl->attr.alignment;
    fl->stride = (attr->obj_size + a - 1) & ~(a - 1);
    return BM_OK;
}

/* Make room for n more entries in an array of pointers. */
static bm_status_t freelist_reserve(void ***arr, size_t *cap, size_t need)
{
    if (need <= *cap)
        return BM_OK;
    size_t ncap = *cap ? *cap : 16;
    while (ncap < need)
        ncap *= 2;
    void **p = realloc(*arr, ncap * sizeof(void *));
    if (!p)
        return BM_ERR_NO_MEMORY;
    *arr = p;
    *cap = ncap;
    return BM_OK;
}

/* How many objects the next chunk holds: chunk_count, capped by max_count. */
static size_t freelist_next_chunk(const struct bm_util_freelist *fl)
{
    size_t n = fl->attr.chunk_count;
    if (fl->attr.max_count && fl->attr.max_count - fl->total < n)
        n = fl->attr.max_count - fl->total;
    return n;
}

bm_status_t bm_util_freelist_grow(struct bm_util_freelist *fl)
{
    size_t n = freelist_next_chunk(fl);
    if (n == 0)
        return BM_ERR_NOT_AVAILABLE;
    if (fl->stride > SIZE_MAX / n)
        return BM_ERR_NO_MEMORY;
    /* The free stack can hold every object, so put never needs memory. */
    if (freelist_reserve(&fl->free, &fl->free_cap, fl->total + n) != BM_OK ||
        freelist_reserve(&fl->chunks, &fl->chunks_cap, fl->nchunks + 1) != BM_OK)
        return BM_ERR_NO_MEMORY;
    /* aligned_alloc wants a size that is a multiple of the alignment: stride is. */
    char *chunk = aligned_alloc(fl->attr.alignment, n * fl->stride);
    if (!chunk)
        return BM_ERR_NO_MEMORY;
    fl->chunks[fl->nchunks++] = chunk;
    /* Push in reverse so that gets hand out objects in address order. */
    for (size_t i = n; i-- > 0;) {
        void *obj = chunk + i * fl->stride;
        if (fl->attr.obj_init)
            fl->attr.obj_init(obj, fl->attr.arg);
        fl->free[fl->nfree++] = obj;
    }
    fl->total += n;
    return BM_OK;
}

void bm_util_freelist_fini(struct bm_util_freelist *fl)
{
    size_t left = fl->total;
    for (size_t c = 0; c < fl->nchunks; c++) {
        size_t n = left < fl->attr.chunk_count ? left : fl->attr.chunk_count;
        for (size_t i = 0; fl->attr.obj_fini && i < n; i++)
            fl->attr.obj_fini((char *)fl->chunks[c] + i * fl->stride, fl->attr.arg);
        left -= n;
        free(fl->chunks[c]);
    }
    free(fl->chunks);
    free(fl->free);
    memset(fl, 0, sizeof(*fl));
}
