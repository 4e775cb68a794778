/* Every collective in its three forms (blocking, nonblocking + MPI_Wait,
 * persistent: init, two MPI_Start/MPI_Wait rounds with different data,
 * free), on MPI_COMM_WORLD and on a communicator of the odd ranks in
 * reverse order, with zero, small, medium and large counts, MPI_IN_PLACE
 * where the standard allows it, a contiguous derived datatype, a
 * non-commutative user operation (composition of affine maps, which shows
 * any combination out of rank order) and a commutative user operation.
 * Each rank computes the exact expected result locally from the formula
 * that generated everybody's data (the naive reference: what rank r
 * contributed is known everywhere), so a wrong byte anywhere is caught.
 * Then nonblocking collectives on two communicators overlapped with each
 * other and with point-to-point traffic, completed in several orders, and
 * the neighbourhood collectives on Cartesian rings (2-rank periodic ring:
 * the block order of issue 16) and on a graph with repeated edges.
 *
 * The ctest entries run it at 1 to 9 ranks with the automatic algorithm
 * choice and with every algorithm forced by its BM_MPI_COLL_*_ALG
 * parameter; BM_TEST_COLL_EXPECT names the algorithms that must have run
 * (checked with bm_coll_alg_count), so a parameter that silently stopped
 * forcing its algorithm fails the test. Forced launches run the matrix
 * (and the disjoint communicators when they force sm) only, each type and
 * operation variant in one of the three forms (--thin: the same thinning
 * for automatic launches at 6 ranks and more). */
#include "bitmover.h"
#include "bm_test.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int wrank, wsize;
static MPI_Datatype pair_t; /* contiguous 2 x MPI_INT: a derived datatype */
static MPI_Op affine_op;    /* non-commutative: composition of x -> a x + b */
static MPI_Op usum_op;      /* commutative user operation: sum of ints */
static MPI_Datatype gap_t;  /* MPI_INT resized to 8 bytes: a 4-byte hole after each element */
static bool gap;            /* the call under test uses gap_t: odd ints are holes */
#define JUNK 0x5eed5eed     /* what send buffers hold in holes (it must not arrive) */
static int form;            /* 0 blocking, 1 nonblocking, 2 persistent */

/* Int i of a buffer of gap_t elements is a hole (not data). */
static bool hole(size_t i)
{
    return gap && (i % 2) == 1;
}
static const char *const form_names[] = {"blocking", "nonblocking", "persistent"};
static int failures_reported;

static int val(int r, int i, int salt)
{
    return (r * 131 + i * 7 + salt * 17) % 1000 - 300;
}

/* Affine map of rank r, element i: (a, b) with a odd. */
static void affine_of(int r, int i, int salt, unsigned *a, unsigned *b)
{
    *a = 1u + 2u * (unsigned)((r + i + salt) % 5);
    *b = (unsigned)((r * 31 + i * 3 + salt) % 97);
}

/* inout = in o inout: in holds the lower ranks. */
static void affine_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    unsigned *x = in, *y = inout;
    (void)dt;
    for (int k = 0; k < *len; k++) {
        unsigned a = x[2 * k], b = x[2 * k + 1], c = y[2 * k], d = y[2 * k + 1];
        y[2 * k] = a * c;
        y[2 * k + 1] = a * d + b;
    }
}

static void usum_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int *x = in, *y = inout;
    (void)dt;
    for (int k = 0; k < *len; k++)
        y[k] += x[k];
}

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        if (failures_reported++ < 10) {                                                            \
            char msg_[512];                                                                        \
            snprintf(msg_, sizeof(msg_), __VA_ARGS__);                                             \
            bm_test_fail(__FILE__, __LINE__, "rank %d, %s: %s", wrank, form_names[form], msg_);    \
        } else {                                                                                   \
            bm_test_failed++;                                                                      \
        }                                                                                          \
    } while (0)

/* Compare n ints; report the first difference. */
static void expect_ints(const int *got, const int *want, size_t n, const char *what, int count)
{
    for (size_t i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            FAIL("%s (count %d): element %zu is %d, expected %d", what, count, i, got[i], want[i]);
            return;
        }
    }
    bm_test_passed++;
}

/* ---- running one call in the form under test ----------------------------------------- */

/* A call made blocking, nonblocking or persistent. The persistent form runs
 * twice: refill() is called between the two starts so the second run sees
 * new data (salt + 1), and check() after each. */
struct call {
    int (*blocking)(void *ctx);
    int (*nonblocking)(void *ctx, MPI_Request *r);
    int (*init)(void *ctx, MPI_Request *r);
    void (*fill)(void *ctx, int salt);
    void (*check)(void *ctx, int salt);
    void *ctx;
};

static void run_call(const struct call *c, int salt)
{
    MPI_Request r = MPI_REQUEST_NULL;
    int rc;

    c->fill(c->ctx, salt);
    switch (form) {
    case 0:
        rc = c->blocking(c->ctx);
        BM_CHECK_EQ_INT(rc, MPI_SUCCESS);
        c->check(c->ctx, salt);
        break;
    case 1:
        rc = c->nonblocking(c->ctx, &r);
        BM_CHECK_EQ_INT(rc, MPI_SUCCESS);
        BM_CHECK_EQ_INT(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS);
        BM_CHECK(r == MPI_REQUEST_NULL);
        c->check(c->ctx, salt);
        break;
    default:
        rc = c->init(c->ctx, &r);
        BM_CHECK_EQ_INT(rc, MPI_SUCCESS);
        for (int round = 0; round < 2; round++) {
            if (round)
                c->fill(c->ctx, salt + 1);
            BM_CHECK_EQ_INT(MPI_Start(&r), MPI_SUCCESS);
            BM_CHECK_EQ_INT(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS);
            BM_CHECK(r != MPI_REQUEST_NULL);
            c->check(c->ctx, salt + round);
        }
        BM_CHECK_EQ_INT(MPI_Request_free(&r), MPI_SUCCESS);
        break;
    }
}

/* ---- the collectives ------------------------------------------------------------- */

struct ctx {
    MPI_Comm comm;
    int rank, size, count, root;
    bool in_place;
    int *sbuf, *rbuf, *want;
    size_t sn, rn; /* ints in sbuf, rbuf */
    int scounts[16], sdispls[16], rcounts[16], rdispls[16];
    MPI_Datatype stypes[16], rtypes[16];
    MPI_Aint sbd[16], rbd[16];
    MPI_Op op;
    MPI_Datatype dt;
    int width; /* ints per element of dt */
    const char *name;
};

static void buffers(struct ctx *x, size_t sn, size_t rn)
{
    free(x->sbuf);
    free(x->rbuf);
    free(x->want);
    x->sn = sn;
    x->rn = rn;
    x->sbuf = calloc(sn + 1, sizeof(int));
    x->rbuf = calloc(rn + 1, sizeof(int));
    x->want = calloc(rn + 1, sizeof(int));
}

static void poison(struct ctx *x)
{
    for (size_t i = 0; i < x->rn; i++)
        x->rbuf[i] = x->want[i] = -7777;
}

/* barrier: nothing to check but that it returns (ordering is tested by
 * the overlap test) */
static int barrier_b(void *c)
{
    return MPI_Barrier(((struct ctx *)c)->comm);
}
static int barrier_nb(void *c, MPI_Request *r)
{
    return MPI_Ibarrier(((struct ctx *)c)->comm, r);
}
static int barrier_i(void *c, MPI_Request *r)
{
    return MPI_Barrier_init(((struct ctx *)c)->comm, MPI_INFO_NULL, r);
}
static void nothing(void *c, int salt)
{
    (void)c;
    (void)salt;
}

