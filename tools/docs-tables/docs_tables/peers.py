"""docs/bring-your-own-model.md: PyTorch side by side with twograph, from one
machine's session (scripts/run-peers.sh, saved as docs/results/peers/):
tg-train's and tg-launch's workloads in torch_baseline.json against train.json and
launch.json, and the PyTorch-exported models run by tg-graph bench (bench_*.json)
against tg-train's built-in ones. Rows follow the reports: whatever configurations
the session measured are the table's rows."""
from .common import Missing, distinct_params, num, report, t, table

PEERS = "peers/"
TORCH = ("torch_eager", "torch_eager_h2d", "torch_cuda_graph", "torch_compile")
TORCH_NAMES = {"torch_eager": "PyTorch eager", "torch_eager_h2d": "eager, inputs from the host",
               "torch_cuda_graph": "CUDA Graph", "torch_compile": "torch.compile"}


def _label(p):
    if p["model"] == "mlp":
        return f"MLP w{p['width']} d{p['depth']}, batch {p['batch']}"
    return f"transformer d{p['d_model']} s{p['seq']} h{p['heads']}, batch {p['batch']}"


def _median(r, name, params, executor, mode=None):
    want = dict(params, executor=executor, **({"mode": mode} if mode else {}))
    found = [m for m in r.all(name) if m["params"] == want]
    return found[0] if found else None


def _cell(m, executor=None):
    if m is None:
        return "n/a"
    s = t(m["median"]) + (" (noisy)" if m.get("noisy") else "")
    compile_ms = m["extra"].get("compile_ms")
    if executor == "torch_compile" and compile_ms is not None:
        s += f", compile {t(compile_ms / 1e3)}"
    return s


def _configs(torch):
    out = distinct_params(torch.all("iteration"), ("executor", "mode"))
    if not out:
        raise Missing(f"{torch.rel}: no iteration measurements (was --workloads train run?)")
    return out


def _mode_table(mode):
    torch, tg = report(PEERS + "torch_baseline"), report(PEERS + "train")
    rows = []
    for p in _configs(torch):
        rows.append([_label(p), _cell(_median(tg, "iteration", p, "static", mode)),
                     _cell(_median(tg, "iteration", p, "dynamic", mode))] +
                    [_cell(_median(torch, "iteration", p, e, mode), e) for e in TORCH])
    return table(["configuration", "twograph static", "twograph dynamic"] + [TORCH_NAMES[e] for e in TORCH], rows)


def tab_peers_train():
    return _mode_table("train")


def tab_peers_inference():
    return _mode_table("inference")


def tab_peers_loss():
    """The loss curves of both frameworks from the same weights and batches."""
    torch, tg = report(PEERS + "torch_baseline"), report(PEERS + "train")
    rows = []
    for p in _configs(torch):
        mine = _median(tg, "loss_curve", p, "dynamic", "train")
        if mine is None:
            continue
        cells = []
        for e in TORCH:
            theirs = _median(torch, "loss_curve", p, e, "train")
            cells.append("n/a" if theirs is None else
                         f"{max(abs(a - b) / abs(a) for a, b in zip(mine['samples'], theirs['samples'])):.1e}")
        rows.append([_label(p), len(mine["samples"]), num(mine["samples"][0], 4), num(mine["samples"][-1], 4)] + cells)
    if not rows:
        raise Missing(f"{tg.rel}: no loss_curve measurements")
    return table(["configuration", "steps", "twograph first loss", "last loss"] +
                 [f"max relative difference, {TORCH_NAMES[e]}" for e in TORCH], rows)


def tab_peers_launch():
    torch, tg = report(PEERS + "torch_baseline"), report(PEERS + "launch")
    ns = sorted({m["params"]["n_ops"] for m in torch.all("dynamic_iteration")})
    if not ns:
        raise Missing(f"{torch.rel}: no dynamic_iteration measurements (was --workloads launch run?)")

    def per_op(r, name, n, **p):
        found = [m for m in r.all(name, n_ops=n, **p)]
        return "n/a" if not found else f"{num(found[0]['median'] / n * 1e6)} us"

    rows = []
    for n in ns:
        rows.append([n, per_op(tg, "dynamic_iteration", n, executor="dynamic", allocator="caching"),
                     per_op(tg, "static_iteration", n, executor="static", launch="cuda_graph"),
                     per_op(tg, "static_replay", n, executor="static", launch="cuda_graph"),
                     per_op(torch, "dynamic_iteration", n, executor="torch_eager"),
                     per_op(torch, "dynamic_iteration", n, executor="torch_eager_h2d"),
                     per_op(torch, "static_iteration", n, executor="torch_cuda_graph"),
                     per_op(torch, "static_replay", n, executor="torch_cuda_graph"),
                     per_op(torch, "static_iteration", n, executor="torch_compile")])
    return table(["ops in the chain", "twograph dynamic", "twograph static", "static, replay only", "PyTorch eager",
                  "eager, input from the host", "CUDA Graph", "CUDA Graph, replay only", "torch.compile"], rows)


def tab_peers_bench():
    """tg-train's built-in models against the same models exported by PyTorch and imported."""
    tg = report(PEERS + "train")
    rows = []
    for stem in ("bench_mlp", "bench_transformer"):
        b = report(PEERS + stem)
        for m in b.all("iteration", executor="static", mode="train"):
            p = {k: v for k, v in m["params"].items() if k not in ("executor", "mode")}
            cells = []
            for executor, mode in (("static", "train"), ("dynamic", "train"), ("static", "inference"),
                                   ("dynamic", "inference")):
                built, imported = _median(tg, "iteration", p, executor, mode), _median(b, "iteration", p, executor, mode)
                cells.append(f"{_cell(built)} / {_cell(imported)}")
            rows.append([_label(p)] + cells)
    if not rows:
        raise Missing("docs/results/peers/bench_*.json: no training iterations")
    return table(["configuration (built-in / imported from ONNX)", "train static", "train dynamic",
                  "inference static", "inference dynamic"], rows)


def source_peers():
    return report(PEERS + "torch_baseline").source_line().replace("Generated by", "Tables generated by")


TABLES = {"peers-train": tab_peers_train, "peers-inference": tab_peers_inference, "peers-loss": tab_peers_loss,
          "peers-launch": tab_peers_launch, "peers-bench": tab_peers_bench, "peers-source": source_peers}
PLOTTERS = {}
