/* The ofi transport's handling of the memory-registration modes that no
 * provider of this machine asks for, against a stand-in provider that
 * enforces them (a libfabric domain and endpoint whose operation tables are
 * this file's functions): libfabric 1.17's software providers never ask for
 * FI_MR_ENDPOINT, FI_MR_PROV_KEY or FI_MR_ALLOCATED (tcp;ofi_rxm, sockets,
 * udp;ofi_rxd: none; shm: FI_MR_VIRT_ADDR), while verbs, EFA, CXI and PSM3
 * do. The stand-in, like those providers:
 *   - FI_MR_PROV_KEY: chooses each key itself (ignoring the requested one),
 *     so a transport that sent its own counter as the rkey would hand
 *     peers a key that does not exist; without it, it takes the requested
 *     key and refuses one already in use (-FI_ENOKEY);
 *   - FI_MR_ENDPOINT: a registration is unusable (and counted as such)
 *     until bound to the endpoint and then enabled; enabling an unbound one
 *     fails;
 *   - FI_MR_ALLOCATED: refuses to register pages that are not mapped;
 *   - FI_MR_LOCAL: every local buffer's descriptor must be one of its
 *     registrations (checked on what bm_btl_ofi_mr_local_desc hands out);
 *   - FI_MR_VIRT_ADDR: targets are virtual addresses, otherwise offsets
 *     from the registration's first byte (bm_btl_ofi_remote_addr).
 * Also checked: FI_MR_BASIC (what BM_BTL_OFI_MR_MODE=basic asks for, the
 * mode the real providers run in under btl_conformance_ofi_*_mrbasic) means
 * provider keys, virtual addresses and allocated memory; a failed bind
 * closes the registration; every registration is closed by finalize. */
#define BM_LOG_SUBSYS "test/ofi"
#include "bm_test.h"
#include "btl/ofi/ofi.h"

#include <errno.h>
#include <rdma/fi_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE          4096
#define FAKE_KEY_BASE 0x5eed000000ull

struct fake_mr {
    struct fid_mr mr; /* first: libfabric's pointer is ours */
    uint64_t requested_key;
    bool bound, enabled;
    bool closed;
    char desc; /* &desc is the descriptor */
};

static uint64_t fake_mode;
static struct fake_mr *regs[64];
static int nregs, live, bad_binds, unmapped_refused, fail_next_bind;
static struct fid_ep fake_ep;

static int fake_mr_close(struct fid *fid)
{
    struct fake_mr *f = (struct fake_mr *)fid;
    BM_CHECK_MSG(!f->closed, "registration %p closed twice", (void *)f);
    f->closed = true;
    live--;
    return 0;
}

static int fake_mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    struct fake_mr *f = (struct fake_mr *)fid;
    if (bfid != &fake_ep.fid || flags != 0) {
        bad_binds++;
        return -FI_EINVAL;
    }
    if (fail_next_bind) {
        fail_next_bind = 0;
        return -FI_ENOMEM;
    }
    f->bound = true;
    return 0;
}

static int fake_mr_control(struct fid *fid, int command, void *arg)
{
    (void)arg;
    struct fake_mr *f = (struct fake_mr *)fid;
    if (command != FI_ENABLE || !f->bound)
        return -FI_EINVAL;
    f->enabled = true;
    return 0;
}

static struct fi_ops fake_mr_ops = {
    .size = sizeof(struct fi_ops),
    .close = fake_mr_close,
    .bind = fake_mr_bind,
    .control = fake_mr_control,
};