/* bcast of count elements of dt */
static int bcast_b(void *c)
{
    struct ctx *x = c;
    return MPI_Bcast(x->rbuf, x->count, x->dt, x->root, x->comm);
}
static int bcast_nb(void *c, MPI_Request *r)
{
    struct ctx *x = c;
    return MPI_Ibcast(x->rbuf, x->count, x->dt, x->root, x->comm, r);
}
static int bcast_i(void *c, MPI_Request *r)
{
    struct ctx *x = c;
    return MPI_Bcast_init(x->rbuf, x->count, x->dt, x->root, x->comm, MPI_INFO_NULL, r);
}
static void bcast_fill(void *c, int salt)
{
    struct ctx *x = c;
    size_t n = (size_t)x->count * (size_t)x->width;
    poison(x);
    for (size_t i = 0; i < n; i++) {
        if (hole(i))
            continue;
        x->want[i] = val(x->root, (int)i, salt);
        if (x->rank == x->root)
            x->rbuf[i] = x->want[i];
    }
}
static void bcast_check(void *c, int salt)
{
    struct ctx *x = c;
    (void)salt;
    expect_ints(x->rbuf, x->want, x->rn, "MPI_Bcast", x->count);
}

/* reductions: dt/op set by the caller; elements of width ints */
static void red_contrib(const struct ctx *x, int r, size_t i, int salt, int *out)
{
    if (x->op == affine_op) {
        unsigned a, b;
        affine_of(r, (int)i, salt, &a, &b);
        out[0] = (int)a;
        out[1] = (int)b;
    } else {
        out[0] = val(r, (int)i, salt);
    }
}

/* The reduction of ranks [lo, hi) of element i, in rank order. */
static void red_expect(const struct ctx *x, int lo, int hi, size_t i, int salt, int *out)
{
    unsigned acc[2] = {1, 0}; /* identity map */
    long long sum = 0;
    for (int r = lo; r < hi; r++) {
        int v[2];
        red_contrib(x, r, i, salt, v);
        if (x->op == affine_op) {
            /* acc = acc o v */
            unsigned a = acc[0], b = acc[1];
            acc[0] = a * (unsigned)v[0];
            acc[1] = a * (unsigned)v[1] + b;
        } else {
            sum += v[0];
        }
    }
    if (x->op == affine_op) {
        out[0] = (int)acc[0];
        out[1] = (int)acc[1];
    } else {
        out[0] = (int)sum; /* with a gap type, out[1] (the hole) keeps its poison */
    }
}

/* This rank's input; the holes of a gap type get junk in the send buffer
 * (it must not travel) and keep the poison in the receive buffer. */
static void fill_contrib(struct ctx *x, int *buf, size_t elems, int salt)
{
    for (size_t i = 0; i < elems; i++) {
        red_contrib(x, x->rank, i, salt, buf + i * (size_t)x->width);
        if (gap && buf == x->sbuf)
            buf[i * 2 + 1] = JUNK;
    }
}

static int reduce_b(void *c)
{
    struct ctx *x = c;
    return MPI_Reduce(x->in_place && x->rank == x->root ? MPI_IN_PLACE : x->sbuf, x->rbuf, x->count,
                      x->dt, x->op, x->root, x->comm);
}
static int reduce_nb(void *c, MPI_Request *r)
{
    struct ctx *x = c;
    return MPI_Ireduce(x->in_place && x->rank == x->root ? MPI_IN_PLACE : x->sbuf, x->rbuf,
                       x->count, x->dt, x->op, x->root, x->comm, r);
}
static int reduce_i(void *c, MPI_Request *r)
{
    struct ctx *x = c;
    return MPI_Reduce_init(x->in_place && x->rank == x->root ? MPI_IN_PLACE : x->sbuf, x->rbuf,
                           x->count, x->dt, x->op, x->root, x->comm, MPI_INFO_NULL, r);
}
static void reduce_fill(void *c, int salt)
{
    struct ctx *x = c;
    poison(x);
    fill_contrib(x, x->in_place && x->rank == x->root ? x->rbuf : x->sbuf, (size_t)x->count, salt);
    if (x->rank == x->root)
        for (int i = 0; i < x->count; i++)
            red_expect(x, 0, x->size, (size_t)i, salt, x->want + (size_t)i * (size_t)x->width);
    else
        memcpy(x->want, x->rbuf, x->rn * sizeof(int)); /* untouched */
}
static void reduce_check(void *c, int salt)
{
    struct ctx *x = c;
    (void)salt;
    expect_ints(x->rbuf, x->want, x->rn, x->name, x->count);
}

static int allreduce_b(void *c)
{
    struct ctx *x = c;
    return MPI_Allreduce(x->in_place ? MPI_IN_PLACE : x->sbuf, x->rbuf, x->count, x->dt, x->op,
                         x->comm);
}
static int allreduce_nb(void *c, MPI_Request *r)
{
    struct ctx *x = c;
    return MPI_Iallreduce(x->in_place ? MPI_IN_PLACE : x->sbuf, x->rbuf, x->count, x->dt, x->op,
                          x->comm, r);
}
static int allreduce_i(void *c, MPI_Request *r)
{
    struct ctx *x = c;
    return MPI_Allreduce_init(x->in_place ? MPI_IN_PLACE : x->sbuf, x->rbuf, x->count, x->dt, x->op,
                              x->comm, MPI_INFO_NULL, r);
}
static void allreduce_fill(void *c, int salt)
{
    struct ctx *x = c;
    poison(x);
    fill_contrib(x, x->in_place ? x->rbuf : x->sbuf, (size_t)x->count, salt);
    for (int i = 0; i < x->count; i++)
        red_expect(x, 0, x->size, (size_t)i, salt, x->want + (size_t)i * (size_t)x->width);
}

/* scan / exscan: count, in_place; exclusive in x->root (abused as a flag) */
static int scan_b(void *c)
{
    struct ctx *x = c;
    const void *sb = x->in_place ? MPI_IN_PLACE : x->sbuf;
    return x->root ? MPI_Exscan(sb, x->rbuf, x->count, x->dt, x->op, x->comm)
                   : MPI_Scan(sb, x->rbuf, x->count, x->dt, x->op, x->comm);
}
static int scan_nb(void *c, MPI_Request *r)
{
    struct ctx *x = c;
    const void *sb = x->in_place ? MPI_IN_PLACE : x->sbuf;
    return x->root ? MPI_Iexscan(sb, x->rbuf, x->count, x->dt, x->op, x->comm, r)
                   : MPI_Iscan(sb, x->rbuf, x->count, x->dt, x->op, x->comm, r);
}
static int scan_i(void *c, MPI_Request *r)
{
    struct ctx *x = c;
    const void *sb = x->in_place ? MPI_IN_PLACE : x->sbuf;
    return x->root ? MPI_Exscan_init(sb, x->rbuf, x->count, x->dt, x->op, x->comm, MPI_INFO_NULL, r)
                   : MPI_Scan_init(sb, x->rbuf, x->count, x->dt, x->op, x->comm, MPI_INFO_NULL, r);
}
static void scan_fill(void *c, int salt)
{
    struct ctx *x = c;
    poison(x);
    fill_contrib(x, x->in_place ? x->rbuf : x->sbuf, (size_t)x->count, salt);
    if (x->root && x->rank == 0) { /* exscan: rank 0's buffer is undefined; do not check */
        memcpy(x->want, x->rbuf, x->rn * sizeof(int));
        return;
    }
    for (int i = 0; i < x->count; i++)
        red_expect(x, 0, x->root ? x->rank : x->rank + 1, (size_t)i, salt,
                   x->want + (size_t)i * (size_t)x->width);
}
static void scan_check(void *c, int salt)
{
    struct ctx *x = c;
    (void)salt;
    if (x->root && x->rank == 0)
        return;
    expect_ints(x->rbuf, x->want, x->rn, x->root ? "MPI_Exscan" : "MPI_Scan", x->count);
}

