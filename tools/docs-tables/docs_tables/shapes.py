"""docs/shapes.md: the variable-shape strategies of tg-shapes (dynamic, recapture, cache,
bucket, update), the sweep over distinct lengths, the correctness checks, and the plots."""
from . import common
from .common import Missing, noisy, num, pct, report, t, table, x
from .plotting import save

STRATEGIES = ("dynamic", "recapture", "cache", "bucket", "update")


def tab_shapes_strategies():
    r = report("shapes")
    dyn = r.one("iteration", strategy="dynamic")
    rows = []
    for s in STRATEGIES:
        m, x = r.one("iteration", strategy=s), r.one("iteration", strategy=s)["extra"]
        ups = f"{int(x['graph_exec_updates'])} / {int(x['reinstantiations'])}" if "graph_exec_updates" in x else "-"
        rows.append([s, t(m["median"]) + noisy(m), t(m["p90"]), t(m["max"]), t(m["mean"]),
                     f"{num(m['mean'] / dyn['mean'])}x", int(x["compiles"]), int(x["cache_hits"]),
                     f"{num(x['compile_ms_amortized'])} ms", int(x["graphs_cached_max"]),
                     f"{num(x['cached_MiB_max'])} MiB", f"{100 * x['padding_waste']:.0f}%", ups])
    n = dyn["params"]["iterations"]
    return (table(["strategy", "median", "p90", "max", "mean", "mean vs dynamic", "compiles", "cache hits",
                   "compile per iteration", "plans alive (max)", "their memory (max)", "padding", "updates / "
                   "re-instantiations"], rows, ["---"] + ["---:"] * 12) +
            f"\n\n{n} training steps per strategy, lengths {dyn['params']['distribution']}; every step timed, compile "
            "included; cache capacity " + str(int(r.one("iteration", strategy="cache")["extra"]["cache_capacity"])) +
            ".\n\n" + r.source_line())


def tab_shapes_sweep():
    r = report("shapes")
    ds = sorted({m["params"]["distinct_shapes"] for m in r.all("sweep_iteration")})
    rows = []
    for d in ds:
        dyn = r.one("sweep_iteration", distinct_shapes=d, strategy="dynamic")
        row = [d, t(dyn["mean"])]
        for s in STRATEGIES[1:]:
            m = r.one("sweep_iteration", distinct_shapes=d, strategy=s)
            v = m["extra"]["mean_vs_dynamic"]
            row.append(f"{'**' if v > 1 else ''}{num(v)}x{'**' if v > 1 else ''} ({int(m['extra']['compiles'])})")
        rows.append(row)
    return (table(["distinct lengths", "dynamic, mean step"] + [f"{s}: mean vs dynamic (compiles)" for s in
                                                                STRATEGIES[1:]], rows, ["---:"] * 6) +
            "\n\nMean step time of each strategy over dynamic's on the same lengths, compiles included; **bold**: "
            "static loses (above 1x).\n\n" + r.source_line())


def tab_shapes_checks():
    r = report("shapes")
    rows = [[m["params"]["strategy"], m["params"].get("matmul", "vendor").replace("_", "-"),
             "bitwise" if m["params"]["exact"] else "atol 1e-5 + rtol 1e-4",
             f"{int(m['median'])} tensors", "passed"] for m in r.all("check_vs_dynamic")]
    return table(["strategy", "matmul", "compared with dynamic", "checked", "result"], rows) + "\n\n" + r.source_line()


def plots_shapes():
    r = report("shapes")
    figs = common.PR.bars("tg-shapes", "time per training step, variable lengths",
                          {s: r.one("iteration", strategy=s) for s in STRATEGIES}, "(median, p10..p90)",
                          "time_per_strategy")
    fig, ax = common.PR.new_fig("tg-shapes: mean step time vs dynamic, by distinct lengths")
    for s in STRATEGIES[1:]:
        g = sorted(r.all("sweep_iteration", strategy=s), key=lambda m: m["params"]["distinct_shapes"])
        ax.plot([m["params"]["distinct_shapes"] for m in g], [m["extra"]["mean_vs_dynamic"] for m in g], marker="o",
                label=s)
    ax.axhline(1.0, color="black", linewidth=1, linestyle="--", label="dynamic")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("distinct sequence lengths in the run")
    ax.set_ylabel("mean step time / dynamic's (below 1: static wins)")
    ax.legend(fontsize=8)
    return save("tg-shapes", figs + [("sweep", fig)])


TABLES = {"shapes-strategies": tab_shapes_strategies, "shapes-sweep": tab_shapes_sweep,
          "shapes-checks": tab_shapes_checks}
PLOTTERS = {"shapes": plots_shapes}


# ---- values of the prose ---------------------------------------------------------------

def run(s):
    return report("shapes").one("iteration", strategy=s)


def vs_dyn(s):
    return run(s)["mean"] / run("dynamic")["mean"]


def sweep_m(d, s):
    return report("shapes").one("sweep_iteration", distinct_shapes=d, strategy=s)


def sweep_points():
    return sorted({m["params"]["distinct_shapes"] for m in report("shapes").all("sweep_iteration")})


def sweep_range(strategies, pick=lambda d: True):
    vs = [sweep_m(d, s)["extra"]["mean_vs_dynamic"] for d in sweep_points() if pick(d) for s in strategies]
    return f"{x(min(vs))} to {x(max(vs))}" if x(min(vs)) != x(max(vs)) else x(vs[0])


