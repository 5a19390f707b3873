#!/usr/bin/env bash
# One device call that does the most a fresh machine can in its 600 s: build, every GPU test,
# then the measurements that have never run, each under what is left of the call: the
# precision sweep (precision-run.sh, quick and rest, into $OUT/precision/), the GPU tests,
# GPT-2 small in bf16 and the CNN speed variants.
#   Usage (device tool, carry [".carry"], after `bash scripts/device/pack-deps.sh` and
#   `git describe --always --dirty > .carry/source-rev` here):
#     OUT=$OUT bash scripts/device/first-call.sh [seconds]
# Writes $OUT/results.tgz (the files of every step: only 8 files come back from a call) and
# prints the summary. A step that would start too late is skipped and says so.
set -u
limit=${1:-570}
out=${OUT:-out}
mkdir -p "$out"
source "$(dirname "$0")/steps.sh"  # left, step
bash scripts/device/build-there.sh 2>&1 | tail -15
echo "build done at $SECONDS s; $(nvidia-smi --query-gpu=name --format=csv,noheader)" | tee -a "$out/summary.txt"
step precision 200 env OUT="$out/precision" bash scripts/device/precision-run.sh build/default 70 150
step ctest 120 ctest --test-dir build/default -R "cuda|gpu" -j8 --timeout 150 --output-on-failure \
  -O "$out/ctest-gpu.log" > /dev/null
grep -E "tests passed|tests failed|\(Failed\)|Timeout" "$out/ctest-gpu.log" | head -30 | tee -a "$out/summary.txt"
tt=build/default/experiments/train/tg-train
step gpt2-bf16 90 "$tt" --device 0 --quick --models gpt2 --precision bf16 --passes all \
  --json "$out/train_gpt2_bf16.json" > "$out/train_gpt2_bf16.txt" 2>&1
step cnn-speed 60 env OUT="$out" bash scripts/device/cnn-speed.sh build/default 40
# Only a few files come back from a call: everything goes into results.tgz, the rest is removed.
(cd "$out" && tar czf results.tgz --exclude=results.tgz -- * && find . -mindepth 1 -maxdepth 1 \
  ! -name results.tgz ! -name summary.txt -exec rm -rf {} +)
cat "$out/summary.txt"
