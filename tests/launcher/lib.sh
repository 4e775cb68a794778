# Helpers shared by the launcher test scripts (sourced, not run).
# Usage in a script: BMRUN=$1 RANK=$2; . "$(dirname "$0")/lib.sh"
set -u
failures=0
T=$(mktemp -d /tmp/bmrun-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
# A token that appears in the command line of every rank of this test, so
# that leftover processes can be found without touching other tests' ranks.
TOKEN="tok$$x$RANDOM"

checks=0

fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
    checks=$((checks + 1))
}

ok() {
    echo "ok: $*"
    checks=$((checks + 1))
}

# expect_no_leftovers finds processes by the token in their command line.
# Prove once that it can: a probe carrying the token must be found, or every
# no-leftovers check would pass without having looked (no pgrep, a /proc
# that hides other processes' command lines).
(exec -a "$TOKEN-probe" sleep 60) &
probe=$!
seen=""
for _ in $(seq 50); do
    seen=$(pgrep -f "$TOKEN" 2>&1)
    [ "$seen" = "$probe" ] && break
    sleep 0.02
done
kill "$probe" 2>/dev/null
wait "$probe" 2>/dev/null
if [ "$seen" != "$probe" ]; then
    echo "FAIL: pgrep -f cannot find this test's probe (pid $probe, '$TOKEN-probe'): got" \
        "'$seen'; leftover processes could not be detected" >&2
    exit 1
fi

# run NAME CMD...: run with stdout/stderr in $T/NAME.out / .err, rc in $rc
run() {
    local name=$1
    shift
    "$@" >"$T/$name.out" 2>"$T/$name.err"
    rc=$?
}

expect_rc() { # name want
    if [ "$rc" -ne "$2" ]; then
        fail "$1: exit code $rc, expected $2"
        sed 's/^/    stderr: /' "$T/$1.err" | head -20 >&2
    else
        ok "$1: exit code $2"
    fi
}

# A launcher_rank "late 1" job of 3 ranks (name label): rank 1 sleeps before
# each fence, so every rank must report that both of its fences waited for it.
expect_late() {
    expect_rc "$1" 0
    [ "$(grep -c 'both fences waited for rank 1 (progressed)$' "$T/$1.out")" -eq 3 ] &&
        ok "$1: $2 fences waited for the last rank" ||
        fail "$1: expected 3 'both fences waited' lines"
}

# expect_stream NAME out|err REGEX: the run's stdout or stderr has a line matching REGEX
expect_stream() {
    if grep -Eq -- "$3" "$T/$1.$2"; then
        ok "$1: std$2 has /$3/"
    else
        fail "$1: std$2 lacks /$3/"
        sed "s/^/    std$2: /" "$T/$1.$2" | head -20 >&2
    fi
}
expect_err() { expect_stream "$1" err "$2"; } # name extended-regex
expect_out() { expect_stream "$1" out "$2"; } # name extended-regex

# No process of this test may survive bmrun.
expect_no_leftovers() {
    sleep 0.2
    local prc=0
    pgrep -f "$TOKEN" >/dev/null || prc=$?
    if [ "$prc" -eq 0 ]; then
        fail "$1: processes left behind: $(pgrep -af "$TOKEN" | head -5)"
        kill -KILL $(pgrep -f "$TOKEN") 2>/dev/null
    elif [ "$prc" -eq 1 ]; then
        ok "$1: no process left behind"
    else
        fail "$1: pgrep failed (exit code $prc): leftovers were not looked for"
    fi
}

# check_job NAME BACKEND NP VIA: the MPI job (launcher_mpi) exited 0, every
# one of its NP ranks says it was started by BACKEND reached VIA ("PMI-2 on
# PMI_FD", "PMIx direct modex", ...), and its allreduce was right.
check_job() {
    expect_rc "$1" 0
    local n
    n=$(grep -Ec "^rank [0-9]+ of $3 backend $2 node-ranks $3 app 0 via $4\$" "$T/$1.out")
    if [ "$n" -eq "$3" ]; then ok "$1: $3 ranks started by backend $2 via $4"; else
        fail "$1: expected $3 lines 'rank R of $3 backend $2 node-ranks $3 app 0 via $4', got $n"
        sed 's/^/    stdout: /' "$T/$1.out" | head -10 >&2
        sed 's/^/    stderr: /' "$T/$1.err" | head -10 >&2
    fi
    expect_out "$1" "^allreduce ok $3\$"
}

finish() {
    if [ "$checks" -eq 0 ]; then
        fail "$(basename "$0"): no check ran"
    fi
    if [ "$failures" -ne 0 ]; then
        echo "$(basename "$0"): $failures failure(s)"
        exit 1
    fi
    echo "$(basename "$0"): all passed"
    exit 0
}
