/* Failover of the point-to-point layer: what happens when a transport
 * reports that a path to a peer failed or works again. Paths are marked
 * failed or working in the peer's lists (btl.h, struct bm_btl_peer); the
 * send side always takes the best exclusivity class that still has a
 * working path, so when the last path of a class fails the next class (a
 * standby transport of another kind: dgram behind tcp, tcp behind ofi)
 * carries the peer's traffic, and when the failed class is reported
 * recovered (the transports probe their failed paths) traffic moves back.
 * When no class has a working path, the peer is in an outage: its traffic
 * is held (sends and control messages wait on the retry queues) for up to
 * BM_PML_PATH_GRACE seconds, one line per minute says so, and the job is
 * aborted, naming both ranks, their hosts and the failed transports, only
 * when the grace runs out. Every protocol step is idempotent (README
 * "Resources and failures"), so a message caught in a failover arrives
 * once, whichever path carries it in the end. What the failed transport
 * was still receiving may be lost without the sender's transport knowing
 * (its side of the path may not have failed): each newly failed path
 * starts the end-to-end restart with that peer at once (restart.c). */
#define BM_LOG_SUBSYS "pml"
#include "util/log.h"

#include "pml/pml_internal.h"
#include "runtime/rte.h"
#include "util/clock.h"
#include "util/params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct failover_params {
    int grace_s;
};

/* The default grace: measured on the test bed (tests/fault/pml_outage.sh,
 * README "Outages"), a transport takes a path back 0.5-2.5 s after the
 * link returns (dgram probes every 500 ms, tcp reconnects every 2 s), so
 * the grace is the outage itself plus that. 60 s covers what a job meets in
 * practice without help: a cable or port reseated, a switch that reboots
 * or a spanning-tree reconvergence (30-50 s), a bonded link failing over;
 * longer outages are better answered by a restart from a checkpoint than
 * by ranks that hang for minutes. */
static const struct bm_param failover_param_list[] = {
    {"BM_PML_PATH_GRACE", BM_PARAM_INT, "60", 0, 86400, NULL,
     "Seconds the job waits, holding the traffic, when no transport can reach a peer any more "
     "(every path to it failed), for one of them to recover before it is aborted. The "
     "transports probe their failed paths meanwhile; one line per peer and per minute says "
     "how long it has been. 0 aborts at once.",
     offsetof(struct failover_params, grace_s), 0},
};
static const struct bm_param_table failover_table = {"pml", failover_param_list,
                                                     BM_PARAM_COUNT(failover_param_list)};
BM_PARAM_TABLE_REGISTER(failover_table);

/* A line about an outage at its start and then once a minute. */
#define FAILOVER_REPORT_NS (60ull * 1000000000ull)
/* Room for the last failure of each path, for the messages. */
#define FAILOVER_WHY_LEN 256

struct failover_peer {
    int8_t cls;   /* class the traffic uses, -1 while in an outage */
    bool outage;  /* no working path */
    bool started; /* cls is meaningful (first failure seen) */
    bool lost;    /* a path failed without the progress lock: restart.c not told yet */
    uint64_t outage_since, next_report;
    char (*why)[FAILOVER_WHY_LEN]; /* per eager path: its last failure */
};

static struct {
    struct failover_params p;
    struct failover_peer *peers; /* [world size] */
    int npeers;
} fo;

/* The peers bm_pml_peers_check looks at: those with a path whose
 * transport can look (btl.h check), made at the first look under the
 * progress lock (several threads may wait at once under
 * MPI_THREAD_MULTIPLE) and published by made. */
static struct {
    int *v, n;
    _Atomic bool made;
} looked;

bm_status_t bm_pml_failover_init(void)
{
    bm_status_t rc = bm_util_params_load(&failover_table, &fo.p);
    if (rc != BM_OK)
        return rc;
    fo.npeers = bm_pml_g.world_size;
    fo.peers = calloc((size_t)fo.npeers, sizeof(*fo.peers));
    if (!fo.peers)
        return BM_ERR_NO_MEMORY;
    return BM_OK;
}

void bm_pml_failover_fini(void)
{
    for (int r = 0; fo.peers && r < fo.npeers; r++)
        free(fo.peers[r].why);
    free(fo.peers);
    memset(&fo, 0, sizeof(fo));
    free(looked.v);
    memset(&looked, 0, sizeof(looked));
}

/* From the transports' table, not the modex: the failure reports run in
 * MPI_Finalize's fence too, where the runtime must not be asked (rte.h). */
static const char *peer_host(int rank)
{
    const char *h = bm_btl_base_peer_host(rank);
    return h ? h : "unknown host";
}

/* Mark every path of (m, ep) (all of m's paths to the peer when ep is NULL)
 * failed or working; returns how many changed. */
