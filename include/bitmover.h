/* The public bm_ API of bitmover beyond MPI: version and status strings,
 * collective algorithm statistics.
 * Programs normally use mpi.h; this header is for tools and for users who
 * want bitmover's own status codes. */
#ifndef BITMOVER_H
#define BITMOVER_H

#include "bm_status.h"

#if defined(BM_BUILDING_LIB)
#define BM_EXPORT __attribute__((visibility("default")))
#else
#define BM_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* "0.1.0" */
BM_EXPORT const char *bm_version(void);

/* How many collective operations this process has run with the algorithm
 * named ("allreduce.rabenseifner", "bcast.binomial", ...: the names of
 * src/mpi/README.md's algorithm table) since it started; 0 for an unknown
 * name. For tests and tuning: it shows which algorithm served a call. */
BM_EXPORT unsigned long bm_coll_alg_count(const char *name);

#ifdef __cplusplus
}
#endif
#endif
