/* How the PML waits: the wait mode (BM_PML_WAIT_MODE: spin, yield, or
 * block in the kernel until a transport has work), the rule that picks one
 * when the job does not say (more ranks on a host than it has CPUs), and
 * the optional progress thread (BM_PML_PROGRESS_THREAD) that drives
 * progress while the program computes and sleeps when there is nothing to
 * do. README.md "Waiting" has the design; btl.h "Sleeping" the transports'
 * side.
 *
 * Sleeping. One thread at a time is the sleeper: under the progress lock it
 * arms every transport (bm_btl_base_wait_arm: sm sets its doorbell flag,
 * tcp and dgram have nothing to arm but say when their nearest timer is
 * due), lets go of the progress lock (so that other threads keep draining)
 * and sleeps in epoll on the transports' wait descriptors plus an eventfd
 * of its own ("kick"), which other threads of the process write when they
 * leave work that only polling would find (a send queued for retry, a
 * message to itself, a new progress hook). Other threads that want to
 * sleep at the same time wait on a condition variable instead, which the
 * sleeper and the drainer signal when something happened (or 1 ms
 * passes): one sleeper keeps the arming simple (one owner of sm's doorbell
 * flag) and avoids a thundering herd on one epoll set. A sleep never lasts
 * longer than WAIT_CAP_NS, so that a process whose peers do not ring (a
 * job with mixed settings) still gets on.
 *
 * The progress thread and the program's threads share cores (2 ranks on 2
 * cores: a computing thread and a progress thread on each). A woken thread
 * preempts the running one, so the progress thread keeps out of the way of
 * a thread of the program that is in the library (it naps THREAD_DEFER_NS
 * when kicked by one or when it finds one holding the progress lock, and
 * THREAD_ASIDE_NS at a time, or until a kick, while one polls in a wait)
 * and takes the core while the program computes; while a progress hook (a nonblocking collective)
 * runs it polls BM_PML_PROGRESS_THREAD_SPIN_US before it sleeps, since each step of a collective
 * would otherwise cost a wake-up. */
#define BM_LOG_SUBSYS "pml"
#include "util/clock.h"
#include "util/log.h"

#include "pml/pml_internal.h"
#include "runtime/rte.h"
#include "util/params.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/epoll.h>
#include <linux/futex.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The longest sleep, whatever the transports say (a missed doorbell costs
 * at most this much). */
#define WAIT_CAP_NS 100000000LL
/* The longest sleep while progress hooks are registered: a hook may wait
 * for something no descriptor announces (a generalized request completed
 * by another thread, a one-sided lock released). */
#define WAIT_HOOK_NAP_NS 1000000LL
/* The longest sleep while a transport cannot wake a sleeper. */
#define WAIT_NAP_NS 1000000LL
/* Condition-variable waits of the threads that are not the sleeper. */
#define WAIT_SECONDARY_NS 1000000LL

struct wait_config {
    int mode;            /* enum bm_pml_wait_mode, or WAIT_AUTO */
    bool thread;         /* BM_PML_PROGRESS_THREAD */
    int thread_polls;    /* idle polls of the progress thread before it sleeps */
    int thread_spin_us;  /* ... and how long it polls on while a progress hook runs */
    int spin_us;         /* auto under MPI_THREAD_MULTIPLE, CPU per rank: poll this long first */
    int thread_nice;     /* the progress thread's nice value relative to the process's */
    int thread_slice_us; /* where ranks share cores: the program's scheduler slice */
    bool thread_handoff; /* where ranks share cores: starts of nonblocking work to the thread */
};

#define WAIT_AUTO 0

static const struct bm_param wait_params[] = {
    {"BM_PML_WAIT_MODE", BM_PARAM_ENUM, "auto", 0, 0, "auto|spin|yield|block",
     "How a process waits for communication: spin polls without a pause (lowest latency "
     "with a core per rank), yield gives the core away after BM_PML_IDLE_YIELD idle polls, "
     "block sleeps in the kernel until a transport has work (an oversubscribed job stops "
     "burning the CPU its peers need). auto: under MPI_THREAD_MULTIPLE block, after "
     "BM_PML_WAIT_SPIN_US of polling on a host with a CPU per rank; else yield (which "
     "BM_PML_IDLE_YIELD=auto turns into spin on a host with a CPU per rank).",
     offsetof(struct wait_config, mode), 0},
    {"BM_PML_WAIT_SPIN_US", BM_PARAM_INT, "50", 0, 1000000, NULL,
     "With BM_PML_WAIT_MODE=auto under MPI_THREAD_MULTIPLE on a host with a CPU per rank: "
     "how long (microseconds) a waiting thread polls, yielding every 64 idle polls, before "
     "it sleeps (spin-then-block; 0: sleep after the idle polls, as block does). An "
     "oversubscribed host and BM_PML_WAIT_MODE=block sleep after the idle polls.",
     offsetof(struct wait_config, spin_us), 0},
    {"BM_PML_PROGRESS_THREAD", BM_PARAM_BOOL, "0", 0, 0, NULL,
     "1 starts a thread per process that drives communication while the program computes "
     "(rendezvous transfers, nonblocking collectives, one-sided operations advance without "
     "MPI calls) and sleeps in the kernel when there is nothing to do. Turns on the locks of "
     "MPI_THREAD_MULTIPLE. Off by default: it costs every message locks and wake-ups; worth "
     "it for programs that compute long between MPI calls with rendezvous messages, "
     "passive-target epochs over a network or nonblocking collectives in flight "
     "(src/pml/README.md, 'Off by default').",
     offsetof(struct wait_config, thread), 0},
    {"BM_PML_PROGRESS_THREAD_POLLS", BM_PARAM_INT, "64", 1, 1 << 30, NULL,
     "Idle polls of the progress thread before it sleeps (more: faster reaction after a "
     "quiet spell, more CPU).",
     offsetof(struct wait_config, thread_polls), 0},
    {"BM_PML_PROGRESS_THREAD_SPIN_US", BM_PARAM_INT, "-1", -1, 1000000, NULL,
     "While a nonblocking collective (or another progress hook) is in flight, the progress "
     "thread polls on for this long (microseconds) after its last progress before it "
     "sleeps: every sleep costs a wake-up that must preempt the program's computation, and a "
     "collective is a chain of steps a few tens of microseconds apart (0: sleep after "
     "BM_PML_PROGRESS_THREAD_POLLS idle polls). -1 (auto): 50 where the job's ranks have a "
     "CPU each, 0 where they share cores (more ranks than CPUs, or BM_PML_IDLE_YIELD above "
     "0): there the next step mostly waits for a rank that needs the very core the polling "
     "thread holds.",
     offsetof(struct wait_config, thread_spin_us), 0},
    {"BM_PML_PROGRESS_THREAD_NICE", BM_PARAM_INT, "-20", -39, 39, NULL,
     "The progress thread's nice value relative to the thread that started MPI (-20, at "
     "least -20 in all: some 87 times its scheduling weight), so that its wake-ups take the "
     "core from the program's computation it shares a core with instead of waiting for the "
     "end of its time slice (with -5, 13-19% of 1 MiB MPI_Iallreduce overlap iterations made "
     "no progress during the computation; src/pml/README.md 'The progress thread'). A lower "
     "value than the process's needs CAP_SYS_NICE or a nice limit (ulimit -e); without "
     "either the thread takes the lowest value it may, down to the process's. 0: leave it "
     "alone.",
     offsetof(struct wait_config, thread_nice), 0},
    {"BM_PML_PROGRESS_THREAD_SLICE_US", BM_PARAM_INT, "100", 0, 100000, NULL,
     "With the progress thread, where the job's ranks share cores (more ranks than CPUs on "
     "the host, or BM_PML_IDLE_YIELD above 0): the scheduler time slice (microseconds, at "
     "least 100; Linux 6.12 and later) of the thread that started MPI and of the threads it "
     "starts after, so that ranks computing side by side take turns on a core within a "
     "computation: a rank's progress thread cannot start a collective another rank has not "
     "called yet, and with the kernel's slice (0.7-3 ms) the ranks that came second waited "
     "for the whole computation of the first (1 MiB MPI_Iallreduce, 4 ranks on 2 cores: 0% "
     "overlap; src/pml/README.md 'The progress thread'). Restored at MPI_Finalize. 0: leave "
     "it alone.",
     offsetof(struct wait_config, thread_slice_us), 0},
    {"BM_PML_PROGRESS_THREAD_HANDOFF", BM_PARAM_BOOL, "1", 0, 0, NULL,
     "With the progress thread, where the job's ranks share cores: a nonblocking collective "
     "call only queues its schedule and wakes the thread, which starts the first round (the "
     "receives that find a peer's data there copy it, then the reductions) while the program "
     "computes; done in the call, that work counted as communication and a rank preempted "
     "in it waited for its next turn on the core (1 MiB MPI_Iallreduce, 4 ranks on 2 cores: "
     "the call took 75-180 us, 15 with the handoff; src/pml/README.md 'The progress "
     "thread'). 0: the call starts the first round itself.",
     offsetof(struct wait_config, thread_handoff), 0},
};
static const struct bm_param_table wait_table = {"pml", wait_params, BM_PARAM_COUNT(wait_params)};
BM_PARAM_TABLE_REGISTER(wait_table);

