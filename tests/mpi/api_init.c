/* MPI start-up and environment: MPI_Initialized/MPI_Finalized around
 * MPI_Init_thread and MPI_Finalize, the thread level granted (MULTIPLE, as
 * asked), version strings, processor name, a monotonic
 * MPI_Wtime, the predefined attributes, and rank/size agreement with the
 * launcher. Run at several sizes through bmrun and alone (singleton). */
#include "bm_test.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size;
static bool singleton; /* run without a launcher (--singleton) */

static void test_before_init(void)
{
    int flag = -1, v = 0, sv = 0, len = 0;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];

    BM_CHECK_EQ_INT(MPI_Initialized(&flag), MPI_SUCCESS);
    BM_CHECK_EQ_INT(flag, 0);
    BM_CHECK_EQ_INT(MPI_Finalized(&flag), MPI_SUCCESS);
    BM_CHECK_EQ_INT(flag, 0);
    BM_CHECK_EQ_INT(MPI_Get_version(&v, &sv), MPI_SUCCESS);
    BM_CHECK_EQ_INT(v, MPI_VERSION);
    BM_CHECK_EQ_INT(sv, MPI_SUBVERSION);
    BM_CHECK_EQ_INT(MPI_Get_library_version(lib, &len), MPI_SUCCESS);
    BM_CHECK(strncmp(lib, "bitmover", 8) == 0);
    BM_CHECK_EQ_INT(len, (int)strlen(lib));
}

static void test_environment(void)
{
    char name[MPI_MAX_PROCESSOR_NAME], host[256];
    int len = -1, flag = 0, *val = NULL, provided = -1, main_flag = 0;

    BM_CHECK_EQ_INT(MPI_Comm_rank(MPI_COMM_WORLD, &rank), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Comm_size(MPI_COMM_WORLD, &size), MPI_SUCCESS);
    BM_CHECK(size >= 1 && rank >= 0 && rank < size);
    if (getenv("BM_TEST_EXPECT_NP"))
        BM_CHECK_EQ_INT(size, atoi(getenv("BM_TEST_EXPECT_NP")));

    BM_CHECK_EQ_INT(MPI_Get_processor_name(name, &len), MPI_SUCCESS);
    BM_CHECK_EQ_INT(len, (int)strlen(name));
    BM_CHECK(len > 0);
    /* The launcher names the node (bmrun, PMIx); alone, it is the host name. */
    if (singleton) {
        BM_CHECK(gethostname(host, sizeof(host)) == 0);
        BM_CHECK_STR(name, host);
    }

    BM_CHECK_EQ_INT(MPI_Query_thread(&provided), MPI_SUCCESS);
    BM_CHECK_EQ_INT(provided, MPI_THREAD_MULTIPLE);
    BM_CHECK_EQ_INT(MPI_Is_thread_main(&main_flag), MPI_SUCCESS);
    BM_CHECK_EQ_INT(main_flag, 1);

    BM_CHECK_EQ_INT(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &val, &flag), MPI_SUCCESS);
    BM_CHECK_EQ_INT(flag, 1);
    BM_CHECK(val != NULL && *val >= 32767);
    flag = 0;
    BM_CHECK_EQ_INT(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &val, &flag), MPI_SUCCESS);
    BM_CHECK(flag == 1 && *val == size);
    BM_CHECK_EQ_INT(MPI_Attr_get(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &val, &flag), MPI_SUCCESS);
    BM_CHECK(flag == 1 && (*val == 0 || *val == 1));

    BM_CHECK_EQ_INT(MPI_Comm_get_name(MPI_COMM_WORLD, name, &len), MPI_SUCCESS);
    BM_CHECK_STR(name, "MPI_COMM_WORLD");
    BM_CHECK_EQ_INT(MPI_Comm_get_name(MPI_COMM_SELF, name, &len), MPI_SUCCESS);
    BM_CHECK_STR(name, "MPI_COMM_SELF");
    {
        /* A name set on a duplicate is its own; a dup does not inherit it. */
        MPI_Comm d, dd;
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        BM_CHECK_EQ_INT(MPI_Comm_set_name(d, "my comm"), MPI_SUCCESS);
        BM_CHECK_EQ_INT(MPI_Comm_get_name(d, name, &len), MPI_SUCCESS);
        BM_CHECK_STR(name, "my comm");
        BM_CHECK_EQ_INT(len, 7);
        MPI_Comm_dup(d, &dd);
        BM_CHECK_EQ_INT(MPI_Comm_get_name(dd, name, &len), MPI_SUCCESS);
        BM_CHECK_EQ_INT(len, 0);
        MPI_Comm_free(&dd);
        MPI_Comm_free(&d);
        BM_CHECK_EQ_INT(MPI_Comm_get_name(MPI_COMM_WORLD, name, &len), MPI_SUCCESS);
        BM_CHECK_STR(name, "MPI_COMM_WORLD");
    }
    BM_CHECK_EQ_INT(MPI_Comm_size(MPI_COMM_SELF, &len), MPI_SUCCESS);
    BM_CHECK_EQ_INT(len, 1);
    BM_CHECK_EQ_INT(MPI_Comm_rank(MPI_COMM_SELF, &len), MPI_SUCCESS);
    BM_CHECK_EQ_INT(len, 0);
    BM_CHECK_EQ_INT(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &flag), MPI_SUCCESS);
    BM_CHECK_EQ_INT(flag, MPI_IDENT);
    BM_CHECK_EQ_INT(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_SELF, &flag), MPI_SUCCESS);
    BM_CHECK_EQ_INT(flag, size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL);
}

