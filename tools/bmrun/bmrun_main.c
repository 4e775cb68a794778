/* bmrun's entry point: the command line, the usage text (which also documents
 * the exit codes and the environment given to ranks), the BM_RUN_* tunables,
 * and the switch between controller and daemon mode. */
#include "bmrun.h"
#include "bm_config.h"
#include "runtime/rte_launch.h"
#include "util/params.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct bm_rte_launch_config bm_run_cfg;

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: bmrun -n N [options] program [args...]\n"
        "\n"
        "Start N processes (ranks) of program, on this host or across hosts.\n"
        "\n"
        "options:\n"
        "  -n, -np, --np N          number of ranks (default: total slots of --host/--hostfile)\n"
        "  --host h1[:s],h2[:s],..  hosts, each with s slots (default 1)\n"
        "  --hostfile F             one host per line: \"name [slots=N]\" or \"name:N\"; # "
        "comments\n"
        "  --launch-agent 'CMD'     how to run a command on a remote host; {host} is replaced\n"
        "                           by the host name (default: $BM_RUN_LAUNCH_AGENT or\n"
        "                           'ssh -x {host}')\n"
        "  --bind-to core|none      core (default): each rank of a host bound to a CPU of its\n"
        "                           own, first threads of distinct cores first, when the\n"
        "                           host runs 2 or more ranks and has a CPU per rank;\n"
        "                           none: the kernel places ranks\n"
        "  --tag-output             prefix every output line with \"[rank] \"\n"
        "  --timeout S              stop the job after S seconds and name unfinished ranks\n"
        "  -x VAR[=VAL]             set VAR (or pass bmrun's VAR) in every rank's environment\n"
        "  -h, --help               this text;  --version: bmrun's version\n"
        "\n"
        "Placement: ranks fill the first host's slots, then the next host's; when N exceeds\n"
        "all slots the remaining ranks go round the hosts one at a time. Hosts named\n"
        "localhost or this machine's name run directly, others through the launch agent,\n"
        "which starts a bmrun daemon there (same path as this bmrun).\n"
        "\n"
        "Ranks get BMRUN_RANK, BMRUN_SIZE, BMRUN_LOCAL_RANK, BMRUN_LOCAL_SIZE, BMRUN_NODE,\n"
        "BMRUN_NUM_NODES, BMRUN_HOSTNAME, BMRUN_JOBID, BMRUN_KVS, BMRUN_SECRET and\n"
        "BMRUN_BIND_TO; remote ranks also get every BM_* variable of bmrun's environment.\n"
        "stdin is /dev/null.\n"
        "\n"
        "exit status: 0 when every rank exits 0; else the first failing rank's exit status,\n"
        "or 128+N when it died of signal N; the code given to abort (1 for 0); 124 on\n"
        "--timeout; 128+N when bmrun got signal N; 127 when the program cannot be found or\n"
        "executed; 2 on bad usage or a bad BM_* parameter value; 1 when the launch failed.\n");
}

static int bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int bad_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bmrun: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n\n");
    usage(stderr);
    return BM_RUN_EXIT_USAGE;
}

/* "--opt value" or "--opt=value"; advances *i past what it used. */
static const char *opt_value(int argc, char **argv, int *i, const char *name, bool *missing)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    *missing = false;
    if (a[n] == '=')
        return a + n + 1;
    if (*i + 1 >= argc) {
        *missing = true;
        return NULL;
    }
    return argv[++*i];
}

static bool opt_is(const char *a, const char *name)
{
    size_t n = strlen(name);
    return strncmp(a, name, n) == 0 && (a[n] == '\0' || (a[n] == '=' && name[1] == '-'));
}

/* Started with stdin, stdout or stderr closed, the first socket or pipe
 * would take that number and rank output would land in it. */
static void std_fds_open(void)
{
    for (int fd = 0; fd < 3; fd++) {
        if (fcntl(fd, F_GETFD) >= 0)
            continue;
        int n = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (n >= 0 && n != fd) {
            dup2(n, fd);
            close(n);
        }
    }
}

