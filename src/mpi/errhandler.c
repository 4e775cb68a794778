/* MPI error handling: the predefined handlers MPI_ERRORS_ARE_FATAL and
 * MPI_ERRORS_RETURN, user handlers made with MPI_Comm_create_errhandler (and
 * the MPI-1 names) or MPI_File_create_errhandler, the error classes and
 * codes (the predefined classes, bitmover's own codes that name a common
 * mistake more precisely than its class, and those a program adds with
 * MPI_Add_error_class/code/string), and bm_mpi_error, the one path through
 * which every MPI entry point reports a failure. A fatal error names the function, the rank and
 * host, the error class and what exactly was wrong, then ends the whole job
 * through the runtime (bmrun kills the other ranks and reports the message).
 * Also the argument checks shared by all entry points, so that a bad
 * argument gives the same class and wording everywhere. */
#define BM_LOG_SUBSYS "mpi"
#include "mpi/mpi_internal.h"
#include "runtime/rte.h"
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* class, name, description (what the class means to a user). */
#define BM_MPI_ERROR_MAP(X)                                                                        \
    X(MPI_SUCCESS, "no error")                                                                     \
    X(MPI_ERR_BUFFER, "invalid buffer pointer")                                                    \
    X(MPI_ERR_COUNT, "invalid count argument")                                                     \
    X(MPI_ERR_TYPE, "invalid datatype")                                                            \
    X(MPI_ERR_TAG, "invalid tag")                                                                  \
    X(MPI_ERR_COMM, "invalid communicator")                                                        \
    X(MPI_ERR_RANK, "invalid rank")                                                                \
    X(MPI_ERR_REQUEST, "invalid request")                                                          \
    X(MPI_ERR_ROOT, "invalid root")                                                                \
    X(MPI_ERR_GROUP, "invalid group")                                                              \
    X(MPI_ERR_OP, "invalid reduce operation")                                                      \
    X(MPI_ERR_TOPOLOGY, "invalid topology")                                                        \
    X(MPI_ERR_DIMS, "invalid dimension argument")                                                  \
    X(MPI_ERR_ARG, "invalid argument of some other kind")                                          \
    X(MPI_ERR_UNKNOWN, "unknown error")                                                            \
    X(MPI_ERR_TRUNCATE, "message truncated: the receive buffer is too small")                      \
    X(MPI_ERR_OTHER, "known error not in this list")                                               \
    X(MPI_ERR_INTERN, "internal error in the MPI library")                                         \
    X(MPI_ERR_IN_STATUS, "error code is in the status")                                            \
    X(MPI_ERR_PENDING, "pending request")                                                          \
    X(MPI_ERR_ACCESS, "permission denied")                                                         \
    X(MPI_ERR_AMODE, "invalid file access mode")                                                   \
    X(MPI_ERR_ASSERT, "invalid assert argument")                                                   \
    X(MPI_ERR_BAD_FILE, "invalid file name")                                                       \
    X(MPI_ERR_BASE, "invalid base address")                                                        \
    X(MPI_ERR_CONVERSION, "data conversion error")                                                 \
    X(MPI_ERR_DISP, "invalid displacement")                                                        \
    X(MPI_ERR_DUP_DATAREP, "data representation already defined")                                  \
    X(MPI_ERR_FILE_EXISTS, "file exists")                                                          \
    X(MPI_ERR_FILE_IN_USE, "file in use by some process")                                          \
    X(MPI_ERR_FILE, "invalid file handle")                                                         \
    X(MPI_ERR_INFO_KEY, "info key too long")                                                       \
    X(MPI_ERR_INFO_NOKEY, "info key not defined")                                                  \
    X(MPI_ERR_INFO_VALUE, "info value too long")                                                   \
    X(MPI_ERR_INFO, "invalid info object")                                                         \
    X(MPI_ERR_IO, "input/output error")                                                            \
    X(MPI_ERR_KEYVAL, "invalid attribute key")                                                     \
    X(MPI_ERR_LOCKTYPE, "invalid lock type")                                                       \
    X(MPI_ERR_NAME, "name not published")                                                          \
    X(MPI_ERR_NO_MEM, "out of memory")                                                             \
    X(MPI_ERR_NOT_SAME, "collective argument not identical on all processes")                      \
    X(MPI_ERR_NO_SPACE, "not enough space")                                                        \
    X(MPI_ERR_NO_SUCH_FILE, "file does not exist")                                                 \
    X(MPI_ERR_PORT, "invalid port name")                                                           \
    X(MPI_ERR_QUOTA, "quota exceeded")                                                             \
    X(MPI_ERR_READ_ONLY, "read-only file or file system")                                          \
    X(MPI_ERR_RMA_CONFLICT, "conflicting accesses to a window")                                    \
    X(MPI_ERR_RMA_SYNC, "wrong synchronization of one-sided operations")                           \
    X(MPI_ERR_SERVICE, "invalid service name")                                                     \
    X(MPI_ERR_SIZE, "invalid size argument")                                                       \
    X(MPI_ERR_SPAWN, "error spawning processes")                                                   \
    X(MPI_ERR_UNSUPPORTED_DATAREP, "unsupported data representation")                              \
    X(MPI_ERR_UNSUPPORTED_OPERATION, "unsupported operation")                                      \
    X(MPI_ERR_WIN, "invalid window")                                                               \
    X(MPI_ERR_RMA_RANGE, "target memory outside the window")                                       \
    X(MPI_ERR_RMA_ATTACH, "memory cannot be attached to the window")                               \
    X(MPI_ERR_RMA_SHARED, "memory cannot be shared")                                               \
    X(MPI_ERR_RMA_FLAVOR, "wrong window flavor")                                                   \
    X(MPI_T_ERR_MEMORY, "MPI_T: out of memory")                                                    \
    X(MPI_T_ERR_NOT_INITIALIZED, "MPI_T: the tool interface is not initialized "                   \
                                 "(call MPI_T_init_thread first)")                                 \
    X(MPI_T_ERR_CANNOT_INIT, "MPI_T: the tool interface cannot be initialized")                    \
    X(MPI_T_ERR_INVALID_INDEX, "MPI_T: invalid variable or category index")                        \
    X(MPI_T_ERR_INVALID_ITEM, "MPI_T: invalid item index of an enumeration")                       \
    X(MPI_T_ERR_INVALID_HANDLE, "MPI_T: invalid variable handle")                                  \
    X(MPI_T_ERR_OUT_OF_HANDLES, "MPI_T: no more variable handles available")                       \
    X(MPI_T_ERR_OUT_OF_SESSIONS, "MPI_T: no more performance variable sessions available")         \
    X(MPI_T_ERR_INVALID_SESSION, "MPI_T: invalid performance variable session")                    \
    X(MPI_T_ERR_CVAR_SET_NOT_NOW, "MPI_T: the control variable cannot be set at this moment")      \
    X(MPI_T_ERR_CVAR_SET_NEVER, "MPI_T: the control variable can never be set")                    \
    X(MPI_T_ERR_PVAR_NO_STARTSTOP, "MPI_T: the performance variable cannot be started or stopped") \
    X(MPI_T_ERR_PVAR_NO_WRITE, "MPI_T: the performance variable cannot be written or reset")       \
    X(MPI_T_ERR_PVAR_NO_ATOMIC, "MPI_T: the performance variable cannot be read and reset "        \
                                "atomically")                                                      \
    X(MPI_T_ERR_INVALID_NAME, "MPI_T: no variable or category has this name")                      \
    X(MPI_T_ERR_INVALID, "MPI_T: invalid use of the tool interface (a NULL argument, a wrong "     \
                         "value)")

