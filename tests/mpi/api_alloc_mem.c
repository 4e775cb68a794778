/* MPI_Alloc_mem and MPI_Free_mem (src/mpi/alloc_mem.c, src/btl/btl_mem.c):
 * a block is registered once, at allocation, with every module of the job
 * that needs registration (BM_BTL_CAP_REG_MEM with an RDMA capability), and
 * the handle covers exactly the block; one-sided puts and gets from such
 * memory use that handle (the lookup's hit counter grows by the operations,
 * while a put from malloc'ed memory adds no hit); mpool_hints page sizes
 * give blocks aligned to them; size 0, MPI_Free_mem(NULL), a foreign or
 * twice-freed address (MPI_ERR_ARG) and an impossible size (MPI_ERR_NO_MEM,
 * through MPI_COMM_WORLD's error handler) behave as alloc_mem.c says; 4
 * threads allocating, looking up and freeing at once (MPI_THREAD_MULTIPLE)
 * leave the table as they found it.
 * Argument "reg": the job's transports include one that registers (dgram,
 * ofi), and every check of its registration must see it; "noreg": none
 * does (self, sm), and nothing may be registered. */
#include "bm_test.h"
#include "btl/btl.h"

#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The impossible size must fail as in a plain build, not stop the process. */
#if defined(__SANITIZE_ADDRESS__)
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}
#endif
#if defined(__SANITIZE_THREAD__)
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
    return "allocator_may_return_null=1";
}
#endif

static int handler_calls, handler_class;

static void count_errors(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    handler_calls++;
    MPI_Error_class(*code, &handler_class);
}

/* The modules that MPI_Alloc_mem must register with. */
static int registering(struct bm_btl_module **out, int max)
{
    struct bm_btl_module *all[BM_BTL_MEM_MAX_REG];
    int n = bm_btl_base_modules(all, BM_BTL_MEM_MAX_REG), k = 0;
    for (int i = 0; i < n && k < max; i++)
        if ((all[i]->caps & BM_BTL_CAP_REG_MEM) &&
            (all[i]->caps & (BM_BTL_CAP_PUT | BM_BTL_CAP_GET)))
            out[k++] = all[i];
    return k;
}

static void test_registration(bool want_reg)
{
    struct bm_btl_module *mods[BM_BTL_MEM_MAX_REG];
    int nmods = registering(mods, BM_BTL_MEM_MAX_REG);
    BM_CHECK_MSG(want_reg ? nmods > 0 : nmods == 0,
                 "%d modules needing registration in a job that should have %s", nmods,
                 want_reg ? "some" : "none");
    struct bm_btl_base_mem_stats s0, s1, s2;
    bm_btl_base_mem_stats(&s0);
    size_t n = 1 << 20;
    char *p = NULL;
    BM_CHECK_EQ_INT(MPI_Alloc_mem((MPI_Aint)n, MPI_INFO_NULL, &p), MPI_SUCCESS);
    BM_CHECK(p != NULL && (uintptr_t)p % (uintptr_t)sysconf(_SC_PAGESIZE) == 0);
    memset(p, 0x5a, n);
    bm_btl_base_mem_stats(&s1);
    BM_CHECK_EQ_INT((long)(s1.blocks - s0.blocks), 1);
    BM_CHECK_EQ_INT((long)(s1.handles - s0.handles), nmods);
    BM_CHECK_EQ_INT((long)(s1.registrations - s0.registrations), nmods);
    char *heap = malloc(4096);
    for (int i = 0; i < nmods; i++) {
        BM_CHECK(bm_btl_base_mem_handle(mods[i], p, n) != NULL);
        BM_CHECK(bm_btl_base_mem_handle(mods[i], p + 100, 1000) != NULL);
        BM_CHECK(bm_btl_base_mem_handle(mods[i], p + n - 1, 1) != NULL);
        BM_CHECK(bm_btl_base_mem_handle(mods[i], p + 1, n) == NULL); /* runs past the end */
        BM_CHECK(bm_btl_base_mem_handle(mods[i], p - 1, 2) == NULL);
        BM_CHECK(bm_btl_base_mem_handle(mods[i], heap, 4096) == NULL);
    }
    free(heap);
    BM_CHECK_EQ_INT(MPI_Free_mem(p), MPI_SUCCESS);
    bm_btl_base_mem_stats(&s2);
    BM_CHECK_EQ_INT((long)(s2.blocks - s0.blocks), 0);
    BM_CHECK_EQ_INT((long)(s2.handles - s0.handles), 0);
    for (int i = 0; i < nmods; i++)
        BM_CHECK(bm_btl_base_mem_handle(mods[i], p, 1) == NULL);
}

