/* bm_info: tells a user what this build of bitmover can do on this machine.
 * Without arguments it prints the version and build, the optional
 * dependencies (found, or why not), the launchers a job can be started by
 * (runtime backends: built or not, and which one this environment would
 * use, or why the launcher that started it cannot be used), and each
 * transport with its state: built and usable, built but unusable here (and
 * why, from the transport's own query), or not built (and why). With
 * --params it lists every tunable parameter, grouped by component, with its
 * type, default, current value from the environment (checked), accepted
 * values and help; a component ("btl/tcp") or layer ("btl") narrows the
 * list. --check validates the BM_* environment (bad values, likely typos).
 * --topics lists the help messages bitmover can print. Bad usage prints the
 * usage and exits 2. */
#include "bitmover.h"
#include "bm_config.h"
#include "btl/btl.h"
#include "runtime/rte.h"
#include "util/help.h"
#include "util/params.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define WIDTH 78

static void usage(FILE *f)
{
    fprintf(f, "usage: bm_info                     build, dependencies and transports\n"
               "       bm_info --params [filter]   tunable parameters; filter is a component\n"
               "                                   (btl/tcp), a layer (btl) or a parameter name\n"
               "       bm_info --check             check the BM_* environment variables\n"
               "       bm_info --topics            help messages bitmover can print\n"
               "       bm_info --help              this text\n");
}

/* Print text word-wrapped at WIDTH, every line indented by indent. */
static void print_wrapped(const char *text, int indent)
{
    int col = 0;
    while (*text) {
        while (*text == ' ')
            text++;
        int len = (int)strcspn(text, " ");
        if (len == 0)
            break;
        if (col > 0 && col + 1 + len > WIDTH) {
            putchar('\n');
            col = 0;
        }
        col += col ? printf(" %.*s", len, text) : printf("%*s%.*s", indent, "", len, text);
        text += len;
    }
    if (col)
        putchar('\n');
}

/* ---- the build report ------------------------------------------------- */

static void report_build(void)
{
    printf("bitmover %s\n", bm_version());
    printf("  build type:  %s\n", BM_BUILD_TYPE);
    printf("  compiler:    %s\n", BM_C_COMPILER);
    printf("  sanitizers:  %s\n", BM_SANITIZE_FLAGS[0] ? BM_SANITIZE_FLAGS : "none");
    printf("  log levels:  up to %d (%s)\n", BM_LOG_MAX_LEVEL,
           BM_LOG_MAX_LEVEL >= 5 ? "debug and trace available" : "debug and trace compiled out");
    printf("  prefix:      %s\n", BM_INSTALL_PREFIX);
}

/* A dependency, found or not, and what in this build uses it: "found" only
 * says the library was there at build time; used_by says what code was
 * built against it (NULL: nothing, which is then said). */
static void report_dep(const char *name, int have, const char *why, const char *used_by)
{
    printf("  %-9s %s: %s\n", name, have ? "yes" : "no", why);
    if (have) {
        char line[512];
        snprintf(line, sizeof(line), "used by: %s", used_by ? used_by : "nothing in this build");
        print_wrapped(line, 12);
    }
}

static bool transport_built(const char *name)
{
    for (int i = 0; i < bm_btl_registry_count; i++)
        if (strcmp(bm_btl_registry[i]->name, name) == 0)
            return true;
    return false;
}

/* A runtime backend built into this library (the runtime's own list). */
static bool backend_built(const char *name)
{
    const struct bm_rte_backend_info *list;
    int n = bm_rte_backends(&list);
    for (int i = 0; i < n; i++)
        if (strcmp(list[i].name, name) == 0)
            return list[i].built;
    return false;
}

static void report_deps(void)
{
    printf("\nOptional dependencies:\n");
    /* dgram's libfabric wire and interface placement are compiled exactly
     * when dgram and the library are (src/btl/dgram/CMakeLists.txt). */
    bool dgram = transport_built("dgram");
    const char *ofi_users =
        transport_built("ofi")
            ? (dgram ? "the ofi transport; dgram's libfabric wire (BM_BTL_DGRAM_WIRE=ofi)"
                     : "the ofi transport")
            : (dgram ? "dgram's libfabric wire (BM_BTL_DGRAM_WIRE=ofi); the ofi transport "
                       "was not part of this build"
                     : NULL);
    report_dep("libfabric", BM_HAVE_OFI, BM_OFI_WHY, ofi_users);
    report_dep("hwloc", BM_HAVE_HWLOC, BM_HWLOC_WHY,
               dgram ? "dgram (interfaces near this process's cores get the better latency "
                       "class)"
                     : NULL);
    report_dep("pmix", BM_HAVE_PMIX, BM_PMIX_WHY,
               backend_built("pmix") ? "the pmix launcher backend (see Launchers below)" : NULL);
}

static void report_launchers(void)
{
    printf("\nLaunchers (runtime backends, tried in this order; force one with "
           "BM_RTE_BACKEND):\n");
    const struct bm_rte_backend_info *list;
    int n = bm_rte_backends(&list);
    for (int i = 0; i < n; i++) {
        printf("  %-9s %s: %s\n", list[i].name, list[i].built ? "built" : "not built",
               list[i].launchers);
        if (!list[i].built)
            print_wrapped(list[i].why_not, 12);
    }
    char why[1024];
    const char *use = bm_rte_probe(why, sizeof(why));
    if (use) {
        printf("  here:     %s (%s)\n", use, why);
    } else {
        printf("  here:     none usable:\n");
        print_wrapped(why, 12);
    }
}

