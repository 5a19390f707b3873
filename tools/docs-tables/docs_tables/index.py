"""docs/README.md: the index of the saved reports (which run each chapter's numbers come
from). The reading order's figures are the chapters' own VALUES."""
from . import common
from .common import Missing, table

STEMS = ("launch", "transfer", "memory", "matmul", "kernels", "shapes", "train", "pipeline", "train_passes",
         "kernels_fusion", "launch_passes", "memory_precision_cpu", "memory_vgg16", "shapes_cnn")


def tab_results_index():
    rows = []
    for stem in STEMS:
        try:
            r = common.report(stem)
        except Missing:
            rows.append([f"`results/{stem}.json`", "-", "missing: run the experiment and save its report here", ""])
            continue
        run, tool = r.r.get("run", {}), r.r["tool"]
        gpu = (r.r.get("gpus") or [{}])[0].get("name", r.r.get("device", {}).get("name", "?"))
        rows.append([f"[`results/{stem}.json`](results/{stem}.json)", tool["name"],
                     f"{'quick' if run.get('quick') else 'full'} mode on {gpu}", run.get("utc_time", "?")])
    return table(["report", "experiment", "run", "started (UTC)"], rows) + (
        "\n\nEach report also records its command line, the source revision it was built from, the machine "
        "and the library versions (docs/report-format.md).")


TABLES = {"results-index": tab_results_index}
PLOTTERS = {}
