"""The replay directory as a list of sessions: what each log holds and whether it is damaged,
imports stored under names that never overwrite, and names checked so no path leaves the dir.

Listing must stay quick with a thousand logs, yet "damaged" can only be known by checking every
line. So each log is checked once and remembered by (mtime, size) — in memory, and in
``.kclab-index.json`` in the directory, so a restarted app does not check them all again; a log
that only grew (a session being recorded right now) is checked again from the end of its last
good line, not from the start. A last line without its ``\\n`` is normal while a session is being recorded
(the writer is mid-line): the caller says which sessions are live, and only for the others is
such a line damage.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backend.core.records import SessionHeader
from backend.view.replay_check import EMPTY, RULES_VERSION, TORN, Damage, ReplayChecker, check_bytes, split_lines
from backend.runtime.replay import Replay, read_replay

INDEX_FILE = ".kclab-index.json"
NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}\.jsonl")
"""A replay log's file name: no separator, no leading dot, so no name leaves the directory."""


class ReplayNameError(ValueError):
    """Not a replay log name."""


class UnknownReplay(LookupError):
    """No log of that name in the directory."""


class ImportRefused(ValueError):
    """The upload is not a replay log at all (its first line is no session header)."""


@dataclass
class _Scan:
    mtime_ns: int
    size: int
    checker: ReplayChecker
    tail: int
    """Bytes after the last complete line (a line being written, or a torn one)."""

    def to_json(self) -> dict[str, Any]:
        c = self.checker
        return {"mtime_ns": self.mtime_ns, "size": self.size, "tail": self.tail,
                "header": c.header.to_dict() if c.header else None, "lines": c.lines, "records": c.records,
                "last_seq": c.last_seq, "last_ts_ms": c.last_ts_ms, "good_bytes": c.good_bytes,
                "damage": c.damage.to_dict() if c.damage else None}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> _Scan:
        checker = ReplayChecker()
        checker.header = SessionHeader.from_dict(data["header"]) if data["header"] else None
        checker.lines, checker.records, checker.good_bytes = data["lines"], data["records"], data["good_bytes"]
        checker.last_seq, checker.last_ts_ms = data["last_seq"], data["last_ts_ms"]
        checker.damage = Damage(**data["damage"]) if data["damage"] else None
        return cls(data["mtime_ns"], data["size"], checker, data["tail"])


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ReplayNameError(f"{name!r} is not a replay log name (letters, digits, '.', '_' and '-', "
                              f"not starting with '.', ending in .jsonl)")
    return name


