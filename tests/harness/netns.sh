# Network-namespace test beds for shell tests (sourced, not run): a few
# "hosts" (namespaces with unique names) joined by veth "rails" on given
# subnets, torn down on exit, and the skip check (exit 77) for machines
# where they cannot be made. TESTBED.md has the recipes this follows.
#
#   . "$(dirname "$0")/../harness/netns.sh"
#   bm_netns_require iptables          # exit 77 unless root + ip netns (+ tools)
#   bm_netns_hosts 2                   # BM_NETNS=(bmns<pid>h0 bmns<pid>h1), or exit 77
#   bm_netns_rail 0 1 10.250.1         # h0 10.250.1.1/24 -- h1 10.250.1.2/24
#   ra1=$BM_NETNS_DEV_A rb1=$BM_NETNS_DEV_B
#   bm_netns_at_exit 'kill "$pid" 2>/dev/null' # runs first at exit
#   ip netns exec "${BM_NETNS[1]}" ./prog ...
#   bm_netns_spare_launcher "${BM_NETNS[0]}" # once bmrun listens there
#   bm_netns_drop -A "$ra1:${BM_NETNS[0]} $rb1:${BM_NETNS[1]}" # black hole
#   bm_netns_drop -D "$ra1:..." ...           # and its end (same arguments)
#   bm_netns_rx "${BM_NETNS[1]}" "$rb1"       # bytes received on rb1 so far
#   bm_netns_rx_wait -p "$pid" -u "$rb2:50000000" "${BM_NETNS[1]}" "$rb1:100000"
#                       # until rb1 got 100 kB more (0), or rb2 50 MB / the job ended (1)
#
# At exit (trap EXIT, installed when sourced) the commands given to
# bm_netns_at_exit run in order, then every process still inside the
# namespaces is killed and the namespaces (with their veths and iptables
# rules) are deleted, then the EXIT trap the script had before sourcing
# this file runs. Scripts must not replace the EXIT trap afterwards; use
# bm_netns_at_exit. Works under `set -u`. Names contain the shell's pid, so
# tests running in parallel never collide; addresses exist only inside the
# namespaces, so tests may reuse the same subnets.
#
# Adopting it in a script that sets up namespaces by hand (as
# tests/fault/*.sh do): replace the root/ip/iptables checks with
# bm_netns_require, 'ip netns add' + loopback with bm_netns_hosts, each veth
# pair with bm_netns_rail (read the device names from BM_NETNS_DEV_A/B),
# and the cleanup trap with bm_netns_at_exit for what is not a namespace
# (the job's pid, temporary files).
#
# Black holes (iptables on the receiving side of each end) spare the
# launcher's own connections (controller <-> daemon, ranks <-> key-value
# service), which cross the same rails: bm_netns_spare_launcher records the
# ports bmrun listens on, and bm_netns_drop accepts TCP to and from them
# ahead of its DROP.

