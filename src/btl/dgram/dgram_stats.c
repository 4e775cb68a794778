/* Statistics of the dgram transport, per module, as the usnic stats had
 * them: sends per channel, fragments and chunks, resends split into timeout
 * and fast, ACKs sent and received, duplicate and old ACKs, out-of-window
 * and duplicate receives, bad datagrams by reason, window occupancy and path
 * failures. Printed every BM_BTL_DGRAM_STATS seconds and at finalize, and
 * readable by tests through bm_btl_dgram_stats_get. Also the transport's
 * stats operation (btl.h, BM_BTL_CAP_STATS): per-endpoint counters of
 * segments sent and resent and payload bytes acknowledged. units_resent
 * counts the segments taken for lost one by one (their own timer expired,
 * or SACK/RACK found them missing), not the sweep that follows a
 * retransmit timeout: it resends every segment outstanding at the timeout,
 * lost or not, and on a path with a deep queue (a 100 Mbit/s shaper holding
 * 90 ms of a full window) the timeout is spurious and nearly all of the
 * sweep arrives twice (pml_netns_stripe: 4045 swept, 3979 received as old
 * duplicates, on the clean rail). Counted, the sweep made a clean rail
 * report 6-11% loss, more than the rail losing 5% (whose smaller window
 * queues less), and adaptive striping moved traffic onto the lossy rail. */
#define BM_LOG_SUBSYS "btl/dgram"
#include "btl/dgram/dgram.h"
#include "util/log.h"

#include <stdio.h>
#include <string.h>

void bm_btl_dgram_stats_get(const struct bm_btl_dgram_module *m,
                            struct bm_btl_dgram_stats *stats_out)
{
    *stats_out = m->stats;
    stats_out->live_answered = bm_btl_dgram_live_answered(m);
}

void bm_btl_dgram_stats_print(const struct bm_btl_dgram_module *m)
{
    char line[2048];
    size_t off = 0;
    struct bm_btl_dgram_stats st;
    bm_btl_dgram_stats_get(m, &st);
    const struct bm_btl_dgram_stats *s = &st;
    off += (size_t)snprintf(line + off, sizeof(line) - off, "[dgram stats] rank %d %s:", m->rank,
                            m->super.name);
#define BM_BTL_DGRAM_STATS_PRINT(name, help)                                                       \
    if (s->name && off < sizeof(line))                                                             \
        off += (size_t)snprintf(line + off, sizeof(line) - off, " %s=%llu", #name,                 \
                                (unsigned long long)s->name);
    BM_BTL_DGRAM_STATS_MAP(BM_BTL_DGRAM_STATS_PRINT)
#undef BM_BTL_DGRAM_STATS_PRINT
    fprintf(stderr, "%s\n", line);
}

void bm_btl_dgram_stats_maybe_print(struct bm_btl_dgram_module *m)
{
    bm_btl_dgram_stats_print(m);
    m->stats_next_ns = m->now_ns + (uint64_t)m->cfg.stats * 1000000000ull;
}

bm_status_t bm_btl_dgram_path_stats(struct bm_btl_module *bm, struct bm_btl_endpoint *bep,
                                    struct bm_btl_path_stats *out)
{
    struct bm_btl_dgram_module *m = (struct bm_btl_dgram_module *)bm;
    const struct bm_btl_dgram_endpoint *ep = (const struct bm_btl_dgram_endpoint *)bep;
    bm_btl_dgram_lock(m);
    struct bm_btl_path_stats s = ep->pstats;
    uint64_t swept = ep->units_swept;
    bm_btl_dgram_unlock(m);
    s.units_sent += s.units_resent + swept; /* counted at first send only */
    *out = s;
    return BM_OK;
}
