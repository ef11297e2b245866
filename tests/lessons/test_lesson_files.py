"""Every lesson is a test: it runs headless against the real ZooKeeper and every expect and
every predict's expected answer holds."""

from __future__ import annotations

import pytest

from backend.lessons.loader import LESSONS_DIR, list_lessons, load_lesson
from backend.lessons.runner import LessonRunner
from backend.lessons.schema import main as schema_main
from backend.runtime.replay import read_replay
from backend.runtime.runner import embedded_zookeeper

ENTRIES = list_lessons()


def test_every_lesson_file_loads():
    broken = {e.id: e.error for e in ENTRIES if e.error}
    assert not broken, broken
    assert ENTRIES


def test_the_lesson_schema_is_generated_from_the_vocabulary():
    assert schema_main(["--check"]) == 0


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_lesson_plays_headless(entry, zk_hosts, chroot, tmp_path):
    lesson = load_lesson(entry.path)
    assert 3 <= lesson.minutes <= 10, "a lesson takes 3 to 10 minutes"
    if lesson.script.cluster.zookeeper_servers == 3:
        with embedded_zookeeper(3) as ensemble:
            result = LessonRunner(lesson, ensemble.hosts, chroot=chroot, zk_control=ensemble, replay_dir=tmp_path).run()
    else:
        result = LessonRunner(lesson, zk_hosts, chroot=chroot, replay_dir=tmp_path).run()
    assert result.ok, result.message
    replay = read_replay(result.replay_path)
    lesson_records = [r for r in replay.records if r.kind == "lesson"]
    assert lesson_records[0].to_state == "started" and lesson_records[-1].to_state == "finished"
    assert lesson_records[-1].detail == {"completed": True}
    assert replay.header.mode == "lesson" and replay.header.lesson_id == entry.id
    revealed = [r for r in lesson_records if r.to_state == "revealed"]
    assert len(revealed) == sum(1 for s in lesson.steps if s.op == "predict")


def test_lessons_live_beside_their_scripts():
    assert (LESSONS_DIR / "scripts").is_dir() and (LESSONS_DIR / "lesson.schema.json").exists()
