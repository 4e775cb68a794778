/* The bmrun controller: places ranks on hosts by slots, starts the ranks of
 * its own host in-process and a daemon on every other host through the launch
 * agent, serves the key-value service, prints the ranks' output, and decides
 * how the job ends: the first rank that fails (non-zero exit, signal, exec
 * failure, abort) stops the job with SIGTERM and, after the grace period,
 * SIGKILL; so do --timeout and signals sent to bmrun. A rank killed by a
 * signal is the news even when the survivors noticed first: their failures
 * are held for CTL_VERDICT_WAIT before the job is stopped, and a signal death
 * reported in that window, or later while the job is being stopped for them,
 * decides what bmrun says and its exit code. Whatever happens, the job's
 * files in /dev/shm and /tmp are removed before bmrun exits. */
#include "bmrun.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

struct bm_run_job bm_run_job;

/* Seconds after SIGKILL before bmrun stops waiting for ranks to report. */
#define CTL_GIVE_UP_AFTER_KILL 10
/* Seconds a failure reported by a surviving rank (an abort, a non-zero exit)
 * is held before the job is stopped for it. When a rank is killed during
 * traffic its peers see their connections break and abort within
 * microseconds, often before bmrun has reaped the dead rank (a remote one is
 * reported by its daemon): waiting this long lets the signal, the cause,
 * be what bmrun reports. Not a tunable: it only delays the end of a job that
 * is failing anyway, and a later signal death still takes over (below). */
#define CTL_VERDICT_WAIT 0.5

static struct {
    const struct bm_run_opts *opts;
    bool stopping; /* the job is being ended */
    bool killed;   /* SIGKILL already sent */
    int exit_code;
    double kill_deadline;  /* when to send SIGKILL (0: not armed) */
    double timeout_at;     /* --timeout deadline (0: none) */
    double shutdown_until; /* after all ranks ended: wait for daemons until then */
    int nexited;
    int signals_seen;
    int stdin_rank; /* rank fed bmrun's stdin, -1: none */
    int sent_sig;   /* the signal the stop sent to every rank */
    /* Ranks' failures held for CTL_VERDICT_WAIT (ctl_fail): the code of the
     * first one and every line bmrun will print for them. */
    bool verdict_pending;
    double verdict_at;
    int verdict_code;
    char held[4096];
    size_t held_len;
    bool ranks_failed;   /* the stop was for held rank failures */
    bool signal_verdict; /* a rank's signal death was reported */
} ctl;

static const char *rank_host(int r)
{
    return bm_run_job.hosts[bm_run_job.ranks[r].host].name;
}

/* ---- ending the job ---- */

static void ctl_signal_all(int sig)
{
    bm_run_local_kill(sig);
    for (int h = 0; h < bm_run_job.nhosts; h++) {
        struct bm_run_host *host = &bm_run_job.hosts[h];
        if (host->daemon)
            bm_run_conn_send(host->daemon, BM_RTE_MSG_KILL, (uint32_t)sig, NULL, 0);
        else if (!host->local && host->agent_pid > 0 && !host->agent_exited && !host->hello)
            kill(-host->agent_pid, SIGKILL); /* daemon not up yet: nothing to ask */
    }
}

static void ctl_stop(int code, int sig)
{
    if (ctl.stopping)
        return;
    ctl.stopping = true;
    ctl.exit_code = code;
    ctl.sent_sig = sig;
    ctl_signal_all(sig);
    ctl.kill_deadline = bm_run_now() + bm_run_cfg.kill_grace;
}

/* Print the held failure lines (after the signal line, when there is one). */
static void ctl_flush_held(void)
{
    for (size_t o = 0; o < ctl.held_len;) {
        size_t n = strlen(ctl.held + o);
        bm_run_say("%s", ctl.held + o);
        o += n + 1;
    }
    ctl.held_len = 0;
}

/* A rank failed without a signal (abort, non-zero exit, broken fence): the
 * job stops with `code` after CTL_VERDICT_WAIT unless a rank's signal death
 * comes first. Once the job is stopping the line is printed at once. */
static void __attribute__((format(printf, 2, 3))) ctl_fail(int code, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (ctl.stopping) {
        bm_run_say("%s", line);
        return;
    }
    size_t n = strlen(line) + 1;
    if (ctl.held_len + n <= sizeof(ctl.held)) {
        memcpy(ctl.held + ctl.held_len, line, n);
        ctl.held_len += n;
    }
    if (!ctl.verdict_pending) {
        ctl.verdict_pending = true;
        ctl.verdict_at = bm_run_now() + CTL_VERDICT_WAIT;
        ctl.verdict_code = code;
    }
}

/* The hold is over (or every rank ended): stop the job for what was held. */
static void ctl_decide(void)
{
    if (!ctl.verdict_pending)
        return;
    ctl.verdict_pending = false;
    ctl_flush_held();
    ctl.ranks_failed = true;
    ctl_stop(ctl.verdict_code, SIGTERM);
}

void bm_run_ctl_abort_request(int rank, int code, const char *msg, size_t len)
{
    /* An aborted job never looks successful: a code that is 0 in 8 bits
     * becomes 1. */
    int ecode = code & 255 ? code & 255 : BM_RUN_EXIT_FAILURE;
    if (rank >= 0)
        ctl_fail(ecode, "rank %d (host %s, pid %d) called abort with exit code %d: %.*s", rank,
                 rank_host(rank), (int)bm_run_job.ranks[rank].pid, code, (int)len, msg);
    else
        ctl_fail(ecode, "%.*s", (int)len, msg);
}

void bm_run_ctl_fence_broken(int rank)
{
    if (ctl.stopping)
        return;
    ctl_fail(BM_RUN_EXIT_FAILURE,
             "rank %d (host %s, pid %d) exited with status 0 while the other ranks wait for "
             "it in fence %u: every rank must take part in every fence (did it skip "
             "MPI_Finalize or bm_rte_finalize?)",
             rank, rank_host(rank), (int)bm_run_job.ranks[rank].pid, bm_run_job.epoch + 1);
}

