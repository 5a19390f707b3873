# shellcheck shell=bash disable=SC2034,SC2154  # its variables are set and read by the scripts that source it
# What the signal tests (sigint_test.sh, import_sigint_test.sh) share: the run's folder and
# output files, their cleanup, the failure report, polling, and the signal itself. Source it
# with $parent (where the run's files go), $name (their prefix) and $sig (INT, TERM, ...)
# set; start the run in the background with --json/-o into $dir, stdout into $out and
# stderr into $err, and its pid in $pid. $dir must end empty.
mkdir -p "$parent"
dir=$(mktemp -d "$parent/$name.XXXXXX") || exit 1
out=$(mktemp "$parent/${name}_out.XXXXXX") err=$(mktemp "$parent/${name}_err.XXXXXX")
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
# Polls the command every 0.05 s for at most $1 seconds: no sleep races on a slow machine.
wait_for() {
  local limit=$(( $1 * 20 )) i=0
  shift
  until "$@"; do
    i=$(( i + 1 ))
    [ "$i" -ge "$limit" ] && return 1
    sleep 0.05
  done
}
ended() { ! kill -0 "$pid" 2>/dev/null; }
# Waits up to 120 s for the run to be ready to be interrupted (the command $2; else fails
# saying $3), then sends SIG$sig to it, which must still be running ($1 names it), and
# starts the clock.
send_signal() {
  wait_for 120 "$2" || fail "$3 within 120 s"
  kill -0 "$pid" 2>/dev/null || { wait "$pid"; fail "$1 ended (exit $?) before it could be interrupted"; }
  t0=$(date +%s%N)
  kill -"$sig" "$pid"
}
# Once the run ended: its exit code, which must be $want, in $rc, and the milliseconds
# since the signal in $ms.
reap() {
  wait "$pid"
  rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  pid=
  [ "$rc" -eq "$want" ] || fail "exit code $rc, expected $want"
}
# Fails when the run left anything in $dir; else sets $how, how it stopped ($1: what the
# watchdog's stop means for this run).
left_nothing() {
  [ -z "$(ls -A "$dir")" ] || fail "files left behind"
  how=cooperatively
  grep -q "stopped by force" "$err" && how="by the watchdog$1"
}
