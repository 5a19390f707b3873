#!/usr/bin/env bash
# A trace as tg-launch writes it on the CPU backend, read back as a reader of the trace-event
# format would (check_trace.py): lanes nest, no GPU lanes and the metadata says why, 1000 op
# spans in each dynamic iteration of the 1000-op chain. Then what tracing changes around it:
# the report's rows are flagged traced, tg-report compare refuses traced against untraced
# (exit 2) unless --allow-traced, bad trace flags are exit 2, and the checker itself fails a
# trace that breaks its rules.
set -euo pipefail
src=$1 out=$2
check="python3 $src/tests/trace/check_trace.py"
rm -rf "$out" && mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }

"$TG_LAUNCH" --device cpu --quick --ops 1000 --trace "$out/t.json" --trace-iterations 1 --json "$out/traced.json" \
  >/dev/null 2>"$out/launch.log" || { cat "$out/launch.log"; fail "tg-launch --trace"; }
grep -q "trace: .* events, GPU spans: none: the CPU backend" "$out/launch.log" || { cat "$out/launch.log"; fail "no trace summary on stderr"; }
$check "$out/t.json" --backend cpu --ops-per-iteration 1000

python3 - "$out/traced.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
untraced = [m["name"] for m in r["measurements"] if m.get("traced") is not True]
assert not untraced, f"rows not flagged traced: {untraced[:5]}"
print(f"{sys.argv[1]}: all {len(r['measurements'])} rows flagged traced")
PY

"$TG_LAUNCH" --device cpu --quick --ops 1000 --json "$out/untraced.json" >/dev/null 2>&1
rc=0
"$TG_REPORT" compare "$out/untraced.json" "$out/traced.json" >/dev/null 2>"$out/compare.log" || rc=$?
[ "$rc" -eq 2 ] || fail "compare untraced vs traced: exit $rc, expected 2"
grep -q "measured while a trace recorded in B" "$out/compare.log" && grep -q -- "--allow-traced" "$out/compare.log" \
  || { cat "$out/compare.log"; fail "the refusal does not say which side is traced and how to go on"; }
rc=0
"$TG_REPORT" compare "$out/untraced.json" "$out/traced.json" --allow-traced >"$out/allowed.txt" 2>&1 || rc=$?
[ "$rc" -le 1 ] || { cat "$out/allowed.txt"; fail "--allow-traced: exit $rc"; }
grep -q "WARNING (--allow-traced)" "$out/allowed.txt" || fail "--allow-traced compares without a warning"
"$TG_REPORT" compare "$out/traced.json" "$out/traced.json" >/dev/null || fail "two traced runs must compare"

expect_usage() {  # expect_usage MESSAGE ARGS...: exit 2 and the message on stderr
  local msg=$1; shift
  rc=0
  "$TG_LAUNCH" --device cpu --quick --ops 1 "$@" >/dev/null 2>"$out/usage.log" || rc=$?
  [ "$rc" -eq 2 ] && grep -q -- "$msg" "$out/usage.log" || { cat "$out/usage.log"; fail "$* : exit $rc, expected 2 with '$msg'"; }
}
expect_usage "give --trace FILE too" --trace-iterations 2
expect_usage "trace-iterations" --trace "$out/x.json" --trace-iterations 0
expect_usage "--trace" --trace "$out/same.json" --json "$out/same.json"
expect_usage "--trace" --trace "$out"

python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
base = {"displayTimeUnit": "ns", "otherData": {"tool": "t", "backend": "cpu", "device": "cpu", "gpu_spans": "none: x",
        "clock": "c", "trace_iterations": "1", "events": "2", "dropped_events": "0"}}
def span(name, ts, dur):
    return {"ph": "X", "name": name, "cat": "host", "pid": 1, "tid": 1, "ts": ts, "dur": dur}
json.dump(dict(base, traceEvents=[span("a", 0, 10), span("b", 5, 10)]), open(f"{d}/overlap.json", "w"))
json.dump(dict(base, traceEvents=[{"ph": "s", "name": "launch", "cat": "launch", "pid": 1, "tid": 1, "ts": 10, "id": 1},
                                  {"ph": "f", "name": "launch", "cat": "launch", "pid": 1, "tid": 1, "ts": 5, "id": 1, "bp": "e"}]),
          open(f"{d}/backward.json", "w"))
PY
for bad in overlap backward; do
  if $check "$out/$bad.json" 2>"$out/$bad.log"; then fail "check_trace accepted $bad.json"; fi
done
grep -q "without nesting" "$out/overlap.log" || fail "overlap message"
grep -q "before its launch" "$out/backward.log" || fail "backward flow message"
# The GPU rules on a trace shaped as a CUDA run writes it (no GPU here): every kernel after a launch.
python3 "$src/tests/trace/gpu_like_trace.py" "$out/gpu.json" 1000
$check "$out/gpu.json" --backend cuda --kernels-at-least 1000 --ops-per-iteration 1000
python3 "$src/tests/trace/gpu_like_trace.py" "$out/gpu-unlaunched.json" 10 drop-last-flow
if $check "$out/gpu-unlaunched.json" 2>"$out/unlaunched.log"; then fail "check_trace accepted a kernel without a launch"; fi
grep -q "has no launch flow" "$out/unlaunched.log" || fail "unlaunched kernel message"
echo "OK: CPU trace of a 1000-op chain checked, rows flagged traced, compare refuses mixed runs, bad flags exit 2"
