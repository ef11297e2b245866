"""Replay logs: one append-only JSONL file per session, a session header first.

Each record is written as one line and handed to the kernel at once (one ``write(2)``, no buffer
of the app's own), so if the app crashes, at most the record being written is lost. Reading is
forgiving: a torn last line or a damaged line ends the replay *there*, and the reader says where
and why — a student can still watch everything up to the damage. The rules live in
``backend/view/replay_check.py``.
"""

from __future__ import annotations

import ctypes
import errno
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


def _libc_write():
    """libc's ``write(2)``, called *without* letting go of the interpreter lock (``ctypes.PyDLL``;
    ``None`` is the C library every POSIX system the lab runs on links the interpreter with).

    A record is written by the thread that made it, inside the record bus's lock (so that the
    log is in ``seq`` order). Python's own file writes let go of the interpreter lock around
    the system call, and in a worker of a hundred sandboxes taking the lock back meant queueing
    behind a couple of thousand threads: half a millisecond a record on average, many at the
    tail, with the bus's lock held all along, so the sandbox's other threads queued behind it
    and its records reached the pages late (docs/performance.md, issue 14, twenty-first round).
    Appending a line to a local file's page cache takes microseconds; holding the interpreter
    lock for them is cheaper than handing it over twice. The price: a write that waited (a
    network file system, a disk the kernel throttles) would pause the whole worker as long, so
    the data directory belongs on a local disk (README). The session loop's socket calls were
    tried the same way and kept Python's own: no gain in a class, a fifth more CPU alone."""
    write = ctypes.PyDLL(None, use_errno=True).write
    write.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t)
    write.restype = ctypes.c_ssize_t
    return write


_WRITE = _libc_write()
_ENCODE = json.JSONEncoder(separators=(",", ":"), default=str).encode
"""One encoder for every line: ``json.dumps`` with options builds a new one per call, a fifth of a
line's encoding (issue 14, twenty-seventh round). ``encode`` keeps no state between calls, so
threads share it."""


def write_all(fd: int, data: bytes, write=_WRITE) -> None:
    """All of ``data`` to ``fd`` with ``write`` (libc's, holding the interpreter lock; a stand-in
    in tests): a short write goes on from where it stopped, an interrupted one again."""
    while data:
        written = write(fd, data, len(data))
        if written < 0:
            code = ctypes.get_errno()
            if code == errno.EINTR:
                continue
            raise OSError(code, os.strerror(code))
        data = data[written:]


class ReplayWriter:
    """A record sink that appends to ``<dir>/<session_id>.jsonl``."""

    def __init__(self, directory: Path | str, header: SessionHeader) -> None:
        self.path = Path(directory) / f"{header.session_id}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "ab", buffering=0)
        self._lock = threading.Lock()
        self._write(header.to_dict())

    def __call__(self, records: list[Record]) -> None:
        self.write_dicts([record.to_dict() for record in records])

    def write_dicts(self, dicts: list[dict]) -> None:
        """Records already in their ``to_dict`` form (a sandbox makes each one once, for this log
        and for its pages: ``web.sandbox.Sandbox.take_and_log``)."""
        with self._lock:
            if self._file.closed:
                return
            for data in dicts:
                self._write(data)

    def _write(self, data: dict) -> None:
        """Straight to the kernel, holding the interpreter lock (:func:`_libc_write`)."""
        write_all(self._file.fileno(), (_ENCODE(data) + "\n").encode())

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
