"""A lesson's pace: which steps are stops, which clocks run while a stop waits, and what
``kclab lessons check`` says about it.

A **stop** is a step at which the runner waits for Continue: every ``say`` that is not a
caption, every ``predict`` and every ``pause``. Real time passes at a stop — as long as the
student likes — while the cluster keeps running. So a stop must never sit between a timer's
start and the ``await`` of its outcome, or a slow reader would see the outcome before the
lesson shows it (or the lesson's checks would fail). Two kinds of timer:

* **the lab's own** (a leader's lag check, ``replica.lag.time.max.ms``; the auto-rebalance
  scheduler, ``leader.imbalance.check.interval.seconds``): the runner *holds* them while such a
  stop waits, and the page says so — for the cluster no time passes;
* **ZooKeeper's session clock** (a paused or crashed broker's session) and a produce stream's
  backlog: nobody can hold those, so a stop inside their window is a problem to fix — move the
  stop after the ``await``, or make the narration a caption.

The table :data:`TIMERS` maps each op to the timer it starts (one dispatch style: a table).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable

from backend.core.config import KafkaConfig
from backend.view.lesson_view import fold_lesson
from backend.faultscript.loader import Problem, Step
from backend.faultscript.vocabulary import FAULT_VOCABULARY

MAX_SENTENCES = 4
"""A stop holds one idea: two or three sentences (a fourth for a definition), not a page."""


def is_stop(step: Step) -> bool:
    if step.op == "say":
        return not step.args.get("caption", False)
    return step.op in ("predict", "pause")


@dataclass(frozen=True)
class Timer:
    """A clock one step starts; ``outcomes`` are record patterns an ``await`` of its outcome has."""

    started_by: Step
    setting: str
    what: str
    lab: bool
    outcomes: tuple[dict, ...] = ()
    ended_by: tuple[str, ...] = ()
    broker: int | None = None

    def describe(self) -> str:
        return f"{self.what} ({self.setting}), started by {self.started_by.where} ({self.started_by.op})"

    def resolved_by(self, step: Step) -> bool:
        if step.op in self.ended_by and step.args.get("broker") in (None, self.broker):
            return True
        if step.op != "await":
            return False
        wanted = step.args["record"]
        return any(all(wanted.get(k) == v for k, v in pattern.items()) for pattern in self.outcomes)


SESSION_OUTCOMES = ({"kind": "zk", "to_state": "deleted"}, {"kind": "controller", "to_state": "elected"},
                    {"kind": "controller_event", "op": "BrokerChange"}, {"kind": "election"},
                    {"kind": "broker", "to_state": "session_expired"}, {"kind": "partition"}, {"kind": "replica"},
                    {"kind": "isr"}, {"kind": "request"})


def _lag_check(step: Step, config: KafkaConfig) -> Timer:
    return Timer(step, "replica.lag.time.max.ms", f"broker {step.args['broker']}'s leader's lag check", True,
                 ({"kind": "isr", "to_state": "shrunk"},), ("resume_follower",), step.args["broker"])


def _session(what: str) -> Callable[[Step, KafkaConfig], Timer]:
    def timer(step: Step, config: KafkaConfig) -> Timer:
        return Timer(step, "zookeeper.session.timeout.ms", f"ZooKeeper's clock on broker {step.args['broker']}'s "
                                                           f"{what} session", False, SESSION_OUTCOMES,
                     ("resume_broker", "expire_session", "start_broker"), step.args["broker"])
    return timer


def _backlog(step: Step, config: KafkaConfig) -> Timer | None:
    if "rate" not in step.args:
        return None  # produced at once: nothing left flowing
    return Timer(step, "kclab.request.handling.ms", "the produce requests' backlog", False,
                 ({"kind": "request", "op": "LeaderAndIsr", "to_state": "applied"},))


TIMERS: dict[str, Callable[[Step, KafkaConfig], Timer | None]] = {
    "stall_follower": _lag_check,
    "pause_broker": _session("frozen broker's"),
    "crash_broker": _session("crashed broker's"),
    "produce": _backlog,
}


def running_timers(steps: Iterable[Step], config: KafkaConfig) -> dict[int, tuple[Timer, ...]]:
    """For each stop (by step index), the timers running while it waits."""
    running: list[Timer] = []
    if config["auto.leader.rebalance.enable"]:  # static: only the cluster's own setting starts it
        running.append(Timer(Step(0, 1, "cluster", {}), "leader.imbalance.check.interval.seconds",
                             "the controller's leader-imbalance check", True))
    out = {}
    for step in steps:
        if is_stop(step):
            out[step.index] = tuple(running)
        running = [t for t in running if not t.resolved_by(step)]
        started = TIMERS.get(step.op, lambda s, c: None)(step, config)
        if started is not None:
            running.append(started)
    return out


def held_timers(lesson) -> dict[int, tuple[str, ...]]:
    """The lab timers the runner holds at each stop (by step index): their settings' names."""
    windows = running_timers(lesson.steps, KafkaConfig(lesson.script.cluster.config))
    return {index: tuple(dict.fromkeys(t.setting for t in timers if t.lab)) for index, timers in windows.items()
            if any(t.lab for t in timers)}


