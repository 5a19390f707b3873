#!/usr/bin/env bash
# External data is read from the model's folder and nowhere else, and only the bytes a
# tensor names: each case lays out a folder with a model of make_models.py and its data
# (real files, symbolic links out of and inside the folder, a loop, a sparse file far
# larger than memory) and runs `tg-graph import` on it.
#   external_data_test.sh TG_GRAPH MODELS_DIR WORK_DIR
set -u
tool=$1 models=$2 work=$3
failures=0 checks=0
pass() { checks=$((checks + 1)); echo "ok: $1"; }
fail() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAILED: $1"; }

# A fresh case folder holding a copy of MODEL; prints its path.
layout() {
  local dir="$work/$1"
  rm -rf "$dir" && mkdir -p "$dir/out" && cp "$models/$2" "$dir/model.onnx" && echo "$dir"
}
# 48 bytes: the 3 x 4 float weight, each 1.5 (random bytes could spell a NaN, which import refuses).
weight_bytes() { printf '\x00\x00\xc0\x3f%.0s' {1..12} >"$1"; }

# import DIR WHAT [FRAGMENT]: without FRAGMENT the import must succeed; with it, it must
# exit 2 with FRAGMENT on stderr, nothing on stdout and nothing written.
import() {
  local dir=$1 what=$2 fragment=${3:-} rc
  "$tool" import "$dir/model.onnx" -o "$dir/out/g.json" >"$dir/stdout" 2>"$dir/stderr"; rc=$?
  if [ -z "$fragment" ]; then
    if [ "$rc" -eq 0 ] && [ -s "$dir/out/g.json" ] && [ -s "$dir/out/g.safetensors" ]; then pass "$what"
    else fail "$what: exit $rc; stderr: $(head -c 2000 "$dir/stderr")"; fi
  elif [ "$rc" -ne 2 ]; then fail "$what: exit $rc, expected 2; stderr: $(head -c 2000 "$dir/stderr")"
  elif ! grep -qF -- "$fragment" "$dir/stderr"; then fail "$what: stderr lacks '$fragment': $(head -c 2000 "$dir/stderr")"
  elif [ -s "$dir/stdout" ]; then fail "$what: a refused import printed on stdout"
  elif [ -n "$(ls -A "$dir/out")" ]; then fail "$what: a refused import left $(ls -A "$dir/out")"
  else pass "$what"; fi
}

mkdir -p "$work/outside"
weight_bytes "$work/outside/secret.bin"
mkdir -p "$work/outside/data" && weight_bytes "$work/outside/data/w.bin"

d=$(layout plain beside.onnx); weight_bytes "$d/weights.bin"
import "$d" "a data file beside the model is read"

d=$(layout link_file_out beside.onnx); ln -s "$work/outside/secret.bin" "$d/weights.bin"
import "$d" "a link to a file outside the folder is refused" "leads outside the model's folder"

d=$(layout link_folder_out in_folder.onnx); ln -s "$work/outside/data" "$d/data"
import "$d" "a link to a folder outside is refused" "leads outside the model's folder"

d=$(layout link_inside in_folder.onnx); mkdir -p "$d/data"; weight_bytes "$d/real.bin"; ln -s ../real.bin "$d/data/w.bin"
import "$d" "a link that stays inside the folder is followed"

d=$(layout loop beside.onnx); ln -s weights.bin "$d/weights.bin"
import "$d" "a link to itself is named a loop" "loop of symbolic links"

d=$(layout missing beside.onnx)
import "$d" "a missing data file is named" "does not exist"

d=$(layout folder beside.onnx); mkdir "$d/weights.bin"
import "$d" "a folder in place of the data file is refused" "is not a regular file"

# 64 GiB, sparse, with the weight at offset 4096: reading the whole file would need more
# memory than the machine has; reading the tensor's 48 bytes needs none.
d=$(layout sparse at_offset.onnx)
if truncate -s 64G "$d/weights.bin" 2>/dev/null; then
  weight_bytes "$d/w48" && dd if="$d/w48" of="$d/weights.bin" bs=1 seek=4096 conv=notrunc status=none && rm "$d/w48"
  import "$d" "only the tensor's bytes of a 64 GiB sparse data file are read"
  rm -f "$d/weights.bin"
else
  echo "skipped: this file system makes no sparse 64 GiB file"
fi

d=$(layout short at_offset.onnx); head -c 4100 /dev/zero >"$d/weights.bin"
import "$d" "a range past the end of the data file is refused" "runs past the end"

# An output over the data file the model reads: refused, the data left as it was.
d=$(layout over_data beside.onnx); weight_bytes "$d/weights.bin"; cp "$d/weights.bin" "$d/weights.orig"
"$tool" import "$d/model.onnx" -o "$d/out/g.json" --weights "$d/weights.bin" >"$d/stdout" 2>"$d/stderr"; rc=$?
if [ "$rc" -eq 2 ] && grep -qF "external data" "$d/stderr" && cmp -s "$d/weights.bin" "$d/weights.orig" &&
   [ -z "$(ls -A "$d/out")" ]; then pass "--weights over the model's external data is refused"
else fail "--weights over the model's external data: exit $rc, $(head -c 2000 "$d/stderr")"; fi

# The model path itself a loop: named as one, not as a missing file.
d="$work/model_loop"; rm -rf "$d" && mkdir -p "$d" && ln -s model.onnx "$d/model.onnx"
out=$("$tool" import "$d/model.onnx" -o "$d/g.json" 2>&1); rc=$?
if [ "$rc" -eq 2 ] && grep -qF "a loop of symbolic links" <<<"$out"; then pass "a model path that loops is named a loop"
else fail "a model path that loops: exit $rc: $out"; fi

echo "$((checks - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
