/* The ofi transport's registration cache and memory monitor, in one process
 * (singleton runtime; the component is started directly, so its modules are
 * at hand without peers). Run with BM_BTL=self,ofi, the memory monitor
 * forced on (BM_BTL_OFI_MR_MONITOR=on) and local registration forced
 * (BM_BTL_OFI_MR_LOCAL=on) so that every path runs on any provider:
 *   - a buffer's registration is found again (hit), a larger one that
 *     overlaps it replaces it by their union, disjoint ones coexist;
 *   - register_mem hands out the rkey of the covering registration (base
 *     and key), and local descriptors come from the caller's handle when it
 *     covers the buffer, from the cache otherwise;
 *   - munmap, madvise(MADV_DONTNEED) and mremap of cached memory invalidate
 *     the registration (the kernel's events, read by the monitor thread),
 *     and a new mapping at the same address gets a fresh one (a miss);
 *   - free of a cached malloc'ed 1 MiB block invalidates it where the
 *     allocator really unmaps it (glibc; not ASan's, which keeps it mapped);
 *   - unused registrations beyond BM_BTL_OFI_MR_CACHE_MAX are evicted,
 *     least recently used first, and one in use is never evicted. */
#define BM_LOG_SUBSYS "test/ofi"
#include "bm_test.h"
#include "btl/ofi/ofi.h"
#include "runtime/rte.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Built with AddressSanitizer (gcc defines __SANITIZE_ADDRESS__, clang has
 * __has_feature): its allocator does not unmap freed blocks at once. */
#if defined(__SANITIZE_ADDRESS__)
#define BM_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BM_TEST_ASAN 1
#endif
#endif
#ifndef BM_TEST_ASAN
#define BM_TEST_ASAN 0
#endif

#define PAGE 4096

static struct bm_btl_ofi_module *m;

static struct bm_btl_ofi_mr *get(void *addr, size_t len)
{
    struct bm_btl_ofi_mr *r = bm_btl_ofi_mr_acquire(m, addr, len);
    BM_CHECK_MSG(r != NULL, "no registration for %zu bytes at %p", len, addr);
    return r;
}

static void *map(void *at, size_t len)
{
    void *p = mmap(at, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED_NOREPLACE : 0), -1, 0);
    BM_CHECK(p != MAP_FAILED);
    if (p == MAP_FAILED)
        return NULL;
    memset(p, 1, len);
    return p;
}

/* Whether no page of [p, p+len) is mapped any more (p page-aligned): mincore
 * fails with ENOMEM on a range that is not (fully) mapped. */
static int range_unmapped(void *p, size_t len)
{
    for (size_t off = 0; off < len; off += PAGE) {
        unsigned char vec;
        if (mincore((char *)p + off, PAGE, &vec) == 0 || errno != ENOMEM)
            return 0;
    }
    return 1;
}

/* Let the monitor apply what the kernel reported. */
static void settle(void)
{
    bm_btl_ofi_monitor_sync(m->comp->monitor);
}

static void test_hits_and_unions(void)
{
    bm_test_current = "hits and unions";
    char *a = map(NULL, 16 * PAGE);
    uint64_t hits = m->cache.hits, misses = m->cache.misses;
    struct bm_btl_ofi_mr *r1 = get(a + 100, 200);
    bm_btl_ofi_mr_release(m, r1);
    struct bm_btl_ofi_mr *r2 = get(a + 10, 50);
    BM_CHECK(r2 == r1);
    BM_CHECK_EQ_INT(m->cache.hits, hits + 1);
    BM_CHECK_EQ_INT(m->cache.misses, misses + 1);
    /* Overlapping and larger: one registration of the union replaces it. */
    struct bm_btl_ofi_mr *r3 = get(a + PAGE / 2, 3 * PAGE);
    BM_CHECK(r3 != r1);
    BM_CHECK(r3->start == (uintptr_t)a && r3->end >= (uintptr_t)a + 4 * PAGE);
    int count = m->cache.count;
    /* Disjoint: a second entry. */
    struct bm_btl_ofi_mr *r4 = get(a + 8 * PAGE, PAGE);
    BM_CHECK(r4 != r3);
    BM_CHECK_EQ_INT(m->cache.count, count + 1);
    bm_btl_ofi_mr_release(m, r2); /* r1 == r2: closed now (out of the index, unused) */
    bm_btl_ofi_mr_release(m, r3);
    bm_btl_ofi_mr_release(m, r4);
    munmap(a, 16 * PAGE);
    settle();
}

