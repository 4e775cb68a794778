/* Derived datatypes through the MPI interface: every constructor and its
 * queries (size, bounds, true bounds, envelope and contents, MPI-1 names and
 * markers), subarray and darray against element lists computed here from
 * their definitions, send/receive of derived types in every size class
 * (eager, rendezvous, single copy) with receives in another layout of the
 * same signature, truncation that leaves the rest of the buffer alone,
 * MPI_Get_elements/MPI_Get_count on partial receives, MPI_Pack/MPI_Unpack
 * round trips, external32 against known byte strings, reductions on every
 * (op, predefined type) pair with the allowed ones checked for their value
 * and the others refused, predefined and user operations on derived types,
 * type attributes, and the reference rules (a type freed while a request
 * or another type uses it). Runs with 1 rank (local checks only) or 2. */
#include "bm_test.h"

#include <complex.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

static int rank, size;

static void check_bounds(MPI_Datatype t, int sz, MPI_Aint lb, MPI_Aint ext, MPI_Aint tlb,
                         MPI_Aint text, const char *what)
{
    int s;
    MPI_Aint a, b;
    MPI_Type_size(t, &s);
    BM_CHECK_MSG(s == sz, "%s: size %d, want %d", what, s, sz);
    MPI_Type_get_extent(t, &a, &b);
    BM_CHECK_MSG(a == lb && b == ext, "%s: lb %ld extent %ld, want %ld %ld", what, (long)a, (long)b,
                 (long)lb, (long)ext);
    MPI_Type_get_true_extent(t, &a, &b);
    BM_CHECK_MSG(a == tlb && b == text, "%s: true lb %ld extent %ld, want %ld %ld", what, (long)a,
                 (long)b, (long)tlb, (long)text);
}

/* Pack (1, t) over ints numbered 0.. and compare with the index list. */
static void check_layout(MPI_Datatype t, int count, const int *want, int n, const char *what)
{
    int src[4096], out[4096], pos = 0, psize;
    MPI_Type_commit(&t); /* packing needs it; committing twice is allowed */
    for (int i = 0; i < 4096; i++)
        src[i] = i;
    MPI_Pack_size(count, t, MPI_COMM_WORLD, &psize);
    BM_CHECK_MSG(psize == n * (int)sizeof(int), "%s: pack size %d, want %zu", what, psize,
                 n * sizeof(int));
    BM_CHECK_EQ_INT(MPI_Pack(src, count, t, out, sizeof(out), &pos, MPI_COMM_WORLD), MPI_SUCCESS);
    BM_CHECK_EQ_INT(pos, psize);
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (out[i] != want[i])
            bad++;
    BM_CHECK_MSG(bad == 0, "%s: %d of %d elements in the wrong place (first: %d, want %d)", what,
                 bad, n, out[0], want[0]);
    /* and back */
    int back[4096];
    memset(back, 0xff, sizeof(back));
    pos = 0;
    BM_CHECK_EQ_INT(MPI_Unpack(out, psize, &pos, back, count, t, MPI_COMM_WORLD), MPI_SUCCESS);
    bad = 0;
    for (int i = 0; i < n; i++)
        if (back[want[i]] != want[i])
            bad++;
    BM_CHECK_MSG(bad == 0, "%s: unpack put %d elements wrong", what, bad);
}

static void check_envelope(MPI_Datatype t, int ni, int na, int nd, int comb)
{
    int a, b, c, d;
    BM_CHECK_EQ_INT(MPI_Type_get_envelope(t, &a, &b, &c, &d), MPI_SUCCESS);
    BM_CHECK(a == ni && b == na && c == nd && d == comb);
}

