/* The runtime front end: picks a backend (bmrun service, PMIx, PMI,
 * singleton as the fallback), keeps this process's identity, forwards the
 * modex calls, and runs the at-exit handlers on finalize and abort.
 * Callers see only rte.h; which backend runs is decided once, here. This is
 * the only file that knows which backends a build has (BM_HAVE_PMIX). */
#define BM_LOG_SUBSYS "runtime"
#include "bm_config.h"
#include "runtime/rte.h"
#include "runtime/rte_backend.h"
#include "util/help.h"
#include "util/log.h"
#include "util/params.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Detection order: bitmover's own launcher first (its ranks may inherit a
 * surrounding launcher's variables, e.g. bmrun inside an srun step), then
 * PMIx, then PMI, and singleton last: it always detects. */
static const struct bm_rte_backend_ops *const rte_backends[] = {
    &bm_rte_bmrun_ops,
#if BM_HAVE_PMIX
    &bm_rte_pmix_ops,
#endif
    &bm_rte_pmi_ops,
    &bm_rte_singleton_ops,
};
#define RTE_NBACKENDS (sizeof(rte_backends) / sizeof(rte_backends[0]))

/* What bm_info reports: every backend, built or not. */
static const struct bm_rte_backend_info rte_backend_info[] = {
    {"bmrun", "bitmover's bmrun (BMRUN_* variables)", 1, NULL},
    {"pmix", "Open MPI's mpirun, prterun, srun --mpi=pmix (PMIX_* variables)", BM_HAVE_PMIX,
     BM_PMIX_WHY},
    {"pmi", "MPICH's mpiexec.hydra (PMI-1), srun --mpi=pmi2 (PMI-2) (PMI_FD or PMI_PORT)", 1, NULL},
    {"singleton", "none: a program started alone is a 1-process job", 1, NULL},
};

int bm_rte_backends(const struct bm_rte_backend_info **list_out)
{
    *list_out = rte_backend_info;
    return (int)(sizeof(rte_backend_info) / sizeof(rte_backend_info[0]));
}

static const struct bm_param rte_params[] = {
    {.name = "BM_RTE_BACKEND",
     .type = BM_PARAM_ENUM,
     .def = "auto",
     .choices = "auto|bmrun|pmix|pmi|singleton",
     .help = "Runtime backend: auto detects the launcher from the environment (bmrun sets "
             "BMRUN_*, PMIx launchers PMIX_*, PMI launchers PMI_FD or PMI_PORT); force one only "
             "to debug start-up.",
     .offset = offsetof(struct bm_rte_config, backend)},
    {.name = "BM_RTE_CONNECT_TIMEOUT",
     .type = BM_PARAM_INT,
     .def = "5000",
     .min = 10,
     .max = 600000,
     .help = "Milliseconds a rank waits for each address of the bmrun key-value service when "
             "connecting at start-up; raise it on slow or congested networks.",
     .offset = offsetof(struct bm_rte_config, connect_timeout_ms)},
    {.name = "BM_RTE_PMIX_MODEX",
     .type = BM_PARAM_ENUM,
     .def = "direct",
     .choices = "collect|direct",
     .help = "How addresses travel under PMIx. direct: the start-up fence only synchronises and "
             "a process fetches a peer's addresses from the PMIx server when it first needs "
             "them (cost grows with the peers used). collect: the fence copies every rank's "
             "addresses to every node (cost grows with the job size).",
     .offset = offsetof(struct bm_rte_config, pmix_modex)},
    {.name = "BM_RTE_PMI_VERSION",
     .type = BM_PARAM_ENUM,
     .def = "auto",
     .choices = "auto|1|2",
     .help = "PMI wire protocol under a PMI launcher: auto uses PMI-2 under Slurm's pmi2 plugin "
             "(PMI_JOBID set) and PMI-1 otherwise (MPICH's hydra); both launchers speak both.",
     .offset = offsetof(struct bm_rte_config, pmi_version)},
};
static const struct bm_param_table rte_param_table = {
    .component = "runtime", .params = rte_params, .count = BM_PARAM_COUNT(rte_params)};
BM_PARAM_TABLE_REGISTER(rte_param_table);

