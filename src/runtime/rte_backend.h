/* Internal to the runtime: the backend operation tables that rte.c selects
 * from, and the helpers backends share. A new backend (PMIx, PMI-1) adds one
 * file defining its ops table, one extern line here, and one entry in rte.c's
 * list. Callers outside src/runtime never include this header. */
#ifndef BM_RUNTIME_RTE_BACKEND_H
#define BM_RUNTIME_RTE_BACKEND_H

#include "runtime/rte.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

extern const struct bm_rte_backend_ops bm_rte_bmrun_ops;
extern const struct bm_rte_backend_ops bm_rte_pmix_ops; /* only when built with PMIx */
extern const struct bm_rte_backend_ops bm_rte_pmi_ops;
extern const struct bm_rte_backend_ops bm_rte_singleton_ops;

/* Runtime tunables (BM_RTE_*), loaded once by bm_rte_init. */
struct bm_rte_config {
    int backend;            /* index into "auto|bmrun|pmix|pmi|singleton" */
    int connect_timeout_ms; /* per address, when a rank connects to the bmrun service */
    int pmix_modex;         /* 0 collect, 1 direct (rte_pmix.c) */
    int pmi_version;        /* 0 auto, 1, 2 (rte_pmi.c) */
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
/* bm_rte_store_get with *lock held (a backend's store lock, apart from the
 * lock its fence holds); BM_ERR_NOT_AVAILABLE once *st is NULL (finalized). */
bm_status_t bm_rte_store_get_locked(pthread_mutex_t *lock, struct bm_rte_store *const *st, int rank,
                                    const char *key, const void **val_out, size_t *len_out);

/* Before telling a foreign launcher to abort: flush stdio and wait, at most
 * max_ms, until whoever reads this process's stdout and stderr pipes has
 * taken what is in them. mpiexec.hydra kills the job as soon as it hears of
 * the abort, and the last lines (the abort message itself) were measured
 * lost in 3 of 8 runs otherwise. Returns at once for terminals and files. */
void bm_rte_drain_output(int max_ms);

/* Run the at-exit handlers (reverse order, each once). Used by abort paths. */
void bm_rte_run_at_exit(void);

/* Fill proc's node, num_nodes, local_rank and local_size from every rank's
 * node label (node_of[proc->size], any non-negative values: equal label,
 * same node). Labels are renumbered 0.. in order of first appearance and
 * node_of is rewritten with the new numbers. proc->rank and size must be set. */
void bm_rte_proc_set_nodes(struct bm_rte_proc *proc, int *node_of);
/* A job id for shared-memory names from a launcher's job name (a PMIx
 * namespace, a PMI kvs name): prefix, up to 12 of its [0-9a-z] characters,
 * 'x' and a 32-bit hash of the whole name, so distinct names stay distinct
 * and the result holds only [0-9a-z]. */
void bm_rte_jobid_from(const char *prefix, const char *name, char *out, size_t len);

/* When no launcher backend detected itself: a launcher whose variables
 * this process sees but cannot use (PMIx variables in a build without
 * PMIx, srun without a PMI plugin, ...). Returns 1 and describes it: the
 * launcher, the evidence, what is missing, what to do; 0 when the process
 * really runs alone. */
struct bm_rte_foreign {
    char launcher[128];
    char evidence[256];
    char missing[256];
    char todo[512];
};
int bm_rte_foreign_launcher(struct bm_rte_foreign *out);
/* The same, as a build with (have_pmix 1) or without PMIx would judge it:
 * lets the tests of a PMIx build check the message a build without gives. */
int bm_rte_foreign_launcher_as(struct bm_rte_foreign *out, int have_pmix);

#endif
