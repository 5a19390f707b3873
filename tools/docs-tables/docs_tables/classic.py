"""docs/classic.md: the classic tables (memcpy, malloc, matmul), made from the same
reports, and with the same cells, as docs/transfer.md and docs/matmul.md; the table of
effects that make other measurements of them differ, and the cold-start rows."""
from . import common
from .common import num, report, size_name, sources_line, t, table, x
from .launch import cold_table
from .matmul import matmul_rows
from .transfer import COPY_ROWS, SIZES, copy_cell


def tab_classic_memcpy():
    r = report("transfer")
    rows = [[f"`cudaMemcpy` {label}"] + [copy_cell(r, s, d, mem) for s in SIZES] for label, d, mem in COPY_ROWS]
    return table(["synchronous copy"] + [size_name(s) for s in SIZES], rows) + "\n\n" + r.source_line()


def tab_classic_malloc():
    r = report("transfer")
    rows = [[f"`{a}`"] + [t(r.one("alloc", size_bytes=s, api=a)["median"]) for s in SIZES]
            for a in ("cudaMalloc", "cudaFree", "cudaMallocHost", "cudaFreeHost")]
    return table(["call"] + [size_name(s) for s in SIZES], rows) + "\n\n" + r.source_line()


def tab_classic_matmul():
    r = report("matmul")
    ns, cpu = matmul_rows(r)
    gf = lambda m: num(m["extra"]["TFLOP/s"] * 1e3, 0) if m["params"]["n"] else "-"
    rows = []
    for n in ns:
        row = [n, t(cpu[n]["median"]), gf(cpu[n])]
        for prec, tr in (("fp32", False), ("fp32", True), ("tf32", False)):
            m = r.one("matmul", backend="gpu", n=n, precision=prec, transfers=tr)
            row += [t(m["median"]), gf(m), f"{num(m['extra']['speedup_vs_cpu'])}x"]
        rows.append(row)
    head = ["n", "CPU time", "CPU GFLOP/s"]
    for s in ("GPU fp32", "GPU fp32 + transfers", "GPU TF32"):
        head += [f"{s} time", "GFLOP/s", "speedup"]
    cross = ", ".join(f"{m['params']['precision']}{' + transfers' if m['params']['transfers'] else ''} n = "
                      f"{int(m['median'])}" for m in r.all("crossover_n"))
    return (table(head, rows, ["---:"] * len(head)) + f"\n\nCrossover (first n where the GPU is faster): {cross}. "
            "GFLOP/s count 2n^3; speedup = CPU time / GPU time.\n\n" + r.source_line())


def cold(stem, call, occurrence="first"):
    """A cold-start median, or None when the saved report predates the cold_start rows."""
    found = report(stem).all("cold_start", call=call, occurrence=occurrence)
    return found[0]["median"] if found else None


NOT_YET = "not in the saved report yet (see the cold-start table)"


def first_call_cell():
    parts = [cold("transfer", c) for c in ("runtime_init", "context_creation", "cudaMalloc")]
    if None in parts:
        return NOT_YET
    return (f"{t(sum(parts))} (runtime {t(parts[0])} + context {t(parts[1])} + the allocation "
            f"{t(parts[2])}, medians)")


def first_copy_cell():
    first, second = cold("transfer", "cudaMemcpy_h2d_pageable"), cold("transfer", "cudaMemcpy_h2d_pageable", "second")
    return NOT_YET if first is None else f"first {t(first)}, second {t(second)}, in a process whose context exists"


def first_launch_cell():
    first, second = cold("launch", "kernel_launch"), cold("launch", "kernel_launch", "second")
    return NOT_YET if first is None else f"first launch + sync {t(first)}, second {t(second)}"