/* mpool_hints (Open MPI's key): the block is aligned to align. */
static void check_hint(const char *hint, size_t size, uintptr_t align)
{
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpool_hints", hint);
    char *p = NULL;
    BM_CHECK_EQ_INT(MPI_Alloc_mem((MPI_Aint)size, info, &p), MPI_SUCCESS);
    BM_CHECK_MSG(p != NULL && (uintptr_t)p % align == 0,
                 "mpool_hints \"%s\": %p not aligned to %lu", hint, (void *)p,
                 (unsigned long)align);
    if (p) {
        memset(p, 7, size);
        BM_CHECK_EQ_INT(MPI_Free_mem(p), MPI_SUCCESS);
    }
    MPI_Info_free(&info);
}

static void test_hints_and_errors(void)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    check_hint("page_size=2M", 3 << 20, 2u << 20);
    check_hint("mpool=hugepage", 1 << 20, 2u << 20);
    check_hint("mpool=other,page_size=64k", 100000, 64u << 10);
    check_hint("page_size=3k", 5000, page); /* not a power of two: ignored */
    check_hint("page_size=junk,color=blue", 5000, page);

    void *p = NULL, *q = NULL;
    BM_CHECK_EQ_INT(MPI_Alloc_mem(0, MPI_INFO_NULL, &p), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Alloc_mem(0, MPI_INFO_NULL, &q), MPI_SUCCESS);
    BM_CHECK(p != NULL && q != NULL && p != q);
    BM_CHECK_EQ_INT(MPI_Free_mem(p), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Free_mem(q), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Free_mem(NULL), MPI_SUCCESS);

    /* Errors go to MPI_COMM_WORLD's handler. */
    MPI_Errhandler eh;
    MPI_Comm_create_errhandler(count_errors, &eh);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh);
    char *heap = malloc(64);
    BM_CHECK_EQ_INT(MPI_Free_mem(heap), MPI_ERR_ARG);
    BM_CHECK_EQ_INT(handler_calls, 1);
    BM_CHECK_EQ_INT(handler_class, MPI_ERR_ARG);
    free(heap);
    BM_CHECK_EQ_INT(MPI_Alloc_mem(64, MPI_INFO_NULL, &p), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Free_mem(p), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Free_mem(p), MPI_ERR_ARG); /* twice */
    BM_CHECK_EQ_INT(handler_calls, 2);
    p = (void *)(uintptr_t)1;
    int rc = MPI_Alloc_mem((MPI_Aint)1 << 62, MPI_INFO_NULL, &p);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    BM_CHECK_EQ_INT(cls, MPI_ERR_NO_MEM);
    BM_CHECK_EQ_INT(handler_calls, 3);
    BM_CHECK_EQ_INT(handler_class, MPI_ERR_NO_MEM);
    BM_CHECK(p == (void *)(uintptr_t)1); /* not set on failure */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&eh);
}

/* A window over MPI_Alloc_mem memory; rank 0 puts from and gets into
 * MPI_Alloc_mem memory (and once puts from malloc'ed memory). */
