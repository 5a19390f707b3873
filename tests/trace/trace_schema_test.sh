#!/usr/bin/env bash
# A tg-launch trace validated against docs/trace.schema.json with Python's jsonschema (exit 77,
# skipped, without it); a trace that breaks the schema must fail it.
set -euo pipefail
src=$1 out=$2
py=$(bash "$src/tests/jsonschema_python.sh") || exit 77
rm -rf "$out" && mkdir -p "$out"
"$TG_LAUNCH" --device cpu --quick --ops 10 --trace "$out/t.json" >/dev/null 2>&1
"$py" "$src/tests/trace/check_trace.py" "$out/t.json" --backend cpu --schema "$src/docs/trace.schema.json"
"$py" - "$out/t.json" "$out/bad.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
for e in t["traceEvents"]:
    if e["ph"] == "X":
        del e["dur"]
        break
json.dump(t, open(sys.argv[2], "w"))
PY
if "$py" "$src/tests/trace/check_trace.py" "$out/bad.json" --schema "$src/docs/trace.schema.json" >/dev/null 2>&1; then
  echo "FAIL: a span without dur passed the schema"; exit 1
fi
echo "OK: valid against docs/trace.schema.json; a span without dur is refused"
