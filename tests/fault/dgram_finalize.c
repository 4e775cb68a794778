/* MPI_Finalize over a lossy dgram path (bm_pml_quiesce): the last datagrams
 * of a job are lost, and the job must still end at once and cleanly.
 * Rank 1 enters MPI_Finalize first, so its barrier message is already at
 * rank 0 when rank 0's leaves; rank 0 loses that message (the test hook
 * bm_btl_dgram_inject_drop_next drops its next FRAG), and rank 1 loses its
 * next three standalone ACKs. Rank 0's barrier then completes at once and
 * its eager send is complete for the PML, but not acknowledged: without
 * the drain, rank 0 closed its transport and rank 1 waited in the barrier
 * for good. Now rank 0 resends until the ACK comes, while rank 1, done
 * with its barrier, waits in the job-wide fence and keeps answering (its
 * first ACKs are lost too: without progress in the fence, rank 0 waited
 * for an ACK that never came). Checks: MPI_Finalize returns within 10 s on
 * both ranks (a few ms normally), rank 0's drain began with an
 * unacknowledged send and ended with none, both fences completed, and
 * rank 1 (where ranks share cores: the tests' BM_PML_IDLE_YIELD) slept in
 * its fence between the resends it answered.
 *
 * Argument "pathfail": the same, and at a progress pass of rank 1's fence
 * (not its first) that received a resend (a progress hook: rank 0 waits
 * for the ACK) its dgram path to rank 0 is reported failed
 * to the PML, as the transport reports a failure (the module's error
 * callback). The PML's failover then writes its warnings, which name rank
 * 0's host: that lookup asked the modex, and under bmrun (or PMI) the get
 * waited for the fence, so rank 1 stopped progressing while rank 0 still
 * waited for its ACKs; rank 0 ended its drain only by failing its own path
 * (BM_BTL_DGRAM_FAIL_TIMEOUTS/FAIL_MS, seconds) and the fence then ended.
 * Checks besides the above: the report returned within 1 s, rank 1 still
 * progressed during its fence after it, and rank 0's dgram declared no
 * path failed. */
#include "bm_test.h"
#include "btl/btl.h"
#include "btl/dgram/dgram.h"
#include "pml/pml.h"
#include "util/clock.h"

#include <mpi.h>
#include <stdio.h>
#include <string.h>

/* pathfail, rank 1: the failure report, at the first pass of its fence. */
static struct {
    struct bm_btl_module *m;
    struct bm_btl_endpoint *ep;
    bool done;
    uint64_t report_ns; /* how long the PML took to handle the report */
    uint64_t passes_at; /* fence passes and work when it returned */
    uint64_t work_at;
    uint64_t work_seen; /* fence work at the hook's last call */
} pf;

static int pathfail_hook(void *arg)
{
    (void)arg;
    struct bm_pml_quiesce_stats q;
    bm_pml_quiesce_stats(&q);
    /* A pass of the fence after its first that received something (a
     * resend of rank 0's whose ACK is owed): by then the fence's helper
     * thread is in the launcher's fence, and rank 0 still waits for this
     * process. */
    uint64_t seen = pf.work_seen;
    pf.work_seen = q.fence_work;
    if (pf.done || q.fence_passes < 2 || q.fence_work == seen)
        return 0;
    pf.done = true;
    struct bm_btl_error err = {.kind = BM_BTL_ERROR_PEER,
                               .endpoint = pf.ep,
                               .peer = 0,
                               .status = BM_ERR_LINK_DOWN,
                               .what = "reported failed by the test dgram_finalize_pathfail"};
    uint64_t t = bm_util_clock_now_ns();
    pf.m->error_cb(pf.m, &err, pf.m->error_cbdata);
    pf.report_ns = bm_util_clock_now_ns() - t;
    bm_pml_quiesce_stats(&q);
    pf.passes_at = q.fence_passes;
    pf.work_at = q.fence_work;
    return 0;
}

/* pathfail, rank 0: its dgram statistics as long as the module exists
 * (until its quiesce ends; the transports close after it). */
static struct bm_btl_dgram_module *watch_dm;
static struct bm_btl_dgram_stats watch_stats;

