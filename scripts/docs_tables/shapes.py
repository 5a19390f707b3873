"""docs/shapes.md: the variable-shape strategies of tg-shapes (dynamic, recapture, cache,
bucket, update), the sweep over distinct lengths, the correctness checks, and the plots."""
from . import common
from .common import noisy, num, report, t, table
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
