"""The twograph report (docs/report-format.md, docs/report.schema.json) written from
Python, for measurements taken outside twograph (experiments/peers/torch_baseline.py):
the same statistics (experiments/harness/stats.cpp), the same loop rule
(experiments/harness/measure.cpp) and the same metadata fields, so that tg-report
compare and markdown, tools/plot and tools/docs-tables/docs_tables read it as they read tg-train's."""
import datetime
import json
import math
import os
import platform
import shlex
import socket
import subprocess
import time

SCHEMA_VERSION = 1
DEFAULT_LOOP = {"warmup": 3, "min_reps": 10, "min_time_s": 0.2, "max_reps": 1000}
QUICK_LOOP = {"warmup": 1, "min_reps": 5, "min_time_s": 0.02, "max_reps": 200}


def percentile(sorted_x, q):
    """Hyndman-Fan type 7 (numpy's default), as stats.cpp."""
    h = q * (len(sorted_x) - 1)
    lo = math.floor(h)
    hi = min(lo + 1, len(sorted_x) - 1)
    return sorted_x[lo] + (h - lo) * (sorted_x[hi] - sorted_x[lo])


def summarize(samples):
    if not samples:
        raise ValueError("a measurement needs at least one sample")
    s = sorted(samples)
    med = percentile(s, 0.5)
    iqr = percentile(s, 0.75) - percentile(s, 0.25)
    noise = iqr / abs(med) if med != 0 else 0.0
    return {"count": len(s), "min": s[0], "p10": percentile(s, 0.1), "median": med, "p90": percentile(s, 0.9),
            "max": s[-1], "mean": sum(s) / len(s), "noise": noise, "noisy": noise > 0.10}


def run_loop(loop, sample):
    """warmup untimed calls, then samples until count >= min_reps and the timed total
    >= min_time_s, never more than max_reps (measure.h)."""
    for _ in range(loop["warmup"]):
        sample()
    out, total = [], 0.0
    while len(out) < loop["max_reps"] and (len(out) < loop["min_reps"] or total < loop["min_time_s"]):
        t = sample()
        out.append(t)
        total += t
    return out


def time_host(loop, body, sync):
    """sync; t0; body; sync; t1, as experiments/harness time_host (batch 1)."""
    def sample():
        sync()
        t0 = time.perf_counter()
        body()
        sync()
        return time.perf_counter() - t0
    return run_loop(loop, sample)


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _git_rev(repo):
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=7"], cwd=repo, check=True,
                              capture_output=True, text=True).stdout.strip() or "unknown"
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


class Report:
    def __init__(self, tool, version, argv, loop, quick, device_spec, device_kind, device_id, device_name,
                 cuda_build, gpus=(), software=None, repo=None):
        self.loop = loop
        self.measurements, self.notes, self._keys = [], [], set()
        self.meta = {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": tool, "version": version, "git_rev": _git_rev(repo or os.getcwd()),
                     "build_type": "python", "cuda_build": bool(cuda_build)},
            "run": {"command_line": " ".join(shlex.quote(a) for a in argv),
                    "utc_time": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "quick": bool(quick), "loop": dict(loop)},
            "host": {"name": socket.gethostname(), "cpu_model": _cpu_model(), "cpu_threads": os.cpu_count() or 0},
            "device": {"spec": device_spec, "kind": device_kind, "id": device_id, "name": device_name},
            "gpus": list(gpus),
            "software": software or {"cuda_runtime_version": 0, "cuda_driver_version": 0, "cublas_version": 0,
                                     "openblas_config": "", "blas_threads": 0},
        }

    def add(self, name, params, samples, unit="s", better="lower", timer="host", extra=None):
        key = (name, json.dumps(params, sort_keys=True))
        if key in self._keys:
            raise ValueError(f"measurement {name} {params} is recorded twice")
        self._keys.add(key)
        m = {"name": name, "params": dict(params), "unit": unit, "better": better, "timer": timer}
        m.update(summarize(samples))
        m["extra"] = {k: (v if isinstance(v, (int, float)) and math.isfinite(v) else None)
                      for k, v in (extra or {}).items()}
        m["samples"] = list(samples)
        self.measurements.append(m)
        return m

    def add_time(self, name, params, samples, extra=None, timer="host"):
        return self.add(name, params, samples, extra=extra, timer=timer)

    def add_value(self, name, params, value, unit, better="lower", extra=None):
        return self.add(name, params, [value], unit=unit, better=better, timer="value", extra=extra)

    def skip(self, part, reason):
        self.notes.append({"part": part, "reason": reason})

    def to_json(self):
        out = dict(self.meta)
        out["measurements"] = self.measurements
        out["notes"] = self.notes
        return json.dumps(out, indent=1)

    def write(self, path):
        """Atomically, as the C++ writer: path.tmp, fsync, rename."""
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(self.to_json() + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    def table(self):
        rows = []
        for m in self.measurements:
            params = " ".join(f"{k}={v}" for k, v in sorted(m["params"].items()))
            med = m["median"]
            shown = f"{med * 1e6:.1f} us" if m["unit"] == "s" else f"{med:.6g} {m['unit']}"
            rows.append(f"{m['name']:<18} {params:<90} {shown}")
        rows += [f"skipped {n['part']}: {n['reason']}" for n in self.notes]
        return "\n".join(rows)
