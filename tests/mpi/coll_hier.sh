#!/bin/bash
# Hierarchical collectives across hosts: network namespaces on one bridge
# stand for hosts, two ranks each, and coll_check runs its matrix of
# barrier, bcast, reduce, allreduce, gather and allgather (three forms, in
# place, zero counts, derived types, user operations, against its naive
# reference) on MPI_COMM_WORLD and on a communicator of the odd ranks in
# reverse order.
#   - 2 hosts x 2 ranks, by slot: hosts hold contiguous ranks, so every
#     reduction (non-commutative ones too) may take the hierarchy;
#   - 4 hosts x 2 ranks, --map-by node: ranks dealt round the hosts (not
#     contiguous), so non-commutative reductions must fall back to the flat
#     algorithms while the others keep the hierarchy, and gather and
#     allgather must put the blocks of a host's scattered ranks in place.
# BM_TEST_COLL_EXPECT makes coll_check fail when barrier.hier, bcast.hier,
# reduce.hier, allreduce.hier, gather.hier or allgather.hier never ran, or
# hier.halves (commutative allreduces from BM_MPI_COLL_HIER_HALVES_MIN, here
# 1 KiB: coll_check's 1100-element ones, in halves carried by two ranks per
# host; its 3-element ones and non-commutative ones keep one leader).
# Then pml_yield_time -t, one rank on each of two hosts: the PML's yield
# mode must have yielded by its 1 us limit (src/pml/wait.c), which the
# hierarchy's leaders depend on when ranks of namespace hosts share cores.
# Needs root and ip netns; otherwise skipped (exit 77).
# Usage: coll_hier.sh BMRUN COLL_CHECK PML_YIELD_TIME
set -u
BMRUN=$1 CHECK=$2 YIELD_TIME=$3
. "$(dirname "$0")/../harness/netns.sh"

bm_netns_require
failures=0
T=$(mktemp -d /tmp/bm-coll-hier.XXXXXX)
bm_netns_at_exit 'rm -rf "$T"'

# K hosts on a bridge in a namespace of its own (the host's network stays
# untouched); addresses SUBNET.1 .. SUBNET.K.
bridge() {
    local k=$1 net=$2 sw=bmns$$sw i dev
    bm_netns_hosts "$k"
    ip netns add "$sw" || exit 77
    bm_netns_at_exit "ip netns del $sw 2>/dev/null"
    ip -n "$sw" link add br0 type bridge && ip -n "$sw" link set br0 up || exit 1
    for ((i = 0; i < k; i++)); do
        dev=bmh$$v$i
        ip link add "$dev" type veth peer name "s$i" netns "$sw" || exit 1
        ip link set "$dev" netns "${BM_NETNS[$i]}"
        ip -n "$sw" link set "s$i" master br0
        ip -n "$sw" link set "s$i" up
        ip -n "${BM_NETNS[$i]}" addr add "$net.$((i + 1))/24" dev "$dev"
        ip -n "${BM_NETNS[$i]}" link set "$dev" up
    done
}

# run NAME NP MAP HOSTS...: coll_check --quick over the given hosts.
run() {
    local name=$1 np=$2 map=$3 hosts
    shift 3
    hosts=$(printf '%s:2,' "$@")
    # The namespaces share this machine's cores: waiting ranks yield.
    local only=MPI_Barrier,MPI_Bcast,MPI_Reduce,MPI_Allreduce,MPI_Gather,MPI_Allgather
    local expect=barrier.hier,bcast.hier,reduce.hier,allreduce.hier,gather.hier,allgather.hier
    # allreduces of 1 KiB and more in halves (hier.halves), smaller ones not
    expect=$expect,hier.halves
    BM_PML_IDLE_YIELD=64 BM_MPI_COLL_HIER_HALVES_MIN=1k BM_TEST_COLL_ONLY=$only \
        BM_TEST_COLL_EXPECT=$expect \
        ip netns exec "$1" "$BMRUN" -n "$np" --host "${hosts%,}" $map \
        --launch-agent 'ip netns exec {host}' --timeout 200 "$CHECK" --quick \
        >"$T/$name.out" 2>"$T/$name.err"
    local rc=$?
    if [ $rc -eq 0 ]; then
        echo "ok: $name: $(grep -c . "$T/$name.out") lines, hierarchy ran"
    else
        echo "FAIL: $name: exit $rc" >&2
        head -30 "$T/$name.err" "$T/$name.out" >&2
        failures=$((failures + 1))
    fi
}

bridge 4 10.251.$(($$ % 200 + 20))
run two_hosts 4 "" "${BM_NETNS[0]}" "${BM_NETNS[1]}"
run four_hosts_by_node 8 "--map-by node" "${BM_NETNS[@]}"

if BM_PML_IDLE_YIELD=1000000 ip netns exec "${BM_NETNS[0]}" "$BMRUN" -n 2 \
    --host "${BM_NETNS[0]}:1,${BM_NETNS[1]}:1" --launch-agent 'ip netns exec {host}' \
    --timeout 60 "$YIELD_TIME" -t >"$T/yield.out" 2>"$T/yield.err"; then
    echo "ok: yield_time: $(grep 'yields of' "$T/yield.out")"
else
    echo "FAIL: yield_time" >&2
    head -30 "$T/yield.err" "$T/yield.out" >&2
    failures=$((failures + 1))
fi
[ $failures -eq 0 ] || exit 1
echo "coll_hier: all passed"
