"""Replay logs -> the lines worth keeping, each line parsed once, in one pass over the files.

Two rules of the format are about *positions* in a file: the session header is the file's
**first** line, and a last line without its newline was torn by a crash of the app
(``backend/runtime/replay.py`` writes and flushes one line at a time). Each file is therefore
read as one row (``wholetext``) and split into its lines here, so a line's number, its file's
header and whether the file ends with a newline are at hand in the same row, with no second
pass. A replay log is small (a 30-minute sandbox is a few MB), files are spread over tasks.

Spark's line reader was tried first (issue 16): it knows neither position, so it needs a
second scan of the text (per split: lines, first line, bytes) joined back to every line, and
on the benchmark's data it cost twice the CPU of this pass (docs/performance.md). What made the
old whole-file job slow was elsewhere: every line was parsed with every field (``note``,
``detail`` copied), and the keep filter, pushed down by the optimizer, copied the parse once
per field it read. Here each line is parsed inside the explode, once, with ``PARSE_SCHEMA``.

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

What is kept (``kept_lines``) is small: every file's first line (its header's columns, its line
count and size: the ingested table's manifest is read from these), the malformed lines, and of
the records only those some metric reads (``backend.stats.events.relevant``), with only the
columns the metrics read (``detail`` is never parsed as a whole: its two values come from the
line's text, for the few lines that have them). ``backend.stats.ingest`` writes them.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from backend.core.records import KINDS
from backend.stats.events import relevant
from backend.stats.schema import CORRUPT, JSON_OPTIONS, LINE_SCHEMA, RECORD_TYPES, REQUIRED_RECORD_FIELDS

REASONS = ("missing_header", "truncated", "bad_json", "wrong_type", "missing_field", "bad_version", "unknown_kind",
           "other_session")

# The record columns the metrics read.
RECORD_COLUMNS = ("kind", "seq", "ts_ms", "from_state", "to_state", "op", "outcome", "election", "topic",
                  "partition", "leader", "controller_epoch", "count", "acks", "step", "student", "answer", "correct",
                  "question", "misconception")
HEADER_COLUMNS = ("session_id", "mode", "lesson_id", "class_id", "student", "started_ms")
EXCERPT_CHARS = 200

# A line is parsed with every field that has a type to check (a wrong type makes the line
# `wrong_type`, whatever the field) and only the string fields some rule or metric reads: a string
# accepts any JSON value, so leaving `note`, `cause`, `detail` and the header's `cluster` out
# changes no reason, and Spark then skips them instead of copying their text.
_READ_STRINGS = {"kind", "subject", "session_id", *RECORD_COLUMNS, *HEADER_COLUMNS}
PARSE_SCHEMA = T.StructType([f for f in LINE_SCHEMA.fields
                             if not isinstance(f.dataType, T.StringType) or f.name in _READ_STRINGS or f.name == CORRUPT])


FILE_COLUMNS = (("file_size", T.LongType()), ("n_lines", T.IntegerType()), ("header_ok", T.BooleanType()),
                *[(c, T.LongType() if c == "started_ms" else T.StringType()) for c in HEADER_COLUMNS if c != "student"],
                ("session_student", T.StringType()))
"""Columns of a file's first line (null on every other line): the file and its header."""

KEPT_SCHEMA = T.StructType(
    [T.StructField("sk", T.LongType()), T.StructField("line", T.IntegerType()), T.StructField("reason", T.StringType()),
     T.StructField("file", T.StringType()), T.StructField("excerpt", T.StringType())]
    + [T.StructField(c, RECORD_TYPES[c]) for c in RECORD_COLUMNS]
    + [T.StructField("subject", T.StringType()), T.StructField("source", T.StringType()),
       T.StructField("completed", T.BooleanType())]
    + [T.StructField(c, t) for c, t in FILE_COLUMNS]
    + [T.StructField("date", T.StringType()), T.StructField("batch", T.IntegerType())])
"""A kept line as the ingested table stores it (``date`` and ``batch`` are its partition columns)."""


