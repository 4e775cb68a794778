#!/usr/bin/env bash
# Build MPICH's MPI test suite (test/mpi of an MPICH source tree, which is not
# in this repository) against bitmover with bmcc, run every test its
# directories' testlists name with bmrun, one at a time with a time limit, and
# print a pass/fail summary per directory plus the most common reasons for
# failing to build. It is the "does my unmodified MPI program compile and run"
# check users and reviewers make first; it is not part of CI (the suite is not
# in the repository and takes tens of minutes). Fortran, C++, MPI-IO, spawn,
# fault-tolerance and checkpoint tests are left out. The suite's own configure
# step is replaced by a hand-written mpitestconf.h (strict MPI: no MPICH
# extensions; MPICH-only MPIR_CVAR_* environment variants of a test are run
# once). Results follow MPICH's runtests rules: a test passes when it exits 0
# and prints "No Errors" and nothing else (resultTest= variants honoured).
#
# Usage: tests/external/mpich-testsuite.sh [options] MPICH_SRC [DIR...]
#   MPICH_SRC  an MPICH source tree (with test/mpi) or a bare MPICH git
#              repository (its HEAD's test/mpi is extracted)
#   DIR        test/mpi subdirectories (default: pt2pt datatype coll comm
#              group attr init errhan info topo threads rma errors mpi_t
#              perf; perf/ times itself: a loaded machine fails it; part/
#              and session/ are MPI-4 only, basic/ has no testlist, impls/
#              tests MPICH's own hydra and PMI)
# Options:
#   --build DIR    bitmover build directory (default: build/release)
#   --work DIR     where the suite is built and run (default:
#                  /tmp/bm-mpich-testsuite); results in DIR/results.txt
#   --timeout S    per-test limit in seconds (default 60; a testlist's
#                  timeLimit= raises it, up to --max-time)
#   --max-time S   upper bound of any test's limit (default 180)
#   --jobs N       parallel compiles (default 2)
#   --only REGEX   build and run only tests whose dir/name matches REGEX
#   --min-np N     run every test with at least N ranks (tests listed with
#                  more keep theirs): larger process counts than MPICH's
#                  testlists (e.g. coll/ at 12)
#   --no-build     reuse the programs built by an earlier run
#   --xfail        also count tests MPICH marks xfail= (default: run them,
#                  report them apart from the failures)
set -u

usage() { sed -n '/^# Usage:/,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit "${1:-2}"; }

here=$(cd "$(dirname "$0")/../.." && pwd)
build=$here/build/release
work=/tmp/bm-mpich-testsuite
tlimit=60
maxtime=180
jobs=2
only=
minnp=0
dobuild=1
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$(cd "$2" && pwd) || exit 2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --timeout) tlimit=$2; shift 2 ;;
    --max-time) maxtime=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --min-np) minnp=$2; shift 2 ;;
    --no-build) dobuild=0; shift ;;
    -h | --help) usage 0 ;;
    -*) echo "mpich-testsuite: unknown option $1" >&2; usage ;;
    *) break ;;
    esac
