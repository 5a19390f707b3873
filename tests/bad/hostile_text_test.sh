#!/usr/bin/env bash
# Hostile text through a binary's messages and results: flag values, paths, model and
# graph names holding an ANSI escape, a line break that starts a forged line, invalid
# UTF-8, and strings of 10 MB (files) or 120 kB (flags: the system's limit on one
# argument is 128 kB). For every run: the exit code expected, the fragment on stderr,
# stdout and stderr printable ASCII and line breaks only (escaped: nothing a terminal
# acts on), no line starting with FORGED (no forged line), at most 20000 bytes on
# stderr and 64 kB on stdout (capped), and nothing written by a refused run.
#   hostile_text_test.sh import TG_GRAPH BAD_DIR ONNX_DIR WORK   (BAD_DIR/onnx holds the models,
#                                                                 from hostile_onnx.py)
#   hostile_text_test.sh bench TG_GRAPH BAD_DIR ONNX_DIR WORK
#   hostile_text_test.sh noop TG_NOOP BAD_DIR ONNX_DIR WORK
set -u
mode=$1 tool=$2 bad=$3 onnx=$4 parent=$5
mkdir -p "$parent"
dir=$(mktemp -d "$parent/hostile.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/out"

ANSI=$'\e[31mred\e[0m\e[2J'
FORGED=$'\nFORGED: ok'
BADUTF=$'bad\xff\xfe\xc0\x80utf8'
BIG=$(head -c 120000 /dev/zero | tr '\0' A)
failures=0

fail() {
  echo "FAIL: $*"
  echo "--- stderr (the first 3000 bytes):"; head -c 3000 "$dir/err"; echo
  echo "--- stdout (the first 3000 bytes):"; head -c 3000 "$dir/stdout"; echo
  failures=$((failures + 1))
}
# run RC FRAGMENT ARGS...: the tool with ARGS; a refused run (RC != 0) must print
# nothing on stdout and leave $dir/out empty.
run() {
  local rc=$1 fragment=$2
  shift 2
  rm -rf "$dir/out" && mkdir "$dir/out"
  timeout 120 "$tool" "$@" >"$dir/stdout" 2>"$dir/err"
  local got=$?
  local what="$mode: $(printf '%q ' "$@" | head -c 300)"
  [ "$got" -eq "$rc" ] || { fail "$what -> exit $got, expected $rc"; return; }
  if [ -n "$fragment" ]; then
    LC_ALL=C grep -qF -- "$fragment" "$dir/err" || { fail "$what -> stderr lacks '$fragment'"; return; }
  fi
  for f in stdout err; do
    local n
    n=$(LC_ALL=C tr -d '\n\040-\176' <"$dir/$f" | wc -c)
    [ "$n" -eq 0 ] || { fail "$what -> $n bytes on $f that are not printable ASCII"; od -c "$dir/$f" | grep -m 3 '\\033\|[0-9][0-9][0-9]'; return; }
    LC_ALL=C grep -q '^FORGED' "$dir/$f" && { fail "$what -> a forged line on $f"; return; }
  done
  local eb ob
  eb=$(wc -c <"$dir/err") ob=$(wc -c <"$dir/stdout")
  [ "$eb" -le 20000 ] || { fail "$what -> $eb bytes on stderr, more than 20000"; return; }
  [ "$ob" -le 65536 ] || { fail "$what -> $ob bytes on stdout, more than 64 kB"; return; }
  if [ "$rc" -ne 0 ]; then
    [ "$ob" -eq 0 ] || { fail "$what -> a refused run printed on stdout"; return; }
    [ -z "$(ls -A "$dir/out")" ] || { fail "$what -> a refused run left files: $(ls -A "$dir/out")"; return; }
  fi
  echo "ok: exit $got, stderr $eb bytes, stdout $ob bytes: $(head -c 160 "$dir/err" | tr '\n' ' ')"
}

case $mode in
import)
  m=$bad/onnx
  run 0 "" import "$m/hostile_names.onnx" -o "$dir/out/g.json"
  grep -qF 'note: Gemm' "$dir/stdout" || fail "import: the note naming the Gemm is missing"
  run 0 "" import "$m/hostile_names.onnx" -o "$dir/out/g${ANSI}${FORGED}${BADUTF}.json"
  run 2 "is not valid UTF-8" import "$m/hostile_utf8.onnx" -o "$dir/out/g.json"
  run 2 "(Hardmax):" import "$m/hostile_refused.onnx" -o "$dir/out/g.json"
  if python3 -c 'import onnx' 2>/dev/null; then
    python3 "$bad/hostile_onnx.py" --huge "$dir/huge.onnx" || fail "hostile_onnx.py --huge failed"
    run 2 "(a name of 100000" import "$dir/huge.onnx" -o "$dir/out/g.json"
  else
    echo "skipped: the 10 MB node name (python3 module onnx is missing)"
  fi
  run 2 "has no input dim of that name" import "$onnx/mlp.onnx" -o "$dir/out/g.json" --dim "b${ANSI}${FORGED}=2"
  run 2 "give NAME=N" import "$onnx/mlp.onnx" -o "$dir/out/g.json" --dim "b=${BADUTF}"
  run 2 "give NAME=N" import "$onnx/mlp.onnx" -o "$dir/out/g.json" --dim "${BIG}"
  run 2 "does not exist" import "$onnx/mlp.onnx" -o "$dir/out/x${FORGED}${ANSI}/g.json"
  run 2 "the name is too long" import "$onnx/mlp.onnx" -o "$dir/out/${BIG}.json"
  run 2 "--loss" import "$onnx/mlp.onnx" -o "$dir/out/g.json" --loss "${FORGED}${ANSI}${BADUTF}"
  run 2 "no such file" import "$dir/m${FORGED}${ANSI}${BADUTF}.onnx" -o "$dir/out/g.json"
  ;;
