/* A queue of RDMA completion callbacks to run later, for transports whose
 * put/get/atomics finish inside the call (self, sm's single copy): when the
 * caller still asks for a callback (BM_BTL_DES_F_ALWAYS_CALLBACK), it runs
 * from the transport's next progress or flush call, never inside the call
 * that started the operation, so the PML is not re-entered from its own
 * RDMA path. Not thread-safe (transports run under the PML's lock). */
#ifndef BM_BTL_DEFER_H
#define BM_BTL_DEFER_H

#include "btl/btl.h"

struct bm_btl_defer_entry;

struct bm_btl_defer_queue {
    struct bm_btl_defer_entry *head, *tail;
};

/* The completed operation's callback, queued. When no memory is left, the
 * callback runs at once instead (the operation itself is already done). */
void bm_btl_defer_push(struct bm_btl_defer_queue *q, struct bm_btl_module *m,
                       struct bm_btl_endpoint *ep, bm_btl_rdma_cb_fn cb, void *local_addr,
                       struct bm_btl_reg_handle *local_handle, void *context, void *cbdata);

/* Run (and drop) every queued callback with status; returns how many ran.
 * Callbacks queued by those callbacks run in the same call. */
int bm_btl_defer_run(struct bm_btl_defer_queue *q, struct bm_btl_module *m, int status);

/* Append src's entries to dst and empty src. dst's head is stored
 * atomically (relaxed): a transport that locks for itself splices under its
 * lock while its progress looks at the head without it (self). */
void bm_btl_defer_splice(struct bm_btl_defer_queue *dst, struct bm_btl_defer_queue *src);

/* BM_BTL_DONE after queuing the callback when flags ask for one: the tail
 * of every inline-completing RDMA operation. */
static inline int bm_btl_defer_complete(struct bm_btl_defer_queue *q, struct bm_btl_module *m,
                                        struct bm_btl_endpoint *ep, uint32_t flags,
                                        bm_btl_rdma_cb_fn cb, void *local_addr,
                                        struct bm_btl_reg_handle *local_handle, void *context,
                                        void *cbdata)
{
    if ((flags & BM_BTL_DES_F_ALWAYS_CALLBACK) && cb)
        bm_btl_defer_push(q, m, ep, cb, local_addr, local_handle, context, cbdata);
    return BM_BTL_DONE;
}

/* register_mem and deregister_mem for the same transports: they reach a
 * peer's memory without registering it (reg_handle_size 0), so every
 * registration is one shared handle that carries nothing. */
struct bm_btl_reg_handle *bm_btl_defer_register_mem(struct bm_btl_module *m,
                                                    struct bm_btl_endpoint *ep, void *base,
                                                    size_t size, uint32_t reg_flags);
bm_status_t bm_btl_defer_deregister_mem(struct bm_btl_module *m, struct bm_btl_reg_handle *handle);

#endif