/* reduce_scatter(_block): counts in rcounts (block: all x->count); root
 * abused as flag "block" */
static int rs_b(void *c)
{
    struct ctx *x = c;
    const void *sb = x->in_place ? MPI_IN_PLACE : x->sbuf;
    return x->root ? MPI_Reduce_scatter_block(sb, x->rbuf, x->count, x->dt, x->op, x->comm)
                   : MPI_Reduce_scatter(sb, x->rbuf, x->rcounts, x->dt, x->op, x->comm);
}
static int rs_nb(void *c, MPI_Request *r)
{
    struct ctx *x = c;
    const void *sb = x->in_place ? MPI_IN_PLACE : x->sbuf;
    return x->root ? MPI_Ireduce_scatter_block(sb, x->rbuf, x->count, x->dt, x->op, x->comm, r)
                   : MPI_Ireduce_scatter(sb, x->rbuf, x->rcounts, x->dt, x->op, x->comm, r);
}
static int rs_i(void *c, MPI_Request *r)
{
    struct ctx *x = c;
    const void *sb = x->in_place ? MPI_IN_PLACE : x->sbuf;
    return x->root ? MPI_Reduce_scatter_block_init(sb, x->rbuf, x->count, x->dt, x->op, x->comm,
                                                   MPI_INFO_NULL, r)
                   : MPI_Reduce_scatter_init(sb, x->rbuf, x->rcounts, x->dt, x->op, x->comm,
                                             MPI_INFO_NULL, r);
}
static void rs_fill(void *c, int salt)
{
    struct ctx *x = c;
    size_t total = 0, mine = 0;
    for (int r = 0; r < x->size; r++) {
        if (r == x->rank)
            mine = total;
        total += (size_t)x->rcounts[r];
    }
    poison(x);
    fill_contrib(x, x->in_place ? x->rbuf : x->sbuf, total, salt);
    for (int i = 0; i < x->rcounts[x->rank]; i++)
        red_expect(x, 0, x->size, mine + (size_t)i, salt, x->want + (size_t)i * (size_t)x->width);
}
static void rs_check(void *c, int salt)
{
    struct ctx *x = c;
    (void)salt;
    expect_ints(x->rbuf, x->want, (size_t)x->rcounts[x->rank] * (size_t)x->width,
                x->root ? "MPI_Reduce_scatter_block" : "MPI_Reduce_scatter", x->count);
}

static void check_all(void *c, int salt)
{
    struct ctx *x = c;
    (void)salt;
    expect_ints(x->rbuf, x->want, x->rn, x->name, x->count);
}

/* gather(v): v in flag root>=0 ... (x->name picks the variant) */
static bool is(const struct ctx *x, const char *name)
{
    return strcmp(x->name, name) == 0;
}

/* Block layouts for v variants: rank j's block holds vcount(j) elements at
 * displacement vdispl(j), blocks in reverse rank order with gaps. */
static int vcount(const struct ctx *x, int j, int salt)
{
    (void)salt;
    return x->count == 0 ? 0 : (j * 3 + x->count) % (x->count + 2);
}

static void v_layout(struct ctx *x, int *counts, int *displs, int salt)
{
    int off = 0;
    for (int j = x->size - 1; j >= 0; j--) {
        counts[j] = vcount(x, j, salt);
        displs[j] = off;
        off += counts[j] + 1;
    }
}

static int gather_b(void *c)
{
    struct ctx *x = c;
    const void *sb = x->in_place && x->rank == x->root ? MPI_IN_PLACE : x->sbuf;
    if (is(x, "MPI_Gatherv"))
        return MPI_Gatherv(sb, x->scounts[0], x->dt, x->rbuf, x->rcounts, x->rdispls, x->dt,
                           x->root, x->comm);
    return MPI_Gather(sb, x->count, x->dt, x->rbuf, x->count, x->dt, x->root, x->comm);
}
static int gather_nb(void *c, MPI_Request *r)
{
    struct ctx *x = c;
    const void *sb = x->in_place && x->rank == x->root ? MPI_IN_PLACE : x->sbuf;
    if (is(x, "MPI_Gatherv"))
        return MPI_Igatherv(sb, x->scounts[0], x->dt, x->rbuf, x->rcounts, x->rdispls, x->dt,
                            x->root, x->comm, r);
    return MPI_Igather(sb, x->count, x->dt, x->rbuf, x->count, x->dt, x->root, x->comm, r);
}
static int gather_i(void *c, MPI_Request *r)
{
    struct ctx *x = c;
    const void *sb = x->in_place && x->rank == x->root ? MPI_IN_PLACE : x->sbuf;
    if (is(x, "MPI_Gatherv"))
        return MPI_Gatherv_init(sb, x->scounts[0], x->dt, x->rbuf, x->rcounts, x->rdispls, x->dt,
                                x->root, x->comm, MPI_INFO_NULL, r);
    return MPI_Gather_init(sb, x->count, x->dt, x->rbuf, x->count, x->dt, x->root, x->comm,
                           MPI_INFO_NULL, r);
}
static void gather_fill(void *c, int salt)
{
    struct ctx *x = c;
    bool v = is(x, "MPI_Gatherv");
    size_t w = (size_t)x->width;
    poison(x);
    if (v)
        v_layout(x, x->rcounts, x->rdispls, salt);
    x->scounts[0] = v ? vcount(x, x->rank, salt) : x->count;
    for (int j = 0; j < x->size; j++) {
        size_t off = v ? (size_t)x->rdispls[j] : (size_t)j * (size_t)x->count;
        size_t n = (size_t)(v ? x->rcounts[j] : x->count) * w;
        for (size_t i = 0; i < n; i++) {
            int value = val(j, (int)i, salt);
            if (j == x->rank)
                x->sbuf[i] = hole(i) ? JUNK : value;
            if (hole(i))
                continue;
            if (x->rank == x->root)
                x->want[off * w + i] = value;
            if (j == x->rank && x->in_place && x->rank == x->root)
                x->rbuf[off * w + i] = value;
        }
    }
}

static int scatter_b(void *c)
{
    struct ctx *x = c;
    void *rb = x->in_place && x->rank == x->root ? MPI_IN_PLACE : x->rbuf;
    if (is(x, "MPI_Scatterv"))
        return MPI_Scatterv(x->sbuf, x->scounts, x->sdispls, x->dt, rb, x->rcounts[0], x->dt,
                            x->root, x->comm);
    return MPI_Scatter(x->sbuf, x->count, x->dt, rb, x->count, x->dt, x->root, x->comm);
}
static int scatter_nb(void *c, MPI_Request *r)
{
    struct ctx *x = c;
    void *rb = x->in_place && x->rank == x->root ? MPI_IN_PLACE : x->rbuf;
    if (is(x, "MPI_Scatterv"))
        return MPI_Iscatterv(x->sbuf, x->scounts, x->sdispls, x->dt, rb, x->rcounts[0], x->dt,
                             x->root, x->comm, r);
    return MPI_Iscatter(x->sbuf, x->count, x->dt, rb, x->count, x->dt, x->root, x->comm, r);
}
static int scatter_i(void *c, MPI_Request *r)
{
    struct ctx *x = c;
    void *rb = x->in_place && x->rank == x->root ? MPI_IN_PLACE : x->rbuf;
    if (is(x, "MPI_Scatterv"))
        return MPI_Scatterv_init(x->sbuf, x->scounts, x->sdispls, x->dt, rb, x->rcounts[0], x->dt,
                                 x->root, x->comm, MPI_INFO_NULL, r);
    return MPI_Scatter_init(x->sbuf, x->count, x->dt, rb, x->count, x->dt, x->root, x->comm,
                            MPI_INFO_NULL, r);
}
static void scatter_fill(void *c, int salt)
{
    struct ctx *x = c;
    bool v = is(x, "MPI_Scatterv");
    size_t w = (size_t)x->width;
    poison(x);
    if (v)
        v_layout(x, x->scounts, x->sdispls, salt);
    x->rcounts[0] = v ? vcount(x, x->rank, salt) : x->count;
    for (int j = 0; j < x->size; j++) {
        size_t off = v ? (size_t)x->sdispls[j] : (size_t)j * (size_t)x->count;
        size_t n = (size_t)(v ? x->scounts[j] : x->count) * w;
        for (size_t i = 0; i < n; i++) {
            int value = val(j, (int)i, salt);
            if (x->rank == x->root)
                x->sbuf[off * w + i] = hole(i) ? JUNK : value;
            if (j == x->rank && !(x->in_place && x->rank == x->root) && !hole(i))
                x->want[i] = value;
        }
    }
}
static void scatter_check(void *c, int salt)
{
    struct ctx *x = c;
    (void)salt;
    if (x->in_place && x->rank == x->root)
        return; /* the root's block stays in sendbuf */
    expect_ints(x->rbuf, x->want, x->rn, x->name, x->count);
}

