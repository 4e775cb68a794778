/* Starting and watching the ranks of this host, used in-process by the
 * controller for its own host and by each daemon for its host. Each rank runs
 * in a session of its own (setsid, as MPICH's hydra does: with the kernel's
 * autogroups each rank is a scheduling group of its own, not one group for
 * the whole job; README "Sessions") whose process group is the rank's pid
 * (so signals reach whatever it started), with
 * stdout and stderr on pipes that are cut into whole lines here, which is
 * what keeps lines of different ranks from tearing each other. A rank's exit
 * is reported only after its pipes are drained, so its last lines come
 * before any message about how it ended. exec failures travel back on a
 * close-on-exec pipe so that "program not found" is reported as such; that
 * pipe is read from the poll loop, not right after fork: waiting there for
 * each child to be scheduled and exec made starting 64 ranks on a busy
 * 2-core machine take a second, one rank after the other. The
 * rank named by the spec's stdin_rank reads a pipe fed by bm_run_local_stdin
 * (bmrun's own input); every other rank reads /dev/null. */
#define BM_LOG_SUBSYS "bmrun"
#include "bmrun.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#define LOCAL_LINE_MAX 65536

struct local_stream {
    int fd; /* -1 once closed */
    int which;
    char *buf;
    size_t len;
};

struct local_rank {
    int rank;
    pid_t pid;
    bool exited, reported;
    int wstatus, exec_errno;
    int exec_fd; /* read end of the close-on-exec pipe; -1 once exec's outcome is known */
    double drain_deadline;
    struct local_stream out, err;
};

static struct local_rank *local_ranks;
static int local_n;
static struct bm_run_sink local_sink;

/* The stdin pipe of the rank that reads bmrun's input, and the chunk being
 * written into it. */
static struct {
    int fd; /* write end, -1: none here or closed */
    const char *data;
    size_t len;
    void (*done)(void *arg);
    void *arg;
} local_in = {.fd = -1};

static void local_emit(struct local_rank *lr, struct local_stream *st, const char *data, size_t len)
{
    if (len)
        local_sink.output(local_sink.arg, lr->rank, st->which, data, len);
}

static void local_stream_close(struct local_rank *lr, struct local_stream *st)
{
    if (st->fd < 0)
        return;
    if (st->len) {
        /* A last line without a newline gets one, so that the next rank's
         * line does not continue it. */
        st->buf[st->len++] = '\n';
        local_emit(lr, st, st->buf, st->len);
        st->len = 0;
    }
    bm_run_loop_del(st->fd);
    close(st->fd);
    st->fd = -1;
}

static void local_report_if_done(struct local_rank *lr)
{
    if (!lr->exited || lr->reported || lr->out.fd >= 0 || lr->err.fd >= 0 || lr->exec_fd >= 0)
        return;
    lr->reported = true;
    local_sink.exited(local_sink.arg, lr->rank, lr->pid, lr->wstatus, lr->exec_errno);
}

