"""docs/train.md: the MLP batch sweep of tg-train (static vs dynamic, training and
inference), the other models, the feed-copy variants, the plot, and the values of the
chapter's prose."""
from . import common
from .common import Missing, num, report, t, table, x
from .plotting import save

MLP = "mlp_w256_d8"
FEED_COPIES = ("threads_streaming", "threads", "serial")


def it(name="iteration", sweep=MLP, **p):
    return report("train").one(name, sweep=sweep, **p)


def med(name="iteration", sweep=MLP, **p):
    return it(name, sweep, **p)["median"]


def speedup(sweep=MLP, **p):
    return report("train").one("speedup_static_over_dynamic", sweep=sweep, **p)["median"]


def tab_train_mlp():
    r = report("train")
    cols = [("train", "static"), ("train", "static_plain"), ("train", "dynamic"), ("inference", "static"),
            ("inference", "dynamic")]
    batches = sorted({m["params"]["batch"] for m in r.all("iteration", sweep=MLP)})
    rows = [[b] + [t(med(batch=b, mode=mo, executor=ex)) for mo, ex in cols] +
            [t(med("replay", batch=b, mode=mo, executor="static")) for mo in ("train", "inference")] for b in batches]
    return table(["batch", "train static", "train static, plain launches", "train dynamic", "inference static",
                  "inference dynamic", "train static, replay only", "inference static, replay only"], rows)


def configs(sweep):
    """The distinct parameter sets of one sweep's static training iterations."""
    keep = ("batch", "seq", "d_model", "heads", "width", "depth")
    out = []
    for m in report("train").all("iteration", sweep=sweep, mode="train", executor="static"):
        c = {k: m["params"][k] for k in keep if k in m["params"]}
        if c not in out:
            out.append(c)
    return out


def label(sweep, c):
    if sweep == "transformer":
        return f"transformer b{c['batch']} s{c['seq']} d{c['d_model']}"
    return f"MLP w{c['width']} d{c['depth']} b{c['batch']}"


def tab_train_models():
    rows = []
    for sweep in ("mlp_w4096_d4", "transformer"):
        for c in configs(sweep):
            tr = [med(sweep=sweep, mode="train", executor=e, **c) for e in ("static", "static_plain", "dynamic")]
            inf = [med(sweep=sweep, mode="inference", executor=e, **c) for e in ("static", "dynamic")]
            rows.append([label(sweep, c), t(tr[0]), t(med("replay", sweep=sweep, mode="train", executor="static", **c)),
                         t(tr[1]), t(tr[2]), x(speedup(sweep, mode="train", **c)), t(inf[0]), t(inf[1]),
                         x(speedup(sweep, mode="inference", **c))])
    return table(["model", "train static", "replay only", "plain launches", "dynamic", "static speedup",
                  "inference static", "inference dynamic", "static speedup"], rows, ["---"] + ["---:"] * 8)


def feed_rows():
    """(sweep, config) of every training configuration with feeds of 1 MiB or more."""
    out = []
    for sweep in (MLP, "mlp_w4096_d4", "transformer"):
        for c in configs(sweep):
            f = report("train").all("feed", sweep=sweep, feed_copy="serial", **c)
            if f and f[0]["extra"]["MiB"] >= 1:
                out.append((sweep, c))
    return out


def tab_train_feed():
    rows = []
    for sweep, c in feed_rows():
        feeds = [it("feed", sweep, feed_copy=fc, **c) for fc in FEED_COPIES]
        steps = [med("step_by_feed_copy", sweep, feed_copy=fc, **c) for fc in FEED_COPIES]
        rows.append([label(sweep, c), num(feeds[0]["extra"]["MiB"])] +
                    [f"{t(f['median'])} ({num(f['extra']['GB/s'])} GB/s)" for f in feeds] + [t(s) for s in steps])
    return table(["model", "MiB fed", "feed: streaming threads", "cached threads", "serial",
                  "training step: streaming threads", "cached threads", "serial"], rows, ["---"] + ["---:"] * 7)


def plots_train():
    r = report("train")  # the chapter's figure is the batch sweep; the other models are one point or change shape
    ms = [m for m in r.all("iteration") + r.all("replay") if m["params"].get("sweep") == MLP]
    return save("tg-train", common.PR.fig_train("tg-train", ms, r.r))


def compute_bound(sweep, mode):
    """The sweep's compute_bound_batch, or what the run's note says instead."""
    found = report("train").all("compute_bound_batch", sweep=sweep, mode=mode)
    if found:
        return f"batch {int(found[0]['median'])}"
    notes = [n for n in report("train").r.get("notes", []) if f"compute_bound_batch sweep={sweep} mode={mode}" in n["part"]]
    if not notes:
        raise Missing(f"{report('train').rel}: neither a compute_bound_batch nor a note for {sweep} {mode}")
    return "none: still overhead-bound at the largest batch"


def biggest(sweep):
    return max(configs(sweep), key=lambda c: c["batch"])


