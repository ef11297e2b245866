"""Reading lessons: a lesson is a fault script (``cluster:`` and ``steps:``) with a title, a
length in minutes, its place in the course (``requires:``, ``teaches:``) and teaching steps —
checked completely, like a script, before it runs.

Beyond the script checks, a lesson's questions must make sense as a whole: each ``predict`` has
a unique id and is answered by a later ``reveal``, and each ``reveal`` names a question asked
before it. Between lessons (``backend/lessons/course.py``): every ``requires:`` names a lesson
that exists, and no lesson requires itself through others. A broken lesson is reported with
file, line and reason; the lesson list shows it as broken instead of failing to load the others.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path

from backend.lessons.vocabulary import LESSON_KEYS, LESSON_VOCABULARY
from backend.faultscript.loader import Problem, Script, ScriptError, parse_script
from backend.faultscript.yaml_lines import LineDict, LineList, load_yaml

LESSONS_DIR = Path(__file__).resolve().parents[2] / "lessons"


@dataclass(frozen=True)
class Lesson:
    id: str
    title: str
    summary: str
    minutes: int
    script: Script
    requires: tuple[str, ...] = ()
    teaches: tuple[str, ...] = ()
    requires_lines: tuple[int, ...] = field(default=(), compare=False)
    """The line of each ``requires:`` entry, so a problem with one names its line."""

    @property
    def steps(self):
        return self.script.steps

    @property
    def filename(self) -> str:
        return self.script.filename


@dataclass(frozen=True)
class LessonEntry:
    """One line of the lesson list: a lesson, or why a file is not one."""

    id: str
    path: str
    lesson: Lesson | None = None
    error: str | None = None


def load_lesson(path: str | PathLike) -> Lesson:
    path = Path(path)
    try:
        stat = path.stat()
        return _load_cached(str(path), stat.st_mtime_ns, stat.st_size)
    except OSError as error:
        raise ScriptError([Problem(str(path), 0, f"cannot read the lesson: {error}")]) from None


@functools.lru_cache(maxsize=256)
def _load_cached(path: str, mtime_ns: int, size: int) -> Lesson:
    """Lists are read on every request of the lesson page: a file is parsed once per version."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ScriptError([Problem(path, 0, f"cannot read the lesson: {error}")]) from None
    return parse_lesson(text, path, Path(path).stem)


def parse_lesson(text: str, filename: str, lesson_id: str) -> Lesson:
    script = parse_script(text, filename, vocabulary=LESSON_VOCABULARY, extra_keys=LESSON_KEYS)
    problems = []
    if not script.name:
        problems.append(Problem(filename, 1, "a lesson needs a name: (its title)"))
    if "minutes" not in script.meta:
        problems.append(Problem(filename, 1, "a lesson needs minutes: (how long it takes, 1 to 60)"))
    requires = tuple(script.meta.get("requires") or ())
    if lesson_id in requires:
        problems.append(Problem(filename, _requires_lines(text)[requires.index(lesson_id)],
                                f"requires {lesson_id!r}: a lesson cannot require itself"))
    problems += _question_problems(script)
    if problems:
        raise ScriptError(problems)
    return Lesson(lesson_id, script.name, script.description or "", script.meta["minutes"], script,
                  requires=requires, teaches=tuple(script.meta.get("teaches") or ()),
                  requires_lines=_requires_lines(text) if requires else ())


def _requires_lines(text: str) -> tuple[int, ...]:
    """The line of each ``requires:`` entry (the script loader keeps only the values)."""
    doc, _ = load_yaml(text)
    items = doc.get("requires") if isinstance(doc, LineDict) else None
    return tuple(items.item_lines) if isinstance(items, LineList) else ()


def _question_problems(script: Script) -> list[Problem]:
    problems, asked, revealed = [], {}, set()
    for step in script.steps:
        if step.op == "predict":
            if step.args["id"] in asked:
                problems.append(Problem(script.filename, step.line, f"{step.where}: question id {step.args['id']!r} "
                                                                    f"is already used by {asked[step.args['id']].where}"))
            asked[step.args["id"]] = step
        elif step.op == "reveal":
            name = step.args["predict"]
            if name not in asked:
                problems.append(Problem(script.filename, step.line, f"{step.where}: reveal names question {name!r}, "
                                                                    f"but no earlier predict step asks it"))
            revealed.add(name)
    for name, step in asked.items():
        if name not in revealed:
            problems.append(Problem(script.filename, step.line, f"{step.where}: question {name!r} is never "
                                                                f"answered: add a reveal step after the steps "
                                                                f"that show the answer"))
    return problems


def read_entry(path: str | PathLike) -> LessonEntry:
    """One lesson file as a line of the list: the lesson, or why it is not one."""
    path = Path(path)
    try:
        return LessonEntry(path.stem, str(path), lesson=load_lesson(path))
    except ScriptError as error:
        return LessonEntry(path.stem, str(path), error=str(error))


def read_lessons(directory: str | PathLike) -> list[LessonEntry]:
    """Every ``*.yaml`` lesson in ``directory`` (not ``scripts/``, not the course), each on its own."""
    return [read_entry(path) for path in sorted(Path(directory).glob("*.yaml")) if path.name != "course.yaml"]

