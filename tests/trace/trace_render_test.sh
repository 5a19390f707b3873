#!/usr/bin/env bash
# tools/trace/render_trace.py renders a CPU trace made here: a dynamic iteration's window and
# the whole trace, each as a PNG and an SVG that are not empty; a name not in the trace is
# exit 2 with the names there. Exit 77 (skipped) without matplotlib.
set -euo pipefail
src=$1 out=$2
py=$(bash "$src/tests/python_with.sh" matplotlib \
  "python3 module matplotlib is missing (apt-get install python3-matplotlib)") || exit 77
render="$py $src/tools/trace/render_trace.py"
rm -rf "$out" && mkdir -p "$out"
"$TG_LAUNCH" --device cpu --quick --ops 30 --trace "$out/t.json" --trace-iterations 2 >/dev/null 2>&1
$render "$out/t.json" --out "$out/iteration" --around "dynamic inference" --index 1
$render "$out/t.json" --out "$out/whole"
for f in iteration whole; do
  for ext in png svg; do
    [ -s "$out/$f.$ext" ] || { echo "FAIL: $out/$f.$ext missing or empty"; exit 1; }
  done
done
# Host lanes above a GPU stream with launch arrows, from a trace shaped as a CUDA run writes it.
"$py" "$src/tests/trace/gpu_like_trace.py" "$out/gpu.json" 12
$render "$out/gpu.json" --out "$out/gpu" --around "dynamic inference" >"$out/gpu.txt"
grep -q "on 2 lanes, 12 launch arrows" "$out/gpu.txt" || { cat "$out/gpu.txt"; echo "FAIL: the GPU lane or its arrows"; exit 1; }
[ -s "$out/gpu.png" ] && [ -s "$out/gpu.svg" ] || { echo "FAIL: no GPU figure"; exit 1; }
# A span's window reaches the kernel it launched (relu 5-16 us, its kernel 17-19 us: 15 us with
# the pads), and a gzipped trace renders as the plain one.
$render "$out/gpu.json" --out "$out/relu" --around relu >"$out/relu.txt"
grep -q "0.015 ms" "$out/relu.txt" || { cat "$out/relu.txt"; echo "FAIL: the window stops before the launched kernel"; exit 1; }
gzip -c "$out/gpu.json" >"$out/gpu.json.gz"
$render "$out/gpu.json.gz" --out "$out/gz" --around "dynamic inference" >"$out/gz.txt"
grep -q "on 2 lanes, 12 launch arrows" "$out/gz.txt" || { cat "$out/gz.txt"; echo "FAIL: a gzipped trace"; exit 1; }
rc=0
$render "$out/t.json" --out "$out/none" --around "no such span" 2>"$out/none.log" || rc=$?
[ "$rc" -eq 2 ] && grep -q "host spans in the trace: .*dynamic inference" "$out/none.log" \
  || { cat "$out/none.log"; echo "FAIL: an unknown --around: exit $rc"; exit 1; }
ls "$out"/*.tmp 2>/dev/null && { echo "FAIL: .tmp files left"; exit 1; }
echo "OK: a dynamic iteration and the whole trace as PNG and SVG; windows reach launched work; gzip; an unknown span name is exit 2"
