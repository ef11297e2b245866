"""Ingesting replay logs: each log parsed once, its event tables derived once, kept as Parquet.

Parsing JSON text is what a run costs; a log that has been read does not change (a finished
session is never written again). So ``ingest`` converts only the logs that are new since the
last run — or that changed: a session still being recorded grows, and is read again whole —
and forgets the logs that were removed from the directory. A run with nothing new reads no JSON.

A batch of logs is read in one pass (``backend.stats.load``: Spark's line reader, every line
parsed once and placed by what the driver read of each file's two ends, ``backend.stats.edges``,
while the JVM started; the lines worth keeping written to ``lines/``); then, from those kept
lines read back by the driver with Arrow, the manifest's entries and the per-session event
tables (``backend.stats.derive``), while the rules' fold runs over each whole session
(``backend.stats.violations``: in the driver in local mode or for a small batch, else on the
executors: ``folds_in_driver``), told by the parse which lines were set aside.
The layout and the manifest are ``backend.stats.table``'s.

Every dashboard run with new logs adds a batch; many small batches, or batches whose logs are
mostly no longer named, are merged (``compact``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from backend.stats import derive, violations
from backend.stats.edges import edges_table
from backend.stats.load import HEADER_COLUMNS, kept_lines, read_ends, read_files, read_lines
from backend.stats.output import write_arrow, write_parquet
from backend.stats.session import is_local, one_split_per_file
from backend.stats.manifest import Manifest
from backend.stats.table import HEADER_FIELDS, Table

MAX_BATCHES = 8
"""More batches than this (each dashboard run with new logs adds one) are merged."""

FOLD_IN_DRIVER_BYTES = 256 * 1024 * 1024
"""With a cluster's master, the largest batch whose rules' fold runs in the driver, in bytes of
logs (~800,000 records): above it the executors' cores, however many, are worth their job's
overhead (``folds_in_driver``)."""


def folds_in_driver(master: str, batch_bytes: int) -> bool:
    """Where a batch's rules' fold runs. In the driver, ahead of the parse, in local mode: the
    executors are the driver's own cores, which a fold job would only load with reading every
    file in the JVM and pickling its text to Python, after the parse (docs/performance.md, issue
    16, sixth round: a class's day 0.66 CPU-s in the driver against 3.2 CPU-s as a job; the cold
    10M run 97 s against 117 s, and 1.7 GB against 2.1 at its peak). On a cluster, only a small
    batch: a semester's fold is spread over the executors."""
    return is_local(master) or batch_bytes <= FOLD_IN_DRIVER_BYTES


def ingest(get_spark: Callable[[], SparkSession], replays: str | Path, table: Table) -> tuple[Manifest, dict]:
    """Bring the table up to date with the directory: read new and changed logs, forget removed
    ones, choose the copy that counts of a session on disk twice, compact. ``get_spark`` returns
    the session, called only when there is something to parse or merge (issue 16: a run with
    nothing new starts no JVM; ``backend.stats.session.LazySpark``). Returns the manifest
    and what was done (``read_files``, ``read_bytes``, ``removed``, ``compacted``), with the
    ``listing`` of the directory (files, bytes: listed once per run)."""
    listing = list_logs(Path(replays))
    manifest = table.load()
    if not len(manifest):
        shutil.rmtree(table.lines, ignore_errors=True)
        shutil.rmtree(table.events, ignore_errors=True)
    known = manifest.known()
    changed = [name for name, stat in sorted(listing.items()) if known.get(name) != stat]
    removed = [name for name in known if name not in listing]
    manifest.drop(changed + removed)
    if changed:
        batch = manifest.next_batch
        manifest.next_batch += 1
        with ThreadPoolExecutor(1, thread_name_prefix="kclab-edges") as pool:
            # Both ends of each new log, read while the JVM starts (a cold run's first seconds).
            ends = pool.submit(edges_table, Path(replays), changed)
            spark = get_spark()
            in_driver = folds_in_driver(spark.sparkContext.master, sum(listing[n][0] for n in changed))
            entries = _read_batch(spark, Path(replays), changed, len(changed) == len(listing), table, batch, in_driver,
                                  ends.result(), [listing[n][0] for n in changed])
        rows = []
        for name in changed:
            entry = entries.get(name) or _empty_entry(name)
            # A log that changed while it was read counts as read, and is read again at the next run.
            settled = entry.pop("settled", True)
            rows.append({**entry, "size": listing[name][0], "mtime_ns": listing[name][1] if settled else -1})
        manifest.add(rows)
        manifest.written[batch] = len(entries)
    if changed or removed or not table.manifest_path.exists():
        # Unchanged otherwise: rewriting a semester's manifest cost a warm run time for nothing.
        manifest.choose_copies()
        table.save(manifest)
    compacted = compact(get_spark, table, manifest)
    _remove_unnamed_batches(table, manifest)
    sizes = [size for size, _ in listing.values()]
    return manifest, {"listing": {"files": len(sizes), "bytes": sum(sizes)},  # the directory's, for the summary
                      "read_files": len(changed), "read_bytes": sum(listing[n][0] for n in changed),
                      "removed": len(removed), "compacted": compacted}


