#!/usr/bin/env bash
# The report's optional "error" against docs/report.schema.json, with Python's jsonschema.
#   cpu: a real tg-noop report plus each kind of "error" validates; a bad kind, a
#        missing message and a non-object are rejected.
#   gpu: the reports of tg-noop --fault sticky and --fault oom validate and carry
#        the right kind (docs/reliability.md, "Faults").
# Exit 77 (ctest: skipped) with the reason when the module or (gpu) the device is missing.
set -euo pipefail
mode=$1 schema=$2 out=$3
py=$(bash "$(dirname "$0")/../jsonschema_python.sh") || exit 77
mkdir -p "$out"
validate() {  # validate FILE [expected kind]: the report validates (and records that kind)
  "$py" - "$schema" "$@" <<'PY'
import json, sys
import jsonschema
schema, path = json.load(open(sys.argv[1])), sys.argv[2]
report = json.load(open(path))
jsonschema.validate(report, schema, cls=jsonschema.Draft202012Validator)
if len(sys.argv) > 3:
    assert report["error"]["kind"] == sys.argv[3], report.get("error")
    assert len(report["measurements"]) >= 2, report["measurements"]
print(f"{path}: valid against the schema" + (f", error kind {sys.argv[3]}" if len(sys.argv) > 3 else ""))
PY
}
if [ "$mode" = cpu ]; then
  "$TG_NOOP" --quick --device cpu --json "$out/base.json" >/dev/null 2>&1
  "$py" - "$schema" "$out/base.json" <<'PY'
import copy, json, sys
import jsonschema
schema, base = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
V = jsonschema.Draft202012Validator(schema)
for kind in ("sticky_cuda_error", "out_of_memory", "failure"):
    r = copy.deepcopy(base)
    r["error"] = {"kind": kind, "message": "what went wrong"}
    V.validate(r)
for bad in ({"kind": "oops", "message": "m"}, {"kind": "failure"}, {"message": "m"}, "failure"):
    r = copy.deepcopy(base)
    r["error"] = bad
    assert not V.is_valid(r), f"the schema accepted error = {bad!r}"
print("the schema accepts each error kind and rejects bad error objects")
PY
  exit 0
fi
if ! "$TG_NOOP" --list-devices 2>/dev/null | grep -qE '^[0-9]+ '; then
  echo "TG_SKIP: no CUDA device on this machine"
  exit 77
fi
for fault in sticky oom; do
  rm -f "$out/$fault.json"
  set +e
  "$TG_NOOP" --quick --device 0 --fault "$fault" --json "$out/$fault.json" >/dev/null 2>&1
  rc=$?
  set -e
  [ "$rc" = 1 ] || { echo "FAIL: tg-noop --fault $fault exited $rc, not 1"; exit 1; }
  kind=$([ "$fault" = sticky ] && echo sticky_cuda_error || echo out_of_memory)
  validate "$out/$fault.json" "$kind"
done
