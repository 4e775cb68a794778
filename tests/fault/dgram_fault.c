/* Fault tests of the dgram transport through the real transport layer
 * (bm_rte + btl_base, no PML), run with 2 ranks by bmrun, on one host or on
 * two network namespaces (tests/fault/dgram_netns.sh). Modes:
 *   stream N       both ranks send N messages of mixed sizes (1 B .. 200 KB)
 *                  to each other; every message must arrive intact exactly
 *                  once and every send must complete with success.
 *   blackhole F    rank 0 streams to rank 1; when file F appears (the script
 *                  black-holed the path) it measures how long the transport
 *                  takes to report the path failed (printed in ms), checks
 *                  that outstanding sends completed with an error, creates
 *                  F.failed, waits for the recovery report after the script
 *                  removed the black hole, and sends again: every message
 *                  after recovery must arrive, none twice.
 *   stray          rank 0 streams to rank 1 while it also fires random bytes,
 *                  truncated and foreign-job datagrams and packets claiming
 *                  unknown senders at rank 1's dgram ports, and spoofed ones:
 *                  sent from rank 0's own dgram sockets (address and port
 *                  exactly rank 0's), with the right job key, sender and
 *                  module numbers and a forged MAC (ACKs acknowledging what
 *                  was never sent, FRAGs far ahead in the window); the stream
 *                  must be undisturbed, no path declared failed, and rank
 *                  1's counters must show the drops (bad_mac with
 *                  BM_BTL_DGRAM_AUTH on), and its MAC key must be the one
 *                  derived from bmrun's job secret (not published).
 *   mtu F          the path drops full-size datagrams (the script's iptables
 *                  length rule): rank 0 sends, the connectivity check must
 *                  report an MTU problem; rank 0 then creates F, for which
 *                  rank 1 (answering pings meanwhile) waits.
 *   busy MS        rank 1 computes MS ms without a progress call (the old
 *                  failure bound was ~650 ms) while rank 0's messages to it
 *                  (8 B .. 200 KB) wait for its ACKs: no path may be declared
 *                  failed and every message must arrive once; rank 0's
 *                  counters must show the mechanism (retransmit timeouts,
 *                  liveness pings answered by rank 1's responder thread, and
 *                  failure checks that found rank 1 busy, i.e. the old rule
 *                  would have failed the path: the ctest runs it with
 *                  FAIL_MS 1000 so that a rank 0 starved of CPU, whose
 *                  timers fire late, still reaches the rule within MS);
 *                  rank 1 prints how long after its return the last
 *                  message arrived.
 *   pingpong       not a test: 8-byte ping-pong latency and 1 MiB streaming
 *                  bandwidth over the transport layer, printed by rank 0
 *                  (for choosing defaults; speed targets live in bench/). */
#define BM_LOG_SUBSYS "test/dgram"
#include "bm_test.h"
#include "btl/btl.h"
#include "btl/dgram/dgram.h"
#include "dgram_faults_seen.h"
#include "runtime/rte.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TAG      BM_BTL_TAG_TEST
#define TAG_DONE (BM_BTL_TAG_TEST + 1)
#define MAXID    200000

static int me, other;
static struct bm_btl_module *mod;
static struct bm_btl_endpoint *ep;
/* every dgram path to the peer (one per paired interface): stream spreads
 * its messages over all of them */
static struct bm_btl_module *rail_mod[8];
static struct bm_btl_endpoint *rail_ep[8];
static int nrails;
static unsigned char *seen;
static int received, bad, done_received;
static int completions, completion_errors;
static int reports[4];
static uint64_t report_ns[4];

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static size_t size_of(uint32_t id)
{
    uint32_t x = id * 2654435761u;
    switch (id % 8) {
    case 0:
        return 8 + x % 200000;
    case 1:
    case 2:
        return 8 + x % 9000;
    default:
        return 8 + x % 700;
    }
}

static unsigned char pat(int from, uint32_t id, size_t i)
{
    return (unsigned char)(from * 131 + id * 31u + i * 7u + (i >> 9));
}

static void on_recv(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata)
{
    (void)m;
    (void)cbdata;
    const unsigned char *p = d->seg[0].addr;
    size_t len = d->seg[0].len;
    uint32_t id;
    if (len < 8) {
        bad++;
        return;
    }
    memcpy(&id, p, 4);
    if (id >= MAXID || len != size_of(id)) {
        bad++;
        return;
    }
    for (size_t i = 8; i < len; i++)
        if (p[i] != pat(d->peer, id, i)) {
            bad++;
            return;
        }
    if (seen[id]++)
        bad++; /* twice */
    received++;
}

