"""docs/launch.md: the summary table of tg-launch (raw CUDA, dynamic and static costs
per op), the compile phases, the cold-start table, the plot, and the values the
chapter's prose quotes."""
from . import common
from .common import Missing, num, report, sources_line, t, table, x
from .plotting import save


def per(name, key, n=1000, **p):
    return report("launch").one(name, n_ops=n, **p)["extra"][key]


def phases(allocator, suffix=""):
    return {ph: per(f"dynamic_{ph}{suffix}", "us_per_op", allocator=allocator)
            for ph in ("iteration", "build", "alloc", "launch", "other")}


def compile_s(phase, launch="cuda_graph", mode="inference", n=1000):
    return report("launch").one(f"compile_{phase}", chain_ops=n, launch=launch, mode=mode)["median"]


def tab_launch_summary():
    r = report("launch")
    c, raw, pool = phases("caching"), phases("raw", "_raw"), phases("pool", "_pool")
    rows = [
        ["raw CUDA: empty kernel, eager, back to back",
         f"{num(per('raw_eager', 'us_per_kernel', kernel='empty', pdl=0))} us; with PDL "
         f"{num(per('raw_eager', 'us_per_kernel', kernel='empty', pdl=1))}"],
        ["raw CUDA: 'touch' kernel (reads what the last wrote), eager, back to back",
         f"{num(per('raw_eager', 'us_per_kernel', kernel='touch', pdl=0))} us; with PDL "
         f"{num(per('raw_eager', 'us_per_kernel', kernel='touch', pdl=1))}"],
        ["raw CUDA: empty kernel, then a synchronize (N = 1)", t(r.one("raw_eager_sync", n_ops=1)["median"])],
        ["raw CUDA: 1000 empty kernels as one CUDA Graph",
         f"{num(per('raw_graph_gpu', 'us_per_node', kernel='empty', pdl=0))} us per node (with PDL "
         f"{num(per('raw_graph_gpu', 'us_per_node', kernel='empty', pdl=1))}); `cudaGraphLaunch` call "
         f"{t(r.one('cuda_graph_launch_call', graph_nodes=1000)['median'])}"],
        ["raw CUDA: 1000 'touch' kernels (each reads what the last wrote) as one CUDA Graph",
         f"{num(per('raw_graph_gpu', 'us_per_node', kernel='touch', pdl=0))} us per node; with PDL "
         f"{num(per('raw_graph_gpu', 'us_per_node', kernel='touch', pdl=1))}"],
        ["dynamic, caching allocator", f"{num(c['iteration'])} us; the phases' medians: build {num(c['build'])}, alloc "
                                       f"{num(c['alloc'])}, launch {num(c['launch'])}, other {num(c['other'])}"],
        ["dynamic, pool allocator (cudaMallocAsync)", f"{num(pool['iteration'])} us (alloc {num(pool['alloc'])})"],
        ["dynamic, raw allocator (cudaMalloc/cudaFree per tensor)",
         f"{num(raw['iteration'])} us (alloc {num(raw['alloc'])})"],
        ["static, plain launches of the prebuilt schedule", f"{num(per('static_replay_plain', 'us_per_node'))} us"],
        ["static, CUDA Graph replay (PDL on)", f"{num(per('static_replay_gpu', 'us_per_node'))} us per node (N = 10000: "
                                               f"{num(per('static_replay_gpu', 'us_per_node', n=10000))})"],
        ["cost of the dynamic breakdown's own timing (sampled vs off, interleaved)",
         f"{num(r.one('timing_overhead', n_ops=1000)['median'])}% of the iteration"],
    ]
    return (table(["what (N = 1000 unless said)", "per op / node"], rows) +
            "\n\nThe phases are sampled in the same iterations as the total, but a median of parts is not the part "
            "of a median: the phase medians need not add up to the iteration's.\n\n" + r.source_line())


