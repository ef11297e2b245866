"""An Arrow table as JSON lines, column by column: the bytes ``json.dumps`` writes row by row.

The job writes every dataset twice, as Parquet and as JSON lines (the dashboard reads the latter,
``backend.stats.output``). Turning each row into a Python dict and each dict into text was most
of what a warm Run did after the ingest on a 10M table — about 1 CPU-s for the ~250,000 rows of
its 18 datasets, growing with the table (a row per session, per failover, per day's cell; issue
16, ``docs/performance.md``). Here each column is encoded once with ``pyarrow.compute`` and the
lines are joined element-wise, so the cost is a few vectorised passes per column.

The output is byte for byte ``json.dumps(row, separators=(",", ":"), default=str)`` of each row
(``tests/stats/test_json_lines.py`` checks it): keys in column order, ``ensure_ascii`` escaping,
floats as Python's ``repr`` (``1.0``, ``1e-07``, ``NaN``). Strings of printable ASCII — nearly
all of them — are escaped in Arrow, and so are doubles that both write in plain decimal notation
(Arrow's cast and Python's ``repr`` are both the shortest text that reads back as the same
double; they differ only in when they switch to an exponent, and in ``123`` for ``123.0``). The
few other values (accents, control characters, ``1e-07``, ``NaN``) and any other type are encoded
value by value with ``json.dumps`` itself.
"""

from __future__ import annotations

import json
from typing import IO

import pyarrow as pa
import pyarrow.compute as pc

PRINTABLE_ASCII = r"^[ -~]*$"
"""What ``json.dumps`` (``ensure_ascii``) writes unchanged but for ``"`` and ``\\``."""
DECIMAL = r"^-?[0-9]+(\.[0-9]+)?$"
"""A double as Arrow writes it, in the notation ``repr`` also uses from 1e-4 up (below 1e16)."""
CHUNK_ROWS = 65_536
"""Rows encoded at a time: the text of one chunk in memory, however large the table."""


def write(table: pa.Table, f: IO[bytes]) -> None:
    """Write ``table`` to the binary file ``f``, one JSON object and a newline per row."""
    prefixes = [("{" if i == 0 else ",") + json.dumps(name) + ":" for i, name in enumerate(table.column_names)]
    for batch in table.to_batches(max_chunksize=CHUNK_ROWS):
        if not batch.num_rows or not prefixes:
            f.write(b"{}\n" * batch.num_rows)
            continue
        pieces = [piece for prefix, column in zip(prefixes, batch.columns) for piece in (prefix, encode(column))]
        lines = pc.binary_join_element_wise(*pieces, "}\n", "")
        _, offsets, data = lines.buffers()
        bounds = pa.Array.from_buffers(pa.int32(), len(lines) + 1, [None, offsets], offset=lines.offset)
        f.write(memoryview(data)[bounds[0].as_py():bounds[-1].as_py()])


def encode(column: pa.Array) -> pa.Array:
    """Each value's JSON text (``null`` for a null), as a string array."""
    kind = column.type
    if pa.types.is_boolean(kind):
        text = pc.if_else(column, "true", "false")
    elif pa.types.is_integer(kind):
        text = pc.cast(column, pa.string())
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
        text = _strings(column.cast(pa.string()))
    elif pa.types.is_float64(kind):
        text = _doubles(column)
    else:  # anything else: as json.dumps writes it
        text = _dumps(column)
    return pc.fill_null(text, "null")


def _strings(column: pa.Array) -> pa.Array:
    escaped = pc.replace_substring(pc.replace_substring(column, "\\", "\\\\"), '"', '\\"')
    text = pc.binary_join_element_wise('"', escaped, '"', "")
    return _others_dumped(text, column, pc.match_substring_regex(column, PRINTABLE_ASCII))


def _doubles(column: pa.Array) -> pa.Array:
    text = pc.cast(column, pa.string())
    plain = pc.and_(pc.match_substring_regex(text, DECIMAL),
                    pc.or_(pc.greater_equal(pc.abs(column), 1e-4), pc.equal(column, 0)))
    text = pc.if_else(pc.match_substring(text, "."), text, pc.binary_join_element_wise(text, ".0", ""))
    return _others_dumped(text, column, plain)


def _others_dumped(text: pa.Array, column: pa.Array, done: pa.Array) -> pa.Array:
    """``text``, but ``json.dumps`` of the values where ``done`` is false (null: a null value)."""
    other = pc.invert(pc.fill_null(done, True))
    if pc.any(other).as_py():
        text = pc.replace_with_mask(text, other, _dumps(column.filter(other)))
    return text


def _dumps(column: pa.Array) -> pa.Array:
    return pa.array([None if v is None else json.dumps(v, separators=(",", ":"), default=str)
                     for v in column.to_pylist()], pa.string())
