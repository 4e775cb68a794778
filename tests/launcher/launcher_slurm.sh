#!/bin/bash
# bitmover jobs under a real Slurm. The test starts a single-node Slurm of its
# own (munged, slurmctld and slurmd from Debian's packages, a generated
# slurm.conf with this machine's CPU count, private ports, state and socket
# directories) and stops it at the end, whatever happens. Jobs:
#   srun -n 2                  the configured default (MpiDefault=pmix): PMIx
#   srun -n 4 --mpi=pmix       PMIx, oversubscribed (-O)
#   srun -n 2 --mpi=pmix       with BM_RTE_PMIX_MODEX=collect
#   srun -n 4 --mpi=pmi2       PMI-2 wire protocol (when this Slurm has pmi2)
#   srun -n 2 --mpi=none       must fail with a message naming srun and --mpi
#   MPI_Abort under PMIx       the job ends with the message
#   launcher_rank late         under PMIx and PMI-2: a fence waits for the last
#                              rank (the late rank's mark is seen by all)
# Each job's ranks must name the backend and the path (PMI-2 on PMI_FD, PMIx
# direct or collect modex) and get a correct allreduce.
# Skips (77) only when the Slurm or munge packages are missing or the test is
# not root (slurmd starts tasks as their user).
# Usage: launcher_slurm.sh <launcher_mpi> <launcher_rank>
MPIPROG=$1 RANK=$2
. "$(dirname "$0")/lib.sh"

for p in slurmctld slurmd srun sinfo munged; do
    if ! command -v $p >/dev/null && [ ! -x /usr/sbin/$p ]; then
        echo "SKIP: $p not installed (Debian: apt-get install slurmctld slurmd slurm-client munge)"
        exit 77
    fi
done
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: a private slurmd must run as root to start tasks (running as $(id -un))"
    exit 77
fi
PATH=$PATH:/usr/sbin
unset PMI_FD PMI_PORT PMI_ID PMI_RANK PMI_SIZE PMI_JOBID PMIX_NAMESPACE PMIX_RANK
unset SLURM_PROCID SLURM_STEP_NUM_TASKS SLURM_JOB_ID BMRUN_KVS BMRUN_RANK

S=$T/slurm
mkdir -p "$S/state" "$S/spool" "$S/munge" "$S/log"
chmod 755 "$T" "$S"
chmod 700 "$S/munge"
pids=()
cleanup() {
    # slurmd first (it ends running steps), then the controller, then munge.
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[$i]}" 2>/dev/null; done
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        for _ in $(seq 50); do kill -0 "${pids[$i]}" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "${pids[$i]}" 2>/dev/null
    done
    [ -n "${TOKEN:-}" ] && pkill -KILL -f "$TOKEN" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT

# Three free TCP ports (controller, slurmd, srun's range start) from the kernel.
read -r CTLD_PORT SLURMD_PORT SRUN_PORT < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(3)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
HOST=$(hostname -s)
CPUS=$(nproc)

dd if=/dev/urandom of="$S/munge/key" bs=1024 count=1 2>/dev/null
chmod 400 "$S/munge/key"
munged -F -f --socket="$S/munge/sock" --key-file="$S/munge/key" --pid-file="$S/munge/pid" \
    --log-file="$S/log/munge.log" --seed-file="$S/munge/seed" >"$S/log/munged.out" 2>&1 &
pids+=($!)

cat >"$S/slurm.conf" <<EOF
ClusterName=bmtest$$
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SrunPortRange=$SRUN_PORT-$((SRUN_PORT + 20))
AuthType=auth/munge
AuthInfo=socket=$S/munge/sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
PlugStackConfig=$S/plugstack.conf
MpiDefault=pmix
ReturnToService=2
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS State=UNKNOWN
PartitionName=bm Nodes=ALL Default=YES MaxTime=10 State=UP
EOF
touch "$S/plugstack.conf"
export SLURM_CONF=$S/slurm.conf

for _ in $(seq 50); do [ -S "$S/munge/sock" ] && break; sleep 0.1; done
slurmctld -D -i -f "$SLURM_CONF" >"$S/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -N "$HOST" -f "$SLURM_CONF" >"$S/log/slurmd.out" 2>&1 &
pids+=($!)
up=0
for _ in $(seq 150); do
    if [ "$(sinfo -h -o %T 2>/dev/null)" = idle ]; then up=1; break; fi
    sleep 0.2
done
if [ $up = 0 ]; then
    fail "the private Slurm did not come up within 30 s (node state: $(sinfo -h -o %T 2>&1))"
    tail -5 "$S/log/slurmctld.log" "$S/log/slurmd.log" "$S/log/munge.log" >&2
    finish
fi
ok "single-node Slurm up ($CPUS CPUs, controller port $CTLD_PORT)"
plugins=$(srun --mpi=list 2>&1)


if echo "$plugins" | grep -q pmix; then
    run default timeout 60 srun -n 2 "$MPIPROG" "$TOKEN"
    check_job default pmix 2 "PMIx direct modex"
    run pmix4 timeout 60 srun -O -n 4 --mpi=pmix "$MPIPROG" "$TOKEN"
    check_job pmix4 pmix 4 "PMIx direct modex"
    run collect env BM_RTE_PMIX_MODEX=collect timeout 60 srun -n 2 --mpi=pmix "$MPIPROG" "$TOKEN"
    check_job collect pmix 2 "PMIx collect modex"
    run abort timeout 60 srun -n 2 --mpi=pmix "$MPIPROG" abort 1 9 "$TOKEN"
    if [ "$rc" -ne 0 ]; then ok "abort: exit code $rc (non-zero)"; else
        fail "abort: srun exited 0 after MPI_Abort"; fi
    expect_err abort '^bitmover: rank 1 aborting \(exit code 9\)'
    run pmixlate timeout 60 srun -O -n 3 --mpi=pmix "$RANK" late 1 "$TOKEN"
    expect_late pmixlate PMIx
else
    fail "this Slurm has no pmix plugin (srun --mpi=list: $plugins)"
fi
if echo "$plugins" | grep -q pmi2; then
    run pmi2 timeout 60 srun -O -n 4 --mpi=pmi2 "$MPIPROG" "$TOKEN"
    check_job pmi2 pmi 4 "PMI-2 on PMI_FD"
    run pmi2late timeout 60 srun -O -n 3 --mpi=pmi2 "$RANK" late 1 "$TOKEN"
    expect_late pmi2late PMI-2
else
    echo "note: this Slurm has no pmi2 plugin: PMI-2 run skipped"
fi
run none timeout 60 srun -n 2 --mpi=none "$MPIPROG" "$TOKEN"
if [ "$rc" -ne 0 ]; then ok "none: exit code $rc (non-zero)"; else
    fail "none: srun --mpi=none exited 0 (silent 1-process jobs?)"; fi
expect_err none 'without a PMI server'
expect_err none 'srun --mpi=pmix'
if grep -q "^allreduce ok" "$T/none.out"; then fail "none: a rank ran as a 1-process job"; fi
expect_no_leftovers slurm
finish
