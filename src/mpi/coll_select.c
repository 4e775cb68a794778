/* Which algorithm serves a collective call, and the schedule for it: the
 * collective parameters (BM_MPI_COLL_*), the choice table (auto), forcing an
 * algorithm by parameter, the per-communicator cache of schedules, the
 * blocking driver, and per-algorithm run counters (bm_coll_alg_count) that
 * tests use to prove that the algorithm they force really ran.
 *
 * The choice table (p ranks; bytes per rank of the whole message; every
 * threshold is a parameter). A forced algorithm that cannot serve a call
 * (Rabenseifner's for a non-commutative operation, recursive doubling for a
 * non-power-of-two allgather, ...) gives way to the automatic choice.
 * Blocking calls on a single-host communicator first try the shared-memory
 * segment (barrier, bcast, reduce, allreduce, gather, scatter, allgather,
 * alltoall whose data per slot fits BM_MPI_COLL_SM_SLOT, or moves by single
 * copy from BM_MPI_COLL_SM_COPY_MIN up, or, where ranks share cores, fits
 * the large area of BM_MPI_COLL_SM_LARGE_MAX, alltoalls there only with
 * blocks below BM_MPI_COLL_SM_LARGE_ALLTOALL x p: sm_alg), and on a
 * communicator over several hosts the hierarchy (barrier, bcast, reduce,
 * allreduce, gather, allgather: hier_alg); the table below is for the rest.
 *   barrier         dissemination
 *   bcast           binomial below BCAST_LARGE or p <= 2; scatter_allgather above
 *                   (binomial on an oversubscribed host: crowded)
 *   reduce          commutative and >= REDUCE_LARGE: pipeline for p <= 2,
 *                   rabenseifner (count >= p) otherwise; else binomial (and
 *                   on an oversubscribed host)
 *   allreduce       commutative, count >= p, >= ALLREDUCE_LARGE: direct for the
 *                   nonblocking and persistent forms on an oversubscribed host
 *                   (crowded), else rabenseifner, or ring when p is not a power of
 *                   two and >= ALLREDUCE_RING_MIN; else recursive_doubling
 *   gather, scatter binomial when p >= 8 and p * block <= GATHER_SMALL; else linear
 *   allgather       p * block <= ALLGATHER_SMALL: recursive_doubling (power of
 *                   two) or bruck; else ring (v variants: ring)
 *   alltoall        block <= ALLTOALL_SMALL and p >= 8: bruck; block >=
 *                   ALLTOALL_PAIRWISE_MIN and not crowded: pairwise; else
 *                   linear (v, w: linear below ALLTOALL_PAIRWISE_MIN on
 *                   average or crowded, else pairwise)
 *   reduce_scatter  commutative: ring when p is not a power of two and the
 *                   vector >= ALLREDUCE_RING_MIN, else halving; otherwise
 *                   reduce_scatterv
 *   scan, exscan    recursive_doubling */
#define BM_LOG_SUBSYS "coll"
#include "util/log.h"

