#!/bin/bash
# The key-value service closes connections that present a wrong secret or
# send anything before the secret, without sending data, and says so; the job
# itself is not disturbed.
BMRUN=$1 RANK=$2
. "$(dirname "$0")/lib.sh"

BM_RUN_HELLO_TIMEOUT=1 run secret "$BMRUN" -n 3 "$RANK" badsecret "$TOKEN"
expect_rc secret 0
expect_out secret '^bad secret rejected$'
expect_err secret "rejected a connection to the job's key-value service from 127\.0\.0\.1:[0-9]+: wrong job secret"
expect_err secret "rejected a connection .*: the first message was not a hello"
expect_err secret "rejected a connection .*: no hello in time"
[ "$(grep -c ' ok$' "$T/secret.out")" -eq 3 ] && ok "secret: job completed" || fail "secret: job disturbed"
finish
