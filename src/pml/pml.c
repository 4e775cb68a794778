/* Start-up and shutdown of the PML, its tunables, and probes. Init opens the
 * transports, exchanges addresses, connects every peer and registers the
 * PML's receive handlers (one BTL tag per header type) and the error
 * handler; finalize drains every transfer the PML still owes before the
 * transports close. */
#define BM_LOG_SUBSYS "pml"
#include "util/log.h"

#include "pml/pml_internal.h"
#include "runtime/rte.h"
#include "util/clock.h"
#include "util/params.h"

#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct bm_param pml_params[] = {
    {"BM_PML_SENDI_LIMIT", BM_PARAM_SIZE, "4096", 0, 1 << 20, NULL,
     "Largest payload sent with a transport's inline send (no descriptor, lowest latency) "
     "when the transport offers one; larger eager messages use a descriptor.",
     offsetof(struct bm_pml_config, sendi_limit), 0},
    {"BM_PML_PIPELINE_DEPTH", BM_PARAM_INT, "8", 1, 4096, NULL,
     "Rendezvous fragments (FRAGs) in flight per message. More overlaps copies with "
     "transfers; fewer uses less transport memory.",
     offsetof(struct bm_pml_config, pipeline_depth), 0},
    {"BM_PML_FRAG_SIZE", BM_PARAM_SIZE, "0", 0, 1LL << 30, NULL,
     "Cap on the payload of one rendezvous fragment; 0 uses each transport's max_send_size.",
     offsetof(struct bm_pml_config, frag_size_max), 0},
    {"BM_PML_PACK_FRAG_SIZE", BM_PARAM_SIZE, "128k", 0, 1LL << 30, NULL,
     "Cap on a rendezvous fragment (header included) of a non-contiguous message, which is "
     "packed into a transport buffer: the receiver unpacks one fragment while the sender packs "
     "the next, and the buffer comes from the transport's pool (tcp keeps eager-sized ones, "
     "64 KiB, and some of twice that size; larger ones are allocated per fragment). 0: only "
     "BM_PML_FRAG_SIZE and the transport's max_send_size limit it. Contiguous messages are not "
     "affected.",
     offsetof(struct bm_pml_config, pack_frag_size), 0},
    {"BM_PML_IOV_BLOCK_MIN", BM_PARAM_SIZE, "16k", 0, 1LL << 30, NULL,
     "Rendezvous fragments of a non-contiguous message whose type's blocks average at least "
     "this many bytes are sent from the blocks in place, unpacked, when the transport can "
     "gather them (tcp's sendmsg; such fragments are as large as the transport takes, not "
     "BM_PML_PACK_FRAG_SIZE), and received straight into the blocks when the transport can "
     "place them (tcp). Below it the kernel's cost per block outweighs the copy (tcp, 512-byte "
     "blocks: about 26 ns more per block each way than packing). 0: always packed and "
     "unpacked.",
     offsetof(struct bm_pml_config, iov_block_min), 0},
    {"BM_PML_PACK_BOUNCE", BM_PARAM_SIZE, "64k", 0, 1LL << 40, NULL,
     "The fragments of a non-contiguous message of at most this many bytes, which the "
     "receiver waits for, are packed through a small cache-local buffer and "
     "copied into the transport's buffer in one move, when that buffer is in shared memory "
     "(sm) and the type's contiguous runs are 64 bytes or more: packing block by block straight "
     "into shared memory that the other "
     "process just read stalls on every line (sm vec64 ping-pong, 8-64 KiB, on the test VM: "
     "14-30% lower latency). Those of larger messages, which the sender packs while the "
     "receiver unpacks earlier ones, measured faster packed straight (128-512 KiB: 0-8% "
     "lower latency). Also where BM_PML_PACK_FIRST_FRAG applies. 0: never.",
     offsetof(struct bm_pml_config, pack_bounce), 0},
    {"BM_PML_PACK_AHEAD", BM_PARAM_INT, "1", 0, 1, NULL,
     "1: a non-contiguous rendezvous packs its first fragment after the RNDV while it waits "
     "for the receiver's ACK, so that the fragment leaves as soon as the ACK arrives (tcp "
     "vector of doubles ping-pong, 128 KiB: the pack of 64 KiB leaves the critical path). "
     "The packed buffer is freed unsent when the ACK asks for other bytes. 0: pack after the "
     "ACK.",
     offsetof(struct bm_pml_config, pack_ahead), 0},
    {"BM_PML_PACK_FIRST_FRAG", BM_PARAM_SIZE, "16k", 0, 1LL << 30, NULL,
     "Cap (header included) on the packed fragments of a non-contiguous message of at most "
     "BM_PML_PACK_BOUNCE bytes, when the transport's buffers are shared "
     "memory (sm): the receiver starts unpacking sooner and the sender packs the next one "
     "meanwhile; the fragments of larger messages stay large (BM_PML_PACK_FRAG_SIZE and the "
     "transport's max_send_size), as small ones cost more per byte (sm, vector of 64-double "
     "blocks, ping-pong p10 on the test VM: 64 KiB 9.0-9.2 -> 7.5-8.2 us with 16 KiB "
     "fragments, but 256 KiB 19.0 -> 20.5 and 1 MiB 125 -> 150 us with every fragment at 16 "
     "KiB, and p50 of 128-512 KiB 6-10% higher with only their first 64 KiB cut). "
     "0: no separate cap.",
     offsetof(struct bm_pml_config, pack_first_frag), 0},
    {"BM_PML_IDLE_YIELD", BM_PARAM_INT, "-1", -1, 1 << 30, NULL,
     "Consecutive idle progress polls after which a waiting process yields its core "
     "(sched_yield), so that ranks sharing cores with their peers do not starve them; in a "
     "job over several hosts it yields sooner when the polls have taken 1 us (a poll of a "
     "network transport is a system call). "
     "-1 (auto): after 64 polls when this host runs more of the job's ranks than the CPUs "
     "they may use; otherwise a waiting rank spins, and yields after 64 idle polls only for "
     "100 ms after it found itself preempted while it polled (other programs compete for "
     "its core). 0 never yields.",
     offsetof(struct bm_pml_config, idle_yield), 0},
    {"BM_PML_STREAM_COPY_MIN", BM_PARAM_SIZE, "1M", 0, 1LL << 40, NULL,
     "Messages of at least this many bytes are copied out of rendezvous fragments into "
     "the receive buffer with stores that bypass the cache (x86-64), which saves a third "
     "of the memory traffic of the copy when the buffer is not in cache, but leaves the "
     "data in memory rather than in cache; for a non-contiguous receive buffer, its blocks "
     "of 256 bytes or more. 0 never bypasses the cache.",
     offsetof(struct bm_pml_config, stream_copy_min), 0},
    {"BM_PML_STATS", BM_PARAM_INT, "0", 0, 1, NULL,
     "1 prints, at finalize, how often each kind of lock was taken and how often a thread "
     "found it taken (MPI_THREAD_MULTIPLE), one line per rank. Counting every acquisition "
     "costs an atomic add per lock; contended ones are always counted.",
     offsetof(struct bm_pml_config, stats), 0},
    {"BM_PML_EXIT_DRAIN_MS", BM_PARAM_INT, "2000", 0, 600000, NULL,
     "A process that exits while MPI is initialized (no MPI_Finalize: an erroneous program, "
     "but a common one) first delivers what it still owes its peers (a rendezvous's "
     "completion message, the transports' acknowledgements) for at most this many "
     "milliseconds, so that a peer still inside MPI_Send completes instead of declaring the "
     "path failed. 0: exit at once.",
     offsetof(struct bm_pml_config, exit_drain_ms), 0},
    {"BM_PML_RECV_TAKE", BM_PARAM_INT, "16", 0, 1 << 20, NULL,
     "A blocking receive of a contiguous buffer of at most BM_PML_RECV_TAKE_MAX bytes from one "
     "source with one tag, the only "
     "receive posted on its communicator, looks for its message in the transport this many "
     "times between progress passes (single-threaded processes; transports that offer it: sm's "
     "fast boxes), and when the next message from that source is the one it waits for, takes "
     "it straight into its buffer instead of through the receive callback and the match "
     "queues (sm 8-byte ping-pong: about 200 fewer instructions per message on the path "
     "from its arrival to the answer). Before it is posted at all, while nothing is posted on "
     "its communicator and nothing of that source and tag waits unexpected, it looks 16 times "
     "this many times without progress passes, and a message taken then needs no request. "
     "Anything else is delivered by progress as usual. 0: off.",
     offsetof(struct bm_pml_config, recv_take), 0},
    {"BM_PML_RECV_TAKE_MAX", BM_PARAM_SIZE, "4096", 0, 4096, NULL,
     "Largest buffer (bytes) of a blocking receive that takes its message from the transport "
     "(BM_PML_RECV_TAKE). 4096 covers every sm fast-box message: on the test VM, sm "
     "ping-pongs of 512 B-2 KiB took 1.25-1.55 us with 256 and 0.51-0.85 us with 4096 "
     "(interleaved rounds, src/pml/recv.c); 8-256 B and 4 KiB unchanged.",
     offsetof(struct bm_pml_config, recv_take_max), 0},
};
static const struct bm_param_table pml_table = {"pml", pml_params, BM_PARAM_COUNT(pml_params)};
BM_PARAM_TABLE_REGISTER(pml_table);

