"""docs/README.md: the summary tables of the front page (memcpy, malloc, matmul), made
from the same reports, and with the same cells, as docs/transfer.md and docs/matmul.md."""
from .common import num, report, size_name, t, table
from .matmul import matmul_rows
from .transfer import COPY_ROWS, SIZES, copy_cell


def tab_readme_memcpy():
    r = report("transfer")
    rows = [[f"`cudaMemcpy` {label}"] + [copy_cell(r, s, d, mem) for s in SIZES] for label, d, mem in COPY_ROWS]
    return table(["synchronous copy"] + [size_name(s) for s in SIZES], rows) + "\n\n" + r.source_line()


def tab_readme_malloc():
    r = report("transfer")
    rows = [[f"`{a}`"] + [t(r.one("alloc", size_bytes=s, api=a)["median"]) for s in SIZES]
            for a in ("cudaMalloc", "cudaFree", "cudaMallocHost", "cudaFreeHost")]
    return table(["call"] + [size_name(s) for s in SIZES], rows) + "\n\n" + r.source_line()


def tab_readme_matmul():
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


TABLES = {"readme-memcpy": tab_readme_memcpy, "readme-malloc": tab_readme_malloc, "readme-matmul": tab_readme_matmul}
PLOTTERS = {}
