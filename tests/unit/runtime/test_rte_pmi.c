/* Unit test of the PMI backend and its wire protocols without a launcher: a
 * fake PMI server (a thread on the other end of a socketpair handed over as
 * PMI_FD) speaks PMI-1 or PMI-2 as hydra and Slurm do, announcing a small
 * vallen_max so that modex entries are split into pieces, and mirroring
 * rank 0's keys as rank 1's so that a get of a peer's entry comes back
 * through the launcher. Also checks the message parser (field order, ";;"
 * escapes), PMI_process_mapping (hydra's repeated blocks, Slurm's blocks,
 * junk), the value encoding, node renumbering, job ids, the detection of
 * launchers this process cannot use, and abort (exit code and the abort
 * command reaching the server). */
#include "bm_test.h"
#include "runtime/rte.h"
#include "runtime/rte_backend.h"
#include "runtime/rte_pmi_wire.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- pure functions --------------------------------------------------------- */

static void test_parse(void)
{
    char a[] = "cmd=get_result rc=0 msg=success value=abc";
    struct bm_rte_pmi_msg m;
    BM_CHECK_EQ_INT(bm_rte_pmi_parse(a, 1, &m), BM_OK);
    BM_CHECK_STR(bm_rte_pmi_field(&m, "cmd"), "get_result");
    BM_CHECK_STR(bm_rte_pmi_field(&m, "value"), "abc");
    BM_CHECK(bm_rte_pmi_field(&m, "nope") == NULL);
    char b[] = "cmd=kvs-get-response;rc=0;found=TRUE;value=a;;b=c;";
    BM_CHECK_EQ_INT(bm_rte_pmi_parse(b, 2, &m), BM_OK);
    BM_CHECK_STR(bm_rte_pmi_field(&m, "value"), "a;b=c");
    BM_CHECK_STR(bm_rte_pmi_field(&m, "found"), "TRUE");
    char c[] = "cmd=x novalue";
    BM_CHECK_EQ_INT(bm_rte_pmi_parse(c, 1, &m), BM_ERR_PROTOCOL);
    char d[] = "rc=0 cmd=x";
    BM_CHECK_EQ_INT(bm_rte_pmi_parse(d, 1, &m), BM_ERR_PROTOCOL);
}

static void test_mapping(void)
{
    int node[8];
    /* hydra: one block of one rank on one node, repeated */
    BM_CHECK_EQ_INT(bm_rte_pmi_parse_mapping("(vector,(0,1,1))", 3, node), BM_OK);
    BM_CHECK(node[0] == 0 && node[1] == 0 && node[2] == 0);
    /* Slurm, 2 nodes x 2 ranks in blocks */
    BM_CHECK_EQ_INT(bm_rte_pmi_parse_mapping("(vector,(0,2,2))", 4, node), BM_OK);
    BM_CHECK(node[0] == 0 && node[1] == 0 && node[2] == 1 && node[3] == 1);
    /* cyclic over 2 nodes, then an uneven tail */
    BM_CHECK_EQ_INT(bm_rte_pmi_parse_mapping("(vector,(0,2,1),(0,1,2))", 6, node), BM_OK);
    int want[] = {0, 1, 0, 0, 0, 1};
    BM_CHECK(memcmp(node, want, sizeof(want)) == 0);
    BM_CHECK_EQ_INT(bm_rte_pmi_parse_mapping("(vector)", 2, node), BM_ERR_PROTOCOL);
    BM_CHECK_EQ_INT(bm_rte_pmi_parse_mapping("(vector,(0,1))", 2, node), BM_ERR_PROTOCOL);
    BM_CHECK_EQ_INT(bm_rte_pmi_parse_mapping("vector,(0,1,1)", 2, node), BM_ERR_PROTOCOL);
    BM_CHECK_EQ_INT(bm_rte_pmi_parse_mapping("(vector,(0,0,0))", 2, node), BM_ERR_PROTOCOL);
}

