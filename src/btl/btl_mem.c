/* Memory the library hands to the application (MPI_Alloc_mem), registered
 * once with every transport that needs registration before RDMA (Open MPI's
 * mpool allocating and its rcache registering). At allocation each module of
 * the open transports that advertises BM_BTL_CAP_REG_MEM and an RDMA
 * capability registers the whole block with every access (local write,
 * remote read and write, atomics); the handles live until MPI_Free_mem (or
 * until the transports close, whichever comes first). A caller about to move
 * memory with such a module asks bm_btl_base_mem_handle for the handle that
 * covers it: one-sided operations then put and get from that memory without
 * registering per operation, and a transport with a registration cache (ofi)
 * finds every later registration inside the block already made. Modules
 * that need no registration (self, sm: reg_handle_size 0) are left alone.
 *
 * Pages: the system page size, or a larger page size the caller asks for
 * (Open MPI's mpool_hints "page_size=2M"). Such a block is mapped from the
 * kernel's huge page pool (MAP_HUGETLB) when it has pages of that size;
 * otherwise it is taken from ordinary pages, aligned to the size asked for,
 * with transparent huge pages requested (madvise MADV_HUGEPAGE), and that
 * is said once at info level.
 *
 * The blocks live in one array sorted by address, under a mutex: allocation,
 * free and lookup may come from any thread. Everything here is process-wide
 * (like the application's heap), not a transport instance's state. */
#define BM_LOG_SUBSYS "btl"
#include "btl/btl.h"
#include "util/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* One block of bm_btl_base_mem_alloc. */
struct mem_block {
    uintptr_t base;
    size_t size;   /* bytes asked for */
    size_t mapped; /* bytes of the huge page mapping, 0 when from the heap */
    int nreg;
    struct {
        struct bm_btl_module *m;
        struct bm_btl_reg_handle *h;
    } reg[BM_BTL_MEM_MAX_REG];
};

static struct {
    pthread_mutex_t lock;
    struct mem_block **blocks; /* sorted by base */
    int n, cap;
    struct bm_btl_base_mem_stats stats;
    bool told_no_huge;
} mem_g = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The index of the block containing addr, or -1 (lock held). */
static int mem_find(uintptr_t addr)
{
    int lo = 0, hi = mem_g.n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        const struct mem_block *b = mem_g.blocks[mid];
        if (addr < b->base)
            hi = mid - 1;
        else if (addr >= b->base + (b->size ? b->size : 1))
            lo = mid + 1;
        else
            return mid;
    }
    return -1;
}

static bool mem_insert(struct mem_block *b)
{
    if (mem_g.n == mem_g.cap) {
        int cap = mem_g.cap ? 2 * mem_g.cap : 16;
        struct mem_block **nb = realloc(mem_g.blocks, (size_t)cap * sizeof(*nb));
        if (!nb)
            return false;
        mem_g.blocks = nb;
        mem_g.cap = cap;
    }
    int i = mem_g.n;
    while (i > 0 && mem_g.blocks[i - 1]->base > b->base) {
        mem_g.blocks[i] = mem_g.blocks[i - 1];
        i--;
    }
    mem_g.blocks[i] = b;
    mem_g.n++;
    return true;
}

/* Release a block's registrations (without the lock: a transport's lock may
 * be held by a thread in progress whose callback looks a handle up). */
static void mem_deregister(struct mem_block *b, int nreg)
{
    for (int i = 0; i < nreg; i++)
        bm_btl_deregister_mem(b->reg[i].m, b->reg[i].h);
}

static void mem_unmap(struct mem_block *b)
{
    if (b->mapped)
        munmap((void *)b->base, b->mapped);
    else
        free((void *)b->base);
}

/* Map size bytes of huge pages of page_size bytes; NULL when the kernel has none. */
static void *mem_map_huge(size_t size, size_t page_size, size_t *mapped_out)
{
    size_t len = (size + page_size - 1) & ~(page_size - 1);
    int shift = __builtin_ctzll((unsigned long long)page_size);
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (shift << MAP_HUGE_SHIFT), -1, 0);
    if (p == MAP_FAILED) {
        if (!__atomic_exchange_n(&mem_g.told_no_huge, true, __ATOMIC_RELAXED)) {
            bm_log_info("MPI_Alloc_mem: no huge pages of %zu KiB to map (%s; see "
                        "/proc/sys/vm/nr_hugepages): using ordinary pages aligned to %zu KiB with "
                        "transparent huge pages requested (said once)",
                        page_size >> 10, strerror(errno), page_size >> 10);
        }
        return NULL;
    }
    *mapped_out = len;
    return p;
}