def _read_batch(spark: SparkSession, replays: Path, names: list[str], every_log: bool, table: Table, batch: int,
                fold_in_driver: bool, edges: pa.Table, sizes: list[int]) -> dict[str, dict]:
    """Parse the logs ``names`` of ``replays`` (``every_log``: all of them) once, append their
    kept lines and event tables to the table as ``batch``, and return the manifest entry of
    every log that has at least one line (from the first lines just written: no second parse).

    After Spark's parse and write, the kept lines are small and the driver takes over with Arrow:
    the entries and the lines set aside, then — while the rules' fold runs, which needs the
    latter — the event tables, a day at a time (``backend.stats.derive``). A batch folded in the
    driver is folded ahead while Spark parses (``violations.fold_ahead``)."""
    # Every log new (a first run, or a rebuilt table): read the directory, which Spark lists in
    # one call, rather than name tens of thousands of files.
    paths = str(replays) if every_log else [str(replays / n) for n in names]
    lines = read_lines(spark, paths)
    table.root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="edges-", dir=table.root) as scratch, \
            ThreadPoolExecutor(2, thread_name_prefix="kclab-fold") as pool:
        kept = kept_lines(lines, read_ends(spark, edges, lines, Path(scratch) / "edges.parquet"), batch)
        stop = threading.Event()
        ahead = pool.submit(violations.fold_ahead, replays, names, stop) if fold_in_driver else None
        try:
            # As many writers as cores: each writes one file per day, not one per day per input split.
            with one_split_per_file(spark, sizes):
                _write_lines(kept.coalesce(spark.sparkContext.defaultParallelism).withColumn("batch", F.lit(batch)), table)
        except BaseException:
            stop.set()
            raise
        entries, set_aside = _entries(table, batch)
        logs = {e["sk"]: (e["name"], e["lines"], set_aside.get(e["sk"], [])) for e in entries.values() if e["header_ok"]}
        derived = pool.submit(_derive, table, batch)
        # The fold runs meanwhile (Arrow's compute releases the GIL).
        if ahead is not None:
            write_arrow(violations.fold_logs(replays, logs, ahead.result()), table.event_batch("violations", batch))
        else:
            write_parquet(violations.violations_of(read_files(spark, paths), batch, logs), table.event_batch("violations", batch))
        for name, rows in derived.result().items():
            write_arrow(rows, table.event_batch(name, batch))
    return entries


def _derive(table: Table, batch: int) -> dict[str, pa.Table]:
    """Every event table but ``violations`` of a batch, derived one day at a time."""
    parts: dict[str, list[pa.Table]] = {}
    for _, lines in table.batch_days(batch):
        for name, rows in derive.derive(lines).items():
            parts.setdefault(name, []).append(rows)
    return {name: pa.concat_tables(parts.get(name, [derive.SCHEMAS[name].empty_table()]))
            for name in derive.NAMES if name != "violations"}


_ENTRY_COLUMNS = ["sk", "line", "reason", "file", "n_lines", "header_ok", "settled", *HEADER_FIELDS]