/* Polls before a yield when the job oversubscribes its host. */
#define IDLE_YIELD_OVERSUBSCRIBED 64

/* Publish the CPUs this process may run on (its affinity mask, trimmed
 * after the last CPU set), for the oversubscription check. */
static void cpus_put(void)
{
    cpu_set_t set;
    size_t len = 0;

    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return;
    for (size_t i = 0; i < sizeof(set); i++)
        if (((const unsigned char *)&set)[i])
            len = i + 1;
    (void)bm_rte_modex_put("pml.cpus", &set, len);
}

/* After the fence: does this host run more of the job's ranks than the
 * CPUs they may use (the union of their affinity masks)? Bound ranks each
 * publish one CPU, unbound ones the whole set they share; a rank whose
 * mask is unknown counts as one rank on the CPUs seen so far. */
static bool oversubscribed(void)
{
    const struct bm_rte_proc *self = bm_rte_self();
    unsigned char all[sizeof(cpu_set_t)] = {0};
    int node = bm_rte_node_of(self->rank), nlocal = 0, ncpu = 0;

    for (int r = 0; r < self->size; r++) {
        const void *data = NULL;
        size_t len = 0;
        if (bm_rte_node_of(r) != node)
            continue;
        nlocal++;
        if (bm_rte_modex_get(r, "pml.cpus", &data, &len) != BM_OK)
            continue;
        for (size_t i = 0; i < len && i < sizeof(all); i++)
            all[i] |= ((const unsigned char *)data)[i];
    }
    for (size_t i = 0; i < sizeof(all); i++)
        ncpu += __builtin_popcount(all[i]);
    return ncpu > 0 && nlocal > ncpu;
}

