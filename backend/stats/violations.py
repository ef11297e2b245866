"""How often Kafka's rules broke: the ``violations`` dataset, from the page's own checks.

The rules are the invariant panel's (``backend/view``): a fold over every record of a session
that no DataFrame expression could restate without a second, drifting definition. So this one
dataset runs that Python fold on the executors, one replay file at a time, straight from the
file's text (``read_files``), once per log: when the log is ingested (``backend.stats.ingest``
stores the rows beside the log's lines). Its lines are read by the same rules as the rest of the
job (``backend.stats.baseline.read_text``: damaged lines left out). The executors therefore need
this package and its Python (``PYSPARK_PYTHON``; the compose file's worker runs the app's
image). Rows: one per session and broken rule — ``sk``, ``rule``, ``violations``.
"""

from __future__ import annotations

from collections import Counter

from backend.view.invariants import verdicts
from backend.view.page import fold


def rule_violations(records: list[dict]) -> dict[str, int]:
    """``{rule: violations}`` of one session's records (in seq order), the rules that broke."""
    return {rule: v["count"] for rule, v in verdicts(fold(records)).items() if v["count"]}


def file_violations(text: str) -> dict[str, int]:
    from backend.stats.baseline import read_text
    header, records, _ = read_text(text, Counter())
    return rule_violations(records) if header is not None else {}


def violations_of(files, batch: int):
    """``files`` (``backend.stats.load.read_files``) -> sk, rule, violations; ``sk`` as
    ``backend.stats.load.parse_lines`` keys the same files read in ``batch``."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField("file", T.StringType()), T.StructField("rule", T.StringType()),
                           T.StructField("violations", T.LongType())])
    rows = files.select("file", "value").rdd.flatMap(
        lambda row: [(row.file, rule, n) for rule, n in file_violations(row.value).items()])
    return (files.sparkSession.createDataFrame(rows, schema)
            .select(F.xxhash64("file", F.lit(batch)).alias("sk"), "rule", "violations"))
