#!/bin/bash
# bitmover jobs started by the launchers clusters already run: MPICH's
# mpiexec.hydra (PMI-1 over PMI_FD, PMI-1 over PMI_PORT, PMI-2) and Open
# MPI's mpirun (PMIx, direct and collecting modex). Each run must report the
# backend and the path it names (PMI version and socket, PMIx modex mode:
# never a silent singleton, never another protocol than the one under test),
# the right size and node, and a correct allreduce; an abort must end the job
# with its code and message.
# Skips (77) only when neither launcher is installed.
# Usage: launcher_foreign.sh <launcher_mpi> <launcher_rank>
MPIPROG=$1 RANK=$2
. "$(dirname "$0")/lib.sh"

have_hydra=0 have_ompi=0
command -v mpiexec.hydra >/dev/null && have_hydra=1
command -v mpirun.openmpi >/dev/null && have_ompi=1
if [ $have_hydra = 0 ] && [ $have_ompi = 0 ]; then
    echo "SKIP: neither mpiexec.hydra (mpich) nor mpirun.openmpi (openmpi-bin) is installed"
    exit 77
fi
# Open MPI refuses root unless told; CI runs as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Several ranks per core on a 2-core machine.
export OMPI_MCA_rmaps_base_oversubscribe=1
# Whatever started this test must not leak into the jobs' detection.
unset PMI_FD PMI_PORT PMI_ID PMI_RANK PMI_SIZE PMI_JOBID PMIX_NAMESPACE PMIX_RANK
unset SLURM_PROCID SLURM_STEP_NUM_TASKS BMRUN_KVS BMRUN_RANK


if [ $have_hydra = 1 ]; then
    run hydra1 timeout 60 mpiexec.hydra -n 4 "$MPIPROG" "$TOKEN"
    check_job hydra1 pmi 4 "PMI-1 on PMI_FD"
    run hydra2 timeout 60 mpiexec.hydra -n 3 -genv BM_RTE_PMI_VERSION 2 "$MPIPROG" "$TOKEN"
    check_job hydra2 pmi 3 "PMI-2 on PMI_FD"
    run hydraport timeout 60 mpiexec.hydra -pmi-port -n 2 "$MPIPROG" "$TOKEN"
    check_job hydraport pmi 2 "PMI-1 on PMI_PORT"
    run hydrampmd timeout 60 mpiexec.hydra -n 1 "$MPIPROG" "$TOKEN" : -n 2 "$MPIPROG" "$TOKEN"
    expect_rc hydrampmd 0
    expect_out hydrampmd '^rank 2 of 3 backend pmi node-ranks 3 app 1 via PMI-1 on PMI_FD$'

    # the runtime level: a peer's entry fetched, node indices
    run hydramodex timeout 60 mpiexec.hydra -n 4 "$RANK" modex "$TOKEN"
    expect_rc hydramodex 0
    [ "$(grep -c 'of 4 node 0 of 1 local .* ok$' "$T/hydramodex.out")" -eq 4 ] &&
        ok "hydramodex: 4 ranks on one node" || fail "hydramodex: expected 4 ok lines"
    # a fence waits for the last rank (hydra's PMI-2 kvs-fence alone does not)
    for v in 1 2; do
        run hydralate$v timeout 60 mpiexec.hydra -n 3 -genv BM_RTE_PMI_VERSION $v "$RANK" late 1 "$TOKEN"
        expect_late hydralate$v PMI-$v
    done
    run hydraabort timeout 60 mpiexec.hydra -n 3 "$MPIPROG" abort 1 5 "$TOKEN"
    expect_rc hydraabort 5
    expect_err hydraabort '^bitmover: rank 1 aborting \(exit code 5\)'
    expect_no_leftovers hydraabort
else
    echo "note: mpiexec.hydra not installed (Debian package mpich): PMI runs skipped"
fi

if [ $have_ompi = 1 ]; then
    # mpirun passes only the variables it is told to (LSAN_OPTIONS: ASan preset)
    xl=(); [ -n "${LSAN_OPTIONS:-}" ] && xl=(-x LSAN_OPTIONS)
    run ompidirect timeout 60 mpirun.openmpi -np 4 "${xl[@]}" -x BM_RTE_PMIX_MODEX=direct "$MPIPROG" "$TOKEN"
    check_job ompidirect pmix 4 "PMIx direct modex"
    run ompicollect timeout 60 mpirun.openmpi -np 3 "${xl[@]}" -x BM_RTE_PMIX_MODEX=collect "$MPIPROG" "$TOKEN"
    check_job ompicollect pmix 3 "PMIx collect modex"
    run ompimpmd timeout 60 mpirun.openmpi -np 1 "${xl[@]}" "$MPIPROG" "$TOKEN" : -np 2 "${xl[@]}" "$MPIPROG" "$TOKEN"
    expect_rc ompimpmd 0
    expect_out ompimpmd '^rank 2 of 3 backend pmix node-ranks 3 app 1 via PMIx direct modex$'

    run ompilate timeout 60 mpirun.openmpi -np 3 "${xl[@]}" "$RANK" late 1 "$TOKEN"
    expect_late ompilate PMIx
    run ompiabort timeout 60 mpirun.openmpi -np 2 "${xl[@]}" "$MPIPROG" abort 1 6 "$TOKEN"
    if [ "$rc" -ne 0 ]; then ok "ompiabort: exit code $rc (non-zero)"; else
        fail "ompiabort: exit code 0 after MPI_Abort"; fi
    expect_err ompiabort '^bitmover: rank 1 aborting \(exit code 6\)'
    expect_no_leftovers ompiabort
else
    echo "note: mpirun.openmpi not installed (Debian package openmpi-bin): PMIx runs skipped"
fi
finish
