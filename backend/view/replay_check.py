"""The rules of a replay log, one line at a time: what the reader, the replay list and an import
all check, so they agree on where a log is damaged.

A replay log (``docs/records.md``) is a session header line, then one record per line, each
line ending in ``\\n``. The first line that breaks a rule is *the damage*; everything before it
can still be watched, nothing after it is trusted (a seq further on could not be placed). The
rules, in the order they are checked:

1. a line ends with ``\\n`` — a last line without one was being written when the app stopped;
2. a line is UTF-8 and one JSON value;
3. line 1 is a session header (``SessionHeader.from_dict``, plus the types of its fields);
4. every other line is a record (``Record.from_dict``) of the header's session;
5. seqs are dense from 0: the first record has seq 0, every next one the seq after.

Pure (no files): callers feed it lines as bytes, so it can count bytes (the index resumes a
growing log where it stopped) and refuse bad UTF-8. The page applies the same rules in
``static/js/replay-file.js``; ``tests/js/test_replay_file_contract.py`` checks they agree.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from backend.core.records import Record, RecordError, SessionHeader

RULES_VERSION = 1
"""Bump when a rule changes: remembered verdicts (the replay index's cache file) are then redone."""
TORN = "the last line is incomplete (the app stopped while writing it)"
EMPTY = "the file is empty: a replay log starts with a session header"

_HEADER_TYPES = {"session_id": str, "mode": str, "started_ms": int, "app_version": str, "cluster": dict,
                 "lesson_id": str, "class_id": str, "student": str}
_HEADER_REQUIRED = ("session_id", "mode", "started_ms", "app_version", "cluster")


@dataclass(frozen=True)
class Damage:
    """Where a log stops being readable: its 1-based line number and why."""

    line: int
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "reason": self.reason}


def parse_header(data: Any) -> SessionHeader:
    """A session header, with the types the list and the page rely on (``started_ms`` sorts,
    ``cluster`` is drawn) — ``SessionHeader.from_dict`` checks only names and version."""
    header = SessionHeader.from_dict(data)
    for name, kind in _HEADER_TYPES.items():
        value = data.get(name)
        if value is None and name not in _HEADER_REQUIRED:
            continue
        if not isinstance(value, kind) or isinstance(value, bool):
            raise RecordError(f"session header field {name!r} must be {kind.__name__}, "
                              f"got {type(value).__name__} {value!r}")
    if not header.session_id:
        raise RecordError("session header field 'session_id' must not be empty")
    return header


class ReplayChecker:
    """Checks the lines of one log in order; stops accepting at the first damage.

    ``good_bytes`` is the size of the lines accepted so far: a log that grows (a session being
    recorded) is checked again from there, not from the start.
    """

    def __init__(self) -> None:
        self.header: SessionHeader | None = None
        self.lines = 0
        self.records = 0
        self.last_seq: int | None = None
        self.last_ts_ms: int | None = None
        self.good_bytes = 0
        self.damage: Damage | None = None

    def feed(self, raw: bytes) -> SessionHeader | Record | None:
        """Check the next line (with its ``\\n``, if it has one). Returns the header or the
        record it holds; ``None`` once the log is damaged (this line or an earlier one)."""
        if self.damage is not None:
            return None
        number = self.lines + 1
        try:
            item = self._check(raw, number)
        except RecordError as exc:
            self.damage = Damage(number, str(exc))
            return None
        self.lines = number
        self.good_bytes += len(raw)
        return item

    def _check(self, raw: bytes, number: int) -> SessionHeader | Record:
        if not raw.endswith(b"\n"):
            raise RecordError(TORN)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RecordError(f"the line is not UTF-8 (byte {exc.start + 1})") from None
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise RecordError(f"the line is not JSON ({exc})" if text.strip() else "the line is empty") from None
        if number == 1:
            self.header = parse_header(data)
            return self.header
        if isinstance(data, dict) and data.get("kind") == "session":
            raise RecordError("a second session header: two logs were joined into one file")
        record = Record.from_dict(data)
        expected = 0 if self.last_seq is None else self.last_seq + 1
        if record.seq != expected:
            if self.last_seq is None:
                raise RecordError(f"the first record has seq {record.seq}, not 0: the records before it are missing")
            raise RecordError(f"seq {record.seq} follows {self.last_seq}: records are missing or out of order")
        if record.session_id != self.header.session_id:
            raise RecordError(f"the record belongs to session {record.session_id!r}, "
                              f"not to this log's {self.header.session_id!r}")
        self.records += 1
        self.last_seq = record.seq
        self.last_ts_ms = record.ts_ms
        return record


def split_lines(data: bytes) -> list[bytes]:
    """The lines of a log, each with its ``\\n`` (the last one may have none). Only ``\\n``
    ends a line — as for the page's ``text.split('\\n')`` — never a lone ``\\r``."""
    lines = data.split(b"\n")
    out = [line + b"\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def check_bytes(data: bytes) -> ReplayChecker:
    """A whole log, checked."""
    checker = ReplayChecker()
    for raw in split_lines(data):
        if checker.feed(raw) is None:
            break
    return finish(checker)


def finish(checker: ReplayChecker) -> ReplayChecker:
    """At the end of the input: a log without even a header line is damaged at line 1."""
    if checker.header is None and checker.damage is None:
        checker.damage = Damage(1, EMPTY)
    return checker