/* Are all pages of [buf, buf + len) mapped? */
static bool mapped(const void *buf, size_t len)
{
    uintptr_t s = (uintptr_t)buf & ~(uintptr_t)(PAGE - 1);
    uintptr_t e = ((uintptr_t)buf + len + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
    unsigned char vec[256];
    for (uintptr_t p = s; p < e; p += 256 * (uintptr_t)PAGE) {
        size_t n = e - p < 256 * (uintptr_t)PAGE ? e - p : 256 * (size_t)PAGE;
        if (mincore((void *)p, n, vec) != 0)
            return false;
    }
    return true;
}

static int fake_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
                       uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
                       void *context)
{
    (void)fid;
    (void)access;
    (void)offset;
    (void)flags;
    if ((fake_mode & FI_MR_ALLOCATED) && !mapped(buf, len)) {
        unmapped_refused++;
        return -FI_EINVAL;
    }
    if (!(fake_mode & FI_MR_PROV_KEY))
        for (int i = 0; i < nregs; i++)
            if (!regs[i]->closed && regs[i]->mr.key == requested_key)
                return -FI_ENOKEY;
    if (nregs == (int)(sizeof(regs) / sizeof(regs[0])))
        return -FI_ENOMEM;
    struct fake_mr *f = calloc(1, sizeof(*f));
    if (!f)
        return -FI_ENOMEM;
    f->mr.fid.fclass = FI_CLASS_MR;
    f->mr.fid.context = context;
    f->mr.fid.ops = &fake_mr_ops;
    f->mr.mem_desc = &f->desc;
    f->requested_key = requested_key;
    f->mr.key = (fake_mode & FI_MR_PROV_KEY) ? FAKE_KEY_BASE + (uint64_t)nregs : requested_key;
    regs[nregs++] = f;
    live++;
    *mr = &f->mr;
    return 0;
}

static struct fi_ops_mr fake_domain_mr_ops = {
    .size = sizeof(struct fi_ops_mr),
    .reg = fake_mr_reg,
};
static struct fid_domain fake_domain = {
    .fid = {.fclass = FI_CLASS_DOMAIN},
    .mr = &fake_domain_mr_ops,
};

/* A page of its own (no cache entry of another test buffer covers it). */
static char *page(void)
{
    void *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    BM_CHECK(p != MAP_FAILED);
    return p == MAP_FAILED ? NULL : p;
}

static struct fake_mr *fake_of(const struct bm_btl_ofi_mr *reg)
{
    for (int i = 0; i < nregs; i++)
        if (&regs[i]->mr == reg->mr)
            return regs[i];
    return NULL;
}

/* A module over the stand-in domain whose provider answered mode, as
 * module_open would set it up. A provider that answers FI_MR_BASIC behaves
 * as libfabric's FI_MR_BASIC_MAP says (its own keys, virtual addresses,
 * allocated memory). */
static struct bm_btl_ofi_module *fake_module(struct bm_btl_ofi_component *comp, uint64_t mode)
{
    fake_mode = mode == FI_MR_BASIC ? (FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED) : mode;
    struct bm_btl_ofi_module *m = calloc(1, sizeof(*m));
    BM_CHECK(m != NULL);
    m->comp = comp;
    pthread_mutex_init(&m->lock, NULL);
    snprintf(m->super.name, sizeof(m->super.name), "ofi:fake:mode-0x%llx",
             (unsigned long long)mode);
    m->domain = &fake_domain;
    m->ep = &fake_ep;
    m->mr_mode = bm_btl_ofi_mr_mode_bits(mode);
    m->mr_local = (m->mr_mode & FI_MR_LOCAL) != 0;
    m->software = true; /* keep cache entries without a monitor */
    BM_CHECK_EQ_INT(bm_btl_ofi_mr_init(m), BM_OK);
    return m;
}

