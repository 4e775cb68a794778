/* Two independent instances of one transport in one process (btl.h: a
 * transport keeps no process-wide state). The test plays the runtime: each
 * instance gets its own struct bm_btl_rte, rank 0 and rank 1 of a two-process
 * job on one node, sharing an address exchange that the test holds. Both
 * instances are initialised from the same registered ops table, add each
 * other as peers, and then exchange messages both ways through real sockets:
 * small ones (alloc + send), large ones (prepare_src), every byte checked,
 * every completion counted. One instance is finalized first while the other
 * keeps running, which must not disturb the survivor's state. Run once per
 * transport named on the command line (tcp, dgram). */
#include "bm_test.h"
#include "btl/btl.h"
#include "util/bitmap.h"
#include "util/clock.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TAG      BM_BTL_TAG_TEST
#define NMSG     64
#define BIG      (200 * 1024)
#define BUDGET_S 60.0 /* generous: loopback round trips, on a loaded machine */

/* ---- the test's runtime: a modex of (rank, key) -> blob ---------------------- */

#define MODEX_MAX 16

struct modex_entry {
    int rank;
    char key[32];
    void *data;
    size_t len;
};

static struct modex_entry modex[MODEX_MAX];
static int nmodex;

struct inst {
    int rank;
    struct bm_rte_proc proc;
    struct bm_btl_rte rte;
    struct bm_btl_component *comp;
    struct bm_btl_module *m;
    struct bm_btl_endpoint *peer_ep;
    /* receive side */
    int received;
    uint32_t next_id; /* messages arrive in order on an ordered module; counted otherwise */
    unsigned char seen[2 * NMSG];
    int bad;
    int sent_done, send_errors;
};

static double now_s(void)
{
    return (double)bm_util_clock_ns() * 1e-9;
}

static int fake_node_of(void *ctx, int rank)
{
    (void)ctx;
    return rank == 0 || rank == 1 ? 0 : -1;
}

static bm_status_t fake_put(void *ctx, const char *key, const void *data, size_t len)
{
    struct inst *in = ctx;
    if (nmodex == MODEX_MAX)
        return BM_ERR_NO_MEMORY;
    struct modex_entry *e = &modex[nmodex++];
    e->rank = in->rank;
    snprintf(e->key, sizeof(e->key), "%s", key);
    e->data = malloc(len ? len : 1);
    memcpy(e->data, data, len);
    e->len = len;
    return BM_OK;
}

static bm_status_t fake_get(void *ctx, int rank, const char *key, const void **data_out,
                            size_t *len_out)
{
    (void)ctx;
    for (int i = 0; i < nmodex; i++)
        if (modex[i].rank == rank && strcmp(modex[i].key, key) == 0) {
            *data_out = modex[i].data;
            *len_out = modex[i].len;
            return BM_OK;
        }
    return BM_ERR_NOT_FOUND;
}

/* ---- callbacks ------------------------------------------------------------------ */

/* message: [id:4][len:4][pattern seeded by id] */
static void on_recv(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata)
{
    struct inst *in = cbdata;
    BM_CHECK(m == in->m);
    size_t total = 0;
    for (uint32_t s = 0; s < d->seg_count; s++)
        total += d->seg[s].len;
    unsigned char *buf = malloc(total ? total : 1);
    size_t off = 0;
    for (uint32_t s = 0; s < d->seg_count; s++) {
        memcpy(buf + off, d->seg[s].addr, d->seg[s].len);
        off += d->seg[s].len;
    }
    uint32_t id = UINT32_MAX, len = 0;
    if (total >= 8) {
        memcpy(&id, buf, 4);
        memcpy(&len, buf + 4, 4);
    }
    if (total < 8 || len != total || id >= 2 * NMSG || d->peer != 1 - in->rank ||
        bm_test_bad_bytes(buf + 8, total - 8, (int)id) != 0)
        in->bad++;
    else
        in->seen[id]++;
    in->received++;
    free(buf);
}

static void on_sent(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                    struct bm_btl_descriptor *des, int status)
{
    struct inst *in = des->cbdata;
    BM_CHECK(m == in->m && ep == in->peer_ep);
    in->sent_done++;
    if (status != BM_OK)
        in->send_errors++;
}

