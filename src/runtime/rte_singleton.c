/* Singleton backend: a program started without any launcher is rank 0 of a
 * 1-process job on node 0. Modex entries are kept in a local store so that a
 * transport can get its own entry back after the fence, exactly as in a real
 * job. The job id is made from the pid and random bits so that two singleton
 * runs on one machine never share shared-memory names. */
#include "runtime/rte_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

static struct bm_rte_store *singleton_store;

static int singleton_detect(void)
{
    return 1;
}

static bm_status_t singleton_init(struct bm_rte_proc *proc)
{
    singleton_store = bm_rte_store_new(1);
    if (!singleton_store)
        return BM_ERR_NO_MEMORY;
    proc->rank = 0;
    proc->size = 1;
    proc->local_rank = 0;
    proc->local_size = 1;
    proc->node = 0;
    proc->num_nodes = 1;
    if (gethostname(proc->hostname, sizeof(proc->hostname)) != 0)
        snprintf(proc->hostname, sizeof(proc->hostname), "localhost");
    proc->hostname[sizeof(proc->hostname) - 1] = '\0';
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        rnd = (uint32_t)getppid() * 2654435761u;
    snprintf(proc->jobid, sizeof(proc->jobid), "%dx%08x", (int)getpid(), rnd);
    snprintf(proc->via, sizeof(proc->via), "no launcher");
    return BM_OK;
}

static void singleton_finalize(void)
{
    bm_rte_store_free(singleton_store);
    singleton_store = NULL;
}

static bm_status_t singleton_put(const char *key, const void *data, size_t len)
{
    return bm_rte_store_put(singleton_store, 0, key, strlen(key), data, len);
}

static bm_status_t singleton_commit(void)
{
    return BM_OK;
}

static bm_status_t singleton_fence(void)
{
    return BM_OK;
}

static bm_status_t singleton_get(int rank, const char *key, const void **data_out, size_t *len_out)
{
    return bm_rte_store_get(singleton_store, rank, key, data_out, len_out);
}

__attribute__((noreturn)) static void singleton_abort(int exit_code, const char *message)
{
    fprintf(stderr, "bitmover: aborting (exit code %d): %s\n", exit_code, message);
    bm_rte_run_at_exit();
    _exit(exit_code);
}

static int singleton_node_of(int rank)
{
    return rank == 0 ? 0 : -1;
}

const struct bm_rte_backend_ops bm_rte_singleton_ops = {
    .name = "singleton",
    .detect = singleton_detect,
    .init = singleton_init,
    .finalize = singleton_finalize,
    .put = singleton_put,
    .commit = singleton_commit,
    .fence = singleton_fence,
    .get = singleton_get,
    .abort = singleton_abort,
    .node_of = singleton_node_of,
};
