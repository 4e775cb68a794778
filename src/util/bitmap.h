/* A growable bitmap of bits 0..nbits-1, used for reachability sets
 * (add_procs) and peer masks. Small inline operations; storage owned by the
 * struct, released with bm_util_bitmap_fini. */
#ifndef BM_UTIL_BITMAP_H
#define BM_UTIL_BITMAP_H

#include "bm_status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bm_util_bitmap {
    uint64_t *words;
    size_t nbits;
};

/* All bits clear. */
bm_status_t bm_util_bitmap_init(struct bm_util_bitmap *b, size_t nbits);
void bm_util_bitmap_fini(struct bm_util_bitmap *b);
/* Grow (new bits clear); never shrinks. */
bm_status_t bm_util_bitmap_resize(struct bm_util_bitmap *b, size_t nbits);
void bm_util_bitmap_clear_all(struct bm_util_bitmap *b);
/* Set bits 0..nbits-1. */
void bm_util_bitmap_set_all(struct bm_util_bitmap *b);
size_t bm_util_bitmap_count(const struct bm_util_bitmap *b);
/* Index of the first set bit at or after from, or b->nbits when none. */
size_t bm_util_bitmap_next_set(const struct bm_util_bitmap *b, size_t from);

static inline void bm_util_bitmap_set(struct bm_util_bitmap *b, size_t i)
{
    b->words[i / 64] |= (uint64_t)1 << (i % 64);
}
static inline void bm_util_bitmap_clear(struct bm_util_bitmap *b, size_t i)
{
    b->words[i / 64] &= ~((uint64_t)1 << (i % 64));
}
static inline bool bm_util_bitmap_test(const struct bm_util_bitmap *b, size_t i)
{
    return i < b->nbits && (b->words[i / 64] >> (i % 64)) & 1;
}

#endif
