/* Unit test of the datatype engine (util/dtype.h) against a naive reference:
 * thousands of randomly nested types (struct of vector of indexed of
 * resized ..., with markers, negative strides and displacements, pair types
 * with inner padding) are built twice, once by the engine and once as an
 * explicit type map (every basic element's address, in order). For each the
 * test checks the bounds, size and element count, then packs (count, type)
 * whole and in pieces split at random points and compares with the
 * reference stream, unpacks pieces in random order (in stream order when
 * the type map overlaps itself) and compares the memory, lists contiguous
 * pieces with a random cap and checks they cover the stream in order,
 * walks the typed description element by element, and counts elements in
 * random prefixes (MPI_Get_elements). The seed is fixed (BM_TEST_SEED
 * overrides it) so a failure can be replayed; it is printed with the
 * failing case. */
#include "bm_test.h"
#include "util/dtype.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static long rnd_in(long lo, long hi) /* [lo, hi] */
{
    return lo + (long)(rnd() % (uint64_t)(hi - lo + 1));
}

/* ---- the reference: a type map ------------------------------------------ */

struct relem {
    ptrdiff_t disp;
    int basic;
};

struct rtype {
    struct relem *e;
    size_t n;
    ptrdiff_t lb, ub;
    unsigned marks;
    size_t align;
    bool marker;
};

/* Basic types of the test: id, size, extent, align, parts. */
struct basic_def {
    size_t size;
    ptrdiff_t extent;
    size_t align;
    int nparts;
    struct bm_util_dtype_part parts[2];
};
static const struct basic_def basics[] = {
    {1, 1, 1, 1, {{0, 1}}},         {4, 4, 4, 1, {{0, 4}}},
    {8, 8, 8, 1, {{0, 8}}},         {12, 16, 8, 2, {{0, 8}, {8, 4}}}, /* double-int pair */
    {6, 8, 4, 2, {{0, 2}, {4, 4}}}, /* short-int pair: padding inside */
};
#define NBASIC ((int)(sizeof(basics) / sizeof(basics[0])))

static struct bm_util_dtype *engine_basic[NBASIC];

struct pair {
    struct bm_util_dtype *t;
    struct rtype r;
};

static size_t MAX_ELEMS = 3000;

static void rt_push(struct rtype *r, ptrdiff_t disp, int basic)
{
    r->e = realloc(r->e, (r->n + 1) * sizeof(*r->e));
    r->e[r->n].disp = disp;
    r->e[r->n].basic = basic;
    r->n++;
}

static size_t rt_size(const struct rtype *r)
{
    size_t s = 0;
    for (size_t i = 0; i < r->n; i++)
        s += basics[r->e[i].basic].size;
    return s;
}

/* Bounds of a new type from copies (old at positions pos[]), by brute force. */
struct rbounds {
    bool any, mlb, mub;
    ptrdiff_t lb, ub, vmlb, vmub;
    size_t align;
};

static void rb_copy(struct rbounds *b, ptrdiff_t pos, const struct rtype *old)
{
    if (old->marks & BM_UTIL_DTYPE_LB_MARKED) {
        b->vmlb = b->mlb && b->vmlb < pos + old->lb ? b->vmlb : pos + old->lb;
        b->mlb = true;
    }
    if (old->marks & BM_UTIL_DTYPE_UB_MARKED) {
        b->vmub = b->mub && b->vmub > pos + old->ub ? b->vmub : pos + old->ub;
        b->mub = true;
    }
    if (old->marker)
        return;
    b->lb = b->any && b->lb < pos + old->lb ? b->lb : pos + old->lb;
    b->ub = b->any && b->ub > pos + old->ub ? b->ub : pos + old->ub;
    b->any = true;
    if (old->align > b->align)
        b->align = old->align;
}

