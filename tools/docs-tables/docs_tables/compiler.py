"""docs/compiler.md: what the graph passes of the static executor buy, from one session's
tg-train --passes sweep (train_passes.json: the GPU time of a step with the inputs
resident, the kernels it launches, the GEMM floor, the loss curve with every pass),
tg-kernels on the reworked kernels (kernels_fusion.json) and tg-launch --passes all
(launch_passes.json)."""
from . import common
from .common import Missing, distinct_params, num, pct, report, size_name, t, table, x

TRAIN, KERNELS, LAUNCH = "train_passes", "kernels_fusion", "launch_passes"
PASS_ORDER = ("none", "heads", "rows", "linear", "elementwise", "optimizer", "lanes", "all")


def _label(p):
    if p["model"] == "mlp":
        return f"MLP w{p['width']} d{p['depth']}, batch {p['batch']}"
    return f"transformer d{p['d_model']} s{p['seq']} h{p['heads']}, batch {p['batch']}"


def _config(p):
    return {k: v for k, v in p.items() if k not in ("passes", "executor")}


def _configs(r):
    out = distinct_params(r.all("pass_replay"), ("passes", "executor"))
    if not out:
        raise Missing(f"{r.rel}: no pass_replay measurements (run tg-train with --passes sweep)")
    return out


def _one(r, name, **p):
    found = r.all(name, **p)
    return found[0] if found else None


def _passes(r):
    have = {m["params"]["passes"] for m in r.all("pass_replay")}
    return [s for s in PASS_ORDER if s in have]


def tab_compiler_passes():
    r = report(TRAIN)
    sets = _passes(r)
    rows = []
    for c in _configs(r):
        cells = []
        for s in sets:
            m = _one(r, "pass_replay", passes=s, **c)
            cells.append("n/a" if m is None else f"{t(m['median'])} ({int(m['extra']['kernels'])})")
        rows.append([_label(c), c["mode"]] + cells)
    return (table(["configuration", "mode"] + [f"passes={s}" for s in sets], rows) +
            "\n\nGPU time of one replay with the inputs already on the device (CUDA events around the graph launch, "
            "the stream held until the launch is enqueued, so the host's launch cost is left out as it is from the "
            "GEMM floor; the host copy of the feeds, the same for every pass set, left out too), median; in brackets "
            "the kernels the replay runs.\n\n" + r.source_line())


