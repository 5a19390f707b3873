#!/usr/bin/env python3
"""Renders a twograph report's standard figures as PNG and SVG.

    plot_report.py --out report/plots report/tg-transfer.json [more.json ...]
    plot_report.py --out ab --compare before/train.json after/train.json

The figure is chosen by the report's tool name (tool.name); the parameter names each
figure reads are listed in docs/report-format.md ("Figures"). Measurements that lack
a parameter are left out (--verbose says how many); a report whose measurements fit no figure
gets the generic median-by-measurement bar chart. Files are named TOOL_FIGURE.png/.svg;
when several reports of one tool are given, each name ends with what tells the reports
apart (TOOL_FIGURE.before.png), so no report's figure replaces another's.
--compare A B draws A and B side by side, one pair of bars per measurement both reports
have (the measurements tg-report compare pairs), most changed first: the picture of a
tg-report compare. Each file is written atomically
(FILE.tmp, then renamed), so Ctrl-C or a full disk leaves no half-written figure.
Exit 0 when every report was plotted, 1 when a figure or stdout could not be written
(a closed stdout pipe only stops the listing), 2 for bad usage or an unreadable report,
130/143 when interrupted by SIGINT/SIGTERM.
"""
import argparse
import json
import math
import os
import signal
import sys
from collections import defaultdict

try:
    import matplotlib
except ImportError:
    print("plot: error: the python3 module matplotlib is missing: install it (apt-get install python3-matplotlib, as "
          "scripts/bootstrap.sh does, or pip install matplotlib) or run this with a python3 that has it", file=sys.stderr)
    sys.exit(2)
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def say(msg):
    print(f"plot: {msg}", file=sys.stderr)


VERBOSE = {"on": False}


def note(msg):
    """What a figure leaves out on purpose (rows of other kinds): with --verbose only, since
    on every run it reads like an error and is none."""
    if VERBOSE["on"]:
        say(msg)


class WriteError(Exception):
    """A figure or stdout that could not be written: exit 1 with the message."""


STDOUT = {"closed": False}


def out(line):
    """Prints a line of the listing; a closed pipe (| head) stops the listing, not the run."""
    if STDOUT["closed"]:
        return
    if sys.stdout is None:  # Python sets it to None when descriptor 1 was closed: not a pipe that ended
        raise WriteError("cannot write to stdout: stdout is not open")
    try:
        print(line)
        sys.stdout.flush()
    except BrokenPipeError:
        STDOUT["closed"] = True
        # Python would flush stdout again at exit and complain: point it at /dev/null.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except OSError as e:
        raise WriteError(f"cannot write to stdout: {e.strerror}")


PENDING = set()  # temporary files being written, removed if the run stops


def save_atomic(fig, path, fmt, **kw):
    tmp = path + ".tmp"
    if os.path.isdir(path) or os.path.isdir(tmp):
        raise WriteError(f"cannot write {path}: {path if os.path.isdir(path) else tmp} is a folder")
    try:
        if os.path.lexists(tmp):  # a leftover, or a planted link savefig would follow
            os.unlink(tmp)
        PENDING.add(tmp)
        fig.savefig(tmp, format=fmt, **kw)
        os.replace(tmp, path)
    except OSError as e:
        raise WriteError(f"cannot write {path}: {e.strerror or e}")
    finally:
        if tmp in PENDING and os.path.lexists(tmp):
            os.unlink(tmp)
        PENDING.discard(tmp)


def label_of(m, skip=()):
    ps = " ".join(f"{k}={v}" for k, v in sorted(m["params"].items()) if k not in skip)
    return f'{m["name"]} {ps}'.strip()


def short_labels(ms):
    """{label: measurement} with the parameters every measurement shares left out of the labels
    (they go in the title instead), so a bar's label names only what tells it apart."""
    shared = {k: v for k, v in ms[0]["params"].items() if all(m["params"].get(k) == v for m in ms)} if ms else {}
    names = {m["name"] for m in ms}
    out = {}
    for m in ms:
        label = label_of(m, skip=shared)
        if len(names) == 1:
            label = label[len(m["name"]):].strip() or m["name"]
        out[label] = m
    common = " ".join(f"{k}={v}" for k, v in sorted(shared.items()))
    return out, (f"{next(iter(names))} " if len(names) == 1 else "") + common


