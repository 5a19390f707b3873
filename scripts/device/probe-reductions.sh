#!/usr/bin/env bash
# On the GPU machine, after `bash scripts/device/build-there.sh`: Nsight Compute's view of the
# column reductions at 64 MiB, next to reduce_sum_rows and the copy-rate kernels (why the column
# frame and layernorm_grad_gamma stay further from the copy's rate at 64 MiB than
# reduce_sum_rows; docs/compiler.md). dev/cuda/colreduce_variants.cu times the loops they
# replaced. Plain timing: ncu serializes launches, which a held stream would turn into a wait
# for the hold's time limit.
# Usage: bash scripts/device/probe-reductions.sh [build-dir]   (writes $OUT/ncu-reductions.txt)
set -u
build=${1:-build/default}
out=${OUT:-out}
mkdir -p "$out"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 300 "$ncu" --target-processes all \
  -k 'regex:reduce_rows_kernel|reduce_cols_kernel|reduce_cols_narrow_kernel|ln_params_kernel|finish_kernel' --launch-count 12 \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
  --section MemoryWorkloadAnalysis \
  "$build/experiments/kernels/tg-kernels" --device 0 --plain-timing --no-matmul \
  --ops reduce_sum_rows,reduce_sum_cols,layernorm_grad_gamma --min-bytes $((64 << 20)) --max-bytes $((64 << 20)) \
  --repetitions 1 --warmup 0 --min-time 0 > "$out/ncu-reductions.txt" 2>&1
echo "ncu rc=$?"
grep -E "^  [a-z_].*\(|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Grid Size|Block Size|Waves Per SM|Elapsed Cycles|SM Active Cycles|One or More Eligible|Warp Cycles Per Issued" \
  "$out/ncu-reductions.txt" | head -150
