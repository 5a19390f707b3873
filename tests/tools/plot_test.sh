#!/usr/bin/env bash
# Renders every figure kind of tools/plot/plot_report.py from crafted reports and checks
# that each PNG and SVG exists and is not empty. Exit 77 (skipped) without matplotlib.
set -euo pipefail
script=$1 out=$2
py=$(bash "$(dirname "$0")/../python_with.sh" matplotlib \
  "python3 module matplotlib is missing (apt-get install python3-matplotlib)") || exit 77
rm -rf "$out" && mkdir -p "$out/in"
"$py" - "$out/in" <<'PY'
import json, os, sys
d = sys.argv[1]
def m(name, params, med, unit="s", extra=None):
    return {"name": name, "params": params, "unit": unit, "better": "lower", "timer": "host", "count": 3,
            "min": med * 0.9, "p10": med * 0.95, "median": med, "p90": med * 1.05, "max": med * 1.1,
            "mean": med, "noise": 0.05, "noisy": False, "extra": extra or {}, "samples": [med * 0.9, med, med * 1.1]}
H200 = {"id": 0, "name": "NVIDIA H200", "compute_capability": "9.0", "sm_count": 132, "sm_clock_khz": 1980000,
        "mem_clock_khz": 3201000, "mem_bus_width_bits": 6016, "pcie_gen": 5, "pcie_width": 16}
def rep(tool, ms, gpu=None):
    r = {"schema_version": 1, "tool": {"name": tool, "version": "0.1.0", "git_rev": "x", "build_type": "Release",
         "cuda_build": False}, "measurements": ms, "notes": []}
    if gpu:  # the ceilings (PCIe, device memory, fp32/TF32 peak) come from the device's entry
        r.update(device={"id": gpu["id"]}, gpus=[gpu])
    json.dump(r, open(os.path.join(d, tool + ".json"), "w"))
sizes = [1024, 1 << 20, 1 << 29]
rep("tg-transfer", [m("copy", {"size_bytes": s, "direction": dr, "memory": mem}, s / 20e9 + 5e-6)
                    for s in sizes for dr in ("h2d", "d2h") for mem in ("pinned", "pageable")]
                   + [m("copy", {"size_bytes": s, "direction": "d2d", "memory": "device", "mode": "async"}, s / 2e12 + 5e-6,
                        extra={"GB/s_rw": 2 * s / (s / 2e12 + 5e-6) / 1e9}) for s in sizes]
                   + [m("cudaMalloc", {"bytes": 1024}, 5e-5)], H200)
rep("tg-launch", [m(name, {"n_ops": n, "executor": e}, n * c) for n in (1, 10, 100, 1000)
                  for name, e, c in (("dynamic_iteration", "dynamic", 1.2e-5), ("static_replay_gpu", "static", 1e-6))]
                 + [m("dynamic_build", {"n_ops": 10, "executor": "dynamic"}, 3e-6)])  # a phase: not drawn
rep("tg-memory", [m("bytes", {"role": r, "config": c}, b, unit="B") for c in ("batch=32", "batch=256")
                  for r, b in (("parameters", 4e6), ("gradients", 4e6), ("activations", 1e7))])
rep("tg-matmul", [m("matmul", {"n": n, "backend": b, "transfers": tr}, 2 * n**3 / f) for n in (0, 500, 1000, 2000)
                  for b, f, tr in (("cpu", 1e12, False), ("gpu", 4e13, False), ("gpu", 2e13, True))], H200)
rep("tg-train", [m(name, {"batch": b, "executor": e, "model": "mlp", "mode": mode}, c * b ** 0.5)
                 for b in (32, 128, 512) for e in ("static", "dynamic") for mode in ("train", "inference")
                 for name, c in (("iteration", 1e-4), ("replay", 8e-5))]
                + [m("feed", {"batch": 32, "executor": "static", "mode": "train", "feed_copy": "serial"}, 1e-5)])
