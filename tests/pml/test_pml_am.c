/* Unit test of the PML's active messages (onesided.c) without transports:
 * AM fragments are built by hand and fed to bm_pml_am_incoming as a
 * transport would deliver them. Messages of one sender run in sequence
 * order exactly once: early arrivals are held until their turn, resends of
 * ones already run (or already held) are dropped, the senders are
 * independent, a message split over two segments is joined,
 * the handler gets 8-byte aligned bytes, unknown handler ids and short
 * fragments are dropped without running anything. */
#include "bm_test.h"
#include "pml/pml_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAXRUNS 64

static struct {
    int peer;
    uint32_t value;
    size_t len;
    int aligned;
} runs[MAXRUNS];
static int nruns;

static void handler(int peer_world, const void *msg, size_t len, void *arg)
{
    BM_CHECK(arg == &nruns);
    if (nruns == MAXRUNS)
        return;
    runs[nruns].peer = peer_world;
    runs[nruns].len = len;
    runs[nruns].aligned = ((uintptr_t)msg & 7) == 0;
    memcpy(&runs[nruns].value, msg, sizeof(uint32_t));
    nruns++;
}

/* Deliver message seq from peer carrying value (and pad bytes of payload),
 * as one segment or split after the header. */
static void feed(int peer, uint32_t seq, uint32_t id, uint32_t value, size_t pad, int split)
{
    size_t len = sizeof(struct bm_pml_hdr_am) + sizeof(value) + pad;
    char *frag = calloc(1, len + 1);
    struct bm_pml_hdr_am h = {.base = {.type = BM_PML_HDR_AM}, .seq = seq, .id = id};
    memcpy(frag + 1, &h, sizeof(h)); /* +1: a segment with no alignment */
    memcpy(frag + 1 + sizeof(h), &value, sizeof(value));
    struct bm_btl_segment seg[2] = {{frag + 1, len}, {NULL, 0}};
    if (split) {
        seg[0].len = sizeof(h);
        seg[1].addr = frag + 1 + sizeof(h);
        seg[1].len = len - sizeof(h);
    }
    struct bm_btl_recv_desc d = {
        .peer = peer, .tag = BM_PML_BTL_TAG(BM_PML_HDR_AM), .seg_count = split ? 2 : 1, .seg = seg};
    bm_pml_am_incoming(&d);
    free(frag);
}

static void test_order_and_duplicates(void)
{
    nruns = 0;
    feed(1, 0, BM_PML_AM_OSC, 100, 0, 0);
    feed(1, 2, BM_PML_AM_OSC, 102, 0, 0); /* early: held */
    BM_CHECK_EQ_INT(nruns, 1);
    feed(1, 2, BM_PML_AM_OSC, 999, 0, 0); /* a second copy of the held one */
    feed(1, 0, BM_PML_AM_OSC, 999, 0, 0); /* a resend of one already run */
    BM_CHECK_EQ_INT(nruns, 1);
    feed(1, 1, BM_PML_AM_OSC, 101, 5000, 1); /* its turn: 1 then the held 2 */
    BM_CHECK_EQ_INT(nruns, 3);
    feed(1, 1, BM_PML_AM_OSC, 999, 0, 0);
    BM_CHECK_EQ_INT(nruns, 3);
    for (int i = 0; i < 3; i++) {
        BM_CHECK_EQ_INT(runs[i].peer, 1);
        BM_CHECK_EQ_INT(runs[i].value, 100 + i);
        BM_CHECK(runs[i].aligned);
    }
    BM_CHECK_EQ_INT(runs[1].len, sizeof(uint32_t) + 5000);
}

static void test_senders_independent(void)
{
    nruns = 0;
    feed(2, 1, BM_PML_AM_OSC, 201, 0, 0);
    feed(3, 0, BM_PML_AM_OSC, 300, 0, 0);
    BM_CHECK_EQ_INT(nruns, 1);
    BM_CHECK_EQ_INT(runs[0].value, 300);
    feed(2, 0, BM_PML_AM_OSC, 200, 0, 1);
    BM_CHECK_EQ_INT(nruns, 3);
    BM_CHECK_EQ_INT(runs[1].value, 200);
    BM_CHECK_EQ_INT(runs[2].value, 201);
}

static void test_bad_fragments(void)
{
    nruns = 0;
    /* no handler for id 1: dropped, but it takes its turn */
    feed(1, 3, 1, 999, 0, 0);
    feed(1, 4, BM_PML_AM_IDS + 5, 999, 0, 0);
    feed(1, 5, BM_PML_AM_OSC, 105, 0, 0);
    BM_CHECK_EQ_INT(nruns, 1);
    BM_CHECK_EQ_INT(runs[0].value, 105);
    /* shorter than a header, and from a rank that does not exist */
    char tiny[4] = {0};
    struct bm_btl_segment seg = {tiny, sizeof(tiny)};
    struct bm_btl_recv_desc d = {.peer = 1, .seg_count = 1, .seg = &seg};
    bm_pml_am_incoming(&d);
    feed(7, 0, BM_PML_AM_OSC, 999, 0, 0);
    BM_CHECK_EQ_INT(nruns, 1);
}

int main(void)
{
    bm_pml_g.world_size = 4;
    bm_pml_am_register(BM_PML_AM_OSC, handler, &nruns);
    BM_RUN(test_order_and_duplicates);
    BM_RUN(test_senders_independent);
    BM_RUN(test_bad_fragments);
    bm_pml_am_fini();
    return bm_test_summary("test_pml_am");
}