bench)
  quick=(--device cpu --quick --repetitions 2 --min-time 0 --loss-steps 2)
  run 0 "" bench "$bad/cli/hostile_names.json" "${quick[@]}"
  run 0 "" bench "$onnx/mlp.json" "${quick[@]}" --params "k=${ANSI}${FORGED}${BADUTF}"
  run 0 "" bench "$onnx/mlp.json" "${quick[@]}" --params "k=${BIG}"
  cp "$onnx/mlp.json" "$dir/m${ANSI}${FORGED}${BADUTF}.json"
  run 0 "" bench "$dir/m${ANSI}${FORGED}${BADUTF}.json" "${quick[@]}"
  run 2 "is given twice" bench "$onnx/mlp.json" "${quick[@]}" --params "${FORGED}=1,${FORGED}=2"
  run 2 "is not KEY=VALUE" bench "$onnx/mlp.json" "${quick[@]}" --params "${BIG}"
  run 2 "--batch" bench "$onnx/mlp.json" "${quick[@]}" --batch "2${FORGED}"
  run 2 "does not exist" bench "$onnx/mlp.json" "${quick[@]}" --json "$dir/out/x${FORGED}${BADUTF}/r.json"
  run 2 "no such file" bench "$dir/none${FORGED}${ANSI}.json" "${quick[@]}" --json "$dir/out/r.json"
  run 2 "graph has a cycle" bench "$bad/graphs/cycle.json" "${quick[@]}" --json "$dir/out/r.json"
  run 2 "relu 'r\\ntg-graph: ok: fake line'" bench "$bad/graphs/name_newline.json" "${quick[@]}"
  # 10 MB names in a graph file: one an extra output (named in a skip note), one a node
  # the loader refuses.
  big=$(head -c 10000000 /dev/zero | tr '\0' A)
  name="\\nFORGED: ok\\u001b[2J$big"
  printf '{"format": "twograph-graph", "version": 1, "inputs": [{"name": "x", "shape": [2]}], "nodes": [{"name": "p", "op": "relu", "inputs": ["x"]}, {"name": "%s", "op": "relu", "inputs": ["x"]}], "outputs": ["p", "%s"]}' \
    "$name" "$name" >"$dir/big_output.json"
  run 0 "" bench "$dir/big_output.json" "${quick[@]}"
  grep -qF "more bytes left out" "$dir/stdout" || fail "bench: the 10 MB output's name is not cut in the table"
  printf '{"format": "twograph-graph", "version": 1, "inputs": [{"name": "x", "shape": [2]}, {"name": "y", "shape": [3]}], "nodes": [{"name": "%s", "op": "add", "inputs": ["x", "y"]}], "outputs": ["x"]}' \
    "$name" >"$dir/big_refused.json"
  run 2 "(a name of 100000" bench "$dir/big_refused.json" "${quick[@]}" --json "$dir/out/r.json"
  ;;
noop)
  quick=(--device cpu --quick --repetitions 2 --min-time 0)
  run 0 "wrote" "${quick[@]}" --json "$dir/out/r${ANSI}${FORGED}${BADUTF}.json"
  run 2 "is not a device" --device "cpu${FORGED}${ANSI}${BADUTF}" --json "$dir/out/r.json"
  run 2 "is not a device" --device "${BIG}"
  run 2 "does not exist" "${quick[@]}" --json "$dir/out/x${FORGED}${ANSI}${BADUTF}/r.json"
  run 2 "the name is too long" "${quick[@]}" --csv "$dir/out/${BIG}.csv"
  run 2 "The following argument was not expected" "${quick[@]}" "--frobnicate${FORGED}${ANSI}${BADUTF}"
  run 2 "The following argument was not expected" "${quick[@]}" "--x${BIG}"
  run 2 "--repetitions" --device cpu --repetitions "1${FORGED}"
  run 2 "--fault must be none, sticky or oom" "${quick[@]}" --fault "${FORGED}${ANSI}${BADUTF}" --json "$dir/out/r.json"
  ;;
*)
  echo "unknown mode $mode"
  exit 1
  ;;
esac
[ "$failures" -eq 0 ] || { echo "$failures failures"; exit 1; }
echo "OK"
