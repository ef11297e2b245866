"""Scopes and distributions: how every metric is summed up.

An instructor asks the same question at several levels — all sessions, one lesson, one class,
one student — and the dashboard filters by class, lesson and date. Every aggregated dataset
therefore has a ``scope`` column and the dimension columns ``date``, ``mode``, ``class_id``,
``lesson_id``, ``student`` (null where the scope does not group by them):

=========  ==================================  =============================================
scope      grouped by                           for
=========  ==================================  =============================================
overall    nothing                              the headline numbers
mode       mode                                 sandbox vs lesson vs class demo vs script
lesson     lesson_id                            per lesson (null lesson_id: free play)
class      class_id                             per class (null: not in a class)
student    class_id, student                    a pseudonym is only unique within its class
cell       date, class_id, lesson_id            the dashboard's filters: additive columns of the
                                                cells that match a filter are summed in the page
=========  ==================================  =============================================

Distributions are exact (``percentile``, linear interpolation between the two nearest ranks,
as numpy's default), because the values are few — one per failover, per offline window, per
step — and an exact p95 can be checked against a plain-Python count.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

DIMS = ("date", "mode", "class_id", "lesson_id", "student")
SCOPES: dict[str, tuple[str, ...]] = {
    "overall": (),
    "mode": ("mode",),
    "lesson": ("lesson_id",),
    "class": ("class_id",),
    "student": ("class_id", "student"),
    "cell": ("date", "class_id", "lesson_id"),
}
ALL_SCOPES = tuple(SCOPES)
ALL = "(all)"
"""The value of a ``by`` column in a row over all of its values (``total_over_by``)."""


def distribution(value: str, unit: str = "_ms", count_name: str = "count") -> list[Column]:
    """count, mean, p50, p95 and max of a column (nulls ignored): ``count``, ``mean_ms``,
    ``p50_ms``, ``p95_ms``, ``max_ms`` for the default unit."""
    v = F.col(value)
    return [
        F.count(v).alias(count_name),
        F.avg(v).alias(f"mean{unit}"),
        F.percentile(v, 0.5).alias(f"p50{unit}"),
        F.percentile(v, 0.95).alias(f"p95{unit}"),
        F.max(v).alias(f"max{unit}"),
    ]


def count_where(condition: Column, name: str) -> Column:
    """How many rows meet ``condition`` (0, not null, when none do)."""
    return F.sum(F.when(condition, 1).otherwise(0)).cast("long").alias(name)


def scoped(df: DataFrame, aggregates: Sequence[Column], by: Sequence[str] = (),
           scopes: Iterable[str] = ALL_SCOPES, total_over_by: bool = False) -> DataFrame:
    """``df`` aggregated per scope in one pass (GROUPING SETS: one shuffle, not one per scope):
    columns ``scope``, the dimensions, ``by``, the aggregates. ``df`` must have the dimension
    columns the chosen scopes group by. With ``total_over_by`` each scope also gets rows over
    all values of ``by``, marked ``(all)`` (``by`` must then be string columns)."""
    scopes = list(scopes)
    sets: list[tuple[str, list[str], bool]] = []
    for name in scopes:
        sets.append((name, list(dict.fromkeys([*SCOPES[name], *by])), False))
        if total_over_by:
            sets.append((name, [k for k in dict.fromkeys(SCOPES[name]) if k not in by], True))
    columns = list(dict.fromkeys([c for _, keys, _ in sets for c in keys] + list(by)))
    if not columns:  # only the overall scope and nothing to group by: a plain aggregation
        grouped = df.agg(*aggregates).withColumn("_gid", F.lit(0))
    else:
        grouped = df.groupingSets([[F.col(c) for c in keys] for _, keys, _ in sets], *columns).agg(
            *aggregates, F.grouping_id().alias("_gid"))
    n = len(columns)
    ids = {sum(1 << (n - 1 - i) for i, c in enumerate(columns) if c not in keys): (name, total)
           for name, keys, total in sets}
    scope = F.lit(None).cast("string")
    total = F.lit(False)
    for gid, (name, is_total) in ids.items():
        scope = F.when(F.col("_gid") == gid, F.lit(name)).otherwise(scope)
        total = F.when(F.col("_gid") == gid, F.lit(is_total)).otherwise(total)
    dims = [(F.col(d) if d in columns else F.lit(None).cast("string")).alias(d) for d in DIMS if d not in by]
    by_cols = [F.when(total, F.lit(ALL)).otherwise(F.col(b)).alias(b) if total_over_by else F.col(b) for b in by]
    agg_names = [c for c in grouped.columns if c not in columns and c != "_gid"]
    return grouped.select(scope.alias("scope"), *dims, *by_cols, *agg_names)


def ratio(numerator: str, denominator: str) -> Column:
    """numerator / denominator, null when the denominator is 0."""
    return F.when(F.col(denominator) > 0, F.col(numerator) / F.col(denominator))
