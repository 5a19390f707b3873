#!/usr/bin/env python3
"""Runs README.md's quick start as written and checks its output against the README.

    quickstart_test.py README.md BUILD_DIR

The commands are the fenced block after `<!-- quickstart:run -->`; they run one line at a time
with bash, in a fresh folder where `build/cpu-only` is BUILD_DIR, so the text and the test cannot
drift apart. Every command must exit 0, except `tg-report compare`, whose 1 means "something is
slower" (the README says so). Each block after `<!-- quickstart:output WORD -->` is the pasted
output of the first command that contains WORD (stdout and stderr); the real output must have
the same lines, in any order, once the parts that differ between machines and runs (numbers,
units, verdicts, the CPU's name, the noisy flag, why GPU rows were skipped) are blanked. Exit 0 when all agree, 1 with the differences otherwise, 2 for a README
that has no quick start."""
import os
import re
import subprocess
import sys
import tempfile

BLOCK = r"<!-- quickstart:{} -->\s*\n```[a-z]*\n(.*?)\n```"


def blocks(text, kind):
    return [(m.group(1), m.group(2)) for m in re.finditer(BLOCK.format(kind + r"\s*(\S*)"), text, re.S)]


def commands(block):
    return [ln.strip() for ln in block.splitlines() if ln.strip() and not ln.strip().startswith("#")]


NUMBER = re.compile(r"(?<![\w.])-?\d+(\.\d+)?(e[-+]?\d+)?(\s?(ns|us|ms|s|threads|GB/s|TFLOP/s)\b)?")
VERDICT = re.compile(r"\b(faster|slower|same|noisy|better|worse)\b")


def shape(output):
    """The lines of an output with what varies between machines and runs blanked."""
    out = []
    for ln in output.splitlines():
        if ln.startswith("! noisy") or re.match(r"^\S+: device ", ln):
            continue  # the footnote appears only when a row is noisy; the device line names the CPU
        if ln.startswith("skipped ") and "backend=gpu" in ln:
            ln = ln.split(": ", 1)[0]  # why the GPU rows are skipped depends on the build (CUDA or not)
        ln = ln.replace(" !", " ")
        ln = NUMBER.sub("#", VERDICT.sub("V", ln))
        ln = re.sub(r"-{3,}", "---", re.sub(r"\s+", " ", ln)).strip()
        if ln:
            out.append(ln)
    return out


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    readme, build = sys.argv[1], os.path.abspath(sys.argv[2])
    text = open(readme).read()
    runs = blocks(text, "run")
    if len(runs) != 1:
        print(f"quickstart: {readme} needs exactly one `<!-- quickstart:run -->` block, has {len(runs)}", file=sys.stderr)
        return 2
    cmds = commands(runs[0][1])
    outputs = blocks(text, "output")
    if not cmds or not outputs:
        print(f"quickstart: {readme}: no commands or no `<!-- quickstart:output WORD -->` blocks", file=sys.stderr)
        return 2
    failures = []
    with tempfile.TemporaryDirectory(prefix="tg_quickstart_") as d:
        os.makedirs(os.path.join(d, "build"))
        os.symlink(build, os.path.join(d, "build", "cpu-only"))
        got = []
        for c in cmds:
            p = subprocess.run(["bash", "-c", c], cwd=d, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=300)
            got.append((c, p.stdout))
            ok = (0, 1) if "tg-report compare" in c else (0,)
            if p.returncode not in ok:
                failures.append(f"`{c}` exited {p.returncode}:\n{p.stdout}")
            print(f"quickstart: ran `{c}`: exit {p.returncode}")
        for word, expected in outputs:
            match = [out for c, out in got if word in c]
            if not match:
                failures.append(f"no quick-start command contains '{word}' (the output block's name)")
                continue
            # Sorted: a terminal interleaves stdout and stderr by time, a pipe by buffering.
            want, have = sorted(shape(expected)), sorted(shape(match[0]))
            if want != have:
                diff = [f"  README: {w}\n  run:    {h}" for w, h in zip(want + [""] * len(have), have + [""] * len(want))
                        if w != h]
                failures.append(f"the output of the '{word}' command no longer looks like README.md's block:\n"
                                + "\n".join(diff[:8]) + f"\n(the whole run:)\n{match[0]}")
    for f in failures:
        print(f"quickstart: FAIL: {f}", file=sys.stderr)
    if not failures:
        print(f"quickstart: OK: {len(cmds)} commands, {len(outputs)} output blocks as in {readme}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
