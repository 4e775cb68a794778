/* Logging for every layer. A file defines BM_LOG_SUBSYS ("btl/tcp", "pml",
 * ...) before including this header and then calls bm_log_error/warn/info/
 * debug/trace with printf arguments. Each line is prefixed
 * "[host:pid:rank] subsys: ". Verbosity is per subsystem from BM_VERBOSE
 * ("5" for all, or "dgram:5,pml:2"; a name matches a whole subsystem or its
 * last component, "btl" matches every "btl/..."). Levels above
 * BM_LOG_MAX_LEVEL (set by the build type) compile to nothing, so debug and
 * trace cost nothing in release builds. Logging never changes errno. */
#ifndef BM_UTIL_LOG_H
#define BM_UTIL_LOG_H

#include "bm_config.h"

#include <stdbool.h>
#include <stddef.h>

enum bm_log_level {
    BM_LOG_NONE = 0,
    BM_LOG_ERROR = 1,
    BM_LOG_WARN = 2,
    BM_LOG_INFO = 3,
    BM_LOG_DEBUG = 4,
    BM_LOG_TRACE = 5,
};

/* Highest level enabled for any subsystem; the fast pre-check. */
extern int bm_util_log_max_enabled;

/* True when messages of this level are printed for this subsystem. */
bool bm_util_log_enabled(const char *subsys, int level);

/* Print one line. Preserves errno. */
void bm_util_log_emit(const char *subsys, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Re-read BM_VERBOSE (done lazily on first use; tests call it after setenv). */
void bm_util_log_configure(const char *spec);
/* Whether spec is a valid BM_VERBOSE value (a level 0-5, or comma-separated
 * subsystem:level pairs, or both); when not, a sentence in err naming the
 * first bad token. The parameter check (params.c) uses it, so that a bad
 * BM_VERBOSE stops start-up like any other bad parameter. */
bool bm_util_log_spec_valid(const char *spec, char *err, size_t errlen);

/* The runtime tells the logger who we are, for the line prefix. */
void bm_util_log_set_rank(int rank);

/* "[host:pid:rank]" (or "[host:pid]" before the rank is known) into buf:
 * the same context the log lines carry, for other user-facing output. */
void bm_util_log_prefix(char *buf, size_t len);

/* Rate limiter for hot paths: true at most once per interval per site. */
bool bm_util_log_ratelimit(long long *last_ns, long long interval_ns);

#ifndef BM_LOG_SUBSYS
#define BM_LOG_SUBSYS "bitmover"
#endif

#define bm_log(level, ...)                                                                         \
    do {                                                                                           \
        if ((level) <= BM_LOG_MAX_LEVEL && (level) <= bm_util_log_max_enabled &&                   \
            bm_util_log_enabled(BM_LOG_SUBSYS, (level)))                                           \
            bm_util_log_emit(BM_LOG_SUBSYS, (level), __VA_ARGS__);                                 \
    } while (0)

#define bm_log_error(...) bm_log(BM_LOG_ERROR, __VA_ARGS__)
#define bm_log_warn(...)  bm_log(BM_LOG_WARN, __VA_ARGS__)
#define bm_log_info(...)  bm_log(BM_LOG_INFO, __VA_ARGS__)
#define bm_log_debug(...) bm_log(BM_LOG_DEBUG, __VA_ARGS__)
#define bm_log_trace(...) bm_log(BM_LOG_TRACE, __VA_ARGS__)

/* At most one message per second from this call site. */
#define bm_log_ratelimited(level, ...)                                                             \
    do {                                                                                           \
        static long long bm_log_rl_last_;                                                          \
        if ((level) <= BM_LOG_MAX_LEVEL && (level) <= bm_util_log_max_enabled &&                   \
            bm_util_log_enabled(BM_LOG_SUBSYS, (level)) &&                                         \
            bm_util_log_ratelimit(&bm_log_rl_last_, 1000000000LL))                                 \
            bm_util_log_emit(BM_LOG_SUBSYS, (level), __VA_ARGS__);                                 \
    } while (0)

#endif
