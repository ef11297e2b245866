"""Reading lessons: a lesson is a fault script (``cluster:`` and ``steps:``) with a title, a
length in minutes and teaching steps — checked completely, like a script, before it runs.

Beyond the script checks, a lesson's questions must make sense as a whole: each ``predict`` has
a unique id and is answered by a later ``reveal``, and each ``reveal`` names a question asked
before it. A broken lesson is reported with file, line and reason; the lesson list shows it as
broken instead of failing to load the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from os import PathLike
from pathlib import Path

from backend.lessons.vocabulary import LESSON_KEYS, LESSON_VOCABULARY
from backend.scripts.loader import Problem, Script, ScriptError, parse_script

LESSONS_DIR = Path(__file__).resolve().parents[2] / "lessons"


@dataclass(frozen=True)
class Lesson:
    id: str
    title: str
    summary: str
    minutes: int
    script: Script

    @property
    def steps(self):
        return self.script.steps


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
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ScriptError([Problem(str(path), 0, f"cannot read the lesson: {error}")]) from None
    return parse_lesson(text, str(path), path.stem)


def parse_lesson(text: str, filename: str, lesson_id: str) -> Lesson:
    script = parse_script(text, filename, vocabulary=LESSON_VOCABULARY, extra_keys=LESSON_KEYS)
    problems = []
    if not script.name:
        problems.append(Problem(filename, 1, "a lesson needs a name: (its title)"))
    if "minutes" not in script.meta:
        problems.append(Problem(filename, 1, "a lesson needs minutes: (how long it takes, 1 to 60)"))
    problems += _question_problems(script)
    if problems:
        raise ScriptError(problems)
    return Lesson(lesson_id, script.name, script.description or "", script.meta["minutes"], script)


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


def list_lessons(directory: str | PathLike = LESSONS_DIR) -> list[LessonEntry]:
    """Every ``*.yaml`` lesson in ``directory`` (not ``scripts/``), broken ones with their error."""
    entries = []
    for path in sorted(Path(directory).glob("*.yaml")):
        try:
            entries.append(LessonEntry(path.stem, str(path), lesson=load_lesson(path)))
        except ScriptError as error:
            entries.append(LessonEntry(path.stem, str(path), error=str(error)))
    return entries
