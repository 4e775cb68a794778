#!/bin/sh
# Runs a command that must fail: passes when it exits non-zero and its
# output (stdout and stderr) matches the extended regular expression.
# usage: api_expect_fail.sh <regex> <command> [args...]
regex=$1
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -eq 0 ]; then
    echo "FAIL: '$*' exited with status 0; a failure was expected"
    exit 1
fi
if ! printf '%s\n' "$out" | grep -E -q -- "$regex"; then
    echo "FAIL: the output of '$*' does not match /$regex/"
    exit 1
fi
echo "PASS: exit status $rc and the expected message"