static void test_constructors(void)
{
    MPI_Datatype t, u, w;
    /* contiguous */
    MPI_Type_contiguous(3, MPI_INT, &t);
    check_bounds(t, 12, 0, 12, 0, 12, "contiguous");
    check_envelope(t, 1, 0, 1, MPI_COMBINER_CONTIGUOUS);
    MPI_Type_free(&t);
    /* vector: 3 blocks of 2 ints every 4 */
    MPI_Type_vector(3, 2, 4, MPI_INT, &t);
    check_bounds(t, 24, 0, 40, 0, 40, "vector");
    check_layout(t, 1, (int[]){0, 1, 4, 5, 8, 9}, 6, "vector");
    check_layout(t, 2, (int[]){0, 1, 4, 5, 8, 9, 10, 11, 14, 15, 18, 19}, 12, "vector x2");
    check_envelope(t, 3, 0, 1, MPI_COMBINER_VECTOR);
    int ints[8];
    MPI_Aint addrs[4];
    MPI_Datatype types[4];
    BM_CHECK_EQ_INT(MPI_Type_get_contents(t, 8, 4, 4, ints, addrs, types), MPI_SUCCESS);
    BM_CHECK(ints[0] == 3 && ints[1] == 2 && ints[2] == 4 && types[0] == MPI_INT);
    MPI_Type_free(&t);
    /* negative stride */
    MPI_Type_vector(3, 1, -2, MPI_INT, &t);
    check_bounds(t, 12, -16, 20, -16, 20, "vector stride -2");
    MPI_Type_free(&t);
    /* hvector in bytes */
    MPI_Type_create_hvector(2, 1, 12, MPI_INT, &t);
    check_layout(t, 1, (int[]){0, 3}, 2, "hvector");
    check_envelope(t, 2, 1, 1, MPI_COMBINER_HVECTOR);
    MPI_Type_free(&t);
    MPI_Type_hvector(2, 1, 12, MPI_INT, &t);
    check_envelope(t, 2, 1, 1, MPI_COMBINER_HVECTOR);
    MPI_Type_free(&t);
    /* indexed, hindexed, blocks */
    MPI_Type_indexed(3, (int[]){2, 1, 3}, (int[]){5, 0, 9}, MPI_INT, &t);
    check_bounds(t, 24, 0, 48, 0, 48, "indexed");
    check_layout(t, 1, (int[]){5, 6, 0, 9, 10, 11}, 6, "indexed");
    check_envelope(t, 7, 0, 1, MPI_COMBINER_INDEXED);
    MPI_Type_free(&t);
    MPI_Type_create_hindexed(2, (int[]){1, 2}, (MPI_Aint[]){8, 20}, MPI_INT, &t);
    check_layout(t, 1, (int[]){2, 5, 6}, 3, "hindexed");
    check_envelope(t, 3, 2, 1, MPI_COMBINER_HINDEXED);
    MPI_Type_free(&t);
    MPI_Type_create_indexed_block(3, 2, (int[]){6, 0, 3}, MPI_INT, &t);
    check_layout(t, 1, (int[]){6, 7, 0, 1, 3, 4}, 6, "indexed_block");
    check_envelope(t, 5, 0, 1, MPI_COMBINER_INDEXED_BLOCK);
    MPI_Type_free(&t);
    MPI_Type_create_hindexed_block(2, 1, (MPI_Aint[]){4, 16}, MPI_INT, &t);
    check_layout(t, 1, (int[]){1, 4}, 2, "hindexed_block");
    check_envelope(t, 2, 2, 1, MPI_COMBINER_HINDEXED_BLOCK);
    MPI_Type_free(&t);
    /* struct {double; char} is padded to the double's alignment */
    MPI_Type_create_struct(2, (int[]){1, 1}, (MPI_Aint[]){0, 8},
                           (MPI_Datatype[]){MPI_DOUBLE, MPI_CHAR}, &t);
    check_bounds(t, 9, 0, 16, 0, 9, "struct {double, char}");
    check_envelope(t, 3, 2, 2, MPI_COMBINER_STRUCT);
    BM_CHECK_EQ_INT(MPI_Type_get_contents(t, 8, 4, 4, ints, addrs, types), MPI_SUCCESS);
    BM_CHECK(types[0] == MPI_DOUBLE && types[1] == MPI_CHAR && addrs[1] == 8);
    /* struct of a derived type: get_contents hands back a handle to free */
    MPI_Type_create_struct(2, (int[]){2, 1}, (MPI_Aint[]){0, 40}, (MPI_Datatype[]){t, MPI_INT}, &u);
    check_bounds(u, 22, 0, 48, 0, 44, "struct of struct");
    MPI_Type_free(&t); /* u still uses it */
    BM_CHECK_EQ_INT(MPI_Type_get_contents(u, 8, 4, 4, ints, addrs, types), MPI_SUCCESS);
    check_bounds(types[0], 9, 0, 16, 0, 9, "type from get_contents");
    BM_CHECK_EQ_INT(MPI_Type_free(&types[0]), MPI_SUCCESS);
    MPI_Type_free(&u);
    /* MPI-1 markers */
    MPI_Type_struct(3, (int[]){1, 1, 1}, (MPI_Aint[]){-8, 0, 24},
                    (MPI_Datatype[]){MPI_LB, MPI_INT, MPI_UB}, &t);
    check_bounds(t, 4, -8, 32, 0, 4, "MPI_LB/MPI_UB");
    MPI_Aint e, l, ub;
    MPI_Type_extent(t, &e);
    MPI_Type_lb(t, &l);
    MPI_Type_ub(t, &ub);
    BM_CHECK(e == 32 && l == -8 && ub == 24);
    /* markers stick through a vector */
    MPI_Type_contiguous(2, t, &u);
    check_bounds(u, 8, -8, 64, 0, 36, "contiguous of marked");
    MPI_Type_free(&u);
    MPI_Type_free(&t);
    /* resized, and dup keeps the bounds */
    MPI_Type_create_resized(MPI_INT, -4, 16, &t);
    check_bounds(t, 4, -4, 16, 0, 4, "resized");
    check_envelope(t, 0, 2, 1, MPI_COMBINER_RESIZED);
    check_layout(t, 3, (int[]){0, 4, 8}, 3, "resized x3");
    MPI_Type_dup(t, &u);
    check_bounds(u, 4, -4, 16, 0, 4, "dup");
    check_envelope(u, 0, 0, 1, MPI_COMBINER_DUP);
    check_envelope(MPI_INT, 0, 0, 0, MPI_COMBINER_NAMED);
    BM_CHECK_EQ_INT(MPI_Type_get_contents(MPI_INT, 0, 0, 0, NULL, NULL, NULL), MPI_ERR_TYPE);
    MPI_Type_free(&t);
    MPI_Type_free(&u);
    /* empty and zero-count types */
    MPI_Type_vector(0, 2, 4, MPI_INT, &t);
    check_bounds(t, 0, 0, 0, 0, 0, "empty vector");
    MPI_Type_free(&t);
    /* argument errors */
    BM_CHECK_EQ_INT(MPI_Type_vector(-1, 1, 1, MPI_INT, &t), MPI_ERR_COUNT);
    BM_CHECK_EQ_INT(MPI_Type_indexed(1, (int[]){-1}, (int[]){0}, MPI_INT, &t), MPI_ERR_ARG);
    BM_CHECK_EQ_INT(MPI_Type_create_struct(1, (int[]){1}, (MPI_Aint[]){0},
                                           (MPI_Datatype[]){MPI_DATATYPE_NULL}, &t),
                    MPI_ERR_TYPE);
    /* match_size, addresses */
    BM_CHECK_EQ_INT(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &w), MPI_SUCCESS);
    int ws;
    MPI_Type_size(w, &ws);
    BM_CHECK(ws == 8);
    BM_CHECK_EQ_INT(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 3, &w), MPI_ERR_ARG);
    /* no Fortran real of that size: the C one (MPICH's datatype/tmatchsize) */
    BM_CHECK_EQ_INT(MPI_Type_match_size(MPI_TYPECLASS_REAL, sizeof(long double), &w), MPI_SUCCESS);
    BM_CHECK(w == (sizeof(long double) == 8 ? MPI_REAL8 : MPI_LONG_DOUBLE));
    int arr[4];
    MPI_Aint a0, a2;
    MPI_Get_address(&arr[0], &a0);
    MPI_Get_address(&arr[2], &a2);
    BM_CHECK(MPI_Aint_diff(a2, a0) == 8 && MPI_Aint_add(a0, 8) == a2);
}

/* ---- subarray and darray against their definitions ------------------------ */