def tab_launch_costs():
    """Every "launch cost" the chapters quote, what each one measures and where it comes from."""
    from . import regimes
    r = report("launch")
    rows = [
        ["host enqueue rate, PDL off: 1000 empty kernels back to back, one sync at the end",
         f"{num(per('raw_eager', 'us_per_kernel', kernel='empty', pdl=0))} us",
         "tg-launch `raw_eager` (kernel=empty, pdl=0)", "the throughput of eager launches without PDL"],
        ["host enqueue rate, PDL on (how both executors launch)",
         f"{num(per('raw_eager', 'us_per_kernel', kernel='empty', pdl=1))} us",
         "tg-launch `raw_eager` (kernel=empty, pdl=1)", "the floor under the dynamic executor's launch phase"],
        ["one launch and the trip back: an empty kernel, then a synchronize",
         t(r.one("raw_eager_sync", n_ops=1)["median"]), "tg-launch `raw_eager_sync`",
         "what an op costs when the host waits for each one (`.item()` after every op)"],
        ["one small kernel timed alone with CUDA events around it", t(regimes.floor_s()),
         "tg-kernels `d2d_copy`, smallest size, `--plain-timing`",
         "the regimes' launch floor: the events and the launch, seen from the stream"],
        ["one node of a CUDA Graph replay (empty kernel; with PDL)",
         f"{num(per('raw_graph_gpu', 'us_per_node', kernel='empty', pdl=0))} us "
         f"({num(per('raw_graph_gpu', 'us_per_node', kernel='empty', pdl=1))})",
         "tg-launch `raw_graph_gpu`", "what a static replay pays per op at the least"],
        ["the dynamic executor's launch phase, per op", f"{num(phases('caching')['launch'])} us",
         "tg-launch `dynamic_launch` (N = 1000)", "`Backend::run`: the enqueue of a real kernel, with PDL"],
    ]
    return (table(["launch cost", "value", "measured by", "what it is"], rows, ["---", "---:", "---", "---"]) +
            "\n\n" + sources_line("launch", "kernels"))


def tab_launch_compile():
    r = report("launch")
    ph = ("record", "autodiff", "validate", "plan", "schedule", "capture", "instantiate", "total")
    rows = [[f"{mode}, {launch}"] + [t(compile_s(p, launch, mode)) if compile_s(p, launch, mode) else "-" for p in ph]
            for mode, launch in (("inference", "cuda_graph"), ("inference", "plain"), ("training", "cuda_graph"))]
    return (table(["N = 1000 chain"] + list(ph), rows, ["---"] + ["---:"] * len(ph)) +
            "\n\nMedians over several compiles; `-`: the plan has no such phase (an inference plan no autodiff, plain "
            "launches no capture or instantiation).\n\n" + r.source_line())


# The cold-start rows (experiments/harness/cold_start.h): absent from reports taken before
# they existed, which the table then says instead of failing the run.
COLD_CALLS = [("runtime_init", "runtime and driver initialization (`cudaGetDeviceCount`)"),
              ("context_creation", "primary context (`cudaSetDevice` + `cudaFree(0)`)"),
              ("cudaMalloc", "`cudaMalloc` of 1 KiB"), ("cudaMemcpy_h2d_pageable", "`cudaMemcpy` H2D, 1 KiB, pageable"),
              ("cudaFree", "`cudaFree` of 1 KiB"), ("kernel_launch", "empty kernel launch + synchronize")]


def cold_table(stems):
    rows = []
    for stem in stems:
        r = report(stem)
        for call, label in COLD_CALLS:
            first, second = r.all("cold_start", call=call, occurrence="first"), r.all("cold_start", call=call,
                                                                                      occurrence="second")
            if first and second:
                f, s = first[0], second[0]
                rows.append([label, r.r["tool"]["name"], f"{t(f['median'])} ({t(f['p10'])} .. {t(f['p90'])})",
                             t(s["median"]), x(f["median"] / s["median"]) if s["median"] > 0 else "-"])
    if not rows:
        cmd = " and ".join(f"`{report(s).r['tool']['name']} --device 0 --json docs/results/{s}.json`" for s in stems)
        return (f"> Not measured yet: the saved report{'s' if len(stems) > 1 else ''} predate{'' if len(stems) > 1 else 's'}"
                f" the `cold_start` rows. {cmd} on a GPU, then `python3 tools/docs-tables`, fill this table.")
    n = int(report(stems[0]).all("cold_start")[0]["extra"]["processes"]) if report(stems[0]).all("cold_start") else 0
    return (table(["call", "measured by", "first in the process: median (p10 .. p90)", "second", "first / second"],
                  rows, ["---", "---", "---:", "---:", "---:"]) +
            f"\n\nEach sample is one fresh process ({n} per row): the binary runs itself as a child that touches "
            "nothing before these calls, in this order.\n\n" + sources_line(*stems))


def tab_launch_cold_start():
    return cold_table(["launch"])


def plots_launch():
    r = report("launch")
    return save("tg-launch", common.PR.fig_launch("tg-launch", r.ms, r.r))  # fig_launch picks the curves


def earlier_run():
    """The same build's launch report from a run minutes before the saved one."""
    path = common.RESULTS / "h200-probes" / "launch-earlier-run.json"
    if not path.exists():
        raise Missing(f"{path} does not exist")
    return common.PR.load(str(path))