bm_status_t bm_btl_base_mem_alloc(size_t size, size_t page_size, void **base_out)
{
    size_t sys_page = (size_t)sysconf(_SC_PAGESIZE);
    if (page_size < sys_page || (page_size & (page_size - 1)) != 0)
        page_size = sys_page;
    struct mem_block *b = calloc(1, sizeof(*b));
    if (!b)
        return BM_ERR_NO_MEMORY;
    b->size = size;
    void *p = NULL;
    if (page_size > sys_page && size > 0)
        p = mem_map_huge(size, page_size, &b->mapped);
    if (!p) {
        if (posix_memalign(&p, page_size, size ? size : 1) != 0) {
            free(b);
            return BM_ERR_NO_MEMORY;
        }
        if (page_size > sys_page)
            (void)madvise(p, size, MADV_HUGEPAGE);
    }
    b->base = (uintptr_t)p;
    /* Registration runs without the lock (mem_deregister says why). */
    struct bm_btl_module *mods[BM_BTL_MEM_MAX_REG];
    int nmods = size > 0 ? bm_btl_base_modules(mods, BM_BTL_MEM_MAX_REG) : 0;
    for (int i = 0; i < nmods; i++) {
        struct bm_btl_module *m = mods[i];
        if (!(m->caps & BM_BTL_CAP_REG_MEM) ||
            !(m->caps & (BM_BTL_CAP_RDMA_ANY & ~BM_BTL_CAP_REG_MEM)))
            continue;
        struct bm_btl_reg_handle *h =
            bm_btl_register_mem(m, NULL, p, size,
                                BM_BTL_REG_F_LOCAL_WRITE | BM_BTL_REG_F_REMOTE_READ |
                                    BM_BTL_REG_F_REMOTE_WRITE | BM_BTL_REG_F_ATOMIC);
        if (!h) {
            /* Not fatal: operations on this memory register it themselves. */
            bm_log_info("MPI_Alloc_mem: %s could not register %zu bytes at %p; operations on this "
                        "memory register it each time instead",
                        m->name, size, p);
            continue;
        }
        b->reg[b->nreg].m = m;
        b->reg[b->nreg].h = h;
        b->nreg++;
    }
    pthread_mutex_lock(&mem_g.lock);
    if (!mem_insert(b)) {
        pthread_mutex_unlock(&mem_g.lock);
        mem_deregister(b, b->nreg);
        mem_unmap(b);
        free(b);
        return BM_ERR_NO_MEMORY;
    }
    mem_g.stats.blocks++;
    mem_g.stats.handles += (uint64_t)b->nreg;
    mem_g.stats.registrations += (uint64_t)b->nreg;
    pthread_mutex_unlock(&mem_g.lock);
    *base_out = p;
    return BM_OK;
}

bm_status_t bm_btl_base_mem_free(void *base)
{
    pthread_mutex_lock(&mem_g.lock);
    int i = mem_find((uintptr_t)base);
    if (i < 0 || mem_g.blocks[i]->base != (uintptr_t)base) {
        pthread_mutex_unlock(&mem_g.lock);
        return BM_ERR_NOT_FOUND;
    }
    struct mem_block *b = mem_g.blocks[i];
    memmove(&mem_g.blocks[i], &mem_g.blocks[i + 1], (size_t)(mem_g.n - i - 1) * sizeof(b));
    mem_g.n--;
    mem_g.stats.blocks--;
    mem_g.stats.handles -= (uint64_t)b->nreg;
    pthread_mutex_unlock(&mem_g.lock);
    mem_deregister(b, b->nreg);
    mem_unmap(b);
    free(b);
    return BM_OK;
}

struct bm_btl_reg_handle *bm_btl_base_mem_handle(const struct bm_btl_module *m, const void *addr,
                                                 size_t len)
{
    struct bm_btl_reg_handle *h = NULL;
    pthread_mutex_lock(&mem_g.lock);
    int i = mem_g.n ? mem_find((uintptr_t)addr) : -1;
    if (i >= 0) {
        const struct mem_block *b = mem_g.blocks[i];
        if ((uintptr_t)addr + len <= b->base + b->size)
            for (int k = 0; k < b->nreg && !h; k++)
                if (b->reg[k].m == m)
                    h = b->reg[k].h;
    }
    if (h)
        mem_g.stats.hits++;
    pthread_mutex_unlock(&mem_g.lock);
    return h;
}

void bm_btl_base_mem_stats(struct bm_btl_base_mem_stats *out)
{
    pthread_mutex_lock(&mem_g.lock);
    *out = mem_g.stats;
    pthread_mutex_unlock(&mem_g.lock);
}

void bm_btl_base_mem_close(void)
{
    /* The blocks stay (the program owns the memory until MPI_Free_mem, and
     * a block stays valid after MPI_Finalize); their handles go with the
     * transports. Lookups after this find no handle. */
    for (;;) {
        struct mem_block *b = NULL;
        int nreg = 0;
        pthread_mutex_lock(&mem_g.lock);
        for (int i = 0; i < mem_g.n && !b; i++)
            if (mem_g.blocks[i]->nreg > 0)
                b = mem_g.blocks[i];
        if (b) {
            nreg = b->nreg;
            b->nreg = 0;
            mem_g.stats.handles -= (uint64_t)nreg;
        }
        pthread_mutex_unlock(&mem_g.lock);
        if (!b)
            return;
        mem_deregister(b, nreg);
    }
}
