/* Launchers this process cannot use. When no backend recognised its
 * launcher, a process would run as a 1-process job; that is right for a
 * program started alone and silently wrong for one of N processes started
 * by a launcher we cannot talk to (Open MPI's mpirun without PMIx in this
 * build, srun whose step has no PMI plugin, ...). Those N processes would
 * each compute alone and exit 0. This file recognises the launchers'
 * variables and says which launcher, what is missing and what to do; the
 * runtime then refuses to start. It also holds the runtime's help topics. */
#include "bm_config.h"
#include "runtime/rte_backend.h"
#include "util/help.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct bm_util_help_topic rte_help[] = {
    {"rte-launcher-unusable", "Started by a launcher this bitmover cannot use",
     "launcher (string), evidence (string), what is missing (string), what to do (string)",
     "This process was started by %s (%s), but %s. Running it as a 1-process job would make "
     "every process compute alone, so it stops here.\n"
     "\n"
     "What to do:\n"
     "  - %s\n"
     "  - Or start the program with bitmover's own launcher: bmrun -n N ./program"},
    {"rte-pmix-unloadable", "The PMIx library cannot be loaded",
     "PMIx namespace (string), loader error (string)",
     "This process was started by a PMIx launcher (Open MPI's mpirun, prterun or srun "
     "--mpi=pmix; PMIx namespace %s), but the PMIx client library could not be loaded: %s.\n"
     "\n"
     "What to do:\n"
     "  - Install the PMIx library (Debian: apt-get install libpmix2) on every node.\n"
     "  - Or start the job with bmrun, mpiexec.hydra or srun --mpi=pmi2."},
    {"rte-pmix-init-failed", "The PMIx server did not accept this process",
     "PMIx namespace (string), server URI (string), PMIx error (string)",
     "This process was started by a PMIx launcher (namespace %s, server %s), but PMIx_Init "
     "failed: %s.\n"
     "\n"
     "What to do:\n"
     "  - Check that the launcher is still running and that this program was not started "
     "through a wrapper that changed PMIX_* variables.\n"
     "  - A PMIx library much older or newer than the launcher's may not talk to it: run "
     "bm_info and compare with the launcher's PMIx version (PMIX_VERSION).\n"
     "  - Or start the job with bmrun, mpiexec.hydra or srun --mpi=pmi2."},
};
BM_HELP_TOPICS_REGISTER(rte_help);

/* A positive integer variable greater than 1. */
static int env_gt1(const char *name)
{
    const char *s = getenv(name);
    return s && atoi(s) > 1;
}

static const char *env_or(const char *name, const char *otherwise)
{
    const char *s = getenv(name);
    return s ? s : otherwise;
}

#define SAY(field, ...) snprintf(out->field, sizeof(out->field), __VA_ARGS__)

int bm_rte_foreign_launcher(struct bm_rte_foreign *out)
{
    return bm_rte_foreign_launcher_as(out, BM_HAVE_PMIX);
}

int bm_rte_foreign_launcher_as(struct bm_rte_foreign *out, int have_pmix)
{
    memset(out, 0, sizeof(*out));
    if (getenv("PMIX_NAMESPACE") && !have_pmix) {
        SAY(launcher, "a PMIx launcher (Open MPI's mpirun, prterun or srun --mpi=pmix)");
        SAY(evidence, "PMIX_NAMESPACE=%s", getenv("PMIX_NAMESPACE"));
        SAY(missing, "this bitmover was built without PMIx support (%s)", BM_PMIX_WHY);
        SAY(todo, "Install libpmix-dev and rebuild bitmover (cmake -DBM_WITH_PMIX=ON makes a "
                  "missing PMIx an error at build time), or start the job with a PMI launcher: "
                  "mpiexec.hydra -n N ./program, or srun --mpi=pmi2");
        return 1;
    }
    if (env_gt1("SLURM_STEP_NUM_TASKS") && getenv("SLURM_PROCID")) {
        SAY(launcher, "Slurm's srun (job %s, step %s)", env_or("SLURM_JOB_ID", "?"),
            env_or("SLURM_STEP_ID", "?"));
        SAY(evidence, "SLURM_STEP_NUM_TASKS=%s, SLURM_PROCID=%s, SLURM_MPI_TYPE=%s",
            getenv("SLURM_STEP_NUM_TASKS"), getenv("SLURM_PROCID"),
            env_or("SLURM_MPI_TYPE", "(unset)"));
        SAY(missing,
            "srun started this step without a PMI server (--mpi=none, or MpiDefault=none in "
            "slurm.conf), so its %s tasks have no way to find each other",
            getenv("SLURM_STEP_NUM_TASKS"));
        SAY(todo,
            "Run srun --mpi=pmix%s or srun --mpi=pmi2 (srun --mpi=list shows what this Slurm "
            "offers); administrators can make it the default with MpiDefault=pmix in slurm.conf",
            have_pmix ? "" : " (needs a bitmover built with PMIx)");
        return 1;
    }
    if (env_gt1("OMPI_COMM_WORLD_SIZE")) {
        SAY(launcher, "Open MPI's mpirun without a PMIx server (an Open MPI older than 2.0)");
        SAY(evidence, "OMPI_COMM_WORLD_SIZE=%s and no PMIX_NAMESPACE",
            getenv("OMPI_COMM_WORLD_SIZE"));
        SAY(missing, "that launcher offers no interface bitmover can use");
        SAY(todo, "Use the mpirun of Open MPI 4 or later (PMIx), mpiexec.hydra, or srun");
        return 1;
    }
    if (env_gt1("PMI_SIZE") || env_gt1("MPI_LOCALNRANKS")) {
        SAY(launcher, "a PMI launcher (MPICH's mpiexec)");
        SAY(evidence, "PMI_SIZE=%s, MPI_LOCALNRANKS=%s", env_or("PMI_SIZE", "(unset)"),
            env_or("MPI_LOCALNRANKS", "(unset)"));
        SAY(missing, "neither PMI_FD nor PMI_PORT is set, so its PMI server cannot be reached");
        SAY(todo, "Start the program directly from mpiexec, not through a wrapper that removes "
                  "PMI_FD or PMI_PORT from the environment");
        return 1;
    }
    return 0;
}
