/* PMIx backend: the job as a PMIx server describes it (Open MPI's mpirun,
 * prterun, srun --mpi=pmix). libpmix is opened with dlopen when this
 * backend is chosen, never linked: loaded at every program's start it cost
 * ~2 ms per process (libevent, munge, hwloc plugins) even in jobs that bmrun
 * started, and a program built here still runs where libpmix is absent.
 *
 * Identity: rank from PMIx_Init; job size, local size and node count from
 * the job (wildcard rank); local rank, node id and host name from this
 * process's own entries. A rank's node id is read on first use.
 *
 * Modex (BM_RTE_PMIX_MODEX): entries are PMIx_Put as byte objects under
 * "bm.<key>" with global scope and committed at the fence.
 *  - collect: the fence gathers every rank's entries onto every node
 *    (PMIX_COLLECT_DATA), so a get is a lookup in the local store. Each
 *    process receives all N ranks' entries: O(N) bytes per process.
 *  - direct: the fence only synchronises; a get asks the server, which
 *    answers from its node's store or fetches the owner's entries from the
 *    owner's node: a process pays only for the peers it talks to.
 * A server asked for a key its owner never put may wait for it until a
 * timeout (Open MPI 4.1's does), so every process also publishes the list
 * of its keys as "bm.keys" (at init, so that it always exists); a direct
 * get reads a peer's list first (that fetch brings all of the peer's
 * entries) and answers "not found" at once for a key not on it. Either way
 * a fetched entry is copied into a local cache, so pointers handed out stay
 * valid until finalize; entries are read once (put before the first fence
 * that the reader passed, as transports do). */
#define BM_LOG_SUBSYS "runtime/pmix"
#include "bm_config.h"
#include "runtime/rte_backend.h"
#include "util/help.h"
#include "util/log.h"

#include <dlfcn.h>
#include <pmix.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PMIX_KEY_PREFIX "bm."
#define PMIX_INDEX_KEY  "bm.keys" /* comma-separated list of this rank's keys */
#define PMIX_INDEX_MAX  4096

enum { PMIX_MODEX_COLLECT, PMIX_MODEX_DIRECT };

/* The few libpmix entry points used, resolved at init. */
struct pmix_api {
    pmix_status_t (*init)(pmix_proc_t *, pmix_info_t[], size_t);
    pmix_status_t (*finalize)(const pmix_info_t[], size_t);
    pmix_status_t (*get)(const pmix_proc_t *, const char[], const pmix_info_t[], size_t,
                         pmix_value_t **);
    pmix_status_t (*put)(pmix_scope_t, const char[], pmix_value_t *);
    pmix_status_t (*commit)(void);
    pmix_status_t (*fence)(const pmix_proc_t[], size_t, const pmix_info_t[], size_t);
    pmix_status_t (*abort)(int, const char[], pmix_proc_t[], size_t);
    const char *(*error_string)(pmix_status_t);
    void (*value_destruct)(pmix_value_t *);
};

static struct {
    pthread_mutex_t lock;
    void *lib;
    struct pmix_api api;
    bool up;
    pmix_proc_t me, wild;
    int size;
    int mode;
    bool dirty;                 /* puts since the last fence */
    char index[PMIX_INDEX_MAX]; /* our keys, ",a,b," */
    char **peer_index;          /* peers' key lists once read (direct mode) */
    int *node_of;               /* -1 until read */
    struct bm_rte_store *cache; /* own and fetched entries */
} px = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int pmix_detect(void)
{
    return getenv("PMIX_NAMESPACE") != NULL && getenv("PMIX_RANK") != NULL;
}

static const char *pmix_err(pmix_status_t st)
{
    return px.api.error_string ? px.api.error_string(st) : "unknown PMIx error";
}

