/* Internal interfaces of the bmrun launcher. bmrun runs as the controller
 * (the command the user types: parses the command line, places ranks on
 * hosts, serves the key-value service, prints output, decides the exit code)
 * or as a daemon (started on each remote host through the launch agent; it
 * connects back to the controller, starts that host's ranks and forwards
 * their output and exits). Both are single-threaded around one poll loop
 * (bmrun_loop.c); ranks are started by the same local-launch code
 * (bmrun_local.c) in both, with a different sink for their output and exits. */
#ifndef BM_TOOLS_BMRUN_H
#define BM_TOOLS_BMRUN_H

#include "bm_status.h"
#include "runtime/rte_launch.h"
#include "runtime/rte_proto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* bmrun's exit codes (documented in bmrun --help and docs). */
#define BM_RUN_EXIT_OK          0
#define BM_RUN_EXIT_FAILURE     1   /* launcher failure (daemon, network, resources) */
#define BM_RUN_EXIT_USAGE       2   /* bad command line */
#define BM_RUN_EXIT_TIMEOUT     124 /* --timeout expired, like timeout(1) */
#define BM_RUN_EXIT_NOT_FOUND   127 /* program not found or not executable */
#define BM_RUN_EXIT_SIGNAL_BASE 128 /* + signal: a rank died by a signal, or bmrun got one */

/* Tunables BM_RUN_* (src/runtime/rte_launch.c), loaded once in main. */
extern struct bm_rte_launch_config bm_run_cfg;

/* Monotonic time in seconds. */
double bm_run_now(void);

/* ---- poll loop (bmrun_loop.c) ---- */
typedef void (*bm_run_fd_fn)(int fd, short revents, void *arg);
/* Watch fd for events; one registration per fd. */
bm_status_t bm_run_loop_add(int fd, short events, bm_run_fd_fn fn, void *arg);
void bm_run_loop_set_events(int fd, short events);
void bm_run_loop_del(int fd);
/* Block SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGPIPE and take them through a
 * signalfd. Children must call bm_run_loop_child_reset() after fork. */
bm_status_t bm_run_loop_signals_init(void (*on_signal)(int sig),
                                     void (*on_child)(pid_t pid, int wstatus));
void bm_run_loop_child_reset(void);
/* Poll once with this timeout (ms, -1 = forever) and run the callbacks. */
void bm_run_loop_once(int timeout_ms);

/* ---- message connections (bmrun_conn.c) ---- */
struct bm_run_conn;
typedef void (*bm_run_msg_fn)(struct bm_run_conn *c, const struct bm_rte_msg_hdr *h,
                              const uint8_t *payload);
typedef void (*bm_run_close_fn)(struct bm_run_conn *c);
/* Take over a connected non-blocking socket; callbacks run from the loop. */
struct bm_run_conn *bm_run_conn_new(int fd, bm_run_msg_fn on_msg, bm_run_close_fn on_close,
                                    void *arg);
void *bm_run_conn_arg(const struct bm_run_conn *c);
void bm_run_conn_set_arg(struct bm_run_conn *c, void *arg);
void bm_run_conn_set_handlers(struct bm_run_conn *c, bm_run_msg_fn on_msg,
                              bm_run_close_fn on_close);
int bm_run_conn_fd(const struct bm_run_conn *c);
/* Largest payload accepted (unauthenticated peers get a tiny limit). */
void bm_run_conn_set_max(struct bm_run_conn *c, uint32_t max_msg);
/* Bytes queued for sending. */
size_t bm_run_conn_queued(const struct bm_run_conn *c);
/* True once the peer has sent at least one byte. */
bool bm_run_conn_got_data(const struct bm_run_conn *c);
/* Queue a message; never blocks. Returns BM_ERR_NO_MEMORY or BM_ERR_CONN_RESET. */
bm_status_t bm_run_conn_send(struct bm_run_conn *c, uint16_t type, uint32_t arg,
                             const void *payload, size_t len);