static struct {
    struct wait_config cfg;
    int epfd;             /* transports' wait descriptors + kick; -1 when nobody sleeps */
    int kick;             /* eventfd */
    atomic_bool sleeping; /* a sleeper is in epoll: kick it for work only polling finds */
    bool sleeper_busy;    /* under the progress lock: the sleeper's slot is taken */
    pthread_mutex_t mu;   /* the other waiters' condition */
    pthread_cond_t cv;
    atomic_int nwaiting; /* threads in the condition wait */
    uint64_t gen;        /* under mu: bumped when something happened */
    pthread_t thread;    /* the progress thread */
    bool thread_running;
    atomic_bool stop;
    /* Spin-then-block (auto under MPI_THREAD_MULTIPLE on a host with a CPU
     * per rank): idle time a wait polls before it sleeps; 0 sleeps after
     * the idle polls. Set by bm_pml_wait_start. */
    uint64_t spin_ns;
    /* statistics (BM_PML_STATS): sleeps, and how they ended */
    atomic_ulong sleeps, woken, timed_out, secondary;
    atomic_ulong contended;   /* yields of spinning waits that lost their core (idle watch) */
    atomic_ulong timed;       /* yields of the yield mode's time limit (yield_when_due) */
    atomic_ulong test_yields; /* yields of tests (bm_pml_progress_test) */
    atomic_ulong deferred; /* the progress thread's naps that let a thread of the program leave */
    /* The clock when a thread of the program last polled in a wait (only
     * while the progress thread runs): a thread that waits drives
     * progress itself, and the progress thread keeps out of its way. */
    _Atomic uint64_t app_poll_ns;
    /* The progress thread's nap beside a waiting thread: the futex word
     * it naps on, and the kicks that end such a nap. */
    atomic_int aside;
    atomic_ulong kicks;
    int starter_nice; /* the nice value of the thread that started the progress thread */
    /* BM_PML_PROGRESS_THREAD_SLICE_US: the thread whose slice was set (0:
     * none) and its slice before. */
    pid_t slice_tid;
    uint64_t slice_old;
    atomic_ulong slice_ns; /* the slice set (BM_PML_STATS; kept after it is restored) */
} wait_g = {
    .epfd = -1, .kick = -1, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

bool bm_pml_oversubscribed(void)
{
    return bm_pml_g.oversubscribed;
}

bool bm_pml_idle_yields(void)
{
    return bm_pml_g.wait_mode != BM_PML_WAIT_SPIN && bm_pml_g.cfg.idle_yield > 0;
}

bool bm_pml_host_shares_cores(void)
{
    return bm_pml_g.host_shares;
}

bool bm_pml_host_handoff(void)
{
    return bm_pml_g.host_handoff;
}

bool bm_pml_wait_spins(void)
{
    return bm_pml_g.wait_mode == BM_PML_WAIT_SPIN;
}

bool bm_pml_wait_blocks(void)
{
    return bm_pml_g.wait_mode == BM_PML_WAIT_BLOCK && wait_g.spin_ns == 0;
}

/* Idle polls before a thread yields or sleeps when BM_PML_IDLE_YIELD says
 * never (auto on a host with a CPU per rank): waiting threads that share
 * the cores (MPI_THREAD_MULTIPLE), or a thread that chose to sleep, still
 * poll this long first. */
int bm_pml_idle_polls(void)
{
    return bm_pml_g.cfg.idle_yield > 0 ? bm_pml_g.cfg.idle_yield : 64;
}

/* ---- set-up -------------------------------------------------------------------- */

bm_status_t bm_pml_wait_init(int thread_level, struct bm_btl_init_args *args)
{
    memset(&wait_g.cfg, 0, sizeof(wait_g.cfg));
    bm_status_t rc = bm_util_params_load(&wait_table, &wait_g.cfg);
    if (rc != BM_OK)
        return rc;
    enum bm_pml_wait_mode mode = BM_PML_WAIT_SPIN;
    switch (wait_g.cfg.mode) {
    case 1:
        mode = BM_PML_WAIT_SPIN;
        break;
    case 2:
        mode = BM_PML_WAIT_YIELD;
        break;
    case 3:
        mode = BM_PML_WAIT_BLOCK;
        break;
    default:
        /* Threads of a MPI_THREAD_MULTIPLE program wait beside each other
         * and beside the program's own threads: a waiting thread that
         * spins holds a core another one needs (measured with bm_mt_mr,
         * 2 and 4 thread pairs on 2 cores: 0.06M and 0.07M messages/s
         * spinning, 0.7M and 2.4M sleeping, on a loaded machine). A
         * sleep comes only after BM_PML_IDLE_YIELD idle polls (64 when it
         * says never), so a quick answer never waits for one.
         * Otherwise BM_PML_IDLE_YIELD's auto setting makes this spin on a
         * host with a CPU per rank and yield after 64 idle polls on an
         * oversubscribed one (pml.c). */
        mode = thread_level >= BM_BTL_THREAD_MULTIPLE ? BM_PML_WAIT_BLOCK : BM_PML_WAIT_YIELD;
    }
    bm_pml_g.wait_mode = mode;
    /* The progress thread calls the PML beside the program: the locks of
     * MPI_THREAD_MULTIPLE, whatever the program asked for. */
    bm_pml_g.mt = thread_level >= BM_BTL_THREAD_MULTIPLE || wait_g.cfg.thread;
    args->thread_level = bm_pml_g.mt ? BM_BTL_THREAD_MULTIPLE : thread_level;
    args->sleepers = mode == BM_PML_WAIT_BLOCK || wait_g.cfg.thread;
    return BM_OK;
}

static void *progress_thread(void *arg);

/* ---- the program's time slice where ranks share cores ---------------------------- */

/* sched_setattr's argument (include/uapi/linux/sched/types.h; glibc has no
 * wrapper before 2.41). For SCHED_OTHER, sched_runtime is the thread's
 * EEVDF slice: Linux 6.12 and later take it and sched_getattr reports the
 * slice in force, earlier kernels report 0. */
struct wait_sched_attr {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
    uint32_t util_min, util_max;
};
_Static_assert(sizeof(struct wait_sched_attr) == 56,
               "the kernel's struct sched_attr, SCHED_ATTR_SIZE_VER1 (its size field)");

#define WAIT_SCHED_RESET_ON_FORK 0x01 /* SCHED_FLAG_RESET_ON_FORK */

static bool sched_attr_get(pid_t tid, struct wait_sched_attr *a)
{
    memset(a, 0, sizeof(*a));
    return syscall(SYS_sched_getattr, tid, a, sizeof(*a), 0) == 0;
}

/* Give thread tid (SCHED_OTHER, attributes cur) the slice ns. The kernel
 * skips an update that keeps the policy and the nice value (the slice is
 * not compared), so the thread goes through SCHED_BATCH first, which any
 * thread may enter and leave at its own nice value. */
static bool sched_slice_put(pid_t tid, const struct wait_sched_attr *cur, uint64_t ns)
{
    struct wait_sched_attr a = *cur;
    a.size = sizeof(a);
    a.flags = cur->flags & WAIT_SCHED_RESET_ON_FORK;
    a.policy = SCHED_BATCH;
    a.runtime = 0;
    if (syscall(SYS_sched_setattr, tid, &a, 0) != 0)
        return false;
    a.policy = SCHED_OTHER;
    a.runtime = ns;
    if (syscall(SYS_sched_setattr, tid, &a, 0) == 0)
        return true;
    int err = errno; /* the caller reports why the slice was refused */
    a.runtime = 0;
    (void)syscall(SYS_sched_setattr, tid, &a, 0); /* back to SCHED_OTHER at least */
    errno = err;
    return false;
}

/* Where the job's ranks share cores, with the progress thread: a rank's
 * progress thread drives its own part of a nonblocking collective, but
 * cannot start the parts of ranks that have not called it yet, and those
 * wait for a core. With the kernel's slice (here 1.4 ms: 0.7 ms x (1 +
 * log2 CPUs)) a rank that computes keeps its core for its whole
 * computation whenever that is shorter than the slice: the wake-ups of
 * the progress threads are points where the scheduler chooses again, but
 * it chose the computing rank again as long as its slice ran (perf sched,
 * bm_overlap 1 MiB MPI_Iallreduce, 4 ranks on 2 cores: the second rank of
 * each core started the collective only when the first had finished
 * computing, 0% overlap). With a slice of 100 us the computing rank gives
 * way at the next such point once it has run 100 us, and the others start
 * their part within ~100 us of the barrier (numbers: README.md "The
 * progress thread"). Set on the thread that starts MPI, before the
 * progress thread, which inherits it (as do threads the program starts
 * later). */
static void slice_start(void)
{
    if (!wait_g.cfg.thread || wait_g.cfg.thread_slice_us <= 0 || !bm_pml_idle_yields())
        return;
    pid_t tid = (pid_t)syscall(SYS_gettid);
    uint64_t want = (uint64_t)wait_g.cfg.thread_slice_us * 1000;
    struct wait_sched_attr cur;
    if (!sched_attr_get(tid, &cur) || cur.policy != SCHED_OTHER || cur.runtime == 0) {
        bm_log_debug("progress thread: the program's time slice is left alone (policy %u, "
                     "slice %llu ns: a kernel before 6.12 or a policy other than SCHED_OTHER)",
                     cur.policy, (unsigned long long)cur.runtime);
        return;
    }
    if (cur.runtime <= want)
        return;
    if (!sched_slice_put(tid, &cur, want)) {
        bm_log_debug("progress thread: cannot set the time slice to %llu ns: %s",
                     (unsigned long long)want, strerror(errno));
        return;
    }
    wait_g.slice_tid = tid;
    wait_g.slice_old = cur.runtime;
    atomic_store_explicit(&wait_g.slice_ns, want, memory_order_relaxed);
}

/* Back to the slice before, unless the program changed its scheduling
 * since. */
static void slice_stop(void)
{
    struct wait_sched_attr cur;
    pid_t tid = wait_g.slice_tid;
    if (tid == 0)
        return;
    wait_g.slice_tid = 0;
    if (sched_attr_get(tid, &cur) && cur.policy == SCHED_OTHER &&
        cur.runtime == atomic_load_explicit(&wait_g.slice_ns, memory_order_relaxed))
        (void)sched_slice_put(tid, &cur, wait_g.slice_old);
}

/* The epoll set a sleeper waits in: the transports' wait descriptors and
 * the kick. On failure nothing is left set up, *what says which step
 * failed and errno why. */
static bm_status_t wait_epoll_setup(const char **what)
{
    wait_g.epfd = epoll_create1(EPOLL_CLOEXEC);
    wait_g.kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    *what = "epoll/eventfd";
    if (wait_g.epfd >= 0 && wait_g.kick >= 0) {
        int fds[64];
        int n = bm_btl_base_wait_fds(fds, 63);
        fds[n++] = wait_g.kick;
        int i = 0;
        for (; i < n; i++) {
            struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[i]};
            if (epoll_ctl(wait_g.epfd, EPOLL_CTL_ADD, fds[i], &ev) != 0)
                break;
        }
        if (i == n)
            return BM_OK;
        *what = "waiting on a transport's descriptor";
    }
    int err = errno;
    if (wait_g.epfd >= 0)
        close(wait_g.epfd);
    if (wait_g.kick >= 0)
        close(wait_g.kick);
    wait_g.epfd = wait_g.kick = -1;
    errno = err;
    return BM_ERR_SYSTEM;
}

