/* Unit tests of the PML matching engine without transports: MATCH
 * fragments are built by hand and fed to bm_pml_match_incoming as a
 * transport would deliver them, receives are posted with bm_pml_irecv.
 * Covers MPI order with out-of-order arrival, duplicates, wildcards and
 * their post-order fairness, contexts, truncation, zero bytes, cancel,
 * probes, sequence wrap-around, malformed headers, and 10,000 unexpected
 * messages received in the worst order for a linear queue. */
#include "bm_test.h"
#include "pml/pml_internal.h"

#include <stdlib.h>
#include <string.h>

static void feed(uint32_t cid, int src, int tag, uint32_t seq, const void *payload, size_t len)
{
    char *frag = malloc(sizeof(struct bm_pml_hdr_match) + len + 1);
    struct bm_pml_hdr_match mh = {
        .base = {.type = BM_PML_HDR_MATCH}, .cid = cid, .src = src, .tag = tag, .seq = seq};
    memcpy(frag, &mh, sizeof(mh));
    if (len)
        memcpy(frag + sizeof(mh), payload, len);
    bm_pml_match_incoming(src + 100, frag, sizeof(mh) + len);
    free(frag);
}

static void feed_int(uint32_t cid, int src, int tag, uint32_t seq, int value)
{
    feed(cid, src, tag, seq, &value, sizeof(value));
}

static struct bm_pml_request *post(int *buf, uint32_t cid, int src, int tag)
{
    struct bm_pml_request *req = NULL;
    bm_status_t rc = bm_pml_irecv(buf, sizeof(*buf), cid, src, tag, &req);
    BM_CHECK_EQ_INT(rc, BM_OK);
    return req;
}

/* Complete now, with this source, tag and value; then free. */
static void expect_done(struct bm_pml_request *req, const int *buf, int src, int tag, int value)
{
    struct bm_pml_status st;
    BM_CHECK(bm_pml_request_test(req, &st));
    BM_CHECK_EQ_INT(st.source, src);
    BM_CHECK_EQ_INT(st.tag, tag);
    BM_CHECK_EQ_INT(st.error, BM_OK);
    BM_CHECK_EQ_INT(st.count, sizeof(int));
    BM_CHECK_EQ_INT(*buf, value);
    bm_pml_request_free(req);
}

static void test_posted_then_arrival(void)
{
    int buf = 0;
    struct bm_pml_request *r = post(&buf, 1, 0, 7);
    BM_CHECK(!bm_pml_request_done(r));
    feed_int(1, 0, 7, 0, 42);
    expect_done(r, &buf, 0, 7, 42);
}

static void test_out_of_order(void)
{
    /* seq 0..3 from source 1 arrive as 2, 3, 1, 0: matching must see 0,1,2,3 */
    feed_int(2, 1, 5, 2, 102);
    feed_int(2, 1, 5, 3, 103);
    feed_int(2, 1, 5, 1, 101);
    BM_CHECK(bm_pml_match_find_unexpected(2, 1, 5) == NULL); /* all held: 0 is missing */
    int buf = 0;
    struct bm_pml_request *r = post(&buf, 2, 1, 5);
    BM_CHECK(!bm_pml_request_done(r));
    feed_int(2, 1, 5, 0, 100);
    expect_done(r, &buf, 1, 5, 100);
    for (int i = 1; i <= 3; i++) {
        r = post(&buf, 2, BM_PML_ANY_SOURCE, BM_PML_ANY_TAG);
        expect_done(r, &buf, 1, 5, 100 + i);
    }
    /* duplicates of already matched sequence numbers are dropped */
    feed_int(2, 1, 5, 2, 999);
    BM_CHECK(bm_pml_match_find_unexpected(2, BM_PML_ANY_SOURCE, BM_PML_ANY_TAG) == NULL);
    /* a duplicate of a held fragment is dropped too */
    feed_int(2, 1, 5, 6, 106);
    feed_int(2, 1, 5, 6, 996);
    feed_int(2, 1, 5, 5, 105);
    feed_int(2, 1, 5, 4, 104);
    for (int i = 4; i <= 6; i++) {
        r = post(&buf, 2, 1, 5);
        expect_done(r, &buf, 1, 5, 100 + i);
    }
    BM_CHECK(bm_pml_match_find_unexpected(2, BM_PML_ANY_SOURCE, BM_PML_ANY_TAG) == NULL);
}

