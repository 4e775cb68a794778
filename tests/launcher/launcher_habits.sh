#!/bin/bash
# bmrun with mpirun's habits: Open MPI's spellings (one or two dashes,
# --opt=value), -np, --oversubscribe, -N/--npernode, --map-by and ppr, the
# hostfile spellings, -x and -genv, --report-bindings, --display-map, --mca
# mapped to BM_* or refused with the equivalent named, MPMD with ':' (its
# MPI_APPNUM), stdin forwarded to rank 0 (and only there, intact, with flow
# control), the mpirun/mpiexec aliases, and the closest option suggested for
# a typo.
# Usage: launcher_habits.sh <bmrun> <launcher_rank> <launcher_mpi>
BMRUN=$1 RANK=$2 MPIPROG=$3
. "$(dirname "$0")/lib.sh"

env_of() { # print chosen variables of each rank: env_of VAR...
    printf 'echo "$BMRUN_RANK'
    for v in "$@"; do printf ' %s=$%s' "$v" "$v"; done
    printf '"'
}

run np "$BMRUN" -np 2 --np=2 "$RANK" modex "$TOKEN"
expect_rc np 0
[ "$(grep -c ' ok$' "$T/np.out")" -eq 2 ] && ok "np: -np and --np=" || fail "np: $(cat "$T/np.out")"

# Single-dash long options, the hostfile spellings, --allow-run-as-root.
printf 'localhost slots=3\n' >"$T/hosts"
for spell in -hostfile --hostfile --machinefile -machinefile -f; do
    run "hf$spell" "$BMRUN" --allow-run-as-root "$spell" "$T/hosts" -tag-output sh -c 'echo x'
    expect_rc "hf$spell" 0
    [ "$(grep -c '^\[[0-2]\] x$' "$T/hf$spell.out")" -eq 3 ] && ok "$spell: 3 slots, 3 ranks" ||
        fail "$spell: $(cat "$T/hf$spell.out")"
done

# -N: ranks per host; without -n, N per host.
run npernode "$BMRUN" -N 3 sh -c 'echo $BMRUN_SIZE'
expect_rc npernode 0
[ "$(sort -u "$T/npernode.out")" = 3 ] && ok "npernode: -N 3 gives 3 ranks" ||
    fail "npernode: $(cat "$T/npernode.out")"
run ppr "$BMRUN" --map-by ppr:2:node --host localhost:4 sh -c 'echo $BMRUN_SIZE'
expect_rc ppr 0
[ "$(sort -u "$T/ppr.out")" = 2 ] && ok "ppr:2:node: 2 ranks" || fail "ppr: $(cat "$T/ppr.out")"
run pprtoo "$BMRUN" -n 3 -N 2 --host localhost:4 true
expect_rc pprtoo 2
expect_err pprtoo '3 ranks do not fit 2 per host on 1 host'

# Oversubscription of given slots needs --oversubscribe (also as a --map-by modifier).
run over "$BMRUN" -n 3 --host localhost:2 true
expect_rc over 2
expect_err over 'only 2 slot\(s\) on the given hosts: add --oversubscribe'
run over2 "$BMRUN" -n 3 --host localhost:2 --map-by slot:OVERSUBSCRIBE true
expect_rc over2 0
run mapnode "$BMRUN" -n 3 --map-by node --display-map true
expect_rc mapnode 0
expect_err mapnode '^bmrun: rank 2 on host [^ ]+ \(node 0, local rank 2 of 3\): true$'
run badmap "$BMRUN" -n 2 --map-by socket true
expect_rc badmap 2
expect_err badmap 'bmrun maps by slot, core .*, node .* or ppr:N:node'

# -x and -genv; --report-bindings.
FROMENV=yes run xenv "$BMRUN" -n 2 -x A=1 -x FROMENV -genv B 2 sh -c "$(env_of A FROMENV B)"
expect_rc xenv 0
[ "$(sort "$T/xenv.out" | tr '\n' ' ')" = "0 A=1 FROMENV=yes B=2 1 A=1 FROMENV=yes B=2 " ] &&
    ok "xenv: -x VAR=val, -x VAR, -genv" || fail "xenv: $(cat "$T/xenv.out")"
run report "$BMRUN" -n 2 --report-bindings true
expect_rc report 0
expect_err report '^bmrun: rank 1 \(host [^,]+, pid [0-9]+\) (bound to CPU [0-9]+|not bound: .*)$'

# --mca: mapped, accepted without effect, or refused naming the equivalent.
run mcabtl "$BMRUN" -n 2 --mca btl self,vader,tcp -mca btl_tcp_if_include lo \
    sh -c "$(env_of BM_BTL BM_BTL_TCP_IF_INCLUDE)"