bm_status_t bm_pml_wait_start(void)
{
    atomic_store(&wait_g.stop, false);
    /* Spin-then-block when the job did not choose: a thread of a
     * MPI_THREAD_MULTIPLE program that slept at once after 64 idle polls
     * paid a doorbell and a wake-up for many answers that came a few
     * microseconds later (bm_mt_latency, 1 pair: 1.38 us against MPICH's
     * 0.30, which, like Open MPI, spins). Where the host has more of the
     * job's ranks than CPUs, they sleep after the idle polls as before. */
    wait_g.spin_ns = wait_g.cfg.mode == WAIT_AUTO && bm_pml_g.mt && !bm_pml_g.oversubscribed
                         ? (uint64_t)wait_g.cfg.spin_us * 1000
                         : 0;
    if (bm_pml_g.wait_mode != BM_PML_WAIT_BLOCK && !wait_g.cfg.thread)
        return BM_OK;
    const char *what;
    if (wait_epoll_setup(&what) != BM_OK) {
        bm_log_error("cannot set up sleeping (%s: %s); unset BM_PML_WAIT_MODE=block and "
                     "BM_PML_PROGRESS_THREAD",
                     what, strerror(errno));
        return BM_ERR_SYSTEM;
    }
    if (wait_g.cfg.thread) {
        errno = 0;
        wait_g.starter_nice = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
        if (wait_g.starter_nice == -1 && errno != 0)
            wait_g.starter_nice = 0;
        slice_start();
        if (pthread_create(&wait_g.thread, NULL, progress_thread, NULL) != 0) {
            bm_log_error("cannot start the progress thread (BM_PML_PROGRESS_THREAD=1): %s",
                         strerror(errno));
            return BM_ERR_SYSTEM;
        }
        wait_g.thread_running = true;
    }
    return BM_OK;
}