BM_NETNS=()
_bm_netns_exit_cmds=()
_bm_netns_rails=0
# The script's own EXIT trap (e.g. removing its temporary folder) still
# runs; a function, so that the caller's positional parameters stay intact.
_bm_netns_prev_trap() {
    eval "set -- $(trap -p EXIT)"
    [ $# -lt 3 ] || printf '%s' "$3"
}
_bm_netns_prev_trap=$(_bm_netns_prev_trap)

_bm_netns_skip() {
    echo "SKIP: $*"
    exit 77
}

# bm_netns_require [COMMAND...]: skip (exit 77) unless running as root with
# a working 'ip netns' and every COMMAND (e.g. iptables, tc) on the PATH.
bm_netns_require() {
    [ "$(id -u)" = 0 ] || _bm_netns_skip "needs root to create network namespaces"
    command -v ip >/dev/null && ip netns list >/dev/null 2>&1 ||
        _bm_netns_skip "'ip netns' is not available"
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null || _bm_netns_skip "needs $c"
    done
}

# bm_netns_at_exit COMMAND: run COMMAND (a string, evaluated) at exit,
# before the namespaces are deleted.
bm_netns_at_exit() {
    _bm_netns_exit_cmds+=("$1")
}

bm_netns_teardown() {
    local c n p
    for c in "${_bm_netns_exit_cmds[@]}"; do
        eval "$c"
    done
    for n in "${BM_NETNS[@]}"; do
        # Processes of this test still inside (a cut-off daemon, a hung rank).
        for p in $(ip netns pids "$n" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
        ip netns del "$n" 2>/dev/null
    done
    BM_NETNS=()
    [ -z "$_bm_netns_prev_trap" ] || eval "$_bm_netns_prev_trap"
}
trap bm_netns_teardown EXIT

# bm_netns_hosts N: create N namespaces, named in BM_NETNS[0..N-1], each with
# its loopback up. Skips (exit 77) when the kernel or container refuses.
bm_netns_hosts() {
    local i n
    for ((i = 0; i < $1; i++)); do
        n=bmns$$h${#BM_NETNS[@]}
        ip netns add "$n" 2>/dev/null || _bm_netns_skip "cannot create network namespaces here"
        BM_NETNS+=("$n")
        ip -n "$n" link set lo up
    done
}

# bm_netns_rail I J SUBNET [MTU]: a veth pair from namespace BM_NETNS[I]
# (address SUBNET.1/24) to BM_NETNS[J] (SUBNET.2/24), both ends up. The
# device names are left in BM_NETNS_DEV_A (in I) and BM_NETNS_DEV_B (in J);
# they are unique per run because veth names are global until moved.
bm_netns_rail() {
    local a=${BM_NETNS[$1]} b=${BM_NETNS[$2]} net=$3 mtu=${4:-}
    _bm_netns_rails=$((_bm_netns_rails + 1))
    BM_NETNS_DEV_A=bmr${_bm_netns_rails}a$$
    BM_NETNS_DEV_B=bmr${_bm_netns_rails}b$$
    ip link add "$BM_NETNS_DEV_A" type veth peer name "$BM_NETNS_DEV_B" ||
        _bm_netns_skip "cannot create a veth pair"
    ip link set "$BM_NETNS_DEV_A" netns "$a"
    ip link set "$BM_NETNS_DEV_B" netns "$b"
    ip -n "$a" addr add "$net.1/24" dev "$BM_NETNS_DEV_A"
    ip -n "$b" addr add "$net.2/24" dev "$BM_NETNS_DEV_B"
    if [ -n "$mtu" ]; then
        ip -n "$a" link set "$BM_NETNS_DEV_A" mtu "$mtu"
        ip -n "$b" link set "$BM_NETNS_DEV_B" mtu "$mtu"
    fi
    ip -n "$a" link set "$BM_NETNS_DEV_A" up
    ip -n "$b" link set "$BM_NETNS_DEV_B" up
}

# bm_netns_spare_launcher NS: the TCP ports bmrun listens on in namespace NS,
# into BM_NETNS_SPARED (space-separated; "" when none), which bm_netns_drop
# lets through. Call it once the job runs.
bm_netns_spare_launcher() {
    BM_NETNS_SPARED=$(ip netns exec "$1" ss -Hltnp 2>/dev/null | grep bmrun | awk '{print $4}' |
        sed 's/.*://' | sort -u | tr '\n' ' ')
    BM_NETNS_SPARED=${BM_NETNS_SPARED% }
}

# bm_netns_rx NS DEV: the bytes DEV (in namespace NS) has received so far,
# from its interface counter.
bm_netns_rx() {
    ip netns exec "$1" cat "/sys/class/net/$2/statistics/rx_bytes"
}

# bm_netns_rx_wait [-p PID] [-u DEV:BYTES] [-t TENTHS] NS DEV:BYTES...: wait
# until every DEV (in namespace NS) has received more than its BYTES since
# the call; return 0 then. Bounded by events: it gives up (returns 1) once
# process PID (the job) has ended, or once the -u device has received more
# than its BYTES (the traffic went on elsewhere without reaching the awaited
# devices: the stream's own progress is the bound, however slow a loaded
# machine makes it). -t (tenths of a second, default 600) is only the last
# resort for a stream that stalled altogether. Leaves each awaited device's
# growth in BM_NETNS_RX (an array, in the order given) and the -u device's
# in BM_NETNS_RX_U.
bm_netns_rx_wait() {
    local pid= until= tenths=600 ns OPTIND=1 o i n all
    while getopts p:u:t: o; do
        case $o in
        p) pid=$OPTARG ;;
        u) until=$OPTARG ;;
        t) tenths=$OPTARG ;;
        *) return 2 ;;
        esac
    done
    shift $((OPTIND - 1))
    ns=$1
    shift
    local devs=() want=() base=() ubase=
    for i in "$@"; do
        devs+=("${i%%:*}") want+=("${i##*:}")
        base+=("$(bm_netns_rx "$ns" "${i%%:*}")")
    done
    [ -z "$until" ] || ubase=$(bm_netns_rx "$ns" "${until%%:*}")
    BM_NETNS_RX=() BM_NETNS_RX_U=0
    for ((n = 0; ; n++)); do
        all=1
        for i in "${!devs[@]}"; do
            BM_NETNS_RX[i]=$(($(bm_netns_rx "$ns" "${devs[i]}") - base[i]))
            [ "${BM_NETNS_RX[i]}" -gt "${want[i]}" ] || all=0
        done
        [ -z "$until" ] || BM_NETNS_RX_U=$(($(bm_netns_rx "$ns" "${until%%:*}") - ubase))
        [ $all = 1 ] && return 0
        [ -n "$until" ] && [ "$BM_NETNS_RX_U" -gt "${until##*:}" ] && return 1
        [ -z "$pid" ] || kill -0 "$pid" 2>/dev/null || return 1
        [ "$n" -lt "$tenths" ] || return 1
        sleep 0.1
    done
}

# bm_netns_drop -A|-D "DEV:NS ..." [MATCH...]: on each end DEV in namespace
# NS, accept TCP to and from the ports of BM_NETNS_SPARED, then drop what
# arrives on DEV (only what MATCH selects, e.g. -p tcp, or -p tcp -m
# statistic --mode random --probability 0.2). -A adds the rules, -D removes
# the rules an -A with the same arguments added.
bm_netns_drop() {
    local op=$1 ends=$2 end d n p
    shift 2
    for end in $ends; do
        d=${end%%:*} n=${end##*:}
        for p in ${BM_NETNS_SPARED:-}; do
            ip netns exec "$n" iptables "$op" INPUT -i "$d" -p tcp --dport "$p" -j ACCEPT
            ip netns exec "$n" iptables "$op" INPUT -i "$d" -p tcp --sport "$p" -j ACCEPT
        done
        ip netns exec "$n" iptables "$op" INPUT -i "$d" "$@" -j DROP
    done
}