static int pp_mode, pp_count;

static void pp_reply(void)
{
    struct bm_btl_descriptor *d;
    while (!(d = bm_btl_alloc(mod, ep, 0, 8, BM_BTL_DES_F_BTL_OWNED)))
        bm_btl_base_progress();
    memset(d->seg[0].addr, 0, 8);
    d->cbfunc = NULL;
    if (bm_btl_send(mod, ep, d, TAG + 2) != BM_OK)
        abort();
}

static void on_pp(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata)
{
    (void)m;
    (void)d;
    (void)cbdata;
    pp_count++;
    if (me == 1 && pp_mode == 0)
        pp_reply();
}

static void on_done(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata)
{
    (void)m;
    (void)d;
    (void)cbdata;
    done_received++;
}

static void on_sent(struct bm_btl_module *m, struct bm_btl_endpoint *e,
                    struct bm_btl_descriptor *des, int status)
{
    (void)m;
    (void)e;
    (void)des;
    completions++;
    if (status != BM_OK)
        completion_errors++;
}

static char last_what[512];

static void on_error(struct bm_btl_module *m, const struct bm_btl_error *err, void *cbdata)
{
    (void)m;
    (void)cbdata;
    reports[err->kind]++;
    report_ns[err->kind] = now_ns();
    snprintf(last_what, sizeof(last_what), "%s", err->what);
    printf("rank %d: transport report %d: %s\n", me, err->kind, err->what);
    fflush(stdout);
}

/* Start sending message id; BM_OK, or the transport's refusal. */
static int send_one(uint32_t id, bm_btl_tag_t tag)
{
    size_t len = tag == TAG ? size_of(id) : 8;
    struct bm_btl_descriptor *d = NULL;
    while (!(d = bm_btl_alloc(mod, ep, 0, len, BM_BTL_DES_F_BTL_OWNED)))
        bm_btl_base_progress();
    unsigned char *p = d->seg[0].addr;
    memcpy(p, &id, 4);
    memset(p + 4, 0, 4);
    for (size_t i = 8; i < len; i++)
        p[i] = pat(me, id, i);
    d->cbfunc = on_sent;
    int rc = bm_btl_send(mod, ep, d, tag);
    if (rc != BM_OK && rc != BM_BTL_DONE)
        bm_btl_free(mod, d);
    return rc;
}

static void progress_until(int *counter, int target, double seconds)
{
    uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
    while (*counter < target && now_ns() < end)
        bm_btl_base_progress();
}

static void stream(int n)
{
    int sent = 0;
    struct bm_btl_module *m0 = mod;
    struct bm_btl_endpoint *e0 = ep;
    while (sent < n || completions < n || received < n) {
        if (sent < n && sent - completions < 256) {
            mod = rail_mod[sent % nrails];
            ep = rail_ep[sent % nrails];
            BM_CHECK_EQ_INT(send_one((uint32_t)sent, TAG), BM_OK);
            mod = m0;
            ep = e0;
            sent++;
        }
        bm_btl_base_progress();
    }
    BM_CHECK_EQ_INT(completion_errors, 0);
    BM_CHECK_EQ_INT(bad, 0);
    BM_CHECK_EQ_INT(received, n);
    bm_test_dgram_faults_seen(rail_mod, nrails, me);
    printf("rank %d: stream of %d messages over %d dgram path(s) ok\n", me, n, nrails);
}

static void pingpong(void)
{
    int iters = 20000, warm = 1000;
    uint64_t t0 = 0;
    if (me == 0) {
        for (int i = 0; i < iters + warm; i++) {
            if (i == warm)
                t0 = now_ns();
            int target = pp_count + 1;
            pp_reply();
            while (pp_count < target)
                bm_btl_base_progress();
        }
        double us = (double)(now_ns() - t0) / 1e3 / iters / 2;
        printf("pingpong 8 B: %.2f us one way\n", us);
    } else {
        while (pp_count < iters + warm)
            bm_btl_base_progress();
    }
    /* bandwidth: rank 0 streams 1 MiB messages as max_send_size pieces */
    pp_mode = 1;
    size_t piece = mod->max_send_size, total = (size_t)64 << 20;
    if (me == 0) {
        int before = completions;
        int n = 0;
        t0 = now_ns();
        for (size_t off = 0; off < total; off += piece) {
            struct bm_btl_descriptor *d;
            while (!(d = bm_btl_alloc(mod, ep, 0, piece, BM_BTL_DES_F_BTL_OWNED)))
                bm_btl_base_progress();
            d->cbfunc = on_sent;
            while (n - (completions - before) >= 64)
                bm_btl_base_progress();
            BM_CHECK_EQ_INT(bm_btl_send(mod, ep, d, TAG + 2), BM_OK);
            n++;
        }
        while (completions - before < n)
            bm_btl_base_progress();
        double s = (double)(now_ns() - t0) / 1e9;
        printf("stream %zu MiB in %zu B sends: %.1f MB/s\n", total >> 20, piece,
               (double)total / s / 1e6);
    }
}

