#!/usr/bin/env bash
# The goals of the threads issue (MPI_THREAD_MULTIPLE, waiting, the progress
# thread) in one run, for a quiet machine:
#   1. bench/compare --class threads: single-pair latency under
#      MPI_THREAD_MULTIPLE (<= 0.8x the best peer), aggregate rate of 2 and 4
#      thread pairs (>= 0.9x one pair and >= the best peer), the
#      oversubscribed 8-rank barrier loop with BM_PML_WAIT_MODE=block (>= 3x
#      faster than spin); interleaved with Open MPI and MPICH;
#   2. lock contention under MPI_THREAD_MULTIPLE (BM_PML_STATS=1): how often
#      each kind of lock was found taken, with 1, 2 and 4 thread pairs;
#   3. the idle progress thread's CPU (< 1% of a core) over sm, tcp, dgram
#      and ofi (tests/mpi/mt_progress: 2 s outside MPI);
#   4. what the progress thread buys and costs (the default rule in
#      src/pml/README.md "The progress thread"): asynchronous progress of a
#      rendezvous and of a passive-target epoch while the peer computes
#      (bm_mt_async), nonblocking-allreduce overlap (bm_overlap), and 8-byte
#      latency, each with BM_PML_PROGRESS_THREAD=0 and 1 in interleaved
#      rounds (medians);
#   5. the oversubscribed barrier loop alone (bitmover only, quick): bm_barrier
#      on 8 ranks with BM_PML_WAIT_MODE=spin, yield and block in interleaved
#      rounds (medians, us per step; goal: block >= 3x faster than spin), and
#      the context switches per step of block and yield (perf stat, when
#      perf is installed).
#
#   bench/mt_goals.sh [BUILD_DIR (default build/release)] [ROUNDS (default 5)]
#
# MT_GOALS_PARTS="1 3" runs only those parts (default all five);
# MT_GOALS_VERBOSE=1 prints every run of part 4.
# BUILD_DIR must be configured from this source tree (bench/compare builds
# its benchmarks with it). Prints uptime before each part: numbers taken
# under load are not the goals' numbers.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build/release}" && pwd)
ROUNDS=${2:-5}
OUT=${MT_GOALS_OUT:-$ROOT/bench/out/mt_goals}
BMRUN=$BUILD/tools/bmrun/bmrun
[ -x "$BMRUN" ] || BMRUN=$BUILD/tools/bmrun
mkdir -p "$OUT"
PARTS=${MT_GOALS_PARTS:-1 2 3 4 5}
say() { printf '\n== %s (%s)\n' "$1" "$(uptime | sed 's/.*load/load/')"; }
part() { [[ " $PARTS " == *" $1 "* ]]; }

if part 1; then
say "1. bench/compare --class threads"
python3 "$ROOT/bench/compare" --class threads --bitmover-build "$BUILD" --skip-limits \
    --out "$OUT/compare" | sed -n '/^## Threads/,$p'
fi

if part 2; then
say "2. lock contention (BM_PML_STATS=1, bm_mt_mr 8 B and 64 KiB over sm)"
for p in 1 2 4; do
    for m in 8 65536; do
        echo "-- $p pair(s), $m B"
        BM_BTL=self,sm BM_PML_STATS=1 timeout 120 "$BMRUN" -np 2 "$BUILD/bench/bm_mt_mr" \
            -p "$p" -m "$m:$m" -t 1 2>&1 | grep -E '^[0-9]|locks acquired|waiting' || true
    done
done
fi

if part 3; then
say "3. idle progress thread CPU (goal < 1% of a core)"
for b in sm tcp dgram ofi; do
    printf -- '-- %s: ' "$b"
    BM_BTL=self,$b BM_BTL_OFI_PROVIDER_INCLUDE=tcp BM_PML_PROGRESS_THREAD=1 timeout 120 "$BMRUN" -np 2 \
        "$BUILD/tests/mpi/mt_progress" 2>&1 | grep -E 'of a core|failed' | tr '\n' ' ' || true
    echo
done
fi

