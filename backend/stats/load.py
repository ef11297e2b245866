"""Replay logs -> lines -> records, sessions and malformed lines, in one pass over the input.

Each file is read whole (``wholetext``) and split into lines here rather than with Spark's
line-based JSON reader, because two rules of the format are about *positions* in a file: the
session header is the file's **first** line, and a last line without its newline was torn by a
crash of the app (``backend/runtime/replay.py`` writes and flushes one line at a time). A
line-based reader knows neither. A session log is small (a 30-minute sandbox is a few MB), so a
whole file per row is cheap, and files are still spread over tasks.

Every line gets a ``reason`` when it cannot be used, and the job reports them instead of failing:

==================  ===================================================================
``missing_header``  the file's first line is not a valid session header: no line of it counts
``truncated``       the last line has no newline (the app stopped while writing it)
``bad_json``        not a JSON object (also a blank line)
``wrong_type``      valid JSON, but a field does not fit the schema (``"seq": "x"``, ``1.5``)
``missing_field``   ``v``, ``session_id``, ``seq``, ``ts_ms``, ``kind`` or ``subject`` absent
``bad_version``     ``v`` is not 1
``unknown_kind``    ``kind`` is none of the record kinds (e.g. a second header mid-file)
``other_session``   the record names another session than the header (two logs joined)
==================  ===================================================================

Unlike the replay readers (docs/records.md, "Replay logs"), which play a log up to its first
damaged line, the job sets aside each damaged line and keeps the rest: for class-wide counts
one bad line should cost one record, not the remainder of a session.

What is kept after parsing (``kept``) is small: the columns the metrics read (``note`` and all
of ``detail`` but two values are dropped at once), and only the lines that matter — every
file's first line (its header, or the reason it has none), the malformed lines, and the records
some metric reads (``backend.stats.events.relevant``). The input counts (lines, records,
sessions) are derived from the first lines' line counts and the malformed lines, so no pass
over all records is needed after the parse.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from backend.core.records import KINDS
from backend.stats.events import relevant
from backend.stats.schema import CORRUPT, JSON_OPTIONS, LINE_SCHEMA, REQUIRED_RECORD_FIELDS

REASONS = ("missing_header", "truncated", "bad_json", "wrong_type", "missing_field", "bad_version", "unknown_kind",
           "other_session")

# The record columns the metrics read; everything else is dropped before caching.
RECORD_COLUMNS = ("kind", "seq", "ts_ms", "from_state", "to_state", "op", "outcome", "election", "topic",
                  "partition", "leader", "controller_epoch", "count", "acks", "step", "student", "answer", "correct",
                  "question", "misconception")
# Header columns, kept on the header row (line 0) only.
HEADER_COLUMNS = ("session_id", "mode", "lesson_id", "class_id", "started_ms")
EXCERPT_CHARS = 200


def read_files(spark: SparkSession, replays: str) -> DataFrame:
    """One row per ``*.jsonl`` file directly in ``replays``: path, size, whole text."""
    return (spark.read.option("pathGlobFilter", "*.jsonl").text(replays, wholetext=True)
            .select(F.col("_metadata.file_path").alias("file"), F.col("_metadata.file_size").alias("file_size"),
                    F.col("value")))


def parse_lines(files: DataFrame) -> DataFrame:
    """Files -> one row per line with its ``reason`` (null: a usable line) and the narrow columns.

    Columns: ``sk`` (a key per file), ``line`` (0-based), ``reason``, the header columns on line 0
    of a file whose header is valid, the record columns, ``subject`` (zk and lesson records
    only), ``source`` (fault records: ``detail.source``), ``completed`` (a lesson's ``finished``
    record: ``detail.completed``), and ``file``/``excerpt`` on malformed lines and line 0."""
    text = F.col("value")
    per_file = files.select(
        F.xxhash64("file").alias("sk"), "file", "file_size",
        F.split(text, "\n").alias("lines"),
        text.endswith("\n").alias("complete"),
    )
    per_file = per_file.withColumn(
        "n_lines",
        F.when((F.size("lines") == 1) & (F.element_at("lines", 1) == F.lit("")), 0)
        .when(F.col("complete"), F.size("lines") - 1)
        .otherwise(F.size("lines")),
    )
    header = F.from_json(F.element_at("lines", 1), LINE_SCHEMA, JSON_OPTIONS)
    per_file = per_file.withColumn("header", header).withColumn("header_ok", _header_ok(F.col("header")))

    exploded = per_file.select(
        "sk", "file", "file_size", "complete", "n_lines", "header_ok", F.col("header.session_id").alias("header_sid"),
        F.posexplode("lines").alias("line", "text"),
    ).where(F.col("line") < F.col("n_lines"))
    parsed = exploded.withColumn("r", F.from_json("text", LINE_SCHEMA, JSON_OPTIONS))
    reason = _reason(F.col("r"), F.col("text"), F.col("line"), F.col("n_lines"), F.col("complete"), F.col("header_ok"),
                     F.col("header_sid"))
    parsed = parsed.withColumn("reason", reason)

    r = F.col("r")
    is_header_row = (F.col("line") == 0) & F.col("header_ok")
    kind = r.getField("kind")
    detail = r.getField("detail")
    columns = [
        "sk", "line", "reason",
        F.when(F.col("reason").isNotNull() | (F.col("line") == 0), F.col("file")).alias("file"),
        F.when(F.col("line") == 0, F.col("file_size")).alias("file_size"),
        F.when(F.col("line") == 0, F.col("n_lines")).alias("n_lines"),
        F.when(F.col("line") == 0, F.col("header_ok")).alias("header_ok"),
        F.when(F.col("reason").isNotNull(), F.substring("text", 1, EXCERPT_CHARS)).alias("excerpt"),
        *[F.when(is_header_row, r.getField(c)).alias(c) for c in HEADER_COLUMNS],
        F.when(is_header_row, r.getField("student")).alias("session_student"),
        *[r.getField(c).alias(c) for c in RECORD_COLUMNS],
        F.when(kind.isin("zk", "lesson"), r.getField("subject")).alias("subject"),
        F.when(kind == "fault", F.get_json_object(detail, "$.source")).alias("source"),
        F.when((kind == "lesson") & (r.getField("to_state") == "finished"),
               F.get_json_object(detail, "$.completed") == "true").alias("completed"),
    ]
    return parsed.select(*columns)


def kept_lines(lines: DataFrame) -> DataFrame:
    """The lines worth caching: first lines, malformed lines, records a metric reads."""
    return lines.where(F.col("reason").isNotNull() | (F.col("line") == 0) | relevant())


def drop_duplicate_copies(kept: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(kept lines without duplicate copies, the ``sk`` of each copy dropped).

    One session may be on disk twice: an exported log imported again (``<id>.imported.jsonl``),
    or a shorter copy of it. Counting both would count its failovers, answers and losses twice,
    so of every session only the copy with the most lines stays (ties: the first file name).
    Files without a valid header are not sessions and are never dropped here."""
    from pyspark.sql import Window

    firsts = kept.where((F.col("line") == 0) & F.col("header_ok")).select("sk", "session_id", "n_lines", "file")
    best_first = Window.partitionBy("session_id").orderBy(F.col("n_lines").desc(), F.col("file"))
    copies = firsts.withColumn("rank", F.row_number().over(best_first)).where(F.col("rank") > 1).select("sk")
    return kept.join(F.broadcast(copies), "sk", "left_anti"), copies


