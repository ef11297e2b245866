"""Replay logs -> the lines worth keeping, each line parsed once, by Spark's line reader.

Each log is read line by line (``spark.read.text``, only ``\n`` ending a line, as the app writes
them) and every line is parsed once, with ``PARSE_SCHEMA``. Two rules of the format are about
*positions*: the session header is the file's **first** line, and a last line without its
newline was torn by a crash of the app (``backend/runtime/replay.py`` writes and flushes one line
at a time). The line reader knows neither, so the driver first reads both ends of each file
(``backend.stats.edges``: the first line's bytes, the last line's length and CRC-32, whether the
file ends with a newline), and Spark

- parses each file's first line from those bytes, beside the lines (``_headers``): whether it is a
  valid header, its session and day, joined to every line of its file, so a line of another
  session or of a file without a header is set aside as it is read;
- numbers the lines of each file without a second pass: a file is read whole by one task (no
  file is split: ``backend.stats.session.one_split_per_file``), whose rows get consecutive ids
  (``monotonically_increasing_id``), and its first and last lines — recognised by length and
  CRC-32, a rare look-alike only keeps one more line — are always kept, so among a file's kept
  lines the first has the smallest id and the last the largest: a line's number is its id less
  the first's, the file's line count the last's less the first's plus one.

Reading each file whole as one string (what this module did before issue 16's second pass)
cost as much CPU on the benchmark's small logs, but needed every log to fit in one string and one
row; the line reader reads a log of any size in constant memory per task.

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

A log that grows while it is read (a session still being recorded) may show Spark more than the
driver saw of its end: its first line's row then says ``settled`` false, and the ingest reads it
again at the next run, as it does any log that changed.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark import SparkContext
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_schema

from backend.core.records import KINDS
from backend.stats import edges
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
                ("settled", T.BooleanType()),
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

_ENDS_SCHEMA = from_arrow_schema(edges.SCHEMA)
"""The ends' schema as Spark reads the driver's Parquet of them (told, not inferred)."""

_FILTERED = ("kind", "to_state", "outcome", "subject")
"""The record columns ``relevant`` reads, taken out of the parse before the keep filter."""


def read_files(spark: SparkSession, paths: list[str] | str) -> DataFrame:
    """One row per file (the given files, or the ``*.jsonl`` files of a directory): path, size,
    text. What the rules' fold on a cluster's executors reads (``backend.stats.violations``)."""
    reader = spark.read.option("pathGlobFilter", "*.jsonl") if isinstance(paths, str) else spark.read
    return (reader.text(paths, wholetext=True)
            .select(F.col("_metadata.file_path").alias("file"), F.col("_metadata.file_size").alias("file_size"),
                    F.col("value")))


def read_lines(spark: SparkSession, paths: list[str] | str) -> DataFrame:
    """Spark's line reader over the given files (or the ``*.jsonl`` files of a directory): one
    row per line, only ``\n`` ending one (the default also splits at a ``\r``, which the app
    never writes but a damaged line may hold)."""
    reader = spark.read.option("lineSep", "\n")
    if isinstance(paths, str):
        reader = reader.option("pathGlobFilter", "*.jsonl")
    return reader.text(paths)


def kept_lines(lines: DataFrame, files: DataFrame, batch: int) -> DataFrame:
    """The lines of ``lines`` (``read_lines``) worth keeping — every file's first line, the
    lines set aside and the records a metric reads — each with its number (``line``, 0-based),
    ``reason`` (null: a usable line), the session key ``sk`` (the file as read in this batch),
    ``date`` (its header's day, UTC) and the narrow columns: the record columns, ``subject`` (zk
    and lesson records only), ``source`` (fault records: ``detail.source``), ``completed`` (a
    lesson's ``finished`` record: ``detail.completed``), ``file``/``excerpt`` on malformed lines,
    ``FILE_COLUMNS`` on line 0. ``files``: ``read_ends`` of the same files. Run its action
    inside ``one_split_per_file``."""
    x = _expressions()
    # Parsed beside the ids, which are not deterministic: no filter above can be pushed down
    # through this projection, so none copies the parse into itself once per field it reads.
    parsed = lines.select(*x.parsed)
    flagged = parsed.join(F.broadcast(_headers(files)), "name").select("*", *x.flags)
    candidates = flagged.where(x.candidate).withColumn("sk", F.xxhash64("file", F.lit(batch)))
    # A shuffle of the candidates (a tenth of the lines) by file brings each file's together.
    placed = candidates.select("*", *x.by_file).select("*", *x.placed)
    return placed.where(x.keep).select(*x.kept)


def read_ends(spark: SparkSession, edges: pa.Table, lines: DataFrame, path: Path) -> DataFrame:
    """``edges`` (``backend.stats.edges.edges_table``) of the files ``lines`` reads, for Spark:
    keyed by each file's name as Spark writes it, written as Parquet at ``path`` (on a cluster,
    a directory the executors share) and read back. A few seconds faster than
    ``createDataFrame``, which sent 50,000 rows through py4j and into every task as a local table."""
    spark_names = {unquote(key): key for key in (uri.rsplit("/", 1)[-1] for uri in _input_files(lines))}
    keys = pa.array([spark_names.get(name) for name in edges["name"].to_pylist()], pa.string())
    named = edges.set_column(edges.schema.get_field_index("name"), "name", keys).filter(pc.field("name").is_valid())
    pq.write_table(named, path)
    return spark.read.schema(_ENDS_SCHEMA).parquet(str(path))  # told, not inferred: no job to read the footer


def _input_files(lines: DataFrame) -> list[str]:
    """``lines.inputFiles()`` in one py4j round trip: PySpark's own fetches the JVM's array one
    element per round trip, 9.2 s for 53,661 logs. (A URI quotes a newline, so none is in one.)"""
    uris = lines.sparkSession._jvm.scala.collection.immutable.ArraySeq.unsafeWrapArray(lines._jdf.inputFiles())
    joined = uris.mkString("\n")
    return joined.split("\n") if joined else []


def _headers(files: DataFrame) -> DataFrame:
    """``read_ends``'s rows with each file's first line parsed by Spark as every line is:
    ``header_ok``, the header ``h``, its ``date``."""
    # Parsed in a projection of its own: written into each check, it was parsed eight times.
    parsed = files.select("name", F.col("size").alias("read_size"), "first_len", "first_crc", "last_len", "last_crc",
                          "complete", "first_ends", F.from_json(F.col("first").cast("string"), PARSE_SCHEMA,
                                                                JSON_OPTIONS).alias("h"))
    h = F.col("h")
    checks = (h.isNotNull() & h.getField(CORRUPT).isNull() & (h.getField("kind") == "session")
              & (h.getField("v") == 1) & h.getField("session_id").isNotNull() & h.getField("mode").isNotNull()
              & h.getField("started_ms").isNotNull())
    # A header that is the file's only line and has no newline was torn while being written.
    header_ok = F.coalesce(checks & F.col("first_ends"), F.lit(False))
    return parsed.select("*", header_ok.alias("header_ok"),
                         F.when(header_ok, F.date_format(F.timestamp_millis(h.getField("started_ms")), "yyyy-MM-dd"))
                         .alias("date")).drop("first_ends")


def _content_reason(r: Column, text: Column) -> Column:
    """Why a line is set aside, from its content and its file's header alone: every reason but
    the positional ones (the header line itself, a torn last line), which ``_placed`` adds."""
    missing = None
    for name in REQUIRED_RECORD_FIELDS:
        test = r.getField(name).isNull()
        missing = test if missing is None else (missing | test)
    return (F.when(~F.col("header_ok"), F.lit("missing_header"))
            .when(F.trim(text) == "", F.lit("bad_json"))
            .when(r.getField(CORRUPT).isNotNull(),
                  F.when(F.json_object_keys(text).isNull(), F.lit("bad_json")).otherwise(F.lit("wrong_type")))
            .when(missing, F.lit("missing_field"))
            .when(r.getField("v") != 1, F.lit("bad_version"))
            .when(~r.getField("kind").isin(*KINDS), F.lit("unknown_kind"))
            .when(r.getField("session_id") != F.col("h.session_id"), F.lit("other_session"))
            .otherwise(F.lit(None)).cast("string"))


class _Expressions:
    """What ``kept_lines`` computes, as Columns built once per SparkContext and reused by every
    batch: built anew, they were ~4,600 py4j round trips, 0.8 s of a warm Run's 7 (issue 16)."""

    def __init__(self) -> None:
        r, text, ids = F.col("r"), F.col("value"), F.col("id")
        self.parsed = [F.col("_metadata.file_path").alias("file"), F.col("_metadata.file_name").alias("name"),
                       F.col("_metadata.file_size").alias("file_size"),
                       F.col("_metadata.file_block_start").alias("block"),
                       F.monotonically_increasing_id().alias("id"), "value",
                       F.from_json("value", PARSE_SCHEMA, JSON_OPTIONS).alias("r")]
        length, crc = F.octet_length(text), F.crc32(text.cast("binary"))
        self.flags = [*[r.getField(c).alias(c) for c in _FILTERED], _content_reason(r, text).alias("content"),
                      ((length == F.col("first_len")) & (crc == F.col("first_crc"))).alias("is_first"),
                      ((length == F.col("last_len")) & (crc == F.col("last_crc"))).alias("is_last")]
        self.candidate = F.col("content").isNotNull() | F.col("is_first") | F.col("is_last") | relevant()
        # A file's candidates always include its first and its last line: the smallest and the
        # largest id of the file, as one task read it whole.
        by_file = Window.partitionBy("sk")
        self.by_file = [F.min(ids).over(by_file).alias("first_id"), F.max(ids).over(by_file).alias("last_id"),
                        F.min(F.when(F.col("is_first"), ids)).over(by_file).alias("seen_first"),
                        F.max(F.when(F.col("is_last"), ids)).over(by_file).alias("seen_last")]
        # One task reads a whole file (``one_split_per_file``); a file split after all would number
        # its lines wrongly, so it stops the job instead.
        line = F.when(F.col("block") != 0, F.raise_error(F.concat(F.lit("a replay log was split: "), F.col("file")))) \
            .otherwise(ids - F.col("first_id")).cast("int")
        last = ids == F.col("last_id")
        # The driver saw this file's ends as Spark read it: not so if it grew or was replaced between.
        settled = ((F.col("seen_first") == F.col("first_id")) & (F.col("seen_last") == F.col("last_id"))
                   & (F.col("file_size") == F.col("read_size")))
        reason = (F.when(~F.col("header_ok"), F.lit("missing_header"))
                  .when(line == 0, F.lit(None))
                  .when(~F.col("complete") & last & F.col("is_last"), F.lit("truncated"))
                  .otherwise(F.col("content")).cast("string"))
        self.placed = [line.alias("line"), (F.col("last_id") - F.col("first_id") + 1).cast("int").alias("n_lines"),
                       settled.alias("settled"), reason.alias("reason")]
        self.keep = F.col("reason").isNotNull() | (F.col("line") == 0) | relevant()
        self.kept = _kept_columns()


