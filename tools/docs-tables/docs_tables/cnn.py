"""docs/cnn.md: tg-train's CNN rows on a GPU (tg-train --models resnet,vgg and the ImageNet ones, saved as
docs/results/train_cnn.json): each model's training step and inference with both executors,
and which convolution path the CUDA backend took (its conv_cudnn option, recorded in the run)."""
from .common import ROOT, Missing, distinct_params, mib, optional_report, pct, report, smallest, t, table, x

STEM = "train_cnn"
LAYERS_STEM = "memory_vgg16"
LAYERS_COMMAND = "tg-memory --device 0 --models vgg16 --json docs/results/memory_vgg16.json"


def _one(r, name, p, executor, mode):
    return r.exact(name, dict(p, executor=executor, mode=mode))


def _configs(r, command):
    """The model configurations of r's iteration rows (executor and mode dropped); Missing if none."""
    configs = distinct_params(r.all("iteration"), ("executor", "mode"))
    if not configs:
        raise Missing(f"{r.rel}: no iteration rows ({command})")
    return configs


def _cell(m):
    return "n/a" if m is None else t(m["median"]) + (" (noisy)" if m.get("noisy") else "")


# tg-train --models' ImageNet networks (graph/models.h's resnet18_config, ...).
_IMAGENET = {"resnet18": "ResNet-18", "resnet50": "ResNet-50", "vgg16": "VGG-16"}


def _label(p):
    if p["model"] in _IMAGENET:
        return f"{_IMAGENET[p['model']]}, {p['image']}x{p['image']}"
    if p["model"] == "resnet":
        return f"ResNet-{6 * p['blocks'] + 2} (width {p['width']}), {p['image']}x{p['image']}"
    return f"VGG ({p['sweep']}), {p['image']}x{p['image']}"


def conv_path():
    """The CUDA backend's convolution path in the run: cuDNN or the direct kernels."""
    cuda = report(STEM).r.get("run", {}).get("options", {}).get("cuda", {})
    if "conv_cudnn" not in cuda:
        return "the direct kernels (the run predates the conv_cudnn option)"
    return "cuDNN (conv_cudnn on)" if cuda["conv_cudnn"] else "the direct kernels (conv_cudnn off)"


def tab_cnn_gpu():
    r = report(STEM)
    configs = _configs(r, "run tg-train --models resnet,vgg")
    rows = []
    for p in configs:
        for mode in ("train", "inference"):
            st, dy = _one(r, "iteration", p, "static", mode), _one(r, "iteration", p, "dynamic", mode)
            ratio = x(dy["median"] / st["median"]) if st and dy else "n/a"
            rows.append([_label(p), p["batch"], mode, _cell(_one(r, "replay", p, "static", mode)), _cell(st),
                         _cell(dy), ratio])
    return (table(["model", "batch", "mode", "static replay", "static step", "dynamic step", "dynamic / static"],
                  rows, ["---", "---:", "---", "---:", "---:", "---:", "---:"]) +
            f"\n\nConvolutions ran on {conv_path()}. " + r.source_line())


def _layer_rows(r, mode, in_place):
    return r.all("layer_bytes", mode=mode, in_place_relu=in_place)


def _worst(rows):
    """The largest |measured / predicted - 1| over every quantity of the rows."""
    worst = 0.0
    for m in rows:
        for k, v in m["extra"].items():
            if k.endswith("_predicted_B"):
                got, want = m["extra"][k.replace("_predicted_B", "_B")], v
                worst = max(worst, abs(got / want - 1) if want else (0.0 if got == 0 else 1.0))
    return worst