struct bm_mpi_error_entry {
    const char *name;
    const char *text;
};

#define BM_MPI_ERROR_ENTRY(cls, txt) [cls] = {#cls, txt},
static const struct bm_mpi_error_entry bm_mpi_errors[MPI_ERR_LASTCODE + 1] = {
    BM_MPI_ERROR_MAP(BM_MPI_ERROR_ENTRY)};
#undef BM_MPI_ERROR_ENTRY

struct bm_mpi_errhandler bm_mpi_errors_are_fatal_obj = {
    .magic = BM_MPI_MAGIC_ERRHANDLER, .kind = BM_MPI_ERRH_FATAL, .predefined = true};
struct bm_mpi_errhandler bm_mpi_errors_return_obj = {
    .magic = BM_MPI_MAGIC_ERRHANDLER, .kind = BM_MPI_ERRH_RETURN, .predefined = true};

static bool errclass_valid(int errclass)
{
    return errclass >= 0 && errclass <= MPI_ERR_LASTCODE && bm_mpi_errors[errclass].name;
}

/* Codes above MPI_ERR_LASTCODE: bitmover's own (a class and a text), then
 * the classes and codes a program adds (a class, and a text once set by
 * MPI_Add_error_string). Codes are numbered in one sequence; a class that a
 * program adds is a code whose class is itself. */