/* What each rank publishes of its waiting settings (host_agree). */
#define SHARE_SPIN    0x1u /* BM_PML_WAIT_MODE=spin */
#define SHARE_AUTO    0x2u /* BM_PML_IDLE_YIELD=auto (-1) */
#define SHARE_YIELD   0x4u /* BM_PML_IDLE_YIELD above 0 */
#define SHARE_HANDOFF 0x8u /* BM_PML_PROGRESS_THREAD=1 and _HANDOFF=1 */

static void share_put(void)
{
    uint8_t bits = (uint8_t)((bm_pml_g.wait_mode == BM_PML_WAIT_SPIN ? SHARE_SPIN : 0) |
                             (bm_pml_g.cfg.idle_yield < 0 ? SHARE_AUTO : 0) |
                             (bm_pml_g.cfg.idle_yield > 0 ? SHARE_YIELD : 0) |
                             (bm_pml_wait_handoff_set() ? SHARE_HANDOFF : 0));
    (void)bm_rte_modex_put("pml.share", &bits, sizeof(bits));
}

/* After the fence and oversubscribed(): what every rank of this host
 * decides alike from the settings its ranks published, where each rank's
 * own may differ (one rank given BM_PML_IDLE_YIELD, or the progress thread,
 * and not the others): whether the host's ranks share cores, and whether
 * one of them hands nonblocking starts to its progress thread
 * (bm_pml_host_shares_cores, _handoff). A rank whose word is missing counts
 * as one with the defaults. */
static void host_agree(void)
{
    int node = bm_rte_node_of(bm_pml_g.my_rank);
    bool shares = bm_pml_g.oversubscribed, handoff = false;

    for (int r = 0; r < bm_pml_g.world_size; r++) {
        const void *data = NULL;
        size_t len = 0;
        unsigned bits = SHARE_AUTO;
        if (bm_rte_node_of(r) != node)
            continue;
        if (bm_rte_modex_get(r, "pml.share", &data, &len) == BM_OK && len >= 1)
            bits = *(const uint8_t *)data;
        bool yields = !(bits & SHARE_SPIN) &&
                      ((bits & SHARE_YIELD) || ((bits & SHARE_AUTO) && bm_pml_g.oversubscribed));
        shares |= yields;
        handoff |= yields && (bits & SHARE_HANDOFF);
    }
    bm_pml_g.host_shares = shares;
    bm_pml_g.host_handoff = handoff;
}

