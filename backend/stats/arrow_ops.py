"""The few window steps the transforms need, over Arrow tables, in the driver.

The per-session event tables are derived in the driver with Arrow (``backend.stats.derive``,
issue 16): a batch's kept records are a few percent of its lines, and planning a dozen
window-heavy Spark queries for them cost more than computing them. The transforms are written
with ``pyarrow.compute``; what Spark's windows gave them ("the previous row of this session",
"the last fault so far") is here: each step takes a table sorted by its keys and the
``group_starts`` of those keys. No numpy: pyarrow alone.

Conditions follow SQL: a null condition is false (``true``), as in Spark's ``where`` and
``when``.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc


def sort(table: pa.Table, keys: list[str]) -> pa.Table:
    """``table`` sorted by ``keys`` (nulls first, as Spark orders them)."""
    return table.sort_by([(k, "ascending", "at_start") for k in keys])


def group_starts(table: pa.Table, keys: list[str]) -> pa.Array:
    """True at each row whose ``keys`` differ from the previous row's (``table`` sorted by
    them): the first row of each group. Two nulls are the same key, as in Spark's partitions."""
    n = table.num_rows
    if n == 0:
        return pa.array([], pa.bool_())
    differs = pa.array([False] * (n - 1), pa.bool_())
    for key in keys:
        column = table[key].combine_chunks()
        a, b = column[1:], column[:-1]
        same = pc.or_kleene(pc.equal(a, b), pc.and_(pc.is_null(a), pc.is_null(b)))
        differs = pc.or_(differs, pc.invert(pc.fill_null(same, False)))
    return pa.concat_arrays([pa.array([True]), differs])


def partitioned(table: pa.Table, keys: list[str], order_by: str = "seq") -> tuple[pa.Table, pa.Array]:
    """Spark's ``Window.partitionBy(keys).orderBy(order_by)`` for the steps below: ``table``
    sorted by ``keys`` then ``order_by``, and the ``group_starts`` of ``keys``."""
    table = sort(table, [*keys, order_by])
    return table, group_starts(table, keys)


def row_index(n: int) -> pa.Array:
    """0, 1, … n-1."""
    return pa.array(range(n), pa.int64())


def row_number(starts: pa.Array) -> pa.Array:
    """1, 2, 3 … within each group (Spark's ``row_number``)."""
    index = row_index(len(starts))
    first = pc.fill_null_forward(pc.if_else(starts, index, pa.scalar(None, pa.int64())))
    return pc.add(pc.subtract(index, first), 1)


def lag(column: pa.ChunkedArray | pa.Array, starts: pa.Array) -> pa.Array:
    """The previous row's value within the group (null on a group's first row)."""
    column = _array(column)
    if not len(column):
        return column
    previous = pa.concat_arrays([pa.nulls(1, column.type), column[:-1]])
    return pc.if_else(starts, pa.scalar(None, column.type), previous)


def lead(column: pa.ChunkedArray | pa.Array, starts: pa.Array) -> pa.Array:
    """The next row's value within the group (null on a group's last row)."""
    column = _array(column)
    if not len(column):
        return column
    following = pa.concat_arrays([column[1:], pa.nulls(1, column.type)])
    last = pa.concat_arrays([starts[1:], pa.array([True])])
    return pc.if_else(last, pa.scalar(None, column.type), following)


def last_valid(column: pa.ChunkedArray | pa.Array, starts: pa.Array) -> pa.Array:
    """The last non-null value of ``column`` at or before each row within its group (Spark's
    ``last(..., ignorenulls=True)`` over the rows so far); null before the group's first."""
    column = _array(column)
    index = row_index(len(column))
    marker = pc.if_else(pc.is_valid(column), index, pc.if_else(starts, pa.scalar(-1, pa.int64()),
                                                                pa.scalar(None, pa.int64())))
    filled = pc.fill_null_forward(marker)
    return pc.take(column, pc.if_else(pc.equal(filled, -1), pa.scalar(None, pa.int64()), filled))


def group(table: pa.Table, keys: list[str], columns: dict[str, str]) -> pa.Table:
    """Spark's ``groupBy(keys).agg``: per group of ``keys`` each of ``columns`` aggregated with its
    function (``{"n": "sum"}``), keeping its name; the keys first. Single-threaded: the rows come
    out in a stable order."""
    out = table.group_by(keys, use_threads=False).aggregate([(c, fn) for c, fn in columns.items()])
    return out.rename_columns({f"{c}_{fn}": c for c, fn in columns.items()}).select([*keys, *columns])


def true(condition) -> pa.Array:
    """A condition with null read as false."""
    return pc.fill_null(condition, False)


def when(condition, then, otherwise):
    """Spark's ``when(condition, then).otherwise(otherwise)``: a null condition takes ``otherwise``."""
    return pc.if_else(true(condition), then, otherwise)


def _array(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
