#!/bin/sh
# Runs a command and passes only when it succeeds AND a line of its output
# matches a regular expression (grep -E): for tests whose pass depends on a
# mechanism that must have run, shown by a counter or mode in the output
# (ctest's PASS_REGULAR_EXPRESSION would ignore the exit status).
# Usage: ofi_expect.sh [-c COUNT] REGEX COMMAND [ARGS...]
# With -c, at least COUNT lines must match (e.g. one per rank).
set -u
count=1
if [ "$1" = "-c" ]; then
    count=$2
    shift 2
fi
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
matched=$(grep -Ec -- "$regex" "$out")
if [ "$matched" -lt "$count" ]; then
    echo "FAIL: $matched line(s) of the output match, $count wanted: $regex"
    exit 1
fi
echo "PASS: exit 0, and $matched line(s) of the output match: $regex"
