"""The ingested table: its layout, its manifest, and how a run reads it.

Layout of the table directory (``kclab stats --table``, by default ``<out>-table``)::

    manifest.jsonl                  line 1: the table's format and batches; then one line per log:
                                    name, size, mtime_ns, sk, batch, lines, header fields, the
                                    lines set aside by reason, counted
    lines/date=D/batch=B/*.parquet  the kept lines (``backend.stats.load.kept_lines``): records a
                                    metric reads and, beside them, the malformed lines with their
                                    ``reason`` and every file's first line with its header;
                                    partitioned by the session's day (UTC) and the ingest that
                                    wrote them (``date=__HIVE_DEFAULT_PARTITION__``: lines of
                                    files without a valid header)
    events/NAME/batch=B/*.parquet   the per-session event tables derived from those lines
                                    (``backend.stats.derive``: failovers, offline windows,
                                    answers …), the rules each session broke (``violations``)
                                    and the lines set aside (``malformed``): what a run reads

The manifest is the truth: a row counts only while the manifest names its ``sk`` as counted (a
log read again gets a new ``sk``; a removed log's rows are simply no longer named; so is the
shorter copy of a session that is on disk twice). It is replaced by a rename, after the Parquet
files it names are written, so a run that fails half-way leaves the previous table as it was.
``FORMAT`` changes with the code that reads, keeps and derives lines; the table is then rebuilt
from the logs rather than mixed with rows written by other code.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import inspect
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from backend.stats import cluster_metrics, derive, events, lesson_metrics, load, sandbox_metrics, violations
from backend.stats.load import HEADER_COLUMNS, KEPT_SCHEMA, PARSE_SCHEMA
from backend.view import cluster_view, controller_rules, invariants, lesson_view, page, partition_rules, rules
from backend.view import violations as view_violations

TABLE_VERSION = 3
_CODE = (load, events, derive, cluster_metrics, lesson_metrics, sandbox_metrics, violations, page, invariants, rules,
         controller_rules, partition_rules, view_violations, cluster_view, lesson_view)
FORMAT = hashlib.sha256("|".join([str(TABLE_VERSION), PARSE_SCHEMA.json(), KEPT_SCHEMA.json(),
                                  *map(inspect.getsource, _CODE)]).encode()).hexdigest()[:16]
"""Changes with the code whose output the table stores: how lines are read and kept (``load``,
``events``), the transforms that derive event tables from them, and the rules' fold
(``violations``, ``backend/view`` and the cluster fold it reads)."""

HEADER_FIELDS = tuple("session_student" if c == "student" else c for c in HEADER_COLUMNS)
"""Where a kept first line holds each header column (its ``student`` is the record column)."""

MANIFEST_SCHEMA = T.StructType([
    T.StructField("name", T.StringType()), T.StructField("file", T.StringType()), T.StructField("sk", T.LongType()),
    T.StructField("batch", T.IntegerType()), T.StructField("lines", T.LongType()),
    T.StructField("header_ok", T.BooleanType()), T.StructField("counted", T.BooleanType()),
    *[T.StructField(c, T.LongType() if c == "started_ms" else T.StringType()) for c in HEADER_COLUMNS],
    T.StructField("date", T.StringType())])
"""The manifest's file lines as Spark reads them."""
MANIFEST_ARROW = to_arrow_schema(MANIFEST_SCHEMA)
"""The same, as the driver reads them (the job's sessions table)."""


class TableError(Exception):
    """The table directory cannot be used (another run holds it, it cannot be written)."""


@dataclass
class Manifest:
    format: str = FORMAT
    next_batch: int = 0
    files: dict[str, dict] = field(default_factory=dict)

    def counts(self) -> dict:
        """Files, lines, records, sessions (by mode) and lines set aside (by reason) of the counted
        logs, and the copies left out: from the manifest alone, no Spark job."""
        counted = [e for e in self.files.values() if e["counted"]]
        sessions = [e for e in counted if e["header_ok"]]
        by_mode: dict[str, int] = {}
        for entry in sessions:
            by_mode[entry["mode"]] = by_mode.get(entry["mode"], 0) + 1
        by_reason: dict[str, int] = {}
        for entry in counted:
            for reason, n in entry.get("malformed", {}).items():
                by_reason[reason] = by_reason.get(reason, 0) + n
        lines = sum(e["lines"] for e in counted)
        return {"files_read": len(counted), "bytes_read": sum(e["size"] for e in counted), "lines": lines,
                "sessions": len(sessions), "sessions_by_mode": by_mode, "malformed_by_reason": by_reason,
                "records": lines - len(sessions) - sum(by_reason.values()),
                "duplicate_copies": len(self.files) - len(counted)}

    def batches(self) -> dict[int, int]:
        """Batch -> how many logs of it are still named."""
        out: dict[int, int] = {}
        for entry in self.files.values():
            if entry.get("batch") is not None:
                out[entry["batch"]] = out.get(entry["batch"], 0) + 1
        return out

    def live(self) -> list[int]:
        """The batches that hold a counted log."""
        return sorted({e["batch"] for e in self.files.values() if e["counted"] and e.get("batch") is not None})


class Table:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(str(root).removeprefix("file:")).resolve()
        self.lines = self.root / "lines"
        self.events = self.root / "events"
        self.manifest_path = self.root / "manifest.jsonl"

    def event_batch(self, name: str, batch: int) -> Path:
        return self.events / name / f"batch={batch}"

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
    def sessions(self, manifest: Manifest) -> pa.Table:
        """The counted logs, one row each (``MANIFEST_SCHEMA``), from the manifest in memory."""
        counted = [e for e in manifest.files.values() if e["counted"] and e.get("file") is not None]
        return pa.Table.from_pylist(counted, schema=MANIFEST_ARROW)

    def batch_lines(self, spark: SparkSession, batches: list[int]) -> DataFrame:
        """The kept lines of some batches, every log of them (``load.KEPT_SCHEMA`` less ``batch``)."""
        return (spark.read.schema(KEPT_SCHEMA).parquet(str(self.lines))
                .where(F.col("batch").isin(batches)).drop("batch"))

    def read_events(self, spark: SparkSession, name: str, batches: list[int], sks: pa.Array) -> pa.Table:
        """One event table, read by the driver with Arrow (a few hundred thousand rows for a
        semester: no Spark job): its rows in ``batches`` of the logs whose key is in ``sks``."""
        parts = [pq.read_table(path) for b in batches if (path := self.event_batch(name, b)).is_dir()]
        # Planning the transforms on no rows gives the schema of a table no batch holds (slow: only then).
        rows = pa.concat_tables(parts, promote_options="permissive") if parts else to_arrow_schema(derive.schemas(spark)[name]).empty_table()
        return rows.filter(pc.is_in(rows["sk"], value_set=sks))

    def event_tables(self, spark: SparkSession, manifest: Manifest, sessions: pa.Table) -> dict[str, pa.Table]:
        """Every event table of the counted logs (``sessions``: ``Table.sessions``)."""
        sks = sessions["sk"].combine_chunks()
        return {name: self.read_events(spark, name, manifest.live(), sks) for name in derive.NAMES}
