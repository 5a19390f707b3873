#!/usr/bin/env bash
# On the GPU machine, from the repository root, after `bash scripts/device/build-there.sh`:
# the traces docs/timelines.md draws, gzipped into $OUT, each with its kernel table
# (tools/trace/kernel_table.py) beside it:
#   trace-launch.json.gz     tg-launch --quick --ops 100 (a dynamic iteration, a graph replay)
#   trace-pipeline.json.gz   tg-pipeline --quick (serialized and pipelined steps)
#   trace-transformer.json.gz  tg-train --models transformer --precision bf16 (a training step)
#   trace-resnet.json.gz     tg-train --models resnet (a CNN training step)
# Usage: bash scripts/device/timeline-run.sh [build-dir]
set -u
build=${1:-build/default}
out=${OUT:-out}
mkdir -p "$out"
e="$build/experiments"
trace() {  # name, then the command
  local name=$1; shift
  timeout 120 "$@" --trace "$out/$name.json" > "$out/$name.txt" 2>&1
  echo "$name rc=$?" | tee -a "$out/summary.txt"
  python3 tools/trace/kernel_table.py "$out/$name.json" --top 30 > "$out/$name.kernels.txt" 2>&1
  gzip -f "$out/$name.json"
}
trace trace-launch "$e/launch/tg-launch" --device 0 --quick --ops 100 --trace-iterations 2
trace trace-pipeline "$e/pipeline/tg-pipeline" --device 0 --quick --trace-iterations 1
trace trace-transformer "$e/train/tg-train" --device 0 --quick --models transformer --precision bf16 --passes all \
  --trace-iterations 1
trace trace-resnet "$e/train/tg-train" --device 0 --quick --models resnet --passes all --trace-iterations 1
