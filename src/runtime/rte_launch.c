/* The BM_RUN_* tunables of the bmrun launcher, declared in the runtime
 * library so that every program linked with bitmover knows them (bm_info
 * --params, typo warnings); see rte_launch.h. */
#include "runtime/rte_launch.h"
#include "util/params.h"

#include <stddef.h>

static const struct bm_param launch_params[] = {
    {.name = "BM_RUN_KILL_GRACE",
     .type = BM_PARAM_DOUBLE,
     .def = "2",
     .min = 0,
     .max = 3600,
     .help = "Seconds bmrun waits after SIGTERM before it sends SIGKILL to the ranks of a job "
             "it is stopping. Raise it when ranks need time to write results on SIGTERM.",
     .offset = offsetof(struct bm_rte_launch_config, kill_grace)},
    {.name = "BM_RUN_DAEMON_TIMEOUT",
     .type = BM_PARAM_DOUBLE,
     .def = "60",
     .min = 1,
     .max = 3600,
     .help = "Seconds a bmrun daemon started on a remote host through the launch agent has to "
             "connect back before the job is stopped (slow ssh log-ins need more).",
     .offset = offsetof(struct bm_rte_launch_config, daemon_timeout)},
    {.name = "BM_RUN_HELLO_TIMEOUT",
     .type = BM_PARAM_DOUBLE,
     .def = "10",
     .min = 1,
     .max = 3600,
     .help = "Seconds a connection to the job's key-value service may stay open without "
             "presenting the job secret before it is closed.",
     .offset = offsetof(struct bm_rte_launch_config, hello_timeout)},
    {.name = "BM_RUN_CONNECT_TIMEOUT",
     .type = BM_PARAM_DOUBLE,
     .def = "5",
     .min = 0,
     .max = 600,
     .help = "Seconds a remote bmrun daemon waits for each published address of the "
             "controller when it connects back.",
     .offset = offsetof(struct bm_rte_launch_config, connect_timeout)},
    {.name = "BM_RUN_LAUNCH_AGENT",
     .type = BM_PARAM_STRING,
     .def = "ssh -x {host}",
     .help = "Command that runs a program on another host; {host} is replaced by the host "
             "name (appended when absent). --launch-agent overrides it.",
     .offset = offsetof(struct bm_rte_launch_config, launch_agent)},
    {.name = "BM_RUN_DRAIN_TIMEOUT",
     .type = BM_PARAM_DOUBLE,
     .def = "1",
     .min = 0,
     .max = 600,
     .help = "Seconds bmrun keeps reading a rank's output after the rank exited, when a "
             "process it started still holds its stdout or stderr open.",
     .offset = offsetof(struct bm_rte_launch_config, drain_timeout)},
};
static const struct bm_param_table launch_param_table = {
    .component = "run", .params = launch_params, .count = BM_PARAM_COUNT(launch_params)};
BM_PARAM_TABLE_REGISTER(launch_param_table);

bm_status_t bm_rte_launch_config_load(struct bm_rte_launch_config *cfg_out)
{
    return bm_util_params_load(&launch_param_table, cfg_out);
}