/* Read what is there; returns false at EOF or error. */
static bool local_stream_read(struct local_rank *lr, struct local_stream *st)
{
    for (;;) {
        /* One byte is kept free for the newline added at EOF. */
        ssize_t n = read(st->fd, st->buf + st->len, LOCAL_LINE_MAX - 1 - st->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return true;
        if (n <= 0)
            return false;
        st->len += (size_t)n;
        char *last = memrchr(st->buf, '\n', st->len);
        if (last) {
            size_t whole = (size_t)(last - st->buf) + 1;
            local_emit(lr, st, st->buf, whole);
            memmove(st->buf, st->buf + whole, st->len - whole);
            st->len -= whole;
        } else if (st->len == LOCAL_LINE_MAX - 1) {
            /* An over-long line goes out in pieces. */
            local_emit(lr, st, st->buf, st->len);
            st->len = 0;
        }
    }
}

static void local_ready(int fd, short revents, void *arg)
{
    struct local_rank *lr = arg;
    struct local_stream *st = lr->out.fd == fd ? &lr->out : &lr->err;
    (void)revents;
    if (!local_stream_read(lr, st)) {
        local_stream_close(lr, st);
        local_report_if_done(lr);
    }
}

/* exec's outcome: an errno written by the child, or end of file when exec
 * succeeded (the pipe is close-on-exec). */
static void local_exec_read(struct local_rank *lr)
{
    int e = 0;
    ssize_t n;
    do {
        n = read(lr->exec_fd, &e, sizeof(e));
    } while (n < 0 && errno == EINTR);
    if (n < 0 && errno == EAGAIN)
        return;
    lr->exec_errno = n == (ssize_t)sizeof(e) ? e : 0;
    bm_run_loop_del(lr->exec_fd);
    close(lr->exec_fd);
    lr->exec_fd = -1;
}

static void local_exec_ready(int fd, short revents, void *arg)
{
    (void)fd;
    (void)revents;
    struct local_rank *lr = arg;
    local_exec_read(lr);
    if (lr->exec_fd < 0)
        local_report_if_done(lr);
}

static bm_status_t local_stream_open(struct local_stream *st, int which, int fds[2])
{
    st->which = which;
    st->len = 0;
    st->fd = -1;
    st->buf = malloc(LOCAL_LINE_MAX);
    if (!st->buf)
        return BM_ERR_NO_MEMORY;
    if (pipe2(fds, O_CLOEXEC) != 0) {
        free(st->buf);
        st->buf = NULL;
        return BM_ERR_SYSTEM;
    }
    st->fd = fds[0];
    fcntl(st->fd, F_SETFL, fcntl(st->fd, F_GETFL) | O_NONBLOCK);
    return BM_OK;
}

/* True when cpu is the first hardware thread of its core (or the topology
 * is unknown). */
static bool cpu_first_thread(int cpu)
{
    char path[96];
    snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list",
             cpu);
    FILE *f = fopen(path, "r");
    if (!f)
        return true;
    int first = -1;
    bool ok = fscanf(f, "%d", &first) == 1;
    fclose(f);
    return !ok || first == cpu;
}

/* Parse a sysfs CPU list ("0-3,8,10-11") into set; false when unreadable. */
static bool cpulist_read(const char *path, cpu_set_t *set)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char buf[4096];
    bool ok = fgets(buf, sizeof(buf), f) != NULL;
    fclose(f);
    CPU_ZERO(set);
    for (char *p = buf; ok && *p && *p != '\n';) {
        char *end;
        long lo = strtol(p, &end, 10), hi = lo;
        if (end == p)
            return false;
        if (*end == '-')
            hi = strtol(end + 1, &end, 10);
        for (long c = lo; c <= hi && c < CPU_SETSIZE; c++)
            CPU_SET((int)c, set);
        p = *end == ',' ? end + 1 : end;
    }
    return ok && CPU_COUNT(set) > 0;
}

/* The CPUs that share the --bind-to object `level` with cpu (Open MPI's
 * objects: hwthread, core, l1cache, l2cache, l3cache, numa, socket or
 * package, board), from sysfs. False when this kernel does not say. */
