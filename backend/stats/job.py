"""The statistics job: replay logs in, one dataset per metric and ``summary.json`` out.

Three ways to run it:

- ``kclab stats --replays var/replays --out var/stats`` — local mode (``local[2]``) by default,
  ``--master spark://host:7077`` for a cluster;
- ``PYSPARK_PYTHON=.venv/bin/python .venv/bin/spark-submit backend/stats/job.py --replays DIR
  --out DIR`` from the repository root, with any ``spark-submit`` options (``--master``,
  ``--driver-memory`` …): the master then comes from ``spark-submit``. ``PYSPARK_PYTHON`` makes
  spark-submit start the driver with the venv's interpreter (it would use ``python3``); this
  file puts the repository root on ``sys.path`` itself. Every dataset but one uses only
  built-in DataFrame functions; ``violations`` runs the invariant panel's Python checks on the
  executors (``backend.stats.violations``), so they need this package and its Python, as the
  compose file's worker (the app's image) has. They must read ``--replays`` and write ``--out``
  at the same paths as the driver (a shared volume);
- from Python: :func:`run_job` (the web dashboard runs it in a background thread, with a
  progress callback, on the process's one SparkSession).

Damaged input never fails the job: every line set aside is counted with its reason in
``summary.json`` (and listed in the ``malformed`` dataset). Exit status: 0 done, 2 the input or
output directory is unusable.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

if __package__ in (None, ""):  # run as a file by spark-submit: make `backend` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from backend.stats.session import DEFAULT_MASTER, spark_session  # noqa: E402


PARALLEL_DATASETS = 3


class JobError(Exception):
    """The job cannot run at all (no such input directory, an unusable output path)."""


def run_job(replays: str | Path, out: str | Path, spark=None, master: str | None = DEFAULT_MASTER,
            progress: Callable[[dict], None] | None = None, stream=sys.stderr, driver_memory: str | None = None) -> dict:
    """Run the job and return the summary (also written to ``<out>/summary.json``)."""
    from backend.stats.events import attribute_faults
    from backend.stats.load import (drop_duplicate_copies, input_counts, kept_lines, malformed_of, parse_lines,
                                    read_files, records_of, sessions_of)
    from backend.stats.metrics import DATASETS, Metrics
    from backend.stats.output import Output
    from backend.stats.progress import Progress
    from backend.stats.summary import build_summary, list_input
    from backend.stats.violations import violations_of

    started = time.monotonic()
    replays = str(replays)
    if "://" not in replays and not Path(replays).is_dir():
        raise JobError(f"{replays} is not a directory of replay logs")
    listing = list_input(replays)
    try:
        output = Output(out)
    except (OSError, ValueError) as error:
        raise JobError(f"cannot write the output {out}: {error}") from error
    timings: dict[str, float] = {}
    try:
        t = time.monotonic()
        spark = spark or spark_session(master, driver_memory=driver_memory)
        timings["spark_session"] = time.monotonic() - t
        phases = ["load", *DATASETS, "summary"]
        rows: dict[str, int] = {}
        with Progress(spark.sparkContext, phases, progress, stream) as prog:
            with prog.phase("load"):
                t = time.monotonic()
                # A task per input split is right for parsing; the kept lines are ~10% of the
                # input and every dataset scans them, so fewer, larger cached partitions.
                partitions = max(8, 4 * spark.sparkContext.defaultParallelism)
                parsed = kept_lines(parse_lines(read_files(spark, replays))).coalesce(partitions).cache()
                kept, copies = drop_duplicate_copies(parsed)
                kept = kept.cache()
                counts = {**input_counts(kept), "duplicate_copies": copies.count()}
                parsed.unpersist()
                events = attribute_faults(records_of(kept)).cache()
                metrics = Metrics(events, sessions_of(kept), malformed_of(kept),
                                  violations_of(read_files(spark, replays)))
                metrics.prepare()
                timings["load"] = time.monotonic() - t

            def write(name: str) -> None:
                with prog.phase(name):
                    t0 = time.monotonic()
                    rows[name] = output.write(name, metrics.build(name))
                    timings[name] = time.monotonic() - t0

            # Several datasets at once: each is many short stages, and while one waits on the
            # driver (planning, commit) another's tasks use the cores.
            with ThreadPoolExecutor(PARALLEL_DATASETS, thread_name_prefix="kclab-stats") as pool:
                for future in [pool.submit(write, name) for name in DATASETS]:
                    future.result()
            with prog.phase("summary"):
                metrics.release()
                events.unpersist()
                kept.unpersist()
                timings["total"] = time.monotonic() - started
                summary = build_summary(output.staging, replays, listing, counts, rows, timings, spark)
                output.write_summary(summary)
                output.commit()
        return summary
    except BaseException:
        output.abandon()
        raise


def build_parser(default_master: str | None = DEFAULT_MASTER) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kclab stats", description="Class-wide statistics from replay logs, computed with Spark.")
    add_arguments(parser, default_master)
    return parser


def add_arguments(parser: argparse.ArgumentParser, default_master: str | None = DEFAULT_MASTER) -> None:
    parser.add_argument("--replays", required=True, metavar="DIR", help="directory of replay logs (*.jsonl)")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="output directory: one Parquet dataset per metric, json/ copies, summary.json")
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
                          stream=None if args.quiet else sys.stderr)
    except JobError as error:
        print(f"kclab stats: {error}", file=sys.stderr)
        return 2
    print(headline_text(summary))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point for ``spark-submit backend/stats/job.py`` (and ``python -m backend.stats.job``).
    Under spark-submit the master is spark-submit's unless ``--master`` is given."""
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit started the JVM for us
    args = build_parser(None if submitted else DEFAULT_MASTER).parse_args(argv)
    return run_from_args(args)


if __name__ == "__main__":
    sys.exit(main())
