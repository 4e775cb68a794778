/* Unit test of the runtime without a launcher: a program started alone is
 * rank 0 of a 1-process job, modex put/fence/get of its own key works, the
 * at-exit handlers run in reverse order, job-scoped names follow the
 * "bm-<jobid>-<what>" convention, and forcing the bmrun backend without
 * bmrun's environment fails cleanly. */
#include "bm_test.h"
#include "runtime/rte.h"

#include <stdlib.h>
#include <string.h>

static char exit_order[8];
static int exit_n;

static void on_exit_fn(void *arg)
{
    exit_order[exit_n++] = *(const char *)arg;
}

static void test_identity(void)
{
    BM_CHECK_EQ_INT(bm_rte_init(), BM_OK);
    const struct bm_rte_proc *me = bm_rte_self();
    BM_CHECK_STR(bm_rte_backend_name(), "singleton");
    BM_CHECK_EQ_INT(me->rank, 0);
    BM_CHECK_EQ_INT(me->size, 1);
    BM_CHECK_EQ_INT(me->local_rank, 0);
    BM_CHECK_EQ_INT(me->local_size, 1);
    BM_CHECK_EQ_INT(me->node, 0);
    BM_CHECK_EQ_INT(me->num_nodes, 1);
    BM_CHECK(me->hostname[0] != '\0');
    BM_CHECK(strlen(me->jobid) > 0);
    BM_CHECK_EQ_INT(strspn(me->jobid, "0123456789abcdefghijklmnopqrstuvwxyz"), strlen(me->jobid));
    BM_CHECK_EQ_INT(bm_rte_node_of(0), 0);
    BM_CHECK_EQ_INT(bm_rte_node_of(1), -1);
    BM_CHECK_EQ_INT(bm_rte_node_of(-1), -1);
    /* Reference counted: a second init is a no-op, matched by a finalize. */
    BM_CHECK_EQ_INT(bm_rte_init(), BM_OK);
    bm_rte_finalize();
    BM_CHECK_STR(bm_rte_backend_name(), "singleton");
}

static void test_modex(void)
{
    const char blob[] = "tcp 10.0.0.1:4242";
    BM_CHECK_EQ_INT(bm_rte_modex_put("btl.tcp", blob, sizeof(blob)), BM_OK);
    BM_CHECK_EQ_INT(bm_rte_modex_put("btl.empty", NULL, 0), BM_OK);
    BM_CHECK_EQ_INT(bm_rte_modex_fence(), BM_OK);
    const void *data = NULL;
    size_t len = 0;
    BM_CHECK_EQ_INT(bm_rte_modex_get(0, "btl.tcp", &data, &len), BM_OK);
    BM_CHECK_EQ_INT(len, sizeof(blob));
    BM_CHECK(data && memcmp(data, blob, sizeof(blob)) == 0);
    const void *first = data;
    BM_CHECK_EQ_INT(bm_rte_modex_get(0, "btl.empty", &data, &len), BM_OK);
    BM_CHECK_EQ_INT(len, 0);
    BM_CHECK_EQ_INT(bm_rte_modex_get(0, "btl.sm", &data, &len), BM_ERR_NOT_FOUND);
    BM_CHECK_EQ_INT(bm_rte_modex_get(1, "btl.tcp", &data, &len), BM_ERR_BAD_PARAM);
    BM_CHECK_EQ_INT(bm_rte_modex_put("", blob, 1), BM_ERR_BAD_PARAM);
    BM_CHECK_EQ_INT(bm_rte_modex_put("k", NULL, 5), BM_ERR_BAD_PARAM);
    /* A new value replaces the old; the old pointer stays valid until finalize. */
    BM_CHECK_EQ_INT(bm_rte_modex_put("btl.tcp", "v2", 3), BM_OK);
    BM_CHECK_EQ_INT(bm_rte_barrier(), BM_OK);
    BM_CHECK_EQ_INT(bm_rte_modex_get(0, "btl.tcp", &data, &len), BM_OK);
    BM_CHECK(len == 3 && memcmp(data, "v2", 3) == 0);
    BM_CHECK(memcmp(first, blob, sizeof(blob)) == 0);
}

static void test_job_name(void)
{
    char name[128], want[128];
    BM_CHECK_EQ_INT(bm_rte_job_name("sm.seg0", name, sizeof(name)), BM_OK);
    snprintf(want, sizeof(want), "bm-%s-sm.seg0", bm_rte_self()->jobid);
    BM_CHECK_STR(name, want);
    BM_CHECK_EQ_INT(bm_rte_job_name("sm.seg0", name, 8), BM_ERR_TRUNCATE);
}

static void test_at_exit_and_finalize(void)
{
    static const char a = 'a', b = 'b', c = 'c';
    bm_rte_at_exit(on_exit_fn, (void *)&a);
    bm_rte_at_exit(on_exit_fn, (void *)&b);
    bm_rte_at_exit(on_exit_fn, (void *)&c);
    bm_rte_finalize();
    BM_CHECK_EQ_INT(exit_n, 3);
    BM_CHECK(memcmp(exit_order, "cba", 3) == 0);
    BM_CHECK_STR(bm_rte_backend_name(), "none");
    const void *data;
    size_t len;
    BM_CHECK_EQ_INT(bm_rte_modex_get(0, "btl.tcp", &data, &len), BM_ERR_NOT_AVAILABLE);
}

static void test_forced_bmrun_without_env(void)
{
    setenv("BM_RTE_BACKEND", "bmrun", 1);
    BM_CHECK_EQ_INT(bm_rte_init(), BM_ERR_BAD_PARAM);
    setenv("BM_RTE_BACKEND", "nonsense", 1);
    BM_CHECK_EQ_INT(bm_rte_init(), BM_ERR_BAD_PARAM);
    unsetenv("BM_RTE_BACKEND");
    /* After a failed start the runtime can still start normally. */
    BM_CHECK_EQ_INT(bm_rte_init(), BM_OK);
    BM_CHECK_STR(bm_rte_backend_name(), "singleton");
    bm_rte_finalize();
}

int main(void)
{
    static const char *vars[] = {"BMRUN_RANK",  "BMRUN_SIZE", "BMRUN_KVS",     "BMRUN_SECRET",
                                 "BMRUN_JOBID", "BMRUN_NODE", "BM_RTE_BACKEND"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
    BM_RUN(test_identity);
    BM_RUN(test_modex);
    BM_RUN(test_job_name);
    BM_RUN(test_at_exit_and_finalize);
    BM_RUN(test_forced_bmrun_without_env);
    return bm_test_summary("test_rte_singleton");
}