static void test_rma(bool want_reg)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int n = 32768;
    unsigned char *winmem, *origin;
    BM_CHECK_EQ_INT(MPI_Alloc_mem(n, MPI_INFO_NULL, &winmem), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Alloc_mem(n, MPI_INFO_NULL, &origin), MPI_SUCCESS);
    unsigned char *heap = malloc(n);
    memset(winmem, 0, n);
    for (int i = 0; i < n; i++) {
        origin[i] = (unsigned char)(i * 7 + 1);
        heap[i] = (unsigned char)(i * 3 + 2);
    }
    MPI_Win win;
    BM_CHECK_EQ_INT(MPI_Win_create(winmem, n, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win), MPI_SUCCESS);
    struct bm_btl_base_mem_stats s0, s1, s2;
    int target = (rank + 1) % size;
    MPI_Win_fence(0, win);
    bm_btl_base_mem_stats(&s0);
    if (rank == 0)
        MPI_Put(origin, n / 2, MPI_BYTE, target, 0, n / 2, MPI_BYTE, win);
    MPI_Win_fence(0, win);
    if (rank == 0) {
        memset(origin, 0, n);
        MPI_Get(origin, n / 2, MPI_BYTE, target, 0, n / 2, MPI_BYTE, win);
    }
    MPI_Win_fence(0, win);
    bm_btl_base_mem_stats(&s1);
    if (rank == 0)
        MPI_Put(heap, n / 2, MPI_BYTE, target, n / 2, n / 2, MPI_BYTE, win);
    MPI_Win_fence(0, win);
    bm_btl_base_mem_stats(&s2);
    if (rank == 0) {
        long bad = 0;
        for (int i = 0; i < n / 2; i++)
            bad += origin[i] != (unsigned char)(i * 7 + 1);
        BM_CHECK_EQ_INT(bad, 0);
        /* One lookup hit per transport operation from MPI_Alloc_mem memory. */
        if (want_reg)
            BM_CHECK_MSG(s1.hits - s0.hits >= 2,
                         "put and get from MPI_Alloc_mem memory found its registration %llu "
                         "times (want >= 2)",
                         (unsigned long long)(s1.hits - s0.hits));
        else
            BM_CHECK_EQ_INT((long)(s1.hits - s0.hits), 0);
        BM_CHECK_EQ_INT((long)(s2.hits - s1.hits), 0); /* malloc'ed origin: no hit */
    }
    if (rank == target) {
        long bad = 0;
        for (int i = 0; i < n / 2; i++)
            bad += winmem[i] != (unsigned char)(i * 7 + 1) ||
                   winmem[n / 2 + i] != (unsigned char)((n / 2 + i) * 3 + 2);
        BM_CHECK_EQ_INT(bad, 0);
    }
    MPI_Win_free(&win);
    free(heap);
    BM_CHECK_EQ_INT(MPI_Free_mem(origin), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Free_mem(winmem), MPI_SUCCESS);
}

/* One thread's share: allocate, check the handles, free, 100 times. */
static void *churn(void *arg)
{
    long bad = 0;
    struct bm_btl_module *mods[BM_BTL_MEM_MAX_REG];
    int nmods = registering(mods, BM_BTL_MEM_MAX_REG);
    for (int i = 0; i < 100; i++) {
        char *p = NULL;
        size_t n = 4096 * (size_t)(1 + (i + (int)(intptr_t)arg) % 16);
        bad += MPI_Alloc_mem((MPI_Aint)n, MPI_INFO_NULL, &p) != MPI_SUCCESS || !p;
        if (!p)
            continue;
        p[0] = p[n - 1] = 1;
        for (int k = 0; k < nmods; k++)
            bad += bm_btl_base_mem_handle(mods[k], p + 1, n - 1) == NULL;
        bad += MPI_Free_mem(p) != MPI_SUCCESS;
    }
    return (void *)(intptr_t)bad;
}

static void test_threads(int provided)
{
    if (provided < MPI_THREAD_MULTIPLE)
        return;
    struct bm_btl_base_mem_stats s0, s1;
    bm_btl_base_mem_stats(&s0);
    pthread_t t[4];
    for (intptr_t i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, churn, (void *)i);
    long bad = 0;
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        bad += (long)(intptr_t)r;
    }
    bm_btl_base_mem_stats(&s1);
    BM_CHECK_EQ_INT(bad, 0);
    BM_CHECK_EQ_INT((long)(s1.blocks - s0.blocks), 0);
    BM_CHECK_EQ_INT((long)(s1.handles - s0.handles), 0);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    bool want_reg = argc > 1 && strcmp(argv[1], "reg") == 0;
    BM_CHECK_MSG(argc > 1 && (want_reg || strcmp(argv[1], "noreg") == 0),
                 "usage: api_alloc_mem reg|noreg");
    test_registration(want_reg);
    test_hints_and_errors();
    test_rma(want_reg);
    test_threads(provided);
    BM_CHECK_EQ_INT(provided, MPI_THREAD_MULTIPLE);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char name[64];
    snprintf(name, sizeof(name), "api_alloc_mem rank %d", rank);
    int rc = bm_test_summary(name);
    MPI_Finalize();
    return rc;
}
