"""Both ends of a log as the driver reads them, against the same ends taken from the whole file
split at every newline — for any content, lines longer than the reads included."""

from __future__ import annotations

import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from backend.stats import edges
from backend.stats.edges import edges_table, file_edges


def reference(data: bytes):
    lines = data.split(b"\n")
    complete = data.endswith(b"\n")
    if complete:
        lines.pop()
    return len(data), lines[0], b"\n" in data, lines[-1], complete


# Lines around the read size (4 KiB), so that both ends are found across several reads.
LINE = st.one_of(st.binary(max_size=40), st.binary(min_size=edges.CHUNK - 5, max_size=edges.CHUNK * 2 + 5))


@settings(max_examples=150, deadline=None)
@given(st.lists(LINE.map(lambda b: b.replace(b"\n", b"x")), min_size=1, max_size=6), st.booleans())
def test_the_ends_are_those_of_the_whole_file(tmp_path_factory, lines, ends_with_newline):
    data = b"\n".join(lines) + (b"\n" if ends_with_newline else b"")
    path = tmp_path_factory.mktemp("edges") / "log.jsonl"
    path.write_bytes(data)
    assert file_edges(path) == (reference(data) if data else None)


def test_the_table_names_each_log_and_leaves_out_empty_and_removed_ones(tmp_path):
    (tmp_path / "a.jsonl").write_bytes(b'{"kind":"session"}\n{"seq":1}\n{"seq":2')
    (tmp_path / "empty.jsonl").write_bytes(b"")
    table = edges_table(tmp_path, ["a.jsonl", "empty.jsonl", "gone.jsonl"])
    assert table.to_pylist() == [{
        "name": "a.jsonl", "size": 37, "first": b'{"kind":"session"}', "first_len": 18,
        "first_crc": zlib.crc32(b'{"kind":"session"}'), "first_ends": True,
        "last_len": 8, "last_crc": zlib.crc32(b'{"seq":2'), "complete": False}]
