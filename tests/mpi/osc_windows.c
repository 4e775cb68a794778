/* Windows themselves: MPI_Win_allocate_shared (different sizes per rank,
 * one of them 0, contiguous by default and page-aligned with
 * alloc_shared_noncontig, MPI_Win_shared_query of every rank and of
 * MPI_PROC_NULL, plain loads and stores to the neighbours' memory ordered
 * by MPI_Win_sync and a barrier); the predefined attributes of every
 * flavour, a user key whose delete callback runs at MPI_Win_free, names,
 * the group, info hints given and read back; displacement units; and a
 * dynamic window whose regions are attached and detached while it is in
 * use, an access to a detached region failing with MPI_ERR_RMA_RANGE on
 * the window's MPI_ERRORS_RETURN. Runs over any transport (first argument
 * unused). */
#include "osc_common.h"

#include <stdint.h>
#include <unistd.h>

static int rank, nranks;
static int deletes;

static int count_delete(MPI_Win win, int key, void *val, void *extra)
{
    (void)win;
    (void)key;
    (void)extra;
    deletes += *(int *)val;
    return MPI_SUCCESS;
}

static void test_shared(int noncontig)
{
    MPI_Info info;
    MPI_Info_create(&info);
    if (noncontig)
        MPI_Info_set(info, "alloc_shared_noncontig", "true");
    MPI_Aint mysize = rank == 1 ? 0 : 100 * rank + 8;
    char *base = NULL;
    MPI_Win win;
    MPI_Win_allocate_shared(mysize, 1, info, MPI_COMM_WORLD, &base, &win);
    MPI_Info_free(&info);
    char **bases = malloc(sizeof(char *) * (size_t)nranks);
    long page = sysconf(_SC_PAGESIZE);
    for (int r = 0; r < nranks; r++) {
        MPI_Aint sz;
        int du;
        MPI_Win_shared_query(win, r, &sz, &du, &bases[r]);
        BM_CHECK_MSG(sz == (r == 1 ? 0 : 100 * r + 8) && du == 1, "rank %d: query of %d: %ld %d",
                     rank, r, (long)sz, du);
        /* an empty segment (rank 1's) has no address, as in Open MPI and MPICH */
        if (r == 1)
            BM_CHECK_MSG(bases[r] == NULL, "rank %d: empty segment of rank 1 at %p", rank,
                         (void *)bases[r]);
        int p = r - 1 == 1 ? 0 : r - 1; /* the previous non-empty segment */
        if (!noncontig && r > 1)
            BM_CHECK_MSG(bases[r] == bases[p] + 100 * p + 8,
                         "rank %d: memory of rank %d does not follow rank %d's", rank, r, p);
        if (noncontig && r != 1 && (100 * r + 8) >= page)
            BM_CHECK(((uintptr_t)bases[r] % (uintptr_t)page) == 0);
    }
    BM_CHECK(rank == 1 || bases[rank] == base);
    MPI_Aint sz;
    int du;
    char *first;
    MPI_Win_shared_query(win, MPI_PROC_NULL, &sz, &du, &first);
    BM_CHECK_MSG(first == bases[0] && sz == 8, "rank %d: MPI_PROC_NULL query", rank);
    /* every rank stores into the next rank's memory, the next loads it */
    MPI_Win_lock_all(0, win);
    int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    MPI_Aint nsz = next == 1 ? 0 : 100 * next + 8;
    for (MPI_Aint i = 0; i < nsz; i++)
        bases[next][i] = (char)(rank * 7 + i);
    MPI_Win_sync(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    int bad = 0;
    for (MPI_Aint i = 0; i < mysize; i++)
        bad += base[i] != (char)(prev * 7 + i);
    BM_CHECK_MSG(bad == 0, "rank %d: %d bytes stored by rank %d are wrong", rank, bad, prev);
    MPI_Win_unlock_all(win);
    int flavor = 0, *pflavor = &flavor, flag = 0;
    MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &pflavor, &flag);
    BM_CHECK(flag && *pflavor == MPI_WIN_FLAVOR_SHARED);
    MPI_Win_free(&win);
    BM_CHECK(win == MPI_WIN_NULL);
    free(bases);
}

