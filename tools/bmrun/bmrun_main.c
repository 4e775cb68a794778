/* bmrun's entry point: the usage text (which also documents the exit codes
 * and the environment given to ranks), the BM_RUN_* tunables, and the switch
 * between controller and daemon mode. The command line is parsed in
 * bmrun_opts.c. */
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

const char *bm_run_version(void)
{
    return BM_VERSION;
}

void bm_run_usage(FILE *f)
{
    fprintf(
        f,
        "usage: bmrun -n N [options] program [args...] [: -n M [-x VAR] program2 [args...]]...\n"
        "\n"
        "Start N processes (ranks) of program, on this host or across hosts. Also installed\n"
        "as mpirun and mpiexec; Open MPI's spellings work (-np, -hostfile, --oversubscribe,\n"
        "one or two dashes), and --mca NAME VALUE is mapped to the BM_* parameter.\n"
        "\n"
        "options:\n"
        "  -n, -np N                number of ranks (default: total slots of --host/--hostfile,\n"
        "                           or -N times the hosts)\n"
        "  -H, --host h1[:s],...    hosts, each with s slots (default 1)\n"
        "  --hostfile, --machinefile F  one host per line: \"name [slots=N]\" or \"name:N\"\n"
        "  -N, --npernode N         N ranks per host (also --map-by ppr:N:node)\n"
        "  --map-by slot|core|node  fill each host's slots in order (slot, core) or go round\n"
        "                           the hosts one rank at a time (node)\n"
        "  --oversubscribe          allow more ranks than the slots of --host/--hostfile\n"
        "                           (without a host list, this host takes any number)\n"
        "  --bind-to OBJ            each rank of a host gets a CPU of its own (first threads\n"
        "                           of distinct cores first) when the host runs 2 or more\n"
        "                           ranks and has a CPU per rank, and is bound to that CPU\n"
        "                           (default; hwthread) or to the CPUs of the object around\n"
        "                           it, as Open MPI: core, l1cache, l2cache, l3cache, numa,\n"
        "                           socket (package), board; none: the kernel places ranks\n"
        "  --report-bindings        each rank prints the CPUs it is bound to on stderr\n"
        "  --display-map            print each rank's host before starting the job\n"
        "  --tag-output             prefix every output line with \"[rank] \"\n"
        "  --timeout S              stop the job after S seconds and name unfinished ranks\n"
        "  -x VAR[=VAL]             set VAR (or pass bmrun's VAR) in the ranks' environment\n"
        "  --stdin 0|none           rank that receives bmrun's input (default 0)\n"
        "  --mca NAME VALUE         Open MPI parameter: mapped to its BM_* equivalent\n"
        "                           (btl, btl_tcp_if_include, ...) or refused, naming it\n"
        "  --launch-agent 'CMD'     how to run a command on a remote host; {host} is replaced\n"
        "                           by the host name (default: $BM_RUN_LAUNCH_AGENT or\n"
        "                           'ssh -x {host}')\n"
        "  -h, --help               this text;  --version: bmrun's version\n"
        "MPICH spellings: -ppn N (= -N), -hosts (= --host), -f F (= --hostfile),\n"
        "-genv VAR VAL (= -x VAR=VAL).\n"
        "\n"
        "Placement: ranks fill the first host's slots, then the next host's (--map-by node:\n"
        "round robin). More ranks than slots is an error unless --oversubscribe, which sends\n"
        "the rest round the hosts. Hosts named localhost or this machine's name run directly,\n"
        "others through the launch agent, which starts a bmrun daemon there (same path as\n"
        "this bmrun). MPMD: programs separated by ':' get consecutive ranks.\n"
        "\n"
        "Ranks get BMRUN_RANK, BMRUN_SIZE, BMRUN_LOCAL_RANK, BMRUN_LOCAL_SIZE, BMRUN_NODE,\n"
        "BMRUN_NUM_NODES, BMRUN_HOSTNAME, BMRUN_JOBID, BMRUN_KVS, BMRUN_SECRET, BMRUN_APPNUM\n"
        "and BMRUN_BIND_TO; remote ranks also get every BM_* variable of bmrun's environment.\n"
        "stdin of rank 0 is bmrun's stdin; the other ranks read /dev/null.\n"
        "\n"
        "exit status: 0 when every rank exits 0; else the first failing rank's exit status,\n"
        "or 128+N when it died of signal N; the code given to abort (1 for 0); 124 on\n"
        "--timeout; 128+N when bmrun got signal N; 127 when the program cannot be found or\n"
        "executed; 2 on bad usage or a bad BM_* parameter value; 1 when the launch failed.\n");
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
    int rc = bm_run_opts_parse(argc, argv, &opts);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    /* A bad BM_* value would stop every rank; say it once, before launching. */
    if (bm_util_params_check_env(true) != BM_OK) {
        fprintf(stderr, "bmrun: not starting the job: fix the parameter(s) above\n");
        return BM_RUN_EXIT_USAGE;
    }
    return bm_run_ctl_run(&opts);
}