def tab_vgg16_layers():
    """tg-memory --models vgg16: the VGG-16 table layer by layer (training with momentum), the
    planner's bytes per image with and without in-place ReLU, and how far each layer's are from
    the formula; then each mode's totals and the dynamic executor's allocated peak."""
    try:
        r = report(LAYERS_STEM)
    except Missing:
        return f"No run is saved yet: `{LAYERS_COMMAND}` on a GPU writes it, then `python3 tools/docs-tables`."
    off, on = _layer_rows(r, "train_momentum", False), _layer_rows(r, "train_momentum", True)
    if not off or len(off) != len(on):
        raise Missing(f"{r.rel}: no layer_bytes rows of train_momentum with in-place ReLU off and on "
                      f"({LAYERS_COMMAND})")
    p0 = off[0]["params"]
    rows = []
    for a, b in zip(off, on):
        e, f = a["extra"], b["extra"]
        rows.append([f"`{a['params']['layer']}`", a["params"]["kind"], mib(e["output_per_image_B"]),
                     mib(e["parameters_B"]), mib(e["forward_per_image_B"]), mib(f["forward_per_image_B"]),
                     mib(e["saved_per_image_B"]), pct(_worst([a, b]), 2)])
    def total(ms, k):
        return sum(m["extra"][k] for m in ms)

    rows.append(["**all**", "", mib(total(off, "output_per_image_B")), mib(total(off, "parameters_B")),
                 mib(total(off, "forward_per_image_B")), mib(total(on, "forward_per_image_B")),
                 mib(total(off, "saved_per_image_B")), pct(_worst(off + on), 2)])
    head = table(["layer", "kind", "output / image", "parameters", "forward / image", "forward / image, in-place ReLU",
                  "saved / image", "planner vs formula, worst"], rows,
                 ["---", "---", "---:", "---:", "---:", "---:", "---:", "---:"])
    modes = []
    for mode in ("train_momentum", "inference"):
        for ip in (False, True):
            ms = _layer_rows(r, mode, ip)
            peak = r.one("layer_table_dynamic_peak", mode=mode, in_place_relu=ip)
            want = peak["extra"]["predicted_B"]
            modes.append([mode, "on" if ip else "off", mib(total(ms, "forward_per_image_B")),
                          mib(total(ms, "saved_per_image_B")), mib(peak["median"]), mib(want),
                          pct(abs(peak["median"] / want - 1), 2)])
    tail = table(["mode", "in-place ReLU", "forward / image", "saved / image", "dynamic peak, nothing freed early",
                  "formula", "off by"], modes, ["---", "---", "---:", "---:", "---:", "---:", "---:"])
    return (f"Batch {p0['batch']}, {p0['image']} x {p0['image']}, training with momentum:\n\n{head}\n\n"
            f"Totals per mode:\n\n{tail}\n\n" + r.source_line())


VS_TORCH = ("cnn224/train_resnet50", "cnn224/torch_resnet50")
# tg-train once more with the freedom cudnn.benchmark has (cnn-run.sh's second run:
# conv_benchmark=1, conv_deterministic=0, conv_workspace_mb=1024); optional.
VS_TORCH_FREE = "cnn224/train_resnet50_free"


