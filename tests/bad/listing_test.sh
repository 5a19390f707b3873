#!/usr/bin/env bash
# A valid graph whose names hold escape sequences, newlines, NUL, C1 and bidi
# characters: `tg-graph print`, `dot` and `run` must succeed, and their output must be
# printable ASCII and newlines only (the names are escaped), with one line per value
# and node in the listing (no line forged by a name).
#   listing_test.sh TG_GRAPH FILE VALUES NODES
set -u
tool=$1 file=$2 values=$3 nodes=$4
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
for sub in print dot run; do
  "$tool" "$sub" "$file" >"$out" 2>&1 || { echo "FAIL: tg-graph $sub exited $?"; cat "$out"; exit 1; }
  bad=$(LC_ALL=C tr -d '\n\040-\176' <"$out" | wc -c)
  [ "$bad" -eq 0 ] || { echo "FAIL: tg-graph $sub printed $bad bytes that are not printable ASCII"; od -c "$out" | head -40; exit 1; }
  if [ "$sub" = print ]; then
    lines=$(wc -l <"$out")
    want=$((1 + values + nodes + 1))  # header, the inputs, the nodes, the outputs line
    [ "$lines" -eq "$want" ] || { echo "FAIL: print gave $lines lines, expected $want"; cat "$out"; exit 1; }
  fi
done
echo "ok: print, dot and run escape every name"
