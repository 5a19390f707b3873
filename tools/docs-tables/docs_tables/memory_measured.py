"""docs/memory.md, what the runs measured: bytes by role from real allocations against
the formulas (and the verdict on their agreement), the allocators' peaks, and in-place
ReLU. The roles and the formulas' side come from memory.py."""
from . import common
from .common import Missing, mib, num, pct, report, table, x
from .memory import ROLES, memory_roles

MEASURED_SOURCES = (
    ("dynamic_keep_all", "dynamic executor, nothing freed early: per-role peak"),
    ("dynamic", "dynamic executor, early frees (steady state): per-role peak"),
    ("static", "static executor, naive plan: device buffers + arena by role"),
)


def measured_rows(r, source):
    """{(model, batch, mode): {role: measurement}} of role_bytes_measured from one source, in report order."""
    out = {}
    for m in r.all("role_bytes_measured", source=source):
        p = m["params"]
        out.setdefault((p["model"], p["batch"], p["mode"]), {})[p["role"]] = m
    return out


def diff_cell(m):
    pred, got = m["extra"]["predicted_B"], m["median"]
    if pred == got:
        return "="
    d = f"{m['extra']['diff_pct']:+.2f}%"
    return d if m["params"].get("checked", True) else f"({d})"


def tab_memory_measured():
    r = report("memory")
    if not r.all("role_bytes_measured"):
        raise Missing(f"{r.rel}: no role_bytes_measured (the report predates per-role measurement; rerun tg-memory)")
    rows = []
    for source, what in MEASURED_SOURCES:
        for (model, batch, mode), roles in measured_rows(r, source).items():
            cells = []
            for name in ROLES:
                m = roles.get(name)
                cells.append("-" if m is None or (m["median"] == 0 and m["extra"]["predicted_B"] == 0)
                             else f"{mib(m['median'])} {diff_cell(m)}")
            checked = [abs(m["extra"]["diff_pct"]) for m in roles.values() if m["params"].get("checked", True)]
            rows.append([f"{model} b{batch} {mode}", source] + cells + [f"{max(checked):.2f}%" if checked else "-"])
    head = ["config (model, batch, mode)", "measured by"] + list(ROLES) + ["worst checked role"]
    legend = "; ".join(f"`{s}`: {w}" for s, w in MEASURED_SOURCES)
    return (table(head, rows, ["---", "---"] + ["---:"] * 7) + "\n\nBytes measured from real allocations, each "
            "against the formula for that role: `=` equal to the byte, else the difference; in parentheses a role "
            "that is not checked (workspace with early frees: liveness frees it, the formula counts every value). "
            f"{legend}.\n\n" + r.source_line())


def tab_memory_agreement():
    r = report("memory")
    ms = r.all("role_agreement_worst_pct")
    if not ms:
        raise Missing(f"{r.rel}: no role_agreement_worst_pct (the report predates it; rerun tg-memory)")
    rows = [[m["params"]["source"], int(m["params"]["roles_checked"]), f"{m['median']:.2f}%",
             f"{num(m['params']['target_pct'])}%", "**pass**" if m["params"]["verdict"] == "pass" else "**FAIL**"]
            for m in ms]
    return (table(["source", "roles checked", "worst |measured / predicted - 1|", "threshold", "verdict"], rows,
                  ["---", "---:", "---:", "---:", "---"]) + "\n\n" + r.source_line())


def tab_memory_allocators():
    r = report("memory")
    rows = []
    for m in r.all("allocator_peak"):
        p = m["params"]
        res = r.one("allocator_peak_reserved", **p)["median"]
        rows.append([f"{p['model']} b{p['batch']} {p['mode']}", p["allocator"], mib(m["median"]), mib(res),
                     f"{num(res / m['median'])}x", int(m["extra"]["allocs"]), int(m["extra"]["raw_allocs"])])
    return (table(["config", "allocator", "peak allocated", "peak reserved", "reserved / allocated",
                   "tensor allocations", "device allocations"], rows, ["---", "---"] + ["---:"] * 5) +
            "\n\nDynamic executor, 3 iterations, peak of iterations 2-3 (the first one learns when each tensor can be "
            "freed); allocation counts are over all 3 iterations.\n\n" + r.source_line())


