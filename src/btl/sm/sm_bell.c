/* The sm doorbell: how a process that sleeps (BM_PML_WAIT_MODE=block, the
 * PML's progress thread; btl.h "Sleeping") is woken when a local peer
 * writes to it. Each process binds a Linux abstract-namespace datagram
 * socket named after the job and its rank (nothing on the file system to
 * clean up; it goes with the process); its descriptor is the component's
 * wait descriptor. Before sleeping, the owner sets bell_armed in its
 * segment and then looks at its fast boxes and FIFO once more; a sender,
 * after publishing a message or giving a fragment back, looks at the
 * receiver's bell_armed and, when it is set, clears it and sends one byte.
 * The owner's store and later loads and the sender's publication and later
 * load are each separated by a full fence, so that either the owner sees
 * the message before sleeping or the sender sees the flag (Dekker's
 * argument): no message is left for a sleeper to miss. Clearing the flag
 * with an exchange means one byte per sleep, however many senders.
 *
 * A process that may sleep (init args->sleepers: BM_PML_WAIT_MODE=block,
 * MPI_THREAD_MULTIPLE's default, the progress thread) says so in its
 * segment (bell_sleeper) before publishing its address; its peers read it
 * at add_procs and only then look at its flag after each send (one fence
 * and one load of a line the receiver rarely writes). Sends to a peer that
 * never sleeps cost one predictable branch, and processes of one job may
 * differ. */
#define BM_LOG_SUBSYS "btl/sm"
#include "btl/sm/sm.h"
#include "runtime/rte.h"
#include "util/log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* The doorbell address of rank r: "\0bm-<jobid>-sm-bell-<r>". */
static bool bell_addr(int rank, struct sockaddr_un *sa, socklen_t *len_out)
{
    char what[32], name[sizeof(sa->sun_path) - 1];
    snprintf(what, sizeof(what), "sm-bell-%d", rank);
    if (bm_rte_job_name(what, name, sizeof(name)) != BM_OK)
        return false;
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    size_t n = strlen(name);
    memcpy(sa->sun_path + 1, name, n); /* sun_path[0] = 0: the abstract namespace */
    *len_out = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
    return true;
}

bm_status_t bm_btl_sm_bell_open(struct bm_btl_sm_module *sm)
{
    struct sockaddr_un sa;
    socklen_t len;
    sm->bell_rx = sm->bell_tx = -1;
    if (!bell_addr(sm->rank, &sa, &len))
        return BM_ERR_TRUNCATE;
    sm->bell_rx = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (sm->bell_rx < 0 || bind(sm->bell_rx, (struct sockaddr *)&sa, len) != 0) {
        bm_log_warn("cannot open the shared-memory doorbell (%s): a waiting process will "
                    "poll in short naps instead of sleeping until a local peer writes",
                    strerror(errno));
        bm_btl_sm_bell_close(sm);
        return BM_ERR_SYSTEM;
    }
    sm->bells = true;
    sm->ctl->bell_sleeper = 1;
    return BM_OK;
}

void bm_btl_sm_bell_close(struct bm_btl_sm_module *sm)
{
    if (sm->bell_rx >= 0)
        close(sm->bell_rx);
    if (sm->bell_tx >= 0)
        close(sm->bell_tx);
    sm->bell_rx = sm->bell_tx = -1;
    sm->bells = false;
}

void bm_btl_sm_bell_peer(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep)
{
    ep->bell_ring = false;
    if (!ep->ctl->bell_sleeper || !bell_addr(ep->rank, &ep->bell, &ep->bell_len))
        return;
    if (sm->bell_tx < 0)
        sm->bell_tx = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (sm->bell_tx < 0) {
        bm_log_warn("cannot open a socket to ring rank %d's doorbell (%s): it will wake from "
                    "its naps only",
                    ep->rank, strerror(errno));
        return;
    }
    ep->bell_ring = true;
}

void bm_btl_sm_bell_ring(struct bm_btl_sm_module *sm, struct bm_btl_sm_endpoint *ep)
{
    _Atomic uint32_t *armed = &ep->ctl->bell_armed;
    if (!atomic_exchange_explicit(armed, 0, memory_order_seq_cst) || ep->bell_len == 0)
        return;
    char b = 1;
    /* A full socket buffer already holds a wake-up: EAGAIN is fine. */
    if (sendto(sm->bell_tx, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&ep->bell,
               ep->bell_len) < 0 &&
        errno != EAGAIN)
        bm_log_ratelimited(BM_LOG_DEBUG, "doorbell of rank %d: %s", ep->rank, strerror(errno));
}

/* ---- the component's wait operations --------------------------------------------- */

int bm_btl_sm_wait_fd(struct bm_btl_sm_module *sm)
{
    return sm && sm->bells ? sm->bell_rx : -1;
}

/* Anything to deliver or complete (the polls progress makes, without
 * delivering)? */
static bool sm_has_work(struct bm_btl_sm_module *sm)
{
    if ((sm->mt ? __atomic_load_n(&sm->rdma_queued, __ATOMIC_RELAXED)
                : sm->rdma_done.head != NULL) ||
        bm_btl_sm_fifo_ready(&sm->ctl->fifo, &sm->reader))
        return true;
    if (sm->use_hints) {
        for (int w = 0; w < sm->nhint_words; w++)
            if (atomic_load_explicit(&sm->hints[w], memory_order_relaxed))
                return true;
        return false;
    }
    int nrings = __atomic_load_n(&sm->nrings, __ATOMIC_ACQUIRE);
    for (int i = 0; i < nrings; i++)
        if (bm_btl_sm_fbox_ready(&sm->rings[i]->rx))
            return true;
    return false;
}

int bm_btl_sm_wait_arm(struct bm_btl_sm_module *sm, int64_t *timeout_ns)
{
    *timeout_ns = -1;
    if (!sm)
        return 0;
    if (sm->bells) {
        atomic_store_explicit(&sm->ctl->bell_armed, 1, memory_order_seq_cst);
        atomic_thread_fence(memory_order_seq_cst);
    }
    if (sm_has_work(sm)) {
        bm_btl_sm_wait_disarm(sm);
        return 1;
    }
    /* Without a doorbell a sleeper naps; with fragments out, dead peers
     * are looked for at the usual interval. */
    if (!sm->bells)
        *timeout_ns = 1000000;
    if ((__atomic_load_n(&sm->in_flight, __ATOMIC_RELAXED) > 0 ||
         __atomic_load_n(&sm->nquarantined, __ATOMIC_RELAXED) > 0) &&
        sm->config.peer_check_ms > 0) {
        int64_t t = (int64_t)sm->config.peer_check_ms * 1000000;
        if (*timeout_ns < 0 || t < *timeout_ns)
            *timeout_ns = t;
        /* The first progress call after the sleep looks (when due). */
        sm->idle_polls = 255;
    }
    return 0;
}

void bm_btl_sm_wait_disarm(struct bm_btl_sm_module *sm)
{
    if (!sm || !sm->bells)
        return;
    atomic_store_explicit(&sm->ctl->bell_armed, 0, memory_order_relaxed);
    char buf[64];
    while (recv(sm->bell_rx, buf, sizeof(buf), MSG_DONTWAIT) > 0)
        ;
}
