#!/usr/bin/env bash
# The demo behind `make demo`: two processes on this machine, over the
# default transports (whatever bitmover selects: shared memory here), print
# ping-pong latency and streaming bandwidth. Takes the build directory.
set -euo pipefail
build=${1:-build/release}
bmrun=$build/tools/bmrun/bmrun
for p in "$bmrun" "$build/bench/bm_latency" "$build/bench/bm_bw"; do
    [ -x "$p" ] || { echo "demo: $p is missing; run 'make build' first" >&2; exit 1; }
done
echo "== bitmover $($build/tools/bm_info/bm_info | head -1 | cut -d" " -f2) demo: 2 processes on $(hostname), default transports"
echo
"$bmrun" -n 2 --timeout 120 "$build/bench/bm_latency" -m 0:64k -t 1
echo
"$bmrun" -n 2 --timeout 120 "$build/bench/bm_bw" -m 1k:4m -t 1
echo
echo "Compare with Open MPI and MPICH on this machine: bench/compare (see docs/performance.md)."
