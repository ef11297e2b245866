"""Replay logs -> the lines worth keeping, with Spark's line-based reader: each line parsed once.

Two rules of the format are about *positions* in a file: the session header is the file's
**first** line, and a last line without its newline was torn by a crash of the app
(``backend/runtime/replay.py`` writes and flushes one line at a time). The line reader knows
neither, so the positions are worked out from what it does know — each line's file, the start
of its split, and ``monotonically_increasing_id`` (consecutive within a split) — in two scans
of the same files, of which only the second parses every line:

1. ``split_layout``: per split, its lines, first and last id, its first line's text, and bytes
   (``octet_length + 1``): a file whose bytes add up to one more than its size has no newline at
   the end (torn). ``file_info`` parses the first line of every file as its session header.
2. ``parse_lines``: every line, parsed with ``PARSE_SCHEMA``, gets its line number, its file's
   header and the ``reason`` it cannot be used, all from the small per-split table (broadcast).

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

What is kept (``kept_lines``) is small: the malformed lines, and of the records only those some
metric reads (``backend.stats.events.relevant``), with only the columns the metrics read
(``detail`` is never parsed as a whole: its two values come from the line's text, for the few
lines that have them). ``backend.stats.ingest`` writes the kept lines into the ingested table.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from backend.core.records import KINDS
from backend.stats.events import relevant
from backend.stats.schema import CORRUPT, JSON_OPTIONS, LINE_SCHEMA, RECORD_TYPES, REQUIRED_RECORD_FIELDS

REASONS = ("missing_header", "truncated", "bad_json", "wrong_type", "missing_field", "bad_version", "unknown_kind",
           "other_session")

# The record columns the metrics read.
RECORD_COLUMNS = ("kind", "seq", "ts_ms", "from_state", "to_state", "op", "outcome", "election", "topic",
                  "partition", "leader", "controller_epoch", "count", "acks", "step", "student", "answer", "correct")
HEADER_COLUMNS = ("session_id", "mode", "lesson_id", "class_id", "student", "started_ms")
EXCERPT_CHARS = 200

# A line is parsed with every field that has a type to check (a wrong type makes the line
# `wrong_type`, whatever the field) and only the string fields some rule or metric reads: a string
# accepts any JSON value, so leaving `note`, `cause`, `detail` and the header's `cluster` out
# changes no reason, and Spark then skips them instead of copying their text.
_READ_STRINGS = {"kind", "subject", "session_id", *RECORD_COLUMNS, *HEADER_COLUMNS}
PARSE_SCHEMA = T.StructType([f for f in LINE_SCHEMA.fields
                             if not isinstance(f.dataType, T.StringType) or f.name in _READ_STRINGS or f.name == CORRUPT])


KEPT_SCHEMA = T.StructType(
    [T.StructField("sk", T.LongType()), T.StructField("line", T.IntegerType()), T.StructField("reason", T.StringType()),
     T.StructField("file", T.StringType()), T.StructField("excerpt", T.StringType())]
    + [T.StructField(c, RECORD_TYPES[c]) for c in RECORD_COLUMNS]
    + [T.StructField("subject", T.StringType()), T.StructField("source", T.StringType()),
       T.StructField("completed", T.BooleanType()), T.StructField("date", T.StringType()),
       T.StructField("batch", T.IntegerType())])
"""A kept line as the ingested table stores it (``date`` and ``batch`` are its partition columns)."""


def read_lines(spark: SparkSession, paths: list[str] | str) -> DataFrame:
    """One row per line of the given files, or of the ``*.jsonl`` files in a directory (``\n``
    ends a line, nothing else): file, file_size, block (where its split starts), mid
    (consecutive within a split) and text."""
    reader = spark.read.option("lineSep", "\n")
    if isinstance(paths, str):
        reader = reader.option("pathGlobFilter", "*.jsonl")
    return (reader.text(paths)
            .select(F.col("_metadata.file_path").alias("file"), F.col("_metadata.file_size").alias("file_size"),
                    F.col("_metadata.file_block_start").alias("block"), F.monotonically_increasing_id().alias("mid"),
                    F.col("value").alias("text")))


def split_layout(lines: DataFrame) -> DataFrame:
    """Per split: file, file_size, block, first_mid, last_mid, ``first_text`` (its first line),
    ``offset`` (the file's lines before it), and per file ``n_lines`` and ``complete`` (its
    last line ends with a newline). One pass over the text, no parsing."""
    splits = lines.groupBy("file", "file_size", "block").agg(
        F.count(F.lit(1)).alias("n"), F.min("mid").alias("first_mid"), F.max("mid").alias("last_mid"),
        F.sum(F.octet_length("text") + 1).alias("bytes"), F.min_by("text", "mid").alias("first_text"))
    in_file = Window.partitionBy("file")
    before = in_file.orderBy("block").rowsBetween(Window.unboundedPreceding, -1)
    return splits.select(
        "file", "file_size", "block", "first_mid", "last_mid", "first_text",
        F.coalesce(F.sum("n").over(before), F.lit(0)).alias("offset"),
        F.sum("n").over(in_file).alias("n_lines"),
        (F.sum("bytes").over(in_file) == F.col("file_size")).alias("complete"))


def file_info(layout: DataFrame, batch: int) -> DataFrame:
    """One row per file: sk (this file as read in this batch), file, file_size, n_lines,
    complete, header_ok, the header's columns (null without a valid header) and its UTC date."""
    h = F.from_json("first_text", PARSE_SCHEMA, JSON_OPTIONS)
    parsed = layout.where(F.col("block") == 0).select("file", "file_size", "n_lines", "complete", h.alias("h"))
    ok = _header_ok(F.col("h"))
    return parsed.select(
        F.xxhash64("file", F.lit(batch)).alias("sk"), "file", "file_size", "n_lines", "complete", ok.alias("header_ok"),
        *[F.when(ok, F.col("h").getField(c)).alias(c) for c in HEADER_COLUMNS],
        F.when(ok, F.date_format(F.timestamp_millis(F.col("h.started_ms")), "yyyy-MM-dd")).alias("date"))


