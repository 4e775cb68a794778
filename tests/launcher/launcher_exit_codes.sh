#!/bin/bash
# bmrun's exit code: 0 only when every rank exits 0; a failing rank's status
# (and its rank, host and pid in the message); abort's code and message.
BMRUN=$1 RANK=$2
. "$(dirname "$0")/lib.sh"

run ok "$BMRUN" -n 4 "$RANK" modex "$TOKEN"
expect_rc ok 0
[ "$(grep -c ' ok$' "$T/ok.out")" -eq 4 ] && ok "ok: 4 ranks reported" || fail "ok: expected 4 ok lines"

run exit3 "$BMRUN" -n 4 "$RANK" exit 1 3 "$TOKEN"
expect_rc exit3 3
expect_err exit3 '^bmrun: rank 1 \(host [^,]+, pid [0-9]+\) exited with status 3$'
expect_no_leftovers exit3

run abort "$BMRUN" -n 3 "$RANK" abort 2 7 "$TOKEN"
expect_rc abort 7
expect_err abort '^bmrun: rank 2 \(host [^,]+, pid [0-9]+\) called abort with exit code 7: launcher test abort$'
expect_no_leftovers abort

run abort0 "$BMRUN" -n 2 "$RANK" abort 0 256 "$TOKEN"
expect_rc abort0 1
expect_err abort0 'called abort with exit code 256'

# A rank that exits 0 while the others wait for it in a fence would hang the
# job: bmrun names it and ends the job.
run skip "$BMRUN" -n 3 "$RANK" skipfence 1 "$TOKEN"
expect_rc skip 1
expect_err skip '^bmrun: rank 1 \(host [^,]+, pid [0-9]+\) exited with status 0 while the other ranks wait for it in fence 1'
expect_no_leftovers skip

finish
