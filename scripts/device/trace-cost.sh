#!/usr/bin/env bash
# On the GPU machine, from the repository root, after `bash scripts/device/build-there.sh`: what
# the trace sites cost when no trace records. Builds tg-launch a second time with the sites
# compiled out (-DTWOGRAPH_TRACE_SITES=OFF, in build/notrace), runs tg-launch --quick with each
# build in turn (A B A B, so that a drift of the machine falls on both), then `tg-report compare`
# of each pair with the threshold at 5%: rows marked slower would be what the sites cost.
#   Usage: bash scripts/device/trace-cost.sh [build-dir] [rounds]
# Writes $OUT/launch_sites_<i>.json, launch_nosites_<i>.json, compare_<i>.txt, summary lines.
set -u
build=${1:-build/default}
rounds=${2:-2}
out=${OUT:-out}
nt=build/notrace
mkdir -p "$out"
rev=$(cat .carry/source-rev 2>/dev/null || echo unknown-copy)
cmake -S . -B "$nt" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTWOGRAPH_CUDA=ON -DTWOGRAPH_TRACE_SITES=OFF \
  -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DTWOGRAPH_SOURCE_REV="$rev" > "$out/notrace-configure.log" 2>&1 &&
  cmake --build "$nt" --target tg-launch -j "$(nproc)" > "$out/notrace-build.log" 2>&1 ||
  { echo "trace-cost: the build without trace sites failed"; tail -20 "$out/notrace-build.log"; exit 1; }
for i in $(seq 1 "$rounds"); do
  "$build/experiments/launch/tg-launch" --device 0 --quick --json "$out/launch_sites_$i.json" > /dev/null 2>&1
  "$nt/experiments/launch/tg-launch" --device 0 --quick --json "$out/launch_nosites_$i.json" > /dev/null 2>&1
  "$build/tools/tg-report/tg-report" compare "$out/launch_nosites_$i.json" "$out/launch_sites_$i.json" \
    --threshold 5 > "$out/compare_$i.txt" 2>&1
  echo "trace-cost round $i: compare rc=$? ($(grep -cE ' slower' "$out/compare_$i.txt") rows slower with the sites)" |
    tee -a "$out/summary.txt"
done
