#!/usr/bin/env bash
# PyTorch and twograph side by side on one GPU machine, in about three minutes:
#   bash scripts/run-peers.sh OUT_DIR [BUILD_DIR]     (from the repository root)
# writes into OUT_DIR (then saved as docs/results/peers/):
#   torch_baseline.json       experiments/peers/torch_baseline.py --quick (tg-train's and tg-launch's workloads)
#   train.json, launch.json   tg-train --quick and tg-launch --quick, the same session
#   bench_mlp.json            tg-graph bench of the PyTorch-exported MLP (tests/onnx/bench), tg-train's batches
#   bench_transformer.json    the same for the exported transformer block
#   compare_train.txt, compare_launch.txt   tg-report compare of twograph against PyTorch (--pair)
#   compare_bench.txt         tg-report compare of tg-train's built-in models against the imported ones
# Needs a CUDA build (scripts/device/build-there.sh makes build/default) and python3 with torch.
set -euo pipefail
out=${1:?usage: run-peers.sh OUT_DIR [BUILD_DIR]}
build=${2:-build/default}
mkdir -p "$out"
dev=${TG_DEVICE:-0}
graph=$build/tools/tg-graph/tg-graph report=$build/tools/tg-report/tg-report
step() { echo "== $*" >&2; "$@"; }

# TG_TORCH_ARGS: more flags for the baseline (--no-compile where torch.compile is too slow, as on a CPU)
# Exit 1 of the baseline: a way of running failed (its report says which); the rest still runs.
torch_rc=0
step python3 experiments/peers/torch_baseline.py --device "$dev" --quick ${TG_TORCH_ARGS:-} --json "$out/torch_baseline.json" \
  || torch_rc=$?
step "$build/experiments/train/tg-train" --device "$dev" --quick --json "$out/train.json" > /dev/null
step "$build/experiments/launch/tg-launch" --device "$dev" --quick --json "$out/launch.json" > /dev/null
step "$graph" bench tests/onnx/bench/mlp_w256_d8.json --device "$dev" --quick --batch 32 256 1024 4096 \
  --params model=mlp,sweep=mlp_w256_d8,width=256,depth=8 --json "$out/bench_mlp.json" > /dev/null
step "$graph" bench tests/onnx/bench/transformer_d128_h4.json --device "$dev" --quick --batch 1 8 \
  --params model=transformer,sweep=transformer,seq=64,d_model=128,heads=4 --json "$out/bench_transformer.json" > /dev/null

pairs=(--pair executor=static:torch_cuda_graph --pair executor=dynamic:torch_eager_h2d)
compare() {  # exit 1 only says that something is slower: a finding, not a failure
  local rc=0
  "$report" compare "$@" || rc=$?
  [ "$rc" -le 1 ]
}
compare "$out/train.json" "$out/torch_baseline.json" "${pairs[@]}" > "$out/compare_train.txt"
compare "$out/launch.json" "$out/torch_baseline.json" "${pairs[@]}" > "$out/compare_launch.txt"
{
  compare "$out/train.json" "$out/bench_mlp.json"
  compare "$out/train.json" "$out/bench_transformer.json"
} > "$out/compare_bench.txt"
echo "run-peers: wrote $(ls "$out" | tr '\n' ' ')" >&2
exit "$torch_rc"