static void test_wtime(void)
{
    double t0 = MPI_Wtime(), prev = t0, tick = MPI_Wtick();

    BM_CHECK(tick > 0.0 && tick < 0.01);
    for (int i = 0; i < 100000; i++) {
        double t = MPI_Wtime();
        if (t < prev) {
            BM_CHECK_MSG(0, "MPI_Wtime went backwards: %.9f after %.9f", t, prev);
            break;
        }
        prev = t;
    }
    usleep(20000);
    BM_CHECK_MSG(MPI_Wtime() - t0 >= 0.019, "MPI_Wtime did not advance by the 20 ms slept");
}

static void test_alloc_mem(void)
{
    char *p = NULL;

    BM_CHECK_EQ_INT(MPI_Alloc_mem(1 << 20, MPI_INFO_NULL, &p), MPI_SUCCESS);
    BM_CHECK(p != NULL);
    if (p) {
        memset(p, 0x5a, 1 << 20);
        BM_CHECK_EQ_INT(MPI_Free_mem(p), MPI_SUCCESS);
    }
}

int main(int argc, char **argv)
{
    int provided = -1, flag = -1;

    singleton = argc > 1 && strcmp(argv[1], "--singleton") == 0;

    BM_RUN(test_before_init);
    BM_CHECK_EQ_INT(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided), MPI_SUCCESS);
    BM_CHECK_EQ_INT(provided, MPI_THREAD_MULTIPLE);
    BM_CHECK_EQ_INT(MPI_Initialized(&flag), MPI_SUCCESS);
    BM_CHECK_EQ_INT(flag, 1);
    BM_CHECK_EQ_INT(MPI_Finalized(&flag), MPI_SUCCESS);
    BM_CHECK_EQ_INT(flag, 0);
    BM_RUN(test_environment);
    BM_RUN(test_wtime);
    BM_RUN(test_alloc_mem);
    BM_CHECK_EQ_INT(MPI_Barrier(MPI_COMM_WORLD), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Finalize(), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Initialized(&flag), MPI_SUCCESS);
    BM_CHECK_EQ_INT(flag, 1);
    BM_CHECK_EQ_INT(MPI_Finalized(&flag), MPI_SUCCESS);
    BM_CHECK_EQ_INT(flag, 1);
    return bm_test_summary("api_init");
}
