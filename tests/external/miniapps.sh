#!/bin/bash
# miniapps.sh: build widely used MPI mini-apps and kernels, unmodified, with
# bitmover's wrappers (bmcc / bmcxx) and with Open MPI's and MPICH's
# (mpicc.openmpi, mpicc.mpich), run each case at small sizes under bmrun,
# mpirun.openmpi and mpirun.mpich one after the other (interleaved, case by
# case), and print one table line per case and bitmover transport setting:
# bitmover's verdict, the wall times of the three, and the answer the app
# printed (its own verification, or the figures it checks). A case passes
# when bitmover's run exits 0, the app's own check passes, and its answer
# is the one Open MPI or MPICH gave. The apps are not in the repository and
# this is not run by CI: give their source directories.
#
#   tests/external/miniapps.sh [-b BUILD] [-w WORK] [-t SECONDS] [-k PATTERN]
#       [--btl LIST ...] [--no-ref] [--prk DIR] [--lulesh DIR] [--hpcg DIR]
#       [--minife DIR] [--miniamr DIR] [--comd DIR]
#
#   -b BUILD   bitmover build directory (default build/release), with the
#              targets bitmover, bmrun and bmcc built
#   -w WORK    scratch directory for the builds and logs (default
#              /tmp/bm-miniapps); the sources are copied there, never changed
#   -t SECONDS timeout of one run (default 120)
#   -k PATTERN run only cases whose name matches the extended regex
#   --btl LIST bitmover transport setting: "default" (BM_BTL unset) or a
#              BM_BTL value; repeatable (default: default and self,tcp)
#   --no-ref   build and run bitmover only (no Open MPI / MPICH columns; the
#              answer is then checked by the app's own verification only)
#   --prk DIR      Parallel Research Kernels (github.com/ParRes/Kernels):
#                  MPI1, MPIRMA, MPISHM, MPIOPENMP
#   --lulesh DIR   LULESH 2.0 (github.com/LLNL/LULESH)
#   --hpcg DIR     HPCG 3.1 (github.com/hpcg-benchmark/hpcg)
#   --minife DIR   miniFE (github.com/Mantevo/miniFE), the ref version
#   --miniamr DIR  miniAMR (github.com/Mantevo/miniAMR), the ref version
#   --comd DIR     CoMD (github.com/ECP-copa/CoMD), src-mpi
#
# Builds run under nice with -j2, cases one at a time with OMP_NUM_THREADS=1
# (the MPIOPENMP kernels ask for their threads themselves). Times are wall
# seconds of one run each on whatever load the host has: compare them only
# within a line, and read the load printed with the table. The exit status
# is the number of failed cases (capped at 100). Logs are in WORK/logs.
set -u

here=$(cd "$(dirname "$0")/../.." && pwd)
build=$here/build/release
work=/tmp/bm-miniapps
tmo=120
filter=
btls=()
ref=1
declare -A src=()
while [ $# -gt 0 ]; do
    case $1 in
    -b) build=$(cd "$2" && pwd); shift 2 ;;
    -w) work=$2; shift 2 ;;
    -t) tmo=$2; shift 2 ;;
    -k) filter=$2; shift 2 ;;
    --btl) btls+=("$2"); shift 2 ;;
    --no-ref) ref=0; shift ;;
    --prk | --lulesh | --hpcg | --minife | --miniamr | --comd)
        src[${1#--}]=$(cd "$2" && pwd)
        shift 2
        ;;
    -h | --help) sed -n '2,40p' "$0"; exit 0 ;;
    *) echo "miniapps.sh: unknown argument $1 (see --help)" >&2; exit 100 ;;
    esac
done
[ ${#btls[@]} -gt 0 ] || btls=(default self,tcp)
if [ ${#src[@]} = 0 ]; then
    echo "miniapps.sh: give at least one of --prk --lulesh --hpcg --minife --miniamr --comd DIR" >&2
    exit 100
fi
bmrun=$build/tools/bmrun/bmrun
for f in "$build/tools/bmcc/bmcc" "$build/tools/bmcc/bmcxx" "$bmrun"; do
    if [ ! -x "$f" ]; then
        echo "miniapps.sh: $f is missing: configure and build $build first (targets bitmover bmrun bmcc)" >&2
        exit 100
    fi
done
impls=(bm)
if [ $ref = 1 ]; then
    for f in mpicc.openmpi mpicxx.openmpi mpirun.openmpi mpicc.mpich mpicxx.mpich mpirun.mpich; do
        if ! command -v $f >/dev/null; then
            echo "miniapps.sh: $f is not installed: install Open MPI and MPICH, or give --no-ref" >&2
            exit 100
        fi
    done
    impls=(bm ompi mpich)
fi
mkdir -p "$work/logs"
work=$(cd "$work" && pwd)
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

cc_of() { # cc_of IMPL: the C wrapper
    case $1 in
    bm) echo "$build/tools/bmcc/bmcc" ;;
    ompi) echo mpicc.openmpi ;;
    mpich) echo mpicc.mpich ;;
    esac
}
cxx_of() {
    case $1 in
    bm) echo "$build/tools/bmcc/bmcxx" ;;
    ompi) echo mpicxx.openmpi ;;
    mpich) echo mpicxx.mpich ;;
    esac
}

