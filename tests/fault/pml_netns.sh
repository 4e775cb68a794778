#!/bin/bash
# Failover of the point-to-point layer across kinds of transport, and
# outages it survives, between two "hosts" (network namespaces) joined by
# one veth rail, with p2p_failover streaming verified messages both ways:
#   kinds    BM_BTL=self,tcp,dgram: tcp carries the stream (dgram stands by);
#            tcp is black-holed (iptables DROP of tcp, the launcher's ports
#            excepted) while UDP still passes: the stream goes on over dgram
#            with every message intact, and moves back to tcp (checked with
#            iptables byte counters) once tcp is let through again.
#   outage   the whole rail black-holed until both ranks have reported
#            that no transport reaches the other, and for OUTAGE seconds
#            more (4 in ctest, to keep CI short; OUTAGE=20 is the issue's
#            scenario), then restored, BM_PML_PATH_GRACE=60: every transport
#            to the peer fails, its traffic is held, the job finishes with
#            every byte verified and says how long the outage lasted (at
#            least OUTAGE s on both ranks). Bounded by the reports, not by a
#            fixed time: detection takes longer on a loaded host.
#   abort    the rail black-holed for good, BM_PML_PATH_GRACE=3: the job is
#            aborted after the grace with a message naming both ranks, their
#            hosts and the failed transports (with their interfaces).
#   lossy    BM_BTL=self,tcp, 20% of the tcp segments dropped on both ends
#            for LOSS_SECS (5) seconds: the job finishes, every byte arrives
#            intact, and no path is declared failed. Detection by progress
#            with the default failure time (BM_BTL_TCP_FAIL_MS=10000): the
#            retransmission timeout capped at 1 s, a stall is a failure only
#            after 10 unanswered retransmissions, which a link losing 20%
#            each way shows with probability 0.36^10 = 4e-5 per stall
#            (tcp_live.c); a 3 s failure time (3 retransmissions, 4.7%)
#            failed a path in about 1 run in 4.
#   linkdown the local end of the rail set down on host A: tcp (interface
#            state) and dgram (ENETUNREACH) fail their paths at once (the
#            warning says so, within 1.2 s), not after their timeouts; the
#            link comes back and the held traffic goes on intact.
# Needs root and network namespaces; otherwise skipped (exit 77).
# usage: pml_netns.sh <bmrun> <p2p_failover> kinds|outage|abort|lossy|linkdown
set -u
bmrun=$1 prog=$2 scenario=$3
. "$(dirname "$0")/../harness/netns.sh"
bm_netns_require iptables
out=$(mktemp /tmp/bm-pml-netns.XXXXXX)
pid=
bm_netns_at_exit '[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null'
bm_netns_at_exit 'rm -f "$out" "$out".*'
# The job streams until this file exists (or for secs at most): the script
# creates it once it has checked what it checks.
stop=$out.stop
fail() {
    echo "FAIL: $*"
    echo "---- job output ----"
    cat "$out" "$out".0 "$out".1 2>/dev/null
    exit 1
}
bm_netns_hosts 2
A=${BM_NETNS[0]} B=${BM_NETNS[1]}
ifs=
if [ "$scenario" = linkdown ]; then
    # The launcher keeps its own rail, made first so that its address is
    # the one the daemon tries first; the transports use the other only.
    bm_netns_rail 0 1 10.250.2
    ifs="BM_BTL_TCP_IF_INCLUDE=10.250.1.0/24 BM_BTL_DGRAM_IF_INCLUDE=10.250.1.0/24"
fi
bm_netns_rail 0 1 10.250.1
ra=$BM_NETNS_DEV_A rb=$BM_NETNS_DEV_B

outage=${OUTAGE:-4}
case $scenario in
kinds) btl=self,tcp,dgram secs=80 grace=60 expect=recover ;;
outage) btl=self,tcp,dgram secs=100 grace=60 expect=recover ;;
abort) btl=self,tcp,dgram secs=60 grace=3 expect=fail ;;
lossy) btl=self,tcp secs=100 grace=60 expect=none ;;
linkdown) btl=self,tcp,dgram secs=100 grace=60 expect=recover ;;
*)
    echo "unknown scenario $scenario"
    exit 2
    ;;
esac

# Detection bounds of the transports kept short so that the test is short.
# tcp detects failures by progress (BM_BTL_TCP_FAIL_MS), the kernel's
# TCP_USER_TIMEOUT is left at its default.
fail_ms=2000
[ "$scenario" = lossy ] && fail_ms=10000
# shellcheck disable=SC2086
ip netns exec "$A" env $ifs BM_BTL=$btl P2P_FAILOVER_LOG="$out" P2P_FAILOVER_SECS=$secs \
    P2P_FAILOVER_STOP="$stop" \
    P2P_FAILOVER_EXPECT=$expect BM_PML_PATH_GRACE=$grace \
    BM_BTL_DGRAM_PROBE_MS=300 BM_BTL_DGRAM_FAIL_MS=1500 \
    BM_BTL_TCP_CONNECT_TIMEOUT=1500 BM_BTL_TCP_FAIL_MS=$fail_ms \
    BM_BTL_TCP_RECONNECT_INTERVAL=1000 \
    BM_BTL_TCP_KEEPALIVE_IDLE=1 BM_BTL_TCP_KEEPALIVE_INTVL=1 BM_BTL_TCP_KEEPALIVE_CNT=2 \
    "$bmrun" --host "$A,$B" --launch-agent 'ip netns exec {host}' -n 2 --timeout 110 \
    "$prog" >"$out" 2>&1 &
