"""The browser's fold (static/js/model.js) and the server's (backend/view/page.py: the cluster
view of backend/view/cluster_view.py plus the rules of backend/view/invariants.py) agree.

A joining page gets a snapshot folded by Python and then folds the following records itself, so
the two folds must give the same JSON for the same records — not roughly, exactly. Real replay
logs, made by running lesson scripts (and a lesson, with graded answers) against the test
ZooKeeper, are folded by both: after every
record of the log (at several cuts), and from a Python snapshot onwards as a page does.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from typing import Any

from backend.view.page import fold
from backend.lessons.loader import load_lesson
from backend.lessons.answers import UNSURE
from backend.lessons.pacing import is_stop
from backend.lessons.runner import Audience, LessonRunner
from backend.runtime.runner import ScriptRunner
from backend.faultscript.loader import load_script

ROOT = Path(__file__).resolve().parents[2]
FOLD_JS = ROOT / "tests" / "js" / "fold.mjs"
SCRIPTS = ["zombie_controller_fenced", "reassignment_resumes_when_replica_returns",
           "topic_creation_with_offline_replica", "entire_isr_offline", "controlled_shutdown",
           "partition_expansion", "deleteall_controller",
           "unclean_election_loses_acks1"]  # the data plane: produce, fetch, high watermark, data loss
LESSONS = ["controller_failover", "zookeeper_sessions_and_watches"]  # lesson records -> view["lesson"] (captions too)


def node() -> str:
    found = shutil.which("node")
    assert found, "node is not on PATH: `make setup` installs it (Debian's npm brings nodejs)"
    return found


def js_fold(log: Path, *args: str) -> list[dict]:
    done = subprocess.run([node(), str(FOLD_JS), str(log), *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"fold.mjs failed:\n{done.stderr}"
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def read_log(path: Path) -> list[dict]:
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert lines and lines[0]["kind"] == "session", "a replay log starts with its session header"
    return lines[1:]


def as_json(view: dict) -> dict:
    return json.loads(json.dumps(view))


def differences(python: dict, js: dict) -> str:
    out = []
    for key in sorted(set(python) | set(js)):
        if python.get(key) != js.get(key):
            out.append(f"{key}:\n  python {json.dumps(python.get(key), sort_keys=True)[:600]}"
                       f"\n  js     {json.dumps(js.get(key), sort_keys=True)[:600]}")
    return "\n".join(out)


@pytest.mark.parametrize("name", SCRIPTS)
def test_js_fold_equals_python_fold_on_a_real_log(name, zk_hosts, chroot, tmp_path):
    script = load_script(ROOT / "lessons" / "scripts" / f"{name}.yaml")
    result = ScriptRunner(script, zk_hosts, chroot, replay_dir=tmp_path).run()
    assert result.ok, result.message
    assert_folds_agree(name, result.replay_path, tmp_path)


class ThreeStudents(Audience):
    """Answers every question three times — right, wrong (with its misconception when the lesson
    has one), and "I'm not sure" — so the log holds every kind of graded answer."""

    def __init__(self) -> None:
        self.asked: dict[str, Any] = {}

    def ask(self, step) -> None:
        self.asked[step.args["id"]] = step.args

    def answers(self, question_id: str) -> list[tuple[str | None, str]]:
        args = self.asked[question_id]
        wrong = next(c for c in args["choices"] if c != str(args["expected"]))
        return [("s-right", str(args["expected"])), ("s-wrong", wrong), ("s-unsure", UNSURE)]


@pytest.mark.parametrize("name", LESSONS)
def test_js_fold_equals_python_fold_on_a_real_lesson(name, zk_hosts, chroot, tmp_path):
    """The lesson part of the fold (view["lesson"]): steps, narration, highlights, questions,
    graded answers, the end — what a page that reloads mid-lesson gets in its snapshot."""
    lesson = load_lesson(ROOT / "lessons" / f"{name}.yaml")
    result = LessonRunner(lesson, zk_hosts, audience=ThreeStudents(), chroot=chroot, replay_dir=tmp_path,
                          log=io.StringIO()).run()
    assert result.ok, result.message
    records = assert_folds_agree(name, result.replay_path, tmp_path)
    kinds = {r["to_state"] for r in records if r["kind"] == "lesson"}
    assert {"started", "step_started", "step_finished", "answered", "revealed", "finished"} <= kinds
    final = fold(records)["lesson"]
    assert final["status"] == "finished" and final["step"] == final["steps"] == len(lesson.steps)
    questions = sum(1 for s in lesson.steps if s.op == "predict")
    assert [a["correct"] for a in final["answers"]] == [True, False, None] * questions
    assert any(a["misconception"] for a in final["answers"])
    assert final["question"]["answer"] is not None and final["question"]["state"] == "revealed"
    assert [s["step"] for s in final["stops"]] == [s.index for s in lesson.steps if is_stop(s)]
    assert all(s["seq"] < s["done_seq"] for s in final["stops"])


def assert_folds_agree(name: str, replay_path: Path, tmp_path: Path) -> list[dict]:
    records = read_log(replay_path)
    assert len(records) > 20

    # The whole log, and the view after a spread of seqs (every kind of record gets folded on
    # top of every kind of state somewhere in there).
    last = records[-1]["seq"]
    cuts = sorted({0, *range(0, last + 1, max(1, len(records) // 12)), last})
    python_views = []
    view = None
    wanted = iter(cuts)
    cut = next(wanted)
    for record in records:
        view = fold([record], view)
        while cut is not None and cut <= record["seq"]:
            python_views.append(as_json(view))
            cut = next(wanted, None)
    js_views = js_fold(replay_path, "--cuts", ",".join(map(str, cuts)))
    assert len(js_views) == len(cuts)
    for seq, python, js in zip(cuts, python_views, js_views):
        assert python == js, f"{name}: the folds differ after seq {seq}:\n{differences(python, js)}"
    assert js_fold(replay_path)[0] == as_json(fold(records))

    # As a page does: a Python snapshot in the middle, then the JS fold of what follows.
    middle = len(records) // 2
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_text(json.dumps({"seq": records[middle]["seq"], "view": fold(records[:middle + 1])}))
    [from_snapshot] = js_fold(replay_path, "--snapshot", str(snapshot))
    whole = as_json(fold(records))
    assert from_snapshot == whole, f"{name}: snapshot + JS fold differs:\n{differences(whole, from_snapshot)}"
    return records


def test_records_seen_twice_are_folded_once(tmp_path):
    """A reconnecting page may get a record again: the fold ignores it, in both languages."""
    records = [
        {"v": 1, "session_id": "s", "seq": 0, "ts_ms": 0, "kind": "broker", "subject": "broker:1", "broker_id": 1,
         "to_state": "started"},
        {"v": 1, "session_id": "s", "seq": 1, "ts_ms": 0, "kind": "request", "subject": "request:LeaderAndIsr#1",
         "op": "LeaderAndIsr", "controller_id": 1, "controller_epoch": 1, "broker_id": 2, "to_state": "sent"},
        {"v": 1, "session_id": "s", "seq": 1, "ts_ms": 0, "kind": "broker", "subject": "broker:1", "broker_id": 1,
         "to_state": "crashed"},
    ]
    log = tmp_path / "twice.jsonl"
    header = {"kind": "session", "v": 1, "session_id": "s", "mode": "script", "started_ms": 0,
              "app_version": "test", "cluster": {}}
    log.write_text("\n".join(json.dumps(line) for line in [header, *records]) + "\n")
    [js] = js_fold(log)
    assert js == as_json(fold(records))
    assert js["brokers"]["1"]["state"] == "alive"


def test_lesson_records_a_real_run_may_not_contain_fold_alike(tmp_path):
    """The lesson fold's corners, in both languages: a record before the lesson started, an
    `await` that never came true (the lesson stops), a reveal of another question, free text."""
    lesson = lambda seq, to_state, **fields: {"v": 1, "session_id": "s", "seq": seq, "ts_ms": 0,  # noqa: E731
                                              "kind": "lesson", "subject": "lesson:x", "to_state": to_state, **fields}
    records = [
        lesson(0, "step_started", step=1, op="say", note="before the start"),
        lesson(1, "started", note="Lesson: X.", detail={"lesson_id": "x", "title": "X", "steps": 4}),
        lesson(2, "step_started", step=1, op="predict", note="Q?",
               detail={"args": {"id": "q"}, "line": 9, "question": "Q?", "choices": None}),
        lesson(3, "step_finished", step=1, op="predict"),
        lesson(4, "step_started", step=2, op="direct", note="Broker 2 wins.", detail={"args": {"winner": 2}}),
        lesson(5, "revealed", step=3, op="reveal", answer="7", note="other", detail={"question_id": "other"}),
        lesson(6, "step_started", step=4, op="await", detail={"args": {"record": {"kind": "controller"},
                                                                        "message": "never", "timeout_ms": 10}}),
        lesson(7, "finished", note="Lesson stopped: never", detail={"completed": False}),
    ]
    log = tmp_path / "lesson.jsonl"
    header = {"kind": "session", "v": 1, "session_id": "s", "mode": "lesson", "started_ms": 0, "app_version": "test",
              "cluster": {}}
    log.write_text("\n".join(json.dumps(line) for line in [header, *records]) + "\n")
    js_views = js_fold(log, "--cuts", ",".join(str(r["seq"]) for r in records))
    for record, js in zip(records, js_views):
        python = as_json(fold([r for r in records if r["seq"] <= record["seq"]]))
        assert python == js, f"the folds differ after seq {record['seq']}:\n{differences(python, js)}"
    final = js_views[-1]["lesson"]
    assert final["status"] == "stopped" and final["awaiting"]["message"] == "never"
    assert final["question"] == {"id": "q", "step": 1, "text": "Q?", "choices": None, "answer": None, "explain": None,
                                 "state": "open"}
    assert js_views[0]["lesson"] is None
