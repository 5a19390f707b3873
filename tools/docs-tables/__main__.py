#!/usr/bin/env python3
"""Regenerates the tables and plots of docs/ from the saved reports in docs/results/.

    python3 tools/docs-tables            # update every table and plot in docs/
    python3 tools/docs-tables --check    # exit 1 if a doc's table is out of date
    python3 tools/docs-tables --print memory-roles   # one table on stdout
    python3 tools/docs-tables --no-plots             # tables only (no matplotlib needed)
    python3 tools/docs-tables --results report --plots-to report/plots   # the main job's figures
    python3 tools/docs-tables --results report --main-job-summary        # the head of its summary.md

A table lives in a doc (README.md, docs/*.md) between two marker comments:

    <!-- tables:NAME begin -->
    ...generated, do not edit by hand...
    <!-- tables:NAME end -->

and NAME is one of the TABLES of docs_tables/ beside this file (one module per chapter). A
single number in the prose is a value marker, on one line, which GitHub shows as
the value alone:

    the dynamic executor costs <!--v:launch.dyn_us-->4.38<!--/v--> us per op

with NAME one of the VALUES (--list-values). Run this after saving new results in
docs/results/; every table and value then comes from those JSON files, and the plots
(PNG + SVG in docs/plots/) are drawn by tools/plot/plot_report.py's own figure code.
Every run also checks that no measured-looking number of the prose is written by
hand, and that no reference leaves the repository (docs_tables/prose.py). Exit 0 when done,
1 for --check with stale docs or for a hand-written figure or an outside reference, 2 for bad
usage or a report that lacks a measurement a table needs (the message names the file, the
measurement and its parameters).
"""
import argparse
import json
import os
import sys
from pathlib import Path

# The builders live in docs_tables/ beside this file (one module per chapter); this file is
# only the command line. Python runs a folder's __main__.py with the folder first on sys.path,
# so `python3 tools/docs-tables` is the whole command and docs_tables imports from here.
from docs_tables import PLOTTERS, TABLES, VALUES, common, main_job, prose
from docs_tables.common import PLOTS, ROOT, Missing, update_doc


def main():
    ap = argparse.ArgumentParser(prog="docs-tables", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a table in docs/ is out of date")
    ap.add_argument("--no-plots", action="store_true", help="update the tables only")
    ap.add_argument("--print", metavar="NAME", choices=sorted(TABLES) + sorted(VALUES),
                    help="print one table or value (tables: %s; values: --list-values)" % ", ".join(sorted(TABLES)))
    ap.add_argument("--list-values", action="store_true", help="print every value's name and current text")
    ap.add_argument("--list-results", action="store_true",
                    help="print the saved results by role (docs/results/manifest.json: key, file, what)")
    ap.add_argument("--results", metavar="DIR", help="read the reports from DIR instead of docs/results")
    ap.add_argument("--plots-to", metavar="DIR",
                    help="draw the figures of --results's reports into DIR, as the docs draw them, and change no doc")
    ap.add_argument("--main-job-summary", action="store_true",
                    help="print the head of the main job's summary.md for --results (figures in its plots/)")
    a = ap.parse_args()
    if a.results:
        common.RESULTS = Path(a.results).resolve()
    if (a.plots_to or a.main_job_summary) and not a.results:
        ap.error("--plots-to and --main-job-summary read a main job's folder: give it with --results DIR")
    if a.plots_to:
        common.PR = common.import_plot_report(True)
        for w in sorted(p for ws in main_job.draw(a.plots_to, PLOTTERS).values() for p in ws):
            print(w)
        return 0
    if a.main_job_summary:
        common.PR = common.import_plot_report(False)
        # Links a reader can follow: relative inside this checkout (report/ -> ../docs), else absolute.
        inside = common.RESULTS.is_relative_to(common.ROOT)
        docs = os.path.relpath(common.DOCS, common.RESULTS) if inside else str(common.DOCS)
        print(main_job.summary_head(docs, "plots"))
        return 0
    plots = not (a.no_plots or a.check or a.print or a.list_values or a.list_results)
    common.PR = common.import_plot_report(plots)
    if a.print:
        print(common.render(TABLES, a.print) if a.print in TABLES else common.render_value(VALUES, a.print))
        return 1 if common.failed else 0
    if a.list_results:
        manifest = json.loads((common.RESULTS / "manifest.json").read_text())
        for key, entry in manifest.items():
            print(f"{key}\t{entry['file']}\t{entry['what']}")
        return 0
    if a.list_values:
        for name in sorted(VALUES):
            print(f"{name}\t{common.render_value(VALUES, name)}")
        return 1 if common.failed else 0
    stale, used, used_values = [], set(), set()
    for path in prose.docs():
        names, values, changed = update_doc(TABLES, VALUES, path, a.check)
        used.update(names)
        used_values.update(values)
        if changed:
            stale.append(path.relative_to(ROOT))
        if names or values:
            what = ", ".join(names + ([f"{len(values)} values"] if values else []))
            print(f"{path.relative_to(ROOT)}: {'stale' if changed and a.check else 'updated' if changed else 'up to date'}"
                  f" ({what})")
    for name in sorted(set(TABLES) - used):
        print(f"docs-tables: note: table {name} is in no doc", file=sys.stderr)
    for name in sorted(set(VALUES) - used_values):
        print(f"docs-tables: note: value {name} is in no doc", file=sys.stderr)
    hand = prose.check()
    for e in hand:
        print(f"docs-tables: error: {e}", file=sys.stderr)
    for rel, why in prose.NOT_CHECKED.items():
        print(f"docs-tables: note: {rel} is not checked for hand-written figures: {why}", file=sys.stderr)
    if plots:
        # Reproducible SVGs: fixed ids and date, so an unchanged report gives unchanged files.
        common.PR.matplotlib.rcParams["svg.hashsalt"] = "twograph"
        PLOTS.mkdir(parents=True, exist_ok=True)
        for stem, fn in PLOTTERS.items():
            try:
                for w in fn():
                    print(Path(w).relative_to(ROOT))
            except Missing as e:
                print(f"docs-tables: plots for {stem} skipped: {e}", file=sys.stderr)
    for f in common.failed:
        print(f"docs-tables: error: {f}", file=sys.stderr)
    if a.check and stale:
        print(f"docs-tables: {len(stale)} doc(s) out of date: run python3 tools/docs-tables", file=sys.stderr)
    if hand:
        print(f"docs-tables: {len(hand)} hand-written figure(s) in the prose (above)", file=sys.stderr)
    return 1 if (a.check and stale) or common.failed or hand else 0


if __name__ == "__main__":
    os.environ.setdefault("SOURCE_DATE_EPOCH", "0")  # matplotlib writes this date into SVG metadata
    try:
        sys.exit(main())
    except Missing as e:
        print(f"docs-tables: error: {e}", file=sys.stderr)
        sys.exit(2)
    except SystemExit as e:
        if isinstance(e.code, str):  # our own (and plot_report.load's) error messages
            print(e.code, file=sys.stderr)
            sys.exit(2)
        raise