/* Every peer needs a path whose limits can carry the PML's headers. */
static bm_status_t check_paths(void)
{
    for (int r = 0; r < bm_pml_g.world_size; r++) {
        struct bm_btl_peer *peer = bm_btl_base_peer(r);
        if (!peer || peer->eager.count == 0 || peer->send.count == 0) {
            bm_log_error("rank %d has no transport for sending to rank %d; check BM_BTL",
                         bm_pml_g.my_rank, r);
            return BM_ERR_UNREACHABLE;
        }
        for (int i = 0; i < peer->eager.count; i++) {
            struct bm_btl_module *m = peer->eager.paths[i].module;
            if (m->eager_limit < BM_PML_HDR_MAX_SIZE ||
                m->max_send_size <= sizeof(struct bm_pml_hdr_frag)) {
                bm_log_error("transport %s has an eager limit of %zu and a max send size of "
                             "%zu bytes; the point-to-point layer needs at least %zu for its "
                             "headers. Raise the transport's limits.",
                             m->name, m->eager_limit, m->max_send_size,
                             (size_t)BM_PML_HDR_MAX_SIZE + 1);
                return BM_ERR_BAD_PARAM;
            }
        }
    }
    return BM_OK;
}

static void pml_locks_fini(void)
{
    if (bm_pml_g.mt) {
        bm_util_lock_destroy(&bm_pml_g.drain);
        bm_pml_start_fini();
        bm_pml_tx_fini();
    }
    bm_pml_g.mt = false;
}

/* BM_PML_STATS: one line per rank with the lock counters (lock.h). */
static void pml_stats_print(void)
{
    char line[1024];
    if (bm_util_lock_report(line, sizeof(line)) == 0)
        snprintf(line, sizeof(line), "no lock taken (not MPI_THREAD_MULTIPLE)");
    fprintf(stderr, "[pml stats] rank %d locks acquired/contended: %s\n", bm_pml_g.my_rank, line);
    bm_pml_wait_report(line, sizeof(line));
    fprintf(stderr,
            "[pml stats] rank %d waiting: %s; sends started by the lock's holder %llu; direct "
            "sends %llu; rendezvous started without the progress lock %llu (at most %d "
            "threads in a rendezvous start at once); FRAGs sent without the progress lock %llu "
            "(at most %d threads in the per-peer FRAG path at once); per-peer sends completed "
            "without the progress lock %llu, freed without it %llu\n",
            bm_pml_g.my_rank, line,
            (unsigned long long)__atomic_load_n(&bm_pml_g.sends_deferred, __ATOMIC_RELAXED),
            (unsigned long long)__atomic_load_n(&bm_pml_g.sends_direct, __ATOMIC_RELAXED),
            (unsigned long long)__atomic_load_n(&bm_pml_g.sends_rndv_free, __ATOMIC_RELAXED),
            __atomic_load_n(&bm_pml_g.rndv_in_max, __ATOMIC_RELAXED),
            (unsigned long long)__atomic_load_n(&bm_pml_g.tx_frags_free, __ATOMIC_RELAXED),
            __atomic_load_n(&bm_pml_g.frag_in_max, __ATOMIC_RELAXED),
            (unsigned long long)__atomic_load_n(&bm_pml_g.tx_done_free, __ATOMIC_RELAXED),
            (unsigned long long)__atomic_load_n(&bm_pml_g.tx_freed_free, __ATOMIC_RELAXED));
    if (bm_pml_g.restart_timers)
        fprintf(stderr,
                "[pml stats] rank %d restarts: timers fired %llu, ranges asked %llu, served %llu, "
                "RNDVs resent %llu, queries %llu; timers reset by the peer's progress %llu; "
                "FRAGs dropped for a receive a restart finished %llu\n",
                bm_pml_g.my_rank, (unsigned long long)bm_pml_g.restart_timeouts,
                (unsigned long long)bm_pml_g.restarts_asked,
                (unsigned long long)bm_pml_g.restarts_served,
                (unsigned long long)bm_pml_g.rndv_resent, (unsigned long long)bm_pml_g.rndv_queries,
                (unsigned long long)bm_pml_g.restart_peer_resets,
                (unsigned long long)bm_pml_g.restart_dup_frags);
}

