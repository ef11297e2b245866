"""Replay logs: one append-only JSONL file per session, a session header first.

Each record is written as one line and flushed at once, so if the app crashes, at most the
record being written is lost. Reading is forgiving: a torn last line or a damaged line ends
the replay *there*, and the reader says where and why — a student can still watch everything
up to the damage. The rules live in ``backend/view/replay_check.py``.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from backend.core.records import Record, SessionHeader
from backend.view.replay_check import Damage, ReplayChecker, finish


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
    """Why reading stopped early, as ``file:line: reason`` (``None``: the whole file was read)."""
    damage: Damage | None = None
    """The same as a value: the line that broke a rule of ``backend/view/replay_check.py``."""


def read_replay(path: Path | str) -> Replay:
    """Every record up to the first damaged line (see ``backend/view/replay_check.py`` for the
    rules, which the replay list, imports and the page share)."""
    path = Path(path)
    checker = ReplayChecker()
    records: list[Record] = []
    with open(path, "rb") as f:
        for raw in f:  # binary mode: only b"\n" ends a line, as in replay_check.split_lines
            item = checker.feed(raw)
            if item is None:
                break
            if isinstance(item, Record):
                records.append(item)
    finish(checker)
    replay = Replay(header=checker.header, records=records, damage=checker.damage)
    if checker.damage is not None:
        replay.problem = f"{path.name}:{checker.damage.line}: {checker.damage.reason}"
    return replay