static int watch_hook(void *arg)
{
    (void)arg;
    struct bm_pml_quiesce_stats q;
    bm_pml_quiesce_stats(&q);
    if (q.fence_ns == 0)
        bm_btl_dgram_stats_get(watch_dm, &watch_stats);
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "%s: run with 2 ranks\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    bool pathfail = argc > 1 && strcmp(argv[1], "pathfail") == 0;
    struct bm_btl_peer *peer = bm_btl_base_peer(1 - rank);
    struct bm_btl_dgram_module *dm = NULL;
    for (int i = 0; peer && i < peer->send.count; i++)
        if (strcmp(peer->send.paths[i].module->ops->name, "dgram") == 0) {
            dm = (struct bm_btl_dgram_module *)peer->send.paths[i].module;
            pf.m = peer->send.paths[i].module;
            pf.ep = peer->send.paths[i].endpoint;
        }
    BM_CHECK_MSG(dm != NULL, "dgram does not reach rank %d (set BM_BTL=self,dgram)", 1 - rank);
    if (!dm) {
        MPI_Finalize();
        return bm_test_summary("dgram_finalize");
    }
    /* first contact (the connectivity check) is over before the losses */
    int v = rank, w = -1;
    MPI_Sendrecv(&v, 1, MPI_INT, 1 - rank, 0, &w, 1, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    BM_CHECK_EQ_INT(w, 1 - rank);
    MPI_Barrier(MPI_COMM_WORLD);
    /* Both progress (MPI_Iprobe) rather than sleep: the ACKs this barrier
     * owes go out, and none comes late (a round trip as long as a sleep
     * would make the retransmit timeouts long). Rank 1 enters MPI_Finalize
     * first; its barrier message reaches rank 0 while rank 0 still waits. */
    uint64_t until = bm_util_clock_now_ns() + (rank == 0 ? 100000000u : 20000000u);
    int flag;
    while (bm_util_clock_now_ns() < until)
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    if (rank == 0)
        bm_btl_dgram_inject_drop_next(dm, BM_DGRAM_T_FRAG, 1);
    else
        bm_btl_dgram_inject_drop_next(dm, BM_DGRAM_T_ACK, 3);
    if (pathfail && rank == 1)
        bm_pml_progress_register(pathfail_hook, NULL);
    if (pathfail && rank == 0) {
        watch_dm = dm;
        bm_pml_progress_register(watch_hook, NULL);
    }
    bool yields = bm_pml_idle_yields(); /* ranks share cores: the fence sleeps */
    uint64_t t0 = bm_util_clock_now_ns();
    MPI_Finalize();
    double ms = (double)(bm_util_clock_now_ns() - t0) / 1e6;
    struct bm_pml_quiesce_stats q;
    bm_pml_quiesce_stats(&q);
    printf("rank %d: MPI_Finalize %.1f ms; drain %.2f ms (%d descriptors owed, then %d "
           "unacknowledged sends, %d left), fence %.2f ms (%s, progress found %llu in %llu "
           "passes, %llu of them followed by a sleep)\n",
           rank, ms, (double)q.drain_ns / 1e6, q.owed_start, q.unacked_start, q.unacked_end,
           (double)q.fence_ns / 1e6, q.fenced ? "completed" : "FAILED",
           (unsigned long long)q.fence_work, (unsigned long long)q.fence_passes,
           (unsigned long long)q.fence_sleeps);
    BM_CHECK_MSG(ms < 10000.0, "rank %d: MPI_Finalize took %.0f ms", rank, ms);
    BM_CHECK_MSG(q.fenced, "rank %d: the finalize fence did not complete", rank);
    BM_CHECK_EQ_INT(q.unacked_end, 0);
    if (rank == 0)
        BM_CHECK_MSG(q.owed_start + q.unacked_start >= 1,
                     "rank 0 began its drain owing nothing: its lost barrier message was not "
                     "waited for");
    else
        BM_CHECK_MSG(q.fence_work >= 1,
                     "rank 1 received nothing during its fence: rank 0's resends (whose ACKs "
                     "it lost) were answered elsewhere, the fence's progress was not tested");
    /* Where ranks share cores (BM_PML_IDLE_YIELD as the tests set it) the
     * fence sleeps when it finds nothing, and still answered the resends
     * above (a datagram wakes it). */
    if (yields && rank == 1)
        BM_CHECK_MSG(q.fence_sleeps >= 1, "rank 1 never slept in its fence (%llu passes)",
                     (unsigned long long)q.fence_passes);
    if (pathfail && rank == 1) {
        printf("rank 1: path failure reported at fence pass %llu, handled in %.3f ms; after it "
               "%llu more passes found %llu events\n",
               (unsigned long long)pf.passes_at, (double)pf.report_ns / 1e6,
               (unsigned long long)(q.fence_passes - pf.passes_at),
               (unsigned long long)(q.fence_work - pf.work_at));
        BM_CHECK_MSG(pf.done, "rank 1: the path failure was never reported in its fence");
        BM_CHECK_MSG(pf.report_ns < 1000000000u,
                     "rank 1: handling a path failure in the fence took %.0f ms: the failover "
                     "waited for the runtime (a modex get under the fence)",
                     (double)pf.report_ns / 1e6);
        BM_CHECK_MSG(q.fence_passes > pf.passes_at,
                     "rank 1 made no progress pass in its fence after the path failure report: "
                     "it stopped progressing while rank 0 still needed its ACK");
    }
    if (pathfail && rank == 0) {
        printf("rank 0: dgram paths declared failed %llu\n",
               (unsigned long long)watch_stats.path_failures);
        BM_CHECK_MSG(
            watch_stats.path_failures == 0,
            "rank 0 declared its dgram path failed: rank 1 stopped answering in its fence");
    }
    return bm_test_summary("dgram_finalize");
}