int main(int argc, char **argv)
{
    std_fds_open();
    if (bm_rte_launch_config_load(&bm_run_cfg) != BM_OK)
        return BM_RUN_EXIT_USAGE;
    if (argc >= 2 && strcmp(argv[1], "--daemon") == 0)
        return bm_run_daemon_main(argc, argv);

    /* Static: the options live as long as the process (and stay reachable). */
    static struct bm_run_opts opts;
    opts.xvars = calloc((size_t)argc, sizeof(char *));
    if (!opts.xvars)
        return BM_RUN_EXIT_FAILURE;
    int i;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool missing = false;
        const char *v;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-')
            break;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            printf("bmrun (bitmover) %s\n", BM_VERSION);
            return 0;
        } else if (opt_is(a, "-n") || opt_is(a, "-np") || opt_is(a, "--np")) {
            const char *name = opt_is(a, "-n") ? "-n" : opt_is(a, "-np") ? "-np" : "--np";
            v = opt_value(argc, argv, &i, name, &missing);
            if (missing)
                return bad_usage("%s needs a number of ranks", a);
            char *end;
            long np = strtol(v, &end, 10);
            if (*end || np < 1 || np > 1 << 20)
                return bad_usage("bad number of ranks '%s' (expected 1 or more)", v);
            opts.np = (int)np;
        } else if (opt_is(a, "--host") || opt_is(a, "-H")) {
            v = opt_value(argc, argv, &i, opt_is(a, "-H") ? "-H" : "--host", &missing);
            if (missing || !*v)
                return bad_usage("%s needs a host list", a);
            opts.hosts = v;
        } else if (opt_is(a, "--hostfile") || opt_is(a, "--machinefile")) {
            v = opt_value(argc, argv, &i, opt_is(a, "--hostfile") ? "--hostfile" : "--machinefile",
                          &missing);
            if (missing || !*v)
                return bad_usage("%s needs a file name", a);
            opts.hostfile = v;
        } else if (opt_is(a, "--launch-agent")) {
            v = opt_value(argc, argv, &i, "--launch-agent", &missing);
            if (missing || !*v)
                return bad_usage("%s needs a command", a);
            opts.agent = v;
        } else if (opt_is(a, "--bind-to")) {
            v = opt_value(argc, argv, &i, "--bind-to", &missing);
            if (missing || (strcmp(v, "core") != 0 && strcmp(v, "none") != 0))
                return bad_usage("--bind-to needs core or none");
            opts.bind_to = v;
        } else if (strcmp(a, "--tag-output") == 0) {
            opts.tag_output = true;
        } else if (opt_is(a, "--timeout")) {
            v = opt_value(argc, argv, &i, "--timeout", &missing);
            if (missing)
                return bad_usage("%s needs a number of seconds", a);
            char *end;
            double t = strtod(v, &end);
            if (*end || !(t > 0) || t > 1e9)
                return bad_usage("bad timeout '%s' (expected seconds > 0)", v);
            opts.timeout = t;
        } else if (strcmp(a, "-x") == 0) {
            if (i + 1 >= argc || !argv[i + 1][0] || argv[i + 1][0] == '=')
                return bad_usage("%s needs VAR or VAR=VALUE", a);
            opts.xvars[opts.nx++] = argv[++i];
        } else {
            return bad_usage("unknown option '%s'", a);
        }
    }
    if (i >= argc)
        return bad_usage("%s", "no program given");
    if (opts.hosts && opts.hostfile)
        return bad_usage("%s", "--host and --hostfile cannot be used together");
    if (!opts.np && !opts.hosts && !opts.hostfile)
        return bad_usage("%s", "give the number of ranks with -n N");
    opts.argv = &argv[i];
    /* A bad BM_* value would stop every rank; say it once, before launching. */
    if (bm_util_params_check_env() != BM_OK) {
        fprintf(stderr, "bmrun: not starting the job: fix the parameter(s) above\n");
        return BM_RUN_EXIT_USAGE;
    }
    return bm_run_ctl_run(&opts);
}