struct errcode {
    int cls;
    const char *text; /* bitmover's codes */
    char *user_text;  /* MPI_Add_error_string; NULL: none */
    bool added;       /* made by MPI_Add_error_class/code */
};

static const struct errcode builtin_codes[] = {
    [BM_MPI_ERRCODE_INIT_TWICE - MPI_ERR_LASTCODE -
     1] = {MPI_ERR_OTHER,
           "MPI is already initialized: MPI_Init or MPI_Init_thread was called a second time "
           "(MPI may be initialized once per process; MPI_Initialized tells whether it is)"},
    [BM_MPI_ERRCODE_INIT_AFTER_FINALIZE - MPI_ERR_LASTCODE -
        1] = {MPI_ERR_OTHER,
              "MPI_Init or MPI_Init_thread was called after MPI_Finalize; MPI cannot "
              "be initialized again"},
};
#define NBUILTIN ((int)(sizeof(builtin_codes) / sizeof(builtin_codes[0])))

/* Code MPI_ERR_LASTCODE + 1 + NBUILTIN + i. Entries are allocated one by
 * one and never move, so that a pointer code_entry returned stays valid
 * while another thread adds a code; under MPI_THREAD_MULTIPLE the array and
 * nadded change under the object lock (mt.c). */
static struct errcode **added_codes;
static int nadded;

#define FIRST_ADDED_CODE (MPI_ERR_LASTCODE + 1 + NBUILTIN)

/* The entry of a code above MPI_ERR_LASTCODE, or NULL. */
static const struct errcode *code_entry(int code)
{
    if (code > MPI_ERR_LASTCODE && code < FIRST_ADDED_CODE)
        return &builtin_codes[code - MPI_ERR_LASTCODE - 1];
    bm_mpi_obj_lock();
    const struct errcode *e = code >= FIRST_ADDED_CODE && code < FIRST_ADDED_CODE + nadded
                                  ? added_codes[code - FIRST_ADDED_CODE]
                                  : NULL;
    bm_mpi_obj_unlock();
    return e;
}

int bm_mpi_error_class_of(int code)
{
    if (errclass_valid(code))
        return code;
    const struct errcode *e = code_entry(code);
    return e ? e->cls : -1;
}

int bm_mpi_error_lastused(void)
{
    bm_mpi_obj_lock();
    int last = FIRST_ADDED_CODE + nadded - 1;
    bm_mpi_obj_unlock();
    return last;
}

const char *bm_mpi_error_class_name(int code)
{
    int cls = bm_mpi_error_class_of(code);
    if (errclass_valid(cls))
        return bm_mpi_errors[cls].name;
    return cls >= 0 ? "user-defined error class" : "MPI_ERR_UNKNOWN";
}

int bm_mpi_class_of_status(int status)
{
    switch (status) {
    case BM_OK:
        return MPI_SUCCESS;
    case BM_ERR_TRUNCATE:
        return MPI_ERR_TRUNCATE;
    case BM_ERR_TYPE_MISMATCH:
        return MPI_ERR_TYPE;
    case BM_ERR_NO_MEMORY:
        return MPI_ERR_NO_MEM;
    case BM_ERR_BAD_PARAM:
        return MPI_ERR_ARG;
    case BM_ERR_NOT_SUPPORTED:
        return MPI_ERR_UNSUPPORTED_OPERATION;
    case BM_ERR_ACCESS:
        return MPI_ERR_ACCESS;
    case BM_ERR_FAULT:
    case BM_ERR_PEER_FAULT:
        return MPI_ERR_BUFFER;
    case BM_ERR_PROTOCOL:
        return MPI_ERR_INTERN;
    default:
        return MPI_ERR_OTHER;
    }
}