def tab_memory_inplace():
    r = report("memory")
    rows = []
    for ip in (False, True):
        arena = {m["params"]["mode"]: m for m in r.all("inplace_relu_arena", in_place_relu=ip)}
        dyn = {m["params"]["free_early"]: m["median"] for m in r.all("inplace_relu_dynamic_peak", in_place_relu=ip)}
        batch = arena["train_momentum"]["params"]["batch"]
        rows.append([f"mlp b{batch}", "on" if ip else "off", int(arena["train_momentum"]["extra"]["num_in_place"]),
                     mib(arena["train_momentum"]["median"]), mib(arena["inference"]["median"]), mib(dyn[True]),
                     mib(dyn[False])])
    return (table(["config", "in-place ReLU", "ReLUs in place", "planned arena, training", "planned arena, inference",
                   "dynamic peak, early frees", "dynamic peak, no early frees"], rows, ["---", "---"] + ["---:"] * 5)
            + "\n\n" + r.source_line())


TABLES = {"memory-measured": tab_memory_measured, "memory-agreement": tab_memory_agreement,
          "memory-allocators": tab_memory_allocators, "memory-inplace": tab_memory_inplace}
PLOTTERS = {}


# ---- values of the prose ---------------------------------------------------------------

def batches(model):
    return sorted({m["params"]["batch"] for m in report("memory").all("role_bytes", model=model, source="predicted",
                                                                       mode="train_momentum")})


def listing(xs):
    xs = [str(v) for v in xs]
    return ", ".join(xs[:-1]) + " and " + xs[-1] if len(xs) > 1 else xs[0]


def main_batch(model):
    """The batch measured in every mode (the comparisons' point)."""
    modes = {}
    for m in report("memory").all("role_bytes", model=model, source="predicted"):
        modes.setdefault(m["params"]["batch"], set()).add(m["params"]["mode"])
    full = [b for b, ms in modes.items() if len(ms) > 1]
    if len(full) != 1:
        raise Missing(f"{report('memory').rel}: {len(full)} batches of {model} measured in several modes (1 expected)")
    return full[0]


def role(model, mode, name, batch=None):
    return memory_roles(report("memory"), model, batch or main_batch(model), mode).get(name, (0, 0))[0]


def total(model, mode, batch=None):
    return sum(p for p, _ in memory_roles(report("memory"), model, batch or main_batch(model), mode).values())


def planned_total(model, mode, batch=None):
    m = report("memory").one("arena_bytes", model=model, batch=batch or main_batch(model), mode=mode, plan="planned")
    return m["median"] + m["extra"]["external_B"]


def state_share(model, batch):
    state = sum(role(model, "train_momentum", r, batch) for r in ("parameters", "gradients", "momentum"))
    return state / total(model, "train_momentum", batch)


def arena_ratios():
    """{(model, batch, mode): (naive / planned, planned / lower bound)} of every planned arena."""
    r = report("memory")
    out = {}
    for m in r.all("arena_bytes", plan="planned"):
        p = m["params"]
        naive = r.one("arena_bytes", plan="naive", model=p["model"], batch=p["batch"], mode=p["mode"])["median"]
        lb = r.one("arena_lower_bound", model=p["model"], batch=p["batch"], mode=p["mode"])["median"]
        out[(p["model"], p["batch"], p["mode"])] = (naive / m["median"], m["median"] / lb)
    return out


def alloc(name, allocator, model="transformer", mode="train_momentum"):
    return report("memory").one(name, allocator=allocator, model=model, mode=mode, batch=main_batch(model))


def meminfo(model):
    return report("memory").one("meminfo_delta", model=model, batch=main_batch(model))


def naive_plus_external_gaps():
    from .memory import memory_roles as roles_of
    r = report("memory")
    gaps = []
    for m in r.all("arena_bytes", plan="naive", mode="train_momentum"):
        p = m["params"]
        pred = sum(q for q, _ in roles_of(r, p["model"], p["batch"], "train_momentum").values())
        gaps.append(m["median"] + m["extra"]["external_B"] - pred)
    return gaps