static void test_wildcards_post_order(void)
{
    int a = 0, b = 0, c = 0;
    struct bm_pml_request *ra = post(&a, 3, BM_PML_ANY_SOURCE, 9); /* oldest */
    struct bm_pml_request *rb = post(&b, 3, 2, BM_PML_ANY_TAG);
    struct bm_pml_request *rc = post(&c, 3, 2, 9);
    feed_int(3, 2, 9, 0, 1); /* all three match: the oldest post wins */
    BM_CHECK(bm_pml_request_done(ra));
    BM_CHECK(!bm_pml_request_done(rb));
    BM_CHECK(!bm_pml_request_done(rc));
    feed_int(3, 2, 9, 1, 2);
    BM_CHECK(bm_pml_request_done(rb));
    feed_int(3, 2, 9, 2, 3);
    expect_done(ra, &a, 2, 9, 1);
    expect_done(rb, &b, 2, 9, 2);
    expect_done(rc, &c, 2, 9, 3);

    /* a specific receive does not take another source's or tag's message */
    int d = 0;
    struct bm_pml_request *rd = post(&d, 3, 4, 1);
    feed_int(3, 5, 1, 0, 50); /* other source */
    feed_int(3, 4, 2, 0, 60); /* other tag */
    BM_CHECK(!bm_pml_request_done(rd));
    feed_int(3, 4, 1, 1, 70);
    expect_done(rd, &d, 4, 1, 70);
    rd = post(&d, 3, BM_PML_ANY_SOURCE, 2);
    expect_done(rd, &d, 4, 2, 60);
    rd = post(&d, 3, BM_PML_ANY_SOURCE, BM_PML_ANY_TAG);
    expect_done(rd, &d, 5, 1, 50);
}

static void test_unexpected_order(void)
{
    /* Unexpected messages from one source are received in sequence order
     * by any receive that matches several of them. */
    for (int i = 0; i < 5; i++)
        feed_int(4, 0, i % 2, (uint32_t)i, i);
    int v = 0;
    struct bm_pml_request *r = post(&v, 4, 0, 1);
    expect_done(r, &v, 0, 1, 1);
    r = post(&v, 4, BM_PML_ANY_SOURCE, BM_PML_ANY_TAG);
    expect_done(r, &v, 0, 0, 0);
    r = post(&v, 4, 0, BM_PML_ANY_TAG);
    expect_done(r, &v, 0, 0, 2);
    r = post(&v, 4, BM_PML_ANY_SOURCE, 1);
    expect_done(r, &v, 0, 1, 3);
    r = post(&v, 4, 0, 0);
    expect_done(r, &v, 0, 0, 4);
}

static void test_contexts(void)
{
    int v = 0;
    struct bm_pml_request *r = post(&v, 10, 0, 0);
    feed_int(11, 0, 0, 0, 11);
    BM_CHECK(!bm_pml_request_done(r));
    feed_int(10, 0, 0, 0, 10);
    expect_done(r, &v, 0, 0, 10);
    r = post(&v, 11, 0, 0);
    expect_done(r, &v, 0, 0, 11);
}

static void test_truncate_and_zero(void)
{
    char big[100];
    for (int i = 0; i < 100; i++)
        big[i] = (char)i;
    char small[12];
    memset(small, 0x55, sizeof(small));
    struct bm_pml_request *r = NULL;
    BM_CHECK_EQ_INT(bm_pml_irecv(small, 10, 20, 0, 0, &r), BM_OK);
    feed(20, 0, 0, 0, big, sizeof(big));
    struct bm_pml_status st;
    BM_CHECK(bm_pml_request_test(r, &st));
    BM_CHECK_EQ_INT(st.error, BM_ERR_TRUNCATE);
    BM_CHECK_EQ_INT(st.count, 10);
    BM_CHECK(memcmp(small, big, 10) == 0);
    BM_CHECK_EQ_INT((unsigned char)small[10], 0x55);
    bm_pml_request_free(r);

    /* zero bytes, into a NULL buffer of capacity 0 */
    BM_CHECK_EQ_INT(bm_pml_irecv(NULL, 0, 20, 0, 3, &r), BM_OK);
    feed(20, 0, 3, 1, NULL, 0);
    BM_CHECK(bm_pml_request_test(r, &st));
    BM_CHECK_EQ_INT(st.error, BM_OK);
    BM_CHECK_EQ_INT(st.count, 0);
    bm_pml_request_free(r);

    /* a non-empty message into capacity 0 truncates */
    BM_CHECK_EQ_INT(bm_pml_irecv(NULL, 0, 20, 0, 3, &r), BM_OK);
    feed(20, 0, 3, 2, big, 5);
    BM_CHECK(bm_pml_request_test(r, &st));
    BM_CHECK_EQ_INT(st.error, BM_ERR_TRUNCATE);
    bm_pml_request_free(r);
}

