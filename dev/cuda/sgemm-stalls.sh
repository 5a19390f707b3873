#!/usr/bin/env bash
# On the GPU machine: why do the sgemm-update probe's own kernels issue an instruction on
# fewer cycles than cuBLASLt's (CUTLASS's SIMT SGEMM) with about the same instruction count
# (docs/results/h200-probes/ncu-sgemm-update-*.txt)? For cuBLASLt's kernel and each own
# kernel named below, Nsight Compute's per-reason warp stalls per issued instruction (the
# reasons above 0.02 cycles), and, where $OUT is set, the kernel's SASS with per-instruction
# stall samples ($OUT/sass-<who>.csv) for reading the main loop's schedule. The kernels of
# the list are the probe's, named by their mangled template arguments.
# Usage: bash dev/cuda/sgemm-stalls.sh [probe-binary]
#   (default build/default/dev/cuda/tg-probe-sgemm-update, built with
#   TG_CMAKE_ARGS=-DTWOGRAPH_PROBES=ON bash scripts/device/build-there.sh)
set -u
bin=${1:-build/default/dev/cuda/tg-probe-sgemm-update}
if [ ! -x "$bin" ]; then
  echo "sgemm-stalls: no $bin; build it first (see the usage line)" >&2
  exit 2
fi
export PATH=/usr/local/cuda/bin:$PATH
metrics='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio'
res=$(mktemp -d)
trap 'rm -rf "$res"' EXIT
# who, then the mangled-name pattern of its kernel (cuBLASLt's: any CUTLASS kernel);
# TG_STALL_KERNELS="who pattern ..." replaces the own kernels of the list.
kernels=(
  "cublaslt" "cutlass"
  "pipelined-128" "20sgemm_at_b_pipelinedILi128ELi8ELi4ELNS_8EpilogueE0ELi3ELi128ELi0E"
  "fragpipe-k16" "19sgemm_at_b_fragpipeILi128ELi16ELi4ELNS_8EpilogueE0ELi2ELi128ELi2ELb0ELb1ELi0ELi1E"
)
if [ -n "${TG_STALL_KERNELS:-}" ]; then
  read -r -a own <<< "$TG_STALL_KERNELS"
  kernels=("cublaslt" "cutlass" "${own[@]}")
fi
for ((i = 0; i < ${#kernels[@]}; i += 2)); do
  who=${kernels[i]} pattern=${kernels[i + 1]}
  timeout 180 ncu --kernel-name-base mangled --kernel-name "regex:$pattern" --launch-count 1 \
    --section WarpStateStats --section SourceCounters --metrics "$metrics,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum" \
    --export "$res/$who" "$bin" > "$res/$who.log" 2>&1
  echo "== $who (ncu rc $?)"
  timeout 60 ncu --import "$res/$who.ncu-rep" --page details --print-units base 2>&1 |
    grep -E "stalled|issue_active|inst_executed" | awk '{ if ($NF + 0 > 0.02) print }' | cut -c1-160
  if [ -n "${OUT:-}" ]; then
    timeout 120 ncu --import "$res/$who.ncu-rep" --page source --csv --print-source sass > "$OUT/sass-$who.csv" 2>&1 ||
      echo "sgemm-stalls: no SASS page for $who (rc $?)"
  fi
done
# The own kernels' SASS with the register reuse flags (which Nsight Compute's page leaves
# out), compressed: all of them are ~20 MB of text.
if [ -n "${OUT:-}" ] && command -v cuobjdump > /dev/null; then
  cuobjdump -sass "$bin" | xz -6 > "$OUT/sass-own-kernels.txt.xz"
fi