def inplace(free_early, ip):
    return report("memory").one("inplace_relu_dynamic_peak", free_early=free_early, in_place_relu=ip)["median"]


def static_vs_dynamic(mode):
    return planned_total("transformer", mode) - alloc("allocator_peak", "caching", mode=mode)["median"]


def agreement(source="all"):
    return report("memory").one("role_agreement_worst_pct", source=source)


T, MLP = "transformer", "mlp"
VALUES = {
    "memory.device_gib": lambda: f"{num(common.gpu_of('memory')['total_bytes'] / 2**30, 0)} GiB",
    "memory.mlp_batches": lambda: listing(batches(MLP)),
    "memory.t_batches": lambda: listing(batches(T)),
    "memory.mlp_n": lambda: str(len(batches(MLP))),
    "memory.t_n": lambda: str(len(batches(T))),
    "memory.mlp_main": lambda: str(main_batch(MLP)),
    "memory.t_main": lambda: str(main_batch(T)),
    "memory.roles_checked": lambda: str(int(agreement()["params"]["roles_checked"])),
    "memory.worst_all": lambda: f"{agreement()['median']:.2f}%",
    "memory.keepall_t": lambda: f"{int(report('memory').one('dynamic_peak_keep_all', model=T, batch=main_batch(T), mode='train_momentum')['median']):,} B",
    "memory.meminfo_t": lambda: f"{int(meminfo(T)['median']):,} B",
    "memory.meminfo_t_pct": lambda: f"{100 * (meminfo(T)['extra']['measured/predicted'] - 1):+.2f}%",
    "memory.meminfo_t_mib": lambda: mib(meminfo(T)["median"] - meminfo(T)["extra"]["predicted_B"]),
    "memory.naive_gap": lambda: f"{int(min(naive_plus_external_gaps()))}-{int(max(naive_plus_external_gaps()))} B",
    "memory.t_train_vs_inf": lambda: x(planned_total(T, "train_momentum") / planned_total(T, "inference")),
    "memory.t_train_planned": lambda: mib(planned_total(T, "train_momentum")),
    "memory.t_inf_planned": lambda: mib(planned_total(T, "inference")),
    "memory.t_train_all": lambda: mib(total(T, "train_momentum")),
    "memory.t_sgd_all": lambda: mib(total(T, "train_sgd")),
    "memory.t_inf_all": lambda: mib(total(T, "inference")),
    "memory.t_params": lambda: mib(role(T, "train_momentum", "parameters")),
    "memory.t_acts": lambda: mib(role(T, "train_momentum", "activations")),
    "memory.t_acts_vs_params": lambda: x(role(T, "train_momentum", "activations") / role(T, "train_momentum", "parameters")),
    "memory.t_acts_b1": lambda: mib(role(T, "train_momentum", "activations", min(batches(T)))),
    "memory.mlp_state_small": lambda: pct(state_share(MLP, min(batches(MLP)))),
    "memory.mlp_state_big": lambda: pct(state_share(MLP, max(batches(MLP)))),
    "memory.t_state_small": lambda: pct(state_share(T, min(batches(T)))),
    "memory.t_state_big": lambda: pct(state_share(T, max(batches(T)))),
    "memory.mlp_state_mib": lambda: mib(sum(role(MLP, "train_momentum", r, min(batches(MLP)))
                                            for r in ("parameters", "gradients", "momentum"))),
    "memory.mlp_total_small": lambda: mib(total(MLP, "train_momentum", min(batches(MLP)))),
    "memory.mlp_total_big": lambda: mib(total(MLP, "train_momentum", max(batches(MLP)))),
    "memory.arena_mlp_second": lambda: x(arena_ratios()[(MLP, batches(MLP)[1], "train_momentum")][0]),
    "memory.mlp_second": lambda: str(batches(MLP)[1]),
    "memory.mlp_grads": lambda: mib(role(MLP, "train_momentum", "gradients", min(batches(MLP)))),
    "memory.worst_packing_where": lambda: listing(sorted(f"{m} batch {b}" for (m, b, _), (_, lb) in arena_ratios().items()
                                                         if lb - 1 >= max(v for _, v in arena_ratios().values()) - 1 - 0.005)),
    "memory.arena_best_where": lambda: "{} batch {} {}".format(*max(arena_ratios(), key=lambda k: arena_ratios()[k][0])),
    "memory.mlp_small": lambda: str(min(batches(MLP))),
    "memory.mlp_big": lambda: str(max(batches(MLP))),
    "memory.t_small": lambda: str(min(batches(T))),
    "memory.t_big": lambda: str(max(batches(T))),
    "memory.arena_best": lambda: x(max(a for a, _ in arena_ratios().values())),
    "memory.arena_t_range": lambda: "{} to {}".format(*[x(f(a for (m, _, _), (a, _) in arena_ratios().items() if m == T))
                                                         for f in (min, max)]),
    "memory.arena_mlp_small": lambda: x(arena_ratios()[(MLP, min(batches(MLP)), "train_momentum")][0]),
    "memory.on_bound": lambda: str(sum(1 for _, b in arena_ratios().values() if b <= 1.0005)),
    "memory.arenas": lambda: str(len(arena_ratios())),
    "memory.worst_packing": lambda: pct(max(b for _, b in arena_ratios().values()) - 1),
    "memory.alloc_peak": lambda: mib(alloc("allocator_peak", "caching")["median"]),
    "memory.raw_allocs": lambda: str(int(alloc("allocator_peak", "raw")["extra"]["raw_allocs"])),
    "memory.caching_allocs": lambda: str(int(alloc("allocator_peak", "caching")["extra"]["raw_allocs"])),
    "memory.pool_allocs": lambda: str(int(alloc("allocator_peak", "pool")["extra"]["raw_allocs"])),
    "memory.caching_reserved": lambda: mib(alloc("allocator_peak_reserved", "caching")["median"]),
    "memory.pool_reserved": lambda: mib(alloc("allocator_peak_reserved", "pool")["median"]),
    "memory.reserved_ratio": lambda: x(alloc("allocator_peak_reserved", "caching")["median"]
                                       / alloc("allocator_peak", "caching")["median"]),
    "memory.inf_reserved_ratio": lambda: x(alloc("allocator_peak_reserved", "caching", mode="inference")["median"]
                                           / alloc("allocator_peak", "caching", mode="inference")["median"]),
    "memory.inf_alloc": lambda: mib(alloc("allocator_peak", "caching", mode="inference")["median"]),
    "memory.inf_reserved": lambda: mib(alloc("allocator_peak_reserved", "caching", mode="inference")["median"]),
    "memory.inplace_on": lambda: str(int(report("memory").one("inplace_relu_arena", in_place_relu=True,
                                                             mode="train_momentum")["extra"]["num_in_place"])),
    "memory.inplace_arena_train": lambda: mib(report("memory").one("inplace_relu_arena", in_place_relu=True,
                                                                   mode="train_momentum")["median"]),
    "memory.inplace_arena_inf": lambda: mib(report("memory").one("inplace_relu_arena", in_place_relu=True,
                                                                 mode="inference")["median"]),
    "memory.inplace_dyn_early": lambda: mib(inplace(True, True)),
    "memory.inplace_keep_off": lambda: mib(inplace(False, False)),
    "memory.inplace_keep_on": lambda: mib(inplace(False, True)),
    "memory.inplace_saved": lambda: mib(inplace(False, False) - inplace(False, True)),
    "memory.static_over_dyn_pct": lambda: pct(static_vs_dynamic("train_momentum") / planned_total(T, "train_momentum")),
    "memory.static_over_dyn_b": lambda: f"{int(static_vs_dynamic('train_momentum')):,} B",
    "memory.static_packing": lambda: mib(report("memory").one("arena_bytes", model=T, batch=main_batch(T), mode="train_momentum", plan="planned")["median"]
                                         - report("memory").one("arena_lower_bound", model=T, batch=main_batch(T), mode="train_momentum")["median"]),
    "memory.inf_equal_b": lambda: f"{int(alloc('allocator_peak', 'caching', mode='inference')['median']):,} B",
    "memory.inf_diff_b": lambda: f"{int(static_vs_dynamic('inference')):,} B",
    "memory.reserved_vs_static": lambda: x(alloc("allocator_peak_reserved", "caching")["median"]
                                           / planned_total(T, "train_momentum")),
}
