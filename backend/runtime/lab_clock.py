"""The lab's own clock: what a cluster's simulated timers measure, held still while a lesson waits.

A lesson stops at every narration for as long as the student reads. Some of the cluster's
outcomes hang on timers — a leader drops a follower that has not caught up for
``replica.lag.time.max.ms``; the controller checks the leader imbalance every
``leader.imbalance.check.interval.seconds`` — and a slow reader must not see them fire early.
Those timers are the lab's (its data plane and its controller's scheduler), so the lab can stop
them: while held, :meth:`now_ms` stands still and :meth:`call_later` callbacks wait. ZooKeeper's
session clock is not the lab's and is never held (``backend/lessons/pacing.py`` keeps stops out
of its way).
"""

from __future__ import annotations

import threading
import time
from typing import Callable


class LabClock:
    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._holds = 0
        self._held_at = 0.0
        self._held_total = 0.0
        self._on_release: list[Callable[[], None]] = []

    @property
    def held(self) -> bool:
        return self._holds > 0

    def now_ms(self) -> float:
        """Milliseconds on the lab's clock (monotonic, minus every moment it was held)."""
        with self._lock:
            now = self._held_at if self._holds else self._monotonic()
            return (now - self._held_total) * 1000

    def hold(self) -> None:
        with self._lock:
            if self._holds == 0:
                self._held_at = self._monotonic()
            self._holds += 1

    def release(self) -> None:
        with self._lock:
            if self._holds == 0:
                return
            self._holds -= 1
            if self._holds:
                return
            self._held_total += self._monotonic() - self._held_at
            waiting, self._on_release = self._on_release, []
        for callback in waiting:
            callback()

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> LabTimer:
        """Run ``callback`` once ``delay_s`` seconds of lab time have passed (a daemon thread)."""
        timer = LabTimer(self, self.now_ms() + delay_s * 1000, callback)
        timer.arm()
        return timer

    def _after_release(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if self._holds:
                self._on_release.append(callback)
                return
        callback()


class LabTimer:
    """One pending ``call_later``: re-armed for the lab time still missing whenever it wakes early
    (the clock was held meanwhile), deferred to the release when it wakes during a hold."""

    def __init__(self, clock: LabClock, due_ms: float, callback: Callable[[], None]) -> None:
        self._clock = clock
        self._due_ms = due_ms
        self._callback = callback
        self._cancelled = False
        self._thread: threading.Timer | None = None

    def arm(self) -> None:
        if self._cancelled:
            return
        if self._clock.held:
            self._clock._after_release(self.arm)
            return
        left = (self._due_ms - self._clock.now_ms()) / 1000
        if left <= 0:
            self._callback()
            return
        self._thread = threading.Timer(left, self._fired)
        self._thread.daemon = True
        self._thread.start()

    def _fired(self) -> None:
        """The timer thread's call. The timer keeps its function, a method of this timer: held
        after it has fired, the two were a reference cycle (with the callback's controller) left
        for the cyclic collector (issue 14, thirty-seventh round)."""
        self._thread = None
        self.arm()

    def cancel(self) -> None:
        self._cancelled = True
        thread, self._thread = self._thread, None  # not held once cancelled either (``_fired``)
        if thread is not None:
            thread.cancel()
