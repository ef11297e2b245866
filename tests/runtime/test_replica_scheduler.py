"""The process's replica scheduler (``backend.runtime.broker.replica_scheduler``): every broker's
replica rounds on a few threads. What a thread per broker gave for free must still hold: one
broker's blocked round holds up no other broker, a broker's rounds never overlap, a wake during
a round is not lost, and a frozen broker runs nothing until its resume wakes it. No ZooKeeper
here: ``fetch`` and ``lead`` are the tests' own functions (the real ones run in
``test_replica_thread.py`` and every cluster test)."""

from __future__ import annotations

import os
import threading

import pytest

from backend.runtime.broker.replica_scheduler import ReplicaScheduler
from backend.runtime.broker.replica_thread import ReplicaThread
from backend.runtime.lab_clock import LabClock
from backend.runtime.polling import poll_until


@pytest.fixture
def scheduler(monkeypatch):
    """A scheduler of the test's own, so other tests' brokers do not count."""
    own = ReplicaScheduler()
    monkeypatch.setattr(ReplicaScheduler, "_instance", (os.getpid(), own))
    return own


def _task(fetch, *, wait_max_ms=20, gate=None, errors=None):
    gate = gate or _open_gate()
    return ReplicaThread("replica-test", LabClock(), fetch=fetch, lead=lambda now: now + 60_000,
                         wait_max_ms=lambda: wait_max_ms, may_run=lambda: True, gate=gate,
                         on_error=(errors.append if errors is not None else print))


def _open_gate():
    gate = threading.Event()
    gate.set()
    return gate


def _held_fetch():
    """A fetch that waits in each round until ``release`` is set, and notes how many of the
    broker's rounds were inside it at once (``overlaps``)."""
    inside, overlaps, entered, release = [0], [], threading.Event(), threading.Event()

    def fetch(now):
        inside[0] += 1
        overlaps.append(inside[0])
        entered.set()
        release.wait(10)
        inside[0] -= 1
        return False

    return fetch, overlaps, entered, release


def test_a_blocked_round_holds_up_no_other_broker(scheduler):
    release = threading.Event()
    blocked = _task(lambda now: release.wait(30) and False)
    other = _task(lambda now: False)
    try:
        blocked.start()
        poll_until(lambda: blocked.fetch_rounds == 1, 10, "the blocked round to begin")
        other.start()
        # the only runner is stuck in the blocked round: the watchdog starts another for `other`
        poll_until(lambda: other.fetch_rounds >= 5, 10, "the other broker to go on fetching")
        assert blocked.fetch_rounds == 1
        release.set()
        poll_until(lambda: blocked.fetch_rounds >= 3, 10, "the blocked broker to go on once released")
        # the extra runner ends once both keep up: an idle process keeps one
        poll_until(lambda: scheduler.runners == 1, 10, "the extra runner to end")
    finally:
        release.set()
        blocked.stop()
        other.stop()


def test_a_brokers_rounds_never_overlap_and_a_wake_during_one_is_kept(scheduler):
    fetch, overlaps, entered, release = _held_fetch()
    task = _task(fetch, wait_max_ms=60_000)  # after its first fetch, only a wake runs it again
    try:
        task.start()
        entered.wait(10)
        for _ in range(20):  # appends while it fetches: one more fetch after this one, no overlap
            task.wake(fetch=True)
        release.set()
        poll_until(lambda: task.fetch_rounds == 2, 10, "the fetch the appends asked for")
        assert max(overlaps) == 1
    finally:
        release.set()
        task.stop()


def test_a_frozen_broker_runs_no_round_until_its_resume_wakes_it(scheduler):
    gate = _open_gate()
    task = _task(lambda now: False, wait_max_ms=10, gate=gate)
    try:
        task.start()
        poll_until(lambda: task.fetch_rounds >= 2, 10, "the first fetches")
        gate.clear()
        # its next round finds the gate closed and is not scheduled again
        poll_until(lambda: task.ticket is None and not task._in_round, 10, "the round to stop at the gate")
        frozen = task.fetch_rounds
        task.wake(fetch=True)  # a leader's append does not thaw it
        poll_until(lambda: task.ticket is None and not task._in_round, 10, "the woken round to stop at the gate")
        assert task.fetch_rounds == frozen
        gate.set()
        task.wake()  # what ``SimulatedBroker.resume`` does
        poll_until(lambda: task.fetch_rounds > frozen, 10, "a fetch after the resume")
    finally:
        task.stop()


def test_a_restart_during_a_round_waits_for_it_then_starts_afresh(scheduler):
    fetch, overlaps, entered, release = _held_fetch()
    task = _task(fetch, wait_max_ms=60_000)
    try:
        task.start()
        entered.wait(10)
        task.stop()
        task.start()  # its first round is due now, while the old round still runs
        # the runner is stuck in the old round: the watchdog starts another, which finds the
        # restarted broker due but still in a round, and leaves it to the old round's end
        poll_until(lambda: scheduler.runners >= 2 and task.ticket is None, 10, "a second runner to try the round")
        assert task.fetch_rounds == 1
        release.set()
        poll_until(lambda: task.fetch_rounds == 2, 10, "the restarted broker's first fetch")
        assert max(overlaps) == 1
        task.stop()
        task.wake(fetch=True)
        assert task.ticket is None  # a stopped broker is not scheduled by a wake
    finally:
        release.set()
        task.stop()


def test_an_error_in_a_round_is_reported_and_the_rounds_go_on(scheduler):
    errors, calls = [], [0]

    def fetch(now):
        calls[0] += 1
        if calls[0] == 1:
            raise RuntimeError("session lost")
        return False

    task = _task(fetch, errors=errors)
    try:
        task.start()
        poll_until(lambda: task.fetch_rounds >= 3, 10, "fetches after the error")
        assert [str(e) for e in errors] == ["session lost"]
    finally:
        task.stop()


def test_a_round_that_fails_outside_its_fetch_ends_neither_the_runner_nor_the_others(scheduler):
    def broken():
        raise RuntimeError("config gone")

    failing = ReplicaThread("replica-failing", LabClock(), fetch=lambda now: False, lead=lambda now: now + 60_000,
                            wait_max_ms=lambda: 20, may_run=broken, gate=_open_gate(), on_error=print)
    other = _task(lambda now: False)
    try:
        failing.start()
        other.start()
        poll_until(lambda: other.fetch_rounds >= 5, 10, "the other broker to go on fetching")
        assert scheduler.runners == 1  # the runner survived the failure: no second one was needed
    finally:
        failing.stop()
        other.stop()
