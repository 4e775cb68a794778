/* Internals shared by the MPI entry points (the files in src/mpi): the structs behind
 * the public handles, the library state (initialized or not, thread level),
 * the error path that applies a communicator's error handler, and argument
 * checks that every entry point uses so that a bad argument gives the same
 * error class and the same message everywhere.
 *
 * How an entry point is written:
 *
 *     int PMPI_Send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
 *     {
 *         static const char fn[] = "MPI_Send";
 *         int rc;
 *         if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)) ||
 *             (rc = bm_mpi_check_count(comm, count, fn)) || ...)
 *             return rc;
 *         ...
 *     }
 *     BM_MPI_ALIAS(Send);
 *
 * Every check helper returns MPI_SUCCESS (0) or, after reporting through
 * bm_mpi_error (which ends the job under MPI_ERRORS_ARE_FATAL), the error
 * class; callers just return a non-zero result. The checks on a communicator
 * must come first: the others use its error handler.
 *
 * Context ids (comm_cid.c): a communicator owns a slot of four matching
 * contexts 4s .. 4s+3: 4s for point-to-point traffic, 4s+1 for collectives
 * (so collective messages never match user receives), and in an
 * inter-communicator 4s+2/4s+3 for its local_comm. MPI_COMM_WORLD has 0/1,
 * MPI_COMM_SELF 2/3 (slot 0); new communicators get slots from 1 up,
 * agreed by their members and reused once the communicator is gone. */
#ifndef BM_MPI_INTERNAL_H
#define BM_MPI_INTERNAL_H

#include "mpi.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Defines MPI_name as a weak, exported alias of PMPI_name (the profiling
 * interface): a tool may define MPI_name itself and call PMPI_name. */
