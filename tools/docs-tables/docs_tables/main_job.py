"""The main job's figures and the head of its summary.md, from the reports one run of
scripts/run-main-job left in its folder (--results DIR).

The figures are the chapters' own (PLOTTERS, drawn into DIR/plots instead of docs/plots), so the
main job and the docs draw a report one way; a report that a chapter's figure cannot use (a CPU
run lacks the GPU rows some need) gets tools/plot/plot_report.py's figure for its tool instead.
The head says what was measured, the headline figures and what they mean, what the machine the
run used can and cannot show, and links each plot and chapter; the full tables follow it."""
import sys
from pathlib import Path

from . import common
from .common import Missing, num, pct, t

# The experiments in the order the main job runs them, with the question each answers and its
# chapter (relative to the repository's docs/).
EXPERIMENTS = [
    ("noop", "the harness's own floor: an empty function and an empty kernel launch", "reliability.md"),
    ("launch", "what do rebuilding the graph and launching op by op cost?", "launch.md"),
    ("transfer", "what do host <-> device copies cost?", "transfer.md"),
    ("memory", "where does memory go in training vs inference?", "memory.md"),
    ("matmul", "when does the GPU win a matrix product?", "matmul.md"),
    ("shapes", "what do static graphs pay for variable shapes?", "shapes.md"),
    ("train", "the whole training step, static vs dynamic", "train.md"),
    ("pipeline", "the data path of a training step: does overlap hide the copies?", "pipeline.md"),
    ("kernels", "how close does each CUDA kernel come to the memory system's limit?", "regimes.md"),
]


def draw(out_dir, plotters):
    """Every figure of the reports in common.RESULTS into out_dir; returns the files written, by
    report. What could not use its chapter's figure is said once, on stderr, with the reason; a
    report with no measurement (tg-kernels without a GPU) gets no figure, and its notes say why."""
    common.PLOTS = Path(out_dir)
    common.PLOTS.mkdir(parents=True, exist_ok=True)
    pr, drawn = common.PR, {}
    pr.matplotlib.rcParams["svg.hashsalt"] = "twograph"
    pr.STDOUT["closed"] = True  # plot_report lists what it writes; the caller lists every file once
    present = {stem for stem, _, _ in EXPERIMENTS if (common.RESULTS / f"{stem}.json").exists()
               and pr.usable(pr.load(str(common.RESULTS / f"{stem}.json")))}
    files = lambda: set(common.PLOTS.iterdir())
    for stem, fn in plotters.items():
        if stem != "regimes" and stem not in present:
            continue
        before = files()
        try:
            fn()
            drawn[stem] = sorted(map(str, files() - before))
        except (Missing, KeyError, IndexError, ValueError, ZeroDivisionError) as e:
            # A chapter's figure is written for the chapter's full run; a quick or CPU run may lack a
            # row or a field it reads. The report still gets its tool's figure, and the reason is said.
            if stem in present:
                print(f"docs-tables: {stem}.json: its chapter's figure needs what this run did not measure "
                      f"({type(e).__name__}: {e}); drawn with the standard figure of its tool", file=sys.stderr)
        finally:
            pr.plt.close("all")
    for stem in sorted(present - set(drawn)):
        before = files()
        pr.plot(str(common.RESULTS / f"{stem}.json"), str(common.PLOTS))
        drawn[stem] = sorted(map(str, files() - before))
    return drawn


def reports():
    out = {}
    for stem, _, _ in EXPERIMENTS:
        if (common.RESULTS / f"{stem}.json").exists():
            out[stem] = common.report(stem)
    return out


def on_gpu(rs):
    return any(common.PR.device_gpu(r.r) for r in rs.values())


def device_name(rs):
    for r in rs.values():
        g = common.PR.device_gpu(r.r)
        return g["name"] if g else r.r.get("device", {}).get("name", "?")
    return "?"


def ratio_range(values):
    lo, hi = min(values), max(values)
    return f"{num(lo)}x" if num(lo) == num(hi) else f"{num(lo)}x to {num(hi)}x"


# Within this band a ratio of two timings is "about the same": a quick run's medians move by
# that much between runs on a quiet machine.
SAME = (0.9, 1.1)


def verdict(ratios, below, above):
    """How many ratios lie below the band, inside it and above it, in words."""
    lo = sum(r < SAME[0] for r in ratios)
    hi = sum(r > SAME[1] for r in ratios)
    mid = len(ratios) - lo - hi
    band = f"{num(SAME[0])}x to {num(SAME[1])}x"
    parts = [f"{above} in {hi}" if hi else "", f"about the same ({band}) in {mid}" if mid else "",
             f"{below} in {lo}" if lo else ""]
    return ", ".join(p for p in parts if p) + f" of {len(ratios)}"


def noise_warning(ms):
    """A sentence when the timings behind a headline are noisy (a busy machine), else ''."""
    bad = [m for m in ms if m.get("noisy")]
    if not bad:
        return ""
    return (f" Noisy: {len(bad)} of the {len(ms)} timings behind it spread by more than 10% (the middle half of "
            "the samples around the median); rerun with more --repetitions or on a quieter machine before "
            "drawing conclusions.")


