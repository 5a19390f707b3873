"""docs/cnn.md: tg-train's CNN rows on a GPU (tg-train --models resnet,vgg and the ImageNet ones, saved as
docs/results/train_cnn.json): each model's training step and inference with both executors,
and which convolution path the CUDA backend took (its conv_cudnn option, recorded in the run)."""
from .common import Missing, distinct_params, report, t, table, x

STEM = "train_cnn"


def _one(r, name, p, executor, mode):
    want = dict(p, executor=executor, mode=mode)
    found = [m for m in r.all(name) if m["params"] == want]
    return found[0] if found else None


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
    configs = distinct_params(r.all("iteration"), ("executor", "mode"))
    if not configs:
        raise Missing(f"{r.rel}: no iteration rows (run tg-train --models resnet,vgg)")
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


VALUES = {"cnn.gpu": lambda: report(STEM).r["gpus"][0]["name"], "cnn.conv_path": conv_path}
TABLES = {"cnn-gpu": tab_cnn_gpu}
PLOTTERS = {}
