/* Unit test of the registration check of transport tables (btl.h: "a
 * capability advertised without its function is a start-up error naming the
 * transport and the operation"): every table in the registry passes it with
 * the capabilities it declares; copies of real tables with one operation
 * removed fail it with a message that names the transport, the capability
 * and the missing operation; a module that advertises more than its table
 * declares is refused by name; a transport's MPI_THREAD_MULTIPLE table
 * (mt_ops) must be its twin; and opening the transport layer creates
 * component instances whose modules point back at them. */
#include "bm_test.h"
#include "btl/btl.h"
#include "runtime/rte.h"

#include <stdlib.h>
#include <string.h>

static const struct bm_btl_ops *find_ops(const char *name)
{
    for (int i = 0; i < bm_btl_registry_count; i++)
        if (strcmp(bm_btl_registry[i]->name, name) == 0)
            return bm_btl_registry[i];
    return NULL;
}

static void test_registry_passes(void)
{
    BM_CHECK(bm_btl_registry_count >= 1);
    for (int i = 0; i < bm_btl_registry_count; i++) {
        const struct bm_btl_ops *ops = bm_btl_registry[i];
        char why[320] = "";
        BM_CHECK_MSG(bm_btl_ops_check(ops, ops->caps, why, sizeof(why)) == BM_OK, "%s: %s",
                     ops->name, why);
        BM_CHECK_MSG(ops->caps & BM_BTL_CAP_SEND, "%s does not declare BM_BTL_CAP_SEND", ops->name);
    }
}

/* The check must refuse ops with the function at offset removed, saying
 * each of the words in want. */
static void expect_refused(const struct bm_btl_ops *orig, size_t offset, uint32_t caps,
                           const char *const *want)
{
    struct bm_btl_ops bad = *orig;
    memset((char *)&bad + offset, 0, sizeof(void (*)(void)));
    char why[320] = "";
    BM_CHECK_EQ_INT(bm_btl_ops_check(&bad, caps, why, sizeof(why)), BM_ERR_BAD_PARAM);
    for (; *want; want++)
        BM_CHECK_MSG(strstr(why, *want) != NULL, "'%s' does not say '%s'", why, *want);
}

static void test_missing_operations(void)
{
    const struct bm_btl_ops *self = find_ops("self");
    BM_CHECK(self != NULL);
    if (!self)
        return;
    expect_refused(self, offsetof(struct bm_btl_ops, put), self->caps,
                   (const char *const[]){"'self'", "BM_BTL_CAP_PUT", "put", NULL});
    expect_refused(self, offsetof(struct bm_btl_ops, atomic_cswap), self->caps,
                   (const char *const[]){"'self'", "BM_BTL_CAP_ATOMIC_FOPS", "atomic_cswap", NULL});
    expect_refused(self, offsetof(struct bm_btl_ops, sendi), self->caps,
                   (const char *const[]){"BM_BTL_CAP_SENDI", "sendi", NULL});
    expect_refused(self, offsetof(struct bm_btl_ops, flush), self->caps,
                   (const char *const[]){"'self'", "flush", NULL});
    expect_refused(self, offsetof(struct bm_btl_ops, progress), self->caps,
                   (const char *const[]){"'self'", "progress", "every transport", NULL});
    /* Without the capability, the function is not needed. */
    struct bm_btl_ops no_put = *self;
    no_put.put = NULL;
    char why[320] = "";
    BM_CHECK_EQ_INT(bm_btl_ops_check(&no_put, self->caps & ~BM_BTL_CAP_PUT, why, sizeof(why)),
                    BM_OK);
    /* A table without a name cannot be named in any message. */
    struct bm_btl_ops anon = *self;
    anon.name = NULL;
    BM_CHECK_EQ_INT(bm_btl_ops_check(&anon, anon.caps, why, sizeof(why)), BM_ERR_BAD_PARAM);
}

