/* Tests of SipHash-2-4 (src/util/siphash.h) against the 64 reference
 * vectors of the algorithm's authors (key 00 01 .. 0f, messages 00 01 ..
 * of every length from 0 to 63 bytes: every tail length and the multi-word
 * path), plus the properties the tcp handshake relies on: any change of
 * key or message changes the result, and the message's alignment does not. */
#include "util/siphash.h"

#include "bm_test.h"

#include <stdlib.h>
#include <string.h>

/* SipHash-2-4 reference outputs (as little-endian 64-bit values) for
 * message length 0..63, published with the reference implementation. */
static const uint64_t reference[64] = {
    0x726fdb47dd0e0e31ull, 0x74f839c593dc67fdull, 0x0d6c8009d9a94f5aull, 0x85676696d7fb7e2dull,
    0xcf2794e0277187b7ull, 0x18765564cd99a68dull, 0xcbc9466e58fee3ceull, 0xab0200f58b01d137ull,
    0x93f5f5799a932462ull, 0x9e0082df0ba9e4b0ull, 0x7a5dbbc594ddb9f3ull, 0xf4b32f46226bada7ull,
    0x751e8fbc860ee5fbull, 0x14ea5627c0843d90ull, 0xf723ca908e7af2eeull, 0xa129ca6149be45e5ull,
    0x3f2acc7f57c29bdbull, 0x699ae9f52cbe4794ull, 0x4bc1b3f0968dd39cull, 0xbb6dc91da77961bdull,
    0xbed65cf21aa2ee98ull, 0xd0f2cbb02e3b67c7ull, 0x93536795e3a33e88ull, 0xa80c038ccd5ccec8ull,
    0xb8ad50c6f649af94ull, 0xbce192de8a85b8eaull, 0x17d835b85bbb15f3ull, 0x2f2e6163076bcfadull,
    0xde4daaaca71dc9a5ull, 0xa6a2506687956571ull, 0xad87a3535c49ef28ull, 0x32d892fad841c342ull,
    0x7127512f72f27cceull, 0xa7f32346f95978e3ull, 0x12e0b01abb051238ull, 0x15e034d40fa197aeull,
    0x314dffbe0815a3b4ull, 0x027990f029623981ull, 0xcadcd4e59ef40c4dull, 0x9abfd8766a33735cull,
    0x0e3ea96b5304a7d0ull, 0xad0c42d6fc585992ull, 0x187306c89bc215a9ull, 0xd4a60abcf3792b95ull,
    0xf935451de4f21df2ull, 0xa9538f0419755787ull, 0xdb9acddff56ca510ull, 0xd06c98cd5c0975ebull,
    0xe612a3cb9ecba951ull, 0xc766e62cfcadaf96ull, 0xee64435a9752fe72ull, 0xa192d576b245165aull,
    0x0a8787bf8ecb74b2ull, 0x81b3e73d20b49b6full, 0x7fa8220ba3b2eceaull, 0x245731c13ca42499ull,
    0xb78dbfaf3a8d83bdull, 0xea1ad565322a1a0bull, 0x60e61c23a3795013ull, 0x6606d7e446282b93ull,
    0x6ca4ecb15c5f91e1ull, 0x9f626da15c9625f3ull, 0xe51b38608ef25f57ull, 0x958a324ceb064572ull,
};

static uint8_t key[16], msg[64];

static void test_reference_vectors(void)
{
    for (int i = 0; i < 64; i++) {
        uint64_t h = bm_util_siphash24(key, msg, (size_t)i);
        BM_CHECK_MSG(h == reference[i], "length %d: %016llx, expected %016llx", i,
                     (unsigned long long)h, (unsigned long long)reference[i]);
    }
    BM_CHECK(bm_util_siphash24(key, NULL, 0) == reference[0]);
}

static void test_alignment(void)
{
    uint8_t *buf = malloc(64 + 8);
    for (int shift = 1; shift < 8; shift++) {
        memcpy(buf + shift, msg, 64);
        for (int i = 0; i < 64; i += 7)
            BM_CHECK(bm_util_siphash24(key, buf + shift, (size_t)i) == reference[i]);
    }
    free(buf);
}

static void test_sensitivity(void)
{
    uint64_t base = bm_util_siphash24(key, msg, 32);
    for (int bit = 0; bit < 128; bit++) {
        uint8_t k2[16];
        memcpy(k2, key, sizeof(k2));
        k2[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        BM_CHECK_MSG(bm_util_siphash24(k2, msg, 32) != base, "key bit %d ignored", bit);
    }
    for (int bit = 0; bit < 32 * 8; bit++) {
        uint8_t m2[32];
        memcpy(m2, msg, sizeof(m2));
        m2[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        BM_CHECK_MSG(bm_util_siphash24(key, m2, 32) != base, "message bit %d ignored", bit);
    }
}

/* The incremental form gives the reference value for every length cut
 * into every pair of pieces, and into single bytes. */
static void test_pieces(void)
{
    for (int len = 0; len < 64; len++) {
        for (int cut = 0; cut <= len; cut++) {
            struct bm_util_siphash h;
            bm_util_siphash24_init(&h, key);
            bm_util_siphash24_update(&h, msg, (size_t)cut);
            bm_util_siphash24_update(&h, msg + cut, (size_t)(len - cut));
            uint64_t v = bm_util_siphash24_final(&h);
            BM_CHECK_MSG(v == reference[len], "length %d cut at %d: %016llx", len, cut,
                         (unsigned long long)v);
        }
        struct bm_util_siphash h;
        bm_util_siphash24_init(&h, key);
        for (int i = 0; i < len; i++)
            bm_util_siphash24_update(&h, msg + i, 1);
        BM_CHECK(bm_util_siphash24_final(&h) == reference[len]);
    }
}

/* Keys derived from a secret: fixed for a secret and label, different for
 * another label or another secret (a bit anywhere in it). */
static void test_derive(void)
{
    uint8_t secret[32], a[16], b[16], c[16];
    for (int i = 0; i < 32; i++)
        secret[i] = (uint8_t)(i * 7 + 1);
    bm_util_siphash_derive(secret, sizeof(secret), "one", a);
    bm_util_siphash_derive(secret, sizeof(secret), "one", b);
    BM_CHECK(memcmp(a, b, 16) == 0);
    bm_util_siphash_derive(secret, sizeof(secret), "two", c);
    BM_CHECK(memcmp(a, c, 16) != 0);
    BM_CHECK(memcmp(a, a + 8, 8) != 0); /* the two words differ */
    for (int bit = 0; bit < 256; bit += 37) {
        secret[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        bm_util_siphash_derive(secret, sizeof(secret), "one", c);
        BM_CHECK(memcmp(a, c, 16) != 0);
        secret[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    bm_util_siphash_derive(secret, 16, "one", c); /* a 16-byte secret: the key alone */
    BM_CHECK(memcmp(a, c, 16) != 0);
}

int main(void)
{
    for (int i = 0; i < 16; i++)
        key[i] = (uint8_t)i;
    for (int i = 0; i < 64; i++)
        msg[i] = (uint8_t)i;
    BM_RUN(test_reference_vectors);
    BM_RUN(test_alignment);
    BM_RUN(test_sensitivity);
    BM_RUN(test_pieces);
    BM_RUN(test_derive);
    return bm_test_summary("test_siphash");
}
