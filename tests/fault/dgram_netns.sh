#!/bin/bash
# Real faults for the dgram transport: two network namespaces joined by a
# veth pair stand for two hosts (one rank each, bmrun's launch agent is
# 'ip netns exec {host}'), and the kernel loses, duplicates or reorders the
# UDP traffic between them (recipes of TESTBED.md):
#   loss P       iptables statistic DROP with probability P in both
#                receivers' INPUT chains; the conformance suite must pass
#                (every byte verified, exactly once) and resends must show.
#   dup P        iptables TEE duplicates a share P of the datagrams.
#   reorder P    a share P of the datagrams goes through a slow htb class.
#   blackhole    every datagram to rank 1 vanishes: rank 0 must report the
#                path failed within the bound, then recover when it is lifted.
#   mtu          datagrams above 1000 bytes vanish on the way to rank 1 (an
#                MTU black hole): the connectivity check must say so.
#   rails        a second veth pair (another subnet): one module per
#                interface, paired rail with rail, a stream over both.
#   stray        rank 0 fires garbage and foreign datagrams at rank 1's ports
#                during a stream over the veth: nothing is disturbed.
#   repair       two rails on two subnets, every datagram on rail 1 dropped
#                from the start (the pairing picks rail with rail): the
#                connectivity check drops that pair and re-solves the
#                pairing, rail 1's module is left without a partner and its
#                traffic moves to rail 2; an MPI job (P2P: every size, every
#                byte verified) must pass, rail 2 must carry the bytes and
#                the warning must name the pair and the cause.
#   repair_addr  one veth, two addresses on each side (four same-subnet
#                pairs, the matching picks .1-.2 and .3-.4), datagrams
#                between .1 and .2 dropped: re-solving pairs .1-.4 and
#                .3-.2, so both endpoints of each rank are retargeted (one
#                of them with traffic in flight) and both modules carry the
#                MPI job's messages.
# Needs root and ip netns; otherwise skipped (exit 77).
# usage: dgram_netns.sh BMRUN BTL_CONFORMANCE DGRAM_FAULT KIND PROB [P2P]
BMRUN=$1 CONF=$2 FAULT=$3 KIND=$4 PROB=$5 P2P=$6

. "$(dirname "$0")/../harness/netns.sh"
bm_netns_require iptables
NET=10.250.1
T=$(mktemp -d)
bm_netns_at_exit 'rm -rf "$T"'
bm_netns_hosts 2
A=${BM_NETNS[0]} B=${BM_NETNS[1]}
bm_netns_rail 0 1 $NET
VA=$BM_NETNS_DEV_A VB=$BM_NETNS_DEV_B

export BM_BTL=self,dgram
export BM_BTL_DGRAM_STATS=86400 # print the counters at finalize
AGENT='ip netns exec {host}'
fail=0
bad() {
    echo "FAIL: $*"
    fail=1
}
job() { # job NAME PROGRAM ARGS...: run 2 ranks, one per namespace
    local name=$1
    shift
    ip netns exec $A "$BMRUN" -n 2 --host $A,$B --launch-agent "$AGENT" --tag-output \
        --timeout 200 "$@" >"$T/$name.out" 2>"$T/$name.err"
}
p2p_job() { # p2p_job NAME: the MPI job P2P (every size, every byte verified) must pass
    job $1 "$P2P"
    local rc=$?
    [ $rc -eq 0 ] || bad "$1 job exited $rc"
    local n=$(grep -c "p2p_sizes: [1-9][0-9]* passed, 0 failed" "$T/$1.out")
    [ "$n" -eq 2 ] || bad "$1: $n of 2 ranks passed"
}
show() {
    echo "---- stdout"
    tail -20 "$T/$1.out"
    echo "---- stderr"
    tail -20 "$T/$1.err"
}

if [ "$KIND" = rails ] || [ "$KIND" = repair ]; then
    bm_netns_rail 0 1 10.250.2
    VA2=$BM_NETNS_DEV_A VB2=$BM_NETNS_DEV_B
fi

case $KIND in
loss)
    ip netns exec $B iptables -A INPUT -i $VB -p udp -m statistic --mode random \
        --probability "$PROB" -j DROP
    ip netns exec $A iptables -A INPUT -i $VA -p udp -m statistic --mode random \
        --probability "$PROB" -j DROP
    ;;
