"""docs/shapes.md, the CNNs: tg-shapes --models with tg-train's CNNs (the batch of training and of
serving, the ResNets' image size), from docs/results/shapes_cnn.json: each workload's strategies
against dynamic, their checks, and the notes on what bucket cannot pad. A CPU report says so in
every table it makes."""
from .common import Missing, num, pct, report, t, table

STEM = "shapes_cnn"
STRATEGIES = ("recapture", "cache", "bucket", "update")
EXTENT = {"batch": "batch", "image": "image size"}


def varies(p):
    """What varies, with the size that stays fixed: "batch (image 224)", "image size (batch 32)"."""
    fixed = "image" if p["dimension"] == "batch" else "batch"
    return f"{EXTENT[p['dimension']]} ({fixed} {p[fixed]})" if fixed in p else EXTENT[p["dimension"]]


def workloads(r):
    """(model, dimension, mode) in report order."""
    seen = []
    for m in r.all("cnn_iteration", strategy="dynamic"):
        p = m["params"]
        k = (p["model"], p["dimension"], p["mode"])
        if k not in seen:
            seen.append(k)
    if not seen:
        raise Missing(f"{r.rel}: no cnn_iteration rows (run tg-shapes --models with a CNN)")
    return seen


def device_line(r):
    """Which device the figures are from; on the CPU, what that means for them."""
    if r.r.get("device", {}).get("kind") == "cuda":
        return ""
    return ("**CPU figures** (the CPU backend: reference convolutions, no CUDA graph, so a compile has no "
            "capture or instantiation and `update` runs as recapture; the networks at their CPU sizes). ")


def bucket_note(r, model, dimension, mode):
    part = f"cnn_iteration dimension={dimension} mode={mode} model={model} strategy=bucket"
    for n in r.r.get("notes", []):
        if n["part"] == part:
            return n["reason"]
    return None


def tab_shapes_cnn():
    r = report(STEM)
    rows, notes = [], []
    for model, dimension, mode in workloads(r):
        where = dict(model=model, dimension=dimension, mode=mode)
        dyn = r.one("cnn_iteration", strategy="dynamic", **where)
        row = [model, varies(dyn["params"]), "training" if mode == "train" else "serving",
               dyn["params"]["distribution"].replace("_", " "), t(dyn["mean"])]
        for s in STRATEGIES:
            found = r.all("cnn_iteration", strategy=s, **where)
            if not found:
                reason = bucket_note(r, model, dimension, mode)
                if reason is None:
                    raise Missing(f"{r.rel}: no {s} row for {where} and no note saying why")
                if reason not in notes:
                    notes.append(reason)
                row.append(f"not run ({notes.index(reason) + 1})")
                continue
            m = found[0]
            v = m["mean"] / dyn["mean"]
            pad = f", {pct(m['extra']['padding_waste'])} padding" if s == "bucket" else ""
            row.append(f"{'**' if v > 1 else ''}{num(v)}x{'**' if v > 1 else ''} ({int(m['extra']['compiles'])}{pad})")
        rows.append(row)
    steps = {int(m["params"]["iterations"]) for m in r.all("cnn_iteration", strategy="dynamic")}
    text = table(["model", "varies", "run", "extents", "dynamic, mean step"] +
                 [f"{s}: mean vs dynamic (compiles)" for s in STRATEGIES], rows, ["---"] * 4 + ["---:"] * 5)
    text += ("\n\n" + device_line(r) + f"{' or '.join(str(s) for s in sorted(steps))} steps per strategy; every step "
             "timed, compile included; **bold**: static loses (above 1x).")
    if notes:
        text += " Not run, as the report's notes say:\n"
    for i, reason in enumerate(notes):
        text += f"\n{i + 1}. {reason[0].upper()}{reason[1:]}."
    return text + "\n\n" + r.source_line()


def tab_shapes_cnn_checks():
    r = report(STEM)
    rows = [[m["params"]["model"], varies(m["params"]),
             "training" if m["params"]["mode"] == "train" else "serving", m["params"]["strategy"],
             m["params"]["compared"], f"{int(m['median'])} {'tensors' if m['params']['mode'] == 'train' else 'predictions'}",
             "passed"] for m in r.all("cnn_check_vs_dynamic")]
    if not rows:
        raise Missing(f"{r.rel}: no cnn_check_vs_dynamic rows")
    return (table(["model", "varies", "run", "strategy", "compared with dynamic", "checked", "result"], rows) +
            "\n\n" + device_line(r) + r.source_line())


TABLES = {"shapes-cnn": tab_shapes_cnn, "shapes-cnn-checks": tab_shapes_cnn_checks}
PLOTTERS = {}
