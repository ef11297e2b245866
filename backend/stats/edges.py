"""The first and the last line of each replay log, read by the driver from the file's two ends.

Spark's line reader (``backend.stats.load``) hands each line over alone: it knows neither which
line is a file's first (the session header) nor which is its last (torn, if the file does not
end with a newline). Two small reads per file tell: one from the start up to the first newline,
one from the end back to the newline before the last line. The parse then recognises those two
lines among the others by their length and CRC-32 and places every kept line by its distance
from the first (``backend.stats.load``), so no file is read whole, by Spark or here, and no
line is parsed twice. A replay log's lines are a few hundred bytes: a 4 KiB page from each end
is nearly always both lines; a longer line is read on, a page at a time, until its end.

The first line's *text* goes to Spark, which parses it with the same reader and schema as every
other line (whether it is a valid header is Spark's call, not a second reading in Python); of
the last line only its length, CRC-32 and whether it ends with a newline are needed.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import Iterable

import pyarrow as pa

CHUNK = 4096
SCHEMA = pa.schema([("name", pa.string()), ("size", pa.int64()), ("first", pa.binary()),
                    ("first_len", pa.int32()), ("first_crc", pa.int64()), ("first_ends", pa.bool_()),
                    ("last_len", pa.int32()), ("last_crc", pa.int64()), ("complete", pa.bool_())])
"""One row per non-empty log: its name and size; its first line's bytes (Spark reads them as it
reads every line: the same bytes, a bad one not replaced), length, CRC-32 and whether a newline
ends it; its last line's length and CRC-32; whether the file ends with a newline."""


def file_edges(path: Path) -> tuple | None:
    """(size, first line, first line ends with a newline, last line, file ends with a newline),
    the lines as bytes without their newline; None for an empty or removed file."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return None
        head = _until_newline(fd, size)
        end = head.find(b"\n")
        first = head if end < 0 else head[:end]
        tail = head if len(head) >= size else _last_line(fd, size)
        complete = tail.endswith(b"\n")
        body = tail[:-1] if complete else tail
        return size, first, end >= 0, body[body.rfind(b"\n") + 1:], complete
    finally:
        os.close(fd)


def _until_newline(fd: int, size: int) -> bytes:
    """The file's start, up to and including its first newline (or the whole file)."""
    head = os.pread(fd, CHUNK, 0)
    while b"\n" not in head and len(head) < size:
        more = os.pread(fd, CHUNK, len(head))
        if not more:
            break
        head += more
    return head


def _last_line(fd: int, size: int) -> bytes:
    """The file's end, from before the newline that precedes its last line (or its start)."""
    start = max(0, size - CHUNK)
    tail = os.pread(fd, size - start, start)
    while start > 0 and tail[:-1].rfind(b"\n") < 0:
        start = max(0, start - CHUNK)
        tail = os.pread(fd, size - start, start)
    return tail


def edges_table(directory: Path, names: Iterable[str]) -> pa.Table:
    """``SCHEMA``'s rows for the logs ``names`` of ``directory`` (empty and removed ones left out)."""
    columns: dict[str, list] = {field.name: [] for field in SCHEMA}
    for name in names:  # one thread: ~70 µs a log from the page cache, and more threads only wait for the GIL
        edge = file_edges(directory / name)
        if edge is None:
            continue
        size, first, first_ends, last, complete = edge
        for column, value in (("name", name), ("size", size), ("first", first),
                              ("first_len", len(first)), ("first_crc", zlib.crc32(first)),
                              ("first_ends", first_ends), ("last_len", len(last)), ("last_crc", zlib.crc32(last)),
                              ("complete", complete)):
            columns[column].append(value)
    return pa.table(columns, schema=SCHEMA)
