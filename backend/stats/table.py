"""The ingested table: its layout, its manifest, and how a run reads it.

Layout of the table directory (``kclab stats --table``, by default ``<out>-table``)::

    manifest.parquet                one row per log (``backend.stats.manifest``): name, size,
                                    mtime_ns, sk, batch, lines, header fields, the lines set
                                    aside by reason, counted; the table's format and batches in
                                    its metadata
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
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from backend.stats import (arrow_ops, cluster_metrics, derive, events, lesson_metrics, load, manifest, sandbox_metrics,
                           violations)
from backend.stats.load import HEADER_COLUMNS, KEPT_SCHEMA, PARSE_SCHEMA
from backend.stats.manifest import Manifest
from backend.view import cluster_view, controller_rules, invariants, lesson_view, page, partition_rules, rules
from backend.view import violations as view_violations

TABLE_VERSION = 4
_CODE = (load, events, arrow_ops, derive, cluster_metrics, lesson_metrics, sandbox_metrics, violations, page, invariants,
         rules, controller_rules, partition_rules, view_violations, cluster_view, lesson_view)
FORMAT = hashlib.sha256("|".join([str(TABLE_VERSION), PARSE_SCHEMA.json(), KEPT_SCHEMA.json(),
                                  *map(inspect.getsource, _CODE)]).encode()).hexdigest()[:16]
"""Changes with the code whose output the table stores: how lines are read and kept (``load``,
``events``), the transforms that derive event tables from them, and the rules' fold
(``violations``, ``backend/view`` and the cluster fold it reads)."""

NO_DAY = "__HIVE_DEFAULT_PARTITION__"
"""The ``date`` directory of lines whose log has no valid header (Spark's name for a null)."""

HEADER_FIELDS = tuple("session_student" if c == "student" else c for c in HEADER_COLUMNS)
"""Where a kept first line holds each header column (its ``student`` is the record column)."""

class TableError(Exception):
    """The table directory cannot be used (another run holds it, it cannot be written)."""


class Table:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(str(root).removeprefix("file:")).resolve()
        self.lines = self.root / "lines"
        self.events = self.root / "events"
        self.manifest_path = self.root / "manifest.parquet"

    def event_batch(self, name: str, batch: int) -> Path:
        return self.events / name / f"batch={batch}"

    # -- the manifest ----------------------------------------------------------------------
    def load(self) -> Manifest:
        return manifest.load(self.manifest_path, FORMAT)

    def save(self, rows: Manifest) -> None:
        manifest.save(rows, self.manifest_path)

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
    def batch_lines(self, spark: SparkSession, batches: list[int]) -> DataFrame:
        """The kept lines of some batches, every log of them (``load.KEPT_SCHEMA`` less ``batch``)."""
        return (spark.read.schema(KEPT_SCHEMA).parquet(str(self.lines))
                .where(F.col("batch").isin(batches)).drop("batch"))

    def batch_days(self, batch: int, columns: list[str] | None = None, where: pc.Expression | None = None):
        """The kept lines of one batch, read by the driver with Arrow a day at a time (a session's
        lines are all in its day): (day, table) pairs, day None for the lines of logs without a
        valid header; ``columns`` and ``where`` narrow the read. Memory is one day's kept lines,
        however large the batch."""
        days = sorted(self.lines.glob(f"date=*/batch={batch}")) if self.lines.is_dir() else []
        for directory in days:
            day = directory.parent.name.removeprefix("date=")
            yield (None if day == NO_DAY else day), pq.read_table(directory, columns=columns, filters=where)

    def read_events(self, name: str, batches: list[int], sks: pa.Array) -> pa.Table:
        """One event table, read by the driver with Arrow (a few hundred thousand rows for a
        semester: no Spark job): its rows in ``batches`` of the logs whose key is in ``sks``."""
        parts = [pq.read_table(path) for b in batches if (path := self.event_batch(name, b)).is_dir()]
        rows = pa.concat_tables(parts, promote_options="permissive") if parts else derive.SCHEMAS[name].empty_table()
        return rows.filter(pc.is_in(rows["sk"], value_set=sks))

    def event_tables(self, rows: Manifest) -> dict[str, pa.Table]:
        """Every event table of the counted logs."""
        sks = rows.sessions()["sk"].combine_chunks()
        return {name: self.read_events(name, rows.live(), sks) for name in derive.NAMES}