def tab_cnn_vs_torch():
    """ResNet-50 at 224 x 224, fp32: twograph's executors beside PyTorch's (torchvision's network,
    cudnn.benchmark on) in the same device session (scripts/device/cnn-run.sh)."""
    mine, theirs = report(VS_TORCH[0]), report(VS_TORCH[1])
    free = optional_report(VS_TORCH_FREE)
    configs = _configs(mine, "tg-train --models resnet50")
    rows = []
    for p in configs:
        for mode in ("train", "inference"):
            st_replay = _one(mine, "replay", p, "static", mode)
            # Every pass, replayed on inputs already on the device, as PyTorch's graph replays.
            fused = mine.exact("pass_replay_host", dict(p, executor="static", mode=mode, passes="all"))
            free_fused = free.exact("pass_replay_host", dict(p, executor="static", mode=mode, passes="all")) if free else None
            ours = smallest(fused or st_replay, free_fused)
            dyn = _one(mine, "iteration", p, "dynamic", mode)
            nhwc = dict(p, memory_format="channels_last")  # torch_baseline.py's channels_last rows
            graph = _one(theirs, "replay", p, "torch_cuda_graph", mode)
            graph_cl = _one(theirs, "replay", nhwc, "torch_cuda_graph", mode)
            eager = _one(theirs, "iteration", p, "torch_eager_h2d", mode)
            resident = _one(theirs, "resident_step", p, "torch_compile", mode)  # where the run compiled
            fastest = smallest(graph, graph_cl, resident)
            ratio = x(fastest["median"] / ours["median"]) if fastest and ours else "n/a"
            peak = _one(theirs, "peak_bytes", p, "torch_cuda_graph", mode)
            plan = _one(mine, "static_plan_bytes", p, "static", mode)
            free_plan = _one(free, "static_plan_bytes", p, "static", mode) if free else None
            rows.append([_label(p), p["batch"], mode, _cell(st_replay), _cell(fused), _cell(free_fused), _cell(dyn),
                         _cell(graph), _cell(graph_cl), _cell(eager), _cell(resident), ratio,
                         mib(plan["median"]) if plan else "n/a",
                         mib(free_plan["median"]) if free_plan else "n/a", mib(peak["median"]) if peak else "n/a"])
    return (table(["model", "batch", "mode", "twograph static replay", "same, all passes",
                   "same, cudnn.benchmark's freedom", "twograph dynamic step", "PyTorch CUDA Graph replay",
                   "same, channels_last", "PyTorch eager step", "torch.compile step, inputs on the GPU",
                   "PyTorch fastest / twograph", "twograph static plan's bytes", "same, cudnn.benchmark's freedom", "PyTorch graph's peak allocated"],
                  rows, ["---", "---:", "---"] + ["---:"] * 12) +
            "\n\nfp32 with TF32 off on both sides. twograph's plain replay includes the batch's copy in (its "
            "graph's first node); its replay with all passes (tg-train's pass_replay_host row, n/a where the "
            "saved run has none) runs on inputs already on the GPU, as PyTorch's replays do, and is the one the "
            "ratio uses where it exists. cudnn.benchmark's freedom: the same with all passes, run with "
            "`--cuda-options conv_benchmark=1,conv_deterministic=0,conv_workspace_mb=1024` (algorithms timed "
            "at compile time, atomics admitted, up to 1 GiB of workspace a convolution), as PyTorch's rows "
            "choose theirs; the ratio takes twograph's faster run and PyTorch's fastest of its two CUDA-graph replays "
            "and torch.compile's step on inputs already on the GPU (n/a where the saved run did not compile). "
            "The plan's bytes are tg-train's "
            "static_plan_bytes (the arena, inputs, parameters and optimizer state; n/a where the saved run has "
            "no such row). Generated by `python3 tools/docs-tables` "
            f"from {mine.source()}{', ' + free.source() if free else ''} and {theirs.source()}.")


# scripts/device/call.sh cnn-bf16: tg-train in bf16 with every pass and channels_last under
# cudnn.benchmark's freedom, and PyTorch's forms under autocast (torch.compile included).
VS_TORCH_BF16 = ("cnn224/train_resnet50_bf16_free", "cnn224/torch_resnet50_bf16")


def tab_cnn_bf16_vs_torch():
    """ResNet-50 at 224 x 224 in bf16 (autocast on both sides): twograph's static replay with every
    pass and channels_last beside PyTorch's CUDA-graph replays (NCHW and channels_last) and its
    torch.compile step, in the same device session (scripts/device/call.sh cnn-bf16)."""
    mine, theirs = report(VS_TORCH_BF16[0]), report(VS_TORCH_BF16[1])
    configs = _configs(mine, "tg-train --models resnet50 --precision bf16")
    rows = []
    for p in configs:
        for mode in ("train", "inference"):
            plain = mine.exact("pass_replay_host", dict(p, executor="static", mode=mode, passes="none"))
            fused = mine.exact("pass_replay_host", dict(p, executor="static", mode=mode, passes="all,channels_last"))
            dyn = _one(mine, "iteration", p, "dynamic", mode)
            nhwc = dict(p, memory_format="channels_last")
            graph = _one(theirs, "replay", p, "torch_cuda_graph", mode)
            graph_cl = _one(theirs, "replay", nhwc, "torch_cuda_graph", mode)
            compiled = _one(theirs, "iteration", p, "torch_compile", mode)
            resident = _one(theirs, "resident_step", p, "torch_compile", mode)
            fastest = smallest(graph, graph_cl, resident)
            ratio = x(fastest["median"] / fused["median"]) if fastest and fused else "n/a"
            plan = _one(mine, "static_plan_bytes", p, "static", mode)
            peak = smallest(*(_one(theirs, "peak_bytes", p, e, mode) for e in ("torch_cuda_graph", "torch_compile")))
            rows.append([_label(p), p["batch"], mode, _cell(plain), _cell(fused), _cell(dyn), _cell(graph),
                         _cell(graph_cl), _cell(compiled), _cell(resident), ratio,
                         mib(plan["median"]) if plan else "n/a", mib(peak["median"]) if peak else "n/a"])
    return (table(["model", "batch", "mode", "twograph static replay, no passes", "same, all passes and channels_last",
                   "twograph dynamic step", "PyTorch CUDA Graph replay", "same, channels_last", "torch.compile step",
                   "same, inputs on the GPU", "PyTorch fastest / twograph", "twograph static plan's bytes",
                   "PyTorch's smaller peak allocated (graph, compiled)"],
                  rows, ["---", "---:", "---"] + ["---:"] * 10) +
            "\n\nbf16 autocast on both sides (fp32 master weights). twograph's replays run on inputs already on "
            "the GPU (tg-train's pass_replay_host rows), under cudnn.benchmark's freedom (`--cuda-options "
            "conv_benchmark=1,conv_deterministic=0,conv_workspace_mb=1024`); its dynamic step copies the batch in. "
            "PyTorch's fastest is the fastest of its two CUDA-graph replays and torch.compile's step on inputs "
            "already on the GPU. Generated by `python3 tools/docs-tables` "
            f"from {mine.source()} and {theirs.source()}.")


