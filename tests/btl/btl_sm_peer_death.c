/* A local peer that dies is reported, not waited for. Rank 1 forks: its
 * child opens the transports and takes part in the modex as rank 1, then
 * SIGKILLs itself, while the parent (the process bmrun watches) waits for
 * it and ends normally, so the job goes on. Two orders, chosen by the
 * argument, each made certain by a flag file (/tmp/bm-<jobid>-peerdeath):
 * - "mapped" (default): the child dies only after rank 0 has mapped its
 *   segment and started an atomic towards it (never carried out: the child
 *   never calls progress). Rank 0 keeps sending over sm and checks that the
 *   error callback reports rank 1 as gone (BM_BTL_ERROR_PEER,
 *   BM_ERR_PEER_GONE) within a few peer-check periods, that every send and
 *   the atomic complete exactly once with that status, that flush returns
 *   and that later sends fail at once.
 * - "early": the child dies before rank 0 first uses it, so its segment
 *   (reached through its /proc/<pid>/fd) is gone with it: the first use
 *   fails at once with BM_ERR_PEER_GONE, reported once as the peer's death,
 *   not as a broken path.
 * Run with BM_BTL=self,sm and a short BM_BTL_SM_PEER_CHECK_MS. */
#include "bm_test.h"
#include "btl/btl.h"
#include "runtime/rte.h"

#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
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

static char flag_path[128];

static void flag_raise(void)
{
    int fd = open(flag_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
}

/* Wait up to 20 s for the flag file; whether it came. */
static bool flag_wait(void)
{
    for (int i = 0; i < 20000; i++) {
        if (access(flag_path, F_OK) == 0)
            return true;
        usleep(1000);
    }
    return false;
}

static int child_rank1(bool early)
{
    if (bm_btl_base_open(NULL) != BM_OK || bm_rte_modex_fence() != BM_OK ||
        bm_btl_base_add_procs(bm_rte_self()->size) != BM_OK)
        _exit(3);
    if (!early && !flag_wait()) /* rank 0 has mapped us */
        _exit(5);
    raise(SIGKILL);
    _exit(4);
}

int main(int argc, char **argv)
{
    bool early = argc > 1 && strcmp(argv[1], "early") == 0;
    if (bm_rte_init() != BM_OK)
        return 1;
    const struct bm_rte_proc *self = bm_rte_self();
    if (self->size != 2) {
        fprintf(stderr, "run with 2 ranks\n");
        return 1;
    }
    char name[96];
    BM_CHECK_EQ_INT(bm_rte_job_name("peerdeath", name, sizeof(name)), BM_OK);
    snprintf(flag_path, sizeof(flag_path), "/tmp/%s", name);
    if (self->rank == 1) {
        pid_t pid = fork();
        if (pid == 0)
            return child_rank1(early);
        int st = 0;
        BM_CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
        BM_CHECK_MSG(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
                     "the child of rank 1 ended with status 0x%x before being killed", st);
        if (early)
            flag_raise(); /* the child is dead and reaped */
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
    if (early) {
        BM_CHECK_MSG(flag_wait(), "rank 1's child was not reported dead");
        BM_CHECK_EQ_INT(p->module->ops->atomic_fop(p->module, p->endpoint, &amo_result, 4096, NULL,
                                                   NULL, BM_BTL_ATOMIC_ADD, 1, 0, 0, on_amo, NULL,
                                                   NULL),
                        BM_ERR_PEER_GONE);
        for (double t = now_s(); errors == 0 && now_s() - t < 5;)
            bm_btl_base_progress();
        BM_CHECK_EQ_INT(errors, 1);
        BM_CHECK_EQ_INT(error_kind, BM_BTL_ERROR_PEER);
        BM_CHECK_EQ_INT(error_peer, 1);
        BM_CHECK_EQ_INT(error_status, BM_ERR_PEER_GONE);
        BM_CHECK_EQ_INT(amo_done, 0);
        BM_CHECK_EQ_INT(
            bm_btl_sendi(p->module, p->endpoint, "x", 1, NULL, 0, 0, 0, BM_BTL_TAG_TEST, NULL),
            BM_ERR_PEER_GONE);
        BM_CHECK_EQ_INT(p->module->ops->atomic_op(p->module, p->endpoint, 4096, NULL,
                                                  BM_BTL_ATOMIC_ADD, 1, 0, 0, on_amo, NULL, NULL),
                        BM_ERR_PEER_GONE);
        BM_CHECK_EQ_INT(errors, 1); /* reported once */
        unlink(flag_path);
        bm_btl_base_close();
        bm_rte_finalize();
        return bm_test_summary("btl_sm_peer_death (early) rank 0");
    }
    BM_CHECK_EQ_INT(p->module->ops->atomic_fop(p->module, p->endpoint, &amo_result, 4096, NULL,
                                               NULL, BM_BTL_ATOMIC_ADD, 1, 0, 0, on_amo, NULL,
                                               NULL),
                    BM_OK);
    flag_raise(); /* mapped, atomic posted: rank 1's child may die now */
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
    unlink(flag_path);
    bm_btl_base_close();
    bm_rte_finalize();
    return bm_test_summary("btl_sm_peer_death rank 0");
}
