/* bmrun daemon mode: started on a remote host by the launch agent as
 * "bmrun --daemon <host-index> <service-addresses> <jobid>", with the job
 * secret as the first line of its stdin. It connects back to the controller,
 * receives the launch request, starts the host's ranks with the same code the
 * controller uses for its own host, and forwards their output lines, pids and
 * exits. It kills its ranks when told to, and on its own when the controller
 * goes away, and removes the job's files on this host before it exits. */
#include "bmrun.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <unistd.h>

#define DMN_OUTPUT_HIGH (16u << 20)
#define DMN_OUTPUT_LOW  (4u << 20)

static struct {
    struct bm_run_conn *conn;
    bool launched, shutdown, lost, killed, paused;
    double kill_at;
    int host;
    const char *jobid;
    /* the launch request, kept for the daemon's life */
    int *ranks, *app_of;
    char **env; /* common to every rank */
    struct bm_run_local_app *apps;
    char ***app_strs; /* per program: argv then its env, one allocation list */
    uint32_t napps;
    uint8_t *stdin_chunk; /* bytes for rank 0's stdin being written */
} dmn;

static void dmn_spawned(void *arg, int rank, pid_t pid)
{
    (void)arg;
    uint8_t p[4];
    bm_rte_proto_put_u32(p, (uint32_t)pid);
    if (dmn.conn)
        bm_run_conn_send(dmn.conn, BM_RTE_MSG_SPAWNED, (uint32_t)rank, p, sizeof(p));
}

static void dmn_output(void *arg, int rank, int stream, const char *data, size_t len)
{
    (void)arg;
    if (!dmn.conn)
        return;
    uint8_t *p = malloc(len + 4);
    if (!p)
        return;
    p[0] = (uint8_t)stream;
    p[1] = p[2] = p[3] = 0;
    memcpy(p + 4, data, len);
    bm_run_conn_send(dmn.conn, BM_RTE_MSG_OUTPUT, (uint32_t)rank, p, len + 4);
    free(p);
}

static void dmn_exited(void *arg, int rank, pid_t pid, int wstatus, int exec_errno)
{
    (void)arg;
    uint8_t p[sizeof(struct bm_rte_msg_exited)];
    bm_rte_proto_put_u32(p, (uint32_t)pid);
    bm_rte_proto_put_u32(p + 4, (uint32_t)wstatus);
    bm_rte_proto_put_u32(p + 8, (uint32_t)exec_errno);
    bm_rte_proto_put_u32(p + 12, 0);
    if (dmn.conn)
        bm_run_conn_send(dmn.conn, BM_RTE_MSG_EXITED, (uint32_t)rank, p, sizeof(p));
}

static void dmn_stop(void)
{
    if (dmn.kill_at)
        return;
    bm_run_local_kill(SIGTERM);
    dmn.kill_at = bm_run_now() + bm_run_cfg.kill_grace;
}

/* Read count NUL-terminated strings at *o into a new NULL-terminated array. */
static char **dmn_strings(const uint8_t *p, size_t len, size_t *o, uint32_t count)
{
    if (count > len)
        return NULL;
    char **v = calloc((size_t)count + 1, sizeof(char *));
    for (uint32_t i = 0; v && i < count; i++) {
        const uint8_t *nul = *o < len ? memchr(p + *o, 0, len - *o) : NULL;
        if (!nul || !(v[i] = strdup((const char *)p + *o))) {
            bm_run_strv_free(v);
            return NULL;
        }
        *o = (size_t)(nul - p) + 1;
    }
    return v;
}

static bool dmn_u32(const uint8_t *p, size_t len, size_t *o, uint32_t *out)
{
    if (*o + 4 > len)
        return false;
    *out = bm_rte_proto_get_u32(p + *o);
    *o += 4;
    return true;
}

