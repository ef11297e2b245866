"""The audience a lesson plays to in the browser: one student in a walkthrough, or a class.

The lesson runner's thread blocks in ``wait_continue`` at every stop until someone presses
Continue (the student, or the instructor for the whole class) and reads the answers collected
for a question when it reaches the ``reveal``. Pages learn where the lesson is from its
``lesson`` records; this object only holds what the runner waits for.

A question is open while the lesson waits at its ``predict`` stop, and only then: answers are
one of its choices or "I'm not sure" (``backend.lessons.answers``). In a walkthrough Continue is
refused until the student has answered — predict, then observe; in a class the instructor
decides when to go on (whoever has not answered by then has simply not answered).
"""

from __future__ import annotations

import threading
from typing import Callable

from backend.lessons.answers import allowed_answer
from backend.lessons.runner import Audience
from backend.faultscript.loader import Step
from web.service import quoted


class NotNow(Exception):
    """Continue or an answer that the lesson cannot take right now; the message says why."""


class WebAudience(Audience):
    def __init__(self, fast_forward_to: int = 0, on_answer: Callable[[str, dict], None] | None = None,
                 answer_first: bool = True) -> None:
        """Stops before step ``fast_forward_to`` are passed at once (rewinding replays the lesson up
        to where the student was); ``on_answer(question, counts)`` tells an instructor's page;
        ``answer_first``: Continue at a question needs an answer (a walkthrough's student)."""
        self.fast_forward_to = fast_forward_to
        self.answer_first = answer_first
        self._cond = threading.Condition()
        self._continue = False
        self._stopped = False
        self.waiting_step: int | None = None
        self.open_question: str | None = None
        self.last_question: str | None = None
        """The question asked last, open or not: its tally stays on the instructor's chart."""
        self._choices: list[str] = []
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

    def press_continue(self) -> None:
        """Go on from the stop the lesson waits at; :class:`NotNow` says why it cannot."""
        with self._cond:
            if self.waiting_step is None:
                raise NotNow("the lesson is not waiting for Continue right now")
            question = self.open_question
            if self.answer_first and question is not None and not self._answers.get(question):
                raise NotNow("answer the question first — pick a choice, or “I'm not sure” — then continue")
            self._continue = True
            self._cond.notify_all()

    def ask(self, step: Step) -> None:
        with self._cond:
            self.open_question = self.last_question = step.args["id"]
            self._choices = [str(c) for c in step.args["choices"]]
            self._answers.setdefault(self.open_question, {})

    def close_question(self) -> None:
        with self._cond:
            self.open_question = None

    def answer(self, student: str, question: str, answer) -> dict[str, int]:
        """Record (or change) one student's answer; returns the counts per answer so far."""
        with self._cond:
            if question != self.open_question:
                raise NotNow(f"question {quoted(question)} is not open (the open one is {self.open_question!r})")
            given = allowed_answer(answer, self._choices)
            if given is None:
                raise ValueError(f"{quoted(answer)} is not one of the choices ({', '.join(self._choices)}) "
                                 f"nor “I'm not sure”")
            self._answers[question][student] = given
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

    def wait_stopped(self) -> None:
        """Block until the lesson's sandbox closes (its thread may have to outlive the lesson)."""
        with self._cond:
            self._cond.wait_for(lambda: self._stopped)

    def stopped(self) -> bool:
        return self._stopped
