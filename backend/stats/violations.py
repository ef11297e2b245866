"""How often Kafka's rules broke: the ``violations`` event table, from the page's own checks.

The rules are the invariant panel's (``backend/view``): a fold over every record of a session
that no DataFrame expression could restate without a second, drifting definition. So it runs in
Python, on the executors, inside the parse (``backend.stats.load.parse_lines``): each file is
read whole there anyway, and Spark's parse has just decided which of its lines are records, so
the fold gets exactly those lines' text (decoding them is all the Python side checks) and the
files are read once — not a second time in a job of their own after the parse, which on a
dashboard Run was two of its five seconds (issue 16, docs/performance.md). Its result rides on
the file's first line in the kept lines (``broken``: the rules broken, with their counts), and
``table_of`` turns those into the table. The executors therefore need this package and its
Python (``PYSPARK_PYTHON``; the compose file's worker runs the app's image).
Rows: one per session and broken rule — ``sk``, ``rule``, ``violations``.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from backend.view.page import broken_rules

BROKEN = T.ArrayType(T.StructType([T.StructField("rule", T.StringType()), T.StructField("violations", T.LongType())]))
"""A first line's ``broken``: the rules its session broke, each with its count."""


def broken_in(records: list[str] | None) -> list[tuple[str, int]] | None:
    """The rules broken in one session, from the text of its records (every usable line after the
    header), folded in seq order; None for a file without a valid header."""
    if records is None:
        return None
    decoded = sorted((json.loads(text) for text in records), key=lambda r: r["seq"])
    return sorted(broken_rules(decoded).items())


def fold(records: Column) -> Column:
    """``broken_in`` as a Spark column (a Python UDF, one call per file)."""
    return F.udf(broken_in, BROKEN, useArrow=False)(records)


def table_of(firsts: pa.Table) -> pa.Table:
    """The ``violations`` rows of some files' first lines (``sk`` and ``broken``)."""
    lists = firsts["broken"].combine_chunks()
    rules = pc.list_flatten(lists)
    return pa.table({"sk": pc.take(firsts["sk"], pc.list_parent_indices(lists)), "rule": rules.field("rule"),
                     "violations": rules.field("violations")})
