"""Per-session event tables: what every dataset starts from, derived once per log at ingest.

Each metric is two steps: a *transform* that turns one session's records into event rows (its
failovers, offline windows, answers, step times …; ``cluster_metrics``, ``lesson_metrics``,
``sandbox_metrics``) and an *aggregation* of those rows over sessions, per scope
(``backend.stats.metrics``). The first step reads the records and needs only one session at a
time; a log, once ingested, never changes. So the ingest (``backend.stats.ingest``) runs every
transform once, over the logs it has just read, and stores the event rows beside the lines
(``events/<name>/batch=B``). A run then aggregates these small tables — a few percent of the
records — instead of reading, caching and attributing a million kept records again: that is what
makes the dashboard's Run over a semester of logs take seconds.

``EVENTS`` is the table from event table to transform; every transform takes the usable records
of some sessions (with their faults attributed, ``backend.stats.events``) and returns rows keyed
by ``sk``. Two more tables come from the ingest itself, not from the records: ``violations``
(the rules' fold over each whole session, ``backend.stats.violations``) and ``malformed`` (the
lines set aside).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from backend.stats import cluster_metrics as cm
from backend.stats import lesson_metrics as lm
from backend.stats import sandbox_metrics as sm
from backend.stats.events import attribute_faults
from backend.stats.load import KEPT_SCHEMA, records_of


def _user_faults(records: DataFrame) -> DataFrame:
    windows = cm.offline_windows(records).select("sk", "start_seq", "fault", "fault_seq", "fault_source")
    return sm.user_faults(records, windows)


EVENTS: dict[str, Callable[[DataFrame], DataFrame]] = {
    "lesson_ids": lm.lesson_ids,
    "failovers": cm.failovers,
    "offline_windows": cm.offline_windows,
    "elections": cm.elections,
    "data_losses": cm.data_losses,
    "fenced": cm.fenced,
    "answers": lm.answers,
    "step_durations": lm.step_durations,
    "lesson_progress": lm.lesson_progress,
    "steps_reached": lm.steps_reached,
    "user_faults": _user_faults,
}

NAMES = (*EVENTS, "violations", "malformed")
"""Every event table the ingest stores."""

VIOLATIONS_SCHEMA = T.StructType([T.StructField("sk", T.LongType()), T.StructField("rule", T.StringType()),
                                  T.StructField("violations", T.LongType())])
MALFORMED_SCHEMA = T.StructType([T.StructField("sk", T.LongType()), T.StructField("file", T.StringType()),
                                 T.StructField("line", T.IntegerType()), T.StructField("reason", T.StringType()),
                                 T.StructField("excerpt", T.StringType())])
"""A line set aside: its file's key and path, 1-based line number, reason, first characters."""


def derive(records: DataFrame) -> dict[str, DataFrame]:
    """Every event table of ``records`` (``backend.stats.load.records_of`` of kept lines)."""
    records = attribute_faults(records)
    return {name: transform(records) for name, transform in EVENTS.items()}


@lru_cache(maxsize=1)
def schemas(spark: SparkSession) -> dict[str, T.StructType]:
    """The schema of every event table (the transforms' output on no records: planning only)."""
    empty = records_of(spark.createDataFrame([], KEPT_SCHEMA))
    out = {name: df.schema for name, df in derive(empty).items()}
    return {**out, "violations": VIOLATIONS_SCHEMA, "malformed": MALFORMED_SCHEMA}
