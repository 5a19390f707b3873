"""docs/language-models.md: GPT-2 both ways (scripts/device/lm-run.sh saves its reports in
docs/results/lm/): tg-train --models gpt2's steps beside PyTorch's same model in the same
session, and tg-memory --models gpt2's bytes per role and by sequence length."""
from .common import Missing, distinct_params, mib, num, optional_report, report, smallest, sources_line, t, table, x

TRAIN = {"fp32": "lm/train_gpt2", "bf16": "lm/train_gpt2_bf16"}
# The loss curves: fp32 from scripts/device/call.sh lm-options-fp32 (tg-train without passes, in
# the session of the bf16 speed run) where it is saved, else from the fp32 speed run.
LOSS = {"fp32": ("lm/train_gpt2_fp32_no_passes", "lm/train_gpt2"), "bf16": ("lm/train_gpt2_bf16",)}
# tg-train once more in a precision with the forms PyTorch's fastest step uses (scripts/device/
# call.sh lm-speed-free: attention_deterministic=0, gemm_bias_grad_sums=1); optional.
FREE = {"bf16": "lm/train_gpt2_bf16_free"}
FREE_OPTIONS = "attention_deterministic=0,gemm_bias_grad_sums=1"
# PyTorch's runs: one report, or one per precision where a session ran them as separate calls.
TORCH = ("lm/torch_gpt2", "lm/torch_gpt2_bf16")
MEMORY = "lm/memory_gpt2"
COMMAND = "bash scripts/device/lm-run.sh build/default (OUT=docs/results/lm)"

# The row's params, less what names the executor, the mode and the precision.
_DROP = ("executor", "mode", "precision")
# PyTorch's ways, in the order the table shows them: the host-fed eager loop (pairs with the
# dynamic executor; on the CPU only torch_eager exists), the captured step, Inductor.
_TORCH = (("torch_eager_h2d", "torch_eager"), ("torch_cuda_graph",), ("torch_compile",))


def _cell(m):
    return "n/a" if m is None else t(m["median"]) + (" (noisy)" if m.get("noisy") else "")


def _torch_reports():
    return [(stem, r) for stem in TORCH if (r := optional_report(stem))]


def _torch_row(name, want):
    for _, r in _torch_reports():
        m = r.exact(name, want)
        if m:
            return m
    return None


def _torch(p, executors, precision, mode):
    for e in executors:
        want = dict(p, executor=e, mode=mode)
        if precision != "fp32":
            want["precision"] = precision
        m = _torch_row("iteration", want)
        if m:
            return m
    return None


def _torch_compiled_resident(p, precision, mode):
    """torch.compile's step on tokens already on the GPU (resident_step, in reports that have it)."""
    want = dict(p, executor="torch_compile", mode=mode)
    if precision != "fp32":
        want["precision"] = precision
    return _torch_row("resident_step", want)


def _torch_replay(p, precision, mode):
    want = dict(p, executor="torch_cuda_graph", mode=mode)
    if precision != "fp32":
        want["precision"] = precision
    return _torch_row("replay", want)


def _train_reports():
    """(precision, report) of each saved tg-train run, and their stems; Missing when there is none."""
    found = [(precision, stem, r) for precision, stem in TRAIN.items() if (r := optional_report(stem))]
    if not found:
        raise Missing(f"no lm/train_gpt2 report: run `{COMMAND}`")
    return found


