#!/bin/sh
# The shared library exports MPI_*, PMPI_* and the public bm_ API only
# (DEVELOPERS.md; cmake/bitmover.map). Fails on any other defined dynamic
# symbol, such as the linker's __start_/__stop_ section bounds, and when the
# listing itself did not work (no MPI_Init among the exports).
set -eu
lib=$1
syms=$(nm -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }')
echo "$syms" | grep -qx 'MPI_Init' || { echo "FAIL: no MPI_Init exported by $lib"; exit 1; }
echo "$syms" | grep -qx 'PMPI_Send' || { echo "FAIL: no PMPI_Send exported by $lib"; exit 1; }
other=$(echo "$syms" | grep -v '^MPI_\|^PMPI_\|^bm_' || true)
if [ -n "$other" ]; then
    echo "FAIL: $lib exports symbols outside MPI_*, PMPI_*, bm_*:"
    echo "$other"
    exit 1
fi
echo "PASS: $(echo "$syms" | wc -l) exports, all MPI_*, PMPI_* or bm_*"
