#!/usr/bin/env bash
# Round three's hostile inputs, by class (docs/reliability.md, "Round three"): ONNX models,
# weights files and command lines for `tg-graph import` and `tg-graph bench`, made in a
# temp folder. Each case says what a well-behaved tg-graph does with it: `refuse` (exit 2,
# a message on stderr that holds the case's fragment, nothing on stdout, no file left beside
# the outputs, stderr printable and under 20,000 bytes), `accept` (exit 0), or `nonzero`
# (any exit but 0, without a crash or an internal error). The graph and weights files the
# bench cases read are copied afresh for each case, so a case that overwrites one cannot
# spoil the next. `nonzero` is for a failed stdout. Per case the verdict, the exit status and stderr's first line;
# per class the count that behaved. docs/results/hostile-onnx-inputs.txt holds the table
# for a tg-graph from before the round and for the current one.
#
#   bash scripts/hostile-onnx-inputs.sh [TG_GRAPH]   (default build/cpu-only/tools/tg-graph/tg-graph)
#
# Needs python3 with the onnx package (pip install onnx) to write the models.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tool="$(realpath -m "${1:-$root/build/cpu-only/tools/tg-graph/tg-graph}")"
if [ ! -x "$tool" ]; then
  echo "usage: bash scripts/hostile-onnx-inputs.sh [TG_GRAPH]   ($tool is not an executable)" >&2
  exit 2
fi
python3 -c "import onnx" 2>/dev/null || { echo "hostile-onnx-inputs.sh: needs python3's onnx package (pip install onnx)" >&2; exit 2; }
work="$(mktemp -d /tmp/tg-hostile-onnx.XXXXXX)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/m" "$work/outside"

python3 - "$work" <<'PY'
import os, struct, sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

d = sys.argv[1]
m = os.path.join(d, "m")
def vi(name, dims, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, dims)
def save(name, nodes, inputs, outputs, inits=(), opsets=(("", 17),), check=False):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    model = helper.make_model(g, producer_name="hostile", opset_imports=[helper.make_opsetid(a, b) for a, b in opsets])
    with open(os.path.join(m, name), "wb") as f:
        f.write(model.SerializeToString())
def w(name, *dims):
    return numpy_helper.from_array(np.ones(dims, dtype=np.float32), name)
