/* MPI_Info objects: set/get/replace/delete, key order, value truncation
 * to valuelen, duplication independent of the original, limits and error
 * classes, and an info object passed where the standard takes hints. */
#include "bm_test.h"

#include <mpi.h>
#include <string.h>

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

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    BM_RUN(test_info);
    MPI_Finalize();
    return bm_test_summary("api_info");
}
