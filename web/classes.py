"""Class mode: an instructor runs a lesson or a free demo on one shared cluster and every
student's page follows it live.

The instructor proves who they are with the token ``kclab serve`` prints. A class gets a short
join code; a student joins with the code and a display name and receives a pseudonym (what the
records and statistics see) and a token. Students watch the class session — they never hold its
sandbox token, so they cannot act on it — answer the questions the instructor opens, and can be
handed a private copy of the cluster to break on their own.
"""

from __future__ import annotations

import hmac
import secrets
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from backend.runtime.faults import apply_fault
from web.sandboxes import Sandbox, SandboxLimit, SandboxManager
from web.service import ApiError, apply, records_since, refused
from web.teaching import submit_answer

CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: read aloud in a classroom


@dataclass
class Student:
    id: str  # the pseudonym
    name: str
    token: str
    sandbox: str | None = None
    sandbox_token: str | None = None


@dataclass
class ClassRoom:
    id: str
    code: str
    instructor: str
    students: dict[str, Student] = field(default_factory=dict)  # by token
    session: Sandbox | None = None
    paused: bool = False

    @property
    def audience(self):
        """The class lesson's audience (its open question, Continue), or None before a lesson."""
        return self.session.audience if self.session is not None else None

    def describe(self, for_instructor: bool = False) -> dict[str, Any]:
        out = {"id": self.id, "code": self.code, "instructor": self.instructor, "paused": self.paused,
               "session": self.session.id if self.session else None,
               "lesson": self.session.lesson_id if self.session else None,
               "students": len(self.students)}
        if for_instructor:
            out["students"] = [{"id": s.id, "name": s.name, "sandbox": s.sandbox} for s in self.students.values()]
            out["session_token"] = self.session.token if self.session else None
            # The last question's tally, so an instructor's page that reloads redraws its chart.
            question = getattr(self.audience, "last_question", None)
            out["answers"] = {"question": question, "counts": self.audience.counts(question)} if question else None
        return out


