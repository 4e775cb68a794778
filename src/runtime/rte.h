/* The runtime: who this process is in the job, and the address exchange
 * ("modex") through which transports publish their addresses to peers.
 *
 * Contract for callers (btl, pml, mpi):
 *  - bm_rte_init() picks a backend from the environment, in this order: the
 *    bmrun key-value service (BMRUN_* variables set by bmrun), PMIx
 *    (PMIX_NAMESPACE: Open MPI's mpirun, prterun, srun --mpi=pmix), PMI
 *    (PMI_FD or PMI_PORT: mpiexec.hydra, srun --mpi=pmi2), or singleton (no
 *    launcher: a 1-process job that works). A launcher that this build
 *    cannot serve (PMIx without libpmix, srun --mpi=none with several
 *    tasks) makes init fail with a message saying which launcher, what is
 *    missing and what to do: never a silent 1-process job. Callers never
 *    know which backend runs.
 *  - Identity is valid from bm_rte_init() until bm_rte_finalize().
 *  - Modex: bm_rte_modex_put() any number of (key, blob) pairs, then
 *    bm_rte_modex_fence() (collective over the job: returns once every
 *    process has put and committed), then bm_rte_modex_get() any peer's blob.
 *    Keys are short strings ("btl.sm", "btl.tcp"). A get for a key the peer
 *    never put returns BM_ERR_NOT_FOUND (the peer lacks that transport).
 *  - bm_rte_abort() ends the whole job: it tells the launcher (which kills
 *    every rank and reports the message) and then exits this process.
 *
 * Backends implement struct bm_rte_backend_ops; adding PMIx or PMI-1 means
 * adding one file (its ops table), its extern in rte_backend.h, and its
 * entry in rte.c's backend list and BM_RTE_BACKEND choices; callers and the
 * other backends do not change.
 *
 * Job-scoped files: every shared-memory object of a job is named
 * "bm-<jobid>-<what>" (so it appears as /dev/shm/bm-<jobid>-<what>) and every
 * temporary file "/tmp/bm-<jobid>-<what>"; bm_rte_job_name() builds the
 * name. The jobid holds only [0-9a-z] characters. bmrun, and each bmrun
 * daemon on its host, removes /dev/shm/bm-<jobid>-* and /tmp/bm-<jobid>-* when
 * the job ends, normally or not, so a crashed rank leaves nothing behind.
 * Transports still remove their own files in a bm_rte_at_exit() handler, which
 * is what cleans up singleton runs. */
#ifndef BM_RUNTIME_RTE_H
#define BM_RUNTIME_RTE_H

#include "bm_status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bm_rte_proc {
    int rank;       /* 0 .. size-1 */
    int size;       /* processes in the job */
    int local_rank; /* index among the processes on this node */
    int local_size; /* processes on this node */
    int node;       /* index of this node, 0 .. num_nodes-1 */
    int num_nodes;  /* nodes in the job */
    int appnum;     /* which program of an MPMD job (MPI_APPNUM), 0.. */
    char hostname[256];
    char jobid[32]; /* unique per job on this machine: used in shared-memory names */
    /* How the launcher was reached ("PMI-2 on PMI_FD", "PMIx direct modex",
     * ...): for logs and for the tests that must fail when the launcher
     * path they name was not the one used. */
    char via[48];
    /* A key only this job's processes know, derived from the job secret
     * the launcher distributes (bmrun's BMRUN_SECRET), for transports to
     * derive their own keys from (dgram's MACs: bm_util_siphash_derive
     * with a label of their own). has_job_key is false under launchers that
     * distribute no secret (PMIx, PMI-1, singleton). The secret itself,
     * which opens the launcher's service, is not kept here. */
    bool has_job_key;
    uint8_t job_key[16];
};

