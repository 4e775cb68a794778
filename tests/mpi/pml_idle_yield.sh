#!/bin/bash
# The PML's default idle policy (BM_PML_IDLE_YIELD=-1): a waiting rank
# yields its core only when the job has more ranks on the host than the
# CPUs they may use. Runs a small MPI program with the PML's info log and
# checks the decision each rank reports:
#   - one rank per CPU (bmrun binds them): never yield;
#   - the same ranks unbound (--bind-to none: each may use every CPU): never;
#   - one rank more than CPUs: yield;
#   - BM_PML_IDLE_YIELD=0 given: no automatic decision at all.
# Usage: pml_idle_yield.sh BMRUN PROGRAM
set -u
bmrun=$1 prog=$2
ncpu=$(nproc)
fail=0

check() { # name expected-regex count-expected -- bmrun args...
    local name=$1 regex=$2 want=$3
    shift 4
    local out
    out=$(BM_VERBOSE=pml:3 BM_BTL=self,sm "$bmrun" --timeout 60 "$@" "$prog" 2>&1)
    local rc=$? got
    got=$(grep -cE "$regex" <<<"$out")
    if [ $rc -ne 0 ] || [ "$got" -ne "$want" ]; then
        echo "FAIL: $name: exit $rc, $got of $want ranks said /$regex/"
        echo "$out" | head -20
        fail=1
    else
        echo "ok: $name ($got ranks)"
    fi
}

np=$ncpu
[ "$np" -gt 8 ] && np=8
[ "$np" -lt 2 ] && np=2
check "bound, one rank per CPU" "waiting processes never yield" "$np" -- -n "$np"
check "unbound, one rank per CPU" "waiting processes never yield" "$np" -- -n "$np" --bind-to none
if [ "$ncpu" -le 8 ]; then
    over=$((ncpu + 1))
    check "one rank more than CPUs" "more ranks than CPUs on this host: waiting processes yield" \
        "$over" -- -n "$over"
fi
BM_PML_IDLE_YIELD=0 check "forced off" "waiting processes" 0 -- -n 2
exit $fail
