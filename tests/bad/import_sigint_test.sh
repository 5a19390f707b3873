#!/usr/bin/env bash
# Ctrl-C (or TG_SIGNAL=TERM) while `tg-graph import` writes its files: it must stop
# within 10 s, exit 128 + the signal (130, 143), say it was interrupted, print nothing on
# stdout and leave neither file nor a temporary one behind.
#   [TG_SIGNAL=TERM] [TG_STUBBORN=1] import_sigint_test.sh WORK_PARENT TG_GRAPH SHIM MODEL
# The import runs in the background of this script, so it starts with SIGINT ignored (as
# a shell starts background jobs): it must take SIGINT over. SHIM (slow_fsync.cpp, by
# LD_PRELOAD) holds each fsync, so the signal is sent once a temporary file is on disk:
# no sleep race. With TG_STUBBORN=1 the fsync ignores the signal, and only the harness's
# watchdog can stop the import (and remove the file).
set -u
sig=${TG_SIGNAL:-INT}
case $sig in INT) want=130 ;; TERM) want=143 ;; *) echo "TG_SIGNAL=$sig: use INT or TERM"; exit 1 ;; esac
parent=$1 tool=$2 shim=$3 model=$4
[ -f "$shim" ] || { echo "FAIL: $shim is missing: build the target tg_test_slow_fsync"; exit 1; }
mkdir -p "$parent"
dir=$(mktemp -d "$parent/import_sigint.XXXXXX") || exit 1
out=$(mktemp "$parent/import_sigint_out.XXXXXX") err=$(mktemp "$parent/import_sigint_err.XXXXXX")
pid=
cleanup() {
  [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
  rm -rf "$dir" "$out" "$err"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  echo "--- stderr:"; cat "$err"
  echo "--- stdout:"; cat "$out"
  echo "--- left in $dir:"; ls -la "$dir"
  exit 1
}
# Polls `cond` every 0.05 s for at most $1 seconds.
wait_for() {
  local limit=$(( $1 * 20 )) i=0
  shift
  until "$@"; do
    i=$(( i + 1 ))
    [ "$i" -ge "$limit" ] && return 1
    sleep 0.05
  done
}
writing() { compgen -G "$dir/*.tmp" >/dev/null || ! kill -0 "$pid" 2>/dev/null; }
ended() { ! kill -0 "$pid" 2>/dev/null; }

stubborn=()
[ -n "${TG_STUBBORN:-}" ] && stubborn=(TG_SLOW_FSYNC_STUBBORN=1)
env LD_PRELOAD="$shim" TG_SLOW_FSYNC_S=60 "${stubborn[@]}" "$tool" import "$model" -o "$dir/g.json" >"$out" 2>"$err" &
pid=$!
wait_for 120 writing || fail "no temporary file within 120 s"
kill -0 "$pid" 2>/dev/null || { wait "$pid"; fail "the import ended (exit $?) before it could be interrupted"; }
t0=$(date +%s%N)
kill -"$sig" "$pid"
wait_for 10 ended || fail "still running 10 s after SIG$sig"
wait "$pid"
rc=$?
t1=$(date +%s%N)
pid=
[ "$rc" -eq "$want" ] || fail "exit code $rc, expected $want"
grep -q "^tg-graph: interrupted (SIG$sig): nothing was written" "$err" || fail "no 'interrupted (SIG$sig)' message"
[ ! -s "$out" ] || fail "printed on stdout"
[ -z "$(ls -A "$dir")" ] || fail "files left behind"
how=cooperatively
grep -q "stopped by force" "$err" && how="by the watchdog"
echo "ok: exit $rc $(( (t1 - t0) / 1000000 )) ms after SIG$sig, stopped $how, nothing left: $(tail -n 1 "$err")"