static void test_attributes(int flavor)
{
    struct osc_win w;
    osc_win_make(&w, flavor, 4096, 8, MPI_COMM_WORLD);
    int flag = 0;
    void *base = NULL;
    MPI_Aint *size = NULL;
    int *unit = NULL, *fl = NULL, *model = NULL;
    MPI_Win_get_attr(w.win, MPI_WIN_BASE, &base, &flag);
    BM_CHECK(flag && (flavor == MPI_WIN_FLAVOR_DYNAMIC ? base == NULL : base == w.base));
    MPI_Win_get_attr(w.win, MPI_WIN_SIZE, &size, &flag);
    BM_CHECK(flag && *size == (flavor == MPI_WIN_FLAVOR_DYNAMIC ? 0 : 4096));
    MPI_Win_get_attr(w.win, MPI_WIN_DISP_UNIT, &unit, &flag);
    BM_CHECK(flag && *unit == (flavor == MPI_WIN_FLAVOR_DYNAMIC ? 1 : 8));
    MPI_Win_get_attr(w.win, MPI_WIN_CREATE_FLAVOR, &fl, &flag);
    BM_CHECK(flag && *fl == flavor);
    MPI_Win_get_attr(w.win, MPI_WIN_MODEL, &model, &flag);
    BM_CHECK(flag && *model == MPI_WIN_UNIFIED);
    /* a user key, replaced once: its delete callback runs twice */
    int key;
    static int one = 1, ten = 10;
    deletes = 0;
    MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, count_delete, &key, NULL);
    MPI_Win_set_attr(w.win, key, &one);
    MPI_Win_set_attr(w.win, key, &ten);
    int *got = NULL;
    MPI_Win_get_attr(w.win, key, &got, &flag);
    BM_CHECK(flag && got == &ten);
    MPI_Win_free_keyval(&key);
    BM_CHECK(key == MPI_KEYVAL_INVALID);
    /* names, group, info */
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Win_get_name(w.win, name, &len);
    BM_CHECK(len == 0);
    MPI_Win_set_name(w.win, "my window");
    MPI_Win_get_name(w.win, name, &len);
    BM_CHECK_STR(name, "my window");
    MPI_Group g, wg;
    int cmp;
    MPI_Win_get_group(w.win, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_compare(g, wg, &cmp);
    BM_CHECK(cmp == MPI_IDENT);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    MPI_Info info;
    char v[MPI_MAX_INFO_VAL];
    MPI_Win_get_info(w.win, &info);
    MPI_Info_get(info, "accumulate_ordering", MPI_MAX_INFO_VAL - 1, v, &flag);
    BM_CHECK(flag && strcmp(v, "rar,raw,war,waw") == 0);
    MPI_Info_free(&info);
    MPI_Info_create(&info);
    MPI_Info_set(info, "accumulate_ordering", "none");
    MPI_Win_set_info(w.win, info);
    MPI_Info_free(&info);
    MPI_Win_get_info(w.win, &info);
    MPI_Info_get(info, "accumulate_ordering", MPI_MAX_INFO_VAL - 1, v, &flag);
    BM_CHECK(flag && strcmp(v, "none") == 0);
    MPI_Info_free(&info);
    /* displacement units: element i of the next rank is at displacement i */
    int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    int64_t vals[4] = {rank, rank + 1, rank + 2, rank + 3};
    MPI_Win_fence(0, w.win);
    MPI_Put(vals, 4, MPI_INT64_T, next, osc_disp(&w, next, 3 * 8), 4, MPI_INT64_T, w.win);
    MPI_Win_fence(0, w.win);
    const int64_t *mine = (const int64_t *)(void *)w.base;
    BM_CHECK_MSG(mine[3] == prev && mine[6] == prev + 3, "rank %d: units: %lld %lld", rank,
                 (long long)mine[3], (long long)mine[6]);
    osc_win_free(&w);
    BM_CHECK_MSG(deletes == 11, "rank %d: delete callbacks added %d, expected 1 + 10", rank,
                 deletes);
}

/* Regions come and go while the window is in use. */
static void test_dynamic_regions(void)
{
    MPI_Win win;
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    int64_t *a = calloc(16, 8), *b = calloc(16, 8);
    MPI_Aint addr[2], *all = malloc(sizeof(MPI_Aint) * 2 * (size_t)nranks);
    MPI_Win_attach(win, a, 16 * 8);
    MPI_Get_address(a, &addr[0]);
    MPI_Get_address(b, &addr[1]);
    MPI_Allgather(addr, 2, MPI_AINT, all, 2, MPI_AINT, MPI_COMM_WORLD);
    int64_t v = 100 + rank;
    MPI_Win_fence(0, win);
    MPI_Put(&v, 1, MPI_INT64_T, next, all[2 * next], 1, MPI_INT64_T, win);
    MPI_Win_fence(0, win);
    BM_CHECK_MSG(a[0] == 100 + prev, "rank %d: region a got %lld", rank, (long long)a[0]);
    /* attach b in the middle, use it, then drop a */
    MPI_Win_attach(win, b, 16 * 8);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_fence(0, win);
    MPI_Put(&v, 1, MPI_INT64_T, next, all[2 * next + 1] + 8, 1, MPI_INT64_T, win);
    MPI_Win_fence(0, win);
    BM_CHECK_MSG(b[1] == 100 + prev, "rank %d: region b got %lld", rank, (long long)b[1]);
    MPI_Win_detach(win, a);
    MPI_Barrier(MPI_COMM_WORLD);
    /* an access to the detached region fails at the target and is
     * reported to the origin by the synchronisation */
    MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win);
    int rc = MPI_Put(&v, 1, MPI_INT64_T, next, all[2 * next], 1, MPI_INT64_T, win);
    if (rc == MPI_SUCCESS)
        rc = MPI_Win_unlock(next, win);
    else
        MPI_Win_unlock(next, win);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    BM_CHECK_MSG(cls == MPI_ERR_RMA_RANGE, "rank %d: a put into a detached region gave %d", rank,
                 cls);
    BM_CHECK_MSG(a[0] == 100 + prev, "rank %d: detached memory was written", rank);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_detach(win, b);
    MPI_Win_free(&win);
    free(a);
    free(b);
    free(all);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    bm_test_current = "shared";
    test_shared(0);
    bm_test_current = "shared noncontig";
    test_shared(1);
    const int flavors[] = {MPI_WIN_FLAVOR_CREATE, MPI_WIN_FLAVOR_ALLOCATE, MPI_WIN_FLAVOR_SHARED,
                           MPI_WIN_FLAVOR_DYNAMIC};
    for (int i = 0; i < 4; i++) {
        bm_test_current = "attributes";
        test_attributes(flavors[i]);
    }
    bm_test_current = "dynamic regions";
    test_dynamic_regions();
    MPI_Finalize();
    return bm_test_summary("osc_windows");
}
