/* MPI start-up and shutdown, and the environment queries that go with them:
 * MPI_Init and MPI_Init_thread bring up the runtime, check the BM_*
 * environment variables, set up the predefined communicators and start the
 * point-to-point layer; MPI_Finalize synchronizes the job and tears it all
 * down in reverse. Also MPI_Abort, the thread-level queries, the processor
 * name, version strings and timers. */
#define BM_LOG_SUBSYS "mpi"
#include "bm_config.h"
#include "mpi/mpi_internal.h"
#include "mpi/mpi_request.h"
#include "pml/pml.h"
#include "runtime/rte.h"
#include "util/log.h"
#include "util/params.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum bm_mpi_state bm_mpi_state = BM_MPI_STATE_NOT_INITIALIZED;
bool bm_mpi_rte_up;

static int thread_level = MPI_THREAD_SINGLE;
static pthread_t main_thread;

/* atexit: the program returned from main (or called exit) with MPI still
 * initialized. That is erroneous (MPI-3.1 8.7: every process calls
 * MPI_Finalize), but common enough that MPICH lets it pass silently (Open
 * MPI's mpirun reports it and fails the job): OSU 7.4's osu_latency_mt
 * never finalizes. Without a drain, a peer still in MPI_Send of a
 * rendezvous waits for a completion message or acknowledgements that this
 * process never sends, and over dgram declares the path failed after
 * seconds. bitmover delivers what it owes and says once what happened;
 * the exit status stays the program's. */
static void exit_without_finalize(void)
{
    if (bm_mpi_state != BM_MPI_STATE_RUNNING)
        return;
    /* Peers exit in any order here (they skipped MPI_Finalize's barrier
     * too): a connection closed without a goodbye while this rank drains is
     * expected, so the transports' and the PML's warnings about it are muted
     * unless BM_VERBOSE asks for them. */
    const char *verbose = getenv("BM_VERBOSE");
    bool mute = !verbose || !*verbose;
    if (mute)
        bm_util_log_configure("1");
    bool drained = bm_pml_exit_drain();
    if (mute)
        bm_util_log_configure(NULL);
    bm_log_warn("rank %d (host %s) exited without calling MPI_Finalize (erroneous: every "
                "process must call it before it exits)%s",
                bm_rte_self()->rank, bm_rte_self()->hostname,
                drained ? "; what this rank still owed its peers was delivered first"
                        : "; what this rank owed its peers may be undelivered (see "
                          "BM_PML_EXIT_DRAIN_MS): they may report a failed path");
}

static int init_common(int *argc, char ***argv, int required, int *provided, const char *fn)
{
    bm_status_t st;
    int rc;

    /* Codes of class MPI_ERR_OTHER whose MPI_Error_string says what happened. */
    if (bm_mpi_state == BM_MPI_STATE_RUNNING)
        return bm_mpi_error(NULL, BM_MPI_ERRCODE_INIT_TWICE, fn,
                            "MPI is already initialized; MPI_Init and MPI_Init_thread may be "
                            "called only once per process");
    if (bm_mpi_state == BM_MPI_STATE_FINALIZED)
        return bm_mpi_error(NULL, BM_MPI_ERRCODE_INIT_AFTER_FINALIZE, fn,
                            "called after MPI_Finalize; MPI cannot be initialized again");
    if (required < MPI_THREAD_SINGLE || required > MPI_THREAD_MULTIPLE)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn,
                            "invalid thread level %d (use MPI_THREAD_SINGLE, _FUNNELED, "
                            "_SERIALIZED or _MULTIPLE)",
                            required);

    /* Every level is provided; MPI_THREAD_MULTIPLE turns the locks on
     * (src/pml/README.md "Threads"), the others take none. */
    thread_level = required;
    bm_mpi_mt_init(required == MPI_THREAD_MULTIPLE);
    main_thread = pthread_self();

    st = bm_rte_init();
    if (st != BM_OK)
        return bm_mpi_error(NULL, bm_mpi_class_of_status(st), fn,
                            "could not start the runtime: %s (see the messages above; "
                            "bm_info says which launchers this build can use)",
                            bm_status_str(st));
    bm_mpi_rte_up = true;
    bm_util_log_set_rank(bm_rte_self()->rank);

    /* Unknown BM_ names are reported once per job: bmrun did it before
     * launching; under other launchers rank 0 does. */
    st = bm_util_params_check_env(bm_rte_self()->rank == 0 &&
                                  strcmp(bm_rte_backend_name(), "bmrun") != 0);
    if (st != BM_OK) {
        rc = bm_mpi_error(NULL, MPI_ERR_ARG, fn,
                          "invalid BM_* environment settings (see the messages above); fix or "
                          "unset them");
        goto err_rte;
    }
    if ((rc = bm_mpi_comm_init()) != MPI_SUCCESS)
        goto err_rte;

    st = bm_pml_init(thread_level);
    if (st != BM_OK) {
        rc = bm_mpi_error(NULL, bm_mpi_class_of_status(st), fn,
                          "could not start the point-to-point layer: %s (see the messages "
                          "above)",
                          bm_status_str(st));
        goto err_comm;
    }
    /* The PML's progress thread runs this layer's progress hooks beside
     * the program: its locks, whatever level the program asked for. */
    if (bm_pml_threaded())
        bm_mpi_mt_init(true);
    bm_mpi_state = BM_MPI_STATE_RUNNING;
    static bool exit_hook;
    if (!exit_hook)
        exit_hook = atexit(exit_without_finalize) == 0;
    bm_mpi_info_env_init(argc ? *argc : 0, argv ? *argv : NULL, thread_level,
                         bm_mpi_comm_world_obj.size);
    if (provided)
        *provided = thread_level;
    return MPI_SUCCESS;

