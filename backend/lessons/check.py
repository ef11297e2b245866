"""Everything that can be known about lessons without running them, in one place: what
``kclab lessons check`` prints and what the lesson editor marks as the instructor types.

Two grades. **Problems** make a lesson unplayable (the loader refuses it: an unknown op, a
``predict`` without choices, an ``expected`` that is not a choice, a ``requires:`` that names
no lesson or goes round in a circle). **Pace warnings** (``pacing.pacing_problems``) leave it
playable but badly paced: a narration that could be replaced unseen, a stop inside a clock
nobody can hold, a reveal with nothing to observe, a stop with a page of text. The command
fails on either; the editor saves a lesson with warnings, and shows them on their lines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from backend.lessons.course import COURSE_PATH, check_requires, course_problems, load_course
from backend.lessons.loader import LESSONS_DIR, Lesson, LessonEntry, parse_lesson, read_entry, read_lessons
from backend.lessons.pacing import pacing_problems
from backend.faultscript.loader import Problem, ScriptError


@dataclass
class Checked:
    lesson: Lesson | None
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)


def check_text(text: str, filename: str, lesson_id: str, known: set[str] | None = None) -> Checked:
    """One lesson's text; ``known``: the ids its ``requires:`` may name (None: do not check them)."""
    try:
        lesson = parse_lesson(text, filename, lesson_id)
    except ScriptError as error:
        return Checked(None, error.problems)
    if known is not None:
        others = [LessonEntry(i, i) for i in known if i != lesson_id]
        [entry] = [e for e in check_requires([*others, LessonEntry(lesson_id, filename, lesson)]) if e.id == lesson_id]
        if entry.lesson is None:
            return Checked(None, [_problem(line, filename) for line in entry.error.splitlines()])
    return Checked(lesson, [], pacing_problems(lesson))


def _problem(text: str, filename: str) -> Problem:
    """A ``file:line: message`` line back into a Problem."""
    rest = text[len(filename) + 1:] if text.startswith(filename + ":") else text
    line, _, message = rest.partition(": ")
    return Problem(filename, int(line), message) if line.isdigit() else Problem(filename, 0, text)


def check_files(paths: list[Path] | None = None) -> list[Problem]:
    """Every problem and warning of the given lesson files — by default all of ``lessons/`` and
    the course — each as ``file:line: reason``."""
    everything = read_lessons(LESSONS_DIR)
    chosen = [Path(p).resolve() for p in paths] if paths else None
    out: list[Problem] = []
    for entry in check_requires(everything + _extra(chosen, everything)):
        if chosen is not None and Path(entry.path).resolve() not in chosen:
            continue
        if entry.lesson is None:
            out += [_problem(line, entry.path) for line in entry.error.splitlines()]
        else:
            out += pacing_problems(entry.lesson)
    if chosen is None or COURSE_PATH.resolve() in chosen:
        try:
            out += course_problems(load_course(), everything)
        except ScriptError as error:
            out += error.problems
    return out


def _extra(chosen: list[Path] | None, known: list[LessonEntry]) -> list[LessonEntry]:
    """Lesson files named on the command line that are not in ``lessons/`` (a draft elsewhere)."""
    inside = {Path(e.path).resolve() for e in known} | {COURSE_PATH.resolve()}
    return [read_entry(p) for p in chosen or () if p not in inside]
