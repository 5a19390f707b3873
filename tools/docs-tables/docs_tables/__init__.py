"""The table and plot builders of tools/docs-tables, one module per docs/ chapter
(transfer, matmul, launch, train, memory, memory_measured, shapes, shapes_cnn, pipeline, regimes, classic, index, peers,
compiler, reliability, precision, precision_speed, cnn, timelines, lm) on top of common (reports, formatting, markers) and plotting (figure helpers).

TABLES maps a marker NAME to the function that makes its text; VALUES maps a value NAME
(chapter.key) to the function that makes one number of the prose; PLOTTERS maps a report
to the function that draws its figures. A new table goes in its chapter's TABLES, a new
value in its VALUES; prose.py checks that no figure of the prose is written by hand."""
from . import (classic, cnn, compiler, index, launch, lm, matmul, memory, memory_measured, peers, pipeline, precision,
               precision_speed, regimes, reliability, shapes, shapes_cnn, timelines, train, transfer)

CHAPTERS = (transfer, matmul, launch, train, memory, memory_measured, shapes, shapes_cnn, pipeline, regimes, classic, index,
            peers, compiler, reliability, precision, precision_speed, cnn, timelines, lm)

# The order is the one an unknown-table error lists as "known", and the order plots are drawn in.
TABLES = {k: v for c in CHAPTERS for k, v in c.TABLES.items()}
VALUES = {k: v for c in CHAPTERS for k, v in getattr(c, "VALUES", {}).items()}
PLOTTERS = {k: v for c in CHAPTERS for k, v in c.PLOTTERS.items()}