def read_files(spark: SparkSession, paths: list[str] | str) -> DataFrame:
    """One row per file (the given files, or the ``*.jsonl`` files of a directory): path, size, text."""
    reader = spark.read.option("pathGlobFilter", "*.jsonl") if isinstance(paths, str) else spark.read
    return (reader.text(paths, wholetext=True)
            .select(F.col("_metadata.file_path").alias("file"), F.col("_metadata.file_size").alias("file_size"),
                    F.col("value")))


def parse_lines(files: DataFrame, batch: int) -> DataFrame:
    """Every line with its number (``line``, 0-based), ``reason`` (null: a usable line), the
    session key ``sk`` (the file as read in this batch), ``date`` (its header's day, UTC), and
    the narrow columns: the record columns, ``subject`` (zk and lesson records only), ``source``
    (fault records: ``detail.source``), ``completed`` (a lesson's ``finished`` record:
    ``detail.completed``), ``file``/``excerpt`` on malformed lines, ``FILE_COLUMNS`` on line 0."""
    lines = F.split("value", "\n", -1)
    per_file = files.select("file", "file_size", lines.alias("lines"), F.col("value").endswith("\n").alias("complete"))
    per_file = per_file.withColumn(
        "n_lines", F.when((F.size("lines") == 1) & (F.element_at("lines", 1) == ""), 0)
        .when(F.col("complete"), F.size("lines") - 1).otherwise(F.size("lines")))
    h = F.from_json(F.element_at("lines", 1), PARSE_SCHEMA, JSON_OPTIONS)
    per_file = per_file.withColumn("h", h).withColumn("header_ok", _header_ok(F.col("h")))
    # Parsed inside the explode: a parse in a projection above it would be copied by the
    # optimizer into the pushed-down keep filter, once per field that filter reads.
    parsed = F.transform("lines", lambda text: F.struct(text.alias("text"), F.from_json(text, PARSE_SCHEMA, JSON_OPTIONS)
                                                        .alias("r")))
    exploded = per_file.select(
        F.xxhash64("file", F.lit(batch)).alias("sk"), "file", "file_size", "complete", "n_lines", "header_ok", "h",
        F.when(F.col("header_ok"), F.date_format(F.timestamp_millis(F.col("h.started_ms")), "yyyy-MM-dd")).alias("date"),
        F.posexplode(parsed).alias("line", "p"),
    ).where(F.col("line") < F.col("n_lines"))
    r, text, line = F.col("p.r"), F.col("p.text"), F.col("line")
    reason = _reason(r, text, line, F.col("n_lines"), F.col("complete"), F.col("header_ok"), F.col("h.session_id"))
    with_reason = exploded.withColumn("reason", reason)
    bad, first, kind = F.col("reason").isNotNull(), line == 0, r.getField("kind")
    header = F.col("header_ok") & first
    return with_reason.select(
        "sk", line.cast("int").alias("line"), "reason",
        F.when(bad | first, F.col("file")).alias("file"), F.when(bad, F.substring(text, 1, EXCERPT_CHARS)).alias("excerpt"),
        *[r.getField(c).alias(c) for c in RECORD_COLUMNS],
        F.when(kind.isin("zk", "lesson"), r.getField("subject")).alias("subject"),
        F.when(kind == "fault", F.get_json_object(text, "$.detail.source")).alias("source"),
        F.when((kind == "lesson") & (r.getField("to_state") == "finished"),
               F.get_json_object(text, "$.detail.completed") == "true").alias("completed"),
        *[F.when(first, F.col(c)).alias(c) for c in ("file_size", "n_lines", "header_ok")],
        *[F.when(header, F.col("h").getField(c)).alias(c) for c in HEADER_COLUMNS if c != "student"],
        F.when(header, F.col("h.student")).alias("session_student"),
        "date",
    )


def kept_lines(lines: DataFrame) -> DataFrame:
    """The lines worth keeping: first lines, malformed lines and the records a metric reads."""
    return lines.where(F.col("reason").isNotNull() | (F.col("line") == 0) | relevant())


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
