/* Minimal test harness shared by every C test: checks that record failures
 * with file and line instead of aborting, and a summary line in the form CI
 * reads ("N passed, N failed"). A test program returns bm_test_summary() from
 * main, so ctest sees a non-zero exit when any check failed. */
#ifndef BM_TEST_H
#define BM_TEST_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

extern int bm_test_passed;
extern int bm_test_failed;
extern const char *bm_test_current;

void bm_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prints "name: N passed, N failed" and returns the process exit code. */
int bm_test_summary(const char *name);

/* Test data: bm_test_fill writes len bytes of a pattern that depends on seed
 * and on each byte's position, so that a shifted, truncated or wrong message
 * differs from it; bm_test_bad_bytes counts the bytes of b that differ. */
void bm_test_fill(void *b, size_t len, int seed);
size_t bm_test_bad_bytes(const void *b, size_t len, int seed);

/* Binds the calling thread to the lowest CPU it may run on (call it before
 * MPI_Init in every rank: they then share one CPU, so the host has more
 * ranks than cores wherever the test runs); false when no CPU took it. */
bool bm_test_bind_lowest_cpu(void);

#define BM_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (cond)                                                                                  \
            bm_test_passed++;                                                                      \
        else                                                                                       \
            bm_test_fail(__FILE__, __LINE__, "check failed: %s", #cond);                           \
    } while (0)

#define BM_CHECK_MSG(cond, ...)                                                                    \
    do {                                                                                           \
        if (cond)                                                                                  \
            bm_test_passed++;                                                                      \
        else                                                                                       \
            bm_test_fail(__FILE__, __LINE__, __VA_ARGS__);                                         \
    } while (0)

#define BM_CHECK_EQ_INT(a, b)                                                                      \
    do {                                                                                           \
        long long bm_a_ = (long long)(a), bm_b_ = (long long)(b);                                  \
        if (bm_a_ == bm_b_)                                                                        \
            bm_test_passed++;                                                                      \
        else                                                                                       \
            bm_test_fail(__FILE__, __LINE__, "%s == %s failed: %lld != %lld", #a, #b, bm_a_,       \
                         bm_b_);                                                                   \
    } while (0)

#define BM_CHECK_STR(a, b)                                                                         \
    do {                                                                                           \
        const char *bm_a_ = (a), *bm_b_ = (b);                                                     \
        if (bm_a_ && bm_b_ && strcmp(bm_a_, bm_b_) == 0)                                           \
            bm_test_passed++;                                                                      \
        else                                                                                       \
            bm_test_fail(__FILE__, __LINE__, "%s == %s failed: '%s' != '%s'", #a, #b,              \
                         bm_a_ ? bm_a_ : "(null)", bm_b_ ? bm_b_ : "(null)");                      \
    } while (0)

/* Run one test function, naming it in failure messages. With
 * BM_TEST_TIMES=1 in the environment each prints its wall time to stderr
 * (to find what makes a test slow). */
void bm_test_time(const char *name, double start);
double bm_test_now(void);
#define BM_RUN(fn)                                                                                 \
    do {                                                                                           \
        double bm_t_ = bm_test_now();                                                              \
        bm_test_current = #fn;                                                                     \
        fn();                                                                                      \
        bm_test_time(#fn, bm_t_);                                                                  \
    } while (0)

#endif
