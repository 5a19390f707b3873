#!/usr/bin/env bash
# The hostile inputs too large to keep in tests/bad (a 10 MB name, 100,000 broken
# values, a 10 MB unterminated string), made in a temp folder and given to tg-graph:
# per case the exit status, the bytes on stdout and stderr, and stderr's first line
# (escaped by this script too, so the table is safe to cat). docs/reliability.md,
# "Round two (a)", quotes the table (docs/results/hostile-graph-inputs.txt).
#
#   bash scripts/hostile-graph-inputs.sh [TG_GRAPH]   (default build/cpu-only/tools/tg-graph/tg-graph)
#
# Needs python3 (to write the files). The `run` cases use tests/graphs/mlp.json (tiny)
# or a 4000 GiB graph that no machine can hold, so even a tg-graph from before these
# checks (which accepted --max-mib inf) allocates nothing large.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tool="$(realpath -m "${1:-$root/build/cpu-only/tools/tg-graph/tg-graph}")"
if [ ! -x "$tool" ]; then
  echo "usage: bash scripts/hostile-graph-inputs.sh [TG_GRAPH]   ($tool is not an executable)" >&2
  exit 2
fi
work="$(mktemp -d /tmp/tg-hostile.XXXXXX)"
trap 'rm -rf "$work"' EXIT

python3 - "$work" <<'PY'
import json, os, sys
d = sys.argv[1]
head = {"format": "twograph-graph", "version": 1}
def save(name, obj):
    with open(os.path.join(d, name), "w") as f:
        json.dump(obj, f)
big = "x" * 10_000_000
# A relu given its 10 MB input twice: an arity error that names the node and a 10 MB unknown value.
save("name_10mb.json", dict(head, inputs=[{"name": "a", "shape": [2]}],
     nodes=[{"name": "y", "op": "relu", "inputs": [big]}], outputs=[]))
save("print_10mb_name.json", dict(head, inputs=[{"name": big + "\u001b[2J\n", "shape": [2]}], nodes=[], outputs=[]))
save("errors_100k.json", dict(head, inputs=[{"name": f"x{i}", "shape": [2], "dtype": "bf16"} for i in range(100_000)],
     nodes=[], outputs=[]))
with open(os.path.join(d, "string_10mb.json"), "w") as f:
    f.write('{"format": "' + "z" * 10_000_000)
PY

printf '%-36s %-5s %-12s %-12s %s\n' case exit stdout_bytes stderr_bytes "stderr, first line (cut at 150 bytes)"
run() {  # run NAME STDOUT(redirect: file|full|closed) ARGS...
  local name=$1 mode=$2
  shift 2
  local out="$work/out" err="$work/err" rc=0
  case "$mode" in
    file) "$tool" "$@" >"$out" 2>"$err" || rc=$? ;;
    full) "$tool" "$@" >/dev/full 2>"$err" || rc=$?; : >"$out" ;;
    closed) "$tool" "$@" >&- 2>"$err" || rc=$?; : >"$out" ;;
  esac
  local first
  # head -c closes the pipe early on a long line: the writers' SIGPIPE is expected.
  first="$(set +o pipefail; head -n 1 "$err" | tr -d '\n' | head -c 150 | LC_ALL=C tr -c '\040-\176' '?')"
  printf '%-36s %-5s %-12s %-12s %s\n' "$name" "$rc" "$(wc -c <"$out")" "$(wc -c <"$err")" "$first"
  if [ "$name" = "print, 10 MB name" ]; then
    printf '%-36s %s\n' "  control bytes in that listing" "$(LC_ALL=C tr -d '\n\040-\176' <"$out" | wc -c)"
  fi
}
cd "$work"  # the made files by their short names in the messages
run "check, 10 MB name in an error" file check name_10mb.json
run "check, 100,000 validation errors" file check errors_100k.json
run "check, 10 MB unterminated string" file check string_10mb.json
run "print, 10 MB name" file print print_10mb_name.json
cd "$root"
run "run --max-mib inf" file run --max-mib inf "tests/graphs/mlp.json"
run "run --max-mib 1e400" file run --max-mib 1e400 "tests/graphs/mlp.json"
run "run --seed 2^64" file run --seed 18446744073709551616 "tests/graphs/mlp.json"
run "run, 4000 GiB graph, --max-mib 1e12" file run --max-mib 1e12 "tests/bad/cli/huge_total.json"
run "print > /dev/full" full print "tests/graphs/mlp.json"
run "dot, stdout closed" closed dot "tests/graphs/mlp.json"
