/* Collectives on MPI_COMM_WORLD, MPI_COMM_SELF and communicators from
 * MPI_Comm_dup/MPI_Comm_split: MPI_Barrier, MPI_Bcast from every root at
 * sizes from 0 bytes to 4 MiB, and MPI_Reduce/MPI_Allreduce for every
 * predefined operation on every datatype it is defined on, with MPI_IN_PLACE,
 * MAXLOC/MINLOC on every pair type (ties go to the lower rank), a
 * non-commutative user operation that detects any combination out of rank
 * order, and floating-point allreduce results that must be bit-identical on
 * every rank. Contributions are chosen so that the exact result is known. */
#include "bm_test.h"

#include <complex.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

#define ACCESSORS(name, ctype)                                                                     \
    static void set_##name(void *b, int i, long double v)                                          \
    {                                                                                              \
        ((ctype *)b)[i] = (ctype)v;                                                                \
    }                                                                                              \
    static long double get_##name(const void *b, int i)                                            \
    {                                                                                              \
        return (long double)((const ctype *)b)[i];                                                 \
    }
ACCESSORS(int, int)
ACCESSORS(unsigned, unsigned)
ACCESSORS(short, short)
ACCESSORS(ushort, unsigned short)
ACCESSORS(schar, signed char)
ACCESSORS(uchar, unsigned char)
ACCESSORS(long, long)
ACCESSORS(ulong, unsigned long)
ACCESSORS(llong, long long)
ACCESSORS(ullong, unsigned long long)
ACCESSORS(i8, int8_t)
ACCESSORS(i16, int16_t)
ACCESSORS(i32, int32_t)
ACCESSORS(i64, int64_t)
ACCESSORS(u8, uint8_t)
ACCESSORS(u16, uint16_t)
ACCESSORS(u32, uint32_t)
ACCESSORS(u64, uint64_t)
ACCESSORS(aint, MPI_Aint)
ACCESSORS(float, float)
ACCESSORS(double, double)
ACCESSORS(ldouble, long double)
ACCESSORS(bool, _Bool)
ACCESSORS(byte, unsigned char)

enum kind { K_INT, K_FLOAT, K_BOOL, K_BYTE };

struct tdesc {
    MPI_Datatype dt;
    const char *name;
    enum kind kind;
    bool is_signed;
    size_t size;
    void (*set)(void *, int, long double);
    long double (*get)(const void *, int);
};

#define T(dt, acc, kind, sgn, ctype)                                                               \
    {                                                                                              \
        dt, #dt, kind, sgn, sizeof(ctype), set_##acc, get_##acc                                    \
    }
static const struct tdesc types[] = {
    T(MPI_INT, int, K_INT, true, int),
    T(MPI_UNSIGNED, unsigned, K_INT, false, unsigned),
    T(MPI_SHORT, short, K_INT, true, short),
    T(MPI_UNSIGNED_SHORT, ushort, K_INT, false, unsigned short),
    T(MPI_SIGNED_CHAR, schar, K_INT, true, signed char),
    T(MPI_UNSIGNED_CHAR, uchar, K_INT, false, unsigned char),
    T(MPI_LONG, long, K_INT, true, long),
    T(MPI_UNSIGNED_LONG, ulong, K_INT, false, unsigned long),
    T(MPI_LONG_LONG, llong, K_INT, true, long long),
    T(MPI_UNSIGNED_LONG_LONG, ullong, K_INT, false, unsigned long long),
    T(MPI_INT8_T, i8, K_INT, true, int8_t),
    T(MPI_INT16_T, i16, K_INT, true, int16_t),
    T(MPI_INT32_T, i32, K_INT, true, int32_t),
    T(MPI_INT64_T, i64, K_INT, true, int64_t),
    T(MPI_UINT8_T, u8, K_INT, false, uint8_t),
    T(MPI_UINT16_T, u16, K_INT, false, uint16_t),
    T(MPI_UINT32_T, u32, K_INT, false, uint32_t),
    T(MPI_UINT64_T, u64, K_INT, false, uint64_t),
    T(MPI_AINT, aint, K_INT, true, MPI_Aint),
    T(MPI_FLOAT, float, K_FLOAT, true, float),
    T(MPI_DOUBLE, double, K_FLOAT, true, double),
    T(MPI_LONG_DOUBLE, ldouble, K_FLOAT, true, long double),
    T(MPI_C_BOOL, bool, K_BOOL, false, _Bool),
    T(MPI_BYTE, byte, K_BYTE, false, unsigned char),
};
#define NTYPES (sizeof(types) / sizeof(types[0]))

