/* Tests of the 64-bit-key hash table (src/util/hash.h): a million keys
 * (insert, look up all, remove half, check the rest), duplicates, NULL
 * values, extreme keys, iteration, and removal patterns that exercise the
 * backward shift across the end of the slot array. */
#include "util/hash.h"

#include "bm_test.h"

#include <stdint.h>
#include <stdlib.h>

/* Values are fake pointers derived from the key: never NULL. */
static void *val_of(uint64_t k)
{
    return (void *)(uintptr_t)((k * 2654435761u) | 1);
}

static void test_million(void)
{
    enum { N = 1000000 };
    struct bm_util_hash h;
    BM_CHECK_EQ_INT(bm_util_hash_init(&h, 0), BM_OK);
    int bad = 0;
    for (uint64_t k = 0; k < N; k++)
        bad += bm_util_hash_insert(&h, k * 7919, val_of(k * 7919)) != BM_OK;
    BM_CHECK_EQ_INT(bad, 0);
    BM_CHECK_EQ_INT(bm_util_hash_count(&h), N);
    for (uint64_t k = 0; k < N; k++)
        bad += bm_util_hash_lookup(&h, k * 7919) != val_of(k * 7919);
    BM_CHECK_EQ_INT(bad, 0);
    for (uint64_t k = 0; k < N; k += 2) {
        void *v = NULL;
        bad += bm_util_hash_remove(&h, k * 7919, &v) != BM_OK || v != val_of(k * 7919);
    }
    BM_CHECK_EQ_INT(bad, 0);
    BM_CHECK_EQ_INT(bm_util_hash_count(&h), N / 2);
    for (uint64_t k = 0; k < N; k++) {
        void *want = (k % 2) ? val_of(k * 7919) : NULL;
        bad += bm_util_hash_lookup(&h, k * 7919) != want;
    }
    BM_CHECK_EQ_INT(bad, 0);
    bm_util_hash_fini(&h);
}

static void test_edge_cases(void)
{
    struct bm_util_hash h;
    BM_CHECK_EQ_INT(bm_util_hash_init(&h, 1000), BM_OK);
    size_t cap = h.mask + 1;
    BM_CHECK(cap >= 1334); /* 1000 keys fit without growing */
    BM_CHECK_EQ_INT(bm_util_hash_insert(&h, 0, val_of(0)), BM_OK);
    BM_CHECK_EQ_INT(bm_util_hash_insert(&h, UINT64_MAX, val_of(5)), BM_OK);
    BM_CHECK_EQ_INT(bm_util_hash_insert(&h, 0, val_of(9)), BM_ERR_EXISTS);
    BM_CHECK(bm_util_hash_lookup(&h, 0) == val_of(0)); /* unchanged by the failed insert */
    BM_CHECK_EQ_INT(bm_util_hash_insert(&h, 42, NULL), BM_ERR_BAD_PARAM);
    struct bm_util_hash huge;
    BM_CHECK_EQ_INT(bm_util_hash_init(&huge, SIZE_MAX / 2), BM_ERR_NO_MEMORY);
    BM_CHECK(bm_util_hash_lookup(&h, UINT64_MAX) == val_of(5));
    BM_CHECK(bm_util_hash_lookup(&h, 1) == NULL);
    BM_CHECK_EQ_INT(bm_util_hash_remove(&h, 1, NULL), BM_ERR_NOT_FOUND);
    BM_CHECK_EQ_INT(bm_util_hash_remove(&h, 0, NULL), BM_OK);
    BM_CHECK_EQ_INT(bm_util_hash_remove(&h, 0, NULL), BM_ERR_NOT_FOUND);
    BM_CHECK_EQ_INT(bm_util_hash_count(&h), 1);
    for (uint64_t k = 1; k <= 1000; k++)
        bm_util_hash_insert(&h, k, val_of(k));
    BM_CHECK_EQ_INT(h.mask + 1, cap);
    bm_util_hash_fini(&h);
}

static void test_iterate(void)
{
    struct bm_util_hash h;
    bm_util_hash_init(&h, 0);
    size_t iter = 0;
    uint64_t k;
    void *v;
    BM_CHECK(!bm_util_hash_next(&h, &iter, &k, &v));
    uint64_t sum = 0;
    for (uint64_t i = 1; i <= 100; i++)
        bm_util_hash_insert(&h, i << 40, val_of(i));
    int seen = 0, bad = 0;
    iter = 0;
    while (bm_util_hash_next(&h, &iter, &k, &v)) {
        seen++;
        sum += k >> 40;
        bad += v != val_of(k >> 40);
    }
    BM_CHECK_EQ_INT(seen, 100);
    BM_CHECK_EQ_INT(sum, 5050);
    BM_CHECK_EQ_INT(bad, 0);
    bm_util_hash_fini(&h);
}

/* Random inserts and removals against a plain array model, in a small table
 * so that runs are long and wrap around the end of the slot array. */
static void test_random_against_model(void)
{
    enum { KEYS = 64, OPS = 200000 };
    void *model[KEYS] = {0};
    struct bm_util_hash h;
    bm_util_hash_init(&h, 0);
    unsigned seed = 12345;
    int bad = 0;
    for (int op = 0; op < OPS; op++) {
        seed = seed * 1103515245u + 12345u;
        uint64_t k = (seed >> 8) % KEYS;
        if ((seed >> 20) & 1) {
            bm_status_t rc = bm_util_hash_insert(&h, k, val_of(k + 1));
            bad += rc != (model[k] ? BM_ERR_EXISTS : BM_OK);
            model[k] = val_of(k + 1);
        } else {
            bm_status_t rc = bm_util_hash_remove(&h, k, NULL);
            bad += rc != (model[k] ? BM_OK : BM_ERR_NOT_FOUND);
            model[k] = NULL;
        }
        for (uint64_t j = 0; j < KEYS && op % 97 == 0; j++)
            bad += bm_util_hash_lookup(&h, j) != model[j];
    }
    BM_CHECK_EQ_INT(bad, 0);
    bm_util_hash_fini(&h);
}

int main(void)
{
    BM_RUN(test_million);
    BM_RUN(test_edge_cases);
    BM_RUN(test_iterate);
    BM_RUN(test_random_against_model);
    return bm_test_summary("test_util_hash");
}