bm_status_t bm_pml_init(int thread_level)
{
    if (bm_pml_g.initialized)
        return BM_OK;
    memset(&bm_pml_g, 0, sizeof(bm_pml_g));
    bm_status_t rc = bm_util_params_load(&pml_table, &bm_pml_g.cfg);
    if (rc != BM_OK)
        return rc;
    const struct bm_rte_proc *self = bm_rte_self();
    bm_pml_g.world_size = self->size;
    bm_pml_g.my_rank = self->rank;
    struct bm_btl_init_args args = {.thread_level = thread_level, .progress_threads = false};
    rc = bm_pml_wait_init(thread_level, &args); /* sets bm_pml_g.mt */
    if (rc != BM_OK)
        return rc;
    bm_util_lock_stats = bm_pml_g.cfg.stats != 0;
    if (bm_pml_g.mt) {
        static struct bm_util_lock_class drain_class = {.name = "progress"};
        bm_util_lock_init(&bm_pml_g.drain, &drain_class, false);
        bm_pml_start_init();
        rc = bm_pml_tx_init();
        if (rc != BM_OK)
            return rc;
    }
    bm_pml_request_table_init();
    bm_pml_match_init();
    bm_pml_rdma_params_load();

    rc = bm_btl_base_open(&args);
    if (rc != BM_OK) {
        bm_log_error("could not open the transports: %s", bm_status_str(rc));
        return rc;
    }
    bm_btl_base_register_recv(BM_PML_BTL_TAG(BM_PML_HDR_MATCH), bm_pml_recv_match_cb, NULL);
    bm_btl_base_register_recv(BM_PML_BTL_TAG(BM_PML_HDR_RNDV), bm_pml_recv_match_cb, NULL);
    bm_btl_base_register_recv(BM_PML_BTL_TAG(BM_PML_HDR_ACK), bm_pml_send_ack_cb, NULL);
    bm_btl_base_register_recv(BM_PML_BTL_TAG(BM_PML_HDR_CANCEL), bm_pml_cancel_cb, NULL);
    bm_btl_base_register_recv(BM_PML_BTL_TAG(BM_PML_HDR_CANCEL_ACK), bm_pml_cancel_ack_cb, NULL);
    bm_btl_base_register_recv(BM_PML_BTL_TAG(BM_PML_HDR_LOST), bm_pml_restart_lost_cb, NULL);
    bm_btl_base_register_recv(BM_PML_BTL_TAG(BM_PML_HDR_FRAG), bm_pml_recv_frag_cb, NULL);
    bm_btl_base_register_place(BM_PML_BTL_TAG(BM_PML_HDR_FRAG), bm_pml_recv_frag_place,
                               sizeof(struct bm_pml_hdr_frag));
    bm_btl_base_register_recv(BM_PML_BTL_TAG(BM_PML_HDR_RGET), bm_pml_recv_match_cb, NULL);
    bm_btl_base_register_recv(BM_PML_BTL_TAG(BM_PML_HDR_FIN), bm_pml_rdma_fin_cb, NULL);
    bm_btl_base_register_recv(BM_PML_BTL_TAG(BM_PML_HDR_PUT), bm_pml_rdma_put_cb, NULL);
    bm_pml_am_init();
    bm_btl_base_register_error(bm_pml_error_cb, NULL);
    cpus_put();
    share_put();

    rc = bm_rte_modex_fence();
    if (rc != BM_OK) {
        bm_log_error("address exchange with the other processes failed: %s", bm_status_str(rc));
        goto err_close;
    }
    bm_pml_g.oversubscribed = oversubscribed();
    host_agree();
    bm_pml_g.spans_hosts = false;
    for (int r = 0; r < bm_pml_g.world_size; r++)
        bm_pml_g.spans_hosts |= bm_rte_node_of(r) != bm_rte_node_of(bm_pml_g.my_rank);
    if (bm_pml_g.cfg.idle_yield < 0) {
        bool over = bm_pml_g.oversubscribed;
        bm_pml_g.cfg.idle_yield = over ? IDLE_YIELD_OVERSUBSCRIBED : 0;
        bm_pml_g.idle_watch = !over;
        bm_log_info("%s: waiting processes %s",
                    over ? "more ranks than CPUs on this host" : "a CPU per rank on this host",
                    over ? "yield after 64 idle polls"
                         : "never yield to each other (they yield while other programs take "
                           "their cores)");
    }
    rc = bm_btl_base_add_procs(bm_pml_g.world_size);
    if (rc != BM_OK)
        goto err_close;
    rc = check_paths();
    if (rc != BM_OK)
        goto err_close;
    bm_pml_g.path_bytes = calloc((size_t)bm_pml_g.world_size, sizeof(*bm_pml_g.path_bytes));
    bm_pml_g.retry_blocked = calloc((size_t)bm_pml_g.world_size, sizeof(*bm_pml_g.retry_blocked));
    bm_pml_g.ctl_pending = calloc((size_t)bm_pml_g.world_size, sizeof(*bm_pml_g.ctl_pending));
    if (!bm_pml_g.path_bytes || !bm_pml_g.retry_blocked || !bm_pml_g.ctl_pending) {
        rc = BM_ERR_NO_MEMORY;
        goto err_close;
    }
    rc = bm_pml_failover_init();
    if (rc == BM_OK)
        rc = bm_pml_restart_init();
    if (rc == BM_OK)
        rc = bm_pml_stripe_init();
    if (rc != BM_OK)
        goto err_close;
    for (int r = 0; r < bm_pml_g.world_size; r++) {
        bm_pml_g.path_bytes[r] =
            calloc((size_t)bm_btl_base_peer(r)->send.count, sizeof(**bm_pml_g.path_bytes));
        if (!bm_pml_g.path_bytes[r]) {
            rc = BM_ERR_NO_MEMORY;
            goto err_bytes;
        }
    }
    bm_pml_g.initialized = true;
    bm_pml_progress_st_set(true);
    rc = bm_pml_wait_start();
    if (rc != BM_OK) {
        bm_pml_finalize();
        return rc;
    }
    return BM_OK;

err_bytes:
    for (int r = 0; r < bm_pml_g.world_size; r++)
        free(bm_pml_g.path_bytes[r]);
err_close:
    free(bm_pml_g.path_bytes);
    bm_pml_g.path_bytes = NULL;
    free(bm_pml_g.retry_blocked);
    bm_pml_g.retry_blocked = NULL;
    free(bm_pml_g.ctl_pending);
    bm_pml_g.ctl_pending = NULL;
    bm_pml_failover_fini();
    bm_pml_stripe_fini();
    bm_pml_restart_fini();
    bm_btl_base_close();
    pml_locks_fini();
    return rc;
}

