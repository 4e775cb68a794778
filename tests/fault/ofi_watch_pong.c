/* The liveness watcher of the ofi transport (bm_btl_ofi_endpoint_watch)
 * and the PONG that answers its PING, driven with chosen clock values
 * against a module built by hand (a stand-in endpoint that takes every
 * send). BM_BTL_OFI_TIMEOUT = 1 s: a peer we wait to hear from gets a PING
 * after half of it; the path fails when the PING is not answered within
 * the other half. Checked:
 *   - a PONG starts a fresh quiet period: a path that stays busy (something
 *     owed at every pass) and answers every PING is never failed (it was,
 *     one timeout after it first fell quiet);
 *   - a PONG read before the PING's post returned (another thread's
 *     progress; here the stand-in delivers it from inside fi_send) counts:
 *     the PING was marked out after the post, so the late mark outlived
 *     the answer and failed the path half a timeout later;
 *   - an unanswered PING still fails the path, with the sentence that says
 *     so, and an answer to an old PING is ignored. */
#define BM_LOG_SUBSYS "test/ofi"
#include "ofi_standin.h"

#include <string.h>

#define MS 1000000ull

static struct ofi_standin s;
static bool pong_inside;   /* the stand-in answers a PING from inside fi_send */
static uint32_t last_ping; /* the number of the last PING sent */
static int pings_sent;
static int errors_reported;
static char error_what[512];

static ssize_t fake_send(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest,
                         void *context)
{
    (void)ep;
    (void)desc;
    (void)dest;
    (void)context;
    struct bm_btl_ofi_ctl_msg msg;
    if (len != sizeof(struct bm_btl_ofi_hdr) + sizeof(msg))
        return 0;
    memcpy(&msg, (const char *)buf + sizeof(struct bm_btl_ofi_hdr), sizeof(msg));
    if (msg.ctl != BM_BTL_OFI_CTL_PING)
        return 0;
    pings_sent++;
    last_ping = msg.seq;
    if (pong_inside) {
        struct bm_btl_ofi_ctl_msg pong = {.ctl = BM_BTL_OFI_CTL_PONG, .seq = msg.seq};
        bm_btl_ofi_endpoint_ctl(&s.peer, &pong);
    }
    return 0;
}

static struct fi_ops_msg fake_msg = {.size = sizeof(struct fi_ops_msg), .send = fake_send};

static void on_error(struct bm_btl_module *mod, const struct bm_btl_error *err, void *cbdata)
{
    (void)mod;
    (void)cbdata;
    errors_reported++;
    snprintf(error_what, sizeof(error_what), "%s", err->what ? err->what : "");
}

/* A pass that finds nothing owed (a quiet period ends), then busy again. */
static void lull(struct bm_btl_ofi_module *m, uint64_t t)
{
    atomic_store(&s.peer.unanswered, 0);
    bm_btl_ofi_endpoint_watch(m, t);
    atomic_store(&s.peer.unanswered, 1);
}

static void pong(uint32_t seq)
{
    struct bm_btl_ofi_ctl_msg msg = {.ctl = BM_BTL_OFI_CTL_PONG, .seq = seq};
    bm_btl_ofi_endpoint_ctl(&s.peer, &msg);
}

int main(void)
{
    ofi_standin_init(&s, &fake_msg, on_error);
    s.comp.cfg.timeout_ms = 1000;
    struct bm_btl_ofi_module *m = &s.m;
    struct bm_btl_ofi_endpoint *peer = &s.peer;

    /* A busy path: we always sent since we last heard (unanswered stays 1
     * at every pass), and the peer answers each PING at once. */
    uint64_t t0 = 1000 * MS;
    atomic_store(&s.peer.unanswered, 1);
    for (uint64_t t = t0; t <= t0 + 5000 * MS; t += 100 * MS) {
        int before = pings_sent;
        bm_btl_ofi_endpoint_watch(m, t);
        if (pings_sent > before)
            pong(last_ping);
    }
    BM_CHECK_MSG(pings_sent >= 3, "%d PINGs in 5 s of a busy path", pings_sent);
    BM_CHECK_MSG(errors_reported == 0 && !bm_btl_ofi_ep_failed(peer),
                 "a busy path that answered every PING was failed: %s", error_what);

    /* The PONG comes before fi_send returns. */
    pong_inside = true;
    int before = pings_sent;
    uint64_t t1 = t0 + 10000 * MS;
    lull(m, t1 - 100 * MS);
    for (uint64_t t = t1; t <= t1 + 5000 * MS; t += 100 * MS)
        bm_btl_ofi_endpoint_watch(m, t);
    pong_inside = false;
    BM_CHECK(pings_sent > before);
    BM_CHECK_MSG(errors_reported == 0 && !bm_btl_ofi_ep_failed(peer),
                 "a PING answered before its post returned failed the path: %s", error_what);

    /* Nobody answers (an answer to an old PING does not count): fails
     * within the timeout after the quiet period began, plus a pass. */
    uint64_t t2 = t1 + 10000 * MS;
    lull(m, t2 - 100 * MS);
    uint64_t failed_at = 0;
    for (uint64_t t = t2; t <= t2 + 3000 * MS && !failed_at; t += 100 * MS) {
        bm_btl_ofi_endpoint_watch(m, t);
        pong(last_ping - 1);
        if (bm_btl_ofi_ep_failed(peer))
            failed_at = t;
    }
    BM_CHECK_MSG(failed_at && failed_at - t2 <= 1200 * MS,
                 "an unanswered peer failed after %llu ms",
                 (unsigned long long)((failed_at - t2) / MS));
    BM_CHECK_EQ_INT(errors_reported, 1);
    BM_CHECK(strstr(error_what, "not even an answer to a probe") != NULL);
    BM_CHECK(strstr(error_what, "rank 1") != NULL);
    BM_CHECK_EQ_INT(atomic_load(&m->stats.path_failures), 1);

    bm_btl_ofi_endpoint_fail_run(m);
    ofi_standin_fini(&s);
    return bm_test_summary("ofi_watch_pong");
}