#include "bitmover.h"
#include "mpi/coll.h"
#include "pml/pml.h"
#include "runtime/rte.h"
#include "util/params.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static const struct bm_param coll_params[] = {
    {"BM_MPI_COLL_BARRIER_ALG", BM_PARAM_ENUM, "auto", 0, 0, "auto|dissemination|sm",
     "Algorithm of MPI_Barrier (auto: see src/mpi/README.md).",
     offsetof(struct bm_mpi_coll_config, barrier_alg), 0},
    {"BM_MPI_COLL_BCAST_ALG", BM_PARAM_ENUM, "auto", 0, 0,
     "auto|binomial|scatter_allgather|pipeline|sm",
     "Algorithm of MPI_Bcast and its nonblocking and persistent forms.",
     offsetof(struct bm_mpi_coll_config, bcast_alg), 0},
    {"BM_MPI_COLL_REDUCE_ALG", BM_PARAM_ENUM, "auto", 0, 0,
     "auto|binomial|rabenseifner|pipeline|sm",
     "Algorithm of MPI_Reduce (rabenseifner and pipeline need a commutative operation; "
     "otherwise binomial runs).",
     offsetof(struct bm_mpi_coll_config, reduce_alg), 0},
    {"BM_MPI_COLL_ALLREDUCE_ALG", BM_PARAM_ENUM, "auto", 0, 0,
     "auto|recursive_doubling|rabenseifner|ring|direct|sm",
     "Algorithm of MPI_Allreduce (rabenseifner, ring and direct need a commutative "
     "operation and at least one element per rank; otherwise recursive_doubling runs).",
     offsetof(struct bm_mpi_coll_config, allreduce_alg), 0},
    {"BM_MPI_COLL_GATHER_ALG", BM_PARAM_ENUM, "auto", 0, 0, "auto|linear|binomial|sm",
     "Algorithm of MPI_Gather (MPI_Gatherv is always linear).",
     offsetof(struct bm_mpi_coll_config, gather_alg), 0},
    {"BM_MPI_COLL_SCATTER_ALG", BM_PARAM_ENUM, "auto", 0, 0, "auto|linear|binomial|sm",
     "Algorithm of MPI_Scatter (MPI_Scatterv is always linear).",
     offsetof(struct bm_mpi_coll_config, scatter_alg), 0},
    {"BM_MPI_COLL_ALLGATHER_ALG", BM_PARAM_ENUM, "auto", 0, 0,
     "auto|ring|recursive_doubling|bruck|sm",
     "Algorithm of MPI_Allgather (recursive_doubling needs a power-of-two number of ranks; "
     "MPI_Allgatherv is always a ring).",
     offsetof(struct bm_mpi_coll_config, allgather_alg), 0},
    {"BM_MPI_COLL_ALLTOALL_ALG", BM_PARAM_ENUM, "auto", 0, 0, "auto|pairwise|linear|bruck|sm",
     "Algorithm of MPI_Alltoall, MPI_Alltoallv and MPI_Alltoallw (bruck, sm: MPI_Alltoall "
     "only).",
     offsetof(struct bm_mpi_coll_config, alltoall_alg), 0},
    {"BM_MPI_COLL_REDUCE_SCATTER_ALG", BM_PARAM_ENUM, "auto", 0, 0,
     "auto|halving|ring|reduce_scatterv",
     "Algorithm of MPI_Reduce_scatter(_block) (halving and ring need a commutative "
     "operation).",
     offsetof(struct bm_mpi_coll_config, reduce_scatter_alg), 0},
    {"BM_MPI_COLL_SCAN_ALG", BM_PARAM_ENUM, "auto", 0, 0, "auto|recursive_doubling|linear",
     "Algorithm of MPI_Scan and MPI_Exscan.", offsetof(struct bm_mpi_coll_config, scan_alg), 0},
    {"BM_MPI_COLL_BCAST_LARGE", BM_PARAM_SIZE, "128k", 0, 1LL << 40, NULL,
     "Broadcasts of at least this many bytes on more than two ranks use scatter + allgather.",
     offsetof(struct bm_mpi_coll_config, bcast_large), 0},
    {"BM_MPI_COLL_REDUCE_LARGE", BM_PARAM_SIZE, "32k", 0, 1LL << 40, NULL,
     "Commutative reductions to a root of at least this many bytes use the pipeline (two "
     "ranks) or Rabenseifner's algorithm.",
     offsetof(struct bm_mpi_coll_config, reduce_large), 0},
    {"BM_MPI_COLL_ALLREDUCE_LARGE", BM_PARAM_SIZE, "32k", 0, 1LL << 40, NULL,
     "Commutative allreduces of at least this many bytes use Rabenseifner's algorithm or the "
     "ring instead of recursive doubling.",
     offsetof(struct bm_mpi_coll_config, allreduce_large), 0},
    {"BM_MPI_COLL_ALLREDUCE_RING_MIN", BM_PARAM_SIZE, "1m", 0, 1LL << 40, NULL,
     "Large commutative allreduces and reduce-scatters on a number of ranks that is not a "
     "power of two use the ring from this many bytes.",
     offsetof(struct bm_mpi_coll_config, allreduce_ring_min), 0},
    {"BM_MPI_COLL_GATHER_SMALL", BM_PARAM_SIZE, "4k", 0, 1LL << 40, NULL,
     "Gathers and scatters on 8 or more ranks whose blocks add up to at most this many "
     "bytes use a binomial tree.",
     offsetof(struct bm_mpi_coll_config, gather_small), 0},
    {"BM_MPI_COLL_ALLGATHER_SMALL", BM_PARAM_SIZE, "16k", 0, 1LL << 40, NULL,
     "Allgathers whose blocks add up to at most this many bytes use recursive doubling or "
     "Bruck's algorithm instead of the ring.",
     offsetof(struct bm_mpi_coll_config, allgather_small), 0},
    {"BM_MPI_COLL_ALLTOALL_SMALL", BM_PARAM_SIZE, "256", 0, 1LL << 40, NULL,
     "Alltoalls on 8 or more ranks with blocks of at most this many bytes use Bruck's "
     "algorithm.",
     offsetof(struct bm_mpi_coll_config, alltoall_small), 0},
    {"BM_MPI_COLL_ALLTOALL_PAIRWISE_MIN", BM_PARAM_SIZE, "32k", 0, 1LL << 40, NULL,
     "Alltoalls with blocks of at least this many bytes exchange pairwise, one peer per "
     "step, instead of posting every transfer at once.",
     offsetof(struct bm_mpi_coll_config, alltoall_pairwise_min), 0},
    {"BM_MPI_COLL_SEGMENT", BM_PARAM_SIZE, "128k", 1024, 1LL << 40, NULL,
     "Segment size of the pipelined algorithms (bcast.pipeline, reduce.pipeline).",
     offsetof(struct bm_mpi_coll_config, segment), 0},
    {"BM_MPI_COLL_SCRATCH_KEEP", BM_PARAM_SIZE, "32m", 0, 1LL << 40, NULL,
     "Scratch memory of finished collectives kept for the next ones (bytes), so that "
     "repeated large collectives do not fault in fresh pages each call.",
     offsetof(struct bm_mpi_coll_config, scratch_keep), 0},
    {"BM_MPI_COLL_HIER", BM_PARAM_BOOL, "1", 0, 0, NULL,
     "Blocking barriers, broadcasts and reductions on a communicator over several hosts run "
     "inside each host, among one leader per host, and inside each host again (each byte "
     "crosses the network once per host). 0: the flat algorithms.",
     offsetof(struct bm_mpi_coll_config, hier), 0},
    {"BM_MPI_COLL_HIER_HALVES_MIN", BM_PARAM_SIZE, "512k", 0, 1LL << 40, NULL,
     "Hierarchical allreduces (commutative) of at least this many bytes, on communicators "
     "whose hosts all hold two ranks or more, split the vector in halves: the first two "
     "ranks of each host each reduce one half in their host, allreduce it with their "
     "counterparts on the other hosts and broadcast it in their host, so two ranks per "
     "host carry the traffic between hosts instead of one. 0: never.",
     offsetof(struct bm_mpi_coll_config, hier_halves_min), 0},
    {"BM_MPI_COLL_SM_SLOT", BM_PARAM_SIZE, "32k", 0, 1 << 24, NULL,
     "Blocking barriers, and broadcasts, reductions, gathers, scatters, allgathers and "
     "alltoalls whose data per slot is at most this many bytes, on a communicator whose "
     "ranks share one host go through a shared-memory segment (flags and a slot of this size "
     "per rank) instead of messages. 0: no segment.",
     offsetof(struct bm_mpi_coll_config, sm_slot), 0},
    {"BM_MPI_COLL_SM_COPY_MIN", BM_PARAM_SIZE, "8k", 0, 1LL << 40, NULL,
     "Shared-memory collectives (except barriers, in-place allreduces and alltoalls) whose "
     "data per slot is at least this many bytes leave it in the writer's buffer, and the "
     "readers read it by single copy (the transport's get: process_vm_readv), when every "
     "rank can (where ranks share cores only scatters and small-communicator broadcasts: "
     "BM_MPI_COLL_SM_CROWDED_BCAST_COPY, unless the algorithm is forced to sm; where every rank "
     "has a core of its own, only data larger than BM_MPI_COLL_SM_SLOT, unless forced). 0: "
     "never.",
     offsetof(struct bm_mpi_coll_config, sm_copy_min), 0},
    {"BM_MPI_COLL_SM_COPY_MAX", BM_PARAM_SIZE, "16m", 0, 1LL << 40, NULL,
     "Largest data per slot that shared-memory collectives move by single copy; larger "
     "collectives use the point-to-point algorithms.",
     offsetof(struct bm_mpi_coll_config, sm_copy_max), 0},
    {"BM_MPI_COLL_SM_COPY_ROOTED_MAX", BM_PARAM_SIZE, "64k", 0, 1LL << 40, NULL,
     "Largest data per slot that shared-memory broadcasts on more than 2 ranks move by single "
     "copy: above it the point-to-point path, where the sender's put and the receiver's get "
     "share each transfer, is faster (measured on 2 ranks, 128 KiB-1 MiB, before the split "
     "copy; on 2 ranks broadcasts split from BM_MPI_COLL_SM_BCAST_SPLIT_MIN have no such "
     "limit, nor have gathers, whose other ranks write their blocks into the root's buffer, "
     "and scatters).",
     offsetof(struct bm_mpi_coll_config, sm_copy_rooted_max), 0},
    {"BM_MPI_COLL_SM_REDUCE_SPLIT_MIN", BM_PARAM_SIZE, "512k", 0, 1LL << 40, NULL,
     "Commutative reductions to a root on 2 ranks moved by single copy of at least this "
     "many bytes split the work: the other rank combines the second half and writes it "
     "into the root's output (2 ranks, split vs not, with the other rank leaving once the "
     "root has read its input: 128 KiB 7.4 vs 6.6 us, 256 KiB 13.1 vs 12.2, 512 KiB 26.7 vs "
     "32.1, 1 MiB 65 vs 150).",
     offsetof(struct bm_mpi_coll_config, sm_reduce_split_min), 0},
    {"BM_MPI_COLL_SM_BCAST_SPLIT_MIN", BM_PARAM_SIZE, "32k", 0, 1LL << 40, NULL,
     "Broadcasts on 2 ranks moved by single copy of at least this many bytes split the "
     "copy: the reader reads the first half while the root writes the second into the "
     "reader's buffer (2 ranks, medians of 7 interleaved rounds, whole -> split: 16 KiB "
     "1.20 -> 1.67 us, 32 KiB 2.12 -> 1.84, 64 KiB 3.11 -> 2.63). 0: never.",
     offsetof(struct bm_mpi_coll_config, sm_bcast_split_min), 0},
    {"BM_MPI_COLL_SM_CROWDED_BCAST_COPY", BM_PARAM_SIZE, "32k", 0, 1LL << 40, NULL,
     "On an oversubscribed host, broadcasts of this many bytes or more (up to "
     "BM_MPI_COLL_SM_CROWDED_BCAST_MAX) on at most 4 ranks go both ways: the root copies "
     "its data into the segment's large area and offers its buffer; a reader on the root's "
     "CPU copies from the area, one on another CPU reads the root's buffer by single copy. "
     "0: never (the large area's pipeline).",
     offsetof(struct bm_mpi_coll_config, sm_crowded_bcast_copy), 0},
    {"BM_MPI_COLL_SM_CROWDED_BCAST_MAX", BM_PARAM_SIZE, "1m", 0, 1LL << 40, NULL,
     "Largest broadcast that BM_MPI_COLL_SM_CROWDED_BCAST_COPY applies to (larger ones: the "
     "large area's pipeline; 4 ranks on 2 cores, 128 KiB-1 MiB, both ways 0.25-0.96x Open "
     "MPI in every placement measured, the pipeline 0.26-1.79x).",
     offsetof(struct bm_mpi_coll_config, sm_crowded_bcast_max), 0},
    {"BM_MPI_COLL_SM_LARGE_MAX", BM_PARAM_SIZE, "16m", 0, 1LL << 40, NULL,
     "Where ranks share cores (an oversubscribed host, or BM_PML_IDLE_YIELD), shared-memory "
     "collectives whose data per slot exceeds BM_MPI_COLL_SM_SLOT go through a second segment "
     "of larger slots, made at the first such call at this many bytes per communicator (2 x "
     "ranks x slot; 8 ranks: slots of 1 MiB), whose pages come as the calls need them "
     "(4 x BM_MPI_COLL_SM_SLOT per slot, doubled); larger data takes the point-to-point "
     "algorithms. 0: never.",
     offsetof(struct bm_mpi_coll_config, sm_large_max), 0},
    {"BM_MPI_COLL_SM_LARGE_ALLTOALL", BM_PARAM_SIZE, "16k", 0, 1LL << 40, NULL,
     "Alltoalls whose block is at least this many bytes times the ranks (4 ranks: 64 KiB) "
     "take the point-to-point algorithm rather than the large area where ranks share cores: "
     "each byte is copied once instead of twice, and with few ranks per core the "
     "rendezvous steps wait little (4 ranks on 2 cores: 64-512 KiB blocks 30-495 us "
     "against 55-547 through the area; 8 ranks: the area is faster up to its 128 KiB). 0: "
     "no limit.",
     offsetof(struct bm_mpi_coll_config, sm_large_alltoall), 0},
    {"BM_MPI_COLL_SM_TEST_PUT_FAIL", BM_PARAM_INT, "0", 0, INT_MAX, NULL,
     "For testing only: the single-copy writes into another rank's memory (the transport's "
     "put) that rank N - 1 of a communicator makes in shared-memory collectives fail "
     "(BM_ERR_LINK_DOWN, as a failed process_vm_writev), so that tests can check the ranks "
     "whose data was to be written return an error. 0: none fail.",
     offsetof(struct bm_mpi_coll_config, sm_test_put_fail), 0},
};
static const struct bm_param_table coll_table = {"mpi/coll", coll_params,
                                                 BM_PARAM_COUNT(coll_params)};