struct bm_rte_backend_ops {
    const char *name; /* "bmrun", "pmix", "pmi", "singleton" */
    /* True when the environment says this backend launched us. */
    int (*detect)(void);
    /* Fill proc (rank, size, ...); node_of is filled for every rank after the
     * first fence at the latest (backends may fill it in init). */
    bm_status_t (*init)(struct bm_rte_proc *proc);
    void (*finalize)(void);
    bm_status_t (*put)(const char *key, const void *data, size_t len);
    bm_status_t (*commit)(void);
    bm_status_t (*fence)(void);
    /* On success *data_out stays valid until finalize (owned by the backend). */
    bm_status_t (*get)(int rank, const char *key, const void **data_out, size_t *len_out);
    /* get without waiting for the launcher, used during bm_rte_barrier_progress:
     * BM_ERR_BUSY when the entry is not here and only the launcher (busy with
     * the fence) could answer. NULL when get never waits for a fence (bmrun:
     * every entry is here after the first fence; PMIx: its fence holds no
     * lock a get takes; singleton). */
    bm_status_t (*get_local)(int rank, const char *key, const void **data_out, size_t *len_out);
    /* Tell the launcher the job must end; message for the user. Does not return. */
    void (*abort)(int exit_code, const char *message) __attribute__((noreturn));
    /* Node index of any rank; valid after init (may be filled at the first
     * fence by backends that learn it then). Returns -1 for an unknown rank. */
    int (*node_of)(int rank);
};

/* Start the runtime; idempotent (reference counted). */
bm_status_t bm_rte_init(void);
void bm_rte_finalize(void);

/* This process. Valid between init and finalize. */
const struct bm_rte_proc *bm_rte_self(void);
/* Node index of any rank (same node <=> same value), -1 for an invalid rank.
 * Valid after the first fence (bmrun and singleton: already after init). */
int bm_rte_node_of(int rank);
/* Name of the backend in use ("bmrun", "singleton", ...). */
const char *bm_rte_backend_name(void);

/* The backends of this build, for bm_info: name, the launchers it serves,
 * whether it was built and, when not, why. */
struct bm_rte_backend_info {
    const char *name;
    const char *launchers;
    int built;
    const char *why_not;
};
/* Fills *list_out with a static array; returns its length. */
int bm_rte_backends(const struct bm_rte_backend_info **list_out);
/* Which backend bm_rte_init would use here, without starting it. Writes
 * the evidence ("BMRUN_KVS is set", "PMIX_NAMESPACE=...") into why and
 * returns the name; returns NULL (why = what is wrong and what to do) when
 * a launcher started this process that this build cannot serve. */
const char *bm_rte_probe(char *why, size_t len);

bm_status_t bm_rte_modex_put(const char *key, const void *data, size_t len);
bm_status_t bm_rte_modex_commit(void);
/* Collective: every process of the job must call it the same number of times. */
bm_status_t bm_rte_modex_fence(void);
/* A peer's entry. Never waits for a fence that another thread is in when the
 * entry is already in this process (bmrun: always after the first fence;
 * PMI: once read). While bm_rte_barrier_progress runs, an entry that only
 * the launcher could give (PMI's first read of it) answers BM_ERR_BUSY at
 * once: ask again after the fence. */
bm_status_t bm_rte_modex_get(int rank, const char *key, const void **data_out, size_t *len_out);
/* A fence with no data: a job-wide barrier through the launcher (slow; start-up only). */
bm_status_t bm_rte_barrier(void);
/* bm_rte_barrier, during which progress(arg) is called over and over by
 * the calling thread until every process of the job has entered it (the
 * fence itself runs in a helper thread: a backend's fence blocks). For
 * MPI_Finalize: a process waiting there must keep answering its peers'
 * transports (dgram resends whose ACK was lost), as Open MPI's finalize
 * progresses during its nonblocking PMIx fence. progress may read the
 * modex (bm_rte_modex_get never waits for this fence: BM_ERR_BUSY for an
 * entry only the launcher has), bm_rte_self and bm_rte_node_of; it must not
 * put, fence or barrier. progress sleeps or yields itself when it finds
 * nothing (this loop does not); wake(arg), when not NULL, is called from
 * the helper thread once the fence is over, to end such a sleep.
 * Collective, like bm_rte_barrier. */
bm_status_t bm_rte_barrier_progress(void (*progress)(void *arg), void (*wake)(void *arg),
                                    void *arg);

/* End the whole job with this exit code and message. Never returns. */
void bm_rte_abort(int exit_code, const char *message) __attribute__((noreturn));

/* Write "bm-<jobid>-<what>" into buf (see "Job-scoped files" above):
 * shm_open("/" name) or "/tmp/" name. BM_ERR_TRUNCATE when it does not fit. */
bm_status_t bm_rte_job_name(const char *what, char *buf, size_t len);

/* Register a function run at bm_rte_finalize and at abort (before exit), in
 * reverse order of registration: transports remove shared-memory files here. */
void bm_rte_at_exit(void (*fn)(void *arg), void *arg);

#endif
