#!/usr/bin/env bash
# torch_baseline_test.sh MODE TG_TRAIN TG_LAUNCH TG_REPORT DIR   (from the repository root)
#   without-torch  torch hidden: exit 0, "SKIPPED" on stderr, a valid report with the skip as a note
#   cpu            torch on the CPU, quick: a valid report; compare --pair matches tg-train's and
#                  tg-launch's rows, and the loss curves equal tg-train's (check_torch_baseline.py)
# Exit 77 (ctest: skipped) when the mode cannot run here, saying why.
set -euo pipefail
mode=$1 train=$2 launch=$3 report=$4 dir=$5
rm -rf "$dir" && mkdir -p "$dir"
script=experiments/peers/torch_baseline.py

validate() {  # the C++ reader (always), the JSON schema (where python3-jsonschema is)
  local schema_py
  "$report" markdown "$1" > /dev/null
  if schema_py=$(bash tests/jsonschema_python.sh 2>/dev/null); then
    "$schema_py" -c 'import json, sys, jsonschema
jsonschema.validate(json.load(open(sys.argv[1])), json.load(open("docs/report.schema.json")))' "$1"
    echo "schema: $1 is valid"
  else
    echo "schema: no python3 with jsonschema here; the C++ validator passed"
  fi
}

if [ "$mode" = without-torch ]; then
  mkdir -p "$dir/hide" && echo 'raise ImportError("hidden by torch_baseline_test.sh")' > "$dir/hide/torch.py"
  PYTHONPATH="$dir/hide" python3 "$script" --device cpu --quick --json "$dir/torch.json" 2> "$dir/stderr"
  grep -Eq "SKIPPED: (torch|numpy) is not installed" "$dir/stderr"
  grep -q '"torch_baseline"' "$dir/torch.json"
  validate "$dir/torch.json"
  # --precision is checked before torch is looked for: a word that is no precision is bad usage.
  rc=0
  python3 "$script" --precision bf16,fp8 2> "$dir/stderr_precision" || rc=$?
  [ "$rc" -eq 2 ] && grep -q "'fp8' is not a precision" "$dir/stderr_precision"
  PYTHONPATH="$dir/hide" python3 "$script" --device cpu --quick --precision all --json "$dir/torch_all.json" 2> /dev/null
  validate "$dir/torch_all.json"
  echo "without torch: exit 0, SKIPPED said, the report records it; a bad --precision exits 2"
  exit 0
fi

py=$(bash "$(dirname "$0")/../python_with.sh" "torch, numpy" \
  "torch or numpy is not installed here (pip install torch numpy): the PyTorch baseline was not run") || exit 77
# The smallest of tg-train's quick CPU configurations, its CPU GPT-2, and two chain lengths.
"$py" "$script" --device cpu --quick --no-compile --max-rows 128 --loss-steps 5 --ops 1 10 \
  --workloads train,launch,gpt2 --json "$dir/torch.json"
validate "$dir/torch.json"
"$train" --device cpu --quick --max-rows 128 --loss-steps 5 --models mlp,transformer,gpt2 --json "$dir/train.json" \
  > /dev/null
"$launch" --device cpu --quick --ops 1 10 --json "$dir/launch.json" > /dev/null
for a in train launch; do  # exit 1 (something slower) is a verdict, not a failure
  rc=0
  "$report" compare "$dir/$a.json" "$dir/torch.json" --pair executor=dynamic:torch_eager > "$dir/compare_$a.txt" || rc=$?
  [ "$rc" -le 1 ]
done
"$py" tests/peers/check_torch_baseline.py "$dir"
