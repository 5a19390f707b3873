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
name=import_sigint
# shellcheck source=tests/bad/signal_test_lib.sh
. "$(dirname "$0")/signal_test_lib.sh"
writing() { compgen -G "$dir/*.tmp" >/dev/null || ended; }

stubborn=()
[ -n "${TG_STUBBORN:-}" ] && stubborn=(TG_SLOW_FSYNC_STUBBORN=1)
env LD_PRELOAD="$shim" TG_SLOW_FSYNC_S=60 "${stubborn[@]}" "$tool" import "$model" -o "$dir/g.json" >"$out" 2>"$err" &
pid=$!
send_signal "the import" writing "no temporary file"
wait_for 10 ended || fail "still running 10 s after SIG$sig"
reap
grep -q "^tg-graph: interrupted (SIG$sig): nothing was written" "$err" || fail "no 'interrupted (SIG$sig)' message"
[ ! -s "$out" ] || fail "printed on stdout"
left_nothing ""
echo "ok: exit $rc $ms ms after SIG$sig, stopped $how, nothing left: $(tail -n 1 "$err")"