static bool file_exists(const char *p)
{
    return access(p, F_OK) == 0;
}

static void touch(const char *p);

static void mtu(const char *flag)
{
    if (me == 1) {
        uint64_t end = now_ns() + 120000000000ull;
        while (!file_exists(flag) && now_ns() < end)
            bm_btl_base_progress();
        return;
    }
    uint64_t t0 = now_ns();
    BM_CHECK_EQ_INT(send_one(0, TAG), BM_OK); /* message 0 is large */
    progress_until(&reports[BM_BTL_ERROR_PEER], 1, 60);
    BM_CHECK_EQ_INT(reports[BM_BTL_ERROR_PEER], 1);
    BM_CHECK_MSG(strstr(last_what, "MTU problem") != NULL, "report: %s", last_what);
    printf("rank 0: MTU problem reported after %llu ms\n",
           (unsigned long long)((report_ns[BM_BTL_ERROR_PEER] - t0) / 1000000));
    touch(flag);
}

static void touch(const char *p)
{
    FILE *f = fopen(p, "w");
    if (f)
        fclose(f);
}

static void blackhole(const char *flag)
{
    char failed_flag[512];
    snprintf(failed_flag, sizeof(failed_flag), "%s.failed", flag);
    if (me == 1)
        return; /* receives until rank 0 is done (finish), then check_blackhole */
    /* phase 1: a healthy stream */
    uint32_t id = 0;
    for (; id < 200; id++)
        BM_CHECK_EQ_INT(send_one(id, TAG), BM_OK);
    progress_until(&completions, 200, 30);
    BM_CHECK_EQ_INT(completion_errors, 0);
    printf("rank 0: phase 1 done, waiting for the black hole\n");
    fflush(stdout);
    while (!file_exists(flag))
        bm_btl_base_progress();
    uint64_t t0 = now_ns();
    /* keep traffic outstanding until the failure is reported */
    int started = 200;
    while (reports[BM_BTL_ERROR_PEER] == 0 && now_ns() - t0 < 60000000000ull) {
        if (started - completions < 32) {
            int rc = send_one(id++, TAG);
            if (rc == BM_OK)
                started++;
        }
        bm_btl_base_progress();
    }
    BM_CHECK_EQ_INT(reports[BM_BTL_ERROR_PEER], 1);
    printf("rank 0: path failure reported after %llu ms\n",
           (unsigned long long)((report_ns[BM_BTL_ERROR_PEER] - t0) / 1000000));
    progress_until(&completions, started, 5);
    BM_CHECK_EQ_INT(completions, started);
    BM_CHECK(completion_errors > 0);
    BM_CHECK_EQ_INT(send_one(id++, TAG), BM_ERR_LINK_DOWN);
    fflush(stdout);
    touch(failed_flag);
    progress_until(&reports[BM_BTL_ERROR_RECOVERED], 1, 60);
    BM_CHECK_EQ_INT(reports[BM_BTL_ERROR_RECOVERED], 1);
    printf("rank 0: path recovered\n");
    int errs = completion_errors;
    int before = completions;
    for (uint32_t k = 100000; k < 100200; k++)
        BM_CHECK_EQ_INT(send_one(k, TAG), BM_OK);
    progress_until(&completions, before + 200, 30);
    BM_CHECK_EQ_INT(completions, before + 200);
    BM_CHECK_EQ_INT(completion_errors, errs);
    printf("rank 0: blackhole test done\n");
}

static void check_blackhole(void)
{
    BM_CHECK_EQ_INT(bad, 0);
    for (uint32_t id = 100000; id < 100200; id++)
        BM_CHECK_MSG(seen[id] == 1, "message %u after recovery: seen %d times", id, seen[id]);
}

