/* The congestion control of a socket provider's connections
 * (BM_BTL_OFI_CONGESTION), as the tcp transport sets it on its own links
 * (src/btl/tcp/README.md "Congestion control"; both read the setting and
 * set the option with util/tcpcc.h): on loopback the kernel's
 * default here, bbr, paces and costs each side about twice the CPU per byte
 * of reno. libfabric offers no hook for socket options (no provider
 * variable, no fi_setopt for it), and the providers (tcp under rxm, sockets)
 * open and connect their sockets themselves, lazily, at a peer's first
 * message. So when the first message from a peer arrives (its connection
 * exists then), we walk this process's descriptors once and pick the
 * provider's connections by their addresses: a TCP socket whose local
 * address is our provider address (accepted by the provider's listener) or
 * whose remote address is the peer's provider address (connected by our
 * provider). Under auto only those whose two ends are this host get reno;
 * a named algorithm goes on every one. The walk costs tens of microseconds,
 * once per peer. A socket closed and its descriptor reused by another
 * thread between our look and our setsockopt could get the setting: the
 * setting changes how the kernel paces, never what arrives. README "Two-sided
 * speed against Open MPI cm+ofi" says what it gains and why the comparison
 * stays fair. */
#define BM_LOG_SUBSYS "btl/ofi"
#include "btl/ofi/ofi.h"
#include "util/log.h"
#include "util/tcpcc.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

void bm_btl_ofi_sock_init(struct bm_btl_ofi_module *m)
{
    const char *cc = m->comp->cfg.congestion;
    m->cc = NULL;
    if (!bm_util_tcpcc_name(cc, true))
        return; /* the kernel's default everywhere */
    uint32_t f = m->info->addr_format;
    if (f != FI_SOCKADDR && f != FI_SOCKADDR_IN && f != FI_SOCKADDR_IN6)
        return; /* not a socket provider (shm, a NIC) */
    sa_family_t fam;
    memcpy(&fam, m->addr, sizeof(fam));
    if (m->addrlen < sizeof(struct sockaddr_in) || (fam != AF_INET && fam != AF_INET6))
        return;
    m->cc_loopback_only = bm_util_tcpcc_auto(cc);
    m->cc = bm_util_tcpcc_name(cc, true);
}

/* Address and port of a socket address (v4 or v6) for comparison. */
struct sa_key {
    int fam;
    uint8_t ip[16];
    uint16_t port;
};

static bool sa_key_of(const void *sa, size_t len, struct sa_key *k)
{
    sa_family_t fam;
    if (len < sizeof(fam))
        return false;
    memcpy(&fam, sa, sizeof(fam));
    memset(k, 0, sizeof(*k));
    if (fam == AF_INET && len >= sizeof(struct sockaddr_in)) {
        struct sockaddr_in a;
        memcpy(&a, sa, sizeof(a));
        k->fam = AF_INET;
        memcpy(k->ip, &a.sin_addr, 4);
        k->port = a.sin_port;
        return true;
    }
    if (fam == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 a;
        memcpy(&a, sa, sizeof(a));
        k->port = a.sin6_port;
        if (IN6_IS_ADDR_V4MAPPED(&a.sin6_addr)) { /* ::ffff:a.b.c.d compares as a.b.c.d */
            k->fam = AF_INET;
            memcpy(k->ip, &a.sin6_addr.s6_addr[12], 4);
        } else {
            k->fam = AF_INET6;
            memcpy(k->ip, &a.sin6_addr, 16);
        }
        return true;
    }
    return false;
}

static bool ip_any(const struct sa_key *k)
{
    static const uint8_t zero[16];
    return memcmp(k->ip, zero, k->fam == AF_INET ? 4 : 16) == 0;
}

static bool ip_loopback(const struct sa_key *k)
{
    static const uint8_t v6_lo[16] = {[15] = 1};
    return k->fam == AF_INET ? k->ip[0] == 127 : memcmp(k->ip, v6_lo, 16) == 0;
}

/* A connection between a and b goes through the kernel's loopback device:
 * both loopback addresses, or the same address (this host's). */
