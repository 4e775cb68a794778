/* Helper of the sm cleanup test (btl_sm_cleanup.sh): starts the transports
 * with BM_BTL=self,sm and then, by mode, ends normally after some traffic
 * ("normal"), aborts the job from rank 1 before the peers have mapped its
 * segment ("abort"), SIGKILLs rank 1 at that point ("kill"), or SIGKILLs
 * rank 1 after add_procs and a barrier, when no peer has mapped its segment
 * yet (they map on first use) but the job is past start-up ("latekill",
 * run under foreign launchers, which know no names to clean). Every rank
 * prints JOBID=<jobid> first so that the script can look for leftovers of
 * exactly this job. Every mode checks that the name of this rank's segment
 * is gone right after start-up (peers open it through /proc/<pid>/fd:
 * sm_segment.c); normal mode then checks that one message from every rank
 * to every other gets through (every segment mapped that way) and that no
 * name came back. */
#include "bm_test.h"
#include "btl/btl.h"
#include "runtime/rte.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int received;

static void on_recv(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata)
{
    (void)m;
    (void)cbdata;
    BM_CHECK_EQ_INT(d->seg_count >= 1 ? d->seg[0].len : 0, 4);
    received++;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "normal";
    if (bm_rte_init() != BM_OK)
        return 1;
    const struct bm_rte_proc *self = bm_rte_self();
    /* Every rank prints it: the one that dies on purpose may do so before
     * any other has printed anything. */
    printf("JOBID=%s\n", self->jobid);
    fflush(stdout);
    BM_CHECK_EQ_INT(bm_btl_base_open(NULL), BM_OK);
    char path[256];
    snprintf(path, sizeof(path), "/dev/shm/bm-%s-sm-%d", self->jobid, self->rank);
    /* Published by descriptor: the name is gone before any peer mapped it. */
    errno = 0;
    BM_CHECK_MSG(access(path, F_OK) != 0 && errno == ENOENT,
                 "%s still in /dev/shm after start-up: a rank killed now would leave it", path);
    if (self->rank == 1 && strcmp(mode, "kill") == 0)
        raise(SIGKILL);
    if (self->rank == 1 && strcmp(mode, "abort") == 0)
        bm_rte_abort(3, "btl_sm_cleanup: deliberate abort from rank 1");

    bm_btl_base_register_recv(BM_BTL_TAG_TEST, on_recv, NULL);
    BM_CHECK_EQ_INT(bm_rte_modex_fence(), BM_OK);
    BM_CHECK_EQ_INT(bm_btl_base_add_procs(self->size), BM_OK);
    /* Peers map a segment when they first use it: nobody has yet. */
    BM_CHECK_EQ_INT(bm_rte_barrier(), BM_OK);
    if (self->rank == 1 && strcmp(mode, "latekill") == 0)
        raise(SIGKILL);
    BM_CHECK_EQ_INT(bm_rte_barrier(), BM_OK);

    /* One message from every rank to every other: now everyone has mapped
     * everyone. */
    for (int other = 0; other < self->size; other++) {
        if (other == self->rank)
            continue;
        struct bm_btl_peer *peer = bm_btl_base_peer(other);
        BM_CHECK(peer && peer->eager.count > 0);
        if (!peer || peer->eager.count == 0)
            continue;
        struct bm_btl_path *p = &peer->eager.paths[0];
        struct bm_btl_descriptor *des;
        while (!(des = bm_btl_alloc(p->module, p->endpoint, 0, 4,
                                    BM_BTL_DES_F_BTL_OWNED | BM_BTL_DES_F_ALWAYS_CALLBACK)))
            bm_btl_base_progress();
        memcpy(des->seg[0].addr, "ring", 4);
        int rc = bm_btl_send(p->module, p->endpoint, des, BM_BTL_TAG_TEST);
        BM_CHECK(rc == BM_OK || rc == BM_BTL_DONE);
    }
    while (received < self->size - 1)
        bm_btl_base_progress();
    BM_CHECK_EQ_INT(bm_rte_barrier(), BM_OK);
    /* Everyone has mapped everyone (through /proc/<pid>/fd), and no name is left. */
    errno = 0;
    BM_CHECK_MSG(access(path, F_OK) != 0 && errno == ENOENT,
                 "%s still exists after every local peer mapped it", path);
    BM_CHECK_EQ_INT(bm_rte_barrier(), BM_OK);
    bm_btl_base_close();
    bm_rte_finalize();
    return bm_test_summary("btl_sm_cleanup");
}