static void test_subarray(void)
{
    MPI_Datatype t;
    int sizes[3] = {4, 5, 6}, sub[3] = {2, 3, 2}, start[3] = {1, 2, 3}, want[64], n = 0;
    MPI_Type_create_subarray(3, sizes, sub, start, MPI_ORDER_C, MPI_INT, &t);
    MPI_Type_commit(&t);
    for (int i = 0; i < sub[0]; i++)
        for (int j = 0; j < sub[1]; j++)
            for (int k = 0; k < sub[2]; k++)
                want[n++] = ((start[0] + i) * sizes[1] + start[1] + j) * sizes[2] + start[2] + k;
    check_bounds(t, n * 4, 0, 4 * 5 * 6 * 4, want[0] * 4, (want[n - 1] - want[0] + 1) * 4,
                 "subarray C");
    check_layout(t, 1, want, n, "subarray C");
    check_envelope(t, 11, 0, 1, MPI_COMBINER_SUBARRAY);
    MPI_Type_free(&t);
    n = 0;
    MPI_Type_create_subarray(3, sizes, sub, start, MPI_ORDER_FORTRAN, MPI_INT, &t);
    for (int k = 0; k < sub[2]; k++)
        for (int j = 0; j < sub[1]; j++)
            for (int i = 0; i < sub[0]; i++)
                want[n++] = ((start[2] + k) * sizes[1] + start[1] + j) * sizes[0] + start[0] + i;
    check_layout(t, 1, want, n, "subarray Fortran");
    MPI_Type_free(&t);
}

/* Which process of np holds global index g of a dimension of gsize, and is
 * it this coordinate's: the standard's definitions. */
static bool owns(int distrib, int darg, int gsize, int np, int coord, int g)
{
    if (distrib == MPI_DISTRIBUTE_NONE)
        return true;
    if (distrib == MPI_DISTRIBUTE_BLOCK) {
        int b = darg == MPI_DISTRIBUTE_DFLT_DARG ? (gsize + np - 1) / np : darg;
        return g / b == coord;
    }
    int b = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
    return (g / b) % np == coord;
}

static void test_darray(void)
{
    static const int cases[][6] = {
        /* distrib0, darg0, distrib1, darg1, p0, p1 */
        {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_BLOCK,
         MPI_DISTRIBUTE_DFLT_DARG, 2, 3},
        {MPI_DISTRIBUTE_CYCLIC, 2, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_DFLT_DARG, 3, 2},
        {MPI_DISTRIBUTE_BLOCK, 3, MPI_DISTRIBUTE_CYCLIC, 2, 3, 2},
        {MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_CYCLIC,
         MPI_DISTRIBUTE_DFLT_DARG, 1, 4},
    };
    int gs[2] = {7, 9};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        for (int order = 0; order < 2; order++) {
            int ord = order ? MPI_ORDER_FORTRAN : MPI_ORDER_C;
            int dist[2] = {cases[c][0], cases[c][2]}, darg[2] = {cases[c][1], cases[c][3]},
                ps[2] = {cases[c][4], cases[c][5]};
            int np = ps[0] * ps[1];
            for (int r = 0; r < np; r++) {
                MPI_Datatype t;
                BM_CHECK_EQ_INT(
                    MPI_Type_create_darray(np, r, 2, gs, dist, darg, ps, ord, MPI_INT, &t),
                    MPI_SUCCESS);
                int coord[2] = {r / ps[1], r % ps[1]}, want[128], n = 0;
                /* element order: C varies dimension 1 fastest, Fortran 0 */
                for (int a = 0; a < gs[ord == MPI_ORDER_C ? 0 : 1]; a++)
                    for (int b = 0; b < gs[ord == MPI_ORDER_C ? 1 : 0]; b++) {
                        int i = ord == MPI_ORDER_C ? a : b, j = ord == MPI_ORDER_C ? b : a;
                        if (owns(dist[0], darg[0], gs[0], ps[0], coord[0], i) &&
                            owns(dist[1], darg[1], gs[1], ps[1], coord[1], j))
                            want[n++] = ord == MPI_ORDER_C ? i * gs[1] + j : j * gs[0] + i;
                    }
                char what[64];
                snprintf(what, sizeof(what), "darray case %zu order %d rank %d", c, order, r);
                MPI_Aint lb, ext;
                MPI_Type_get_extent(t, &lb, &ext);
                BM_CHECK_MSG(lb == 0 && ext == 7 * 9 * 4, "%s: lb %ld extent %ld", what, (long)lb,
                             (long)ext);
                check_layout(t, 1, want, n, what);
                MPI_Type_free(&t);
            }
        }
}

/* ---- point to point ---------------------------------------------------- */

static void fill(double *v, size_t n, double base)
{
    for (size_t i = 0; i < n; i++)
        v[i] = base + (double)i;
}

/* Send n doubles as a vector of stride 2 (block blk) from rank 0; rank 1
 * receives them three ways: the same vector, contiguous doubles, and a
 * vector of stride 3. */