static void rb_finish(struct rtype *r, const struct rbounds *b, bool pad)
{
    r->lb = b->mlb ? b->vmlb : (b->any ? b->lb : (b->mub ? b->vmub : 0));
    r->ub = b->mub ? b->vmub : (b->any ? b->ub : r->lb);
    r->marks = (b->mlb ? BM_UTIL_DTYPE_LB_MARKED : 0u) | (b->mub ? BM_UTIL_DTYPE_UB_MARKED : 0u);
    r->align = b->align ? b->align : 1;
    if (pad && !r->marks && r->ub > r->lb) {
        ptrdiff_t ext = r->ub - r->lb, al = (ptrdiff_t)r->align;
        r->ub = r->lb + (ext + al - 1) / al * al;
    }
}

static void rt_append(struct rtype *r, const struct rtype *old, ptrdiff_t pos)
{
    for (size_t i = 0; i < old->n; i++)
        rt_push(r, pos + old->e[i].disp, old->e[i].basic);
}

static void pair_free(struct pair *p)
{
    bm_util_dtype_release(p->t);
    free(p->r.e);
}

/* ---- random types ------------------------------------------------------- */

static struct pair gen(int depth);

static struct pair gen_basic(void)
{
    struct pair p = {0};
    int id = (int)rnd_in(0, NBASIC - 1);
    p.t = engine_basic[id];
    bm_util_dtype_retain(p.t);
    rt_push(&p.r, 0, id);
    p.r.ub = basics[id].extent;
    p.r.align = basics[id].align;
    return p;
}

static ptrdiff_t ext_of(const struct rtype *r)
{
    return r->ub - r->lb;
}

static struct pair gen_hvector(int depth, int flavour)
{
    struct pair old = gen(depth - 1), p = {0};
    ptrdiff_t ext = ext_of(&old.r);
    size_t count = (size_t)rnd_in(0, 5), bl = (size_t)rnd_in(0, 4);
    ptrdiff_t stride;
    if (flavour == 0) { /* contiguous */
        bl = count;
        count = 1;
        stride = 0;
    } else if (flavour == 1) { /* vector: stride in extents */
        stride = rnd_in(-6, 6) * ext;
    } else {
        stride = rnd_in(-64, 64);
    }
    if (count * bl * old.r.n > MAX_ELEMS) {
        pair_free(&old);
        return gen_basic();
    }
    p.t = bm_util_dtype_hvector(count, bl, stride, old.t);
    struct rbounds b = {0};
    for (size_t i = 0; i < count; i++)
        for (size_t k = 0; k < bl; k++) {
            ptrdiff_t pos = (ptrdiff_t)i * stride + (ptrdiff_t)k * ext;
            rb_copy(&b, pos, &old.r);
            rt_append(&p.r, &old.r, pos);
        }
    rb_finish(&p.r, &b, false);
    pair_free(&old);
    return p;
}

static struct bm_util_dtype *marker_t[2];

static struct pair gen_struct(int depth, int flavour)
{
    size_t n = (size_t)rnd_in(1, 5);
    struct pair olds[10] = {0}, p = {0};
    size_t bls[10];
    ptrdiff_t disps[10];
    const struct bm_util_dtype *ts[10];
    /* periodic (flavour 3): a pattern of per blocks repeated reps times at a
     * constant stride, plus maybe one more block */
    size_t per = (size_t)rnd_in(2, 3), reps = (size_t)rnd_in(2, 3);
    ptrdiff_t pstride = rnd_in(-40, 80);
    if (flavour == 3)
        n = per * reps + (size_t)rnd_in(0, 1);
    size_t total = 0;
    bool regular = flavour == 1; /* indexed_block at a constant stride */
    ptrdiff_t step = rnd_in(-3, 4);
    for (size_t i = 0; i < n; i++) {
        if (flavour == 2 && i > 0) { /* struct: own old types */
            if (rnd() % 8 == 0) {
                int m = (int)(rnd() % 2);
                olds[i].t = marker_t[m];
                bm_util_dtype_retain(olds[i].t);
                olds[i].r.marker = true;
                olds[i].r.marks = m ? BM_UTIL_DTYPE_UB_MARKED : BM_UTIL_DTYPE_LB_MARKED;
                olds[i].r.align = 1;
            } else {
                olds[i] = gen(depth - 1);
            }
        } else if (i == 0) {
            olds[0] = gen(depth - 1);
        } else {
            olds[i] = olds[0];
            bm_util_dtype_retain(olds[i].t);
            olds[i].r.e = malloc(olds[0].r.n * sizeof(struct relem) + 1);
            if (olds[0].r.n)
                memcpy(olds[i].r.e, olds[0].r.e, olds[0].r.n * sizeof(struct relem));
        }
        ts[i] = olds[i].t;
        if (flavour == 3 && i >= per && i < per * reps) {
            bls[i] = bls[i - per];
            disps[i] = disps[i - per] + pstride;
        } else {
            bls[i] = regular ? 2 : (size_t)rnd_in(0, 3);
            disps[i] = regular ? (ptrdiff_t)i * step * ext_of(&olds[0].r) : rnd_in(-64, 128);
        }
        total += bls[i] * olds[i].r.n;
    }
    if (total <= MAX_ELEMS) {
        p.t = bm_util_dtype_struct(n, bls, disps, ts, flavour == 2);
        struct rbounds b = {0};
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; k < bls[i]; k++) {
                ptrdiff_t pos = disps[i] + (ptrdiff_t)k * ext_of(&olds[i].r);
                rb_copy(&b, pos, &olds[i].r);
                rt_append(&p.r, &olds[i].r, pos);
            }
        rb_finish(&p.r, &b, flavour == 2);
    }
    for (size_t i = 0; i < n; i++)
        pair_free(&olds[i]);
    return total <= MAX_ELEMS ? p : gen_basic();
}

