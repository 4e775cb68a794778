/* Parameter tables: parsing values from the environment, the registry of
 * every table (an ELF section filled by BM_PARAM_TABLE_REGISTER), and the
 * start-up check that rejects bad values and points out likely typos. */
#define BM_LOG_SUBSYS "params"
#include "util/params.h"
#include "util/log.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern char **environ;
extern const struct bm_param_table *const __start_bm_params[] __attribute__((weak));
extern const struct bm_param_table *const __stop_bm_params[] __attribute__((weak));

const char *bm_util_param_type_name(enum bm_param_type type)
{
    switch (type) {
    case BM_PARAM_INT:
        return "int";
    case BM_PARAM_SIZE:
        return "size";
    case BM_PARAM_BOOL:
        return "bool";
    case BM_PARAM_STRING:
        return "string";
    case BM_PARAM_ENUM:
        return "enum";
    case BM_PARAM_DOUBLE:
        return "double";
    }
    return "?";
}

static bool param_has_range(const struct bm_param *p)
{
    return !(p->min == 0 && p->max == 0);
}

void bm_util_param_describe_accepted(const struct bm_param *p, char *buf, size_t len)
{
    switch (p->type) {
    case BM_PARAM_INT:
        if (param_has_range(p))
            snprintf(buf, len, "an integer from %lld to %lld", p->min, p->max);
        else
            snprintf(buf, len, "an integer");
        break;
    case BM_PARAM_SIZE:
        if (param_has_range(p))
            snprintf(buf, len, "a size in bytes (e.g. 4096, 64k, 1m) from %lld to %lld", p->min,
                     p->max);
        else
            snprintf(buf, len, "a size in bytes (e.g. 4096, 64k, 1m)");
        break;
    case BM_PARAM_BOOL:
        snprintf(buf, len, "a boolean (1/0, true/false, yes/no, on/off)");
        break;
    case BM_PARAM_STRING:
        snprintf(buf, len, "a string");
        break;
    case BM_PARAM_ENUM:
        snprintf(buf, len, "one of: %s", p->choices ? p->choices : "");
        break;
    case BM_PARAM_DOUBLE:
        if (param_has_range(p))
            snprintf(buf, len, "a number from %lld to %lld", p->min, p->max);
        else
            snprintf(buf, len, "a number");
        break;
    }
}

static bool param_parse_bool(const char *s, bool *out)
{
    static const char *yes[] = {"1", "true", "yes", "on", "y", "t"};
    static const char *no[] = {"0", "false", "no", "off", "n", "f"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = true;
            return true;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = false;
            return true;
        }
    }
    return false;
}

static bool param_parse_ll(const char *s, bool allow_suffix, long long *out)
{
    while (isspace((unsigned char)*s))
        s++;
    if (*s == '\0')
        return false;
    errno = 0;
    char *end = NULL;
    /* Decimal, or hex with 0x: a leading zero must not switch to octal. */
    const char *digits = (*s == '-' || *s == '+') ? s + 1 : s;
    int base = (digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) ? 16 : 10;
    long long v = strtoll(s, &end, base);
    if (errno || end == s)
        return false;
    while (isspace((unsigned char)*end))
        end++;
    if (allow_suffix && *end) {
        long long mult = 1;
        switch (tolower((unsigned char)*end)) {
        case 'k':
            mult = 1LL << 10;
            break;
        case 'm':
            mult = 1LL << 20;
            break;
        case 'g':
            mult = 1LL << 30;
            break;
        default:
            return false;
        }
        end++;
        if (strcasecmp(end, "ib") == 0 || strcasecmp(end, "b") == 0)
            end += strlen(end);
        if (v > INT64_MAX / mult || v < INT64_MIN / mult)
            return false;
        v *= mult;
    }
    while (isspace((unsigned char)*end))
        end++;
    if (*end)
        return false;
    *out = v;
    return true;
}

static int param_enum_index(const char *choices, const char *s)
{
    int idx = 0;
    const char *c = choices;
    size_t n = strlen(s);
    while (c && *c) {
        const char *bar = strchr(c, '|');
        size_t len = bar ? (size_t)(bar - c) : strlen(c);
        if (len == n && strncasecmp(c, s, n) == 0)
            return idx;
        idx++;
        c = bar ? bar + 1 : NULL;
    }
    return -1;
}

/* String parameters with a syntax of their own, checked wherever values are
 * checked (load, bm_util_params_check_env, bm_info --check). Only this
 * layer's own: a layer above cannot be called from here. */
static const struct {
    const char *name;
    bool (*valid)(const char *text, char *err, size_t errlen);
} param_string_syntax[] = {
    {"BM_VERBOSE", bm_util_log_spec_valid},
};

