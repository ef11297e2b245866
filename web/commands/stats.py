"""``kclab stats --replays DIR --out DIR [--master URL]``: class-wide statistics with Spark.

Local mode (``local[2]``) by default, or the master in ``KCLAB_SPARK_MASTER``; ``--master
spark://host:7077`` submits to a standalone cluster (the executors must see ``--replays``,
``--out`` and the ingested table, ``--table``, at the same paths). Each log is parsed once: later
runs read only the logs that are new or changed since (``backend/stats/ingest.py``). The same job runs
under ``spark-submit backend/stats/job.py --replays DIR --out DIR`` (see ``backend/stats/job.py``).

Exit status: 0 when the job ran (damaged lines are counted, not fatal), 2 when the input or
output directory is unusable.
"""

from __future__ import annotations


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "stats", help="compute class-wide statistics from replay logs (Spark)",
        description="Read every replay log in --replays, compute failover times, offline windows, elections, "
                    "data loss, fencing, prediction accuracy, step times, completion and free-play faults, and "
                    "write one Parquet dataset per metric plus summary.json to --out.",
        epilog="The same job under spark-submit, from the repository root: PYSPARK_PYTHON=.venv/bin/python "
               ".venv/bin/spark-submit --master spark://HOST:7077 backend/stats/job.py --replays DIR --out DIR (the "
               "master is then spark-submit's; the executors must see DIR at the same paths). The dashboard at "
               "/stats runs it too.")
    from backend.stats.session import configured_master  # stdlib only: keeps --help light
    from backend.stats.job import add_arguments
    add_arguments(parser, configured_master())
    parser.set_defaults(func=run)


def run(args) -> int:
    from backend.stats.job import run_from_args
    return run_from_args(args)
