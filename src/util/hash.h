/* A hash table from 64-bit keys to non-NULL pointers: connection tables
 * (peer address -> endpoint), pending rendezvous (request id -> request),
 * registration caches. Open addressing with linear probing over a
 * power-of-two array of (key, value) slots: one cache line usually answers a
 * lookup, and removal shifts followers back instead of leaving tombstones,
 * so the table never degrades after many inserts and removals. Keys are
 * mixed with a 64-bit finalizer, so sequential keys (ranks, counters) spread
 * well. The table grows by doubling when three quarters full. NULL values are
 * refused because NULL is how an empty slot is recognised (and what lookup
 * returns for "absent"). Not thread-safe: callers lock. */
#ifndef BM_UTIL_HASH_H
#define BM_UTIL_HASH_H

#include "bm_status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bm_util_hash_slot {
    uint64_t key;
    void *value; /* NULL: empty */
};

struct bm_util_hash {
    struct bm_util_hash_slot *slots;
    size_t mask;  /* capacity - 1 (capacity is a power of two) */
    size_t count; /* keys stored */
};

/* An empty table sized for about `expected` keys without growing (0: small). */
bm_status_t bm_util_hash_init(struct bm_util_hash *h, size_t expected);
void bm_util_hash_fini(struct bm_util_hash *h);

/* Add key -> value. BM_ERR_EXISTS when the key is present (nothing changes),
 * BM_ERR_BAD_PARAM for a NULL value, BM_ERR_NO_MEMORY when growing fails. */
bm_status_t bm_util_hash_insert(struct bm_util_hash *h, uint64_t key, void *value);

/* The value of key, or NULL when absent. */
void *bm_util_hash_lookup(const struct bm_util_hash *h, uint64_t key);

/* Remove key; its value goes to *value_out when not NULL. BM_ERR_NOT_FOUND
 * when absent. */
bm_status_t bm_util_hash_remove(struct bm_util_hash *h, uint64_t key, void **value_out);

static inline size_t bm_util_hash_count(const struct bm_util_hash *h)
{
    return h->count;
}

/* Iterate: start with *iter = 0; each call gives the next pair and returns
 * true, or returns false at the end. The order is arbitrary. The table must
 * not be changed during an iteration (removal moves entries). */
bool bm_util_hash_next(const struct bm_util_hash *h, size_t *iter, uint64_t *key_out,
                       void **value_out);

#endif