static bm_status_t pmix_load(void)
{
    /* The soname, then the directory pkg-config named at build time (Debian
     * keeps libpmix outside the default search path, with a symlink). */
    static const char *const names[] = {"libpmix.so.2", BM_PMIX_LIBDIR "/libpmix.so.2",
                                        "libpmix.so"};
    const char *err = "not tried";
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !px.lib; i++) {
        px.lib = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
        if (!px.lib && i == 0)
            err = dlerror();
    }
    if (!px.lib) {
        bm_util_help_show("rte-pmix-unloadable", getenv("PMIX_NAMESPACE"), err ? err : "?");
        return BM_ERR_NOT_AVAILABLE;
    }
    static const struct {
        const char *name;
        size_t offset;
    } syms[] = {
        {"PMIx_Init", offsetof(struct pmix_api, init)},
        {"PMIx_Finalize", offsetof(struct pmix_api, finalize)},
        {"PMIx_Get", offsetof(struct pmix_api, get)},
        {"PMIx_Put", offsetof(struct pmix_api, put)},
        {"PMIx_Commit", offsetof(struct pmix_api, commit)},
        {"PMIx_Fence", offsetof(struct pmix_api, fence)},
        {"PMIx_Abort", offsetof(struct pmix_api, abort)},
        {"PMIx_Error_string", offsetof(struct pmix_api, error_string)},
        {"PMIx_Value_destruct", offsetof(struct pmix_api, value_destruct)},
    };
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
        void *p = dlsym(px.lib, syms[i].name);
        if (!p) {
            bm_util_help_show("rte-pmix-unloadable", getenv("PMIX_NAMESPACE"),
                              "the loaded libpmix lacks PMIx_Init or another PMIx 3+ function");
            return BM_ERR_NOT_AVAILABLE;
        }
        memcpy((char *)&px.api + syms[i].offset, &p, sizeof(p));
    }
    return BM_OK;
}

static void pmix_value_free(pmix_value_t *v)
{
    if (v) {
        px.api.value_destruct(v);
        free(v);
    }
}

static void pmix_info_bool(pmix_info_t *info, const char *key)
{
    memset(info, 0, sizeof(*info));
    snprintf(info->key, sizeof(info->key), "%s", key);
    info->value.type = PMIX_BOOL;
    info->value.data.flag = true;
}

/* An unsigned number of whatever width the server chose. */
static bm_status_t pmix_get_uint(const pmix_proc_t *proc, const char *key, uint64_t *out)
{
    pmix_value_t *v = NULL;
    pmix_status_t st = px.api.get(proc, key, NULL, 0, &v);
    if (st != PMIX_SUCCESS || !v) {
        bm_log_debug("PMIx_Get(%s, rank %u): %s", key, proc->rank, pmix_err(st));
        return BM_ERR_NOT_FOUND;
    }
    bm_status_t rc = BM_OK;
    switch (v->type) {
    case PMIX_UINT8:
        *out = v->data.uint8;
        break;
    case PMIX_UINT16:
        *out = v->data.uint16;
        break;
    case PMIX_UINT32:
        *out = v->data.uint32;
        break;
    case PMIX_UINT64:
        *out = v->data.uint64;
        break;
    case PMIX_SIZE:
        *out = v->data.size;
        break;
    case PMIX_INT:
        rc = v->data.integer >= 0 ? (*out = (uint64_t)v->data.integer, BM_OK) : BM_ERR_PROTOCOL;
        break;
    case PMIX_PROC_RANK:
        *out = v->data.rank;
        break;
    default:
        rc = BM_ERR_PROTOCOL;
    }
    pmix_value_free(v);
    return rc;
}

static bm_status_t pmix_get_int(const pmix_proc_t *proc, const char *key, int max, int *out)
{
    uint64_t u = 0;
    bm_status_t rc = pmix_get_uint(proc, key, &u);
    if (rc == BM_OK && u > (uint64_t)max) {
        bm_log_error("PMIx gave %s = %llu, beyond %d", key, (unsigned long long)u, max);
        rc = BM_ERR_PROTOCOL;
    }
    if (rc == BM_OK)
        *out = (int)u;
    return rc;
}

/* Node of a rank from the server (PMIX_NODEID), or -1. */
static int pmix_read_node(int rank)
{
    pmix_proc_t p = px.me;
    p.rank = (pmix_rank_t)rank;
    int node = -1;
    if (pmix_get_int(&p, PMIX_NODEID, 1 << 30, &node) != BM_OK)
        return -1;
    return node;
}

static void pmix_free_tables(void)
{
    for (int r = 0; px.peer_index && r < px.size; r++)
        free(px.peer_index[r]);
    free(px.peer_index);
    px.peer_index = NULL;
    free(px.node_of);
    px.node_of = NULL;
    bm_rte_store_free(px.cache);
    px.cache = NULL;
}

static bm_status_t pmix_put_string(const char *key, const char *str)
{
    pmix_value_t v;
    memset(&v, 0, sizeof(v));
    v.type = PMIX_STRING;
    v.data.string = (char *)str;
    pmix_status_t st = px.api.put(PMIX_GLOBAL, key, &v);
    if (st != PMIX_SUCCESS) {
        bm_log_error("PMIx_Put of %s failed: %s", key, pmix_err(st));
        return BM_ERR_NOT_AVAILABLE;
    }
    return BM_OK;
}

