/* Internals shared by the collective files (coll_*.c): the kinds of
 * collective, the algorithms and their names, the parameters that force an
 * algorithm or move the switch points, the description of one call
 * (struct bm_mpi_coll_args) that the blocking, nonblocking and persistent
 * forms share, the per-communicator state (cached schedules), and the
 * schedule builders of every algorithm. */
#ifndef BM_MPI_COLL_H
#define BM_MPI_COLL_H

#include "mpi/coll_sched.h"
#include "mpi/mpi_internal.h"

#include <stdbool.h>
#include <stddef.h>

enum bm_mpi_coll_kind {
    BM_COLL_BARRIER = 1,
    BM_COLL_BCAST,
    BM_COLL_GATHER,
    BM_COLL_GATHERV,
    BM_COLL_SCATTER,
    BM_COLL_SCATTERV,
    BM_COLL_ALLGATHER,
    BM_COLL_ALLGATHERV,
    BM_COLL_ALLTOALL,
    BM_COLL_ALLTOALLV,
    BM_COLL_ALLTOALLW,
    BM_COLL_REDUCE,
    BM_COLL_ALLREDUCE,
    BM_COLL_REDUCE_SCATTER,
    BM_COLL_REDUCE_SCATTER_BLOCK,
    BM_COLL_SCAN,
    BM_COLL_EXSCAN,
    BM_COLL_NEIGHBOR_ALLGATHER,
    BM_COLL_NEIGHBOR_ALLGATHERV,
    BM_COLL_NEIGHBOR_ALLTOALL,
    BM_COLL_NEIGHBOR_ALLTOALLV,
    BM_COLL_NEIGHBOR_ALLTOALLW,
    BM_COLL_KIND_COUNT
};

/* Every algorithm, named "<collective>.<algorithm>" in the statistics
 * (bm_coll_alg_count) and in the BM_MPI_COLL_<COLLECTIVE>_ALG parameters. */
