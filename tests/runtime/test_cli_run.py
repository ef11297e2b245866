"""``kclab run`` as a user runs it: exit status, messages, ``--json`` output."""

from __future__ import annotations

import json
import subprocess
import time

from backend.core.records import Record
from tests.support import kclab_command

GOOD = """name: stop the controller
cluster:
  brokers: [0, 1]
  topics: {t: {assignment: {0: [0, 1]}}}
steps:
  - op: stop_broker
    broker: 0
  - op: expect
    controller: 1
    controller_epoch: 2
    partitions: {t-0: {leader: 1, isr: [1]}}
"""

BROKEN = """cluster:
  brokers: [0, 1]
steps:
  - op: crash_brokr
    broker: 0
  - op: crash_broker
    broker: 5
  - op: start_broker
"""


def kclab(*args, timeout=120):
    return subprocess.run([*kclab_command(), *args], capture_output=True, text=True, timeout=timeout)


def test_a_broken_script_is_refused_with_file_and_line_before_anything_runs(tmp_path):
    script = tmp_path / "broken.yaml"
    script.write_text(BROKEN)
    started = time.monotonic()
    result = kclab("run", str(script), "--replay-dir", str(tmp_path))
    assert result.returncode == 2
    assert f"{script}:4: " in result.stderr and "crash_brokr" in result.stderr and "crash_broker" in result.stderr
    assert f"{script}:7: " in result.stderr and "broker 5" in result.stderr
    assert f"{script}:8: " in result.stderr and "broker" in result.stderr
    assert "nothing was started" in result.stderr
    assert not list(tmp_path.glob("*.jsonl"))  # no session, no replay log
    assert time.monotonic() - started < 20


def test_json_prints_every_record_and_exit_zero(tmp_path, zk_hosts, chroot):
    script = tmp_path / "good.yaml"
    script.write_text(GOOD)
    result = kclab("run", str(script), "--zk", zk_hosts, "--chroot", chroot + "/c", "--json",
                   "--replay-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    records = [Record.from_dict(json.loads(line)) for line in result.stdout.splitlines()]
    assert [r.seq for r in records] == list(range(len(records)))
    assert any(r.kind == "election" and r.leader == 1 for r in records)
    assert "OK: all 2 steps passed" in result.stderr
    [replay] = tmp_path.glob("*.jsonl")
    assert len(replay.read_text().splitlines()) == len(records) + 1  # the header, then every record


def test_failed_expect_exits_one_and_says_what_was_found(tmp_path, zk_hosts, chroot):
    script = tmp_path / "wrong.yaml"
    script.write_text(GOOD.replace("controller: 1", "controller: 0").replace("steps:", "steps:\n  - op: wait_ms\n    ms: 1")
                      + "    within_ms: 500\n")
    result = kclab("run", str(script), "--zk", zk_hosts, "--chroot", chroot + "/c", "--replay-dir", str(tmp_path))
    assert result.returncode == 1
    assert f"{script}:10: step 3 (line 10) failed" in result.stderr
    assert "controller: expected 0, found 1" in result.stderr
