/* Delivery acknowledgements of the ofi transport when the provider refuses
 * the message that was to carry one. A message to a peer takes the
 * acknowledgement we owe it into its header (ack_hdr) and off the owed set;
 * when the provider then says "try again" (common under threads: its queue
 * is full) or refuses the message, the acknowledgement must be owed again,
 * else the peer's last tracked sends wait for it until their path times
 * out. Against a module built by hand whose endpoint is a stand-in that
 * refuses (or takes) every send: a descriptor send, a sendi (inject, then
 * its descriptor fallback) and a transport message (PING), each refused
 * with the acknowledgement in its header, leave it owed; a send the
 * stand-in takes carries it and clears it. */
#define BM_LOG_SUBSYS "test/ofi"
#include "ofi_standin.h"

#include <stdlib.h>
#include <string.h>

static ssize_t answer = -FI_EAGAIN; /* what the stand-in says to every send */
static struct bm_btl_ofi_hdr seen;  /* the header of the last message offered */
static int offered;

static void saw(const void *buf)
{
    memcpy(&seen, buf, sizeof(seen));
    offered++;
}

static ssize_t fake_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
                          fi_addr_t dest, void *context)
{
    (void)ep;
    (void)desc;
    (void)count;
    (void)dest;
    (void)context;
    saw(iov[0].iov_base);
    return answer;
}

static ssize_t fake_send(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest,
                         void *context)
{
    (void)ep;
    (void)len;
    (void)desc;
    (void)dest;
    (void)context;
    saw(buf);
    return answer;
}

static ssize_t fake_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest)
{
    (void)ep;
    (void)len;
    (void)dest;
    saw(buf);
    return answer;
}

static struct fi_ops_msg fake_msg = {
    .size = sizeof(struct fi_ops_msg),
    .send = fake_send,
    .sendv = fake_sendv,
    .inject = fake_inject,
};

static int errors_reported;
static void on_error(struct bm_btl_module *mod, const struct bm_btl_error *err, void *cbdata)
{
    (void)mod;
    (void)err;
    (void)cbdata;
    errors_reported++;
}

/* Is the acknowledgement of the peer's stream 0 owed (and listed to go)? */
static bool owed(const struct bm_btl_ofi_endpoint *ep)
{
    return (atomic_load(&ep->ack_due) & 1) != 0 && atomic_load(&ep->ack_listed);
}

/* The last message offered carried the acknowledgement of stream 0 up to 5. */
static bool carried(void)
{
    return (seen.flags & BM_BTL_OFI_HDR_F_ACK) && seen.ack_ctx == 0 && seen.ack == 5;
}

int main(void)
{
    static struct ofi_standin s;
    ofi_standin_init(&s, &fake_msg, on_error);
    struct bm_btl_ofi_module *m = &s.m;
    struct bm_btl_ofi_endpoint *peer = &s.peer;
    m->acks = true;
    m->ack_list = calloc(2, sizeof(*m->ack_list));
    pthread_mutex_init(&m->ack_lock, NULL);
    BM_CHECK_EQ_INT(bm_btl_ofi_ack_ep_init(peer, false), BM_OK);
    struct bm_btl_endpoint *bep = (struct bm_btl_endpoint *)peer;

    /* Message 5 of the peer's stream 0 arrived: we owe its acknowledgement. */
    struct bm_btl_ofi_hdr h = {.magic = BM_BTL_OFI_HDR_MAGIC, .src_rank = 1, .seq = 5, .ctx = 0};
    bm_btl_ofi_ack_received(peer, &h);
    BM_CHECK(owed(peer));

    /* A descriptor send told "try again". */
    struct bm_btl_descriptor *d = bm_btl_ofi_alloc(&m->super, bep, 0, 100, 0);
    BM_CHECK(d != NULL);
    int rc = bm_btl_ofi_send(&m->super, bep, d, BM_BTL_TAG_TEST);
    BM_CHECK_EQ_INT(rc, BM_ERR_OUT_OF_RESOURCE);
    BM_CHECK_MSG(offered == 1 && carried(), "the refused send did not carry the acknowledgement");
    BM_CHECK_MSG(owed(peer), "the acknowledgement a refused send carried is lost");
    bm_btl_ofi_free(&m->super, d);

    /* A sendi: inject refused, then its descriptor fallback refused. */
    offered = 0;
    char small[8] = {0};
    rc = bm_btl_ofi_sendi(&m->super, bep, small, sizeof(small), NULL, 0, 0, 0, BM_BTL_TAG_TEST,
                          NULL);
    BM_CHECK_EQ_INT(rc, BM_ERR_OUT_OF_RESOURCE);
    BM_CHECK_EQ_INT(offered, 2);
    BM_CHECK(carried());
    BM_CHECK_MSG(owed(peer), "the acknowledgement a refused sendi carried is lost");

    /* A transport message (a PING of the liveness watcher) refused. */
    offered = 0;
    BM_CHECK(bm_btl_ofi_send_ctl(peer, BM_BTL_OFI_CTL_PING, 1) != BM_OK);
    BM_CHECK(offered == 1 && carried());
    BM_CHECK_MSG(owed(peer), "the acknowledgement a refused PING carried is lost");

    /* A refusal for good (not "try again") owes it again too. */
    answer = -FI_EIO;
    offered = 0;
    d = bm_btl_ofi_alloc(&m->super, bep, 0, 100, 0);
    BM_CHECK(d != NULL);
    rc = bm_btl_ofi_send(&m->super, bep, d, BM_BTL_TAG_TEST);
    BM_CHECK(rc != BM_OK);
    BM_CHECK(offered == 1 && carried());
    BM_CHECK(atomic_load(&peer->ack_due) & 1);
    BM_CHECK_EQ_INT(errors_reported, 1);
    bm_btl_ofi_free(&m->super, d);
    bm_btl_ofi_endpoint_fail_run(m);

    /* Taken: the message carries it and nothing is owed any more. */
    answer = 0;
    atomic_store(&peer->fail_status, 0);
    offered = 0;
    d = bm_btl_ofi_alloc(&m->super, bep, 0, 100, 0);
    BM_CHECK(d != NULL);
    rc = bm_btl_ofi_send(&m->super, bep, d, BM_BTL_TAG_TEST);
    BM_CHECK_EQ_INT(rc, BM_OK);
    BM_CHECK(offered == 1 && carried());
    BM_CHECK_EQ_INT(atomic_load(&peer->ack_due) & 1, 0);

    bm_btl_ofi_ack_ep_fini(peer);
    ofi_standin_fini(&s);
    free(m->ack_list);
    pthread_mutex_destroy(&m->ack_lock);
    return bm_test_summary("ofi_ack_refused");
}
