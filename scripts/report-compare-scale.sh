#!/usr/bin/env bash
# How long `tg-report compare` and `tg-report markdown` take on a report of N
# measurements (default 100000), compared with itself: the report is generated (valid
# against docs/report.schema.json, 3 samples each, params {i, kind}), then each command
# is timed once. Prints the file size and the seconds.
#   scripts/report-compare-scale.sh TG_REPORT [N]
set -eu
report=${1:?usage: report-compare-scale.sh TG_REPORT [N]}
n=${2:-100000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$work/big.json" "$n" <<'PY'
import json, sys
path, n = sys.argv[1], int(sys.argv[2])
def m(i):
    s = [1e-6 * (1 + i % 7), 1.1e-6 * (1 + i % 7), 1.2e-6 * (1 + i % 7)]
    return {"name": f"op_{i % 100}", "params": {"i": i, "kind": "even" if i % 2 == 0 else "odd"}, "unit": "s",
            "better": "lower", "timer": "host", "count": 3, "min": s[0], "p10": s[0] + 0.2 * (s[1] - s[0]),
            "median": s[1], "p90": s[1] + 0.8 * (s[2] - s[1]), "max": s[2], "mean": s[1], "noise": 0.09,
            "noisy": False, "extra": {}, "samples": s}
r = {"schema_version": 1,
     "tool": {"name": "tg-scale", "version": "0", "git_rev": "x", "build_type": "Release", "cuda_build": False},
     "run": {"command_line": "generated", "utc_time": "2026-12-03T00:00:00Z", "quick": False,
             "loop": {"warmup": 0, "min_reps": 3, "min_time_s": 0, "max_reps": 3}},
     "host": {"name": "h", "cpu_model": "c", "cpu_threads": 1},
     "device": {"spec": "cpu", "kind": "cpu", "id": -1, "name": "cpu"}, "gpus": [],
     "software": {"cuda_runtime_version": 0, "cuda_driver_version": 0, "cublas_version": 0,
                  "openblas_config": "", "blas_threads": 1},
     "measurements": [m(i) for i in range(n)], "notes": []}
json.dump(r, open(path, "w"))
PY
echo "report: $n measurements, $(du -m "$work/big.json" | cut -f1) MiB"
for cmd in compare markdown; do
  args=("$work/big.json")
  [ "$cmd" = compare ] && args=("$work/big.json" "$work/big.json")
  t0=$(date +%s%N)
  "$report" "$cmd" "${args[@]}" >"$work/out" 2>"$work/err"
  rc=$?
  t1=$(date +%s%N)
  echo "tg-report $cmd: exit $rc, $(awk -v ns=$((t1 - t0)) 'BEGIN { printf "%.2f", ns / 1e9 }') s, $(wc -l <"$work/out") lines$( [ "$cmd" = compare ] && echo ", $(grep -o '^[0-9]* compared' "$work/out")")"
done