/* A payload shared by many connections without copies (fence replies). */
struct bm_run_shared;
struct bm_run_shared *bm_run_shared_new(const void *data, size_t len, uint16_t type, uint32_t arg);
void bm_run_shared_release(struct bm_run_shared *s);
bm_status_t bm_run_conn_send_shared(struct bm_run_conn *c, struct bm_run_shared *s);
/* Close now (drops unsent data); on_close is not called. */
void bm_run_conn_close(struct bm_run_conn *c);
/* Close once everything queued has been written. */
void bm_run_conn_close_after_flush(struct bm_run_conn *c);
/* Try to write queued data now, blocking up to timeout_ms (used at exit). */
void bm_run_conn_flush(struct bm_run_conn *c, int timeout_ms);

/* ---- local ranks (bmrun_local.c) ---- */
struct bm_run_sink {
    void (*spawned)(void *arg, int rank, pid_t pid);
    /* One complete line (ends with '\n') or a piece of an over-long line. */
    void (*output)(void *arg, int rank, int stream, const char *data, size_t len);
    /* After the rank's output is drained. exec_errno != 0: exec failed. */
    void (*exited)(void *arg, int rank, pid_t pid, int wstatus, int exec_errno);
    void *arg;
};
/* A program to start and what to add to its environment. */
struct bm_run_local_app {
    char *const *argv;    /* program and arguments */
    char *const *env_add; /* "NAME=value" set in each of its ranks, NULL-terminated */
};
struct bm_run_local_spec {
    const struct bm_run_local_app *apps;
    const int *ranks;  /* global ranks, in local-rank order */
    const int *app_of; /* program index of each local rank */
    int nranks;
    int stdin_rank; /* global rank whose stdin is a pipe fed by bm_run_local_stdin, or -1 */
};
bm_status_t bm_run_local_start(const struct bm_run_local_spec *spec,
                               const struct bm_run_sink *sink);
/* Feed the stdin of the rank named by stdin_rank: data is written as the
 * rank reads it, and done(arg) runs once all of it is written, or dropped
 * because the rank closed its input or exited. len 0 closes the rank's
 * stdin. Returns BM_ERR_NOT_FOUND when that rank is not on this host, or
 * BM_ERR_CONN_RESET once its input is gone (done is then not called). */
bm_status_t bm_run_local_stdin(const void *data, size_t len, void (*done)(void *arg), void *arg);
/* Signal every local rank that is still running (its whole process group). */
void bm_run_local_kill(int sig);
int bm_run_local_running(void);
/* Stop (true) or resume reading the ranks' output: backpressure when what
 * was read cannot be passed on fast enough. */
void bm_run_local_pause_output(bool pause);
/* Offer a reaped child; true when it was a local rank. */
bool bm_run_local_reaped(pid_t pid, int wstatus);
/* Earliest output-drain deadline (bm_run_now() units) or 0; call _tick then. */
double bm_run_local_next_deadline(void);
void bm_run_local_tick(void);

/* Remove /dev/shm/bm-<jobid>-* and /tmp/bm-<jobid>-*; returns how many. */
int bm_run_cleanup_job_files(const char *jobid);

/* Find an executable as execvp would; true and the path in buf when found. */
bool bm_run_find_program(const char *prog, char *buf, size_t len);
/* Print "bmrun: <message>" on stderr: bmrun's voice to the user. */
void bm_run_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Free a NULL-terminated vector of strings and the strings. */
void bm_run_strv_free(char **v);
/* A new vector holding a's then b's pointers (the strings are shared). */
char **bm_run_strv_join(char *const *a, char *const *b);
/* "SIGKILL" style name of a signal. */
const char *bm_run_signal_name(int sig);

/* ---- the controller's job (bmrun_ctl.c) ---- */
enum bm_run_rank_state {
    BM_RUN_RANK_PENDING, /* not started yet */
    BM_RUN_RANK_RUNNING,
    BM_RUN_RANK_EXITED,
};

struct bm_run_rank {
    int host;  /* index into job.hosts */
    int app;   /* index into opts.apps (MPMD) */
    int local; /* local rank on that host */
    pid_t pid; /* on its host; 0 until known */
    enum bm_run_rank_state state;
    int wstatus;
    /* key-value service */
    struct bm_run_conn *conn;
    bool bye;         /* finalized cleanly */
    uint32_t fenced;  /* last epoch this rank entered */
    uint8_t *entries; /* entries sent with the current fence */
    size_t entries_len;
};