# -- what `kclab lessons check` reports -------------------------------------------------------------
def pacing_problems(lesson) -> list[Problem]:
    """Every problem of pace in one lesson, each at its line."""
    return [*timer_problems(lesson), *predict_problems(lesson), *narration_problems(lesson)]


def timer_problems(lesson) -> list[Problem]:
    windows = running_timers(lesson.steps, KafkaConfig(lesson.script.cluster.config))
    problems = []
    for step in lesson.steps:
        for timer in windows.get(step.index, ()):
            if not timer.lab:
                problems.append(Problem(lesson.filename, step.line, (
                    f"{step.where} ({step.op}) is a stop while {timer.describe()} runs, and nobody can hold that "
                    f"clock: a slow reader would see its outcome early. Await the outcome before the stop, or "
                    f"make this narration a caption.")))
    return problems


def predict_problems(lesson) -> list[Problem]:
    """At least two predictions, each asked before what decides it: a fault, or an ``await`` of
    the cluster's own doing (a timer's event), between the question and its answer."""
    predicts = [s for s in lesson.steps if s.op == "predict"]
    problems = []
    if len(predicts) < 2:
        problems.append(Problem(lesson.filename, 1, f"a lesson asks at least two predictions; this one asks "
                                                    f"{len(predicts)}"))
    asked = {s.args["id"]: s for s in predicts}
    for reveal in (s for s in lesson.steps if s.op == "reveal"):
        predict = asked.get(reveal.args["predict"])
        if predict is None:
            continue
        between = [s for s in lesson.steps if predict.index < s.index < reveal.index
                   and (s.op in FAULT_VOCABULARY or s.op == "await")]
        if not between:
            problems.append(Problem(lesson.filename, reveal.line, (
                f"{reveal.where} reveals {predict.args['id']!r}, but nothing happens to the cluster between the "
                f"question and the answer: ask it before the fault that decides it")))
    return problems


def narration_problems(lesson) -> list[Problem]:
    """Every narration is on screen at a stop (or at the end), and a stop holds one idea."""
    problems = []
    for step in lesson.steps:
        text = step.args.get("text") if step.op == "say" else None
        if text and sentences(text) > MAX_SENTENCES:
            problems.append(Problem(lesson.filename, step.line, (
                f"{step.where}: {sentences(text)} sentences at one stop; a stop holds one idea (two or three "
                f"sentences): split it")))
        for line in _list_by_accident(text or ""):
            problems.append(Problem(lesson.filename, step.line, (
                f"{step.where}: a line of its text starts with {line!r} inside a paragraph, so Markdown shows a "
                f"numbered list there: rewrap the text")))
    for step, what in unseen_narration(lesson):
        problems.append(Problem(lesson.filename, step.line, (
            f"{step.where}: its {what} could be replaced before the student has it on screen at a stop")))
    return problems