struct rte_exit_fn {
    void (*fn)(void *arg);
    void *arg;
};

static pthread_mutex_t rte_lock = PTHREAD_MUTEX_INITIALIZER;
static int rte_refcount;
static const struct bm_rte_backend_ops *rte_ops;
static struct bm_rte_proc rte_proc;
static struct bm_rte_config rte_config;
static struct rte_exit_fn *rte_exit_fns;
static size_t rte_nexit, rte_exit_cap;
/* Atomic: a bm_rte_barrier_progress is under way (its fence runs in a helper
 * thread), so a modex get must not wait for the launcher. */
static int rte_fence_progress;

const struct bm_rte_config *bm_rte_config_get(void)
{
    return &rte_config;
}

/* Variables that show which launcher started us, for messages. */
static void rte_evidence(const struct bm_rte_backend_ops *ops, char *why, size_t len)
{
    const char *n = ops->name;
    if (strcmp(n, "bmrun") == 0)
        snprintf(why, len, "BMRUN_KVS=%s", getenv("BMRUN_KVS"));
    else if (strcmp(n, "pmix") == 0)
        snprintf(why, len, "PMIX_NAMESPACE=%s", getenv("PMIX_NAMESPACE"));
    else if (strcmp(n, "pmi") == 0)
        snprintf(why, len, "%s=%s%s", getenv("PMI_FD") ? "PMI_FD" : "PMI_PORT",
                 getenv("PMI_FD") ? getenv("PMI_FD") : getenv("PMI_PORT"),
                 getenv("PMI_JOBID") ? " and PMI_JOBID (Slurm: PMI-2)" : "");
    else
        snprintf(why, len, "no launcher variables");
}

/* The backend for this environment; NULL with *foreign filled when a
 * launcher started us that this build cannot serve, or NULL with
 * foreign->launcher empty when BM_RTE_BACKEND forces one not built. */
static const struct bm_rte_backend_ops *rte_select(int forced, struct bm_rte_foreign *foreign)
{
    memset(foreign, 0, sizeof(*foreign));
    if (forced > 0) {
        /* The enum index names a backend through the choices string. */
        const char *c = rte_params[0].choices;
        for (int i = 0; i < forced && c; i++) {
            c = strchr(c, '|');
            c = c ? c + 1 : NULL;
        }
        size_t len = c ? strcspn(c, "|") : 0;
        for (size_t i = 0; i < RTE_NBACKENDS; i++)
            if (c && strlen(rte_backends[i]->name) == len &&
                strncmp(rte_backends[i]->name, c, len) == 0)
                return rte_backends[i];
        return NULL;
    }
    for (size_t i = 0; i < RTE_NBACKENDS; i++) {
        if (!rte_backends[i]->detect())
            continue;
        if (rte_backends[i] == &bm_rte_singleton_ops && bm_rte_foreign_launcher(foreign))
            return NULL;
        return rte_backends[i];
    }
    return &bm_rte_singleton_ops;
}

const char *bm_rte_probe(char *why, size_t len)
{
    struct bm_rte_config cfg;
    if (bm_util_params_load(&rte_param_table, &cfg) != BM_OK) {
        snprintf(why, len, "a BM_RTE_* variable has an invalid value (see above)");
        return NULL;
    }
    struct bm_rte_foreign f;
    const struct bm_rte_backend_ops *ops = rte_select(cfg.backend, &f);
    if (ops) {
        if (cfg.backend > 0)
            snprintf(why, len, "forced by BM_RTE_BACKEND");
        else
            rte_evidence(ops, why, len);
        return ops->name;
    }
    if (f.launcher[0])
        snprintf(why, len, "started by %s (%s), but %s. %s.", f.launcher, f.evidence, f.missing,
                 f.todo);
    else
        snprintf(why, len, "BM_RTE_BACKEND names a backend this build lacks");
    return NULL;
}

