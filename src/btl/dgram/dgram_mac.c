/* The MAC that authenticates every dgram datagram (BM_BTL_DGRAM_AUTH;
 * dgram_proto.h says where it travels). Hash-then-PRF, as UMAC does: the
 * payload is compressed 2048 bytes at a time by NH (Black et al., "UMAC:
 * fast and secure message authentication", 1999) with 32-bit words, run
 * twice with the key shifted by two words (the paper's Toeplitz
 * construction, NH^T with t = 2, as UMAC-64 does): its two 64-bit results
 * are, for two different blocks of one length, both equal with
 * probability at most 2^-64 over the secret NH key; SipHash-2-4 (a PRF)
 * then takes the whole header (fields as dgram_proto.h says, payload length
 * included, so blocks padded with zeros cannot be confused with longer
 * ones) followed by the block results. A forger who knows neither key has
 * a 2^-64 chance per attempt. Measured: NH + SipHash runs faster than the
 * CRC-32C it replaces (about 2.4 GB/s against 1.8 GB/s on 64 KB datagrams
 * on the test machine; SipHash over every byte: 0.3 GB/s, which cut the
 * transport's bandwidth by more than half). The NH key is expanded from the
 * 16-byte module key with SipHash in counter mode, with inputs that no
 * datagram MAC can have (19 bytes; a MAC's input is 24 bytes, mac_small,
 * or starts with a header of 40 bytes or more). */
#include "btl/dgram/dgram.h"
#include "util/siphash.h"

#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define NH_X86 1
#endif

void bm_btl_dgram_mac_expand(const uint8_t key[16], uint64_t nh_key[BM_DGRAM_NH_WORDS])
{
    uint8_t in[19] = "bm-dgram-nh-key";
    for (uint32_t i = 0; i < BM_DGRAM_NH_WORDS; i++) {
        memcpy(in + 15, &i, sizeof(i));
        nh_key[i] = bm_util_siphash24(key, in, sizeof(in));
    }
}

/* NH^T of one block of n <= BM_DGRAM_NH_BLOCK bytes, zero-padded to a
 * multiple of 8: the block's 32-bit words m[0..2r) (host order) and the
 * key's k[0..2r+2) (key word j is the low half of nh_key[j / 2] for even
 * j, the high half for odd j), additions mod 2^32, products and sums mod
 * 2^64:
 *   out[t] = sum over i < r of (m[2i] + k[2i + 2t]) * (m[2i+1] + k[2i+1 + 2t]),  t = 0, 1.
 * The NH of the first version, 64-bit words with 128-bit products (the
 * same 2^-64 bound from one pass), needs a 64 x 64 -> 128-bit multiply per
 * 16 bytes, which no vector unit has; 32 x 32 -> 64-bit ones (pmuludq) come
 * eight to an AVX-512 instruction. Per 64944-byte datagram, cache-hot
 * (medians of 7 x 1000, chrt, the whole MAC with SipHash): 512-byte blocks
 * of 64-bit NH 3.45 us; 2048-byte blocks 2.6 us (SipHash takes 16 bytes
 * per block: a quarter of the words); 32-bit NH^T with AVX-512 and 2048-byte
 * blocks 1.25 us. This portable form is the definition, and what small
 * datagrams and CPUs without AVX2 use. */
static inline uint64_t nh_pair(uint32_t m0, uint32_t m1, uint64_t k)
{
    return (uint64_t)(uint32_t)(m0 + (uint32_t)k) * (uint32_t)(m1 + (uint32_t)(k >> 32));
}

static void nh_portable(const uint64_t *key, const uint8_t *p, size_t n, uint64_t out[2])
{
    uint64_t h0 = 0, h1 = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint32_t m[2];
        memcpy(m, p + i, sizeof(m));
        h0 += nh_pair(m[0], m[1], key[i / 8]);
        h1 += nh_pair(m[0], m[1], key[i / 8 + 1]);
    }
    if (i < n) {
        uint32_t m[2] = {0, 0};
        memcpy(m, p + i, n - i);
        h0 += nh_pair(m[0], m[1], key[i / 8]);
        h1 += nh_pair(m[0], m[1], key[i / 8 + 1]);
    }
    out[0] = h0;
    out[1] = h1;
}