BM_PARAM_TABLE_REGISTER(coll_table);

static struct bm_mpi_coll_config cfg;
static bool cfg_loaded;

const struct bm_mpi_coll_config *bm_mpi_coll_cfg(void)
{
    /* Loaded once, by the first thread that needs it (MPI_THREAD_MULTIPLE). */
    if (!__atomic_load_n(&cfg_loaded, __ATOMIC_ACQUIRE)) {
        bm_mpi_obj_lock();
        /* MPI_Init already checked every BM_* value; a failure here would
         * be a variable changed since, and the defaults stand in. */
        if (!cfg_loaded && bm_util_params_load(&coll_table, &cfg) != BM_OK)
            bm_log_warn("invalid BM_MPI_COLL_* settings; using the defaults");
        __atomic_store_n(&cfg_loaded, true, __ATOMIC_RELEASE);
        bm_mpi_obj_unlock();
    }
    return &cfg;
}

/* ---- statistics ---------------------------------------------------------------- */

static const char *const alg_names[BM_ALG_COUNT] = {
#define BM_COLL_ALG_NAME(id, name) name,
    BM_COLL_ALGS(BM_COLL_ALG_NAME)
#undef BM_COLL_ALG_NAME
};
static unsigned long alg_runs[BM_ALG_COUNT];

void bm_mpi_coll_count_alg(int kind, int alg)
{
    (void)kind;
    if (alg >= 0 && alg < BM_ALG_COUNT)
        __atomic_fetch_add(&alg_runs[alg], 1, __ATOMIC_RELAXED);
}

BM_EXPORT unsigned long bm_coll_alg_count(const char *name)
{
    for (int i = 0; i < BM_ALG_COUNT; i++)
        if (name && strcmp(alg_names[i], name) == 0)
            return __atomic_load_n(&alg_runs[i], __ATOMIC_RELAXED);
    return 0;
}

/* ---- communicator state ---------------------------------------------------------- */

struct bm_mpi_coll_comm *bm_mpi_coll_comm(MPI_Comm comm)
{
    if (comm->coll == NULL)
        comm->coll = calloc(1, sizeof(*comm->coll));
    return comm->coll;
}

void bm_mpi_coll_comm_free(MPI_Comm comm)
{
    struct bm_mpi_coll_comm *cc = comm->coll;

    if (cc == NULL)
        return;
    bm_coll_sm_free(cc);
    bm_coll_hier_release(cc);
    for (int k = 0; k < BM_COLL_KIND_COUNT; k++)
        for (int w = 0; w < BM_COLL_CACHE_WAYS; w++)
            bm_mpi_sched_release(cc->cache[k][w]);
    free(cc);
    comm->coll = NULL;
}

void bm_mpi_coll_finalize(void)
{
    bm_mpi_coll_comm_free(MPI_COMM_WORLD);
    bm_mpi_coll_comm_free(MPI_COMM_SELF);
    bm_mpi_scratch_fini();
}

/* ---- the choice --------------------------------------------------------------- */

static bool is_pof2(int n)
{
    return (n & (n - 1)) == 0;
}

/* Bytes one element of a side carries (packed: what travels). */
static size_t esize_of(MPI_Datatype dt)
{
    return dt ? dt->size : 0;
}

/* The algorithm for a call, from its forced parameter (choice index forced,
 * with table mapping choice -> algorithm) or the automatic choice auto_alg,
 * when the forced one can serve it (ok). */
static int forced_or(int forced, const int *table, int auto_alg, bool (*ok)(int alg, void *ctx),
                     void *ctx)
{
    /* a shared-memory choice (-1 here) is made before, for blocking calls */
    if (forced != BM_SEL_AUTO && table[forced] >= 0 && (ok == NULL || ok(table[forced], ctx)))
        return table[forced];
    return auto_alg;
}

struct red_ctx {
    bool commutative;
    int count, size;
};

static bool red_ok(int alg, void *ctx)
{
    const struct red_ctx *c = ctx;
    switch (alg) {
    case BM_ALG_REDUCE_RABENSEIFNER:
        return c->commutative && c->count >= bm_coll_pof2(c->size);
    case BM_ALG_ALLREDUCE_RABENSEIFNER:
        return c->commutative && c->count >= bm_coll_pof2(c->size);
    case BM_ALG_ALLREDUCE_DIRECT:
        return c->commutative && c->count >= c->size;
    case BM_ALG_REDUCE_PIPELINE:
    case BM_ALG_ALLREDUCE_RING:
    case BM_ALG_REDUCE_SCATTER_HALVING:
    case BM_ALG_REDUCE_SCATTER_RING:
        return c->commutative;
    default:
        return true;
    }
}

struct block_ctx {
    bool uniform;
    int size;
};

static bool block_ok(int alg, void *ctx)
{
    const struct block_ctx *c = ctx;
    switch (alg) {
    case BM_ALG_ALLGATHER_RECURSIVE_DOUBLING:
        return c->uniform && is_pof2(c->size);
    case BM_ALG_ALLGATHER_BRUCK:
    case BM_ALG_ALLTOALL_BRUCK:
    case BM_ALG_GATHER_BINOMIAL:
    case BM_ALG_SCATTER_BINOMIAL:
        return c->uniform;
    default:
        return true;
    }
}

static const int barrier_algs[] = {0, BM_ALG_BARRIER_DISSEMINATION, -1};
static const int bcast_algs[] = {0, BM_ALG_BCAST_BINOMIAL, BM_ALG_BCAST_SCATTER_ALLGATHER,
                                 BM_ALG_BCAST_PIPELINE, -1};
static const int reduce_algs[] = {0, BM_ALG_REDUCE_BINOMIAL, BM_ALG_REDUCE_RABENSEIFNER,
                                  BM_ALG_REDUCE_PIPELINE, -1};
static const int allreduce_algs[] = {0,
                                     BM_ALG_ALLREDUCE_RECURSIVE_DOUBLING,
                                     BM_ALG_ALLREDUCE_RABENSEIFNER,
                                     BM_ALG_ALLREDUCE_RING,
                                     BM_ALG_ALLREDUCE_DIRECT,
                                     -1};
static const int gather_algs[] = {0, BM_ALG_GATHER_LINEAR, BM_ALG_GATHER_BINOMIAL, -1};
static const int scatter_algs[] = {0, BM_ALG_SCATTER_LINEAR, BM_ALG_SCATTER_BINOMIAL, -1};
static const int allgather_algs[] = {0, BM_ALG_ALLGATHER_RING, BM_ALG_ALLGATHER_RECURSIVE_DOUBLING,
                                     BM_ALG_ALLGATHER_BRUCK, -1};
static const int alltoall_algs[] = {0, BM_ALG_ALLTOALL_PAIRWISE, BM_ALG_ALLTOALL_LINEAR,
                                    BM_ALG_ALLTOALL_BRUCK, -1};
static const int reduce_scatter_algs[] = {0, BM_ALG_REDUCE_SCATTER_HALVING,
                                          BM_ALG_REDUCE_SCATTER_RING,
                                          BM_ALG_REDUCE_SCATTER_REDUCE_SCATTERV};
static const int scan_algs[] = {0, BM_ALG_SCAN_RECURSIVE_DOUBLING, BM_ALG_SCAN_LINEAR};

/* A single-host communicator on a host with more ranks than cores: each
 * message may wait for its receiver's time slice, so the algorithms with
 * the fewest messages beat the bandwidth-optimal ones (4 ranks on 2 loaded
 * cores, 256 KiB: bcast binomial 45 us, scatter + allgather 130; reduce
 * binomial 75, Rabenseifner 403), and an alltoall posts every transfer at
 * once rather than waiting out p - 1 pairwise steps (8 ranks, 32 KiB
 * blocks: linear 1.05 ms, pairwise 3.58). Every rank decides the same, and
 * the same at every call: all ranks of the communicator on this host (the
 * job's node map, the same on every rank) and the host oversubscribed
 * (from every rank's CPUs: pml.c). Not from whether the communicator has
 * its shared-memory segment yet, as it was: a nonblocking call cannot make
 * it, so a program whose first collective was MPI_Iallreduce got
 * rabenseifner, not allreduce.direct, and a blocking call the segment does
 * not serve had to make it first. */