static bool errhandler_valid(MPI_Errhandler eh)
{
    return eh != MPI_ERRHANDLER_NULL && eh->magic == BM_MPI_MAGIC_ERRHANDLER;
}

void bm_mpi_errhandler_retain(MPI_Errhandler eh)
{
    if (!eh->predefined)
        bm_mpi_ref_get(&eh->refcount);
}

void bm_mpi_errhandler_release(MPI_Errhandler eh)
{
    if (eh->predefined)
        return;
    if (bm_mpi_ref_put(&eh->refcount)) {
        eh->magic = 0;
        free(eh);
    }
}

/* Prints the message and ends the job. Before MPI_Init (or after
 * MPI_Finalize) there is no job to end: the process exits alone. */
void bm_mpi_error_abort(const char *msg)
{
    if (bm_mpi_rte_up) {
        bm_rte_abort(1, msg);
    }
    fprintf(stderr, "%s\n", msg);
    fflush(stderr);
    exit(EXIT_FAILURE);
}

static int error_dispatch(MPI_Comm comm, int errclass, const char *msg)
{
    MPI_Errhandler eh;

    if (!bm_mpi_comm_alive(comm))
        comm = MPI_COMM_WORLD;
    eh = comm->errhandler;
    switch (eh->kind) {
    case BM_MPI_ERRH_RETURN:
        bm_log_debug("%s (returned to the caller: MPI_ERRORS_RETURN)", msg);
        return errclass;
    case BM_MPI_ERRH_USER: {
        MPI_Comm c = comm;
        int code = errclass;
        bm_log_debug("%s (passed to the user error handler)", msg);
        if (eh->fn)
            eh->fn(&c, &code);
        return errclass;
    }
    case BM_MPI_ERRH_FATAL:
        break;
    }
    bm_mpi_error_abort(msg);
}

void bm_mpi_error_format(char *msg, size_t len, const char *fn, int code, const char *detail)
{
    if (bm_mpi_rte_up) {
        const struct bm_rte_proc *self = bm_rte_self();
        snprintf(msg, len, "%s on rank %d (host %s): %s: %s", fn, self->rank, self->hostname,
                 bm_mpi_error_class_name(code), detail);
    } else {
        snprintf(msg, len, "%s: %s: %s", fn, bm_mpi_error_class_name(code), detail);
    }
}

int bm_mpi_error(MPI_Comm comm, int errclass, const char *fn, const char *fmt, ...)
{
    char detail[512];
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    bm_mpi_error_format(msg, sizeof(msg), fn, errclass, detail);
    return error_dispatch(comm, errclass, msg);
}

int bm_mpi_error_not_running(const char *fn)
{
    if (bm_mpi_state == BM_MPI_STATE_FINALIZED)
        return bm_mpi_error(NULL, MPI_ERR_OTHER, fn,
                            "called after MPI_Finalize; no MPI call except MPI_Initialized, "
                            "MPI_Finalized and MPI_Get_version is allowed then");
    return bm_mpi_error(NULL, MPI_ERR_OTHER, fn,
                        "called before MPI_Init; call MPI_Init or MPI_Init_thread first");
}

/* ---- Argument checks ---------------------------------------------------- */

int bm_mpi_check_comm(MPI_Comm comm, const char *fn)
{
    if (comm == MPI_COMM_NULL)
        return bm_mpi_error(NULL, MPI_ERR_COMM, fn, "the communicator is MPI_COMM_NULL");
    if (comm->magic != BM_MPI_MAGIC_COMM)
        return bm_mpi_error(NULL, MPI_ERR_COMM, fn,
                            "the communicator handle %p is not a communicator (freed, or "
                            "another kind of handle)",
                            (void *)comm);
    return MPI_SUCCESS;
}

