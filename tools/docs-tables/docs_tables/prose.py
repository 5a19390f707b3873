"""The prose check: a figure written by hand in the docs goes stale silently when the
results change, so every measured-looking number in README.md and docs/*.md must be
generated (a table between markers, or a <!--v:NAME-->value<!--/v--> in the text).

A number counts as measured when a time, rate, FLOP, iteration, ratio or percent unit
follows it: "4.38 us", "55 GB/s", "2.8x", "7%". Numbers without such a unit (sizes,
batch sizes, op counts, flags) are parameters of a run and may be written by hand, as
may code spans and code blocks (commands, and the quick start's pasted output, which
its own ctest checks). What is left is either generated or listed in DEFINITIONS with
the reason it is not a measurement; an entry that no longer occurs is an error too, so
the list cannot rot. The same check refuses references that leave the repository (a
path to another checkout, a link to a file that does not exist). The captions and
sentences that the generator itself writes around its tables pass the same test: a
measured-looking number in a string literal of this package is an error unless
CAPTION_DEFINITIONS lists it, so a figure there is computed from a result file."""
import ast
import re
from pathlib import Path

from .common import DOCS, ROOT, line_of

# The generator's own modules, and how the messages name them.
PACKAGE = Path(__file__).resolve().parent
HERE = PACKAGE.relative_to(ROOT)

# Docs the check does not cover, and why (the report of `--check` names them). None now:
# docs/reliability.md's figures come from its logs and summaries (its chapter, reliability.py).
NOT_CHECKED = {}

# Numbers with a unit that are definitions, not measurements: (doc, exact text, why).
DEFINITIONS = [
    ("docs/transfer.md", "1 GB/s", "the unit: 1 GB/s = 10^9 bytes/s"),
    ("docs/classic.md", "1 GB/s", "the same unit"),
    ("docs/classic.md", "15.75 GB/s", "PCIe 3.0 x16 in theory: 8 GT/s x 16 lanes x 128/130 / 8, the estimate's link"),
    ("docs/pipeline.md", "15.75 GB/s", "the same link, the seed's estimate of the image batch's copy"),
    ("docs/README.md", "1 GB/s", "the same unit, quoted as an example of a definition"),
    ("README.md", "5%", "tg-report compare's default threshold"),
    ("docs/train.md", "1.1x", "the speedup below which compute_bound_batch calls a batch compute-bound"),
    ("docs/train.md", "10%", "the same threshold, as the share of the step static saves"),
    ("docs/report-format.md", "0.2 s", "the measurement loop's default minimum time"),
    ("docs/report-format.md", "0.02 s", "the same with --quick"),
    ("docs/memory.md", "3 iterations", "how many iterations the allocator comparison runs"),
    ("docs/memory.md", "5%", "the pass threshold of role_agreement_worst_pct (target_pct)"),
    ("docs/memory.md", "2%", "the pass threshold of the VGG-16 layer table's agreement sources"),
    ("docs/cnn.md", "2%", "the same threshold, where cnn.md explains the layer table"),
    ("docs/bring-your-own-model.md", "5%", "the share of ReLU-kink elements tg_onnx_test may leave out"),
]

# Numbers with a unit in the generator's own string literals that are definitions or run
# parameters, not measurements: (module, exact text, why).
CAPTION_DEFINITIONS = [
    ("classic.py", "15.75 GB/s", "PCIe 3.0 x16 in theory, the link of the image batch's estimate"),
    ("pipeline.py", "15.75 GB/s", "the same link, in the image batch's bytes table"),
    ("compiler.py", "100%", "the device-to-device copy is the 100% the kernel table measures against"),
    ("memory_measured.py", "3 iterations", "how many iterations the allocator comparison runs"),
    ("shapes.py", "1x", "the break-even ratio of a strategy against dynamic"),
    ("shapes_cnn.py", "1x", "the break-even ratio of a strategy against dynamic"),
    ("main_job.py", "1x", "the break-even ratio of static, or of a strategy, against dynamic"),
    ("main_job.py", "10%", "the noisy flag's threshold (the middle half's spread over the median)"),
]

UNIT = r"(?:ns|us|µs|ms|s|GB/s|TB/s|MB/s|GFLOP/s|TFLOP/s|iter/s|iterations?|waves?)"
MEASURED = re.compile(r"(?<![\w.^])\d+(?:,\d{3})*(?:\.\d+)?(?:\s?" + UNIT + r"(?![\w/])|x(?![\w])|\s?%)")