static void test_cancel_and_free(void)
{
    int v = 0;
    struct bm_pml_request *r = post(&v, 30, 0, 0);
    BM_CHECK_EQ_INT(bm_pml_request_cancel(r), BM_OK);
    struct bm_pml_status st;
    BM_CHECK(bm_pml_request_test(r, &st));
    BM_CHECK(st.cancelled);
    bm_pml_request_free(r);
    feed_int(30, 0, 0, 0, 5); /* goes to the unexpected queue, not the cancelled receive */
    BM_CHECK(bm_pml_match_find_unexpected(30, 0, 0) != NULL);
    r = post(&v, 30, 0, 0);
    /* cancelling a matched receive does nothing */
    BM_CHECK_EQ_INT(bm_pml_request_cancel(r), BM_OK);
    BM_CHECK(bm_pml_request_test(r, &st));
    BM_CHECK(!st.cancelled);
    BM_CHECK_EQ_INT(v, 5);
    bm_pml_request_free(r);

    /* a freed active receive still takes its message, and is released then */
    int w = 0;
    r = post(&w, 30, 0, 1);
    bm_pml_request_free(r);
    feed_int(30, 0, 1, 1, 77);
    BM_CHECK_EQ_INT(w, 77);
    BM_CHECK(bm_pml_match_find_unexpected(30, 0, 1) == NULL);

    /* stale ids are rejected after reuse */
    r = post(&v, 30, 0, 2);
    bm_pml_reqid_t id = bm_pml_request_id(r);
    BM_CHECK(bm_pml_request_lookup(id, BM_PML_REQ_RECV) == r);
    BM_CHECK(bm_pml_request_lookup(id, BM_PML_REQ_SEND) == NULL);
    bm_pml_request_cancel(r);
    bm_pml_request_free(r);
    BM_CHECK(bm_pml_request_lookup(id, BM_PML_REQ_RECV) == NULL);
    BM_CHECK(bm_pml_request_lookup(0, BM_PML_REQ_RECV) == NULL);
    BM_CHECK(bm_pml_request_lookup(0xffffffffffffULL, BM_PML_REQ_RECV) == NULL);
}

static void test_probe(void)
{
    bool flag = true;
    struct bm_pml_status st;
    BM_CHECK_EQ_INT(bm_pml_iprobe(40, 0, 0, &flag, &st), BM_OK);
    BM_CHECK(!flag);
    char data[33] = "probe me";
    feed(40, 3, 8, 0, data, sizeof(data));
    BM_CHECK_EQ_INT(bm_pml_iprobe(40, BM_PML_ANY_SOURCE, BM_PML_ANY_TAG, &flag, &st), BM_OK);
    BM_CHECK(flag);
    BM_CHECK_EQ_INT(st.source, 3);
    BM_CHECK_EQ_INT(st.tag, 8);
    BM_CHECK_EQ_INT(st.count, sizeof(data));
    /* probe does not remove; improbe does */
    struct bm_pml_message *msg = NULL;
    BM_CHECK_EQ_INT(bm_pml_improbe(40, 3, 8, &flag, &msg, &st), BM_OK);
    BM_CHECK(flag);
    BM_CHECK_EQ_INT(bm_pml_iprobe(40, 3, 8, &flag, &st), BM_OK);
    BM_CHECK(!flag);
    char out[33] = {0};
    struct bm_pml_request *r = NULL;
    BM_CHECK_EQ_INT(bm_pml_imrecv(out, sizeof(out), msg, &r), BM_OK);
    BM_CHECK(bm_pml_request_test(r, &st));
    BM_CHECK_STR(out, "probe me");
    bm_pml_request_free(r);
    BM_CHECK_EQ_INT(bm_pml_iprobe(40, -5, 0, &flag, &st), BM_ERR_BAD_PARAM);
}

