/* Tests of the TCP congestion control helper (src/util/tcpcc.h) shared by
 * the tcp transport and the ofi transport's socket providers: what each
 * setting names on loopback and off it, that the algorithm lands on a real
 * socket (read back with getsockopt), and that an algorithm the kernel
 * refuses is warned once per flag, under the setting's name, and never for
 * auto. */
#include "util/tcpcc.h"

#include "bm_test.h"
#include "util_capture.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void test_names(void)
{
    BM_CHECK(bm_util_tcpcc_name(NULL, true) == NULL);
    BM_CHECK(bm_util_tcpcc_name("", true) == NULL);
    BM_CHECK(bm_util_tcpcc_name("default", true) == NULL);
    BM_CHECK(bm_util_tcpcc_name("default", false) == NULL);
    BM_CHECK_STR(bm_util_tcpcc_name("auto", true), "reno");
    BM_CHECK(bm_util_tcpcc_name("auto", false) == NULL);
    BM_CHECK_STR(bm_util_tcpcc_name("cubic", true), "cubic");
    BM_CHECK_STR(bm_util_tcpcc_name("cubic", false), "cubic");
    BM_CHECK(bm_util_tcpcc_auto("auto"));
    BM_CHECK(!bm_util_tcpcc_auto("reno"));
    BM_CHECK(!bm_util_tcpcc_auto(NULL));
}

static void current(int fd, char *out, size_t n)
{
    socklen_t l = (socklen_t)(n - 1);
    memset(out, 0, n);
    BM_CHECK(getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, out, &l) == 0);
}

static void test_set(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    BM_CHECK(fd >= 0);
    bool told = false;
    char cur[16];
    /* reno is always allowed (tcp_allowed_congestion_control has it) */
    BM_CHECK(bm_util_tcpcc_set(fd, "reno", "auto", &told, "BM_TEST_CC", 0, "links"));
    current(fd, cur, sizeof(cur));
    BM_CHECK_STR(cur, "reno");
    BM_CHECK(!told);
    close(fd);
}

static void test_refused(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    BM_CHECK(fd >= 0);
    bool told = false;
    struct capture c;
    capture_begin(&c);
    bool a = bm_util_tcpcc_set(fd, "nonesuch", "nonesuch", &told, "BM_TEST_CC", 3, "links");
    bool b = bm_util_tcpcc_set(fd, "nonesuch", "nonesuch", &told, "BM_TEST_CC", 3, "links");
    const char *text = capture_end(&c);
    BM_CHECK(!a && !b);
    BM_CHECK(told);
    const char *first =
        strstr(text, "BM_TEST_CC=nonesuch: the kernel refused it on rank 3's links");
    BM_CHECK_MSG(first != NULL, "warning: \"%s\"", text);
    BM_CHECK_MSG(first && !strstr(first + 1, "BM_TEST_CC=nonesuch"), "warned twice: \"%s\"", text);
    /* auto's reno refused (a kernel without reno): quiet */
    told = false;
    capture_begin(&c);
    bool d = bm_util_tcpcc_set(fd, "nonesuch", "auto", &told, "BM_TEST_CC", 3, "links");
    text = capture_end(&c);
    BM_CHECK(!d && !told);
    BM_CHECK_MSG(!strstr(text, "BM_TEST_CC"), "auto warned: \"%s\"", text);
    close(fd);
}

int main(void)
{
    BM_RUN(test_names);
    BM_RUN(test_set);
    BM_RUN(test_refused);
    return bm_test_summary("test_tcpcc");
}
