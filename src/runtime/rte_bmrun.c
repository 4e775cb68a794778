/* bmrun backend: the client side of bmrun's key-value service. bmrun gives
 * each rank its identity and the service's addresses and secret in BMRUN_*
 * variables. At init the rank connects (trying each published address in
 * turn), presents the secret, and receives the node index of every rank.
 * Puts are buffered locally and sent with the next fence; the fence reply
 * carries every rank's entries of that epoch, so gets are local lookups
 * afterwards. Start-up exchanges are small (a few addresses per rank), which
 * is why a full collection beats one round trip per get.
 *
 * Two locks: lock serialises the conversation with bmrun (the connection,
 * the pending puts, the epoch) and is held across a whole fence; store_lock
 * guards only the store, taken for each lookup and while a fence reply is
 * copied in. A get therefore never waits for a fence in progress: MPI_Finalize
 * progresses its transports during its fence (bm_rte_barrier_progress), and
 * a path failure reported then asks for the peer's host name. */
#define BM_LOG_SUBSYS "runtime"
#include "runtime/rte_backend.h"
#include "runtime/rte_proto.h"
#include "util/log.h"
#include "util/siphash.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct {
    pthread_mutex_t lock;       /* the connection, pending, epoch */
    pthread_mutex_t store_lock; /* store (leaf: nothing is taken under it) */
    int fd;
    int rank, size;
    uint32_t epoch;
    int *node_of; /* size entries, from HELLO_ACK */
    struct bm_rte_store *store;
    uint8_t *pending; /* encoded entries not yet sent */
    size_t pending_len, pending_cap;
    char kvs[1024];
} bmr = {.lock = PTHREAD_MUTEX_INITIALIZER, .store_lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

static int bmrun_detect(void)
{
    return getenv("BMRUN_KVS") != NULL && getenv("BMRUN_RANK") != NULL;
}

static bm_status_t bmrun_env_int(const char *name, int min, int max, int *out)
{
    const char *s = getenv(name);
    if (!s || !*s) {
        bm_log_error("%s is not set: this process was not started by a complete bmrun "
                     "environment; start it with bmrun, or unset BMRUN_* to run alone",
                     name);
        return BM_ERR_BAD_PARAM;
    }
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > max) {
        bm_log_error("%s='%s' is not an integer from %d to %d (set by bmrun; was it changed?)",
                     name, s, min, max);
        return BM_ERR_BAD_PARAM;
    }
    *out = (int)v;
    return BM_OK;
}

static bm_status_t bmrun_env_str(const char *name, char *buf, size_t len)
{
    const char *s = getenv(name);
    if (!s || !*s || strlen(s) >= len) {
        bm_log_error("%s is %s: start this program with bmrun, or unset BMRUN_* to run alone", name,
                     s && *s ? "too long" : "not set");
        return BM_ERR_BAD_PARAM;
    }
    snprintf(buf, len, "%s", s);
    return BM_OK;
}

static bm_status_t bmrun_hello(const uint8_t secret[BM_RTE_SECRET_LEN])
{
    uint8_t hello[sizeof(struct bm_rte_msg_hello)];
    memcpy(hello, secret, BM_RTE_SECRET_LEN);
    bm_rte_proto_put_u32(hello + BM_RTE_SECRET_LEN, (uint32_t)bmr.rank);
    bm_rte_proto_put_u32(hello + BM_RTE_SECRET_LEN + 4, (uint32_t)getpid());
    bm_status_t rc = bm_rte_proto_send(bmr.fd, BM_RTE_MSG_HELLO, 0, hello, sizeof(hello));
    if (rc != BM_OK)
        return rc;
    struct bm_rte_msg_hdr h;
    uint8_t *payload = NULL;
    rc = bm_rte_proto_recv(bmr.fd, &h, &payload);
    if (rc != BM_OK) {
        bm_log_error("rank %d: the bmrun service at %s closed the connection during the "
                     "handshake (%s): the job secret was refused or bmrun ended",
                     bmr.rank, bmr.kvs, bm_status_str(rc));
        return rc;
    }
    if (h.type != BM_RTE_MSG_HELLO_ACK || (int)h.arg != bmr.size ||
        h.len != 4u * (uint32_t)bmr.size) {
        free(payload);
        bm_log_error("rank %d: unexpected handshake reply from bmrun (type %u, size %u, job "
                     "size %d): mismatched bmrun version?",
                     bmr.rank, h.type, h.arg, bmr.size);
        return BM_ERR_PROTOCOL;
    }
    for (int r = 0; r < bmr.size; r++)
        bmr.node_of[r] = (int)bm_rte_proto_get_u32(payload + 4 * r);
    free(payload);
    return BM_OK;
}