/* A rank died of signal `sig`. Not news when the stop itself sent it; else
 * it is what bmrun reports, ahead of failures the survivors reported. */
static void ctl_rank_signaled(int rank, int sig)
{
    bool ours = ctl.stopping && (sig == ctl.sent_sig || (sig == SIGKILL && ctl.killed));
    if (ours || ctl.signal_verdict || (ctl.stopping && !ctl.ranks_failed))
        return;
    ctl.signal_verdict = true;
    bm_run_say("rank %d (host %s, pid %d) killed by signal %d (%s)", rank, rank_host(rank),
               (int)bm_run_job.ranks[rank].pid, sig, bm_run_signal_name(sig));
    if (ctl.verdict_pending || ctl.held_len) {
        bm_run_say("what the other ranks reported before it (a consequence):");
        ctl_flush_held();
        ctl.verdict_pending = false;
    }
    if (ctl.stopping)
        ctl.exit_code = BM_RUN_EXIT_SIGNAL_BASE + sig;
    else
        ctl_stop(BM_RUN_EXIT_SIGNAL_BASE + sig, SIGTERM);
}

static void ctl_rank_exited(int rank, pid_t pid, int wstatus, int exec_errno)
{
    struct bm_run_rank *rk = &bm_run_job.ranks[rank];
    if (rk->state == BM_RUN_RANK_EXITED)
        return;
    if (pid > 0)
        rk->pid = pid;
    rk->state = BM_RUN_RANK_EXITED;
    rk->wstatus = wstatus;
    ctl.nexited++;
    if (!exec_errno && WIFSIGNALED(wstatus)) {
        ctl_rank_signaled(rank, WTERMSIG(wstatus));
        return;
    }
    if (ctl.stopping)
        return;
    if (exec_errno) {
        bm_run_say("cannot execute '%s' for rank %d on host %s: %s%s",
                   ctl.opts->apps[rk->app].argv[0], rank, rank_host(rank), strerror(exec_errno),
                   exec_errno == ENOENT ? " (check the path and PATH on that host)" : "");
        ctl_stop(BM_RUN_EXIT_NOT_FOUND, SIGTERM);
    } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) != 0) {
        ctl_fail(WEXITSTATUS(wstatus), "rank %d (host %s, pid %d) exited with status %d", rank,
                 rank_host(rank), (int)rk->pid, WEXITSTATUS(wstatus));
    } else if (bm_run_kvs_fence_waits_for(rank)) {
        bm_run_ctl_fence_broken(rank);
    }
}

/* ---- output ---- */

static void ctl_output(void *arg, int rank, int stream, const char *data, size_t len)
{
    (void)arg;
    int fd = stream == BM_RTE_STREAM_STDERR ? 2 : 1;
    if (!ctl.opts->tag_output) {
        bm_rte_proto_write_full(fd, data, len);
        return;
    }
    char tag[24];
    int tlen = snprintf(tag, sizeof(tag), "[%d] ", rank);
    size_t lines = 1;
    for (size_t i = 0; i < len; i++)
        lines += data[i] == '\n';
    char *buf = malloc(len + lines * (size_t)tlen);
    if (!buf) {
        bm_rte_proto_write_full(fd, data, len);
        return;
    }
    size_t o = 0, start = 0;
    for (size_t i = 0; i < len; i++) {
        if (data[i] == '\n' || i + 1 == len) {
            memcpy(buf + o, tag, (size_t)tlen);
            o += (size_t)tlen;
            memcpy(buf + o, data + start, i + 1 - start);
            o += i + 1 - start;
            start = i + 1;
        }
    }
    bm_rte_proto_write_full(fd, buf, o);
    free(buf);
}

static void ctl_spawned(void *arg, int rank, pid_t pid)
{
    (void)arg;
    bm_run_job.ranks[rank].pid = pid;
    bm_run_job.ranks[rank].state = BM_RUN_RANK_RUNNING;
}

static void ctl_exited(void *arg, int rank, pid_t pid, int wstatus, int exec_errno)
{
    (void)arg;
    ctl_rank_exited(rank, pid, wstatus, exec_errno);
}

/* ---- hosts and placement ---- */

static bool host_is_local(const char *name)
{
    if (strcmp(name, "localhost") == 0 || strcmp(name, "127.0.0.1") == 0)
        return true;
    char me[256];
    if (gethostname(me, sizeof(me)) != 0)
        return false;
    me[sizeof(me) - 1] = '\0';
    if (strcmp(name, me) == 0)
        return true;
    /* "node1" names this host when it is "node1.cluster.org", and back. */
    size_t n = strcspn(name, "."), m = strcspn(me, ".");
    return n == m && strncmp(name, me, n) == 0 && (!name[n] || !me[m]);
}

static bm_status_t host_add(const char *name, int slots, const char *where)
{
    struct bm_run_job *job = &bm_run_job;
    if (!*name || strlen(name) >= sizeof(job->hosts[0].name) || slots < 1) {
        fprintf(stderr, "bmrun: bad host '%s' in %s (expected name[:slots], slots >= 1)\n", name,
                where);
        return BM_ERR_BAD_PARAM;
    }
    bool local = host_is_local(name);
    for (int i = 0; i < job->nhosts; i++) {
        /* "--host a,a" means two slots on a; "localhost" and this host's
         * name are one host, started in-process. */
        if (strcmp(job->hosts[i].name, name) == 0 || (local && job->hosts[i].local)) {
            job->hosts[i].slots += slots;
            return BM_OK;
        }
    }
    struct bm_run_host *n = realloc(job->hosts, (size_t)(job->nhosts + 1) * sizeof(*n));
    if (!n)
        return BM_ERR_NO_MEMORY;
    job->hosts = n;
    struct bm_run_host *h = &job->hosts[job->nhosts++];
    memset(h, 0, sizeof(*h));
    snprintf(h->name, sizeof(h->name), "%s", name);
    /* Ranks, error messages and MPI_Get_processor_name name this host as
     * users know it, not by the alias "localhost" they may have typed. */
    if (local && gethostname(h->name, sizeof(h->name)) != 0)
        snprintf(h->name, sizeof(h->name), "%s", name);
    h->name[sizeof(h->name) - 1] = '\0';
    h->slots = slots;
    h->local = local;
    h->node = -1;
    h->out_fd = h->err_fd = -1;
    return BM_OK;
}

