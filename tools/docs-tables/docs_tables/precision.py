"""docs/mixed-precision.md: tg-memory's rows per precision (bytes by role and dtype from
the autocast formulas, checked against the planner, the static executor's allocations and
the dynamic executor's peaks), from a CPU run saved as docs/results/memory_precision_cpu.json."""
from .common import Missing, mib, report, table, x

STEM = "memory_precision_cpu"
# The roles of the precision rows (experiments/memory/precision_roles.h), in report order.
ROLES = ("parameters", "weight_copies", "gradients", "momentum", "activations", "workspace", "inputs")
LOW = ("bf16", "f16")


def points(r):
    """(model, batch, mode, precision) in report order."""
    seen = []
    for m in r.all("precision_role_bytes", source="predicted"):
        p = m["params"]
        k = (p["model"], p["batch"], p["mode"], p["precision"])
        if k not in seen:
            seen.append(k)
    if not seen:
        raise Missing(f"{r.rel}: no precision_role_bytes (the report predates tg-memory's precision rows; rerun it)")
    return seen


def role_bytes(r, point, source="predicted"):
    """{(role, dtype): bytes} of one point from one source."""
    model, batch, mode, precision = point
    return {(m["params"]["role"], m["params"]["dtype"]): m["median"]
            for m in r.all("precision_role_bytes", model=model, batch=batch, mode=mode, precision=precision,
                           source=source)}


def total(r, point):
    return sum(role_bytes(r, point).values())


def fp32_point(point):
    return point[:3] + ("fp32",)


def agreement(r, point):
    """'equal to the byte' when every source equals the formula for every role, else the worst difference."""
    model, batch, mode, precision = point
    worst = 0.0
    for name in ("precision_role_bytes", "precision_dynamic_role_bytes"):
        for m in r.all(name, model=model, batch=batch, mode=mode, precision=precision):
            if m["params"]["source"] == "predicted":
                continue
            want = m["extra"]["predicted_B"]
            worst = max(worst, abs(m["median"] / want - 1) if want else float(m["median"] != 0))
    return "equal to the byte" if worst == 0 else f"{100 * worst:.2f}% off"


def cell(b, role, low):
    """A role's bytes, split into f32 and the low type where it has both."""
    f32, lo = b.get((role, "f32"), 0), sum(b.get((role, d), 0) for d in LOW)
    if not f32 and not lo:
        return "-"
    if f32 and lo:
        return f"{mib(f32)} f32 + {mib(lo)} {low}"
    return f"{mib(f32 or lo)} {'f32' if f32 else low}"


def tab_precision_memory_roles():
    r = report(STEM)
    rows = []
    for point in points(r):
        model, batch, mode, precision = point
        b = role_bytes(r, point)
        low = {"bf16": "bf16", "fp16": "f16"}.get(precision, "f32")
        t, t32 = total(r, point), total(r, fp32_point(point))
        rows.append([f"{model} b{batch} {mode}", precision] + [cell(b, role, low) for role in ROLES] +
                    [mib(t), x(t / t32), agreement(r, point)])
    head = (["config (model, batch, mode)", "precision"] + [x_.replace("_", " ") for x_ in ROLES] +
            ["total", "of fp32's", "planner, static, dynamic vs formula"])
    # Reports from before the low_copies pass have no such rows.
    copies = bool(r.all("precision_role_bytes", source="static_low_copies"))
    return (table(head, rows, ["---", "---"] + ["---:"] * 9 + ["---"]) +
            "\n\nBytes by role and dtype from the autocast formulas (experiments/memory/formulas_precision.cpp), "
            "naive (every value its own buffer). The last column compares them with the static planner's count, "
            "the static executor's allocations (both by role and dtype)" +
            (", the same with the low_copies pass in training (its weight copies persistent, in the parameter "
             "store)" if copies else "") +
            " and the dynamic executor's per-role peaks with nothing freed early.\n\n" + r.source_line())