static void fake_module_free(struct bm_btl_ofi_module *m)
{
    bm_btl_ofi_mr_fini(m);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

/* A module of a provider with every mode bit a hardware provider may set. */
static void test_hardware_modes(struct bm_btl_ofi_component *comp)
{
    uint64_t mode =
        FI_MR_PROV_KEY | FI_MR_ENDPOINT | FI_MR_ALLOCATED | FI_MR_LOCAL | FI_MR_VIRT_ADDR;
    struct bm_btl_ofi_module *m = fake_module(comp, mode);
    int first = nregs;
    char *buf = malloc(3 * PAGE);
    BM_CHECK(buf != NULL);
    struct bm_btl_ofi_handle *h = (struct bm_btl_ofi_handle *)bm_btl_ofi_register_mem(
        &m->super, NULL, buf + 100, 2 * PAGE, 0);
    BM_CHECK_MSG(h != NULL, "register_mem failed under mode 0x%llx", (unsigned long long)mode);
    if (!h)
        return;
    struct fake_mr *f = fake_of(h->reg);
    BM_CHECK(f != NULL);
    if (f) {
        /* FI_MR_PROV_KEY: peers get the provider's key, not one of ours. */
        BM_CHECK_MSG(h->rkey.key == f->mr.key && h->rkey.key >= FAKE_KEY_BASE,
                     "rkey 0x%llx is not the provider's key 0x%llx",
                     (unsigned long long)h->rkey.key, (unsigned long long)f->mr.key);
        /* FI_MR_ENDPOINT: bound to the endpoint, then enabled. */
        BM_CHECK_MSG(f->bound && f->enabled, "registration bound %d enabled %d", f->bound,
                     f->enabled);
    }
    /* FI_MR_VIRT_ADDR: the target is the address itself. */
    BM_CHECK(bm_btl_ofi_remote_addr(m, &h->rkey, (uint64_t)(uintptr_t)(buf + 500)) ==
             (uint64_t)(uintptr_t)(buf + 500));
    /* FI_MR_LOCAL: a buffer inside the handle uses its descriptor... */
    void *desc = NULL;
    struct bm_btl_ofi_mr *extra = NULL;
    BM_CHECK_EQ_INT(
        bm_btl_ofi_mr_local_desc(m, (struct bm_btl_reg_handle *)h, buf + 200, 64, &desc, &extra),
        BM_OK);
    BM_CHECK(f && desc == f->mr.mem_desc && extra == NULL);
    /* ...one outside it gets a registration of its own, bound and enabled. */
    char *other = page();
    BM_CHECK_EQ_INT(
        bm_btl_ofi_mr_local_desc(m, (struct bm_btl_reg_handle *)h, other, 64, &desc, &extra),
        BM_OK);
    BM_CHECK(extra != NULL);
    if (extra) {
        struct fake_mr *g = fake_of(extra);
        BM_CHECK(g && desc == g->mr.mem_desc && g->bound && g->enabled);
        bm_btl_ofi_mr_release(m, extra);
    }
    /* A failed bind closes the registration and fails the call. */
    char *third = page();
    int live_before = live;
    fail_next_bind = 1;
    BM_CHECK(bm_btl_ofi_mr_acquire(m, third, 16) == NULL);
    BM_CHECK_EQ_INT(live, live_before);
    BM_CHECK_EQ_INT(bm_btl_ofi_deregister_mem(&m->super, (struct bm_btl_reg_handle *)h), BM_OK);
    /* FI_MR_ALLOCATED: nothing we registered was refused as unmapped, and
     * the stand-in does refuse what is not mapped. */
    BM_CHECK_EQ_INT(unmapped_refused, 0);
    void *hole = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    BM_CHECK(hole != MAP_FAILED);
    munmap(hole, PAGE);
    BM_CHECK(bm_btl_ofi_mr_acquire(m, hole, 16) == NULL);
    BM_CHECK_EQ_INT(unmapped_refused, 1);
    BM_CHECK_EQ_INT(bad_binds, 0);
    fake_module_free(m);
    for (int i = first; i < nregs; i++)
        BM_CHECK_MSG(regs[i]->closed, "registration %d still open after finalize", i);
    BM_CHECK_EQ_INT(live, 0);
    free(buf);
    munmap(other, PAGE);
    munmap(third, PAGE);
}

/* A provider that asks for nothing: our own keys, offsets, no binding. */
static void test_no_modes(struct bm_btl_ofi_component *comp)
{
    struct bm_btl_ofi_module *m = fake_module(comp, 0);
    int first = nregs;
    char *bufs[3];
    struct bm_btl_ofi_handle *hs[3];
    for (int i = 0; i < 3; i++) {
        bufs[i] = page();
        hs[i] =
            (struct bm_btl_ofi_handle *)bm_btl_ofi_register_mem(&m->super, NULL, bufs[i], 64, 0);
        BM_CHECK(hs[i] != NULL);
    }
    for (int i = 0; i < 3 && hs[0] && hs[1] && hs[2]; i++) {
        struct fake_mr *f = fake_of(hs[i]->reg);
        BM_CHECK(f && f->requested_key != 0 && hs[i]->rkey.key == f->requested_key);
        BM_CHECK(f && !f->bound && !f->enabled);
        for (int j = 0; j < i; j++)
            BM_CHECK_MSG(hs[i]->rkey.key != hs[j]->rkey.key, "keys %d and %d are both 0x%llx", i, j,
                         (unsigned long long)hs[i]->rkey.key);
        /* No FI_MR_VIRT_ADDR: offsets from the registration's first byte. */
        BM_CHECK(hs[i]->rkey.base == (uint64_t)(uintptr_t)bufs[i]);
        BM_CHECK(bm_btl_ofi_remote_addr(m, &hs[i]->rkey, (uint64_t)(uintptr_t)bufs[i] + 40) == 40);
    }
    /* No FI_MR_LOCAL: no descriptor needed. */
    void *desc = (void *)1;
    struct bm_btl_ofi_mr *extra = (void *)1;
    BM_CHECK_EQ_INT(bm_btl_ofi_mr_local_desc(m, NULL, bufs[0], 8, &desc, &extra), BM_OK);
    BM_CHECK(desc == NULL && extra == NULL);
    for (int i = 0; i < 3; i++)
        if (hs[i])
            bm_btl_ofi_deregister_mem(&m->super, (struct bm_btl_reg_handle *)hs[i]);
    fake_module_free(m);
    for (int i = first; i < nregs; i++)
        BM_CHECK(regs[i]->closed);
    for (int i = 0; i < 3; i++)
        munmap(bufs[i], PAGE);
}

int main(void)
{
    BM_CHECK(bm_btl_ofi_mr_mode_bits(FI_MR_BASIC) ==
             (FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED));
    BM_CHECK(bm_btl_ofi_mr_mode_bits(FI_MR_SCALABLE) == 0);
    BM_CHECK(bm_btl_ofi_mr_mode_bits(FI_MR_LOCAL | FI_MR_ENDPOINT) ==
             (FI_MR_LOCAL | FI_MR_ENDPOINT));
    fake_ep.fid.fclass = FI_CLASS_EP;
    struct bm_btl_ofi_component comp;
    memset(&comp, 0, sizeof(comp));
    comp.cfg.mr_cache = true;
    comp.cfg.mr_cache_max = 8;
    test_hardware_modes(&comp);
    test_no_modes(&comp);
    /* FI_MR_BASIC as the provider answers it: provider keys, addresses. */
    struct bm_btl_ofi_module *m = fake_module(&comp, FI_MR_BASIC);
    char *buf = malloc(PAGE);
    BM_CHECK(buf != NULL);
    struct bm_btl_ofi_handle *h =
        (struct bm_btl_ofi_handle *)bm_btl_ofi_register_mem(&m->super, NULL, buf, 64, 0);
    BM_CHECK(h != NULL);
    if (h) {
        BM_CHECK(h->rkey.key >= FAKE_KEY_BASE);
        BM_CHECK(bm_btl_ofi_remote_addr(m, &h->rkey, (uint64_t)(uintptr_t)buf + 8) ==
                 (uint64_t)(uintptr_t)buf + 8);
        bm_btl_ofi_deregister_mem(&m->super, (struct bm_btl_reg_handle *)h);
    }
    fake_module_free(m);
    free(buf);
    BM_CHECK_EQ_INT(live, 0);
    for (int i = 0; i < nregs; i++)
        free(regs[i]);
    return bm_test_summary("ofi_mr_modes");
}
