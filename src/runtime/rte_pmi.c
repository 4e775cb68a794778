/* PMI backend: the job as MPICH's mpiexec.hydra (PMI-1) or Slurm's
 * srun --mpi=pmi2 (PMI-2) describe it, over the wire protocols of
 * rte_pmi_wire.c. Identity comes from the launcher (rank and size from
 * PMI_RANK/PMI_SIZE, PMI_PORT's handshake or PMI-2 fullinit; the node of
 * every rank from the PMI_process_mapping job attribute, or, when a
 * launcher publishes none, from host names exchanged through one extra
 * fence at start-up).
 *
 * Modex: each entry is published as soon as it is put, under the PMI key
 * "bm<rank>.<key>", its value base64url text prefixed with the number of
 * pieces ("1." for one); an entry longer than the launcher's vallen_max
 * continues under "bm<rank>.<key>.1", ".2", ... The fence is the
 * launcher's barrier. A get asks the launcher on first use (one round trip
 * per piece) and keeps the answer, so a process pays only for the peers it
 * actually needs: O(peers used), never all-to-all at start-up.
 *
 * Two locks: lock serialises the launcher connection (PMI is one request at
 * a time) and is held across a whole fence; cache_lock guards only the
 * cache. A get of an entry already here never waits for a fence in
 * progress; one that needs the launcher waits for it, except inside
 * bm_rte_barrier_progress (get_local: BM_ERR_BUSY at once, ask again after
 * the fence), where MPI_Finalize's transports keep progressing. */
#define BM_LOG_SUBSYS "runtime/pmi"
#include "runtime/rte_backend.h"
#include "runtime/rte_pmi_wire.h"
#include "util/log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PMI_KEY_PREFIX_MAX 24 /* "bm" + rank + "." + ".<piece>" */

static struct {
    pthread_mutex_t lock;       /* conn (held across a fence) */
    pthread_mutex_t cache_lock; /* cache (leaf: nothing is taken under it) */
    struct bm_rte_pmi_conn conn;
    int rank, size;
    int *node_of;
    struct bm_rte_store *cache; /* own entries and peers' entries fetched so far */
} pmi = {
    .lock = PTHREAD_MUTEX_INITIALIZER, .cache_lock = PTHREAD_MUTEX_INITIALIZER, .conn = {.fd = -1}};

static int pmi_detect(void)
{
    return getenv("PMI_FD") != NULL || getenv("PMI_PORT") != NULL;
}

/* PMI-2 where Slurm's pmi2 plugin started us (it sets PMI_JOBID; hydra
 * does not), PMI-1 otherwise; BM_RTE_PMI_VERSION overrides. */
static int pmi_version_wanted(void)
{
    int v = bm_rte_config_get()->pmi_version;
    if (v != 0)
        return v;
    return getenv("PMI_JOBID") != NULL ? 2 : 1;
}

/* The launcher names nothing about nodes: every rank publishes its host
 * name, one fence, then every name is read (start-up cost O(N) gets). */
static bm_status_t pmi_nodes_from_hostnames(const char *myhost)
{
    char key[64], val[BM_RTE_PMI_NAME_MAX * 2];
    snprintf(key, sizeof(key), "bmhost%d", pmi.rank);
    bm_rte_pmi_encode(myhost, strlen(myhost), val);
    bm_status_t rc = bm_rte_pmi_put(&pmi.conn, key, val);
    if (rc == BM_OK)
        rc = bm_rte_pmi_fence(&pmi.conn);
    char **names = calloc((size_t)pmi.size, sizeof(char *));
    if (!names)
        return BM_ERR_NO_MEMORY;
    for (int r = 0; r < pmi.size && rc == BM_OK; r++) {
        snprintf(key, sizeof(key), "bmhost%d", r);
        char host[BM_RTE_PMI_NAME_MAX * 2];
        size_t hlen = 0;
        rc = bm_rte_pmi_get(&pmi.conn, key, val, sizeof(val));
        if (rc == BM_OK && (strlen(val) * 3 / 4 >= sizeof(host) ||
                            bm_rte_pmi_decode(val, strlen(val), host, &hlen) != BM_OK))
            rc = BM_ERR_PROTOCOL;
        if (rc != BM_OK) {
            bm_log_error("cannot read the host name of rank %d from the launcher: %s", r,
                         bm_status_str(rc));
            break;
        }
        host[hlen] = '\0';
        names[r] = strdup(host);
        if (!names[r]) {
            rc = BM_ERR_NO_MEMORY;
            break;
        }
        pmi.node_of[r] = r;
        for (int q = 0; q < r; q++)
            if (strcmp(names[q], names[r]) == 0) {
                pmi.node_of[r] = pmi.node_of[q];
                break;
            }
    }
    for (int r = 0; r < pmi.size; r++)
        free(names[r]);
    free(names);
    return rc;
}