static bm_status_t bmrun_init(struct bm_rte_proc *proc)
{
    bm_status_t rc;
    char secret_hex[2 * BM_RTE_SECRET_LEN + 8];
    uint8_t secret[BM_RTE_SECRET_LEN];
    if ((rc = bmrun_env_int("BMRUN_SIZE", 1, INT_MAX, &proc->size)) != BM_OK ||
        (rc = bmrun_env_int("BMRUN_RANK", 0, proc->size - 1, &proc->rank)) != BM_OK ||
        (rc = bmrun_env_int("BMRUN_LOCAL_SIZE", 1, proc->size, &proc->local_size)) != BM_OK ||
        (rc = bmrun_env_int("BMRUN_LOCAL_RANK", 0, proc->local_size - 1, &proc->local_rank)) !=
            BM_OK ||
        (rc = bmrun_env_int("BMRUN_NUM_NODES", 1, proc->size, &proc->num_nodes)) != BM_OK ||
        (rc = bmrun_env_int("BMRUN_NODE", 0, proc->num_nodes - 1, &proc->node)) != BM_OK ||
        (rc = bmrun_env_str("BMRUN_JOBID", proc->jobid, sizeof(proc->jobid))) != BM_OK ||
        (rc = bmrun_env_str("BMRUN_KVS", bmr.kvs, sizeof(bmr.kvs))) != BM_OK ||
        (rc = bmrun_env_str("BMRUN_SECRET", secret_hex, sizeof(secret_hex))) != BM_OK)
        return rc;
    if (bm_rte_proto_secret_from_hex(secret_hex, secret) != BM_OK) {
        bm_log_error("BMRUN_SECRET is not 64 hex digits (set by bmrun; was it changed?)");
        return BM_ERR_BAD_PARAM;
    }
    bm_util_siphash_derive(secret, sizeof(secret), "bitmover job key", proc->job_key);
    proc->has_job_key = true;
    const char *app = getenv("BMRUN_APPNUM"); /* absent: one program */
    proc->appnum = app ? atoi(app) : 0;
    if (proc->appnum < 0)
        proc->appnum = 0;
    const char *host = getenv("BMRUN_HOSTNAME");
    if (host && *host)
        snprintf(proc->hostname, sizeof(proc->hostname), "%s", host);
    else if (gethostname(proc->hostname, sizeof(proc->hostname)) != 0)
        snprintf(proc->hostname, sizeof(proc->hostname), "localhost");
    proc->hostname[sizeof(proc->hostname) - 1] = '\0';

    bmr.rank = proc->rank;
    bmr.size = proc->size;
    bmr.epoch = 0;
    snprintf(proc->via, sizeof(proc->via), "bmrun key-value service");
    bmr.node_of = calloc((size_t)proc->size, sizeof(int));
    bmr.store = bm_rte_store_new(proc->size);
    if (!bmr.node_of || !bmr.store) {
        rc = BM_ERR_NO_MEMORY;
        goto err_free;
    }
    rc = bm_rte_net_connect_list(bmr.kvs, bm_rte_config_get()->connect_timeout_ms, &bmr.fd);
    if (rc != BM_OK) {
        bm_log_error("rank %d on %s: cannot connect to the bmrun service at any of %s "
                     "(%s); check that bmrun is still running and that this host can reach "
                     "it (firewall, BM_RTE_CONNECT_TIMEOUT)",
                     proc->rank, proc->hostname, bmr.kvs, strerror(errno));
        goto err_free;
    }
    rc = bmrun_hello(secret);
    if (rc != BM_OK)
        goto err_close;
    return BM_OK;
err_close:
    close(bmr.fd);
    bmr.fd = -1;
err_free:
    free(bmr.node_of);
    bmr.node_of = NULL;
    bm_rte_store_free(bmr.store);
    bmr.store = NULL;
    return rc;
}

static void bmrun_finalize(void)
{
    if (bmr.fd >= 0) {
        bm_rte_proto_send(bmr.fd, BM_RTE_MSG_BYE, 0, NULL, 0);
        close(bmr.fd);
        bmr.fd = -1;
    }
    free(bmr.node_of);
    bmr.node_of = NULL;
    pthread_mutex_lock(&bmr.store_lock);
    bm_rte_store_free(bmr.store);
    bmr.store = NULL;
    pthread_mutex_unlock(&bmr.store_lock);
    free(bmr.pending);
    bmr.pending = NULL;
    bmr.pending_len = bmr.pending_cap = 0;
}

static bm_status_t bmrun_put(const char *key, const void *data, size_t len)
{
    size_t keylen = strlen(key);
    size_t need = bm_rte_proto_kv_size(keylen, len);
    pthread_mutex_lock(&bmr.lock);
    bm_status_t rc = BM_OK;
    if (len > BM_RTE_MSG_MAX / 2 || bmr.pending_len + need > BM_RTE_MSG_MAX) {
        rc = BM_ERR_BAD_PARAM;
        goto out;
    }
    if (bmr.pending_len + need > bmr.pending_cap) {
        size_t cap = bmr.pending_cap ? bmr.pending_cap : 1024;
        while (cap < bmr.pending_len + need)
            cap *= 2;
        uint8_t *n = realloc(bmr.pending, cap);
        if (!n) {
            rc = BM_ERR_NO_MEMORY;
            goto out;
        }
        bmr.pending = n;
        bmr.pending_cap = cap;
    }
    bmr.pending_len += bm_rte_proto_kv_encode(bmr.pending + bmr.pending_len, (uint32_t)bmr.rank,
                                              key, keylen, data, len);
    /* Our own entry is visible to ourselves at once, as with the singleton. */
    pthread_mutex_lock(&bmr.store_lock);
    rc = bm_rte_store_put(bmr.store, bmr.rank, key, keylen, data, len);
    pthread_mutex_unlock(&bmr.store_lock);
out:
    pthread_mutex_unlock(&bmr.lock);
    return rc;
}

