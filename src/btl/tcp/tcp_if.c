/* Local network interfaces for the tcp transport: which interfaces become
 * modules (getifaddrs, filtered by BM_BTL_TCP_IF_INCLUDE / _IF_EXCLUDE, which
 * take interface names and CIDR networks), how fast they are, whether two
 * processes share a loopback interface (same kernel and network namespace),
 * and which interface the kernel routes a remote address through (a netlink
 * route lookup, used to pair interfaces that are not on the same subnet). */
#define BM_LOG_SUBSYS "btl/tcp"
#include "btl/tcp/tcp.h"
#include "util/help.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct bm_util_help_topic tcp_if_help[] = {
    {"btl-tcp-if-conflict", "Both BM_BTL_TCP_IF_INCLUDE and BM_BTL_TCP_IF_EXCLUDE are set",
     "include list, exclude list",
     "The tcp transport was given both an include list (BM_BTL_TCP_IF_INCLUDE=%s) and an "
     "exclude list (BM_BTL_TCP_IF_EXCLUDE=%s) of interfaces. They contradict each other, so tcp "
     "is not started in this process.\n\n"
     "What to do:\n"
     "- Keep only one of them: the include list names exactly the interfaces or networks to use "
     "(e.g. eth1,10.2.0.0/16); the exclude list names those never to use (e.g. docker0).\n"
     "- 'ip addr' shows this host's interfaces and networks."},
    {"btl-tcp-if-none", "No network interface left for the tcp transport",
     "host name, include list, exclude list",
     "On host %s no network interface is usable by the tcp transport (BM_BTL_TCP_IF_INCLUDE=%s, "
     "BM_BTL_TCP_IF_EXCLUDE=%s). Interfaces must be up and have an IPv4 or a global IPv6 "
     "address; loopback is used only when sm is not selected or when the include list names "
     "it. This process reaches no peer over tcp.\n\n"
     "What to do:\n"
     "- Check the names and networks against 'ip addr' on this host.\n"
     "- Or let tcp choose: unset both variables."},
};
BM_HELP_TOPICS_REGISTER(tcp_if_help);

/* One item of an include/exclude list: an interface name or a network. */
struct tcp_if_filter_item {
    bool is_net;
    char name[IF_NAMESIZE];
    int family;
    uint8_t net[16];
    int prefixlen;
    bool used; /* matched something (for the "names nothing here" warning) */
};

struct tcp_if_filter {
    const char *param; /* the environment variable, for messages */
    struct tcp_if_filter_item *items;
    int count;
};

bool bm_btl_tcp_if_in_subnet(int family, const uint8_t *net, int prefixlen, const uint8_t *addr)
{
    int bits = family == AF_INET ? 32 : 128;
    if (prefixlen > bits)
        prefixlen = bits;
    int full = prefixlen / 8, rest = prefixlen % 8;
    if (memcmp(net, addr, (size_t)full) != 0)
        return false;
    if (rest == 0)
        return true;
    uint8_t mask = (uint8_t)(0xffu << (8 - rest));
    return (net[full] & mask) == (addr[full] & mask);
}

void bm_btl_tcp_addr_str(int family, const uint8_t *addr, uint16_t port, char *buf, size_t len)
{
    char a[INET6_ADDRSTRLEN] = "?";
    inet_ntop(family, addr, a, sizeof(a));
    if (port == 0)
        snprintf(buf, len, "%s", a);
    else if (family == AF_INET6)
        snprintf(buf, len, "[%s]:%u", a, port);
    else
        snprintf(buf, len, "%s:%u", a, port);
}

