/* Small helpers of bmrun: removing a job's files (the "bm-<jobid>-" naming
 * convention of rte.h), finding the program the way execvp will, signal
 * names for messages, and NULL-terminated string vectors. */
#include "bmrun.h"

#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int cleanup_dir(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int removed = 0;
    size_t plen = strlen(prefix);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, prefix, plen) != 0)
            continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (unlink(path) == 0 || rmdir(path) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}

int bm_run_cleanup_job_files(const char *jobid)
{
    char prefix[96];
    snprintf(prefix, sizeof(prefix), "bm-%s-", jobid);
    return cleanup_dir("/dev/shm", prefix) + cleanup_dir("/tmp", prefix);
}

static bool is_executable_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

bool bm_run_find_program(const char *prog, char *buf, size_t len)
{
    if (!prog || !*prog)
        return false;
    if (strchr(prog, '/')) {
        snprintf(buf, len, "%s", prog);
        return is_executable_file(prog);
    }
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    const char *p = path;
    while (*p) {
        const char *colon = strchr(p, ':');
        size_t dlen = colon ? (size_t)(colon - p) : strlen(p);
        char cand[4096];
        if (dlen == 0)
            snprintf(cand, sizeof(cand), "./%s", prog);
        else
            snprintf(cand, sizeof(cand), "%.*s/%s", (int)dlen, p, prog);
        if (is_executable_file(cand)) {
            snprintf(buf, len, "%s", cand);
            return true;
        }
        if (!colon)
            break;
        p = colon + 1;
    }
    return false;
}

const char *bm_run_signal_name(int sig)
{
    static char buf[32];
    const char *abbrev = sigabbrev_np(sig);
    if (abbrev)
        snprintf(buf, sizeof(buf), "SIG%s", abbrev);
    else
        snprintf(buf, sizeof(buf), "signal %d", sig);
    return buf;
}

void bm_run_say(const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof(buf) - 2)
        n = (int)sizeof(buf) - 2;
    buf[n++] = '\n';
    /* One write per message, so it does not interleave with rank output. */
    char line[4200];
    int m = snprintf(line, sizeof(line), "bmrun: %.*s", n, buf);
    if (m > 0)
        bm_rte_proto_write_full(2, line, (size_t)m < sizeof(line) ? (size_t)m : sizeof(line) - 1);
}

void bm_run_strv_free(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

char **bm_run_strv_join(char *const *a, char *const *b)
{
    size_t n = 0, m = 0;
    while (a && a[n])
        n++;
    while (b && b[m])
        m++;
    char **v = calloc(n + m + 1, sizeof(char *));
    if (!v)
        return NULL;
    memcpy(v, a, n * sizeof(char *));
    memcpy(v + n, b, m * sizeof(char *));
    return v;
}
