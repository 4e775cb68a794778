/* Maximum-weight bipartite matching, for pairing interfaces: the tcp and
 * dgram transports pair each local interface with at most one remote
 * interface so that the pairs carry the most total bandwidth (weights
 * express bandwidth, same-subnet bonuses and so on; a missing edge means
 * "cannot reach"). Both processes of a pair run the solver on the same
 * matrix (by convention the lower rank's interfaces are the rows) and get
 * the same answer: the computation is exact integer arithmetic with a fixed
 * scan order, so it is deterministic across processes and machines.
 *
 * Among matchings of maximum total weight the solver returns one with the
 * most edges (a zero-weight edge still beats leaving both ends unpaired),
 * and among those the one that the Hungarian method's index order finds
 * first: rows are added in increasing index and each looks at columns in
 * increasing index, the first of equal candidates winning. */
#ifndef BM_UTIL_GRAPH_H
#define BM_UTIL_GRAPH_H

#include "bm_status.h"

#include <stddef.h>
#include <stdint.h>

#define BM_UTIL_GRAPH_NO_EDGE    INT64_MIN /* no edge between this row and column */
#define BM_UTIL_GRAPH_MAX_WEIGHT INT32_MAX
#define BM_UTIL_GRAPH_MAX_DIM    4096

/* weights: nrows x ncols, row-major; each entry in [0, BM_UTIL_GRAPH_MAX_WEIGHT]
 * or BM_UTIL_GRAPH_NO_EDGE. On success match_out[i] is the column paired with
 * row i, or -1, and *total_out (when not NULL) the total weight. O(n^2 m)
 * time with n = min(nrows, ncols), O(n + m) memory. BM_ERR_BAD_PARAM for a
 * weight out of range or a dimension above BM_UTIL_GRAPH_MAX_DIM,
 * BM_ERR_NO_MEMORY when allocation fails; match_out is untouched then. */
bm_status_t bm_util_graph_match(size_t nrows, size_t ncols, const int64_t *weights, int *match_out,
                                int64_t *total_out);

#endif