static int allgather_b(void *c)
{
    struct ctx *x = c;
    const void *sb = x->in_place ? MPI_IN_PLACE : x->sbuf;
    if (is(x, "MPI_Allgatherv"))
        return MPI_Allgatherv(sb, x->scounts[0], x->dt, x->rbuf, x->rcounts, x->rdispls, x->dt,
                              x->comm);
    return MPI_Allgather(sb, x->count, x->dt, x->rbuf, x->count, x->dt, x->comm);
}
static int allgather_nb(void *c, MPI_Request *r)
{
    struct ctx *x = c;
    const void *sb = x->in_place ? MPI_IN_PLACE : x->sbuf;
    if (is(x, "MPI_Allgatherv"))
        return MPI_Iallgatherv(sb, x->scounts[0], x->dt, x->rbuf, x->rcounts, x->rdispls, x->dt,
                               x->comm, r);
    return MPI_Iallgather(sb, x->count, x->dt, x->rbuf, x->count, x->dt, x->comm, r);
}
static int allgather_i(void *c, MPI_Request *r)
{
    struct ctx *x = c;
    const void *sb = x->in_place ? MPI_IN_PLACE : x->sbuf;
    if (is(x, "MPI_Allgatherv"))
        return MPI_Allgatherv_init(sb, x->scounts[0], x->dt, x->rbuf, x->rcounts, x->rdispls, x->dt,
                                   x->comm, MPI_INFO_NULL, r);
    return MPI_Allgather_init(sb, x->count, x->dt, x->rbuf, x->count, x->dt, x->comm, MPI_INFO_NULL,
                              r);
}
static void allgather_fill(void *c, int salt)
{
    struct ctx *x = c;
    bool v = is(x, "MPI_Allgatherv");
    size_t w = (size_t)x->width;
    poison(x);
    if (v)
        v_layout(x, x->rcounts, x->rdispls, salt);
    x->scounts[0] = v ? vcount(x, x->rank, salt) : x->count;
    for (int j = 0; j < x->size; j++) {
        size_t off = v ? (size_t)x->rdispls[j] : (size_t)j * (size_t)x->count;
        size_t n = (size_t)(v ? x->rcounts[j] : x->count) * w;
        for (size_t i = 0; i < n; i++) {
            int value = val(j, (int)i, salt);
            if (j == x->rank)
                x->sbuf[i] = hole(i) ? JUNK : value;
            if (hole(i))
                continue;
            x->want[off * w + i] = value;
            if (j == x->rank && x->in_place)
                x->rbuf[off * w + i] = value;
        }
    }
}

/* alltoall(v,w): block from s to d, element i: val(s * 37 + d, i, salt) */
static int a2a_val(int s, int d, int i, int salt)
{
    return val(s * 37 + d, i, salt);
}
/* Pairs in the block from s to d (symmetric in place, where a rank sends
 * to d as much as it receives from d). */
static int a2a_count(const struct ctx *x, int s, int d)
{
    if (x->count == 0)
        return 0;
    return (s + (x->in_place ? 1 : 2) * d + x->count) % (x->count + 1);
}
static int alltoall_b(void *c)
{
    struct ctx *x = c;
    const void *sb = x->in_place ? MPI_IN_PLACE : x->sbuf;
    if (is(x, "MPI_Alltoallv"))
        return MPI_Alltoallv(sb, x->scounts, x->sdispls, x->dt, x->rbuf, x->rcounts, x->rdispls,
                             x->dt, x->comm);
    if (is(x, "MPI_Alltoallw"))
        return MPI_Alltoallw(sb, x->scounts, x->sdispls, x->stypes, x->rbuf, x->rcounts, x->rdispls,
                             x->rtypes, x->comm);
    return MPI_Alltoall(sb, x->count, x->dt, x->rbuf, x->count, x->dt, x->comm);
}
static int alltoall_nb(void *c, MPI_Request *r)
{
    struct ctx *x = c;
    const void *sb = x->in_place ? MPI_IN_PLACE : x->sbuf;
    if (is(x, "MPI_Alltoallv"))
        return MPI_Ialltoallv(sb, x->scounts, x->sdispls, x->dt, x->rbuf, x->rcounts, x->rdispls,
                              x->dt, x->comm, r);
    if (is(x, "MPI_Alltoallw"))
        return MPI_Ialltoallw(sb, x->scounts, x->sdispls, x->stypes, x->rbuf, x->rcounts,
                              x->rdispls, x->rtypes, x->comm, r);
    return MPI_Ialltoall(sb, x->count, x->dt, x->rbuf, x->count, x->dt, x->comm, r);
}
static int alltoall_i(void *c, MPI_Request *r)
{
    struct ctx *x = c;
    const void *sb = x->in_place ? MPI_IN_PLACE : x->sbuf;
    if (is(x, "MPI_Alltoallv"))
        return MPI_Alltoallv_init(sb, x->scounts, x->sdispls, x->dt, x->rbuf, x->rcounts,
                                  x->rdispls, x->dt, x->comm, MPI_INFO_NULL, r);
    if (is(x, "MPI_Alltoallw"))
        return MPI_Alltoallw_init(sb, x->scounts, x->sdispls, x->stypes, x->rbuf, x->rcounts,
                                  x->rdispls, x->rtypes, x->comm, MPI_INFO_NULL, r);
    return MPI_Alltoall_init(sb, x->count, x->dt, x->rbuf, x->count, x->dt, x->comm, MPI_INFO_NULL,
                             r);
}
/* Layout of one side of alltoallv/w: blocks in reverse peer order with a
 * gap; w: peers alternate between MPI_INT and the pair type (2 ints per
 * element), byte displacements. counts[] in elements of the block's type. */
