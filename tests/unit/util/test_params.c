/* Tests of the parameter tables (src/util/params.h): parsing of every type
 * (sizes with k/m/g suffixes, booleans, enums, ranges), the message for a
 * bad value (names the variable, the value and what is accepted), loading a
 * table from the environment, the registry (find, sorted foreach), and the
 * start-up check that flags bad values and suggests the parameter a
 * misspelt variable probably meant. */
#include "util/log.h"
#include "util/params.h"

#include "bm_test.h"
#include "util_capture.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct tst_config {
    int i;
    size_t sz;
    bool b;
    int e;
    double d;
    const char *s;
    int fox;
};

static const struct bm_param tst_params[] = {
    {"BM_UTIL_TST_INT", BM_PARAM_INT, "7", 1, 100, NULL, "An int.", offsetof(struct tst_config, i),
     0},
    {"BM_UTIL_TST_SIZE", BM_PARAM_SIZE, "64k", 0, 1LL << 32, NULL, "A size.",
     offsetof(struct tst_config, sz), 0},
    {"BM_UTIL_TST_BOOL", BM_PARAM_BOOL, "no", 0, 0, NULL, "A bool.", offsetof(struct tst_config, b),
     0},
    {"BM_UTIL_TST_ENUM", BM_PARAM_ENUM, "auto", 0, 0, "off|on|auto", "An enum.",
     offsetof(struct tst_config, e), 0},
    {"BM_UTIL_TST_DOUBLE", BM_PARAM_DOUBLE, "0.5", 0, 10, NULL, "A double.",
     offsetof(struct tst_config, d), 0},
    {"BM_UTIL_TST_STRING", BM_PARAM_STRING, "dflt", 0, 0, NULL, "A string.",
     offsetof(struct tst_config, s), 0},
    {"BM_UTIL_TST_FOX", BM_PARAM_INT, "0", 0, 0, NULL, "Quick brown.",
     offsetof(struct tst_config, fox), 0},
};
static const struct bm_param_table tst_table = {"util/tst", tst_params, BM_PARAM_COUNT(tst_params)};
BM_PARAM_TABLE_REGISTER(tst_table);

enum { P_INT, P_SIZE, P_BOOL, P_ENUM, P_DOUBLE, P_STRING };

/* Parse text as parameter idx; true when accepted. */
static bool parse(int idx, const char *text, void *out)
{
    char err[320];
    return bm_util_param_parse(&tst_params[idx], text, out, err, sizeof(err)) == BM_OK;
}

static size_t parse_size(const char *text)
{
    size_t v = 12345;
    return parse(P_SIZE, text, &v) ? v : (size_t)-1;
}

static void test_sizes(void)
{
    BM_CHECK_EQ_INT(parse_size("4096"), 4096);
    BM_CHECK_EQ_INT(parse_size("64k"), 65536);
    BM_CHECK_EQ_INT(parse_size("64K"), 65536);
    BM_CHECK_EQ_INT(parse_size("1m"), 1048576);
    BM_CHECK_EQ_INT(parse_size("2g"), 2147483648LL);
    BM_CHECK_EQ_INT(parse_size("16KiB"), 16384);
    BM_CHECK_EQ_INT(parse_size(" 8 "), 8);
    BM_CHECK_EQ_INT(parse_size("0x100"), 256);
    BM_CHECK_EQ_INT(parse_size("010"), 10); /* decimal, not octal */
    BM_CHECK_EQ_INT(parse_size("08"), 8);
    BM_CHECK_EQ_INT(parse_size("abc"), -1);
    BM_CHECK_EQ_INT(parse_size(""), -1);
    BM_CHECK_EQ_INT(parse_size("12q"), -1);
    BM_CHECK_EQ_INT(parse_size("-1"), -1);
    BM_CHECK_EQ_INT(parse_size("5g"), -1); /* above the 4 GiB maximum */
    BM_CHECK_EQ_INT(parse_size("99999999999999999999"), -1);
    BM_CHECK_EQ_INT(parse_size("9999999999999g"), -1); /* overflows when scaled */
}

