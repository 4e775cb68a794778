/* Tests of the logger (src/util/log.h): BM_VERBOSE parsing (one level for
 * all, per-subsystem rules, a name matching a whole layer or a last
 * component, bad tokens skipped instead of silencing errors and refused by
 * bm_util_log_spec_valid), the line
 * format "[host:pid(:rank)] subsys: level: text", errno kept across a log
 * call, long lines cut but still ended, and the rate limiter. */
#define BM_LOG_SUBSYS "btl/tcp"
#include "util/log.h"

#include "bm_test.h"
#include "util_capture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_levels(void)
{
    bm_util_log_configure(NULL);
    BM_CHECK(bm_util_log_enabled("pml", BM_LOG_WARN));
    BM_CHECK(!bm_util_log_enabled("pml", BM_LOG_INFO)); /* default: warnings */
    bm_util_log_configure("5");
    BM_CHECK(bm_util_log_enabled("anything/at/all", BM_LOG_TRACE));
    BM_CHECK_EQ_INT(bm_util_log_max_enabled, 5);
    bm_util_log_configure("1");
    BM_CHECK(!bm_util_log_enabled("pml", BM_LOG_WARN));
    BM_CHECK(bm_util_log_enabled("pml", BM_LOG_ERROR));
    bm_util_log_configure("dgram:5,pml:2");
    BM_CHECK(bm_util_log_enabled("btl/dgram", BM_LOG_TRACE)); /* last component */
    BM_CHECK(bm_util_log_enabled("dgram", BM_LOG_TRACE));
    BM_CHECK(bm_util_log_enabled("pml", BM_LOG_WARN));
    BM_CHECK(!bm_util_log_enabled("pml", BM_LOG_INFO));
    BM_CHECK(!bm_util_log_enabled("btl/tcp", BM_LOG_INFO));
    BM_CHECK_EQ_INT(bm_util_log_max_enabled, 5);
}

static void test_matching(void)
{
    bm_util_log_configure("btl:4");
    BM_CHECK(bm_util_log_enabled("btl/tcp", BM_LOG_DEBUG)); /* layer matches its components */
    BM_CHECK(bm_util_log_enabled("btl", BM_LOG_DEBUG));
    BM_CHECK(!bm_util_log_enabled("btlx/tcp", BM_LOG_DEBUG));
    BM_CHECK(!bm_util_log_enabled("pml", BM_LOG_DEBUG));
    bm_util_log_configure("tcp:5");
    BM_CHECK(bm_util_log_enabled("btl/tcp", BM_LOG_TRACE)); /* component matches its path */
    BM_CHECK(!bm_util_log_enabled("btl/tcpx", BM_LOG_TRACE));
    BM_CHECK(!bm_util_log_enabled("btl/sm", BM_LOG_INFO));
    bm_util_log_configure("btl:5,tcp:1"); /* the later rule wins */
    BM_CHECK(!bm_util_log_enabled("btl/tcp", BM_LOG_WARN));
    BM_CHECK(bm_util_log_enabled("btl/sm", BM_LOG_TRACE));
}

static void test_bad_spec(void)
{
    struct capture c;
    capture_begin(&c);
    bm_util_log_configure("abc,pml:x,sm:3");
    const char *out = capture_end(&c);
    /* skipped quietly: the parameter check reports it (and stops start-up) */
    BM_CHECK_STR(out, "");
    char err[256];
    BM_CHECK(!bm_util_log_spec_valid("abc,pml:x,sm:3", err, sizeof(err)));
    BM_CHECK(strstr(err, "'abc'") != NULL);
    BM_CHECK(bm_util_log_enabled("pml", BM_LOG_ERROR)); /* not silenced */
    BM_CHECK(bm_util_log_enabled("pml", BM_LOG_WARN));
    BM_CHECK(bm_util_log_enabled("btl/sm", BM_LOG_INFO));
    bm_util_log_configure("99");
    BM_CHECK(bm_util_log_enabled("x", BM_LOG_TRACE)); /* large means everything */
}

static void test_format_and_errno(void)
{
    char host[64] = "?";
    gethostname(host, sizeof(host) - 1);
    char *dot = strchr(host, '.');
    if (dot)
        *dot = '\0';
    char want[512];
    struct capture c;
    bm_util_log_configure("3");

    capture_begin(&c);
    errno = ENOSPC;
    bm_log_error("disk %s is full", "/dev/shm");
    int saved = errno;
    const char *out = capture_end(&c);
    BM_CHECK_EQ_INT(saved, ENOSPC);
    snprintf(want, sizeof(want), "[%s:%d] btl/tcp: error: disk /dev/shm is full\n", host,
             (int)getpid());
    BM_CHECK_STR(out, want);

    bm_util_log_set_rank(3);
    capture_begin(&c);
    bm_log_info("hello %d", 42);
    bm_log_debug("not shown at level 3");
    bm_log_warn("careful\n"); /* an explicit newline is not doubled */
    out = capture_end(&c);
    snprintf(want, sizeof(want),
             "[%s:%d:3] btl/tcp: hello 42\n[%s:%d:3] btl/tcp: warning: careful\n", host,
             (int)getpid(), host, (int)getpid());
    BM_CHECK_STR(out, want);
    char prefix[96];
    bm_util_log_prefix(prefix, sizeof(prefix));
    snprintf(want, sizeof(want), "[%s:%d:3]", host, (int)getpid());
    BM_CHECK_STR(prefix, want);
    bm_util_log_set_rank(-1);

    /* Lazy configuration inside a log call keeps errno too. */
    capture_begin(&c);
    errno = EINTR;
    bm_util_log_configure("x:y");
    saved = errno;
    capture_end(&c);
    BM_CHECK_EQ_INT(saved, EINTR);
}

static void test_long_line(void)
{
    static char big[5000];
    memset(big, 'x', sizeof(big) - 1);
    struct capture c;
    bm_util_log_configure("2");
    capture_begin(&c);
    bm_log_warn("%s", big);
    const char *out = capture_end(&c);
    size_t n = strlen(out);
    BM_CHECK(n > 1000 && n < 2048);
    BM_CHECK(n > 0 && out[n - 1] == '\n');
}

static void test_ratelimit(void)
{
    long long last = 0;
    BM_CHECK(bm_util_log_ratelimit(&last, 1000000000LL));
    BM_CHECK(!bm_util_log_ratelimit(&last, 1000000000LL));
    BM_CHECK(bm_util_log_ratelimit(&last, 0));
    struct capture c;
    capture_begin(&c);
    for (int i = 0; i < 5; i++)
        bm_log_ratelimited(BM_LOG_WARN, "flood %d", i);
    const char *out = capture_end(&c);
    BM_CHECK(strstr(out, "flood 0") && !strstr(out, "flood 1"));
}

static void test_env(void)
{
    setenv("BM_VERBOSE", "pml:4", 1);
    bm_util_log_configure(getenv("BM_VERBOSE"));
    BM_CHECK(bm_util_log_enabled("pml", BM_LOG_DEBUG));
    BM_CHECK(!bm_util_log_enabled("btl/tcp", BM_LOG_DEBUG));
    unsetenv("BM_VERBOSE");
}

int main(void)
{
    BM_RUN(test_levels);
    BM_RUN(test_matching);
    BM_RUN(test_bad_spec);
    BM_RUN(test_format_and_errno);
    BM_RUN(test_long_line);
    BM_RUN(test_ratelimit);
    BM_RUN(test_env);
    return bm_test_summary("test_util_log");
}
