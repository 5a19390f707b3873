"""Checks a CPU run of the PyTorch baseline against tg-train's and tg-launch's in the
same folder (torch_baseline_test.sh): every dynamic iteration of twograph found its
torch_eager row in tg-report compare's output, and the loss curves, from the same
initial weights and batches, agree within 1e-4 relative (they differ only in the
f32 rounding of two BLAS libraries: about 1e-7 here)."""
import json
import os
import sys

d = sys.argv[1]
load = lambda n: json.load(open(os.path.join(d, n)))
torch, train, launch = load("torch.json"), load("train.json"), load("launch.json")


def rows(report, name, executor):
    return {json.dumps({k: v for k, v in m["params"].items() if k != "executor"}, sort_keys=True): m
            for m in report["measurements"] if m["name"] == name and m["params"].get("executor") == executor}


failures = []
for twograph, name, file in ((train, "iteration", "compare_train.txt"), (launch, "dynamic_iteration", "compare_launch.txt")):
    mine, theirs = rows(twograph, name, "dynamic"), rows(torch, name, "torch_eager")
    if not mine:
        failures.append(f"{file}: twograph's report has no dynamic {name} rows")
    for key in mine:
        if key not in theirs:
            failures.append(f"no torch_eager {name} row for {key}")
    text = open(os.path.join(d, file)).read()
    paired = text.count("| B: executor=torch_eager")
    if paired < len(mine):
        failures.append(f"{file}: tg-report compare paired {paired} rows, expected {len(mine)}")
curves_t, curves_p = rows(train, "loss_curve", "dynamic"), rows(torch, "loss_curve", "torch_eager")
for key, m in curves_t.items():
    other = curves_p.get(key)
    if not other:
        failures.append(f"no torch loss curve for {key}")
        continue
    worst = max(abs(a - b) / abs(a) for a, b in zip(m["samples"], other["samples"]))
    print(f"loss curve {key}: {len(m['samples'])} steps, worst relative difference {worst:.2e}")
    if len(m["samples"]) != len(other["samples"]) or worst > 1e-4:
        failures.append(f"loss curves differ for {key}: worst relative difference {worst:.2e}")
if failures:
    sys.exit("check_torch_baseline: " + "; ".join(failures))
print(f"check_torch_baseline: {len(curves_t)} loss curves agree, every dynamic row has its torch_eager pair")
