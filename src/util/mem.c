/* Out-of-line memory helpers (see mem.h for why each exists). */
#include "util/mem.h"

#include <string.h>

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define BM_UTIL_HAVE_STREAM 1
#endif

void bm_util_zero(void *p, size_t n)
{
    memset(p, 0, n);
}

#ifdef BM_UTIL_HAVE_STREAM
void bm_util_copy_stream_unfenced(void *dst, const void *src, size_t n)
{
    if (n < 256) {
        memcpy(dst, src, n);
        return;
    }
    unsigned char *d = dst;
    const unsigned char *s = src;
    /* streaming stores need a 16-byte aligned destination */
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    memcpy(d, s, head);
    d += head;
    s += head;
    n -= head;
    for (; n >= 64; n -= 64, d += 64, s += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)s);
        __m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_stream_si128((__m128i *)d, a);
        _mm_stream_si128((__m128i *)(d + 16), b);
        _mm_stream_si128((__m128i *)(d + 32), c);
        _mm_stream_si128((__m128i *)(d + 48), e);
    }
    memcpy(d, s, n);
}

void bm_util_stream_fence(void)
{
    _mm_sfence();
}
#else
void bm_util_copy_stream_unfenced(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}

void bm_util_stream_fence(void)
{
}
#endif

void bm_util_copy_stream(void *dst, const void *src, size_t n)
{
    bm_util_copy_stream_unfenced(dst, src, n);
    /* streaming stores are weakly ordered: make them visible before any
     * later store that publishes the data (a completed request) */
    bm_util_stream_fence();
}
