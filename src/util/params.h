/* Tunable parameters. Each component declares its tunables once, in a const
 * table of struct bm_param (name, type, default, range or choices, help, and
 * where the value goes in the component's config struct), and registers the
 * table with BM_PARAM_TABLE_REGISTER so that bm_info --params and the typo
 * check see every parameter without a central list. Values come only from
 * environment variables named BM_<LAYER>[_<COMPONENT>]_<NAME>. A component
 * reads its table once at init with bm_util_params_load into a config struct
 * that it then treats as const. A bad value is reported naming the variable,
 * the value and what is accepted, and the load fails with BM_ERR_BAD_PARAM. */
#ifndef BM_UTIL_PARAMS_H
#define BM_UTIL_PARAMS_H

#include "bm_status.h"

#include <stdbool.h>
#include <stddef.h>

enum bm_param_type {
    BM_PARAM_INT,    /* stored as int; range [min, max] */
    BM_PARAM_SIZE,   /* stored as size_t; accepts 4096, 64k, 1m, 2g; range [min, max] */
    BM_PARAM_BOOL,   /* stored as bool; 1/0, true/false, yes/no, on/off */
    BM_PARAM_STRING, /* stored as const char * (static lifetime) */
    BM_PARAM_ENUM,   /* stored as int: index into choices "a|b|c" */
    BM_PARAM_DOUBLE, /* stored as double; range [min, max] when min < max */
};

#define BM_PARAM_F_DEBUG 0x1 /* fault-injection or debugging knob, not for production */

struct bm_param {
    const char *name; /* full environment variable name, e.g. "BM_BTL_SM_EAGER_LIMIT" */
    enum bm_param_type type;
    const char *def;     /* default value as text, parsed like the environment */
    long long min, max;  /* INT, SIZE, DOUBLE: inclusive bounds (ignored when min == max == 0) */
    const char *choices; /* ENUM: "off|on|auto" */
    const char *help;    /* one or two sentences: what it does and when to change it */
    size_t offset;       /* offset of the value in the component's config struct */
    unsigned flags;      /* BM_PARAM_F_* */
};

struct bm_param_table {
    const char *component; /* "pml", "btl/tcp", "runtime", "util/log" */
    const struct bm_param *params;
    size_t count;
};

/* Declare a table in the registry section (any number per file). */
#define BM_PARAM_TABLE_REGISTER(tbl)                                                               \
    static const struct bm_param_table *const bm_param_reg_##tbl                                   \
        __attribute__((used, section("bm_params"), aligned(sizeof(void *)))) = &(tbl)

#define BM_PARAM_COUNT(arr) (sizeof(arr) / sizeof((arr)[0]))

/* Parse every parameter of the table from the environment (or its default)
 * into config_out. On a bad value prints what is wrong and what is accepted
 * and returns BM_ERR_BAD_PARAM; config_out is then partially written. */
bm_status_t bm_util_params_load(const struct bm_param_table *table, void *config_out);

/* Parse one value. On failure writes a sentence into err (what is accepted). */
bm_status_t bm_util_param_parse(const struct bm_param *p, const char *text, void *value_out,
                                char *err, size_t errlen);

/* Only check that text is a valid value of p (same contract, nothing stored). */
bm_status_t bm_util_param_check(const struct bm_param *p, const char *text, char *err,
                                size_t errlen);

/* Check all BM_* environment variables against every registered table:
 * invalid values are errors (returns BM_ERR_BAD_PARAM after reporting all of
 * them), wherever they belong (also a component the job does not use).
 * With report_unknown, every unknown BM_ name (but the reserved BM_TEST_
 * and BM_CI prefixes) gets a warning, naming the parameter it most likely
 * meant when one is close. A job reports unknown names once: bmrun before
 * launching, or rank 0 under other launchers (MPI_Init). */
bm_status_t bm_util_params_check_env(bool report_unknown);

/* Visit every registered table, in a stable order (sorted by component). */
void bm_util_params_foreach(void (*fn)(const struct bm_param_table *t, void *arg), void *arg);

/* Find a parameter by its full name, or NULL. */
const struct bm_param *bm_util_params_find(const char *name);

/* "size", "int", ... and a description of the accepted values. */
const char *bm_util_param_type_name(enum bm_param_type type);
void bm_util_param_describe_accepted(const struct bm_param *p, char *buf, size_t len);

/* Edit distance, used by the typo check (exported for tests). */
size_t bm_util_params_distance(const char *a, const char *b);

#endif
