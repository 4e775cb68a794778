#!/bin/bash
# 8 ranks on a 2-core machine: everyone fences and reads every peer's blob.
BMRUN=$1 RANK=$2
. "$(dirname "$0")/lib.sh"

run many "$BMRUN" -n 8 --tag-output "$RANK" modex "$TOKEN"
expect_rc many 0
for r in 0 1 2 3 4 5 6 7; do
    grep -Eq "^\[$r\] rank $r of 8 node 0 of 1 local $r of 8 peer [0-9] node 0 ok$" "$T/many.out" ||
        fail "many: rank $r did not report"
done
[ "$failures" -eq 0 ] && ok "many: all 8 ranks got every peer's blob"

# Oversubscribed hosts: -n 5 on localhost:2 is refused as Open MPI's mpirun
# does, and with --oversubscribe goes round the one host.
run notover "$BMRUN" -n 5 --host localhost:2 "$RANK" modex "$TOKEN"
expect_rc notover 2
expect_err notover '^bmrun: 5 ranks but only 2 slot\(s\) on the given hosts: add --oversubscribe'
run over "$BMRUN" -n 5 --host localhost:2 --oversubscribe "$RANK" modex "$TOKEN"
expect_rc over 0
[ "$(grep -c ' ok$' "$T/over.out")" -eq 5 ] && ok "over: 5 ranks" || fail "over: $(cat "$T/over.out")"
# A hostfile naming this host twice (localhost and its own name): one host,
# 2+2 slots; without -n there is one rank per slot.
printf '# comment\nlocalhost slots=2\n%s:2  # me\n\n' "$(hostname)" >"$T/hosts"
run hostfile "$BMRUN" --hostfile "$T/hosts" "$RANK" modex "$TOKEN"
expect_rc hostfile 0
[ "$(grep -c 'of 4 node 0 of 1 local [0-3] of 4 .* ok$' "$T/hostfile.out")" -eq 4 ] &&
    ok "hostfile: 4 ranks on one node" || fail "hostfile: $(cat "$T/hostfile.out")"

# The environment of the ranks: BMRUN_* identity and -x variables.
export BMT_PASS=passed
run env "$BMRUN" -n 3 -x BMT_SET=set -x BMT_PASS sh -c \
    'echo "$BMRUN_RANK/$BMRUN_SIZE $BMRUN_LOCAL_RANK/$BMRUN_LOCAL_SIZE $BMRUN_NODE/$BMRUN_NUM_NODES $BMT_SET $BMT_PASS ${#BMRUN_SECRET} $BMRUN_JOBID"'
expect_rc env 0
for r in 0 1 2; do
    grep -Eq "^$r/3 $r/3 0/1 set passed 64 [0-9a-z]+$" "$T/env.out" || fail "env: rank $r: $(cat "$T/env.out")"
done
[ "$(awk '{print $6}' "$T/env.out" | sort -u | wc -l)" -eq 1 ] && ok "env: one job id" || fail "env: job ids differ"
finish