pid=$!
reports() { cat "$out".0 "$out".1 2>/dev/null; }
for _ in $(seq 1 300); do
    [ "$(reports | grep -c '^streaming$')" = 2 ] && break
    kill -0 "$pid" 2>/dev/null || fail "the job ended before streaming"
    sleep 0.1
done
[ "$(reports | grep -c '^streaming$')" = 2 ] || fail "the ranks never started streaming"

# The launcher's connections (controller <-> daemon, ranks <-> key-value
# service) must survive the black hole: its listening ports stay open.
bm_netns_spare_launcher "$A"
rules() { # rules -A|-D [proto]: the black hole (of proto only, if given)
    bm_netns_drop "$1" "$ra:$A $rb:$B" ${2:+-p "$2"}
}
# Byte counters of what B receives over the rail, by protocol (rules with no
# target count and let everything through).
ip netns exec "$B" iptables -I INPUT -i "$rb" -p tcp
ip netns exec "$B" iptables -I INPUT -i "$rb" -p udp
bytes() { # bytes tcp|udp (listed by number: the counting rules have no target)
    local p=6
    [ "$1" = udp ] && p=17
    ip netns exec "$B" iptables -L INPUT -v -x -n |
        awk -v p="$p" -v d="$rb" '$3 == p && $4 == "--" && $5 == d { print $2; exit }'
}
wait_for() { # wait_for <seconds> <pattern> [n]: n (1) lines of the job's output match
    local i
    for i in $(seq 1 $(($1 * 10))); do
        [ "$(grep -c "$2" "$out")" -ge "${3:-1}" ] && return 0
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}
rate() { # rate tcp|udp: bytes B received over the rail in one second
    local a b
    a=$(bytes "$1")
    sleep 1
    b=$(bytes "$1")
    echo $((b - a))
}

case $scenario in
kinds)
    t=$(rate tcp)
    echo "before the fault, in one second: tcp carried $t bytes"
    [ "$t" -gt 100000 ] || fail "tcp did not carry the stream"
    rules -A tcp
    echo "tcp black-holed (launcher ports kept: ${BM_NETNS_SPARED:-none}); UDP passes"
    # Both ranks: each detects the black hole by its own sends' lack of
    # progress, up to BM_BTL_TCP_FAIL_MS apart, and the stream (both ways)
    # stalls until the second has moved too (CI of cb7f62b, ASan: measured
    # after rank 0's line alone, dgram carried 3572 bytes in that second).
    wait_for 15 "its traffic moves to the standby transport dgram" 2 ||
        fail "the traffic of both ranks did not move to dgram within 15 s"
    u=$(rate udp)
    echo "on the standby, in one second: dgram carried $u bytes"
    [ "$u" -gt 100000 ] || fail "dgram did not carry the stream"
    rules -D tcp
    echo "tcp let through again"
    wait_for 15 "its traffic moves back from dgram" 2 ||
        fail "the traffic of both ranks did not move back to tcp"
    sleep 0.5
    t=$(rate tcp)
    echo "after moving back, in one second: tcp carried $t bytes"
    [ "$t" -gt 100000 ] || fail "tcp was not used again"
    ;;
outage)
    rules -A
    echo "rail black-holed (launcher ports kept: ${BM_NETNS_SPARED:-none})"
    # Both ranks report the outage (each when its own transports have all
    # failed; the report repeats, hence one line per rank counted).
    both=0
    for _ in $(seq 1 200); do
        both=$(grep -o "rank [01] ([^)]*): no working transport to rank" "$out" | sort -u | wc -l)
        [ "$both" -ge 2 ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    [ "$both" -ge 2 ] || fail "the outage was not reported by both ranks within 20 s"
    echo "both ranks hold their traffic; the black hole lasts $outage s more"
    sleep "$outage"
    rules -D
    echo "rail restored"
    wait_for 20 "again after an outage of" 2 || fail "the job did not say that the peer is back"
    # The traffic was held on both ranks through the whole time both had
    # reported the outage.
    held=$(grep -o "again after an outage of [0-9.]*" "$out" | awk '{ print $NF }' | sort -n | head -1)
    awk -v h="$held" -v o="$outage" 'BEGIN { exit !(h >= o) }' ||
        fail "the outage lasted only ${held} s on some rank, not the $outage s it was held"
    ;;
lossy)
    loss=(-p tcp -m statistic --mode random --probability 0.2)
    bm_netns_drop -A "$ra:$A $rb:$B" "${loss[@]}"
    a=$(bytes tcp)
    dropped() { ip netns exec "$B" iptables -L INPUT -v -x -n | awk '/statistic/ { n = $1; exit } END { print n + 0 }'; }
    # At least LOSS_SECS (5) s, and on until the rule has dropped 3 segments
    # (at most 20 s): tcp backing off under 20% loss each way may send only a
    # few segments in 5 s (once: 832 bytes, 2 drops, under ASan).
    t0=$SECONDS
    sleep "${LOSS_SECS:-5}"
    while [ "$(dropped)" -lt 3 ] && [ $((SECONDS - t0)) -lt 20 ]; do sleep 0.5; done
    b=$(bytes tcp)
    drops=$(dropped)
    echo "under 20% loss for $((SECONDS - t0)) s: tcp carried $((b - a)) bytes to B, $drops segments dropped at B"
    [ "${drops:-0}" -ge 3 ] || fail "the loss rule dropped nothing"
    kill -0 "$pid" 2>/dev/null || fail "the job ended under loss"
    bm_netns_drop -D "$ra:$A $rb:$B" "${loss[@]}" # the loss ends: the job finishes quickly
    ;;
