/* Unit test of the tcp transport's interface handling (no network traffic):
 * subnet matching, BM_BTL_TCP_IF_INCLUDE/_EXCLUDE parsing and filtering
 * (names and CIDR networks, both lists at once refused, malformed networks
 * refused), loopback kept only when asked for, the host identity used to
 * decide whether two processes share a loopback interface, and the kernel
 * route lookup used for pairing. */
#include "bm_test.h"
#include "btl/tcp/tcp.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

static struct bm_btl_tcp_config cfg(const char *inc, const char *exc)
{
    struct bm_btl_tcp_config c;
    memset(&c, 0, sizeof(c));
    c.if_include = inc;
    c.if_exclude = exc;
    return c;
}

static bool has_if(const struct bm_btl_tcp_if *ifs, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(ifs[i].name, name) == 0)
            return true;
    return false;
}

static void test_subnet(void)
{
    uint8_t net[16], a[16];
    inet_pton(AF_INET, "10.250.1.0", net);
    inet_pton(AF_INET, "10.250.1.77", a);
    BM_CHECK(bm_btl_tcp_if_in_subnet(AF_INET, net, 24, a));
    BM_CHECK(!bm_btl_tcp_if_in_subnet(AF_INET, net, 32, a));
    inet_pton(AF_INET, "10.250.2.1", a);
    BM_CHECK(!bm_btl_tcp_if_in_subnet(AF_INET, net, 24, a));
    BM_CHECK(bm_btl_tcp_if_in_subnet(AF_INET, net, 22, a)); /* 10.250.0.0/22 */
    BM_CHECK(bm_btl_tcp_if_in_subnet(AF_INET, net, 0, a));
    inet_pton(AF_INET6, "fd00:1::", net);
    inet_pton(AF_INET6, "fd00:1::5", a);
    BM_CHECK(bm_btl_tcp_if_in_subnet(AF_INET6, net, 64, a));
    inet_pton(AF_INET6, "fd00:2::5", a);
    BM_CHECK(!bm_btl_tcp_if_in_subnet(AF_INET6, net, 64, a));
    BM_CHECK(bm_btl_tcp_if_in_subnet(AF_INET6, net, 14, a)); /* fd00::/14 */
}

static void test_filters(void)
{
    struct bm_btl_tcp_if *ifs = NULL;
    int n = -1;
    struct bm_btl_tcp_config c = cfg("lo", "eth0");
    BM_CHECK_EQ_INT(bm_btl_tcp_if_discover(&c, false, &ifs, &n), BM_ERR_BAD_PARAM);
    c = cfg("10.0.0.0/33", "");
    BM_CHECK_EQ_INT(bm_btl_tcp_if_discover(&c, false, &ifs, &n), BM_ERR_BAD_PARAM);
    c = cfg("10.0.0.x/8", "");
    BM_CHECK_EQ_INT(bm_btl_tcp_if_discover(&c, false, &ifs, &n), BM_ERR_BAD_PARAM);
    c = cfg("lo,,eth0", "");
    BM_CHECK_EQ_INT(bm_btl_tcp_if_discover(&c, false, &ifs, &n), BM_ERR_BAD_PARAM);

    /* No filter, loopback not wanted: no loopback module. */
    c = cfg("", "");
    BM_CHECK_EQ_INT(bm_btl_tcp_if_discover(&c, false, &ifs, &n), BM_OK);
    for (int i = 0; i < n; i++)
        BM_CHECK_MSG(!ifs[i].loopback, "loopback %s kept without being asked for", ifs[i].name);
    free(ifs);
    /* Loopback wanted (sm excluded): lo is there, with 127.0.0.1/8. */
    BM_CHECK_EQ_INT(bm_btl_tcp_if_discover(&c, true, &ifs, &n), BM_OK);
    BM_CHECK(has_if(ifs, n, "lo"));
    for (int i = 0; i < n; i++) {
        if (strcmp(ifs[i].name, "lo") != 0)
            continue;
        BM_CHECK(ifs[i].loopback);
        BM_CHECK(ifs[i].naddrs >= 1 && ifs[i].naddrs <= BM_BTL_TCP_IF_MAX_ADDRS);
        BM_CHECK(ifs[i].bandwidth > 0);
        BM_CHECK(ifs[i].ifindex > 0);
        for (int k = 0; k < ifs[i].naddrs; k++)
            if (ifs[i].addrs[k].family == AF_INET)
                BM_CHECK_EQ_INT(ifs[i].addrs[k].prefixlen, 8);
    }
    free(ifs);
    /* A CIDR include selects by address, also for loopback. */
    c = cfg("127.0.0.0/8", "");
    BM_CHECK_EQ_INT(bm_btl_tcp_if_discover(&c, false, &ifs, &n), BM_OK);
    BM_CHECK_EQ_INT(n, 1);
    BM_CHECK(has_if(ifs, n, "lo"));
    if (n == 1) {
        BM_CHECK_EQ_INT(ifs[0].naddrs, 1); /* ::1 is not in 127.0.0.0/8 */
        BM_CHECK_EQ_INT(ifs[0].addrs[0].family, AF_INET);
    }
    free(ifs);
    /* Exclude by name. */
    c = cfg("", "lo");
    BM_CHECK_EQ_INT(bm_btl_tcp_if_discover(&c, true, &ifs, &n), BM_OK);
    BM_CHECK(!has_if(ifs, n, "lo"));
    free(ifs);
    /* An include naming nothing that exists: no interface, not an error. */
    c = cfg("bm-no-such-if0", "");
    BM_CHECK_EQ_INT(bm_btl_tcp_if_discover(&c, false, &ifs, &n), BM_OK);
    BM_CHECK_EQ_INT(n, 0);
    free(ifs);
}

static void test_host_and_route(void)
{
    uint8_t id1[16], id2[16];
    uint64_t ns1, ns2;
    bm_btl_tcp_if_host_id(id1, &ns1);
    bm_btl_tcp_if_host_id(id2, &ns2);
    BM_CHECK(memcmp(id1, id2, 16) == 0 && ns1 == ns2);
    BM_CHECK(ns1 != 0);
    uint8_t zero[16] = {0};
    BM_CHECK(memcmp(id1, zero, 16) != 0);
    uint8_t lo[4];
    inet_pton(AF_INET, "127.0.0.1", lo);
    int oif = bm_btl_tcp_if_route_oif(AF_INET, lo);
    BM_CHECK_EQ_INT(oif, (int)if_nametoindex("lo"));
}

int main(void)
{
    BM_RUN(test_subnet);
    BM_RUN(test_filters);
    BM_RUN(test_host_and_route);
    return bm_test_summary("tcp_if_test");
}