rep("tg-shapes", [m("iteration", {"strategy": s}, t) for s, t in (("dynamic", 1e-3), ("recapture", 5e-3),
                                                                  ("cache", 4e-4), ("bucket", 5e-4), ("update", 6e-4))])
rep("tg-pipeline", [m("stage_time", {"stage": s, "mode": "serialized"}, t) for s, t in (("host", 1e-3), ("h2d", 2e-3))])
rep("tg-noop", [m("empty_host_function", {"batch": 1000}, 3e-9)])
rep("tg-launch-missing", [m("x", {}, 1e-6)])  # generic fallback by tool name
r = json.load(open(os.path.join(d, "tg-launch.json")))
r["tool"]["name"] = "tg-launch"
for x in r["measurements"]:
    del x["params"]["n_ops"]
json.dump(r, open(os.path.join(d, "launch-noparams.json"), "w"))
PY
mkdir -p "$out/fallback"
"$py" "$script" --verbose --out "$out/png" "$out"/in/tg-*.json 2>"$out/png.log"
grep -q "feed not in the iterations/s figure" "$out/png.log" || { echo "FAIL: the feed row was not left out of the train figure"; cat "$out/png.log"; exit 1; }
"$py" "$script" --verbose --out "$out/fallback" "$out/in/launch-noparams.json" 2>"$out/fallback.log"
grep -q "lack one of n_ops" "$out/fallback.log" || { echo "FAIL: no message for the missing n_ops"; cat "$out/fallback.log"; exit 1; }
expect=(tg-transfer_bandwidth tg-launch_per_op_cost tg-memory_memory_by_role tg-matmul_matmul
        tg-train_iterations_per_s tg-shapes_time_per_strategy tg-pipeline_per_stage tg-noop_medians_s
        tg-launch-missing_medians_s)
for f in "${expect[@]}"; do
  for ext in png svg; do
    [ -s "$out/png/$f.$ext" ] || { echo "FAIL: $out/png/$f.$ext missing or empty"; ls "$out/png"; exit 1; }
  done
done
[ -s "$out/fallback/tg-launch_medians_s.png" ] || { echo "FAIL: no generic fallback figure"; ls "$out/fallback"; exit 1; }
if "$py" "$script" --out "$out/bad" /nonexistent.json 2>/dev/null; then echo "FAIL: a missing report must fail"; exit 1; fi
# Checked writes: a listing into a closed pipe stops quietly (exit 0), into a full
# device is exit 1; a figure that cannot be written is exit 1 and leaves no .tmp; an
# --out that is a file is exit 2.
one="$out/in/tg-noop.json"
exec 5> >(exec true)
wait $! 2>/dev/null
"$py" "$script" --out "$out/closed" "$one" >&5 2>"$out/closed.log" || { echo "FAIL: closed stdout: exit $?"; cat "$out/closed.log"; exit 1; }
exec 5>&-
[ -s "$out/closed/tg-noop_medians_s.png" ] || { echo "FAIL: closed stdout: no figure"; exit 1; }
if [ -w /dev/full ]; then
  if "$py" "$script" --out "$out/full" "$one" >/dev/full 2>"$out/full.log"; then echo "FAIL: stdout /dev/full: exit 0"; exit 1; fi
  grep -q "plot: error: cannot write to stdout: No space left on device" "$out/full.log" || { echo "FAIL: /dev/full message"; cat "$out/full.log"; exit 1; }