static void report_transports(void)
{
    printf("\nTransports (select with BM_BTL, e.g. BM_BTL=self,sm,tcp or BM_BTL=^dgram):\n");
    for (int i = 0; i < bm_btl_registry_count; i++) {
        const struct bm_btl_ops *ops = bm_btl_registry[i];
        char why[512] = "";
        bm_status_t rc = ops->query ? ops->query(why, sizeof(why)) : BM_OK;
        printf("  %-6s %s", ops->name,
               rc == BM_OK ? "built and usable" : "built but unusable here");
        if (rc != BM_OK)
            printf(": %s", why[0] ? why : bm_status_str(rc));
        printf("\n");
        if (rc == BM_OK && why[0]) /* what a usable transport found (ofi: provider, domains) */
            print_wrapped(why, 9);
        if (ops->description)
            print_wrapped(ops->description, 9);
    }
    for (const struct bm_btl_absent *a = bm_btl_registry_absent; a->name; a++)
        printf("  %-6s not built: %s\n", a->name, a->why);
}

/* ---- parameters --------------------------------------------------------- */

struct params_ctx {
    const char *filter; /* NULL: everything */
    int shown;
    const char *last_component; /* several tables of one component share a heading */
};

/* The current value line: from the environment (checked) or the default. */
static void print_current(const struct bm_param *p)
{
    const char *env = getenv(p->name);
    if (!env) {
        printf("      current: default\n");
        return;
    }
    char err[320];
    if (bm_util_param_check(p, env, err, sizeof(err)) == BM_OK)
        printf("      current: \"%s\" (from the environment)\n", env);
    else
        printf("      current: \"%s\" (from the environment) INVALID: %s\n", env, err);
}

static void print_param(const struct bm_param *p)
{
    char accepted[256];
    bm_util_param_describe_accepted(p, accepted, sizeof(accepted));
    printf("  %s (%s, default \"%s\")%s\n", p->name, bm_util_param_type_name(p->type),
           p->def ? p->def : "", (p->flags & BM_PARAM_F_DEBUG) ? " [debugging]" : "");
    print_current(p);
    printf("      accepts: %s\n", accepted);
    print_wrapped(p->help ? p->help : "(no help)", 6);
}

/* Filter: a component, a layer ("btl" for "btl/..."), or a parameter name. */
static bool table_matches(const struct bm_param_table *t, const char *filter)
{
    size_t n = strlen(filter);
    return strcmp(t->component, filter) == 0 ||
           (strncmp(t->component, filter, n) == 0 && t->component[n] == '/');
}

static void params_visit(const struct bm_param_table *t, void *arg)
{
    struct params_ctx *ctx = arg;
    bool whole = !ctx->filter || table_matches(t, ctx->filter);
    bool header = false;
    for (size_t i = 0; i < t->count; i++) {
        if (!whole && strcasecmp(t->params[i].name, ctx->filter) != 0)
            continue;
        if (!header && !(ctx->last_component && strcmp(ctx->last_component, t->component) == 0))
            printf("%s%s:\n", ctx->shown ? "\n" : "", t->component);
        header = true;
        ctx->last_component = t->component;
        print_param(&t->params[i]);
        ctx->shown++;
    }
}

static void list_component(const struct bm_param_table *t, void *arg)
{
    (void)arg;
    fprintf(stderr, " %s", t->component);
}

static int report_params(const char *filter)
{
    struct params_ctx ctx = {filter, 0, NULL};
    bm_util_params_foreach(params_visit, &ctx);
    if (ctx.shown)
        return 0;
    fprintf(stderr, "bm_info: no parameter matches '%s'. Components:", filter ? filter : "");
    bm_util_params_foreach(list_component, NULL);
    fprintf(stderr, "\n");
    return 2;
}

/* Bad values are errors (exit 1); unknown names get a "did you mean". */
static int report_check(void)
{
    if (bm_util_params_check_env(true) != BM_OK) {
        fprintf(stderr, "bm_info: some BM_* variables have invalid values (see above)\n");
        return 1;
    }
    printf("Every BM_* variable that names a parameter has a valid value.\n");
    return 0;
}

/* ---- help topics -------------------------------------------------------- */

static void topic_visit(const struct bm_util_help_topic *t, void *arg)
{
    (void)arg;
    printf("  %-26s %s\n", t->name, t->title);
    if (t->args && t->args[0]) {
        char line[512];
        snprintf(line, sizeof(line), "arguments: %s", t->args);
        print_wrapped(line, 6);
    }
}

int main(int argc, char **argv)
{
    if (argc == 1) {
        report_build();
        report_deps();
        report_launchers();
        report_transports();
        return 0;
    }
    if (strcmp(argv[1], "--params") == 0 && argc <= 3)
        return report_params(argc == 3 ? argv[2] : NULL);
    if (strcmp(argv[1], "--check") == 0 && argc == 2)
        return report_check();
    if (strcmp(argv[1], "--topics") == 0 && argc == 2) {
        printf("Help messages (src/util/help.h):\n");
        bm_util_help_foreach(topic_visit, NULL);
        return 0;
    }
    if ((strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) && argc == 2) {
        usage(stdout);
        return 0;
    }
    static const char *const known[] = {"--params", "--check", "--topics", "--help", "-h"};
    bool is_known = false;
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        is_known |= strcmp(argv[1], known[i]) == 0;
    if (is_known)
        fprintf(stderr, "bm_info: too many arguments after %s\n", argv[1]);
    else
        fprintf(stderr, "bm_info: unknown option '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
