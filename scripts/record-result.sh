#!/usr/bin/env bash
# Saves a measurement's output under docs/results/ and names it in docs/results/manifest.json,
# the list by which the docs generator (tools/docs-tables) finds the saved result of each
# role: a new measurement is a new manifest entry, not a change to the generator's code.
#
#   bash scripts/record-result.sh KEY SOURCE DEST [WHAT]
#
# KEY: the role (e.g. h200_ctest, streamk_probe; `python3 tools/docs-tables --list-results`
# lists them); SOURCE: the file to save (e.g. one that a device run brought back); DEST: its
# path under docs/results/ (e.g. h200-logs/ctest-1a2b3c4.log); WHAT: one line saying what the
# file holds and which command made it (kept from the old entry when left out).
# Then run python3 tools/docs-tables to regenerate the docs that quote it.
set -euo pipefail
if [ $# -lt 3 ] || [ $# -gt 4 ]; then
  echo "usage: bash scripts/record-result.sh KEY SOURCE DEST [WHAT]" >&2
  exit 2
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
key=$1 source=$2 dest=$3 what=${4:-}
[[ "$key" =~ ^[a-z0-9_]+$ ]] || { echo "record-result.sh: KEY '$key' must be lower-case letters, digits and _" >&2; exit 2; }
[ -f "$source" ] || { echo "record-result.sh: $source is not a file" >&2; exit 2; }
case "$dest" in /*|*..*) echo "record-result.sh: DEST '$dest' must be a path inside docs/results/" >&2; exit 2 ;; esac
python3 - "$root/docs/results" "$key" "$source" "$dest" "$what" <<'PY'
import json, pathlib, shutil, sys
results, key, source, dest, what = sys.argv[1:]
results = pathlib.Path(results)
manifest = json.loads((results / "manifest.json").read_text())
old = manifest.get(key, {})
if not what and not old.get("what"):
    sys.exit(f"record-result.sh: '{key}' is a new role: give WHAT, one line saying what the file holds")
target = results / dest
target.parent.mkdir(parents=True, exist_ok=True)
if not (target.exists() and target.samefile(source)):
    shutil.copyfile(source, target)
manifest[key] = {"file": dest, "what": what or old["what"]}
(results / "manifest.json").write_text(json.dumps(dict(sorted(manifest.items())), indent=2) + "\n")
print(f"record-result.sh: {key} -> docs/results/{dest}")
PY
