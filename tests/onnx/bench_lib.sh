# Sourced by the tg-graph bench tests (run from the repository root): the report checks
# they share. Needs $report, the tg-report binary.

validate() {  # validate FILE: tg-report reads it back; the JSON Schema holds where jsonschema is installed
  "$report" markdown "$1" > /dev/null
  if py=$(bash tests/jsonschema_python.sh 2>/dev/null); then
    "$py" -c 'import json, sys, jsonschema
jsonschema.validate(json.load(open(sys.argv[1])), json.load(open("docs/report.schema.json")))' "$1"
  fi
}
has() {  # has FILE NAME KEY=VALUE...: a measurement of that name whose params include those
  python3 - "$@" <<'PY'
import json, sys
path, name, *kv = sys.argv[1:]
want = dict(x.split("=", 1) for x in kv)
ms = [m for m in json.load(open(path))["measurements"] if m["name"] == name
      and all(str(m["params"].get(k)) == v for k, v in want.items())]
if not ms:
    sys.exit(f"{path}: no {name} with {want}")
PY
}
paired() {  # paired TRAIN_REPORT BENCH_REPORT OUT ROW: tg-report compare pairs tg-train's batch-32
  # training rows with the bench's without --pair; ROW (a grep pattern) is one of the pairs
  local rc=0
  "$report" compare "$1" "$2" > "$3" || rc=$?
  [ "$rc" -le 1 ] || { echo "tg-report compare $1 $2 exited $rc"; exit 1; }
  grep -q "$4" "$3" || { echo "no pair $4 in $3:"; cat "$3"; exit 1; }
  if grep "^iteration .*batch=32 .*mode=train" "$3" | grep -q "missing in B"; then
    echo "tg-train's mlp rows found no bench rows:"; cat "$3"; exit 1
  fi
}
