#!/usr/bin/env python3
"""Renders a twograph report's standard figures as PNG and SVG.

    plot_report.py --out report/plots report/tg-transfer.json [more.json ...]

The figure is chosen by the report's tool name (tool.name); the parameter names each
figure reads are listed in docs/report-format.md ("Figures"). Measurements that lack
a parameter are skipped with a message; a report whose measurements fit no figure
gets the generic median-by-measurement bar chart. Exit 0 when every report was
plotted, 2 for bad usage, an unreadable report or an --out folder that cannot be
written, 1 when the list of written files cannot be written to stdout.
"""
import argparse
import json
import math
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def say(msg):
    print(f"plot: {msg}", file=sys.stderr)


def label_of(m, skip=()):
    ps = " ".join(f"{k}={v}" for k, v in sorted(m["params"].items()) if k not in skip)
    return f'{m["name"]} {ps}'.strip()


def with_params(tool, ms, needed):
    """The measurements that have every needed parameter; says how many were left out."""
    ok = [m for m in ms if all(k in m["params"] for k in needed)]
    left = len(ms) - len(ok)
    if left:
        say(f"{tool}: {left} of {len(ms)} measurements lack one of {', '.join(needed)}; not in this figure")
    return ok


def series(ms, key_fn, x_key):
    groups = defaultdict(list)
    for m in ms:
        groups[key_fn(m)].append(m)
    for k in groups:
        groups[k].sort(key=lambda m: float(m["params"][x_key]))
    return dict(sorted(groups.items()))


def err(ms, scale_fn):
    """Asymmetric error bars from p10..p90 for a value derived by scale_fn(m, stat)."""
    mid = [scale_fn(m, m["median"]) for m in ms]
    a = [scale_fn(m, m["p10"]) for m in ms]
    b = [scale_fn(m, m["p90"]) for m in ms]
    lo = [abs(x - min(p, q)) for x, p, q in zip(mid, a, b)]
    hi = [abs(max(p, q) - x) for x, p, q in zip(mid, a, b)]
    return mid, [lo, hi]


def new_fig(title, w=7.5, h=4.8):
    fig, ax = plt.subplots(figsize=(w, h))
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    return fig, ax


