"""The statistics job: replay logs in, one dataset per metric and ``summary.json`` out.

Three ways to run it:

- ``kclab stats --replays var/replays --out var/stats`` — local mode (``local[2]``) by default
  (or ``KCLAB_SPARK_MASTER``), ``--master spark://host:7077`` for a cluster;
- ``PYSPARK_PYTHON=.venv/bin/python .venv/bin/spark-submit backend/stats/job.py --replays DIR
  --out DIR`` from the repository root, with any ``spark-submit`` options (``--master``,
  ``--driver-memory`` …): the master then comes from ``spark-submit``. ``PYSPARK_PYTHON`` makes
  spark-submit start the driver with the venv's interpreter (it would use ``python3``); this
  file puts the repository root on ``sys.path`` itself. Every event table but one is derived
  with built-in DataFrame functions; ``violations`` runs the invariant panel's Python checks on
  the executors when a log is ingested (``backend.stats.violations``), so they need this package
  and its Python, as the compose file's worker (the app's image) has. They must read ``--replays``
  and write the ingested table (``--table``) at the same paths as the driver (a shared volume);
- from Python: :func:`run_job` (the web dashboard runs it in a background thread, with a
  progress callback, on the process's one SparkSession).

Each log is parsed once (``backend.stats.ingest``): a run first brings the ingested table up to
date — new and changed logs read, their per-session event tables derived and stored, removed
logs forgotten — and then aggregates every dataset from the table's event tables
(``backend.stats.derive``), which are a few percent of the records: in the driver, with Arrow
(``backend.stats.aggregate``), because 18 small Spark queries cost more than the data.
So Spark is started only when the ingest has logs to parse or batches to merge
(``backend.stats.session.LazySpark``): a run with nothing new starts no JVM (issue 16).

Damaged input never fails the job: every line set aside is counted with its reason in
``summary.json`` (and listed in the ``malformed`` dataset). Exit status: 0 done, 2 the input or
output directory is unusable.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Callable

if __package__ in (None, ""):  # run as a file by spark-submit: make `backend` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from backend.stats.session import DEFAULT_MASTER, LazySpark, configured_master  # noqa: E402


class JobError(Exception):
    """The job cannot run at all (no such input directory, an unusable output path)."""


def run_job(replays: str | Path, out: str | Path, spark=None, master: str | None = DEFAULT_MASTER,
            progress: Callable[[dict], None] | None = None, stream=sys.stderr, driver_memory: str | None = None,
            table: str | Path | None = None) -> dict:
    """Run the job and return the summary (also written to ``<out>/summary.json``). ``table`` is
    the ingested table's directory (``backend.stats.ingest``; default ``<out>-table``)."""
    from backend.stats.table import Table, TableError
    from backend.stats.output import Output

    started = time.monotonic()
    replays = str(replays).removeprefix("file:")
    if not Path(replays).is_dir():
        raise JobError(f"{replays} is not a directory of replay logs")
    try:
        output = Output(out)
        table = Table(table or default_table(out))
    except (OSError, ValueError) as error:
        raise JobError(f"cannot write the output {out}: {error}") from error
    timings: dict[str, float] = {"spark_session": 0.0}  # stays 0 when no session is started
    # Started only if the ingest has logs to parse or batches to merge (issue 16).
    spark = LazySpark(spark, master, driver_memory)
    try:
        with table.locked():
            summary = _compute(spark, replays, table, output, progress, stream, timings, started)
        output.commit()
        return summary
    except TableError as error:
        output.abandon()
        raise JobError(str(error)) from error
    except BaseException:
        output.abandon()
        raise


WARM_UP_LOGS = 3


def warm_up(spark, replays: str | Path) -> dict | None:
    """One small run over copies of the smallest few logs of ``replays``, in a temporary
    directory that is then removed, so that the instructor's first Run finds Spark's parse
    loaded and compiled: a fresh session's first parse of a class's day took 10.1-10.2 s, after
    this 6.3-6.5 s (docs/performance.md, issue 16, sixth round). The dashboard calls it in the
    background when the page opens (about 5 s). Returns the small run's summary, or None when
    there is no log to warm with (nothing to parse: nothing to wait for either)."""
    import heapq
    import shutil
    import tempfile

    from backend.stats.ingest import list_logs

    try:
        listing = list_logs(Path(replays))
    except OSError:
        return None
    smallest = heapq.nsmallest(WARM_UP_LOGS, [(size, name) for name, (size, _) in listing.items() if size])
    if not smallest:
        return None
    with tempfile.TemporaryDirectory(prefix="kclab-stats-warm-up-") as scratch:
        copies = Path(scratch) / "replays"
        copies.mkdir()
        for _, name in smallest:
            shutil.copyfile(Path(replays) / name, copies / name)
        return run_job(copies, Path(scratch) / "out", spark=spark, stream=None)