static void test_int_bool_enum_double_string(void)
{
    int i = 0;
    BM_CHECK(parse(P_INT, "100", &i) && i == 100);
    BM_CHECK(parse(P_INT, "1", &i) && i == 1);
    BM_CHECK(!parse(P_INT, "0", &i) && !parse(P_INT, "101", &i) && !parse(P_INT, "5k", &i));
    BM_CHECK(!parse(P_INT, "abc", &i) && !parse(P_INT, "1.5", &i));
    BM_CHECK(!parse(6, "4294967296", &i)); /* no range: still must fit an int */
    bool b = false;
    BM_CHECK(parse(P_BOOL, "yes", &b) && b);
    BM_CHECK(parse(P_BOOL, "Off", &b) && !b);
    BM_CHECK(parse(P_BOOL, "TRUE", &b) && b);
    BM_CHECK(parse(P_BOOL, "0", &b) && !b);
    BM_CHECK(!parse(P_BOOL, "maybe", &b) && !parse(P_BOOL, "2", &b));
    int e = -1;
    BM_CHECK(parse(P_ENUM, "on", &e) && e == 1);
    BM_CHECK(parse(P_ENUM, "AUTO", &e) && e == 2);
    BM_CHECK(parse(P_ENUM, "off", &e) && e == 0);
    BM_CHECK(!parse(P_ENUM, "o", &e) && !parse(P_ENUM, "onn", &e) && !parse(P_ENUM, "", &e));
    double d = -1;
    BM_CHECK(parse(P_DOUBLE, "2.5", &d) && d == 2.5);
    BM_CHECK(parse(P_DOUBLE, "1e1", &d) && d == 10.0);
    BM_CHECK(!parse(P_DOUBLE, "10.5", &d) && !parse(P_DOUBLE, "x", &d));
    BM_CHECK(!parse(P_DOUBLE, "nan", &d)); /* NaN is in no range */
    const char *s = NULL;
    BM_CHECK(parse(P_STRING, "any thing", &s) && strcmp(s, "any thing") == 0);
}

static void test_error_text(void)
{
    char err[320];
    size_t v;
    BM_CHECK_EQ_INT(bm_util_param_parse(&tst_params[P_SIZE], "abc", &v, err, sizeof(err)),
                    BM_ERR_BAD_PARAM);
    BM_CHECK(strstr(err, "size in bytes") && strstr(err, "4294967296"));
    int e;
    bm_util_param_parse(&tst_params[P_ENUM], "x", &e, err, sizeof(err));
    BM_CHECK(strstr(err, "off|on|auto") != NULL);
    BM_CHECK_EQ_INT(bm_util_param_check(&tst_params[P_SIZE], "2m", err, sizeof(err)), BM_OK);
    BM_CHECK_EQ_INT(bm_util_param_check(&tst_params[P_INT], "0", err, sizeof(err)),
                    BM_ERR_BAD_PARAM);
    BM_CHECK(strstr(err, "an integer from 1 to 100") != NULL);
    BM_CHECK_STR(bm_util_param_type_name(BM_PARAM_SIZE), "size");
    BM_CHECK_STR(bm_util_param_type_name(BM_PARAM_ENUM), "enum");
}

static void test_load(void)
{
    struct tst_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    setenv("BM_UTIL_TST_INT", "42", 1);
    setenv("BM_UTIL_TST_SIZE", "1m", 1);
    BM_CHECK_EQ_INT(bm_util_params_load(&tst_table, &cfg), BM_OK);
    BM_CHECK_EQ_INT(cfg.i, 42);
    BM_CHECK_EQ_INT(cfg.sz, 1048576);
    BM_CHECK(!cfg.b && cfg.e == 2 && cfg.d == 0.5 && strcmp(cfg.s, "dflt") == 0); /* defaults */
    setenv("BM_UTIL_TST_INT", "abc", 1);
    setenv("BM_UTIL_TST_ENUM", "sometimes", 1);
    struct capture c;
    capture_begin(&c);
    bm_status_t rc = bm_util_params_load(&tst_table, &cfg);
    const char *out = capture_end(&c);
    BM_CHECK_EQ_INT(rc, BM_ERR_BAD_PARAM);
    BM_CHECK(strstr(out, "BM_UTIL_TST_INT=abc") && strstr(out, "an integer from 1 to 100"));
    BM_CHECK(strstr(out, "BM_UTIL_TST_ENUM=sometimes") && strstr(out, "off|on|auto"));
    BM_CHECK(strstr(out, "util/tst") != NULL); /* points to bm_info --params util/tst */
    unsetenv("BM_UTIL_TST_INT");
    unsetenv("BM_UTIL_TST_SIZE");
    unsetenv("BM_UTIL_TST_ENUM");
}

struct order_ctx {
    int n;
    bool sorted, saw_tst, saw_log;
    const char *prev;
};

static void visit(const struct bm_param_table *t, void *arg)
{
    struct order_ctx *c = arg;
    if (c->prev && strcmp(c->prev, t->component) > 0)
        c->sorted = false;
    c->prev = t->component;
    c->saw_tst |= t == &tst_table;
    c->saw_log |= strcmp(t->component, "util/log") == 0;
    c->n++;
}

static void test_registry(void)
{
    BM_CHECK(bm_util_params_find("BM_UTIL_TST_DOUBLE") == &tst_params[P_DOUBLE]);
    const struct bm_param *v = bm_util_params_find("BM_VERBOSE");
    BM_CHECK(v != NULL && v->type == BM_PARAM_STRING);
    BM_CHECK(bm_util_params_find("BM_NO_SUCH_THING") == NULL);
    struct order_ctx c = {0, true, false, false, NULL};
    bm_util_params_foreach(visit, &c);
    BM_CHECK(c.n >= 2 && c.sorted && c.saw_tst && c.saw_log);
}