static void on_error(struct bm_btl_module *m, const struct bm_btl_error *err, void *cbdata)
{
    (void)cbdata;
    fprintf(stderr, "%s: error report kind %d for rank %d: %s\n", m->name, err->kind, err->peer,
            err->what ? err->what : "");
}

/* ---- the test ------------------------------------------------------------------- */

static const struct bm_btl_ops *find_ops(const char *name)
{
    for (int i = 0; i < bm_btl_registry_count; i++)
        if (strcmp(bm_btl_registry[i]->name, name) == 0)
            return bm_btl_registry[i];
    return NULL;
}

static void inst_init(struct inst *in, const struct bm_btl_ops *ops, int rank)
{
    memset(in, 0, sizeof(*in));
    in->rank = rank;
    in->proc = (struct bm_rte_proc){
        .rank = rank, .size = 2, .local_rank = rank, .local_size = 2, .node = 0, .num_nodes = 1};
    snprintf(in->proc.hostname, sizeof(in->proc.hostname), "localhost");
    snprintf(in->proc.jobid, sizeof(in->proc.jobid), "instances%d", (int)getpid());
    in->rte = (struct bm_btl_rte){.self = &in->proc,
                                  .node_of = fake_node_of,
                                  .modex_put = fake_put,
                                  .modex_get = fake_get,
                                  .ctx = in};
    struct bm_btl_init_args args = {.thread_level = 0, .rte = &in->rte};
    BM_CHECK_EQ_INT(ops->init(&args, &in->comp), BM_OK);
    BM_CHECK(in->comp && in->comp->count >= 1);
    if (!in->comp || in->comp->count < 1)
        return;
    BM_CHECK(in->comp->ops == ops && in->comp->rte == &in->rte);
    in->m = in->comp->modules[0];
    BM_CHECK(in->m->component == in->comp);
    for (int t = 0; t < BM_BTL_TAG_MAX; t++) {
        in->m->recv_cb[t].cb = on_recv;
        in->m->recv_cb[t].cbdata = in;
    }
    in->m->error_cb = on_error;
    in->m->error_cbdata = in;
}

static void inst_add_peer(struct inst *in)
{
    const int ranks[2] = {0, 1};
    struct bm_btl_endpoint *eps[2] = {NULL, NULL};
    struct bm_util_bitmap reach;
    BM_CHECK_EQ_INT(bm_util_bitmap_init(&reach, 2), BM_OK);
    BM_CHECK_EQ_INT(in->m->ops->add_procs(in->m, 2, ranks, eps, &reach), BM_OK);
    BM_CHECK(!bm_util_bitmap_test(&reach, (size_t)in->rank)); /* self reaches itself */
    BM_CHECK(bm_util_bitmap_test(&reach, (size_t)(1 - in->rank)));
    in->peer_ep = eps[1 - in->rank];
    BM_CHECK(in->peer_ep != NULL);
    bm_util_bitmap_fini(&reach);
}

static void progress_both(struct inst *a, struct inst *b)
{
    a->comp->ops->progress(a->comp);
    b->comp->ops->progress(b->comp);
}

/* Send message id of len bytes from in (progressing both until accepted). */
static void send_one(struct inst *in, struct inst *other, uint32_t id, size_t len)
{
    unsigned char *buf = malloc(len);
    memcpy(buf, &id, 4);
    uint32_t l32 = (uint32_t)len;
    memcpy(buf + 4, &l32, 4);
    bm_test_fill(buf + 8, len - 8, (int)id);
    struct bm_btl_module *m = in->m;
    size_t off = 0;
    double deadline = now_s() + BUDGET_S;
    /* A message larger than max_send_size would need the PML's splitting;
     * the test keeps every message within one descriptor. */
    BM_CHECK(len <= m->max_send_size);
    while (off == 0 && now_s() < deadline) {
        struct bm_btl_descriptor *des;
        if (len <= m->eager_limit) {
            des = bm_btl_alloc(m, in->peer_ep, 0, len, BM_BTL_DES_F_BTL_OWNED);
            if (des)
                memcpy(des->seg[0].addr, buf, len);
        } else {
            size_t size = len - 8;
            des = bm_btl_prepare_src(m, in->peer_ep, buf + 8, 8, &size, 0, BM_BTL_DES_F_BTL_OWNED);
            if (des) {
                BM_CHECK_EQ_INT(size, len - 8);
                memcpy(des->seg[0].addr, buf, 8);
            }
        }
        if (!des) {
            progress_both(in, other);
            continue;
        }
        des->cbfunc = on_sent;
        des->cbdata = in;
        int rc = bm_btl_send(m, in->peer_ep, des, TAG);
        if (rc == BM_ERR_OUT_OF_RESOURCE) {
            bm_btl_free(m, des);
            progress_both(in, other);
            continue;
        }
        BM_CHECK_MSG(rc == BM_OK || rc == BM_BTL_DONE, "send returned %d", rc);
        if (rc == BM_BTL_DONE)
            in->sent_done++; /* no callback without ALWAYS_CALLBACK */
        off = len;
    }
    BM_CHECK_MSG(off == len, "message %u not accepted within %.0f s", id, BUDGET_S);
    /* In-place data (large messages) must live until completion. */
    while (len > m->eager_limit && in->sent_done < (int)(id % NMSG) + 1 && now_s() < deadline)
        progress_both(in, other);
    free(buf);
}