static bool one_host(MPI_Comm comm)
{
    int node = bm_rte_node_of(bm_mpi_comm_world_rank(comm, 0));
    for (int r = 1; r < comm->size; r++)
        if (bm_rte_node_of(bm_mpi_comm_world_rank(comm, r)) != node)
            return false;
    return true;
}

static bool crowded(MPI_Comm comm)
{
    struct bm_mpi_coll_comm *cc;

    if (comm->inter || comm->size < 2 || !bm_pml_oversubscribed())
        return false;
    if ((cc = bm_mpi_coll_comm(comm)) == NULL)
        return one_host(comm);
    if (cc->one_host == 0)
        cc->one_host = one_host(comm) ? 1 : 2;
    return cc->one_host == 1;
}

static int choose(MPI_Comm comm, const struct bm_mpi_coll_args *a)
{
    const struct bm_mpi_coll_config *c = bm_mpi_coll_cfg();
    int p = comm->size;

    if (comm->inter) {
        switch (a->kind) {
        case BM_COLL_GATHER:
        case BM_COLL_GATHERV:
        case BM_COLL_SCATTER:
        case BM_COLL_SCATTERV:
        case BM_COLL_ALLTOALL:
        case BM_COLL_ALLTOALLV:
        case BM_COLL_ALLTOALLW:
            return BM_ALG_INTER_LINEAR;
        default:
            return BM_ALG_INTER_LEADER;
        }
    }
    switch (a->kind) {
    case BM_COLL_BARRIER:
        return forced_or(c->barrier_alg, barrier_algs, BM_ALG_BARRIER_DISSEMINATION, NULL, NULL);
    case BM_COLL_BCAST: {
        size_t bytes = (size_t)a->rcount * esize_of(a->rtype);
        int alg = p > 2 && bytes >= c->bcast_large && !crowded(comm)
                      ? BM_ALG_BCAST_SCATTER_ALLGATHER
                      : BM_ALG_BCAST_BINOMIAL;
        return forced_or(c->bcast_alg, bcast_algs, alg, NULL, NULL);
    }
    case BM_COLL_REDUCE:
    case BM_COLL_ALLREDUCE: {
        size_t bytes = (size_t)a->rcount * esize_of(a->rtype);
        struct red_ctx rc = {a->op->commutative, a->rcount, p};
        int alg;
        if (a->kind == BM_COLL_REDUCE) {
            alg = BM_ALG_REDUCE_BINOMIAL;
            if (rc.commutative && bytes >= c->reduce_large && !crowded(comm))
                alg = p <= 2                                    ? BM_ALG_REDUCE_PIPELINE
                      : red_ok(BM_ALG_REDUCE_RABENSEIFNER, &rc) ? BM_ALG_REDUCE_RABENSEIFNER
                                                                : alg;
            return forced_or(c->reduce_alg, reduce_algs, alg, red_ok, &rc);
        }
        alg = BM_ALG_ALLREDUCE_RECURSIVE_DOUBLING;
        /* In the background on a crowded host each round of a schedule
         * waits for the peers' turns on the cores (their progress thread's
         * wake-up, or their next MPI_Test): direct takes two rounds where
         * rabenseifner takes 2 log2 p, for the same data (bm_overlap, 1
         * MiB MPI_Iallreduce, 4 ranks on 2 cores with the progress thread,
         * interleaved A/Bs at load 13-30: overlap 63-72% -> 75-82%, medians
         * of per-iteration times 48-61% -> 87-95%; with 16 MPI_Test calls
         * at 8 ranks 73-80% -> 84-91%). Not with the progress thread above
         * 4 ranks: at 8 the collective alone took longer (pure 3.3-3.5 ->
         * 3.8-5.2 ms in three A/Bs, overlap unchanged; not analysed: 14
         * transfers in flight per rank instead of 2). Whether a rank
         * hands off is its own setting: the host's agreed view of it
         * (bm_pml_host_handoff) decides, so that a job where only some
         * ranks run the thread still picks one algorithm. Blocking calls
         * keep their choice (the segment serves them up to its large
         * area). */
        if (rc.commutative && a->rcount >= p && bytes >= c->allreduce_large)
            alg = a->background && crowded(comm) && (p <= 4 || !bm_pml_host_handoff())
                      ? BM_ALG_ALLREDUCE_DIRECT
                  : !is_pof2(p) && bytes >= c->allreduce_ring_min ? BM_ALG_ALLREDUCE_RING
                                                                  : BM_ALG_ALLREDUCE_RABENSEIFNER;
        return forced_or(c->allreduce_alg, allreduce_algs, alg, red_ok, &rc);
    }
    case BM_COLL_GATHER:
    case BM_COLL_GATHERV:
    case BM_COLL_SCATTER:
    case BM_COLL_SCATTERV: {
        bool gather = a->kind == BM_COLL_GATHER || a->kind == BM_COLL_GATHERV;
        bool uniform = a->kind == BM_COLL_GATHER || a->kind == BM_COLL_SCATTER;
        struct block_ctx bc = {uniform, p};
        /* The same value on every rank: the root's view of a block is its
         * receive (send) side, every other rank's its send (receive) side. */
        bool root_side = comm->rank == a->root;
        size_t blk = gather == root_side ? (size_t)a->rcount * esize_of(a->rtype)
                                         : (size_t)a->scount * esize_of(a->stype);
        bool small = uniform && p >= 8 && blk * (size_t)p <= c->gather_small;
        if (gather)
            return forced_or(c->gather_alg, gather_algs,
                             small ? BM_ALG_GATHER_BINOMIAL : BM_ALG_GATHER_LINEAR, block_ok, &bc);
        return forced_or(c->scatter_alg, scatter_algs,
                         small ? BM_ALG_SCATTER_BINOMIAL : BM_ALG_SCATTER_LINEAR, block_ok, &bc);
    }
    case BM_COLL_ALLGATHER:
    case BM_COLL_ALLGATHERV: {
        struct block_ctx bc = {a->kind == BM_COLL_ALLGATHER, p};
        size_t blk = (size_t)a->rcount * esize_of(a->rtype);
        int alg = BM_ALG_ALLGATHER_RING;
        if (bc.uniform && blk * (size_t)p <= c->allgather_small)
            alg = is_pof2(p) ? BM_ALG_ALLGATHER_RECURSIVE_DOUBLING : BM_ALG_ALLGATHER_BRUCK;
        return forced_or(c->allgather_alg, allgather_algs, alg, block_ok, &bc);
    }
    case BM_COLL_ALLTOALL:
    case BM_COLL_ALLTOALLV:
    case BM_COLL_ALLTOALLW: {
        struct block_ctx bc = {a->kind == BM_COLL_ALLTOALL, p};
        size_t blk;
        int alg;
        if (bc.uniform) {
            blk = (size_t)a->rcount * esize_of(a->rtype);
        } else {
            size_t total = 0;
            for (int i = 0; i < p; i++)
                total += (size_t)a->rcounts[i] *
                         esize_of(a->kind == BM_COLL_ALLTOALLW ? a->rtypes[i] : a->rtype);
            blk = total / (size_t)p;
        }
        if (bc.uniform && blk <= c->alltoall_small && p >= 8)
            alg = BM_ALG_ALLTOALL_BRUCK;
        else if (blk >= c->alltoall_pairwise_min && !crowded(comm))
            alg = BM_ALG_ALLTOALL_PAIRWISE;
        else
            alg = BM_ALG_ALLTOALL_LINEAR;
        return forced_or(c->alltoall_alg, alltoall_algs, alg, block_ok, &bc);
    }
    case BM_COLL_REDUCE_SCATTER:
    case BM_COLL_REDUCE_SCATTER_BLOCK: {
        size_t total = 0;
        struct red_ctx rc = {a->op->commutative, 0, p};
        int alg = BM_ALG_REDUCE_SCATTER_REDUCE_SCATTERV;
        for (int i = 0; i < p; i++)
            total += (size_t)(a->kind == BM_COLL_REDUCE_SCATTER ? a->rcounts[i] : a->rcount);
        total *= esize_of(a->rtype);
        if (rc.commutative)
            alg = !is_pof2(p) && total >= c->allreduce_ring_min ? BM_ALG_REDUCE_SCATTER_RING
                                                                : BM_ALG_REDUCE_SCATTER_HALVING;
        return forced_or(c->reduce_scatter_alg, reduce_scatter_algs, alg, red_ok, &rc);
    }
    case BM_COLL_SCAN:
    case BM_COLL_EXSCAN:
        return forced_or(c->scan_alg, scan_algs, BM_ALG_SCAN_RECURSIVE_DOUBLING, NULL, NULL);
    default:
        return BM_ALG_NEIGHBOR_LINEAR;
    }
}