static bool cpu_domain(int cpu, const char *level, cpu_set_t *out)
{
    char path[160];
    const char *top = "/sys/devices/system/cpu";
    if (strcmp(level, "hwthread") == 0 || strcmp(level, "cpu") == 0) {
        CPU_ZERO(out);
        CPU_SET(cpu, out);
        return true;
    }
    if (strcmp(level, "core") == 0) {
        snprintf(path, sizeof(path), "%s/cpu%d/topology/thread_siblings_list", top, cpu);
        return cpulist_read(path, out);
    }
    if (strcmp(level, "socket") == 0 || strcmp(level, "package") == 0) {
        snprintf(path, sizeof(path), "%s/cpu%d/topology/core_siblings_list", top, cpu);
        return cpulist_read(path, out);
    }
    if (strcmp(level, "numa") == 0) {
        for (int node = 0; node < 1024; node++) {
            snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", node);
            if (cpulist_read(path, out) && CPU_ISSET(cpu, out))
                return true;
        }
        return false;
    }
    if (strcmp(level, "board") == 0)
        return sched_getaffinity(0, sizeof(*out), out) == 0;
    if (strlen(level) == 7 && strncmp(level, "l", 1) == 0 && strcmp(level + 2, "cache") == 0) {
        int want = level[1] - '0';
        for (int i = 0; i < 16; i++) {
            char buf[32] = "";
            snprintf(path, sizeof(path), "%s/cpu%d/cache/index%d/level", top, cpu, i);
            FILE *f = fopen(path, "r");
            if (!f)
                break;
            int lv = -1;
            bool ok = fscanf(f, "%d", &lv) == 1;
            fclose(f);
            snprintf(path, sizeof(path), "%s/cpu%d/cache/index%d/type", top, cpu, i);
            if ((f = fopen(path, "r")) != NULL) {
                if (!fgets(buf, sizeof(buf), f))
                    buf[0] = '\0';
                fclose(f);
            }
            if (!ok || lv != want || strncmp(buf, "Instruction", 11) == 0)
                continue;
            snprintf(path, sizeof(path), "%s/cpu%d/cache/index%d/shared_cpu_list", top, cpu, i);
            return cpulist_read(path, out);
        }
        return false;
    }
    return false;
}

/* Bind local rank idx of nlocal as BMRUN_BIND_TO says. Each rank is given
 * a CPU of its own, the first threads of distinct cores before their
 * siblings, and is bound to it ("cpu", the default, and "hwthread") or to
 * the CPUs of the object around it that --bind-to names ("core": its
 * hardware threads; "l2cache", "socket", "numa", ...: Open MPI's meaning).
 * Unbound ranks on a busy machine were measured sharing one CPU now and
 * then, and every shared-memory message then waited for a context switch
 * (2.5 us instead of 0.15 us). With more ranks than CPUs nothing is bound:
 * the kernel balances better than a fixed oversubscribed placement. A rank
 * alone on its host is not bound either: it has no local peer to keep
 * apart from, and "hosts" that are containers or network namespaces of one
 * machine would all pin their lone rank to the same first CPU (measured:
 * a veth ping-pong between two namespaces went from 7 to 24 us). Returns
 * why nothing was bound, or NULL with the CPUs in *set_out. */
static const char *local_bind(int idx, int nlocal, cpu_set_t *set_out)
{
    const char *how = getenv("BMRUN_BIND_TO");
    if (!how || strcmp(how, "none") == 0)
        return "--bind-to none";
    if (nlocal < 2)
        return "the only rank on its host";
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return "its CPU set cannot be read";
    int order[CPU_SETSIZE], n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set) && cpu_first_thread(c) == (pass == 0))
                order[n++] = c;
    if (nlocal > n)
        return "more ranks on its host than CPUs (oversubscribed)";
    static char why[96];
    if (!cpu_domain(order[idx], how, set_out)) {
        snprintf(why, sizeof(why), "this kernel does not say which CPUs share a %.16s", how);
        return why;
    }
    CPU_AND(set_out, set_out, &set); /* never outside what bmrun was given */
    if (CPU_COUNT(set_out) == 0 || sched_setaffinity(0, sizeof(*set_out), set_out) != 0)
        return "sched_setaffinity failed";
    return NULL;
}

