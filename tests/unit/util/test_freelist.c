/* Tests of the chunked free list (src/util/freelist.h): alignment and
 * distinctness of objects, growth in chunks, the maximum count, contents
 * kept across put/get, init/fini callbacks once per object, and bad
 * attributes. Run under ASan to catch overlaps and leaks. */
#include "util/freelist.h"

#include "bm_test.h"

#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

struct obj {
    uint64_t magic;
    int id;
    char pad[20];
};

static int inits, finis;

static void obj_init(void *p, void *arg)
{
    struct obj *o = p;
    o->magic = 0xfeedULL;
    o->id = (*(int *)arg)++;
    inits++;
}

static void obj_fini(void *p, void *arg)
{
    (void)arg;
    BM_CHECK(((struct obj *)p)->magic == 0xfeedULL);
    finis++;
}

static int ptr_cmp(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

static void test_alignment_and_growth(void)
{
    struct bm_util_freelist fl;
    struct bm_util_freelist_attr attr = {
        .obj_size = sizeof(struct obj), .alignment = 64, .chunk_count = 7};
    BM_CHECK_EQ_INT(bm_util_freelist_init(&fl, &attr), BM_OK);
    BM_CHECK_EQ_INT(fl.stride, 64);
    enum { N = 100 };
    void *got[N];
    for (int i = 0; i < N; i++) {
        got[i] = bm_util_freelist_get(&fl);
        BM_CHECK(got[i] != NULL);
        BM_CHECK(((uintptr_t)got[i] & 63) == 0);
        ((struct obj *)got[i])->id = i; /* writes must not overlap others */
    }
    BM_CHECK_EQ_INT(fl.total, 105); /* 15 chunks of 7 */
    BM_CHECK_EQ_INT(fl.nchunks, 15);
    BM_CHECK_EQ_INT(bm_util_freelist_in_use(&fl), N);
    qsort(got, N, sizeof(got[0]), ptr_cmp);
    for (int i = 1; i < N; i++)
        BM_CHECK((uintptr_t)got[i] - (uintptr_t)got[i - 1] >= 64);
    for (int i = 0; i < N; i++)
        bm_util_freelist_put(&fl, got[i]);
    BM_CHECK_EQ_INT(bm_util_freelist_in_use(&fl), 0);
    BM_CHECK_EQ_INT(fl.total, 105); /* no growth when objects come back */
    bm_util_freelist_fini(&fl);
}

static void test_max_and_callbacks(void)
{
    struct bm_util_freelist fl;
    int next_id = 0;
    inits = finis = 0;
    struct bm_util_freelist_attr attr = {.obj_size = sizeof(struct obj),
                                         .chunk_count = 4,
                                         .max_count = 10,
                                         .obj_init = obj_init,
                                         .obj_fini = obj_fini,
                                         .arg = &next_id};
    BM_CHECK_EQ_INT(bm_util_freelist_init(&fl, &attr), BM_OK);
    struct obj *o[10];
    for (int i = 0; i < 10; i++) {
        o[i] = bm_util_freelist_get(&fl);
        BM_CHECK(o[i] && o[i]->magic == 0xfeedULL);
    }
    BM_CHECK(bm_util_freelist_get(&fl) == NULL);
    BM_CHECK_EQ_INT(bm_util_freelist_grow(&fl), BM_ERR_NOT_AVAILABLE);
    BM_CHECK_EQ_INT(fl.total, 10); /* last chunk capped to 2 */
    BM_CHECK_EQ_INT(inits, 10);
    /* Contents survive a put/get round trip: the free link is not in the object. */
    o[3]->id = 777;
    bm_util_freelist_put(&fl, o[3]);
    struct obj *again = bm_util_freelist_get(&fl);
    BM_CHECK(again == o[3] && again->id == 777 && again->magic == 0xfeedULL);
    BM_CHECK(bm_util_freelist_get(&fl) == NULL);
    bm_util_freelist_put(&fl, again);
    bm_util_freelist_fini(&fl); /* 9 still handed out: fini still covers them */
    BM_CHECK_EQ_INT(finis, 10);
}

static void test_bad_attr(void)
{
    struct bm_util_freelist fl;
    struct bm_util_freelist_attr zero = {.obj_size = 0};
    struct bm_util_freelist_attr bad_align = {.obj_size = 8, .alignment = 24};
    BM_CHECK_EQ_INT(bm_util_freelist_init(&fl, &zero), BM_ERR_BAD_PARAM);
    BM_CHECK_EQ_INT(bm_util_freelist_init(&fl, &bad_align), BM_ERR_BAD_PARAM);
    /* An unused list has nothing to free. */
    struct bm_util_freelist_attr ok = {.obj_size = 1};
    BM_CHECK_EQ_INT(bm_util_freelist_init(&fl, &ok), BM_OK);
    BM_CHECK_EQ_INT(fl.stride, alignof(max_align_t));
    bm_util_freelist_fini(&fl);
}

int main(void)
{
    BM_RUN(test_alignment_and_growth);
    BM_RUN(test_max_and_callbacks);
    BM_RUN(test_bad_attr);
    return bm_test_summary("test_util_freelist");
}