#define BM_COLL_ALGS(X)                                                                            \
    X(BARRIER_DISSEMINATION, "barrier.dissemination")                                              \
    X(BARRIER_SM, "barrier.sm")                                                                    \
    X(BCAST_SM, "bcast.sm")                                                                        \
    X(REDUCE_SM, "reduce.sm")                                                                      \
    X(ALLREDUCE_SM, "allreduce.sm")                                                                \
    X(GATHER_SM, "gather.sm")                                                                      \
    X(SCATTER_SM, "scatter.sm")                                                                    \
    X(ALLGATHER_SM, "allgather.sm")                                                                \
    X(ALLTOALL_SM, "alltoall.sm")                                                                  \
    X(SM_COPY, "sm.copy")             /* any of the .sm ones, its data by single copy */           \
    X(SM_COPY_SPLIT, "sm.copy_split") /* a 2-rank reduce.sm whose work both ranks share */         \
    X(SM_SLEEP, "sm.sleep") /* a wait on a segment flag slept (BM_PML_WAIT_MODE=block) */          \
    X(SM_SLEEP_WOKEN,                                                                              \
      "sm.sleep_woken")       /* ... and it ended (woken or work found) before the flag */         \
    X(SM_LARGE, "sm.large")   /* any of the .sm ones, its data in the large area */                \
    X(SM_SHARES, "sm.shares") /* an allreduce.sm in the large area, combined in shares */          \
    X(SM_PIPE, "sm.pipe")     /* a bcast.sm in the large area, copied in and out in chunks */      \
    X(SM_PUSH, "sm.push")     /* an allgather.sm by single copy, blocks written by their owner */  \
    X(BCAST_SPLIT, "bcast.split") /* a 2-rank single-copy bcast.sm: the root wrote half, the       \
                                     reader read half */                                           \
    X(GATHER_PUSH,                                                                                 \
      "gather.push") /* a gather.sm by single copy, a block written into the root's buffer */      \
    X(SM_AREAS, "sm.areas") /* a bcast/scatter/allgather/alltoall.sm in one of two areas */        \
    X(SM_NEAR, "sm.near")   /* a crowded bcast.sm reader on the root's CPU: copied the area */     \
    X(SM_LATE, "sm.late")   /* one elsewhere, after the root had published: copied the area */     \
    X(SM_FAST, "sm.fast")   /* a communicator whose small blocking calls took the fast path */     \
    X(SCHED_HANDOFF,                                                                               \
      "sched.handoff") /* a nonblocking schedule's first round left to the progress thread */      \
    X(BARRIER_HIER, "barrier.hier")                                                                \
    X(BCAST_HIER, "bcast.hier")                                                                    \
    X(REDUCE_HIER, "reduce.hier")                                                                  \
    X(ALLREDUCE_HIER, "allreduce.hier")                                                            \
    X(HIER_HALVES,                                                                                 \
      "hier.halves") /* a large allreduce.hier whose halves two ranks per host carry */            \
    X(GATHER_HIER, "gather.hier")                                                                  \
    X(ALLGATHER_HIER, "allgather.hier")                                                            \
    X(BCAST_BINOMIAL, "bcast.binomial")                                                            \
    X(BCAST_SCATTER_ALLGATHER, "bcast.scatter_allgather")                                          \
    X(BCAST_PIPELINE, "bcast.pipeline")                                                            \
    X(REDUCE_BINOMIAL, "reduce.binomial")                                                          \
    X(REDUCE_RABENSEIFNER, "reduce.rabenseifner")                                                  \
    X(REDUCE_PIPELINE, "reduce.pipeline")                                                          \
    X(ALLREDUCE_RECURSIVE_DOUBLING, "allreduce.recursive_doubling")                                \
    X(ALLREDUCE_RABENSEIFNER, "allreduce.rabenseifner")                                            \
    X(ALLREDUCE_RING, "allreduce.ring")                                                            \
    X(ALLREDUCE_DIRECT, "allreduce.direct")                                                        \
    X(GATHER_LINEAR, "gather.linear")                                                              \
    X(GATHER_BINOMIAL, "gather.binomial")                                                          \
    X(SCATTER_LINEAR, "scatter.linear")                                                            \
    X(SCATTER_BINOMIAL, "scatter.binomial")                                                        \
    X(ALLGATHER_RING, "allgather.ring")                                                            \
    X(ALLGATHER_RECURSIVE_DOUBLING, "allgather.recursive_doubling")                                \
    X(ALLGATHER_BRUCK, "allgather.bruck")                                                          \
    X(ALLTOALL_PAIRWISE, "alltoall.pairwise")                                                      \
    X(ALLTOALL_LINEAR, "alltoall.linear")                                                          \
    X(ALLTOALL_BRUCK, "alltoall.bruck")                                                            \
    X(REDUCE_SCATTER_HALVING, "reduce_scatter.halving")                                            \
    X(REDUCE_SCATTER_RING, "reduce_scatter.ring")                                                  \
    X(REDUCE_SCATTER_REDUCE_SCATTERV, "reduce_scatter.reduce_scatterv")                            \
    X(SCAN_RECURSIVE_DOUBLING, "scan.recursive_doubling")                                          \
    X(SCAN_LINEAR, "scan.linear")                                                                  \
    X(NEIGHBOR_LINEAR, "neighbor.linear")                                                          \
    X(INTER_LEADER, "inter.leader")                                                                \
    X(INTER_LINEAR, "inter.linear")

enum bm_mpi_coll_alg {
#define BM_COLL_ALG_ID(id, name) BM_ALG_##id,
    BM_COLL_ALGS(BM_COLL_ALG_ID)
#undef BM_COLL_ALG_ID
        BM_ALG_COUNT
};

/* Choices of the BM_MPI_COLL_*_ALG parameters, in their "a|b|c" order
 * (0 is always auto). */
enum { BM_SEL_AUTO = 0 };

