/* The modex entry store: (rank, key) -> value, used by the runtime backends
 * to hold what peers published. A job has few keys per rank (one per
 * transport), so each rank keeps a short array searched linearly; values are
 * copied once and keep their address until the store is freed, which is what
 * lets bm_rte_modex_get hand out pointers without copies. */
#include "runtime/rte_backend.h"

#include <stdlib.h>
#include <string.h>

struct rte_store_entry {
    char *key;
    void *val;
    size_t vallen;
};

struct rte_store_rank {
    struct rte_store_entry *e;
    size_t n, cap;
};

struct bm_rte_store {
    int size;
    struct rte_store_rank *ranks;
};

struct bm_rte_store *bm_rte_store_new(int size)
{
    struct bm_rte_store *st = calloc(1, sizeof(*st));
    if (!st)
        return NULL;
    st->ranks = calloc((size_t)size, sizeof(*st->ranks));
    if (!st->ranks) {
        free(st);
        return NULL;
    }
    st->size = size;
    return st;
}

void bm_rte_store_free(struct bm_rte_store *st)
{
    if (!st)
        return;
    for (int r = 0; r < st->size; r++) {
        for (size_t i = 0; i < st->ranks[r].n; i++) {
            free(st->ranks[r].e[i].key);
            free(st->ranks[r].e[i].val);
        }
        free(st->ranks[r].e);
    }
    free(st->ranks);
    free(st);
}

static struct rte_store_entry *store_find(const struct bm_rte_store *st, int rank, const char *key,
                                          size_t keylen)
{
    struct rte_store_rank *sr = &st->ranks[rank];
    for (size_t i = 0; i < sr->n; i++)
        if (strlen(sr->e[i].key) == keylen && memcmp(sr->e[i].key, key, keylen) == 0)
            return &sr->e[i];
    return NULL;
}

bm_status_t bm_rte_store_put(struct bm_rte_store *st, int rank, const char *key, size_t keylen,
                             const void *val, size_t vallen)
{
    if (rank < 0 || rank >= st->size || keylen == 0)
        return BM_ERR_BAD_PARAM;
    void *copy = malloc(vallen ? vallen : 1);
    if (!copy)
        return BM_ERR_NO_MEMORY;
    if (vallen)
        memcpy(copy, val, vallen);
    struct rte_store_entry *e = store_find(st, rank, key, keylen);
    if (e) {
        /* A caller may still hold the old value (valid until finalize), so
         * it is hidden, not freed: an empty key never matches. */
        e->key[0] = '\0';
    }
    struct rte_store_rank *sr = &st->ranks[rank];
    if (sr->n == sr->cap) {
        size_t cap = sr->cap ? 2 * sr->cap : 4;
        struct rte_store_entry *n = realloc(sr->e, cap * sizeof(*n));
        if (!n) {
            free(copy);
            return BM_ERR_NO_MEMORY;
        }
        sr->e = n;
        sr->cap = cap;
    }
    char *k = strndup(key, keylen);
    if (!k) {
        free(copy);
        return BM_ERR_NO_MEMORY;
    }
    sr->e[sr->n++] = (struct rte_store_entry){.key = k, .val = copy, .vallen = vallen};
    return BM_OK;
}

bm_status_t bm_rte_store_get(const struct bm_rte_store *st, int rank, const char *key,
                             const void **val_out, size_t *len_out)
{
    if (rank < 0 || rank >= st->size)
        return BM_ERR_BAD_PARAM;
    struct rte_store_entry *e = store_find(st, rank, key, strlen(key));
    if (!e)
        return BM_ERR_NOT_FOUND;
    *val_out = e->val;
    *len_out = e->vallen;
    return BM_OK;
}

bm_status_t bm_rte_store_get_locked(pthread_mutex_t *lock, struct bm_rte_store *const *st, int rank,
                                    const char *key, const void **val_out, size_t *len_out)
{
    pthread_mutex_lock(lock);
    bm_status_t rc =
        *st ? bm_rte_store_get(*st, rank, key, val_out, len_out) : BM_ERR_NOT_AVAILABLE;
    pthread_mutex_unlock(lock);
    return rc;
}
