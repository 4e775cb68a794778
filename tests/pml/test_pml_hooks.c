/* Unit test of the PML progress hooks (bm_pml_progress_register): hooks run
 * from bm_pml_progress in registration order and their event counts are
 * added to its result; a hook may unregister itself or another hook and
 * register new ones during a pass (the new ones run from the next pass);
 * a progress call made from inside a hook does not run the hooks again;
 * unregistering an unknown hook reports BM_ERR_NOT_FOUND. No transports are
 * open: the PML is marked initialized so that bm_pml_progress runs. */
#include "bm_test.h"
#include "pml/pml_internal.h"

static int order[64], norder;

struct counter {
    int id;
    int calls;
    int events; /* returned from each call */
};

static int count_hook(void *arg)
{
    struct counter *c = arg;
    c->calls++;
    if (norder < 64)
        order[norder++] = c->id;
    return c->events;
}

static void test_order_and_events(void)
{
    struct counter a = {1, 0, 2}, b = {2, 0, 0}, c = {3, 0, 5};
    BM_CHECK_EQ_INT(bm_pml_progress_register(count_hook, &a), BM_OK);
    BM_CHECK_EQ_INT(bm_pml_progress_register(count_hook, &b), BM_OK);
    BM_CHECK_EQ_INT(bm_pml_progress_register(count_hook, &c), BM_OK);
    norder = 0;
    BM_CHECK_EQ_INT(bm_pml_progress(), 7);
    BM_CHECK_EQ_INT(norder, 3);
    BM_CHECK(order[0] == 1 && order[1] == 2 && order[2] == 3);
    BM_CHECK_EQ_INT(bm_pml_progress_unregister(count_hook, &b), BM_OK);
    BM_CHECK_EQ_INT(bm_pml_progress_unregister(count_hook, &b), BM_ERR_NOT_FOUND);
    BM_CHECK_EQ_INT(bm_pml_progress(), 7);
    BM_CHECK_EQ_INT(b.calls, 1);
    BM_CHECK_EQ_INT(a.calls, 2);
    BM_CHECK_EQ_INT(bm_pml_progress_unregister(count_hook, &a), BM_OK);
    BM_CHECK_EQ_INT(bm_pml_progress_unregister(count_hook, &c), BM_OK);
    BM_CHECK_EQ_INT(bm_pml_progress(), 0);
    BM_CHECK_EQ_INT(c.calls, 2);
}

/* A hook that removes itself after n calls, removes a victim, and adds a
 * newcomer the first time it runs. */
struct churn {
    int calls, limit;
    struct counter *victim, *newcomer;
};

static int churn_hook(void *arg)
{
    struct churn *ch = arg;
    if (ch->calls++ == 0) {
        BM_CHECK_EQ_INT(bm_pml_progress_unregister(count_hook, ch->victim), BM_OK);
        /* many registrations: the table grows (moves) during the pass */
        for (int i = 0; i < 20; i++)
            BM_CHECK_EQ_INT(bm_pml_progress_register(count_hook, ch->newcomer), BM_OK);
    }
    if (ch->calls == ch->limit)
        BM_CHECK_EQ_INT(bm_pml_progress_unregister(churn_hook, ch), BM_OK);
    return 1;
}

static void test_changes_during_pass(void)
{
    struct counter victim = {7, 0, 0}, newcomer = {8, 0, 1};
    struct churn ch = {0, 2, &victim, &newcomer};
    BM_CHECK_EQ_INT(bm_pml_progress_register(churn_hook, &ch), BM_OK);
    BM_CHECK_EQ_INT(bm_pml_progress_register(count_hook, &victim), BM_OK);
    BM_CHECK_EQ_INT(bm_pml_progress(), 1); /* victim removed before its turn; newcomers wait */
    BM_CHECK_EQ_INT(victim.calls, 0);
    BM_CHECK_EQ_INT(newcomer.calls, 0);
    BM_CHECK_EQ_INT(bm_pml_progress(), 21); /* churn (removes itself) + 20 newcomers */
    BM_CHECK_EQ_INT(newcomer.calls, 20);
    BM_CHECK_EQ_INT(bm_pml_progress(), 20);
    BM_CHECK_EQ_INT(ch.calls, 2);
    for (int i = 0; i < 20; i++)
        BM_CHECK_EQ_INT(bm_pml_progress_unregister(count_hook, &newcomer), BM_OK);
    BM_CHECK_EQ_INT(bm_pml_progress(), 0);
}

static int nested_depth, nested_max;

static int nested_hook(void *arg)
{
    (void)arg;
    nested_depth++;
    if (nested_depth > nested_max)
        nested_max = nested_depth;
    bm_pml_progress(); /* a hook waiting on something: must not recurse into hooks */
    nested_depth--;
    return 0;
}

static void test_no_nesting(void)
{
    BM_CHECK_EQ_INT(bm_pml_progress_register(nested_hook, NULL), BM_OK);
    for (int i = 0; i < 3; i++)
        bm_pml_progress();
    BM_CHECK_EQ_INT(nested_max, 1);
    BM_CHECK_EQ_INT(bm_pml_progress_unregister(nested_hook, NULL), BM_OK);
}

int main(void)
{
    bm_pml_g.initialized = true;
    bm_pml_g.cfg.idle_yield = 0;
    BM_RUN(test_order_and_events);
    BM_RUN(test_changes_during_pass);
    BM_RUN(test_no_nesting);
    bm_pml_g.initialized = false;
    return bm_test_summary("test_pml_hooks");
}
