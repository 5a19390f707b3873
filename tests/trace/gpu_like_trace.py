#!/usr/bin/env python3
# A trace shaped as a CUDA run writes it (device lanes, launch flows), for what a machine
# without a GPU cannot record: N ops, each a launch on the host and a kernel on stream 7.
import json, sys
out, n, drop_flow = sys.argv[1], int(sys.argv[2]), len(sys.argv) > 3
ev = [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}},
      {"ph": "M", "name": "process_name", "pid": 100, "tid": 0, "args": {"name": "GPU 0 (test)"}},
      {"ph": "M", "name": "thread_name", "pid": 100, "tid": 7, "args": {"name": "stream 7"}},
      {"ph": "X", "name": "dynamic inference", "cat": "host", "pid": 1, "tid": 1, "ts": 1.0, "dur": 12.0 * n + 10}]
for i in range(n):
    t = 5.0 + 12 * i
    ev += [{"ph": "X", "name": "relu", "cat": "host", "pid": 1, "tid": 1, "ts": t, "dur": 11.0},
           {"ph": "X", "name": "launch", "cat": "host", "pid": 1, "tid": 1, "ts": t + 5, "dur": 5.0},
           {"ph": "X", "name": "cudaLaunchKernel", "cat": "cuda_api", "pid": 1, "tid": 1, "ts": t + 5.5, "dur": 4.0},
           {"ph": "X", "name": "relu_kernel<float>", "cat": "kernel", "pid": 100, "tid": 7, "ts": t + 12, "dur": 2.0}]
    if not (drop_flow and i == n - 1):
        ev += [{"ph": "s", "name": "launch", "cat": "launch", "pid": 1, "tid": 1, "ts": t + 5.5, "id": i + 1},
               {"ph": "f", "name": "launch", "cat": "launch", "pid": 100, "tid": 7, "ts": t + 12, "id": i + 1, "bp": "e"}]
meta = {"tool": "test", "backend": "cuda", "device": "test", "gpu_spans": "CUPTI", "clock": "c",
        "trace_iterations": "1", "events": str(len(ev)), "dropped_events": "0"}
json.dump({"traceEvents": ev, "displayTimeUnit": "ns", "otherData": meta}, open(out, "w"))
