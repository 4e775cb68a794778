/* Tests of CRC-32C (src/util/crc32c.h): the published check values, the
 * table and instruction versions agreeing on every length and alignment,
 * chaining over split buffers, and a single flipped bit always detected. */
#include "util/crc32c.h"

#include "bm_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_known_values(void)
{
    /* RFC 3720 appendix B.4 and the common "123456789" check value */
    BM_CHECK_EQ_INT(bm_util_crc32c(0, "123456789", 9), 0xE3069283u);
    BM_CHECK_EQ_INT(bm_util_crc32c_sw(0, "123456789", 9), 0xE3069283u);
    uint8_t zeros[32] = {0}, ones[32], inc[32];
    memset(ones, 0xff, sizeof(ones));
    for (int i = 0; i < 32; i++)
        inc[i] = (uint8_t)i;
    BM_CHECK_EQ_INT(bm_util_crc32c(0, zeros, 32), 0x8A9136AAu);
    BM_CHECK_EQ_INT(bm_util_crc32c(0, ones, 32), 0x62A8AB43u);
    BM_CHECK_EQ_INT(bm_util_crc32c(0, inc, 32), 0x46DD794Eu);
    BM_CHECK_EQ_INT(bm_util_crc32c(0, NULL, 0), 0u);
}

static void test_hw_matches_sw(void)
{
    enum { N = 4096 };
    uint8_t *buf = malloc(N + 8);
    unsigned r = 12345;
    for (int i = 0; i < N + 8; i++) {
        r = r * 1103515245u + 12345u;
        buf[i] = (uint8_t)(r >> 16);
    }
    int mismatches = 0;
    for (size_t off = 0; off < 8; off++)
        for (size_t len = 0; len < N; len += len < 64 ? 1 : 61)
            if (bm_util_crc32c(0, buf + off, len) != bm_util_crc32c_sw(0, buf + off, len))
                mismatches++;
    BM_CHECK_EQ_INT(mismatches, 0);
    printf("crc32 instruction used: %s\n", bm_util_crc32c_hw() ? "yes" : "no");
    free(buf);
}

static void test_chaining(void)
{
    const char *s = "The quick brown fox jumps over the lazy dog";
    size_t n = strlen(s);
    uint32_t whole = bm_util_crc32c(0, s, n);
    for (size_t cut = 0; cut <= n; cut++) {
        uint32_t c = bm_util_crc32c(0, s, cut);
        BM_CHECK_EQ_INT(bm_util_crc32c(c, s + cut, n - cut), whole);
    }
}

static void test_bit_flips(void)
{
    uint8_t buf[1500];
    for (int i = 0; i < 1500; i++)
        buf[i] = (uint8_t)(i * 7);
    uint32_t base = bm_util_crc32c(0, buf, sizeof(buf));
    int missed = 0;
    for (int bit = 0; bit < 1500 * 8; bit += 3) {
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        if (bm_util_crc32c(0, buf, sizeof(buf)) == base)
            missed++;
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    BM_CHECK_EQ_INT(missed, 0);
}

int main(void)
{
    BM_RUN(test_known_values);
    BM_RUN(test_hw_matches_sw);
    BM_RUN(test_chaining);
    BM_RUN(test_bit_flips);
    return bm_test_summary("test_util_crc32c");
}
