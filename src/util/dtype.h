/* The datatype engine: how the bytes of a (count, type) message lie in
 * memory, and the convertor that moves any byte range of such a message
 * between that layout and a packed stream. It is the engine under MPI
 * derived datatypes (src/mpi/datatype.c builds one per MPI type), the PML
 * (which streams non-contiguous messages fragment by fragment through it),
 * collectives and one-sided operations; it knows nothing of MPI handles.
 *
 * A type is built from basic types by constructors mirroring MPI's
 * (contiguous, hvector, hindexed, struct, resized). Each type keeps two
 * descriptions, each a small tree of nodes ("a block program"):
 *   - the packed description, used to pack and unpack: leaves are plain
 *     byte runs, adjacent runs are merged whatever their basic types, a
 *     run of equal blocks at a constant stride becomes one vector node, and
 *     a vector of vectors that tile each other becomes one vector;
 *   - the typed description, whose leaves are arrays of one basic type at
 *     that type's natural stride: reductions, external32 conversion and
 *     MPI_Get_elements walk it.
 * Nodes are immutable and shared between the types built from them
 * (reference counted), so building a type costs what its own constructor
 * adds, not the size of its old types.
 *
 * The packed stream of count elements is element 0's bytes in type-map
 * order, then element 1's... (count * size bytes). Pack, unpack and the
 * piece iterator take any byte range [offset, offset + len) of that stream
 * and find their place in O(depth * log(blocks)), so a transfer may stop
 * anywhere and resume anywhere, in any order: the convertor object only
 * remembers the message (buffer, count, type).
 *
 * Same representation on every process: no heterogeneity (byte order and
 * sizes are those of this machine; external32 is done above this engine
 * with bm_util_dtype_walk).
 *
 * Threads: types and their nodes are immutable once built, and their
 * reference counts are atomic, so any threads may build, use and release
 * types at once (MPI_THREAD_MULTIPLE); a convertor belongs to one thread. */
#ifndef BM_UTIL_DTYPE_H
#define BM_UTIL_DTYPE_H

#include "bm_status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bm_util_dtype_node; /* dtype.c */

/* basic id of a type made of several basic types (or of none) */
#define BM_UTIL_DTYPE_MIXED (-1)
#define BM_UTIL_DTYPE_EMPTY (-2)

/* Explicit bounds (MPI_LB/MPI_UB markers, or set by resized). */
#define BM_UTIL_DTYPE_LB_MARKED 0x1u
#define BM_UTIL_DTYPE_UB_MARKED 0x2u

struct bm_util_dtype {
    int refcount;
    size_t size;                /* packed bytes of one element */
    ptrdiff_t lb, ub;           /* bounds: extent = ub - lb */
    ptrdiff_t true_lb, true_ub; /* span of the data itself (both 0 when there is none) */
    size_t align;               /* strictest alignment of its basic types (struct padding) */
    unsigned marks;             /* BM_UTIL_DTYPE_LB_MARKED | UB_MARKED */
    int basic;                  /* the one basic id it is made of, MIXED or EMPTY */
    uint64_t nelems;            /* basic elements in one element */
    /* The packed description: element data at base + pdisp, laid out by
     * packed; likewise the typed one. NULL when size is 0. */
    struct bm_util_dtype_node *packed, *typed;
    ptrdiff_t pdisp, tdisp;
    /* Contiguous pieces of one element in the packed description (blocks
     * merged across elements are not counted as one). */
    uint64_t pieces;
    /* One element is a single run of size bytes at base + pdisp. */
    bool one_block;
    bool marker; /* MPI_LB or MPI_UB itself */
};

static inline ptrdiff_t bm_util_dtype_extent(const struct bm_util_dtype *t)
{
    return t->ub - t->lb;
}

/* count elements are one run of count * size bytes at base + pdisp: one
 * block, and consecutive elements abut (or there is at most one). */
static inline bool bm_util_dtype_contig(const struct bm_util_dtype *t, size_t count)
{
    return t->size == 0 ||
           (t->one_block && (count <= 1 || (size_t)bm_util_dtype_extent(t) == t->size));
}

/* ---- building types (each returns a type with one reference, or NULL when
 * memory ran out) ----------------------------------------------------------- */

