"""The lessons of ``lessons/`` as a course: every file loads, the course lists each once in an
order that respects ``requires:``, and ``kclab lessons check`` finds nothing — no narration
that could be replaced unseen, no stop inside a clock nobody can hold, no reveal without
something to observe, no stop with a page of text.

Every lesson is also *played*: through the page, as a student, by ``tests/e2e/test_lessons_played.py``
(the runner checks every ``expect`` and every question's ``expected`` answer there, as in a
headless run); ``kclab lessons check --run`` plays them all headless, and is tested here on one.
"""

from __future__ import annotations

import pytest

from backend.lessons.check import check_files
from backend.lessons.course import COURSE_PATH, course_problems, list_lessons, load_course
from backend.lessons.loader import LESSONS_DIR
from backend.lessons.pacing import is_stop
from backend.lessons.schema import main as schema_main
from web.cli import main as kclab

ENTRIES = list_lessons()
LESSONS = [e.lesson for e in ENTRIES if e.lesson is not None]


def test_every_lesson_file_loads():
    broken = {e.id: e.error for e in ENTRIES if e.error}
    assert not broken, broken
    assert len(LESSONS) >= 19


def test_the_lesson_schema_is_generated_from_the_vocabulary():
    assert schema_main(["--check"]) == 0


def test_the_course_holds_every_lesson_once_in_an_order_that_respects_requires():
    course = load_course()
    assert course_problems(course, ENTRIES) == []
    assert sorted(course.order) == sorted(e.id for e in ENTRIES)
    assert course.order[0] == "zookeeper_sessions_and_watches"  # the first visit starts here


def test_kclab_lessons_check_finds_nothing(capsys):
    assert check_files() == []
    assert kclab(["lessons", "check"]) == 0
    assert "OK: no problems" in capsys.readouterr().err


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.id)
def test_every_lesson_predicts_first_and_stops_at_every_narration(lesson):
    assert 3 <= lesson.minutes <= 10, "a lesson takes 3 to 10 minutes"
    assert lesson.teaches, "a course lesson says what it teaches"
    predicts = [s for s in lesson.steps if s.op == "predict"]
    assert len(predicts) >= 2 and all(s.args["choices"] for s in predicts)
    first_reveal = next(s for s in lesson.steps if s.op == "reveal")
    assert predicts[0].index < first_reveal.index
    says = [s for s in lesson.steps if s.op == "say"]
    assert sum(is_stop(s) for s in says) >= len(says) // 2, "most narrations are stops, not captions"


def test_lessons_live_beside_their_scripts():
    assert (LESSONS_DIR / "scripts").is_dir() and (LESSONS_DIR / "lesson.schema.json").exists()
    assert COURSE_PATH.exists()


def test_kclab_lessons_check_run_plays_a_lesson_headless(zk_hosts, capsys):
    assert kclab(["lessons", "check", "--run", "--zk", zk_hosts, str(LESSONS_DIR / "controller_failover.yaml")]) == 0
    assert "controller_failover.yaml: dry run passed" in capsys.readouterr().out