static bool param_string_valid(const struct bm_param *p, const char *text, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof(param_string_syntax) / sizeof(param_string_syntax[0]); i++)
        if (strcmp(p->name, param_string_syntax[i].name) == 0)
            return param_string_syntax[i].valid(text, err, errlen);
    return true;
}

bm_status_t bm_util_param_parse(const struct bm_param *p, const char *text, void *value_out,
                                char *err, size_t errlen)
{
    char accepted[256];
    bm_util_param_describe_accepted(p, accepted, sizeof(accepted));
    long long v;
    switch (p->type) {
    case BM_PARAM_INT:
    case BM_PARAM_SIZE:
        if (!param_parse_ll(text, p->type == BM_PARAM_SIZE, &v) ||
            (param_has_range(p) && (v < p->min || v > p->max)) ||
            (p->type == BM_PARAM_SIZE && v < 0) ||
            (p->type == BM_PARAM_INT && (v < INT32_MIN || v > INT32_MAX)))
            goto bad;
        if (p->type == BM_PARAM_INT)
            *(int *)value_out = (int)v;
        else
            *(size_t *)value_out = (size_t)v;
        return BM_OK;
    case BM_PARAM_BOOL:
        if (!param_parse_bool(text, (bool *)value_out))
            goto bad;
        return BM_OK;
    case BM_PARAM_STRING:
        if (!param_string_valid(p, text, err, errlen))
            return BM_ERR_BAD_PARAM;
        *(const char **)value_out = text;
        return BM_OK;
    case BM_PARAM_ENUM: {
        int idx = param_enum_index(p->choices, text);
        if (idx < 0)
            goto bad;
        *(int *)value_out = idx;
        return BM_OK;
    }
    case BM_PARAM_DOUBLE: {
        char *end = NULL;
        errno = 0;
        double d = strtod(text, &end);
        if (errno || end == text || *end ||
            (param_has_range(p) && !(d >= (double)p->min && d <= (double)p->max)))
            goto bad;
        *(double *)value_out = d;
        return BM_OK;
    }
    }
bad:
    snprintf(err, errlen, "expected %s", accepted);
    return BM_ERR_BAD_PARAM;
}

bm_status_t bm_util_param_check(const struct bm_param *p, const char *text, char *err,
                                size_t errlen)
{
    union {
        int i;
        size_t s;
        bool b;
        const char *str;
        double d;
    } scratch;
    return bm_util_param_parse(p, text, &scratch, err, errlen);
}

bm_status_t bm_util_params_load(const struct bm_param_table *table, void *config_out)
{
    bm_status_t rc = BM_OK;
    for (size_t i = 0; i < table->count; i++) {
        const struct bm_param *p = &table->params[i];
        char err[320];
        void *dst = (char *)config_out + p->offset;
        const char *env = getenv(p->name);
        if (env) {
            if (bm_util_param_parse(p, env, dst, err, sizeof(err)) == BM_OK)
                continue;
            bm_log_error("%s=%s is not valid: %s. Fix or unset the variable "
                         "(bm_info --params %s lists every parameter).",
                         p->name, env, err, table->component);
            rc = BM_ERR_BAD_PARAM;
            continue;
        }
        if (bm_util_param_parse(p, p->def ? p->def : "", dst, err, sizeof(err)) != BM_OK) {
            /* A default that does not parse is a bug in the table itself. */
            bm_log_error("internal: default '%s' of %s is invalid: %s", p->def ? p->def : "",
                         p->name, err);
            rc = BM_ERR_BAD_PARAM;
        }
    }
    return rc;
}

static int table_cmp(const void *a, const void *b)
{
    const struct bm_param_table *ta = *(const struct bm_param_table *const *)a;
    const struct bm_param_table *tb = *(const struct bm_param_table *const *)b;
    return strcmp(ta->component, tb->component);
}

void bm_util_params_foreach(void (*fn)(const struct bm_param_table *t, void *arg), void *arg)
{
    if (!__start_bm_params || !__stop_bm_params)
        return;
    size_t n = (size_t)(__stop_bm_params - __start_bm_params);
    const struct bm_param_table **sorted = calloc(n ? n : 1, sizeof(*sorted));
    if (!sorted)
        return;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (__start_bm_params[i])
            sorted[m++] = __start_bm_params[i];
    qsort(sorted, m, sizeof(*sorted), table_cmp);
    for (size_t i = 0; i < m; i++)
        fn(sorted[i], arg);
    free(sorted);
}

struct params_find_ctx {
    const char *name;
    const struct bm_param *found;
};

