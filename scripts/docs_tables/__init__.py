"""The table and plot builders of scripts/docs-tables.py, one module per docs/ chapter
(transfer, matmul, launch, train, memory, memory_measured, shapes, pipeline, readme, peers) on
top of common (reports, formatting, markers) and plotting (figure helpers).

TABLES maps a marker NAME to the function that makes its text; PLOTTERS maps a report
to the function that draws its figures. A new table goes in its chapter's TABLES."""
from . import launch, matmul, memory, memory_measured, peers, pipeline, readme, shapes, train, transfer

# The order is the one an unknown-table error lists as "known", and the order plots are drawn in.
TABLES = {**transfer.TABLES, **matmul.TABLES, **launch.TABLES, **train.TABLES, **memory.TABLES,
          **memory_measured.TABLES, **shapes.TABLES, **pipeline.TABLES, **readme.TABLES, **peers.TABLES}
PLOTTERS = {**transfer.PLOTTERS, **matmul.PLOTTERS, **memory.PLOTTERS, **shapes.PLOTTERS, **pipeline.PLOTTERS,
            **launch.PLOTTERS, **train.PLOTTERS}
