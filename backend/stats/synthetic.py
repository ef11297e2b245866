"""Lesson, class and free-play sessions derived from real replay logs (tests and benchmarks).

The statistics job must be tested on lesson and free-play sessions, but those come from people
clicking. So a real log produced by a fault script (the cluster's part: every record the
controller, ZooKeeper and the brokers wrote) is re-dressed as another kind of session:

- ``lesson`` / ``class``: a ``started`` record before the first fault, each fault wrapped in a
  step (``step_started`` … ``step_finished``, ``op`` = the fault), a ``predict`` step after the
  first fault with one answer (solo lesson; ``student`` sometimes absent) or several (class demo),
  the time students spend thinking added to every later timestamp, and a ``finished`` record
  with ``detail.completed`` — or, for a lesson abandoned half-way, the rest cut off;
- ``sandbox``: every fault marked ``detail.source = "user"`` (a student's click);
- ``script``: unchanged but for the ids.

The shapes follow the lesson runner (``backend/lessons/runner.py``) and ``docs/records.md``.
Seq is renumbered densely and ``cause_seq`` follows it; ``ts_ms`` is moved to the new start and
stretched by ``stretch`` so that durations vary between sessions as they do between machines.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

QUESTION = "Which broker becomes the controller now?"
QUESTION_ID = "next_controller"
WRONG_ANSWERS = ("0", "none", "2", "the same one", " None ")  # " None " counts as "none"
WRONG_WEIGHTS = (6, 3, 2, 1, 1)
MISCONCEPTIONS = {"0": "The dead controller cannot win: its session, and /controller with it, is gone.",
                  "none": "Every live broker watches /controller and races for it when it goes."}
UNSURE = "I'm not sure"  # backend.lessons.answers.UNSURE: neither right nor wrong
P_UNSURE = 0.1


def load_log(path: str | Path) -> tuple[dict, list[dict]]:
    """(header, records) of a replay log, up to its first damaged line."""
    header, records = None, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.endswith("\n"):
                break
            try:
                data = json.loads(line)
            except ValueError:
                break
            if header is None:
                header = data
            else:
                records.append(data)
    if header is None:
        raise ValueError(f"{path}: no session header")
    return header, records


def derive(template: tuple[dict, list[dict]], *, session_id: str, mode: str, started_ms: int,
           rng: random.Random, lesson_id: str | None = None, class_id: str | None = None,
           student: str | None = None, students: tuple[str, ...] = (), stretch: float = 1.0,
           outcome: str = "completed", p_correct: float = 0.6) -> list[dict]:
    """A new session (header first, then records) from ``template``. ``outcome`` for lessons:
    ``completed``, ``stopped`` (finished with completed false) or ``abandoned`` (no finished)."""
    header, records = template
    t0 = header.get("started_ms") or (records[0]["ts_ms"] if records else started_ms)
    new_header = {k: v for k, v in header.items() if k not in ("lesson_id", "class_id", "student")}
    new_header.update(session_id=session_id, mode=mode, started_ms=started_ms)
    for key, value in (("lesson_id", lesson_id), ("class_id", class_id), ("student", student)):
        if value is not None:
            new_header[key] = value
    out = [dict(r, ts_ms=started_ms + round((r["ts_ms"] - t0) * stretch)) for r in records]
    if mode == "sandbox":
        out = [_as_user_fault(r) for r in out]
    elif mode in ("lesson", "class"):
        answerers = list(students) if mode == "class" else [student if rng.random() < 0.7 else None]
        out = _with_lesson(out, lesson_id or header.get("lesson_id") or "lesson", rng, answerers, outcome, p_correct)
    return [new_header, *_renumbered(out, session_id)]


def write_log(path: str | Path, lines: list[dict]) -> Path:
    path = Path(path)
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, separators=(",", ":")) + "\n")
    return path


def _as_user_fault(record: dict) -> dict:
    if record["kind"] != "fault":
        return record
    detail = dict(record.get("detail") or {})
    detail["source"] = "user"
    return dict(record, detail=detail)


def _lesson_record(to_state: str, ts: int, subject: str, **fields) -> dict:
    record = {"kind": "lesson", "subject": subject, "v": 1, "session_id": "", "seq": -1, "ts_ms": ts,
              "to_state": to_state}
    record.update({k: v for k, v in fields.items() if v is not None})
    return record


def _with_lesson(records: list[dict], lesson_id: str, rng: random.Random, answerers: list[str | None],
                 outcome: str, p_correct: float) -> list[dict]:
    faults = [i for i, r in enumerate(records) if r["kind"] == "fault"]
    steps = len(faults) + 1  # one predict step
    cut = len(records)
    if outcome == "abandoned" and faults:
        cut = faults[rng.randrange(len(faults))] + 1
    out: list[dict] = []
    shift, step, open_step = 0, 0, None
    subject = f"lesson:{lesson_id}"
    first_fault = faults[0] if faults else None
    for i, record in enumerate(records[:cut]):
        ts = record["ts_ms"] + shift
        if i == first_fault:
            out.append(_lesson_record("started", ts, subject, op="lesson",
                                      detail={"lesson_id": lesson_id, "title": lesson_id, "steps": steps}))
        if record["kind"] == "fault":
            if open_step is not None:
                out.append(_lesson_record("step_finished", ts, f"step:{open_step[0]}", step=open_step[0], op=open_step[1]))
            step += 1
            open_step = (step, record.get("op"))
            out.append(_lesson_record("step_started", ts, f"step:{step}", step=step, op=record.get("op")))
        out.append(dict(record, ts_ms=ts))
        if i == first_fault:
            shift += _predict(out, ts, step, open_step, rng, answerers, subject, p_correct)
            step += 1
            open_step = None
    end_ts = out[-1]["ts_ms"] if out else 0
    if open_step is not None and outcome != "abandoned":
        out.append(_lesson_record("step_finished", end_ts, f"step:{open_step[0]}", step=open_step[0], op=open_step[1]))
    if outcome != "abandoned" and first_fault is not None:
        out.append(_lesson_record("finished", end_ts, subject, op="lesson",
                                  detail={"completed": outcome == "completed"}))
    return out


def _predict(out: list[dict], ts: int, step: int, open_step, rng, answerers, subject, p_correct) -> int:
    """Close the fault's step, then a predict step the students think about: returns the think time."""
    out.append(_lesson_record("step_finished", ts, f"step:{step}", step=step, op=open_step[1]))
    predict = step + 1
    think = rng.randint(4_000, 30_000)
    out.append(_lesson_record("step_started", ts, f"step:{predict}", step=predict, op="predict"))
    out.append(_lesson_record("step_finished", ts + think, f"step:{predict}", step=predict, op="predict"))
    expected = "1"
    for who in answerers:
        right = rng.random() < p_correct
        answer = expected if right else rng.choices(WRONG_ANSWERS, weights=WRONG_WEIGHTS, k=1)[0]
        correct = answer.strip().lower() == expected
        if not right and rng.random() < P_UNSURE:
            answer, correct = UNSURE, None
        out.append(_lesson_record("answered", ts + think, subject, op="predict", step=predict, student=who,
                                  answer=answer, correct=correct, question=QUESTION_ID,
                                  misconception=None if correct is None else MISCONCEPTIONS.get(answer.strip().lower()),
                                  detail={"question": QUESTION, "expected": expected, "question_id": QUESTION_ID}))
    return think


def _renumbered(records: list[dict], session_id: str) -> list[dict]:
    """Dense seq 0, 1, 2 … in list order; cause_seq follows its record."""
    mapping = {r["seq"]: n for n, r in enumerate(records) if r.get("seq", -1) >= 0}
    out = []
    for n, record in enumerate(records):
        record = dict(record, session_id=session_id, seq=n)
        if record.get("cause_seq") is not None:
            record["cause_seq"] = mapping.get(record["cause_seq"], record["cause_seq"])
        out.append(record)
    return out