int bm_mpi_check_intra(MPI_Comm comm, const char *fn)
{
    int rc = bm_mpi_check_comm(comm, fn);
    if (rc)
        return rc;
    if (comm->inter)
        return bm_mpi_error(comm, MPI_ERR_COMM, fn,
                            "communicator %s is an inter-communicator; %s needs an "
                            "intra-communicator",
                            bm_mpi_comm_label(comm), fn);
    return MPI_SUCCESS;
}

int bm_mpi_check_count(MPI_Comm comm, int count, const char *fn)
{
    if (count < 0)
        return bm_mpi_error(comm, MPI_ERR_COUNT, fn, "negative count %d", count);
    return MPI_SUCCESS;
}

int bm_mpi_check_datatype(MPI_Comm comm, MPI_Datatype dt, const char *fn)
{
    if (dt == MPI_DATATYPE_NULL)
        return bm_mpi_error(comm, MPI_ERR_TYPE, fn, "the datatype is MPI_DATATYPE_NULL");
    if (dt->magic != BM_MPI_MAGIC_DATATYPE)
        return bm_mpi_error(comm, MPI_ERR_TYPE, fn,
                            "the datatype handle %p is not a datatype (freed, or another kind "
                            "of handle)",
                            (void *)dt);
    if (!dt->committed)
        return bm_mpi_error(comm, MPI_ERR_TYPE, fn,
                            "the datatype %s is not committed; call MPI_Type_commit first",
                            dt->name[0] ? dt->name : "(unnamed)");
    return MPI_SUCCESS;
}

int bm_mpi_check_buffer(MPI_Comm comm, const void *buf, int count, MPI_Datatype dt, const char *fn)
{
    /* A derived type may hold absolute addresses (MPI_Get_address) used
     * from MPI_BOTTOM, which is NULL here: only a predefined type makes a
     * NULL buffer certainly wrong (MPICH's rule). */
    if (buf == NULL && count > 0 && dt->size > 0 && dt->predefined)
        return bm_mpi_error(comm, MPI_ERR_BUFFER, fn, "NULL buffer for %d elements of %s", count,
                            dt->name);
    return MPI_SUCCESS;
}

int bm_mpi_check_tag(MPI_Comm comm, int tag, bool allow_any, const char *fn)
{
    if (tag == MPI_ANY_TAG && allow_any)
        return MPI_SUCCESS;
    if (tag < 0 || tag > BM_MPI_TAG_UB)
        return bm_mpi_error(comm, MPI_ERR_TAG, fn, "invalid tag %d (valid tags: 0 to %d%s)", tag,
                            BM_MPI_TAG_UB, allow_any ? " and MPI_ANY_TAG" : "");
    return MPI_SUCCESS;
}

int bm_mpi_check_rank(MPI_Comm comm, int rank, unsigned flags, const char *fn)
{
    if (rank >= 0 && rank < comm->peer_size)
        return MPI_SUCCESS;
    if (rank == MPI_PROC_NULL && (flags & BM_MPI_RANK_ALLOW_PROC_NULL))
        return MPI_SUCCESS;
    if (rank == MPI_ANY_SOURCE && (flags & BM_MPI_RANK_ALLOW_ANY))
        return MPI_SUCCESS;
    return bm_mpi_error(comm, MPI_ERR_RANK, fn, "invalid rank %d (%s %s has %d rank%s)", rank,
                        comm->inter ? "the remote group of inter-communicator" : "communicator",
                        bm_mpi_comm_label(comm), comm->peer_size, comm->peer_size == 1 ? "" : "s");
}

int bm_mpi_check_root(MPI_Comm comm, int root, const char *fn)
{
    if (root >= 0 && root < comm->size)
        return MPI_SUCCESS;
    return bm_mpi_error(comm, MPI_ERR_ROOT, fn, "invalid root %d (communicator %s has %d rank%s)",
                        root, bm_mpi_comm_label(comm), comm->size, comm->size == 1 ? "" : "s");
}