/* The collective parameters (coll_select.c), read once. */
struct bm_mpi_coll_config {
    int barrier_alg;        /* auto|dissemination|sm */
    int bcast_alg;          /* auto|binomial|scatter_allgather|pipeline|sm */
    int reduce_alg;         /* auto|binomial|rabenseifner|pipeline|sm */
    int allreduce_alg;      /* auto|recursive_doubling|rabenseifner|ring|direct|sm */
    int gather_alg;         /* auto|linear|binomial|sm */
    int scatter_alg;        /* auto|linear|binomial|sm */
    int allgather_alg;      /* auto|ring|recursive_doubling|bruck|sm */
    int alltoall_alg;       /* auto|pairwise|linear|bruck|sm */
    int reduce_scatter_alg; /* auto|halving|ring|reduce_scatterv */
    int scan_alg;           /* auto|recursive_doubling|linear */
    size_t bcast_large;
    size_t reduce_large;
    size_t allreduce_large;
    size_t allreduce_ring_min;
    size_t gather_small;
    size_t allgather_small;
    size_t alltoall_small;
    size_t alltoall_pairwise_min;
    size_t segment;
    size_t scratch_keep;
    size_t sm_slot; /* bytes of data per rank in the shared-memory segment (0: no segment) */
    size_t sm_copy_min, sm_copy_max; /* data per slot the segment moves by single copy */
    size_t sm_copy_rooted_max;       /* the same for bcast, gather */
    size_t sm_reduce_split_min;      /* 2-rank single-copy reduce: both ranks combine */
    size_t sm_bcast_split_min;       /* 2-rank single-copy bcast: both ranks copy */
    size_t sm_large_max;             /* the large area of ranks sharing cores, all slots */
    size_t sm_large_alltoall;        /* alltoall blocks from this x ranks: not there */
    size_t sm_crowded_bcast_copy;    /* ranks sharing cores, <= 4 ranks: bcast copy from here */
    size_t sm_crowded_bcast_max;     /* ... up to here */
    bool hier;                       /* hierarchical algorithms over hosts */
    size_t hier_halves_min;          /* hierarchical allreduce: two ranks per host from here */
    int sm_test_put_fail;            /* testing: rank N - 1's single-copy puts fail (0: none) */
};
const struct bm_mpi_coll_config *bm_mpi_coll_cfg(void);

/* One collective call, as its arguments: the three forms (blocking,
 * nonblocking, persistent) fill one and hand it to the same code. Unused
 * fields are zero. For reductions, rtype is the datatype. */
struct bm_mpi_coll_args {
    int kind; /* enum bm_mpi_coll_kind */
    const void *sbuf;
    void *rbuf;
    int scount, rcount;
    MPI_Datatype stype, rtype;
    const int *scounts, *sdispls, *rcounts, *rdispls;
    const MPI_Datatype *stypes, *rtypes;   /* Alltoallw */
    const MPI_Aint *sdispls_b, *rdispls_b; /* Neighbor_alltoallw: displacements in bytes */
    MPI_Op op;
    int root;
    bool background; /* the nonblocking and persistent forms (coll_request.c) */
};

/* The type of the send side (reductions: the datatype, which both sides
 * share). */
static inline MPI_Datatype bm_mpi_coll_stype(const struct bm_mpi_coll_args *a)
{
    return a->stype ? a->stype : a->op ? a->rtype : NULL;
}

/* Per-communicator collective state, made at the first collective. */
#define BM_COLL_CACHE_WAYS 2
struct bm_coll_sm;
struct bm_mpi_coll_comm {
    /* the last schedules built per kind (cacheable ones), newest first */
    struct bm_mpi_sched *cache[BM_COLL_KIND_COUNT][BM_COLL_CACHE_WAYS];
    int sm_state;              /* shared-memory segment: 0 not tried yet, 1 on, 2 off */
    struct bm_coll_sm *sm;     /* coll_sm.c */
    int hier_state;            /* hierarchy over hosts: 0 not tried yet, 1 on, 2 off */
    int one_host;              /* all ranks on one host: 0 not known yet, 1 yes, 2 no */
    struct bm_coll_hier *hier; /* coll_hier.c */
    /* blocking calls' fast path (coll_select.c, fast_alg): 0 not known
     * yet, 1 on, 2 on and taken (counted in sm.fast); per kind the
     * segment's algorithm (-1: none) for data of at most fast_max bytes
     * per slot */
    int fast_state;
    short fast_alg[BM_COLL_KIND_COUNT];
    size_t fast_max;
};

/* coll_hier.c: hierarchical collectives of communicators over several
 * hosts. Collective: set the node and leaders communicators up at the
 * first call; true when the communicator has them. */
bool bm_coll_hier_ready(MPI_Comm comm, struct bm_mpi_coll_comm *cc, const char *fn);
/* Every host holds a contiguous range of ranks (reductions keep rank order). */
bool bm_coll_hier_keeps_order(const struct bm_mpi_coll_comm *cc);
/* Run a blocking barrier, bcast, reduce, allreduce, gather or allgather in
 * three phases. */
int bm_coll_hier_run(MPI_Comm comm, struct bm_mpi_coll_comm *cc, const struct bm_mpi_coll_args *a,
                     int alg, const char *fn);
