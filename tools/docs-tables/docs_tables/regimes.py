"""docs/regimes.md: the three regimes (overhead-, bandwidth-, compute-bound) from
tg-kernels, tg-launch and tg-matmul, against the ceilings of the device the reports
were taken on (theoretical ones from the report's GPU entry, measured ones from the
same reports), with percent of peak; the two figures; the chapter's values."""
from . import common
from .common import Missing, num, pct, report, size_name, sources_line, t, table, x
from .plotting import save

# FLOP and bytes per element of the elementwise ops whose count is unambiguous: one FLOP
# per add, multiply or compare; fp32 reads and writes of 4 bytes each.
ELEMENTWISE = {"scale": (1, 8), "relu": (1, 8), "add": (1, 12), "mul": (1, 12), "sgd": (2, 12),
               "sgd_momentum": (4, 20)}
# The ops the bandwidth table shows, in this order.
BANDWIDTH_OPS = ("fill", "copy", "scale", "relu", "gelu", "add", "bias_add", "sgd_momentum", "softmax", "softmax_grad",
                 "layernorm", "layernorm_grad_x", "layernorm_grad_gamma", "mse_loss", "reduce_sum_rows",
                 "reduce_sum_cols", "broadcast", "transpose")
CURVE_OPS = ("d2d_copy", "add", "relu", "softmax", "layernorm", "transpose", "reduce_sum_cols")


def gpu():
    return common.gpu_of("kernels")


def hbm():
    return common.PR.hbm_GBps(gpu()) * 1e9


def peak(precision):
    p = common.PR.peak_flops(gpu(), precision)
    if not p:
        raise Missing(f"no {precision} peak known for compute capability {gpu().get('compute_capability')}")
    return p


def sizes():
    return sorted({m["params"]["size_bytes"] for m in report("kernels").all("d2d_copy")})


def kern(op, size):
    m = report("kernels").one(op, size_bytes=size, dtype=None)  # f32: a --dtypes run adds 16-bit rows
    # This chapter's small sizes are the eager launch as the host sees it: samples that include
    # the host's submission (tg-kernels --plain-timing), not held ones (the device alone).
    if m["extra"].get("held", 0):
        raise Missing("docs/results/kernels.json was timed held; the regimes need the eager launch: "
                      "rerun tg-kernels with --plain-timing (scripts/device/gpu_kernels.sh does)")
    return m


def copy_rate():
    """Bytes/s of the largest device copy, read + write: the bandwidth a kernel can hope for."""
    return kern("d2d_copy", sizes()[-1])["extra"]["GB/s"] * 1e9


def floor_s():
    """The time of the smallest device copy: what any launched kernel costs at the least."""
    return kern("d2d_copy", sizes()[0])["median"]


def moved(m):
    return m["extra"]["GB/s"] * 1e9 * m["median"]


def mm(n, precision, path="cublas_direct"):
    return report("kernels").one("matmul", n=n, precision=precision, path=path)


def mm_sweep(n, precision):
    return report("matmul").one("matmul", backend="gpu", n=n, precision=precision, transfers=False)


