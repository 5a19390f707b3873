#!/usr/bin/env python3
"""Renders a time window of a twograph trace (--trace FILE) to PNG and SVG.

  render_trace.py TRACE --out PREFIX [--around NAME [--index K] | --window START_US:END_US]
                  [--title TEXT] [--max-arrows N]

Host lanes above (one per thread; nested spans one row deeper each), GPU streams below (one
lane per stream), an arrow from each launching CUDA call to the work it launched, and the
memory counters, if any, in a strip at the bottom. The window is the K-th span named NAME
(0 first; e.g. --around "dynamic inference" --index 1), extended to the end of the GPU work
launched from inside it, or START_US:END_US in the trace's
microseconds, or the whole trace. TRACE may be gzipped (a name ending in .gz). Writes PREFIX.png and PREFIX.svg (each FILE.tmp first, then
renamed). Exit 0 ok, 2 bad usage (a file that cannot be read, a window with nothing in it, a
name not in the trace, matplotlib missing). docs/timelines.md shows the commands.
"""
import argparse
import gzip
import hashlib
import json
import os
import sys
from collections import defaultdict

DEVICE_PID_BASE = 100


class UsageError(Exception):
    pass


def color_of(name, cat):
    if cat == "cuda_api":
        return "#b0b0b0"
    if cat in ("memcpy", "memset"):
        return "#e6a23c"
    h = int(hashlib.md5(name.encode()).hexdigest()[:6], 16)
    palette = ["#4e79a7", "#59a14f", "#9c755f", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#f28e2b", "#e15759",
               "#8cd17d", "#86bcb6", "#a0cbe8"]
    return palette[h % len(palette)]


def load(path):
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as f:
            t = json.load(f)
        return t["traceEvents"], t.get("otherData", {})
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UsageError(f"{path}: not a readable trace ({e})")


def launched_until(events, spans, lo, hi):
    """The end of the last GPU span launched from the host between lo and hi (its flow starts
    there): a span's window reaches the work it launched, which a graph replay's kernels, say,
    run after the launch call returns."""
    started = {e["id"] for e in events if e.get("ph") == "s" and lo <= e["ts"] <= hi}
    landings = {(e["pid"], e["tid"], e["ts"]) for e in events if e.get("ph") == "f" and e.get("id") in started}
    ends = [x["ts"] + x["dur"] for x in spans if (x["pid"], x["tid"], x["ts"]) in landings]
    return max(ends, default=hi)


def pick_window(events, spans, a):
    if a.window:
        try:
            lo, hi = (float(x) for x in a.window.split(":"))
        except ValueError:
            raise UsageError(f"--window {a.window!r}: give START_US:END_US, e.g. --window 1200:1800")
        if not hi > lo:
            raise UsageError(f"--window {a.window!r}: the end must be after the start")
        return lo, hi
    if a.around:
        named = sorted((e for e in spans if e["name"] == a.around), key=lambda e: e["ts"])
        if not named:
            names = sorted({e["name"] for e in spans if e["pid"] < DEVICE_PID_BASE})
            raise UsageError(f"--around {a.around!r}: no span of that name; host spans in the trace: "
                             + ", ".join(names[:30]))
        if not -len(named) <= a.index < len(named):
            raise UsageError(f"--index {a.index}: the trace holds {len(named)} spans named {a.around!r} (0 to "
                             f"{len(named) - 1})")
        e = named[a.index]
        end = max(e["ts"] + e["dur"], launched_until(events, spans, e["ts"], e["ts"] + e["dur"]))
        pad = max((end - e["ts"]) * 0.03, 0.5)
        return e["ts"] - pad, end + pad
    lo = min(e["ts"] for e in spans)
    return lo, max(e["ts"] + e["dur"] for e in spans)


def depths(spans):
    """The nesting depth of each span of one host lane (spans sorted by start, longer first)."""
    out, stack = [], []
    for e in spans:
        while stack and e["ts"] >= stack[-1]:
            stack.pop()
        out.append(len(stack))
        stack.append(e["ts"] + e["dur"])
    return out