static bm_status_t host_parse_one(char *tok, const char *where)
{
    int slots = 1;
    char *colon = strchr(tok, ':');
    if (colon) {
        *colon = '\0';
        char *end;
        long v = strtol(colon + 1, &end, 10);
        if (*end || v < 1 || v > 1 << 20) {
            fprintf(stderr, "bmrun: bad slot count '%s' for host '%s' in %s\n", colon + 1, tok,
                    where);
            return BM_ERR_BAD_PARAM;
        }
        slots = (int)v;
    }
    return host_add(tok, slots, where);
}

static bm_status_t hosts_from_list(const char *list)
{
    char *copy = strdup(list);
    if (!copy)
        return BM_ERR_NO_MEMORY;
    bm_status_t rc = BM_OK;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok && rc == BM_OK;
         tok = strtok_r(NULL, ",", &save))
        rc = host_parse_one(tok, "--host");
    free(copy);
    return rc;
}

static bm_status_t hosts_from_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "bmrun: cannot read hostfile '%s': %s\n", path, strerror(errno));
        return BM_ERR_BAD_PARAM;
    }
    char line[1024];
    bm_status_t rc = BM_OK;
    int lineno = 0;
    while (rc == BM_OK && fgets(line, sizeof(line), f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char where[64];
        snprintf(where, sizeof(where), "%s line %d", path, lineno);
        char *save = NULL;
        char *name = strtok_r(line, " \t\r\n", &save);
        if (!name)
            continue;
        long slots = 0;
        char *kv, *end = NULL;
        while ((kv = strtok_r(NULL, " \t\r\n", &save)) != NULL) {
            slots = -1;
            if (strncmp(kv, "slots=", 6) == 0)
                slots = strtol(kv + 6, &end, 10);
            if (slots < 1 || slots > 1 << 20 || *end || strchr(name, ':')) {
                fprintf(stderr, "bmrun: %s: unknown or bad field '%s' (expected slots=N)\n", where,
                        kv);
                rc = BM_ERR_BAD_PARAM;
                break;
            }
        }
        if (rc == BM_OK)
            rc = slots > 0 ? host_add(name, (int)slots, where) : host_parse_one(name, where);
    }
    fclose(f);
    if (rc == BM_OK && bm_run_job.nhosts == 0) {
        fprintf(stderr, "bmrun: hostfile '%s' names no host\n", path);
        rc = BM_ERR_BAD_PARAM;
    }
    return rc;
}

/* How many ranks host h takes before it counts as full. */
static int ctl_capacity(const struct bm_run_host *host)
{
    return ctl.opts->npernode ? ctl.opts->npernode : host->slots;
}

/* Place np ranks: --map-by slot fills each host up to its capacity in host
 * order, --map-by node deals one rank to each host with room in turn. What
 * does not fit goes round the hosts one rank at a time, which only
 * --oversubscribe (or the default host list, which has no limit) allows. */
static bm_status_t ctl_place(int np, bool limited)
{
    struct bm_run_job *job = &bm_run_job;
    long cap = 0;
    for (int h = 0; h < job->nhosts; h++)
        cap += ctl_capacity(&job->hosts[h]);
    if (np > cap && ctl.opts->npernode) {
        bm_run_say("%d ranks do not fit %d per host on %d host(s) (-N / --npernode / "
                   "ppr:N:node); lower -n or give more hosts",
                   np, ctl.opts->npernode, job->nhosts);
        return BM_ERR_BAD_PARAM;
    }
    if (np > cap && limited && !ctl.opts->oversubscribe) {
        bm_run_say("%d ranks but only %ld slot(s) on the given hosts: add --oversubscribe "
                   "(the extra ranks then go round the hosts), or give more slots "
                   "(--host name:N, \"name slots=N\" in a hostfile)",
                   np, cap);
        return BM_ERR_BAD_PARAM;
    }
    job->size = np;
    job->ranks = calloc((size_t)np, sizeof(*job->ranks));
    int *used = calloc((size_t)job->nhosts, sizeof(int));
    if (!job->ranks || !used) {
        free(used);
        return BM_ERR_NO_MEMORY;
    }
    int r = 0;
    if (ctl.opts->map_by == BM_RUN_MAP_NODE) {
        for (bool placed = true; placed && r < np;) {
            placed = false;
            for (int h = 0; h < job->nhosts && r < np; h++)
                if (used[h] < ctl_capacity(&job->hosts[h])) {
                    job->ranks[r++].host = h;
                    used[h]++;
                    placed = true;
                }
        }
    } else {
        for (int h = 0; h < job->nhosts && r < np; h++)
            for (; used[h] < ctl_capacity(&job->hosts[h]) && r < np; used[h]++)
                job->ranks[r++].host = h;
    }
    free(used);
    for (int h = 0; r < np; h = (h + 1) % job->nhosts)
        job->ranks[r++].host = h;
    /* Programs take consecutive ranks (MPMD). */
    for (int a = 0, first = 0; a < ctl.opts->napps; first += ctl.opts->apps[a++].np)
        for (int k = first;
             k < np && k < first + (ctl.opts->apps[a].np ? ctl.opts->apps[a].np : np); k++)
            job->ranks[k].app = a;
    for (int h = 0; h < job->nhosts; h++) {
        struct bm_run_host *host = &job->hosts[h];
        host->ranks = calloc((size_t)np, sizeof(int));
        if (!host->ranks)
            return BM_ERR_NO_MEMORY;
    }
    for (r = 0; r < np; r++) {
        struct bm_run_host *host = &job->hosts[job->ranks[r].host];
        job->ranks[r].local = host->nranks;
        host->ranks[host->nranks++] = r;
    }
    job->num_nodes = 0;
    for (int h = 0; h < job->nhosts; h++)
        if (job->hosts[h].nranks)
            job->hosts[h].node = job->num_nodes++;
    return BM_OK;
}

