/* PML requests: allocation from a table of fixed slots, so that a request
 * can be named on the wire by (slot index, generation) and validated when a
 * fragment names it, plus the owner-facing test/wait/free/cancel calls.
 * Slots live in chunks that never move, so request pointers stay valid; the
 * generation changes at every reuse, so a stale id from a finished transfer
 * never reaches a new request. */
#define BM_LOG_SUBSYS "pml"
#include "util/log.h"

#include "pml/pml_internal.h"
#include "util/mem.h"

#include <stdlib.h>
#include <string.h>

#define BM_PML_REQ_CHUNK 256

static struct bm_pml_request **req_chunks;
static uint32_t req_nchunks;
static struct bm_pml_request *req_free;

static bool request_grow(void)
{
    struct bm_pml_request **chunks = realloc(req_chunks, (req_nchunks + 1) * sizeof(*req_chunks));
    if (!chunks)
        return false;
    req_chunks = chunks;
    struct bm_pml_request *c = calloc(BM_PML_REQ_CHUNK, sizeof(*c));
    if (!c)
        return false;
    req_chunks[req_nchunks] = c;
    for (int i = BM_PML_REQ_CHUNK - 1; i >= 0; i--) {
        c[i].index = req_nchunks * BM_PML_REQ_CHUNK + (uint32_t)i;
        c[i].pend_next = req_free;
        req_free = &c[i];
    }
    req_nchunks++;
    return true;
}

struct bm_pml_request *bm_pml_request_alloc(enum bm_pml_req_kind kind)
{
    if (!req_free && !request_grow())
        return NULL;
    struct bm_pml_request *req = req_free;
    req_free = req->pend_next;
    uint32_t index = req->index;
    uint32_t gen = req->gen + 1;
    if (gen == 0)
        gen = 1;
    /* Only the common part and the kind's own part: the other kind's fields
     * are never read. Not an inline "rep stos" (util/mem.h). */
    const size_t send_at = offsetof(struct bm_pml_request, sbuf);
    const size_t recv_at = offsetof(struct bm_pml_request, rbuf);
    if (kind == BM_PML_REQ_SEND) {
        bm_util_zero(req, recv_at);
    } else {
        bm_util_zero(req, send_at);
        bm_util_zero((char *)req + recv_at, sizeof(*req) - recv_at);
        req->rget_class = -1;
    }
    req->index = index;
    req->gen = gen;
    req->kind = (uint8_t)kind;
    req->state = BM_PML_REQ_ACTIVE;
    return req;
}

static void request_release(struct bm_pml_request *req)
{
    if (req->conv.type) {
        bm_util_dtype_release((struct bm_util_dtype *)(uintptr_t)req->conv.type);
        req->conv.type = NULL;
    }
    req->state = BM_PML_REQ_FREE;
    req->pend_next = req_free;
    req_free = req;
}

void bm_pml_request_complete(struct bm_pml_request *req)
{
    req->state = BM_PML_REQ_COMPLETE;
    if (req->user_freed) {
        if (req->kind == BM_PML_REQ_SEND)
            bm_pml_g.freed_active--;
        if (req->outstanding == 0)
            request_release(req);
    }
}

void bm_pml_request_des_returned(struct bm_pml_request *req)
{
    if (req->outstanding == 0 && req->user_freed)
        request_release(req);
}

struct bm_pml_request *bm_pml_request_lookup(bm_pml_reqid_t id, enum bm_pml_req_kind kind)
{
    uint32_t index = (uint32_t)id;
    uint32_t gen = (uint32_t)(id >> 32);
    if (index / BM_PML_REQ_CHUNK >= req_nchunks)
        return NULL;
    struct bm_pml_request *req = &req_chunks[index / BM_PML_REQ_CHUNK][index % BM_PML_REQ_CHUNK];
    if (req->gen != gen || req->state != BM_PML_REQ_ACTIVE || req->kind != kind)
        return NULL;
    return req;
}

void bm_pml_request_table_fini(void)
{
    for (uint32_t i = 0; i < req_nchunks; i++)
        free(req_chunks[i]);
    free(req_chunks);
    req_chunks = NULL;
    req_nchunks = 0;
    req_free = NULL;
}

bool bm_pml_request_done(const struct bm_pml_request *req)
{
    return req->state == BM_PML_REQ_COMPLETE;
}

bool bm_pml_request_test(struct bm_pml_request *req, struct bm_pml_status *status_out)
{
    if (req->state != BM_PML_REQ_COMPLETE) {
        bm_pml_progress();
        if (req->state != BM_PML_REQ_COMPLETE)
            return false;
    }
    if (status_out)
        *status_out = req->status;
    return true;
}

void bm_pml_request_wait(struct bm_pml_request *req, struct bm_pml_status *status_out)
{
    while (req->state != BM_PML_REQ_COMPLETE)
        bm_pml_progress();
    if (status_out)
        *status_out = req->status;
}

void bm_pml_request_free(struct bm_pml_request *req)
{
    if (req->state == BM_PML_REQ_COMPLETE) {
        /* An eager send completes once its data is copied; its descriptor
         * may still be with the transport and point at the request. */
        if (req->outstanding == 0)
            request_release(req);
        else
            req->user_freed = true;
        return;
    }
    /* MPI lets the communication finish after the free: a receive still
     * matches its message. Finalize waits only for freed sends, since a
     * receive may never match. */
    req->user_freed = true;
    if (req->kind == BM_PML_REQ_SEND)
        bm_pml_g.freed_active++;
}

bm_status_t bm_pml_request_cancel(struct bm_pml_request *req)
{
    if (req->state != BM_PML_REQ_ACTIVE || req->kind != BM_PML_REQ_RECV)
        return BM_OK;
    if (!bm_pml_match_unpost(req))
        return BM_OK; /* already matched: it completes normally */
    req->status.cancelled = true;
    req->status.count = 0;
    req->status.error = BM_OK;
    bm_pml_request_complete(req);
    return BM_OK;
}
