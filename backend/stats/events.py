"""The records the metrics read, each with the fault it follows.

Most records (controller events, replica and ISR changes, requests sent, produce acks …) feed
no metric. Keeping only the ones that do, once, right after parsing, shrinks what is cached
and scanned for every dataset to a few percent of the input; that, more than anything, is what
lets the job scale. The filter is the union of what the transforms in ``cluster_metrics``,
``lesson_metrics`` and ``sandbox_metrics`` select (a test checks that running them on the
filtered records gives the same result as on all records).

Each kept record also gets the last ``fault`` record with outcome ok before or at it in its
session (``fault_op``, ``fault_seq``, ``fault_source``), computed in one window per session:
an offline window's fault type and a free-play fault's consequences are both "what followed
this fault before the next one".
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

STATE_ZNODE = r"^znode:/brokers/topics/([^/]+)/partitions/(\d+)/state$"
NO_FAULT = "(none)"
FAULT_COLUMNS = ("fault_op", "fault_seq", "fault_source")


def relevant() -> Column:
    """True for a record some metric reads."""
    kind, state, outcome, subject = F.col("kind"), F.col("to_state"), F.col("outcome"), F.col("subject")
    zk = (kind == "zk") & ((subject == "znode:/controller") | subject.rlike(STATE_ZNODE) | (state == "write_refused"))
    return F.coalesce(
        zk
        | ((kind == "controller") & (state == "elected"))
        | ((kind == "partition") & state.isin("OfflinePartition", "OnlinePartition", "NonExistentPartition"))
        | (kind == "election")
        | ((kind == "log") & (outcome == "data_loss"))
        | ((kind == "request") & (outcome == "rejected_stale_epoch"))
        | kind.isin("fault", "lesson"),
        F.lit(False))


def attribute_faults(records: DataFrame) -> DataFrame:
    """``records`` plus ``fault_op`` (``(none)`` before the first fault), ``fault_seq`` and
    ``fault_source``: the last ``fault`` record with outcome ok at or before each record in its
    session. Already attributed records are returned as they are."""
    if "fault_op" in records.columns:
        return records
    upto = Window.partitionBy("sk").orderBy("seq").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    is_fault = (F.col("kind") == "fault") & (F.col("outcome") == "ok")
    fault = F.struct(F.col("op").alias("op"), F.col("seq").alias("seq"), F.col("source").alias("source"))
    last = F.last(F.when(is_fault, fault), ignorenulls=True).over(upto)
    return (records.withColumn("_fault", last)
            .withColumn("fault_op", F.coalesce(F.col("_fault.op"), F.lit(NO_FAULT)))
            .withColumn("fault_seq", F.col("_fault.seq"))
            .withColumn("fault_source", F.col("_fault.source"))
            .drop("_fault"))
