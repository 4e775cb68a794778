/* Tests of the bitmap (src/util/bitmap.h): word boundaries, growth that
 * keeps old bits and clears new ones, counting, next_set scanning including
 * the empty and out-of-range cases, and a zero-size bitmap. */
#include "util/bitmap.h"

#include "bm_test.h"

static void test_set_test_count(void)
{
    struct bm_util_bitmap b;
    BM_CHECK_EQ_INT(bm_util_bitmap_init(&b, 130), BM_OK);
    BM_CHECK_EQ_INT(bm_util_bitmap_count(&b), 0);
    static const size_t idx[] = {0, 1, 63, 64, 65, 127, 128, 129};
    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        bm_util_bitmap_set(&b, idx[i]);
    BM_CHECK_EQ_INT(bm_util_bitmap_count(&b), 8);
    BM_CHECK(bm_util_bitmap_test(&b, 63) && bm_util_bitmap_test(&b, 64));
    BM_CHECK(!bm_util_bitmap_test(&b, 62) && !bm_util_bitmap_test(&b, 66));
    BM_CHECK(!bm_util_bitmap_test(&b, 130)); /* out of range reads as clear */
    bm_util_bitmap_clear(&b, 64);
    BM_CHECK(!bm_util_bitmap_test(&b, 64));
    BM_CHECK_EQ_INT(bm_util_bitmap_count(&b), 7);
    bm_util_bitmap_clear_all(&b);
    BM_CHECK_EQ_INT(bm_util_bitmap_count(&b), 0);
    bm_util_bitmap_set_all(&b);
    BM_CHECK_EQ_INT(bm_util_bitmap_count(&b), 130); /* nothing beyond nbits */
    bm_util_bitmap_fini(&b);
}

static void test_next_set(void)
{
    struct bm_util_bitmap b;
    bm_util_bitmap_init(&b, 200);
    BM_CHECK_EQ_INT(bm_util_bitmap_next_set(&b, 0), 200);
    bm_util_bitmap_set(&b, 5);
    bm_util_bitmap_set(&b, 64);
    bm_util_bitmap_set(&b, 199);
    BM_CHECK_EQ_INT(bm_util_bitmap_next_set(&b, 0), 5);
    BM_CHECK_EQ_INT(bm_util_bitmap_next_set(&b, 5), 5);
    BM_CHECK_EQ_INT(bm_util_bitmap_next_set(&b, 6), 64);
    BM_CHECK_EQ_INT(bm_util_bitmap_next_set(&b, 65), 199);
    BM_CHECK_EQ_INT(bm_util_bitmap_next_set(&b, 200), 200);
    BM_CHECK_EQ_INT(bm_util_bitmap_next_set(&b, 100000), 200);
    size_t n = 0;
    for (size_t i = bm_util_bitmap_next_set(&b, 0); i < b.nbits;
         i = bm_util_bitmap_next_set(&b, i + 1))
        n++;
    BM_CHECK_EQ_INT(n, 3);
    bm_util_bitmap_fini(&b);
}

static void test_resize(void)
{
    struct bm_util_bitmap b;
    bm_util_bitmap_init(&b, 10);
    bm_util_bitmap_set_all(&b);
    BM_CHECK_EQ_INT(bm_util_bitmap_resize(&b, 5), BM_OK); /* never shrinks */
    BM_CHECK_EQ_INT(b.nbits, 10);
    BM_CHECK_EQ_INT(bm_util_bitmap_resize(&b, 1000), BM_OK);
    BM_CHECK_EQ_INT(b.nbits, 1000);
    BM_CHECK_EQ_INT(bm_util_bitmap_count(&b), 10); /* old kept, new clear */
    BM_CHECK(!bm_util_bitmap_test(&b, 10) && !bm_util_bitmap_test(&b, 999));
    BM_CHECK_EQ_INT(bm_util_bitmap_next_set(&b, 10), 1000);
    bm_util_bitmap_set(&b, 999);
    BM_CHECK_EQ_INT(bm_util_bitmap_next_set(&b, 10), 999);
    bm_util_bitmap_fini(&b);
    BM_CHECK(b.words == NULL && b.nbits == 0);
}

static void test_empty(void)
{
    struct bm_util_bitmap b;
    BM_CHECK_EQ_INT(bm_util_bitmap_init(&b, 0), BM_OK);
    BM_CHECK_EQ_INT(bm_util_bitmap_count(&b), 0);
    BM_CHECK_EQ_INT(bm_util_bitmap_next_set(&b, 0), 0);
    BM_CHECK(!bm_util_bitmap_test(&b, 0));
    bm_util_bitmap_set_all(&b);
    BM_CHECK_EQ_INT(bm_util_bitmap_count(&b), 0);
    BM_CHECK_EQ_INT(bm_util_bitmap_resize(&b, 64), BM_OK);
    bm_util_bitmap_set_all(&b);
    BM_CHECK_EQ_INT(bm_util_bitmap_count(&b), 64);
    bm_util_bitmap_fini(&b);
}

int main(void)
{
    BM_RUN(test_set_test_count);
    BM_RUN(test_next_set);
    BM_RUN(test_resize);
    BM_RUN(test_empty);
    return bm_test_summary("test_util_bitmap");
}
