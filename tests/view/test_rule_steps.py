"""What scripts and lessons can say about Kafka's rules: ``expect: {rules: …}``, a ``highlight``
of a rule or an arrow, and a ``predict`` answered by the first rule that broke — played against
the real ZooKeeper, and checked as steps before anything runs."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from backend.lessons.loader import load_lesson, parse_lesson
from backend.lessons.runner import Audience, LessonRunner
from backend.runtime.runner import ScriptRunner
from backend.faultscript.expect import describe_expectation, mismatches
from backend.faultscript.loader import ScriptError, parse_script
from tests.view.breaking import read_records

LESSON = Path(__file__).parent / "data" / "rules_lesson.yaml"


class Student(Audience):
    def answers(self, question_id):
        return [("ada", "acked_not_lost"), ("bob", "leader_in_isr")]


def test_a_lesson_asks_which_rule_breaks_and_the_cluster_answers(zk_hosts, chroot, tmp_path):
    result = LessonRunner(load_lesson(LESSON), zk_hosts, audience=Student(), chroot=chroot, replay_dir=tmp_path,
                          log=io.StringIO()).run()
    assert result.ok, result.message
    records = read_records(result.replay_path)
    revealed = next(r for r in records if r.get("to_state") == "revealed")
    assert revealed["answer"] == "acked_not_lost"
    graded = {r["student"]: r["correct"] for r in records if r.get("to_state") == "answered"}
    assert graded == {"ada": True, "bob": False}
    highlight = next(r for r in records if r.get("op") == "highlight" and r.get("to_state") == "step_started")
    assert highlight["detail"]["args"]["targets"][0] == "rule:acked_not_lost"


SCRIPT = """
name: An expect on a rule that does not come true
cluster:
  brokers: [0, 1]
  config: {replica.lag.time.max.ms: 1000}
  topics:
    t: {assignment: {0: [0, 1]}}
steps:
  - {op: produce, topic: t, partition: 0, count: 1, acks: all}
  - {op: stall_follower, broker: 1, topic: t}
  - {op: expect, within_ms: 10000, partitions: {t-0: {isr: [0]}}}
  - {op: produce, topic: t, partition: 0, count: 2, acks: 1}
  - {op: crash_broker, broker: 0}
  - {op: expect, partitions: {t-0: {leader: -1}}}
  - {op: set_config, name: unclean.leader.election.enable, value: true}
  - {op: expect, partitions: {t-0: {leader: 1}}, rules: {acked_not_lost: broke}}
  - {op: expect, within_ms: 300, rules: {acked_not_lost: held}}
"""


def test_an_expect_on_rules_that_does_not_come_true_says_what_it_found(zk_hosts, chroot, tmp_path):
    result = ScriptRunner(parse_script(SCRIPT, "rules.yaml"), zk_hosts, chroot, replay_dir=tmp_path,
                          log=io.StringIO()).run()
    assert not result.ok and result.step.index == 9
    assert "rules.acked_not_lost: expected held, found broken now, 1 violation(s) so far" in result.message


def test_rule_expectations_compare_over_the_run_or_now():
    verdicts = {"acked_not_lost": {"status": "broken", "count": 1}, "leader_in_isr": {"status": "waiting", "count": 0}}
    assert mismatches({"rules": {"acked_not_lost": "broke", "leader_in_isr": "held"}}, {"rules": verdicts}) == []
    assert mismatches({"rules": {"leader_in_isr": "holds"}}, {"rules": verdicts}) == [
        "rules.leader_in_isr: expected holds, found waiting now, 0 violation(s) so far"]
    assert mismatches({"rules": {"acked_not_lost": "held"}}, {}) == [
        "rules.acked_not_lost: expected held, found no such rule"]
    assert describe_expectation({"rules": {"acked_not_lost": "broke"}}) == "rule acked_not_lost broke"


@pytest.mark.parametrize("step, reason", [
    ("{op: expect, rules: {leader_in_irs: held}}", "a rule such as leader_in_isr"),
    ("{op: expect, rules: {leader_in_isr: fine}}", "held, broke, holds, broken"),
    ("{op: highlight, targets: ['rule:no_such_rule']}", "rule:leader_in_isr"),
    ("{op: predict, id: q, question: Which, choices: [x, z], answer: {rule_broken: true, controller: id}, expected: x, "
     "explain: y}",
     "exactly one of"),
])
def test_rule_steps_are_checked_before_anything_runs(step, reason):
    text = ("name: x\nminutes: 1\ncluster: {brokers: [0]}\nsteps:\n  - " + step + "\n"
            + ("  - {op: reveal, predict: q}\n" if "predict" in step else ""))
    with pytest.raises(ScriptError) as error:
        parse_lesson(text, "x.yaml", "x")
    assert reason in str(error.value)


def test_highlight_targets_may_name_rules_and_arrows():
    text = ("name: x\nminutes: 1\ncluster: {brokers: [0]}\nsteps:\n"
            "  - {op: highlight, targets: ['rule:one_controller', 'arrow:znode:/controller_epoch', 'arrow:refused']}\n")
    assert parse_lesson(text, "x.yaml", "x").steps[0].args["targets"][1] == "arrow:znode:/controller_epoch"
