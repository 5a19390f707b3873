#!/usr/bin/env python3
"""Fails when a PNG under the given folders is wider than the screen a reader looks at it on.

    figure_width_check.py [--max PX] DIR [DIR ...]

A figure wider than --max (default 2000 px) is shrunk by the browser or the viewer until its
labels cannot be read, so a figure kind that grows with the number of rows must cap or filter
them instead. Reads the width from the PNG header (no imaging library). Exit 0 when every PNG
fits, 1 naming each one that does not, 2 when a folder holds no PNG (nothing was checked)."""
import argparse
import struct
import sys
from pathlib import Path


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        raise ValueError(f"{path}: not a PNG")
    return struct.unpack(">II", head[16:24])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--max", type=int, default=2000)
    a = ap.parse_args()
    too_wide, n = [], 0
    for d in a.dirs:
        pngs = sorted(Path(d).rglob("*.png"))
        if not pngs:
            print(f"figure_width_check: {d}: no PNG to check", file=sys.stderr)
            return 2
        for p in pngs:
            w, h = png_size(p)
            n += 1
            if w > a.max:
                too_wide.append(f"{p}: {w} x {h} px, wider than {a.max}")
    for t in too_wide:
        print(f"figure_width_check: {t}", file=sys.stderr)
    print(f"figure_width_check: {n - len(too_wide)} of {n} figures at most {a.max} px wide")
    return 1 if too_wide else 0


if __name__ == "__main__":
    sys.exit(main())