/* Rank 0 tells rank 1 it is done and waits for the ACK; rank 1 keeps
 * answering for a while after, so that a lost ACK is answered again. */
static void finish(void)
{
    if (me == 0) {
        int before = completions;
        BM_CHECK_EQ_INT(send_one(0, TAG_DONE), BM_OK);
        progress_until(&completions, before + 1, 60);
        BM_CHECK_EQ_INT(completions, before + 1);
    } else {
        progress_until(&done_received, 1, 120);
        BM_CHECK_EQ_INT(done_received, 1);
        int never = 0;
        progress_until(&never, 1, 0.3);
    }
}

/* A compute phase: no progress call for ms milliseconds (the CPU kept busy,
 * as an application's loop keeps it). */
static void spin_ms(int ms)
{
    uint64_t end = now_ns() + (uint64_t)ms * 1000000u;
    volatile uint64_t x = 0;
    while (now_ns() < end)
        x += 1;
}

#define BUSY_MSGS 24

static void busy(int ms)
{
    if (me == 1) {
        /* rank 1 computes from its first message on: rank 0's first
         * contact (connectivity check) and the rest of its messages meet a
         * peer that makes no progress */
        progress_until(&received, 1, 30);
        BM_CHECK(received >= 1);
        int early = received;
        spin_ms(ms);
        uint64_t back = now_ns();
        progress_until(&received, BUSY_MSGS, 30);
        printf("rank 1: computed %d ms without progress (%d of %d messages in before); all in "
               "%.1f ms after returning\n",
               ms, early, BUSY_MSGS, (double)(now_ns() - back) / 1e6);
        BM_CHECK_EQ_INT(received, BUSY_MSGS);
        BM_CHECK_EQ_INT(bad, 0);
        return; /* finish, then check_busy */
    }
    BM_CHECK_EQ_INT(send_one(0, TAG), BM_OK);
    int never = 0;
    progress_until(&never, 1, 0.1); /* rank 1 is computing by now */
    for (uint32_t id = 1; id < BUSY_MSGS; id++)
        BM_CHECK_EQ_INT(send_one(id, TAG), BM_OK);
    progress_until(&completions, BUSY_MSGS, (double)ms / 1000 + 30);
    BM_CHECK_EQ_INT(completions, BUSY_MSGS);
    BM_CHECK_EQ_INT(completion_errors, 0);
    BM_CHECK_MSG(reports[BM_BTL_ERROR_PEER] == 0, "path declared failed: %s", last_what);
    struct bm_btl_dgram_stats s;
    bm_btl_dgram_stats_get((struct bm_btl_dgram_module *)mod, &s);
    printf("rank 0: rto_events %llu resends_timeout %llu live_pings %llu live_answers %llu "
           "live_held %llu path_failures %llu\n",
           (unsigned long long)s.rto_events, (unsigned long long)s.resends_timeout,
           (unsigned long long)s.live_pings, (unsigned long long)s.live_answers,
           (unsigned long long)s.live_held, (unsigned long long)s.path_failures);
    const struct bm_btl_dgram_module *dm = (const struct bm_btl_dgram_module *)mod;
    BM_CHECK_EQ_INT((int)s.path_failures, 0);
    /* the mechanism: segments were resent on timeouts, the peer's
     * responder answered, and the failure rule (FAIL_TIMEOUTS consecutive
     * timeouts or FAIL_MS of silence) fired and was held back because of
     * those answers: without them the path would have been failed */
    BM_CHECK(s.rto_events >= 3);
    BM_CHECK(s.resends_timeout >= 3);
    BM_CHECK(s.live_pings > 0);
    BM_CHECK(s.live_answers > 0);
    BM_CHECK_MSG(s.live_held > 0,
                 "the silence (%d ms) never reached the failure rule (%d timeouts "
                 "or %d ms)",
                 ms, dm->cfg.fail_timeouts, dm->cfg.fail_ms);
}

static void check_busy(void)
{
    struct bm_btl_dgram_stats s;
    bm_btl_dgram_stats_get((struct bm_btl_dgram_module *)mod, &s);
    printf("rank 1: liveness pings answered by the responder thread: %llu\n",
           (unsigned long long)s.live_answered);
    BM_CHECK(s.live_answered > 0);
    BM_CHECK_EQ_INT((int)s.path_failures, 0);
}

static void stray_send(void);

static void stray(void)
{
    if (me == 1)
        return; /* receives until rank 0 is done (finish), then check_stray */
    stray_send();
}

