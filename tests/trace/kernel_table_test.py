#!/usr/bin/env python3
"""tools/trace/kernel_table.py on crafted traces: with --around, the GPU spans launched from that
host span count, not those of the next one that start while a long kernel of this one still runs;
with --window (and in a trace without launch flows) the spans that start in the window. Exit 0 when every check holds."""
import json
import os
import subprocess
import sys
import tempfile

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "trace", "kernel_table.py")


def trace(with_flows):
    ev = [{"ph": "M", "name": "process_name", "pid": 100, "tid": 0, "args": {"name": "GPU 0 (test)"}}]
    # Two replays; the first launches a long kernel A (20..120 us) and B after it, the second
    # launches C on another stream at 50 us, inside the first's window.
    launches = [("replay", 0.0, [("A", 7, 20.0, 100.0), ("B", 7, 120.0, 5.0)]),
                ("replay", 30.0, [("C", 8, 50.0, 4.0)])]
    flow = 0
    for name, t, kernels in launches:
        ev.append({"ph": "X", "name": name, "cat": "host", "pid": 1, "tid": 1, "ts": t, "dur": 10.0})
        for k, stream, ts, dur in kernels:
            flow += 1
            ev.append({"ph": "X", "name": k, "cat": "kernel", "pid": 100, "tid": stream, "ts": ts, "dur": dur})
            if with_flows:
                ev.append({"ph": "s", "name": "launch", "cat": "launch", "pid": 1, "tid": 1, "ts": t + 1, "id": flow})
                ev.append({"ph": "f", "name": "launch", "cat": "launch", "pid": 100, "tid": stream, "ts": ts,
                           "id": flow, "bp": "e"})
    return {"traceEvents": ev, "displayTimeUnit": "ns"}


def names(path, *args):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        r = subprocess.run([sys.executable, TOOL, path, *args, "--json", out.name], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"kernel_table.py {' '.join(args)} exited {r.returncode}: {r.stderr}")
        with open(out.name, encoding="utf-8") as f:
            return sorted(row["name"] for row in json.load(f)["rows"]), r.stdout


def main():
    failures = []
    with tempfile.TemporaryDirectory() as d:
        for flows in (True, False):
            path = os.path.join(d, f"t{int(flows)}.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(trace(flows), f)
            if flows:
                got, out = names(path, "--around", "replay", "--index", "0")
                if got != ["A", "B"]:
                    failures.append(f"--around replay --index 0 counted {got}, expected ['A', 'B']:\n{out}")
                if "launched from 'replay' #0" not in out:
                    failures.append(f"the header does not say what was counted:\n{out}")
                got, _ = names(path, "--around", "replay", "--index", "1")
                if got != ["C"]:
                    failures.append(f"--around replay --index 1 counted {got}, expected ['C']")
                got, _ = names(path, "--around", "replay", "--index", "-1")  # the last, as in Python
                if got != ["C"]:
                    failures.append(f"--around replay --index -1 counted {got}, expected ['C']")
            got, _ = names(path, "--window", "0:60")
            if got != ["A", "C"]:
                failures.append(f"flows={flows}: --window 0:60 counted {got}, expected ['A', 'C']")
    for f in failures:
        print(f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