/* ---- environment of the ranks ---- */

static char *ctl_strdupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *ctl_strdupf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

extern char **environ;

/* Job variables common to every host, and for remote hosts (whose
 * environment is not bmrun's) every BM_* parameter, then the host's own
 * values (BMRUN_NODE, BMRUN_LOCAL_SIZE, BMRUN_HOSTNAME). What differs
 * between programs (BMRUN_APPNUM, -x) comes from ctl_env_for_app. */
static char **ctl_env_for_host(int h)
{
    struct bm_run_host *host = &bm_run_job.hosts[h];
    bool remote = !host->local;
    size_t cap = 16;
    if (remote)
        for (char **e = environ; *e; e++)
            cap++;
    char **env = calloc(cap, sizeof(char *));
    if (!env)
        return NULL;
    size_t n = 0;
    struct bm_run_job *job = &bm_run_job;
    env[n++] = ctl_strdupf("BMRUN_SIZE=%d", job->size);
    env[n++] = ctl_strdupf("BMRUN_NUM_NODES=%d", job->num_nodes);
    env[n++] = ctl_strdupf("BMRUN_JOBID=%s", job->jobid);
    env[n++] = ctl_strdupf("BMRUN_KVS=%s", job->kvs_addrs);
    env[n++] = ctl_strdupf("BMRUN_SECRET=%s", job->secret_hex);
    env[n++] = ctl_strdupf("BMRUN_BIND_TO=%s", ctl.opts->bind_to ? ctl.opts->bind_to : "cpu");
    if (ctl.opts->report_bindings)
        env[n++] = strdup("BMRUN_REPORT_BINDINGS=1");
    env[n++] = ctl_strdupf("BMRUN_NODE=%d", host->node);
    env[n++] = ctl_strdupf("BMRUN_LOCAL_SIZE=%d", host->nranks);
    env[n++] = ctl_strdupf("BMRUN_HOSTNAME=%s", host->name);
    if (remote)
        for (char **e = environ; *e; e++)
            if (strncmp(*e, "BM_", 3) == 0)
                env[n++] = strdup(*e);
    for (size_t i = 0; i < n; i++)
        if (!env[i])
            return NULL;
    return env;
}

/* BMRUN_APPNUM and the program's -x variables. */
static char **ctl_env_for_app(int a, bool remote)
{
    const struct bm_run_app *app = &ctl.opts->apps[a];
    char **env = calloc((size_t)app->nx + 2, sizeof(char *));
    if (!env)
        return NULL;
    size_t n = 0;
    env[n++] = ctl_strdupf("BMRUN_APPNUM=%d", a);
    for (int i = 0; i < app->nx; i++) {
        const char *x = app->xvars[i];
        if (strchr(x, '='))
            env[n++] = strdup(x);
        else if (getenv(x))
            env[n++] = ctl_strdupf("%s=%s", x, getenv(x));
        else if (!remote)
            bm_run_say("warning: -x %s: %s is not set in bmrun's environment; not passed", x, x);
    }
    for (size_t i = 0; i < n; i++)
        if (!env[i])
            return NULL;
    return env;
}

/* ---- remote hosts: daemons ---- */

static struct bm_run_host *ctl_host_of_conn(struct bm_run_conn *c)
{
    return bm_run_conn_arg(c);
}

static bool ctl_rank_on_host(const struct bm_run_host *host, uint32_t rank)
{
    return rank < (uint32_t)bm_run_job.size &&
           &bm_run_job.hosts[bm_run_job.ranks[rank].host] == host;
}

static void ctl_daemon_msg(struct bm_run_conn *c, const struct bm_rte_msg_hdr *h,
                           const uint8_t *payload)
{
    struct bm_run_host *host = ctl_host_of_conn(c);
    if (!ctl_rank_on_host(host, h->arg)) {
        bm_run_say("daemon on host %s sent a message about rank %u, which is not on that host",
                   host->name, h->arg);
        return;
    }
    int rank = (int)h->arg;
    switch (h->type) {
    case BM_RTE_MSG_SPAWNED:
        if (h->len >= 4)
            ctl_spawned(NULL, rank, (pid_t)bm_rte_proto_get_u32(payload));
        break;
    case BM_RTE_MSG_OUTPUT:
        if (h->len > 4)
            ctl_output(NULL, rank, payload[0], (const char *)payload + 4, h->len - 4);
        break;
    case BM_RTE_MSG_STDIN_ACK:
        bm_run_stdin_acked(h->len >= 4 && bm_rte_proto_get_u32(payload) != 0);
        break;
    case BM_RTE_MSG_EXITED:
        if (h->len >= sizeof(struct bm_rte_msg_exited))
            ctl_rank_exited(rank, (pid_t)bm_rte_proto_get_u32(payload),
                            (int)bm_rte_proto_get_u32(payload + 4),
                            (int)bm_rte_proto_get_u32(payload + 8));
        break;
    default:
        bm_run_say("daemon on host %s sent an unexpected message (type %u)", host->name, h->type);
        break;
    }
}

static void ctl_host_lost(struct bm_run_host *host, const char *why)
{
    int lost = 0;
    for (int i = 0; i < host->nranks; i++)
        lost += bm_run_job.ranks[host->ranks[i]].state != BM_RUN_RANK_EXITED;
    if (!lost)
        return;
    if (!ctl.stopping)
        bm_run_say("%s on host %s: its %d unfinished rank(s) are lost; stopping the job", why,
                   host->name, lost);
    ctl_stop(BM_RUN_EXIT_FAILURE, SIGTERM);
    for (int i = 0; i < host->nranks; i++) {
        struct bm_run_rank *rk = &bm_run_job.ranks[host->ranks[i]];
        if (rk->state != BM_RUN_RANK_EXITED) {
            rk->state = BM_RUN_RANK_EXITED;
            rk->wstatus = SIGKILL;
            ctl.nexited++;
        }
    }
}