linkdown)
    # The job's lines are stamped as they arrive (bash builtins, no fork per
    # line): timing them by polling with grep, date and awk, as before, added
    # the forks' own latency (a fork costs 0.1-0.4 s at load 40 here), and
    # dgram once 'failed' at 0.78 s. Each path must fail for the reason
    # "failed at once" (the local error: interface state for tcp, ENETUNREACH
    # for dgram), and within 1.2 s, before either timeout could have fired
    # (BM_BTL_DGRAM_FAIL_MS 1.5 s, BM_BTL_TCP_FAIL_MS 2 s).
    # tail starts at the byte offset the output has now, not at its end when
    # tail gets to open it (-n 0): a tail that started late would skip the
    # lines (at worst it stamps them late, which errs towards failing).
    tail --pid=$$ -c +$(($(stat -c %s "$out") + 1)) -F "$out" 2>/dev/null |
        while IFS= read -r l; do echo "${EPOCHREALTIME/./} $l"; done >"$out.stamped" &
    stamper=$!
    bm_netns_at_exit 'kill "$stamper" 2>/dev/null'
    ip -n "$A" link set "$ra" down
    t0=${EPOCHREALTIME/./}
    echo "local end $ra of the rail set down on $A"
    tcp_re=':0\] pml: warning: transport tcp:.* can no longer reach.*failed at once: the local interface is down'
    dg_re=':0\] pml: warning: transport dgram:.* can no longer reach.*failed at once with'
    for _ in $(seq 1 100); do
        grep -q "$tcp_re" "$out.stamped" && grep -q "$dg_re" "$out.stamped" && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    after() { # after <re>: ms from the link down to the first stamped line matching re
        local us
        us=$(grep -m1 "$1" "$out.stamped" | cut -d' ' -f1)
        [ -n "$us" ] && echo $(((us - t0) / 1000))
    }
    ttcp=$(after "$tcp_re") tdg=$(after "$dg_re")
    echo "rank 0 saw its paths fail at once after: tcp ${ttcp:-never} ms, dgram ${tdg:-never} ms"
    grep "can no longer reach" "$out" | head -4
    [ -n "$ttcp" ] && [ "$ttcp" -lt 1200 ] ||
        fail "tcp did not fail at once on the local link down (${ttcp:-never} ms)"
    [ -n "$tdg" ] && [ "$tdg" -lt 1200 ] ||
        fail "dgram did not fail at once on the local link down (${tdg:-never} ms)"
    ip -n "$A" link set "$ra" up
    echo "link up again"
    wait_for 20 "again after an outage of" || fail "the job did not say that the peer is back"
    ;;
abort)
    rules -A
    t0=$(date +%s.%N)
    echo "rail black-holed for good (launcher ports kept: ${BM_NETNS_SPARED:-none})"
    wait "$pid"
    rc=$?
    pid=
    t1=$(date +%s.%N)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    echo "the job ended (exit $rc) ${secs} s after the black hole"
    [ "$rc" != 0 ] || fail "the job did not fail"
    grep -q "has had no working transport for 3 s (BM_PML_PATH_GRACE) to rank" "$out" ||
        fail "no abort naming the grace"
    grep -E "rank [01] \([^)]+\) has had no working transport for 3 s \(BM_PML_PATH_GRACE\) to rank [01] \([^)]+\): .*tcp:$ra|tcp:$rb" "$out" |
        grep -q "dgram:" || fail "the abort does not name both ranks, hosts and interfaces"
    grep -q "no working transport to rank [01] .* for 0 s" "$out" ||
        fail "the outage was not reported when it began"
    awk -v s="$secs" 'BEGIN { exit !(s < 20) }' || fail "the abort took ${secs} s (grace 3 s)"
    echo "---- job output ----"
    cat "$out"
    echo PASS
    exit 0
    ;;
esac
touch "$stop"
wait "$pid"
rc=$?
pid=
reports
[ $rc = 0 ] || fail "the job failed (exit $rc)"
[ "$(reports | grep -c 'checks: 0 failed')" = 2 ] || fail "messages were lost or corrupted"
echo "---- job output ----"
cat "$out"
echo PASS
