/* The TCP congestion control a transport puts on its connections
 * (BM_BTL_TCP_CONGESTION on the tcp transport's links, BM_BTL_OFI_CONGESTION
 * on a socket provider's): one reading of the setting and one setsockopt
 * with its warning, so that both transports mean the same by the same
 * value. On loopback the algorithm has nothing to control, but it still
 * decides how the kernel sends: with bbr (pacing) a raw 1 MiB stream over
 * loopback costs each side 0.15 ms of CPU per MiB, with reno or cubic 0.08
 * (src/btl/tcp/README.md "Congestion control"). reno for auto because it is
 * built into every kernel and every process may set it
 * (net.ipv4.tcp_allowed_congestion_control always has it), where cubic may
 * be refused to unprivileged processes. Connection set-up only. */
#ifndef BM_UTIL_TCPCC_H
#define BM_UTIL_TCPCC_H

#include <stdbool.h>

/* The setting is "auto": reno on connections through loopback only. */
bool bm_util_tcpcc_auto(const char *setting);

/* The algorithm a setting names for a connection through loopback or not:
 * NULL (the kernel's default) for NULL, "" or "default", and for auto off
 * loopback; "reno" for auto on loopback; else the setting itself. */
const char *bm_util_tcpcc_name(const char *setting, bool loopback);

/* Puts algorithm cc (from bm_util_tcpcc_name, not NULL) on TCP socket fd;
 * true if the kernel took it. A refusal of auto's reno (a kernel without it)
 * is quiet; a refusal of an algorithm the user named is warned once per
 * *told (set atomically, so any thread may call): "<param>=<cc>: the kernel
 * refused it on rank <rank>'s <links> (<errno's text>); ...". */
bool bm_util_tcpcc_set(int fd, const char *cc, const char *setting, bool *told, const char *param,
                       int rank, const char *links);

#endif
