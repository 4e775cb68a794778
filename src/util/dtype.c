/* The datatype engine (see dtype.h): building the two block programs of a
 * type (packed and typed) with their merges, and walking them to pack,
 * unpack, list contiguous pieces and visit basic elements.
 *
 * A description is a tree of immutable, reference-counted nodes:
 *   LEAF  a contiguous array: n bytes (packed), or n elements of one basic
 *         type at its natural stride (typed);
 *   VEC   count instances of one child, instance i at i * stride;
 *   LIST  entries, each a child at its own displacement, in stream order,
 *         with the stream offset at which each begins (binary search).
 * A node describes an instance placed at some address; where a child sits
 * is said by its parent (the stride, or the entry's displacement), so one
 * node is shared by every type and position that uses it. A reference to
 * an instance somewhere is a (disp, node) pair, "ref" below; an empty
 * description (no data) is a NULL node.
 *
 * The builders normalise as they go, so that walks are short:
 *   - a vector of one instance is that instance;
 *   - a vector of a leaf whose stride equals the leaf's span is one leaf;
 *   - a vector whose instances tile exactly (stride = child count * child
 *     stride) with a vector child folds into one vector;
 *   - a list inlines small child lists, merges abutting leaves, and turns a
 *     run of entries of the same shape at a constant stride into a vector
 *     (an indexed type with regular displacements becomes a vector).
 * The walks handle a vector of leaves (the common strided case) in one
 * tight loop with the block size known, so a vector of doubles packs with
 * one 8-byte move per block and no call per block. */
#include "util/dtype.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

enum node_kind { NODE_LEAF, NODE_VEC, NODE_LIST };

struct entry {
    ptrdiff_t disp; /* where the child instance sits in this node's instance */
    size_t poff;    /* stream offset of its first byte within this node */
    size_t len;     /* child->size, at hand for the flat loop */
    struct bm_util_dtype_node *child;
};

struct bm_util_dtype_node {
    uint8_t kind;
    int refs;
    size_t size;     /* packed bytes of one instance */
    uint64_t pieces; /* contiguous runs of one instance (not merged across children) */
    uint64_t nelems; /* basic elements (parts of typed leaf elements) of one instance */
    int basic;       /* typed: the one basic id below, or MIXED; packed: MIXED */
    bool flat;       /* a list whose entries are all leaves (walked in one loop) */
    union {
        struct {
            size_t n;       /* bytes (packed) or elements (typed) */
            size_t bsize;   /* packed bytes of one element (1 for packed leaves) */
            ptrdiff_t bext; /* stride of the elements (1 for packed leaves) */
            /* typed: the element's parts in packed order (a value-index
             * pair has two), which MPI_Get_elements counts separately */
            unsigned nparts;
            uint32_t plen[BM_UTIL_DTYPE_MAX_PARTS];
        } leaf;
        struct {
            size_t count;
            ptrdiff_t stride;
            struct bm_util_dtype_node *child;
        } vec;
        struct {
            size_t n;
            struct entry e[]; /* flexible: the node is allocated with its entries */
        } list;
    } u;
};

struct ref {
    ptrdiff_t disp;
    struct bm_util_dtype_node *n; /* NULL: no data */
};

/* Inline a child list into its parent when it has at most this many entries. */
#define LIST_INLINE_MAX 8

/* ---- nodes --------------------------------------------------------------- */

static struct bm_util_dtype_node *node_retain(struct bm_util_dtype_node *n)
{
    if (n)
        __atomic_fetch_add(&n->refs, 1, __ATOMIC_RELAXED);
    return n;
}

static void node_release(struct bm_util_dtype_node *n)
{
    while (n && __atomic_sub_fetch(&n->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        struct bm_util_dtype_node *next = NULL;
        if (n->kind == NODE_VEC) {
            next = n->u.vec.child;
        } else if (n->kind == NODE_LIST) {
            for (size_t i = 0; i < n->u.list.n; i++)
                node_release(n->u.list.e[i].child);
        }
        free(n);
        n = next;
    }
}

static struct bm_util_dtype_node *node_alloc(enum node_kind kind, size_t nentries)
{
    size_t sz = sizeof(struct bm_util_dtype_node);
    if (kind == NODE_LIST)
        sz += nentries * sizeof(struct entry);
    struct bm_util_dtype_node *n = calloc(1, sz);
    if (n) {
        n->kind = (uint8_t)kind;
        n->refs = 1;
    }
    return n;
}

/* A leaf of n elements shaped like proto's (NULL: n bytes, packed). */
static struct bm_util_dtype_node *leaf_new(const struct bm_util_dtype_node *proto, size_t n)
{
    struct bm_util_dtype_node *l = node_alloc(NODE_LEAF, 0);
    if (!l)
        return NULL;
    if (proto) {
        l->u.leaf = proto->u.leaf;
        l->basic = proto->basic;
    } else {
        l->u.leaf.bsize = 1;
        l->u.leaf.bext = 1;
        l->u.leaf.nparts = 1;
        l->u.leaf.plen[0] = 1;
        l->basic = BM_UTIL_DTYPE_MIXED;
    }
    l->u.leaf.n = n;
    l->size = n * l->u.leaf.bsize;
    l->pieces = l->u.leaf.bsize == (size_t)l->u.leaf.bext ? 1 : n;
    l->nelems = (uint64_t)n * l->u.leaf.nparts;
    return l;
}

/* Stride from one leaf element... to the element after the leaf's last. */
static ptrdiff_t leaf_span(const struct bm_util_dtype_node *l)
{
    return (ptrdiff_t)l->u.leaf.n * l->u.leaf.bext;
}

static bool same_shape(const struct bm_util_dtype_node *a, const struct bm_util_dtype_node *b)
{
    if (a == b)
        return true;
    if (!a || !b || a->kind != NODE_LEAF || b->kind != NODE_LEAF)
        return false;
    return a->basic == b->basic && a->u.leaf.n == b->u.leaf.n &&
           a->u.leaf.bsize == b->u.leaf.bsize && a->u.leaf.bext == b->u.leaf.bext &&
           a->u.leaf.nparts == b->u.leaf.nparts;
}

/* count instances of child, instance i at i * stride. Takes no reference
 * of child's node; the result holds its own. ok is cleared when memory ran
 * out. */
static struct ref vec_make(size_t count, ptrdiff_t stride, struct ref child, bool *ok)
{
    struct ref r = {0, NULL};
    struct bm_util_dtype_node *c = child.n;
    if (count == 0 || !c)
        return r;
    if (count == 1) {
        r.disp = child.disp;
        r.n = node_retain(c);
        return r;
    }
    r.disp = child.disp;
    if (c->kind == NODE_LEAF && stride == leaf_span(c)) {
        r.n = leaf_new(c, count * c->u.leaf.n);
    } else if (c->kind == NODE_VEC && stride == (ptrdiff_t)c->u.vec.count * c->u.vec.stride) {
        struct ref inner = {child.disp, c->u.vec.child};
        return vec_make(count * c->u.vec.count, c->u.vec.stride, inner, ok);
    } else {
        r.n = node_alloc(NODE_VEC, 0);
        if (r.n) {
            r.n->size = count * c->size;
            r.n->pieces = count * c->pieces;
            r.n->nelems = count * c->nelems;
            r.n->basic = c->basic;
            r.n->u.vec.count = count;
            r.n->u.vec.stride = stride;
            r.n->u.vec.child = node_retain(c);
        }
    }
    if (!r.n)
        *ok = false;
    return r;
}

/* A growable array of refs (each holding a reference), for building lists. */
struct refs {
    struct ref *v;
    size_t n, cap;
    bool ok;
};

static void refs_push(struct refs *a, ptrdiff_t disp, struct bm_util_dtype_node *n)
{
    if (!n)
        return;
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 8;
        struct ref *v = realloc(a->v, cap * sizeof(*v));
        if (!v) {
            a->ok = false;
            return;
        }
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n].disp = disp;
    a->v[a->n].n = node_retain(n);
    a->n++;
}

