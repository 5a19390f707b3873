"""check_matmul_precision.py REPORT cpu|gpu: tg-matmul --precision all's rows.

cpu: the CPU rows are fp32 only and a note says why there are no 16-bit CPU rows.
gpu: every precision has its rows at every n, with and without transfers, each with
TFLOP/s, max_abs_err and a pct_of_peak in (0, 100] past n = 0 (the device's dense peak at
its highest clock bounds any product)."""
import json
import sys

path, device = sys.argv[1], sys.argv[2]
r = json.load(open(path))
ms = [m for m in r["measurements"] if m["name"] == "matmul"]
cpu = [m for m in ms if m["params"]["backend"] == "cpu"]
fail = []
if not cpu or any(m["params"]["precision"] != "fp32" for m in cpu):
    fail.append("the CPU rows must exist and be fp32 only")
if not any(n["part"] == "matmul backend=cpu precision=bf16, fp16" for n in r.get("notes", [])):
    fail.append("no note on the CPU's 16-bit rows")
if device == "gpu":
    ns = sorted({m["params"]["n"] for m in cpu})
    for p in ("fp32", "tf32", "bf16", "fp16"):
        for n in ns:
            for tr in (False, True):
                rows = [m for m in ms if m["params"]["backend"] == "gpu" and m["params"]["precision"] == p
                        and m["params"]["n"] == n and m["params"]["transfers"] is tr]
                if len(rows) != 1:
                    fail.append(f"{len(rows)} gpu rows precision={p} n={n} transfers={tr} (1 expected)")
                    continue
                x = rows[0]["extra"]
                missing = [k for k in ("TFLOP/s", "max_abs_err", "pct_of_peak") if k not in x]
                if missing:
                    fail.append(f"precision={p} n={n} transfers={tr}: no {', '.join(missing)}")
                elif n and not 0 < x["pct_of_peak"] <= 100:
                    fail.append(f"precision={p} n={n} transfers={tr}: pct_of_peak {x['pct_of_peak']} not in (0, 100]")
if fail:
    sys.exit(f"{path}:\n  " + "\n  ".join(fail))
print(f"{path}: the {device} rows of every precision are as expected")