/* ---- building ------------------------------------------------------------------ */

#define KEY_IN_PLACE    0x1u
#define KEY_COMMUTATIVE 0x2u

/* Kinds whose schedule depends only on the key (no count arrays). */
static bool cacheable(int kind)
{
    switch (kind) {
    case BM_COLL_BARRIER:
    case BM_COLL_BCAST:
    case BM_COLL_GATHER:
    case BM_COLL_SCATTER:
    case BM_COLL_ALLGATHER:
    case BM_COLL_ALLTOALL:
    case BM_COLL_REDUCE:
    case BM_COLL_ALLREDUCE:
    case BM_COLL_REDUCE_SCATTER_BLOCK:
    case BM_COLL_SCAN:
    case BM_COLL_EXSCAN:
        return true;
    default:
        return false;
    }
}

static bool key_equal(const struct bm_mpi_sched_key *x, const struct bm_mpi_sched_key *y)
{
    return x->kind == y->kind && x->alg == y->alg && x->root == y->root && x->count == y->count &&
           x->sbytes == y->sbytes && x->rbytes == y->rbytes && x->flags == y->flags;
}

/* What the schedule of a cacheable call depends on. The entry points have
 * cleared the arguments that are not significant on this rank (types NULL,
 * counts 0), so nothing here reads an invalid handle. */
static struct bm_mpi_sched_key key_of(const struct bm_mpi_coll_args *a, int alg)
{
    struct bm_mpi_sched_key k;
    bool in_place = a->sbuf == MPI_IN_PLACE || a->rbuf == MPI_IN_PLACE;

    memset(&k, 0, sizeof(k));
    k.kind = a->kind;
    k.alg = alg;
    k.root = a->root;
    k.count = a->rcount;
    k.sbytes = (size_t)a->scount * esize_of(a->stype);
    k.rbytes = a->rcount > 0 ? esize_of(a->rtype) : 0;
    k.flags = (in_place ? KEY_IN_PLACE : 0) | (a->op && a->op->commutative ? KEY_COMMUTATIVE : 0);
    return k;
}

/* The sides of a call, as their blocks. */
static struct bm_coll_side side(int ubuf, int n, int count, const int *counts, const int *displs,
                                MPI_Datatype dt)
{
    return (struct bm_coll_side){
        .ubuf = ubuf, .n = n, .count = count, .counts = counts, .displs = displs, .dt = dt};
}

/* Reductions: the input (count_in elements, in the receive buffer when in
 * place) and the output (count_out elements) of the datatype, packed when
 * it is not contiguous; output is false where this rank's receive buffer
 * gets no result (reduce away from the root, exscan at rank 0). */
static void build_reduction(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_mpi_coll_args *a,
                            int alg, size_t segment, int count_in, int count_out, bool output,
                            const int *rs_counts)
{
    bool in_place = a->sbuf == MPI_IN_PLACE;
    struct bm_coll_side in =
        side(in_place ? BM_SCHED_RBUF : BM_SCHED_SBUF, 1, count_in, NULL, NULL, a->rtype);
    struct bm_coll_side out = side(BM_SCHED_RBUF, 1, count_out, NULL, NULL, a->rtype);
    struct bm_coll_red r = {
        .count = a->rcount, .esize = a->rtype->size, .commutative = a->op->commutative};

    if (!bm_coll_side_layout(s, &in, in_place ? BM_SCHED_PRBUF : BM_SCHED_PSBUF) ||
        !bm_coll_side_layout(s, &out, BM_SCHED_PRBUF)) {
        s->nomem = true;
        return;
    }
    bm_coll_side_pack(s, &in, 0);
    r.sbuf = in.l.buf;
    r.dbuf = out.l.buf;
    switch (a->kind) {
    case BM_COLL_REDUCE:
        bm_coll_build_reduce(s, comm, &r, a->root, alg, segment);
        break;
    case BM_COLL_ALLREDUCE:
        bm_coll_build_allreduce(s, comm, &r, alg);
        break;
    case BM_COLL_SCAN:
    case BM_COLL_EXSCAN:
        bm_coll_build_scan(s, comm, &r, a->kind == BM_COLL_EXSCAN, alg);
        break;
    default:
        bm_coll_build_reduce_scatter(s, comm, &r, rs_counts, alg);
        break;
    }
    if (output) {
        bm_mpi_sched_round(s);
        bm_coll_side_unpack(s, &out, 0);
    }
    bm_coll_side_free(&in);
    bm_coll_side_free(&out);
}

static void build_bcast(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_mpi_coll_args *a,
                        int alg, size_t segment)
{
    struct bm_coll_side b = side(BM_SCHED_RBUF, 1, a->rcount, NULL, NULL, a->rtype);
    size_t bytes = (size_t)a->rcount * a->rtype->size;
    bool root = comm->rank == a->root;

    if (!bm_coll_side_layout(s, &b, BM_SCHED_PRBUF)) {
        s->nomem = true;
        return;
    }
    if (root)
        bm_coll_side_pack(s, &b, 0);
    if (alg == BM_ALG_BCAST_SCATTER_ALLGATHER)
        bm_coll_build_bcast_scatter_allgather(s, comm, b.l.buf, 0, bytes, a->root);
    else if (alg == BM_ALG_BCAST_PIPELINE)
        bm_coll_build_bcast_pipeline(s, comm, b.l.buf, 0, bytes, a->root, segment);
    else
        bm_coll_build_bcast_binomial(s, comm, b.l.buf, 0, bytes, a->root);
    if (!root) {
        bm_mpi_sched_round(s);
        bm_coll_side_unpack(s, &b, 0);
    }
    bm_coll_side_free(&b);
}

/* Gather, scatter, allgather, alltoall and their v and w variants. */
static void build_blocks(struct bm_mpi_sched *s, MPI_Comm comm, const struct bm_mpi_coll_args *a,
                         int alg)
{
    int p = comm->size, me = comm->rank, root = a->root;
    bool in_place = a->sbuf == MPI_IN_PLACE || a->rbuf == MPI_IN_PLACE;
    bool at_root = me == root, w = a->kind == BM_COLL_ALLTOALLW;
    struct bm_coll_side snd = {0}, rcv = {0};
    struct bm_coll_layout none = {0};

    switch (a->kind) {
    case BM_COLL_GATHER:
    case BM_COLL_GATHERV:
        snd = side(BM_SCHED_SBUF, in_place ? 0 : 1, a->scount, NULL, NULL, a->stype);
        rcv = side(BM_SCHED_RBUF, at_root ? p : 0, a->rcount, a->rcounts, a->rdispls, a->rtype);
        break;
    case BM_COLL_SCATTER:
    case BM_COLL_SCATTERV:
        snd = side(BM_SCHED_SBUF, at_root ? p : 0, a->scount, a->scounts, a->sdispls, a->stype);
        rcv = side(BM_SCHED_RBUF, in_place ? 0 : 1, a->rcount, NULL, NULL, a->rtype);
        break;
    case BM_COLL_ALLGATHER:
    case BM_COLL_ALLGATHERV:
        snd = side(BM_SCHED_SBUF, in_place ? 0 : 1, a->scount, NULL, NULL, a->stype);
        rcv = side(BM_SCHED_RBUF, p, a->rcount, a->rcounts, a->rdispls, a->rtype);
        break;
    default: /* alltoall(v, w) */
        snd = side(BM_SCHED_SBUF, in_place ? 0 : p, a->scount, a->scounts, w ? NULL : a->sdispls,
                   a->stype);
        rcv = side(BM_SCHED_RBUF, p, a->rcount, a->rcounts, w ? NULL : a->rdispls, a->rtype);
        if (w) {
            snd.bdispls = a->sdispls;
            snd.types = a->stypes;
            rcv.bdispls = a->rdispls;
            rcv.types = a->rtypes;
        }
        break;
    }
    if (!bm_coll_side_layout(s, &snd, BM_SCHED_PSBUF) ||
        !bm_coll_side_layout(s, &rcv, BM_SCHED_PRBUF)) {
        s->nomem = true;
        goto out;
    }
    bm_coll_side_pack(s, &snd, -1);
    switch (a->kind) {
    case BM_COLL_GATHER:
    case BM_COLL_GATHERV:
        if (at_root && in_place)
            bm_coll_side_pack(s, &rcv, root);
        bm_coll_build_gather(s, comm, snd.l.buf, snd.n ? bm_coll_block_bytes(&snd.l, 0) : 0,
                             in_place, rcv.n ? &rcv.l : &none, root, alg);
        break;
    case BM_COLL_SCATTER:
    case BM_COLL_SCATTERV:
        bm_coll_build_scatter(s, comm, snd.n ? &snd.l : &none, rcv.l.buf,
                              rcv.n ? bm_coll_block_bytes(&rcv.l, 0) : 0, in_place, root, alg);
        break;
    case BM_COLL_ALLGATHER:
    case BM_COLL_ALLGATHERV:
        if (in_place)
            bm_coll_side_pack(s, &rcv, me);
        bm_coll_build_allgather(s, comm, snd.l.buf, in_place, &rcv.l, alg);
        break;
    default:
        if (in_place)
            bm_coll_side_pack(s, &rcv, -1);
        bm_coll_build_alltoall(s, comm, in_place ? &rcv.l : &snd.l, &rcv.l, alg);
        break;
    }
    if (rcv.packed) {
        bm_mpi_sched_round(s);
        bm_coll_side_unpack(s, &rcv, -1);
    }
out:
    bm_coll_side_free(&snd);
    bm_coll_side_free(&rcv);
}

