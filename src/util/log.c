/* Implementation of the logger declared in log.h: parses BM_VERBOSE into a
 * small table of (subsystem, level) pairs and formats prefixed lines. The
 * table is tiny and only consulted when a level is enabled somewhere, so the
 * common case (debug off) costs one integer compare at the call site. */
#include "util/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BM_LOG_DEFAULT_LEVEL BM_LOG_WARN
#define BM_LOG_MAX_RULES     32

struct bm_log_rule {
    char name[32];
    int level;
};

static struct bm_log_rule log_rules[BM_LOG_MAX_RULES];
static int log_nrules;
static int log_default_level = BM_LOG_DEFAULT_LEVEL;
static bool log_configured;
static int log_rank = -1;
int bm_util_log_max_enabled = BM_LOG_TRACE; /* until configured: let the slow path decide */

/* A level from 0 to 5 (higher values mean everything). Anything else is
 * rejected rather than read as 0, which would silence even errors. */
static bool log_parse_level(const char *s, int *level_out)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < 0)
        return false;
    *level_out = v > BM_LOG_TRACE ? BM_LOG_TRACE : (int)v;
    return true;
}

bool bm_util_log_spec_valid(const char *spec, char *err, size_t errlen)
{
    if (!spec || !*spec)
        return true;
    char buf[512];
    if (strlen(spec) >= sizeof(buf)) {
        snprintf(err, errlen, "longer than %zu characters", sizeof(buf) - 1);
        return false;
    }
    snprintf(buf, sizeof(buf), "%s", spec);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        int level;
        if ((colon && colon == tok) || !log_parse_level(colon ? colon + 1 : tok, &level)) {
            snprintf(err, errlen,
                     "'%s' is neither a level (0-5) nor subsystem:level; expected for example "
                     "BM_VERBOSE=4 or BM_VERBOSE=btl:4,pml:2",
                     tok);
            return false;
        }
    }
    return true;
}

void bm_util_log_configure(const char *spec)
{
    int saved_errno = errno; /* runs lazily inside log calls, which keep errno */
    log_nrules = 0;
    log_default_level = BM_LOG_DEFAULT_LEVEL;
    int max = log_default_level;
    if (spec && *spec) {
        char buf[512];
        snprintf(buf, sizeof(buf), "%s", spec);
        char *save = NULL;
        for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            char *colon = strchr(tok, ':');
            int level;
            /* A bad token is skipped quietly here: the parameter check
             * (bm_util_params_check_env, run by MPI_Init, bmrun and
             * bm_info --check) reports it as an error that stops start-up,
             * and logging must work meanwhile. */
            if (!log_parse_level(colon ? colon + 1 : tok, &level))
                continue;
            if (level > max)
                max = level;
            if (!colon) {
                log_default_level = level;
                continue;
            }
            *colon = '\0';
            if (log_nrules == BM_LOG_MAX_RULES)
                continue;
            struct bm_log_rule *r = &log_rules[log_nrules++];
            snprintf(r->name, sizeof(r->name), "%s", tok);
            r->level = level;
        }
    }
    bm_util_log_max_enabled = max;
    log_configured = true;
    errno = saved_errno;
}

static bool log_rule_matches(const char *rule, const char *subsys)
{
    size_t n = strlen(rule);
    if (strcmp(rule, subsys) == 0)
        return true;
    /* "btl" matches "btl/tcp" */
    if (strncmp(rule, subsys, n) == 0 && subsys[n] == '/')
        return true;
    /* "tcp" matches "btl/tcp" */
    const char *last = strrchr(subsys, '/');
    return last && strcmp(last + 1, rule) == 0;
}

bool bm_util_log_enabled(const char *subsys, int level)
{
    if (!log_configured)
        bm_util_log_configure(getenv("BM_VERBOSE"));
    int allowed = log_default_level;
    for (int i = 0; i < log_nrules; i++)
        if (log_rule_matches(log_rules[i].name, subsys))
            allowed = log_rules[i].level;
    return level <= allowed;
}

void bm_util_log_set_rank(int rank)
{
    log_rank = rank;
}

bool bm_util_log_ratelimit(long long *last_ns, long long interval_ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long long now = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    if (*last_ns && now - *last_ns < interval_ns)
        return false;
    *last_ns = now;
    return true;
}

static const char *log_level_name(int level)
{
    static const char *names[] = {"", "error", "warning", "info", "debug", "trace"};
    return (level >= 0 && level <= BM_LOG_TRACE) ? names[level] : "";
}

void bm_util_log_prefix(char *buf, size_t len)
{
    char host[64] = "?";
    gethostname(host, sizeof(host) - 1);
    char *dot = strchr(host, '.');
    if (dot)
        *dot = '\0';
    if (log_rank >= 0)
        snprintf(buf, len, "[%s:%d:%d]", host, (int)getpid(), log_rank);
    else
        snprintf(buf, len, "[%s:%d]", host, (int)getpid());
}

void bm_util_log_emit(const char *subsys, int level, const char *fmt, ...)
{
    int saved_errno = errno;
    char prefix[96];
    bm_util_log_prefix(prefix, sizeof(prefix));

    char msg[2048];
    int n = snprintf(msg, sizeof(msg), "%s %s: ", prefix, subsys);
    if (level <= BM_LOG_WARN && n >= 0 && (size_t)n < sizeof(msg))
        n += snprintf(msg + n, sizeof(msg) - (size_t)n, "%s: ", log_level_name(level));
    if (n >= 0 && (size_t)n < sizeof(msg)) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
        va_end(ap);
    }
    size_t len = strlen(msg);
    if (len == 0 || msg[len - 1] != '\n') {
        if (len + 1 >= sizeof(msg))
            len = sizeof(msg) - 2; /* a cut message still ends its line */
        msg[len++] = '\n';
        msg[len] = '\0';
    }
    /* One write so that lines from many ranks do not interleave. */
    ssize_t w = write(STDERR_FILENO, msg, len);
    (void)w;
    errno = saved_errno;
}