static void refs_free(struct refs *a)
{
    for (size_t i = 0; i < a->n; i++)
        node_release(a->v[i].n);
    free(a->v);
}

/* Leaves a then b (at their displacements) continue one array. */
static bool leaves_abut(const struct ref *a, const struct ref *b)
{
    const struct bm_util_dtype_node *x = a->n, *y = b->n;
    return x->kind == NODE_LEAF && y->kind == NODE_LEAF && x->basic == y->basic &&
           x->u.leaf.bsize == y->u.leaf.bsize && x->u.leaf.bext == y->u.leaf.bext &&
           b->disp == a->disp + leaf_span(x);
}

static struct ref list_make(struct refs *a, bool *ok);

/* Longest period looked for in a list (entries per repetition). */
#define LIST_PERIOD_MAX 16

/* A list that repeats a pattern of p entries at a constant stride (an
 * indexed type with blocks of 1, 2, 4, 8 elements over and over) becomes a
 * vector of a list of p entries, followed by what is left. False when
 * memory ran out. */
static bool list_fold_period(struct refs *a, bool *ok)
{
    size_t n = a->n;
    for (size_t p = 2; p <= LIST_PERIOD_MAX && 2 * p <= n; p++) {
        ptrdiff_t d = a->v[p].disp - a->v[0].disp;
        size_t f = p;
        while (f < n && same_shape(a->v[f].n, a->v[f - p].n) &&
               a->v[f].disp - a->v[f - p].disp == d)
            f++;
        size_t k = f / p; /* whole repetitions */
        if (k < 2)
            continue;
        struct refs inner = {.ok = true};
        for (size_t j = 0; j < p; j++)
            refs_push(&inner, a->v[j].disp - a->v[0].disp, a->v[j].n);
        struct ref in = list_make(&inner, ok);
        if (!in.n)
            return false;
        in.disp += a->v[0].disp;
        struct ref v = vec_make(k, d, in, ok);
        node_release(in.n);
        if (!v.n)
            return false;
        for (size_t j = 0; j < k * p; j++)
            node_release(a->v[j].n);
        a->v[0] = v;
        memmove(&a->v[1], &a->v[k * p], (n - k * p) * sizeof(*a->v));
        a->n = 1 + n - k * p;
        return true;
    }
    return true;
}

/* The list of the refs in a (consumed), normalised. */
static struct ref list_make(struct refs *a, bool *ok)
{
    struct ref r = {0, NULL};
    if (!a->ok)
        goto fail;
    /* Merge abutting leaves in place. */
    size_t w = 0;
    for (size_t i = 0; i < a->n; i++) {
        if (w > 0 && leaves_abut(&a->v[w - 1], &a->v[i])) {
            struct bm_util_dtype_node *x = a->v[w - 1].n, *y = a->v[i].n;
            struct bm_util_dtype_node *m = leaf_new(x, x->u.leaf.n + y->u.leaf.n);
            if (!m)
                goto fail;
            node_release(x);
            node_release(y);
            a->v[w - 1].n = m;
            continue;
        }
        a->v[w++] = a->v[i];
    }
    a->n = w;
    /* Runs of the same shape at a constant stride become vectors. */
    w = 0;
    for (size_t i = 0; i < a->n;) {
        size_t j = i + 1;
        if (j < a->n && same_shape(a->v[i].n, a->v[j].n)) {
            ptrdiff_t stride = a->v[j].disp - a->v[i].disp;
            while (j + 1 < a->n && same_shape(a->v[i].n, a->v[j + 1].n) &&
                   a->v[j + 1].disp - a->v[j].disp == stride)
                j++;
            j++;
        }
        if (j - i >= 2) {
            struct ref v = vec_make(j - i, a->v[j - 1].disp - a->v[j - 2].disp, a->v[i], ok);
            for (size_t k = i; k < j; k++)
                node_release(a->v[k].n);
            if (!v.n)
                goto fail;
            a->v[w++] = v;
        } else {
            a->v[w++] = a->v[i];
        }
        i = j;
    }
    a->n = w;
    if (!list_fold_period(a, ok))
        goto fail;
    if (a->n == 0) {
        free(a->v);
        return r;
    }
    if (a->n == 1) {
        r = a->v[0];
        free(a->v);
        return r;
    }
    r.n = node_alloc(NODE_LIST, a->n);
    if (!r.n)
        goto fail;
    r.n->basic = a->v[0].n->basic;
    r.n->u.list.n = a->n;
    for (size_t i = 0; i < a->n; i++) {
        struct entry *e = &r.n->u.list.e[i];
        e->disp = a->v[i].disp;
        e->poff = r.n->size;
        e->child = a->v[i].n; /* the reference moves into the list */
        e->len = e->child->size;
        r.n->size += e->child->size;
        r.n->pieces += e->child->pieces;
        r.n->nelems += e->child->nelems;
        r.n->flat = i == 0 ? e->child->kind == NODE_LEAF : r.n->flat && e->child->kind == NODE_LEAF;
        if (e->child->basic != r.n->basic)
            r.n->basic = BM_UTIL_DTYPE_MIXED;
    }
    free(a->v);
    return r;
fail:
    *ok = false;
    refs_free(a);
    return r;
}

