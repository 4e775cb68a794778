#!/bin/bash
# A rank killed by SIGKILL while the others wait in a fence: bmrun ends the
# others, names the rank, host, pid and signal, and exits with 128+9.
BMRUN=$1 RANK=$2
. "$(dirname "$0")/lib.sh"

start=$(date +%s)
run kill "$BMRUN" -n 4 "$RANK" kill 2 "$TOKEN"
elapsed=$(($(date +%s) - start))
expect_rc kill 137
expect_err kill '^bmrun: rank 2 \(host [^,]+, pid [0-9]+\) killed by signal 9 \(SIGKILL\)$'
[ "$elapsed" -le 10 ] && ok "kill: job ended in ${elapsed}s" || fail "kill: job took ${elapsed}s"
[ "$(grep -c 'killed by signal' "$T/kill.err")" -eq 1 ] && ok "kill: one report" ||
    fail "kill: ranks that bmrun ended were reported as failures too"
expect_no_leftovers kill

# Signals sent to bmrun reach every rank.
"$BMRUN" -n 3 "$RANK" hang -1 "$TOKEN" >"$T/term.out" 2>"$T/term.err" &
pid=$!
sleep 1
kill -TERM $pid
wait $pid
rc=$?
expect_rc term 143
expect_err term 'received SIGTERM'
expect_no_leftovers term

env --default-signal=INT "$BMRUN" -n 3 "$RANK" hang -1 "$TOKEN" >"$T/int.out" 2>"$T/int.err" &
pid=$!
sleep 1
kill -INT $pid
wait $pid
rc=$?
expect_rc int 130
expect_no_leftovers int

# Even a bmrun killed with SIGKILL takes its ranks with it.
"$BMRUN" -n 3 "$RANK" hang -1 "$TOKEN" >/dev/null 2>&1 &
pid=$!
sleep 1
kill -KILL $pid
wait $pid 2>/dev/null
expect_no_leftovers bmrun_killed

finish
