/* Tests of the clocks (src/util/clock.h): both are monotonic per thread,
 * also across the switch from CLOCK_MONOTONIC to the calibrated TSC while
 * two threads read it; the cheap clock agrees with CLOCK_MONOTONIC (each
 * cheap reading lies between two exact readings taken around it, within a
 * tolerance); and the source is the one the machine and
 * BM_UTIL_CLOCK_SOURCE call for. ctest runs it twice: default and with
 * BM_UTIL_CLOCK_SOURCE=monotonic. */
#include "util/clock.h"

#include "bm_test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOLERANCE_NS 20000ULL /* calibration error over a second is a few us */

static void *reader(void *arg)
{
    uint64_t *backwards = arg, prev = bm_util_clock_now_ns();
    uint64_t end = bm_util_clock_ns() + 60000000ULL; /* spans the 20 ms calibration */
    while (bm_util_clock_ns() < end) {
        for (int i = 0; i < 1000; i++) {
            uint64_t t = bm_util_clock_now_ns();
            *backwards += t < prev;
            prev = t;
        }
    }
    return NULL;
}

static void test_monotonic_across_calibration(void)
{
    pthread_t th[2];
    uint64_t backwards[2] = {0, 0};
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, reader, &backwards[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    BM_CHECK_EQ_INT(backwards[0], 0);
    BM_CHECK_EQ_INT(backwards[1], 0);
    uint64_t prev = bm_util_clock_ns(), bad = 0;
    for (int i = 0; i < 100000; i++) {
        uint64_t t = bm_util_clock_ns();
        bad += t < prev;
        prev = t;
    }
    BM_CHECK_EQ_INT(bad, 0);
}

static void test_agreement(void)
{
    int outside = 0;
    for (int i = 0; i < 10000; i++) {
        uint64_t a = bm_util_clock_ns();
        uint64_t c = bm_util_clock_now_ns();
        uint64_t b = bm_util_clock_ns();
        if (c + TOLERANCE_NS < a || c > b + TOLERANCE_NS) {
            if (!outside)
                fprintf(stderr, "cheap clock %llu outside [%llu, %llu]\n", (unsigned long long)c,
                        (unsigned long long)a, (unsigned long long)b);
            outside++;
        }
    }
    BM_CHECK_EQ_INT(outside, 0);
}

/* The source the environment calls for. */
static const char *expected_source(void)
{
    const char *env = getenv("BM_UTIL_CLOCK_SOURCE");
    if (env && strcmp(env, "monotonic") == 0)
        return "monotonic";
#if defined(__x86_64__)
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    char buf[32] = "";
    if (f) {
        if (!fgets(buf, sizeof(buf), f))
            buf[0] = '\0';
        fclose(f);
    }
    return strcmp(buf, "tsc\n") == 0 ? "tsc" : "monotonic";
#else
    return "monotonic";
#endif
}

static void test_source(void)
{
    printf("clock source: %s\n", bm_util_clock_source());
    BM_CHECK_STR(bm_util_clock_source(), expected_source());
}

int main(void)
{
#if defined(__x86_64__)
    BM_CHECK_STR(bm_util_clock_source(), "monotonic (calibrating tsc)"); /* nothing read yet */
#endif
    BM_RUN(test_monotonic_across_calibration);
    BM_RUN(test_agreement);
    BM_RUN(test_source);
    return bm_test_summary("test_util_clock");
}