static struct pair gen_resized(int depth)
{
    struct pair old = gen(depth - 1), p = {0};
    ptrdiff_t lb = rnd_in(-16, 16), ext = rnd_in(1, 64);
    p.t = bm_util_dtype_resized(old.t, lb, ext);
    p.r = old.r;
    p.r.e = malloc(old.r.n * sizeof(struct relem) + 1);
    if (old.r.n)
        memcpy(p.r.e, old.r.e, old.r.n * sizeof(struct relem));
    p.r.lb = lb;
    p.r.ub = lb + ext;
    p.r.marks = BM_UTIL_DTYPE_LB_MARKED | BM_UTIL_DTYPE_UB_MARKED;
    p.r.marker = false;
    pair_free(&old);
    return p;
}

static struct pair gen(int depth)
{
    if (depth <= 0 || rnd() % 4 == 0)
        return gen_basic();
    switch (rnd() % 8) {
    case 7:
        return gen_struct(depth, 3); /* periodic hindexed */
    case 0:
        return gen_hvector(depth, 0);
    case 1:
        return gen_hvector(depth, 1);
    case 2:
        return gen_hvector(depth, 2);
    case 3:
        return gen_struct(depth, 0); /* hindexed */
    case 4:
        return gen_struct(depth, 1); /* regular indexed_block */
    case 5:
        return gen_struct(depth, 2); /* struct */
    default:
        return gen_resized(depth);
    }
}

/* ---- checks -------------------------------------------------------------- */

static int case_no;
static uint64_t case_seed;

#define CASE_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (cond) {                                                                                \
            bm_test_passed++;                                                                      \
        } else {                                                                                   \
            char m_[256];                                                                          \
            snprintf(m_, sizeof(m_), __VA_ARGS__);                                                 \
            bm_test_fail(__FILE__, __LINE__, "case %d (seed %#" PRIx64 "): %s", case_no,           \
                         case_seed, m_);                                                           \
            return;                                                                                \
        }                                                                                          \
    } while (0)

struct walk_rec {
    const struct rtype *r;
    size_t count, at; /* elements of the message seen so far */
    uintptr_t base;
    ptrdiff_t ext;
    bool bad;
};

static int walk_cb(int basic, char *a, size_t n, ptrdiff_t stride, void *arg)
{
    struct walk_rec *w = arg;
    for (size_t i = 0; i < n; i++) {
        size_t el = w->at / w->r->n, k = w->at % w->r->n;
        uintptr_t want = w->base + (uintptr_t)((ptrdiff_t)el * w->ext + w->r->e[k].disp);
        if (el >= w->count || w->r->e[k].basic != basic ||
            (uintptr_t)a + (uintptr_t)((ptrdiff_t)i * stride) != want) {
            w->bad = true;
            return 1;
        }
        w->at++;
    }
    return 0;
}