static bm_status_t pmi_init(struct bm_rte_proc *proc)
{
    int version = pmi_version_wanted();
    bm_status_t rc = bm_rte_pmi_open(&pmi.conn, version);
    if (rc != BM_OK)
        return rc;
    pmi.rank = pmi.conn.rank;
    pmi.size = pmi.conn.size;
    if (pmi.rank < 0 || pmi.rank >= pmi.size) {
        bm_log_error("the PMI launcher gave rank %d of %d on %s", pmi.rank, pmi.size,
                     pmi.conn.where);
        rc = BM_ERR_PROTOCOL;
        goto err_close;
    }
    pmi.node_of = calloc((size_t)pmi.size, sizeof(int));
    pmi.cache = bm_rte_store_new(pmi.size);
    if (!pmi.node_of || !pmi.cache) {
        rc = BM_ERR_NO_MEMORY;
        goto err_free;
    }
    if (gethostname(proc->hostname, sizeof(proc->hostname)) != 0)
        snprintf(proc->hostname, sizeof(proc->hostname), "localhost");
    proc->hostname[sizeof(proc->hostname) - 1] = '\0';

    char *map = malloc(BM_RTE_PMI_MSG_MAX);
    if (!map) {
        rc = BM_ERR_NO_MEMORY;
        goto err_free;
    }
    rc = bm_rte_pmi_job_attr(&pmi.conn, "PMI_process_mapping", map, BM_RTE_PMI_MSG_MAX);
    if (rc == BM_OK && bm_rte_pmi_parse_mapping(map, pmi.size, pmi.node_of) != BM_OK) {
        bm_log_warn("cannot read the launcher's PMI_process_mapping '%.120s'; exchanging host "
                    "names instead",
                    map);
        rc = BM_ERR_NOT_FOUND;
    }
    free(map);
    if (rc == BM_ERR_NOT_FOUND)
        rc = pmi_nodes_from_hostnames(proc->hostname);
    if (rc != BM_OK)
        goto err_free;
    proc->rank = pmi.rank;
    proc->size = pmi.size;
    proc->appnum = pmi.conn.appnum > 0 ? pmi.conn.appnum : 0;
    bm_rte_proc_set_nodes(proc, pmi.node_of);
    bm_rte_jobid_from("pmi", pmi.conn.kvsname, proc->jobid, sizeof(proc->jobid));
    snprintf(proc->via, sizeof(proc->via), "PMI-%d on %s", pmi.conn.version,
             strncmp(pmi.conn.where, "PMI_FD", 6) == 0 ? "PMI_FD" : "PMI_PORT");
    bm_log_debug("PMI-%d on %s: rank %d of %d, kvs %s, vallen_max %d", version, pmi.conn.where,
                 pmi.rank, pmi.size, pmi.conn.kvsname, pmi.conn.vallen_max);
    return BM_OK;
err_free:
    free(pmi.node_of);
    pmi.node_of = NULL;
    bm_rte_store_free(pmi.cache);
    pmi.cache = NULL;
err_close:
    bm_rte_pmi_close(&pmi.conn);
    return rc;
}

static void pmi_finalize(void)
{
    pthread_mutex_lock(&pmi.lock);
    bm_rte_pmi_close(&pmi.conn);
    free(pmi.node_of);
    pmi.node_of = NULL;
    pthread_mutex_lock(&pmi.cache_lock);
    bm_rte_store_free(pmi.cache);
    pmi.cache = NULL;
    pthread_mutex_unlock(&pmi.cache_lock);
    pthread_mutex_unlock(&pmi.lock);
}

static bm_status_t pmi_cache_put(int rank, const char *key, const void *data, size_t len)
{
    pthread_mutex_lock(&pmi.cache_lock);
    bm_status_t rc = bm_rte_store_put(pmi.cache, rank, key, strlen(key), data, len);
    pthread_mutex_unlock(&pmi.cache_lock);
    return rc;
}

