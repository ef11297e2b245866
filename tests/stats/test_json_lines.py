"""The datasets' JSON copies, encoded column by column, are byte for byte ``json.dumps`` of each row.

Pure (no Spark): the reference is the row-by-row encoding the job used before
(``backend.stats.json_lines`` says why it changed), over every type a dataset has and the values
that encode differently — quotes, backslashes, control characters, non-ASCII, DEL, integral and
tiny floats, NaN, infinities, -0.0, nulls.
"""

from __future__ import annotations

import io
import json

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from backend.stats import json_lines


def reference(table: pa.Table) -> bytes:
    return "".join(json.dumps(row, separators=(",", ":"), default=str) + "\n"
                   for row in table.to_pylist()).encode()


def encoded(table: pa.Table) -> bytes:
    out = io.BytesIO()
    json_lines.write(table, out)
    return out.getvalue()


TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
ASCII = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7e), max_size=12)
COLUMNS = {
    "s": (pa.string(), st.one_of(TEXT, ASCII)),
    "i": (pa.int64(), st.integers(-2**63, 2**63 - 1)),
    "n": (pa.int32(), st.integers(-2**31, 2**31 - 1)),
    "d": (pa.float64(), st.floats(allow_nan=True, allow_infinity=True)
          | st.sampled_from([0.0, -0.0, 1.0, 123.0, 1e15, 1e16, 1e-4, 1e-5, 0.1, 1234.5666666666667, 2.5e-07, 5e-324])
          | st.floats(-1e17, 1e17) | st.floats(-1e-3, 1e-3)),
    "b": (pa.bool_(), st.booleans()),
}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(*[st.none() | values for _, values in COLUMNS.values()]), max_size=30))
def test_every_type_and_awkward_value_as_json_dumps_writes_it(rows):
    table = pa.table({name: pa.array([r[i] for r in rows], kind) for i, (name, (kind, _)) in enumerate(COLUMNS.items())})
    assert encoded(table) == reference(table)


def test_the_awkward_strings_in_one_column_with_plain_ones():
    values = ['plain', 'say "hi"', 'back\\slash', 'tab\there', 'new\nline', 'del\x7f', 'café', '→ ✓', '', None]
    table = pa.table({"scope": ["overall"] * len(values), "answer": values, "x\"key": list(range(len(values)))})
    assert encoded(table) == reference(table)


def test_chunks_join_into_one_file(monkeypatch):
    monkeypatch.setattr(json_lines, "CHUNK_ROWS", 3)
    table = pa.concat_tables([pa.table({"a": [1, 2], "b": ["x", None]}), pa.table({"a": [3, 4, 5], "b": ["é", "z", "w"]})])
    assert encoded(table) == reference(table)
    assert encoded(table.slice(1, 3)) == reference(table.slice(1, 3))  # a slice: its offsets do not start at 0


def test_no_rows_and_no_columns():
    assert encoded(pa.table({"a": pa.array([], pa.int64())})) == b""
    assert encoded(pa.table({"a": [1]}).drop_columns(["a"])) == reference(pa.table({"a": [1]}).drop_columns(["a"]))
