#!/bin/sh
# No shared-memory file of an sm job may outlive it. Runs btl_sm_cleanup
# with 4 ranks in the given mode (normal | abort | kill | latekill) and then
# looks for /dev/shm/bm-<jobid>-* of that job (the jobid is printed by the
# ranks). LAUNCHER is bmrun's path, or "ompi" (mpirun.openmpi, PMIx) or
# "hydra" (mpiexec.hydra, PMI): those know nothing of bitmover's names, so
# only the ranks themselves can keep /dev/shm clean.
# Usage: btl_sm_cleanup.sh LAUNCHER PROGRAM MODE
set -u
launcher=$1
prog=$2
mode=$3
out=$(mktemp)
trap 'rm -f "$out"' EXIT

case $launcher in
ompi)
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_rmaps_base_oversubscribe=1
    unset PMI_FD PMI_PORT PMI_ID PMI_RANK PMI_SIZE PMIX_NAMESPACE PMIX_RANK BMRUN_KVS BMRUN_RANK
    xl=""; [ -n "${LSAN_OPTIONS:-}" ] && xl="-x LSAN_OPTIONS"
    # shellcheck disable=SC2086
    timeout 40 mpirun.openmpi -np 4 -x BM_BTL $xl "$prog" "$mode" >"$out" 2>&1 ;;
hydra)
    unset PMI_FD PMI_PORT PMI_ID PMI_RANK PMI_SIZE PMIX_NAMESPACE PMIX_RANK BMRUN_KVS BMRUN_RANK
    timeout 40 mpiexec.hydra -n 4 "$prog" "$mode" >"$out" 2>&1 ;;
*)
    "$launcher" -n 4 --timeout 40 "$prog" "$mode" >"$out" 2>&1 ;;
esac
rc=$?
cat "$out"
jobid=$(sed -n 's/.*JOBID=\([0-9A-Za-z._@-]*\).*/\1/p' "$out" | head -n 1)
if [ -z "$jobid" ]; then
    echo "FAIL: no rank printed its JOBID line"
    exit 1
fi
case $mode in
normal)
    if [ "$rc" -ne 0 ]; then
        echo "FAIL: the normal job exited with $rc"
        exit 1
    fi ;;
*)
    if [ "$rc" -eq 0 ]; then
        echo "FAIL: the $mode job exited with 0; the launcher should report the failed rank"
        exit 1
    fi ;;
esac
left=$(ls /dev/shm 2>/dev/null | grep -F "bm-$jobid-" || true)
if [ -n "$left" ]; then
    echo "FAIL: left behind in /dev/shm after the $mode job: $left"
    for f in $left; do rm -f "/dev/shm/$f"; done
    exit 1
fi
echo "PASS: nothing of job $jobid left in /dev/shm after the $mode job ($launcher)"