static int mark_paths(struct bm_btl_peer *peer, struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                      bool failed)
{
    struct bm_btl_path_list *lists[3] = {&peer->eager, &peer->send, &peer->rdma};
    int changed = 0;
    for (int l = 0; l < 3; l++)
        for (int i = 0; i < lists[l]->count; i++) {
            struct bm_btl_path *p = &lists[l]->paths[i];
            /* An exchange: two threads may learn of one failure at once. */
            if (p->module == m && (!ep || p->endpoint == ep) &&
                bm_pml_path_is_failed(p) != failed &&
                __atomic_exchange_n(&p->failed, failed, __ATOMIC_RELAXED) != failed)
                changed++;
        }
    return changed;
}

/* Remember why the paths of (m, ep) to the peer failed (for the messages). */
static void note_why(int peer_world, struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                     int status, const char *what)
{
    struct failover_peer *fp = &fo.peers[peer_world];
    struct bm_btl_path_list *l = &bm_btl_base_peer(peer_world)->eager;
    if (!fp->why) {
        fp->why = calloc((size_t)l->count, sizeof(*fp->why));
        if (!fp->why)
            return;
    }
    for (int i = 0; i < l->count; i++)
        if (l->paths[i].module == m && (!ep || l->paths[i].endpoint == ep))
            snprintf(fp->why[i], sizeof(fp->why[i]), "%s%s%s", bm_status_str(status),
                     what ? ": " : "", what ? what : "");
}

/* The failed paths to a peer, each with its last failure, for a message. */
static void describe_failed(int peer_world, char *buf, size_t len)
{
    struct failover_peer *fp = &fo.peers[peer_world];
    struct bm_btl_path_list *l = &bm_btl_base_peer(peer_world)->eager;
    size_t off = 0;
    buf[0] = '\0';
    for (int i = 0; i < l->count && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s (%s)", i ? "; " : "",
                                l->paths[i].module->name,
                                fp->why && fp->why[i][0] ? fp->why[i] : "failed");
}

/* The class of the best working path to the peer, -1 when none works. */
static int best_class(int peer_world)
{
    struct bm_btl_peer *peer = bm_btl_base_peer(peer_world);
    struct bm_btl_path *e = bm_pml_path_first(&peer->eager);
    struct bm_btl_path *s = bm_pml_path_first(&peer->send);
    if (!e || !s)
        return -1;
    return e->cls < s->cls ? e->cls : s->cls;
}

static const char *class_name(int peer_world, int cls)
{
    struct bm_btl_path_list *l = &bm_btl_base_peer(peer_world)->eager;
    for (int i = 0; i < l->count; i++)
        if (l->paths[i].cls == cls)
            return l->paths[i].module->ops->name;
    return "?";
}

/* status: the last failure (a peer error: the process is gone, and the
 * advice is about that process, not about links). */
static __attribute__((noreturn)) void abort_unreachable(int peer_world, const char *lead,
                                                        int status)
{
    char failed[3072], msg[4096];
    describe_failed(peer_world, failed, sizeof(failed));
    if (bm_status_is_peer(status))
        snprintf(msg, sizeof(msg),
                 "rank %d (%s) %s rank %d (%s): %s. The job cannot continue: rank %d ended "
                 "before MPI_Finalize (killed, crashed, or exited without it) while rank %d "
                 "depended on it; its own output, exit status or core file says why.",
                 bm_pml_g.my_rank, bm_rte_self()->hostname, lead, peer_world, peer_host(peer_world),
                 failed, peer_world, bm_pml_g.my_rank);
    else
        snprintf(msg, sizeof(msg),
                 "rank %d (%s) %s rank %d (%s): %s. The job cannot continue. Check the links or "
                 "devices named above%s.",
                 bm_pml_g.my_rank, bm_rte_self()->hostname, lead, peer_world, peer_host(peer_world),
                 failed,
                 fo.p.grace_s > 0 ? "; BM_PML_PATH_GRACE sets how long a job waits for a path "
                                    "to recover"
                                  : ", or allow more transports with BM_BTL");
    bm_log_error("%s", msg);
    bm_rte_abort(1, msg);
    abort(); /* not reached: bm_rte_abort does not return */
}

static void outage_report(int peer_world, uint64_t now)
{
    struct failover_peer *fp = &fo.peers[peer_world];
    char failed[3072];
    describe_failed(peer_world, failed, sizeof(failed));
    double secs = (double)(now - fp->outage_since) / 1e9;
    bm_log_warn("rank %d (%s): no working transport to rank %d (%s) for %.0f s: %s. Holding the "
                "traffic to it for up to BM_PML_PATH_GRACE=%d s while the transports probe "
                "their paths",
                bm_pml_g.my_rank, bm_rte_self()->hostname, peer_world, peer_host(peer_world), secs,
                failed, fo.p.grace_s);
    fp->next_report = now + FAILOVER_REPORT_NS;
}