done
[ $# -ge 1 ] || usage
src=$1
shift
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=(pt2pt datatype coll comm group attr init errhan info topo threads rma errors mpi_t perf)

bmcc=$build/tools/bmcc/bmcc
bmrun=$build/tools/bmrun/bmrun
for t in "$bmcc" "$bmrun"; do
    [ -x "$t" ] || { echo "mpich-testsuite: $t not found: build bitmover first (cmake --preset release && cmake --build build/release) or pass --build DIR" >&2; exit 2; }
done
T=$work/test/mpi

# ---- 1. the sources and the hand-made configuration -------------------------
if [ $dobuild = 1 ]; then
    rm -rf "$work"
    mkdir -p "$work"
    if [ -d "$src/test/mpi" ]; then
        cp -r "$src/test/mpi" "$work/test/" 2>/dev/null || { mkdir -p "$work/test" && cp -r "$src/test/mpi" "$work/test/"; }
    elif git --git-dir="$src" rev-parse --verify -q HEAD >/dev/null; then
        git --git-dir="$src" archive HEAD test/mpi | tar -x -C "$work" || exit 1
        echo "mpich-testsuite: test/mpi of $(git --git-dir="$src" log -1 --format='%h %cd' --date=short HEAD)"
    else
        echo "mpich-testsuite: $src is neither an MPICH source tree (no test/mpi) nor a git repository" >&2
        exit 2
    fi
    # What MPICH's configure would find on Linux with POSIX threads, for an
    # MPI that is not MPICH (strict: the MPIX tests are left out).
    cat >"$T/include/mpitestconf.h" <<'EOF'
/* Written by bitmover's tests/external/mpich-testsuite.sh in place of configure. */
#define HAVE_STDARG_H 1
#define HAVE_STRING_H 1
#define HAVE_UNISTD_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_PTHREAD_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_STRDUP 1
#define HAVE_USLEEP 1
#define HAVE_LONG_DOUBLE 1
#define HAVE_LONG_LONG 1
#define HAVE_LONG_LONG_INT 1
#define HAVE__BOOL 1
#define HAVE_ATOMIC 1
#define HAVE_MPI_WIN_CREATE 1
#define USE_STRICT_MPI 1
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX
#define POINTERINT_t long
#define USE_LONG_DOUBLE_COMPLEX 1
EOF
    # The optional types configure finds by compiling "MPI_Datatype t =
    # MPI_<name>;" (datatype/typename fails without HAVE_MPI_INTEGER16).
    for t in INTEGER16 REAL16 COMPLEX32; do
        printf '#include <mpi.h>\nint main(void) { MPI_Datatype t = MPI_%s; (void)t; return 0; }\n' $t >"$work/probe.c"
        "$bmcc" -c "$work/probe.c" -o "$work/probe.o" 2>/dev/null && echo "#define HAVE_MPI_$t 1" >>"$T/include/mpitestconf.h"
    done
    rm -f "$work/probe.c" "$work/probe.o"
    : >"$T/include/mtest_mpix.h"
    printf '/* Written by mpich-testsuite.sh in place of configure. */\n#define HAVE_STRDUP 1\n#define HAVE_MEMSET 1\n' >"$T/dtpools/dtpoolsconf.h"
fi
cd "$T" || exit 1

# ---- 2. build -----------------------------------------------------------------
# util/ and dtpools/ become two archives; run_mpitests.o (a main() calling
# the test's run()) sits in the archive so that only programs without a main
# of their own pull it in.
cppflags="-I$T/include -I$T/dtpools/include"
build_util() {
    mkdir -p "$T/lib"
    local o objs=() f
    for f in util/mtest.c util/mtest_common.c util/dtypes.c util/run_mpitests.c dtpools/src/*.c; do
        o=$T/lib/$(basename "${f%.c}").o
        nice -n 5 "$bmcc" -O1 -g $cppflags -c "$f" -o "$o" 2>>"$T/lib/build.log" || { echo "mpich-testsuite: $f did not compile (see $T/lib/build.log)" >&2; return 1; }
        objs+=("$o")
    done
    ar rcs "$T/lib/libmtest.a" "${objs[@]}"
    for f in single thread; do
        nice -n 5 "$bmcc" -O1 -g $cppflags -c util/mtest_$f.c -o "$T/lib/mtest_$f.o" 2>>"$T/lib/build.log" || return 1
        ar rcs "$T/lib/libmtest_$f.a" "$T/lib/mtest_$f.o"
    done
}

# Makefile.am, continuation lines joined: "var = value" per line.
am_vars() { sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' "$1/Makefile.am" 2>/dev/null | sed -n 's/^\([A-Za-z0-9_]*\)[ \t]*+\{0,1\}=[ \t]*\(.*\)$/\1=\2/p'; }

# The test directories to visit: each given one and, recursively, the
# subdirectories its testlist names (threads/pt2pt, ...), minus the left-out kinds.
skipdirs=" spawn io ft ckpoint cxx f77 f90 f08 part perf session impls "
testlist_of() { if [ -f "$1/testlist" ]; then echo "$1/testlist"; elif [ -f "$1/testlist.in" ]; then echo "$1/testlist.in"; fi; }
expand_dirs() {
    local d=$1 tl line w
    tl=$(testlist_of "$d")
    [ -n "$tl" ] || return
    echo "$d"
    while read -r line; do
        line=${line%%#*}
        read -r -a w <<<"$line"
        [ ${#w[@]} -eq 1 ] || continue
        w=${w[0]}
        case $w in @rmadir@) w=rma ;; @*) continue ;; esac
        case "$skipdirs" in *" $w "*) continue ;; esac
        [ -d "$d/$w" ] && expand_dirs "$d/$w"
    done <"$tl"
}
alldirs=()
for d in "${dirs[@]}"; do
    [ -d "$T/$d" ] || { echo "mpich-testsuite: no directory test/mpi/$d" >&2; continue; }
    if [ -z "$(testlist_of "$T/$d")" ]; then
        echo "mpich-testsuite: test/mpi/$d has no testlist: nothing to run there"
        continue
    fi
    while read -r x; do alldirs+=("${x#$T/}"); done < <(expand_dirs "$T/$d")
done

# Each directory's test lines: "name np key=value...", in testlist order.
test_lines() {
    local tl
    tl=$(testlist_of "$T/$1")
    sed -e 's/#.*//' "$tl" | awk 'NF >= 2 && $1 !~ /^@/'
}

write_makefile() {
    local d=$1 names n srcs flags libs vars thread=0
    grep -q Makefile_threads.mtest "$T/$d/Makefile.am" 2>/dev/null && thread=1
    vars=$(am_vars "$T/$d")
    # (with --only, just the programs it names: a rerun of a part builds only that part)
    names=$(test_lines "$d" | awk '{print $1}' | sort -u | while read -r n; do [ -z "$only" ] || [[ "$d/$n" =~ $only ]] && echo "$n"; done)
    {
        echo "CC = $bmcc"
        echo "CPPFLAGS = $cppflags"
        if [ $thread = 1 ]; then
            echo "LIBS = -L$T/lib -lmtest_thread -lmtest -lmtest_thread -lm -lpthread"
        else
            echo "LIBS = -L$T/lib -lmtest_single -lmtest -lmtest_single -lm -lpthread"
        fi
        echo "all: $(echo $names)"
        for n in $names; do
            srcs=$(sed -n "s/^${n}_SOURCES=//p" <<<"$vars" | head -1)
            [ -n "$srcs" ] || srcs=$n.c
            flags=$(sed -n "s/^${n}_CPPFLAGS=//p; s/^${n}_CFLAGS=//p" <<<"$vars" | sed 's/\$([A-Za-z_]*)//g' | tr '\n' ' ')
            libs=$(sed -n "s/^${n}_LDADD=//p" <<<"$vars" | sed 's/\$([A-Za-z_]*)//g')
            echo "$n: $srcs"
            printf '\t@nice -n 5 $(CC) -O1 -g $(CPPFLAGS) %s -o $@ $^ %s $(LIBS) > $@.buildlog 2>&1 || { cat $@.buildlog >&2; rm -f $@; exit 1; }\n' "$flags" "$libs"
        done
    } >"$T/$d/Makefile.bm"
}

if [ $dobuild = 1 ]; then
    echo "mpich-testsuite: building util/ and dtpools/"
    build_util || exit 1
    for d in "${alldirs[@]}"; do
        write_makefile "$d"
        echo "mpich-testsuite: building $d ($(grep -c '^[a-z].*: ' "$T/$d/Makefile.bm" | awk '{print $1 - 1}') programs)"
        make -k -s -C "$T/$d" -f Makefile.bm -j"$jobs" >/dev/null 2>&1
    done
fi

# ---- 3. run -------------------------------------------------------------------
results=$work/results.txt
: >"$results"
mkdir -p "$work/out"
memgb=$(awk '/MemTotal/ {printf "%d", $2 / 1048576}' /proc/meminfo)
ntest=0
run_one() { # dir name np resultTest limit envs... -- args...
    local d=$1 n=$2 np=$3 rt=$4 lim=$5 envs=() args=() out rc verdict why noerr stray
    shift 5
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    args=("$@")
    out=$work/out/$(echo "$d/$n.$np.${args[*]:-}" | tr -c 'A-Za-z0-9._-' '_' | cut -c1-200).log
    local t0 t1 load
    t0=$(date +%s.%N)
    (cd "$T/$d" && env "${envs[@]}" timeout -k 10 "$((lim + 15))" \
        "$bmrun" -np "$np" --oversubscribe --timeout "$lim" ./"$n" "${args[@]}") >"$out" 2>&1 </dev/null
    rc=$?
    t1=$(date +%s.%N)
    read -r load _ </proc/loadavg
    noerr=0
    grep -Eq '^\s*No [Ee]rrors\s*$' "$out" && noerr=1
    grep -Eq '^\s*Test Skipped\s*$' "$out" && noerr=1
    stray=$(grep -Evc '^\s*No [Ee]rrors\s*$|^\s*Test Skipped\s*$' "$out")
    verdict=PASS why=
    # A test that expects an error exit (init/timeout expects the launcher
    # to kill it) passes when killed; any other one fails.
    if [ "$rt" != TestErrFatal ] && [ "$rt" != TestStatus ] &&
        { [ $rc = 124 ] || [ $rc = 137 ] || grep -q 'timeout after .* s: .* had not finished' "$out"; }; then
        rt=timeout
    fi
    case ${rt:-TestNormal} in
    timeout) verdict=FAIL why="timeout (${lim}s)" ;;
    TestStatus | TestErrFatal) [ $rc -ne 0 ] || { verdict=FAIL why="exit 0, expected an error exit"; } ;;
    TestStatusNoErrors)
        if [ $noerr = 0 ]; then verdict=FAIL why="no 'No Errors'"; elif [ $rc = 0 ]; then verdict=FAIL why="exit 0, expected an error exit"; fi ;;
    TestBench) [ $rc = 0 ] || { verdict=FAIL why="exit $rc"; } ;;
    *)
        if [ $noerr = 0 ]; then verdict=FAIL why="no 'No Errors' (exit $rc)"
        elif [ "$stray" -gt 0 ] && [ "$rt" != TestAllowWarnings ]; then verdict=FAIL why="unexpected output (exit $rc)"
        elif [ $rc -ne 0 ]; then verdict=FAIL why="exit $rc"
        fi ;;
    esac
    # (7th column: wall seconds and the load average at the end: time limits
    # on a shared machine are read against it)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$verdict" "$d" "$n" "$np" "${args[*]:-}" "$why${why:+: }$(grep -Ev '^\s*No [Ee]rrors\s*$' "$out" | head -1 | cut -c1-160)" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f s", b - a }'), load $load" >>"$results"
}

