/* The out-of-line part of the bitmap (see bitmap.h): allocation, growth,
 * counting and searching. Invariant kept by every function here: bits at or
 * beyond nbits are clear, so count and next_set can work a word at a time
 * without masking the last word. At least one word is always allocated, so
 * the inline accessors never dereference NULL. */
#include "util/bitmap.h"

#include <stdlib.h>
#include <string.h>

static size_t bitmap_words(size_t nbits)
{
    size_t w = (nbits + 63) / 64;
    return w ? w : 1;
}

bm_status_t bm_util_bitmap_init(struct bm_util_bitmap *b, size_t nbits)
{
    b->words = calloc(bitmap_words(nbits), sizeof(uint64_t));
    if (!b->words) {
        b->nbits = 0;
        return BM_ERR_NO_MEMORY;
    }
    b->nbits = nbits;
    return BM_OK;
}

void bm_util_bitmap_fini(struct bm_util_bitmap *b)
{
    free(b->words);
    b->words = NULL;
    b->nbits = 0;
}

bm_status_t bm_util_bitmap_resize(struct bm_util_bitmap *b, size_t nbits)
{
    if (nbits <= b->nbits)
        return BM_OK;
    size_t oldw = bitmap_words(b->nbits), neww = bitmap_words(nbits);
    if (neww > oldw) {
        uint64_t *w = realloc(b->words, neww * sizeof(uint64_t));
        if (!w)
            return BM_ERR_NO_MEMORY;
        memset(w + oldw, 0, (neww - oldw) * sizeof(uint64_t));
        b->words = w;
    }
    b->nbits = nbits;
    return BM_OK;
}

void bm_util_bitmap_clear_all(struct bm_util_bitmap *b)
{
    memset(b->words, 0, bitmap_words(b->nbits) * sizeof(uint64_t));
}

size_t bm_util_bitmap_count(const struct bm_util_bitmap *b)
{
    size_t n = 0;
    for (size_t i = 0; i < bitmap_words(b->nbits); i++)
        n += (size_t)__builtin_popcountll(b->words[i]);
    return n;
}

size_t bm_util_bitmap_next_set(const struct bm_util_bitmap *b, size_t from)
{
    if (from >= b->nbits)
        return b->nbits;
    size_t w = from / 64;
    uint64_t bits = b->words[w] & (~(uint64_t)0 << (from % 64));
    size_t nw = bitmap_words(b->nbits);
    while (!bits) {
        if (++w == nw)
            return b->nbits;
        bits = b->words[w];
    }
    return w * 64 + (size_t)__builtin_ctzll(bits);
}

void bm_util_bitmap_set_all(struct bm_util_bitmap *b)
{
    size_t full = b->nbits / 64;
    memset(b->words, 0xff, full * sizeof(uint64_t));
    if (b->nbits % 64)
        b->words[full] = ((uint64_t)1 << (b->nbits % 64)) - 1;
}
