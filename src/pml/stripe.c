/* Adaptive striping: the share of a peer's FRAG traffic each path of its
 * best class gets follows what the path delivers. send.c picks, for every
 * FRAG, the path with the least bytes relative to its weight
 * (struct bm_btl_path.weight); here the weights are recomputed every
 * BM_PML_STRIPE_MS from two measurements of the last period:
 *   - the delivery rate: FRAG bytes whose descriptors completed, divided by
 *     the time the path had FRAGs outstanding (its busy time, not the
 *     wall time: a path given little traffic is not thereby slow);
 *   - the loss: the transport's resent units over its units sent, from its
 *     stats operation (BM_BTL_CAP_STATS: tcp's TCP_INFO counters).
 * A path's score is its rate times max(0.05, 1 - 20 x loss): 1% loss costs
 * a fifth, 2.5% half, 5% or more leaves the path the floor below. The rate
 * alone is measured between the stalls that retransmission timeouts cause,
 * and across a network (unlike on a veth, whose round trip is microseconds)
 * a TCP or dgram flow losing 5% runs at a fraction of its clean rate; a
 * fabric that loses that much is broken. The paths that carried traffic share
 * the weight they had together in proportion to their scores, 30% of the
 * step at a time (the measurements are noisy), and none falls below 2% of
 * the class, so that a path that got better is seen again. Then the byte
 * counts start again from zero, so that the new weights apply from now on.
 * Costs nothing for peers with a single path in their best class; for the
 * others two clock reads per stretch of a path's busy time and one pass
 * over their paths per period. */
#define BM_LOG_SUBSYS "pml"
#include "util/log.h"

#include "pml/pml_internal.h"
#include "util/clock.h"
#include "util/params.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct stripe_params {
    bool adapt;
    int period_ms;
};

static const struct bm_param stripe_param_list[] = {
    {"BM_PML_STRIPE_ADAPT", BM_PARAM_BOOL, "1", 0, 0, NULL,
     "Adapt the share of large-message traffic each path (rail) to a peer carries to its "
     "measured delivery rate and loss, so that a slow or lossy rail carries less. 0 keeps the "
     "shares the transports' declared bandwidths give.",
     offsetof(struct stripe_params, adapt), 0},
    {"BM_PML_STRIPE_MS", BM_PARAM_INT, "300", 10, 60000, NULL,
     "Milliseconds between two recomputations of the striping shares (BM_PML_STRIPE_ADAPT).",
     offsetof(struct stripe_params, period_ms), 0},
};
static const struct bm_param_table stripe_table = {"pml", stripe_param_list,
                                                   BM_PARAM_COUNT(stripe_param_list)};
BM_PARAM_TABLE_REGISTER(stripe_table);

/* How far a recomputation moves a weight towards what the period measured:
 * on a loaded host a rail can deliver nothing for a period (its process
 * was not scheduled), and one such period must not undo the others. */
#define STRIPE_STEP 0.3
/* No path's share falls below this (of its class). */
#define STRIPE_FLOOR 0.02
/* A path busy for less than this in a period is not measured. */
#define STRIPE_MIN_BUSY_NS 2000000ull
/* Progress passes between two looks at the clock. */
#define STRIPE_TICK_MASK 15u

struct stripe_path {
    uint64_t acked;                 /* FRAG bytes completed this period */
    uint64_t busy_ns;               /* time with FRAGs outstanding this period */
    uint64_t busy_since;            /* when outstanding last became positive */
    int outstanding;                /* FRAG descriptors in flight */
    uint64_t snap_acked, snap_busy; /* the period's, taken under the peer's lock */
    bool have_stats;                /* last holds a reading */
    struct bm_btl_path_stats last;
    double score; /* this period's: rate x loss factor, -1 when not measured */
    double loss;  /* smoothed loss (resent / sent units) */
};

struct stripe_peer {
    struct stripe_path *p; /* [n], by send-list index */
    int n;                 /* 0: not striped (fewer than 2 paths in its best class) */
};

