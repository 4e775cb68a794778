/* bmrun's command line, with the habits of Open MPI's mpirun (and a few of
 * MPICH's mpiexec): every long option also with one dash (-np, -hostfile,
 * -oversubscribe), "--opt=value" or "--opt value", MPMD programs separated
 * by ':' (each with its own -n and -x), and --mca NAME VALUE mapped to the
 * BM_* parameter that does the same, or refused with the equivalent named.
 * An unknown option is answered with the closest known one. */
#include "bmrun.h"
#include "util/params.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum opt_id {
    OPT_NP,
    OPT_NPERNODE,
    OPT_HOST,
    OPT_HOSTFILE,
    OPT_AGENT,
    OPT_BIND,
    OPT_MAP,
    OPT_OVERSUB,
    OPT_REPORT,
    OPT_DISPLAY_MAP,
    OPT_TAG,
    OPT_TIMEOUT,
    OPT_X,
    OPT_GENV,
    OPT_MCA,
    OPT_STDIN,
    OPT_ROOT,
    OPT_HELP,
    OPT_VERSION,
};

/* Takes 0, 1 or 2 values; per_app options may be given again after ':'. */
struct opt {
    const char *names[6];
    enum opt_id id;
    int nvals;
    bool per_app;
};

static const struct opt opts_table[] = {
    {{"-n", "-np", "--np", "--n"}, OPT_NP, 1, true},
    {{"-N", "--npernode", "-npernode", "-ppn"}, OPT_NPERNODE, 1, false},
    {{"--host", "-host", "-H", "-hosts", "--hosts"}, OPT_HOST, 1, false},
    {{"--hostfile", "-hostfile", "--machinefile", "-machinefile", "-f"}, OPT_HOSTFILE, 1, false},
    {{"--launch-agent", "-launch-agent"}, OPT_AGENT, 1, false},
    {{"--bind-to", "-bind-to"}, OPT_BIND, 1, false},
    {{"--map-by", "-map-by"}, OPT_MAP, 1, false},
    {{"--oversubscribe", "-oversubscribe"}, OPT_OVERSUB, 0, false},
    {{"--report-bindings", "-report-bindings"}, OPT_REPORT, 0, false},
    {{"--display-map", "-display-map"}, OPT_DISPLAY_MAP, 0, false},
    {{"--tag-output", "-tag-output"}, OPT_TAG, 0, false},
    {{"--timeout", "-timeout"}, OPT_TIMEOUT, 1, false},
    {{"-x"}, OPT_X, 1, true},
    {{"-genv", "--genv"}, OPT_GENV, 2, false},
    {{"--mca", "-mca", "--gmca", "-gmca"}, OPT_MCA, 2, false},
    {{"--stdin", "-stdin"}, OPT_STDIN, 1, false},
    {{"--allow-run-as-root", "-allow-run-as-root"}, OPT_ROOT, 0, false},
    {{"-h", "--help", "-help"}, OPT_HELP, 0, false},
    {{"--version", "-version", "-V"}, OPT_VERSION, 0, false},
};
#define NOPTS (sizeof(opts_table) / sizeof(opts_table[0]))

static int opts_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int opts_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bmrun: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n\n");
    bm_run_usage(stderr);
    return BM_RUN_EXIT_USAGE;
}

/* The option a word names ("--np=4" names --np), or NULL. */
static const struct opt *opts_find(const char *word, const char **inline_val)
{
    *inline_val = NULL;
    for (size_t i = 0; i < NOPTS; i++) {
        for (const char *const *n = opts_table[i].names; *n; n++) {
            size_t len = strlen(*n);
            if (strncmp(word, *n, len) != 0)
                continue;
            if (word[len] == '\0')
                return &opts_table[i];
            if (word[len] == '=' && (*n)[1] == '-' && opts_table[i].nvals == 1) {
                *inline_val = word + len + 1;
                return &opts_table[i];
            }
        }
    }
    return NULL;
}

/* The known name closest to word: by edit distance, or a known name that
 * word begins (--tag-out, --report). *close_out says whether it is close
 * enough to ask "did you mean"; otherwise it is only named. */
