"""Every broker's replica rounds in this process, run by a few threads from one timetable.

Each broker's replica thread (``replica_thread.py``) wakes twice a second while idle — Kafka's
``replica.fetch.wait.max.ms`` of 500 ms — and more often while it has work. With a thread of its
own per broker, 200 sandboxes were 600 threads, each waking on its own timer and then fighting
for the interpreter lock: py-spy put 30 % of a saturated worker's lock-holding time in those
wake-ups (``docs/performance.md``, issue 14, fourth round). Here one timetable (a heap of
deadlines) holds every broker's next round, and the thread that waits on it runs the rounds as
they fall due, one after the other; rounds due within ``EARLY_S`` of each other run in one
wake-up.

A round may block: a leader below inter.broker.protocol.version 2.7 writes its ISR to ZooKeeper
itself, and a ZooKeeper that does not answer holds that write up. A thread per broker blocked
only that broker; here it would hold up every sandbox of the process. So a watchdog looks every
``LATE_S``: when a round is due longer than that and no thread is free to run it, it starts
another runner (at most ``MAX_RUNNERS``); a runner that finds another already waiting ends, so
an idle process keeps one runner and the watchdog.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from typing import Protocol

from backend.runtime.per_process import PerProcess

EARLY_S = 0.005
"""A round due within this of the first due one runs in the same wake-up (at most this early):
600 brokers' deadlines, two a second each, would otherwise wake the runner 1,200 times a second."""

LATE_S = 0.1
"""How often the watchdog looks, and how late a round may be before it starts another runner."""

MAX_RUNNERS = 64
"""Runners at most: rounds blocked at once beyond this wait for one to come back."""


class Rounds(Protocol):
    """What the scheduler runs: a broker's replica thread (``ReplicaThread``)."""

    ticket: int | None
    """The timetable entry that stands (older entries of the task are skipped); None: not scheduled."""
    due: float

    def run_round(self) -> None:
        """One round, on a runner, without the scheduler's lock; it reschedules itself."""


class ReplicaScheduler(PerProcess):
    """``ReplicaScheduler.shared()``: this process's (``backend/runtime/per_process.py``)."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        """Guards the timetable and every task's scheduling fields (``ReplicaThread``'s)."""
        self._timetable: list[tuple[float, int, Rounds]] = []
        self._tickets = itertools.count()
        self._runners = 0
        self._waiting = 0
        self.started = 0
        """Tasks started and not stopped: the watchdog sleeps without a time-out while there are none."""
        self._watchdog = threading.Condition(self.lock)
        self._watching = False

    @property
    def runners(self) -> int:
        """Threads running rounds now (one while nothing is blocked)."""
        return self._runners

    # -- the timetable (every method here is called with ``lock`` held) -------------------------------
    def schedule(self, task: Rounds, due: float) -> None:
        """Run ``task`` at ``due`` (monotonic s), or earlier if it is already due earlier."""
        if task.ticket is not None and task.due <= due:
            return
        task.ticket, task.due = next(self._tickets), due
        heapq.heappush(self._timetable, (due, task.ticket, task))
        if self._runners == 0:
            self._start_runner()
        elif self._timetable[0][1] == task.ticket:
            self.lock.notify()  # a waiting runner's deadline moved closer

    def task_started(self) -> None:
        self.started += 1
        if not self._watching:
            self._watching = True
            threading.Thread(target=self._watch, name="replica-watchdog", daemon=True).start()
        elif self.started == 1:
            self._watchdog.notify()  # it slept without a time-out

    def task_stopped(self) -> None:
        self.started -= 1

    def _take_due(self) -> Rounds | None:
        """The first task due within ``EARLY_S``, dropping entries a later schedule replaced."""
        horizon = time.monotonic() + EARLY_S
        while self._timetable and self._timetable[0][0] <= horizon:
            _, ticket, task = heapq.heappop(self._timetable)
            if task.ticket == ticket:
                task.ticket = None
                return task
        return None

    def _next_due(self) -> float | None:
        while self._timetable and self._timetable[0][2].ticket != self._timetable[0][1]:
            heapq.heappop(self._timetable)
        return self._timetable[0][0] if self._timetable else None

    # -- runners ---------------------------------------------------------------------------------------
    def _start_runner(self) -> None:
        self._runners += 1
        threading.Thread(target=self._run, name=f"replica-rounds-{self._runners}", daemon=True).start()

    def _run(self) -> None:
        with self.lock:
            while True:
                task = self._take_due()
                if task is not None:
                    self.lock.release()
                    try:
                        task.run_round()
                    except Exception:  # noqa: BLE001 - one broker's failure must not end the runner of all
                        logging.getLogger(__name__).exception("a replica round failed")
                    finally:
                        self.lock.acquire()
                    continue
                if self._waiting:  # another runner watches the timetable: one is enough
                    self._runners -= 1
                    return
                due = self._next_due()
                self._waiting += 1
                self.lock.wait(None if due is None else max(0.0, due - time.monotonic()))
                self._waiting -= 1

    def _watch(self) -> None:
        """Start a runner when a round is late and every runner is busy (a blocked round)."""
        with self.lock:
            while True:
                self._watchdog.wait(LATE_S if self.started else None)
                due = self._next_due()
                if (due is not None and due < time.monotonic() - LATE_S and not self._waiting
                        and self._runners < MAX_RUNNERS):
                    self._start_runner()