# scripts/device/cnn-speed.sh's reports: ResNet-50 under each set of convolution options.
SPEED_DIR = "cnn-speed"
SPEED_COMMAND = "bash scripts/device/cnn-speed.sh build/default (OUT=docs/results/cnn-speed)"


def tab_cnn_conv_options():
    """ResNet-50's static replay (train and inference) under each set of convolution options
    cnn-speed.sh ran, in one device session, and whether the two executors' loss curves agreed
    bit for bit (tg-train stops before timing when they must and do not)."""
    stems = sorted(f"{SPEED_DIR}/{p.stem}" for p in (ROOT / "docs" / "results" / SPEED_DIR).glob("train_*.json"))
    if not stems:
        raise Missing(f"no docs/results/{SPEED_DIR}/train_*.json: run `{SPEED_COMMAND}`")
    rows = []
    for stem in stems:
        r = report(stem)
        cuda = r.r.get("run", {}).get("options", {}).get("cuda", {})
        keys = ("conv_frontend", "conv_benchmark", "conv_deterministic", "conv_workspace_mb")
        for p in distinct_params(r.all("replay"), ("executor", "mode")):
            train = _one(r, "replay", p, "static", "train")
            inference = _one(r, "replay", p, "static", "inference")
            curve = _one(r, "loss_curve", p, "static", "train")
            bitwise = "n/a" if not curve else ("yes" if curve["extra"].get("bitwise_equal") == 1 else "no")
            rows.append([_label(p), p["batch"], "graph API" if cuda.get("conv_frontend") else "legacy",
                         "timed" if cuda.get("conv_benchmark") else "heuristic",
                         "yes" if cuda.get("conv_deterministic") else "no", cuda.get("conv_workspace_mb", "n/a"),
                         _cell(train), _cell(inference), bitwise])
    rows.sort(key=lambda row: (row[3], row[4], row[5] if isinstance(row[5], int) else 0, row[2]))
    first = report(stems[0])
    return (table(["model", "batch", "cuDNN API", "algorithm choice", "deterministic only", "workspace MiB",
                   "static replay, train", "static replay, inference", "static == dynamic bitwise"], rows,
                  ["---", "---:", "---", "---", "---", "---:", "---:", "---:", "---"]) +
            "\n\nfp32, TF32 off, no graph passes; each row one tg-train run with `--cuda-options` as listed. "
            f"Generated by `python3 tools/docs-tables` from the {len(stems)} reports in `docs/results/{SPEED_DIR}/` "
            f"({first.r['tool']['name']}, {first.r['gpus'][0]['name'] if first.r.get('gpus') else '?'}, "
            f"{first.r.get('run', {}).get('utc_time', '?')} and after).")


VALUES = {"cnn.gpu": lambda: report(STEM).r["gpus"][0]["name"], "cnn.conv_path": conv_path}
TABLES = {"cnn-gpu": tab_cnn_gpu, "cnn-vgg16-layers": tab_vgg16_layers, "cnn-vs-torch": tab_cnn_vs_torch,
          "cnn-bf16-vs-torch": tab_cnn_bf16_vs_torch, "cnn-conv-options": tab_cnn_conv_options}
PLOTTERS = {}