/* Parse LAUNCH (layout in rte_proto.h) and start the ranks. */
static void dmn_launch(const uint8_t *p, size_t len)
{
    if (len < sizeof(struct bm_rte_msg_launch))
        goto err_proto;
    uint32_t nranks = bm_rte_proto_get_u32(p), napps = bm_rte_proto_get_u32(p + 4),
             envc = bm_rte_proto_get_u32(p + 8), has_wdir = bm_rte_proto_get_u32(p + 12),
             stdin_rank = bm_rte_proto_get_u32(p + 16);
    size_t o = sizeof(struct bm_rte_msg_launch);
    if (nranks == 0 || napps == 0 || nranks > (len - o) / 8 || napps > len || envc > len)
        goto err_proto;
    dmn.ranks = calloc(nranks, sizeof(int));
    dmn.app_of = calloc(nranks, sizeof(int));
    dmn.apps = calloc(napps, sizeof(*dmn.apps));
    dmn.app_strs = calloc(napps, sizeof(char **));
    if (!dmn.ranks || !dmn.app_of || !dmn.apps || !dmn.app_strs)
        goto err_proto;
    dmn.napps = napps;
    for (uint32_t i = 0; i < nranks; i++) {
        uint32_t r = 0, a = 0;
        dmn_u32(p, len, &o, &r);
        dmn_u32(p, len, &o, &a);
        if (a >= napps)
            goto err_proto;
        dmn.ranks[i] = (int)r;
        dmn.app_of[i] = (int)a;
    }
    if (!(dmn.env = dmn_strings(p, len, &o, envc)))
        goto err_proto;
    if (has_wdir) {
        const uint8_t *nul = o < len ? memchr(p + o, 0, len - o) : NULL;
        if (!nul)
            goto err_proto;
        /* Ranks start where bmrun was started, when that directory exists
         * here (a shared file system); otherwise in the daemon's directory. */
        if (chdir((const char *)p + o) != 0)
            fprintf(stderr,
                    "bmrun daemon: warning: cannot change to the working directory %s (%s); "
                    "ranks start in the daemon's directory instead\n",
                    (const char *)p + o, strerror(errno));
        o = (size_t)(nul - p) + 1;
    }
    for (uint32_t a = 0; a < napps; a++) {
        uint32_t argc, aenvc;
        if (!dmn_u32(p, len, &o, &argc) || !dmn_u32(p, len, &o, &aenvc) || argc == 0)
            goto err_proto;
        char **argv = dmn_strings(p, len, &o, argc);
        char **aenv = argv ? dmn_strings(p, len, &o, aenvc) : NULL;
        char **joined = aenv ? bm_run_strv_join(dmn.env, aenv) : NULL;
        if (!joined) {
            bm_run_strv_free(argv);
            bm_run_strv_free(aenv);
            goto err_proto;
        }
        /* Keep the program's own strings for freeing; joined borrows them. */
        char **own = bm_run_strv_join(argv, aenv);
        free(aenv);
        if (!own) {
            free(joined);
            bm_run_strv_free(argv);
            goto err_proto;
        }
        dmn.app_strs[a] = own;
        dmn.apps[a] = (struct bm_run_local_app){.argv = argv, .env_add = joined};
    }
    struct bm_run_local_spec spec = {.apps = dmn.apps,
                                     .ranks = dmn.ranks,
                                     .app_of = dmn.app_of,
                                     .nranks = (int)nranks,
                                     .stdin_rank = stdin_rank == UINT32_MAX ? -1 : (int)stdin_rank};
    struct bm_run_sink sink = {.spawned = dmn_spawned, .output = dmn_output, .exited = dmn_exited};
    dmn.launched = true;
    if (bm_run_local_start(&spec, &sink) != BM_OK)
        dmn_stop();
    return;
err_proto:
    fprintf(stderr, "bmrun daemon: malformed launch request from the controller: bmrun here and "
                    "on the controller's host are different versions? Install the same bitmover "
                    "on every host\n");
    dmn.lost = true;
}