static void test_seq_wrap(void)
{
    feed_int(50, 0, 0, 0, 0); /* creates the source state */
    struct bm_pml_ctx *ctx = bm_pml_ctx_get(50);
    ctx->srcs[0].expected = 0xfffffffeu;
    feed_int(50, 0, 0, 0xffffffffu, 2);
    feed_int(50, 0, 0, 0, 3); /* after the wrap */
    feed_int(50, 0, 0, 0xfffffffeu, 1);
    int v = 0;
    for (int i = 0; i <= 3; i++) {
        struct bm_pml_request *r = post(&v, 50, 0, 0);
        expect_done(r, &v, 0, 0, i);
    }
}

static void test_malformed(void)
{
    char shortfrag[8] = {BM_PML_HDR_MATCH};
    bm_pml_match_incoming(1, shortfrag, sizeof(shortfrag));
    feed_int(60, 0, -3, 0, 1); /* negative tag */
    feed_int(60, -2, 0, 0, 1); /* negative source */
    struct bm_pml_hdr_rndv rh = {
        .match = {.base = {.type = BM_PML_HDR_RNDV}, .cid = 60}, .msg_len = 1, .sreq = 5};
    char frag[sizeof(rh) + 4];
    memcpy(frag, &rh, sizeof(rh)); /* claims 1 byte, carries 4 */
    bm_pml_match_incoming(1, frag, sizeof(frag));
    BM_CHECK(bm_pml_match_find_unexpected(60, BM_PML_ANY_SOURCE, BM_PML_ANY_TAG) == NULL);
    BM_CHECK_EQ_INT(bm_pml_irecv(NULL, 4, 60, 0, 0, &(struct bm_pml_request *){NULL}),
                    BM_ERR_BAD_PARAM);
}

static void test_release(void)
{
    int v = 0;
    struct bm_pml_request *r = post(&v, 80, 0, 0);
    BM_CHECK(!bm_pml_context_release(80)); /* a receive is posted */
    feed_int(80, 0, 0, 0, 1);
    expect_done(r, &v, 0, 0, 1);
    feed_int(80, 0, 0, 1, 2);
    BM_CHECK(!bm_pml_context_release(80)); /* a message waits */
    r = post(&v, 80, 0, 0);
    expect_done(r, &v, 0, 0, 2);
    feed_int(80, 0, 0, 5, 3);
    BM_CHECK(!bm_pml_context_release(80)); /* an early arrival is held */
    BM_CHECK(bm_pml_context_release(81));  /* never used */
    struct bm_pml_ctx *c = bm_pml_ctx_get(82);
    BM_CHECK(c != NULL);
    BM_CHECK(bm_pml_context_release(82));
    BM_CHECK(bm_pml_ctx_get(82) != NULL); /* a fresh one */
    BM_CHECK(bm_pml_context_release(82));
}

/* Rendezvous bytes counted once, whatever order and duplication FRAGs
 * arrive in (a FRAG resent after a path failure). */
static void test_ranges(void)
{
    struct bm_pml_request *r = bm_pml_request_alloc(BM_PML_REQ_RECV);
    r->arrived = 100; /* the RNDV's bytes */
    BM_CHECK_EQ_INT(bm_pml_recv_ranges_add(r, 100, 200), 100);
    BM_CHECK_EQ_INT(bm_pml_recv_ranges_add(r, 300, 400), 100);
    BM_CHECK_EQ_INT(bm_pml_recv_ranges_add(r, 100, 200), 0);   /* duplicate */
    BM_CHECK_EQ_INT(bm_pml_recv_ranges_add(r, 150, 350), 100); /* fills 200..300 */
    BM_CHECK_EQ_INT(r->nranges, 1);
    BM_CHECK_EQ_INT(bm_pml_recv_ranges_add(r, 0, 50), 0);
    BM_CHECK_EQ_INT(bm_pml_recv_ranges_add(r, 600, 700), 100);
    BM_CHECK_EQ_INT(bm_pml_recv_ranges_add(r, 800, 900), 100);
    BM_CHECK_EQ_INT(bm_pml_recv_ranges_add(r, 1000, 1100), 100);
    BM_CHECK_EQ_INT(bm_pml_recv_ranges_add(r, 1200, 1300), 100); /* grows the array */
    BM_CHECK_EQ_INT(r->nranges, 5);
    BM_CHECK_EQ_INT(bm_pml_recv_ranges_add(r, 350, 1250), 900 - 400);
    BM_CHECK_EQ_INT(r->nranges, 1);
    BM_CHECK_EQ_INT(r->ranges[0].start, 0);
    BM_CHECK_EQ_INT(r->ranges[0].end, 1300);
    BM_CHECK_EQ_INT(bm_pml_recv_ranges_add(r, 1300, 1400), 100); /* in order again */
    free(r->ranges);
    r->ranges = NULL;
    bm_pml_request_complete(r);
    bm_pml_request_free(r);
}

