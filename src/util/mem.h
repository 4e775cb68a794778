/* Memory helpers for hot paths. bm_util_zero clears with libc's memset,
 * out of line: for objects of a few hundred bytes compilers inline a
 * constant-size memset as "rep stos", whose start-up cost is tens of
 * cycles, while libc clears the same size with a handful of vector stores
 * (measured: 10% of the sm message rate went to one such memset).
 * bm_util_zero_fixed writes those vector stores inline for a fixed size.
 * bm_util_copy copies the few bytes of a small message inline, with
 * overlapping word moves, instead of a call into libc's memcpy with its
 * size dispatch; larger copies go to libc. bm_util_prefetchw asks for a
 * line's ownership before a store to it (a line another core last read). */
#ifndef BM_UTIL_MEM_H
#define BM_UTIL_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

void bm_util_zero(void *p, size_t n);

/* Clear n bytes (n >= 16) at p with 16-byte stores written out inline:
 * for fixed-size objects cleared once per message (a PML request's 300-odd
 * bytes: ~20 stores where two bm_util_zero calls into libc cost ~50
 * instructions). Vector stores, so neither "rep stos" nor a call: with a
 * constant n the loop unrolls completely. The last store may overlap the
 * one before it. */
typedef char bm_util_v16 __attribute__((vector_size(16), aligned(1), may_alias));
static inline __attribute__((always_inline)) void bm_util_zero_fixed(void *p, size_t n)
{
    char *c = p;
    size_t i = 0;
#pragma GCC unroll 32
    for (; i + 16 <= n; i += 16)
        *(bm_util_v16 *)(c + i) = (bm_util_v16){0};
    if (i < n)
        *(bm_util_v16 *)(c + n - 16) = (bm_util_v16){0};
}

/* Copy with stores that bypass the cache (x86-64; memcpy elsewhere), for
 * destinations too large to stay in cache: it saves the read of every
 * destination line that a normal store first fetches. */
void bm_util_copy_stream(void *dst, const void *src, size_t n);
/* The same without the closing store fence, for many copies in a row (the
 * blocks of a non-contiguous message): the caller calls
 * bm_util_stream_fence after the last one, before anything that publishes
 * the data. */
void bm_util_copy_stream_unfenced(void *dst, const void *src, size_t n);
void bm_util_stream_fence(void);

/* Start moving the line at p into this core's cache for writing, so that
 * a later store does not wait for its ownership (and hold every store
 * after it in the store buffer). */
static inline void bm_util_prefetchw(const void *p)
{
#if defined(__x86_64__) || defined(__i386__)
    /* PREFETCHW (a no-op on processors without it); __builtin_prefetch with
     * rw = 1 is a read prefetch unless the build targets PRFCHW. */
    __asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
#else
    __builtin_prefetch(p, 1, 3);
#endif
}

static inline void bm_util_copy(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (n > 32) {
        memcpy(d, s, n);
    } else if (n >= 16) {
        uint64_t a, b, c, e;
        memcpy(&a, s, 8);
        memcpy(&b, s + 8, 8);
        memcpy(&c, s + n - 16, 8);
        memcpy(&e, s + n - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + 8, &b, 8);
        memcpy(d + n - 16, &c, 8);
        memcpy(d + n - 8, &e, 8);
    } else if (n >= 8) {
        uint64_t a, e;
        memcpy(&a, s, 8);
        memcpy(&e, s + n - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + n - 8, &e, 8);
    } else if (n >= 4) {
        uint32_t a, e;
        memcpy(&a, s, 4);
        memcpy(&e, s + n - 4, 4);
        memcpy(d, &a, 4);
        memcpy(d + n - 4, &e, 4);
    } else {
        for (size_t i = 0; i < n; i++)
            d[i] = s[i];
    }
}

#endif