bm_status_t bm_rte_init(void)
{
    pthread_mutex_lock(&rte_lock);
    bm_status_t rc = BM_OK;
    if (rte_refcount > 0) {
        rte_refcount++;
        goto out;
    }
    rc = bm_util_params_load(&rte_param_table, &rte_config);
    if (rc != BM_OK)
        goto out;
    struct bm_rte_foreign foreign;
    const struct bm_rte_backend_ops *ops = rte_select(rte_config.backend, &foreign);
    if (!ops) {
        if (foreign.launcher[0])
            bm_util_help_show("rte-launcher-unusable", foreign.launcher, foreign.evidence,
                              foreign.missing, foreign.todo);
        else
            bm_log_error("BM_RTE_BACKEND=%s: this build has no such backend (pmix: %s)",
                         getenv("BM_RTE_BACKEND"), BM_PMIX_WHY);
        rc = BM_ERR_NOT_AVAILABLE;
        goto out;
    }
    struct bm_rte_proc proc;
    memset(&proc, 0, sizeof(proc));
    rc = ops->init(&proc);
    if (rc != BM_OK) {
        bm_log_error("runtime backend '%s' failed to start: %s", ops->name, bm_status_str(rc));
        goto out;
    }
    rte_proc = proc;
    rte_ops = ops;
    rte_refcount = 1;
    bm_util_log_set_rank(proc.rank);
    bm_log_debug("backend %s: rank %d of %d, node %d of %d, local %d of %d, job %s", ops->name,
                 proc.rank, proc.size, proc.node, proc.num_nodes, proc.local_rank, proc.local_size,
                 proc.jobid);
out:
    pthread_mutex_unlock(&rte_lock);
    return rc;
}

void bm_rte_run_at_exit(void)
{
    /* Pop one at a time so that a handler that aborts does not rerun itself. */
    for (;;) {
        pthread_mutex_lock(&rte_lock);
        if (rte_nexit == 0) {
            free(rte_exit_fns);
            rte_exit_fns = NULL;
            rte_exit_cap = 0;
            pthread_mutex_unlock(&rte_lock);
            return;
        }
        struct rte_exit_fn f = rte_exit_fns[--rte_nexit];
        pthread_mutex_unlock(&rte_lock);
        f.fn(f.arg);
    }
}

void bm_rte_finalize(void)
{
    pthread_mutex_lock(&rte_lock);
    if (rte_refcount == 0 || --rte_refcount > 0) {
        pthread_mutex_unlock(&rte_lock);
        return;
    }
    pthread_mutex_unlock(&rte_lock);
    bm_rte_run_at_exit();
    pthread_mutex_lock(&rte_lock);
    if (rte_ops)
        rte_ops->finalize();
    rte_ops = NULL;
    pthread_mutex_unlock(&rte_lock);
}

const struct bm_rte_proc *bm_rte_self(void)
{
    return &rte_proc;
}

int bm_rte_node_of(int rank)
{
    if (!rte_ops || rank < 0 || rank >= rte_proc.size)
        return -1;
    return rte_ops->node_of(rank);
}

const char *bm_rte_backend_name(void)
{
    return rte_ops ? rte_ops->name : "none";
}

static bm_status_t rte_check_key(const char *key)
{
    if (!rte_ops)
        return BM_ERR_NOT_AVAILABLE;
    if (!key || !*key || strlen(key) > 255)
        return BM_ERR_BAD_PARAM;
    return BM_OK;
}

bm_status_t bm_rte_modex_put(const char *key, const void *data, size_t len)
{
    bm_status_t rc = rte_check_key(key);
    if (rc != BM_OK)
        return rc;
    if (len && !data)
        return BM_ERR_BAD_PARAM;
    return rte_ops->put(key, data, len);
}

bm_status_t bm_rte_modex_commit(void)
{
    return rte_ops ? rte_ops->commit() : BM_ERR_NOT_AVAILABLE;
}

bm_status_t bm_rte_modex_fence(void)
{
    if (!rte_ops)
        return BM_ERR_NOT_AVAILABLE;
    bm_status_t rc = rte_ops->commit();
    return rc == BM_OK ? rte_ops->fence() : rc;
}

