"""Lessons in the browser: the course and its lessons, walkthroughs (continue, answer, replay
from a stop, restart, try it yourself) and the checks behind the lesson editor. The HTTP API and
the socket handlers call these.

A cluster cannot be rewound, so *replay* and *try it yourself* start a fresh cluster and play the
lesson up to the wanted stop without waiting — the same story, told quickly — and hand the page
the new session to join. (Looking back at an earlier stop needs no server: the page rebuilds it
from the recorded records.)
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from backend.lessons.check import check_text
from backend.lessons.course import check_requires, in_course_order, load_course
from backend.lessons.loader import LESSONS_DIR, Lesson, LessonEntry, parse_lesson, read_lessons
from backend.lessons.pacing import is_stop
from backend.faultscript.loader import ScriptError
from web.audience import NotNow, WebAudience
from web.sandbox import Sandbox
from web.sandboxes import SandboxLimit, SandboxManager
from web.service import ApiError, quoted, refused, sandbox_for


def lesson_entries(uploads: Path | None = None) -> list[LessonEntry]:
    """The bundled lessons, then every instructor's; ``requires:`` checked across all of them."""
    entries = read_lessons(LESSONS_DIR)
    if uploads is not None and uploads.is_dir():
        for directory in sorted(p for p in uploads.iterdir() if p.is_dir()):
            entries += [LessonEntry(f"{directory.name}/{e.id}", e.path, e.lesson, e.error)
                        for e in read_lessons(directory)]
    return check_requires(entries)


def course_listing(uploads: Path | None = None) -> dict[str, Any]:
    """``GET /api/lessons``: every lesson in the course's order (with its part), and the parts."""
    try:
        course = load_course()
    except ScriptError:
        course = None  # the lessons still list, in file order (kclab lessons check names the problem)
    ordered = in_course_order(lesson_entries(uploads), course)
    return {"lessons": [{**describe_entry(entry), "part": part} for part, entry in ordered],
            "parts": course.describe() if course else []}


def describe_entry(entry: LessonEntry) -> dict[str, Any]:
    if entry.lesson is None:
        return {"id": entry.id, "broken": True, "error": entry.error}
    lesson = entry.lesson
    return {"id": entry.id, "broken": False, "title": lesson.title, "summary": lesson.summary,
            "minutes": lesson.minutes, "requires": list(lesson.requires), "teaches": list(lesson.teaches),
            "predictions": sum(1 for s in lesson.steps if s.op == "predict"),
            "steps": [_describe_step(s) for s in lesson.steps]}


def _describe_step(step) -> dict[str, Any]:
    text = {"say": step.args.get("text"), "predict": step.args.get("question"),
            "pause": step.args.get("prompt"), "highlight": step.args.get("note")}.get(step.op)
    return {"index": step.index, "op": step.op, "text": text, "stop": is_stop(step)}


def find_lesson(lesson_id: Any, uploads: Path | None = None) -> Lesson:
    for entry in lesson_entries(uploads):
        if entry.id == lesson_id:
            if entry.lesson is None:
                raise ApiError(409, f"lesson {lesson_id!r} is broken and cannot be played: {entry.error}")
            return entry.lesson
    raise ApiError(404, f"there is no lesson {lesson_id!r}")


def start_walkthrough(manager: SandboxManager, lesson: Lesson, lesson_key: str, from_step: int = 0,
                      **header: Any) -> Sandbox:
    """Play ``lesson`` for one student; stops before ``from_step`` are passed at once (replaying)."""
    manager.busy_check()
    try:
        return manager.create_lesson_session(lesson, WebAudience(fast_forward_to=from_step), lesson_key=lesson_key,
                                             **header)
    except SandboxLimit as exc:
        raise refused(exc) from None


def walkthrough_for(manager: SandboxManager, sandbox_id: Any, token: Any) -> Sandbox:
    sandbox = sandbox_for(manager, sandbox_id, token)
    if sandbox.runner is None:
        raise ApiError(409, "this sandbox is not playing a lesson")
    return sandbox


def continue_lesson(audience: WebAudience | None) -> None:
    """Continue from the stop a lesson waits at (a walkthrough's student, a class's instructor)."""
    if audience is None:
        raise ApiError(409, "the lesson is not waiting for Continue right now")
    try:
        audience.press_continue()
    except NotNow as exc:
        raise ApiError(409, str(exc)) from None