static bool local_route(const struct sa_key *a, const struct sa_key *b)
{
    return (ip_loopback(a) && ip_loopback(b)) ||
           (a->fam == b->fam && memcmp(a->ip, b->ip, sizeof(a->ip)) == 0);
}

/* a is the address b names (b's unspecified address matches any). */
static bool sa_match(const struct sa_key *a, const struct sa_key *b)
{
    return a->fam == b->fam && a->port == b->port &&
           (ip_any(b) || memcmp(a->ip, b->ip, a->fam == AF_INET ? 4 : 16) == 0);
}

/* One connected TCP socket: its two ends if it is one of the provider's. */
static bool provider_socket(int fd, const struct sa_key *mine, const struct sa_key *peer,
                            struct sa_key *loc, struct sa_key *rem)
{
    int v = 0;
    socklen_t vl = sizeof(v);
    if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v, &vl) != 0 || v != IPPROTO_TCP)
        return false;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0 || !sa_key_of(&ss, sl, loc))
        return false;
    sl = sizeof(ss);
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) != 0 || !sa_key_of(&ss, sl, rem))
        return false; /* a listener, or not connected (yet) */
    return sa_match(loc, mine) || (peer && sa_match(rem, peer));
}

void bm_btl_ofi_sock_ep_init(struct bm_btl_ofi_endpoint *ep, const void *addr, size_t len)
{
    struct bm_btl_ofi_module *m = ep->m;
    struct sa_key mine, peer;
    bool walk = m->cc && len <= sizeof(ep->sa) && sa_key_of(addr, len, &peer) &&
                sa_key_of(m->addr, m->addrlen, &mine);
    /* auto: only a peer at our own address, or both of us on loopback
     * addresses, has a connection through lo (a walk per remote peer
     * would cost a large job seconds for nothing) */
    if (walk && m->cc_loopback_only)
        walk = local_route(&mine, &peer);
    if (walk) {
        memcpy(ep->sa, addr, len);
        ep->salen = (uint8_t)len;
    }
    atomic_store_explicit(&ep->cc_seen, !walk, memory_order_relaxed);
}

bool bm_btl_ofi_sock_local(const struct bm_btl_ofi_module *m, const void *addr, size_t len)
{
    struct sa_key mine, peer;
    return sa_key_of(m->addr, m->addrlen, &mine) && sa_key_of(addr, len, &peer) &&
           local_route(&mine, &peer);
}

int bm_btl_ofi_sock_scan(struct bm_btl_ofi_module *m, const struct bm_btl_ofi_endpoint *ep)
{
    struct sa_key mine, peer;
    bool have_peer = ep && ep->salen && sa_key_of(ep->sa, ep->salen, &peer);
    if (!m->cc || !sa_key_of(m->addr, m->addrlen, &mine))
        return 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 0;
    int self_fd = dirfd(d), changed = 0, found = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);
        if (*end || end == e->d_name || fd < 0 || fd == self_fd)
            continue;
        struct stat st;
        struct sa_key loc, rem;
        if (fstat((int)fd, &st) != 0 || !S_ISSOCK(st.st_mode) ||
            !provider_socket((int)fd, &mine, have_peer ? &peer : NULL, &loc, &rem))
            continue;
        if (m->cc_loopback_only && !local_route(&loc, &rem))
            continue; /* auto: connections through lo only */
        found++;
        char cur[16] = "";
        socklen_t cl = sizeof(cur) - 1;
        if (getsockopt((int)fd, IPPROTO_TCP, TCP_CONGESTION, cur, &cl) == 0 &&
            strncmp(cur, m->cc, sizeof(cur)) == 0)
            continue; /* set already (an earlier walk) */
        if (bm_util_tcpcc_set((int)fd, m->cc, m->comp->cfg.congestion, &m->cc_told,
                              "BM_BTL_OFI_CONGESTION", m->comp->rank, "provider connections")) {
            changed++;
            BM_OFI_COUNT(m, cc_set);
        }
    }
    closedir(d);
    bm_log_debug("%s: %s: %d provider connection(s) found, %d set to %s", m->super.name,
                 ep ? ep->desc : "walk", found, changed, m->cc);
    return changed;
}
