#!/usr/bin/env bash
# The broken-report corpus against docs/report.schema.json, with Python's jsonschema:
# base.json must be valid; every file of reports/beyond_schema.txt must be valid too
# (the C++ reader refuses it by a rule a schema cannot state: tg_bad_report:* checks
# that); every other file of reports/expected.txt must be rejected, by the schema or as
# not JSON. So the C++ validator's rules and the schema cannot drift apart unnoticed in
# either direction. Exit 77 (ctest: skipped) without jsonschema.
set -euo pipefail
schema=$1 dir=$2
py=$(bash "$(dirname "$0")/../jsonschema_python.sh") || exit 77
"$py" - "$schema" "$dir" <<'PY'
import json, math, os, sys
import jsonschema

schema = json.load(open(sys.argv[1]))
d = sys.argv[2]
validator = jsonschema.Draft202012Validator(schema)

def listed(name):
    out = []
    for line in open(os.path.join(d, name), encoding="utf-8"):
        if line.strip() and not line.startswith("#"):
            out.append(line.split("\t")[0])
    return out

def finite(x):
    if isinstance(x, float) and not math.isfinite(x):
        raise ValueError(f"{x} is not a finite number")
    return x

def problem(path):
    """None when the file is JSON and valid against the schema, else why not."""
    try:
        text = open(path, encoding="utf-8").read()  # strict UTF-8
        # JSON has no NaN, Infinity or 1e400; Python would read them.
        value = json.loads(text, parse_constant=lambda c: finite(float(c)), parse_float=lambda s: finite(float(s)))
    except (ValueError, RecursionError) as e:
        return f"not JSON: {str(e)[:80]}"
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    return f"schema: {errors[0].message[:80]}" if errors else None

failures = []
beyond = set(listed("beyond_schema.txt"))
expected = listed("expected.txt")
for name in sorted(beyond - set(expected)):
    failures.append(f"{name}: in beyond_schema.txt but not in expected.txt")
if problem(os.path.join(d, "base.json")) is not None:
    failures.append(f"base.json: {problem(os.path.join(d, 'base.json'))}")
for name in expected:
    why = problem(os.path.join(d, name))
    if name in beyond and why is not None:
        failures.append(f"{name}: listed as beyond the schema, but the schema rejects it ({why})")
    if name not in beyond and why is None:
        failures.append(f"{name}: the C++ reader refuses it, the schema accepts it: add the rule to "
                        "docs/report.schema.json, or list the file in beyond_schema.txt with the reason")
for f in failures:
    print("FAIL:", f)
if failures:
    sys.exit(1)
print(f"OK: base.json valid; {len(expected) - len(beyond)} files rejected by the schema too, "
      f"{len(beyond)} accepted by it and refused by the reader's extra rules")
PY
