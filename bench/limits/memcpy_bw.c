/* Single-thread copy bandwidth: the ceiling for any copy-in/copy-out
 * transport, which moves every byte with at least one copy. Two patterns:
 *   memcpy_<size>      one source and one destination of <size>, copied
 *                      again and again (cache-hot up to the cache size);
 *   memcpy_w64_<size>  64 distinct buffers of <size> on each side, copied
 *                      in turn, as bm_bw moves a window of 64 messages with
 *                      a buffer each (at 1 MiB and up, memory-bound).
 * Each value is the best of libc's memcpy and a copy with streaming stores
 * (which skip reading the destination lines first, faster once the
 * destination is not in cache), over several timed trials, in MB/s (1e6
 * bytes per second, as the MPI benchmarks use).
 * Usage: memcpy_bw [SECONDS_PER_TRIAL]. */
#include "limits_util.h"

#include <string.h>
#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define HAVE_STREAM 1
#endif

#define TRIALS 5
#define WINDOW 64

static void copy_stream(unsigned char *d, const unsigned char *s, size_t n)
{
#ifdef HAVE_STREAM
    /* buffers come from malloc (16-byte aligned) and n is a multiple of 64 */
    for (size_t i = 0; i < n; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(s + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(s + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + i + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + i + 48));
        _mm_stream_si128((__m128i *)(d + i), a);
        _mm_stream_si128((__m128i *)(d + i + 16), b);
        _mm_stream_si128((__m128i *)(d + i + 32), c);
        _mm_stream_si128((__m128i *)(d + i + 48), e);
    }
    _mm_sfence();
#else
    memcpy(d, s, n);
#endif
}

/* Best MB/s of TRIALS timed trials copying slot after slot of `slots`
 * buffers of n bytes, with memcpy or streaming stores. */
static double trial_best(unsigned char *src, unsigned char *dst, size_t n, int slots, int stream,
                         double seconds)
{
    double best = 0;
    unsigned sink = 0;
    for (int t = 0; t < TRIALS; t++) {
        long reps = 0;
        double t0 = bm_limits_now(), el;
        do {
            size_t off = (size_t)(reps % slots) * n;
            if (stream)
                copy_stream(dst + off, src + off, n);
            else
                memcpy(dst + off, src + off, n);
            /* Reading the copy keeps the compiler from dropping it. */
            sink += dst[off + (size_t)reps % n];
            src[off] = (unsigned char)reps;
            reps++;
        } while ((el = bm_limits_now() - t0) < seconds);
        double mbs = (double)n * (double)reps / el / 1e6;
        if (mbs > best)
            best = mbs;
    }
    if (sink == 0xdeadbeef)
        printf("#\n");
    return best;
}

static int measure(const char *name, size_t n, int slots, double seconds)
{
    size_t bytes = n * (size_t)slots;
    unsigned char *src = malloc(bytes), *dst = malloc(bytes);
    if (!src || !dst) {
        fprintf(stderr, "memcpy_bw: cannot allocate 2 x %zu bytes\n", bytes);
        return 1;
    }
    memset(src, 0x5a, bytes);
    memset(dst, 0, bytes);
    double plain = trial_best(src, dst, n, slots, 0, seconds);
    double stream = trial_best(src, dst, n, slots, 1, seconds);
    printf("# %s: memcpy %.0f MB/s, streaming stores %.0f MB/s\n", name, plain, stream);
    bm_limits_report(name, plain > stream ? plain : stream, "MB/s");
    free(src);
    free(dst);
    return 0;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? strtod(argv[1], NULL) : 0.1;
    static const size_t sizes[] = {64 << 10, 1 << 20, 4 << 20, 64 << 20};
    static const char *names[] = {"memcpy_64k", "memcpy_1m", "memcpy_4m", "memcpy_64m"};
    static const char *wnames[] = {"memcpy_w64_64k", "memcpy_w64_1m", "memcpy_w64_4m"};
    bm_limits_pin(0);
    printf("# single-thread copy between buffers, best of memcpy and streaming stores, best "
           "of %d trials of %.2g s\n",
           TRIALS, seconds);
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
        if (measure(names[k], sizes[k], 1, seconds))
            return 1;
    for (size_t k = 0; k < sizeof(wnames) / sizeof(wnames[0]); k++)
        if (measure(wnames[k], sizes[k], WINDOW, seconds))
            return 1;
    return 0;
}