static bm_status_t pmix_put_index(void)
{
    return pmix_put_string(PMIX_INDEX_KEY, px.index);
}

static bm_status_t pmix_init(struct bm_rte_proc *proc)
{
    bm_status_t rc = pmix_load();
    if (rc != BM_OK)
        return rc;
    pmix_status_t st = px.api.init(&px.me, NULL, 0);
    if (st != PMIX_SUCCESS) {
        bm_util_help_show("rte-pmix-init-failed", getenv("PMIX_NAMESPACE"),
                          getenv("PMIX_SERVER_URI41")  ? getenv("PMIX_SERVER_URI41")
                          : getenv("PMIX_SERVER_URI2") ? getenv("PMIX_SERVER_URI2")
                                                       : "(no PMIX_SERVER_URI* variable)",
                          pmix_err(st));
        return BM_ERR_NOT_AVAILABLE;
    }
    px.up = true;
    px.wild = px.me;
    px.wild.rank = PMIX_RANK_WILDCARD;
    px.mode = bm_rte_config_get()->pmix_modex;
    if ((rc = pmix_get_int(&px.wild, PMIX_JOB_SIZE, 1 << 30, &px.size)) != BM_OK) {
        bm_log_error("the PMIx server (namespace %s) did not say the job size (%s)", px.me.nspace,
                     PMIX_JOB_SIZE);
        goto err_finalize;
    }
    proc->rank = (int)px.me.rank;
    proc->size = px.size;
    if (proc->rank < 0 || proc->rank >= px.size) {
        bm_log_error("PMIx gave rank %d in a job of %d", proc->rank, px.size);
        rc = BM_ERR_PROTOCOL;
        goto err_finalize;
    }
    px.node_of = malloc((size_t)px.size * sizeof(int));
    px.cache = bm_rte_store_new(px.size);
    if (!px.node_of || !px.cache) {
        rc = BM_ERR_NO_MEMORY;
        goto err_free;
    }
    for (int r = 0; r < px.size; r++)
        px.node_of[r] = -1;
    px.peer_index = calloc((size_t)px.size, sizeof(char *));
    if (!px.peer_index) {
        rc = BM_ERR_NO_MEMORY;
        goto err_free;
    }
    snprintf(px.index, sizeof(px.index), ",");
    if ((rc = pmix_put_index()) != BM_OK)
        goto err_free;
    int node = pmix_read_node(proc->rank), local_size = 0, local_rank = 0, nodes = 0;
    if (node < 0 || pmix_get_int(&px.wild, PMIX_LOCAL_SIZE, px.size, &local_size) != BM_OK ||
        pmix_get_int(&px.me, PMIX_LOCAL_RANK, px.size, &local_rank) != BM_OK ||
        pmix_get_int(&px.wild, PMIX_NUM_NODES, px.size, &nodes) != BM_OK) {
        bm_log_error("the PMIx server (namespace %s) did not say where the ranks run (%s, %s, "
                     "%s, %s): bitmover needs a PMIx server that describes the job",
                     px.me.nspace, PMIX_NODEID, PMIX_LOCAL_SIZE, PMIX_LOCAL_RANK, PMIX_NUM_NODES);
        rc = BM_ERR_PROTOCOL;
        goto err_free;
    }
    px.node_of[proc->rank] = node;
    int appnum = 0;
    if (pmix_get_int(&px.me, PMIX_APPNUM, 1 << 30, &appnum) == BM_OK)
        proc->appnum = appnum; /* absent: one program */
    proc->node = node;
    proc->num_nodes = nodes;
    proc->local_rank = local_rank;
    proc->local_size = local_size;
    pmix_value_t *hv = NULL;
    if (px.api.get(&px.me, PMIX_HOSTNAME, NULL, 0, &hv) == PMIX_SUCCESS && hv &&
        hv->type == PMIX_STRING && hv->data.string)
        snprintf(proc->hostname, sizeof(proc->hostname), "%s", hv->data.string);
    else if (gethostname(proc->hostname, sizeof(proc->hostname)) != 0)
        snprintf(proc->hostname, sizeof(proc->hostname), "localhost");
    proc->hostname[sizeof(proc->hostname) - 1] = '\0';
    pmix_value_free(hv);
    bm_rte_jobid_from("px", px.me.nspace, proc->jobid, sizeof(proc->jobid));
    snprintf(proc->via, sizeof(proc->via), "PMIx %s modex",
             px.mode == PMIX_MODEX_DIRECT ? "direct" : "collect");
    bm_log_debug("PMIx namespace %s: rank %d of %d, node %d of %d, local %d of %d, modex %s",
                 px.me.nspace, proc->rank, px.size, node, nodes, local_rank, local_size,
                 px.mode == PMIX_MODEX_DIRECT ? "direct" : "collect");
    return BM_OK;
err_free:
    pmix_free_tables();
err_finalize:
    px.api.finalize(NULL, 0);
    px.up = false;
    return rc;
}

