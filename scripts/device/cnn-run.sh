#!/usr/bin/env bash
# On the GPU machine, from the repository root, after `bash scripts/device/build-there.sh`:
# the CNN comparison of docs/cnn.md. tg-train's ImageNet networks at 224 x 224 (static and
# dynamic, all passes against none, algorithms timed as cudnn.benchmark times them; and once
# more with nondeterministic algorithms and 1 GiB of workspace) and PyTorch's torchvision networks in the same session
# (eager, CUDA graph, torch.compile; NCHW and channels_last; cudnn.benchmark on), then tg-memory's VGG-16
# table at 224.
#   Usage: bash scripts/device/cnn-run.sh [build-dir] [models] [seconds-per-step]
# Writes $OUT/train_cnn224.json, train_cnn224_free.json, torch_cnn.json, memory_vgg16.json (each with its .txt).
set -u
build=${1:-build/default}
models=${2:-resnet50}
per=${3:-150}
out=${OUT:-out}
mkdir -p "$out"
timeout "$per" "$build/experiments/train/tg-train" --device 0 --quick --models "$models" --passes all \
  --cuda-options conv_benchmark=1 --json "$out/train_cnn224.json" > "$out/train_cnn224.txt" 2>&1
echo "tg-train --models $models --cuda-options conv_benchmark=1 rc=$?" | tee -a "$out/summary.txt"
# The same freedom PyTorch's fastest rows have: algorithms that sum with atomics, and cuDNN's
# workspace as large as it asks (cudnn.benchmark may take what memory is free).
timeout "$per" "$build/experiments/train/tg-train" --device 0 --quick --models "$models" --passes all \
  --cuda-options conv_benchmark=1,conv_deterministic=0,conv_workspace_mb=1024 \
  --json "$out/train_cnn224_free.json" > "$out/train_cnn224_free.txt" 2>&1
echo "tg-train --models $models --cuda-options conv_benchmark=1,conv_deterministic=0,conv_workspace_mb=1024 rc=$?" | tee -a "$out/summary.txt"
# torch.compile too (NCHW, its first batch): a training step's compile takes about a minute.
timeout "$((per + 90))" python3 experiments/peers/torch_baseline.py --device 0 --quick --workloads cnn \
  --cnn-models "$models" --cnn-deterministic --json "$out/torch_cnn.json" > "$out/torch_cnn.txt" 2>&1
echo "torch_baseline --workloads cnn rc=$?" | tee -a "$out/summary.txt"
timeout "$per" "$build/experiments/memory/tg-memory" --device 0 --models vgg16 \
  --json "$out/memory_vgg16.json" > "$out/memory_vgg16.txt" 2>&1
echo "tg-memory --models vgg16 rc=$?" | tee -a "$out/summary.txt"
