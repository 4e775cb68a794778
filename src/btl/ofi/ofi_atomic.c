/* Atomics of the ofi transport: each operation of the transport interface
 * mapped onto a libfabric atomic (add -> FI_SUM, and/or/xor -> FI_BAND/
 * FI_BOR/FI_BXOR, swap -> FI_ATOMIC_WRITE, min/max -> FI_MIN/FI_MAX on
 * signed types, floating add -> FI_SUM on FI_DOUBLE or FI_FLOAT,
 * compare-and-swap -> FI_CSWAP), at 64 and 32 bits. At module start every
 * (operation, size, form) is checked with fi_atomicvalid,
 * fi_fetch_atomicvalid and fi_compare_atomicvalid; a capability class is
 * advertised only when the provider can do every operation in it (the
 * interface has one flag per class), and an operation asked for outside
 * what the provider can do is refused (BM_ERR_NOT_SUPPORTED), never
 * emulated behind the caller's back. Operands, compare values and results
 * live in the request (registered memory when the provider wants local
 * registration) and the result is copied to the caller's buffer at
 * completion, which also serves 32-bit results. */
#define BM_LOG_SUBSYS "btl/ofi"
#include "btl/ofi/ofi.h"
#include "util/log.h"

#include <rdma/fi_atomic.h>
#include <rdma/fi_errno.h>
#include <string.h>

static enum fi_op ofi_amo_op(enum bm_btl_atomic_op op)
{
    switch (op) {
    case BM_BTL_ATOMIC_ADD:
    case BM_BTL_ATOMIC_FADD_DOUBLE:
        return FI_SUM;
    case BM_BTL_ATOMIC_AND:
        return FI_BAND;
    case BM_BTL_ATOMIC_OR:
        return FI_BOR;
    case BM_BTL_ATOMIC_XOR:
        return FI_BXOR;
    case BM_BTL_ATOMIC_SWAP:
        return FI_ATOMIC_WRITE;
    case BM_BTL_ATOMIC_MIN:
        return FI_MIN;
    case BM_BTL_ATOMIC_MAX:
        return FI_MAX;
    }
    return FI_ATOMIC_OP_LAST;
}

static enum fi_datatype ofi_amo_type(enum bm_btl_atomic_op op, bool is32)
{
    switch (op) {
    case BM_BTL_ATOMIC_FADD_DOUBLE:
        return is32 ? FI_FLOAT : FI_DOUBLE;
    case BM_BTL_ATOMIC_MIN:
    case BM_BTL_ATOMIC_MAX:
        return is32 ? FI_INT32 : FI_INT64;
    default:
        return is32 ? FI_UINT32 : FI_UINT64;
    }
}