bm_status_t bm_rte_modex_get(int rank, const char *key, const void **data_out, size_t *len_out)
{
    bm_status_t rc = rte_check_key(key);
    if (rc != BM_OK)
        return rc;
    if (rank < 0 || rank >= rte_proc.size)
        return BM_ERR_BAD_PARAM;
    if (rte_ops->get_local && __atomic_load_n(&rte_fence_progress, __ATOMIC_ACQUIRE))
        return rte_ops->get_local(rank, key, data_out, len_out);
    return rte_ops->get(rank, key, data_out, len_out);
}

bm_status_t bm_rte_barrier(void)
{
    return bm_rte_modex_fence();
}

struct rte_fence_job {
    bm_status_t rc;
    int done; /* atomic: rc is set */
    void (*wake)(void *arg);
    void *arg;
};

static void *rte_fence_main(void *arg)
{
    struct rte_fence_job *job = arg;
    job->rc = bm_rte_barrier();
    __atomic_store_n(&job->done, 1, __ATOMIC_SEQ_CST);
    if (job->wake)
        job->wake(job->arg);
    return NULL;
}

bm_status_t bm_rte_barrier_progress(void (*progress)(void *arg), void (*wake)(void *arg), void *arg)
{
    if (!rte_ops)
        return BM_ERR_NOT_AVAILABLE;
    if (!progress || rte_proc.size <= 1)
        return bm_rte_barrier();
    struct rte_fence_job job = {.rc = BM_OK, .done = 0, .wake = wake, .arg = arg};
    pthread_t t;
    /* Signals stay with the application's threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = pthread_create(&t, NULL, rte_fence_main, &job);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err != 0) {
        bm_log_warn("rank %d (host %s): no thread for the finalize fence (%s): fencing "
                    "without progress; a peer waiting for a lost acknowledgement may report a "
                    "failed path (raise the process's thread limit: ulimit -u)",
                    rte_proc.rank, rte_proc.hostname, strerror(err));
        return bm_rte_barrier();
    }
    __atomic_store_n(&rte_fence_progress, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&job.done, __ATOMIC_ACQUIRE))
        progress(arg);
    pthread_join(t, NULL);
    __atomic_store_n(&rte_fence_progress, 0, __ATOMIC_RELEASE);
    return job.rc;
}

void bm_rte_abort(int exit_code, const char *message)
{
    if (!message)
        message = "(no message)";
    if (rte_ops)
        rte_ops->abort(exit_code, message);
    /* Not initialized: there is no launcher to tell; behave like the singleton. */
    fprintf(stderr, "bitmover: aborting (exit code %d): %s\n", exit_code, message);
    bm_rte_run_at_exit();
    _exit(exit_code);
}

void bm_rte_drain_output(int max_ms)
{
    fflush(stdout);
    fflush(stderr);
    for (int fd = 1; fd <= 2; fd++) {
        struct stat st;
        if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode))
            continue;
        int waited = 0, unread = 0;
        /* FIONREAD on a pipe's write end counts the bytes not yet read. */
        while (ioctl(fd, FIONREAD, &unread) == 0 && unread > 0 && waited < max_ms) {
            usleep(1000);
            waited++;
        }
    }
}

void bm_rte_at_exit(void (*fn)(void *arg), void *arg)
{
    pthread_mutex_lock(&rte_lock);
    if (rte_nexit == rte_exit_cap) {
        size_t cap = rte_exit_cap ? 2 * rte_exit_cap : 16;
        struct rte_exit_fn *n = realloc(rte_exit_fns, cap * sizeof(*n));
        if (!n) {
            pthread_mutex_unlock(&rte_lock);
            bm_log_error("out of memory registering an at-exit handler; files may be left behind");
            return;
        }
        rte_exit_fns = n;
        rte_exit_cap = cap;
    }
    rte_exit_fns[rte_nexit++] = (struct rte_exit_fn){.fn = fn, .arg = arg};
    pthread_mutex_unlock(&rte_lock);
}

bm_status_t bm_rte_job_name(const char *what, char *buf, size_t len)
{
    if (!what || !buf || !rte_ops)
        return BM_ERR_BAD_PARAM;
    int n = snprintf(buf, len, "bm-%s-%s", rte_proc.jobid, what);
    return (n < 0 || (size_t)n >= len) ? BM_ERR_TRUNCATE : BM_OK;
}