/* After paths to a peer changed: which class carries its traffic now, is it
 * in an outage (hold, or abort), did it leave one. status: what the
 * failure was (a peer error, i.e. the process is gone, aborts at once). */
static void peer_update(int peer_world, int status)
{
    struct failover_peer *fp = &fo.peers[peer_world];
    int cls = best_class(peer_world);
    if (cls < 0) {
        if (fo.p.grace_s == 0 || bm_status_is_peer(status))
            abort_unreachable(peer_world, "lost its last transport to", status);
        if (!fp->outage) {
            uint64_t now = bm_util_clock_now_ns();
            fp->outage = true;
            fp->outage_since = now;
            bm_pml_g.noutage++;
            outage_report(peer_world, now);
        }
        fp->cls = -1;
        fp->started = true;
        return;
    }
    if (fp->outage) {
        double secs = (double)(bm_util_clock_now_ns() - fp->outage_since) / 1e9;
        fp->outage = false;
        bm_pml_g.noutage--;
        bm_log_warn("rank %d: %s reaches rank %d (%s) again after an outage of %.1f s; its "
                    "held traffic goes on",
                    bm_pml_g.my_rank, class_name(peer_world, cls), peer_world,
                    peer_host(peer_world), secs);
        /* Held sends and control messages are retried by the next pass. */
        if (bm_pml_g.mt)
            bm_pml_wait_kick();
    } else if (fp->started ? cls != fp->cls : cls != 0) {
        int from = fp->started ? fp->cls : 0;
        if (cls > from)
            bm_log_warn("rank %d: every %s path to rank %d (%s) failed; its traffic moves to the "
                        "standby transport %s",
                        bm_pml_g.my_rank, class_name(peer_world, from), peer_world,
                        peer_host(peer_world), class_name(peer_world, cls));
        else
            bm_log_warn("rank %d: %s reaches rank %d (%s) again; its traffic moves back from %s",
                        bm_pml_g.my_rank, class_name(peer_world, cls), peer_world,
                        peer_host(peer_world), class_name(peer_world, from));
    }
    fp->cls = (int8_t)cls;
    fp->started = true;
}

int bm_pml_peer_held(int peer_world)
{
    /* The paths may have been marked by a thread without the progress lock
     * (a sendi): make sure the outage is known. */
    if (bm_pml_in_drain() && !fo.peers[peer_world].outage)
        peer_update(peer_world, BM_ERR_UNREACHABLE);
    return BM_ERR_OUT_OF_RESOURCE;
}

bm_status_t bm_pml_peer_check(int peer_world)
{
    struct bm_btl_peer *peer;
    bm_status_t rc = BM_OK;

    if (peer_world < 0 || peer_world >= bm_pml_g.world_size ||
        !(peer = bm_btl_base_peer(peer_world)))
        return BM_OK;
    /* the transport's report runs the PML's error callback */
    bool taken = bm_pml_enter();
    for (int i = 0; i < peer->eager.count && rc == BM_OK; i++) {
        bm_status_t s = bm_btl_check(peer->eager.paths[i].module, peer->eager.paths[i].endpoint);
        if (bm_status_is_peer(s))
            rc = s;
    }
    bm_pml_leave(taken);
    return rc;
}

/* Under the progress lock: a second thread that waited for it finds the
 * list made and leaves it. */
static void looked_make(void)
{
    if (atomic_load_explicit(&looked.made, memory_order_relaxed))
        return;
    int *v = malloc((size_t)bm_pml_g.world_size * sizeof(*v)), n = 0;
    for (int r = 0; v && r < bm_pml_g.world_size; r++) {
        struct bm_btl_peer *peer = r == bm_pml_g.my_rank ? NULL : bm_btl_base_peer(r);
        for (int i = 0; peer && i < peer->eager.count; i++)
            if (peer->eager.paths[i].module->ops->check) {
                v[n++] = r;
                break;
            }
    }
    looked.v = v;
    looked.n = n;
    atomic_store_explicit(&looked.made, true, memory_order_release);
}

void bm_pml_peers_check(void)
{
    if (!bm_pml_g.initialized)
        return;
    if (!atomic_load_explicit(&looked.made, memory_order_acquire)) {
        bool taken = bm_pml_enter();
        looked_make();
        bm_pml_leave(taken);
    }
    for (int i = 0; i < looked.n; i++)
        bm_pml_peer_check(looked.v[i]);
}

bool bm_pml_peer_in_outage(int peer_world)
{
    return fo.peers && fo.peers[peer_world].outage;
}