static void ctl_daemon_close(struct bm_run_conn *c)
{
    struct bm_run_host *host = ctl_host_of_conn(c);
    host->daemon = NULL;
    ctl_host_lost(host, "lost the connection to the bmrun daemon");
}

/* Append a NUL-terminated string or a u32 to a growing launch payload. */
struct ctl_buf {
    uint8_t *p;
    size_t len, cap;
    bool failed;
};

static void ctl_buf_put(struct ctl_buf *b, const void *data, size_t len)
{
    if (b->failed)
        return;
    if (b->len + len > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + len)
            cap *= 2;
        uint8_t *n = realloc(b->p, cap);
        if (!n) {
            b->failed = true;
            return;
        }
        b->p = n;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, len);
    b->len += len;
}

static void ctl_buf_u32(struct ctl_buf *b, uint32_t v)
{
    uint8_t x[4];
    bm_rte_proto_put_u32(x, v);
    ctl_buf_put(b, x, 4);
}

static void ctl_buf_strs(struct ctl_buf *b, char *const *v)
{
    for (; v && *v; v++)
        ctl_buf_put(b, *v, strlen(*v) + 1);
}

static uint32_t ctl_count(char *const *v)
{
    uint32_t n = 0;
    while (v && v[n])
        n++;
    return n;
}

/* The launch request (layout in rte_proto.h, struct bm_rte_msg_launch). */
static bm_status_t ctl_send_launch(struct bm_run_host *host, int h)
{
    char **env = ctl_env_for_host(h);
    if (!env)
        return BM_ERR_NO_MEMORY;
    char wdir[PATH_MAX];
    bool has_wdir = getcwd(wdir, sizeof(wdir)) != NULL;
    struct ctl_buf b = {0};
    ctl_buf_u32(&b, (uint32_t)host->nranks);
    ctl_buf_u32(&b, (uint32_t)ctl.opts->napps);
    ctl_buf_u32(&b, ctl_count(env));
    ctl_buf_u32(&b, has_wdir);
    ctl_buf_u32(&b, ctl.stdin_rank >= 0 ? (uint32_t)ctl.stdin_rank : UINT32_MAX);
    for (int i = 0; i < host->nranks; i++) {
        ctl_buf_u32(&b, (uint32_t)host->ranks[i]);
        ctl_buf_u32(&b, (uint32_t)bm_run_job.ranks[host->ranks[i]].app);
    }
    ctl_buf_strs(&b, env);
    if (has_wdir)
        ctl_buf_put(&b, wdir, strlen(wdir) + 1);
    for (int a = 0; a < ctl.opts->napps; a++) {
        char **aenv = ctl_env_for_app(a, true);
        if (!aenv) {
            b.failed = true;
            break;
        }
        ctl_buf_u32(&b, ctl_count(ctl.opts->apps[a].argv));
        ctl_buf_u32(&b, ctl_count(aenv));
        ctl_buf_strs(&b, ctl.opts->apps[a].argv);
        ctl_buf_strs(&b, aenv);
        bm_run_strv_free(aenv);
    }
    bm_status_t rc = b.failed ? BM_ERR_NO_MEMORY
                              : bm_run_conn_send(host->daemon, BM_RTE_MSG_LAUNCH,
                                                 (uint32_t)host->node, b.p, b.len);
    free(b.p);
    bm_run_strv_free(env);
    return rc;
}

void bm_run_ctl_daemon_hello(struct bm_run_conn *c, int h)
{
    struct bm_run_host *host = &bm_run_job.hosts[h];
    host->hello = true;
    host->daemon = c;
    bm_run_conn_set_arg(c, host);
    bm_run_conn_set_handlers(c, ctl_daemon_msg, ctl_daemon_close);
    if (ctl.stopping) {
        bm_run_conn_send(c, BM_RTE_MSG_SHUTDOWN, 0, NULL, 0);
        return;
    }
    if (ctl_send_launch(host, h) != BM_OK) {
        bm_run_say("cannot send the launch request to the daemon on host %s", host->name);
        ctl_stop(BM_RUN_EXIT_FAILURE, SIGTERM);
    } else if (ctl.stdin_rank >= 0 && bm_run_job.ranks[ctl.stdin_rank].host == h) {
        bm_run_stdin_start(ctl.stdin_rank, c);
    }
}

/* The agent's own stdout/stderr (ssh errors, a daemon that cannot start)
 * is passed on line by line with the host name. */
static void ctl_agent_output(int fd, short revents, void *arg)
{
    struct bm_run_host *host = arg;
    (void)revents;
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    if (n <= 0) {
        /* Nothing more now; when the agent has exited, whoever still holds
         * the pipe (a left-over child) is not worth waiting for. */
        if (n < 0 && (errno == EINTR || errno == EAGAIN) && !host->agent_exited)
            return;
        bm_run_loop_del(fd);
        close(fd);
        if (host->out_fd == fd)
            host->out_fd = -1;
        else
            host->err_fd = -1;
        return;
    }
    buf[n] = '\0';
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        bm_run_say("[host %s] %s", host->name, line);
}

/* Split the agent template into words as a shell would for simple words:
 * blanks separate, '...' and "..." quote, a backslash escapes one character.
 * {host} inside a word becomes the host name. NULL on an unterminated quote. */
