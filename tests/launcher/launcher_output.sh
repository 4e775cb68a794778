#!/bin/bash
# Heavy output from 8 ranks on stdout and stderr at once: every line arrives,
# whole, exactly once; --tag-output prefixes each line with its rank.
BMRUN=$1 RANK=$2
. "$(dirname "$0")/lib.sh"
LINES=3000
PAD=$(printf 'x%.0s' $(seq 199))

check_stream() { # name file kind tagged
    awk -v kind="$3" -v tagged="$4" -v pad="$PAD" -v lines=$LINES '
        {
            line = $0
            if (tagged) {
                if (!match(line, /^\[[0-9]+\] /)) { bad++; next }
                tag = substr(line, 2, RLENGTH - 3); line = substr(line, RLENGTH + 1)
            }
            n = split(line, f, " ")
            if (n != 7 || f[1] != kind || f[2] != "rank" || f[4] != "line" || f[6] != pad || f[7] != "end") { bad++; print "bad: " $0 > "/dev/stderr"; next }
            if (tagged && tag != f[3]) { bad++; next }
            seen[f[3] " " f[5]]++
            if (seen[f[3] " " f[5]] == 2) dup++
            count[f[3]]++
        }
        END {
            for (r = 0; r < 8; r++) if (count[r] != lines) { printf "rank %d: %d lines\n", r, count[r]; bad++ }
            if (bad || dup) { printf "%d bad lines, %d duplicates\n", bad, dup; exit 1 }
        }' "$2"
}

run spam "$BMRUN" -n 8 "$RANK" spam $LINES "$TOKEN"
expect_rc spam 0
check_stream spam "$T/spam.out" out 0 && ok "spam: stdout intact" || fail "spam: stdout damaged"
check_stream spam "$T/spam.err" err 0 && ok "spam: stderr intact" || fail "spam: stderr damaged"

run tag "$BMRUN" -n 8 --tag-output "$RANK" spam $LINES "$TOKEN"
expect_rc tag 0
check_stream tag "$T/tag.out" out 1 && ok "tag: stdout tagged and intact" || fail "tag: stdout damaged"
check_stream tag "$T/tag.err" err 1 && ok "tag: stderr tagged and intact" || fail "tag: stderr damaged"

# A slow reader: bmrun must neither deadlock nor lose lines.
"$BMRUN" -n 8 "$RANK" spam 500 "$TOKEN" 2>/dev/null | (sleep 2; cat) >"$T/slow.out"
[ "$(wc -l <"$T/slow.out")" -eq 4000 ] && ok "slow reader: all lines" || fail "slow reader: $(wc -l <"$T/slow.out") lines"

# A last line without newline still arrives, as a whole line.
printf '#!/bin/sh\nprintf "no newline from $BMRUN_RANK"\n' >"$T/nonl.sh"
chmod +x "$T/nonl.sh"
run nonl "$BMRUN" -n 2 "$T/nonl.sh"
expect_rc nonl 0
[ "$(grep -c '^no newline from [01]$' "$T/nonl.out")" -eq 2 ] && ok "nonl: 2 whole lines" || fail "nonl: $(cat "$T/nonl.out")"
finish
