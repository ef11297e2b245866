"""A class's hand-out of private copies, built in the background.

A copy is a new cluster on ZooKeeper with the class's faults replayed, each followed by
``wait_stable``: a fraction of a second to a few seconds, so a class of 200 takes minutes. The
instructor's request therefore only starts the hand-out and answers at once (202); the copies are
built by a small pool shared by every class of this worker (``COPY_THREADS``), so a hand-out
never takes more of the worker than that from the faults other students are sending, and a second
class's hand-out waits its turn. Progress — built, failed with each reason, remaining — goes to
the instructor's room after every copy (``class_handout``) and is kept for a page that reloads
(``GET /api/classes/<id>/handout``); each student hears of their own copy, or why there is none.

Students keep joining while copies are built (a class of 200 trickles in): a student who joins
while a hand-out runs is added to it and built a copy of the same cluster. After it is over, the
instructor can give a copy to just the students who have none (``students: "missing"``) — latecomers
and those whose copy failed or was reaped — without closing anybody else's.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from backend.runtime.faults import apply_fault
from web.sandbox import Sandbox
from web.sandboxes import SandboxLimit, SandboxManager

if TYPE_CHECKING:
    from web.classes import ClassRoom, Student

log = logging.getLogger(__name__)

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
    """Every student it builds for: pseudonym -> display name (latecomers are added, ``include``)."""
    spec: Any = None
    """The cluster copied (the class session's) …"""
    faults: list = field(default_factory=list)
    """… and the faults replayed on it, as they were when the hand-out started."""
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

    def include(self, student: str, name: str) -> bool:
        """Add a student who joined while this hand-out runs; False once it is over (or already in)."""
        with self.lock:
            if self.finished is not None or student in self.students:
                return False
            self.students[student] = name
            return True

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


class Copier:
    """Builds the private copies of every class of this worker on ``threads`` threads."""

    def __init__(self, manager: SandboxManager, notify: Callable[[str, str, dict], None],
                 threads: int = COPY_THREADS) -> None:
        """``notify(room, event, payload)`` tells pages (the class registry's, set late by the
        socket layer: called through, never copied)."""
        self.manager = manager
        self._notify = notify
        self.pool = ThreadPoolExecutor(int(threads), thread_name_prefix="handout")

    def start(self, room: ClassRoom, students: list[Student], spec, faults) -> dict[str, Any]:
        """Start a new hand-out of ``room`` to ``students`` (the caller has checked none runs);
        returns it as it starts, before any copy: what the answer says will be built."""
        handout = room.handout = HandOut(room.id, {s.id: s.name for s in students}, spec, faults)
        started = handout.describe()
        for student in students:
            self.pool.submit(self._fork_one, room, handout, student)
        return started

    def include(self, room: ClassRoom, student: Student) -> None:
        """A student who just joined gets a copy too if a hand-out of the class is running."""
        handout = room.handout
        if handout is not None and handout.include(student.id, student.name):
            self._notify(f"class:{room.id}:instructor", "class_handout", handout.describe())
            self.pool.submit(self._fork_one, room, handout, student)

    def close(self) -> None:
        """Copies not yet begun are dropped (the app is stopping; its sandboxes close next)."""
        self.pool.shutdown(wait=False, cancel_futures=True)

    def _fork_one(self, room: ClassRoom, handout: HandOut, student: Student) -> None:
        """The student's old copy closes first: its place is free before the new one takes one,
        so a second hand-out never needs twice the places (a class of 200 on a cap of 300).
        Whatever happens, the copy is counted (built or failed), so the hand-out always ends."""
        student.copy_error = None
        try:
            if student.sandbox is not None:
                old, student.sandbox, student.sandbox_token = student.sandbox, None, None
                self.manager.close(old)
            sandbox = self._build_copy(room, student, handout.spec, handout.faults)
        except SandboxLimit as exc:
            return self._copy_failed(room, handout, student, str(exc))
        except Exception as exc:  # noqa: BLE001 - one student's failure is told, the hand-out goes on
            log.exception("the private copy of %s in class %s failed", student.id, room.id)
            return self._copy_failed(room, handout, student, f"building it failed ({getattr(exc, 'message', exc)})")
        student.sandbox, student.sandbox_token = sandbox.id, sandbox.token
        # The student is told before the copy is counted: the last count ends the hand-out, and a
        # hand-out that reads "done" must have told every student (an instructor's page, or a test,
        # that sees "done" finds every copy already announced).
        self._notify(f"student:{student.token}", "private_sandbox", {"class": room.id, "sandbox": sandbox.id,
                                                                      "token": sandbox.token})
        self._notify(f"class:{room.id}:instructor", "class_handout", handout.copy_built(student.id))

    def _build_copy(self, room: ClassRoom, student: Student, spec, faults) -> Sandbox:
        sandbox = self.manager.create(spec, mode="sandbox", class_id=room.id, student=student.id)
        try:
            for op, args in faults:
                apply_fault(sandbox.cluster, op, args, source="fork")
                sandbox.cluster.wait_stable(10)
        except Exception:
            self.manager.close(sandbox.id)
            raise
        return sandbox

    def _copy_failed(self, room: ClassRoom, handout: HandOut, student: Student, error: str) -> None:
        student.copy_error = f"no private copy for you this time: {error}"
        self._notify(f"student:{student.token}", "private_sandbox_failed", {"class": room.id,
                                                                             "error": student.copy_error})
        self._notify(f"class:{room.id}:instructor", "class_handout", handout.copy_failed(student.id, error))