static bm_status_t pmi_cache_get(int rank, const char *key, const void **data_out, size_t *len_out)
{
    return bm_rte_store_get_locked(&pmi.cache_lock, &pmi.cache, rank, key, data_out, len_out);
}

/* Text room for one piece: the launcher's value limit less the "N." prefix. */
static size_t pmi_piece_chars(void)
{
    size_t room = (size_t)pmi.conn.vallen_max - 1 - 12;
    return room - room % 4; /* whole base64 groups, so pieces decode alone */
}

static bm_status_t pmi_put_locked(const char *key, const void *data, size_t len)
{
    if (strlen(key) + PMI_KEY_PREFIX_MAX > (size_t)pmi.conn.keylen_max) {
        bm_log_error("modex key '%s' is too long for the launcher's PMI keys (%d bytes)", key,
                     pmi.conn.keylen_max);
        return BM_ERR_BAD_PARAM;
    }
    size_t tlen = bm_rte_pmi_encoded_len(len);
    char *text = malloc(tlen + 1);
    char *val = malloc((size_t)pmi.conn.vallen_max + 1);
    if (!text || !val) {
        free(text);
        free(val);
        return BM_ERR_NO_MEMORY;
    }
    bm_rte_pmi_encode(data, len, text);
    size_t piece = pmi_piece_chars();
    size_t npieces = tlen ? (tlen + piece - 1) / piece : 1;
    bm_status_t rc = BM_OK;
    for (size_t i = 0; i < npieces && rc == BM_OK; i++) {
        char pkey[128];
        size_t off = i * piece, n = tlen - off < piece ? tlen - off : piece;
        if (i == 0) {
            snprintf(pkey, sizeof(pkey), "bm%d.%s", pmi.rank, key);
            snprintf(val, (size_t)pmi.conn.vallen_max + 1, "%zu.%.*s", npieces, (int)n, text);
        } else {
            snprintf(pkey, sizeof(pkey), "bm%d.%s.%zu", pmi.rank, key, i);
            snprintf(val, (size_t)pmi.conn.vallen_max + 1, "%.*s", (int)n, text + off);
        }
        rc = bm_rte_pmi_put(&pmi.conn, pkey, val);
    }
    free(text);
    free(val);
    /* Our own entry is visible to ourselves at once, as with the other backends. */
    if (rc == BM_OK)
        rc = pmi_cache_put(pmi.rank, key, data, len);
    return rc;
}

static bm_status_t pmi_put(const char *key, const void *data, size_t len)
{
    pthread_mutex_lock(&pmi.lock);
    bm_status_t rc = pmi.conn.fd >= 0 ? pmi_put_locked(key, data, len) : BM_ERR_PEER_GONE;
    pthread_mutex_unlock(&pmi.lock);
    return rc;
}

static bm_status_t pmi_commit(void)
{
    return BM_OK; /* puts went out at once */
}

static bm_status_t pmi_fence(void)
{
    pthread_mutex_lock(&pmi.lock);
    bm_status_t rc = pmi.conn.fd >= 0 ? bm_rte_pmi_fence(&pmi.conn) : BM_ERR_PEER_GONE;
    pthread_mutex_unlock(&pmi.lock);
    return rc;
}