# Regions the check skips, in this order: generated tables, generated values, code blocks,
# code spans, HTML comments, link targets.
SKIP = [re.compile(p, re.S) for p in (
    r"<!-- tables:([\w-]+) begin -->.*?<!-- tables:\1 end -->",
    r"<!--v:[\w.-]+-->[^<\n]*<!--/v-->",
    r"^(```|~~~).*?^\1",
    r"`[^`\n]+`",
    r"<!--.*?-->",
    r"\]\([^)]*\)",
)]


def docs():
    return [ROOT / "README.md"] + sorted(DOCS.glob("*.md"))


def blank(text):
    """The text with every skipped region replaced by spaces (line numbers kept)."""
    for rx in SKIP:
        flags = re.M if rx.pattern.startswith("^") else 0
        rx = re.compile(rx.pattern, rx.flags | flags)
        text = rx.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    return text


def hand_written(path):
    """[(line, text)] of the measured-looking numbers of one doc that are not generated."""
    rel = str(path.relative_to(ROOT))
    text = blank(path.read_text())
    allowed = {d[1] for d in DEFINITIONS if d[0] == rel}
    return [(line_of(text, m.start()), m.group(0)) for m in MEASURED.finditer(text) if m.group(0) not in allowed]


# The docs cite nothing outside the repository: no path to a sibling folder or a machine's
# checkout, and every relative link must resolve to a file of the repository.
OUTSIDE = re.compile(r"\.\./shared|/work/|\bdesign\.md\b")
LINK = re.compile(r"\]\(([^)\s]+)\)")
# A merge left half done: the generator updates both halves alike, so nothing else shows it.
CONFLICT = re.compile(r"^(<<<<<<<|=======|>>>>>>>)( |$)", re.M)


def outside_references():
    errors = []
    for path in [ROOT / "README.md"] + sorted(DOCS.rglob("*.md")):
        rel = path.relative_to(ROOT)
        text = path.read_text()
        for m in OUTSIDE.finditer(text):
            errors.append(f"{rel}:{line_of(text, m.start())}: '{m.group(0)}' points outside the repository")
        for m in CONFLICT.finditer(text):
            errors.append(f"{rel}:{line_of(text, m.start())}: a merge conflict marker '{m.group(1)}': resolve the merge")
        for m in LINK.finditer(text):
            target = m.group(1).split("#")[0]
            if not target or re.match(r"[a-z]+:", target):
                continue  # an anchor, or a URL
            dest = (path.parent / target).resolve()
            if not dest.is_relative_to(ROOT) or not dest.exists():
                errors.append(f"{rel}:{line_of(text, m.start())}: link '{m.group(1)}' does not lead to a file of the "
                              "repository")
    return errors


def caption_literals(folder=PACKAGE):
    """[(module, line, text)] of measured-looking numbers in the string literals (docstrings
    aside) of the generator's modules: text it writes into the docs as it is."""
    found = []
    for path in sorted(folder.glob("*.py")):
        if path.name == "prose.py":
            continue  # its DEFINITIONS quote the docs' own definitions
        tree = ast.parse(path.read_text())
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                      and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                found += [(path.name, node.lineno, m.group(0)) for m in MEASURED.finditer(node.value)]
    return found


def check():
    """Error lines: hand-written figures in the docs and in the generator's captions, DEFINITIONS
    entries that no longer occur, and references that leave the repository."""
    errors = outside_references()
    captions = caption_literals()
    allowed = {(d[0], d[1]) for d in CAPTION_DEFINITIONS}
    for module, line, tok in captions:
        if (module, tok) not in allowed:
            errors.append(f"{HERE}/{module}:{line}: '{tok}' is typed into a caption: compute it "
                          "from the result file, or, if it is a definition, add it to CAPTION_DEFINITIONS in "
                          f"{HERE}/prose.py")
    for module, tok, _ in CAPTION_DEFINITIONS:
        if not any(c[0] == module and c[2] == tok for c in captions):
            errors.append(f"{HERE}/{module}: CAPTION_DEFINITIONS lists '{tok}', which no longer "
                          "occurs there: remove the entry")
    for path in docs():
        rel = str(path.relative_to(ROOT))
        if rel in NOT_CHECKED:
            continue
        for line, tok in hand_written(path):
            errors.append(f"{rel}:{line}: '{tok}' is written by hand: generate it (<!--v:NAME-->{tok}<!--/v-->, with "
                          "NAME in its chapter's VALUES) or, if it is a definition, add it to DEFINITIONS in "
                          f"{HERE}/prose.py")
    for rel, tok, _ in DEFINITIONS:
        if tok not in blank((ROOT / rel).read_text()):
            errors.append(f"{rel}: DEFINITIONS lists '{tok}', which no longer occurs there: remove the entry")
    return errors
