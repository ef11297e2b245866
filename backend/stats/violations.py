"""How often Kafka's rules broke: the ``violations`` event table, from the page's own checks.

The rules are the invariant panel's (``backend/view``): a fold over every record of a session
that no DataFrame expression could restate without a second, drifting definition. So this one
table is computed in Python, on the executors, once per log: when the log is ingested
(``backend.stats.ingest`` stores the rows in the table beside the log's lines). The fold needs
the session's records in seq order, so each task reads its logs whole, itself (``read_text``);
which of their lines are records was already decided by Spark's parse (``backend.stats.load``),
and only the numbers of the lines it set aside come along, so the two can never disagree and the
Python side only decodes JSON (no second check of every field). The executors therefore need
this package and its Python (``PYSPARK_PYTHON``; the compose file's worker runs the app's image)
and the replay directory at the driver's path (the compose file's shared volume).
Rows: one per session and broken rule — ``sk``, ``rule``, ``violations``.
"""

from __future__ import annotations

import json
from operator import itemgetter
from pathlib import Path

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


def violations_of(spark, sessions: list[tuple[int, str, list[int]]]):
    """The ``violations`` rows (sk, rule, violations) of ``sessions``: for each log with a valid
    header, its key (``sk``, as ``backend.stats.load.parse_lines`` keys it), its file as Spark
    names it, and the numbers of its lines set aside. Each task reads its logs itself: handing
    every file's whole text from Spark's reader to Python was most of this job's CPU (issue 16)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    from backend.stats.derive import SCHEMAS

    def rows(session):
        sk, file, set_aside = session
        return [(sk, rule, n) for rule, n in session_violations(read_text(file), set_aside).items()]

    context = spark.sparkContext
    slices = max(1, min(len(sessions), 4 * context.defaultParallelism))
    return spark.createDataFrame(context.parallelize(sessions, slices).flatMap(rows),
                                 from_arrow_schema(SCHEMAS["violations"]))


def read_text(file: str) -> str:
    """A log's text as Spark's text reader gives it to Python: UTF-8 with malformed bytes replaced,
    line ends as written. ``file`` is Spark's name for it (``file:/dir/name.jsonl``, escaped as a
    URI when it needs to be); a cluster's executors see the replay directory at the same path."""
    from urllib.parse import unquote, urlparse

    path = Path(unquote(urlparse(file).path))
    if not path.exists():  # a name with a literal "%" that was not escaped
        path = Path(file.removeprefix("file:"))
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        return f.read()