dup)
    ip netns exec $A iptables -t mangle -A POSTROUTING -o $VA -p udp -m statistic \
        --mode random --probability "$PROB" -j TEE --gateway $NET.2
    ip netns exec $B iptables -t mangle -A POSTROUTING -o $VB -p udp -m statistic \
        --mode random --probability "$PROB" -j TEE --gateway $NET.1
    ;;
reorder)
    for side in "$A $VA" "$B $VB"; do
        set -- $side
        ip netns exec $1 tc qdisc add dev $2 root handle 1: htb default 10
        ip netns exec $1 tc class add dev $2 parent 1: classid 1:10 htb rate 10gbit
        ip netns exec $1 tc class add dev $2 parent 1: classid 1:20 htb rate 2mbit ceil 2mbit \
            burst 16000b cburst 16000b
        ip netns exec $1 iptables -t mangle -A POSTROUTING -o $2 -p udp -m statistic \
            --mode random --probability "$PROB" -j CLASSIFY --set-class 1:20
    done
    ;;
esac

case $KIND in
loss | dup | reorder)
    job conf "$CONF" dgram
    rc=$?
    [ $rc -eq 0 ] || bad "conformance over $KIND $PROB exited $rc"
    n=$(grep -c "btl_conformance\[dgram\] rank [01]: [0-9]* passed, 0 failed" "$T/conf.out")
    [ "$n" -eq 2 ] || bad "conformance over $KIND $PROB: $n of 2 ranks passed"
    case $KIND in
    loss) grep -Eq "resends_(timeout|fast)=[1-9]" "$T/conf.err" ||
        bad "no resends counted: was the loss applied?" ;;
    dup) grep -Eq "recv_(dup|old)=[1-9]" "$T/conf.err" ||
        bad "no duplicates counted: was TEE applied?" ;;
    esac
    ;;
blackhole)
    export BM_BTL_DGRAM_FAIL_MS=3000 BM_BTL_DGRAM_PROBE_MS=100
    FLAG=$T/blackhole
    job bh "$FAULT" blackhole "$FLAG" &
    pid=$!
    for _ in $(seq 600); do
        grep -q "phase 1 done" "$T/bh.out" 2>/dev/null && break
        sleep 0.1
    done
    ip netns exec $B iptables -A INPUT -i $VB -p udp -j DROP
    touch "$FLAG"
    for _ in $(seq 600); do
        [ -e "$FLAG.failed" ] && break
        sleep 0.1
    done
    ip netns exec $B iptables -D INPUT -i $VB -p udp -j DROP
    wait $pid
    rc=$?
    [ $rc -eq 0 ] || bad "blackhole job exited $rc"
    ms=$(sed -n 's/.*path failure reported after \([0-9]*\) ms.*/\1/p' "$T/bh.out")
    if [ -z "$ms" ]; then
        bad "no path failure reported"
    elif [ "$ms" -gt 4000 ]; then
        bad "path failure took $ms ms (bound: BM_BTL_DGRAM_FAIL_MS=3000)"
    else
        echo "path failure reported after $ms ms"
    fi
    grep -q "path recovered" "$T/bh.out" || bad "no recovery reported"
    ;;
rails)
    job rails "$FAULT" stream 2000
    rc=$?
    [ $rc -eq 0 ] || bad "rails job exited $rc"
    grep -q "rank 0: stream of 2000 messages over 2 dgram path(s) ok" "$T/rails.out" ||
        bad "rank 0 did not use two dgram paths"
    for r in 0 1; do
        n=$(grep -c "\[$r\] \[dgram stats\] rank $r dgram:.*recv_delivered=[1-9]" "$T/rails.err")
        [ "$n" -eq 2 ] || bad "rank $r: $n of its 2 modules delivered messages"
    done
    grep -q "bad_sender" "$T/rails.err" && bad "datagrams from unknown senders: mispaired?"
    ;;