def earlier_dyn_us():
    m = [m for m in earlier_run()["measurements"] if m["name"] == "dynamic_iteration"
         and m["params"].get("n_ops") == 1000 and m["params"].get("allocator") == "caching"]
    if len(m) != 1:
        raise Missing("launch-earlier-run.json: no dynamic_iteration n_ops=1000 allocator=caching")
    return num(m[0]["extra"]["us_per_op"])


def cuda_malloc_range(api):
    """The smallest and largest median of one allocation API over tg-transfer's sizes."""
    meds = [m["median"] for m in report("transfer").all("alloc", api=api)]
    return f"{t(min(meds))} to {t(max(meds))}"


VALUES = {
    "launch.dyn_us": lambda: num(phases("caching")["iteration"]),
    "launch.dyn_build": lambda: num(phases("caching")["build"]),
    "launch.dyn_alloc": lambda: num(phases("caching")["alloc"]),
    "launch.dyn_launch": lambda: num(phases("caching")["launch"]),
    "launch.dyn_added": lambda: num(phases("caching")["build"] + phases("caching")["alloc"]),
    "launch.dyn_earlier_us": earlier_dyn_us,
    "launch.eager_floor_pdl": lambda: num(per("raw_eager", "us_per_kernel", kernel="empty", pdl=1)),
    "launch.eager_touch_pdl": lambda: num(per("raw_eager", "us_per_kernel", kernel="touch", pdl=1)),
    "launch.dyn_launch_over_floor": lambda: num(phases("caching")["launch"]
                                                - per("raw_eager", "us_per_kernel", kernel="touch", pdl=1)),
    "launch.graph_empty": lambda: num(per("raw_graph_gpu", "us_per_node", kernel="empty", pdl=0)),
    "launch.graph_empty_pdl": lambda: num(per("raw_graph_gpu", "us_per_node", kernel="empty", pdl=1)),
    "launch.graph_touch": lambda: num(per("raw_graph_gpu", "us_per_node", kernel="touch", pdl=0)),
    "launch.graph_touch_pdl": lambda: num(per("raw_graph_gpu", "us_per_node", kernel="touch", pdl=1)),
    "launch.replay_node": lambda: num(per("static_replay_gpu", "us_per_node")),
    "launch.replay_node_10k": lambda: num(per("static_replay_gpu", "us_per_node", n=10000)),
    "launch.replay_over_touch": lambda: num(per("static_replay_gpu", "us_per_node")
                                            - per("raw_graph_gpu", "us_per_node", kernel="touch", pdl=1)),
    "launch.plain_us": lambda: num(per("static_replay_plain", "us_per_node")),
    "launch.pool_us": lambda: num(phases("pool", "_pool")["iteration"]),
    "launch.raw_us": lambda: num(phases("raw", "_raw")["iteration"]),
    "launch.raw_alloc": lambda: num(phases("raw", "_raw")["alloc"]),
    "launch.raw_vs_caching": lambda: x(phases("raw", "_raw")["iteration"] / phases("caching")["iteration"]),
    "launch.dyn_vs_replay": lambda: x(phases("caching")["iteration"] / per("static_replay_gpu", "us_per_node")),
    "launch.timing_pct": lambda: f"{num(report('launch').one('timing_overhead', n_ops=1000)['median'])}%",
    "launch.compile_total": lambda: t(compile_s("total")),
    "launch.compile_record": lambda: t(compile_s("record")),
    "launch.compile_capture_inst": lambda: t(compile_s("capture") + compile_s("instantiate")),
    "launch.compile_train_total": lambda: t(compile_s("total", mode="training")),
    "launch.break_even": lambda: num(report("launch").one("break_even_iterations", chain_ops=1000,
                                                         launch="cuda_graph")["median"]),
    "launch.break_even_plain": lambda: num(report("launch").one("break_even_iterations", chain_ops=1000,
                                                               launch="plain")["median"]),
    "launch.n1_dyn_us": lambda: num(per("dynamic_iteration", "us_per_op", n=1, allocator="caching")),
    "launch.n1_static_us": lambda: num(per("static_iteration", "us_per_op", n=1, launch="cuda_graph")),
    "launch.malloc_range": lambda: cuda_malloc_range("cudaMalloc"),
    "launch.free_range": lambda: cuda_malloc_range("cudaFree"),
}

TABLES = {"launch-summary": tab_launch_summary, "launch-costs": tab_launch_costs, "launch-compile": tab_launch_compile,
          "launch-cold-start": tab_launch_cold_start}
PLOTTERS = {"launch": plots_launch}
