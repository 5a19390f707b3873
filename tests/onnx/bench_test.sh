#!/usr/bin/env bash
# bench_test.sh TG_GRAPH TG_TRAIN TG_REPORT DIR   (from the repository root)
# tg-graph bench on the CPU, quick: an imported model with its weights (inference), the
# tg-train-sized imports with their mse loss (train, rebatched), a hand-written graph
# with cross_entropy, the built-in GPT-2 written by tg-graph model, an imported GPT-2 with an
# attention mask input. Each report must be valid and hold both executors' rows; the MLP's
# rows, labelled with tg-train's params, must pair with tg-train's own without --pair.
set -euo pipefail
graph=$1 train=$2 report=$3 dir=$4
rm -rf "$dir" && mkdir -p "$dir"
quick=(--device cpu --quick --repetitions 2 --min-time 0 --loss-steps 3)

source tests/onnx/bench_lib.sh

"$graph" bench tests/onnx/mlp.json --weights tests/onnx/mlp.safetensors "${quick[@]}" --json "$dir/mlp.json" > /dev/null
validate "$dir/mlp.json"
for e in static dynamic; do has "$dir/mlp.json" iteration executor=$e mode=inference model=mlp batch=4; done
has "$dir/mlp.json" role_bytes executor=dynamic mode=inference role=parameters
has "$dir/mlp.json" compile_total executor=static mode=inference

"$graph" bench tests/onnx/bench/mlp_w256_d8.json "${quick[@]}" --batch 32 64 \
  --params model=mlp,sweep=mlp_w256_d8,width=256,depth=8 --json "$dir/mlp_w256.json" > /dev/null
validate "$dir/mlp_w256.json"
for b in 32 64; do
  for e in static dynamic; do
    has "$dir/mlp_w256.json" iteration executor=$e mode=train batch=$b sweep=mlp_w256_d8
    has "$dir/mlp_w256.json" loss_curve executor=$e batch=$b
  done
  has "$dir/mlp_w256.json" role_bytes executor=static mode=train role=gradients batch=$b
done
"$train" --device cpu --quick --repetitions 2 --min-time 0 --loss-steps 3 --max-rows 32 --json "$dir/train.json" > /dev/null
paired "$dir/train.json" "$dir/mlp_w256.json" "$dir/compare.txt" \
  "^iteration .*batch=32 clip_grad_norm=0 depth=8 executor=dynamic mode=train model=mlp optimizer=momentum sweep=mlp_w256_d8 width=256 "

"$graph" bench tests/onnx/bench/transformer_d128_h4.json "${quick[@]}" --batch 2 --json "$dir/tr.json" > /dev/null
validate "$dir/tr.json"
has "$dir/tr.json" iteration executor=dynamic mode=train batch=2
"$graph" bench tests/graphs/classifier.json "${quick[@]}" --json "$dir/cls.json" > /dev/null
has "$dir/cls.json" loss_curve executor=static model=classifier
# Every built-in model writes a file that tg-graph check loads.
for m in mlp transformer transformer_fused resnet20 vgg11 resnet18 resnet50 vgg16 gpt2_tiny gpt2_small; do
  "$graph" model "$m" -o "$dir/model_$m.json" > /dev/null
  "$graph" check "$dir/model_$m.json" > /dev/null
done
# A built-in model written as a file (integer ids and labels): tg-train's GPT-2 rows pair with the bench's.
"$graph" model gpt2_tiny -o "$dir/gpt2_tiny.json" > /dev/null
"$graph" bench "$dir/gpt2_tiny.json" "${quick[@]}" \
  --params model=gpt2,sweep=gpt2_tiny,seq=32,d_model=64,layers=2,heads=2,vocab=512 --json "$dir/gpt2.json" > /dev/null
validate "$dir/gpt2.json"
for e in static dynamic; do has "$dir/gpt2.json" loss_curve executor=$e model=gpt2 batch=4; done
"$train" --device cpu --quick --repetitions 2 --min-time 0 --loss-steps 3 --models gpt2 --json "$dir/train_gpt2.json" \
  > /dev/null
paired "$dir/train_gpt2.json" "$dir/gpt2.json" "$dir/compare_gpt2.txt" \
  "^iteration .*batch=4 .*executor=static .*mode=train model=gpt2 .*sweep=gpt2_tiny "
# Hugging Face GPT-2 imported with its attention_mask input (int64, read by where as a
# condition): the bench feeds it ones. Needs a build with ONNX import.
if out=$("$graph" import tests/onnx/lm/gpt2_tiny.onnx -o "$dir/hf_gpt2_mask.json" 2>&1); then
  "$graph" bench "$dir/hf_gpt2_mask.json" "${quick[@]}" --json "$dir/hf_mask.json" > /dev/null
  validate "$dir/hf_mask.json"
  for e in static dynamic; do has "$dir/hf_mask.json" iteration executor=$e mode=inference; done
elif [[ $out != *"has no ONNX support"* ]]; then
  echo "$out"; exit 1
fi
echo "bench_test: every report valid, both executors' rows present, tg-train's mlp and gpt2 rows paired"