static void params_find_visit(const struct bm_param_table *t, void *arg)
{
    struct params_find_ctx *ctx = arg;
    for (size_t i = 0; i < t->count && !ctx->found; i++)
        if (strcmp(t->params[i].name, ctx->name) == 0)
            ctx->found = &t->params[i];
}

const struct bm_param *bm_util_params_find(const char *name)
{
    struct params_find_ctx ctx = {name, NULL};
    bm_util_params_foreach(params_find_visit, &ctx);
    return ctx.found;
}

size_t bm_util_params_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 127 || lb > 127)
        return (size_t)-1;
    size_t prev[128], cur[128];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] +
                         (toupper((unsigned char)a[i - 1]) != toupper((unsigned char)b[j - 1]));
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, (lb + 1) * sizeof(size_t));
    }
    return prev[lb];
}

struct params_nearest_ctx {
    const char *name;
    const char *best;
    size_t best_dist;
};

static void params_nearest_visit(const struct bm_param_table *t, void *arg)
{
    struct params_nearest_ctx *ctx = arg;
    for (size_t i = 0; i < t->count; i++) {
        size_t d = bm_util_params_distance(ctx->name, t->params[i].name);
        if (d < ctx->best_dist) {
            ctx->best_dist = d;
            ctx->best = t->params[i].name;
        }
    }
}

struct params_extends_ctx {
    const char *name;
    const char *found;
};

/* A parameter whose name is the unknown name plus a word
 * (BM_BTL_OFI_PROVIDER -> BM_BTL_OFI_PROVIDER_INCLUDE): too far for the
 * edit distance, yet clearly what was meant. The shortest one wins. */
static void params_extends_visit(const struct bm_param_table *t, void *arg)
{
    struct params_extends_ctx *ctx = arg;
    size_t n = strlen(ctx->name);
    for (size_t i = 0; i < t->count; i++) {
        const char *p = t->params[i].name;
        if (strncasecmp(p, ctx->name, n) == 0 && p[n] == '_' &&
            (!ctx->found || strlen(p) < strlen(ctx->found)))
            ctx->found = p;
    }
}

/* The parameter an unknown name most likely meant, or NULL. */
static const char *params_likely(const char *name)
{
    struct params_nearest_ctx ctx = {name, NULL, (size_t)-1};
    bm_util_params_foreach(params_nearest_visit, &ctx);
    size_t limit = strlen(name) / 4 > 3 ? 3 : strlen(name) / 4;
    if (limit < 2)
        limit = 2;
    if (ctx.best && ctx.best_dist <= limit)
        return ctx.best;
    struct params_extends_ctx ext = {name, NULL};
    bm_util_params_foreach(params_extends_visit, &ext);
    return ext.found;
}

/* Variables that start with BM_ but belong to the build or test harness. */
static bool params_is_reserved(const char *name)
{
    static const char *reserved[] = {"BM_TEST_", "BM_CI"};
    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
        if (strncmp(name, reserved[i], strlen(reserved[i])) == 0)
            return true;
    return false;
}

bm_status_t bm_util_params_check_env(bool report_unknown)
{
    bm_status_t rc = BM_OK;
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "BM_", 3) != 0)
            continue;
        const char *eq = strchr(*e, '=');
        if (!eq || eq - *e >= 128)
            continue;
        char name[128];
        memcpy(name, *e, (size_t)(eq - *e));
        name[eq - *e] = '\0';
        if (params_is_reserved(name))
            continue;
        const struct bm_param *p = bm_util_params_find(name);
        if (p) {
            char err[320];
            if (bm_util_param_check(p, eq + 1, err, sizeof(err)) != BM_OK) {
                bm_log_error("%s=%s is not valid: %s. Fix or unset the variable.", name, eq + 1,
                             err);
                rc = BM_ERR_BAD_PARAM;
            }
            continue;
        }
        if (!report_unknown)
            continue;
        const char *likely = params_likely(name);
        if (likely)
            bm_log_warn("%s is not a bitmover parameter; did you mean %s? "
                        "(bm_info --params lists them all)",
                        name, likely);
        else
            bm_log_warn("%s is not a bitmover parameter and is ignored "
                        "(bm_info --params lists them all)",
                        name);
    }
    return rc;
}

static const struct bm_param bm_util_log_params[] = {
    {"BM_VERBOSE", BM_PARAM_STRING, "", 0, 0, NULL,
     "Log verbosity: a level for everything (1=error .. 5=trace; default 2 = warnings) or "
     "per subsystem, e.g. 'dgram:5,pml:2'. Debug and trace exist only in debug builds.",
     0, 0},
};
static const struct bm_param_table bm_util_log_table = {"util/log", bm_util_log_params,
                                                        BM_PARAM_COUNT(bm_util_log_params)};
BM_PARAM_TABLE_REGISTER(bm_util_log_table);
