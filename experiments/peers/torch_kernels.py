#!/usr/bin/env python3
"""PyTorch's GPU kernels on one of tg-train's workloads, as a table beside
tools/trace/kernel_table.py's table of a twograph trace of the same workload.

    python3 experiments/peers/torch_kernels.py --workload mlp_w4096 --precision bf16 \\
        --executor torch_cuda_graph --mode inference --json torch_kernels.json
    python3 experiments/peers/torch_kernels.py --workload resnet50 --precision fp32 --mode train

The workload is built and run exactly as torch_baseline.py runs it (the same Runner);
torch.profiler records `--iterations` steps after a warm-up, and the table sums the
device time of each kernel name over those steps: calls, total and mean microseconds,
each name's share of the GPU's busy time. --trace FILE also writes the profiler's Chrome
trace. Needs torch with CUDA: without it, it says so and exits 2.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "trace"))
from kernel_table import print_rows, ranked  # noqa: E402  (the same table as a twograph trace's)

WORKLOADS = {
    "mlp_w256": ("mlp", 32, 256, 8),
    "mlp_w4096": ("mlp", 1024, 4096, 4),
    "transformer": ("transformer", 32, 256, 512, 8),
    "resnet50": ("cnn", "resnet50", 32, 224),  # cudnn.benchmark on, as torch_baseline's CNN rows
    "gpt2_small": ("gpt2", 8, 1024),
}


def config(tb, name):
    w = WORKLOADS[name]
    if w[0] == "mlp":
        return tb.mlp_config(name, w[1], w[2], w[3])
    if w[0] == "cnn":
        return tb.cnn_config(w[1], w[2], w[3])
    if w[0] == "gpt2":
        return tb.gpt2_config(name, w[1], w[2], tb.GPT2_SMALL)
    return tb.transformer_config(*w[1:])


def kernel_rows(prof):
    rows = {}
    for e in prof.events():
        dev_us = getattr(e, "device_time", None)
        if dev_us is None:
            dev_us = getattr(e, "cuda_time", 0.0)
        kind = str(getattr(e, "device_type", ""))
        if not kind.endswith("CUDA") or dev_us <= 0:
            continue
        r = rows.setdefault(e.name, {"name": e.name, "calls": 0, "total_us": 0.0})
        r["calls"] += 1
        r["total_us"] += dev_us
    return ranked(list(rows.values()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", choices=sorted(WORKLOADS), default="mlp_w4096")
    ap.add_argument("--precision", choices=["fp32", "tf32", "bf16", "fp16"], default="bf16")
    ap.add_argument("--executor", choices=["torch_eager", "torch_cuda_graph", "torch_compile"], default="torch_cuda_graph")
    ap.add_argument("--mode", choices=["inference", "train"], default="inference")
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--json")
    ap.add_argument("--trace")
    a = ap.parse_args()
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile
    except ImportError:
        print("torch_kernels.py: needs torch (pip install torch)", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("torch_kernels.py: needs a CUDA device", file=sys.stderr)
        return 2
    import torch_baseline as tb
    import torch_models as tm
    dev = torch.device("cuda", 0)
    torch.backends.cudnn.benchmark = True
    c = config(tb, a.workload)
    with tb.matmul_precision(torch, a.precision):
        runner = tb.Runner(torch, dev, c, a.executor, a.mode == "train", a.precision)
        feeds = tm.model_feeds(c["inputs"], 7, c.get("classes", tb.CLASSES))
        for _ in range(3):
            runner.step(feeds)
        runner.sync()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(a.iterations):
                runner.step(feeds)
            runner.sync()
    rows, busy = kernel_rows(prof)
    print(f"{a.workload} {a.precision} {a.executor} {a.mode}: GPU busy {busy / a.iterations:.1f} us per step")
    print_rows(rows, a.top)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"workload": a.workload, "precision": a.precision, "executor": a.executor, "mode": a.mode,
                       "iterations": a.iterations, "busy_us": busy, "rows": rows}, f, indent=1)
    if a.trace:
        prof.export_chrome_trace(a.trace)
    return 0


if __name__ == "__main__":
    sys.exit(main())