static struct {
    struct stripe_params cfg;
    uint64_t period_ns, next;
    unsigned tick;
    struct stripe_peer *peers;
    int npeers;
} sp;

bm_status_t bm_pml_stripe_init(void)
{
    bm_pml_g.stripe_on = false;
    bm_status_t rc = bm_util_params_load(&stripe_table, &sp.cfg);
    if (rc != BM_OK || !sp.cfg.adapt)
        return rc;
    sp.period_ns = (uint64_t)sp.cfg.period_ms * 1000000ull;
    sp.npeers = bm_pml_g.world_size;
    sp.peers = calloc((size_t)sp.npeers, sizeof(*sp.peers));
    if (!sp.peers)
        return BM_ERR_NO_MEMORY;
    for (int r = 0; r < sp.npeers; r++) {
        const struct bm_btl_path_list *l = &bm_btl_base_peer(r)->send;
        if (l->count < 2 || l->paths[1].cls != l->paths[0].cls)
            continue;
        sp.peers[r].p = calloc((size_t)l->count, sizeof(*sp.peers[r].p));
        if (!sp.peers[r].p)
            return BM_ERR_NO_MEMORY;
        sp.peers[r].n = l->count;
        bm_pml_g.stripe_on = true;
    }
    return BM_OK;
}

void bm_pml_stripe_fini(void)
{
    for (int r = 0; r < sp.npeers && sp.peers; r++)
        free(sp.peers[r].p);
    free(sp.peers);
    sp.peers = NULL;
    sp.npeers = 0;
    bm_pml_g.stripe_on = false;
}

int bm_pml_stripe_index(int dst, const struct bm_btl_path *path)
{
    if (dst < 0 || dst >= sp.npeers || sp.peers[dst].n == 0)
        return -1;
    int i = (int)(path - bm_btl_base_peer(dst)->send.paths);
    return i >= 0 && i < sp.peers[dst].n ? i : -1;
}

void bm_pml_stripe_sent(int dst, int idx)
{
    struct stripe_path *p = &sp.peers[dst].p[idx];
    if (p->outstanding++ == 0)
        p->busy_since = bm_util_clock_now_ns();
}

void bm_pml_stripe_done(int dst, int idx, size_t bytes)
{
    if (dst >= sp.npeers || idx >= sp.peers[dst].n)
        return;
    struct stripe_path *p = &sp.peers[dst].p[idx];
    p->acked += bytes;
    if (--p->outstanding == 0)
        p->busy_ns += bm_util_clock_now_ns() - p->busy_since;
}

/* A loss rate needs this many units sent since the last one counted: a
 * path given the floor's share sends few, and 0 resent of 10 says little. */
#define STRIPE_LOSS_UNITS 200

/* The path's loss, smoothed: updated from the transport's counters once
 * enough units went out since the last update (0 without the stats op). */
static double stripe_loss(struct stripe_path *p, const struct bm_btl_path *path)
{
    if (!(path->module->caps & BM_BTL_CAP_STATS))
        return 0;
    struct bm_btl_path_stats s;
    if (bm_btl_stats(path->module, path->endpoint, &s) != BM_OK)
        return p->loss;
    if (!p->have_stats || s.units_sent < p->last.units_sent ||
        s.units_resent < p->last.units_resent) {
        p->last = s; /* first reading, or the counters restarted */
        p->have_stats = true;
        return p->loss;
    }
    uint64_t sent = s.units_sent - p->last.units_sent;
    if (sent < STRIPE_LOSS_UNITS)
        return p->loss;
    double loss = (double)(s.units_resent - p->last.units_resent) / (double)sent;
    p->loss = 0.5 * p->loss + 0.5 * (loss < 1 ? loss : 1);
    p->last = s;
    return p->loss;
}

/* Under MPI_THREAD_MULTIPLE the counters and weights of peer r are its
 * per-peer senders' too (send.c): changed under the peer's lock, which is
 * a leaf (the transports' statistics are read after it is given back). */