/* Fetch every piece of (rank, key), decode and keep it in the cache. */
static bm_status_t pmi_fetch_locked(int rank, const char *key)
{
    char pkey[128];
    if (strlen(key) + PMI_KEY_PREFIX_MAX > (size_t)pmi.conn.keylen_max)
        return BM_ERR_NOT_FOUND; /* could never have been put */
    snprintf(pkey, sizeof(pkey), "bm%d.%s", rank, key);
    size_t vmax = (size_t)pmi.conn.vallen_max + 1;
    char *val = malloc(vmax);
    if (!val)
        return BM_ERR_NO_MEMORY;
    bm_status_t rc = bm_rte_pmi_get(&pmi.conn, pkey, val, vmax);
    char *dot = rc == BM_OK ? strchr(val, '.') : NULL;
    char *end = NULL;
    size_t npieces = dot ? strtoul(val, &end, 10) : 0;
    if (rc == BM_OK && (!dot || end != dot || npieces < 1 || npieces > 1u << 20))
        rc = BM_ERR_PROTOCOL;
    size_t piece = pmi_piece_chars();
    char *text = NULL;
    size_t tlen = 0;
    if (rc == BM_OK) {
        text = malloc(npieces * piece + 1);
        if (!text)
            rc = BM_ERR_NO_MEMORY;
    }
    if (rc == BM_OK) {
        tlen = strlen(dot + 1);
        memcpy(text, dot + 1, tlen);
    }
    for (size_t i = 1; i < npieces && rc == BM_OK; i++) {
        snprintf(pkey, sizeof(pkey), "bm%d.%s.%zu", rank, key, i);
        rc = bm_rte_pmi_get(&pmi.conn, pkey, val, vmax);
        if (rc == BM_ERR_NOT_FOUND || (rc == BM_OK && tlen + strlen(val) > npieces * piece))
            rc = BM_ERR_PROTOCOL; /* a piece went missing or grew */
        if (rc == BM_OK) {
            memcpy(text + tlen, val, strlen(val));
            tlen += strlen(val);
        }
    }
    free(val);
    uint8_t *bin = NULL;
    size_t blen = 0;
    if (rc == BM_OK) {
        bin = malloc(tlen * 3 / 4 + 1);
        if (!bin)
            rc = BM_ERR_NO_MEMORY;
        else if (bm_rte_pmi_decode(text, tlen, bin, &blen) != BM_OK)
            rc = BM_ERR_PROTOCOL;
    }
    free(text);
    if (rc == BM_OK)
        rc = pmi_cache_put(rank, key, bin, blen);
    else if (rc == BM_ERR_PROTOCOL)
        bm_log_error("rank %d's modex entry '%s' in the launcher's PMI key-value space is "
                     "damaged",
                     rank, key);
    free(bin);
    return rc;
}

static bm_status_t pmi_get(int rank, const char *key, const void **data_out, size_t *len_out)
{
    bm_status_t rc = pmi_cache_get(rank, key, data_out, len_out);
    if (rc != BM_ERR_NOT_FOUND || rank == pmi.rank)
        return rc;
    pthread_mutex_lock(&pmi.lock);
    /* Another thread may have fetched it while this one waited. */
    rc = pmi_cache_get(rank, key, data_out, len_out);
    if (rc == BM_ERR_NOT_FOUND && pmi.conn.fd >= 0) {
        rc = pmi_fetch_locked(rank, key);
        if (rc == BM_OK)
            rc = pmi_cache_get(rank, key, data_out, len_out);
    }
    pthread_mutex_unlock(&pmi.lock);
    return rc;
}

/* The cache alone: a peer's entry not fetched yet would need the launcher,
 * which may be inside a fence for as long as the slowest rank takes. */
static bm_status_t pmi_get_local(int rank, const char *key, const void **data_out, size_t *len_out)
{
    bm_status_t rc = pmi_cache_get(rank, key, data_out, len_out);
    return rc == BM_ERR_NOT_FOUND && rank != pmi.rank ? BM_ERR_BUSY : rc;
}

__attribute__((noreturn)) static void pmi_abort(int exit_code, const char *message)
{
    /* Neither hydra nor Slurm prints an aborting rank's message: say it here. */
    fprintf(stderr, "bitmover: rank %d aborting (exit code %d): %s\n", pmi.rank, exit_code,
            message);
    bm_rte_drain_output(1000);
    if (pthread_mutex_trylock(&pmi.lock) == 0) {
        bm_rte_pmi_abort(&pmi.conn, exit_code, message);
        pthread_mutex_unlock(&pmi.lock);
    }
    bm_rte_run_at_exit();
    _exit(exit_code);
}

static int pmi_node_of(int rank)
{
    return pmi.node_of && rank >= 0 && rank < pmi.size ? pmi.node_of[rank] : -1;
}

const struct bm_rte_backend_ops bm_rte_pmi_ops = {
    .name = "pmi",
    .detect = pmi_detect,
    .init = pmi_init,
    .finalize = pmi_finalize,
    .put = pmi_put,
    .commit = pmi_commit,
    .fence = pmi_fence,
    .get = pmi_get,
    .get_local = pmi_get_local,
    .abort = pmi_abort,
    .node_of = pmi_node_of,
};