def tab_regimes_ceilings():
    g = gpu()
    rows = [
        ["launch floor: the smallest device copy (eager launch, CUDA events)", t(floor_s()), "tg-kernels"],
        ["CUDA Graph node, empty kernel", f"{num(report('launch').one('raw_graph_gpu', n_ops=1000, kernel='empty', pdl=0)['extra']['us_per_node'])} us",
         "tg-launch"],
        ["device memory, theory", f"{num(hbm() / 1e9, 0)} GB/s", f"{g['mem_clock_khz'] // 1000} MHz x 2 x "
                                                                 f"{g['mem_bus_width_bits']} bits / 8"],
        [f"device copy of {size_name(sizes()[-1])}, read + write", f"{num(copy_rate() / 1e9, 0)} GB/s "
                                                                  f"({pct(copy_rate() / hbm())} of theory)", "tg-kernels"],
        ["fp32 peak", f"{num(peak('fp32') / 1e12)} TFLOP/s",
         f"{g['sm_count']} SMs x {common.PR.FLOP_PER_CLOCK_SM[g['compute_capability']]['fp32']} FLOP/clock x "
         f"{g['sm_clock_khz'] // 1000} MHz"],
        ["TF32 Tensor Core peak (dense)", f"{num(peak('tf32') / 1e12)} TFLOP/s",
         f"{g['sm_count']} SMs x {common.PR.FLOP_PER_CLOCK_SM[g['compute_capability']]['tf32']} FLOP/clock x "
         f"{g['sm_clock_khz'] // 1000} MHz"],
        ["ridge point fp32: peak / copy bandwidth", f"{num(peak('fp32') / copy_rate())} FLOP/byte", "roofline"],
        ["ridge point TF32", f"{num(peak('tf32') / copy_rate())} FLOP/byte", "roofline"],
        ["bytes a kernel must move before bandwidth, not the launch, sets its time: floor x bandwidth",
         f"{num(floor_s() * copy_rate() / 2**20)} MiB", "tg-kernels"],
    ]
    return (table(["ceiling", "value", "from"], rows, ["---", "---:", "---"]) + "\n\n" +
            sources_line("kernels", "launch"))


def tab_regimes_overhead():
    s0, s1 = sizes()[0], sizes()[1]
    rows = []
    for op in ("d2d_copy", "scale", "add", "softmax", "layernorm", "transpose"):
        a, b = kern(op, s0), kern(op, s1)
        rows.append([op, t(a["median"]), t(moved(a) / copy_rate()), pct(a["extra"]["GB/s"] * 1e9 / copy_rate(), 1),
                     t(b["median"]), pct(b["extra"]["GB/s"] * 1e9 / copy_rate(), 1)])
    return (table(["op", f"{size_name(s0)}: time", "bytes / copy bandwidth", "% of the copy bandwidth",
                   f"{size_name(s1)}: time", "% of the copy bandwidth"], rows, ["---"] + ["---:"] * 5) +
            "\n\nTensor sizes per operand; the bandwidth is the largest device copy's (read + write). "
            "\n\n" + report("kernels").source_line())


def tab_regimes_bandwidth():
    s = sizes()[-1]
    rows = []
    for op in BANDWIDTH_OPS:
        m = kern(op, s)
        gbs = m["extra"]["GB/s"] * 1e9
        rows.append([op, f"{num(moved(m) / 2**30)} GiB", t(m["median"]), num(gbs / 1e9, 0),
                     pct(gbs / copy_rate()), pct(gbs / hbm())])
    return (table(["op", "bytes moved", "time", "GB/s", "% of the device copy", "% of theory"], rows,
                  ["---"] + ["---:"] * 5) +
            f"\n\nAt {size_name(s)} per tensor; bytes moved = every input read once plus the output written once, "
            "the least a kernel can move.\n\n" + report("kernels").source_line())


def tab_regimes_compute():
    rows = []
    ns = sorted({m["params"]["n"] for m in report("matmul").all("matmul", backend="gpu") if m["params"]["n"]})
    for n in ns:
        f, tf = mm_sweep(n, "fp32"), mm_sweep(n, "tf32")
        ideal = 2 * n**3 / peak("fp32")
        rows.append([n, num(n / 6), t(f["median"]), t(ideal), num(f["extra"]["TFLOP/s"]),
                     pct(f["extra"]["TFLOP/s"] * 1e12 / peak("fp32")), num(tf["extra"]["TFLOP/s"]),
                     pct(tf["extra"]["TFLOP/s"] * 1e12 / peak("tf32"))])
    return (table(["n", "FLOP/byte (n / 6)", "fp32 time", "at fp32 peak", "fp32 TFLOP/s", "% of fp32 peak",
                   "TF32 TFLOP/s", "% of TF32 peak"], rows, ["---:"] * 8) +
            "\n\ncuBLAS sgemm, operands on the device; FLOP/byte counts 2n^3 FLOP over the 12n^2 bytes of A, B and "
            "C.\n\n" + report("matmul").source_line())


