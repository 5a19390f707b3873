#!/usr/bin/env bash
# On the GPU machine, from the repository root, after `bash scripts/device/build-there.sh`:
# the CNN part of docs/shapes.md, tg-shapes on tg-train's CNNs at their GPU sizes (the batch
# of training and of serving, the ResNets' image size), every strategy checked against dynamic.
#   Usage: bash scripts/device/shapes-cnn-run.sh [build-dir] [models] [seconds] [steps]
# Writes $OUT/shapes_cnn.json and shapes_cnn.txt; saved as docs/results/shapes_cnn.json, the
# chapter's tables follow from `python3 tools/docs-tables`. One command must end within the
# machine's limit, hence the timeout and the steps per strategy (tg-shapes' default is 100).
set -u
build=${1:-build/default}
models=${2:-resnet,resnet18,resnet50,vgg16}
limit=${3:-540}
steps=${4:-40}
out=${OUT:-out}
mkdir -p "$out"
timeout "$limit" "$build/experiments/shapes/tg-shapes" --device 0 --models "$models" --iterations "$steps" \
  --json "$out/shapes_cnn.json" > "$out/shapes_cnn.txt" 2>&1
echo "tg-shapes --models $models --iterations $steps rc=$?" | tee -a "$out/summary.txt"