enum opk { O_MAX, O_MIN, O_SUM, O_PROD, O_LAND, O_LOR, O_LXOR, O_BAND, O_BOR, O_BXOR };
static const struct {
    const char *name;
    enum opk k;
} ops[] = {{"MPI_MAX", O_MAX},   {"MPI_MIN", O_MIN},  {"MPI_SUM", O_SUM},   {"MPI_PROD", O_PROD},
           {"MPI_LAND", O_LAND}, {"MPI_LOR", O_LOR},  {"MPI_LXOR", O_LXOR}, {"MPI_BAND", O_BAND},
           {"MPI_BOR", O_BOR},   {"MPI_BXOR", O_BXOR}};

static MPI_Op op_handle(enum opk k)
{
    MPI_Op h[] = {MPI_MAX, MPI_MIN,  MPI_SUM,  MPI_PROD, MPI_LAND,
                  MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR,  MPI_BXOR};
    return h[k];
}

static bool defined_on(enum opk k, enum kind t)
{
    switch (k) {
    case O_MAX:
    case O_MIN:
    case O_SUM:
    case O_PROD:
        return t == K_INT || t == K_FLOAT;
    case O_LAND:
    case O_LOR:
    case O_LXOR:
        return t == K_INT || t == K_BOOL;
    default:
        return t == K_INT || t == K_BYTE;
    }
}

/* Rank r's element i: small values whose exact result fits every type
 * (sums <= 88, products <= 8, bit patterns < 128), negative ones for
 * signed types. */
static long double contribution(enum opk k, const struct tdesc *t, int r, int i)
{
    switch (k) {
    case O_MAX:
    case O_MIN:
    case O_SUM: {
        long double v = (r * 7 + i * 3) % 11 + 1;
        return t->is_signed && t->kind != K_BYTE ? v - 5 : v;
    }
    case O_PROD:
        return (r + i) % 3 == 0 ? 2 : 1;
    case O_LAND:
    case O_LOR:
    case O_LXOR:
        return (r + i) % 3 == 0 ? 0 : (i % 4 == 0 ? 1 : (r + i) % 2);
    default:
        return (r * 37 + i * 11) & 0x7f;
    }
}

static long double combine(enum opk k, long double a, long double b)
{
    long long x = (long long)a, y = (long long)b;

    switch (k) {
    case O_MAX:
        return a > b ? a : b;
    case O_MIN:
        return a < b ? a : b;
    case O_SUM:
        return a + b;
    case O_PROD:
        return a * b;
    case O_LAND:
        return (x && y);
    case O_LOR:
        return (x || y);
    case O_LXOR:
        return (!x != !y);
    case O_BAND:
        return x & y;
    case O_BOR:
        return x | y;
    case O_BXOR:
        return x ^ y;
    }
    return 0;
}

static long double expected(enum opk k, const struct tdesc *t, int n, int i)
{
    long double acc = contribution(k, t, 0, i);
    for (int r = 1; r < n; r++)
        acc = combine(k, acc, contribution(k, t, r, i));
    return acc;
}

#define COUNT 7

/* One (type, op) pair through Allreduce, Allreduce in place, and Reduce to
 * two roots (the second one in place). */