static void check_case(const struct pair *p, size_t count)
{
    const struct bm_util_dtype *t = p->t;
    const struct rtype *r = &p->r;
    size_t size = rt_size(r);
    ptrdiff_t ext = ext_of(r);

    CASE_CHECK(t != NULL, "type not built");
    CASE_CHECK(t->size == size, "size %zu, want %zu", t->size, size);
    CASE_CHECK(t->lb == r->lb && t->ub == r->ub, "bounds [%td, %td), want [%td, %td)", t->lb, t->ub,
               r->lb, r->ub);
    CASE_CHECK(t->marks == r->marks, "marks %u, want %u", t->marks, r->marks);
    ptrdiff_t tlb = 0, tub = 0;
    uint64_t nel = 0;
    for (size_t i = 0; i < r->n; i++) {
        const struct basic_def *b = &basics[r->e[i].basic];
        for (int k = 0; k < b->nparts; k++) {
            ptrdiff_t lo = r->e[i].disp + b->parts[k].off, hi = lo + (ptrdiff_t)b->parts[k].len;
            tlb = (i == 0 && k == 0) || lo < tlb ? lo : tlb;
            tub = (i == 0 && k == 0) || hi > tub ? hi : tub;
        }
        nel += (uint64_t)b->nparts;
    }
    CASE_CHECK(t->true_lb == tlb && t->true_ub == tub, "true bounds [%td, %td), want [%td, %td)",
               t->true_lb, t->true_ub, tlb, tub);
    CASE_CHECK(t->nelems == nel, "elements %" PRIu64 ", want %" PRIu64, t->nelems, nel);

    /* Memory covering every element's data. */
    ptrdiff_t lo = 0, hi = 0;
    for (size_t c = 0; c < count && size > 0; c++) {
        ptrdiff_t a = (ptrdiff_t)c * ext + tlb, z = (ptrdiff_t)c * ext + tub;
        lo = (c == 0 || a < lo) ? a : lo;
        hi = (c == 0 || z > hi) ? z : hi;
    }
    size_t span = (size_t)(hi - lo), total = size * count;
    /* calloc: with an empty span nothing below writes mem, and -O3 warns. */
    unsigned char *mem = calloc(span + 1, 1), *mem2 = malloc(span + 1), *want = malloc(span + 1);
    unsigned char *ref = malloc(total + 1), *got = malloc(total + 1);
    unsigned char *owner = calloc(span + 1, 1);
    for (size_t i = 0; i < span; i++)
        mem[i] = (unsigned char)rnd();
    uintptr_t base = (uintptr_t)mem - (uintptr_t)lo;
    uintptr_t base2 = (uintptr_t)mem2 - (uintptr_t)lo;

    /* The reference stream, and whether the type map overlaps itself. */
    bool overlap = false;
    size_t s = 0;
    memset(want, 0, span);
    for (size_t c = 0; c < count; c++)
        for (size_t i = 0; i < r->n; i++) {
            const struct basic_def *b = &basics[r->e[i].basic];
            for (int k = 0; k < b->nparts; k++) {
                size_t off = (size_t)((ptrdiff_t)c * ext + r->e[i].disp + b->parts[k].off - lo);
                for (size_t j = 0; j < b->parts[k].len; j++) {
                    if (owner[off + j])
                        overlap = true;
                    owner[off + j] = 1;
                }
                memcpy(ref + s, mem + off, b->parts[k].len);
                memcpy(want + off, mem + off, b->parts[k].len);
                s += b->parts[k].len;
            }
        }

    /* Whole, then in random pieces, through the convertor. */
    struct bm_util_dtype_conv cv;
    bm_util_dtype_conv_init(&cv, t, (void *)base, count);
    CASE_CHECK(cv.total == total, "total %zu", cv.total);
    memset(got, 0, total);
    bm_util_dtype_pack(t, (void *)base, count, 0, got, total);
    CASE_CHECK(memcmp(got, ref, total) == 0, "whole pack differs (%zu bytes)", total);
    memset(got, 0, total);
    size_t ncut = (size_t)rnd_in(0, 6);
    bool far = rnd() & 1; /* half the cases packed as into a transport's buffer */
    for (size_t off = 0, i = 0; off < total; i++) {
        size_t len = i < ncut ? (size_t)rnd_in(1, (long)(total - off)) : total - off;
        size_t n = far ? bm_util_dtype_conv_pack_far(&cv, off, got + off, len + 3)
                       : bm_util_dtype_conv_pack(&cv, off, got + off, len + 3);
        CASE_CHECK(n == (off + len + 3 > total ? total - off : len + 3) || n == total - off,
                   "conv_pack returned %zu", n);
        off += n;
    }
    CASE_CHECK(memcmp(got, ref, total) == 0, "split pack differs (%zu bytes, %zu cuts, far %d)",
               total, ncut, far);

    /* Unpack in pieces, in random order unless the map overlaps. */
    memset(mem2, 0, span);
    size_t nc = 1 + (size_t)rnd_in(0, 6);
    size_t bounds[9];
    bounds[0] = 0;
    for (size_t i = 1; i < nc; i++)
        bounds[i] = total ? (size_t)rnd_in(0, (long)total) : 0;
    bounds[nc] = total;
    for (size_t i = 1; i < nc; i++) /* sort */
        for (size_t j = i; j > 0 && bounds[j] < bounds[j - 1]; j--) {
            size_t x = bounds[j];
            bounds[j] = bounds[j - 1];
            bounds[j - 1] = x;
        }
    size_t order[8];
    for (size_t i = 0; i < nc; i++)
        order[i] = i;
    if (!overlap)
        for (size_t i = nc; i > 1; i--) {
            size_t j = (size_t)rnd_in(0, (long)i - 1), x = order[i - 1];
            order[i - 1] = order[j];
            order[j] = x;
        }
    struct bm_util_dtype_conv cv2;
    bm_util_dtype_conv_init(&cv2, t, (void *)base2, count);
    bool stream = rnd() & 1; /* half the cases with streaming stores for large blocks */
    for (size_t i = 0; i < nc; i++) {
        size_t a = bounds[order[i]], z = bounds[order[i] + 1], streamed;
        if (stream)
            bm_util_dtype_conv_unpack_stream(&cv2, a, ref + a, z - a, &streamed);
        else
            bm_util_dtype_conv_unpack(&cv2, a, ref + a, z - a);
    }
    CASE_CHECK(memcmp(mem2, want, span) == 0, "unpack differs (%zu bytes, overlap %d, stream %d)",
               total, overlap, stream);

    /* Pieces, a few at a time, cover the stream in order. */
    size_t off = 0, maxp = (size_t)rnd_in(1, 9);
    struct bm_util_dtype_piece pcs[9];
    s = 0;
    while (off < total) {
        size_t done,
            np = bm_util_dtype_pieces(t, (void *)base, count, off, total - off, pcs, maxp, &done);
        CASE_CHECK(np > 0 && np <= maxp && done > 0, "pieces: %zu pieces, %zu bytes", np, done);
        size_t sum = 0;
        for (size_t i = 0; i < np; i++) {
            CASE_CHECK(memcmp(pcs[i].addr, ref + off + sum, pcs[i].len) == 0,
                       "piece %zu at stream %zu differs", i, off + sum);
            if (i > 0)
                CASE_CHECK(pcs[i - 1].addr + pcs[i - 1].len != pcs[i].addr, "pieces not merged");
            sum += pcs[i].len;
        }
        CASE_CHECK(sum == done, "pieces sum %zu, done %zu", sum, done);
        off += done;
    }

    /* Typed walk: every basic element, in order, at its address. */
    struct walk_rec wr = {.r = r, .count = count, .base = base, .ext = ext};
    bm_util_dtype_walk(t, (void *)base, count, walk_cb, &wr);
    CASE_CHECK(!wr.bad && wr.at == count * r->n, "typed walk: %zu elements of %zu, bad %d", wr.at,
               count * r->n, wr.bad);

    /* Elements in prefixes of the stream. */
    for (int k = 0; k < 4 && total > 0; k++) {
        size_t bytes = (size_t)rnd_in(0, (long)total);
        int64_t want_n = 0;
        size_t left = bytes;
        for (size_t c = 0; c < count && left > 0; c++)
            for (size_t i = 0; i < r->n && left > 0; i++) {
                const struct basic_def *b = &basics[r->e[i].basic];
                for (int q = 0; q < b->nparts && left > 0; q++) {
                    if (left < b->parts[q].len) {
                        want_n = -1;
                        left = 0;
                        break;
                    }
                    left -= b->parts[q].len;
                    want_n++;
                }
            }
        int64_t n = bm_util_dtype_count_elems(t, bytes);
        CASE_CHECK(n == want_n, "elements in %zu bytes: %" PRId64 ", want %" PRId64, bytes, n,
                   want_n);
    }
    /* The encoded layout lists the same pieces (single copy). */
    static unsigned char code[1 << 16];
    size_t clen = bm_util_dtype_encode(t, code, sizeof(code));
    if (clen > 0) {
        struct bm_util_dtype *dt = bm_util_dtype_decode(code, clen);
        CASE_CHECK(dt != NULL, "decode of a %zu-byte encoding failed", clen);
        CASE_CHECK(dt->size == t->size && bm_util_dtype_extent(dt) == ext && dt->pdisp == t->pdisp,
                   "decoded type differs");
        memset(got, 0, total);
        bm_util_dtype_pack(dt, (void *)base, count, 0, got, total);
        int same = memcmp(got, ref, total) == 0;
        bm_util_dtype_release(dt);
        CASE_CHECK(same, "decoded type packs differently (%zu bytes)", total);
        /* a truncated or corrupted encoding is refused, never crashes */
        CASE_CHECK(bm_util_dtype_decode(code, clen - 1) == NULL || clen <= 32,
                   "truncated encoding accepted");
        code[32 + rnd() % (clen > 33 ? clen - 32 : 1)] ^= (unsigned char)(1u << (rnd() % 8));
        struct bm_util_dtype *junk = bm_util_dtype_decode(code, clen);
        bm_util_dtype_release(junk);
    }
    /* Elements to bytes and back (MPI_Status_set_elements). */
    for (int k = 0; k < 3 && nel > 0; k++) {
        uint64_t n = (uint64_t)rnd_in(0, (long)(nel * count + 2));
        size_t b = bm_util_dtype_elems_bytes(t, n);
        CASE_CHECK(bm_util_dtype_count_elems(t, b) == (int64_t)n,
                   "%" PRIu64 " elements -> %zu bytes -> %" PRId64 " elements", n, b,
                   bm_util_dtype_count_elems(t, b));
    }
    free(mem);
    free(mem2);
    free(want);
    free(ref);
    free(got);
    free(owner);
}

