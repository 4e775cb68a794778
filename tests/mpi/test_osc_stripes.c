/* Unit test of the stripe locks that make accumulates on elements wider
 * than 8 bytes atomic in a window's shared segment (src/mpi/win_acc.c).
 * Every process maps the segment at an address of its own, so the lock of
 * an element must depend on its place in the segment, not on its address:
 * two mappings of one segment in this process must pick the same stripe for
 * every element, and forked processes (each with the segment mapped at a
 * different address) adding long doubles to the same elements through
 * bm_osc_acc_apply must lose no addition. Choosing by address lost one
 * long-double accumulate in osc_atomic_sm_allocate_np8. */
#include "bm_test.h"
#include "mpi/win.h"
#include "util/shmseg.h"

#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define SEG_BYTES (2 * 4096)
#define ELEM_OFF  4096 /* the elements, after the stripes */
#define NELEM     4
#define NPROC     4
#define ADDS      20000

static char name[64];

static _Atomic uint32_t *stripes_at(void *base)
{
    return (_Atomic uint32_t *)base;
}

static void test_same_stripe_in_every_mapping(void)
{
    struct bm_util_shmseg a, b;
    BM_CHECK_EQ_INT(bm_util_shmseg_create(&a, name, SEG_BYTES), BM_OK);
    BM_CHECK_EQ_INT(bm_util_shmseg_attach(&b, name, SEG_BYTES), BM_OK);
    BM_CHECK(a.addr != b.addr);
    _Atomic uint32_t *sa = stripes_at(a.addr), *sb = stripes_at(b.addr);
    int differ = 0, used[BM_OSC_SHM_STRIPES] = {0}, distinct = 0;
    for (size_t off = ELEM_OFF; off < ELEM_OFF + 16 * 128; off += 16) {
        long ia = bm_osc_stripe_of(sa, (char *)a.addr + off) - sa;
        long ib = bm_osc_stripe_of(sb, (char *)b.addr + off) - sb;
        BM_CHECK(ia >= 0 && ia < BM_OSC_SHM_STRIPES);
        differ += ia != ib;
        if (ia >= 0 && ia < BM_OSC_SHM_STRIPES && !used[ia]++)
            distinct++;
    }
    BM_CHECK_MSG(differ == 0, "%d of 128 elements take different stripes in two mappings", differ);
    /* and neighbouring elements spread over the stripes */
    BM_CHECK_MSG(distinct >= BM_OSC_SHM_STRIPES / 2, "128 elements use only %d stripes", distinct);
    bm_util_shmseg_detach(&b);
    bm_util_shmseg_detach(&a);
}

/* Child k: map the segment after k pages of padding (so that every child
 * has it at another address) and add 1.0L to each element ADDS times. */
static int child(int k)
{
    void *pad = mmap(NULL, (size_t)(k + 1) * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct bm_util_shmseg s;
    if (pad == MAP_FAILED || bm_util_shmseg_attach(&s, name, SEG_BYTES) != BM_OK)
        return 2;
    long double one[NELEM] = {1.0L, 1.0L, 1.0L, 1.0L};
    for (int i = 0; i < ADDS; i++)
        bm_osc_acc_apply(MPI_SUM, MPI_LONG_DOUBLE, one, (char *)s.addr + ELEM_OFF, NULL, NELEM,
                         stripes_at(s.addr));
    bm_util_shmseg_detach(&s);
    return 0;
}

static void test_no_lost_long_double_adds(void)
{
    struct bm_util_shmseg seg;
    BM_CHECK_EQ_INT(bm_util_shmseg_create(&seg, name, SEG_BYTES), BM_OK);
    pid_t pids[NPROC];
    for (int k = 0; k < NPROC; k++) {
        pids[k] = fork();
        if (pids[k] == 0)
            _exit(child(k));
    }
    for (int k = 0; k < NPROC; k++) {
        int st = 0;
        waitpid(pids[k], &st, 0);
        BM_CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d failed (status %#x)", k, st);
    }
    long double *v = (long double *)(void *)((char *)seg.addr + ELEM_OFF);
    for (int i = 0; i < NELEM; i++)
        BM_CHECK_MSG(v[i] == (long double)NPROC * ADDS, "element %d: %.0Lf of %d additions", i,
                     v[i], NPROC * ADDS);
    bm_util_shmseg_detach(&seg);
}

int main(void)
{
    snprintf(name, sizeof(name), "/bm-test%d-osc-stripes", (int)getpid());
    BM_RUN(test_same_stripe_in_every_mapping);
    BM_RUN(test_no_lost_long_double_adds);
    bm_util_shmseg_cleanup();
    return bm_test_summary("test_osc_stripes");
}
