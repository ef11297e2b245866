"""A lesson's progress in the page's view state: ``view["lesson"]``, folded from ``lesson`` records.

Part of the one fold (``cluster_view``), kept apart because it is its own concern. The browser
has the same fold in ``static/js/lesson-model.js``; ``tests/js/test_model_contract.py`` checks
both on a real lesson's replay log. A page that reloads, or a student who joins a class late,
gets this in the server's snapshot and so sees where the lesson is without any other state.
"""

from __future__ import annotations


def fold_lesson(view: dict, r: dict) -> None:
    """Where a lesson is, from its records alone (backend/lessons/runner.py writes them): the
    runner thread only blocks in a pause, so the page needs no other state to draw the lesson."""
    to_state, detail = r.get("to_state"), r.get("detail") or {}
    if to_state == "started":
        view["lesson"] = {"id": detail.get("lesson_id"), "title": detail.get("title"), "steps": detail.get("steps"),
                          "step": 0, "op": None, "line": None, "status": "running", "note": None, "say": None,
                          "highlight": None, "prompt": None, "awaiting": None, "question": None, "answers": [],
                          "completed": None}
        return
    lesson = view["lesson"]
    if lesson is None:
        return  # a lesson record before the lesson started: nothing to attach it to
    step, op, args = r.get("step"), r.get("op"), detail.get("args") or {}
    if to_state == "step_started":
        lesson.update(step=step, op=op, line=detail.get("line"), note=r.get("note"),
                      status="waiting" if op == "pause" else "running")
        if op == "say":
            lesson["say"] = {"step": step, "text": r.get("note")}
            lesson["highlight"] = None  # a highlight belongs to the narration it follows
        elif op == "highlight":
            lesson["highlight"] = {"step": step, "targets": args.get("targets") or [], "note": r.get("note")}
        elif op == "predict":
            lesson["question"] = {"id": args.get("id"), "step": step, "text": detail.get("question"),
                                  "choices": detail.get("choices"), "answer": None, "explain": None}
        elif op == "await":
            lesson["awaiting"] = {"step": step, "record": args.get("record"), "message": args.get("message"),
                                  "timeout_ms": args.get("timeout_ms")}
        elif op == "pause":
            lesson["prompt"] = args.get("prompt")
    elif to_state == "step_finished":
        if step == lesson["step"]:
            lesson["status"] = "running"
        if op == "await":
            lesson["awaiting"] = None
    elif to_state == "answered":
        lesson["answers"].append({"student": r.get("student"), "answer": r.get("answer"), "correct": r.get("correct"),
                                  "question": detail.get("question_id"), "note": r.get("note")})
    elif to_state == "revealed":
        question = lesson["question"]
        if question is not None and question["id"] == detail.get("question_id"):
            question.update(answer=r.get("answer"), explain=r.get("note"))
    elif to_state == "finished":
        lesson.update(status="finished" if detail.get("completed") else "stopped", completed=detail.get("completed"),
                      note=r.get("note"))