/* ---- hand-picked cases ---------------------------------------------------- */

static void test_shapes(void)
{
    /* A vector of doubles is one vector of one leaf. */
    struct bm_util_dtype *v = bm_util_dtype_hvector(100, 1, 16, engine_basic[2]);
    BM_CHECK(v && v->pieces == 100 && !v->one_block);
    BM_CHECK_EQ_INT(v->lb, 0);
    BM_CHECK_EQ_INT(v->ub, 99 * 16 + 8);
    /* contiguous of contiguous is one block, and contig for any count */
    struct bm_util_dtype *c = bm_util_dtype_hvector(1, 10, 0, engine_basic[1]);
    struct bm_util_dtype *cc = bm_util_dtype_hvector(1, 3, 0, c);
    BM_CHECK(cc && cc->one_block && cc->pieces == 1 && bm_util_dtype_contig(cc, 7));
    /* a pair with inner padding: two runs per element, never contiguous */
    BM_CHECK(engine_basic[4]->pieces == 2 && !bm_util_dtype_contig(engine_basic[4], 1));
    /* the double-int pair: one run, but count > 1 leaves gaps */
    BM_CHECK(bm_util_dtype_contig(engine_basic[3], 1) && !bm_util_dtype_contig(engine_basic[3], 2));
    /* regular indexed blocks become a vector: 4 blocks of 2 ints every 5 ints */
    size_t bl[4] = {2, 2, 2, 2};
    ptrdiff_t d[4] = {0, 20, 40, 60};
    const struct bm_util_dtype *o[4] = {engine_basic[1], engine_basic[1], engine_basic[1],
                                        engine_basic[1]};
    struct bm_util_dtype *ix = bm_util_dtype_struct(4, bl, d, o, false);
    BM_CHECK(ix && ix->pieces == 4 && ix->size == 32);
    /* struct {double; char} is padded to 16 */
    size_t bl2[2] = {1, 1};
    ptrdiff_t d2[2] = {0, 8};
    const struct bm_util_dtype *o2[2] = {engine_basic[2], engine_basic[0]};
    struct bm_util_dtype *st = bm_util_dtype_struct(2, bl2, d2, o2, true);
    BM_CHECK(st && st->ub == 16 && st->true_ub == 9 && st->basic == BM_UTIL_DTYPE_MIXED);
    BM_CHECK(st && st->one_block && !bm_util_dtype_contig(st, 2));
    /* a struct of one basic type reports it */
    BM_CHECK(ix && ix->basic == 1);
    bm_util_dtype_release(v);
    bm_util_dtype_release(c);
    bm_util_dtype_release(cc);
    bm_util_dtype_release(ix);
    bm_util_dtype_release(st);
}

