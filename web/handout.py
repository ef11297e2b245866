"""A class's hand-out of private copies, built in the background.

A copy is a new cluster on ZooKeeper with the class's faults replayed, each followed by
``wait_stable``: a fraction of a second to a few seconds, so a class of 200 takes minutes. The
instructor's request therefore only starts the hand-out and answers at once (202); the copies are
built by a small pool shared by every class of this worker (``COPY_THREADS``), so a hand-out
never takes more of the worker than that from the faults other students are sending, and a second
class's hand-out waits its turn. Progress — built, failed with each reason, remaining — goes to
the instructor's room after every copy (``class_handout``) and is kept for a page that reloads
(``GET /api/classes/<id>/handout``); each student hears of their own copy, or why there is none.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

COPY_THREADS = 4
"""Copies built at once by one worker, over all its classes: enough to overlap the waits on
ZooKeeper, few enough that the students' faults keep the worker's CPU (issue 14 item 4). Measured
on 2 cores (docs/performance.md, bench/handout.py): 40 default copies in 15 s with 2 threads, 9 s
with 4, 9 s with 8 — but with 8 another student's fault round trip went from a 10 ms median to
31 ms (p99 ~220 ms), with 4 to 16 ms (p99 ~100 ms)."""


@dataclass
class HandOut:
    """One hand-out's progress; its counts change only under ``lock`` (the pool's threads report)."""

    class_id: str
    students: dict[str, str]
    """Every student it builds for, at the start: pseudonym -> display name."""
    id: str = field(default_factory=lambda: f"h-{secrets.token_hex(4)}")
    started: float = field(default_factory=time.time)
    built: list[str] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)
    finished: float | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def running(self) -> bool:
        return self.finished is None

    def describe(self) -> dict[str, Any]:
        with self.lock:
            total, built, failed = len(self.students), len(self.built), list(self.failed)
            return {"id": self.id, "class": self.class_id, "status": "running" if self.running else "done",
                    "total": total, "built": built, "failed": failed,
                    "remaining": total - built - len(failed), "started_ms": int(self.started * 1000),
                    "finished_ms": int(self.finished * 1000) if self.finished else None}

    def copy_built(self, student: str) -> dict[str, Any]:
        with self.lock:
            self.built.append(student)
        return self._progress()

    def copy_failed(self, student: str, error: str) -> dict[str, Any]:
        with self.lock:
            self.failed.append({"student": student, "name": self.students.get(student, student), "error": error})
        return self._progress()

    def _progress(self) -> dict[str, Any]:
        """The hand-out after one more copy; the last copy finishes it."""
        with self.lock:
            if len(self.built) + len(self.failed) == len(self.students) and self.finished is None:
                self.finished = time.time()
        return self.describe()

    def busy_message(self) -> str:
        now = self.describe()
        return (f"private copies are still being handed out to this class ({now['built']} built, "
                f"{len(now['failed'])} failed, {now['remaining']} to go): wait for it to finish, then hand out again")
