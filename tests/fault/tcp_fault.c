/* Fault tests of the tcp transport, driven through the transport layer with
 * no PML (like the conformance suite). Run with exactly 2 ranks through
 * bmrun and BM_BTL=self,tcp; the shell scripts next to this file inject the
 * real faults. Modes:
 *   rails <MiB>   rank 0 sends MiB of verified data to rank 1, spread over
 *                 every tcp module that reaches rank 1; rank 1 prints what
 *                 each of its modules received. Passes when every byte
 *                 arrived intact and every send completed successfully.
 *   stream        both ranks stream verified data to each other until the
 *                 transport reports a failure (the script kills the peer or
 *                 black-holes the link after "streaming" appears). Passes
 *                 when the error callback fired with a sentence naming the
 *                 peer, and every outstanding send completed with an error
 *                 status; fails when nothing is reported within 60 s.
 *   stream idle   the same, but both ranks stop sending once streaming
 *                 began: only TCP keepalive can notice a dead link.
 *   stream recover  the same, then (the script lifts the fault) the path
 *                 must be reported recovered and carry 16 more messages.
 *   stray         rank 0 opens stray connections to every listening address
 *                 of rank 1 (garbage bytes, a HELLO with a wrong secret, and
 *                 one that sends nothing) while the two ranks exchange
 *                 verified messages: the strays must be closed by rank 1 and
 *                 the exchange must be unaffected. Garbage and wrong-secret
 *                 connections are repeated STRAY_ROUNDS times: rank 1's
 *                 warnings (its own stderr, captured) must be rate-limited
 *                 to one line per source address. All strays are open at
 *                 once, so the handshake timeout runs once for all of
 *                 them (one after another it ran 4 times per address:
 *                 16 s on a host of 4 addresses). */
#define BM_LOG_SUBSYS "test/tcp"
#include "bm_test.h"
#include "btl/btl.h"
#include "btl/tcp/tcp_proto.h"
#include "runtime/rte.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TAG_DATA  BM_BTL_TAG_TEST
#define TAG_DONE  (BM_BTL_TAG_TEST + 1)
#define CHUNK     (256 * 1024)
#define IN_FLIGHT 8
#define MAX_PATHS 8

static int me, peer;
static struct bm_btl_path paths[MAX_PATHS];
static int npaths;

/* receive side */
static uint64_t rx_bytes[MAX_PATHS + 1];
static struct bm_btl_module *rx_modules[MAX_PATHS + 1];
static uint64_t rx_total, rx_msgs, rx_bad;
static int done_from_peer;

/* send side */
static int in_flight, sends_ok, sends_err;

/* failure */
static int err_reports;
static char err_what[1024];
static double err_time;
static volatile sig_atomic_t got_term;

/* A line for the test script: on stdout and, when TCP_FAULT_LOG is set, in
 * the file $TCP_FAULT_LOG.<rank> (the script reads that when the fault also
 * cuts bmrun's output forwarding from the other host). */