static void test_handles(void)
{
    bm_test_current = "register_mem and local descriptors";
    char *a = map(NULL, 8 * PAGE);
    struct bm_btl_reg_handle *h = bm_btl_ofi_register_mem(&m->super, NULL, a + 64, 5 * PAGE, 0);
    BM_CHECK(h != NULL);
    if (!h)
        return;
    const struct bm_btl_ofi_handle *oh = (const struct bm_btl_ofi_handle *)h;
    BM_CHECK(oh->rkey.base == (uintptr_t)a);
    BM_CHECK(oh->rkey.key == oh->reg->key);
    BM_CHECK_EQ_INT(m->super.reg_handle_size, sizeof(struct bm_btl_ofi_rkey));
    /* Offsets without FI_MR_VIRT_ADDR, addresses with it. */
    uint64_t target = bm_btl_ofi_remote_addr(m, &oh->rkey, (uint64_t)(uintptr_t)(a + 300));
    BM_CHECK_EQ_INT(target, (m->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)(a + 300) : 300);
    void *desc;
    struct bm_btl_ofi_mr *held;
    BM_CHECK_EQ_INT(bm_btl_ofi_mr_local_desc(m, h, a + PAGE, PAGE, &desc, &held), BM_OK);
    BM_CHECK(held == NULL && desc == oh->reg->desc);
    /* Beyond the handle: from the cache, with a reference. */
    BM_CHECK_EQ_INT(bm_btl_ofi_mr_local_desc(m, h, a + 6 * PAGE, PAGE, &desc, &held), BM_OK);
    BM_CHECK(held != NULL && desc == held->desc);
    bm_btl_ofi_mr_release(m, held);
    BM_CHECK_EQ_INT(bm_btl_ofi_deregister_mem(&m->super, h), BM_OK);
    munmap(a, 8 * PAGE);
    settle();
}

