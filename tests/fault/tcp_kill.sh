#!/bin/bash
# A peer killed with SIGKILL in the middle of a stream: the survivor's tcp
# transport must report the failure (error callback naming the peer, every
# outstanding send completed with an error) quickly, never hang. Runs on this
# host (loopback and whatever interfaces exist), no privileges needed. The
# survivor may learn of the death by reading (reset, EOF) or by writing
# (EPIPE), depending on timing; each names the peer, address and interface.
# usage: tcp_kill.sh <bmrun> <tcp_fault>
set -u
bmrun=$1 prog=$2
out=$(mktemp /tmp/bm-tcp-kill.XXXXXX)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    rm -f "$out"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*"
    echo "---- job output ----"
    cat "$out"
    exit 1
}

# bmrun ends the job with SIGTERM when a rank dies; the survivor keeps
# running for the grace period to report what it saw.
BM_BTL=self,tcp BM_RUN_KILL_GRACE=30 "$bmrun" -n 2 --timeout 90 "$prog" stream >"$out" 2>&1 &
pid=$!
victim=
for _ in $(seq 1 300); do
    victim=$(sed -n 's/^tcp_fault: rank 1 pid \([0-9]*\) streaming$/\1/p' "$out")
    [ -n "$victim" ] && break
    kill -0 "$pid" 2>/dev/null || fail "the job ended before streaming"
    sleep 0.1
done
[ -n "$victim" ] || fail "rank 1 never started streaming"
t0=$(date +%s.%N)
kill -KILL "$victim"
for _ in $(seq 1 300); do
    grep -q "tcp_fault: rank 0 detected the failure" "$out" && break
    grep -q "tcp_fault: rank 0: no failure reported" "$out" && break
    sleep 0.1
done
t1=$(date +%s.%N)
wait "$pid"
pid=
grep -q "tcp_fault: rank 0 detected the failure" "$out" || fail "rank 0 did not report the failure"
grep -q "tcp_fault stream: .* 0 failed" "$out" || fail "rank 0's checks failed"
grep -Eq "connection to rank 1 \(.*\) via .* (reset by peer|closed by the peer|broken \(EPIPE)" "$out" ||
    fail "the error does not name the peer, its address and the interface"
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
echo "rank 0 reported the SIGKILL of rank 1 within ${secs} s:"
grep "tcp_fault: rank 0" "$out"
awk -v s="$secs" 'BEGIN { exit !(s < 5) }' || fail "detection took ${secs} s (limit 5 s)"
echo PASS