if part 4; then
say "4. the progress thread: what it buys and costs ($ROUNDS interleaved rounds, medians)"
python3 - "$BMRUN" "$BUILD" "$ROUNDS" <<'EOF'
import os, statistics, subprocess, sys
bmrun, build, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
B = os.path.join(build, "bench")
# name, transports, program + arguments, which column of the last line
CASES = [
    ("rndv 1 MiB, wait after 2 ms compute, sm", "self,sm",
     ["bm_mt_async", "-k", "rndv", "-c", "2000", "-m", "1m", "-i", "20"], 2),
    ("rndv 1 MiB, wait after 2 ms compute, tcp", "self,tcp",
     ["bm_mt_async", "-k", "rndv", "-c", "2000", "-m", "1m", "-i", "20"], 2),
    ("passive put 8 B epoch, target computes 2 ms, sm", "self,sm",
     ["bm_mt_async", "-k", "put", "-c", "2000", "-m", "8", "-i", "20"], 2),
    ("passive put 8 B epoch, target computes 2 ms, tcp", "self,tcp",
     ["bm_mt_async", "-k", "put", "-c", "2000", "-m", "8", "-i", "20"], 2),
    ("iallreduce 1 MiB overlap %, sm", "self,sm",
     ["bm_overlap", "-c", "iallreduce", "-m", "1m", "-i", "50", "-w", "5"], 4),
    ("latency 8 B us, sm", "self,sm", ["bm_latency", "-m", "8:8", "-i", "50000", "-t", "2"], 1),
    ("latency 8 B us, tcp", "self,tcp", ["bm_latency", "-m", "8:8", "-i", "20000", "-t", "2"], 1),
]
res = {(c[0], t): [] for c in CASES for t in (0, 1)}
for r in range(rounds):
    for c in CASES:
        for t in ((0, 1) if r % 2 == 0 else (1, 0)):
            env = dict(os.environ, BM_BTL=c[1], BM_PML_PROGRESS_THREAD=str(t))
            p = subprocess.run([bmrun, "-np", "2", os.path.join(B, c[2][0])] + c[2][1:],
                               capture_output=True, text=True, env=env, timeout=300)
            rows = [l.split() for l in p.stdout.splitlines() if l and not l.startswith("#")]
            if p.returncode != 0 or not rows:
                print("   %s, thread %d: failed (%d) %s" % (c[0], t, p.returncode,
                                                             p.stderr.strip()[-200:]))
                continue
            res[(c[0], t)].append(float(rows[-1][c[3]]))
            if os.environ.get("MT_GOALS_VERBOSE"):
                print("   %s, thread %d: %s" % (c[0], t, rows[-1][c[3]]), flush=True)
    print("   round %d done, load %s" % (r + 1, open("/proc/loadavg").read().split()[0]),
          flush=True)
print("%-52s %12s %12s" % ("", "no thread", "thread"))
for c in CASES:
    v = [statistics.median(res[(c[0], t)]) if res[(c[0], t)] else float("nan") for t in (0, 1)]
    print("%-52s %12.2f %12.2f" % (c[0], v[0], v[1]))
EOF
fi

if part 5; then
say "5. oversubscribed barrier loop: 8 ranks, bm_barrier -i 300, $ROUNDS interleaved rounds"
declare -A bar=([spin]= [yield]= [block]=)
for r in $(seq "$ROUNDS"); do
    for m in spin yield block; do
        v=$(BM_BTL=self,sm BM_PML_WAIT_MODE=$m timeout 300 "$BMRUN" -np 8 \
            "$BUILD/bench/bm_barrier" -i 300 2>/dev/null | awk '/^8 /{print $3}')
        bar[$m]="${bar[$m]} ${v:-nan}"
    done
done
for m in spin yield block; do
    printf -- '-- %-5s us per step: %s (median %s)\n' "$m" "${bar[$m]# }" \
        "$(echo ${bar[$m]} | tr ' ' '\n' | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')"
done
if command -v perf >/dev/null; then
    for m in yield block; do
        printf -- '-- %s, 3000 steps: ' "$m"
        BM_BTL=self,sm BM_PML_WAIT_MODE=$m perf stat -x, -e context-switches timeout 300 \
            "$BMRUN" -np 8 "$BUILD/bench/bm_barrier" -i 3000 2>&1 >/dev/null |
            awk -F, '/context-switches/ {printf "%.1f context switches per step\n", $1 / 3000}'
    done
fi
fi