bool bm_pml_wait_sleep_setup(void)
{
    const char *what;
    if (wait_g.epfd >= 0)
        return true;
    if (wait_epoll_setup(&what) == BM_OK)
        return true;
    bm_log_debug("cannot set up sleeping for MPI_Finalize's fence (%s: %s): it yields instead",
                 what, strerror(errno));
    return false;
}

void bm_pml_wait_stop(void)
{
    if (wait_g.thread_running) {
        atomic_store(&wait_g.stop, true);
        bm_pml_wait_kick();
        pthread_mutex_lock(&wait_g.mu);
        pthread_cond_broadcast(&wait_g.cv);
        pthread_mutex_unlock(&wait_g.mu);
        pthread_join(wait_g.thread, NULL);
        wait_g.thread_running = false;
    }
    slice_stop();
}

void bm_pml_wait_fini(void)
{
    bm_pml_wait_stop();
    if (wait_g.epfd >= 0)
        close(wait_g.epfd);
    if (wait_g.kick >= 0)
        close(wait_g.kick);
    wait_g.epfd = wait_g.kick = -1;
}

/* ---- kicking and signalling ------------------------------------------------------ */

static void wait_kick_write(void)
{
    uint64_t one = 1;
    if (write(wait_g.kick, &one, sizeof(one)) < 0 && errno != EAGAIN)
        bm_log_ratelimited(BM_LOG_DEBUG, "kick: %s", strerror(errno));
}

/* Wake the threads in the condition wait (something happened). */
static void wait_signal(void)
{
    pthread_mutex_lock(&wait_g.mu);
    wait_g.gen++;
    pthread_cond_broadcast(&wait_g.cv);
    pthread_mutex_unlock(&wait_g.mu);
}

