"""docs/launch.md: the summary table of tg-launch (raw CUDA, dynamic and static costs
per op) and its plots. The chapter's prose is hand-written around them."""
from . import common
from .common import num, report, t, table
from .plotting import save


def tab_launch_summary():
    r = report("launch")
    per = lambda name, key, n=1000, **p: num(r.one(name, n_ops=n, **p)["extra"][key])
    dyn = lambda a, suffix="": {ph: per(f"dynamic_{ph}{suffix}", "us_per_op", allocator=a)
                                for ph in ("iteration", "build", "alloc", "launch", "other")}
    c, raw, pool = dyn("caching"), dyn("raw", "_raw"), dyn("pool", "_pool")
    rows = [
        ["raw CUDA: empty kernel, eager, back to back",
         f"{per('raw_eager', 'us_per_kernel', kernel='empty', pdl=0)} us"],
        ["raw CUDA: empty kernel, then a synchronize (N = 1)", t(r.one("raw_eager_sync", n_ops=1)["median"])],
        ["raw CUDA: 1000 empty kernels as one CUDA Graph",
         f"{per('raw_graph_gpu', 'us_per_node', kernel='empty', pdl=0)} us per node (with PDL "
         f"{per('raw_graph_gpu', 'us_per_node', kernel='empty', pdl=1)}); `cudaGraphLaunch` call "
         f"{t(r.one('cuda_graph_launch_call', graph_nodes=1000)['median'])}"],
        ["raw CUDA: 1000 'touch' kernels (each reads what the last wrote) as one CUDA Graph",
         f"{per('raw_graph_gpu', 'us_per_node', kernel='touch', pdl=0)} us per node; with PDL "
         f"{per('raw_graph_gpu', 'us_per_node', kernel='touch', pdl=1)}"],
        ["dynamic, caching allocator", f"{c['iteration']} us = build {c['build']} + alloc {c['alloc']} + launch "
                                       f"{c['launch']} + other {c['other']}"],
        ["dynamic, pool allocator (cudaMallocAsync)", f"{pool['iteration']} us (alloc {pool['alloc']})"],
        ["dynamic, raw allocator (cudaMalloc/cudaFree per tensor)", f"{raw['iteration']} us (alloc {raw['alloc']})"],
        ["static, plain launches of the prebuilt schedule", f"{per('static_replay_plain', 'us_per_node')} us"],
        ["static, CUDA Graph replay (PDL on)", f"{per('static_replay_gpu', 'us_per_node')} us per node (N = 10000: "
                                               f"{per('static_replay_gpu', 'us_per_node', n=10000)})"],
        ["cost of the dynamic breakdown's own timing (sampled vs off, interleaved)",
         f"{num(r.one('timing_overhead', n_ops=1000)['median'])} % of the iteration"],
    ]
    return table(["what (N = 1000 unless said)", "per op / node"], rows)


def plots_launch():
    r = report("launch")
    return save("tg-launch", common.PR.fig_launch("tg-launch", r.ms))  # fig_launch picks the curves


TABLES = {"launch-summary": tab_launch_summary}
PLOTTERS = {"launch": plots_launch}
