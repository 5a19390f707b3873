#!/usr/bin/env bash
# bench_precision_test.sh TG_GRAPH TG_TRAIN TG_REPORT DIR DEVICE   (from the repository root)
# tg-graph bench --precision on DEVICE (cpu, or 0 for the GPU; quick): the imported MLP in
# bf16 must hold both executors' rows with precision=bf16 and pair with tg-train's own bf16
# rows without --pair; the transformer block in fp16 must train with loss scaling (its loss
# curves give skipped_steps and the scale); on the GPU, tf32 too. Every report valid.
set -euo pipefail
graph=$1 train=$2 report=$3 dir=$4 device=$5
rm -rf "$dir" && mkdir -p "$dir"
quick=(--device "$device" --quick --repetitions 2 --min-time 0 --loss-steps 3)

source tests/onnx/bench_lib.sh

"$graph" bench tests/onnx/bench/mlp_w256_d8.json "${quick[@]}" --batch 32 --precision bf16 \
  --params model=mlp,sweep=mlp_w256_d8,width=256,depth=8 --json "$dir/mlp_bf16.json" > /dev/null
validate "$dir/mlp_bf16.json"
for e in static dynamic; do
  for mode in train inference; do has "$dir/mlp_bf16.json" iteration executor=$e mode=$mode precision=bf16; done
  has "$dir/mlp_bf16.json" loss_curve executor=$e precision=bf16
  has "$dir/mlp_bf16.json" role_bytes executor=$e mode=train role=activations precision=bf16
done
has "$dir/mlp_bf16.json" compile_total executor=static mode=train precision=bf16
"$train" "${quick[@]}" --max-rows 32 --passes none --precision bf16 --json "$dir/train_bf16.json" > /dev/null
paired "$dir/train_bf16.json" "$dir/mlp_bf16.json" "$dir/compare.txt" \
  "^iteration .*batch=32 .*executor=dynamic mode=train model=mlp optimizer=momentum precision=bf16 "

"$graph" bench tests/onnx/bench/transformer_d128_h4.json "${quick[@]}" --batch 2 --precision fp16 \
  --json "$dir/tr_fp16.json" > /dev/null
validate "$dir/tr_fp16.json"
for e in static dynamic; do has "$dir/tr_fp16.json" loss_curve executor=$e precision=fp16; done
python3 - "$dir/tr_fp16.json" <<'PY'
import json, sys
curves = [m for m in json.load(open(sys.argv[1]))["measurements"] if m["name"] == "loss_curve"]
if not curves or any("skipped_steps" not in m["extra"] or "loss_scale" not in m["extra"] for m in curves):
    sys.exit(f"{sys.argv[1]}: fp16 loss curves without skipped_steps and loss_scale")
PY

if [ "$device" != cpu ]; then
  "$graph" bench tests/onnx/bench/mlp_w256_d8.json "${quick[@]}" --batch 32 --precision tf32 \
    --json "$dir/mlp_tf32.json" > /dev/null
  validate "$dir/mlp_tf32.json"
  for e in static dynamic; do has "$dir/mlp_tf32.json" iteration executor=$e mode=train precision=tf32; done
fi
echo "bench_precision_test ($device): every report valid, each row with its precision, tg-train's bf16 rows paired"
