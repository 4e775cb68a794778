/* A rank program for the launcher tests, run under bmrun. The first argument
 * picks the behaviour; the test scripts check bmrun's exit code and output:
 *   modex             put a blob, fence, get and verify every peer's blob, print node
 *   exit R CODE       rank R exits with CODE at once; the others wait in a fence
 *   kill R            rank R kills itself with SIGKILL; the others wait in a fence
 *   skipfence R       rank R finalizes and exits 0 without the fence the others enter
 *   hang R            rank R sleeps for ever (every rank when R is -1); the others exit 0
 *   abort R CODE      rank R calls bm_rte_abort(CODE); the others wait in a fence
 *   spam LINES        print LINES numbered lines on stdout and on stderr
 *   files MODE        create job files in /dev/shm and /tmp, then exit 0 (MODE ok)
 *                     or die by SIGKILL on rank 0 (MODE kill)
 *   late R            rank R sleeps 200 ms, leaves a mark (a job file), then fences
 *                     twice (bm_rte_barrier, bm_rte_barrier_progress); every other
 *                     rank fences and then must find the mark: a fence that returns
 *                     before every rank entered it (hydra's PMI-2 kvs-fence alone)
 *                     fails here
 *   badsecret         rank 0 talks to the key-value service with a wrong secret and
 *                     checks that it is disconnected without data (and, when
 *                     BM_RUN_HELLO_TIMEOUT is set, that a silent connection is
 *                     closed); then everyone fences */
#include "runtime/rte.h"
#include "runtime/rte_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int fail(const char *what)
{
    fprintf(stderr, "launcher_rank %d: FAILED: %s\n", bm_rte_self()->rank, what);
    return 1;
}

static int do_modex(void)
{
    const struct bm_rte_proc *me = bm_rte_self();
    char blob[128];
    int n = snprintf(blob, sizeof(blob), "blob of rank %d on node %d", me->rank, me->node);
    if (bm_rte_modex_put("test.blob", blob, (size_t)n + 1) != BM_OK)
        return fail("put");
    if (bm_rte_modex_fence() != BM_OK)
        return fail("fence");
    for (int r = 0; r < me->size; r++) {
        const void *data;
        size_t len;
        char want[128];
        snprintf(want, sizeof(want), "blob of rank %d on node %d", r, bm_rte_node_of(r));
        if (bm_rte_modex_get(r, "test.blob", &data, &len) != BM_OK)
            return fail("get of a peer's blob");
        if (len != strlen(want) + 1 || memcmp(data, want, len) != 0)
            return fail("peer blob content");
        if (bm_rte_modex_get(r, "test.absent", &data, &len) != BM_ERR_NOT_FOUND)
            return fail("get of an absent key");
    }
    /* A second epoch works too. */
    if (bm_rte_barrier() != BM_OK)
        return fail("barrier");
    int peer = (me->rank + 1) % me->size;
    printf("rank %d of %d node %d of %d local %d of %d peer %d node %d ok\n", me->rank, me->size,
           me->node, me->num_nodes, me->local_rank, me->local_size, peer, bm_rte_node_of(peer));
    return 0;
}

/* Rank `who` does `act`, the others block in a fence (killed by bmrun). */
static int do_one(int who, void (*act)(int), int arg)
{
    if (bm_rte_self()->rank == who)
        act(arg);
    bm_rte_modex_fence();
    return 0;
}

static void act_exit(int code)
{
    exit(code);
}

static void act_kill(int unused)
{
    (void)unused;
    raise(SIGKILL);
}

static void act_abort(int code)
{
    bm_rte_abort(code, "launcher test abort");
}

static int do_spam(int lines)
{
    int r = bm_rte_self()->rank;
    char pad[200];
    memset(pad, 'x', sizeof(pad) - 1);
    pad[sizeof(pad) - 1] = '\0';
    for (int i = 0; i < lines; i++) {
        printf("out rank %d line %d %s end\n", r, i, pad);
        fprintf(stderr, "err rank %d line %d %s end\n", r, i, pad);
    }
    return 0;
}

static int do_files(const char *mode)
{
    char name[128], path[160];
    bm_rte_job_name("testfile", name, sizeof(name));
    char shm[140];
    snprintf(shm, sizeof(shm), "/%s.%d", name, bm_rte_self()->rank);
    int fd = shm_open(shm, O_CREAT | O_RDWR, 0600);
    if (fd < 0)
        return fail("shm_open");
    close(fd);
    snprintf(path, sizeof(path), "/tmp/%s.%d", name, bm_rte_self()->rank);
    fd = open(path, O_CREAT | O_WRONLY, 0600);
    if (fd < 0)
        return fail("open in /tmp");
    close(fd);
    printf("made /dev/shm%s and %s\n", shm, path);
    fflush(stdout);
    if (strcmp(mode, "kill") == 0) {
        bm_rte_modex_fence();
        if (bm_rte_self()->rank == 0)
            raise(SIGKILL);
        bm_rte_modex_fence();
    }
    return 0;
}

static void late_progress(void *arg)
{
    (*(unsigned long *)arg)++;
    usleep(100);
}

