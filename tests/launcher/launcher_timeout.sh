#!/bin/bash
# --timeout ends a hung job, names the ranks that had not finished, exits 124.
BMRUN=$1 RANK=$2
. "$(dirname "$0")/lib.sh"

start=$(date +%s)
run hang "$BMRUN" -n 4 --timeout 1 "$RANK" hang 2 "$TOKEN"
elapsed=$(($(date +%s) - start))
expect_rc hang 124
expect_err hang '^bmrun: timeout after 1 s: 1 rank\(s\) had not finished: 2 \(host [^,]+, pid [0-9]+\)$'
[ "$elapsed" -le 8 ] && ok "hang: ended in ${elapsed}s" || fail "hang: took ${elapsed}s"
expect_no_leftovers hang

run fine "$BMRUN" -n 2 --timeout 30 "$RANK" modex "$TOKEN"
expect_rc fine 0
finish
