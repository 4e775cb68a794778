/* Internal declarations of the self transport (a process sending to itself):
 * the module, its one endpoint, the fragments that carry a send from the
 * call that starts it to the progress call that delivers it, and the queue
 * of RDMA completions that are reported from progress. */
#ifndef BM_BTL_SELF_H
#define BM_BTL_SELF_H

#include "btl/btl.h"
#include "btl/btl_defer.h"
#include "util/lock.h"

#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

extern const struct bm_btl_ops bm_btl_self_ops;

struct bm_btl_self_config {
    size_t eager_limit;
    size_t max_send_size;
    int free_frags; /* fragments kept for reuse per size class */
};

/* The only endpoint: this process. */
struct bm_btl_self_endpoint {
    int rank;
};

enum bm_btl_self_class {
    BM_BTL_SELF_CLASS_EAGER, /* capacity eager_limit */
    BM_BTL_SELF_CLASS_MAX,   /* capacity max_send_size */
    BM_BTL_SELF_NCLASS,
};

/* A send in flight. des first, so a descriptor pointer is a fragment pointer. */
struct bm_btl_self_frag {
    struct bm_btl_descriptor des;
    struct bm_btl_self_frag *next; /* free list or delivery queue */
    size_t cap;                    /* bytes of buf */
    enum bm_btl_self_class cls;
    bm_btl_tag_t tag;
    bool internal; /* made by sendi: freed after delivery, no callback */
    alignas(16) unsigned char buf[];
};

struct bm_btl_self_module {
    struct bm_btl_module super;
    struct bm_btl_self_config config;
    struct bm_btl_self_endpoint endpoint;
    bool endpoint_added;
    struct bm_btl_self_frag *free_list[BM_BTL_SELF_NCLASS];
    int nfree[BM_BTL_SELF_NCLASS];
    struct bm_btl_self_frag *queue_head, *queue_tail; /* sent, not yet delivered */
    struct bm_btl_defer_queue rdma_done;              /* callbacks of finished put/get/atomics */
    /* MPI_THREAD_MULTIPLE (README "Threads"): the one endpoint's lock, a
     * leaf, held only while a fragment is taken or given back and while the
     * queue or rdma_done gains an entry or is taken whole; never across a
     * callback. The empty checks of progress and wait_arm read the heads
     * without it (relaxed; whatever they miss, the next pass sees). */
    bool mt;
    struct bm_util_lock lock;
};

/* An instance of the transport: one module. */
struct bm_btl_self_component {
    struct bm_btl_component super;
    struct bm_btl_module *modules[1];
    struct bm_btl_self_module *module;
};

/* self_rdma.c */
int bm_btl_self_put(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                    uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                    const struct bm_btl_reg_handle *remote_handle, size_t size, uint32_t flags,
                    uint8_t order, bm_btl_rdma_cb_fn cb, void *context, void *cbdata);
int bm_btl_self_get(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                    uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                    const struct bm_btl_reg_handle *remote_handle, size_t size, uint32_t flags,
                    uint8_t order, bm_btl_rdma_cb_fn cb, void *context, void *cbdata);
int bm_btl_self_atomic_op(struct bm_btl_module *m, struct bm_btl_endpoint *ep, uint64_t remote_addr,
                          const struct bm_btl_reg_handle *remote_handle, enum bm_btl_atomic_op op,
                          uint64_t operand, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                          void *context, void *cbdata);
int bm_btl_self_atomic_fop(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                           uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                           const struct bm_btl_reg_handle *remote_handle, enum bm_btl_atomic_op op,
                           uint64_t operand, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                           void *context, void *cbdata);
int bm_btl_self_atomic_cswap(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                             uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                             const struct bm_btl_reg_handle *remote_handle, uint64_t compare,
                             uint64_t value, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                             void *context, void *cbdata);
bm_status_t bm_btl_self_flush(struct bm_btl_module *m, struct bm_btl_endpoint *ep);

#endif
