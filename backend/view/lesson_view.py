"""A lesson's progress in the page's view state: ``view["lesson"]``, folded from ``lesson`` records.

Part of the one fold (``cluster_view``), kept apart because it is its own concern. The browser
has the same fold in ``static/js/lesson-model.js``; ``tests/js/test_model_contract.py`` checks
both on a real lesson's replay log. A page that reloads, or a student who joins a class late,
gets this in the server's snapshot and so sees where the lesson is without any other state.

What the panel shows follows from it: the narration of the last stop (``say``), the captions and
the answers revealed since the student last pressed Continue (``captions``, ``revealed``: they
stay until the next stop is passed, so nothing is replaced unseen), the question of each
``predict``, and every stop with the seqs at which it was reached and passed (``stops``: Back
shows the cluster at a stop from the recorded records).
"""

from __future__ import annotations


def fold_lesson(view: dict, r: dict) -> None:
    """Where a lesson is, from its records alone (backend/lessons/runner.py writes them): the
    runner thread only blocks at a stop, so the page needs no other state to draw the lesson."""
    to_state, detail = r.get("to_state"), r.get("detail") or {}
    if to_state == "started":
        view["lesson"] = {"id": detail.get("lesson_id"), "title": detail.get("title"), "steps": detail.get("steps"),
                          "step": 0, "op": None, "line": None, "status": "running", "note": None, "say": None,
                          "captions": [], "highlight": None, "prompt": None, "awaiting": None, "question": None,
                          "questions": {}, "revealed": [], "answers": [], "stop": None, "stops": [],
                          "completed": None}
        return
    lesson = view["lesson"]
    if lesson is None:
        return  # a lesson record before the lesson started: nothing to attach it to
    if to_state == "step_started":
        _step_started(lesson, r, detail)
    elif to_state == "step_finished":
        _step_finished(lesson, r)
    elif to_state == "answered":
        lesson["answers"].append({"student": r.get("student"), "answer": r.get("answer"), "correct": r.get("correct"),
                                  "question": r.get("question") or detail.get("question_id"),
                                  "misconception": r.get("misconception"), "note": r.get("note")})
    elif to_state == "revealed":
        question = lesson["questions"].get(detail.get("question_id"))
        if question is not None:
            _update_question(lesson, question["id"], answer=r.get("answer"), explain=r.get("note"), state="revealed")
            lesson["revealed"].append(question["id"])
    elif to_state == "finished":
        lesson.update(status="finished" if detail.get("completed") else "stopped", completed=detail.get("completed"),
                      note=r.get("note"), stop=None)


def _step_started(lesson: dict, r: dict, detail: dict) -> None:
    step, op, args = r.get("step"), r.get("op"), detail.get("args") or {}
    stop = bool(detail.get("stop"))
    lesson.update(step=step, op=op, line=detail.get("line"), note=r.get("note"),
                  status="waiting" if stop else "running")
    if op == "say":
        targets = args.get("highlight")
        if args.get("caption"):
            lesson["captions"].append({"step": step, "text": r.get("note"), "kind": "caption"})
        else:
            lesson["say"] = {"step": step, "text": r.get("note")}
            lesson["highlight"] = None  # a highlight belongs to the narration it follows
        if targets:
            lesson["highlight"] = {"step": step, "targets": targets, "note": None}
    elif op == "highlight":
        lesson["highlight"] = {"step": step, "targets": args.get("targets") or [], "note": r.get("note")}
        if r.get("note"):
            lesson["captions"].append({"step": step, "text": r.get("note"), "kind": "highlight"})
    elif op == "predict":
        question = {"id": args.get("id"), "step": step, "text": detail.get("question"),
                    "choices": detail.get("choices"), "answer": None, "explain": None, "state": "open"}
        lesson["questions"][question["id"]] = question
        lesson["question"] = question
    elif op == "await":
        lesson["awaiting"] = {"step": step, "record": args.get("record"), "message": args.get("message"),
                              "timeout_ms": args.get("timeout_ms")}
    elif op == "pause":
        lesson["prompt"] = args.get("prompt")
    if stop:
        lesson["stop"] = {"step": step, "op": op, "held": detail.get("held_timers") or []}
        lesson["stops"].append({"step": step, "op": op, "seq": r.get("seq"), "done_seq": None})


def _step_finished(lesson: dict, r: dict) -> None:
    step, op = r.get("step"), r.get("op")
    if step == lesson["step"]:
        lesson["status"] = "running"
    if op == "await":
        lesson["awaiting"] = None
    stop = lesson["stop"]
    if stop is not None and stop["step"] == step:  # Continue: what the student has seen makes way
        lesson.update(stop=None, captions=[], revealed=[])
        lesson["stops"][-1]["done_seq"] = r.get("seq")
        question = lesson["question"]
        if op == "predict" and question is not None and question["state"] == "open":
            _update_question(lesson, question["id"], state="asked")


def _update_question(lesson: dict, question_id, **changes) -> None:
    """``questions[id]`` and, when it is that one, ``question`` (the latest) change together. They
    are two copies, not one object: a snapshot sent as JSON (a page that joins, a reload) keeps
    no shared objects, and the page's fold must go on from it exactly as the server's does."""
    for question in (lesson["questions"].get(question_id), lesson["question"]):
        if question is not None and question["id"] == question_id:
            question.update(changes)