class ClassRegistry:
    def __init__(self, manager: SandboxManager, instructor_token: str) -> None:
        self.manager = manager
        self.instructor_token = instructor_token
        self._classes: dict[str, ClassRoom] = {}
        self._lock = threading.Lock()
        self.notify: Callable[[str, str, dict], None] = lambda room, event, data: None
        """How events reach pages (set by the socket layer): notify(room, event, payload)."""
        self.on_created: Callable[[ClassRoom], None] = lambda room: None
        """Told of each new class (with several workers: its owner and code go to Redis)."""

    def ids(self) -> set[str]:
        return set(self._classes)

    # -- who is who ---------------------------------------------------------------------------------
    def check_instructor(self, token: Any) -> None:
        if not isinstance(token, str) or not hmac.compare_digest(token, self.instructor_token):
            raise ApiError(403, "this needs the instructor token (kclab serve prints the instructor link)")

    def get(self, class_id: Any) -> ClassRoom:
        room = self._classes.get(class_id) if isinstance(class_id, str) else None
        if room is None:
            raise ApiError(404, f"there is no class {class_id!r}")
        return room

    def student(self, room: ClassRoom, token: Any) -> Student:
        student = room.students.get(token) if isinstance(token, str) else None
        if student is None:
            raise ApiError(403, "you are not a member of this class: join it with its code first")
        return student

    # -- the instructor -------------------------------------------------------------------------------
    def create(self, instructor_token: Any, instructor: Any = None) -> ClassRoom:
        self.check_instructor(instructor_token)
        name = instructor if isinstance(instructor, str) and instructor.strip() else "instructor"
        with self._lock:
            code = self._new_code()
            room = ClassRoom(secrets.token_hex(4), code, name.strip()[:40])
            self._classes[room.id] = room
        self.on_created(room)
        return room

    def start_session(self, room: ClassRoom, lesson=None, lesson_key: str | None = None, spec=None) -> Sandbox:
        """A new shared cluster for the class: a lesson, or a free demo. The old one is closed."""
        from web.audience import WebAudience
        old = room.session
        try:
            if lesson is not None:
                audience = WebAudience(answer_first=False, on_answer=lambda q, counts: self.notify(
                    f"class:{room.id}:instructor", "class_answers", {"question": q, "counts": counts}))
                session = self.manager.create_lesson_session(lesson, audience, mode="class", lesson_key=lesson_key,
                                                             class_id=room.id)
            else:
                session = self.manager.create(spec, mode="class", class_id=room.id)
        except SandboxLimit as exc:
            raise refused(exc) from None
        room.session = session
        if old is not None:
            self.manager.close(old.id)
        self.notify(f"class:{room.id}", "class_session", {"class": room.id, "sandbox": session.id})
        return session

    def set_paused(self, room: ClassRoom, paused: bool) -> None:
        room.paused = bool(paused)
        self.notify(f"class:{room.id}", "class_paused", {"class": room.id, "paused": room.paused})

    def fork(self, room: ClassRoom) -> list[dict[str, Any]]:
        """Give every student a private cluster like the class's now: the same cluster, with the
        faults the class session applied replayed in order."""
        if room.session is None:
            raise ApiError(409, "the class has no session to copy yet")
        faults = [(r.op, (r.detail or {}).get("args", {})) for r in room.session.bus.since(0)
                  if r.kind == "fault" and r.to_state == "applied"]
        spec = room.session.cluster.spec
        with ThreadPoolExecutor(max_workers=4) as pool:
            return list(pool.map(lambda s: self._fork_one(room, s, spec, faults), list(room.students.values())))

    def _fork_one(self, room: ClassRoom, student: Student, spec, faults) -> dict[str, Any]:
        """The student's old copy closes first: its place is free before the new one takes one,
        so a second hand-out never needs twice the places (a class of 200 on a cap of 300)."""
        if student.sandbox is not None:
            old, student.sandbox, student.sandbox_token = student.sandbox, None, None
            self.manager.close(old)
        try:
            sandbox = self.manager.create(spec, mode="sandbox", class_id=room.id, student=student.id)
        except SandboxLimit as exc:
            return {"student": student.id, "error": str(exc)}
        for op, args in faults:
            apply_fault(sandbox.cluster, op, args, source="fork")
            sandbox.cluster.wait_stable(10)
        student.sandbox, student.sandbox_token = sandbox.id, sandbox.token
        self.notify(f"student:{student.token}", "private_sandbox", {"class": room.id, "sandbox": sandbox.id,
                                                                     "token": sandbox.token})
        return {"student": student.id, "sandbox": sandbox.id}

    # -- students ---------------------------------------------------------------------------------------
    def join(self, code: Any, name: Any) -> tuple[ClassRoom, Student]:
        if not isinstance(name, str) or not name.strip() or len(name) > 40:
            raise ApiError(400, "give a display name of 1 to 40 characters")
        code = code.strip().upper() if isinstance(code, str) else code
        room = next((r for r in self._classes.values() if r.code == code), None)
        if room is None:
            raise ApiError(404, f"no class has the code {code!r}")
        with self._lock:
            student = Student(f"s-{secrets.token_hex(3)}", name.strip(), secrets.token_urlsafe(16))
            room.students[student.token] = student
        self.notify(f"class:{room.id}:instructor", "class_students", room.describe(for_instructor=True))
        return room, student

    def joining(self, class_id: Any, token: Any) -> dict[str, Any]:
        """Who joins ``class_id`` with ``token``: the join's answer (without the snapshot), the
        rooms the socket joins and the class's session now — asked of the worker holding the class."""
        room = self.get(class_id)
        student = self.member(room, token)
        rooms = [f"class:{room.id}", f"class:{room.id}:instructor" if student is None else f"student:{student.token}"]
        answer = {"ok": True, "class": room.describe(for_instructor=student is None), "snapshot": None}
        if student is not None:  # a page that reloads after the fork finds its private copy here
            answer["student"] = {"id": student.id, "name": student.name, "sandbox": student.sandbox,
                                 "sandbox_token": student.sandbox_token}
        return {"answer": answer, "rooms": rooms, "session": room.session.id if room.session else None}

    def member(self, room: ClassRoom, token: Any) -> Student | None:
        """Who holds ``token`` in this class: ``None`` for the instructor, else the student (403)."""
        if isinstance(token, str) and hmac.compare_digest(token, self.instructor_token):
            return None
        return self.student(room, token)

    def records_since(self, room: ClassRoom, token: Any, session_id: Any, since: Any, limit: Any = None) -> dict:
        """The class session's records for its watchers (who hold no token of its sandbox):
        the gaps and history a student's page fetches, as ``GET /api/sandboxes/<id>/records``."""
        self.member(room, token)
        session = room.session
        if session is None or (session_id is not None and session_id != session.id):
            raise ApiError(409, f"session {session_id!r} is not the class's session now "
                                f"({session.id if session else 'none'}): follow the class_session event")
        return records_since(self.manager, session.id, session.token, since, limit)

    def act(self, room: ClassRoom, token: Any, body: Any) -> dict[str, Any]:
        """A fault on the class cluster: the instructor's goes through; a student's is refused
        with the reason (students watch the shared cluster; they act on a private copy)."""
        if self.member(room, token) is not None:
            raise ApiError(403, "only the instructor acts on the class cluster: you are watching it. "
                                "Wait for your private copy to try it yourself.")
        if room.session is None:
            raise ApiError(409, "the class has no cluster yet: start a demo or a lesson first")
        return apply(self.manager, room.session.id, room.session.token, body, source="instructor")

    def answer(self, room: ClassRoom, token: Any, question: Any, given: Any) -> dict[str, int]:
        student = self.student(room, token)
        return submit_answer(room.audience, student.id, question, given)

    def _new_code(self) -> str:
        taken = {r.code for r in self._classes.values()}
        while True:
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(6))
            if code not in taken:
                return code