def capacity():
    return int(run("cache")["extra"]["cache_capacity"])


def many(d):
    return d >= max(sweep_points()) // 4  # "many lengths": the upper end of the sweep


def first_loss(s):
    """The smallest number of distinct lengths at which a strategy loses to dynamic."""
    lost = [d for d in sweep_points() if sweep_m(d, s)["extra"]["mean_vs_dynamic"] > 1]
    if not lost:
        raise Missing(f"{report('shapes').rel}: {s} never loses to dynamic in the sweep")
    return lost[0]


VALUES = {
    "shapes.steps": lambda: str(int(run("dynamic")["params"]["iterations"])),
    "shapes.dyn_mean": lambda: t(run("dynamic")["mean"]),
    "shapes.recapture_x": lambda: x(vs_dyn("recapture")),
    "shapes.recapture_mean": lambda: t(run("recapture")["mean"]),
    "shapes.recapture_compiles": lambda: str(int(run("recapture")["extra"]["compiles"])),
    "shapes.recapture_compile_ms": lambda: f"{num(run('recapture')['extra']['compile_ms_amortized'])} ms",
    "shapes.cache_x": lambda: x(vs_dyn("cache")),
    "shapes.cache_capacity": lambda: str(capacity()),
    "shapes.cache_compiles": lambda: str(int(run("cache")["extra"]["compiles"])),
    "shapes.cache_hits": lambda: str(int(run("cache")["extra"]["cache_hits"])),
    "shapes.cache_mib": lambda: f"{num(run('cache')['extra']['cached_MiB_max'])} MiB",
    "shapes.cache_median": lambda: t(run("cache")["median"]),
    "shapes.update_x": lambda: x(vs_dyn("update")),
    "shapes.update_compiles": lambda: str(int(run("update")["extra"]["compiles"])),
    "shapes.update_updates": lambda: str(int(run("update")["extra"]["graph_exec_updates"])),
    "shapes.update_reinst": lambda: str(int(run("update")["extra"]["reinstantiations"])),
    "shapes.update_vs_recapture": lambda: x(run("recapture")["extra"]["compile_ms_amortized"]
                                            / run("update")["extra"]["compile_ms_amortized"]),
    "shapes.update_compile_ms": lambda: f"{num(run('update')['extra']['compile_ms_amortized'])} ms",
    "shapes.bucket_x": lambda: x(vs_dyn("bucket")),
    "shapes.bucket_mean": lambda: t(run("bucket")["mean"]),
    "shapes.bucket_median": lambda: t(run("bucket")["median"]),
    "shapes.bucket_compiles": lambda: str(int(run("bucket")["extra"]["compiles"])),
    "shapes.bucket_padding": lambda: pct(run("bucket")["extra"]["padding_waste"]),
    "shapes.bucket_max": lambda: t(run("bucket")["max"]),
    "shapes.noisy": lambda: ", ".join(s for s in STRATEGIES if run(s).get("noisy")) or "none",
    "shapes.dyn_sweep_range": lambda: "{} to {}".format(*[t(f(sweep_m(d, "dynamic")["mean"] for d in sweep_points()))
                                                          for f in (min, max)]),
    "shapes.one_range": lambda: sweep_range(STRATEGIES[1:], lambda d: d == 1),
    "shapes.one_bucket": lambda: x(sweep_m(1, "bucket")["extra"]["mean_vs_dynamic"]),
    "shapes.one_others": lambda: x(sweep_m(1, "recapture")["extra"]["mean_vs_dynamic"]),
    "shapes.two_recapture": lambda: x(sweep_m(2, "recapture")["extra"]["mean_vs_dynamic"]),
    "shapes.two_update": lambda: x(sweep_m(2, "update")["extra"]["mean_vs_dynamic"]),
    "shapes.two_switch_pct": lambda: pct(sweep_m(2, "recapture")["extra"]["compiles"]
                                         / sweep_m(2, "recapture")["params"]["iterations"]),
    "shapes.two_compiles": lambda: str(int(sweep_m(2, "recapture")["extra"]["compiles"])),
    "shapes.many_recapture": lambda: sweep_range(["recapture"], many),
    "shapes.many_update": lambda: sweep_range(["update"], many),
    "shapes.cache_fit_range": lambda: sweep_range(["cache"], lambda d: d <= capacity()),
    "shapes.cache_first_loss": lambda: str(first_loss("cache")),
    "shapes.cache_first_loss_x": lambda: x(sweep_m(first_loss("cache"), "cache")["extra"]["mean_vs_dynamic"]),
    "shapes.cache_first_loss_compiles": lambda: str(int(sweep_m(first_loss("cache"), "cache")["extra"]["compiles"])),
    "shapes.cache_all_x": lambda: x(sweep_m(max(sweep_points()), "cache")["extra"]["mean_vs_dynamic"]),
    "shapes.all_lengths": lambda: str(max(sweep_points())),
    "shapes.bucket_range": lambda: sweep_range(["bucket"]),
    "shapes.bucket_max_compiles": lambda: str(int(max(sweep_m(d, "bucket")["extra"]["compiles"] for d in sweep_points()))),
}
