/* Internal to the runtime: the backend operation tables that rte.c selects
 * from, and the helpers backends share. A new backend (PMIx, PMI-1) adds one
 * file defining its ops table, one extern line here, and one entry in rte.c's
 * list. Callers outside src/runtime never include this header. */
#ifndef BM_RUNTIME_RTE_BACKEND_H
#define BM_RUNTIME_RTE_BACKEND_H

#include "runtime/rte.h"

#include <stddef.h>
#include <stdint.h>

extern const struct bm_rte_backend_ops bm_rte_bmrun_ops;
extern const struct bm_rte_backend_ops bm_rte_singleton_ops;

/* Runtime tunables (BM_RTE_*), loaded once by bm_rte_init. */
struct bm_rte_config {
    int backend;            /* index into "auto|bmrun|singleton" */
    int connect_timeout_ms; /* per address, when a rank connects to the bmrun service */
};
const struct bm_rte_config *bm_rte_config_get(void);

/* A store of modex entries indexed by (rank, key), shared by backends that
 * receive every peer's entries (bmrun) or keep their own (singleton). Values
 * stay at a fixed address until the store is freed. */
struct bm_rte_store;
struct bm_rte_store *bm_rte_store_new(int size);
void bm_rte_store_free(struct bm_rte_store *st);
/* Copy the value in; replaces an earlier value of the same key. */
bm_status_t bm_rte_store_put(struct bm_rte_store *st, int rank, const char *key, size_t keylen,
                             const void *val, size_t vallen);
bm_status_t bm_rte_store_get(const struct bm_rte_store *st, int rank, const char *key,
                             const void **val_out, size_t *len_out);

/* Run the at-exit handlers (reverse order, each once). Used by abort paths. */
void bm_rte_run_at_exit(void);

#endif