static void a2a_layout(struct ctx *x, bool send, int *counts, int *displs, MPI_Datatype *types)
{
    bool w = is(x, "MPI_Alltoallw");
    int off = 0; /* ints */
    for (int j = x->size - 1; j >= 0; j--) {
        int n = send ? a2a_count(x, x->rank, j) : a2a_count(x, j, x->rank); /* pairs */
        bool pair = !w || (x->rank + j) % 2 == 1;
        counts[j] = pair ? n : 2 * n;
        if (types)
            types[j] = pair ? pair_t : MPI_INT;
        displs[j] = w ? off * (int)sizeof(int) : off / 2;
        off += 2 * n + 2;
    }
}
static void alltoall_fill(void *c, int salt)
{
    struct ctx *x = c;
    bool uniform = is(x, "MPI_Alltoall"), w = is(x, "MPI_Alltoallw");
    int *sb = x->in_place ? x->rbuf : x->sbuf;
    poison(x);
    if (!uniform) {
        a2a_layout(x, true, x->scounts, x->sdispls, w ? x->stypes : NULL);
        a2a_layout(x, false, x->rcounts, x->rdispls, w ? x->rtypes : NULL);
    }
    for (int j = 0; j < x->size; j++) {
        /* ints of the block to j and from j, and where they sit */
        size_t sn = uniform ? 2 * (size_t)x->count : 2 * (size_t)a2a_count(x, x->rank, j);
        size_t rn = uniform ? 2 * (size_t)x->count : 2 * (size_t)a2a_count(x, j, x->rank);
        size_t so = uniform ? (size_t)j * sn
                            : (w ? (size_t)x->sdispls[j] / sizeof(int) : 2 * (size_t)x->sdispls[j]);
        size_t ro = uniform ? (size_t)j * rn
                            : (w ? (size_t)x->rdispls[j] / sizeof(int) : 2 * (size_t)x->rdispls[j]);
        if (x->in_place && !uniform) {
            /* in place: the send layout is the receive layout */
            so = ro;
            sn = rn;
        }
        for (size_t i = 0; i < sn; i++)
            if (!(hole(i) && x->in_place))
                sb[so + i] = hole(i) ? JUNK : a2a_val(x->rank, j, (int)i, salt);
        for (size_t i = 0; i < rn; i++)
            if (!hole(i))
                x->want[ro + i] = a2a_val(j, x->rank, (int)i, salt);
    }
}

/* ---- the test driver ---------------------------------------------------------------- */

static struct call call_of(struct ctx *x, const char *name)
{
    struct call c = {.ctx = x, .check = check_all};
    x->name = name;
    if (is(x, "MPI_Barrier")) {
        c = (struct call){barrier_b, barrier_nb, barrier_i, nothing, nothing, x};
    } else if (is(x, "MPI_Bcast")) {
        c = (struct call){bcast_b, bcast_nb, bcast_i, bcast_fill, bcast_check, x};
    } else if (is(x, "MPI_Reduce")) {
        c = (struct call){reduce_b, reduce_nb, reduce_i, reduce_fill, reduce_check, x};
    } else if (is(x, "MPI_Allreduce")) {
        c = (struct call){allreduce_b, allreduce_nb, allreduce_i, allreduce_fill, check_all, x};
    } else if (is(x, "MPI_Scan") || is(x, "MPI_Exscan")) {
        x->root = is(x, "MPI_Exscan");
        c = (struct call){scan_b, scan_nb, scan_i, scan_fill, scan_check, x};
    } else if (is(x, "MPI_Reduce_scatter") || is(x, "MPI_Reduce_scatter_block")) {
        x->root = is(x, "MPI_Reduce_scatter_block");
        c = (struct call){rs_b, rs_nb, rs_i, rs_fill, rs_check, x};
    } else if (is(x, "MPI_Gather") || is(x, "MPI_Gatherv")) {
        c = (struct call){gather_b, gather_nb, gather_i, gather_fill, check_all, x};
    } else if (is(x, "MPI_Scatter") || is(x, "MPI_Scatterv")) {
        c = (struct call){scatter_b, scatter_nb, scatter_i, scatter_fill, scatter_check, x};
    } else if (is(x, "MPI_Allgather") || is(x, "MPI_Allgatherv")) {
        c = (struct call){allgather_b, allgather_nb, allgather_i, allgather_fill, check_all, x};
    } else {
        c = (struct call){alltoall_b, alltoall_nb, alltoall_i, alltoall_fill, check_all, x};
    }
    return c;
}

/* Ints of buffer space a call with count elements needs (generous). */
static size_t space(const struct ctx *x, int count)
{
    return (size_t)(count + 2) * 2 * (size_t)(x->size + 1) * 2;
}

static void run_one(MPI_Comm comm, const char *name, int count, bool in_place, int variant,
                    int salt)
{
    struct ctx x;
    struct call c;

    memset(&x, 0, sizeof(x));
    x.comm = comm;
    MPI_Comm_rank(comm, &x.rank);
    MPI_Comm_size(comm, &x.size);
    x.count = count;
    x.in_place = in_place;
    x.root = (salt * 7 + count) % x.size;
    /* variant: 0 MPI_INT + MPI_SUM, 1 pair type + affine op, 2 MPI_INT + user
     * sum, 3 gap type (packed on the wire) + MPI_SUM */
    x.dt = variant == 1 ? pair_t : variant == 3 ? gap_t : MPI_INT;
    x.width = variant == 1 || variant == 3 ? 2 : 1;
    x.op = variant == 1 ? affine_op : variant == 2 ? usum_op : MPI_SUM;
    gap = variant == 3 && strcmp(name, "MPI_Alltoallw") != 0; /* w: its own types per block */
    if (!strstr(name, "educe") && !strstr(name, "can") && variant != 3) {
        /* data movement: always in pairs of ints (the pair type, or 2 x MPI_INT
         * counted as such) */
        x.dt = variant == 1 ? pair_t : MPI_2INT;
        x.width = 2;
    }
    buffers(&x, space(&x, count), space(&x, count));
    if (strstr(name, "Reduce_scatter")) {
        for (int r = 0; r < x.size; r++)
            x.rcounts[r] =
                strstr(name, "block") ? count : (count == 0 ? 0 : (r * 5 + count) % (count + 3));
    }
    c = call_of(&x, name);
    run_call(&c, salt);
    free(x.sbuf);
    free(x.rbuf);
    free(x.want);
}

static const char *const all_colls[] = {
    "MPI_Barrier",   "MPI_Bcast",          "MPI_Reduce",
    "MPI_Allreduce", "MPI_Reduce_scatter", "MPI_Reduce_scatter_block",
    "MPI_Scan",      "MPI_Exscan",         "MPI_Gather",
    "MPI_Gatherv",   "MPI_Scatter",        "MPI_Scatterv",
    "MPI_Allgather", "MPI_Allgatherv",     "MPI_Alltoall",
    "MPI_Alltoallv", "MPI_Alltoallw",
};

static bool allows_in_place(const char *name)
{
    return strcmp(name, "MPI_Barrier") && strcmp(name, "MPI_Bcast");
}

/* BM_TEST_COLL_ONLY (comma-separated MPI names) limits the matrix to those
 * collectives and skips the other parts (the multi-host test's short run). */
static const char *only_list;
static bool thin; /* forced launches: each type/operation variant in one form only */

static bool selected(const char *name)
{
    size_t n = strlen(name);
    for (const char *p = only_list; p && *p; p += strcspn(p, ","), p += *p == ',')
        if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return true;
    return only_list == NULL;
}

static void test_matrix(MPI_Comm comm, const int *counts, int ncounts)
{
    int salt = 0;
    for (form = 0; form < 3; form++) {
        for (size_t k = 0; k < sizeof(all_colls) / sizeof(all_colls[0]); k++) {
            const char *name = all_colls[k];
            if (!selected(name))
                continue;
            bool reduction = strstr(name, "educe") || strstr(name, "can");
            for (int ci = 0; ci < ncounts; ci++) {
                for (int ip = 0; ip < (allows_in_place(name) ? 2 : 1); ip++) {
                    static const int move_vars[] = {0, 1, 3}, red_vars[] = {0, 1, 2, 3};
                    const int *vars = reduction ? red_vars : move_vars;
                    int nvar = reduction ? 4 : 3;
                    for (int v = 0; v < nvar; v++) {
                        /* large counts: one variant each, to keep the test short */
                        if (counts[ci] > 4096 && v != (int)((k + (size_t)ip) % (size_t)nvar))
                            continue;
                        /* forced launches: each variant in one form (what a
                         * variant changes does not depend on the form) */
                        if (thin && v % 3 != form)
                            continue;
                        run_one(comm, name, counts[ci], ip == 1, vars[v], ++salt);
                    }
                }
            }
        }
    }
    form = 0;
}

