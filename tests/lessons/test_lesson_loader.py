"""A broken lesson is refused with file, line and reason — and the lesson list shows it as
broken instead of failing to load the others."""

from __future__ import annotations

import pytest

from backend.lessons.loader import list_lessons, parse_lesson
from backend.scripts.loader import ScriptError

GOOD = """name: A lesson
minutes: 3
cluster:
  brokers: [0, 1]
steps:
  - op: say
    text: Hello.
  - op: predict
    id: who
    question: Who leads?
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


@pytest.mark.parametrize("change,line,reason", [
    (("  - op: say\n    text: Hello.", "  - op: shout\n    text: Hello."), 6, "unknown op 'shout'"),
    (("    text: Hello.\n", ""), 6, "say needs text"),
    (("brokers: [0, 1]", "brokers: [0, 1]\n  topics: {t: {assignment: {0: [0, 5]}}}"), 5, "broker 5"),
    (("    expected: 0\n", ""), 8, "needs expected"),
    (("    predict: who", "    predict: whom"), 14, "no earlier predict step asks it"),
    (("  - op: reveal\n    predict: who\n", ""), 8, "never answered"),
    (("minutes: 3\n", ""), 1, "needs minutes"),
    (("minutes: 3", "minutes: 99"), 2, "minutes"),
    (("cluster:", "cluster: [\n"), 6, "YAML syntax error"),
    (("    answer: {controller: id}", "    answer: {controller: id, znode: /x}"), 11, "exactly one"),
])
def test_each_mistake_is_named_with_its_line(change, line, reason):
    old, new = change
    found = problems(GOOD.replace(old, new))
    assert any(found_line == line and reason in message for found_line, message in found), found


def test_a_broken_lesson_is_listed_as_broken(tmp_path):
    (tmp_path / "good.yaml").write_text(GOOD)
    (tmp_path / "bad.yaml").write_text(GOOD.replace("op: say", "op: sya"))
    entries = {e.id: e for e in list_lessons(tmp_path)}
    assert entries["good"].lesson is not None and entries["good"].error is None
    assert entries["bad"].lesson is None and "bad.yaml:6: " in entries["bad"].error
