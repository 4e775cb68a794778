/* Tests of the futex lock (src/util/lock.h): take, try and give, a
 * recursive lock's depth, and the leaf check of builds with assertions: a
 * lock taken while this thread holds a leaf lock (the PML's per-peer send
 * locks) aborts naming both, in a child process; giving the leaf back
 * clears it. */
#include "util/lock.h"

#include "bm_test.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static struct bm_util_lock_class leaf_class = {.name = "test leaf", .leaf = true};
static struct bm_util_lock_class plain_class = {.name = "test plain"};

static void test_take_try_give(void)
{
    struct bm_util_lock a, r;
    bm_util_lock_init(&a, &plain_class, false);
    bm_util_lock_init(&r, &plain_class, true);
    bm_util_lock_take(&a);
    BM_CHECK(!bm_util_lock_try(&a)); /* not recursive: held */
    bm_util_lock_give(&a);
    BM_CHECK(bm_util_lock_try(&a));
    bm_util_lock_give(&a);
    bm_util_lock_take(&r);
    bm_util_lock_take(&r); /* recursive: the owner again */
    BM_CHECK_EQ_INT((int)r.depth, 1);
    bm_util_lock_give(&r);
    bm_util_lock_give(&r);
    BM_CHECK(bm_util_lock_try(&r));
    bm_util_lock_give(&r);
    bm_util_lock_destroy(&a);
    bm_util_lock_destroy(&r);
}

/* Taking a lock under a leaf: the child aborts (assertions on) with a line
 * naming both locks; without assertions the check is compiled out. */
static void test_leaf_check(void)
{
    struct bm_util_lock leaf, other;
    bm_util_lock_init(&leaf, &leaf_class, false);
    bm_util_lock_init(&other, &plain_class, false);
    /* a leaf taken and given back, then another lock: fine */
    bm_util_lock_take(&leaf);
    bm_util_lock_give(&leaf);
    bm_util_lock_take(&other);
    bm_util_lock_take(&leaf); /* a leaf under another lock: fine */
    bm_util_lock_give(&leaf);
    bm_util_lock_give(&other);
#ifndef NDEBUG
    int fds[2];
    BM_CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        bm_util_lock_take(&leaf);
        bm_util_lock_take(&other); /* aborts */
        _exit(0);
    }
    close(fds[1]);
    char buf[512] = {0};
    size_t got = 0;
    ssize_t n;
    while (got < sizeof(buf) - 1 && (n = read(fds[0], buf + got, sizeof(buf) - 1 - got)) > 0)
        got += (size_t)n;
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    BM_CHECK_MSG(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
                 "a lock taken under a leaf lock did not abort (status %#x)", st);
    BM_CHECK_MSG(strstr(buf, "'test plain' taken while this thread holds 'test leaf'") != NULL,
                 "the abort did not name both locks: %s", buf);
#endif
    bm_util_lock_destroy(&leaf);
    bm_util_lock_destroy(&other);
}

int main(void)
{
    BM_RUN(test_take_try_give);
    BM_RUN(test_leaf_check);
    return bm_test_summary("test_util_lock");
}
