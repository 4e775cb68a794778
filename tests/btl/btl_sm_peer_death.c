/* A local peer that dies is reported, not waited for. Rank 1 forks: its
 * child opens the transports and takes part in the modex as rank 1, then
 * SIGKILLs itself, while the parent (the process bmrun watches) waits for
 * it and ends normally, so the job goes on. Rank 0 keeps sending to rank 1
 * over sm and checks that the error callback reports rank 1 as gone
 * (BM_BTL_ERROR_PEER, BM_ERR_PEER_GONE) within a few peer-check periods,
 * that every send completes exactly once with that status, and that later
 * sends fail at once. An atomic started towards rank 1 before it died
 * (never carried out: the child never calls progress) completes once with
 * the same status, and flush returns. Run with BM_BTL=self,sm and a short
 * BM_BTL_SM_PEER_CHECK_MS. */
#include "bm_test.h"
#include "btl/btl.h"
#include "runtime/rte.h"

#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_SENDS 100000

static int errors, error_peer = -2, error_status, error_kind = -1;
static int completed, completed_ok, completed_gone;
static unsigned char done_count[MAX_SENDS];

static void on_error(struct bm_btl_module *m, const struct bm_btl_error *err, void *cbdata)
{
    (void)m;
    (void)cbdata;
    errors++;
    error_kind = (int)err->kind;
    error_peer = err->peer;
    error_status = err->status;
    fprintf(stderr, "rank 0: error callback: %s\n", err->what ? err->what : "(null)");
}

static void on_done(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                    struct bm_btl_descriptor *des, int status)
{
    (void)m;
    (void)ep;
    intptr_t i = (intptr_t)des->context;
    if (i >= 0 && i < MAX_SENDS)
        done_count[i]++;
    completed++;
    if (status == BM_OK)
        completed_ok++;
    else if (status == BM_ERR_PEER_GONE)
        completed_gone++;
}

static int amo_done, amo_status;

static void on_amo(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                   struct bm_btl_reg_handle *local_handle, void *context, void *cbdata, int status)
{
    (void)m;
    (void)ep;
    (void)local_addr;
    (void)local_handle;
    (void)context;
    (void)cbdata;
    amo_done++;
    amo_status = status;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int child_rank1(void)
{
    if (bm_btl_base_open(NULL) != BM_OK || bm_rte_modex_fence() != BM_OK ||
        bm_btl_base_add_procs(bm_rte_self()->size) != BM_OK)
        _exit(3);
    raise(SIGKILL);
    _exit(4);
}

int main(void)
{
    if (bm_rte_init() != BM_OK)
        return 1;
    const struct bm_rte_proc *self = bm_rte_self();
    if (self->size != 2) {
        fprintf(stderr, "run with 2 ranks\n");
        return 1;
    }
    if (self->rank == 1) {
        pid_t pid = fork();
        if (pid == 0)
            return child_rank1();
        int st = 0;
        BM_CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
        BM_CHECK_MSG(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
                     "the child of rank 1 ended with status 0x%x before being killed", st);
        /* Stay until rank 0 is done: the job must not end because of us. */
        sleep(1);
        bm_rte_finalize();
        return bm_test_summary("btl_sm_peer_death rank 1");
    }

    BM_CHECK_EQ_INT(bm_btl_base_open(NULL), BM_OK);
    bm_btl_base_register_error(on_error, NULL);
    BM_CHECK_EQ_INT(bm_rte_modex_fence(), BM_OK);
    BM_CHECK_EQ_INT(bm_btl_base_add_procs(2), BM_OK);
    struct bm_btl_peer *peer = bm_btl_base_peer(1);
    if (!peer || peer->eager.count < 1) {
        BM_CHECK(0);
        return bm_test_summary("btl_sm_peer_death rank 0");
    }
    struct bm_btl_path *p = &peer->eager.paths[0];
    BM_CHECK_STR(p->module->ops->name, "sm");

    uint64_t amo_result = 0;
    BM_CHECK_EQ_INT(p->module->ops->atomic_fop(p->module, p->endpoint, &amo_result, 4096, NULL,
                                               NULL, BM_BTL_ATOMIC_ADD, 1, 0, 0, on_amo, NULL,
                                               NULL),
                    BM_OK);
    int sent = 0, refused = 0;
    double start = now_s();
    while (errors == 0 && now_s() - start < 20) {
        struct bm_btl_descriptor *des = NULL;
        if (sent < MAX_SENDS)
            des = bm_btl_alloc(p->module, p->endpoint, 0, 64,
                               BM_BTL_DES_F_BTL_OWNED | BM_BTL_DES_F_ALWAYS_CALLBACK);
        if (des) {
            memset(des->seg[0].addr, 0x5a, 64);
            des->cbfunc = on_done;
            des->context = (void *)(intptr_t)sent;
            int rc = bm_btl_send(p->module, p->endpoint, des, BM_BTL_TAG_TEST);
            if (rc == BM_OK || rc == BM_BTL_DONE) {
                sent++;
            } else {
                refused++;
                bm_btl_free(p->module, des);
            }
        }
        bm_btl_base_progress();
    }
    BM_CHECK_EQ_INT(errors, 1);
    BM_CHECK_EQ_INT(error_kind, BM_BTL_ERROR_PEER);
    BM_CHECK_EQ_INT(error_peer, 1);
    BM_CHECK_EQ_INT(error_status, BM_ERR_PEER_GONE);
    BM_CHECK(sent > 0);
    BM_CHECK_EQ_INT(refused, 0);
    /* Every send completed exactly once, none successfully: nobody received them. */
    BM_CHECK_EQ_INT(completed, sent);
    BM_CHECK_EQ_INT(completed_gone, sent);
    BM_CHECK_EQ_INT(completed_ok, 0);
    for (int i = 0; i < sent; i++)
        if (done_count[i] != 1) {
            BM_CHECK_MSG(0, "send %d completed %d times", i, done_count[i]);
            break;
        }
    BM_CHECK_EQ_INT(amo_done, 1);
    BM_CHECK_EQ_INT(amo_status, BM_ERR_PEER_GONE);
    BM_CHECK_EQ_INT(amo_result, 0);
    BM_CHECK_EQ_INT(p->module->ops->flush(p->module, p->endpoint), BM_OK);
    /* Later sends and atomics fail at once. */
    BM_CHECK_EQ_INT(p->module->ops->atomic_op(p->module, p->endpoint, 4096, NULL, BM_BTL_ATOMIC_ADD,
                                              1, 0, 0, on_amo, NULL, NULL),
                    BM_ERR_PEER_GONE);
    BM_CHECK_EQ_INT(
        bm_btl_sendi(p->module, p->endpoint, "x", 1, NULL, 0, 0, 0, BM_BTL_TAG_TEST, NULL),
        BM_ERR_PEER_GONE);
    fprintf(stderr, "rank 0: %d sends cancelled after %.2f s\n", sent, now_s() - start);
    bm_btl_base_close();
    bm_rte_finalize();
    return bm_test_summary("btl_sm_peer_death rank 0");
}