def mlp_w4096_gflop():
    c = biggest("mlp_w4096_d4")
    b, w, d = c["batch"], c["width"], c["depth"]
    big = 2 * b * w * w  # one width x width layer: in = width, d - 1 such layers, then width x 10
    forward = (d - 1) * big + 2 * b * w * 10
    backward = 2 * (d - 1) * big - big + 2 * 2 * b * w * 10  # dW of every layer, dX of all but the first
    return (forward + backward) / 1e9


def tr(c, **p):
    return med(sweep="transformer", **c, **p)


def top_t():
    return biggest("transformer")


def serial_feed_rates():
    return [it("feed", sw, feed_copy="serial", **c)["extra"]["GB/s"] for sw, c in feed_rows()]


def step_by(copy, batch=2048):
    return t(med("step_by_feed_copy", MLP, feed_copy=copy, batch=batch))


def pinned_dma_s(mib):
    """The time of an H2D copy of `mib` MiB at tg-transfer's pinned 512 MiB rate."""
    rate = report("transfer").one("copy", size_bytes=2**29, direction="h2d", memory="pinned", mode="sync")
    return mib * 2**20 / (rate["extra"]["GB/s"] * 1e9)


VALUES = {
    "train.serial_feed_range": lambda: f"{num(min(serial_feed_rates()))} to {num(max(serial_feed_rates()))} GB/s",
    "train.tmax_dma": lambda: t(pinned_dma_s(it("feed", "transformer", feed_copy="serial", **top_t())["extra"]["MiB"])),
    "train.b2048_streaming": lambda: step_by("threads_streaming"),
    "train.b2048_threads": lambda: step_by("threads"),
    "train.b2048_serial": lambda: step_by("serial"),
    "train.b32_static": lambda: t(med(batch=32, mode="train", executor="static")),
    "train.b32_plain": lambda: t(med(batch=32, mode="train", executor="static_plain")),
    "train.b32_dynamic": lambda: t(med(batch=32, mode="train", executor="dynamic")),
    "train.b32_inf_replay": lambda: t(med("replay", batch=32, mode="inference", executor="static")),
    "train.b32_inf_static": lambda: t(med(batch=32, mode="inference", executor="static")),
    "train.b32_inf_dynamic": lambda: t(med(batch=32, mode="inference", executor="dynamic")),
    "train.b32_gap": lambda: t(med(batch=32, mode="train", executor="dynamic") - med(batch=32, mode="train", executor="static")),
    "train.b32_rebuild": lambda: t(med(batch=32, mode="train", executor="dynamic")
                                   - med(batch=32, mode="train", executor="static_plain")),
    "train.b32_launches": lambda: t(med(batch=32, mode="train", executor="static_plain")
                                    - med(batch=32, mode="train", executor="static")),
    "train.sp_b32_train": lambda: x(speedup(batch=32, mode="train")),
    "train.sp_b32_inf": lambda: x(speedup(batch=32, mode="inference")),
    "train.sp_b4096_train": lambda: x(speedup(batch=4096, mode="train")),
    "train.sp_b4096_inf": lambda: x(speedup(batch=4096, mode="inference")),
    "train.sp_w4096_train": lambda: x(speedup("mlp_w4096_d4", mode="train", **biggest("mlp_w4096_d4"))),
    "train.sp_w4096_inf": lambda: x(speedup("mlp_w4096_d4", mode="inference", **biggest("mlp_w4096_d4"))),
    "train.sp_tmax_train": lambda: x(speedup("transformer", mode="train", **top_t())),
    "train.cb_mlp_train": lambda: compute_bound(MLP, "train"),
    "train.cb_mlp_inf": lambda: compute_bound(MLP, "inference"),
    "train.w4096_gflop": lambda: num(mlp_w4096_gflop(), 0),
    "train.tmax_plain": lambda: t(tr(top_t(), mode="train", executor="static_plain")),
    "train.tmax_static": lambda: t(tr(top_t(), mode="train", executor="static")),
    "train.tmax_step_streaming": lambda: t(med("step_by_feed_copy", "transformer", feed_copy="threads_streaming", **top_t())),
    "train.tmax_mib": lambda: num(it("feed", "transformer", feed_copy="serial", **top_t())["extra"]["MiB"]),
    "train.tmax_feed_serial": lambda: t(med("feed", "transformer", feed_copy="serial", **top_t())),
    "train.tmax_feed_serial_gbs": lambda: f"{num(it('feed', 'transformer', feed_copy='serial', **top_t())['extra']['GB/s'])} GB/s",
    "train.tmax_feed_streaming": lambda: t(med("feed", "transformer", feed_copy="threads_streaming", **top_t())),
    "train.tmax_feed_threads": lambda: t(med("feed", "transformer", feed_copy="threads", **top_t())),
}

TABLES = {"train-mlp": tab_train_mlp, "train-models": tab_train_models, "train-feed": tab_train_feed}
PLOTTERS = {"train": plots_train}
