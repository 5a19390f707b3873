#!/usr/bin/env bash
# On the GPU machine, from the repository root (after `source scripts/device/unpack.sh`
# when the build tree was packed): the CUDA backend's checks and benchmark.
#   1. ctest -L gpu            every GPU test, output on failure
#   2. compute-sanitizer       memcheck over the GPU test binary (out-of-bounds, misaligned,
#                              uninitialized reads reported by the tool itself)
#   3. tg-kernels              kernel bandwidth vs D2D copy, matmul vs cuBLAS
# Logs (and kernels.json) go to $OUT (default ./out). Exit status: the first failure.
# Usage: scripts/device/gpu_kernels.sh [build-dir]   (default build/default)
set -u
build=${1:-build/default}
out=${OUT:-out}
mkdir -p "$out"
status=0
note() { echo "== $*" | tee -a "$out/summary.txt"; }

nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || true

note "ctest -L gpu ($build)"
ctest --test-dir "$build" -L gpu --output-on-failure > "$out/ctest_gpu.log" 2>&1
rc=$?; note "ctest rc=$rc"; tail -5 "$out/ctest_gpu.log" | tee -a "$out/summary.txt"
[ $status -eq 0 ] && status=$rc

bin="$build/tests/kernels/tg_kernels_cuda_test"
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ -x "$bin" ] && [ -x "$sanitizer" ]; then
  note "compute-sanitizer memcheck $bin"
  # The 1M-element and long-row cases are slow under memcheck but still finish in minutes.
  "$sanitizer" --tool memcheck --error-exitcode 3 --leak-check full "$bin" > "$out/memcheck.log" 2>&1
  rc=$?; note "memcheck rc=$rc"; grep -E "ERROR SUMMARY|test cases" "$out/memcheck.log" | tee -a "$out/summary.txt"
  [ $status -eq 0 ] && status=$rc
else
  note "memcheck skipped: binary $bin or compute-sanitizer not found"
fi

kbin="$build/experiments/kernels/tg-kernels"
if [ -x "$kbin" ]; then
  # --plain-timing: docs/regimes.md reads these samples as the eager launch, host submission included.
  note "tg-kernels ${TG_KERNELS_ARGS:---quick} --plain-timing"
  # shellcheck disable=SC2086
  "$kbin" --device 0 ${TG_KERNELS_ARGS:---quick} --plain-timing --json "$out/kernels.json" > "$out/tg-kernels.log" 2>&1
  rc=$?; note "tg-kernels rc=$rc"
  [ $status -eq 0 ] && status=$rc
else
  note "tg-kernels not built at $kbin"
  [ $status -eq 0 ] && status=1
fi
exit $status
