"""The lab's clock: held while a lesson waits at a stop, its time stands still and its timers
wait; released, they go on with the time they still had."""

from __future__ import annotations

import threading

from backend.runtime.lab_clock import LabClock


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_held_time_does_not_count():
    t = FakeTime()
    clock = LabClock(t)
    start = clock.now_ms()
    t.now += 1.0
    assert clock.now_ms() - start == 1000
    clock.hold()
    clock.hold()  # holds nest: the runner's and anyone else's
    t.now += 60.0
    assert clock.now_ms() - start == 1000
    clock.release()
    t.now += 5.0
    assert clock.now_ms() - start == 1000 and clock.held
    clock.release()
    t.now += 0.5
    assert clock.now_ms() - start == 1500 and not clock.held
    clock.release()  # one release too many changes nothing
    assert clock.now_ms() - start == 1500


def test_a_timer_waits_while_the_clock_is_held_and_fires_after_the_release():
    clock = LabClock()
    fired = threading.Event()
    clock.hold()
    clock.call_later(0.05, fired.set)
    assert not fired.wait(0.4), "a held clock's timer fired"
    clock.release()
    assert fired.wait(5), "the timer never fired after the release"


def test_a_hold_that_begins_after_the_timer_was_armed_defers_it_too():
    clock = LabClock()
    fired = threading.Event()
    clock.call_later(0.2, fired.set)
    clock.hold()
    assert not fired.wait(0.5)
    clock.release()
    assert fired.wait(5)


def test_a_cancelled_timer_never_fires():
    clock = LabClock()
    fired = threading.Event()
    clock.call_later(0.05, fired.set).cancel()
    assert not fired.wait(0.3)