/* --report-bindings: one line on the rank's stderr, like mpirun's. */
static void local_report_binding(int rank, const char *why_not, const cpu_set_t *set)
{
    if (!getenv("BMRUN_REPORT_BINDINGS"))
        return;
    const char *host = getenv("BMRUN_HOSTNAME");
    if (why_not) {
        fprintf(stderr, "bmrun: rank %d (host %s, pid %d) not bound: %s\n", rank, host ? host : "?",
                (int)getpid(), why_not);
        fflush(stderr);
        return;
    }
    char list[256] = "";
    size_t len = 0;
    for (int c = 0; c < CPU_SETSIZE && len + 16 < sizeof(list); c++) {
        if (!CPU_ISSET(c, set) || (c > 0 && CPU_ISSET(c - 1, set)))
            continue;
        int hi = c;
        while (hi + 1 < CPU_SETSIZE && CPU_ISSET(hi + 1, set))
            hi++;
        len += (size_t)snprintf(list + len, sizeof(list) - len, hi > c ? "%s%d-%d" : "%s%d",
                                len ? "," : "", c, hi);
    }
    const char *how = getenv("BMRUN_BIND_TO");
    fprintf(stderr, "bmrun: rank %d (host %s, pid %d) bound to CPU%s %s%s%s%s\n", rank,
            host ? host : "?", (int)getpid(), CPU_COUNT(set) > 1 ? "s" : "", list,
            how && strcmp(how, "cpu") != 0 ? " (--bind-to " : "",
            how && strcmp(how, "cpu") != 0 ? how : "", how && strcmp(how, "cpu") != 0 ? ")" : "");
    fflush(stderr);
}

/* A new session starts a new autogroup at nice 0, whatever the rank's own
 * nice value: so that "nice bmrun ..." still yields the CPU to other
 * sessions, the group takes the rank's nice value when it is positive
 * (lowering it needs privileges). No autogroups (no such file): nothing. */
static void local_keep_nice(void)
{
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0);
    if (errno != 0 || nice <= 0)
        return;
    int fd = open("/proc/self/autogroup", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[16];
    int len = snprintf(buf, sizeof(buf), "%d", nice);
    ssize_t w = write(fd, buf, (size_t)len);
    (void)w;
    close(fd);
}

/* Whether a rank gets a session of its own (README "Sessions"): not where
 * the ranks of this host give their CPUs to each other, i.e. more of them
 * than the CPUs bmrun may use (the PML then yields when idle), or a job
 * told to yield (BM_PML_IDLE_YIELD above 0: network-namespace "hosts" that
 * share the cores). sched_yield hands the CPU only to threads of the
 * yielder's own scheduling group, and a session is an autogroup: with a
 * group per rank a waiting rank's yield did not let the peer it waits for
 * run, and kept the CPU until the scheduler's tick (4 ms here). Measured
 * at load 40-50, main's bmrun (a session per rank) vs one session: 2 ranks
 * bound to one CPU, MPI_Barrier 47-1760 us vs 1.6-1.7; 4 ranks on 2 CPUs,
 * 8 B MPI_Allreduce 340-7150 us vs 3.4-4.7; MPI_Iallreduce of 1 MiB with
 * 16 MPI_Test calls, 4 ranks: 20% overlap (the collective alone 22 ms) vs
 * 94% (0.6 ms). */
static bool local_own_session(int nlocal)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0 && nlocal > CPU_COUNT(&set))
        return false;
    const char *yield = getenv("BM_PML_IDLE_YIELD");
    return !(yield && atoi(yield) > 0);
}

__attribute__((noreturn)) static void local_child(const struct bm_run_local_spec *spec, int idx,
                                                  int in_r, int out_w, int err_w, int exec_w,
                                                  pid_t parent)
{
    bm_run_loop_child_reset();
    /* If bmrun (or the daemon) dies without cleaning up, the rank dies too. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    int in = in_r >= 0 ? in_r : open("/dev/null", O_RDONLY);
    if (in >= 0 && in != 0) {
        dup2(in, 0);
        close(in);
    }
    dup2(out_w, 1);
    dup2(err_w, 2);
    const struct bm_run_local_app *app = &spec->apps[spec->app_of[idx]];
    for (char *const *e = app->env_add; e && *e; e++)
        putenv(*e);
    char buf[32];
    snprintf(buf, sizeof(buf), "%d", spec->ranks[idx]);
    setenv("BMRUN_RANK", buf, 1);
    snprintf(buf, sizeof(buf), "%d", idx);
    setenv("BMRUN_LOCAL_RANK", buf, 1);
    /* A session (and so a process group) of its own, or only a group of its
     * own where the ranks hand CPUs to each other (local_own_session). The
     * parent does not setpgid() the child: a group leader cannot setsid(). */
    if (!local_own_session(spec->nranks) || setsid() < 0)
        setpgid(0, 0);
    else
        local_keep_nice();
    cpu_set_t bound;
    CPU_ZERO(&bound);
    const char *why_not = local_bind(idx, spec->nranks, &bound);
    local_report_binding(spec->ranks[idx], why_not, &bound);
    execvp(app->argv[0], app->argv);
    int e = errno;
    ssize_t w = write(exec_w, &e, sizeof(e));
    (void)w;
    _exit(127);
}

