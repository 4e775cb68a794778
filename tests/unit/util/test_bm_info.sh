#!/bin/sh
# Test of tools/bm_info: the parameter listing (BM_VERBOSE with its help,
# filters by component and by layer, the current value from the environment
# checked), the environment check, the build report, the help topic list,
# and exit status 2 with the usage text for bad usage.
# Usage: test_bm_info.sh <path to bm_info>
bm=$1
fail=0
pass=0

check() { # check <description> <shell condition>
    if eval "$2"; then pass=$((pass + 1)); else echo "FAIL: $1"; fail=$((fail + 1)); fi
}

out=$("$bm" --params); rc=$?
check "--params exits 0" '[ $rc -eq 0 ]'
check "--params lists BM_VERBOSE" 'echo "$out" | grep -q "^  BM_VERBOSE (string, default \"\")"'
check "--params shows the help of BM_VERBOSE" 'echo "$out" | grep -q "Log verbosity: a level"'
check "--params groups by component" 'echo "$out" | grep -q "^util/log:$"'

out=$("$bm" --params util/log)
check "component filter keeps BM_VERBOSE" 'echo "$out" | grep -q BM_VERBOSE'
check "component filter drops others" '! echo "$out" | grep -q BM_UTIL_CLOCK_SOURCE'
out=$("$bm" --params util)
check "layer filter keeps util/log and util/clock" \
    'echo "$out" | grep -q BM_VERBOSE && echo "$out" | grep -q BM_UTIL_CLOCK_SOURCE'
out=$("$bm" --params bm_util_clock_source)
check "parameter-name filter" 'echo "$out" | grep -q "^  BM_UTIL_CLOCK_SOURCE" && ! echo "$out" | grep -q BM_VERBOSE'

out=$(BM_VERBOSE=5 "$bm" --params util/log)
check "current value from the environment" 'echo "$out" | grep -q "current: \"5\" (from the environment)"'
out=$(BM_UTIL_CLOCK_SOURCE=bogus "$bm" --params util/clock)
check "invalid environment value flagged" 'echo "$out" | grep -q "INVALID: expected one of: auto|monotonic"'

out=$("$bm"); rc=$?
check "report exits 0" '[ $rc -eq 0 ]'
check "report has the version" 'echo "$out" | grep -q "^bitmover [0-9]"'
check "report lists dependencies" 'echo "$out" | grep -q "^  libfabric"'
check "report lists the launchers" 'echo "$out" | grep -Eq "^  pmi +built: MPICH"'
check "every found dependency says what uses it" \
    '[ "$(echo "$out" | grep -Ec "^  (libfabric|hwloc|pmix) +yes:")" -eq "$(echo "$out" | grep -c "^ *used by: ")" ]'
check "pmix is reported as used only when a launcher backend uses it" \
    'echo "$out" | grep -Eq "^  pmix +no:" || echo "$out" | grep -A1 -E "^  pmix +yes:" | grep -q "used by: the pmix launcher backend" || echo "$out" | grep -A1 -E "^  pmix +yes:" | grep -q "used by: nothing"'
if ! echo "$out" | grep -Eq "^  ofi +built"; then
    check "ofi says why it is not built" \
        'echo "$out" | grep -Eq "^  ofi +not built: libfabric not found"'
fi
check "--check refuses a bad BM_VERBOSE" \
    '! BM_VERBOSE=zzz "$bm" --check >/dev/null 2>&1'
out=$(env -u PMI_FD -u PMI_PORT -u PMIX_NAMESPACE -u BMRUN_KVS -u SLURM_STEP_NUM_TASKS \
    -u OMPI_COMM_WORLD_SIZE -u PMI_SIZE -u MPI_LOCALNRANKS "$bm")
check "report says which launcher backend this environment uses" \
    'echo "$out" | grep -q "^  here: *singleton"'
out=$(env -u PMI_FD -u PMI_PORT -u PMIX_NAMESPACE -u BMRUN_KVS SLURM_STEP_NUM_TASKS=3 \
    SLURM_PROCID=0 "$bm")
check "report says when the launcher cannot be used" \
    'echo "$out" | grep -q "^  here: *none usable" && echo "$out" | grep -q "srun --mpi=pmix"'
check "report lists transports with a state" \
    'echo "$out" | grep -Eq "^  self +(built and usable|built but unusable here|not built)"'

err=$(BM_VERBOSEE=5 "$bm" --check 2>&1); rc=$?
check "--check suggests the parameter a typo meant" \
    '[ $rc -eq 0 ] && echo "$err" | grep -q "did you mean BM_VERBOSE?"'
err=$(BM_UTIL_CLOCK_SOURCE=bogus "$bm" --check 2>&1); rc=$?
check "--check fails on an invalid value" \
    '[ $rc -eq 1 ] && echo "$err" | grep -q "BM_UTIL_CLOCK_SOURCE=bogus"'

out=$("$bm" --topics)
check "--topics lists btl-unreachable" 'echo "$out" | grep -q "btl-unreachable"'

err=$("$bm" --bogus 2>&1 >/dev/null); rc=$?
check "--bogus exits 2" '[ $rc -eq 2 ]'
check "--bogus prints the usage" 'echo "$err" | grep -q "usage: bm_info"'
check "--bogus is named" 'echo "$err" | grep -q "unknown option .--bogus."'
err=$("$bm" --params a b 2>&1 >/dev/null); rc=$?
check "too many arguments exit 2" '[ $rc -eq 2 ]'
check "too many arguments said" 'echo "$err" | grep -q "too many arguments after --params"'
err=$("$bm" --params no/such 2>&1 >/dev/null); rc=$?
check "unknown component exits 2 and lists components" \
    '[ $rc -eq 2 ] && echo "$err" | grep -q "util/log"'

echo "test_bm_info: $pass passed, $fail failed"
[ $fail -eq 0 ]