def fig_transfer(tool, ms):
    ms = with_params(tool, ms, ["size_bytes", "direction"])
    if not ms:
        return []

    def gbps(m, t):
        if t == m["median"] and m["extra"].get("GB/s") is not None:
            return m["extra"]["GB/s"]
        return float(m["params"]["size_bytes"]) / t / 1e9 if t > 0 else float("nan")

    fig, ax = new_fig(f"{tool}: bandwidth vs size")
    key = lambda m: " ".join(str(m["params"][k]) for k in ("direction", "memory", "mode") if k in m["params"])
    for name, g in series(ms, key, "size_bytes").items():
        xs = [float(m["params"]["size_bytes"]) for m in g]
        ys = [gbps(m, m["median"]) for m in g]
        ax.plot(xs, ys, marker="o", label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("transfer size (bytes)")
    ax.set_ylabel("GB/s (median)")
    ax.legend(fontsize=8)
    return [("bandwidth", fig)]


# The per-op curves a reader compares; the phases and the PDL / touch floors are in the tables.
LAUNCH_CURVES = ("dynamic_iteration", "dynamic_iteration_raw", "dynamic_iteration_pool", "static_iteration",
                 "static_iteration_plain", "static_replay_gpu", "raw_eager", "raw_graph_gpu")


def fig_launch(tool, ms):
    ms = with_params(tool, ms, ["n_ops"])
    ms = [m for m in ms if m["unit"] == "s" and m["name"] in LAUNCH_CURVES
          and m["params"].get("kernel", "empty") == "empty" and m["params"].get("pdl", 0) == 0]
    if not ms:
        return []
    fig, ax = new_fig(f"{tool}: cost per op vs chain length")
    key = lambda m: f'{m["name"]} {m["params"].get("executor", "")}'.strip()
    for name, g in series(ms, key, "n_ops").items():
        xs = [float(m["params"]["n_ops"]) for m in g]
        ys, e = err(g, lambda m, t: t / max(float(m["params"]["n_ops"]), 1.0) * 1e6)
        ax.errorbar(xs, ys, yerr=e, marker="o", capsize=2, label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("ops in the chain (n_ops)")
    ax.set_ylabel("us per op (median, p10..p90)")
    ax.legend(fontsize=8)
    return [("per_op_cost", fig)]


def fig_memory(tool, ms):
    ms = with_params(tool, ms, ["role"])
    ms = [m for m in ms if m["unit"] == "B"]
    if not ms:
        return []
    configs, roles = [], []
    value = defaultdict(float)
    for m in ms:
        c = m["params"].get("config") or label_of(m, skip=("role",))
        r = str(m["params"]["role"])
        if c not in configs:
            configs.append(c)
        if r not in roles:
            roles.append(r)
        value[(c, r)] += m["median"]
    fig, ax = new_fig(f"{tool}: memory by role", w=max(7.5, 0.9 * len(configs) + 3))
    bottom = [0.0] * len(configs)
    for r in roles:
        ys = [value[(c, r)] / 2**20 for c in configs]
        ax.bar(range(len(configs)), ys, bottom=bottom, label=r)
        bottom = [b + y for b, y in zip(bottom, ys)]
    ax.set_xticks(range(len(configs)))
    ax.set_xticklabels(configs, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("MiB")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return [("memory_by_role", fig)]


def fig_matmul(tool, ms):
    ms = with_params(tool, ms, ["n", "backend"])
    ms = [m for m in ms if m["unit"] == "s"]
    if not ms:
        return []
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.5))
    fig.suptitle(f"{tool}: CPU vs GPU matmul")
    key = lambda m: " ".join(str(m["params"][k]) for k in ("backend", "precision", "transfers") if k in m["params"])
    for name, g in series(ms, key, "n").items():
        xs = [float(m["params"]["n"]) for m in g]
        ax1.plot(xs, [m["median"] * 1e3 for m in g], marker="o", label=name)

        def tflops(m):
            if m["extra"].get("TFLOP/s") is not None:
                return m["extra"]["TFLOP/s"]
            n = float(m["params"]["n"])
            return 2 * n**3 / m["median"] / 1e12 if m["median"] > 0 else float("nan")

        ax2.plot(xs, [tflops(m) for m in g], marker="o", label=name)
    ax1.set_yscale("log")
    ax1.set_xlabel("n (n x n times n x n)")
    ax1.set_ylabel("ms (median)")
    ax2.set_xlabel("n")
    ax2.set_ylabel("TFLOP/s")
    for ax in (ax1, ax2):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    return [("matmul", fig)]


def fig_train(tool, ms):
    ms = with_params(tool, ms, ["batch"])
    ms = [m for m in ms if m["unit"] == "s" or m["extra"].get("iter/s") is not None]
    if not ms:
        return []
    fig, ax = new_fig(f"{tool}: iterations/s vs batch")
    key = lambda m: " ".join(str(m["params"][k]) for k in ("model", "executor", "mode") if k in m["params"]) or m["name"]
    for name, g in series(ms, key, "batch").items():
        xs = [float(m["params"]["batch"]) for m in g]
        ys = [m["extra"].get("iter/s") or (1.0 / m["median"] if m["median"] > 0 else float("nan")) for m in g]
        ax.plot(xs, ys, marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("batch")
    ax.set_ylabel("iterations/s (median)")
    ax.legend(fontsize=8)
    return [("iterations_per_s", fig)]


def bars(tool, title, groups, ylabel, fname):
    """groups: {label: measurement}; bars of the median with p10..p90 whiskers."""
    labels = list(groups)
    ms = [groups[k] for k in labels]
    scale = 1e3 if all(m["unit"] == "s" for m in ms) else 1.0
    ys, e = err(ms, lambda m, t: t * scale)
    fig, ax = new_fig(f"{tool}: {title}", w=max(7.5, 0.6 * len(labels) + 3))
    ax.bar(range(len(labels)), ys, yerr=e, capsize=3)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(("ms " if scale == 1e3 else "") + ylabel)
    fig.tight_layout()
    return [(fname, fig)]


def fig_shapes(tool, ms):
    ms = [m for m in with_params(tool, ms, ["strategy"]) if m["unit"] == "s"]
    if not ms:
        return []
    return bars(tool, "time per iteration by strategy", {label_of(m): m for m in ms}, "(median, p10..p90)",
                "time_per_strategy")


def fig_pipeline(tool, ms):
    ms = [m for m in with_params(tool, ms, ["stage"]) if m["unit"] == "s"]
    if not ms:
        return []
    return bars(tool, "time per stage", {label_of(m): m for m in ms}, "(median, p10..p90)", "per_stage")


def fig_generic(tool, ms):
    if not ms:
        return []
    by_unit = defaultdict(dict)
    for m in ms:
        by_unit[m["unit"]][label_of(m)] = m
    out = []
    for unit, groups in sorted(by_unit.items()):
        safe = "".join(c if c.isalnum() else "_" for c in unit)
        out += bars(tool, f"median by measurement ({unit})", groups, f"({unit})" if unit != "s" else "",
                    f"medians_{safe}")
    return out


FIGURES = {
    "tg-transfer": fig_transfer,
    "tg-launch": fig_launch,
    "tg-memory": fig_memory,
    "tg-matmul": fig_matmul,
    "tg-train": fig_train,
    "tg-shapes": fig_shapes,
    "tg-pipeline": fig_pipeline,
}


def load(path):
    try:
        with open(path) as f:
            r = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"plot: error: {path}: cannot read: {e}")
    for k in ("schema_version", "tool", "measurements"):
        if k not in r:
            raise SystemExit(f"plot: error: {path}: not a twograph report ({k} missing)")
    if r["schema_version"] != 1:
        raise SystemExit(f"plot: error: {path}: schema_version {r['schema_version']} is not supported (1 is)")
    return r


def plot(path, out):
    r = load(path)
    tool = r["tool"]["name"]
    ms = [m for m in r["measurements"] if all(isinstance(m.get(k), (int, float)) for k in ("median", "p10", "p90"))
          and isinstance(m.get("params"), dict)]
    for m in ms:
        m.setdefault("extra", {})
        m.setdefault("unit", "s")
    figs = FIGURES.get(tool, fig_generic)(tool, ms)
    if not figs and tool in FIGURES:
        say(f"{tool}: no measurement has the parameters its standard figure needs; drawing the generic chart")
        figs = fig_generic(tool, ms)
    written = []
    for name, fig in figs:
        base = os.path.join(out, f"{tool}_{name}")
        for ext, kw in ((".png", {"dpi": 120}), (".svg", {})):
            try:
                fig.savefig(base + ext, bbox_inches="tight", **kw)
            except OSError as e:  # a full disk, a read-only folder: say so, do not leave a traceback
                raise SystemExit(f"plot: error: cannot write {base + ext}: {e.strerror or e}")
        plt.close(fig)
        written += [base + ".png", base + ".svg"]
    if not figs:
        say(f"{path}: no measurements to plot")
    for w in written:
        emit(w)


def stdout_failed(e):
    print(f"plot: error: cannot write the list of plots to stdout: {e.strerror or e}", file=sys.stderr)
    os._exit(1)  # not sys.exit: the interpreter's own flush at exit would fail again, with a traceback


def emit(line):
    """One line of the list of written files. A closed stdout or a full device is an
    error (exit 1), not a silent success."""
    try:
        if sys.stdout is None:  # Python sets it to None when descriptor 1 was closed
            raise OSError(9, "stdout is not open")
        print(line)
    except OSError as e:
        stdout_failed(e)


def finish_stdout():
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except OSError as e:
        stdout_failed(e)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reports", nargs="+", help="report JSON files")
    ap.add_argument("--out", default="plots", help="folder for the PNG and SVG files (created)")
    a = ap.parse_args()
    try:
        os.makedirs(a.out, exist_ok=True)
    except OSError as e:
        raise SystemExit(f"plot: error: cannot create the folder {a.out}: {e.strerror or e}")
    for p in a.reports:
        plot(p, a.out)
    finish_stdout()


if __name__ == "__main__":
    try:
        main()
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            sys.exit(2)
        raise
