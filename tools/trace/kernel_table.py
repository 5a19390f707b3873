#!/usr/bin/env python3
"""Sums the GPU work of a twograph trace (--trace FILE) by kernel name, as PyTorch's profiler
table does: calls, total and mean microseconds of each stream's own time (a span overlapping
its stream's previous one counts from that one's end), and each name's share of the GPU's busy
time.

  kernel_table.py TRACE [--around NAME [--index K] | --window START_US:END_US] [--top N]
                  [--json FILE]

The window is chosen as render_trace.py chooses it (the K-th host span named NAME, reaching the
GPU work launched from inside it; or START_US:END_US; or the whole trace). With --around, a GPU
span counts when it was launched from inside that host span (its launch flow starts there): the
work of one replay, not the next replay's that runs while a long kernel of this one still does;
a trace without launch flows, and --window, count the GPU spans that start inside the window.
TRACE may be gzipped. Exit 0 ok, 2 bad usage (a file that cannot be
read, a name not in the trace, a window without GPU work).
"""
import argparse
import json
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from render_trace import DEVICE_PID_BASE, UsageError, load, pick_window  # noqa: E402

GPU_CATS = ("kernel", "memcpy", "memset")


def exclusive_spans(events):
    """Each GPU span with the time its stream spent on it alone: from its start or the end of
    the stream's previous span, whichever is later, to its end. A kernel launched with
    programmatic dependent launch starts while its predecessor still runs and waits inside for
    it, so its recorded span holds that wait; counted this way, a stream's spans tile its busy
    time and each kernel keeps its own part."""
    by_stream = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e["pid"] >= DEVICE_PID_BASE and e.get("cat") in GPU_CATS:
            by_stream[(e["pid"], e["tid"])].append(e)
    out = []
    for spans in by_stream.values():
        spans.sort(key=lambda e: (e["ts"] + e["dur"], e["ts"]))
        prev_end = float("-inf")
        for e in spans:
            end = e["ts"] + e["dur"]
            out.append((e, max(0.0, end - max(e["ts"], prev_end))))
            prev_end = max(prev_end, end)
    return out


def ranked(totals):
    """Rows of {"name", "calls", "total_us", ...} per kernel name, slowest first, each with its
    mean_us and its share of the busy time; and that busy time. Shared with
    experiments/peers/torch_kernels.py, whose rows come from PyTorch's profiler."""
    busy = sum(r["total_us"] for r in totals)
    out = sorted(totals, key=lambda r: -r["total_us"])
    for r in out:
        r["mean_us"] = r["total_us"] / r["calls"]
        r["share"] = r["total_us"] / busy if busy else 0.0
    return out, busy


def print_rows(rows, top):
    print(f"{'total us':>10} {'share':>6} {'calls':>6} {'mean us':>9}  name")
    for r in rows[:top]:
        print(f"{r['total_us']:10.1f} {100 * r['share']:5.1f}% {r['calls']:6d} {r['mean_us']:9.2f}  {r['name'][:110]}")


def launched_from(events, lo, hi):
    """The (pid, tid, ts) of each GPU span whose launch flow starts between lo and hi; None when
    the trace holds no launch flows at all."""
    flows = [e for e in events if e.get("ph") in ("s", "f")]
    if not flows:
        return None
    started = {e["id"] for e in flows if e["ph"] == "s" and lo <= e["ts"] <= hi}
    return {(e["pid"], e["tid"], e["ts"]) for e in flows if e["ph"] == "f" and e.get("id") in started}


def table(events, window, launched=None):
    lo, hi = window
    rows = {}
    for e, own_us in exclusive_spans(events):
        if launched is not None:
            if (e["pid"], e["tid"], e["ts"]) not in launched:
                continue
        elif not lo <= e["ts"] <= hi:
            continue
        r = rows.setdefault(e["name"], {"name": e["name"], "cat": e["cat"], "calls": 0, "total_us": 0.0})
        r["calls"] += 1
        r["total_us"] += own_us
    return ranked(list(rows.values()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--around", help="the window: the host span of this name (with --index)")
    ap.add_argument("--index", type=int, default=0, help="which span named --around, 0 first, -1 last")
    ap.add_argument("--window", help="the window: START_US:END_US in the trace's microseconds")
    ap.add_argument("--top", type=int, default=25, help="rows printed (the JSON holds all)")
    ap.add_argument("--json", help="also write the whole table to FILE")
    a = ap.parse_args()
    try:
        events, _ = load(a.trace)
        spans = [e for e in events if e.get("ph") == "X"]
        if not spans:
            raise UsageError(f"{a.trace}: the trace holds no spans")
        window = pick_window(events, spans, a)
        launched = None
        if a.around:
            named = sorted((e for e in spans if e["name"] == a.around), key=lambda e: e["ts"])[a.index]
            launched = launched_from(events, named["ts"], named["ts"] + named["dur"])
        rows, busy = table(events, window, launched)
        if not rows:
            raise UsageError(f"{a.trace}: no GPU span starts in the window {window[0]:.1f}:{window[1]:.1f} us "
                             "(a trace made on the CPU backend holds host spans alone)")
    except UsageError as e:
        print(f"kernel_table.py: {e}", file=sys.stderr)
        return 2
    what = f"launched from {a.around!r} #{a.index}" if launched is not None else "starting in the window"
    print(f"window {window[0]:.1f}:{window[1]:.1f} us, GPU busy {busy:.1f} us in {sum(r['calls'] for r in rows)} spans "
          f"{what}")
    print_rows(rows, a.top)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"trace": a.trace, "window_us": list(window), "busy_us": busy, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