/* Unpacking with streaming stores: blocks of 256 bytes or more bypass the
 * cache (and are counted), smaller ones do not; the bytes land as with a
 * plain unpack, split anywhere. */
static void test_stream(void)
{
    /* 64 doubles every 128 (512-byte blocks), and 1 double every 2 */
    struct bm_util_dtype *big = bm_util_dtype_hvector(300, 64, 1024, engine_basic[2]);
    struct bm_util_dtype *small = bm_util_dtype_hvector(300, 1, 16, engine_basic[2]);
    for (int k = 0; k < 2; k++) {
        struct bm_util_dtype *t = k == 0 ? big : small;
        size_t span = (size_t)bm_util_dtype_extent(t), total = t->size;
        unsigned char *src = malloc(total), *a = calloc(span, 1), *b = calloc(span, 1);
        for (size_t i = 0; i < total; i++)
            src[i] = (unsigned char)rnd();
        struct bm_util_dtype_conv ca, cb;
        bm_util_dtype_conv_init(&ca, t, a, 1);
        bm_util_dtype_conv_init(&cb, t, b, 1);
        bm_util_dtype_conv_unpack(&ca, 0, src, total);
        /* in three pieces cut inside blocks */
        size_t cut1 = total / 3 + 100, cut2 = 2 * total / 3 + 7, streamed = 0, s;
        BM_CHECK_EQ_INT(bm_util_dtype_conv_unpack_stream(&cb, 0, src, cut1, &s), cut1);
        streamed += s;
        bm_util_dtype_conv_unpack_stream(&cb, cut2, src + cut2, total - cut2, &s);
        streamed += s;
        bm_util_dtype_conv_unpack_stream(&cb, cut1, src + cut1, cut2 - cut1, &s);
        streamed += s;
        BM_CHECK(memcmp(a, b, span) == 0);
        if (k == 0) /* every block but the ones cut below 256 bytes */
            BM_CHECK_MSG(streamed >= total - 3 * 512 && streamed <= total,
                         "%zu of %zu bytes streamed", streamed, total);
        else
            BM_CHECK_MSG(streamed == 0, "%zu bytes of 8-byte blocks streamed", streamed);
        free(src);
        free(a);
        free(b);
    }
    bm_util_dtype_release(big);
    bm_util_dtype_release(small);
}

