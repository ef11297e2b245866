"""Playing a lesson: the script runner plus the teaching steps, one stop at a time.

Who is watching is an :class:`Audience`. The runner plays the steps up to the next **stop** (a
narration, a question, a pause: ``pacing.is_stop``), shows it and waits there for the
audience's Continue; the cluster keeps running meanwhile — only the script waits — except the
lab's own timers, which the runner holds at a stop that sits between such a timer's start and
its outcome (``pacing.held_timers``; the stop's record names them, so the page can say so).

The headless audience (CI, ``kclab run``) goes on at once and answers no questions — but a
headless run still checks each question's ``expected`` answer against what the cluster actually
does, so a lesson whose story has stopped being true fails in CI. The browser's audiences (a
student's walkthrough, a class) wait for Continue and collect answers.

Each teaching step leaves ``lesson`` records (``started``, ``step_started``, ``step_finished``,
``answered``, ``revealed``, ``finished``) that the page folds and the statistics job reads.
"""

from __future__ import annotations

from typing import Any, Callable

from backend.core.dispatch import dispatch_table
from backend.core.records import Record
from backend.lessons.answers import UNSURE, canonical, grade, matches
from backend.lessons.loader import Lesson
from backend.lessons.pacing import held_timers, is_stop, step_detail, step_note
from backend.lessons.readers import ANSWER_READERS, source_of
from backend.lessons.vocabulary import LESSON_VOCABULARY
from backend.runtime.polling import poll_until
from backend.runtime.runner import RunResult, ScriptRunner
from backend.faultscript.loader import Step

class Audience:
    """Who the lesson plays to. The default is nobody: go on at once, collect no answers."""

    def wait_continue(self, step: Step, prompt: str) -> bool:
        """Block at a stop until Continue; False if the lesson was stopped meanwhile."""
        return True

    def ask(self, step: Step) -> None:
        """A question is open (the page shows it) until the student continues past it."""

    def close_question(self) -> None:
        """The student went on from the question: no more answers to it."""

    def answers(self, question_id: str) -> list[tuple[str | None, str]]:
        """The answers given: (student, answer)."""
        return []

    def stopped(self) -> bool:
        return False


