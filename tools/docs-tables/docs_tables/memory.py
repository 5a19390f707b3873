"""docs/memory.md, what the formulas and the static planner predict: bytes by role, the
naive vs planned arena, training vs inference, the device-level checks of those
predictions, and the chapter's plots. memory_measured.py has the per-role measurements."""
import math

from . import common
from .common import mib, num, report, table
from .plotting import grouped_bars, save

ROLES = ("parameters", "gradients", "momentum", "activations", "workspace", "inputs")


def memory_configs(r):
    seen = []
    for m in r.all("role_bytes", source="predicted"):
        k = (m["params"]["model"], m["params"]["batch"], m["params"]["mode"])
        if k not in seen:
            seen.append(k)
    return seen


def memory_roles(r, model, batch, mode):
    """{role: (predicted B, planner B)}; a role absent from both (inference gradients) is left out."""
    out = {}
    for role in ROLES:
        p = r.all("role_bytes", model=model, batch=batch, mode=mode, role=role, source="predicted")
        q = r.all("role_bytes", model=model, batch=batch, mode=mode, role=role, source="planner")
        if p or q:
            out[role] = (p[0]["median"] if p else 0.0, q[0]["median"] if q else 0.0)
    return out


def worst_role_error(roles):
    errs = [(abs(q / p - 1) if p else math.inf, role) for role, (p, q) in roles.items()]
    return max(errs)


def tab_memory_roles():
    r = report("memory")
    rows = []
    for model, batch, mode in memory_configs(r):
        roles = memory_roles(r, model, batch, mode)
        err, where = worst_role_error(roles)
        exact = all(p == q for p, q in roles.values())
        rows.append([f"{model} b{batch} {mode}"] + [mib(roles[x][0]) if x in roles else "-" for x in ROLES] +
                    [mib(sum(p for p, _ in roles.values())),
                     "equal to the byte" if exact else f"{100 * err:.2f}% ({where})"])
    head = ["config (model, batch, mode)"] + list(ROLES) + ["total", "planner vs formula, worst role"]
    return (table(head, rows, ["---"] + ["---:"] * 7 + ["---"]) + "\n\nBytes predicted by the closed formulas "
            "(experiments/memory/formulas.cpp); the last column compares them, role by role, with the bytes the "
            "static planner counts in the graph (naive plan: the sum of the values of that role).\n\n" + r.source_line())


def tab_memory_device():
    r = report("memory")
    rows = []
    for m in r.all("dynamic_peak_keep_all") + r.all("meminfo_delta"):
        p = m["params"]
        what = ("dynamic executor, caching allocator, nothing freed early: allocated peak"
                if m["name"] == "dynamic_peak_keep_all" else "`cudaMemGetInfo` free-memory drop: compile + one step "
                                                             "of a naive static plan")
        pred = m["extra"]["predicted_B"]
        rows.append([f"{p['model']} b{p['batch']} {p.get('mode', 'train_momentum')}", what, f"{int(pred):,} B",
                     f"{int(m['median']):,} B", f"{100 * (m['median'] / pred - 1):+.2f}%"])
    for m in r.all("static_arena_alloc"):
        p = m["params"]
        x = m["extra"]
        rows.append([f"{p['model']} b{p['batch']} {p['mode']}", f"static {p['plan']} plan: the arena's device "
                     "allocation vs the planner's arena_bytes", f"{int(x['planner_B']):,} B", f"{int(m['median']):,} B",
                     f"{100 * (x['measured/planner'] - 1):+.2f}%"])
    for m in r.all("arena_bytes", plan="naive", mode="train_momentum"):
        p = m["params"]
        roles = memory_roles(r, p["model"], p["batch"], "train_momentum")
        pred = sum(q for q, _ in roles.values())
        got = m["median"] + m["extra"]["external_B"]
        rows.append([f"{p['model']} b{p['batch']} train_momentum", "static naive plan: arena + external buffers",
                     f"{int(pred):,} B", f"{int(got):,} B", f"{100 * (got / pred - 1):+.2f}%"])
    return (table(["config", "measured as", "predicted (formula or planner)", "measured", "difference"], rows,
                  ["---", "---", "---:", "---:", "---:"]) + "\n\n" + r.source_line())


def tab_memory_arena():
    r = report("memory")
    rows = []
    for m in r.all("arena_bytes", plan="planned"):
        p = m["params"]
        naive = r.one("arena_bytes", plan="naive", model=p["model"], batch=p["batch"], mode=p["mode"])["median"]
        lb = r.one("arena_lower_bound", model=p["model"], batch=p["batch"], mode=p["mode"])["median"]
        rows.append([f"{p['model']} b{p['batch']} {p['mode']}", mib(naive), mib(m["median"]), mib(lb),
                     f"{num(m['median'] / lb, 3)}", f"{num(naive / m['median'])}x", mib(m["extra"]["external_B"])])
    return (table(["config", "naive arena", "planned arena", "lower bound", "planned / bound", "naive / planned",
                   "outside the arena"], rows, ["---"] + ["---:"] * 6) + "\n\n" + r.source_line())


def tab_memory_modes():
    r = report("memory")
    confs = memory_configs(r)
    rows = []
    for model, batch, mode in confs:
        if sum(c[:2] == (model, batch) for c in confs) < 2:
            continue  # this batch was measured in one mode only
        roles = memory_roles(r, model, batch, mode)
        planned = r.all("arena_bytes", model=model, batch=batch, mode=mode, plan="planned")
        rows.append([f"{model} b{batch}", mode, mib(sum(p for p, _ in roles.values())),
                     mib(sum(roles.get(x, (0, 0))[0] for x in ("parameters", "gradients", "momentum"))),
                     mib(roles.get("activations", (0, 0))[0]),
                     mib(planned[0]["median"] + planned[0]["extra"]["external_B"]) if planned else "not measured"])
    return (table(["config", "mode", "all values (naive)", "params + grads + momentum", "saved activations",
                   "planned: arena + outside"], rows, ["---", "---"] + ["---:"] * 4) + "\n\n" + r.source_line())


def plots_memory():
    r = report("memory")
    ms = []
    for m in r.all("role_bytes", source="planner"):
        m = dict(m, params=dict(m["params"]))
        m["params"]["config"] = m["params"]["config"].replace(" planner", "")
        ms.append(m)
    figs = common.PR.fig_memory("tg-memory", ms)  # predicted == planner to the byte: one bar per config
    confs = [(m["params"]["model"], m["params"]["batch"], m["params"]["mode"]) for m in r.all("arena_bytes", plan="planned")]
    labels = [f"{a} b{b} {c}" for a, b, c in confs]

    def arena(label, s):
        a, b, c = confs[labels.index(label)]
        if s == "lower bound":
            v = r.one("arena_lower_bound", model=a, batch=b, mode=c)["median"]
        else:
            v = r.one("arena_bytes", model=a, batch=b, mode=c, plan=s)["median"]
        return (v / 2**20,) * 3
    figs += grouped_bars("tg-memory", "arena: naive vs planned vs lower bound", labels, ["naive", "planned", "lower bound"],
                         arena, "MiB (arena only: gradients, activations, workspace)", "arena")
    return save("tg-memory", figs)


TABLES = {"memory-roles": tab_memory_roles, "memory-device": tab_memory_device, "memory-arena": tab_memory_arena,
          "memory-modes": tab_memory_modes}
PLOTTERS = {"memory": plots_memory}
