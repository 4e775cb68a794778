/* CRC-32C with the reflected polynomial 0x82F63B78. The table version
 * processes 8 bytes per step (slicing-by-8); on x86-64 with SSE4.2 the
 * crc32 instruction does the same 8 bytes in one step, about ten times
 * faster, which matters when every datagram of a multi-GB/s stream is
 * checked on both sides. The choice is made once, at the first call. */
#include "util/crc32c.h"

#include <string.h>

#define POLY 0x82F63B78u

static uint32_t table[8][256];
static int table_ready;

static void table_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
    __atomic_store_n(&table_ready, 1, __ATOMIC_RELEASE);
}

uint32_t bm_util_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
    if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE))
        table_init(); /* idempotent: racing threads write the same values */
    const uint8_t *p = buf;
    crc = ~crc;
    for (; len >= 8; len -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= crc; /* little-endian: the low 4 bytes meet the running CRC */
        crc = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^ table[5][(w >> 16) & 0xff] ^
              table[4][(w >> 24) & 0xff] ^ table[3][(w >> 32) & 0xff] ^ table[2][(w >> 40) & 0xff] ^
              table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
    }
    while (len--)
        crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
    return ~crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const void *buf,
                                                            size_t len)
{
    const uint8_t *p = buf;
    uint64_t c = ~crc;
    for (; len >= 8; len -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = __builtin_ia32_crc32di(c, w);
    }
    uint32_t c32 = (uint32_t)c;
    while (len--)
        c32 = __builtin_ia32_crc32qi(c32, *p++);
    return ~c32;
}

static int hw_state; /* 0: not probed, 1: yes, -1: no */

bool bm_util_crc32c_hw(void)
{
    int s = __atomic_load_n(&hw_state, __ATOMIC_RELAXED);
    if (s == 0) {
        __builtin_cpu_init();
        s = __builtin_cpu_supports("sse4.2") ? 1 : -1;
        __atomic_store_n(&hw_state, s, __ATOMIC_RELAXED);
    }
    return s > 0;
}

uint32_t bm_util_crc32c(uint32_t crc, const void *buf, size_t len)
{
    return bm_util_crc32c_hw() ? crc32c_hw(crc, buf, len) : bm_util_crc32c_sw(crc, buf, len);
}
#else
bool bm_util_crc32c_hw(void)
{
    return false;
}

uint32_t bm_util_crc32c(uint32_t crc, const void *buf, size_t len)
{
    return bm_util_crc32c_sw(crc, buf, len);
}
#endif