static bm_status_t local_spawn(const struct bm_run_local_spec *spec, int idx)
{
    struct local_rank *lr = &local_ranks[idx];
    int outp[2], errp[2], execp[2], inp[2] = {-1, -1};
    lr->rank = spec->ranks[idx];
    if (lr->rank == spec->stdin_rank) {
        if (pipe2(inp, O_CLOEXEC) != 0)
            return BM_ERR_SYSTEM;
        fcntl(inp[1], F_SETFL, fcntl(inp[1], F_GETFL) | O_NONBLOCK);
    }
    if (local_stream_open(&lr->out, BM_RTE_STREAM_STDOUT, outp) != BM_OK)
        goto err_in;
    if (local_stream_open(&lr->err, BM_RTE_STREAM_STDERR, errp) != BM_OK)
        goto err_out;
    if (pipe2(execp, O_CLOEXEC) != 0)
        goto err_err;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        goto err_exec;
    if (pid == 0)
        local_child(spec, idx, inp[0], outp[1], errp[1], execp[1], parent);
    /* (no setpgid(pid, pid) here: it would make the child a group leader
     * and its setsid() fail. Until the child has its group, kill(-pid)
     * fails and bm_run_local_kill signals the pid itself.) */
    if (inp[0] >= 0) {
        close(inp[0]);
        local_in.fd = inp[1];
    }
    close(outp[1]);
    close(errp[1]);
    close(execp[1]);
    lr->pid = pid;
    lr->exec_fd = execp[0];
    fcntl(lr->exec_fd, F_SETFL, fcntl(lr->exec_fd, F_GETFL) | O_NONBLOCK);
    local_sink.spawned(local_sink.arg, lr->rank, pid);
    bm_run_loop_add(lr->exec_fd, POLLIN, local_exec_ready, lr);
    bm_run_loop_add(lr->out.fd, POLLIN, local_ready, lr);
    bm_run_loop_add(lr->err.fd, POLLIN, local_ready, lr);
    return BM_OK;
err_exec:
    close(execp[0]);
    close(execp[1]);
err_err:
    close(errp[0]);
    close(errp[1]);
    lr->err.fd = -1;
err_out:
    close(outp[0]);
    close(outp[1]);
    lr->out.fd = -1;
err_in:
    if (inp[0] >= 0) {
        close(inp[0]);
        close(inp[1]);
    }
    return BM_ERR_SYSTEM;
}

/* ---- the stdin of the rank that reads bmrun's input ---- */

static void local_in_close(void)
{
    if (local_in.fd < 0)
        return;
    bm_run_loop_del(local_in.fd);
    close(local_in.fd);
    local_in.fd = -1;
}

/* Write what the pipe takes; true when the chunk is done (written or
 * dropped because the rank's input is gone). */
