#!/usr/bin/env bash
# Ctrl-C (or TG_SIGNAL=TERM / HUP) during a measurement: the binary must stop within
# 10 s (the harness's watchdog makes it 1 s at most; 10 s is for a loaded machine), exit
# 128 + the signal (130 for SIGINT, 143 for SIGTERM), say it was interrupted and by what,
# and leave neither its --json/--csv report nor a temp file behind.
#   [TG_SIGNAL=TERM] [TG_TOOL=NAME] sigint_test.sh WORK_PARENT BINARY [ARGS...]
# (--json/--csv into a fresh folder are added; TG_TOOL is how the messages name the tool
# when it is not the binary's name, e.g. "tg-graph bench")
# No sleep race: SIGINT is sent only once the binary has printed "<tool>: device ...",
# which the harness prints after installing its SIGINT handler, just before the
# experiment body starts measuring. Every wait is a poll with a generous deadline, for a
# slow machine shared by many builds.
set -u
sig=${TG_SIGNAL:-INT}
case $sig in INT) want=130 ;; TERM) want=143 ;; HUP) want=129 ;; *) echo "TG_SIGNAL=$sig: use INT, TERM or HUP"; exit 1 ;; esac
parent=$1 bin=$2
shift 2
tool=${TG_TOOL:-$(basename "$bin")}
name=sigint
# shellcheck source=tests/bad/signal_test_lib.sh
. "$(dirname "$0")/signal_test_lib.sh"
started() { grep -q "^$tool: device" "$err" || ended; }

"$bin" "$@" --json "$dir/r.json" --csv "$dir/r.csv" >"$out" 2>"$err" &
pid=$!
send_signal "$tool" started "$tool did not start measuring"
wait_for 10 ended || fail "$tool still running 10 s after SIG$sig"
reap
grep -q "$tool: interrupted (SIG$sig): no report was written" "$err" || fail "no 'interrupted (SIG$sig)' message on stderr"
left_nothing " (the body did not poll within a second)"
echo "ok: $tool exit $rc $ms ms after SIG$sig, stopped $how, nothing written: $(tail -n 1 "$err")"
