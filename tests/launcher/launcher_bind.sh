#!/bin/bash
# --bind-to: by default each local rank runs on a CPU of its own (distinct
# CPUs, one each) when the host has a CPU per rank; with more ranks than
# CPUs, a single rank, or with --bind-to none, the ranks keep bmrun's whole
# CPU set. Open MPI's objects: --bind-to core binds to the hardware threads
# of the rank's core, socket to the CPUs of its package (from sysfs).
BMRUN=$1 RANK=$2
. "$(dirname "$0")/lib.sh"

ncpu=$(nproc)
all=$(grep Cpus_allowed_list /proc/self/status | awk '{print $2}')
show='grep Cpus_allowed_list /proc/self/status | awk "{print \$2}"'

n=$((ncpu < 4 ? ncpu : 4))
run bound "$BMRUN" -n "$n" sh -c "$show"
expect_rc bound 0
distinct=$(sort -u "$T/bound.out" | wc -l)
single=$(grep -cE '^[0-9]+$' "$T/bound.out")
if [ "$distinct" = "$n" ] && [ "$single" = "$n" ]; then
    ok "bound: $n ranks on $(tr '\n' ' ' <"$T/bound.out")"
else
    fail "bound: expected $n distinct single CPUs, got: $(tr '\n' ' ' <"$T/bound.out")"
fi

run over "$BMRUN" -n $((ncpu + 1)) sh -c "$show"
expect_rc over 0
if [ "$(sort -u "$T/over.out")" = "$all" ]; then
    ok "oversubscribed: unbound ($all)"
else
    fail "oversubscribed: expected $all for every rank, got: $(tr '\n' ' ' <"$T/over.out")"
fi

run single "$BMRUN" -n 1 sh -c "$show"
expect_rc single 0
if [ "$(cat "$T/single.out")" = "$all" ]; then
    ok "single rank: unbound ($all)"
else
    fail "single rank: expected $all, got: $(cat "$T/single.out")"
fi

run none "$BMRUN" --bind-to none -n "$n" sh -c "$show"
expect_rc none 0
if [ "$(sort -u "$T/none.out")" = "$all" ]; then
    ok "--bind-to none: unbound ($all)"
else
    fail "--bind-to none: expected $all for every rank, got: $(tr '\n' ' ' <"$T/none.out")"
fi

# Open MPI's objects: the CPUs sysfs says share the rank's core or package.
first=$(echo "$all" | cut -d, -f1 | cut -d- -f1)
if [ "$ncpu" -ge 2 ] && [ "$all" = "$(cat /sys/devices/system/cpu/online)" ]; then
    for obj in core:thread_siblings_list socket:core_siblings_list; do
        run "obj${obj%%:*}" "$BMRUN" -n 2 --bind-to "${obj%%:*}" --report-bindings --tag-output \
            sh -c "$show"
        expect_rc "obj${obj%%:*}" 0
        want=$(cat "/sys/devices/system/cpu/cpu$first/topology/${obj#*:}")
        expect_out "obj${obj%%:*}" "^\\[0\\] $want\$"
        expect_err "obj${obj%%:*}" "^\\[0\\] bmrun: rank 0 \\(host [^,]+, pid [0-9]+\\) bound to CPUs? $want \\(--bind-to ${obj%%:*}\\)\$"
    done
else
    echo "note: bmrun's CPU set ($all) is not every online CPU: --bind-to core/socket not checked"
fi

run badbind "$BMRUN" --bind-to slot -n 1 "$RANK"
expect_rc badbind 2
expect_err badbind '--bind-to slot: bmrun binds to hwthread, core, .*socket \(package\), board or none'
run qualifier "$BMRUN" --bind-to core:overload-allowed -n 1 true
expect_rc qualifier 0
finish
