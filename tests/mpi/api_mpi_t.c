/* The tool information interface (MPI_T_*): refused before
 * MPI_T_init_thread, usable before MPI_Init, during, and after
 * MPI_Finalize, nested init/finalize counted; every control variable is a
 * BM_* parameter found by its name, in exactly one category, readable
 * through a handle with its declared type; values set in the environment
 * are the ones read (a size, an enum through its enumeration's item names,
 * a bool, the string BM_BTL the launcher test sets); writing is refused as
 * never possible; the string convention (length query, truncation); no
 * performance variables, while sessions and MPI_T_PVAR_ALL_HANDLES work;
 * the MPI_T error classes have their own strings. */
#include "bm_test.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

static int cvar_index_of(const char *name)
{
    int i = -1;
    BM_CHECK_EQ_INT(MPI_T_cvar_get_index(name, &i), MPI_SUCCESS);
    return i;
}

static void read_cvar(int index, void *buf, int *count)
{
    MPI_T_cvar_handle h = MPI_T_CVAR_HANDLE_NULL;
    BM_CHECK_EQ_INT(MPI_T_cvar_handle_alloc(index, NULL, &h, count), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_T_cvar_read(h, buf), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_T_cvar_write(h, buf), MPI_T_ERR_CVAR_SET_NEVER);
    BM_CHECK_EQ_INT(MPI_T_cvar_handle_free(&h), MPI_SUCCESS);
    BM_CHECK(h == MPI_T_CVAR_HANDLE_NULL);
}

/* Every variable: info, index by name, one category, a read of its type. */
static void test_all_cvars(void)
{
    int n = -1, ncat = -1, total = 0;
    BM_CHECK_EQ_INT(MPI_T_cvar_get_num(&n), MPI_SUCCESS);
    BM_CHECK(n > 20);
    BM_CHECK_EQ_INT(MPI_T_category_get_num(&ncat), MPI_SUCCESS);
    BM_CHECK(ncat > 3);
    int *owner = calloc((size_t)n, sizeof(int));
    for (int c = 0; c < ncat; c++) {
        char name[64];
        int len = sizeof(name), nc = -1, np = -1, nsub = -1, idx = -1;
        BM_CHECK_EQ_INT(MPI_T_category_get_info(c, name, &len, NULL, NULL, &nc, &np, &nsub),
                        MPI_SUCCESS);
        BM_CHECK(np == 0 && nsub == 0 && nc > 0);
        BM_CHECK_EQ_INT(MPI_T_category_get_index(name, &idx), MPI_SUCCESS);
        BM_CHECK_EQ_INT(idx, c);
        int *ids = malloc(sizeof(int) * (size_t)nc);
        BM_CHECK_EQ_INT(MPI_T_category_get_cvars(c, nc, ids), MPI_SUCCESS);
        /* No performance variables and no subcategories: both lists empty. */
        BM_CHECK_EQ_INT(MPI_T_category_get_pvars(c, 0, NULL), MPI_SUCCESS);
        BM_CHECK_EQ_INT(MPI_T_category_get_categories(c, 0, NULL), MPI_SUCCESS);
        for (int k = 0; k < nc; k++)
            if (ids[k] >= 0 && ids[k] < n)
                owner[ids[k]]++;
        free(ids);
        total += nc;
    }
    BM_CHECK_EQ_INT(total, n);
    for (int i = 0; i < n; i++) {
        char name[128], desc[1024];
        int nlen = sizeof(name), dlen = sizeof(desc), verb, bind, scope, count;
        MPI_Datatype dt = MPI_DATATYPE_NULL;
        MPI_T_enum en = MPI_T_ENUM_NULL;
        BM_CHECK_EQ_INT(owner[i], 1);
        BM_CHECK_EQ_INT(
            MPI_T_cvar_get_info(i, name, &nlen, &verb, &dt, &en, desc, &dlen, &bind, &scope),
            MPI_SUCCESS);
        BM_CHECK(strncmp(name, "BM_", 3) == 0 && nlen == (int)strlen(name) + 1);
        BM_CHECK(dlen > 1 && bind == MPI_T_BIND_NO_OBJECT && scope == MPI_T_SCOPE_READONLY);
        BM_CHECK_EQ_INT(cvar_index_of(name), i);
        union {
            int i;
            unsigned long ul;
            double d;
            char s[512];
        } v;
        read_cvar(i, &v, &count);
        if (dt == MPI_CHAR)
            BM_CHECK((int)strlen(v.s) + 1 == count);
        else
            BM_CHECK(count == 1 && (dt == MPI_INT || dt == MPI_UNSIGNED_LONG || dt == MPI_DOUBLE));
        if (en != MPI_T_ENUM_NULL) {
            int items = 0;
            BM_CHECK_EQ_INT(MPI_T_enum_get_info(en, &items, NULL, NULL), MPI_SUCCESS);
            BM_CHECK(dt == MPI_INT && v.i >= 0 && v.i < items);
        }
    }
    free(owner);
}

