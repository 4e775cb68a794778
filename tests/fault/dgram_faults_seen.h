/* One check for every test that runs dgram with injected faults
 * (BM_BTL_DGRAM_DROP/DUP/REORDER/CORRUPT): an intact stream proves the
 * recovery only if the faults happened and were dealt with, as counted by
 * this rank's dgram modules (every rank injects and every rank receives).
 * Used by dgram_fault and by the conformance suite. */
#ifndef BM_TEST_DGRAM_FAULTS_SEEN_H
#define BM_TEST_DGRAM_FAULTS_SEEN_H

#include "bm_test.h"
#include "btl/dgram/dgram.h"

#include <stdbool.h>
#include <stdlib.h>

static inline bool bm_test_fault_param_set(const char *name)
{
    const char *v = getenv(name);
    return v && strtod(v, NULL) > 0;
}

/* mods: the dgram modules this rank used (each once). */
static inline void bm_test_dgram_faults_seen(struct bm_btl_module *const *mods, int n, int me)
{
    struct bm_btl_dgram_stats sum = {0};
    for (int r = 0; r < n; r++) {
        struct bm_btl_dgram_stats s;
        bm_btl_dgram_stats_get((struct bm_btl_dgram_module *)mods[r], &s);
        sum.injected_drop += s.injected_drop;
        sum.injected_dup += s.injected_dup;
        sum.injected_reorder += s.injected_reorder;
        sum.injected_corrupt += s.injected_corrupt;
        sum.resends_timeout += s.resends_timeout;
        sum.resends_fast += s.resends_fast;
        sum.recv_dup += s.recv_dup + s.recv_old;
        /* with BM_BTL_DGRAM_AUTH on, the MAC is what catches corruption */
        sum.bad_checksum += s.bad_checksum + s.bad_mac;
    }
    if (bm_test_fault_param_set("BM_BTL_DGRAM_DROP")) {
        BM_CHECK_MSG(sum.injected_drop > 0, "rank %d: no datagram dropped", me);
        BM_CHECK_MSG(sum.resends_timeout + sum.resends_fast > 0,
                     "rank %d: datagrams dropped but nothing resent", me);
    }
    if (bm_test_fault_param_set("BM_BTL_DGRAM_DUP")) {
        BM_CHECK_MSG(sum.injected_dup > 0, "rank %d: no datagram duplicated", me);
        BM_CHECK_MSG(sum.recv_dup > 0, "rank %d: no duplicate received and dropped", me);
    }
    if (bm_test_fault_param_set("BM_BTL_DGRAM_REORDER"))
        BM_CHECK_MSG(sum.injected_reorder > 0, "rank %d: no datagram delayed", me);
    if (bm_test_fault_param_set("BM_BTL_DGRAM_CORRUPT")) {
        BM_CHECK_MSG(sum.injected_corrupt > 0, "rank %d: no datagram corrupted", me);
        BM_CHECK_MSG(sum.bad_checksum > 0, "rank %d: no corrupted datagram caught", me);
    }
}

#endif
