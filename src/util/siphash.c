/* SipHash-2-4 (see siphash.h): two compression rounds per 8-byte word, four
 * finalization rounds, written from the algorithm's description in the
 * paper; byte order is fixed (little-endian loads), so hosts of any
 * endianness agree. */
#include "util/siphash.h"

static inline uint64_t siphash_rotl(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

static inline uint64_t siphash_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

struct siphash_state {
    uint64_t v0, v1, v2, v3;
};

static inline void siphash_round(struct siphash_state *s)
{
    s->v0 += s->v1;
    s->v1 = siphash_rotl(s->v1, 13);
    s->v1 ^= s->v0;
    s->v0 = siphash_rotl(s->v0, 32);
    s->v2 += s->v3;
    s->v3 = siphash_rotl(s->v3, 16);
    s->v3 ^= s->v2;
    s->v0 += s->v3;
    s->v3 = siphash_rotl(s->v3, 21);
    s->v3 ^= s->v0;
    s->v2 += s->v1;
    s->v1 = siphash_rotl(s->v1, 17);
    s->v1 ^= s->v2;
    s->v2 = siphash_rotl(s->v2, 32);
}

/* One message word: two compression rounds. */
static inline void siphash_compress(struct siphash_state *s, uint64_t m)
{
    s->v3 ^= m;
    siphash_round(s);
    siphash_round(s);
    s->v0 ^= m;
}

uint64_t bm_util_siphash24(const uint8_t key[16], const void *msg, size_t len)
{
    const uint8_t *in = msg;
    uint64_t k0 = siphash_le64(key), k1 = siphash_le64(key + 8);
    /* "somepseudorandomlygeneratedbytes" */
    struct siphash_state s = {
        .v0 = 0x736f6d6570736575ull ^ k0,
        .v1 = 0x646f72616e646f6dull ^ k1,
        .v2 = 0x6c7967656e657261ull ^ k0,
        .v3 = 0x7465646279746573ull ^ k1,
    };
    size_t full = len & ~(size_t)7;
    for (size_t i = 0; i < full; i += 8)
        siphash_compress(&s, siphash_le64(in + i));
    /* The last word: the remaining bytes, and the length's low byte on top. */
    uint64_t b = (uint64_t)len << 56;
    for (size_t i = 0; i < (len & 7); i++)
        b |= (uint64_t)in[full + i] << (8 * i);
    siphash_compress(&s, b);
    s.v2 ^= 0xff;
    for (int r = 0; r < 4; r++)
        siphash_round(&s);
    return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}
