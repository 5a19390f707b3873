#!/usr/bin/env python3
"""The prose check's caption rule (tools/docs-tables/docs_tables/prose.py): a measured-looking number
typed into a string literal of the generator is found, one in a docstring or computed by an
f-string is not."""
import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools" / "docs-tables"))
from docs_tables import prose  # noqa: E402

MODULE = '''
"""A module docstring may say 5 us."""
def caption(v):
    """So may a function's: 2.5x."""
    return "The kernel's tiles come in 3.88 waves, " + f"{v} us computed, " + "and 12 GB/s typed."
'''

with tempfile.TemporaryDirectory() as d:
    (pathlib.Path(d) / "chapter.py").write_text(MODULE)
    found = sorted(tok for _, _, tok in prose.caption_literals(pathlib.Path(d)))
expected = ["12 GB/s", "3.88 waves"]
if found != expected:
    print(f"FAILED: found {found}, expected {expected}")
    sys.exit(1)
print("1 passed, 0 failed")
