"""check_shapes_cnn.py REPORT MODEL...: tg-shapes --models with CNNs.

For each model, every workload's rows: the batch of training (recapture, cache, update; bucket
a note when the network has batch norm, a row when it has none), the batch of serving (all
four), and the image size of training (the ResNets: recapture, cache, update, bucket a note;
VGG-16: a note for the whole workload). Each strategy run has its check against dynamic,
bitwise but for bucket, and a timed row next to dynamic's over the same extents."""
import json
import sys

path, models = sys.argv[1], sys.argv[2:]
r = json.load(open(path))
rows = [m for m in r["measurements"] if m["name"] in ("cnn_check_vs_dynamic", "cnn_iteration")]
notes = [n["part"] for n in r.get("notes", [])]
fail = []


def find(name, **params):
    return [m for m in rows if m["name"] == name and all(m["params"].get(k) == v for k, v in params.items())]


for model in models:
    batch_norm = model != "vgg16"
    workloads = [("batch", "train", not batch_norm), ("batch", "inference", True)]
    if model == "vgg16":
        if not any(p.startswith(f"cnn_iteration model={model} dimension=image") for p in notes):
            fail.append(f"{model}: no note on its fixed image size")
    else:
        workloads.append(("image", "train", False))
    for dimension, mode, bucket in workloads:
        where = dict(model=model, dimension=dimension, mode=mode)
        strategies = ["recapture", "cache", "update"] + (["bucket"] if bucket else [])
        for s in strategies:
            checks = find("cnn_check_vs_dynamic", strategy=s, **where)
            if len(checks) != 1 or checks[0]["median"] < 1:
                fail.append(f"{where} {s}: {len(checks)} checks against dynamic with tensors compared (1 expected)")
            elif checks[0]["params"]["exact"] != (s != "bucket"):
                fail.append(f"{where} {s}: compared {checks[0]['params']['compared']}")
        for s in ["dynamic"] + strategies:
            if len(find("cnn_iteration", strategy=s, **where)) != 1:
                fail.append(f"{where}: no cnn_iteration row for {s}")
        if not bucket:
            if find("cnn_iteration", strategy="bucket", **where):
                fail.append(f"{where}: bucket ran where it cannot pad")
            part = f"cnn_iteration dimension={dimension} mode={mode} model={model} strategy=bucket"
            if part not in notes:
                fail.append(f"{where}: no note saying why bucket does not run ({part})")
if fail:
    sys.exit("FAIL:\n  " + "\n  ".join(fail))
print(f"tg-shapes CNNs: {len(rows)} rows for {', '.join(models)}, every check passed, every skipped bucket noted")