/* Invalidation by munmap, then a new mapping at the same address. */
static void test_unmap(void)
{
    bm_test_current = "unmap invalidates";
    char *a = map(NULL, 32 * PAGE);
    struct bm_btl_ofi_mr *r = get(a, 32 * PAGE);
    bm_btl_ofi_mr_release(m, r); /* unused, cached */
    uint64_t inval = m->cache.invalidations, misses = m->cache.misses;
    BM_CHECK(r->monitored);
    BM_CHECK_EQ_INT(munmap(a, 32 * PAGE), 0);
    settle();
    BM_CHECK_MSG(m->cache.invalidations > inval, "munmap of a cached range was not reported");
    char *b = map(a, 32 * PAGE);
    BM_CHECK(b == a);
    struct bm_btl_ofi_mr *r2 = get(b, 32 * PAGE);
    BM_CHECK_EQ_INT(m->cache.misses, misses + 1);
    bm_btl_ofi_mr_release(m, r2);

    bm_test_current = "madvise(DONTNEED) invalidates";
    inval = m->cache.invalidations;
    BM_CHECK_EQ_INT(madvise(b + 4 * PAGE, 2 * PAGE, MADV_DONTNEED), 0);
    settle();
    BM_CHECK_MSG(m->cache.invalidations > inval, "MADV_DONTNEED of a cached range not reported");
    misses = m->cache.misses;
    r2 = get(b, PAGE);
    BM_CHECK_EQ_INT(m->cache.misses, misses + 1);
    bm_btl_ofi_mr_release(m, r2);

    bm_test_current = "mremap invalidates";
    inval = m->cache.invalidations;
    void *c = mremap(b, 32 * PAGE, 64 * PAGE, MREMAP_MAYMOVE);
    BM_CHECK(c != MAP_FAILED);
    settle();
    BM_CHECK_MSG(m->cache.invalidations > inval, "mremap of a cached range not reported");
    munmap(c, 64 * PAGE);

    bm_test_current = "free of a malloc'ed block invalidates";
    /* The unmap path itself is checked above with mmap/munmap'ed memory;
     * this checks what users do: cache a malloc'ed buffer, then free it. The
     * monitor can only see what the allocator does to the mapping: glibc
     * serves 1 MiB (above its mmap threshold) from its own mapping and free
     * unmaps it, but ASan's allocator keeps freed blocks mapped in its
     * quarantine (to catch use after free), and a tuned glibc
     * (MALLOC_MMAP_THRESHOLD_) may keep them in the heap. So whether free
     * unmapped is asked of the kernel (mincore fails with ENOMEM on an
     * unmapped range): if it did, the monitor must have reported it; if not,
     * the registration must still be there (memory still mapped is still
     * registered correctly). Without ASan the unmap is required, so that
     * this check cannot silently stop running. */
    inval = m->cache.invalidations;
    size_t big = 1 << 20;
    char *x = malloc(big);
    BM_CHECK(x != NULL);
    memset(x, 2, big);
    r = get(x, big);
    bm_btl_ofi_mr_release(m, r);
    uintptr_t first = ((uintptr_t)x + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
    size_t span = ((uintptr_t)x + big - first) & ~(size_t)(PAGE - 1);
    free(x);
    int unmapped = range_unmapped((void *)first, span);
    settle();
#if BM_TEST_ASAN
    if (!unmapped)
        printf("ofi_mr_test: ASan's allocator kept the freed 1 MiB block mapped (quarantine): "
               "free-unmaps-memory not exercised, munmap above was\n");
#else
    BM_CHECK_MSG(unmapped, "free of a 1 MiB block did not unmap it (allocator tuned?)");
#endif
    if (unmapped)
        BM_CHECK_MSG(m->cache.invalidations > inval, "free of a cached 1 MiB block not reported");
    else
        BM_CHECK_MSG(m->cache.invalidations == inval,
                     "a registration was invalidated though free kept its memory mapped");
}

static void test_eviction(void)
{
    bm_test_current = "eviction";
    int max = m->comp->cfg.mr_cache_max;
    int n = max + 6;
    char *a = map(NULL, (size_t)(2 * n) * PAGE);
    struct bm_btl_ofi_mr *kept = get(a, PAGE); /* in use throughout: never evicted */
    uint64_t ev = m->cache.evictions;
    for (int i = 1; i < n; i++) {
        struct bm_btl_ofi_mr *r = get(a + (size_t)(2 * i) * PAGE, PAGE);
        bm_btl_ofi_mr_release(m, r);
    }
    BM_CHECK_MSG(m->cache.unused <= max, "%d unused registrations kept, limit %d", m->cache.unused,
                 max);
    BM_CHECK_MSG(m->cache.evictions >= ev + (uint64_t)(n - 1 - max), "%llu evictions",
                 (unsigned long long)(m->cache.evictions - ev));
    /* The oldest unused went first; the newest is still there. */
    uint64_t hits = m->cache.hits;
    struct bm_btl_ofi_mr *r = get(a + (size_t)(2 * (n - 1)) * PAGE, PAGE);
    BM_CHECK_EQ_INT(m->cache.hits, hits + 1);
    bm_btl_ofi_mr_release(m, r);
    struct bm_btl_ofi_mr *again = get(a, PAGE);
    BM_CHECK(again == kept);
    bm_btl_ofi_mr_release(m, again);
    bm_btl_ofi_mr_release(m, kept);
    munmap(a, (size_t)(2 * n) * PAGE);
    settle();
}

int main(void)
{
    BM_CHECK_EQ_INT(bm_rte_init(), BM_OK);
    struct bm_btl_init_args args = {.rte = bm_btl_rte_default()};
    struct bm_btl_component *comp = NULL;
    char why[512] = "";
    if (bm_btl_ofi_ops.query(why, sizeof(why)) != BM_OK) {
        printf("SKIP: ofi unusable here: %s\n", why);
        return 77;
    }
    BM_CHECK_EQ_INT(bm_btl_ofi_ops.init(&args, &comp), BM_OK);
    if (!comp || comp->count < 1) {
        printf("SKIP: no ofi module\n");
        return 77;
    }
    m = (struct bm_btl_ofi_module *)comp->modules[0];
    BM_CHECK(m->super.component == comp);
    printf("ofi_mr_test: %s, mr_mode 0x%llx, local registration %s, monitor %s\n", m->super.name,
           (unsigned long long)m->mr_mode, m->mr_local ? "yes" : "no",
           m->comp->monitor ? "running" : "absent");
    BM_CHECK_MSG(m->comp->monitor != NULL, "the memory monitor did not start");
    test_hits_and_unions();
    test_handles();
    if (m->comp->monitor)
        test_unmap();
    test_eviction();
    printf("ofi_mr_test: cache %llu hits, %llu misses, %llu evictions, %llu invalidations\n",
           (unsigned long long)m->cache.hits, (unsigned long long)m->cache.misses,
           (unsigned long long)m->cache.evictions, (unsigned long long)m->cache.invalidations);
    bm_btl_ofi_ops.finalize(comp);
    bm_rte_finalize();
    return bm_test_summary("ofi_mr_test");
}
