#!/bin/sh
# The shared library exports MPI_*, PMPI_* and the public bm_ API only
# (DEVELOPERS.md; cmake/bitmover.map). Fails on any other defined dynamic
# symbol, such as the linker's __start_/__stop_ section bounds; on any export
# that no installed header (include/*.h) declares, since the map's bm_*
# pattern would also let an internal bm_ function through if it lost its
# hidden visibility; and when the listing itself did not work (no MPI_Init).
# usage: test_exports.sh <libbitmover.so> <include dir>
set -eu
lib=$1 inc=$2
syms=$(nm -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }')
echo "$syms" | grep -qx 'MPI_Init' || { echo "FAIL: no MPI_Init exported by $lib"; exit 1; }
echo "$syms" | grep -qx 'PMPI_Send' || { echo "FAIL: no PMPI_Send exported by $lib"; exit 1; }
other=$(echo "$syms" | grep -v '^MPI_\|^PMPI_\|^bm_' || true)
if [ -n "$other" ]; then
    echo "FAIL: $lib exports symbols outside MPI_*, PMPI_*, bm_*:"
    echo "$other"
    exit 1
fi
# Every name the public headers declare, against every export.
declared=$(mktemp)
trap 'rm -f "$declared"' EXIT
cat "$inc"/*.h | tr -c 'A-Za-z0-9_' '\n' | grep '^\(P\?MPI_\|bm_\)' | sort -u >"$declared"
undeclared=$(echo "$syms" | sort -u | comm -23 - "$declared")
if [ -n "$undeclared" ]; then
    echo "FAIL: $lib exports names no header in $inc declares (internal symbols made public?):"
    echo "$undeclared"
    exit 1
fi
echo "PASS: $(echo "$syms" | wc -l) exports, all MPI_*, PMPI_* or bm_*, each declared in $inc"
