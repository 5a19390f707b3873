#!/usr/bin/env bash
# Validates real tg-noop reports (device auto and cpu) against docs/report.schema.json
# with Python's jsonschema. Exit 77 (ctest: skipped) with the reason when the module
# is missing; the C++ structural validator in report_test.cpp runs regardless.
set -euo pipefail
schema=$1 out=$2
py=$(bash "$(dirname "$0")/../jsonschema_python.sh") || exit 77
mkdir -p "$out"
for dev in auto cpu; do
  rm -f "$out/noop_$dev.json" "$out/noop_$dev.csv"
  "$TG_NOOP" --quick --device "$dev" --json "$out/noop_$dev.json" --csv "$out/noop_$dev.csv" >/dev/null
  "$py" - "$schema" "$out/noop_$dev.json" "$out/noop_$dev.csv" <<'PY'
import csv, json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
report = json.load(open(sys.argv[2]))
jsonschema.validate(report, schema, cls=jsonschema.Draft202012Validator)
rows = list(csv.DictReader(open(sys.argv[3])))
names = [m["name"] for m in report["measurements"]]
assert [r["name"] for r in rows] == names, (rows, names)
for r, m in zip(rows, report["measurements"]):
    assert float(r["median"]) == m["median"], (r["median"], m["median"])
assert report["tool"]["name"] == "tg-noop"
assert len(names) >= 2, names
print(f"{sys.argv[2]}: valid against the schema; {len(names)} measurements, CSV rows match")
PY
done