mtu)
    ip netns exec $B iptables -A INPUT -i $VB -p udp -m length --length 1000:65535 -j DROP
    job mtu "$FAULT" mtu "$T/mtu.flag"
    rc=$?
    [ $rc -eq 0 ] || bad "mtu job exited $rc"
    grep -q "MTU problem reported after" "$T/mtu.out" || bad "no MTU problem reported"
    # the only pair failed: the report names it, the size lost and the cause
    grep -Eq "rank 1 is unreachable on every dgram interface pair: $NET\.1 \($VA\) -> $NET\.2 \($VB\): small pings answered, [0-9]+-byte ones lost \(MTU problem\)" \
        "$T/mtu.out" || bad "the report does not name the pair, the size and the MTU problem"
    ;;
repair)
    # UDP only: bmrun's own connections must still work
    ip netns exec $A iptables -A INPUT -i $VA -p udp -j DROP
    ip netns exec $B iptables -A INPUT -i $VB -p udp -j DROP
    export BM_BTL_DGRAM_CHECK_MS=100
    p2p_job repair
    grep -Eq "connectivity check from dgram:bmr1[ab]$$ to rank [01] \(10\.250\.1\.[12] on bmr1[ab]$$\) failed: no answer" \
        "$T/repair.err" || bad "no warning naming the failed rail-1 pair and 'no answer'"
    grep -Eq "without a partner at rank [01] \(pairs dropped: 10\.250\.1\.[12] \(bmr1[ab]$$\) -> 10\.250\.1\.[12] \(bmr1[ab]$$\): .*no path" \
        "$T/repair.err" || bad "rail 1's endpoint was not failed with the dropped pair and its cause"
    grep -q "unreachable on every" "$T/repair.err" && bad "a rank was declared unreachable"
    for side in "$A $VA2" "$B $VB2"; do
        set -- $side
        rx=$(bm_netns_rx $1 $2)
        echo "rail 2 ($2) received $rx bytes"
        [ "$rx" -gt 33554432 ] || bad "rail 2 ($2) received only $rx bytes: traffic did not move"
    done
    grep -q "dgram:bmr1[ab]$$:.*recv_delivered=[1-9]" "$T/repair.err" &&
        bad "something was delivered over rail 1"
    ;;
repair_addr)
    ip -n $A addr add $NET.3/24 dev $VA
    ip -n $B addr add $NET.4/24 dev $VB
    ip netns exec $B iptables -A INPUT -s $NET.1 -d $NET.2 -p udp -j DROP
    ip netns exec $A iptables -A INPUT -s $NET.2 -d $NET.1 -p udp -j DROP
    export BM_BTL_DGRAM_CHECK_MS=100 BM_VERBOSE=btl/dgram:3
    p2p_job repair_addr
    grep -Eq "connectivity check from dgram:bmr1[ab]$$ to rank [01] \($NET\.[12] on bmr1[ab]$$\) failed" \
        "$T/repair_addr.err" || bad "the pair $NET.1-$NET.2 was not checked and dropped"
    for r in 0 1; do
        n=$(grep -c "^\[$r\] .*re-paired: now with rank" "$T/repair_addr.err")
        [ "$n" -eq 2 ] || bad "rank $r: $n of its 2 endpoints re-paired"
        n=$(grep -c "\[$r\] \[dgram stats\] rank $r dgram:.*recv_delivered=[1-9]" "$T/repair_addr.err")
        [ "$n" -eq 2 ] || bad "rank $r: $n of its 2 modules delivered messages"
    done
    grep -q "unreachable on every\|without a partner" "$T/repair_addr.err" &&
        bad "an endpoint was failed although every module has a partner"
    ;;
stray)
    job stray "$FAULT" stray
    rc=$?
    [ $rc -eq 0 ] || bad "stray job exited $rc"
    grep -q "stray datagrams dropped" "$T/stray.out" || bad "rank 1 did not report the drops"
    ;;
*)
    echo "unknown scenario $KIND"
    exit 2
    ;;
esac

for f in "$T"/*.out; do
    name=$(basename "$f" .out)
    if [ $fail -ne 0 ]; then
        show "$name"
    else
        grep -h "dgram stats\|passed\|reported after\|dropped\|connectivity check\|re-paired" \
            "$f" "$T/$name.err" | head -12
    fi
done
[ $fail -eq 0 ] && echo "PASS: dgram $KIND $PROB"
exit $fail
