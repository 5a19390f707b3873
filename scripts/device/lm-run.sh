#!/usr/bin/env bash
# On the GPU machine, from the repository root, after `bash scripts/device/build-there.sh`:
# the language-model measurements of docs/language-models.md in one session. tg-train's GPT-2
# small (static and dynamic, all passes against none) in fp32 and bf16, PyTorch's same GPT-2 (eager, CUDA graph,
# torch.compile) in both precisions, tg-memory's GPT-2 per role and by sequence length.
#   Usage: bash scripts/device/lm-run.sh [build-dir] [seconds-per-step] [device] [quick|full] [precisions]
#          [cuda-options]
# quick (the default): GPT-2 small at batch 4, sequence 256; full adds batch 8, sequence 1024
# (the size of issue #34's comparison) and the tools' longer sampling. precisions: "fp32 bf16"
# by default; one of them alone for a call with time for only that one. cuda-options: tg-train's
# --cuda-options (none by default), e.g. the forms PyTorch's fastest step uses (atomics).
# Writes $OUT/train_gpt2.json, train_gpt2_bf16.json, torch_gpt2.json, memory_gpt2.json (each
# with its .txt) and all of them in $OUT/lm.tgz (a device call returns 8 files at most); save
# them under docs/results/lm/ and run python3 tools/docs-tables.
set -u
build=${1:-build/default}
per=${2:-200}
device=${3:-0}
size=${4:-quick}
precisions=${5:-fp32 bf16}
cuda_options=${6:-}
options=()
[ -z "$cuda_options" ] || options=(--cuda-options "$cuda_options")
quick=--quick
[ "$size" = full ] && quick=
out=${OUT:-out}
mkdir -p "$out"
for p in $precisions; do
  f=train_gpt2$([ "$p" = fp32 ] || echo "_$p")
  timeout "$per" "$build/experiments/train/tg-train" --device "$device" $quick --models gpt2 --passes all \
    --precision "$p" "${options[@]}" --json "$out/$f.json" > "$out/$f.txt" 2>&1
  echo "tg-train --models gpt2 --precision $p rc=$?" | tee -a "$out/summary.txt"
done
timeout "$per" python3 experiments/peers/torch_baseline.py --device "$device" $quick --workloads gpt2 \
  --precision "$(echo $precisions | tr ' ' ',')" --json "$out/torch_gpt2.json" > "$out/torch_gpt2.txt" 2>&1
echo "torch_baseline --workloads gpt2 rc=$?" | tee -a "$out/summary.txt"
timeout "$per" "$build/experiments/memory/tg-memory" --device "$device" $quick --models gpt2 --precision fp32 \
  --json "$out/memory_gpt2.json" > "$out/memory_gpt2.txt" 2>&1
echo "tg-memory --models gpt2 rc=$?" | tee -a "$out/summary.txt"
(cd "$out" && tar czf lm.tgz --exclude=lm.tgz -- *gpt2* summary.txt)