static char **ctl_agent_argv(const char *tmpl, const char *hostname, const char *self, int h)
{
    size_t cap = strlen(tmpl) + 8;
    char **argv = calloc(cap, sizeof(char *));
    char *word = malloc(strlen(tmpl) + 1);
    size_t n = 0;
    bool had_host = false, ok = argv && word;
    const char *p = tmpl;
    while (ok && *p) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        size_t w = 0;
        char quote = 0;
        for (; *p && (quote || (*p != ' ' && *p != '\t')); p++) {
            if (quote && *p == quote)
                quote = 0;
            else if (!quote && (*p == '\'' || *p == '"'))
                quote = *p;
            else if (*p == '\\' && p[1] && quote != '\'')
                word[w++] = *++p;
            else
                word[w++] = *p;
        }
        word[w] = '\0';
        if (quote) {
            ok = false;
            break;
        }
        char *at = strstr(word, "{host}");
        had_host |= at != NULL;
        argv[n++] =
            at ? ctl_strdupf("%.*s%s%s", (int)(at - word), word, hostname, at + 6) : strdup(word);
    }
    free(word);
    if (ok && n == 0)
        ok = false;
    if (ok) {
        if (!had_host)
            argv[n++] = strdup(hostname);
        argv[n++] = strdup(self);
        argv[n++] = strdup("--daemon");
        argv[n++] = ctl_strdupf("%d", h);
        argv[n++] = strdup(bm_run_job.kvs_addrs);
        argv[n++] = strdup(bm_run_job.jobid);
        for (size_t i = 0; i < n; i++)
            ok &= argv[i] != NULL;
    }
    if (!ok && argv) {
        for (size_t i = 0; i < n; i++)
            free(argv[i]);
        free(argv);
        return NULL;
    }
    return argv;
}

static bm_status_t ctl_start_daemon(int h, const char *self)
{
    struct bm_run_host *host = &bm_run_job.hosts[h];
    const char *tmpl = ctl.opts->agent ? ctl.opts->agent : bm_run_cfg.launch_agent;
    char **argv = ctl_agent_argv(tmpl, host->name, self, h);
    if (!argv) {
        bm_run_say("cannot use the launch agent '%s': empty, or a quote is not closed", tmpl);
        return BM_ERR_BAD_PARAM;
    }
    int inp[2] = {-1, -1}, outp[2] = {-1, -1}, errp[2] = {-1, -1};
    pid_t pid = -1;
    if (pipe2(inp, O_CLOEXEC) == 0 && pipe2(outp, O_CLOEXEC) == 0 && pipe2(errp, O_CLOEXEC) == 0)
        pid = fork();
    if (pid < 0) {
        bm_run_say("cannot start the launch agent for host %s: %s", host->name, strerror(errno));
        int fds[] = {inp[0], inp[1], outp[0], outp[1], errp[0], errp[1]};
        for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
            if (fds[i] >= 0)
                close(fds[i]);
        bm_run_strv_free(argv);
        return BM_ERR_SYSTEM;
    }
    if (pid == 0) {
        bm_run_loop_child_reset();
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(inp[0], 0);
        dup2(outp[1], 1);
        dup2(errp[1], 2);
        execvp(argv[0], argv);
        fprintf(stderr,
                "cannot execute launch agent '%s': %s; install it or choose another agent "
                "with --launch-agent or BM_RUN_LAUNCH_AGENT\n",
                argv[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);
    host->agent_pid = pid;
    close(inp[0]);
    close(outp[1]);
    close(errp[1]);
    /* The secret travels on the daemon's stdin, never on a command line. */
    char line[2 * BM_RTE_SECRET_LEN + 2];
    snprintf(line, sizeof(line), "%s\n", bm_run_job.secret_hex);
    bm_rte_proto_write_full(inp[1], line, strlen(line));
    close(inp[1]);
    host->out_fd = outp[0];
    host->err_fd = errp[0];
    fcntl(outp[0], F_SETFL, fcntl(outp[0], F_GETFL) | O_NONBLOCK);
    fcntl(errp[0], F_SETFL, fcntl(errp[0], F_GETFL) | O_NONBLOCK);
    bm_run_loop_add(outp[0], POLLIN, ctl_agent_output, host);
    bm_run_loop_add(errp[0], POLLIN, ctl_agent_output, host);
    bm_run_strv_free(argv);
    return BM_OK;
}

static void ctl_on_child(pid_t pid, int wstatus)
{
    if (bm_run_local_reaped(pid, wstatus))
        return;
    for (int h = 0; h < bm_run_job.nhosts; h++) {
        struct bm_run_host *host = &bm_run_job.hosts[h];
        if (host->agent_pid != pid)
            continue;
        host->agent_exited = true;
        host->agent_status = wstatus;
        /* What the agent said (ssh's reason) comes before our verdict. */
        while (host->out_fd >= 0)
            ctl_agent_output(host->out_fd, POLLIN, host);
        while (host->err_fd >= 0)
            ctl_agent_output(host->err_fd, POLLIN, host);
        if (!host->hello) {
            char how[64];
            if (WIFSIGNALED(wstatus))
                snprintf(how, sizeof(how), "was killed by %s",
                         bm_run_signal_name(WTERMSIG(wstatus)));
            else
                snprintf(how, sizeof(how), "exited with status %d", WEXITSTATUS(wstatus));
            char why[512];
            snprintf(why, sizeof(why),
                     "the launch agent '%s' %s before the bmrun daemon connected back",
                     ctl.opts->agent ? ctl.opts->agent : bm_run_cfg.launch_agent, how);
            ctl_host_lost(host, why);
        }
    }
}

static void ctl_on_signal(int sig)
{
    ctl.signals_seen++;
    if (ctl.signals_seen == 1 && !ctl.stopping) {
        bm_run_say("received %s: passing it to every rank", bm_run_signal_name(sig));
        ctl_stop(BM_RUN_EXIT_SIGNAL_BASE + sig, sig);
    } else if (!ctl.killed) {
        bm_run_say("received %s again: killing every rank", bm_run_signal_name(sig));
        ctl.killed = true;
        ctl_signal_all(SIGKILL);
    }
}

/* ---- main loop ---- */

static void ctl_report_timeout(void)
{
    char list[4096] = "";
    size_t o = 0;
    int n = 0;
    for (int r = 0; r < bm_run_job.size; r++) {
        struct bm_run_rank *rk = &bm_run_job.ranks[r];
        if (rk->state == BM_RUN_RANK_EXITED)
            continue;
        n++;
        if (o >= sizeof(list) - 80)
            continue;
        if (rk->pid > 0)
            o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%d (host %s, pid %d)",
                                  o ? ", " : "", r, rank_host(r), (int)rk->pid);
        else
            o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%d (host %s, not started)",
                                  o ? ", " : "", r, rank_host(r));
    }
    bm_run_say("timeout after %g s: %d rank(s) had not finished: %s", ctl.opts->timeout, n, list);
}

