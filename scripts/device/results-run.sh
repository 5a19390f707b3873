#!/usr/bin/env bash
# On the GPU machine, from the repository root, after `bash scripts/device/build-there.sh`:
# ctest, then the reports that docs/results keeps, each under a deadline so that one long
# step cannot take the others' results with it (each report lands in $OUT as soon as it is done):
#   ctest.log                       every test
#   peers/                          scripts/run-peers.sh (PyTorch and twograph side by side)
#   transfer.json, launch.json      tg-transfer and tg-launch, full mode (with their cold_start rows)
# Usage: bash scripts/device/results-run.sh [build-dir] [deadline-seconds]
set -u
build=${1:-build/default}
deadline=${2:-560}
out=${OUT:-out}
mkdir -p "$out"
left() { echo $((deadline - SECONDS)); }
say() { echo "[$SECONDS s] $*" | tee -a "$out/summary.txt"; }
budget() {  # budget WANT: WANT seconds, or what is left before the deadline
  local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"
}
t=$(budget 150)
timeout "$t" ctest --test-dir "$build" -j8 --timeout 120 --output-on-failure > "$out/ctest.log" 2>&1
say "ctest rc=$?: $(grep -E 'tests passed|tests failed' "$out/ctest.log" | tail -1)"
grep -E "\(Failed\)|Timeout" "$out/ctest.log" | head -20 | tee -a "$out/summary.txt"
t=$(budget 260)
timeout "$t" bash scripts/run-peers.sh "$out/peers" "$build" > "$out/peers.log" 2>&1
say "run-peers rc=$? (budget $t s)"
t=$(budget 150)
timeout "$t" "$build/experiments/transfer/tg-transfer" --device 0 --json "$out/transfer.json" > "$out/transfer.txt" 2>&1
say "tg-transfer rc=$? (budget $t s)"
t=$(budget 240)
if [ "$t" -gt 30 ]; then
  timeout "$t" "$build/experiments/launch/tg-launch" --device 0 --json "$out/launch.json" > "$out/launch.txt" 2>&1
  say "tg-launch rc=$? (budget $t s)"
else
  say "tg-launch: skipped, $t s left"
fi