def external(name, location):
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[3, 4], data_location=TensorProto.EXTERNAL)
    for k, v in (("location", location), ("offset", "0"), ("length", "48")):
        e = t.external_data.add(); e.key, e.value = k, v
    save(name, [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [vi("x", [2, 3])], [vi("y", [2, 4])], [t])
relu = lambda i, o, n="r": helper.make_node("Relu", [i], [o], name=n)

# 1. security: external data
external("ext_link_file.onnx", "weights.bin")
external("ext_link_folder.onnx", "data/w.bin")
# 2. crashes
save("tanh_no_input.onnx", [helper.make_node("Tanh", [], ["y"], name="t")], [vi("x", [2, 3])], [vi("y", [2, 3])])
save("pow_no_output.onnx", [helper.make_node("Pow", ["x", "x"], [], name="p"), relu("x", "y")], [vi("x", [2, 3])], [vi("y", [2, 3])])
save("sqrt_no_output.onnx", [helper.make_node("Sqrt", ["x"], [], name="s"), relu("x", "y")], [vi("x", [2, 3])], [vi("y", [2, 3])])
save("reshape_wrap.onnx", [helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")], [vi("x", [2, 3])], [vi("y", [6])],
     [numpy_helper.from_array(np.array([2**62, 4, -1], dtype=np.int64), "s")])
# 3. invalid models
save("opset_9999.onnx", [relu("x", "y")], [vi("x", [2])], [vi("y", [2])], opsets=(("", 9999),))
save("opset_twice.onnx", [relu("x", "y")], [vi("x", [2])], [vi("y", [2])], opsets=(("", 13), ("", 17)))
save("shadow_input.onnx", [relu("x", "x")], [vi("x", [2])], [vi("x", [2])])
save("shadow_output.onnx", [relu("x", "y", "a"), relu("x", "y", "b")], [vi("x", [2])], [vi("y", [2])])
save("empty_output_name.onnx", [relu("x", "", "r"), relu("x", "y", "s")], [vi("x", [2])], [vi("y", [2])])
gemm = helper.make_node("Gemm", ["x", "w"], ["y"], name="g")
gemm.attribute.append(helper.make_attribute("transB", 1.0))
# Square, so that a transB read as 0 imports without a shape error, the weight untransposed.
save("gemm_transb_float.onnx", [gemm], [vi("x", [2, 4])], [vi("y", [2, 4])], [w("w", 4, 4)])
save("layernorm_eps_inf.onnx", [helper.make_node("LayerNormalization", ["x", "g"], ["y"], name="ln", epsilon=float("inf"))],
     [vi("x", [2, 4])], [vi("y", [2, 4])], [w("g", 4)])
save("double_1e300.onnx", [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [vi("x", [2, 3])], [vi("y", [2, 4])],
     [numpy_helper.from_array(np.full((3, 4), 1e300, dtype=np.float64), "w")])
# 4. limits
save("dim_2_40.onnx", [relu("x", "y")], [vi("x", [2**40, 2])], [vi("y", [2**40, 2])])
save("symbolic.onnx", [relu("x", "y")], [vi("x", ["batch", 4])], [vi("y", ["batch", 4])])
save("relu.onnx", [relu("x", "y")], [vi("x", [2, 3])], [vi("y", [2, 3])])
# 6. output hygiene: names of refused nodes and of notes
save("ansi_node_name.onnx", [helper.make_node("Hardmax", ["x"], ["y"], name="\x1b[2J\x1b[31mred\nforged: line")],
     [vi("x", [1, 1, 4, 4])], [vi("y", [1, 1, 4, 4])], [])
save("name_10mb.onnx", [helper.make_node("Hardmax", ["x"], ["y"], name="n" * 10_000_000)],
     [vi("x", [1, 1, 4, 4])], [vi("y", [1, 1, 4, 4])], [])
note = helper.make_node("Gemm", ["x", "\x1b[31mw\nnote: forged"], ["y"], name="g", transB=1)
save("ansi_note.onnx", [note], [vi("x", [2, 4])], [vi("y", [2, 3])], [w("\x1b[31mw\nnote: forged", 3, 4)])
# 7. scale: a chain of 30,000 Relu nodes
save("chain_30k.onnx", [relu("x" if i == 0 else f"v{i}", f"v{i+1}" if i < 29_999 else "y", f"r{i}") for i in range(30_000)],
     [vi("x", [2, 3])], [vi("y", [2, 3])])
# Names that are not UTF-8: protobuf's Python API refuses them, so the bytes are patched in.
raw = open(os.path.join(m, "relu.onnx"), "rb").read()
open(os.path.join(m, "bad_utf8_name.onnx"), "wb").write(raw.replace(b"\x12\x01y", b"\x12\x01\xff", 1).replace(b"\x0a\x01y", b"\x0a\x01\xff"))
# Weights files for bench: a header nested 100,000 levels, one with a NUL and text after it.
def safetensors(name, header):
    header += b" " * (-(8 + len(header)) % 8)
    open(os.path.join(d, name), "wb").write(struct.pack("<Q", len(header)) + header)
safetensors("deep.safetensors", b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}")
safetensors("nul.safetensors", b'{}\x00{"a":1}')
PY

# The folders external data may not leave: links to a file and a folder outside.
head -c 48 /dev/zero >"$work/outside/secret.bin"
mkdir -p "$work/outside/data" && head -c 48 /dev/zero >"$work/outside/data/w.bin"
ln -s "$work/outside/secret.bin" "$work/m/weights.bin"
ln -s "$work/outside/data" "$work/m/data"
ln -s loop.onnx "$work/m/loop.onnx"

printf '%-8s %-44s %-8s %-8s %-5s %s\n' class case expect verdict exit "stderr, first line (cut at 110 bytes)"
declare -A behaved total
# run CLASS NAME EXPECT FRAGMENT STDOUT(file|full) ARGS...: one case, from the folder $work (short
# names in messages), with $case_env (VAR=VALUE) in its environment when set.
run() {
  local class=$1 name=$2 expect=$3 fragment=$4 mode=$5
  shift 5
  rm -rf "$work/o" && mkdir -p "$work/o"
  cp "$root/tests/onnx/mlp.json" "$root/tests/onnx/mlp.safetensors" "$work/"
  local rc=0 verdict=ok
  case "$mode" in
    file) (cd "$work" && timeout 60 env ${case_env:-} "$tool" "$@") >"$work/stdout" 2>"$work/stderr" || rc=$? ;;
    full) (cd "$work" && timeout 60 env ${case_env:-} "$tool" "$@") >/dev/full 2>"$work/stderr" || rc=$?; : >"$work/stdout" ;;
  esac
  local err_bytes ctrl
  err_bytes=$(wc -c <"$work/stderr")
  ctrl=$(LC_ALL=C tr -d '\n\040-\176' <"$work/stderr" | wc -c)
  if [ "$rc" -ge 124 ] || grep -qE "internal error|terminate called|Sanitizer|Segmentation" "$work/stderr"; then
    verdict="crash/hang/internal"
  elif [ "$err_bytes" -gt 20000 ] || [ "$ctrl" -gt 0 ]; then
    verdict="raw or uncapped output"
  else
    case "$expect" in
      refuse)
        if [ "$rc" -ne 2 ]; then verdict="exit $rc, not 2"
        elif ! grep -qF -- "$fragment" "$work/stderr"; then verdict="other message"
        elif [ -s "$work/stdout" ]; then verdict="stdout on refusal"
        elif [ -n "$(ls -A "$work/o")" ]; then verdict="left $(ls -A "$work/o" | head -1)"; fi ;;
      accept) [ "$rc" -eq 0 ] || verdict="exit $rc, not 0" ;;
      nonzero) [ "$rc" -ne 0 ] || verdict="exit 0" ;;
    esac
  fi
  total[$class]=$((${total[$class]:-0} + 1))
  [ "$verdict" = ok ] && behaved[$class]=$((${behaved[$class]:-0} + 1))
  local first
  first="$(set +o pipefail; head -n 1 "$work/stderr" | head -c 110 | LC_ALL=C tr -c '\040-\176' '?')"
  printf '%-8s %-44s %-8s %-8s %-5s %s\n' "$class" "$name" "$expect" "${verdict// /_}" "$rc" "$first"
}