static void test_module_beyond_table(void)
{
    const struct bm_btl_ops *self = find_ops("self");
    if (!self)
        return;
    struct bm_btl_ops narrow = *self;
    narrow.caps = BM_BTL_CAP_SEND;
    narrow.mt_ops = NULL; /* self's twin has self's caps, not the narrowed ones */
    struct bm_btl_module m;
    memset(&m, 0, sizeof(m));
    m.ops = &narrow;
    snprintf(m.name, sizeof(m.name), "self:test");
    m.caps = BM_BTL_CAP_SEND;
    char why[320] = "";
    BM_CHECK_EQ_INT(bm_btl_base_check_module(&m, why, sizeof(why)), BM_OK);
    m.caps |= BM_BTL_CAP_GET;
    BM_CHECK_EQ_INT(bm_btl_base_check_module(&m, why, sizeof(why)), BM_ERR_BAD_PARAM);
    BM_CHECK_MSG(strstr(why, "self:test") && strstr(why, "BM_BTL_CAP_GET") && strstr(why, "get"),
                 "'%s' does not name the module, the capability and the operation", why);
    /* getv comes only with get, in the table and in each module */
    const struct bm_btl_ops *sm = find_ops("sm");
    if (sm && (sm->caps & BM_BTL_CAP_GETV)) {
        expect_refused(sm, offsetof(struct bm_btl_ops, get), sm->caps & ~BM_BTL_CAP_GET,
                       (const char *const[]){"'sm'", "BM_BTL_CAP_GETV", "get", NULL});
        struct bm_btl_module v;
        memset(&v, 0, sizeof(v));
        v.ops = sm;
        snprintf(v.name, sizeof(v.name), "sm:test");
        v.caps = BM_BTL_CAP_SEND | BM_BTL_CAP_GETV;
        BM_CHECK_EQ_INT(bm_btl_base_check_module(&v, why, sizeof(why)), BM_ERR_BAD_PARAM);
        BM_CHECK_MSG(strstr(why, "sm:test") && strstr(why, "without BM_BTL_CAP_GET"), "'%s'", why);
        v.caps |= BM_BTL_CAP_GET;
        BM_CHECK_EQ_INT(bm_btl_base_check_module(&v, why, sizeof(why)), BM_OK);
    }
    m.caps = 0; /* every module sends */
    BM_CHECK_EQ_INT(bm_btl_base_check_module(&m, why, sizeof(why)), BM_ERR_BAD_PARAM);
    BM_CHECK_MSG(strstr(why, "BM_BTL_CAP_SEND") != NULL, "'%s'", why);
}

/* btl.h "mt_ops": tcp's MPI_THREAD_MULTIPLE table is its twin (same name
 * and caps, none of its own), with its own send-side operations (those of
 * the single-threaded table check no thread flag), and the registration
 * check refuses a twin that is not one. */
static void test_mt_twin(void)
{
    const struct bm_btl_ops *tcp = find_ops("tcp");
    if (!tcp)
        return;
    const struct bm_btl_ops *mo = tcp->mt_ops;
    BM_CHECK(mo != NULL);
    if (!mo)
        return;
    BM_CHECK(strcmp(mo->name, tcp->name) == 0 && mo->caps == tcp->caps && !mo->mt_ops);
    BM_CHECK(mo->send != tcp->send && mo->alloc != tcp->alloc && mo->free != tcp->free &&
             mo->prepare_src != tcp->prepare_src && mo->prepare_src_iov != tcp->prepare_src_iov);
    BM_CHECK(mo->progress == tcp->progress && mo->init == tcp->init);
    char why[320] = "";
    struct bm_btl_ops twin = *mo, orig = *tcp;
    orig.mt_ops = &twin;
    BM_CHECK_EQ_INT(bm_btl_ops_check(&orig, orig.caps, why, sizeof(why)), BM_OK);
    twin.caps &= ~BM_BTL_CAP_STATS;
    BM_CHECK_EQ_INT(bm_btl_ops_check(&orig, orig.caps, why, sizeof(why)), BM_ERR_BAD_PARAM);
    BM_CHECK_MSG(strstr(why, "'tcp'") && strstr(why, "mt_ops"), "'%s'", why);
    twin = *mo;
    twin.send = NULL;
    BM_CHECK_EQ_INT(bm_btl_ops_check(&orig, orig.caps, why, sizeof(why)), BM_ERR_BAD_PARAM);
    BM_CHECK_MSG(strstr(why, "'tcp'") && strstr(why, "send"), "'%s'", why);
    /* only a transport that locks for itself has a second table */
    twin = *mo;
    orig.caps &= ~BM_BTL_CAP_THREADS;
    twin.caps = orig.caps;
    BM_CHECK_EQ_INT(bm_btl_ops_check(&orig, orig.caps, why, sizeof(why)), BM_ERR_BAD_PARAM);
}

static void test_instances(void)
{
    setenv("BM_BTL", "self", 1);
    BM_CHECK_EQ_INT(bm_btl_base_open(NULL), BM_OK);
    BM_CHECK_EQ_INT(bm_btl_base_add_procs(1), BM_OK);
    struct bm_btl_peer *p = bm_btl_base_peer(0);
    BM_CHECK(p && p->eager.count == 1);
    if (p && p->eager.count == 1) {
        struct bm_btl_module *m = p->eager.paths[0].module;
        BM_CHECK(m->component != NULL);
        BM_CHECK(m->component && m->component->ops == m->ops);
        BM_CHECK(m->component && m->component->count == 1 && m->component->modules[0] == m);
        BM_CHECK(m->component && m->component->rte &&
                 m->component->rte->self->rank == bm_rte_self()->rank);
    }
    bm_btl_base_close();
    unsetenv("BM_BTL");
}

int main(void)
{
    if (bm_rte_init() != BM_OK) {
        fprintf(stderr, "runtime did not start\n");
        return 1;
    }
    BM_RUN(test_registry_passes);
    BM_RUN(test_missing_operations);
    BM_RUN(test_module_beyond_table);
    BM_RUN(test_mt_twin);
    BM_RUN(test_instances);
    bm_rte_finalize();
    return bm_test_summary("test_btl_registry");
}
