/* MPI_Info objects: set/get/replace/delete, key order, value truncation
 * to valuelen, duplication independent of the original, limits and error
 * classes, an info object passed where the standard takes hints, and
 * MPI_INFO_ENV (what it holds, read-only, a duplicate that may change);
 * with the other environment queries: MPI_Wtick, MPI_Get_library_version,
 * MPI_Aint_add/diff, MPI_Pcontrol, MPI_Alloc_mem's alignment. */
#include "bm_test.h"

#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_info(void)
{
    MPI_Info info, copy;
    char key[MPI_MAX_INFO_KEY + 1], val[MPI_MAX_INFO_VAL + 1], longkey[MPI_MAX_INFO_KEY + 2];
    int flag = -1, n = -1, len = -1;
    void *mem = NULL;

    BM_CHECK_EQ_INT(MPI_Info_create(&info), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Info_get_nkeys(info, &n), MPI_SUCCESS);
    BM_CHECK_EQ_INT(n, 0);
    BM_CHECK_EQ_INT(MPI_Info_set(info, "cb_nodes", "4"), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Info_set(info, "striping_unit", "1048576"), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Info_set(info, "cb_nodes", "8"), MPI_SUCCESS); /* replaces */
    BM_CHECK_EQ_INT(MPI_Info_get_nkeys(info, &n), MPI_SUCCESS);
    BM_CHECK_EQ_INT(n, 2);
    BM_CHECK_EQ_INT(MPI_Info_get_nthkey(info, 0, key), MPI_SUCCESS);
    BM_CHECK_STR(key, "cb_nodes");
    BM_CHECK_EQ_INT(MPI_Info_get_nthkey(info, 1, key), MPI_SUCCESS);
    BM_CHECK_STR(key, "striping_unit");
    BM_CHECK_EQ_INT(MPI_Info_get(info, "cb_nodes", MPI_MAX_INFO_VAL, val, &flag), MPI_SUCCESS);
    BM_CHECK(flag == 1);
    BM_CHECK_STR(val, "8");
    BM_CHECK_EQ_INT(MPI_Info_get_valuelen(info, "striping_unit", &len, &flag), MPI_SUCCESS);
    BM_CHECK(flag == 1 && len == 7);
    BM_CHECK_EQ_INT(MPI_Info_get(info, "striping_unit", 3, val, &flag), MPI_SUCCESS);
    BM_CHECK_STR(val, "104");
    BM_CHECK_EQ_INT(MPI_Info_get(info, "absent", MPI_MAX_INFO_VAL, val, &flag), MPI_SUCCESS);
    BM_CHECK_EQ_INT(flag, 0);

    BM_CHECK_EQ_INT(MPI_Info_dup(info, &copy), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Info_delete(info, "cb_nodes"), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Info_get_nkeys(info, &n), MPI_SUCCESS);
    BM_CHECK_EQ_INT(n, 1);
    BM_CHECK_EQ_INT(MPI_Info_get(copy, "cb_nodes", MPI_MAX_INFO_VAL, val, &flag), MPI_SUCCESS);
    BM_CHECK(flag == 1);
    BM_CHECK_STR(val, "8");

    /* Hints are accepted (and ignored) where the standard takes them. */
    BM_CHECK_EQ_INT(MPI_Alloc_mem(64, copy, &mem), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Free_mem(mem), MPI_SUCCESS);

    /* Errors. */
    memset(longkey, 'k', sizeof(longkey) - 1);
    longkey[sizeof(longkey) - 1] = '\0';
    BM_CHECK_EQ_INT(MPI_Info_set(info, longkey, "v"), MPI_ERR_INFO_KEY);
    BM_CHECK_EQ_INT(MPI_Info_set(info, "", "v"), MPI_ERR_INFO_KEY);
    BM_CHECK_EQ_INT(MPI_Info_delete(info, "cb_nodes"), MPI_ERR_INFO_NOKEY);
    BM_CHECK_EQ_INT(MPI_Info_get_nthkey(info, 5, key), MPI_ERR_ARG);
    BM_CHECK_EQ_INT(MPI_Info_get_nkeys(MPI_INFO_NULL, &n), MPI_ERR_INFO);

    BM_CHECK_EQ_INT(MPI_Info_free(&info), MPI_SUCCESS);
    BM_CHECK(info == MPI_INFO_NULL);
    BM_CHECK_EQ_INT(MPI_Info_free(&copy), MPI_SUCCESS);
}