int bm_mpi_check_op(MPI_Comm comm, MPI_Op op, MPI_Datatype dt, const char *fn)
{
    if (op == MPI_OP_NULL)
        return bm_mpi_error(comm, MPI_ERR_OP, fn, "the operation is MPI_OP_NULL");
    if (op->magic != BM_MPI_MAGIC_OP || op->freed)
        return bm_mpi_error(comm, MPI_ERR_OP, fn,
                            "the operation handle %p is not an operation (freed, or another "
                            "kind of handle)",
                            (void *)op);
    if (op == MPI_REPLACE || op == MPI_NO_OP)
        return bm_mpi_error(comm, MPI_ERR_OP, fn,
                            "%s is only valid in one-sided accumulate operations", op->name);
    if (!bm_mpi_op_supports(op, dt))
        return bm_mpi_error(comm, MPI_ERR_OP, fn, "%s is not defined for datatype %s", op->name,
                            dt->name);
    return MPI_SUCCESS;
}

/* ---- MPI functions ------------------------------------------------------ */

static int errhandler_new(MPI_Comm_errhandler_function *comm_fn,
                          MPI_File_errhandler_function *file_fn, MPI_Errhandler *errhandler,
                          const char *fn)
{
    struct bm_mpi_errhandler *eh;
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if ((comm_fn == NULL && file_fn == NULL) || errhandler == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL %s",
                            errhandler ? "handler function" : "errhandler pointer");
    eh = calloc(1, sizeof(*eh));
    if (eh == NULL)
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    eh->magic = BM_MPI_MAGIC_ERRHANDLER;
    eh->kind = BM_MPI_ERRH_USER;
    eh->fn = comm_fn;
    eh->file_fn = file_fn;
    eh->refcount = 1;
    *errhandler = eh;
    return MPI_SUCCESS;
}

int PMPI_Comm_create_errhandler(MPI_Comm_errhandler_function *function, MPI_Errhandler *errhandler)
{
    return errhandler_new(function, NULL, errhandler, "MPI_Comm_create_errhandler");
}
BM_MPI_ALIAS(Comm_create_errhandler);

/* A handler usable on a communicator: predefined, or made for communicators. */
static int check_comm_errhandler(MPI_Comm comm, MPI_Errhandler errhandler, const char *fn)
{
    if (!errhandler_valid(errhandler))
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "invalid error handler %p", (void *)errhandler);
    if (errhandler->kind == BM_MPI_ERRH_USER && !errhandler->fn)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn,
                            "the error handler was not made by MPI_Comm_create_errhandler; a "
                            "communicator needs one that was");
    return MPI_SUCCESS;
}

int PMPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler)
{
    static const char fn[] = "MPI_Comm_set_errhandler";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)) ||
        (rc = check_comm_errhandler(comm, errhandler, fn)))
        return rc;
    bm_mpi_errhandler_retain(errhandler);
    bm_mpi_errhandler_release(comm->errhandler);
    comm->errhandler = errhandler;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Comm_set_errhandler);

int PMPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler)
{
    static const char fn[] = "MPI_Comm_get_errhandler";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)))
        return rc;
    if (errhandler == NULL)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL errhandler pointer");
    /* The caller owns a reference and frees it with MPI_Errhandler_free. */
    bm_mpi_errhandler_retain(comm->errhandler);
    *errhandler = comm->errhandler;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Comm_get_errhandler);

/* What a code means, for the message of an error the program raises. */
static void code_text(int code, char *buf, size_t len)
{
    const struct errcode *e = code_entry(code);
    if (errclass_valid(code))
        snprintf(buf, len, "%s", bm_mpi_errors[code].text);
    else if (e && (e->text || e->user_text))
        snprintf(buf, len, "%s", e->text ? e->text : e->user_text);
    else if (e)
        snprintf(buf, len, "error code %d (no string set)", code);
    else
        snprintf(buf, len, "unknown error code %d", code);
}

int PMPI_Comm_call_errhandler(MPI_Comm comm, int errorcode)
{
    static const char fn[] = "MPI_Comm_call_errhandler";
    char text[MPI_MAX_ERROR_STRING];
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)))
        return rc;
    code_text(errorcode, text, sizeof(text));
    bm_mpi_error(comm, errorcode, fn, "error raised by the application: %s", text);
    /* The call itself succeeded (the handler ran). */
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Comm_call_errhandler);

/* ---- MPI-1 names of the communicator calls ---------------------------------------- */

int PMPI_Errhandler_create(MPI_Handler_function *function, MPI_Errhandler *errhandler)
{
    return errhandler_new(function, NULL, errhandler, "MPI_Errhandler_create");
}
BM_MPI_ALIAS(Errhandler_create);

int PMPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler)
{
    return PMPI_Comm_set_errhandler(comm, errhandler);
}
BM_MPI_ALIAS(Errhandler_set);

int PMPI_Errhandler_get(MPI_Comm comm, MPI_Errhandler *errhandler)
{
    return PMPI_Comm_get_errhandler(comm, errhandler);
}
BM_MPI_ALIAS(Errhandler_get);

/* ---- files ---------------------------------------------------------------------------
 * MPI-IO is not provided, so the only file is MPI_FILE_NULL, whose handler
 * the standard makes the default of file operations (MPI_ERRORS_RETURN until
 * changed); it can be set, read and called like any other. */

static MPI_Errhandler file_null_errhandler = &bm_mpi_errors_return_obj;

static int check_file(MPI_File file, const char *fn)
{
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (file != MPI_FILE_NULL)
        return bm_mpi_error(NULL, MPI_ERR_FILE, fn,
                            "invalid file handle %p: bitmover provides no MPI-IO, so "
                            "MPI_FILE_NULL is the only file",
                            (void *)file);
    return MPI_SUCCESS;
}

int PMPI_File_create_errhandler(MPI_File_errhandler_function *function, MPI_Errhandler *errhandler)
{
    return errhandler_new(NULL, function, errhandler, "MPI_File_create_errhandler");
}
BM_MPI_ALIAS(File_create_errhandler);

int PMPI_File_set_errhandler(MPI_File file, MPI_Errhandler errhandler)
{
    static const char fn[] = "MPI_File_set_errhandler";
    int rc;
    if ((rc = check_file(file, fn)))
        return rc;
    if (!errhandler_valid(errhandler))
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "invalid error handler %p", (void *)errhandler);
    if (errhandler->kind == BM_MPI_ERRH_USER && !errhandler->file_fn)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn,
                            "the error handler was not made by MPI_File_create_errhandler; a "
                            "file needs one that was");
    bm_mpi_errhandler_retain(errhandler);
    bm_mpi_errhandler_release(file_null_errhandler);
    file_null_errhandler = errhandler;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(File_set_errhandler);

