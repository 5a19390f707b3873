"""check_kernels_dtypes.py REPORT OPS: tg-kernels --dtypes all --ops OPS on a GPU.

For bf16 and f16, every op of OPS that has a kernel in that type has a row per size with
dtype=<type>, and its bytes are the element type's (a copy moves 2 x size_bytes whatever the
type: GB/s x median gives them back); cast has its rows from f32 to each type and back; the
ops without a kernel are named in a note. The f32 rows carry no dtype parameter."""
import json
import sys

F32_ONLY = {"fill", "sgd", "sgd_momentum", "sgd_momentum_multi", "cross_entropy_grad", "mse_loss",
            "layernorm_grad_gamma_beta"}
path, ops = sys.argv[1], sys.argv[2].split(",")
r = json.load(open(path))
ms, notes = r["measurements"], [n["part"] for n in r.get("notes", [])]
sizes = sorted({m["params"]["size_bytes"] for m in ms if m["name"] == "d2d_copy"})
fail = [] if sizes else ["no d2d_copy rows"]


def rows(name, **params):
    return [m for m in ms if m["name"] == name and all(m["params"].get(k) == v for k, v in params.items())]


for op in (o for o in ops if o != "cast"):
    for size in sizes:
        if len(rows(op, size_bytes=size, dtype=None)) != 1:
            fail.append(f"{op} size_bytes={size}: not one f32 row")
for dt in ("bf16", "f16"):
    low = [o for o in ops if o not in F32_ONLY and o != "cast"]
    for op in low:
        for size in sizes:
            found = rows(op, size_bytes=size, dtype=dt)
            if len(found) != 1:
                fail.append(f"{op} size_bytes={size} dtype={dt}: {len(found)} rows (1 expected)")
            elif op == "copy":
                moved = found[0]["extra"]["GB/s"] * 1e9 * found[0]["median"]
                if abs(moved - 2 * size) > 1e-6 * size:
                    fail.append(f"copy dtype={dt} size_bytes={size}: {moved:.0f} bytes moved, {2 * size} expected")
    skipped = [o for o in ops if o in F32_ONLY]
    if skipped and not any(n.endswith(f" dtype={dt}") and all(o in n for o in skipped) for n in notes):
        fail.append(f"no note naming {', '.join(skipped)} for dtype={dt}")
    if "cast" in ops:
        for a, b in (("f32", dt), (dt, "f32")):
            for size in sizes:
                if len(rows("cast", size_bytes=size, **{"from": a, "to": b})) != 1:
                    fail.append(f"cast from={a} to={b} size_bytes={size}: not one row")
if fail:
    sys.exit(f"{path}:\n  " + "\n  ".join(fail))
print(f"{path}: every dtype's rows of {','.join(ops)} are as expected")
