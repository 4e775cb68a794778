#!/bin/bash
# Adaptive striping (src/pml/stripe.c) between two network namespaces. Two
# jobs run at once, so that both meet the same machine load: one with the
# shares the declared bandwidths give (BM_PML_STRIPE_ADAPT=0; both veths
# say the same, so half each) on rails 1 and 2, one adaptive on rails 3 and
# 4. Rails 2 and 4 lose 5% of the datagrams (or tcp segments) that reach
# host B (iptables, TESTBED.md: no netem here). The rails are not shaped:
# the test needs the loss to cost rate, as it does across a network, and
# under a shaper it does not. At 100 Mbit/s (htb) on a quiet machine dgram
# (UDP GSO, SACK) recovers from 5% loss at nearly the line rate (static
# split 21.7 of 25 MB/s), so no split can give the clean rail 75% without
# losing throughput (the clean rail alone is 12.5 MB/s: 16.7 MB/s at most
# at 75%). On an unshaped veth 5% loss costs dgram most of its rate (89 vs
# 464 MB/s alone, issue 23), loaded or not. RAIL_MBIT=N still shapes every
# rail to N Mbit/s at A (htb), for experiments. stripe_stream sends large
# messages from A to B; the rails' bytes are counted at B by iptables from
# 2 s after both streams started, for MEAS_SECS (3) seconds (at 1.5 the
# two jobs' scheduling on a loaded 2-core machine swung their rates 2x
# within a window: 1 failure in 14 at load 14). Passes when
# the adaptive job's clean rail carried at least 75% of its bytes and its
# total rate was at least 0.75x the static job's; shares and rates are
# printed. Why not 1x: the two jobs' four processes share 2 cores,
# and on a quiet machine about half the runs are CPU-bound on both sides,
# where loss costs no rate: 2026-11-29, 16 quiet runs of main (79c4a97) and
# of 2cd7cec, static 201-225 MB/s and adaptive 0.973-0.994x of it in 6 (so
# 1x failed the CI), the others static 203-254 and adaptive 1.12-1.18x. The share check above is the mechanism's; the rate check
# only guards against adapting at a gross cost, so it is 0.75x: under ASan
# on a slower VM (2026-11-29, fifth session, quiet) every process is
# CPU-bound, the static split's two rails work on both cores while the
# adaptive job's clean rail carries 0.90-0.94 of its bytes, and adaptive
# moved 0.87-0.90x of static in 1 run of 3 (main before and after that
# session's changes alike): a speed comparison there measures scheduling,
# not the mechanism (speed targets live in bench/, not in ctest).
# Transport: tcp or dgram (the default: on a veth's tiny round trip tcp
# recovers from 5% loss at nearly its clean rate, so there is little to
# adapt to). Needs root and network namespaces; otherwise skipped (exit 77).
# usage: stripe_netns.sh <bmrun> <stripe_stream> [dgram|tcp]
set -u
bmrun=$1 prog=$2 btl=${3:-dgram}
proto=tcp
[ "$btl" = dgram ] && proto=udp
. "$(dirname "$0")/../harness/netns.sh"
bm_netns_require iptables tc
out=$(mktemp /tmp/bm-stripe-netns.XXXXXX)
pids=
bm_netns_at_exit 'for p in $pids; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done'
bm_netns_at_exit 'rm -f "$out" "$out".*'
fail() {
    echo "FAIL: $*"
    echo "---- job output ----"
    cat "$out".s "$out".a 2>/dev/null
    exit 1
}
bm_netns_hosts 2
A=${BM_NETNS[0]} B=${BM_NETNS[1]}
bm_netns_rail 0 1 10.250.9 # the launchers', made first: not counted, no loss
rb=() ra=()
for i in 1 2 3 4; do
    bm_netns_rail 0 1 10.250.$i
    ra[$i]=$BM_NETNS_DEV_A rb[$i]=$BM_NETNS_DEV_B
    [ -n "${RAIL_MBIT:-}" ] || continue
    ip netns exec "$A" tc qdisc add dev "${ra[$i]}" root handle 1: htb default 10
    ip netns exec "$A" tc class add dev "${ra[$i]}" parent 1: classid 1:10 htb \
        rate "${RAIL_MBIT}mbit"
