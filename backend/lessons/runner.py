"""Playing a lesson: the script runner plus the teaching steps.

Who is watching is an :class:`Audience`. The headless audience (CI, ``kclab run``) goes on at
every ``pause`` and answers no questions — but a headless run still checks each question's
``expected`` answer against what the cluster actually does, so a lesson whose story has stopped
being true fails in CI. The browser's audiences (a student's walkthrough, a class) wait for
Continue and collect answers.

Each teaching step leaves ``lesson`` records (``started``, ``step_started``, ``step_finished``,
``answered``, ``finished``) that the statistics job reads.
"""

from __future__ import annotations

import json
from typing import Any

from backend.core.records import Record
from backend.lessons.loader import Lesson
from backend.runtime.polling import poll_until
from backend.runtime.runner import RunResult, ScriptRunner
from backend.scripts.expect import decode_znode
from backend.scripts.loader import Step

TEACHING_OPS = ("say", "pause", "await", "highlight", "predict", "reveal", "direct")


class Audience:
    """Who the lesson plays to. The default is nobody: go on at once, collect no answers."""

    def wait_continue(self, step: Step, prompt: str) -> bool:
        """Block until Continue; False if the lesson was stopped meanwhile."""
        return True

    def ask(self, step: Step) -> None:
        """A question is open (the page shows it)."""

    def answers(self, question_id: str) -> list[tuple[str | None, str]]:
        """The answers given so far: (student, answer)."""
        return []

    def stopped(self) -> bool:
        return False


def canonical(value: Any) -> str:
    """One spelling per answer, so "2", 2 and [2] compare as the cluster's 2 does."""
    if isinstance(value, (list, tuple)):
        return ",".join(canonical(v) for v in value)
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return str(value).strip()