def tab_lm_step():
    """Each precision and mode: twograph's static replay (without passes and with all of them)
    and step and its dynamic step, then PyTorch's eager, CUDA-graph and compiled steps of the
    same model, weights and tokens. The ratio compares like with like and shows the less
    favourable of: PyTorch's CUDA-graph replay against the static replay on resident inputs
    (with all passes, tg-train's pass_replay_host row, where the run measured passes), and each
    PyTorch step (eager, graph, compiled: inputs copied in, loss or logits read back) against
    the static step."""
    rows, stems = [], []
    for precision, stem, r in _train_reports():
        stems.append(stem)
        free = optional_report(FREE[precision]) if precision in FREE else None
        if free:
            stems.append(FREE[precision])
        for p in distinct_params(r.all("iteration", model="gpt2"), _DROP):
            for mode in ("train", "inference"):
                tagged = dict(p, precision=precision) if precision != "fp32" else p
                st = r.exact("iteration", dict(tagged, executor="static", mode=mode))
                dy = r.exact("iteration", dict(tagged, executor="dynamic", mode=mode))
                rp = r.exact("replay", dict(tagged, executor="static", mode=mode))
                fused = r.exact("pass_replay_host", dict(tagged, executor="static", mode=mode, passes="all"))
                free_fused = (free.exact("pass_replay_host", dict(tagged, executor="static", mode=mode, passes="all"))
                              if free else None)
                tok = f"{num(st['extra']['tokens/s'] / 1e3)}k" if st and "tokens/s" in st["extra"] else "n/a"
                torch = [_torch(p, e, precision, mode) for e in _TORCH]
                torch_replay = _torch_replay(p, precision, mode)
                # Like against like: PyTorch's replay against the static replay (all passes where
                # measured), its steps against the static step; the less favourable ratio is shown.
                ours_replay = fused or rp
                ratios = [m["median"] / st["median"] for m in torch if m and st]
                if torch_replay and ours_replay:
                    ratios.append(torch_replay["median"] / ours_replay["median"])
                vs = x(min(ratios)) if ratios else "n/a"
                # torch.compile's training step against twograph's faster replay with all passes: the
                # step adds only the tokens' copy in and the loss read back; an inference step reads
                # the logits back, which no replay row pays.
                best = smallest(fused, free_fused)
                # torch.compile's faster step: its iteration, or on tokens already on the GPU, as the replays run.
                step = smallest(torch[2], _torch_compiled_resident(p, precision, mode))
                compiled = x(step["median"] / best["median"]) if step and best and mode == "train" else "n/a"
                rows.append([p["sweep"], f"{p['batch']} x {p['seq']}", precision, mode, _cell(rp), _cell(fused),
                             _cell(free_fused), _cell(st), tok, _cell(dy)] + [_cell(m) for m in torch] +
                            [vs, compiled])
    stems += [stem for stem, _ in _torch_reports()]
    head = ["model", "batch x seq", "precision", "mode", "static replay", "static replay, all passes",
            "same, atomics allowed", "static step", "static tokens/s", "dynamic step", "PyTorch eager",
            "PyTorch CUDA graph", "torch.compile", "fastest PyTorch / static", "torch.compile / all passes"]
    return (table(head, rows, ["---"] * 4 + ["---:"] * 11) + "\n\n"
            f"Atomics allowed: the same run once more with `--cuda-options {FREE_OPTIONS}` (cuDNN's attention "
            "backward that adds dq with atomics, as PyTorch's runs, and the bias gradients as column sums after "
            "the GEMM); n/a where no such run is saved. The last column is torch.compile's training step over the "
            "faster of twograph's two replays with all passes (the step adds to the replay only the tokens' copy "
            "in and the loss read back; an inference step reads the logits back, so it has none); torch.compile's "
            "step is the faster of its iteration and, where the run timed it, its step on tokens already on the "
            "GPU (resident_step). "
            + sources_line(*stems))


def _roles(r, mode, batch):
    out = {}
    for m in r.all("role_bytes", model="gpt2", mode=mode, batch=batch):
        out.setdefault(m["params"]["role"], {})[m["params"]["source"]] = m["median"]
    for m in r.all("role_bytes_measured", model="gpt2", mode=mode, batch=batch):
        out.setdefault(m["params"]["role"], {})[m["params"]["source"]] = m["median"]
    return out


ROLES = ("parameters", "gradients", "momentum", "activations", "workspace", "inputs")


