#!/usr/bin/env bash
# How long `tg-graph import` and `tg-graph print --training` take at N nodes (default
# 10000 30000 100000), on the scale tests' inputs: the ONNX model of tests/scale
# (make_onnx_chain.py, which needs the onnx and numpy packages) and the graph file that
# tg_graph_scale_write writes. Each command is timed once; prints wall and user seconds,
# or the exit status (124: past TG_SCALE_TIMEOUT seconds, 600 by default).
#   scripts/graph-scale.sh TG_GRAPH WRITER [N ...]
# e.g. scripts/graph-scale.sh build/cpu-only/tools/tg-graph/tg-graph \
#        build/cpu-only/tests/scale/tg_graph_scale_write 10000 30000 100000
set -eu
tool=${1:?usage: graph-scale.sh TG_GRAPH WRITER [N ...]}
writer=${2:?usage: graph-scale.sh TG_GRAPH WRITER [N ...]}
shift 2
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 30000 100000)
limit=${TG_SCALE_TIMEOUT:-600}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

timed() {  # LABEL COMMAND...: runs it once, stdout discarded
  local label=$1 rc=0
  shift
  local t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -f '%U' -o "$work/user" timeout "$limit" "$@" >/dev/null 2>"$work/err" || rc=$?
  t1=$(date +%s%N)
  if [ "$rc" -ne 0 ]; then
    echo "$label: exit $rc after $(awk -v ns=$((t1 - t0)) 'BEGIN { printf "%.2f", ns / 1e9 }') s"
  else
    echo "$label: $(awk -v ns=$((t1 - t0)) 'BEGIN { printf "%.2f", ns / 1e9 }') s wall, $(tail -1 "$work/user") s user"
  fi
}

for n in "${sizes[@]}"; do
  python3 "$root/tests/scale/make_onnx_chain.py" "$n" "$work/chain.onnx"
  "$writer" "$n" "$work/chain.json"
  timed "tg-graph import, $n ONNX nodes" "$tool" import "$work/chain.onnx" -o "$work/out.json"
  timed "tg-graph print --training, $n nodes" "$tool" print --training "$work/chain.json"
done
