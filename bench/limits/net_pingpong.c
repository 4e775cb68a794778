/* Raw UDP and TCP limits between two processes: 8-byte ping-pong latency
 * (half the round trip; TCP also with both sides polling non-blocking
 * receives, as MPI progress loops do, beside the blocking one) and
 * streaming bandwidth, with nothing but the
 * kernel's sockets in between. No MPI transport over the same wire can beat
 * these. One process is the server, the other the client; a TCP connection
 * carries the client's commands (and the TCP tests themselves, but for the
 * w64 streams, which run on a second one with the kernel's automatic socket
 * buffers), and a UDP socket on the same address and port serves the UDP
 * tests.
 *
 *   net_pingpong                       fork a server on 127.0.0.1 (loopback)
 *   net_pingpong --server ADDR [PORT]  serve on ADDR (e.g. inside a namespace)
 *   net_pingpong --client ADDR [PORT]  run the tests against that server
 *
 * Output: "limit <name> <value> <unit>" lines (best of several trials). */
#include "limits_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>

#define DEFAULT_PORT 47001
#define TRIALS       3
#define PP_SIZE      8

enum op {
    OP_TCP_PINGPONG = 1,
    OP_TCP_STREAM,
    OP_UDP_PINGPONG,
    OP_UDP_STREAM,
    OP_QUIT,
    OP_TCP_PINGPONG_SPIN,
    OP_TCP_STREAM_W64,
    OP_UDP_PINGPONG_SPIN
};

/* The TCP stream again over STREAM_BUFS distinct buffers on each side, used
 * in turn: the footprint of bm_bw's window of 64 messages with a buffer
 * each, so that the kernel's copies in and out meet the same cold memory as
 * an MPI stack's do under that benchmark (the one-buffer stream stays
 * cache-hot). Both sides write their buffers before the clock starts, so no
 * page is faulted in (or read as the shared zero page) while timed. */
#define STREAM_BUFS      64
#define STREAM_W64_BYTES ((uint64_t)512 << 20)

/* The w64 stream runs on a second connection, the data connection, whose
 * socket buffers are left to the kernel's automatic tuning (no SO_SNDBUF or
 * SO_RCVBUF, which would turn it off), as bitmover's tcp leaves them
 * (BM_BTL_TCP_SNDBUF/RCVBUF 0), and Open MPI's tcp BTL (btl_tcp_sndbuf/
 * rcvbuf 0) too: with reno, it is the stream the bitmover tcp figures are
 * held against. The control connection keeps tune()'s fixed 4 MiB. */

struct cmd {
    uint32_t op;
    uint32_t size;
    uint64_t count;
};

struct udp_result {
    uint64_t bytes;
    double seconds;
};

static void die(const char *what)
{
    fprintf(stderr, "net_pingpong: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void full_write(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            die("tcp write");
        p += n;
        len -= (size_t)n;
    }
}

static void full_read(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            die(n == 0 ? "tcp read (peer closed)" : "tcp read");
        p += n;
        len -= (size_t)n;
    }
}

/* full_read the way an MPI progress loop reads: non-blocking receives,
 * retried at once while nothing is there (the process never sleeps). */
static void full_read_spin(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            continue;
        if (n <= 0)
            die("tcp read");
        p += n;
        len -= (size_t)n;
    }
}

static struct sockaddr_in make_addr(const char *ip, int port)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1) {
        fprintf(stderr, "net_pingpong: bad IPv4 address %s\n", ip);
        exit(2);
    }
    return sa;
}

static void tune(int fd, int tcp)
{
    int one = 1, buf = 4 << 20;
    if (tcp)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
}

/* STREAM_BUFS buffers of size bytes, every page written; kept for the
 * later trials (one set per size: the trials alternate 1 MiB and 4 MiB). */
static unsigned char *window_buffers(uint32_t size)
{
    static unsigned char *w[2];
    static uint32_t wsize[2];
    int k = 0;
    while (k < 2 && w[k] && wsize[k] != size)
        k++;
    if (k == 2) { /* a third size: replace the first set */
        free(w[0]);
        w[0] = NULL;
        k = 0;
    }
    if (!w[k]) {
        w[k] = malloc((size_t)STREAM_BUFS * size);
        if (!w[k])
            die("malloc of the stream's 64 buffers");
        memset(w[k], 0x5a, (size_t)STREAM_BUFS * size);
        wsize[k] = size;
    }
    return w[k];
}