/* A chunk of bmrun's input was written into rank 0's stdin (or dropped). */
static void dmn_stdin_done(void *arg)
{
    uint8_t st[4];
    bm_rte_proto_put_u32(st, 0);
    free(dmn.stdin_chunk);
    dmn.stdin_chunk = NULL;
    if (dmn.conn)
        bm_run_conn_send(dmn.conn, BM_RTE_MSG_STDIN_ACK, (uint32_t)(uintptr_t)arg, st, 4);
}

static void dmn_stdin(uint32_t rank, const uint8_t *payload, size_t len)
{
    uint8_t *copy = len ? malloc(len) : NULL;
    bm_status_t rc = BM_ERR_NO_MEMORY;
    if (copy || !len) {
        if (len)
            memcpy(copy, payload, len);
        free(dmn.stdin_chunk);
        dmn.stdin_chunk = copy;
        rc = bm_run_local_stdin(copy, len, dmn_stdin_done, (void *)(uintptr_t)rank);
    }
    if (rc != BM_OK && dmn.conn) {
        uint8_t st[4];
        bm_rte_proto_put_u32(st, 1); /* its input is gone: bmrun stops reading */
        bm_run_conn_send(dmn.conn, BM_RTE_MSG_STDIN_ACK, rank, st, 4);
    }
}

static void dmn_msg(struct bm_run_conn *c, const struct bm_rte_msg_hdr *h, const uint8_t *payload)
{
    (void)c;
    switch (h->type) {
    case BM_RTE_MSG_LAUNCH:
        if (!dmn.launched)
            dmn_launch(payload, h->len);
        break;
    case BM_RTE_MSG_KILL:
        bm_run_local_kill((int)h->arg);
        break;
    case BM_RTE_MSG_STDIN:
        if (dmn.launched)
            dmn_stdin(h->arg, payload, h->len);
        break;
    case BM_RTE_MSG_SHUTDOWN:
        dmn.shutdown = true;
        if (bm_run_local_running())
            dmn_stop();
        break;
    default:
        break;
    }
}

static void dmn_close(struct bm_run_conn *c)
{
    (void)c;
    dmn.conn = NULL;
    dmn.lost = true;
}

static void dmn_on_signal(int sig)
{
    (void)sig;
    dmn.lost = true;
}

static void dmn_on_child(pid_t pid, int wstatus)
{
    bm_run_local_reaped(pid, wstatus);
}

/* Connect back to the controller (any of its addresses) and introduce this
 * daemon with the job secret; the connected socket, or -1 (said on stderr). */
static int dmn_connect(const char *addrs, const uint8_t *secret)
{
    int fd;
    if (bm_rte_net_connect_list(addrs, (int)(bm_run_cfg.connect_timeout * 1000), &fd) != BM_OK) {
        fprintf(stderr,
                "bmrun daemon: cannot connect back to the controller at any of %s: "
                "%s; check that this host can reach the controller's host\n",
                addrs, strerror(errno));
        return -1;
    }
    uint8_t hello[sizeof(struct bm_rte_msg_daemon_hello)];
    memcpy(hello, secret, BM_RTE_SECRET_LEN);
    bm_rte_proto_put_u32(hello + BM_RTE_SECRET_LEN, (uint32_t)dmn.host);
    bm_rte_proto_put_u32(hello + BM_RTE_SECRET_LEN + 4, (uint32_t)getpid());
    if (bm_rte_proto_send(fd, BM_RTE_MSG_DAEMON_HELLO, 0, hello, sizeof(hello)) != BM_OK) {
        fprintf(stderr,
                "bmrun daemon: lost the controller at %s during the handshake: bmrun "
                "ended, or refused this daemon\n",
                addrs);
        return -1;
    }
    return fd;
}

/* Serve the controller and the ranks until the job is over here: all ranks
 * ended after a shutdown or the loss of the controller, or the grace period
 * after that loss ran out. */
