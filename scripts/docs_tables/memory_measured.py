"""docs/memory.md, what the runs measured: bytes by role from real allocations against
the formulas (and the verdict on their agreement), the allocators' peaks, and in-place
ReLU. The roles and the formulas' side come from memory.py."""
from .common import Missing, mib, num, report, table
from .memory import ROLES

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
            for x in ROLES:
                m = roles.get(x)
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
    return (table(["source", "roles checked", "worst |measured / predicted - 1|", "target", "verdict"], rows,
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
