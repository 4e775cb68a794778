/* Unit test of the end-to-end restart's control sequence number
 * (pml/restart.c) without transports: restart ACKs are handed to
 * bm_pml_restart_ack as the sender's ACK callback would, and the ranges the
 * sender queues to send again are read off the request. A restart is served
 * once per number (its several missing ranges share the number), an older
 * number is a stale duplicate and ignored, bytes not sent yet are not sent
 * "again", a restart for another receive request or before the sender's own
 * ACK is ignored, and DONE ends the wait. */
#include "bm_test.h"
#include "pml/pml_internal.h"

#include <stdlib.h>

static struct bm_pml_hdr_ack restart(uint32_t n, bm_pml_reqid_t rreq, uint64_t a, uint64_t b)
{
    return (struct bm_pml_hdr_ack){
        .base = {.type = BM_PML_HDR_ACK, .flags = BM_PML_HDR_F_RESTART},
        .ctl_seq = n,
        .rreq = rreq,
        .offset = a,
        .length = b,
    };
}

/* Ranges queued to be sent again: how many, and their bytes in *bytes_out. */
static int resends(const struct bm_pml_request *req, size_t *bytes_out)
{
    int n = 0;
    size_t bytes = 0;
    for (const struct bm_pml_resend *rs = req->resend; rs; rs = rs->next) {
        n++;
        bytes += rs->len;
    }
    *bytes_out = bytes;
    return n;
}

static void test_restart_seq(void)
{
    struct bm_pml_request *req = bm_pml_request_alloc(BM_PML_REQ_SEND);
    const bm_pml_reqid_t rreq = 0x500000007ull;
    req->peer = 1;
    req->rndv = true;
    req->bytes = 10000;
    req->frag_next = 6000; /* sent so far */
    req->frag_end = 10000;
    size_t bytes;
    uint64_t served = bm_pml_g.restarts_served, stale = bm_pml_g.restarts_stale;

    struct bm_pml_hdr_ack ah = restart(1, rreq, 1000, 2000);
    bm_pml_restart_ack(req, &ah); /* before the sender's own ACK: nothing sent yet */
    BM_CHECK_EQ_INT(resends(req, &bytes), 0);

    req->acked = true;
    req->rreq = rreq;
    ah = restart(1, rreq + 1, 1000, 2000); /* another receive's */
    bm_pml_restart_ack(req, &ah);
    BM_CHECK_EQ_INT(resends(req, &bytes), 0);

    ah = restart(2, rreq, 1000, 2000);
    bm_pml_restart_ack(req, &ah);
    ah = restart(2, rreq, 5000, 10000); /* the same restart's second range: cut to what was sent */
    bm_pml_restart_ack(req, &ah);
    BM_CHECK_EQ_INT(resends(req, &bytes), 2);
    BM_CHECK_EQ_INT(bytes, 1000 + 1000);
    BM_CHECK_EQ_INT(bm_pml_g.restarts_served - served, 2);

    ah = restart(1, rreq, 3000, 4000); /* older than the one served: stale */
    bm_pml_restart_ack(req, &ah);
    BM_CHECK_EQ_INT(resends(req, &bytes), 2);
    BM_CHECK_EQ_INT(bm_pml_g.restarts_stale - stale, 1);

    ah = restart(3, rreq, 7000, 8000); /* nothing of it sent yet */
    bm_pml_restart_ack(req, &ah);
    BM_CHECK_EQ_INT(resends(req, &bytes), 2);

    struct bm_pml_hdr_ack done = {.base = {.type = BM_PML_HDR_ACK, .flags = BM_PML_HDR_F_DONE}};
    bm_pml_restart_ack(req, &done);
    BM_CHECK(req->done_rcvd);
    ah = restart(4, rreq, 0, 1000); /* after DONE: nothing more to send */
    bm_pml_restart_ack(req, &ah);
    BM_CHECK_EQ_INT(resends(req, &bytes), 2);

    while (req->resend) {
        struct bm_pml_resend *rs = req->resend;
        req->resend = rs->next;
        free(rs);
    }
    bm_pml_request_complete(req);
    bm_pml_request_free(req);
}

int main(void)
{
    BM_RUN(test_restart_seq);
    bm_pml_request_table_fini();
    return bm_test_summary("test_pml_restart");
}
