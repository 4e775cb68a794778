/* The ofi transport's rule for a path that fails inside an operation (a
 * send, put or atomic the provider refused, or "try again" for the whole
 * BM_BTL_OFI_TIMEOUT): the error callback reports it at once, but the
 * operations still in flight to that peer complete only at the next
 * progress or flush (bm_btl_ofi_endpoint_fail_run), never inside the
 * failing call: btl.h "Threads" forbids completion callbacks from inside an
 * operation, and under MPI_THREAD_MULTIPLE the PML's callbacks assume its
 * progress lock, which the failing thread does not hold (an ASan CI run of
 * ofi_threads_np2 lost every message of a thread after such a failure).
 * Against a module built by hand (no provider: one context whose in-flight
 * list holds two puts, one to the failing peer and one to another): the
 * failure from inside an operation runs the error callback only; the
 * deferred run completes the failing peer's put with the error, once, and
 * leaves the other's alone; a failure found in progress completes at once. */
#define BM_LOG_SUBSYS "test/ofi"
#include "ofi_standin.h"

#include <string.h>

static int errors_reported, completions, last_status;
static bool in_op; /* set while the "operation" that finds the path dead runs */
static int completed_inside;

static void on_error(struct bm_btl_module *m, const struct bm_btl_error *err, void *cbdata)
{
    (void)m;
    (void)err;
    (void)cbdata;
    errors_reported++;
}

static void on_done(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                    struct bm_btl_reg_handle *lh, void *context, void *cbdata, int status)
{
    (void)m;
    (void)ep;
    (void)local_addr;
    (void)lh;
    (void)context;
    (void)cbdata;
    completions++;
    completed_inside += in_op;
    last_status = status;
}

static void put_in_flight(struct bm_btl_ofi_context *ctx, struct bm_btl_ofi_req *r,
                          struct bm_btl_ofi_endpoint *ep)
{
    memset(r, 0, sizeof(*r));
    r->kind = BM_OFI_REQ_PUT;
    r->ctx = ctx;
    r->ep = ep;
    r->cb = on_done;
    bm_util_list_node_init(&r->link);
    bm_btl_ofi_req_posted(ctx, r);
    atomic_fetch_add(&ep->outstanding, 1);
    atomic_fetch_add(&ctx->m->outstanding, 1);
}

int main(void)
{
    static struct ofi_standin s;
    ofi_standin_init(&s, NULL, on_error);
    struct bm_btl_ofi_module *m = &s.m;
    /* Two peers: rank 1, and rank 0 standing in for another one. */
    static struct bm_btl_ofi_endpoint other;
    other.m = m;
    s.eps[0] = &other;
    struct bm_btl_ofi_endpoint *ep[2] = {&s.peer, &other};
    struct bm_btl_ofi_context *ctx = &s.ctx;
    struct bm_btl_ofi_req r0, r1;
    put_in_flight(ctx, &r0, ep[0]);
    put_in_flight(ctx, &r1, ep[1]);

    /* Found inside an operation: reported, nothing completed yet. */
    in_op = true;
    bm_btl_ofi_endpoint_fail(ep[0], BM_ERR_LINK_DOWN, "stand-in: refused", false);
    in_op = false;
    BM_CHECK_EQ_INT(errors_reported, 1);
    BM_CHECK_EQ_INT(bm_btl_ofi_ep_failed(ep[0]), BM_ERR_LINK_DOWN);
    BM_CHECK_MSG(completions == 0 && completed_inside == 0,
                 "%d completion callbacks ran inside the failing operation", completed_inside);
    BM_CHECK_EQ_INT(atomic_load(&m->fail_due), 1);
    /* A second failure of the same path (another thread) changes nothing. */
    bm_btl_ofi_endpoint_fail(ep[0], BM_ERR_TIMEOUT, "stand-in: again", false);
    BM_CHECK_EQ_INT(errors_reported, 1);

    /* Progress: the failing peer's put completes with the error, once. */
    bm_btl_ofi_endpoint_fail_run(m);
    BM_CHECK_EQ_INT(completions, 1);
    BM_CHECK_EQ_INT(last_status, BM_ERR_LINK_DOWN);
    BM_CHECK_EQ_INT(atomic_load(&ep[0]->outstanding), 0);
    BM_CHECK_EQ_INT(atomic_load(&ep[1]->outstanding), 1);
    BM_CHECK_EQ_INT(atomic_load(&m->stats.fails_deferred), 1);
    BM_CHECK_EQ_INT(atomic_load(&m->fail_due), 0);
    bm_btl_ofi_endpoint_fail_run(m);
    BM_CHECK_EQ_INT(completions, 1);

    /* Found in progress (a completion error, the watcher): at once. */
    bm_btl_ofi_endpoint_fail(ep[1], BM_ERR_TIMEOUT, "stand-in: no answer", true);
    BM_CHECK_EQ_INT(errors_reported, 2);
    BM_CHECK_EQ_INT(completions, 2);
    BM_CHECK(last_status != BM_OK && last_status == bm_btl_ofi_ep_failed(ep[1]));
    BM_CHECK_EQ_INT(atomic_load(&m->fail_due), 0);
    BM_CHECK_EQ_INT(atomic_load(&m->stats.fails_deferred), 1);
    BM_CHECK_EQ_INT(atomic_load(&m->stats.path_failures), 2);
    return bm_test_summary("ofi_fail_defer");
}
