#!/bin/bash
# The tcp transport between two "hosts" (network namespaces) joined by two
# veth rails on different subnets (10.250.1.0/24 and 10.250.2.0/24):
#   rails      both interface pairs carry traffic (interface counters);
#   droprail   rail 1 black-holed from the start (iptables DROP on both
#              ends): the job still runs, over rail 2, and the warning names
#              the dropped pair (both addresses);
#   blackhole  both rails black-holed in the middle of a stream: both ranks
#              report the failure within the configured timeouts, never hang;
#   blackhole_idle  the same with both ranks idle (nothing unacknowledged):
#              keepalive must notice;
#   recover    the black hole is lifted after both ranks reported it: the
#              path is reported recovered and carries traffic again.
# Needs root and network namespaces; otherwise skipped (exit 77).
# usage: tcp_netns.sh <bmrun> <tcp_fault> rails|droprail|blackhole|blackhole_idle|recover
set -u
bmrun=$1 prog=$2 scenario=$3
. "$(dirname "$0")/../harness/netns.sh"
bm_netns_require iptables
out=$(mktemp /tmp/bm-tcp-netns.XXXXXX)
pid=
bm_netns_at_exit '[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null'
bm_netns_at_exit 'rm -f "$out" "$out".*'
fail() {
    echo "FAIL: $*"
    echo "---- job output ----"
    cat "$out"
    exit 1
}
bm_netns_hosts 2
A=${BM_NETNS[0]} B=${BM_NETNS[1]}
bm_netns_rail 0 1 10.250.1
ra1=$BM_NETNS_DEV_A rb1=$BM_NETNS_DEV_B
bm_netns_rail 0 1 10.250.2
ra2=$BM_NETNS_DEV_A rb2=$BM_NETNS_DEV_B

rx() { bm_netns_rx "$B" "$1"; }
drop_rail() { bm_netns_drop -A "$1:$A $2:$B"; } # drop_rail <A-side dev> <B-side dev>
undrop_all() {
    ip netns exec "$A" iptables -F INPUT
    ip netns exec "$B" iptables -F INPUT
}
run_job() { # run_job <tcp_fault args...>: in the background, output in $out
    ip netns exec "$A" env BM_BTL=self,tcp BM_RUN_KILL_GRACE=30 TCP_FAULT_LOG="$out" \
        BM_BTL_TCP_CONNECT_TIMEOUT=1500 BM_BTL_TCP_USER_TIMEOUT=3000 \
        BM_BTL_TCP_KEEPALIVE_IDLE=1 BM_BTL_TCP_KEEPALIVE_INTVL=1 BM_BTL_TCP_KEEPALIVE_CNT=2 \
        "$bmrun" --host "$A,$B" --launch-agent 'ip netns exec {host}' -n 2 --timeout 100 \
        "$prog" "$@" >"$out" 2>&1 &
    pid=$!
}

case $scenario in
rails)
    r1=$(rx "$rb1") r2=$(rx "$rb2")
    run_job rails 64
    wait "$pid" || fail "the job failed"
    pid=
    d1=$(($(rx "$rb1") - r1)) d2=$(($(rx "$rb2") - r2))
    echo "rail 1 carried $d1 bytes, rail 2 carried $d2 bytes"
    grep -q "path 1: tcp:" "$out" || fail "only one tcp path between the hosts"
    [ "$d1" -gt $((16 << 20)) ] || fail "rail 1 carried too little ($d1 bytes)"
    [ "$d2" -gt $((16 << 20)) ] || fail "rail 2 carried too little ($d2 bytes)"
    ;;
droprail)
    drop_rail "$ra1" "$rb1"
    r2=$(rx "$rb2")
    # The black hole is there before the job starts, so it also meets the
    # launcher: host B's daemon and rank 1 try A's rail-1 address first
    # (5 s each by default, 10 of the test's 13 s) before rail 2. A local
    # veth answers a connect in the kernel, load or not: 1 s is plenty.
    export BM_RUN_CONNECT_TIMEOUT=1 BM_RTE_CONNECT_TIMEOUT=1000
    run_job rails 32
    wait "$pid" || fail "the job failed with rail 1 black-holed"
    pid=
    d2=$(($(rx "$rb2") - r2))
    echo "rail 2 carried $d2 bytes"
    [ "$d2" -gt $((32 << 20)) ] || fail "rail 2 did not carry the job ($d2 bytes)"
    grep -E "interface pair 10\.250\.1\.[12] .* -> 10\.250\.1\.[12]:[0-9]+ .* cannot connect" \
        "$out" || fail "no warning naming the dropped pair"
    ;;
blackhole | blackhole_idle | recover)
    # Both ranks write their findings to $out.<rank>: the black hole also
    # cuts bmrun's output forwarding from host B.
    case $scenario in
    blackhole) run_job stream ;;
    blackhole_idle) run_job stream idle ;;
    recover) run_job stream recover ;;
    esac
    reports() { cat "$out".0 "$out".1 2>/dev/null; }
    for _ in $(seq 1 300); do
        [ "$(reports | grep -c 'streaming$')" = 2 ] && break
        kill -0 "$pid" 2>/dev/null || fail "the job ended before streaming"
        sleep 0.1
    done
    [ "$(reports | grep -c 'streaming$')" = 2 ] || fail "the ranks never started streaming"
    t0=$(date +%s.%N)
    drop_rail "$ra1" "$rb1"
    drop_rail "$ra2" "$rb2"
    for _ in $(seq 1 400); do
        if [ "$scenario" = recover ]; then
            [ "$(reports | grep -c 'detected the failure')" = 2 ] && break
        else
            [ "$(reports | grep -c 'checks: ')" = 2 ] && break
        fi
        sleep 0.1
    done
    t1=$(date +%s.%N)
    if [ "$scenario" = recover ]; then
        undrop_all
        for _ in $(seq 1 600); do
            [ "$(reports | grep -c 'checks: ')" = 2 ] && break
            sleep 0.1
        done
        wait "$pid" || fail "the job failed after the recovery"
        pid=
        [ "$(reports | grep -c 'path recovered')" = 2 ] || fail "not both ranks saw the recovery"
        [ "$(reports | grep -c 'after recovery 16 sends completed, 16 received')" = 2 ] ||
            fail "traffic did not flow again after the recovery"
    fi
    # bmrun itself is cut off from host B's daemon and would wait for it:
    # end it (the cleanup ends what is left in the namespaces).
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    pid=
    reports
    [ "$(reports | grep -c 'detected the failure')" = 2 ] || fail "not both ranks reported the failure"
    [ "$(reports | grep -c 'checks: 0 failed')" = 2 ] || fail "checks failed"
    reports | grep -q "connection to rank [01] (10\.250\.[12]\.[12]:[0-9]*) via bmr[12][ab]$$ timed out" ||
        fail "the error does not name the peer, its address and the interface"
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
    echo "both ranks reported the black hole within ${secs} s"
    # USER_TIMEOUT 3 s (writers) or keepalive 1 + 2 x 1 s (readers), plus slack.
    awk -v s="$secs" 'BEGIN { exit !(s < 10) }' || fail "detection took ${secs} s (limit 10 s)"
    ;;
*)
    echo "unknown scenario $scenario"
    exit 2
    ;;
esac
echo "---- job output ----"
cat "$out"
echo PASS