/* Values set in the environment (before MPI_Init, by main) are read back. */
static void test_values(void)
{
    union {
        int i;
        unsigned long ul;
        char s[256];
    } v;
    int count, items = 0, value = -1, len;
    char item[32], name[64];
    MPI_T_enum en;

    read_cvar(cvar_index_of("BM_MPI_COLL_ALLTOALL_SMALL"), &v, &count);
    BM_CHECK(v.ul == 512);
    read_cvar(cvar_index_of("BM_MPI_OSC_BTL_ATOMICS"), &v, &count);
    BM_CHECK_EQ_INT(v.i, 0);
    int bcast = cvar_index_of("BM_MPI_COLL_BCAST_ALG");
    read_cvar(bcast, &v, &count);
    MPI_T_cvar_get_info(bcast, NULL, NULL, NULL, NULL, &en, NULL, NULL, NULL, NULL);
    len = sizeof(name);
    BM_CHECK_EQ_INT(MPI_T_enum_get_info(en, &items, name, &len), MPI_SUCCESS);
    BM_CHECK(strcmp(name, "BM_MPI_COLL_BCAST_ALG") == 0 && items > 2);
    len = sizeof(item);
    BM_CHECK_EQ_INT(MPI_T_enum_get_item(en, v.i, &value, item, &len), MPI_SUCCESS);
    BM_CHECK(value == v.i && strcmp(item, "binomial") == 0);
    BM_CHECK_EQ_INT(MPI_T_enum_get_item(en, items, &value, item, &len), MPI_T_ERR_INVALID_ITEM);
    const char *btl = getenv("BM_BTL");
    read_cvar(cvar_index_of("BM_BTL"), &v, &count);
    BM_CHECK(btl && strcmp(v.s, btl) == 0 && count == (int)strlen(btl) + 1);

    /* the string convention: a length query, then a cut copy */
    len = 0;
    BM_CHECK_EQ_INT(
        MPI_T_cvar_get_info(bcast, name, &len, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
        MPI_SUCCESS);
    BM_CHECK_EQ_INT(len, (int)sizeof("BM_MPI_COLL_BCAST_ALG"));
    len = 7;
    MPI_T_cvar_get_info(bcast, name, &len, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    BM_CHECK(len == 7 && strcmp(name, "BM_MPI") == 0);

    int i = -1;
    BM_CHECK_EQ_INT(MPI_T_cvar_get_index("BM_NO_SUCH_PARAMETER", &i), MPI_T_ERR_INVALID_NAME);
    BM_CHECK_EQ_INT(
        MPI_T_cvar_get_info(1 << 30, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
        MPI_T_ERR_INVALID_INDEX);
    BM_CHECK_EQ_INT(MPI_T_cvar_read(MPI_T_CVAR_HANDLE_NULL, &v), MPI_T_ERR_INVALID_HANDLE);
    BM_CHECK_EQ_INT(MPI_T_category_get_index("no/such", &i), MPI_T_ERR_INVALID_NAME);
    int stamp = -1;
    BM_CHECK_EQ_INT(MPI_T_category_changed(&stamp), MPI_SUCCESS);
    BM_CHECK_EQ_INT(stamp, 0);
}

static void test_pvars(void)
{
    int n = -1, i = -1, count;
    MPI_T_pvar_session s = MPI_T_PVAR_SESSION_NULL;
    MPI_T_pvar_handle h = MPI_T_PVAR_HANDLE_NULL;
    char buf[16];
    BM_CHECK_EQ_INT(MPI_T_pvar_get_num(&n), MPI_SUCCESS);
    BM_CHECK_EQ_INT(n, 0);
    BM_CHECK_EQ_INT(MPI_T_pvar_get_index("x", MPI_T_PVAR_CLASS_COUNTER, &i),
                    MPI_T_ERR_INVALID_NAME);
    BM_CHECK_EQ_INT(MPI_T_pvar_session_create(&s), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_T_pvar_handle_alloc(s, 0, NULL, &h, &count), MPI_T_ERR_INVALID_INDEX);
    BM_CHECK_EQ_INT(MPI_T_pvar_start(s, MPI_T_PVAR_ALL_HANDLES), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_T_pvar_stop(s, MPI_T_PVAR_ALL_HANDLES), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_T_pvar_read(s, MPI_T_PVAR_ALL_HANDLES, buf), MPI_T_ERR_INVALID_HANDLE);
    BM_CHECK_EQ_INT(MPI_T_pvar_write(s, MPI_T_PVAR_ALL_HANDLES, buf), MPI_T_ERR_INVALID_HANDLE);
    BM_CHECK_EQ_INT(MPI_T_pvar_readreset(s, MPI_T_PVAR_ALL_HANDLES, buf), MPI_T_ERR_INVALID_HANDLE);
    BM_CHECK_EQ_INT(MPI_T_pvar_reset(s, MPI_T_PVAR_ALL_HANDLES), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_T_pvar_handle_free(s, &h), MPI_T_ERR_INVALID_HANDLE);
    BM_CHECK_EQ_INT(MPI_T_pvar_get_info(0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                        NULL, NULL, NULL),
                    MPI_T_ERR_INVALID_INDEX);
    BM_CHECK_EQ_INT(MPI_T_category_get_pvars(-1, 0, NULL), MPI_T_ERR_INVALID_INDEX);
    BM_CHECK_EQ_INT(MPI_T_category_get_categories(1 << 20, 0, NULL), MPI_T_ERR_INVALID_INDEX);
    BM_CHECK_EQ_INT(MPI_T_pvar_session_free(&s), MPI_SUCCESS);
    BM_CHECK(s == MPI_T_PVAR_SESSION_NULL);
    BM_CHECK_EQ_INT(MPI_T_pvar_start(s, MPI_T_PVAR_ALL_HANDLES), MPI_T_ERR_INVALID_SESSION);
}

int main(int argc, char **argv)
{
    int provided = -1, n, len;
    char s[MPI_MAX_ERROR_STRING];

    BM_CHECK_EQ_INT(MPI_T_cvar_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    setenv("BM_MPI_COLL_ALLTOALL_SMALL", "512", 1);
    setenv("BM_MPI_OSC_BTL_ATOMICS", "off", 1);
    setenv("BM_MPI_COLL_BCAST_ALG", "binomial", 1);
    BM_CHECK_EQ_INT(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided), MPI_SUCCESS);
    BM_CHECK_EQ_INT(provided, MPI_THREAD_MULTIPLE);
    BM_RUN(test_values); /* before MPI_Init */
    MPI_Init(&argc, &argv);
    BM_CHECK_EQ_INT(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided), MPI_SUCCESS); /* nested */
    BM_RUN(test_all_cvars);
    BM_RUN(test_pvars);
    BM_CHECK_EQ_INT(MPI_T_finalize(), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Error_string(MPI_T_ERR_CVAR_SET_NEVER, s, &len), MPI_SUCCESS);
    BM_CHECK(strstr(s, "never") != NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    BM_RUN(test_values); /* after MPI_Finalize: still open once */
    BM_CHECK_EQ_INT(MPI_T_finalize(), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_T_cvar_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    BM_CHECK_EQ_INT(MPI_T_finalize(), MPI_T_ERR_NOT_INITIALIZED);
    return bm_test_summary("api_mpi_t");
}
