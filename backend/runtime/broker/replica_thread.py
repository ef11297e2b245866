"""When a broker's replica thread runs: Kafka's parked fetch and its leader-side timers, as one wait.

In Kafka a follower's fetch is parked at the leader (``DelayedFetch`` in the fetch purgatory)
until the leader has new data for it or ``replica.fetch.wait.max.ms`` passes, and the follower
sends its next fetch as soon as it has handled the answer. So an idle follower fetches twice a
second (Kafka's 500 ms), and a produced message reaches the followers at once. The lab's
follower cannot be parked at the leader — the leader is an object in this process — so its
thread waits for the same two things instead: its wait-max, or a :meth:`ReplicaThread.wake`
from a leader it follows that appended (``BrokerDirectory.wake_followers``). After an answer
with data it fetches again at once (that fetch tells the leader its new log end, which moves the
high watermark); after an empty one it waits. Appends that follow each other closely are fetched
together (``APPEND_GAP_S``).

The same thread does the broker's leader-side work (``lead``): at the deadline ``lead`` names —
Kafka's ISR-shrink check every ``replica.lag.time.max.ms / 2``, a waiting produce's time-out, an
AlterIsr retry —, when something it waits for happens (an AlterIsr answer, a LeaderAndIsr, a
follower's fetch that may take it back into the ISR, a changed setting: each calls :meth:`wake`),
and on any round once ``lead_overdue`` says a follower may have fallen out of sync (the first
round after its last catch-up plus ``replica.lag.time.max.ms``: rounds come at least every
``replica.fetch.wait.max.ms``, so a follower is dropped within that of its lag passing the
limit). It ran after every fetch: an idle leader's side, a third of an idle round, ran twice a
second for nothing, 1,200 times a second in a class of 200 (issue 14, twenty-seventh round).

Kafka's replica thread is a thread; the lab's is a task of the process's ``ReplicaScheduler``
(``replica_scheduler.py``), which runs each broker's rounds when they fall due, so an idle broker
costs no thread of its own. Its rounds never overlap. A frozen broker's (``gate`` cleared) round
waits for its resume, which wakes it.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from backend.runtime.broker.replica_scheduler import EARLY_S, ReplicaScheduler
from backend.runtime.lab_clock import LabClock

MIN_WAIT_S = 0.01
"""A deadline on the lab's clock is waited for at least this long: while a lesson holds the clock
(``LabClock``), a deadline that is due never passes, and the thread must not spin on it."""


APPEND_GAP_S = 0.05
"""A follower woken by appends fetches at most this often: a steady producer's messages reach it
in batches, as Kafka's followers get them (each fetch there takes a network round trip). Without
it every single-message produce request would cost each follower two fetches and the page four
records; an append after a quiet spell is still fetched at once."""


class ReplicaThread:
    def __init__(self, name: str, clock: LabClock, *, fetch: Callable[[float], bool], lead: Callable[[float], float],
                 wait_max_ms: Callable[[], float], may_run: Callable[[], bool], gate: threading.Event,
                 on_error: Callable[[Exception], None],
                 lead_overdue: Callable[[float], bool] = lambda now: True) -> None:
        """``fetch(now)`` fetches from every leader, True when an answer had data; ``lead(now)``
        does the leader-side work and returns when (lab ms) it must run again at the latest;
        ``lead_overdue(now)`` whether it must run on this round all the same (default: always);
        ``gate`` is the broker's pause; ``may_run()`` whether the broker runs."""
        self.name = name
        self._clock = clock
        self._fetch = fetch
        self._lead = lead
        self._lead_overdue = lead_overdue
        self._wait_max_ms = wait_max_ms
        self._may_run = may_run
        self._gate = gate
        self._on_error = on_error
        self._scheduler = ReplicaScheduler.shared()
        # What follows is the scheduler's to read and write under its lock (``run_round`` aside):
        self.ticket: int | None = None
        self.due = 0.0
        self._started = False
        self._generation = 0
        """Each start and stop moves it on: a round of an earlier start is not scheduled again."""
        self._in_round = False
        self._woken = False
        """Something happened that the leader side must see (``wake``) since the last round began."""
        self._fetch_due = False
        """An append asked for a fetch that has not started yet."""
        # Monotonic seconds, the round's own: the next fetch, the leader side's deadline, the last fetch.
        self._fetch_at = self._lead_at = self._fetched_at = 0.0
        self.fetch_rounds = 0
        """How many times this broker fetched from its leaders (what tests and benches count)."""

    def start(self) -> None:
        self._scheduler = ReplicaScheduler.shared()  # a forked worker has its own
        with self._scheduler.lock:
            if not self._started:
                self._scheduler.task_started()
            self._started, self._generation = True, self._generation + 1
            self._fetch_at = self._lead_at = self._fetched_at = 0.0
            self._scheduler.schedule(self, time.monotonic())

    def stop(self) -> None:
        with self._scheduler.lock:
            if self._started:
                self._scheduler.task_stopped()
            self._started, self._generation, self.ticket = False, self._generation + 1, None

    def wake(self, fetch: bool = False) -> None:
        """Run the leader side now (it has news); with ``fetch``, a leader this broker follows
        appended: fetch too, at most ``APPEND_GAP_S`` after the last fetch. While such a fetch is
        due anyway, another append does not wake the thread again."""
        with self._scheduler.lock:
            if fetch:
                if self._fetch_due:
                    return
                self._fetch_due = True
            self._woken = True
            if self._started and not self._in_round:
                self._scheduler.schedule(self, time.monotonic())

    def run_round(self) -> None:
        """One round, on one of the scheduler's runners: fetch if that is due, then the leader
        side if that is (or ``lead_overdue``); then the next round is scheduled for whichever of
        the two falls due first."""
        with self._scheduler.lock:
            if self._in_round or not self._started:  # a restart's first round while an old one runs
                self._woken = self._woken or self._started
                return
            self._in_round, generation = True, self._generation
            if self._woken:
                self._woken, self._lead_at = False, 0.0
                if self._fetch_due:
                    self._fetch_at = min(self._fetch_at, self._fetched_at + APPEND_GAP_S)
            horizon = time.monotonic() + EARLY_S
            fetch_now, lead_now = self._fetch_at <= horizon, self._lead_at <= horizon
            if fetch_now:
                self._fetch_due = False  # before the fetch reads: a later append wakes it again
        due = None  # frozen: its resume wakes it
        try:
            if self._gate.is_set():
                due = self._round(fetch_now, lead_now)
        finally:
            self._after_round(generation, due)

    def _after_round(self, generation: int, due: float | None) -> None:
        with self._scheduler.lock:
            self._in_round = False
            if not self._started:
                return
            if generation != self._generation:  # restarted meanwhile: the new start's first round, at once
                self._fetch_at = self._lead_at = self._fetched_at = 0.0
                due = time.monotonic()
            elif self._woken:
                due = time.monotonic()
            if due is not None:
                self._scheduler.schedule(self, due)

    def _round(self, fetch_now: bool, lead_now: bool) -> float:
        """Returns when (monotonic s) the next round is due."""
        if not self._may_run():
            self._fetch_at = self._lead_at = time.monotonic() + self._wait_max_ms() / 1000
            return self._fetch_at
        try:
            now = self._clock.now_ms()
            if fetch_now:
                self.fetch_rounds += 1
                more = self._fetch(now)
                self._fetched_at = time.monotonic()
                self._fetch_at = self._fetched_at + (0.0 if more else max(MIN_WAIT_S, self._wait_max_ms() / 1000))
            if lead_now or self._lead_overdue(now):
                self._lead_at = time.monotonic() + max(MIN_WAIT_S, (self._lead(now) - now) / 1000)
        except Exception as exc:  # noqa: BLE001 - a lost session must not end the broker's rounds
            self._fetch_at = self._lead_at = time.monotonic() + max(MIN_WAIT_S, self._wait_max_ms() / 1000)
            self._on_error(exc)
        return min(self._fetch_at, self._lead_at)