fi
mkdir -p "$out/blocked/tg-noop_medians_s.png.tmp"
"$py" "$script" --out "$out/blocked" "$one" 2>"$out/blocked.log" && { echo "FAIL: an unwritable figure gave exit 0"; exit 1; }
grep -q "cannot write $out/blocked/tg-noop_medians_s.png" "$out/blocked.log" || { echo "FAIL: blocked message"; cat "$out/blocked.log"; exit 1; }
[ -d "$out/blocked/tg-noop_medians_s.png.tmp" ] || { echo "FAIL: the folder in the way was removed"; exit 1; }
rc=0
"$py" "$script" --out "$one" "$one" 2>"$out/outfile.log" || rc=$?
[ "$rc" -eq 2 ] && grep -q "is a file, not a folder" "$out/outfile.log" || { echo "FAIL: --out a file"; cat "$out/outfile.log"; exit 1; }
if ls "$out"/*/*.tmp 2>/dev/null | grep -v blocked; then echo "FAIL: .tmp files left"; exit 1; fi
# Without --verbose, what a figure leaves out on purpose is not said: it reads like an error.
"$py" "$script" --out "$out/quiet" "$out/in/tg-transfer.json" "$out/in/tg-train.json" 2>"$out/quiet.log"
[ ! -s "$out/quiet.log" ] || { echo "FAIL: stderr without --verbose:"; cat "$out/quiet.log"; exit 1; }
# Two reports of one tool: each keeps its figure, named by what tells the files apart.
mkdir -p "$out/in/a" "$out/in/b"
cp "$out/in/tg-launch.json" "$out/in/a/launch.json"
cp "$out/in/tg-launch.json" "$out/in/b/launch.json"
"$py" "$script" --out "$out/two" "$out/in/a/launch.json" "$out/in/b/launch.json" >"$out/two.txt"
for f in tg-launch_per_op_cost.a-launch tg-launch_per_op_cost.b-launch; do
  [ -s "$out/two/$f.png" ] || { echo "FAIL: two reports of one tool: $f.png missing"; ls "$out/two"; exit 1; }
done
rc=0
"$py" "$script" --out "$out/twice" "$one" "$one" 2>"$out/twice.log" || rc=$?
[ "$rc" -eq 2 ] && grep -q "given twice" "$out/twice.log" || { echo "FAIL: one report given twice"; cat "$out/twice.log"; exit 1; }
# --compare A B: one figure of B's medians over A's; reports of two tools are refused.
"$py" - "$out/in" <<'PY'
import json, os, sys
d = sys.argv[1]
r = json.load(open(os.path.join(d, "tg-launch.json")))
for i, m in enumerate(r["measurements"]):
    for k in ("min", "p10", "median", "p90", "max", "mean"):
        m[k] *= 0.5 if i % 2 else 1.5
json.dump(r, open(os.path.join(d, "b", "launch.json"), "w"))
PY
"$py" "$script" --out "$out/ab" --compare "$out/in/a/launch.json" "$out/in/b/launch.json" >"$out/ab.txt"
[ -s "$out/ab/tg-launch_compare.png" ] && [ -s "$out/ab/tg-launch_compare.svg" ] \
  || { echo "FAIL: --compare wrote no tg-launch_compare"; ls "$out/ab"; exit 1; }
rc=0
"$py" "$script" --out "$out/ab" --compare "$out/in/a/launch.json" "$out/in/tg-noop.json" 2>"$out/ab-bad.log" || rc=$?
[ "$rc" -eq 2 ] && grep -q "compare two reports of one tool" "$out/ab-bad.log" \
  || { echo "FAIL: --compare across tools: exit $rc"; cat "$out/ab-bad.log"; exit 1; }
# Without matplotlib: what to install, exit 2, no traceback.
rc=0
"$py" -c "import runpy, sys; sys.modules['matplotlib'] = None; sys.argv = ['plot_report.py', '$one']
runpy.run_path('$script', run_name='__main__')" 2>"$out/nompl.log" || rc=$?
[ "$rc" -eq 2 ] && grep -q "matplotlib is missing: install it (apt-get install python3-matplotlib" "$out/nompl.log" \
  && ! grep -q Traceback "$out/nompl.log" || { echo "FAIL: without matplotlib: exit $rc"; cat "$out/nompl.log"; exit 1; }
# Every figure legible at screen size.
"$py" "$(dirname "$0")/figure_width_check.py" "$out/png" "$out/ab" "$out/two"
echo "OK: ${#expect[@]} figure kinds as PNG and SVG, fallback for missing parameters, checked writes, two reports of one tool, --compare, no matplotlib, widths"