void bm_coll_hier_release(struct bm_mpi_coll_comm *cc);

/* coll_sm.c: shared-memory collectives of single-host communicators. */
/* Collective: set the segment up at the first call (all ranks call it at
 * the same point); true when the communicator has one. */
bool bm_coll_sm_ready(MPI_Comm comm, struct bm_mpi_coll_comm *cc, const char *fn);
/* Bytes of one rank's data a segment slot holds (0 without a segment). */
size_t bm_coll_sm_capacity(const struct bm_mpi_coll_comm *cc);
/* True when the segment can also move data by single copy (every rank
 * reads every other's memory with a transport's get; agreed at set-up). */
bool bm_coll_sm_can_copy(const struct bm_mpi_coll_comm *cc);
/* Collective: make the segment's large area hold bytes of data per slot
 * (ranks that share cores: see coll_sm.c); true when it does. */
bool bm_coll_sm_large_ready(MPI_Comm comm, struct bm_mpi_coll_comm *cc, size_t bytes,
                            const char *fn);
/* How the segment moves a call's data: through the slots, by single copy,
 * through the large area, or (a broadcast where ranks share cores) both:
 * the root copies its data into the large area and offers its buffer, a
 * reader on the root's CPU copies from the area, one elsewhere reads the
 * root's buffer by single copy. */
enum bm_coll_sm_how { BM_COLL_SM_SLOTS, BM_COLL_SM_COPY, BM_COLL_SM_LARGE, BM_COLL_SM_NEAR };
/* The most ranks BM_COLL_SM_NEAR serves: the root's flag line holds a take
 * word per reader (coll_sm.c), and the selection (coll_select.c) must not
 * pick it for more ranks than that. */
#define BM_COLL_SM_NEAR_RANKS 4
/* Run a blocking barrier, bcast, reduce, allreduce (contiguous types),
 * gather, scatter, allgather or alltoall (uniform blocks, any types) whose
 * data fits the capacity, or with copy (bm_coll_sm_can_copy; not for a
 * barrier, an in-place allreduce or alltoall) whatever its size, or whose
 * data fits the large area (bm_coll_sm_large_ready), on the segment
 * (bm_mpi_coll_blocking's sm_alg decides). sbuf and rbuf as
 * bm_coll_side_base gives them. */
int bm_coll_sm_run(MPI_Comm comm, struct bm_mpi_coll_comm *cc, const struct bm_mpi_coll_args *a,
                   int alg, enum bm_coll_sm_how how, const char *fn);
void bm_coll_sm_free(struct bm_mpi_coll_comm *cc);
/* Whether a single-copy broadcast of bytes on p ranks splits its copy
 * between the ranks (BM_MPI_COLL_SM_BCAST_SPLIT_MIN, bcast.split): the
 * selector's reason to copy beyond SM_COPY_ROOTED_MAX, and coll_sm.c's. */
bool bm_coll_sm_bcast_splits(int p, size_t bytes);

/* The state of comm (made on first use); NULL when out of memory. */
struct bm_mpi_coll_comm *bm_mpi_coll_comm(MPI_Comm comm);

/* Peers of collective steps: ranks of comm's group, or of the remote group
 * of an inter-communicator (whose local phases run on comm->local_comm). */
static inline int bm_mpi_coll_peer_world(MPI_Comm comm, int peer)
{
    return bm_mpi_comm_peer_world(comm, peer);
}
static inline uint32_t bm_mpi_coll_cid(MPI_Comm comm)
{
    return comm->context_id + 1;
}
static inline int bm_mpi_coll_myrank(MPI_Comm comm)
{
    return comm->rank;
}

/* Statistics: one more run of algorithm alg (coll_select.c). */
void bm_mpi_coll_count_alg(int kind, int alg);

/* Choose the algorithm and build (or find cached) the schedule of a call.
 * MPI_SUCCESS with *s_out holding a reference, or the class after the
 * error was reported as fn. */
int bm_mpi_coll_schedule(MPI_Comm comm, const struct bm_mpi_coll_args *a,
                         struct bm_mpi_sched **s_out, const char *fn);

/* The three forms. The blocking one may change *a (the fast path moves its
 * buffers to where their data starts instead of copying it: every caller
 * passes a copy of its own that it does not use afterwards). */
