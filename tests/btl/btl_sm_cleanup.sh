#!/bin/sh
# No shared-memory file of an sm job may outlive it. Runs btl_sm_cleanup
# with 4 ranks in the given mode (normal | abort | kill) and then looks for
# /dev/shm/bm-<jobid>-* of that job (the jobid is printed by the ranks).
# Usage: btl_sm_cleanup.sh BMRUN PROGRAM MODE
set -u
bmrun=$1
prog=$2
mode=$3
out=$(mktemp)
trap 'rm -f "$out"' EXIT

"$bmrun" -n 4 --timeout 40 "$prog" "$mode" >"$out" 2>&1
rc=$?
cat "$out"
jobid=$(sed -n 's/.*JOBID=\([0-9A-Za-z]*\).*/\1/p' "$out" | head -n 1)
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
        echo "FAIL: the $mode job exited with 0; bmrun should report the failed rank"
        exit 1
    fi ;;
esac
left=$(ls /dev/shm 2>/dev/null | grep "^bm-$jobid-" || true)
if [ -n "$left" ]; then
    echo "FAIL: left behind in /dev/shm after the $mode job: $left"
    for f in $left; do rm -f "/dev/shm/$f"; done
    exit 1
fi
echo "PASS: nothing of job $jobid left in /dev/shm after the $mode job"
