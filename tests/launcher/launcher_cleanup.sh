#!/bin/bash
# Nothing is left behind: the job's /dev/shm/bm-<jobid>-* and /tmp/bm-<jobid>-*
# files are removed when the job ends, normally or after a rank was killed.
BMRUN=$1 RANK=$2
. "$(dirname "$0")/lib.sh"

for mode in ok kill; do
    run files_$mode "$BMRUN" -n 3 "$RANK" files $mode "$TOKEN"
    want=0
    [ $mode = kill ] && want=137
    expect_rc files_$mode $want
    made=$(sed -n 's/^made \(.*\) and \(.*\)$/\1 \2/p' "$T/files_$mode.out")
    [ "$(echo "$made" | wc -w)" -eq 6 ] || fail "files_$mode: ranks did not create their files: $made"
    jobid=$(echo "$made" | sed -n '1s|^/dev/shm/bm-\([0-9a-z]*\)-.*|\1|p')
    [ -n "$jobid" ] || fail "files_$mode: no job id in file names"
    left=$(ls -d /dev/shm/bm-"$jobid"-* /tmp/bm-"$jobid"-* 2>/dev/null)
    [ -z "$left" ] && ok "files_$mode: nothing left in /dev/shm or /tmp" || fail "files_$mode: left: $left"
    expect_no_leftovers files_$mode
done
finish