/* A part of a basic type: len bytes at offset off of the element. */
#define BM_UTIL_DTYPE_MAX_PARTS 2
struct bm_util_dtype_part {
    ptrdiff_t off;
    size_t len;
};

/* A basic (predefined) type: id >= 0 names it in the typed description
 * (the MPI layer uses its type ids), size packed bytes in nparts parts
 * (at most BM_UTIL_DTYPE_MAX_PARTS, in order: one part [0, size) for
 * scalars, the value and the index for a value-index pair), extent its C
 * stride, align its C alignment. */
struct bm_util_dtype *bm_util_dtype_basic(int id, size_t size, ptrdiff_t extent, size_t align,
                                          int nparts, const struct bm_util_dtype_part *parts);
/* The MPI-1 markers: a type of no data whose only effect in a struct is an
 * explicit lower (or upper) bound at its displacement. */
struct bm_util_dtype *bm_util_dtype_marker(unsigned mark);
/* count blocks of blocklen elements of old, block i at i * stride bytes
 * (MPI_Type_create_hvector; contiguous is (1, count, any); vector passes
 * stride * extent). */
struct bm_util_dtype *bm_util_dtype_hvector(size_t count, size_t blocklen, ptrdiff_t stride,
                                            const struct bm_util_dtype *old);
/* n blocks, block i of blocklens[i] elements of olds[i] at disps[i] bytes
 * (MPI_Type_create_struct; hindexed passes the same old n times). pad: an
 * upper bound without a marker is rounded up to the alignment (struct). */
struct bm_util_dtype *bm_util_dtype_struct(size_t n, const size_t *blocklens,
                                           const ptrdiff_t *disps,
                                           const struct bm_util_dtype *const *olds, bool pad);
/* old with bounds [lb, lb + extent), both marked (MPI_Type_create_resized). */
struct bm_util_dtype *bm_util_dtype_resized(const struct bm_util_dtype *old, ptrdiff_t lb,
                                            ptrdiff_t extent);

void bm_util_dtype_retain(struct bm_util_dtype *t);
/* Drop a reference; the last one frees the type (nodes still used by other
 * types stay). NULL is ignored. */
void bm_util_dtype_release(struct bm_util_dtype *t);

/* ---- moving bytes ---------------------------------------------------------- */

/* Copy bytes [offset, offset + len) of the packed stream of (count, t) at
 * base into dst (pack) or from src into the layout (unpack). The range must
 * lie within count * size. */
void bm_util_dtype_pack(const struct bm_util_dtype *t, const void *base, size_t count,
                        size_t offset, void *dst, size_t len);
void bm_util_dtype_unpack(const struct bm_util_dtype *t, void *base, size_t count, size_t offset,
                          const void *src, size_t len);

/* One contiguous piece of a message: len bytes at addr. */
struct bm_util_dtype_piece {
    char *addr;
    size_t len;
};

/* Fill up to max pieces with the memory of bytes [offset, offset + len) of
 * (count, t) at base, in stream order, merging pieces that abut. Returns
 * the number of pieces and sets *done_out to the stream bytes they cover
 * (< len when max pieces ran out first). */
size_t bm_util_dtype_pieces(const struct bm_util_dtype *t, const void *base, size_t count,
                            size_t offset, size_t len, struct bm_util_dtype_piece *out, size_t max,
                            size_t *done_out);

/* Walk the typed description of (count, t) at base, in stream order:
 * fn(basic id, address of the first element, number of elements, their
 * stride, arg) per run of one basic type. Stops early and returns fn's
 * value when it is non-zero; 0 after the last run. */
typedef int (*bm_util_dtype_walk_fn)(int basic, char *addr, size_t n, ptrdiff_t stride, void *arg);
int bm_util_dtype_walk(const struct bm_util_dtype *t, const void *base, size_t count,
                       bm_util_dtype_walk_fn fn, void *arg);

/* Basic elements (each part of a basic type counts as one: a value-index
 * pair holds two) in the first bytes of the packed stream of t repeated,
 * or -1 when bytes ends inside one (MPI_Get_elements). */
int64_t bm_util_dtype_count_elems(const struct bm_util_dtype *t, size_t bytes);
/* The inverse: packed bytes of the first elems basic elements of the stream
 * of t repeated (MPI_Status_set_elements). */