class LessonRunner(ScriptRunner):
    def __init__(self, lesson: Lesson, zk_hosts: str, audience: Audience | None = None, **kwargs) -> None:
        kwargs.setdefault("mode", "lesson")
        super().__init__(lesson.script, zk_hosts, **kwargs)
        self.lesson = lesson
        self.audience = audience or Audience()
        self.action_seq = 0
        self.held = held_timers(lesson)
        self._questions: dict[str, dict[str, Any]] = {}
        self._timed: dict[str, tuple[dict, list[Record]]] = {}

    def asks_about_rules(self) -> bool:
        return super().asks_about_rules() or any(
            step.op == "predict" and "rule_broken" in step.args["answer"] for step in self.script.steps)

    def before_steps(self) -> None:
        self._collect_timed()
        self._lesson_record("started", f"Lesson: {self.lesson.title}.",
                            detail={"lesson_id": self.lesson.id, "title": self.lesson.title,
                                    "steps": len(self.lesson.steps)})

    def _collect_timed(self) -> None:
        """A timed question compares events of the whole lesson (the bus keeps only the newest
        records): collect the records each one times from the start."""
        timed = {}
        for step in self.lesson.steps:
            source = step.args.get("answer") if step.op == "predict" else None
            for kind in ("duration", "speedup"):
                if source and kind in source:
                    timed[step.args["id"]] = (source[kind]["record"], [])
        if timed:
            self._timed = timed
            self.bus.subscribe(lambda records: [found.extend(r for r in records if matches(r, wanted))
                                                for wanted, found in timed.values()])

    def after_run(self, result: RunResult) -> None:
        self._lesson_record("finished", "Lesson complete." if result.ok else f"Lesson stopped: {result.message}",
                            detail={"completed": result.ok})

    def run_step(self, step: Step) -> RunResult:
        if self.audience.stopped():
            return RunResult(False, "the lesson was stopped", step)
        held = self.held.get(step.index, ())
        if step.op == "predict":
            self._ask(step)
        self._lesson_record("step_started", step_note(step), step=step, subject=f"step:{step.index}",
                            detail=step_detail(step, held))
        if step.op not in TEACH:
            self.action_seq = self.bus.next_seq
            result = super().run_step(step)
        else:
            result = TEACH[step.op](self, step)
        if result.ok and is_stop(step):
            result = self._wait_at_stop(step, held)
        if result.ok:
            self._lesson_record("step_finished", None, step=step, subject=f"step:{step.index}",
                                detail={"args": step.args, "line": step.line})
        return result

    def _wait_at_stop(self, step: Step, held: tuple[str, ...]) -> RunResult:
        """Wait for Continue, the lab's timers held if this stop sits inside one's window."""
        if held:
            self.cluster.clock.hold()
        try:
            going_on = self.audience.wait_continue(step, step.args.get("prompt") or "Continue")
        finally:
            if held:
                self.cluster.clock.release()
            if step.op == "predict":
                self.audience.close_question()
        return RunResult(True, "ok", step) if going_on else RunResult(False, "the lesson was stopped", step)

    # -- the teaching steps -----------------------------------------------------------------------
    def _ok(self, step: Step) -> RunResult:
        return RunResult(True, "ok", step)

    def _teach_say(self, step: Step) -> RunResult:
        print(f"\n{step.args['text'].strip()}\n", file=self.log, flush=True)
        return self._ok(step)

    def _teach_await(self, step: Step) -> RunResult:
        wanted = step.args["record"]
        found = self.bus.wait_for(lambda r: matches(r, wanted), self.action_seq, step.args["timeout_ms"] / 1000)
        return self._ok(step) if found is not None else self._fail(step, step.args["message"])

    def _teach_direct(self, step: Step) -> RunResult:
        self.cluster.stage.pin_winner(step.args["winner"])
        return self._ok(step)

    def _ask(self, step: Step) -> None:
        # Only a "which znodes change" question needs the tree as it is now (a walk of every znode,
        # which also needs a ZooKeeper quorum).
        source = step.args["answer"]
        question = {"step": step, "znodes": self.cluster.znode_versions() if "znodes_changed" in source else {},
                    "timed": self._timed.get(step.args["id"], (None, []))[1], "since": self.bus.next_seq}
        self._questions[step.args["id"]] = question
        self.audience.ask(step)

    def _teach_reveal(self, step: Step) -> RunResult:
        question = self._questions[step.args["predict"]]
        predict: Step = question["step"]
        expected = canonical(predict.args["expected"])

        def read() -> str:
            return canonical(ANSWER_READERS[source_of(predict.args["answer"])](self, predict.args["answer"], question))
        try:  # the cluster may still be on its way to the expected answer
            poll_until(lambda: read() == expected, step.args["within_ms"] / 1000, "the predicted answer", 0.05)
            actual = expected
        except TimeoutError:
            actual = read()
        explain = predict.args["explain"]
        for student, answer in self.audience.answers(predict.args["id"]):
            graded = grade(answer, actual, predict.args.get("misconceptions"))
            self._lesson_record("answered", _answer_note(student, graded, actual, explain), step=predict,
                                student=student, answer=graded.answer, correct=graded.correct,
                                question=predict.args["id"], misconception=graded.misconception,
                                detail={"question": predict.args["question"], "expected": actual,
                                        "question_id": predict.args["id"]})
        self._lesson_record("revealed", f"The cluster's answer: {actual}. {explain}", step=step, answer=actual,
                            question=predict.args["id"], detail={"question_id": predict.args["id"],
                                                                 "expected": expected})
        if actual != expected:
            return self._fail(step, f"question {predict.args['id']!r}: the lesson expects {expected}, but the cluster "
                                    f"answered {actual}")
        return self._ok(step)

    # -- records --------------------------------------------------------------------------------------
    def _lesson_record(self, to_state: str, note: str | None, step: Step | None = None, subject: str | None = None,
                       detail: dict | None = None, **fields: Any) -> None:
        self.bus.emit([Record(kind="lesson", subject=subject or f"lesson:{self.lesson.id}", to_state=to_state,
                              op=step.op if step else "lesson", step=step.index if step else None, note=note,
                              detail=detail, **fields)])


TEACH: dict[str, Callable[[LessonRunner, Step], RunResult]] = dispatch_table(LESSON_VOCABULARY.of_kind("lesson"), {
    "say": LessonRunner._teach_say, "pause": LessonRunner._ok, "await": LessonRunner._teach_await,
    "highlight": LessonRunner._ok, "predict": LessonRunner._ok, "reveal": LessonRunner._teach_reveal,
    "direct": LessonRunner._teach_direct,
}, "teaching steps")
"""What the lesson runner does with each teaching step (a ``predict`` is asked before the step
starts, in ``run_step``; ``pause`` and ``highlight`` only leave their records)."""


def _answer_note(student: str | None, graded, actual: str, explain: str) -> str:
    who = student or "The student"
    if graded.answer == UNSURE:
        return f"{who} was not sure; the cluster says {actual}. {explain}"
    if graded.correct:
        return f"{who} answered {graded.answer!r}: right."
    because = f" {graded.misconception}" if graded.misconception else ""
    return f"{who} answered {graded.answer!r}: the cluster says {actual}.{because} {explain}"
