"""Class-wide statistics from replay logs, computed with PySpark.

A replay log (``<session_id>.jsonl``: a session header, then one record per line; see
``docs/records.md``) is the only input. Each log is parsed once, with an explicit schema
(``backend.stats.schema``), into the ingested table (``backend.stats.table``): the lines some
metric reads, attached to their session, the damaged lines with a reason, and the per-session
event tables derived from them (failovers, offline windows, answers, rules broken ...), as
Parquet. Every run brings that table up to date (new and changed logs read and derived, removed
ones forgotten), aggregates the event tables, and writes one Parquet dataset per metric plus
``summary.json``. The instructor dashboard (``web/stats_pages.py``) reads that
output and runs the job on the server's one SparkSession.

Module map:

- ``schema``     the Spark schema of one replay-log line (tested against ``Record`` and the docs)
- ``session``    the one SparkSession of a process (local mode settings from the environment notes)
- ``edges``      each log's first and last line, read by the driver from the file's two ends
- ``load``       files -> the lines worth keeping, with their number, reason and narrow columns (Spark's line reader)
- ``table``      the ingested table's layout and manifest, and how a run reads it
- ``ingest``     bringing the table up to date: new logs parsed and derived, removed ones forgotten, batches merged
- ``derive``     the per-session event tables each metric starts from (the transforms, run once per log)
- ``violations`` the rules' fold (``backend/view``) over each whole session, in Python, at ingest
- ``aggregate``  distributions (count, mean, p50, p95, max) and the scopes (overall, lesson, class ...)
- ``cluster_metrics``, ``lesson_metrics``, ``sandbox_metrics``  the transforms, Arrow table -> Arrow table
- ``arrow_ops``  the window steps the transforms need, over Arrow (previous/next row, last value so far)
- ``metrics``    which datasets the job writes, aggregated from the event tables
- ``progress``   StatusTracker polling: stage/task progress on stderr and to a callback
- ``output``     Parquet + JSON per metric, written aside and swapped in, then ``summary.json``
- ``json_lines`` an Arrow table as JSON lines, column by column (``json.dumps`` of each row, byte for byte)
- ``summary``    ``summary.json``: the headline numbers from the datasets' overall rows, sizes, timings
- ``job``        the job itself and ``main()`` (also usable as ``spark-submit backend/stats/job.py``)
- ``baseline``   the same headline numbers in plain single-process Python (tests and the benchmark)
- ``synthetic``  lesson, class and free-play sessions derived from real logs (tests and the benchmark)

This package imports nothing from ``web/``; only ``schema`` and the Spark modules import pyspark,
so ``baseline`` and ``synthetic`` run without a JVM.
"""