done
for i in 2 4; do
    ip netns exec "$B" iptables -A INPUT -i "${rb[$i]}" -p "$proto" -m statistic \
        --mode random --probability 0.05 -j DROP
done
# counting rules (no target) ahead of the loss: rule i counts rail i at B
for i in 4 3 2 1; do
    ip netns exec "$B" iptables -I INPUT 1 -i "${rb[$i]}" -p "$proto"
done
bytes() { # bytes <rail>: bytes that arrived at B on it
    ip netns exec "$B" iptables -L INPUT "$1" -v -x -n | awk '{ print $2; exit }'
}
start() { # start <s|a> <adapt> <first rail>
    local r=$3
    ip netns exec "$A" env BM_BTL=self,"$btl" \
        BM_BTL_TCP_IF_INCLUDE=10.250.$r.0/24,10.250.$((r + 1)).0/24 \
        BM_BTL_DGRAM_IF_INCLUDE=10.250.$r.0/24,10.250.$((r + 1)).0/24 \
        BM_PML_STRIPE_ADAPT="$2" STRIPE_LOG="$out.$1" STRIPE_STOP="$out.stop" STRIPE_SECS=30 \
        "$bmrun" --host "$A,$B" --launch-agent 'ip netns exec {host}' -n 2 --timeout 50 \
        "$prog" >"$out.$1" 2>&1 &
    pids="$pids $!"
}
start s 0 1
start a 1 3
for _ in $(seq 1 300); do
    [ "$(cat "$out".s.0 "$out".s.1 "$out".a.0 "$out".a.1 2>/dev/null | grep -c '^streaming$')" = 4 ] && break
    for p in $pids; do kill -0 "$p" 2>/dev/null || fail "a job ended before streaming"; done
    sleep 0.05
done
sleep 2
c0=() c1=()
for i in 1 2 3 4; do c0[$i]=$(bytes $i); done
t0=$(date +%s.%N)
sleep "${MEAS_SECS:-3}"
for i in 1 2 3 4; do c1[$i]=$(bytes $i); done
t1=$(date +%s.%N)
touch "$out.stop"
for p in $pids; do wait "$p" || fail "a job failed"; done
pids=
for j in s a; do grep -q "checks: 0 failed" "$out.$j.1" || fail "rank 1 of job $j found bad data"; done
res() { # res <first rail>: "share_of_clean_rail MB/s"
    awk -v a1="${c0[$1]}" -v a2="${c0[$(($1 + 1))]}" -v b1="${c1[$1]}" -v b2="${c1[$(($1 + 1))]}" \
        -v t="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" 'BEGIN {
        d1 = b1 - a1; d2 = b2 - a2
        if (d1 + d2 <= 0) { print "0 0"; exit }
        printf "%.3f %.2f\n", d1 / (d1 + d2), (d1 + d2) / t / 1e6 }'
}
read -r s_share s_rate <<<"$(res 1)"
read -r a_share a_rate <<<"$(res 3)"
echo "$btl, 5% loss on one rail of two, ${RAIL_MBIT:+$RAIL_MBIT Mbit/s each}${RAIL_MBIT:-unshaped}:"
echo "  static:   clean rail ${s_share} of the bytes, ${s_rate} MB/s"
echo "  adaptive: clean rail ${a_share} of the bytes, ${a_rate} MB/s"
drops=$(ip netns exec "$B" iptables -L INPUT 5 -v -x -n | awk '{ print $1; exit }')
echo "  dropped on rail 2: ${drops:-0} packets"
[ "${drops:-0}" -gt 0 ] || fail "the loss rule dropped nothing"
awk -v s="$a_share" 'BEGIN { exit !(s >= 0.75) }' ||
    fail "the clean rail carried ${a_share} of the bytes, not at least 0.75"
awk -v a="$a_rate" -v s="$s_rate" 'BEGIN { exit !(a >= 0.75 * s) }' ||
    fail "adaptive striping moved ${a_rate} MB/s, less than 0.75x the static split's ${s_rate}"
echo PASS
