#!/bin/bash
# Memory per process does not grow with the job for pairs of processes that
# never talk, and pairs that do talk get their fast boxes: bm_hello -M at 4 and 24 ranks on this host (every pair local)
# must show (1) the shared-memory files' memory per process nearly flat
# (sm's fast-box rings are backed only once a sender has sent
# BM_BTL_SM_FBOX_AFTER messages: reserved at start-up they added 64 KiB per
# peer), and (2) dgram's memory per process growing far less than a send
# window and its timers per peer (made for every peer at add_procs they
# added about 130 KiB per peer). A run with BM_BTL_SM_FBOX_AFTER=0 shows the
# eager cost, so the test proves it measures what it names. (3) tcp
# connects on first use: after MPI_Init and a barrier of 16 ranks over tcp
# alone no rank holds a connection to every peer (the barrier talks to
# about 2 log2(16) of them), but some rank holds one (the barrier did go
# over tcp).
# Usage: launcher_scale.sh <bmrun> <bm_hello> <launcher_mpi>
BMRUN=$1 HELLO=$2 MPIPROG=$3
. "$(dirname "$0")/lib.sh"

# field NAME FILE: the average of "NAME avg/max" in bm_hello's memory line (kB)
field() { grep -o "$1 [0-9]*/" "$2" | head -1 | tr -dc '0-9'; }

mem() { # mem NAME NP [VAR=VAL...]: run bm_hello -M, output in $T/NAME.out
    local name=$1 np=$2
    shift 2
    run "$name" env "$@" "$BMRUN" -n "$np" --timeout 120 "$HELLO" -M "$TOKEN"
    expect_rc "$name" 0
}

mem sm4 4 BM_BTL=self,sm
mem sm24 24 BM_BTL=self,sm
mem eager24 24 BM_BTL=self,sm BM_BTL_SM_FBOX_AFTER=0
a4=$(field shm-alloc "$T/sm4.out") a24=$(field shm-alloc "$T/sm24.out")
e24=$(field shm-alloc "$T/eager24.out")
per_peer=$(((a24 - a4) / 20))
if [ -n "$a4" ] && [ -n "$a24" ] && [ "$per_peer" -lt 16 ]; then
    ok "sm: shared memory per process $a4 kB at 4 ranks, $a24 kB at 24 ($per_peer kB per peer)"
else
    fail "sm: shared memory per process grows $per_peer kB per peer ($a4 kB at 4 ranks, $a24 kB at 24)"
fi
if [ -n "$e24" ] && [ $((e24 - a24)) -gt $((20 * 32)) ]; then
    ok "sm: rings reserved at start-up would cost $((e24 - a24)) kB more per process at 24 ranks"
else
    fail "sm: BM_BTL_SM_FBOX_AFTER=0 changed nothing ($e24 vs $a24 kB): is the ring reservation lazy at all?"
fi

# ... and a pair that talks gets its ring: after an all-to-all of 20 rounds
# (more than BM_BTL_SM_FBOX_AFTER messages per pair) each process's segment
# holds the rings of its 3 peers (64 KiB each at 4 ranks).
run talk env BM_BTL=self,sm "$BMRUN" -n 4 --timeout 120 "$HELLO" -M -T 20 "$TOKEN"
expect_rc talk 0
t4=$(field shm-alloc "$T/talk.out")
if [ -n "$t4" ] && [ $((t4 - a4)) -ge 96 ]; then
    ok "sm: rings of pairs that talk are backed ($a4 -> $t4 kB per process)"
else
    fail "sm: after 20 all-to-all rounds the segments hold no more memory ($a4 -> $t4 kB): fast boxes never used?"
fi

mem dg4 4 BM_BTL=self,dgram
mem dg24 24 BM_BTL=self,dgram
d4=$(field total "$T/dg4.out") d24=$(field total "$T/dg24.out")
if [ -n "$d4" ] && [ -n "$d24" ] && [ $((d24 - d4)) -lt $((20 * 48)) ]; then
    ok "dgram: memory per process $d4 kB at 4 ranks, $d24 kB at 24"
else
    fail "dgram: memory per process grows from $d4 kB at 4 ranks to $d24 kB at 24 (windows or timers made for idle peers?)"
fi

# tcp: connections made on first use, not all-to-all at MPI_Init. Each
# rank also holds its connection to bmrun's key-value service.
run tcp16 env BM_BTL=self,tcp "$BMRUN" -n 16 --timeout 120 "$MPIPROG" conns "$TOKEN"
expect_rc tcp16 0
c16=$(grep -o 'at most [0-9]* per rank' "$T/tcp16.out" | tr -dc '0-9')
if [ -n "$c16" ] && [ "$c16" -ge 2 ] && [ "$c16" -lt 15 ]; then
    ok "tcp: at most $c16 connections per rank after MPI_Init and a barrier of 16 ranks (1 to bmrun)"
else
    fail "tcp: ${c16:-no count of} connections per rank after MPI_Init and a barrier of 16 ranks (all-to-all would be 15 and more; fewer than 2: the barrier did not use tcp)"
fi
# Transports are asked only for the peers they may carry: with every
# transport on (self, sm, tcp, dgram) and every rank on this host, sm
# reaches all peers and cannot fail while they live, so tcp and dgram make
# no records for them (they made one per peer, dgram with a route probe).
# And sm maps a peer's segment only when it first sends to it or meets one
# of its fragments: after MPI_Init and a barrier of 16 ranks the job maps
# far fewer than the 16 x 15 segments of an all-to-all mapping (about 90
# measured: the barrier's and the first collective's partners, and the
# owners of fragments met in the queues), but some (the barrier used sm).
run rec16 env -u BM_BTL "$BMRUN" -n 16 --timeout 120 "$MPIPROG" records "$TOKEN"
expect_rc rec16 0
rec=$(grep -o 'records at most: .*' "$T/rec16.out")
read -r rtcp rdgram rsm rall <<<"$(echo "$rec" |
    sed -E 's/.*tcp ([0-9]+) dgram ([0-9]+) sm ([0-9]+).*all ranks: ([0-9]+).*/\1 \2 \3 \4/')"
if [ -n "$rec" ] && [ "$rsm" = 15 ] && [ "$rtcp" = 0 ] && [ "$rdgram" = 0 ]; then
    ok "16 ranks on one host: sm made $rsm records per rank, tcp and dgram none"
else
    fail "16 ranks on one host: ${rec:-no records line} (want sm 15, tcp 0, dgram 0: tcp/dgram asked for peers sm reaches?)"
fi
if [ -n "$rall" ] && [ "$rall" -ge 16 ] && [ "$rall" -lt 180 ]; then
    ok "sm: $rall peer segments mapped in all after MPI_Init and a barrier of 16 ranks (240 if mapped at start-up)"
else
    fail "sm: ${rall:-no count of} peer segments mapped in all after MPI_Init and a barrier of 16 ranks (240: mapped at start-up; fewer than 16: the barrier did not use sm)"
fi
finish
