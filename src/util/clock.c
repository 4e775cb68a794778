/* Calibration of the cheap clock (see clock.h). The first call takes one
 * (TSC, CLOCK_MONOTONIC) point; the first call at least 20 ms later takes a
 * second point and publishes the rate, after which bm_util_clock_now_ns()
 * never comes here again. Until then (and for good when the TSC is not
 * trusted) the answer is CLOCK_MONOTONIC. A small state machine driven by
 * compare-and-swap lets any thread do each step exactly once without a lock. */
#define BM_LOG_SUBSYS "util/clock"
#include "util/clock.h"
#include "util/log.h"
#include "util/params.h"

#include <stdio.h>
#include <string.h>

#define BM_CLOCK_CALIBRATE_NS  20000000ULL
#define BM_CLOCK_MAX_WINDOW_NS 2000ULL /* a calibration point read within 2 us */

enum clock_state {
    CLOCK_UNINIT,      /* nothing done yet */
    CLOCK_BUSY,        /* a thread is taking a calibration point */
    CLOCK_FIRST_POINT, /* first point taken; waiting for 20 ms to pass */
    CLOCK_TSC,         /* calibrated: the inline fast path is used */
    CLOCK_MONOTONIC_ONLY,
};

struct bm_util_clock_tsc bm_util_clock_tsc_;
static atomic_int clock_state;
static uint64_t clock_first_tsc, clock_first_ns;

struct clock_config {
    int source; /* 0 auto, 1 monotonic */
};

static const struct bm_param clock_params[] = {
    {"BM_UTIL_CLOCK_SOURCE", BM_PARAM_ENUM, "auto", 0, 0, "auto|monotonic",
     "Clock for timers on hot paths: 'auto' reads the CPU's time-stamp counter when the kernel "
     "trusts it (clocksource tsc) and CLOCK_MONOTONIC otherwise; 'monotonic' always uses "
     "CLOCK_MONOTONIC (slower, for debugging clock problems).",
     offsetof(struct clock_config, source), 0},
};
static const struct bm_param_table clock_table = {"util/clock", clock_params,
                                                  BM_PARAM_COUNT(clock_params)};
BM_PARAM_TABLE_REGISTER(clock_table);

#if defined(__x86_64__)
/* The kernel only keeps "tsc" as its clocksource when the TSC is invariant
 * and synchronised across CPUs, so its choice is the test we rely on. */
static bool clock_kernel_uses_tsc(void)
{
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (!f)
        return false;
    char buf[32] = "";
    bool tsc = fgets(buf, sizeof(buf), f) && strcmp(buf, "tsc\n") == 0;
    fclose(f);
    return tsc;
}

static bool clock_tsc_allowed(void)
{
    struct clock_config cfg = {0};
    if (bm_util_params_load(&clock_table, &cfg) != BM_OK || cfg.source == 1)
        return false;
    if (!clock_kernel_uses_tsc()) {
        bm_log_debug("kernel clocksource is not tsc: timers use CLOCK_MONOTONIC");
        return false;
    }
    return true;
}

/* One (TSC, CLOCK_MONOTONIC) point: the TSC read between two clock reads,
 * paired with the later one, so the line through two points is never
 * behind CLOCK_MONOTONIC. Of a few tries, the one with the narrowest
 * window wins; false when even that was stretched by preemption. */
static bool clock_sample(uint64_t *tsc_out, uint64_t *ns_out)
{
    uint64_t best_window = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t before = bm_util_clock_ns();
        uint64_t tsc = bm_util_clock_rdtsc_();
        uint64_t after = bm_util_clock_ns();
        if (after - before < best_window) {
            best_window = after - before;
            *tsc_out = tsc;
            *ns_out = after;
        }
    }
    return best_window <= BM_CLOCK_MAX_WINDOW_NS;
}

static void clock_set_state(int s)
{
    atomic_store_explicit(&clock_state, s, memory_order_release);
}

/* Runs in the one thread that moved the state to BUSY from UNINIT. */
static void clock_take_first_point(void)
{
    if (!clock_tsc_allowed())
        clock_set_state(CLOCK_MONOTONIC_ONLY);
    else if (!clock_sample(&clock_first_tsc, &clock_first_ns))
        clock_set_state(CLOCK_UNINIT); /* preempted: try again on a later call */
    else
        clock_set_state(CLOCK_FIRST_POINT);
}

/* Runs in the one thread that moved the state to BUSY from FIRST_POINT. */
static void clock_publish_rate(void)
{
    struct bm_util_clock_tsc *c = &bm_util_clock_tsc_;
    if (!clock_sample(&c->base_tsc, &c->base_ns)) {
        clock_set_state(CLOCK_FIRST_POINT);
        return;
    }
    if (c->base_tsc <= clock_first_tsc) {
        clock_set_state(CLOCK_MONOTONIC_ONLY); /* the TSC did not advance: distrust it */
        return;
    }
    uint64_t dtsc = c->base_tsc - clock_first_tsc;
    c->mult = (uint64_t)(((unsigned __int128)(c->base_ns - clock_first_ns) << 32) / dtsc);
    atomic_store_explicit(&c->ready, 1, memory_order_release);
    clock_set_state(CLOCK_TSC);
    bm_log_debug("tsc calibrated: %.6f ns per tick", (double)c->mult / 4294967296.0);
}

/* Move the state from `from` to BUSY; true when this thread won. */
static bool clock_claim(int from)
{
    return atomic_compare_exchange_strong_explicit(&clock_state, &from, CLOCK_BUSY,
                                                   memory_order_acquire, memory_order_relaxed);
}

uint64_t bm_util_clock_now_slow_(void)
{
    uint64_t now = bm_util_clock_ns();
    int s = atomic_load_explicit(&clock_state, memory_order_acquire);
    if (s == CLOCK_UNINIT && clock_claim(CLOCK_UNINIT))
        clock_take_first_point();
    else if (s == CLOCK_FIRST_POINT && now - clock_first_ns >= BM_CLOCK_CALIBRATE_NS &&
             clock_claim(CLOCK_FIRST_POINT))
        clock_publish_rate();
    return now;
}
#else
uint64_t bm_util_clock_now_slow_(void)
{
    return bm_util_clock_ns();
}
#endif

const char *bm_util_clock_source(void)
{
#if !defined(__x86_64__)
    return "monotonic";
#endif
    switch (atomic_load_explicit(&clock_state, memory_order_acquire)) {
    case CLOCK_TSC:
        return "tsc";
    case CLOCK_MONOTONIC_ONLY:
        return "monotonic";
    default:
        return "monotonic (calibrating tsc)";
    }
}
