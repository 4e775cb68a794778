/* Failure recording, the summary line, the test data pattern and the CPU
 * binding of tests/harness/bm_test.h. */
#include "bm_test.h"

#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>

int bm_test_passed;
int bm_test_failed;
const char *bm_test_current = "";

void bm_test_fail(const char *file, int line, const char *fmt, ...)
{
    bm_test_failed++;
    fprintf(stderr, "FAIL %s:%d [%s]: ", file, line, bm_test_current);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

double bm_test_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bm_test_time(const char *name, double start)
{
    const char *e = getenv("BM_TEST_TIMES");
    if (e && *e && *e != '0')
        fprintf(stderr, "%s: %.3f s\n", name, bm_test_now() - start);
}

int bm_test_summary(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, bm_test_passed, bm_test_failed);
    fflush(stdout);
    return bm_test_failed ? 1 : 0;
}

static unsigned char bm_test_pattern(size_t i, int seed)
{
    return (unsigned char)((i * 2654435761u) >> 13) ^ (unsigned char)(seed * 17 + (int)(i >> 16));
}

void bm_test_fill(void *b, size_t len, int seed)
{
    unsigned char *p = b;
    for (size_t i = 0; i < len; i++)
        p[i] = bm_test_pattern(i, seed);
}

size_t bm_test_bad_bytes(const void *b, size_t len, int seed)
{
    const unsigned char *p = b;
    size_t bad = 0;
    for (size_t i = 0; i < len; i++)
        bad += p[i] != bm_test_pattern(i, seed);
    return bad;
}

bool bm_test_bind_lowest_cpu(void)
{
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof(set), &set) == 0)
            return true;
    }
    return false;
}
