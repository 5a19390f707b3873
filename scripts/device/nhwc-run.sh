#!/usr/bin/env bash
# One device call for the channels_last pass (docs/cnn.md, "Layout"): build the GPU tests and
# tg-train, run the NHWC GPU tests (cuDNN and direct NHWC convolutions, batch norm and pools
# against the CPU; ResNet and VGG trained NHWC against NCHW), then tg-train's NCHW and NHWC
# rows of the CNNs (none against channels_last, and against all,channels_last), each step under
# what is left of the call.
#   Usage (device tool, carry [".carry"], after `bash scripts/device/pack-deps.sh` and
#   `git describe --always --dirty > .carry/source-rev` here):
#     OUT=$OUT bash scripts/device/nhwc-run.sh [seconds] [models]
# Writes $OUT/results.tgz and $OUT/summary.txt.
set -u
limit=${1:-560}
models=${2:-resnet,vgg}
out=${OUT:-out}
mkdir -p "$out"
source "$(dirname "$0")/steps.sh"  # left, step
TG_BUILD_TARGETS="tg_kernels_cuda_test tg_static_cuda_test tg-train" timeout "$((limit - 120))" \
  bash scripts/device/build-there.sh 2>&1 | tail -15
echo "build done at $SECONDS s; $(nvidia-smi --query-gpu=name --format=csv,noheader)" | tee -a "$out/summary.txt"
b=build/default
step static-tests 60 "$b/tests/static/tg_static_cuda_test" -tc="channels_last*" > "$out/static_tests.txt" 2>&1
step kernel-tests 90 "$b/tests/kernels/tg_kernels_cuda_test" \
  -tc="*cuDNN == cpu*,*direct kernels*,*every op in the table*,*bf16 and f16*" > "$out/kernel_tests.txt" 2>&1
tail -3 "$out/static_tests.txt" "$out/kernel_tests.txt" | tee -a "$out/summary.txt"
# --passes SET measures SET against none: NHWC alone, then on top of every fusion pass.
for set in channels_last all,channels_last; do
  tag=$(echo "$set" | tr ',' '-')
  step "train $set" 60 "$b/experiments/train/tg-train" --device 0 --quick --models "$models" \
    --passes "$set" --json "$out/train_$tag.json" > "$out/train_$tag.txt" 2>&1
  grep -E "pass_replay|pass_step" "$out/train_$tag.txt" | head -20 >> "$out/summary.txt"
done
(cd "$out" && tar czf results.tgz --exclude=results.tgz -- * && find . -mindepth 1 -maxdepth 1 \
  ! -name results.tgz ! -name summary.txt -exec rm -rf {} +)
cat "$out/summary.txt"