def tab_compiler_summary():
    r = report(TRAIN)
    rows = []
    for c in _configs(r):
        none, best = _one(r, "pass_replay", passes="none", **c), _one(r, "pass_replay", passes="all", **c)
        floor = _one(r, "gemm_floor", executor="static", **c)
        if none is None or best is None:
            continue
        rows.append([_label(c), c["mode"], t(none["median"]), t(best["median"]), x(none["median"] / best["median"]),
                     f"{int(none['extra']['kernels'])} -> {int(best['extra']['kernels'])}",
                     "n/a" if floor is None else f"{t(floor['median'])} ({int(floor['extra']['gemms'])} GEMMs)",
                     "n/a" if floor is None else num(best["median"] / floor["median"]),
                     t(best["extra"]["passes_ms"] * 1e-3)])
    return (table(["configuration", "mode", "no pass", "every pass", "speedup", "kernels",
                   "GEMM floor", "every pass / floor", "time in the passes"], rows,
                  ["---", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:"]) +
            "\n\nThe GEMM floor: for each GEMM of the unfused step, the fastest of the first 16 algorithms cuBLASLt's "
            "heuristic offers, timed on pseudo-random operands; then those GEMMs back to back in the step's order, "
            "each on its own operands, timed as the replay is (GPU time, the stream held until they are enqueued). "
            "Where the GEMMs are long it is the bound no schedule of cuBLASLt's GEMMs can beat. Kernels of "
            "twograph's own beat cuBLASLt where its tiles fit a product poorly: the small GEMMs of the MLP at batch 32, "
            "whose replay runs the small-GEMM kernel with the epilogue inside and beats the floor (a ratio below 1), "
            "the last layer of the MLP of width 4096, 10 columns wide (the skinny-GEMM kernels), and that MLP's "
            "4096 x 4096 weight gradients, whose updates a stream-K kernel computes with the gradient in less time "
            "than cuBLASLt's gradients alone take. The floor times the unfused step's products on cuBLASLt, and "
            "the replay runs the fused step on other kernels, so replay minus floor is not the time spent outside "
            "GEMMs: it is what the whole fused step costs beyond cuBLASLt's bare products.\n\n" +
            r.source_line())


def tab_compiler_loss():
    r = report(TRAIN)
    rows = []
    curves = r.all("loss_curve", passes="all")
    # Reports from before the single-step check have the curves' difference alone.
    per_step = any("max_step_rel_diff_vs_none" in m["extra"] for m in curves)
    for m in curves:
        c = _config(m["params"])
        # The executors' own check (no passes param): static with no pass against dynamic.
        base = next((b for b in r.all("loss_curve", executor="static", **c) if "passes" not in b["params"]), None)
        step = m["extra"].get("max_step_rel_diff_vs_none")
        rows.append([_label(c), int(m["extra"]["steps"]), num(m["samples"][0], 4), num(m["samples"][-1], 4),
                     f"{m['extra']['max_rel_diff_vs_none']:.1e}"] +
                    ([f"{step:.1e}" if step is not None else "n/a"] if per_step else []) +
                    [f"{m['extra']['tolerance']:.0e}",
                     "n/a" if base is None else "yes" if base["extra"].get("bitwise_equal") == 1.0 else "no"])
    if not rows:
        raise Missing(f"{r.rel}: no loss_curve measurements with passes=all")
    return (table(["configuration", "steps", "first loss", "last loss", "max relative difference, every pass vs none"] +
                  (["max relative difference of a step from the same state"] if per_step else []) +
                  ["tolerance", "static (no pass) == dynamic bitwise"], rows) + "\n\n" + r.source_line())


def tab_compiler_kernels():
    r = report(KERNELS)
    sizes = sorted({m["params"]["size_bytes"] for m in r.ms if "size_bytes" in m["params"]})
    names = []
    for m in r.ms:
        if m["name"] not in names and "pct_of_copy" in m["extra"]:
            names.append(m["name"])
    rows = []
    for n in names:
        cells = []
        for s in sizes:
            m = _one(r, n, size_bytes=s)
            cells.append("n/a" if m is None else f"{t(m['median'])}, {num(m['extra']['pct_of_copy'])}%")
            b2b = None if m is None else m["extra"].get("back_to_back_s")
            cells.append("n/a" if b2b is None else f"{t(b2b)}, {num(m['extra']['back_to_back_pct_of_copy'])}%")
        rows.append([f"`{n}`"] + cells)
    heads = []
    for s in sizes:
        heads += [f"{s >> 20} MiB, one launch", f"{s >> 20} MiB, back to back"]
    return (table(["kernel"] + heads, rows) +
            "\n\nEach cell is a time per launch and the kernel's bytes moved per second over the same run's "
            "device-to-device copy of the same size timed the same way (`d2d_copy`, 100%); above 100% a kernel reads "
            "two inputs, which the memory system serves better than a copy's one. *One launch*: each sample is one "
            "launch, held: the stream waits until the host has enqueued it, so the time is the device's alone "
            "(`--plain-timing` adds the host's few microseconds of enqueueing, copy included). *Back to back*: each "
            "sample is 16 launches in a row, divided by 16, as nvbench's batch time: with programmatic dependent "
            "launch the next grid is already resident, waiting, when the one before completes, as in a graph "
            "replay; one launch alone pays its grid's dispatch and drain with nothing beside them, a visible share "
            "of a short kernel's time. A copy has no such launch, and its two timings agree.\n\n" + r.source_line())


def tab_compiler_launch():
    r = report(LAUNCH)
    rows = []
    for m in r.all("static_iteration", launch="cuda_graph", passes="all"):
        n = m["params"]["n_ops"]
        gpu = r.one("static_replay_gpu", n_ops=n, launch="cuda_graph", passes="all")
        floor = r.one("raw_graph_gpu", n_ops=n, kernel="touch", pdl=1)
        rows.append([n, int(m["extra"]["kernels"]), f"{num(gpu['extra']['us_per_node'])} us",
                     f"{num(m['extra']['us_per_op'])} us", f"{num(floor['extra']['us_per_node'])} us"])
    if not rows:
        raise Missing(f"{r.rel}: no static_iteration measurements with passes=all (run tg-launch --passes all)")
    return (table(["ops in the chain", "kernels after the passes", "replay, GPU time per op", "whole iteration per op",
                   "one kernel per op: CUDA Graph of 'touch' kernels with PDL, per node"], rows) +
            "\n\n" + r.source_line())


def val_chain_kernels():
    return str(int(report(LAUNCH).one("static_iteration", n_ops=1000, launch="cuda_graph", passes="all")["extra"]["kernels"]))


def _speedup(model, mode, **p):
    def f():
        r = report(TRAIN)
        none = r.one("pass_replay", passes="none", model=model, mode=mode, **p)["median"]
        best = r.one("pass_replay", passes="all", model=model, mode=mode, **p)["median"]
        return x(none / best)
    return f


def _replay(model, mode, passes, **p):
    return report(TRAIN).one("pass_replay", passes=passes, model=model, mode=mode, **p)


def _kernels(model, mode, passes, **p):
    return lambda: str(int(_replay(model, mode, passes, **p)["extra"]["kernels"]))


def _median(model, mode, passes, **p):
    return lambda: t(_replay(model, mode, passes, **p)["median"])


def val_mlp32_saved_per_kernel():
    """The replay time the passes took off the small MLP's step, per kernel they removed."""
    none, best = _replay("mlp", "train", "none", batch=32), _replay("mlp", "train", "all", batch=32)
    return t((none["median"] - best["median"]) / (none["extra"]["kernels"] - best["extra"]["kernels"]))


def _floor(model, mode, **p):
    return report(TRAIN).one("gemm_floor", executor="static", model=model, mode=mode, **p)


def _over_floor(model, mode, **p):
    """Every pass over the GEMM floor, as a ratio."""
    return lambda: num(_replay(model, mode, "all", **p)["median"] / _floor(model, mode, **p)["median"])


def _floor_gap(model, mode, **p):
    """The replay with every pass minus the GEMM floor, in seconds."""
    return _replay(model, mode, "all", **p)["median"] - _floor(model, mode, **p)["median"]


def _above_floor(model, mode, **p):
    """The replay with every pass minus the GEMM floor: what the fused step costs beyond cuBLASLt's bare
    products of the unfused step. Not the time outside GEMMs: the fused step runs other GEMM kernels."""
    return lambda: t(_floor_gap(model, mode, **p))


def _vs_floor(model, mode, **p):
    """The replay with every pass against the GEMM floor, in words: "X below" or "X above"."""

    def value():
        d = _floor_gap(model, mode, **p)
        return f"{t(abs(d))} {'below' if d < 0 else 'above'}"

    return value


def val_streamk_waves():
    """The tiled GEMM update's waves on a 4096 x 4096 weight: its 128 x 128 tiles over the blocks
    the device holds at once (2 an SM, the probe's resident count), SMs from the run's GPU entry."""
    width = _replay("mlp", "train", "all", width=4096)["params"]["width"]
    tiles = (width // 128) ** 2
    return num(tiles / (2 * common.gpu_of(TRAIN)["sm_count"]))


def _w4096_params():
    """The width-4096 MLP's parameter count, from its report params: `depth` Linear layers,
    in = width, out = 10 (experiments/train/train_bench.cpp, mlp_config)."""
    p = _replay("mlp", "train", "all", width=4096)["params"]
    w, d = p["width"], p["depth"]
    return (d - 1) * (w * w + w) + (w * 10 + 10)


def val_w4096_update_bytes():
    """What one sgd_momentum step moves: read w, g, v, write w, v: 5 floats a parameter."""
    return f"{num(5 * 4 * _w4096_params() / 1e9)} GB"


def val_w4096_update_at_copy():
    """Those bytes at the device-to-device copy rate tg-kernels measured at its largest size."""
    r = report(KERNELS)
    big = max(m["params"]["size_bytes"] for m in r.all("d2d_copy"))
    rate = r.one("d2d_copy", size_bytes=big)["extra"]["GB/s"] * 1e9
    return t(5 * 4 * _w4096_params() / rate)


def _kernel_at(name):
    r = report(KERNELS)
    big = max(m["params"]["size_bytes"] for m in r.all("d2d_copy"))
    return r.one(name, size_bytes=big)["median"]


# The chain tg-kernels fuses (experiments/kernels/cases.cpp): mul, bias add, relu, scale.
EW_CHAIN = ("mul", "bias_add", "relu", "scale")


def val_kernels_size():
    return size_name(max(m["params"]["size_bytes"] for m in report(KERNELS).all("d2d_copy")))


def val_ew_unfused():
    return t(sum(_kernel_at(n) for n in EW_CHAIN))


def val_ew_fused():
    return t(_kernel_at("fused_elementwise"))


def val_ew_x():
    return x(sum(_kernel_at(n) for n in EW_CHAIN) / _kernel_at("fused_elementwise"))


def val_ln_separate():
    return t(_kernel_at("layernorm_grad_gamma") + _kernel_at("reduce_sum_cols"))


def val_ln_fused():
    return t(_kernel_at("layernorm_grad_gamma_beta"))


def val_loss_verdict():
    """How close the loss with every pass came to the loss with none, over every configuration."""
    ms = report(TRAIN).all("loss_curve", passes="all")
    if not ms:
        raise Missing(f"{report(TRAIN).rel}: no loss_curve measurements with passes=all")
    worst = max(m["extra"]["max_rel_diff_vs_none"] for m in ms)
    if worst == 0:
        return "the same bits as without passes at every step"
    return f"a relative difference of at most {worst:.1e}"


def val_loss_tolerance():
    return f"{report(TRAIN).all('loss_curve', passes='all')[0]['extra']['tolerance']:.0e}"


def _launch(name, key):
    return lambda: f"{num(report(LAUNCH).one(name, n_ops=1000, launch='cuda_graph', passes='all')['extra'][key])} us"


def val_ew_on_top():
    """The kernels the elementwise pass removes on top of the other four, at most over every
    configuration: every pass's count against heads, rows, linear and optimizer's, each alone."""
    r = report(TRAIN)
    worst = 0
    for c in _configs(r):
        k = {s: _one(r, "pass_replay", passes=s, **c) for s in PASS_ORDER}
        if any(m is None for m in k.values()):
            continue
        n = {s: m["extra"]["kernels"] for s, m in k.items()}
        others = sum(n["none"] - n[s] for s in ("heads", "rows", "linear", "optimizer"))
        worst = max(worst, int(n["none"] - n["all"] - others))
    return str(worst)


def val_chain_per_kernel():
    """GPU time of one fused kernel of tg-launch's chain: the replay over its kernels."""
    m = report(LAUNCH).one("static_replay_gpu", n_ops=1000, launch="cuda_graph", passes="all")
    k = report(LAUNCH).one("static_iteration", n_ops=1000, launch="cuda_graph", passes="all")["extra"]["kernels"]
    return t(m["median"] / k)


def val_chain_dynamic():
    return f"{num(report(LAUNCH).one('dynamic_iteration', n_ops=1000, allocator='caching')['extra']['us_per_op'])} us"


TABLES = {
    "compiler-summary": tab_compiler_summary,
    "compiler-passes": tab_compiler_passes,
    "compiler-loss": tab_compiler_loss,
    "compiler-kernels": tab_compiler_kernels,
    "compiler-launch": tab_compiler_launch,
}

# The same sweep, in the session of train_passes.json, with every GEMM on cuBLASLt
# (--cuda-options small_gemm=0; TG_SMALL_GEMM=0 when these files were made) and with GEMM tuning
# on (--cuda-options gemm_autotune=1; then tg-train --gemm-autotune); train_passes.json is the run
# without tuning.
TUNED, UNTUNED, CUBLASLT = "train_passes_tuned", TRAIN, "train_passes_cublaslt"
# The same sweep with the optimizer pass's GEMM updates off (--pass-options gemm_updates=0;
# TG_GEMM_UPDATE=0 when the file was made), same session.
NOGEMM = "train_passes_nogemm"


def _other(name, model, mode, passes, **p):
    return lambda: t(report(name).one("pass_replay", passes=passes, model=model, mode=mode, **p)["median"])


_tuned_tfm_infer = _other(TUNED, "transformer", "inference", "all")
_tuned_tfm_train = _other(TUNED, "transformer", "train", "all")
_untuned_tfm_infer = _other(UNTUNED, "transformer", "inference", "all")
_untuned_tfm_train = _other(UNTUNED, "transformer", "train", "all")
_mlp32_lanes_train = _other(TRAIN, "mlp", "train", "lanes", width=256)
_tuned_mlp32_train = _other(TUNED, "mlp", "train", "all", width=256)
_lt_mlp32_train = _other(CUBLASLT, "mlp", "train", "all", width=256)
_lt_mlp32_infer = _other(CUBLASLT, "mlp", "inference", "all", width=256)
_w4096_train_all = _median("mlp", "train", "all", width=4096)  # with early updates and GEMM updates on


# Probe outputs (scripts/device/probes, saved under docs/results/h200-probes/): the number
# right after `label` on the first line that starts with it (_probe_number), in microseconds
# for the times.
MOMENTUM_PROBE = "momentum_gemm_probe"
COLFLOOR_PROBE = "colreduce_floor_probe"
SGEMM_PROBE = "sgemm_update_probe"
SGEMM_STALLS = "sgemm_stalls"
SGEMM_LT, SGEMM_LT_UPDATE = "cuBLASLt, heuristic's first", "cuBLASLt best + sgd_momentum kernel"
SGEMM_TEXTBOOK = "cp.async, 128 thr, k8, 4 stages, store"
SGEMM_BEST = "k16 pointer copies, serpentine columns, store"
SGEMM_ORDER_WORST = "k16 pointer copies, 2 x 2 Z, store"
SGEMM_UPDATE_ROW = "k16 pointer copies, serpentine, update a row at a time"
SGEMM_UPDATE_BATCH4 = "+ rows in batches of 4"
ISSUE_ACTIVE = "smsp__issue_active.avg.pct_of_peak_sustained_active"
INST_EXECUTED = "smsp__inst_executed.sum"


def val_sgemm_best_pct():
    """The fastest own GEMM's speed as a share of cuBLASLt's on the same three products."""
    return pct(_probe_number(SGEMM_PROBE, SGEMM_LT) / _probe_number(SGEMM_PROBE, SGEMM_BEST))


def _probe_lines(key):
    """The lines of the saved probe output that the manifest names for `key`."""
    rel = common.saved(key)
    path = common.RESULTS / rel
    if not path.exists():
        raise Missing(f"docs/results/{rel}: missing (run the probe on a GPU and save its output there)")
    return path.read_text().splitlines()


def _probe_number(rel, label, section=None):
    """The number right after `label` on the first line that starts with it (after
    `== section`, if given); lines where a word follows the label instead are skipped."""
    inside = section is None
    for line in _probe_lines(rel):
        rest = line.strip()
        if section is not None and rest.startswith("== "):
            inside = rest[3:].split()[0] == section
        if not inside or not rest.startswith(label):
            continue
        words = [w for w in rest[len(label):].split() if w not in ("inst", "%")]
        try:
            return float(words[0].replace(",", ""))
        except (IndexError, ValueError):
            continue
    where = f" under == {section}" if section else ""
    raise Missing(f"docs/results/{common.saved(rel)}: no line starting with {label!r} and a number{where}")


def _issue_pct(who):
    return lambda: pct(_probe_number(SGEMM_STALLS, ISSUE_ACTIVE, who) / 100)


def _instructions(who):
    return lambda: f"{_probe_number(SGEMM_STALLS, INST_EXECUTED, who) / 1e6:.0f}M"


def _probe_us(rel, label):
    return lambda: t(_probe_number(rel, label) * 1e-6)


LANES_AB = "lanes_column_sums_ab"
# One tg-train binary under three environments, alternately on one H200 (scripts/device/ab-env.sh).
ENV_AB = "early_skinny_ab"
_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


def _ab_value(rel, label, mode, sweep, row="pass_replay"):
    """Row `row` (pass_replay or gemm_floor) of `mode` and `sweep` in an A/B file of
    scripts/device/ab-env.sh's form (sections `== LABEL ROUND`, rows `ROW MODE SWEEP VALUE UNIT`):
    the mean over the label's rounds."""

    def value():
        found, inside = [], False
        for line in _probe_lines(rel):
            if line.startswith("== "):
                inside = line[3:].split()[0] == label
            elif inside and line.startswith(f"{row} {mode} {sweep} "):
                words = line.split()
                found.append(float(words[3]) * _UNITS[words[4]])
        if not found:
            raise Missing(f"docs/results/{common.saved(rel)}: no '{row} {mode} {sweep}' row under == {label}")
        return t(sum(found) / len(found))

    return value


# The stream-K GEMM update: tg-probe-gemm-update-runtime's rows, and an A/B of one tg-train
# binary with it off ("default" then) and on ("streamk").
STREAMK_PROBE = "streamk_probe"
STREAMK_AB = "streamk_ab"
# The lanes pass with the GEMM updates on the main stream (the default, "default") or beside ("side").
LANES_GEMM_AB = "lanes_gemm_updates_ab"
STREAMK_DIFF = "one step, matmul_sgd_momentum_streamk against cuBLASLt + sgd_momentum: max rel diff"


def val_streamk_rel_diff():
    """The stream-K update's largest relative difference from cuBLASLt + sgd_momentum after one
    step, over the parameter and the velocity."""
    line = next((l for l in _probe_lines(STREAMK_PROBE) if l.startswith(STREAMK_DIFF)), None)
    if line is None:
        raise Missing(f"docs/results/{common.saved(STREAMK_PROBE)}: no line starting with {STREAMK_DIFF!r}")
    words = line[len(STREAMK_DIFF):].replace(",", " ").split()
    return f"{max(float(words[1]), float(words[3])):.1e}"


# The skinny-GEMM probe's table: a row per product, its numbers in the columns
# rel diff, cublas, skinny, +epilog, copy (microseconds but the first) and the share of the copy.
SKINNY_PROBE = "skinny_gemm_probe"
SKINNY_COLUMNS = ["rel diff", "cublas", "skinny", "+epilog", "copy"]


def _skinny_us(product, column):
    """A time of the skinny-GEMM probe: the product's row (its first word) and column (the
    row's last six words are the columns and the share of the copy)."""

    def value():
        for line in _probe_lines(SKINNY_PROBE):
            words = line.split()
            if words and words[0] == product:
                return t(float(words[-6:-1][SKINNY_COLUMNS.index(column)]) * 1e-6)
        raise Missing(f"docs/results/{common.saved(SKINNY_PROBE)}: no row for the {product} product")

    return value


MARGINAL = "step_marginal"
DGRAD_PROBE = "sgemm_dgrad_probe"
DGRAD_LT = "cuBLASLt, heuristic's first"
DGRAD_OWN_BEST = "serp. cols, copies over 8 k steps, store"
DGRAD_ROWS = "k-contiguous tiles, 3 stages of 32, rows in 2 halves, store"


def _marginal(kind):
    """What op kind `kind` adds to the serialized replay, in the marginal profile's first block."""

    def value():
        blocks = 0
        for line in _probe_lines(MARGINAL):
            if line.startswith("== "):
                blocks += 1
                continue
            words = line.split()
            if blocks == 1 and line.strip().startswith(kind + " ") and "adds" in words:
                return t(float(words[words.index("adds") + 1]) * 1e-6)
        raise Missing(f"docs/results/{common.saved(MARGINAL)}: no '{kind}' row in its first block")

    return value


def _dgrad_slower(label):
    return lambda: pct(_probe_number(DGRAD_PROBE, label) / _probe_number(DGRAD_PROBE, DGRAD_LT) - 1)


def val_colreduce_launch_cost():
    """What one launch alone adds to reduce_sum_cols at 64 MiB over the back-to-back time."""
    r = report(KERNELS)
    m = _one(r, "reduce_sum_cols", size_bytes=64 << 20)
    if m is None or "back_to_back_s" not in m["extra"]:
        raise Missing(f"{r.rel}: no reduce_sum_cols at 64 MiB with back_to_back_s")
    return t(m["median"] - m["extra"]["back_to_back_s"])


VALUES = {
    "compiler.momentum_gemm_beta0": _probe_us(MOMENTUM_PROBE, "GEMMs, beta 0"),
    "compiler.momentum_gemm_betamu": _probe_us(MOMENTUM_PROBE, "GEMMs, beta mu, C = D = velocity"),
    "compiler.momentum_update5": _probe_us(MOMENTUM_PROBE, "sgd_momentum (5 floats/element)"),
    "compiler.momentum_update3": _probe_us(MOMENTUM_PROBE, "sgd on the velocity (3 floats)"),
    "compiler.momentum_unfused": _probe_us(MOMENTUM_PROBE, "unfused: GEMM + sgd_momentum"),
    "compiler.momentum_fused": _probe_us(MOMENTUM_PROBE, "fused:   GEMM(beta mu) + sgd"),
    "compiler.colfloor_tg_pdl": _probe_us(COLFLOOR_PROBE, "tg reduce_sum v4 pdl on"),
    "compiler.colfloor_tg_nopdl": _probe_us(COLFLOOR_PROBE, "tg reduce_sum v4 pdl off"),
    "compiler.colfloor_unordered": _probe_us(COLFLOOR_PROBE, "lane1 groups (v4 rows)"),
    "compiler.colfloor_read": _probe_us(COLFLOOR_PROBE, "read, 1 float4/thread"),
    "compiler.colreduce_launch_cost": val_colreduce_launch_cost,
    "compiler.lanes_sums_before": _ab_value(LANES_AB, "old", "train", "mlp_w4096_d4"),
    "compiler.marginal_gemm_update": _marginal("matmul_sgd_momentum"),
    "compiler.marginal_act_grad": _marginal("matmul_act_grad"),
    "compiler.marginal_column_sums": _marginal("reduce_sum"),
    "compiler.marginal_last_linear": _marginal("linear 1024x10x4096"),
    "compiler.dgrad_own_slower": _dgrad_slower(DGRAD_OWN_BEST),
    "compiler.dgrad_rows_slower": _dgrad_slower(DGRAD_ROWS),
    "compiler.lanes_sums_after": _ab_value(LANES_AB, "new", "train", "mlp_w4096_d4"),
    "compiler.sgemm_lt": _probe_us(SGEMM_PROBE, SGEMM_LT),
    "compiler.sgemm_lt_update": _probe_us(SGEMM_PROBE, SGEMM_LT_UPDATE),
    "compiler.sgemm_textbook": _probe_us(SGEMM_PROBE, SGEMM_TEXTBOOK),
    "compiler.sgemm_best": _probe_us(SGEMM_PROBE, SGEMM_BEST),
    "compiler.sgemm_best_pct": val_sgemm_best_pct,
    "compiler.sgemm_order_worst": _probe_us(SGEMM_PROBE, SGEMM_ORDER_WORST),
    "compiler.sgemm_update_row": _probe_us(SGEMM_PROBE, SGEMM_UPDATE_ROW),
    "compiler.sgemm_update_batch4": _probe_us(SGEMM_PROBE, SGEMM_UPDATE_BATCH4),
    "compiler.sgemm_lt_issue": _issue_pct("cublaslt"),
    "compiler.sgemm_textbook_issue": _issue_pct("pipelined-128"),
    "compiler.sgemm_best_issue": _issue_pct("fragpipe-k16"),
    "compiler.sgemm_lt_inst": _instructions("cublaslt"),
    "compiler.sgemm_best_inst": _instructions("fragpipe-k16"),
    "compiler.early_w4096_off": _ab_value(ENV_AB, "early_off", "train", "mlp_w4096_d4"),
    "compiler.gemm_update_opt_on": _median("mlp", "train", "optimizer", width=4096),
    "compiler.gemm_update_opt_off": _other(NOGEMM, "mlp", "train", "optimizer", width=4096),
    "compiler.gemm_update_all_on": _w4096_train_all,
    "compiler.gemm_update_all_off": _other(NOGEMM, "mlp", "train", "all", width=4096),
    "compiler.early_w4096_on": _ab_value(ENV_AB, "default", "train", "mlp_w4096_d4"),
    "compiler.early_w4096_floor": _ab_value(ENV_AB, "default", "train", "mlp_w4096_d4", row="gemm_floor"),
    "compiler.skinny_w4096_off": _ab_value(ENV_AB, "skinny_off", "train", "mlp_w4096_d4"),
    "compiler.skinny_w4096_infer_off": _ab_value(ENV_AB, "skinny_off", "inference", "mlp_w4096_d4"),
    "compiler.skinny_w4096_infer_on": _ab_value(ENV_AB, "default", "inference", "mlp_w4096_d4"),
    "compiler.streamk_lt": _probe_us(STREAMK_PROBE, "cuBLASLt GEMMs (best of 5)"),
    "compiler.streamk_lt_update": _probe_us(STREAMK_PROBE, "cuBLASLt + sgd_momentum"),
    "compiler.streamk_tiled": _probe_us(STREAMK_PROBE, "matmul_sgd_momentum "),
    "compiler.streamk_resident": _probe_us(STREAMK_PROBE, "matmul_sgd_momentum_streamk, resident"),
    "compiler.streamk_one_per_sm": _probe_us(STREAMK_PROBE, "matmul_sgd_momentum_streamk, 1 an SM"),
    "compiler.streamk_three_per_sm": _probe_us(STREAMK_PROBE, "matmul_sgd_momentum_streamk, 3 an SM"),
    "compiler.streamk_rel_diff": val_streamk_rel_diff,
    "compiler.lanes_gemm_main": _ab_value(LANES_GEMM_AB, "default", "train", "mlp_w4096_d4"),
    "compiler.lanes_gemm_side": _ab_value(LANES_GEMM_AB, "side", "train", "mlp_w4096_d4"),
    "compiler.lanes_gemm_floor": _ab_value(LANES_GEMM_AB, "default", "train", "mlp_w4096_d4", row="gemm_floor"),
    "compiler.streamk_w4096_off": _ab_value(STREAMK_AB, "default", "train", "mlp_w4096_d4"),
    "compiler.streamk_w4096_on": _ab_value(STREAMK_AB, "streamk", "train", "mlp_w4096_d4"),
    "compiler.streamk_w4096_floor": _ab_value(STREAMK_AB, "streamk", "train", "mlp_w4096_d4", row="gemm_floor"),
    "compiler.skinny_fwd_lt": _skinny_us("forward", "cublas"),
    "compiler.skinny_fwd_own": _skinny_us("forward", "+epilog"),
    "compiler.skinny_fwd_copy": _skinny_us("forward", "copy"),
    "compiler.skinny_wgrad_lt": _skinny_us("weight", "cublas"),
    "compiler.skinny_wgrad_own": _skinny_us("weight", "+epilog"),
    "compiler.skinny_dgrad_lt": _skinny_us("input", "cublas"),
    "compiler.skinny_dgrad_plain": _skinny_us("input", "skinny"),
    "compiler.skinny_dgrad_own": _skinny_us("input", "+epilog"),
    "compiler.skinny_dgrad_copy": _skinny_us("input", "copy"),
    "compiler.tuned_tfm_infer": _tuned_tfm_infer,
    "compiler.tuned_tfm_train": _tuned_tfm_train,
    "compiler.untuned_tfm_infer": _untuned_tfm_infer,
    "compiler.untuned_tfm_train": _untuned_tfm_train,
    "compiler.mlp32_lanes_train": _mlp32_lanes_train,
    "compiler.tuned_mlp32_train": _tuned_mlp32_train,
    "compiler.lt_mlp32_train": _lt_mlp32_train,
    "compiler.lt_mlp32_infer": _lt_mlp32_infer,
    "compiler.chain_kernels": val_chain_kernels,
    "compiler.mlp32_train_speedup": _speedup("mlp", "train", batch=32),
    "compiler.mlp32_inference_speedup": _speedup("mlp", "inference", batch=32),
    "compiler.transformer_train_speedup": _speedup("transformer", "train", batch=32),
    "compiler.transformer_inference_speedup": _speedup("transformer", "inference", batch=32),
    "compiler.w4096_train_speedup": _speedup("mlp", "train", width=4096),
    "compiler.mlp32_train_none": _median("mlp", "train", "none", batch=32),
    "compiler.mlp32_train_all": _median("mlp", "train", "all", batch=32),
    "compiler.mlp32_train_kernels_none": _kernels("mlp", "train", "none", batch=32),
    "compiler.mlp32_train_kernels_all": _kernels("mlp", "train", "all", batch=32),
    "compiler.mlp32_inference_kernels_none": _kernels("mlp", "inference", "none", batch=32),
    "compiler.mlp32_inference_kernels_all": _kernels("mlp", "inference", "all", batch=32),
    "compiler.mlp32_saved_per_kernel": val_mlp32_saved_per_kernel,
    "compiler.mlp32_train_over_floor": _over_floor("mlp", "train", batch=32),
    "compiler.w4096_train_over_floor": _over_floor("mlp", "train", width=4096),
    "compiler.w4096_train_vs_floor": _vs_floor("mlp", "train", width=4096),
    "compiler.streamk_waves": val_streamk_waves,
    "compiler.w4096_update_bytes": val_w4096_update_bytes,
    "compiler.w4096_update_at_copy": val_w4096_update_at_copy,
    "compiler.transformer_train_over_floor": _over_floor("transformer", "train", batch=32),
    "compiler.transformer_train_above_floor": _above_floor("transformer", "train", batch=32),
    "compiler.kernels_size": val_kernels_size,
    "compiler.ew_unfused": val_ew_unfused,
    "compiler.ew_fused": val_ew_fused,
    "compiler.ew_x": val_ew_x,
    "compiler.sgd_single": lambda: t(_kernel_at("sgd_momentum")),
    "compiler.sgd_multi": lambda: t(_kernel_at("sgd_momentum_multi")),
    "compiler.ln_separate": val_ln_separate,
    "compiler.ln_fused": val_ln_fused,
    "compiler.loss_verdict": val_loss_verdict,
    "compiler.loss_tolerance": val_loss_tolerance,
    "compiler.chain_replay_op": _launch("static_replay_gpu", "us_per_node"),
    "compiler.chain_iteration_op": _launch("static_iteration", "us_per_op"),
    "compiler.chain_dynamic_op": val_chain_dynamic,
    "compiler.chain_per_kernel": val_chain_per_kernel,
    "compiler.ew_on_top": val_ew_on_top,
}

PLOTTERS = {}
