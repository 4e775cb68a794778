/* Unit test of transport selection in one process (singleton runtime):
 * BM_BTL include and exclude lists, unknown and malformed names, the
 * unreachable-peer error when self is left out, the per-peer lists, and the
 * self transport's rule that a send is delivered from progress, never
 * inside the send call. */
#include "bm_test.h"
#include "btl/btl.h"
#include "runtime/rte.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int delivered;
static unsigned char last[64];
static size_t last_len;
static int completions;

static void on_recv(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata)
{
    (void)m;
    BM_CHECK_EQ_INT((intptr_t)cbdata, d->tag);
    last_len = 0;
    for (uint32_t s = 0; s < d->seg_count; s++) {
        if (last_len + d->seg[s].len <= sizeof(last))
            memcpy(last + last_len, d->seg[s].addr, d->seg[s].len);
        last_len += d->seg[s].len;
    }
    delivered++;
}

static void on_done(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                    struct bm_btl_descriptor *des, int status)
{
    (void)m;
    (void)ep;
    (void)des;
    BM_CHECK_EQ_INT(status, 0);
    completions++;
}

static bm_status_t open_with(const char *spec)
{
    setenv("BM_BTL", spec, 1);
    return bm_btl_base_open(NULL);
}

static void test_bad_specs(void)
{
    BM_CHECK_EQ_INT(open_with("bogus"), BM_ERR_BAD_PARAM);
    BM_CHECK_EQ_INT(open_with("self,^sm"), BM_ERR_BAD_PARAM);
    BM_CHECK_EQ_INT(open_with("self,smx"), BM_ERR_BAD_PARAM);
    for (const struct bm_btl_absent *a = bm_btl_registry_absent; a->name; a++) {
        char spec[64];
        snprintf(spec, sizeof(spec), "self,%s", a->name);
        BM_CHECK_EQ_INT(open_with(spec), BM_ERR_BAD_PARAM); /* not built: cannot be included */
        snprintf(spec, sizeof(spec), "^%s", a->name);
        BM_CHECK_EQ_INT(open_with(spec), BM_OK); /* ... but excluding it is fine */
        bm_btl_base_close();
    }
}

static void test_self_left_out(void)
{
    BM_CHECK_EQ_INT(open_with("^self"), BM_OK);
    BM_CHECK_EQ_INT(bm_btl_base_add_procs(1), BM_ERR_UNREACHABLE);
    bm_btl_base_close();
    /* A lone process has no sm module: nothing at all could be opened. */
    BM_CHECK_EQ_INT(open_with("sm"), BM_ERR_NOT_AVAILABLE);
    BM_CHECK(bm_btl_base_peer(0) == NULL);
}

static void test_all_default(void)
{
    BM_CHECK_EQ_INT(open_with(""), BM_OK);
    BM_CHECK_EQ_INT(bm_btl_base_add_procs(1), BM_OK);
    struct bm_btl_peer *p = bm_btl_base_peer(0);
    BM_CHECK(p != NULL);
    BM_CHECK(bm_btl_base_peer(1) == NULL);
    if (p) {
        /* Only the highest exclusivity reaches oneself: self. */
        BM_CHECK_EQ_INT(p->eager.count, 1);
        BM_CHECK_STR(p->eager.paths[0].module->ops->name, "self");
        BM_CHECK_EQ_INT(p->send.count, 1);
        BM_CHECK_EQ_INT(p->rdma.count, 1);
        BM_CHECK(p->send.paths[0].weight > 0.999 && p->send.paths[0].weight < 1.001);
    }
    bm_btl_base_close();
}

static void test_self_deferred(void)
{
    /* Registered before open: must still reach the modules open creates. */
    bm_btl_base_register_recv(BM_BTL_TAG_TEST, on_recv, (void *)(intptr_t)BM_BTL_TAG_TEST);
    BM_CHECK_EQ_INT(open_with(" self , sm "), BM_OK);
    BM_CHECK_EQ_INT(bm_btl_base_add_procs(1), BM_OK);
    struct bm_btl_peer *p = bm_btl_base_peer(0);
    if (!p || p->eager.count < 1) {
        BM_CHECK(0);
        bm_btl_base_close();
        return;
    }
    struct bm_btl_module *m = p->eager.paths[0].module;
    struct bm_btl_endpoint *ep = p->eager.paths[0].endpoint;
    delivered = completions = 0;

    struct bm_btl_descriptor *des = bm_btl_alloc(m, ep, 0, 5, BM_BTL_DES_F_BTL_OWNED);
    BM_CHECK(des != NULL);
    if (des) {
        memcpy(des->seg[0].addr, "hello", 5);
        des->cbfunc = on_done;
        BM_CHECK_EQ_INT(bm_btl_send(m, ep, des, BM_BTL_TAG_TEST), BM_OK);
        BM_CHECK_EQ_INT(delivered, 0); /* not inside send */
        BM_CHECK_EQ_INT(completions, 0);
        BM_CHECK(bm_btl_base_progress() >= 1);
        BM_CHECK_EQ_INT(delivered, 1);
        BM_CHECK_EQ_INT(completions, 1);
        BM_CHECK(last_len == 5 && memcmp(last, "hello", 5) == 0);
    }

    /* prepare_src: reserve + referenced data arrive as one message */
    const char data[] = "world!";
    size_t size = 6;
    des = bm_btl_prepare_src(m, ep, data, 3, &size, 0, BM_BTL_DES_F_BTL_OWNED);
    BM_CHECK(des != NULL && size == 6);
    if (des) {
        memcpy(des->seg[0].addr, "h:,", 3);
        des->cbfunc = on_done;
        BM_CHECK_EQ_INT(bm_btl_send(m, ep, des, BM_BTL_TAG_TEST), BM_OK);
        while (delivered < 2)
            bm_btl_base_progress();
        BM_CHECK(last_len == 9 && memcmp(last, "h:,world!", 9) == 0);
    }

    /* sendi: done at once, delivered later, no completion callback */
    BM_CHECK_EQ_INT(bm_btl_sendi(m, ep, "ab", 2, "cd", 2, 0, 0, BM_BTL_TAG_TEST, NULL),
                    BM_BTL_DONE);
    BM_CHECK_EQ_INT(delivered, 2);
    bm_btl_base_progress();
    BM_CHECK_EQ_INT(delivered, 3);
    BM_CHECK(last_len == 4 && memcmp(last, "abcd", 4) == 0);
    BM_CHECK_EQ_INT(completions, 2);

    /* too large for one send */
    BM_CHECK(bm_btl_alloc(m, ep, 0, m->max_send_size + 1, 0) == NULL);
    BM_CHECK_EQ_INT(
        bm_btl_sendi(m, ep, NULL, 0, NULL, m->max_send_size + 1, 0, 0, BM_BTL_TAG_TEST, NULL),
        BM_ERR_NOT_AVAILABLE);
    bm_btl_base_close();
}

int main(void)
{
    if (bm_rte_init() != BM_OK) {
        fprintf(stderr, "runtime did not start\n");
        return 1;
    }
    BM_RUN(test_bad_specs);
    BM_RUN(test_self_left_out);
    BM_RUN(test_all_default);
    BM_RUN(test_self_deferred);
    bm_btl_base_register_recv(BM_BTL_TAG_TEST, NULL, NULL);
    bm_rte_finalize();
    unsetenv("BM_BTL");
    return bm_test_summary("test_btl_select");
}