/* Append ref (disp shifted by shift) to a, inlining a small list. */
static void refs_add(struct refs *a, ptrdiff_t shift, struct ref x)
{
    if (!x.n)
        return;
    if (x.n->kind == NODE_LIST && x.n->u.list.n <= LIST_INLINE_MAX) {
        for (size_t i = 0; i < x.n->u.list.n; i++)
            refs_push(a, shift + x.disp + x.n->u.list.e[i].disp, x.n->u.list.e[i].child);
        return;
    }
    refs_push(a, shift + x.disp, x.n);
}

/* ---- types --------------------------------------------------------------- */

static struct bm_util_dtype *type_alloc(void)
{
    struct bm_util_dtype *t = calloc(1, sizeof(*t));
    if (t) {
        t->refcount = 1;
        t->align = 1;
        t->basic = BM_UTIL_DTYPE_EMPTY;
    }
    return t;
}

/* Fill what follows from the descriptions. */
static void type_finish(struct bm_util_dtype *t)
{
    t->pieces = t->packed ? t->packed->pieces : 0;
    t->one_block = t->packed && t->packed->kind == NODE_LEAF;
    if (!t->typed)
        t->basic = BM_UTIL_DTYPE_EMPTY;
    else
        t->basic = t->typed->basic;
}

/* Atomic: under MPI_THREAD_MULTIPLE threads build types on a shared one at once. */
void bm_util_dtype_retain(struct bm_util_dtype *t)
{
    __atomic_fetch_add(&t->refcount, 1, __ATOMIC_RELAXED);
}

