#!/usr/bin/env bash
# Report paths that tests/bad/cli/cases.txt cannot express, and stdout that is closed
# or full. Every device node here is one this script made in its own folder (a test
# must never aim a report at a real device: a regression would replace it, as root).
#   output_paths_test.sh WORK_PARENT TG_NOOP TG_REPORT BASE_REPORT
set -u
parent=$1 noop=$2 report=$3 base=$4
errname=err
# shellcheck source=tests/bad/cases_lib.sh
. "$(dirname "$0")/cases_lib.sh"
# expect RC FRAGMENT CMD...: exit status RC within 60 s, FRAGMENT on stderr, nothing on stdout.
expect() {
  local rc=$1 fragment=$2
  shift 2
  timeout 60 "$@" >"$d/out" 2>"$d/err"
  local got=$?
  [ "$got" -eq "$rc" ] || { fail "$* -> exit $got, expected $rc"; return; }
  grep -qF -- "$fragment" "$d/err" || { fail "$* -> stderr lacks '$fragment'"; return; }
  [ -s "$d/out" ] && [ "$rc" -ne 0 ] && { fail "$* -> printed on stdout"; return; }
  echo "ok: exit $got: $(head -n 1 "$d/err")"
}
noop_run=("$noop" --device cpu --quick --repetitions 2 --min-time 0)

# A FIFO, and a link to one: refused at once (no hang waiting for a reader), left a FIFO.
mkfifo "$d/fifo" && ln -s fifo "$d/to_fifo"
expect 2 "is a named pipe (FIFO), not a regular file" "${noop_run[@]}" --json "$d/fifo"
expect 2 "is a named pipe (FIFO)" "${noop_run[@]}" --csv "$d/to_fifo"
[ -p "$d/fifo" ] || fail "the FIFO was replaced"
# A character device of our own (needs root for mknod; otherwise said and skipped).
if mknod "$d/null" c 1 3 2>/dev/null; then
  expect 2 "is a character device, not a regular file" "${noop_run[@]}" --json "$d/null"
  [ -c "$d/null" ] || fail "the device node was replaced"
else
  echo "skipped: mknod needs root here; the character-device case ran only in the unit test's root branch"
fi
# Links: dangling is refused; to a regular file, the target is replaced and the link stays.
ln -s nowhere "$d/dangling"
expect 2 "is a symbolic link that leads nowhere" "${noop_run[@]}" --json "$d/dangling"
echo old >"$d/target.json" && ln -s target.json "$d/link.json"
expect 0 "wrote" "${noop_run[@]}" --json "$d/link.json"
[ -L "$d/link.json" ] || fail "the link was replaced by a file"
"$report" markdown "$d/target.json" >/dev/null 2>&1 || fail "the link's target is not a valid report"
# An empty name; a leftover temporary that is a folder.
expect 2 "--json '': the file name is empty" "${noop_run[@]}" --json ''
mkdir "$d/blocked.json.tmp"
expect 2 "where the report is written first, exists and is a folder" "${noop_run[@]}" --json "$d/blocked.json"
# Nothing the refused runs made is left: only what this script put there, and target.json.
left=$(cd "$d" && ls -A | sort | tr '\n' ' ')
[ "$left" = "blocked.json.tmp dangling err fifo link.json $( [ -c "$d/null" ] && echo "null ")out target.json to_fifo " ] ||
  fail "left in the folder: $left"

# A closed stdout: the printing stops, the run does not (exit 0, the report is whole).
# The reader is gone before the binary starts, so the pipe is closed for certain.
exec 5> >(exec true)
wait $! 2>/dev/null
rm -f "$d/r.json"
"${noop_run[@]}" --json "$d/r.json" >&5 2>"$d/err"
rc=$?
[ "$rc" -eq 0 ] || fail "closed stdout: exit $rc, expected 0"
grep -q "stdout was closed (broken pipe), so the table is cut short; the report files are complete" "$d/err" ||
  fail "closed stdout: no message"
"$report" markdown "$d/r.json" >/dev/null 2>&1 || fail "closed stdout: the report is missing or invalid"
"$report" markdown "$base" >&5 2>"$d/err"
rc=$?
[ "$rc" -eq 0 ] && [ ! -s "$d/err" ] || fail "tg-report into a closed pipe: exit $rc, stderr: $(cat "$d/err")"
exec 5>&-
echo "ok: a closed stdout stops the printing and keeps the report (exit 0)"

# A full stdout: exit 1 with the reason; the report is still written.
if [ -w /dev/full ]; then
  rm -f "$d/r.json"
  "${noop_run[@]}" --json "$d/r.json" >/dev/full 2>"$d/err"
  rc=$?
  [ "$rc" -eq 1 ] || fail "stdout /dev/full: exit $rc, expected 1"
  grep -q "cannot write to stdout: No space left on device (the report files are complete)" "$d/err" ||
    fail "stdout /dev/full: no message"
  [ -s "$d/r.json" ] || fail "stdout /dev/full: no report"
  "$report" markdown "$base" >/dev/full 2>"$d/err"
  rc=$?
  [ "$rc" -eq 2 ] && grep -q "tg-report: error: cannot write to stdout: No space left on device" "$d/err" ||
    fail "tg-report > /dev/full: exit $rc, stderr: $(cat "$d/err")"
  echo "ok: a full stdout is exit 1 (tg-noop, report kept) and exit 2 (tg-report)"
fi

# tg-report reads only regular files, and not past its size limit: a FIFO with no
# writer must not block it, a sparse 300 MiB file must be refused unread.
expect 2 "is a named pipe (FIFO), not a regular file: a report is read from a file" "$report" markdown "$d/fifo"
truncate -s 300M "$d/huge.json"
expect 2 "is 300.0 MiB, more than the 256.0 MiB a report may have here" "$report" compare "$base" "$d/huge.json"
rm -f "$d/huge.json"

end_cases