def tab_lm_memory():
    """tg-memory --models gpt2 at its main batch: each role's bytes by the closed formula, the
    planner's count and the bytes both executors allocated (nothing freed early)."""
    r = report(MEMORY)
    seq_rows = r.all("seq_role_bytes")
    if not seq_rows:
        raise Missing(f"{r.rel}: no seq_role_bytes rows (run tg-memory --models gpt2)")
    batch = seq_rows[0]["params"]["batch"]
    rows = []
    for mode in ("train_momentum", "inference"):
        roles = _roles(r, mode, batch)
        for role in ROLES:
            s = roles.get(role, {})
            if not any(s.values()):
                continue
            cells = [mib(s[k]) if k in s else "n/a" for k in ("predicted", "planner", "dynamic_keep_all", "static")]
            rows.append([mode, role] + cells)
    return (f"GPT-2 at batch {batch}.\n\n" +
            table(["mode", "role", "formula", "planner", "dynamic (keep all)", "static"], rows,
                  ["---", "---"] + ["---:"] * 4) + "\n\n" + r.source_line())


def tab_lm_seq():
    """Activations and workspace of a training step by sequence length (planner against the
    formula), and the S x S bytes an unfused attention would hold on top."""
    r = report(MEMORY)
    seqs = sorted({m["params"]["seq"] for m in r.all("seq_role_bytes")})
    if not seqs:
        raise Missing(f"{r.rel}: no seq_role_bytes rows (run tg-memory --models gpt2)")
    rows = []
    for s in seqs:
        act = r.one("seq_role_bytes", seq=s, role="activations")
        ws = r.one("seq_role_bytes", seq=s, role="workspace")
        un = r.one("unfused_attention_scores_bytes", seq=s)
        rows.append([s, mib(act["median"]), mib(act["extra"]["predicted_B"]), mib(ws["median"]),
                     mib(ws["extra"]["predicted_B"]), mib(un["median"]),
                     x(un["median"] / (act["median"] + ws["median"]))])
    return (table(["seq", "activations", "formula", "workspace", "formula", "unfused attention's S x S bytes",
                   "S x S / (activations + workspace)"], rows, ["---:"] * 7) + "\n\n" + r.source_line())


def tab_lm_loss():
    """The loss curve tg-train checks before it times anything: the same batches through both
    executors from the same initial weights, the losses compared bit for bit. Its data: graph/
    corpus.h's synthetic text (the row's corpus_tokens extra), or random tokens in a run made
    before the corpus."""
    rows, stems = [], []
    found = []
    for precision, choices in LOSS.items():
        first = next(((c, r) for c in choices for r in [optional_report(c)] if r), None)
        if first:
            found.append((precision, *first))
    if not found:
        raise Missing(f"no lm/train_gpt2 report: run `{COMMAND}`")
    for precision, stem, r in found:
        stems.append(stem)
        for m in r.all("loss_curve", model="gpt2", executor="static"):
            p = m["params"]
            if "passes" in p:  # the pass sweep's curves (fused kernels: within a tolerance, not bitwise)
                continue
            curve = m.get("samples") or []
            if not curve:
                continue
            tokens = m["extra"].get("corpus_tokens")
            data = f"synthetic text, {int(tokens)} tokens" if tokens else "random tokens"
            equal = "bitwise" if m["extra"].get("bitwise_equal") else "differ"
            rows.append([p["sweep"], f"{p['batch']} x {p['seq']}", precision, data, len(curve), f"{curve[0]:.4f}",
                         f"{curve[-1]:.4f}", f"{min(curve):.4f}", equal])
    return (table(["model", "batch x seq", "precision", "data", "steps", "first loss", "last loss", "lowest loss",
                   "static vs dynamic"], rows, ["---"] * 4 + ["---:"] * 4 + ["---"]) + "\n\n" + sources_line(*stems))


def _device():
    for stem in (*TRAIN.values(), MEMORY):
        try:
            r = report(stem).r
        except Missing:
            continue
        gpu = (r.get("gpus") or [{}])[0]
        return gpu.get("name") or r.get("device", {}).get("name", "?")
    raise Missing(f"no lm report: run `{COMMAND}`")


TABLES = {"lm-step": tab_lm_step, "lm-loss": tab_lm_loss, "lm-memory": tab_lm_memory, "lm-seq": tab_lm_seq}
VALUES = {"lm.device": _device}
PLOTTERS = {}