static void test_encoding(void)
{
    unsigned char in[256], back[256];
    char text[400];
    for (int i = 0; i < 256; i++)
        in[i] = (unsigned char)(i * 7 + 3);
    for (size_t n = 0; n <= 256; n += (n < 8 ? 1 : 61)) {
        bm_rte_pmi_encode(in, n, text);
        BM_CHECK_EQ_INT(strlen(text), bm_rte_pmi_encoded_len(n));
        BM_CHECK_EQ_INT(
            strspn(text, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
            strlen(text));
        size_t m = 0;
        BM_CHECK_EQ_INT(bm_rte_pmi_decode(text, strlen(text), back, &m), BM_OK);
        BM_CHECK(m == n && memcmp(in, back, n) == 0);
    }
    size_t m;
    BM_CHECK_EQ_INT(bm_rte_pmi_decode("ab=c", 4, back, &m), BM_ERR_PROTOCOL);
    BM_CHECK_EQ_INT(bm_rte_pmi_decode("abcde", 5, back, &m), BM_ERR_PROTOCOL);
}

static void test_nodes_and_jobid(void)
{
    struct bm_rte_proc p = {.rank = 3, .size = 5};
    int node_of[5] = {7, 2, 7, 2, 9};
    bm_rte_proc_set_nodes(&p, node_of);
    int want[] = {0, 1, 0, 1, 2};
    BM_CHECK(memcmp(node_of, want, sizeof(want)) == 0);
    BM_CHECK_EQ_INT(p.node, 1);
    BM_CHECK_EQ_INT(p.num_nodes, 3);
    BM_CHECK_EQ_INT(p.local_rank, 1);
    BM_CHECK_EQ_INT(p.local_size, 2);
    char a[32], b[32];
    bm_rte_jobid_from("pmi", "kvs_26917_0_539472129_vm", a, sizeof(a));
    bm_rte_jobid_from("pmi", "kvs_26917_0_539472129_VM", b, sizeof(b));
    BM_CHECK(strcmp(a, b) != 0); /* same kept characters, different hash */
    BM_CHECK_EQ_INT(strspn(a, "0123456789abcdefghijklmnopqrstuvwxyz"), strlen(a));
    BM_CHECK(strncmp(a, "pmikvs2691705", 13) == 0);
}

/* ---- a fake PMI server ----------------------------------------------------- */

#define KV_MAX 256
static struct {
    int fd, version;
    int v2; /* past the init line of a PMI-2 conversation: frames */
    char key[KV_MAX][128], val[KV_MAX][1100];
    int nkv;
    int puts, fences, gets, aborts, finalized;
    char abort_cmd[256];
} srv;

static const char *srv_lookup(const char *key)
{
    char k[128];
    snprintf(k, sizeof(k), "%s", key);
    if (strncmp(k, "bm1.", 4) == 0)
        k[2] = '0'; /* rank 1's entries mirror rank 0's */
    for (int i = 0; i < srv.nkv; i++)
        if (strcmp(srv.key[i], k) == 0)
            return srv.val[i];
    return NULL;
}

static void srv_send(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void srv_send(const char *fmt, ...)
{
    char body[4096], out[4200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof(body), fmt, ap);
    va_end(ap);
    int n = srv.v2 ? snprintf(out, sizeof(out), "%-6zu%s", strlen(body), body)
                   : snprintf(out, sizeof(out), "%s\n", body);
    if (write(srv.fd, out, (size_t)n) != n)
        abort();
}

/* Read one command: a line, or a PMI-2 frame once past the init line. */
static int srv_read(char *buf, size_t len, int v2)
{
    size_t n = 0;
    if (v2) {
        char lenbuf[7] = {0};
        if (read(srv.fd, lenbuf, 6) != 6)
            return -1;
        size_t want = (size_t)atoi(lenbuf);
        while (n < want) {
            ssize_t r = read(srv.fd, buf + n, want - n);
            if (r <= 0)
                return -1;
            n += (size_t)r;
        }
        buf[n] = '\0';
        return 0;
    }
    while (n < len - 1) {
        ssize_t r = read(srv.fd, buf + n, 1);
        if (r <= 0)
            return -1;
        if (buf[n] == '\n')
            break;
        n++;
    }
    buf[n] = '\0';
    return 0;
}

static void *srv_main(void *arg)
{
    (void)arg;
    char buf[4096];
    while (srv_read(buf, sizeof(buf), srv.v2) == 0) {
        int v2 = srv.v2;
        struct bm_rte_pmi_msg m;
        if (bm_rte_pmi_parse(buf, v2 ? 2 : 1, &m) != BM_OK)
            break;
        const char *cmd = bm_rte_pmi_field(&m, "cmd");
        const char *key = bm_rte_pmi_field(&m, "key"), *val = bm_rte_pmi_field(&m, "value");
        if (strcmp(cmd, "init") == 0) {
            srv_send("cmd=response_to_init pmi_version=%d pmi_subversion=0 rc=0", srv.version);
            srv.v2 = srv.version == 2;
        } else if (strcmp(cmd, "get_maxes") == 0) {
            srv_send("cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=40");
        } else if (strcmp(cmd, "get_appnum") == 0) {
            srv_send("cmd=appnum appnum=0");
        } else if (strcmp(cmd, "get_my_kvsname") == 0) {
            srv_send("cmd=my_kvsname kvsname=kvs_fake_0");
        } else if (strcmp(cmd, "fullinit") == 0) {
            srv_send("cmd=fullinit-response;rank=0;size=2;appnum=0;rc=0;");
        } else if (strcmp(cmd, "job-getid") == 0) {
            srv_send("cmd=job-getid-response;jobid=77.0;rc=0;");
        } else if (strcmp(cmd, "put") == 0 || strcmp(cmd, "kvs-put") == 0) {
            srv.puts++;
            /* the limits it announced (PMI-1) or that PMI-2 documents */
            int ok = key && val && strlen(val) <= (v2 ? 1024u : 40u) && srv.nkv < KV_MAX;
            if (ok) {
                snprintf(srv.key[srv.nkv], sizeof(srv.key[0]), "%s", key);
                snprintf(srv.val[srv.nkv++], sizeof(srv.val[0]), "%s", val);
            }
            if (v2)
                srv_send("cmd=kvs-put-response;rc=%d;", ok ? 0 : 1);
            else
                srv_send("cmd=put_result rc=%d msg=%s", ok ? 0 : -1, ok ? "success" : "too_long");
        } else if (strcmp(cmd, "barrier_in") == 0) {
            srv.fences++;
            srv_send("cmd=barrier_out");
        } else if (strcmp(cmd, "kvs-fence") == 0) {
            srv.fences++;
            srv_send("cmd=kvs-fence-response;rc=0;");
        } else if (strcmp(cmd, "get") == 0 || strcmp(cmd, "kvs-get") == 0 ||
                   strcmp(cmd, "info-getjobattr") == 0) {
            const char *v =
                strcmp(key, "PMI_process_mapping") == 0 ? "(vector,(0,2,1))" : srv_lookup(key);
            srv.gets++;
            if (v2 && v)
                srv_send("cmd=%s-response;found=TRUE;value=%s;rc=0;", cmd, v);
            else if (v2)
                srv_send("cmd=%s-response;found=FALSE;rc=0;", cmd);
            else if (v)
                srv_send("cmd=get_result rc=0 msg=success value=%s", v);
            else
                srv_send("cmd=get_result rc=-1 msg=key_%s_not_found value=unknown", key);
        } else if (strcmp(cmd, "abort") == 0) {
            srv.aborts++;
            snprintf(srv.abort_cmd, sizeof(srv.abort_cmd), "%s %s",
                     bm_rte_pmi_field(&m, "exitcode") ? bm_rte_pmi_field(&m, "exitcode") : "-",
                     bm_rte_pmi_field(&m, "msg") ? bm_rte_pmi_field(&m, "msg") : "-");
        } else if (strcmp(cmd, "finalize") == 0) {
            srv.finalized++;
            srv_send(v2 ? "cmd=finalize-response;rc=0;" : "cmd=finalize_ack");
        } else {
            srv_send(v2 ? "cmd=%s-response;rc=1;" : "cmd=%s rc=-1", cmd);
        }
    }
    close(srv.fd);
    return NULL;
}

static pthread_t srv_start(int version)
{
    int sv[2];
    BM_CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    memset(&srv, 0, sizeof(srv));
    srv.fd = sv[1];
    srv.version = version;
    char fd[16];
    snprintf(fd, sizeof(fd), "%d", sv[0]);
    setenv("PMI_FD", fd, 1);
    setenv("PMI_RANK", "0", 1);
    setenv("PMI_SIZE", "2", 1);
    if (version == 2)
        setenv("PMI_JOBID", "77.0", 1); /* as Slurm's pmi2 plugin: makes auto pick PMI-2 */
    else
        unsetenv("PMI_JOBID");
    pthread_t t;
    pthread_create(&t, NULL, srv_main, NULL);
    return t;
}

static void run_backend(int version)
{
    pthread_t t = srv_start(version);
    BM_CHECK_EQ_INT(bm_rte_init(), BM_OK);
    const struct bm_rte_proc *me = bm_rte_self();
    BM_CHECK_STR(bm_rte_backend_name(), "pmi");
    BM_CHECK_EQ_INT(me->rank, 0);
    BM_CHECK_EQ_INT(me->size, 2);
    /* (vector,(0,2,1)): rank 0 on node 0, rank 1 on node 1 */
    BM_CHECK_EQ_INT(me->num_nodes, 2);
    BM_CHECK_EQ_INT(me->local_size, 1);
    BM_CHECK_EQ_INT(bm_rte_node_of(1), 1);
    BM_CHECK_EQ_INT(strspn(me->jobid, "0123456789abcdefghijklmnopqrstuvwxyz"), strlen(me->jobid));

    unsigned char blob[1500];
    for (size_t i = 0; i < sizeof(blob); i++)
        blob[i] = (unsigned char)(i * 13 + 1);
    BM_CHECK_EQ_INT(bm_rte_modex_put("btl.test", blob, sizeof(blob)), BM_OK);
    BM_CHECK_EQ_INT(bm_rte_modex_put("btl.empty", NULL, 0), BM_OK);
    BM_CHECK_MSG(srv.puts >= (version == 1 ? 80 : 2),
                 "a 1500-byte entry takes several pieces (%d puts)", srv.puts);
    BM_CHECK_EQ_INT(bm_rte_modex_fence(), BM_OK);
    BM_CHECK_EQ_INT(srv.fences, 1);
    const void *data = NULL;
    size_t len = 0;
    BM_CHECK_EQ_INT(bm_rte_modex_get(1, "btl.test", &data, &len), BM_OK);
    BM_CHECK(len == sizeof(blob) && memcmp(data, blob, len) == 0);
    int gets = srv.gets;
    BM_CHECK_EQ_INT(bm_rte_modex_get(1, "btl.test", &data, &len), BM_OK);
    BM_CHECK_EQ_INT(srv.gets, gets); /* second get from the cache */
    BM_CHECK_EQ_INT(bm_rte_modex_get(1, "btl.empty", &data, &len), BM_OK);
    BM_CHECK_EQ_INT(len, 0);
    BM_CHECK_EQ_INT(bm_rte_modex_get(1, "btl.absent", &data, &len), BM_ERR_NOT_FOUND);
    /* an over-long key cannot be a PMI key */
    char longkey[80];
    memset(longkey, 'k', sizeof(longkey) - 1);
    longkey[sizeof(longkey) - 1] = '\0';
    BM_CHECK_EQ_INT(bm_rte_modex_put(longkey, "x", 1), BM_ERR_BAD_PARAM);
    bm_rte_finalize();
    BM_CHECK_EQ_INT(srv.finalized, 1);
    pthread_join(t, NULL);
}

static void test_pmi1(void)
{
    run_backend(1);
}

static void test_pmi2(void)
{
    run_backend(2);
}

static void test_abort(void)
{
    pthread_t t = srv_start(1);
    pid_t pid = fork();
    if (pid == 0) {
        if (bm_rte_init() != BM_OK)
            _exit(99);
        bm_rte_abort(7, "test abort");
    }
    int st = 0;
    waitpid(pid, &st, 0);
    BM_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7);
    close(atoi(getenv("PMI_FD"))); /* the server sees the end of the stream */
    pthread_join(t, NULL);
    BM_CHECK_EQ_INT(srv.aborts, 1);
    BM_CHECK_STR(srv.abort_cmd, "7 -");
}

static void test_server_gone(void)
{
    /* A launcher that closed the socket: init fails with a message, no hang. */
    int sv[2];
    BM_CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    close(sv[1]);
    char fd[16];
    snprintf(fd, sizeof(fd), "%d", sv[0]);
    setenv("PMI_FD", fd, 1);
    BM_CHECK_EQ_INT(bm_rte_init(), BM_ERR_CONN_RESET);
    setenv("PMI_FD", "1000", 1); /* not open */
    BM_CHECK_EQ_INT(bm_rte_init(), BM_ERR_NOT_AVAILABLE);
    unsetenv("PMI_FD");
}

/* ---- launchers this process cannot use -------------------------------------- */

static void test_foreign(void)
{
    unsetenv("PMI_FD");
    unsetenv("PMI_RANK");
    unsetenv("PMI_SIZE");
    unsetenv("PMI_JOBID");
    char why[1024];
    BM_CHECK_STR(bm_rte_probe(why, sizeof(why)), "singleton");

    setenv("SLURM_STEP_NUM_TASKS", "4", 1);
    setenv("SLURM_PROCID", "2", 1);
    BM_CHECK(bm_rte_probe(why, sizeof(why)) == NULL);
    BM_CHECK_MSG(strstr(why, "srun") && strstr(why, "--mpi=pmix"), "%s", why);
    BM_CHECK_EQ_INT(bm_rte_init(), BM_ERR_NOT_AVAILABLE);
    setenv("SLURM_STEP_NUM_TASKS", "1", 1); /* srun -n 1: a real 1-process job */
    BM_CHECK_STR(bm_rte_probe(why, sizeof(why)), "singleton");
    unsetenv("SLURM_STEP_NUM_TASKS");
    unsetenv("SLURM_PROCID");

    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    BM_CHECK(bm_rte_probe(why, sizeof(why)) == NULL);
    BM_CHECK_MSG(strstr(why, "Open MPI"), "%s", why);
    unsetenv("OMPI_COMM_WORLD_SIZE");

    setenv("PMI_SIZE", "3", 1);
    BM_CHECK(bm_rte_probe(why, sizeof(why)) == NULL);
    BM_CHECK_MSG(strstr(why, "PMI_FD"), "%s", why);
    unsetenv("PMI_SIZE");

    /* Open MPI's mpirun (PMIx variables) and a build without PMIx: the
     * message names the launcher, the missing library and two ways out. */
    struct bm_rte_foreign f;
    setenv("PMIX_NAMESPACE", "prterun-vm-123@1", 1);
    BM_CHECK_EQ_INT(bm_rte_foreign_launcher_as(&f, 0), 1);
    BM_CHECK_MSG(strstr(f.launcher, "mpirun") && strstr(f.evidence, "prterun-vm-123@1") &&
                     strstr(f.missing, "without PMIx") && strstr(f.todo, "libpmix-dev") &&
                     strstr(f.todo, "srun --mpi=pmi2"),
                 "%s / %s / %s / %s", f.launcher, f.evidence, f.missing, f.todo);
    BM_CHECK_EQ_INT(bm_rte_foreign_launcher_as(&f, 1), 0); /* a PMIx build serves it */
    unsetenv("PMIX_NAMESPACE");
    setenv("SLURM_STEP_NUM_TASKS", "4", 1);
    setenv("SLURM_PROCID", "0", 1);
    BM_CHECK_EQ_INT(bm_rte_foreign_launcher_as(&f, 0), 1);
    BM_CHECK_MSG(strstr(f.todo, "needs a bitmover built with PMIx"), "%s", f.todo);
    unsetenv("SLURM_STEP_NUM_TASKS");
    unsetenv("SLURM_PROCID");

    /* bmrun's variables win over a surrounding launcher's */
    setenv("BMRUN_KVS", "127.0.0.1:1", 1);
    setenv("BMRUN_RANK", "0", 1);
    setenv("PMI_FD", "5", 1);
    BM_CHECK_STR(bm_rte_probe(why, sizeof(why)), "bmrun");
    unsetenv("BMRUN_KVS");
    unsetenv("BMRUN_RANK");
    BM_CHECK_STR(bm_rte_probe(why, sizeof(why)), "pmi");
    unsetenv("PMI_FD");
    setenv("BM_RTE_BACKEND", "pmi", 1);
    BM_CHECK_STR(bm_rte_probe(why, sizeof(why)), "pmi");
    BM_CHECK_EQ_INT(bm_rte_init(), BM_ERR_NOT_AVAILABLE); /* forced, but no PMI_FD */
    unsetenv("BM_RTE_BACKEND");
}

int main(void)
{
    static const char *vars[] = {"BMRUN_RANK",
                                 "BMRUN_SIZE",
                                 "BMRUN_KVS",
                                 "BMRUN_SECRET",
                                 "BMRUN_JOBID",
                                 "BM_RTE_BACKEND",
                                 "PMIX_NAMESPACE",
                                 "PMIX_RANK",
                                 "PMI_FD",
                                 "PMI_PORT",
                                 "PMI_RANK",
                                 "PMI_SIZE",
                                 "PMI_JOBID",
                                 "PMI_ID",
                                 "SLURM_PROCID",
                                 "SLURM_STEP_NUM_TASKS",
                                 "MPI_LOCALNRANKS",
                                 "OMPI_COMM_WORLD_SIZE",
                                 "BM_RTE_PMI_VERSION"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
    BM_RUN(test_parse);
    BM_RUN(test_mapping);
    BM_RUN(test_encoding);
    BM_RUN(test_nodes_and_jobid);
    BM_RUN(test_pmi1);
    BM_RUN(test_pmi2);
    BM_RUN(test_abort);
    BM_RUN(test_server_gone);
    BM_RUN(test_foreign);
    return bm_test_summary("test_rte_pmi");
}