def _entries(table: Table, batch: int) -> tuple[dict[str, dict], dict[int, list[int]]]:
    """The manifest entry of each log of ``batch``, from its first line and its lines set aside
    by reason, counted; and, per log, the numbers of its lines set aside but for a missing header
    (what the rules' fold must not read)."""
    entries: dict[str, dict] = {}
    by_sk: dict[int, dict] = {}
    set_aside: dict[int, list[int]] = {}
    where = (pc.field("line") == 0) | pc.field("reason").is_valid()
    for day, rows in table.batch_days(batch, _ENTRY_COLUMNS, where):
        for row in rows.filter(pc.field("line") == 0).to_pylist():
            name = unquote(row["file"].rsplit("/", 1)[-1])  # Spark's path is a URI: "a b" is "a%20b"
            entries[name] = by_sk[row["sk"]] = {
                "name": name, "file": row["file"], "sk": row["sk"], "batch": batch, "lines": row["n_lines"],
                "header_ok": row["header_ok"], "settled": row["settled"],
                **{c: row[f] for c, f in zip(HEADER_COLUMNS, HEADER_FIELDS)},
                "date": day, "malformed": {}}
        bad = rows.filter(pc.field("reason").is_valid()).select(["sk", "reason", "line"])
        for sk, reason, line in zip(*(bad[c].to_pylist() for c in bad.column_names)):
            counts = by_sk[sk]["malformed"]
            counts[reason] = counts.get(reason, 0) + 1
            if reason != "missing_header":
                set_aside.setdefault(sk, []).append(line)
    return entries, set_aside


def compact(get_spark: Callable[[], SparkSession], table: Table, manifest: Manifest) -> int:
    """Merge batches when there are too many (all but the largest), and the batches half of whose
    logs are no longer named; returns how many batches were merged (0: nothing to do)."""
    named, written = manifest.batches(), manifest.written
    stale = {b for b, n in named.items() if n * 2 < written.get(b, n)}
    merge = set(stale)
    if len(named) > MAX_BATCHES:
        largest = max(named, key=lambda b: written.get(b, named[b]))
        merge |= set(named) - {largest}
    if len(merge) < 2 and not stale:
        return 0
    spark = get_spark()  # the kept lines are rewritten by Spark
    batch = manifest.next_batch
    manifest.next_batch += 1
    batches = sorted(merge)
    named_sks = manifest.in_batches(merge).select(["sk"])
    lines = table.batch_lines(spark, batches).join(F.broadcast(spark.createDataFrame(named_sks)), "sk", "left_semi")
    _write_lines(lines.withColumn("batch", F.lit(batch)), table)
    for name in derive.NAMES:
        write_arrow(table.read_events(name, batches, named_sks["sk"].combine_chunks()),
                    table.event_batch(name, batch))
    manifest.rebatch(merge, batch)
    for b in merge:
        written.pop(b, None)
    written[batch] = named_sks.num_rows
    table.save(manifest)
    return len(merge)


def _write_lines(df: DataFrame, table: Table) -> None:
    df.write.mode("append").partitionBy("date", "batch").parquet(str(table.lines))


def _empty_entry(name: str) -> dict:
    """A log with no line at all (an empty file): a file, but no session and no lines."""
    return {"name": name, "file": None, "sk": None, "batch": None, "lines": 0, "header_ok": False,
            **{c: None for c in HEADER_COLUMNS}, "date": None, "malformed": {}}


def list_logs(replays: Path) -> dict[str, tuple[int, int]]:
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
    days = [d for d in table.lines.iterdir() if d.is_dir()] if table.lines.is_dir() else []
    tables = [d for d in table.events.iterdir() if d.is_dir()] if table.events.is_dir() else []
    for directory in days + tables:
        for batch_dir in directory.iterdir():
            if batch_dir.name.startswith("batch=") and batch_dir.name.removeprefix("batch=") not in named:
                shutil.rmtree(batch_dir, ignore_errors=True)
    for day in days:
        if not any(day.iterdir()):
            day.rmdir()