for d in "${alldirs[@]}"; do
    declare -A seen=()
    while read -r line; do
        read -r -a w <<<"$line"
        n=${w[0]} np=${w[1]} rt= lim=$tlimit xfail= strict= mem=0 envs=() args=()
        [ "$np" -ge "$minnp" ] 2>/dev/null || np=$minnp
        for kv in "${w[@]:2}"; do
            case $kv in
            arg=*) args+=("${kv#arg=}") ;;
            env=MPIR_CVAR_* | env=MPICH_* | env=UCX_* | env=FI_*) ;; # MPICH's own knobs: no meaning here
            env=*) envs+=("${kv#env=}") ;;
            resultTest=*) rt=${kv#*=} ;;
            timeLimit=*) lim=${kv#*=} ;;
            xfail=*) xfail=${kv#*=} ;;
            strict=*) strict=$(echo "${kv#*=}" | tr A-Z a-z) ;;
            mem=*) mem=${kv#*=} ;;
            esac
        done
        [ -z "$only" ] || [[ "$d/$n" =~ $only ]] || continue
        key="$n $np ${envs[*]:-} ${args[*]:-}"
        [ -z "${seen[$key]:-}" ] || continue
        seen[$key]=1
        [ "$lim" -le "$maxtime" ] 2>/dev/null || lim=$maxtime
        # a limit below the default is raised (loaded machines), except
        # where the limit is the test (an expected error exit)
        [ "$lim" -ge "$tlimit" ] || [ "$rt" = TestErrFatal ] || lim=$tlimit
        if [ "$strict" = false ]; then
            printf 'SKIP\t%s\t%s\t%s\t%s\t%s\n' "$d" "$n" "$np" "${args[*]:-}" "strict=false (MPICH extension)" >>"$results"
            continue
        fi
        if awk -v m="$mem" -v t="$memgb" 'BEGIN { exit !(m > t / 2) }'; then
            printf 'SKIP\t%s\t%s\t%s\t%s\t%s\n' "$d" "$n" "$np" "${args[*]:-}" "needs ${mem} GB, host has $memgb" >>"$results"
            continue
        fi
        if [ ! -x "$T/$d/$n" ]; then
            printf 'NOBUILD\t%s\t%s\t%s\t%s\t%s\n' "$d" "$n" "$np" "${args[*]:-}" "$(grep -m1 -E 'error|undefined reference' "$T/$d/$n.buildlog" 2>/dev/null | sed 's/^[^ ]*: //' | cut -c1-160)" >>"$results"
            continue
        fi
        ntest=$((ntest + 1))
        printf '\r%-70s' "mpich-testsuite: [$ntest] $d/$n np=$np" >&2
        run_one "$d" "$n" "$np" "$rt" "$lim" "${envs[@]}" -- "${args[@]}"
        [ -z "$xfail" ] || sed -i '$ s/^FAIL\t/XFAIL\t/' "$results"
    done < <(test_lines "$d")
    unset seen
done
printf '\r%-70s\r' '' >&2

# ---- 4. summary ---------------------------------------------------------------
echo
echo "MPICH test suite against bitmover ($(git -C "$here" rev-parse --short HEAD 2>/dev/null)): $results"
printf '%-16s %6s %6s %8s %6s %6s\n' directory pass fail nobuild xfail skip
awk -F'\t' '{ split($2, p, "/"); d = p[1]; n[d, $1]++; seen[d] = 1; tot[$1]++ }
    END { for (d in seen) printf "%-16s %6d %6d %8d %6d %6d\n", d, n[d, "PASS"], n[d, "FAIL"], n[d, "NOBUILD"], n[d, "XFAIL"], n[d, "SKIP"] | "sort";
          close("sort");
          printf "%-16s %6d %6d %8d %6d %6d\n", "total", tot["PASS"], tot["FAIL"], tot["NOBUILD"], tot["XFAIL"], tot["SKIP"] }' "$results"
echo
echo "Failures:"
awk -F'\t' '$1 == "FAIL" { printf "  %s/%s np=%s %s: %s [%s]\n", $2, $3, $4, $5, $6, $7 }' "$results"
echo
echo "Most common reasons programs did not build (identifier: programs):"
for f in "$T"/*/*.buildlog "$T"/*/*/*.buildlog; do
    [ -f "$f" ] && [ ! -x "${f%.buildlog}" ] || continue
    grep -oE "'[A-Za-z0-9_]+' undeclared|undefined reference to \`[A-Za-z0-9_]+'|unknown type name '[A-Za-z0-9_]+'" "$f" |
        grep -oE "[A-Za-z_][A-Za-z0-9_]+'$" | tr -d "'" | sort -u
done | sort | uniq -c | sort -rn | head -20
grep -q "^FAIL" "$results" && exit 1
exit 0
