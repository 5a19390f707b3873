#!/usr/bin/env bash
# On the GPU machine, from the repository root, after `bash scripts/device/build-there.sh`: the
# GPU tests (every ctest entry whose name says cuda or gpu), with NCCL's library found where the
# machine has one (the CUDA toolkit, or PyTorch's nvidia-nccl wheel), then whatever further
# device scripts are named, each under its own deadline.
#   Usage: bash scripts/device/verify-run.sh [build-dir] [script seconds]...
#   e.g.   bash scripts/device/verify-run.sh build/default "cnn-run.sh 200" "trace-cost.sh 150"
# Writes $OUT/ctest-gpu.log and the named scripts' files; $OUT/summary.txt says what ran.
set -u
build=${1:-build/default}
shift || true
out=${OUT:-out}
mkdir -p "$out"
if ! ldconfig -p 2>/dev/null | grep -q libnccl.so.2; then
  nccl=$(find /usr/local /usr/lib /opt -name libnccl.so.2 2>/dev/null | head -n 1)
  [ -n "$nccl" ] && export LD_LIBRARY_PATH="$(dirname "$nccl")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
echo "verify-run: NCCL from ${nccl:-the default library path}" | tee -a "$out/summary.txt"
t0=$SECONDS
ctest --test-dir "$build" -R "cuda|gpu" -j8 --timeout 200 --output-on-failure > "$out/ctest-gpu.log" 2>&1
echo "ctest cuda|gpu rc=$? in $((SECONDS - t0)) s: $(grep -E 'tests passed|tests failed' "$out/ctest-gpu.log" | tail -1)" |
  tee -a "$out/summary.txt"
grep -E "\(Failed\)|Timeout" "$out/ctest-gpu.log" | head -30 | tee -a "$out/summary.txt"
for item in "$@"; do
  read -r script secs <<<"$item"
  t0=$SECONDS
  timeout "${secs:-120}" bash "scripts/device/$script" "$build"
  echo "$script rc=$? in $((SECONDS - t0)) s" | tee -a "$out/summary.txt"
done
