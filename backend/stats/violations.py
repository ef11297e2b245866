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

import msgspec

from backend.view.page import broken_rules

_decode = msgspec.json.Decoder().decode


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
    """``[json.loads(line) for line in lines]``, in a third of the time: decoding was two thirds
    of the fold's CPU (issue 16, fifth round: ``json.loads`` ~3 µs a record, the page's fold ~2).
    msgspec reads the same JSON to the same values (big integers stay integers, floats are
    correctly rounded, one value a line: trailing text is an error) and refuses what ``json``
    alone accepts — ``NaN``, ``Infinity``, ``1e400``, a lone surrogate (escaped, or in the text
    itself: not UTF-8, so msgspec cannot read it): then the log's lines go
    through ``json.loads``, so every line gives the same value, or fails the same way, as before
    (``tests/stats/test_fold_rules.py``)."""
    try:
        return [_decode(line) for line in lines]
    except ValueError:  # msgspec.DecodeError, or the UnicodeEncodeError of a lone surrogate
        return [json.loads(line) for line in lines]


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