/* Packing into memory another core reads: vectors of 512-byte blocks and
 * of single doubles go through the bounce buffer (in 8 KiB chunks, so
 * ranges longer than one chunk and cut inside blocks are checked), vectors
 * of 4-byte blocks, lists of short runs (a struct) and contiguous messages
 * straight; the bytes are those of a plain pack either way. */
static void test_far(void)
{
    const struct bm_util_dtype *olds[3] = {engine_basic[1], engine_basic[2], engine_basic[1]};
    size_t bl[3] = {1, 1, 1};
    ptrdiff_t disp[3] = {0, 8, 16};
    struct bm_util_dtype *rec = bm_util_dtype_struct(3, bl, disp, olds, true);
    struct bm_util_dtype *types[5] = {
        bm_util_dtype_hvector(300, 64, 1024, engine_basic[2]),
        bm_util_dtype_hvector(3000, 1, 16, engine_basic[2]),
        bm_util_dtype_hvector(1, 3000, 8, engine_basic[2]),
        bm_util_dtype_hvector(3000, 1, 8, engine_basic[1]),
        bm_util_dtype_hvector(3000, 1, 24, rec),
    };
    bool want[5] = {true, true, false, false, false};
    for (int k = 0; k < 5; k++) {
        struct bm_util_dtype *t = types[k];
        size_t span = (size_t)bm_util_dtype_extent(t), total = t->size;
        unsigned char *mem = malloc(span), *a = malloc(total), *b = malloc(total);
        for (size_t i = 0; i < span; i++)
            mem[i] = (unsigned char)rnd();
        struct bm_util_dtype_conv c;
        bm_util_dtype_conv_init(&c, t, mem, 1);
        BM_CHECK_MSG(bm_util_dtype_conv_far_bounce(&c) == want[k], "type %d: bounce %d", k,
                     (int)bm_util_dtype_conv_far_bounce(&c));
        bm_util_dtype_conv_pack(&c, 0, a, total);
        memset(b, 0, total);
        size_t long_end = total / 3 + 8192 + 300 < total ? total / 3 + 8192 + 300 : total;
        size_t cuts[] = {0, 100, total / 3, long_end, total};
        for (int i = 0; i + 1 < 5; i++)
            BM_CHECK_EQ_INT(
                bm_util_dtype_conv_pack_far(&c, cuts[i], b + cuts[i], cuts[i + 1] - cuts[i]),
                cuts[i + 1] - cuts[i]);
        BM_CHECK_MSG(memcmp(a, b, total) == 0, "type %d: far pack differs", k);
        /* past the end: cut at the message's end */
        BM_CHECK_EQ_INT(bm_util_dtype_conv_pack_far(&c, total - 5, b, 100), 5);
        BM_CHECK_EQ_INT(bm_util_dtype_conv_pack_far(&c, total, b, 100), 0);
        free(mem);
        free(a);
        free(b);
    }
    for (int k = 0; k < 5; k++)
        bm_util_dtype_release(types[k]);
    bm_util_dtype_release(rec);
}

