#!/usr/bin/env python3
"""tg-graph run on a user's own data: each committed ONNX fixture (its graph file, its weights)
run with --inputs <name>.io.safetensors, whose "x" is the input onnxruntime saw, and --outputs;
the written output must match onnxruntime's ("out.y" in the same file) within the fixtures'
tolerance (tests/onnx/onnx_fixture.h: 1e-4 relative plus 1e-5 absolute).

    run_io_test.py TG_GRAPH FIXTURE_DIR WORK_DIR [--import] NAME [NAME ...]

With --import, each <name>.onnx is imported into WORK_DIR first (tg-graph import) and that
graph file and its weights run: the fixtures whose weights are committed once, in the model.
"""
import json
import os
import struct
import subprocess
import sys
from array import array

RTOL, ATOL = 1e-4, 1e-5


def load(path):
    with open(path, "rb") as f:
        blob = f.read()
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "F32":
            raise SystemExit(f"{path}: tensor {name} is {t['dtype']}, not F32")
        start, end = t["data_offsets"]
        values = array("f")
        values.frombytes(data[start:end])
        if sys.byteorder != "little":
            values.byteswap()
        out[name] = (t["shape"], values)
    return out


def main():
    tool, fixtures, work, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    imported = names[:1] == ["--import"]
    names = names[1:] if imported else names
    os.makedirs(work, exist_ok=True)
    failed = 0
    for name in names:
        base = os.path.join(fixtures, name)
        graph = base
        if imported:
            graph = os.path.join(work, name)
            r = subprocess.run([tool, "import", base + ".onnx", "-o", graph + ".json"], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL {name}: tg-graph import exited {r.returncode}: {r.stderr.strip()}")
                failed += 1
                continue
        out = os.path.join(work, name + ".out.safetensors")
        r = subprocess.run([tool, "run", graph + ".json", "--weights", graph + ".safetensors", "--inputs",
                            base + ".io.safetensors", "--outputs", out], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL {name}: tg-graph run exited {r.returncode}: {r.stderr.strip()}")
            failed += 1
            continue
        got = load(out)
        want_shape, want = load(base + ".io.safetensors")["out.y"]
        if len(got) != 1:
            print(f"FAIL {name}: {len(got)} outputs written, 1 expected")
            failed += 1
            continue
        (shape, values), = got.values()
        if list(shape) != list(want_shape):
            print(f"FAIL {name}: output shape {shape}, onnxruntime's {want_shape}")
            failed += 1
            continue
        bad = sum(1 for a, b in zip(values, want) if not abs(a - b) <= ATOL + RTOL * abs(b))
        worst = max(abs(a - b) for a, b in zip(values, want))
        print(f"{'FAIL' if bad else 'ok'} {name}: {len(values)} values, largest difference {worst:.3g}, "
              f"{bad} beyond {RTOL:g} relative + {ATOL:g}")
        failed += bool(bad)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
