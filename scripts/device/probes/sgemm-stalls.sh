#!/usr/bin/env bash
# On the GPU machine: why does the sgemm-update probe's best kernel issue an instruction on
# fewer cycles than cuBLASLt's (CUTLASS's SIMT SGEMM) with the same instruction count
# (docs/results/h200-probes/ncu-sgemm-update-*.txt)? Nsight Compute's per-reason warp stall
# counts, per issued instruction, for both kernels: cuBLASLt's is the probe's first launch,
# ours the first launch of the 128-thread pipelined kernel (k step 8, 4 stages, store).
# Prints the reasons above 0.02 cycles per instruction for each.
# Usage: bash scripts/device/probes/sgemm-stalls.sh [probe-binary]
#   (default build/default/scripts/device/probes/tg-probe-sgemm-update, built with
#   TG_CMAKE_ARGS=-DTWOGRAPH_PROBES=ON bash scripts/device/build-there.sh)
set -u
bin=${1:-build/default/scripts/device/probes/tg-probe-sgemm-update}
if [ ! -x "$bin" ]; then
  echo "sgemm-stalls: no $bin; build it first (see the usage line)" >&2
  exit 2
fi
export PATH=/usr/local/cuda/bin:$PATH
metrics='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio'
res=$(mktemp -d)
trap 'rm -rf "$res"' EXIT
timeout 120 ncu --launch-count 1 --metrics "$metrics" "$bin" > "$res/cublaslt.txt" 2>&1
timeout 120 ncu --kernel-name regex:'sgemm_at_b_pipelined<128, 8, 4, [^,]*0, 3, 128,' --launch-count 1 \
  --metrics "$metrics" "$bin" > "$res/own.txt" 2>&1
for who in cublaslt own; do
  echo "== $who"
  grep -E "Context 1|stalled" "$res/$who.txt" |
    awk '/Context 1/ { print; next } { if ($NF + 0 > 0.02) print }' | cut -c1-160
done