def plots_regimes():
    plt = common.PR.plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5))
    fig.suptitle("the three regimes on one GPU")
    # Left: GB/s vs size. A kernel that costs the launch floor reaches at most bytes / floor.
    ss = sizes()
    for i, op in enumerate(CURVE_OPS):
        ms = [kern(op, s) for s in ss]
        ax1.plot(ss, [m["extra"]["GB/s"] for m in ms], label=op, **common.PR.style(i))
    common.PR.ceiling(ax1, hbm() / 1e9, f"device memory, theory: {num(hbm() / 1e9, 0)} GB/s")
    mv = [moved(kern("d2d_copy", s)) for s in ss]
    ax1.plot(ss, [b / floor_s() / 1e9 for b in mv], color="0.5", linestyle=":",
             label=f"a copy that takes the launch floor ({t(floor_s())})")
    common.PR.size_axis(ax1, "bytes per tensor")
    ax1.set_yscale("log")
    ax1.set_ylim(top=3 * hbm() / 1e9)  # the floor line climbs on; above the memory's rate it says nothing
    ax1.set_ylabel("GB/s moved (median)")
    ax1.set_title("overhead-bound (left) to bandwidth-bound (right)", fontsize=10)
    ax1.grid(True, which="both", alpha=0.3)
    ax1.legend(fontsize=7.5, loc="lower right")
    # Right: the roofline, with the measured copy bandwidth under the peaks.
    bw = copy_rate()
    ais = [2.0**e for e in range(-4, 11)]
    for i, prec in enumerate(("fp32", "tf32")):
        ax2.plot(ais, [min(peak(prec), bw * a) / 1e12 for a in ais], color="0.35", linestyle="-" if i == 0 else "--",
                 label=f"roofline {prec}: min({num(peak(prec) / 1e12)} TFLOP/s, {num(bw / 1e9, 0)} GB/s x FLOP/byte)")
    for op, (flop, bytes_) in ELEMENTWISE.items():
        for j, s in enumerate((ss[0], ss[-1])):
            m = kern(op, s)
            ax2.plot(flop / bytes_, m["extra"]["GB/s"] * flop / bytes_ / 1e3, marker="o" if j else "x",
                     color=common.PR.COLORS[j], linestyle="none", label=(f"elementwise ops, {size_name(s)}"
                                                                       if op == "add" else None))
    ns = sorted({m["params"]["n"] for m in report("matmul").all("matmul", backend="gpu") if m["params"]["n"]})
    for k, prec in enumerate(("fp32", "tf32")):
        ax2.plot([n / 6 for n in ns], [mm_sweep(n, prec)["extra"]["TFLOP/s"] for n in ns], marker="sD"[k],
                 color=common.PR.COLORS[2 + k], linestyle="none", label=f"matmul {prec}, n = {ns[0]}..{ns[-1]}")
    ax2.set_xscale("log", base=2)
    ax2.set_yscale("log")
    ax2.set_xlabel("arithmetic intensity (FLOP per byte moved)")
    ax2.set_ylabel("TFLOP/s (median)")
    ax2.set_title("roofline: bandwidth-bound (left) to compute-bound (right)", fontsize=10)
    ax2.grid(True, which="both", alpha=0.3)
    ax2.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return save("regimes", [("overview", fig)])


def share_of_copy(op, size):
    return kern(op, size)["extra"]["GB/s"] * 1e9 / copy_rate()


def worst(ops, size):
    return min(ops, key=lambda op: share_of_copy(op, size))