# ---- builds: one copy of each source tree per implementation.
declare -A built=()
build_app() { # build_app APP IMPL: copy and build; sets built[APP/IMPL]
    local app=$1 impl=$2 d=$work/$2/$1 log=$work/logs/build-$1-$2.log
    local cc cxx
    cc=$(cc_of "$impl")
    cxx=$(cxx_of "$impl")
    rm -rf "$d"
    mkdir -p "$work/$impl"
    cp -a "${src[$app]}" "$d"
    case $app in
    prk)
        printf 'CC=gcc -std=c11\nMPICC=%s -std=c11\nOPENMPFLAG=-fopenmp\nDEFAULT_OPT_FLAGS=-O2\n' \
            "$cc" >"$d/common/make.defs"
        nice -n 5 make -C "$d" -k allmpi1 allmpirma allmpishm allmpiopenmp PRK_FLAGS=-O2 >"$log" 2>&1
        ;;
    lulesh)
        nice -n 5 make -C "$d" -j2 "MPICXX=$cxx -DUSE_MPI=1" CXXFLAGS="-O2 -fopenmp -I. -Wall" \
            LDFLAGS="-O2 -fopenmp" >"$log" 2>&1
        ;;
    hpcg)
        nice -n 5 make -C "$d" -j2 arch=Linux_MPI CXX="$cxx" \
            "CXXFLAGS=-DHPCG_NO_OPENMP -I./src -I./src/Linux_MPI -O2" >"$log" 2>&1
        ;;
    minife) nice -n 5 make -C "$d/ref/src" -j2 CXX="$cxx" CC="$cc" CFLAGS=-O2 >"$log" 2>&1 ;;
    miniamr) nice -n 5 make -C "$d/ref" -j2 CC="$cc" LD="$cc" CFLAGS=-O2 >"$log" 2>&1 ;;
    comd)
        cp "$d/src-mpi/Makefile.vanilla" "$d/src-mpi/Makefile"
        nice -n 5 make -C "$d/src-mpi" -j2 CC="$cc" DO_MPI=ON OPTFLAGS=-O2 >"$log" 2>&1
        ;;
    esac
    built[$app/$impl]=$?
}
for app in prk lulesh hpcg minife miniamr comd; do
    [ -n "${src[$app]+x}" ] || continue
    for impl in "${impls[@]}"; do
        echo "== build $app with $impl"
        build_app $app $impl
    done
done