def _list_by_accident(text: str) -> list[str]:
    """Lines that continue a paragraph but start like a numbered list item ("4. Two members…")."""
    lines = text.split("\n")
    return [line.strip()[:3] for before, line in zip(lines, lines[1:])
            if re.match(r"\s*\d+\. ", line) and before.strip() and not re.match(r"\s*\d+\. ", before)]


def sentences(text: str) -> int:
    plain = re.sub(r"`[^`]*`", "x", text)
    plain = re.sub(r"\b(e\.g|i\.e|etc|vs)\.", "x", plain)
    return len(re.findall(r"[.!?](?:\s|$)", plain.strip() + " ")) or 1


def unseen_narration(lesson) -> list[tuple[Step, str]]:
    """Play the lesson's own records through the page's fold (``lesson_view``) and note what was
    on screen whenever the student could read: at each stop, and at the end."""
    view: dict = {"lesson": None}
    fold_lesson(view, {"to_state": "started", "detail": {"lesson_id": lesson.id, "steps": len(lesson.steps)}})
    shown: set[tuple[str, object]] = set()
    wanted: dict[tuple[str, object], tuple[Step, str]] = {}
    for step in lesson.steps:
        for key, what in _narration_of(step):
            wanted[key] = (step, what)
        for record in lesson_records(step):
            fold_lesson(view, record)
            if record["to_state"] == "step_started" and is_stop(step):
                shown |= on_screen(view["lesson"])
    fold_lesson(view, {"to_state": "finished", "detail": {"completed": True}})
    shown |= on_screen(view["lesson"])
    return [found for key, found in wanted.items() if key not in shown]


def _narration_of(step: Step) -> list[tuple[tuple[str, object], str]]:
    if step.op == "say":
        return [(("say", step.index), "narration")]
    if step.op == "highlight" and step.args.get("note"):
        return [(("say", step.index), "highlight's note")]
    if step.op == "reveal":
        return [(("reveal", step.args["predict"]), "answer")]
    return []


def on_screen(lesson: dict) -> set[tuple[str, object]]:
    """What the lesson panel shows for ``view["lesson"]``: the narration, the captions, the answers."""
    out = {("say", c["step"]) for c in lesson["captions"]}
    if lesson["say"] is not None:
        out.add(("say", lesson["say"]["step"]))
    return out | {("reveal", q) for q in lesson["revealed"]}


def lesson_records(step: Step) -> list[dict]:
    """The ``lesson`` records the runner leaves for one step (without the cluster's answers)."""
    started = {"to_state": "step_started", "step": step.index, "op": step.op, "note": step_note(step),
               "detail": step_detail(step)}
    out = [started]
    if step.op == "reveal":
        out.append({"to_state": "revealed", "step": step.index, "op": "reveal", "answer": None,
                    "question": step.args["predict"], "detail": {"question_id": step.args["predict"]}})
    out.append({"to_state": "step_finished", "step": step.index, "op": step.op, "detail": {"args": step.args}})
    return out


def step_note(step: Step) -> str | None:
    """The sentence a step's ``step_started`` record carries for the page."""
    return {"say": lambda: step.args["text"], "predict": lambda: step.args["question"],
            "highlight": lambda: step.args.get("note"),
            "direct": lambda: step.args.get("note") or f"Stage direction: broker {step.args['winner']} wins the "
                                                       f"next controller election."}.get(step.op, lambda: None)()


def step_detail(step: Step, held: Iterable[str] = ()) -> dict:
    detail = {"args": step.args, "line": step.line, "stop": is_stop(step)}
    if step.op == "predict":
        detail.update(question=step.args["question"], choices=step.args["choices"])
    held = list(held)
    if held:
        detail["held_timers"] = held
    return detail