def default_table(out: str | Path) -> Path:
    """The ingested table beside the output: ``var/stats`` -> ``var/stats-table``."""
    out = Path(str(out).removeprefix("file:")).resolve()
    return out.with_name(out.name + "-table")


def _compute(spark, replays: str, table, output, progress, stream, timings: dict,
             started: float) -> dict:
    import pyarrow.compute as pc

    from backend.stats.ingest import ingest
    from backend.stats.metrics import DATASETS, Metrics
    from backend.stats.progress import Progress
    from backend.stats.summary import build_summary

    datasets: dict = {}
    with Progress(spark().sparkContext if spark.started else None, ["ingest", "load", *DATASETS, "summary"],
                  progress, stream) as prog:
        spark.on_start(lambda session: prog.attach(session.sparkContext))
        with prog.phase("ingest"):
            t = time.monotonic()
            manifest, ingested = ingest(spark, replays, table)
            timings["ingest"] = time.monotonic() - t - spark.seconds
        with prog.phase("load"):
            t = time.monotonic()
            metrics = Metrics(table.event_tables(manifest), manifest.sessions().filter(pc.field("header_ok")))
            timings["load"] = time.monotonic() - t
        for name in DATASETS:
            with prog.phase(name):
                t = time.monotonic()
                datasets[name] = metrics.build(name)
                output.write(name, datasets[name])
                timings[name] = time.monotonic() - t
        with prog.phase("summary"):
            timings["spark_session"] = spark.seconds
            timings["total"] = time.monotonic() - started
            listing = ingested.pop("listing")
            summary = build_summary(datasets, replays, listing, manifest.counts(), timings, _spark_facts(spark))
            summary["ingest"] = {**ingested, "table": str(table.root)}
            output.write_summary(summary)
    return summary


def _spark_facts(spark: LazySpark) -> dict:
    """``summary.json``'s ``spark``: the session's, or, when none was started (nothing to parse),
    the pyspark version and the master a session would have had, with no parallelism (null)."""
    if spark.started:
        context = spark().sparkContext
        return {"version": spark().version, "master": context.master, "default_parallelism": context.defaultParallelism}
    import pyspark
    return {"version": pyspark.__version__, "master": spark.master, "default_parallelism": None}


def build_parser(default_master: str | None = DEFAULT_MASTER) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kclab stats", description="Class-wide statistics from replay logs, computed with Spark.")
    add_arguments(parser, default_master)
    return parser


def add_arguments(parser: argparse.ArgumentParser, default_master: str | None = DEFAULT_MASTER) -> None:
    parser.add_argument("--replays", required=True, metavar="DIR", help="directory of replay logs (*.jsonl)")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="output directory: one Parquet dataset per metric, json/ copies, summary.json")
    parser.add_argument("--table", metavar="DIR",
                        help="the ingested table: every log parsed once, kept as Parquet for later runs "
                             "(default: OUT-table beside --out)")
    parser.add_argument("--master", default=default_master, metavar="URL",
                        help=f"Spark master (default {default_master or 'from spark-submit'}; "
                             "e.g. spark://spark-master:7077)")
    parser.add_argument("--driver-memory", metavar="SIZE", help="spark.driver.memory, e.g. 2g (local mode: all of Spark)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def run_from_args(args) -> int:
    """Run with parsed arguments; print the headline numbers. Used by ``kclab stats`` and main()."""
    from backend.stats.summary import headline_text
    try:
        summary = run_job(args.replays, args.out, master=args.master, driver_memory=args.driver_memory,
                          stream=None if args.quiet else sys.stderr, table=args.table)
    except JobError as error:
        print(f"kclab stats: {error}", file=sys.stderr)
        return 2
    print(headline_text(summary))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point for ``spark-submit backend/stats/job.py`` (and ``python -m backend.stats.job``).
    Under spark-submit the master is spark-submit's unless ``--master`` is given."""
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit started the JVM for us
    args = build_parser(None if submitted else configured_master()).parse_args(argv)
    return run_from_args(args)


if __name__ == "__main__":
    sys.exit(main())
