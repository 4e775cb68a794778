#!/bin/bash
# Each rank runs in a session of its own, as under MPICH's hydra (README
# "Sessions": with the kernel's autogroups a job of N ranks is N scheduling
# groups, not one), except where the ranks yield their CPUs to each other
# (they stay in bmrun's session), keeps the nice value bmrun was started
# with as its group's, and Ctrl-C typed at bmrun's terminal still ends
# every rank.
BMRUN=$1 RANK=$2
. "$(dirname "$0")/lib.sh"

# Each rank is a session of its own (as under MPICH's hydra: with kernel
# autogroups every rank is a scheduling group, README "Sessions"), and its
# process group is its pid. Fields 1, 5 and 6 of /proc/self/stat: pid,
# process group, session.
run session env -u BM_PML_IDLE_YIELD "$BMRUN" -n 2 sh -c 'read -r p _ _ _ g s _ </proc/self/stat; echo "sess $p $g $s"' "$TOKEN"
expect_rc session 0
mysid=$(awk '{print $6}' /proc/self/stat)
n=$(awk -v me="$mysid" '$1 == "sess" && $2 == $3 && $2 == $4 && $4 != me' "$T/session.out" | wc -l)
[ "$n" -eq 2 ] && ok "session: both ranks lead a session and a group of their own" ||
    fail "session: ranks not in sessions of their own: $(tr '\n' ';' <"$T/session.out")"

# Ranks that give their CPUs to each other stay in bmrun's session, each in
# a process group of its own (README "Sessions": a yield reaches only the
# yielder's own scheduling group): more ranks than CPUs, and a job told to
# yield (BM_PML_IDLE_YIELD above 0).
over=$(($(nproc) + 1))
run oversub "$BMRUN" -n "$over" --oversubscribe sh -c 'read -r p _ _ _ g s _ </proc/self/stat; echo "sess $p $g $s"' "$TOKEN"
expect_rc oversub 0
n=$(awk -v me="$mysid" '$1 == "sess" && $2 == $3 && $4 == me' "$T/oversub.out" | wc -l)
[ "$n" -eq "$over" ] && ok "oversub: $over ranks on $((over - 1)) CPUs in bmrun's session, groups of their own" ||
    fail "oversub: expected $over ranks in session $mysid: $(tr '\n' ';' <"$T/oversub.out")"
run yield env BM_PML_IDLE_YIELD=64 "$BMRUN" -n 2 sh -c 'read -r p _ _ _ g s _ </proc/self/stat; echo "sess $p $g $s"' "$TOKEN"
expect_rc yield 0
n=$(awk -v me="$mysid" '$1 == "sess" && $2 == $3 && $4 == me' "$T/yield.out" | wc -l)
[ "$n" -eq 2 ] && ok "yield: BM_PML_IDLE_YIELD=64 keeps both ranks in bmrun's session" ||
    fail "yield: expected 2 ranks in session $mysid: $(tr '\n' ';' <"$T/yield.out")"

# Ctrl-C typed at the terminal: the terminal signals only bmrun (the ranks
# are in other sessions), bmrun passes it on to every rank. bmrun runs as
# the foreground job of a pseudo-terminal and gets the ^C character.
if command -v python3 >/dev/null; then
    python3 - "$BMRUN" "$RANK" "$TOKEN" >"$T/ctrlc.out" 2>"$T/ctrlc.err" <<'PY'
import os, pty, subprocess, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "-n", "3", sys.argv[2], "hang", "-1", sys.argv[3]])
# bmrun and its 3 ranks (not this script) have "hang -1 TOKEN" in their
# command lines: type ^C once all 4 run
for _ in range(300):
    r = subprocess.run(["pgrep", "-c", "-f", "hang -1 " + sys.argv[3]], capture_output=True,
                       text=True)
    if int(r.stdout.strip() or 0) >= 4:
        break
    time.sleep(0.05)
time.sleep(0.3)
os.write(fd, b"\x03")
out = b""
while True:
    try:
        b = os.read(fd, 4096)
    except OSError:
        break
    if not b:
        break
    out += b
_, st = os.waitpid(pid, 0)
sys.stderr.write(out.decode(errors="replace"))
print("rc", os.waitstatus_to_exitcode(st))
PY
    rc=$(awk '$1 == "rc" {print $2}' "$T/ctrlc.out")
    rc=${rc:-255}
    expect_rc ctrlc 130
    expect_err ctrlc 'received SIGINT'
    expect_no_leftovers ctrlc
fi

# "nice bmrun": a new session's autogroup starts at nice 0; bmrun gives it
# the rank's nice value (only where the kernel has autogroups).
# (nice -n 7 adds to the nice value this test runs at: ctest may be niced)
want=$(($(nice) + 7))
[ "$want" -le 19 ] || want=19
if [ -r /proc/self/autogroup ] && [ "$want" -gt 0 ]; then
    run nice nice -n 7 env -u BM_PML_IDLE_YIELD "$BMRUN" -n 2 sh -c 'cat /proc/self/autogroup' "$TOKEN"
    expect_rc nice 0
    [ "$(grep -c "nice $want\$" "$T/nice.out")" -eq 2 ] && ok "nice: both ranks' autogroups at nice $want" ||
        fail "nice: autogroups $(tr '\n' ';' <"$T/nice.out"), expected nice $want twice"
fi

finish