/* How far ahead NH asks for the payload's cache lines. A sender's MAC is
 * the first touch of the caller's buffer (a 1 MiB message of bm_bw's window
 * is long out of the cache): without it each line came on demand and the
 * loop waited for memory. Per 64944-byte datagram from a 64 MiB buffer
 * (medians of 4000, load 16): 9.6-9.9 us without, 4.7-6.5 us at 1-4 KiB
 * ahead, in cache 2.7 us either way. A prefetch past the end of the payload
 * is harmless (a hint, never a fault) and mostly useful: a fragment's next
 * chunk follows it in memory. */
#define NH_PREFETCH 2048

#ifdef NH_X86
/* The vector forms: x = m + k and y = m + k shifted (vpaddd), each 64-bit
 * lane's even word times its odd word (vpsrlq 32, vpmuludq), summed per
 * lane (vpaddq); the lanes are added at the end and the rest of the block
 * (under one step) goes the portable way. Key words are read from
 * nh_key's memory, whose 32-bit halves are the key words above on this
 * little-endian machine. */
/* SSE2, in every x86-64: two products per instruction. */
static void nh_sse2(const uint64_t *key, const uint8_t *p, size_t n, uint64_t out[2])
{
    const uint8_t *k = (const uint8_t *)key;
    __m128i a0 = _mm_setzero_si128(), a1 = a0, b0 = a0, b1 = a0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        if (i % 64 == 0)
            _mm_prefetch((const char *)p + i + NH_PREFETCH, _MM_HINT_T0);
        __m128i m = _mm_loadu_si128((const __m128i *)(p + i));
        __m128i m2 = _mm_loadu_si128((const __m128i *)(p + i + 16));
        __m128i x = _mm_add_epi32(m, _mm_loadu_si128((const __m128i *)(k + i)));
        __m128i y = _mm_add_epi32(m, _mm_loadu_si128((const __m128i *)(k + i + 8)));
        __m128i x2 = _mm_add_epi32(m2, _mm_loadu_si128((const __m128i *)(k + i + 16)));
        __m128i y2 = _mm_add_epi32(m2, _mm_loadu_si128((const __m128i *)(k + i + 24)));
        a0 = _mm_add_epi64(a0, _mm_mul_epu32(x, _mm_srli_epi64(x, 32)));
        a1 = _mm_add_epi64(a1, _mm_mul_epu32(y, _mm_srli_epi64(y, 32)));
        b0 = _mm_add_epi64(b0, _mm_mul_epu32(x2, _mm_srli_epi64(x2, 32)));
        b1 = _mm_add_epi64(b1, _mm_mul_epu32(y2, _mm_srli_epi64(y2, 32)));
    }
    uint64_t t0[2], t1[2], r[2];
    _mm_storeu_si128((__m128i *)t0, _mm_add_epi64(a0, b0));
    _mm_storeu_si128((__m128i *)t1, _mm_add_epi64(a1, b1));
    nh_portable(key + i / 8, p + i, n - i, r);
    out[0] = t0[0] + t0[1] + r[0];
    out[1] = t1[0] + t1[1] + r[1];
}