static int build(MPI_Comm comm, const struct bm_mpi_coll_args *a, int alg,
                 struct bm_mpi_sched **s_out, const char *fn)
{
    const struct bm_mpi_coll_config *c = bm_mpi_coll_cfg();
    struct bm_mpi_sched *s = bm_mpi_sched_new(a->kind, alg);
    int rc, me = comm->rank;

    if (s == NULL)
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
    switch (comm->inter ? -1 : a->kind) {
    case -1:
        if (!bm_coll_build_inter(s, comm, a))
            s->nomem = true;
        break;
    case BM_COLL_BARRIER:
        bm_coll_build_barrier_dissemination(s, comm);
        break;
    case BM_COLL_BCAST:
        build_bcast(s, comm, a, alg, c->segment);
        break;
    case BM_COLL_REDUCE:
        build_reduction(s, comm, a, alg, c->segment, a->rcount, a->rcount, me == a->root, NULL);
        break;
    case BM_COLL_ALLREDUCE:
    case BM_COLL_SCAN:
        build_reduction(s, comm, a, alg, 0, a->rcount, a->rcount, true, NULL);
        break;
    case BM_COLL_EXSCAN:
        build_reduction(s, comm, a, alg, 0, a->rcount, a->rcount, me > 0, NULL);
        break;
    case BM_COLL_REDUCE_SCATTER:
    case BM_COLL_REDUCE_SCATTER_BLOCK: {
        int *counts = malloc(sizeof(int) * (size_t)comm->size), total = 0;
        if (counts == NULL) {
            s->nomem = true;
            break;
        }
        for (int i = 0; i < comm->size; i++) {
            counts[i] = a->kind == BM_COLL_REDUCE_SCATTER_BLOCK ? a->rcount : a->rcounts[i];
            total += counts[i];
        }
        build_reduction(s, comm, a, alg, 0, total, counts[me], true, counts);
        free(counts);
        break;
    }
    case BM_COLL_GATHER:
    case BM_COLL_GATHERV:
    case BM_COLL_SCATTER:
    case BM_COLL_SCATTERV:
    case BM_COLL_ALLGATHER:
    case BM_COLL_ALLGATHERV:
    case BM_COLL_ALLTOALL:
    case BM_COLL_ALLTOALLV:
    case BM_COLL_ALLTOALLW:
        build_blocks(s, comm, a, alg);
        break;
    default:
        if (!bm_coll_build_neighbor_call(s, comm, a))
            s->nomem = true;
        break;
    }
    if ((rc = bm_mpi_sched_end(s, comm, fn)) != MPI_SUCCESS)
        return rc;
    *s_out = s;
    return MPI_SUCCESS;
}

/* A side whose type needs packing makes the schedule depend on the type
 * itself (its pack steps hold it): such calls are built each time. */
static bool types_contiguous(const struct bm_mpi_coll_args *a)
{
    return (a->stype == NULL || a->stype->contiguous) && (a->rtype == NULL || a->rtype->contiguous);
}

int bm_mpi_coll_schedule(MPI_Comm comm, const struct bm_mpi_coll_args *a,
                         struct bm_mpi_sched **s_out, const char *fn)
{
    int alg = choose(comm, a), rc;
    struct bm_mpi_coll_comm *cc;
    struct bm_mpi_sched_key key;
    struct bm_mpi_sched *s;

    if (!cacheable(a->kind) || comm->inter || !types_contiguous(a) ||
        (cc = bm_mpi_coll_comm(comm)) == NULL)
        return build(comm, a, alg, s_out, fn);
    key = key_of(a, alg);
    for (int w = 0; w < BM_COLL_CACHE_WAYS; w++) {
        s = cc->cache[a->kind][w];
        if (s && key_equal(&s->key, &key)) {
            /* most recent first */
            for (; w > 0; w--)
                cc->cache[a->kind][w] = cc->cache[a->kind][w - 1];
            cc->cache[a->kind][0] = s;
            bm_mpi_sched_retain(s);
            *s_out = s;
            return MPI_SUCCESS;
        }
    }
    if ((rc = build(comm, a, alg, &s, fn)) != MPI_SUCCESS)
        return rc;
    s->key = key;
    s->cacheable = true;
    bm_mpi_sched_release(cc->cache[a->kind][BM_COLL_CACHE_WAYS - 1]);
    for (int w = BM_COLL_CACHE_WAYS - 1; w > 0; w--)
        cc->cache[a->kind][w] = cc->cache[a->kind][w - 1];
    cc->cache[a->kind][0] = s;
    bm_mpi_sched_retain(s);
    *s_out = s;
    return MPI_SUCCESS;
}

/* ---- the blocking form ------------------------------------------------------------ */

/* The collectives with a shared-memory and a hierarchical algorithm (-1:
 * none): their choice parameter (sm is its last choice) and those
 * algorithms. */
struct local_algs {
    int kind, nchoices, sm, hier;
    size_t forced; /* offset of the choice parameter in the configuration */
};
static const struct local_algs local_algs[] = {
    {BM_COLL_BARRIER, 3, BM_ALG_BARRIER_SM, BM_ALG_BARRIER_HIER,
     offsetof(struct bm_mpi_coll_config, barrier_alg)},
    {BM_COLL_BCAST, 5, BM_ALG_BCAST_SM, BM_ALG_BCAST_HIER,
     offsetof(struct bm_mpi_coll_config, bcast_alg)},
    {BM_COLL_REDUCE, 5, BM_ALG_REDUCE_SM, BM_ALG_REDUCE_HIER,
     offsetof(struct bm_mpi_coll_config, reduce_alg)},
    {BM_COLL_ALLREDUCE, 6, BM_ALG_ALLREDUCE_SM, BM_ALG_ALLREDUCE_HIER,
     offsetof(struct bm_mpi_coll_config, allreduce_alg)},
    {BM_COLL_GATHER, 4, BM_ALG_GATHER_SM, BM_ALG_GATHER_HIER,
     offsetof(struct bm_mpi_coll_config, gather_alg)},
    {BM_COLL_SCATTER, 4, BM_ALG_SCATTER_SM, -1, offsetof(struct bm_mpi_coll_config, scatter_alg)},
    {BM_COLL_ALLGATHER, 5, BM_ALG_ALLGATHER_SM, BM_ALG_ALLGATHER_HIER,
     offsetof(struct bm_mpi_coll_config, allgather_alg)},
    {BM_COLL_ALLTOALL, 5, BM_ALG_ALLTOALL_SM, -1,
     offsetof(struct bm_mpi_coll_config, alltoall_alg)},
};

/* kind's entry and its choice parameter's value, or NULL. */
static const struct local_algs *local_algs_of(int kind, int *forced)
{
    for (size_t i = 0; i < sizeof(local_algs) / sizeof(local_algs[0]); i++)
        if (local_algs[i].kind == kind) {
            *forced = *(const int *)((const char *)bm_mpi_coll_cfg() + local_algs[i].forced);
            return &local_algs[i];
        }
    return NULL;
}

/* The bytes of a blocking call's data that the fullest slot of the
 * shared-memory segment must hold, or SIZE_MAX when the segment cannot
 * serve it. The same on every rank: block sizes are packed sizes, which
 * MPI requires to match, whatever each rank's datatypes (the segment packs
 * sides that are not contiguous); only reductions, whose datatype is the
 * same everywhere, need a contiguous one. */
