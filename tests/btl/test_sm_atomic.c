/* Atomics over sm, which the target process carries out in its progress
 * (src/btl/sm/sm_atomic.c). Rank 0 is the target and publishes the address
 * of its words; every other rank is an initiator.
 *   - Contention and BM_BTL_ATOMIC_F_GLOBAL: every initiator fetch-adds 1 to
 *     one word ROUNDS times while rank 0 adds 1 to the same word with its own
 *     CPU atomics between progress calls; no increment may be lost, and each
 *     initiator must see the values it fetched strictly increase.
 *   - Every operation on a word of the initiator's own, 64 and 32 bits:
 *     swap, and, or, xor, signed min and max (negative operands), floating
 *     add, compare-and-swap that succeeds and one that fails; the fetched
 *     value of each is checked against the value the previous one left.
 *   - A misaligned address is refused at once (BM_ERR_NOT_AVAILABLE).
 *   - Non-fetching operations without a callback, then flush: when flush
 *     returns all of them have been applied.
 * Initiators then send rank 0 a message saying they are done; rank 0 keeps
 * progressing until all have, and checks the final values in its memory. */
#include "bm_test.h"
#include "btl/btl.h"
#include "runtime/rte.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define ROUNDS    2000
#define NOCB_OPS  300
#define MAX_RANKS 16

/* Rank 0's memory: word 0 is shared by everyone; initiator r owns word r
 * (64-bit), w32[r] (32-bit) and nocb[r]. */
static struct target_mem {
    uint64_t w64[MAX_RANKS];
    uint32_t w32[MAX_RANKS];
    uint64_t nocb[MAX_RANKS];
} target;

static int done_msgs;
static int pending;
static int last_status;

static void on_done_msg(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata)
{
    (void)m;
    (void)d;
    (void)cbdata;
    done_msgs++;
}