static void test_info_env(const char *argv0)
{
    char val[MPI_MAX_INFO_VAL + 1], name[MPI_MAX_PROCESSOR_NAME], cwd[4096];
    int flag = 0, size, len;
    MPI_Info copy;

    BM_CHECK_EQ_INT(MPI_Info_get(MPI_INFO_ENV, "command", MPI_MAX_INFO_VAL, val, &flag),
                    MPI_SUCCESS);
    BM_CHECK(flag == 1 && strcmp(val, argv0) == 0);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    BM_CHECK_EQ_INT(MPI_Info_get(MPI_INFO_ENV, "maxprocs", MPI_MAX_INFO_VAL, val, &flag),
                    MPI_SUCCESS);
    BM_CHECK(flag == 1 && atoi(val) == size);
    BM_CHECK_EQ_INT(MPI_Info_get(MPI_INFO_ENV, "thread_level", MPI_MAX_INFO_VAL, val, &flag),
                    MPI_SUCCESS);
    BM_CHECK(flag == 1);
    BM_CHECK_STR(val, "MPI_THREAD_SINGLE");
    MPI_Get_processor_name(name, &len);
    BM_CHECK_EQ_INT(MPI_Info_get(MPI_INFO_ENV, "host", MPI_MAX_INFO_VAL, val, &flag), MPI_SUCCESS);
    BM_CHECK(flag == 1);
    BM_CHECK_STR(val, name);
    BM_CHECK_EQ_INT(MPI_Info_get(MPI_INFO_ENV, "wdir", MPI_MAX_INFO_VAL, val, &flag), MPI_SUCCESS);
    BM_CHECK(flag == 1 && getcwd(cwd, sizeof(cwd)) && strcmp(val, cwd) == 0);
    BM_CHECK_EQ_INT(MPI_Info_get(MPI_INFO_ENV, "arch", MPI_MAX_INFO_VAL, val, &flag), MPI_SUCCESS);
    BM_CHECK(flag == 1 && val[0]);
    /* read-only, never freed; a duplicate may change */
    BM_CHECK_EQ_INT(MPI_Info_set(MPI_INFO_ENV, "command", "x"), MPI_ERR_INFO);
    BM_CHECK_EQ_INT(MPI_Info_delete(MPI_INFO_ENV, "command"), MPI_ERR_INFO);
    MPI_Info env = MPI_INFO_ENV;
    BM_CHECK_EQ_INT(MPI_Info_free(&env), MPI_ERR_INFO);
    BM_CHECK_EQ_INT(MPI_Info_dup(MPI_INFO_ENV, &copy), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Info_set(copy, "command", "x"), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Info_get(MPI_INFO_ENV, "command", MPI_MAX_INFO_VAL, val, &flag),
                    MPI_SUCCESS);
    BM_CHECK_STR(val, argv0);
    MPI_Info_free(&copy);
}

static void test_environment(void)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = -1;
    double tick = MPI_Wtick();
    BM_CHECK_MSG(tick > 0 && tick <= 1e-3, "MPI_Wtick() = %g", tick);
    BM_CHECK_EQ_INT(MPI_Get_library_version(v, &len), MPI_SUCCESS);
    BM_CHECK(len > 0 && len == (int)strlen(v) && strstr(v, "bitmover") != NULL);
    char buf[100];
    MPI_Aint a, b;
    MPI_Get_address(&buf[10], &a);
    MPI_Get_address(&buf[70], &b);
    BM_CHECK_EQ_INT(MPI_Aint_diff(b, a), 60);
    BM_CHECK(MPI_Aint_add(a, 60) == b);
    BM_CHECK_EQ_INT(MPI_Pcontrol(0), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Pcontrol(2, "extra", 3), MPI_SUCCESS);
    void *mem = NULL;
    BM_CHECK_EQ_INT(MPI_Alloc_mem(1000, MPI_INFO_NULL, &mem), MPI_SUCCESS);
    BM_CHECK(mem != NULL && ((uintptr_t)mem % 4096) == 0);
    memset(mem, 1, 1000);
    BM_CHECK_EQ_INT(MPI_Free_mem(mem), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Alloc_mem(-1, MPI_INFO_NULL, &mem), MPI_ERR_SIZE);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    BM_RUN(test_info);
    test_info_env(argv[0]);
    BM_RUN(test_environment);
    MPI_Finalize();
    return bm_test_summary("api_info");
}
