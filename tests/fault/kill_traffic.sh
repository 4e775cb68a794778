#!/bin/bash
# A rank SIGKILLed during heavy traffic (kill_traffic.c: a ring of eager and
# rendezvous messages): bmrun must report that rank, its host, pid and the
# signal as the news (its first line about the job's end) and exit 137,
# although the survivors see their connections break and abort, often
# before bmrun has reaped the dead rank. Run <repeat> times at <np> ranks
# (never retried: the first failing run fails the script), alternating tcp
# alone (the survivors notice at once) and sm+tcp; every
# other pair of runs makes the race certain: rank 0 is told to MPI_Abort
# (SIGUSR1) just before the victim, which ignores SIGTERM, is SIGKILLed, so
# that bmrun hears the survivor's abort first and must still report the
# signal. No privileges needed.
# usage: kill_traffic.sh <bmrun> <kill_traffic> <np> <repeat>
set -u
bmrun=$1 prog=$2 np=$3 repeat=$4
out=$(mktemp /tmp/bm-kill-traffic.XXXXXX)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    rm -f "$out" "$out".*
}
trap cleanup EXIT
fail() {
    echo "FAIL (run $i, $btl, victim rank $victim): $*"
    echo "---- job output ----"
    cat "$out"
    exit 1
}
for i in $(seq 1 "$repeat"); do
    btl=self,tcp
    [ $((i % 2)) = 0 ] && btl=self,sm,tcp
    victim=$((1 + (i * 5) % (np - 1)))
    rm -f "$out".*
    race=$(((i / 2) % 2))
    BM_BTL=$btl BM_RUN_KILL_GRACE=5 "$bmrun" -n "$np" --timeout 100 "$prog" "$out" 60 "$victim" \
        >"$out" 2>&1 &
    pid=$!
    for _ in $(seq 1 600); do
        [ "$(cat "$out".* 2>/dev/null | grep -c streaming)" = "$np" ] && break
        kill -0 "$pid" 2>/dev/null || fail "the job ended before streaming"
        sleep 0.05
    done
    vpid=$(sed -n 's/^rank [0-9]* pid \([0-9]*\) streaming$/\1/p' "$out.$victim" 2>/dev/null)
    [ -n "$vpid" ] || fail "the ranks never all streamed"
    if [ "$race" = 1 ]; then
        kill -USR1 "$(sed -n 's/^rank 0 pid \([0-9]*\) streaming$/\1/p' "$out.0")"
        sleep 0.1
    fi
    kill -KILL "$vpid"
    wait "$pid"
    rc=$?
    pid=
    first=$(grep -m1 '^bmrun: ' "$out")
    [ "$race" = 1 ] && grep -q "rank 0 .* called abort" "$out" ||
        [ "$race" = 0 ] || fail "rank 0 was told to abort first but did not"
    echo "run $i ($btl, np $np, abort first: $race): rank $victim (pid $vpid) killed; exit $rc; first line: $first"
    [ "$rc" = 137 ] || fail "bmrun exited $rc, not 137"
    echo "$first" | grep -Eq "^bmrun: rank $victim \(host [^,]+, pid $vpid\) killed by signal 9 \(SIGKILL\)$" ||
        fail "bmrun's first line does not name the killed rank and the signal"
    [ "$(grep -c 'killed by signal' "$out")" = 1 ] ||
        fail "ranks that bmrun itself stopped were reported as killed too"
done
echo PASS