__attribute__((target("avx2"))) static void nh_avx2(const uint64_t *key, const uint8_t *p, size_t n,
                                                    uint64_t out[2])
{
    const uint8_t *k = (const uint8_t *)key;
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, b0 = a0, b1 = a0;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        _mm_prefetch((const char *)p + i + NH_PREFETCH, _MM_HINT_T0);
        __m256i m = _mm256_loadu_si256((const __m256i *)(p + i));
        __m256i m2 = _mm256_loadu_si256((const __m256i *)(p + i + 32));
        __m256i x = _mm256_add_epi32(m, _mm256_loadu_si256((const __m256i *)(k + i)));
        __m256i y = _mm256_add_epi32(m, _mm256_loadu_si256((const __m256i *)(k + i + 8)));
        __m256i x2 = _mm256_add_epi32(m2, _mm256_loadu_si256((const __m256i *)(k + i + 32)));
        __m256i y2 = _mm256_add_epi32(m2, _mm256_loadu_si256((const __m256i *)(k + i + 40)));
        a0 = _mm256_add_epi64(a0, _mm256_mul_epu32(x, _mm256_srli_epi64(x, 32)));
        a1 = _mm256_add_epi64(a1, _mm256_mul_epu32(y, _mm256_srli_epi64(y, 32)));
        b0 = _mm256_add_epi64(b0, _mm256_mul_epu32(x2, _mm256_srli_epi64(x2, 32)));
        b1 = _mm256_add_epi64(b1, _mm256_mul_epu32(y2, _mm256_srli_epi64(y2, 32)));
    }
    uint64_t t0[4], t1[4], r[2];
    _mm256_storeu_si256((__m256i *)t0, _mm256_add_epi64(a0, b0));
    _mm256_storeu_si256((__m256i *)t1, _mm256_add_epi64(a1, b1));
    nh_portable(key + i / 8, p + i, n - i, r);
    out[0] = t0[0] + t0[1] + t0[2] + t0[3] + r[0];
    out[1] = t1[0] + t1[1] + t1[2] + t1[3] + r[1];
}

__attribute__((target("avx512f"))) static void nh_avx512(const uint64_t *key, const uint8_t *p,
                                                         size_t n, uint64_t out[2])
{
    const uint8_t *k = (const uint8_t *)key;
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, b0 = a0, b1 = a0;
    size_t i = 0;
    for (; i + 128 <= n; i += 128) {
        _mm_prefetch((const char *)p + i + NH_PREFETCH, _MM_HINT_T0);
        _mm_prefetch((const char *)p + i + NH_PREFETCH + 64, _MM_HINT_T0);
        __m512i m = _mm512_loadu_si512((const void *)(p + i));
        __m512i m2 = _mm512_loadu_si512((const void *)(p + i + 64));
        __m512i x = _mm512_add_epi32(m, _mm512_loadu_si512((const void *)(k + i)));
        __m512i y = _mm512_add_epi32(m, _mm512_loadu_si512((const void *)(k + i + 8)));
        __m512i x2 = _mm512_add_epi32(m2, _mm512_loadu_si512((const void *)(k + i + 64)));
        __m512i y2 = _mm512_add_epi32(m2, _mm512_loadu_si512((const void *)(k + i + 72)));
        a0 = _mm512_add_epi64(a0, _mm512_mul_epu32(x, _mm512_srli_epi64(x, 32)));
        a1 = _mm512_add_epi64(a1, _mm512_mul_epu32(y, _mm512_srli_epi64(y, 32)));
        b0 = _mm512_add_epi64(b0, _mm512_mul_epu32(x2, _mm512_srli_epi64(x2, 32)));
        b1 = _mm512_add_epi64(b1, _mm512_mul_epu32(y2, _mm512_srli_epi64(y2, 32)));
    }
    /* lanes summed as unsigned words: _mm512_reduce_add_epi64 adds them
     * as signed ones, whose overflow is undefined (UBSan says so) */
    uint64_t t0[8], t1[8], r[2];
    _mm512_storeu_si512((void *)t0, _mm512_add_epi64(a0, b0));
    _mm512_storeu_si512((void *)t1, _mm512_add_epi64(a1, b1));
    nh_portable(key + i / 8, p + i, n - i, r);
    out[0] = r[0];
    out[1] = r[1];
    for (int l = 0; l < 8; l++) {
        out[0] += t0[l];
        out[1] += t1[l];
    }
}
#endif

/* The NH code in use: -1 until the first MAC picks the best this CPU runs
 * (bm_btl_dgram_mac_use). Every form gives the same value. */
