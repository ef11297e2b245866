"""Class-wide statistics from replay logs, computed with PySpark.

A replay log (``<session_id>.jsonl``: a session header, then one record per line; see
``docs/records.md``) is the only input. Each log is parsed once, with Spark's line reader and an
explicit schema (``backend.stats.schema``), into the ingested table (``backend.stats.ingest``):
the lines some metric reads, attached to their session, and the damaged lines with a reason,
as Parquet partitioned by day. Every run brings that table up to date (new and changed logs
read, removed ones forgotten), reads its lines once into a cache, and writes one Parquet dataset
per metric plus ``summary.json``. The instructor dashboard (``web/stats_pages.py``) reads that
output and runs the job on the server's one SparkSession.

Module map:

- ``schema``     the Spark schema of one replay-log line (tested against ``Record`` and the docs)
- ``session``    the one SparkSession of a process (local mode settings from the environment notes)
- ``load``       files -> lines with their number, reason and narrow columns (Spark's line reader)
- ``ingest``     the ingested table: manifest of logs read, Parquet of kept lines, batches merged
- ``aggregate``  distributions (count, mean, p50, p95, max) and the scopes (overall, lesson, class ...)
- ``cluster_metrics``, ``lesson_metrics``, ``sandbox_metrics``  the transforms, DataFrame -> DataFrame
- ``metrics``    which datasets the job writes, built from those transforms
- ``progress``   StatusTracker polling: stage/task progress on stderr and to a callback
- ``output``     Parquet + JSON per metric, written aside and swapped in, then ``summary.json``
- ``job``        the job itself and ``main()`` (also usable as ``spark-submit backend/stats/job.py``)
- ``baseline``   the same headline numbers in plain single-process Python (tests and the benchmark)
- ``synthetic``  lesson, class and free-play sessions derived from real logs (tests and the benchmark)

This package imports nothing from ``web/``; only ``schema`` and the Spark modules import pyspark,
so ``baseline`` and ``synthetic`` run without a JVM.
"""