static void p2p_vector(int n, int blk)
{
    MPI_Datatype v2, v3;
    MPI_Type_vector(n / blk, blk, 2 * blk, MPI_DOUBLE, &v2);
    MPI_Type_vector(n / blk, blk, 3 * blk, MPI_DOUBLE, &v3);
    MPI_Type_commit(&v2);
    MPI_Type_commit(&v3);
    size_t len = (size_t)3 * n + 8;
    double *a = malloc(len * sizeof(double)), *b = malloc(len * sizeof(double));
    if (rank == 0) {
        fill(a, len, 0);
        for (int k = 0; k < 3; k++)
            MPI_Send(a, 1, v2, 1, 10 + k, MPI_COMM_WORLD);
        /* contiguous sender, strided receiver */
        MPI_Send(a, n, MPI_DOUBLE, 1, 13, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Status st;
        int bad = 0, cnt;
        for (size_t i = 0; i < len; i++)
            b[i] = -1;
        MPI_Recv(b, 1, v2, 0, 10, MPI_COMM_WORLD, &st);
        for (int i = 0; i < n; i++) {
            size_t at = (size_t)(i / blk) * 2 * blk + i % blk;
            if (b[at] != (double)at)
                bad++;
            if (b[at + blk] != -1)
                bad++; /* the gap stays */
        }
        BM_CHECK_MSG(bad == 0, "vector %d/%d: %d bad", n, blk, bad);
        MPI_Get_count(&st, v2, &cnt);
        BM_CHECK_EQ_INT(cnt, 1);
        MPI_Recv(b, n, MPI_DOUBLE, 0, 11, MPI_COMM_WORLD, &st);
        bad = 0;
        for (int i = 0; i < n; i++)
            if (b[i] != (double)((size_t)(i / blk) * 2 * blk + i % blk))
                bad++;
        BM_CHECK_MSG(bad == 0, "vector %d/%d as contiguous: %d bad", n, blk, bad);
        MPI_Get_elements(&st, MPI_DOUBLE, &cnt);
        BM_CHECK_EQ_INT(cnt, n);
        for (size_t i = 0; i < len; i++)
            b[i] = -1;
        MPI_Recv(b, 1, v3, 0, 12, MPI_COMM_WORLD, &st);
        bad = 0;
        for (int i = 0; i < n; i++)
            if (b[(size_t)(i / blk) * 3 * blk + i % blk] !=
                (double)((size_t)(i / blk) * 2 * blk + i % blk))
                bad++;
        BM_CHECK_MSG(bad == 0, "vector %d/%d as stride 3: %d bad", n, blk, bad);
        for (size_t i = 0; i < len; i++)
            b[i] = -1;
        MPI_Recv(b, 1, v3, 0, 13, MPI_COMM_WORLD, &st);
        bad = 0;
        for (int i = 0; i < n; i++)
            if (b[(size_t)(i / blk) * 3 * blk + i % blk] != (double)i)
                bad++;
        BM_CHECK_MSG(bad == 0, "contiguous %d as stride 3 (block %d): %d bad", n, blk, bad);
    }
    free(a);
    free(b);
    MPI_Type_free(&v2);
    MPI_Type_free(&v3);
}

static void test_p2p_sizes(void)
{
    static const int ns[] = {1, 3, 100, 600, 5000, 70000, 300000};
    if (size < 2)
        return;
    for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
        p2p_vector(ns[i], 1);
        if (ns[i] % 50 == 0)
            p2p_vector(ns[i], 50);
    }
}