struct bm_run_host {
    char name[256];
    int slots;
    bool local; /* started in-process, not through the agent */
    int node;   /* node index, -1 when it got no rank */
    int nranks;
    int *ranks; /* global ranks in local-rank order */
    pid_t agent_pid;
    bool agent_exited, hello;
    int agent_status;
    struct bm_run_conn *daemon;
    int out_fd, err_fd; /* the agent's own output (ssh errors and the like) */
};

/* One program of the job (MPMD: "bmrun -n 1 ./a : -n 3 ./b" has two). */
struct bm_run_app {
    int np;       /* its ranks (0: not given) */
    char **argv;  /* program and arguments, NULL-terminated */
    char **xvars; /* its -x arguments */
    int nx;
};

enum bm_run_map {
    BM_RUN_MAP_SLOT, /* --map-by slot|core: fill each host's slots in host order */
    BM_RUN_MAP_NODE, /* --map-by node: one rank per host, round robin */
};

struct bm_run_opts {
    struct bm_run_app *apps; /* napps programs; ranks numbered in this order */
    int napps;
    const char *hosts;    /* --host */
    const char *hostfile; /* --hostfile */
    const char *agent;    /* --launch-agent */
    bool tag_output;
    const char *bind_to; /* --bind-to object (hwthread, core, socket, ...); NULL: "cpu" */
    double timeout;      /* 0: none */
    enum bm_run_map map_by;
    int npernode;         /* -N / ppr:N:node; 0: no limit */
    bool oversubscribe;   /* more ranks than slots of the given hosts allowed */
    bool report_bindings; /* each rank says where it is bound */
    bool display_map;     /* print where each rank goes before starting */
    int stdin_rank;       /* rank that gets bmrun's stdin (0), or -1 */
};

/* Parse the command line into *opts. Returns 0 to run, -1 when --help or
 * --version was answered (exit 0), or an exit code after saying what is
 * wrong. May set BM_* variables (--mca) and edits argv (':' separators). */
int bm_run_opts_parse(int argc, char **argv, struct bm_run_opts *opts);
void bm_run_usage(FILE *f);
const char *bm_run_version(void);

struct bm_run_job {
    int size;
    struct bm_run_rank *ranks;
    struct bm_run_host *hosts;
    int nhosts;
    int num_nodes;
    char jobid[32];
    uint8_t secret[BM_RTE_SECRET_LEN];
    char secret_hex[2 * BM_RTE_SECRET_LEN + 1];
    char kvs_addrs[1024];
    uint32_t epoch; /* current fence epoch (1 based) */
    int nfenced;    /* ranks that entered the current epoch */
};
extern struct bm_run_job bm_run_job;

/* Called by the service (bmrun_kvs.c) into the controller. */
void bm_run_ctl_abort_request(int rank, int code, const char *msg, size_t len);
void bm_run_ctl_daemon_hello(struct bm_run_conn *c, int node);
/* A fence can never complete because this rank is gone; stops the job. */
void bm_run_ctl_fence_broken(int rank);

/* ---- bmrun's stdin to one rank (bmrun_stdin.c) ---- */
/* Forward bmrun's stdin to rank, on this host (conn NULL: through
 * bm_run_local_stdin) or through the daemon connection conn (STDIN
 * messages, one chunk in flight until STDIN_ACK). At EOF the rank's stdin
 * is closed; once the rank's input is gone, bmrun stops reading. */
void bm_run_stdin_start(int rank, struct bm_run_conn *conn);
/* The daemon wrote the last chunk (closed: the rank's input is gone). */
void bm_run_stdin_acked(bool closed);

/* ---- the key-value service (bmrun_kvs.c) ---- */
/* Listen on all IPv4 addresses (remote hosts) or loopback only, fill kvs_addrs. */
bm_status_t bm_run_kvs_start(bool remote_hosts);
/* Close connections that did not authenticate in time. */
void bm_run_kvs_tick(void);
/* True when a fence is in progress that this rank has not entered. */
bool bm_run_kvs_fence_waits_for(int rank);

/* ---- modes ---- */
int bm_run_daemon_main(int argc, char **argv);
int bm_run_ctl_run(const struct bm_run_opts *opts);

#endif