static size_t msg_len(uint32_t id)
{
    return id % 8 == 7 ? BIG : 8 + (id * 37) % 900;
}

static void run(const char *name)
{
    const struct bm_btl_ops *ops = find_ops(name);
    BM_CHECK_MSG(ops != NULL, "transport %s is not built", name);
    if (!ops)
        return;
    static struct inst a, b;
    inst_init(&a, ops, 0);
    inst_init(&b, ops, 1);
    if (!a.m || !b.m)
        return;
    BM_CHECK(a.comp != b.comp && a.m != b.m);
    inst_add_peer(&a);
    inst_add_peer(&b);
    if (!a.peer_ep || !b.peer_ep)
        return;

    /* ids 0..NMSG-1 go from a to b, NMSG..2*NMSG-1 from b to a, interleaved */
    for (uint32_t i = 0; i < NMSG; i++) {
        send_one(&a, &b, i, msg_len(i));
        send_one(&b, &a, NMSG + i, msg_len(NMSG + i));
    }
    double deadline = now_s() + BUDGET_S;
    while ((b.received < NMSG || a.received < NMSG || a.sent_done < NMSG || b.sent_done < NMSG) &&
           now_s() < deadline)
        progress_both(&a, &b);
    BM_CHECK_EQ_INT(b.received, NMSG);
    BM_CHECK_EQ_INT(a.received, NMSG);
    BM_CHECK_EQ_INT(a.sent_done, NMSG);
    BM_CHECK_EQ_INT(b.sent_done, NMSG);
    BM_CHECK_EQ_INT(a.bad + b.bad, 0);
    BM_CHECK_EQ_INT(a.send_errors + b.send_errors, 0);
    for (int i = 0; i < NMSG; i++) {
        BM_CHECK_MSG(b.seen[i] == 1, "b got message %d %d times", i, b.seen[i]);
        BM_CHECK_MSG(a.seen[NMSG + i] == 1, "a got message %d %d times", NMSG + i,
                     a.seen[NMSG + i]);
    }

    /* Finalize a alone: b's state must not be touched (its progress keeps
     * working and it is finalized on its own afterwards). */
    const int ranks[2] = {0, 1};
    struct bm_btl_endpoint *eps_a[2] = {NULL, a.peer_ep};
    struct bm_btl_endpoint *eps_b[2] = {b.peer_ep, NULL};
    a.m->ops->del_procs(a.m, 2, ranks, eps_a);
    a.comp->ops->finalize(a.comp);
    for (int i = 0; i < 100; i++)
        b.comp->ops->progress(b.comp);
    BM_CHECK(b.comp->modules[0] == b.m && b.m->component == b.comp);
    b.m->ops->del_procs(b.m, 2, ranks, eps_b);
    b.comp->ops->finalize(b.comp);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s tcp|dgram\n", argv[0]);
        return 2;
    }
    /* Loopback only: both instances live on this host, and on a machine
     * with other interfaces the transports would otherwise skip lo. */
    setenv("BM_BTL", argv[1], 1);
    setenv("BM_BTL_TCP_IF_INCLUDE", "lo", 1);
    setenv("BM_BTL_DGRAM_IF_INCLUDE", "lo", 1);
    bm_test_current = argv[1];
    run(argv[1]);
    for (int i = 0; i < nmodex; i++)
        free(modex[i].data);
    char title[64];
    snprintf(title, sizeof(title), "test_btl_instances %s", argv[1]);
    return bm_test_summary(title);
}