int bm_pml_failover_progress(void)
{
    uint64_t now = bm_util_clock_now_ns();
    for (int r = 0; r < fo.npeers; r++) {
        struct failover_peer *fp = &fo.peers[r];
        if (!fp->outage)
            continue;
        if (now - fp->outage_since >= (uint64_t)fo.p.grace_s * 1000000000ull) {
            char lead[160];
            snprintf(lead, sizeof(lead),
                     "has had no working transport for %d s (BM_PML_PATH_GRACE) to", fo.p.grace_s);
            abort_unreachable(r, lead, BM_ERR_UNREACHABLE);
        }
        if (now >= fp->next_report)
            outage_report(r, now);
    }
    return 0;
}

/* After peer_update, with the progress lock: a path to the peer newly
 * failed (changed), or one did without the lock: restart what it may have
 * lost (restart.c). */
static void restart_lost(int peer_world, bool changed)
{
    if (!fo.peers)
        return;
    if (changed || __atomic_exchange_n(&fo.peers[peer_world].lost, false, __ATOMIC_RELAXED))
        bm_pml_restart_path_lost(peer_world);
}

void bm_pml_path_failed(int peer_world, struct bm_btl_path *path, int status, const char *what)
{
    if (!path)
        return;
    bool changed = mark_paths(bm_btl_base_peer(peer_world), path->module, path->endpoint, true);
    if (changed) {
        bm_log_warn("transport %s to rank %d failed (%s: %s)", path->module->name, peer_world, what,
                    bm_status_str(status));
        if (bm_pml_in_drain())
            note_why(peer_world, path->module, path->endpoint, status, what);
    }
    /* Without the progress lock (a sendi) only the mark: the thread that
     * next finds no path, or the next progress pass, does the rest (the
     * transport's own report of the failure starts the restart). */
    if (bm_pml_in_drain()) {
        peer_update(peer_world, status);
        restart_lost(peer_world, changed);
    } else if (changed) {
        __atomic_store_n(&fo.peers[peer_world].lost, true, __ATOMIC_RELAXED);
    }
}

void bm_pml_path_failed_ep(int peer_world, struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                           int status)
{
    bool changed = mark_paths(bm_btl_base_peer(peer_world), m, ep, true);
    if (changed) {
        bm_log_warn("transport %s to rank %d failed (%s)", m->name, peer_world,
                    bm_status_str(status));
        note_why(peer_world, m, ep, status, "a transfer completed with an error");
    }
    peer_update(peer_world, status);
    restart_lost(peer_world, changed);
}

void bm_pml_error_cb(struct bm_btl_module *m, const struct bm_btl_error *err, void *cbdata)
{
    (void)cbdata;
    const char *what = err->what ? err->what : "no details";
    switch (err->kind) {
    case BM_BTL_ERROR_PEER: {
        if (err->peer < 0 || err->peer >= bm_pml_g.world_size)
            break;
        bool changed = mark_paths(bm_btl_base_peer(err->peer), m, err->endpoint, true);
        if (changed)
            bm_log_warn("transport %s can no longer reach rank %d: %s", m->name, err->peer, what);
        note_why(err->peer, m, err->endpoint, err->status, what);
        peer_update(err->peer, err->status);
        restart_lost(err->peer, changed);
        break;
    }
    case BM_BTL_ERROR_MODULE: {
        bm_log_warn("transport %s failed as a whole: %s", m->name, what);
        for (int r = 0; r < bm_pml_g.world_size; r++)
            if (mark_paths(bm_btl_base_peer(r), m, NULL, true)) {
                note_why(r, m, NULL, err->status, what);
                fo.peers[r].lost = true; /* restart_lost below */
            }
        for (int r = 0; r < bm_pml_g.world_size; r++)
            peer_update(r, err->status);
        for (int r = 0; r < bm_pml_g.world_size; r++)
            restart_lost(r, false);
        break;
    }
    case BM_BTL_ERROR_RECOVERED:
        if (err->peer >= 0 && err->peer < bm_pml_g.world_size &&
            mark_paths(bm_btl_base_peer(err->peer), m, err->endpoint, false)) {
            bm_log_warn("transport %s reaches rank %d again (%s); traffic uses it again", m->name,
                        err->peer, what);
            peer_update(err->peer, BM_OK);
        }
        break;
    case BM_BTL_ERROR_FATAL: {
        char msg[1024];
        snprintf(msg, sizeof(msg), "rank %d (%s): transport %s hit a fatal error (%s): %s",
                 bm_pml_g.my_rank, bm_rte_self()->hostname, m->name, bm_status_str(err->status),
                 what);
        bm_log_error("%s", msg);
        bm_rte_abort(1, msg);
    }
    }
}
