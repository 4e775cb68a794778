#!/bin/sh
# Runs a command and passes only when it succeeds AND a line of its output
# matches a regular expression (grep -E): for tests whose pass depends on a
# mechanism that must have run, shown by a counter or mode in the output
# (ctest's PASS_REGULAR_EXPRESSION would ignore the exit status).
# Usage: ofi_expect.sh REGEX COMMAND [ARGS...]
set -u
regex=$1
shift
out=$(mktemp /tmp/bm-ofi-expect.XXXXXX)
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
rc=$?
cat "$out"
if [ "$rc" -ne 0 ]; then
    echo "FAIL: the command exited with $rc"
    exit 1
fi
if ! grep -Eq -- "$regex" "$out"; then
    echo "FAIL: no line of the output matches: $regex"
    exit 1
fi
echo "PASS: exit 0, and the output matches: $regex"
