#!/bin/bash
# Failover of the point-to-point layer: two "hosts" (network namespaces)
# joined by two veth rails, each a tcp path between the two ranks. While
# p2p_failover streams verified messages over both (checked with the
# interface counters), rail 1 is black-holed
# (iptables DROP on both ends, except the launcher's own connection). The
# tcp transport reports the path failed after its user timeout; the PML must
# resend what was lost on rail 2 and finish the stream with every message
# intact, warning which transport failed. Needs root and network namespaces;
# otherwise skipped (exit 77).
# With "recover", the rail comes back a few seconds later: the transport
# reports the path recovered and the PML must use it again (checked with
# the interface counters) while the stream goes on.
# The job streams until the script has seen what it checks (it then creates
# the stop file), not for a fixed time: a loaded machine once used up a
# fixed 14 s in start-up and the first second's measurement, the stream
# ended just after the black hole, and no failure was reported.
# usage: p2p_failover.sh <bmrun> <p2p_failover> tcp|dgram [recover]
set -u
bmrun=$1 prog=$2 btl=$3 mode=${4:-}
. "$(dirname "$0")/../harness/netns.sh"
bm_netns_require iptables
out=$(mktemp /tmp/bm-p2p-failover.XXXXXX)
pid=
bm_netns_at_exit '[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null'
bm_netns_at_exit 'rm -f "$out" "$out".*'
stop=$out.stop
fail() {
    echo "FAIL: $*"
    echo "---- job output ----"
    cat "$out" "$out".0 "$out".1 2>/dev/null
    exit 1
}
bm_netns_hosts 2
A=${BM_NETNS[0]} B=${BM_NETNS[1]}
bm_netns_rail 0 1 10.250.1
ra1=$BM_NETNS_DEV_A rb1=$BM_NETNS_DEV_B
bm_netns_rail 0 1 10.250.2
rb2=$BM_NETNS_DEV_B

ip netns exec "$A" env BM_BTL=self,$btl P2P_FAILOVER_LOG="$out" P2P_FAILOVER_SECS=80 \
    P2P_FAILOVER_STOP="$stop" \
    P2P_FAILOVER_EXPECT=$([ "$mode" = recover ] && echo recover || echo fail) \
    BM_BTL_DGRAM_PROBE_MS=300 \
    BM_BTL_TCP_CONNECT_TIMEOUT=1500 BM_BTL_TCP_USER_TIMEOUT=2000 \
    BM_BTL_TCP_KEEPALIVE_IDLE=1 BM_BTL_TCP_KEEPALIVE_INTVL=1 BM_BTL_TCP_KEEPALIVE_CNT=2 \
    "$bmrun" --host "$A,$B" --launch-agent 'ip netns exec {host}' -n 2 --timeout 90 \
    "$prog" >"$out" 2>&1 &
pid=$!
reports() { cat "$out".0 "$out".1 2>/dev/null; }
for _ in $(seq 1 300); do
    [ "$(reports | grep -c '^streaming$')" = 2 ] && break
    kill -0 "$pid" 2>/dev/null || fail "the job ended before streaming"
    sleep 0.1
done
[ "$(reports | grep -c '^streaming$')" = 2 ] || fail "the ranks never started streaming"
# Before the fault both rails carry the stream (rendezvous fragments are
# striped over the send paths by bandwidth weight): 100 kB each, whatever
# the time it takes on a loaded machine.
bm_netns_rx_wait -p "$pid" "$B" "$rb1:100000" "$rb2:100000"
ok=$?
echo "before the fault: rail 1 carried ${BM_NETNS_RX[0]} bytes, rail 2 ${BM_NETNS_RX[1]} bytes"
[ $ok = 0 ] || fail "the stream did not use both rails"
# The launcher's connections (controller <-> daemon, ranks <-> key-value
# service) must survive: keep the controller's service ports open.
bm_netns_spare_launcher "$A"
rules() { bm_netns_drop "$1" "$ra1:$A $rb1:$B"; } # rules -A|-D: the black hole of rail 1
rules -A
echo "rail 1 black-holed (launcher ports kept: ${BM_NETNS_SPARED:-none})"
failed="can no longer reach rank\|continuing on the remaining transports"
for _ in $(seq 1 600); do
    grep -q "$failed" "$out" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
grep -q "$failed" "$out" || fail "the failure of rail 1 was not reported"
if [ "$mode" != recover ]; then
    # The stream goes on over rail 2 after the failure (1 MB), with what
    # rail 1 lost resent: then the job may stop.
    bm_netns_rx_wait -p "$pid" "$B" "$rb2:1000000"
    ok=$?
    echo "after the failure: rail 2 carried ${BM_NETNS_RX[0]} bytes"
    [ $ok = 0 ] || fail "the stream did not go on over rail 2"
else
    rules -D
    echo "rail 1 restored"
    # The probes of the failed path (BM_BTL_DGRAM_PROBE_MS, tcp's
    # reconnects) find it working again: bounded by the job, which streams
    # until the stop file, not by a guess of how long a loaded machine takes
    # (this wait and the next were 10 s each; at load 30-48 the test failed
    # 3 of 3 in one of them while the stream went on).
    for _ in $(seq 1 600); do
        grep -q "reaches rank [01] again" "$out" && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    grep -q "reaches rank [01] again" "$out" || fail "the recovery of rail 1 was not reported"
    # When only one side's transport declared the rail failed (and dropped
    # what it was receiving on it), the PML restarts what may have been
    # lost at once (pml/restart.c, LOST; checked by p2p_restart_lost*), not
    # after BM_PML_RESTART_MS (1 s). The peer's transport may still hold
    # what it sent on the failed rail until its own retransmission (a clean
    # clone's CI at 0ed169d saw both rails carry 0 bytes in the first second
    # after the recovery): rail 1 must carry 100 kB before rail 2 alone has
    # carried 50 MB (it carries about as much as rail 2 once used again).
    bm_netns_rx_wait -p "$pid" -u "$rb2:50000000" "$B" "$rb1:100000"
    ok=$?
    echo "after the recovery: rail 1 carried ${BM_NETNS_RX[0]} bytes, rail 2 $BM_NETNS_RX_U bytes"
    [ $ok = 0 ] || fail "the recovered rail was not used again"
fi
touch "$stop"
wait "$pid"
rc=$?
pid=
reports
[ $rc = 0 ] || fail "the job failed (exit $rc) after rail 1 was black-holed"
[ "$(reports | grep -c 'checks: 0 failed')" = 2 ] || fail "messages were lost or corrupted"
grep -q "continuing on the remaining transports\|can no longer reach rank" "$out" ||
    fail "no warning that a transport failed"
echo "---- job output ----"
cat "$out"
echo PASS