/* Truncation, partial receives, Get_elements, Isend of a freed type. */
static void test_p2p_partial(void)
{
    if (size < 2)
        return;
    MPI_Datatype st; /* struct {int; double} with padding */
    MPI_Type_create_struct(2, (int[]){1, 1}, (MPI_Aint[]){0, 8},
                           (MPI_Datatype[]){MPI_INT, MPI_DOUBLE}, &st);
    MPI_Type_commit(&st);
    struct {
        int i;
        double d;
    } s[4] = {{1, 1.5}, {2, 2.5}, {3, 3.5}, {4, 4.5}}, r[5];
    if (rank == 0) {
        /* 7 ints: 1 whole struct ... no: ints and doubles by signature */
        MPI_Send(s, 3, st, 1, 1, MPI_COMM_WORLD);
        MPI_Send(s, 3, st, 1, 2, MPI_COMM_WORLD);
        MPI_Request req;
        MPI_Datatype tmp;
        MPI_Type_dup(st, &tmp);
        MPI_Type_commit(&tmp);
        MPI_Isend(s, 4, tmp, 1, 3, MPI_COMM_WORLD, &req);
        MPI_Type_free(&tmp); /* the send goes on */
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        /* 12 bytes: one struct and an int of the next */
        MPI_Send(s, 16, MPI_BYTE, 1, 4, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Status stt;
        int n;
        memset(r, 0, sizeof(r));
        BM_CHECK_EQ_INT(MPI_Recv(r, 5, st, 0, 1, MPI_COMM_WORLD, &stt), MPI_SUCCESS);
        MPI_Get_count(&stt, st, &n);
        BM_CHECK_EQ_INT(n, 3);
        MPI_Get_elements(&stt, st, &n);
        BM_CHECK_EQ_INT(n, 6);
        BM_CHECK(r[2].i == 3 && r[2].d == 3.5 && r[3].i == 0);
        /* truncated: two fit, the third is not written */
        memset(r, 0, sizeof(r));
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        BM_CHECK_EQ_INT(MPI_Recv(r, 2, st, 0, 2, MPI_COMM_WORLD, &stt), MPI_ERR_TRUNCATE);
        BM_CHECK(r[1].i == 2 && r[1].d == 2.5 && r[2].i == 0 && r[2].d == 0);
        BM_CHECK_EQ_INT(MPI_Recv(r, 4, st, 0, 3, MPI_COMM_WORLD, &stt), MPI_SUCCESS);
        BM_CHECK(r[3].i == 4 && r[3].d == 4.5);
        /* a partial element: 16 bytes = int, double, int (elements 3) */
        MPI_Recv(r, 5, st, 0, 4, MPI_COMM_WORLD, &stt);
        MPI_Get_count(&stt, st, &n);
        BM_CHECK_EQ_INT(n, MPI_UNDEFINED);
        MPI_Get_elements(&stt, st, &n);
        BM_CHECK_EQ_INT(n, 3);
        MPI_Count nx;
        MPI_Get_elements_x(&stt, st, &nx);
        BM_CHECK_EQ_INT(nx, 3);
    }
    MPI_Type_free(&st);
}

/* Every constructor through point-to-point: 2 elements sent, received once
 * into room for 2 (all of it, gaps untouched) and once into room for 1
 * (MPI_ERR_TRUNCATE, the first element written and nothing past it). The
 * receiver checks against MPI_Pack of what was sent. */
static void test_p2p_constructors(void)
{
    if (size < 2)
        return;
    MPI_Datatype t[13], tmp;
    int n = 0;
    MPI_Type_contiguous(3, MPI_INT, &t[n++]);
    MPI_Type_vector(3, 2, 4, MPI_INT, &t[n++]);
    MPI_Type_create_hvector(2, 3, 20, MPI_INT, &t[n++]);
    MPI_Type_indexed(3, (int[]){2, 1, 3}, (int[]){5, 0, 9}, MPI_INT, &t[n++]);
    MPI_Type_create_hindexed(2, (int[]){1, 2}, (MPI_Aint[]){8, 20}, MPI_INT, &t[n++]);
    MPI_Type_create_indexed_block(3, 2, (int[]){6, 0, 3}, MPI_INT, &t[n++]);
    MPI_Type_create_hindexed_block(2, 1, (MPI_Aint[]){4, 16}, MPI_INT, &t[n++]);
    MPI_Type_create_struct(3, (int[]){1, 2, 1}, (MPI_Aint[]){0, 8, 24},
                           (MPI_Datatype[]){MPI_INT, MPI_DOUBLE, MPI_SHORT}, &t[n++]);
    MPI_Type_create_subarray(2, (int[]){4, 5}, (int[]){2, 3}, (int[]){1, 1}, MPI_ORDER_C, MPI_INT,
                             &t[n++]);
    MPI_Type_create_darray(2, 1, 1, (int[]){9}, (int[]){MPI_DISTRIBUTE_CYCLIC}, (int[]){2},
                           (int[]){2}, MPI_ORDER_C, MPI_INT, &t[n++]);
    MPI_Type_create_resized(MPI_INT, -4, 12, &t[n++]);
    MPI_Type_vector(2, 1, 3, MPI_DOUBLE_INT, &tmp);
    MPI_Type_dup(tmp, &t[n++]);
    MPI_Type_free(&tmp);
    MPI_Type_vector(2, 2, -3, MPI_SHORT_INT, &t[n++]);
    enum { MEM = 2048, OFF = 512 };
    static unsigned char src[MEM], dst[MEM], pk[MEM], pk2[MEM];
    for (int k = 0; k < n; k++) {
        MPI_Type_commit(&t[k]);
        for (int i = 0; i < MEM; i++)
            src[i] = (unsigned char)(i * 7 + k);
        if (rank == 0) {
            MPI_Send(src + OFF, 2, t[k], 1, 40 + k, MPI_COMM_WORLD);
            MPI_Send(src + OFF, 2, t[k], 1, 60 + k, MPI_COMM_WORLD);
            continue;
        }
        if (rank != 1)
            continue;
        int psize, pos = 0, s1;
        MPI_Type_size(t[k], &s1);
        MPI_Pack_size(2, t[k], MPI_COMM_WORLD, &psize);
        MPI_Pack(src + OFF, 2, t[k], pk, MEM, &pos, MPI_COMM_WORLD);
        MPI_Status st;
        memset(dst, 0xee, MEM);
        BM_CHECK_EQ_INT(MPI_Recv(dst + OFF, 2, t[k], 0, 40 + k, MPI_COMM_WORLD, &st), MPI_SUCCESS);
        int cnt;
        MPI_Get_count(&st, t[k], &cnt);
        BM_CHECK_MSG(cnt == 2, "type %d: count %d", k, cnt);
        pos = 0;
        MPI_Pack(dst + OFF, 2, t[k], pk2, MEM, &pos, MPI_COMM_WORLD);
        BM_CHECK_MSG(memcmp(pk, pk2, (size_t)psize) == 0, "type %d: data differs", k);
        /* the bytes outside the type map are untouched: unpacking into a
         * 0xee buffer gives the same memory */
        static unsigned char ref[MEM];
        memset(ref, 0xee, MEM);
        pos = 0;
        MPI_Unpack(pk, psize, &pos, ref + OFF, 2, t[k], MPI_COMM_WORLD);
        BM_CHECK_MSG(memcmp(ref, dst, MEM) == 0, "type %d: memory outside the data changed", k);
        /* truncated */
        memset(dst, 0xee, MEM);
        BM_CHECK_EQ_INT(MPI_Recv(dst + OFF, 1, t[k], 0, 60 + k, MPI_COMM_WORLD, &st),
                        MPI_ERR_TRUNCATE);
        memset(ref, 0xee, MEM);
        pos = 0;
        MPI_Unpack(pk, psize, &pos, ref + OFF, 1, t[k], MPI_COMM_WORLD);
        BM_CHECK_MSG(memcmp(ref, dst, MEM) == 0, "type %d: truncated receive wrote wrong bytes", k);
        MPI_Get_elements(&st, t[k], &cnt);
        int e1;
        MPI_Get_elements(&(MPI_Status){.MPI_SOURCE = 0}, t[k], &e1); /* 0 bytes: 0 */
        BM_CHECK(e1 == 0);
        (void)s1;
    }
    for (int k = 0; k < n; k++)
        MPI_Type_free(&t[k]);
}

/* MPI_BOTTOM with a struct of absolute addresses (MPI_Get_address), in
 * point-to-point and MPI_Pack; a NULL buffer with a predefined type stays an
 * error. */
static void test_bottom(void)
{
    int a = rank == 0 ? 42 : 0;
    double b = rank == 0 ? 2.5 : 0;
    MPI_Aint d[2];
    MPI_Get_address(&a, &d[0]);
    MPI_Get_address(&b, &d[1]);
    MPI_Datatype t;
    MPI_Type_create_struct(2, (int[]){1, 1}, d, (MPI_Datatype[]){MPI_INT, MPI_DOUBLE}, &t);
    MPI_Type_commit(&t);
    char pk[32];
    int pos = 0;
    BM_CHECK_EQ_INT(MPI_Pack(MPI_BOTTOM, 1, t, pk, sizeof(pk), &pos, MPI_COMM_WORLD), MPI_SUCCESS);
    BM_CHECK_EQ_INT(pos, 12);
    if (size >= 2) {
        if (rank == 0)
            BM_CHECK_EQ_INT(MPI_Send(MPI_BOTTOM, 1, t, 1, 77, MPI_COMM_WORLD), MPI_SUCCESS);
        else if (rank == 1)
            BM_CHECK_EQ_INT(MPI_Recv(MPI_BOTTOM, 1, t, 0, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                            MPI_SUCCESS);
        if (rank < 2)
            BM_CHECK(a == 42 && b == 2.5);
    }
    BM_CHECK_EQ_INT(MPI_Send(MPI_BOTTOM, 1, MPI_INT, 0, 78, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    MPI_Type_free(&t);
}

/* ---- external32 ----------------------------------------------------------- */

static void check_ext(const void *v, int count, MPI_Datatype t, const unsigned char *want, size_t n,
                      const char *what)
{
    unsigned char out[64];
    MPI_Aint pos = 0, sz;
    BM_CHECK_EQ_INT(MPI_Pack_external_size("external32", count, t, &sz), MPI_SUCCESS);
    BM_CHECK_MSG((size_t)sz == n, "%s: external32 size %ld, want %zu", what, (long)sz, n);
    BM_CHECK_EQ_INT(MPI_Pack_external("external32", v, count, t, out, sizeof(out), &pos),
                    MPI_SUCCESS);
    BM_CHECK_MSG((size_t)pos == n && memcmp(out, want, n) == 0, "%s: external32 bytes differ",
                 what);
    unsigned char back[64];
    memset(back, 0, sizeof(back));
    pos = 0;
    BM_CHECK_EQ_INT(MPI_Unpack_external("external32", out, sz, &pos, back, count, t), MPI_SUCCESS);
    /* what came back packs to the same bytes (gaps and padding aside) */
    unsigned char again[64];
    pos = 0;
    MPI_Pack_external("external32", back, count, t, again, sizeof(again), &pos);
    BM_CHECK_MSG(memcmp(again, want, n) == 0, "%s: external32 round trip differs", what);
}

static void test_external32(void)
{
    int i2[2] = {1, -2};
    check_ext(i2, 2, MPI_INT, (const unsigned char[]){0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe}, 8,
              "int");
    long l = -3;
    check_ext(&l, 1, MPI_LONG, (const unsigned char[]){0xff, 0xff, 0xff, 0xfd}, 4, "long");
    double d = 1.0;
    check_ext(&d, 1, MPI_DOUBLE, (const unsigned char[]){0x3f, 0xf0, 0, 0, 0, 0, 0, 0}, 8,
              "double");
    float f = -2.0f;
    check_ext(&f, 1, MPI_FLOAT, (const unsigned char[]){0xc0, 0, 0, 0}, 4, "float");
    short sh = 0x1234;
    check_ext(&sh, 1, MPI_SHORT, (const unsigned char[]){0x12, 0x34}, 2, "short");
    struct {
        short v;
        int i;
    } si;
    memset(&si, 0, sizeof(si)); /* the padding too: the round trip compares it */
    si.v = 5;
    si.i = 7;
    check_ext(&si, 1, MPI_SHORT_INT, (const unsigned char[]){0, 5, 0, 0, 0, 7}, 6, "short_int");
    long double ld = 1.0L;
    unsigned char ldq[16] = {0x3f, 0xff};
    check_ext(&ld, 1, MPI_LONG_DOUBLE, ldq, 16, "long double");
    long double ldb = 0;
    MPI_Aint pos = 0;
    MPI_Unpack_external("external32", ldq, 16, &pos, &ldb, 1, MPI_LONG_DOUBLE);
    BM_CHECK(ldb == 1.0L);
    long double l3 = -3.0L; /* -1.5 * 2^1: exponent 0x4000, fraction .1 */
    check_ext(&l3, 1, MPI_LONG_DOUBLE,
              (const unsigned char[]){0xc0, 0x00, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 16,
              "long double -3");
    /* a vector of ints with gaps packs only the data */
    MPI_Datatype v;
    MPI_Type_vector(2, 1, 2, MPI_INT, &v);
    MPI_Type_commit(&v);
    int iv[3] = {0x01020304, 99, 0x05060708};
    check_ext(iv, 1, v, (const unsigned char[]){1, 2, 3, 4, 5, 6, 7, 8}, 8, "vector of int");
    MPI_Type_free(&v);
    unsigned char out[4];
    pos = 0;
    BM_CHECK_EQ_INT(MPI_Pack_external("native", i2, 1, MPI_INT, out, 4, &pos),
                    MPI_ERR_UNSUPPORTED_DATAREP);
    pos = 2;
    BM_CHECK_EQ_INT(MPI_Pack_external("external32", i2, 1, MPI_INT, out, 4, &pos),
                    MPI_ERR_TRUNCATE);
}

/* ---- reductions ------------------------------------------------------------ */

enum { OP_MAX, OP_MIN, OP_SUM, OP_PROD, OP_LAND, OP_BAND, OP_LOR, OP_BOR, OP_LXOR, OP_BXOR, OP_N };

/* Values: in = 3, inout = 5 (1 and 0 for bools). */
static void test_reduction_pairs(void)
{
    MPI_Op ops[OP_N] = {MPI_MAX,  MPI_MIN, MPI_SUM, MPI_PROD, MPI_LAND,
                        MPI_BAND, MPI_LOR, MPI_BOR, MPI_LXOR, MPI_BXOR};
    const long ires[OP_N] = {5, 3, 8, 15, 1, 1, 1, 7, 0, 6};
    struct {
        MPI_Datatype t;
        char kind; /* i: integer, f: float, c: complex, b: bool, l: logical, y: byte, n: none */
        size_t sz;
        bool sgn;
    } types[] = {
        {MPI_CHAR, 'i', 1, true},
        {MPI_SIGNED_CHAR, 'i', 1, true},
        {MPI_UNSIGNED_CHAR, 'i', 1, false},
        {MPI_SHORT, 'i', sizeof(short), true},
        {MPI_UNSIGNED_SHORT, 'i', sizeof(short), false},
        {MPI_INT, 'i', sizeof(int), true},
        {MPI_UNSIGNED, 'i', sizeof(int), false},
        {MPI_LONG, 'i', sizeof(long), true},
        {MPI_UNSIGNED_LONG, 'i', sizeof(long), false},
        {MPI_LONG_LONG, 'i', 8, true},
        {MPI_UNSIGNED_LONG_LONG, 'i', 8, false},
        {MPI_INT8_T, 'i', 1, true},
        {MPI_INT16_T, 'i', 2, true},
        {MPI_INT32_T, 'i', 4, true},
        {MPI_INT64_T, 'i', 8, true},
        {MPI_UINT8_T, 'i', 1, false},
        {MPI_UINT16_T, 'i', 2, false},
        {MPI_UINT32_T, 'i', 4, false},
        {MPI_UINT64_T, 'i', 8, false},
        {MPI_AINT, 'i', sizeof(MPI_Aint), true},
        {MPI_OFFSET, 'i', 8, true},
        {MPI_COUNT, 'i', 8, true},
        {MPI_INTEGER, 'i', 4, true},
        {MPI_INTEGER1, 'i', 1, true},
        {MPI_INTEGER2, 'i', 2, true},
        {MPI_INTEGER4, 'i', 4, true},
        {MPI_INTEGER8, 'i', 8, true},
        {MPI_FLOAT, 'f', 4, true},
        {MPI_DOUBLE, 'f', 8, true},
        {MPI_LONG_DOUBLE, 'f', sizeof(long double), true},
        {MPI_REAL, 'f', 4, true},
        {MPI_DOUBLE_PRECISION, 'f', 8, true},
        {MPI_REAL4, 'f', 4, true},
        {MPI_REAL8, 'f', 8, true},
        {MPI_C_FLOAT_COMPLEX, 'c', 8, true},
        {MPI_C_DOUBLE_COMPLEX, 'c', 16, true},
        {MPI_C_LONG_DOUBLE_COMPLEX, 'c', sizeof(long double _Complex), true},
        {MPI_COMPLEX, 'c', 8, true},
        {MPI_DOUBLE_COMPLEX, 'c', 16, true},
        {MPI_COMPLEX8, 'c', 8, true},
        {MPI_COMPLEX16, 'c', 16, true},
        {MPI_CXX_FLOAT_COMPLEX, 'c', 8, true},
        {MPI_CXX_DOUBLE_COMPLEX, 'c', 16, true},
        {MPI_CXX_LONG_DOUBLE_COMPLEX, 'c', sizeof(long double _Complex), true},
        {MPI_C_BOOL, 'b', 1, false},
        {MPI_CXX_BOOL, 'b', 1, false},
        {MPI_LOGICAL, 'l', 4, true},
        {MPI_BYTE, 'y', 1, false},
        {MPI_WCHAR, 'n', sizeof(wchar_t), false},
        {MPI_CHARACTER, 'n', 1, false},
        {MPI_PACKED, 'n', 1, false},
    };
    /* Allowed kinds per op (MPI-3.1 5.9.2, MPI_CHAR as a C integer). */
    const char *allowed[OP_N] = {"if", "if", "ifc", "ifc", "ibl", "iy", "ibl", "iy", "ibl", "iy"};
    int bad = 0;
    for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++)
        for (int o = 0; o < OP_N; o++) {
            unsigned char in[32], io[32];
            memset(in, 0, sizeof(in));
            memset(io, 0, sizeof(io));
            char kind = types[k].kind;
            long a = 3, b = 5;
            if (kind == 'b' || kind == 'l') {
                a = 1;
                b = 0;
            }
            switch (kind) {
            case 'f':
                if (types[k].sz == 4) {
                    *(float *)in = (float)a;
                    *(float *)io = (float)b;
                } else if (types[k].sz == 8) {
                    *(double *)in = (double)a;
                    *(double *)io = (double)b;
                } else {
                    *(long double *)in = a;
                    *(long double *)io = b;
                }
                break;
            case 'c':
                if (types[k].sz == 8) {
                    *(float _Complex *)in = a + 1.0f * I;
                    *(float _Complex *)io = b;
                } else if (types[k].sz == 16) {
                    *(double _Complex *)in = a + 1.0 * I;
                    *(double _Complex *)io = b;
                } else {
                    *(long double _Complex *)in = a + 1.0L * I;
                    *(long double _Complex *)io = b;
                }
                break;
            default:
                memcpy(in, &a, types[k].sz); /* little-endian low bytes */
                memcpy(io, &b, types[k].sz);
            }
            int rc = MPI_Reduce_local(in, io, 1, types[k].t, ops[o]);
            bool ok = strchr(allowed[o], kind) != NULL;
            if (!ok) {
                if (rc != MPI_ERR_OP) {
                    bad++;
                    fprintf(stderr, "type %zu op %d: not refused\n", k, o);
                }
                continue;
            }
            if (rc != MPI_SUCCESS) {
                bad++;
                fprintf(stderr, "type %zu op %d: refused (%d)\n", k, o, rc);
                continue;
            }
            long want = kind == 'b' || kind == 'l' ? (o == OP_LAND ? 0 : 1) : ires[o];
            long got = 0;
            switch (kind) {
            case 'f':
                got = types[k].sz == 4   ? (long)*(float *)io
                      : types[k].sz == 8 ? (long)*(double *)io
                                         : (long)*(long double *)io;
                break;
            case 'c': {
                double re = types[k].sz == 8    ? crealf(*(float _Complex *)io)
                            : types[k].sz == 16 ? creal(*(double _Complex *)io)
                                                : (double)creall(*(long double _Complex *)io);
                double im = types[k].sz == 8    ? cimagf(*(float _Complex *)io)
                            : types[k].sz == 16 ? cimag(*(double _Complex *)io)
                                                : (double)cimagl(*(long double _Complex *)io);
                got = (long)re;
                if (im != (o == OP_SUM ? 1 : 5))
                    got = -999;
                break;
            }
            default:
                memcpy(&got, io, types[k].sz);
            }
            if (got != want) {
                bad++;
                fprintf(stderr, "type %zu op %d: %ld, want %ld\n", k, o, got, want);
            }
        }
    BM_CHECK_EQ_INT(bad, 0);
    /* MAXLOC/MINLOC on every pair type, ties to the lower index */
    struct {
        float v;
        int i;
    } fa = {2, 9}, fb = {2, 4};
    BM_CHECK_EQ_INT(MPI_Reduce_local(&fa, &fb, 1, MPI_FLOAT_INT, MPI_MAXLOC), MPI_SUCCESS);
    BM_CHECK(fb.i == 4);
    struct {
        double v, i;
    } da = {3, 1}, db = {2, 7};
    BM_CHECK_EQ_INT(MPI_Reduce_local(&da, &db, 1, MPI_2DOUBLE_PRECISION, MPI_MAXLOC), MPI_SUCCESS);
    BM_CHECK(db.v == 3 && db.i == 1);
    struct {
        short v;
        int i;
    } sa = {-1, 3}, sb = {4, 2};
    BM_CHECK_EQ_INT(MPI_Reduce_local(&sa, &sb, 1, MPI_SHORT_INT, MPI_MINLOC), MPI_SUCCESS);
    BM_CHECK(sb.v == -1 && sb.i == 3);
    BM_CHECK_EQ_INT(MPI_Reduce_local(&sa, &sb, 1, MPI_SHORT_INT, MPI_SUM), MPI_ERR_OP);
    BM_CHECK_EQ_INT(MPI_Reduce_local(&fa, &fb, 1, MPI_FLOAT, MPI_MAXLOC), MPI_ERR_OP);
}

static int user_calls;

/* inout = in * 10 + inout on the ints of a struct {int a; double pad; int b} */
static void user_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    struct rec {
        int a;
        double d;
        int b;
    } *x = in, *y = inout;
    for (int i = 0; i < *len; i++) {
        y[i].a = x[i].a * 10 + y[i].a;
        y[i].d = x[i].d * 10 + y[i].d;
    }
    user_calls++;
}

static void test_reduce_derived(void)
{
    /* a vector of ints: SUM where they lie, gaps untouched */
    MPI_Datatype v;
    MPI_Type_vector(3, 1, 2, MPI_INT, &v);
    MPI_Type_commit(&v);
    int a[6] = {1, 100, 2, 100, 3, 100}, b[6] = {10, -1, 20, -1, 30, -1};
    BM_CHECK_EQ_INT(MPI_Reduce_local(a, b, 1, v, MPI_SUM), MPI_SUCCESS);
    BM_CHECK(b[0] == 11 && b[2] == 22 && b[4] == 33 && b[1] == -1 && b[3] == -1);
    BM_CHECK_EQ_INT(MPI_Reduce_local(a, b, 1, v, MPI_MAXLOC), MPI_ERR_OP);
    int c[6];
    for (int i = 0; i < 6; i++)
        c[i] = (rank + 1) * (i + 1);
    int out[6] = {0};
    BM_CHECK_EQ_INT(MPI_Allreduce(c, out, 1, v, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    BM_CHECK(out[0] == size * (size + 1) / 2 && out[4] == 5 * size * (size + 1) / 2);
    MPI_Type_free(&v);
    /* pairs in a derived type: MAXLOC per pair */
    MPI_Datatype pv;
    MPI_Type_contiguous(2, MPI_DOUBLE_INT, &pv);
    MPI_Type_commit(&pv);
    struct {
        double v;
        int i;
    } p[2] = {{1, 0}, {9, 0}}, q[2] = {{5, 1}, {2, 1}};
    BM_CHECK_EQ_INT(MPI_Reduce_local(p, q, 1, pv, MPI_MAXLOC), MPI_SUCCESS);
    BM_CHECK(q[0].v == 5 && q[0].i == 1 && q[1].v == 9 && q[1].i == 0);
    MPI_Type_free(&pv);
    /* a mixed struct takes only user operations */
    MPI_Datatype st;
    MPI_Type_create_struct(2, (int[]){1, 1}, (MPI_Aint[]){0, 8},
                           (MPI_Datatype[]){MPI_INT, MPI_DOUBLE}, &st);
    MPI_Type_commit(&st);
    struct {
        int a;
        double d;
        int b;
    } x = {1, 2.0, 0}, y = {3, 4.0, 0};
    BM_CHECK_EQ_INT(MPI_Reduce_local(&x, &y, 1, st, MPI_SUM), MPI_ERR_OP);
    MPI_Op op;
    MPI_Op_create(user_fn, 0, &op);
    BM_CHECK_EQ_INT(MPI_Reduce_local(&x, &y, 1, st, op), MPI_SUCCESS);
    BM_CHECK(y.a == 13 && y.d == 24.0 && user_calls == 1);
    MPI_Op_free(&op);
    MPI_Type_free(&st);
}

/* ---- attributes ---------------------------------------------------------------- */

static int deletes, copies;

static int attr_copy(MPI_Datatype t, int key, void *extra, void *in, void *out, int *flag)
{
    (void)t;
    (void)key;
    (void)extra;
    copies++;
    *(void **)out = (char *)in + 1;
    *flag = 1;
    return MPI_SUCCESS;
}

static int attr_delete(MPI_Datatype t, int key, void *val, void *extra)
{
    (void)t;
    (void)key;
    (void)val;
    (void)extra;
    deletes++;
    return MPI_SUCCESS;
}

static void test_attributes(void)
{
    int key, flag;
    void *val;
    static char base[4];
    MPI_Datatype t, u;
    MPI_Type_contiguous(2, MPI_INT, &t);
    BM_CHECK_EQ_INT(MPI_Type_create_keyval(attr_copy, attr_delete, &key, NULL), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Type_set_attr(t, key, base), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Type_get_attr(t, key, &val, &flag), MPI_SUCCESS);
    BM_CHECK(flag && val == base);
    MPI_Type_dup(t, &u);
    BM_CHECK_EQ_INT(MPI_Type_get_attr(u, key, &val, &flag), MPI_SUCCESS);
    BM_CHECK(flag && val == base + 1 && copies == 1);
    BM_CHECK_EQ_INT(MPI_Type_delete_attr(u, key), MPI_SUCCESS);
    BM_CHECK_EQ_INT(deletes, 1);
    BM_CHECK_EQ_INT(MPI_Type_get_attr(u, key, &val, &flag), MPI_SUCCESS);
    BM_CHECK(!flag);
    MPI_Type_free_keyval(&key);
    BM_CHECK(key == MPI_KEYVAL_INVALID);
    MPI_Type_free(&t); /* the attribute's delete runs although the key is freed */
    BM_CHECK_EQ_INT(deletes, 2);
    MPI_Type_free(&u);
    BM_CHECK_EQ_INT(MPI_Type_get_attr(MPI_INT, 12345, &val, &flag), MPI_ERR_KEYVAL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    BM_RUN(test_constructors);
    BM_RUN(test_subarray);
    BM_RUN(test_darray);
    BM_RUN(test_p2p_sizes);
    BM_RUN(test_p2p_partial);
    BM_RUN(test_p2p_constructors);
    BM_RUN(test_bottom);
    BM_RUN(test_external32);
    BM_RUN(test_reduction_pairs);
    BM_RUN(test_reduce_derived);
    BM_RUN(test_attributes);
    MPI_Finalize();
    return bm_test_summary("api_dtype_derived");
}
