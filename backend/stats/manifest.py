"""The ingested table's manifest: one row per log, kept as columns (Arrow, saved as Parquet).

A run reads the manifest to know which logs are new, changed or gone, which copy of a session
counts, and the sessions' dimensions. At a semester's 62,000 logs, the earlier JSON-lines
manifest (23 MB) cost a warm Run about 1 CPU-s to load into dicts and save again; as Parquet it
loads in a tenth of a second, and only the few rows of new logs are built in Python
(``docs/performance.md``, issue 16). The table's format, next batch number and how many logs
each batch was written with travel in the Parquet file's metadata.

Columns (``SCHEMA``): name, file (as Spark names it), sk (the log's key in the table), batch,
lines, header_ok, counted (``choose_copies``), the header's columns, date, malformed (lines set
aside by reason, as a JSON object), size and mtime_ns (how a changed log is recognised).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

HEADER_COLUMNS = ("session_id", "mode", "lesson_id", "class_id", "student", "started_ms")
"""``backend.stats.load.HEADER_COLUMNS`` (a test checks they agree; this module needs no pyspark)."""

SCHEMA = pa.schema([
    ("name", pa.string()), ("file", pa.string()), ("sk", pa.int64()), ("batch", pa.int32()), ("lines", pa.int64()),
    ("header_ok", pa.bool_()), ("counted", pa.bool_()),
    *[(c, pa.int64() if c == "started_ms" else pa.string()) for c in HEADER_COLUMNS],
    ("date", pa.string()), ("malformed", pa.string()), ("size", pa.int64()), ("mtime_ns", pa.int64())])
_META = b"kclab"


@dataclass
class Manifest:
    format: str
    next_batch: int = 0
    written: dict[int, int] = field(default_factory=dict)
    """Batch -> how many logs it was written with (``backend.stats.ingest.compact`` reads it)."""
    rows: pa.Table = field(default_factory=SCHEMA.empty_table)

    def __len__(self) -> int:
        return self.rows.num_rows

    def known(self) -> dict[str, tuple[int, int]]:
        """Name -> (size, mtime_ns) of every log in the manifest."""
        r = self.rows
        return dict(zip(r["name"].to_pylist(), zip(r["size"].to_pylist(), r["mtime_ns"].to_pylist())))

    def drop(self, names: list[str]) -> None:
        if names:
            self.rows = self.rows.filter(pc.invert(pc.is_in(self.rows["name"], value_set=pa.array(names, pa.string()))))

    def add(self, entries: list[dict]) -> None:
        """Rows for new or changed logs (``malformed`` a dict of reason -> lines)."""
        rows = [{**e, "malformed": json.dumps(e["malformed"], sort_keys=True), "counted": False} for e in entries]
        self.rows = pa.concat_tables([self.rows, pa.Table.from_pylist(rows, schema=SCHEMA)])

    def choose_copies(self) -> None:
        """Mark which logs count. One session may be on disk twice — an exported log imported again
        (``<id>.imported.jsonl``), or a shorter copy of it — and counting both would count its
        failovers, answers and losses twice: of every session only the copy with the most lines
        counts (ties: the first file name). Files without a valid header are not sessions: they
        always count (their lines are the malformed ones)."""
        r = self.rows
        names, ok, sids, lines = (r[c].to_pylist() for c in ("name", "header_ok", "session_id", "lines"))
        best: dict[str, int] = {}
        for i in sorted(range(len(names)), key=names.__getitem__):
            if ok[i] and (sids[i] not in best or lines[i] > lines[best[sids[i]]]):
                best[sids[i]] = i
        chosen = set(best.values())
        counted = pa.array([not ok[i] or i in chosen for i in range(len(names))], pa.bool_())
        self.rows = r.set_column(r.schema.get_field_index("counted"), "counted", counted)

    def rebatch(self, merged: set[int], batch: int) -> None:
        """The logs of the ``merged`` batches now live in ``batch``."""
        column = self.rows["batch"]
        moved = pc.is_in(column, value_set=pa.array(sorted(merged), pa.int32()))
        self.rows = self.rows.set_column(self.rows.schema.get_field_index("batch"), "batch",
                                         pc.if_else(moved, pa.scalar(batch, pa.int32()), column))

    def in_batches(self, batches: set[int]) -> pa.Table:
        return self.rows.filter(pc.is_in(self.rows["batch"], value_set=pa.array(sorted(batches), pa.int32())))

    def sessions(self) -> pa.Table:
        """The counted logs that have lines, one row each (the job's sessions table)."""
        return self.rows.filter(pc.and_(self.rows["counted"], pc.is_valid(self.rows["file"])))

    def counts(self) -> dict:
        """Files, lines, records, sessions (by mode) and lines set aside (by reason) of the counted
        logs, and the copies left out: from the manifest alone, no Spark job."""
        counted = self.rows.filter(self.rows["counted"])
        sessions = counted.filter(counted["header_ok"])
        by_mode = {v["values"]: v["counts"] for v in pc.value_counts(sessions["mode"]).to_pylist()}
        by_reason: dict[str, int] = {}
        for text in counted["malformed"].to_pylist():
            for reason, n in (json.loads(text) if text and text != "{}" else {}).items():
                by_reason[reason] = by_reason.get(reason, 0) + n
        lines = pc.sum(counted["lines"]).as_py() or 0
        return {"files_read": counted.num_rows, "bytes_read": pc.sum(counted["size"]).as_py() or 0, "lines": lines,
                "sessions": sessions.num_rows, "sessions_by_mode": by_mode, "malformed_by_reason": by_reason,
                "records": lines - sessions.num_rows - sum(by_reason.values()),
                "duplicate_copies": self.rows.num_rows - counted.num_rows}

    def batches(self) -> dict[int, int]:
        """Batch -> how many logs of it are still named."""
        return {v["values"]: v["counts"] for v in pc.value_counts(self.rows["batch"].drop_null()).to_pylist()}

    def live(self) -> list[int]:
        """The batches that hold a counted log."""
        return sorted(pc.unique(self.rows.filter(self.rows["counted"])["batch"].drop_null()).to_pylist())


def load(path: Path, format: str) -> Manifest:
    """The manifest at ``path``; an empty one if there is none or it was written for another format."""
    try:
        rows = pq.read_table(path)
        head = json.loads(rows.schema.metadata[_META])
    except (OSError, ValueError, KeyError, TypeError, pa.ArrowException):
        return Manifest(format)
    if head.get("format") != format:
        return Manifest(format)
    return Manifest(format, head["next_batch"], {int(k): v for k, v in head["written"].items()},
                    rows.replace_schema_metadata(None).cast(SCHEMA))


def save(manifest: Manifest, path: Path) -> None:
    """Written beside and renamed into place: a reader sees the old manifest or the new one."""
    head = {"format": manifest.format, "next_batch": manifest.next_batch, "written": manifest.written}
    temporary = path.with_name(path.name + ".tmp")
    pq.write_table(manifest.rows.replace_schema_metadata({_META: json.dumps(head).encode()}), temporary)
    os.replace(temporary, path)