static bm_status_t tcp_if_filter_parse(const char *param, const char *text, struct tcp_if_filter *f)
{
    f->param = param;
    f->items = NULL;
    f->count = 0;
    if (!text || !*text)
        return BM_OK;
    size_t n = 1;
    for (const char *p = text; *p; p++)
        n += *p == ',';
    f->items = calloc(n, sizeof(*f->items));
    if (!f->items)
        return BM_ERR_NO_MEMORY;
    const char *p = text;
    while (*p) {
        size_t len = strcspn(p, ",");
        char item[128];
        if (len == 0 || len >= sizeof(item)) {
            bm_log_error("%s=%s: empty or overlong item; expected a comma-separated list of "
                         "interface names (eth0) or networks (10.1.0.0/16, fd00::/8)",
                         param, text);
            goto err_free;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        struct tcp_if_filter_item *it = &f->items[f->count];
        char *slash = strchr(item, '/');
        if (slash)
            *slash = '\0';
        if (inet_pton(AF_INET, item, it->net) == 1) {
            it->family = AF_INET;
        } else if (inet_pton(AF_INET6, item, it->net) == 1) {
            it->family = AF_INET6;
        } else if (slash) {
            bm_log_error("%s=%s: '%s' is not an IPv4 or IPv6 network; write networks as "
                         "10.1.0.0/16 or fd00::/8",
                         param, text, item);
            goto err_free;
        }
        if (it->family) {
            int bits = it->family == AF_INET ? 32 : 128;
            it->is_net = true;
            it->prefixlen = bits;
            if (slash) {
                char *end;
                long v = strtol(slash + 1, &end, 10);
                if (*end || end == slash + 1 || v < 0 || v > bits) {
                    bm_log_error("%s=%s: bad prefix length '/%s' (0..%d)", param, text, slash + 1,
                                 bits);
                    goto err_free;
                }
                it->prefixlen = (int)v;
            }
        } else {
            if (strlen(item) >= IF_NAMESIZE) {
                bm_log_error("%s=%s: '%s' is too long for an interface name", param, text, item);
                goto err_free;
            }
            memcpy(it->name, item, strlen(item) + 1);
        }
        f->count++;
        p += len;
        if (*p == ',')
            p++;
    }
    return BM_OK;
err_free:
    free(f->items);
    f->items = NULL;
    return BM_ERR_BAD_PARAM;
}

/* Does the item select this address of this interface? */
static bool tcp_if_filter_match(struct tcp_if_filter *f, const char *ifname,
                                const struct bm_btl_tcp_ifaddr *a)
{
    bool hit = false;
    for (int i = 0; i < f->count; i++) {
        struct tcp_if_filter_item *it = &f->items[i];
        bool m = it->is_net
                     ? it->family == a->family &&
                           bm_btl_tcp_if_in_subnet(a->family, it->net, it->prefixlen, a->addr)
                     : strcmp(it->name, ifname) == 0;
        if (m) {
            it->used = true;
            hit = true;
        }
    }
    return hit;
}

static uint32_t tcp_if_speed(const char *name, bool loopback)
{
    char path[128];
    snprintf(path, sizeof(path), "/sys/class/net/%s/speed", name);
    FILE *fp = fopen(path, "r");
    long v = -1;
    if (fp) {
        if (fscanf(fp, "%ld", &v) != 1)
            v = -1;
        fclose(fp);
    }
    if (v > 0)
        return (uint32_t)v;
    /* Virtual devices (veth, loopback, bridges) report no speed: they are
     * as fast as the memory bus, so give them a high weight. */
    return loopback ? 100000u : 10000u;
}

static int tcp_if_prefixlen(int family, const struct sockaddr *mask)
{
    if (!mask)
        return family == AF_INET ? 32 : 128;
    const uint8_t *b = family == AF_INET
                           ? (const uint8_t *)&((const struct sockaddr_in *)mask)->sin_addr
                           : (const uint8_t *)&((const struct sockaddr_in6 *)mask)->sin6_addr;
    int n = family == AF_INET ? 4 : 16, len = 0;
    for (int i = 0; i < n; i++)
        len += __builtin_popcount(b[i]);
    return len;
}

static struct bm_btl_tcp_if *tcp_if_find_or_add(struct bm_btl_tcp_if **ifs, int *count, int *cap,
                                                const char *name, bool loopback)
{
    for (int i = 0; i < *count; i++)
        if (strcmp((*ifs)[i].name, name) == 0)
            return &(*ifs)[i];
    if (*count == *cap) {
        int ncap = *cap ? *cap * 2 : 8;
        struct bm_btl_tcp_if *n = realloc(*ifs, (size_t)ncap * sizeof(**ifs));
        if (!n)
            return NULL;
        *ifs = n;
        *cap = ncap;
    }
    struct bm_btl_tcp_if *it = &(*ifs)[(*count)++];
    memset(it, 0, sizeof(*it));
    snprintf(it->name, sizeof(it->name), "%s", name);
    it->ifindex = (int)if_nametoindex(name);
    it->loopback = loopback;
    it->bandwidth = tcp_if_speed(name, loopback);
    return it;
}

static void tcp_if_warn_unused(const struct tcp_if_filter *f, const char *text)
{
    for (int i = 0; i < f->count; i++)
        if (!f->items[i].used && !f->items[i].is_net)
            bm_log_warn("%s=%s names interface '%s', which does not exist here or has no "
                        "usable address; check the name with 'ip addr'",
                        f->param, text, f->items[i].name);
}

bm_status_t bm_btl_tcp_if_discover(const struct bm_btl_tcp_config *cfg, bool with_loopback,
                                   struct bm_btl_tcp_if **ifs_out, int *count_out)
{
    bool has_inc = cfg->if_include && *cfg->if_include;
    bool has_exc = cfg->if_exclude && *cfg->if_exclude;
    if (has_inc && has_exc) {
        bm_util_help_show("btl-tcp-if-conflict", cfg->if_include, cfg->if_exclude);
        return BM_ERR_BAD_PARAM;
    }
    struct tcp_if_filter inc, exc;
    bm_status_t rc = tcp_if_filter_parse("BM_BTL_TCP_IF_INCLUDE", cfg->if_include, &inc);
    if (rc != BM_OK)
        return rc;
    rc = tcp_if_filter_parse("BM_BTL_TCP_IF_EXCLUDE", cfg->if_exclude, &exc);
    if (rc != BM_OK)
        goto err_inc;

    struct ifaddrs *ifa_list;
    if (getifaddrs(&ifa_list) != 0) {
        bm_log_error("getifaddrs failed: %s; the tcp transport cannot find interfaces",
                     strerror(errno));
        rc = BM_ERR_SYSTEM;
        goto err_exc;
    }
    struct bm_btl_tcp_if *ifs = NULL;
    int count = 0, cap = 0;
    for (struct ifaddrs *ifa = ifa_list; ifa; ifa = ifa->ifa_next) {
        if (!ifa->ifa_addr || !(ifa->ifa_flags & IFF_UP))
            continue;
        int family = ifa->ifa_addr->sa_family;
        if (family != AF_INET && family != AF_INET6)
            continue;
        struct bm_btl_tcp_ifaddr a = {.family = family};
        if (family == AF_INET) {
            memcpy(a.addr, &((struct sockaddr_in *)ifa->ifa_addr)->sin_addr, 4);
        } else {
            const struct in6_addr *in6 = &((struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr;
            /* Link-local addresses need a scope id on every connect; global
             * and unique-local addresses cover every real deployment. */
            if (IN6_IS_ADDR_LINKLOCAL(in6))
                continue;
            memcpy(a.addr, in6, 16);
        }
        a.prefixlen = (uint8_t)tcp_if_prefixlen(family, ifa->ifa_netmask);
        bool loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
        if (has_inc) {
            if (!tcp_if_filter_match(&inc, ifa->ifa_name, &a))
                continue;
        } else {
            if (has_exc && tcp_if_filter_match(&exc, ifa->ifa_name, &a))
                continue;
            if (loopback && !with_loopback)
                continue;
        }
        struct bm_btl_tcp_if *it = tcp_if_find_or_add(&ifs, &count, &cap, ifa->ifa_name, loopback);
        if (!it) {
            rc = BM_ERR_NO_MEMORY;
            free(ifs);
            goto err_ifa;
        }
        bool dup_family = false;
        for (int i = 0; i < it->naddrs; i++)
            dup_family |= it->addrs[i].family == family;
        if (dup_family) /* one address per family: the first (primary) one */
            continue;
        it->addrs[it->naddrs++] = a;
    }
    if (has_inc)
        tcp_if_warn_unused(&inc, cfg->if_include);
    if (has_exc)
        tcp_if_warn_unused(&exc, cfg->if_exclude);
    if (count == 0 && (has_inc || has_exc)) {
        char host[256] = "?";
        gethostname(host, sizeof(host) - 1);
        bm_util_help_show("btl-tcp-if-none", host, has_inc ? cfg->if_include : "",
                          has_exc ? cfg->if_exclude : "");
    }
    *ifs_out = ifs;
    *count_out = count;
    rc = BM_OK;
err_ifa:
    freeifaddrs(ifa_list);
err_exc:
    free(exc.items);
err_inc:
    free(inc.items);
    return rc;
}

void bm_btl_tcp_if_host_id(uint8_t host_id_out[16], uint64_t *netns_ino_out)
{
    memset(host_id_out, 0, 16);
    *netns_ino_out = 0;
    FILE *fp = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (fp) {
        char line[64];
        if (fgets(line, sizeof(line), fp)) {
            int n = 0;
            for (char *p = line; *p && n < 32; p++) {
                int v;
                if (*p >= '0' && *p <= '9')
                    v = *p - '0';
                else if (*p >= 'a' && *p <= 'f')
                    v = *p - 'a' + 10;
                else
                    continue;
                host_id_out[n / 2] = (uint8_t)(host_id_out[n / 2] | (v << ((n % 2) ? 0 : 4)));
                n++;
            }
        }
        fclose(fp);
    }
    struct stat st;
    if (stat("/proc/self/ns/net", &st) == 0)
        *netns_ino_out = (uint64_t)st.st_ino;
}

int bm_btl_tcp_if_route_oif(int family, const uint8_t *addr)
{
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0)
        return -1;
    struct {
        struct nlmsghdr nh;
        struct rtmsg rt;
        char attrs[64];
    } req;
    memset(&req, 0, sizeof(req));
    int alen = family == AF_INET ? 4 : 16;
    req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
    req.nh.nlmsg_type = RTM_GETROUTE;
    req.nh.nlmsg_flags = NLM_F_REQUEST;
    req.nh.nlmsg_seq = 1;
    req.rt.rtm_family = (unsigned char)family;
    req.rt.rtm_dst_len = (unsigned char)(alen * 8);
    struct rtattr *rta = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.nh.nlmsg_len));
    rta->rta_type = RTA_DST;
    rta->rta_len = (unsigned short)RTA_LENGTH(alen);
    memcpy(RTA_DATA(rta), addr, (size_t)alen);
    req.nh.nlmsg_len = NLMSG_ALIGN(req.nh.nlmsg_len) + RTA_ALIGN(rta->rta_len);

    int oif = -1;
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    if (sendto(fd, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
        goto out;
    char buf[4096];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0)
        goto out;
    for (struct nlmsghdr *nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (unsigned)n);
         nh = NLMSG_NEXT(nh, n)) {
        if (nh->nlmsg_type != RTM_NEWROUTE)
            continue; /* NLMSG_ERROR: no route */
        struct rtmsg *rt = NLMSG_DATA(nh);
        if (rt->rtm_type != RTN_UNICAST && rt->rtm_type != RTN_LOCAL)
            break; /* unreachable, blackhole, prohibit */
        int len = (int)RTM_PAYLOAD(nh);
        for (struct rtattr *a = RTM_RTA(rt); RTA_OK(a, len); a = RTA_NEXT(a, len))
            if (a->rta_type == RTA_OIF)
                memcpy(&oif, RTA_DATA(a), sizeof(int));
        break;
    }
out:
    close(fd);
    return oif;
}