/* Transfers the PML still owes its peers: descriptors a transport has not
 * called back, queued sends and control messages, freed requests whose
 * transfer still runs. */
static bool pml_owes_peers(void)
{
    return bm_pml_g.inflight > 0 || bm_pml_g.pend_head || bm_pml_g.ctl_head ||
           __atomic_load_n(&bm_pml_g.freed_active, __ATOMIC_RELAXED) > 0 ||
           __atomic_load_n(&bm_pml_g.inflight_direct, __ATOMIC_RELAXED) > 0 ||
           __atomic_load_n(&bm_pml_g.tx_kicks, __ATOMIC_RELAXED) > 0;
}

/* After the PML owes nothing, the transports may still owe acknowledgements
 * of what arrived last (dgram sends a standalone ACK after
 * BM_BTL_DGRAM_ACK_DELAY_US, 50 us by default): progress this long more. */
#define PML_EXIT_LINGER_NS 2000000ull

/* MPI_Finalize's quiesce (bm_pml_quiesce). The drain gives up after this
 * long (a peer that stopped without failing its paths); the transports'
 * failure rules end it much sooner when a peer is really gone. */
#define PML_QUIESCE_DRAIN_MAX_NS (60ull * 1000000000ull)

/* The longest sleep of an idle pass in the fence: what a peer's resend
 * waits for an answer at most when this process's transports cannot wake
 * it (sm without doorbells), and how late the fence's end is seen when its
 * wake-up comes just before the sleep. */
#define PML_FENCE_NAP_NS 1000000LL

static struct bm_pml_quiesce_stats pml_quiesce_last;
static bool pml_fence_sleeps;

static void pml_quiesce_progress(void *arg)
{
    struct bm_pml_quiesce_stats *q = arg;
    int n = bm_pml_progress_nowait();
    q->fence_passes++;
    q->fence_work += (uint64_t)n;
    if (n > 0)
        return;
    if (pml_fence_sleeps) {
        /* The ranks still draining may need this core: sleep until a
         * transport has work, the fence ends (pml_quiesce_wake) or 1 ms. */
        bm_pml_sleep(PML_FENCE_NAP_NS);
        q->fence_sleeps++;
    } else {
        sched_yield();
    }
}

/* The fence's helper thread, when every rank has entered it. */
static void pml_quiesce_wake(void *arg)
{
    (void)arg;
    bm_pml_wait_kick();
}