def packed_rows(spans):
    """The row of each span of one GPU stream (sorted by start): the first row free at its start.
    Kernels launched with programmatic dependent launch start before the previous one ends; they
    overlap without nesting, so the fewest rows that hold them apart replace nesting depth."""
    out, ends = [], []
    for e in spans:
        row = next((r for r, end in enumerate(ends) if end <= e["ts"]), len(ends))
        if row == len(ends):
            ends.append(0.0)
        ends[row] = e["ts"] + e["dur"]
        out.append(row)
    return out


def save_atomic(fig, path, fmt):
    tmp = path + ".tmp"
    try:
        fig.savefig(tmp, format=fmt, dpi=110)
        os.replace(tmp, path)
    except OSError as e:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise UsageError(f"cannot write {path}: {e.strerror}")


def render(a):
    try:
        import matplotlib
    except ImportError:
        raise UsageError("the python3 module matplotlib is missing: install it (apt-get install python3-matplotlib)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    events, meta = load(a.trace)
    spans = [e for e in events if e.get("ph") == "X"]
    if not spans:
        raise UsageError(f"{a.trace}: the trace holds no spans")
    lo, hi = pick_window(events, spans, a)
    inside = [e for e in spans if e["ts"] < hi and e["ts"] + e["dur"] > lo]
    if not inside:
        raise UsageError(f"the window {lo:.3f}:{hi:.3f} us holds no span")
    names = {}
    for e in events:
        if e.get("ph") == "M" and e["name"] == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
        if e.get("ph") == "M" and e["name"] == "process_name":
            names[(e["pid"], None)] = e["args"]["name"]

    by_lane = defaultdict(list)
    for e in sorted(spans, key=lambda e: (e["ts"], -e["dur"])):
        by_lane[(e["pid"], e["tid"])].append(e)
    lanes = sorted((k for k in by_lane if any(lo < x["ts"] + x["dur"] and x["ts"] < hi for x in by_lane[k])),
                   key=lambda k: (k[0] >= DEVICE_PID_BASE, k))
    # Rows top-down: each lane as deep as its nesting inside the window.
    row_of, rows, labels = {}, 0, []
    for lane in lanes:
        ds = depths(by_lane[lane]) if lane[0] < DEVICE_PID_BASE else packed_rows(by_lane[lane])
        shown = [(e, d) for e, d in zip(by_lane[lane], ds) if e["ts"] < hi and e["ts"] + e["dur"] > lo]
        deepest = max(d for _, d in shown)
        row_of[lane] = (rows, shown)
        host = lane[0] < DEVICE_PID_BASE
        proc = names.get((lane[0], None), "host" if host else f"device {lane[0] - DEVICE_PID_BASE}")
        labels.append((rows + (deepest + 1) / 2, f"{proc}\n{names.get(lane, f'lane {lane[1]}')}"))
        rows += deepest + 1 + 0.6
    counters = [e for e in events if e.get("ph") == "C" and lo <= e["ts"] <= hi]

    scale, unit = (1e-3, "ms") if hi - lo > 5000 else (1.0, "us")
    fig_h = 1.2 + 0.32 * rows + (1.3 if counters else 0)
    fig = plt.figure(figsize=(13, min(fig_h, 16)))
    grid = fig.add_gridspec(2 if counters else 1, 1, height_ratios=[rows, 4] if counters else [1], hspace=0.08)
    ax = fig.add_subplot(grid[0])
    x0 = lo
    min_label_w = (hi - lo) * 0.045
    for lane in lanes:
        base, shown = row_of[lane]
        for e, d in shown:
            left = max(e["ts"], lo)
            width = min(e["ts"] + e["dur"], hi) - left
            y = base + d
            ax.add_patch(Rectangle(((left - x0) * scale, y), max(width * scale, (hi - lo) * scale * 0.0008), 0.9,
                                   facecolor=color_of(e["name"], e.get("cat", "")), edgecolor="white", linewidth=0.3))
            if width >= min_label_w:
                ax.text((left + width / 2 - x0) * scale, y + 0.45, e["name"][:40], ha="center", va="center",
                        fontsize=6.5, clip_on=True)
    # Launch arrows: from the flow's start (a CUDA call on a host lane) to its finish (the GPU work).
    starts = {e["id"]: e for e in events if e.get("ph") == "s"}
    arrows = 0
    for f in (e for e in events if e.get("ph") == "f"):
        s = starts.get(f["id"])
        if not s or not (lo <= s["ts"] <= hi or lo <= f["ts"] <= hi):
            continue
        if (s["pid"], s["tid"]) not in row_of or (f["pid"], f["tid"]) not in row_of or arrows >= a.max_arrows:
            continue
        base, shown = row_of[(s["pid"], s["tid"])]
        # From the bottom of the deepest span the call sits in (the CUDA call itself).
        sy = base + max((d for e, d in shown if e["ts"] <= s["ts"] <= e["ts"] + e["dur"]), default=0) + 0.9
        fy = row_of[(f["pid"], f["tid"])][0]
        ax.annotate("", xy=((f["ts"] - x0) * scale, fy), xytext=((s["ts"] - x0) * scale, sy),
                    arrowprops=dict(arrowstyle="->", color="#555555", lw=0.5, alpha=0.6))
        arrows += 1
    ax.set_xlim(0, (hi - lo) * scale)
    ax.set_ylim(rows, -0.3)
    ax.set_yticks([y for y, _ in labels])
    ax.set_yticklabels([t for _, t in labels], fontsize=7)
    ax.tick_params(axis="x", labelsize=7)
    title = a.title or f"{meta.get('tool', 'trace')} on {meta.get('device', '?')}"
    ax.set_title(title, fontsize=10)
    if counters:
        cax = fig.add_subplot(grid[1], sharex=ax)
        series = defaultdict(list)
        top = max(v for c in counters for v in c["args"].values())
        div, mem_unit = (2**20, "MiB") if top >= 2**20 else (2**10, "KiB")
        for c in sorted(counters, key=lambda c: c["ts"]):
            for k, v in c["args"].items():
                series[f"{c['name']}: {k}"].append(((c["ts"] - x0) * scale, v / div))
        for label, pts in sorted(series.items()):
            cax.step([p[0] for p in pts], [p[1] for p in pts], where="post", label=label, lw=1)
        cax.set_ylabel(mem_unit, fontsize=7)
        cax.legend(fontsize=6, loc="upper left")
        cax.tick_params(labelsize=7)
        cax.set_xlabel(f"time in the window ({unit}; the window starts at {lo / 1000:.3f} ms of the trace)", fontsize=8)
    else:
        ax.set_xlabel(f"time in the window ({unit}; the window starts at {lo / 1000:.3f} ms of the trace)", fontsize=8)
    fig.subplots_adjust(left=0.16, right=0.98, top=0.94, bottom=0.08)
    out_dir = os.path.dirname(a.out)
    if out_dir and not os.path.isdir(out_dir):
        raise UsageError(f"--out {a.out}: the folder {out_dir} does not exist")
    for fmt in ("png", "svg"):
        save_atomic(fig, f"{a.out}.{fmt}", fmt)
    plt.close(fig)
    print(f"wrote {a.out}.png {a.out}.svg: {len(inside)} spans on {len(lanes)} lanes, {arrows} launch arrows, "
          f"{(hi - lo) / 1000:.3f} ms")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--out", required=True, help="PREFIX: writes PREFIX.png and PREFIX.svg")
    ap.add_argument("--around", help="the window: the span of this name (with --index)")
    ap.add_argument("--index", type=int, default=0, help="which span named --around, 0 first, -1 last")
    ap.add_argument("--window", help="the window: START_US:END_US in the trace's microseconds")
    ap.add_argument("--title")
    ap.add_argument("--max-arrows", type=int, default=400, help="launch arrows drawn at most")
    a = ap.parse_args()
    if a.window and a.around:
        ap.error("--window and --around choose the window two ways: give one")
    try:
        render(a)
    except UsageError as e:
        print(f"render_trace: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