static void dmn_run(void)
{
    double lost_until = 0;
    for (;;) {
        double now = bm_run_now();
        if (dmn.lost) {
            /* The controller is gone (or told us nothing sensible): end the
             * ranks ourselves, within the grace period. */
            dmn_stop();
            if (!lost_until)
                lost_until = now + bm_run_cfg.kill_grace + 2;
        }
        if ((dmn.shutdown || dmn.lost) && bm_run_local_running() == 0)
            break;
        if (lost_until && now > lost_until)
            break;
        if (dmn.kill_at && now >= dmn.kill_at && !dmn.killed) {
            dmn.killed = true;
            bm_run_local_kill(SIGKILL);
        }
        /* Output goes to the controller no faster than it takes it: above
         * the high mark the ranks' pipes are left unread (and the ranks
         * block in write) until the queue drains below the low mark. */
        if (dmn.conn) {
            size_t q = bm_run_conn_queued(dmn.conn);
            if (!dmn.paused && q > DMN_OUTPUT_HIGH)
                bm_run_local_pause_output(dmn.paused = true);
            else if (dmn.paused && q < DMN_OUTPUT_LOW)
                bm_run_local_pause_output(dmn.paused = false);
        }
        bm_run_local_tick();
        double next = now + 0.25;
        double d = bm_run_local_next_deadline();
        if (d && d < next)
            next = d;
        if (dmn.kill_at && !dmn.killed && dmn.kill_at < next)
            next = dmn.kill_at;
        bm_run_loop_once((int)((next - now) * 1000) + 1);
    }
}

int bm_run_daemon_main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "bmrun daemon: started with wrong arguments; the daemon is started "
                        "by bmrun itself, not by hand\n");
        return BM_RUN_EXIT_USAGE;
    }
    dmn.host = atoi(argv[2]);
    const char *addrs = argv[3];
    dmn.jobid = argv[4];
    char line[2 * BM_RTE_SECRET_LEN + 8];
    uint8_t secret[BM_RTE_SECRET_LEN];
    if (!fgets(line, sizeof(line), stdin)) {
        fprintf(stderr, "bmrun daemon: no job secret on stdin: the launch agent must pass "
                        "bmrun's input on to the daemon (ssh without -n); the daemon is started "
                        "by bmrun itself, not by hand\n");
        return BM_RUN_EXIT_FAILURE;
    }
    line[strcspn(line, "\r\n")] = '\0';
    if (bm_rte_proto_secret_from_hex(line, secret) != BM_OK) {
        fprintf(stderr,
                "bmrun daemon: malformed job secret on stdin (expected %d hex "
                "digits): the launch agent changed the daemon's input\n",
                2 * BM_RTE_SECRET_LEN);
        return BM_RUN_EXIT_FAILURE;
    }
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull > 0) {
        dup2(devnull, 0);
        close(devnull);
    }
    int fd = dmn_connect(addrs, secret);
    if (fd < 0)
        return BM_RUN_EXIT_FAILURE;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    if (bm_run_loop_signals_init(dmn_on_signal, dmn_on_child) != BM_OK)
        return BM_RUN_EXIT_FAILURE;
    dmn.conn = bm_run_conn_new(fd, dmn_msg, dmn_close, NULL);
    if (!dmn.conn)
        return BM_RUN_EXIT_FAILURE;

    dmn_run();
    bm_run_cleanup_job_files(dmn.jobid);
    if (dmn.conn) {
        bm_run_conn_flush(dmn.conn, 2000);
        bm_run_conn_close(dmn.conn);
    }
    free(dmn.ranks);
    free(dmn.app_of);
    for (uint32_t a = 0; dmn.apps && a < dmn.napps; a++) {
        free((void *)dmn.apps[a].argv); /* strings are in app_strs */
        free((void *)dmn.apps[a].env_add);
        bm_run_strv_free(dmn.app_strs[a]);
    }
    free(dmn.apps);
    free(dmn.app_strs);
    bm_run_strv_free(dmn.env);
    free(dmn.stdin_chunk);
    return dmn.lost ? BM_RUN_EXIT_FAILURE : BM_RUN_EXIT_OK;
}
