/* Time for timers and timeouts. bm_util_clock_ns() is CLOCK_MONOTONIC in
 * nanoseconds: exact, 25-37 ns per call on the test bed (vDSO). bm_util_clock_now_ns()
 * is the cheap clock for hot paths (retransmission timers, progress loops):
 * on x86-64, when the kernel itself uses the TSC as its clocksource (which
 * means the TSC is invariant and synchronised across CPUs), it reads the TSC
 * (about 14 ns per call there) and converts with a rate calibrated against
 * CLOCK_MONOTONIC; otherwise it is CLOCK_MONOTONIC. CLOCK_MONOTONIC_COARSE
 * was measured and rejected: its resolution is one jiffy (4 ms here), too
 * coarse for the 1..5 ms retransmission timers it would drive.
 *
 * Both clocks share the same epoch (the boot-time base of CLOCK_MONOTONIC)
 * and agree to within a few microseconds; the cheap clock's rate is
 * calibrated over at least 20 ms (a few ppm). Calibration is lazy and
 * costs nothing extra: for the first 20 ms after the first call, the cheap
 * clock is CLOCK_MONOTONIC. Both are monotonic per thread. Thread-safe.
 * BM_UTIL_CLOCK_SOURCE=monotonic forces the fallback. */
#ifndef BM_UTIL_CLOCK_H
#define BM_UTIL_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

static inline uint64_t bm_util_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The calibrated TSC conversion; private to clock.c and this header. */
struct bm_util_clock_tsc {
    atomic_int ready;  /* 1 once the fields below are valid (release/acquire) */
    uint64_t base_tsc; /* TSC at the second calibration point */
    uint64_t base_ns;  /* CLOCK_MONOTONIC at that point */
    uint64_t mult;     /* ns per TSC tick as a 32.32 fixed-point number */
};
extern struct bm_util_clock_tsc bm_util_clock_tsc_;

/* Slow path: calibrate when due, and return CLOCK_MONOTONIC meanwhile. */
uint64_t bm_util_clock_now_slow_(void);

#if defined(__x86_64__)
static inline uint64_t bm_util_clock_rdtsc_(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

/* Monotonic nanoseconds, cheap: see the file comment. */
static inline uint64_t bm_util_clock_now_ns(void)
{
    const struct bm_util_clock_tsc *c = &bm_util_clock_tsc_;
    if (__builtin_expect(!atomic_load_explicit(&bm_util_clock_tsc_.ready, memory_order_acquire), 0))
        return bm_util_clock_now_slow_();
    int64_t d = (int64_t)(bm_util_clock_rdtsc_() - c->base_tsc);
    /* rdtsc is not ordered after the load above: clamp a read from just
     * before calibration finished. */
    if (__builtin_expect(d < 0, 0))
        d = 0;
    return c->base_ns + (uint64_t)(((unsigned __int128)d * c->mult) >> 32);
}
#else
static inline uint64_t bm_util_clock_now_ns(void)
{
    return bm_util_clock_ns();
}
#endif

/* "tsc", "monotonic", or "monotonic (calibrating tsc)": for bm_info and tests. */
const char *bm_util_clock_source(void);

#endif