static bool ctl_daemons_done(void)
{
    for (int h = 0; h < bm_run_job.nhosts; h++) {
        struct bm_run_host *host = &bm_run_job.hosts[h];
        if (!host->local && host->agent_pid > 0 && (!host->agent_exited || host->daemon))
            return false;
    }
    return true;
}

static int ctl_loop(void)
{
    double daemon_deadline = bm_run_now() + bm_run_cfg.daemon_timeout;
    bool shutdown_sent = false;
    for (;;) {
        double now = bm_run_now();
        bool ranks_done = ctl.nexited == bm_run_job.size && bm_run_local_running() == 0;
        if (ctl.verdict_pending && (now >= ctl.verdict_at || ctl.nexited == bm_run_job.size))
            ctl_decide();
        if (ranks_done && !shutdown_sent) {
            shutdown_sent = true;
            ctl.shutdown_until = now + bm_run_cfg.kill_grace + 5;
            for (int h = 0; h < bm_run_job.nhosts; h++)
                if (bm_run_job.hosts[h].daemon)
                    bm_run_conn_send(bm_run_job.hosts[h].daemon, BM_RTE_MSG_SHUTDOWN, 0, NULL, 0);
        }
        if (ranks_done && (ctl_daemons_done() || now > ctl.shutdown_until))
            break;
        if (ctl.timeout_at && now >= ctl.timeout_at && !ctl.stopping) {
            ctl_report_timeout();
            ctl_stop(BM_RUN_EXIT_TIMEOUT, SIGTERM);
        }
        if (!ctl.stopping && now > daemon_deadline) {
            for (int h = 0; h < bm_run_job.nhosts; h++) {
                struct bm_run_host *host = &bm_run_job.hosts[h];
                if (!host->local && host->nranks && !host->hello) {
                    char why[160];
                    snprintf(why, sizeof(why),
                             "the bmrun daemon did not connect back within %g s "
                             "(BM_RUN_DAEMON_TIMEOUT)",
                             bm_run_cfg.daemon_timeout);
                    ctl_host_lost(host, why);
                }
            }
        }
        if (ctl.kill_deadline && now >= ctl.kill_deadline && !ctl.killed) {
            ctl.killed = true;
            ctl_signal_all(SIGKILL);
        }
        if (ctl.kill_deadline && now >= ctl.kill_deadline + CTL_GIVE_UP_AFTER_KILL) {
            /* SIGKILL went out long ago: a rank stuck in the kernel or a
             * daemon that stopped answering must not keep bmrun alive. */
            for (int r = 0; r < bm_run_job.size; r++)
                if (bm_run_job.ranks[r].state != BM_RUN_RANK_EXITED)
                    bm_run_say("rank %d (host %s, pid %d) did not end %d s after SIGKILL; "
                               "giving up on it",
                               r, rank_host(r), (int)bm_run_job.ranks[r].pid,
                               CTL_GIVE_UP_AFTER_KILL);
            break;
        }
        bm_run_local_tick();
        bm_run_kvs_tick();
        /* Sleep until the next deadline, at most 250 ms (kvs hello sweep). */
        double next = now + 0.25;
        if (ctl.timeout_at && !ctl.stopping && ctl.timeout_at < next)
            next = ctl.timeout_at;
        if (ctl.kill_deadline && !ctl.killed && ctl.kill_deadline < next)
            next = ctl.kill_deadline;
        if (ctl.verdict_pending && ctl.verdict_at < next)
            next = ctl.verdict_at;
        double d = bm_run_local_next_deadline();
        if (d && d < next)
            next = d;
        int ms = (int)((next - now) * 1000) + 1;
        bm_run_loop_once(ms < 0 ? 0 : ms);
    }
    for (int h = 0; h < bm_run_job.nhosts; h++) {
        struct bm_run_host *host = &bm_run_job.hosts[h];
        if (!host->local && host->agent_pid > 0 && !host->agent_exited) {
            kill(-host->agent_pid, SIGKILL);
            waitpid(host->agent_pid, NULL, 0);
        }
    }
    return ctl.exit_code;
}

static bm_status_t ctl_make_identity(void)
{
    struct bm_run_job *job = &bm_run_job;
    uint32_t rnd;
    if (getrandom(job->secret, sizeof(job->secret), 0) != (ssize_t)sizeof(job->secret) ||
        getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
        bm_run_say("getrandom failed: %s; cannot make a job secret", strerror(errno));
        return BM_ERR_SYSTEM;
    }
    bm_rte_proto_secret_to_hex(job->secret, job->secret_hex);
    snprintf(job->jobid, sizeof(job->jobid), "%dx%08x", (int)getpid(), rnd);
    return BM_OK;
}

/* Start the ranks of host h on this machine. When they cannot start the
 * job is stopped, and ranks never started count as ended. */
