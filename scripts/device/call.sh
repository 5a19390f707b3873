#!/usr/bin/env bash
# One device call of several named steps, each run under what is left of the call (steps.sh)
# and packed into $OUT/results.tar as soon as it ends, so that a call cut short still returns
# what finished (a call returns at most 8 files).
#   Usage (device tool, carry [".carry"], after `bash scripts/device/pack-deps.sh` and
#   `git describe --always --dirty > .carry/source-rev` here):
#     OUT=$OUT bash scripts/device/call.sh SECONDS STEP...
# Steps (the seconds each needs to start, roughly what it takes on an H100):
#   build      120  scripts/device/build-there.sh (skipped when the build is there: a warm machine)
#   rebuild    120  the same even on a warm machine (an incremental build after a fix)
#   ctest      240  every GPU test (names with cuda or gpu, the reliability and torch tests)
#   ctest-quick 120 the same without the cuDNN workspace-limit test (about 150 s alone)
#   ctest-kernels 60  the CUDA kernel tests and the static == dynamic tests on CUDA alone (no workspace limit)
#   cnn-speed  220  scripts/device/cnn-speed.sh: ResNet-50 under each convolution option set
#   cnn-run    200  scripts/device/cnn-run.sh: ResNet-50 both ways beside PyTorch, VGG-16 memory
#   lm-quick   220  scripts/device/lm-run.sh quick: GPT-2 small at batch 4 x 256
#   lm-full    480  scripts/device/lm-run.sh full: GPT-2 small at batch 8 x 1024 too
#   lm-full-bf16, lm-full-fp32  330  the same in one precision (150 s a tool: torch.compile's first
#              GPT-2 step takes a minute or more)
#   lm-full-bf16-free 330  lm-full-bf16 with the forms PyTorch's fastest step may use:
#              attention_deterministic=0 (cuDNN's backward with atomics), gemm_bias_grad_sums=1
#   lm-speed-free 120+150+110  GPT-2 small bf16 b8 s1024: tg-train under the lm-full-bf16-free
#              options, PyTorch's three forms (torch_baseline.py), tg-train with the defaults
#   precision  260  scripts/device/precision-run.sh: every precision beside PyTorch's autocast
#   lm-options-fp32 120  GPT-2 small in fp32 without passes (beside lm-full-fp32's run with them)
#   cnn-bf16   30+150  ResNet-50 b32 224 in bf16: tg-train with every pass and channels_last under
#              cudnn.benchmark's freedom, PyTorch's forms under autocast (torch.compile included)
#   cnn-bisect 260  ResNet-50's loss curve with each pass alone and with all but the lanes pass's
#              early updates, against none, over 20 steps (which pass changes the step on the GPU)
#   profile-gpt2, profile-resnet50  150  scripts/device/profile-run.sh: the model's bf16 (GPT-2) or
#              fp32 (ResNet-50) step traced with pdl=0, kernel tables of its last replays
#   profile-resnet50-free 150  the same with conv_benchmark=1,conv_deterministic=0,conv_workspace_mb=1024
#   profile-resnet50-bf16 150  ResNet-50's bf16 step with every pass and channels_last, under those options
#              (cnn-bf16's configuration), kernel tables of its last replays
#   torch-kernels 60+150  experiments/peers/torch_kernels.py: PyTorch's kernel tables for ResNet-50
#              (fp32, CUDA graph, cudnn.benchmark) and GPT-2 small (bf16, torch.compile), trained
#   torch-kernels-bf16 150  the same for ResNet-50 in bf16 under torch.compile (cnn-bf16's fastest form)
#   bn-kernels  60  tg-kernels: batch norm's forward and gradient (NCHW, NHWC) beside a copy, f32 and bf16,
#              64 to 256 MiB: how near the batch norm kernels come to the copy's bandwidth
#   lm-options 330  tg-train's GPT-2 small in bf16 at both sizes with the default options, with
#              the GEMM option still off by default (gemm_bias_grad_sums=1), and with cuDNN's
#              attention backward with atomics (attention_deterministic=0, PyTorch's SDPA form)
# Unpack here with `tar xf results.tar`: one folder per step, and summary.txt.
set -u
limit=${1:?seconds}
shift
out=${OUT:-out}
mkdir -p "$out"
source "$(dirname "$0")/steps.sh"  # left, step
build=build/default
# gpu_ctest STEP SECONDS CTEST-FILTERS...: the GPU tests the filters select, their verdict in the summary.
gpu_ctest() {
  local name=$1 need=$2
  shift 2
  step "$name" "$need" ctest --test-dir "$build" "$@" -j12 --timeout 200 --output-on-failure > "$dir/ctest-gpu.log" 2>&1
  grep -E "tests passed|tests failed|\(Failed\)|Timeout" "$dir/ctest-gpu.log" | head -30 | tee -a "$out/summary.txt"
}
pack() { (cd "$out" && tar -rf results.tar "$1" summary.txt 2>/dev/null && rm -rf "$1"); }
for name in "$@"; do
  dir="$out/$name"
  mkdir -p "$dir"
  case "$name" in
    build | rebuild)
      if [ "$name" = build ] && [ -x "$build/experiments/train/tg-train" ]; then
        echo "build: there already" | tee -a "$out/summary.txt"
      else
        step build 120 env OUT="$dir" bash scripts/device/build-there.sh
        echo "$(nvidia-smi --query-gpu=name --format=csv,noheader)" | tee -a "$out/summary.txt"
      fi ;;
    ctest) gpu_ctest ctest 240 -R "cuda|gpu|torch_baseline_cpu|tg_reliability_" ;;
    ctest-quick) gpu_ctest ctest-quick 120 -R "cuda|gpu|torch_baseline_cpu|tg_reliability_" -E "workspace limit bounds" ;;
    ctest-kernels) gpu_ctest ctest-kernels 60 -R "tg_kernels_cuda_test|on CUDA" -E "workspace limit bounds" ;;
    cnn-speed) step cnn-speed 220 env OUT="$dir" bash scripts/device/cnn-speed.sh "$build" 45 ;;
    cnn-run) step cnn-run 200 env OUT="$dir" bash scripts/device/cnn-run.sh "$build" resnet50 140 ;;
    lm-quick) step lm-quick 220 env OUT="$dir" bash scripts/device/lm-run.sh "$build" 55 0 quick ;;
    lm-full) step lm-full 480 env OUT="$dir" bash scripts/device/lm-run.sh "$build" 120 0 full ;;
    lm-full-bf16 | lm-full-fp32)
      step "$name" 330 env OUT="$dir" bash scripts/device/lm-run.sh "$build" 150 0 full "${name#lm-full-}" ;;
    lm-full-bf16-free)
      step "$name" 330 env OUT="$dir" bash scripts/device/lm-run.sh "$build" 150 0 full bf16 \
        attention_deterministic=0,gemm_bias_grad_sums=1 ;;
    lm-speed-free)
      free=attention_deterministic=0,gemm_bias_grad_sums=1
      step lm-speed-free-tg 120 "$build/experiments/train/tg-train" --device 0 --models gpt2 --passes all \
        --precision bf16 --cuda-options "$free" --json "$dir/train_gpt2_bf16.json" > "$dir/train_gpt2_bf16.txt" 2>&1
      step lm-speed-free-torch 150 python3 experiments/peers/torch_baseline.py --device 0 --workloads gpt2 \
        --precision bf16 --json "$dir/torch_gpt2.json" > "$dir/torch_gpt2.txt" 2>&1
      step lm-speed-defaults-tg 110 "$build/experiments/train/tg-train" --device 0 --models gpt2 --passes all \
        --precision bf16 --json "$dir/train_gpt2_bf16_defaults.json" > "$dir/train_gpt2_bf16_defaults.txt" 2>&1
      grep -hE "^(replay|pass_replay_host) " "$dir"/train_gpt2_bf16*.txt | cut -c1-200 >> "$out/summary.txt"
      grep -hE "gpt2" "$dir/torch_gpt2.txt" | head -12 | cut -c1-200 >> "$out/summary.txt" ;;
    precision) step precision 260 env OUT="$dir" bash scripts/device/precision-run.sh "$build" 70 150 ;;
    lm-options-fp32)
      step lm-options-fp32 120 "$build/experiments/train/tg-train" --device 0 --models gpt2 --passes none \
        --precision fp32 --json "$dir/train_gpt2_fp32_no_passes.json" > "$dir/train_gpt2_fp32_no_passes.txt" 2>&1
      grep -E "^(replay|loss_curve) " "$dir/train_gpt2_fp32_no_passes.txt" | cut -c1-200 >> "$out/summary.txt" ;;
    cnn-bf16)
      step cnn-bf16-tg 30 "$build/experiments/train/tg-train" --device 0 --quick --models resnet50 \
        --passes all,channels_last --precision bf16 \
        --cuda-options conv_benchmark=1,conv_deterministic=0,conv_workspace_mb=1024 \
        --json "$dir/train_resnet50_bf16_free.json" > "$dir/train_resnet50_bf16_free.txt" 2>&1
      step cnn-bf16-torch 150 python3 experiments/peers/torch_baseline.py --device 0 --quick --workloads cnn \
        --cnn-models resnet50 --precision bf16 --json "$dir/torch_resnet50_bf16.json" > "$dir/torch_resnet50_bf16.txt" 2>&1
      grep -hE "^(replay|pass_replay_host|loss_curve|static_plan_bytes) |failed" "$dir/train_resnet50_bf16_free.txt" \
        | cut -c1-220 >> "$out/summary.txt"
      grep -hE "^(replay|peak_bytes) |failed" "$dir/torch_resnet50_bf16.txt" | cut -c1-220 >> "$out/summary.txt" ;;
    cnn-bisect)  # which pass moves ResNet-50's loss curve on the GPU (each alone against none, 20 steps)
      step cnn-bisect 200 "$build/experiments/train/tg-train" --device 0 --quick --models resnet50 --passes sweep \
        --loss-steps 20 --json "$dir/train_resnet50_sweep.json" > "$dir/train_resnet50_sweep.txt" 2>&1
      step cnn-bisect-no-early 60 "$build/experiments/train/tg-train" --device 0 --quick --models resnet50 --passes all \
        --pass-options lanes_early_updates=0 --loss-steps 20 --json "$dir/train_resnet50_no_early.json" \
        > "$dir/train_resnet50_no_early.txt" 2>&1
      grep -hE "^loss_curve|failed" "$dir"/train_resnet50_*.txt | cut -c1-220 >> "$out/summary.txt" ;;
    profile-gpt2) step profile-gpt2 150 env OUT="$dir" bash scripts/device/profile-run.sh "$build" gpt2 bf16 "" full ;;
    profile-resnet50)
      step profile-resnet50 150 env OUT="$dir" bash scripts/device/profile-run.sh "$build" resnet50 fp32 "" quick ;;
    profile-resnet50-free)  # the algorithms PyTorch's fastest form may use: atomics, 1 GiB of workspace
      step profile-resnet50-free 150 env OUT="$dir" bash scripts/device/profile-run.sh "$build" resnet50 fp32 \
        conv_benchmark=1,conv_deterministic=0,conv_workspace_mb=1024 quick ;;
    profile-resnet50-bf16)
      step profile-resnet50-bf16 150 env OUT="$dir" bash scripts/device/profile-run.sh "$build" resnet50 bf16 \
        conv_benchmark=1,conv_deterministic=0,conv_workspace_mb=1024 quick all,channels_last ;;
    bn-kernels)
      step bn-kernels 60 "$build/experiments/kernels/tg-kernels" --device 0 --no-matmul --dtypes f32,bf16 \
        --ops copy,batch_norm,batch_norm_nhwc,batch_norm_grad,batch_norm_grad_nhwc --min-bytes 67108864 \
        --max-bytes 268435456 --json "$dir/kernels_bn.json" > "$dir/kernels_bn.txt" 2>&1
      grep -E "batch_norm|copy" "$dir/kernels_bn.txt" | cut -c1-200 | head -40 >> "$out/summary.txt" ;;
    torch-kernels-bf16)
      step torch-kernels-bf16 150 python3 experiments/peers/torch_kernels.py --workload resnet50 --precision bf16 \
        --mode train --executor torch_compile --json "$dir/torch_kernels_resnet50_bf16.json" \
        > "$dir/torch_kernels_resnet50_bf16.txt" 2>&1
      head -3 "$dir"/torch_kernels_*.txt >> "$out/summary.txt" ;;
    torch-kernels)  # PyTorch's kernels on its fastest forms, beside profile-resnet50(-free) and profile-gpt2
      step torch-kernels-resnet50 60 python3 experiments/peers/torch_kernels.py --workload resnet50 --precision fp32 \
        --mode train --json "$dir/torch_kernels_resnet50.json" > "$dir/torch_kernels_resnet50.txt" 2>&1
      step torch-kernels-gpt2 150 python3 experiments/peers/torch_kernels.py --workload gpt2_small --precision bf16 \
        --mode train --executor torch_compile --json "$dir/torch_kernels_gpt2.json" > "$dir/torch_kernels_gpt2.txt" 2>&1
      head -3 "$dir"/torch_kernels_*.txt >> "$out/summary.txt" ;;
    lm-options)
      for opts in defaults gemm_bias_grad_sums=1 attention_deterministic=0,gemm_bias_grad_sums=1; do
        tag=$(echo "$opts" | tr ',=' '-_')
        flags=()
        [ "$opts" = defaults ] || flags=(--cuda-options "$opts")
        step "lm-options $opts" 110 "$build/experiments/train/tg-train" --device 0 --models gpt2 --passes all \
          --precision bf16 "${flags[@]}" --json "$dir/train_gpt2_bf16_$tag.json" > "$dir/train_gpt2_bf16_$tag.txt" 2>&1
        grep -E "^(replay|pass_replay_host) " "$dir/train_gpt2_bf16_$tag.txt" | cut -c1-200 >> "$out/summary.txt"
      done ;;
    *) echo "call.sh: no step '$name'; the steps are build, rebuild, ctest, ctest-quick, cnn-speed, cnn-run, lm-quick, lm-full," \
         "lm-full-bf16, lm-full-fp32, lm-full-bf16-free, lm-speed-free, precision, lm-options, lm-options-fp32, cnn-bisect, profile-gpt2, profile-resnet50," \
         "profile-resnet50-free, profile-resnet50-bf16, torch-kernels, torch-kernels-bf16, bn-kernels" >&2
       exit 2 ;;
  esac
  pack "$name"
done
cat "$out/summary.txt"
