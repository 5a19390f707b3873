#!/usr/bin/env bash
# Output that cannot be written must not pass as success: the command must exit
# EXPECT_RC (not 0, not a signal), say why on stderr, and show no crash or traceback.
#   output_test.sh full|closed EXPECT_RC FRAGMENT COMMAND [ARGS...]
# full: stdout is /dev/full (every write fails with ENOSPC); closed: stdout is closed.
# Exit 77 (skipped) when the command is a python script and matplotlib is missing.
set -u
mode=$1 expect_rc=$2 fragment=$3
shift 3
if [ ! -e /dev/full ] && [ "$mode" = full ]; then echo "SKIPPED: no /dev/full on this system"; exit 77; fi
case "$1" in
  *.py)
    py=$(bash "$(dirname "$0")/../python_with.sh" matplotlib "python3 module matplotlib is missing") || exit 77
    set -- "$py" "$@"
    ;;
esac
err=$(mktemp) || exit 1
trap 'rm -f "$err"' EXIT
if [ "$mode" = full ]; then
  "$@" >/dev/full 2>"$err"
else
  "$@" >&- 2>"$err"
fi
rc=$?
show() { echo "FAIL: $*"; echo "command ($mode stdout): $*"; echo "--- stderr:"; head -c 4000 "$err"; exit 1; }
[ "$rc" -eq "$expect_rc" ] || show "exit code $rc, expected $expect_rc"
grep -qF -- "$fragment" "$err" || show "stderr lacks '$fragment'"
for bad in "internal error" "terminate called" "Traceback" "Sanitizer" "Exception ignored"; do
  if grep -qF -- "$bad" "$err"; then show "stderr shows '$bad'"; fi
done
echo "ok: exit $rc: $(head -c 300 "$err")"
