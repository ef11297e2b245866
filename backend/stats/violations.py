"""How often Kafka's rules broke: the ``violations`` event table, from the page's own checks.

The rules are the invariant panel's (``backend/view``): a fold over every record of a session
that no DataFrame expression could restate without a second, drifting definition. So this one
table is computed in Python, on the executors, once per log: when the log is ingested
(``backend.stats.ingest`` stores the rows in the table beside the log's lines). The fold needs
the session's records in seq order, so each file is read whole (``read_files``); which of its
lines are records was already decided by Spark's parse (``backend.stats.load``), and only the
numbers of the lines it set aside come along, so the two can never disagree and the Python side
only decodes JSON (no second check of every field). The executors therefore need this package
and its Python (``PYSPARK_PYTHON``; the compose file's worker runs the app's image).
Rows: one per session and broken rule — ``sk``, ``rule``, ``violations``.
"""

from __future__ import annotations

import json
from operator import itemgetter

from backend.view.page import broken_rules

_raw_decode = json.JSONDecoder().raw_decode


def session_violations(text: str, set_aside: list[int]) -> dict[str, int]:
    """The rules broken in one log with a valid header: its records are every line after the
    first but those set aside (0-based numbers), decoded and folded in seq order."""
    lines = text.split("\n")
    n_lines = len(lines) - 1 if text.endswith("\n") else len(lines)
    skip = set(set_aside)
    records = decode_lines([lines[i] for i in range(1, n_lines) if i not in skip])
    records.sort(key=itemgetter("seq"))
    return broken_rules(records)


def decode_lines(lines: list[str]) -> list:
    """``[json.loads(line) for line in lines]``, a third cheaper: decoding was most of the fold's
    CPU (issue 16, fifth round), and ``json.loads`` spends a third of it in Python around the C
    scanner (``decode``, two whitespace matches). ``raw_decode`` calls the scanner directly; a
    line it does not consume whole (whitespace around it, or not one JSON value) goes through
    ``json.loads``, so every line gives the same value, or fails the same way, as before."""
    records = []
    for line in lines:
        try:
            record, end = _raw_decode(line)
        except ValueError:
            end = -1
        records.append(record if end == len(line) else json.loads(line))
    return records


def violations_of(files, batch: int, sessions: dict[int, list[int]]):
    """``files`` (``backend.stats.load.read_files``) -> sk, rule, violations. ``sessions``: the
    key (``sk``, as ``backend.stats.load.parse_lines`` keys the files read in ``batch``) of each
    log with a valid header -> the numbers of its lines set aside."""
    from pyspark.sql import functions as F

    from pyspark.sql.pandas.types import from_arrow_schema

    from backend.stats.derive import SCHEMAS

    spark = files.sparkSession
    shared = spark.sparkContext.broadcast(sessions)

    def rows(row):
        set_aside = shared.value.get(row.sk)
        if set_aside is None:
            return []
        return [(row.sk, rule, n) for rule, n in session_violations(row.value, set_aside).items()]

    keyed = files.select(F.xxhash64("file", F.lit(batch)).alias("sk"), "value")
    return spark.createDataFrame(keyed.rdd.flatMap(rows), from_arrow_schema(SCHEMAS["violations"]))
