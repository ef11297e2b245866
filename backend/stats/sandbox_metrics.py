"""Free play: which faults students injected, and what each one led to.

A student's click is a ``fault`` record with ``detail.source == "user"`` (the loader keeps that
one value of ``detail`` as the column ``source``). What it led to is everything of interest
that followed it in the same session before the next fault (the next ``fault`` record with
outcome ok, of any source): the same attribution rule as an offline window's fault type
(``backend.stats.events.attribute_faults``), so the two tables agree.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from backend.stats import cluster_metrics as cm
from backend.stats.events import attribute_faults

EFFECTS = ("elections", "offline_windows", "data_losses", "messages_lost", "fenced_writes", "stale_rejections")


def effect_events(records: DataFrame, windows: DataFrame) -> DataFrame:
    """Every consequence as one row: (sk, seq, effect, messages, fault_op, fault_seq,
    fault_source). ``windows`` is ``cluster_metrics.offline_windows`` (a window counts at its
    first record, attributed as the window is)."""
    records = attribute_faults(records)
    fault = ("fault_op", "fault_seq", "fault_source")
    zero = F.lit(0).cast("long").alias("messages")
    elections = cm.elections(records, fault).select("sk", "seq", F.lit("elections").alias("effect"), zero, *fault)
    offline = windows.select("sk", F.col("start_seq").alias("seq"), F.lit("offline_windows").alias("effect"), zero,
                             F.col("fault").alias("fault_op"), "fault_seq", "fault_source")
    losses = cm.data_losses(records, fault).select("sk", "seq", F.lit("data_losses").alias("effect"), "messages", *fault)
    fencing = cm.fenced(records, fault).select(
        "sk", "seq", F.when(F.col("what") == "zombie_write", "fenced_writes").otherwise("stale_rejections").alias("effect"),
        zero, *fault)
    return elections.unionByName(offline).unionByName(losses).unionByName(fencing)


def user_faults(records: DataFrame, windows: DataFrame) -> DataFrame:
    """One row per fault a student injected (``source`` user), with what followed it.
    Columns: sk, seq, op, applied, and the counts in ``EFFECTS`` (0 when nothing followed,
    and always 0 for a refused fault: nothing is attributed to it)."""
    injected = (records.where((F.col("kind") == "fault") & (F.col("source") == "user"))
                .select("sk", "seq", "op", (F.col("outcome") == "ok").alias("applied")))
    effects = effect_events(records, windows)
    sums = (effects.where(F.col("fault_source") == "user")
            .groupBy("sk", F.col("fault_seq").alias("seq"))
            .agg(*[F.sum(F.when(F.col("effect") == e, 1).otherwise(0)).alias(e)
                   for e in EFFECTS if e != "messages_lost"],
                 F.sum(F.when(F.col("effect") == "data_losses", F.col("messages")).otherwise(0)).alias("messages_lost")))
    joined = injected.join(sums, ["sk", "seq"], "left")
    return joined.select("sk", "seq", "op", "applied",
                         *[F.coalesce(F.col(e), F.lit(0)).cast("long").alias(e) for e in EFFECTS])
