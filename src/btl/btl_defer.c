/* The deferred RDMA completion queue declared in btl_defer.h: a singly
 * linked FIFO of small heap entries, in the order the operations finished. */
#include "btl/btl_defer.h"

#include <stdlib.h>

struct bm_btl_defer_entry {
    struct bm_btl_defer_entry *next;
    struct bm_btl_endpoint *ep;
    bm_btl_rdma_cb_fn cb;
    void *local_addr;
    struct bm_btl_reg_handle *local_handle;
    void *context;
    void *cbdata;
};

void bm_btl_defer_push(struct bm_btl_defer_queue *q, struct bm_btl_module *m,
                       struct bm_btl_endpoint *ep, bm_btl_rdma_cb_fn cb, void *local_addr,
                       struct bm_btl_reg_handle *local_handle, void *context, void *cbdata)
{
    struct bm_btl_defer_entry *e = malloc(sizeof(*e));
    if (!e) {
        cb(m, ep, local_addr, local_handle, context, cbdata, BM_OK);
        return;
    }
    *e = (struct bm_btl_defer_entry){NULL, ep, cb, local_addr, local_handle, context, cbdata};
    if (q->tail)
        q->tail->next = e;
    else
        q->head = e;
    q->tail = e;
}

void bm_btl_defer_splice(struct bm_btl_defer_queue *dst, struct bm_btl_defer_queue *src)
{
    if (!src->head)
        return;
    if (dst->tail)
        dst->tail->next = src->head;
    else
        __atomic_store_n(&dst->head, src->head, __ATOMIC_RELAXED);
    dst->tail = src->tail;
    *src = (struct bm_btl_defer_queue){0};
}

int bm_btl_defer_run(struct bm_btl_defer_queue *q, struct bm_btl_module *m, int status)
{
    int n = 0;
    while (q->head) {
        struct bm_btl_defer_entry *e = q->head;
        q->head = e->next;
        if (!q->head)
            q->tail = NULL;
        e->cb(m, e->ep, e->local_addr, e->local_handle, e->context, e->cbdata, status);
        free(e);
        n++;
    }
    return n;
}

static struct bm_btl_reg_handle defer_no_registration;

struct bm_btl_reg_handle *bm_btl_defer_register_mem(struct bm_btl_module *m,
                                                    struct bm_btl_endpoint *ep, void *base,
                                                    size_t size, uint32_t reg_flags)
{
    (void)m;
    (void)ep;
    (void)base;
    (void)size;
    (void)reg_flags;
    return &defer_no_registration;
}

bm_status_t bm_btl_defer_deregister_mem(struct bm_btl_module *m, struct bm_btl_reg_handle *handle)
{
    (void)m;
    (void)handle;
    return BM_OK;
}