size_t bm_util_dtype_elems_bytes(const struct bm_util_dtype *t, uint64_t elems);

/* ---- describing a layout to another process --------------------------------- */

/* Write t's packed layout (bounds and block program, position-independent)
 * into buf; returns its length, or 0 when it needs more than cap bytes.
 * With a base address and a count, a peer can then list this process's
 * pieces of (count, t) (single copy of non-contiguous data). */
size_t bm_util_dtype_encode(const struct bm_util_dtype *t, void *buf, size_t cap);
/* The type an encoding describes: packing, unpacking and pieces work on it,
 * the typed walk and element counts do not (it has no typed description).
 * NULL when buf is malformed or memory ran out. */
struct bm_util_dtype *bm_util_dtype_decode(const void *buf, size_t len);

/* ---- the convertor: one message, packed or unpacked piece by piece --------- */

struct bm_util_dtype_conv {
    const struct bm_util_dtype *type;
    char *base;
    size_t count;
    size_t total; /* count * type->size */
    bool contig;  /* one run at base + pdisp: copies need no walk */
};

static inline void bm_util_dtype_conv_init(struct bm_util_dtype_conv *c,
                                           const struct bm_util_dtype *t, const void *base,
                                           size_t count)
{
    c->type = t;
    c->base = (char *)(uintptr_t)base;
    c->count = count;
    c->total = count * t->size;
    c->contig = bm_util_dtype_contig(t, count);
}

/* Pack up to len bytes from stream offset offset into dst; returns the
 * bytes packed (len cut at the end of the message). */
size_t bm_util_dtype_conv_pack(const struct bm_util_dtype_conv *c, size_t offset, void *dst,
                               size_t len);
/* Pack as bm_util_dtype_conv_pack, into memory that another core reads
 * next (a transport's buffer in shared memory, whose lines sit in the
 * receiver's cache). For the types of bm_util_dtype_conv_far_bounce, the
 * bytes are packed in chunks into a small buffer on the stack, each then
 * copied out in one memcpy: packing block by block straight into such
 * memory stalls on every line it takes over from the other core (measured
 * on the 2-core test VM, 32 KiB of a vector of 512-byte blocks handed to
 * the other core and unpacked there: 8.4 us a round direct, 6.0 through
 * the bounce, 5.7 for a plain memcpy; every other double: 10.3 and 9.6).
 * Other types are packed straight into dst: their packing loop (a struct's
 * or an indexed type's runs one by one) is slow enough to hide the stalls,
 * and the extra copy would cost more (a struct of 4- and 12-byte runs:
 * 14.6 us direct, 18.2 bounced; indexed runs of 8-64 bytes 8.0 and 9.9). */
size_t bm_util_dtype_conv_pack_far(const struct bm_util_dtype_conv *c, size_t offset, void *dst,
                                   size_t len);
#define BM_UTIL_DTYPE_FAR_RUN_MIN 64
/* Whether bm_util_dtype_conv_pack_far packs c's message through the bounce
 * buffer: a non-contiguous message whose runs average at least
 * BM_UTIL_DTYPE_FAR_RUN_MIN bytes, or whose type is a plain vector of
 * blocks of 8 bytes or more (packed by word or block loops). */
bool bm_util_dtype_conv_far_bounce(const struct bm_util_dtype_conv *c);
/* Unpack up to len bytes of src to stream offset offset; returns the bytes
 * taken (cut at the end of the message: the rest of a longer message is
 * truncated). */
size_t bm_util_dtype_conv_unpack(const struct bm_util_dtype_conv *c, size_t offset, const void *src,
                                 size_t len);
/* The same, with streaming stores (util/mem.h) for the blocks of 256 bytes
 * or more, for a destination too large to stay in cache (the receive side
 * of a large non-contiguous message): it saves the read of each line a
 * normal store first fetches. Smaller blocks are copied as by
 * bm_util_dtype_conv_unpack. *streamed_out: the bytes written with
 * streaming stores (0 when no block was large enough); they are fenced
 * before the call returns. */
size_t bm_util_dtype_conv_unpack_stream(const struct bm_util_dtype_conv *c, size_t offset,
                                        const void *src, size_t len, size_t *streamed_out);

#endif