void bm_util_dtype_release(struct bm_util_dtype *t)
{
    if (!t || __atomic_sub_fetch(&t->refcount, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    node_release(t->packed);
    node_release(t->typed);
    free(t);
}

struct bm_util_dtype *bm_util_dtype_basic(int id, size_t size, ptrdiff_t extent, size_t align,
                                          int nparts, const struct bm_util_dtype_part *parts)
{
    if (nparts < 1 || nparts > BM_UTIL_DTYPE_MAX_PARTS)
        return NULL;
    struct bm_util_dtype *t = type_alloc();
    if (!t)
        return NULL;
    bool ok = true;
    t->size = size;
    t->ub = extent;
    t->align = align ? align : 1;
    t->nelems = (uint64_t)nparts;
    struct refs a = {.ok = true};
    struct bm_util_dtype_node proto = {.kind = NODE_LEAF, .basic = id};
    proto.u.leaf.bsize = size;
    proto.u.leaf.bext = extent;
    proto.u.leaf.nparts = (unsigned)nparts;
    for (int i = 0; i < nparts; i++) {
        proto.u.leaf.plen[i] = (uint32_t)parts[i].len;
        struct bm_util_dtype_node *l = leaf_new(NULL, parts[i].len);
        if (!l) {
            a.ok = false;
            break;
        }
        refs_push(&a, parts[i].off, l);
        node_release(l);
        if (i == 0 || parts[i].off < t->true_lb)
            t->true_lb = parts[i].off;
        if (i == 0 || parts[i].off + (ptrdiff_t)parts[i].len > t->true_ub)
            t->true_ub = parts[i].off + (ptrdiff_t)parts[i].len;
    }
    struct ref p = list_make(&a, &ok);
    t->packed = p.n;
    t->pdisp = p.disp;
    t->typed = leaf_new(&proto, 1);
    if (!ok || !t->typed || (size > 0 && !t->packed)) {
        bm_util_dtype_release(t);
        return NULL;
    }
    type_finish(t);
    return t;
}

struct bm_util_dtype *bm_util_dtype_marker(unsigned mark)
{
    struct bm_util_dtype *t = type_alloc();
    if (t) {
        t->marks = mark;
        t->marker = true;
    }
    return t;
}

/* Give t its two descriptions (references taken over) and finish it; NULL
 * (t released) when memory ran out on the way. */
static struct bm_util_dtype *type_set(struct bm_util_dtype *t, struct ref p, struct ref ty, bool ok)
{
    t->packed = p.n;
    t->pdisp = p.disp;
    t->typed = ty.n;
    t->tdisp = ty.disp;
    if (!ok) {
        bm_util_dtype_release(t);
        return NULL;
    }
    type_finish(t);
    return t;
}

/* Bounds of a type being built from copies of old types. */
struct bounds {
    bool any, any_data, mlb_set, mub_set;
    ptrdiff_t lb, ub, mlb, mub, tlb, tub;
    size_t align;
};

static ptrdiff_t pmin(ptrdiff_t a, ptrdiff_t b)
{
    return a < b ? a : b;
}

static ptrdiff_t pmax(ptrdiff_t a, ptrdiff_t b)
{
    return a > b ? a : b;
}

/* Copies of old at positions between lo and hi (the least and greatest). */
static void bounds_add(struct bounds *b, ptrdiff_t lo, ptrdiff_t hi,
                       const struct bm_util_dtype *old)
{
    if (old->marks & BM_UTIL_DTYPE_LB_MARKED) {
        b->mlb = b->mlb_set ? pmin(b->mlb, lo + old->lb) : lo + old->lb;
        b->mlb_set = true;
    }
    if (old->marks & BM_UTIL_DTYPE_UB_MARKED) {
        b->mub = b->mub_set ? pmax(b->mub, hi + old->ub) : hi + old->ub;
        b->mub_set = true;
    }
    if (old->marker)
        return; /* a bare marker bounds nothing else */
    b->lb = b->any ? pmin(b->lb, lo + old->lb) : lo + old->lb;
    b->ub = b->any ? pmax(b->ub, hi + old->ub) : hi + old->ub;
    b->any = true;
    if (old->size > 0) {
        b->tlb = b->any_data ? pmin(b->tlb, lo + old->true_lb) : lo + old->true_lb;
        b->tub = b->any_data ? pmax(b->tub, hi + old->true_ub) : hi + old->true_ub;
        b->any_data = true;
    }
    if (old->align > b->align)
        b->align = old->align;
}

static void bounds_set(struct bm_util_dtype *t, const struct bounds *b, bool pad)
{
    t->lb = b->mlb_set ? b->mlb : (b->any ? b->lb : (b->mub_set ? b->mub : 0));
    t->ub = b->mub_set ? b->mub : (b->any ? b->ub : t->lb);
    if (!b->mlb_set && !b->any && b->mub_set)
        t->lb = b->mub; /* only an upper marker: an empty type at it */
    t->marks =
        (b->mlb_set ? BM_UTIL_DTYPE_LB_MARKED : 0u) | (b->mub_set ? BM_UTIL_DTYPE_UB_MARKED : 0u);
    t->true_lb = b->any_data ? b->tlb : 0;
    t->true_ub = b->any_data ? b->tub : 0;
    t->align = b->align ? b->align : 1;
    if (pad && !t->marks && t->ub > t->lb) {
        ptrdiff_t ext = t->ub - t->lb, al = (ptrdiff_t)t->align;
        t->ub = t->lb + (ext + al - 1) / al * al;
    }
}

/* Positions of blocklen copies at step ext: the least and greatest offsets. */
static void span_of(size_t n, ptrdiff_t step, ptrdiff_t *lo, ptrdiff_t *hi)
{
    ptrdiff_t last = n ? (ptrdiff_t)(n - 1) * step : 0;
    *lo = pmin(0, last);
    *hi = pmax(0, last);
}

/* blocklen copies of old's description d (at old's disp) at step ext. */
static struct ref block_of(struct bm_util_dtype_node *d, ptrdiff_t disp, size_t blocklen,
                           ptrdiff_t ext, bool *ok)
{
    struct ref one = {disp, d};
    return vec_make(blocklen, ext, one, ok);
}

struct bm_util_dtype *bm_util_dtype_hvector(size_t count, size_t blocklen, ptrdiff_t stride,
                                            const struct bm_util_dtype *old)
{
    struct bm_util_dtype *t = type_alloc();
    if (!t)
        return NULL;
    bool ok = true;
    ptrdiff_t ext = bm_util_dtype_extent(old);
    struct bounds b = {0};
    if (count > 0 && blocklen > 0) {
        ptrdiff_t lo1, hi1, lo2, hi2;
        span_of(count, stride, &lo1, &hi1);
        span_of(blocklen, ext, &lo2, &hi2);
        bounds_add(&b, lo1 + lo2, hi1 + hi2, old);
    }
    bounds_set(t, &b, false);
    t->size = count * blocklen * old->size;
    t->nelems = count * blocklen * old->nelems;
    struct ref blk = block_of(old->packed, old->pdisp, blocklen, ext, &ok);
    struct ref p = vec_make(count, stride, blk, &ok);
    node_release(blk.n);
    blk = block_of(old->typed, old->tdisp, blocklen, ext, &ok);
    struct ref ty = vec_make(count, stride, blk, &ok);
    node_release(blk.n);
    return type_set(t, p, ty, ok);
}

struct bm_util_dtype *bm_util_dtype_struct(size_t n, const size_t *blocklens,
                                           const ptrdiff_t *disps,
                                           const struct bm_util_dtype *const *olds, bool pad)
{
    struct bm_util_dtype *t = type_alloc();
    if (!t)
        return NULL;
    bool ok = true;
    struct bounds b = {0};
    struct refs pa = {.ok = true}, ta = {.ok = true};
    for (size_t i = 0; i < n; i++) {
        const struct bm_util_dtype *old = olds[i];
        if (blocklens[i] == 0)
            continue;
        ptrdiff_t ext = bm_util_dtype_extent(old), lo, hi;
        span_of(blocklens[i], ext, &lo, &hi);
        bounds_add(&b, disps[i] + lo, disps[i] + hi, old);
        t->size += blocklens[i] * old->size;
        t->nelems += blocklens[i] * old->nelems;
        struct ref blk = block_of(old->packed, old->pdisp, blocklens[i], ext, &ok);
        refs_add(&pa, disps[i], blk);
        node_release(blk.n);
        blk = block_of(old->typed, old->tdisp, blocklens[i], ext, &ok);
        refs_add(&ta, disps[i], blk);
        node_release(blk.n);
    }
    bounds_set(t, &b, pad);
    struct ref p = list_make(&pa, &ok);
    struct ref ty = list_make(&ta, &ok);
    return type_set(t, p, ty, ok);
}

struct bm_util_dtype *bm_util_dtype_resized(const struct bm_util_dtype *old, ptrdiff_t lb,
                                            ptrdiff_t extent)
{
    struct bm_util_dtype *t = type_alloc();
    if (!t)
        return NULL;
    *t = *old;
    t->refcount = 1;
    node_retain(t->packed);
    node_retain(t->typed);
    t->lb = lb;
    t->ub = lb + extent;
    t->marks = BM_UTIL_DTYPE_LB_MARKED | BM_UTIL_DTYPE_UB_MARKED;
    return t;
}

/* ---- walking a byte range -------------------------------------------------
 * Addresses are carried as uintptr_t: a struct built from absolute addresses
 * (MPI_BOTTOM, a NULL base) would otherwise mean arithmetic on a null
 * pointer. */

enum walk_mode { WALK_PACK, WALK_UNPACK, WALK_PIECES };

/* Blocks of at least this many bytes are unpacked with streaming stores
 * when the caller asks for them (bm_util_dtype_conv_unpack_stream):
 * smaller ones would write partial cache lines, which streaming stores
 * make slower, not faster. */
#define STREAM_BLOCK_MIN 256

struct walk {
    enum walk_mode mode;
    char *buf; /* pack: destination; unpack: source */
    /* unpack: blocks of STREAM_BLOCK_MIN bytes or more bypass the cache */
    bool stream;
    size_t streamed; /* bytes so written */
    /* pieces */
    struct bm_util_dtype_piece *out;
    size_t max, n, done;
    bool full;
};

static inline void *addr(uintptr_t a)
{
    return (void *)a;
}

/* One run of len bytes at a: copy, or record as a piece. False when the
 * piece list is full. */
static inline bool walk_run(struct walk *w, uintptr_t a, size_t len)
{
    switch (w->mode) {
    case WALK_PACK:
        bm_util_copy(w->buf, addr(a), len);
        w->buf += len;
        return true;
    case WALK_UNPACK:
        if (w->stream && len >= STREAM_BLOCK_MIN) {
            bm_util_copy_stream_unfenced(addr(a), w->buf, len);
            w->streamed += len;
        } else {
            bm_util_copy(addr(a), w->buf, len);
        }
        w->buf += len;
        return true;
    case WALK_PIECES:
        break;
    }
    if (w->n > 0 && (uintptr_t)w->out[w->n - 1].addr + w->out[w->n - 1].len == a) {
        w->out[w->n - 1].len += len;
    } else if (w->n == w->max) {
        w->full = true;
        return false;
    } else {
        w->out[w->n].addr = addr(a);
        w->out[w->n].len = len;
        w->n++;
    }
    w->done += len;
    return true;
}

/* nblk whole blocks of blk bytes at a, a + stride...: the hot loop, with
 * the common block sizes known to the compiler. */
#define BLOCK_LOOP(SZ)                                                                             \
    do {                                                                                           \
        if (w->mode == WALK_PACK) {                                                                \
            for (size_t i_ = 0; i_ < nblk; i_++, a += (uintptr_t)stride, d += (SZ))                \
                memcpy(d, addr(a), (SZ));                                                          \
        } else {                                                                                   \
            for (size_t i_ = 0; i_ < nblk; i_++, a += (uintptr_t)stride, d += (SZ))                \
                memcpy(addr(a), d, (SZ));                                                          \
        }                                                                                          \
    } while (0)

/* Unaligned 8-byte words that may alias anything: the element-wise loops
 * below stay legal C on any address, and the compiler can still vectorise
 * them (a stride of two words becomes loads and shuffles). */
typedef uint64_t __attribute__((aligned(1), may_alias)) word_u;

/* Blocks of one 8-byte word every k words. */
static void walk_words(struct walk *w, uintptr_t a, size_t k, size_t nblk)
{
    word_u *d = (word_u *)(void *)w->buf;
    word_u *m = (word_u *)addr(a);
    if (w->mode == WALK_PACK) {
        if (k == 2)
            for (size_t i = 0; i < nblk; i++)
                d[i] = m[2 * i];
        else
            for (size_t i = 0; i < nblk; i++)
                d[i] = m[i * k];
    } else {
        if (k == 2)
            for (size_t i = 0; i < nblk; i++)
                m[2 * i] = d[i];
        else
            for (size_t i = 0; i < nblk; i++)
                m[i * k] = d[i];
    }
    w->buf += nblk * 8;
}

static void walk_blocks(struct walk *w, uintptr_t a, ptrdiff_t stride, size_t blk, size_t nblk)
{
    char *d = w->buf;
    if (blk == 8 && stride > 0 && stride % 8 == 0) {
        walk_words(w, a, (size_t)stride / 8, nblk);
        return;
    }
    switch (blk) {
    case 1:
        BLOCK_LOOP(1);
        break;
    case 2:
        BLOCK_LOOP(2);
        break;
    case 4:
        BLOCK_LOOP(4);
        break;
    case 8:
        BLOCK_LOOP(8);
        break;
    case 12:
        BLOCK_LOOP(12);
        break;
    case 16:
        BLOCK_LOOP(16);
        break;
    case 24:
        BLOCK_LOOP(24);
        break;
    case 32:
        BLOCK_LOOP(32);
        break;
    default:
        if (blk < 64) {
            if (w->mode == WALK_PACK) {
                for (size_t i = 0; i < nblk; i++, a += (uintptr_t)stride, d += blk)
                    bm_util_copy(d, addr(a), blk);
            } else {
                for (size_t i = 0; i < nblk; i++, a += (uintptr_t)stride, d += blk)
                    bm_util_copy(addr(a), d, blk);
            }
        } else if (w->stream && w->mode == WALK_UNPACK && blk >= STREAM_BLOCK_MIN) {
            for (size_t i = 0; i < nblk; i++, a += (uintptr_t)stride, d += blk)
                bm_util_copy_stream_unfenced(addr(a), d, blk);
            w->streamed += nblk * blk;
        } else {
            BLOCK_LOOP(blk);
        }
    }
    w->buf = d;
}

/* nel whole instances of the flat list c at a, a + stride...: one loop
 * over elements and their runs (a struct's members), no call per run. */
static void walk_flat(struct walk *w, uintptr_t a, ptrdiff_t stride,
                      const struct bm_util_dtype_node *c, size_t nel)
{
    const struct entry *e = c->u.list.e;
    size_t ne = c->u.list.n;
    char *d = w->buf;
    bool pack = w->mode == WALK_PACK;
    for (size_t i = 0; i < nel; i++, a += (uintptr_t)stride)
        for (size_t j = 0; j < ne; j++) {
            size_t len = e[j].len;
            char *m = addr(a + (uintptr_t)e[j].disp);
            char *to = pack ? d : m;
            const char *from = pack ? m : d;
            /* the sizes of C members, as constant-size moves */
            switch (len) {
            case 4:
                memcpy(to, from, 4);
                break;
            case 8:
                memcpy(to, from, 8);
                break;
            case 12:
                memcpy(to, from, 12);
                break;
            case 16:
                memcpy(to, from, 16);
                break;
            case 32:
                memcpy(to, from, 32);
                break;
            case 64:
                memcpy(to, from, 64);
                break;
            default:
                bm_util_copy(to, from, len);
            }
            d += len;
        }
    w->buf = d;
}

/* Bytes [skip, skip + len) of the instance of n at a. False when stopped
 * (piece list full). */
static bool walk_node(struct walk *w, const struct bm_util_dtype_node *n, uintptr_t a, size_t skip,
                      size_t len)
{
    switch (n->kind) {
    case NODE_LEAF:
        /* Packed leaves are byte runs (bsize == bext == 1). */
        return walk_run(w, a + skip, len);
    case NODE_VEC: {
        const struct bm_util_dtype_node *c = n->u.vec.child;
        size_t csz = c->size, i = skip / csz, within = skip % csz;
        ptrdiff_t stride = n->u.vec.stride;
        a += (uintptr_t)((ptrdiff_t)i * stride);
        if (c->kind == NODE_LEAF) {
            if (within) {
                size_t k = csz - within < len ? csz - within : len;
                if (!walk_run(w, a + within, k))
                    return false;
                len -= k;
                a += (uintptr_t)stride;
            }
            size_t nblk = len / csz;
            if (w->mode != WALK_PIECES) {
                walk_blocks(w, a, stride, csz, nblk);
                a += (uintptr_t)((ptrdiff_t)nblk * stride);
            } else {
                for (size_t k = 0; k < nblk; k++, a += (uintptr_t)stride)
                    if (!walk_run(w, a, csz))
                        return false;
            }
            len -= nblk * csz;
            return len == 0 || walk_run(w, a, len);
        }
        if (c->flat && w->mode != WALK_PIECES) {
            if (within) {
                size_t k = csz - within < len ? csz - within : len;
                walk_node(w, c, a, within, k);
                len -= k;
                a += (uintptr_t)stride;
            }
            size_t nel = len / csz;
            walk_flat(w, a, stride, c, nel);
            a += (uintptr_t)((ptrdiff_t)nel * stride);
            len -= nel * csz;
            return len == 0 || walk_node(w, c, a, 0, len);
        }
        while (len > 0) {
            size_t k = csz - within < len ? csz - within : len;
            if (!walk_node(w, c, a, within, k))
                return false;
            len -= k;
            within = 0;
            a += (uintptr_t)stride;
        }
        return true;
    }
    case NODE_LIST: {
        const struct entry *e = n->u.list.e;
        size_t lo = 0, hi = n->u.list.n - 1;
        while (lo < hi) { /* the last entry starting at or before skip */
            size_t mid = (lo + hi + 1) / 2;
            if (e[mid].poff <= skip)
                lo = mid;
            else
                hi = mid - 1;
        }
        for (size_t j = lo; len > 0; j++) {
            size_t within = skip > e[j].poff ? skip - e[j].poff : 0;
            size_t avail = e[j].child->size - within;
            size_t k = avail < len ? avail : len;
            uintptr_t at = a + (uintptr_t)e[j].disp;
            if (!(e[j].child->kind == NODE_LEAF ? walk_run(w, at + within, k)
                                                : walk_node(w, e[j].child, at, within, k)))
                return false;
            len -= k;
        }
        return true;
    }
    }
    return true;
}

/* Bytes [offset, offset + len) of (count, t) at base. */
static void walk_message(struct walk *w, const struct bm_util_dtype *t, const void *base,
                         size_t count, size_t offset, size_t len)
{
    if (len == 0 || !t->packed)
        return;
    uintptr_t a = (uintptr_t)base + (uintptr_t)t->pdisp;
    if (count <= 1) {
        walk_node(w, t->packed, a, offset, len);
        return;
    }
    /* The message is a vector of count elements at the extent. */
    struct bm_util_dtype_node msg = {.kind = NODE_VEC, .refs = 1, .size = count * t->size};
    msg.u.vec.count = count;
    msg.u.vec.stride = bm_util_dtype_extent(t);
    msg.u.vec.child = t->packed;
    walk_node(w, &msg, a, offset, len);
}

void bm_util_dtype_pack(const struct bm_util_dtype *t, const void *base, size_t count,
                        size_t offset, void *dst, size_t len)
{
    struct walk w = {.mode = WALK_PACK, .buf = dst};
    if (bm_util_dtype_contig(t, count)) {
        if (len)
            memcpy(dst, (const char *)addr((uintptr_t)base + (uintptr_t)t->pdisp + offset), len);
        return;
    }
    walk_message(&w, t, base, count, offset, len);
}

void bm_util_dtype_unpack(const struct bm_util_dtype *t, void *base, size_t count, size_t offset,
                          const void *src, size_t len)
{
    struct walk w = {.mode = WALK_UNPACK, .buf = (char *)(uintptr_t)src};
    if (bm_util_dtype_contig(t, count)) {
        if (len)
            memcpy(addr((uintptr_t)base + (uintptr_t)t->pdisp + offset), src, len);
        return;
    }
    walk_message(&w, t, base, count, offset, len);
}

size_t bm_util_dtype_pieces(const struct bm_util_dtype *t, const void *base, size_t count,
                            size_t offset, size_t len, struct bm_util_dtype_piece *out, size_t max,
                            size_t *done_out)
{
    struct walk w = {.mode = WALK_PIECES, .out = out, .max = max};
    if (max == 0) {
        *done_out = 0;
        return 0;
    }
    if (bm_util_dtype_contig(t, count)) {
        if (len == 0) {
            *done_out = 0;
            return 0;
        }
        out[0].addr = addr((uintptr_t)base + (uintptr_t)t->pdisp + offset);
        out[0].len = len;
        *done_out = len;
        return 1;
    }
    walk_message(&w, t, base, count, offset, len);
    *done_out = w.done;
    return w.n;
}

/* An unpack of at most this many bytes first asks for every line of its
 * source (prefetch), then walks the type. A received fragment's lines sit
 * in the sending core's cache (sm: the sender has just written them); the
 * walk of a type with small runs reads them a few bytes at a time and, left
 * to itself, waits for each line in turn, where the prefetches have them
 * all on their way at once. Measured on the 2-core test VM (two threads:
 * one copies the packed bytes into a slot, the other unpacks them from
 * there; per-round p10 at load 16-23, two interleaved rounds), 4 KiB:
 * struct {int; double; int} 1.93-2.13 -> 1.49-1.72 us, every other double
 * 1.32-1.39 -> 1.09-1.13, indexed blocks of 1-8 doubles 1.23-1.28 ->
 * 1.16-1.18, 512-byte blocks unchanged (1.08-1.24 either way); 2 KiB
 * struct 1.18-1.27 -> 0.95-0.99; 1 KiB struct 0.69-0.71 -> 0.57-0.60.
 * From 8 KiB up prefetching the whole source first was slower (struct
 * 8 KiB 2.2-2.3 -> 2.6, 16 KiB 3.7-3.8 -> 4.6-4.7 us): the lines the first
 * runs need wait behind the rest. Data that is already in this core's
 * cache (tcp's receive buffer, MPI_Unpack of a local buffer) costs one
 * instruction per 64 bytes. 5 KiB covers sm's eager fragments (4160
 * bytes). */
#define UNPACK_PREFETCH_MAX 5120

/* Pack or unpack [offset, offset + len) of the convertor's message;
 * stream: unpack large blocks with streaming stores (*streamed_out). */
static size_t conv_move(const struct bm_util_dtype_conv *c, size_t offset, char *buf, size_t len,
                        enum walk_mode mode, bool stream, size_t *streamed_out)
{
    if (offset >= c->total)
        return 0;
    if (len > c->total - offset)
        len = c->total - offset;
    if (c->contig) {
        char *at = addr((uintptr_t)c->base + (uintptr_t)c->type->pdisp + offset);
        if (mode == WALK_PACK)
            memcpy(buf, at, len);
        else
            memcpy(at, buf, len);
        return len;
    }
    if (mode == WALK_UNPACK && len > 0 && len <= UNPACK_PREFETCH_MAX) {
        for (size_t o = 0; o < len; o += 64)
            __builtin_prefetch(buf + o);
        __builtin_prefetch(buf + len - 1);
    }
    struct walk w = {.mode = mode, .buf = buf, .stream = stream};
    walk_message(&w, c->type, c->base, c->count, offset, len);
    if (w.streamed) {
        bm_util_stream_fence();
        *streamed_out = w.streamed;
    }
    return len;
}

size_t bm_util_dtype_conv_pack(const struct bm_util_dtype_conv *c, size_t offset, void *dst,
                               size_t len)
{
    return conv_move(c, offset, dst, len, WALK_PACK, false, NULL);
}

/* The bounce of bm_util_dtype_conv_pack_far: 4 to 16 KiB measured alike,
 * 2 KiB and less slower (more, smaller copies out). */
#define FAR_BOUNCE 8192

bool bm_util_dtype_conv_far_bounce(const struct bm_util_dtype_conv *c)
{
    const struct bm_util_dtype *t = c->type;
    if (c->contig || !t->packed || t->pieces == 0)
        return false;
    if (t->size / t->pieces >= BM_UTIL_DTYPE_FAR_RUN_MIN)
        return true;
    const struct bm_util_dtype_node *n = t->packed;
    return n->kind == NODE_VEC && n->u.vec.child->kind == NODE_LEAF && n->u.vec.child->size >= 8;
}

size_t bm_util_dtype_conv_pack_far(const struct bm_util_dtype_conv *c, size_t offset, void *dst,
                                   size_t len)
{
    if (!bm_util_dtype_conv_far_bounce(c))
        return conv_move(c, offset, dst, len, WALK_PACK, false, NULL);
    if (offset >= c->total)
        return 0;
    if (len > c->total - offset)
        len = c->total - offset;
    _Alignas(64) char bounce[FAR_BOUNCE];
    for (size_t done = 0; done < len;) {
        size_t n = len - done < FAR_BOUNCE ? len - done : FAR_BOUNCE;
        struct walk w = {.mode = WALK_PACK, .buf = bounce};
        walk_message(&w, c->type, c->base, c->count, offset + done, n);
        memcpy((char *)dst + done, bounce, n);
        done += n;
    }
    return len;
}

size_t bm_util_dtype_conv_unpack(const struct bm_util_dtype_conv *c, size_t offset, const void *src,
                                 size_t len)
{
    return conv_move(c, offset, (char *)(uintptr_t)src, len, WALK_UNPACK, false, NULL);
}

size_t bm_util_dtype_conv_unpack_stream(const struct bm_util_dtype_conv *c, size_t offset,
                                        const void *src, size_t len, size_t *streamed_out)
{
    *streamed_out = 0;
    return conv_move(c, offset, (char *)(uintptr_t)src, len, WALK_UNPACK, true, streamed_out);
}

/* ---- the typed description ----------------------------------------------- */

static int walk_typed(const struct bm_util_dtype_node *n, uintptr_t a, bm_util_dtype_walk_fn fn,
                      void *arg)
{
    int rc;
    switch (n->kind) {
    case NODE_LEAF:
        return fn(n->basic, addr(a), n->u.leaf.n, n->u.leaf.bext, arg);
    case NODE_VEC:
        for (size_t i = 0; i < n->u.vec.count; i++, a += (uintptr_t)n->u.vec.stride)
            if ((rc = walk_typed(n->u.vec.child, a, fn, arg)))
                return rc;
        return 0;
    case NODE_LIST:
        for (size_t i = 0; i < n->u.list.n; i++)
            if ((rc =
                     walk_typed(n->u.list.e[i].child, a + (uintptr_t)n->u.list.e[i].disp, fn, arg)))
                return rc;
        return 0;
    }
    return 0;
}

int bm_util_dtype_walk(const struct bm_util_dtype *t, const void *base, size_t count,
                       bm_util_dtype_walk_fn fn, void *arg)
{
    if (!t->typed)
        return 0;
    uintptr_t a = (uintptr_t)base + (uintptr_t)t->tdisp;
    ptrdiff_t ext = bm_util_dtype_extent(t);
    int rc;
    for (size_t i = 0; i < count; i++, a += (uintptr_t)ext)
        if ((rc = walk_typed(t->typed, a, fn, arg)))
            return rc;
    return 0;
}

/* Basic elements in the first bytes (< n->size) of an instance of n; -1
 * when the prefix ends inside one. */
static int64_t prefix_elems(const struct bm_util_dtype_node *n, size_t bytes)
{
    for (;;) {
        switch (n->kind) {
        case NODE_LEAF: {
            size_t full = bytes / n->u.leaf.bsize, rest = bytes % n->u.leaf.bsize;
            int64_t k = (int64_t)(full * n->u.leaf.nparts);
            for (unsigned i = 0; rest > 0 && i < n->u.leaf.nparts; i++) {
                if (rest < n->u.leaf.plen[i])
                    return -1;
                rest -= n->u.leaf.plen[i];
                k++;
            }
            return k;
        }
        case NODE_VEC: {
            const struct bm_util_dtype_node *c = n->u.vec.child;
            size_t full = bytes / c->size, rest = bytes % c->size;
            int64_t k = (int64_t)(full * c->nelems);
            if (rest == 0)
                return k;
            int64_t p = prefix_elems(c, rest);
            return p < 0 ? -1 : k + p;
        }
        case NODE_LIST: {
            int64_t k = 0;
            for (size_t i = 0; i < n->u.list.n; i++) {
                const struct bm_util_dtype_node *c = n->u.list.e[i].child;
                if (bytes >= c->size) {
                    bytes -= c->size;
                    k += (int64_t)c->nelems;
                    continue;
                }
                if (bytes == 0)
                    return k;
                int64_t p = prefix_elems(c, bytes);
                return p < 0 ? -1 : k + p;
            }
            return k;
        }
        }
        return -1;
    }
}

int64_t bm_util_dtype_count_elems(const struct bm_util_dtype *t, size_t bytes)
{
    if (t->size == 0 || !t->typed)
        return 0;
    size_t full = bytes / t->size, rest = bytes % t->size;
    int64_t k = (int64_t)(full * t->nelems);
    if (rest == 0)
        return k;
    int64_t p = prefix_elems(t->typed, rest);
    return p < 0 ? -1 : k + p;
}

/* Packed bytes of the first k (< n->nelems) basic elements of an instance of n. */
static size_t prefix_bytes(const struct bm_util_dtype_node *n, uint64_t k)
{
    switch (n->kind) {
    case NODE_LEAF: {
        uint64_t full = k / n->u.leaf.nparts, rest = k % n->u.leaf.nparts;
        size_t b = (size_t)full * n->u.leaf.bsize;
        for (unsigned i = 0; i < rest; i++)
            b += n->u.leaf.plen[i];
        return b;
    }
    case NODE_VEC: {
        const struct bm_util_dtype_node *c = n->u.vec.child;
        uint64_t full = k / c->nelems, rest = k % c->nelems;
        return (size_t)full * c->size + (rest ? prefix_bytes(c, rest) : 0);
    }
    case NODE_LIST: {
        size_t b = 0;
        for (size_t i = 0; i < n->u.list.n && k > 0; i++) {
            const struct bm_util_dtype_node *c = n->u.list.e[i].child;
            if (k >= c->nelems) {
                k -= c->nelems;
                b += c->size;
            } else {
                return b + prefix_bytes(c, k);
            }
        }
        return b;
    }
    }
    return 0;
}

size_t bm_util_dtype_elems_bytes(const struct bm_util_dtype *t, uint64_t elems)
{
    if (t->nelems == 0 || !t->typed)
        return 0;
    uint64_t full = elems / t->nelems, rest = elems % t->nelems;
    return (size_t)full * t->size + (rest ? prefix_bytes(t->typed, rest) : 0);
}

/* ---- encoding the packed description (single copy of non-contiguous data) --
 * Pre-order: a node is its kind byte, then LEAF: n; VEC: count, stride,
 * child; LIST: n, then n times (disp, child). Integers are 8 bytes in this
 * machine's order (no heterogeneity). A shared node is written at each use,
 * so the encoding may be larger than the tree: the caller's cap bounds it. */

struct enc {
    unsigned char *p;
    size_t len, cap;
    bool over;
};

static void enc_u64(struct enc *e, uint64_t v)
{
    if (e->len + 8 > e->cap) {
        e->over = true;
        return;
    }
    memcpy(e->p + e->len, &v, 8);
    e->len += 8;
}

static void enc_node(struct enc *e, const struct bm_util_dtype_node *n)
{
    if (e->over)
        return;
    if (e->len + 1 > e->cap) {
        e->over = true;
        return;
    }
    e->p[e->len++] = n->kind;
    switch (n->kind) {
    case NODE_LEAF:
        enc_u64(e, n->u.leaf.n);
        return;
    case NODE_VEC:
        enc_u64(e, n->u.vec.count);
        enc_u64(e, (uint64_t)n->u.vec.stride);
        enc_node(e, n->u.vec.child);
        return;
    case NODE_LIST:
        enc_u64(e, n->u.list.n);
        for (size_t i = 0; i < n->u.list.n && !e->over; i++) {
            enc_u64(e, (uint64_t)n->u.list.e[i].disp);
            enc_node(e, n->u.list.e[i].child);
        }
        return;
    }
}

size_t bm_util_dtype_encode(const struct bm_util_dtype *t, void *buf, size_t cap)
{
    struct enc e = {.p = buf, .cap = cap};
    enc_u64(&e, t->size);
    enc_u64(&e, (uint64_t)t->lb);
    enc_u64(&e, (uint64_t)t->ub);
    enc_u64(&e, (uint64_t)t->pdisp);
    if (t->packed)
        enc_node(&e, t->packed);
    return e.over ? 0 : e.len;
}

struct dec {
    const unsigned char *p;
    size_t len, at;
    bool bad;
};

static uint64_t dec_u64(struct dec *d)
{
    uint64_t v = 0;
    if (d->at + 8 > d->len) {
        d->bad = true;
        return 0;
    }
    memcpy(&v, d->p + d->at, 8);
    d->at += 8;
    return v;
}

/* Deep enough for any real type; bounds the recursion on malformed input. */
#define DECODE_DEPTH_MAX 64

static struct bm_util_dtype_node *dec_node(struct dec *d, int depth)
{
    if (d->bad || depth > DECODE_DEPTH_MAX || d->at >= d->len) {
        d->bad = true;
        return NULL;
    }
    uint8_t kind = d->p[d->at++];
    struct bm_util_dtype_node *n = NULL;
    switch (kind) {
    case NODE_LEAF: {
        uint64_t len = dec_u64(d);
        if (d->bad || len == 0)
            break;
        return leaf_new(NULL, (size_t)len);
    }
    case NODE_VEC: {
        uint64_t count = dec_u64(d);
        ptrdiff_t stride = (ptrdiff_t)dec_u64(d);
        struct bm_util_dtype_node *c = dec_node(d, depth + 1);
        if (d->bad || !c || count < 2 || !(n = node_alloc(NODE_VEC, 0))) {
            node_release(c);
            break;
        }
        n->size = (size_t)count * c->size;
        n->pieces = count * c->pieces;
        n->nelems = count * c->nelems;
        n->basic = BM_UTIL_DTYPE_MIXED;
        n->u.vec.count = (size_t)count;
        n->u.vec.stride = stride;
        n->u.vec.child = c;
        return n;
    }
    case NODE_LIST: {
        uint64_t cnt = dec_u64(d);
        /* each entry takes at least 17 bytes: a count beyond that is malformed */
        if (d->bad || cnt < 2 || cnt > (d->len - d->at) / 17 ||
            !(n = node_alloc(NODE_LIST, (size_t)cnt)))
            break;
        n->basic = BM_UTIL_DTYPE_MIXED;
        n->flat = true;
        for (size_t i = 0; i < cnt; i++) {
            struct entry *e = &n->u.list.e[i];
            e->disp = (ptrdiff_t)dec_u64(d);
            e->child = dec_node(d, depth + 1);
            if (!e->child) {
                n->u.list.n = i;
                node_release(n);
                d->bad = true;
                return NULL;
            }
            e->poff = n->size;
            e->len = e->child->size;
            n->size += e->len;
            n->pieces += e->child->pieces;
            n->nelems += e->child->nelems;
            n->flat = n->flat && e->child->kind == NODE_LEAF;
            n->u.list.n = i + 1;
        }
        return n;
    }
    default:
        break;
    }
    d->bad = true;
    return NULL;
}

struct bm_util_dtype *bm_util_dtype_decode(const void *buf, size_t len)
{
    struct dec d = {.p = buf, .len = len};
    struct bm_util_dtype *t = type_alloc();
    if (!t)
        return NULL;
    t->size = (size_t)dec_u64(&d);
    t->lb = (ptrdiff_t)dec_u64(&d);
    t->ub = (ptrdiff_t)dec_u64(&d);
    t->pdisp = (ptrdiff_t)dec_u64(&d);
    t->basic = BM_UTIL_DTYPE_MIXED;
    if (!d.bad && t->size > 0)
        t->packed = dec_node(&d, 0);
    if (d.bad || d.at != len || (t->size > 0 && (!t->packed || t->packed->size != t->size))) {
        bm_util_dtype_release(t);
        return NULL;
    }
    t->pieces = t->packed ? t->packed->pieces : 0;
    t->one_block = t->packed && t->packed->kind == NODE_LEAF;
    return t;
}
