"""docs/transfer.md: the copy and allocation table of tg-transfer, and its plots
(plot_report's standard figures). The copy/alloc cells are shared with readme.py."""
from . import common
from .common import num, report, size_name, t, table

SIZES = (1024, 2**20, 2**29)
COPY_ROWS = [("H2D pageable", "h2d", "pageable"), ("H2D pinned", "h2d", "pinned"),
             ("D2H pageable", "d2h", "pageable"), ("D2H pinned", "d2h", "pinned")]


def copy_cell(r, size, direction, memory, mode="sync"):
    m = r.one("copy", size_bytes=size, direction=direction, memory=memory, mode=mode)
    rate = m["extra"].get("GB/s_rw" if direction == "d2d" else "GB/s")
    return t(m["median"]) + (f" ({num(rate)} GB/s)" if size >= 2**20 and rate else "")


def alloc_cell(r, size, apis):
    return " / ".join(t(r.one("alloc", size_bytes=size, api=a)["median"]) for a in apis)


def tab_transfer_classic():
    r = report("transfer")
    rows = [[label] + [copy_cell(r, s, d, mem) for s in SIZES] for label, d, mem in COPY_ROWS]
    rows.append(["D2D (async, read+write)"] + [copy_cell(r, s, "d2d", "device", "async") for s in SIZES])
    for label, apis in (("cudaMalloc / cudaFree", ("cudaMalloc", "cudaFree")),
                        ("cudaMallocHost / cudaFreeHost", ("cudaMallocHost", "cudaFreeHost")),
                        ("malloc / first touch / free (host)", ("malloc", "first_touch", "free"))):
        rows.append([label] + [alloc_cell(r, s, apis) for s in SIZES])
    return table([""] + [size_name(s) for s in SIZES], rows)


def plots_transfer():
    common.PR.plot(str(report("transfer").path), str(common.PLOTS))  # prints what it wrote
    return []


TABLES = {"transfer-classic": tab_transfer_classic}
PLOTTERS = {"transfer": plots_transfer}
