#!/usr/bin/env bash
# Installs the Debian packages bitmover needs to build and test. As root it
# runs apt-get; otherwise it prints the exact command to run. Optional
# dependencies (libfabric, hwloc, PMIx) are installed too, since the test
# suite exercises the transports and launch paths they enable.
set -euo pipefail

# openmpi-bin (mpirun, a PMIx server) and mpich (mpiexec.hydra, PMI-1/2) are
# the launchers tests/launcher/launcher_foreign.sh starts bitmover jobs with;
# slurmctld, slurmd, slurm-client and munge make the private single-node
# Slurm of tests/launcher/launcher_slurm.sh (srun --mpi=pmix/pmi2).
need=(cmake make gcc pkg-config libc6-dev
      libfabric-dev libfabric-bin libhwloc-dev libpmix-dev
      iproute2 iptables procps python3
      openmpi-bin mpich slurmctld slurmd slurm-client munge)
[ "${1:-}" = "--bench" ] && need+=(libopenmpi-dev libmpich-dev gnuplot-nox)

missing=()
for p in "${need[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "bitmover: missing Debian packages. Run as root:" >&2
    echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 1
fi
echo "bitmover: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