static void test_random(void)
{
    const char *env = getenv("BM_TEST_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 0) : 0x5eed1234abcdULL;
    int ncases = 3000;
    for (case_no = 0; case_no < ncases; case_no++) {
        case_seed = seed + (uint64_t)case_no * 0x9e3779b97f4a7c15ULL;
        rng_state = case_seed | 1;
        struct pair p = gen((int)rnd_in(1, 5));
        size_t count = (size_t)rnd_in(0, 4);
        int before = bm_test_failed;
        check_case(&p, count);
        if (bm_test_failed > before && bm_test_failed > 20)
            break;
        pair_free(&p);
    }
    printf("test_dtype: %d random types checked\n", case_no);
}

int main(void)
{
    for (int i = 0; i < NBASIC; i++)
        engine_basic[i] = bm_util_dtype_basic(i, basics[i].size, basics[i].extent, basics[i].align,
                                              basics[i].nparts, basics[i].parts);
    marker_t[0] = bm_util_dtype_marker(BM_UTIL_DTYPE_LB_MARKED);
    marker_t[1] = bm_util_dtype_marker(BM_UTIL_DTYPE_UB_MARKED);
    BM_RUN(test_shapes);
    BM_RUN(test_stream);
    BM_RUN(test_far);
    BM_RUN(test_random);
    for (int i = 0; i < NBASIC; i++)
        bm_util_dtype_release(engine_basic[i]);
    bm_util_dtype_release(marker_t[0]);
    bm_util_dtype_release(marker_t[1]);
    return bm_test_summary("test_dtype");
}
