#!/usr/bin/env bash
# Ctrl-C during a measurement: the binary must exit 130, say it was interrupted, and
# leave neither its --json/--csv report nor a temp file behind.
#   sigint_test.sh WORK_PARENT BINARY [ARGS...]   (--json/--csv into a fresh folder are added)
# No sleep race: SIGINT is sent only once the binary has printed "<tool>: device ...",
# which the harness prints after installing its SIGINT handler, just before the
# experiment body starts measuring. Every wait is a poll with a generous deadline, for a
# slow machine shared by many builds.
set -u
parent=$1 bin=$2
shift 2
tool=$(basename "$bin")
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
kill -INT "$pid"
wait_for 240 ended || fail "$tool still running 240 s after SIGINT"
wait "$pid"
rc=$?
pid=
[ "$rc" -eq 130 ] || fail "exit code $rc, expected 130"
grep -q "$tool: interrupted (SIGINT): no report was written" "$err" || fail "no 'interrupted' message on stderr"
[ -z "$(ls -A "$dir")" ] || fail "files left behind"
echo "ok: $tool exit 130 after SIGINT, nothing written: $(tail -n 1 "$err")"
