/* Failure recording and the summary line for tests/harness/bm_test.h. */
#include "bm_test.h"

#include <stdarg.h>

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

int bm_test_summary(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, bm_test_passed, bm_test_failed);
    fflush(stdout);
    return bm_test_failed ? 1 : 0;
}
