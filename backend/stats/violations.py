"""How often Kafka's rules broke: the ``violations`` event table, from the page's own checks.

The rules are the invariant panel's (``backend/view``): a fold over every record of a session
that no DataFrame expression could restate without a second, drifting definition. So this one
table is computed in Python, once per log: when the log is ingested (``backend.stats.ingest``
stores the rows in the table beside the log's lines). The fold needs the session's records in
seq order, so each file is read whole; which of its lines are records was already decided by
Spark's parse (``backend.stats.load``), and only the parse's line count and the numbers of the
lines it set aside come along, so the two can never disagree and the Python side only decodes
JSON (no second check of every field).

Where it runs (``backend.stats.ingest.folds_in_driver``; ``fold_logs`` or ``violations_of``, the
same function per log): in local mode, and for a small batch on a cluster, in the driver, which
only waits while Spark parses and so folds the batch ahead of the parse's word (``fold_ahead``)
— a Spark job would spend more than the fold itself on reading each file in the JVM, pickling
its text to a Python worker and scheduling (issue 16: 0.66 CPU-s in the driver against 3.2
CPU-s as a job, for 200,000 records). A semester's batch on a cluster is folded on the
executors, whose cores then pay for that overhead; they need this package and its Python
(``PYSPARK_PYTHON``; the compose file's worker runs the app's image).
Rows: one per session and broken rule — ``sk``, ``rule``, ``violations``.
"""

from __future__ import annotations

import json
import threading
from operator import itemgetter
from pathlib import Path
from typing import Iterable

import msgspec

from backend.view.page import broken_rules

_decode = msgspec.json.Decoder().decode


def session_violations(text: str, set_aside: list[int], n_lines: int | None = None) -> dict[str, int]:
    """The rules broken in one log with a valid header: its records are every line after the
    first but those set aside (0-based numbers), decoded and folded in seq order. ``n_lines``,
    the parse's count, bounds the lines read: a session still being recorded may have grown
    since the parse, and its new lines are read when the next run ingests the log again."""
    lines = text.split("\n")
    in_text = count_lines(text)
    n_lines = in_text if n_lines is None else min(n_lines, in_text)
    skip = set(set_aside)
    records = decode_lines([lines[i] for i in range(1, n_lines) if i not in skip])
    records.sort(key=itemgetter("seq"))
    return broken_rules(records)


def count_lines(text: str) -> int:
    """A log's lines as the parse counts them (``backend.stats.load``): an unterminated last
    line counts, an empty file has none."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


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


Log = tuple[str, int, list[int]]
"""What the fold is told of a log with a valid header: its name, the parse's count of its lines
and the numbers of the lines the parse set aside."""

Ahead = dict[str, tuple[int, list[int], "dict[str, int] | None"]]
"""``fold_ahead``'s results: a log's name -> the lines it counted, the lines it left out, the
verdicts (None: the fold failed, so the log waits for the parse's word)."""


def fold_ahead(replays: Path, names: Iterable[str], stop: threading.Event) -> Ahead:
    """While Spark parses a batch (the driver only waits for it then), fold each log as if
    only a torn last line were set aside: what the parse decides for every log but a damaged
    one. ``fold_logs`` takes a result only where the parse agrees — the same count of lines and
    the same lines set aside — and folds the others again with the parse's word, so the parse
    still decides (a damaged log, or one that grew in between, is folded twice). Stops early
    when ``stop`` is set (the parse failed)."""
    out: Ahead = {}
    for name in names:
        if stop.is_set():
            break
        text = _read(replays / name)
        if text is None:
            continue
        n_lines = count_lines(text)
        torn = [n_lines - 1] if text and not text.endswith("\n") else []
        try:
            out[name] = (n_lines, torn, session_violations(text, torn, n_lines))
        except Exception:  # a line the parse will set aside, or that fails the same way after it
            out[name] = (n_lines, torn, None)
    return out


def fold_logs(replays: Path, logs: dict[int, Log], ahead: Ahead | None = None):
    """In the driver: ``logs`` (``sk`` -> ``Log``, the logs in ``replays``) -> the ``violations``
    rows as an Arrow table, taking ``ahead``'s verdict of a log where the parse agrees with it.
    A log removed since the parse gives no rows (the next run forgets it)."""
    import pyarrow as pa

    from backend.stats.derive import SCHEMAS

    ahead = ahead or {}
    out: dict[str, list] = {"sk": [], "rule": [], "violations": []}
    for sk, (name, n_lines, set_aside) in logs.items():
        counted, left_out, verdicts = ahead.get(name, (None, None, None))
        if verdicts is None or counted != n_lines or left_out != sorted(set_aside):
            text = _read(replays / name)
            if text is None:
                continue
            verdicts = session_violations(text, set_aside, n_lines)
        for rule, n in verdicts.items():
            out["sk"].append(sk)
            out["rule"].append(rule)
            out["violations"].append(n)
    return pa.table(out, schema=SCHEMAS["violations"])


def _read(path: Path) -> str | None:
    """A log's text as Spark's text reader decodes it (UTF-8, a bad byte replaced; only ``\n``
    ends a line: no newline translation); None if it was removed."""
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None


def violations_of(files, batch: int, logs: dict[int, Log]):
    """On the executors: ``files`` (``backend.stats.load.read_files``) -> sk, rule, violations.
    ``logs``: the key (``sk``, as ``backend.stats.load.kept_lines`` keys the files read in
    ``batch``) of each log with a valid header -> its ``Log``."""
    from pyspark.sql import functions as F

    from pyspark.sql.pandas.types import from_arrow_schema

    from backend.stats.derive import SCHEMAS

    spark = files.sparkSession
    shared = spark.sparkContext.broadcast(logs)

    def rows(row):
        log = shared.value.get(row.sk)
        if log is None:
            return []
        _, n_lines, set_aside = log
        return [(row.sk, rule, n) for rule, n in session_violations(row.value, set_aside, n_lines).items()]

    keyed = files.select(F.xxhash64("file", F.lit(batch)).alias("sk"), "value")
    return spark.createDataFrame(keyed.rdd.flatMap(rows), from_arrow_schema(SCHEMAS["violations"]))