static size_t sm_bytes(MPI_Comm comm, const struct bm_mpi_coll_args *a)
{
    bool at_root = comm->rank == a->root;

    switch (a->kind) {
    case BM_COLL_BARRIER:
        return 0;
    case BM_COLL_REDUCE:
    case BM_COLL_ALLREDUCE:
        if (!a->rtype->contiguous)
            return SIZE_MAX;
        /* fall through */
    case BM_COLL_BCAST:
    case BM_COLL_ALLGATHER: /* one block per slot */
        return (size_t)a->rcount * a->rtype->size;
    case BM_COLL_GATHER: /* each rank's block in its slot */
        return at_root ? (size_t)a->rcount * a->rtype->size : (size_t)a->scount * a->stype->size;
    case BM_COLL_SCATTER: /* the root writes each rank's block into that rank's slot */
        return at_root ? (size_t)a->scount * a->stype->size : (size_t)a->rcount * a->rtype->size;
    case BM_COLL_ALLTOALL: /* a rank's blocks for every rank in its slot */
        return (size_t)comm->size * (size_t)a->rcount * a->rtype->size;
    default:
        return SIZE_MAX;
    }
}

/* Where ranks share cores, a broadcast on at most BM_COLL_SM_NEAR_RANKS
 * ranks of BM_MPI_COLL_SM_CROWDED_BCAST_COPY to _MAX bytes goes both ways
 * (BM_COLL_SM_NEAR, coll_sm.c's bcast_near): the root copies its data into
 * the large area and offers its buffer; a reader on the root's CPU copies
 * from the area (lines in this CPU's cache), one on another CPU reads the
 * root's buffer by single copy. Through the area alone the root's stores
 * take every line back from the other CPU's readers; by single copy alone
 * the readers' gets of one buffer slow each other and the root waits for
 * the one that shares its CPU (the quiet runs' 64 KiB at 1.48-1.54x Open
 * MPI, whose linear bcast moves the data the same way: one
 * process_vm_readv of the root's buffer per reader, strace). 4 ranks on 2
 * cores, each bound as shown (CPU per rank), nice -20 autogroup, mean over
 * ranks of 2000 calls, load 22-29, single copy / both ways / Open MPI (us):
 * 64 KiB 0011 6.07 / 4.04 / 6.15, 0101 6.87 / 4.09 / 7.46, 0110 6.63 /
 * 3.92 / 6.16, 0111 5.43 / 5.38 / 6.22, 0001 8.28 / 3.36 / 9.56, 0010 9.14
 * / 4.06 / 8.61, 0100 9.22 / 3.75 / 8.61, 0000 5.54 / 3.77 / 5.74; 32 KiB
 * 2.34-3.83 both ways against 3.70-4.49 and Open MPI's 3.94-5.01; from
 * 128 KiB the pipeline before, and with the root waiting only for readers
 * that took its buffer (pipeline / both ways / Open MPI): 128 KiB 0011
 * 13.6 / 6.0 / 13.0, 0111 13.4 / 6.4 / 7.5, 0001 9.9 / 5.1 / 13.0, 0000
 * 2.6 / 2.6 / 7.3; 256 KiB 0011 17.0 / 11.0 / 32.3, 0111 16.4 / 14.0 /
 * 14.7, 0001 15.7 / 10.5 / 31.8, 0000 6.0 / 5.8 / 14.4; 512 KiB 0111 33.1
 * / 27.3 / 28.6; 1 MiB 56.9-66.2 / 43.6-61.3 / 165-171. Not below 32 KiB
 * (16 KiB: the slots, 0.5x Open MPI in the quiet runs), nor above
 * BM_MPI_COLL_SM_CROWDED_BCAST_MAX (1 MiB, as far as measured), nor on
 * more ranks, where the root waits for more
 * readers' time slices (8 ranks, single copy before: 01010101 and
 * 00110011: 32 KiB 4.12, 4.10 through the segment / 4.80, 4.46 by copy;
 * 64 KiB 5.80, 6.25 / 6.13, 6.65; Open MPI 7.5-17), nor where ranks only
 * yield without oversubscribing their host (the node communicators of
 * namespace hosts): there a hierarchical bcast's root would wait for its
 * host's readers before the leaders' phase (one A/B at 2 hosts x 2 ranks,
 * 32-64 KiB, 18-35 us against 10-17, but the first run after Open MPI's is
 * slower in every round there: not conclusive, kept as it was). */

static bool crowded_bcast_copy(const struct bm_mpi_coll_args *a, int p, size_t bytes)
{
    const struct bm_mpi_coll_config *c = bm_mpi_coll_cfg();
    size_t min = c->sm_crowded_bcast_copy;
    return a->kind == BM_COLL_BCAST && p <= BM_COLL_SM_NEAR_RANKS && min > 0 && bytes >= min &&
           bytes <= c->sm_crowded_bcast_max && bm_pml_oversubscribed();
}

/* Whether a blocking call whose fullest slot holds bytes may move its data
 * by single copy (the segment must offer it too: bm_coll_sm_can_copy):
 * from BM_MPI_COLL_SM_COPY_MIN to _MAX, not for a barrier, nor an in-place
 * allreduce or alltoall (the ranks would overwrite what the others read),
 * nor reductions of elements larger than a staging chunk, nor broadcasts
 * above BM_MPI_COLL_SM_COPY_ROOTED_MAX except split ones on 2 ranks (the
 * root writes half: 2 ranks, bm_coll, 9 interleaved rounds, medians,
 * point-to-point -> split single copy: 128 KiB 4.63 -> 3.93 us, 256 KiB
 * 7.37 -> 6.31, 512 KiB 13.0 -> 12.2, 1 MiB 26.3 -> 23.4; Open MPI 6.0,
 * 11.1, 21.6, 92; an earlier 7-round run 4.52 -> 3.84, 6.96 -> 6.23, 12.3
 * -> 12.7, 25.0 -> 23.7) (gathers, since c88fa47 written
 * into the root's buffer by the other ranks while the root copies its
 * own block, beat the point-to-point path at every size: 2 ranks, bm_coll,
 * 7 interleaved rounds, medians, point-to-point -> single copy: 128 KiB
 * 6.86 -> 5.32 us, 256 KiB 12.07 -> 9.46, 512 KiB 32.4 -> 18.8-20.4, 1 MiB
 * 138 -> 83; Open MPI 8.1, 13.6, 56-60, 161), and where ranks share
 * cores (an oversubscribed host, or a job told to yield when idle) only
 * when forced (each wait for a reader then costs time slices), except a
 * scatter: there the large area would have the root copy every block in
 * before anyone reads, and single copy lets each reader take its block
 * straight from the root's buffer while the root waits, as Open MPI's
 * readers do by CMA (4 and 8 ranks on 2 cores, 16 KiB-1 MiB blocks: about
 * half the time of the large area, below Open MPI's), and a broadcast on
 * few ranks (crowded_bcast_copy). Every rank decides the same. */
static bool sm_copy_wanted(const struct bm_mpi_coll_args *a, int p, size_t bytes, bool forced)
{
    const struct bm_mpi_coll_config *c = bm_mpi_coll_cfg();
    bool in_place = a->sbuf == MPI_IN_PLACE, sharing = bm_pml_host_shares_cores();

    if (c->sm_copy_min == 0 || bytes < c->sm_copy_min || bytes > c->sm_copy_max ||
        (!forced && a->kind != BM_COLL_SCATTER && !crowded_bcast_copy(a, p, bytes) && sharing))
        return false;
    /* Where every rank has a core of its own, data that fits a slot stays
     * in the slots unless forced: a single copy is a system call on each
     * side (process_vm_readv/writev, ~1 us each on the test VM against
     * 0.07 us for an 8 KiB memcpy) and a wait for the other's done line,
     * so the slots win up to their 32 KiB (e03c308: 2 ranks, 8 KiB gather
     * 86 -> 0.69 us, reduce 40 -> 0.74, allreduce 24.7 -> 1.93). So
     * BM_MPI_COLL_SM_COPY_MIN acts only where ranks share cores or above
     * a slot. */
    if (!forced && !sharing && bytes <= c->sm_slot)
        return false;
    switch (a->kind) {
    case BM_COLL_BARRIER:
        return false;
    case BM_COLL_BCAST:
        return bytes <= c->sm_copy_rooted_max || bm_coll_sm_bcast_splits(p, bytes) ||
               (!forced && crowded_bcast_copy(a, p, bytes));
    case BM_COLL_ALLTOALL:
        return !in_place;
    case BM_COLL_ALLREDUCE:
        return !in_place && a->rtype->size <= 4096;
    case BM_COLL_REDUCE:
        return a->rtype->size <= 4096;
    default:
        return true;
    }
}

/* The shared-memory algorithm that may serve a blocking call (its choice
 * parameter is auto or sm; the data fits a slot, may move by single copy,
 * or, where ranks share cores, fits the large area: *how), or -1. Every
 * rank decides the same from the same arguments. */