void bm_pml_quiesce(void)
{
    if (!bm_pml_g.initialized)
        return;
    struct bm_pml_quiesce_stats *q = &pml_quiesce_last;
    memset(q, 0, sizeof(*q));
    bm_pml_wait_stop();
    uint64_t t0 = bm_util_clock_now_ns(), now = t0;
    q->owed_start = bm_pml_g.inflight;
    /* Waits like MPI_Wait (the wait mode's yields or sleeps after idle
     * polls): what is owed needs the peers, which may share this core. */
    while (pml_owes_peers())
        bm_pml_progress_wait();
    int n = bm_btl_base_unacked();
    q->unacked_start = n;
    while (n > 0 && now - t0 < PML_QUIESCE_DRAIN_MAX_NS) {
        bm_pml_progress_wait();
        n = bm_btl_base_unacked();
        now = bm_util_clock_now_ns();
    }
    q->unacked_end = n;
    now = bm_util_clock_now_ns();
    q->drain_ns = now - t0;
    if (n > 0)
        bm_log_warn("rank %d (host %s): %d sends still unacknowledged by their peers after %llu s "
                    "in MPI_Finalize; closing anyway (those peers may report a failed path)",
                    bm_rte_self()->rank, bm_rte_self()->hostname, n,
                    (unsigned long long)(PML_QUIESCE_DRAIN_MAX_NS / 1000000000ull));
    /* Ranks that share cores sleep in the fence, as their waits do; the
     * others spin on as their waits do (the fence's end is seen at once). */
    pml_fence_sleeps = (bm_pml_idle_yields() || bm_pml_wait_blocks()) && bm_pml_wait_sleep_setup();
    bm_status_t rc = bm_rte_barrier_progress(pml_quiesce_progress, pml_quiesce_wake, q);
    q->fenced = rc == BM_OK;
    q->fence_ns = bm_util_clock_now_ns() - now;
    if (rc != BM_OK)
        bm_log_warn("rank %d (host %s): the job-wide fence of MPI_Finalize failed (%s); closing "
                    "the transports without it",
                    bm_rte_self()->rank, bm_rte_self()->hostname, bm_status_str(rc));
}

void bm_pml_quiesce_stats(struct bm_pml_quiesce_stats *out)
{
    *out = pml_quiesce_last;
}

bool bm_pml_exit_drain(void)
{
    if (!bm_pml_g.initialized)
        return true;
    if (bm_pml_g.cfg.exit_drain_ms == 0)
        return false;
    bm_pml_wait_stop();
    uint64_t now = bm_util_clock_now_ns();
    uint64_t end = now + (uint64_t)bm_pml_g.cfg.exit_drain_ms * 1000000ull;
    while ((pml_owes_peers() || bm_btl_base_unacked() > 0) && now < end) {
        bm_pml_progress();
        now = bm_util_clock_now_ns();
    }
    bool drained = !pml_owes_peers() && bm_btl_base_unacked() == 0;
    for (uint64_t linger = now + PML_EXIT_LINGER_NS; now < linger; now = bm_util_clock_now_ns())
        bm_pml_progress();
    return drained;
}

void bm_pml_finalize(void)
{
    if (!bm_pml_g.initialized)
        return;
    bm_pml_wait_stop();
    while (pml_owes_peers())
        bm_pml_progress();
    if (bm_pml_g.cfg.stats)
        pml_stats_print();
    bm_pml_progress_st_set(false);
    bm_pml_g.initialized = false;
    bm_btl_base_close();
    bm_pml_match_fini();
    bm_pml_am_fini();
    bm_pml_request_table_fini();
    bm_pml_wait_fini();
    pml_locks_fini();
    for (int r = 0; r < bm_pml_g.world_size; r++)
        free(bm_pml_g.path_bytes[r]);
    free(bm_pml_g.path_bytes);
    bm_pml_g.path_bytes = NULL;
    free(bm_pml_g.retry_blocked);
    bm_pml_g.retry_blocked = NULL;
    free(bm_pml_g.ctl_pending);
    bm_pml_g.ctl_pending = NULL;
    bm_pml_failover_fini();
    bm_pml_stripe_fini();
    bm_pml_restart_fini();
}

/* ---- probes ------------------------------------------------------------------- */

struct bm_pml_message {
    struct bm_pml_uframe *uf;
};

static void probe_status(const struct bm_pml_uframe *uf, struct bm_pml_status *status_out)
{
    if (!status_out)
        return;
    memset(status_out, 0, sizeof(*status_out));
    status_out->source = uf->src;
    status_out->tag = uf->tag;
    status_out->count = uf->msg_len;
    status_out->error = BM_OK;
}