int bm_mpi_coll_blocking(MPI_Comm comm, struct bm_mpi_coll_args *a, const char *fn);
int bm_mpi_coll_nonblocking(MPI_Comm comm, const struct bm_mpi_coll_args *a, MPI_Request *request,
                            const char *fn);
int bm_mpi_coll_persistent(MPI_Comm comm, const struct bm_mpi_coll_args *a, MPI_Info info,
                           MPI_Request *request, const char *fn);
/* Whether the run of an active nonblocking or persistent collective
 * request r is over, without advancing it, taking no lock and calling no
 * MPI function (bm_mpi_sched_exec_done): when true, the result in the
 * receive buffer may be read, also by a thread other than the one that
 * advanced it (a progress thread). Tests use it to watch a collective
 * progress outside MPI (tests/mpi/mt_progress.c). False for a request of
 * another kind. */
bool bm_mpi_coll_request_done(MPI_Request r);

/* ---- helpers for builders ------------------------------------------------ */

/* First element of block i when count elements are cut into n blocks whose
 * sizes differ by at most one. */
static inline size_t bm_coll_block_start(int i, size_t count, int n)
{
    size_t base = count / (size_t)n, extra = count % (size_t)n;
    return (size_t)i * base + ((size_t)i < extra ? (size_t)i : extra);
}

/* Largest power of two <= n (n >= 1). */
static inline int bm_coll_pof2(int n)
{
    int p = 1;
    while (p * 2 <= n)
        p *= 2;
    return p;
}

/* ---- builders (each adds the steps of one algorithm to s) ------------------ */

/* coll_bcast.c */
void bm_coll_build_barrier_dissemination(struct bm_mpi_sched *s, MPI_Comm comm);
void bm_coll_build_bcast_binomial(struct bm_mpi_sched *s, MPI_Comm comm, int buf, ptrdiff_t off,
                                  size_t bytes, int root);
void bm_coll_build_bcast_scatter_allgather(struct bm_mpi_sched *s, MPI_Comm comm, int buf,
                                           ptrdiff_t off, size_t bytes, int root);
void bm_coll_build_bcast_pipeline(struct bm_mpi_sched *s, MPI_Comm comm, int buf, ptrdiff_t off,
                                  size_t bytes, int root, size_t segment);

/* coll_reduce.c: reductions of count elements of esize bytes from the
 * input (sbuf, soff) into the output (dbuf, doff); input == output is
 * MPI_IN_PLACE. Builders use scratch from byte tmp of BM_SCHED_TMP on, so
 * that a composite algorithm can keep its own data below. commutative
 * tells whether the operation may be applied out of rank order. */
struct bm_coll_red {
    int count;
    size_t esize;
    bool commutative;
    int sbuf, dbuf;
    ptrdiff_t soff, doff;
    size_t tmp;
};
void bm_coll_build_reduce(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_coll_red *r,
                          int root, int alg, size_t segment);
void bm_coll_build_allreduce(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_coll_red *r,
                             int alg);
/* Reduce-scatter: the input holds sum(counts) elements; rank i gets block i
 * of counts[i] elements at the output (in place: the output buffer is also
 * the input). */
void bm_coll_build_reduce_scatter(struct bm_mpi_sched *s, MPI_Comm comm,
                                  const struct bm_coll_red *r, const int *counts, int alg);
void bm_coll_build_scan(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_coll_red *r,
                        bool exclusive, int alg);

/* coll_gather.c: block layouts. A side is a buffer of blocks, block i being
 * counts[i] elements of esize bytes at displs[i] elements (v variants), or
 * count elements at i * count (uniform: counts == NULL); Alltoallw gives
 * byte displacements and a size per block (bytes != NULL). In place (sl
 * and rl on the same buffer), alltoall sends from a copy. */
struct bm_coll_layout {
    int buf;               /* a BM_SCHED_* buffer */
    ptrdiff_t base;        /* byte offset of the layout in buf */
    size_t esize;          /* bytes per element (extent) */
    int count;             /* uniform blocks */
    const int *counts;     /* v variants */
    const int *displs;     /* v variants: in elements */
    const size_t *bytes;   /* Alltoallw: bytes of each block */
    const ptrdiff_t *offs; /* Alltoallw: byte offset of each block */
};
static inline ptrdiff_t bm_coll_block_off(const struct bm_coll_layout *l, int i)
{
    if (l->offs)
        return l->base + l->offs[i];
    if (l->counts)
        return l->base + (ptrdiff_t)l->displs[i] * (ptrdiff_t)l->esize;
    return l->base + (ptrdiff_t)i * (ptrdiff_t)l->count * (ptrdiff_t)l->esize;
}
static inline size_t bm_coll_block_bytes(const struct bm_coll_layout *l, int i)
{
    if (l->bytes)
        return l->bytes[i];
    return (size_t)(l->counts ? l->counts[i] : l->count) * l->esize;
}
/* ---- sides: the user's blocks, in place or packed (coll_side.c) ----------------- */

