"""docs/matmul.md: the CPU vs GPU matmul sweep of tg-matmul, its plot and the values of
the prose. matmul_rows is shared with readme.py's summary table."""
from . import common
from .common import Missing, num, pct, report, t, table, x
from .plotting import save


def matmul_rows(r):
    cpu = {m["params"]["n"]: m for m in r.all("matmul", backend="cpu")}
    return sorted(cpu), cpu


def tab_matmul_sweep():
    r = report("matmul")
    ns, cpu = matmul_rows(r)
    series = [("fp32", False), ("fp32", True), ("tf32", False), ("tf32", True)]
    # bf16 and fp16 (without transfers) where the report has them.
    low = [p for p in ("bf16", "fp16") if r.all("matmul", backend="gpu", precision=p)]
    series += [(p, False) for p in low]
    rows = []
    for n in ns:
        unit = " TFLOP/s" if n == min(k for k in ns if k) else ""
        row = [n, t(cpu[n]["median"]) + (f" ({num(cpu[n]['extra']['TFLOP/s'])}{unit})" if n else "")]
        for prec, tr in series:
            m = r.one("matmul", backend="gpu", n=n, precision=prec, transfers=tr)
            row.append(t(m["median"]) + (f" ({num(m['extra']['TFLOP/s'])})" if n else ""))
        rows.append(row)
    return table(["n", "CPU fp32", "GPU fp32", "GPU fp32 + transfers", "GPU TF32", "GPU TF32 + transfers"]
                 + [f"GPU {p}" for p in low], rows)


def plots_matmul():
    r = report("matmul")
    return save("tg-matmul", common.PR.fig_matmul("tg-matmul", r.all("matmul"), r.r))


TABLES = {"matmul-sweep": tab_matmul_sweep}
PLOTTERS = {"matmul": plots_matmul}


# ---- values of the prose ---------------------------------------------------------------

def gpu_m(n, precision="fp32", transfers=False):
    return report("matmul").one("matmul", backend="gpu", n=n, precision=precision, transfers=transfers)


def cpu_m(n):
    return report("matmul").one("matmul", backend="cpu", n=n)


def top_n():
    return max(matmul_rows(report("matmul"))[0])


def first_n():
    return min(n for n in matmul_rows(report("matmul"))[0] if n)


def device_peak(precision):
    p = common.PR.peak_flops(common.gpu_of("matmul"), precision)
    if not p:
        raise Missing(f"{report('matmul').rel}: no {precision} peak known for this device")
    return p


def openblas_version():
    cfg = report("matmul").r.get("software", {}).get("openblas_config", "")
    parts = cfg.split()
    if len(parts) < 2 or parts[0] != "OpenBLAS":
        raise Missing(f"{report('matmul').rel}: software.openblas_config '{cfg}' names no OpenBLAS version")
    return parts[1]


def cublas_version():
    v = report("matmul").r.get("software", {}).get("cublas_version", 0)
    if not v:
        raise Missing(f"{report('matmul').rel}: no software.cublas_version")
    return f"{v // 10000}.{v // 100 % 100}"


def crossovers():
    return {int(m["median"]) for m in report("matmul").all("crossover_n")}


def tflops(m):
    return m["extra"]["TFLOP/s"]


VALUES = {
    "matmul.openblas": openblas_version,
    "matmul.cublas": cublas_version,
    "matmul.cpu_threads": lambda: str(int(report("matmul").one("cpu_threads", backend="cpu")["median"])),
    "matmul.top_n": lambda: str(top_n()),
    "matmul.cpu_top_time": lambda: t(cpu_m(top_n())["median"]),
    "matmul.cpu_top_tflops": lambda: num(tflops(cpu_m(top_n()))),
    "matmul.cpu_best_tflops": lambda: num(max(tflops(m) for m in report("matmul").all("matmul", backend="cpu")
                                              if m["params"]["n"])),
    "matmul.fp32_top": lambda: num(tflops(gpu_m(top_n()))),
    "matmul.fp32_top_pct": lambda: pct(tflops(gpu_m(top_n())) * 1e12 / device_peak("fp32")),
    "matmul.fp32_vs_cpu": lambda: x(gpu_m(top_n())["extra"]["speedup_vs_cpu"]),
    "matmul.tf32_top": lambda: num(tflops(gpu_m(top_n(), "tf32"))),
    "matmul.tf32_best": lambda: num(max(tflops(m) for m in report("matmul").all("matmul", backend="gpu",
                                                                               precision="tf32", transfers=False))),
    "matmul.tf32_best_n": lambda: str(max(report("matmul").all("matmul", backend="gpu", precision="tf32",
                                                               transfers=False), key=tflops)["params"]["n"]),
    "matmul.tf32_best_pct": lambda: pct(max(tflops(m) for m in report("matmul").all(
        "matmul", backend="gpu", precision="tf32", transfers=False)) * 1e12 / device_peak("tf32")),
    "matmul.tf32_over_fp32": lambda: x(gpu_m(top_n())["median"] / gpu_m(top_n(), "tf32")["median"]),
    "matmul.tf32_over_fp32_tr": lambda: x(gpu_m(top_n(), transfers=True)["median"]
                                          / gpu_m(top_n(), "tf32", True)["median"]),
    "matmul.fp32_peak": lambda: num(device_peak("fp32") / 1e12),
    "matmul.tf32_peak": lambda: num(device_peak("tf32") / 1e12),
    "matmul.crossover": lambda: " / ".join(str(n) for n in sorted(crossovers())),
    "matmul.first_n": lambda: str(first_n()),
    "matmul.first_cpu": lambda: t(cpu_m(first_n())["median"]),
    "matmul.first_gpu_tr": lambda: t(gpu_m(first_n(), transfers=True)["median"]),
    "matmul.first_flop": lambda: f"{2 * first_n()**3:.2g}".replace("e+0", "e").replace("e+", "e"),
    "matmul.n0_cpu": lambda: t(cpu_m(0)["median"]),
    "matmul.n0_gpu": lambda: t(gpu_m(0)["median"]),
    "matmul.top_copies": lambda: t(gpu_m(top_n(), transfers=True)["median"] - gpu_m(top_n())["median"]),
    "matmul.top_fp32_time": lambda: t(gpu_m(top_n())["median"]),
    "matmul.top_fp32_tr_time": lambda: t(gpu_m(top_n(), transfers=True)["median"]),
    "matmul.top_copy_mb": lambda: num(3 * 4 * top_n()**2 / 1e6, 0),
    "matmul.top_copies_vs_tf32": lambda: x((gpu_m(top_n(), transfers=True)["median"] - gpu_m(top_n())["median"])
                                           / gpu_m(top_n(), "tf32")["median"]),
    "matmul.top_copy_gbs": lambda: f"{num(3 * 4 * top_n()**2 / (gpu_m(top_n(), transfers=True)['median'] - gpu_m(top_n())['median']) / 1e9)} GB/s",
    "matmul.err_fp32": lambda: f"{gpu_m(top_n())['extra']['max_abs_err']:.2g}",
    "matmul.err_tf32": lambda: f"{gpu_m(top_n(), 'tf32')['extra']['max_abs_err']:.2g}",
    "matmul.err_ratio": lambda: x(gpu_m(top_n(), "tf32")["extra"]["max_abs_err"] / gpu_m(top_n())["extra"]["max_abs_err"]),
}
