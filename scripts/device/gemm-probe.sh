#!/usr/bin/env bash
# On the GPU machine, from the repository root, after `bash scripts/device/build-there.sh`:
# where the 16-bit GEMMs lose to PyTorch's. tg-matmul's bf16/fp16/tf32 rows at large n (the
# backend's own cuBLASLt path), one traced tg-train of the MLPs in bf16 (kernel_table.py sums
# its kernels), PyTorch's kernels on the same workloads (torch_kernels.py), and tg-train in
# bf16 with cuBLASLt's candidates timed (gemm_autotune=1).
#   Usage: bash scripts/device/gemm-probe.sh [build-dir] [precision]
# Writes into $OUT: matmul_large.json, train_<p>_trace.json.gz, kernels_<p>.txt,
# torch_kernels_*.json/.txt, train_<p>_autotune.json.
set -u
build=${1:-build/default}
p=${2:-bf16}
out=${OUT:-out}
mkdir -p "$out"
say() { echo "$*" | tee -a "$out/summary.txt"; }
timeout 150 "$build/experiments/matmul/tg-matmul" --device 0 --quick --precision tf32,bf16,fp16 --max-n 8192 \
  --step 4096 --json "$out/matmul_large.json" > "$out/matmul_large.txt" 2>&1
say "tg-matmul large rc=$?"
grep -E "bf16|fp16|tf32" "$out/matmul_large.txt" | tail -12 | tee -a "$out/summary.txt"
timeout 120 "$build/experiments/train/tg-train" --device 0 --quick --models mlp --precision "$p" --passes none \
  --trace "$out/train_${p}_trace.json" --trace-iterations 2 --json "$out/train_${p}_traced.json" \
  > "$out/train_${p}_traced.txt" 2>&1
say "tg-train traced rc=$?"
python3 tools/trace/kernel_table.py "$out/train_${p}_trace.json" --top 30 > "$out/kernels_$p.txt" 2>&1
gzip -f "$out/train_${p}_trace.json"
for mode in inference train; do
  for w in mlp_w4096 transformer; do
    timeout 90 python3 experiments/peers/torch_kernels.py --workload "$w" --precision "$p" --mode "$mode" \
      --json "$out/torch_kernels_${w}_${mode}.json" > "$out/torch_kernels_${w}_${mode}.txt" 2>&1
    say "torch_kernels $w $mode rc=$?"
  done
done
timeout 150 "$build/experiments/train/tg-train" --device 0 --quick --precision "$p" --passes all \
  --cuda-options gemm_autotune=1 --json "$out/train_${p}_autotune.json" > "$out/train_${p}_autotune.txt" 2>&1
say "tg-train autotune rc=$?"