# ---- the headline figures: each returns (what was found, what it means) or raises Missing ------

def head_launch(rs, gpu):
    r = rs["launch"]
    n = max(m["params"]["n_ops"] for m in r.all("dynamic_iteration"))
    dm = r.one("dynamic_iteration", n_ops=n)
    name = "static_replay_gpu" if gpu and r.all("static_replay_gpu") else "static_iteration"
    sm = r.one(name, n_ops=n)
    dyn, sta = dm["median"] / n, sm["median"] / n
    found = (f"dynamic executor {t(dyn)} per op, static {t(sta)} per op "
             f"(dynamic costs {num(dyn / sta)}x as much) on a chain of {n} small ops")
    if gpu:
        means = ("the dynamic executor pays host work and a kernel launch for every op; a replayed CUDA Graph "
                 "launches the whole chain at once, so for small ops static wins by the launch cost")
    else:
        means = ("on the CPU the kernel runs inside the launch call and there is no CUDA Graph: what static saves "
                 "is the per-op host bookkeeping (shape inference, tape, allocation), which dominates only for "
                 "ops this small")
    return found, means, [dm, sm]


def head_train(rs, gpu):
    r = rs["train"]
    sp = [m for m in r.all("speedup_static_over_dynamic") if m["params"].get("mode") == "train"]
    if not sp:
        raise Missing(f"{r.rel}: no speedup_static_over_dynamic for mode=train")
    label = lambda m: f"{m['params'].get('sweep') or m['params'].get('model')} batch {m['params']['batch']}"
    its = [m for m in r.all("iteration") if m["params"].get("mode") == "train"]
    found = ("static's training steps per second over dynamic's: "
             + ", ".join(f"{label(m)} {num(m['median'])}x" for m in sp) + "; static is "
             + verdict([m["median"] for m in sp], "slower", "faster"))
    if gpu:
        means = ("the static executor's gain is the launch and host work it removes; it is largest at small "
                 "batches, where that overhead is a large share of the step, and shrinks as the GEMMs grow")
    else:
        means = ("on the CPU both executors run the same arithmetic on the same cores, and it is most of the "
                 "step; static removes only the host bookkeeping, so expect static close to dynamic, ahead "
                 "only where the ops are tiny. The GPU story, where static wins by the launches it saves, "
                 "needs a GPU")
    return found, means, its


def head_shapes(rs, gpu):
    r = rs["shapes"]
    dm = r.one("iteration", strategy="dynamic")
    others = [m for m in r.all("iteration") if m["params"]["strategy"] != "dynamic"]
    ratio = lambda m: m["median"] / dm["median"]
    found = ("median step time over dynamic's: " + ", ".join(f"{m['params']['strategy']} {num(ratio(m))}x"
                                                             for m in others)
             + " (below 1x: faster than dynamic)")
    b = [m for m in others if m["params"]["strategy"] == "bucket"]
    if b:
        r_b = ratio(b[0])
        word = "faster than" if r_b < SAME[0] else "slower than" if r_b > SAME[1] else "about as fast as"
        found += f"; bucket is {word} dynamic, with {pct(b[0]['extra'].get('padding_waste', 0))} of its input " \
                 "elements padding"
    if gpu:
        means = ("a static graph has one shape; cache and bucket replay a few graphs and win when replay "
                 "saves more than compiles and padding cost, recapture compiles for every new shape and loses")
    else:
        means = ("on the CPU a compile has no capture to pay for and a replay saves little, so the arithmetic "
                 "decides and the strategies stay close to dynamic; bucket computes its padding too, which "
                 "costs time here that no launch saving pays back (slower where the padding is large), where "
                 "on a GPU replaying a few captured graphs does")
    return found, means, [dm] + others


def head_memory(rs, gpu):
    r = rs["memory"]
    naive, planned = r.all("arena_bytes", plan="naive"), r.all("arena_bytes", plan="planned")
    pairs = []
    for m in planned:
        p = {k: m["params"][k] for k in ("model", "batch", "mode")}
        n = [x for x in naive if all(x["params"].get(k) == v for k, v in p.items())]
        if n and n[0]["median"] > 0:
            pairs.append(m["median"] / n[0]["median"])
    if not pairs:
        raise Missing(f"{r.rel}: no arena_bytes with plan=naive and plan=planned for one configuration")
    found = (f"the planned arena (gradients, activations, workspace) is {ratio_range(pairs)} of the naive one "
             f"(one buffer per value) over {len(pairs)} configurations")
    means = ("the static planner knows every value's lifetime before the step runs and lets values that are "
             "never alive together share bytes; counts are exact, the same on any machine")
    return found, means, []