void bm_btl_ofi_atomic_probe(struct bm_btl_ofi_module *m)
{
    struct bm_btl_ofi_amo_table *t = &m->amo;
    memset(t, 0, sizeof(*t));
    if (!(m->info->caps & FI_ATOMIC))
        return;
    /* shm (libfabric 1.17) crashes in its own progress (a segfault inside
     * fi_cq_read, messages of other peers corrupted before it) once atomics
     * from two or more peers reach a process: measured with the conformance
     * suite, every run at 3 and 4 ranks, none at 2 ranks or without atomics.
     * So shm offers no atomics when this node runs more than two processes;
     * put, get and messages stay. */
    const struct bm_rte_proc *me = bm_btl_rte_self(m->comp->super.rte);
    if (me && me->local_size > 2 &&
        bm_btl_ofi_provider_match("shm", m->info->fabric_attr->prov_name)) {
        bm_log_info("%s: no atomics: the shm provider crashes when atomics of several peers reach "
                    "one process (libfabric 1.17, measured with more than two processes per node)",
                    m->super.name);
        return;
    }
    struct fid_ep *ep = m->ctx[0].tx;
    for (int op = 0; op < BM_OFI_AMO_NOPS; op++)
        for (int is32 = 0; is32 < 2; is32++) {
            size_t count = 0;
            enum fi_datatype dt = ofi_amo_type((enum bm_btl_atomic_op)op, is32);
            enum fi_op fop = ofi_amo_op((enum bm_btl_atomic_op)op);
            t->plain[op][is32] = fi_atomicvalid(ep, dt, fop, &count) == 0 && count >= 1;
            count = 0;
            t->fetch[op][is32] = fi_fetch_atomicvalid(ep, dt, fop, &count) == 0 && count >= 1;
        }
    for (int is32 = 0; is32 < 2; is32++) {
        size_t count = 0;
        t->cswap[is32] =
            fi_compare_atomicvalid(ep, is32 ? FI_UINT32 : FI_UINT64, FI_CSWAP, &count) == 0 &&
            count >= 1;
    }
    /* Classes: the integer operations (add .. max), 64-bit first. */
    bool ops64 = true, fops64 = t->cswap[0], ops32 = true, fops32 = t->cswap[1];
    for (int op = BM_BTL_ATOMIC_ADD; op <= BM_BTL_ATOMIC_MAX; op++) {
        ops64 &= t->plain[op][0];
        fops64 &= t->fetch[op][0];
        ops32 &= t->plain[op][1];
        fops32 &= t->fetch[op][1];
    }
    if (ops64)
        m->super.caps |= BM_BTL_CAP_ATOMIC_OPS;
    if (ops64 && fops64)
        m->super.caps |= BM_BTL_CAP_ATOMIC_FOPS;
    if (ops64 && ops32 && (!fops64 || fops32))
        m->super.atomic_flags |= BM_BTL_ATOMIC_F_32BIT;
    const int fa = BM_BTL_ATOMIC_FADD_DOUBLE;
    bool fadd = t->plain[fa][0] && (!fops64 || t->fetch[fa][0]);
    if (m->super.atomic_flags & BM_BTL_ATOMIC_F_32BIT)
        fadd &= t->plain[fa][1] && (!fops64 || t->fetch[fa][1]);
    if (ops64 && fadd)
        m->super.atomic_flags |= BM_BTL_ATOMIC_F_FLOAT;
    /* atomic_op_n: as many elements as the request holds and the provider
     * takes in one atomic (fi_atomicvalid's count), for every operation of
     * the integer class at each size the module offers. */
    size_t nbytes = ops64 ? sizeof(((struct bm_btl_ofi_req *)0)->operand) : 0;
    for (int op = BM_BTL_ATOMIC_ADD; op <= BM_BTL_ATOMIC_MAX && nbytes; op++)
        for (int is32 = 0; is32 < ((m->super.atomic_flags & BM_BTL_ATOMIC_F_32BIT) ? 2 : 1);
             is32++) {
            size_t count = 0, w = is32 ? 4 : 8;
            if (fi_atomicvalid(ep, ofi_amo_type((enum bm_btl_atomic_op)op, is32),
                               ofi_amo_op((enum bm_btl_atomic_op)op), &count) != 0)
                count = 1;
            if (count * w < nbytes)
                nbytes = count * w;
        }
    m->super.atomic_op_n_bytes = nbytes >= 16 ? nbytes : 0;
    bm_log_debug("%s: atomics: ops64 %d fops64 %d ops32 %d fops32 %d float add %d, %zu bytes "
                 "per atomic_op_n",
                 m->super.name, ops64, fops64, ops32, fops32, fadd, m->super.atomic_op_n_bytes);
}

static bool amo_valid(const struct bm_btl_ofi_module *m, int kind, enum bm_btl_atomic_op op,
                      uint32_t flags)
{
    int is32 = (flags & BM_BTL_ATOMIC_OP_F_32BIT) ? 1 : 0;
    if (kind == BM_OFI_REQ_CSWAP)
        return m->amo.cswap[is32];
    if ((unsigned)op >= BM_OFI_AMO_NOPS)
        return false;
    return kind == BM_OFI_REQ_FAMO ? m->amo.fetch[op][is32] : m->amo.plain[op][is32];
}

static void amo_store(uint64_t *slot, uint64_t v, uint32_t flags)
{
    if (flags & BM_BTL_ATOMIC_OP_F_32BIT) {
        uint32_t v32 = (uint32_t)v;
        memcpy(slot, &v32, 4);
    } else {
        *slot = v;
    }
}