VALUES = {
    "regimes.floor": lambda: t(floor_s()),
    "regimes.small": lambda: size_name(sizes()[0]),
    "regimes.large": lambda: size_name(sizes()[-1]),
    "regimes.copy_small_pct": lambda: pct(share_of_copy("d2d_copy", sizes()[0]), 1),
    "regimes.add_small_time": lambda: t(kern("add", sizes()[0])["median"]),
    "regimes.add_small_ideal": lambda: t(moved(kern("add", sizes()[0])) / copy_rate()),
    "regimes.add_small_ratio": lambda: x(kern("add", sizes()[0])["median"] / (moved(kern("add", sizes()[0])) / copy_rate())),
    "regimes.crossover_mib": lambda: num(floor_s() * copy_rate() / 2**20),
    "regimes.copy_gbs": lambda: num(copy_rate() / 1e9, 0),
    "regimes.copy_pct_theory": lambda: pct(copy_rate() / hbm()),
    "regimes.ridge_fp32": lambda: num(peak("fp32") / copy_rate()),
    "regimes.ridge_tf32": lambda: num(peak("tf32") / copy_rate()),
    "regimes.add_vs_ridge": lambda: x(peak("fp32") / copy_rate() / (1 / 12)),
    "regimes.mm_ridge_n": lambda: num(6 * peak("fp32") / copy_rate(), 0),
    "regimes.sms": lambda: str(gpu()["sm_count"]),
    "regimes.elementwise_range": lambda: "{} to {}".format(
        *[pct(f(share_of_copy(op, sizes()[-1]) for op in ("scale", "relu", "gelu", "add", "mul", "softmax", "layernorm")))
          for f in (min, max)]),
    "regimes.worst_op": lambda: worst(BANDWIDTH_OPS, sizes()[-1]),
    "regimes.worst_pct": lambda: pct(share_of_copy(worst(BANDWIDTH_OPS, sizes()[-1]), sizes()[-1])),
    "regimes.transpose_pct": lambda: pct(share_of_copy("transpose", sizes()[-1])),
    "regimes.reduce_cols_pct": lambda: pct(share_of_copy("reduce_sum_cols", sizes()[-1])),
    "regimes.launch_dyn_us": lambda: num(report("launch").one("dynamic_iteration", n_ops=1000,
                                                             allocator="caching")["extra"]["us_per_op"]),
    "regimes.launch_replay_us": lambda: num(report("launch").one("static_replay_gpu", n_ops=1000)["extra"]["us_per_node"]),
    "regimes.mm500_pct": lambda: pct(mm_sweep(500, "fp32")["extra"]["TFLOP/s"] * 1e12 / peak("fp32")),
    "regimes.mm500_time": lambda: t(mm_sweep(500, "fp32")["median"]),
    "regimes.mm500_ideal": lambda: t(2 * 500**3 / peak("fp32")),
    "regimes.mm5000_pct": lambda: pct(mm_sweep(5000, "fp32")["extra"]["TFLOP/s"] * 1e12 / peak("fp32")),
    "regimes.mm5000_tflops": lambda: num(mm_sweep(5000, "fp32")["extra"]["TFLOP/s"]),
    "regimes.tf32_best": lambda: num(max(m["extra"]["TFLOP/s"] for m in report("matmul").all(
        "matmul", backend="gpu", precision="tf32", transfers=False))),
    "regimes.tf32_best_pct": lambda: pct(max(m["extra"]["TFLOP/s"] for m in report("matmul").all(
        "matmul", backend="gpu", precision="tf32", transfers=False)) * 1e12 / peak("tf32")),
    "regimes.kern_mm2048_pct": lambda: pct(mm(2048, "fp32")["extra"]["TFLOP/s"] * 1e12 / peak("fp32")),
}

TABLES = {"regimes-ceilings": tab_regimes_ceilings, "regimes-overhead": tab_regimes_overhead,
          "regimes-bandwidth": tab_regimes_bandwidth, "regimes-compute": tab_regimes_compute}
PLOTTERS = {"regimes": plots_regimes}
