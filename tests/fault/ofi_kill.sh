#!/bin/bash
# A peer killed with SIGKILL in the middle of a stream of messages and puts:
# the survivor's ofi transport must report the failure through the error
# callback (naming the peer, its domain and the provider), complete every
# send and put still in flight with an error, and never hang. rxm (libfabric
# 1.17) gives no error when a peer dies: it closes the connection and drops
# what was in flight on it without completions, so the transport's timeout
# (BM_BTL_OFI_TIMEOUT, 3 s here) is what detects it; providers that do
# report errors are detected sooner. With the shm provider, the killed rank's
# 16 MiB shared region must not stay in /dev/shm: the provider names it
# after the endpoint (/dev/shm/<pid>:<uid>:<n> by default, which nobody
# removes after a SIGKILL); we name it bm-<jobid>-ofi-<rank>-<n>, which bmrun
# removes with the job's other files. Checked: that name existed while the
# job ran, and after it nothing of the job or the killed pid is left.
# The shm provider (libfabric 1.17) has one more way to fail that no
# transport can mend: a peer killed while it holds its region's spin lock
# leaves every sender to it spinning inside fi_send (seen about 1 run in 6
# under ASan and load). Then bmrun ends the job after the kill grace (5 s
# for shm here); the test says so and still checks the cleanup; with tcp
# (and with shm whenever the survivor is not stuck) detection is required.
# Runs on this host, no privileges needed.
# usage: ofi_kill.sh <bmrun> <ofi_fault> [provider]
set -u
bmrun=$1 prog=$2 prov=${3:-tcp}
out=$(mktemp /tmp/bm-ofi-kill.XXXXXX)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    rm -f "$out" "$out".*
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*"
    echo "---- job output ----"
    cat "$out" "$out".0 "$out".1 2>/dev/null
    exit 1
}
grace=30
[ "$prov" = shm ] && grace=5
BM_BTL=self,ofi BM_BTL_OFI_PROVIDER_INCLUDE=$prov BM_BTL_OFI_TIMEOUT=3000 BM_RUN_KILL_GRACE=$grace \
    OFI_FAULT_LOG="$out" \
    "$bmrun" -n 2 --timeout 90 "$prog" stream >"$out" 2>&1 &
pid=$!
victim=
for _ in $(seq 1 300); do
    victim=$(sed -n 's/^ofi_fault: rank 1 pid \([0-9]*\) streaming$/\1/p' "$out".1 2>/dev/null)
    [ -n "$victim" ] && break
    kill -0 "$pid" 2>/dev/null || fail "the job ended before streaming"
    sleep 0.1
done
[ -n "$victim" ] || fail "rank 1 never started streaming"
job=$(sed -n 's/^ofi_fault: rank 1 job \([0-9a-z]*\)$/\1/p' "$out".1)
if [ "$prov" = shm ]; then
    ls /dev/shm/bm-"$job"-ofi-1-* >/dev/null 2>&1 ||
        fail "rank 1's shm region is not /dev/shm/bm-$job-ofi-1-*: $(ls /dev/shm)"
fi
t0=$(date +%s.%N)
kill -KILL "$victim"
for _ in $(seq 1 400); do
    grep -q "ofi_fault: rank 0 detected the failure\|ofi_fault: rank 0: no failure" "$out".0 && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
t1=$(date +%s.%N)
wait "$pid"
pid=
if ! grep -q "ofi_fault: rank 0 detected the failure" "$out".0; then
    [ "$prov" = shm ] || fail "rank 0 did not report the failure"
    echo "rank 0 did not report the SIGKILL of rank 1: stuck in the shm provider's fi_send"
    echo "on the dead peer's region lock (libfabric smr, src/btl/ofi/README.md); bmrun ended"
    echo "the job after its ${grace} s grace. Detection not checked in this run; cleanup is."
else
    grep -q "ofi_fault: rank 0 checks: 0 failed" "$out".0 || fail "rank 0's checks failed"
    grep -Eq "rank 1 \(domain [^,]+, [^)]+\)" "$out".0 ||
        fail "the error does not name the peer, its domain and the provider"
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
    echo "rank 0 reported the SIGKILL of rank 1 within ${secs} s:"
    cat "$out".0
    awk -v s="$secs" 'BEGIN { exit !(s < 10) }' || fail "detection took ${secs} s (limit 10 s)"
fi
if [ "$prov" = shm ]; then
    left=$(ls /dev/shm | grep -E "^bm-$job-|^$victim:" || true)
    [ -z "$left" ] || fail "left in /dev/shm after the job: $left"
    echo "nothing of job $job (rank 1 pid $victim) left in /dev/shm"
fi
echo PASS