#define BM_MPI_ALIAS(name)                                                                         \
    extern __typeof__(PMPI_##name) MPI_##name                                                      \
        __attribute__((weak, alias("PMPI_" #name), visibility("default")))

/* Largest tag (MPI_TAG_UB attribute); the PML carries 32-bit tags. */
#define BM_MPI_TAG_UB 0x7fffffff

/* Magic numbers in every handle object, so that a handle of the wrong kind
 * (or a stray pointer to readable memory) is reported, not used. */
#define BM_MPI_MAGIC_COMM       0x636f6d6dU /* "comm" */
#define BM_MPI_MAGIC_COMM_FREED 0x63667265U /* "cfre": freed, kept alive by references */
#define BM_MPI_MAGIC_DATATYPE   0x64747970U /* "dtyp" */
#define BM_MPI_MAGIC_OP         0x6f706f70U /* "opop" */
#define BM_MPI_MAGIC_ERRHANDLER 0x65727268U /* "errh" */
#define BM_MPI_MAGIC_GROUP      0x67727570U /* "grup" */
#define BM_MPI_MAGIC_INFO       0x696e666fU /* "info" */

/* Context ids of the predefined communicators (collectives use id + 1). */
#define BM_MPI_CONTEXT_WORLD 0u
#define BM_MPI_CONTEXT_SELF  2u
/* Matching contexts per slot (comm_cid.c); slot 0 holds the predefined ones. */
#define BM_MPI_CONTEXTS_PER_SLOT 4u

enum bm_mpi_errhandler_kind {
    BM_MPI_ERRH_FATAL,  /* print what failed and end the job */
    BM_MPI_ERRH_RETURN, /* return the error class to the caller */
    BM_MPI_ERRH_USER,   /* call fn, then return the error class */
};

struct bm_mpi_errhandler {
    uint32_t magic;
    enum bm_mpi_errhandler_kind kind;
    MPI_Comm_errhandler_function *fn;      /* user handlers for communicators */
    MPI_File_errhandler_function *file_fn; /* user handlers for files */
    MPI_Win_errhandler_function *win_fn;   /* user handlers for windows */
    int refcount;                          /* user handlers: handle + communicators using it */
    bool predefined;
};

/* A communicator. An intra-communicator has one group; point-to-point
 * ranks name its members. An inter-communicator has a local group (rank,
 * size, world_ranks: this process's side) and a remote group (peer_size,
 * peer_world_ranks): point-to-point ranks name members of the remote group,
 * and a message carries the sender's local rank, which is its rank in the
 * receiver's remote group. Both groups use the same context ids (agreed
 * over both), so matching needs nothing else. In an intra-communicator
 * peer_size/peer_world_ranks alias size/world_ranks, so that point-to-point
 * code reads the same two fields for both. Reference counted: the handle
 * and every pending request hold one (bm_mpi_comm_retain/release); after
 * MPI_Comm_free the object lives on, marked BM_MPI_MAGIC_COMM_FREED, until
 * the last reference goes, and only then its context ids are released. */
struct bm_mpi_comm {
    uint32_t magic;
    uint32_t context_id; /* point-to-point; context_id + 1 is for collectives */
    int rank;            /* this process in the (local) group */
    int size;            /* size of the (local) group */
    /* World rank of each (local) rank; NULL when rank i is world rank i. */
    int *world_ranks;
    /* The group point-to-point ranks name: the group itself (aliases of
     * size and world_ranks) or, in an inter-communicator, the remote group
     * (peer_world_ranks then owned; NULL when rank i is world rank i). */
    int peer_size;
    int *peer_world_ranks;
    bool inter;
    /* Inter-communicators: an intra-communicator over the local group on
     * contexts context_id + 2 / + 3, for the library's own use
     * (collectives' local phases, merging, agreeing on context ids). It
     * holds a reference on its inter-communicator. NULL otherwise. */
    MPI_Comm local_comm;
    int refcount;
    /* The context slot freed when this communicator is destroyed; 0 when it
     * frees none (predefined communicators, an inter-communicator's
     * local_comm, whose slot its inter-communicator frees). */
    uint32_t slot;
    MPI_Comm slot_owner; /* local_comm: its inter-communicator (referenced) */
    MPI_Errhandler errhandler;
    struct bm_mpi_attr *attrs;     /* cached attributes (attr.c), newest first */
    struct bm_mpi_cart *cart;      /* Cartesian topology (topo.c), or NULL */
    struct bm_mpi_graph *graph;    /* graph topology (topo_graph.c), or NULL */
    MPI_Info info;                 /* hints (MPI_Comm_set_info), or MPI_INFO_NULL */
    uint32_t coll_seq;             /* nonblocking/persistent collectives started (coll_sched.c) */
    struct bm_mpi_coll_comm *coll; /* collective state (coll_select.c), made on first use */
    uint32_t idup_count;           /* MPI_Comm_idup calls on it (their tags) */
    char name[MPI_MAX_OBJECT_NAME];
    bool predefined;
};

/* An ordered set of processes, as world ranks. */
struct bm_mpi_group {
    uint32_t magic;
    int size;
    int *world_ranks; /* size entries; NULL for the empty group */
    bool predefined;  /* MPI_GROUP_EMPTY: never freed */
};

/* What a predefined datatype holds, for the reduction kernels. */
enum bm_mpi_type_kind {
    BM_MPI_KIND_INT,     /* signed or unsigned integer (C and Fortran integer types, MPI_AINT...) */
    BM_MPI_KIND_FLOAT,   /* float, double, long double (and Fortran REAL...) */
    BM_MPI_KIND_COMPLEX, /* C and Fortran complex types */
    BM_MPI_KIND_BOOL,    /* MPI_C_BOOL, MPI_CXX_BOOL */
    BM_MPI_KIND_LOGICAL, /* Fortran LOGICAL: an int, 0 is false */
    BM_MPI_KIND_BYTE,    /* MPI_BYTE: no arithmetic, only bitwise ops */
    BM_MPI_KIND_CHAR,    /* MPI_CHAR: a C integer for reductions (as Open MPI) */
    BM_MPI_KIND_TEXT,    /* MPI_WCHAR, MPI_CHARACTER, MPI_PACKED: no reduction at all */
    BM_MPI_KIND_PAIR,    /* value-index pairs for MAXLOC/MINLOC */
    BM_MPI_KIND_MARKER,  /* MPI_LB, MPI_UB: bounds only, no data */
    BM_MPI_KIND_DERIVED, /* a derived type of several basic types (or none) */
};

#ifdef __SIZEOF_INT128__
/* The C type of MPI_INTEGER16 (mpi.h provides it where this exists). */
__extension__ typedef __int128 bm_mpi_int128;
__extension__ typedef unsigned __int128 bm_mpi_uint128;
#endif

/* One entry per predefined datatype (same order as BM_MPI_PREDEFINED_TYPES). */
enum bm_mpi_type_id {
#define BM_MPI_TYPE_ID(mpiname, objname) BM_MPI_TYPE_ID_##objname,
    BM_MPI_PREDEFINED_TYPES(BM_MPI_TYPE_ID)
#undef BM_MPI_TYPE_ID
        BM_MPI_TYPE_ID_COUNT
};

struct bm_util_dtype;

struct bm_mpi_datatype {
    uint32_t magic;
    enum bm_mpi_type_id id; /* BM_MPI_TYPE_ID_COUNT for derived types */
    enum bm_mpi_type_kind kind;
    size_t size;     /* bytes of data in one element (packed) */
    MPI_Aint lb;     /* lower bound */
    MPI_Aint extent; /* stride between consecutive elements */
    bool is_signed;  /* integers: signed or unsigned arithmetic */
    /* Any number of elements is one run of count * size bytes at buf +
     * bm_mpi_type_offset(dt) (no gaps, no padding): moves need no packing. */
    bool contiguous;
    bool predefined;
    bool committed; /* usable in communication (predefined types always are) */
    /* The one predefined type this one is made of (NULL when it mixes
     * several or holds none), and how many of them one element holds:
     * predefined reductions run on basic_count * count basic elements. A
     * predefined type is its own basic type (basic_count 1). */
    MPI_Datatype basic;
    size_t basic_count;
    int refcount;     /* derived types: the handle plus users (types built on it,
                       * persistent requests, get_contents handles) */
    const char *name; /* "MPI_INT"; derived types point at name_buf */
    char name_buf[MPI_MAX_OBJECT_NAME];
    /* The engine's description (util/dtype.h): packing, pieces, walks. */
    struct bm_util_dtype *dt;
    /* How it was made (MPI_Type_get_envelope/contents). */
    int combiner;
    int nints, naddrs, ntypes;
    int *ints;
    MPI_Aint *addrs;
    MPI_Datatype *types;       /* each retained */
    struct bm_mpi_attr *attrs; /* cached attributes (attr.c via datatype_attr.c) */
};

enum bm_mpi_op_id {
#define BM_MPI_OP_ID(mpiname, objname) BM_MPI_OP_ID_##objname,
    BM_MPI_PREDEFINED_OPS(BM_MPI_OP_ID)
#undef BM_MPI_OP_ID
        BM_MPI_OP_ID_USER
};

struct bm_mpi_op {
    uint32_t magic;
    enum bm_mpi_op_id id;
    MPI_User_function *user_fn; /* user ops only */
    bool commutative;
    bool predefined;
    bool freed;       /* MPI_Op_free came while a collective still held it */
    int refcount;     /* user ops: the handle + pending collectives using it */
    const char *name; /* "MPI_SUM", "user-defined operation" */
};

/* ---- Library state (init.c) -------------------------------------------- */

enum bm_mpi_state {
    BM_MPI_STATE_NOT_INITIALIZED = 0,
    BM_MPI_STATE_RUNNING,
    BM_MPI_STATE_FINALIZED,
};
extern enum bm_mpi_state bm_mpi_state;
/* True while the runtime is up (fatal errors then end the job through it). */
extern bool bm_mpi_rte_up;

/* ---- MPI_THREAD_MULTIPLE (mt.c) ------------------------------------------ */

/* Granted MPI_THREAD_MULTIPLE: the MPI layer's few locks are taken. */
extern bool bm_mpi_mt;
void bm_mpi_mt_init(bool on);
/* The lock of the process-wide object tables (attribute keys, context id
 * slots); recursive. Never held while the PML or a program's callback is
 * called: a thread holding the PML's progress lock may need it (a
 * communicator destroyed from a progress hook frees its context slot). */
void bm_mpi_obj_lock(void);
void bm_mpi_obj_unlock(void);
/* The attached buffer of buffered sends (held across the send that uses it). */
void bm_mpi_bsend_lock(void);
void bm_mpi_bsend_unlock(void);
/* Reference counts of objects that threads share (datatypes, error
 * handlers): atomic under MPI_THREAD_MULTIPLE. put returns true when the
 * count reached zero (the caller frees). */
static inline void bm_mpi_ref_get(int *ref)
{
    if (bm_mpi_mt)
        __atomic_fetch_add(ref, 1, __ATOMIC_RELAXED);
    else
        ++*ref;
}
static inline bool bm_mpi_ref_put(int *ref)
{
    if (bm_mpi_mt)
        return __atomic_sub_fetch(ref, 1, __ATOMIC_ACQ_REL) == 0;
    return --*ref == 0;
}

/* ---- Errors (errhandler.c) --------------------------------------------- */

/* Report an error raised by function fn ("MPI_Send") on comm (NULL or an
 * invalid handle: MPI_COMM_WORLD's handler is used) and apply the error
 * handler: MPI_ERRORS_ARE_FATAL prints
 * "MPI_Send on rank 3 (host h): MPI_ERR_RANK: invalid rank 9 (communicator has 4 ranks)"
 * and ends the job through bm_rte_abort; MPI_ERRORS_RETURN returns errclass;
 * a user handler is called and errclass returned. Before MPI_Init or after
 * MPI_Finalize, a fatal error prints the message and exits the process. */
int bm_mpi_error(MPI_Comm comm, int errclass, const char *fn, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The message bm_mpi_error prints into msg: "MPI_Send on rank 3 (host h):
 * MPI_ERR_RANK: detail". */
void bm_mpi_error_format(char *msg, size_t len, const char *fn, int code, const char *detail);
/* MPI_ERRORS_ARE_FATAL: print msg and end the job (the process alone
 * before MPI_Init or after MPI_Finalize). For objects other than
 * communicators (windows: win.c), which dispatch their own handlers. */
__attribute__((noreturn)) void bm_mpi_error_abort(const char *msg);

/* The error reported when fn is called outside Init..Finalize. */
int bm_mpi_error_not_running(const char *fn);

/* Error codes of bitmover's own above MPI_ERR_LASTCODE: the class says what
 * kind of error, the code's string exactly what (MPI_Error_string). */
#define BM_MPI_ERRCODE_INIT_TWICE          (MPI_ERR_LASTCODE + 1) /* class MPI_ERR_OTHER */
#define BM_MPI_ERRCODE_INIT_AFTER_FINALIZE (MPI_ERR_LASTCODE + 2) /* class MPI_ERR_OTHER */

/* The class of an error code (a class is its own), or -1 for no code. */
int bm_mpi_error_class_of(int code);
/* The largest error code in use (the MPI_LASTUSEDCODE attribute). */
int bm_mpi_error_lastused(void);
/* Reset MPI_FILE_NULL's handler (MPI_Finalize). */
void bm_mpi_errhandler_finalize(void);

/* MPI error class for a bitmover status (BM_ERR_TRUNCATE -> MPI_ERR_TRUNCATE...). */
int bm_mpi_class_of_status(int status);

/* "MPI_ERR_RANK" for a class or a code of that class; "MPI_ERR_UNKNOWN" for
 * anything else. */
const char *bm_mpi_error_class_name(int errclass);

/* Reference counting of user error handlers, used by communicators. */
void bm_mpi_errhandler_retain(MPI_Errhandler eh);
void bm_mpi_errhandler_release(MPI_Errhandler eh);

/* ---- Argument checks: 0, or the class after bm_mpi_error ---------------- */

static inline int bm_mpi_check_initialized(const char *fn)
{
    return bm_mpi_state == BM_MPI_STATE_RUNNING ? MPI_SUCCESS : bm_mpi_error_not_running(fn);
}

/* True when comm is a live communicator (not MPI_COMM_NULL, right magic). */
static inline bool bm_mpi_comm_valid(MPI_Comm comm)
{
    return comm != MPI_COMM_NULL && comm->magic == BM_MPI_MAGIC_COMM;
}

/* True when comm is a communicator object still in memory: live, or freed
 * by the program but kept by references (its error handler still applies
 * to the operations pending on it). */
static inline bool bm_mpi_comm_alive(MPI_Comm comm)
{
    return comm != MPI_COMM_NULL &&
           (comm->magic == BM_MPI_MAGIC_COMM || comm->magic == BM_MPI_MAGIC_COMM_FREED);
}

int bm_mpi_check_comm(MPI_Comm comm, const char *fn);
/* A live intra-communicator (MPI_ERR_COMM for an inter-communicator:
 * topologies, MPI_Comm_create_group...). */
int bm_mpi_check_intra(MPI_Comm comm, const char *fn);
/* count >= 0. */
int bm_mpi_check_count(MPI_Comm comm, int count, const char *fn);
/* A committed datatype (not MPI_DATATYPE_NULL, right magic). */
int bm_mpi_check_datatype(MPI_Comm comm, MPI_Datatype dt, const char *fn);
/* A buffer may be NULL only when it holds no data, or with a derived type
 * (MPI_BOTTOM and absolute displacements). */
int bm_mpi_check_buffer(MPI_Comm comm, const void *buf, int count, MPI_Datatype dt, const char *fn);
/* 0 <= tag <= MPI_TAG_UB, or MPI_ANY_TAG when allow_any (receives, probes). */
int bm_mpi_check_tag(MPI_Comm comm, int tag, bool allow_any, const char *fn);

#define BM_MPI_RANK_ALLOW_PROC_NULL 0x1 /* MPI_PROC_NULL is a valid peer */
#define BM_MPI_RANK_ALLOW_ANY       0x2 /* MPI_ANY_SOURCE is valid (receives, probes) */
/* 0 <= rank < peer_size (the remote group's size in an
 * inter-communicator), or the special values that flags allow. */
int bm_mpi_check_rank(MPI_Comm comm, int rank, unsigned flags, const char *fn);
/* 0 <= root < size (MPI_ERR_ROOT). */
int bm_mpi_check_root(MPI_Comm comm, int root, const char *fn);
/* A valid operation (MPI_ERR_OP), usable on dt (MPI_ERR_OP when not defined for it). */
int bm_mpi_check_op(MPI_Comm comm, MPI_Op op, MPI_Datatype dt, const char *fn);

/* ---- Communicators (comm.c) -------------------------------------------- */

/* World rank of rank in comm's (local) group (rank must be valid). */
static inline int bm_mpi_comm_world_rank(MPI_Comm comm, int rank)
{
    return comm->world_ranks ? comm->world_ranks[rank] : rank;
}

/* World rank of the process that point-to-point rank names in comm: a
 * member of the group, or of the remote group of an inter-communicator. */
static inline int bm_mpi_comm_peer_world(MPI_Comm comm, int rank)
{
    return comm->peer_world_ranks ? comm->peer_world_ranks[rank] : rank;
}

/* References (mpi_internal.h's struct comment): a pending operation on
 * comm holds one, so that MPI_Comm_free may come first. Release destroys
 * the communicator with the last reference and frees its context ids once
 * the PML has let go of them. Requests made by bm_mpi_request_create take
 * and drop theirs by themselves. */
static inline void bm_mpi_comm_retain(MPI_Comm comm)
{
    bm_mpi_ref_get(&comm->refcount);
}
void bm_mpi_comm_destroy(MPI_Comm comm);
static inline void bm_mpi_comm_release(MPI_Comm comm)
{
    if (bm_mpi_ref_put(&comm->refcount))
        bm_mpi_comm_destroy(comm);
}

/* The handle of comm goes away (MPI_Comm_free, a failed creation): mark it
 * freed and drop the handle's reference, with an inter-communicator's
 * local_comm. */
void bm_mpi_comm_free_handle(MPI_Comm comm);
/* MPI_Comm_dup's work on a valid comm (also MPI_Comm_dup_with_info): agree
 * on a slot, then bm_mpi_comm_dup_on_slot. */
int bm_mpi_comm_dup_as(MPI_Comm comm, MPI_Comm *newcomm, const char *fn);
/* A duplicate of comm on an agreed slot: the same groups, topology, hints
 * (info: MPI_INFO_NULL copies comm's, else a copy of info) and the
 * attributes its copy callbacks keep. Frees the slot on failure. */
int bm_mpi_comm_dup_on_slot(MPI_Comm comm, uint32_t slot, MPI_Info info, MPI_Comm *newcomm,
                            const char *fn);

/* ---- Inter-communicators (intercomm.c) ---------------------------------- */

/* The context-slot reduction over both groups of an inter-communicator
 * (ctx is the MPI_Comm; bm_mpi_cid_reduce_fn). */
int bm_mpi_intercomm_reduce(void *ctx, uint32_t v[2], const char *fn);
/* A copy of inter-communicator comm's groups on an agreed slot. */
int bm_mpi_intercomm_dup_on_slot(MPI_Comm comm, uint32_t slot, MPI_Comm *newcomm, const char *fn);
/* MPI_Comm_split of an inter-communicator (arguments checked). */
int bm_mpi_intercomm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm, const char *fn);
/* MPI_Comm_create of an inter-communicator: group is a subgroup of the
 * local group (or MPI_GROUP_EMPTY); MPI_COMM_NULL where either side's
 * subgroup is empty. */
int bm_mpi_intercomm_create_sub(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm, const char *fn);

/* Set up MPI_COMM_WORLD and MPI_COMM_SELF from the runtime (MPI_Init). */
int bm_mpi_comm_init(void);
/* Free what communicators hold (MPI_Finalize). */
void bm_mpi_comm_finalize(void);
/* Collective over parent (an intra-communicator): agree on a context id,
 * then (when myrank is not MPI_UNDEFINED) make a communicator of the n
 * processes world_ranks (copied), in which this process has rank myrank;
 * otherwise *newcomm is MPI_COMM_NULL. The new communicator inherits
 * parent's error handler. */
int bm_mpi_comm_create_from(MPI_Comm parent, const int *world_ranks, int n, int myrank,
                            MPI_Comm *newcomm, const char *fn);
/* Collective over the n processes world_ranks only (MPI_Comm_create_group):
 * they agree on a context id among themselves, using tag to keep apart
 * concurrent calls, and get a communicator in which this process (one of
 * them) has rank myrank. */
int bm_mpi_comm_create_group_from(MPI_Comm parent, const int *world_ranks, int n, int myrank,
                                  int tag, MPI_Comm *newcomm, const char *fn);
/* Collective over parent: a communicator of parent's first n ranks, in
 * order (topologies); the other ranks get MPI_COMM_NULL. */
int bm_mpi_comm_create_prefix(MPI_Comm parent, int n, MPI_Comm *newcomm, const char *fn);
/* The communicator's name for messages: "MPI_COMM_WORLD", or "(unnamed)". */
const char *bm_mpi_comm_label(MPI_Comm comm);

/* A new communicator object on context slot (0: none) with the given
 * groups (owned by it from now on; peer_world_ranks unused unless inter),
 * parent's error handler and a reference for the handle. On failure frees
 * the arrays, reports through parent and returns the class. */
int bm_mpi_comm_new(MPI_Comm parent, uint32_t slot, int rank, int size, int *world_ranks,
                    bool inter, int peer_size, int *peer_world_ranks, MPI_Comm *newcomm,
                    const char *fn);
/* A copy of comm's world_ranks (NULL stays NULL), or NULL with *ok false. */
int *bm_mpi_comm_ranks_dup(const int *world_ranks, int n, bool *ok);

/* ---- Context ids (comm_cid.c) ------------------------------------------- */

/* How the members of a new communicator combine their proposals: reduce
 * v[0..1] element-wise with MAX over all of them, in place, collectively.
 * ctx is the caller's; fn names the MPI function for errors. */
typedef int bm_mpi_cid_reduce_fn(void *ctx, uint32_t v[2], const char *fn);
/* The reduction that agrees on a slot over all of comm's processes (both
 * groups of an inter-communicator). */
bm_mpi_cid_reduce_fn *bm_mpi_comm_reducer(MPI_Comm comm);
/* Agree on a context slot that is free at every member (reduce says who
 * the members are), reserve it locally and return it. Usually one reduction
 * of 8 bytes; err_comm reports failures. */
int bm_mpi_cid_agree(bm_mpi_cid_reduce_fn *reduce, void *ctx, MPI_Comm err_comm, uint32_t *slot_out,
                     const char *fn);
/* The same one round at a time, for agreements that cannot block
 * (MPI_Comm_idup): propose (floor 1 for the first round) fills v for the
 * reduction and reserves this process's proposal; decide, given the
 * reduced v, says whether the slot is agreed (*done, *slot_out) or gives
 * the next round's floor; abandon drops the reservation of a round that
 * failed. decide reports running out of ids through err_comm. */
struct bm_mpi_cid_round {
    uint32_t mine;
    bool reserved;
};
void bm_mpi_cid_propose(uint32_t floor, struct bm_mpi_cid_round *round, uint32_t v[2]);
int bm_mpi_cid_decide(struct bm_mpi_cid_round *round, const uint32_t v[2], bool *done,
                      uint32_t *slot_out, uint32_t *floor_out, MPI_Comm err_comm, const char *fn);
void bm_mpi_cid_abandon(struct bm_mpi_cid_round *round);
/* The reduction over an intra-communicator (an allreduce): ctx is the MPI_Comm. */
int bm_mpi_cid_reduce_intra(void *ctx, uint32_t v[2], const char *fn);
/* The communicator on slot is gone: release its contexts in the PML and
 * make the slot free again (or keep retrying while the PML still holds
 * messages for it). */
void bm_mpi_cid_slot_free(uint32_t slot);
/* The first context id of slot. */
static inline uint32_t bm_mpi_cid_of_slot(uint32_t slot)
{
    return slot * BM_MPI_CONTEXTS_PER_SLOT;
}
/* Forget every slot (MPI_Init, MPI_Finalize). */
void bm_mpi_cid_reset(void);

/* ---- Handles as integers (handles.c) ------------------------------------ */

/* Forget the conversion tables (MPI_Finalize). */
void bm_mpi_handles_fini(void);

/* ---- Info (info.c) ------------------------------------------------------- */

/* Fill MPI_INFO_ENV (MPI_Init: argv may be NULL) / empty it (MPI_Finalize). */
void bm_mpi_info_env_init(int argc, char **argv, int thread_level, int world_size);
void bm_mpi_info_env_fini(void);

/* ---- Groups (group.c) --------------------------------------------------- */

/* A new group of n world ranks (copied); MPI_GROUP_EMPTY when n is 0. */
int bm_mpi_group_new(const int *world_ranks, int n, MPI_Group *group_out, const char *fn);

/* ---- Topologies (topo.c) ------------------------------------------------ */

struct bm_mpi_cart;
/* A copy for MPI_Comm_dup (NULL for NULL; NULL also when out of memory). */
struct bm_mpi_cart *bm_mpi_cart_dup(const struct bm_mpi_cart *cart);
void bm_mpi_cart_free(struct bm_mpi_cart *cart);
struct bm_mpi_graph;
struct bm_mpi_graph *bm_mpi_graph_dup(const struct bm_mpi_graph *graph);
void bm_mpi_graph_free(struct bm_mpi_graph *graph);
/* MPI_GRAPH or MPI_DIST_GRAPH. */
int bm_mpi_graph_kind(const struct bm_mpi_graph *graph);
/* The in- and out-neighbours of a graph or Cartesian communicator (in the
 * standard's order; Cartesian: per dimension the -1 then the +1 neighbour,
 * MPI_PROC_NULL at open edges, *cart_out set). The caller frees *in_out
 * (one block holding both lists). MPI_ERR_TOPOLOGY for a communicator
 * without a topology, reported as fn. */
int bm_mpi_topo_neighbors(MPI_Comm comm, int **in_out, int *nin, int **out_out, int *nout,
                          bool *cart_out, const char *fn);

/* ---- Attributes (attr.c) ----------------------------------------------- */

/* The engine behind the communicator, datatype and window attribute calls.
 * An owner is an object's attribute list, the handle its callbacks get,
 * and (optional) how errors on it are reported: error(obj, class, fn, msg)
 * returns the class after the object's handler ran; NULL: through the
 * communicator (kind COMM) or MPI_COMM_WORLD. Keys are made for one kind. */
enum bm_mpi_attr_kind {
    BM_MPI_ATTR_COMM,
    BM_MPI_ATTR_TYPE,
    BM_MPI_ATTR_WIN,
    BM_MPI_ATTR_KINDS,
};
struct bm_mpi_attr;
struct bm_mpi_attr_owner {
    enum bm_mpi_attr_kind kind;
    void *obj; /* MPI_Comm, MPI_Datatype or MPI_Win */
    struct bm_mpi_attr **list;
    int (*error)(void *obj, int errclass, const char *fn, const char *msg);
};
/* MPI_*_create_keyval / free_keyval (the callbacks of kind's own types). */
int bm_mpi_keyval_create(enum bm_mpi_attr_kind kind, void (*copy_fn)(void), void (*delete_fn)(void),
                         void *extra_state, int *keyval, const char *fn);
int bm_mpi_keyval_free(enum bm_mpi_attr_kind kind, int *keyval, const char *fn);
/* MPI_*_set_attr, get_attr (user keys), delete_attr on owner. */
int bm_mpi_attr_set(const struct bm_mpi_attr_owner *o, int keyval, void *value, const char *fn);
int bm_mpi_attr_get(const struct bm_mpi_attr_owner *o, int keyval, void *value_out, int *flag,
                    const char *fn);
int bm_mpi_attr_delete(const struct bm_mpi_attr_owner *o, int keyval, const char *fn);
/* Duplication: the copy callbacks of from's attributes onto to. */
int bm_mpi_attr_copy_list(const struct bm_mpi_attr_owner *from, const struct bm_mpi_attr_owner *to,
                          const char *fn);
/* Freeing the object: every delete callback (newest first), then nothing left. */
int bm_mpi_attr_delete_list(const struct bm_mpi_attr_owner *o, const char *fn);
/* Drop the attributes without callbacks (a duplicate that failed). */
void bm_mpi_attr_drop_list(struct bm_mpi_attr **list);

/* MPI_Comm_dup: run the copy callbacks of oldcomm's attributes onto newcomm. */
int bm_mpi_attr_copy_all(MPI_Comm oldcomm, MPI_Comm newcomm, const char *fn);
/* Run the delete callbacks of every attribute of comm (newest first) and drop them. */
int bm_mpi_attr_delete_all(MPI_Comm comm, const char *fn);
/* Drop every attribute of comm without calling delete callbacks. */
void bm_mpi_attr_drop_all(MPI_Comm comm);

/* ---- Collectives (coll_*.c) --------------------------------------------- */

/* Tags in the collective context (context_id + 1) are the schedule
 * engine's (coll_sched.c: below bit 29), except those with one of these
 * bits. */
enum bm_mpi_coll_tag {
    /* MPI_Comm_create_group: this bit plus the low 30 bits of the user's tag. */
    BM_MPI_COLL_TAG_GROUP_BASE = 0x40000000,
    /* Inter-communicator set-up between the two leaders: this bit plus the
     * low 28 bits of MPI_Intercomm_create's tag (0 for the others). */
    BM_MPI_COLL_TAG_INTERCOMM_BASE = 0x20000000,
    BM_MPI_COLL_TAG_INTERCOMM_MASK = 0x0fffffff,
    /* MPI_Comm_idup: these bits plus the low 28 bits of the parent's count of
     * MPI_Comm_idup calls, so that concurrent ones never mix. */
    BM_MPI_COLL_TAG_IDUP_BASE = 0x30000000,
};

struct bm_pml_request;
struct bm_mpi_coll_comm;

/* Point-to-point steps outside the schedule engine (MPI_Comm_create_group),
 * on comm's collective context; peers are ranks in comm. Failures are
 * reported as fn (through the communicator's error handler) and return the
 * class. */
int bm_mpi_coll_isend(MPI_Comm comm, const void *buf, size_t bytes, int peer, int tag,
                      struct bm_pml_request **req_out, const char *fn);
/* Start a receive that must bring exactly bytes from peer; complete it with
 * bm_mpi_coll_irecv_wait, which checks the length and frees the request. */
int bm_mpi_coll_irecv(MPI_Comm comm, void *buf, size_t bytes, int peer, int tag,
                      struct bm_pml_request **req_out, const char *fn);
int bm_mpi_coll_irecv_wait(MPI_Comm comm, struct bm_pml_request *req, size_t bytes, int peer,
                           const char *fn);
/* Wait for a send started by bm_mpi_coll_isend and free it. */
int bm_mpi_coll_wait(MPI_Comm comm, struct bm_pml_request *req, int peer, const char *fn);
/* Receive exactly bytes from peer (a different length is MPI_ERR_TRUNCATE:
 * the ranks passed different counts or datatypes). */
int bm_mpi_coll_recv(MPI_Comm comm, void *buf, size_t bytes, int peer, int tag, const char *fn);
/* Send sbuf to dst and receive rbuf (exactly rbytes) from src, in either order. */
int bm_mpi_coll_sendrecv(MPI_Comm comm, const void *sbuf, size_t sbytes, int dst, void *rbuf,
                         size_t rbytes, int src, int tag, const char *fn);

/* MPI_Barrier, MPI_Bcast and MPI_Allreduce for the library's own use
 * (communicator creation, finalize): the same algorithms as the MPI
 * functions. Arguments are trusted; failures are reported as fn and return
 * the class. */
int bm_mpi_coll_barrier(MPI_Comm comm, const char *fn);
int bm_mpi_coll_bcast(void *buf, size_t bytes, int root, MPI_Comm comm, const char *fn);
/* sendbuf may be MPI_IN_PLACE (the data is in recvbuf). */
int bm_mpi_coll_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                          MPI_Comm comm, const char *fn);
/* recvbuf receives comm->size blocks of bytes, in rank order. */
int bm_mpi_coll_allgather_bytes(const void *sendbuf, void *recvbuf, size_t bytes, MPI_Comm comm,
                                const char *fn);
/* Release the collective state of comm (cached schedules); called when the
 * communicator is destroyed. */
void bm_mpi_coll_comm_free(MPI_Comm comm);
/* Release the predefined communicators' collective state and the scratch
 * memory kept (MPI_Finalize). */
void bm_mpi_coll_finalize(void);

/* ---- Datatypes (datatype.c) -------------------------------------------- */

/* Bytes of memory that count elements of dt span from the buffer address
 * (count * extent), for code that moves a buffer as it lies in memory. Only
 * right for contiguous types (dt->contiguous, lb 0); everything else must
 * go through the convertor (bm_mpi_type_pack...), see
 * notes/datatype-api.md. */
static inline size_t bm_mpi_type_bytes(MPI_Datatype dt, int count)
{
    return (size_t)count * (size_t)dt->extent;
}

/* Bytes of data in count elements: what travels on the wire (packed). */
static inline size_t bm_mpi_type_packed_bytes(MPI_Datatype dt, size_t count)
{
    return count * dt->size;
}

/* Where the data of a contiguous (count, dt) starts, relative to the
 * buffer (the type's first byte, true_lb for most types). */
MPI_Aint bm_mpi_type_offset(MPI_Datatype dt);

/* Keep a user operation alive while a nonblocking or persistent collective
 * holds it (MPI_Op_free may come first); no-ops on predefined operations. */
void bm_mpi_op_retain(MPI_Op op);
void bm_mpi_op_release(MPI_Op op);

/* Keep a derived datatype alive while something refers to it (MPI_Type_free
 * may come first); no-ops on predefined types. */
void bm_mpi_type_retain(MPI_Datatype dt);
void bm_mpi_type_release(MPI_Datatype dt);

/* Number of whole elements of dt in bytes of packed data received, or
 * MPI_UNDEFINED when bytes is not a multiple of the type's size: what
 * MPI_Get_count returns. A zero-size type gives 0. Counts beyond INT_MAX
 * also give MPI_UNDEFINED. */
int bm_mpi_type_count(MPI_Datatype dt, size_t bytes);

/* Packed bytes of the first count basic elements of a stream of dt
 * (MPI_Status_set_elements: what MPI_Get_elements turns back into count). */
size_t bm_mpi_type_elements_bytes(MPI_Datatype dt, MPI_Count count);

/* Pack bytes [offset, offset + len) of the packed stream of (count, dt) at
 * buf into dst, or unpack src into that range. */
void bm_mpi_type_pack(MPI_Datatype dt, const void *buf, size_t count, size_t offset, void *dst,
                      size_t len);
void bm_mpi_type_unpack(MPI_Datatype dt, void *buf, size_t count, size_t offset, const void *src,
                        size_t len);

/* Memory that count elements of dt touch, relative to buf: [*lo_out,
 * *lo_out + *span_out). A temporary buffer for (count, dt) is malloc(span)
 * used as buf = tmp - lo (what MPI calls true_lb and true extent). */
void bm_mpi_type_span(MPI_Datatype dt, size_t count, MPI_Aint *lo_out, size_t *span_out);

/* Value-index pair types: the basic types of the value and the index and
 * where the index lies (external32 converts each member). */
void bm_mpi_type_pair_parts(MPI_Datatype pair, MPI_Datatype *value_out, MPI_Datatype *index_out,
                            size_t *index_offset_out);
/* The predefined type of an engine basic id (a bm_mpi_type_id). */
MPI_Datatype bm_mpi_type_predefined(int id);

/* Type attributes (datatype_attr.c): copy callbacks for MPI_Type_dup,
 * delete callbacks for MPI_Type_free, and a silent drop when the object
 * goes. */
int bm_mpi_datatype_attr_copy_all(MPI_Datatype oldtype, MPI_Datatype newtype, const char *fn);
int bm_mpi_datatype_attr_delete_all(MPI_Datatype dt, const char *fn);
void bm_mpi_datatype_attr_drop_all(MPI_Datatype dt);

/* Run fn over every contiguous piece of (count, dt) at buf, in stream order
 * (stops at the first non-zero return, which it returns). */
typedef int (*bm_mpi_type_piece_fn)(char *addr, size_t len, void *arg);
int bm_mpi_type_for_pieces(MPI_Datatype dt, const void *buf, size_t count, bm_mpi_type_piece_fn fn,
                           void *arg);

/* ---- Operations (op.c) ------------------------------------------------- */

/* True when op is defined on dt (MPI_SUM on MPI_INT: yes; on MPI_2INT: no). */
bool bm_mpi_op_supports(MPI_Op op, MPI_Datatype dt);

/* inout[i] = in[i] op inout[i], i < count (the MPI order: in is the earlier
 * rank's contribution), both buffers in dt's layout (derived types
 * included: predefined ops reduce their basic elements where they lie).
 * op must support dt. */
void bm_mpi_op_apply(MPI_Op op, const void *in, void *inout, int count, MPI_Datatype dt);

#endif
