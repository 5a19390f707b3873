# shellcheck shell=bash disable=SC2034,SC2154  # its variables are set and read by the scripts that source it
# For the scripts that run many cases and report every failure, not only the first
# (output_paths_test.sh, tool_paths_test.sh). Source it with $parent set (where the work
# folder goes) and $errname (the file under the folder that each case's stderr goes to): it
# makes the fresh folder $d, removed on exit. fail MESSAGE counts a failure and shows the
# case's stderr; end_cases ends the script, exit 1 when any case failed.
mkdir -p "$parent"
d=$(mktemp -d "$parent/paths.XXXXXX") || exit 1
trap 'rm -rf "$d"' EXIT
failures=0
fail() {
  echo "FAIL: $*"
  echo "--- stderr (the first 3000 bytes):"; head -c 3000 "$d/$errname" 2>/dev/null; echo
  failures=$((failures + 1))
}
end_cases() {
  [ "$failures" -eq 0 ] || { echo "$failures failures"; exit 1; }
  echo "OK"
}