expect_rc mcabtl 0
expect_out mcabtl '^1 BM_BTL=self,sm,tcp BM_BTL_TCP_IF_INCLUDE=lo$'
run mcaexcl "$BMRUN" -n 1 --mca btl ^openib,tcp --mca pml ob1 sh -c "$(env_of BM_BTL)"
expect_rc mcaexcl 0
expect_out mcaexcl '^0 BM_BTL=\^tcp$'
run mcapml "$BMRUN" -n 1 --mca pml ucx true
expect_rc mcapml 2
expect_err mcapml 'bitmover has one point-to-point layer'
run mcaopenib "$BMRUN" -n 1 --mca btl openib,self true
expect_rc mcaopenib 2
expect_err mcaopenib "bitmover has no 'openib' transport; its transports are self, sm"
run mcaunknown "$BMRUN" -n 1 --mca orte_base_foo 1 true
expect_rc mcaunknown 2
expect_err mcaunknown 'no bitmover equivalent known; .*bm_info --params'
run mcabind "$BMRUN" -n 2 --mca hwloc_base_binding_policy none --report-bindings true
expect_rc mcabind 0
expect_err mcabind 'not bound: --bind-to none'

# Typos get the closest option.
for typo in --oversubscibe -mpa-by --tag-ouput; do
    run "typo$typo" "$BMRUN" -n 1 "$typo" true
    expect_rc "typo$typo" 2
done
expect_err typo--oversubscibe "unknown option '--oversubscibe'; did you mean --oversubscribe\?"
expect_err typo-mpa-by "did you mean -map-by\?"
expect_err typo--tag-ouput "did you mean --tag-output\?"
run typoprefix "$BMRUN" -n 1 --tag-out true
expect_rc typoprefix 2
expect_err typoprefix "unknown option '--tag-out'; did you mean --tag-output\?"
run typofar "$BMRUN" -n 1 --frobnicate true
expect_rc typofar 2
expect_err typofar "unknown option '--frobnicate' \(the closest bmrun option is -[-a-zA-Z]+; bmrun --help lists them all\)"

# MPMD: consecutive ranks, each program its own -n and -x, MPI_APPNUM.
run mpmd "$BMRUN" -n 1 -x WHO=a sh -c "$(env_of BMRUN_SIZE BMRUN_APPNUM WHO)" : \
    -n 2 -x WHO=b sh -c "$(env_of BMRUN_SIZE BMRUN_APPNUM WHO)"
expect_rc mpmd 0
[ "$(sort "$T/mpmd.out" | tr '\n' ' ')" = \
    "0 BMRUN_SIZE=3 BMRUN_APPNUM=0 WHO=a 1 BMRUN_SIZE=3 BMRUN_APPNUM=1 WHO=b 2 BMRUN_SIZE=3 BMRUN_APPNUM=1 WHO=b " ] &&
    ok "mpmd: 1 + 2 ranks, appnum and -x per program" || fail "mpmd: $(cat "$T/mpmd.out")"
run mpmdmpi "$BMRUN" -n 1 "$MPIPROG" "$TOKEN" : -n 2 "$MPIPROG" "$TOKEN"
expect_rc mpmdmpi 0
expect_out mpmdmpi '^allreduce ok 3$'
expect_out mpmdmpi '^rank 2 of 3 backend bmrun node-ranks 3 app 1 via bmrun key-value service$'
run mpmdnon "$BMRUN" -n 1 true : true
expect_rc mpmdnon 2
expect_err mpmdnon 'program 2 of the MPMD job \(true\) has no -n'
run mpmdglobal "$BMRUN" -n 1 true : -n 1 --tag-output true
expect_rc mpmdglobal 2
expect_err mpmdglobal 'only -n and -x may differ between the programs'

# stdin goes to rank 0 only, intact; the others read end of file.
head -c 3000000 /dev/urandom >"$T/input"
want=$(md5sum <"$T/input" | cut -d' ' -f1)
run stdin "$BMRUN" -n 3 sh -c 'if [ "$BMRUN_RANK" = 0 ]; then md5sum; else echo "rank $BMRUN_RANK read $(wc -c) bytes"; fi' <"$T/input"
expect_rc stdin 0
expect_out stdin "^$want"
[ "$(grep -c 'read 0 bytes' "$T/stdin.out")" -eq 2 ] && ok "stdin: other ranks read nothing" ||
    fail "stdin: $(cat "$T/stdin.out")"
printf 'one\ntwo\n' >"$T/lines"
run stdinmpi "$BMRUN" -n 2 "$MPIPROG" stdin "$TOKEN" <"$T/lines"
expect_rc stdinmpi 0
expect_out stdinmpi '^stdin: two$'
run stdinnone "$BMRUN" -n 1 --stdin none sh -c 'wc -c' <"$T/lines"
expect_rc stdinnone 0
expect_out stdinnone '^0$'
# A rank 0 that never reads: bmrun neither blocks nor fails.
run stdinunread "$BMRUN" -n 2 --timeout 60 true <"$T/input"
expect_rc stdinunread 0

# The aliases an install puts next to bmrun.
ln -s "$BMRUN" "$T/mpirun"
ln -s "$BMRUN" "$T/mpiexec"
run alias1 "$T/mpirun" -np 2 --oversubscribe "$RANK" modex "$TOKEN"
expect_rc alias1 0
run alias2 "$T/mpiexec" -n 2 "$RANK" modex "$TOKEN"
expect_rc alias2 0
expect_no_leftovers habits
finish