static void check_reduction(MPI_Comm comm, const struct tdesc *t, enum opk k)
{
    int n, me;
    unsigned char in[COUNT * 16], out[COUNT * 16];
    MPI_Op op = op_handle(k);
    const char *opname = ops[k].name;

    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    for (int variant = 0; variant < 4; variant++) {
        int root = variant == 2 ? 0 : n - 1;
        bool at_root = variant < 2 || me == root;
        int rc;

        memset(out, 0xee, sizeof(out));
        for (int i = 0; i < COUNT; i++)
            t->set(in, i, contribution(k, t, me, i));
        if (variant == 1 || (variant == 3 && me == root))
            memcpy(out, in, sizeof(in));
        if (variant == 0)
            rc = MPI_Allreduce(in, out, COUNT, t->dt, op, comm);
        else if (variant == 1)
            rc = MPI_Allreduce(MPI_IN_PLACE, out, COUNT, t->dt, op, comm);
        else if (variant == 2)
            rc = MPI_Reduce(in, out, COUNT, t->dt, op, root, comm);
        else
            rc = MPI_Reduce(me == root ? MPI_IN_PLACE : in, out, COUNT, t->dt, op, root, comm);
        BM_CHECK_MSG(rc == MPI_SUCCESS, "%s on %s variant %d: rc %d", opname, t->name, variant, rc);
        if (!at_root)
            continue;
        for (int i = 0; i < COUNT; i++) {
            long double want = expected(k, t, n, i), got = t->get(out, i);
            if (got != want) {
                BM_CHECK_MSG(0, "%s on %s variant %d np %d element %d: got %Lg, want %Lg", opname,
                             t->name, variant, n, i, got, want);
                break;
            }
        }
    }
}

static void test_all_ops(void)
{
    for (size_t t = 0; t < NTYPES; t++)
        for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++)
            if (defined_on(ops[k].k, types[t].kind))
                check_reduction(MPI_COMM_WORLD, &types[t], ops[k].k);
    bm_test_passed++;
}

static void test_complex(void)
{
    double _Complex in[3], out[3], want[3];

    for (int i = 0; i < 3; i++) {
        in[i] = (rank + 1) + I * (i - rank % 2);
        want[i] = 0;
        for (int r = 0; r < size; r++)
            want[i] += (r + 1) + I * (i - r % 2);
    }
    BM_CHECK_EQ_INT(MPI_Allreduce(in, out, 3, MPI_C_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD),
                    MPI_SUCCESS);
    for (int i = 0; i < 3; i++)
        BM_CHECK(out[i] == want[i]);
    /* (1 + i)^size */
    for (int i = 0; i < 3; i++)
        in[i] = 1 + I;
    want[0] = 1;
    for (int r = 0; r < size; r++)
        want[0] *= 1 + I;
    BM_CHECK_EQ_INT(MPI_Allreduce(in, out, 3, MPI_C_DOUBLE_COMPLEX, MPI_PROD, MPI_COMM_WORLD),
                    MPI_SUCCESS);
    BM_CHECK(out[0] == want[0] && out[2] == want[0]);
}