/* ---- overlap ------------------------------------------------------------------------ */

/* Nonblocking collectives on two communicators and point-to-point traffic
 * in flight together, completed in several orders. */
static void test_overlap(void)
{
    MPI_Comm dup;
    int n = 3000;
    int *bc = malloc(sizeof(int) * (size_t)n), *ar_in = malloc(sizeof(int) * (size_t)n);
    int *ar_out = malloc(sizeof(int) * (size_t)n);
    int *a2a_s = malloc(sizeof(int) * (size_t)(4 * wsize)),
        *a2a_r = malloc(sizeof(int) * (size_t)(4 * wsize));
    int p2p_s[64], p2p_r[64], gat[64];
    MPI_Request rq[8];

    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    for (int order = 0; order < 4; order++) {
        int right = (wrank + 1) % wsize, left = (wrank - 1 + wsize) % wsize, nr = 0;
        for (int i = 0; i < n; i++) {
            bc[i] = wrank == 0 ? val(0, i, order) : -1;
            ar_in[i] = val(wrank, i, order);
        }
        for (int i = 0; i < 4 * wsize; i++)
            a2a_s[i] = a2a_val(wrank, i / 4, i % 4, order);
        for (int i = 0; i < 64; i++)
            p2p_s[i] = val(wrank, i, 100 + order);
        /* posted in an order that differs between the communicators */
        MPI_Irecv(p2p_r, 64, MPI_INT, left, 5, MPI_COMM_WORLD, &rq[nr++]);
        MPI_Ibcast(bc, n, MPI_INT, 0, MPI_COMM_WORLD, &rq[nr++]);
        MPI_Iallreduce(ar_in, ar_out, n, MPI_INT, MPI_SUM, dup, &rq[nr++]);
        MPI_Isend(p2p_s, 64, MPI_INT, right, 5, MPI_COMM_WORLD, &rq[nr++]);
        MPI_Ialltoall(a2a_s, 4, MPI_INT, a2a_r, 4, MPI_INT, MPI_COMM_WORLD, &rq[nr++]);
        MPI_Ibarrier(dup, &rq[nr++]);
        MPI_Igather(&wrank, 1, MPI_INT, gat, 1, MPI_INT, wsize - 1, dup, &rq[nr++]);
        if (order == 0) {
            BM_CHECK_EQ_INT(MPI_Waitall(nr, rq, MPI_STATUSES_IGNORE), MPI_SUCCESS);
        } else if (order == 1) {
            for (int i = nr - 1; i >= 0; i--)
                BM_CHECK_EQ_INT(MPI_Wait(&rq[i], MPI_STATUS_IGNORE), MPI_SUCCESS);
        } else if (order == 2) {
            for (int done = 0; done < nr; done++) {
                int idx;
                BM_CHECK_EQ_INT(MPI_Waitany(nr, rq, &idx, MPI_STATUS_IGNORE), MPI_SUCCESS);
            }
        } else {
            int flag = 0;
            while (!flag)
                BM_CHECK_EQ_INT(MPI_Testall(nr, rq, &flag, MPI_STATUSES_IGNORE), MPI_SUCCESS);
        }
        for (int i = 0; i < n; i++) {
            int sum = 0;
            for (int r = 0; r < wsize; r++)
                sum += val(r, i, order);
            if (bc[i] != val(0, i, order) || ar_out[i] != sum) {
                FAIL("overlap order %d: bcast/allreduce element %d wrong", order, i);
                break;
            }
        }
        for (int i = 0; i < 4 * wsize; i++)
            if (a2a_r[i] != a2a_val(i / 4, wrank, i % 4, order)) {
                FAIL("overlap order %d: alltoall element %d wrong", order, i);
                break;
            }
        for (int i = 0; i < 64; i++)
            if (p2p_r[i] != val(left, i, 100 + order)) {
                FAIL("overlap order %d: point-to-point element %d wrong", order, i);
                break;
            }
        if (wrank == wsize - 1)
            for (int r = 0; r < wsize; r++)
                if (gat[r] != r)
                    FAIL("overlap order %d: gather block %d is %d", order, r, gat[r]);
        bm_test_passed++;
    }
    /* A freed active nonblocking collective still completes (in the
     * background), and the communicator keeps working after it. */
    MPI_Request fr;
    int x = wrank, sum = 0;
    MPI_Iallreduce(&x, &sum, 1, MPI_INT, MPI_SUM, dup, &fr);
    MPI_Request_free(&fr);
    BM_CHECK(fr == MPI_REQUEST_NULL);
    MPI_Barrier(dup);
    int y = 1, ysum = 0;
    MPI_Allreduce(&y, &ysum, 1, MPI_INT, MPI_SUM, dup);
    BM_CHECK_EQ_INT(ysum, wsize);
    MPI_Comm_free(&dup);
    free(bc);
    free(ar_in);
    free(ar_out);
    free(a2a_s);
    free(a2a_r);
}

/* Two disjoint communicators from one split (they may share a context id)
 * run collectives at the same time: their shared-memory segments and
 * messages must stay apart. */
static void test_disjoint(void)
{
    MPI_Comm half;
    int hrank, hsize;

    /* roots: world ranks 1 and 2, neither the root of anything before */
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank == 1 || wrank == 2 ? -1 : wrank, &half);
    MPI_Comm_rank(half, &hrank);
    MPI_Comm_size(half, &hsize);
    for (int it = 0; it < 20; it++) {
        int mine[4] = {wrank, it, wrank % 2, 1}, sum[4];
        MPI_Barrier(half);
        MPI_Allreduce(mine, sum, 4, MPI_INT, MPI_SUM, half);
        int want0 = 0;
        for (int r = wrank % 2; r < wsize; r += 2)
            want0 += r;
        BM_CHECK(sum[0] == want0 && sum[1] == it * hsize && sum[2] == (wrank % 2) * hsize &&
                 sum[3] == hsize);
        int b = hrank == 0 ? 1000 * (wrank % 2) + it : -1; /* from the half's root */
        MPI_Bcast(&b, 1, MPI_INT, 0, half);
        BM_CHECK_EQ_INT(b, 1000 * (wrank % 2) + it);
    }
    MPI_Comm_free(&half);
}

/* Ranks that describe the same data with different datatypes (MPI_INT on
 * even ranks, gap_t, an int with a hole after it, on odd ones: only the
 * type signatures must match) take the same path, the shared-memory one
 * for these small blocks: a rank that chose by its own type's layout
 * would wait for the others on another path for ever. */
