"""A lesson's pace, without a cluster: which steps are stops, which clocks run while a stop
waits (the lab's are held, ZooKeeper's cannot be), and what ``kclab lessons check`` reports —
each at its line."""

from __future__ import annotations

from backend.core.config import KafkaConfig
from backend.lessons import pacing
from backend.lessons.loader import parse_lesson
from backend.lessons.pacing import (held_timers, is_stop, narration_problems, predict_problems, running_timers,
                                    sentences, timer_problems, unseen_narration)

HEAD = """name: Pace
minutes: 3
cluster:
  brokers: [0, 1, 2]
  config: {auto.leader.rebalance.enable: false}
  topics:
    t: {assignment: {0: [0, 1, 2]}}
steps:
"""
QUESTION = """  - op: predict
    id: q{n}
    question: Who leads?
    choices: ["0", "1"]
    answer: {{partition: t-0, field: leader}}
    expected: 0
    explain: It stays.
"""


def lesson(steps: str, head: str = HEAD):
    return parse_lesson(head + steps, "pace.yaml", "pace")


def test_a_narration_is_a_stop_unless_it_is_a_caption():
    steps = lesson("""  - op: say
    text: A stop.
  - op: say
    caption: true
    text: A caption.
  - op: pause
  - op: wait_stable
""" + QUESTION.format(n=1) + "  - op: crash_broker\n    broker: 1\n  - op: reveal\n    predict: q1\n").steps
    assert [is_stop(s) for s in steps] == [True, False, True, False, True, False, False]


def test_the_lab_holds_the_lag_check_at_a_stop_between_a_stall_and_its_outcome():
    paced = lesson("""  - op: stall_follower
    broker: 2
  - op: say
    text: While broker 2 lags, the lab's lag check is held.
  - op: await
    record: {kind: isr, to_state: shrunk}
    message: no shrink
  - op: say
    text: Now nothing runs.
""")
    assert held_timers(paced) == {2: ("replica.lag.time.max.ms",)}
    assert timer_problems(paced) == []  # the lab's own timer: held, not a problem


def test_the_rebalance_scheduler_is_held_at_every_stop_while_it_is_enabled():
    paced = lesson("  - op: say\n    text: One.\n  - op: say\n    text: Two.\n",
                   HEAD.replace("auto.leader.rebalance.enable: false", "auto.leader.rebalance.enable: true"))
    assert held_timers(paced) == {1: ("leader.imbalance.check.interval.seconds",),
                                  2: ("leader.imbalance.check.interval.seconds",)}


def test_a_stop_inside_zookeepers_session_clock_is_reported_at_its_line():
    paced = lesson("""  - op: pause_broker
    broker: 1
  - op: say
    text: Broker 1 froze; its session is running out.
  - op: await
    record: {kind: zk, subject: "znode:/brokers/ids/1", to_state: deleted}
    message: never deleted
  - op: say
    text: It is gone now.
""")
    [problem] = timer_problems(paced)
    assert problem.line == 11 and "step 2 (line 11) (say) is a stop while ZooKeeper's clock" in problem.message
    assert "started by step 1 (line 9) (pause_broker)" in problem.message
    assert running_timers(paced.steps, KafkaConfig({"auto.leader.rebalance.enable": False}))[4] == ()  # awaited


def test_a_caption_in_the_window_is_fine_and_resuming_ends_the_clock():
    paced = lesson("""  - op: pause_broker
    broker: 1
  - op: say
    caption: true
    text: Frozen.
  - op: resume_broker
    broker: 1
  - op: say
    text: Awake again.
""")
    assert timer_problems(paced) == []


def test_a_reveal_needs_something_to_observe_after_its_question():
    paced = lesson(QUESTION.format(n=1) + "  - op: reveal\n    predict: q1\n" + QUESTION.format(n=2)
                   + "  - op: crash_broker\n    broker: 1\n  - op: reveal\n    predict: q2\n")
    [problem] = predict_problems(paced)
    assert problem.line == 16 and "reveals 'q1', but nothing happens to the cluster" in problem.message
    assert "at least two predictions" in predict_problems(lesson(QUESTION.format(n=1) + "  - op: crash_broker\n"
                                                                 "    broker: 1\n  - op: reveal\n    predict: q1\n"))[0].message


def test_a_stop_holds_one_idea():
    assert sentences("One. Two, e.g. `a.b`. Three! Four?") == 4
    long = lesson("  - op: say\n    text: One. Two. Three. Four. Five.\n")
    [problem] = narration_problems(long)
    assert problem.line == 9 and "5 sentences at one stop" in problem.message
    wrapped = lesson("  - op: say\n    text: |\n      The epoch went from 0 to\n      1. Then it stayed.\n")
    [problem] = narration_problems(wrapped)
    assert "starts with '1. ' inside a paragraph" in problem.message
    listed = lesson("  - op: say\n    text: |\n      Two steps:\n\n      1. one;\n      2. two.\n")
    assert narration_problems(listed) == []


def test_captions_stay_on_screen_until_a_stop_so_nothing_is_replaced_unseen(monkeypatch):
    paced = lesson("""  - op: say
    text: A stop.
  - op: say
    caption: true
    text: A caption, seen at the next stop.
  - op: highlight
    targets: ["broker:1"]
    note: A note, seen at the next stop too.
  - op: say
    text: The next stop.
  - op: say
    caption: true
    text: A last caption, seen when the lesson ends.
""")
    assert unseen_narration(paced) == []
    # The check reads the page's own fold: a fold that dropped captions at the next narration
    # (the old model) would lose both of them, and the check would say so.
    real = pacing.on_screen
    monkeypatch.setattr(pacing, "on_screen", lambda lesson: {k for k in real(lesson) if k[0] != "say"}
                        | ({("say", lesson["say"]["step"])} if lesson["say"] else set()))
    assert [(s.index, what) for s, what in unseen_narration(paced)] == [(2, "narration"), (3, "highlight's note"),
                                                                       (5, "narration")]
