/* process_vm_readv bandwidth: the ceiling for single-copy shared-memory
 * transports (Open MPI vader with CMA, bitmover sm's RGET), where the
 * receiver copies straight out of the sender's address space with one
 * system call. A forked child owns the source (it rewrites it after the fork
 * so that the pages are its own); the parent reads it repeatedly for a fixed
 * time. Two patterns, as in memcpy_bw:
 *   cma_<size>      one buffer of <size> read again and again (cache-hot up
 *                   to the cache size);
 *   cma_w64_<size>  64 distinct buffers of <size> on each side, read in
 *                   turn, as bm_bw moves a window of 64 messages.
 * Best of several trials, in MB/s (1e6 bytes per second).
 * Usage: cma_bw [SECONDS_PER_TRIAL]. */
#include "limits_util.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>

#define TRIALS 5
#define WINDOW 64

/* Best MB/s over TRIALS timed trials of reading n-byte slots in turn from
 * the child's src into dst; -1 when CMA is refused. */
static double trial_best(pid_t pid, unsigned char *src, unsigned char *dst, size_t n, int slots,
                         double seconds)
{
    double best = 0;
    for (int t = 0; t < TRIALS; t++) {
        long reps = 0;
        double t0 = bm_limits_now(), el;
        do {
            size_t off = (size_t)(reps % slots) * n;
            struct iovec local = {.iov_base = dst + off, .iov_len = n};
            struct iovec remote = {.iov_base = src + off, .iov_len = n};
            ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
            if (got != (ssize_t)n) {
                fprintf(stderr,
                        "cma_bw: process_vm_readv returned %zd (%s): CMA is not "
                        "usable here, so single-copy transports fall back to "
                        "copy-in/copy-out\n",
                        got, got < 0 ? strerror(errno) : "short read");
                return -1;
            }
            reps++;
        } while ((el = bm_limits_now() - t0) < seconds);
        double mbs = (double)n * (double)reps / el / 1e6;
        if (mbs > best)
            best = mbs;
    }
    return best;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? strtod(argv[1], NULL) : 0.1;
    static const size_t sizes[] = {64 << 10, 1 << 20, 4 << 20, 64 << 20};
    static const char *names[] = {"cma_64k", "cma_1m", "cma_4m", "cma_64m"};
    static const char *wnames[] = {"cma_w64_64k", "cma_w64_1m", "cma_w64_4m"};
    /* the largest of one buffer of 64 MiB and 64 buffers of 4 MiB */
    size_t max = (size_t)WINDOW * sizes[2];
    unsigned char *src = malloc(max);
    unsigned char *dst = malloc(max);
    if (!src || !dst) {
        fprintf(stderr, "cma_bw: cannot allocate 2 x %zu bytes\n", max);
        return 1;
    }
    pid_t pid = bm_limits_fork_owner("cma_bw", src, max, 0x5a);
    if (pid < 0)
        return 1;
    bm_limits_pin(0);
    memset(dst, 0, max);
    printf("# process_vm_readv from a child process, best of %d trials of %.2g s\n", TRIALS,
           seconds);
    int rc = 0;
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]) && rc == 0; k++) {
        double best = trial_best(pid, src, dst, sizes[k], 1, seconds);
        if (best < 0)
            rc = 1;
        else
            bm_limits_report(names[k], best, "MB/s");
    }
    for (size_t k = 0; k < sizeof(wnames) / sizeof(wnames[0]) && rc == 0; k++) {
        double best = trial_best(pid, src, dst, sizes[k], WINDOW, seconds);
        if (best < 0)
            rc = 1;
        else
            bm_limits_report(wnames[k], best, "MB/s");
    }
    /* Bytes every trial read at least once (a do-while per trial): the
     * whole single buffer of the largest size. The last of the 64 window
     * buffers is not: a trial cut short by time on a loaded machine never
     * reaches it, and checking it failed the probe there. */
    if (rc == 0 && (dst[0] != 0x5a || dst[sizes[3] - 1] != 0x5a)) {
        fprintf(stderr, "cma_bw: the data read with process_vm_readv is wrong\n");
        rc = 1;
    }
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    return rc;
}
