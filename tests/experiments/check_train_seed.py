"""check_train_seed.py SEED_A RUN_A RUN_A_AGAIN SEED_B RUN_B: tg-train --seed.

Each report records its seed under run.options.train.seed; two runs with the same seed give
the same loss curves, bit for bit (the same parameters, data and dropout masks), and a run
with another seed gives a different curve for every configuration."""
import json
import sys

seed_a, path_a, path_again, seed_b, path_b = sys.argv[1:6]


def curves(path, seed):
    r = json.load(open(path))
    got = r["run"]["options"].get("train", {}).get("seed")
    if got != int(seed):
        sys.exit(f"FAIL: {path} records seed {got}, not {seed}")
    out = {}
    for m in r["measurements"]:
        if m["name"] == "loss_curve":
            out[json.dumps(m["params"], sort_keys=True)] = m["samples"]
    if not out:
        sys.exit(f"FAIL: {path} has no loss_curve rows")
    return out


a, again, b = curves(path_a, seed_a), curves(path_again, seed_a), curves(path_b, seed_b)
if a.keys() != again.keys() or a.keys() != b.keys():
    sys.exit("FAIL: the runs measured different configurations")
for key in a:
    if a[key] != again[key]:
        sys.exit(f"FAIL: seed {seed_a} twice gave different loss curves for {key}: {a[key]} vs {again[key]}")
    if a[key] == b[key]:
        sys.exit(f"FAIL: seeds {seed_a} and {seed_b} gave the same loss curve for {key}: {a[key]}")
print(f"tg-train --seed: {len(a)} loss curves equal for seed {seed_a} twice, all different for seed {seed_b}")
