/* Tunables of the bmrun launcher (BM_RUN_*). The table lives in the runtime
 * library rather than in the bmrun executable so that bm_info --params and
 * the typo check of every bitmover program see it; bmrun loads it at start. */
#ifndef BM_RUNTIME_RTE_LAUNCH_H
#define BM_RUNTIME_RTE_LAUNCH_H

#include "bm_status.h"

struct bm_rte_launch_config {
    double kill_grace;        /* BM_RUN_KILL_GRACE: seconds between SIGTERM and SIGKILL */
    double daemon_timeout;    /* BM_RUN_DAEMON_TIMEOUT: seconds for a daemon to connect back */
    double hello_timeout;     /* BM_RUN_HELLO_TIMEOUT: seconds to present the job secret */
    double connect_timeout;   /* BM_RUN_CONNECT_TIMEOUT: seconds per controller address */
    const char *launch_agent; /* BM_RUN_LAUNCH_AGENT: e.g. "ssh -x {host}" */
    double drain_timeout;     /* BM_RUN_DRAIN_TIMEOUT: seconds to read output after exit */
};

/* Read the BM_RUN_* variables; reports bad values and returns BM_ERR_BAD_PARAM. */
bm_status_t bm_rte_launch_config_load(struct bm_rte_launch_config *cfg_out);

#endif