/* Every rank but r must leave both fences after r entered them. */
static int do_late(int r)
{
    char name[128], path[160];
    const struct bm_rte_proc *me = bm_rte_self();
    bm_rte_job_name("late", name, sizeof(name));
    snprintf(path, sizeof(path), "/tmp/%s", name);
    unsigned long calls = 0;
    for (int round = 0; round < 2; round++) {
        if (me->rank == r) {
            usleep(200000);
            char mark[200];
            snprintf(mark, sizeof(mark), "%s.%d", path, round);
            int fd = open(mark, O_CREAT | O_WRONLY, 0600);
            if (fd < 0)
                return fail("create the mark in /tmp");
            close(fd);
        }
        bm_status_t rc =
            round == 0 ? bm_rte_barrier() : bm_rte_barrier_progress(late_progress, NULL, &calls);
        if (rc != BM_OK)
            return fail("fence");
        char mark[200];
        snprintf(mark, sizeof(mark), "%s.%d", path, round);
        if (access(mark, F_OK) != 0) {
            fprintf(stderr,
                    "launcher_rank %d: FAILED: fence %d returned before rank %d entered it\n",
                    me->rank, round, r);
            return 1;
        }
    }
    if (bm_rte_barrier() != BM_OK)
        return fail("last fence");
    if (me->rank == r) {
        char mark[200];
        for (int round = 0; round < 2; round++) {
            snprintf(mark, sizeof(mark), "%s.%d", path, round);
            unlink(mark);
        }
    }
    printf("rank %d: both fences waited for rank %d (%s)\n", me->rank, r,
           me->rank == r || calls > 0 ? "progressed" : "NO progress calls");
    return me->rank == r || calls > 0 ? 0 : fail("no progress call during the fence");
}

/* Talk to the service with a wrong secret: it must close the connection
 * without sending anything. Also a first message that is not a hello. */
static int probe(const uint8_t *secret, int first_type)
{
    int fd;
    if (bm_rte_net_connect_list(getenv("BMRUN_KVS"), 2000, &fd) != BM_OK)
        return fail("connect to the service");
    uint8_t hello[sizeof(struct bm_rte_msg_hello)] = {0};
    memcpy(hello, secret, BM_RTE_SECRET_LEN);
    bm_rte_proto_put_u32(hello + BM_RTE_SECRET_LEN, 0);
    if (first_type == BM_RTE_MSG_HELLO) {
        bm_rte_proto_send(fd, BM_RTE_MSG_HELLO, 0, hello, sizeof(hello));
    } else {
        uint8_t kv[64];
        size_t n = bm_rte_proto_kv_encode(kv, 0, "test.blob", 9, "evil", 5);
        bm_rte_proto_send(fd, (uint16_t)first_type, 1, kv, n);
    }
    /* Then try to take part in the fence anyway. */
    bm_rte_proto_send(fd, BM_RTE_MSG_FENCE, 1, NULL, 0);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int got = 0;
    if (poll(&p, 1, 5000) == 1) {
        char buf[64];
        ssize_t n = read(fd, buf, sizeof(buf));
        got = n > 0 ? (int)n : 0;
        if (n < 0 && errno != ECONNRESET)
            got = -1;
    } else {
        close(fd);
        return fail("the service kept a bad connection open");
    }
    close(fd);
    if (got != 0)
        return fail("the service sent data to a bad connection");
    return 0;
}

/* A connection that never says anything is closed after BM_RUN_HELLO_TIMEOUT. */
static int probe_silent(void)
{
    int fd;
    if (bm_rte_net_connect_list(getenv("BMRUN_KVS"), 2000, &fd) != BM_OK)
        return fail("connect to the service");
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char c;
    int rc = poll(&p, 1, 10000) == 1 && read(fd, &c, 1) <= 0 ? 0 : 1;
    close(fd);
    return rc ? fail("a silent connection was not closed") : 0;
}

static int do_badsecret(void)
{
    int rc = 0;
    if (bm_rte_self()->rank == 0) {
        uint8_t bad[BM_RTE_SECRET_LEN];
        bm_rte_proto_secret_from_hex(getenv("BMRUN_SECRET"), bad);
        bad[7] ^= 0x40;
        rc |= probe(bad, BM_RTE_MSG_HELLO);
        rc |= probe(bad, BM_RTE_MSG_FENCE);
        if (getenv("BM_RUN_HELLO_TIMEOUT"))
            rc |= probe_silent();
        if (!rc)
            printf("bad secret rejected\n");
    }
    rc |= do_modex();
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: launcher_rank MODE [args]\n");
        return 2;
    }
    if (bm_rte_init() != BM_OK) {
        fprintf(stderr, "launcher_rank: bm_rte_init failed\n");
        return 1;
    }
    int rc = 0;
    const char *mode = argv[1];
    int a = argc > 2 ? atoi(argv[2]) : 0, b = argc > 3 ? atoi(argv[3]) : 0;
    if (strcmp(mode, "modex") == 0)
        rc = do_modex();
    else if (strcmp(mode, "exit") == 0)
        rc = do_one(a, act_exit, b);
    else if (strcmp(mode, "kill") == 0)
        rc = do_one(a, act_kill, 0);
    else if (strcmp(mode, "abort") == 0)
        rc = do_one(a, act_abort, b);
    else if (strcmp(mode, "skipfence") == 0) {
        if (bm_rte_self()->rank != a)
            rc = bm_rte_modex_fence() == BM_OK ? 0 : 1;
    } else if (strcmp(mode, "hang") == 0) {
        if (bm_rte_self()->rank == a || a == -1)
            for (;;)
                pause();
    } else if (strcmp(mode, "spam") == 0)
        rc = do_spam(a);
    else if (strcmp(mode, "files") == 0)
        rc = do_files(argc > 2 ? argv[2] : "ok");
    else if (strcmp(mode, "badsecret") == 0)
        rc = do_badsecret();
    else if (strcmp(mode, "late") == 0)
        rc = do_late(a);
    else {
        fprintf(stderr, "launcher_rank: unknown mode %s\n", mode);
        rc = 2;
    }
    bm_rte_finalize();
    return rc;
}