static bool probe_args_ok(int src, int tag)
{
    return (src >= 0 || src == BM_PML_ANY_SOURCE) && (tag >= 0 || tag == BM_PML_ANY_TAG);
}

/* Is a message matching (cid, src, tag) waiting? Describes it in
 * status_out (when not NULL) and, when take_out is not NULL, takes it off
 * the queues into *take_out. */
static bool probe_once(uint32_t cid, int src, int tag, struct bm_pml_status *status_out,
                       struct bm_pml_uframe **take_out)
{
    struct bm_pml_ctx *ctx = bm_pml_ctx_lock(cid);
    struct bm_pml_uframe *uf = bm_pml_match_find_unexpected(cid, src, tag);
    if (uf) {
        probe_status(uf, status_out);
        if (take_out) {
            bm_pml_match_remove_unexpected(uf);
            *take_out = uf;
        }
    }
    bm_pml_ctx_unlock(ctx);
    return uf != NULL;
}

bm_status_t bm_pml_iprobe(uint32_t cid, int src, int tag, bool *flag_out,
                          struct bm_pml_status *status_out)
{
    if (!probe_args_ok(src, tag))
        return BM_ERR_BAD_PARAM;
    bool found = probe_once(cid, src, tag, status_out, NULL);
    if (!found) {
        bm_pml_progress_test();
        found = probe_once(cid, src, tag, status_out, NULL);
    }
    *flag_out = found;
    return BM_OK;
}

bm_status_t bm_pml_probe(uint32_t cid, int src, int tag, struct bm_pml_status *status_out)
{
    if (!probe_args_ok(src, tag))
        return BM_ERR_BAD_PARAM;
    while (!probe_once(cid, src, tag, status_out, NULL))
        bm_pml_progress_wait();
    return BM_OK;
}

bm_status_t bm_pml_improbe(uint32_t cid, int src, int tag, bool *flag_out,
                           struct bm_pml_message **msg_out, struct bm_pml_status *status_out)
{
    if (!probe_args_ok(src, tag))
        return BM_ERR_BAD_PARAM;
    /* Allocated first: once taken off the queues, the message must not be lost. */
    struct bm_pml_message *msg = malloc(sizeof(*msg));
    if (!msg)
        return BM_ERR_NO_MEMORY;
    bool found = probe_once(cid, src, tag, status_out, &msg->uf);
    if (!found) {
        bm_pml_progress_test();
        found = probe_once(cid, src, tag, status_out, &msg->uf);
    }
    *flag_out = found;
    if (!found) {
        free(msg);
        return BM_OK;
    }
    *msg_out = msg;
    return BM_OK;
}

/* Receive msg into buf (capacity bytes), or into (count, type) when type is
 * not NULL. */
static bm_status_t imrecv(void *buf, size_t capacity, size_t count, struct bm_util_dtype *type,
                          struct bm_pml_message *msg, struct bm_pml_request **req_out)
{
    if (!buf && capacity > 0 && !type)
        return BM_ERR_BAD_PARAM;
    struct bm_pml_uframe *uf = msg->uf;
    struct bm_pml_request *req = bm_pml_request_alloc(BM_PML_REQ_RECV);
    if (!req)
        return BM_ERR_NO_MEMORY;
    if (type) {
        bm_util_dtype_conv_init(&req->conv, type, buf, count);
        capacity = req->conv.total;
        if (req->conv.contig) { /* one run: received as bytes */
            buf = req->conv.base + type->pdisp;
            req->conv.type = NULL;
        } else {
            bm_util_dtype_retain(type);
        }
    }
    req->rbuf = buf;
    req->capacity = capacity;
    req->cid = uf->ctx->cid;
    req->peer = uf->src;
    req->tag = uf->tag;
    *req_out = req;
    free(msg);
    bm_pml_recv_matched_uframe(req, uf);
    return BM_OK;
}

bm_status_t bm_pml_imrecv(void *buf, size_t capacity, struct bm_pml_message *msg,
                          struct bm_pml_request **req_out)
{
    return imrecv(buf, capacity, 0, NULL, msg, req_out);
}

bm_status_t bm_pml_imrecv_dt(void *buf, size_t count, struct bm_util_dtype *type,
                             struct bm_pml_message *msg, struct bm_pml_request **req_out)
{
    return imrecv(buf, 0, count, type, msg, req_out);
}