def parse_lines(lines: DataFrame, layout: DataFrame, files: DataFrame) -> DataFrame:
    """Every line with its number (``line``, 0-based), ``reason`` (null: a usable line), the
    session key ``sk``, ``date``, and the narrow columns: the record columns, ``subject`` (zk
    and lesson records only), ``source`` (fault records: ``detail.source``), ``completed`` (a
    lesson's ``finished`` record: ``detail.completed``), ``file``/``excerpt`` on malformed lines."""
    info = layout.drop("first_text").join(
        files.select("file", "sk", "header_ok", F.col("session_id").alias("header_sid"), "date"), "file")
    # Parsed before the join: the filter of ``kept_lines`` is pushed down into the join, and a
    # parse above it would be copied into that filter once per field it reads.
    parsed = lines.withColumn("r", F.from_json("text", PARSE_SCHEMA, JSON_OPTIONS))
    joined = parsed.join(F.broadcast(info), ["file", "file_size", "block"]).where(F.col("mid") <= F.col("last_mid"))
    line = F.col("offset") + F.col("mid") - F.col("first_mid")
    parsed = joined.select("sk", "date", "file", "text", "n_lines", "complete", "header_ok", "header_sid",
                           line.alias("line"), "r")
    parsed = parsed.withColumn("reason", _reason(F.col("r"), F.col("text"), F.col("line"), F.col("n_lines"),
                                                 F.col("complete"), F.col("header_ok"), F.col("header_sid")))
    r, text, bad = F.col("r"), F.col("text"), F.col("reason").isNotNull()
    kind = r.getField("kind")
    return parsed.select(
        "sk", F.col("line").cast("int").alias("line"), "reason",
        F.when(bad, F.col("file")).alias("file"), F.when(bad, F.substring(text, 1, EXCERPT_CHARS)).alias("excerpt"),
        *[r.getField(c).alias(c) for c in RECORD_COLUMNS],
        F.when(kind.isin("zk", "lesson"), r.getField("subject")).alias("subject"),
        F.when(kind == "fault", F.get_json_object(text, "$.detail.source")).alias("source"),
        F.when((kind == "lesson") & (r.getField("to_state") == "finished"),
               F.get_json_object(text, "$.detail.completed") == "true").alias("completed"),
        "date",
    )


def kept_lines(lines: DataFrame) -> DataFrame:
    """The lines worth keeping: malformed lines and the records a metric reads."""
    return lines.where(F.col("reason").isNotNull() | ((F.col("line") > 0) & relevant()))


def records_of(kept: DataFrame) -> DataFrame:
    """The usable records (malformed lines left out)."""
    return kept.where(F.col("reason").isNull()).drop("reason", "file", "excerpt", "line")


def malformed_of(kept: DataFrame) -> DataFrame:
    """Lines set aside: file, 1-based line number, reason, the first 200 characters."""
    return (kept.where(F.col("reason").isNotNull())
            .select("file", (F.col("line") + 1).alias("line"), "reason", "excerpt"))


def malformed_by_reason(kept: DataFrame) -> dict[str, int]:
    """How many lines were set aside for each reason (also the action that fills kept's cache)."""
    counts = kept.groupBy("reason").count().collect()
    return {row.reason: row["count"] for row in counts if row.reason is not None}


def _header_ok(h: Column) -> Column:
    checks = (h.isNotNull() & h.getField(CORRUPT).isNull() & (h.getField("kind") == "session")
              & (h.getField("v") == 1) & h.getField("session_id").isNotNull() & h.getField("mode").isNotNull()
              & h.getField("started_ms").isNotNull())
    # A header that is the file's only line and has no newline was torn while being written.
    torn = (F.col("n_lines") == 1) & ~F.col("complete")
    return F.coalesce(checks & ~torn, F.lit(False))


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
