#!/usr/bin/env python3
"""tg-graph import of the language-model fixtures (tests/onnx/lm, made by
tests/onnx/make_lm_fixtures.py), then tg-graph run on their inputs: the output must match
onnxruntime's ("out.y" in <name>.io.safetensors) within 1e-4 relative plus 1e-5 absolute,
the fixtures' tolerance (tests/onnx/onnx_fixture.h): both compute in f32 and differ in
summation order only, about 1e-6 of the values here.

    lm_import_test.py TG_GRAPH FIXTURE_DIR WORK_DIR NAME [NAME ...]
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_io_test import ATOL, RTOL, load  # noqa: E402


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, (r.stdout + r.stderr).strip()


def check(tool, fixtures, work, name):
    base = os.path.join(fixtures, name)
    graph = os.path.join(work, name + ".json")
    out = os.path.join(work, name + ".out.safetensors")
    rc, text = run([tool, "import", base + ".onnx", "-o", graph])
    if rc != 0:
        return f"tg-graph import exited {rc}: {text}"
    rc, text = run([tool, "run", graph, "--weights", os.path.join(work, name + ".safetensors"), "--inputs",
                    base + ".io.safetensors", "--outputs", out])
    if rc != 0:
        return f"tg-graph run exited {rc}: {text}"
    got = load(out)
    want_shape, want = load(base + ".io.safetensors")["out.y"]
    if len(got) != 1:
        return f"{len(got)} outputs written, 1 expected"
    (shape, values), = got.values()
    if list(shape) != list(want_shape):
        return f"output shape {shape}, onnxruntime's {want_shape}"
    bad = sum(1 for a, b in zip(values, want) if not abs(a - b) <= ATOL + RTOL * abs(b))
    worst = max(abs(a - b) for a, b in zip(values, want))
    print(f"{'FAIL' if bad else 'ok'} {name}: {len(values)} values, largest difference {worst:.3g}, "
          f"{bad} beyond {RTOL:g} relative + {ATOL:g}")
    return f"{bad} values differ" if bad else None


def main():
    tool, fixtures, work, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    os.makedirs(work, exist_ok=True)
    failed = 0
    for name in names:
        why = check(tool, fixtures, work, name)
        if why:
            print(f"FAIL {name}: {why}")
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
