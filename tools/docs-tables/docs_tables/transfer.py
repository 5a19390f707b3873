"""docs/transfer.md: the copy and allocation table of tg-transfer, the staged copy's
chunk sweep, the cold-start rows, its plots (plot_report's standard figures) and the
values of the prose. The copy/alloc cells are shared with readme.py."""
from . import common
from .common import Missing, num, pct, report, size_name, t, table, x

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


# ---- the chunk sweep and the cold-start rows -------------------------------------------

def staged(r, size, direction, chunk=None):
    ms = r.all("copy", size_bytes=size, direction=direction, mode="staged")
    if chunk is None:  # the default chunk: the one measured at every size
        counts = {}
        for m in r.all("copy", direction=direction, mode="staged"):
            counts[m["params"]["chunk_bytes"]] = counts.get(m["params"]["chunk_bytes"], 0) + 1
        chunk = max(counts, key=counts.get)
    found = [m for m in ms if m["params"]["chunk_bytes"] == chunk]
    if len(found) != 1:
        raise Missing(f"{r.rel}: no staged copy {direction} size_bytes={size} chunk_bytes={chunk}")
    return found[0]


def tab_transfer_chunks():
    r = report("transfer")
    chunks = sorted({m["params"]["chunk_bytes"] for m in r.all("copy", size_bytes=2**29, mode="staged")})
    rows = [[size_name(c)] + [f"{t(m['median'])} ({num(m['extra']['GB/s'])} GB/s, {x(m['extra']['speedup_vs_pageable'])})"
                              for m in (staged(r, 2**29, d, c) for d in ("h2d", "d2h"))] for c in chunks]
    return (table(["chunk", "H2D: time (rate, vs pageable cudaMemcpy)", "D2H"], rows, ["---:", "---:", "---:"]) +
            f"\n\n512 MiB from pageable memory through two pinned chunks, "
            f"{staged(r, 2**29, 'h2d')['params']['copy_threads']} host copy threads.\n\n" + r.source_line())


def tab_transfer_cold_start():
    from .launch import cold_table  # one table format for both experiments' cold-start rows
    return cold_table(["transfer"])


# ---- values of the prose ---------------------------------------------------------------

def copy_m(size, direction, memory, mode="sync"):
    return report("transfer").one("copy", size_bytes=size, direction=direction, memory=memory, mode=mode)


def gbs(size, direction, memory, mode="sync"):
    return copy_m(size, direction, memory, mode)["extra"]["GB/s"]


def memcpy_m(size, threads):
    return report("transfer").one("copy", size_bytes=size, direction="h2h", mode="memcpy", copy_threads=threads)


def alloc_m(size, api):
    return report("transfer").one("alloc", size_bytes=size, api=api)


def span(values, fmt):
    lo, hi = min(values), max(values)
    return fmt(lo) if fmt(lo) == fmt(hi) else f"{fmt(lo)} to {fmt(hi)}"


def gpu():
    return common.gpu_of("transfer")


def pinned_big():
    """Pinned sync copies from 64 MiB up, both directions."""
    return [m["extra"]["GB/s"] for m in report("transfer").all("copy", memory="pinned", mode="sync")
            if m["params"]["size_bytes"] >= 2**26]


SYNC = [(d, mem) for d in ("h2d", "d2h") for mem in ("pageable", "pinned")]

