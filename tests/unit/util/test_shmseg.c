/* Unit test of src/util/shmseg: a segment created by one process is seen
 * by another (a forked child attaches by name and writes; the parent reads
 * the bytes), the name disappears on unlink while both mappings stay
 * valid, attaching to a removed name says BM_ERR_NOT_FOUND, a segment too
 * small for what the caller expects is refused, a stale file of the same
 * name is replaced, bm_util_shmseg_cleanup removes the names not removed
 * yet, and bad names are refused. */
#include "bm_test.h"
#include "util/shmseg.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char name_a[64], name_b[64];

static bool exists(const char *name)
{
    char path[128];
    snprintf(path, sizeof(path), "/dev/shm%s", name);
    return access(path, F_OK) == 0;
}

static void test_shared_between_processes(void)
{
    struct bm_util_shmseg seg;
    BM_CHECK_EQ_INT(bm_util_shmseg_create(&seg, name_a, 10000), BM_OK);
    BM_CHECK(seg.size >= 10000 && seg.size % (size_t)sysconf(_SC_PAGESIZE) == 0);
    BM_CHECK(seg.owner && seg.linked && exists(name_a));
    unsigned char *p = seg.addr;
    size_t zeros = 0;
    for (size_t i = 0; i < seg.size; i++)
        zeros += p[i] == 0;
    BM_CHECK_EQ_INT(zeros, seg.size);
    pid_t pid = fork();
    if (pid == 0) {
        struct bm_util_shmseg c;
        if (bm_util_shmseg_attach(&c, name_a, 10000) != BM_OK)
            _exit(2);
        bm_test_fill(c.addr, 10000, 7);
        bm_util_shmseg_detach(&c); /* not the owner: the name stays */
        _exit(exists(name_a) ? 0 : 3);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    BM_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    BM_CHECK_EQ_INT(bm_test_bad_bytes(seg.addr, 10000, 7), 0);
    /* more than the segment holds */
    struct bm_util_shmseg big;
    BM_CHECK_EQ_INT(bm_util_shmseg_attach(&big, name_a, seg.size + 1), BM_ERR_SYSTEM);
    bm_util_shmseg_unlink(&seg);
    BM_CHECK(!exists(name_a) && !seg.linked);
    BM_CHECK_EQ_INT(bm_test_bad_bytes(seg.addr, 10000, 7), 0); /* still mapped */
    struct bm_util_shmseg gone;
    BM_CHECK_EQ_INT(bm_util_shmseg_attach(&gone, name_a, 1), BM_ERR_NOT_FOUND);
    bm_util_shmseg_unlink(&seg); /* twice is harmless */
    bm_util_shmseg_detach(&seg);
    BM_CHECK(seg.addr == NULL);
}

static void test_stale_and_cleanup(void)
{
    /* a file left by a crashed job of the same id */
    int fd = shm_open(name_b, O_CREAT | O_RDWR, 0600);
    BM_CHECK(fd >= 0);
    BM_CHECK(ftruncate(fd, 4096) == 0);
    close(fd);
    struct bm_util_shmseg seg;
    BM_CHECK_EQ_INT(bm_util_shmseg_create(&seg, name_b, 3 * 4096), BM_OK);
    BM_CHECK(exists(name_b));
    struct bm_util_shmseg other;
    BM_CHECK_EQ_INT(bm_util_shmseg_attach(&other, name_b, 3 * 4096), BM_OK);
    bm_util_shmseg_detach(&other);
    /* the exit handler's job */
    bm_util_shmseg_cleanup();
    BM_CHECK(!exists(name_b));
    bm_util_shmseg_detach(&seg);
}

static void test_bad_names(void)
{
    struct bm_util_shmseg seg;
    BM_CHECK_EQ_INT(bm_util_shmseg_create(&seg, "no-slash", 10), BM_ERR_BAD_PARAM);
    BM_CHECK_EQ_INT(bm_util_shmseg_create(&seg, "/a/b", 10), BM_ERR_BAD_PARAM);
    BM_CHECK_EQ_INT(bm_util_shmseg_create(&seg, "/", 10), BM_ERR_BAD_PARAM);
    BM_CHECK_EQ_INT(bm_util_shmseg_attach(&seg, NULL, 10), BM_ERR_BAD_PARAM);
}

int main(void)
{
    snprintf(name_a, sizeof(name_a), "/bm-test%d-shmseg-a", (int)getpid());
    snprintf(name_b, sizeof(name_b), "/bm-test%d-shmseg-b", (int)getpid());
    BM_RUN(test_shared_between_processes);
    BM_RUN(test_stale_and_cleanup);
    BM_RUN(test_bad_names);
    shm_unlink(name_a);
    shm_unlink(name_b);
    return bm_test_summary("test_shmseg");
}