class LessonRunner(ScriptRunner):
    def __init__(self, lesson: Lesson, zk_hosts: str, audience: Audience | None = None, **kwargs) -> None:
        kwargs.setdefault("mode", "lesson")
        super().__init__(lesson.script, zk_hosts, **kwargs)
        self.lesson = lesson
        self.audience = audience or Audience()
        self.action_seq = 0
        self._questions: dict[str, dict[str, Any]] = {}

    def asks_about_rules(self) -> bool:
        return super().asks_about_rules() or any(
            step.op == "predict" and "rule_broken" in step.args["answer"] for step in self.script.steps)

    def before_steps(self) -> None:
        self._lesson_record("started", f"Lesson: {self.lesson.title}.",
                            detail={"lesson_id": self.lesson.id, "title": self.lesson.title,
                                    "steps": len(self.lesson.steps)})

    def after_run(self, result: RunResult) -> None:
        self._lesson_record("finished", "Lesson complete." if result.ok else f"Lesson stopped: {result.message}",
                            detail={"completed": result.ok})

    def run_step(self, step: Step) -> RunResult:
        if self.audience.stopped():
            return RunResult(False, "the lesson was stopped", step)
        self._step_record(step, "step_started")
        if step.op not in TEACHING_OPS:
            self.action_seq = self.bus.next_seq
            result = super().run_step(step)
        else:
            result = getattr(self, f"_teach_{step.op}")(step)
        if result.ok:
            self._step_record(step, "step_finished")
        return result

    # -- the teaching steps -----------------------------------------------------------------------
    def _teach_say(self, step: Step) -> RunResult:
        self._say_text(step.args["text"])
        return RunResult(True, "ok", step)

    def _teach_pause(self, step: Step) -> RunResult:
        if not self.audience.wait_continue(step, step.args["prompt"]):
            return RunResult(False, "the lesson was stopped", step)
        return RunResult(True, "ok", step)

    def _teach_await(self, step: Step) -> RunResult:
        wanted = step.args["record"]
        found = self.bus.wait_for(lambda r: _matches(r, wanted), self.action_seq, step.args["timeout_ms"] / 1000)
        if found is None:
            return self._fail(step, step.args["message"])
        return RunResult(True, "ok", step)

    def _teach_highlight(self, step: Step) -> RunResult:
        return RunResult(True, "ok", step)

    def _teach_direct(self, step: Step) -> RunResult:
        self.cluster.election_winner = step.args["winner"]
        return RunResult(True, "ok", step)

    def _teach_predict(self, step: Step) -> RunResult:
        # Only a "which znodes change" question needs the tree as it is now (a walk of every znode,
        # which also needs a ZooKeeper quorum): the other answers are read when revealed.
        source = step.args["answer"]
        asks_znodes = "znodes_changed" in source
        self._questions[step.args["id"]] = {"step": step, "seq": self.bus.next_seq,
                                            "znodes": self.cluster.znode_versions() if asks_znodes else {}}
        self.audience.ask(step)
        return RunResult(True, "ok", step)

    def _teach_reveal(self, step: Step) -> RunResult:
        question = self._questions[step.args["predict"]]
        predict: Step = question["step"]
        expected = canonical(predict.args["expected"])
        def read() -> str:
            return canonical(self._read_answer(predict.args["answer"], question))
        try:  # the cluster may still be on its way to the expected answer
            poll_until(lambda: read() == expected, step.args["within_ms"] / 1000, "the predicted answer", 0.05)
            actual = expected
        except TimeoutError:
            actual = read()
        for student, answer in self.audience.answers(predict.args["id"]):
            correct = canonical(answer) == actual
            self._lesson_record(
                "answered", f"{student or 'The student'} answered {answer!r}: "
                            + ("right." if correct else f"the cluster says {actual}. {predict.args['explain']}"),
                step=predict, student=student, answer=str(answer), correct=correct,
                detail={"question": predict.args["question"], "expected": actual, "question_id": predict.args["id"]})
        self._lesson_record("revealed", f"The cluster's answer: {actual}. {predict.args['explain']}", step=step,
                            answer=actual, detail={"question_id": predict.args["id"], "expected": expected})
        if actual != expected:
            return self._fail(step, f"question {predict.args['id']!r}: the lesson expects {expected}, but the cluster "
                                    f"answered {actual}")
        return RunResult(True, "ok", step)

    def _read_answer(self, source: dict, question: dict) -> Any:
        if "partition" in source:
            return self.cluster.view()["partitions"].get(source["partition"], {}).get(source["field"])
        if "controller" in source:
            view = self.cluster.view()
            return view["controller"] if source["controller"] == "id" else view["controller_epoch"]
        if "znode" in source:
            data = self.cluster.view([source["znode"]])["znodes"].get(source["znode"])
            if data is None:
                return None  # no such znode
            return decode_znode(data)[0]
        if "produce" in source:
            return self.cluster.producer.last_error
        if "rule_broken" in source:
            return self.rules.first_broken_since(question["seq"]) or "none"
        before, after = question["znodes"], self.cluster.znode_versions()
        return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))

    # -- records --------------------------------------------------------------------------------------
    def _step_record(self, step: Step, to_state: str) -> None:
        detail = {"args": step.args, "line": step.line}
        note = None
        if step.op == "say":
            note = step.args["text"]
        elif step.op == "predict":
            note = step.args["question"]
            detail = {**detail, "question": step.args["question"], "choices": step.args.get("choices")}
        elif step.op == "highlight":
            note = step.args.get("note")
        elif step.op == "direct":
            note = step.args.get("note") or f"Stage direction: broker {step.args['winner']} wins the next election."
        if to_state == "step_finished":
            note = None
        self._lesson_record(to_state, note, step=step, detail=detail, subject=f"step:{step.index}")

    def _lesson_record(self, to_state: str, note: str | None, step: Step | None = None, subject: str | None = None,
                       detail: dict | None = None, **fields: Any) -> None:
        self.bus.emit([Record(kind="lesson", subject=subject or f"lesson:{self.lesson.id}", to_state=to_state,
                              op=step.op if step else "lesson", step=step.index if step else None, note=note,
                              detail=detail, **fields)])

    def _say_text(self, text: str) -> None:
        print(f"\n{text.strip()}\n", file=self.log, flush=True)


def _matches(record: Record, wanted: dict) -> bool:
    for name, value in wanted.items():
        found = getattr(record, name)
        if isinstance(found, tuple):
            found = list(found)
        if canonical(found) != canonical(value):
            return False
    return True
