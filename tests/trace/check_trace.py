#!/usr/bin/env python3
"""Checks a trace that a tg-* binary wrote with --trace, as a reader of the trace-event format.

  check_trace.py TRACE[.gz] [--backend cpu|cuda] [--ops-per-iteration N] [--kernels-at-least N]
                       [--schema docs/trace.schema.json]

What a schema cannot state: the complete events ("X") of one lane nest (a span ends before the
span around it ends, or starts after it ended); every flow start has one finish, no earlier than
itself (a kernel never starts before its launch); on a CUDA device every kernel span has a
launch flow; on the CPU backend there are no GPU lanes and the trace says why. With
--ops-per-iteration, every dynamic iteration holds that many op spans (one "launch" step each).
With --schema, the file is also validated by Python's jsonschema (exit 77, skipped, without it).
Exit 0 when every check holds, 1 with the first problems listed otherwise, 2 for bad usage.
"""
import argparse
import gzip
import json
import sys
from collections import defaultdict

DEVICE_PID_BASE = 100
ITERATIONS = ("dynamic inference", "dynamic training step")


def ns(us):
    """A timestamp in microseconds (three decimals) as integer nanoseconds."""
    return int(round(float(us) * 1000))


def check_nesting(spans, problems):
    by_lane = defaultdict(list)
    for e in spans:
        by_lane[(e["pid"], e["tid"])].append((ns(e["ts"]), ns(e["dur"]), e["name"]))
    for lane, evs in by_lane.items():
        evs.sort(key=lambda x: (x[0], -x[1]))
        stack = []
        for ts, dur, name in evs:
            while stack and ts >= stack[-1][0] + stack[-1][1]:
                stack.pop()
            if stack and ts + dur > stack[-1][0] + stack[-1][1]:
                top = stack[-1]
                problems.append(f"lane {lane}: span {name!r} at {ts} ns ({dur} ns) overlaps {top[2]!r} at {top[0]} ns "
                                f"({top[1]} ns) without nesting in it")
            stack.append((ts, dur, name))


def check_flows(events, problems):
    starts, finishes = {}, {}
    for e in events:
        if e["ph"] == "s":
            starts[e["id"]] = e
        elif e["ph"] == "f":
            finishes[e["id"]] = e
    for fid, s in starts.items():
        f = finishes.get(fid)
        if f is None:
            problems.append(f"flow {fid}: a start at {s['ts']} us without a finish")
        elif ns(f["ts"]) < ns(s["ts"]):
            problems.append(f"flow {fid}: the GPU work starts at {f['ts']} us, before its launch at {s['ts']} us")
    for fid in finishes.keys() - starts.keys():
        problems.append(f"flow {fid}: a finish without a start")
    return finishes


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--backend", choices=("cpu", "cuda"))
    ap.add_argument("--ops-per-iteration", type=int)
    ap.add_argument("--kernels-at-least", type=int)
    ap.add_argument("--schema")
    a = ap.parse_args()
    try:
        opener = gzip.open if a.trace.endswith(".gz") else open
        with opener(a.trace, "rt", encoding="utf-8") as f:
            t = json.load(f)
    except (OSError, ValueError) as e:
        print(f"check_trace: {a.trace}: {e}", file=sys.stderr)
        return 1
    if a.schema:
        try:
            import jsonschema
        except ImportError:
            print("SKIPPED: python3 module jsonschema is missing (apt-get install python3-jsonschema)", file=sys.stderr)
            return 77
        with open(a.schema, encoding="utf-8") as f:
            jsonschema.validate(t, json.load(f), cls=jsonschema.Draft202012Validator)
    problems = []
    events = t["traceEvents"]
    meta = t["otherData"]
    spans = [e for e in events if e["ph"] == "X"]
    # Host threads' spans nest; a GPU stream's kernels overlap under programmatic dependent
    # launch (the next grid starts before the previous one ends), so its lanes are not held to it.
    check_nesting([e for e in spans if e["pid"] < DEVICE_PID_BASE], problems)
    finishes = check_flows(events, problems)
    if a.backend and meta["backend"] != a.backend:
        problems.append(f"otherData.backend is {meta['backend']!r}, expected {a.backend!r}")
    gpu_spans = [e for e in spans if e["pid"] >= DEVICE_PID_BASE]
    kernels = [e for e in gpu_spans if e["cat"] == "kernel"]
    if meta["backend"] == "cpu":
        if gpu_spans:
            problems.append(f"a CPU-backend trace holds {len(gpu_spans)} GPU spans")
        if not meta["gpu_spans"].startswith("none"):
            problems.append(f"a CPU-backend trace must say it has no GPU spans; otherData.gpu_spans is {meta['gpu_spans']!r}")
    else:
        launched = {(f["pid"], f["tid"], ns(f["ts"])) for f in finishes.values()}
        for k in kernels:
            if (k["pid"], k["tid"], ns(k["ts"])) not in launched:
                problems.append(f"kernel {k['name']!r} at {k['ts']} us has no launch flow")
    if a.kernels_at_least is not None and len(kernels) < a.kernels_at_least:
        problems.append(f"{len(kernels)} kernel spans, expected at least {a.kernels_at_least}")
    if a.ops_per_iteration is not None:
        iters = [e for e in spans if e["name"] in ITERATIONS and e["pid"] < DEVICE_PID_BASE]
        launches = [e for e in spans if e["name"] == "launch" and e["cat"] == "host"]
        if not iters:
            problems.append("no dynamic iteration in the trace")
        for it in iters:
            b, end = ns(it["ts"]), ns(it["ts"]) + ns(it["dur"])
            n = sum(1 for l in launches if l["tid"] == it["tid"] and b <= ns(l["ts"]) < end)
            if n != a.ops_per_iteration:
                problems.append(f"the dynamic iteration at {it['ts']} us holds {n} op spans, expected {a.ops_per_iteration}")
    if problems:
        print(f"check_trace: {a.trace}: {len(problems)} problems:", file=sys.stderr)
        for p in problems[:20]:
            print("  " + p, file=sys.stderr)
        return 1
    print(f"{a.trace}: {len(events)} events, {len(spans)} spans on {len({(e['pid'], e['tid']) for e in spans})} lanes, "
          f"{len(kernels)} kernels, {len(finishes)} flows: spans nest, flows run forward"
          + (", schema valid" if a.schema else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