static void ctl_start_local(int h)
{
    struct bm_run_job *job = &bm_run_job;
    struct bm_run_host *host = &job->hosts[h];
    int napps = ctl.opts->napps;
    char **env = ctl_env_for_host(h);
    char ***aenv = calloc((size_t)napps, sizeof(char **));
    struct bm_run_local_app *apps = calloc((size_t)napps, sizeof(*apps));
    int *app_of = calloc((size_t)host->nranks, sizeof(int));
    bool ok = env && aenv && apps && app_of;
    for (int a = 0; ok && a < napps; a++) {
        char **own = ctl_env_for_app(a, false);
        aenv[a] = own ? bm_run_strv_join(env, own) : NULL;
        if (aenv[a])
            free(own); /* its strings now belong to aenv[a] */
        else
            bm_run_strv_free(own);
        ok = aenv[a] != NULL;
        if (ok)
            apps[a] = (struct bm_run_local_app){.argv = ctl.opts->apps[a].argv, .env_add = aenv[a]};
    }
    for (int i = 0; ok && i < host->nranks; i++)
        app_of[i] = job->ranks[host->ranks[i]].app;
    struct bm_run_local_spec spec = {.apps = apps,
                                     .ranks = host->ranks,
                                     .app_of = app_of,
                                     .nranks = host->nranks,
                                     .stdin_rank = ctl.stdin_rank};
    struct bm_run_sink sink = {.spawned = ctl_spawned, .output = ctl_output, .exited = ctl_exited};
    if (!ok || bm_run_local_start(&spec, &sink) != BM_OK) {
        ctl_stop(BM_RUN_EXIT_FAILURE, SIGTERM);
        for (int i = 0; i < host->nranks; i++) {
            struct bm_run_rank *rk = &job->ranks[host->ranks[i]];
            if (rk->state == BM_RUN_RANK_PENDING) {
                rk->state = BM_RUN_RANK_EXITED;
                ctl.nexited++;
            }
        }
    } else if (ctl.stdin_rank >= 0 && job->ranks[ctl.stdin_rank].host == h) {
        bm_run_stdin_start(ctl.stdin_rank, NULL);
    }
    /* The children have their own copies; the strings are freed here: the
     * host's once (shared by every program's list), then each program's own. */
    for (int a = 0; aenv && a < napps; a++) {
        if (!aenv[a])
            continue;
        size_t n = 0;
        while (env && env[n])
            n++;
        for (char **e = aenv[a] + n; *e; e++)
            free(*e);
        free(aenv[a]);
    }
    bm_run_strv_free(env);
    free(aenv);
    free(apps);
    free(app_of);
}

/* Read bmrun's stdin for rank 0 unless told not to, or unless bmrun runs
 * in the background of a terminal (reading would stop it with SIGTTIN). */
static int ctl_stdin_rank(const struct bm_run_opts *opts)
{
    if (opts->stdin_rank < 0)
        return -1;
    if (isatty(0) && tcgetpgrp(0) != getpgrp())
        return -1;
    return opts->stdin_rank;
}

int bm_run_ctl_run(const struct bm_run_opts *opts)
{
    ctl.opts = opts;
    struct bm_run_job *job = &bm_run_job;
    bm_status_t rc = BM_OK;
    int np = 0;
    for (int a = 0; a < opts->napps; a++)
        np += opts->apps[a].np;
    bool limited = opts->hostfile || opts->hosts;
    if (opts->hostfile)
        rc = hosts_from_file(opts->hostfile);
    else if (opts->hosts)
        rc = hosts_from_list(opts->hosts);
    else /* this host alone takes any number of ranks, as with mpiexec.hydra */
        rc = host_add("localhost", np ? np : opts->npernode, "the default host list");
    if (rc != BM_OK)
        return BM_RUN_EXIT_USAGE;
    if (np == 0) /* no -n: one rank per slot (or -N per host) of every host */
        for (int h = 0; h < job->nhosts; h++)
            np += ctl_capacity(&job->hosts[h]);
    if (opts->napps == 1)
        ((struct bm_run_opts *)opts)->apps[0].np = np;
    rc = ctl_place(np, limited);
    if (rc == BM_ERR_BAD_PARAM)
        return BM_RUN_EXIT_USAGE;
    if (rc != BM_OK || ctl_make_identity() != BM_OK)
        return BM_RUN_EXIT_FAILURE;
    ctl.stdin_rank = ctl_stdin_rank(opts);
    for (int r = 0; opts->display_map && r < np; r++) {
        const struct bm_run_rank *rk = &job->ranks[r];
        const struct bm_run_host *host = &job->hosts[rk->host];
        bm_run_say("rank %d on host %s (node %d, local rank %d of %d): %s", r, host->name,
                   host->node, rk->local, host->nranks, opts->apps[rk->app].argv[0]);
    }

    bool any_local = false, any_remote = false;
    for (int h = 0; h < job->nhosts; h++) {
        if (!job->hosts[h].nranks)
            continue;
        any_local |= job->hosts[h].local;
        any_remote |= !job->hosts[h].local;
    }
    if (any_remote) {
        const char *tmpl = opts->agent ? opts->agent : bm_run_cfg.launch_agent;
        char **probe = ctl_agent_argv(tmpl, "host", "bmrun", 0);
        if (!probe) {
            fprintf(stderr, "bmrun: bad launch agent '%s': empty, or a quote is not closed\n",
                    tmpl);
            return BM_RUN_EXIT_USAGE;
        }
        bm_run_strv_free(probe);
    }
    char found[PATH_MAX];
    for (int a = 0; any_local && a < opts->napps; a++) {
        const char *prog = opts->apps[a].argv[0];
        if (!bm_run_find_program(prog, found, sizeof(found))) {
            bm_run_say("program '%s' not found or not executable%s", prog,
                       strchr(prog, '/') ? "" : " (searched PATH)");
            return BM_RUN_EXIT_NOT_FOUND;
        }
    }
    char self[PATH_MAX];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (sl <= 0) {
        bm_run_say("cannot find bmrun's own path: %s", strerror(errno));
        return BM_RUN_EXIT_FAILURE;
    }
    self[sl] = '\0';

    /* Three descriptors per local rank (stdout, stderr, service connection):
     * large jobs need more than the usual soft limit of 1024. */
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
        nofile.rlim_cur = nofile.rlim_max;
        setrlimit(RLIMIT_NOFILE, &nofile);
    }
    if (bm_run_loop_signals_init(ctl_on_signal, ctl_on_child) != BM_OK ||
        bm_run_kvs_start(any_remote) != BM_OK)
        return BM_RUN_EXIT_FAILURE;
    if (opts->timeout > 0)
        ctl.timeout_at = bm_run_now() + opts->timeout;

    for (int h = 0; h < job->nhosts && !ctl.stopping; h++) {
        struct bm_run_host *host = &job->hosts[h];
        if (!host->nranks)
            continue;
        if (host->local) {
            ctl_start_local(h);
        } else if (ctl_start_daemon(h, self) != BM_OK) {
            ctl_host_lost(host, "could not start the launch agent");
        }
    }
    int code = ctl_loop();
    bm_run_cleanup_job_files(job->jobid);
    return code;
}
