"""Class-wide statistics from replay logs, computed with PySpark.

A replay log (``<session_id>.jsonl``: a session header, then one record per line; see
``docs/records.md``) is the only input. The job (``backend.stats.job``; ``kclab stats``) reads
every log in a directory with an explicit schema (``backend.stats.schema``), attaches each record
to its session header, sets damaged lines aside with a reason, and writes one Parquet dataset per
metric plus ``summary.json``. The instructor dashboard (``web/stats_pages.py``) reads that output.

Module map:

- ``schema``     the Spark schema of one replay-log line (tested against ``Record`` and the docs)
- ``session``    the one SparkSession of a process (local mode settings from the environment notes)
- ``load``       files -> lines -> (records, sessions, malformed lines), in one pass over the input
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