static int nh_impl = -1;

static bool nh_available(int impl)
{
    switch (impl) {
    case 0:
        return true;
#ifdef NH_X86
    case 1:
        return true; /* SSE2 */
    case 2:
        return __builtin_cpu_supports("avx2");
    case 3:
        return __builtin_cpu_supports("avx512f");
#endif
    default:
        return false;
    }
}

bool bm_btl_dgram_mac_use(int impl)
{
    if (impl < 0) {
        nh_impl = nh_available(3) ? 3 : nh_available(2) ? 2 : nh_available(1) ? 1 : 0;
        return true;
    }
    if (!nh_available(impl))
        return false;
    nh_impl = impl;
    return true;
}

static void nh_block(const uint64_t *key, const uint8_t *p, size_t n, uint64_t out[2])
{
    int impl = __atomic_load_n(&nh_impl, __ATOMIC_RELAXED);
    if (impl < 0) {
        bm_btl_dgram_mac_use(-1);
        impl = __atomic_load_n(&nh_impl, __ATOMIC_RELAXED);
    }
#ifdef NH_X86
    if (impl == 3) {
        nh_avx512(key, p, n, out);
        return;
    }
    if (impl == 2) {
        nh_avx2(key, p, n, out);
        return;
    }
    if (impl == 1) {
        nh_sse2(key, p, n, out);
        return;
    }
#endif
    nh_portable(key, p, n, out);
}

/* A datagram whose header and payload fit BM_DGRAM_NH_SMALL bytes (a
 * small FRAG: the 8-byte message's 48 bytes) is hashed whole by NH, and SipHash
 * takes only the 16-byte result and the length (3 words and the final one:
 * 12 SipRounds, where the header's 5-9 words, the block result's 2 and the
 * final one took 20-28). Same
 * bound: two different messages of one length collide under NH with
 * probability at most 2^-64, different lengths differ in the PRF's input,
 * and the PRF's inputs here (24 bytes) have a length that no input of the
 * general form (header of 40 bytes or more, then block results) or of the
 * key expansion (19 bytes) has, so the forms cannot be confused. Measured
 * (callgrind, 40-byte header): 517 -> 355 instructions per MAC of an 8-byte
 * payload, 642 -> 555 at 256 bytes; an empty payload (ACKs, PINGs) keeps
 * the general form, which is as cheap there (354 against 375). */
static uint64_t mac_small(const uint8_t key[16], const uint64_t nh_key[BM_DGRAM_NH_WORDS],
                          const void *hdr, size_t hdr_len, const void *payload, size_t len)
{
    uint8_t m[BM_DGRAM_NH_SMALL];
    memcpy(m, hdr, hdr_len);
    if (len)
        memcpy(m + hdr_len, payload, len);
    uint64_t in[3];
    nh_portable(nh_key, m, hdr_len + len, in);
    in[2] = (uint64_t)(hdr_len + len);
    return bm_util_siphash24(key, in, sizeof(in));
}

uint64_t bm_btl_dgram_mac(const uint8_t key[16], const uint64_t nh_key[BM_DGRAM_NH_WORDS],
                          const void *hdr, size_t hdr_len, const void *payload, size_t len)
{
    if (len && hdr_len + len <= BM_DGRAM_NH_SMALL)
        return mac_small(key, nh_key, hdr, hdr_len, payload, len);
    struct bm_util_siphash h;
    bm_util_siphash24_init(&h, key);
    bm_util_siphash24_update(&h, hdr, hdr_len);
    const uint8_t *p = payload;
    for (size_t o = 0; o < len; o += BM_DGRAM_NH_BLOCK) {
        uint64_t d[2];
        nh_block(nh_key, p + o, len - o < BM_DGRAM_NH_BLOCK ? len - o : BM_DGRAM_NH_BLOCK, d);
        bm_util_siphash24_update(&h, d, sizeof(d));
    }
    return bm_util_siphash24_final(&h);
}