void bm_pml_wait_kick(void)
{
    if (wait_g.thread_running) {
        atomic_fetch_add_explicit(&wait_g.kicks, 1, memory_order_seq_cst);
        if (atomic_exchange_explicit(&wait_g.aside, 0, memory_order_seq_cst))
            syscall(SYS_futex, &wait_g.aside, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    }
    if (atomic_load_explicit(&wait_g.sleeping, memory_order_seq_cst))
        wait_kick_write();
    /* A thread in the condition wait must see such work too: the
     * progress thread that found the progress lock taken a moment before
     * a nonblocking collective started slept there until the program's
     * next progress, i.e. through the whole computation (bm_overlap). */
    if (atomic_load_explicit(&wait_g.nwaiting, memory_order_relaxed) > 0)
        wait_signal();
}

bool bm_pml_progress_handoff(void)
{
    return wait_g.thread_running && wait_g.cfg.thread_handoff && bm_pml_idle_yields();
}

bool bm_pml_wait_handoff_set(void)
{
    return wait_g.cfg.thread && wait_g.cfg.thread_handoff;
}

void bm_pml_progress_kick(void)
{
    bm_pml_wait_kick();
}

void bm_pml_wait_progressed(void)
{
    if (atomic_load_explicit(&wait_g.nwaiting, memory_order_relaxed) > 0)
        wait_signal();
}

/* A thread that is not the sleeper, or finds another thread draining:
 * until something happens, at most ns. */
void bm_pml_wait_others(long ns)
{
    /* The condition's clock is CLOCK_REALTIME (the default). */
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    rt.tv_nsec += ns;
    if (rt.tv_nsec >= 1000000000L) {
        rt.tv_sec++;
        rt.tv_nsec -= 1000000000L;
    }
    atomic_fetch_add_explicit(&wait_g.secondary, 1, memory_order_relaxed);
    pthread_mutex_lock(&wait_g.mu);
    atomic_fetch_add(&wait_g.nwaiting, 1);
    uint64_t gen = wait_g.gen;
    while (gen == wait_g.gen && !atomic_load(&wait_g.stop))
        if (pthread_cond_timedwait(&wait_g.cv, &wait_g.mu, &rt) == ETIMEDOUT)
            break;
    atomic_fetch_sub(&wait_g.nwaiting, 1);
    pthread_mutex_unlock(&wait_g.mu);
}

/* ---- sleeping ------------------------------------------------------------------------ */

/* Returns whether the kick was among the events; *woken: whether any
 * event ended the sleep (else it timed out). */
static bool epoll_sleep(int64_t timeout_ns, bool *woken)
{
    struct epoll_event ev[8];
    struct timespec ts = {.tv_sec = timeout_ns / 1000000000LL,
                          .tv_nsec = timeout_ns % 1000000000LL};
    int n = epoll_pwait2(wait_g.epfd, ev, 8, &ts, NULL);
    if (n < 0 && errno == ENOSYS) /* kernels before 5.11: millisecond resolution */
        n = epoll_wait(wait_g.epfd, ev, 8, (int)((timeout_ns + 999999) / 1000000));
    atomic_fetch_add_explicit(&wait_g.sleeps, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(n > 0 ? &wait_g.woken : &wait_g.timed_out, 1, memory_order_relaxed);
    *woken = n > 0;
    for (int i = 0; i < n; i++)
        if (ev[i].data.fd == wait_g.kick)
            return true;
    return false;
}

size_t bm_pml_wait_report(char *buf, size_t len)
{
    int n = snprintf(buf, len,
                     "sleeps %lu (woken %lu, timed out %lu), condition waits %lu, "
                     "yields of a contended core %lu, of tests %lu, progress thread naps for "
                     "the program %lu, the program's time slice %lu us (0: the kernel's)",
                     atomic_load(&wait_g.sleeps), atomic_load(&wait_g.woken),
                     atomic_load(&wait_g.timed_out), atomic_load(&wait_g.secondary),
                     atomic_load(&wait_g.contended), atomic_load(&wait_g.test_yields),
                     atomic_load(&wait_g.deferred), atomic_load(&wait_g.slice_ns) / 1000);
    return n < 0 ? 0 : (size_t)n;
}

/* The progress thread was kicked by a thread of the program, or found
 * one holding the progress lock: that thread is in the library (starting
 * a nonblocking collective, say) and about to return to its computation.
 * Working at once would keep it off its core until the work is done (the
 * woken thread preempts it, and so does one woken by the lock's release;
 * bm_overlap then counted the whole collective as time spent in
 * MPI_Iallreduce: no overlap at 2 ranks on 2 cores), and the condition
 * wait used before slept until its next MPI call. A short nap lets it
 * leave first; the timer's wake-up then preempts its computation. */
#define THREAD_DEFER_NS 20000L

static BM_PML_TLS bool thread_self; /* this thread is the progress thread */
/* A thread of the program that polled in a wait since this thread last
 * napped (and within this long) is in a wait: nap again. */
#define APP_POLL_NS 1000000ULL

static BM_PML_TLS uint64_t thread_seen; /* app_poll_ns when this thread last napped */

static void thread_defer(void)
{
    struct timespec ts = {0, THREAD_DEFER_NS};
    thread_seen = atomic_load_explicit(&wait_g.app_poll_ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&wait_g.deferred, 1, memory_order_relaxed);
    nanosleep(&ts, NULL);
}

/* While a thread of the program waits (and drives progress itself): nap
 * THREAD_ASIDE_NS at a time, or until a kick (a nonblocking collective
 * started). Each wake-up preempts the waiting thread: with 20 us naps the
 * pure time of a 1 MiB Iallreduce grew from 120 to 190 us, and the 8 B
 * sm latency with the thread was 6.5-12 us (0.25 us now, 0.19 without
 * the thread). A timer (timerfd) instead of the futex kick, to spare the
 * kicking thread the preemption, was tried (README.md "The progress
 * thread"): it preempts the computation, but gave residuals of 50-93 us
 * against 24-30 with the kick, and the initiating call was no shorter. */
#define THREAD_ASIDE_NS 200000L

static bool thread_aside(void)
{
    thread_seen = atomic_load_explicit(&wait_g.app_poll_ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&wait_g.deferred, 1, memory_order_relaxed);
    unsigned long k = atomic_load_explicit(&wait_g.kicks, memory_order_seq_cst);
    atomic_store_explicit(&wait_g.aside, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&wait_g.kicks, memory_order_seq_cst) == k &&
        !atomic_load_explicit(&wait_g.stop, memory_order_relaxed)) {
        struct timespec ts = {0, THREAD_ASIDE_NS};
        syscall(SYS_futex, &wait_g.aside, FUTEX_WAIT_PRIVATE, 1, &ts, NULL, 0);
    }
    /* 0 already: a kick ended the nap (or came before it) */
    return atomic_exchange_explicit(&wait_g.aside, 0, memory_order_relaxed) == 0;
}

static bool wait_block(int64_t cap_ns);

void bm_pml_wait_block(void)
{
    (void)wait_block(WAIT_CAP_NS);
}

bool bm_pml_sleep(int64_t max_ns)
{
    return wait_block(max_ns < WAIT_CAP_NS ? max_ns : WAIT_CAP_NS);
}

/* Returns false when the sleep lasted its whole timeout, true when it
 * ended sooner (or did not begin: work found, or another thread sleeping). */
static bool wait_block(int64_t cap_ns)
{
    if (wait_g.epfd < 0) {
        sched_yield();
        return true;
    }
    int t = bm_pml_try_enter();
    if (t < 0) {
        if (thread_self)
            thread_defer();
        else
            bm_pml_wait_others(WAIT_SECONDARY_NS);
        return true;
    }
    /* Work only polling finds, or the slot taken: do not sleep here. */
    if (bm_pml_g.ctl_head || bm_pml_g.pend_head || wait_g.sleeper_busy) {
        bool busy = wait_g.sleeper_busy;
        bm_pml_leave(t > 0);
        if (busy)
            bm_pml_wait_others(WAIT_SECONDARY_NS);
        return true;
    }
    int64_t timeout = cap_ns, tt;
    if (bm_pml_hooks_active() && timeout > WAIT_HOOK_NAP_NS)
        timeout = WAIT_HOOK_NAP_NS;
    /* The progress thread, where the program's slice was shortened (ranks
     * share cores): while a collective is in flight, each wake-up is a
     * point where the scheduler may give the core to another rank whose
     * slice has not run out, which may be one that has yet to start its
     * part; without one the computing rank kept the core up to the next
     * tick (4 ms). */
    uint64_t slice = atomic_load_explicit(&wait_g.slice_ns, memory_order_relaxed);
    if (thread_self && slice && wait_g.slice_tid && bm_pml_hooks_active() &&
        (int64_t)slice < timeout)
        timeout = (int64_t)slice;
    if (bm_btl_base_wait_arm(&tt, WAIT_NAP_NS) > 0) {
        bm_pml_leave(t > 0);
        return true;
    }
    if (tt >= 0 && tt < timeout)
        timeout = tt;
    wait_g.sleeper_busy = true;
    atomic_store_explicit(&wait_g.sleeping, true, memory_order_seq_cst);
    /* Sleep without the progress lock, unless an outer frame of this
     * thread holds it (a hook waiting): the others keep draining. */
    bm_pml_leave(t > 0);
    bool woken;
    bool kicked = epoll_sleep(timeout, &woken);
    /* The progress thread kicked by a thread of the program (a
     * nonblocking collective starting, which kicks with the progress lock
     * held): nap before taking the lock back. Taking it first blocked the
     * thread on the lock and woke it again at the collective's unlock, two
     * more round trips through the scheduler inside MPI_Iallreduce (the
     * call took 20-25 us against 0.7 without the thread; it counts as
     * communication in bm_overlap). Until the thread is back the slot
     * stays taken, the kick may be written again and sm's doorbell may be
     * rung again: all drained below. */
    bool deferred = kicked && thread_self && t > 0;
    if (deferred)
        thread_defer();
    if (t > 0)
        bm_pml_enter();
    atomic_store_explicit(&wait_g.sleeping, false, memory_order_relaxed);
    bm_btl_base_wait_disarm();
    /* Drained only when the sleep reported it: a kick written after
     * epoll_pwait2 returned stays readable (level-triggered) and ends the
     * next sleep at once, which drains it. A read after every sleep
     * failed (EAGAIN) on almost every wake-up: one system call of the
     * ~5 a blocking receiver's 8 B message cost (strace -c). */
    uint64_t v;
    while (kicked && read(wait_g.kick, &v, sizeof(v)) > 0)
        ;
    wait_g.sleeper_busy = false;
    bm_pml_leave(t > 0);
    bm_pml_wait_progressed();
    if (kicked && thread_self && !deferred)
        thread_defer();
    return woken;
}

/* Spinning with BM_PML_IDLE_YIELD's auto setting on a host with a CPU per
 * rank: the job's ranks have a core each, but other programs may compete
 * for them (a shared machine). A rank that spins there while its peer is
 * descheduled burns the time slice the peer needs (measured: README.md
 * "Waiting", auto). So every 64 consecutive idle polls of a wait the thread reads the
 * cheap clock: 64 idle polls take microseconds, a gap of more than
 * WATCH_PREEMPT_NS between two such marks means it lost its core, and
 * waits then yield after every 64 idle polls for WATCH_YIELD_NS (renewed
 * while it keeps happening; a yield that takes long is such a gap too).
 * Nothing of this runs in a wait shorter than 64 idle polls, and on a
 * quiet host a yield is a system call that returns at once. The count is
 * restarted (the caller zeroes its idle count and clears marked) whenever
 * a poll does something, so time the program spends outside MPI is never
 * taken for a lost core. */
#define WATCH_PREEMPT_NS 200000    /* 200 us */
#define WATCH_YIELD_NS   100000000 /* 100 ms */

/* Every 64th idle poll of a spinning wait when BM_PML_IDLE_YIELD's auto
 * setting said never (bm_pml_g.idle_watch): a mark read from the cheap
 * clock; a gap of more than WATCH_PREEMPT_NS since the previous mark of
 * the same idle run means the thread lost its core. */
static void wait_idle_watch(bool *marked)
{
    static BM_PML_TLS uint64_t mark;
    uint64_t now = bm_util_clock_now_ns();
    int64_t until = __atomic_load_n(&bm_pml_g.contended_until, __ATOMIC_RELAXED);
    if (*marked && now - mark > WATCH_PREEMPT_NS) {
        until = (int64_t)(now + WATCH_YIELD_NS);
        __atomic_store_n(&bm_pml_g.contended_until, until, __ATOMIC_RELAXED);
    }
    *marked = true;
    mark = now;
    if ((int64_t)now < until) {
        atomic_fetch_add_explicit(&wait_g.contended, 1, memory_order_relaxed);
        sched_yield();
    }
}

unsigned long bm_pml_wait_sleeps(void)
{
    return atomic_load_explicit(&wait_g.sleeps, memory_order_relaxed);
}

uint64_t bm_pml_wait_spin_ns(void)
{
    return wait_g.spin_ns;
}

unsigned long bm_pml_wait_contended_yields(void)
{
    return atomic_load_explicit(&wait_g.contended, memory_order_relaxed);
}

/* The yield mode with BM_PML_IDLE_YIELD above 0 gives the core away after
 * that many idle polls in a row, and in a job over several hosts also
 * after YIELD_IDLE_NS of idle polling, whichever comes first (the clock is
 * read at every idle poll: a process in this mode shares its core, and
 * 25-37 ns are nothing beside a yield). Where a network transport is open
 * each poll is a system call (tcp: a recv or an epoll_wait, 0.3-1 us), so
 * 64 of them kept the core for 20-60 us from a peer that shares it (Open
 * MPI's yield_when_idle yields at every idle poll). Measured with 2
 * network-namespace hosts x 2 ranks on the 2-core machine (4 ranks on 2
 * cores; sm inside a "host", tcp between them), 8 B bcast, p25 of batch
 * means, 3 interleaved runs at load 7-9: 19.5 us yielding after 64 polls,
 * 6.5 after every poll, 7.0 after 4, 15.1 after 16 (Open MPI: 7.3). On one
 * host (sm polls, tens of nanoseconds) the time limit made 4 oversubscribed
 * ranks yield too often: 64 KiB allreduce 94-148 -> 200-342 us. */
#define YIELD_IDLE_NS 1000

/* Every idle poll of a wait in the yield mode (BM_PML_IDLE_YIELD above 0)
 * of a job over several hosts: yield when the idle run has lasted
 * BM_PML_IDLE_YIELD polls or YIELD_IDLE_NS. marked: the run has begun
 * (the caller clears it when a poll does something); a yield begins a new
 * run. */
static void yield_when_due(bool *marked)
{
    static BM_PML_TLS uint64_t from;
    static BM_PML_TLS int polls;
    uint64_t now = bm_util_clock_now_ns();
    if (!*marked) {
        *marked = true;
        from = now;
        polls = 0;
    }
    bool timed = now - from >= YIELD_IDLE_NS;
    if (++polls >= bm_pml_g.cfg.idle_yield || timed) {
        *marked = false;
        if (timed)
            atomic_fetch_add_explicit(&wait_g.timed, 1, memory_order_relaxed);
        sched_yield();
    }
}

unsigned long bm_pml_wait_timed_yields(void)
{
    return atomic_load_explicit(&wait_g.timed, memory_order_relaxed);
}

/* Liveness. A wait on a peer that has nothing outstanding to it (a
 * receive, a probe, a synchronous send whose message was delivered) is
 * watched by no transport: a peer on this host that ended without a word
 * (_exit, a crash or a kill under a launcher that does not end the job)
 * left it waiting for ever. So the waits' idle step (after LIVE_POLLS idle
 * polls, or the wait mode's fewer before a yield or sleep) asks the
 * transports, at most every LIVE_NS, whether the peers they can look at
 * are still there (bm_pml_peers_check: sm looks whether each local peer's
 * process exists, a few system calls each). All of them, not only the
 * peers of the request waited for: a wait here does not know which
 * requests its caller waits for (MPI_Waitall, a probe, a one-sided or
 * nonblocking collective's wait all come through this step), a wildcard
 * receive depends on every peer of its communicator anyway, and no rank
 * can have ended cleanly while this one waits outside MPI_Finalize (its
 * barrier and fence hold every rank until all have entered it; the fence
 * and what follows do not come here). A gone peer was the last path to
 * it (sm has no standby), so the PML ends the job naming both ranks and
 * hosts (failover.c), as Open MPI and MPICH end a job for a dead rank
 * without ULFM. A wait with work to do, or shorter than the idle step,
 * pays nothing. */
#define LIVE_POLLS 4096
#define LIVE_NS    100000000ull

static _Atomic uint64_t live_next;

static __attribute__((noinline, cold)) void wait_live(void)
{
    uint64_t now = bm_util_clock_now_ns();
    uint64_t next = atomic_load_explicit(&live_next, memory_order_relaxed);
    /* one thread per period looks (MPI_THREAD_MULTIPLE: several may wait) */
    if (now < next ||
        !atomic_compare_exchange_strong_explicit(&live_next, &next, now + LIVE_NS,
                                                 memory_order_relaxed, memory_order_relaxed))
        return;
    bm_pml_peers_check();
}

int bm_pml_wait_idle_st_limit(void)
{
    switch (bm_pml_g.wait_mode) {
    case BM_PML_WAIT_YIELD:
        if (bm_pml_g.cfg.idle_yield > 0)
            return bm_pml_g.spans_hosts ? 1 : bm_pml_g.cfg.idle_yield;
        return bm_pml_g.idle_watch ? 64 : LIVE_POLLS; /* LIVE_POLLS: only the look */
    case BM_PML_WAIT_BLOCK:
        return bm_pml_idle_polls();
    default:
        return LIVE_POLLS; /* the idle step only looks at the peers */
    }
}

void bm_pml_wait_idle_st(bool *marked)
{
    /* Idle polls since the last liveness step: it comes every LIVE_POLLS
     * (or every step, when the mode's steps are further apart), and before
     * every sleep (a sleep may last WAIT_CAP_NS). */
    static int live_polls;
    live_polls += bm_pml_g.st_wait_limit;
    if (live_polls >= LIVE_POLLS || bm_pml_g.wait_mode == BM_PML_WAIT_BLOCK) {
        live_polls = 0;
        wait_live();
    }
    switch (bm_pml_g.wait_mode) {
    case BM_PML_WAIT_YIELD:
        if (bm_pml_g.cfg.idle_yield > 0 && bm_pml_g.spans_hosts)
            yield_when_due(marked);
        else if (bm_pml_g.cfg.idle_yield > 0)
            sched_yield();
        else if (bm_pml_g.idle_watch)
            wait_idle_watch(marked);
        break;
    case BM_PML_WAIT_BLOCK:
        bm_pml_wait_block();
        break;
    default:
        break;
    }
}

/* A test of the program (MPI_Test, MPI_Iprobe...) where the job's ranks
 * share cores: it yields at once after its pass, not after
 * BM_PML_IDLE_YIELD idle calls as a wait does. A wait's idle polls come
 * back to back, microseconds apart, and the count keeps a quick answer
 * from costing a yield; a program calls a test between pieces of its own
 * work, so the count of 64 was reached once in 64 pieces, while the rank
 * kept the core the peers it waits for needed. Also when the pass did
 * something (Open MPI yields only after idle ones): what it did (a rendezvous
 * request sent, a collective's next round posted, a FIN) mostly hands
 * work to a peer that needs the core to answer, and the program goes back
 * to its own work anyway. Measured with bm_overlap (MPI_Iallreduce of 1
 * MiB, 16 MPI_Test calls during a computation as long as the collective,
 * OSU's method), 4 ranks on 2 cores: 0% overlap (the residual after the
 * computation 1.3-2.2 ms against 0.6-0.8 ms for the collective alone: a
 * per-rank timeline showed the ranks computing one after another, each
 * starting the collective only when the one before it had finished
 * computing). Own runs in an autogroup at nice -20, load 24-26, medians of
 * interleaved rounds of OSU's figure: yielding at every idle test, 9
 * rounds: 4 ranks 0% -> 91% (Open MPI 74%), 8 ranks 0% -> 71% (Open MPI
 * 53%); at every test, 11 rounds: 8 ranks 71% -> 86% (better in 10 of 11
 * rounds; per-iteration medians 62% -> 85%), 4 ranks 85% -> 91% (9
 * rounds). */
int bm_pml_progress_test(void)
{
    if (bm_pml_g.wait_mode == BM_PML_WAIT_SPIN || bm_pml_g.cfg.idle_yield <= 0)
        return bm_pml_progress();
    int n = bm_pml_progress_nowait();
    if (n == 0 && bm_pml_g.mt && bm_pml_progress_missed())
        return 0;
    atomic_fetch_add_explicit(&wait_g.test_yields, 1, memory_order_relaxed);
    sched_yield();
    return n;
}

unsigned long bm_pml_wait_test_yields(void)
{
    return atomic_load_explicit(&wait_g.test_yields, memory_order_relaxed);
}

/* Has this idle run polled for wait_g.spin_ns? from: the clock at the
 * run's first check (0: not yet read; the caller zeroes it when a poll
 * does something). After a sleep the run goes on, so a long wait sleeps
 * again at its next check instead of spinning once more. */
static bool wait_spun(uint64_t *from)
{
    if (wait_g.spin_ns == 0)
        return true;
    uint64_t now = bm_util_clock_now_ns();
    if (*from == 0) {
        *from = now;
        return false;
    }
    return now - *from >= wait_g.spin_ns;
}

int bm_pml_wait_poll(void)
{
    static BM_PML_TLS int idle, live_idle;
    static BM_PML_TLS bool marked;
    static BM_PML_TLS uint64_t spin_from;
    if (wait_g.thread_running)
        atomic_store_explicit(&wait_g.app_poll_ns, bm_util_clock_now_ns(), memory_order_relaxed);
    int n = bm_pml_progress_nowait();
    if (n > 0) {
        idle = 0;
        marked = false;
        spin_from = 0;
        return n;
    }
    if (bm_pml_g.mt && bm_pml_progress_missed())
        return 0;
    if (++live_idle >= LIVE_POLLS) {
        live_idle = 0;
        wait_live();
    }
    switch (bm_pml_g.wait_mode) {
    case BM_PML_WAIT_SPIN:
        bm_pml_progress_idle_mt();
        break;
    case BM_PML_WAIT_YIELD:
        if (bm_pml_g.cfg.idle_yield > 0 && bm_pml_g.spans_hosts) {
            yield_when_due(&marked);
        } else if (bm_pml_g.cfg.idle_yield > 0) {
            if (++idle >= bm_pml_g.cfg.idle_yield) {
                idle = 0;
                sched_yield();
            }
        } else if (bm_pml_g.mt) {
            bm_pml_progress_idle_mt();
        } else if (bm_pml_g.idle_watch && ++idle >= 64) {
            idle = 0;
            wait_idle_watch(&marked);
        }
        break;
    case BM_PML_WAIT_BLOCK:
        if (++idle >= bm_pml_idle_polls()) {
            idle = 0;
            if (wait_spun(&spin_from)) {
                wait_live(); /* a sleep may last WAIT_CAP_NS */
                bm_pml_wait_block();
            } else
                sched_yield(); /* threads of the program may want the core */
        }
        break;
    }
    return 0;
}

/* ---- the progress thread ---------------------------------------------------------------- */

/* BM_PML_PROGRESS_THREAD_NICE: on a core it shares with the program's
 * computation, a wake-up of the progress thread (the end of a nap, a
 * doorbell) preempts the computation only when the scheduler (EEVDF) finds
 * the thread eligible with the earlier deadline; otherwise the thread waits
 * for the end of the computation's slice (milliseconds). A thread that
 * drove a whole collective beside the computation has used more than its
 * share (negative lag), and woken again soon after it is not eligible yet:
 * at 5 below the program 13-19% of bm_overlap's iterations (1 MiB
 * MPI_Iallreduce, 2 ranks on 2 cores) made no progress during the
 * computation (a timeline showed the kick's wake-up not run for the whole
 * computation), at 20 below 0-3% (README.md "The progress thread"). Where
 * the full step is not permitted, the lowest value that is. */
static void thread_set_nice(void)
{
    int want = wait_g.starter_nice + wait_g.cfg.thread_nice;
    want = want < -20 ? -20 : want > 19 ? 19 : want;
    int step = want < wait_g.starter_nice ? 1 : 0, got = want;
    while (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), got) != 0) {
        if (step == 0 || got + step >= wait_g.starter_nice) {
            bm_log_debug("progress thread: nice %d not permitted (%s; needs CAP_SYS_NICE or "
                         "ulimit -e): it keeps the process's",
                         want, strerror(errno));
            return;
        }
        got += step;
    }
    if (got != want)
        bm_log_debug("progress thread: nice %d not permitted (needs CAP_SYS_NICE or ulimit -e), "
                     "runs at %d",
                     want, got);
}