/* MAXLOC/MINLOC on every pair type: value (r * 3 + i) % 4 with ties, index r. */
#define PAIR_TEST(vtype, dt)                                                                       \
    do {                                                                                           \
        struct {                                                                                   \
            vtype v;                                                                               \
            int i;                                                                                 \
        } in[5], out[5];                                                                           \
        for (int j = 0; j < 5; j++) {                                                              \
            in[j].v = (vtype)((rank * 3 + j) % 4);                                                 \
            in[j].i = rank;                                                                        \
        }                                                                                          \
        for (int loc = 0; loc < 2; loc++) {                                                        \
            BM_CHECK_EQ_INT(                                                                       \
                MPI_Allreduce(in, out, 5, dt, loc ? MPI_MINLOC : MPI_MAXLOC, MPI_COMM_WORLD),      \
                MPI_SUCCESS);                                                                      \
            for (int j = 0; j < 5; j++) {                                                          \
                int best = 0, bi = 0;                                                              \
                for (int r = 0; r < size; r++) {                                                   \
                    int v = (r * 3 + j) % 4;                                                       \
                    if (r == 0 || (loc ? v < best : v > best)) {                                   \
                        best = v;                                                                  \
                        bi = r;                                                                    \
                    }                                                                              \
                }                                                                                  \
                BM_CHECK_MSG(out[j].v == (vtype)best && out[j].i == bi,                            \
                             "%s %s element %d: got (%g, %d), want (%d, %d)",                      \
                             loc ? "MINLOC" : "MAXLOC", #dt, j, (double)out[j].v, out[j].i, best,  \
                             bi);                                                                  \
            }                                                                                      \
        }                                                                                          \
        /* Reduce in place at the last rank. */                                                    \
        memcpy(out, in, sizeof(in));                                                               \
        BM_CHECK_EQ_INT(MPI_Reduce(rank == size - 1 ? MPI_IN_PLACE : (void *)in, out, 5, dt,       \
                                   MPI_MAXLOC, size - 1, MPI_COMM_WORLD),                          \
                        MPI_SUCCESS);                                                              \
        if (rank == size - 1)                                                                      \
            BM_CHECK(out[0].v == (vtype)(size > 1 ? 3 : 0));                                       \
    } while (0)

static void test_maxloc_minloc(void)
{
    PAIR_TEST(float, MPI_FLOAT_INT);
    PAIR_TEST(double, MPI_DOUBLE_INT);
    PAIR_TEST(long, MPI_LONG_INT);
    PAIR_TEST(int, MPI_2INT);
    PAIR_TEST(short, MPI_SHORT_INT);
    PAIR_TEST(long double, MPI_LONG_DOUBLE_INT);
}

/* Non-commutative: an element is a run [first, last] of ranks; combining
 * [a, b] with [c, d] is valid only when c == b + 1. The result is valid
 * only when every combination happened in rank order. */
static void ordered_runs(void *invec, void *inoutvec, int *len, MPI_Datatype *dt)
{
    int *a = invec, *b = inoutvec;

    (void)dt;
    for (int i = 0; i < *len; i += 3) {
        b[i + 2] = a[i + 2] && b[i + 2] && b[i] == a[i + 1] + 1;
        b[i] = a[i];
    }
}

static int sum_calls;

static void commutative_sum(void *invec, void *inoutvec, int *len, MPI_Datatype *dt)
{
    (void)dt;
    sum_calls++;
    for (int i = 0; i < *len; i++)
        ((long *)inoutvec)[i] += ((long *)invec)[i];
}