class ReplayIndex:
    """One replay directory. Thread-safe; one per app."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)
        self._scans: dict[str, _Scan] = {}
        self._lock = threading.Lock()
        self._read_cache: OrderedDict[tuple[str, int, int], Replay] = OrderedDict()
        self._dirty = False
        self._load()

    # -- names -------------------------------------------------------------------------------------------
    def path(self, name: str) -> Path:
        """The log's path; ``ReplayNameError`` for a bad name, ``UnknownReplay`` if it is not there."""
        path = self.directory / check_name(name)
        if not path.is_file():
            raise UnknownReplay(f"there is no replay log named {name!r}")
        return path

    # -- listing -----------------------------------------------------------------------------------------
    def entries(self, live: set[str] | frozenset[str] = frozenset()) -> list[dict[str, Any]]:
        """Every log, newest first; ``live``: names of logs being recorded right now."""
        try:
            found = [e for e in os.scandir(self.directory) if NAME.fullmatch(e.name) and e.is_file()]
        except FileNotFoundError:
            return []
        out = []
        with self._lock:
            for dir_entry in found:
                try:
                    scan = self._scan(dir_entry.name, dir_entry.stat())
                except FileNotFoundError:  # deleted while we listed
                    continue
                out.append(_entry(dir_entry.name, scan, dir_entry.name in live))
            for gone in set(self._scans) - {e.name for e in found}:
                del self._scans[gone]
                self._dirty = True
            self._save()
        out.sort(key=lambda e: (e["started_ms"] if e["started_ms"] is not None else e["modified_ms"], e["name"]),
                 reverse=True)
        return out

    def entry(self, name: str, live: bool = False) -> dict[str, Any]:
        path = self.path(name)
        with self._lock:
            return _entry(name, self._scan(name, path.stat()), live)

    def _scan(self, name: str, stat: os.stat_result) -> _Scan:
        previous = self._scans.get(name)
        if previous is not None and (previous.mtime_ns, previous.size) == (stat.st_mtime_ns, stat.st_size):
            return previous
        grew = (previous is not None and previous.checker.damage is None and stat.st_size >= previous.size)
        checker = previous.checker if grew else ReplayChecker()
        offset = checker.good_bytes
        with open(self.directory / name, "rb") as f:
            f.seek(offset)
            data = f.read(max(0, stat.st_size - offset))  # only what the stat saw: the scan matches it
        tail = 0
        for raw in split_lines(data):
            if not raw.endswith(b"\n"):
                tail = len(raw)  # maybe being written: the entry decides (live or torn)
                break
            if checker.feed(raw) is None:
                break
        scan = _Scan(stat.st_mtime_ns, stat.st_size, checker, tail)
        self._scans[name] = scan
        self._dirty = True
        return scan

    def _load(self) -> None:
        """What a previous run of the app learnt (ignored if unreadable or from other rules)."""
        try:
            data = json.loads((self.directory / INDEX_FILE).read_text(encoding="utf-8"))
            if data.get("rules") == RULES_VERSION:
                self._scans = {name: _Scan.from_json(scan) for name, scan in data["logs"].items()
                               if NAME.fullmatch(name)}
        except (OSError, ValueError, KeyError, TypeError):
            self._scans = {}

    def _save(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        data = {"rules": RULES_VERSION, "logs": {name: scan.to_json() for name, scan in self._scans.items()}}
        tmp_name = None
        try:
            with tempfile.NamedTemporaryFile("w", dir=self.directory, prefix=".kclab-index-", suffix=".tmp",
                                             delete=False, encoding="utf-8") as tmp:
                tmp_name = tmp.name
                json.dump(data, tmp, separators=(",", ":"))
            os.replace(tmp_name, self.directory / INDEX_FILE)
        except OSError:  # a read-only directory: the index lives in memory only
            if tmp_name is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp_name)

    # -- reading -----------------------------------------------------------------------------------------
    def read(self, name: str) -> Replay:
        """The log's records up to its damage (a few recently read logs are kept parsed, so a
        page fetching a long log in pages does not parse it again for each page)."""
        path = self.path(name)
        stat = path.stat()
        key = (name, stat.st_mtime_ns, stat.st_size)
        with self._lock:
            if key in self._read_cache:
                self._read_cache.move_to_end(key)
                return self._read_cache[key]
        replay = read_replay(path)
        with self._lock:
            self._read_cache[key] = replay
            while len(self._read_cache) > 4:
                self._read_cache.popitem(last=False)
        return replay

    # -- importing ---------------------------------------------------------------------------------------
    def store(self, data: bytes, originals: ReplayIndex | None = None) -> tuple[dict[str, Any], bool]:
        """Keep an uploaded log; returns (its entry, whether a new file was written).

        A damaged log is kept (and listed as damaged: it plays up to the damage), but a file whose
        first line is no session header is refused. The name comes from the session id,
        ``<session>.imported[-N].jsonl``: an import never overwrites a log and is never appended
        to by a sandbox. The same bytes already here (imported twice, or exported from this
        server, whose own logs ``originals`` holds when imports are kept apart) are not stored again."""
        checker = check_bytes(data)
        if checker.header is None:
            damage = checker.damage or Damage(1, EMPTY)
            raise ImportRefused(f"this is not a replay log: line {damage.line}: {damage.reason}")
        base = re.sub(r"[^A-Za-z0-9._-]", "_", checker.header.session_id).lstrip(".")[:100] or "session"
        self.directory.mkdir(parents=True, exist_ok=True)
        for n in range(0, 1000):
            candidate = _import_name(base, n)
            holder = originals if n == 0 and originals is not None else self
            if not (holder.directory / candidate).exists():
                if n == 0:
                    continue
                break
            if _same_bytes(holder.directory / candidate, data):
                return holder.entry(candidate), False
        with tempfile.NamedTemporaryFile(dir=self.directory, prefix=".import-", suffix=".tmp", delete=False) as tmp:
            tmp.write(data)
        try:
            for n in range(1, 1000):
                try:  # a hard link is atomic and fails if the name is taken: never an overwrite
                    os.link(tmp.name, self.directory / _import_name(base, n))
                except FileExistsError:
                    continue
                return self.entry(_import_name(base, n)), True
        finally:
            os.unlink(tmp.name)
        raise ImportRefused(f"too many imports of session {checker.header.session_id!r} already")


def _import_name(base: str, n: int) -> str:
    """0: the session's own name; 1, 2, …: ``<base>.imported.jsonl``, ``<base>.imported-2.jsonl``."""
    return f"{base}.jsonl" if n == 0 else f"{base}.imported{'' if n == 1 else f'-{n}'}.jsonl"


def _same_bytes(path: Path, data: bytes) -> bool:
    try:
        if path.stat().st_size != len(data):
            return False
        return path.read_bytes() == data
    except FileNotFoundError:
        return False


def _entry(name: str, scan: _Scan, live: bool) -> dict[str, Any]:
    checker = scan.checker
    damage = checker.damage
    if damage is None and not live:
        if scan.tail:
            damage = Damage(checker.lines + 1, TORN)
        elif checker.header is None:
            damage = Damage(1, EMPTY)
    header = checker.header
    return {
        "name": name,
        "session_id": header.session_id if header else None,
        "mode": header.mode if header else None,
        "lesson_id": header.lesson_id if header else None,
        "class_id": header.class_id if header else None,
        "student": header.student if header else None,
        "started_ms": header.started_ms if header else None,
        "app_version": header.app_version if header else None,
        "cluster": header.cluster if header else None,
        "records": checker.records,
        "last_seq": checker.last_seq,
        "last_ts_ms": checker.last_ts_ms,
        "size": scan.size,
        "modified_ms": scan.mtime_ns // 1_000_000,
        "imported": ".imported" in name,
        "live": live,
        "damaged": damage is not None,
        "damage": damage.to_dict() if damage else None,
    }
