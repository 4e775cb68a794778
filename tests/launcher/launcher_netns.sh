#!/bin/bash
# A 2-host job: two network namespaces joined by a veth pair stand for two
# hosts, and the launch agent is 'ip netns exec {host}'. bmrun runs inside the
# first namespace; both hosts get a bmrun daemon that connects back over the
# veth. Each rank prints its node index and reads every peer's modex blob.
# Needs root and ip netns; otherwise skipped (exit 77).
BMRUN=$1 RANK=$2
. "$(dirname "$0")/lib.sh"

. "$(dirname "$0")/../harness/netns.sh"

bm_netns_require
bm_netns_hosts 2
A=${BM_NETNS[0]} B=${BM_NETNS[1]}
bm_netns_rail 0 1 10.250.$(($$ % 200 + 30))

AGENT='ip netns exec {host}'
run two ip netns exec $A "$BMRUN" -n 4 --host $A:2,$B:2 --launch-agent "$AGENT" --tag-output \
    --timeout 60 "$RANK" modex "$TOKEN"
expect_rc two 0
for r in 0 1 2 3; do
    node=$((r / 2))
    grep -Eq "^\[$r\] rank $r of 4 node $node of 2 local $((r % 2)) of 2 peer $(((r + 1) % 4)) node $((((r + 1) % 4) / 2)) ok$" "$T/two.out" ||
        fail "two: rank $r did not report node $node and its peer's blob"
done
[ "$failures" -eq 0 ] && ok "two: ranks on 2 hosts, node indices right, every peer's blob read"
# Daemons say nothing when all goes well (no errors, no sanitizer reports).
[ ! -s "$T/two.err" ] && ok "two: nothing on stderr" || fail "two: stderr: $(head -5 "$T/two.err")"

# Remote ranks start in bmrun's working directory even when the agent puts
# the daemon elsewhere: a relative program path works.
(cd "$(dirname "$RANK")" &&
    run wdir ip netns exec $A "$BMRUN" -n 2 --host $A,$B --timeout 60 \
        --launch-agent 'ip netns exec {host} env --chdir=/' ./"$(basename "$RANK")" modex "$TOKEN"
    expect_rc wdir 0
    [ "$(grep -c ' ok$' "$T/wdir.out")" -eq 2 ] && ok "wdir: relative program found" ||
        fail "wdir: $(cat "$T/wdir.err")"
    exit $failures) || failures=$((failures + 1))

# Heavy output from ranks on both hosts arrives whole through the daemons.
run spam ip netns exec $A "$BMRUN" -n 4 --host $A:2,$B:2 --launch-agent "$AGENT" --timeout 60 \
    "$RANK" spam 2000 "$TOKEN"
expect_rc spam 0
for stream in out err; do
    n=$(grep -Ec "^$stream rank [0-3] line [0-9]+ x{199} end$" "$T/spam.$stream")
    [ "$n" -eq 8000 ] && ok "spam: std$stream 8000 whole lines" || fail "spam: std$stream has $n whole lines"
done

# SIGTERM to bmrun reaches the ranks on both hosts.
ip netns exec $A "$BMRUN" -n 4 --host $A:2,$B:2 --launch-agent "$AGENT" "$RANK" hang -1 "$TOKEN" \
    >"$T/term.out" 2>"$T/term.err" &
pid=$!
sleep 1.5
kill -TERM $pid
wait $pid
rc=$?
expect_rc term 143
expect_no_leftovers term

# A rank killed on the second host: named with its host; everything ends.
run kill ip netns exec $A "$BMRUN" -n 4 --host $A,$B --oversubscribe --launch-agent "$AGENT" --timeout 60 \
    "$RANK" kill 3 "$TOKEN"
expect_rc kill 137
expect_err kill "^bmrun: rank 3 \(host $B, pid [0-9]+\) killed by signal 9 \(SIGKILL\)$"
expect_no_leftovers kill

# A timeout reaches ranks through the daemons and names the remote rank.
run hang ip netns exec $A "$BMRUN" -n 4 --host $A:2,$B:2 --launch-agent "$AGENT" --timeout 2 \
    "$RANK" hang 3 "$TOKEN"