static void on_amo(struct bm_btl_module *m, struct bm_btl_endpoint *ep, void *local_addr,
                   struct bm_btl_reg_handle *local_handle, void *context, void *cbdata, int status)
{
    (void)m;
    (void)ep;
    (void)local_addr;
    (void)local_handle;
    (void)context;
    (void)cbdata;
    pending--;
    last_status = status;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct bm_btl_path *path;
static uint64_t base; /* rank 0's address of target */

static void wait_all(void)
{
    double start = now_s();
    while (pending > 0 && now_s() - start < 30)
        bm_btl_base_progress();
    BM_CHECK_MSG(pending == 0, "%d atomic operations never completed", pending);
}

/* One fetching operation (op, or cswap when op < 0); returns the fetched value. */
static uint64_t fop(int op, uint64_t addr, uint64_t operand, uint64_t compare, uint32_t flags)
{
    uint64_t result = 0xdeadbeefdeadbeefull;
    struct bm_btl_module *m = path->module;
    int rc;
    pending++;
    do {
        rc = op < 0 ? m->ops->atomic_cswap(m, path->endpoint, &result, addr, NULL, NULL, compare,
                                           operand, flags, 0, on_amo, NULL, NULL)
                    : m->ops->atomic_fop(m, path->endpoint, &result, addr, NULL, NULL,
                                         (enum bm_btl_atomic_op)op, operand, flags, 0, on_amo, NULL,
                                         NULL);
        if (rc == BM_ERR_OUT_OF_RESOURCE)
            bm_btl_base_progress();
    } while (rc == BM_ERR_OUT_OF_RESOURCE);
    if (rc != BM_OK && rc != BM_BTL_DONE) {
        pending--;
        BM_CHECK_MSG(0, "atomic %d: %s", op, bm_status_str(rc));
        return result;
    }
    wait_all();
    BM_CHECK_EQ_INT(last_status, BM_OK);
    if (flags & BM_BTL_ATOMIC_OP_F_32BIT)
        result &= 0xffffffffu; /* only 4 bytes were written */
    return result;
}

static uint64_t dbl(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

static void run_contention(int me)
{
    uint64_t prev = 0;
    int increasing = 1;
    double t0 = now_s();
    for (int i = 0; i < ROUNDS; i++) {
        uint64_t v = fop(BM_BTL_ATOMIC_ADD, base + offsetof(struct target_mem, w64), 1, 0, 0);
        if (i > 0 && v <= prev)
            increasing = 0;
        prev = v;
    }
    BM_CHECK_MSG(increasing, "rank %d: fetched values of word 0 did not increase", me);
    fprintf(stderr, "rank %d: %d fetch-adds on a contended word, %.2f us each (informational)\n",
            me, ROUNDS, (now_s() - t0) * 1e6 / ROUNDS);
}

static void run_ops(int me)
{
    uint64_t a = base + offsetof(struct target_mem, w64) + 8 * (uint64_t)me;
    uint64_t a32 = base + offsetof(struct target_mem, w32) + 4 * (uint64_t)me;
    /* 64 bits: each fetched value is what the previous operation left */
    BM_CHECK_EQ_INT(fop(BM_BTL_ATOMIC_SWAP, a, 0xf0f0, 0, 0), 0);
    BM_CHECK_EQ_INT(fop(BM_BTL_ATOMIC_AND, a, 0x0ff0, 0, 0), 0xf0f0);
    BM_CHECK_EQ_INT(fop(BM_BTL_ATOMIC_OR, a, 0x000f, 0, 0), 0x00f0);
    BM_CHECK_EQ_INT(fop(BM_BTL_ATOMIC_XOR, a, 0x00ff, 0, 0), 0x00ff);
    BM_CHECK_EQ_INT(fop(BM_BTL_ATOMIC_MIN, a, (uint64_t)-5, 0, 0), 0);
    BM_CHECK_EQ_INT(fop(BM_BTL_ATOMIC_MAX, a, (uint64_t)-9, 0, 0), (uint64_t)-5);
    BM_CHECK_EQ_INT(fop(BM_BTL_ATOMIC_MAX, a, 7, 0, 0), (uint64_t)-5);
    BM_CHECK_EQ_INT(fop(BM_BTL_ATOMIC_SWAP, a, dbl(1.5), 0, 0), 7);
    BM_CHECK_EQ_INT(fop(BM_BTL_ATOMIC_FADD_DOUBLE, a, dbl(2.25), 0, 0), dbl(1.5));
    BM_CHECK_EQ_INT(fop(-1, a, 42, dbl(3.75), 0), dbl(3.75)); /* succeeds */
    BM_CHECK_EQ_INT(fop(-1, a, 43, 41, 0), 42);               /* fails: holds 42 */
    BM_CHECK_EQ_INT(fop(BM_BTL_ATOMIC_ADD, a, 0, 0, 0), 42);
    /* 32 bits: signed comparisons and no spill into the neighbouring word */
    uint32_t f32 = BM_BTL_ATOMIC_OP_F_32BIT;
    BM_CHECK_EQ_INT(fop(BM_BTL_ATOMIC_SWAP, a32, 0xfffffffe, 0, f32), 0); /* -2 */
    BM_CHECK_EQ_INT(fop(BM_BTL_ATOMIC_MIN, a32, 3, 0, f32), 0xfffffffe);
    BM_CHECK_EQ_INT(fop(BM_BTL_ATOMIC_MAX, a32, 3, 0, f32), 0xfffffffe);
    BM_CHECK_EQ_INT(fop(BM_BTL_ATOMIC_ADD, a32, 0xffffffff, 0, f32), 3);
    BM_CHECK_EQ_INT(fop(-1, a32, 100, 2, f32), 2);
    BM_CHECK_EQ_INT(fop(BM_BTL_ATOMIC_XOR, a32, 0, 0, f32), 100);
    /* misaligned: refused before anything is sent */
    struct bm_btl_module *m = path->module;
    uint64_t r;
    BM_CHECK_EQ_INT(m->ops->atomic_fop(m, path->endpoint, &r, a + 1, NULL, NULL, BM_BTL_ATOMIC_ADD,
                                       1, 0, 0, on_amo, NULL, NULL),
                    BM_ERR_NOT_AVAILABLE);
    BM_CHECK_EQ_INT(m->ops->atomic_cswap(m, path->endpoint, &r, a32 + 2, NULL, NULL, 0, 1, f32, 0,
                                         on_amo, NULL, NULL),
                    BM_ERR_NOT_AVAILABLE);
}

static void run_nocb_flush(int me)
{
    struct bm_btl_module *m = path->module;
    uint64_t a = base + offsetof(struct target_mem, nocb) + 8 * (uint64_t)me;
    for (int i = 0; i < NOCB_OPS; i++) {
        int rc;
        while ((rc = m->ops->atomic_op(m, path->endpoint, a, NULL, BM_BTL_ATOMIC_ADD, 3, 0, 0, NULL,
                                       NULL, NULL)) == BM_ERR_OUT_OF_RESOURCE)
            bm_btl_base_progress();
        BM_CHECK(rc == BM_OK || rc == BM_BTL_DONE);
    }
    BM_CHECK_EQ_INT(m->ops->flush(m, path->endpoint), BM_OK);
    /* everything was applied before flush returned: read it back */
    BM_CHECK_EQ_INT(fop(BM_BTL_ATOMIC_ADD, a, 0, 0, 0), 3u * NOCB_OPS);
}

static void target_loop(int nprocs)
{
    int local = 0;
    double start = now_s();
    while ((done_msgs < nprocs - 1 || local < ROUNDS) && now_s() - start < 60) {
        if (local < ROUNDS) {
            __atomic_fetch_add(&target.w64[0], 1, __ATOMIC_ACQ_REL);
            local++;
        }
        bm_btl_base_progress();
    }
    BM_CHECK_EQ_INT(done_msgs, nprocs - 1);
    BM_CHECK_EQ_INT(__atomic_load_n(&target.w64[0], __ATOMIC_ACQUIRE),
                    (uint64_t)ROUNDS * (uint64_t)nprocs);
    for (int r = 1; r < nprocs; r++) {
        BM_CHECK_EQ_INT(target.w64[r], 42);
        BM_CHECK_EQ_INT(target.w32[r], 100);
        BM_CHECK_EQ_INT(target.nocb[r], 3u * NOCB_OPS);
    }
    BM_CHECK_EQ_INT(target.w32[0], 0);
}

int main(void)
{
    if (bm_rte_init() != BM_OK)
        return 1;
    const struct bm_rte_proc *self = bm_rte_self();
    int me = self->rank, n = self->size;
    if (n < 2 || n > MAX_RANKS) {
        fprintf(stderr, "run with 2 to %d ranks\n", MAX_RANKS);
        return 1;
    }
    BM_CHECK_EQ_INT(bm_btl_base_open(NULL), BM_OK);
    bm_btl_base_register_recv(BM_BTL_TAG_TEST, on_done_msg, NULL);
    uint64_t addr = (uint64_t)(uintptr_t)&target;
    BM_CHECK_EQ_INT(bm_rte_modex_put("test.amo", &addr, sizeof(addr)), BM_OK);
    BM_CHECK_EQ_INT(bm_rte_modex_fence(), BM_OK);
    BM_CHECK_EQ_INT(bm_btl_base_add_procs(n), BM_OK);

    if (me == 0) {
        target_loop(n);
    } else {
        const void *data = NULL;
        size_t len = 0;
        BM_CHECK_EQ_INT(bm_rte_modex_get(0, "test.amo", &data, &len), BM_OK);
        BM_CHECK_EQ_INT(len, sizeof(base));
        memcpy(&base, data, sizeof(base));
        struct bm_btl_peer *peer = bm_btl_base_peer(0);
        BM_CHECK(peer && peer->eager.count >= 1);
        path = &peer->eager.paths[0];
        struct bm_btl_module *m = path->module;
        BM_CHECK_STR(m->ops->name, "sm");
        BM_CHECK(m->caps & BM_BTL_CAP_ATOMIC_OPS);
        BM_CHECK(m->caps & BM_BTL_CAP_ATOMIC_FOPS);
        BM_CHECK(m->atomic_flags & BM_BTL_ATOMIC_F_GLOBAL);
        BM_CHECK(m->atomic_flags & BM_BTL_ATOMIC_F_32BIT);
        run_contention(me);
        run_ops(me);
        run_nocb_flush(me);
        int rc;
        while ((rc = bm_btl_sendi(m, path->endpoint, "d", 1, NULL, 0, 0, 0, BM_BTL_TAG_TEST,
                                  NULL)) == BM_ERR_OUT_OF_RESOURCE)
            bm_btl_base_progress();
        BM_CHECK_EQ_INT(rc, BM_BTL_DONE);
    }
    /* rank 0 returns the last fragments before the barrier */
    BM_CHECK_EQ_INT(bm_rte_barrier(), BM_OK);
    bm_btl_base_close();
    bm_rte_finalize();
    char name[64];
    snprintf(name, sizeof(name), "test_sm_atomic rank %d", me);
    return bm_test_summary(name);
}