static int sm_alg(MPI_Comm comm, const struct bm_mpi_coll_args *a, enum bm_coll_sm_how *how)
{
    const struct bm_mpi_coll_config *c = bm_mpi_coll_cfg();
    const struct local_algs *l;
    int forced;
    size_t bytes;

    if (comm->inter || comm->size < 2 || c->sm_slot == 0 ||
        (l = local_algs_of(a->kind, &forced)) == NULL)
        return -1;
    if (forced != BM_SEL_AUTO && forced != l->nchoices - 1)
        return -1;
    bytes = sm_bytes(comm, a);
    *how = BM_COLL_SM_SLOTS;
    if (bytes != SIZE_MAX && sm_copy_wanted(a, comm->size, bytes, forced != BM_SEL_AUTO))
        *how = forced == BM_SEL_AUTO && crowded_bcast_copy(a, comm->size, bytes) ? BM_COLL_SM_NEAR
                                                                                 : BM_COLL_SM_COPY;
    else if (bytes > c->sm_slot) {
        if (bytes == SIZE_MAX || c->sm_large_max == 0 || !bm_pml_host_shares_cores())
            return -1;
        if (a->kind == BM_COLL_ALLTOALL && c->sm_large_alltoall > 0 && forced == BM_SEL_AUTO &&
            bytes / (size_t)comm->size >= c->sm_large_alltoall * (size_t)comm->size)
            return -1;
        *how = BM_COLL_SM_LARGE;
    }
    return l->sm;
}

/* The hierarchical algorithm that may serve a blocking call, or -1: its
 * choice parameter is auto, the communicator spans hosts (set up then). */
static int hier_alg(MPI_Comm comm, const struct bm_mpi_coll_args *a, const char *fn)
{
    struct bm_mpi_coll_comm *cc;
    const struct local_algs *l;
    int forced;

    if (!bm_mpi_coll_cfg()->hier || comm->inter || comm->size < 3 ||
        (l = local_algs_of(a->kind, &forced)) == NULL || l->hier < 0 || forced != BM_SEL_AUTO ||
        (cc = bm_mpi_coll_comm(comm)) == NULL || cc->hier_state == 2 ||
        !bm_coll_hier_ready(comm, cc, fn))
        return -1;
    if (a->op && !a->op->commutative && !bm_coll_hier_keeps_order(cc))
        return -1;
    /* gather, allgather: all blocks, packed, in one int-counted message */
    if ((a->kind == BM_COLL_GATHER || a->kind == BM_COLL_ALLGATHER) &&
        (size_t)comm->size * (a->stype ? bm_mpi_type_packed_bytes(a->stype, (size_t)a->scount)
                                       : bm_mpi_type_packed_bytes(a->rtype, (size_t)a->rcount)) >
            INT_MAX)
        return -1;
    return l->hier;
}

/* The fast path of blocking calls: on a communicator whose segment is up
 * and that has no hierarchy, a call whose data fits a slot and is below
 * BM_MPI_COLL_SM_COPY_MIN goes to the slots whenever its kind's choice
 * parameter allows the segment's algorithm (what hier_alg and sm_alg
 * decide, every call alike, from settings read once and from the
 * segment's and hierarchy's states, which do not change once known): a
 * table look-up instead of those decisions. 2 ranks, an 8 B bcast's root:
 * about 600 -> 475 instructions per call (callgrind, 6000 calls), its
 * flag stored that much earlier (the reader waits for it): bm_coll, 7
 * interleaved rounds, medians, with and without the fast path, bcast
 * 8-1024 B 0.149-0.259 us against 0.158-0.300, scatter 0.154-0.260
 * against 0.165-0.292 (MPICH 0.185-0.388 in the same rounds). fast_setup
 * fills the table once both states are known (fast_state 1; a
 * communicator without a segment asks again at each call, a few loads);
 * the first call that takes the fast path counts sm.fast (fast_state 2),
 * so a test that requires sm.fast fails when no call took it. */
static void fast_setup(MPI_Comm comm, struct bm_mpi_coll_comm *cc)
{
    const struct bm_mpi_coll_config *c = bm_mpi_coll_cfg();

    /* Both states pass through "off" while being set up (the set-up's own
     * collectives run without them): only "on" is final here. */
    if (cc->sm_state != 1 || cc->hier_state == 1 ||
        (comm->size >= 3 && c->hier && cc->hier_state != 2))
        return;
    for (int k = 0; k < BM_COLL_KIND_COUNT; k++)
        cc->fast_alg[k] = -1;
    for (size_t i = 0; i < sizeof(local_algs) / sizeof(local_algs[0]); i++) {
        const struct local_algs *l = &local_algs[i];
        int forced = *(const int *)((const char *)c + l->forced);
        if (forced == BM_SEL_AUTO || forced == l->nchoices - 1)
            cc->fast_alg[l->kind] = (short)l->sm;
    }
    cc->fast_max = c->sm_slot;
    if (c->sm_copy_min > 0 && c->sm_copy_min - 1 < cc->fast_max)
        cc->fast_max = c->sm_copy_min - 1;
    cc->fast_state = 1;
}

/* The segment's algorithm for a on the fast path, or -1. */
static int fast_alg(MPI_Comm comm, const struct bm_mpi_coll_comm *cc,
                    const struct bm_mpi_coll_args *a)
{
    int alg;

    if (a->kind <= 0 || a->kind >= BM_COLL_KIND_COUNT || (alg = cc->fast_alg[a->kind]) < 0)
        return -1;
    return sm_bytes(comm, a) <= cc->fast_max ? alg : -1;
}

int bm_mpi_coll_blocking(MPI_Comm comm, struct bm_mpi_coll_args *a, const char *fn)
{
    struct bm_mpi_sched *s;
    struct bm_mpi_coll_comm *fc = comm->coll;
    int rc, alg;

    if (fc != NULL) {
        if (fc->fast_state == 0)
            fast_setup(comm, fc);
        if (fc->fast_state >= 1 && fc->hier_state != 1 && (alg = fast_alg(comm, fc, a)) >= 0) {
            if (fc->fast_state == 1) { /* sm.fast: a call took it (once per communicator) */
                fc->fast_state = 2;
                bm_mpi_coll_count_alg(-1, BM_ALG_SM_FAST);
            }
            /* in place: the caller's copy (see coll.h) */
            a->sbuf = bm_coll_side_base(a->sbuf, bm_mpi_coll_stype(a));
            a->rbuf = (void *)(uintptr_t)bm_coll_side_base(a->rbuf, a->rtype);
            return bm_coll_sm_run(comm, fc, a, alg, BM_COLL_SM_SLOTS, fn);
        }
    }
    alg = hier_alg(comm, a, fn);
    if (alg >= 0)
        return bm_coll_hier_run(comm, bm_mpi_coll_comm(comm), a, alg, fn);
    enum bm_coll_sm_how how = BM_COLL_SM_SLOTS;
    alg = sm_alg(comm, a, &how);

    if (alg >= 0) {
        struct bm_mpi_coll_comm *cc = bm_mpi_coll_comm(comm);
        bool ok = cc && cc->sm_state != 2 && bm_coll_sm_ready(comm, cc, fn);
        /* single copy where the segment offers it, else the slots when the
         * data fits them, or the large area where ranks share cores */
        if (ok && how == BM_COLL_SM_NEAR &&
            !(bm_coll_sm_can_copy(cc) && bm_coll_sm_large_ready(comm, cc, sm_bytes(comm, a), fn)))
            how = BM_COLL_SM_COPY; /* every rank alike: the area is made collectively */
        if (ok && how == BM_COLL_SM_COPY && !bm_coll_sm_can_copy(cc)) {
            const struct bm_mpi_coll_config *c = bm_mpi_coll_cfg();
            how = BM_COLL_SM_SLOTS;
            if (sm_bytes(comm, a) > c->sm_slot) {
                ok = c->sm_large_max > 0 && bm_pml_host_shares_cores();
                how = BM_COLL_SM_LARGE;
            }
        }
        if (ok && how == BM_COLL_SM_LARGE)
            ok = bm_coll_sm_large_ready(comm, cc, sm_bytes(comm, a), fn);
        if (ok) {
            struct bm_mpi_coll_args b = *a;
            b.sbuf = bm_coll_side_base(a->sbuf, bm_mpi_coll_stype(a));
            b.rbuf = (void *)(uintptr_t)bm_coll_side_base(a->rbuf, a->rtype);
            return bm_coll_sm_run(comm, cc, &b, alg, how, fn);
        }
    }

    if ((rc = bm_mpi_coll_schedule(comm, a, &s, fn)) != MPI_SUCCESS)
        return rc;
    rc = bm_mpi_sched_run(s, comm, bm_coll_side_base(a->sbuf, bm_mpi_coll_stype(a)),
                          (void *)(uintptr_t)bm_coll_side_base(a->rbuf, a->rtype), a->rtype, a->op,
                          fn);
    bm_mpi_sched_release(s);
    return rc;
}
