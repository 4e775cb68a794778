/* Open-addressing hash table (see hash.h). The invariant that makes
 * tombstone-free removal work: every key sits in the run of occupied slots
 * that starts at its home slot, with no empty slot in between. Removal
 * therefore walks the run after the hole and moves back each entry whose
 * home slot does not lie cyclically between the hole and its position. */
#include "util/hash.h"

#include <stdint.h>
#include <stdlib.h>

#define BM_HASH_MIN_CAPACITY 16

/* splitmix64's finalizer: every input bit affects every output bit. */
static inline uint64_t hash_mix(uint64_t k)
{
    k ^= k >> 30;
    k *= 0xbf58476d1ce4e5b9ULL;
    k ^= k >> 27;
    k *= 0x94d049bb133111ebULL;
    k ^= k >> 31;
    return k;
}

static inline size_t hash_home(const struct bm_util_hash *h, uint64_t key)
{
    return (size_t)hash_mix(key) & h->mask;
}

/* Capacity that keeps n keys at most three quarters full. */
static size_t hash_capacity_for(size_t n)
{
    size_t cap = BM_HASH_MIN_CAPACITY;
    while (cap - cap / 4 < n + 1)
        cap *= 2;
    return cap;
}

bm_status_t bm_util_hash_init(struct bm_util_hash *h, size_t expected)
{
    if (expected > SIZE_MAX / 4 / sizeof(*h->slots))
        return BM_ERR_NO_MEMORY;
    size_t cap = hash_capacity_for(expected);
    h->slots = calloc(cap, sizeof(*h->slots));
    if (!h->slots)
        return BM_ERR_NO_MEMORY;
    h->mask = cap - 1;
    h->count = 0;
    return BM_OK;
}

void bm_util_hash_fini(struct bm_util_hash *h)
{
    free(h->slots);
    h->slots = NULL;
    h->mask = 0;
    h->count = 0;
}

/* The slot holding key, or the empty slot that ends its run. */
static size_t hash_find(const struct bm_util_hash *h, uint64_t key)
{
    size_t i = hash_home(h, key);
    while (h->slots[i].value && h->slots[i].key != key)
        i = (i + 1) & h->mask;
    return i;
}

static bm_status_t hash_grow(struct bm_util_hash *h)
{
    struct bm_util_hash old = *h;
    size_t cap = (old.mask + 1) * 2;
    h->slots = calloc(cap, sizeof(*h->slots));
    if (!h->slots) {
        *h = old;
        return BM_ERR_NO_MEMORY;
    }
    h->mask = cap - 1;
    for (size_t i = 0; i <= old.mask; i++)
        if (old.slots[i].value)
            h->slots[hash_find(h, old.slots[i].key)] = old.slots[i];
    free(old.slots);
    return BM_OK;
}

bm_status_t bm_util_hash_insert(struct bm_util_hash *h, uint64_t key, void *value)
{
    if (!value)
        return BM_ERR_BAD_PARAM;
    size_t i = hash_find(h, key);
    if (h->slots[i].value)
        return BM_ERR_EXISTS;
    size_t cap = h->mask + 1;
    if (h->count + 1 > cap - cap / 4) {
        bm_status_t rc = hash_grow(h);
        if (rc != BM_OK)
            return rc;
        i = hash_find(h, key);
    }
    h->slots[i].key = key;
    h->slots[i].value = value;
    h->count++;
    return BM_OK;
}

void *bm_util_hash_lookup(const struct bm_util_hash *h, uint64_t key)
{
    return h->slots[hash_find(h, key)].value;
}

/* True when home lies cyclically in (hole, pos]: the entry at pos may not
 * move back into the hole without becoming unreachable from its home. */
static inline bool hash_stays(size_t hole, size_t home, size_t pos)
{
    if (hole <= pos)
        return hole < home && home <= pos;
    return hole < home || home <= pos;
}

bm_status_t bm_util_hash_remove(struct bm_util_hash *h, uint64_t key, void **value_out)
{
    size_t hole = hash_find(h, key);
    if (!h->slots[hole].value)
        return BM_ERR_NOT_FOUND;
    if (value_out)
        *value_out = h->slots[hole].value;
    for (size_t pos = (hole + 1) & h->mask; h->slots[pos].value; pos = (pos + 1) & h->mask) {
        if (hash_stays(hole, hash_home(h, h->slots[pos].key), pos))
            continue;
        h->slots[hole] = h->slots[pos];
        hole = pos;
    }
    h->slots[hole].value = NULL;
    h->count--;
    return BM_OK;
}

bool bm_util_hash_next(const struct bm_util_hash *h, size_t *iter, uint64_t *key_out,
                       void **value_out)
{
    for (size_t i = *iter; h->slots && i <= h->mask; i++) {
        if (h->slots[i].value) {
            *key_out = h->slots[i].key;
            *value_out = h->slots[i].value;
            *iter = i + 1;
            return true;
        }
    }
    return false;
}
