#!/usr/bin/env python3
"""Runs the commands whose output a doc quotes and checks the quotes against what they print.

    doc_outputs_test.py BUILD_DIR DOC.md [DOC.md ...]            # check (the ctest)
    doc_outputs_test.py --update BUILD_DIR DOC.md [DOC.md ...]   # rewrite the whole-output quotes

A quoted output is a fenced block right after a marker comment, which the rendered page hides:

    <!-- output: tg-graph print block.json --training --passes all 2>&1 >/dev/null -->
    <!-- output-lines: tg-graph print block.json --training --passes rows -->

`output:` quotes the command's whole output (stdout and stderr, as the shell gives them): the block
must equal it, and --update writes it. `output-lines:` quotes chosen lines: each must be a line of
the output, in the output's order (a `...` line marks the gap, and is skipped). A block line that
starts with `$ ` shows the command to the reader and is not compared. The commands run with bash,
one doc at a time, in a fresh folder where `tests` is the source tree's tests/, `build/cpu-only`
and `build/default` are BUILD_DIR, and the tools (tg-graph, tg-report) are on PATH; the doc's
`<!-- output:setup -->` sh blocks run there first, in order (they make the files the commands read,
as a reader following the page would). Exit 0 when every quote agrees, 1 naming each one that does
not (with the real output), 2 for a doc with no marker or a marker with no block after it."""
import os
import re
import subprocess
import sys
import tempfile

MARKER = re.compile(r"<!-- (output|output-lines|output:setup)(?:: (.*?))? -->\n```[a-z]*\n(.*?)\n```", re.S)


def run(cmd, cwd, env):
    p = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=300)
    return p.returncode, p.stdout.rstrip("\n")


def quoted(block):
    return [ln for ln in block.splitlines() if not ln.startswith("$ ")]


def in_order(want, got):
    """The first wanted line that is not in `got` after the previous one's place, or None."""
    pos = 0
    for w in want:
        if w.strip() == "...":
            continue
        try:
            pos = got.index(w, pos) + 1
        except ValueError:
            return w
    return None


def check_doc(path, build, update):
    text = open(path).read()
    found = list(MARKER.finditer(text))
    if not [m for m in found if m.group(1) != "output:setup"]:
        print(f"doc_outputs: {path}: no `<!-- output: COMMAND -->` marker before a fenced block", file=sys.stderr)
        return None, text
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    failures, new_text, last = [], [], 0
    with tempfile.TemporaryDirectory(prefix="tg_doc_outputs_") as d:
        os.symlink(os.path.join(src, "tests"), os.path.join(d, "tests"))
        os.makedirs(os.path.join(d, "build"))
        for name in ("cpu-only", "default"):
            os.symlink(build, os.path.join(d, "build", name))
        env = dict(os.environ)
        env["PATH"] = os.pathsep.join(os.path.join(build, "tools", t) for t in ("tg-graph", "tg-report")) + \
            os.pathsep + env.get("PATH", "")
        for m in found:
            kind, cmd, block = m.group(1), m.group(2), m.group(3)
            line = text.count("\n", 0, m.start()) + 1
            if kind == "output:setup":
                rc, out = run(block, d, env)
                if rc != 0:
                    failures.append(f"{path}:{line}: the setup block exited {rc}:\n{out}")
                continue
            rc, out = run(cmd, d, env)
            got = out.splitlines()
            print(f"doc_outputs: {path}:{line}: ran `{cmd}`: exit {rc}")
            if kind == "output":
                want = quoted(block)
                if want != got:
                    if update:
                        shown = [ln for ln in block.splitlines() if ln.startswith("$ ")]
                        start = m.start(3)
                        new_text += [text[last:start], "\n".join(shown + got)]
                        last = m.end(3)
                        print(f"doc_outputs: {path}:{line}: updated")
                    else:
                        failures.append(f"{path}:{line}: `{cmd}` prints, instead of the quote:\n{out}")
            else:
                missing = in_order(quoted(block), got)
                if missing is not None:
                    failures.append(f"{path}:{line}: `{cmd}` does not print, in this order, the quoted line\n"
                                    f"  {missing}\nit prints:\n{out}")
    new_text.append(text[last:])
    return failures, "".join(new_text)


def main():
    args = sys.argv[1:]
    update = bool(args) and args[0] == "--update"
    if update:
        args = args[1:]
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    build, docs = os.path.abspath(args[0]), args[1:]
    bad, usage = [], False
    for doc in docs:
        failures, new_text = check_doc(doc, build, update)
        if failures is None:
            usage = True
            continue
        bad += failures
        if update:
            with open(doc, "w") as f:
                f.write(new_text)
    for f in bad:
        print(f"doc_outputs: {f}\n", file=sys.stderr)
    if bad:
        print(f"doc_outputs: {len(bad)} quoted output(s) differ from what the commands print; fix the doc "
              "(`output:` quotes: tests/tools/doc_outputs_test.py --update BUILD_DIR DOC)", file=sys.stderr)
    return 2 if usage else 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
