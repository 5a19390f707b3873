"""Plot helpers the chapters share: writing figures to docs/plots/ and a grouped bar
chart for the measurements plot_report has no figure kind for."""
from . import common


def save(tool, figs):
    plt = common.PR.plt
    written = []
    for name, fig in figs:
        base = common.PLOTS / f"{tool}_{name}"
        fig.savefig(f"{base}.png", dpi=120, bbox_inches="tight")
        fig.savefig(f"{base}.svg", bbox_inches="tight")
        plt.close(fig)
        written += [f"{base}.png", f"{base}.svg"]
    return written


def grouped_bars(tool, title, groups, series, value, ylabel, fname, log=False):
    """groups: x labels; series: legend labels; value(group, series) -> (median, p10, p90) or None."""
    fig, ax = common.PR.new_fig(f"{tool}: {title}", w=max(7.5, 0.9 * len(groups) + 3))
    width = 0.8 / len(series)
    for i, s in enumerate(series):
        vals = [value(g, s) for g in groups]
        xs = [j + (i - (len(series) - 1) / 2) * width for j, v in enumerate(vals) if v]
        mid = [v[0] for v in vals if v]
        err = [[v[0] - min(v[1], v[2]) for v in vals if v], [max(v[1], v[2]) - v[0] for v in vals if v]]
        spread = any(e > 0 for e in err[0] + err[1])  # exact values (bytes) get no whiskers
        ax.bar(xs, mid, width, yerr=err if spread else None, capsize=2, label=s)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return [(fname, fig)]
