"""The lessons as a course: parts in teaching order (``lessons/course.yaml``), and what lessons
say about each other (``requires:``).

A lesson may only require lessons that exist, and never itself through others: either would
leave a student with no way in. Those are checked across all lessons — an instructor's upload
may require a bundled lesson — and a lesson that breaks them is listed as broken, with the line
of the ``requires:`` entry at fault. The course file is checked against the lessons by
:func:`course_problems` (``kclab lessons check`` and a test run it): every bundled lesson in
exactly one part, and every lesson after the lessons it requires.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from os import PathLike
from pathlib import Path

from backend.lessons.loader import LESSONS_DIR, LessonEntry, read_lessons
from backend.faultscript.loader import Problem, ScriptError
from backend.faultscript.yaml_lines import LineDict, LineList, load_yaml

COURSE_PATH = LESSONS_DIR / "course.yaml"


@dataclass(frozen=True)
class Part:
    title: str
    lessons: tuple[str, ...]
    line: int
    lesson_lines: tuple[int, ...] = ()


@dataclass(frozen=True)
class Course:
    parts: tuple[Part, ...]
    filename: str = str(COURSE_PATH)

    @property
    def order(self) -> list[str]:
        return [lesson for part in self.parts for lesson in part.lessons]

    def describe(self) -> list[dict]:
        return [{"title": p.title, "lessons": list(p.lessons)} for p in self.parts]


def load_course(path: str | PathLike = COURSE_PATH) -> Course:
    """The course file: ``parts:``, each ``{title: …, lessons: [ids]}``; problems with their line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ScriptError([Problem(str(path), 0, f"cannot read the course: {error}")]) from None
    doc, issues = load_yaml(text)
    problems = [Problem(str(path), i.line, i.message) for i in issues]
    raw = doc.get("parts") if isinstance(doc, LineDict) else None
    if not problems and not isinstance(raw, LineList):
        problems.append(Problem(str(path), 1, "the course needs parts: a list of {title: …, lessons: [ids]}"))
    parts = []
    for part, line in zip(raw or [], getattr(raw, "item_lines", [])):
        lessons = part.get("lessons") if isinstance(part, LineDict) else None
        title = part.get("title") if isinstance(part, LineDict) else None
        if not isinstance(title, str) or not isinstance(lessons, LineList) or \
                not all(isinstance(i, str) for i in lessons):
            problems.append(Problem(str(path), line, "a part is {title: text, lessons: [lesson ids]}"))
            continue
        parts.append(Part(title, tuple(lessons), line, tuple(lessons.item_lines)))
    if problems:
        raise ScriptError(problems)
    return Course(tuple(parts), str(path))


def list_lessons(directory: str | PathLike = LESSONS_DIR) -> list[LessonEntry]:
    """The lessons of ``directory``, broken ones with their error (including bad ``requires:``)."""
    return check_requires(read_lessons(directory))


def check_requires(entries: list[LessonEntry]) -> list[LessonEntry]:
    """``entries`` with every lesson whose ``requires:`` names an unknown lesson, or closes a
    circle, turned into a broken entry saying so at the line of that entry."""
    known = {e.id for e in entries}
    graph = {e.id: e.lesson.requires for e in entries if e.lesson is not None}
    problems: dict[str, list[Problem]] = {}
    for entry in entries:
        lesson = entry.lesson
        for index, required in enumerate(lesson.requires if lesson else ()):
            if required not in known:
                problems.setdefault(entry.id, []).append(Problem(
                    lesson.filename, _line(lesson, index), f"requires {required!r}, but there is no lesson "
                                                           f"{required!r} (a lesson id is its file name without .yaml)"))
    for cycle in _cycles(graph):
        for here, there in zip(cycle, cycle[1:]):
            lesson = next(e.lesson for e in entries if e.id == here)
            circle = " → ".join(cycle)
            problems.setdefault(here, []).append(Problem(
                lesson.filename, _line(lesson, lesson.requires.index(there)),
                f"requires {there!r}, which (through others) requires this lesson: {circle}. A student could "
                f"never start any of them."))
    return [replace(e, lesson=None, error="\n".join(str(p) for p in problems[e.id])) if e.id in problems else e
            for e in entries]


def _line(lesson, index: int) -> int:
    return lesson.requires_lines[index] if index < len(lesson.requires_lines) else 1


def _cycles(graph: dict[str, tuple[str, ...]]) -> list[list[str]]:
    """Each circle of ``requires:`` once, as [a, b, …, a], starting at its smallest id."""
    found, seen = [], set()

    def visit(node: str, path: list[str]) -> None:
        for nxt in graph.get(node, ()):
            if nxt in path:
                cycle = path[path.index(nxt):] + [nxt]
                start = cycle.index(min(cycle[:-1]))
                rotated = cycle[start:-1] + cycle[:start] + [cycle[start]]
                if tuple(rotated) not in seen:
                    seen.add(tuple(rotated))
                    found.append(rotated)
            elif nxt in graph:
                visit(nxt, path + [nxt])

    for node in sorted(graph):
        visit(node, [node])
    return found


def course_problems(course: Course, entries: list[LessonEntry]) -> list[Problem]:
    """What is wrong between the course file and the lessons it lists."""
    problems, where = [], {}
    lessons = {e.id: e.lesson for e in entries if e.lesson is not None}
    known = {e.id for e in entries}
    for part in course.parts:
        for lesson_id, line in zip(part.lessons, part.lesson_lines):
            if lesson_id not in known:
                problems.append(Problem(course.filename, line, f"there is no lesson {lesson_id!r}"))
            elif lesson_id in where:
                problems.append(Problem(course.filename, line, f"{lesson_id!r} is already in the course "
                                                               f"(line {where[lesson_id]})"))
            else:
                where[lesson_id] = line
    for entry in entries:
        if entry.id not in where and "/" not in entry.id:
            problems.append(Problem(course.filename, 0, f"lesson {entry.id!r} ({entry.path}) is in no part "
                                                        f"of the course"))
    order: dict[str, int] = {}
    for n, lesson_id in enumerate(course.order):
        order.setdefault(lesson_id, n)
    for lesson_id, lesson in lessons.items():
        if lesson_id not in order:
            continue
        if not lesson.teaches:
            problems.append(Problem(lesson.filename, 1, "a course lesson says what it teaches: teaches: [concepts]"))
        for index, required in enumerate(lesson.requires):
            if required in order and order[required] > order[lesson_id]:
                problems.append(Problem(lesson.filename, _line(lesson, index),
                                        f"requires {required!r}, which comes later in the course"))
    return problems


def in_course_order(entries: list[LessonEntry], course: Course | None) -> list[tuple[str | None, LessonEntry]]:
    """(part title, entry) in the course's order; lessons in no part (uploads) last, part None."""
    by_id = {e.id: e for e in entries}
    out = []
    for part in course.parts if course else ():
        out += [(part.title, by_id.pop(lesson_id)) for lesson_id in part.lessons if lesson_id in by_id]
    return out + [(None, e) for e in entries if e.id in by_id]