def input_counts(kept: DataFrame) -> dict:
    """Files, bytes, lines, records, sessions by mode, malformed lines by reason — from one small
    aggregation over the kept lines (this is also the action that fills their cache)."""
    groups = (kept.where(F.col("reason").isNotNull() | (F.col("line") == 0))
              .groupBy("reason", "mode", (F.col("line") == 0).alias("first"))
              .agg(F.count(F.lit(1)).alias("n"), F.sum("file_size").alias("bytes"), F.sum("n_lines").alias("lines"))
              .collect())
    out = {"files_read": 0, "bytes_read": 0, "lines": 0, "sessions": 0, "sessions_by_mode": {},
           "malformed_by_reason": {}}
    for g in groups:
        if g.first:
            out["files_read"] += g.n
            out["bytes_read"] += g.bytes or 0
            out["lines"] += g.lines or 0
        if g.reason is not None:
            out["malformed_by_reason"][g.reason] = out["malformed_by_reason"].get(g.reason, 0) + g.n
        elif g.first:
            out["sessions"] += g.n
            out["sessions_by_mode"][g.mode] = out["sessions_by_mode"].get(g.mode, 0) + g.n
    out["records"] = out["lines"] - out["sessions"] - sum(out["malformed_by_reason"].values())
    return out


def records_of(lines: DataFrame) -> DataFrame:
    """The usable records (header rows and malformed lines left out)."""
    return lines.where(F.col("reason").isNull() & (F.col("line") > 0)).drop(
        "reason", "file", "file_size", "n_lines", "header_ok", "excerpt", *HEADER_COLUMNS, "session_student")


def sessions_of(lines: DataFrame) -> DataFrame:
    """One row per file with a valid header: its key, identity, dimensions and date (UTC)."""
    return (lines.where((F.col("line") == 0) & F.col("header_ok"))
            .select("sk", "session_id", "mode", "lesson_id", "class_id",
                    F.col("session_student").alias("student"), "started_ms",
                    F.date_format(F.timestamp_millis("started_ms"), "yyyy-MM-dd").alias("date"),
                    "file", F.col("n_lines").alias("lines")))


def malformed_of(lines: DataFrame) -> DataFrame:
    """Lines set aside: file, 1-based line number, reason, the first 200 characters."""
    return (lines.where(F.col("reason").isNotNull())
            .select("file", (F.col("line") + 1).alias("line"), "reason", "excerpt"))


def _header_ok(h: Column) -> Column:
    checks = (h.isNotNull() & h.getField(CORRUPT).isNull() & (h.getField("kind") == "session")
              & (h.getField("v") == 1) & h.getField("session_id").isNotNull() & h.getField("mode").isNotNull()
              & h.getField("started_ms").isNotNull())
    # A header that is the file's only line and has no newline was torn while being written.
    torn = (F.col("n_lines") == 1) & ~F.col("complete")
    return F.coalesce(checks & ~torn & (F.col("n_lines") > 0), F.lit(False))


def _reason(r: Column, text: Column, line: Column, n_lines: Column, complete: Column, header_ok: Column,
            header_sid: Column) -> Column:
    missing = None
    for name in REQUIRED_RECORD_FIELDS:
        test = r.getField(name).isNull()
        missing = test if missing is None else (missing | test)
    return (F.when(~header_ok, F.lit("missing_header"))
            .when(line == 0, F.lit(None))
            .when(~complete & (line == n_lines - 1), F.lit("truncated"))
            .when(F.trim(text) == "", F.lit("bad_json"))
            .when(r.getField(CORRUPT).isNotNull(),
                  F.when(F.json_object_keys(text).isNull(), F.lit("bad_json")).otherwise(F.lit("wrong_type")))
            .when(missing, F.lit("missing_field"))
            .when(r.getField("v") != 1, F.lit("bad_version"))
            .when(~r.getField("kind").isin(*KINDS), F.lit("unknown_kind"))
            .when(r.getField("session_id") != header_sid, F.lit("other_session"))
            .otherwise(F.lit(None)).cast("string"))
