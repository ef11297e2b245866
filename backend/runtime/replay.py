"""Replay logs: one append-only JSONL file per session, a session header first.

Each record is written as one line and flushed at once, so if the app crashes, at most the
record being written is lost. Reading is forgiving: a torn last line or a damaged line ends
the replay *there*, and the reader says where and why — a student can still watch everything
up to the damage.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from backend.core.records import Record, RecordError, SessionHeader


def default_data_dir() -> Path:
    return Path(os.environ.get("KCLAB_DATA_DIR", "var"))


def default_replay_dir() -> Path:
    return default_data_dir() / "replays"


class ReplayWriter:
    """A record sink that appends to ``<dir>/<session_id>.jsonl``."""

    def __init__(self, directory: Path | str, header: SessionHeader) -> None:
        self.path = Path(directory) / f"{header.session_id}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "a", encoding="utf-8")
        self._lock = threading.Lock()
        self._write(header.to_dict())

    def __call__(self, records: list[Record]) -> None:
        with self._lock:
            if self._file.closed:
                return
            for record in records:
                self._write(record.to_dict())

    def _write(self, data: dict) -> None:
        self._file.write(json.dumps(data, separators=(",", ":"), default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()


@dataclass
class Replay:
    header: SessionHeader | None
    records: list[Record] = field(default_factory=list)
    problem: str | None = None
    """Why reading stopped early (``None``: the whole file was read)."""


def read_replay(path: Path | str) -> Replay:
    path = Path(path)
    replay = Replay(header=None)
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            if not line.endswith("\n"):
                replay.problem = f"{path.name}:{number}: the last line is incomplete (the app stopped while writing it)"
                break
            try:
                data = json.loads(line)
                if number == 1:
                    replay.header = SessionHeader.from_dict(data)
                else:
                    record = Record.from_dict(data)
                    expected = replay.records[-1].seq + 1 if replay.records else None
                    if expected is not None and record.seq != expected:
                        raise RecordError(f"seq {record.seq} follows {expected - 1}: records are missing")
                    replay.records.append(record)
            except (ValueError, RecordError, TypeError) as exc:
                replay.problem = f"{path.name}:{number}: {exc}"
                break
    if replay.header is None and replay.problem is None:
        replay.problem = f"{path.name}: empty file, no session header"
    return replay