static void test_distance(void)
{
    BM_CHECK_EQ_INT(bm_util_params_distance("abc", "abd"), 1);
    BM_CHECK_EQ_INT(bm_util_params_distance("BM_VERBOSE", "bm_verbose"), 0);
    BM_CHECK_EQ_INT(bm_util_params_distance("", "abc"), 3);
    BM_CHECK_EQ_INT(bm_util_params_distance("kitten", "sitting"), 3);
    char longname[200];
    memset(longname, 'A', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    BM_CHECK(bm_util_params_distance(longname, "A") == (size_t)-1);
}

/* Run the environment check with one extra variable set; returns stderr. */
static const char *check_env_with(const char *name, const char *value, bm_status_t *rc_out,
                                  struct capture *c)
{
    setenv(name, value, 1);
    capture_begin(c);
    *rc_out = bm_util_params_check_env(true);
    unsetenv(name);
    return capture_end(c);
}

static void test_check_env(void)
{
    struct capture c;
    bm_status_t rc;
    const char *out = check_env_with("BM_VERBOSEE", "5", &rc, &c);
    BM_CHECK_EQ_INT(rc, BM_OK);
    BM_CHECK(strstr(out, "BM_VERBOSEE") && strstr(out, "did you mean BM_VERBOSE?"));
    out = check_env_with("BM_UTIL_TST_FOO", "1", &rc, &c);
    BM_CHECK(strstr(out, "did you mean BM_UTIL_TST_FOX?") != NULL);
    out = check_env_with("BM_COMPLETELY_UNRELATED_NAME", "1", &rc, &c);
    BM_CHECK(strstr(out, "did you mean") == NULL);
    BM_CHECK_MSG(strstr(out, "BM_COMPLETELY_UNRELATED_NAME is not a bitmover parameter"),
                 "an unknown name without a likely one is still reported: got '%s'", out);
    /* a name that a parameter extends by a word: too far for the distance */
    out = check_env_with("BM_UTIL_TST", "1", &rc, &c);
    BM_CHECK_MSG(strstr(out, "did you mean BM_UTIL_TST_"), "got '%s'", out);
    /* reported once per job: the ranks that do not report say nothing */
    setenv("BM_UTIL_TST_FOO", "1", 1);
    capture_begin(&c);
    rc = bm_util_params_check_env(false);
    unsetenv("BM_UTIL_TST_FOO");
    out = capture_end(&c);
    BM_CHECK_EQ_INT(rc, BM_OK);
    BM_CHECK_STR(out, "");
    out = check_env_with("BM_TEST_ANYTHING", "1", &rc, &c); /* reserved prefix: silent */
    BM_CHECK_STR(out, "");
    out = check_env_with("BM_UTIL_TST_BOOL", "perhaps", &rc, &c);
    BM_CHECK_EQ_INT(rc, BM_ERR_BAD_PARAM);
    BM_CHECK(strstr(out, "BM_UTIL_TST_BOOL=perhaps") && strstr(out, "boolean"));
    /* BM_VERBOSE is a string with a syntax: a bad one stops start-up too. */
    out = check_env_with("BM_VERBOSE", "zzz", &rc, &c);
    BM_CHECK_EQ_INT(rc, BM_ERR_BAD_PARAM);
    BM_CHECK_MSG(strstr(out, "BM_VERBOSE=zzz") && strstr(out, "'zzz'"), "got: %s", out);
    out = check_env_with("BM_VERBOSE", "btl:4,pml:2", &rc, &c);
    BM_CHECK_EQ_INT(rc, BM_OK);
}

static void test_verbose_syntax(void)
{
    char err[256];
    const char *good[] = {"", "0", "5", "9", "btl:4", "btl/tcp:5,pml:1", "3,dgram:5"};
    const char *bad[] = {"zzz", "-1", "btl:", ":3", "btl:x", "4,zzz", "btl=4"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        BM_CHECK_MSG(bm_util_log_spec_valid(good[i], err, sizeof(err)), "'%s' refused: %s", good[i],
                     err);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        BM_CHECK_MSG(!bm_util_log_spec_valid(bad[i], err, sizeof(err)), "'%s' accepted", bad[i]);
        BM_CHECK_MSG(strstr(err, "subsystem:level") != NULL, "'%s': %s", bad[i], err);
    }
    const struct bm_param *v = bm_util_params_find("BM_VERBOSE");
    BM_CHECK(v && bm_util_param_check(v, "zzz", err, sizeof(err)) == BM_ERR_BAD_PARAM);
    BM_CHECK(v && bm_util_param_check(v, "dgram:5", err, sizeof(err)) == BM_OK);
}

int main(void)
{
    BM_RUN(test_sizes);
    BM_RUN(test_int_bool_enum_double_string);
    BM_RUN(test_error_text);
    BM_RUN(test_load);
    BM_RUN(test_registry);
    BM_RUN(test_distance);
    BM_RUN(test_check_env);
    BM_RUN(test_verbose_syntax);
    return bm_test_summary("test_util_params");
}
