/* Single-copy get and put for the sm transport through cross-memory attach
 * (process_vm_readv / process_vm_writev): the data moves straight between
 * the two processes' own buffers, with no fragment in between. The kernel
 * allows it only between processes of the same user that are dumpable, so
 * add_procs probes it once, on one local peer (reading the peer's segment
 * header at the address it published: the rule is the same for every
 * process of the job), and the module advertises BM_BTL_CAP_GET and
 * BM_BTL_CAP_PUT only when the probe worked. Operations complete before
 * the call returns (BM_BTL_DONE); a callback asked for with
 * BM_BTL_DES_F_ALWAYS_CALLBACK runs from the next progress or flush call.
 * Remote addresses are plain virtual addresses of the peer; no registration
 * is needed (reg_handle_size 0). getv hands both piece lists of a
 * non-contiguous transfer to one process_vm_readv. */
#define BM_LOG_SUBSYS "btl/sm"
#include "btl/sm/sm.h"
#include "util/log.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

bool bm_btl_sm_cma_probe(struct bm_btl_sm_endpoint *ep, uint64_t remote_seg_addr)
{
    uint64_t magic = 0;
    struct iovec local = {&magic, sizeof(magic)};
    struct iovec remote = {(void *)(uintptr_t)remote_seg_addr, sizeof(magic)};
    ssize_t n = process_vm_readv(ep->pid, &local, 1, &remote, 1, 0);
    if (n == (ssize_t)sizeof(magic) && magic == BM_BTL_SM_MAGIC)
        return true;
    bm_log_info("single copy (process_vm_readv) to rank %d (pid %d) is not possible: %s; sm "
                "will copy through shared memory instead (processes of different users, or "
                "not dumpable)",
                ep->rank, (int)ep->pid, n < 0 ? strerror(errno) : "unexpected data");
    return false;
}

/* Under MPI_THREAD_MULTIPLE the copies run under no lock (a thread's
 * megabyte neither waits for nor holds up the others); the module's lock
 * covers what they share, the queue of callbacks and a peer's failure. */
static void sm_rdma_peer_gone(struct bm_btl_sm_endpoint *ep)
{
    bm_btl_sm_enter(ep->module);
    bm_btl_sm_peer_failed(ep->module, ep, BM_ERR_PEER_GONE,
                          "its process is gone (single-copy transfer failed)");
    bm_btl_sm_leave(ep->module);
}

static int sm_rdma_done(struct bm_btl_sm_module *sm, struct bm_btl_endpoint *ep, uint32_t flags,
                        bm_btl_rdma_cb_fn cb, void *local_addr,
                        struct bm_btl_reg_handle *local_handle, void *context, void *cbdata)
{
    bm_btl_sm_enter(sm);
    int rc = bm_btl_defer_complete(&sm->rdma_done, &sm->super, ep, flags, cb, local_addr,
                                   local_handle, context, cbdata);
    if (sm->mt && sm->rdma_done.head)
        __atomic_store_n(&sm->rdma_queued, true, __ATOMIC_RELAXED);
    bm_btl_sm_leave(sm);
    return rc;
}

/* process_vm_readv/writev say EFAULT whichever side is not mapped: read
 * one byte at the peer's address where the transfer stopped to tell which.
 * BM_ERR_PEER_FAULT when the peer's range is not readable there (a send
 * whose count runs past the end of its buffer), else BM_ERR_FAULT (ours:
 * a receive buffer that ends before its count does, or a peer range that
 * is readable but not writable). */
static int sm_cma_fault(struct bm_btl_sm_endpoint *ep, uint64_t remote_addr)
{
    unsigned char byte;
    struct iovec local = {&byte, 1};
    struct iovec remote = {(void *)(uintptr_t)remote_addr, 1};
    return process_vm_readv(ep->pid, &local, 1, &remote, 1, 0) == 1 ? BM_ERR_FAULT
                                                                    : BM_ERR_PEER_FAULT;
}