def tab_classic_effects():
    tr, mm = report("transfer"), report("matmul")
    alloc = lambda s, api: tr.one("alloc", size_bytes=s, api=api)["median"]
    copy = lambda s, d, mem, mode="sync": tr.one("copy", size_bytes=s, direction=d, memory=mem, mode=mode)
    gpu = lambda n, tr_=False: mm.one("matmul", backend="gpu", n=n, precision="fp32", transfers=tr_)
    top = max(matmul_rows(mm)[0])
    first = min(n for n in matmul_rows(mm)[0] if n)
    gen3 = common.PR.pcie_GBps({"pcie_gen": 3, "pcie_width": 16})
    here = common.PR.pcie_GBps(common.gpu_of("transfer"))
    rows = [
        ["the first CUDA call of the process is inside the timed interval (context creation)",
         "`cudaMalloc`, any size", t(alloc(1024, "cudaMalloc")), first_call_cell(),
         "make one CUDA call (`cudaFree(0)`) before timing; time many calls"],
        ["the first copy of the process", "`cudaMemcpy` 1 KiB", t(copy(1024, "h2d", "pageable")["median"]),
         first_copy_cell(), "warm up with untimed copies"],
        ["the source buffer was never written (first touch inside the copy)", "`cudaMemcpy` 512 MiB pageable",
         t(copy(2**29, "h2d", "pageable")["median"]),
         f"+ {t(alloc(2**29, 'first_touch'))} of page faults for 512 MiB", "write the buffer before timing"],
        ["pageable or pinned not said", "`cudaMemcpy` 512 MiB H2D", f"pinned {t(copy(2**29, 'h2d', 'pinned')['median'])}",
         f"pageable {t(copy(2**29, 'h2d', 'pageable')['median'])}, "
         f"{x(copy(2**29, 'h2d', 'pinned')['extra']['GB/s'] / copy(2**29, 'h2d', 'pageable')['extra']['GB/s'])} slower",
         "say which; pin what is copied often"],
        ["a framework call per product: operands copied in and the result out (a TF1 `session.run` with a "
         "`feed_dict`)", f"GPU matmul, n = {first}", t(gpu(first)["median"]),
         f"{t(gpu(first, True)['median'])} with the copies, before any framework overhead of its own (not measured here)",
         "keep operands on the device; time the product alone"],
        ["the first kernel of the process (module loading, library set-up)", "GPU matmul, first n", "-",
         first_launch_cell(), "warm up with an untimed call"],
        ["no synchronize: the enqueue is timed, not the work", f"GPU matmul, n = {top}", t(gpu(top)["median"]),
         f"the call alone costs about {t(gpu(0)['median'])} (the n = 0 row), whatever n", "synchronize, or time with "
         "CUDA events"],
        ["n^3 FLOP counted instead of 2n^3", f"TFLOP/s at n = {top}", num(gpu(top)["extra"]["TFLOP/s"]),
         f"would read {num(gpu(top)['extra']['TFLOP/s'] / 2)}", "say the convention"],
        ["MB (10^6) and MiB (2^20) mixed", "any size or rate", "-", f"{x(2**20 / 1e6)} apart", "say which"],
        ["another machine", "every row", f"PCIe Gen5 x16: {num(here, 0)} GB/s in theory",
         f"a Gen3 x16 link: {num(gen3)} GB/s, {x(here / gen3)} less; an older GPU: its own peaks",
         "compare percent of the ceilings ([regimes.md](regimes.md))"],
    ]
    return (table(["what the measurement did", "classic row", "here, steady state", "what it does (measured here)",
                   "how to avoid it"], rows) + "\n\n" + sources_line("transfer", "matmul"))


def tab_classic_cold_start():
    return cold_table(["transfer", "launch"])


# One image batch, (32, 224, 224, 3), over PCIe: the estimate people make at a Gen3 x16 link's
# 15.75 GB/s (8 GT/s x 16 lanes x 128/130 / 8), with 8 bytes per float as it is often done, with
# the 4 bytes of float32 and with the 1 byte of uint8, beside tg-transfer's measurement.
IMAGE_ELEMENTS = 32 * 224 * 224 * 3
GEN3_X16 = 15.75e9


def tab_classic_image_batch():
    r = report("transfer")
    if not r.all("image_batch_copy"):
        return ("> Not measured yet: the saved report predates the `image_batch_copy` rows. "
                "`tg-transfer --device 0 --json docs/results/transfer.json` on a GPU, then `python3 tools/docs-tables`.")

    def cell(dtype, memory, mode):
        m = r.one("image_batch_copy", dtype=dtype, direction="h2d", memory=memory, mode=mode)
        return f"{t(m['median'])} ({num(m['extra']['GB/s'])} GB/s)"

    rows = [["float64-sized floats (8 bytes each, the common slip)", f"{IMAGE_ELEMENTS * 8 / 1e6:.1f} MB",
             t(IMAGE_ELEMENTS * 8 / GEN3_X16), "-", "-", "-"]]
    for dtype, label, size in (("f32", "float32 (4 bytes)", 4), ("u8", "uint8 (1 byte), as images are stored", 1)):
        rows.append([label, f"{IMAGE_ELEMENTS * size / 1e6:.1f} MB", t(IMAGE_ELEMENTS * size / GEN3_X16),
                     cell(dtype, "pageable", "sync"), cell(dtype, "pinned", "sync"), cell(dtype, "pinned", "async")])
    return (table(["(32, 224, 224, 3) as", "bytes", "at 15.75 GB/s (PCIe 3.0 x16)", "measured: pageable",
                   "pinned", "pinned, async (CUDA events)"], rows, ["---", "---:", "---:", "---:", "---:", "---:"]) +
            "\n\nHost to device, `cudaMemcpy` (sync: host clock around the call and a synchronize) and "
            "`cudaMemcpyAsync` (async).\n\n" + r.source_line())


TABLES = {"classic-memcpy": tab_classic_memcpy, "classic-image-batch": tab_classic_image_batch, "classic-malloc": tab_classic_malloc,
          "classic-matmul": tab_classic_matmul, "classic-effects": tab_classic_effects,
          "classic-cold-start": tab_classic_cold_start}
PLOTTERS = {}