#define MANY 10000

static void test_many_unexpected(void)
{
    for (int i = 0; i < MANY; i++)
        feed_int(70, 1, i, (uint32_t)i, i);
    /* worst case for a single linear queue: newest tag first */
    int bad = 0;
    for (int i = MANY - 1; i >= 0; i--) {
        int v = -1;
        struct bm_pml_request *r = NULL;
        bm_pml_irecv(&v, sizeof(v), 70, 1, i, &r);
        struct bm_pml_status st;
        if (!bm_pml_request_test(r, &st) || v != i || st.tag != i)
            bad++;
        bm_pml_request_free(r);
    }
    BM_CHECK_EQ_INT(bad, 0);
    /* and the same with 10,000 posted receives, matched newest first */
    struct bm_pml_request **reqs = calloc(MANY, sizeof(*reqs));
    int *vals = calloc(MANY, sizeof(*vals));
    for (int i = 0; i < MANY; i++)
        bm_pml_irecv(&vals[i], sizeof(int), 71, 2, i, &reqs[i]);
    for (int i = MANY - 1; i >= 0; i--)
        feed_int(71, 2, i, (uint32_t)(MANY - 1 - i), i * 3);
    bad = 0;
    for (int i = 0; i < MANY; i++) {
        if (!bm_pml_request_done(reqs[i]) || vals[i] != i * 3)
            bad++;
        bm_pml_request_free(reqs[i]);
    }
    BM_CHECK_EQ_INT(bad, 0);
    free(reqs);
    free(vals);
    BM_CHECK(bm_pml_match_find_unexpected(70, BM_PML_ANY_SOURCE, BM_PML_ANY_TAG) == NULL);
}

/* A receive per tag, each matched before the next: the table keeps the
 * emptied lists for reuse but sweeps them, so it does not grow with the
 * number of distinct tags ever used. Wildcard posts in between must still
 * win by post order after their class counts went back to zero. */
static void test_distinct_tags_bounded(void)
{
    struct bm_pml_ctx *ctx = bm_pml_ctx_get(72);
    int bad = 0;
    for (int i = 0; i < 100000; i++) {
        int v = -1;
        struct bm_pml_request *r = NULL;
        bm_pml_irecv(&v, sizeof(v), 72, 3, i, &r);
        feed_int(72, 3, i, (uint32_t)i, i + 1);
        struct bm_pml_status st;
        if (!bm_pml_request_test(r, &st) || v != i + 1 || st.tag != i)
            bad++;
        bm_pml_request_free(r);
    }
    BM_CHECK_EQ_INT(bad, 0);
    BM_CHECK(ctx->posted.nslots <= 64);
    BM_CHECK(ctx->posted.nused <= 64);
    for (int c = 0; c < 4; c++)
        BM_CHECK_EQ_INT(ctx->nposted_class[c], 0);
    /* any-source, then exact: the arrival goes to the older post */
    int a = 0, b = 0;
    struct bm_pml_request *ra = post(&a, 72, BM_PML_ANY_SOURCE, 5);
    struct bm_pml_request *rb = post(&b, 72, 3, 5);
    feed_int(72, 3, 5, 100000, 41);
    expect_done(ra, &a, 3, 5, 41);
    BM_CHECK(!bm_pml_request_done(rb));
    feed_int(72, 3, 5, 100001, 42);
    expect_done(rb, &b, 3, 5, 42);
    BM_CHECK_EQ_INT(ctx->nposted_class[2], 0);
}

int main(void)
{
    BM_RUN(test_posted_then_arrival);
    BM_RUN(test_out_of_order);
    BM_RUN(test_wildcards_post_order);
    BM_RUN(test_unexpected_order);
    BM_RUN(test_contexts);
    BM_RUN(test_truncate_and_zero);
    BM_RUN(test_cancel_and_free);
    BM_RUN(test_probe);
    BM_RUN(test_seq_wrap);
    BM_RUN(test_malformed);
    BM_RUN(test_release);
    BM_RUN(test_ranges);
    BM_RUN(test_many_unexpected);
    BM_RUN(test_distinct_tags_bounded);
    bm_pml_match_fini();
    bm_pml_request_table_fini();
    return bm_test_summary("test_pml_match");
}
