"""The classroom bench's students (``bench/socket_clients.py``) send faults the lab accepts, in
the mix issue 14 names: a bench whose faults the vocabulary refuses measures refusals, not faults
(a first try of the issue's mix sent ``acks: "1"`` and every produce came back a 400)."""

from __future__ import annotations

import random

import pytest

from backend.faultscript.vocabulary import FAULT_VOCABULARY, check_step
from bench.socket_clients import (MIXES, STUDENT_CYCLE, demo_fault, first_step, refused_for_load, student_fault,
                                  try_again)


@pytest.mark.parametrize("mix", MIXES)
def test_every_fault_a_student_or_the_demo_sends_passes_the_vocabulary(mix):
    for step in range(3 * len(STUDENT_CYCLE)):
        for body in (student_fault(mix, step), demo_fault(mix, step)):
            assert check_step(body, FAULT_VOCABULARY).issues == [], (step, body)


def test_the_issue_mix_is_the_issues_list_on_each_broker_in_turn():
    bodies = [student_fault("issue", step) for step in range(3 * len(STUDENT_CYCLE))]
    assert {b["op"] for b in bodies} == {"crash_broker", "start_broker", "shutdown_broker", "preferred_election",
                                         "produce"}
    # a crashed broker is started again before it is shut down, and every broker has its turn
    first = bodies[:len(STUDENT_CYCLE)]
    assert [b["op"] for b in first].index("start_broker") < [b["op"] for b in first].index("shutdown_broker")
    assert {b.get("broker") for b in bodies if "broker" in b} == {0, 1, 2}
    assert [b["broker"] for b in bodies if b["op"] == "crash_broker"] == [0, 1, 2]


def test_a_student_clicks_again_only_where_the_same_click_can_work_later():
    assert try_again({"ok": False, "status": 429, "error": "busy", "retry_after": 2})
    # the 409 of a restart before the crashed process's session expired (tests/web/test_api.py)
    assert try_again({"ok": False, "status": 409, "error": "broker 0 did not start (NodeExistsException): ..."})
    assert not try_again({"ok": False, "status": 409, "error": "broker 0 is running"})
    assert not try_again({"ok": True, "seq": 4})


def test_only_a_refusal_for_load_is_the_servers_own():
    """The ramp (bench/ramp.py) counts these against a rate; Kafka's own refusals it does not."""
    assert refused_for_load({"ok": False, "status": 503, "error": "the server is overloaded ...", "retry_after": 2})
    assert not refused_for_load({"ok": False, "error": "broker 0 did not start (NodeExistsException): ..."})
    assert not refused_for_load({"ok": False, "error": "producing to t-0 with acks=1 failed: REQUEST_TIMED_OUT"})


def test_from_wherever_a_student_starts_every_step_applies_to_its_cluster():
    """Walked through a cluster of three running brokers as the lab's checks have it (a crash or a
    controlled shutdown needs the broker running, a start needs it down; tests/web/test_api.py):
    a student never sends a fault its cluster must refuse."""
    rng = random.Random(7)
    starts = {first_step("issue", rng) for _ in range(500)}
    assert {student_fault("issue", s)["op"] for s in starts} == {"crash_broker", "shutdown_broker",
                                                                 "preferred_election"}
    assert {student_fault("issue", s).get("broker") for s in starts} >= {0, 1, 2}
    for start in starts:
        running = {0, 1, 2}
        for step in range(start, start + 4 * len(STUDENT_CYCLE)):
            body = student_fault("issue", step)
            if body["op"] in ("crash_broker", "shutdown_broker"):
                assert body["broker"] in running, (start, step, body)
                running.discard(body["broker"])
            elif body["op"] == "start_broker":
                assert body["broker"] not in running, (start, step, body)
                running.add(body["broker"])
    assert first_step("stop-start", rng) == 0