/* Discards what a socket holds: the datagrams of a UDP stream test that
 * its receiver had not read when the test ended (up to its 4 MiB buffer)
 * were echoed back as the next ping-pong's replies, 65000 B each, and
 * overflowed the client's buffer: its echo was lost, and the 100 ms resend
 * added ~25 us to a trial's 2000 round trips. Called after the client's end
 * marker (no datagram of the test is still coming). */
static void udp_drain(int ufd, unsigned char *buf)
{
    while (recv(ufd, buf, 1 << 20, MSG_DONTWAIT) >= 0)
        ;
}

/* Serves commands on one TCP connection until OP_QUIT. `ready_fd` (or -1)
 * receives the bound port once both sockets listen. */
static int serve(const char *ip, int port, int ready_fd)
{
    struct sockaddr_in sa = make_addr(ip, port);
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(lfd, 2) != 0)
        die("tcp listen");
    socklen_t sl = sizeof(sa);
    getsockname(lfd, (struct sockaddr *)&sa, &sl);
    int ufd = socket(AF_INET, SOCK_DGRAM, 0);
    if (ufd < 0 || bind(ufd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
        die("udp bind (same port as tcp)");
    tune(ufd, 0);
    if (ready_fd >= 0) {
        int p = ntohs(sa.sin_port);
        full_write(ready_fd, &p, sizeof(p));
        close(ready_fd);
    }
    int cfd = accept(lfd, NULL, NULL);
    if (cfd < 0)
        die("tcp accept");
    tune(cfd, 1);
    int dfd = accept(lfd, NULL, NULL); /* the data connection: automatic buffers */
    if (dfd < 0)
        die("tcp accept (data connection)");
    setsockopt(dfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    unsigned char *buf = malloc(1 << 20);
    for (;;) {
        struct cmd c;
        full_read(cfd, &c, sizeof(c));
        if (c.op == OP_QUIT)
            break;
        if (c.size > (1u << 20) && c.op != OP_TCP_STREAM_W64)
            c.size = 1u << 20;
        if (c.size > (4u << 20))
            c.size = 4u << 20;
        if (c.op == OP_TCP_PINGPONG || c.op == OP_TCP_PINGPONG_SPIN) {
            for (uint64_t i = 0; i < c.count; i++) {
                if (c.op == OP_TCP_PINGPONG_SPIN)
                    full_read_spin(cfd, buf, c.size);
                else
                    full_read(cfd, buf, c.size);
                full_write(cfd, buf, c.size);
            }
        } else if (c.op == OP_TCP_STREAM) {
            for (uint64_t i = 0; i < c.count; i++)
                full_read(cfd, buf, c.size);
            full_write(cfd, "k", 1);
        } else if (c.op == OP_TCP_STREAM_W64) {
            unsigned char *w = window_buffers(c.size);
            full_write(cfd, "r", 1); /* written: the client starts its clock */
            for (uint64_t i = 0; i < c.count; i++)
                full_read(dfd, w + (size_t)(i % STREAM_BUFS) * c.size, c.size);
            full_write(cfd, "k", 1);
        } else if (c.op == OP_UDP_PINGPONG_SPIN) {
            /* Echo with non-blocking receives, the TCP connection looked at
             * (peeked) every 1024 empty polls for the end marker. */
            for (uint32_t empty = 0;; empty++) {
                struct sockaddr_in from;
                socklen_t fl = sizeof(from);
                ssize_t n =
                    recvfrom(ufd, buf, 1 << 20, MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
                if (n > 0) {
                    sendto(ufd, buf, (size_t)n, 0, (struct sockaddr *)&from, fl);
                    empty = 0;
                    continue;
                }
                char peek;
                if ((empty & 1023) == 1023 && recv(cfd, &peek, 1, MSG_DONTWAIT | MSG_PEEK) != -1)
                    break;
            }
            struct udp_result r = {0, 0};
            char end;
            full_read(cfd, &end, 1);
            full_write(cfd, &r, sizeof(r));
        } else if (c.op == OP_UDP_PINGPONG || c.op == OP_UDP_STREAM) {
            /* UDP until the client's next TCP message says the test is over. */
            struct udp_result r = {0, 0};
            double first = 0, last = 0;
            struct pollfd pf[2] = {{.fd = ufd, .events = POLLIN}, {.fd = cfd, .events = POLLIN}};
            for (;;) {
                if (poll(pf, 2, -1) < 0 && errno != EINTR)
                    die("poll");
                if (pf[0].revents & POLLIN) {
                    struct sockaddr_in from;
                    socklen_t fl = sizeof(from);
                    ssize_t n = recvfrom(ufd, buf, 1 << 20, 0, (struct sockaddr *)&from, &fl);
                    if (n < 0)
                        continue;
                    if (c.op == OP_UDP_PINGPONG) {
                        sendto(ufd, buf, (size_t)n, 0, (struct sockaddr *)&from, fl);
                    } else {
                        last = bm_limits_now();
                        if (r.bytes == 0)
                            first = last;
                        r.bytes += (uint64_t)n;
                    }
                    continue;
                }
                if (pf[1].revents & (POLLIN | POLLHUP))
                    break;
            }
            char end;
            full_read(cfd, &end, 1);
            udp_drain(ufd, buf);
            r.seconds = last - first;
            full_write(cfd, &r, sizeof(r));
        }
    }
    free(buf);
    close(dfd);
    close(cfd);
    close(lfd);
    close(ufd);
    return 0;
}

static void send_cmd(int cfd, enum op op, uint32_t size, uint64_t count)
{
    struct cmd c = {.op = (uint32_t)op, .size = size, .count = count};
    full_write(cfd, &c, sizeof(c));
}

/* spin: both sides poll with non-blocking receives (as MPI libraries'
 * progress loops do) instead of sleeping in a blocking one. */
static double tcp_pingpong(int cfd, long iters, bool spin)
{
    char b[PP_SIZE] = {0};
    send_cmd(cfd, spin ? OP_TCP_PINGPONG_SPIN : OP_TCP_PINGPONG, PP_SIZE, (uint64_t)iters);
    double t0 = bm_limits_now();
    for (long i = 0; i < iters; i++) {
        full_write(cfd, b, PP_SIZE);
        if (spin)
            full_read_spin(cfd, b, PP_SIZE);
        else
            full_read(cfd, b, PP_SIZE);
    }
    return (bm_limits_now() - t0) * 1e6 / (2.0 * (double)iters);
}

static double tcp_stream(int cfd, unsigned char *buf, uint32_t size, uint64_t count)
{
    send_cmd(cfd, OP_TCP_STREAM, size, count);
    double t0 = bm_limits_now();
    for (uint64_t i = 0; i < count; i++)
        full_write(cfd, buf, size);
    char k;
    full_read(cfd, &k, 1);
    return (double)size * (double)count / (bm_limits_now() - t0) / 1e6;
}

/* The client's data connection (automatic socket buffers). */
static int data_fd = -1;

/* The stream over STREAM_BUFS buffers of size bytes on each side (bm_bw's
 * footprint), STREAM_W64_BYTES in all, on the data connection; cfd carries
 * the command and the markers. */
static double tcp_stream_w64(int cfd, unsigned char *unused, uint32_t size, uint64_t count)
{
    (void)unused;
    (void)count;
    unsigned char *w = window_buffers(size);
    uint64_t n = STREAM_W64_BYTES / size;
    send_cmd(cfd, OP_TCP_STREAM_W64, size, n);
    char k;
    full_read(cfd, &k, 1);
    double t0 = bm_limits_now();
    for (uint64_t i = 0; i < n; i++)
        full_write(data_fd, w + (size_t)(i % STREAM_BUFS) * size, size);
    full_read(cfd, &k, 1);
    return (double)size * (double)n / (bm_limits_now() - t0) / 1e6;
}

/* stream (tcp_stream or tcp_stream_w64) with congestion control cc on the
 * sending socket sfd (the server's socket only acknowledges), the socket's
 * own one restored after. 0 when the kernel refuses cc. */
static double tcp_stream_cc(double (*stream)(int, unsigned char *, uint32_t, uint64_t), int cfd,
                            int sfd, unsigned char *buf, uint32_t size, uint64_t count,
                            const char *cc)
{
    char old[32] = {0};
    socklen_t ol = sizeof(old) - 1;
    if (getsockopt(sfd, IPPROTO_TCP, TCP_CONGESTION, old, &ol) != 0 ||
        setsockopt(sfd, IPPROTO_TCP, TCP_CONGESTION, cc, (socklen_t)strlen(cc)) != 0)
        return 0;
    double bw = stream(cfd, buf, size, count);
    setsockopt(sfd, IPPROTO_TCP, TCP_CONGESTION, old, (socklen_t)strlen(old));
    return bw;
}

/* spin: both sides poll with non-blocking receives, as dgram's progress
 * loop does (the floor for its 8 B latency); otherwise both sleep in
 * blocking ones. A lost datagram is resent after 100 ms; the sequence
 * number in the payload discards late echoes of earlier attempts. */
static double udp_pingpong(int cfd, int ufd, long iters, bool spin)
{
    struct timeval tv = {.tv_sec = 0, .tv_usec = 100000};
    setsockopt(ufd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    uint64_t stale;
    while (recv(ufd, &stale, sizeof(stale), MSG_DONTWAIT) >= 0)
        ;
    send_cmd(cfd, spin ? OP_UDP_PINGPONG_SPIN : OP_UDP_PINGPONG, PP_SIZE, (uint64_t)iters);
    double t0 = bm_limits_now();
    for (long i = 0; i < iters; i++) {
        uint64_t seq = (uint64_t)i, got = UINT64_MAX;
        while (got != seq) {
            if (send(ufd, &seq, sizeof(seq), 0) < 0)
                die("udp send");
            double sent = bm_limits_now();
            for (;;) {
                ssize_t n = recv(ufd, &got, sizeof(got), spin ? MSG_DONTWAIT : 0);
                if (n == (ssize_t)sizeof(got) && got == seq)
                    break;
                if (n < 0 && (!spin || bm_limits_now() - sent > 0.1))
                    break;
            }
        }
    }
    double us = (bm_limits_now() - t0) * 1e6 / (2.0 * (double)iters);
    full_write(cfd, "e", 1);
    struct udp_result r;
    full_read(cfd, &r, sizeof(r));
    return us;
}

static double udp_stream(int cfd, int ufd, unsigned char *buf, uint32_t size, double seconds)
{
    send_cmd(cfd, OP_UDP_STREAM, size, 0);
    double t0 = bm_limits_now();
    long n = 0;
    while (1) {
        if (send(ufd, buf, size, 0) < 0 && errno != ENOBUFS && errno != EAGAIN)
            die("udp send");
        if ((++n & 63) == 0 && bm_limits_now() - t0 > seconds)
            break;
    }
    /* Let the receiver drain its socket buffer before the end marker. */
    usleep(20000);
    full_write(cfd, "e", 1);
    struct udp_result r;
    full_read(cfd, &r, sizeof(r));
    return r.seconds > 0 ? (double)r.bytes / r.seconds / 1e6 : 0;
}

static double best_max(double a, double b)
{
    return a > b ? a : b;
}

static double best_min(double a, double b)
{
    return (a < b || b == 0) ? a : b;
}

static int client(const char *ip, int port, const char *label)
{
    struct sockaddr_in sa = make_addr(ip, port);
    int cfd = -1;
    for (int attempt = 0; attempt < 50; attempt++) {
        cfd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(cfd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
            break;
        close(cfd);
        cfd = -1;
        usleep(100000);
    }
    if (cfd < 0)
        die("tcp connect to the server");
    tune(cfd, 1);
    int one = 1;
    data_fd = socket(AF_INET, SOCK_STREAM, 0);
    if (data_fd < 0 || connect(data_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
        die("tcp connect (data connection)");
    setsockopt(data_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    int ufd = socket(AF_INET, SOCK_DGRAM, 0);
    if (ufd < 0 || connect(ufd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
        die("udp connect");
    tune(ufd, 0);
    unsigned char *buf = calloc(1, 1 << 20);
    double tcp_lat = 0, tcp_lat_spin = 0, udp_lat = 0, udp_lat_spin = 0, tcp_bw = 0,
           tcp_bw_reno = 0, udp_bw_mtu = 0, udp_bw_big = 0, w64_reno[2] = {0, 0};
    static const uint32_t w64_size[2] = {1u << 20, 4u << 20};
    for (int t = 0; t < TRIALS; t++) {
        tcp_lat = best_min(tcp_pingpong(cfd, 2000, false), tcp_lat);
        tcp_lat_spin = best_min(tcp_pingpong(cfd, 2000, true), tcp_lat_spin);
        udp_lat = best_min(udp_pingpong(cfd, ufd, 2000, false), udp_lat);
        udp_lat_spin = best_min(udp_pingpong(cfd, ufd, 2000, true), udp_lat_spin);
        tcp_bw = best_max(tcp_stream(cfd, buf, 1 << 20, 256), tcp_bw);
        tcp_bw_reno =
            best_max(tcp_stream_cc(tcp_stream, cfd, cfd, buf, 1 << 20, 256, "reno"), tcp_bw_reno);
        for (int k = 0; k < 2; k++)
            w64_reno[k] =
                best_max(tcp_stream_cc(tcp_stream_w64, cfd, data_fd, buf, w64_size[k], 0, "reno"),
                         w64_reno[k]);
        udp_bw_mtu = best_max(udp_stream(cfd, ufd, buf, 1472, 0.2), udp_bw_mtu);
        udp_bw_big = best_max(udp_stream(cfd, ufd, buf, 65000, 0.2), udp_bw_big);
    }
    send_cmd(cfd, OP_QUIT, 0, 0);
    printf("# raw sockets over %s (%s), %d-byte ping-pong, TCP stream of 1 MiB writes, UDP "
           "stream goodput at the receiver; best of %d trials\n",
           label, ip, PP_SIZE, TRIALS);
    char name[64];
    snprintf(name, sizeof(name), "tcp_%s_oneway_8b", label);
    bm_limits_report(name, tcp_lat, "us");
    snprintf(name, sizeof(name), "tcp_%s_oneway_8b_spin", label);
    bm_limits_report(name, tcp_lat_spin, "us");
    snprintf(name, sizeof(name), "udp_%s_oneway_8b", label);
    bm_limits_report(name, udp_lat, "us");
    snprintf(name, sizeof(name), "udp_%s_oneway_8b_spin", label);
    bm_limits_report(name, udp_lat_spin, "us");
    snprintf(name, sizeof(name), "tcp_%s_stream", label);
    bm_limits_report(name, tcp_bw, "MB/s");
    /* The same stream under reno, which bitmover's tcp runs on loopback
     * links (src/btl/tcp/README.md "Congestion control"): where the kernel's
     * default is another algorithm (bbr), this is the limit for it. */
    if (tcp_bw_reno > 0) {
        snprintf(name, sizeof(name), "tcp_%s_stream_reno", label);
        bm_limits_report(name, tcp_bw_reno, "MB/s");
    }
    /* ... and over bm_bw's footprint (64 buffers of 1 MiB or 4 MiB on each
     * side, written in turn) with automatic socket buffers, as bitmover's
     * tcp runs: the limit for its 1 MiB and 4 MiB rows. */
    for (int k = 0; k < 2; k++) {
        if (w64_reno[k] <= 0)
            continue;
        snprintf(name, sizeof(name), "tcp_%s_stream_reno_w64_%um", label, w64_size[k] >> 20);
        bm_limits_report(name, w64_reno[k], "MB/s");
    }
    snprintf(name, sizeof(name), "udp_%s_stream_1472", label);
    bm_limits_report(name, udp_bw_mtu, "MB/s");
    snprintf(name, sizeof(name), "udp_%s_stream_65000", label);
    bm_limits_report(name, udp_bw_big, "MB/s");
    free(buf);
    close(ufd);
    close(data_fd);
    close(cfd);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "--server") == 0)
        return serve(argv[2], argc > 3 ? atoi(argv[3]) : DEFAULT_PORT, -1);
    if (argc >= 3 && strcmp(argv[1], "--client") == 0)
        return client(argv[2], argc > 3 ? atoi(argv[3]) : DEFAULT_PORT, argc > 4 ? argv[4] : "net");
    if (argc != 1) {
        fprintf(stderr, "usage: net_pingpong [--server ADDR [PORT] | --client ADDR [PORT "
                        "[LABEL]]]\n");
        return 2;
    }
    int ready[2];
    if (pipe(ready) != 0)
        die("pipe");
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        close(ready[0]);
        _exit(serve("127.0.0.1", 0, ready[1]));
    }
    close(ready[1]);
    int port = 0;
    full_read(ready[0], &port, sizeof(port));
    /* Not pinned: the MPI stacks' TCP paths are not either, and on a shared
     * machine a pinned process waits for its one CPU. */
    int rc = client("127.0.0.1", port, "loopback");
    int status = 0;
    waitpid(pid, &status, 0);
    return rc != 0 ? rc : (WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}
