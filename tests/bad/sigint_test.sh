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
mkdir -p "$parent"
dir=$(mktemp -d "$parent/sigint.XXXXXX") || exit 1
out=$(mktemp "$parent/sigint_out.XXXXXX") err=$(mktemp "$parent/sigint_err.XXXXXX")
pid=
cleanup() {
  [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
  rm -rf "$dir" "$out" "$err"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  echo "--- stderr:"; cat "$err"
  echo "--- left in $dir:"; ls -la "$dir"
  exit 1
}
# Polls `cond` every 0.1 s for at most $1 seconds.
wait_for() {
  local limit=$(( $1 * 10 )) i=0
  shift
  until "$@"; do
    i=$(( i + 1 ))
    [ "$i" -ge "$limit" ] && return 1
    sleep 0.1
  done
}
started() { grep -q "^$tool: device" "$err" || ! kill -0 "$pid" 2>/dev/null; }
ended() { ! kill -0 "$pid" 2>/dev/null; }

"$bin" "$@" --json "$dir/r.json" --csv "$dir/r.csv" >"$out" 2>"$err" &
pid=$!
wait_for 120 started || fail "$tool did not start measuring within 120 s"
kill -0 "$pid" 2>/dev/null || { wait "$pid"; fail "$tool ended (exit $?) before it could be interrupted"; }
t0=$(date +%s%N)
kill -"$sig" "$pid"
wait_for 10 ended || fail "$tool still running 10 s after SIG$sig"
wait "$pid"
rc=$?
t1=$(date +%s%N)
pid=
[ "$rc" -eq "$want" ] || fail "exit code $rc, expected $want"
grep -q "$tool: interrupted (SIG$sig): no report was written" "$err" || fail "no 'interrupted (SIG$sig)' message on stderr"
[ -z "$(ls -A "$dir")" ] || fail "files left behind"
how=cooperatively
grep -q "stopped by force" "$err" && how="by the watchdog (the body did not poll within a second)"
echo "ok: $tool exit $rc $(( (t1 - t0) / 1000000 )) ms after SIG$sig, stopped $how, nothing written: $(tail -n 1 "$err")"
