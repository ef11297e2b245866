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
from dataclasses import dataclass, field
from typing import Any, Callable

from web.handout import COPY_THREADS, Copier, HandOut
from web.sandbox import Sandbox
from web.sandboxes import SandboxLimit, SandboxManager
from web.service import ApiError, apply, quoted, records_since, refused
from web.teaching import submit_answer

CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: read aloud in a classroom
MAX_STUDENTS_PER_CLASS = 250
"""A class is 30 to 200 students (issue 14); each may be handed a sandbox, so the class is bounded."""
MAX_CLASSES = 100
"""Classes one worker keeps at once: a bound on memory, far above a department's. At the bound, the
classes that are over (every cluster of theirs closed or reaped) are forgotten to make room."""


@dataclass
class Student:
    id: str  # the pseudonym
    name: str
    token: str
    sandbox: str | None = None
    sandbox_token: str | None = None
    copy_error: str | None = None
    """Why the last hand-out built this student no copy (the capacity refusal, a failure), else None."""


@dataclass
class ClassRoom:
    id: str
    code: str
    instructor: str
    students: dict[str, Student] = field(default_factory=dict)  # by token
    session: Sandbox | None = None
    paused: bool = False
    handout: HandOut | None = None
    """The last hand-out of private copies (running or done), for the instructor's progress."""

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
            out["handout"] = self.handout.describe() if self.handout else None
        return out


class ClassRegistry:
    def __init__(self, manager: SandboxManager, instructor_token: str, max_classes: int = MAX_CLASSES,
                 max_students: int = MAX_STUDENTS_PER_CLASS, copy_threads: int = COPY_THREADS) -> None:
        self.manager = manager
        self.instructor_token = instructor_token
        self.max_classes, self.max_students = int(max_classes), int(max_students)
        self._classes: dict[str, ClassRoom] = {}
        self._lock = threading.Lock()
        self.copier = Copier(manager, lambda room, event, data: self.notify(room, event, data), copy_threads)
        """Builds every class's private copies (``web/handout.py``): a few threads for the worker."""
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
            if len(self._classes) >= self.max_classes:
                self._forget_finished()
            if len(self._classes) >= self.max_classes:
                raise ApiError(409, f"this server already holds {len(self._classes)} classes that are still in use "
                                    f"(a shared cluster or a student's copy running), as many as it keeps: reopen "
                                    f"one of yours, or retry once the idle ones are reaped")
            code = self._new_code()
            room = ClassRoom(secrets.token_hex(4), code, name.strip()[:40])
            self._classes[room.id] = room
        self.on_created(room)
        return room

    def _forget_finished(self) -> None:
        """Make room (under the lock) by forgetting the classes that are over: their shared cluster
        and every student's copy closed or reaped as idle, no hand-out running. A server that runs
        for a semester thus keeps its bound without refusing the next class."""
        def over(room: ClassRoom) -> bool:
            sandboxes = [room.session.id if room.session else None, *(s.sandbox for s in room.students.values())]
            running = room.handout is not None and room.handout.running
            return not running and all(i is None or self.manager.get(i) is None for i in sandboxes)
        for class_id in [i for i, room in self._classes.items() if over(room)]:
            del self._classes[class_id]

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

    def fork(self, room: ClassRoom, only_missing: bool = False) -> dict[str, Any]:
        """Start giving every student (``only_missing``: every student without a running copy) a
        private cluster like the class's now — the same cluster, with the faults the class session
        applied replayed in order — and answer at once: the copies are built in the background
        (``web/handout.py``). One hand-out per class at a time."""
        if room.session is None:
            raise ApiError(409, "the class has no session to copy yet")
        applied = room.session.applied
        if applied is None:  # every class session keeps them (SandboxManager._keep_applied)
            raise ApiError(409, "this class's session kept no list of its faults: start a new class session")
        if applied.beyond:
            raise ApiError(409, f"the class session has applied {applied.limit + applied.beyond} faults, and a "
                                f"copy replays at most {applied.limit}, each in turn: start a new class "
                                f"session to hand out copies")
        faults = applied.replayed()
        spec = room.session.cluster.spec
        with self._lock:
            if room.handout is not None and room.handout.running:
                raise ApiError(409, room.handout.busy_message(), handout=room.handout.describe())
            students = list(room.students.values())
            if not students:
                raise ApiError(409, "no student has joined this class yet: there is nobody to hand a copy to")
            if only_missing:
                students = [s for s in students if not self._has_copy(s)]
                if not students:
                    raise ApiError(409, "every student of this class already has a private copy running")
            return self.copier.start(room, students, spec, faults)

    def _has_copy(self, student: Student) -> bool:
        return student.sandbox is not None and self.manager.get(student.sandbox) is not None

    def handout(self, room: ClassRoom) -> dict[str, Any]:
        if room.handout is None:
            raise ApiError(404, "this class has had no hand-out of private copies yet")
        return room.handout.describe()

    def close(self) -> None:
        self.copier.close()

    # -- students ---------------------------------------------------------------------------------------
    def join(self, code: Any, name: Any) -> tuple[ClassRoom, Student]:
        if not isinstance(name, str) or not name.strip() or len(name) > 40:
            raise ApiError(400, "give a display name of 1 to 40 characters")
        code = code.strip().upper() if isinstance(code, str) else code
        room = next((r for r in self._classes.values() if r.code == code), None)
        if room is None:
            raise ApiError(404, f"no class has the code {quoted(code)}")
        with self._lock:
            if len(room.students) >= self.max_students:
                raise ApiError(409, f"this class is full: it has {len(room.students)} students, as many as a class "
                                    f"may have; ask your instructor to open a second class")
            student = Student(f"s-{secrets.token_hex(3)}", name.strip(), secrets.token_urlsafe(16))
            room.students[student.token] = student
        self.copier.include(room, student)  # a hand-out under way builds the latecomer a copy too
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
                                 "sandbox_token": student.sandbox_token, "copy_error": student.copy_error}
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
            raise ApiError(409, f"session {quoted(session_id)} is not the class's session now "
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
