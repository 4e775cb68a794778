/* The one poll loop of a bmrun process (controller or daemon). File
 * descriptors register a callback; signals arrive through a signalfd so that
 * SIGCHLD, SIGINT and SIGTERM are handled in the loop like any other event,
 * with no work in signal handlers. Children clear the signal mask before
 * exec, because a blocked mask is inherited across exec. */
#include "bmrun.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct loop_entry {
    int fd;
    short events;
    bm_run_fd_fn fn;
    void *arg;
};

static struct loop_entry *loop_entries;
static size_t loop_n, loop_cap;
static int loop_sigfd = -1;
static sigset_t loop_sigset;
static void (*loop_on_signal)(int sig);
static void (*loop_on_child)(pid_t pid, int wstatus);

double bm_run_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

bm_status_t bm_run_loop_add(int fd, short events, bm_run_fd_fn fn, void *arg)
{
    if (loop_n == loop_cap) {
        size_t cap = loop_cap ? 2 * loop_cap : 32;
        struct loop_entry *n = realloc(loop_entries, cap * sizeof(*n));
        if (!n)
            return BM_ERR_NO_MEMORY;
        loop_entries = n;
        loop_cap = cap;
    }
    loop_entries[loop_n++] = (struct loop_entry){.fd = fd, .events = events, .fn = fn, .arg = arg};
    return BM_OK;
}

void bm_run_loop_set_events(int fd, short events)
{
    for (size_t i = 0; i < loop_n; i++)
        if (loop_entries[i].fd == fd)
            loop_entries[i].events = events;
}

void bm_run_loop_del(int fd)
{
    for (size_t i = 0; i < loop_n; i++) {
        if (loop_entries[i].fd == fd) {
            /* Keep order: callbacks of this round index by position. */
            memmove(&loop_entries[i], &loop_entries[i + 1],
                    (loop_n - i - 1) * sizeof(*loop_entries));
            loop_n--;
            return;
        }
    }
}

static void loop_signal_ready(int fd, short revents, void *arg)
{
    (void)revents;
    (void)arg;
    struct signalfd_siginfo si;
    while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if ((int)si.ssi_signo == SIGCHLD) {
            int status;
            pid_t pid;
            while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
                loop_on_child(pid, status);
        } else if ((int)si.ssi_signo != SIGPIPE) {
            loop_on_signal((int)si.ssi_signo);
        }
    }
}

bm_status_t bm_run_loop_signals_init(void (*on_signal)(int sig),
                                     void (*on_child)(pid_t pid, int wstatus))
{
    loop_on_signal = on_signal;
    loop_on_child = on_child;
    sigemptyset(&loop_sigset);
    sigaddset(&loop_sigset, SIGCHLD);
    sigaddset(&loop_sigset, SIGTERM);
    sigaddset(&loop_sigset, SIGPIPE);
    /* SIGINT and SIGHUP ignored by whoever started us (nohup, a background
     * job of a script) stay ignored: a blocked signal would be queued. */
    int maybe[] = {SIGINT, SIGHUP};
    for (size_t i = 0; i < sizeof(maybe) / sizeof(maybe[0]); i++) {
        struct sigaction old;
        if (sigaction(maybe[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaddset(&loop_sigset, maybe[i]);
    }
    if (sigprocmask(SIG_BLOCK, &loop_sigset, NULL) != 0)
        return BM_ERR_SYSTEM;
    loop_sigfd = signalfd(-1, &loop_sigset, SFD_NONBLOCK | SFD_CLOEXEC);
    if (loop_sigfd < 0)
        return BM_ERR_SYSTEM;
    return bm_run_loop_add(loop_sigfd, POLLIN, loop_signal_ready, NULL);
}

void bm_run_loop_child_reset(void)
{
    /* bmrun only blocks signals (it installs no handlers), so clearing the
     * mask gives the child exactly the dispositions bmrun inherited. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

void bm_run_loop_once(int timeout_ms)
{
    size_t n = loop_n;
    struct pollfd *pfds = calloc(n ? n : 1, sizeof(*pfds));
    struct loop_entry *snap = calloc(n ? n : 1, sizeof(*snap));
    if (!pfds || !snap) {
        free(pfds);
        free(snap);
        poll(NULL, 0, 10);
        return;
    }
    memcpy(snap, loop_entries, n * sizeof(*snap));
    for (size_t i = 0; i < n; i++)
        pfds[i] = (struct pollfd){.fd = snap[i].fd, .events = snap[i].events};
    int rc = poll(pfds, (nfds_t)n, timeout_ms);
    if (rc > 0) {
        for (size_t i = 0; i < n; i++) {
            if (!pfds[i].revents)
                continue;
            /* A callback may have removed or replaced this fd; look it up again. */
            for (size_t j = 0; j < loop_n; j++) {
                if (loop_entries[j].fd == snap[i].fd && loop_entries[j].fn == snap[i].fn &&
                    loop_entries[j].arg == snap[i].arg) {
                    snap[i].fn(snap[i].fd, pfds[i].revents, snap[i].arg);
                    break;
                }
            }
        }
    }
    free(pfds);
    free(snap);
}