static void check_stray(void)
{
    {
        BM_CHECK_EQ_INT(received, 3000);
        BM_CHECK_EQ_INT(bad, 0);
        struct bm_btl_dgram_stats s;
        bm_btl_dgram_stats_get((struct bm_btl_dgram_module *)mod, &s);
        BM_CHECK(s.bad_short > 0);
        BM_CHECK(s.bad_magic + s.bad_checksum > 0);
        BM_CHECK(s.path_failures == 0);
        const struct bm_btl_dgram_module *dm = (const struct bm_btl_dgram_module *)mod;
        if (dm->cfg.auth) {
            /* foreign, unknown-sender and spoofed datagrams carry no valid MAC */
            BM_CHECK(s.bad_mac >= 300);
            /* bmrun runs it: the key comes from the job secret and is not
             * published with the address */
            static const uint8_t zero[16];
            BM_CHECK_MSG(dm->job_keyed, "the MAC key was not derived from the job secret");
            BM_CHECK(memcmp(dm->addr.mac_key, zero, sizeof(zero)) == 0);
        } else {
            BM_CHECK(s.bad_job > 0);
            BM_CHECK(s.bad_sender > 0);
        }
        printf("rank 1: stray datagrams dropped: short %llu magic %llu checksum %llu job %llu "
               "sender %llu mac %llu; stream intact, %llu path failures\n",
               (unsigned long long)s.bad_short, (unsigned long long)s.bad_magic,
               (unsigned long long)s.bad_checksum, (unsigned long long)s.bad_job,
               (unsigned long long)s.bad_sender, (unsigned long long)s.bad_mac,
               (unsigned long long)s.path_failures);
    }
}