static const char *opts_closest(const char *word, bool *close_out)
{
    char w[64];
    snprintf(w, sizeof(w), "%.*s", (int)strcspn(word, "="), word);
    const char *best = NULL, *prefix_of = NULL;
    size_t bestd = (size_t)-1, len = strlen(w);
    for (size_t i = 0; i < NOPTS; i++)
        for (const char *const *n = opts_table[i].names; *n; n++) {
            size_t d = bm_util_params_distance(w, *n);
            if (d < bestd) {
                bestd = d;
                best = *n;
            }
            /* At least 3 letters past the dashes, and the longest spelling. */
            if (len >= strspn(w, "-") + 3 && strncmp(*n, w, len) == 0 &&
                (!prefix_of || strlen(*n) > strlen(prefix_of)))
                prefix_of = *n;
        }
    *close_out = true;
    if (bestd <= (len > 9 ? 3 : 2) && bestd < len)
        return best;
    if (prefix_of)
        return prefix_of;
    *close_out = false;
    return best;
}

static bool parse_int(const char *s, int min, int max, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < min || v > max)
        return false;
    *out = (int)v;
    return true;
}

/* ---- --map-by ---------------------------------------------------------- */

static int opts_map_by(struct bm_run_opts *o, const char *v)
{
    char buf[128];
    snprintf(buf, sizeof(buf), "%s", v);
    for (char *p = buf; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    /* Modifiers after ':' (Open MPI: "node:oversubscribe"); ppr keeps its own. */
    char *mod = strncmp(buf, "ppr:", 4) == 0 ? NULL : strchr(buf, ':');
    if (mod) {
        *mod++ = '\0';
        for (char *m = strtok(mod, ":,"); m; m = strtok(NULL, ":,")) {
            if (strcmp(m, "oversubscribe") == 0)
                o->oversubscribe = true;
            else if (strcmp(m, "nooversubscribe") == 0)
                o->oversubscribe = false;
            else
                return opts_error("--map-by %s: unknown modifier '%s' (bmrun knows "
                                  "oversubscribe and nooversubscribe)",
                                  v, m);
        }
    }
    if (strcmp(buf, "slot") == 0 || strcmp(buf, "core") == 0 || strcmp(buf, "hwthread") == 0) {
        o->map_by = BM_RUN_MAP_SLOT;
    } else if (strcmp(buf, "node") == 0) {
        o->map_by = BM_RUN_MAP_NODE;
    } else if (strncmp(buf, "ppr:", 4) == 0) {
        int n;
        char *colon = strchr(buf + 4, ':');
        if (!colon || strcmp(colon + 1, "node") != 0) {
            return opts_error("--map-by %s: bmrun places processes per node only "
                              "(ppr:N:node); for other objects use --map-by core or slot",
                              v);
        }
        *colon = '\0';
        if (!parse_int(buf + 4, 1, 1 << 20, &n))
            return opts_error("--map-by %s: N in ppr:N:node must be 1 or more", v);
        o->npernode = n;
        o->map_by = BM_RUN_MAP_SLOT;
    } else {
        return opts_error("--map-by %s: bmrun maps by slot, core (the same: one rank per slot, "
                          "hosts in order), node (round robin over the hosts) or ppr:N:node; "
                          "socket, numa and cache levels are not placed apart",
                          v);
    }
    return 0;
}

/* ---- --mca ------------------------------------------------------------- */

/* Open MPI BTL names and bitmover's transports. */
static const struct {
    const char *ompi, *bm;
} mca_btls[] = {
    {"self", "self"}, {"vader", "sm"}, {"sm", "sm"}, {"tcp", "tcp"}, {"ofi", "ofi"},
};

static bool mca_btl_absent(const char *name)
{
    static const char *const absent[] = {"openib",   "uct",     "smcuda", "usnic", "ugni",
                                         "portals4", "sm_cuda", "scif",   NULL};
    for (const char *const *a = absent; *a; a++)
        if (strcmp(name, *a) == 0)
            return true;
    return false;
}

/* "--mca btl self,vader,tcp" -> BM_BTL=self,sm,tcp; "^openib" excludes nothing. */
static int mca_btl(const char *val, char *out, size_t len)
{
    bool exclude = val[0] == '^';
    char copy[512];
    snprintf(copy, sizeof(copy), "%s", exclude ? val + 1 : val);
    size_t o = (size_t)snprintf(out, len, "%s", exclude ? "^" : "");
    int kept = 0;
    for (char *c = strtok(copy, ","); c; c = strtok(NULL, ",")) {
        const char *bm = NULL;
        for (size_t i = 0; i < sizeof(mca_btls) / sizeof(mca_btls[0]); i++)
            if (strcmp(c, mca_btls[i].ompi) == 0)
                bm = mca_btls[i].bm;
        if (!bm && exclude && mca_btl_absent(c))
            continue; /* excluding what bitmover does not have changes nothing */
        if (!bm)
            return opts_error("--mca btl %s: bitmover has no '%s' transport; its transports "
                              "are self, sm (Open MPI's vader), tcp, dgram (reliable datagrams, "
                              "the usnic design over UDP) and ofi: set BM_BTL (bm_info lists "
                              "what this build has)",
                              val, c);
        o += (size_t)snprintf(out + o, o < len ? len - o : 0, "%s%s", kept++ ? "," : "", bm);
    }
    if (kept == 0)
        out[0] = '\0'; /* "^openib": everything stays */
    return 0;
}

/* Open MPI parameters with a bitmover equivalent of the same meaning. */
static const struct {
    const char *mca, *bm;
} mca_renames[] = {
    {"btl_tcp_if_include", "BM_BTL_TCP_IF_INCLUDE"},
    {"btl_tcp_if_exclude", "BM_BTL_TCP_IF_EXCLUDE"},
    {"btl_tcp_links", "BM_BTL_TCP_LINKS"},
    {"btl_tcp_eager_limit", "BM_BTL_TCP_EAGER_LIMIT"},
    {"btl_tcp_max_send_size", "BM_BTL_TCP_MAX_SEND_SIZE"},
    {"btl_tcp_sndbuf", "BM_BTL_TCP_SNDBUF"},
    {"btl_tcp_rcvbuf", "BM_BTL_TCP_RCVBUF"},
    {"btl_vader_eager_limit", "BM_BTL_SM_EAGER_LIMIT"},
    {"btl_vader_max_send_size", "BM_BTL_SM_MAX_SEND_SIZE"},
    {"btl_sm_eager_limit", "BM_BTL_SM_EAGER_LIMIT"},
    {"btl_sm_max_send_size", "BM_BTL_SM_MAX_SEND_SIZE"},
    {"btl_self_eager_limit", "BM_BTL_SELF_EAGER_LIMIT"},
};

/* Parameters that are bmrun options in bitmover. */
static const struct {
    const char *mca, *option;
} mca_options[] = {
    {"hwloc_base_binding_policy", "--bind-to"},
    {"rmaps_base_mapping_policy", "--map-by"},
    {"rmaps_base_oversubscribe", "--oversubscribe"},
    {"plm_rsh_agent", "--launch-agent"},
    {"orte_tag_output", "--tag-output"},
};

static int opts_setenv(struct bm_run_opts *o, const char *name, const char *val)
{
    (void)o;
    if (setenv(name, val, 1) != 0)
        return opts_error("cannot set %s", name);
    return 0;
}

static int opts_apply(struct bm_run_opts *o, enum opt_id id, const char *v, const char *v2);

static int opts_mca(struct bm_run_opts *o, const char *name, const char *val)
{
    char out[512];
    if (strcmp(name, "btl") == 0) {
        int rc = mca_btl(val, out, sizeof(out));
        if (rc || !out[0])
            return rc;
        return opts_setenv(o, "BM_BTL", out);
    }
    if (strcmp(name, "pml") == 0) {
        if (strcmp(val, "ob1") == 0 || strcmp(val, "^ucx") == 0 || strcmp(val, "^cm") == 0)
            return 0; /* bitmover's one PML is the ob1 design */
        return opts_error("--mca pml %s: bitmover has one point-to-point layer (the ob1 "
                          "design, with striping and failover); there is nothing to choose",
                          val);
    }
    if (strcmp(name, "mpi_yield_when_idle") == 0) {
        bool on = strcmp(val, "1") == 0 || strcasecmp(val, "true") == 0;
        return opts_setenv(o, "BM_PML_IDLE_YIELD", on ? "1" : "0");
    }
    for (size_t i = 0; i < sizeof(mca_renames) / sizeof(mca_renames[0]); i++)
        if (strcmp(name, mca_renames[i].mca) == 0)
            return opts_setenv(o, mca_renames[i].bm, val);
    for (size_t i = 0; i < sizeof(mca_options) / sizeof(mca_options[0]); i++) {
        if (strcmp(name, mca_options[i].mca) != 0)
            continue;
        const struct opt *op;
        const char *dummy;
        op = opts_find(mca_options[i].option, &dummy);
        if (op->nvals == 0) {
            if (strcmp(val, "0") == 0 || strcasecmp(val, "false") == 0)
                return 0;
            return opts_apply(o, op->id, NULL, NULL);
        }
        return opts_apply(o, op->id, val, NULL);
    }
    if (strncmp(name, "btl_openib", 10) == 0 || strncmp(name, "btl_uct", 7) == 0 ||
        strncmp(name, "btl_usnic", 9) == 0)
        return opts_error("--mca %s: bitmover has no %.*s transport; its tunables are BM_* "
                          "variables (bm_info --params btl)",
                          name, (int)strcspn(name + 4, "_"), name + 4);
    if (strncmp(name, "coll", 4) == 0 || strcmp(name, "osc") == 0 || strcmp(name, "mtl") == 0)
        return opts_error("--mca %s: bitmover has one implementation of that (no components "
                          "to choose); its tunables are BM_* variables: bm_info --params",
                          name);
    if (strncmp(name, "oob", 3) == 0)
        return opts_error("--mca %s: bmrun's own connections use every address the host has "
                          "(BM_RUN_CONNECT_TIMEOUT, BM_RTE_CONNECT_TIMEOUT); there is no "
                          "interface choice",
                          name);
    return opts_error("--mca %s %s: no bitmover equivalent known; bitmover's tunables are BM_* "
                      "environment variables (bm_info --params lists them; set them in bmrun's "
                      "environment or with -x BM_NAME=value)",
                      name, val);
}

/* ---- applying one option ---------------------------------------------------- */

static struct bm_run_app *opts_app(struct bm_run_opts *o)
{
    return &o->apps[o->napps - 1];
}

static int opts_apply(struct bm_run_opts *o, enum opt_id id, const char *v, const char *v2)
{
    struct bm_run_app *app = opts_app(o);
    int n;
    switch (id) {
    case OPT_NP:
        if (!parse_int(v, 1, 1 << 20, &n))
            return opts_error("bad number of ranks '%s' (expected 1 or more)", v);
        app->np = n;
        return 0;
    case OPT_NPERNODE:
        if (!parse_int(v, 1, 1 << 20, &n))
            return opts_error("bad number of ranks per node '%s' (expected 1 or more)", v);
        o->npernode = n;
        return 0;
    case OPT_HOST:
        if (!*v)
            return opts_error("--host needs a host list");
        o->hosts = v;
        return 0;
    case OPT_HOSTFILE:
        if (!*v)
            return opts_error("--hostfile needs a file name");
        o->hostfile = v;
        return 0;
    case OPT_AGENT:
        if (!*v)
            return opts_error("--launch-agent needs a command");
        o->agent = v;
        return 0;
    case OPT_BIND: {
        /* Open MPI's objects; its qualifiers change nothing here (bmrun
         * never fails a job for want of a binding, it says why). */
        static const char *const objs[] = {"none",    "hwthread", "core",   "l1cache", "l2cache",
                                           "l3cache", "numa",     "socket", "package", "board"};
        size_t len = strcspn(v, ":");
        const char *q = v + len;
        while (*q == ':') {
            q++;
            size_t ql = strcspn(q, ":");
            if (!((ql == 16 && strncasecmp(q, "overload-allowed", ql) == 0) ||
                  (ql == 12 && strncasecmp(q, "if-supported", ql) == 0)))
                return opts_error("--bind-to %s: unknown qualifier '%.*s' (Open MPI's are "
                                  "overload-allowed and if-supported)",
                                  v, (int)ql, q);
            q += ql;
        }
        for (size_t k = 0; k < sizeof(objs) / sizeof(objs[0]); k++)
            if (strlen(objs[k]) == len && strncasecmp(v, objs[k], len) == 0) {
                o->bind_to = objs[k];
                return 0;
            }
        return opts_error("--bind-to %s: bmrun binds to hwthread, core, l1cache, l2cache, "
                          "l3cache, numa, socket (package), board or none, as Open MPI does",
                          v);
    }
    case OPT_MAP:
        return opts_map_by(o, v);
    case OPT_OVERSUB:
        o->oversubscribe = true;
        return 0;
    case OPT_REPORT:
        o->report_bindings = true;
        return 0;
    case OPT_DISPLAY_MAP:
        o->display_map = true;
        return 0;
    case OPT_TAG:
        o->tag_output = true;
        return 0;
    case OPT_TIMEOUT: {
        char *end;
        double t = strtod(v, &end);
        if (*end || !(t > 0) || t > 1e9)
            return opts_error("bad timeout '%s' (expected seconds > 0)", v);
        o->timeout = t;
        return 0;
    }
    case OPT_X:
        if (!v[0] || v[0] == '=')
            return opts_error("-x needs VAR or VAR=VALUE");
        app->xvars[app->nx++] = (char *)v;
        return 0;
    case OPT_GENV: {
        char *kv = NULL;
        if (!v[0] || asprintf(&kv, "%s=%s", v, v2) < 0)
            return opts_error("-genv needs VAR VALUE");
        app->xvars[app->nx++] = kv; /* lives as long as bmrun */
        return 0;
    }
    case OPT_MCA:
        return opts_mca(o, v, v2);
    case OPT_STDIN:
        if (strcmp(v, "0") == 0 || strcmp(v, "rank0") == 0) {
            o->stdin_rank = 0;
            return 0;
        }
        if (strcmp(v, "none") == 0) {
            o->stdin_rank = -1;
            return 0;
        }
        return opts_error("--stdin %s: bmrun forwards its input to rank 0 (--stdin 0, the "
                          "default) or to no rank (--stdin none)",
                          v);
    case OPT_ROOT:
        return 0; /* bmrun runs as any user; accepted because Open MPI users type it */
    case OPT_HELP:
    case OPT_VERSION:
        break;
    }
    return 0;
}

int bm_run_opts_parse(int argc, char **argv, struct bm_run_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->apps = calloc((size_t)argc + 1, sizeof(*o->apps));
    if (!o->apps)
        return BM_RUN_EXIT_FAILURE;
    o->napps = 1;
    o->apps[0].xvars = calloc((size_t)argc + 1, sizeof(char *));
    if (!o->apps[0].xvars)
        return BM_RUN_EXIT_FAILURE;
    int i = 1;
    for (;;) {
        struct bm_run_app *app = opts_app(o);
        for (; i < argc; i++) {
            const char *a = argv[i];
            if (strcmp(a, "--") == 0) {
                i++;
                break;
            }
            if (a[0] != '-' || a[1] == '\0')
                break;
            const char *inl;
            const struct opt *op = opts_find(a, &inl);
            if (!op) {
                bool close;
                const char *near = opts_closest(a, &close);
                if (close)
                    return opts_error("unknown option '%s'; did you mean %s?", a, near);
                return opts_error("unknown option '%s' (the closest bmrun option is %s; bmrun "
                                  "--help lists them all)",
                                  a, near);
            }
            if (op->id == OPT_HELP) {
                bm_run_usage(stdout);
                return -1;
            }
            if (op->id == OPT_VERSION) {
                printf("bmrun (bitmover) %s\n", bm_run_version());
                return -1;
            }
            if (o->napps > 1 && !op->per_app)
                return opts_error("%s after ':' : only -n and -x may differ between the "
                                  "programs of an MPMD job; give the other options before the "
                                  "first program",
                                  a);
            const char *v = inl, *v2 = NULL;
            if (op->nvals >= 1 && !v) {
                if (i + 1 >= argc)
                    return opts_error("%s needs a value", a);
                v = argv[++i];
            }
            if (op->nvals == 2) {
                if (i + 1 >= argc)
                    return opts_error("%s needs two values (NAME VALUE)", a);
                v2 = argv[++i];
            }
            int rc = opts_apply(o, op->id, v, v2);
            if (rc)
                return rc;
        }
        if (i >= argc || strcmp(argv[i], ":") == 0)
            return opts_error(o->napps > 1 ? "no program given after ':'" : "no program given");
        app->argv = &argv[i];
        int start = i;
        while (i < argc && strcmp(argv[i], ":") != 0)
            i++;
        if (i >= argc)
            break;
        argv[i] = NULL; /* ends this program's arguments */
        (void)start;
        i++;
        struct bm_run_app *next = &o->apps[o->napps++];
        next->xvars = calloc((size_t)argc + 1, sizeof(char *));
        if (!next->xvars)
            return BM_RUN_EXIT_FAILURE;
    }
    if (o->hosts && o->hostfile)
        return opts_error("--host and --hostfile cannot be used together");
    if (o->napps > 1)
        for (int k = 0; k < o->napps; k++)
            if (!o->apps[k].np)
                return opts_error("program %d of the MPMD job (%s) has no -n: give each "
                                  "program its number of ranks",
                                  k + 1, o->apps[k].argv[0]);
    if (!o->apps[0].np && !o->hosts && !o->hostfile && !o->npernode)
        return opts_error("give the number of ranks with -n N");
    return 0;
}
