"""docs/train.md: the MLP batch sweep of tg-train (static vs dynamic, training and
inference) and its plot. The chapter's prose is hand-written around them."""
from . import common
from .common import report, t, table
from .plotting import save


def tab_train_mlp():
    r = report("train")
    cols = [("train", "static"), ("train", "static_plain"), ("train", "dynamic"), ("inference", "static"),
            ("inference", "dynamic")]
    rows = [[b] + [t(r.one("iteration", sweep="mlp_w256_d8", batch=b, mode=mo, executor=ex)["median"])
                   for mo, ex in cols] +
            [t(r.one("replay", sweep="mlp_w256_d8", batch=b, mode=mo, executor="static")["median"])
             for mo in ("train", "inference")] for b in (32, 128, 512, 1024, 2048, 4096)]
    return table(["batch", "train static", "train static, plain launches", "train dynamic", "inference static",
                  "inference dynamic", "train static, replay only", "inference static, replay only"], rows)


def plots_train():
    r = report("train")  # the width-4096 MLP is one point at batch 1024: it would join the width-256 line
    ms = [m for m in r.all("iteration") if m["params"].get("sweep") != "mlp_w4096_d4"]
    return save("tg-train", common.PR.fig_train("tg-train", ms))


TABLES = {"train-mlp": tab_train_mlp}
PLOTTERS = {"train": plots_train}