static void stray_send(void)
{
    const void *blob;
    size_t len;
    BM_CHECK_EQ_INT(bm_rte_modex_get(1, "btl.dgram", &blob, &len), BM_OK);
    const struct bm_btl_dgram_addr *pa = blob;
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in to[2];
    for (int c = 0; c < 2; c++) {
        memset(&to[c], 0, sizeof(to[c]));
        to[c].sin_family = AF_INET;
        to[c].sin_addr.s_addr = pa->ipv4;
        to[c].sin_port = c ? pa->port_data : pa->port_prio;
    }
    unsigned r = 12345;
    int sent = 0, spoofed = 0;
    unsigned char junk[1400];
    struct bm_btl_dgram_module *dm = (struct bm_btl_dgram_module *)mod;
    while (sent < 3000 || completions < 3000) {
        if (sent < 3000 && sent - completions < 256) {
            BM_CHECK_EQ_INT(send_one((uint32_t)sent, TAG), BM_OK);
            sent++;
        }
        if (sent % 4 == 0) {
            size_t n = (size_t)(r % 200);
            for (size_t i = 0; i < n; i++) {
                r = r * 1103515245u + 12345u;
                junk[i] = (unsigned char)(r >> 16);
            }
            struct bm_dgram_hdr h;
            memset(&h, 0, sizeof(h));
            h.magic = BM_DGRAM_MAGIC;
            h.version = BM_DGRAM_VERSION;
            h.type = BM_DGRAM_T_FRAG;
            h.tag = TAG;
            h.seq = (uint16_t)r;
            h.payload_len = 0;
            switch (sent % 5) {
            case 0: /* another job's packet, well formed */
                h.job_key = 0x5eed5eed5eedull + (uint64_t)r;
                break;
            case 1: /* a rank that is not in the job */
                h.job_key = ((struct bm_btl_dgram_module *)mod)->job_key;
                h.sender = 77;
                break;
            case 2: /* pretends to be rank 0, from the wrong address */
                h.job_key = ((struct bm_btl_dgram_module *)mod)->job_key;
                h.sender = 0;
                break;
            default:
                break;
            }
            if (sent % 5 <= 2) {
                h.checksum = bm_btl_dgram_checksum(&h, sizeof(h));
                memcpy(junk, &h, sizeof(h));
                n = sizeof(h);
            }
            (void)sendto(fd, junk, n, 0, (struct sockaddr *)&to[sent % 2], sizeof(to[0]));
            (void)sendto(fd, junk, n > 20 ? 20 : n, 0, (struct sockaddr *)&to[(sent + 1) % 2],
                         sizeof(to[0]));
            if (!dm->cfg.auth)
                continue; /* on a trusted fabric, a perfect spoof is accepted */
            /* Spoofed: from rank 0's own sockets (exactly its address and
             * port), the right job key, sender and modules, a forged MAC. */
            memset(&h, 0, sizeof(h));
            h.magic = BM_DGRAM_MAGIC;
            h.version = BM_DGRAM_VERSION;
            h.sender = 0;
            h.src_module = dm->addr.index;
            h.dst_module = pa->index;
            h.snd_session = 1;
            h.ack_session = 1;
            h.flags = BM_DGRAM_F_MAC | BM_DGRAM_F_ACK_VALID;
            h.job_key = ((uint64_t)r << 32) ^ r ^ dm->job_key; /* a forged MAC */
            h.type = sent % 8 ? BM_DGRAM_T_ACK : BM_DGRAM_T_FRAG;
            h.tag = h.type == BM_DGRAM_T_FRAG ? TAG : 0;
            h.seq = (uint16_t)(r >> 3);
            h.ack_seq = (uint16_t)(r >> 7); /* acknowledges what was never sent */
            h.sack = r;
            h.checksum = bm_btl_dgram_checksum(&h, sizeof(h));
            for (int c = 0; c < 2; c++)
                (void)sendto(dm->ch[c].fd, &h, sizeof(h), 0, (struct sockaddr *)&to[c],
                             sizeof(to[0]));
            spoofed += 2;
        }
        bm_btl_base_progress();
    }
    close(fd);
    BM_CHECK_EQ_INT(completion_errors, 0);
    if (dm->cfg.auth)
        printf("rank 0: %d spoofed datagrams sent from its own dgram ports\n", spoofed);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s stream N | blackhole FLAGFILE | stray\n", argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    BM_CHECK_EQ_INT(bm_rte_init(), BM_OK);
    me = bm_rte_self()->rank;
    other = 1 - me;
    if (bm_rte_self()->size != 2) {
        fprintf(stderr, "%s: run with 2 ranks\n", argv[0]);
        return 2;
    }
    seen = calloc(MAXID, 1);
    BM_CHECK_EQ_INT(bm_btl_base_open(NULL), BM_OK);
    bm_btl_base_register_recv(TAG, on_recv, NULL);
    bm_btl_base_register_recv(TAG_DONE, on_done, NULL);
    bm_btl_base_register_recv(TAG + 2, on_pp, NULL);
    bm_btl_base_register_error(on_error, NULL);
    BM_CHECK_EQ_INT(bm_rte_modex_fence(), BM_OK);
    BM_CHECK_EQ_INT(bm_btl_base_add_procs(2), BM_OK);
    struct bm_btl_peer *peer = bm_btl_base_peer(other);
    for (int i = 0; peer && i < peer->send.count; i++)
        if (strcmp(peer->send.paths[i].module->ops->name, "dgram") == 0) {
            mod = peer->send.paths[i].module;
            ep = peer->send.paths[i].endpoint;
            if (nrails < 8) {
                rail_mod[nrails] = mod;
                rail_ep[nrails++] = ep;
            }
        }
    BM_CHECK_MSG(mod != NULL, "rank %d: dgram does not reach rank %d (set BM_BTL=self,dgram)", me,
                 other);
    if (mod) {
        if (strcmp(argv[1], "stream") == 0)
            stream(argc > 2 ? atoi(argv[2]) : 1000);
        else if (strcmp(argv[1], "blackhole") == 0 && argc > 2)
            blackhole(argv[2]);
        else if (strcmp(argv[1], "stray") == 0)
            stray();
        else if (strcmp(argv[1], "pingpong") == 0)
            pingpong();
        else if (strcmp(argv[1], "busy") == 0 && argc > 2)
            busy(atoi(argv[2]));
        else if (strcmp(argv[1], "mtu") == 0 && argc > 2)
            mtu(argv[2]);
        else
            BM_CHECK_MSG(0, "unknown mode %s", argv[1]);
    }
    if (mod && strcmp(argv[1], "mtu") != 0) {
        finish();
        if (me == 1 && strcmp(argv[1], "blackhole") == 0)
            check_blackhole();
        if (me == 1 && strcmp(argv[1], "stray") == 0)
            check_stray();
        if (me == 1 && strcmp(argv[1], "busy") == 0)
            check_busy();
    }
    BM_CHECK_EQ_INT(bm_rte_barrier(), BM_OK);
    bm_btl_base_close();
    bm_rte_finalize();
    free(seen);
    char name[64];
    snprintf(name, sizeof(name), "dgram_fault[%s] rank %d", argv[1], me);
    return bm_test_summary(name);
}
