"""Scopes and distributions: how every metric is summed up, in the driver with Arrow.

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

Why Arrow and not Spark: the aggregations read the event tables (``backend.stats.derive``), a
few hundred thousand rows for a semester. A Spark query over them costs 0.4–1.9 CPU-s of
planning and scheduling however small its input, and a run has 18 of them; ``pyarrow``'s
grouping does each in milliseconds in the driver (``docs/performance.md``, issue 16).

The columns and types are those Spark's ``GROUPING SETS`` gave (counts ``int64``, means and
percentiles ``double``, max and sum the input's type), and distributions are exact: the
percentile is Spark's ``percentile`` (linear interpolation between the two nearest ranks, as
numpy's default), because the values are few — one per failover, per offline window, per step —
and an exact p95 can be checked against a plain-Python count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

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
QUANTILES = {"p50": 0.5, "p95": 0.95}


@dataclass(frozen=True)
class Agg:
    """One output column: ``fn`` over ``value`` (a column name, or a function of the table).
    ``fn``: ``rows`` (every row), ``count`` (non-null values), ``sum``, ``sum0`` (0, not null,
    over no values), ``mean``, ``max``, ``p50``, ``p95``."""
    name: str
    fn: str
    value: str | Callable[[pa.Table], pa.Array] | None = None


def rows(name: str) -> Agg:
    return Agg(name, "rows")


def distribution(value: str, unit: str = "_ms", count_name: str = "count") -> list[Agg]:
    """count, mean, p50, p95 and max of a column (nulls ignored): ``count``, ``mean_ms``,
    ``p50_ms``, ``p95_ms``, ``max_ms`` for the default unit."""
    return [Agg(count_name, "count", value), Agg(f"mean{unit}", "mean", value), Agg(f"p50{unit}", "p50", value),
            Agg(f"p95{unit}", "p95", value), Agg(f"max{unit}", "max", value)]


def count_where(condition: Callable[[pa.Table], pa.Array], name: str) -> Agg:
    """How many rows meet ``condition`` (0, not null, when none do; a null condition is not met)."""
    return Agg(name, "sum", lambda t: pc.fill_null(condition(t), False).cast(pa.int64()))


def scoped(table: pa.Table, aggregates: Sequence[Agg], by: Sequence[str] = (),
           scopes: Iterable[str] = ALL_SCOPES, total_over_by: bool = False) -> pa.Table:
    """``table`` aggregated per scope: columns ``scope``, the dimensions not in ``by``, ``by``,
    the aggregates. ``table`` must have the dimension columns the chosen scopes group by. With
    ``total_over_by`` each scope also gets rows over all values of ``by``, marked ``(all)``
    (``by`` must then be string columns)."""
    work = _inputs(table, aggregates, by)
    parts = []
    for name in scopes:
        parts.append(_group(work, name, list(dict.fromkeys([*SCOPES[name], *by])), by, aggregates, False))
        if total_over_by:
            parts.append(_group(work, name, [k for k in dict.fromkeys(SCOPES[name]) if k not in by], by,
                                aggregates, True))
    return pa.concat_tables(parts)


def _inputs(table: pa.Table, aggregates: Sequence[Agg], by: Sequence[str]) -> pa.Table:
    """The key columns and one column ``_a<i>`` per aggregate's input, sorted by the first
    percentile's input (so that each group's list of values is sorted, nulls last)."""
    keys = [c for c in dict.fromkeys([*DIMS, *by]) if c in table.column_names]
    columns = {k: table[k] for k in keys}
    for i, agg in enumerate(aggregates):
        value = agg.value
        if value is not None:  # "rows" counts the rows themselves
            columns[f"_a{i}"] = table[value] if isinstance(value, str) else value(table)
    work = pa.table(columns)
    sort = next((f"_a{i}" for i, a in enumerate(aggregates) if a.fn in QUANTILES), None)
    return work.sort_by([(sort, "ascending", "at_end")]) if sort and work.num_rows else work


_HASH = {"rows": ("count_all", None), "count": ("count", pc.CountOptions("only_valid")),
         "sum": ("sum", None), "sum0": ("sum", None), "mean": ("mean", None), "max": ("max", None)}


def _group(work: pa.Table, scope: str, keys: list[str], by: Sequence[str], aggregates: Sequence[Agg],
           total: bool) -> pa.Table:
    group_keys = keys or ["_one"]
    if not keys:
        work = work.append_column("_one", pa.array([0] * work.num_rows, pa.int8()))
    specs, quantile_input = [], None
    for i, agg in enumerate(aggregates):
        if agg.fn in QUANTILES:
            quantile_input = f"_a{i}"
        else:
            fn, options = _HASH[agg.fn]
            target = [] if agg.fn == "rows" else f"_a{i}"
            specs.append((target, fn, options) if options else (target, fn))
    if quantile_input:
        specs += [(quantile_input, "list"), (quantile_input, "count", pc.CountOptions("only_valid"))]
    grouped = work.group_by(group_keys, use_threads=False).aggregate(specs)
    n = grouped.num_rows
    out = {"scope": pa.array([scope] * n, pa.string())}
    for d in DIMS:
        if d not in by:
            out[d] = grouped[d] if d in keys else pa.nulls(n, pa.string())
    for b in by:
        out[b] = pa.array([ALL] * n, pa.string()) if total else grouped[b]
    for i, agg in enumerate(aggregates):
        if agg.fn in QUANTILES:
            out[agg.name] = _quantile(grouped[f"{quantile_input}_list"], grouped[f"{quantile_input}_count"],
                                      QUANTILES[agg.fn])
        else:
            column = grouped["count_all" if agg.fn == "rows" else f"_a{i}_{_HASH[agg.fn][0]}"]
            out[agg.name] = pc.fill_null(column, 0) if agg.fn == "sum0" else column
    return pa.table(out)


def _quantile(lists: pa.ChunkedArray, counts: pa.ChunkedArray, q: float) -> pa.Array:
    """Spark's ``percentile`` of each group's sorted values (nulls last, ``counts`` valid ones):
    ``(higher - position) * lower + (position - lower) * higher`` at ``position = (n - 1) q``.
    Every group has a row, so ``start`` and ``start + ceil(position)`` are inside its list."""
    lists = lists.combine_chunks()
    values = pc.cast(lists.values, pa.float64())
    start = pc.cast(lists.offsets.slice(0, len(lists)), pa.int64())
    n = counts.combine_chunks()
    position = pc.multiply(pc.cast(pc.max_element_wise(pc.subtract(n, 1), 0), pa.float64()), q)
    low, high = pc.floor(position), pc.ceil(position)
    at_low = pc.take(values, pc.add(start, pc.cast(low, pa.int64())))
    at_high = pc.take(values, pc.add(start, pc.cast(high, pa.int64())))
    between = pc.add(pc.multiply(pc.subtract(high, position), at_low), pc.multiply(pc.subtract(position, low), at_high))
    value = pc.if_else(pc.equal(high, low), at_low, between)
    return pc.if_else(pc.equal(n, 0), pa.scalar(None, pa.float64()), value)


def ratio(numerator: pa.Array, denominator: pa.Array) -> pa.Array:
    """numerator / denominator, null when the denominator is 0."""
    num = pc.cast(numerator, pa.float64())
    return pc.if_else(pc.greater(denominator, 0), pc.divide(num, pc.cast(denominator, pa.float64())),
                      pa.scalar(None, pa.float64()))