static void test_user_ops(MPI_Comm comm)
{
    MPI_Op ord, sum;
    int n, me, commute = -1;
    int in[6], out[6];
    long lin = 0, lout = 0;

    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    BM_CHECK_EQ_INT(MPI_Op_create(ordered_runs, 0, &ord), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Op_create(commutative_sum, 1, &sum), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Op_commutative(ord, &commute), MPI_SUCCESS);
    BM_CHECK_EQ_INT(commute, 0);
    for (int root = 0; root < n; root += (n > 2 ? n - 1 : 1)) {
        for (int i = 0; i < 6; i += 3) {
            in[i] = in[i + 1] = me;
            in[i + 2] = 1;
        }
        memset(out, 0, sizeof(out));
        BM_CHECK_EQ_INT(MPI_Reduce(in, out, 6, MPI_INT, ord, root, comm), MPI_SUCCESS);
        if (me == root)
            BM_CHECK_MSG(out[0] == 0 && out[2] == 1 && out[3] == 0 && out[5] == 1,
                         "non-commutative reduce to root %d out of order: [%d, valid %d]", root,
                         out[0], out[2]);
    }
    BM_CHECK_EQ_INT(MPI_Allreduce(in, out, 6, MPI_INT, ord, comm), MPI_SUCCESS);
    BM_CHECK_MSG(out[0] == 0 && out[2] == 1 && out[5] == 1,
                 "non-commutative allreduce out of order: [%d, valid %d]", out[0], out[2]);
    lin = me + 1;
    BM_CHECK_EQ_INT(MPI_Allreduce(&lin, &lout, 1, MPI_LONG, sum, comm), MPI_SUCCESS);
    BM_CHECK_EQ_INT(lout, (long)n * (n + 1) / 2);
    BM_CHECK_EQ_INT(MPI_Op_free(&ord), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Op_free(&sum), MPI_SUCCESS);
    BM_CHECK(ord == MPI_OP_NULL);

    /* Freed while a nonblocking and a persistent collective hold it: both
     * keep it, its function still runs after MPI_Op_free (MPICH's
     * coll/nonblocking3; under ASan a use after free fails here). */
    MPI_Request rq[2];
    long pout = 0;
    BM_CHECK_EQ_INT(MPI_Op_create(commutative_sum, 1, &sum), MPI_SUCCESS);
    lout = 0;
    BM_CHECK_EQ_INT(MPI_Iallreduce(&lin, &lout, 1, MPI_LONG, sum, comm, &rq[0]), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Allreduce_init(&lin, &pout, 1, MPI_LONG, sum, comm, MPI_INFO_NULL, &rq[1]),
                    MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Op_free(&sum), MPI_SUCCESS);
    BM_CHECK(sum == MPI_OP_NULL);
    sum_calls = 0;
    BM_CHECK_EQ_INT(MPI_Wait(&rq[0], MPI_STATUS_IGNORE), MPI_SUCCESS);
    BM_CHECK_EQ_INT(lout, (long)n * (n + 1) / 2);
    for (int round = 0; round < 2; round++) {
        pout = 0;
        BM_CHECK_EQ_INT(MPI_Start(&rq[1]), MPI_SUCCESS);
        BM_CHECK_EQ_INT(MPI_Wait(&rq[1], MPI_STATUS_IGNORE), MPI_SUCCESS);
        BM_CHECK_EQ_INT(pout, (long)n * (n + 1) / 2);
    }
    BM_CHECK_EQ_INT(MPI_Request_free(&rq[1]), MPI_SUCCESS);
    int calls = 0;
    MPI_Allreduce(&sum_calls, &calls, 1, MPI_INT, MPI_SUM, comm);
    BM_CHECK(n == 1 || calls > 0);
}

/* Doubles of very different magnitudes: the sum depends on the order of
 * evaluation, yet every rank must get the very same bits. Large enough to
 * need the rendezvous protocol. */
static void test_float_determinism(void)
{
    const int n = 1 << 17;
    double *in = malloc(sizeof(double) * n), *out = malloc(sizeof(double) * n);
    double *root_copy = malloc(sizeof(double) * n);
    int same, all_same = 0;

    for (int i = 0; i < n; i++)
        in[i] = (rank + 1) * 1.0e-3 * (i % 13) + ((i + rank) % 7) * 1.0e12 + 1.0 / (rank + i + 1);
    BM_CHECK_EQ_INT(MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    memcpy(root_copy, out, sizeof(double) * n);
    BM_CHECK_EQ_INT(MPI_Bcast(root_copy, n, MPI_DOUBLE, 0, MPI_COMM_WORLD), MPI_SUCCESS);
    same = memcmp(root_copy, out, sizeof(double) * n) == 0;
    BM_CHECK_EQ_INT(MPI_Allreduce(&same, &all_same, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD),
                    MPI_SUCCESS);
    BM_CHECK_MSG(all_same, "MPI_Allreduce(MPI_SUM, MPI_DOUBLE) results differ between ranks");
    /* And it is the sum, to rounding. */
    for (int i = 0; i < n; i += 4099) {
        long double want = 0;
        for (int r = 0; r < size; r++)
            want += (r + 1) * 1.0e-3 * (i % 13) + ((i + r) % 7) * 1.0e12 + 1.0 / (r + i + 1);
        BM_CHECK_MSG(out[i] == 0 ? want == 0
                                 : (out[i] - want) / want < 1e-12 && (want - out[i]) / want < 1e-12,
                     "element %d: %.17g vs %.17Lg", i, out[i], want);
    }
    free(in);
    free(out);
    free(root_copy);
}

static void test_bcast(MPI_Comm comm)
{
    static const size_t sizes[] = {0, 1, 7, 4096, 65537, 4u << 20};
    int n, me;
    unsigned char *buf = malloc(4u << 20);

    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        for (int root = 0; root < n; root++) {
            bool ok = true;
            /* Every root for small messages; two for the large ones. */
            if (sizes[s] > 65537 && root != 0 && root != n - 1)
                continue;
            for (size_t i = 0; i < sizes[s]; i++)
                buf[i] = me == root ? (unsigned char)(i * 31 + root) : 0xa5;
            BM_CHECK_EQ_INT(MPI_Bcast(buf, (int)sizes[s], MPI_BYTE, root, comm), MPI_SUCCESS);
            for (size_t i = 0; i < sizes[s] && ok; i++)
                ok = buf[i] == (unsigned char)(i * 31 + root);
            BM_CHECK_MSG(ok, "bcast of %zu bytes from root %d: wrong data", sizes[s], root);
        }
    }
    /* A typed broadcast. */
    {
        double d[3] = {me == 0 ? 1.5 : 0, me == 0 ? -2.25 : 0, me == 0 ? 1e300 : 0};
        BM_CHECK_EQ_INT(MPI_Bcast(d, 3, MPI_DOUBLE, 0, comm), MPI_SUCCESS);
        BM_CHECK(d[0] == 1.5 && d[1] == -2.25 && d[2] == 1e300);
    }
    free(buf);
}

