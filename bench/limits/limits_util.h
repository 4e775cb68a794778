/* Small helpers shared by the physical-limit probes in bench/limits: a
 * monotonic clock, CPU pinning, and the one output format the driver reads
 * ("limit <name> <value> <unit>"). Header-only so that each probe stays one
 * self-contained program that builds with a plain `cc`. */
#ifndef BM_BENCH_LIMITS_UTIL_H
#define BM_BENCH_LIMITS_UTIL_H

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static inline double bm_limits_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Pins the calling process to one CPU when the machine has more than `cpu`;
 * returns 0 when pinned. Pinning failures are not fatal: the numbers are then
 * only less stable. */
static inline int bm_limits_pin(int cpu)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpu >= n)
        return -1;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof(set), &set);
}

/* fork() for a probe's second process, which starts pinned to CPU 1; a
 * failed fork ends the probe with who's name. */
static inline pid_t bm_limits_fork_pinned(const char *who)
{
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "%s: fork: ", who);
        perror(NULL);
        exit(1);
    }
    if (pid == 0)
        bm_limits_pin(1);
    return pid;
}

/* For the cross-memory probes: forks a child pinned to CPU 1 that fills
 * the n bytes at buf with byte (so that those pages are its own, not shared
 * with this process after the fork) and then waits to be killed; returns
 * once it has, with its pid, or -1 (said on stderr with who's name). */
static inline pid_t bm_limits_fork_owner(const char *who, unsigned char *buf, size_t n, int byte)
{
    int ready[2];
    if (pipe(ready) != 0) {
        fprintf(stderr, "%s: pipe failed\n", who);
        return -1;
    }
    pid_t pid = bm_limits_fork_pinned(who);
    if (pid == 0) {
        memset(buf, byte, n);
        char c = 1;
        if (write(ready[1], &c, 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    char c;
    ssize_t got = read(ready[0], &c, 1);
    close(ready[0]);
    close(ready[1]);
    if (got != 1) {
        fprintf(stderr, "%s: child did not start\n", who);
        return -1;
    }
    return pid;
}

static inline void bm_limits_report(const char *name, double value, const char *unit)
{
    printf("limit %s %.6g %s\n", name, value, unit);
    fflush(stdout);
}

static inline int bm_limits_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static inline double bm_limits_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), bm_limits_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
