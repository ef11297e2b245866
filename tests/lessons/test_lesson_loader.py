"""A broken lesson is refused with file, line and reason — and the lesson list shows it as
broken instead of failing to load the others. Between lessons: a ``requires:`` that names no
lesson, or that closes a circle, breaks the lesson at the line of that entry."""

from __future__ import annotations

import pytest

from backend.lessons.course import Course, Part, check_requires, course_problems, list_lessons
from backend.lessons.loader import LessonEntry, parse_lesson, read_entry
from backend.faultscript.loader import ScriptError

GOOD = """name: A lesson
minutes: 3
requires: []
teaches: [controller election]
cluster:
  brokers: [0, 1]
steps:
  - op: say
    text: Hello.
  - op: predict
    id: who
    question: Who leads?
    choices: ["0", "1"]
    misconceptions:
      "1": Broker 1 started second.
    answer: {controller: id}
    expected: 0
    explain: The first broker wins.
  - op: reveal
    predict: who
"""


def problems(text):
    with pytest.raises(ScriptError) as info:
        parse_lesson(text, "lesson.yaml", "lesson")
    return [(p.line, p.message) for p in info.value.problems]


def test_a_good_lesson():
    lesson = parse_lesson(GOOD, "lesson.yaml", "lesson")
    assert (lesson.title, lesson.minutes, [s.op for s in lesson.steps]) == ("A lesson", 3, ["say", "predict", "reveal"])
    assert (lesson.requires, lesson.teaches) == ((), ("controller election",))
    predict = lesson.steps[1]
    assert predict.args["misconceptions"] == {"1": "Broker 1 started second."}
    assert lesson.steps[0].args["caption"] is False  # a narration is a stop unless it says otherwise


@pytest.mark.parametrize("change,line,reason", [
    (("  - op: say\n    text: Hello.", "  - op: shout\n    text: Hello."), 8, "unknown op 'shout'"),
    (("    text: Hello.\n", ""), 8, "say needs text"),
    (("brokers: [0, 1]", "brokers: [0, 1]\n  topics: {t: {assignment: {0: [0, 5]}}}"), 7, "broker 5"),
    (("    expected: 0\n", ""), 10, "needs expected"),
    (("    predict: who", "    predict: whom"), 19, "no earlier predict step asks it"),
    (("  - op: reveal\n    predict: who\n", ""), 10, "never answered"),
    (("minutes: 3\n", ""), 1, "needs minutes"),
    (("minutes: 3", "minutes: 99"), 2, "minutes"),
    (("cluster:", "cluster: [\n"), 8, "YAML syntax error"),
    (("    answer: {controller: id}", "    answer: {controller: id, znode: /x}"), 16, "exactly one"),
    # Predictions are answered by picking one of the choices (or "I'm not sure").
    (('    choices: ["0", "1"]\n', ""), 10, "predict needs choices"),
    (('    choices: ["0", "1"]', '    choices: ["1", "2"]'), 17, "expected '0' is not one of the choices"),
    (('    choices: ["0", "1"]', '    choices: ["0", "1", "I\'m not sure"]'), 13, "offered with every question"),
    (('      "1": Broker 1 started second.', '      "0": Broker 0 started first.'), 15, "the right answer"),
    (('      "1": Broker 1 started second.', '      "2": There is no broker 2.'), 15, "not one of the choices"),
    (("requires: []", "requires: [lesson]"), 3, "cannot require itself"),
    (("teaches: [controller election]", "teaches: []"), 4, "teaches must have at least 1"),
])
def test_each_mistake_is_named_with_its_line(change, line, reason):
    old, new = change
    assert old in GOOD
    found = problems(GOOD.replace(old, new))
    assert any(found_line == line and reason in message for found_line, message in found), found


def write(directory, name, requires):
    text = GOOD.replace("requires: []", f"requires: [{', '.join(requires)}]")
    (directory / f"{name}.yaml").write_text(text)


def test_an_unknown_required_lesson_is_named_with_its_file_and_line(tmp_path):
    write(tmp_path, "first", [])
    write(tmp_path, "second", ["first", "nowhere"])
    entries = {e.id: e for e in list_lessons(tmp_path)}
    assert entries["first"].lesson is not None
    assert entries["second"].lesson is None
    assert f"{tmp_path / 'second.yaml'}:3: requires 'nowhere', but there is no lesson 'nowhere'" in entries["second"].error


def test_a_cycle_of_requires_breaks_every_lesson_on_it_at_the_line_that_closes_it(tmp_path):
    write(tmp_path, "a", ["b"])
    write(tmp_path, "b", ["c"])
    write(tmp_path, "c", ["a"])
    write(tmp_path, "d", ["a"])  # outside the circle: fine on its own
    entries = {e.id: e for e in list_lessons(tmp_path)}
    for name, other in (("a", "b"), ("b", "c"), ("c", "a")):
        assert entries[name].lesson is None
        assert f"{tmp_path / f'{name}.yaml'}:3: requires {other!r}, which (through others) requires this lesson: " \
               f"a → b → c → a" in entries[name].error
    assert entries["d"].lesson is not None


def test_requires_are_checked_across_directories_as_an_upload_may_require_a_bundled_lesson(tmp_path):
    write(tmp_path, "mine", ["controller_failover"])
    upload = LessonEntry("ada/mine", str(tmp_path / "mine.yaml"), read_entry(tmp_path / "mine.yaml").lesson)
    alone = check_requires([upload])
    assert alone[0].lesson is None and "no lesson 'controller_failover'" in alone[0].error
    together = check_requires([LessonEntry("controller_failover", "lessons/controller_failover.yaml"), upload])
    assert together[1].lesson is not None


def test_a_broken_lesson_is_listed_as_broken(tmp_path):
    (tmp_path / "good.yaml").write_text(GOOD)
    (tmp_path / "bad.yaml").write_text(GOOD.replace("op: say", "op: sya"))
    entries = {e.id: e for e in list_lessons(tmp_path)}
    assert entries["good"].lesson is not None and entries["good"].error is None
    assert entries["bad"].lesson is None and "bad.yaml:8: " in entries["bad"].error


def test_the_course_lists_every_lesson_once_and_after_what_it_requires(tmp_path):
    write(tmp_path, "first", [])
    write(tmp_path, "second", ["first"])
    write(tmp_path, "third", [])
    entries = list_lessons(tmp_path)
    course = Course((Part("Part one", ("second", "first", "second", "ghost"), 2, (3, 4, 5, 6)),), "course.yaml")
    found = [(p.file.rsplit("/", 1)[-1], p.line, p.message) for p in course_problems(course, entries)]
    assert ("course.yaml", 5, "'second' is already in the course (line 3)") in found
    assert ("course.yaml", 6, "there is no lesson 'ghost'") in found
    assert any(f == "course.yaml" and "'third'" in m and "in no part" in m for f, _, m in found)
    assert ("second.yaml", 3, "requires 'first', which comes later in the course") in found