_built: tuple[object, _Expressions] | None = None


def _expressions() -> _Expressions:
    """The current SparkContext's ``_Expressions`` (a new context, as in tests, builds its own)."""
    global _built
    context = SparkContext._active_spark_context
    if _built is None or _built[0] is not context._jsc:
        _built = (context._jsc, _Expressions())
    return _built[1]


def _kept_columns() -> list[Column]:
    r, text, line = F.col("r"), F.col("value"), F.col("line")
    bad, first, kind = F.col("reason").isNotNull(), line == 0, r.getField("kind")
    header = F.col("header_ok") & first
    return [
        "sk", "line", "reason",
        F.when(bad | first, F.col("file")).alias("file"), F.when(bad, F.substring(text, 1, EXCERPT_CHARS)).alias("excerpt"),
        *[r.getField(c).alias(c) for c in RECORD_COLUMNS],
        F.when(kind.isin("zk", "lesson"), r.getField("subject")).alias("subject"),
        F.when(kind == "fault", F.get_json_object(text, "$.detail.source")).alias("source"),
        F.when((kind == "lesson") & (r.getField("to_state") == "finished"),
               F.get_json_object(text, "$.detail.completed") == "true").alias("completed"),
        *[F.when(first, F.col(c)).alias(c) for c in ("file_size", "n_lines", "header_ok", "settled")],
        *[F.when(header, F.col("h").getField(c)).alias(c) for c in HEADER_COLUMNS if c != "student"],
        F.when(header, F.col("h.student")).alias("session_student"),
        "date",
    ]
