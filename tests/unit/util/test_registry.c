/* Lint of every parameter table and help topic in the library (this test is
 * linked with the whole internal archive, so every component's
 * registrations are present): parameter names are BM_ and upper case, unique
 * across tables, prefixed by their component (btl/tcp -> BM_BTL_TCP_); every
 * default parses; every parameter has help; enums have choices and ranges
 * are ordered. Help topics have a well-formed name, a title, a "What to do"
 * paragraph, unique names, and as many printf placeholders as their args
 * field lists, so callers can trust the documented arguments. */
#include "util/help.h"
#include "util/params.h"

#include "bm_test.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

/* Names that deliberately skip the component prefix (short and documented). */
static const char *const unprefixed[] = {"BM_VERBOSE"};

static bool name_exempt(const char *name)
{
    for (size_t i = 0; i < sizeof(unprefixed) / sizeof(unprefixed[0]); i++)
        if (strcmp(name, unprefixed[i]) == 0)
            return true;
    return false;
}

/* "btl/tcp" -> "BM_BTL_TCP_"; NULL for a component without '/'. */
static const char *component_prefix(const char *component, char *buf, size_t len)
{
    if (!strchr(component, '/'))
        return NULL;
    size_t n = (size_t)snprintf(buf, len, "BM_%s_", component);
    for (size_t i = 0; i < n && i < len; i++)
        buf[i] = buf[i] == '/' ? '_' : (char)toupper((unsigned char)buf[i]);
    return buf;
}

static bool upper_name(const char *s)
{
    if (strncmp(s, "BM_", 3) != 0)
        return false;
    for (; *s; s++)
        if (!isupper((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '_')
            return false;
    return true;
}

static void check_param(const struct bm_param_table *t, const struct bm_param *p)
{
    char prefix[96], err[320];
    const char *want = component_prefix(t->component, prefix, sizeof(prefix));
    BM_CHECK_MSG(upper_name(p->name), "%s: name must be BM_ and upper case", p->name);
    BM_CHECK_MSG(!want || name_exempt(p->name) || strncmp(p->name, want, strlen(want)) == 0,
                 "%s (component %s) should start with %s", p->name, t->component, want);
    BM_CHECK_MSG(bm_util_params_find(p->name) == p, "%s is declared twice", p->name);
    BM_CHECK_MSG(bm_util_param_check(p, p->def ? p->def : "", err, sizeof(err)) == BM_OK,
                 "%s: default '%s' is invalid: %s", p->name, p->def ? p->def : "", err);
    BM_CHECK_MSG(p->help && strlen(p->help) >= 10, "%s has no help", p->name);
    BM_CHECK_MSG(p->type != BM_PARAM_ENUM || (p->choices && *p->choices), "%s: enum needs choices",
                 p->name);
    BM_CHECK_MSG(p->min <= p->max, "%s: min > max", p->name);
}

static void visit_table(const struct bm_param_table *t, void *arg)
{
    int *ntables = arg;
    (*ntables)++;
    BM_CHECK_MSG(t->component && *t->component, "a table has no component name");
    for (size_t i = 0; i < t->count; i++)
        check_param(t, &t->params[i]);
}

/* Conversions in a printf format ("%%" does not count). */
static int count_placeholders(const char *fmt)
{
    int n = 0;
    for (const char *p = strchr(fmt, '%'); p; p = strchr(p + 1, '%')) {
        if (p[1] == '%') {
            p++;
            continue;
        }
        n++;
    }
    return n;
}

/* Entries of the args field: comma-separated, but commas inside
 * parentheses ("(int, string)") do not split. */
static int count_args(const char *args)
{
    if (!args || !*args)
        return 0;
    int n = 1, depth = 0;
    for (const char *p = args; *p; p++) {
        depth += (*p == '(') - (*p == ')');
        n += *p == ',' && depth == 0;
    }
    return n;
}

struct topic_ctx {
    int n;
    const char *prev;
};

static void visit_topic(const struct bm_util_help_topic *t, void *arg)
{
    struct topic_ctx *c = arg;
    bool name_ok = t->name && *t->name;
    for (const char *p = t->name; p && *p; p++)
        name_ok &= islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-';
    BM_CHECK_MSG(name_ok, "topic name '%s' must be lower case and dashes", t->name);
    BM_CHECK_MSG(!c->prev || strcmp(c->prev, t->name) != 0, "topic %s declared twice", t->name);
    BM_CHECK_MSG(t->title && *t->title && !strchr(t->title, '%'), "topic %s: title", t->name);
    BM_CHECK_MSG(t->text && strstr(t->text, "What to do"), "topic %s: no 'What to do'", t->name);
    BM_CHECK_MSG(count_placeholders(t->text) == count_args(t->args),
                 "topic %s: %d placeholders but args lists %d", t->name,
                 count_placeholders(t->text), count_args(t->args));
    c->prev = t->name;
    c->n++;
}

static void test_params_lint(void)
{
    int ntables = 0;
    bm_util_params_foreach(visit_table, &ntables);
    BM_CHECK(ntables >= 3); /* the whole library is linked in */
}

static void test_topics_lint(void)
{
    struct topic_ctx c = {0, NULL};
    bm_util_help_foreach(visit_topic, &c);
    BM_CHECK(c.n >= 5);
    BM_CHECK_EQ_INT(count_args("a (int), b (x, y), c"), 3);
    BM_CHECK_EQ_INT(count_placeholders("%d%% of %s"), 2);
}

int main(void)
{
    BM_RUN(test_params_lint);
    BM_RUN(test_topics_lint);
    return bm_test_summary("test_util_registry");
}