def submit_answer(audience: WebAudience | None, who: str, question: Any, given: Any) -> dict[str, int]:
    """An answer to the open ``predict`` question, with the same checks for a walkthrough and a
    class: an answer that is not one of the choices (or "I'm not sure") is a 400, a question that
    is not open a 409. Returns the counts so far."""
    if not isinstance(given, (str, int)) or isinstance(given, bool) or str(given).strip() == "":
        raise ApiError(400, "an answer must be one of the question's choices, or “I'm not sure”")
    if audience is None:
        raise ApiError(409, f"question {quoted(question)} is not open (no lesson is playing)")
    try:
        return audience.answer(who, question, given)
    except NotNow as exc:
        raise ApiError(409, str(exc)) from None
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None


def press_continue(manager: SandboxManager, sandbox_id: Any, token: Any) -> dict[str, Any]:
    continue_lesson(walkthrough_for(manager, sandbox_id, token).audience)
    return {"ok": True}


def answer(manager: SandboxManager, sandbox_id: Any, token: Any, question: Any, given: Any,
           student: str = "student") -> dict[str, Any]:
    sandbox = walkthrough_for(manager, sandbox_id, token)
    return {"ok": True, "counts": submit_answer(sandbox.audience, student, question, given)}


def rewind(manager: SandboxManager, sandbox_id: Any, token: Any, to_step: Any, uploads: Path | None = None,
           free_play: bool = False) -> Sandbox:
    """Replay from a stop, restart (``to_step`` 1) or try-it-yourself (``free_play``): a fresh
    session that plays the lesson up to ``to_step``. The old session is closed (its log stays)."""
    old = walkthrough_for(manager, sandbox_id, token)
    lesson = find_lesson(old.lesson_id, uploads)
    if not isinstance(to_step, int) or not 1 <= to_step <= len(lesson.steps) + 1:
        raise ApiError(400, f"step must be between 1 and {len(lesson.steps) + 1}")
    if free_play:
        manager.busy_check()
        try:
            new = manager.create_lesson_session(lesson, WebAudience(fast_forward_to=to_step), mode="sandbox",
                                                stop_before=to_step, lesson_key=old.lesson_id)
        except SandboxLimit as exc:
            raise refused(exc) from None
    else:
        new = start_walkthrough(manager, lesson, old.lesson_id, from_step=to_step)
        manager.close(old.id)
    return new


def check_lesson_text(text: Any, known: set[str] | None = None) -> dict[str, Any]:
    """What the lesson editor shows: every problem with its line (the lesson cannot be played or
    saved), every pace warning with its line (it can), or that the lesson is fine."""
    if not isinstance(text, str):
        raise ApiError(400, "send the lesson as text: {\"text\": \"name: ...\"}")
    checked = check_text(text, "lesson.yaml", "draft", known)
    listed = lambda problems: [{"line": p.line, "message": p.message} for p in problems]  # noqa: E731
    if checked.lesson is None:
        return {"ok": False, "problems": listed(checked.problems), "warnings": []}
    return {"ok": True, "problems": [], "warnings": listed(checked.warnings), "title": checked.lesson.title,
            "steps": len(checked.lesson.steps)}


def save_lesson(uploads: Path, instructor: str, lesson_id: Any, text: Any) -> dict[str, Any]:
    """Store an instructor's lesson — only if it is valid, so a bad upload never replaces a good
    one (it is written to a temporary file and renamed into place)."""
    if not isinstance(lesson_id, str) or not lesson_id.replace("_", "").isalnum() or not lesson_id.islower() \
            or len(lesson_id) > 64:
        raise ApiError(400, "a lesson id is 1 to 64 lower-case letters, digits and _ (it becomes the file name)")
    checked = check_lesson_text(text)
    if not checked["ok"]:
        raise ApiError(400, "the lesson has problems; nothing was saved", problems=checked["problems"])
    directory = uploads / instructor
    directory.mkdir(parents=True, exist_ok=True)
    temporary = directory / f".{lesson_id}.yaml.tmp"
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(directory / f"{lesson_id}.yaml")
    return {"ok": True, "id": f"{instructor}/{lesson_id}"}


def dry_run(text: Any, zk_hosts: str, replay_dir: Path, zk_control=None) -> dict[str, Any]:
    """Play a draft lesson headless, as CI would: does every expect and every answer hold?"""
    from backend.lessons.runner import LessonRunner
    checked = check_lesson_text(text)
    if not checked["ok"]:
        return checked
    lesson = parse_lesson(text, "draft.yaml", "draft")
    result = LessonRunner(lesson, zk_hosts, replay_dir=replay_dir, zk_control=zk_control, mode="script",
                          log=io.StringIO()).run()
    return {"ok": result.ok, "message": result.message, "problems": [] if result.ok else [
        {"line": result.step.line if result.step else 0, "message": result.message}]}