static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...)
{
    char line[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    printf("%s\n", line);
    fflush(stdout);
    const char *log = getenv("TCP_FAULT_LOG");
    if (log && *log) {
        char path[512];
        snprintf(path, sizeof(path), "%s.%d", log, me);
        FILE *fp = fopen(path, "a");
        if (fp) {
            fprintf(fp, "%s\n", line);
            fclose(fp);
        }
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Byte j of message number seq from rank src. */
static unsigned char pattern(int src, uint64_t seq, size_t j)
{
    return (unsigned char)(src * 131 + seq * 7 + j * 13 + (j >> 11));
}

static void fill(unsigned char *buf, size_t len, uint64_t seq)
{
    memcpy(buf, &seq, sizeof(seq));
    for (size_t j = sizeof(seq); j < len; j++)
        buf[j] = pattern(me, seq, j);
}

static void on_data(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata)
{
    (void)cbdata;
    size_t len = 0;
    for (uint32_t s = 0; s < d->seg_count; s++)
        len += d->seg[s].len;
    const unsigned char *p = d->seg[0].addr;
    if (d->seg_count != 1 || len < sizeof(uint64_t)) {
        rx_bad++;
        return;
    }
    uint64_t seq;
    memcpy(&seq, p, sizeof(seq));
    for (size_t j = sizeof(seq); j < len; j++)
        if (p[j] != pattern(d->peer, seq, j)) {
            rx_bad++;
            break;
        }
    int k = 0;
    while (k < MAX_PATHS && rx_modules[k] && rx_modules[k] != m)
        k++;
    rx_modules[k] = m;
    rx_bytes[k] += len;
    rx_total += len;
    rx_msgs++;
}

static void on_done(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata)
{
    (void)m;
    (void)d;
    (void)cbdata;
    done_from_peer = 1;
}

static int recoveries;
static double recover_time;

static void on_error(struct bm_btl_module *m, const struct bm_btl_error *err, void *cbdata)
{
    (void)cbdata;
    if (err->kind == BM_BTL_ERROR_RECOVERED) {
        if (recoveries++ == 0)
            recover_time = now_s();
        for (int i = 0; i < npaths; i++)
            if (paths[i].module == m && (void *)paths[i].endpoint == (void *)err->endpoint)
                paths[i].failed = false;
        return;
    }
    if (err_reports++ == 0) {
        err_time = now_s();
        snprintf(err_what, sizeof(err_what), "%s: %s (%s)", m->name, err->what,
                 bm_status_str(err->status));
    }
    for (int i = 0; i < npaths; i++)
        if (paths[i].module == m && (void *)paths[i].endpoint == (void *)err->endpoint)
            paths[i].failed = true;
}

static void on_sent(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                    struct bm_btl_descriptor *des, int status)
{
    (void)m;
    (void)ep;
    in_flight--;
    if (status == BM_OK)
        sends_ok++;
    else
        sends_err++;
    free(des->cbdata); /* the caller's buffer of an in-place send */
}

/* Send one verified message of len bytes on path i. false: the path failed. */
static bool send_one(int i, size_t len, uint64_t seq)
{
    struct bm_btl_module *m = paths[i].module;
    unsigned char *buf = malloc(len);
    if (!buf)
        return false;
    fill(buf, len, seq);
    size_t size = len;
    struct bm_btl_descriptor *des =
        m->ops->prepare_src(m, paths[i].endpoint, buf, 0, &size, 0, BM_BTL_DES_F_BTL_OWNED);
    if (!des || size != len) {
        BM_CHECK_MSG(des != NULL, "prepare_src of %zu bytes failed", len);
        if (des)
            m->ops->free(m, des);
        free(buf);
        return des != NULL;
    }
    des->cbfunc = on_sent;
    des->cbdata = buf;
    in_flight++;
    int rc = m->ops->send(m, paths[i].endpoint, des, TAG_DATA);
    if (rc < 0) {
        in_flight--;
        m->ops->free(m, des);
        free(buf);
        paths[i].failed = true;
        return false;
    }
    return true;
}

static void send_done(void)
{
    for (int i = 0; i < npaths; i++) {
        struct bm_btl_module *m = paths[i].module;
        struct bm_btl_descriptor *des =
            m->ops->alloc(m, paths[i].endpoint, 0, 8, BM_BTL_DES_F_BTL_OWNED);
        if (!des)
            continue;
        memset(des->seg[0].addr, 0, 8);
        des->cbfunc = NULL;
        if (m->ops->send(m, paths[i].endpoint, des, TAG_DONE) < 0)
            m->ops->free(m, des);
        return;
    }
}

static int run_rails(size_t mib)
{
    double start = now_s();
    uint64_t total = (uint64_t)mib << 20, sent = 0, seq = 0;
    if (me == 0) {
        while (sent < total && now_s() - start < 60) {
            bm_btl_base_progress();
            if (in_flight >= IN_FLIGHT * npaths)
                continue;
            int i = (int)(seq % (uint64_t)npaths);
            if (paths[i].failed)
                break;
            if (send_one(i, CHUNK, seq))
                seq++, sent += CHUNK;
        }
        while (in_flight > 0 && now_s() - start < 60)
            bm_btl_base_progress();
        send_done();
        BM_CHECK_MSG(sent == total, "rank 0 sent %llu of %llu bytes", (unsigned long long)sent,
                     (unsigned long long)total);
        BM_CHECK_EQ_INT(sends_err, 0);
        BM_CHECK_EQ_INT(in_flight, 0);
        printf("tcp_fault: rank 0 sent %zu MiB over %d tcp path(s) in %.2f s\n", mib, npaths,
               now_s() - start);
    } else {
        while (!done_from_peer && now_s() - start < 60)
            bm_btl_base_progress();
        for (int k = 0; k <= MAX_PATHS && rx_modules[k]; k++)
            printf("tcp_fault: rank 1 received %llu bytes on %s\n", (unsigned long long)rx_bytes[k],
                   rx_modules[k]->name);
        BM_CHECK_EQ_INT(rx_total, total);
        BM_CHECK_EQ_INT(rx_bad, 0);
    }
    fflush(stdout);
    BM_CHECK_EQ_INT(err_reports, 0);
    return 0;
}

static void on_term(int sig)
{
    (void)sig;
    got_term = 1;
}

/* idle: stop sending once streaming began (and everything is acknowledged),
 * so that only keepalive can notice a dead link. */
/* After the failure, wait for the transport to report the path recovered
 * (the script lifts the black hole), then send again over it. */
static void stream_recover(void)
{
    double t = now_s();
    while (recoveries == 0 && now_s() - t < 60)
        bm_btl_base_progress();
    if (recoveries == 0) {
        report("tcp_fault: rank %d: the path was not reported recovered within 60 s", me);
        return;
    }
    report("tcp_fault: rank %d: path recovered %.2f s after the failure", me,
           recover_time - err_time);
    uint64_t before = rx_msgs;
    int ok_before = sends_ok;
    for (uint64_t seq = 1000000; seq < 1000016; seq++) {
        while (in_flight >= IN_FLIGHT && now_s() - t < 90)
            bm_btl_base_progress();
        BM_CHECK(send_one(0, 65536, seq));
    }
    /* DONE goes out once our sends are acknowledged, and each rank keeps
     * progressing until the peer's DONE: nobody stops answering (and
     * acknowledging) while the other still waits. */
    bool sent_done = false;
    while ((!sent_done || !done_from_peer) && now_s() - t < 90) {
        bm_btl_base_progress();
        if (!sent_done && in_flight == 0 && rx_msgs >= before + 16) {
            send_done();
            sent_done = true;
        }
    }
    BM_CHECK(sent_done && done_from_peer);
    BM_CHECK_EQ_INT(sends_ok - ok_before, 16);
    BM_CHECK_EQ_INT(rx_msgs - before, 16);
    report("tcp_fault: rank %d: after recovery %d sends completed, %llu received", me,
           sends_ok - ok_before, (unsigned long long)(rx_msgs - before));
}

static int run_stream(bool idle, bool recover)
{
    /* bmrun stops the job with SIGTERM when the peer dies; keep going for
     * BM_RUN_KILL_GRACE to report what the transport saw. */
    signal(SIGTERM, on_term);
    double start = now_s(), announced = 0;
    uint64_t seq = 0;
    while (err_reports == 0 && now_s() - start < 60) {
        bm_btl_base_progress();
        /* idle: each rank sends 32 messages, then waits for the peer's 32
         * and for its own to be acknowledged, then only polls. */
        if (!announced && rx_msgs >= (idle ? 32 : 16) && (!idle || in_flight == 0)) {
            announced = now_s();
            report("tcp_fault: rank %d pid %d streaming", me, (int)getpid());
        }
        if (idle && seq >= 32)
            continue;
        if (in_flight < IN_FLIGHT && !paths[0].failed && send_one(0, CHUNK, seq))
            seq++;
    }
    double t = now_s();
    /* Everything outstanding must complete (with an error) promptly. */
    while (in_flight > 0 && now_s() - t < 10)
        bm_btl_base_progress();
    if (err_reports) {
        report("tcp_fault: rank %d: %d sends completed, %d with an error, %d outstanding", me,
               sends_ok, sends_err, in_flight);
        report("tcp_fault: rank %d detected the failure %.2f s after streaming began: %s", me,
               err_time - announced, err_what);
    } else {
        report("tcp_fault: rank %d: no failure reported within 60 s (a hang)", me);
    }
    BM_CHECK_MSG(err_reports == 1, "rank %d: %d error reports", me, err_reports);
    BM_CHECK_EQ_INT(in_flight, 0);
    BM_CHECK(sends_err > 0 || sends_ok > 0);
    BM_CHECK(strstr(err_what, "rank") != NULL);
    BM_CHECK_EQ_INT(rx_bad, 0);
    if (recover && err_reports) {
        stream_recover();
        BM_CHECK_EQ_INT(recoveries, 1);
        BM_CHECK_EQ_INT(rx_bad, 0);
        report("tcp_fault: rank %d checks: %d failed", me, bm_test_failed);
        /* Both ranks are done before anyone closes. */
        BM_CHECK_EQ_INT(bm_rte_barrier(), BM_OK);
        bm_btl_base_close();
        bm_rte_finalize();
        exit(bm_test_summary("tcp_fault stream"));
    }
    report("tcp_fault: rank %d checks: %d failed", me, bm_test_failed);
    /* Leave without the orderly close (the peer is gone). */
    _exit(bm_test_summary("tcp_fault stream"));
}

/* ---- stray connections --------------------------------------------------------------------- */

static int stray_connect(const struct bm_btl_tcp_modex_addr *a)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    socklen_t len;
    int family = a->family == 6 ? AF_INET6 : AF_INET;
    if (family == AF_INET) {
        struct sockaddr_in *s = (struct sockaddr_in *)&ss;
        s->sin_family = AF_INET;
        s->sin_port = a->port;
        memcpy(&s->sin_addr, a->addr, 4);
        len = sizeof(*s);
    } else {
        struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;
        s->sin6_family = AF_INET6;
        s->sin6_port = a->port;
        memcpy(&s->sin6_addr, a->addr, 16);
        len = sizeof(*s);
    }
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&ss, len) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The stray connections of one run, all open at once: the server's
 * handshake timeout (for the short junk and the silent ones) then runs for
 * all of them together, not once per connection in turn. */
#define STRAY_ROUNDS 4
#define STRAYS_MAX   64

struct stray {
    int fd;
    const char *what, *ifname;
    bool closed, answered;
};
static struct stray strays[STRAYS_MAX];
static int nstrays;

static void stray_add(int fd, const char *what, const char *ifname)
{
    if (fd < 0)
        return;
    if (nstrays == STRAYS_MAX) {
        close(fd);
        return;
    }
    strays[nstrays++] = (struct stray){.fd = fd, .what = what, .ifname = ifname};
}

/* Keep both transports progressing (and our exchange going) until the
 * server has closed every stray connection, or limit seconds. */
static void stray_wait_closed(double limit, uint64_t *seq)
{
    double start = now_s();
    int open = nstrays;
    while (open > 0 && now_s() - start < limit) {
        bm_btl_base_progress();
        if (in_flight < 2 && send_one(0, 4096, *seq))
            (*seq)++;
        for (int i = 0; i < nstrays; i++) {
            struct stray *st = &strays[i];
            if (st->closed)
                continue;
            char b[256];
            ssize_t n = recv(st->fd, b, sizeof(b), MSG_DONTWAIT);
            if (n > 0) /* the server must never answer a stranger */
                st->answered = true;
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
                st->closed = true;
                open--;
            }
        }
    }
}

static int run_stray(void)
{
    uint64_t seq = 0;
    double start = now_s();
    int saved_stderr = -1;
    FILE *cap = NULL;
    if (me == 1) { /* capture rank 1's warnings to count them */
        fflush(stderr);
        cap = tmpfile();
        saved_stderr = dup(2);
        BM_CHECK(cap && saved_stderr >= 0 && dup2(fileno(cap), 2) == 2);
    }
    if (me == 0) {
        const void *data;
        size_t len;
        BM_CHECK_EQ_INT(bm_rte_modex_get(peer, "btl.tcp", &data, &len), BM_OK);
        const struct bm_btl_tcp_modex_hdr *h = data;
        int n = ntohs(h->naddrs);
        const struct bm_btl_tcp_modex_addr *addrs = (const void *)(h + 1);
        int tried = 0;
        for (int i = 0; i < n; i++) {
            for (int round = 1; round < STRAY_ROUNDS; round++) {
                /* extra garbage connections (shorter than a handshake:
                 * closed at its timeout): only rate-limited warnings */
                int fd = stray_connect(&addrs[i]);
                if (fd < 0)
                    break;
                char junk[16] = "not bitmover";
                BM_CHECK(send(fd, junk, sizeof(junk), MSG_NOSIGNAL) == (ssize_t)sizeof(junk));
                stray_add(fd, "short garbage", addrs[i].ifname);
            }
            char garbage[64];
            for (size_t j = 0; j < sizeof(garbage); j++)
                garbage[j] = (char)(j * 37 + 5);
            int fd = stray_connect(&addrs[i]);
            if (fd < 0)
                continue;
            tried++;
            BM_CHECK(send(fd, garbage, sizeof(garbage), MSG_NOSIGNAL) == (ssize_t)sizeof(garbage));
            stray_add(fd, "garbage", addrs[i].ifname);

            /* A well-formed HELLO from "rank 0" without the job secret. */
            struct bm_btl_tcp_hs hs;
            memset(&hs, 0, sizeof(hs));
            hs.magic = htonl(BM_BTL_TCP_HS_MAGIC);
            hs.version = htons(BM_BTL_TCP_HS_VERSION);
            hs.kind = htons(BM_BTL_TCP_HS_HELLO);
            hs.src_rank = (int32_t)htonl((uint32_t)me);
            hs.dst_rank = (int32_t)htonl((uint32_t)peer);
            hs.proof = 0x0123456789abcdefull;
            fd = stray_connect(&addrs[i]);
            BM_CHECK(fd >= 0);
            if (fd >= 0) {
                BM_CHECK(send(fd, &hs, sizeof(hs), MSG_NOSIGNAL) == (ssize_t)sizeof(hs));
                stray_add(fd, "wrong-secret", addrs[i].ifname);
            }
            /* Silence: closed after BM_BTL_TCP_HANDSHAKE_TIMEOUT. */
            fd = stray_connect(&addrs[i]);
            BM_CHECK(fd >= 0);
            stray_add(fd, "silent", addrs[i].ifname);
        }
        BM_CHECK(nstrays < STRAYS_MAX);
        stray_wait_closed(20, &seq);
        for (int i = 0; i < nstrays; i++) {
            BM_CHECK_MSG(strays[i].closed, "%s connection to %s not closed", strays[i].what,
                         strays[i].ifname);
            BM_CHECK_MSG(!strays[i].answered, "%s connection to %s answered", strays[i].what,
                         strays[i].ifname);
            close(strays[i].fd);
        }
        BM_CHECK(tried > 0);
        printf("tcp_fault: rank 0 opened stray connections to %d address(es) of rank 1\n", tried);
        /* The job is unaffected: more traffic, then DONE. */
        for (int k = 0; k < 64; k++) {
            while (in_flight >= IN_FLIGHT)
                bm_btl_base_progress();
            if (send_one(0, 65536, seq))
                seq++;
        }
        while (in_flight > 0 && now_s() - start < 60)
            bm_btl_base_progress();
        send_done();
        BM_CHECK_EQ_INT(sends_err, 0);
        BM_CHECK_EQ_INT(in_flight, 0);
    } else {
        while (!done_from_peer && now_s() - start < 90)
            bm_btl_base_progress();
        BM_CHECK(done_from_peer);
        BM_CHECK(rx_msgs >= 64);
        BM_CHECK_EQ_INT(rx_bad, 0);
        printf("tcp_fault: rank 1 received %llu intact messages\n", (unsigned long long)rx_msgs);
        /* Every stray was rejected, but at most one line per source address
         * (each of rank 0's connections to one of our addresses comes from
         * that address): never one per connection. */
        fflush(stderr);
        dup2(saved_stderr, 2);
        close(saved_stderr);
        int lines = 0, warned = 0;
        char line[2048];
        rewind(cap);
        while (fgets(line, sizeof(line), cap)) {
            fputs(line, stderr);
            lines++;
            warned += strstr(line, "rejected a connection from") != NULL ||
                      strstr(line, "sent no handshake") != NULL;
        }
        fclose(cap);
        const void *data;
        size_t len;
        BM_CHECK_EQ_INT(bm_rte_modex_get(1, "btl.tcp", &data, &len), BM_OK);
        int naddrs = ntohs(((const struct bm_btl_tcp_modex_hdr *)data)->naddrs);
        BM_CHECK_MSG(warned >= 1 && warned <= naddrs,
                     "%d stray-connection warnings for %d of our addresses and %d connections "
                     "each: not one per source per minute",
                     warned, naddrs, STRAY_ROUNDS + 2);
        printf("tcp_fault: rank 1 printed %d stray-connection warning(s) for %d address(es), %d "
               "stray connections each\n",
               warned, naddrs, STRAY_ROUNDS + 2);
    }
    fflush(stdout);
    BM_CHECK_EQ_INT(err_reports, 0);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(
            stderr,
            "usage: %s rails <MiB> | stream [idle|recover] | stray   (2 ranks, BM_BTL=self,tcp)\n",
            argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    bm_test_current = mode;
    BM_CHECK_EQ_INT(bm_rte_init(), BM_OK);
    me = bm_rte_self()->rank;
    if (bm_rte_self()->size != 2) {
        fprintf(stderr, "tcp_fault needs exactly 2 ranks\n");
        return 2;
    }
    peer = 1 - me;
    bm_status_t rc = bm_btl_base_open(NULL);
    BM_CHECK_EQ_INT(rc, BM_OK);
    if (rc != BM_OK)
        return bm_test_summary("tcp_fault");
    bm_btl_base_register_recv(TAG_DATA, on_data, NULL);
    bm_btl_base_register_recv(TAG_DONE, on_done, NULL);
    bm_btl_base_register_error(on_error, NULL);
    BM_CHECK_EQ_INT(bm_rte_modex_fence(), BM_OK);
    rc = bm_btl_base_add_procs(2);
    BM_CHECK_EQ_INT(rc, BM_OK);
    struct bm_btl_peer *p = rc == BM_OK ? bm_btl_base_peer(peer) : NULL;
    for (int i = 0; p && i < p->send.count && npaths < MAX_PATHS; i++)
        if (strcmp(p->send.paths[i].module->ops->name, "tcp") == 0)
            paths[npaths++] = p->send.paths[i];
    BM_CHECK_MSG(npaths > 0, "rank %d: no tcp path to rank %d", me, peer);
    if (npaths == 0)
        return bm_test_summary("tcp_fault");
    for (int i = 0; i < npaths; i++)
        printf("tcp_fault: rank %d path %d: %s\n", me, i, paths[i].module->name);

    if (strcmp(mode, "rails") == 0)
        run_rails(argc > 2 ? (size_t)atoi(argv[2]) : 64);
    else if (strcmp(mode, "stream") == 0)
        run_stream(argc > 2 && strcmp(argv[2], "idle") == 0,
                   argc > 2 && strcmp(argv[2], "recover") == 0);
    else if (strcmp(mode, "stray") == 0)
        run_stray();
    else
        BM_CHECK_MSG(0, "unknown mode %s", mode);

    /* Both ranks finished before anyone closes. */
    BM_CHECK_EQ_INT(bm_rte_barrier(), BM_OK);
    bm_btl_base_close();
    bm_rte_finalize();
    return bm_test_summary("tcp_fault");
}