# answer APP LOG RUNDIR: what the app computed (one line), or "FAIL: why"
# when its own check failed.
answer() {
    local app=$1 log=$2 dir=$3 a
    case $app in
    prk)
        if grep -q 'Solution validates' "$log"; then
            echo "validates"
        else
            # PRK AMR fails its own check at these sizes under every MPI:
            # the answer is then the first error line, compared as is.
            a=$(grep -m1 'ERROR' "$log" | tr -s ' ')
            echo "FAIL: ${a:-no 'Solution validates'}"
        fi
        ;;
    lulesh)
        a=$(grep -E 'Iteration count|Final Origin Energy' "$log" | tr -s ' ' | tr '\n' ' ')
        [ -n "$a" ] && echo "$a" || echo "FAIL: no final energy"
        ;;
    hpcg)
        a=$(cat "$dir"/HPCG-Benchmark*.txt 2>/dev/null)
        if [ -z "$a" ]; then
            echo "FAIL: no HPCG-Benchmark report"
        elif echo "$a" | grep 'Result=' | grep -qv 'PASSED'; then
            echo "FAIL: $(echo "$a" | grep 'Result=' | grep -v PASSED | head -1)"
        else
            # The scaled residual is at rounding level (1e-25 at 4 ranks)
            # and its last digits follow the reductions' sum order, as
            # miniFE's below: HPCG's own checks decide, and its size.
            echo "PASSED, residual mean $(echo "$a" | grep -m1 'Scaled residual mean' |
                cut -d= -f2 | awk '{print ($1 < 1e-12) ? "< 1e-12" : $1}')"
        fi
        ;;
    minife)
        # The final residual is at rounding level (1e-16): its digits
        # depend on the sum order of the reductions, which differs between
        # implementations and between bitmover's sm and tcp algorithms;
        # compare the iteration count and check the residual's size.
        a=$(cat "$dir"/*.yaml 2>/dev/null)
        local it res
        it=$(echo "$a" | grep -m1 'Iterations:' | tr -dc '0-9')
        res=$(echo "$a" | grep -m1 'Final Resid Norm:' | awk '{print ($NF < 1e-12) ? "< 1e-12" : $NF}')
        [ -n "$it" ] && echo "iterations $it, residual $res" || echo "FAIL: no miniFE yaml report"
        ;;
    miniamr)
        if grep -q 'difference too large' "$log"; then
            echo "FAIL: $(grep -m1 'difference too large' "$log")"
        else
            a=$(grep -E 'Total blocks +:|total blocks split' "$log" | tr -s ' ' | tr '\n' ' ')
            [ -n "$a" ] && echo "$a" || echo "FAIL: no summary"
        fi
        ;;
    comd)
        a=$(grep -A4 'Simulation Validation' "$log" | grep -E 'Final energy|atom count' | tr -s ' ' | tr '\n' ' ')
        [ -n "$a" ] && echo "$a" || echo "FAIL: no validation"
        ;;
    esac
}

# The cases: NAME APP NP DIR-IN-TREE PROGRAM ARGS...
cases=()
add() { cases+=("$*"); }
if [ -n "${src[prk]+x}" ]; then
    for np in 1 2 4; do
        add "prk/branch prk $np MPI1/Branch ./branch 10 1000 vector_go"
        add "prk/dgemm prk $np MPI1/DGEMM ./dgemm 10 200 32 1"
        add "prk/nstream prk $np MPI1/Nstream ./nstream 10 200000 0"
        add "prk/random prk $np MPI1/Random ./random 16 16"
        add "prk/reduce prk $np MPI1/Reduce ./reduce 10 200000"
        add "prk/sparse prk $np MPI1/Sparse ./sparse 10 8 4"
        add "prk/stencil prk $np MPI1/Stencil ./stencil 10 1000"
        add "prk/global prk $np MPI1/Synch_global ./global 10 10000"
        add "prk/p2p prk $np MPI1/Synch_p2p ./p2p 10 1000 100"
        add "prk/transpose prk $np MPI1/Transpose ./transpose 10 1000 64"
        add "prk/pic prk $np MPI1/PIC-static ./pic 10 1000 100000 1 2 GEOMETRIC 0.99"
        add "prk/rma-stencil prk $np MPIRMA/Stencil ./stencil 10 1000"
        add "prk/rma-p2p prk $np MPIRMA/Synch_p2p ./p2p 10 1000 100"
        add "prk/rma-transpose prk $np MPIRMA/Transpose ./transpose 10 1000 64"
        add "prk/shm-p2p prk $np MPISHM/Synch_p2p ./p2p 10 1000 100"
        if [ $np -gt 1 ]; then # these refuse 1 rank
            add "prk/amr prk $np MPI1/AMR ./amr 10 1000 100 2 2 1 5 FINE_GRAIN 2"
            add "prk/amr-hw prk $np MPI1/AMR ./amr 10 1000 100 2 2 1 5 HIGH_WATER"
            add "prk/shm-stencil prk $np MPISHM/Stencil ./stencil 2 10 1000"
            add "prk/shm-transpose prk $np MPISHM/Transpose ./transpose 2 10 1000 64"
        fi
        add "prk/omp-nstream prk $np MPIOPENMP/Nstream ./nstream 2 10 200000 0"
        add "prk/omp-stencil prk $np MPIOPENMP/Stencil ./stencil 2 10 1000"
        add "prk/omp-p2p prk $np MPIOPENMP/Synch_p2p ./p2p 2 10 1000 1000"
        add "prk/omp-transpose prk $np MPIOPENMP/Transpose ./transpose 2 10 1000 64"
    done
fi
if [ -n "${src[lulesh]+x}" ]; then # a cube number of ranks
    add "lulesh lulesh 1 . ./lulesh2.0 -s 12 -i 100"
    add "lulesh lulesh 8 . ./lulesh2.0 -s 8 -i 100"
fi
if [ -n "${src[hpcg]+x}" ]; then
    for np in 1 2 4; do add "hpcg hpcg $np bin ./xhpcg 16 16 16 1"; done
fi
if [ -n "${src[minife]+x}" ]; then
    for np in 1 2 4; do add "minife minife $np ref/src ./miniFE.x -nx 30 -ny 30 -nz 30"; done
fi
if [ -n "${src[miniamr]+x}" ]; then
    for g in "1 1 1" "2 1 1" "2 2 1"; do
        set -- $g
        add "miniamr miniamr $(($1 * $2 * $3)) ref ./miniAMR.x --npx $1 --npy $2 --npz $3 --nx 8 --ny 8 --nz 8 --num_tsteps 10 --num_objects 1 --object 2 0 -1.10 -1.10 -1.10 0.030 0.030 0.030 1.5 1.5 1.5 0.0 0.0 0.0 --checksum_freq 1"
    done
fi
if [ -n "${src[comd]+x}" ]; then
    for g in "1 1 1" "2 1 1" "2 2 1"; do
        set -- $g
        add "comd comd $(($1 * $2 * $3)) bin ./CoMD-mpi -i $1 -j $2 -k $3 -x 16 -y 16 -z 16 -N 50 -n 10"
    done
fi

# run_one IMPL BTL APP NP DIR LOG PROGRAM ARGS...: one run in a fresh
# directory (the apps write their reports into the working directory);
# prints "RC SECONDS RUNDIR".
run_one() {
    local impl=$1 btl=$2 app=$3 np=$4 dir=$5 log=$6
    shift 6
    local rd=$log.d t0 t1 rc
    rm -rf "$rd"
    mkdir -p "$rd"
    local launch
    case $impl in
    bm) launch=("$bmrun" -n "$np") ;;
    ompi) launch=(mpirun.openmpi --oversubscribe -n "$np") ;;
    mpich) launch=(mpirun.mpich -n "$np") ;;
    esac
    local prog=$work/$impl/$app/$dir/${1#./}
    shift
    t0=$(date +%s.%N)
    if [ "$btl" = default ] || [ $impl != bm ]; then
        (cd "$rd" && timeout -k 5 "$tmo" nice -n 5 "${launch[@]}" "$prog" "$@" >"$log" 2>&1 </dev/null)
    else
        (cd "$rd" && BM_BTL=$btl timeout -k 5 "$tmo" nice -n 5 "${launch[@]}" "$prog" "$@" >"$log" 2>&1 </dev/null)
    fi
    rc=$?
    t1=$(date +%s.%N)
    echo "$rc $(awk "BEGIN{printf \"%.1f\", $t1 - $t0}") $rd"
}

pass=0
fail=0
failed=()
printf '%-18s %2s %-8s %-5s %7s %7s %7s  %s\n' case np btl bm bm_s ompi_s mpich_s answer
for c in "${cases[@]}"; do
    set -- $c
    name=$1 app=$2 np=$3 dir=$4
    shift 4
    [ -z "$filter" ] || [[ $name =~ $filter ]] || continue
    declare -A ans=() secs=()
    first=1
    bmlog=
    for btl in "${btls[@]}"; do
        for impl in "${impls[@]}"; do
            # Open MPI and MPICH run once per case, with the first setting.
            [ $impl = bm ] || [ $first = 1 ] || continue
            log=$work/logs/$(echo "$name-np$np-$impl-$btl" | tr '/,' '__').log
            if [ "${built[$app/$impl]}" != 0 ]; then
                ans[$impl]="FAIL: not built (log $work/logs/build-$app-$impl.log)"
                secs[$impl]=-
                continue
            fi
            [ $impl != bm ] || bmlog=$log
            read -r rc s rd < <(run_one $impl "$btl" $app $np "$dir" "$log" "$@")
            secs[$impl]=$s
            if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
                ans[$impl]="FAIL: timeout after $tmo s"
            elif [ "$rc" != 0 ]; then
                ans[$impl]="FAIL: exit status $rc: $(grep -m1 -iE 'error|abort|signal|fail' "$log" | cut -c1-100)"
            else
                ans[$impl]=$(answer $app "$log" "$rd")
            fi
        done
        first=0
        a=${ans[bm]}
        verdict=PASS
        why=
        if [[ $a == FAIL:* ]]; then
            # An app's own check failing is bitmover's failure only where
            # a reference MPI did not fail it the same way.
            if [ $ref = 0 ] || { [ "$a" != "${ans[ompi]}" ] && [ "$a" != "${ans[mpich]}" ]; }; then
                verdict=FAIL
                why=$a
            fi
        elif [ $ref = 1 ] && [ "$a" != "${ans[ompi]}" ] && [ "$a" != "${ans[mpich]}" ]; then
            verdict=FAIL
            why="answer differs: bitmover '$a', Open MPI '${ans[ompi]}', MPICH '${ans[mpich]}'"
        fi
        printf '%-18s %2s %-8s %-5s %7s %7s %7s  %s\n' "$name" $np "$btl" $verdict "${secs[bm]}" \
            "${secs[ompi]:--}" "${secs[mpich]:--}" "$a"
        if [ $verdict = PASS ]; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            failed+=("$name np $np $btl: $why (log $bmlog)")
        fi
    done
    unset ans secs
done
echo "== summary: $pass passed, $fail failed; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for f in "${failed[@]+"${failed[@]}"}"; do
    echo "  $f"
done
[ $fail -le 100 ] || fail=100
exit $fail
