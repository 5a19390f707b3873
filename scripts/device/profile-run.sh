#!/usr/bin/env bash
# On the GPU machine, from the repository root, after `bash scripts/device/build-there.sh`:
# where a model's training step spends its GPU time. tg-train --models MODEL traced (one sample
# per measurement loop), with programmatic dependent launch off so that each kernel's span is
# its own work and not also the wait for the one before it; then tools/trace/kernel_table.py
# over each of the run's last replays (the larger configurations' train and inference steps,
# with and without the passes), one table a file.
#   Usage: bash scripts/device/profile-run.sh [build-dir] [model] [precision] [cuda-options] [quick|full] [passes]
# Writes $OUT/profile_MODEL_PRECISION.{json,txt}, $OUT/kernels_MODEL_PRECISION_<k>.txt (k = 1 the
# last replay, 2 the one before, ...) and the trace, gzipped.
set -u
build=${1:-build/default}
model=${2:-gpt2}
precision=${3:-bf16}
options=${4:-}
size=${5:-full}
passes=${6:-all}
out=${OUT:-out}
mkdir -p "$out"
quick=--quick
[ "$size" = full ] && quick=
tag=${model}_${precision}
trace=$out/trace_$tag.json
"$build/experiments/train/tg-train" --device 0 $quick --models "$model" --passes "$passes" --precision "$precision" \
  --cuda-options "pdl=0${options:+,$options}" --trace "$trace" --trace-iterations 1 --loss-steps 3 \
  --json "$out/profile_$tag.json" > "$out/profile_$tag.txt" 2>&1
echo "tg-train --models $model --precision $precision rc=$?" | tee -a "$out/summary.txt"
for k in 1 2 3 4 5 6 7 8; do
  python3 tools/trace/kernel_table.py "$trace" --around replay --index "-$k" --top 40 \
    > "$out/kernels_${tag}_$k.txt" 2>&1 || break
done
gzip -f "$trace"
