"""docs/pipeline.md: the input pipeline of tg-pipeline, serialized vs overlapped: time by
stage, the overlap summary, the --work sweep, and the plots."""
from . import common
from .common import Missing, mib, noisy, num, pct, report, t, table, x
from .classic import GEN3_X16, IMAGE_ELEMENTS
from .plotting import grouped_bars, save

PIPE_STAGES = ("host", "h2d", "compute", "d2h")


def pipe_works(r):
    """The compute work levels of the report, ascending (one in reports before the --work sweep)."""
    return sorted({m["params"]["work"] for m in r.all("pipeline_stage")})


def pipe(r, mode, stage, work=None):
    """One stage; by default at the smallest work level: the input-bound end, the one the stage table shows."""
    works = pipe_works(r)
    if not works:
        raise Missing(f"{r.rel}: no pipeline_stage measurements")
    return r.one("pipeline_stage", mode=mode, stage=stage, work=works[0] if work is None else work)


def mean_of(m):
    return sum(m["samples"]) / len(m["samples"]) if m.get("samples") else m["mean"]


def busy(r, mode, work):
    return f"{100 * r.one('gpu_busy_fraction', mode=mode, work=work)['median']:.1f}%"


def tab_pipeline_stages():
    r = report("pipeline")
    rows = []
    for stage in ("host", "h2d", "compute", "d2h", "total"):
        row = [stage]
        for mode in ("serialized", "overlapped"):
            m = pipe(r, mode, stage)
            mean = mean_of(m)
            gbs = f", {num(m['extra']['GB/s'])} GB/s" if "GB/s" in m["extra"] else ""
            row += [f"{t(m['median'])} ({t(m['p10'])} .. {t(m['p90'])}){noisy(m)}", t(mean) + gbs]
        rows.append(row)
    p = pipe(r, "serialized", "total")["params"]
    # Samples are in batch order, and odd batches also run the augmentation (a sign flip):
    # the host stage is two populations, which is why its p10..p90 is so wide.
    host = pipe(r, "serialized", "host").get("samples") or []
    med = lambda xs: sorted(xs)[len(xs) // 2]
    parity = (f" Serialized host stage by batch: even batches (normalize only) median {t(med(host[0::2]))}, odd "
              f"batches (normalize + flip) {t(med(host[1::2]))}." if len(host) >= 4 else "")
    return (table(["stage", "serialized: median (p10 .. p90)", "serialized: mean", "overlapped: median (p10 .. p90)",
                   "overlapped: mean"], rows, ["---"] + ["---:"] * 4) +
            f"\n\nPer batch; {mib(p['batch_bytes'])} batches, `--work {p['work']}`, {p['batches']} batches per pass; "
            "`total` is a pass's wall time / batches (one sample per pass)." + parity + "\n\n" + r.source_line())


def tab_pipeline_summary():
    r = report("pipeline")
    w = pipe_works(r)[0] if pipe_works(r) else None
    mean = lambda mode, st: mean_of(pipe(r, mode, st))
    stages = PIPE_STAGES
    ser, ovl = pipe(r, "serialized", "total")["median"], pipe(r, "overlapped", "total")["median"]
    rows = [
        ["serialized time per batch", t(ser), "sum of the stages' means: " + t(sum(mean("serialized", s) for s in stages))],
        ["overlapped time per batch", t(ovl), "slowest stage's mean (perfect overlap): " +
         t(max(mean("overlapped", s) for s in stages))],
        ["overlap speedup", f"{num(r.one('overlap_speedup', work=w)['median'])}x", "ideal, sum / slowest (serialized "
         f"means): {num(sum(mean('serialized', s) for s in stages) / max(mean('serialized', s) for s in stages))}x"],
        ["GPU busy fraction, serialized", busy(r, "serialized", w), ""],
        ["GPU busy fraction, overlapped", busy(r, "overlapped", w), ""],
    ]
    return table(["", "measured", "bound from the stages"], rows) + f"\n\nAt `--work {w}`.\n\n" + r.source_line()


def tab_pipeline_work():
    r = report("pipeline")
    rows = []
    for w in pipe_works(r):
        mean = lambda mode, st: mean_of(pipe(r, mode, st, w))
        ser = {s: mean("serialized", s) for s in PIPE_STAGES}
        slowest = max(ser, key=ser.get)
        rows.append([w, t(ser["host"]), t(ser["compute"]), slowest, t(pipe(r, "serialized", "total", w)["median"]),
                     t(pipe(r, "overlapped", "total", w)["median"]),
                     f"{num(r.one('overlap_speedup', work=w)['median'])}x",
                     f"{num(sum(ser.values()) / ser[slowest])}x", busy(r, "serialized", w), busy(r, "overlapped", w)])
    return (table(["`--work`", "host (mean)", "compute (mean)", "slowest stage", "serialized per batch",
                   "overlapped per batch", "overlap speedup", "ideal (sum / slowest)", "GPU busy, serialized",
                   "GPU busy, overlapped"], rows, ["---:", "---:", "---:", "---", "---:", "---:", "---:", "---:",
                                                   "---:", "---:"]) +
            "\n\nStage means and the ideal from the serialized passes; totals are medians of a pass's wall time / "
            "batches.\n\n" + r.source_line())


def plots_pipeline():
    r = report("pipeline")
    # A CPU run has no copies and no overlap: its bars are the stages and modes it measured.
    present = r.all("pipeline_stage")
    stages = [s for s in ("host", "h2d", "compute", "d2h", "total") if any(m["params"]["stage"] == s for m in present)]
    modes = [s for s in ("serialized", "overlapped") if any(m["params"]["mode"] == s for m in present)]

    def val(st, mode):
        try:
            return tuple(pipe(r, mode, st)[k] * 1e3 for k in ("median", "p10", "p90"))
        except Missing:
            return None
    figs = grouped_bars("tg-pipeline", f"time per batch by stage (--work {pipe_works(r)[0]})", stages, modes, val,
                        "ms per batch (median, p10..p90; log scale)", "per_stage", log=True)
    works = pipe_works(r)
    if len(works) > 1:
        fig, (ax1, ax2) = common.PR.plt.subplots(1, 2, figsize=(11, 4.5))
        fig.suptitle("tg-pipeline: compute work sweep")
        for mode in ("serialized", "overlapped"):
            ax1.plot(works, [pipe(r, mode, "total", w)["median"] * 1e3 for w in works], marker="o", label=mode)
            ax2.plot(works, [r.one("gpu_busy_fraction", mode=mode, work=w)["median"] for w in works], marker="o",
                     label=mode)
        ax1.plot(works, [mean_of(pipe(r, "serialized", "host", w)) * 1e3 for w in works], linestyle="--", label="host stage")
        ax1.plot(works, [mean_of(pipe(r, "serialized", "compute", w)) * 1e3 for w in works], linestyle="--",
                 label="compute stage")
        for ax in (ax1, ax2):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("--work (fma steps per element)")
            ax.legend(fontsize=8)
        ax1.set_yscale("log")
        ax1.set_ylabel("ms per batch")
        ax2.set_ylabel("GPU busy fraction")
        ax2.set_ylim(0, 1.05)
        fig.tight_layout()
        figs.append(("work_sweep", fig))
    return save("tg-pipeline", figs)


# tg-pipeline --images (experiments/pipeline/image_run.h): the seed's image batch, uint8 copied and
# normalized on the GPU against f32 normalized on the host and copied, into a CNN's training step.
IMAGES_STEM = "pipeline_images"
IMAGES_COMMAND = "tg-pipeline --device 0 --images --models resnet50 --json docs/results/pipeline_images.json"
IMAGE_PATHS = (("u8_device_normalize", "uint8, normalized on the GPU"), ("f32_host_normalize", "f32, normalized on the host"))


def tab_pipeline_image_bytes():
    """The seed's (32, 224, 224, 3) batch in bytes at 8 (the seed's count), 4 (f32) and 1 (uint8) bytes an
    element, and each at PCIe 3.0 x16's 15.75 GB/s: arithmetic, no measurement."""
    rows = [[label, str(size), f"{IMAGE_ELEMENTS * size:,}", t(IMAGE_ELEMENTS * size / GEN3_X16)]
            for label, size in (("the seed's count", 8), ("f32 (the network's input)", 4),
                                ("uint8 (the decoded pixels)", 1))]
    return (table(["batch as", "bytes an element", "bytes", "at 15.75 GB/s"], rows, ["---", "---:", "---:", "---:"]) +
            "\n\nArithmetic, bytes / rate: no measurement.")


def tab_pipeline_images():
    """Per model and path: the bytes copied, the measured copy beside the estimates (the stated
    link's, and the seed's 8 bytes an element at PCIe 3.0 x16), and each stage to the whole step."""
    try:
        r = report(IMAGES_STEM)
    except Missing:
        return f"No run is saved yet: `{IMAGES_COMMAND}` on a GPU writes it, then `python3 tools/docs-tables`."
    if not r.all("image_stage", stage="h2d"):
        raise Missing(f"{r.rel}: no image_stage h2d rows: a GPU run of `{IMAGES_COMMAND}` has them")
    rows = []
    models = []
    for m in r.all("image_stage", stage="total"):
        if m["params"]["model"] not in models:
            models.append(m["params"]["model"])
    for model in models:
        for path, label in IMAGE_PATHS:
            stage = lambda st: r.all("image_stage", model=model, path=path, stage=st)
            h2d = r.one("image_stage", model=model, path=path, stage="h2d")
            e = h2d["extra"]
            cell = lambda st: t(stage(st)[0]["median"]) if stage(st) else "-"
            rows.append([model, label, f"{e['bytes'] / 1e6:.2f} MB",
                         f"{t(h2d['median'])} ({num(e['GB/s'])} GB/s)", t(e["estimate_s"]),
                         cell("host"), cell("normalize"), cell("step"), cell("total")])
    seed = r.one("image_batch_bytes", dtype="f64_sized")
    return (table(["model", "batch as", "copied", "copy, measured", "copy, estimated", "host", "GPU normalize",
                   "training step", "total"], rows, ["---", "---", "---:", "---:", "---:", "---:", "---:", "---:",
                                                     "---:"]) +
            f"\n\nMedians per batch of {seed['params']['batch']} (N x H x W x C) images, serialized. Estimates at "
            f"{num(seed['extra']['link_GBps'])} GB/s; the seed's own figure, {seed['median'] / 1e6:.1f} MB (8 bytes an "
            f"element), would take {t(seed['extra']['estimate_s'])} there.\n\n" + r.source_line())


TABLES = {"pipeline-stages": tab_pipeline_stages, "pipeline-summary": tab_pipeline_summary,
          "pipeline-work": tab_pipeline_work, "pipeline-image-bytes": tab_pipeline_image_bytes,
          "pipeline-images": tab_pipeline_images}
PLOTTERS = {"pipeline": plots_pipeline}


# ---- values of the prose ---------------------------------------------------------------

def ser_mean(stage, work=None):
    return mean_of(pipe(report("pipeline"), "serialized", stage, work))


def ideal(work):
    ser = {s: ser_mean(s, work) for s in PIPE_STAGES}
    return sum(ser.values()) / max(ser.values())


def overlap(work):
    return report("pipeline").one("overlap_speedup", work=work)["median"]


def works():
    return pipe_works(report("pipeline"))


def balanced():
    """The work level where host and compute are closest: where overlap pays most."""
    return min(works(), key=lambda w: abs(ser_mean("compute", w) / ser_mean("host", w) - 1))


def busy_frac(mode, work):
    return report("pipeline").one("gpu_busy_fraction", mode=mode, work=work)["median"]


def host_parity(parity):
    host = pipe(report("pipeline"), "serialized", "host").get("samples") or []
    xs = sorted(host[parity::2])
    if len(xs) < 2:
        raise Missing(f"{report('pipeline').rel}: too few host samples to split by parity")
    return xs[len(xs) // 2]


def h2d_rates():
    return [pipe(report("pipeline"), mode, "h2d")["extra"]["GB/s"] for mode in ("serialized", "overlapped")]


def batch_bytes():
    return pipe(report("pipeline"), "serialized", "total")["params"]["batch_bytes"]


def per_step_us():
    w = works()[0]
    return ser_mean("compute", w) / w * 1e6


VALUES = {
    "pipeline.seed_estimate": lambda: t(IMAGE_ELEMENTS * 8 / GEN3_X16),
    "pipeline.host": lambda: t(ser_mean("host")),
    "pipeline.host_gbs": lambda: f"{num(batch_bytes() / ser_mean('host') / 1e9)} GB/s",
    "pipeline.h2d": lambda: t(ser_mean("h2d")),
    "pipeline.compute": lambda: t(ser_mean("compute")),
    "pipeline.busy_low": lambda: pct(busy_frac("serialized", works()[0])),
    "pipeline.w0": lambda: str(works()[0]),
    "pipeline.w1": lambda: str(works()[1]),
    "pipeline.wb": lambda: str(balanced()),
    "pipeline.wmax": lambda: str(works()[-1]),
    "pipeline.ov0": lambda: x(overlap(works()[0])),
    "pipeline.id0": lambda: x(ideal(works()[0])),
    "pipeline.ov1": lambda: x(overlap(works()[1])),
    "pipeline.id1": lambda: x(ideal(works()[1])),
    "pipeline.ovb": lambda: x(overlap(balanced())),
    "pipeline.idb": lambda: x(ideal(balanced())),
    "pipeline.ovmax": lambda: x(overlap(works()[-1])),
    "pipeline.idmax": lambda: x(ideal(works()[-1])),
    "pipeline.busy_max_ovl": lambda: pct(busy_frac("overlapped", works()[-1]), 1),
    "pipeline.busy_max_ser": lambda: pct(busy_frac("serialized", works()[-1]), 1),
    "pipeline.host_even": lambda: t(host_parity(0)),
    "pipeline.host_odd": lambda: t(host_parity(1)),
    "pipeline.h2d_gbs": lambda: "{} to {}".format(*[f"{num(v)} GB/s" for v in sorted(h2d_rates())]),
    "pipeline.transfer_async": lambda: f"{num(report('transfer').one('copy', size_bytes=batch_bytes(), direction='h2d', memory='pinned', mode='async')['extra']['GB/s'])} GB/s",
    "pipeline.d2h": lambda: t(ser_mean("d2h")),
    "pipeline.per_step": lambda: f"{num(per_step_us())} us",
}