/* One side of a call (what a rank sends, or receives) as n blocks of user
 * data: block i is counts[i] (uniform: count) elements of types[i] (one
 * type: dt) at displs[i] extents (v variants), bdispls[i] or adispls[i]
 * bytes (Alltoallw, Neighbor_alltoallw), or i * count extents (uniform).
 * bm_coll_side_layout describes it for the builders: where the types are
 * contiguous the blocks stay where they are (user buffer ubuf); otherwise
 * the side is packed, block after block, into the packed buffer, the
 * schedule packing the blocks it sends first and unpacking those it
 * received last. */
struct bm_coll_side {
    int ubuf; /* BM_SCHED_SBUF or BM_SCHED_RBUF */
    int n;
    int count;
    const int *counts;
    const int *displs;
    const int *bdispls;
    const MPI_Aint *adispls;
    MPI_Datatype dt;
    const MPI_Datatype *types;
    /* filled by bm_coll_side_layout */
    bool packed;
    struct bm_coll_layout l;
    size_t *bytes; /* owned arrays behind l (NULL when uniform) */
    ptrdiff_t *offs;
};
/* Fill sd->packed and sd->l (packed into pbuf, BM_SCHED_PSBUF or _PRBUF,
 * whose size s records); false when out of memory. */
bool bm_coll_side_layout(struct bm_mpi_sched *s, struct bm_coll_side *sd, int pbuf);
/* Pack block i (-1: every block) of a packed side; nothing when not packed. */
void bm_coll_side_pack(struct bm_mpi_sched *s, const struct bm_coll_side *sd, int i);
void bm_coll_side_unpack(struct bm_mpi_sched *s, const struct bm_coll_side *sd, int i);
void bm_coll_side_free(struct bm_coll_side *sd);
/* Where a side's data starts for the engine: for a contiguous type, buf
 * plus the type's offset (lb...); packed sides and MPI_IN_PLACE as given. */
static inline const void *bm_coll_side_base(const void *buf, MPI_Datatype dt)
{
    if (buf == MPI_IN_PLACE || buf == NULL || dt == NULL || !dt->contiguous)
        return buf;
    return (const char *)buf + bm_mpi_type_offset(dt);
}

/* sbuf (rbuf): the buffer of this rank's one send (receive) block, at 0. */
void bm_coll_build_gather(struct bm_mpi_sched *s, MPI_Comm comm, int sbuf, size_t sbytes,
                          bool in_place, const struct bm_coll_layout *rl, int root, int alg);
void bm_coll_build_scatter(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_coll_layout *sl,
                           int rbuf, size_t rbytes, bool in_place, int root, int alg);
void bm_coll_build_allgather(struct bm_mpi_sched *s, MPI_Comm comm, int sbuf, bool in_place,
                             const struct bm_coll_layout *rl, int alg);
void bm_coll_build_alltoall(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_coll_layout *sl,
                            const struct bm_coll_layout *rl, int alg);
/* Neighbourhood exchange: receive block i from in[i], send block j to out[j]
 * (MPI_PROC_NULL: nothing); subtags keep apart edges between the same two
 * processes (NULL: all 0, order decides). */
void bm_coll_build_neighbor(struct bm_mpi_sched *s, int nin, const int *in, const int *in_subtag,
                            const struct bm_coll_layout *rl, int nout, const int *out,
                            const int *out_subtag, const struct bm_coll_layout *sl);
/* coll_inter.c: the schedule of a call on an inter-communicator; false
 * when out of memory. */
bool bm_coll_build_inter(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_mpi_coll_args *a);
/* coll_neighbor.c: the schedule of a neighbourhood collective call; false
 * when out of memory. */
bool bm_coll_build_neighbor_call(struct bm_mpi_sched *s, MPI_Comm comm,
                                 const struct bm_mpi_coll_args *a);

#endif