static void *progress_thread(void *arg)
{
    (void)arg;
    if (wait_g.cfg.thread_nice != 0)
        thread_set_nice();
    int idle = 0;
    /* Where ranks share cores, polling for the next step of a collective
     * holds the core the rank that must take that step needs: 4 ranks on
     * 2 cores, bm_overlap 1 MiB MPI_Iallreduce, two progress threads (nice
     * -20) took turns polling on one core for 750 us while both computing
     * ranks, one of them inside MPI_Iallreduce, waited (perf sched); residual
     * per iteration 250 -> 190 us without the polling (README.md "The
     * progress thread"). */
    int spin_us = wait_g.cfg.thread_spin_us >= 0 ? wait_g.cfg.thread_spin_us
                  : bm_pml_idle_yields()         ? 0
                                                 : 50;
    uint64_t busy_at = 0, spin_ns = (uint64_t)spin_us * 1000;
    thread_self = true;
    while (!atomic_load_explicit(&wait_g.stop, memory_order_relaxed)) {
        /* A thread of the program polled in a wait since this thread's
         * last nap: it drives progress itself, and draining beside it on
         * its core only adds context switches and lock hand-offs. Judged
         * by whether it polled while this thread napped (not by the age
         * of its last poll: while this thread runs on its core it cannot
         * poll, and a 10 us age let the thread spin beside a waiting
         * program: pure time of a 1 MiB Iallreduce 200 us against 108). */
        uint64_t now = bm_util_clock_now_ns();
        uint64_t polled = atomic_load_explicit(&wait_g.app_poll_ns, memory_order_relaxed);
        if (polled != thread_seen && now - polled < APP_POLL_NS) {
            if (thread_aside())
                thread_defer(); /* kicked: as after the kick of a sleep */
            idle = 0;
            busy_at = 0;
            continue;
        }
        if (bm_pml_progress_nowait() > 0) {
            idle = 0;
            busy_at = bm_util_clock_now_ns();
            continue;
        }
        /* Another thread holds the progress lock: on a shared core it is
         * the program's thread, preempted by this one in the middle of a
         * pass; polling on (or spinning below) only keeps it from
         * finishing (the progress lock was found taken ~2000 times per
         * 1 MiB MPI_Iallreduce + MPI_Wait). */
        if (bm_pml_progress_missed()) {
            thread_defer();
            idle = 0;
            continue;
        }
        if (++idle < wait_g.cfg.thread_polls)
            continue;
        idle = 0;
        if (spin_ns && bm_pml_hooks_active() && bm_util_clock_now_ns() - busy_at < spin_ns)
            continue;
        bm_pml_wait_block();
        busy_at = bm_util_clock_now_ns();
    }
    return NULL;
}
