#!/usr/bin/env bash
# On the GPU machine, from the repository root, after `bash scripts/device/build-there.sh`:
# where a CNN's training step goes. tg-train --passes none under each set of backend options:
# by default benchmarked choices through the legacy API (deterministic, then nondeterministic
# too), then through cuDNN's graph API (conv_frontend=1: deterministic, nondeterministic, and
# nondeterministic with a 1 GiB workspace limit; deterministic with that limit, and with the
# transforms (FFT, Winograd) too), then both APIs on cuDNN's heuristic
# (conv_benchmark=0, tg-train's default); each run traced, its second replay's GPU work summed by kernel name
# (tools/trace/kernel_table.py), its conv_algorithm rows (why faster offers were passed over)
# in the report.
#   Usage: bash scripts/device/cnn-speed.sh [build-dir] [seconds-per-run] [model] [options-sets...]
# Writes $OUT/train_MODEL_OPTS.{json,txt}, kernels_MODEL_OPTS.txt and $OUT/summary.txt.
set -u
build=${1:-build/default}
per=${2:-90}
model=${3:-resnet50}
shift $(($# < 3 ? $# : 3))
sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(conv_benchmark=1 conv_benchmark=1,conv_deterministic=0
  conv_benchmark=1,conv_frontend=1 conv_benchmark=1,conv_frontend=1,conv_workspace_mb=1024
  conv_benchmark=1,conv_frontend=1,conv_transforms=1,conv_workspace_mb=1024
  conv_benchmark=1,conv_deterministic=0,conv_frontend=1
  conv_benchmark=1,conv_deterministic=0,conv_frontend=1,conv_workspace_mb=1024
  conv_benchmark=0 conv_benchmark=0,conv_frontend=1)
out=${OUT:-out}
mkdir -p "$out"
for opts in "${sets[@]}"; do
  tag=${model}_$(echo "$opts" | tr ',=' '-_')
  timeout "$per" "$build/experiments/train/tg-train" --device 0 --quick --models "$model" --passes none \
    --cuda-options "$opts" --trace "$out/trace_$tag.json" --trace-iterations 1 \
    --json "$out/train_$tag.json" > "$out/train_$tag.txt" 2>&1
  echo "tg-train --models $model --cuda-options $opts rc=$?" | tee -a "$out/summary.txt"
  python3 tools/trace/kernel_table.py "$out/trace_$tag.json" --around replay --index 1 --top 30 \
    > "$out/kernels_$tag.txt" 2>&1
  grep -E "^(replay|iteration) " "$out/train_$tag.txt" | head -8 >> "$out/summary.txt"
  rm -f "$out/trace_$tag.json"
done