VALUES = {
    "transfer.pcie_theory": lambda: f"{num(common.PR.pcie_GBps(gpu()), 0)} GB/s",
    "transfer.hbm_theory": lambda: f"{num(common.PR.hbm_GBps(gpu()), 0)} GB/s",
    "transfer.hbm_over_pcie": lambda: x(common.PR.hbm_GBps(gpu()) / common.PR.pcie_GBps(gpu())),
    "transfer.pinned_big": lambda: span(pinned_big(), lambda v: f"{num(v)} GB/s"),
    "transfer.pinned_big_pct": lambda: span([v / common.PR.pcie_GBps(gpu()) for v in pinned_big()], pct),
    "transfer.small_sync": lambda: span([copy_m(1024, d, mem)["median"] for d, mem in SYNC], t),
    "transfer.small_async": lambda: span([copy_m(1024, d, mem, "async")["median"] for d, mem in SYNC], t),
    "transfer.small_gbs": lambda: f"{num(gbs(1024, 'h2d', 'pinned'))} GB/s",
    "transfer.half_rate_kib": lambda: f"{num(copy_m(1024, 'h2d', 'pinned')['median'] * gbs(2**29, 'h2d', 'pinned') * 1e9 / 1024, 0)} KiB",
    "transfer.pageable_h2d": lambda: f"{num(gbs(2**29, 'h2d', 'pageable'))} GB/s",
    "transfer.pageable_d2h": lambda: f"{num(gbs(2**29, 'd2h', 'pageable'))} GB/s",
    "transfer.pinned_h2d": lambda: f"{num(gbs(2**29, 'h2d', 'pinned'))} GB/s",
    "transfer.pinned_vs_pageable_1m": lambda: span([gbs(2**20, d, "pinned") / gbs(2**20, d, "pageable")
                                                    for d in ("h2d", "d2h")], x),
    "transfer.pinned_vs_pageable_512m": lambda: span([gbs(2**29, d, "pinned") / gbs(2**29, d, "pageable")
                                                      for d in ("h2d", "d2h")], x),
    "transfer.async_1m_h2d": lambda: f"{num(gbs(2**20, 'h2d', 'pinned', 'async'))} GB/s",
    "transfer.sync_1m_h2d": lambda: f"{num(gbs(2**20, 'h2d', 'pinned'))} GB/s",
    "transfer.touch_per_page": lambda: t(alloc_m(2**29, "first_touch")["median"] / (2**29 / 4096)),
    "transfer.touch_512m": lambda: t(alloc_m(2**29, "first_touch")["median"]),
    "transfer.malloc_512m": lambda: t(alloc_m(2**29, "malloc")["median"]),
    "transfer.memcpy_1t": lambda: f"{num(memcpy_m(2**29, 1)['extra']['GB/s'])} GB/s",
    "transfer.memcpy_nt": lambda: f"{num(max(m['extra']['GB/s'] for m in report('transfer').all('copy', size_bytes=2**29, direction='h2h', mode='memcpy')))} GB/s",
    "transfer.memcpy_1k": lambda: t(memcpy_m(1024, 1)["median"]),
    "transfer.small_vs_memcpy": lambda: x(copy_m(1024, "h2d", "pageable")["median"] / memcpy_m(1024, 1)["median"]),
    "transfer.staged_h2d_time": lambda: t(staged(report("transfer"), 2**29, "h2d")["median"]),
    "transfer.staged_h2d_gbs": lambda: f"{num(staged(report('transfer'), 2**29, 'h2d')['extra']['GB/s'])} GB/s",
    "transfer.staged_h2d_x": lambda: x(staged(report("transfer"), 2**29, "h2d")["extra"]["speedup_vs_pageable"]),
    "transfer.staged_d2h_gbs": lambda: f"{num(staged(report('transfer'), 2**29, 'd2h')['extra']['GB/s'])} GB/s",
    "transfer.staged_d2h_x": lambda: x(staged(report("transfer"), 2**29, "d2h")["extra"]["speedup_vs_pageable"]),
    "transfer.staged_threads": lambda: str(staged(report("transfer"), 2**29, "h2d")["params"]["copy_threads"]),
    "transfer.d2d_1g": lambda: f"{num(copy_m(2**30, 'd2d', 'device', 'async')['extra']['GB/s_rw'], 0)} GB/s",
    "transfer.d2d_over_pinned": lambda: x(copy_m(2**30, "d2d", "device", "async")["extra"]["GB/s_rw"]
                                          / gbs(2**29, "h2d", "pinned")),
    "transfer.d2d_1g_pct": lambda: pct(copy_m(2**30, "d2d", "device", "async")["extra"]["hbm_fraction"]),
    "transfer.malloc_small": lambda: t(alloc_m(1024, "cudaMalloc")["median"]),
    "transfer.free_small": lambda: t(alloc_m(1024, "cudaFree")["median"]),
    "transfer.malloc_1g": lambda: t(alloc_m(2**30, "cudaMalloc")["median"]),
    "transfer.free_1g": lambda: t(alloc_m(2**30, "cudaFree")["median"]),
    "transfer.malloc_range": lambda: span([m["median"] for m in report("transfer").all("alloc", api="cudaMalloc")], t),
    "transfer.free_range": lambda: span([m["median"] for m in report("transfer").all("alloc", api="cudaFree")], t),
    "transfer.mallochost_vs_malloc": lambda: x(alloc_m(1024, "cudaMallocHost")["median"] / alloc_m(1024, "cudaMalloc")["median"]),
    "transfer.mallochost_512m": lambda: t(alloc_m(2**29, "cudaMallocHost")["median"]),
    "transfer.free_512m": lambda: t(alloc_m(2**29, "cudaFree")["median"]),
}

def seq_m(api, index):
    return report("transfer").one("alloc_sequence", api=api, index=index)


def tab_transfer_alloc_sequence():
    r = report("transfer")
    if not r.all("alloc_sequence"):
        return ("> Not measured yet: the saved report predates the `alloc_sequence` rows. "
                "`tg-transfer --device 0 --json docs/results/transfer.json` on a GPU, then `python3 tools/docs-tables`.")
    mib = lambda b: f"{num(b / 2**20)} MiB" if b else "0"
    rows = []
    for i in range(1, 5):
        a, f = seq_m("cudaMalloc", i), seq_m("cudaFree", i)
        rows.append([i, t(a["median"]), mib(a["extra"]["device_bytes_taken"]), t(f["median"]),
                     mib(-f["extra"]["device_bytes_taken"])])
    return (table(["call in the sequence", "`cudaMalloc` 1 KiB", "device memory it took", "`cudaFree`",
                   "device memory it gave back"], rows, ["---:", "---:", "---:", "---:", "---:"]) +
            "\n\nMedians over the repeated sequence; the memory from `cudaMemGetInfo` after each call.\n\n" +
            r.source_line())


TABLES.update({"transfer-chunks": tab_transfer_chunks, "transfer-cold-start": tab_transfer_cold_start,
               "transfer-alloc-sequence": tab_transfer_alloc_sequence})
VALUES.update({
    "transfer.seq_first_malloc": lambda: t(seq_m("cudaMalloc", 1)["median"]),
    "transfer.seq_next_malloc": lambda: t(seq_m("cudaMalloc", 2)["median"]),
    "transfer.seq_last_free": lambda: t(seq_m("cudaFree", 4)["median"]),
    "transfer.seq_other_free": lambda: t(seq_m("cudaFree", 1)["median"]),
    "transfer.seq_chunk": lambda: f"{num(seq_m('cudaMalloc', 1)['extra']['device_bytes_taken'] / 2**20)} MiB",
})