/* How a failed transfer ends: the peer's process gone, a buffer not mapped
 * (on either side), or the link. */
static int sm_cma_failed(struct bm_btl_sm_endpoint *ep, int err, uint64_t remote_addr)
{
    if (err == ESRCH) {
        sm_rdma_peer_gone(ep);
        return BM_ERR_PEER_GONE;
    }
    return err == EFAULT ? sm_cma_fault(ep, remote_addr) : BM_ERR_LINK_DOWN;
}

/* Move size bytes, looping over partial transfers (the kernel may stop at
 * a page boundary). */
static int sm_cma_move(struct bm_btl_sm_endpoint *ep, void *local_addr, uint64_t remote_addr,
                       size_t size, bool write)
{
    size_t done = 0;
    while (done < size) {
        struct iovec local = {(unsigned char *)local_addr + done, size - done};
        struct iovec remote = {(void *)(uintptr_t)(remote_addr + done), size - done};
        ssize_t n = write ? process_vm_writev(ep->pid, &local, 1, &remote, 1, 0)
                          : process_vm_readv(ep->pid, &local, 1, &remote, 1, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int err = n < 0 ? errno : EFAULT;
            int rc = sm_cma_failed(ep, err, remote_addr + done);
            bm_log_ratelimited(BM_LOG_ERROR,
                               "%s of %zu bytes between 0x%llx here and 0x%llx in rank %d (pid "
                               "%d) stopped after %zu bytes: %s%s",
                               write ? "process_vm_writev" : "process_vm_readv", size,
                               (unsigned long long)(uintptr_t)local_addr,
                               (unsigned long long)remote_addr, ep->rank, (int)ep->pid, done,
                               strerror(err),
                               rc == BM_ERR_PEER_FAULT ? " (not mapped in the peer)"
                               : rc == BM_ERR_FAULT    ? " (not mapped here)"
                                                       : "");
            return rc;
        }
        done += (size_t)n;
    }
    return BM_OK;
}

int bm_btl_sm_put(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                  uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                  const struct bm_btl_reg_handle *remote_handle, size_t size, uint32_t flags,
                  uint8_t order, bm_btl_rdma_cb_fn cb, void *context, void *cbdata)
{
    (void)remote_handle;
    (void)order;
    struct bm_btl_sm_module *sm = (struct bm_btl_sm_module *)m;
    struct bm_btl_sm_endpoint *e = (struct bm_btl_sm_endpoint *)ep;
    if (!sm->cma_ok)
        return BM_ERR_NOT_AVAILABLE;
    if (__atomic_load_n(&e->failed, __ATOMIC_RELAXED))
        return BM_ERR_PEER_GONE;
    int rc = sm_cma_move(e, local_addr, remote_addr, size, true);
    if (rc != BM_OK)
        return rc;
    return sm_rdma_done(sm, ep, flags, cb, local_addr, local_handle, context, cbdata);
}

int bm_btl_sm_get(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                  uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                  const struct bm_btl_reg_handle *remote_handle, size_t size, uint32_t flags,
                  uint8_t order, bm_btl_rdma_cb_fn cb, void *context, void *cbdata)
{
    (void)remote_handle;
    (void)order;
    struct bm_btl_sm_module *sm = (struct bm_btl_sm_module *)m;
    struct bm_btl_sm_endpoint *e = (struct bm_btl_sm_endpoint *)ep;
    if (!sm->cma_ok)
        return BM_ERR_NOT_AVAILABLE;
    if (__atomic_load_n(&e->failed, __ATOMIC_RELAXED))
        return BM_ERR_PEER_GONE;
    int rc = sm_cma_move(e, local_addr, remote_addr, size, false);
    if (rc != BM_OK)
        return rc;
    return sm_rdma_done(sm, ep, flags, cb, local_addr, local_handle, context, cbdata);
}