expect_rc hang 124
expect_err hang "had not finished: 3 \(host $B, pid [0-9]+\)$"
expect_no_leftovers hang

# abort on a remote rank.
run abort ip netns exec $A "$BMRUN" -n 4 --host $A:2,$B:2 --launch-agent "$AGENT" --timeout 60 \
    "$RANK" abort 2 5 "$TOKEN"
expect_rc abort 5
expect_err abort "^bmrun: rank 2 \(host $B, pid [0-9]+\) called abort with exit code 5: launcher test abort$"
expect_no_leftovers abort

# A program missing on the remote hosts: exec failure reported by the daemons.
run missing ip netns exec $A "$BMRUN" -n 2 --host $A,$B --launch-agent "$AGENT" --timeout 60 \
    /nonexistent/program-$TOKEN
expect_rc missing 127
expect_err missing "cannot execute '/nonexistent/program-$TOKEN' for rank [01] on host ($A|$B): No such file or directory"

# Files of the job are removed on every host.
run files ip netns exec $A "$BMRUN" -n 2 --host $A,$B --launch-agent "$AGENT" --timeout 60 \
    "$RANK" files ok "$TOKEN"
expect_rc files 0
jobid=$(sed -n '1s|^made /dev/shm/bm-\([0-9a-z]*\)-.*|\1|p' "$T/files.out")
left=$(ls -d /dev/shm/bm-"$jobid"-* /tmp/bm-"$jobid"-* 2>/dev/null)
[ -n "$jobid" ] && [ -z "$left" ] && ok "files: nothing left behind" || fail "files: job '$jobid' left: $left"

# mpirun's habits across hosts: --map-by node deals ranks round the hosts,
# -N 1 puts one per host, MPMD programs reach both hosts, and bmrun's input
# reaches rank 0 through the first host's daemon (both hosts are remote).
run mapnode ip netns exec $A "$BMRUN" -n 4 --host $A:2,$B:2 --map-by node --launch-agent "$AGENT" \
    --tag-output --timeout 60 sh -c 'echo "$BMRUN_HOSTNAME $BMRUN_LOCAL_RANK"'
expect_rc mapnode 0
[ "$(sort "$T/mapnode.out" | tr '\n' ' ')" = "[0] $A 0 [1] $B 0 [2] $A 1 [3] $B 1 " ] &&
    ok "mapnode: ranks 0,2 on $A and 1,3 on $B" || fail "mapnode: $(cat "$T/mapnode.out")"
run npernode ip netns exec $A "$BMRUN" -N 1 --host $A:2,$B:2 --launch-agent "$AGENT" \
    --tag-output --timeout 60 sh -c 'echo "$BMRUN_HOSTNAME $BMRUN_SIZE"'
expect_rc npernode 0
[ "$(sort "$T/npernode.out" | tr '\n' ' ')" = "[0] $A 2 [1] $B 2 " ] &&
    ok "npernode: one rank per host" || fail "npernode: $(cat "$T/npernode.out")"
head -c 300000 /dev/urandom >"$T/input"
want=$(md5sum <"$T/input" | cut -d' ' -f1)
run mpmdstdin ip netns exec $A "$BMRUN" --host $A,$B --launch-agent "$AGENT" --timeout 60 \
    -n 1 sh -c 'md5sum' : -n 1 sh -c 'echo "app $BMRUN_APPNUM on $BMRUN_HOSTNAME read $(wc -c)"' \
    <"$T/input"
expect_rc mpmdstdin 0
expect_out mpmdstdin "^$want"
expect_out mpmdstdin "^app 1 on $B read 0$"

# An agent that cannot start the daemon: reported with the host, exit 1.
run badagent ip netns exec $A "$BMRUN" -n 2 --host $A,nosuchns$$ --launch-agent "$AGENT" \
    --timeout 60 "$RANK" modex "$TOKEN"
expect_rc badagent 1
expect_err badagent "before the bmrun daemon connected back"
expect_no_leftovers badagent
finish
