#!/usr/bin/env bash
# On the GPU machine, from the repository root, after `bash scripts/device/build-there.sh`:
# tg-train in every precision (quick sweep, all passes against none) and PyTorch's autocast
# forms of the same workloads in the same session, for docs/mixed-precision.md's comparison.
# Each step under its own deadline, its report in $OUT as soon as it is done:
#   train_fp32.json train_tf32.json train_bf16.json train_fp16.json   tg-train --quick --precision P
#   torch_precision.json   experiments/peers/torch_baseline.py --quick --precision all, tg-train's
#                          workloads, eager and whole-step CUDA Graph (torch.compile's four
#                          precisions take minutes of compiling: run the baseline without
#                          --no-compile for them)
#   matmul_precision.json  tg-matmul in every precision at n = 4096 and 8192 (TFLOP/s, percent of
#                          the device's dense peak)
#   matmul_precision_autotune.json  the same in bf16 and fp16 at n = 8192, cuBLASLt's candidates
#                          timed per shape (--cuda-options gemm_autotune=1)
#   train_<p>_200.json     tg-train --loss-steps 200 in fp32, bf16 and fp16 (the loss curves)
#   memory_precision_gpu.json  tg-memory --precision all (each role predicted and measured)
# With "quick" as the fourth argument only the tg-train and PyTorch reports are made; with "rest"
# only the others (two device calls when one cannot hold all).
# Writes $OUT/precision.tgz with all of them.
# Usage: bash scripts/device/precision-run.sh [build-dir] [seconds-per-step] [seconds-for-torch] [quick|rest]
set -u
build=${1:-build/default}
per=${2:-90}
torch_s=${3:-240}
only_speed=${4:-}
out=${OUT:-out}
mkdir -p "$out"
# A device call returns 8 files at most: everything also goes into $out/precision.tgz.
trap '(cd "$out" && tar czf precision.tgz --exclude="*.tgz" -- *)' EXIT
if [ "$only_speed" != rest ]; then
  for p in fp32 tf32 bf16 fp16; do
    timeout "$per" "$build/experiments/train/tg-train" --device 0 --quick --precision "$p" --passes all \
      --json "$out/train_$p.json" > "$out/train_$p.txt" 2>&1
    echo "tg-train --precision $p rc=$?" | tee -a "$out/summary.txt"
  done
  timeout "$torch_s" python3 experiments/peers/torch_baseline.py --device 0 --quick --precision all \
    --workloads train --no-compile --json "$out/torch_precision.json" > "$out/torch_precision.txt" 2>&1
  echo "torch_baseline --precision all rc=$?" | tee -a "$out/summary.txt"
fi
[ "$only_speed" = quick ] && exit 0
timeout "$per" "$build/experiments/matmul/tg-matmul" --device 0 --precision fp32,tf32,bf16,fp16 --max-n 8192 \
  --step 4096 --json "$out/matmul_precision.json" > "$out/matmul_precision.txt" 2>&1
echo "tg-matmul --max-n 8192 rc=$?" | tee -a "$out/summary.txt"
grep -E "n=8192 precision=(bf16|fp16|tf32) transfers=false" "$out/matmul_precision.txt" | tee -a "$out/summary.txt"
# The same product with cuBLASLt's candidates timed per shape (gemm_autotune): its own report.
timeout "$per" "$build/experiments/matmul/tg-matmul" --device 0 --precision bf16,fp16 --max-n 8192 --step 8192 \
  --cuda-options gemm_autotune=1 --json "$out/matmul_precision_autotune.json" > "$out/matmul_precision_autotune.txt" 2>&1
echo "tg-matmul --max-n 8192 gemm_autotune=1 rc=$?" | tee -a "$out/summary.txt"
grep -E "n=8192 precision=(bf16|fp16) transfers=false" "$out/matmul_precision_autotune.txt" | tee -a "$out/summary.txt"
for p in fp32 bf16 fp16; do
  timeout "$per" "$build/experiments/train/tg-train" --device 0 --quick --precision "$p" --passes none \
    --loss-steps 200 --json "$out/train_${p}_200.json" > "$out/train_${p}_200.txt" 2>&1
  echo "tg-train --precision $p --loss-steps 200 rc=$?" | tee -a "$out/summary.txt"
done
timeout "$per" "$build/experiments/memory/tg-memory" --device 0 --quick --precision all \
  --json "$out/memory_precision_gpu.json" > "$out/memory_precision_gpu.txt" 2>&1
echo "tg-memory --precision all rc=$?" | tee -a "$out/summary.txt"