static bool local_in_write(void)
{
    while (local_in.len > 0) {
        ssize_t n = write(local_in.fd, local_in.data, local_in.len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return false;
        if (n <= 0) {
            local_in_close(); /* EPIPE: the rank closed its input or exited */
            return true;
        }
        local_in.data += n;
        local_in.len -= (size_t)n;
    }
    return true;
}

static void local_in_ready(int fd, short revents, void *arg)
{
    (void)fd;
    (void)revents;
    (void)arg;
    if (!local_in_write())
        return;
    if (local_in.fd >= 0)
        bm_run_loop_del(local_in.fd);
    void (*done)(void *) = local_in.done;
    local_in.done = NULL;
    if (done)
        done(local_in.arg);
}

bm_status_t bm_run_local_stdin(const void *data, size_t len, void (*done)(void *arg), void *arg)
{
    if (local_in.fd < 0)
        return BM_ERR_CONN_RESET;
    if (len == 0) {
        local_in_close();
        return BM_OK;
    }
    local_in.data = data;
    local_in.len = len;
    local_in.done = done;
    local_in.arg = arg;
    if (!local_in_write())
        return bm_run_loop_add(local_in.fd, POLLOUT, local_in_ready, NULL);
    local_in.done = NULL;
    if (local_in.fd < 0)
        return BM_ERR_CONN_RESET;
    done(arg);
    return BM_OK;
}

bm_status_t bm_run_local_start(const struct bm_run_local_spec *spec, const struct bm_run_sink *sink)
{
    local_sink = *sink;
    local_ranks = calloc((size_t)spec->nranks, sizeof(*local_ranks));
    if (!local_ranks)
        return BM_ERR_NO_MEMORY;
    for (int i = 0; i < spec->nranks; i++)
        local_ranks[i].exec_fd = local_ranks[i].out.fd = local_ranks[i].err.fd = -1;
    local_n = 0;
    for (int i = 0; i < spec->nranks; i++) {
        if (local_spawn(spec, i) != BM_OK) {
            bm_log_error("cannot start rank %d: %s; check the process and file limits "
                         "(ulimit -u, ulimit -n)",
                         spec->ranks[i], strerror(errno));
            return BM_ERR_SYSTEM;
        }
        local_n++;
    }
    return BM_OK;
}

void bm_run_local_kill(int sig)
{
    for (int i = 0; i < local_n; i++) {
        struct local_rank *lr = &local_ranks[i];
        if (lr->exited || lr->pid <= 0)
            continue;
        if (kill(-lr->pid, sig) != 0)
            kill(lr->pid, sig);
    }
}

void bm_run_local_pause_output(bool pause)
{
    for (int i = 0; i < local_n; i++) {
        struct local_rank *lr = &local_ranks[i];
        if (lr->out.fd >= 0)
            bm_run_loop_set_events(lr->out.fd, pause ? 0 : POLLIN);
        if (lr->err.fd >= 0)
            bm_run_loop_set_events(lr->err.fd, pause ? 0 : POLLIN);
    }
}

int bm_run_local_running(void)
{
    int n = 0;
    for (int i = 0; i < local_n; i++)
        n += !local_ranks[i].reported;
    return n;
}

bool bm_run_local_reaped(pid_t pid, int wstatus)
{
    for (int i = 0; i < local_n; i++) {
        struct local_rank *lr = &local_ranks[i];
        if (lr->pid != pid || lr->exited)
            continue;
        lr->exited = true;
        lr->wstatus = wstatus;
        /* Whatever the rank started may keep its pipes open; its group is
         * ended with it. */
        kill(-pid, SIGKILL);
        lr->drain_deadline = bm_run_now() + bm_run_cfg.drain_timeout;
        local_report_if_done(lr);
        return true;
    }
    return false;
}

double bm_run_local_next_deadline(void)
{
    double d = 0;
    for (int i = 0; i < local_n; i++) {
        struct local_rank *lr = &local_ranks[i];
        if (lr->exited && !lr->reported && (d == 0 || lr->drain_deadline < d))
            d = lr->drain_deadline;
    }
    return d;
}

void bm_run_local_tick(void)
{
    double now = bm_run_now();
    for (int i = 0; i < local_n; i++) {
        struct local_rank *lr = &local_ranks[i];
        if (!lr->exited || lr->reported || lr->drain_deadline > now)
            continue;
        if (lr->exec_fd >= 0)
            local_exec_read(lr); /* the child is gone: its end of the pipe is closed */
        if (lr->out.fd >= 0)
            local_stream_read(lr, &lr->out);
        if (lr->err.fd >= 0)
            local_stream_read(lr, &lr->err);
        local_stream_close(lr, &lr->out);
        local_stream_close(lr, &lr->err);
        local_report_if_done(lr);
    }
}