def head_matmul(rs, gpu):
    r = rs["matmul"]
    cpu = [m for m in r.all("matmul", backend="cpu") if m["params"]["n"]]
    if not cpu:
        raise Missing(f"{r.rel}: no CPU matmul rows")
    big = max(cpu, key=lambda m: m["params"]["n"])
    n = big["params"]["n"]
    tf = lambda m: m["extra"].get("TFLOP/s") or 2 * m["params"]["n"] ** 3 / m["median"] / 1e12
    found = f"CPU (OpenBLAS) at n = {n}: {t(big['median'])}, {num(tf(big))} TFLOP/s"
    # fp32 inputs, as the CPU's: the 16-bit rows multiply other (rounded) matrices.
    g = [m for m in r.all("matmul", backend="gpu", n=n)
         if m["params"].get("transfers") is False and m["params"].get("precision") in ("fp32", "tf32")]
    if g:
        best = max(g, key=tf)
        found += f"; GPU at n = {n}: {t(best['median'])}, {num(tf(best))} TFLOP/s"
        cross = r.all("crossover_n")
        if cross:
            found += f"; the GPU wins from n = {num(cross[0]['median'], 0)} on"
        means = ("a GPU wins once the product is large enough to fill it; below that, the launch and the copies "
                 "cost more than the CPU's whole product")
    else:
        means = "the CPU side only: where the GPU overtakes it needs a GPU run"
    return found, means, [big] + g


HEADLINES = [  # (report, title, function, figure file stem, chapter)
    ("launch", "Launch overhead per op", head_launch, "tg-launch_per_op_cost", "launch.md"),
    ("train", "Static vs dynamic training step", head_train, "tg-train_iterations_per_s", "train.md"),
    ("shapes", "Variable shapes", head_shapes, "tg-shapes_time_per_strategy", "shapes.md"),
    ("memory", "Memory planning", head_memory, "tg-memory_arena", "memory.md"),
    ("matmul", "CPU vs GPU matrix product", head_matmul, "tg-matmul_matmul", "matmul.md"),
]


def summary_head(docs_link, plots_dir):
    """The markdown that opens summary.md. docs_link: the path from the summary to docs/;
    plots_dir: the folder of the figures, relative to the summary."""
    rs = reports()
    gpu = on_gpu(rs)
    pngs = sorted(p.name for p in (common.RESULTS / plots_dir).glob("*.png"))
    lines = ["## What this run measured", ""]
    kind = "a GPU" if gpu else "the CPU backend (no GPU: every experiment ran on the CPU)"
    modes = {"quick" if r.r.get("run", {}).get("quick") else "full" for r in rs.values()}
    mode = f"{modes.pop()} mode" if len(modes) == 1 else "quick and full mode"
    lines += [f"Every experiment of twograph that ran, in {mode} on {device_name(rs)}, {kind}. Each answers one "
              "question; its chapter explains the concepts and shows a full run on an NVIDIA H200:", ""]
    for stem, q, chapter in EXPERIMENTS:
        state = "" if stem in rs else " (not run: see below)"
        lines.append(f"- `tg-{stem}`: {q}{state} ([{chapter}]({docs_link}/{chapter}))")
    lines += ["", "## Headline figures", ""]
    for stem, title, fn, fig, chapter in HEADLINES:
        if stem not in rs:
            continue
        try:
            found, means, timings = fn(rs, gpu)
        except Missing as e:
            lines += [f"**{title}**: not in this run ({e}).", ""]
            continue
        png = next((p for p in pngs if p.startswith(fig)), None) or next(
            (p for p in pngs if p.startswith(f"tg-{stem}_")), None)
        plot = f" Plot: [{png}]({plots_dir}/{png})." if png else ""
        lines += [f"**{title}**: {found}. What it means: {means}.{noise_warning(timings)}{plot} "
                  f"Chapter: [{chapter}]({docs_link}/{chapter}).", ""]
    lines += ["## What this machine can and cannot show", ""]
    if gpu:
        lines += ["This run had a GPU: launch and CUDA Graph replay costs, transfers over PCIe, the GPU's "
                  "matrix products and the copy/compute overlap are all measured. A quick run has short "
                  "sweeps and few repetitions: the chapters' full runs are the reference. What a run did not "
                  "measure, each experiment says, with the reason:", ""]
    else:
        lines += ["No GPU: the CPU backend runs every op's kernel inside its launch call, so there is no "
                  "launch queue to save, no CUDA Graph, no PCIe copy and no copy engine to overlap. What this "
                  "run can show: the host-side costs of each executor, the memory planner (exact counts, the "
                  "same as on a GPU), the correctness checks, and the CPU's own matrix products. What it "
                  "cannot: anything the GPU story rests on; the chapters' H200 results show that. The "
                  "experiments say what they skipped and why:", ""]
    skipped = []
    for stem, r in rs.items():
        for note in r.r.get("notes", []):
            if isinstance(note, dict) and note.get("reason"):
                skipped.append(f"- `tg-{stem}`, {note.get('part', '?')}: {note['reason']}")
    lines += (skipped or ["- nothing was skipped"]) + [""]
    lines += ["## Plots", ""]
    for p in pngs:
        lines.append(f"- [{p}]({plots_dir}/{p}) ([svg]({plots_dir}/{Path(p).with_suffix('.svg').name}))")
    if not pngs:
        lines.append("- none (see the list of what did not run)")
    lines += ["", "## Full tables", "",
              "Every measurement of every report follows (`tg-report markdown`); "
              f"[report-format.md]({docs_link}/report-format.md) explains the columns.", ""]
    return "\n".join(lines)
