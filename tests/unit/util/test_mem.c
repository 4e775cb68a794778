/* Unit test of util/mem.h: bm_util_copy at every size from 0 to 96 bytes and
 * every alignment of source and destination within a word, checking that
 * exactly the n bytes are copied and nothing around them is touched (its
 * small sizes use overlapping word moves); bm_util_copy_stream at sizes
 * around its 256-byte switch and its 64-byte blocks, at every alignment of
 * the destination within 16 bytes (its streaming stores need 16); and
 * bm_util_zero. */
#include "bm_test.h"
#include "util/mem.h"

#include <string.h>

static void test_copy_sizes(void)
{
    unsigned char src[160], dst[160], want[160];
    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (unsigned char)(i * 37 + 11);
    int bad = 0;
    for (size_t n = 0; n <= 96; n++)
        for (size_t so = 0; so < 8; so++)
            for (size_t d_o = 0; d_o < 8; d_o++) {
                memset(dst, 0xa5, sizeof(dst));
                memset(want, 0xa5, sizeof(want));
                memcpy(want + 16 + d_o, src + so, n);
                bm_util_copy(dst + 16 + d_o, src + so, n);
                if (memcmp(dst, want, sizeof(dst)) != 0)
                    bad++;
            }
    BM_CHECK_EQ_INT(bad, 0);
}

static void test_copy_stream(void)
{
    enum { MAX = 4096 + 200 };
    static unsigned char src[MAX], dst[MAX + 64], want[MAX + 64];
    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (unsigned char)(i * 131 + 7);
    static const size_t sizes[] = {0,   1,   63,   255,  256,  257,  319,
                                   320, 321, 1000, 4095, 4096, 4097, MAX - 16};
    int bad = 0;
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
        for (size_t so = 0; so < 3; so++)
            for (size_t d_o = 0; d_o < 16; d_o++) {
                size_t n = sizes[k];
                memset(dst, 0xa5, sizeof(dst));
                memset(want, 0xa5, sizeof(want));
                memcpy(want + 16 + d_o, src + so, n);
                bm_util_copy_stream(dst + 16 + d_o, src + so, n);
                if (memcmp(dst, want, sizeof(dst)) != 0)
                    bad++;
            }
    BM_CHECK_EQ_INT(bad, 0);
}

static void test_zero(void)
{
    unsigned char b[300];
    memset(b, 0xff, sizeof(b));
    bm_util_zero(b + 1, 298);
    BM_CHECK_EQ_INT(b[0], 0xff);
    BM_CHECK_EQ_INT(b[299], 0xff);
    int nonzero = 0;
    for (int i = 1; i < 299; i++)
        nonzero += b[i] != 0;
    BM_CHECK_EQ_INT(nonzero, 0);
}

int main(void)
{
    BM_RUN(test_copy_sizes);
    BM_RUN(test_copy_stream);
    BM_RUN(test_zero);
    return bm_test_summary("test_util_mem");
}
