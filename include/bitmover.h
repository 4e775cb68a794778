/* The public bm_ API of bitmover beyond MPI: version and status strings.
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

#ifdef __cplusplus
}
#endif
#endif