/* One atomic of any form: kind says which, the rest as the ops table. */
static int amo_start(struct bm_btl_module *mod, struct bm_btl_endpoint *bep, int kind,
                     void *local_addr, uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                     const struct bm_btl_reg_handle *remote_handle, enum bm_btl_atomic_op op,
                     uint64_t operand, const void *operands, size_t n, uint64_t compare,
                     uint32_t flags, bm_btl_rdma_cb_fn cb, void *context, void *cbdata)
{
    struct bm_btl_ofi_module *m = (struct bm_btl_ofi_module *)mod;
    struct bm_btl_ofi_endpoint *ep = (struct bm_btl_ofi_endpoint *)bep;
    const struct bm_btl_ofi_rkey *rkey = (const struct bm_btl_ofi_rkey *)remote_handle;
    if (!rkey)
        return BM_ERR_BAD_PARAM;
    if (!amo_valid(m, kind, op, flags))
        return BM_ERR_NOT_SUPPORTED;
    bool is32 = flags & BM_BTL_ATOMIC_OP_F_32BIT;
    if (remote_addr % (is32 ? 4 : 8))
        return BM_ERR_NOT_AVAILABLE;
    int rc;
    struct bm_btl_ofi_req *req =
        bm_btl_ofi_rdma_req(m, ep, kind, cb, local_addr, local_handle, context, cbdata, flags, &rc);
    if (!req)
        return rc;
    if (operands)
        memcpy(req->operand, operands, n * (is32 ? 4 : 8));
    else
        amo_store(&req->operand[0], operand, flags);
    amo_store(&req->compare, compare, flags);
    req->result = 0;
    struct fi_ioc src = {req->operand, n};
    struct fi_ioc cmp = {&req->compare, 1};
    struct fi_ioc res = {&req->result, 1};
    struct fi_rma_ioc rma = {bm_btl_ofi_remote_addr(m, rkey, remote_addr), n, rkey->key};
    void *desc = req->desc;
    struct fi_msg_atomic msg = {
        .msg_iov = &src,
        .desc = &desc,
        .iov_count = 1,
        .addr = bm_btl_ofi_context_dest(req->ctx, ep),
        .rma_iov = &rma,
        .rma_iov_count = 1,
        .datatype =
            kind == BM_OFI_REQ_CSWAP ? (is32 ? FI_UINT32 : FI_UINT64) : ofi_amo_type(op, is32),
        .op = kind == BM_OFI_REQ_CSWAP ? FI_CSWAP : ofi_amo_op(op),
        .context = &req->fctx,
    };
    uint64_t fflags = FI_COMPLETION | m->rma_flags;
    struct bm_btl_ofi_context *ctx = req->ctx;
    bm_btl_ofi_lock(ctx);
    ssize_t r;
    if (kind == BM_OFI_REQ_AMO)
        r = fi_atomicmsg(ctx->tx, &msg, fflags);
    else if (kind == BM_OFI_REQ_FAMO)
        r = fi_fetch_atomicmsg(ctx->tx, &msg, &res, &desc, 1, fflags);
    else
        r = fi_compare_atomicmsg(ctx->tx, &msg, &cmp, &desc, 1, &res, &desc, 1, fflags);
    if (r == 0)
        bm_btl_ofi_rdma_took(req);
    bm_btl_ofi_unlock(ctx);
    if (r == 0 && n > 1)
        BM_OFI_COUNT(m, amos_n);
    return bm_btl_ofi_rdma_posted(ctx, ep, req, kind, r, "an atomic operation");
}

int bm_btl_ofi_atomic_op(struct bm_btl_module *m, struct bm_btl_endpoint *ep, uint64_t remote_addr,
                         const struct bm_btl_reg_handle *remote_handle, enum bm_btl_atomic_op op,
                         uint64_t operand, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                         void *context, void *cbdata)
{
    (void)order;
    return amo_start(m, ep, BM_OFI_REQ_AMO, NULL, remote_addr, NULL, remote_handle, op, operand,
                     NULL, 1, 0, flags, cb, context, cbdata);
}

int bm_btl_ofi_atomic_fop(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                          uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                          const struct bm_btl_reg_handle *remote_handle, enum bm_btl_atomic_op op,
                          uint64_t operand, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                          void *context, void *cbdata)
{
    (void)order;
    return amo_start(m, ep, BM_OFI_REQ_FAMO, local_addr, remote_addr, local_handle, remote_handle,
                     op, operand, NULL, 1, 0, flags, cb, context, cbdata);
}

int bm_btl_ofi_atomic_cswap(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                            uint64_t remote_addr, struct bm_btl_reg_handle *local_handle,
                            const struct bm_btl_reg_handle *remote_handle, uint64_t compare,
                            uint64_t value, uint32_t flags, uint8_t order, bm_btl_rdma_cb_fn cb,
                            void *context, void *cbdata)
{
    (void)order;
    return amo_start(m, ep, BM_OFI_REQ_CSWAP, local_addr, remote_addr, local_handle, remote_handle,
                     BM_BTL_ATOMIC_SWAP, value, NULL, 1, compare, flags, cb, context, cbdata);
}

int bm_btl_ofi_atomic_op_n(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                           uint64_t remote_addr, const struct bm_btl_reg_handle *remote_handle,
                           enum bm_btl_atomic_op op, const void *operands, size_t n, uint32_t flags,
                           uint8_t order, bm_btl_rdma_cb_fn cb, void *context, void *cbdata)
{
    (void)order;
    size_t w = (flags & BM_BTL_ATOMIC_OP_F_32BIT) ? 4 : 8;
    if (n == 0 || !operands || n * w > m->atomic_op_n_bytes)
        return BM_ERR_BAD_PARAM;
    return amo_start(m, ep, BM_OFI_REQ_AMO, NULL, remote_addr, NULL, remote_handle, op, 0, operands,
                     n, 0, flags, cb, context, cbdata);
}