static void pmix_finalize(void)
{
    pthread_mutex_lock(&px.lock);
    if (px.up)
        px.api.finalize(NULL, 0);
    px.up = false;
    pmix_free_tables();
    pthread_mutex_unlock(&px.lock);
    /* libpmix stays loaded: its threads and atexit handlers may still refer to it. */
}

static bm_status_t pmix_put(const char *key, const void *data, size_t len)
{
    char pkey[PMIX_MAX_KEYLEN + 1];
    if (snprintf(pkey, sizeof(pkey), PMIX_KEY_PREFIX "%s", key) >= (int)sizeof(pkey))
        return BM_ERR_BAD_PARAM;
    pmix_value_t v;
    memset(&v, 0, sizeof(v));
    v.type = PMIX_BYTE_OBJECT;
    v.data.bo.bytes = (char *)data;
    v.data.bo.size = len;
    pthread_mutex_lock(&px.lock);
    bm_status_t rc = BM_OK;
    char needle[PMIX_MAX_KEYLEN + 3];
    snprintf(needle, sizeof(needle), ",%s,", key);
    if (!strstr(px.index, needle)) {
        size_t used = strlen(px.index);
        if (strchr(key, ',') || used + strlen(key) + 2 > sizeof(px.index)) {
            bm_log_error("modex key '%s' cannot be listed (commas, or more than %d bytes of keys)",
                         key, PMIX_INDEX_MAX);
            pthread_mutex_unlock(&px.lock);
            return BM_ERR_BAD_PARAM;
        }
        snprintf(px.index + used, sizeof(px.index) - used, "%s,", key);
        if ((rc = pmix_put_index()) != BM_OK) {
            pthread_mutex_unlock(&px.lock);
            return rc;
        }
    }
    pmix_status_t st = px.api.put(PMIX_GLOBAL, pkey, &v);
    if (st != PMIX_SUCCESS) {
        bm_log_error("PMIx_Put of modex entry '%s' (%zu bytes) failed: %s", key, len, pmix_err(st));
        rc = BM_ERR_NOT_AVAILABLE;
    } else {
        px.dirty = true;
        rc = bm_rte_store_put(px.cache, (int)px.me.rank, key, strlen(key), data, len);
    }
    pthread_mutex_unlock(&px.lock);
    return rc;
}

static bm_status_t pmix_commit(void)
{
    pthread_mutex_lock(&px.lock);
    pmix_status_t st = px.api.commit();
    pthread_mutex_unlock(&px.lock);
    if (st != PMIX_SUCCESS) {
        bm_log_error("PMIx_Commit failed: %s", pmix_err(st));
        return BM_ERR_NOT_AVAILABLE;
    }
    return BM_OK;
}

static bm_status_t pmix_fence(void)
{
    pmix_info_t info;
    size_t ninfo = 0;
    pthread_mutex_lock(&px.lock);
    if (px.mode == PMIX_MODEX_COLLECT && px.dirty) {
        pmix_info_bool(&info, PMIX_COLLECT_DATA);
        ninfo = 1;
    }
    px.dirty = false;
    pthread_mutex_unlock(&px.lock);
    /* Not under the lock: a fence waits for every rank, and gets from
     * other threads of this process may run meanwhile. */
    pmix_status_t st = px.api.fence(NULL, 0, ninfo ? &info : NULL, ninfo);
    if (st != PMIX_SUCCESS) {
        bm_log_error("PMIx_Fence over namespace %s failed: %s (a rank died or the launcher is "
                     "ending the job)",
                     px.me.nspace, pmix_err(st));
        return BM_ERR_PEER_GONE;
    }
    return BM_OK;
}

