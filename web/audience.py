"""The audience a lesson plays to in the browser: one student in a walkthrough, or a class.

The lesson runner's thread blocks in ``wait_continue`` until someone presses Continue (the
student, or the instructor for the whole class) and reads the answers collected for a question
when it reaches the ``reveal``. Pages learn where the lesson is from its ``lesson`` records;
this object only holds what the runner waits for.
"""

from __future__ import annotations

import threading
from typing import Callable

from backend.lessons.runner import Audience
from backend.scripts.loader import Step


class WebAudience(Audience):
    def __init__(self, fast_forward_to: int = 0, on_answer: Callable[[str, dict], None] | None = None) -> None:
        """Pauses before step ``fast_forward_to`` are skipped (rewinding replays the lesson up to
        where the student was); ``on_answer(question, counts)`` tells an instructor's page."""
        self.fast_forward_to = fast_forward_to
        self._cond = threading.Condition()
        self._continue = False
        self._stopped = False
        self.waiting_step: int | None = None
        self.open_question: str | None = None
        self._answers: dict[str, dict[str, str]] = {}
        self._on_answer = on_answer

    def wait_continue(self, step: Step, prompt: str) -> bool:
        if step.index < self.fast_forward_to:
            return True
        with self._cond:
            self.waiting_step = step.index
            self._cond.wait_for(lambda: self._continue or self._stopped)
            self._continue, self.waiting_step = False, None
            return not self._stopped

    def press_continue(self) -> bool:
        """True if the lesson was waiting for it."""
        with self._cond:
            if self.waiting_step is None:
                return False
            self._continue = True
            self._cond.notify_all()
            return True

    def ask(self, step: Step) -> None:
        with self._cond:
            self.open_question = step.args["id"]
            self._answers.setdefault(self.open_question, {})

    def answer(self, student: str, question: str, answer: str) -> dict[str, int]:
        """Record (or change) one student's answer; returns the counts per answer so far."""
        with self._cond:
            if question not in self._answers:
                raise KeyError(question)
            self._answers[question][student] = str(answer)
            counts = self.counts(question)
        if self._on_answer is not None:
            self._on_answer(question, counts)
        return counts

    def counts(self, question: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for given in self._answers.get(question, {}).values():
            out[given] = out.get(given, 0) + 1
        return out

    def answers(self, question_id: str) -> list[tuple[str | None, str]]:
        with self._cond:
            return sorted(self._answers.get(question_id, {}).items())

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def stopped(self) -> bool:
        return self._stopped