def planned(r, point):
    model, batch, mode, precision = point
    a = r.one("precision_arena_bytes", model=model, batch=batch, mode=mode, precision=precision)
    d = r.one("precision_allocator_peak", model=model, batch=batch, mode=mode, precision=precision, free_early=True)
    return a["median"] + a["extra"]["external_B"], d["median"]


def tab_precision_memory_planned():
    r = report(STEM)
    rows = []
    for point in points(r):
        model, batch, mode, precision = point
        static, dynamic = planned(r, point)
        s32, d32 = planned(r, fp32_point(point))
        rows.append([f"{model} b{batch} {mode}", precision, mib(static), x(static / s32), mib(dynamic), x(dynamic / d32)])
    return (table(["config", "precision", "static: planned arena + outside", "of fp32's",
                   "dynamic: allocated peak, early frees", "of fp32's"], rows,
                  ["---", "---", "---:", "---:", "---:", "---:"]) +
            "\n\nWhat each executor really holds at its peak: the static plan's arena (liveness, in place) plus "
            "its parameters, momentum and inputs; the dynamic executor's caching allocator, steady state "
            "(iterations 2-3 of 3).\n\n" + r.source_line())


def points_of(model, mode):
    r = report(STEM)
    ps = [p for p in points(r) if p[0] == model and p[2] == mode]
    if not ps:
        raise Missing(f"{r.rel}: no {model} {mode} rows")
    return ps


def low_point(model, mode):
    for p in points_of(model, mode):
        if p[3] in ("bf16", "fp16"):
            return p
    raise Missing(f"{report(STEM).rel}: no bf16 or fp16 rows for {model} {mode}")


def ratio_total(model, mode):
    r, p = report(STEM), low_point(model, mode)
    return total(r, p) / total(r, fp32_point(p))


def ratio_planned(model, mode, which):
    r, p = report(STEM), low_point(model, mode)
    return planned(r, p)[which] / planned(r, fp32_point(p))[which]


def role_sum(model, mode, role, dtypes, fp32=False):
    r, p = report(STEM), low_point(model, mode)
    b = role_bytes(r, fp32_point(p) if fp32 else p)
    return sum(v for (ro, d), v in b.items() if ro == role and d in dtypes)


def acts_ratio(model):
    low = role_sum(model, "train_momentum", "activations", ("f32",) + LOW)
    return low / role_sum(model, "train_momentum", "activations", ("f32",), fp32=True)


def checked():
    r = report(STEM)
    ms = [m for m in r.all("role_agreement_worst_pct") if m["params"]["source"].startswith("precision_")]
    if not ms:
        raise Missing(f"{r.rel}: no role_agreement_worst_pct of a precision_ source")
    return ms


T, M = "transformer", "mlp"
VALUES = {
    "precision.t_batch": lambda: str(low_point(T, "train_momentum")[1]),
    "precision.mlp_batch": lambda: str(low_point(M, "train_momentum")[1]),
    "precision.t_train_total": lambda: x(ratio_total(T, "train_momentum")),
    "precision.mlp_train_total": lambda: x(ratio_total(M, "train_momentum")),
    "precision.t_inf_total": lambda: x(ratio_total(T, "inference")),
    "precision.t_acts": lambda: x(acts_ratio(T)),
    "precision.mlp_acts": lambda: x(acts_ratio(M)),
    "precision.t_static_planned": lambda: x(ratio_planned(T, "train_momentum", 0)),
    "precision.t_dynamic_peak": lambda: x(ratio_planned(T, "train_momentum", 1)),
    "precision.mlp_static_planned": lambda: x(ratio_planned(M, "train_momentum", 0)),
    "precision.mlp_params": lambda: mib(role_sum(M, "train_momentum", "parameters", ("f32",))),
    "precision.mlp_copies": lambda: mib(role_sum(M, "train_momentum", "weight_copies", LOW)),
    "precision.roles_checked": lambda: str(sum(int(m["params"]["roles_checked"]) for m in checked())),
    "precision.worst": lambda: f"{max(m['median'] for m in checked()):.2f}%",
}

TABLES = {"precision-memory-roles": tab_precision_memory_roles,
          "precision-memory-planned": tab_precision_memory_planned}
PLOTTERS = {}
