"""The ingested table: each replay log parsed once, kept as Parquet, read by every later run.

Parsing JSON text is what a run costs; a log that has been read does not change (a finished
session is never written again). So ``ingest`` converts only the logs that are new since the
last run — or that changed: a session still being recorded grows, and is read again whole —
and forgets the logs that were removed from the directory. A run with nothing new reads no JSON.

Layout of the table directory (``kclab stats --table``, by default ``<out>-table``)::

    manifest.jsonl                 line 1: the table's format and batches; then one line per log:
                                   name, size, mtime_ns, sk, batch, lines, header fields, counted
    lines/date=D/batch=B/*.parquet the kept lines (``backend.stats.load.kept_lines``): records a
                                   metric reads and, beside them, the malformed lines with their
                                   ``reason`` and every file's first line with its header;
                                   partitioned by the session's day (UTC) and the ingest that
                                   wrote them (``date=__HIVE_DEFAULT_PARTITION__``: lines of
                                   files without a valid header)
    violations/batch=B/*.parquet   the rules each session broke (``backend.stats.violations``:
                                   the invariant panel's fold over the session's records, run
                                   once per log, here, because it needs every record in order)

The manifest is the truth: a row of ``lines/`` counts only while the manifest names its ``sk``
as counted (a log read again gets a new ``sk``; a removed log's rows are simply no longer named;
so is the shorter copy of a session that is on disk twice). Batches whose rows are mostly no
longer named are rewritten by ``compact`` together with the many small batches that dashboard
runs leave. The manifest is replaced by a rename, after the Parquet files it names are written, so
a run that fails half-way leaves the previous table as it was. ``format`` changes whenever what
is kept changes (``FORMAT``): the table is then rebuilt from the logs; that code includes the rules' fold (``backend/view`` and the cluster fold
it reads), whose counts are stored.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import inspect
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from backend.core import cluster_view
from backend.stats import events, load, violations
from backend.stats.load import HEADER_COLUMNS, KEPT_SCHEMA, PARSE_SCHEMA, kept_lines, parse_lines, read_files
from backend.view import controller_rules, invariants, page, partition_rules, rules
from backend.view import violations as view_violations

TABLE_VERSION = 2
_READERS = (load, events, violations, page, invariants, rules, controller_rules, partition_rules, view_violations,
            cluster_view)
FORMAT = hashlib.sha256("|".join([str(TABLE_VERSION), PARSE_SCHEMA.json(), KEPT_SCHEMA.json(),
                                  *map(inspect.getsource, _READERS)]).encode()).hexdigest()[:16]
"""Changes with the code that reads and keeps lines (``load``, ``events``) and with the rules'
fold (``violations``, ``backend/view``): an older table is then rebuilt from the logs rather than
mixed with lines kept, or rules counted, by other code."""

VIOLATIONS_SCHEMA = T.StructType([T.StructField("sk", T.LongType()), T.StructField("rule", T.StringType()),
                                  T.StructField("violations", T.LongType()), T.StructField("batch", T.IntegerType())])

HEADER_FIELDS = tuple("session_student" if c == "student" else c for c in HEADER_COLUMNS)
"""Where a kept first line holds each header column (its ``student`` is the record column)."""

MAX_BATCHES = 8
"""More batches than this (each dashboard run with new logs adds one) are merged into one."""

MANIFEST_SCHEMA = T.StructType([
    T.StructField("name", T.StringType()), T.StructField("file", T.StringType()), T.StructField("sk", T.LongType()),
    T.StructField("batch", T.IntegerType()), T.StructField("lines", T.LongType()),
    T.StructField("header_ok", T.BooleanType()), T.StructField("counted", T.BooleanType()),
    *[T.StructField(c, T.LongType() if c == "started_ms" else T.StringType()) for c in HEADER_COLUMNS],
    T.StructField("date", T.StringType())])
"""The manifest's file lines as Spark reads them (the job's sessions table)."""


class TableError(Exception):
    """The table directory cannot be used (another run holds it, it cannot be written)."""


@dataclass
class Manifest:
    format: str = FORMAT
    next_batch: int = 0
    files: dict[str, dict] = field(default_factory=dict)

    def counts(self, malformed_by_reason: dict[str, int]) -> dict:
        """Files, lines, records and sessions (by mode) of the counted logs, and the copies left out."""
        counted = [e for e in self.files.values() if e["counted"]]
        sessions = [e for e in counted if e["header_ok"]]
        by_mode: dict[str, int] = {}
        for entry in sessions:
            by_mode[entry["mode"]] = by_mode.get(entry["mode"], 0) + 1
        lines = sum(e["lines"] for e in counted)
        return {"files_read": len(counted), "bytes_read": sum(e["size"] for e in counted), "lines": lines,
                "sessions": len(sessions), "sessions_by_mode": by_mode, "malformed_by_reason": malformed_by_reason,
                "records": lines - len(sessions) - sum(malformed_by_reason.values()),
                "duplicate_copies": len(self.files) - len(counted)}

    def batches(self) -> dict[int, int]:
        """Batch -> how many logs of it are still named."""
        out: dict[int, int] = {}
        for entry in self.files.values():
            if entry.get("batch") is not None:
                out[entry["batch"]] = out.get(entry["batch"], 0) + 1
        return out


class Table:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(str(root).removeprefix("file:")).resolve()
        self.lines = self.root / "lines"
        self.violations_dir = self.root / "violations"
        self.manifest_path = self.root / "manifest.jsonl"

    # -- the manifest ----------------------------------------------------------------------
    def load(self) -> Manifest:
        try:
            with open(self.manifest_path, encoding="utf-8") as f:
                head = json.loads(f.readline())
                files = [json.loads(line) for line in f if line.strip()]
        except (OSError, ValueError):
            return Manifest()
        if head.get("format") != FORMAT:
            return Manifest()
        return Manifest(FORMAT, head["next_batch"], {e["name"]: e for e in files})

    def save(self, manifest: Manifest, written: dict[int, int]) -> None:
        temporary = self.manifest_path.with_suffix(".tmp")
        with open(temporary, "w", encoding="utf-8") as f:
            f.write(json.dumps({"format": manifest.format, "next_batch": manifest.next_batch,
                                "batches_written": written}) + "\n")
            for entry in manifest.files.values():
                f.write(json.dumps(entry, separators=(",", ":")) + "\n")
        os.replace(temporary, self.manifest_path)

    def written(self) -> dict[int, int]:
        """Batch -> how many logs it was written with (from the manifest's first line)."""
        try:
            with open(self.manifest_path, encoding="utf-8") as f:
                head = json.loads(f.readline())
        except (OSError, ValueError):
            return {}
        return {int(k): v for k, v in head.get("batches_written", {}).items()} if head.get("format") == FORMAT else {}

    @contextlib.contextmanager
    def locked(self):
        """One run at a time per table (a CLI run and the dashboard may share one)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise TableError(f"another statistics run is using {self.root}: try again when it has finished") from None
            yield

    # -- reading -----------------------------------------------------------------------------
    def sessions(self, spark: SparkSession) -> DataFrame:
        """The counted logs, one row each (the manifest read by Spark)."""
        return (spark.read.schema(MANIFEST_SCHEMA).json(str(self.manifest_path))
                .where(F.col("name").isNotNull() & F.col("counted")))

    def kept(self, spark: SparkSession, manifest: Manifest) -> DataFrame:
        """The kept lines of the counted logs (``backend.stats.load.parse_lines``' columns)."""
        live = sorted({e["batch"] for e in manifest.files.values() if e["counted"] and e.get("batch") is not None})
        if not live:
            return spark.createDataFrame([], KEPT_SCHEMA).drop("batch")
        lines = spark.read.schema(KEPT_SCHEMA).parquet(str(self.lines)).where(F.col("batch").isin(live))
        counted = self.sessions(spark).select("sk")
        return lines.join(F.broadcast(counted), "sk", "left_semi").drop("batch")

    def violations(self, spark: SparkSession, manifest: Manifest) -> DataFrame:
        """The rules the counted logs broke: sk, rule, violations."""
        live = sorted({e["batch"] for e in manifest.files.values() if e["counted"] and e.get("batch") is not None})
        if not live or not self.violations_dir.is_dir():
            return spark.createDataFrame([], VIOLATIONS_SCHEMA).drop("batch")
        rows = spark.read.schema(VIOLATIONS_SCHEMA).parquet(str(self.violations_dir)).where(F.col("batch").isin(live))
        return rows.join(F.broadcast(self.sessions(spark).select("sk")), "sk", "left_semi").drop("batch")


def ingest(spark: SparkSession, replays: str | Path, table: Table) -> tuple[Manifest, dict]:
    """Bring the table up to date with the directory: read new and changed logs, forget removed
    ones, choose the copy that counts of a session on disk twice, compact. Returns the manifest
    and what was done (``read_files``, ``read_bytes``, ``removed``, ``compacted``)."""
    listing = _list_logs(Path(replays))
    manifest = table.load()
    written = table.written() if manifest.files else {}
    if not manifest.files:
        shutil.rmtree(table.lines, ignore_errors=True)
        shutil.rmtree(table.violations_dir, ignore_errors=True)
    changed = [name for name, (size, mtime) in sorted(listing.items())
               if (e := manifest.files.get(name)) is None or (e["size"], e["mtime_ns"]) != (size, mtime)]
    removed = [name for name in manifest.files if name not in listing]
    for name in removed:
        del manifest.files[name]
    if changed:
        batch = manifest.next_batch
        manifest.next_batch += 1
        # Every log new (a first run, or a rebuilt table): read the directory, which Spark lists
        # in one call, rather than name tens of thousands of files.
        paths = str(replays) if len(changed) == len(listing) else [str(Path(replays) / n) for n in changed]
        entries = _read_batch(spark, paths, table, batch)
        for name in changed:
            size, mtime = listing[name]
            manifest.files[name] = {**entries.get(name, _empty_entry(name)), "size": size, "mtime_ns": mtime}
        written[batch] = len(entries)
    _choose_copies(manifest)
    table.save(manifest, written)
    compacted = compact(spark, table, manifest, written)
    _remove_unnamed_batches(table, manifest)
    return manifest, {"read_files": len(changed), "read_bytes": sum(listing[n][0] for n in changed),
                      "removed": len(removed), "compacted": compacted}


def compact(spark: SparkSession, table: Table, manifest: Manifest, written: dict[int, int]) -> int:
    """Merge batches into one when there are too many, or when half of a batch's logs are no
    longer named; returns how many batches were merged (0: nothing to do)."""
    named = manifest.batches()
    stale = [b for b, n in named.items() if n * 2 < written.get(b, n)]
    if len(named) <= MAX_BATCHES and not stale:
        return 0
    merge = set(named)
    batch = manifest.next_batch
    manifest.next_batch += 1
    named_sks = (spark.read.schema(MANIFEST_SCHEMA).json(str(table.manifest_path))
                 .where(F.col("batch").isin(sorted(merge))).select("sk"))
    rows = (spark.read.schema(KEPT_SCHEMA).parquet(str(table.lines)).where(F.col("batch").isin(sorted(merge)))
            .join(F.broadcast(named_sks), "sk", "left_semi"))
    _write(rows.withColumn("batch", F.lit(batch)), table)
    if table.violations_dir.is_dir():
        broken = (spark.read.schema(VIOLATIONS_SCHEMA).parquet(str(table.violations_dir))
                  .where(F.col("batch").isin(sorted(merge))).join(F.broadcast(named_sks), "sk", "left_semi"))
        _write_violations(broken.withColumn("batch", F.lit(batch)), table)
    for entry in manifest.files.values():
        if entry.get("batch") in merge:
            entry["batch"] = batch
    for b in merge:
        written.pop(b, None)
    written[batch] = sum(1 for e in manifest.files.values() if e.get("batch") == batch)
    table.save(manifest, written)
    return len(merge)


def _read_batch(spark: SparkSession, paths: str | list[str], table: Table, batch: int) -> dict[str, dict]:
    """Parse the given logs (or every log of a directory) once and append their kept lines to
    the table as ``batch``; returns the manifest entry of every log that has at least one line,
    read back from the first lines just written (no second pass over the logs)."""
    kept = kept_lines(parse_lines(read_files(spark, paths), batch))
    # As many writers as cores: each writes one file per day, not one per day per input split.
    _write(kept.coalesce(spark.sparkContext.defaultParallelism).withColumn("batch", F.lit(batch)), table)
    broken = violations.violations_of(read_files(spark, paths), batch)
    _write_violations(broken.coalesce(1).withColumn("batch", F.lit(batch)), table)
    firsts = (spark.read.schema(KEPT_SCHEMA).parquet(str(table.lines))
              .where((F.col("batch") == batch) & (F.col("line") == 0))
              .select("sk", "file", "n_lines", "header_ok", *HEADER_FIELDS, "date").collect())
    entries = {}
    for row in firsts:
        name = row.file.rsplit("/", 1)[-1]
        entries[name] = {"name": name, "file": row.file, "sk": row.sk, "batch": batch, "lines": row.n_lines,
                         "header_ok": row.header_ok, **{c: row[f] for c, f in zip(HEADER_COLUMNS, HEADER_FIELDS)},
                         "date": row.date}
    return entries


def _write(df: DataFrame, table: Table) -> None:
    df.write.mode("append").partitionBy("date", "batch").parquet(str(table.lines))


def _write_violations(df: DataFrame, table: Table) -> None:
    df.write.mode("append").partitionBy("batch").parquet(str(table.violations_dir))


def _choose_copies(manifest: Manifest) -> None:
    """Mark which logs count. One session may be on disk twice — an exported log imported again
    (``<id>.imported.jsonl``), or a shorter copy of it — and counting both would count its
    failovers, answers and losses twice: of every session only the copy with the most lines
    counts (ties: the first file name). Files without a valid header are not sessions: they
    always count (their lines are the malformed ones)."""
    best: dict[str, str] = {}
    for name in sorted(manifest.files):
        entry = manifest.files[name]
        if entry["header_ok"]:
            sid = entry["session_id"]
            if sid not in best or entry["lines"] > manifest.files[best[sid]]["lines"]:
                best[sid] = name
    chosen = set(best.values())
    for name, entry in manifest.files.items():
        entry["counted"] = not entry["header_ok"] or name in chosen


def _empty_entry(name: str) -> dict:
    """A log with no line at all (an empty file): a file, but no session and no lines."""
    return {"name": name, "file": None, "sk": None, "batch": None, "lines": 0, "header_ok": False,
            **{c: None for c in HEADER_COLUMNS}, "date": None}


def _list_logs(replays: Path) -> dict[str, tuple[int, int]]:
    """``*.jsonl`` files directly in ``replays``: name -> (size, mtime in ns)."""
    out = {}
    for entry in os.scandir(replays):
        if entry.name.endswith(".jsonl") and entry.is_file():
            stat = entry.stat()
            out[entry.name] = (stat.st_size, stat.st_mtime_ns)
    return out


def _remove_unnamed_batches(table: Table, manifest: Manifest) -> None:
    """Delete the Parquet of batches the manifest no longer names (merged, or left by a failed run)."""
    named = {str(b) for b in manifest.batches()}
    directories = [d for d in table.lines.iterdir() if d.is_dir()] if table.lines.is_dir() else []
    for directory in [*directories, table.violations_dir]:
        if not directory.is_dir():
            continue
        for batch_dir in directory.iterdir():
            if batch_dir.name.startswith("batch=") and batch_dir.name.removeprefix("batch=") not in named:
                shutil.rmtree(batch_dir, ignore_errors=True)
        if directory != table.violations_dir and not any(directory.iterdir()):
            directory.rmdir()