static void stripe_peer_lock(int r)
{
    if (bm_pml_g.peer_tx)
        bm_util_lock_take(&bm_pml_g.peer_tx[r].lock);
}

static void stripe_peer_unlock(int r)
{
    if (bm_pml_g.peer_tx)
        bm_util_lock_give(&bm_pml_g.peer_tx[r].lock);
}

/* Recompute the weights of peer r's best working class. */
static void stripe_peer(int r, uint64_t now)
{
    struct stripe_peer *pe = &sp.peers[r];
    struct bm_btl_path_list *l = &bm_btl_base_peer(r)->send;
    int n = pe->n < l->count ? pe->n : l->count;
    bool active = false;
    stripe_peer_lock(r);
    for (int i = 0; i < n; i++)
        active |= pe->p[i].acked > 0 || pe->p[i].outstanding > 0;
    for (int i = 0; active && i < n; i++) {
        struct stripe_path *p = &pe->p[i];
        p->snap_busy = p->busy_ns;
        if (p->outstanding > 0) {
            p->snap_busy += now - p->busy_since;
            p->busy_since = now;
        }
        p->snap_acked = p->acked;
        p->busy_ns = p->acked = 0;
    }
    stripe_peer_unlock(r);
    if (!active)
        return; /* no FRAG this period: nothing measured, nothing asked of the transports */
    int cls = -1, measured = 0;
    double had = 0, total = 0, sum = 0;
    char line[512];
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        struct stripe_path *p = &pe->p[i];
        struct bm_btl_path *path = &l->paths[i];
        uint64_t busy = p->snap_busy;
        uint64_t acked = p->snap_acked;
        p->score = -1;
        if (bm_pml_path_is_failed(path) || (cls >= 0 && path->cls != cls))
            continue;
        cls = path->cls;
        total += path->weight;
        double loss = stripe_loss(p, path);
        if (busy < STRIPE_MIN_BUSY_NS)
            continue; /* busy and nothing delivered counts: rate 0 */
        double rate = (double)acked * 1e9 / (double)busy;
        double keep = 1 - 20 * loss;
        p->score = rate * (keep > 0.05 ? keep : 0.05);
        had += path->weight;
        sum += p->score;
        measured++;
        if (off < sizeof(line))
            off += (size_t)snprintf(line + off, sizeof(line) - off, " %s %.0f MB/s loss %.1f%%;",
                                    path->module->name, rate / 1e6, 100 * loss);
    }
    if (measured < 2 || sum <= 0 || total <= 0)
        return; /* nothing to compare: the weights stay */
    stripe_peer_lock(r);
    for (int i = 0; i < n; i++) {
        const struct stripe_path *p = &pe->p[i];
        struct bm_btl_path *path = &l->paths[i];
        if (p->score >= 0) {
            double want = had * p->score / sum;
            double w = (1 - STRIPE_STEP) * path->weight + STRIPE_STEP * want;
            path->weight = w > STRIPE_FLOOR * total ? w : STRIPE_FLOOR * total;
        }
        if (p->score >= 0 || (!bm_pml_path_is_failed(path) && path->cls == cls))
            __atomic_store_n(&bm_pml_g.path_bytes[r][i], 0, __ATOMIC_RELAXED);
    }
    stripe_peer_unlock(r);
    bm_log_debug("striping to rank %d:%s weights now %.2f/%.2f (first two)", r, line,
                 l->paths[0].weight, l->paths[1].weight);
}

int bm_pml_stripe_progress(void)
{
    if ((++sp.tick & STRIPE_TICK_MASK) != 0)
        return 0;
    uint64_t now = bm_util_clock_now_ns();
    if (now < sp.next)
        return 0;
    sp.next = now + sp.period_ns;
    for (int r = 0; r < sp.npeers; r++)
        if (sp.peers[r].n > 0)
            stripe_peer(r, now);
    return 0;
}