static bm_status_t bmrun_commit(void)
{
    return BM_OK;
}

static bm_status_t bmrun_fence_locked(void)
{
    uint32_t epoch = ++bmr.epoch;
    bm_status_t rc =
        bm_rte_proto_send(bmr.fd, BM_RTE_MSG_FENCE, epoch, bmr.pending, bmr.pending_len);
    if (rc != BM_OK)
        goto err_lost;
    bmr.pending_len = 0;
    for (;;) {
        struct bm_rte_msg_hdr h;
        uint8_t *payload = NULL;
        rc = bm_rte_proto_recv(bmr.fd, &h, &payload);
        if (rc != BM_OK)
            goto err_lost;
        if (h.type != BM_RTE_MSG_FENCE_DONE || h.arg != epoch) {
            bm_log_warn("rank %d: ignoring unexpected message type %u from bmrun in fence %u",
                        bmr.rank, h.type, epoch);
            free(payload);
            continue;
        }
        size_t off = 0;
        struct bm_rte_kv_view kv;
        pthread_mutex_lock(&bmr.store_lock);
        while ((rc = bm_rte_proto_kv_next(payload, h.len, &off, &kv)) == BM_OK) {
            if ((int)kv.rank == bmr.rank || kv.rank >= (uint32_t)bmr.size)
                continue;
            rc = bm_rte_store_put(bmr.store, (int)kv.rank, kv.key, kv.keylen, kv.val, kv.vallen);
            if (rc != BM_OK)
                break;
        }
        pthread_mutex_unlock(&bmr.store_lock);
        free(payload);
        if (rc == BM_ERR_NOT_FOUND)
            return BM_OK;
        bm_log_error("rank %d: malformed fence reply from bmrun: %s", bmr.rank, bm_status_str(rc));
        return rc;
    }
err_lost:
    bm_log_error("rank %d: lost the connection to bmrun during fence %u (%s): bmrun ended or "
                 "the job is being stopped",
                 bmr.rank, epoch, bm_status_str(rc));
    return BM_ERR_PEER_GONE;
}

static bm_status_t bmrun_fence(void)
{
    pthread_mutex_lock(&bmr.lock);
    bm_status_t rc = bmr.fd >= 0 ? bmrun_fence_locked() : BM_ERR_PEER_GONE;
    pthread_mutex_unlock(&bmr.lock);
    return rc;
}

/* Never waits for a fence (store_lock only): see the file's opening. */
static bm_status_t bmrun_get(int rank, const char *key, const void **data_out, size_t *len_out)
{
    return bm_rte_store_get_locked(&bmr.store_lock, &bmr.store, rank, key, data_out, len_out);
}

__attribute__((noreturn)) static void bmrun_abort(int exit_code, const char *message)
{
    size_t len = strlen(message);
    if (len > 65536)
        len = 65536;
    bool told = false;
    if (bmr.fd >= 0 &&
        bm_rte_proto_send(bmr.fd, BM_RTE_MSG_ABORT, (uint32_t)exit_code, message, len) == BM_OK) {
        /* Wait (briefly) until bmrun has printed the message, so that it is
         * reported as an abort and not as a rank dying with exit_code. */
        struct pollfd pfd = {.fd = bmr.fd, .events = POLLIN};
        for (int i = 0; i < 50 && !told; i++) {
            if (poll(&pfd, 1, 100) <= 0)
                continue;
            struct bm_rte_msg_hdr h;
            uint8_t *payload = NULL;
            if (bm_rte_proto_recv(bmr.fd, &h, &payload) != BM_OK)
                break;
            told = h.type == BM_RTE_MSG_ABORT_ACK;
            free(payload);
        }
    }
    if (!told)
        fprintf(stderr, "bitmover: rank %d aborting (exit code %d): %s\n", bmr.rank, exit_code,
                message);
    bm_rte_run_at_exit();
    _exit(exit_code);
}

static int bmrun_node_of(int rank)
{
    return bmr.node_of && rank >= 0 && rank < bmr.size ? bmr.node_of[rank] : -1;
}

const struct bm_rte_backend_ops bm_rte_bmrun_ops = {
    .name = "bmrun",
    .detect = bmrun_detect,
    .init = bmrun_init,
    .finalize = bmrun_finalize,
    .put = bmrun_put,
    .commit = bmrun_commit,
    .fence = bmrun_fence,
    .get = bmrun_get,
    .abort = bmrun_abort,
    .node_of = bmrun_node_of,
};