static void test_bcast_world(void)
{
    test_bcast(MPI_COMM_WORLD);
}

static void test_user_ops_world(void)
{
    test_user_ops(MPI_COMM_WORLD);
}

static void test_large_allreduce(void)
{
    const int n = 300001; /* 1.2 MB of ints, not a multiple of any rank count */
    int *in = malloc(sizeof(int) * n), *out = malloc(sizeof(int) * n);
    bool ok = true;

    for (int i = 0; i < n; i++)
        in[i] = i % 1000 + rank;
    BM_CHECK_EQ_INT(MPI_Allreduce(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    for (int i = 0; i < n && ok; i++)
        ok = out[i] == (i % 1000) * size + size * (size - 1) / 2;
    BM_CHECK_MSG(ok, "large allreduce: wrong sum");
    BM_CHECK_EQ_INT(MPI_Reduce(in, out, n, MPI_INT, MPI_MAX, size / 2, MPI_COMM_WORLD),
                    MPI_SUCCESS);
    if (rank == size / 2) {
        ok = true;
        for (int i = 0; i < n && ok; i++)
            ok = out[i] == i % 1000 + size - 1;
        BM_CHECK_MSG(ok, "large reduce: wrong max");
    }
    /* Root 0 sits out the power-of-two part when the rank count is not one. */
    memcpy(out, in, sizeof(int) * n);
    BM_CHECK_EQ_INT(
        MPI_Reduce(rank == 0 ? MPI_IN_PLACE : in, out, n, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD),
        MPI_SUCCESS);
    if (rank == 0) {
        ok = true;
        for (int i = 0; i < n && ok; i++)
            ok = out[i] == (i % 1000) * size + size * (size - 1) / 2;
        BM_CHECK_MSG(ok, "large in-place reduce to rank 0: wrong sum");
    }
    free(in);
    free(out);
}

static void test_barrier(void)
{
    double entered = 0, last_entered = 0, left, first_left = 0;

    for (int round = 0; round < 20; round++)
        BM_CHECK_EQ_INT(MPI_Barrier(MPI_COMM_WORLD), MPI_SUCCESS);
    /* The last rank enters 50 ms late; no rank may leave before it entered.
     * All ranks share one host, so their monotonic clocks compare. */
    if (rank == size - 1) {
        double t0 = MPI_Wtime();
        while (MPI_Wtime() - t0 < 0.05) {
        }
        entered = MPI_Wtime();
    }
    BM_CHECK_EQ_INT(MPI_Barrier(MPI_COMM_WORLD), MPI_SUCCESS);
    left = MPI_Wtime();
    BM_CHECK_EQ_INT(MPI_Allreduce(&entered, &last_entered, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD),
                    MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Allreduce(&left, &first_left, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD),
                    MPI_SUCCESS);
    BM_CHECK_MSG(first_left >= last_entered,
                 "a rank left the barrier %.6f s before the last rank entered it",
                 last_entered - first_left);
}

static void test_comm_self(void)
{
    int v = rank + 10, out = -1;
    double d = 3.5, dout = 0;

    BM_CHECK_EQ_INT(MPI_Barrier(MPI_COMM_SELF), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_SELF), MPI_SUCCESS);
    BM_CHECK_EQ_INT(v, rank + 10);
    BM_CHECK_EQ_INT(MPI_Allreduce(&v, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF), MPI_SUCCESS);
    BM_CHECK_EQ_INT(out, rank + 10);
    BM_CHECK_EQ_INT(MPI_Reduce(&d, &dout, 1, MPI_DOUBLE, MPI_PROD, 0, MPI_COMM_SELF), MPI_SUCCESS);
    BM_CHECK(dout == 3.5);
    BM_CHECK_EQ_INT(MPI_Allreduce(MPI_IN_PLACE, &d, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_SELF),
                    MPI_SUCCESS);
    BM_CHECK(d == 3.5);
    BM_CHECK_EQ_INT(MPI_Bcast(&v, 1, MPI_INT, 1, MPI_COMM_SELF), MPI_ERR_ROOT);
    test_user_ops(MPI_COMM_SELF);
}

static void test_new_comms(void)
{
    MPI_Comm dup, half;
    int n, me, sum = 0, cmp, want = 0;

    BM_CHECK_EQ_INT(MPI_Comm_dup(MPI_COMM_WORLD, &dup), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Comm_compare(dup, MPI_COMM_WORLD, &cmp), MPI_SUCCESS);
    BM_CHECK_EQ_INT(cmp, MPI_CONGRUENT);
    test_bcast(dup);
    test_user_ops(dup);

    /* Even and odd world ranks, each half in reverse order. */
    BM_CHECK_EQ_INT(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half), MPI_SUCCESS);
    MPI_Comm_size(half, &n);
    MPI_Comm_rank(half, &me);
    BM_CHECK_EQ_INT(n, rank % 2 ? size / 2 : (size + 1) / 2);
    BM_CHECK_EQ_INT(me, (n - 1) - rank / 2);
    for (int r = rank % 2; r < size; r += 2)
        want += r;
    BM_CHECK_EQ_INT(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, half), MPI_SUCCESS);
    BM_CHECK_EQ_INT(sum, want);
    /* Interleave collectives on the three communicators. */
    BM_CHECK_EQ_INT(MPI_Barrier(dup), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), MPI_SUCCESS);
    BM_CHECK_EQ_INT(sum, size - 1);
    test_bcast(half);
    test_user_ops(half);
    BM_CHECK_EQ_INT(MPI_Comm_free(&half), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 0 : MPI_UNDEFINED, 0, &half),
                    MPI_SUCCESS);
    BM_CHECK(rank == 0 ? half != MPI_COMM_NULL : half == MPI_COMM_NULL);
    if (half != MPI_COMM_NULL)
        BM_CHECK_EQ_INT(MPI_Comm_free(&half), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Comm_free(&dup), MPI_SUCCESS);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    BM_RUN(test_barrier);
    BM_RUN(test_bcast_world);
    BM_RUN(test_all_ops);
    BM_RUN(test_complex);
    BM_RUN(test_maxloc_minloc);
    BM_RUN(test_user_ops_world);
    BM_RUN(test_float_determinism);
    BM_RUN(test_large_allreduce);
    BM_RUN(test_comm_self);
    BM_RUN(test_new_comms);
    MPI_Finalize();
    return bm_test_summary("api_coll");
}