int PMPI_File_get_errhandler(MPI_File file, MPI_Errhandler *errhandler)
{
    static const char fn[] = "MPI_File_get_errhandler";
    int rc;
    if ((rc = check_file(file, fn)))
        return rc;
    if (!errhandler)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL errhandler pointer");
    bm_mpi_errhandler_retain(file_null_errhandler);
    *errhandler = file_null_errhandler;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(File_get_errhandler);

int PMPI_File_call_errhandler(MPI_File fh, int errorcode)
{
    static const char fn[] = "MPI_File_call_errhandler";
    char text[MPI_MAX_ERROR_STRING], msg[1024];
    int rc;
    if ((rc = check_file(fh, fn)))
        return rc;
    MPI_Errhandler eh = file_null_errhandler;
    code_text(errorcode, text, sizeof(text));
    switch (eh->kind) {
    case BM_MPI_ERRH_RETURN:
        break;
    case BM_MPI_ERRH_USER: {
        MPI_File f = fh;
        int code = errorcode;
        eh->file_fn(&f, &code);
        break;
    }
    case BM_MPI_ERRH_FATAL: {
        char detail[MPI_MAX_ERROR_STRING + 64];
        snprintf(detail, sizeof(detail), "error raised by the application on MPI_FILE_NULL: %s",
                 text);
        bm_mpi_error_format(msg, sizeof(msg), fn, errorcode, detail);
        bm_mpi_error_abort(msg);
    }
    }
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(File_call_errhandler);

void bm_mpi_errhandler_finalize(void)
{
    bm_mpi_errhandler_release(file_null_errhandler);
    file_null_errhandler = &bm_mpi_errors_return_obj;
}

int PMPI_Errhandler_free(MPI_Errhandler *errhandler)
{
    static const char fn[] = "MPI_Errhandler_free";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (errhandler == NULL || !errhandler_valid(*errhandler))
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "invalid error handler");
    bm_mpi_errhandler_release(*errhandler);
    *errhandler = MPI_ERRHANDLER_NULL;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Errhandler_free);

/* ---- classes, codes and strings ------------------------------------------------------ */

int PMPI_Error_string(int errorcode, char *string, int *resultlen)
{
    const struct errcode *e = code_entry(errorcode);
    int n;

    if (string == NULL || resultlen == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, "MPI_Error_string", "NULL output argument");
    if (errclass_valid(errorcode))
        n = snprintf(string, MPI_MAX_ERROR_STRING, "%s: %s", bm_mpi_errors[errorcode].name,
                     bm_mpi_errors[errorcode].text);
    else if (e && e->text)
        n = snprintf(string, MPI_MAX_ERROR_STRING, "%s: %s", bm_mpi_errors[e->cls].name, e->text);
    else if (e) /* added by the program: its string, or the empty string */
        n = snprintf(string, MPI_MAX_ERROR_STRING, "%s", e->user_text ? e->user_text : "");
    else
        n = snprintf(string, MPI_MAX_ERROR_STRING, "MPI_ERR_UNKNOWN: unknown error code %d",
                     errorcode);
    *resultlen = n < MPI_MAX_ERROR_STRING ? n : MPI_MAX_ERROR_STRING - 1;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Error_string);

int PMPI_Error_class(int errorcode, int *errorclass)
{
    if (errorclass == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, "MPI_Error_class", "NULL errorclass pointer");
    int cls = bm_mpi_error_class_of(errorcode);
    if (cls < 0)
        return bm_mpi_error(NULL, MPI_ERR_ARG, "MPI_Error_class", "invalid error code %d",
                            errorcode);
    *errorclass = cls;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Error_class);

/* A new code of class cls (cls < 0: a new class, its own class). */
static int code_add(int cls, int *code_out, const char *fn)
{
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (!code_out)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL output pointer");
    struct errcode *e = calloc(1, sizeof(*e));
    bm_mpi_obj_lock();
    struct errcode **grown = realloc(added_codes, sizeof(*grown) * (size_t)(nadded + 1));
    if (!grown || !e) {
        if (grown)
            added_codes = grown;
        bm_mpi_obj_unlock();
        free(e);
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    added_codes = grown;
    int code = FIRST_ADDED_CODE + nadded;
    *e = (struct errcode){.cls = cls < 0 ? code : cls, .added = true};
    added_codes[nadded++] = e;
    bm_mpi_obj_unlock();
    *code_out = code;
    return MPI_SUCCESS;
}

int PMPI_Add_error_class(int *errorclass)
{
    return code_add(-1, errorclass, "MPI_Add_error_class");
}
BM_MPI_ALIAS(Add_error_class);

int PMPI_Add_error_code(int errorclass, int *errorcode)
{
    static const char fn[] = "MPI_Add_error_code";
    const struct errcode *e = code_entry(errorclass);
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (!errclass_valid(errorclass) && !(e && e->added && e->cls == errorclass))
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn,
                            "%d is not an error class (a predefined one, or one made by "
                            "MPI_Add_error_class)",
                            errorclass);
    return code_add(errorclass, errorcode, fn);
}
BM_MPI_ALIAS(Add_error_code);

int PMPI_Add_error_string(int errorcode, const char *string)
{
    static const char fn[] = "MPI_Add_error_string";
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (!string)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL string");
    const struct errcode *found = code_entry(errorcode);
    if (errorcode < FIRST_ADDED_CODE || !found)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn,
                            "error code %d was not made by MPI_Add_error_class or "
                            "MPI_Add_error_code (predefined strings cannot be changed)",
                            errorcode);
    size_t len = strlen(string);
    if (len >= MPI_MAX_ERROR_STRING)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn,
                            "the string has %zu characters; at most %d are allowed "
                            "(MPI_MAX_ERROR_STRING - 1)",
                            len, MPI_MAX_ERROR_STRING - 1);
    char *copy = strdup(string);
    if (!copy)
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    struct errcode *e = (struct errcode *)(uintptr_t)found;
    bm_mpi_obj_lock();
    free(e->user_text);
    e->user_text = copy;
    bm_mpi_obj_unlock();
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Add_error_string);
