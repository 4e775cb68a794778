/* TCP congestion control of a transport's connections (tcpcc.h). */
#define BM_LOG_SUBSYS "util/tcpcc"
#include "util/tcpcc.h"
#include "util/log.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>

bool bm_util_tcpcc_auto(const char *setting)
{
    return setting && strcmp(setting, "auto") == 0;
}

const char *bm_util_tcpcc_name(const char *setting, bool loopback)
{
    if (!setting || !*setting || strcmp(setting, "default") == 0)
        return NULL;
    if (bm_util_tcpcc_auto(setting))
        return loopback ? "reno" : NULL;
    return setting;
}

bool bm_util_tcpcc_set(int fd, const char *cc, const char *setting, bool *told, const char *param,
                       int rank, const char *links)
{
    if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, (socklen_t)strlen(cc)) == 0)
        return true;
    int err = errno;
    if (!bm_util_tcpcc_auto(setting) && !__atomic_exchange_n(told, true, __ATOMIC_RELAXED))
        bm_log_warn("%s=%s: the kernel refused it on rank %d's %s (%s); they keep the kernel's "
                    "default. Name one of /proc/sys/net/ipv4/tcp_allowed_congestion_control, or "
                    "load its module",
                    param, cc, rank, links, strerror(err));
    return false;
}