/* A peer's key list, read from the server once (direct mode). */
static bm_status_t pmix_read_index(int rank)
{
    if (px.peer_index[rank])
        return BM_OK;
    pmix_proc_t p = px.me;
    p.rank = (pmix_rank_t)rank;
    pmix_value_t *v = NULL;
    pmix_status_t st = px.api.get(&p, PMIX_INDEX_KEY, NULL, 0, &v);
    if (st != PMIX_SUCCESS || !v || v->type != PMIX_STRING || !v->data.string) {
        bm_log_error("cannot read rank %d's modex key list from the PMIx server: %s (is rank "
                     "%d a bitmover process of this job?)",
                     rank, st != PMIX_SUCCESS ? pmix_err(st) : "not a string", rank);
        pmix_value_free(v);
        return BM_ERR_NOT_AVAILABLE;
    }
    px.peer_index[rank] = strdup(v->data.string);
    pmix_value_free(v);
    return px.peer_index[rank] ? BM_OK : BM_ERR_NO_MEMORY;
}

static bm_status_t pmix_fetch_locked(int rank, const char *key)
{
    char pkey[PMIX_MAX_KEYLEN + 1];
    if (snprintf(pkey, sizeof(pkey), PMIX_KEY_PREFIX "%s", key) >= (int)sizeof(pkey))
        return BM_ERR_NOT_FOUND;
    pmix_proc_t p = px.me;
    p.rank = (pmix_rank_t)rank;
    pmix_info_t info;
    size_t ninfo = 0;
    if (px.mode == PMIX_MODEX_COLLECT) {
        /* Everything was collected: a miss must not ask the server. */
        pmix_info_bool(&info, PMIX_OPTIONAL);
        ninfo = 1;
    } else {
        bm_status_t rc = pmix_read_index(rank);
        if (rc != BM_OK)
            return rc;
        char needle[PMIX_MAX_KEYLEN + 3];
        snprintf(needle, sizeof(needle), ",%s,", key);
        if (!strstr(px.peer_index[rank], needle))
            return BM_ERR_NOT_FOUND;
    }
    pmix_value_t *v = NULL;
    pmix_status_t st = px.api.get(&p, pkey, ninfo ? &info : NULL, ninfo, &v);
    if (st == PMIX_ERR_NOT_FOUND || (st == PMIX_SUCCESS && !v))
        return BM_ERR_NOT_FOUND;
    if (st != PMIX_SUCCESS) {
        bm_log_error("PMIx_Get of rank %d's modex entry '%s' failed: %s", rank, key, pmix_err(st));
        return BM_ERR_NOT_AVAILABLE;
    }
    bm_status_t rc = BM_ERR_PROTOCOL;
    if (v->type == PMIX_BYTE_OBJECT)
        rc = bm_rte_store_put(px.cache, rank, key, strlen(key), v->data.bo.bytes, v->data.bo.size);
    else
        bm_log_error("rank %d's modex entry '%s' has PMIx type %u, not a byte object", rank, key,
                     (unsigned)v->type);
    pmix_value_free(v);
    return rc;
}

static bm_status_t pmix_get(int rank, const char *key, const void **data_out, size_t *len_out)
{
    pthread_mutex_lock(&px.lock);
    bm_status_t rc = bm_rte_store_get(px.cache, rank, key, data_out, len_out);
    if (rc == BM_ERR_NOT_FOUND && rank != (int)px.me.rank && px.up) {
        rc = pmix_fetch_locked(rank, key);
        if (rc == BM_OK)
            rc = bm_rte_store_get(px.cache, rank, key, data_out, len_out);
    }
    pthread_mutex_unlock(&px.lock);
    return rc;
}

__attribute__((noreturn)) static void pmix_abort(int exit_code, const char *message)
{
    /* mpirun and srun print their own line, not always with the message. */
    fprintf(stderr, "bitmover: rank %u aborting (exit code %d): %s\n", px.me.rank, exit_code,
            message);
    bm_rte_drain_output(1000);
    if (px.up)
        px.api.abort(exit_code, message, NULL, 0);
    bm_rte_run_at_exit();
    _exit(exit_code);
}

static int pmix_node_of(int rank)
{
    if (!px.node_of || rank < 0 || rank >= px.size)
        return -1;
    pthread_mutex_lock(&px.lock);
    if (px.node_of[rank] < 0 && px.up)
        px.node_of[rank] = pmix_read_node(rank);
    int node = px.node_of[rank];
    pthread_mutex_unlock(&px.lock);
    return node;
}

const struct bm_rte_backend_ops bm_rte_pmix_ops = {
    .name = "pmix",
    .detect = pmix_detect,
    .init = pmix_init,
    .finalize = pmix_finalize,
    .put = pmix_put,
    .commit = pmix_commit,
    .fence = pmix_fence,
    .get = pmix_get,
    .abort = pmix_abort,
    .node_of = pmix_node_of,
};