/* Drop the first n bytes of a piece list (after a partial transfer). */
static void iov_advance(struct iovec **v, unsigned long *cnt, size_t n)
{
    while (n > 0 && *cnt > 0) {
        if (n < (*v)->iov_len) {
            (*v)->iov_base = (char *)(*v)->iov_base + n;
            (*v)->iov_len -= n;
            return;
        }
        n -= (*v)->iov_len;
        (*v)++;
        (*cnt)--;
    }
    while (*cnt > 0 && (*v)->iov_len == 0) {
        (*v)++;
        (*cnt)--;
    }
}

int bm_btl_sm_getv(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                   const struct bm_btl_iov *local, uint32_t nlocal, const struct bm_btl_iov *remote,
                   uint32_t nremote, uint32_t flags, bm_btl_rdma_cb_fn cb, void *context,
                   void *cbdata)
{
    struct bm_btl_sm_module *sm = (struct bm_btl_sm_module *)m;
    struct bm_btl_sm_endpoint *e = (struct bm_btl_sm_endpoint *)ep;
    if (!sm->cma_ok)
        return BM_ERR_NOT_AVAILABLE;
    if (__atomic_load_n(&e->failed, __ATOMIC_RELAXED))
        return BM_ERR_PEER_GONE;
    if (nlocal > BM_BTL_IOV_MAX || nremote > BM_BTL_IOV_MAX || nlocal == 0)
        return BM_ERR_BAD_PARAM;
    struct iovec lv[BM_BTL_IOV_MAX], rv[BM_BTL_IOV_MAX];
    size_t total = 0;
    for (uint32_t i = 0; i < nlocal; i++) {
        lv[i].iov_base = (void *)(uintptr_t)local[i].addr;
        lv[i].iov_len = local[i].len;
        total += local[i].len;
    }
    for (uint32_t i = 0; i < nremote; i++) {
        rv[i].iov_base = (void *)(uintptr_t)remote[i].addr;
        rv[i].iov_len = remote[i].len;
    }
    struct iovec *l = lv, *r = rv;
    unsigned long nl = nlocal, nr = nremote;
    size_t done = 0;
    while (done < total) {
        ssize_t n = process_vm_readv(e->pid, l, nl, r, nr, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int err = n < 0 ? errno : EFAULT;
            int rc = sm_cma_failed(e, err, nr > 0 ? (uint64_t)(uintptr_t)r->iov_base : 0);
            bm_log_ratelimited(BM_LOG_ERROR,
                               "process_vm_readv of %zu bytes in %lu pieces from rank %d (pid %d) "
                               "stopped after %zu bytes: %s%s",
                               total, (unsigned long)nremote, e->rank, (int)e->pid, done,
                               strerror(err),
                               rc == BM_ERR_PEER_FAULT ? " (not mapped in the peer)"
                               : rc == BM_ERR_FAULT    ? " (not mapped here)"
                                                       : "");
            return rc;
        }
        done += (size_t)n;
        iov_advance(&l, &nl, (size_t)n);
        iov_advance(&r, &nr, (size_t)n);
    }
    return sm_rdma_done(sm, ep, flags, cb, (void *)(uintptr_t)local[0].addr, NULL, context, cbdata);
}

/* Transfers are done when their call returns, so only queued callbacks and
 * atomic requests (sm_atomic.c) remain: wait for the fragments carrying
 * those to come back, watching for a target that died meanwhile. */
bm_status_t bm_btl_sm_flush(struct bm_btl_module *m, struct bm_btl_endpoint *ep)
{
    struct bm_btl_sm_module *sm = (struct bm_btl_sm_module *)m;
    struct bm_btl_sm_endpoint *e = (struct bm_btl_sm_endpoint *)ep;
    bm_btl_defer_run(&sm->rdma_done, m, BM_OK);
    while (e ? e->amo_pending > 0 : sm->amo_pending > 0) {
        if (bm_btl_sm_poll_fifo(sm, sm->config.poll_budget) == 0)
            bm_btl_sm_peer_check(sm);
    }
    return BM_OK;
}