static void test_mixed_types(void)
{
    enum { N = 3 };
    static const char *const algs[] = {"bcast.sm", "gather.sm", "scatter.sm", "allgather.sm",
                                       "alltoall.sm"};
    unsigned long before[5];
    bool holes = wrank % 2 == 1;
    MPI_Datatype t = holes ? gap_t : MPI_INT;
    int st = holes ? 2 : 1; /* ints per element in this rank's buffers */
    int root = wsize > 1 ? 1 : 0, nb = N * wsize * st;
    int *sb = malloc(sizeof(int) * (size_t)nb), *rb = malloc(sizeof(int) * (size_t)nb);

    for (int k = 0; k < 5; k++)
        before[k] = bm_coll_alg_count(algs[k]);
    for (int i = 0; i < nb; i++)
        rb[i] = -1;
    for (int i = 0; i < N && wrank == 0; i++)
        rb[i * st] = val(0, i, 1);
    MPI_Bcast(rb, N, t, 0, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
        BM_CHECK_EQ_INT(rb[i * st], val(0, i, 1));

    for (int i = 0; i < N; i++)
        sb[i * st] = val(wrank, i, 2);
    MPI_Gather(sb, N, t, rb, N, t, root, MPI_COMM_WORLD);
    for (int r = 0; r < wsize && wrank == root; r++)
        for (int i = 0; i < N; i++)
            BM_CHECK_EQ_INT(rb[(r * N + i) * st], val(r, i, 2));

    for (int j = 0; j < N * wsize; j++)
        sb[j * st] = val(wrank, j, 3);
    MPI_Scatter(sb, N, t, rb, N, t, 0, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
        BM_CHECK_EQ_INT(rb[i * st], val(0, wrank * N + i, 3));

    for (int i = 0; i < N; i++)
        sb[i * st] = val(wrank, i, 4);
    MPI_Allgather(sb, N, t, rb, N, t, MPI_COMM_WORLD);
    for (int r = 0; r < wsize; r++)
        for (int i = 0; i < N; i++)
            BM_CHECK_EQ_INT(rb[(r * N + i) * st], val(r, i, 4));

    for (int j = 0; j < wsize; j++)
        for (int i = 0; i < N; i++)
            sb[(j * N + i) * st] = val(wrank * 100 + j, i, 5);
    MPI_Alltoall(sb, N, t, rb, N, t, MPI_COMM_WORLD);
    for (int r = 0; r < wsize; r++)
        for (int i = 0; i < N; i++)
            BM_CHECK_EQ_INT(rb[(r * N + i) * st], val(r * 100 + wrank, i, 5));

    for (int k = 0; k < 5 && wsize > 1; k++)
        BM_CHECK_MSG(bm_coll_alg_count(algs[k]) > before[k],
                     "%s did not serve a call of blocks with different layouts", algs[k]);
    free(sb);
    free(rb);
}

/* ---- neighbourhood --------------------------------------------------------------------- */

static void nbr_alltoall(MPI_Comm cart, int form_, const int *sb, int *rb, int n)
{
    MPI_Request r;
    if (form_ == 0) {
        MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, cart);
    } else if (form_ == 1) {
        MPI_Ineighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, cart, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
        MPI_Neighbor_alltoall_init(sb, 1, MPI_INT, rb, 1, MPI_INT, cart, MPI_INFO_NULL, &r);
        MPI_Start(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        MPI_Request_free(&r);
    }
    (void)n;
}

/* A periodic ring of p ranks (p = 1 and 2: both neighbours are the same
 * process): the block from the -1 neighbour must be the one it sent to its
 * +1 neighbour, and the other way round. Also a 2-D torus. */
static void test_cart(MPI_Comm base, int ndims)
{
    int size, dims[2] = {0, 0}, periods[2] = {1, 1}, n;
    MPI_Comm cart;

    MPI_Comm_size(base, &size);
    MPI_Dims_create(size, ndims, dims);
    MPI_Cart_create(base, ndims, dims, periods, 0, &cart);
    if (cart == MPI_COMM_NULL)
        return;
    n = 2 * ndims;
    int me, sb[4], rb[4], rb2[8];
    MPI_Comm_rank(cart, &me);
    for (int f = 0; f < 3; f++) {
        for (int k = 0; k < n; k++) {
            sb[k] = me * 100 + k; /* block k goes to neighbour k */
            rb[k] = -1;
        }
        nbr_alltoall(cart, f, sb, rb, n);
        for (int d = 0; d < ndims; d++) {
            int src, dst;
            MPI_Cart_shift(cart, d, 1, &src, &dst);
            /* from the -1 neighbour (src): what it sent to its +1 neighbour, block 2d+1 */
            if (rb[2 * d] != src * 100 + 2 * d + 1 || rb[2 * d + 1] != dst * 100 + 2 * d) {
                FAIL("MPI_Neighbor_alltoall, %d-D periodic grid of %d (form %d): dim %d got %d,%d "
                     "expected %d,%d",
                     ndims, size, f, d, rb[2 * d], rb[2 * d + 1], src * 100 + 2 * d + 1,
                     dst * 100 + 2 * d);
            } else {
                bm_test_passed++;
            }
        }
        /* allgather: my one block to every neighbour */
        for (int k = 0; k < 2 * n; k++)
            rb2[k] = -1;
        int mine[2] = {me, me * 3};
        if (f == 0) {
            MPI_Neighbor_allgather(mine, 2, MPI_INT, rb2, 2, MPI_INT, cart);
        } else if (f == 1) {
            MPI_Request r;
            MPI_Ineighbor_allgather(mine, 2, MPI_INT, rb2, 2, MPI_INT, cart, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        } else {
            MPI_Request r;
            MPI_Neighbor_allgather_init(mine, 2, MPI_INT, rb2, 2, MPI_INT, cart, MPI_INFO_NULL, &r);
            MPI_Start(&r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            MPI_Request_free(&r);
        }
        for (int d = 0; d < ndims; d++) {
            int src, dst;
            MPI_Cart_shift(cart, d, 1, &src, &dst);
            BM_CHECK(rb2[4 * d] == src && rb2[4 * d + 1] == src * 3);
            BM_CHECK(rb2[4 * d + 2] == dst && rb2[4 * d + 3] == dst * 3);
        }
    }
    MPI_Comm_free(&cart);
}

/* A distributed graph where every process has two edges to its right
 * neighbour and one to itself: repeated edges match in list order. Then
 * alltoallv/w with uneven blocks. */
static void test_graph(void)
{
    int right = (wrank + 1) % wsize, left = (wrank - 1 + wsize) % wsize;
    int srcs[3] = {left, left, wrank}, dsts[3] = {right, right, wrank};
    MPI_Comm g;
    int sb[3], rb[3];

    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 3, srcs, MPI_UNWEIGHTED, 3, dsts, MPI_UNWEIGHTED,
                                   MPI_INFO_NULL, 0, &g);
    for (int f = 0; f < 3; f++) {
        for (int k = 0; k < 3; k++) {
            sb[k] = wrank * 10 + k;
            rb[k] = -1;
        }
        nbr_alltoall(g, f, sb, rb, 3);
        BM_CHECK_EQ_INT(rb[0], left * 10 + 0);
        BM_CHECK_EQ_INT(rb[1], left * 10 + 1);
        BM_CHECK_EQ_INT(rb[2], wrank * 10 + 2);
    }
    /* alltoallv / alltoallw: block k has k + 1 ints */
    int scounts[3] = {1, 2, 3}, sdispls[3] = {6, 3, 0}, rcounts[3] = {1, 2, 3},
        rdispls[3] = {0, 1, 3};
    MPI_Aint sbd[3] = {24, 12, 0}, rbd[3] = {0, 4, 12};
    MPI_Datatype types[3] = {MPI_INT, MPI_INT, MPI_INT};
    int sv[8], rv[6];
    for (int w = 0; w < 2; w++) {
        for (int f = 0; f < 3; f++) {
            MPI_Request r;
            for (int k = 0; k < 3; k++)
                for (int i = 0; i < scounts[k]; i++)
                    sv[sdispls[k] + i] = wrank * 100 + k * 10 + i;
            for (int i = 0; i < 6; i++)
                rv[i] = -1;
            if (w == 0 && f == 0)
                MPI_Neighbor_alltoallv(sv, scounts, sdispls, MPI_INT, rv, rcounts, rdispls, MPI_INT,
                                       g);
            else if (w == 0 && f == 1)
                MPI_Ineighbor_alltoallv(sv, scounts, sdispls, MPI_INT, rv, rcounts, rdispls,
                                        MPI_INT, g, &r);
            else if (w == 0)
                MPI_Neighbor_alltoallv_init(sv, scounts, sdispls, MPI_INT, rv, rcounts, rdispls,
                                            MPI_INT, g, MPI_INFO_NULL, &r);
            else if (f == 0)
                MPI_Neighbor_alltoallw(sv, scounts, sbd, types, rv, rcounts, rbd, types, g);
            else if (f == 1)
                MPI_Ineighbor_alltoallw(sv, scounts, sbd, types, rv, rcounts, rbd, types, g, &r);
            else
                MPI_Neighbor_alltoallw_init(sv, scounts, sbd, types, rv, rcounts, rbd, types, g,
                                            MPI_INFO_NULL, &r);
            if (f == 2)
                MPI_Start(&r);
            if (f > 0)
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            if (f == 2)
                MPI_Request_free(&r);
            for (int k = 0; k < 3; k++) {
                int from = k < 2 ? left : wrank;
                for (int i = 0; i < rcounts[k]; i++)
                    if (rv[rdispls[k] + i] != from * 100 + k * 10 + i)
                        FAIL("MPI_Neighbor_alltoall%c (form %d): block %d element %d is %d",
                             w ? 'w' : 'v', f, k, i, rv[rdispls[k] + i]);
            }
            bm_test_passed++;
        }
    }
    MPI_Comm_free(&g);
}

/* Neighbor_alltoallw with types that have holes on either side (packed on
 * the wire): the data arrives in every layout and the holes stay as they
 * were. Same graph as test_graph (two edges from the left, one to self). */
static void test_graph_gap(void)
{
    int right = (wrank + 1) % wsize, left = (wrank - 1 + wsize) % wsize;
    int srcs[3] = {left, left, wrank}, dsts[3] = {right, right, wrank};
    int counts[3] = {1, 2, 3};
    MPI_Datatype st[3] = {MPI_INT, gap_t, MPI_INT}, rt[3] = {gap_t, MPI_INT, gap_t};
    MPI_Aint sd[3] = {0, 8, 32}, rd[3] = {0, 8, 16};
    int sv[12], rv[12];
    MPI_Comm g;

    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 3, srcs, MPI_UNWEIGHTED, 3, dsts, MPI_UNWEIGHTED,
                                   MPI_INFO_NULL, 0, &g);
    for (int f = 0; f < 3; f++) {
        MPI_Request r;
        for (int i = 0; i < 12; i++) {
            sv[i] = JUNK;
            rv[i] = -7777;
        }
        /* block k, element e: at sd[k] + e * extent */
        for (int k = 0; k < 3; k++)
            for (int e = 0; e < counts[k]; e++)
                sv[sd[k] / 4 + e * (st[k] == gap_t ? 2 : 1)] = wrank * 100 + k * 10 + e;
        if (f == 0) {
            MPI_Neighbor_alltoallw(sv, counts, sd, st, rv, counts, rd, rt, g);
        } else {
            if (f == 1)
                MPI_Ineighbor_alltoallw(sv, counts, sd, st, rv, counts, rd, rt, g, &r);
            else
                MPI_Neighbor_alltoallw_init(sv, counts, sd, st, rv, counts, rd, rt, g,
                                            MPI_INFO_NULL, &r);
            if (f == 2)
                MPI_Start(&r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            if (f == 2)
                MPI_Request_free(&r);
        }
        int want[12];
        for (int i = 0; i < 12; i++)
            want[i] = -7777;
        for (int k = 0; k < 3; k++) {
            int from = k < 2 ? left : wrank;
            for (int e = 0; e < counts[k]; e++)
                want[rd[k] / 4 + e * (rt[k] == gap_t ? 2 : 1)] = from * 100 + k * 10 + e;
        }
        expect_ints(rv, want, 12, "MPI_Neighbor_alltoallw with holes", f);
    }
    MPI_Comm_free(&g);
}

/* The algorithms BM_TEST_COLL_EXPECT names (comma-separated) ran here. */
static void check_expected_algorithms(void)
{
    const char *list = getenv("BM_TEST_COLL_EXPECT");
    char buf[1024], *save = NULL;

    if (list == NULL)
        return;
    snprintf(buf, sizeof(buf), "%s", list);
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        /* the two slot areas need ranks on CPUs of their own: on a host
         * with fewer CPUs than ranks the PML counts the job oversubscribed
         * and they stay off */
        if (strcmp(tok, "sm.areas") == 0 && sysconf(_SC_NPROCESSORS_ONLN) < wsize) {
            if (wrank == 0)
                printf("coll_check: %ld CPUs for %d ranks: sm.areas not required\n",
                       sysconf(_SC_NPROCESSORS_ONLN), wsize);
            continue;
        }
        unsigned long n = bm_coll_alg_count(tok);
        unsigned long total = 0;
        MPI_Allreduce(&n, &total, 1, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD);
        BM_CHECK_MSG(total > 0, "algorithm %s was forced but never ran", tok);
    }
}

int main(int argc, char **argv)
{
    static const int counts_full[] = {0, 1, 5, 700, 9000};
    static const int counts_quick[] = {0, 3, 1100};
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    /* --thin (after --quick): each type/operation variant in one form */
    bool thin_arg = argc > 2 && strcmp(argv[2], "--thin") == 0;
    MPI_Comm odd;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    MPI_Type_contiguous(2, MPI_INT, &pair_t);
    MPI_Type_commit(&pair_t);
    MPI_Op_create(affine_fn, 0, &affine_op);
    MPI_Op_create(usum_fn, 1, &usum_op);
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &gap_t);
    MPI_Type_commit(&gap_t);

    only_list = getenv("BM_TEST_COLL_ONLY");
    /* Launches that force algorithms (BM_TEST_COLL_EXPECT) run the matrix
     * only: the other parts do not depend on the algorithm (the automatic
     * launches run them), except the disjoint communicators for sm. */
    const char *expect = getenv("BM_TEST_COLL_EXPECT");
    bool forced = expect != NULL;
    thin = (forced && only_list == NULL) || thin_arg;
    if (only_list == NULL && (!forced || strstr(expect, ".sm")))
        BM_RUN(test_disjoint); /* first: the half roots have set nothing up yet */
    test_matrix(MPI_COMM_WORLD, quick ? counts_quick : counts_full,
                quick ? (int)(sizeof(counts_quick) / sizeof(int))
                      : (int)(sizeof(counts_full) / sizeof(int)));
    /* the odd ranks in reverse order: ranks of the communicator are not
     * world ranks */
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2 ? 0 : MPI_UNDEFINED, -wrank, &odd);
    if (odd != MPI_COMM_NULL) {
        static const int c2[] = {0, 2, 600};
        test_matrix(odd, c2, 3);
        MPI_Comm_free(&odd);
    }
    if (only_list || forced) {
        /* single copy forced: a rank whose blocks are read beside one
         * whose blocks are written to (sm.push) */
        if (only_list == NULL && strstr(expect, "sm.copy"))
            BM_RUN(test_mixed_types);
        check_expected_algorithms();
        goto done;
    }
    BM_RUN(test_overlap);
    BM_RUN(test_mixed_types);
    test_cart(MPI_COMM_WORLD, 1);
    test_cart(MPI_COMM_WORLD, 2);
    if (wsize > 2) { /* a 2-rank ring inside a bigger job */
        MPI_Comm two;
        MPI_Comm_split(MPI_COMM_WORLD, wrank < 2 ? 0 : MPI_UNDEFINED, wrank, &two);
        if (two != MPI_COMM_NULL) {
            test_cart(two, 1);
            MPI_Comm_free(&two);
        }
    }
    BM_RUN(test_graph);
    BM_RUN(test_graph_gap);
    check_expected_algorithms();
done:
    MPI_Op_free(&affine_op);
    MPI_Op_free(&usum_op);
    MPI_Type_free(&pair_t);
    MPI_Type_free(&gap_t);
    MPI_Finalize();
    return bm_test_summary("coll_check");
}
