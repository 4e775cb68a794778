#!/bin/bash
# Bad usage prints the usage and exits 2; a program that cannot be found or
# executed is reported and exits 127.
BMRUN=$1 RANK=$2
. "$(dirname "$0")/lib.sh"

i=0
for args in "" "-n" "-n 0 $RANK" "-n abc $RANK" "-n 2" "--bogus -n 2 $RANK" "-n 2 --timeout xyz $RANK" \
    "-n 2 --host $RANK" "-n 2 --host a --hostfile b $RANK" "-n 2 -x $RANK" "$RANK"; do
    i=$((i + 1))
    # shellcheck disable=SC2086
    run usage$i "$BMRUN" $args
    expect_rc usage$i 2
    expect_err usage$i '^usage: bmrun -n N'
done
run help "$BMRUN" --help
expect_rc help 0
expect_out help '^usage: bmrun'

printf 'localhost slots=2\nbogus-line with=junk\n' >"$T/hostfile"
run hostfile "$BMRUN" -n 2 --hostfile "$T/hostfile" "$RANK" modex
expect_rc hostfile 2
expect_err hostfile 'hostfile line 2: unknown or bad field'

# A bad BM_* value stops the job once, in bmrun, before any rank starts.
BM_RUN_KILL_GRACE=soon run badparam "$BMRUN" -n 2 "$RANK" modex
expect_rc badparam 2
expect_err badparam 'BM_RUN_KILL_GRACE=soon is not valid'

run badagent "$BMRUN" -n 1 --host far-away-host --launch-agent "ssh 'unterminated" "$RANK" modex
expect_rc badagent 2
expect_err badagent "bad launch agent"

# A launch agent that does not exist: named, with what to do.
run noagent "$BMRUN" -n 1 --host far-away-host --launch-agent "/nonexistent/agent-$TOKEN {host}" \
    --timeout 30 "$RANK" modex
expect_rc noagent 1
expect_err noagent "\[host far-away-host\] cannot execute launch agent '/nonexistent/agent-$TOKEN': No such file or directory; install it or choose another agent with --launch-agent"

# A daemon whose agent did not pass the job secret on (ssh -n): says so.
run nosecret "$BMRUN" --daemon 0 127.0.0.1:1 job$TOKEN </dev/null
expect_rc nosecret 1
expect_err nosecret "no job secret on stdin: the launch agent must pass bmrun's input on to the daemon"

run missing "$BMRUN" -n 2 /nonexistent/program
expect_rc missing 127
expect_err missing "program '/nonexistent/program' not found"
run missing_path "$BMRUN" -n 2 no-such-program-"$TOKEN"
expect_rc missing_path 127
expect_err missing_path 'not found or not executable \(searched PATH\)'
printf 'not a program\n' >"$T/noexec"
run noexec "$BMRUN" -n 2 "$T/noexec"
expect_rc noexec 127
# Executable, but exec itself fails in the child (missing interpreter).
printf '#!/nonexistent/interpreter\n' >"$T/badinterp"
chmod +x "$T/badinterp"
run badinterp "$BMRUN" -n 2 "$T/badinterp"
expect_rc badinterp 127
expect_err badinterp "cannot execute '.*badinterp' for rank [01] on host [^:]+: No such file or directory"
finish
