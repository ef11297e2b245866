"""How often Kafka's rules broke: the ``violations`` event table, from the page's own checks.

The rules are the invariant panel's (``backend/view``): a fold over every record of a session
that no DataFrame expression could restate without a second, drifting definition. So this one
table is computed in Python, on the executors, once per log: when the log is ingested
(``backend.stats.ingest`` stores the rows in the table beside the log's lines). The fold needs
the session's records in seq order, so each file is read whole (``read_files``). Which of its
lines are records is Spark's parse's to say (``backend.stats.load``), so the two can never
disagree and the Python side only decodes JSON (no second check of every field); but to run
beside the parse rather than after it (issue 16: a dashboard Run waited two seconds for it), the
fold takes every line after the header as a record, and ``settle`` keeps its result only for the
logs the parse found whole — the few others are folded again in the driver, told by the parse
which lines were set aside. The executors therefore need this package
and its Python (``PYSPARK_PYTHON``; the compose file's worker runs the app's image).
Rows: one per session and broken rule — ``sk``, ``rule``, ``violations``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from backend.view.page import broken_rules


def session_violations(text: str, set_aside: list[int]) -> dict[str, int]:
    """The rules broken in one log with a valid header: its records are every line after the
    first but those set aside (0-based numbers), decoded and folded in seq order."""
    lines = text.split("\n")
    n_lines = len(lines) - 1 if text.endswith("\n") else len(lines)
    skip = set(set_aside)
    records = [json.loads(lines[i]) for i in range(1, n_lines) if i not in skip]
    records.sort(key=lambda r: r["seq"])
    return broken_rules(records)


def violations_of(files, batch: int):
    """``files`` (``backend.stats.load.read_files``) -> sk, rule, violations, folded before the
    parse has said which lines are records (so that the two jobs can run side by side): every
    line after the first is taken as one. ``settle`` keeps these rows only for the logs the parse
    found whole; a log that cannot be folded this way gets one row with ``rule`` null."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    from backend.stats.derive import SCHEMAS

    def rows(row):
        try:
            return [(row.sk, rule, n) for rule, n in session_violations(row.value, []).items()]
        except Exception:  # any damage at all: the parse sets the line aside, and ``settle`` folds again
            return [(row.sk, None, None)]

    keyed = files.select(F.xxhash64("file", F.lit(batch)).alias("sk"), "value")
    return files.sparkSession.createDataFrame(keyed.rdd.flatMap(rows), from_arrow_schema(SCHEMAS["violations"]))


def settle(guessed: pa.Table, logs: dict[int, tuple[Path, list[int]]]) -> pa.Table:
    """The ``violations`` rows of the logs with a valid header (``logs``: key -> file, numbers of
    the lines the parse set aside): ``violations_of``'s rows for each log with nothing set aside
    (its records are then every line after the first, as that fold assumed); each other log (a
    damaged line, a torn end: one in thousands) folded again here, without the lines set aside."""
    unsure = set(guessed.filter(pc.field("rule").is_null())["sk"].to_pylist())
    again = [sk for sk, (_, aside) in logs.items() if aside or sk in unsure]
    whole = [sk for sk in logs if sk not in set(again)]
    redone = [(sk, rule, n) for sk in again
              for rule, n in session_violations(logs[sk][0].read_text(encoding="utf-8"), logs[sk][1]).items()]
    rows = guessed.filter(pc.is_in(guessed["sk"], pa.array(whole, pa.int64())))
    schema = rows.schema
    return pa.concat_tables([rows, pa.Table.from_pylist([dict(zip(schema.names, r)) for r in redone], schema=schema)])