err_comm:
    bm_mpi_comm_finalize();
err_rte:
    bm_mpi_rte_up = false;
    bm_rte_finalize();
    return rc;
}

int PMPI_Init(int *argc, char ***argv)
{
    return init_common(argc, argv, MPI_THREAD_SINGLE, NULL, "MPI_Init");
}
BM_MPI_ALIAS(Init);

int PMPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    if (provided == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, "MPI_Init_thread", "NULL provided pointer");
    return init_common(argc, argv, required, provided, "MPI_Init_thread");
}
BM_MPI_ALIAS(Init_thread);

int PMPI_Finalize(void)
{
    static const char fn[] = "MPI_Finalize";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    /* The standard's clean-up hook for libraries: MPI_COMM_SELF's attribute
     * delete callbacks run first, while MPI is still fully usable. */
    if ((rc = bm_mpi_attr_delete_all(MPI_COMM_SELF, fn)) ||
        (rc = bm_mpi_attr_delete_all(MPI_COMM_WORLD, fn)))
        return rc;
    /* Finalize is collective: no rank may close its transports while a
     * peer may still be sending to it. */
    if ((rc = PMPI_Barrier(MPI_COMM_WORLD)))
        return rc;
    /* collective state first: its internal communicators still talk to the PML */
    bm_mpi_coll_finalize();
    /* The barrier completed over whichever transport carries it; sends of
     * other paths may still wait for an acknowledgement: drain, then fence. */
    bm_pml_quiesce();
    bm_pml_finalize();
    bm_mpi_request_cache_fini();
    bm_mpi_comm_finalize();
    bm_mpi_errhandler_finalize();
    bm_mpi_info_env_fini();
    bm_mpi_handles_fini();
    bm_mpi_state = BM_MPI_STATE_FINALIZED;
    bm_mpi_rte_up = false;
    bm_rte_finalize();
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Finalize);

int PMPI_Initialized(int *flag)
{
    if (flag == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, "MPI_Initialized", "NULL flag pointer");
    *flag = bm_mpi_state != BM_MPI_STATE_NOT_INITIALIZED;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Initialized);

int PMPI_Finalized(int *flag)
{
    if (flag == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, "MPI_Finalized", "NULL flag pointer");
    *flag = bm_mpi_state == BM_MPI_STATE_FINALIZED;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Finalized);

int PMPI_Abort(MPI_Comm comm, int errorcode)
{
    char msg[512];
    /* Exit codes are 8 bits: keep a non-zero code non-zero. */
    int code = errorcode & 0xff ? errorcode & 0xff : 1;

    (void)comm; /* the whole job ends, whatever the communicator */
    if (!bm_mpi_rte_up) {
        fprintf(stderr, "MPI_Abort called with error code %d (outside MPI_Init..MPI_Finalize)\n",
                errorcode);
        exit(code);
    }
    snprintf(msg, sizeof(msg), "MPI_Abort called on rank %d (host %s) with error code %d",
             bm_rte_self()->rank, bm_rte_self()->hostname, errorcode);
    bm_rte_abort(code, msg);
}
BM_MPI_ALIAS(Abort);

int PMPI_Query_thread(int *provided)
{
    static const char fn[] = "MPI_Query_thread";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (provided == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL provided pointer");
    *provided = thread_level;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Query_thread);

int PMPI_Is_thread_main(int *flag)
{
    static const char fn[] = "MPI_Is_thread_main";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (flag == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL flag pointer");
    *flag = pthread_equal(pthread_self(), main_thread) != 0;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Is_thread_main);

int PMPI_Get_processor_name(char *name, int *resultlen)
{
    static const char fn[] = "MPI_Get_processor_name";
    int rc, n;

    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (name == NULL || resultlen == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL output argument");
    n = snprintf(name, MPI_MAX_PROCESSOR_NAME, "%s", bm_rte_self()->hostname);
    *resultlen = n < MPI_MAX_PROCESSOR_NAME ? n : MPI_MAX_PROCESSOR_NAME - 1;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Get_processor_name);

int PMPI_Get_version(int *version, int *subversion)
{
    if (version == NULL || subversion == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, "MPI_Get_version", "NULL output argument");
    *version = MPI_VERSION;
    *subversion = MPI_SUBVERSION;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Get_version);

int PMPI_Get_library_version(char *version, int *resultlen)
{
    int n;

    if (version == NULL || resultlen == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, "MPI_Get_library_version", "NULL output argument");
    n = snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING, "bitmover %s (MPI %d.%d), %s build, %s",
                 BM_VERSION, MPI_VERSION, MPI_SUBVERSION, BM_BUILD_TYPE, BM_C_COMPILER);
    *resultlen = n < MPI_MAX_LIBRARY_VERSION_STRING ? n : MPI_MAX_LIBRARY_VERSION_STRING - 1;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Get_library_version);

/* The monotonic clock: never jumps with NTP, and MPI_WTIME_IS_GLOBAL is false. */
double PMPI_Wtime(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
BM_MPI_ALIAS(Wtime);

double PMPI_Wtick(void)
{
    struct timespec ts;

    if (clock_getres(CLOCK_MONOTONIC, &ts) != 0)
        return 1e-9;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
BM_MPI_ALIAS(Wtick);

/* Profiling control: bitmover has no built-in profiler, so every level is
 * accepted and means "as before"; tools that intercept MPI_Pcontrol see it. */
int PMPI_Pcontrol(const int level, ...)
{
    (void)level;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Pcontrol);
