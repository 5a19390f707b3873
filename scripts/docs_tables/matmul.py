"""docs/matmul.md: the CPU vs GPU matmul sweep of tg-matmul and its plot. matmul_rows
is shared with readme.py's summary table."""
from . import common
from .common import num, report, t, table
from .plotting import save


def matmul_rows(r):
    cpu = {m["params"]["n"]: m for m in r.all("matmul", backend="cpu")}
    return sorted(cpu), cpu


def tab_matmul_sweep():
    r = report("matmul")
    ns, cpu = matmul_rows(r)
    series = [("fp32", False), ("fp32", True), ("tf32", False), ("tf32", True)]
    rows = []
    for n in ns:
        unit = " TFLOP/s" if n == min(k for k in ns if k) else ""
        row = [n, t(cpu[n]["median"]) + (f" ({num(cpu[n]['extra']['TFLOP/s'])}{unit})" if n else "")]
        for prec, tr in series:
            m = r.one("matmul", backend="gpu", n=n, precision=prec, transfers=tr)
            row.append(t(m["median"]) + (f" ({num(m['extra']['TFLOP/s'])})" if n else ""))
        rows.append(row)
    return table(["n", "CPU fp32", "GPU fp32", "GPU fp32 + transfers", "GPU TF32", "GPU TF32 + transfers"], rows)


def plots_matmul():
    r = report("matmul")  # "with transfers" reads better in the legend than the parameter's True
    ms = [dict(m, params=dict(m["params"], transfers="with transfers" if m["params"]["transfers"] else "no transfers"))
          for m in r.all("matmul")]
    return save("tg-matmul", common.PR.fig_matmul("tg-matmul", ms))


TABLES = {"matmul-sweep": tab_matmul_sweep}
PLOTTERS = {"matmul": plots_matmul}
