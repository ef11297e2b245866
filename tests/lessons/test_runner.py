"""The lesson runner on the real ZooKeeper: it waits at every stop and only there, holds the
lab's timers at a stop inside one's window (a slow reader sees no outcome early), and grades
every answer — right, wrong with the author's misconception, or "I'm not sure"."""

from __future__ import annotations

import io

from backend.lessons.answers import UNSURE
from backend.lessons.loader import parse_lesson
from backend.lessons.runner import Audience, LessonRunner

LESSON = """name: Runner
minutes: 3
cluster:
  brokers: [0, 1, 2]
  config: {replica.lag.time.max.ms: 500, auto.leader.rebalance.enable: false}
  topics:
    t: {assignment: {0: [0, 1, 2]}}
steps:
  - op: say
    text: Intro.
  - op: say
    caption: true
    text: A caption.
  - op: predict
    id: q
    question: Who leads t-0 once broker 2 lags?
    choices: ["0", "2"]
    misconceptions:
      "2": A lagging follower never becomes leader this way.
    answer: {partition: t-0, field: leader}
    expected: 0
    explain: Lagging changes the ISR, not the leader.
  - op: stall_follower
    broker: 2
  - op: say
    text: While broker 2 lags, this stop holds the lab's lag check.
  - op: await
    record: {kind: isr, to_state: shrunk}
    timeout_ms: 10000
    message: Broker 2 never left the ISR.
  - op: reveal
    predict: q
  - op: pause
    prompt: Finish
"""


class SlowStudents(Audience):
    """Three students answer; at every stop the audience notes whether the lab's clock is held,
    and at the held one it reads far longer than the lag timeout."""

    def __init__(self) -> None:
        self.runner: LessonRunner | None = None
        self.stops: list[tuple[int, bool]] = []
        self.shrunk_while_reading = None
        self.closed = False

    def wait_continue(self, step, prompt):
        held = self.runner.cluster.clock.held
        self.stops.append((step.index, held))
        if held:  # three lag timeouts of reading: the lag check must not fire meanwhile
            self.shrunk_while_reading = self.runner.bus.wait_for(
                lambda r: r.kind == "isr" and r.to_state == "shrunk", self.runner.bus.next_seq, 1.5)
        return True

    def close_question(self):
        self.closed = True

    def answers(self, question_id):
        return [("ann", "0"), ("bo", "2"), ("cy", UNSURE)]


def test_stops_holds_and_grades(zk_hosts, chroot, tmp_path):
    audience = SlowStudents()
    lesson = parse_lesson(LESSON, "runner.yaml", "runner")
    runner = LessonRunner(lesson, zk_hosts, audience=audience, chroot=chroot, replay_dir=tmp_path, log=io.StringIO())
    audience.runner = runner
    records = []
    runner.bus.subscribe(records.extend)
    result = runner.run()
    assert result.ok, result.message

    # It waited at each stop — the narrations that are not captions, the question, the pause —
    # and only there; the lab's clock was held at the stop between the stall and its outcome.
    assert audience.stops == [(1, False), (3, False), (5, True), (8, False)]
    assert audience.shrunk_while_reading is None, "the lag check fired while the lab's clock was held"
    assert audience.closed
    started = {r.step: r.detail for r in records if r.kind == "lesson" and r.to_state == "step_started"}
    assert [i for i, d in started.items() if d["stop"]] == [1, 3, 5, 8]
    assert started[5]["held_timers"] == ["replica.lag.time.max.ms"] and "held_timers" not in started[3]

    graded = {r.student: r for r in records if r.kind == "lesson" and r.to_state == "answered"}
    assert (graded["ann"].correct, graded["ann"].misconception, graded["ann"].question) == (True, None, "q")
    assert (graded["bo"].correct, graded["bo"].misconception) == (False, "A lagging follower never becomes leader "
                                                                         "this way.")
    assert graded["bo"].misconception in graded["bo"].note
    assert (graded["cy"].answer, graded["cy"].correct, graded["cy"].misconception) == (UNSURE, None, None)
    assert "was not sure" in graded["cy"].note
    [revealed] = [r for r in records if r.kind == "lesson" and r.to_state == "revealed"]
    assert (revealed.question, revealed.answer) == ("q", "0")