def with_params(tool, ms, needed):
    """The measurements that have every needed parameter; says how many were left out."""
    ok = [m for m in ms if all(k in m["params"] for k in needed)]
    left = len(ms) - len(ok)
    if left:
        note(f"{tool}: {left} of {len(ms)} measurements lack one of {', '.join(needed)}; not in this figure")
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


# Distinct styles: a colour per series, and when the colours run out the line style and the
# marker change too, so no two series of one figure look alike.
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
          "#17becf"]  # matplotlib's tab10
LINESTYLES = ["-", "--", ":", "-."]
MARKERS = "osv^D<>ph*"


def style(i):
    return {"color": COLORS[i % 10], "linestyle": LINESTYLES[(i // 10) % 4], "marker": MARKERS[(i + i // 10) % 10]}


def device_gpu(r):
    """The report's GPU entry for the device it ran on, or None (CPU backend, no report)."""
    if not r:
        return None
    dev = r.get("device", {}).get("id", -1)
    return next((g for g in r.get("gpus", []) if g.get("id") == dev), None)


# PCIe transfer rate per lane in GT/s by generation (one bit per lane per transfer).
PCIE_GTS = {1: 2.5, 2: 5, 3: 8, 4: 16, 5: 32, 6: 64}


def pcie_GBps(gpu):
    """Theoretical rate of the link per direction, before encoding and packet overhead; None if unknown."""
    if not gpu or gpu.get("pcie_gen") not in PCIE_GTS or not gpu.get("pcie_width"):
        return None
    return PCIE_GTS[gpu["pcie_gen"]] * gpu["pcie_width"] / 8


def hbm_GBps(gpu):
    """Theoretical device-memory rate: memory clock x 2 (double data rate) x bus width / 8; None if unknown."""
    if not gpu or not gpu.get("mem_clock_khz") or not gpu.get("mem_bus_width_bits"):
        return None
    return 2 * gpu["mem_clock_khz"] * 1e3 * gpu["mem_bus_width_bits"] / 8 / 1e9


# Dense FLOP per clock per SM by compute capability (fp32 lanes x 2; Tensor Core TF32, bf16 and
# fp16 without sparsity). Only the architectures whose figures are certain; others draw no peak.
# experiments/harness/device_peaks.h holds the same figures for the experiments' pct_of_peak
# (tests/harness/peaks_test.cpp checks that they agree).
FLOP_PER_CLOCK_SM = {"8.0": {"fp32": 128, "tf32": 1024, "bf16": 2048, "fp16": 2048},
                     "9.0": {"fp32": 256, "tf32": 2048, "bf16": 4096, "fp16": 4096}}


def peak_flops(gpu, precision):
    """SMs x FLOP per clock per SM x the maximum SM clock the device reports; None if unknown."""
    per = FLOP_PER_CLOCK_SM.get(gpu.get("compute_capability", "")) if gpu else None
    if not per or not gpu.get("sm_count") or not gpu.get("sm_clock_khz"):
        return None
    return gpu["sm_count"] * per[precision] * gpu["sm_clock_khz"] * 1e3


def size_axis(ax, label="transfer size (bytes)"):
    """A log2 x axis of byte sizes, ticked every factor of 16 as KiB / MiB / GiB."""
    ax.set_xscale("log", base=2)
    lo, hi = ax.get_xlim()
    ticks = [2.0**e for e in range(0, 41, 4) if lo <= 2.0**e <= hi]
    names = {0: "B", 10: "KiB", 20: "MiB", 30: "GiB", 40: "TiB"}
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{int(t) >> (10 * (int(math.log2(t)) // 10))} {names[10 * (int(math.log2(t)) // 10)]}"
                        for t in ticks])
    ax.set_xlabel(label)


def ceiling(ax, y, label, color="0.35"):
    """A horizontal limit line with its label just above it, at the left."""
    ax.axhline(y, color=color, linestyle=(0, (6, 3)), linewidth=1.2)
    ax.annotate(label, (0.01, y), xycoords=("axes fraction", "data"), textcoords="offset points", xytext=(0, 3),
                fontsize=7.5, color=color)


def fig_transfer(tool, ms, r=None):
    ms = with_params(tool, ms, ["size_bytes", "direction"])
    # The staged copy's chunk sweep is a few points at one size: a table, not a curve.
    chunks = [m["params"].get("chunk_bytes") for m in ms if m["params"].get("mode") == "staged"]
    main_chunk = max(set(chunks), key=chunks.count) if chunks else None
    ms = [m for m in ms if m["params"].get("mode") != "staged" or m["params"].get("chunk_bytes") == main_chunk]
    if not ms:
        return []

    def gbps(m):
        # A device copy reads and writes every byte: drawn read + write, against the memory's rate.
        rate = m["extra"].get("GB/s_rw" if m["params"]["direction"] == "d2d" else "GB/s")
        if rate is not None:
            return rate
        return float(m["params"]["size_bytes"]) / m["median"] / 1e9 if m["median"] > 0 else float("nan")

    def key(m):
        p = m["params"]
        k = " ".join(str(p[k]) for k in ("direction", "memory", "mode") if k in p)
        if "copy_threads" in p:
            k += f" {p['copy_threads']} thread" + ("s" if p["copy_threads"] != 1 else "")
        return k + (" (read+write)" if p["direction"] == "d2d" else "")

    link = [m for m in ms if m["params"]["direction"] in ("h2d", "d2h")]
    local = [m for m in ms if m["params"]["direction"] not in ("h2d", "d2h")]
    panels = [(g, title) for g, title in ((link, "host <-> device (PCIe)"),
                                          (local, "within one memory: device (HBM), host")) if g]
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 5), squeeze=False)
    fig.suptitle(f"{tool}: bandwidth vs size")
    gpu = device_gpu(r)
    for ax, (group, title) in zip(axes[0], panels):
        for i, (name, g) in enumerate(series(group, key, "size_bytes").items()):
            ax.plot([float(m["params"]["size_bytes"]) for m in g], [gbps(m) for m in g], label=name, **style(i))
        if group is link and pcie_GBps(gpu):
            ceiling(ax, pcie_GBps(gpu), f"PCIe Gen{gpu['pcie_gen']} x{gpu['pcie_width']}: {pcie_GBps(gpu):.0f} GB/s "
                                        "per direction (theory)")
        if group is local and hbm_GBps(gpu):
            ceiling(ax, hbm_GBps(gpu), f"device memory: {hbm_GBps(gpu):.0f} GB/s (theory)")
        ax.set_title(title, fontsize=10)
        size_axis(ax)
        ax.set_yscale("log")
        ax.set_ylabel("GB/s (median)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7.5, loc="lower right")
    fig.tight_layout()
    return [("bandwidth", fig)]


# The per-op curves a reader compares; the phases and the PDL / touch floors are in the tables.
LAUNCH_CURVES = ("dynamic_iteration", "dynamic_iteration_raw", "dynamic_iteration_pool", "static_iteration",
                 "static_iteration_plain", "static_replay_gpu", "raw_eager", "raw_graph_gpu")


def fig_launch(tool, ms, r=None):
    ms = with_params(tool, ms, ["n_ops"])
    ms = [m for m in ms if m["unit"] == "s" and m["name"] in LAUNCH_CURVES
          and m["params"].get("kernel", "empty") == "empty" and m["params"].get("pdl", 0) == 0]
    if not ms:
        return []
    fig, ax = new_fig(f"{tool}: cost per op vs chain length")
    key = lambda m: f'{m["name"]} {m["params"].get("executor", "")}'.strip()
    for i, (name, g) in enumerate(series(ms, key, "n_ops").items()):
        xs = [float(m["params"]["n_ops"]) for m in g]
        ys, e = err(g, lambda m, t: t / max(float(m["params"]["n_ops"]), 1.0) * 1e6)
        ax.errorbar(xs, ys, yerr=e, capsize=2, label=name, **style(i))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("ops in the chain (n_ops)")
    ax.set_ylabel("us per op (median, p10..p90)")
    ax.legend(fontsize=8)
    return [("per_op_cost", fig)]


def fig_memory(tool, ms, r=None):
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
    title = f"{tool}: memory by role (naive: the roles' sum, no reuse)"
    standing = upright(configs, 0.9)
    if standing:
        fig, ax = new_fig(title, w=max(7.5, 0.9 * len(configs) + 3))
    else:
        fig, ax = new_fig(title, w=10, h=1.5 + 0.28 * len(configs))
    bottom = [0.0] * len(configs)
    for r in roles:
        ys = [value[(c, r)] / 2**20 for c in configs]
        if standing:
            ax.bar(range(len(configs)), ys, bottom=bottom, label=r)
        else:
            ax.barh(range(len(configs)), ys, left=bottom, label=r)
        bottom = [b + y for b, y in zip(bottom, ys)]
    value_label = "MiB, each role stacked (no buffer shared)"
    if standing:
        ax.set_xticks(range(len(configs)))
        ax.set_xticklabels(configs, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel(value_label)
    else:
        ax.set_yticks(range(len(configs)))
        ax.set_yticklabels(configs, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel(value_label)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return [("memory_by_role", fig)]


def fig_matmul(tool, ms, r=None):
    ms = with_params(tool, ms, ["n", "backend"])
    ms = [m for m in ms if m["unit"] == "s"]
    if not ms:
        return []
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.8))
    fig.suptitle(f"{tool}: CPU vs GPU matmul")
    key = lambda m: " ".join(str(m["params"][k]) for k in ("backend", "precision", "transfers") if k in m["params"])

    def tflops(m):
        if m["extra"].get("TFLOP/s") is not None:
            return m["extra"]["TFLOP/s"]
        n = float(m["params"]["n"])
        return 2 * n**3 / m["median"] / 1e12 if m["median"] > 0 else float("nan")

    # A colour per backend and precision, solid without transfers and dashed with them.
    colors = {}
    for name, g in series(ms, key, "n").items():
        p = g[0]["params"]
        kind = (p["backend"], p.get("precision"))
        if kind not in colors:
            colors[kind] = style(len(colors))
        with_transfers = p.get("transfers") is True
        st = dict(colors[kind], linestyle="--" if with_transfers else "-")
        label = " ".join(str(v) for v in kind if v is not None) + (" + transfers" if with_transfers else "")
        ax1.plot([float(m["params"]["n"]) for m in g], [m["median"] * 1e3 for m in g], label=label, **st)
        g = [m for m in g if float(m["params"]["n"]) > 0]  # the empty product does no FLOP
        ax2.plot([float(m["params"]["n"]) for m in g], [tflops(m) for m in g], label=label, **st)
    gpu = device_gpu(r)
    # bf16 and fp16 share one peak: one ceiling, where the report has either's rows.
    low = [p for p in ("bf16", "fp16") if any(m["params"].get("precision") == p for m in ms)]
    ceilings = [("fp32", "fp32"), ("tf32", "TF32 Tensor Core")] + [(p, "bf16/fp16 Tensor Core") for p in low[:1]]
    for prec, label in ceilings:
        peak = peak_flops(gpu, prec)
        if peak:
            ceiling(ax2, peak / 1e12, f"{label} peak: {peak / 1e12:.0f} TFLOP/s (at {gpu['sm_clock_khz'] / 1e3:.0f} MHz)")
    ax1.set_yscale("log")
    ax1.set_xlabel("n (n x n times n x n)")
    ax1.set_ylabel("ms (median)")
    ax2.set_yscale("log")  # the CPU's TFLOP/s and the GPU's are two orders of magnitude apart
    ax2.set_xlabel("n")
    ax2.set_ylabel("TFLOP/s (2n^3 / median)")
    for ax in (ax1, ax2):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return [("matmul", fig)]


def fig_train(tool, ms, r=None):
    """Iterations/s vs batch, one panel per mode. A series is one measurement kind (iteration: the
    whole step; replay: the graph launch alone) of one sweep and executor, never a mix."""
    ms = with_params(tool, ms, ["batch"])
    kinds = ("iteration", "replay")
    left = sorted({m["name"] for m in ms if m["name"] not in kinds})
    if left:
        note(f"{tool}: {', '.join(left)} not in the iterations/s figure (not whole iterations)")
    ms = [m for m in ms if m["name"] in kinds and m["unit"] == "s"]
    if not ms:
        return []
    modes = sorted({m["params"].get("mode", "") for m in ms}, key=lambda s: (s != "train", s))
    fig, axes = plt.subplots(1, len(modes), figsize=(6.5 * len(modes), 5), squeeze=False)
    fig.suptitle(f"{tool}: iterations/s vs batch")
    model = lambda m: str(m["params"].get("sweep") or m["params"].get("model") or "")
    key = lambda m: (model(m), str(m["params"].get("executor", "")), m["name"])
    # A colour per executor, a marker per model, dashed for the replay alone.
    executors = sorted({k[1] for k in map(key, ms)})
    models = sorted({k[0] for k in map(key, ms)})
    for ax, mode in zip(axes[0], modes):
        group = [m for m in ms if m["params"].get("mode", "") == mode]
        for (mod, ex, name), g in series(group, key, "batch").items():
            st = dict(color=COLORS[executors.index(ex) % 10], marker=MARKERS[models.index(mod) % 10],
                      linestyle="--" if name == "replay" else "-")
            label = f"{mod} {ex}".strip() + (" (replay only)" if name == "replay" else "")
            ys = [m["extra"].get("iter/s") or (1.0 / m["median"] if m["median"] > 0 else float("nan")) for m in g]
            ax.plot([float(m["params"]["batch"]) for m in g], ys, label=label, **st)
        ax.set_title(mode or "all", fontsize=10)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("batch")
        ax.set_ylabel("iterations/s (median)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    return [("iterations_per_s", fig)]


def upright(labels, inch_per_bar):
    """Whether a bar chart stands up. It turns on its side when standing it would be wider than a
    screen (16 in at 120 dpi) or its labels are long (parameter lists): on its side the labels run
    along the y axis, where a long one costs width once instead of a rotated label per bar, and
    the figure grows downwards, which a page scrolls, instead of sideways past the screen."""
    return inch_per_bar * len(labels) + 3 <= 16 and max(map(len, labels), default=0) <= 40


def bars(tool, title, groups, ylabel, fname):
    """groups: {label: measurement}; bars of the median with p10..p90 whiskers."""
    labels = list(groups)
    ms = [groups[k] for k in labels]
    scale = 1e3 if all(m["unit"] == "s" for m in ms) else 1.0
    ys, e = err(ms, lambda m, t: t * scale)
    value_label = ("ms " if scale == 1e3 else "") + ylabel
    if not upright(labels, 0.6):
        fig, ax = new_fig(f"{tool}: {title}", w=10, h=1.5 + 0.28 * len(labels))
        ax.barh(range(len(labels)), ys, xerr=e, capsize=2)
        ax.set_yticks(range(len(labels)))
        ax.set_yticklabels(labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel(value_label)
    else:
        fig, ax = new_fig(f"{tool}: {title}", w=max(7.5, 0.6 * len(labels) + 3))
        ax.bar(range(len(labels)), ys, yerr=e, capsize=3)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel(value_label)
    fig.tight_layout()
    return [(fname, fig)]


def fig_shapes(tool, ms, r=None):
    ms = [m for m in with_params(tool, ms, ["strategy"]) if m["unit"] == "s"]
    if not ms:
        return []
    groups, common = short_labels(ms)
    return bars(tool, "time per iteration by strategy" + (f"\n{common}" if common else ""), groups,
                "(median, p10..p90)", "time_per_strategy")


def fig_pipeline(tool, ms, r=None):
    ms = [m for m in with_params(tool, ms, ["stage"]) if m["unit"] == "s"]
    if not ms:
        return []
    groups, common = short_labels(ms)
    return bars(tool, "time per stage" + (f"\n{common}" if common else ""), groups, "(median, p10..p90)",
                "per_stage")


def fig_generic(tool, ms, r=None):
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


def usable(r):
    """The measurements a figure can read, with the optional fields filled in."""
    ms = [m for m in r["measurements"] if all(isinstance(m.get(k), (int, float)) for k in ("median", "p10", "p90"))
          and isinstance(m.get("params"), dict)]
    for m in ms:
        m.setdefault("extra", {})
        m.setdefault("unit", "s")
    return ms


def write_figs(figs, out_dir, stem, suffix=""):
    written = []
    for name, fig in figs:
        base = os.path.join(out_dir, f"{stem}_{name}{suffix}")
        try:
            save_atomic(fig, base + ".png", "png", dpi=120, bbox_inches="tight")
            save_atomic(fig, base + ".svg", "svg", bbox_inches="tight")
        finally:
            plt.close(fig)
        written += [base + ".png", base + ".svg"]
    return written


def plot(path, out_dir, suffix=""):
    r = load(path)
    tool = r["tool"]["name"]
    ms = usable(r)
    figs = FIGURES.get(tool, fig_generic)(tool, ms, r)
    if not figs and tool in FIGURES:
        say(f"{tool}: no measurement has the parameters its standard figure needs; drawing the generic chart")
        figs = fig_generic(tool, ms)
    written = write_figs(figs, out_dir, tool, suffix)
    if not figs:
        say(f"{path}: no measurements to plot")
    for w in written:
        out(w)


def suffixes(paths, tools):
    """'' for a report whose tool no other report shares; else '.' + the shortest tail of its
    path (folders and file name, without .json) that no other report of that tool has."""
    out = {}
    for p, tool in zip(paths, tools):
        peers = [q for q, t in zip(paths, tools) if t == tool]
        if len(peers) == 1:
            out[p] = ""
            continue
        parts = {q: os.path.splitext(os.path.abspath(q))[0].split(os.sep) for q in peers}
        for n in range(1, len(parts[p]) + 1):
            tail = lambda q: "-".join(parts[q][-n:])
            if all(tail(q) != tail(p) for q in peers if q != p):
                break
        out[p] = "." + "".join(c if c.isalnum() or c in "-_" else "_" for c in tail(p))
    return out


def key_of(m):
    return (m["name"], tuple(sorted((k, str(v)) for k, v in m["params"].items())))


COMPARE_ROWS = 30  # the most changed pairs; more would not read at screen size


def fig_compare(a_path, b_path, a, b):
    """B's median over A's, one horizontal bar per measurement both reports have, most changed
    first, on a log axis centred on 1 (no change). The labels run along the y axis and name only
    the parameters that differ between the rows drawn, so a long parameter list widens nothing."""
    bm = {key_of(m): m for m in usable(b)}
    pairs = [(m, bm[key_of(m)]) for m in usable(a) if key_of(m) in bm and m["unit"] == bm[key_of(m)]["unit"]]
    pairs = [p for p in pairs if p[0]["median"] > 0 and p[1]["median"] > 0]  # a ratio needs both
    if not pairs:
        raise SystemExit(f"plot: error: --compare {a_path} {b_path}: no measurement (name and parameters) with a "
                         "positive median is in both")
    ratio = lambda p: p[1]["median"] / p[0]["median"]
    pairs.sort(key=lambda p: -abs(math.log(ratio(p))))
    if len(pairs) > COMPARE_ROWS:
        say(f"--compare: the {COMPARE_ROWS} most changed of {len(pairs)} paired measurements drawn "
            "(tg-report compare lists them all)")
        pairs = pairs[:COMPARE_ROWS]
    shared = {k: v for k, v in pairs[0][0]["params"].items() if all(p[0]["params"].get(k) == v for p in pairs)}
    fig, ax = plt.subplots(figsize=(13, 1.6 + 0.3 * len(pairs)))
    ys = list(range(len(pairs)))
    lower = [p[0].get("better", "lower") != "higher" for p in pairs]
    colors = ["#2ca02c" if (ratio(p) < 1) == lo else "#d62728" for p, lo in zip(pairs, lower)]
    ax.barh(ys, [ratio(p) - 1 for p in pairs], left=1, color=colors)
    ax.axvline(1, color="black", linewidth=1)
    ax.set_yticks(ys)
    ax.set_yticklabels([label_of(p[0], skip=shared) for p in pairs], fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    span = max(max(ratio(p), 1 / ratio(p)) for p in pairs) * 1.15
    ax.set_xlim(1 / span, span)  # centred on 1: a halving and a doubling look alike
    from matplotlib.ticker import FuncFormatter  # here: tools/docs-tables loads this file with a stub matplotlib
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}x"))
    ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:.2g}x"))
    ax.tick_params(axis="x", which="minor", labelsize=7)
    ax.set_xlabel("B's median / A's (log scale; green: B better, red: B worse)")
    name = lambda q: os.path.basename(os.path.dirname(os.path.abspath(q))) + "/" + os.path.basename(q)
    common_params = " ".join(f"{k}={v}" for k, v in sorted(shared.items()))
    ax.set_title(f"{a['tool']['name']}: A = {name(a_path)}, B = {name(b_path)}"
                 + (f"\nall rows: {common_params}" if common_params else ""), fontsize=9)
    ax.grid(True, axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    return [("compare", fig)]


def compare(a_path, b_path, out_dir):
    a, b = load(a_path), load(b_path)
    if a["tool"]["name"] != b["tool"]["name"]:
        raise SystemExit(f"plot: error: --compare: {a_path} is {a['tool']['name']}, {b_path} is {b['tool']['name']}; "
                         "compare two reports of one tool")
    for w in write_figs(fig_compare(a_path, b_path, a, b), out_dir, a["tool"]["name"]):
        out(w)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reports", nargs="*", help="report JSON files")
    ap.add_argument("--out", default="plots", help="folder for the PNG and SVG files (created)")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"), help="draw report B against report A (one tool)")
    ap.add_argument("--verbose", action="store_true", help="say which measurements each figure leaves out")
    a = ap.parse_args()
    VERBOSE["on"] = a.verbose
    if not a.reports and not a.compare:
        raise SystemExit("plot: error: no report given: pass report JSON files, or --compare A.json B.json")
    if not a.out:
        raise SystemExit("plot: error: --out '': give a folder")
    if os.path.exists(a.out) and not os.path.isdir(a.out):
        raise SystemExit(f"plot: error: --out {a.out}: is a file, not a folder")
    try:
        os.makedirs(a.out, exist_ok=True)
    except OSError as e:
        raise SystemExit(f"plot: error: --out {a.out}: cannot create the folder: {e.strerror or e}")
    if not os.access(a.out, os.W_OK):
        raise SystemExit(f"plot: error: --out {a.out}: the folder is not writable")
    if a.compare:
        compare(a.compare[0], a.compare[1], a.out)
    real = [os.path.realpath(p) for p in a.reports]
    twice = sorted({p for p, rp in zip(a.reports, real) if real.count(rp) > 1})
    if twice:
        raise SystemExit(f"plot: error: {', '.join(twice)}: given twice; give each report once")
    tools = [load(p)["tool"]["name"] for p in a.reports]
    sfx = suffixes(a.reports, tools)
    for p in a.reports:
        plot(p, a.out, sfx[p])


class Interrupted(Exception):
    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def on_signal(signum, frame):
    raise Interrupted(signum)  # unwinds through save_atomic, which removes its .tmp


if __name__ == "__main__":
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        main()
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            sys.exit(2)
        raise
    except WriteError as e:
        say(f"error: {e}")
        sys.exit(1)
    except Interrupted as e:
        for tmp in list(PENDING):
            if os.path.lexists(tmp):
                os.unlink(tmp)
        say(f"interrupted ({signal.Signals(e.signum).name}): the figures written so far are complete, the rest "
            "were not written")
        sys.exit(128 + e.signum)