run 1 "external data: a link to a file outside" refuse "outside the model's folder" file import m/ext_link_file.onnx -o o/g.json
run 1 "external data: a link to a folder outside" refuse "outside the model's folder" file import m/ext_link_folder.onnx -o o/g.json
run 2 "Tanh without an input" refuse "'t'" file import m/tanh_no_input.onnx -o o/g.json
run 2 "Pow without an output" refuse "'p'" file import m/pow_no_output.onnx -o o/g.json
run 2 "Sqrt without an output" refuse "'s'" file import m/sqrt_no_output.onnx -o o/g.json
run 2 "Reshape whose dims wrap int64" refuse "'rs'" file import m/reshape_wrap.onnx -o o/g.json
run 2 "weights header nested 100,000 levels" refuse 'deep.safetensors' file bench mlp.json --weights deep.safetensors --device cpu --quick
run 3 "opset 9999" refuse 'opset' file import m/opset_9999.onnx -o o/g.json
run 3 "two opsets for the default domain" refuse 'opset' file import m/opset_twice.onnx -o o/g.json
run 3 "a node output shadows a graph input" refuse "'x'" file import m/shadow_input.onnx -o o/g.json
run 3 "two nodes write one value" refuse "'y'" file import m/shadow_output.onnx -o o/g.json
run 3 "an empty output name" refuse "'r'" file import m/empty_output_name.onnx -o o/g.json
run 3 "Gemm transB given as a float" refuse 'transB' file import m/gemm_transb_float.onnx -o o/g.json
run 3 "LayerNormalization epsilon inf" refuse 'epsilon' file import m/layernorm_eps_inf.onnx -o o/g.json
run 3 "a double initializer of 1e300" refuse "'w'" file import m/double_1e300.onnx -o o/g.json
run 3 "a weights header with text after a NUL" refuse 'NUL' file bench mlp.json --weights nul.safetensors --device cpu --quick
run 4 "an input dim of 2^40" refuse "'x'" file import m/dim_2_40.onnx -o o/g.json
run 4 "--dim batch=10000000000000" refuse "'x'" file import m/symbolic.onnx -o o/g.json --dim batch=10000000000000
run 4 "names that are not UTF-8" refuse 'UTF-8' file import m/bad_utf8_name.onnx -o o/g.json
run 5 "-o in a folder that does not exist" refuse 'o/missing/g.json' file import m/relu.onnx -o o/missing/g.json --weights o/w.safetensors
run 5 "import > /dev/full" nonzero '' full import m/relu.onnx -o o/g.json
run 5 "bench --json names the graph file" refuse 'mlp.json' file bench mlp.json --device cpu --quick --json mlp.json
run 5 "bench --batch 2 2" refuse '--batch' file bench mlp.json --device cpu --quick --batch 2 2
run 5 "--dim given twice" refuse 'batch' file import m/symbolic.onnx -o o/g.json --dim batch=2 --dim batch=3
run 5 "--dim of no dim of the model" refuse 'nosuch' file import m/symbolic.onnx -o o/g.json --dim batch=2 --dim nosuch=3
run 5 "--params key given twice" refuse 'k' file bench mlp.json --device cpu --quick --params k=1,k=2
run 6 "a refused node named with ANSI escapes" refuse 'Hardmax' file import m/ansi_node_name.onnx -o o/g.json
run 6 "a refused node with a 10 MB name" refuse 'Hardmax' file import m/name_10mb.onnx -o o/g.json
run 6 "a note naming an initializer with escapes" accept '' file import m/ansi_note.onnx -o o/g.json
run 7 "30,000 nodes in under 60 s" accept '' file import m/chain_30k.onnx -o o/g.json
run 8 "a model path that is a loop of links" refuse 'loop of symbolic links' file import m/loop.onnx -o o/g.json
case_env=TG_SMALL_GEMM=yes run 8 "TG_SMALL_GEMM=yes" refuse 'TG_SMALL_GEMM' file bench mlp.json --device cpu --quick
case_env=TG_CUDA_OPTIONS=small_gemm=yes run 8 "TG_CUDA_OPTIONS=small_gemm=yes" refuse 'small_gemm' file bench mlp.json --device cpu --quick
echo
printf '%-8s %s\n' class "behaved"
for c in 1 2 3 4 5 6 7 8; do printf '%-8s %s of %s\n' "$c" "${behaved[$c]:-0}" "${total[$c]:-0}"; done
