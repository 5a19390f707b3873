#!/usr/bin/env bash
# Outputs that would replace an input, and outputs refused after another was fine:
# `tg-graph bench` may not write --json/--csv over its graph or weights file, nor
# `tg-graph import` -o/--weights over its model, however the path is spelled (a link, a
# hard link, ../, the temporary file); and a refused path writes nothing at all (import
# used to write the weights before it checked -o). Every refusal: exit 2, the fragment
# on stderr, nothing on stdout, the inputs unchanged, no new file. Cases that need files
# of their own (links, copies) live here; the rest are rows of cli/cases.txt.
#   tool_paths_test.sh TG_GRAPH ONNX_DIR WORK_PARENT [import]   (import: the build reads ONNX)
set -u
tool=$1 onnx=$2 parent=$3 with_import=${4:-}
errname=.err
# shellcheck source=tests/bad/cases_lib.sh
. "$(dirname "$0")/cases_lib.sh"
listing() { (cd "$d" && ls -A | grep -v '^\.err$\|^\.out$' | sort | tr '\n' ' '); }
# expect FRAGMENT ARGS...: exit 2, FRAGMENT on stderr, nothing on stdout, the files in $d
# as they were (same names, same bytes).
expect() {
  local fragment=$1
  shift
  local before sums
  before=$(listing)
  sums=$(cd "$d" && find . -type f ! -name '.err' ! -name '.out' -exec md5sum {} + | sort)
  timeout 120 "$tool" "$@" >"$d/.out" 2>"$d/.err"
  local rc=$?
  local what
  what=$(printf '%q ' "$@")
  [ "$rc" -eq 2 ] || { fail "$what -> exit $rc, expected 2"; return; }
  grep -qF -- "$fragment" "$d/.err" || { fail "$what -> stderr lacks '$fragment'"; return; }
  [ -s "$d/.out" ] && { fail "$what -> printed on stdout"; return; }
  [ "$(listing)" = "$before" ] || { fail "$what -> the folder changed: $(listing)"; return; }
  [ "$(cd "$d" && find . -type f ! -name '.err' ! -name '.out' -exec md5sum {} + | sort)" = "$sums" ] ||
    { fail "$what -> a file changed"; return; }
  echo "ok: $(head -n 1 "$d/.err" | cut -c1-200)"
}

cp "$onnx/mlp.json" "$d/g.json"
cp "$onnx/mlp.safetensors" "$d/w.safetensors"
ln -s g.json "$d/link.json"
ln "$d/g.json" "$d/hard.json"
mkdir "$d/sub"
cp "$onnx/mlp.json" "$d/t.json.tmp"
quick=(--device cpu --quick --repetitions 2 --min-time 0 --loss-steps 2)

# bench: the report over its own inputs.
expect "--json $d/g.json: is FILE $d/g.json, which this run reads" bench "$d/g.json" "${quick[@]}" --json "$d/g.json"
expect "--csv $d/w.safetensors: is --weights" bench "$d/g.json" --weights "$d/w.safetensors" "${quick[@]}" \
  --csv "$d/w.safetensors"
expect "which this run reads" bench "$d/g.json" "${quick[@]}" --json "$d/link.json"
expect "which this run reads" bench "$d/link.json" "${quick[@]}" --json "$d/g.json"
expect "which this run reads" bench "$d/g.json" "${quick[@]}" --csv "$d/hard.json"
expect "which this run reads" bench "$d/g.json" "${quick[@]}" --json "$d/sub/../g.json"
expect "would be written first at $d/t.json.tmp" bench "$d/t.json.tmp" "${quick[@]}" --json "$d/t.json"
# bench: flags checked before the graph is read (the file does not even exist).
expect "--batch 2 is given twice" bench "$d/none.json" "${quick[@]}" --batch 2 4 2 --json "$d/r.json"
expect "--params: key 'width' is given twice" bench "$d/none.json" "${quick[@]}" --params width=1,width=2

if [ "$with_import" = import ]; then
  cp "$onnx/mlp.onnx" "$onnx/mlp.onnx.data" "$d/"
  ln -s mlp.onnx "$d/model_link.onnx"
  ln "$d/mlp.onnx" "$d/model_hard.onnx"
  expect "-o $d/mlp.onnx: is the model $d/mlp.onnx, which this run reads" import "$d/mlp.onnx" -o "$d/mlp.onnx"
  expect "--weights $d/mlp.onnx: is the model" import "$d/mlp.onnx" -o "$d/out.json" --weights "$d/mlp.onnx"
  expect "which this run reads" import "$d/model_link.onnx" -o "$d/mlp.onnx"
  expect "which this run reads" import "$d/mlp.onnx" -o "$d/out.json" --weights "$d/model_link.onnx"
  expect "which this run reads" import "$d/mlp.onnx" -o "$d/model_hard.onnx"
  # A refused -o writes no weights, a refused --weights no graph file.
  expect "-o $d/sub/missing/out.json: the folder" import "$d/mlp.onnx" -o "$d/sub/missing/out.json" \
    --weights "$d/w2.safetensors"
  expect "--weights $d/sub/missing/w.safetensors: the folder" import "$d/mlp.onnx" -o "$d/out.json" \
    --weights "$d/sub/missing/w.safetensors"
  expect "is a folder" import "$d/mlp.onnx" -o "$d/out.json" --weights "$d/sub"
  # A --dim the model does not have: nothing is written either.
  expect "--dim 'batch': $d/mlp.onnx has no input dim of that name" import "$d/mlp.onnx" -o "$d/out.json" --dim batch=4
fi

end_cases
